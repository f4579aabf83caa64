"""Record batch headers: v2 batches and legacy v0/v1 message-set entries, parsed from buffers (no I/O).

Every batch or legacy entry starts with the same 17 bytes, which is how a reader tells them apart
(``clients/src/main/java/org/apache/kafka/common/record/Records.java``: OFFSET_OFFSET 0, SIZE_OFFSET 8,
MAGIC_OFFSET 16, LOG_OVERHEAD 12)::

    offset      int64   v2: baseOffset; v0/v1: the entry's offset (a compressed wrapper's is its LAST inner offset)
    size        int32   bytes after this field; the whole entry is LOG_OVERHEAD + size
    ...         4 bytes v2: partitionLeaderEpoch; v0/v1: crc
    magic       int8    at byte 16 in every version

v2 header (``DefaultRecordBatch.java``, 61 bytes before the records)::

    baseOffset           int64   @0
    batchLength          int32   @8
    partitionLeaderEpoch int32   @12   not covered by the CRC
    magic                int8    @16   = 2
    crc                  uint32  @17   CRC-32C of bytes 21..end
    attributes           int16   @21   bits 0-2 codec, 3 timestampType, 4 isTransactional, 5 isControl,
                                       6 hasDeleteHorizonMs
    lastOffsetDelta      int32   @23
    baseTimestamp        int64   @27   (the deleteHorizonMs when attribute bit 6 is set)
    maxTimestamp         int64   @35
    producerId           int64   @43
    producerEpoch        int16   @51
    baseSequence         int32   @53
    recordsCount         int32   @57
    records                      @61   one compressed stream when the codec is not 0

Legacy entry (``LegacyRecord.java``; v0 has no timestamp)::

    offset int64 | size int32 | crc uint32 (CRC-32 of magic..end) | magic int8 | attributes int8
    | timestamp int64 (v1 only) | keyLength int32 (-1 = null) | key | valueLength int32 (-1 = null) | value

Legacy attributes: bits 0-2 codec (0 none, 1 gzip, 2 snappy, 3 lz4; 4 zstd is not valid below v2),
bit 3 timestampType (v1 only).

Control records (``DefaultRecord.java``, ``ControlRecordType.java``): the records of a control batch (attribute bit
5) are ordinary v2 records whose key is ``version int16 | type int16`` (0 ABORT, 1 COMMIT, 2 LEADER_CHANGE, ...);
:func:`read_control_key` reads it from the first record without decoding the rest. A record starts
``length varint | attributes int8 | timestampDelta varlong | offsetDelta varint | keyLength varint | key``
(varints are protobuf zig-zag, ``ByteUtils.readVarint``).
"""

from __future__ import annotations

import struct
from typing import Iterator, NamedTuple

from kafkaseg.errors import CorruptBatchError, TruncatedDataError, UnsupportedMagicError

# Shared prefix ------------------------------------------------------------------------------------------------------
LOG_OVERHEAD = 12
MAGIC_OFFSET = 16
HEADER_PREFIX_SIZE = 17  # enough bytes to know the entry's size and magic
_PREFIX = struct.Struct(">qiib")  # offset, size, (epoch or crc as signed int), magic

# v2 -----------------------------------------------------------------------------------------------------------------
V2_HEADER_SIZE = 61
V2_CRC_OFFSET = 17
V2_ATTRIBUTES_OFFSET = 21
V2_RECORDS_COUNT_OFFSET = 57
_V2_HEADER = struct.Struct(">qiibIhiqqqhii")

# Legacy -------------------------------------------------------------------------------------------------------------
LEGACY_V0_HEADER_SIZE = 26  # offset, size, crc, magic, attributes, keyLength(4), valueLength(4)
LEGACY_V1_HEADER_SIZE = 34  # + timestamp
LEGACY_CRC_OFFSET = 12
_LEGACY_V0 = struct.Struct(">qiIbb")
_LEGACY_V1 = struct.Struct(">qiIbbq")
# Smallest valid entry sizes (the ``size`` field): v0 14 (crc..valueLength), v1 22, v2 49.
MIN_ENTRY_SIZE = {0: LEGACY_V0_HEADER_SIZE - LOG_OVERHEAD, 1: LEGACY_V1_HEADER_SIZE - LOG_OVERHEAD,
                  2: V2_HEADER_SIZE - LOG_OVERHEAD}

# Attributes ---------------------------------------------------------------------------------------------------------
CODEC_MASK = 0x07
TIMESTAMP_TYPE_MASK = 0x08
TRANSACTIONAL_MASK = 0x10
CONTROL_MASK = 0x20
DELETE_HORIZON_MASK = 0x40

NO_TIMESTAMP = -1
NO_PRODUCER_ID = -1
NO_SEQUENCE = -1
NO_PARTITION_LEADER_EPOCH = -1

