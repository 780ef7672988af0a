"""The same scenario gives the same log, bit for bit, whatever BLAS kernels the machine picks.

OpenBLAS chooses its kernels from the processor at run time (OPENBLAS_CORETYPE forces a choice),
and kernels sum in different orders. No result of the step may depend on that: every shipped
scenario is run in subprocesses under several forced kernels, and under numba code generated for
the generic x86-64 processor instead of this one, and the logs must be identical
(`compare --rtol 0 --atol 0`). On a processor that lacks a kernel's instructions OpenBLAS falls
back to an older one, so the test still runs there (it then checks fewer distinct kernels).
"""

import os
import subprocess
import sys

import pytest
from click.testing import CliRunner

from conftest import ROOT, SCENARIOS
from raisimcli.cli.main import cli

NAMES = sorted(f[:-5] for f in os.listdir(SCENARIOS) if f.endswith(".toml"))

# every scenario in one interpreter per variant: start-up and compilation are paid once
DRIVER = """
import sys
from raisimcli.cli.main import cli
scenarios, out = sys.argv[1], sys.argv[2]
for name in sys.argv[3:]:
    try:
        cli(["run", f"{scenarios}/{name}.toml", "-q", "--duration", "0.2",
             "-o", f"{out}/{name}.h5"], standalone_mode=False)
    except SystemExit as e:
        if e.code:
            raise
"""

VARIANTS = {
    "Nehalem": {"OPENBLAS_CORETYPE": "Nehalem"},
    "Sandybridge": {"OPENBLAS_CORETYPE": "Sandybridge"},
    "Haswell": {"OPENBLAS_CORETYPE": "Haswell"},
    "generic-numba": {"OPENBLAS_CORETYPE": "Haswell", "NUMBA_CPU_NAME": "generic"},
}


@pytest.fixture(scope="module")
def logs(tmp_path_factory):
    base = tmp_path_factory.mktemp("determinism")
    procs = {}
    for variant, extra in VARIANTS.items():
        out = base / variant
        out.mkdir()
        env = {**os.environ, **extra}
        env.pop("OPENBLAS_L2_SIZE", None)  # only meaningful together with a machine's own choice
        procs[variant] = (out, subprocess.Popen(
            [sys.executable, "-c", DRIVER, SCENARIOS, str(out), *NAMES], cwd=ROOT, env=env,
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
    for variant, (out, p) in procs.items():
        output, _ = p.communicate(timeout=900)
        assert p.returncode == 0, f"{variant}: {output}"
    return {variant: out for variant, (out, _) in procs.items()}


@pytest.mark.parametrize("name", NAMES)
def test_log_is_bit_identical_under_every_blas_kernel(logs, name):
    reference = logs["Nehalem"] / f"{name}.h5"
    for variant, out in logs.items():
        if variant == "Nehalem":
            continue
        r = CliRunner().invoke(cli, ["compare", str(reference), str(out / f"{name}.h5"),
                                     "--rtol", "0", "--atol", "0", "--max-report", "5"])
        assert r.exit_code == 0, f"{name}, Nehalem vs {variant}:\n{r.output}"
