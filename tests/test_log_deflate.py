"""The log's chunks compressed in a helper process (raisimcli/log/deflate.py): the file holds
what HDF5's own shuffle and deflate filters would have written, whatever the helper does (done,
gone mid-run, chunks out of step with timed flushes)."""

import os
import signal
import zlib

import h5py
import numpy as np
import pytest

from raisimcli.log.deflate import DeflateHelper, chunk_bound, deflate
from raisimcli.log.writer import Channel, LogWriter


def _unshuffle(raw: bytes, itemsize: int) -> bytes:
    """HDF5's unshuffle, written out: byte j of element i sits at j * n + i."""
    n = len(raw) // itemsize
    return np.frombuffer(raw, np.uint8).reshape(itemsize, n).T.tobytes()


@pytest.mark.parametrize("with_numpy", [True, False])
@pytest.mark.parametrize("dtype", [np.float64, np.int32, np.float32])
def test_deflate_is_shuffle_then_zlib(dtype, with_numpy, monkeypatch):
    """In the writer's process (numpy's transpose) and in the helper's (the standard library's
    strided slices of bytes)."""
    import raisimcli.log.deflate as module
    if not with_numpy:
        monkeypatch.setattr(module, "_np", None)
    a = (np.random.default_rng(1).random((64, 5)) * 1000).astype(dtype)
    c = deflate(a, a.itemsize, 4)
    assert _unshuffle(zlib.decompress(c), a.itemsize) == a.tobytes()
    assert zlib.decompress(deflate(a, 1, 4)) == a.tobytes()  # no shuffle
    assert len(c) <= chunk_bound(a.nbytes)
    # bytes past the last whole element stay at the end, as HDF5's shuffle leaves them
    odd = np.arange(4 * a.itemsize + 3, dtype=np.uint8)
    n = 4
    shuffled = zlib.decompress(deflate(odd, a.itemsize, 4))
    assert shuffled[:n * a.itemsize] == _shuffle_written_out(odd[:n * a.itemsize], a.itemsize)
    assert shuffled[n * a.itemsize:] == odd[n * a.itemsize:].tobytes()


def _shuffle_written_out(raw: np.ndarray, itemsize: int) -> bytes:
    """HDF5's shuffle, written out: byte j of element i goes to j * n + i."""
    n = raw.size // itemsize
    out = bytearray(raw.size)
    for i in range(n):
        for j in range(itemsize):
            out[j * n + i] = raw[i * itemsize + j]
    return bytes(out)


def test_helper_answers_in_order_and_is_replaced_when_gone():
    a = np.arange(4096, dtype=np.float64)
    b = np.arange(1000, dtype=np.int32)
    helper = DeflateHelper(a.nbytes + b.nbytes, chunk_bound(a.nbytes) + chunk_bound(b.nbytes))
    try:
        helper.submit([a, b], 4)
        helper.submit([b[::-1].copy(), a], 4)
        assert not helper.has_free_slot and helper.jobs_out == 2
        first, second = helper.result(4), helper.result(4)
        assert first == [deflate(a, 8, 4), deflate(b, 4, 4)]
        assert second == [deflate(b[::-1].copy(), 4, 4), deflate(a, 8, 4)]
        assert helper.alive and helper.has_free_slot
        # the helper dies with a job out: the job is deflated here, from the slot's input
        os.kill(helper._proc.pid, signal.SIGSTOP)  # (so that it cannot answer the job first: on
        helper.submit([a, b], 4)  # a busy machine it sometimes did, and the test failed)
        os.kill(helper._proc.pid, signal.SIGKILL)
        helper._proc.wait()
        assert helper.result(4) == first
        assert not helper.alive
        helper.submit([b, a], 4)  # and later jobs too
        assert helper.result(4) == [deflate(b, 4, 4), deflate(a, 8, 4)]
    finally:
        helper.close()


