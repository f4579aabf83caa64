"""Encode records into v2 record batches and legacy v0/v1 message sets, byte for byte as a Java broker stores them.

This is the writer side of the formats, independent of kafkaseg's readers (it shares only constants with
:mod:`kafkaseg.wire.batch`). Grammar (all integers big-endian):

v2 batch (``clients/src/main/java/org/apache/kafka/common/record/DefaultRecordBatch.java``)::

    baseOffset int64 | batchLength int32 | partitionLeaderEpoch int32 | magic int8 = 2 | crc uint32 (CRC-32C of
    attributes..end) | attributes int16 | lastOffsetDelta int32 | baseTimestamp int64 | maxTimestamp int64
    | producerId int64 | producerEpoch int16 | baseSequence int32 | recordsCount int32 | records

    attributes: bits 0-2 codec, 3 timestampType (1 LogAppendTime), 4 isTransactional, 5 isControl,
    6 hasDeleteHorizonMs (then baseTimestamp is the delete horizon and record deltas are relative to it).

v2 record (``DefaultRecord.java``; varint/varlong are zig-zag LEB128, ``ByteUtils.writeVarint``)::

    length varint | attributes int8 = 0 | timestampDelta varlong | offsetDelta varint | keyLength varint (-1 null)
    | key | valueLength varint (-1 null) | value | headerCount varint
    | headers: [keyLength varint | key UTF-8 | valueLength varint (-1 null) | value]

Control record (``ControlRecordType.java``, ``EndTransactionMarker.java``)::

    key: version int16 = 0 | type int16 (0 ABORT, 1 COMMIT)     value: version int16 = 0 | coordinatorEpoch int32

Legacy entry (``LegacyRecord.java``, ``AbstractLegacyRecordBatch.java``)::

    offset int64 | size int32 | crc uint32 (CRC-32 of magic..end) | magic int8 | attributes int8
    | timestamp int64 (v1 only) | keyLength int32 (-1 null) | key | valueLength int32 (-1 null) | value

    A compressed wrapper's value is the codec's stream of inner entries; its offset is the LAST inner offset.
    v1 inner offsets are relative (0..n-1 from the first inner record), v0 inner offsets absolute. A v1 wrapper's
    timestamp is the max inner timestamp (CreateTime) or the broker's append time (LogAppendTime, attribute bit 3).
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass
from typing import NamedTuple, Sequence

import crc32c as _crc32c

from kafkaseg.errors import InvalidOptionError
from kafkaseg.testing.codecs import codec_id, compress
from kafkaseg.wire.batch import (
    CONTROL_MASK,
    DELETE_HORIZON_MASK,
    NO_PARTITION_LEADER_EPOCH,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    NO_TIMESTAMP,
    TIMESTAMP_TYPE_MASK,
    TRANSACTIONAL_MASK,
    V2_HEADER_SIZE,
)

__all__ = [
    "Record",
    "EncodedBatch",
    "ControlType",
    "encode_varint",
    "encode_record",
    "encode_records",
    "build_batch_v2",
    "build_control_batch",
    "build_legacy_message",
    "build_legacy_wrapper",
    "build_legacy_entries",
    "CREATE_TIME",
    "LOG_APPEND_TIME",
]

CREATE_TIME = 0
LOG_APPEND_TIME = 1
Header = tuple[str, "bytes | None"]


class ControlType:
    """Control record types (``ControlRecordType.java``)."""

    ABORT = 0
    COMMIT = 1
    LEADER_CHANGE = 2


@dataclass(frozen=True)
class Record:
    """One record as a producer sent it: absolute ``offset``, CreateTime ``timestamp`` (ms), nullable key/value."""

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[Header, ...] = ()


class EncodedBatch(NamedTuple):
    """A batch's bytes plus the facts a log needs to index it and track producer state.

    ``first_offset`` is the first record's offset (the base offset of a v2 batch, the first inner offset of a
    legacy wrapper); ``last_offset`` the last one; ``max_timestamp`` what the batch header says (-1 for magic 0);
    ``control_type`` is set for COMMIT/ABORT marker batches.
    """

    data: bytes
    magic: int
    first_offset: int
    last_offset: int
    max_timestamp: int
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = -1
    base_sequence: int = NO_SEQUENCE
    is_transactional: bool = False
    control_type: int | None = None
    coordinator_epoch: int = -1
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH
    records_count: int = 0


# varints ------------------------------------------------------------------------------------------------------------
def _uvarint(z: int) -> bytes:
    out = bytearray()
    while z >= 0x80:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z)
    return bytes(out)


_SMALL = 1 << 14
_VARINT_CACHE = [_uvarint((v << 1) if v >= 0 else ((-v << 1) - 1)) for v in range(0, _SMALL)]
_NEG_CACHE = [b""] + [_uvarint((v << 1) - 1) for v in range(1, 130)]  # value -v at index v


def encode_varint(value: int) -> bytes:
    """Zig-zag LEB128 (``ByteUtils.writeVarint``/``writeVarlong``: the same bytes for values in range)."""
    if 0 <= value < _SMALL:
        return _VARINT_CACHE[value]
    if -130 < value < 0:
        return _NEG_CACHE[-value]
    return _uvarint((value << 1) if value >= 0 else ((-value << 1) - 1))


_NULL = encode_varint(-1)
_ZERO = encode_varint(0)


def _header_bytes(headers: Sequence[Header]) -> bytes:
    parts = [encode_varint(len(headers))]
    for hkey, hvalue in headers:
        kb = hkey.encode("utf-8")
        parts.append(encode_varint(len(kb)))
        parts.append(kb)
        if hvalue is None:
            parts.append(_NULL)
        else:
            parts.append(encode_varint(len(hvalue)))
            parts.append(hvalue)
    return b"".join(parts)


def encode_record(offset_delta: int, timestamp_delta: int, key: bytes | None, value: bytes | None,
                  headers: Sequence[Header] = ()) -> bytes:
    """One ``DefaultRecord`` (length prefix included)."""
    body = b"".join((
        b"\x00",
        encode_varint(timestamp_delta),
        encode_varint(offset_delta),
        _NULL if key is None else encode_varint(len(key)),
        b"" if key is None else key,
        _NULL if value is None else encode_varint(len(value)),
        b"" if value is None else value,
        _header_bytes(headers) if headers else _ZERO,
    ))
    return encode_varint(len(body)) + body


def encode_records(records: Sequence[Record], base_offset: int, base_timestamp: int) -> bytes:
    """The uncompressed records section of a v2 batch."""
    return b"".join(encode_record(r.offset - base_offset, r.timestamp - base_timestamp, r.key, r.value, r.headers)
                    for r in records)


# v2 batches ---------------------------------------------------------------------------------------------------------
_V2_PREFIX = struct.Struct(">qiib")       # baseOffset, batchLength, partitionLeaderEpoch, magic
_V2_AFTER_CRC = struct.Struct(">hiqqqhii")  # attributes .. recordsCount


def assemble_batch_v2(*, base_offset: int, partition_leader_epoch: int, attributes: int, last_offset_delta: int,
                      base_timestamp: int, max_timestamp: int, producer_id: int, producer_epoch: int,
                      base_sequence: int, records_count: int, payload: bytes) -> bytes:
    """Header + already encoded (and compressed) ``payload``, with the CRC-32C computed over attributes..end."""
    after_crc = _V2_AFTER_CRC.pack(attributes, last_offset_delta, base_timestamp, max_timestamp, producer_id,
                                   producer_epoch, base_sequence, records_count)
    crc = _crc32c.crc32c(payload, _crc32c.crc32c(after_crc))
    batch_length = V2_HEADER_SIZE - 12 + len(payload)
    return b"".join((_V2_PREFIX.pack(base_offset, batch_length, partition_leader_epoch, 2),
                     struct.pack(">I", crc), after_crc, payload))


def build_batch_v2(records: Sequence[Record], *, codec: int | str = 0, base_offset: int | None = None,
                   last_offset: int | None = None, timestamp_type: int = CREATE_TIME,
                   log_append_time: int | None = None, is_transactional: bool = False, is_control: bool = False,
                   producer_id: int = NO_PRODUCER_ID, producer_epoch: int = -1, base_sequence: int = NO_SEQUENCE,
                   partition_leader_epoch: int = 0, delete_horizon_ms: int | None = None,
                   empty_timestamp: int | None = None) -> EncodedBatch:
    """A v2 ``DefaultRecordBatch`` holding ``records`` (offsets may have gaps, as after compaction).

    ``base_offset``/``last_offset`` default to the first/last record's offset; they are required for an empty
    batch (recordsCount 0, as the cleaner leaves for a producer's last batch: codec none, baseTimestamp -1,
    maxTimestamp ``empty_timestamp``). Under ``timestamp_type=LOG_APPEND_TIME`` the header's maxTimestamp is
    ``log_append_time`` and the records keep their producer deltas (readers ignore them), as the broker's in-place
    rewrite leaves them. ``delete_horizon_ms`` sets attribute bit 6 and becomes the base timestamp.
    """
    cid = codec_id(codec)
    if records:
        base_offset = records[0].offset if base_offset is None else base_offset
        last_offset = records[-1].offset if last_offset is None else last_offset
        first_ts = records[0].timestamp
        create_max = max(r.timestamp for r in records)
    else:
        if base_offset is None or last_offset is None:
            raise InvalidOptionError("an empty batch needs base_offset and last_offset")
        # DefaultRecordBatch.writeEmptyHeader: baseTimestamp NO_TIMESTAMP, maxTimestamp the given timestamp
        first_ts = NO_TIMESTAMP
        create_max = NO_TIMESTAMP if empty_timestamp is None else empty_timestamp
    # an empty batch is written with codec none (DefaultRecordBatch.writeEmptyHeader)
    attributes = cid if records else 0
    if timestamp_type == LOG_APPEND_TIME:
        if log_append_time is None:
            raise InvalidOptionError("LogAppendTime batches need log_append_time")
        attributes |= TIMESTAMP_TYPE_MASK
        max_timestamp = log_append_time
    else:
        max_timestamp = create_max
    if is_transactional:
        attributes |= TRANSACTIONAL_MASK
    if is_control:
        attributes |= CONTROL_MASK
    base_timestamp = first_ts
    if delete_horizon_ms is not None:
        attributes |= DELETE_HORIZON_MASK
        base_timestamp = delete_horizon_ms
    raw = encode_records(records, base_offset, base_timestamp)
    payload = compress(cid, raw) if attributes & 0x07 else raw
    data = assemble_batch_v2(base_offset=base_offset, partition_leader_epoch=partition_leader_epoch,
                             attributes=attributes, last_offset_delta=last_offset - base_offset,
                             base_timestamp=base_timestamp, max_timestamp=max_timestamp, producer_id=producer_id,
                             producer_epoch=producer_epoch, base_sequence=base_sequence,
                             records_count=len(records), payload=payload)
    return EncodedBatch(data, 2, base_offset, last_offset, max_timestamp, producer_id, producer_epoch,
                        base_sequence, is_transactional, None, -1, partition_leader_epoch, len(records))


def control_key(control_type: int) -> bytes:
    return struct.pack(">hh", 0, control_type)


def end_txn_marker_value(coordinator_epoch: int) -> bytes:
    return struct.pack(">hi", 0, coordinator_epoch)


def build_control_batch(offset: int, timestamp: int, control_type: int, *, producer_id: int, producer_epoch: int,
                        coordinator_epoch: int = 0, partition_leader_epoch: int = 0,
                        timestamp_type: int = CREATE_TIME) -> EncodedBatch:
    """A COMMIT/ABORT marker batch (``MemoryRecords.withEndTransactionMarker``): one control record, transactional,
    no sequence. Under LogAppendTime the marker's header carries ``timestamp`` as the append time."""
    record = Record(offset, timestamp, control_key(control_type), end_txn_marker_value(coordinator_epoch))
    batch = build_batch_v2([record], timestamp_type=timestamp_type, log_append_time=timestamp,
                           is_transactional=True, is_control=True, producer_id=producer_id,
                           producer_epoch=producer_epoch, base_sequence=NO_SEQUENCE,
                           partition_leader_epoch=partition_leader_epoch)
    return batch._replace(control_type=control_type, coordinator_epoch=coordinator_epoch)


