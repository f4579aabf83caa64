"""Batch checksums: CRC-32C for v2 batches (bytes 21..end, ``DefaultRecordBatch.computeChecksum``), CRC-32 (zlib)
for legacy entries (bytes 16..end, i.e. magic to the end of the value, ``LegacyRecord.computeChecksum``)."""

from __future__ import annotations

import zlib

import crc32c as _crc32c

from kafkaseg.wire.batch import MAGIC_OFFSET, V2_ATTRIBUTES_OFFSET, BatchHeader


def crc32c(data) -> int:
    """CRC-32C (Castagnoli) of ``data``, hardware-accelerated by the ``crc32c`` package where the CPU allows."""
    return _crc32c.crc32c(data)


def computed_crc(buf, header: BatchHeader) -> int:
    """The checksum the batch at ``header.position`` in ``buf`` should carry."""
    view = memoryview(buf)
    if header.magic == 2:
        return crc32c(view[header.position + V2_ATTRIBUTES_OFFSET:header.end])
    return zlib.crc32(view[header.position + MAGIC_OFFSET:header.end]) & 0xFFFFFFFF


def crc_is_valid(buf, header: BatchHeader) -> bool:
    return computed_crc(buf, header) == header.crc

