"""Write a topic-partition folder the way a broker does: segments, indexes, transaction index, producer snapshots.

Broker behaviour mirrored (apache/kafka ``storage/.../internals/log/``):

- Roll (``LogSegment.shouldRoll``): a new segment starts when the active one is non-empty and
  ``size + batchSize > segment.bytes``; its base offset is the first offset of the batch being appended. Before a
  roll the broker snapshots producer state (``<newBase>.snapshot``) and the old segment becomes inactive
  (``onBecomeInactiveSegment``: final time-index entry, indexes trimmed).
- ``.index``/``.timeindex`` (``LogSegment.append``, one batch per append as producers send them)::

      physicalPosition = log size before the batch
      if batch.maxTimestamp > maxTimestampSoFar: maxTimestampSoFar, offsetOfMaxTimestamp = batch.maxTimestamp,
                                                  batch.lastOffset
      if bytesSinceLastIndexEntry > indexIntervalBytes:
          offsetIndex.append(batch.lastOffset, physicalPosition)          # entry: relOffset int32, position int32
          timeIndex.maybeAppend(maxTimestampSoFar, offsetOfMaxTimestamp)  # entry: timestamp int64, relOffset int32
          bytesSinceLastIndexEntry = 0
      bytesSinceLastIndexEntry += batch size

  ``TimeIndex.maybeAppend`` only appends a timestamp above the last entry's (initially -1). On roll and on clean
  close the broker adds ``timeIndex.maybeAppend(maxTimestampSoFar, offsetOfMaxTimestamp, true)``. A live broker's
  active segment has its indexes preallocated (``segment.index.bytes``, rounded down to the entry size) and
  zero-filled past the last entry, and no final time-index entry yet.
- ``.txnindex`` (``TransactionIndex.java``, ``LogSegment.updateTxnIndex``): one 34-byte entry per ABORTED
  transaction, in the segment receiving its ABORT marker: version int16 0 | producerId int64 | firstOffset int64 |
  lastOffset int64 (the marker) | lastStableOffset int64 (``ProducerStateManager.lastStableOffset``: first offset of
  the earliest other ongoing transaction, else marker + 1). Files are only written when they have entries.
- ``.snapshot`` (``ProducerStateManager.writeSnapshot``, version 1)::

      version int16 = 1 | crc uint32 (CRC-32C of bytes 6..end) | count int32 | count x {producerId int64,
      producerEpoch int16, lastSequence int32, lastOffset int64, offsetDelta int32, timestamp int64,
      coordinatorEpoch int32, currentTxnFirstOffset int64}
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Mapping

import crc32c as _crc32c

from kafkaseg.testing.writer import ControlType, EncodedBatch
from kafkaseg.wire.batch import CONTROL_MASK, NO_TIMESTAMP, TRANSACTIONAL_MASK, read_header

__all__ = [
    "SegmentWriter",
    "PartitionWriter",
    "PartitionLog",
    "SegmentInfo",
    "AbortedTxn",
    "ProducerEntry",
    "encode_producer_snapshot",
    "write_offset_checkpoint",
    "write_leader_epoch_checkpoint",
    "write_partition_metadata",
    "write_meta_properties",
    "DEFAULT_INDEX_BYTES",
]

DEFAULT_INDEX_BYTES = 10 * 1024 * 1024  # segment.index.bytes
OFFSET_INDEX_ENTRY = struct.Struct(">ii")
TIME_INDEX_ENTRY = struct.Struct(">qi")
TXN_INDEX_ENTRY = struct.Struct(">hqqqq")
SNAPSHOT_ENTRY = struct.Struct(">qhiqiqiq")
SNAPSHOT_VERSION = 1


def segment_file(directory: Path, offset: int, suffix: str) -> Path:
    return directory / f"{offset:020d}{suffix}"


@dataclass(frozen=True)
class AbortedTxn:
    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int


@dataclass
class ProducerEntry:
    """A producer's state as ``ProducerStateEntry`` keeps it (what a snapshot stores)."""

    producer_id: int
    producer_epoch: int
    last_sequence: int = -1
    last_offset: int = -1
    offset_delta: int = 0
    timestamp: int = NO_TIMESTAMP
    coordinator_epoch: int = -1
    current_txn_first_offset: int = -1


def encode_producer_snapshot(entries: Iterable[ProducerEntry]) -> bytes:
    """The bytes of a version-1 ``.snapshot`` file holding ``entries`` (sorted by producer id)."""
    rows = sorted(entries, key=lambda e: e.producer_id)
    body = struct.pack(">i", len(rows)) + b"".join(
        SNAPSHOT_ENTRY.pack(e.producer_id, e.producer_epoch, e.last_sequence, e.last_offset, e.offset_delta,
                            e.timestamp, e.coordinator_epoch, e.current_txn_first_offset) for e in rows)
    return struct.pack(">hI", SNAPSHOT_VERSION, _crc32c.crc32c(body)) + body


