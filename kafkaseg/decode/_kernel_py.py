"""The pure-Python decoder: the reference twin of ``_kernel.pyx``, with the same interface and identical output.

It favours being obviously right over being fast; tests run every decode case through both twins and compare.

Record grammar, v2 (``clients/src/main/java/org/apache/kafka/common/record/DefaultRecord.java``; varints are
protobuf zig-zag, ``ByteUtils.readVarint``/``readVarlong``)::

    length          varint   bytes after this field
    attributes      int8     unused
    timestampDelta  varlong  timestamp = baseTimestamp + delta (LogAppendTime: the batch's maxTimestamp)
    offsetDelta     varint   offset = baseOffset + delta
    keyLength       varint   -1 = null
    key             bytes
    valueLength     varint   -1 = null
    value           bytes
    headerCount     varint
    headers         [keyLength varint, key UTF-8, valueLength varint (-1 = null), value] * headerCount

Legacy v0/v1 entries and compressed wrappers: see ``kafkaseg/wire/batch.py`` and ``AbstractLegacyRecordBatch.java``
(``DeepRecordsIterator``): inner entries of a v1 wrapper carry offsets relative to the first inner entry, so
absolute = wrapperOffset - lastInnerRelativeOffset + innerRelativeOffset; v0 inner offsets are absolute. Inner
entries of a LogAppendTime v1 wrapper take the wrapper's timestamp.
"""

from __future__ import annotations

import struct
import zlib

import pyarrow as pa

from kafkaseg import codecs
from kafkaseg.decode.api import (
    STOP_CORRUPT,
    STOP_END,
    STOP_LIMIT,
    STOP_PARTIAL,
    STOP_PAST_END,
    TIMESTAMP_MS_TYPE,
    TIMESTAMP_TYPE,
    DecodeRequest,
    DecodeResult,
    DecodeStats,
    INT64_MIN,
    MAX_PROBLEMS,
    REST_SKIPPED,
    Problem,
    offset_field_past_next,
)
from kafkaseg.errors import (
    CorruptBatchError,
    CorruptDataError,
    CrcMismatchError,
    TruncatedDataError,
    UnsupportedMagicError,
)
from kafkaseg.schema import HEADERS_TYPE
from kafkaseg.wire import batch as wb
from kafkaseg.wire.crc import crc32c
from kafkaseg.wire.text import java_utf8

IMPLEMENTATION = "python"

_V2 = struct.Struct(">qiibIhiqqqhii")
_PREFIX = struct.Struct(">qib")  # offset, size, (skip 4), magic: read with explicit offsets below
_I64 = struct.Struct(">q")
_I32 = struct.Struct(">i")
_U32 = struct.Struct(">I")
_LEGACY_TS = struct.Struct(">q")


class _Frame(Exception):
    """Internal: a problem at a buffer position, turned into a located kafkaseg error by ``decode``."""

    def __init__(self, cls, message, position):
        super().__init__(message)
        self.cls, self.message, self.position = cls, message, position


def _varint(buf, pos, end, where):
    """Zig-zag varint (up to 64 bits) at ``pos``; returns (value, new position). Errors are located at ``where``
    (the batch's position, like every other record-level error: ``pos`` may be inside decompressed data)."""
    shift = 0
    raw = 0
    while True:
        if pos >= end:
            raise _Frame(CorruptBatchError, "varint runs past the end of its record", where)
        b = buf[pos]
        pos += 1
        raw |= (b & 0x7F) << shift
        if not b & 0x80:
            break
        shift += 7
        if shift > 63:
            raise _Frame(CorruptBatchError, "varint longer than 10 bytes", where)
    raw &= _U64_MASK
    return (raw >> 1) ^ -(raw & 1), pos


_U64_MASK = (1 << 64) - 1
# Timestamps are stored as microseconds (Spark's unit): milliseconds beyond this cannot be represented.
TIMESTAMP_LIMIT_MS = ((1 << 63) - 1) // 1000


def _check_timestamp(ms, pos, req):
    if req.timestamp_unit != "ms" and not -TIMESTAMP_LIMIT_MS <= ms <= TIMESTAMP_LIMIT_MS:
        raise _Frame(CorruptBatchError, f"timestamp {ms} ms is outside the representable range "
                     "(microseconds in a 64-bit long, as Spark stores timestamps: a producer that sent "
                     "nanoseconds?)", pos)


