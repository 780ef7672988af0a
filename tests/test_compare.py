"""`raisimcli compare`: structure, values, tolerances, unreadable input, JUnit, --update."""

import json
import os
import shutil
import xml.etree.ElementTree as ET

import h5py
import numpy as np
import pytest
from click.testing import CliRunner

from conftest import SCENARIOS
from raisimcli.cli.main import cli


def run(*args):
    return CliRunner().invoke(cli, [str(a) for a in args])


@pytest.fixture(scope="module")
def golden(tmp_path_factory):
    d = tmp_path_factory.mktemp("logs")
    out = d / "golden.h5"
    r = run("run", f"{SCENARIOS}/quadruped_pd.toml", "-q", "--duration", "0.05", "-o", out)
    assert r.exit_code == 0, r.output
    return out


@pytest.fixture
def new(golden, tmp_path):
    p = tmp_path / "new.h5"
    shutil.copyfile(golden, p)
    return p


def test_log_compared_with_itself(golden):
    r = run("compare", golden, golden)
    assert r.exit_code == 0, r.output
    assert "OK:" in r.output


def test_one_entry_beyond_tolerance_names_dataset_time_and_joint(golden, new):
    with h5py.File(new, "r+") as f:
        ds = f["robots/quadruped/torque/damping"]
        names = [n.decode() for n in f["robots/quadruped/dof_names"][()]]
        k = names.index("RF_KFE")
        ds[17, k] += 1e-3
        t = f["time"][17]
    r = run("compare", golden, new, "--json")
    assert r.exit_code == 1
    js = json.loads(r.stdout)
    bad = [d for d in js["datasets"] if d["status"] != "pass"]
    assert [d["path"] for d in bad] == ["robots/quadruped/torque/damping"]
    assert bad[0]["failing"] == 1 and f"t = {t:.6g} s" in bad[0]["where"]
    assert "RF_KFE" in bad[0]["where"]
    human = run("compare", golden, new)
    assert human.exit_code == 1 and "RF_KFE" in human.output and "torque/damping" in human.output
    # within tolerance
    assert run("compare", golden, new, "--atol", "2e-3").exit_code == 0
    tol = new.parent / "tol.toml"
    tol.write_text('"robots/*/torque/*" = { rtol = 0.0, atol = 2e-3 }\n')
    assert run("compare", golden, new, "--tolerances", tol).exit_code == 0
    tol.write_text('"robots/*/q" = { rtol = 0.0, atol = 2e-3 }\n')
    assert run("compare", golden, new, "--tolerances", tol).exit_code == 1
    assert run("compare", golden, new, "--exclude", "robots/*/torque/damping").exit_code == 0


def test_nan_equals_nan(golden, new):
    g2 = new.parent / "g2.h5"
    shutil.copyfile(golden, g2)
    for p in (g2, new):
        with h5py.File(p, "r+") as f:
            f["robots/quadruped/u"][3, 2] = np.nan
    assert run("compare", g2, new).exit_code == 0
    with h5py.File(new, "r+") as f:
        f["robots/quadruped/u"][3, 2] = 0.0
    assert run("compare", g2, new).exit_code == 1


def test_structural_differences(golden, new, tmp_path):
    # a missing dataset
    with h5py.File(new, "r+") as f:
        del f["robots/quadruped/energy/kinetic"]
    r = run("compare", golden, new)
    assert r.exit_code == 1 and "missing in the new log" in r.output
    # a different shape (a shorter run)
    short = tmp_path / "short.h5"
    assert run("run", f"{SCENARIOS}/quadruped_pd.toml", "-q", "--duration", "0.04", "-o",
               short).exit_code == 0
    r = run("compare", golden, short)
    assert r.exit_code == 1 and "shape (50, 19) -> (40, 19)" in r.output
    # a different time grid, same length
    grid = tmp_path / "grid.h5"
    assert run("run", f"{SCENARIOS}/quadruped_pd.toml", "-q", "--set", "world.dt=0.0005", "--duration", "0.025", "-o", grid).exit_code == 0
    r = run("compare", golden, grid, "--json")
    js = json.loads(r.stdout)
    assert r.exit_code == 1
    assert any(d["path"] == "time" and d["status"] == "fail" for d in js["datasets"])
    assert any(a.startswith("/:dt") for a in js["attributes"])


def test_renamed_joints(golden, new):
    with h5py.File(new, "r+") as f:
        names = [n.decode() for n in f["robots/quadruped/dof_names"][()]]
        names[7] = "LF_HIP_FLEX"
        del f["robots/quadruped/dof_names"]
        f.create_dataset("robots/quadruped/dof_names", data=names, dtype=h5py.string_dtype())
    r = run("compare", golden, new)
    assert r.exit_code == 1 and "renamed: LF_HFE -> LF_HIP_FLEX" in r.output


