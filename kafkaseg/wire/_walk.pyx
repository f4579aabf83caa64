# cython: language_level=3
"""Compiled header walk over whole batches (see :mod:`kafkaseg.wire.walk`); ``_walk_py.py`` is its pure-Python twin
with the same interface and results. Reads headers only, in C, about 10 ns a batch; allocates nothing from a
length field (a table's arrays are sized by a first pass that counts the whole batches in the buffer).

A walk reads bytes that cannot change while it runs, with the GIL released: ``buf`` itself when it is ``bytes`` (or
a memoryview of bytes: what every caller passes), else a copy of its first ``end`` bytes made when the walk starts.
A buffer that can change (a bytearray, a writable memoryview, a file mapping) is walked as it was then: another
thread cannot change it half-way through a walk, nor resize or free it under one."""

cimport cython
from cpython.buffer cimport PyBUF_SIMPLE, PyBuffer_Release, PyObject_GetBuffer
from cpython.bytes cimport PyBytes_CheckExact, PyBytes_FromStringAndSize
from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uint8_t, uint32_t

import numpy as np

IMPLEMENTATION = "cython"

cdef enum:
    _STOP_END = 0
    _STOP_INCOMPLETE = 1
    _STOP_MAGIC = 2
    _STOP_SIZE = 3
    _STOP_OFFSETS = 4

STOP_END = _STOP_END
STOP_INCOMPLETE = _STOP_INCOMPLETE
STOP_MAGIC = _STOP_MAGIC
STOP_SIZE = _STOP_SIZE
STOP_OFFSETS = _STOP_OFFSETS

COLUMNS = ("position", "size", "magic", "base_offset", "last_offset", "partition_leader_epoch", "crc", "attributes",
           "base_timestamp", "max_timestamp", "producer_id", "producer_epoch", "base_sequence", "records_count")

cdef int64_t _INT64_MAX = 0x7FFFFFFFFFFFFFFF


cdef inline uint32_t _u32(const uint8_t* p) noexcept nogil:
    return (<uint32_t>p[0] << 24) | (<uint32_t>p[1] << 16) | (<uint32_t>p[2] << 8) | <uint32_t>p[3]


cdef inline int64_t _i64(const uint8_t* p) noexcept nogil:
    return <int64_t>((<unsigned long long>_u32(p) << 32) | <unsigned long long>_u32(p + 4))


cdef inline int32_t _i32(const uint8_t* p) noexcept nogil:
    return <int32_t>_u32(p)


cdef inline int16_t _i16(const uint8_t* p) noexcept nogil:
    return <int16_t>((<unsigned int>p[0] << 8) | <unsigned int>p[1])


cdef inline Py_ssize_t _batch_at(const uint8_t* buf, Py_ssize_t pos, Py_ssize_t end, Py_ssize_t available_end,
                                 Py_ssize_t room, long long max_batch_size, int* reason) noexcept nogil:
    """The whole size of the acceptable batch at ``pos``, or 0 with ``reason`` set (``_batch_at`` in the twin)."""
    cdef Py_ssize_t in_buffer = end - pos
    cdef int8_t magic
    cdef int32_t size, delta
    cdef int64_t offset
    cdef Py_ssize_t total
    if in_buffer < room or in_buffer < 17 or available_end - pos < 17:
        reason[0] = _STOP_INCOMPLETE
        return 0
    offset = _i64(buf + pos)
    size = _i32(buf + pos + 8)
    magic = <int8_t>buf[pos + 16]
    if magic < 0 or magic > 2:
        reason[0] = _STOP_MAGIC
        return 0
    if size < (49 if magic == 2 else 22 if magic == 1 else 14) or (max_batch_size >= 0 and size > max_batch_size):
        reason[0] = _STOP_SIZE
        return 0
    total = 12 + <Py_ssize_t>size
    if total > available_end - pos or in_buffer < (61 if magic == 2 else 26 if magic == 1 else 18):
        reason[0] = _STOP_INCOMPLETE
        return 0
    if magic == 2:
        delta = _i32(buf + pos + 23)
        # lastOffset = baseOffset + delta must be >= baseOffset and leave a next offset (read_header's rules)
        if delta < 0 or (offset >= 0 and <int64_t>delta >= _INT64_MAX - offset):
            reason[0] = _STOP_OFFSETS
            return 0
    elif offset == _INT64_MAX:
        reason[0] = _STOP_OFFSETS
        return 0
    return total


cdef Py_ssize_t _walk(const uint8_t* buf, Py_ssize_t start, Py_ssize_t end, Py_ssize_t available_end,
                      Py_ssize_t room, long long max_batch_size, Py_ssize_t max_count, Py_ssize_t* count,
                      int* reason) noexcept nogil:
    cdef Py_ssize_t pos = start
    cdef Py_ssize_t total
    count[0] = 0
    reason[0] = _STOP_END
    while pos < available_end and count[0] != max_count:
        total = _batch_at(buf, pos, end, available_end, room, max_batch_size, reason)
        if total == 0:
            return pos
        pos += total
        count[0] += 1
    reason[0] = _STOP_END
    return pos


cdef struct _Span:
    Py_buffer view  # of bytes (buf's or a copy's), released by each entry point's finally
    const uint8_t* data
    Py_ssize_t end  # the caller's end, clipped to the buffer