def test_a_slot_filled_in_place_is_gathered_by_the_helper():
    """Rows written straight into a slot's input (take_slot, input_array), each dataset's
    columns side by side in a row: the helper gathers each dataset's columns (a piece at every
    row's stride) and stores what deflate stores for them as one array; so does the writer's
    process when the helper is gone. Arrays copied into the same slot after the rows, and
    slots given back unused, work as before."""
    n, width = 16, 6
    rows = np.sin(np.arange(n * width, dtype=np.float64)).reshape(n, width)
    extra = np.arange(50, dtype=np.int32)
    helper = DeflateHelper(rows.nbytes + extra.nbytes, chunk_bound(rows.nbytes) * 2, slots=3)
    try:
        unused = helper.take_slot()
        helper.release(unused)
        expected = [deflate(np.ascontiguousarray(rows[:, :3]), 8, 4),
                    deflate(np.ascontiguousarray(rows[:, 3:4]), 8, 4),
                    deflate(np.ascontiguousarray(rows[:, 4:]), 1, 4),  # (no shuffle)
                    deflate(extra, 4, 4)]
        for kill in (False, True):
            slot = helper.take_slot()
            helper.input_array(slot, np.float64, (n, width))[:] = rows
            stride = width * 8
            parts = [(0, n * 24, 8, stride, 24), (24, n * 8, 8, stride, 8),
                     (32, n * 16, 1, stride, 16), extra]
            if kill:  # the helper gone with the job out: the writer's process gathers it
                os.kill(helper._proc.pid, signal.SIGSTOP)
            helper.submit(parts, 4, slot=slot, at=rows.nbytes)
            if kill:
                os.kill(helper._proc.pid, signal.SIGKILL)
                helper._proc.wait()
            assert helper.result(4) == expected
            assert helper.alive != kill
        assert len(helper._free) == 3  # (every slot back)
    finally:
        helper.close()


def test_closing_with_a_slot_still_viewed_keeps_its_memory():
    """An array over a slot (input_array) that outlives the helper: close() leaves the shared
    memory mapped for as long as the array holds it (the writer drops its own views first;
    this is for a view kept elsewhere), and the array still reads what was written."""
    helper = DeflateHelper(800, chunk_bound(800))
    rows = helper.input_array(helper.take_slot(), np.float64, (10, 10))
    rows[:] = np.arange(100.0).reshape(10, 10)
    helper.close()
    assert not helper.alive
    assert rows.sum() == 4950.0


def _writer(path, helper: bool, chunk_rows: int = 8):
    """A LogWriter with two channels (a float vector and an int scalar) fed from `state`."""
    state = {"k": 0}
    w = LogWriter(str(path), scenario_text="", scenario_sha256="", config_json="{}", dt=0.001,
                  decimation=1, compression="gzip", chunk_rows=chunk_rows,
                  deflate_helper=helper)
    w.channels.append(Channel("v", (3,), lambda: np.sin(state["k"] + np.arange(3.0)), "1"))
    w.channels.append(Channel("n", (), lambda: state["k"] * 7, "1", dtype=np.int32))
    w.start()
    return w, state


def _float_writer(path, helper: bool, widths, state, f, chunk_rows: int = 8):
    """A LogWriter (not started) with float channels f0, f1, ...: channel i of widths[i]
    columns, f(k (i + 1) + [0, 1, ...]) at state["k"] = k."""
    w = LogWriter(str(path), scenario_text="", scenario_sha256="", config_json="{}", dt=0.001,
                  decimation=1, compression="gzip", chunk_rows=chunk_rows, deflate_helper=helper)
    for i, width in enumerate(widths):
        w.channels.append(Channel(f"f{i}", (width,), lambda i=i, width=width: f(
            state["k"] * (i + 1) + np.arange(width, dtype=float)), "1"))
    return w


def _rows(w, state, k0, k1):
    for k in range(k0, k1):
        state["k"] = k
        w.append(k)


def _expected(n):
    k = np.arange(n)
    return np.sin(k[:, None] + np.arange(3.0)), (k * 7).astype(np.int32)


def _libdeflate_chunk(rows: np.ndarray, chunk_rows: int = 8) -> bytes:
    """What a whole chunk of these rows must be stored as: the rows padded with zeros to the
    chunk's rows, HDF5's shuffle written out, then libdeflate's zlib stream at level 4 (the
    `deflate` package itself, not raisimcli's function)."""
    import deflate as libdeflate
    padded = np.zeros((chunk_rows,) + rows.shape[1:], dtype=rows.dtype)
    padded[:len(rows)] = rows
    shuffled = _shuffle_written_out(padded.reshape(-1).view(np.uint8), padded.itemsize)
    return bytes(libdeflate.zlib_compress(shuffled, 4))


