"""Whole Kafka log dirs from a few topic specs, with a manifest of every record a reader should return.

``write_data_dir(path, [TopicSpec(...), ...], seed=0)`` simulates producers appending to a broker's partitions
(batches of records, idempotent or transactional producers, COMMIT/ABORT markers, LogAppendTime stamping,
compaction leftovers) and writes the partition folders with :class:`~kafkaseg.testing.partition.PartitionWriter`,
plus the log dir's ``meta.properties`` and offset checkpoints. Everything is deterministic given ``seed``.
"""

from __future__ import annotations

import base64
import math
import os
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Literal

from kafkaseg.errors import InvalidOptionError
from kafkaseg.testing.codecs import codec_id
from kafkaseg.testing.partition import (
    DEFAULT_INDEX_BYTES,
    AbortedTxn,
    PartitionLog,
    PartitionWriter,
    SegmentInfo,
    write_meta_properties,
    write_offset_checkpoint,
    write_partition_metadata,
)
from kafkaseg.testing.writer import (
    CREATE_TIME,
    LOG_APPEND_TIME,
    ControlType,
    Record,
    build_batch_v2,
    build_control_batch,
    build_legacy_entries,
    build_legacy_wrapper,
)

__all__ = ["TopicSpec", "ExpectedRecord", "PartitionManifest", "DataDirManifest", "write_data_dir",
           "sample_data_dir", "SAMPLE_TOPICS"]

ValueGenerator = Callable[[random.Random, int, int], "bytes | None"]


@dataclass(frozen=True)
class TopicSpec:
    """How to fill one topic. Sizes are bytes, times milliseconds, ratios probabilities per record.

    - records: ``records_per_partition`` data records per partition (markers and open-transaction batches are
      counted in it), ``records_per_batch`` per batch (each batch draws its count from [ceil(n/2), n] when
      ``vary_batch_size``).
    - keys: ``key_size`` bytes (None: every key null), drawn from ``key_cardinality`` distinct keys when set,
      null with ``null_key_ratio``. Values: ``value_size`` bytes of compressible text, or ``value_generator(rng,
      partition, index)``; null (tombstone) with ``tombstone_ratio``, empty with ``empty_value_ratio``.
      ``headers`` headers per record (``h0``, ``h1``...; null values with ``null_header_value_ratio``).
    - ``magic`` 2, 1 or 0 (legacy: no headers/transactions; codec none writes one entry per record).
    - ``timestamp_type`` "CreateTime" or "LogAppendTime" (append time = batch's max create time +
      ``append_latency_ms``, never decreasing). Record i is created at ``start_timestamp_ms + i * ts_step_ms``
      +- ``ts_jitter_ms``.
    - producers: ``idempotent`` (one producer id with sequences), ``transactional`` (``transaction_producers``
      interleaved producers, transactions of 1-3 batches, aborted with ``abort_ratio``; ``open_transactions`` left
      without a marker at the end of the log).
    - compaction leftovers: ``gap_ratio`` drops records after offsets are assigned (offset gaps; a batch emptied
      this way is kept as a recordsCount-0 batch when it has a producer id), ``empty_batches`` extra empty batches,
      ``delete_horizon_ms`` marks batches holding tombstones with hasDeleteHorizonMs; ``cleanup_policy="compact"``
      adds a cleaner-offset-checkpoint entry (the active segment's base).
    - log: ``segment_bytes``, ``index_interval_bytes``, ``log_start_offset`` (first segment's base), plus
      ``log_start_advance`` (log-start-offset-checkpoint this far above the first segment, as DeleteRecords
      leaves it), ``preallocate_active_index`` (True or a byte size: the active segment's indexes as a live broker
      has them), ``partition_leader_epoch``.
    """

    name: str
    partitions: int = 1
    records_per_partition: int = 1000
    records_per_batch: int = 50
    vary_batch_size: bool = True
    codec: str = "none"
    magic: int = 2
    key_size: int | None = 8
    key_cardinality: int | None = None
    null_key_ratio: float = 0.0
    value_size: int = 100
    value_generator: ValueGenerator | None = None
    tombstone_ratio: float = 0.0
    empty_value_ratio: float = 0.0
    headers: int = 0
    null_header_value_ratio: float = 0.0
    timestamp_type: Literal["CreateTime", "LogAppendTime"] = "CreateTime"
    start_timestamp_ms: int = 1_700_000_000_000
    ts_step_ms: int = 10
    ts_jitter_ms: int = 0
    append_latency_ms: int = 3
    idempotent: bool = False
    transactional: bool = False
    transaction_producers: int = 2
    abort_ratio: float = 0.0
    open_transactions: int = 0
    coordinator_epoch: int = 0
    gap_ratio: float = 0.0
    empty_batches: int = 0
    delete_horizon_ms: int | None = None
    cleanup_policy: Literal["delete", "compact"] = "delete"
    segment_bytes: int = 1 << 30
    index_interval_bytes: int = 4096
    log_start_offset: int = 0
    log_start_advance: int = 0
    preallocate_active_index: bool | int = False
    partition_leader_epoch: int = 0

    def validate(self) -> None:
        if self.magic not in (0, 1, 2):
            raise InvalidOptionError(f"topic {self.name}: magic must be 0, 1 or 2, not {self.magic}")
        cid = codec_id(self.codec)
        if self.timestamp_type not in ("CreateTime", "LogAppendTime"):
            raise InvalidOptionError(f"topic {self.name}: timestamp_type must be CreateTime or LogAppendTime")
        if self.magic < 2:
            if cid == 4:
                raise InvalidOptionError(f"topic {self.name}: zstd needs magic 2")
            if self.headers or self.transactional or self.idempotent or self.empty_batches or self.gap_ratio:
                raise InvalidOptionError(f"topic {self.name}: headers, producer ids and compaction leftovers "
                                         f"need magic 2")
            if self.magic == 0 and self.timestamp_type == "LogAppendTime":
                raise InvalidOptionError(f"topic {self.name}: magic 0 has no timestamps")
        if self.open_transactions and not self.transactional:
            raise InvalidOptionError(f"topic {self.name}: open_transactions needs transactional=True")
        if self.open_transactions > self.transaction_producers:
            raise InvalidOptionError(f"topic {self.name}: open_transactions > transaction_producers")
        if self.records_per_batch < 1 or self.records_per_partition < 0 or self.partitions < 1:
            raise InvalidOptionError(f"topic {self.name}: counts must be positive")


