"""The records of one batch with Kafka's raw values (no I/O, no Arrow): offsets, millisecond timestamps as the
broker compares them, key and value sizes.

This is for answers that must not depend on the Arrow decoder's ranges: its timestamp column is microseconds, so
it refuses a record stamped beyond +-9.2e15 ms (a producer sending nanoseconds), which a broker stores and answers
ListOffsets over (``FileRecords.searchForTimestamp`` compares raw longs). :mod:`kafkaseg.lookup` uses it for a
batch the decoder refuses. Grammar (``DefaultRecord.java``; legacy ``LegacyRecord.java``, see
:mod:`kafkaseg.wire.batch` for both headers)::

    length varint, attributes int8, timestampDelta varlong, offsetDelta varint,
    keyLength varint (-1 = null), key, valueLength varint (-1 = null), value,
    headerCount varint, [headerKeyLength varint, key, headerValueLength varint (-1 = null), value] * headerCount

A v2 record's timestamp is ``baseTimestamp + timestampDelta`` (wrapping as Java's long addition), the batch's
maxTimestamp under LogAppendTime.
"""

from __future__ import annotations

import struct

from kafkaseg.errors import CorruptBatchError, CorruptDataError, CrcMismatchError
from kafkaseg.wire.batch import LOG_OVERHEAD, BatchHeader
from kafkaseg.wire.crc import computed_crc, crc_is_valid

__all__ = ["batch_records"]

_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")
_LEGACY_ENTRY = struct.Struct(">qiIbb")  # offset, size, crc, magic, attributes
_MAX_DECOMPRESSED_BYTES = 256 << 20  # the decoder's default decompression-bomb guard


def _to_int64(value: int) -> int:
    """``value`` wrapped to a signed 64-bit long, as Java's ``baseTimestamp + timestampDelta`` wraps."""
    return (value + (1 << 63)) % (1 << 64) - (1 << 63)


def _varint(buf, pos: int, end: int) -> tuple[int, int]:
    """Zig-zag varint/varlong (``ByteUtils.readVarlong``, up to 10 bytes) at ``pos``: (value, next position)."""
    raw = shift = 0
    while True:
        if pos >= end:
            raise CorruptBatchError("varint runs past the end of its record")
        b = buf[pos]
        pos += 1
        raw |= (b & 0x7F) << shift
        if not b & 0x80:
            break
        shift += 7
        if shift > 63:
            raise CorruptBatchError("varint longer than 10 bytes")
    raw &= (1 << 64) - 1
    return (raw >> 1) ^ -(raw & 1), pos


def batch_records(data, header: BatchHeader, *, path: str | None = None, base_position: int = 0,
                  verify_crc: bool = True, max_batch_bytes: int | None = None,
                  max_decompressed_bytes: int = _MAX_DECOMPRESSED_BYTES):
    """(offsets, timestamps ms, key sizes, value sizes) of the records of the one batch ``header`` describes in
    ``data`` (v2 or a legacy entry, compressed or not; control records included; a null key or value has size
    None). Timestamps are Kafka's raw longs: ``baseTimestamp + timestampDelta`` (the batch's maxTimestamp under
    LogAppendTime), -1 for magic 0, the wrapper's or the inner message's for a compressed v1 wrapper, as the
    decoder reads them (``kafkaseg.decode``), but without its microsecond range limit, which only its Arrow
    column needs. The batch is checked as the decoder checks it (CRC with ``verify_crc``, record framing, offsets
    inside the batch and increasing); a problem raises :class:`~kafkaseg.errors.CorruptBatchError` (or a subclass)
    located in ``path`` at the batch's file position (``base_position`` is the file position of ``data[0]``)."""
    try:
        length = header.size - LOG_OVERHEAD
        if max_batch_bytes is not None and length > max_batch_bytes:
            raise CorruptBatchError(f"batch size {length} exceeds maxBatchBytes {max_batch_bytes} (absurd length "
                                    "field?)")
        if header.magic == 2:
            return _v2_records(data, header, verify_crc, max_decompressed_bytes)
        return _legacy_records(data, header, verify_crc, max_decompressed_bytes)
    except CorruptDataError as err:  # buffer-relative or unlocated: place it at the batch, as the decoder does
        raise err.located(path, base_position + header.position) from err
    except struct.error as err:  # a length field pointing past the bytes there are
        raise CorruptBatchError(f"batch framing runs past its bytes ({err})", path=path,
                                position=base_position + header.position) from err


