# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True, initializedcheck=False
"""The compiled decoder: Kafka record batches -> Arrow buffers, with no Python object per record.

Same interface and output as the pure twin ``_kernel_py.py``, which carries the record grammar in its docstring and
is the reference in tests. Output columns grow in malloc'd buffers handed to Arrow without copying
(``pyarrow.foreign_buffer``); CRC-32C and decompression are one library call per batch.
"""

cimport cython
from cpython.buffer cimport (PyBUF_SIMPLE, PyBUF_WRITABLE, PyBuffer_FillInfo,
                             PyBuffer_Release, PyObject_GetBuffer)
from libc.stdint cimport int8_t, int16_t, int32_t, int64_t, uint8_t, uint32_t, uint64_t
from libc.stdlib cimport free, malloc, realloc
from libc.string cimport memcmp, memcpy, memset

import zlib

import pyarrow as pa

from kafkaseg import codecs as _codecs
from kafkaseg.decode.api import (
    INT64_MIN,
    MAX_PROBLEMS,
    REST_SKIPPED,
    Problem,
    STOP_CORRUPT,
    STOP_END,
    STOP_LIMIT,
    STOP_PARTIAL,
    STOP_PAST_END,
    TIMESTAMP_MS_TYPE,
    TIMESTAMP_TYPE,
    DecodeResult,
    DecodeStats,
    past_end_problem,
)
from kafkaseg.errors import (
    CorruptBatchError,
    CorruptDataError,
    CrcMismatchError,
    TruncatedDataError,
    UnsupportedMagicError,
)
from kafkaseg.schema import HEADERS_TYPE
from crc32c import crc32c as _crc32c  # the library call itself: no wrapper frame per batch
from kafkaseg.wire.text import java_utf8 as _java_utf8

IMPLEMENTATION = "cython"

cdef int64_t TIMESTAMP_LIMIT_MS = 9223372036854775  # (2**63 - 1) // 1000
cdef int64_t BINARY_LIMIT = 2147483647
cdef Py_ssize_t ROW_CHUNK = 65536  # rows records_v2 reserves at a time
cdef int64_t SEQUENCE_MODULUS = 2147483648  # sequences wrap at Int32.MAX (DefaultRecordBatch.incrementSequence)

cdef uint8_t CODEC_MASK = 0x07
cdef uint8_t TIMESTAMP_TYPE_MASK = 0x08
cdef uint8_t TRANSACTIONAL_MASK = 0x10
cdef uint8_t CONTROL_MASK = 0x20

cdef object _PAST_END_SENTINEL = object()


class _Frame(Exception):
    def __init__(self, cls, message, position):
        super().__init__(message)
        self.cls, self.message, self.position = cls, message, position


# -- big-endian reads -------------------------------------------------------------------------------------------------
cdef inline int64_t rd64(const uint8_t* p) noexcept nogil:
    return <int64_t>((<uint64_t>p[0] << 56) | (<uint64_t>p[1] << 48) | (<uint64_t>p[2] << 40) |
                     (<uint64_t>p[3] << 32) | (<uint64_t>p[4] << 24) | (<uint64_t>p[5] << 16) |
                     (<uint64_t>p[6] << 8) | <uint64_t>p[7])

cdef inline int32_t rd32(const uint8_t* p) noexcept nogil:
    return <int32_t>((<uint32_t>p[0] << 24) | (<uint32_t>p[1] << 16) | (<uint32_t>p[2] << 8) | <uint32_t>p[3])

cdef inline uint32_t rdu32(const uint8_t* p) noexcept nogil:
    return (<uint32_t>p[0] << 24) | (<uint32_t>p[1] << 16) | (<uint32_t>p[2] << 8) | <uint32_t>p[3]

cdef inline int16_t rd16(const uint8_t* p) noexcept nogil:
    return <int16_t>((<uint32_t>p[0] << 8) | <uint32_t>p[1])

cdef inline uint32_t rdu32le(const uint8_t* p) noexcept nogil:  # the codecs' framings are little-endian
    return <uint32_t>p[0] | (<uint32_t>p[1] << 8) | (<uint32_t>p[2] << 16) | (<uint32_t>p[3] << 24)


cdef extern from "_varint.h":
    # Zig-zag varint of up to 10 bytes: 0 on success; -1 past ``end``; -2 longer than 10 bytes.
    int read_varint "kafkaseg_read_varint" (const uint8_t** pp, const uint8_t* end, int64_t* out) noexcept nogil


cdef bint utf8_valid(const uint8_t* s, Py_ssize_t n) noexcept nogil:
    """Strict UTF-8 (as Python's codec: no surrogates, no overlongs, max U+10FFFF)."""
    cdef Py_ssize_t i = 0
    cdef uint8_t c, c1
    while i < n:
        c = s[i]
        if c < 0x80:
            i += 1
        elif c < 0xC2:
            return False
        elif c < 0xE0:
            if i + 1 >= n or (s[i + 1] & 0xC0) != 0x80:
                return False
            i += 2
        elif c < 0xF0:
            if i + 2 >= n:
                return False
            c1 = s[i + 1]
            if (c1 & 0xC0) != 0x80 or (s[i + 2] & 0xC0) != 0x80:
                return False
            if c == 0xE0 and c1 < 0xA0:
                return False
            if c == 0xED and c1 >= 0xA0:
                return False
            i += 3
        elif c < 0xF5:
            if i + 3 >= n:
                return False
            c1 = s[i + 1]
            if (c1 & 0xC0) != 0x80 or (s[i + 2] & 0xC0) != 0x80 or (s[i + 3] & 0xC0) != 0x80:
                return False
            if c == 0xF0 and c1 < 0x90:
                return False
            if c == 0xF4 and c1 >= 0x90:
                return False
            i += 4
        else:
            return False
    return True


# -- growable output buffers ------------------------------------------------------------------------------------------
# Output blocks are cached when Arrow lets go of them and handed to the next decode call. Without this, every call
# got fresh blocks from malloc (large ones are mmap'd by glibc), wrote to pages that faulted in one by one and
# unmapped them again on free: perf put a fifth of the kernel's time in page faults. The cache holds at most
# _CACHE_SLOTS blocks and _CACHE_MAX_BYTES in all, so it adds a constant to memory, independent of segment size.
# Every access happens with the GIL held (decode and Arrow's release of a foreign buffer's base object).
cdef enum:
    _CACHE_SLOTS = 32
cdef Py_ssize_t _CACHE_MAX_BYTES = 64 << 20
cdef Py_ssize_t _CACHE_MIN_BLOCK = 64 << 10  # smaller blocks come from malloc's own free lists cheaply
cdef char* _cache_ptr[_CACHE_SLOTS]
cdef Py_ssize_t _cache_cap[_CACHE_SLOTS]
cdef int _cache_n = 0
cdef Py_ssize_t _cache_bytes = 0


cdef char* _cache_take(Py_ssize_t need, Py_ssize_t* cap_out) noexcept:
    """The smallest cached block of at least ``need`` bytes (NULL if none), removed from the cache."""
    global _cache_n, _cache_bytes
    cdef int i, best = -1
    cdef char* p
    for i in range(_cache_n):
        if _cache_cap[i] >= need and (best < 0 or _cache_cap[i] < _cache_cap[best]):
            best = i
    if best < 0:
        return NULL
    p = _cache_ptr[best]
    cap_out[0] = _cache_cap[best]
    _cache_bytes -= _cache_cap[best]
    _cache_n -= 1
    _cache_ptr[best] = _cache_ptr[_cache_n]
    _cache_cap[best] = _cache_cap[_cache_n]
    return p


cdef void _cache_give(char* p, Py_ssize_t cap) noexcept:
    """Keep a block for reuse, making room by freeing smaller cached blocks if needed; else free it. Keeping the
    larger blocks matters: once 32 small blocks (validity bytes, key offsets) filled every slot, each decode's
    value data came from fresh pages again (perf: a sixth of a scan in page faults, in some runs only)."""
    global _cache_n, _cache_bytes
    cdef int i, smallest
    if cap < _CACHE_MIN_BLOCK or cap > _CACHE_MAX_BYTES:
        free(p)
        return
    while _cache_n == _CACHE_SLOTS or _cache_bytes + cap > _CACHE_MAX_BYTES:
        smallest = 0
        for i in range(1, _cache_n):
            if _cache_cap[i] < _cache_cap[smallest]:
                smallest = i
        if _cache_n == 0 or _cache_cap[smallest] >= cap:
            free(p)
            return
        free(_cache_ptr[smallest])
        _cache_bytes -= _cache_cap[smallest]
        _cache_n -= 1
        _cache_ptr[smallest] = _cache_ptr[_cache_n]
        _cache_cap[smallest] = _cache_cap[_cache_n]
    _cache_ptr[_cache_n] = p
    _cache_cap[_cache_n] = cap
    _cache_n += 1
    _cache_bytes += cap


# module-level C globals: no module attribute lookup per batch
cdef object _SNAPPY_RAW_INTO = _codecs.snappy_raw_into
cdef object _LZ4_BLOCK_INTO = _codecs.lz4_block_into
cdef object _ZSTD_FRAME_INTO = _codecs.zstd_frame_into
cdef object _CRC32C = _crc32c

