"""The first run's helper (raisimcli/warmup.py): its plan, its manifest, that it fills numba's
cache, and that a run whose cache it helped fill writes the same log."""

import base64
import json
import os
import pickle
import subprocess
import sys

import pytest
from numba import types

from raisimcli import warmup

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_plan_takes_the_set_that_saves_the_most_time():
    """Worked by hand, with the helper starting at HELPER_START = 1.5 s. `a` is needed before the
    helper could finish it. `b` alone (done at 2.5, needed at 3.0) and `c` alone (done at 4.0,
    needed at 4.0) fit, not both (c would be done at 5.0, needed at 4.0 - 1.0). {c, d, w} saves
    2.5 + 1 + 2 = 5.5 s (d done at 5.0, needed at 9 - 2.5; w done at 7.0, needed at 20 - 3.5),
    {b, d, w} 4 s: taking the earliest first (b) would lose 1.5 s. `wc` is compiled by w (inside
    its compile): not listed on its own. The lambda (an `overload`'s implementation) would save
    3 s more (done at 8.0, needed at 12 - 3.5), but the helper could not find it by its name."""
    assert warmup.HELPER_START == 1.5
    compiled = [(0, "a", "s", 0.2, 0.5), (1, "b", "s", 3.0, 1.0), (1, "c", "s", 4.0, 2.5),
                (0, "d", "s", 9.0, 1.0), (1, "m.f.<locals>.<lambda>", "s", 12.0, 3.0),
                (1, "wc", "s", 20.5, 0.5), (0, "w", "s", 20.0, 2.0)]
    assert [name for name, _ in warmup.plan(compiled)] == ["c", "d", "w"]


@pytest.mark.parametrize("kind", ["air", "ground"])
def test_the_manifest_names_compiled_functions_of_this_numba(kind):
    entries = warmup._entries(kind=kind)
    assert entries, "warmup.manifest missing or for another numba: write it again (--write)"
    for name, args in entries:
        f = warmup._function(name)
        assert name.startswith("raisimcli.") and hasattr(f, "py_func"), name
        assert isinstance(args, tuple) and all(isinstance(a, types.Type) for a in args), name


def _in_fresh_cache(tmp_path, code: str) -> str:
    # (without the shipped machine code, which would fill the fresh cache: raisimcli.precompiled)
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=ROOT,
               RAISIMCLI_PRECOMPILED="0")
    env.pop("RAISIMCLI_WARM_UP", None)
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_helper_fills_numbas_cache(tmp_path):
    """A manifest of one function: not in a fresh cache, the helper's compile_all puts it there,
    and a new process finds it there."""
    vec = types.Array(types.float64, 1, "C")
    manifest = tmp_path / "one.manifest"
    import numba
    manifest.write_text(json.dumps({"numba": numba.__version__, "plans": {"air": [
        ["raisimcli.linalg._dot", base64.b64encode(pickle.dumps((vec, vec))).decode()]]}}))
    check = f"from raisimcli import warmup; e = warmup._entries({str(manifest)!r}); "
    assert _in_fresh_cache(tmp_path, check + "print(warmup.cached(*e[0]))").strip() == "False"
    _in_fresh_cache(tmp_path, check + "warmup.compile_all(e)")
    assert _in_fresh_cache(tmp_path, check + "print(warmup.cached(*e[0]))").strip() == "True"


@pytest.mark.skipif(len(os.sched_getaffinity(0)) < 2, reason="the helper needs a second CPU")
def test_start_starts_the_helper_in_a_fresh_cache(tmp_path):
    """In a fresh cache (and a second CPU), start() starts the helper process; stop() ends it."""
    out = _in_fresh_cache(tmp_path, "from raisimcli import warmup; started = warmup.start(); "
                                    "p = warmup._helper; warmup.stop(); "
                                    "print(started, p is not None and p.poll() is not None)")
    assert out.split() == ["True", "True"]


def test_start_does_nothing_when_disabled_or_cached(monkeypatch):
    assert warmup._helper is None and not warmup.COMMAND_LINE  # (CliRunner's runs start none)
    monkeypatch.setenv("RAISIMCLI_WARM_UP", "0")
    assert warmup.start() is False
    monkeypatch.delenv("RAISIMCLI_WARM_UP")
    entries = warmup._entries()
    warmup.compile_all(entries[:1])  # (in this session's cache: compiled or loaded)
    assert warmup.cached(*entries[0])
    assert warmup.start() is False and warmup._helper is None


def test_a_first_run_compiles_the_manifest_and_logs_the_same_with_the_helper(tmp_path):
    """A first run of each kind in a fresh cache without the helper compiles every function of
    the manifest's plan for it, for the plan's argument types (else the manifest is stale: write
    it again). A first run in another fresh cache, with the helper, writes the log of a run in
    this session's cache, bit for bit."""
    for kind, scenario in warmup.SCENARIOS.items():
        recorded = warmup.record(scenario)
        compiled = {(name, pickle.loads(base64.b64decode(sig)))
                    for _, name, sig, _, _ in recorded}
        for name, args in warmup._entries(kind=kind):
            assert (name, args) in compiled, f"{kind}: {name}: not compiled for the manifest's " \
                "types; python -m raisimcli.warmup --write"
        # no function compiled once for a literal argument and again for its type (a count
        # that starts as the literal 0: physics/collision.py's _ground_entries)
        unliteral = {}
        for name, args in compiled:
            unliteral.setdefault((name, tuple(types.unliteral(a) for a in args)), []).append(args)
        twice = {key[0]: sigs for key, sigs in unliteral.items() if len(sigs) > 1}
        assert not twice, f"{kind}: compiled for literal arguments and again: {twice}"
    scenario = os.path.join(ROOT, "scenarios", "quadruped_stand.toml")
    # (without the shipped machine code, which would leave the helper nothing to compile)
    env = dict(os.environ, NUMBA_CACHE_DIR=str(tmp_path / "cache"), RAISIMCLI_PRECOMPILED="0")
    env.pop("RAISIMCLI_WARM_UP", None)
    cli = [sys.executable, "-m", "raisimcli"]
    for log, extra in (("helped.h5", env), ("here.h5", os.environ)):
        subprocess.run(cli + ["run", scenario, "--duration", "0.05", "-q", "-o",
                              str(tmp_path / log)], env=extra, check=True, cwd=ROOT)
    done = subprocess.run(cli + ["compare", str(tmp_path / "here.h5"), str(tmp_path / "helped.h5"),
                                 "--rtol", "0", "--atol", "0"], capture_output=True, text=True,
                          cwd=ROOT)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize("scenario,kind", [("quadruped_pd.toml", "air"),
                                           ("quadruped_stand.toml", "ground")])
def test_the_command_starts_the_helper_with_its_scenario_s_plan(scenario, kind, tmp_path,
                                                                monkeypatch):
    """`raisimcli run` (as the command line runs it: COMMAND_LINE) hands start() the kind of
    its scenario's world, whose plan the helper compiles: a world without a ground is "air"."""
    from click.testing import CliRunner

    from raisimcli.cli.main import cli
    asked = []
    monkeypatch.setattr(warmup, "COMMAND_LINE", True)
    monkeypatch.setattr(warmup, "start", lambda kind="air": asked.append(kind) or False)
    done = CliRunner().invoke(cli, ["run", os.path.join(ROOT, "scenarios", scenario),
                                    "--duration", "0.002", "-q", "-o", str(tmp_path / "l.h5")])
    assert done.exit_code == 0, done.output
    assert asked == [kind]
