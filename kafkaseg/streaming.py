"""Micro-batch streaming over Kafka log dirs that grow (a live broker's disks, backups or tiered-storage copies
that receive new segments): offsets, admission control, and the plan of each micro-batch. Spark-free; the Spark
stream reader (:class:`kafkaseg.spark.source.KafkaSegStreamReader`) is a thin wrapper over
:class:`MicroBatchPlanner`, which holds the state Spark's streaming runner keeps between calls.

Offsets are Spark's Kafka source offsets, ``{"topic": {"0": 23, "1": 40}}``: per topic-partition, the next offset
to read (``KafkaSourceOffset`` JSON, so a query's offset log reads the same as with ``format("kafka")``), plus the
topic ids the offsets were taken from (:data:`TOPIC_IDS`), which Spark's source does not record. The
semantics follow ``KafkaMicroBatchStream.scala`` and ``KafkaOffsetReaderAdmin.getOffsetRangesFromResolvedOffsets``
in apache/spark ``connector/kafka-0-10-sql``, with the files standing in for the cluster:

* latest = each selected partition's upper bound, as a batch read's ``endingOffsets=latest``: the high watermark
  from ``replication-offset-checkpoint`` (``upperBound=logEndOffset`` for the log end), and under
  ``read_committed`` at most the last stable offset. Partitions are discovered again at every trigger, so topics
  a ``subscribePattern`` matches and partition folders that appear later are picked up;
* initial offsets (``startingOffsets``, default ``latest``): ``earliest``, ``latest``, JSON offsets (-2 earliest,
  -1 latest; unlisted partitions start at earliest, as partitions found later do) or timestamps
  (``startingTimestamp``, ``startingOffsetsByTimestamp`` with ``startingOffsetsByTimestampStrategy``);
* ``maxOffsetsPerTrigger`` spreads its budget over the partitions in proportion to what each has pending, never
  starving one (Spark's ``rateLimit``); ``minOffsetsPerTrigger`` skips a trigger until that many offsets are
  pending or ``maxTriggerDelay`` has passed since the last batch (``delayBatch``). Both count offsets, not
  records, as Spark does (compacted or transactional logs have fewer records than offsets);
* ``Trigger.AvailableNow`` stops at the latest offsets of the moment it starts (:meth:`prepare_available_now`;
  a start resolved later, above that, reads nothing; a target that needs the stream's position as evidence, which
  Spark gives only after, is taken from the files of that moment at the first ``latestOffset``), honouring ``maxOffsetsPerTrigger``. It ignores
  ``minOffsetsPerTrigger``, unlike Spark's Kafka source, whose delay rule can end such a query before it reached its
  target;
* a latest offset below the stream's position is a log that went back (data loss, as in Spark), except in the
  cases the source can explain while the files still reach the position: the replica read changed since the
  previous trigger (the copy ahead went away; another with a lagging checkpointed high watermark is read), the
  previous trigger read the partition to its log end because the broker had not checkpointed its high watermark
  yet (this process's memory), or the leader epoch recorded with the position shows that the log was not truncated
  below it (what survives a restart; not without a ``leader-epoch-checkpoint``). Then it is no new data until the
  latest reaches the position again. So is a compacted follower's high watermark moved back into the compaction
  gap before a last batch the stream had read past: the stream's position (:meth:`MicroBatchPlanner._read_to`)
  vouches for that batch as a stopped broker's recovery point does, where a read without one takes it for a
  corrupt base offset (``SkippedOffsetsError``). Over several copies, one whose log ends below the stream's
  position is passed over for one that reaches it, whatever their high watermarks (``choose_replicas``' ``read_to``):
  the stream reports a log that went back only when no copy reaches its position. A replica switch between fixing
  a micro-batch's end and planning it leaves the end above the new replica's high watermark: data loss, since
  records above a replica's high watermark may be a fenced leader's;
* a start (``startingOffsets``) above the high watermark that the files reach waits there for the high watermark,
  as a consumer's empty fetch there does (no rewind, no data loss); one past the log end is data loss, raised by
  :meth:`MicroBatchPlanner.initial_offsets` under ``failOnDataLoss`` (naming the option), else the first
  micro-batch's (a log that went back);
* a trigger recomputes the range of a partition only when its checkpoints or segment files changed (names, the
  last one's size and mtime) or its last segment changed within the last 2 s (an append inside the mtime's
  granularity); an idle partition costs its folder listing;
* data loss (``failOnDataLoss``, default true: :class:`~kafkaseg.errors.DataLossError`; false: skipped and
  listed in :attr:`MicroBatchPlan.data_loss`): a partition that disappeared, a partition found after the start
  whose log does not begin at offset 0, a log that went back below where the stream stood (truncated or
  recreated: the files end below the position), a topic deleted and recreated (its topic id differs from the one
  the stream's offsets were taken from, whatever its offsets; with ``failOnDataLoss=false`` the new topic is read
  from its beginning, as a partition found later is), a log that diverged below the position (the leader epoch
  recorded with it ends below it in the log's ``leader-epoch-checkpoint`` now, KIP-320: truncated and written
  again, whatever the offsets; with ``failOnDataLoss=false`` the replaced records are read again from where it
  diverged; but not at or above the high watermark recorded with a position a micro-batch fixed past it,
  :data:`HIGH_WATERMARKS`: records never acknowledged, which a follower truncation rewrote while the micro-batch
  read, read again from there by the next micro-batch, :data:`READ_FROM`, with a warning; so is a log that went
  back below the position but not below that high watermark), a partition on disk left out of a micro-batch's end (its folder
  went away when the end was fixed), a micro-batch that reads a partition to its log end past which its high
  watermark and recovery point say offsets were acknowledged and flushed that the files do not hold (the loss a
  batch read to latest raises, by planning's rule and in its words: ``PartitionReport.lost_past_end``; said by the
  batch that reaches the end, after which the stream stands there), a stream that stands at such a log end with no
  batch to read to it (started at ``latest``, or read there before the checkpoints came to say so: what a batch read
  from there to latest raises; said once, by :meth:`MicroBatchPlanner.latest_offsets`, which under
  ``failOnDataLoss`` raises it and otherwise lists it in :attr:`MicroBatchPlanner.standing_loss`), and, from the
  planner, a start below the log start offset (retention deleted unread records; each offset said once, where a
  rate-limited stream creeping through them said the loss from its start again at every micro-batch) or an end
  past where the files now end (offsets missing between segments are read past, as Spark's source reads past them:
  see :mod:`kafkaseg.planning`). A partition folder that vanishes while a trigger looks at it (a topic being deleted)
  counts as gone.

One difference from Spark, which records its initial offsets in the checkpoint's ``sources/`` folder: a Python
data source cannot write there, so a query restarted before its first micro-batch committed resolves
``startingOffsets`` again. With ``latest`` that can land past the first batch's recorded end; kafkaseg then plans
nothing for that partition in the replayed batch (the log did not go backwards, so it is not data loss) and the
next batch continues from the recorded end. A partition found in that restart is left to the next batch, which
reads it from its beginning.
"""

from __future__ import annotations

import logging
import math
import os
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Iterator, Mapping, Sequence

import pyarrow as pa

from kafkaseg.errors import (DataLossError, InvalidOptionError, KafkaSegError, LayoutError, SkippedOffsetsError,
                             did_you_mean)
from kafkaseg.lookup import PartitionLookup, epoch_mark_of
from kafkaseg.options import EARLIEST, IGNORED_OPTIONS, LATEST, OPTION_NAMES, OffsetLimit, ReadOptions
from kafkaseg.planning import (RACY_MS, AvailableRange, Listing, LogEndCache, PlanReport, ScanPlan, available_range,
                               copies_not_chosen, list_partitions, lost_copy_reached_by_time, moved_meanwhile,
                               offset_for_timestamp, plan_scan, resolve_offsets, select_partitions, slice_order)
from kafkaseg.storage import fs as _fs
from kafkaseg.storage.checkpoints import EpochEntry, mark_divergence
from kafkaseg.storage.layout import ChoiceLogEnds, PartitionDir

if TYPE_CHECKING:
    from kafkaseg.scan import ScanMetrics

__all__ = ["Offsets", "TOPIC_IDS", "LEADER_EPOCHS", "HIGH_WATERMARKS", "LAST_BATCH_CRCS", "READ_FROM",
           "MicroBatchPlanner",
           "MicroBatchPlan", "rate_limit", "to_offsets", "from_offsets", "topic_ids_of", "leader_epochs_of",
           "high_watermarks_of", "read_from_of", "divergence", "poll_micro_batches", "follow", "stopped_at"]

log = logging.getLogger("kafkaseg.streaming")

#: Spark's Kafka source offset JSON, ``{"topic": {"partition": next offset}}``, plus the topic ids the offsets
#: were taken from under :data:`TOPIC_IDS`.
Offsets = dict[str, dict[str, int]]
#: The key of the topic ids in :data:`Offsets`: ``{"t": {"0": 5}, "@topicIds": {"t": "<base64 uuid>"}}``. ``@``
#: cannot appear in a Kafka topic name (``[a-zA-Z0-9._-]``), so no topic is taken for it (keys starting with it
#: are never topics).
TOPIC_IDS = "@topicIds"
#: The key of the leader epochs in :data:`Offsets`: ``{"t": {"0": 5}, "@leaderEpochs": {"t": {"0": [3, 5]}}}``,
#: per partition an :data:`EpochMark`: the leader epoch stamped on the last batch below the position and the
#: offset that batch ends at (KIP-320: a consumer's position with the epoch of the last batch it fetched), which
#: tells a log truncated and written again below the position from one that was not.
LEADER_EPOCHS = "@leaderEpochs"
#: The key of the high watermarks in :data:`Offsets`: ``{"t": {"0": 200}, "@highWatermarks": {"t": {"0": 100}}}``,
#: per partition whose position a micro-batch's end fixed past its checkpointed high watermark
#: (``upperBound=logEndOffset``; not a start given above it, which no read put there), that high watermark: the
#: records the stream read from there up to the position were not acknowledged yet, so a log truncated and written again at or above it (a follower truncation
#: past the high watermark, while the micro-batch that ends there read) is no data loss: the next micro-batch reads
#: the partition again from where it diverged (:data:`READ_FROM`).
HIGH_WATERMARKS = "@highWatermarks"
#: The key of the CRCs in :data:`Offsets`: ``{"t": {"0": 200}, "@lastBatchCrcs": {"t": {"0": 3735928559}}}``, for a
#: partition with a :data:`HIGH_WATERMARKS` entry, the CRC of the last batch below its position: a rewrite past the
#: high watermark that no leader epoch shows (v0/v1 batches, no ``leader-epoch-checkpoint``) changes that batch, and
#: the next micro-batch reads the partition again from the recorded high watermark (:data:`READ_FROM`), below which
#: no follower truncation reaches.
LAST_BATCH_CRCS = "@lastBatchCrcs"
#: The key of a micro-batch's replay points in its end :data:`Offsets`: ``{"t": {"0": 220}, "@readFrom": {"t":
#: {"0": 150}}}``: the micro-batch ending there reads the partition from that offset, below its start, where the log
#: diverged past the high watermark recorded with its start (:data:`HIGH_WATERMARKS`). Fixed by ``latestOffset``
#: and kept in Spark's offset log, so that a replay of the micro-batch plans the same ranges; it applies to that
#: micro-batch only (one starting at such an end ignores it).
READ_FROM = "@readFrom"
#: ``(epoch, next offset)``: the last batch below a position was written under leader ``epoch`` and ends just
#: below ``next offset`` (the position, or less where no batch holds the offsets before it: a compacted gap).
EpochMark = tuple[int, int]
TopicPartition = tuple[str, int]