@dataclass(frozen=True)
class ExpectedRecord:
    """A record as a reader of the partition sees it (control records included, flagged).

    ``timestamp``/``timestamp_type`` are what readers report: the append time under LogAppendTime, -1 and -1 for
    magic 0. ``txn_state`` is None for non-transactional records, else "committed", "aborted" or "open".
    """

    offset: int
    timestamp: int
    timestamp_type: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...] = ()
    is_control: bool = False
    control_type: int | None = None
    producer_id: int = -1
    txn_state: str | None = None

    @property
    def aborted(self) -> bool:
        return self.txn_state == "aborted"


@dataclass
class PartitionManifest:
    """What was written to one partition folder."""

    topic: str
    partition: int
    directory: Path
    magic: int
    codec: str
    timestamp_type: str
    topic_id: str
    records: list[ExpectedRecord]
    log_start_offset: int
    log_end_offset: int
    high_watermark: int
    last_stable_offset: int
    recovery_point: int
    segments: list[SegmentInfo]
    aborted_txns: list[AbortedTxn]
    open_txns: dict[int, int]
    batch_count: int

    def __repr__(self) -> str:  # the records list would print megabytes at a prompt
        return (f"PartitionManifest({self.topic}-{self.partition}, magic={self.magic}, codec={self.codec!r}, "
                f"{len(self.records):,} records, {len(self.segments)} segments, offsets "
                f"[{self.log_start_offset}, {self.log_end_offset}), directory={str(self.directory)!r})")

    def data_records(self, *, read_committed: bool = False) -> list[ExpectedRecord]:
        """Non-control records at or above the log start offset; with ``read_committed``, as a read_committed
        consumer sees them: below the last stable offset and not aborted."""
        out = [r for r in self.records if not r.is_control and r.offset >= self.log_start_offset]
        if read_committed:
            out = [r for r in out if r.offset < self.last_stable_offset and not r.aborted]
        return out


@dataclass
class DataDirManifest:
    """Everything :func:`write_data_dir` wrote: per ``(topic, partition)`` manifests and the log dir's ids."""

    path: Path
    cluster_id: str
    node_id: int
    directory_id: str
    topic_ids: dict[str, str]
    partitions: dict[tuple[str, int], PartitionManifest] = field(default_factory=dict)

    def __repr__(self) -> str:  # the partitions' records would print megabytes at a prompt
        names = ", ".join(f"{t}-{p}" for t, p in self.partitions)
        return (f"DataDirManifest(path={str(self.path)!r}, {self.record_count:,} records in "
                f"{len(self.partitions)} partitions: {names})")

    def partition(self, topic: str, partition: int = 0) -> PartitionManifest:
        return self.partitions[(topic, partition)]

    @property
    def record_count(self) -> int:
        return sum(len(p.data_records()) for p in self.partitions.values())


