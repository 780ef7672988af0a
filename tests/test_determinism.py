"""The same scenario gives the same log, bit for bit, whatever kernels and builds the machine picks.

OpenBLAS chooses its kernels from the processor at run time (OPENBLAS_CORETYPE forces a choice), and
kernels sum in different orders; numba generates code for the processor it runs on (or for a
generic x86-64 one: the package ships that code, raisimcli/precompiled.py); numpy picks its
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
    # (numba's code for this machine's processor, compiled, not the generic code the package
    # ships, which a process that finds none for its own processor would load otherwise)
    "this machine's own": {"OPENBLAS_CORETYPE": None, "RAISIMCLI_PRECOMPILED": "0"},
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
import raisimcli.physics.contact_world  # noqa: F401
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
    # resting flat then touches at -1e-11 or at 0): raisimcli.physics.contact_world sets it at
    # import, so a scenario gives the same bits after any other in the same process (a sweep's
    # worker, a library user); the same depth with and without a tilted box queried first
    out = [subprocess.run([sys.executable, "-c", BOX_AFTER, first], capture_output=True,
                          text=True, check=True, cwd=ROOT).stdout
           for first in ("alone", "tilted_first")]
    assert out[0] == out[1] and float(out[0]) != 0.0  # -1e-11: 1 + 1e-10 times the half side


# a thin plate sliding flat on the ground (thinner than collision.BOX_SMALLEST: coal answers
# it), after (or without) the same plate dropped tilted onto the ground first; "coal_first":
# after a query of a tilted box made before raisimcli's import, which sets coal's factor to 1
PLATE_AFTER = """
import sys
import numpy as np
if sys.argv[1] == "coal_first":
    import coal
    c, s = np.cos(0.3), np.sin(0.3)
    R = np.array([[c, 0.0, s], [0.0, 1.0, 0.0], [-s, 0.0, c]]) @ \\
        np.array([[1.0, 0.0, 0.0], [0.0, c, -s], [0.0, s, c]])
    T = coal.Transform3s()
    T.setTransform(R, np.array([0.0, 0.0, 0.05]))
    request = coal.CollisionRequest()
    request.security_margin = 0.005
    coal.collide(coal.Box(0.6, 0.3, 0.15), T, coal.Halfspace(np.array([0.0, 0.0, 1.0]), 0.0),
                 coal.Transform3s(), request, coal.CollisionResult())
from raisimcli.model import load_urdf_string
from raisimcli.physics import World
PLATE = '''<robot name="plate"><link name="body"><inertial><mass value="1.0"/>
  <inertia ixx="0.004" iyy="0.004" izz="0.008" ixy="0" ixz="0" iyz="0"/></inertial>
  <collision><geometry><box size="0.3 0.3 0.003"/></geometry></collision></link></robot>'''


def world(z, quaternion, vx):
    w = World(0.001)
    w.add_ground()
    r = w.add_articulated_system(load_urdf_string(PLATE, path="plate.urdf"))
    q = r.get_generalized_coordinate()
    q[2], q[3:7] = z, quaternion
    u = np.zeros(r.nv)
    u[0] = vx
    r.set_state(q, u)
    return w, r


if sys.argv[1] == "tilted_first":
    w, r = world(0.3, [0.9, 0.3, 0.2, 0.1], 0.0)
    touched = 0
    for _ in range(400):
        w.integrate()
        touched += len(w.contacts) > 0
    assert touched  # it landed
w, r = world(0.0015, [0.0, 0.0, 0.0, 1.0], 1.0)  # resting flat on its face, sliding
for _ in range(300):
    w.integrate()
assert len(w.contacts) == 4
print(r.get_generalized_coordinate().tobytes().hex())
"""


def test_a_run_gives_the_same_bits_after_another_run_in_the_same_process():
    # a plate sliding after a tilted plate landed in the same process, and without it: the
    # same state bit for bit; and a control: after a query that set coal's factor before
    # raisimcli's import, the state differs (the run does depend on that factor)
    out = {first: subprocess.run([sys.executable, "-c", PLATE_AFTER, first], check=True,
                                 cwd=ROOT, capture_output=True, text=True).stdout
           for first in ("alone", "tilted_first", "coal_first")}
    assert out["alone"] == out["tilted_first"]
    assert out["coal_first"] != out["alone"]
