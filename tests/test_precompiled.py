"""The machine code of the compiled loops shipped with the package (raisimcli/precompiled.py): made
from these sources, loaded by a first run in a fresh copy (nothing compiled, the golden logs'
bits), added to numba's cache beside what is there, and left alone when it does not apply."""

import io
import json
import os
import pickle
import shutil
import subprocess
import sys

import pytest
from click.testing import CliRunner

from conftest import _DRIVER, BASELINE_ENV, ROOT, SCENARIOS
from raisimcli import precompiled
from raisimcli.cli.main import cli

GOLDEN = os.path.join(ROOT, "tests", "golden")
NAMES = sorted(f[:-5] for f in os.listdir(SCENARIOS) if f.endswith(".toml"))
WRITE_AGAIN = "python -m raisimcli.precompiled --write"

# the conditions a process started as the `raisimcli` command has (a generic processor)
CONDITIONS = """
import json
import raisimcli.jit as jit
from raisimcli.precompiled import _conditions
print(json.dumps(_conditions(jit._PackageStamp.digest, jit._OPT)))
"""


def _header() -> dict:
    import tarfile
    with tarfile.open(precompiled.ARCHIVE, "r:xz") as tar:
        first = tar.next()
        assert first.name == "header.json"
        return json.loads(tar.extractfile(first).read())


def _members() -> dict:
    import tarfile
    with tarfile.open(precompiled.ARCHIVE, "r:xz") as tar:
        return {m.name: tar.extractfile(m).read() for m in tar if m.isfile()}


def _without_numba_variables(env=None) -> dict:
    """`env` (os.environ) without numba's variables and ours."""
    return {k: v for k, v in (os.environ if env is None else env).items()
            if not k.startswith("NUMBA_") and k != "RAISIMCLI_PRECOMPILED"}


def test_the_shipped_machine_code_is_made_from_these_sources():
    # a change to a file of compiled loops (or to numba, Python, the loops' level) makes it
    # stale: a first run would compile again
    env = dict(_without_numba_variables(), NUMBA_CPU_NAME="generic")
    here = json.loads(subprocess.run([sys.executable, "-c", CONDITIONS], env=env, cwd=ROOT,
                                     capture_output=True, text=True, check=True).stdout)
    shipped = _header()["conditions"]
    if shipped["python"] != here["python"]:
        pytest.skip(f"made for {shipped['python']}; this is {here['python']}")
    # (a numba other than the one the code was made by fails here, loudly: .ci/constraints.txt
    # pins it, and with another one every user's first run would compile for half a minute)
    assert shipped["numba"] == here["numba"], \
        f"the shipped machine code was made by numba {shipped['numba']}, this is numba " \
        f"{here['numba']}: pin it in .ci/constraints.txt, or {WRITE_AGAIN}"
    assert shipped == here, f"the shipped machine code is stale: {WRITE_AGAIN}"


