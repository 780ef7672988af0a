"""The on-disk cache of the compiled loops (raisimcli/jit.py): a change to the file of a compiled
function that another file's compiled function calls must not leave the caller's cached code,
with the old callee inlined in it, in use."""

import os
import shutil
import subprocess
import sys

import pytest

import raisimcli

PACKAGE = os.path.dirname(os.path.abspath(raisimcli.__file__))

CALLEE = """from raisimcli.jit import kernel


@kernel
def value():
    return {}
"""

CALLER = """from raisimcli._probe_callee import value
from raisimcli.jit import kernel


@kernel
def twice():
    return 2.0 * value()
"""


def test_a_change_to_a_callee_s_file_compiles_its_callers_again(tmp_path):
    # a copy of the package with two probe files, the caller's unchanged between the runs: its
    # cached code must follow the callee's file (numba's own stamp, the caller's file alone,
    # gives 2.0 the second time)
    pkg = tmp_path / "raisimcli"
    shutil.copytree(PACKAGE, pkg, ignore=shutil.ignore_patterns("__pycache__"))
    (pkg / "_probe_caller.py").write_text(CALLER)
    env = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_")}
    env["PYTHONPATH"] = str(tmp_path)

    def run() -> list[str]:
        out = subprocess.run(
            [sys.executable, "-c", "import raisimcli, raisimcli._probe_caller as a; "
             "print(raisimcli.__file__); print(a.twice())"],
            env=env, cwd=tmp_path, capture_output=True, text=True, timeout=300)
        assert out.returncode == 0, out.stderr
        return out.stdout.split()

    (pkg / "_probe_callee.py").write_text(CALLEE.format("1.0"))
    where, first = run()
    assert where == str(pkg / "__init__.py")  # the copy, not the installed package
    assert first == "2.0"
    assert list((pkg / "__pycache__").glob("_probe_caller.twice-*.nbi"))  # cached
    assert run()[1] == "2.0"  # (from the cache)
    (pkg / "_probe_callee.py").write_text(CALLEE.format("5.0"))
    assert run()[1] == "10.0"


def test_a_numba_without_the_known_cache_locators_warns_and_keeps_its_own(monkeypatch):
    import raisimcli.jit as jit
    monkeypatch.setattr(jit, "_INSTALLED", [])
    monkeypatch.setattr(jit, "_numba", lambda name: None)
    with pytest.warns(RuntimeWarning, match="cache locators are not those raisimcli knows"):
        jit._install()
    assert jit._INSTALLED == []


def test_the_loops_compile_at_llvm_level_1_and_leave_numba_s_own_level():
    # the package's loops are optimised at LLVM level 1 (raisimcli/jit.py: a shorter first run,
    # the same step time); numba's level is put back after each compilation, for other code
    from numba.core import config
    import raisimcli.jit as jit
    from raisimcli.linalg import _dot
    if "NUMBA_OPT" in os.environ:
        pytest.skip("NUMBA_OPT is set: numba's level applies")
    assert _dot.compile.__name__ == "compile_at_level"
    before = int(config.OPT)
    seen = []
    assert jit._at_our_level(lambda sig: seen.append(int(config.OPT)) or "done")(()) == "done"
    assert seen == [1] and int(config.OPT) == before


def test_numba_opt_set_by_the_user_is_kept():
    code = ("import raisimcli.jit as jit; from raisimcli.linalg import _dot; "
            "print(jit._OPT, _dot.compile.__name__)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, env={**os.environ, "NUMBA_OPT": "3"}).stdout.split()
    assert out == ["None", "compile"]


def test_the_loops_run_without_numba_s_reference_counting():
    """Every loop of the step is compiled without NRT (raisimcli/jit.py's kernel): no reference
    counting at run time."""
    import importlib
    import pkgutil

    from numba.core.dispatcher import Dispatcher

    loops = []
    for info in pkgutil.walk_packages(raisimcli.__path__, "raisimcli."):
        if info.name.endswith("__main__") or ".cli" in info.name:
            continue
        module = importlib.import_module(info.name)
        loops += [f for f in vars(module).values()
                  if isinstance(f, Dispatcher) and f.py_func.__module__ == info.name]
    assert len(loops) > 50
    assert all(f.targetoptions.get("_nrt") is False for f in loops), \
        [f.py_func.__qualname__ for f in loops if f.targetoptions.get("_nrt") is not False]


SCIPY_LINALG_LEFT_OUT = """
import sys
import numpy as np
import raisimcli.jit
assert "scipy.linalg" not in sys.modules
from raisimcli.scenario import load_scenario, run
scn = load_scenario(sys.argv[1], (), duration=0.02, log_path=sys.argv[2])
assert run(scn).status == "complete"
print("scipy.linalg" in sys.modules)
"""

NUMBA_BLAS_AFTER = """
import numpy as np
import raisimcli.jit
from numba import njit
a, b = np.arange(1.0, 13.0).reshape(3, 4), np.linspace(-1.0, 2.0, 20).reshape(4, 5)
u, v = np.array([1.0, -2.0, 0.5, 3.0]), np.array([0.25, 4.0, -1.0])
assert np.array_equal(njit(lambda x, y: np.dot(x, y))(a, b), np.dot(a, b))
assert np.allclose(njit(lambda x, y: np.convolve(x, y))(u, v), np.convolve(u, v), 0, 1e-15)
print("ok")
"""


def test_a_run_does_not_import_scipy_linalg(tmp_path):
    """numba's array functions are imported without scipy.linalg (raisimcli/jit.py's
    _start_numba: 0.12 s of a command's start), and nothing else of a run imports it."""
    scenario = os.path.join(os.path.dirname(PACKAGE), "scenarios", "quadruped_pd.toml")
    out = subprocess.run([sys.executable, "-c", SCIPY_LINALG_LEFT_OUT, scenario,
                          str(tmp_path / "log.h5")], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False"]


def test_numba_s_blas_functions_still_work_in_a_process_that_imported_the_loops():
    """Other compiled code of the same process keeps numba's np.dot (through scipy's BLAS,
    imported when it is compiled) and np.convolve (numba's own loop then)."""
    out = subprocess.run([sys.executable, "-c", NUMBA_BLAS_AFTER], capture_output=True,
                         text=True, check=True)
    assert out.stdout.split() == ["ok"]


def test_the_finder_refuses_scipy_linalg_to_its_own_thread_only():
    """While numba's array functions are imported, another thread of the process may import
    scipy.linalg: the finder refuses it only to the thread that imports them."""
    import threading

    from raisimcli.jit import _WithoutScipyLinalg
    finder = _WithoutScipyLinalg()
    with pytest.raises(ModuleNotFoundError):
        finder.find_spec("scipy.linalg.cython_blas")
    assert finder.find_spec("scipy") is None and finder.find_spec("numba.np") is None
    seen = []
    other = threading.Thread(target=lambda: seen.append(finder.find_spec("scipy.linalg")))
    other.start()
    other.join()
    assert seen == [None]
