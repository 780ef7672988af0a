"""The same scenario gives the same log, bit for bit, whatever kernels and builds the machine picks.

OpenBLAS chooses its kernels from the processor at run time (OPENBLAS_CORETYPE forces a choice), and
kernels sum in different orders; numba generates code for the processor it runs on; numpy picks its
loops by the processor's extensions (NPY_DISABLE_CPU_FEATURES turns them off); glibc picks a build
of its math functions (GLIBC_TUNABLES masks what it may use). No result of the step may depend on
any of these: every shipped scenario is run in subprocesses under several such choices and under
this machine's own, each started as the `raisimcli` command starts itself (glibc's plain math
functions, raisimcli.libm), and the logs must be identical (`compare --rtol 0 --atol 0`). The last
variant is an x86-64 processor of 2008 as these libraries see it: OpenBLAS's Nehalem kernels,
numba's generic x86-64, numpy's baseline loops and glibc's SSE2 build without AVX. On a processor
that lacks a kernel's instructions OpenBLAS falls back to an older one, so the test still runs there
(it then checks fewer distinct kernels).
"""

import os
import subprocess
import sys

import pytest
from click.testing import CliRunner

from conftest import BASELINE_ENV, ROOT, SCENARIOS, run_scenarios
from raisimcli.cli.main import cli

NAMES = sorted(f[:-5] for f in os.listdir(SCENARIOS) if f.endswith(".toml"))

# glibc's build of its math functions without AVX, FMA or AVX-512 (the plain SSE2 one), and
# numpy's loops for the x86-64 baseline only
_GLIBC_SSE2 = ":".join(item + ",-AVX,-AVX2,-AVX512F" if item.startswith("glibc.cpu.hwcaps=")
                       else item for item in BASELINE_ENV.get("GLIBC_TUNABLES", "").split(":"))
_NUMPY_BASELINE = "X86_V4 AVX512_ICL AVX512_SPR X86_V3"

VARIANTS = {
    "Nehalem": {"OPENBLAS_CORETYPE": "Nehalem"},
    "this machine's own": {"OPENBLAS_CORETYPE": None},
    "Sandybridge": {"OPENBLAS_CORETYPE": "Sandybridge"},
    "Haswell": {"OPENBLAS_CORETYPE": "Haswell"},
    "generic-numba": {"OPENBLAS_CORETYPE": "Haswell", "NUMBA_CPU_NAME": "generic"},
    "x86-64 of 2008": {"OPENBLAS_CORETYPE": "Nehalem", "NUMBA_CPU_NAME": "generic",
                       "NPY_DISABLE_CPU_FEATURES": _NUMPY_BASELINE,
                       "GLIBC_TUNABLES": _GLIBC_SSE2},
}


@pytest.fixture(scope="module")
def logs(tmp_path_factory):
    base = tmp_path_factory.mktemp("determinism")
    procs = {}
    for variant, extra in VARIANTS.items():
        out = base / variant
        out.mkdir()
        # (OPENBLAS_L2_SIZE only means something together with a machine's own choice)
        env = {**extra, "OPENBLAS_L2_SIZE": None}
        if "GLIBC_TUNABLES" not in BASELINE_ENV:  # (not glibc on x86-64: no such choice)
            env.pop("GLIBC_TUNABLES", None)
        procs[variant] = (out, run_scenarios(out, NAMES, env))
    for variant, (out, p) in procs.items():
        output, _ = p.communicate(timeout=900)
        assert p.returncode == 0, f"{variant}: {output}"
    return {variant: out for variant, (out, _) in procs.items()}


@pytest.mark.parametrize("name", NAMES)
def test_log_is_bit_identical_under_every_kernel_and_build(logs, name):
    reference = logs["Nehalem"] / f"{name}.h5"
    for variant, out in logs.items():
        if variant == "Nehalem":
            continue
        r = CliRunner().invoke(cli, ["compare", str(reference), str(out / f"{name}.h5"),
                                     "--rtol", "0", "--atol", "0", "--max-report", "5"])
        assert r.exit_code == 0, f"{name}, Nehalem vs {variant}:\n{r.output}"


# a box at rest flat on the ground, after (or without) a first query of a tilted box
BOX_AFTER = """
import sys
import numpy as np
import coal
import raisimcli.physics.contacts  # noqa: F401
ground, identity = coal.Halfspace(np.array([0.0, 0.0, 1.0]), 0.0), coal.Transform3s()


def depth(size, R, z):
    request, result = coal.CollisionRequest(), coal.CollisionResult()
    request.security_margin = 0.005
    T = coal.Transform3s()
    T.setTransform(R, np.array([0.0, 0.0, z]))
    coal.collide(coal.Box(*size), T, ground, identity, request, result)
    return result.getContact(0).penetration_depth


if sys.argv[1] == "tilted_first":  # turned about x, then y: no axis of the box is vertical
    c, s = np.cos(0.3), np.sin(0.3)
    about_y = np.array([[c, 0.0, s], [0.0, 1.0, 0.0], [-s, 0.0, c]])
    about_x = np.array([[1.0, 0.0, 0.0], [0.0, c, -s], [0.0, s, c]])
    depth((0.6, 0.3, 0.15), about_y @ about_x, 0.05)
print(repr(depth((0.2, 0.2, 0.2), np.eye(3), 0.1)))
"""


def test_contacts_do_not_depend_on_what_the_process_queried_before():
    # coal's box support keeps a static set by the first box query of the process (the box
    # resting flat then touches at -1e-11 or at 0): raisimcli.physics.contacts sets it at
    # import, so a scenario gives the same bits after any other in the same process (a sweep's
    # worker, a library user); the same depth with and without a tilted box queried first
    out = [subprocess.run([sys.executable, "-c", BOX_AFTER, first], capture_output=True,
                          text=True, check=True, cwd=ROOT).stdout
           for first in ("alone", "tilted_first")]
    assert out[0] == out[1] and float(out[0]) != 0.0  # -1e-11: 1 + 1e-10 times the half side


# the sliding block's scenario, after (or without) a tilted box dropped on the ground first
SLIDE_AFTER = """
import sys
import numpy as np
from raisimcli.cli.main import cli
from raisimcli.physics import World
if sys.argv[1] == "tilted_first":
    w = World(0.001)
    w.add_ground()
    r = w.add_articulated_system(sys.argv[3] + "/robots/box.urdf")
    q = r.get_generalized_coordinate()
    q[2], q[3:7] = 0.2, [0.9, 0.3, 0.2, 0.1]  # (normalised by the setter)
    r.set_state(q, np.zeros(r.nv))
    for _ in range(300):
        w.integrate()
    assert len(w.contacts)  # it landed
cli(["run", sys.argv[3] + "/scenarios/block_slide.toml", "-q", "--duration", "0.3", "-o",
     sys.argv[2]], standalone_mode=False)
"""


def test_a_scenario_gives_the_same_log_after_another_run_in_the_same_process(tmp_path):
    logs = []
    for first in ("alone", "tilted_first"):
        out = str(tmp_path / f"{first}.h5")
        subprocess.run([sys.executable, "-c", SLIDE_AFTER, first, out, ROOT], check=True,
                       cwd=ROOT, capture_output=True)
        logs.append(out)
    r = CliRunner().invoke(cli, ["compare", *logs, "--rtol", "0", "--atol", "0"])
    assert r.exit_code == 0, r.output
