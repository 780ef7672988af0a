"""HDF5's shuffle and deflate filters, run on whole chunks in a helper process, with libdeflate.

gzip is much of what logging costs (docs/log.md): in the run's own process, about a third of
the main scenario's step with every signal (more with zlib). HDF5 runs its filters
in the writing thread, and a thread of ours would not help: on the 2-core machines we measured,
handing Python's lock between two threads slowed the step by about 45 % even when the other
thread only woke up once a millisecond. So the writer hands whole
chunks to a helper process instead and writes the compressed bytes with HDF5's direct chunk write
(`write_direct_chunk`): each stored chunk is HDF5's shuffle then a zlib stream, as HDF5's own
shuffle and deflate filters store it, and any HDF5 reader decompresses it with those filters.

The zlib streams are libdeflate's (https://github.com/ebiggers/libdeflate, through the `deflate`
package), not zlib's: on the log's chunks it compresses about twice as fast as zlib at the same
level, to a slightly smaller stream (docs/log.md has the table). Its output is deterministic for a
given version of the library, on every processor, where zlib's depends on the zlib the system
ships; the streams differ from zlib's, the data they hold does not.

The helper is this file run as a script (`python -I -S deflate.py FD SIZE LIBDIR`): the standard
library and the `deflate` package (from LIBDIR, the folder that holds it) only, so it starts in
a few milliseconds and imports nothing of the project. The chunks travel
through a shared memory map (a memfd, or an unlinked temporary file) of `slots` slots, each an
input area the writer fills and an output area the helper fills; the pipes carry only the offsets.
The helper ignores SIGINT (an interrupted run still writes its last chunks through it), exits
when its input pipe closes, and writes nothing to the terminal. If it dies, `DeflateHelper.result`
notices and deflates the chunks itself, with the same `deflate`.

The writer may also fill a slot's input in place (take_slot, input_array): its rows of a chunk,
one row after the other, with each dataset's columns side by side in the row. A segment then
names one dataset's columns, a `piece` of bytes at every `stride` bytes, which the helper
gathers before it compresses them (_gathered): the run's process copies nothing at a chunk's end,
and the gathering is done on the helper's CPU.

Protocol (little-endian int64s): the writer sends (slot, level, output offset, output capacity,
n), then n times (input offset, length, element size, stride, piece), stride 0 for contiguous
bytes; the helper answers (slot, n), then n times (output offset, length), length -1 when the
output area was too small.
"""

from __future__ import annotations

import atexit
import collections
import mmap
import os
import select
import signal
import struct
import subprocess
import sys
import tempfile

try:  # numpy where it is (the writer's process); never in the helper, which runs with -I -S
    import numpy as _np
except ImportError:
    _np = None

# libdeflate's bindings: the top-level package `deflate`, not this module. The helper (-I -S:
# no site-packages) takes it from the folder it was given, and nothing else from there (numpy
# would slow its start)
if __name__ == "__main__":
    sys.path.append(sys.argv[3])
import deflate as _libdeflate  # noqa: E402
if __name__ == "__main__":
    sys.path.pop()

# the folder that holds the `deflate` package, for the helper's path
_LIBDIR = os.path.dirname(os.path.dirname(os.path.abspath(_libdeflate.__file__)))

_JOB = struct.Struct("<5q")
_SEGMENT = struct.Struct("<5q")
_ANSWER = struct.Struct("<2q")
_PART = struct.Struct("<2q")


def deflate(data, itemsize: int, level: int) -> bytearray:
    """The bytes the log stores for one chunk `data` (a bytes-like object): HDF5's shuffle
    filter's (element size `itemsize`; 1: no shuffle): byte j of element i goes to j * n + i (n
    elements), as H5Z_filter_shuffle does; then a zlib stream (RFC 1950), which HDF5's deflate
    filter decompresses, written by libdeflate at `level`."""
    data = memoryview(data)
    data = data.cast("B") if data.nbytes else b""  # (a view with a 0 in its shape cannot cast)
    size = len(data)
    if itemsize > 1 and size // itemsize > 1:
        n = size // itemsize
        if _np is not None:  # the writer's process: numpy's transpose, 4 times faster
            b = _np.frombuffer(data, dtype=_np.uint8)
            data = b[:n * itemsize].reshape(n, itemsize).T.tobytes() + bytes(b[n * itemsize:])
        else:  # the helper (no numpy there): bytes' strided slices, which copy
            # in one C loop each (7 times faster than strided memoryview copies)
            b = bytes(data)
            data = b"".join([b[j:n * itemsize:itemsize] for j in range(itemsize)]) + \
                b[n * itemsize:]  # HDF5 copies a remainder as it is
    return _libdeflate.zlib_compress(data, level)