def _check(path, n, whole=()):
    """The log holds n rows; the chunks that start at the rows `whole` were written whole
    (full, or the last), and hold libdeflate's stream of their rows."""
    v, m = _expected(n)
    with h5py.File(path) as f:
        assert f.attrs["rows"] == n and f.attrs["status"] == "complete"
        assert f["v"][()].tobytes() == v.tobytes()
        assert np.array_equal(f["n"][()], m)
        assert np.array_equal(f["time"][()], np.arange(1, n + 1) * 0.001)
        # every chunk is HDF5's shuffle then deflate (plain readers decompress it)
        assert list(f["v"]._filters) == ["shuffle", "gzip"]
        for r0 in range(0, n, 8):
            mask, raw = f["v"].id.read_direct_chunk((r0, 0))
            assert mask == 0
            rows = np.frombuffer(_unshuffle(zlib.decompress(raw), 8), np.float64).reshape(8, 3)
            assert rows[:min(8, n - r0)].tobytes() == v[r0:r0 + 8].tobytes()
            if r0 in whole:  # the same bytes on every machine, whatever zlib it has
                assert raw == _libdeflate_chunk(v[r0:r0 + 8]), r0


@pytest.mark.parametrize("helper", [True, False])
def test_chunks_through_the_helper_or_hdf5_hold_the_rows(tmp_path, helper):
    """Full chunks, timed flushes that leave a chunk half written, and a partial last chunk:
    the same rows whether the helper or HDF5's filters compress them."""
    path = tmp_path / "log.h5"
    w, state = _writer(path, helper)
    assert (w._helper is not None) == helper
    _rows(w, state, 0, 21)   # chunks 0 and 1 full, 5 rows buffered
    w.flush()                # a timed flush: rows 16-20, chunk 2 written partly
    _rows(w, state, 21, 43)  # chunk 2 completed (out of step: HDF5's filters), chunks 3, 4
    w.close("complete")
    _check(path, 43, whole=(0, 8, 24, 32, 40))


def test_rows_in_the_helpers_slots_make_the_same_log_as_without_it(tmp_path):
    """Three float datasets side by side in the rows (each a column range of the slot's row
    array, gathered by the helper) and an integer one (copied into the slot): full chunks
    (more than the helper has slots, so slots are used again), a timed flush, and a partial
    last chunk, whose rows past the end must be zeros though the slot held earlier rows. Each
    chunk holds the bytes of a log written without the helper; the whole ones hold libdeflate's
    stream of their rows."""
    logs = {}
    for helper in (True, False):
        path = logs[helper] = tmp_path / f"helper{helper}.h5"
        state = {"k": 0}
        w = LogWriter(str(path), scenario_text="", scenario_sha256="", config_json="{}",
                      dt=0.001, decimation=1, compression="gzip", chunk_rows=8,
                      deflate_helper=helper)
        for name, width in (("a", 3), ("b", 1), ("c", 2)):
            w.channels.append(Channel(name, (width,) if width > 1 else (),
                                      lambda width=width: np.cos(state["k"] * width +
                                                                 np.arange(width)) if width > 1
                                      else np.cos(state["k"] * 0.5), "1"))
        w.channels.append(Channel("n", (), lambda: state["k"] * 7, "1", dtype=np.int32))
        w.start()
        assert (w._helper is not None) == helper
        _rows(w, state, 0, 37)  # chunks 0-3 full, 5 rows buffered
        w.flush()  # a timed flush: rows 32-36, chunk 4 written partly
        _rows(w, state, 37, 67)  # chunk 4 completed (HDF5's filters), chunks 5-7, 3 rows left
        w.close("complete")
    with h5py.File(logs[True]) as x, h5py.File(logs[False]) as y:
        k = np.arange(67)
        assert x["b"][()].tobytes() == np.cos(k * 0.5).tobytes()
        assert x["a"][()].tobytes() == np.cos(k[:, None] * 3 + np.arange(3)).tobytes()
        for name in ("a", "b", "c", "n"):
            assert x[name][()].tobytes() == y[name][()].tobytes(), name
            for r0 in range(0, 67, 8):
                offset = (r0,) + (0,) * (x[name].ndim - 1)
                assert x[name].id.read_direct_chunk(offset) == \
                    y[name].id.read_direct_chunk(offset), (name, r0)
        for r0 in (0, 8, 16, 24, 40, 48, 56, 64):  # whole chunks, the last one padded
            raw = x["c"].id.read_direct_chunk((r0, 0))[1]
            assert raw == _libdeflate_chunk(x["c"][r0:r0 + 8]), r0


