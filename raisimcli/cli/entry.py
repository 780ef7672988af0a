"""The `raisimcli` console entry point.

Signal handlers come first, before anything heavy is imported, so that SIGINT, SIGTERM or SIGHUP at
any moment (start-up included) ends the command with exit code 130 and one line, never a
traceback. During a run the run loop takes the signals over and stops between two steps (see
raisimcli.scenario.runner). A file-size limit (`ulimit -f`) makes writes fail instead of killing
the process, so that the log writer can report it and clean up.

A command whose process ran no code of the user's (`run` without a controller, `inspect`,
`compare`) sets QUICK_EXIT. The process then freezes the objects it holds (`gc.freeze`) before it
exits, so that Python's last garbage collections skip them: numba's and Pinocchio's objects (about
130,000 that the collector tracks) made those collections a sixth of a short `raisimcli run`.
Everything else of the exit still happens (atexit handlers, the modules' teardown);
what is skipped is only the freeing of objects held in reference cycles, which the operating
system takes back with the process. The command's own files are closed before: the log is written
and renamed before the run returns. A user's controller may hold a file that only a collection
would close (and flush), so a run that loaded one exits as Python does by default.

Right after the signal handlers, on Linux x86-64 with glibc, a command that computes starts itself
again (the same interpreter, arguments and environment) with GLIBC_TUNABLES masking FMA, once, when
its environment does not mask it already: glibc then runs the plain build of its math functions, the
one every x86-64 processor runs, so that a log is the same bit for bit on a machine with FMA and on
one without (raisimcli.libm). That costs one more start of the interpreter, which only
`run`, `sweep` and `inspect` pay (not their `--help`). Only the program itself does it (the console
script or `python -m raisimcli`), never a Python program that calls main().

Before that, main() sets NUMBA_CPU_NAME=generic unless the environment sets it or numba is
imported already: numba then compiles the loops for a generic x86-64 processor, the machine code
the package ships (raisimcli.precompiled), so that a first run loads them instead of compiling
them. The loops give the same bits for it as for the machine's own processor
(tests/test_determinism.py), and ran as fast on our machine (`benchmarks/versus.py`).
"""

import os
import signal
import sys

INTERRUPT_SIGNALS = ("SIGINT", "SIGTERM", "SIGHUP")
# the commands whose output the math functions reach (a simulation, or inspect's masses and
# inertias turned by their origins' rpy); compare, export and plot read logs, and --help and
# --version print text: they start once
_COMPUTING = ("run", "sweep", "inspect")
EXIT_INTERRUPTED = 130
QUICK_EXIT = False  # set by a command that ran no user code (the module's docstring)


def _interrupt(signum, frame):
    from raisimcli.errors import Interrupted, note_interrupt
    name = signal.Signals(signum).name
    note_interrupt(name)  # should the exception land in a destructor, which Python ignores
    raise Interrupted(name)


def _unraisable(info) -> None:
    """sys.unraisablehook: an Interrupted that Python could not raise (it landed in a destructor)
    is not printed as "Exception ignored ... Traceback": it was noted, and the run loop takes it
    (errors.take_interrupt). Anything else goes to Python's own hook."""
    from raisimcli.errors import Interrupted
    if not isinstance(info.exc_value, Interrupted):
        sys.__unraisablehook__(info)


def install_signal_handlers() -> None:
    sys.unraisablehook = _unraisable
    for name in INTERRUPT_SIGNALS:
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), _interrupt)
    if hasattr(signal, "SIGXFSZ"):
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)


def main() -> None:
    global QUICK_EXIT
    if "numba" not in sys.modules:  # (numba reads it when imported; its processor is fixed then)
        os.environ.setdefault("NUMBA_CPU_NAME", "generic")
    install_signal_handlers()  # (before the new start too: exec gives the new image the defaults)
    try:
        _with_baseline_libm()
    except KeyboardInterrupt as e:
        _interrupted(e)
    QUICK_EXIT = False
    try:
        _command()
    finally:  # (the command has ended, whichever way: the process exits next)
        if QUICK_EXIT:
            import gc
            gc.freeze()


def _with_baseline_libm() -> None:
    """Start the command again under glibc's plain math functions (the module's docstring)
    when this process is the `raisimcli` program and its environment does not ask for them;
    if the new start fails, the command runs here (its log's `libm` attribute says which
    build it used)."""
    main_spec = getattr(sys.modules.get("__main__"), "__spec__", None)
    program = (main_spec is not None and main_spec.name == "raisimcli.__main__") or \
        os.path.basename(sys.argv[0]) == "raisimcli"
    if not program:
        return
    args = sys.argv[1:]
    command = next((a for a in args if not a.startswith("-")), None)
    if command not in _COMPUTING or any(a in ("-h", "--help") for a in args):
        return
    from raisimcli.libm import restart_with_baseline
    restart_with_baseline()


def _command() -> None:
    install_signal_handlers()
    try:  # (a signal in any import below, too, is the one line of _interrupted)
        import click

        from raisimcli.cli.main import cli
        code = cli.main(prog_name="raisimcli", standalone_mode=False)
    except KeyboardInterrupt as e:
        _interrupted(e)
    except Exception as e:  # click's own exceptions; everything else is a bug and propagates
        import click
        if isinstance(e, click.exceptions.Abort):
            _interrupted(e.__context__ or e)
        if isinstance(e, click.ClickException):
            e.show()
            sys.exit(e.exit_code)
        raise
    sys.exit(code if isinstance(code, int) else 0)


def _interrupted(e: BaseException) -> None:
    """A signal before the run loop took the signals over: nothing was written. The process
    ends at once (os._exit): an interrupt inside an import can leave a library half initialised,
    and its clean-up at interpreter exit must not be able to hang the command."""
    import os
    name = getattr(e, "signal_name", "SIGINT")
    print(f"interrupted by {name}; nothing was written", file=sys.stderr)
    for stream in (sys.stderr, sys.stdout):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(EXIT_INTERRUPTED)
