"""Kafka log compaction as a table: the rules of a compaction run, Spark-free.

A compaction run materializes a topic's latest state per key (what a consumer gets by reading a compacted topic
and applying each record to a map) and keeps it current run after run, reading only what is new. This module
holds the pure parts, shared by ``jobs/compact.py`` (Spark) and :mod:`kafkaseg.compacted_table` (the Delta table
and a Spark-free run for small inputs):

- :class:`CompactionConfig`: the run's settings (``conf/compaction.toml``), parsed once; unknown keys are errors.
- :func:`latest_per_key`: the per-key reduction over pyarrow (the reference the Spark transform is tested against).
- :class:`PartitionFacts`, :class:`TableState`, :func:`plan_increment`: which offsets each partition's read covers,
  what the table already holds, and whether the gap between them lost data.

Semantics, after Kafka's cleaner (``core/src/main/scala/kafka/log/LogCleaner.scala``: ``Cleaner.cleanInto`` /
``shouldRetainRecord``, and ``clients/src/main/java/org/apache/kafka/common/record/MemoryRecords.java``:
``filterTo``) and ``LogCleanerManager.cleanableOffsets``:

- A row's identity is ``(topic, partition, key)``: Kafka compacts each topic-partition on its own, so the same key
  in two partitions is two entries (a consumer of the compacted topic sees both). Per identity the record with the
  highest offset wins. A topic-wide identity is refused: offsets of different partitions are not ordered, and
  record timestamps (client clocks, CreateTime) do not order writes either, so "the latest" across partitions is
  undefined; Kafka itself never compares them.
- Keyless records are dropped (the cleaner drops them from compacted topics).
- The read is ``read_committed``: aborted transactional data and control markers never appear, and it stops at
  the last stable offset, so data of a transaction still open is not included until a later run sees it
  committed (the next run starts at that offset).
- A tombstone (null value) deletes its key. The cleaner keeps a tombstone until its batch's delete horizon
  (``delete.retention.ms`` after the first cleaning that saw it) and then removes it with the key's older
  records, so a read of an already-cleaned log gives the same state as a read of the uncleaned one.
- Retention (``cleanup.policy=compact,delete``) or DeleteRecords moving a partition's log start offset removes
  every record below it, so a key whose newest record is below it is gone from the log: an incremental run drops
  such rows (:func:`drop_expired`), as a rebuild from the log would not have them.
- How far a run reads: by default up to the last stable offset (everything a read_committed consumer can see).
  ``read_until = "cleanable"`` stops where the cleaner's cleanable range ends: the minimum of the last stable
  offset, the active segment's base offset and the base of the first segment (at or after the run's start) whose
  largest timestamp is newer than ``now - min_compaction_lag_ms``, for a table that equals what the cleaner
  would produce.

Data loss (:func:`plan_increment`): a table's recorded next offset below the partition's log start offset (retention
or DeleteRecords removed records before the table read them), above its high watermark (the data dir is older than
the table, or the log was truncated), past the end the log now gives the leader epoch the table last read under (the
log was truncated there and rewritten by a new leader: an unclean election; Kafka's consumer validation,
``clients/.../consumer/internals/SubscriptionState.java`` ``maybeCompleteValidation`` with
``LeaderEpochFileCache.endOffsetFor``), or a log whose cleaner has compacted past it longer than
``delete_retention_ms`` after a run last read up to the cleaner's checkpoint (or rebuilt from the log start): a
tombstone there may have been removed (Kafka's own rule for consumers, who must read a compacted topic's head within
``delete.retention.ms`` to see every delete; a run that is recent but lags behind the cleaner is not).
"""

from __future__ import annotations

import functools
import json
import tomllib
from dataclasses import dataclass, field, fields
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from kafkaseg.errors import CompactedTableError, DataLossError, InvalidOptionError
from kafkaseg.storage.checkpoints import epoch_at, epoch_end_offset, mark_divergence

__all__ = ["CompactionConfig", "PartitionFacts", "TableState", "Increment", "STATE_KEY", "IDENTITY_COLUMNS",
           "latest_per_key", "apply_changes", "drop_expired", "plan_increment", "cleanable_end",
           "compaction_read_options", "gather_facts"]

STATE_KEY = "kafkaseg.compaction"  # the commit metadata entry holding a TableState's JSON
IDENTITY_COLUMNS = ("topic", "partition", "key")
READ_UNTIL = ("last_stable_offset", "cleanable")
ON_DATA_LOSS = ("fail", "rebuild")
# read options a compaction run decides itself: the range of each read, and what a compacted read must be
_RANGE_OPTIONS = frozenset(name.lower() for name in (
    "startingOffsets", "endingOffsets", "startingTimestamp", "endingTimestamp", "startingOffsetsByTimestamp",
    "endingOffsetsByTimestamp", "startingOffsetsByTimestampStrategy"))