def _v2_records(data, header: BatchHeader, verify_crc: bool, max_decompressed_bytes: int):
    from kafkaseg import codecs
    from kafkaseg.wire.batch import CODEC_MASK, TIMESTAMP_TYPE_MASK, V2_HEADER_SIZE

    pos, end = header.position, header.end
    base, last = header.base_offset, header.last_offset
    if last < base:
        raise CorruptBatchError(f"batch last offset {last} is below its base offset {base}")
    if verify_crc and not crc_is_valid(data, header):
        raise CrcMismatchError(f"CRC-32C mismatch in batch at offset {base}: stored {header.crc}, computed "
                               f"{computed_crc(data, header)}")
    count = header.records_count
    if count < 0:
        raise CorruptBatchError(f"negative record count {count}")
    payload = memoryview(data)[pos + V2_HEADER_SIZE:end]
    codec = header.attributes & CODEC_MASK
    buf = bytes(codecs.decompress(codec, payload, max_output=max_decompressed_bytes, magic=2)) if codec \
        else payload
    p, stop = 0, len(buf)
    if count > stop // 7 + 1:  # a record needs at least 7 bytes: refuse counts the payload cannot hold
        raise CorruptBatchError(f"record count {count} cannot fit in {stop} bytes")
    log_append = bool(header.attributes & TIMESTAMP_TYPE_MASK)
    offsets, stamps, key_sizes, value_sizes = [], [], [], []
    previous = base - 1
    for _ in range(count):
        length, p = _varint(buf, p, stop)
        record_end = p + length
        if length < 0 or record_end > stop:
            raise CorruptBatchError(f"record length {length} runs past its batch")
        p += 1  # attributes
        ts_delta, p = _varint(buf, p, record_end)
        offset_delta, p = _varint(buf, p, record_end)
        sizes = []
        for what in ("key", "value"):
            size, p = _varint(buf, p, record_end)
            if size < -1 or p + max(size, 0) > record_end:
                raise CorruptBatchError(f"invalid record {what} length {size}")
            p += max(size, 0)
            sizes.append(None if size < 0 else size)
        header_count, p = _varint(buf, p, record_end)
        if header_count < 0 or header_count > record_end - p:
            raise CorruptBatchError(f"invalid header count {header_count}")
        for _h in range(header_count):
            for what in ("key", "value"):
                size, p = _varint(buf, p, record_end)
                if size < (0 if what == "key" else -1) or p + max(size, 0) > record_end:
                    raise CorruptBatchError(f"invalid header {what} length {size}")
                p += max(size, 0)
        if p != record_end:
            raise CorruptBatchError(f"record declares {length} bytes but its fields use {length - (record_end - p)}")
        offset = base + offset_delta
        if offset <= previous or offset > last:
            raise CorruptBatchError(f"record offset {offset} out of order in batch [{base}, {last}]")
        previous = offset
        offsets.append(offset)
        stamps.append(header.max_timestamp if log_append else _to_int64(header.base_timestamp + ts_delta))
        key_sizes.append(sizes[0])
        value_sizes.append(sizes[1])
    if p != stop:
        raise CorruptBatchError(f"{stop - p} bytes left after the batch's {count} records")
    return offsets, stamps, key_sizes, value_sizes


