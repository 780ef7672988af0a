"""glibc's builds of its math functions (raisimcli.libm): the command runs the plain one whatever
environment it is started in, and a log says which build made it.

The builds are told apart by their results: a process computes sin, cos, atan, exp, log, pow and
atan2 at 20,000 arguments and prints a digest of the bits, with the build `variant()` names.
"""

import os
import shutil
import subprocess
import sys

import h5py
import pytest
from click.testing import CliRunner

from conftest import ROOT, SCENARIOS
from raisimcli.cli.main import cli
from raisimcli.libm import MASK, _variant, applies, baseline_environment

GOLDEN = os.path.join(ROOT, "tests", "golden")
glibc_only = pytest.mark.skipif(not applies(), reason="not glibc on x86-64: no build to choose")

BITS = """
import hashlib, math, random, struct
from raisimcli.libm import variant
rng = random.Random(7)
xs = [rng.uniform(-20.0, 20.0) for _ in range(20000)]
h = hashlib.sha256()
for f in (math.sin, math.cos, math.atan, math.exp, lambda x: math.log(abs(x)),
          lambda x: math.pow(abs(x), 0.37), lambda x: math.atan2(x, 1.3)):
    h.update(struct.pack("20000d", *[f(x) for x in xs]))
print(variant(), h.hexdigest())
"""


def _environment(tunables: str | None) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "GLIBC_TUNABLES"}
    if tunables is not None:
        env["GLIBC_TUNABLES"] = tunables
    return env


def _bits(tunables: str | None) -> tuple[str, str]:
    out = subprocess.run([sys.executable, "-c", BITS], env=_environment(tunables), cwd=ROOT,
                         capture_output=True, text=True, check=True).stdout.split()
    return out[0], out[1]


@glibc_only
def test_the_environment_gains_the_mask_and_keeps_the_rest():
    mask = "-FMA,-FMA4,-FMA_Usable,-FMA4_Usable"
    assert baseline_environment({"HOME": "/h"}) == {
        "HOME": "/h", "GLIBC_TUNABLES": f"glibc.cpu.hwcaps={mask}"}
    assert baseline_environment({"GLIBC_TUNABLES": "glibc.malloc.check=3"})["GLIBC_TUNABLES"] \
        == f"glibc.malloc.check=3:glibc.cpu.hwcaps={mask}"
    assert baseline_environment({"GLIBC_TUNABLES": "glibc.cpu.hwcaps=-AVX512F:glibc.x=1"})[
        "GLIBC_TUNABLES"] == f"glibc.cpu.hwcaps=-AVX512F,{mask}:glibc.x=1"
    assert baseline_environment({"GLIBC_TUNABLES": "glibc.cpu.hwcaps=-FMA"})[
        "GLIBC_TUNABLES"] == "glibc.cpu.hwcaps=-FMA,-FMA4,-FMA_Usable,-FMA4_Usable"
    assert baseline_environment(
        {"GLIBC_TUNABLES": "glibc.cpu.hwcaps=-FMA4_Usable,-FMA,-FMA_Usable,-FMA4"}) is None


def test_the_build_named_follows_the_names_each_glibc_version_takes():
    # measured with the libc6 packages of Debian 11 (glibc 2.31) and 12 (2.36) under their own
    # loaders, on a processor with FMA and AVX2: 2.31 kept its fused build under "-FMA,-FMA4" and
    # took the plain one under "-FMA_Usable" or "-AVX2_Usable"; 2.36 the other way round
    flags = {"fma", "avx2", "avx"}
    assert _variant(flags, [], (2, 36)) == "fma"
    assert _variant(flags, ["-FMA", "-FMA4"], (2, 36)) == "baseline"
    assert _variant(flags, ["-AVX2"], (2, 36)) == "baseline"
    assert _variant(flags, ["-FMA_Usable", "-FMA4_Usable"], (2, 36)) == "fma"
    assert _variant(flags, ["-FMA", "-FMA4"], (2, 31)) == "fma"
    assert _variant(flags, ["-FMA_Usable", "-FMA4_Usable"], (2, 31)) == "baseline"
    assert _variant(flags, ["-AVX2_Usable"], (2, 31)) == "baseline"
    assert _variant(flags, list(MASK), (2, 31)) == _variant(flags, list(MASK), (2, 41)) \
        == "baseline"
    assert _variant(flags, list(MASK), (2, 27)) == "fma"  # (glibc.tune.hwcaps before 2.28)
    assert _variant({"avx"}, [], (2, 36)) == "baseline"  # (a processor without FMA)
    assert _variant({"fma4", "avx"}, [], (2, 36)) == "fma4"
    assert _variant({"fma4", "avx"}, list(MASK), (2, 36)) == "baseline"


