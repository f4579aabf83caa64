"""Pure-Python twin of ``_walk.pyx``: the header walk over whole batches, with the same interface and results.

See :mod:`kafkaseg.wire.walk` for what the functions do; this twin is what runs without the compiled module (or
with ``KAFKASEG_PURE=1``), and the reference the compiled one is tested against (``tests/test_header_walk.py``).
It does not call :func:`kafkaseg.wire.batch.read_header` (the tests hold all three to the same answers), but
follows the same rules in the same order.
"""

from __future__ import annotations

import struct

import numpy as np

IMPLEMENTATION = "python"

# why a walk stopped (``STOP_NAMES`` in kafkaseg.wire.walk)
STOP_END = 0  # reached ``end`` (or ``max_count`` batches)
STOP_INCOMPLETE = 1  # the header, or the body it announces, is not whole before the end (or ``room`` is short)
STOP_MAGIC = 2  # a magic other than 0-2
STOP_SIZE = 3  # a size below the format's minimum or above ``max_batch_size``
STOP_OFFSETS = 4  # a negative lastOffsetDelta, or a last offset that leaves no next offset in an int64

_INT64_MAX = (1 << 63) - 1
_PREFIX = struct.Struct(">qib")  # offset, size, magic (at 16: read with the 4 bytes before it skipped)
_V2 = struct.Struct(">qiibIhiqqqhii")
_V1 = struct.Struct(">qiIbbq")
_V0 = struct.Struct(">qiIbb")
_MIN_SIZE = (14, 22, 49)
_IN_BUFFER = (_V0.size, _V1.size, 61)  # header bytes that must be in the buffer


def _open(buf, start: int, end: int):
    """``(bytes, end)``: what a walk reads, ``buf`` itself when it cannot change (bytes, or a memoryview of bytes),
    else a copy of its first ``end`` bytes made now (``_open`` in the compiled walk: the buffer as it was when the
    walk started, whatever another thread writes during it), and ``end`` clipped to it."""
    if start < 0:
        raise ValueError(f"a walk cannot start before its buffer (start {start})")
    if not (type(buf) is bytes or (type(buf) is memoryview and type(buf.obj) is bytes)):
        with memoryview(buf) as view, view.cast("B") as octets:
            buf = bytes(octets[:max(end, 0)])
    return buf, min(end, len(buf))


def _batch_at(buf, pos: int, end: int, available_end: int, room: int, max_batch_size: int):
    """``(total, None)`` for a whole acceptable batch at ``pos``, else ``(0, stop reason)``."""
    in_buffer = end - pos
    if in_buffer < room or in_buffer < 17 or available_end - pos < 17:
        return 0, STOP_INCOMPLETE
    offset, size = struct.unpack_from(">qi", buf, pos)
    magic = struct.unpack_from(">b", buf, pos + 16)[0]
    if magic < 0 or magic > 2:
        return 0, STOP_MAGIC
    if size < _MIN_SIZE[magic] or (max_batch_size >= 0 and size > max_batch_size):
        return 0, STOP_SIZE
    total = 12 + size
    if total > available_end - pos or in_buffer < _IN_BUFFER[magic]:
        return 0, STOP_INCOMPLETE
    if magic == 2:
        delta = struct.unpack_from(">i", buf, pos + 23)[0]
        if delta < 0 or offset + delta >= _INT64_MAX:
            return 0, STOP_OFFSETS
    elif offset >= _INT64_MAX:
        return 0, STOP_OFFSETS
    return total, None


def skip(buf, start: int, end: int, available_end: int, room: int = 0, max_batch_size: int = -1,
         max_count: int = -1) -> tuple[int, int, int]:
    """``(position, count, reason)``: see :func:`kafkaseg.wire.walk.skip`."""
    buf, end = _open(buf, start, end)
    pos, count = start, 0
    while pos < available_end and count != max_count:
        total, reason = _batch_at(buf, pos, end, available_end, room, max_batch_size)
        if reason is not None:
            return pos, count, reason
        pos += total
        count += 1
    return pos, count, STOP_END


def _unpack(buf, pos: int, total: int, base: int) -> tuple:
    magic = buf[pos + 16]
    if magic == 2:
        (offset, _, epoch, _, crc, attributes, delta, base_ts, max_ts, pid, pepoch, base_seq,
         count) = _V2.unpack_from(buf, pos)
        return (pos + base, total, 2, offset, offset + delta, epoch, crc, attributes, base_ts, max_ts, pid, pepoch,
                base_seq, count)
    if magic == 1:
        offset, _, crc, _, attributes, ts = _V1.unpack_from(buf, pos)
    else:
        offset, _, crc, _, attributes = _V0.unpack_from(buf, pos)
        ts = -1
    return (pos + base, total, magic, offset, offset, -1, crc, attributes, ts, ts, -1, -1, -1,
            1 if attributes & 7 == 0 else -1)


def headers(buf, start: int, end: int, available_end: int, room: int = 0, max_batch_size: int = -1,
            max_count: int = -1, base: int = 0, cls=tuple) -> tuple[int, int, list]:
    """``(position, reason, headers)``: see :func:`kafkaseg.wire.walk.headers`."""
    buf, end = _open(buf, start, end)
    found = []
    pos = start
    reason = STOP_END
    while pos < available_end and len(found) != max_count:
        total, why = _batch_at(buf, pos, end, available_end, room, max_batch_size)
        if why is not None:
            reason = why
            break
        found.append(tuple.__new__(cls, _unpack(buf, pos, total, base)))
        pos += total
    return pos, reason, found


COLUMNS = ("position", "size", "magic", "base_offset", "last_offset", "partition_leader_epoch", "crc", "attributes",
           "base_timestamp", "max_timestamp", "producer_id", "producer_epoch", "base_sequence", "records_count")


def columns(buf, start: int, end: int, available_end: int, room: int = 0, max_batch_size: int = -1,
            base: int = 0) -> tuple[int, int, tuple]:
    """``(position, reason, arrays)``: see :func:`kafkaseg.wire.walk.columns`."""
    pos, reason, rows = headers(buf, start, end, available_end, room, max_batch_size, -1, base)
    arrays = tuple(np.array([row[k] for row in rows], dtype=np.int64) for k in range(len(COLUMNS)))
    return pos, reason, arrays