@pytest.mark.parametrize("seed", range(6))
def test_truncated_file_exit_2(golden, tmp_path, seed):
    data = golden.read_bytes()
    cut = int(np.random.default_rng(seed).integers(100, len(data) - 100))
    p = tmp_path / "cut.h5"
    p.write_bytes(data[:cut])
    r = run("compare", golden, p)
    assert r.exit_code == 2, (cut, r.output)
    assert "Traceback" not in r.output
    assert r.output.strip().startswith("error:") and str(p) in r.output


def test_unreadable_inputs_exit_2(golden, tmp_path):
    text = tmp_path / "notes.txt"
    text.write_text("not hdf5")
    other = tmp_path / "other.h5"
    with h5py.File(other, "w") as f:
        f["x"] = np.zeros(3)
    newer = tmp_path / "newer.h5"
    shutil.copyfile(golden, newer)
    with h5py.File(newer, "r+") as f:
        f.attrs["format_version"] = 99
    for p, msg in ((text, "not a readable HDF5 file"), (other, "not a raisimcli log"),
                   (newer, "format version 99 is newer"), (tmp_path / "none.h5", "not found")):
        r = run("compare", golden, p)
        assert r.exit_code == 2 and msg in r.output and "Traceback" not in r.output, r.output
        r = run("compare", p, golden)
        assert r.exit_code == 2
    assert run("compare", golden, golden, "--rtol", "-1").exit_code == 2


def test_junit_report(golden, new, tmp_path):
    with h5py.File(new, "r+") as f:
        f["robots/quadruped/q"][5, 9] += 1.0
    junit = tmp_path / "report.xml"
    r = run("compare", golden, new, "--junit-xml", junit, "-q")
    assert r.exit_code == 1
    root = ET.parse(junit).getroot()
    cases = root.findall(".//testcase")
    with h5py.File(golden) as f:
        n = []
        f.visititems(lambda name, o: n.append(name) if isinstance(o, h5py.Dataset) else None)
    assert len(cases) == len(n) + 1  # one per dataset, and one for the attributes
    failed = [c.get("name") for c in cases if c.find("failure") is not None]
    assert failed == ["robots/quadruped/q"]
    _valid_junit(junit)
    suite = root.find("testsuite")
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == \
        (str(len(n) + 1), "1", "0")


JUNIT_XSD = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "junit.xsd")


def _valid_junit(path):
    """The report is valid against the Jenkins xUnit plugin's JUnit schema (its constraints, as
    tests/data/junit.xsd restates them)."""
    import xmlschema
    xmlschema.XMLSchema(JUNIT_XSD).validate(str(path))


def test_the_schema_refuses_a_report_without_errors():
    # (the check has teeth: a testsuite without its errors count, as our reports had)
    import io

    import xmlschema
    bad = ('<testsuites><testsuite name="x" tests="1" failures="0"><testcase name="a"/>'
           '</testsuite></testsuites>')
    with pytest.raises(xmlschema.XMLSchemaValidationError, match="errors"):
        xmlschema.XMLSchema(JUNIT_XSD).validate(io.StringIO(bad))


def test_the_report_of_two_folders_is_valid_junit(golden, new, tmp_path):
    (tmp_path / "g").mkdir()
    (tmp_path / "n").mkdir()
    shutil.copyfile(golden, tmp_path / "g" / "a.h5")
    shutil.copyfile(golden, tmp_path / "g" / "b.h5")
    shutil.copyfile(golden, tmp_path / "n" / "a.h5")
    shutil.copyfile(new, tmp_path / "n" / "b.h5")
    with h5py.File(tmp_path / "n" / "b.h5", "r+") as f:
        f["robots/quadruped/q"][5, 9] += 1.0
    junit = tmp_path / "report.xml"
    r = run("compare", tmp_path / "g", tmp_path / "n", "--junit-xml", junit, "-q", "-j", "1")
    assert r.exit_code == 1, r.output
    _valid_junit(junit)
    suite = ET.parse(junit).getroot().find("testsuite")
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("2", "1", "0")


def test_update_replaces_golden(golden, new, tmp_path):
    g = tmp_path / "g.h5"
    shutil.copyfile(golden, g)
    with h5py.File(new, "r+") as f:
        f["robots/quadruped/q"][0, 0] += 1.0
    r = run("compare", g, new, "--update")
    assert r.exit_code == 0 and "updated" in r.output
    assert g.read_bytes() == new.read_bytes()
    assert run("compare", g, new).exit_code == 0


def test_metadata_that_differs_is_ignored_and_listed(golden, tmp_path):
    other = tmp_path / "again.h5"
    assert run("run", f"{SCENARIOS}/quadruped_pd.toml", "-q", "--duration", "0.05", "-o",
               other).exit_code == 0
    r = run("compare", golden, other, "--json")
    assert r.exit_code == 0
    assert "/:created" in json.loads(r.stdout)["ignored_attributes"]
