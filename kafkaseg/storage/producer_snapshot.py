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
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
import pyarrow.fs as pafs

from kafkaseg.errors import CorruptCheckpointError, LayoutError
from kafkaseg.storage import fs as _fs
from kafkaseg.wire.crc import crc32c

__all__ = [
    "ProducerSnapshotEntry",
    "ProducerSnapshot",
    "ProducerSnapshotEntries",
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


class ProducerSnapshotEntries(Sequence[ProducerSnapshotEntry]):
    """A snapshot's entries as a read-only sequence over the file's bytes: a :class:`ProducerSnapshotEntry` is made
    only for the entry asked for, so a snapshot of millions of producers costs its file size, not a Python object
    per producer (a 230 MB snapshot of 5M producers took 1.4 GB as a tuple of NamedTuples)."""

    __slots__ = ("_array",)

    def __init__(self, array: np.ndarray) -> None:
        self._array = array

    @property
    def array(self) -> np.ndarray:
        """The entries as a numpy record array (big-endian fields named as :class:`ProducerSnapshotEntry`'s)."""
        return self._array

    def __len__(self) -> int:
        return len(self._array)

    def __getitem__(self, index):
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        return ProducerSnapshotEntry(*(int(v) for v in self._array[index].item()))

    def __iter__(self):
        for i in range(len(self._array)):
            yield self[i]

    def __eq__(self, other) -> bool:
        return isinstance(other, Sequence) and len(self) == len(other) and all(a == b for a, b in zip(self, other))

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"ProducerSnapshotEntries({len(self)} entries)"


class ProducerSnapshot(NamedTuple):
    """A parsed ``.snapshot`` file: ``offset`` from its name (None when the name has none)."""

    path: str | None
    offset: int | None
    entries: ProducerSnapshotEntries

    def ongoing_transactions(self) -> dict[int, int]:
        """``{producerId: first offset}`` of the transactions open when the snapshot was taken."""
        array = self.entries.array
        open_ = array[array["current_txn_first_offset"] >= 0]
        return dict(zip(open_["producer_id"].tolist(), open_["current_txn_first_offset"].tolist()))


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


#: The entry layout as a numpy record (big-endian, packed): a whole snapshot read without a Python object per
#: producer.
_ENTRY_DTYPE = np.dtype([("producer_id", ">i8"), ("epoch", ">i2"), ("last_sequence", ">i4"), ("last_offset", ">i8"),
                         ("offset_delta", ">i4"), ("timestamp", ">i8"), ("coordinator_epoch", ">i4"),
                         ("current_txn_first_offset", ">i8")])
assert _ENTRY_DTYPE.itemsize == ENTRY_SIZE


def parse_producer_snapshot(data: bytes, path: str | None = None) -> ProducerSnapshot:
    """Parse and CRC-check a snapshot's bytes; malformed input raises :class:`CorruptCheckpointError`. The entries
    are a view of ``data``, not a copy."""
    entries = ProducerSnapshotEntries(np.frombuffer(_checked_entries(data, path), dtype=_ENTRY_DTYPE))
    offset = snapshot_offset_from_name(_fs.basename(path)) if path else None
    return ProducerSnapshot(path, offset, entries)


def lists_transactional_producers(path: str, filesystem: pafs.FileSystem | None = None) -> bool:
    """Whether the snapshot at ``path`` lists a producer that ever wrote a transaction marker (coordinatorEpoch >=
    0) or has a transaction open; checked as :func:`read_producer_snapshot` checks the file (CorruptCheckpointError
    when malformed)."""
    entries = read_producer_snapshot(path, filesystem).entries.array
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