def _legacy_entry(buf, pos: int, end: int, verify_crc: bool, inner: bool):
    """One legacy message at ``pos``: (offset, whole size, magic, attributes, timestamp, key, value); ``key`` and
    ``value`` are memoryviews (None when null)."""
    import zlib

    from kafkaseg.wire.batch import LEGACY_V0_HEADER_SIZE, MAGIC_OFFSET, MIN_ENTRY_SIZE

    if end - pos < LEGACY_V0_HEADER_SIZE:
        raise CorruptBatchError("legacy entry header runs past its buffer")
    offset, size, crc, magic, attributes = _LEGACY_ENTRY.unpack_from(buf, pos)
    if inner and magic not in (0, 1):
        raise CorruptBatchError(f"compressed message magic {magic} is not a legacy magic (0 or 1)")
    total = LOG_OVERHEAD + size
    if magic not in (0, 1) or size < MIN_ENTRY_SIZE[magic] or pos + total > end:
        raise CorruptBatchError(f"legacy entry size {size} is invalid here")
    view = memoryview(buf)
    if verify_crc:
        actual = zlib.crc32(view[pos + MAGIC_OFFSET:pos + total]) & 0xFFFFFFFF
        if actual != crc:
            raise CrcMismatchError(f"CRC-32 mismatch in legacy entry at offset {offset}: stored {crc}, "
                                   f"computed {actual}")
    p = pos + 18
    timestamp = -1
    if magic == 1:
        (timestamp,) = _I64.unpack_from(buf, p)
        p += 8
    fields = []
    for what in ("key", "value"):
        if p + 4 > pos + total:
            raise CorruptBatchError(f"legacy {what} length runs past its entry")
        (size_of,) = _I32.unpack_from(buf, p)
        p += 4
        if size_of < -1 or p + max(size_of, 0) > pos + total:
            raise CorruptBatchError(f"invalid legacy {what} length {size_of}")
        fields.append(None if size_of < 0 else view[p:p + size_of])
        p += max(size_of, 0)
    if p != pos + total:
        raise CorruptBatchError(f"legacy entry of {size} bytes holds {p - pos - LOG_OVERHEAD}")
    return offset, total, magic, attributes, timestamp, fields[0], fields[1]


def _legacy_records(data, header: BatchHeader, verify_crc: bool, max_decompressed_bytes: int):
    from kafkaseg import codecs
    from kafkaseg.wire.batch import CODEC_MASK, TIMESTAMP_TYPE_MASK

    offset, _, magic, attributes, timestamp, key, value = _legacy_entry(data, header.position, header.end,
                                                                       verify_crc, False)
    codec = attributes & CODEC_MASK
    if codec == 0:
        return [offset], [timestamp], [None if key is None else len(key)], [None if value is None else len(value)]
    if value is None:
        raise CorruptBatchError("compressed legacy wrapper has a null value")
    inner = bytes(codecs.decompress(codec, value, max_output=max_decompressed_bytes, magic=magic))
    entries, p = [], 0
    while p < len(inner):
        entry = _legacy_entry(inner, p, len(inner), verify_crc, True)
        if entry[3] & CODEC_MASK:
            raise CorruptBatchError("compressed legacy entry nested inside a compressed wrapper")
        entries.append(entry)
        p += entry[1]
    if not entries:  # DeepRecordsIterator: "Found invalid compressed record set with no inner records"
        raise CorruptBatchError("compressed legacy wrapper holds no inner records")
    shift = 0
    if magic == 1 and offset != 0:  # v1 inner offsets are relative to the last (offset 0: absolute, librdkafka)
        if offset < entries[-1][0]:
            raise CorruptBatchError(f"wrapper offset {offset} is less than the last inner offset {entries[-1][0]}")
        shift = offset - entries[-1][0]
    log_append = magic == 1 and bool(attributes & TIMESTAMP_TYPE_MASK)
    offsets, stamps, key_sizes, value_sizes = [], [], [], []
    previous = None
    for relative, _, inner_magic, _, inner_ts, inner_key, inner_value in entries:
        absolute = shift + relative
        # as the decoder: Kafka's DeepRecordsIterator (AbstractLegacyRecordBatch.java) does not check this, but
        # inner offsets that repeat or go back are corruption (see kafkaseg/decode/_kernel_py.py at this check)
        if previous is not None and absolute <= previous:
            raise CorruptBatchError(f"non-monotonic offsets: inner offset {absolute} of the compressed legacy "
                                    f"wrapper follows {previous}")
        previous = absolute
        offsets.append(absolute)
        # AbstractLegacyRecordBatch: none for a v0 message, a LogAppendTime wrapper's own, else the message's
        stamps.append(-1 if inner_magic == 0 else (timestamp if log_append else inner_ts))
        key_sizes.append(None if inner_key is None else len(inner_key))
        value_sizes.append(None if inner_value is None else len(inner_value))
    return offsets, stamps, key_sizes, value_sizes