def _uuid_base64(rng: random.Random) -> str:
    return base64.urlsafe_b64encode(rng.randbytes(16)).decode().rstrip("=")


_ALPHABET = b"abcdefghijklmnopqrstuvwxyz0123456789"


def _text_value(rng: random.Random, index: int, size: int) -> bytes:
    """Compressible JSON-ish bytes of exactly ``size`` bytes (random words from a small alphabet)."""
    head = b'{"id":%d,"user":"u%04d","note":"' % (index, rng.randrange(10000))
    fill = max(0, size - len(head) - 2)
    words = bytes(_ALPHABET[b % 36] for b in rng.randbytes(fill // 2 + 1))
    body = (words + words[::-1])[:fill]
    return (head + body + b'"}')[:size] if size else b""


class _PartitionSimulation:
    """Drives one partition: builds batches from the spec and appends them, recording expected records."""

    def __init__(self, spec: TopicSpec, partition: int, directory: Path, rng: random.Random, pid_base: int):
        self.spec = spec
        self.partition = partition
        self.rng = rng
        self.pid_base = pid_base
        self.writer = PartitionWriter(directory, segment_bytes=spec.segment_bytes,
                                      index_interval_bytes=spec.index_interval_bytes,
                                      log_start_offset=spec.log_start_offset)
        self.records: list[ExpectedRecord] = []
        self.created = 0  # data records created so far (drives create timestamps)
        self.clock = spec.start_timestamp_ms
        self.last_append_time = spec.start_timestamp_ms
        self.batches = 0
        self.log_append = spec.timestamp_type == "LogAppendTime"
        self.sequences: dict[int, int] = {}
        self.keys = [rng.randbytes(spec.key_size) for _ in range(spec.key_cardinality)] \
            if spec.key_cardinality and spec.key_size is not None else None

    # -- record content -------------------------------------------------------------------------------------------
    def _make_records(self, count: int) -> list[Record]:
        spec, rng = self.spec, self.rng
        out = []
        base = self.writer.next_offset
        for i in range(count):
            index = self.created
            self.created += 1
            ts = spec.start_timestamp_ms + index * spec.ts_step_ms
            if spec.ts_jitter_ms:
                ts += rng.randint(-spec.ts_jitter_ms, spec.ts_jitter_ms)
            self.clock = max(self.clock, ts)
            if spec.key_size is None or rng.random() < spec.null_key_ratio:
                key = None
            elif self.keys is not None:
                key = self.keys[rng.randrange(len(self.keys))]
            else:
                key = b"k%07d" % index + rng.randbytes(max(0, spec.key_size - 8)) if spec.key_size >= 8 \
                    else rng.randbytes(spec.key_size)
            roll = rng.random()
            if roll < spec.tombstone_ratio:
                value = None
            elif roll < spec.tombstone_ratio + spec.empty_value_ratio:
                value = b""
            elif spec.value_generator is not None:
                value = spec.value_generator(rng, self.partition, index)
            else:
                value = _text_value(rng, index, spec.value_size)
            headers = tuple(
                (f"h{h}", None if rng.random() < spec.null_header_value_ratio else b"hv%d-%d" % (h, index))
                for h in range(spec.headers))
            out.append(Record(base + i, ts, key, value, headers))
        return out

    def _append_time(self, records: list[Record]) -> int:
        newest = max((r.timestamp for r in records), default=self.clock)
        self.last_append_time = max(self.last_append_time, newest + self.spec.append_latency_ms)
        self.clock = max(self.clock, self.last_append_time)
        return self.last_append_time

    def _expected(self, records: list[Record], timestamp_type: int, append_time: int | None, magic: int,
                  producer_id: int = -1, txn_state: str | None = None) -> list[ExpectedRecord]:
        out = []
        for r in records:
            if magic == 0:
                ts, tst = -1, -1
            elif timestamp_type == LOG_APPEND_TIME:
                ts, tst = append_time, LOG_APPEND_TIME
            else:
                ts, tst = r.timestamp, CREATE_TIME
            out.append(ExpectedRecord(r.offset, ts, tst, r.key, r.value, r.headers, False, None, producer_id,
                                      txn_state))
        return out

    # -- batches -------------------------------------------------------------------------------------------------
    def _next_sequence(self, pid: int, count: int) -> int:
        seq = self.sequences.get(pid, 0)
        self.sequences[pid] = seq + count
        return seq

    def append_data_batch(self, count: int, *, producer_id: int = -1, transactional: bool = False,
                          txn_state: str | None = None) -> list[ExpectedRecord]:
        spec = self.spec
        records = self._make_records(count)
        tst = LOG_APPEND_TIME if self.log_append else CREATE_TIME
        append_time = self._append_time(records) if self.log_append else None
        if spec.magic < 2:
            if codec_id(spec.codec) == 0:
                for entry in build_legacy_entries(records, spec.magic, timestamp_type=tst,
                                                  log_append_time=append_time):
                    self.writer.append(entry)
                    self.batches += 1
            else:
                self.writer.append(build_legacy_wrapper(records, spec.magic, spec.codec, timestamp_type=tst,
                                                        log_append_time=append_time))
                self.batches += 1
            expected = self._expected(records, tst, append_time, spec.magic)
            self.records.extend(expected)
            return expected
        first, last = records[0].offset, records[-1].offset
        kept = [r for r in records if not (spec.gap_ratio and self.rng.random() < spec.gap_ratio)]
        epoch = 0 if producer_id >= 0 else -1
        seq = self._next_sequence(producer_id, count) if producer_id >= 0 else -1
        if not kept and producer_id < 0:
            # the cleaner would drop an emptied batch without producer state entirely; keep its last record so the
            # log end offset stays where the batches say it is
            kept = records[-1:]
        horizon = spec.delete_horizon_ms if spec.delete_horizon_ms is not None and any(
            r.value is None for r in kept) else None
        batch = build_batch_v2(kept, codec=spec.codec, base_offset=first, last_offset=last, timestamp_type=tst,
                               log_append_time=append_time, is_transactional=transactional,
                               producer_id=producer_id, producer_epoch=epoch, base_sequence=seq,
                               partition_leader_epoch=spec.partition_leader_epoch, delete_horizon_ms=horizon,
                               empty_timestamp=max(r.timestamp for r in records))
        self.writer.append(batch)
        self.batches += 1
        expected = self._expected(kept, tst, append_time, 2, producer_id, txn_state)
        self.records.extend(expected)
        return expected

    def append_empty_batch(self) -> None:
        pid = self.pid_base + 99
        span = self.rng.randint(1, 4)
        first = self.writer.next_offset
        self.created += span
        ts = self.clock
        batch = build_batch_v2([], codec=self.spec.codec, base_offset=first, last_offset=first + span - 1,
                               timestamp_type=LOG_APPEND_TIME if self.log_append else CREATE_TIME,
                               log_append_time=ts, producer_id=pid, producer_epoch=0,
                               base_sequence=self._next_sequence(pid, span),
                               partition_leader_epoch=self.spec.partition_leader_epoch, empty_timestamp=ts)
        self.writer.append(batch)
        self.batches += 1

    def append_marker(self, producer_id: int, control_type: int) -> None:
        spec = self.spec
        offset = self.writer.next_offset
        ts = self.clock + 1
        self.clock = ts
        self.last_append_time = max(self.last_append_time, ts)
        tst = LOG_APPEND_TIME if self.log_append else CREATE_TIME
        batch = build_control_batch(offset, ts, control_type, producer_id=producer_id, producer_epoch=0,
                                    coordinator_epoch=spec.coordinator_epoch,
                                    partition_leader_epoch=spec.partition_leader_epoch, timestamp_type=tst)
        self.writer.append(batch)
        self.batches += 1
        key = b"\x00\x00" + control_type.to_bytes(2, "big")  # ControlRecordType key: version 0, type
        value = b"\x00\x00" + spec.coordinator_epoch.to_bytes(4, "big", signed=True)  # EndTransactionMarker
        state = "committed" if control_type == ControlType.COMMIT else "aborted"
        self.records.append(ExpectedRecord(offset, ts, tst, key, value, (), True, control_type, producer_id, state))

    # -- drive ---------------------------------------------------------------------------------------------------
    def batch_size(self, remaining: int) -> int:
        n = self.spec.records_per_batch
        if self.spec.vary_batch_size:
            n = self.rng.randint(math.ceil(n / 2), n)
        return max(1, min(n, remaining))

    def run(self) -> None:
        spec, rng = self.spec, self.rng
        total = spec.records_per_partition
        empty_at = sorted(rng.sample(range(max(1, total)), min(spec.empty_batches, max(1, total)))) \
            if spec.empty_batches else []
        if not spec.transactional:
            pid = self.pid_base if spec.idempotent else -1
            written = 0
            while written < total:
                while empty_at and empty_at[0] <= written:
                    empty_at.pop(0)
                    self.append_empty_batch()
                n = self.batch_size(total - written)
                self.append_data_batch(n, producer_id=pid)
                written += n
            for _ in empty_at:
                self.append_empty_batch()
            return
        producers = [self.pid_base + i for i in range(spec.transaction_producers)]
        open_batch = max(1, spec.records_per_batch // 2)
        reserve = min(total, spec.open_transactions * open_batch)
        budget = total - reserve
        txn_left = {p: 0 for p in producers}
        txn_records: dict[int, list[int]] = {p: [] for p in producers}
        written = 0

        def finish(pid: int) -> None:
            aborted = rng.random() < spec.abort_ratio
            state = "aborted" if aborted else "committed"
            for idx in txn_records[pid]:
                self.records[idx] = _with_state(self.records[idx], state)
            txn_records[pid] = []
            self.append_marker(pid, ControlType.ABORT if aborted else ControlType.COMMIT)

        while written < budget:
            while empty_at and empty_at[0] <= written:
                empty_at.pop(0)
                self.append_empty_batch()
            pid = producers[rng.randrange(len(producers))]
            if txn_left[pid] == 0:
                txn_left[pid] = rng.randint(1, 3)
            n = self.batch_size(budget - written)
            start = len(self.records)
            self.append_data_batch(n, producer_id=pid, transactional=True, txn_state="open")
            txn_records[pid].extend(range(start, len(self.records)))
            written += n
            txn_left[pid] -= 1
            if txn_left[pid] == 0:
                finish(pid)
        for pid in producers:
            if txn_left[pid]:
                txn_left[pid] = 0
                finish(pid)
        remaining = total - written
        for pid in producers[:spec.open_transactions]:
            if remaining <= 0:
                break
            n = min(open_batch, remaining)
            self.append_data_batch(n, producer_id=pid, transactional=True, txn_state="open")
            remaining -= n


def _with_state(record: ExpectedRecord, state: str) -> ExpectedRecord:
    return ExpectedRecord(record.offset, record.timestamp, record.timestamp_type, record.key, record.value,
                          record.headers, record.is_control, record.control_type, record.producer_id, state)


# the files of its own a log dir holds beside its partition folders (written last by write_data_dir)
_LOG_DIR_FILES = ("meta.properties", "replication-offset-checkpoint", "recovery-point-offset-checkpoint",
                  "log-start-offset-checkpoint", "cleaner-offset-checkpoint")


def write_data_dir(path: str | os.PathLike, topics: list[TopicSpec], *, seed: int = 0, node_id: int = 1
                   ) -> DataDirManifest:
    """Write a Kafka log dir holding ``topics`` under ``path`` (created; must not already hold partitions of the
    same names, nor a log dir's ``meta.properties`` or checkpoint files: a broker's data dir is never written
    over) and return the manifest of what a reader should find."""
    root = Path(path)
    root.mkdir(parents=True, exist_ok=True)
    held = [name for name in _LOG_DIR_FILES if (root / name).exists()]
    if held:
        raise InvalidOptionError(f"{root} already holds a Kafka log dir's {', '.join(held)}: write a sample into a "
                                 f"new or empty folder (kafkaseg never writes over a data dir)")
    ids_rng = random.Random(f"kafkaseg-ids/{seed}")
    manifest = DataDirManifest(root, _uuid_base64(ids_rng), node_id, _uuid_base64(ids_rng), {})
    names = [t.name for t in topics]
    if len(set(names)) != len(names):
        raise InvalidOptionError(f"duplicate topic names in {names}")
    high_watermarks, recovery_points, log_starts, cleaner_offsets = {}, {}, {}, {}
    for topic_index, spec in enumerate(topics):
        spec.validate()
        topic_id = _uuid_base64(ids_rng)
        manifest.topic_ids[spec.name] = topic_id
        for p in range(spec.partitions):
            directory = root / f"{spec.name}-{p}"
            if directory.exists() and any(directory.iterdir()):
                raise InvalidOptionError(f"{directory} already exists and is not empty")
            rng = random.Random(f"{seed}/{spec.name}/{p}")
            sim = _PartitionSimulation(spec, p, directory, rng, pid_base=1000 * (topic_index + 1) + 100 * p)
            sim.run()
            live = bool(spec.preallocate_active_index)
            index_bytes = DEFAULT_INDEX_BYTES if spec.preallocate_active_index is True \
                else int(spec.preallocate_active_index or 0) or None
            log: PartitionLog = sim.writer.close(live=live, preallocate_index_bytes=index_bytes)
            write_partition_metadata(directory / "partition.metadata", topic_id)
            log_start = spec.log_start_offset + spec.log_start_advance
            tp = (spec.name, p)
            high_watermarks[tp] = log.log_end_offset
            recovery_points[tp] = log.recovery_point
            if spec.log_start_advance:
                log_starts[tp] = log_start
            if spec.cleanup_policy == "compact":
                cleaner_offsets[tp] = log.segments[-1].base_offset
            manifest.partitions[tp] = PartitionManifest(
                spec.name, p, directory, spec.magic, spec.codec, spec.timestamp_type, topic_id, sim.records,
                log_start, log.log_end_offset, log.log_end_offset, log.last_stable_offset, log.recovery_point,
                log.segments, log.aborted_txns, log.open_txns, sim.batches)
    write_meta_properties(root / "meta.properties", cluster_id=manifest.cluster_id, node_id=node_id,
                          directory_id=manifest.directory_id)
    write_offset_checkpoint(root / "replication-offset-checkpoint", high_watermarks)
    write_offset_checkpoint(root / "recovery-point-offset-checkpoint", recovery_points)
    write_offset_checkpoint(root / "log-start-offset-checkpoint", log_starts)
    write_offset_checkpoint(root / "cleaner-offset-checkpoint", cleaner_offsets)
    return manifest


SAMPLE_TOPICS: list[TopicSpec] = [
    # a plain busy topic: several partitions, segment rolls, headers, null keys, empty values, idempotent producer
    TopicSpec("orders", partitions=3, records_per_partition=3000, records_per_batch=40, value_size=180, headers=2,
              null_header_value_ratio=0.1, null_key_ratio=0.05, empty_value_ratio=0.02, idempotent=True,
              segment_bytes=256 * 1024, ts_jitter_ms=25, start_timestamp_ms=1_700_000_000_000),
    # one topic per codec
    TopicSpec("events-gzip", records_per_partition=2000, codec="gzip", value_size=300, segment_bytes=200 * 1024),
    TopicSpec("events-snappy", records_per_partition=2000, codec="snappy", value_size=300),
    TopicSpec("events-lz4", partitions=2, records_per_partition=1500, codec="lz4", value_size=300),
    TopicSpec("events-zstd", records_per_partition=2000, codec="zstd", value_size=300, headers=1),
    # transactions: interleaved producers, aborts, one transaction left open on each partition
    TopicSpec("payments", partitions=2, records_per_partition=1500, records_per_batch=20, transactional=True,
              transaction_producers=3, abort_ratio=0.3, open_transactions=1, codec="lz4",
              segment_bytes=128 * 1024),
    # a compacted changelog: repeated keys, tombstones, offset gaps, empty batches, delete horizons
    TopicSpec("users-changelog", records_per_partition=1500, key_cardinality=200, tombstone_ratio=0.1,
              gap_ratio=0.3, empty_batches=3, idempotent=True, delete_horizon_ms=1_700_086_400_000,
              cleanup_policy="compact", segment_bytes=64 * 1024, value_size=120),
    # broker-stamped times, live broker's preallocated active indexes
    TopicSpec("clicks", records_per_partition=2500, timestamp_type="LogAppendTime", value_size=80,
              preallocate_active_index=64 * 1024, segment_bytes=128 * 1024),
    # an old-format topic: magic v1 gzip wrappers
    TopicSpec("legacy-v1", partitions=2, records_per_partition=1000, magic=1, codec="gzip", value_size=150,
              segment_bytes=64 * 1024),
]


def sample_data_dir(path: str | os.PathLike, *, seed: int = 0) -> DataDirManifest:
    """A small (a few MB) but realistic multi-topic log dir: see :data:`SAMPLE_TOPICS`."""
    return write_data_dir(path, SAMPLE_TOPICS, seed=seed)
