"""Which build of the C math functions a process runs, and the environment that gives every x86-64
machine the same one.

glibc ships some of its math functions (sin, cos, tan, atan, atan2, exp, log, pow, ...) in several
builds and picks one for the processor when a program starts: on x86-64, a build compiled with
fused multiply-add when the processor has FMA and AVX2 (Intel from Haswell, 2013, on; AMD from
Zen), one with AMD's FMA4 on the processors that have only that, and otherwise the plain build
(the selectors `ifunc-fma.h`, `ifunc-fma4.h` and `ifunc-avx-fma4.h` of glibc's
`sysdeps/x86_64/fpu/multiarch`, https://sourceware.org/git/?p=glibc.git). A fused multiply-add
rounds once where the plain build rounds twice, so for some arguments the builds' results differ
in the last bit. Pinocchio's kinematics takes the sine and cosine of every revolute joint's angle,
and the step's compiled loops and the scenario schedules call these functions too: a run of the
shipped scenarios for 1 s under the two builds gave different logs for 10 of the 17 (from 1 ulp
of a potential energy to 8e-9 N of a contact force after the quadruped's impacts).

glibc reads the environment variable GLIBC_TUNABLES when a process starts;
`glibc.cpu.hwcaps=-FMA,-FMA4` (`-FMA_Usable,-FMA4_Usable` for glibc 2.28 to 2.32: MASK has both)
makes it pick as if the processor had neither, which gives the plain build on every x86-64 processor
(its AVX build, picked when AVX is there, is the same code without fused operations, and gives the
same results: `tests/test_determinism.py` runs the scenarios under both). The `raisimcli` command's
run, sweep and inspect start themselves again under that setting when it is missing
(`raisimcli.cli.entry`), and its helper processes and sweep workers inherit it. A Python program
that uses the library runs the build its own process started with: start it with that variable set,
or call `restart_with_baseline()` first thing, for logs equal to the command's. Each log records the
build it was made with (the root attribute `libm`, `variant()`), so a comparison that fails because
of it says so. Other operating systems, other processors and other C libraries (musl) have no such
choice; there the attribute says `other`.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping

# the glibc.cpu.hwcaps entries that leave glibc the plain build: its names since glibc 2.33, and
# those of glibc 2.28 to 2.32, which ignored "-FMA" for this choice and took "-FMA_Usable" (each
# version ignores the other's names; measured with the libc6 packages of Debian 11 and 12)
MASK = ("-FMA", "-FMA4", "-FMA_Usable", "-FMA4_Usable")
_HWCAPS = "glibc.cpu.hwcaps"


def applies() -> bool:
    """Whether this process runs glibc on x86-64, where the choice exists."""
    if not sys.platform.startswith("linux") or os.uname().machine != "x86_64":
        return False
    try:
        return os.confstr("CS_GNU_LIBC_VERSION").startswith("glibc")
    except (ValueError, OSError, AttributeError):
        return False


def _hwcaps(tunables: str) -> list[str]:
    """The entries of glibc.cpu.hwcaps in a GLIBC_TUNABLES value ("name=value:name=value")."""
    caps = []
    for item in tunables.split(":"):
        name, _, value = item.partition("=")
        if name == _HWCAPS:
            caps += value.split(",")
    return caps


def baseline_environment(environ: Mapping[str, str]) -> dict[str, str] | None:
    """A copy of `environ` whose GLIBC_TUNABLES masks FMA and FMA4 (the module's docstring),
    keeping whatever else it set; None when `environ` masks them already or when glibc on
    x86-64 is not in use (nothing to do)."""
    if not applies():
        return None
    tunables = environ.get("GLIBC_TUNABLES", "")
    missing = [m for m in MASK if m not in _hwcaps(tunables)]
    if not missing:
        return None
    items = [item for item in tunables.split(":") if item]
    if any(item.partition("=")[0] == _HWCAPS for item in items):
        items = [item + "," + ",".join(missing) if item.partition("=")[0] == _HWCAPS else item
                 for item in items]
    else:
        items.append(f"{_HWCAPS}={','.join(missing)}")
    return {**environ, "GLIBC_TUNABLES": ":".join(items)}


def restart_with_baseline() -> None:
    """Start this program again under glibc's plain build of its math functions, when it runs
    another one (nothing happens when the environment has the mask already, or when glibc on
    x86-64 is not in use): the same interpreter, arguments and environment plus the mask, in
    place of this process (os.execve: the same process id; standard output and error are
    flushed first). Call it first thing in a program that writes logs with the library, for
    logs equal to the `raisimcli` command's; whatever ran before it runs again. An
    interactive interpreter (or a notebook) cannot be started again: it gets a warning
    instead, and keeps its build. If the new start fails, the program goes on here."""
    env = baseline_environment(os.environ)
    if env is None or getattr(sys, "frozen", False):
        return
    if hasattr(sys, "ps1") or sys.flags.interactive or "IPython" in sys.modules or \
            not sys.executable:
        import warnings
        warnings.warn("raisimcli.libm: an interactive interpreter cannot be started again; "
                      f"start Python with GLIBC_TUNABLES={_HWCAPS}={','.join(MASK)} for logs "
                      "equal to the raisimcli command's", stacklevel=2)
        return
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (AttributeError, OSError, ValueError):
            pass
    try:
        os.execve(sys.executable, [sys.executable, *sys.orig_argv[1:]], env)
    except OSError:
        pass


def _start_environment() -> str:
    """GLIBC_TUNABLES as this process started with it, which is what glibc read (the process
    may have changed os.environ since)."""
    try:
        with open("/proc/self/environ", "rb") as f:
            for entry in f.read().split(b"\0"):
                if entry.startswith(b"GLIBC_TUNABLES="):
                    return entry[len(b"GLIBC_TUNABLES="):].decode(errors="replace")
            return ""
    except OSError:
        return os.environ.get("GLIBC_TUNABLES", "")


def _cpu_flags() -> set[str]:
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.partition(":")[2].split())
    except OSError:
        pass
    return set()


def _glibc_version() -> tuple[int, ...]:
    try:
        return tuple(int(x) for x in os.confstr("CS_GNU_LIBC_VERSION").split()[1].split("."))
    except (ValueError, OSError, AttributeError, IndexError):
        return (0,)


def variant() -> str:
    """The build of glibc's math functions this process runs: "fma" (FMA and AVX2), "fma4",
    "baseline" (the plain build, or its AVX twin: the same results), or "other" when glibc on
    x86-64 is not in use."""
    if not applies():
        return "other"
    return _variant(_cpu_flags(), _hwcaps(_start_environment()), _glibc_version())


def _variant(flags: set[str], caps: list[str], version: tuple[int, ...]) -> str:
    """variant() for a processor's `flags`, the glibc.cpu.hwcaps entries `caps` the process
    started with and glibc's `version`: glibc picks the fused build when FMA and AVX2 are
    usable, else the FMA4 one when FMA4 is; the entries that mask a feature are named "-NAME"
    in 2.36 and "-NAME_Usable" in 2.31 (measured; the boundary is taken as 2.33, the release
    that renamed glibc's x86 CPU features, unmeasured), and before 2.28 the tunable was
    called glibc.tune.hwcaps (before 2.26 there was none)."""
    if version < (2, 28):
        caps = []
    suffix = "" if version >= (2, 33) else "_Usable"

    def usable(name: str) -> bool:
        return name.lower() in flags and f"-{name}{suffix}" not in caps

    if usable("FMA") and usable("AVX2"):
        return "fma"
    if usable("FMA4"):
        return "fma4"
    return "baseline"