@dataclass(frozen=True)
class SegmentInfo:
    base_offset: int
    log_path: Path
    size: int
    offset_index_entries: int
    time_index_entries: int
    aborted_txns: tuple[AbortedTxn, ...]
    max_timestamp: int


class SegmentWriter:
    """One segment: batches are appended to ``<base>.log`` as they come; index entries are kept in memory and the
    ``.index``/``.timeindex``/``.txnindex`` files written by :meth:`close`.

    ``append`` follows ``LogSegment.append``; ``append_raw`` writes bytes with no index bookkeeping (for tests
    that need garbage or a torn batch at the end of a file).
    """

    def __init__(self, directory: str | os.PathLike, base_offset: int, *, index_interval_bytes: int = 4096):
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.base_offset = base_offset
        self.index_interval_bytes = index_interval_bytes
        self.log_path = segment_file(self.directory, base_offset, ".log")
        self._log = open(self.log_path, "wb")
        self.size = 0
        self._bytes_since_last_index_entry = 0
        self._offset_index = bytearray()
        self._time_index = bytearray()
        self._last_time_entry = NO_TIMESTAMP
        self.max_timestamp_so_far = NO_TIMESTAMP
        self.offset_of_max_timestamp = -1
        self.aborted_txns: list[AbortedTxn] = []
        self.closed = False

    def append(self, data: bytes, *, last_offset: int, max_timestamp: int) -> int:
        """Append one batch; returns its position in the file."""
        position = self.size
        self._log.write(data)
        self.size += len(data)
        if max_timestamp > self.max_timestamp_so_far:
            self.max_timestamp_so_far = max_timestamp
            self.offset_of_max_timestamp = last_offset
        if self._bytes_since_last_index_entry > self.index_interval_bytes:
            self._offset_index += OFFSET_INDEX_ENTRY.pack(last_offset - self.base_offset, position)
            self._time_index_maybe_append(self.max_timestamp_so_far, self.offset_of_max_timestamp)
            self._bytes_since_last_index_entry = 0
        self._bytes_since_last_index_entry += len(data)
        return position

    def append_raw(self, data: bytes) -> int:
        """Append bytes verbatim (no index entry, no timestamp tracking); returns their position."""
        position = self.size
        self._log.write(data)
        self.size += len(data)
        return position

    def _time_index_maybe_append(self, timestamp: int, offset: int) -> None:
        if timestamp > self._last_time_entry:
            self._time_index += TIME_INDEX_ENTRY.pack(timestamp, offset - self.base_offset)
            self._last_time_entry = timestamp

    def add_aborted_txn(self, txn: AbortedTxn) -> None:
        self.aborted_txns.append(txn)

    def close(self, *, active: bool = False, preallocate_index_bytes: int | None = None) -> SegmentInfo:
        """Write the index files. ``active=True`` leaves them as a running broker's active segment has them:
        no final time-index entry, and zero-filled to ``preallocate_index_bytes`` when given."""
        if self.closed:
            raise RuntimeError(f"segment {self.log_path} already closed")
        self.closed = True
        self._log.close()
        if not active:
            self._time_index_maybe_append(self.max_timestamp_so_far, self.offset_of_max_timestamp)
        offset_index = bytes(self._offset_index)
        time_index = bytes(self._time_index)
        if active and preallocate_index_bytes:
            offset_index = _zero_pad(offset_index, preallocate_index_bytes, OFFSET_INDEX_ENTRY.size)
            time_index = _zero_pad(time_index, preallocate_index_bytes, TIME_INDEX_ENTRY.size)
        segment_file(self.directory, self.base_offset, ".index").write_bytes(offset_index)
        segment_file(self.directory, self.base_offset, ".timeindex").write_bytes(time_index)
        if self.aborted_txns:
            segment_file(self.directory, self.base_offset, ".txnindex").write_bytes(b"".join(
                TXN_INDEX_ENTRY.pack(0, t.producer_id, t.first_offset, t.last_offset, t.last_stable_offset)
                for t in self.aborted_txns))
        return SegmentInfo(self.base_offset, self.log_path, self.size,
                           len(self._offset_index) // OFFSET_INDEX_ENTRY.size,
                           len(self._time_index) // TIME_INDEX_ENTRY.size, tuple(self.aborted_txns),
                           self.max_timestamp_so_far)


def _zero_pad(entries: bytes, size: int, entry_size: int) -> bytes:
    size -= size % entry_size  # AbstractIndex.roundDownToExactMultiple
    return entries + bytes(max(0, size - len(entries)))


