"""`raisimcli` entry point. Exit codes (docs/cli.md): 0 success; 1 a difference or a divergence;
2 bad input or usage, with one message and no traceback."""

from __future__ import annotations

import functools
import sys

import click
from rich.console import Console

from raisimcli import __version__
from raisimcli.errors import RaisimcliError

# A command's result (inspect's report, run's summary, compare's table) goes to stdout, so that it
# can be piped and grepped; progress, warnings and errors go to stderr. Both are wide enough for
# the joint table when they are a file or a pipe.
stdout = Console(highlight=False, width=None if sys.stdout.isatty() else 200)
stderr = Console(stderr=True, highlight=False, width=None if sys.stderr.isatty() else 200)


def error_object(e: RaisimcliError) -> dict:
    """The JSON form of an error, printed on stdout under --json (docs/cli.md)."""
    detail = {"type": type(e).__name__, "message": str(e)}
    for key in ("file", "line", "element"):
        if getattr(e, key, None) is not None:
            detail[key] = getattr(e, key)
    return {"error": detail, "exit_code": e.exit_code}


def report_errors(fn=None, *, json_output: bool = False):
    """Map raisimcli's errors to one line on stderr and their exit code; no traceback. With
    `json_output`, stdout gets the error as a JSON object too, so that it is always JSON."""

    def decorate(fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            try:
                return fn(*args, **kwargs)
            except RaisimcliError as e:
                # plain click.echo: one unwrapped line, and no rich markup read into the message
                click.echo(f"{click.style('error:', fg='red', bold=True)} {e}", err=True)
                if json_output:
                    import json
                    from raisimcli.cli.output import emit
                    try:
                        emit(json.dumps(error_object(e), indent=2))
                    except RaisimcliError:
                        pass
                sys.exit(e.exit_code)

        return wrapper

    return decorate(fn) if fn is not None else decorate


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, "--version", prog_name="raisimcli")
def cli():
    """raisimcli: simulate URDF robots headless with RaiSim's step semantics, log every joint
    torque by source, and check logs against golden ones in CI."""


from raisimcli.cli import compare as _compare  # noqa: E402
from raisimcli.cli import export as _export  # noqa: E402
from raisimcli.cli import plot as _plot  # noqa: E402
from raisimcli.cli import replay as _replay  # noqa: E402
from raisimcli.cli import inspect as _inspect  # noqa: E402
from raisimcli.cli import run as _run  # noqa: E402
from raisimcli.cli import batch as _batch  # noqa: E402

cli.add_command(_run.run_command)
cli.add_command(_batch.sweep_command)
cli.add_command(_inspect.inspect_command)
cli.add_command(_compare.compare_command)
cli.add_command(_export.export_command)
cli.add_command(_plot.plot_command)
cli.add_command(_replay.replay_command)
cli.add_command(_replay.view_command)


def main() -> None:
    """The console entry point (raisimcli.cli.entry installs the signal handlers first)."""
    from raisimcli.cli.entry import main as entry_main
    entry_main()