@pytest.mark.parametrize("busy", [False, True])
def test_the_last_chunk_is_shared_with_the_helper_only_when_free(tmp_path, monkeypatch, busy):
    """Closing the log compresses the last chunk in the run's process and, whenever the helper
    has nothing left to do, hands it a share of the channels not yet begun (from the last): a
    free helper takes some but not all of them; a helper that stays busy with the chunks before
    takes none. Either way every chunk holds the bytes of the log written without the helper."""
    submits = []
    real_submit = DeflateHelper.submit

    def spy(self, chunks, level, shuffle=True, **kw):
        submits.append((len(chunks), kw.get("keep_slot", False)))
        return real_submit(self, chunks, level, shuffle, **kw)

    monkeypatch.setattr(DeflateHelper, "submit", spy)
    if busy:  # (its answers never seem ready: the run's process compresses the whole chunk,
        # then waits for the chunks before)
        monkeypatch.setattr(DeflateHelper, "ready", lambda self: not self.alive)
    widths = (3, 1, 2, 4, 1, 5)
    logs = {}
    for helper in (True, False):
        path = logs[helper] = tmp_path / f"helper{helper}.h5"
        state = {"k": 0}
        w = _float_writer(path, helper, widths, state, np.cos)
        w.start()
        _rows(w, state, 0, 21)  # chunks 0 and 1 to the helper, 5 rows left
        if helper and not busy:
            w._write_done(True)  # (the helper done with them: free at the close)
        w.close("complete")
    shares = [n for n, keep in submits if keep]
    if busy:
        assert shares == []
    else:
        assert shares and 0 < sum(shares) < len(widths), submits
    with h5py.File(logs[True]) as x, h5py.File(logs[False]) as y:
        for i in range(len(widths)):
            assert x[f"f{i}"].shape == (21, widths[i])
            for r0 in (0, 8, 16):
                assert x[f"f{i}"].id.read_direct_chunk((r0, 0)) == \
                    y[f"f{i}"].id.read_direct_chunk((r0, 0)), (i, r0)
            assert x[f"f{i}"][16:].tobytes() == np.cos(
                np.arange(16, 21)[:, None] * (i + 1) + np.arange(widths[i])).tobytes()


@pytest.mark.parametrize("seed", range(8))
def test_random_runs_make_the_same_log_with_the_helper_or_without(tmp_path, seed):
    """Random layouts (float datasets of 0 to 4 columns side by side in the rows, and an
    integer one), chunk sizes and sequences of rows and timed flushes, the helper killed
    midway in half of them: the log holds the rows, and chunk for chunk the bytes of the
    same log written without the helper."""
    rng = np.random.default_rng(seed)
    widths = [int(x) for x in rng.integers(0, 5, size=int(rng.integers(1, 5)))]
    chunk_rows = int(rng.choice([4, 8, 16]))
    ops = []
    for _ in range(int(rng.integers(3, 10))):
        ops.append(("rows", int(rng.integers(1, 3 * chunk_rows))))
        if rng.random() < 0.3:
            ops.append(("flush", 0))
    kill_at = int(rng.integers(0, len(ops))) if seed % 2 else None
    total = sum(n for op, n in ops if op == "rows")
    logs = {}
    for helper in (True, False):
        path = logs[helper] = tmp_path / f"helper{helper}.h5"
        state = {"k": 0}
        w = _float_writer(path, helper, widths, state, np.sin, chunk_rows)
        w.channels.append(Channel("n", (), lambda: state["k"] * 3, "1", dtype=np.int32))
        w.start()
        k = 0
        for j, (op, n) in enumerate(ops):
            if helper and j == kill_at and w._helper is not None:
                os.kill(w._helper._proc.pid, signal.SIGKILL)  # (its jobs out: done here)
                w._helper._proc.wait()
            if op == "flush":
                w.flush()
            else:
                _rows(w, state, k, k + n)
                k += n
        w.close("complete")
    with h5py.File(logs[True]) as x, h5py.File(logs[False]) as y:
        kk = np.arange(total)
        for i, width in enumerate(widths):
            expected = np.sin(kk[:, None] * (i + 1) + np.arange(width, dtype=float))
            assert x[f"f{i}"].shape == (total, width)
            assert x[f"f{i}"][()].tobytes() == expected.tobytes(), (i, widths, ops)
        assert np.array_equal(x["n"][()], kk * 3)
        for name in [f"f{i}" for i in range(len(widths)) if widths[i]] + ["n"]:
            for r0 in range(0, total, chunk_rows):
                offset = (r0,) + (0,) * (x[name].ndim - 1)
                assert x[name].id.read_direct_chunk(offset) == \
                    y[name].id.read_direct_chunk(offset), (name, r0, widths, ops)


