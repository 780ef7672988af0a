"""Where the files that a scenario or a URDF names are read.

A path in an input file is absolute or relative to the file that names it. A batch worker
(:mod:`raisimcli.batch`) runs a case in a private folder that mirrors the files the client read:
the file the client read at `/abs/p` is at `ROOT/abs/p`, so relative paths work unchanged and
absolute ones are read under the mirror's root. :func:`mirrored` sets that root, and the
package search path (`AMENT_PREFIX_PATH`, `ROS_PACKAGE_PATH`) the client had, for the current
thread or task only (a context variable), so that workers with several threads stay apart.
"""

from __future__ import annotations

import contextlib
import contextvars
import os
import stat

PACKAGE_PATH_VARIABLES = ("AMENT_PREFIX_PATH", "ROS_PACKAGE_PATH")

_root: contextvars.ContextVar[str | None] = contextvars.ContextVar("raisimcli_root", default=None)
_env: contextvars.ContextVar[dict | None] = contextvars.ContextVar("raisimcli_env", default=None)


def regular_file(path: str, what: str, error) -> os.stat_result:
    """os.stat of the input file at `path` (a `what` file: "scenario", "log", ...) when it is a
    regular file; else `error(message)` (the exception to raise, ScenarioError, LogError, ...)
    saying what it is: not found, unreadable, a directory, a device, pipe or socket."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise error(f"{path}: {what} file not found") from None
    except OSError as e:
        raise error(f"{path}: cannot read the {what} file ({e.strerror})") from None
    if stat.S_ISDIR(st.st_mode):
        raise error(f"{path}: expected a {what} file, got a directory")
    if not stat.S_ISREG(st.st_mode):
        raise error(f"{path}: expected a {what} file, got a device, pipe or socket")
    return st


def resolve(path: str, base: str) -> str:
    """The absolute path at which to read `path`, named in a file whose folder is `base`."""
    if not os.path.isabs(path):
        return os.path.join(base, path)
    root = _root.get()
    return path if root is None else root + os.path.normpath(path)


def original(path: str) -> str:
    """The path at which the client read the file now at `path` (itself outside a mirror)."""
    root = _root.get()
    if root is not None and path.startswith(root + os.sep):
        return path[len(root):]
    return path


def package_path(variable: str) -> list[str]:
    """The entries of `variable` (one of PACKAGE_PATH_VARIABLES): the environment's, or under a
    mirror the client's, read under the mirror's root."""
    env = _env.get()
    value = os.environ.get(variable, "") if env is None else env.get(variable, "")
    entries = [e for e in value.split(os.pathsep) if e]
    root = _root.get()
    return entries if root is None else [root + os.path.normpath(e) for e in entries
                                         if os.path.isabs(e)]


def package_environment() -> dict[str, str]:
    """This process's package search path, to carry to a worker."""
    return {v: os.environ.get(v, "") for v in PACKAGE_PATH_VARIABLES}


@contextlib.contextmanager
def mirrored(root: str, env: dict[str, str]):
    """Read absolute paths under `root` (an absolute folder) and use `env`'s package search
    path, inside the block."""
    t1, t2 = _root.set(os.path.normpath(root)), _env.set(dict(env))
    try:
        yield
    finally:
        _root.reset(t1)
        _env.reset(t2)
