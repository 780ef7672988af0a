"""The decorator of the package's compiled loops: numba's `njit` with its on-disk cache, which a
change to any file of compiled loops invalidates for all of them.

numba keys a function's cached machine code by the content of the function's own source file.
A compiled function that calls compiled functions of other files carries their code in its own
(step/alone.py's `_impulse_step` calls the solver's, the contact rows' and linalg's loops, and
LLVM inlines them). When only a callee's file changes (a `git checkout` or `git pull` in a
clone, an editable install being edited), numba would load the caller's cached code with the old
callee in it, and the step would silently compute what the old sources said. Here every
function decorated with :func:`kernel` is stamped with one digest of all the package's files
that hold such functions (and of this one), so a change to any of them makes numba compile all
of them again, once.

The cache stays where numba puts it (`__pycache__` beside the sources, or numba's user-wide
directory when that is not writable, or `NUMBA_CACHE_DIR`); only the stamp is ours. A frozen
application (PyInstaller and the like) keeps numba's own stamps.

The module also gives the loops `carve`, which cuts a matrix out of a packed 1-D argument or
scratch array without numba's `reshape` (see its docstring).
"""

from __future__ import annotations

import hashlib
import os
import sys
import warnings

import numba
import numpy as np
from numba import njit, types
from numba.core import caching, cgutils
from numba.core.imputils import impl_ret_borrowed
from numba.extending import intrinsic
from numba.np.arrayobj import make_array, populate_array

_ROOT = os.path.dirname(os.path.abspath(__file__))
_MARK = b"\n@kernel"  # the decorator at the start of a line, in a file of compiled loops


def _digest() -> bytes:
    """sha256 over the relative path and the content of every .py file of the package that
    holds a compiled loop, and of this one, in sorted order."""
    h = hashlib.sha256()
    for dirpath, dirnames, files in os.walk(_ROOT):
        dirnames.sort()
        for name in sorted(files):
            if not name.endswith(".py"):
                continue
            path = os.path.join(dirpath, name)
            with open(path, "rb") as f:
                data = f.read()
            if _MARK in data or path == os.path.abspath(__file__):
                rel = os.path.relpath(path, _ROOT).replace(os.sep, "/").encode()
                h.update(len(rel).to_bytes(8, "little") + rel)
                h.update(len(data).to_bytes(8, "little") + data)
    return h.digest()


class _PackageStamp:
    """A locator mixin: the package's digest as the source stamp of its files' functions, and
    no locator for other files (numba's own then apply)."""

    digest = b""

    def get_source_stamp(self):
        return self.digest

    @classmethod
    def from_function(cls, py_func, py_file):
        try:
            ours = os.path.commonpath([_ROOT, os.path.abspath(py_file)]) == _ROOT
        except ValueError:  # (another drive)
            ours = False
        return super().from_function(py_func, py_file) if ours else None


def _numba(name: str):
    """numba's caching class `name` (public since numba 0.68, with a leading _ before), or
    None."""
    return getattr(caching, name, None) or getattr(caching, "_" + name, None)


_INSTALLED: list = []  # the locators put in numba's list, once


def _install() -> None:
    """Put our three locators first in numba's list (once), in numba's own order of theirs. A
    numba whose caching module lacks what they build on keeps its own stamps, with a warning."""
    if getattr(sys, "frozen", False) or _INSTALLED:
        return
    names = ("UserProvidedCacheLocator", "InTreeCacheLocator", "UserWideCacheLocator")
    bases, impl = [_numba(n) for n in names], _numba("CacheImpl")
    classes = getattr(impl, "_locator_classes", None)
    if None in bases or not isinstance(classes, list):
        warnings.warn(f"raisimcli: numba {numba.__version__}'s cache locators are not those "
                      "raisimcli knows; a cached compiled loop may keep an old version of the "
                      "loops it calls from another file after an update of raisimcli (delete its "
                      "__pycache__ directories then)", RuntimeWarning, stacklevel=2)
        return
    _PackageStamp.digest = _digest()
    _INSTALLED[:] = [type("_Package" + b.__name__.lstrip("_"), (_PackageStamp, b), {})
                     for b in bases]
    classes[:0] = _INSTALLED


_install()


