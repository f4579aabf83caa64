"""Retention audit of one partition: what the broker's retention would delete now, and how dirty a compacted log is.

Spark-free; ``jobs/retention_audit.py`` and ``kafkaseg retention`` share it. Two steps:

* :func:`gather_facts` reads what the rules need from a :class:`~kafkaseg.storage.layout.PartitionDir`: file
  names and sizes, checkpoints, each segment's largest timestamp (one ``.timeindex`` entry, plus for the active
  segment the batch headers after its last ``.index`` entry, which a broker holds in memory: through
  :class:`kafkaseg.lookup.PartitionLookup`, so stale and missing indexes are handled as lookups handle them), the
  log end offset (one index interval of headers), and for compacted topics the last stable offset and one batch
  header per dirty segment. No record is decoded.
* :func:`audit_partition` is pure: facts + :class:`~kafkaseg.topic_config.TopicConfig` + now -> a
  :class:`PartitionAudit`.

The rules mirror Kafka (``core/src/main/scala/kafka/log/UnifiedLog.scala``, trunk of October 2024):

* ``deleteOldSegments``: log-start-offset breach, then (only when cleanup.policy contains ``delete``) size, then
  time, each a separate pass over the segments left by the previous one. Compacted logs get the same call from
  the cleaner thread (``LogCleaner.cleanFilthiestLog`` -> ``LogCleanerManager.deletableLogs``), non-compacted ones
  from ``LogManager.cleanupLogs`` every ``log.retention.check.interval.ms`` (5 minutes): so a compact-only topic
  loses segments below its log start offset too (one it had while its policy held ``delete``: DeleteRecords is
  refused for a compact-only log, ``Partition.deleteRecordsOnLeader``), never by size or time.
* ``deletableSegments``: walk segments oldest first; stop at the first whose predicate is false, or that the high
  watermark has not passed (``highWatermark >= upperBound``, upperBound = next segment's base, or the log end
  offset for the last segment: the predicate is not even evaluated then), or that is the last segment and empty.
  With remote storage and copy enabled a segment is deletable only once uploaded; a data dir does not say what
  was uploaded, so every rolled segment is taken as uploaded and the active one is not (the broker rolls it when
  it breaches, and deletes it in a later pass): ``rolls_active`` says so.
* ``deleteLogStartOffsetBreachedSegments``: next segment's base <= log start offset (``localLogStartOffset`` for
  tiered topics, which is at least the first local segment's base, so the same test here).
* ``deleteRetentionSizeBreachedSegments``: skipped when retention.bytes < 0 or size < retention.bytes; else
  ``diff = size - retention.bytes`` and a segment goes while ``diff - segment.size >= 0`` (``diff`` shrinks).
* ``deleteRetentionMsBreachedSegments``: skipped when retention.ms < 0; a segment goes when
  ``now - segment.largestTimestamp > retention.ms``; ``LogSegment.largestTimestamp`` is the max timestamp so far
  (time index's last entry), or the ``.log`` file's mtime when that is -1 (no timestamps: magic 0, or empty; or
  a rolled segment without a ``.timeindex`` that the broker loads with an empty one, see
  :func:`_loads_empty_time_index`).
* ``localRetentionMs/Size``: ``local.retention.*`` (-2 = ``retention.*``) when remote copy is enabled.
* ``deleteSegments``: deleting every segment rolls a new empty one at the log end offset first; the new (local)
  log start offset is the base of the first segment kept (the log end offset after such a roll).

Compaction (``core/src/main/scala/kafka/log/LogCleanerManager.scala``): ``cleanableOffsets`` (first dirty offset =
``cleaner-offset-checkpoint``, or the log start offset when absent, below the log start or past the log end; first
uncleanable = min(last stable offset, active segment base, first dirty non-active segment whose largestTimestamp >
now - min.compaction.lag.ms)); ``LogToClean`` (cleanBytes = segments below the first dirty offset,
cleanableBytes = ``calculateCleanableBytes``, ratio = cleanable / (clean + cleanable)); ``maxCompactionDelay``
(the earliest first-batch timestamp of the dirty non-active segments older than now - max.compaction.lag.ms);
``grabFilthiestCompactedLog``: cleanable when (delay > 0 and cleanable bytes > 0) or ratio >
min.cleanable.dirty.ratio.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Callable, Sequence

from kafkaseg.errors import InvalidOptionError, KafkaSegError, did_you_mean
from kafkaseg.storage import fs as _fs
from kafkaseg.storage.layout import PartitionDir, valid_cleaner_offset
from kafkaseg.topic_config import (
    ClusterConfigs,
    ConfigFile,
    TopicConfig,
    read_cluster_configs,
    resolve_topic_config,
)

__all__ = [
    "RETENTION_CHECK_INTERVAL_MS", "LOG_START_BREACH", "SIZE_BREACH", "TIME_BREACH",
    "SegmentFacts", "PartitionFacts", "SegmentVerdict", "CompactionState", "PartitionAudit",
    "AuditPlan", "parse_now", "format_duration", "gather_facts", "audit_partition", "audit", "summarize",
    "partition_row", "segment_rows", "plan_audit", "exit_status", "EXIT_OVERDUE",
]

RETENTION_CHECK_INTERVAL_MS = 5 * 60 * 1000  # log.retention.check.interval.ms default
_LONG_MIN, _LONG_MAX = -(2**63), 2**63 - 1


def _long(value: int) -> int:
    """``value`` saturated to a Java long (the tables' BIGINT columns): retention.ms = Long.MAX_VALUE and a
    timestamp ahead of now put now - timestamp - retention.ms below Long.MIN_VALUE."""
    return max(_LONG_MIN, min(_LONG_MAX, value))
LOG_START_BREACH, SIZE_BREACH, TIME_BREACH = "log-start-offset", "size", "time"


def parse_now(text: str | int | None) -> int:
    """``--now``: epoch milliseconds or an ISO-8601 date-time (UTC when it has no zone), read as ``--time`` is
    (:func:`kafkaseg.lookup.parse_time_spec`) but only a time; None = the current time."""
    from kafkaseg.lookup import parse_time_spec

    if text is None:
        return int(datetime.now(timezone.utc).timestamp() * 1000)
    try:
        value = parse_time_spec(text)
    except InvalidOptionError as err:
        raise InvalidOptionError(f"--now {str(text).strip()!r} is not epoch milliseconds or an ISO-8601 date-time"
                                 ) from err
    if value < 0:
        raise InvalidOptionError(f"--now {str(text).strip()!r} is not epoch milliseconds or an ISO-8601 date-time")
    return value


def format_duration(ms: int | None) -> str:
    """``ms`` for people: ``3d04h``, ``5h07m``, ``2m09s`` (``-`` for None; negative durations keep their sign)."""
    if ms is None:
        return "-"
    sign, ms = ("-" if ms < 0 else ""), abs(ms)
    days, rest = divmod(ms // 1000, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, seconds = divmod(rest, 60)
    if days:
        return f"{sign}{days}d{hours:02d}h"
    if hours:
        return f"{sign}{hours}h{minutes:02d}m"
    return f"{sign}{minutes}m{seconds:02d}s"


# -- facts ----------------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class SegmentFacts:
    """One segment as retention sees it. ``max_timestamp``: maxTimestampSoFar (-1 when no batch has a timestamp);
    ``first_batch_timestamp``: the first batch's max timestamp (read for compacted topics' dirty segments only,
    else None)."""

    base_offset: int
    size: int
    max_timestamp: int
    mtime_ms: int
    path: str = ""
    first_batch_timestamp: int | None = None

    @property
    def largest_timestamp(self) -> int:
        """``LogSegment.largestTimestamp``."""
        return self.max_timestamp if self.max_timestamp >= 0 else self.mtime_ms


@dataclass(frozen=True)
class PartitionFacts:
    topic: str
    partition: int
    log_dir: str | None
    path: str
    segments: tuple[SegmentFacts, ...]
    log_start_offset: int
    log_end_offset: int
    high_watermark: int
    checkpoint_log_start_offset: int | None = None
    cleaner_offset: int | None = None
    last_stable_offset: int | None = None
    deleted_files: int = 0
    deleted_bytes: int = 0
    notes: tuple[str, ...] = ()


def gather_facts(pdir: PartitionDir, *, compaction: bool = False) -> PartitionFacts:
    """Read what :func:`audit_partition` needs (indexes, checkpoints, names; with ``compaction`` also the last
    stable offset and the first batch header of each non-active segment). Raises ``KafkaSegError`` for what cannot
    be read (an unreadable bounding checkpoint, a segment whose indexes and log are both unreadable)."""
    from kafkaseg.lookup import PartitionLookup
    from kafkaseg.storage.layout import high_watermark_above_words, last_stable_offset
    from kafkaseg.storage.segment import SegmentReader

    notes = list(pdir.notes)
    deleted = pdir.deleted_files  # listed at discovery: no second listing (a request per partition on S3)
    with PartitionLookup(pdir) as lookup:
        log_start = lookup.log_start_offset
        if not pdir.segments:
            return PartitionFacts(pdir.topic, pdir.partition, pdir.log_dir, pdir.path, (), log_start, log_start,
                                  log_start, pdir.checkpoint_log_start_offset, pdir.cleaner_offset, None,
                                  len(deleted), sum(size for _, size in deleted), tuple(notes))
        leo = lookup.log_end_offset()
        hw = lookup.high_watermark()
        if pdir.high_watermark is None:
            notes.append(f"no checkpointed high watermark: the log end offset {leo} stands in for it")
        elif pdir.high_watermark > leo:
            notes.append(high_watermark_above_words(pdir.high_watermark, leo, pdir.path))
        checkpointed = pdir.high_watermark
        if checkpointed is not None and min(checkpointed, leo) < log_start:
            # UnifiedLog.updateHighWatermark: bounded below by the log start offset (the lookup's clamps it too)
            notes.append(f"checkpointed high watermark {checkpointed} is below the log start offset {log_start}, "
                         "which the broker takes instead")
            hw = log_start
        segments = []
        last = len(pdir.segments) - 1
        clean_shutdown: list[bool] = []  # looked up once, and only for a segment without a .timeindex
        for i, seg in enumerate(pdir.segments):
            first_ts = None
            if compaction and i < last:
                with SegmentReader(seg.log_path, pdir.filesystem) as reader:
                    header = reader.header_at(0, max_batch_bytes=None)
                first_ts = header.max_timestamp if header is not None else None
            if i < last and _loads_empty_time_index(pdir, i, clean_shutdown):
                max_ts = -1
            else:
                max_ts = lookup.largest_timestamp(i)[0]
            segments.append(SegmentFacts(seg.base_offset, seg.log_size, max_ts, int(seg.mtime_ms), seg.log_path,
                                         first_ts))
    lso = None
    if compaction:
        lso = last_stable_offset(pdir, max_batch_bytes=None, log_end=leo)
        lso = hw if lso is None else min(lso, hw)
    return PartitionFacts(pdir.topic, pdir.partition, pdir.log_dir, pdir.path, tuple(segments), log_start, leo, hw,
                          pdir.checkpoint_log_start_offset, pdir.cleaner_offset, lso, len(deleted),
                          sum(size for _, size in deleted), tuple(notes))


def _loads_empty_time_index(pdir: PartitionDir, i: int, clean_shutdown: list[bool]) -> bool:
    """Whether the broker loads rolled segment ``i`` with an empty time index: it has an ``.index`` but no
    ``.timeindex`` (``LogLoader.loadSegmentFiles`` -> ``LogSegment.sanityCheck`` resizes a new time index to 0) and
    recovery does not rebuild it (``LogLoader.recoverLog`` recovers, after an unclean shutdown only, the segments
    from the one holding the recovery point on)."""
    seg = pdir.segments[i]
    if seg.timeindex_path is not None or seg.index_path is None:
        return False  # a missing .index makes the broker recover the segment: both indexes are rebuilt
    if pdir.recovery_point is not None and not pdir.past_recovery_point(i):
        return True
    if not clean_shutdown:
        marker = _fs.join(pdir.log_dir, ".kafka_cleanshutdown") if pdir.log_dir else None
        clean_shutdown.append(marker is not None and _fs.exists(marker, pdir.filesystem))
    return clean_shutdown[0]


# -- results --------------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class SegmentVerdict:
    """One segment: whether retention deletes it now (``rule``: which pass, None = kept), its largest timestamp and
    where that came from (``timeindex`` or ``mtime``), and ``overdue_ms`` = now - largestTimestamp - retention.ms
    (None when retention.ms < 0)."""

    base_offset: int
    next_offset: int
    size: int
    largest_timestamp: int
    timestamp_source: str
    path: str
    rule: str | None = None
    overdue_ms: int | None = None
    blocked_by_high_watermark: bool = False

    def as_dict(self) -> dict:
        return dict(self.__dict__)


@dataclass(frozen=True)
class CompactionState:
    """``LogCleanerManager``'s view of a compacted log now."""

    first_dirty_offset: int
    first_uncleanable_offset: int
    clean_bytes: int
    cleanable_bytes: int
    dirty_ratio: float | None  # None when clean + cleanable bytes are 0 (the cleaner skips such a log)
    min_cleanable_dirty_ratio: float
    exceeds_min_ratio: bool
    max_compaction_delay_ms: int  # > 0: max.compaction.lag.ms is exceeded by this much
    cleanable_now: bool

    def as_dict(self) -> dict:
        return dict(self.__dict__)


