"""Every file a command writes besides the run's log (reports, figures, tables, indexes, an
updated golden log) goes through `output_file`: written under a temporary name in its own folder,
flushed to disk and renamed over the target at the end, so that a reader never sees half a file
and a failure (a full disk, a file-size limit, a signal) leaves the earlier file as it was and no
temporary one behind.

Before anything is written, `output_file` refuses a target that is one of the command's own
inputs, and an existing file that is not of the kind the command writes (`ours(path)` says
whether it is: a report, figure or table of ours, a log). A command never replaces a text file,
a scenario or a package.xml that happens to be at its output path.
"""

from __future__ import annotations

import os
import stat
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from raisimcli.errors import RaisimcliError, UsageError

# what our reports, figures and tables carry so that a later command knows them as ours: the
# HTML report's <meta name="generator">, a figure's Software / Creator metadata, the JUnit
# report's testsuites name, the export folder's manifest
MARK = "raisimcli"


class WriteError(RaisimcliError):
    """An output file could not be written (a full disk, a file-size limit, a read-only folder):
    exit code 1, the earlier file untouched."""

    exit_code = 1


def marked(path: str, head: int = 1 << 16) -> bool:
    """Whether the first `head` bytes of the file at `path` carry MARK (a report, a figure or a
    JUnit file of ours)."""
    try:
        with open(path, "rb") as f:
            return MARK.encode() in f.read(head)
    except OSError:
        return False


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.abspath(a) == os.path.abspath(b)


def check_output(path: str, option: str, kind: str, ours: Callable[[str], bool],
                 inputs: tuple = ()) -> None:
    """Refuse (UsageError, exit 2) an output path that is empty, a folder, in a folder that does
    not exist or cannot be written, one of `inputs`, or an existing file that `ours` does not
    recognise as a `kind` of ours."""
    if not path or not path.strip():
        raise UsageError(f"{option}: the path is empty")
    if os.path.isdir(path) or path.endswith(os.sep):
        raise UsageError(f"{option} {path}: is a folder; expected a file name")
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise UsageError(f"{option} {path}: the folder {folder} does not exist")
    if not os.access(folder, os.W_OK):
        raise UsageError(f"{option} {path}: the folder {folder} is not writable")
    check_replaceable(path, option, kind, ours, inputs)


def check_replaceable(path: str, option: str, kind: str, ours: Callable[[str], bool],
                      inputs: tuple = ()) -> None:
    """Refuse (UsageError, exit 2) `path` when it is one of `inputs`, or an existing file that
    `ours` does not recognise as a `kind` of ours (or not a regular file)."""
    for other in inputs:
        if other and os.path.exists(path) and _same_file(path, other):
            raise UsageError(f"{option} {path}: is one of this command's inputs; it is never "
                             "written over")
    if os.path.lexists(path):
        st = os.stat(path) if os.path.exists(path) else None
        if st is None or not stat.S_ISREG(st.st_mode) or not ours(path):
            raise UsageError(f"{option} {path}: a file that is not a {kind} of raisimcli is "
                             "there; it is not replaced (remove it, or choose another name)")


@contextmanager
def output_file(path: str, option: str, kind: str, ours: Callable[[str], bool],
                inputs: tuple = ()) -> Iterator[str]:
    """Check `path` (check_output), then yield a temporary path in its folder to write; on a
    clean exit the temporary file is flushed to disk and renamed to `path`. On any error it is
    removed and `path` is left as it was; an OSError becomes one WriteError naming `path`."""
    check_output(path, option, kind, ours, inputs)
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)[:100]}.", suffix=".tmp",
                               dir=folder)
    os.close(fd)
    try:
        yield tmp
        with open(tmp, "rb+") as f:
            os.fsync(f.fileno())
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except OSError as e:
        raise WriteError(f"{option} {path}: cannot write it ({e.strerror or e}); nothing was "
                         "written") from None
    finally:
        if os.path.lexists(tmp):
            try:
                os.remove(tmp)
            except OSError:
                pass


def write_bytes(path: str, data: bytes, option: str, kind: str, ours: Callable[[str], bool],
                inputs: tuple = ()) -> None:
    """`data` at `path` whole or not at all (output_file)."""
    with output_file(path, option, kind, ours, inputs) as tmp:
        with open(tmp, "wb") as f:
            f.write(data)
