"""raisimcli.jit.ArrayTable and table_view: arrays handed to a compiled loop as one table of their
addresses, which the loop must see as the arrays themselves (the same entries, shapes and
strides, sharing their memory)."""

import numba
import numpy as np
import pytest
from numba import types

from raisimcli.jit import ArrayTable, _table_view_python, table_view

_F3A, _F2F = (types.float64, 3, "A"), (types.float64, 2, "F")
_B2C, _I1C, _S1C = (types.boolean, 2, "C"), (types.int64, 1, "C"), (types.int8, 1, "C")
_f3a, _f2f, _b2c, _i1c, _s1c = (table_view(k) for k in (_F3A, _F2F, _B2C, _I1C, _S1C))


@numba.njit(_nrt=False)
def _read(table, out):
    """Every entry of the table's five arrays into `out`, in C order; a write into the first."""
    a, b, c, d, e = _f3a(table, 0), _f2f(table, 1), _b2c(table, 2), _i1c(table, 3), \
        _s1c(table, 4)
    k = 0
    for i in range(a.shape[0]):
        for j in range(a.shape[1]):
            for m in range(a.shape[2]):
                out[k] = a[i, j, m]
                k += 1
    for i in range(b.shape[0]):
        for j in range(b.shape[1]):
            out[k] = b[i, j]
            k += 1
    for i in range(c.shape[0]):
        for j in range(c.shape[1]):
            out[k] = 1.0 if c[i, j] else 0.0
            k += 1
    for i in range(d.shape[0]):
        out[k] = d[i]
        k += 1
    for i in range(e.shape[0]):
        out[k] = e[i]
        k += 1
    a[a.shape[0] - 1, 2, 1] = -7.0
    return k


def _arrays():
    rng = np.random.default_rng(3)
    placements = rng.normal(size=(5, 12))  # (as Pinocchio's placements: a rotation, an origin)
    rotations = np.lib.stride_tricks.as_strided(placements, (5, 3, 3), (96, 24, 8))[:, :, ::-1]
    jacobian = np.asfortranarray(rng.normal(size=(6, 4)))
    return [(rotations, _F3A), (jacobian, _F2F), (rng.normal(size=(3, 4)) > 0, _B2C),
            (rng.integers(-9, 9, size=6), _I1C), (rng.integers(-9, 9, size=4).astype(np.int8),
                                                  _S1C)]


def test_a_loop_reads_the_arrays_of_the_table_and_writes_into_them():
    arrays = _arrays()
    table = ArrayTable(arrays)
    expected = np.concatenate([np.asarray(a, dtype=float).reshape(-1) for a, _ in arrays])
    out = np.zeros(200)
    k = _read(table.table, out)
    assert k == expected.size and out[:k].tobytes() == expected.tobytes()
    assert arrays[0][0][4, 2, 1] == -7.0  # (a view of the array, not a copy)


def test_the_table_keeps_its_arrays_alive():
    table = ArrayTable(_arrays())  # (nothing else holds them)
    expected = np.concatenate([np.asarray(a, dtype=float).reshape(-1) for a in table.arrays])
    np.ones(10000)  # (memory freed arrays could be given to)
    out = np.zeros(200)
    _read(table.table, out)
    assert out[:expected.size].tobytes() == expected.tobytes()


@pytest.mark.parametrize("which,array", [
    (0, np.zeros((5, 3))),  # another ndim
    (1, np.zeros((6, 4))),  # C order for a Fortran-ordered kind
    (2, np.zeros((3, 4))),  # floats for booleans
    (3, np.zeros(6, dtype=np.int32)),  # another integer type
    (4, np.zeros(8, dtype=np.int8)[::2]),  # strided for a contiguous kind
])
def test_an_array_not_of_its_kind_is_refused(which, array):
    arrays = _arrays()
    arrays[which] = (array, arrays[which][1])
    with pytest.raises(TypeError, match=f"entry {which}"):
        ArrayTable(arrays)


def test_table_view_as_python_gives_the_arrays(monkeypatch):  # (NUMBA_DISABLE_JIT=1's)
    monkeypatch.setattr(numba.config, "DISABLE_JIT", True)
    arrays = _arrays()
    table = ArrayTable(arrays)
    for k, (a, kind) in enumerate(arrays):
        assert _table_view_python(kind)(table.table, k) is a
