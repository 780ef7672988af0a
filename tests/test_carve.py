"""raisimcli.jit.carve and span: the compiled loops' views of packed 1-D arrays, which must be
the arrays numpy's slice (and reshape) make (same entries, same shape, C order, sharing the
memory)."""

import numba
import numpy as np
import pytest

from raisimcli.jit import _carve_python, _span_python, carve, span


@numba.njit
def _carved(buffer, start, rows, cols, k):
    return (carve(buffer, start, (rows, cols)), carve(buffer, start, (k, 3, 3)),
            carve(buffer, start, (rows,)), carve(buffer, start, (rows, 1)))


@pytest.mark.parametrize("start,rows,cols,k", [(0, 4, 5, 2), (7, 3, 3, 1), (11, 6, 1, 0),
                                               (40, 0, 3, 0)])
def test_a_carved_array_is_numpy_s_slice_and_reshape(start, rows, cols, k):
    buffer = np.random.default_rng(start).normal(size=60)
    got = _carved(buffer, start, rows, cols, k)
    expected = (buffer[start:start + rows * cols].reshape(rows, cols),
                buffer[start:start + 9 * k].reshape(k, 3, 3),
                buffer[start:start + rows], buffer[start:start + rows].reshape(rows, 1))
    for a, b in zip(got, expected):
        assert a.shape == b.shape and a.flags["C_CONTIGUOUS"]
        assert a.tobytes() == b.tobytes()
    if rows and cols:  # a view: a write shows in the buffer
        got[0][rows - 1, cols - 1] = 123.0
        assert buffer[start + rows * cols - 1] == 123.0


def test_a_carved_array_keeps_its_buffer_alive():
    carved = _carved(np.arange(30.0), 3, 4, 4, 1)[0]  # (nothing else holds the buffer)
    np.ones(1000)  # (memory a freed buffer could be given to)
    assert carved.tobytes() == np.arange(3.0, 19.0).reshape(4, 4).tobytes()


def test_carve_as_python_is_the_slice_and_reshape():  # (NUMBA_DISABLE_JIT=1's carve)
    buffer = np.arange(20.0)
    view = _carve_python(buffer, 2, (3, 4))
    assert np.array_equal(view, buffer[2:14].reshape(3, 4)) and view.base is not None


def test_carve_refuses_a_strided_buffer_when_compiled():
    with pytest.raises(numba.core.errors.TypingError):
        _carved(np.arange(60.0)[::2], 0, 2, 2, 0)


_BOUNDS_CHECK = """
import numba
import numpy as np
from raisimcli.jit import carve

@numba.njit
def view_sum(buffer, start, rows, cols):
    v = carve(buffer, start, (rows, cols))
    s = 0.0
    for i in range(rows):
        for j in range(cols):
            s += v[i, j]
    return s

buffer = np.arange(10.0)
print(view_sum(buffer, 4, 2, 3))  # entries 4..9: the last view that fits
for start, rows, cols in ((5, 2, 3), (-1, 1, 1), (0, -1, 2)):
    try:
        view_sum(buffer, start, rows, cols)
        print("no error")
    except IndexError as e:
        print(e)
"""


def test_a_carved_view_past_its_buffer_raises_under_numba_s_bounds_check(tmp_path):
    # NUMBA_BOUNDSCHECK=1 (how the packed layouts of the step's loops are checked: the whole
    # suite passes under it) makes carve check that its view lies within its buffer: one entry
    # past the end, a negative start or a negative dimension raise IndexError; the view that
    # ends at the last entry is fine. A cache directory of its own: no loop compiled without
    # the check is reused
    import os
    import subprocess
    import sys
    env = dict(os.environ, NUMBA_BOUNDSCHECK="1", NUMBA_CACHE_DIR=str(tmp_path))
    out = subprocess.run([sys.executable, "-c", _BOUNDS_CHECK], env=env, capture_output=True,
                         text=True, check=True).stdout.split("\n")
    assert out[0] == str(float(sum(range(4, 10))))
    assert out[1:4] == ["carve: the view does not lie in its buffer"] * 3


@numba.njit
def _spans(buffer, start, stop):
    return span(buffer, start, stop), buffer[start:stop]


@pytest.mark.parametrize("start,stop", [(0, 60), (0, 0), (7, 19), (59, 60), (60, 60), (13, 13)])
def test_a_span_is_numpy_s_slice(start, stop):
    buffer = np.random.default_rng(stop).normal(size=60)
    got, sliced = _spans(buffer, start, stop)
    assert got.shape == sliced.shape == (stop - start,) and got.flags["C_CONTIGUOUS"]
    assert got.tobytes() == sliced.tobytes() == buffer[start:stop].tobytes()
    if stop > start:  # a view: a write shows in the buffer
        got[-1] = 123.0
        assert buffer[stop - 1] == 123.0
    assert np.array_equal(_span_python(buffer, start, stop), buffer[start:stop])


def test_a_span_of_integers_keeps_its_type_and_its_buffer_alive():
    got = _spans(np.arange(30, dtype=np.int64), 3, 9)[0]  # (nothing else holds the buffer)
    np.ones(1000, dtype=np.int64)
    assert got.dtype == np.int64 and got.tolist() == list(range(3, 9))


def test_span_refuses_what_it_cannot_view_when_compiled():
    with pytest.raises(numba.core.errors.TypingError):  # a strided buffer
        _spans(np.arange(60.0)[::2], 0, 2)
    with pytest.raises(numba.core.errors.TypingError):  # a matrix
        _spans(np.zeros((3, 4)), 0, 2)


_SPAN_BOUNDS_CHECK = """
import numba
import numpy as np
from raisimcli.jit import span

@numba.njit
def view_sum(buffer, start, stop):
    v = span(buffer, start, stop)
    s = 0.0
    for i in range(v.shape[0]):
        s += v[i]
    return s

buffer = np.arange(10.0)
print(view_sum(buffer, 4, 10))  # entries 4..9: the last view that fits
for start, stop in ((5, 11), (-1, 3), (4, 3)):
    try:
        view_sum(buffer, start, stop)
        print("no error")
    except IndexError as e:
        print(e)
"""


def test_a_span_past_its_buffer_raises_under_numba_s_bounds_check(tmp_path):
    # as carve's (above): past the end, a negative start, a stop before the start
    import os
    import subprocess
    import sys
    env = dict(os.environ, NUMBA_BOUNDSCHECK="1", NUMBA_CACHE_DIR=str(tmp_path))
    out = subprocess.run([sys.executable, "-c", _SPAN_BOUNDS_CHECK], env=env,
                         capture_output=True, text=True, check=True).stdout.split("\n")
    assert out[0] == str(float(sum(range(4, 10))))
    assert out[1:4] == ["span: the view does not lie in its buffer"] * 3
