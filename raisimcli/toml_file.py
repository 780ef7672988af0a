"""Reading the TOML files we are given (scenarios, sweep files, tolerance files, `--set`
values): bounded in size, in depth and in what they may be, and every failure one error that
names the file."""

from __future__ import annotations

import tomllib
from typing import NamedTuple

from raisimcli.files import regular_file

MAX_BYTES = 16 * 1024 * 1024  # a scenario, sweep or tolerance file larger than this is refused
MAX_DEPTH = 100  # arrays and inline tables nested deeper than this are refused


def _depth(text: str) -> int:
    """The deepest nesting of [ ] and { } outside strings and comments (an upper bound of what
    tomllib recurses through: table headers count too)."""
    depth = deepest = 0
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c == "#":
            j = text.find("\n", i)
            i = n if j < 0 else j
            continue
        if c in "\"'":
            quote = text[i:i + 3] if text[i:i + 3] in ('"""', "'''") else c
            j = i + len(quote)
            while j < n and not text.startswith(quote, j):
                j += 2 if c == '"' and text[j] == "\\" else 1
            i = j + len(quote)
            continue
        if c in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif c in "]}":
            depth -= 1
        i += 1
    return deepest


def parse_toml(text: str, where: str, error) -> dict:
    """tomllib.loads with the depth bounded; `error(message)` makes the exception to raise."""
    if _depth(text) > MAX_DEPTH:
        raise error(f"{where}: arrays or tables nested more than {MAX_DEPTH} levels deep")
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise error(f"{where}: invalid TOML: {e}") from None
    except RecursionError:
        raise error(f"{where}: arrays or tables nested too deeply") from None


class TomlFile(NamedTuple):
    data: dict
    text: str
    raw: bytes


def read_toml(path: str, what: str, error) -> TomlFile:
    """(the table, the text, the bytes) of the TOML file at `path` (a `what` file: "scenario",
    "sweep", "tolerance"), read with a bound: a regular file of at most MAX_BYTES, UTF-8 (a byte
    order mark allowed), nested at most MAX_DEPTH deep. `error(message)` makes the exception to
    raise (ScenarioError, ...)."""
    st = regular_file(path, what, error)
    if st.st_size > MAX_BYTES:
        raise error(f"{path}: the {what} file is {st.st_size} bytes, more than the "
                    f"{MAX_BYTES} allowed")
    try:
        with open(path, "rb") as f:
            raw = f.read(MAX_BYTES + 1)
    except OSError as e:
        raise error(f"{path}: cannot read the {what} file ({e.strerror})") from None
    if len(raw) > MAX_BYTES:
        raise error(f"{path}: the {what} file is more than the {MAX_BYTES} bytes allowed")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = raw[:e.start].count(b"\n") + 1
        raise error(f"{path}:{line}: the file is not valid UTF-8 (byte {e.start}: "
                    f"{raw[e.start:e.start + 1]!r})") from None
    return TomlFile(parse_toml(text, path, error), text, raw)