@dataclass(frozen=True)
class PartitionAudit:
    topic: str
    partition: int
    log_dir: str | None
    path: str
    config: TopicConfig | None
    now_ms: int
    segment_count: int = 0
    total_bytes: int = 0
    log_start_offset: int | None = None
    checkpoint_log_start_offset: int | None = None
    first_offset: int | None = None
    log_end_offset: int | None = None
    high_watermark: int | None = None
    oldest_timestamp: int | None = None
    newest_timestamp: int | None = None
    deletable_segments: int = 0
    deletable_bytes: int = 0
    new_log_start_offset: int | None = None
    segments_by_rule: tuple[tuple[str, int], ...] = ()
    overdue_ms: int | None = None
    size_overdue_ms: int | None = None
    bytes_over_retention: int = 0
    blocked_by_high_watermark: bool = False
    rolls_active: bool = False
    bounded_by_mtimes: bool = False
    deleted_files: int = 0
    deleted_bytes: int = 0
    compaction: CompactionState | None = None
    segments: tuple[SegmentVerdict, ...] = ()
    notes: tuple[str, ...] = ()
    error: str | None = None

    @property
    def name(self) -> str:
        return f"{self.topic}-{self.partition}"

    @property
    def lagging(self) -> bool:
        """Retention is not keeping up: a segment it deletes now (or that only the high watermark holds back) is
        past retention.ms by more than one retention check interval, or the partition has been over
        retention.bytes for longer than that (``size_overdue_ms``)."""
        return any(overdue is not None and overdue > RETENTION_CHECK_INTERVAL_MS
                   for overdue in (self.overdue_ms, self.size_overdue_ms))

    @property
    def owed_ms(self) -> int | None:
        """The longer of ``overdue_ms`` and ``size_overdue_ms``: how long retention has owed a deletion."""
        owed = [v for v in (self.overdue_ms, self.size_overdue_ms) if v is not None]
        return max(owed) if owed else None

    def as_dict(self, segments: bool = False) -> dict:
        out = {k: v for k, v in self.__dict__.items() if k not in ("config", "segments", "compaction")}
        out["segments_by_rule"] = dict(self.segments_by_rule)
        out["notes"] = list(self.notes)
        out["lagging"] = self.lagging
        out["config"] = self.config.as_dict() if self.config is not None else None
        out["compaction"] = self.compaction.as_dict() if self.compaction is not None else None
        if segments:
            out["segments"] = [s.as_dict() for s in self.segments]
        return out


