"""Safe XML reading and typed attribute access that report the file, line and element.

External entities are never resolved and documents that declare entities are refused, so no local
file's content can reach the model or an error message, and an entity-expansion bomb is refused
before anything is expanded.
"""

from __future__ import annotations

import math
import os
import re
import stat

import numpy as np
from lxml import etree

from raisimcli.errors import ModelError
from raisimcli.linalg import matmul

_MAX_BYTES = 64 * 1024 * 1024


def describe(el: etree._Element) -> str:
    """`<joint name="knee">` style label of an element, for messages."""
    name = el.get("name")
    return f'<{el.tag} name="{name}">' if name is not None else f"<{el.tag}>"


def parse_xml_file(path: str, what: str = "URDF") -> etree._Element:
    """Parse an XML file safely and return its root element."""
    try:
        st = os.stat(path)
        if not stat.S_ISREG(st.st_mode) and not stat.S_ISDIR(st.st_mode):
            raise ModelError(f"expected a {what} file, got a device, pipe or socket", file=path)
        if st.st_size > _MAX_BYTES:
            raise ModelError(f"{what} file is {st.st_size} bytes, more than the {_MAX_BYTES} "
                             "allowed", file=path)
        with open(path, "rb") as f:
            data = f.read(_MAX_BYTES + 1)
        if len(data) > _MAX_BYTES:
            raise ModelError(f"{what} file is more than the {_MAX_BYTES} bytes allowed",
                             file=path)
    except FileNotFoundError:
        raise ModelError(f"{what} file not found", file=path) from None
    except IsADirectoryError:
        raise ModelError(f"expected a {what} file, got a directory", file=path) from None
    except OSError as e:
        raise ModelError(f"cannot read {what} file: {e.strerror}", file=path) from None
    return parse_xml_bytes(data, path, what)


_DECLARATION = re.compile(rb"<\?xml\s[^>]*?\?>")
_ENCODING = re.compile(rb"""encoding\s*=\s*["']([A-Za-z0-9._-]+)["']""")


def strip_declarations(data: bytes, path: str) -> bytes:
    """The document without its `<?xml ...?>` declarations, as UTF-8, with the same line numbers.

    libxml2 refuses a declaration that is not the very first thing in the file (after a comment or
    blank lines, as RaiSim's and PyBullet's examples have it), a second one, and versions other
    than 1.x ("0.0"); urdfdom and Pinocchio read such files. A declaration says nothing we use but
    the encoding, so the text is decoded with it here and each declaration is replaced by blanks
    (its newlines kept)."""
    encoding = "utf-8"
    first = _DECLARATION.search(data)
    if first is not None:
        m = _ENCODING.search(first.group(0))
        if m is not None:
            encoding = m.group(1).decode("ascii")
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
        encoding = "utf-8"
    data = _DECLARATION.sub(lambda m: b"\n" * m.group(0).count(b"\n"), data)
    try:
        text = data.decode(encoding)
    except LookupError:
        raise ModelError(f"unknown encoding {encoding!r} in the XML declaration", file=path,
                         line=1) from None
    except UnicodeDecodeError as e:
        line = data[:e.start].count(b"\n") + 1
        raise ModelError(f"the file is not valid {encoding} (byte {e.start})", file=path,
                         line=line) from None
    return text.encode("utf-8")


def parse_xml_bytes(data: bytes, path: str, what: str = "URDF") -> etree._Element:
    data = strip_declarations(data, path)
    parser = etree.XMLParser(resolve_entities=False, no_network=True, load_dtd=False,
                             huge_tree=False, remove_comments=True, remove_pis=True)
    try:
        root = etree.fromstring(data, parser=parser)
    except etree.XMLSyntaxError as e:
        line = e.lineno if e.lineno else None
        msg = str(e.msg) if getattr(e, "msg", None) else str(e)
        raise ModelError(f"malformed XML: {msg}", file=path, line=line) from None
    if root is None:
        raise ModelError(f"empty {what} document", file=path)
    dtd = root.getroottree().docinfo.internalDTD
    if dtd is not None and (list(dtd.iterentities()) or "ENTITY" in str(data[:4096])):
        raise ModelError("entity declarations are not allowed in a "
                         f"{what} (they are never resolved)", file=path, line=1)
    for el in root.iter():
        if isinstance(el, etree._Entity):
            raise ModelError(f"entity reference &{el.name}; is not allowed (entities are never "
                             "resolved)", file=path, line=el.sourceline)
    return root