_FAIL_HINT = "(set failOnDataLoss=false to skip it and go on)"


def from_offsets(offsets: Mapping[str, Mapping[str, int]] | None) -> dict[TopicPartition, int]:
    """``{"t": {"0": 5}}`` -> ``{("t", 0): 5}`` (the topic ids and leader epochs under keys starting with ``@``
    are left out: see :func:`topic_ids_of`, :func:`leader_epochs_of`); raises :class:`InvalidOptionError` on
    anything else (an offset log written by another source)."""
    out: dict[TopicPartition, int] = {}
    for topic, partitions in (offsets or {}).items():
        if str(topic).startswith("@"):
            continue
        if not isinstance(partitions, Mapping):
            raise InvalidOptionError(f"not a kafkaseg/Kafka source offset: {offsets!r}")
        for partition, offset in partitions.items():
            try:
                out[(str(topic), int(partition))] = int(offset)
            except (TypeError, ValueError) as err:
                raise InvalidOptionError(f"not a kafkaseg/Kafka source offset: {offsets!r}") from err
    return out


def topic_ids_of(offsets: Mapping | None) -> dict[TopicPartition, str]:
    """The topic id each partition's offset in ``offsets`` was taken from (:data:`TOPIC_IDS`; a topic's id given
    once stands for all its partitions there). Partitions whose topic had no id (brokers before 2.8, offsets written
    before kafkaseg recorded them) are left out."""
    ids = (offsets or {}).get(TOPIC_IDS) or {}
    if not isinstance(ids, Mapping):
        raise InvalidOptionError(f"not a kafkaseg source offset ({TOPIC_IDS} is not an object): {offsets!r}")
    out: dict[TopicPartition, str] = {}
    for tp in from_offsets(offsets):
        given = ids.get(tp[0])
        if isinstance(given, Mapping):
            given = given.get(str(tp[1]))
        if given is not None:
            if not isinstance(given, str):
                raise InvalidOptionError(f"not a kafkaseg source offset (a topic id is not a string): {offsets!r}")
            out[tp] = given
    return out


def leader_epochs_of(offsets: Mapping | None) -> dict[TopicPartition, EpochMark]:
    """The :data:`EpochMark` of each partition's position in ``offsets`` (:data:`LEADER_EPOCHS`), for the
    partitions that have one (a v2 batch below the position)."""
    marks = (offsets or {}).get(LEADER_EPOCHS) or {}
    out: dict[TopicPartition, EpochMark] = {}
    try:
        for topic, partitions in marks.items():
            for partition, mark in partitions.items():
                epoch, ends = mark
                if any(isinstance(v, bool) or not isinstance(v, int) for v in (epoch, ends)):
                    raise TypeError(mark)
                out[(str(topic), int(partition))] = (epoch, ends)
    except (AttributeError, TypeError, ValueError) as err:
        raise InvalidOptionError(f"not a kafkaseg source offset ({LEADER_EPOCHS} is not "
                                 f"{{topic: {{partition: [epoch, next offset]}}}}): {offsets!r}") from err
    positions = from_offsets(offsets)
    return {tp: mark for tp, mark in out.items() if tp in positions}


def _offsets_by_partition(offsets: Mapping | None, key: str) -> dict[TopicPartition, int]:
    """The ``{topic: {partition: offset}}`` under ``key`` in ``offsets``, for the partitions ``offsets`` positions."""
    given = (offsets or {}).get(key) or {}
    out: dict[TopicPartition, int] = {}
    try:
        for topic, partitions in given.items():
            positions = offsets.get(topic)
            for partition, offset in partitions.items():
                if isinstance(offset, bool) or not isinstance(offset, int):
                    raise TypeError(offset)
                if isinstance(positions, Mapping) and str(partition) in positions:
                    out[(str(topic), int(partition))] = offset
    except (AttributeError, TypeError, ValueError) as err:
        raise InvalidOptionError(f"not a kafkaseg source offset ({key} is not {{topic: {{partition: offset}}}}): "
                                 f"{offsets!r}") from err
    return out


def high_watermarks_of(offsets: Mapping | None) -> dict[TopicPartition, int]:
    """The high watermark recorded with each partition's position in ``offsets`` (:data:`HIGH_WATERMARKS`): those
    past theirs when fixed."""
    return _offsets_by_partition(offsets, HIGH_WATERMARKS)


def last_batch_crcs_of(offsets: Mapping | None) -> dict[TopicPartition, int]:
    """The CRC of the last batch below each partition's position in ``offsets`` (:data:`LAST_BATCH_CRCS`)."""
    return _offsets_by_partition(offsets, LAST_BATCH_CRCS)


def read_from_of(offsets: Mapping | None) -> dict[TopicPartition, int]:
    """Where the micro-batch ending at ``offsets`` reads each partition listed under :data:`READ_FROM` from."""
    return _offsets_by_partition(offsets, READ_FROM)


def to_offsets(positions: Mapping[TopicPartition, int],
               topic_ids: Mapping[TopicPartition, str | None] | None = None,
               leader_epochs: Mapping[TopicPartition, EpochMark | None] | None = None,
               high_watermarks: Mapping[TopicPartition, int | None] | None = None,
               read_from: Mapping[TopicPartition, int] | None = None,
               last_batch_crcs: Mapping[TopicPartition, int | None] | None = None) -> Offsets:
    """``{("t", 0): 5}`` -> ``{"t": {"0": 5}}``, topics and partitions in order (stable JSON for Spark); with
    ``topic_ids``, the ids the offsets were taken from under :data:`TOPIC_IDS`: ``{"t": "<id>"}`` when every
    partition of the topic has the same id, else ``{"t": {"0": "<id>"}}`` for those that have one (a topic seen
    in the middle of its deletion and re-creation); with ``leader_epochs``, each partition's :data:`EpochMark`
    under :data:`LEADER_EPOCHS` (those that have one); with ``high_watermarks`` and ``read_from``, those under
    :data:`HIGH_WATERMARKS` and :data:`READ_FROM` (and ``last_batch_crcs`` under :data:`LAST_BATCH_CRCS`)."""
    out: Offsets = {}
    for (topic, partition), offset in sorted(positions.items()):
        out.setdefault(topic, {})[str(partition)] = int(offset)
    ids: dict[str, object] = {}
    for topic, partitions in out.items():
        known = {p: topic_ids.get((topic, int(p))) for p in partitions} if topic_ids else {}
        distinct = set(known.values())
        if len(distinct) == 1 and None not in distinct:
            ids[topic] = distinct.pop()
        elif distinct - {None}:
            ids[topic] = {p: known_id for p, known_id in known.items() if known_id is not None}
    if ids:
        out[TOPIC_IDS] = ids  # type: ignore[assignment]
    epochs: dict[str, dict[str, list[int]]] = {}
    for (topic, partition), mark in sorted((leader_epochs or {}).items()):
        if mark is not None and (topic, partition) in positions:
            epochs.setdefault(topic, {})[str(partition)] = [int(mark[0]), int(mark[1])]
    if epochs:
        out[LEADER_EPOCHS] = epochs
    for key, given in ((HIGH_WATERMARKS, high_watermarks), (LAST_BATCH_CRCS, last_batch_crcs),
                       (READ_FROM, read_from)):
        by_topic: dict[str, dict[str, int]] = {}
        for (topic, partition), offset in sorted((given or {}).items()):
            if offset is not None and (topic, partition) in positions:
                by_topic.setdefault(topic, {})[str(partition)] = int(offset)
        if by_topic:
            out[key] = by_topic  # type: ignore[assignment]
    return out


def _below_lost_copies(pdir: PartitionDir, earliest: int) -> int:
    """Where a stream from earliest starts (and a partition found after the stream started, or its topic
    recreated): ``earliest`` (the files'), or the first offset of the live tiered copies __remote_log_metadata lists
    that are missing below it (the broker's earliest is below them), so that the first micro-batch reading it says
    their loss as a batch read from earliest does."""
    return min([earliest] + [first for _, first, _ in pdir.live_copies_lost])


def divergence(entries: Sequence[EpochEntry], mark: EpochMark | None) -> tuple[int | None, str] | None:
    """Whether a log whose ``leader-epoch-checkpoint`` holds ``entries`` diverged from the log a reader read,
    whose last batch was written under leader epoch ``mark[0]`` and ends below ``mark[1]``: Kafka's consumer
    validation of its position after a leader change (KIP-320, ``SubscriptionState.maybeCompleteValidation``, with
    ``LeaderEpochFileCache.endOffsetFor``). None when it did not, or when nothing tells: no mark, no entries, or the
    mark's epoch is the log's latest (that epoch ends at the log end, and the rules for a log that went back judge
    the end). Else ``(offset, reason)``: where the log diverged (its records from there up to ``mark[1]`` were
    truncated and replaced), None when the log does not know the epoch
    (:func:`~kafkaseg.storage.checkpoints.mark_divergence`)."""
    # the latest epoch is taken to end at the mark's end: not judged here
    found = mark_divergence(entries, mark, mark[1] if mark is not None else 0)
    if found is None:
        return None
    epoch, ends = mark
    if found.offset is None:
        return None, (f"leader epoch {epoch} of the last batch the stream read (ending at offset {ends - 1}) is "
                      "above every epoch in the log's leader-epoch-checkpoint (a log older than the stream's "
                      "position, or written again)")
    end = found.offset
    return end, (f"leader epoch {epoch} of the last batch the stream read (ending at offset {ends - 1}) ends at "
                 f"offset {end} in the log's leader-epoch-checkpoint now: the log was truncated at {end} and written "
                 "again (an unclean leader election, a replica restored from an older copy, or records above the "
                 "high watermark dropped by a leader change)")