# -- the rules (pure) -----------------------------------------------------------------------------------------------

@dataclass
class _Log:
    """The mutable state one ``deleteOldSegments`` call walks: the segments left, the (local) log start offset."""

    segments: list[SegmentFacts]
    log_start: int
    log_end: int
    high_watermark: int
    remote_copy: bool
    deleted: dict[int, str] = field(default_factory=dict)  # base offset -> rule
    blocked: dict[int, str] = field(default_factory=dict)  # base offset -> rule whose deletion the HW holds back
    rolls_active: bool = False
    rolled_empty: bool = False

    def upper_bound(self, i: int) -> int:
        return self.segments[i + 1].base_offset if i + 1 < len(self.segments) else self.log_end

    def walk(self, predicate, rule: str, would_delete=None) -> None:
        """``UnifiedLog.deletableSegments`` + ``deleteSegments``. ``would_delete(seg, nxt)``: the predicate without
        side effects, asked only to tell a segment the high watermark holds back."""
        if self.rolled_empty:
            return  # every segment went: only the new empty active segment is left, which is never deletable
        deletable: list[int] = []
        for i, seg in enumerate(self.segments):
            nxt = self.segments[i + 1] if i + 1 < len(self.segments) else None
            last_and_empty = nxt is None and seg.size == 0
            upper = self.upper_bound(i)
            if self.high_watermark < upper:
                if (would_delete or predicate)(seg, nxt) and not last_and_empty:
                    self.blocked.setdefault(seg.base_offset, rule)
                break
            if not predicate(seg, nxt):
                break
            if nxt is None and self.remote_copy and seg.size > 0:
                self.rolls_active = True  # rolled now, deleted after its upload, in a later pass
                break
            if last_and_empty:
                break
            deletable.append(i)
        if not deletable:
            return
        for i in deletable:
            self.deleted[self.segments[i].base_offset] = rule
        if len(deletable) == len(self.segments):  # roll first: a log always has a segment
            self.segments = []
            self.rolled_empty = True
            self.log_start = max(self.log_start, self.log_end)
        else:
            self.segments = self.segments[len(deletable):]
            self.log_start = max(self.log_start, self.segments[0].base_offset)

    @property
    def size(self) -> int:
        return sum(s.size for s in self.segments)