CODEC_NAMES = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}
CODEC_IDS = {name: cid for cid, name in CODEC_NAMES.items()}
TIMESTAMP_TYPE_NAMES = {-1: "NoTimestampType", 0: "CreateTime", 1: "LogAppendTime"}


class BatchHeader(NamedTuple):
    """What a batch's header says, for v2 batches and legacy entries alike.

    ``position`` is where the batch starts in its buffer or file; ``size`` its whole length including the 12-byte
    log overhead. For a legacy entry, ``base_offset`` and ``last_offset`` are both the entry's offset (for a
    compressed wrapper that is its last inner offset: the inner base is only known after decompression),
    ``records_count`` is 1 for an uncompressed entry and -1 (unknown without decompressing) for a wrapper,
    and v2-only fields hold Kafka's "none" values (-1).
    """

    position: int
    size: int
    magic: int
    base_offset: int
    last_offset: int
    partition_leader_epoch: int
    crc: int
    attributes: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records_count: int

    @property
    def codec(self) -> int:
        return self.attributes & CODEC_MASK

    @property
    def codec_name(self) -> str:
        return CODEC_NAMES.get(self.codec, f"unknown({self.codec})")

    @property
    def timestamp_type(self) -> int:
        """0 CreateTime, 1 LogAppendTime, -1 none (magic 0)."""
        if self.magic == 0:
            return -1
        return 1 if self.attributes & TIMESTAMP_TYPE_MASK else 0

    @property
    def is_transactional(self) -> bool:
        return self.magic >= 2 and bool(self.attributes & TRANSACTIONAL_MASK)

    @property
    def is_control(self) -> bool:
        return self.magic >= 2 and bool(self.attributes & CONTROL_MASK)

    @property
    def has_delete_horizon(self) -> bool:
        return self.magic >= 2 and bool(self.attributes & DELETE_HORIZON_MASK)

    @property
    def delete_horizon_ms(self) -> int:
        """Kafka's deleteHorizonMs: the base timestamp when bit 6 is set, else -1 (RecordBatch.NO_TIMESTAMP)."""
        return self.base_timestamp if self.has_delete_horizon else NO_TIMESTAMP

    @property
    def last_sequence(self) -> int:
        """``DefaultRecordBatch.lastSequence``: wraps at Int32.MAX like Kafka's ``incrementSequence``."""
        if self.base_sequence == NO_SEQUENCE:
            return NO_SEQUENCE
        delta = self.last_offset - self.base_offset
        return (self.base_sequence + delta) % (1 << 31)

    @property
    def next_offset(self) -> int:
        return self.last_offset + 1

    @property
    def end(self) -> int:
        """Position just past this batch."""
        return self.position + self.size