class _Columns:
    def __init__(self, req: DecodeRequest):
        self.req = req
        self.keys, self.values, self.offsets, self.timestamps, self.ts_types = [], [], [], [], []
        self.headers = [] if req.include_headers else None
        self.meta = {name: [] for name in _META_NAMES} if req.include_metadata else None
        self.nbytes = 0
        self.scale = 1 if req.timestamp_unit == "ms" else 1000

    def add(self, key, value, offset, timestamp, ts_type, headers, meta):
        if not self.req.include_key:
            key = None
        if not self.req.include_value:
            value = None
        self.keys.append(key)
        self.values.append(value)
        self.offsets.append(offset)
        self.timestamps.append(timestamp * self.scale)
        self.ts_types.append(ts_type)
        self.nbytes += (len(key) if key is not None else 0) + (len(value) if value is not None else 0)
        if self.headers is not None:
            self.headers.append(headers)
            if headers:
                # keys count as the UTF-8 bytes Arrow stores (as the compiled kernel counts them)
                self.nbytes += sum(len(k.encode()) + (len(v) if v is not None else 0) for k, v in headers)
        if self.meta is not None:
            for name, v in zip(_META_NAMES, meta):
                self.meta[name].append(v)

    def mark(self) -> tuple:
        """Where the columns end now, to drop a batch that turns out corrupt halfway (lenient reads)."""
        return len(self.offsets), self.nbytes

    def truncate(self, mark: tuple) -> None:
        n, self.nbytes = mark
        for column in (self.keys, self.values, self.offsets, self.timestamps, self.ts_types, self.headers,
                       *(self.meta.values() if self.meta is not None else ())):
            if column is not None:
                del column[n:]

    def arrays(self) -> dict:
        cols = {
            "key": pa.array(self.keys, pa.binary()),
            "value": pa.array(self.values, pa.binary()),
            "offset": pa.array(self.offsets, pa.int64()),
            "timestamp": pa.array(self.timestamps, pa.int64()).cast(
                TIMESTAMP_MS_TYPE if self.req.timestamp_unit == "ms" else TIMESTAMP_TYPE),
            "timestampType": pa.array(self.ts_types, pa.int32()),
        }
        if self.headers is not None:
            cols["headers"] = pa.array(
                [None if h is None else [{"key": k, "value": v} for k, v in h] for h in self.headers], HEADERS_TYPE)
        if self.meta is not None:
            for name, typ in zip(_META_NAMES, _META_TYPES):
                cols[name] = pa.array(self.meta[name], typ)
        return cols


_META_NAMES = ("leaderEpoch", "producerId", "producerEpoch", "sequence", "isTransactional", "isControl", "magic",
               "codec", "batchOffset", "position")
_META_TYPES = (pa.int32(), pa.int64(), pa.int16(), pa.int32(), pa.bool_(), pa.bool_(), pa.int8(), pa.int8(),
               pa.int64(), pa.int64())


def _is_aborted(aborted, producer_id, base_offset) -> bool:
    for pid, first, last in aborted:
        if pid == producer_id and first <= base_offset <= last:
            return True
    return False