def _compaction(facts: PartitionFacts, config: TopicConfig, now: int) -> CompactionState | None:
    segments = facts.segments
    if not segments:
        return None
    log_start, leo = facts.log_start_offset, facts.log_end_offset
    checkpoint = valid_cleaner_offset(facts.cleaner_offset, leo)  # (and one below the log start is the log start)
    first_dirty = log_start if checkpoint is None or checkpoint < log_start else checkpoint
    active_base = segments[-1].base_offset

    def floor_index(offset: int) -> int | None:
        found = None
        for i, s in enumerate(segments):
            if s.base_offset <= offset:
                found = i
        return found

    def values(start: int, end: int) -> list[SegmentFacts]:  # LogSegments.values(from, to)
        if start == end:
            return []
        first = floor_index(start)
        lo = 0 if first is None else first
        return [s for s in segments[lo:] if s.base_offset < end]

    def non_active_from(start: int) -> list[SegmentFacts]:  # LogSegments.nonActiveLogSegmentsFrom
        return [] if start > active_base else values(start, active_base)

    lso = facts.last_stable_offset if facts.last_stable_offset is not None else facts.high_watermark
    candidates = [lso, active_base]
    min_lag = max(config["min.compaction.lag.ms"], 0)
    if min_lag > 0:
        young = next((s for s in non_active_from(first_dirty) if s.largest_timestamp > now - min_lag), None)
        if young is not None:
            candidates.append(young.base_offset)
    uncleanable = max(first_dirty, min(candidates))
    # LogCleanerManager.calculateCleanableBytes
    after = non_active_from(uncleanable)
    first_uncleanable = after[0].base_offset if after else active_base
    cleanable = sum(s.size for s in values(min(first_dirty, first_uncleanable), first_uncleanable))
    clean = sum(s.size for s in segments if s.base_offset < first_dirty)  # logSegments(-1, firstDirtyOffset)
    total = clean + cleanable
    ratio = cleanable / total if total > 0 else None
    # maxCompactionDelay: first-batch timestamps (> 0) of the dirty non-active segments
    firsts = [s.first_batch_timestamp for s in non_active_from(first_dirty)
              if s.first_batch_timestamp is not None and s.first_batch_timestamp > 0]
    earliest = min(firsts) if firsts else 2**63 - 1
    clean_until = now - max(config["max.compaction.lag.ms"], 0)
    delay = clean_until - earliest if earliest < clean_until else 0
    min_ratio = config["min.cleanable.dirty.ratio"]
    exceeds = ratio is not None and ratio > min_ratio
    cleanable_now = total > 0 and ((delay > 0 and cleanable > 0) or exceeds)
    return CompactionState(first_dirty, first_uncleanable, clean, cleanable, ratio, min_ratio, exceeds, delay,
                           cleanable_now)