class AttributeReader:
    """Typed attribute access; every failure is a :class:`ModelError` naming file, line, element."""

    def __init__(self, path: str):
        self.path = path

    def error(self, el: etree._Element, message: str) -> ModelError:
        return ModelError(message, file=self.path, line=el.sourceline, element=describe(el))

    def _number(self, el, attr: str, text: str) -> float:
        try:
            if "_" in text:  # float() reads "2_5" as 25; no XML reader does
                raise ValueError(text)
            value = float(text)
        except ValueError:
            raise self.error(el, f"attribute '{attr}' must be a number, got {text!r}") from None
        if not math.isfinite(value):
            raise self.error(el, f"attribute '{attr}' must be a finite number, got {text!r}")
        return value

    def float(self, el, attr: str, default: float | None = None, *, required: bool = False,
              min: float | None = None, positive: bool = False) -> float | None:
        text = el.get(attr)
        if text is None:
            if required:
                raise self.error(el, f"missing required attribute '{attr}'")
            return default
        parts = text.split()
        if len(parts) != 1:
            raise self.error(el, f"attribute '{attr}' must be one number, got {text!r}")
        value = self._number(el, attr, parts[0])
        if positive and value <= 0:
            raise self.error(el, f"attribute '{attr}' must be > 0, got {text!r}")
        if min is not None and value < min:
            raise self.error(el, f"attribute '{attr}' must be >= {min:g}, got {text!r}")
        return value

    def vector(self, el, attr: str, n: int | tuple[int, ...], default=None, *,
               required: bool = False) -> np.ndarray | None:
        text = el.get(attr)
        if text is None:
            if required:
                raise self.error(el, f"missing required attribute '{attr}'")
            return None if default is None else np.array(default, dtype=float)
        parts = text.split()
        sizes = (n,) if isinstance(n, int) else n
        if len(parts) not in sizes:
            expected = " or ".join(str(s) for s in sizes)
            raise self.error(el, f"attribute '{attr}' must hold {expected} numbers, "
                                 f"got {len(parts)} in {text!r}")
        return np.array([self._number(el, attr, p) for p in parts])

    def string(self, el, attr: str, *, required: bool = True) -> str | None:
        text = el.get(attr)
        if text is None or (required and not text.strip()):
            if required:
                raise self.error(el, f"missing required attribute '{attr}'")
            return None
        return text

    def origin(self, el) -> np.ndarray:
        """(4, 4) pose from an optional `<origin xyz rpy>` child (URDF: fixed-axis roll, pitch,
        yaw, R = Rz(yaw) Ry(pitch) Rx(roll))."""
        T = np.eye(4)
        o = el.find("origin")
        if o is None:
            return T
        T[:3, 3] = self.vector(o, "xyz", 3, default=(0, 0, 0))
        T[:3, :3] = rpy_to_matrix(self.vector(o, "rpy", 3, default=(0, 0, 0)))
        return T


def rpy_to_matrix(rpy) -> np.ndarray:
    r, p, y = rpy
    cr, sr, cp, sp, cy, sy = math.cos(r), math.sin(r), math.cos(p), math.sin(p), math.cos(y), math.sin(y)
    Rx = np.array([[1, 0, 0], [0, cr, -sr], [0, sr, cr]])
    Ry = np.array([[cp, 0, sp], [0, 1, 0], [-sp, 0, cp]])
    Rz = np.array([[cy, -sy, 0], [sy, cy, 0], [0, 0, 1]])
    return matmul(matmul(Rz, Ry), Rx)