def decode(buf, req: DecodeRequest) -> DecodeResult:
    """Decode the batches in ``buf`` per ``req``; see :class:`kafkaseg.decode.api.DecodeResult`."""
    buf = memoryview(buf).cast("B") if not isinstance(buf, (bytes, bytearray)) else buf
    out = _Columns(req)
    stats = DecodeStats()
    end = len(buf)
    pos = 0
    stop = STOP_END
    next_size = -1
    last_seen = req.check_offsets_after
    stop_position = -1
    while pos < end:
        remaining = end - pos
        if remaining < wb.HEADER_PREFIX_SIZE:
            stop = STOP_PARTIAL
            break
        first_offset = _I64.unpack_from(buf, pos)[0]
        size = _I32.unpack_from(buf, pos + 8)[0]
        magic = struct.unpack_from(">b", buf, pos + wb.MAGIC_OFFSET)[0]
        try:
            if magic not in wb.MIN_ENTRY_SIZE:
                raise _Frame(UnsupportedMagicError, f"unknown magic {magic} (batch at offset {first_offset})", pos)
            if size < wb.MIN_ENTRY_SIZE[magic]:
                raise _Frame(CorruptBatchError,
                             f"magic {magic} batch size {size} is below the minimum {wb.MIN_ENTRY_SIZE[magic]}", pos)
            if size > req.max_batch_bytes:
                raise _Frame(CorruptBatchError,
                             f"batch size {size} exceeds maxBatchBytes {req.max_batch_bytes} (absurd length field?)",
                             pos)
        except _Frame as frame:
            if not req.lenient:
                raise _located(req, frame) from None
            resume, need = _resync(buf, pos, end, size, req)
            if need:
                stop = STOP_PARTIAL
                next_size = need
                break
            stats.corrupt_batches += 1
            if resume >= 0:
                _note(stats, req, _Frame(frame.cls, f"{frame.message}; resynchronised at byte "
                                                    f"{req.base_position + resume}", pos), resume - pos, last_seen)
                stats.corrupt_bytes += resume - pos
                pos = resume
                continue
            _note(stats, req, _Frame(frame.cls, f"{frame.message}; no valid batch at its declared end: "
                                                f"{REST_SKIPPED}", pos), end - pos + req.bytes_after, last_seen)
            stats.corrupt_bytes += end - pos + req.bytes_after
            stop_position = pos
            pos = end
            stop = STOP_CORRUPT
            break
        total = wb.LOG_OVERHEAD + size
        if total > remaining:
            stop = STOP_PARTIAL
            next_size = total
            break
        mark = out.mark()
        try:
            if magic == 2:
                result = _decode_v2(buf, pos, total, req, out, stats, last_seen)
            else:
                result = _decode_legacy(buf, pos, total, magic, req, out, stats, last_seen)
            if result is _PAST_END:  # the read ends before this batch: the last offset stays the previous one's
                if _following_offset(buf, pos, total, end, req, first_offset) is _NEED_MORE:
                    stop = STOP_PARTIAL
                    next_size = total + wb.HEADER_PREFIX_SIZE
                    break
                stop = STOP_PAST_END
                stop_position = pos
            else:
                last_seen = result
        except _Frame as frame:
            if not req.lenient:
                raise _located(req, frame) from None
            out.truncate(mark)  # a corrupt batch is skipped whole: none of its records are kept
            _note(stats, req, frame, total, last_seen)
            stats.corrupt_batches += 1
            stats.corrupt_bytes += total
        except CorruptDataError as err:  # from codecs: positions are relative to the payload
            if not req.lenient:
                raise err.located(req.path, req.base_position + pos) from err
            out.truncate(mark)
            _note(stats, req, _Frame(type(err), err.detail, pos), total, last_seen)
            stats.corrupt_batches += 1
            stats.corrupt_bytes += total
        pos += total
        if stop == STOP_PAST_END:
            break
        if out.nbytes >= req.max_bytes or len(out.offsets) >= req.max_records:
            if pos < end:
                stop = STOP_LIMIT
            break
    stats.records = len(out.offsets)
    return DecodeResult(out.arrays(), len(out.offsets), pos, stop, next_size, last_seen, stats, stop_position)


_PAST_END = object()
_NEED_MORE = object()


def _following_offset(buf, pos, total, end, req, first_offset):
    """A batch at ``pos`` whose offsets reach ``max_offset`` ends the read of its segment (the next segment's
    records, or the end offset). Unless the batch after it starts at a lower offset: then this batch's offset field,
    which the CRC does not cover (v2 baseOffset, a legacy entry's offset), is corrupt, and stopping would drop the
    rest of the segment unseen. Raises for that; returns ``_NEED_MORE`` when the next header is in data not handed
    over yet, else None."""
    following = pos + total
    if following + wb.HEADER_PREFIX_SIZE > end:
        return _NEED_MORE if following + wb.HEADER_PREFIX_SIZE <= end + req.bytes_after else None
    problem = offset_field_past_next(first_offset, req.max_offset, _I64.unpack_from(buf, following)[0])
    if problem is not None:
        raise _Frame(CorruptBatchError, problem, pos)
    return None


