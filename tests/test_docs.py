"""The docs keep up with the code (sqlite-utils' habit): every command has help and is in the
README and docs/cli.md; the README's two set-up commands exist and .ci/run runs the test one."""

import os
import re

import pytest
from click.testing import CliRunner

from conftest import ROOT
from raisimcli.cli.main import cli

COMMANDS = sorted(cli.commands)


def read(*parts):
    with open(os.path.join(ROOT, *parts)) as f:
        return f.read()


def test_commands():
    assert COMMANDS == ["compare", "export", "inspect", "plot", "replay", "run", "sweep", "view"]


@pytest.mark.parametrize("name", COMMANDS)
def test_command_has_help_and_docs(name):
    r = CliRunner().invoke(cli, [name, "--help"])
    assert r.exit_code == 0 and len(r.output) > 200
    assert f"raisimcli {name}" in read("README.md")
    assert f"## `raisimcli {name}" in read("docs", "cli.md")


@pytest.mark.parametrize("name", COMMANDS)
def test_every_option_is_documented(name):
    doc = read("docs", "cli.md")
    section = doc.split(f"## `raisimcli {name}", 1)[1].split("\n## ", 1)[0]
    for param in cli.commands[name].params:
        opts = [o for o in getattr(param, "opts", []) if o.startswith("-")]
        if opts and "--help" not in opts:
            assert any(o in section for o in opts), f"{name}: {opts} missing from docs/cli.md"


def test_readme_setup_commands_and_ci():
    readme = read("README.md")
    for marker in ("<!-- main-command -->", "<!-- test-command -->"):
        assert marker in readme
    test_cmd = readme.split("<!-- test-command -->", 1)[1].split("```", 2)[1].strip()
    assert "pytest" in test_cmd and "pip install" in test_cmd
    ci = read(".ci", "run")
    assert "test-command" in ci and "rm -rf .venv" in ci
    main_cmd = readme.split("<!-- main-command -->", 1)[1].split("```", 2)[1].strip()
    script = re.search(r"raisimcli run (\S+)", main_cmd).group(1)
    assert os.path.isfile(os.path.join(ROOT, script))


def _blocks(text: str, language: str) -> list[str]:
    import re
    return re.findall(rf"```{language}\n(.*?)```", text, re.S)


DOC_FILES = ["README.md"] + sorted(os.path.join("docs", f)
                                   for f in os.listdir(os.path.join(ROOT, "docs"))
                                   if f.endswith(".md"))


@pytest.mark.parametrize("doc", [d for d in DOC_FILES if _blocks(read(d), "python")])
def test_python_samples_run(tmp_path, doc):
    """Every Python block of a page, in order, in a fresh folder that has the shipped robots
    and scenarios (as a checkout does) and, for the log page, the log it reads."""
    import subprocess
    import sys
    os.symlink(os.path.join(ROOT, "robots"), tmp_path / "robots")
    os.symlink(os.path.join(ROOT, "scenarios"), tmp_path / "scenarios")
    if "run.h5" in read(doc):
        r = CliRunner().invoke(cli, ["run", os.path.join(ROOT, "scenarios", "quadruped_stand.toml"),
                                     "-q", "--duration", "0.05", "-o", str(tmp_path / "run.h5")])
        assert r.exit_code == 0, r.output
    code = "\n".join(_blocks(read(doc), "python"))
    p = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True,
                       text=True, timeout=600)
    assert p.returncode == 0, p.stderr
    if doc == "README.md":  # what the samples print means something
        assert "contacts" in p.stdout and "foot forces: 221.7" in p.stdout
        assert "complete 500 steps" in p.stdout


@pytest.mark.parametrize("doc", [d for d in DOC_FILES if _blocks(read(d), "toml")])
def test_toml_samples_parse(doc):
    import tomllib
    for block in _blocks(read(doc), "toml"):
        tomllib.loads(block)


def test_the_ci_guide_runs_as_written(tmp_path):
    # docs/ci.md's commands, in order, as a user runs them: in a git repository with two of our
    # scenarios in scenarios/, its tolerance file saved where the guide says (each toml block
    # names its file on its first line); every shell block exits 0, and the CI check finds the
    # new logs within tolerance of the goldens
    import shutil
    import subprocess
    import sys
    doc = read("docs", "ci.md")
    blocks = re.findall(r"```(\w*)\n(.*?)```", doc, re.S)
    (tmp_path / "scenarios").mkdir()
    (tmp_path / "robots").mkdir()
    for name in ("pendulum", "double_pendulum"):
        shutil.copy(os.path.join(ROOT, "scenarios", f"{name}.toml"), tmp_path / "scenarios")
        shutil.copy(os.path.join(ROOT, "robots", f"{name}.urdf"), tmp_path / "robots")
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    files = [body for lang, body in blocks if lang == "toml" and body.startswith("# ci/")]
    assert files, "docs/ci.md: no toml block that names its file (# ci/...)"
    for body in files:
        path = tmp_path / body.split("\n", 1)[0][2:].strip()
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(body)
    # (the file the guide shows is the one raisimcli ships)
    tolerances = next(b for b in files if b.startswith("# ci/tolerances.toml"))
    def entries(text):
        return [line for line in text.splitlines() if line.strip() and not line.startswith("#")]
    assert entries(tolerances) == entries(read("docs", "examples", "tolerances.toml"))
    env = dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ["PATH"])
    shell = [body for lang, body in blocks if lang == ""]
    assert len(shell) >= 3
    for body in shell:
        done = subprocess.run(["bash", "-e", "-c", body], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, f"docs/ci.md:\n{body}\n{done.stdout}\n{done.stderr}"
    assert {"double_pendulum.h5", "pendulum.h5"} <= set(os.listdir(tmp_path / "golden"))
    report = (tmp_path / "report.xml").read_text()
    assert 'failures="0"' in report and "pendulum" in report


def test_every_name_of_the_raisimpy_table_exists():
    # the README's table of raisimpy names and ours: every call on our side is World's or
    # ArticulatedSystem's
    from raisimcli.physics import ArticulatedSystem, World
    readme = read("README.md")
    table = readme.split("| raisimpy | raisimcli |", 1)[1].split("\n\n", 1)[0]
    ours = [row.split("|")[2] for row in table.strip().splitlines()[1:]]
    calls = re.findall(r"\b(world|robot)\.(\w+)\(", " ".join(ours))
    assert len(calls) > 30
    for owner, name in calls:
        assert hasattr(World if owner == "world" else ArticulatedSystem, name), \
            f"README: {owner}.{name} does not exist"


def test_the_scenario_reference_is_a_scenario_that_runs(tmp_path):
    # docs/scenario.md's table of every key is docs/examples/everything.toml, and it runs
    doc = read("docs", "scenario.md")
    block = doc.split("```toml\n", 1)[1].split("```", 1)[0]
    assert block == read("docs", "examples", "everything.toml")
    out = tmp_path / "every.h5"
    r = CliRunner().invoke(cli, ["run", os.path.join(ROOT, "docs", "examples", "everything.toml"),
                                 "--duration", "0.05", "-q", "-o", str(out)])
    assert r.exit_code == 0, r.output
    assert out.is_file()