def rate_limit(limit: int, start: Mapping[TopicPartition, int], latest: Mapping[TopicPartition, int],
               earliest: Mapping[TopicPartition, int]) -> dict[TopicPartition, int]:
    """Spark's ``KafkaMicroBatchStream.rateLimit``: the end offsets of a micro-batch of at most about ``limit``
    offsets, spread over the partitions in proportion to what each has pending (``latest - start``; partitions
    new since ``start`` count from ``earliest``). A partition's share below 1 is rounded up (none is starved),
    others down; no end passes ``latest``."""
    sizes: dict[TopicPartition, int] = {}
    for tp, end in latest.items():
        begin = start.get(tp, earliest.get(tp))
        if begin is not None and end - begin > 0:
            sizes[tp] = end - begin
    total = float(sum(sizes.values()))
    if total < 1:
        return dict(latest)
    out: dict[TopicPartition, int] = {}
    for tp, end in latest.items():
        if tp not in sizes:
            out[tp] = end
            continue
        begin = start[tp] if tp in start else earliest[tp]
        prorate = limit * (sizes[tp] / total)
        share = math.ceil(prorate) if prorate < 1 else math.floor(prorate)
        out[tp] = min(end, begin + share)
    return out


@dataclass(frozen=True)
class _Position:
    """A stream's :data:`Offsets` parsed once (a trigger asks them of every partition): the positions, the topic ids
    they were taken from and their :data:`EpochMark` s."""

    positions: dict[TopicPartition, int]
    topic_ids: dict[TopicPartition, str]
    marks: dict[TopicPartition, EpochMark]

    @classmethod
    def of(cls, offsets: Offsets | None) -> _Position:
        return cls(from_offsets(offsets), topic_ids_of(offsets), leader_epochs_of(offsets))


@dataclass
class MicroBatchPlan:
    """What one micro-batch reads: the :class:`~kafkaseg.planning.ScanPlan` of its offset ranges (None when there
    is nothing to read), the ``[start, end)`` per partition, and the data loss skipped under
    ``failOnDataLoss=false`` (the planner's included) or notes (e.g. a replayed first batch)."""

    scan: ScanPlan | None
    ranges: dict[TopicPartition, tuple[int, int]] = field(default_factory=dict)
    data_loss: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    #: the partitions whose offsets past the log end this plan says lost (high watermark and recovery point above
    #: it): the batch reads to the log end, or the stream stands there (:attr:`MicroBatchPlanner.standing_loss`)
    lost_past_end: dict[TopicPartition, str] = field(default_factory=dict)
    #: filled by the reader: partitions whose read stopped short of ``ranges``' end, and the first offset it did
    #: not return (a slice ended where a truncation past the high watermark rewrote the log: :func:`stopped_at`).
    #: :func:`poll_micro_batches` starts their next batch there, not at the plan's end, so the new generation's
    #: offsets between there and the plan's end are read, not skipped
    read_to: dict[TopicPartition, int] = field(default_factory=dict)
    #: partitions this micro-batch reads again from below its start, where the log was truncated and written again
    #: past the high watermark recorded with the start (:data:`READ_FROM`), in words: no data loss, but offsets an
    #: earlier micro-batch returned there may come again, as the new generation wrote them (a warning)
    read_again: list[str] = field(default_factory=list)


def stopped_at(piece, last_offset: int | None) -> int:
    """The first offset a read of ``piece`` (a slice that ended at a rewritten tail: ``ScanMetrics.
    rewritten_tails``) did not return: after ``last_offset``, the last it returned, else the slice's first offset.
    At or below where the read really stopped (batches after the last record returned that hold none, control
    batches or aborted ones, are read again), never above it."""
    if last_offset is not None:
        return last_offset + 1
    return piece.slice_offsets[0] if piece.slice_offsets is not None else piece.start_offset


