"""Machine code of the package's compiled loops, shipped with it: a first run that loads them
instead of compiling them.

numba compiles a loop the first time it runs and keeps the machine code in its on-disk cache
(raisimcli/jit.py). In a fresh environment that first run of `raisimcli run` spent most of its
time compiling. `precompiled.tar.xz` beside this file holds the cache entries of every loop that the
shipped scenarios run (each at its full length, the pendulum under every integration scheme),
that a floating body on the ground runs with each set of boxes, cylinders and meshes, without
and with a hand of mimic fingers (the loops compiled for a robot on the ground depend on which of
these its collision shapes are, and on whether it has mimic joints), and that `raisimcli inspect`
of the shipped robots and of an arm whose mass matrix is singular runs, compiled for a generic
x86-64 processor
(numba's `NUMBA_CPU_NAME=generic`: SSE2, the instructions every x86-64 processor has). The
`raisimcli` command compiles for that processor too (raisimcli.cli.entry, when numba is not
imported yet), so its loops are the same machine code on every x86-64 machine, and the shipped
entries are the ones it would compile. The first time the package's loops are loaded
(`install`, from raisimcli.jit), the shipped entries are added to numba's cache, where numba
would keep them: `__pycache__` beside the sources, `NUMBA_CACHE_DIR`, or numba's user-wide
directory. Entries already there for other processors or argument types stay. A run that needs
a loop for argument types the shipped ones lack (a robot with parts no shipped robot has, say)
compiles that loop as before, once. A program that uses the library compiles for its own
processor (numba's default, which the package leaves to such programs); there the package's
loops load the generic entry when numba's cache has none for that processor
(`fall_back_to_generic`), so that the program's first use compiles nothing either.

The entries are used only when they were made from these sources (raisimcli.jit's digest of the
files of compiled loops), by this numba, for this Python and this kind of processor and system
(LLVM's target triple), with the same numba settings (the optimisation level, the index check,
no processor asked for by name but the generic one, and no other NUMBA_ variable than
NUMBA_CPU_NAME, NUMBA_CACHE_DIR and NUMBA_DEBUG_CACHE set); anything else compiles as before,
with the same results. `RAISIMCLI_PRECOMPILED=0` turns them
off. The machine code changes no result: it is what numba compiles from the same sources, at the
same level, for the same processor, and the loops give the same bits for a generic processor as
for this machine's own (tests/test_determinism.py).

A change to any file of compiled loops makes the shipped entries stale (a test says so); write
them again, in a checkout, with

    python -m raisimcli.precompiled --write

which runs the scenarios and the inspections in a fresh cache (about 7 min on a 2-core machine)
and keeps its entries.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import pickle
import sys

ARCHIVE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "precompiled.tar.xz")
_PACKAGE = os.path.dirname(ARCHIVE)
_CHECKOUT = os.path.dirname(_PACKAGE)
_HEADER = "header.json"
_FORMAT = 1
# NUMBA_ variables that change nothing of the machine code or of where it is kept
_HARMLESS = {"NUMBA_CPU_NAME", "NUMBA_CACHE_DIR", "NUMBA_DEBUG_CACHE"}
# numba's settings that shape the machine code without being part of its cache's keys
# (besides the processor's, CPU_NAME and CPU_FEATURES, which only make the code faster or slower
# on one processor: the same operations give the same bits, tests/test_determinism.py)
_SETTINGS = ("BOUNDSCHECK", "DEBUGINFO_DEFAULT", "LOOP_VECTORIZE", "SLP_VECTORIZE", "USING_SVML",
             "EXTEND_VARIABLE_LIFETIMES", "DISABLE_JIT")
_GENERIC = "generic"  # numba's name of the processor the entries are made for
_STAMP = "raisimcli-precompiled-"  # (_stamp)


def _conditions(digest: bytes, opt) -> dict:
    """What the shipped entries must have been made under to be used in this process."""
    import llvmlite.binding as ll
    import numba
    from numba.core import config
    return {"format": _FORMAT, "numba": numba.__version__,
            "python": f"py{sys.version_info[0]}{sys.version_info[1]}"
                      f"{getattr(sys, 'abiflags', '')}",
            "triple": ll.get_process_triple(), "digest": digest.hex(),
            "settings": {name: repr(getattr(config, name, None)) for name in _SETTINGS},
            "opt": repr(opt)}


def _usable_here() -> bool:
    """Whether this process may run the shipped entries: it compiles the package's loops for a
    generic processor (the command) or for its own (numba's default), with numba's settings from
    no file and from no other variable."""
    from numba.core import config
    if os.environ.get("RAISIMCLI_PRECOMPILED", "").strip() == "0" or \
            getattr(sys, "frozen", False) or config.DISABLE_JIT:
        return False
    if (config.CPU_NAME, config.CPU_FEATURES) not in ((_GENERIC, ""), (None, None)):
        return False  # (a processor asked for by name: its own code)
    if any(k.startswith("NUMBA_") and k not in _HARMLESS for k in os.environ):
        return False
    return not os.path.exists(getattr(config, "_config_fname", ".numba_config.yaml"))


USABLE = False  # set by install: the shipped entries apply to this process


def _generic_key(key: tuple) -> tuple:
    """numba's cache key `key` (signature, processor, bytecode) for the generic processor."""
    triple, _, _ = key[1]
    return (key[0], (triple, _GENERIC, ""), key[2])


def fall_back_to_generic(cache) -> None:
    """Make numba's cache of one of the package's loops (`cache`, a dispatcher's FunctionCache)
    load the entry for the generic processor when it has none for this process's processor,
    before numba compiles one: a program that uses the library (which compiles for its own
    processor, numba's default) then runs the shipped code too. The entry for its own processor
    is still preferred, and what it compiles is kept under its own key, as before."""
    load = getattr(cache, "_load_overload", None)
    needed = ("_enabled", "_index_key", "_cache_file", "_impl")
    if load is None or not all(hasattr(cache, name) for name in needed):
        return  # (a numba whose cache is not the one this was written for: numba's own)

    def load_overload(sig, target_context):
        data = load(sig, target_context)
        if data is None and cache._enabled:
            try:
                key = cache._index_key(sig, target_context.codegen())
                if key[1][1] != _GENERIC:
                    found = cache._cache_file.load(_generic_key(key))
                    if found is not None:
                        data = cache._impl.rebuild(target_context, found)
            except (AttributeError, IndexError, TypeError, ValueError):  # (numba compiles)
                data = None
        return data
    cache._load_overload = load_overload


def _member(rel: str, name: str) -> str:
    """The archive's name of the cache file `name` of the package's folder `rel`."""
    return f"{rel or '.'}/{name}"


def _probe():
    """(a function whose first line a cache locator reads; nothing else)"""


def _folder(locators: list, rel: str) -> str | None:
    """numba's cache folder for the functions of the package's folder `rel` (as the first of
    `locators`, raisimcli.jit's, that takes it would give it), or None."""
    source = os.path.join(_PACKAGE, rel, "__init__.py")
    for cls in locators:
        locator = cls.from_function(_probe, source)
        if locator is not None:
            return locator.get_cache_path()
    return None


def _stamp(digest: bytes) -> str:
    """The name of the file that says a folder has the entries for these sources (`digest`),
    this numba and this Python."""
    import numba
    made = digest + f"{numba.__version__} {sys.version_info[:2]}".encode()
    return _STAMP + hashlib.sha256(made).hexdigest()[:16]


FIRST_COMPILE = ("raisimcli: compiling the simulation's loops for this Python and numba, once "
                 "(up to about half a minute; later runs load them from numba's cache)")


def _first_compile_listener():
    """A numba event listener that says FIRST_COMPILE on stderr, once a process, when numba
    starts compiling the first of the package's loops (not when it loads one from its cache):
    where the shipped machine code does not apply (another Python or numba, a loop for argument
    types no shipped one has), a first run would otherwise sit silent, its progress bar at 0,
    while numba compiles."""
    from numba.core import event

    class FirstCompile(event.Listener):
        said = False

        def on_start(self, ev):
            if self.said:
                return
            fn = getattr((ev.data or {}).get("dispatcher"), "py_func", None)
            if not getattr(fn, "__module__", "").startswith("raisimcli."):
                return
            self.said = True
            try:
                print(FIRST_COMPILE, file=sys.stderr, flush=True)
            except (OSError, ValueError, AttributeError):  # (no stderr, or a closed one)
                pass

        def on_end(self, ev):
            pass
    return FirstCompile()


_LISTENING: list = []  # the FIRST_COMPILE listener, once registered


def install(locators: list, digest: bytes, folders: list, opt, archive: str = ARCHIVE) -> int:
    """Add the shipped entries to numba's cache when they apply (the module's docstring) and are
    not there yet; the number of entries added. `locators`: raisimcli.jit's cache locators;
    `digest`: its digest of the sources; `folders`: the package's folders that hold compiled
    loops, relative; `opt`: the loops' optimisation level. Registers, once, the listener that
    says on stderr when numba compiles one of the loops after all."""
    if not _LISTENING:
        from numba.core import event
        _LISTENING.append(_first_compile_listener())
        event.register("numba:compile", _LISTENING[0])
    global USABLE
    USABLE = _usable_here()
    if not USABLE:
        return 0
    targets = {rel: _folder(locators, rel) for rel in folders}
    stamp = _stamp(digest)
    if all(t is None or os.path.exists(os.path.join(t, stamp)) for t in targets.values()):
        return 0
    import tarfile
    try:
        with tarfile.open(archive, "r:xz") as tar:
            first = tar.next()
            if first is None or first.name != _HEADER:
                return 0
            header = json.loads(tar.extractfile(first).read())
            if header.get("conditions") != _conditions(digest, opt):
                return 0
            files = {m.name: tar.extractfile(m).read() for m in tar if m.isfile()}
        added = 0
        for rel, target in targets.items():
            if target is None or os.path.exists(os.path.join(target, stamp)):
                continue
            for base in header["functions"].get(rel, []):
                added += _merge(files, rel, base, target, digest)
            with open(os.path.join(target, stamp), "wb"):
                pass
        return added
    except (OSError, ValueError, KeyError, EOFError, RuntimeError, tarfile.TarError,
            pickle.UnpicklingError):  # (a damaged archive, a folder we may not write: compile)
        return 0


def _merge(files: dict, rel: str, base: str, target: str, digest: bytes) -> int:
    """Add the archive's entries (`files`: its members' bytes by name) of one function (its file
    name `base`, in folder `rel`) to its index in `target`, under data files of free names; the
    number added."""
    from numba.core import caching
    f = io.BytesIO(files[_member(rel, base + ".nbi")])
    pickle.load(f)  # (numba's version: the header's)
    _, shipped = pickle.loads(f.read())
    index = caching.IndexDataCacheFile(target, base, digest)
    have = index._load_index()  # ({} when missing, stale or of another numba)
    taken, number, added = set(have.values()), 1, 0
    for key, name in shipped.items():
        if key in have:
            continue
        while index._data_name(number) in taken:
            number += 1
        ours = index._data_name(number)
        with index._open_for_write(index._data_path(ours)) as out:
            out.write(files[_member(rel, name)])
        have[key] = ours
        taken.add(ours)
        added += 1
    if added:
        index._save_index(have)
    return added


# --- writing the archive (in a checkout) ---------------------------------------------------------

# the collision shapes whose ground query is compiled only for robots that have them (one
# version of the quick call for each set of them: docs/physics.md), as URDF geometry
_PATCH_SHAPES = {"box": '<box size="0.2 0.1 0.05"/>',
                 "cylinder": '<cylinder radius="0.04" length="0.1"/>',
                 "mesh": '<mesh filename="base.stl" scale="0.2 0.2 0.2"/>'}
_BODY = """<?xml version="1.0"?>
<robot name="shapes">
  <link name="base">
    <inertial><mass value="2.0"/><inertia ixx="0.02" iyy="0.02" izz="0.02" ixy="0" ixz="0"
      iyz="0"/></inertial>
    <collision><geometry><sphere radius="0.05"/></geometry></collision>
{}  </link>
{}</robot>
"""
# two fingers, the second mimicking the first (a humanoid's hand: Talos's, say)
_FINGERS = "".join(f"""  <joint name="{side}_finger" type="prismatic">
    <parent link="base"/><child link="{side}_finger"/><axis xyz="0 {sign}1 0"/>
    <limit lower="0" upper="0.04" effort="20" velocity="0.2"/>{mimic}
  </joint>
  <link name="{side}_finger">
    <inertial><mass value="0.1"/><inertia ixx="1e-4" iyy="1e-4" izz="1e-4" ixy="0" ixz="0"
      iyz="0"/></inertial>
  </link>
""" for side, sign, mimic in (("left", "", ""),
                              ("right", "-", '\n    <mimic joint="left_finger"/>')))
_ON_THE_GROUND = """schema_version = 1

[world]
dt = 0.001
duration = 0.02

[world.ground]
height = 0.0

[[robot]]
name = "shapes"
urdf = "{}"

[robot.initial]
q = {{ "root.z" = 1.0 }}
"""

_MASS = """
    <inertial><mass value="1.0"/><inertia ixx="0.01" iyy="0.01" izz="0.01" ixy="0" ixz="0"
      iyz="0"/></inertial>
  """
# an arm whose two joints line up at its nominal configuration with no mass between them (iCub's
# neck): its mass matrix is singular there, and the model's check finds which joints by the
# compiled Jacobi rotations (raisimcli.model.pinocchio_model.singular_pose_warnings)
_ALIGNED = """<?xml version="1.0"?>
<robot name="aligned">
  <link name="base"/>
{}</robot>
""".format("".join(f"""  <joint name="j{k}" type="revolute">
    <parent link="{parent}"/><child link="l{k}"/><axis xyz="{axis}"/>
    <limit lower="-1" upper="1" effort="10" velocity="1"/>
  </joint>
  <link name="l{k}">{inertial}</link>
""" for k, (parent, axis, inertial) in enumerate((
    ("base", "0 0 1", _MASS), ("l0", "1 0 0", ""), ("l1", "1 0 0", _MASS),
    ("l2", "0 1 0", _MASS)))))


def _commands(tmp: str) -> list:
    """The commands whose loops are shipped: every shipped scenario at its full length, the
    pendulum under each integration scheme, a floating body on the ground with each set of the
    shapes of _PATCH_SHAPES, without and with a hand of mimic fingers (the quick call's versions
    for robots on the ground: with boxes, cylinders and convex meshes, as real robots' feet and
    shins are, and with a gripper's mimicking finger, as Panda's; the files they need are
    written in `tmp`), and `inspect` of every shipped robot and of _ALIGNED."""
    import itertools
    scenarios = os.path.join(_CHECKOUT, "scenarios")
    robots = os.path.join(_CHECKOUT, "robots")
    commands = [["run", os.path.join(scenarios, name)]
                for name in sorted(os.listdir(scenarios)) if name.endswith(".toml")]
    for scheme in ("SEMI_IMPLICIT", "TRAPEZOID", "EULER", "RUNGE_KUTTA_4"):
        commands.append(["run", os.path.join(scenarios, "pendulum.toml"), "--duration", "0.1",
                         "--set", f'world.integration_scheme="{scheme}"'])
    import shutil
    shutil.copy(os.path.join(robots, "acme_description", "meshes", "base.stl"), tmp)
    sets = [(kinds, hand) for hand in (False, True) for n in range(len(_PATCH_SHAPES) + 1)
            for kinds in itertools.combinations(_PATCH_SHAPES, n)]
    for kinds, hand in sets:
        name = "_".join(("shapes",) + kinds + (("hand",) if hand else ()))
        shapes = "".join(f"    <collision><origin xyz=\"0 0 {(k + 1) / 10}\"/><geometry>"
                         f"{_PATCH_SHAPES[kind]}</geometry></collision>\n"
                         for k, kind in enumerate(kinds))
        with open(os.path.join(tmp, name + ".urdf"), "w", encoding="utf-8") as f:
            f.write(_BODY.format(shapes, _FINGERS if hand else ""))
        with open(os.path.join(tmp, name + ".toml"), "w", encoding="utf-8") as f:
            f.write(_ON_THE_GROUND.format(name + ".urdf"))
        commands.append(["run", os.path.join(tmp, name + ".toml")])
    urdfs = [os.path.join(robots, n) for n in sorted(os.listdir(robots)) if n.endswith(".urdf")]
    urdfs.append(os.path.join(robots, "acme_description", "urdf", "acme_s400.urdf"))
    urdfs.append(os.path.join(tmp, "aligned.urdf"))
    with open(urdfs[-1], "w", encoding="utf-8") as f:
        f.write(_ALIGNED)
    commands += [["inspect", path] for path in urdfs]
    return commands


# (run as the commands are: what the entries were made under, and numba's key for the processor)
_CONDITIONS = """
import json
from numba.core.registry import cpu_target
import raisimcli.jit as jit
from raisimcli.precompiled import _conditions
print(json.dumps([_conditions(jit._PackageStamp.digest, jit._OPT),
                  list(cpu_target.target_context.codegen().magic_tuple())]))
"""


def write(archive: str = ARCHIVE) -> dict:
    """Run _commands() as the `raisimcli` command in a fresh cache for a generic processor, and
    keep the package's entries in `archive`; its header."""
    import shutil
    import subprocess
    import tempfile
    import tarfile

    from numba.core import caching

    import raisimcli.jit as jit
    if any(k.startswith("NUMBA_") for k in os.environ):
        raise SystemExit("unset the NUMBA_ variables first: they would shape the machine code")
    with tempfile.TemporaryDirectory() as tmp:
        cache = os.path.join(tmp, "cache")
        env = dict(os.environ, NUMBA_CACHE_DIR=cache, NUMBA_CPU_NAME="generic",
                   RAISIMCLI_PRECOMPILED="0")
        for command in _commands(tmp):
            if command[0] == "run":
                command = command + ["-q", "-o", os.path.join(tmp, "log.h5")]
            subprocess.run([sys.executable, "-m", "raisimcli", *command], env=env, check=True,
                           cwd=_CHECKOUT, stdout=subprocess.DEVNULL)
        conditions, magic = json.loads(subprocess.run(
            [sys.executable, "-c", _CONDITIONS], env=env, check=True, cwd=_CHECKOUT,
            capture_output=True, text=True).stdout)
        digest = jit._digest()
        if digest.hex() != conditions["digest"] or digest != jit._PackageStamp.digest:
            raise SystemExit("the sources changed meanwhile: write again")
        magic = tuple(magic)
        functions, files = {}, []
        for rel in jit._FOLDERS:
            source = os.path.join(_PACKAGE, rel, "__init__.py")
            folder = os.path.join(cache, caching._CacheLocator.get_suitable_cache_subpath(source))
            if not os.path.isdir(folder):
                continue
            for name in sorted(os.listdir(folder)):
                if not name.endswith(".nbi"):
                    continue
                base = name[:-4]
                index = caching.IndexDataCacheFile(folder, base, digest)
                entries = {k: v for k, v in index._load_index().items() if k[1] == magic}
                if not entries:
                    continue
                functions.setdefault(rel, []).append(base)
                files.append((_member(rel, name), os.path.join(folder, name)))
                files += [(_member(rel, v), os.path.join(folder, v)) for v in entries.values()]
        header = {"conditions": conditions, "processor": list(magic), "functions": functions}
        partial = archive + ".partial"
        members = [(_HEADER, json.dumps(header, indent=1, sort_keys=True).encode())]
        for arcname, path in sorted(files):
            with open(path, "rb") as f:
                members.append((arcname, f.read()))
        with tarfile.open(partial, "w:xz", preset=9) as tar:  # (the header first)
            for arcname, data in members:
                info = tarfile.TarInfo(arcname)  # (no time, owner or mode of this machine)
                info.size, info.mode = len(data), 0o644
                tar.addfile(info, io.BytesIO(data))
        shutil.move(partial, archive)
    return header


def main(argv: list) -> None:
    import time
    if argv != ["--write"]:
        raise SystemExit("usage: python -m raisimcli.precompiled --write")
    t0 = time.perf_counter()
    header = write()
    count = sum(len(v) for v in header["functions"].values())
    print(f"{ARCHIVE}: {os.path.getsize(ARCHIVE) / 1e6:.1f} MB, {count} functions "
          f"({time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main(sys.argv[1:])