cdef Py_ssize_t _fast_hits[8]
cdef Py_ssize_t _fast_misses[8]
memset(_fast_hits, 0, sizeof(_fast_hits))
memset(_fast_misses, 0, sizeof(_fast_misses))


def _codec_fast_path_counts():
    """{codec id: (batches decompressed by the kernel's fast path, batches handed to kafkaseg.codecs)} since
    import: for tests that check the fast paths are taken (and left) when they should be."""
    return {c: (_fast_hits[c], _fast_misses[c]) for c in range(1, 8)}


def _output_cache_info():
    """(blocks, bytes) held for reuse: for tests and benchmarks."""
    return _cache_n, _cache_bytes


def _output_cache_clear():
    """Free every cached block (tests start from an empty cache)."""
    global _cache_n, _cache_bytes
    while _cache_n:
        _cache_n -= 1
        free(_cache_ptr[_cache_n])
    _cache_bytes = 0


@cython.final
cdef class _RawView:
    """A buffer-protocol window on C memory that the decoder points somewhere new for every call into a library
    (crc32c, the codecs): one object per decoder instead of a new memoryview per batch. Callees only hold the
    buffer for the duration of the call."""
    cdef char* ptr
    cdef Py_ssize_t size
    cdef bint writable

    def __cinit__(self, bint writable=False):
        self.ptr = NULL
        self.size = 0
        self.writable = writable

    cdef inline _RawView set(self, const void* ptr, Py_ssize_t size):
        self.ptr = <char*>ptr
        self.size = size
        return self

    def __getbuffer__(self, Py_buffer* buffer, int flags):
        if (flags & PyBUF_WRITABLE) and not self.writable:
            raise BufferError("kafkaseg: read-only view")
        PyBuffer_FillInfo(buffer, self, self.ptr, self.size, 0 if self.writable else 1, flags)

    def __releasebuffer__(self, Py_buffer* buffer):
        pass


@cython.final
cdef class _Mem:
    """malloc'd memory owned by a Python object, so Arrow can hold it without a copy."""
    cdef char* ptr
    cdef Py_ssize_t size
    cdef Py_ssize_t cap

    def __cinit__(self):
        self.ptr = NULL
        self.size = 0
        self.cap = 0

    def __dealloc__(self):
        if self.ptr != NULL:
            _cache_give(self.ptr, self.cap)

    cdef inline int reserve(self, Py_ssize_t extra) except -1:
        cdef Py_ssize_t need = self.size + extra
        cdef Py_ssize_t cap
        cdef char* p
        if need <= self.cap:
            return 0
        cap = self.cap * 2 if self.cap else 4096
        while cap < need:
            cap *= 2
        if cap >= _CACHE_MIN_BLOCK:
            # Grow into a cached block (a copy of the old block, from cache): realloc would hand back fresh pages,
            # and writing values into them faulted page by page. The whole old capacity is copied, as realloc keeps
            # it: records_v2 writes a batch's rows past `size` and commits them after the batch.
            p = _cache_take(cap if self.ptr != NULL else need, &cap)
            if p != NULL:
                if self.ptr != NULL:
                    memcpy(p, self.ptr, self.cap)
                    _cache_give(self.ptr, self.cap)
                self.ptr = p
                self.cap = cap
                return 0
        p = <char*>realloc(self.ptr, cap)
        if p == NULL:
            raise MemoryError(f"kafkaseg: cannot grow an output buffer to {cap} bytes")
        self.ptr = p
        self.cap = cap
        return 0

    cdef inline int put(self, const void* src, Py_ssize_t n) except -1:
        if self.size + n > self.cap:
            self.reserve(n)
        memcpy(self.ptr + self.size, src, n)
        self.size += n
        return 0

    cdef inline int put_i64(self, int64_t v) except -1:
        if self.size + 8 > self.cap:
            self.reserve(8)
        (<int64_t*>(self.ptr + self.size))[0] = v
        self.size += 8
        return 0

    cdef inline int put_i32(self, int32_t v) except -1:
        if self.size + 4 > self.cap:
            self.reserve(4)
        (<int32_t*>(self.ptr + self.size))[0] = v
        self.size += 4
        return 0

    cdef inline int put_i16(self, int16_t v) except -1:
        if self.size + 2 > self.cap:
            self.reserve(2)
        (<int16_t*>(self.ptr + self.size))[0] = v
        self.size += 2
        return 0

    cdef inline int put_i8(self, int8_t v) except -1:
        if self.size + 1 > self.cap:
            self.reserve(1)
        (<int8_t*>(self.ptr + self.size))[0] = v
        self.size += 1
        return 0

    cdef object arrow(self):
        if self.size == 0:
            return pa.py_buffer(b"")
        return pa.foreign_buffer(<size_t>self.ptr, self.size, base=self)


@cython.final
cdef class _Binary:
    """A growing Arrow binary (or string) column: int32 offsets, data, and one validity byte per value, packed into
    Arrow's bitmap only if a null was appended (most columns never see one)."""
    cdef _Mem valid
    cdef _Mem offsets
    cdef _Mem data
    cdef Py_ssize_t length
    cdef Py_ssize_t nulls

    def __cinit__(self):
        self.valid = _Mem()
        self.offsets = _Mem()
        self.data = _Mem()
        self.length = 0
        self.nulls = 0
        self.offsets.put_i32(0)

    cdef int reserve_rows(self, Py_ssize_t rows) except -1:
        self.offsets.reserve(4 * rows)
        self.valid.reserve(rows)
        return 0

    cdef int grow_data(self, Py_ssize_t extra) except -1:
        """Room for ``extra`` more data bytes, or OverflowError past Arrow's 2 GiB binary limit."""
        if self.data.size + extra > BINARY_LIMIT:
            raise OverflowError("kafkaseg: one output column would exceed 2 GiB; lower maxBytesPerBatch")
        self.data.reserve(extra)
        return 0

    cdef inline int append(self, const uint8_t* src, Py_ssize_t n) except -1:
        if self.data.size + n > self.data.cap:
            self.grow_data(n)
        memcpy(self.data.ptr + self.data.size, src, n)
        self.data.size += n
        self.offsets.put_i32(<int32_t>self.data.size)
        self.valid.put_i8(1)
        self.length += 1
        return 0

    cdef inline int append_null(self) except -1:
        self.offsets.put_i32(<int32_t>self.data.size)
        self.valid.put_i8(0)
        self.nulls += 1
        self.length += 1
        return 0

    cdef object arrow(self, typ):
        validity = _pack_validity(self.valid, self.length) if self.nulls else None
        return pa.Array.from_buffers(typ, self.length, [validity, self.offsets.arrow(), self.data.arrow()],
                                     null_count=self.nulls)


cdef object _pack_validity(_Mem valid, Py_ssize_t length):
    """One byte per value (0 null, 1 valid) -> Arrow's LSB-first validity bitmap."""
    cdef _Mem bits = _Mem()
    cdef Py_ssize_t i, nbytes = (length + 7) >> 3
    cdef const uint8_t* src = <const uint8_t*>valid.ptr
    cdef uint8_t* dst
    bits.reserve(nbytes)
    dst = <uint8_t*>bits.ptr
    memset(dst, 0, nbytes)
    for i in range(length):
        dst[i >> 3] |= <uint8_t>(src[i] << (i & 7))
    bits.size = nbytes
    return bits.arrow()


# A batch that fails its checks halfway may already have written records; lenient reads skip it whole, so the
# decoder remembers where every column ended before the batch and cuts back to it.
cdef struct _BinaryMark:
    Py_ssize_t length, nulls, data, offsets, valid


cdef inline _BinaryMark _mark_binary(_Binary b) noexcept:
    cdef _BinaryMark m
    m.length = b.length
    m.nulls = b.nulls
    m.data = b.data.size
    m.offsets = b.offsets.size
    m.valid = b.valid.size
    return m


cdef inline void _reset_binary(_Binary b, _BinaryMark m) noexcept:
    b.length = m.length
    b.nulls = m.nulls
    b.data.size = m.data
    b.offsets.size = m.offsets
    b.valid.size = m.valid


# -- codec framing helpers (grammar in kafkaseg/codecs.py) -------------------------------------------------------------
cdef int64_t _snappy_length(const uint8_t* p, Py_ssize_t n) noexcept:
    """A raw snappy block's declared uncompressed length (little-endian base-128 varint, at most 32 bits), or -1."""
    cdef uint64_t v = 0
    cdef int shift = 0
    cdef Py_ssize_t i
    for i in range(min(n, 5)):
        v |= (<uint64_t>(p[i] & 0x7F)) << shift
        if not (p[i] & 0x80):
            return <int64_t>v if v <= 0xFFFFFFFFu else -1
        shift += 7
    return -1


# The header checksum byte of a FLG 0x60 frame for each block-size code (xxh32 of FLG and BD, second byte).
cdef uint8_t _LZ4_HC_FLG60[8]
for _code in range(8):
    _LZ4_HC_FLG60[_code] = (_codecs._xxh32_short(bytes([0x60, _code << 4])) >> 8) & 0xFF