def audit_partition(facts: PartitionFacts, config: TopicConfig, now_ms: int) -> PartitionAudit:
    """What retention would delete from ``facts`` at ``now_ms`` under ``config`` (pure)."""
    segments = list(facts.segments)
    log = _Log(segments, facts.log_start_offset, facts.log_end_offset, facts.high_watermark,
               config.remote_copy_enabled)

    # deleteLogStartOffsetBreachedSegments (every cleanup policy)
    def start_breached(seg, nxt):
        return nxt is not None and nxt.base_offset <= log.log_start

    log.walk(start_breached, LOG_START_BREACH)
    retention_ms = config.effective_retention_ms
    retention_bytes = config.effective_retention_bytes
    size_before = log.size
    if config.delete:
        # deleteRetentionSizeBreachedSegments
        if retention_bytes >= 0 and log.size >= retention_bytes:
            diff = log.size - retention_bytes

            def size_breached(seg, nxt):
                nonlocal diff
                if diff - seg.size >= 0:
                    diff -= seg.size
                    return True
                return False

            log.walk(size_breached, SIZE_BREACH, lambda seg, nxt: diff - seg.size >= 0)
        # deleteRetentionMsBreachedSegments
        if retention_ms >= 0:
            def time_breached(seg, nxt):
                return now_ms - seg.largest_timestamp > retention_ms

            log.walk(time_breached, TIME_BREACH)

    verdicts = []
    for i, seg in enumerate(segments):
        nxt = segments[i + 1].base_offset if i + 1 < len(segments) else facts.log_end_offset
        verdicts.append(SegmentVerdict(
            seg.base_offset, nxt, seg.size, seg.largest_timestamp,
            "timeindex" if seg.max_timestamp >= 0 else "mtime", seg.path, log.deleted.get(seg.base_offset),
            _long(now_ms - seg.largest_timestamp - retention_ms) if retention_ms >= 0 else None,
            seg.base_offset in log.blocked))
    deleted = [v for v in verdicts if v.rule is not None]
    by_rule: dict[str, int] = {}
    for v in deleted:
        by_rule[v.rule] = by_rule.get(v.rule, 0) + 1
    # how long retention has owed these deletions: past retention.ms, for the oldest segments the time rule itself
    # reaches (all past retention.ms from the first on, whichever rule deletes them now, or where only the high
    # watermark holds them back: a follower down, a stuck ISR), and past retention.bytes
    # (a segment is owed no earlier than its last write, its file's mtime: records can carry timestamps far older
    # than their writes, a backfill, MirrorMaker; an mtime after now, a clock or a copy's, says nothing)
    reached: dict[int, int] = {}  # base offset -> since when the time rule owes its deletion
    if retention_ms >= 0 and config.delete:
        since = None
        for seg in segments:
            if now_ms - seg.largest_timestamp <= retention_ms:
                break
            # the walk deletes oldest first: a segment is owed no earlier than every one before it
            own = max(seg.largest_timestamp + retention_ms, _written(seg, now_ms))
            since = own if since is None else max(since, own)
            reached[seg.base_offset] = since
    past_ms = [_long(now_ms - reached[v.base_offset]) for v in verdicts if v.base_offset in reached
               and (v.rule is not None or v.blocked_by_high_watermark) and now_ms > reached[v.base_offset]]
    size_overdue = _size_overdue(segments, log, retention_bytes, now_ms) if config.delete else None
    stamps = [s.largest_timestamp for s in segments]
    compaction = _compaction(facts, config, now_ms) if config.compact else None
    notes = list(facts.notes)
    no_timestamp = sum(1 for i, s in enumerate(segments)  # an empty last segment is never deletable anyway
                       if s.max_timestamp < 0 and (s.size > 0 or i + 1 < len(segments)))
    stamped = [v.overdue_ms for v in verdicts if v.base_offset in reached and v.overdue_ms is not None]
    owed = max(past_ms, default=0)
    bounded_by_mtimes = bool(stamped) and max(stamped) - owed > RETENTION_CHECK_INTERVAL_MS
    if bounded_by_mtimes:
        notes.append(f"past retention.ms by {format_duration(max(stamped))} by record timestamps, but owed only "
                     f"{format_duration(owed)} by when the segments were written (their files' "
                     "mtimes): records written with old timestamps (a backfill, MirrorMaker), or a copy that did "
                     "not keep mtimes (cp without -p), whose real lag these files cannot show")
    if no_timestamp and config.delete and retention_ms >= 0:
        notes.append(f"{no_timestamp} segment(s) have no timestamp (no batch has one, or the broker loads an empty "
                     "time index): their largestTimestamp is the .log file's mtime, which a copy that did not keep "
                     "mtimes (cp without -p, an upload to object storage) sets to the time of the copy")
    if config.delete and retention_ms >= 0 and log.segments and not log.blocked and not log.rolls_active:
        stop = log.segments[0]  # where the time walk stopped: not past retention.ms
        behind = [s for s in log.segments[1:] if now_ms - s.largest_timestamp > retention_ms]
        if behind:
            when = "in the future" if stop.largest_timestamp > now_ms else "within retention.ms"
            notes.append(f"{len(behind)} segment(s) past retention.ms are kept behind segment {stop.base_offset}, "
                         f"whose largest timestamp {stop.largest_timestamp} is {when}: the time rule deletes the "
                         "oldest segments first and stops at the first it keeps")
    if facts.cleaner_offset is not None and not config.compact and not config.topic_level("cleanup.policy"):
        notes.append(f"cleaner-offset-checkpoint holds this partition (the log cleaner compacted it), but "
                     f"cleanup.policy={','.join(config['cleanup.policy'])} comes from "
                     f"{config.source('cleanup.policy')}: if the topic is compacted, set its cleanup.policy in the "
                     "TOML file")
    if log.rolls_active:
        notes.append("the active segment breaches retention: the broker rolls it and deletes it once it is in "
                     "remote storage")
    if config.remote_copy_enabled and deleted:
        notes.append("remote storage: every rolled segment is taken as uploaded (a data dir does not say)")
    return PartitionAudit(
        facts.topic, facts.partition, facts.log_dir, facts.path, config, now_ms,
        segment_count=len(segments), total_bytes=sum(s.size for s in segments),
        log_start_offset=facts.log_start_offset, checkpoint_log_start_offset=facts.checkpoint_log_start_offset,
        first_offset=segments[0].base_offset if segments else None, log_end_offset=facts.log_end_offset,
        high_watermark=facts.high_watermark,
        oldest_timestamp=min(stamps) if stamps else None, newest_timestamp=max(stamps) if stamps else None,
        deletable_segments=len(deleted), deletable_bytes=sum(v.size for v in deleted),
        new_log_start_offset=log.log_start if deleted else None,
        segments_by_rule=tuple(sorted(by_rule.items())),
        overdue_ms=max(past_ms) if past_ms else None, size_overdue_ms=size_overdue,
        bytes_over_retention=max(0, size_before - retention_bytes) if config.delete and retention_bytes >= 0 else 0,
        blocked_by_high_watermark=bool(log.blocked), rolls_active=log.rolls_active,
        bounded_by_mtimes=bounded_by_mtimes, deleted_files=facts.deleted_files, deleted_bytes=facts.deleted_bytes,
        compaction=compaction,
        segments=tuple(verdicts), notes=tuple(notes))


