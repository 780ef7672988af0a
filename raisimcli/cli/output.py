"""What the commands write outside the library: machine output on stdout (files go through
raisimcli.writing)."""

from __future__ import annotations

import os
import sys

import click

from raisimcli.errors import RaisimcliError


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