class MicroBatchPlanner:
    """The state and decisions of one streaming query's source (see the module docstring). ``clock`` returns
    milliseconds (tests pass their own)."""

    def __init__(self, options: ReadOptions, clock: Callable[[], float] | None = None):
        if options.replicas == "all":
            raise InvalidOptionError("option 'replicas' can't be 'all' for a streaming read")
        self.options = options
        self.clock = clock or (lambda: time.time() * 1000.0)
        self.last_trigger_ms = 0.0
        self.available_now: dict[TopicPartition, int] | None = None
        # AvailableNow targets waiting for the stream's position (see prepare_available_now): partition -> its
        # folder as listed then, and the error its range raised without the position
        self._targets_pending: dict[TopicPartition, tuple[PartitionDir, SkippedOffsetsError]] = {}
        self.latest: dict[TopicPartition, int] | None = None  # the last latest offsets seen (progress reports)
        self.latest_topic_ids: dict[TopicPartition, str | None] = {}  # the topic ids they were taken from
        self._pdirs: dict[TopicPartition, PartitionDir] = {}  # the partitions the last available() found
        # (partition folder, segments, position) -> its mark and last batch's CRC (see _tail)
        self._marks: dict[tuple, tuple[EpochMark | None, int | None]] = {}
        # per partition, what _rewritten_unmarked last checked: (its range, the position, the CRC recorded)
        self._tails_checked: dict[TopicPartition, tuple[AvailableRange, int, int]] = {}
        # (partition, a micro-batch's end, its mark) -> where the batch stopped, cut at a divergence below that end
        # (see plan())
        self._stopped_at_divergence: dict[tuple[TopicPartition, int, EpochMark], int] = {}
        self._initial: Offsets | None = None
        self._initial_positions: dict[TopicPartition, int] | None = None  # self._initial parsed (from_offsets)
        self._seen: dict[TopicPartition, AvailableRange] = {}  # each partition's range at the previous trigger
        self._waiting: set[TopicPartition] = set()  # partitions whose latest is excused below the position
        self._ranges: dict[tuple, tuple[AvailableRange, bool]] = {}  # by what it depends on (see available)
        self._ranges_listing: Listing | None = None  # the listing self._ranges were taken on
        # the log ends the ranges computed on that listing found, for the plan of a micro-batch on it (see plan())
        self._log_ends = LogEndCache()
        # the log ends the replica choices read (a copy must reach the stream's position), kept while its files
        # stay as they were: an idle trigger's choice, and a micro-batch's plan on the listing its end was fixed
        # on, read none again
        self._choice_log_ends = ChoiceLogEnds(RACY_MS)
        #: The discovery of the paths (:func:`~kafkaseg.planning.list_partitions`) that the last call of this
        #: planner made or was given: a caller that goes on at once (the first trigger after
        #: :meth:`initial_offsets`, the plan of the end :meth:`latest_offsets` just fixed) passes it as ``listing``
        #: instead of listing every partition folder again (see :func:`poll_micro_batches`).
        self.last_listing: Listing | None = None
        #: What the last :meth:`latest_offsets` found lost past the log end of a partition the stream stands at
        #: (``failOnDataLoss=false``; true raises it): ``(partition, words)``, each said once (see there).
        self.standing_loss: list[tuple[TopicPartition, str]] = []
        # the offsets lost past a log end said so far (by a micro-batch that reached it, or standing there): not said
        # again while they are the same (a high watermark checkpointed higher over the same files loses no other)
        self._said_past_end: set[tuple[TopicPartition, tuple[int, int] | None]] = set()
        # per (partition, topic id), the offsets below the log start that micro-batches said lost, merged: not said
        # again by a rate-limited stream creeping through them (see _unsaid_below_start)
        self._said_below_start: dict[tuple[TopicPartition, str | None], list[tuple[int, int]]] = {}
        # what resolving the start found worth saying once, with no plan report to say it in: a startingTimestamp
        # search answered from another copy, the chosen one corrupt there (see take_start_notes)
        self._start_notes: list[str] = []

    # -- discovery ---------------------------------------------------------------------------------------------------
    def _partitions(self, listing: Listing | None = None, start: _Position | None = None) -> list[PartitionDir]:
        """The selected partitions now, or in ``listing`` (a partition ``assign`` names whose folder went away is
        left out: the stream reports it gone), the replica of each chosen with the stream's position ``start`` as
        evidence (:meth:`_evidence`)."""
        if listing is None:
            listing = list_partitions(None, self.options)
        self.last_listing = listing
        topics_only = self.options.replace(starting=OffsetLimit("earliest", option="startingOffsets"),
                                           ending=OffsetLimit("latest", option="endingOffsets"))
        return select_partitions(None, topics_only, check_listed=False, listing=listing,
                                 read_to=self._evidence(start), reach=self._reach(start),
                                 choice_log_ends=self._choice_log_ends)

    def available(self, listing: Listing | None = None, start: Offsets | None = None,
                  skipped: dict | None = None) -> dict[TopicPartition, AvailableRange]:
        """The :class:`~kafkaseg.planning.AvailableRange` of every selected partition now, or in ``listing`` (a
        discovery just made: :attr:`last_listing`). A partition whose folder disappears while it is being looked at
        (a topic being deleted) is left out, as a gone one. ``start``: the stream's position, which vouches for a
        last batch past a compaction gap that it read (:meth:`_read_to`).

        A partition whose checkpoints and segment files (names, and the last one's size and mtime) are as at the
        previous trigger gets its previous range: its log end and last stable offset come from those files, and
        recomputing them (reading the last segment's tail) for every idle partition at every trigger was most of a
        trigger's cost. On the listing the previous ranges were taken on, every one is reused.

        ``skipped``: a partition whose range raises :class:`~kafkaseg.errors.SkippedOffsetsError` is left out and
        put there (``{partition: (its PartitionDir, the error)}``) instead of raising."""
        out: dict[TopicPartition, AvailableRange] = {}
        ranges: dict[tuple, tuple[AvailableRange, bool]] = {}
        now_ms = time.time() * 1000
        same_listing = listing is not None and listing is self._ranges_listing
        if not same_listing:
            self._log_ends = LogEndCache()
        self._pdirs = {}
        position = _Position.of(start)
        for pdir in self._partitions(listing, position):
            try:
                try:
                    found = self._range(pdir, now_ms, ranges, same_listing, self._read_to(pdir, position))
                except LayoutError:
                    if _fs.exists(pdir.path, pdir.filesystem):
                        raise
                    # a partition moved to another log dir meanwhile (its folder renamed -delete) is there, not
                    # gone: left out, the next trigger would take it for a new partition, read from its start again
                    moved = moved_meanwhile(pdir, (listing or self.last_listing or Listing((), ())).log_dirs,
                                            self.options)
                    if moved is None:
                        continue
                    pdir = moved
                    found = self._range(pdir, now_ms, ranges, False, self._read_to(pdir, position))
            except SkippedOffsetsError as exc:
                if skipped is None:
                    raise
                skipped[(pdir.topic, pdir.partition)] = (pdir, exc)
                continue
            out[(pdir.topic, pdir.partition)] = found
            self._pdirs[(pdir.topic, pdir.partition)] = pdir
        self._ranges, self._ranges_listing = ranges, self.last_listing
        return out

    def _range(self, pdir: PartitionDir, now_ms: float, ranges: dict[tuple, tuple[AvailableRange, bool]],
               same_listing: bool, read_to: int | None = None) -> AvailableRange:
        """``pdir``'s range: the previous one when its files are as they were then (see :meth:`available`), else
        computed now; recorded in ``ranges``, the next call's cache. ``same_listing``: ``pdir`` is of the listing
        the previous ranges were taken on, so its files are those the previous range was taken of. ``read_to``:
        :meth:`_read_to`'s evidence."""
        last = pdir.segments[-1] if pdir.segments else None
        key = (pdir.path, pdir.high_watermark, pdir.recovery_point, pdir.checkpoint_log_start_offset,
               pdir.cleaner_offset, pdir.topic_id, pdir.leader_epochs, tuple(s.base_offset for s in pdir.segments),
               (last.log_size, last.mtime_ms) if last is not None else None, read_to)
        cached = self._ranges.get(key)
        if cached is not None and (cached[1] or same_listing):
            # a reused range keeps its own judgement: one computed while the file was recent stays so, however long
            # ago that was (found in review)
            ranges[key] = cached
            return cached[0]
        found = available_range(pdir, self.options, log_ends=self._log_ends, read_to=read_to,
                                choice_log_ends=self._choice_log_ends)
        # reusable by a later listing only when the last segment had not changed for a while when it was read
        # (git's "racy clean" rule): an append within the mtime's granularity (milliseconds here, seconds on S3; a
        # preallocated active segment keeps its size) would otherwise go unseen
        ranges[key] = (found, last is None or last.mtime_ms < now_ms - RACY_MS)
        return found

    def _read_to(self, pdir: PartitionDir, start: _Position | None) -> int | None:
        """The stream's position in ``start`` for ``pdir``'s partition as evidence that the log reached it
        (:meth:`~kafkaseg.storage.layout.PartitionDir.reached_end`): the stream read the log there, below a high
        watermark at or past it, so a last batch it read past a compaction gap is the broker's, not a corrupt base
        offset, after a leader change moved the high watermark back into the gap. Not when the position cannot be
        the log's now: its topic was recreated or the log diverged below it (the leader epoch recorded with it), nor
        for a start given in ``startingOffsets`` (no read put the stream there). Only above the high watermark,
        where it can count (a last batch starting above it): so the ranges and log ends cached stay shared.
        ``start`` is parsed once per trigger (:meth:`_Position.of`): parsing the offsets for each partition made a
        trigger quadratic in the partitions."""
        position = start.positions.get((pdir.topic, pdir.partition)) if start is not None else None
        if position is None or pdir.high_watermark is None or position <= pdir.high_watermark:
            return None
        return self._reading(pdir, start)

    def _reading(self, pdir: PartitionDir, start: _Position | None) -> int | None:
        """The stream's position in ``start`` for ``pdir``'s partition when it is a position in this log: not when
        its topic was recreated or the log diverged below it, nor for a start given in ``startingOffsets``
        (:meth:`_read_to`'s rule, whatever the copy's high watermark)."""
        tp = (pdir.topic, pdir.partition)
        position = start.positions.get(tp) if start is not None else None
        if position is None:
            return None
        started_on = start.topic_ids.get(tp)
        if started_on is not None and pdir.topic_id is not None and started_on != pdir.topic_id:
            return None
        found = divergence(pdir.leader_epochs, start.marks.get(tp))
        if found is not None and (found[0] is None or found[0] < position):
            return None
        if (self.options.starting.kind == "offsets" and self._initial_positions is not None
                and self._initial_positions.get(tp) == position):
            return None
        return position

    def _evidence(self, start: _Position | None) -> Callable[[PartitionDir], int | None] | None:
        """:meth:`_read_to` for any copy of a partition, for the replica choice and the plan (``read_to`` of
        :func:`~kafkaseg.planning.plan_scan`): a tie of high watermarks is broken by the log ends, and a compacted
        follower's that the stream read past a gap is its log end only with that evidence, else the copy loses to
        one whose log ends below the stream's position (a log that went back: data loss, or offsets read again);
        and a copy whose log ends below the position is passed over for one that reaches it, whatever its high
        watermark."""
        if start is None or not start.positions:
            return None
        return lambda pdir: self._read_to(pdir, start)

    def _reach(self, start: _Position | None) -> Callable[[PartitionDir], int | None] | None:
        """:meth:`_reading` for any copy of a partition: the position the copy chosen must reach
        (:func:`~kafkaseg.storage.layout.choose_replicas`' ``reach``), also where its high watermark is at or past
        it (a crash's unflushed tail under a checkpointed high watermark leaves its files ending below it)."""
        if start is None or not start.positions:
            return None
        return lambda pdir: self._reading(pdir, start)

    # -- Spark's calls -------------------------------------------------------------------------------------------------
    def initial_offsets(self) -> Offsets:
        """Where a new query starts (``startingOffsets`` and friends, resolved against the files at the first
        call; Spark asks more than once, and a moving ``latest`` must give it one answer)."""
        if self._initial is None:
            self._initial = self._resolve_initial()
            self._initial_positions = from_offsets(self._initial)
        return {topic: dict(partitions) for topic, partitions in self._initial.items()}

    def take_start_notes(self) -> list[str]:
        """What resolving the start (:meth:`initial_offsets`) found worth a warning, each line returned once: a
        ``startingTimestamp`` (or ``startingOffsetsByTimestamp``) search that met a corrupt batch in the chosen copy
        and was answered from another copy of the partition (``<partition>: the search for timestamp T: <file> is
        corrupt at byte N (...): offsets A..B read from the copy in <folder> instead``, a batch read's plan note), and
        ``subscribe`` topics with no partition on disk, which the stream waits for (a batch read's error, with its
        did-you-mean hint).
        A batch read says it among its plan report's notes; a stream has none, so its caller says it where it says
        a stream's warnings (:func:`follow`'s logger, the Spark reader's log)."""
        notes, self._start_notes = self._start_notes, []
        return notes

    def _resolve_initial(self) -> Offsets:
        limit = self.options.starting
        positions: dict[TopicPartition, int] = {}
        ranges: dict[TopicPartition, AvailableRange] = {}
        listing = self.last_listing = list_partitions(None, self.options)
        # checks that partitions named in a JSON are on disk; a subscribed topic not there yet is waited for
        chose = PlanReport()
        pdirs = select_partitions(None, self.options, chose, check_subscribed=False, listing=listing)
        # each partition's copies the replica choice passed over, in the order given: a start by timestamp whose
        # search meets damage in the chosen copy answers from one of them, as a batch read's planning does
        passed_over = copies_not_chosen(listing, chose)
        notes: list[str] = []  # what those searches say of the copy answering (take_start_notes)
        if self.options.subscribe is not None:  # waited for, as Spark's consumer waits; a misspelt name is said
            on_disk = {p.topic for p in listing.partitions} | {topic for topic, _, _ in listing.unselected}
            absent = [f"{t!r}{did_you_mean(t, on_disk)}" for t in self.options.subscribe if t not in on_disk]
            if absent:
                notes.append(f"option 'subscribe' names topics with no partition on disk under the given paths: "
                             f"{', '.join(absent)}; the stream waits for them (a batch read refuses them)")
        now_ms = time.time() * 1000
        cache: dict[tuple, tuple[AvailableRange, bool]] = {}  # for the triggers after (see available)
        self._log_ends = LogEndCache()
        for pdir in pdirs:
            tp = (pdir.topic, pdir.partition)
            available = self._range(pdir, now_ms, cache, False)
            earliest, latest = available.earliest, available.latest
            self._seen[tp] = available
            ranges[tp] = available
            if limit.kind == "earliest":
                positions[tp] = _below_lost_copies(pdir, earliest)
            elif limit.kind == "latest":
                positions[tp] = latest
            elif limit.kind == "offsets":
                value = limit.lookup(*tp)
                positions[tp] = (latest if value == LATEST else _below_lost_copies(pdir, earliest)
                                 if value is None or value == EARLIEST else value)
            else:  # timestamp(s): the planner's resolution (strategy, no match)
                # only the start: offsets lost in the range to latest (a tiered-storage copy missing) are the loss
                # of the micro-batch that reaches them, as for a start by offset (a batch read says them for its
                # range the same way)
                ending = OffsetLimit("latest", option="endingOffsets")
                positions[tp] = resolve_offsets(pdir, self.options.replace(ending=ending, fail_on_data_loss=False),
                                                other_copies=passed_over.get(tp, ()), notes=notes)[0]
                # the broker's answer in a live tiered copy missing from the bucket: the stream starts at that
                # copy's first offset, so that its first micro-batch says the loss (the resolution above moved
                # past it, not saying so), as a start given there does
                ts = limit.timestamp if limit.kind == "timestamp" else limit.lookup(*tp)
                if ts is not None and pdir.live_copies_lost:
                    # the same search again, so with the same copies to fall back to (the switch was said above)
                    searched: list[str] = []
                    found = offset_for_timestamp(pdir, ts, self.options, other_copies=passed_over.get(tp, ()),
                                                 notes=searched)
                    notes.extend(line for line in searched if line not in notes)
                    lost = lost_copy_reached_by_time(pdir, ts, found)
                    if lost is not None:
                        positions[tp] = lost[1]
            if latest < positions[tp] <= available.log_end:
                # a start above the high watermark (or last stable offset) the files reach: a consumer's fetch there
                # is empty until the high watermark gets there, not data loss
                self._waiting.add(tp)
            elif positions[tp] > available.log_end and self.options.fail_on_data_loss:
                # Spark's first micro-batch reports it ("offset was changed from ... to ..."); said here, where the
                # option is known, instead of as a log that went back (with false the first batch logs it and the
                # stream goes on from the log end)
                raise DataLossError(f"option '{limit.option or 'startingOffsets'}' starts {tp[0]}-{tp[1]} at offset "
                                    f"{positions[tp]}, past its log end {available.log_end} in {pdir.path}: offsets "
                                    f"[{available.log_end}, {positions[tp]}) are not there {_FAIL_HINT}")
        self._pdirs = {(p.topic, p.partition): p for p in pdirs}
        self._ranges, self._ranges_listing = cache, listing
        self._start_notes = notes
        return self._with_incarnations(positions, ranges)

    def prepare_available_now(self) -> None:
        """``Trigger.AvailableNow``: fix the target at the latest offsets of this moment. Spark calls this before
        ``initialOffset``: a partition whose start is resolved later, above the target, has nothing to read (see
        :meth:`latest_offsets`).

        A partition whose range needs the stream's position as evidence (a last batch past a compaction gap above a
        high watermark that went back: :meth:`_read_to`) cannot have it here: Spark calls this first on a restart,
        before anything tells the reader the checkpoint's position (its first call with it is ``latestOffset``).
        Its target is then taken at the first :meth:`latest_offsets`, from the partition's files as listed here
        (the high watermark of this moment), with that call's position as the evidence; without it (no position
        past the batch), the error is raised there."""
        pending: dict[TopicPartition, tuple[PartitionDir, SkippedOffsetsError]] = {}
        self.available_now = {tp: available.latest for tp, available in self.available(skipped=pending).items()}
        self._targets_pending = pending

    def _take_pending_targets(self, start: Offsets) -> None:
        """The AvailableNow targets :meth:`prepare_available_now` left for the stream's position (``start``)."""
        pending, self._targets_pending = self._targets_pending, {}
        position = _Position.of(start)
        for tp, (pdir, error) in sorted(pending.items()):
            read_to = self._read_to(pdir, position)
            if read_to is None:
                raise error
            self.available_now[tp] = available_range(pdir, self.options, read_to=read_to).latest

    def _latest(self, start: Mapping[TopicPartition, int], ranges: Mapping[TopicPartition, AvailableRange],
                epochs: Mapping[TopicPartition, EpochMark]) -> dict[TopicPartition, int]:
        """Each partition's latest offset. A latest below the stream's position is a log that went back (Spark's
        rule: the micro-batch reports data loss), except where this source knows why and the files still reach
        the position: the replica read changed since the previous trigger (the copy ahead went away and another
        with a lagging checkpointed high watermark is read), the previous trigger read the partition to its log
        end because the broker had not checkpointed its high watermark yet, or the leader epoch recorded with the
        position (``epochs``) shows that the log was not truncated below it, also after a restart. Then the
        position is kept (no new data) until the latest reaches it again."""
        latest: dict[TopicPartition, int] = {}
        for tp, available in ranges.items():
            position = start.get(tp)
            previous = self._seen.get(tp)
            latest[tp] = available.latest
            if position is not None and available.latest < position <= available.log_end:
                if tp in self._waiting or (previous is not None and (previous.replica != available.replica
                                                                     or not previous.checkpointed)) or (
                        tp in epochs and available.leader_epochs
                        and divergence(available.leader_epochs, epochs[tp]) is None):
                    latest[tp] = position
                    self._waiting.add(tp)
            else:
                self._waiting.discard(tp)
            self._seen[tp] = available
        return latest

    def latest_offsets(self, start: Offsets, *, max_offsets: int | None = None, min_offsets: int | None = None,
                       all_available: bool = False, listing: Listing | None = None) -> Offsets:
        """The end of the next micro-batch from ``start``: everything available (``all_available``, Spark's
        ``ReadAllAvailable``), else at most ``max_offsets`` (rate limit) and nothing (``start`` itself) while
        fewer than ``min_offsets`` are pending and ``maxTriggerDelay`` has not passed (never under
        ``Trigger.AvailableNow``, which must end). The files are listed again, unless ``listing`` gives a listing
        just made (:attr:`last_listing`).

        A partition whose topic id differs from the one ``start`` was taken from (the topic was deleted and
        recreated) counts from the new topic's beginning, as a partition found after the start does; :meth:`plan`
        reports the data loss."""
        begin, epochs = from_offsets(start), leader_epochs_of(start)
        # (only a micro-batch ending at start read from there: a later one starts at start)
        recorded, read_from, diverged = high_watermarks_of(start), {}, set()
        # the files now: what tells a recreated topic or a diverged log, also under Trigger.AvailableNow, whose
        # targets stay those of its start
        ranges = self.available(listing, start)
        if self._targets_pending:
            self._take_pending_targets(start)
        for tp in _recreated(topic_ids_of(start), {tp: available.topic_id for tp, available in ranges.items()}):
            del begin[tp]
            epochs.pop(tp, None)
            if self.available_now is not None and tp in self.available_now:  # the target was the deleted topic's
                self.available_now[tp] = ranges[tp].latest
        for tp, position in list(begin.items()):
            found = divergence(ranges[tp].leader_epochs, epochs.get(tp)) if tp in ranges else None
            if found is not None and found[0] is not None and found[0] < position:
                stopped = self._stopped_at_divergence.get((tp, position, epochs.get(tp)))
                # counted from where the log diverged, which plan() reports, or from where the previous batch,
                # cut at that divergence, really stopped
                begin[tp] = min(found[0], stopped) if stopped is not None else found[0]
                diverged.add(tp)
                if tp in recorded and found[0] >= recorded[tp]:
                    # diverged past the high watermark recorded with the position (a follower truncation while
                    # the micro-batch that ends there read: its tasks may have stopped at the rewrite, and Spark
                    # committed the end all the same): the next micro-batch reads again from there, no data loss
                    read_from[tp] = begin[tp]
                # below it the records are the stream's: a new leader's high watermark still under it is no new
                # data (the stream waits there), not a log gone back to be read again
                self._waiting.add(tp)
                if self.available_now is not None and tp in self.available_now:  # the old log's target
                    self.available_now[tp] = min(self.available_now[tp], ranges[tp].latest)
        if recorded:
            self._rewritten_unmarked(start, begin, ranges, {tp: hw for tp, hw in recorded.items()
                                                            if tp not in diverged}, read_from)
        earliest = {tp: available.earliest for tp, available in ranges.items()}
        if self.available_now is not None:
            # a start resolved after the target was fixed may be above it: nothing to read there
            latest = {tp: max(target, begin.get(tp, target)) for tp, target in self.available_now.items()}
        else:
            latest = self._latest(begin, ranges, epochs)
        self.latest = latest
        self._say_standing_loss(begin, latest, ranges)
        end = latest
        if all_available:
            pass
        elif min_offsets is not None and self.available_now is None and self._delay(min_offsets, begin, latest):
            return start
        elif max_offsets is not None:
            end = rate_limit(max_offsets, begin, latest, earliest)
        offsets = self._with_incarnations(end, ranges, start, read_from)
        self.latest_topic_ids = topic_ids_of(offsets)
        if READ_FROM in start and offsets == {key: value for key, value in start.items() if key != READ_FROM}:
            return start  # nothing new since the micro-batch that read again: no micro-batch
        return offsets

    def _rewritten_unmarked(self, start: Offsets, begin: dict[TopicPartition, int],
                            ranges: Mapping[TopicPartition, AvailableRange], recorded: Mapping[TopicPartition, int],
                            read_from: dict[TopicPartition, int]) -> None:
        """A rewrite past the high watermark recorded with a position that no leader epoch shows: the last batch
        below the position is not the one recorded with it (:data:`LAST_BATCH_CRCS`) while the log still reaches
        the position. Where it was cut is not known, but not below that high watermark: the next micro-batch reads
        the partition again from there (``begin``, ``read_from``). Only partitions with a recorded high watermark
        (a stream past it) and no divergence the leader epochs show are looked at; an unchanged log's answer is
        cached (:meth:`_tail`)."""
        crcs = last_batch_crcs_of(start)
        for tp, hw in recorded.items():
            position, pdir, available = begin.get(tp), self._pdirs.get(tp), ranges.get(tp)
            if (tp not in crcs or position is None or pdir is None or available is None
                    or available.log_end < position or position <= hw):
                continue
            checked = self._tails_checked.get(tp)
            if checked is not None and checked[0] is available and checked[1:] == (position, crcs[tp]):
                continue  # (the same range object, reused: the partition's files are as at the last check)
            self._tails_checked[tp] = (available, position, crcs[tp])
            now = self._tail(pdir, position)[1]
            if now is not None and now != crcs[tp]:
                begin[tp] = read_from[tp] = hw
                self._waiting.add(tp)

    def _say_standing_loss(self, start: Mapping[TopicPartition, int], latest: Mapping[TopicPartition, int],
                           ranges: Mapping[TopicPartition, AvailableRange]) -> None:
        """The loss past the log end of each partition the stream stands at (its position is the log end, where its
        latest offset is, so no micro-batch reads to it: started at ``latest``, or read there before the high
        watermark and recovery point came to say offsets past it were acknowledged and flushed): what a batch read
        from there to latest raises (:attr:`~kafkaseg.planning.AvailableRange.lost_past_end`, planning's rule and
        words). Under ``failOnDataLoss`` a :class:`DataLossError` (Spark's ``latestOffset`` fails the query), else
        in :attr:`standing_loss`; each said once (a micro-batch that reached the end said it already: :meth:`plan`),
        so a stream standing there says it at the first trigger that finds it, not at every one, and again only when
        the offsets lost change (not for a high watermark checkpointed higher over the same files)."""
        self.standing_loss = []
        for tp, available in sorted(ranges.items()):
            position = start.get(tp)
            if (available.lost_past_end is None or position != available.log_end or latest.get(tp) != position
                    or (tp, available.lost_past_end_offsets) in self._said_past_end):
                continue
            if self.options.fail_on_data_loss:
                raise DataLossError(f"{available.lost_past_end} {_FAIL_HINT}")
            self._said_past_end.add((tp, available.lost_past_end_offsets))
            self.standing_loss.append((tp, available.lost_past_end))

    def _delay(self, min_offsets: int, start: Mapping[TopicPartition, int],
               latest: Mapping[TopicPartition, int]) -> bool:
        """Spark's ``delayBatch``: whether to skip this trigger for ``minOffsetsPerTrigger``."""
        now = self.clock()
        if now - self.last_trigger_ms >= self.options.max_trigger_delay_ms:
            self.last_trigger_ms = now
            return False
        pending = sum(end - start.get(tp, 0) for tp, end in latest.items())
        if pending < min_offsets:
            return True
        self.last_trigger_ms = now
        return False

    def plan(self, start: Offsets, end: Offsets, *, listing: Listing | None = None) -> MicroBatchPlan:
        """Plan the micro-batch ``[start, end)`` (Spark's ``planInputPartitions``; also a replay after a restart).
        Raises :class:`DataLossError` under ``failOnDataLoss`` for the cases in the module docstring. The files are
        listed again, unless ``listing`` gives a listing just made: the one ``end`` was fixed on
        (:attr:`last_listing` after :meth:`latest_offsets`), which a caller planning at once passes."""
        position = _Position.of(start)
        begin, until = dict(position.positions), from_offsets(end)
        started_on, ending_on = position.topic_ids, topic_ids_of(end)
        epochs, end_epochs = position.marks, leader_epochs_of(end)
        read_from, recorded, end_recorded = read_from_of(end), high_watermarks_of(start), high_watermarks_of(end)
        # Spark replays an uncommitted first batch from initialOffset(), which this process resolved again
        replaying_first = self._initial_positions is not None and begin == self._initial_positions
        result = MicroBatchPlan(None)

        def loss(message: str) -> None:
            if self.options.fail_on_data_loss:
                raise DataLossError(f"{message} {_FAIL_HINT}")
            result.data_loss.append(message)

        if listing is None:
            listing = list_partitions(None, self.options)
        # one listing: the partitions gone, and the plan
        current = {(p.topic, p.partition): p for p in self._partitions(listing, position)}
        on_disk = {(p.topic, p.partition) for p in listing.partitions} | {(t, n) for t, n, _ in listing.unselected}
        for tp in sorted(set(begin) - set(until)):
            name = f"{tp[0]}-{tp[1]}"
            if tp not in current and tp in on_disk:  # Spark's source reports such partitions as gone too
                loss(f"{name} is no longer selected by the options (assign, subscribe or subscribePattern changed "
                     f"since the query's checkpoint?); offsets from {begin[tp]} on are not read")
            elif tp not in current:
                loss(f"{name} is gone (its folder is no longer under the given paths); offsets from {begin[tp]} on "
                     "may have been missed")
            elif replaying_first:
                result.notes.append(f"{name} was found after this micro-batch's end was fixed (a replayed first "
                                    "batch): the next micro-batch reads it from its beginning")
            else:
                loss(f"{name} was missing when this micro-batch's end was fixed (its folder went away and came "
                     f"back?); its offsets from {begin[tp]} on are forgotten and the partition is read again as a "
                     "new one")
        ranges: dict[TopicPartition, tuple[int, int]] = {}
        stopping: list[TopicPartition] = []  # batches cut at a divergence below their end (see below)
        # an entry serves the batches that start at its end with its mark (one, or the same one planned again: a
        # batch's own entry is another key, its end's mark differing from its start's where it was cut); a batch of
        # the partition planned from anywhere else ends it, so that it cannot match a later batch with the same end
        # and mark (a recreated topic's)
        for key in [key for key in self._stopped_at_divergence
                    if key[0] in until and key[1:] != (begin.get(key[0]), epochs.get(key[0]))]:
            del self._stopped_at_divergence[key]
        stopped_before = {tp: self._stopped_at_divergence[(tp, begin[tp], epochs.get(tp))] for tp in until
                          if tp in begin and (tp, begin[tp], epochs.get(tp)) in self._stopped_at_divergence}
        for tp in sorted(until):
            name = f"{tp[0]}-{tp[1]}"
            pdir = current.get(tp)
            if pdir is None:
                loss(f"{name} is gone (its folder is no longer under the given paths); offsets "
                     f"[{begin.get(tp, '?')}, {until[tp]}) of this micro-batch are missed")
                continue
            now_id = pdir.topic_id
            if now_id is not None and ending_on.get(tp, now_id) != now_id:
                missed = (f"offsets [{begin[tp]}, {until[tp]}) of the deleted topic are missed"
                          if begin.get(tp, until[tp] + 1) <= until[tp] else  # a replayed first batch's new start
                          f"offsets of the deleted topic below {until[tp]} that it was to read may have been missed")
                loss(f"{name}: the topic was deleted and recreated after this micro-batch's end was fixed (topic id "
                     f"{ending_on[tp]} then, {now_id} now in {pdir.path}); {missed}")
                if self.available_now is not None and tp in self.available_now:  # the deleted topic's target
                    # (the new topic's range without the stream's position as evidence, see below)
                    self.available_now[tp] = available_range(pdir, self.options).latest
                continue
            hi = until[tp]
            # the end was fixed on a log that has diverged below it since (the batch is replayed after a restart, or
            # an election came in between): its records from there are not those the end was fixed on. The batch
            # reads up to the divergence; the next one, which starts at this end, reads on from where it stopped
            ended = divergence(pdir.leader_epochs, end_epochs.get(tp))
            if ended is not None and (ended[0] is None or ended[0] >= hi):
                ended = None
            end_lost = (f"this micro-batch's offsets [{{}}, {hi}) as they were when its end was fixed are gone; it "
                        f"stops at {ended[0]} and the next one reads on from there") if ended is not None else None
            if tp in begin and now_id is not None and started_on.get(tp, now_id) != now_id:
                # as a new partition, and as a batch read of it: without _read_to's evidence, which is the deleted
                # topic's position, and says nothing of where the new topic's log reached (the stream read none of
                # it; _read_to refuses a recreated topic's position too); a last batch of the new log past a
                # compaction gap above its high watermark raises here as it does for a batch read
                lo = _below_lost_copies(pdir, available_range(pdir, self.options).earliest)
                loss(f"{name}: the topic was deleted and recreated (topic id {started_on[tp]} at the stream's "
                     f"offset {begin[tp]}, {now_id} now in {pdir.path}): records of the deleted topic from offset "
                     f"{begin[tp]} on may have been missed; the new topic is read from its beginning (offset {lo})")
            elif tp in begin:
                lo = begin[tp]
                found = divergence(pdir.leader_epochs, epochs.get(tp))
                # the entry of the batch before this one, if it was cut at a divergence
                stopped = stopped_before.get(tp)
                # one divergence below both ends: one report, the batch's loss from where it was to read
                also = (f"; {end_lost.format(stopped if stopped is not None else lo)}" if found is not None
                        and ended is not None and ended[0] == found[0] else "")
                again = read_from.get(tp)
                if again is not None and again < lo and tp in recorded and (
                        found is None or (found[0] is not None and found[0] >= again)):
                    # fixed by latestOffset (READ_FROM): a divergence past the high watermark recorded with the
                    # start, so in records never acknowledged when the stream read them
                    cut = (f"truncated at offset {found[0]}" if found is not None else
                           "truncated (where, no leader epoch tells: the last batch below the position changed)")
                    result.read_again.append(
                        f"{name}: the log was {cut} and written again, past the high watermark "
                        f"{recorded[tp]} recorded with the stream's position {lo} (a follower truncation: records "
                        f"never acknowledged, read past the high watermark): this micro-batch reads the partition "
                        f"again from offset {again}, so the new records up to {lo} are read; offsets [{again}, {lo}) "
                        "an earlier micro-batch returned may come again, as the new leader wrote them")
                    lo = again
                elif found is not None and found[0] is None:
                    loss(f"{name}: {found[1]}; records the stream read below offset {lo} may have been replaced")
                elif found is not None and stopped is not None and found[0] >= stopped:
                    # the previous batch stopped below its end, where the log diverged (or a high watermark
                    # below that stopped it sooner): the stream holds the records below that stop only
                    result.notes.append(f"{name}: the previous micro-batch stopped at {stopped}, below its "
                                        f"end {lo}, where the log diverged: read on from there")
                    lo = stopped
                elif found is not None:
                    # replaced: what the stream read from the divergence on (up to where the batch before stopped)
                    held = stopped if stopped is not None else epochs[tp][1]
                    loss(f"{name}: {found[1]}; the stream's records [{found[0]}, {held}) were replaced, "
                         f"and the new ones are read from offset {found[0]}{also}")
                    if also:
                        end_lost = None
                    lo = found[0]
            else:  # a partition found after the stream started: from its beginning (Spark: earliest), below the
                # live tiered copies missing there as a stream from earliest starts, so that this batch says them
                lo = _below_lost_copies(pdir, available_range(pdir, self.options).earliest)
                if lo != 0:
                    loss(f"added partition {name} starts at offset {lo} instead of 0 in {pdir.path}; offsets "
                         f"[0, {lo}) may have been missed")
            if ended is not None:
                if end_lost is not None and tp in end_recorded and ended[0] >= end_recorded[tp]:
                    # past the high watermark the end was fixed over: records never acknowledged (a follower
                    # truncation), read by the next micro-batch as the new leader wrote them
                    result.read_again.append(
                        f"{name}: the log was truncated at offset {ended[0]} and written again after this "
                        f"micro-batch's end {hi} was fixed, past the high watermark {end_recorded[tp]} it was fixed "
                        f"over (a follower truncation: records never acknowledged): it stops at "
                        f"{max(lo, ended[0])} and the next one reads on from there")
                elif end_lost is not None:
                    loss(f"{name}: {ended[1]}, after this micro-batch's end {hi} was fixed: "
                         f"{end_lost.format(max(lo, ended[0]))}")
                hi = max(lo, ended[0])
                stopping.append(tp)
                self._stopped_at_divergence[(tp, until[tp], end_epochs[tp])] = ended[0]
            if hi < lo:
                log_end = available_range(pdir, self.options, read_to=self._read_to(pdir, position)).log_end
                if tp in recorded and recorded[tp] <= log_end < lo and not (
                        now_id is not None and started_on.get(tp, now_id) != now_id):
                    # truncated past the high watermark recorded with the position (a follower truncation, the new
                    # leader's records not there yet): records never acknowledged, not data loss
                    result.read_again.append(
                        f"{name}: the log was truncated at offset {log_end}, past the high watermark "
                        f"{recorded[tp]} recorded with the stream's position {lo} (a follower truncation: records "
                        f"never acknowledged, read past the high watermark): the stream reads on from offset {hi}; "
                        f"offsets [{hi}, {lo}) an earlier micro-batch returned may come again, as the new leader "
                        "writes them")
                elif replaying_first and log_end >= lo:
                    result.notes.append(f"{name}: this micro-batch ends at {hi}, below its start {lo}, while the log "
                                        f"still reaches {log_end}: the start was resolved again after a restart; "
                                        "nothing is read for it in this batch")
                else:
                    if log_end >= lo:  # the high watermark went back, not the log
                        cause = ("the high watermark went back below the position while the log still reaches it "
                                 "(a log cut back and grown again, or a lagging checkpoint: nothing recorded tells "
                                 "which)")
                    elif now_id is not None and started_on.get(tp) == now_id:
                        cause = "the log was truncated (its topic id is the same)"
                    else:
                        cause = "the log was truncated or the topic recreated"
                    loss(f"{name}'s offsets went back from {lo} to {hi} (the log now ends at {log_end} in "
                         f"{pdir.path}): {cause}; records may have been missed")
                continue
            if hi > lo:
                ranges[tp] = (lo, hi)
        result.ranges = ranges
        if not ranges:
            return result
        # An end above the upper bound now (the replica read since latest was taken has a lower high watermark: a
        # replica switch in that instant) is the planner's data loss: records above a replica's high watermark may
        # be a fenced leader's, so they are not read from its log. Except for ends this source fixed at the log end
        # because the broker had not checkpointed the partition's high watermark yet: those are read to that end,
        # even if the checkpoint written since says less
        to_log_end = {tp for tp in ranges if tp in self._seen and not self._seen[tp].checkpointed}
        # (the log ends the ranges of this listing found serve the plan: no last segment walked again)
        # (the stream's position vouches for a last batch it read past a compaction gap, as in latest_offsets)
        read_to, reach = self._evidence(position), self._reach(position)
        scans = [self._plan_ranges({tp: r for tp, r in ranges.items() if tp not in to_log_end}, self.options,
                                   listing, self._log_ends, read_to, reach, self._choice_log_ends),
                 self._plan_ranges({tp: r for tp, r in ranges.items() if tp in to_log_end},
                                   self.options.replace(upper_bound="logEndOffset"), listing, self._log_ends,
                                   read_to, reach, self._choice_log_ends)]
        scans = [scan for scan in scans if scan is not None]
        result.scan = scans[0] if len(scans) == 1 else _merged(*scans)
        self._unsaid_below_start(result.scan.report)
        result.data_loss.extend(result.scan.report.data_loss)
        for preport in result.scan.report.partitions:
            # the batch reads the partition to its log end, past which offsets the broker had acknowledged and
            # flushed are not in the files: the loss a batch read to latest raises (planning's rule). Said by the
            # batch that reaches the end (the stream stands there after it: no later batch says it again)
            if preport.lost_past_end is not None:
                loss(preport.lost_past_end)
                tp = (preport.topic, preport.partition)
                result.lost_past_end[tp] = preport.lost_past_end
                self._said_past_end.add((tp, preport.lost_past_end_offsets))
        planned = result.scan.report.offsets()
        for tp in stopping:  # where a batch cut at a divergence really stops (a high watermark below it stops it
            # sooner): the next batch reads on from there, not from the divergence
            first, stop = planned.get(tp, (None, None))
            if stop is not None and first is not None:
                stop = max(stop, first)  # never below where the batch started (a high watermark below its start)
            key = (tp, until[tp], end_epochs[tp])
            if stop is not None and stop < self._stopped_at_divergence[key]:
                self._stopped_at_divergence[key] = stop
        for tp in ranges:  # how this batch's end was fixed (latest_offsets' ranges)
            seen = self._seen.get(tp)
            result.scan.report.lenient.extend(d for d in (seen.lenient if seen is not None else ())
                                              if d not in result.scan.report.lenient)
        return result

    def _unsaid_below_start(self, report: PlanReport) -> None:
        """Make the loss below the log start that ``report`` says (a batch that starts below it: retention deleted
        unread offsets) name only offsets no micro-batch of this planner said: a stream rate-limited by
        ``maxOffsetsPerTrigger`` that retention overtook creeps through the deleted offsets a limit at a time
        (Spark's ``rateLimit``, kept), and each batch found the same offsets gone, up to a log start that moves on.
        The first batch says them as planning does; a later one says only those retention deleted since (in its own
        words), or nothing. Said offsets are kept per partition and topic id (a recreated topic's loss is its own)
        while a batch may still start below them. (``failOnDataLoss`` raised it in planning already.)"""
        for preport in report.partitions:
            if preport.lost_below_start is None or preport.lost_below_start_words is None:
                continue
            first, end = preport.lost_below_start
            key = ((preport.topic, preport.partition), preport.topic_id)
            said = [(a, b) for a, b in self._said_below_start.get(key, ()) if b > first]
            self._said_below_start[key] = _merged_ranges([*said, (first, end)])
            unsaid = _without(first, end, said)
            if unsaid == [(first, end)]:
                continue
            words = preport.lost_below_start_words
            named = ", ".join(f"[{a}, {b})" for a, b in unsaid)
            instead = [] if not unsaid else [
                f"{preport.topic}-{preport.partition}: offsets {named} are gone too: {preport.path} now starts at "
                f"offset {end}, and this stream, at {first}, is still reading through offsets "
                f"retention deleted; the lost offsets below {unsaid[0][0]} were said by an earlier micro-batch"]
            for said_in in (report.data_loss, preport.notes):
                if words in said_in:
                    at = said_in.index(words)
                    said_in[at:at + 1] = instead

    def _with_incarnations(self, positions: Mapping[TopicPartition, int],
                           ranges: Mapping[TopicPartition, AvailableRange], previous: Offsets | None = None,
                           read_from: Mapping[TopicPartition, int] | None = None) -> Offsets:
        """``positions`` as offsets that also record each partition's topic id (from ``ranges``) and the
        :data:`EpochMark` of the last batch below its position (from the batch's header, as Kafka's consumer takes
        it: every replica holds the same batch, while their ``leader-epoch-checkpoint`` s may differ, a replica
        rebuilt from a compacted log lacking the epochs whose batches were all cleaned). An unchanged position keeps
        the mark ``previous`` recorded while the log still validates it (no batch read again for an idle
        partition); a mark the log diverged from is taken again. A topic id the files do not tell (no
        ``partition.metadata`` at the moment) is kept from ``previous``. A micro-batch's end (``previous`` given: the
        start) that moved past its partition's checkpointed high watermark records it (:data:`HIGH_WATERMARKS`: the
        one it was fixed over; not an initial offset, which no read put there); an unchanged
        position keeps what ``previous`` recorded until the high watermark reaches it, so that a high watermark moving
        below it makes no new offsets (no empty micro-batch); ``read_from``: the micro-batch's :data:`READ_FROM`."""
        ids = {tp: available.topic_id for tp, available in ranges.items()}
        before = from_offsets(previous)
        before_ids, before_marks = topic_ids_of(previous), leader_epochs_of(previous)
        recreated = set(_recreated(before_ids, ids))
        marks: dict[TopicPartition, EpochMark | None] = {}
        for tp, position in positions.items():
            kept = before_marks.get(tp) if tp not in recreated and before.get(tp) == position else None
            if kept is not None and (tp not in ranges or divergence(ranges[tp].leader_epochs, kept) is None):
                marks[tp] = kept
            elif tp in self._pdirs and position > 0:
                marks[tp] = self._mark(self._pdirs[tp], position)
        for tp, topic_id in before_ids.items():
            if tp in positions and ids.get(tp) is None:
                ids[tp] = topic_id
        before_hws, before_crcs = high_watermarks_of(previous), last_batch_crcs_of(previous)
        hws: dict[TopicPartition, int | None] = {}
        crcs: dict[TopicPartition, int | None] = {}
        for tp, position in positions.items():
            available = ranges.get(tp)
            hw = available.high_watermark if available is not None else None
            if hw is not None and position <= hw:
                # (also drops an entry once the high watermark reached the position: its records were acknowledged
                # then, and a truncation below it is a divergence as any other)
                continue
            if before.get(tp) == position:
                if tp in before_hws and tp not in recreated:
                    hws[tp], crcs[tp] = before_hws[tp], before_crcs.get(tp)
            elif previous is not None and hw is not None:
                hws[tp] = hw
                crcs[tp] = self._tail(self._pdirs[tp], position)[1] if tp in self._pdirs and position > 0 else None
        return to_offsets(positions, ids, marks, hws, read_from, crcs)

    def stopped_short(self, end: Offsets, read_to: Mapping[TopicPartition, int]) -> Offsets:
        """``end`` with each partition in ``read_to`` at the offset given there when below its end (a read that
        stopped short: :attr:`MicroBatchPlan.read_to`), its :data:`EpochMark` taken again below it."""
        positions = from_offsets(end)
        marks: dict[TopicPartition, EpochMark | None] = dict(leader_epochs_of(end))
        hws: dict[TopicPartition, int | None] = dict(high_watermarks_of(end))
        crcs: dict[TopicPartition, int | None] = dict(last_batch_crcs_of(end))
        for tp, offset in read_to.items():
            if tp in positions and offset < positions[tp]:
                positions[tp] = offset
                marks[tp], crcs[tp] = (self._tail(self._pdirs[tp], offset) if tp in self._pdirs and offset > 0
                                       else (None, None))
                if hws.get(tp) is not None and offset <= hws[tp]:
                    hws[tp] = crcs[tp] = None
        return to_offsets(positions, topic_ids_of(end), marks, hws, last_batch_crcs=crcs)

    def _mark(self, pdir: PartitionDir, position: int) -> EpochMark | None:
        """The :data:`EpochMark` below ``position`` in ``pdir``: None for a legacy batch or one without a leader
        epoch, or when no batch can be read there (recorded nothing, the stream goes on as without marks)."""
        return self._tail(pdir, position)[0]

    def _tail(self, pdir: PartitionDir, position: int) -> tuple[EpochMark | None, int | None]:
        """The :data:`EpochMark` below ``position`` in ``pdir`` (:meth:`_mark`) and the CRC of that last batch
        (:data:`LAST_BATCH_CRCS`; None when no batch can be read there), from one header read, cached while the
        log is unchanged."""
        # what a truncation and a new leader's appends change: the segments, the epochs, the last one's mtime
        key = (pdir.path, tuple((s.base_offset, s.log_size) for s in pdir.segments), pdir.leader_epochs,
               pdir.segments[-1].mtime_ms if pdir.segments else None, position)
        if key not in self._marks:
            try:
                with PartitionLookup(pdir, max_batch_bytes=self.options.max_batch_bytes) as lookup:
                    header = lookup.last_batch_before(position)
                found = (epoch_mark_of(header, position), header.crc if header is not None else None)
            except KafkaSegError as err:
                log.info("no leader epoch recorded for %s-%d at %d: %s", pdir.topic, pdir.partition, position, err)
                found = (None, None)
            if len(self._marks) > 4 * len(self._pdirs) + 64:
                self._marks.clear()
            self._marks[key] = found
        return self._marks[key]

    @staticmethod
    def _plan_ranges(ranges: Mapping[TopicPartition, tuple[int, int]], options: ReadOptions,
                     listing: Listing, log_ends: LogEndCache | None = None,
                     read_to: Callable[[PartitionDir], int | None] | None = None,
                     reach: Callable[[PartitionDir], int | None] | None = None,
                     choice_log_ends: ChoiceLogEnds | None = None) -> ScanPlan | None:
        """A batch read's plan of ``[start, end)`` per partition in ``listing`` (None for no range), taking the
        log ends in ``log_ends`` where they hold, with ``read_to`` the stream's evidence, ``reach`` its position and
        ``choice_log_ends`` the log ends its replica choices read (see :func:`~kafkaseg.planning.plan_scan`)."""
        if not ranges:
            return None
        entries_start = tuple((t, p, lo) for (t, p), (lo, _) in sorted(ranges.items()))
        entries_end = tuple((t, p, hi) for (t, p), (_, hi) in sorted(ranges.items()))
        return plan_scan(None, options.replace(
            assign=tuple(sorted(ranges)), subscribe=None, subscribe_pattern=None,
            starting=OffsetLimit("offsets", entries_start, option="startingOffsets"),
            ending=OffsetLimit("offsets", entries_end, option="endingOffsets")), listing=listing, log_ends=log_ends,
            read_to=read_to, reach=reach, choice_log_ends=choice_log_ends)


