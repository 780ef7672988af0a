"""A fresh environment's first run, shortened by compiling on a second CPU.

The step's loops are compiled by numba the first time they run and kept in its on-disk cache
(raisimcli/jit.py). Where the machine code the package ships does not apply (another numba or
Python, sources changed since it was made, a robot unlike those it was made with:
raisimcli/precompiled.py), a first run of `raisimcli run` spends about 20 s compiling, one loop
after the other, in one process; most of it is the one compiled call of the quick step
(physics/step/quick.py), which compiles the functions it calls first. When the machine
has a second CPU, `start()` (called by the command `raisimcli run`, not by a CliRunner or another
caller of the command in its own process) starts one helper process that compiles some of those
functions into the same cache meanwhile: those the run needs last (the impulse step, the inverse
dynamics' pass), so that the run finds them in the cache when it gets to them instead of
compiling them itself. The run's own results do not change: it loads the machine code that it
would have compiled, from the same source, at the same optimisation level.

The functions and their argument types are listed in `warmup.manifest` beside this file (a list
of (function, numba's argument types), pickled), in the helper's order: one list (plan) for a
scenario whose world has a ground ("ground") and one for a world without ("air"), since numba
compiles the step of a robot with no ground to query without the contacts' code, and so for
other argument types (docs/physics.md). The manifest is written by

    python -m raisimcli.warmup --write

which times a first run of a scenario of each kind in a fresh cache (SCENARIOS), with its compile
events, and keeps the functions that save the run the most time: those a helper starting about a
second and a half after the run can compile, one after the other, before the run needs them (see
`plan`). `raisimcli run` starts the helper once it has read its scenario, with the plan of its
kind. The helper is started only when the plan's first function is not in the cache yet, numba
is the version that wrote the manifest, and `RAISIMCLI_WARM_UP` is not 0. It writes nothing to
the terminal, and is stopped when the run's process exits (the functions it has compiled by then
stay in the cache). Two processes adding functions to one file of numba's cache index at the
same time may lose one of the two entries: that function is compiled again on the next run,
nothing worse.
"""

from __future__ import annotations

import atexit
import base64
import importlib
import json
import os
import pickle
import subprocess
import sys
import tempfile
import time

MANIFEST = os.path.join(os.path.dirname(os.path.abspath(__file__)), "warmup.manifest")
# --write's runs, in a checkout: a plan for each kind of first run (`kind`): the README's main
# scenario (a robot in the air: the compiled step without the contacts' code) and a robot on the
# ground (with it), whose compiled functions differ in their argument types
_SCENARIOS = os.path.join(os.path.dirname(os.path.dirname(MANIFEST)), "scenarios")
SCENARIOS = {"air": os.path.join(_SCENARIOS, "quadruped_pd.toml"),
             "ground": os.path.join(_SCENARIOS, "quadruped_stand.toml")}
HELPER_START = 1.5  # s from the run's start until the helper compiles (its imports), about

# set by the command line's entry point (raisimcli.cli.entry.main): `raisimcli run` then starts
# the helper. Not in other processes that call the command in theirs (a test's CliRunner): a
# process of ours that keeps compiling beside them would only compete for their CPUs
COMMAND_LINE = False

_helper: subprocess.Popen | None = None
_CHILD = ("import sys; sys.path.insert(0, sys.argv[1]); from raisimcli.warmup import main; "
          "main(sys.argv[2:])")


def _entries(path: str = MANIFEST, kind: str = "air") -> list | None:
    """The manifest's plan for a first run of `kind` (SCENARIOS), [(function's dotted name,
    argument types)], or None (no manifest, another numba, no such plan, or one that cannot be
    read)."""
    import numba
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
        if data.get("numba") != numba.__version__:
            return None
        return [(name, pickle.loads(base64.b64decode(sig)))
                for name, sig in data["plans"][kind]]
    except (OSError, ValueError, KeyError, TypeError, AttributeError, ImportError,
            pickle.UnpicklingError):
        return None


def _function(name: str):
    module, _, attr = name.rpartition(".")
    return getattr(importlib.import_module(module), attr)


def cached(name: str, args: tuple) -> bool:
    """Whether numba's cache holds the compiled function `name` for these argument types (its
    index file, as numba would look it up, for this process's processor or, when the package's
    loops fall back to it, for the generic one: raisimcli.precompiled; True when that cannot be
    told: then no helper)."""
    try:
        from raisimcli import precompiled
        dispatcher = _function(name)
        cache = dispatcher._cache
        key = cache._index_key(args, dispatcher.targetctx.codegen())
        index = cache._cache_file._load_index()
        return key in index or (precompiled.USABLE and precompiled._generic_key(key) in index)
    except Exception:  # noqa: BLE001 - numba's internals differ: no helper
        return True