def _resync(buf, pos, end, size, req) -> tuple[int, int]:
    """Lenient reads, after bad framing at ``pos`` (unknown magic, impossible size): ``(position, 0)`` to go on at
    the batch where the bad one's declared ``size`` says it ends, ``(-1, need)`` when ``need`` bytes from ``pos``
    (known to exist: ``req.bytes_after``) must be in the buffer to decide, ``(-1, 0)`` when there is nothing
    plausible to go on at (the rules are in DecodeRequest's docstring). Decided from the data alone, never from
    where the buffer ends; ``position > pos`` always."""
    data_end = end + req.bytes_after
    limit = wb.LOG_OVERHEAD + req.max_batch_bytes  # no resynchronisation needs a larger buffer than one batch
    if size < 0 or size > req.max_batch_bytes:
        return -1, 0
    at = pos + wb.LOG_OVERHEAD + size
    if at == data_end:  # the bad batch was the last: nothing after it to check
        return (at, 0) if at <= end else (-1, at - pos)
    if data_end - at < wb.HEADER_PREFIX_SIZE:
        return -1, 0
    need = at - pos + wb.HEADER_PREFIX_SIZE
    if need > limit:
        return -1, 0
    if pos + need > end:
        return -1, need
    next_size = _I32.unpack_from(buf, at + 8)[0]
    magic = struct.unpack_from(">b", buf, at + wb.MAGIC_OFFSET)[0]
    if magic not in wb.MIN_ENTRY_SIZE or not wb.MIN_ENTRY_SIZE[magic] <= next_size <= req.max_batch_bytes:
        return -1, 0
    need = at - pos + wb.LOG_OVERHEAD + next_size
    if need > limit or pos + need > data_end:
        return -1, 0
    if pos + need > end:
        return -1, need
    if req.verify_crc:
        batch_end = pos + need
        if magic == 2:
            ok = crc32c(buf[at + wb.V2_ATTRIBUTES_OFFSET:batch_end]) == _U32.unpack_from(buf, at + wb.V2_CRC_OFFSET)[0]
        else:
            ok = zlib.crc32(buf[at + wb.MAGIC_OFFSET:batch_end]) == _U32.unpack_from(buf, at + wb.LEGACY_CRC_OFFSET)[0]
        if not ok:
            return -1, 0
    return at, 0


def _note(stats: DecodeStats, req: DecodeRequest, frame: _Frame, nbytes: int, last_seen: int) -> None:
    """Name a corrupt region skipped: ``nbytes`` from the frame's position, after the batch whose last offset is
    ``last_seen`` (the offsets it makes unreadable start after it; where they end the scan finds)."""
    if len(stats.problems) < MAX_PROBLEMS:
        stats.problems.append(Problem(req.path, req.base_position + frame.position, frame.message, nbytes,
                                      None if last_seen == INT64_MIN else last_seen + 1, error=frame.cls))


def _located(req: DecodeRequest, frame: _Frame) -> CorruptDataError:
    return frame.cls(frame.message, path=req.path, position=req.base_position + frame.position)


def _java_long(value: int) -> int:
    """``value`` wrapped to a signed 64-bit long, as Java's (and the compiled kernel's) long arithmetic leaves it."""
    return ((value + (1 << 63)) & _U64_MASK) - (1 << 63)


def _check_batch_offsets(base_offset, last_offset, last_seen, pos):
    if last_offset < base_offset:
        raise _Frame(CorruptBatchError, f"batch last offset {last_offset} is below its base offset {base_offset}", pos)
    if base_offset <= last_seen:
        raise _Frame(CorruptBatchError,
                     f"non-monotonic offsets: batch base offset {base_offset} follows offset {last_seen}", pos)