# LLVM's optimisation level of the package's loops: 1, unless NUMBA_OPT says otherwise. Level 3
# (numba's default) spent about 2 s more of a fresh environment's first run (17.2 s against 15.2 s
# at level 1; 12.3 s at level 0, where numba refuses to cache some loops) optimising loops whose
# time goes to the calls into them, not to their arithmetic: the standing quadruped's step took the
# same 47.7-47.9 us at levels 1 and 3 (benchmarks/README.md). The level changes no result: without
# fastmath LLVM keeps every floating-point operation and its order at any level (the golden logs
# compare at rtol 0).
_OPT = None if "NUMBA_OPT" in os.environ else 1


def _at_our_level(compile_):
    """numba's Dispatcher.compile of one of our loops, run with LLVM at level _OPT (numba reads
    config.OPT when it optimises a module; the callees a loop compiles go through here too)."""
    from numba.core import config
    from numba.core.compiler_lock import global_compiler_lock

    def compile_at_level(sig):
        with global_compiler_lock:
            before = config.OPT
            config.OPT = config._OptLevel(_OPT)
            try:
                return compile_(sig)
            finally:
                config.OPT = before
    return compile_at_level


def kernel(fn):
    """`numba.njit(cache=True, _nrt=False)(fn)`, stamped with the package's digest (see the
    module) and optimised at LLVM's level _OPT.

    Without numba's runtime (NRT, the reference counts of the arrays it allocates): a loop takes
    its arrays from its caller, writes into them and returns numbers, and allocates nothing (it
    could not: numba refuses an allocation or a new array returned there). numba then neither
    makes a reference-counted handle for each array argument at the call nor counts the
    references of each view inside the loop (an atomic increment and decrement, a few hundred
    per step; the caller's arrays live as long as the call). It took a sixth off the standing
    quadruped's step (benchmarks/README.md), and changes no result."""
    dispatcher = njit(cache=True, _nrt=False)(fn)
    if _OPT is not None and hasattr(dispatcher, "compile"):  # (NUMBA_DISABLE_JIT=1: fn itself)
        dispatcher.compile = _at_our_level(dispatcher.compile)
    return dispatcher


def _carve_python(buffer, start, shape):
    """carve as Python: `buffer[start:start + prod(shape)].reshape(shape)`."""
    return buffer[start:start + int(np.prod(shape))].reshape(shape)


@intrinsic
def _carved(typingctx, buffer, start, shape):
    """carve in a compiled loop: the view's pointer, shape and strides filled in place."""
    if not (isinstance(buffer, types.Array) and buffer.ndim == 1 and buffer.layout == "C"
            and isinstance(shape, types.UniTuple) and isinstance(shape.dtype, types.Integer)):
        return None
    out = types.Array(buffer.dtype, shape.count, "C")

    def codegen(context, builder, signature, args):
        src = make_array(signature.args[0])(context, builder, args[0])
        view = make_array(out)(context, builder)
        itemsize = context.get_constant(
            types.intp, context.get_abi_sizeof(context.get_data_type(buffer.dtype)))
        dims = [context.cast(builder, d, shape.dtype, types.intp)
                for d in cgutils.unpack_tuple(builder, args[2], shape.count)]
        strides, stride = [], itemsize
        for d in reversed(dims):  # C order: the last axis's stride is one item
            strides.insert(0, stride)
            stride = builder.mul(stride, d)
        first = context.cast(builder, args[1], signature.args[1], types.intp)
        populate_array(view, data=builder.gep(src.data, [first]),
                       shape=cgutils.pack_array(builder, dims),
                       strides=cgutils.pack_array(builder, strides), itemsize=itemsize,
                       meminfo=src.meminfo, parent=src.parent)
        return impl_ret_borrowed(context, builder, out, view._getvalue())
    return out(buffer, start, shape), codegen


# carve(buffer, start, shape): the C-ordered array of `shape` (a tuple of ints) whose entries are
# those of the contiguous 1-D `buffer` from index `start` on, a view: what
# `buffer[start:start + prod(shape)].reshape(shape)` gives, without its checks (the caller keeps
# start + prod(shape) within the buffer, as it would for the slice). In a compiled loop it is
# made in place rather than by numba's `reshape`, whose call into numba's helper library cost
# about 20 ns and whose code about 30 ms of a fresh environment's compile, at each of the many
# places where the loops cut their packed arguments and scratch into matrices
# (benchmarks/README.md). With NUMBA_DISABLE_JIT=1, where the loops run as Python, it is the
# slice and reshape.
carve = _carve_python if numba.config.DISABLE_JIT else _carved
