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

When the loops are first loaded, the machine code the package ships for them is added to numba's
cache, where it applies (raisimcli/precompiled.py): a first run of the `raisimcli` command then
compiles nothing, and neither does a program's first use of the library, which loads the code
made for a generic processor when numba's cache has none for its own.

The module also gives the loops `carve`, which cuts a matrix out of a packed 1-D argument or
scratch array without numba's `reshape` (see its docstring), and `ArrayTable` with `table_view`,
which hand a loop many arrays as one argument (see theirs).
"""

from __future__ import annotations

import hashlib
import importlib.abc
import os
import sys
import threading
import warnings
import weakref


class _WithoutScipyLinalg(importlib.abc.MetaPathFinder):
    """An import finder that answers "no such module" for scipy.linalg and its submodules to
    the thread that made it (another thread's imports go on as usual meanwhile)."""

    def __init__(self):
        self.thread = threading.get_ident()

    def find_spec(self, name, path=None, target=None):
        if (name == "scipy.linalg" or name.startswith("scipy.linalg.")) and \
                threading.get_ident() == self.thread:
            raise ModuleNotFoundError(f"No module named {name!r} (while numba starts)", name=name)
        return None


def _start_numba() -> None:
    """Import numba's array functions without letting them import scipy.linalg.

    When numba first compiles or loads a compiled function it imports `numba.np.arraymath`,
    which imports `scipy.linalg` (a tenth of a short `raisimcli run` from start to exit) only
    to learn whether a BLAS is there for `np.correlate` and `np.convolve` in compiled code. Our
    compiled loops call neither (nor any BLAS: their algebra is our own loops, in a fixed order),
    so that module is imported here with scipy.linalg out of reach: its check then answers no,
    and numba's compiled `np.correlate` and `np.convolve` would use their own loop. Any other
    use of scipy.linalg, numba's included (`np.dot` and `np.linalg` in compiled code import it
    when compiled), imports it as usual once this function has returned. Nothing changes when
    scipy.linalg is already imported (then numba uses it)."""
    if "numba.np.arraymath" in sys.modules or "scipy.linalg" in sys.modules:
        return
    finder = _WithoutScipyLinalg()
    sys.meta_path.insert(0, finder)
    try:
        import numba.np.arraymath  # noqa: F401
    finally:
        sys.meta_path.remove(finder)


_start_numba()

import numba  # noqa: E402
import numpy as np  # noqa: E402
from numba import njit, types  # noqa: E402
from numba.core import caching, cgutils  # noqa: E402
from numba.core.imputils import impl_ret_borrowed  # noqa: E402
from numba.extending import intrinsic, overload  # noqa: E402
from numba.np.arrayobj import make_array, populate_array  # noqa: E402

_ROOT = os.path.dirname(os.path.abspath(__file__))
_MARK = b"\n@kernel"  # the decorator at the start of a line, in a file of compiled loops


_FOLDERS: list = []  # the package's folders with files of compiled loops, relative ("" its own)


def _digest() -> bytes:
    """sha256 over the relative path and the content of every .py file of the package that
    holds a compiled loop, and of this one, in sorted order (and those files' folders into
    _FOLDERS)."""
    h = hashlib.sha256()
    folders = set()
    for dirpath, dirnames, files in os.walk(_ROOT):
        dirnames.sort()
        for name in sorted(files):
            if not name.endswith(".py"):
                continue
            path = os.path.join(dirpath, name)
            with open(path, "rb") as f:
                data = f.read()
            if _MARK in data or path == os.path.abspath(__file__):
                rel = os.path.relpath(path, _ROOT).replace(os.sep, "/")
                h.update(len(rel).to_bytes(8, "little") + rel.encode())
                h.update(len(data).to_bytes(8, "little") + data)
                if _MARK in data:
                    folders.add(os.path.dirname(rel))
    _FOLDERS[:] = sorted(folders)
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
# (numba's default) made a fresh environment's first run longer (and level 0 makes numba refuse to
# cache some loops), optimising loops whose time goes to the calls into them, not to their
# arithmetic: the standing quadruped's step took the same time at levels 1 and 3. The level
# changes no result: without
# fastmath LLVM keeps every floating-point operation and its order at any level (the golden logs
# compare at rtol 0).
_OPT = None if "NUMBA_OPT" in os.environ else 1


# the shipped machine code of the loops, added to numba's cache when it applies (precompiled.py)
if _INSTALLED:
    from raisimcli import precompiled  # noqa: E402

    precompiled.install(_INSTALLED, _PackageStamp.digest, _FOLDERS, _OPT)


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
    quadruped's step, and changes no result."""
    dispatcher = njit(cache=True, _nrt=False)(fn)
    if _OPT is not None and hasattr(dispatcher, "compile"):  # (NUMBA_DISABLE_JIT=1: fn itself)
        dispatcher.compile = _at_our_level(dispatcher.compile)
    if _INSTALLED and precompiled.USABLE and \
            isinstance(getattr(dispatcher, "_cache", None), caching.FunctionCache):
        precompiled.fall_back_to_generic(dispatcher._cache)
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
        if numba.config.BOUNDSCHECK:  # (NUMBA_BOUNDSCHECK=1: the view must lie in the buffer)
            zero = context.get_constant(types.intp, 0)
            end, bad = first, builder.icmp_signed("<", first, zero)
            for d in dims:
                bad = builder.or_(bad, builder.icmp_signed("<", d, zero))
            size = context.get_constant(types.intp, 1)
            for d in dims:
                size = builder.mul(size, d)
            end = builder.add(first, size)
            n = cgutils.unpack_tuple(builder, src.shape, 1)[0]
            bad = builder.or_(bad, builder.icmp_signed(">", end, n))
            with cgutils.if_unlikely(builder, bad):
                context.call_conv.return_user_exc(
                    builder, IndexError, ("carve: the view does not lie in its buffer",))
        populate_array(view, data=builder.gep(src.data, [first]),
                       shape=cgutils.pack_array(builder, dims),
                       strides=cgutils.pack_array(builder, strides), itemsize=itemsize,
                       meminfo=src.meminfo, parent=src.parent)
        return impl_ret_borrowed(context, builder, out, view._getvalue())
    return out(buffer, start, shape), codegen


def _span_python(buffer, start, stop):
    """span as Python: `buffer[start:stop]`."""
    return buffer[start:stop]


@intrinsic
def _spanned(typingctx, buffer, start, stop):
    """span in a compiled loop: the view's pointer, length and stride filled in place."""
    if not (isinstance(buffer, types.Array) and buffer.ndim == 1 and buffer.layout == "C"
            and isinstance(start, types.Integer) and isinstance(stop, types.Integer)):
        return None

    def codegen(context, builder, signature, args):
        src = make_array(signature.args[0])(context, builder, args[0])
        view = make_array(buffer)(context, builder)
        itemsize = context.get_constant(
            types.intp, context.get_abi_sizeof(context.get_data_type(buffer.dtype)))
        first = context.cast(builder, args[1], signature.args[1], types.intp)
        end = context.cast(builder, args[2], signature.args[2], types.intp)
        length = builder.sub(end, first)
        if numba.config.BOUNDSCHECK:  # (NUMBA_BOUNDSCHECK=1: the view must lie in the buffer)
            zero = context.get_constant(types.intp, 0)
            n = cgutils.unpack_tuple(builder, src.shape, 1)[0]
            bad = builder.or_(builder.icmp_signed("<", first, zero),
                              builder.icmp_signed("<", length, zero))
            bad = builder.or_(bad, builder.icmp_signed(">", end, n))
            with cgutils.if_unlikely(builder, bad):
                context.call_conv.return_user_exc(
                    builder, IndexError, ("span: the view does not lie in its buffer",))
        populate_array(view, data=builder.gep(src.data, [first]),
                       shape=cgutils.pack_array(builder, [length]),
                       strides=cgutils.pack_array(builder, [itemsize]), itemsize=itemsize,
                       meminfo=src.meminfo, parent=src.parent)
        return impl_ret_borrowed(context, builder, buffer, view._getvalue())
    return buffer(buffer, start, stop), codegen


# span(buffer, start, stop): the entries start..stop-1 of the contiguous 1-D `buffer`, a view:
# what `buffer[start:stop]` gives for 0 <= start <= stop <= len(buffer), without the slice's
# handling of other bounds (negative ones, past the end), which the loops never use. A slice's
# code took numba long to compile at each of the some 200 places where the loops cut their
# packed arguments and scratch, and LLVM optimised it again in every caller; span's, a third of
# that. Like carve: the slice itself with NUMBA_DISABLE_JIT=1,
# and an IndexError for a view outside its buffer with NUMBA_BOUNDSCHECK=1.
span = _span_python if numba.config.DISABLE_JIT else _spanned


def present(marker, value):
    """`value`, or None when `marker` is None. In a compiled loop the choice is made by the
    type of `marker` when numba compiles the loop, not when it runs: a loop compiled for a
    `marker` of None gets None, whose type lets numba drop the callee's branches under
    `x is not None` (see docs/physics.md); one function returning None or `value` at run time
    would have numba's Optional type, under which such branches are compiled and kept. For the
    package's loops (`kernel`: without numba's reference counts): it hands back `value` itself,
    without counting a reference, which a loop compiled with them would count as its own."""
    return None if marker is None else value


@overload(present, jit_options={"_nrt": False})
def _present_compiled(marker, value):
    if isinstance(marker, types.NoneType):
        return lambda marker, value: None
    return lambda marker, value: value


# carve(buffer, start, shape): the C-ordered array of `shape` (a tuple of ints) whose entries are
# those of the contiguous 1-D `buffer` from index `start` on, a view: what
# `buffer[start:start + prod(shape)].reshape(shape)` gives, without its checks (the caller keeps
# start + prod(shape) within the buffer, as it would for the slice). In a compiled loop it is
# made in place rather than by numba's `reshape`, whose call into numba's helper library and
# whose compiled code cost something at each of the many places where the loops cut their packed
# arguments and scratch into matrices. With NUMBA_DISABLE_JIT=1, where the loops run as Python,
# it is the slice and reshape. With NUMBA_BOUNDSCHECK=1 (numba's check of every index; give it a
# cache directory of its own, NUMBA_CACHE_DIR, so that no loop compiled without it is reused) a
# view that does not lie within its buffer raises IndexError, as an index past an array's end
# does.
carve = _carve_python if numba.config.DISABLE_JIT else _carved


# ---------------------------------------------------------------------------------------------
# Arrays handed to a compiled loop as one table of their addresses
# ---------------------------------------------------------------------------------------------
# numba checks the type of every argument of a call and unpacks every array into a struct, which
# costs more for an array argument than for a float, whatever the loop does with it. A loop that
# reads the same arrays at every call (a robot's constant arrays, views of Pinocchio's data made
# at load) can take them as one ArrayTable, and make each one again in the loop with
# `table_view`: one argument instead of many.

_TABLE_COLUMNS = 7  # a row: the address, three dimensions, three strides in bytes
_TABLES: dict = {}  # NUMBA_DISABLE_JIT=1: the arrays of each table, by its address


class ArrayTable:
    """Arrays for a compiled loop, each of a kind (numba's dtype, ndim, layout) given with it, as
    one int64 array `table` (row k: array k's address, dimensions and strides). The table holds
    the arrays, so they live as long as it does; the loop must never be handed `table` after
    the table is gone, nor read an array that was rebound since (an attribute set to a new
    array): give it arrays that are written in place for as long as the table is used. An array
    that is not of its kind (its dtype, its ndim, contiguous in C or Fortran order for the
    layouts "C" and "F"; any strides for "A") is refused here with a TypeError: a loop would
    read it with the wrong type or strides."""

    def __init__(self, arrays: list):
        self.arrays = tuple(a for a, _ in arrays)
        self.table = np.zeros((len(arrays), _TABLE_COLUMNS), dtype=np.int64)
        for k, (a, (dtype, ndim, layout)) in enumerate(arrays):
            kind = types.Array(dtype, ndim, layout)
            if not isinstance(a, np.ndarray) or ndim > 3 or a.ndim != ndim or \
                    numba.from_dtype(a.dtype) != dtype or \
                    (layout == "C" and not a.flags["C_CONTIGUOUS"]) or \
                    (layout == "F" and not a.flags["F_CONTIGUOUS"]):
                raise TypeError(f"ArrayTable: entry {k} is not an {kind}")
            self.table[k, 0] = a.ctypes.data
            self.table[k, 1:1 + ndim] = a.shape
            self.table[k, 4:4 + ndim] = a.strides
        if numba.config.DISABLE_JIT:  # (forgotten with the table)
            key = self.table.ctypes.data
            _TABLES[key] = self.arrays
            weakref.finalize(self, _TABLES.pop, key, None)


def _table_view_python(kind):
    def view(table, k):
        return _TABLES[table.ctypes.data][k]
    return view


def _table_view_compiled(kind):
    """The intrinsic that makes array `k` of an ArrayTable's `table`, of kind `kind` (numba's
    dtype, ndim, layout), in a compiled loop: its pointer, shape and strides from the table's
    row, without a reference count (the table holds the array)."""
    dtype, ndim, layout = kind
    out = types.Array(dtype, ndim, layout)

    @intrinsic
    def view(typingctx, table, k):
        if not (isinstance(table, types.Array) and table.ndim == 2 and
                table.dtype == types.int64 and table.layout == "C" and
                isinstance(k, types.Integer)):
            return None

        def codegen(context, builder, signature, args):
            tab = make_array(signature.args[0])(context, builder, args[0])
            row = builder.mul(context.cast(builder, args[1], signature.args[1], types.intp),
                              context.get_constant(types.intp, _TABLE_COLUMNS))

            def entry(i):
                at = builder.add(row, context.get_constant(types.intp, i))
                return builder.load(builder.gep(tab.data, [at]))
            arr = make_array(out)(context, builder)
            itemsize = context.get_constant(
                types.intp, context.get_abi_sizeof(context.get_data_type(dtype)))
            populate_array(arr, data=builder.inttoptr(entry(0), arr.data.type),
                           shape=cgutils.pack_array(builder, [entry(1 + d) for d in range(ndim)]),
                           strides=cgutils.pack_array(builder,
                                                      [entry(4 + d) for d in range(ndim)]),
                           itemsize=itemsize, meminfo=None, parent=None)
            return impl_ret_borrowed(context, builder, out, arr._getvalue())
        return out(table, k), codegen
    return view


# table_view(kind): the function a compiled loop calls as `view(table, k)` to get array k of an
# ArrayTable's table, of kind `kind` = (numba dtype, ndim, layout); as Python (with
# NUMBA_DISABLE_JIT=1), the table's array itself.
table_view = _table_view_python if numba.config.DISABLE_JIT else _table_view_compiled