def _decode_v2(buf, pos, total, req, out, stats, last_seen):
    (base_offset, _, epoch, _, crc, attributes, last_delta, base_ts, max_ts, producer_id, producer_epoch,
     base_sequence, count) = _V2.unpack_from(buf, pos)
    last_offset = _java_long(base_offset + last_delta)  # wraps, as the compiled kernel's int64 sum does
    _check_batch_offsets(base_offset, last_offset, last_seen, pos)
    if req.verify_crc:
        actual = crc32c(buf[pos + wb.V2_ATTRIBUTES_OFFSET:pos + total])
        if actual != crc:
            raise _Frame(CrcMismatchError, f"CRC-32C mismatch in batch at offset {base_offset}: stored {crc}, "
                                           f"computed {actual}", pos)
    if base_offset >= req.max_offset:
        return _PAST_END
    if last_offset < req.min_offset:
        stats.skipped_batches_out_of_range += 1
        return last_offset
    is_control = bool(attributes & wb.CONTROL_MASK)
    is_txn = bool(attributes & wb.TRANSACTIONAL_MASK)
    if is_control and not req.include_control:
        stats.skipped_control_batches += 1
        return last_offset
    if is_txn and not is_control and req.aborted and _is_aborted(req.aborted, producer_id, base_offset):
        stats.skipped_aborted_batches += 1
        return last_offset
    if count < 0:
        raise _Frame(CorruptBatchError, f"negative record count {count}", pos)
    codec = attributes & wb.CODEC_MASK
    payload = buf[pos + wb.V2_HEADER_SIZE:pos + total]
    if codec:
        data = codecs.decompress(codec, payload, max_output=req.max_decompressed_bytes, magic=2)
        data = bytes(data)
        data_pos = 0
    else:
        data = buf
        data_pos = pos + wb.V2_HEADER_SIZE
    data_end = data_pos + len(payload) if not codec else len(data)
    # A record needs at least 7 bytes: refuse counts the payload cannot hold before looping over them.
    if count > (data_end - data_pos) // 7 + 1:
        raise _Frame(CorruptBatchError, f"record count {count} cannot fit in {data_end - data_pos} bytes", pos)
    log_append = bool(attributes & wb.TIMESTAMP_TYPE_MASK)
    ts_type = 1 if log_append else 0
    stats.batches += 1
    meta = None
    prev_offset = last_seen
    p = data_pos
    for _ in range(count):
        length, p = _varint(data, p, data_end, pos)
        rec_end = p + length
        if length < 0 or rec_end > data_end:
            raise _Frame(CorruptBatchError, f"record length {length} runs past its batch", pos)
        p += 1  # attributes
        ts_delta, p = _varint(data, p, rec_end, pos)
        offset_delta, p = _varint(data, p, rec_end, pos)
        key_len, p = _varint(data, p, rec_end, pos)
        key = None
        if key_len >= 0:
            if p + key_len > rec_end:
                raise _Frame(CorruptBatchError, f"record key length {key_len} runs past its record", pos)
            key = bytes(data[p:p + key_len])
            p += key_len
        elif key_len != -1:
            raise _Frame(CorruptBatchError, f"invalid key length {key_len}", pos)
        value_len, p = _varint(data, p, rec_end, pos)
        value = None
        if value_len >= 0:
            if p + value_len > rec_end:
                raise _Frame(CorruptBatchError, f"record value length {value_len} runs past its record", pos)
            value = bytes(data[p:p + value_len])
            p += value_len
        elif value_len != -1:
            raise _Frame(CorruptBatchError, f"invalid value length {value_len}", pos)
        header_count, p = _varint(data, p, rec_end, pos)
        if header_count < 0 or header_count > rec_end - p:
            raise _Frame(CorruptBatchError, f"invalid header count {header_count}", pos)
        headers = [] if header_count else None
        for _h in range(header_count):
            hk_len, p = _varint(data, p, rec_end, pos)
            if hk_len < 0 or p + hk_len > rec_end:
                raise _Frame(CorruptBatchError, f"invalid header key length {hk_len}", pos)
            hkey = java_utf8(bytes(data[p:p + hk_len]))  # U+FFFD where malformed, as the Java client (and Spark)
            p += hk_len
            hv_len, p = _varint(data, p, rec_end, pos)
            hval = None
            if hv_len >= 0:
                if p + hv_len > rec_end:
                    raise _Frame(CorruptBatchError, f"invalid header value length {hv_len}", pos)
                hval = bytes(data[p:p + hv_len])
                p += hv_len
            elif hv_len != -1:
                raise _Frame(CorruptBatchError, f"invalid header value length {hv_len}", pos)
            headers.append((hkey, hval))
        if p != rec_end:
            raise _Frame(CorruptBatchError, f"record declares {length} bytes but its fields use "
                                            f"{length - (rec_end - p)}", pos)
        offset = base_offset + offset_delta
        if offset <= prev_offset or offset < base_offset or offset > last_offset:
            raise _Frame(CorruptBatchError, f"record offset {offset} out of order in batch "
                                            f"[{base_offset}, {last_offset}]", pos)
        prev_offset = offset
        if offset < req.min_offset or offset >= req.max_offset:
            continue
        if log_append:
            timestamp = max_ts
        else:
            timestamp = _java_long(base_ts + ts_delta)  # Java's long sum wraps
        _check_timestamp(timestamp, pos, req)
        if req.include_metadata:
            sequence = -1 if base_sequence < 0 else (base_sequence + offset_delta) % (1 << 31)
            meta = (epoch, producer_id, producer_epoch, sequence, is_txn, is_control, 2, codec, base_offset,
                    req.base_position + pos)
        out.add(key, value, offset, timestamp, ts_type, headers, meta)
    if p != data_end:
        raise _Frame(CorruptBatchError, f"{data_end - p} bytes left after the batch's {count} records", pos)
    return last_offset