@dataclass
class PartitionLog:
    """What a closed :class:`PartitionWriter` left on disk."""

    directory: Path
    log_start_offset: int
    log_end_offset: int
    last_stable_offset: int
    recovery_point: int
    segments: list[SegmentInfo]
    aborted_txns: list[AbortedTxn]
    open_txns: dict[int, int]  # producerId -> first offset of its ongoing transaction
    leader_epochs: list[tuple[int, int]]
    snapshots: list[int] = field(default_factory=list)


class PartitionWriter:
    """Append batches to a topic-partition folder, rolling segments and keeping producer/transaction state.

    ``append`` takes an :class:`EncodedBatch` (from :mod:`kafkaseg.testing.writer`) or raw bytes of one
    well-formed batch (its header is read for offsets and timestamps; control-marker types are then unknown unless
    ``control_type`` is given). Offsets are not assigned here: batches carry them, so tests can write gaps.
    """

    def __init__(self, directory: str | os.PathLike, *, segment_bytes: int = 1 << 30,
                 index_interval_bytes: int = 4096, log_start_offset: int = 0, write_snapshots: bool = True):
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.segment_bytes = segment_bytes
        self.index_interval_bytes = index_interval_bytes
        self.log_start_offset = log_start_offset
        self.write_snapshots = write_snapshots
        self.next_offset = log_start_offset
        self.producers: dict[int, ProducerEntry] = {}
        self.ongoing_txns: dict[int, int] = {}
        self.aborted_txns: list[AbortedTxn] = []
        self.leader_epochs: list[tuple[int, int]] = []
        self.snapshots: list[int] = []
        self._closed_segments: list[SegmentInfo] = []
        self.active = SegmentWriter(self.directory, log_start_offset, index_interval_bytes=index_interval_bytes)

    # -- appends ------------------------------------------------------------------------------------------------
    def append(self, batch: EncodedBatch | bytes, *, control_type: int | None = None,
               coordinator_epoch: int | None = None) -> tuple[int, int]:
        """Append one batch (rolling first if it does not fit); returns ``(segment base offset, position)``."""
        if not isinstance(batch, EncodedBatch):
            batch = _facts_of(bytes(batch))
        if control_type is not None:
            batch = batch._replace(control_type=control_type)
        if coordinator_epoch is not None:
            batch = batch._replace(coordinator_epoch=coordinator_epoch)
        if self.active.size > 0 and self.active.size + len(batch.data) > self.segment_bytes:
            self.roll(batch.first_offset)
        position = self.active.append(batch.data, last_offset=batch.last_offset, max_timestamp=batch.max_timestamp)
        if batch.magic >= 2:
            self._update_leader_epoch(batch)
            self._update_producer_state(batch)
        self.next_offset = max(self.next_offset, batch.last_offset + 1)
        return self.active.base_offset, position

    def append_raw(self, data: bytes) -> tuple[int, int]:
        """Append bytes verbatim to the active segment (no state, no index): torn tails, garbage."""
        return self.active.base_offset, self.active.append_raw(data)

    def roll(self, new_base_offset: int | None = None) -> None:
        """Close the active segment as inactive and start one at ``new_base_offset`` (default: next offset)."""
        base = self.next_offset if new_base_offset is None else new_base_offset
        if self.write_snapshots:
            self._write_snapshot(base)
        self._closed_segments.append(self.active.close(active=False))
        self.active = SegmentWriter(self.directory, base, index_interval_bytes=self.index_interval_bytes)

    def _update_leader_epoch(self, batch: EncodedBatch) -> None:
        epoch = batch.partition_leader_epoch
        if epoch >= 0 and (not self.leader_epochs or epoch > self.leader_epochs[-1][0]):
            self.leader_epochs.append((epoch, batch.first_offset))

    def _update_producer_state(self, batch: EncodedBatch) -> None:
        pid = batch.producer_id
        if pid < 0:
            return
        entry = self.producers.get(pid)
        if entry is None:
            entry = self.producers[pid] = ProducerEntry(pid, batch.producer_epoch)
        entry.producer_epoch = batch.producer_epoch
        entry.timestamp = batch.max_timestamp
        if batch.control_type in (ControlType.ABORT, ControlType.COMMIT):
            first = self.ongoing_txns.pop(pid, None)
            entry.current_txn_first_offset = -1
            entry.coordinator_epoch = batch.coordinator_epoch
            if first is not None and batch.control_type == ControlType.ABORT:
                others = list(self.ongoing_txns.values())
                lso = min(others) if others else batch.last_offset + 1
                txn = AbortedTxn(pid, first, batch.last_offset, lso)
                self.aborted_txns.append(txn)
                self.active.add_aborted_txn(txn)
            return
        if batch.control_type is not None:
            return
        if batch.base_sequence >= 0:
            entry.last_sequence = (batch.base_sequence + batch.last_offset - batch.first_offset) % (1 << 31)
        entry.last_offset = batch.last_offset
        entry.offset_delta = batch.last_offset - batch.first_offset
        if batch.is_transactional and pid not in self.ongoing_txns:
            self.ongoing_txns[pid] = batch.first_offset
            entry.current_txn_first_offset = batch.first_offset

    def _write_snapshot(self, offset: int) -> None:
        segment_file(self.directory, offset, ".snapshot").write_bytes(
            encode_producer_snapshot(self.producers.values()))
        if offset not in self.snapshots:
            self.snapshots.append(offset)

    # -- close ----------------------------------------------------------------------------------------------------
    @property
    def last_stable_offset(self) -> int:
        return min(self.ongoing_txns.values()) if self.ongoing_txns else self.next_offset

    def close(self, *, live: bool = False, preallocate_index_bytes: int | None = DEFAULT_INDEX_BYTES
              ) -> PartitionLog:
        """Finish the partition. ``live=False``: as after a clean shutdown (final time-index entry, trimmed
        indexes, snapshot at the log end). ``live=True``: as a running broker (active indexes preallocated to
        ``preallocate_index_bytes`` and zero-filled, no final entry, no end snapshot)."""
        if live:
            active_info = self.active.close(active=True, preallocate_index_bytes=preallocate_index_bytes)
            recovery_point = self.active.base_offset
        else:
            if self.write_snapshots:
                self._write_snapshot(self.next_offset)
            active_info = self.active.close(active=False)
            recovery_point = self.next_offset
        if self.leader_epochs:
            write_leader_epoch_checkpoint(self.directory / "leader-epoch-checkpoint", self.leader_epochs)
        return PartitionLog(self.directory, self.log_start_offset, self.next_offset, self.last_stable_offset,
                            recovery_point, self._closed_segments + [active_info], list(self.aborted_txns),
                            dict(self.ongoing_txns), list(self.leader_epochs), list(self.snapshots))