def _recreated(started_on: Mapping[TopicPartition, str], now: Mapping[TopicPartition, str | None]
               ) -> list[TopicPartition]:
    """The partitions whose topic id now differs from the one their offset was taken from (both known)."""
    return [tp for tp, topic_id in started_on.items() if now.get(tp) is not None and now[tp] != topic_id]


def _merged_ranges(ranges: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """``[a, b)`` ranges joined where they meet or overlap, in order."""
    out: list[tuple[int, int]] = []
    for a, b in sorted(ranges):
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


def _without(first: int, end: int, taken: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """The parts of ``[first, end)`` outside the ``taken`` ranges, in order."""
    out, at = [], first
    for a, b in _merged_ranges(taken):
        if b <= at or a >= end:
            continue
        if a > at:
            out.append((at, a))
        at = max(at, b)
    if at < end:
        out.append((at, end))
    return out


def _merged(first: ScanPlan, second: ScanPlan) -> ScanPlan:
    """Two plans of different partitions as one (slices in the planner's order, reports joined)."""
    report = first.report
    for name in ("partitions", "partitions_pruned", "replicas", "indexes_rebuilt", "data_loss", "notes", "lenient"):
        getattr(report, name).extend(getattr(second.report, name))
    slices = sorted(first.slices + second.slices, key=slice_order)
    return ScanPlan(slices, report)


def poll_micro_batches(planner: MicroBatchPlanner, start: Offsets | None = None, *, follow: bool = False,
                       interval_s: float = 0.5, idle_timeout_s: float | None = None,
                       sleep: Callable[[float], None] = time.sleep, listing: Listing | None = None
                       ) -> Iterator[MicroBatchPlan]:
    """Micro-batches from ``start`` (default the planner's initial offsets), each planned once everything before it
    was consumed (the generator resumed): what is available now, then, with ``follow``, what arrives, polled every
    ``interval_s`` (or twice as long as a poll takes, when longer: a poll lists every partition folder) until
    ``idle_timeout_s`` passes without a new offset. Each batch takes all that is available, or at most
    ``maxOffsetsPerTrigger`` offsets. The loss past the log end of a partition the stream stands at
    (:attr:`MicroBatchPlanner.standing_loss`, ``failOnDataLoss=false``) is in the ``data_loss`` and
    ``lost_past_end`` of the poll's batch, or of a plan of no batch (``scan`` None) when the poll has none.

    Each poll lists the partition folders once, for the batch's end and its plan; the first poll takes
    ``listing`` instead, the discovery ``start`` was just resolved on (:attr:`MicroBatchPlanner.last_listing`;
    the initial offsets' own when ``start`` is not given), so that the first records come after one discovery,
    not three. Every later poll lists again: new segments and partitions are seen."""
    if start is None:
        before = planner.last_listing
        position = planner.initial_offsets()
        if listing is None and planner.last_listing is not before:  # resolved just now
            listing = planner.last_listing
    else:
        position = start
    limit = planner.options.max_offsets_per_trigger
    idle_since = time.monotonic()
    while True:
        polled = time.monotonic()
        end = planner.latest_offsets(position, max_offsets=limit, all_available=limit is None, listing=listing)
        listing = None  # the next poll lists again
        took = time.monotonic() - polled
        # (failOnDataLoss=false) the loss past the log end of partitions the stream stands at, which no micro-batch
        # reads to: said with this poll's batch, or alone in a plan of no batch
        standing = planner.standing_loss
        if end != position:
            plan = planner.plan(position, end, listing=planner.last_listing)
            plan.data_loss[:0] = [words for _, words in standing]
            plan.lost_past_end.update(standing)
            yield plan
            position = planner.stopped_short(end, plan.read_to) if plan.read_to else end
            idle_since = time.monotonic()
            continue
        if standing:
            yield MicroBatchPlan(None, data_loss=[words for _, words in standing], lost_past_end=dict(standing))
        if not follow or (idle_timeout_s is not None and time.monotonic() - idle_since >= idle_timeout_s):
            return
        sleep(max(interval_s, 2 * took))


def follow(path: str | Sequence[str], *, poll_interval: float = 0.5, idle_timeout: float | None = None,
           sleep: Callable[[float], None] = time.sleep, metrics: ScanMetrics | None = None,
           **options) -> Iterator[pa.RecordBatch]:
    """Yield the records of log dirs as they grow, as ``spark.readStream.format("kafkaseg")`` reads them, without
    Spark: ``startingOffsets`` defaults to ``latest`` (``"earliest"`` to read what is there first), new records are
    looked for every ``poll_interval`` seconds, and the generator ends after ``idle_timeout`` seconds without one
    (never by default; close it, or break out of the loop). Options are the streaming read's (see README
    "Streaming"); data loss raises :class:`~kafkaseg.errors.DataLossError` unless ``failOnDataLoss=false``, where
    it is logged (``kafkaseg.streaming`` logger) and skipped. With ``onCorruption=skip`` each corrupt batch skipped
    (file, byte) and each lenient planning decision is logged there as a warning; so is each corrupt batch read from
    another copy given (several brokers' log dirs), and a start by timestamp answered from one. ``metrics`` (a
    :class:`~kafkaseg.scan.ScanMetrics`, when given) adds up what was read and skipped."""
    from kafkaseg.scan import ScanMetrics, read_slice

    _check_misspelt_keywords(options)
    paths = [os.fspath(path)] if isinstance(path, (str, os.PathLike)) else [os.fspath(p) for p in path]
    read_options = ReadOptions.from_options({**options, "paths": paths}, stream=True)
    planner = MicroBatchPlanner(read_options)
    logged: set = set()  # lenient decisions, which each micro-batch's plan lists again
    start = planner.initial_offsets()
    for note in planner.take_start_notes():  # (a start by timestamp answered from another copy)
        log.warning("%s", note)
    for plan in poll_micro_batches(planner, start, follow=True, interval_s=poll_interval, idle_timeout_s=idle_timeout,
                                   sleep=sleep, listing=planner.last_listing):
        for note in plan.data_loss:
            log.warning("data loss (failOnDataLoss=false): %s", note)
        for note in plan.read_again:
            log.warning("%s", note)
        for decision in plan.scan.report.lenient if plan.scan is not None else ():
            if decision not in logged:
                logged.add(decision)
                log.warning("%s", decision.describe())
        for piece in plan.scan.slices if plan.scan is not None else ():
            key = (piece.topic, piece.partition)
            if key in plan.read_to:
                continue  # (after a rewritten tail: read by the next batch, from where the read stopped)
            read = ScanMetrics()  # this slice's, so that each skip is logged once with its file and byte
            last = None
            try:
                for batch in read_slice(piece, read_options, read):
                    if batch.num_rows:
                        last = batch.column("offset")[batch.num_rows - 1].as_py()
                    yield batch
                if read.rewritten_tails:  # (a truncation past the high watermark rewrote the log: see consume)
                    plan.read_to[key] = stopped_at(piece, last)
            finally:
                # (a corrupt batch read from another copy: the chosen copy needs looking at, as the Spark reader
                # and consume say)
                for line in read.corrupt_skips() + read.other_copies_lines() + read.unreadable_tail_lines():
                    log.warning("%s", line)
                if read_options.on_corruption != "skip":  # (else said among the skips)
                    for line in read.lost_tail_lines():
                        log.warning("data loss (failOnDataLoss=false): %s", line)
                for skipped, line in read.vanished_lines():
                    log.log(logging.WARNING if skipped else logging.INFO, "%s", line)
                for line in read.rewritten_tail_lines():  # (information, as the Spark workers log it)
                    log.info("%s", line)
                if metrics is not None:
                    metrics.add(read)


def _check_misspelt_keywords(options: Mapping) -> None:
    """A misspelt keyword of :func:`follow`'s own (``idle_timout``) lands in its ``**options``, where the read
    options' error would list only those: name the keyword it is close to instead (a read option's name, or a
    ``kafka.`` setting, is left to :meth:`ReadOptions.from_options`)."""
    import inspect

    own = [name for name, parameter in inspect.signature(follow).parameters.items()
           if parameter.kind is parameter.KEYWORD_ONLY]
    read = {name.lower() for name in (*OPTION_NAMES, *IGNORED_OPTIONS)}
    for key in options:
        if isinstance(key, str) and key.lower() not in read and not key.lower().startswith("kafka.") and (
                hint := did_you_mean(key, own)):
            raise InvalidOptionError(f"unknown option {key!r}{hint}: follow()'s own keywords are {', '.join(own)}; "
                                     "the others are the streaming read's options (README \"Streaming\")")