def _written(seg: SegmentFacts, now_ms: int) -> int:
    """When ``seg`` was last written, as far as its file's mtime says (none: an mtime after ``now_ms``)."""
    return seg.mtime_ms if 0 < seg.mtime_ms <= now_ms else -(1 << 63)


def _size_overdue(segments, log: "_Log", retention_bytes: int, now_ms: int) -> int | None:
    """At least how long retention has owed the size rule's first deletion (made now, or held back by the high
    watermark): it deletes the oldest segment once the bytes after it are retention.bytes or more, which became
    true during the first later segment whose end brings those bytes there, so no later than that segment's last
    write: the later of its largest timestamp and its file's mtime (a record's timestamp alone can be far older
    than its write: MirrorMaker, Streams, backfills), now minus that. None when the size rule deletes nothing."""
    by_size = [i for i, seg in enumerate(segments) if log.deleted.get(seg.base_offset) == SIZE_BREACH
               or log.blocked.get(seg.base_offset) == SIZE_BREACH]
    if retention_bytes < 0 or not by_size:
        return None
    after = 0
    for seg in segments[by_size[0] + 1:]:
        after += seg.size
        if after >= retention_bytes:
            written = max(seg.largest_timestamp, _written(seg, now_ms))
            return _long(now_ms - written) if now_ms > written else None
    return None


def audit(pdir: PartitionDir, config: TopicConfig, now_ms: int) -> PartitionAudit:
    """:func:`gather_facts` then :func:`audit_partition`; a partition that cannot be read gets an audit with
    ``error`` set instead of raising (one bad partition does not stop an audit of a cluster)."""
    from kafkaseg.storage.layout import relisted

    try:  # a segment a live broker deletes meanwhile: the partition is listed again
        facts = relisted(pdir, lambda current: gather_facts(current, compaction=config.compact))
    except KafkaSegError as err:
        return PartitionAudit(pdir.topic, pdir.partition, pdir.log_dir, pdir.path, config, now_ms,
                              error=f"{type(err).__name__}: {err}")
    return audit_partition(facts, config, now_ms)


# -- tables and summary ---------------------------------------------------------------------------------------------

def labels(audits: Sequence[PartitionAudit]) -> dict[int, str]:
    """A name for each audit (by ``id``): ``topic-partition``, with the log dir added where several replicas of
    one partition are audited (``--replicas all``)."""
    counts: dict[str, int] = {}
    for a in audits:
        counts[a.name] = counts.get(a.name, 0) + 1
    return {id(a): a.name if counts[a.name] == 1 else f"{a.name} in {a.log_dir}" for a in audits}


#: The exit status of an audit (``kafkaseg retention``, ``jobs/retention_audit.py``) with ``--fail-on-overdue``
#: when only overdue partitions trip it, so a scheduled check tells them from a partition it could not audit (1).
EXIT_OVERDUE = 3


def exit_status(summary: dict, fail_on_overdue: bool) -> int:
    """1 when a partition could not be audited (``summary["errors"]``), else :data:`EXIT_OVERDUE` with
    ``fail_on_overdue`` when a partition is :attr:`~PartitionAudit.lagging` (past retention.ms, or over
    retention.bytes, for longer than a retention check interval, held back by the high watermark or not), else
    0."""
    if summary["errors"]:
        return 1
    return EXIT_OVERDUE if fail_on_overdue and summary["lagging_partitions"] else 0


def summarize(audits: Sequence[PartitionAudit], top: int = 10) -> dict:
    """Totals over ``audits`` (``partitions``: distinct topic-partitions; ``replicas``: audits, more with every
    replica audited; the ``*_partitions``, ``blocked_by_high_watermark`` and ``compaction_due`` counts count audits,
    so replicas when every replica is audited) and the ``top`` most overdue."""
    label = labels(audits)
    ok = [a for a in audits if a.error is None]
    overdue = sorted((a for a in ok if a.owed_ms is not None), key=lambda a: -a.owed_ms)
    dirty = [a for a in ok if a.compaction is not None and a.compaction.cleanable_now]
    return {
        "partitions": len({(a.topic, a.partition) for a in audits}),
        "replicas": len(audits),
        "errors": [{"partition": label[id(a)], "path": a.path, "error": a.error} for a in audits if a.error],
        "segments": sum(a.segment_count for a in ok),
        "bytes": sum(a.total_bytes for a in ok),
        "deletable_partitions": sum(1 for a in ok if a.deletable_segments),
        "deletable_segments": sum(a.deletable_segments for a in ok),
        "deletable_bytes": sum(a.deletable_bytes for a in ok),
        "lagging_partitions": sum(1 for a in ok if a.lagging),
        "blocked_by_high_watermark": sum(1 for a in ok if a.blocked_by_high_watermark),
        "bounded_by_mtimes": sum(1 for a in ok if a.bounded_by_mtimes),
        "pending_deleted_files": sum(a.deleted_files for a in ok),
        "pending_deleted_bytes": sum(a.deleted_bytes for a in ok),
        "compaction_due": len(dirty),
        "most_overdue": [{"partition": label[id(a)], "owed_ms": a.owed_ms, "overdue_ms": a.overdue_ms,
                          "size_overdue_ms": a.size_overdue_ms, "deletable_segments": a.deletable_segments,
                          "deletable_bytes": a.deletable_bytes} for a in overdue[:top]],
    }