def _facts_of(data: bytes) -> EncodedBatch:
    header = read_header(data)
    if header.size != len(data):
        raise ValueError(f"append() takes exactly one batch; got {len(data)} bytes for a {header.size}-byte batch")
    is_control = header.magic >= 2 and bool(header.attributes & CONTROL_MASK)
    return EncodedBatch(data, header.magic, header.base_offset, header.last_offset, header.max_timestamp,
                        header.producer_id, header.producer_epoch, header.base_sequence,
                        header.magic >= 2 and bool(header.attributes & TRANSACTIONAL_MASK),
                        -1 if is_control else None, -1, header.partition_leader_epoch, header.records_count)


# log-dir and partition side files -----------------------------------------------------------------------------------
def write_offset_checkpoint(path: str | os.PathLike, offsets: Mapping[tuple[str, int], int]) -> None:
    """``OffsetCheckpointFile``: ``0\\n<count>\\n<topic> <partition> <offset>\\n...``, written as Kafka's
    ``CheckpointFileWithFailureHandler`` does: to a ``.tmp`` file renamed over the old one (a reader never sees it
    half written)."""
    lines = ["0", str(len(offsets))] + [f"{t} {p} {o}" for (t, p), o in sorted(offsets.items())]
    target = Path(path)
    temporary = target.with_name(target.name + ".tmp")
    temporary.write_text("\n".join(lines) + "\n")
    os.replace(temporary, target)


def write_leader_epoch_checkpoint(path: str | os.PathLike, epochs: Iterable[tuple[int, int]]) -> None:
    """``LeaderEpochCheckpointFile``: ``0\\n<count>\\n<epoch> <startOffset>\\n...``."""
    rows = list(epochs)
    Path(path).write_text("\n".join(["0", str(len(rows))] + [f"{e} {o}" for e, o in rows]) + "\n")


def write_partition_metadata(path: str | os.PathLike, topic_id: str) -> None:
    """``PartitionMetadataFile``: ``version: 0\\ntopic_id: <base64url uuid>`` (no trailing newline)."""
    Path(path).write_text(f"version: 0\ntopic_id: {topic_id}")


def write_meta_properties(path: str | os.PathLike, *, cluster_id: str, node_id: int, directory_id: str,
                          written_at: str = "Mon Jan 01 00:00:00 UTC 2024") -> None:
    """KRaft ``meta.properties`` v1 as ``java.util.Properties.store`` writes it (comment, date, key=value)."""
    Path(path).write_text(f"#\n#{written_at}\nnode.id={node_id}\nversion=1\ncluster.id={cluster_id}\n"
                          f"directory.id={directory_id}\n")