cdef Py_ssize_t _lz4_block_max(int code) noexcept:
    if code == 4:
        return 64 << 10
    if code == 5:
        return 256 << 10
    if code == 6:
        return 1 << 20
    if code == 7:
        return 4 << 20
    return 0


cdef Py_ssize_t _xerial_block(const uint8_t* src, Py_ssize_t n, Py_ssize_t pos, Py_ssize_t* block_len,
                              int64_t* declared) noexcept:
    """The xerial snappy block at ``pos``: its length and declared uncompressed size; where the next block starts,
    or -1 when the block is malformed."""
    if n - pos < 4:
        return -1
    block_len[0] = <Py_ssize_t>rd32(src + pos)
    if block_len[0] < 0 or block_len[0] > n - pos - 4:
        return -1
    declared[0] = _snappy_length(src + pos + 4, block_len[0])
    if declared[0] < 0:
        return -1
    return pos + 4 + block_len[0]


cdef Py_ssize_t _lz4_block(const uint8_t* src, Py_ssize_t n, Py_ssize_t pos, Py_ssize_t block_max,
                           uint32_t* size) noexcept:
    """The lz4 frame block header at ``pos``: ``size`` gets the data size with the high "stored uncompressed" bit
    (0 for the end mark); returns where the data starts, or -1 when the size is past the frame or the block maximum."""
    if n - pos < 4:
        return -1
    size[0] = rdu32le(src + pos)
    if (size[0] & 0x7FFFFFFFu) > <uint32_t>block_max or (size[0] & 0x7FFFFFFFu) > <uint32_t>(n - pos - 4):
        return -1
    return pos + 4


cdef Py_ssize_t _zstd_single_frame(const uint8_t* p, Py_ssize_t n, Py_ssize_t* frame_end,
                                   int64_t* content_size) noexcept:
    """The most one zstd data frame at ``p`` can decode to (its content size, else raw/RLE sizes plus the block
    maximum per compressed block) and where it ends; -1 for anything else (skippable frames, reserved bits,
    dictionary ids, truncation)."""
    cdef uint8_t descriptor, wd
    cdef int fcs_flag, fcs_size
    cdef bint single
    cdef Py_ssize_t pos, header_end, bound = 0, block_max, block_size
    cdef uint64_t window, window_base, cs = 0
    cdef uint32_t block_header
    cdef int block_type, i
    if n < 6 or rdu32le(p) != 0xFD2FB528u:
        return -1
    descriptor = p[4]
    if descriptor & 0x08 or descriptor & 0x03:  # reserved bit; dictionary id
        return -1
    single = (descriptor & 0x20) != 0
    fcs_flag = descriptor >> 6
    if fcs_flag == 0:
        fcs_size = 1 if single else 0
    else:
        fcs_size = 2 if fcs_flag == 1 else (4 if fcs_flag == 2 else 8)
    header_end = 5 + (0 if single else 1) + fcs_size
    if header_end > n:
        return -1
    content_size[0] = -1
    if fcs_size:
        for i in range(fcs_size):
            cs |= (<uint64_t>p[header_end - fcs_size + i]) << (8 * i)
        if fcs_size == 2:
            cs += 256
        if cs > (1 << 40):
            return -1
        content_size[0] = <int64_t>cs
    if single:
        window = cs
    else:
        wd = p[5]
        window_base = (<uint64_t>1) << (10 + (wd >> 3))
        window = window_base + (window_base >> 3) * (wd & 0x07)
    block_max = <Py_ssize_t>min(window, <uint64_t>(128 * 1024))
    pos = header_end
    while True:
        if n - pos < 3:
            return -1
        block_header = <uint32_t>p[pos] | (<uint32_t>p[pos + 1] << 8) | (<uint32_t>p[pos + 2] << 16)
        block_type = (block_header >> 1) & 0x03
        block_size = <Py_ssize_t>(block_header >> 3)
        if block_type == 0:
            pos += 3 + block_size
            bound += block_size
        elif block_type == 1:
            pos += 4
            bound += block_size
        elif block_type == 2:
            pos += 3 + block_size
            bound += block_max
        else:
            return -1
        if pos > n:
            return -1
        if block_header & 0x01:
            break
    if descriptor & 0x04:
        pos += 4
        if pos > n:
            return -1
    frame_end[0] = pos
    return <Py_ssize_t>content_size[0] if content_size[0] >= 0 else bound