_LEGACY_HEAD = struct.Struct(">qiIbb")


def _legacy_entry(buf, pos, end, inner, verify_crc, where):
    """Parse one uncompressed-layout legacy entry at ``pos``: (offset, total, magic, attributes, ts, key, value).
    ``inner``: the entry is inside a compressed wrapper, so its magic has not been checked yet."""
    if end - pos < wb.LEGACY_V0_HEADER_SIZE:
        raise _Frame(TruncatedDataError, "legacy entry header runs past its buffer", where)
    offset, size, crc, magic, attributes = _LEGACY_HEAD.unpack_from(buf, pos)
    if inner and magic not in (0, 1):
        raise _Frame(CorruptBatchError, f"compressed message magic {magic} is not a legacy magic (0 or 1)", where)
    total = wb.LOG_OVERHEAD + size
    if size < wb.MIN_ENTRY_SIZE[magic] or pos + total > end:
        raise _Frame(CorruptBatchError, f"legacy entry size {size} is invalid here", where)
    if verify_crc:
        actual = zlib.crc32(buf[pos + wb.MAGIC_OFFSET:pos + total]) & 0xFFFFFFFF
        if actual != crc:
            raise _Frame(CrcMismatchError, f"CRC-32 mismatch in legacy entry at offset {offset}: stored {crc}, "
                                           f"computed {actual}", where)
    p = pos + 18
    ts = -1
    if magic == 1:
        ts = _LEGACY_TS.unpack_from(buf, p)[0]
        p += 8
    key_len = _I32.unpack_from(buf, p)[0]
    p += 4
    key = None
    if key_len >= 0:
        if p + key_len + 4 > pos + total:
            raise _Frame(CorruptBatchError, f"legacy key length {key_len} runs past its entry", where)
        key = bytes(buf[p:p + key_len])
        p += key_len
    elif key_len != -1:
        raise _Frame(CorruptBatchError, f"invalid legacy key length {key_len}", where)
    value_len = _I32.unpack_from(buf, p)[0]
    p += 4
    value = None
    if value_len >= 0:
        if p + value_len != pos + total:
            raise _Frame(CorruptBatchError, f"legacy value length {value_len} does not match its entry", where)
        value = bytes(buf[p:p + value_len])
        p += value_len
    elif value_len != -1 or p != pos + total:
        raise _Frame(CorruptBatchError, f"invalid legacy value length {value_len}", where)
    return offset, total, magic, attributes, ts, key, value


def _inner_timestamp(log_append, wrapper_ts, inner_magic, inner_ts):
    """An inner legacy record's timestamp, as Kafka's consumers read it (AbstractLegacyRecordBatch's
    DeepRecordsIterator and LegacyRecord.timestamp): none for a v0 record; a v1 record takes a LogAppendTime
    wrapper's timestamp, else its own. Inner and wrapper magic can differ (KAFKA-4298: 0.10.0's log cleaner
    rewrote wrappers in the topic's format around the old inner messages); consumers read such sets without
    checking (``ensureMatchingMagic`` is only on when the broker validates a produce request), so kafkaseg does.
    The timestamp type is always the wrapper's (consumers take it from the batch)."""
    if inner_magic == 0:
        return -1
    return wrapper_ts if log_append else inner_ts