# (onCorruption=skip would record the offsets of a skipped batch as applied; upperBound=logEndOffset would read
# records not yet committed to the partition, which a leader change can truncate)
_FIXED_OPTIONS = {"kafka.isolation.level": "read_committed", "includecontrol": "false",
                  "includemetadata": "false", "replicas": "highestHighWatermark", "failondataloss": "true",
                  "oncorruption": "fail", "upperbound": "highWatermark"}


# --------------------------------------------------------------------------------------------------------------------
# configuration

@dataclass(frozen=True)
class CompactionConfig:
    """A compaction run's settings (``conf/compaction.toml``; every key optional).

    - ``key_scope``: ``"partition"`` only (see the module docs for why not ``"topic"``).
    - ``read_until``: ``"last_stable_offset"`` (default) or ``"cleanable"`` (the cleaner's cleanable range end).
    - ``min_compaction_lag_ms``: the topic's ``min.compaction.lag.ms``, used by ``read_until = "cleanable"``.
    - ``delete_retention_ms``: the topic's ``delete.retention.ms`` (default 24 h): a table that has not read up to the
      cleaner's checkpoint for longer than this, on a log compacted past its offsets, may miss deletes (data loss).
    - ``on_data_loss``: ``"fail"`` (default) or ``"rebuild"`` (rebuild the table from what the log still holds).
    - ``max_offsets_per_partition``: read at most this many offsets of each partition per run (None: no cap);
      bounds the change set a run merges, so the table catches up over several runs.
    - ``partition_by``: the Delta table's partition columns (default ``["topic"]``).
    - ``driver_merge_max_bytes``: an incremental run merges on the driver (delta-rs ``DeltaTable.merge``, which
      rewrites only the files holding changed keys but holds them in memory) when the table files of the topics
      it touches total at most this many bytes (default 64 MiB); above, the executors rewrite those topics'
      files (a Spark shuffle: memory bounded by Spark's settings, whatever the table's size). 0: always the
      executors.
    - ``stale_staging_hours``: an incremental run removes staging folders (change sets under the table's
      ``_kafkaseg_staging``) that runs started more than this many hours ago left behind when they were killed
      before merging (default 24; a younger one may be a concurrent run's).
    - ``keep_foreign_deletes``: accept DELETEs another writer committed on the table after the last run (an erasure
      request served on the table, where the Kafka data is a backup that cannot take a tombstone): the deleted rows
      stay deleted until new records for their keys arrive. Default false: such a table no longer equals the log's
      compaction, and the run refuses it. A full rebuild always re-reads the log (deleted keys come back): the
      state records the kept DELETEs' versions, an automatic rebuild (``on_data_loss = "rebuild"``) is refused for
      them and ``--mode full`` names them.
    """

    key_scope: str = "partition"
    read_until: str = "last_stable_offset"
    min_compaction_lag_ms: int = 0
    delete_retention_ms: int = 86_400_000
    on_data_loss: str = "fail"
    max_offsets_per_partition: int | None = None
    partition_by: tuple[str, ...] = ("topic",)
    driver_merge_max_bytes: int = 64 << 20
    keep_foreign_deletes: bool = False
    stale_staging_hours: int = 24

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any], source: str = "compaction config") -> "CompactionConfig":
        """Validate ``values`` (a TOML document's top-level table); ``source`` names it in errors."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise InvalidOptionError(f"{source}: unknown key{'s' if len(unknown) > 1 else ''} "
                                     f"{', '.join(unknown)} (known: {', '.join(sorted(known))})")
        out: dict[str, Any] = {}
        for name, value in values.items():
            out[name] = _checked(name, value, source)
        return cls(**out)

    @classmethod
    def load(cls, path: str) -> "CompactionConfig":
        """Read a TOML file (a missing or malformed file is an :class:`InvalidOptionError` naming it)."""
        try:
            with open(path, "rb") as handle:
                values = tomllib.load(handle)
        except OSError as exc:
            raise InvalidOptionError(f"cannot read compaction config {path}: {exc}") from exc
        except tomllib.TOMLDecodeError as exc:
            raise InvalidOptionError(f"compaction config {path} is not valid TOML: {exc}") from exc
        return cls.from_mapping(values, source=str(path))

    def with_changes(self, **changes: Any) -> "CompactionConfig":
        """A copy with ``changes`` validated as config keys (command-line overrides)."""
        values = {f.name: getattr(self, f.name) for f in fields(self)}
        values.update({k: v for k, v in changes.items() if v is not None})
        return CompactionConfig.from_mapping(values, source="command line")


def _checked(name: str, value: Any, source: str) -> Any:
    def fail(expected: str) -> InvalidOptionError:
        return InvalidOptionError(f"{source}: {name} must be {expected}, not {value!r}")

    if name == "key_scope":
        if value == "topic":
            raise InvalidOptionError(
                f"{source}: key_scope 'topic' is not supported: offsets of different partitions are not ordered "
                "and record timestamps do not order writes, so the latest record of a key across partitions is "
                "undefined (Kafka compacts each partition on its own). Use 'partition'")
        if value != "partition":
            raise fail("'partition'")
        return value
    if name == "read_until":
        if value not in READ_UNTIL:
            raise fail(" or ".join(repr(v) for v in READ_UNTIL))
        return value
    if name == "on_data_loss":
        if value not in ON_DATA_LOSS:
            raise fail(" or ".join(repr(v) for v in ON_DATA_LOSS))
        return value
    if name in ("min_compaction_lag_ms", "delete_retention_ms", "max_offsets_per_partition",
                "driver_merge_max_bytes", "stale_staging_hours"):
        if name == "max_offsets_per_partition" and value is None:
            return None
        positive = name.startswith("max") or name == "stale_staging_hours"
        if isinstance(value, bool) or not isinstance(value, int) or value < (1 if positive else 0):
            raise fail("a positive integer" if positive else "an integer >= 0")
        return value
    if name == "keep_foreign_deletes":
        if not isinstance(value, bool):
            raise fail("true or false")
        return value
    if name == "partition_by":
        allowed = ("topic", "partition")
        if isinstance(value, str) or not isinstance(value, (list, tuple)) or any(v not in allowed for v in value):
            raise fail(f"a list of column names from {', '.join(allowed)}")
        return tuple(value)
    raise InvalidOptionError(f"{source}: unknown key {name}")  # unreachable: from_mapping checked the names


def compaction_read_options(options: Mapping[str, str]) -> dict[str, str]:
    """The read options of a compaction run: the user's (topic selection, includeHeaders, tuning) with what a compacted
    read must be forced: ``read_committed``, no control records, no metadata columns, one replica per partition,
    strict data loss, corruption fails the run, up to the high watermark. The range options
    (``startingOffsets``...) are the run's to decide. A given option that contradicts this is an
    :class:`InvalidOptionError` naming it."""
    out: dict[str, str] = {}
    for key, value in options.items():
        lower = key.strip().lower()
        if lower in _RANGE_OPTIONS:
            raise InvalidOptionError(f"option {key} cannot be given to a compaction run: each run reads from the "
                                     "offsets the table recorded to the partition's end")
        if lower == "columns":
            raise InvalidOptionError(f"option {key} cannot be given to a compaction run: the table keeps whole records "
                                     "(its columns are set by includeHeaders)")
        if lower == "timestampunit" and str(value).strip().lower() != "us":
            raise InvalidOptionError(f"option {key}={value} cannot be used for compaction: the table's timestamps are "
                                     "microseconds (Spark's TimestampType), so it needs timestampUnit=us")
        fixed = _FIXED_OPTIONS.get(lower)
        if fixed is not None:
            if str(value).strip().lower() != fixed.lower():
                raise InvalidOptionError(f"option {key}={value} cannot be used for compaction: it needs "
                                         f"{key}={fixed}")
            continue
        out[key] = value
    out.update({"kafka.isolation.level": "read_committed", "includeControl": "false", "includeMetadata": "false",
                "replicas": "highestHighWatermark", "failOnDataLoss": "true", "onCorruption": "fail",
                "upperBound": "highWatermark"})
    return out


# --------------------------------------------------------------------------------------------------------------------
# the reduction (pyarrow reference)

def latest_per_key(table: pa.Table) -> pa.Table:
    """The change set of ``table`` (kafkaseg rows): per ``(topic, partition, key)`` the row with the highest
    offset, tombstones (null values) included so they can delete; keyless rows dropped. Rows come out ordered by
    offset. ``table`` must not hold one offset of a partition twice (one replica per partition)."""
    keyed = table.filter(pc.is_valid(table.column("key")))
    if keyed.num_rows == 0:
        return keyed
    ordered = keyed.take(pc.sort_indices(keyed, [("offset", "ascending")]))
    # within a group the highest row number is the highest offset (offsets are unique per topic-partition)
    rows = pa.table({"topic": ordered.column("topic"), "partition": ordered.column("partition"),
                     "key": ordered.column("key"), "row": pa.array(np.arange(ordered.num_rows, dtype=np.int64))})
    winners = rows.group_by(list(IDENTITY_COLUMNS)).aggregate([("row", "max")]).column("row_max")
    return ordered.take(np.sort(winners.to_numpy()))


def apply_changes(state: pa.Table, changes: pa.Table,
                  expired: Mapping[tuple[str, int], int] | None = None) -> pa.Table:
    """The table after merging ``changes`` (a change set, tombstones included) into ``state`` (a compacted table
    of the same columns): per identity the higher offset wins, then tombstones are dropped, and so are rows below
    their partition's log start offset in ``expired`` (:func:`drop_expired`). Applying a change set twice gives
    the same table (the reference for the Delta merge's idempotence)."""
    merged = latest_per_key(pa.concat_tables([state.select(changes.schema.names), changes]))
    return drop_expired(merged.filter(pc.is_valid(merged.column("value"))), expired or {})


def drop_expired(table: pa.Table, expired: Mapping[tuple[str, int], int]) -> pa.Table:
    """``table`` (a compacted table) without its rows below their partition's log start offset in ``expired``:
    a row is its key's newest record, so below the log start the log holds no record of that key any more
    (retention or DeleteRecords deleted them all), and a consumer reading the topic now never sees the key."""
    if not expired or table.num_rows == 0:
        return table
    keep = np.ones(table.num_rows, dtype=bool)
    topics = table.column("topic").to_numpy(zero_copy_only=False)
    partitions = table.column("partition").to_numpy(zero_copy_only=False)
    offsets = table.column("offset").to_numpy(zero_copy_only=False)
    for (topic, partition), start in expired.items():
        keep &= ~((topics == topic) & (partitions == partition) & (offsets < start))
    return table.filter(pa.array(keep))


# --------------------------------------------------------------------------------------------------------------------
# what a run reads

@dataclass(frozen=True)
class PartitionFacts:
    """What a run needs to know about one topic-partition of the data dirs (index files and checkpoints only).

    ``last_stable_offset``: where a read_committed read ends now (the last stable offset, capped at the high
    watermark); ``high_watermark``: the end of what the log holds for readers. ``segments``: ``(base offset,
    largest timestamp)`` of each non-active segment, oldest first (only gathered for ``read_until =
    "cleanable"``)."""

    topic: str
    partition: int
    log_start_offset: int
    high_watermark: int
    last_stable_offset: int
    active_segment_base: int | None = None
    segments: tuple[tuple[int, int], ...] = ()
    cleaner_offset: int | None = None
    topic_id: str | None = None
    cluster_id: str | None = None
    leader_epochs: tuple[tuple[int, int], ...] = ()
    # offset -> (epoch, end) of the last batch below it, from its header (what a run records, as Kafka's consumer
    # keeps its position's epoch); None where gather_facts did not read the files (tests of the pure planner)
    batch_mark: Callable[[int], tuple[int, int] | None] | None = field(default=None, compare=False, repr=False)

    @property
    def key(self) -> tuple[str, int]:
        return (self.topic, self.partition)

    def epoch_of(self, offset: int) -> int | None:
        """The leader epoch ``offset`` was written under (``leader-epoch-checkpoint``), or None when the checkpoint
        does not cover it."""
        return epoch_at(self.leader_epochs, offset)

    def epoch_end_offset(self, epoch: int) -> tuple[int, int] | None:
        """``(epoch, end offset)`` as the log answers a consumer validating its position
        (:func:`~kafkaseg.storage.checkpoints.epoch_end_offset`), the latest epoch ending at the high watermark
        (what runs read up to)."""
        return epoch_end_offset(self.leader_epochs, epoch, self.high_watermark)


@dataclass(frozen=True)
class TableState:
    """What a compacted table holds, recorded in the commit that wrote it: per ``(topic, partition)`` the next
    offset to read (every offset below it is applied), the topics' ids and clusters (their incarnation), when the
    read that produced it was planned (ms), how far runs read (``read_until``), and per ``(topic, partition)`` the
    leader epoch of the offset before its next offset (``leader_epochs``: what detects a log truncated and
    rewritten below that offset) and when a run last read up to the cleaner's checkpoint or rebuilt it from its
    log start (``caught_up_at_ms``: what delete_retention_ms counts from). Both are absent in tables written
    before they were recorded (then ``read_at_ms`` stands for the latter). ``kept_deletes``: the table versions of
    other writers' DELETEs kept with ``keep_foreign_deletes`` (erasures a rebuild from the log would undo)."""

    next_offsets: Mapping[tuple[str, int], int] = field(default_factory=dict)
    topic_ids: Mapping[str, str] = field(default_factory=dict)
    cluster_ids: Mapping[str, str] = field(default_factory=dict)
    read_at_ms: int = 0
    read_until: str = "last_stable_offset"
    # per (topic, partition): (epoch, end) of the last batch below the next offset, or (older tables) the epoch
    # of the offset before it from the checkpoint
    leader_epochs: Mapping[tuple[str, int], int | tuple[int, int]] = field(default_factory=dict)
    caught_up_at_ms: Mapping[tuple[str, int], int] = field(default_factory=dict)
    kept_deletes: tuple[int, ...] = ()
    # per (topic, partition): the log start offset when the table was last brought up to date (rows below it were
    # dropped then); absent in tables written before it was recorded (taken as 0)
    log_starts: Mapping[tuple[str, int], int] = field(default_factory=dict)

    def caught_up_at(self, key: tuple[str, int]) -> int:
        return self.caught_up_at_ms.get(key, self.read_at_ms)

    def to_json(self) -> str:
        return json.dumps({"version": 1, "next_offsets": _nested(self.next_offsets),
                           "topic_ids": dict(sorted(self.topic_ids.items())),
                           "cluster_ids": dict(sorted(self.cluster_ids.items())), "read_at_ms": self.read_at_ms,
                           "read_until": self.read_until, "leader_epochs": _nested(self.leader_epochs),
                           "caught_up_at_ms": _nested(self.caught_up_at_ms),
                           "kept_deletes": list(self.kept_deletes), "log_starts": _nested(self.log_starts)},
                          separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str, where: str) -> "TableState":
        """Parse :meth:`to_json`'s output; ``where`` names the table and version in errors."""
        try:
            data = json.loads(text)
            if data.get("version") != 1:
                raise ValueError(f"unknown version {data.get('version')!r}")
            offsets = {(str(t), int(p)): int(o) for t, parts in data["next_offsets"].items() for p, o in parts.items()}
            epochs = {(str(t), int(p)): _recorded_epoch(e) for t, parts in data.get("leader_epochs", {}).items()
                      for p, e in parts.items()}
            caught_up = {(str(t), int(p)): int(ms) for t, parts in data.get("caught_up_at_ms", {}).items()
                         for p, ms in parts.items()}
            starts = {(str(t), int(p)): int(o) for t, parts in data.get("log_starts", {}).items()
                      for p, o in parts.items()}
            return cls(offsets, {str(k): str(v) for k, v in data["topic_ids"].items()},
                       {str(k): str(v) for k, v in data["cluster_ids"].items()}, int(data["read_at_ms"]),
                       str(data["read_until"]), epochs, caught_up,
                       tuple(int(v) for v in data.get("kept_deletes", ())), starts)
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise CompactedTableError(f"{where}: the recorded compaction state {STATE_KEY} is malformed ({exc}); "
                                      "rebuild the table with --mode full") from exc


def _recorded_epoch(value) -> int | tuple[int, int]:
    """A recorded leader epoch: ``[epoch, end]`` of the last batch read, or (older tables) the epoch alone."""
    if isinstance(value, list):
        if len(value) != 2:
            raise ValueError(f"a leader epoch mark is [epoch, end], got {value!r}")
        return int(value[0]), int(value[1])
    return int(value)


def _nested(values: Mapping[tuple[str, int], int | tuple[int, int]]) -> dict[str, dict[str, int | list[int]]]:
    out: dict[str, dict[str, int | list[int]]] = {}
    for (topic, partition), value in sorted(values.items()):
        out.setdefault(topic, {})[str(partition)] = [int(v) for v in value] if isinstance(value, tuple) else int(value)
    return out


@dataclass(frozen=True)
class Increment:
    """What one run reads and records: ``ranges`` ``{(topic, partition): (start, end)}`` (end exclusive),
    ``state`` (the table's state once the run is committed), ``full`` (rebuild the table rather than merge into
    it), ``losses`` (data-loss findings that made a rebuild under ``on_data_loss = "rebuild"``), ``capped``
    (partitions whose read stopped at ``max_offsets_per_partition``: run again to catch up), ``notes`` (for the
    run's output) and ``expired`` (an incremental run's partitions whose log start offset moved since the table
    recorded it, with the new one: retention, e.g. ``cleanup.policy=compact,delete``, or DeleteRecords removed
    every record below it, so a key whose row is below it has no record left in the log and leaves the table, as
    a rebuild from the log would not have it: :func:`drop_expired`)."""

    ranges: Mapping[tuple[str, int], tuple[int, int]]
    state: TableState
    full: bool
    losses: tuple[str, ...] = ()
    capped: tuple[tuple[str, int], ...] = ()
    notes: tuple[str, ...] = ()
    expired: Mapping[tuple[str, int], int] = field(default_factory=dict)

    @property
    def offsets_to_read(self) -> int:
        return sum(end - start for start, end in self.ranges.values())


def cleanable_end(facts: PartitionFacts, start: int, min_compaction_lag_ms: int, now_ms: int) -> int:
    """Where the cleaner's cleanable range ends (``LogCleanerManager.cleanableOffsets``): the minimum of the last
    stable offset, the active segment's base, and, with a positive lag, the base of the first non-active segment
    holding offsets at or after ``start`` whose largest timestamp is newer than ``now - min.compaction.lag.ms``."""
    ends = [facts.last_stable_offset]
    if facts.active_segment_base is not None:
        ends.append(facts.active_segment_base)
    if min_compaction_lag_ms > 0:
        bases = [base for base, _ in facts.segments] + [facts.active_segment_base]
        for i, (base, largest) in enumerate(facts.segments):
            segment_end = bases[i + 1]
            if segment_end is not None and segment_end <= start:
                continue
            if largest > now_ms - min_compaction_lag_ms:
                ends.append(base)
                break
    return min(ends)


def plan_increment(facts: Sequence[PartitionFacts], state: TableState | None, config: CompactionConfig,
                   now_ms: int, *, full: bool = False, on_disk: Iterable[tuple[str, int]] | None = None,
                   selects: Callable[[str, int], bool] | None = None) -> Increment:
    """The ranges a run reads and the state it records. ``facts``: the partitions this run reads; ``on_disk``:
    every partition the data dirs hold, selected or not (default: those of ``facts``), so a table partition the
    run does not select is not taken for lost; ``selects(topic, partition)``: whether the run's topic selection
    takes a partition, on disk or not (default: a topic of ``facts``), so a selected topic gone from the dirs is
    lost. ``state``: the table's (None: no table); with ``full`` (a rebuild was asked for) it is only checked to
    hold no partition the run does not select (a rebuild replaces the whole table). Raises
    :class:`CompactedTableError` for another incarnation or cluster of a topic or such a rebuild, and
    :class:`DataLossError` for data loss under ``on_data_loss = "fail"`` (under ``"rebuild"`` the increment
    becomes a full rebuild and lists the findings)."""
    if selects is None:
        topics = {f.topic for f in facts}
        selects = lambda topic, partition: topic in topics  # noqa: E731
    if state is not None and not full:
        _check_incarnation(facts, state)
    losses: list[str] = []
    if state is not None and not full:
        losses = _losses(facts, state, config, now_ms, on_disk, selects)
        if losses and config.on_data_loss == "fail":
            raise DataLossError("the table's recorded offsets cannot be continued: " + "; ".join(losses)
                                + ". Rebuild it from what the log holds with --on-data-loss rebuild (or --mode "
                                  "full)")
        if losses and state.kept_deletes:
            raise CompactedTableError(
                "the table's recorded offsets cannot be continued (" + "; ".join(losses) + "), and a rebuild from "
                "the log would bring back the rows the DELETEs at table versions "
                f"{', '.join(map(str, state.kept_deletes))} removed (kept with keep_foreign_deletes). Rebuild it "
                "with --mode full and apply those deletions again, or write another table")
        if losses:
            full = True
    if state is not None and full:
        _check_rebuild_covers(state, selects, losses)
    previous = {} if state is None or full else dict(state.next_offsets)
    ranges: dict[tuple[str, int], tuple[int, int]] = {}
    capped = []
    for f in sorted(facts, key=lambda f: f.key):
        start = previous.get(f.key, f.log_start_offset)
        if config.read_until == "cleanable":
            end = cleanable_end(f, start, config.min_compaction_lag_ms, now_ms)
        else:
            end = f.last_stable_offset
        if config.max_offsets_per_partition is not None and end - start > config.max_offsets_per_partition:
            end = start + config.max_offsets_per_partition
            capped.append(f.key)
        ranges[f.key] = (start, max(start, end))
    next_offsets = dict(previous)
    next_offsets.update({key: end for key, (_, end) in ranges.items()})
    topic_ids = {} if state is None or full else dict(state.topic_ids)
    cluster_ids = {} if state is None or full else dict(state.cluster_ids)
    epochs = {} if state is None or full else dict(state.leader_epochs)
    caught_up = {} if state is None or full else {key: state.caught_up_at(key) for key in state.next_offsets}
    for f in facts:
        # delete_retention_ms counts from the last run that read up to the cleaner's checkpoint (a tombstone past
        # it was not cleaned yet, so it stays delete.retention.ms longer) or read the partition from its log start
        # (a key whose tombstone the cleaner had already passed has no older record left to read)
        if f.key not in previous or f.cleaner_offset is None or next_offsets[f.key] >= f.cleaner_offset:
            caught_up[f.key] = now_ms
        if f.topic_id:
            topic_ids[f.topic] = f.topic_id
        if f.cluster_id:
            cluster_ids[f.topic] = f.cluster_id
        mark = f.batch_mark(next_offsets[f.key]) if f.batch_mark is not None and next_offsets[f.key] > 0 else None
        epoch = mark if mark is not None else f.epoch_of(next_offsets[f.key] - 1)
        if epoch is None:
            epochs.pop(f.key, None)
        else:
            epochs[f.key] = epoch
    kept = () if state is None or full else tuple(state.kept_deletes)
    notes: tuple[str, ...] = ()
    if state is not None and full and state.kept_deletes:
        notes = (f"this rebuild brings back the rows the DELETEs at table versions "
                 f"{', '.join(map(str, state.kept_deletes))} removed (kept with keep_foreign_deletes): apply those "
                 "deletions again",)
    log_starts = {} if state is None or full else dict(state.log_starts)
    expired = {}
    for f in facts:
        if f.key in previous and f.log_start_offset > log_starts.get(f.key, 0):
            expired[f.key] = f.log_start_offset
        log_starts[f.key] = f.log_start_offset
    if expired:
        moved = ", ".join(f"{t}-{p} to {o}" for (t, p), o in sorted(expired.items()))
        notes += (f"log start offset moved (retention or DeleteRecords): {moved}; keys with no record left at or "
                  "after it leave the table",)
    new_state = TableState(next_offsets, topic_ids, cluster_ids, now_ms, config.read_until, epochs, caught_up, kept,
                           log_starts)
    return Increment(ranges, new_state, state is None or full, tuple(losses), tuple(capped), notes, expired)


def _check_incarnation(facts: Iterable[PartitionFacts], state: TableState) -> None:
    for f in facts:
        for what, recorded, found in (("topic id", state.topic_ids.get(f.topic), f.topic_id),
                                      ("cluster id", state.cluster_ids.get(f.topic), f.cluster_id)):
            if recorded and found and recorded != found:
                raise CompactedTableError(
                    f"the table holds topic {f.topic!r} with {what} {recorded}, but {f.topic}-{f.partition} in the "
                    f"data dirs has {what} {found} (a deleted and recreated topic, or another cluster's): its "
                    "offsets are unrelated to the table's. Rebuild the table with --mode full, or write another one")


def _check_rebuild_covers(state: TableState, selects: Callable[[str, int], bool], losses: Sequence[str]) -> None:
    left = [f"{t}-{p}" for t, p in sorted(state.next_offsets) if not selects(t, p)]
    if left:
        why = f"data loss ({'; '.join(losses)})" if losses else "--mode full"
        raise CompactedTableError(
            f"{why} asks for a rebuild, which replaces the whole table, but the table also holds topic-partitions "
            f"this run does not select: {', '.join(left)} (their rows would be dropped). Select them too, or write "
            "them to another table")


def _divergence(f: PartitionFacts, start: int, epoch: int | tuple[int, int] | None) -> str | None:
    """Kafka's consumer validation of a position after a leader change (``SubscriptionState
    .maybeCompleteValidation``, KIP-320): the epoch the table's last batch was read under must not end below that
    batch's end in the log now (below the table's next offset, for tables that recorded the epoch of the offset
    before it), else the log was truncated there and rewritten (an unclean leader election; a replica restored
    from an older copy). The last batch's epoch is the same on every replica, while their checkpoints differ: a
    replica rebuilt from a compacted log lacks the epochs whose batches were all cleaned."""
    if isinstance(epoch, tuple):
        found = mark_divergence(f.leader_epochs, epoch, f.high_watermark)
        epoch, ends = epoch
        if found is None:
            return None
        if found.offset is None:
            return (f"{f.topic}-{f.partition}: the table's last batch (ending at offset {ends - 1}) was read under "
                    f"leader epoch {epoch}, which the log's leader-epoch-checkpoint does not know (a log older than "
                    "the table, or rewritten)")
        return (f"{f.topic}-{f.partition}: the log diverged from the table at offset {found.offset} (leader epoch "
                f"{epoch} ends at {found.offset} in the log, the table's last batch ends at {ends - 1}): records "
                "the table applied were truncated and replaced (an unclean leader election)")
    if epoch is None or start == 0 or f.epoch_of(start - 1) is None:
        return None  # nothing recorded (an older table), or the checkpoint no longer covers the offset
    answer = f.epoch_end_offset(epoch)
    if answer is None:
        return (f"{f.topic}-{f.partition}: the table read up to offset {start - 1} under leader epoch {epoch}, "
                f"which the log's leader-epoch-checkpoint does not know (a log older than the table, or rewritten)")
    _, end = answer
    if end < start:
        return (f"{f.topic}-{f.partition}: the log diverged from the table at offset {end} (leader epoch {epoch} "
                f"ends at {end} in the log, the table read up to {start - 1}): records the table applied were "
                "truncated and replaced (an unclean leader election)")
    return None


def _losses(facts: Sequence[PartitionFacts], state: TableState, config: CompactionConfig, now_ms: int,
            on_disk: Iterable[tuple[str, int]] | None, selects: Callable[[str, int], bool]) -> list[str]:
    found = []
    on_disk = {f.key for f in facts} | set(on_disk or ())
    for (topic, partition), offset in sorted(state.next_offsets.items()):
        if selects(topic, partition) and (topic, partition) not in on_disk:
            found.append(f"{topic}-{partition} (table at offset {offset}) is not in the data dirs given")
    for f in facts:
        start = state.next_offsets.get(f.key)
        if start is None:
            continue
        name = f"{f.topic}-{f.partition}"
        if start < f.log_start_offset:
            found.append(f"{name}: offsets {start}..{f.log_start_offset - 1} were deleted (log start offset "
                         f"{f.log_start_offset}) before the table read them")
        elif start > f.high_watermark:
            found.append(f"{name}: the table holds offsets up to {start - 1} but the log ends at "
                         f"{f.high_watermark} (a data dir older than the table, or a truncated log)")
        elif (diverged := _divergence(f, start, state.leader_epochs.get(f.key))) is not None:
            found.append(diverged)
        elif (f.cleaner_offset is not None and f.cleaner_offset > start
              and now_ms - state.caught_up_at(f.key) > config.delete_retention_ms):
            found.append(f"{name}: the cleaner compacted offsets from {start} (cleaner checkpoint "
                         f"{f.cleaner_offset}) and the table last read up to the cleaner's checkpoint "
                         f"{now_ms - state.caught_up_at(f.key)} ms ago, more than delete_retention_ms "
                         f"{config.delete_retention_ms}: deletes there may be gone")
    return found


# --------------------------------------------------------------------------------------------------------------------
# facts from the data dirs (driver side, index files and checkpoints only)

def gather_facts(paths: Sequence[str], options: Mapping[str, str], config: CompactionConfig
                 ) -> tuple[list[PartitionFacts], frozenset]:
    """One :class:`PartitionFacts` per selected topic-partition of ``paths`` (``options``:
    :func:`compaction_read_options`'s), and every ``(topic, partition)`` the dirs hold, selected or not. Planning resolves the bounds (log start, high watermark, last stable
    offset); segment timestamps are read only for ``read_until = "cleanable"``."""
    from kafkaseg.lookup import PartitionLookup, batch_epoch_mark
    from kafkaseg.options import ReadOptions
    from kafkaseg.planning import plan_scan
    from kafkaseg.storage.layout import discover, valid_cleaner_offset

    opts = ReadOptions.from_options(dict(options))
    report = plan_scan(list(paths), opts, check_subscribed=False).report  # a topic gone: the run's own data loss
    by_path = {pdir.path: pdir for pdir in discover(list(paths), key_ring=opts.tiered_key_ring)}
    out = []
    for p in report.partitions:
        pdir = by_path.get(p.path)
        log_start = p.log_start_offset or 0
        upper = p.upper_bound if p.upper_bound is not None else log_start
        high_watermark = p.high_watermark if p.high_watermark is not None else upper
        if p.log_end_offset is not None:
            high_watermark = min(high_watermark, p.log_end_offset)
        cleaner = valid_cleaner_offset(pdir.cleaner_offset if pdir is not None else None, p.log_end_offset)
        segments: tuple[tuple[int, int], ...] = ()
        active = None
        if pdir is not None and pdir.segments:
            active = pdir.segments[-1].base_offset
            if config.read_until == "cleanable" and config.min_compaction_lag_ms > 0:
                with PartitionLookup(pdir, checkpoints_checked=True) as lookup:
                    segments = tuple((s.base_offset, lookup.segment_largest_timestamp(i))
                                     for i, s in enumerate(pdir.segments[:-1]))
        out.append(PartitionFacts(
            p.topic, p.partition, log_start, max(high_watermark, log_start), max(upper, log_start), active, segments,
            cleaner, pdir.topic_id if pdir is not None else None,
            pdir.log_dir_meta.cluster_id if pdir is not None and pdir.log_dir_meta is not None else None,
            tuple((e.epoch, e.start_offset) for e in pdir.leader_epochs) if pdir is not None else (),
            # (epoch, end) of the last batch below an offset, None for a legacy batch, one without an epoch, or none
            # readable (the run then records the checkpoint's epoch, as before)
            functools.partial(batch_epoch_mark, pdir) if pdir is not None else None))
    return out, frozenset((pdir.topic, pdir.partition) for pdir in by_path.values())