@glibc_only
def test_processes_naming_the_same_build_compute_the_same_bits():
    # the mask, the mask without AVX2 and the plain SSE2 build: all "baseline", all one result
    runs = [_bits(t) for t in (f"glibc.cpu.hwcaps={','.join(MASK)}", "glibc.cpu.hwcaps=-AVX2",
                               "glibc.cpu.hwcaps=-FMA,-FMA4,-AVX,-AVX2,-AVX512F")]
    assert {variant for variant, _ in runs} == {"baseline"}
    assert len({bits for _, bits in runs}) == 1
    # the machine's own choice: on a processor with FMA and AVX2 the fused build, whose bits
    # differ from the plain build's; elsewhere the plain build itself
    variant, bits = _bits(None)
    assert variant in ("fma", "fma4", "baseline")
    assert (bits == runs[0][1]) == (variant == "baseline"), variant


@pytest.mark.parametrize("program", ["module", "script"])
def test_the_command_runs_the_plain_build_from_any_environment(tmp_path, program):
    # started without the mask (a user's shell), the command starts itself again with it: its
    # log is the golden one bit for bit (made with the plain build), and says so; the main
    # scenario's logs differ between the two builds on a processor with FMA
    if program == "module":
        command = [sys.executable, "-m", "raisimcli"]
    else:
        command = [os.path.join(os.path.dirname(sys.executable), "raisimcli")]
        if not os.path.exists(command[0]):
            pytest.skip("no raisimcli script beside this interpreter")
    out = tmp_path / "quadruped_pd.h5"
    subprocess.run([*command, "run", os.path.join(SCENARIOS, "quadruped_pd.toml"), "-q",
                    "--duration", "0.2", "-o", str(out)], env=_environment(None), cwd=ROOT,
                   check=True, capture_output=True)
    with h5py.File(out) as f:
        assert f.attrs["libm"] == ("baseline" if applies() else "other")
    r = CliRunner().invoke(cli, ["compare", os.path.join(GOLDEN, "quadruped_pd.h5"), str(out),
                                 "--rtol", "0", "--atol", "0", "--max-report", "5"])
    assert r.exit_code == 0, r.output


def test_compare_says_when_two_logs_were_made_with_other_math(tmp_path):
    new = tmp_path / "pendulum.h5"
    shutil.copy(os.path.join(GOLDEN, "pendulum.h5"), new)
    with h5py.File(new, "a") as f:
        f.attrs["libm"] = "fma"
    r = CliRunner().invoke(cli, ["compare", os.path.join(GOLDEN, "pendulum.h5"), str(new)])
    assert r.exit_code == 1
    text = " ".join(r.output.split())
    assert "attribute differs: /:libm: 'baseline' -> 'fma'" in text
    assert "the logs do not name the same build of glibc's math functions" in text


SCRIPT = """
import sys
print("started", flush=False)  # (runs again after the new start: flushed before it)
from raisimcli.libm import restart_with_baseline
restart_with_baseline()
from raisimcli.scenario import load_scenario, run
run(load_scenario(sys.argv[1], duration=0.2, log_path=sys.argv[2]))
"""


def test_a_program_of_ours_starts_again_under_the_plain_build(tmp_path):
    # a Python program using the library, started without the mask: after
    # restart_with_baseline() its log is the command's (the golden one) bit for bit
    script, out = tmp_path / "program.py", tmp_path / "quadruped_pd.h5"
    script.write_text(SCRIPT)
    before, _ = _bits(None)  # the build a program started from this environment runs
    p = subprocess.run([sys.executable, str(script), os.path.join(SCENARIOS, "quadruped_pd.toml"),
                        str(out)], env=_environment(None), cwd=ROOT, capture_output=True,
                       text=True, check=True)
    # what ran before the new start printed its line before it (flushed), and again after it
    assert p.stdout.split() == ["started"] * (1 if before in ("baseline", "other") else 2)
    with h5py.File(out) as f:
        assert f.attrs["libm"] == ("baseline" if applies() else "other")
    r = CliRunner().invoke(cli, ["compare", os.path.join(GOLDEN, "quadruped_pd.h5"), str(out),
                                 "--rtol", "0", "--atol", "0", "--max-report", "5"])
    assert r.exit_code == 0, r.output