@pytest.mark.parametrize("helper", [True, False])
def test_a_row_cut_short_by_an_exception_is_left_out(tmp_path, helper):
    """A channel's read raises halfway through a row (after the first channel was read): the
    row is not logged, and the next rows line up in every channel, whether the caller appends
    the same step again or stops there."""
    for retry in (True, False):
        path = tmp_path / f"log{retry}.h5"
        w, state = _writer(path, helper)
        w.channels[1] = Channel("n", (), lambda: state["k"] * 7, "1", dtype=np.int32)
        reads = w._reads
        fail = {"at": 11}

        def n_read():
            if state["k"] == fail["at"]:
                fail["at"] = None
                raise RuntimeError("a signal could not be read")
            return state["k"] * 7

        w._reads = [reads[0], n_read]
        _rows(w, state, 0, 11)
        state["k"] = 11
        with pytest.raises(RuntimeError, match="could not be read"):
            w.append(11)
        if retry:
            _rows(w, state, 11, 20)
            w.close("complete")
            _check(path, 20)
        else:
            w.close("complete")
            _check(path, 11)


def test_helper_gone_mid_run_leaves_a_complete_log(tmp_path):
    path = tmp_path / "log.h5"
    w, state = _writer(path, True)
    _rows(w, state, 0, 12)
    os.kill(w._helper._proc.pid, signal.SIGKILL)  # e.g. the out-of-memory killer
    w._helper._proc.wait()
    _rows(w, state, 12, 40)
    assert not w._helper.alive
    w.close("complete")
    _check(path, 40)


def test_helper_is_off_without_gzip_or_when_switched_off(tmp_path, monkeypatch):
    w = LogWriter(str(tmp_path / "a.h5"), scenario_text="", scenario_sha256="", config_json="{}",
                  dt=0.001, decimation=1, compression="none")
    assert not w._use_helper
    w.abandon()
    monkeypatch.setenv("RAISIMCLI_DEFLATE_HELPER", "0")
    w = LogWriter(str(tmp_path / "b.h5"), scenario_text="", scenario_sha256="", config_json="{}",
                  dt=0.001, decimation=1, compression="gzip")
    assert not w._use_helper
    w.abandon()


def test_no_helper_without_a_python_to_run_it(tmp_path, monkeypatch):
    """A frozen application's executable is not Python: the writer compresses in its own process
    (as it does when the helper cannot start), and the log is whole."""
    monkeypatch.setattr("sys.frozen", True, raising=False)
    path = tmp_path / "log.h5"
    w, state = _writer(path, True)
    assert w._helper is None
    _rows(w, state, 0, 20)
    w.close("complete")
    _check(path, 20)


def test_closing_does_not_wait_for_an_idle_helper_and_collects_it_later():
    """Without jobs out, close() lets the helper exit on its own (its input closed) and keeps
    it to be collected; the next helper, or the interpreter's exit, collects it. With a job out,
    close() waits for the helper to finish it."""
    from raisimcli.log import deflate as d
    a = np.arange(4096, dtype=np.float64)
    idle = DeflateHelper(a.nbytes, chunk_bound(a.nbytes))
    idle.submit([a], 4)
    idle.result(4)
    idle.close()
    assert idle._proc in d._EXITING and idle._proc.stdin.closed
    idle._proc.wait(10)  # (it ends by itself)
    busy = DeflateHelper(a.nbytes, chunk_bound(a.nbytes))  # (collects the one that exited)
    assert idle._proc not in d._EXITING
    busy.submit([a], 4)
    busy.close()
    assert busy._proc.poll() is not None and busy._proc not in d._EXITING
    d._reap(wait=True)
    assert not d._EXITING