cdef int _open(object buf, Py_ssize_t start, Py_ssize_t end, _Span* span) except -1:
    """Every entry point's set-up: check ``start``, and export into ``span`` bytes that cannot change during the
    walk (``buf``'s, or a copy of its first ``end`` bytes: see the module's doc). Once it returned, the caller
    releases ``span.view``."""
    if start < 0:
        raise ValueError(f"a walk cannot start before its buffer (start {start})")
    cdef bint unchanging = PyBytes_CheckExact(buf) or (type(buf) is memoryview and PyBytes_CheckExact(buf.obj))
    PyObject_GetBuffer(buf, &span.view, PyBUF_SIMPLE)
    span.end = min(end, span.view.len)
    if not unchanging:
        try:
            buf = PyBytes_FromStringAndSize(<const char*>span.view.buf, max(span.end, 0))
        finally:
            PyBuffer_Release(&span.view)
        PyObject_GetBuffer(buf, &span.view, PyBUF_SIMPLE)  # (the view holds the copy)
    span.data = <const uint8_t*>span.view.buf
    return 0


def skip(buf, Py_ssize_t start, Py_ssize_t end, Py_ssize_t available_end, Py_ssize_t room=0,
         long long max_batch_size=-1, Py_ssize_t max_count=-1):
    """``(position, count, reason)``: see :func:`kafkaseg.wire.walk.skip`."""
    cdef _Span span
    cdef Py_ssize_t pos, count
    cdef int reason
    _open(buf, start, end, &span)
    try:
        with nogil:
            pos = _walk(span.data, start, span.end, available_end, room, max_batch_size, max_count, &count, &reason)
    finally:
        PyBuffer_Release(&span.view)
    return pos, count, reason


cdef inline void _fields(const uint8_t* p, int64_t position, int64_t* row) noexcept nogil:
    """The 14 header fields (``COLUMNS``, in order) of the whole batch at ``p`` (file position ``position``): what
    ``headers`` makes a tuple of and ``columns`` a column entry of (``_unpack`` in the twin)."""
    cdef int magic = p[16]
    cdef int64_t offset = _i64(p)
    cdef int64_t ts
    row[0] = position
    row[1] = 12 + <int64_t>_i32(p + 8)
    row[2] = magic
    row[3] = offset
    if magic == 2:
        row[4] = offset + _i32(p + 23)
        row[5] = _i32(p + 12)
        row[6] = _u32(p + 17)
        row[7] = _i16(p + 21)
        row[8] = _i64(p + 27)
        row[9] = _i64(p + 35)
        row[10] = _i64(p + 43)
        row[11] = _i16(p + 51)
        row[12] = _i32(p + 53)
        row[13] = _i32(p + 57)
    else:
        ts = _i64(p + 18) if magic == 1 else -1
        row[4] = offset
        row[5] = -1
        row[6] = _u32(p + 12)
        row[7] = <int8_t>p[17]
        row[8] = ts
        row[9] = ts
        row[10] = -1
        row[11] = -1
        row[12] = -1
        row[13] = 1 if (p[17] & 7) == 0 else -1


def headers(buf, Py_ssize_t start, Py_ssize_t end, Py_ssize_t available_end, Py_ssize_t room=0,
            long long max_batch_size=-1, Py_ssize_t max_count=-1, Py_ssize_t base=0, cls=tuple):
    """``(position, reason, headers)``: see :func:`kafkaseg.wire.walk.headers`."""
    cdef _Span span
    cdef Py_ssize_t pos, total
    cdef int reason = _STOP_END
    cdef list found = []
    cdef int64_t row[14]
    _open(buf, start, end, &span)
    try:
        pos = start
        while pos < available_end and len(found) != max_count:
            total = _batch_at(span.data, pos, span.end, available_end, room, max_batch_size, &reason)
            if total == 0:
                break
            _fields(span.data + pos, pos + base, row)
            found.append(tuple.__new__(cls, (row[0], row[1], row[2], row[3], row[4], row[5], row[6], row[7], row[8],
                                             row[9], row[10], row[11], row[12], row[13])))
            pos += total
    finally:
        PyBuffer_Release(&span.view)
    return pos, reason, found


def columns(buf, Py_ssize_t start, Py_ssize_t end, Py_ssize_t available_end, Py_ssize_t room=0,
            long long max_batch_size=-1, Py_ssize_t base=0):
    """``(position, reason, arrays)``: see :func:`kafkaseg.wire.walk.columns`."""
    cdef _Span span
    cdef Py_ssize_t pos, count, i, n
    cdef int reason
    cdef int64_t[:, ::1] out
    cdef int64_t row[14]
    cdef Py_ssize_t k
    _open(buf, start, end, &span)
    try:
        with nogil:
            pos = _walk(span.data, start, span.end, available_end, room, max_batch_size, -1, &count, &reason)
        result = np.empty((14, count), dtype=np.int64)  # (bounded by the buffer: a batch is at least 26 bytes)
        out = result
        with nogil:
            i = start
            for n in range(count):  # (the bytes the first pass counted in: they cannot have changed)
                _fields(span.data + i, i + base, row)
                for k in range(14):
                    out[k, n] = row[k]
                i += row[1]
    finally:
        PyBuffer_Release(&span.view)
    return pos, reason, tuple(result)