# legacy -------------------------------------------------------------------------------------------------------------
def build_legacy_message(offset: int, magic: int, key: bytes | None, value: bytes | None, *,
                         timestamp: int = NO_TIMESTAMP, attributes: int = 0) -> bytes:
    """One v0/v1 message-set entry (``LegacyRecord.write``), CRC-32 over magic..end."""
    if magic not in (0, 1):
        raise InvalidOptionError(f"legacy magic must be 0 or 1, not {magic}")
    parts = [struct.pack(">bb", magic, attributes)]
    if magic == 1:
        parts.append(struct.pack(">q", timestamp))
    parts.append(struct.pack(">i", -1) if key is None else struct.pack(">i", len(key)) + key)
    parts.append(struct.pack(">i", -1) if value is None else struct.pack(">i", len(value)) + value)
    body = b"".join(parts)
    crc = zlib.crc32(body) & 0xFFFFFFFF
    return struct.pack(">qiI", offset, 4 + len(body), crc) + body


def build_legacy_wrapper(records: Sequence[Record], magic: int, codec: int | str, *,
                         timestamp_type: int = CREATE_TIME, log_append_time: int | None = None,
                         inner_magic: int | None = None) -> EncodedBatch:
    """A compressed legacy wrapper holding ``records`` (inner entries uncompressed, offsets per the wrapper
    magic's rule). ``inner_magic`` writes the inner entries in the other legacy format, as 0.10.0's log cleaner
    did (KAFKA-4298: a v1 wrapper around v0 messages, or the reverse); the default is the wrapper's magic."""
    inner_magic = magic if inner_magic is None else inner_magic
    if inner_magic not in (0, 1):
        raise InvalidOptionError(f"legacy inner magic must be 0 or 1, not {inner_magic}")
    cid = codec_id(codec)
    if cid == 0 or cid == 4:
        raise InvalidOptionError(f"legacy wrappers take gzip, snappy or lz4, not codec {cid}")
    if not records:
        raise InvalidOptionError("a legacy wrapper needs at least one record")
    first = records[0].offset
    inner = []
    for r in records:
        inner_offset = r.offset - first if magic == 1 else r.offset
        inner.append(build_legacy_message(inner_offset, inner_magic, r.key, r.value,
                                           timestamp=r.timestamp if inner_magic == 1 else NO_TIMESTAMP))
    payload = compress(cid, b"".join(inner), magic=magic)
    attributes = cid
    wrapper_ts = NO_TIMESTAMP
    if magic == 1:
        if timestamp_type == LOG_APPEND_TIME:
            if log_append_time is None:
                raise InvalidOptionError("LogAppendTime wrappers need log_append_time")
            attributes |= TIMESTAMP_TYPE_MASK
            wrapper_ts = log_append_time
        else:
            wrapper_ts = max(r.timestamp for r in records)
    last = records[-1].offset
    data = build_legacy_message(last, magic, None, payload, timestamp=wrapper_ts, attributes=attributes)
    return EncodedBatch(data, magic, first, last, wrapper_ts, records_count=len(records))


def build_legacy_entries(records: Sequence[Record], magic: int, *, timestamp_type: int = CREATE_TIME,
                         log_append_time: int | None = None) -> list[EncodedBatch]:
    """Uncompressed legacy entries, one per record; under LogAppendTime (v1) each carries the append time."""
    out = []
    for r in records:
        attributes = 0
        ts = NO_TIMESTAMP
        if magic == 1:
            ts = r.timestamp
            if timestamp_type == LOG_APPEND_TIME:
                if log_append_time is None:
                    raise InvalidOptionError("LogAppendTime entries need log_append_time")
                attributes = TIMESTAMP_TYPE_MASK
                ts = log_append_time
        data = build_legacy_message(r.offset, magic, r.key, r.value, timestamp=ts, attributes=attributes)
        out.append(EncodedBatch(data, magic, r.offset, r.offset, ts, records_count=1))
    return out