def start(kind: str = "air") -> bool:
    """Start the helper with the plan for a first run of `kind` ("ground" when the scenario's
    world has a ground, else "air") when it would help (the module's docstring); True when
    started."""
    global _helper
    if _helper is not None or os.environ.get("RAISIMCLI_WARM_UP", "").strip() == "0" or \
            getattr(sys, "frozen", False):
        return False
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        cpus = os.cpu_count() or 1
    entries = _entries(kind=kind) if cpus > 1 else None
    if not entries or cached(*entries[0]):
        return False
    try:
        _helper = subprocess.Popen(  # (this package, wherever the current folder is)
            [sys.executable, "-c", _CHILD, os.path.dirname(os.path.dirname(MANIFEST)), kind],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    except OSError:
        return False
    atexit.register(stop)
    return True


def stop() -> None:
    """Stop the helper (if any) and wait for it."""
    global _helper
    helper, _helper = _helper, None
    if helper is not None and helper.poll() is None:
        helper.terminate()
        try:
            helper.wait(5)
        except subprocess.TimeoutExpired:
            helper.kill()
            helper.wait()


def compile_all(entries: list) -> None:
    """Compile each function of `entries` for its argument types (into numba's cache)."""
    for name, args in entries:
        _function(name).compile(args)


# --- writing the manifest ------------------------------------------------------------------------
_RECORD = r"""
import json, sys, time
from numba.core import event
stack, out, t0 = [], [], time.perf_counter()
class Recorder(event.Listener):
    def on_start(self, e):
        f = e.data["dispatcher"].py_func
        stack.append((f.__module__ + "." + f.__qualname__, e.data["args"], time.perf_counter()))
    def on_end(self, e):
        name, args, t = stack.pop()
        out.append((len(stack), name, args, t - t0, time.perf_counter() - t))
event.register("numba:compile", Recorder())
sys.argv = ["raisimcli", "run", sys.argv[1], "--duration", "0.01", "-o", sys.argv[2], "-q"]
from raisimcli.cli.entry import main
try:
    main()
except SystemExit:
    pass
import base64, pickle
print(json.dumps([(d, n, base64.b64encode(pickle.dumps(a)).decode(), s, t)
                  for d, n, a, s, t in out]))
"""


def record(scenario: str) -> list:
    """A first run of `scenario` in a fresh numba cache, without the helper: its compiled
    functions as (depth in the compile tree, dotted name, pickled argument types, start s,
    seconds) in the order they were compiled."""
    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, NUMBA_CACHE_DIR=os.path.join(tmp, "cache"), RAISIMCLI_WARM_UP="0",
                   RAISIMCLI_PRECOMPILED="0")  # (everything compiled: raisimcli.precompiled)
        done = subprocess.run([sys.executable, "-c", _RECORD, scenario,
                               os.path.join(tmp, "log.h5")], env=env, capture_output=True,
                              text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def plan(compiled: list) -> list:
    """The helper's list from a recorded first run: of the functions compiled from the run's top
    level or by those (depth 0 or 1), the set that saves the run the most time, in the order the
    run needs them. A function saves its compile time when the helper, starting HELPER_START s in
    and compiling the set in that order, finishes it before the run needs it; the run then needs
    the later ones earlier, by the time of those the helper took. (Every set is tried: only the
    few that the helper could finish at all in time are candidates. A function the helper could
    not find by its dotted name, such as the implementation numba compiles for an `overload`,
    is not a candidate.)"""
    jobs = sorted((begin, seconds, name, sig) for depth, name, sig, begin, seconds in compiled
                  if depth <= 1 and HELPER_START + seconds <= begin and "<" not in name)
    tops = [(begin, begin + seconds) for depth, _, _, begin, seconds in compiled
            if depth == 0 and HELPER_START + seconds <= begin]
    jobs = [job for job in jobs  # (not those a candidate compiles: it takes their time)
            if not any(b0 < job[0] < b1 for b0, b1 in tops)]
    if len(jobs) > 16:  # (2^16 sets at most: the longest compiles, which can save the most)
        jobs = sorted(sorted(jobs, key=lambda job: -job[1])[:16])
    best, most = [], 0.0
    for mask in range(1, 1 << len(jobs)):
        chosen = [job for k, job in enumerate(jobs) if mask >> k & 1]
        clock, saved = HELPER_START, 0.0
        for begin, seconds, _, _ in chosen:
            clock += seconds
            if clock > begin - saved:
                break
            saved += seconds
        else:
            if saved > most:
                best, most = chosen, saved
    return [(name, sig) for _, _, name, sig in best]


def write(path: str = MANIFEST, scenarios: dict = SCENARIOS) -> dict:
    """The manifest from a recorded first run of each kind's scenario (record, then plan):
    {kind: entries}."""
    import numba
    records = {kind: record(scenario) for kind, scenario in scenarios.items()}
    plans = {kind: plan(compiled) for kind, compiled in records.items()}
    with open(path, "w", encoding="utf-8") as f:
        json.dump({"numba": numba.__version__, "plans": plans}, f, indent=0)
        f.write("\n")
    return plans, records


def twice(compiled: list) -> dict:
    """{dotted name: seconds} of the functions a recorded first run compiled more than once
    (for other argument types: a literal integer argument is one, see
    physics/collision.py's _ground_entries), with the time of all their compiles."""
    count: dict = {}
    for _, name, _, _, seconds in compiled:
        n, t = count.get(name, (0, 0.0))
        count[name] = (n + 1, t + seconds)
    return {name: t for name, (n, t) in count.items() if n > 1}


def main(argv: list) -> None:
    """`--write`: write the manifest; else the helper's work: compile the plan of the kind
    argv[0] ("air" without one)."""
    if argv[:1] == ["--write"]:
        t0 = time.perf_counter()
        plans, records = write()
        print(f"{MANIFEST} ({time.perf_counter() - t0:.0f} s):")
        for kind, entries in plans.items():
            compiled = records[kind]
            total = sum(seconds for depth, _, _, _, seconds in compiled if depth == 0)
            print(f"  {kind}: {len(entries)} functions (the first run without the helper "
                  f"compiled for {total:.1f} s)")
            for name, _ in entries:
                print(f"    {name}")
            for name, seconds in twice(compiled).items():
                print(f"    compiled more than once: {name} ({seconds:.2f} s)")
        return
    try:
        compile_all(_entries(kind=argv[0] if argv else "air") or [])
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main(sys.argv[1:])