def read_header(buf, position: int = 0, *, max_batch_size: int | None = None,
                available: int | None = None) -> BatchHeader:
    """Parse the header of the batch or legacy entry starting at ``position`` in ``buf``.

    Raises :class:`TruncatedDataError` when the header or the body it announces runs past the buffer,
    :class:`UnsupportedMagicError` for a magic other than 0-2 and :class:`CorruptBatchError` for a size
    smaller than the format allows or larger than ``max_batch_size``. Positions in errors are buffer-relative.
    CRCs are not checked here (see :mod:`kafkaseg.wire.crc`).

    ``available`` (default: what ``buf`` holds after ``position``) is how many bytes the entry may span from
    ``position``: a reader that fetched only a header from a file passes the bytes left in the file, so the
    body's length is checked against the file while ``buf`` holds just the header (at least
    ``V2_HEADER_SIZE`` bytes, or the whole entry when it is shorter).
    """
    in_buffer = len(buf) - position
    available = in_buffer if available is None else available
    if available < HEADER_PREFIX_SIZE:
        raise TruncatedDataError(
            f"batch header needs {HEADER_PREFIX_SIZE} bytes, only {available} left", position=position)
    if in_buffer < HEADER_PREFIX_SIZE:
        raise TruncatedDataError(
            f"batch header needs {HEADER_PREFIX_SIZE} bytes, only {in_buffer} in the buffer", position=position)
    offset, size, _, magic = _PREFIX.unpack_from(buf, position)
    if magic not in MIN_ENTRY_SIZE:
        raise UnsupportedMagicError(f"unknown magic {magic} (batch at offset {offset}, size {size})",
                                    position=position)
    if size < MIN_ENTRY_SIZE[magic]:
        raise CorruptBatchError(
            f"magic {magic} batch size {size} is smaller than the minimum {MIN_ENTRY_SIZE[magic]}",
            position=position)
    if max_batch_size is not None and size > max_batch_size:
        raise CorruptBatchError(
            f"batch size {size} exceeds maxBatchBytes {max_batch_size} (absurd length field?)", position=position)
    total = LOG_OVERHEAD + size
    if total > available:
        raise TruncatedDataError(
            f"magic {magic} batch at offset {offset} needs {total} bytes, only {available} left", position=position)
    if in_buffer < min(total, V2_HEADER_SIZE if magic == 2 else _LEGACY_V1.size if magic == 1 else _LEGACY_V0.size):
        raise TruncatedDataError(
            f"magic {magic} batch header needs more bytes than the {in_buffer} in the buffer", position=position)
    if magic == 2:
        (base_offset, _, epoch, _, crc, attributes, last_delta, base_ts, max_ts, pid, pepoch, base_seq,
         count) = _V2_HEADER.unpack_from(buf, position)
        if last_delta < 0:  # lastOffset = baseOffset + lastOffsetDelta is never below baseOffset
            raise CorruptBatchError(f"negative lastOffsetDelta {last_delta} (batch at offset {base_offset})",
                                    position=position)
        if base_offset + last_delta >= _INT64_MAX:  # Java's sum wraps; the log end offset (one past) must fit too
            raise CorruptBatchError(f"last offset {base_offset + last_delta} (base offset {base_offset} + "
                                    f"lastOffsetDelta {last_delta}) leaves no next offset in a 64-bit long",
                                    position=position)
        return BatchHeader(position, total, 2, base_offset, base_offset + last_delta, epoch, crc, attributes,
                           base_ts, max_ts, pid, pepoch, base_seq, count)
    if magic == 1:
        _, _, crc, _, attributes, ts = _LEGACY_V1.unpack_from(buf, position)
    else:
        _, _, crc, _, attributes = _LEGACY_V0.unpack_from(buf, position)
        ts = NO_TIMESTAMP
    if offset >= _INT64_MAX:
        raise CorruptBatchError(f"offset {offset} leaves no next offset in a 64-bit long", position=position)
    count = 1 if attributes & CODEC_MASK == 0 else -1
    return BatchHeader(position, total, magic, offset, offset, NO_PARTITION_LEADER_EPOCH, crc, attributes,
                       ts, ts, NO_PRODUCER_ID, -1, NO_SEQUENCE, count)


_INT64_MAX = (1 << 63) - 1

CONTROL_ABORT = 0
CONTROL_COMMIT = 1


def _read_varint(buf, position: int, end: int) -> tuple[int, int]:
    """Zig-zag varint (at most 10 bytes) at ``position``; returns (value, next position)."""
    value = shift = 0
    start = position
    while True:
        if position >= end:
            raise TruncatedDataError("varint runs past the end of the record data", position=start)
        byte = buf[position]
        position += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return (value >> 1) ^ -(value & 1), position
        shift += 7
        if shift >= 70:
            raise CorruptBatchError("varint longer than 10 bytes", position=start)


def read_control_key(buf, position: int = 0, end: int | None = None) -> tuple[int, int]:
    """``(version, type)`` from the key of the control record starting at ``position`` (in an uncompressed control
    batch, the first record starts at the batch's position + ``V2_HEADER_SIZE``). ``end`` bounds the record data.
    Raises :class:`TruncatedDataError` when the key runs past ``end`` and :class:`CorruptBatchError` for a
    malformed record or a key shorter than 4 bytes (``ControlRecordType.parseTypeId``)."""
    end = len(buf) if end is None else min(end, len(buf))
    length, p = _read_varint(buf, position, end)
    if length < 0:
        raise CorruptBatchError(f"control record length {length} is negative", position=position)
    p += 1  # attributes
    _, p = _read_varint(buf, p, end)  # timestampDelta
    _, p = _read_varint(buf, p, end)  # offsetDelta
    key_length, p = _read_varint(buf, p, end)
    if key_length < 4:
        raise CorruptBatchError(f"control record key of {key_length} bytes (needs version and type, 4 bytes)",
                                position=position)
    if p + 4 > end:
        raise TruncatedDataError("control record key runs past the end of the record data", position=position)
    version, type_id = struct.unpack_from(">hh", buf, p)
    return version, type_id


def iter_headers(buf, start: int = 0, end: int | None = None, *,
                 max_batch_size: int | None = None) -> Iterator[BatchHeader]:
    """Yield the header of every batch in ``buf[start:end]``, in order, without touching record data.

    A batch that runs past ``end`` raises :class:`TruncatedDataError` (callers that read an active segment catch it:
    the bytes before it are good). Positions are relative to ``buf``.
    """
    end = len(buf) if end is None else end
    view = memoryview(buf)[:end] if end != len(buf) else buf
    position = start
    while position < end:
        header = read_header(view, position, max_batch_size=max_batch_size)
        yield header
        position += header.size