def _run_in_fresh_copy(tmp_path, args: list, base_env: dict | None = None):
    """Run `python *args` (in tmp_path) on a copy of the package without any cache, in
    `base_env` (os.environ) without its NUMBA_ variables but numba's cache log, and assert
    that it succeeded and compiled nothing: numba's log names the copy's cache, says "data
    loaded" and never "data saved". Skipped while the shipped code is stale (the first test
    fails then). Returns the finished process (its output captured as text)."""
    import raisimcli.jit as jit
    if _header()["conditions"]["digest"] != jit._digest().hex():
        pytest.skip(f"the shipped machine code is stale (the test above fails): {WRITE_AGAIN}")
    copy = tmp_path / "copy"
    shutil.copytree(os.path.join(ROOT, "raisimcli"), copy / "raisimcli",
                    ignore=shutil.ignore_patterns("__pycache__"))
    env = dict(_without_numba_variables(base_env), PYTHONPATH=str(copy), NUMBA_DEBUG_CACHE="1")
    done = subprocess.run([sys.executable, *args], env=env, cwd=tmp_path, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    assert str(copy / "raisimcli") in done.stdout  # (the copy's cache, not the checkout's)
    assert "data loaded" in done.stdout
    assert "data saved" not in done.stdout, \
        [line for line in done.stdout.splitlines() if "data saved" in line][:5]
    assert precompiled.FIRST_COMPILE not in done.stderr
    return done


def test_a_loop_compiled_after_all_is_announced_once_on_stderr(tmp_path):
    # where the shipped code does not apply (here: turned off) and numba's cache is empty, the
    # first loop numba compiles prints one line before it; a second run loads the loops from the
    # cache and says nothing
    program = ("import numpy as np\nfrom raisimcli.linalg import Cholesky\n"
               "Cholesky(np.eye(3) * 2.0)\nprint('done')")
    env = dict(_without_numba_variables(), RAISIMCLI_PRECOMPILED="0",
               NUMBA_CACHE_DIR=str(tmp_path / "cache"), PYTHONPATH=ROOT)
    runs = [subprocess.run([sys.executable, "-c", program], env=env, cwd=tmp_path,
                           capture_output=True, text=True, timeout=300) for _ in range(2)]
    assert [r.stdout for r in runs] == ["done\n", "done\n"], [r.stderr for r in runs]
    assert runs[0].stderr == precompiled.FIRST_COMPILE + "\n"
    assert runs[1].stderr == ""


def _assert_golden(out, names):
    """Each log out/<name>.h5 is its golden log bit for bit."""
    for name in names:
        r = CliRunner().invoke(cli, ["compare", os.path.join(GOLDEN, f"{name}.h5"),
                                     str(out / f"{name}.h5"), "--rtol", "0", "--atol", "0",
                                     "--max-report", "5"])
        assert r.exit_code == 0, f"{name}:\n{r.output}"


def test_a_first_run_in_a_fresh_copy_compiles_nothing_and_gives_the_golden_bits(tmp_path):
    # every shipped scenario, run by the command in a copy of the package without any cache:
    # the shipped entries are loaded, and each log is its golden log bit for bit
    out = tmp_path / "logs"
    _run_in_fresh_copy(tmp_path, ["-m", "raisimcli", "run",
                                  *[os.path.join(SCENARIOS, f"{n}.toml") for n in NAMES],
                                  "-q", "--duration", "0.2", "-o", f"{out}{os.sep}"])
    _assert_golden(out, NAMES)


def test_a_library_program_runs_the_shipped_code_and_gives_the_golden_bits(tmp_path):
    # a Python program that calls the library (numba compiling for this machine's processor,
    # its default: no NUMBA_CPU_NAME) in a fresh copy, started as the golden logs' driver is
    # (glibc's plain math): the shipped entries are added, loaded in place of this
    # processor's, which the cache lacks, and nothing is compiled; the logs are the golden ones
    out = tmp_path / "logs"
    out.mkdir()
    names = ["quadruped_stand", "gripper", "fourbar"]  # (the ground, mimics, a loop)
    _run_in_fresh_copy(tmp_path, ["-c", _DRIVER, SCENARIOS, str(out), "0.2", *names],
                       BASELINE_ENV)
    _assert_golden(out, names)


def test_a_body_on_the_ground_with_any_set_of_shapes_compiles_nothing(tmp_path):
    # the scenarios the archive was made with beyond the shipped ones: a floating body on the
    # ground with each set of boxes, cylinders and meshes (the quick call's versions), without
    # and with a hand of mimic fingers; a robot of one of these kinds (ANYmal's cylinders, Go2's
    # meshes, Panda's boxes and meshes with its mimicking finger) starts without compiling
    made = tmp_path / "made"
    made.mkdir()
    scenarios = [c[1] for c in precompiled._commands(str(made))
                 if c[0] == "run" and c[1].startswith(str(made))]
    assert len(scenarios) == 16
    _run_in_fresh_copy(tmp_path, ["-m", "raisimcli", "run", *scenarios, "-q",
                                  "-o", f"{tmp_path / 'logs'}{os.sep}"])


def test_inspecting_a_robot_whose_mass_matrix_is_singular_compiles_nothing(tmp_path):
    # a model whose mass matrix is singular at its nominal configuration (iCub's neck) is
    # checked by the compiled Jacobi rotations (more than 3 DoFs), which the archive holds
    made = tmp_path / "made"
    made.mkdir()
    urdf, = [c[1] for c in precompiled._commands(str(made))
             if c[0] == "inspect" and c[1].startswith(str(made))]
    done = _run_in_fresh_copy(tmp_path, ["-m", "raisimcli", "inspect", urdf])
    assert "[singular-mass-matrix]" in done.stdout + done.stderr
    assert "'j1', 'j2' can move together" in done.stdout + done.stderr


@pytest.fixture
def generic(monkeypatch, tmp_path):
    """This process as one started as the command (numba's settings for a generic processor,
    no other NUMBA_ variable), with numba's cache in tmp_path/cache; the arguments of
    precompiled.install as raisimcli.jit gives them."""
    from numba.core import config

    import raisimcli.jit as jit
    for k in list(os.environ):
        if k.startswith("NUMBA_") or k == "RAISIMCLI_PRECOMPILED":
            monkeypatch.delenv(k)
    monkeypatch.setattr(config, "CPU_NAME", "generic")
    monkeypatch.setattr(config, "CPU_FEATURES", "")
    monkeypatch.setattr(config, "CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(precompiled, "USABLE", precompiled.USABLE)  # (install sets it)
    digest = jit._PackageStamp.digest
    if _header()["conditions"] != precompiled._conditions(digest, jit._OPT):
        pytest.skip(f"the shipped machine code does not apply here: {WRITE_AGAIN}")
    return jit._INSTALLED, digest, jit._FOLDERS, jit._OPT


def _index(folder: str, base: str, digest: bytes) -> dict:
    from numba.core import caching
    return caching.IndexDataCacheFile(folder, base, digest)._load_index()


def test_the_entries_are_added_once_beside_those_already_there(generic, tmp_path):
    locators, digest, folders, opt = generic
    members = _members()
    functions = _header()["functions"]
    shipped = sum(len(_entries_of(members, rel, base))
                  for rel, bases in functions.items() for base in bases)
    # an entry of another processor already there, under the data file name the first shipped
    # entry had: it stays, and its data file is not overwritten
    rel, base = "physics/step", functions["physics/step"][0]
    folder = precompiled._folder(locators, rel)
    from numba.core import caching
    theirs = caching.IndexDataCacheFile(folder, base, digest)
    taken = next(iter(_entries_of(members, rel, base).values()))
    other = ("another processor's key", ("x86_64-unknown-linux-gnu", "znver9", "+avx"), ("", ""))
    with open(os.path.join(folder, taken), "wb") as f:
        f.write(b"their machine code")
    theirs._save_index({other: taken})

    assert precompiled.install(locators, digest, folders, opt) == shipped
    index = _index(folder, base, digest)
    assert index[other] == taken and len(index) == 1 + len(_entries_of(members, rel, base))
    with open(os.path.join(folder, taken), "rb") as f:
        assert f.read() == b"their machine code"
    assert precompiled.install(locators, digest, folders, opt) == 0  # (done: the folders' stamps)
    for name in os.listdir(folder):
        if name.startswith("raisimcli-precompiled-"):
            os.remove(os.path.join(folder, name))
    assert precompiled.install(locators, digest, folders, opt) == 0  # (every entry is there)
    assert _index(folder, base, digest) == index


def _entries_of(members: dict, rel: str, base: str) -> dict:
    """The archive's index of one function: {numba's key: data file name}."""
    f = io.BytesIO(members[precompiled._member(rel, base + ".nbi")])
    pickle.load(f)  # (numba's version)
    return pickle.loads(f.read())[1]


@pytest.mark.parametrize("case", ["turned off", "another NUMBA_ variable", "other sources",
                                  "a processor asked for by name"])
def test_nothing_is_added_where_the_entries_do_not_apply(generic, tmp_path, monkeypatch, case):
    from numba.core import config
    locators, digest, folders, opt = generic
    if case == "turned off":
        monkeypatch.setenv("RAISIMCLI_PRECOMPILED", "0")
    elif case == "another NUMBA_ variable":  # (its machine code would differ: the index check)
        monkeypatch.setenv("NUMBA_BOUNDSCHECK", "1")
    elif case == "other sources":
        digest = bytes(32)
    else:
        monkeypatch.setattr(config, "CPU_NAME", "znver4")
        monkeypatch.setattr(config, "CPU_FEATURES", None)
    assert precompiled.install(locators, digest, folders, opt) == 0
    cache = tmp_path / "cache"
    assert not cache.exists() or not [p for p in cache.rglob("*") if p.is_file()]


def test_the_fallback_wraps_the_package_s_loops_and_leaves_an_unknown_cache_alone():
    # each loop's cache looks for the generic entry (when the shipped code applies here); a
    # cache without the members this was written for (another numba) is left as numba made it
    from raisimcli.linalg import _dot
    if not precompiled.USABLE:
        pytest.skip("the shipped code does not apply in this process (a NUMBA_ setting)")
    assert "_load_overload" in vars(_dot._cache)  # (the wrapper, over numba's method)

    class Unknown:
        def _load_overload(self, sig, target_context):
            return None
    unknown = Unknown()
    precompiled.fall_back_to_generic(unknown)
    assert "_load_overload" not in vars(unknown)