def _gathered(view, offset: int, length: int, stride: int, piece: int):
    """A segment's `length` bytes of `view` (a memoryview of bytes) from `offset`: contiguous
    when `stride` (or `piece`) is 0, else `piece` bytes at every `stride` bytes (one dataset's
    columns of a chunk's rows, which lie side by side with other datasets' in each row)."""
    if not stride or not piece:
        return view[offset:offset + length]
    end = offset + length // piece * stride
    return b"".join([view[at:at + piece] for at in range(offset, end, stride)])


def chunk_bound(nbytes: int) -> int:
    """The most bytes `deflate` writes for `nbytes` of input: libdeflate's bound (stored blocks
    of at least 5000 bytes, 5 bytes of header each, libdeflate_deflate_compress_bound) with
    blocks of 1000 bytes, and the zlib stream's 6 bytes. (Should a later libdeflate exceed it,
    the helper answers -1 and the chunk is compressed in the writer's process.)"""
    return nbytes + 5 * (nbytes // 1000 + 1) + 6


def _read_exact(fd: int, n: int) -> bytes | None:
    parts, left = [], n
    while left:
        b = os.read(fd, left)
        if not b:
            return None
        parts.append(b)
        left -= len(b)
    return b"".join(parts)


def _serve(fd: int, size: int) -> None:
    """The helper's loop: deflate each job's segments from the map into its output area."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    buf = mmap.mmap(fd, size)
    view = memoryview(buf)
    while True:
        head = _read_exact(0, _JOB.size)
        if head is None:
            break
        slot, level, out, capacity, n = _JOB.unpack(head)
        body = _read_exact(0, n * _SEGMENT.size)
        if body is None:
            break
        answer = [_ANSWER.pack(slot, n)]
        end = out + capacity
        for k in range(n):
            offset, length, itemsize, stride, piece = _SEGMENT.unpack_from(body, k * _SEGMENT.size)
            c = deflate(_gathered(view, offset, length, stride, piece), itemsize, level)
            if out + len(c) > end:
                answer.append(_PART.pack(out, -1))
                continue
            view[out:out + len(c)] = c
            answer.append(_PART.pack(out, len(c)))
            out += len(c)
        reply = b"".join(answer)
        while reply:
            reply = reply[os.write(1, reply):]


_EXITING: list = []  # helpers told to stop (their input closed), not yet waited for


def _wait(proc: subprocess.Popen) -> None:
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def _reap(wait: bool = False) -> None:
    """Collect the helpers that have exited since they were told to stop (all of them, waiting
    for each, with `wait`: at the interpreter's exit)."""
    for proc in list(_EXITING):
        if wait:
            _wait(proc)
        if proc.poll() is not None:
            _EXITING.remove(proc)


class DeflateHelper:
    """A helper process that deflates chunks while the run goes on (see the module).

    `input_bytes` and `output_bytes`: the size of one job's input (the chunks side by side) and
    of its output area (at least the sum of chunk_bound of its chunks). Jobs are answered in the
    order they were submitted."""

    def __init__(self, input_bytes: int, output_bytes: int, slots: int = 2):
        if not sys.executable or getattr(sys, "frozen", False):
            # an embedded interpreter, or a frozen application whose executable is not Python
            raise OSError("no Python executable to run the deflate helper")
        _reap()
        # (each area at a multiple of 64 bytes: input_array's rows aligned as numpy's own)
        self.slot_in, self.slot_out = -(-input_bytes // 64) * 64, -(-output_bytes // 64) * 64
        size = slots * (self.slot_in + self.slot_out)
        if hasattr(os, "memfd_create"):
            fd = os.memfd_create("raisimcli-deflate")
        else:  # an unlinked temporary file serves as well
            with tempfile.TemporaryFile() as handle:
                fd = os.dup(handle.fileno())
        try:
            os.ftruncate(fd, size)
            self._map = mmap.mmap(fd, size)
            self._proc = subprocess.Popen(
                [sys.executable, "-I", "-S", os.path.abspath(__file__), str(fd), str(size),
                 _LIBDIR],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                pass_fds=(fd,), bufsize=0)
        finally:
            os.close(fd)
        self._view = memoryview(self._map)
        self._free = list(range(slots))
        self._out = collections.deque()  # (slot, its segments, keep_slot) submitted
        self.alive = True

    @property
    def has_free_slot(self) -> bool:
        return bool(self._free)

    @property
    def jobs_out(self) -> int:
        return len(self._out)

    def take_slot(self) -> int:
        """A free slot, for the caller to fill in place (input_array) and hand to submit, or to
        give back with release. Call only when has_free_slot."""
        return self._free.pop()

    def release(self, slot: int) -> None:
        """Give back a slot taken with take_slot and not submitted."""
        self._free.append(slot)

    def input_array(self, slot: int, dtype, shape: tuple):
        """A numpy array of `shape` over the start of `slot`'s input area (take_slot)."""
        count = int(_np.prod(shape))
        return _np.frombuffer(self._map, dtype=dtype, count=count,
                              offset=slot * (self.slot_in + self.slot_out)).reshape(shape)

    def submit(self, chunks: list, level: int, shuffle: bool = True, *, slot: int | None = None,
               at: int = 0, out_at: int = 0, keep_slot: bool = False) -> None:
        """Hand a job to the helper: `chunks`, each one whole chunk, as a numpy array (copied
        into the slot's input area, from byte `at` on, in C order) or, in a `slot` filled in
        place (take_slot), as a segment of bytes already in its input area: (offset there,
        length, element size, stride, piece), see _gathered. Without `slot`, a free slot is
        taken (call only when has_free_slot). Each chunk is shuffled by its element size (an
        array's when `shuffle`; a segment carries its own) and deflated at `level`; result()
        gives them back in this order. Their sizes sum to at most input_bytes. The helper writes
        them into the slot's output area from byte `out_at` on. With `keep_slot`, result() does
        not free the slot: its owner may hand it several jobs (each its own part of the output
        area) and gives it back with release(). A helper that is gone is noticed by result()."""
        if slot is None:
            slot = self._free.pop()
        base = slot * (self.slot_in + self.slot_out)
        segments, offset = [], base + at
        for a in chunks:
            if isinstance(a, tuple):  # (bytes already in the slot)
                segments.append((base + a[0],) + a[1:])
                continue
            n = a.nbytes
            if n and not a.flags.c_contiguous:  # (a view of columns: copied once, in C order)
                _np.copyto(_np.frombuffer(self._view[offset:offset + n], dtype=a.dtype)
                           .reshape(a.shape), a)
            elif n:
                self._view[offset:offset + n] = memoryview(a).cast("B")  # (see deflate)
            segments.append((offset, n, a.itemsize if shuffle else 1, 0, 0))
            offset += n
        self._out.append((slot, segments, keep_slot))
        if self.alive:
            job = _JOB.pack(slot, level, base + self.slot_in + out_at, self.slot_out - out_at,
                            len(segments))
            try:
                self._proc.stdin.write(job + b"".join(_SEGMENT.pack(*s) for s in segments))
            except (OSError, ValueError):
                self.alive = False

    def ready(self) -> bool:
        """Whether result() would return without waiting."""
        return not self.alive or bool(select.select([self._proc.stdout], [], [], 0)[0])

    def result(self, level: int) -> list[bytes]:
        """The compressed chunks of the oldest job out, in submit's order, waiting for them.
        Should the helper be gone (or have answered -1), they are deflated here from the slot's
        input, with the same function."""
        slot, segments, keep_slot = self._out.popleft()
        parts = [(0, -1)] * len(segments)
        if self.alive:
            fd = self._proc.stdout.fileno()
            head = _read_exact(fd, _ANSWER.size)
            body = None if head is None else _read_exact(fd, len(segments) * _PART.size)
            if body is None or _ANSWER.unpack(head) != (slot, len(segments)):
                self.alive = False
            else:
                parts = [_PART.unpack_from(body, k * _PART.size) for k in range(len(segments))]
        out = []
        for (offset, length), (i_off, i_len, itemsize, stride, piece) in zip(parts, segments):
            if length < 0:
                out.append(deflate(_gathered(self._view, i_off, i_len, stride, piece), itemsize,
                                   level))
            else:
                out.append(bytes(self._view[offset:offset + length]))
        if not keep_slot:
            self._free.append(slot)
        return out

    def close(self) -> None:
        """Stop the helper (after the jobs out) and release the map. Without jobs out, the
        helper exits on its own once it reads the end of its input, and is not waited for here
        (a run's log would wait for it): _reap collects it later."""
        if self._proc.stdin is not None:
            try:
                self._proc.stdin.close()
            except OSError:
                pass
        if self._out:
            _wait(self._proc)
        else:
            _EXITING.append(self._proc)
        self._proc.stdout.close()
        self.alive = False
        try:
            self._view.release()
            self._map.close()
        except BufferError:  # arrays of input_array still held somewhere: the map is unmapped
            pass  # when the last of them goes


atexit.register(_reap, True)

if __name__ == "__main__":
    try:
        _serve(int(sys.argv[1]), int(sys.argv[2]))
    except OSError:  # the writer is gone (killed): nothing is waiting for the answer
        pass
