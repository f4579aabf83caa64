"""Producer state snapshots: ``<offset>.snapshot`` files in a partition dir.

Layout (``storage/src/main/resources/message/ProducerSnapshot.json``, read by
``ProducerStateManager.readSnapshot``), big-endian::

    version        int16   1 (the only valid version)
    crc            uint32  CRC-32C of bytes 6..EOF (PRODUCER_ENTRIES_OFFSET = 6)
    entry count    int32
    entries        count x 46 bytes:
        producerId            int64
        epoch                 int16
        lastSequence          int32
        lastOffset            int64   (-1: no batch metadata)
        offsetDelta           int32
        timestamp             int64
        coordinatorEpoch      int32
        currentTxnFirstOffset int64   (-1: no ongoing transaction)

The file name is the log end offset when the snapshot was taken: the state reflects every batch below it.
"""

from __future__ import annotations

import re
import struct
from typing import NamedTuple, Sequence

import numpy as np
import pyarrow.fs as pafs

from kafkaseg.errors import CorruptCheckpointError, LayoutError
from kafkaseg.storage import fs as _fs
from kafkaseg.wire.crc import crc32c

__all__ = [
    "ProducerSnapshotEntry",
    "ProducerSnapshot",
    "parse_producer_snapshot",
    "read_producer_snapshot",
    "lists_transactional_producers",
    "encode_producer_snapshot",
    "snapshot_offset_from_name",
    "SNAPSHOT_SUFFIX",
]

SNAPSHOT_SUFFIX = ".snapshot"
SNAPSHOT_VERSION = 1
_HEADER = struct.Struct(">hIi")  # version, crc, count
ENTRIES_OFFSET = 6  # ProducerStateManager.PRODUCER_ENTRIES_OFFSET: the CRC covers bytes 6..EOF
_ENTRY = struct.Struct(">qhiqiqiq")
ENTRY_SIZE = _ENTRY.size  # 46
_SNAPSHOT_CAP = 256 * 1024 * 1024  # ~5.8M producers; refuse larger files rather than allocate blindly


class ProducerSnapshotEntry(NamedTuple):
    """One producer's state (``ProducerStateEntry`` as ``readSnapshot`` builds it)."""

    producer_id: int
    epoch: int
    last_sequence: int
    last_offset: int
    offset_delta: int
    timestamp: int
    coordinator_epoch: int
    current_txn_first_offset: int

    @property
    def has_ongoing_transaction(self) -> bool:
        """Kafka keeps ``currentTxnFirstOffset`` only when it is >= 0."""
        return self.current_txn_first_offset >= 0


class ProducerSnapshot(NamedTuple):
    """A parsed ``.snapshot`` file: ``offset`` from its name (None when the name has none)."""

    path: str | None
    offset: int | None
    entries: tuple[ProducerSnapshotEntry, ...]

    def ongoing_transactions(self) -> dict[int, int]:
        """``{producerId: first offset}`` of the transactions open when the snapshot was taken."""
        return {e.producer_id: e.current_txn_first_offset for e in self.entries if e.has_ongoing_transaction}


def snapshot_offset_from_name(name: str) -> int | None:
    """The offset a ``<20 digits>.snapshot`` file name carries, or None."""
    match = re.fullmatch(r"(\d+)\.snapshot", name)
    return int(match.group(1)) if match else None


def _checked_entries(data: bytes, path: str | None) -> bytes | memoryview:
    """The entries' bytes of a snapshot, after its header, length and CRC checks (CorruptCheckpointError)."""
    if len(data) < _HEADER.size:
        raise CorruptCheckpointError(f"producer snapshot needs {_HEADER.size} header bytes, found {len(data)}",
                                     path=path, position=0)
    version, stored_crc, count = _HEADER.unpack_from(data, 0)
    if version != SNAPSHOT_VERSION:
        # ProducerStateManager.readSnapshot's own words, which scripts grep for
        raise CorruptCheckpointError(f"Snapshot failed schema validation: Snapshot contained an unknown file version "
                                     f"{version}", path=path, position=0)
    if count < 0:
        raise CorruptCheckpointError(f"negative producer entry count {count}", path=path, position=6)
    needed = _HEADER.size + count * ENTRY_SIZE
    if needed > len(data):
        raise CorruptCheckpointError(
            f"producer snapshot announces {count} entries ({needed} bytes) but has {len(data)} bytes",
            path=path, position=6)
    computed = crc32c(memoryview(data)[ENTRIES_OFFSET:])
    if computed != stored_crc:
        raise CorruptCheckpointError(
            f"Snapshot is corrupt (CRC is no longer valid). Stored crc: {stored_crc}. Computed crc: {computed}",
            path=path, position=2)
    return memoryview(data)[_HEADER.size:needed]


def parse_producer_snapshot(data: bytes, path: str | None = None) -> ProducerSnapshot:
    """Parse and CRC-check a snapshot's bytes; malformed input raises :class:`CorruptCheckpointError`."""
    entries = tuple(ProducerSnapshotEntry(*fields) for fields in _ENTRY.iter_unpack(_checked_entries(data, path)))
    offset = snapshot_offset_from_name(_fs.basename(path)) if path else None
    return ProducerSnapshot(path, offset, entries)


#: The entry layout as a numpy record (big-endian, packed): a whole snapshot checked without a Python object per
#: producer (a 230 MB snapshot of 5M producers took 1.4 GB as NamedTuples).
_ENTRY_DTYPE = np.dtype([("producer_id", ">i8"), ("epoch", ">i2"), ("last_sequence", ">i4"), ("last_offset", ">i8"),
                         ("offset_delta", ">i4"), ("timestamp", ">i8"), ("coordinator_epoch", ">i4"),
                         ("current_txn_first_offset", ">i8")])
assert _ENTRY_DTYPE.itemsize == ENTRY_SIZE


def lists_transactional_producers(path: str, filesystem: pafs.FileSystem | None = None) -> bool:
    """Whether the snapshot at ``path`` lists a producer that ever wrote a transaction marker (coordinatorEpoch >=
    0) or has a transaction open; checked as :func:`read_producer_snapshot` checks the file (CorruptCheckpointError
    when malformed)."""
    entries = np.frombuffer(_checked_entries(_read_snapshot_file(path, filesystem), path), dtype=_ENTRY_DTYPE)
    return bool((entries["coordinator_epoch"] >= 0).any() or (entries["current_txn_first_offset"] >= 0).any())


def read_producer_snapshot(path: str, filesystem: pafs.FileSystem | None = None) -> ProducerSnapshot:
    """Read and parse one ``.snapshot`` file (refusing files above 256 MiB)."""
    return parse_producer_snapshot(_read_snapshot_file(path, filesystem), path)


def _read_snapshot_file(path: str, filesystem: pafs.FileSystem | None) -> bytes:
    try:
        return _fs.read_small_file(path, filesystem, max_bytes=_SNAPSHOT_CAP)
    except LayoutError as exc:
        raise CorruptCheckpointError(str(exc), path=path, position=0) from exc


def encode_producer_snapshot(entries: Sequence[ProducerSnapshotEntry]) -> bytes:
    """The bytes ``ProducerStateManager.writeSnapshot`` would write for ``entries`` (for fixtures and tests)."""
    body = struct.pack(">i", len(entries)) + b"".join(_ENTRY.pack(*e) for e in entries)
    return struct.pack(">hI", SNAPSHOT_VERSION, crc32c(body)) + body
