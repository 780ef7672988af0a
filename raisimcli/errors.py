"""The one error hierarchy of raisimcli.

Library code raises these; only the CLI maps them to exit codes (2 for bad input). Every message
names the file, the element or key, and what was expected versus what was found.
"""

from __future__ import annotations


class RaisimcliError(Exception):
    """Base class of every error raisimcli raises on purpose."""

    exit_code = 2


class ModelError(RaisimcliError):
    """An invalid URDF (or actuator file): names the file, line, element and what was expected."""

    def __init__(self, message: str, *, file: str | None = None, line: int | None = None,
                 element: str | None = None):
        self.file = file
        self.line = line
        self.element = element
        self.detail = message
        where = ""
        if file is not None:
            where = f"{file}:{line}: " if line is not None else f"{file}: "
        elem = f"{element}: " if element else ""
        super().__init__(f"{where}{elem}{message}")


class ModelErrors(ModelError):
    """Several independent errors of one file, reported at once: the first one's file, line and
    element, and every error on a line of its own."""

    def __init__(self, errors: list[ModelError]):
        first = errors[0]
        super().__init__(first.detail, file=first.file, line=first.line, element=first.element)
        self.errors = list(errors)
        self.args = ("\n".join(str(e) for e in errors),)

    def __str__(self) -> str:
        return self.args[0]


MAX_ERRORS = 20  # independent errors reported at once from one file


def did_you_mean(word: str, candidates) -> str:
    """'; did you mean 'x'?' for the closest candidate, or ''."""
    import difflib
    close = difflib.get_close_matches(str(word), [str(c) for c in candidates], n=1)
    return f"; did you mean {close[0]!r}?" if close else ""


class ScenarioError(RaisimcliError):
    """An invalid scenario file: names the file, the key path and expected vs. got."""


class LogError(RaisimcliError):
    """A log that cannot be read or written."""


class LogWriteError(LogError):
    """Writing the log failed during a run (a full disk, a file-size limit): the run stops, its
    temporary file is removed and any earlier log at the path is kept. Exit code 1: the input was
    fine, the run failed."""

    exit_code = 1


class Interrupted(KeyboardInterrupt):
    """A run stopped by a signal (SIGINT, SIGTERM, SIGHUP); `signal_name` says which."""

    def __init__(self, signal_name: str):
        super().__init__(signal_name)
        self.signal_name = signal_name


# The signals that the command line's start-up handler (raisimcli.cli.entry) turned into
# Interrupted. Python ignores an exception raised in a destructor (it prints "Exception ignored"
# and goes on), and a signal can land in one (numba's cache loading disposes of LLVM objects in
# __del__): the run loop then takes the signal from here instead (take_interrupt).
_INTERRUPTS: list[str] = []


def note_interrupt(signal_name: str) -> None:
    _INTERRUPTS.append(signal_name)


def take_interrupt() -> str | None:
    """The first signal noted and not yet taken (None if none); the notes are cleared."""
    name = _INTERRUPTS[0] if _INTERRUPTS else None
    _INTERRUPTS.clear()
    return name


class UsageError(RaisimcliError):
    """A command-line argument that cannot be used (exit code 2), found before any work."""


class StateError(RaisimcliError):
    """A call on the Python API with arguments of the wrong size or meaning."""


class ControllerError(RaisimcliError):
    """An exception raised by a user's controller. The CLI prints the user's traceback (their
    frames only); the run's log is kept and marked."""

    exit_code = 1

    def __init__(self, message: str, *, exc: BaseException, file: str):
        super().__init__(message)
        self.exc = exc
        self.file = file

    def user_traceback(self) -> str:
        import traceback
        frames = [f for f in traceback.extract_tb(self.exc.__traceback__)
                  if f.filename == self.file]
        lines = traceback.format_list(frames) if frames else []
        lines += traceback.format_exception_only(type(self.exc), self.exc)
        return "Traceback (most recent call last, your controller's frames):\n" + "".join(lines)