def partition_row(a: PartitionAudit) -> dict:
    """One flat row per partition (the job's table, the CLI's JSON rows' core)."""
    c, cfg = a.compaction, a.config
    return {
        "topic": a.topic, "partition": a.partition, "log_dir": a.log_dir, "path": a.path, "now_ms": a.now_ms,
        "cleanup_policy": ",".join(cfg["cleanup.policy"]) if cfg else None,
        "cleanup_policy_source": cfg.source("cleanup.policy") if cfg else None,
        "retention_ms": cfg.effective_retention_ms if cfg else None,
        "retention_ms_source": cfg.retention_ms_source if cfg else None,
        "retention_bytes": cfg.effective_retention_bytes if cfg else None,
        "retention_bytes_source": cfg.retention_bytes_source if cfg else None,
        "remote_storage": cfg.remote_log_enabled if cfg else None,
        "segment_count": a.segment_count, "total_bytes": a.total_bytes,
        "log_start_offset": a.log_start_offset, "checkpoint_log_start_offset": a.checkpoint_log_start_offset,
        "first_offset": a.first_offset, "log_end_offset": a.log_end_offset, "high_watermark": a.high_watermark,
        "oldest_timestamp": a.oldest_timestamp, "newest_timestamp": a.newest_timestamp,
        "deletable_segments": a.deletable_segments, "deletable_bytes": a.deletable_bytes,
        "new_log_start_offset": a.new_log_start_offset,
        "deletable_by_log_start": dict(a.segments_by_rule).get(LOG_START_BREACH, 0),
        "deletable_by_size": dict(a.segments_by_rule).get(SIZE_BREACH, 0),
        "deletable_by_time": dict(a.segments_by_rule).get(TIME_BREACH, 0),
        "overdue_ms": a.overdue_ms, "size_overdue_ms": a.size_overdue_ms, "lagging": a.lagging,
        "bytes_over_retention": a.bytes_over_retention,
        "blocked_by_high_watermark": a.blocked_by_high_watermark, "rolls_active": a.rolls_active,
        "pending_deleted_files": a.deleted_files, "pending_deleted_bytes": a.deleted_bytes,
        "dirty_ratio": c.dirty_ratio if c else None,
        "min_cleanable_dirty_ratio": c.min_cleanable_dirty_ratio if c else None,
        "dirty_ratio_exceeded": c.exceeds_min_ratio if c else None,
        "cleanable_bytes": c.cleanable_bytes if c else None,
        "max_compaction_lag_exceeded_ms": c.max_compaction_delay_ms if c else None,
        "compaction_due": c.cleanable_now if c else None,
        "notes": "; ".join(a.notes) or None,
        "error": a.error,
    }


def segment_rows(a: PartitionAudit) -> list[dict]:
    """One row per segment of ``a``."""
    return [{"topic": a.topic, "partition": a.partition, "log_dir": a.log_dir, "now_ms": a.now_ms,
             "base_offset": s.base_offset, "next_offset": s.next_offset, "size": s.size, "path": s.path,
             "largest_timestamp": s.largest_timestamp, "timestamp_source": s.timestamp_source,
             "deleted_by": s.rule, "overdue_ms": s.overdue_ms,
             "blocked_by_high_watermark": s.blocked_by_high_watermark} for s in a.segments]



# -- what to audit --------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class AuditPlan:
    """The partitions to audit (one replica each: the choice and validation every kafkaseg reader makes, see
    :func:`kafkaseg.storage.layout.choose_replicas`; or every replica found) with their resolved configs, and what
    the metadata log held."""

    targets: tuple[tuple[PartitionDir, TopicConfig], ...]
    cluster: ClusterConfigs
    replica_notes: tuple[str, ...] = ()
    # ``(folder, bytes)`` of the log dirs' ``<topic>-<partition>.<id>-delete`` folders: a topic deletion (or a
    # replica moved away) the broker has not finished removing; deletions that never finish fill disks
    pending_topic_deletions: tuple[tuple[str, int], ...] = ()

    def deletions_line(self) -> str | None:
        """One line on the ``-delete`` folders, None when there are none."""
        if not self.pending_topic_deletions:
            return None
        total = sum(size for _, size in self.pending_topic_deletions)
        return (f"{len(self.pending_topic_deletions)} partition folder(s) awaiting deletion (-delete: a topic "
                f"deletion or a replica moved away, which the broker removes after file.delete.delay.ms): {total} "
                "bytes, not audited: " + ", ".join(f"{_fs.redact(path)} ({size} B)"
                                                   for path, size in self.pending_topic_deletions[:5])
                + (", ..." if len(self.pending_topic_deletions) > 5 else ""))