# -- the decoder ------------------------------------------------------------------------------------------------------
@cython.final
cdef class _Decoder:
    # request
    cdef object path
    cdef int64_t base_position
    cdef bint verify_crc, include_control, include_headers, include_metadata, include_key, include_value, lenient
    cdef bint allow_unordered_inner_offsets  # DecodeRequest's: dump takes a legacy wrapper's records as stored
    cdef bint ts_ms  # timestamp_unit "ms": Kafka's milliseconds as they are (no range check, Java's wrapping sum)
    cdef int64_t ts_scale  # 1000 (microseconds, Spark's unit) or 1
    cdef int64_t min_offset, max_offset, max_records, max_bytes, max_batch_bytes, max_decompressed, bytes_after
    cdef int n_aborted
    cdef int64_t* aborted  # (pid, first, last) triples
    # output
    cdef _Binary keys, values, hkeys, hvalues
    cdef _Mem offsets, timestamps, ts_types, h_offsets, h_valid
    cdef Py_ssize_t h_nulls, h_count
    cdef _Mem m_epoch, m_pid, m_pepoch, m_seq, m_txn, m_ctrl, m_magic, m_codec, m_batch, m_pos
    cdef Py_ssize_t n
    cdef int64_t nbytes
    cdef object stats
    cdef list decoders  # codec id -> kafkaseg.codecs decoder, looked up once per buffer
    cdef _Mem scratch  # decompressed payloads (fast paths), reused from batch to batch
    cdef _RawView in_view, out_view  # handed to crc32c and the codecs
    cdef object zstd_dctx
    cdef object zstd_piece  # the last small zstd frame's output (decoded in place)
    cdef Py_ssize_t n_batches, n_out_of_range, n_control, n_aborted_batches
    cdef object whole  # the Python object behind the input buffer (for slicing to codecs / crc)
    # mark()/rollback()
    cdef Py_ssize_t mk_n
    cdef int64_t mk_nbytes
    cdef _BinaryMark mk_keys, mk_values, mk_hkeys, mk_hvalues
    cdef Py_ssize_t mk_fixed[7]
    cdef Py_ssize_t mk_meta[10]
    cdef list meta_columns

    def __cinit__(self):
        self.aborted = NULL

    def __dealloc__(self):
        if self.aborted != NULL:
            free(self.aborted)

    cdef void setup(self, req) except *:
        cdef int i
        self.path = req.path
        self.base_position = req.base_position
        self.verify_crc = req.verify_crc
        self.include_control = req.include_control
        self.include_headers = req.include_headers
        self.include_metadata = req.include_metadata
        self.include_key = req.include_key
        self.include_value = req.include_value
        self.lenient = req.lenient
        self.allow_unordered_inner_offsets = req.allow_unordered_inner_offsets
        self.ts_ms = req.timestamp_unit == "ms"
        self.ts_scale = 1 if self.ts_ms else 1000
        self.min_offset = req.min_offset
        self.max_offset = req.max_offset
        self.max_records = req.max_records
        self.max_bytes = req.max_bytes
        self.max_batch_bytes = req.max_batch_bytes
        self.max_decompressed = req.max_decompressed_bytes
        self.bytes_after = req.bytes_after
        self.n_aborted = len(req.aborted)
        if self.n_aborted:
            self.aborted = <int64_t*>malloc(sizeof(int64_t) * 3 * self.n_aborted)
            if self.aborted == NULL:
                raise MemoryError()
            for i, (pid, first, last) in enumerate(req.aborted):
                self.aborted[3 * i] = pid
                self.aborted[3 * i + 1] = first
                self.aborted[3 * i + 2] = last
        self.keys = _Binary()
        self.values = _Binary()
        self.offsets = _Mem()
        self.timestamps = _Mem()
        self.ts_types = _Mem()
        self.n = 0
        self.nbytes = 0
        if self.include_headers:
            self.hkeys = _Binary()
            self.hvalues = _Binary()
            self.h_offsets = _Mem()
            self.h_valid = _Mem()
            self.h_offsets.put_i32(0)
            self.h_nulls = 0
            self.h_count = 0
        if self.include_metadata:
            self.m_epoch = _Mem(); self.m_pid = _Mem(); self.m_pepoch = _Mem(); self.m_seq = _Mem()
            self.m_txn = _Mem(); self.m_ctrl = _Mem(); self.m_magic = _Mem(); self.m_codec = _Mem()
            self.m_batch = _Mem(); self.m_pos = _Mem()
            self.meta_columns = [self.m_epoch, self.m_pid, self.m_pepoch, self.m_seq, self.m_txn, self.m_ctrl,
                                 self.m_magic, self.m_codec, self.m_batch, self.m_pos]
        self.stats = DecodeStats()
        self.decoders = [None] * 8
        self.scratch = _Mem()
        self.in_view = _RawView(False)
        self.out_view = _RawView(True)
        self.zstd_dctx = None
        self.n_batches = self.n_out_of_range = self.n_control = self.n_aborted_batches = 0

    cdef int presize(self, Py_ssize_t input_len) except -1:
        """Reserve output capacity from the input's size, so columns rarely grow: growing a heap block with
        realloc copies everything written so far (perf showed it doubling the time spent in memmove). The
        reservation is bounded by the output limits (maxRecordsPerBatch at 256 bytes a record, maxBytesPerBatch),
        so small configured batches stay small; shrinking afterwards was measured slower (it unmaps memory that
        the next batch then faults back in)."""
        cdef Py_ssize_t rows = min(self.max_records, input_len // 32 + 1)
        cdef Py_ssize_t data = min(input_len, self.max_bytes, 256 * rows)
        if self.include_value:
            self.values.data.reserve(data)
        if self.include_key:
            self.keys.data.reserve(data // 4)
        self.values.offsets.reserve(4 * rows)
        self.keys.offsets.reserve(4 * rows)
        self.offsets.reserve(8 * rows)
        self.timestamps.reserve(8 * rows)
        self.ts_types.reserve(4 * rows)
        return 0

    cdef bint is_aborted(self, int64_t pid, int64_t base) noexcept:
        cdef int i
        for i in range(self.n_aborted):
            if self.aborted[3 * i] == pid and self.aborted[3 * i + 1] <= base <= self.aborted[3 * i + 2]:
                return True
        return False

    cdef inline int check_ts(self, int64_t ms, Py_ssize_t where) except -1:
        if not self.ts_ms and (ms < -TIMESTAMP_LIMIT_MS or ms > TIMESTAMP_LIMIT_MS):
            raise _Frame(CorruptBatchError, f"timestamp {ms} ms is outside the representable range "
                         "(microseconds in a 64-bit long, as Spark stores timestamps: a producer that sent "
                         "nanoseconds?)", where)
        return 0

    cdef inline int emit_common(self, int64_t offset, int64_t ts, int32_t ts_type) except -1:
        self.offsets.put_i64(offset)
        self.timestamps.put_i64(ts * self.ts_scale)
        self.ts_types.put_i32(ts_type)
        self.n += 1
        return 0

    cdef inline int emit_meta(self, int32_t epoch, int64_t pid, int16_t pepoch, int32_t seq, bint txn, bint ctrl,
                              int8_t magic, int8_t codec, int64_t batch, int64_t position) except -1:
        self.m_epoch.put_i32(epoch)
        self.m_pid.put_i64(pid)
        self.m_pepoch.put_i16(pepoch)
        self.m_seq.put_i32(seq)
        self.m_txn.put_i8(txn)
        self.m_ctrl.put_i8(ctrl)
        self.m_magic.put_i8(magic)
        self.m_codec.put_i8(codec)
        self.m_batch.put_i64(batch)
        self.m_pos.put_i64(position)
        return 0

    cdef inline int headers_null(self) except -1:
        self.h_valid.put_i8(0)
        self.h_nulls += 1
        self.h_offsets.put_i32(<int32_t>self.h_count)
        return 0

    cdef inline int headers_present(self) except -1:
        self.h_valid.put_i8(1)
        self.h_offsets.put_i32(<int32_t>self.h_count)
        return 0

    cdef void mark(self) noexcept:
        """Remember where every column ends (before a batch), for :meth:`rollback`."""
        cdef int i
        self.mk_n = self.n
        self.mk_nbytes = self.nbytes
        self.mk_keys = _mark_binary(self.keys)
        self.mk_values = _mark_binary(self.values)
        self.mk_fixed[0] = self.offsets.size
        self.mk_fixed[1] = self.timestamps.size
        self.mk_fixed[2] = self.ts_types.size
        if self.include_headers:
            self.mk_hkeys = _mark_binary(self.hkeys)
            self.mk_hvalues = _mark_binary(self.hvalues)
            self.mk_fixed[3] = self.h_offsets.size
            self.mk_fixed[4] = self.h_valid.size
            self.mk_fixed[5] = self.h_nulls
            self.mk_fixed[6] = self.h_count
        if self.include_metadata:
            for i in range(10):
                self.mk_meta[i] = (<_Mem>self.meta_columns[i]).size

    cdef void rollback(self) noexcept:
        """Drop whatever was written since :meth:`mark`: a corrupt batch is skipped whole."""
        cdef int i
        self.n = self.mk_n
        self.nbytes = self.mk_nbytes
        _reset_binary(self.keys, self.mk_keys)
        _reset_binary(self.values, self.mk_values)
        self.offsets.size = self.mk_fixed[0]
        self.timestamps.size = self.mk_fixed[1]
        self.ts_types.size = self.mk_fixed[2]
        if self.include_headers:
            _reset_binary(self.hkeys, self.mk_hkeys)
            _reset_binary(self.hvalues, self.mk_hvalues)
            self.h_offsets.size = self.mk_fixed[3]
            self.h_valid.size = self.mk_fixed[4]
            self.h_nulls = self.mk_fixed[5]
            self.h_count = self.mk_fixed[6]
        if self.include_metadata:
            for i in range(10):
                (<_Mem>self.meta_columns[i]).size = self.mk_meta[i]

    # v2 ----------------------------------------------------------------------------------------------------------
    cdef int decode_v2(self, const uint8_t* buf, Py_ssize_t pos, Py_ssize_t total, int64_t last_seen,
                       int64_t* last_out) except -1:
        """Decode one v2 batch; sets ``last_out`` to its last offset. Returns 1 when the batch starts at or past
        ``max_offset`` (nothing further can match), else 0."""
        cdef const uint8_t* b = buf + pos
        cdef int64_t base_offset = rd64(b)
        cdef int32_t epoch = rd32(b + 12)
        cdef uint32_t crc = rdu32(b + 17)
        cdef int16_t attributes = rd16(b + 21)
        cdef int32_t last_delta = rd32(b + 23)
        cdef int64_t base_ts = rd64(b + 27)
        cdef int64_t max_ts = rd64(b + 35)
        cdef int64_t producer_id = rd64(b + 43)
        cdef int16_t producer_epoch = rd16(b + 51)
        cdef int32_t base_sequence = rd32(b + 53)
        cdef int32_t count = rd32(b + 57)
        cdef int64_t last_offset = base_offset + last_delta
        cdef bint is_control, is_txn, log_append
        cdef int codec
        cdef Py_buffer dview
        cdef bint have_dview = False
        cdef const uint8_t* data
        cdef const uint8_t* p
        cdef const uint8_t* data_end
        cdef Py_ssize_t fast_len = 0
        cdef uint32_t actual

        if last_offset < base_offset:
            raise _Frame(CorruptBatchError,
                         f"batch last offset {last_offset} is below its base offset {base_offset}", pos)
        if base_offset <= last_seen:
            raise _Frame(CorruptBatchError,
                         f"non-monotonic offsets: batch base offset {base_offset} follows offset {last_seen}", pos)
        if self.verify_crc:
            actual = _CRC32C(self.in_view.set(b + 21, total - 21))
            if actual != crc:
                raise _Frame(CrcMismatchError, f"CRC-32C mismatch in batch at offset {base_offset}: stored {crc}, "
                                               f"computed {actual}", pos)
        if base_offset >= self.max_offset:
            return 1
        if last_offset < self.min_offset:
            self.n_out_of_range += 1
            last_out[0] = last_offset
            return 0
        is_control = (attributes & CONTROL_MASK) != 0
        is_txn = (attributes & TRANSACTIONAL_MASK) != 0
        if is_control and not self.include_control:
            self.n_control += 1
            last_out[0] = last_offset
            return 0
        if is_txn and not is_control and self.n_aborted and self.is_aborted(producer_id, base_offset):
            self.n_aborted_batches += 1
            last_out[0] = last_offset
            return 0
        if count < 0:
            raise _Frame(CorruptBatchError, f"negative record count {count}", pos)
        codec = attributes & CODEC_MASK
        log_append = (attributes & TIMESTAMP_TYPE_MASK) != 0
        decompressed = None
        try:
            if codec:
                data = self.decompress_fast(codec, b + 61, total - 61, &fast_len)
                if data != NULL:
                    data_end = data + fast_len
                else:
                    decoder = self.decoders[codec]
                    if decoder is None:
                        decoder = self.decoders[codec] = _codecs.decoder_for(codec)
                    # an owned slice (it keeps the input exported, so a traceback holding it cannot outlive a
                    # mapping or a reused read buffer)
                    decompressed = decoder(memoryview(self.whole)[pos + 61:pos + total], self.max_decompressed, 2)
                    PyObject_GetBuffer(decompressed, &dview, PyBUF_SIMPLE)
                    have_dview = True
                    data = <const uint8_t*>dview.buf
                    data_end = data + dview.len
            else:
                data = b + 61
                data_end = b + total
            if count > (data_end - data) // 7 + 1:
                raise _Frame(CorruptBatchError, f"record count {count} cannot fit in {data_end - data} bytes", pos)
            self.n_batches += 1
            p = self.records_v2(data, data_end, pos, count, base_offset, last_offset, last_seen, base_ts, max_ts,
                                log_append, epoch, producer_id, producer_epoch, base_sequence, is_txn, is_control,
                                codec)
            if p != data_end:
                raise _Frame(CorruptBatchError, f"{data_end - p} bytes left after the batch's {count} records", pos)
        finally:
            if have_dview:
                PyBuffer_Release(&dview)
        last_out[0] = last_offset
        return 0

    # codec fast paths ----------------------------------------------------------------------------------------------
    # Each walks its codec's framing in C (the grammar is in kafkaseg/codecs.py, which does the same walks), sizes
    # the reused scratch buffer from it, and decompresses into it with one library call per frame or block. It
    # returns NULL, leaving the batch to kafkaseg.codecs, for anything unusual (a bound over the limit, dictionary
    # ids, skippable or several zstd frames) and for every library failure, so kafkaseg.codecs alone decides what
    # is corrupt and words the error: the twins cannot differ there.
    cdef const uint8_t* decompress_fast(self, int codec, const uint8_t* src, Py_ssize_t n,
                                        Py_ssize_t* out_len) except? NULL:
        cdef const uint8_t* out = NULL
        try:
            if codec == 2 and _SNAPPY_RAW_INTO is not None:
                out = self.snappy_fast(src, n, out_len)
            elif codec == 3 and _LZ4_BLOCK_INTO is not None:
                out = self.lz4_fast(src, n, out_len)
            elif codec == 4 and _ZSTD_FRAME_INTO is not None:
                out = self.zstd_fast(src, n, out_len)
        except Exception:
            out = NULL
        if out == NULL:
            _fast_misses[codec] += 1
        else:
            _fast_hits[codec] += 1
        return out

    cdef const uint8_t* snappy_fast(self, const uint8_t* src, Py_ssize_t n, Py_ssize_t* out_len) except? NULL:
        cdef Py_ssize_t pos, block_len, total = 0, done = 0
        cdef int64_t declared
        if n >= 16 and memcmp(src, b"\x82SNAPPY\x00", 8) == 0:
            pos = 16
            while pos < n:  # first pass: every block's declared size, checked against the budget
                pos = _xerial_block(src, n, pos, &block_len, &declared)
                if pos < 0:
                    return NULL
                total += declared
                if total > self.max_decompressed:
                    return NULL
            self.scratch.reserve(total + 1)
            pos = 16
            while pos < n:
                # Every block is read and checked again: the input may be a shared mapping of a file that changes
                # between the passes, and nothing read in the first pass may size a write in the second.
                pos = _xerial_block(src, n, pos, &block_len, &declared)
                if pos < 0 or declared > total - done:
                    return NULL
                if _SNAPPY_RAW_INTO(self.in_view.set(src + pos - block_len, block_len),
                                    self.out_view.set(self.scratch.ptr + done, declared)) != declared:
                    return NULL
                done += <Py_ssize_t>declared
        else:
            declared = _snappy_length(src, n)
            if declared < 0 or declared > self.max_decompressed:
                return NULL
            done = <Py_ssize_t>declared
            self.scratch.reserve(done + 1)
            if _SNAPPY_RAW_INTO(self.in_view.set(src, n), self.out_view.set(self.scratch.ptr, done)) != done:
                return NULL
        out_len[0] = done
        return <const uint8_t*>self.scratch.ptr

    cdef const uint8_t* lz4_fast(self, const uint8_t* src, Py_ssize_t n, Py_ssize_t* out_len) except? NULL:
        """The frame Kafka's Java producer writes (KafkaLZ4BlockOutputStream: FLG 0x60 = version 01, independent
        blocks, no checksums, no content size; a correct header checksum): its blocks are decoded one by one
        with the block API straight into the scratch buffer. Any other frame goes to kafkaseg.codecs."""
        cdef Py_ssize_t pos = 7, block_max, bound = 0, done = 0, need
        cdef uint32_t size
        if n < 7 or rdu32le(src) != 0x184D2204u or src[4] != 0x60:
            return NULL
        block_max = _lz4_block_max((src[5] >> 4) & 0x07)
        if block_max == 0 or (src[5] & 0x8F) != 0 or src[6] != _LZ4_HC_FLG60[(src[5] >> 4) & 0x07]:
            return NULL
        while True:  # first pass: the blocks' bound, checked against the budget
            pos = _lz4_block(src, n, pos, block_max, &size)
            if pos < 0:
                return NULL
            if size == 0:
                break
            bound += <Py_ssize_t>(size & 0x7FFFFFFFu) if size & 0x80000000u else block_max
            pos += <Py_ssize_t>(size & 0x7FFFFFFFu)
        if bound > self.max_decompressed:
            return NULL
        self.scratch.reserve(bound + 1)
        pos = 7
        while True:
            # Every block header is read and checked again (the input may be a shared mapping that changes between
            # the passes): a write is only ever sized from values checked against the scratch buffer's bound here.
            pos = _lz4_block(src, n, pos, block_max, &size)
            if pos < 0:
                return NULL
            if size == 0:
                break
            need = <Py_ssize_t>(size & 0x7FFFFFFFu) if size & 0x80000000u else block_max
            if need > bound - done:
                return NULL
            if size & 0x80000000u:  # stored uncompressed
                memcpy(self.scratch.ptr + done, src + pos, need)
                done += need
            else:
                done += _LZ4_BLOCK_INTO(self.in_view.set(src + pos, size),
                                        self.out_view.set(self.scratch.ptr + done, block_max))
            pos += <Py_ssize_t>(size & 0x7FFFFFFFu)
        out_len[0] = done
        return <const uint8_t*>self.scratch.ptr

    cdef const uint8_t* zstd_fast(self, const uint8_t* src, Py_ssize_t n, Py_ssize_t* out_len) except? NULL:
        """One zstd frame (what Kafka's producers write): zstandard's reusable context for small frames, cramjam
        into the scratch buffer for large ones (above 256 KiB zstandard's allocation of the output dominates)."""
        cdef Py_ssize_t frame_end = 0, bound
        cdef int64_t content_size = -1
        bound = _zstd_single_frame(src, n, &frame_end, &content_size)
        if bound < 0 or frame_end != n or bound > self.max_decompressed:
            return NULL
        if bound <= (256 << 10):
            if self.zstd_dctx is None:
                self.zstd_dctx = _codecs.zstd_decompressor()
            # parsed where it lies: the bytes object stays referenced until the next batch replaces it
            self.zstd_piece = self.zstd_dctx.decompress(self.in_view.set(src, n), max_output_size=max(bound, 1))
            out_len[0] = len(<bytes>self.zstd_piece)
            return <const uint8_t*><char*><bytes>self.zstd_piece
        self.scratch.reserve(bound + 1)
        out_len[0] = _ZSTD_FRAME_INTO(self.in_view.set(src, n), self.out_view.set(self.scratch.ptr, bound))
        return <const uint8_t*>self.scratch.ptr

    cdef int reserve_rows(self, Py_ssize_t rows) except -1:
        """Capacity for ``rows`` rows past the committed end of every column records_v2 writes through pointers."""
        self.offsets.reserve(8 * rows)
        self.timestamps.reserve(8 * rows)
        self.ts_types.reserve(4 * rows)
        self.keys.reserve_rows(rows)
        self.values.reserve_rows(rows)
        return 0

    cdef const uint8_t* records_v2(self, const uint8_t* data, const uint8_t* data_end, Py_ssize_t pos, int32_t count,
                                   int64_t base_offset, int64_t last_offset, int64_t last_seen, int64_t base_ts,
                                   int64_t max_ts, bint log_append, int32_t epoch, int64_t producer_id,
                                   int16_t producer_epoch, int32_t base_sequence, bint is_txn, bint is_control,
                                   int codec) except NULL:
        """Parse a v2 batch's ``count`` records in ``[data, data_end)`` and append the in-range ones. Returns where
        parsing stopped (the caller checks it is ``data_end``).

        The fixed-width columns get room for up to ROW_CHUNK rows at a time and are written through local pointers, so
        the loop keeps no column state in memory it has to reload after every store; sizes are committed once,
        after the last record. Keys and values check their data capacity per record (a rare slow path grows
        them). Headers and metadata, both opt-in, use the checked appends."""
        cdef const uint8_t* p = data
        cdef const uint8_t* rec_end
        cdef const uint8_t* key_ptr
        cdef const uint8_t* value_ptr
        cdef const uint8_t* headers_ptr
        cdef int64_t length, ts_delta, offset_delta, key_len, value_len, header_count, hk_len, hv_len
        cdef int64_t offset, prev_offset = last_seen, timestamp
        cdef int64_t min_offset = self.min_offset, max_offset = self.max_offset
        cdef bint include_headers = self.include_headers, include_metadata = self.include_metadata
        cdef bint include_key = self.include_key, include_value = self.include_value
        cdef int32_t ts_type = 1 if log_append else 0
        cdef int64_t ts_scale = self.ts_scale
        cdef int32_t sequence, i, h
        cdef int rc
        cdef Py_ssize_t emitted = 0, k_nulls = 0, v_nulls = 0
        cdef _Binary keys = self.keys, values = self.values
        cdef int64_t* out_offset
        cdef int64_t* out_ts
        cdef int32_t* out_type
        cdef int32_t* k_offsets
        cdef int32_t* v_offsets
        cdef uint8_t* k_valid
        cdef uint8_t* v_valid
        cdef Py_ssize_t k_size, v_size, k_start, v_start
        # Rows are reserved ROW_CHUNK at a time, never for the whole declared count up front: a corrupt count (up
        # to payload/7) must not reserve gigabytes before the first record fails.
        cdef Py_ssize_t rows_reserved = 0  # the first kept record reserves the first chunk

        out_offset = out_ts = NULL
        out_type = k_offsets = v_offsets = NULL
        k_valid = v_valid = NULL
        k_size = k_start = keys.data.size
        v_size = v_start = values.data.size

        for i in range(count):
            rc = read_varint(&p, data_end, &length)
            if rc:
                self.varint_error(rc, pos)
            if length < 0 or length > data_end - p:
                raise _Frame(CorruptBatchError, f"record length {length} runs past its batch", pos)
            rec_end = p + length
            p += 1  # attributes
            rc = read_varint(&p, rec_end, &ts_delta)
            if rc:
                self.varint_error(rc, pos)
            rc = read_varint(&p, rec_end, &offset_delta)
            if rc:
                self.varint_error(rc, pos)
            offset = base_offset + offset_delta
            # Key and value are parsed inline, not through one shared helper: measured 6% slower that way (lengths
            # passed through memory instead of registers).
            rc = read_varint(&p, rec_end, &key_len)
            if rc:
                self.varint_error(rc, pos)
            key_ptr = p
            if key_len >= 0:
                if key_len > rec_end - p:
                    raise _Frame(CorruptBatchError, f"record key length {key_len} runs past its record", pos)
                p += key_len
            elif key_len != -1:
                raise _Frame(CorruptBatchError, f"invalid key length {key_len}", pos)
            rc = read_varint(&p, rec_end, &value_len)
            if rc:
                self.varint_error(rc, pos)
            value_ptr = p
            if value_len >= 0:
                if value_len > rec_end - p:
                    raise _Frame(CorruptBatchError, f"record value length {value_len} runs past its record", pos)
                p += value_len
            elif value_len != -1:
                raise _Frame(CorruptBatchError, f"invalid value length {value_len}", pos)
            rc = read_varint(&p, rec_end, &header_count)
            if rc:
                self.varint_error(rc, pos)
            if header_count < 0 or header_count > rec_end - p:
                raise _Frame(CorruptBatchError, f"invalid header count {header_count}", pos)
            headers_ptr = p
            # Walk the headers to validate them (and find the record's end) even when they are not kept.
            for h in range(header_count):
                rc = read_varint(&p, rec_end, &hk_len)
                if rc:
                    self.varint_error(rc, pos)
                if hk_len < 0 or hk_len > rec_end - p:
                    raise _Frame(CorruptBatchError, f"invalid header key length {hk_len}", pos)
                p += hk_len
                rc = read_varint(&p, rec_end, &hv_len)
                if rc:
                    self.varint_error(rc, pos)
                if hv_len >= 0:
                    if hv_len > rec_end - p:
                        raise _Frame(CorruptBatchError, f"invalid header value length {hv_len}", pos)
                    p += hv_len
                elif hv_len != -1:
                    raise _Frame(CorruptBatchError, f"invalid header value length {hv_len}", pos)
            if p != rec_end:
                raise _Frame(CorruptBatchError, f"record declares {length} bytes but its fields use "
                                                f"{length - (rec_end - p)}", pos)
            if offset <= prev_offset or offset < base_offset or offset > last_offset:
                raise _Frame(CorruptBatchError, f"record offset {offset} out of order in batch "
                                                f"[{base_offset}, {last_offset}]", pos)
            prev_offset = offset
            if offset < min_offset or offset >= max_offset:
                continue
            if log_append:
                timestamp = max_ts
            else:
                # Java's long sum, which wraps (unsigned arithmetic: no overflow); the record's timestamp is checked
                timestamp = <int64_t>(<uint64_t>base_ts + <uint64_t>ts_delta)
            if timestamp < -TIMESTAMP_LIMIT_MS or timestamp > TIMESTAMP_LIMIT_MS:
                self.check_ts(timestamp, pos)
            if emitted == rows_reserved:  # room for the next ROW_CHUNK rows (uncommitted rows stay in place)
                rows_reserved = min(<Py_ssize_t>count, rows_reserved + ROW_CHUNK)
                self.reserve_rows(rows_reserved)
                out_offset = <int64_t*>(self.offsets.ptr + self.offsets.size)
                out_ts = <int64_t*>(self.timestamps.ptr + self.timestamps.size)
                out_type = <int32_t*>(self.ts_types.ptr + self.ts_types.size)
                k_offsets = <int32_t*>(keys.offsets.ptr + keys.offsets.size)
                v_offsets = <int32_t*>(values.offsets.ptr + values.offsets.size)
                k_valid = <uint8_t*>(keys.valid.ptr + keys.valid.size)
                v_valid = <uint8_t*>(values.valid.ptr + values.valid.size)
            if key_len >= 0 and include_key:
                if k_size + key_len > keys.data.cap:
                    keys.data.size = k_size
                    keys.grow_data(key_len)
                memcpy(keys.data.ptr + k_size, key_ptr, key_len)
                k_size += key_len
                k_valid[emitted] = 1
            else:
                k_valid[emitted] = 0
                k_nulls += 1
            k_offsets[emitted] = <int32_t>k_size
            if value_len >= 0 and include_value:
                if v_size + value_len > values.data.cap:
                    values.data.size = v_size
                    values.grow_data(value_len)
                memcpy(values.data.ptr + v_size, value_ptr, value_len)
                v_size += value_len
                v_valid[emitted] = 1
            else:
                v_valid[emitted] = 0
                v_nulls += 1
            v_offsets[emitted] = <int32_t>v_size
            out_offset[emitted] = offset
            out_ts[emitted] = timestamp * ts_scale
            out_type[emitted] = ts_type
            emitted += 1
            if include_headers:
                if header_count == 0:
                    self.headers_null()
                else:
                    self.copy_headers(headers_ptr, rec_end, header_count, pos)
                    self.headers_present()
            if include_metadata:
                if base_sequence < 0:
                    sequence = -1
                else:
                    sequence = <int32_t>((<int64_t>base_sequence + offset_delta) % SEQUENCE_MODULUS)
                self.emit_meta(epoch, producer_id, producer_epoch, sequence, is_txn, is_control, 2, codec,
                               base_offset, self.base_position + pos)
        # commit
        if k_size > BINARY_LIMIT or v_size > BINARY_LIMIT:
            raise OverflowError("kafkaseg: one output column would exceed 2 GiB; lower maxBytesPerBatch")
        keys.data.size = k_size
        values.data.size = v_size
        keys.offsets.size += 4 * emitted
        values.offsets.size += 4 * emitted
        keys.valid.size += emitted
        values.valid.size += emitted
        keys.length += emitted
        values.length += emitted
        keys.nulls += k_nulls
        values.nulls += v_nulls
        self.offsets.size += 8 * emitted
        self.timestamps.size += 8 * emitted
        self.ts_types.size += 4 * emitted
        self.n += emitted
        self.nbytes += (k_size - k_start) + (v_size - v_start)
        return p

    cdef int copy_headers(self, const uint8_t* p, const uint8_t* rec_end, int64_t header_count,
                          Py_ssize_t pos) except -1:
        """Append one record's headers, whose framing the walk in records_v2 validated. Every length is checked
        again as it is copied (the input may be a shared mapping of a file that changed since the walk, and a length
        must never be trusted across two reads). A key that is not UTF-8 gets U+FFFD for each malformed sequence,
        checked on the copy: Kafka's Java consumer (so Spark) decodes keys that way, and non-Java clients can
        write any bytes there."""
        cdef int64_t h, hk_len, hv_len
        cdef Py_ssize_t start
        cdef bytes fixed
        for h in range(header_count):
            if read_varint(&p, rec_end, &hk_len) or hk_len < 0 or hk_len > rec_end - p:
                raise _Frame(CorruptBatchError, "invalid header key length (the batch changed while being read)", pos)
            start = self.hkeys.data.size
            self.hkeys.append(p, hk_len)
            if not utf8_valid(<const uint8_t*>self.hkeys.data.ptr + start, hk_len):
                fixed = _java_utf8((self.hkeys.data.ptr + start)[:hk_len]).encode("utf-8")
                self.hkeys.data.size = start  # take the raw key back and append its decoded form
                self.hkeys.offsets.size -= 4
                self.hkeys.valid.size -= 1
                self.hkeys.length -= 1
                self.hkeys.append(<const uint8_t*><char*>fixed, len(fixed))
                self.nbytes += len(fixed) - hk_len
            self.nbytes += hk_len
            p += hk_len
            if read_varint(&p, rec_end, &hv_len) or hv_len < -1 or hv_len > rec_end - p:
                raise _Frame(CorruptBatchError, "invalid header value length (the batch changed while being read)",
                             pos)
            if hv_len >= 0:
                self.hvalues.append(p, hv_len)
                self.nbytes += hv_len
                p += hv_len
            else:
                self.hvalues.append_null()
            self.h_count += 1
        return 0

    cdef int varint_error(self, int rc, Py_ssize_t pos) except -1:
        if rc == -1:
            raise _Frame(CorruptBatchError, "varint runs past the end of its record", pos)
        raise _Frame(CorruptBatchError, "varint longer than 10 bytes", pos)

    # lenient resynchronisation -------------------------------------------------------------------------------------
    cdef Py_ssize_t resync(self, const uint8_t* b, Py_ssize_t pos, Py_ssize_t end, int32_t size,
                           Py_ssize_t* need) except -3:
        """After bad framing at ``pos``: where the batch the bad one's declared ``size`` leads to starts, -1 when
        there is nothing plausible there, -2 with ``need`` set when that many bytes from ``pos`` must be in the
        buffer to decide (the twin's ``_resync`` and DecodeRequest's docstring have the rules)."""
        cdef int64_t data_end = end + self.bytes_after
        cdef int64_t limit = 12 + self.max_batch_bytes
        cdef int64_t at, n
        cdef int32_t next_size
        cdef int8_t magic
        cdef bint ok
        if size < 0 or size > self.max_batch_bytes:
            return -1
        at = pos + 12 + <int64_t>size
        if at == data_end:
            if at <= end:
                return <Py_ssize_t>at
            need[0] = <Py_ssize_t>(at - pos)
            return -2
        if data_end - at < 17:
            return -1
        n = at - pos + 17
        if n > limit:
            return -1
        if pos + n > end:
            need[0] = <Py_ssize_t>n
            return -2
        next_size = rd32(b + at + 8)
        magic = <int8_t>b[at + 16]
        if magic < 0 or magic > 2 or next_size < (14 if magic == 0 else (22 if magic == 1 else 49)) \
                or next_size > self.max_batch_bytes:
            return -1
        n = at - pos + 12 + <int64_t>next_size
        if n > limit or pos + n > data_end:
            return -1
        if pos + n > end:
            need[0] = <Py_ssize_t>n
            return -2
        if self.verify_crc:
            if magic == 2:
                ok = _CRC32C(self.in_view.set(b + at + 21, pos + n - at - 21)) == rdu32(b + at + 17)
            else:
                ok = (zlib.crc32(memoryview(self.whole)[at + 16:pos + n]) & 0xFFFFFFFF) == rdu32(b + at + 12)
            if not ok:
                return -1
        return <Py_ssize_t>at

    # legacy ------------------------------------------------------------------------------------------------------
    cdef tuple legacy_entry(self, const uint8_t* buf, Py_ssize_t pos, Py_ssize_t end, bint inner,
                            Py_ssize_t where, object owner):
        """(offset, total, magic, attributes, ts, key_pos, key_len, value_pos, value_len) of one legacy entry;
        ``inner``: it is inside a compressed wrapper, so its magic has not been checked yet."""
        cdef int64_t offset
        cdef int32_t size, key_len, value_len
        cdef uint32_t crc
        cdef int8_t magic, attributes
        cdef int64_t ts = -1
        cdef Py_ssize_t total, p, key_pos, value_pos
        if end - pos < 26:
            raise _Frame(TruncatedDataError, "legacy entry header runs past its buffer", where)
        offset = rd64(buf + pos)
        size = rd32(buf + pos + 8)
        crc = rdu32(buf + pos + 12)
        magic = <int8_t>buf[pos + 16]
        attributes = <int8_t>buf[pos + 17]
        if inner and magic != 0 and magic != 1:
            raise _Frame(CorruptBatchError, f"compressed message magic {magic} is not a legacy magic (0 or 1)",
                         where)
        total = 12 + <Py_ssize_t>size
        if size < (14 if magic == 0 else 22) or pos + total > end:
            raise _Frame(CorruptBatchError, f"legacy entry size {size} is invalid here", where)
        if self.verify_crc:
            actual = zlib.crc32(memoryview(owner)[pos + 16:pos + total]) & 0xFFFFFFFF
            if actual != crc:
                raise _Frame(CrcMismatchError, f"CRC-32 mismatch in legacy entry at offset {offset}: stored {crc}, "
                                               f"computed {actual}", where)
        p = pos + 18
        if magic == 1:
            ts = rd64(buf + p)
            p += 8
        key_len = rd32(buf + p)
        p += 4
        key_pos = p
        if key_len >= 0:
            if p + key_len + 4 > pos + total:
                raise _Frame(CorruptBatchError, f"legacy key length {key_len} runs past its entry", where)
            p += key_len
        elif key_len != -1:
            raise _Frame(CorruptBatchError, f"invalid legacy key length {key_len}", where)
        value_len = rd32(buf + p)
        p += 4
        value_pos = p
        if value_len >= 0:
            if p + value_len != pos + total:
                raise _Frame(CorruptBatchError, f"legacy value length {value_len} does not match its entry", where)
        elif value_len != -1 or p != pos + total:
            raise _Frame(CorruptBatchError, f"invalid legacy value length {value_len}", where)
        return (offset, total, magic, attributes, ts, key_pos, key_len, value_pos, value_len)

    cdef int emit_legacy(self, const uint8_t* buf, tuple entry, int64_t offset, int64_t ts, int32_t ts_type,
                         int8_t magic, int8_t codec, int64_t batch, Py_ssize_t pos) except -1:
        cdef Py_ssize_t key_pos = entry[5]
        cdef int32_t key_len = entry[6]
        cdef Py_ssize_t value_pos = entry[7]
        cdef int32_t value_len = entry[8]
        if key_len >= 0 and self.include_key:
            self.keys.append(buf + key_pos, key_len)
            self.nbytes += key_len
        else:
            self.keys.append_null()
        if value_len >= 0 and self.include_value:
            self.values.append(buf + value_pos, value_len)
            self.nbytes += value_len
        else:
            self.values.append_null()
        self.emit_common(offset, ts, ts_type)
        if self.include_headers:
            self.headers_null()
        if self.include_metadata:
            self.emit_meta(-1, -1, -1, -1, False, False, magic, codec, batch, self.base_position + pos)
        return 0

    cdef object decode_legacy(self, const uint8_t* buf, Py_ssize_t pos, Py_ssize_t total, int magic,
                              int64_t last_seen):
        entry = self.legacy_entry(buf, pos, pos + total, False, pos, self.whole)
        cdef int64_t offset = entry[0]
        cdef int attributes = entry[3]
        cdef int64_t ts = entry[4]
        cdef int codec = attributes & CODEC_MASK
        cdef bint log_append = magic == 1 and (attributes & TIMESTAMP_TYPE_MASK) != 0
        cdef int32_t ts_type = -1 if magic == 0 else (1 if log_append else 0)
        cdef Py_buffer dview
        cdef const uint8_t* data
        cdef Py_ssize_t dlen, p
        cdef int64_t base, first, prev, absolute, timestamp
        if codec == 0:
            if offset <= last_seen:
                raise _Frame(CorruptBatchError,
                             f"non-monotonic offsets: batch base offset {offset} follows offset {last_seen}", pos)
            if offset >= self.max_offset:
                return _PAST_END_SENTINEL
            self.n_batches += 1
            self.check_ts(ts, pos)
            if offset >= self.min_offset:
                self.emit_legacy(buf, entry, offset, ts, ts_type, magic, 0, offset, pos)
            return offset
        if offset < self.min_offset:
            if offset <= last_seen:
                raise _Frame(CorruptBatchError,
                             f"non-monotonic offsets: wrapper offset {offset} follows {last_seen}", pos)
            self.n_out_of_range += 1
            return offset
        if entry[8] < 0:
            raise _Frame(CorruptBatchError, "compressed legacy wrapper has a null value", pos)
        value_pos = entry[7]
        value_len = entry[8]
        decompressed = bytes(_codecs.decompress(codec, memoryview(self.whole)[value_pos:value_pos + value_len],
                                                max_output=self.max_decompressed, magic=magic))
        data = <const uint8_t*><char*>decompressed
        dlen = len(decompressed)
        inner = []
        p = 0
        while p < dlen:
            ientry = self.legacy_entry(data, p, dlen, True, pos, decompressed)
            if ientry[3] & CODEC_MASK:
                raise _Frame(CorruptBatchError, "compressed legacy entry nested inside a compressed wrapper", pos)
            inner.append(ientry)
            p += <Py_ssize_t>ientry[1]
        if not inner:
            raise _Frame(CorruptBatchError, "compressed legacy wrapper holds no inner records", pos)
        if magic == 1:
            last_relative = inner[len(inner) - 1][0]
            if offset == 0:
                base = 0
            elif offset < last_relative:
                raise _Frame(CorruptBatchError, f"wrapper offset {offset} is less than the last inner offset "
                                                f"{last_relative}", pos)
            else:
                base = offset - <int64_t>last_relative
        else:
            base = 0
        first = base + <int64_t>inner[0][0]
        self.n_batches += 1
        prev = last_seen
        for ientry in inner:
            absolute = base + <int64_t>ientry[0]
            # why inner offsets that repeat or go back are corruption though Kafka's DeepRecordsIterator
            # (clients/.../record/AbstractLegacyRecordBatch.java) does not check them: the twin's comment here
            if absolute > prev:
                prev = absolute
            elif not self.allow_unordered_inner_offsets:
                raise _Frame(CorruptBatchError, f"non-monotonic offsets: inner offset {absolute} of the compressed "
                                                f"legacy wrapper follows {prev}", pos)
            if absolute >= self.max_offset or absolute < self.min_offset:
                continue
            # the twin's _inner_timestamp has the rule (and why inner and wrapper magic may differ)
            if <int>ientry[2] == 0:
                timestamp = -1
            else:
                timestamp = ts if log_append else <int64_t>ientry[4]
            self.check_ts(timestamp, pos)
            self.emit_legacy(data, ientry, absolute, timestamp, ts_type, magic, codec, first, pos)
        if first >= self.max_offset:
            return _PAST_END_SENTINEL
        return prev

    # output --------------------------------------------------------------------------------------------------------
    cdef dict columns(self):
        cols = {
            "key": self.keys.arrow(pa.binary()),
            "value": self.values.arrow(pa.binary()),
            "offset": pa.Array.from_buffers(pa.int64(), self.n, [None, self.offsets.arrow()]),
            "timestamp": pa.Array.from_buffers(TIMESTAMP_MS_TYPE if self.ts_ms else TIMESTAMP_TYPE, self.n,
                                               [None, self.timestamps.arrow()]),
            "timestampType": pa.Array.from_buffers(pa.int32(), self.n, [None, self.ts_types.arrow()]),
        }
        if self.include_headers:
            struct_arr = pa.StructArray.from_arrays(
                [self.hkeys.arrow(pa.string()), self.hvalues.arrow(pa.binary())], fields=list(HEADERS_TYPE.value_type))
            validity = _pack_validity(self.h_valid, self.n) if self.h_nulls else None
            cols["headers"] = pa.ListArray.from_buffers(
                HEADERS_TYPE, self.n, [validity, self.h_offsets.arrow()], null_count=self.h_nulls,
                children=[struct_arr])
        if self.include_metadata:
            cols["leaderEpoch"] = pa.Array.from_buffers(pa.int32(), self.n, [None, self.m_epoch.arrow()])
            cols["producerId"] = pa.Array.from_buffers(pa.int64(), self.n, [None, self.m_pid.arrow()])
            cols["producerEpoch"] = pa.Array.from_buffers(pa.int16(), self.n, [None, self.m_pepoch.arrow()])
            cols["sequence"] = pa.Array.from_buffers(pa.int32(), self.n, [None, self.m_seq.arrow()])
            cols["isTransactional"] = pa.Array.from_buffers(pa.uint8(), self.n, [None, self.m_txn.arrow()]).cast(
                pa.bool_())
            cols["isControl"] = pa.Array.from_buffers(pa.uint8(), self.n, [None, self.m_ctrl.arrow()]).cast(
                pa.bool_())
            cols["magic"] = pa.Array.from_buffers(pa.int8(), self.n, [None, self.m_magic.arrow()])
            cols["codec"] = pa.Array.from_buffers(pa.int8(), self.n, [None, self.m_codec.arrow()])
            cols["batchOffset"] = pa.Array.from_buffers(pa.int64(), self.n, [None, self.m_batch.arrow()])
            cols["position"] = pa.Array.from_buffers(pa.int64(), self.n, [None, self.m_pos.arrow()])
        return cols

    cdef note(self, frame, Py_ssize_t nbytes, int64_t last_seen):
        # the twin's _note: the region's bytes, and the offsets it makes unreadable start after last_seen
        problems = self.stats.problems
        if len(problems) < MAX_PROBLEMS:
            problems.append(Problem(self.path, self.base_position + frame.position, frame.message, nbytes,
                                    None if last_seen == INT64_MIN else last_seen + 1, error=frame.cls))


def decode(buf, req):
    """Decode the batches in ``buf`` per ``req``; see :class:`kafkaseg.decode.api.DecodeResult`."""
    cdef _Decoder d = _Decoder()
    cdef Py_buffer view
    cdef const uint8_t* b
    cdef Py_ssize_t end, pos = 0, total, remaining
    cdef int64_t first_offset, last_seen
    cdef int32_t size
    cdef int8_t magic
    cdef int64_t min_size
    cdef Py_ssize_t next_size = -1
    cdef Py_ssize_t resume
    cdef Py_ssize_t stop_position = -1
    cdef int past_end = 0
    cdef bint need_more = False
    cdef int64_t batch_last = 0
    d.setup(req)
    d.whole = buf
    stop = STOP_END
    last_seen = req.check_offsets_after
    PyObject_GetBuffer(buf, &view, PyBUF_SIMPLE)
    try:
        b = <const uint8_t*>view.buf
        end = view.len
        d.presize(end)
        while pos < end:
            remaining = end - pos
            if remaining < 17:
                stop = STOP_PARTIAL
                break
            first_offset = rd64(b + pos)
            size = rd32(b + pos + 8)
            magic = <int8_t>b[pos + 16]
            try:
                if magic < 0 or magic > 2:
                    raise _Frame(UnsupportedMagicError, f"unknown magic {magic} (batch at offset {first_offset})", pos)
                min_size = 14 if magic == 0 else (22 if magic == 1 else 49)
                if size < min_size:
                    raise _Frame(CorruptBatchError,
                                 f"magic {magic} batch size {size} is below the minimum {min_size}", pos)
                if size > d.max_batch_bytes:
                    raise _Frame(CorruptBatchError,
                                 f"batch size {size} exceeds maxBatchBytes {d.max_batch_bytes} (absurd length field?)",
                                 pos)
            except _Frame as frame:
                if not d.lenient:
                    raise frame.cls(frame.message, path=d.path, position=d.base_position + frame.position) from None
                resume = d.resync(b, pos, end, size, &next_size)
                if resume == -2:
                    stop = STOP_PARTIAL
                    break
                d.stats.corrupt_batches += 1
                if resume >= 0:
                    d.note(_Frame(frame.cls, f"{frame.message}; resynchronised at byte {d.base_position + resume}",
                                  pos), resume - pos, last_seen)
                    d.stats.corrupt_bytes += resume - pos
                    pos = resume
                    continue
                d.note(_Frame(frame.cls, f"{frame.message}; no valid batch at its declared end: {REST_SKIPPED}",
                              pos), end - pos + d.bytes_after, last_seen)
                d.stats.corrupt_bytes += end - pos + d.bytes_after
                stop_position = pos
                pos = end
                stop = STOP_CORRUPT
                break
            total = 12 + <Py_ssize_t>size
            if total > remaining:
                stop = STOP_PARTIAL
                next_size = total
                break
            if d.lenient:
                d.mark()
            need_more = False
            try:
                if magic == 2:
                    past_end = d.decode_v2(b, pos, total, last_seen, &batch_last)
                else:
                    result = d.decode_legacy(b, pos, total, magic, last_seen)
                    past_end = result is _PAST_END_SENTINEL
                    if not past_end:
                        batch_last = result
                if past_end:
                    # the batch after one past this segment's offsets must not start lower: else this one's offset
                    # field (not covered by the CRC) is corrupt, and stopping here would drop the rest unseen (the
                    # twin's _following_offset)
                    if pos + total + 17 <= end:
                        if rd64(b + pos + total) < first_offset:
                            raise _Frame(CorruptBatchError,
                                         past_end_problem(first_offset, d.max_offset, rd64(b + pos + total)), pos)
                    elif pos + total + 17 <= end + d.bytes_after:
                        need_more = True
            except _Frame as frame:
                if not d.lenient:
                    raise frame.cls(frame.message, path=d.path, position=d.base_position + frame.position) from None
                d.rollback()  # a corrupt batch is skipped whole: none of its records are kept
                d.note(frame, total, last_seen)
                d.stats.corrupt_batches += 1
                d.stats.corrupt_bytes += total
                past_end = 0
                batch_last = last_seen
            except CorruptDataError as err:
                if not d.lenient:
                    raise err.located(d.path, d.base_position + pos) from err
                d.rollback()
                d.note(_Frame(type(err), err.detail, pos), total, last_seen)
                d.stats.corrupt_batches += 1
                d.stats.corrupt_bytes += total
                past_end = 0
                batch_last = last_seen
            if need_more:  # the next header is in data not handed over yet: decode this batch again with it
                stop = STOP_PARTIAL
                next_size = total + 17
                break
            pos += total
            if past_end:  # the read ends before this batch: the last offset stays the previous one's
                stop = STOP_PAST_END
                stop_position = pos - total
                break
            last_seen = batch_last
            if d.nbytes >= d.max_bytes or d.n >= d.max_records:
                if pos < end:
                    stop = STOP_LIMIT
                break
    finally:
        PyBuffer_Release(&view)
    d.stats.records = d.n
    d.stats.batches = d.n_batches
    d.stats.skipped_batches_out_of_range = d.n_out_of_range
    d.stats.skipped_control_batches = d.n_control
    d.stats.skipped_aborted_batches = d.n_aborted_batches
    return DecodeResult(d.columns(), d.n, pos, stop, next_size, last_seen, d.stats, stop_position)
