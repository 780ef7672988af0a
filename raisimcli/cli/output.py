"""What the commands write outside the library: machine output on stdout, report files, and the
checks of output paths made before any work starts."""

from __future__ import annotations

import os
import sys

import click

from raisimcli.errors import RaisimcliError, UsageError


class OutputError(RaisimcliError):
    """Standard output cannot be written (a closed pipe, a full disk): exit code 1."""

    exit_code = 1


def emit(text: str) -> None:
    """Print `text` on stdout and flush it; a failed write is one OutputError, not a traceback
    (and stdout is pointed at /dev/null so that the interpreter's own flush at exit stays quiet)."""
    try:
        click.echo(text)
        sys.stdout.flush()
    except OSError as e:
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError):
            pass
        raise OutputError(f"cannot write to standard output: {e.strerror or e}") from None


def check_writable(path: str, option: str) -> None:
    """An output file `path` can be created: not empty, not a folder, in a folder that exists
    and may be written. Raises UsageError (exit 2) naming the option."""
    if not path or not path.strip():
        raise UsageError(f"{option}: the path is empty")
    if os.path.isdir(path) or path.endswith(os.sep):
        raise UsageError(f"{option} {path}: is a folder; expected a file name")
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise UsageError(f"{option} {path}: the folder {folder} does not exist")
    if not os.access(folder, os.W_OK):
        raise UsageError(f"{option} {path}: the folder {folder} is not writable")