def plan_audit(data_dirs: Sequence[str], config_file: ConfigFile | None = None, *, topics: Sequence[str] = (),
               topic_pattern: str | None = None, all_replicas: bool = False, key_ring=None) -> AuditPlan:
    """Discover the partitions under ``data_dirs`` (``LayoutError`` for a missing dir), keep those named in
    ``topics`` or whose name fully matches ``topic_pattern`` (all when neither is given; the KRaft metadata log is
    never audited: snapshots, not topic retention, bound it), leave out stray replicas (:func:`_stray_reason`,
    listed in ``replica_notes``), choose one replica each (every one with ``all_replicas``: each broker runs its
    own retention over its own segments, high watermark and ``.deleted`` files, so a broker whose retention is held
    back shows only in its own replica), and resolve each topic's config (``config_file`` > metadata log >
    ``[defaults]`` > Kafka's, with the broker's own settings for its replica)."""
    import re

    from kafkaseg.storage.layout import choose_replicas, discover

    skipped: list[tuple[str, str]] = []
    found = discover(list(data_dirs), skipped=skipped, key_ring=key_ring)  # (key_ring: tiered copies, not audited)
    cluster = read_cluster_configs(found) if (config_file is None or config_file.use_cluster_metadata) \
        else ClusterConfigs()
    try:
        pattern = re.compile(topic_pattern) if topic_pattern else None
    except re.error as err:
        raise InvalidOptionError(f"topic pattern {topic_pattern!r} is not a valid regex: {err}") from err
    wanted = set(topics)

    def selected(topic: str) -> bool:
        if topic == "__cluster_metadata":
            return False
        if not wanted and pattern is None:
            return True
        return topic in wanted or (pattern is not None and pattern.fullmatch(topic) is not None)

    # a selection that matches nothing is a typo far more often than an intent: a scheduled audit must not pass
    # because it looked at no partition
    on_disk = sorted({p.topic for p in found} - {"__cluster_metadata"})
    if "__cluster_metadata" in topics:
        raise InvalidOptionError("__cluster_metadata is the KRaft metadata log: topic retention does not apply to it "
                                 "(its snapshots bound it), so it is never audited")
    absent = [t for t in topics if t not in on_disk]
    if absent:
        hints = [t + did_you_mean(t, on_disk) for t in absent]
        where = ", ".join(map(_fs.redact, data_dirs))
        raise InvalidOptionError(f"no partition of topic {', '.join(hints)} under {where}")
    if pattern is not None and not topics and not any(pattern.fullmatch(t) for t in on_disk):
        where = ", ".join(map(_fs.redact, data_dirs))
        raise InvalidOptionError(f"topic pattern {topic_pattern!r} matches no topic under {where} "
                                 "(it must match whole names: 'logs-.*', not 'logs')")
    chosen, strays = [], []
    for p in found:
        if not selected(p.topic):
            continue
        if p.tiered is not None:  # the audit is of log dirs: remote storage has its own rules and deleter
            strays.append(f"{p.topic}-{p.partition} ({p.path}): a tiered-storage copy, not audited (the broker's "
                          "retention.* rules apply to it through its remote log manager, which kafkaseg does not "
                          "model)")
            continue
        why = _stray_reason(p, cluster)
        if why is None:
            chosen.append(p)
        else:
            strays.append(f"{p.topic}-{p.partition} ({p.path}): {why}")
    if all_replicas:
        replicas = sorted(chosen, key=lambda p: (p.topic, p.partition, p.path))
        notes: tuple[str, ...] = ()
    else:
        choices = choose_replicas(chosen, with_remote=False)
        replicas = [choice.chosen for choice in choices]
        notes = tuple(f"{c.topic}-{c.partition}: {c.reason}" for c in choices if len(c.candidates) > 1)
    targets = []
    for pdir in replicas:
        node = pdir.log_dir_meta.node_id if pdir.log_dir_meta is not None else None
        targets.append((pdir, resolve_topic_config(pdir.topic, config_file, cluster, node)))
    return AuditPlan(tuple(targets), cluster, notes + tuple(strays),
                     _pending_deletions([path for path, _ in skipped if path.rstrip("/").endswith("-delete")],
                                        selected, found))


def _pending_deletions(folders: Sequence[str], selected: Callable[[str], bool], found) -> tuple:
    """``(folder, bytes)`` of ``-delete`` folders of the selected topics (a name that does not say its topic,
    cut to fit 255 characters, counts), each listed once (a folder gone meanwhile: the deletion finished)."""
    from kafkaseg.storage.layout import renamed_partition

    filesystems = {p.log_dir: p.filesystem for p in found if p.log_dir}  # (a log dir's folders share its store)
    out = []
    for folder in sorted(folders):
        name = _fs.basename(folder.rstrip("/"))
        parsed = renamed_partition(name)
        if parsed is not None and not selected(parsed[0]):
            continue
        try:
            entries = _fs.list_dir(folder, filesystems.get(_fs.parent(folder)))
        except KafkaSegError:
            continue
        out.append((folder, sum(e.size or 0 for e in entries if not e.is_dir)))
    return tuple(out)


def _stray_reason(pdir: PartitionDir, cluster: ClusterConfigs) -> str | None:
    """Why a KRaft broker would take ``pdir`` for a stray replica and delete it whole at startup
    (``LogManager.isStrayKraftReplica``: its ``partition.metadata`` topic id is not the metadata image's id for the
    topic, or the partition's replica set, from its PartitionRecord and PartitionChangeRecords, does not hold the
    broker's node id), or None. Only with a complete metadata log of the same cluster and a recorded topic id."""
    if not cluster.complete or not pdir.topic_id:
        return None
    cluster_id = pdir.log_dir_meta.cluster_id if pdir.log_dir_meta is not None else None
    if cluster_id and cluster.cluster_id and cluster_id != cluster.cluster_id:
        return None  # another cluster's log dir: its metadata log is not this one (choose_replicas objects)
    current = cluster.topic_ids.get(pdir.topic)
    if current == pdir.topic_id:
        node = pdir.log_dir_meta.node_id if pdir.log_dir_meta is not None else None
        assigned = cluster.replicas.get((current, pdir.partition))
        if node is None or assigned is None or node in assigned:  # a partition with no record is not judged
            return None
        return (f"stray replica, not audited: the metadata log assigns this partition to replicas {list(assigned)}, "
                f"not broker {node}, so the broker deletes this directory instead of applying retention to it")
    what = "the topic was deleted" if current is None else f"the topic was re-created with id {current}"
    return (f"stray replica, not audited: its topic id {pdir.topic_id} is not in the metadata log ({what}), so "
            "the broker deletes this directory at startup instead of applying retention to it")