def _decode_legacy(buf, pos, total, magic, req, out, stats, last_seen):
    offset, _, _, attributes, ts, key, value = _legacy_entry(buf, pos, pos + total, False, req.verify_crc, pos)
    codec = attributes & wb.CODEC_MASK
    log_append = magic == 1 and bool(attributes & wb.TIMESTAMP_TYPE_MASK)
    ts_type = -1 if magic == 0 else (1 if log_append else 0)
    if codec == 0:
        _check_batch_offsets(offset, offset, last_seen, pos)
        if offset >= req.max_offset:
            return _PAST_END
        stats.batches += 1
        _check_timestamp(ts, pos, req)
        if offset >= req.min_offset:
            meta = (-1, -1, -1, -1, False, False, magic, 0, offset, req.base_position + pos) \
                if req.include_metadata else None
            out.add(key, value, offset, ts, ts_type, None, meta)
        return offset
    # Compressed wrapper: its offset is the LAST inner offset, so it can be skipped without decompressing.
    if offset < req.min_offset:
        if offset <= last_seen:
            raise _Frame(CorruptBatchError, f"non-monotonic offsets: wrapper offset {offset} follows {last_seen}", pos)
        stats.skipped_batches_out_of_range += 1
        return offset
    if value is None:
        raise _Frame(CorruptBatchError, "compressed legacy wrapper has a null value", pos)
    data = bytes(codecs.decompress(codec, value, max_output=req.max_decompressed_bytes, magic=magic))
    inner = []
    p = 0
    while p < len(data):
        entry = _legacy_entry(data, p, len(data), True, req.verify_crc, pos)
        if entry[3] & wb.CODEC_MASK:
            raise _Frame(CorruptBatchError, "compressed legacy entry nested inside a compressed wrapper", pos)
        inner.append(entry)
        p += entry[1]
    if not inner:
        # DeepRecordsIterator: "Found invalid compressed record set with no inner records".
        raise _Frame(CorruptBatchError, "compressed legacy wrapper holds no inner records", pos)
    if magic == 1:
        last_relative = inner[-1][0]
        # Kafka's DeepRecordsIterator: absolute = wrapperOffset - lastInnerRelative + innerRelative.
        if offset == 0:  # "produce data from certain versions of librdkafka": inner offsets are absolute
            base = 0
        elif offset < last_relative:
            raise _Frame(CorruptBatchError, f"wrapper offset {offset} is less than the last inner offset "
                                            f"{last_relative}", pos)
        else:
            base = offset - last_relative
    else:
        base = 0
    first = base + inner[0][0]
    stats.batches += 1
    prev = last_seen
    for (rel, _, inner_magic, _, inner_ts, ikey, ivalue) in inner:
        absolute = base + rel
        # Inner offsets must increase, from above the offset before the wrapper; gaps are fine (the log cleaner
        # leaves them). Kafka's read path does not check this: DeepRecordsIterator
        # (clients/src/main/java/org/apache/kafka/common/record/AbstractLegacyRecordBatch.java) only refuses a
        # non-zero wrapper offset below the last inner one (above); the Java consumer (CompletedFetch) then skips,
        # unsaid, a record below the next offset it expects, while kafka-python returns it. No broker writes such
        # a wrapper (LogValidator rebuilds a produced set whose inner offsets are not 0..n-1; MemoryRecordsBuilder,
        # which the cleaner rewrites with, refuses offsets that do not increase), so it is corruption: returning
        # the records would give an offset twice or out of order (wrong for offset-ordered reads, slices, seeks,
        # compaction), and skipping some as the Java consumer does would lose them unsaid. A strict read raises, a
        # lenient one skips the wrapper whole, counted; only dump takes them as stored (DumpLogSegments does).
        if absolute > prev:
            prev = absolute
        elif not req.allow_unordered_inner_offsets:
            raise _Frame(CorruptBatchError, f"non-monotonic offsets: inner offset {absolute} of the compressed "
                                            f"legacy wrapper follows {prev}", pos)
        if absolute >= req.max_offset:
            continue
        if absolute < req.min_offset:
            continue
        timestamp = _inner_timestamp(log_append, ts, inner_magic, inner_ts)
        _check_timestamp(timestamp, pos, req)
        meta = (-1, -1, -1, -1, False, False, magic, codec, first, req.base_position + pos) \
            if req.include_metadata else None
        out.add(ikey, ivalue, absolute, timestamp, ts_type, None, meta)
    if first >= req.max_offset:
        return _PAST_END
    return prev
