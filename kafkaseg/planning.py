"""Planning: topic-partitions + options + predicates -> :class:`SegmentSlice` s (units of work), with a report.

Pure and cheap: planning reads file names and sizes, checkpoints, ``.index``/``.timeindex``/``.txnindex`` files,
and batch HEADERS over at most about one index interval at each place it needs an exact position (a partition's
log end offset, the batch holding a requested offset, the batch answering a timestamp lookup). The one exception is
a timestamp lookup, which decodes the single batch that holds the answer (offsets for times are per record).
Under ``read_committed``, a needed segment without a usable ``.txnindex`` (Kafka writes it only on a segment's
first abort) has its aborted transactions derived from one header walk of the partition from its first segment
(:func:`kafkaseg.storage.txn_index.segment_aborted_txns`), cached per partition and reported in
``PlanReport.indexes_rebuilt``.

Offsets follow Spark's Kafka source (``KafkaSourceProvider``/``KafkaOffsetReaderAdmin`` in apache/spark) over the
broker's own answers (``UnifiedLog.fetchOffsetByTimestamp``, ``Partition.fetchOffsetForTimestamp``,
``UnifiedLog.collectAbortedTransactions`` in apache/kafka):

* earliest = the log start offset (``max(log-start-offset checkpoint, first segment base)``);
* latest = the upper bound: the high watermark from ``replication-offset-checkpoint`` (``upperBound=highWatermark``;
  the log end offset when the checkpoint lacks the partition, which the report records) or the log end offset
  (``upperBound=logEndOffset``), and under ``read_committed`` at most the last stable offset;
* a timestamp T resolves to the first record offset whose timestamp >= T: the first segment whose largest timestamp
  >= T, its time-index floor of T, the offset-index floor of that, then batch headers up to the first batch whose
  maxTimestamp >= T, then that batch's records. An answer at or past the upper bound is "no offset" (the broker
  only answers below its last fetchable offset). No offset: a start fails (``startingOffsetsByTimestampStrategy=
  error``) or becomes latest; an end becomes latest.
* data loss (``failOnDataLoss``): a start below the log start offset or an end above the upper bound raise
  :class:`~kafkaseg.errors.DataLossError`; with ``failOnDataLoss=false`` the range is clamped to what exists and
  the report says so. Offsets missing between segments above the cleaner checkpoint are not loss, as Spark's
  source reads past offsets at or above the earliest that are not there (a follower of a compacted topic holds such
  holes with no checkpoint entry, and so does a log being cleaned): a start inside one moves to the next segment
  (a plan note), and a range across one is read past and listed in the read's metrics (``missing_offsets``). A
  start above the end reads nothing (Spark drops such ranges).

Byte ranges: a slice covers whole batches ``[start_position, end_position)`` of one segment. Consecutive slices of a
segment are cut at ``.index`` entry positions (batch boundaries), near ``splitSize`` bytes, and (with
``maxRecordsPerPartition``) near that many offsets as the index entries approximate them. Every slice of one offset
range carries that whole range as ``[start_offset, end_offset)``: the byte ranges partition the batches, and the
reader drops records outside the offsets. Offset ranges of one segment whose byte ranges meet (share a batch, or
touch: a pushed-down ``NOT offset = x`` or ``offset IN (x, y)``) are planned as one range with the offsets between
them as ``offset_gaps``, which the reader leaves out: their bytes are read and decoded once, not once per range.
``minPartitions`` keeps halving the largest slice (at its middle index entry) until there are enough. Slices are then packed into units of work (Spark input partitions) by
:func:`pack_slices`: consecutive small slices of a topic-partition together, and small topic-partitions together
(``packTopicPartitions``). Each slice also carries the offsets its own bytes hold (``slice_offsets``: from the
first offset of the batch it starts at to the next slice's), by which a reader reads it again from the partition's
current files when a live broker replaced its segment after planning (:func:`plan_again_by_offset`).
"""

from __future__ import annotations

import bisect
import collections
import dataclasses
import functools
import heapq
import math
import os
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator, NamedTuple, Sequence

import numpy as np

from kafkaseg.errors import (CorruptCheckpointError, CorruptDataError, CrcMismatchError, DataLossError,
                             InvalidOptionError, KafkaSegError, LayoutError, did_you_mean)
from kafkaseg.entry_check import batch_first_offset, entry_batch_problem, entry_neighbours
from kafkaseg.lookup import PartitionLookup, copies_beside, from_other_copies
from kafkaseg.lookup import other_copies as copies_passed_over
from kafkaseg.options import EARLIEST, LATEST, ReadOptions
from kafkaseg.storage.checkpoints import (LOG_START_OFFSET_CHECKPOINT,
                                         REPLICATION_OFFSET_CHECKPOINT, EpochEntry)
from kafkaseg.storage._index_file import index_location
from kafkaseg.storage.indexes import (LeftEntries, foreign_time_index, largest_timestamp_walked, left_entries,
                                      load_indexes, rebuild_indexes, time_pair_foreign, walked_time_entry_problem)
from kafkaseg.storage import fs as _fs
from kafkaseg.storage.layout import (ChoiceLogEnds, ListingCheck, PartitionDir, SegmentFiles, acknowledged_loss_end,
                                     acknowledged_loss_words, below_cleaner_checkpoint, check_one_incarnation,
                                     choose_replicas, copy_gaps, discover, find_log_end, flushed_above_words, flushed_past_end,
                                     high_watermark_above_words, last_stable_offset, other_copy_line,
                                     reaches_past_recovery_point, read_partition_again, relisted, rolled_cut_of,
                                     snapshot_transactions_at, transactions_open_at, truncation_bound,
                                     unchanged_since_listed, valid_cleaner_offset)
from kafkaseg.storage.offset_index import OffsetIndex
from kafkaseg.storage.producer_snapshot import lists_transactional_producers
from kafkaseg.storage.segment import SegmentReader, indexed_past_end, snapshot_past
from kafkaseg.storage.time_index import TimeIndex
from kafkaseg.storage.txn_index import TransactionIndex, segment_aborted_txns, unindexed_abort

__all__ = [
    "SegmentSlice",
    "plan_again_by_offset",
    "Predicates",
    "PartitionReport",
    "PlanReport",
    "LenientDecision",
    "ScanPlan",
    "plan_scan",
    "pack_slices",
    "resolve_offsets",
    "offset_for_timestamp",
    "lost_copy_reached_by_time",
    "high_watermark_above_note",
    "select_partitions",
    "Listing",
    "list_partitions",
    "available_range",
    "AvailableRange",
    "LogEndCache",
    "slice_order",
]


# --------------------------------------------------------------------------------------------------------------------
# Public data

@dataclass(frozen=True)
class SegmentSlice:
    """One unit of work (one Spark input partition): whole batches ``[start_position, end_position)`` of one
    segment file, keeping records with ``start_offset <= offset < end_offset``.

    ``aborted`` lists ``(producerId, firstOffset, lastOffset)`` of the aborted transactions that can touch the
    slice (read_committed only, else empty). ``segment_size`` is the ``.log`` size seen at planning;
    ``partition_path``/``log_dir`` say which replica; ``segment_index`` is the segment's rank in its partition.
    ``next_base_offset`` is the base offset of the partition's next segment, None for its last (active) segment;
    every offset in a segment lies in ``[base_offset, next_base_offset)``. ``recovery_point`` is the partition's
    ``recovery-point-offset-checkpoint`` entry (None when there is none): see :attr:`may_end_mid_batch`.
    ``cleaner_offset`` is its ``cleaner-offset-checkpoint`` entry: offsets missing below it were compacted away; the
    read lists offsets missing between segments above it (``missing_before``: those planning skipped at the start).
    ``file_identity`` says which file was planned (local files only), so a reader on the planning host can tell a
    segment that a live broker replaced (the cleaner swaps in a compacted one) from the one planned.
    ``slice_offsets`` is ``[lo, hi)``, the offsets of ``[start_offset, end_offset)`` this slice's bytes hold: from the
    first offset of the batch at ``start_position`` (the read's start for a segment's first slice) to the next
    slice's ``lo`` (the segment's end for its last). The slices of a segment partition its offsets by these, so a
    slice whose file is gone or replaced can be read again by offset from the partition's current files
    (:func:`plan_again_by_offset`) without returning a record another slice returns. None when not known.
    ``offset_gaps`` are half-open ranges inside ``[start_offset, end_offset)`` whose records the read leaves out:
    the offsets between two offset ranges of a pushed-down filter whose batches meet, planned as one slice so those
    bytes are read once.
    """

    topic: str
    partition: int
    log_path: str
    base_offset: int
    start_position: int
    end_position: int
    start_offset: int
    end_offset: int
    aborted: tuple[tuple[int, int, int], ...] = ()
    segment_size: int = 0
    segment_index: int = 0
    partition_path: str = ""
    log_dir: str | None = None
    filesystem: Any = field(default=None, compare=False, repr=False)
    next_base_offset: int | None = None
    recovery_point: int | None = None
    file_identity: tuple[str, int, int] | None = None  # (host, st_dev, st_ino) of a local .log at planning
    cleaner_offset: int | None = None  # the partition's cleaner-offset-checkpoint entry (offsets below it compacted)
    # (segment, first, end) of offsets missing before this slice that planning skipped (a start inside a hole
    # between segments): the read lists them in ScanMetrics.missing_offsets, as it lists the holes it runs across
    missing_before: tuple[str, int, int] | None = None
    # (segment, byte, why, first, end, proven) of offsets empty rolled segments of the partition were proven to have
    # lost (planning._empty_segment_loss), read past with failOnDataLoss=false: listed in ScanMetrics.lost_tails; or,
    # not proven (their indexes say they held them, the recovery point not that they were flushed), a warning in
    # ScanMetrics.unreadable_tails
    lost_before: tuple[tuple[str, int, str, int, int, bool], ...] = ()
    # the segment's .index (None when absent): a lenient read resumes after bad framing at its next entry whose
    # batch checks out (entry_check.ResumptionEntries), so what it loses does not depend on where slices are cut
    index_path: str | None = None
    index_window: tuple[int, int] | None = None  # where in ``index_path`` the index is (see index_location)
    slice_offsets: tuple[int, int] | None = None
    listed_at_ns: int | None = None  # the wall clock when the plan's listing began (see plan_again_by_offset)
    topic_id: str | None = None  # the partition's topic id (partition.metadata) at planning, None when unknown
    partition_identity: tuple[str, int, int] | None = None  # the partition folder's file_identity at planning
    # the segment is known to be a rolled one even though it is its partition's last (a tiered-storage copy):
    # a batch cut short at its end is then lost bytes, never an append in progress
    rolled: bool = False
    # a tiered copy __remote_log_metadata says is whole (layout.SegmentFiles.remote_whole): offsets after its last
    # batch were compacted away before the topic went tiered, not lost
    remote_whole: bool = False
    # the tiered-storage copies the partition was extended with below its first local segment (their folder), so a
    # read that plans again from the partition's files finds them again (layout.read_partition_again)
    remote_path: str | None = None
    # (position, bytes, why): corrupt bytes after ``end_position`` that planning left out of a lenient read (zeros
    # ending the active segment's batches with data or acknowledged offsets after them); the read that reaches
    # ``end_position`` counts them as a skipped corrupt region (ScanMetrics), once: only the partition's slice
    # ending there carries them
    corrupt_tail: tuple[int, int, str] | None = None
    # the read of this slice ends where its partition's log ends, with no high watermark to bound it (none
    # checkpointed for the partition): it is the active segment's last slice, read to the segment's readable end
    # (planning's log end). The read then asks the segment's indexes whether they point past that end
    # (scan._SliceDecoder.check_indexed_tail): offsets the file once held and no longer does
    indexed_tail_check: bool = False
    # with indexed_tail_check, what else the partition's files say the log held past its end at planning: the
    # recovery point when it is above the log end and still checkpointed after planning (_tail_evidence), else
    # None; and (offset, file name) of the newest producer .snapshot named past the log end, else None
    tail_recovery_point: int | None = None
    tail_snapshot: tuple[int, str] | None = None
    # (missing .log, 0, why, first, end): the offsets a lost newest segment's index files prove, past the log end
    # this slice reads to with no high watermark and no recovery point above that end (_lost_segment_past): listed
    # in ScanMetrics.unreadable_tails by the read, a warning
    lost_segment_past: tuple[str, int, str, int, int] | None = None
    # the other copies of the partition found (their folders) that the replica choice passed over: named when this
    # one fails to read, so a user who gave several brokers' log dirs knows another copy may read
    other_copies: tuple[str, ...] = ()
    # the cluster's __remote_log_metadata verdicts the plan applied to the partition's tiered-storage copies, cut to
    # the dead copies it found and left out (tiered.CopyStates.as_planned), so a read planning again
    # (plan_again_by_offset) leaves out the same; None when no metadata decided
    copy_states: Any = field(default=None, compare=False, repr=False)
    offset_gaps: tuple[tuple[int, int], ...] = ()
    # a slice starting mid-segment at an offset index entry: the entry's offset (None: not at an entry, or an index
    # rebuilt from the log's own headers), and the position of the index entry before it (or of the batch the piece
    # started at), a batch boundary from which a header walk reaches the batch before the slice; None when not known
    # (the read then finds it in the index). What the read checks its first batch with (scan._SliceDecoder.
    # check_start): the entry holds the last offset of the append written there, so a first batch ending at it
    # follows the one before it, else the batches from there say what it follows. Both fit the file as planned
    # (_Partition.slice_start: an entry a follower's truncation left past the cut is neither)
    start_entry: int | None = None
    walk_from: int | None = None
    # the log dirs the read found besides the slice's own (Listing.log_dirs): a partition folder renamed
    # <tp>.<id>-delete since planning is a move's source when one of them holds the partition now (moved_partition)
    move_dirs: tuple[str, ...] = ()
    # the partition's checkpointed high watermark when this slice of a local segment reads past it
    # (upperBound=logEndOffset), else None. At and past it a follower truncation (UnifiedLog.truncateTo, never below
    # the high watermark) may cut the segment and the new leader's batches take the same offsets in other bytes:
    # where the planned bytes no longer match there, in a file changed since planning, the read ends the slice and
    # reports it (scan._SliceDecoder.rewritten), as those records were never acknowledged
    high_watermark: int | None = None

    @property
    def segment_offsets(self) -> tuple[int, int]:
        """``[lo, hi)``: the slice's offsets its segment can hold (``[start_offset, end_offset)`` within
        ``[base_offset, next_base_offset)``)."""
        hi = self.end_offset if self.next_base_offset is None else min(self.end_offset, self.next_base_offset)
        return max(self.start_offset, self.base_offset), hi

    @property
    def is_last_segment(self) -> bool:
        return self.next_base_offset is None

    @property
    def may_end_mid_batch(self) -> bool:
        """Whether a partial batch at the end of this segment is an expected tail: the active segment (a broker
        mid-write), or a rolled one reaching past the recovery point, which a crash can leave torn (Kafka's
        ``LogLoader`` recovers exactly those segments, truncating them). A segment wholly below the recovery
        point was flushed: its missing bytes are lost, not pending. A tiered-storage copy was rolled
        (:attr:`rolled`)."""
        return not self.rolled and reaches_past_recovery_point(self.next_base_offset, self.recovery_point)

    @property
    def size_bytes(self) -> int:
        return self.end_position - self.start_position

    def outside_gaps(self, lo: int, hi: int) -> list[tuple[int, int]]:
        """The parts of offsets ``[lo, hi)`` that are not in :attr:`offset_gaps` (the read's own offsets)."""
        out = []
        for gap_lo, gap_hi in self.offset_gaps:
            if gap_lo > lo:
                out.append((lo, min(hi, gap_lo)))
            lo = max(lo, gap_hi)
        if lo < hi:
            out.append((lo, hi))
        return [(a, b) for a, b in out if a < b]


@dataclass(frozen=True)
class Predicates:
    """What filter pushdown (or the Python API) narrows a scan by. None = no restriction.

    ``partitions`` holds partition numbers (any topic) and/or ``(topic, partition)`` pairs. ``excluded_topics`` and
    ``excluded_partitions`` (numbers) are left out (``<>``, NOT IN); every one of ``topic_patterns``, ``(kind,
    text)`` with kind ``startswith``, ``endswith`` or ``contains`` (LIKE ``'x%'``, ``'%x'``, ``'%x%'``), must hold for
    a topic's name. ``offset_ranges`` is a union of half-open ``[lo, hi)`` ranges on ``offset``. ``timestamp_range``
    is ``(lo, hi)`` in ms, inclusive lo, exclusive hi, either None; it only prunes (segments whose largest timestamp
    < lo, and the part of a segment that the time index proves older than lo), so the caller must still apply the
    filter to rows.
    """

    topics: frozenset[str] | None = None
    partitions: frozenset | None = None
    offset_ranges: tuple[tuple[int, int], ...] | None = None
    timestamp_range: tuple[int | None, int | None] | None = None
    excluded_topics: frozenset[str] = frozenset()
    excluded_partitions: frozenset[int] = frozenset()
    topic_patterns: tuple[tuple[str, str], ...] = ()

    def selects(self, topic: str, partition: int) -> bool:
        if self.topics is not None and topic not in self.topics:
            return False
        if topic in self.excluded_topics or partition in self.excluded_partitions:
            return False
        if not all(TOPIC_PATTERN_TESTS[kind](topic, text) for kind, text in self.topic_patterns):
            return False
        if self.partitions is not None:
            return partition in self.partitions or (topic, partition) in self.partitions
        return True


#: How each kind of :attr:`Predicates.topic_patterns` tests a topic name (Spark's StringStartsWith, StringEndsWith
#: and StringContains, case-sensitive as LIKE is)
TOPIC_PATTERN_TESTS = {"startswith": str.startswith, "endswith": str.endswith, "contains": str.__contains__}


@dataclass
class PartitionReport:
    """What planning found and decided for one topic-partition replica."""

    topic: str
    partition: int
    path: str
    log_dir: str | None
    log_start_offset: int | None = None
    log_end_offset: int | None = None
    high_watermark: int | None = None
    last_stable_offset: int | None = None
    upper_bound: int | None = None
    upper_bound_source: str | None = None
    start_offset: int | None = None  # resolved, after clamping
    end_offset: int | None = None
    segments_total: int = 0
    segments_pruned: int = 0
    bytes_total: int = 0
    bytes_planned: int = 0
    slices: int = 0
    notes: list[str] = field(default_factory=list)
    topic_id: str | None = None  # partition.metadata's (KIP-516; None before Kafka 2.8 or when absent)
    cluster_id: str | None = None  # the log dir's meta.properties
    #: offsets past this read's end, the log end, that the checkpoints say were acknowledged and flushed and the
    #: files lost (:func:`_acknowledged_loss`: the words of the DataLossError a read to latest raises), also when
    #: the end was given: a stream's micro-batch that reads to the log end says them (kafkaseg.streaming)
    lost_past_end: str | None = None
    #: those offsets, ``(first, end)``: what a stream compares to say them again only when they change
    lost_past_end_offsets: tuple[int, int] | None = None
    #: ``(first, end)`` of the offsets a start below the log start offset (or the first local offset) lost, said
    #: in :attr:`PlanReport.data_loss` in the words ``lost_below_start_words``: a rate-limited stream that retention
    #: overtook meets them again in micro-batch after micro-batch, and says only those it has not said
    #: (kafkaseg.streaming)
    lost_below_start: tuple[int, int] | None = None
    lost_below_start_words: str | None = None

    @property
    def name(self) -> str:
        return f"{self.topic}-{self.partition}"


class LenientDecision(NamedTuple):
    """A choice planning made only because the read is lenient (``onCorruption=skip``) that changes which records
    it returns, apart from the corrupt batches the reader skips and counts itself (the scan metrics do not show
    these): a transaction whose marker fails its CRC taken as aborted, an unreadable checkpoint's bound replaced
    by the log's, a transaction walk that forgets what was open at corrupt framing. ``[first_offset, end_offset)``
    are the offsets it concerns, None where unknown or unbounded."""

    partition: str  # topic-partition
    path: str  # the file it is about
    position: int | None  # the byte in it, when known
    first_offset: int | None
    end_offset: int | None
    decision: str

    def describe(self) -> str:
        at = f" @ byte {self.position}" if self.position is not None else ""
        return f"{self.partition}: {self.path}{at}: {self.decision} (onCorruption=skip)"


@dataclass
class PlanReport:
    """What a plan considered, pruned and chose: per partition (``partitions``), partitions dropped before planning
    (``partitions_pruned``: ``(topic, partition, reason)``), replica choices, indexes rebuilt in memory
    (``(segment, reason)``), data-loss findings (with ``failOnDataLoss=false``), other notes, and the folders of
    log dirs not read (``skipped_folders``: ``(path, reason)``, e.g. ``-delete``/``-future``/``-stray``).
    ``lenient``: the :class:`LenientDecision` s of an ``onCorruption=skip`` read (each also a note), which the
    entry points report with their read metrics."""

    options: dict = field(default_factory=dict)
    partitions: list[PartitionReport] = field(default_factory=list)
    partitions_pruned: list[tuple[str, int, str]] = field(default_factory=list)
    replicas: list[dict] = field(default_factory=list)
    indexes_rebuilt: list[tuple[str, str]] = field(default_factory=list)
    data_loss: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    skipped_folders: list[tuple[str, str]] = field(default_factory=list)  # (path, reason): not live partitions
    lenient: list[LenientDecision] = field(default_factory=list)

    @property
    def partitions_considered(self) -> int:
        return len(self.partitions) + len(self.partitions_pruned)

    @property
    def segments_considered(self) -> int:
        return sum(p.segments_total for p in self.partitions)

    @property
    def segments_pruned(self) -> int:
        return sum(p.segments_pruned for p in self.partitions)

    @property
    def bytes_total(self) -> int:
        return sum(p.bytes_total for p in self.partitions)

    @property
    def bytes_planned(self) -> int:
        return sum(p.bytes_planned for p in self.partitions)

    def offsets(self) -> dict[tuple[str, int], tuple[int | None, int | None]]:
        """Resolved ``[start, end)`` per topic-partition (of the chosen replica; the first, with replicas=all)."""
        out: dict[tuple[str, int], tuple[int | None, int | None]] = {}
        for p in self.partitions:
            out.setdefault((p.topic, p.partition), (p.start_offset, p.end_offset))
        return out

    def as_dict(self) -> dict:
        return {
            "options": self.options,
            "partitions_considered": self.partitions_considered,
            "segments_considered": self.segments_considered,
            "segments_pruned": self.segments_pruned,
            "bytes_total": self.bytes_total,
            "bytes_planned": self.bytes_planned,
            "partitions": [dict(vars(p)) for p in self.partitions],
            "partitions_pruned": [list(x) for x in self.partitions_pruned],
            "replicas": self.replicas,
            "indexes_rebuilt": [list(x) for x in self.indexes_rebuilt],
            "data_loss": self.data_loss,
            "notes": self.notes,
            "skipped_folders": [list(x) for x in self.skipped_folders],
            "lenient": [list(x) for x in self.lenient],
        }


@dataclass
class ScanPlan:
    slices: list[SegmentSlice]
    report: PlanReport

    def input_partitions(self, options: ReadOptions) -> list[tuple[SegmentSlice, ...]]:
        """The slices grouped into units of work (Spark input partitions): see :func:`pack_slices`."""
        return pack_slices(self.slices, options.split_size, options.open_cost,
                           options.min_partitions, packing=options.max_records_per_partition is None,
                           across_partitions=options.pack_topic_partitions)


def pack_slices(slices: Sequence[SegmentSlice], target_bytes: int, open_cost: int,
                min_partitions: int | None = None, *, packing: bool = True,
                across_partitions: bool = False) -> list[tuple[SegmentSlice, ...]]:
    """Group consecutive slices of one topic-partition replica into units of work of at most ``target_bytes``,
    each slice counting its bytes plus ``open_cost`` (Spark's file sources pack small files the same way:
    ``spark.sql.files.maxPartitionBytes``/``openCostInBytes``). A partition of many small segments (a quiet topic
    rolled hourly) becomes one task instead of hundreds, each of which costs a Spark task's overhead (tens of
    milliseconds) to read a few KiB; big slices (cut near ``splitSize``) stay alone.

    Slices of different topic-partitions are packed together only with ``across_partitions``
    (``packTopicPartitions``, on by default in the read options), and only small ones: see
    :func:`_pack_small_units`. Without it a scan has at least as many units as Spark's Kafka source, which reads
    each topic-partition in one task. With ``min_partitions`` above the number of units packing by partition gives
    (Spark divides only then), the topic-partitions are divided as Spark divides its ranges (:func:`_divide`), and
    if rounding leaves fewer units than asked for, the costliest units are halved (by cost) until there are
    enough; small topic-partitions are then never packed together. ``packing=False`` (used with
    ``maxRecordsPerPartition``, whose per-unit bound packing cannot see) gives one unit per slice. Order is kept:
    units (by their first slice), and slices within a unit, follow the plan."""
    if not packing:
        return [(s,) for s in slices]

    def pack(target: int) -> list[tuple[SegmentSlice, ...]]:
        units: list[tuple[SegmentSlice, ...]] = []
        current: list[SegmentSlice] = []
        current_cost = 0
        for piece in slices:
            cost = piece.size_bytes + open_cost
            if current and ((piece.topic, piece.partition, piece.partition_path)
                            != (current[0].topic, current[0].partition, current[0].partition_path)
                            or current_cost + cost > target):
                units.append(tuple(current))
                current, current_cost = [], 0
            current.append(piece)
            current_cost += cost
        if current:
            units.append(tuple(current))
        return units

    units = pack(target_bytes)
    if not min_partitions or len(units) >= min_partitions:
        # Spark's rule (KafkaOffsetRangeCalculator): minPartitions divides the work only when the ranges are fewer
        if not across_partitions:
            return units
        packed = _pack_small_units(units, target_bytes, open_cost, min_partitions)
        return packed if not min_partitions or len(packed) >= min_partitions else units
    units = _divide(units, open_cost, min_partitions)
    wanted = min(min_partitions or 0, len(slices))
    if len(units) < wanted:  # rounding or one slice larger than the target left too few units: halve the
        # costliest unit of several slices until there are enough
        order = {id(piece): k for k, piece in enumerate(slices)}

        def entry(unit):
            return -sum(s.size_bytes + open_cost for s in unit), order[id(unit[0])], unit

        heap = [entry(unit) for unit in units if len(unit) > 1]
        done = [unit for unit in units if len(unit) == 1]
        heapq.heapify(heap)
        count = len(units)
        while count < wanted and heap:
            unit = heapq.heappop(heap)[2]
            for half in _halved(unit, open_cost):
                if len(half) > 1:
                    heapq.heappush(heap, entry(half))
                else:
                    done.append(half)
            count += 1
        units = sorted(done + [item[2] for item in heap], key=lambda unit: order[id(unit[0])])
    return units


def _pack_small_units(units: list[tuple[SegmentSlice, ...]], target_bytes: int, open_cost: int,
                      min_partitions: int | None) -> list[tuple[SegmentSlice, ...]]:
    """Units of small topic-partitions packed together: a topic-partition that :func:`pack_slices` made one unit
    of, holding no more bytes than ``open_cost`` (it costs less to read than a task costs to start: a nearly empty
    partition, or a few new records of a stream's micro-batch), shares a unit with other such ones, in plan order,
    up to ``target_bytes`` of cost (each slice counting its bytes plus ``open_cost``), as Spark's file sources pack
    small files. A log dir of 5,000 nearly empty partitions is then about 160 tasks instead of 5,000, and no task
    reads more than ``target_bytes``; larger units stay as they are. With ``min_partitions`` the target is
    lowered as Spark's ``FilePartition.maxSplitBytes`` lowers it for ``spark.sql.files.minPartitionNum`` (the
    total cost over ``min_partitions``, but at least ``open_cost``). A merged unit takes the place of its first
    member."""
    def cost(unit: tuple[SegmentSlice, ...]) -> int:
        return sum(piece.size_bytes + open_cost for piece in unit)

    def key(unit: tuple[SegmentSlice, ...]) -> tuple:
        return unit[0].topic, unit[0].partition, unit[0].partition_path

    per_partition = collections.Counter(key(unit) for unit in units)
    # a topic-partition that is one small unit: the small last unit of a larger one stays where it is, after the
    # units before it (packed elsewhere it would be read before them)
    small = [k for k, unit in enumerate(units)
             if per_partition[key(unit)] == 1 and sum(piece.size_bytes for piece in unit) <= open_cost]
    if len(small) < 2:
        return units
    target = target_bytes
    if min_partitions:
        target = min(target, max(open_cost, sum(cost(unit) for unit in units) // min_partitions))
    merged: dict[int, list[SegmentSlice]] = {}  # first member's place -> its merged slices
    dropped: set[int] = set()
    current, current_cost = -1, 0
    for k in small:
        unit_cost = cost(units[k])
        if current >= 0 and current_cost + unit_cost <= target:
            merged[current].extend(units[k])
            current_cost += unit_cost
            dropped.add(k)
        else:
            current, current_cost = k, unit_cost
            merged[current] = list(units[k])
    return [tuple(merged[k]) if k in merged else unit for k, unit in enumerate(units) if k not in dropped]


def _divide(units: list[tuple[SegmentSlice, ...]], open_cost: int, min_partitions: int
            ) -> list[tuple[SegmentSlice, ...]]:
    """Spark's ``KafkaOffsetRangeCalculator.getRanges`` division, by cost instead of offsets: a topic-partition
    replica whose share of the total rounds to one part stays whole; the others share ``minPartitions`` minus those
    in proportion to their cost (``max(round(cost / total * parts), 1)``, Java's rounding). A partition's parts are
    taken from the units packing gave it (each unit gets at least one, the rest go where a unit's cost per part is
    highest) and each unit's slices are shared between its parts by cumulative cost (a slice goes to the part its
    middle falls in), so no unit grows past what packing allowed."""
    def cost(piece: SegmentSlice) -> int:
        return piece.size_bytes + open_cost

    def part_count(size: float, total: float, parts: int) -> int:
        return max(math.floor(size / total * parts + 0.5), 1) if total > 0 else 1

    groups: dict[tuple, list[tuple[SegmentSlice, ...]]] = {}
    for unit in units:
        first = unit[0]
        groups.setdefault((first.topic, first.partition, first.partition_path), []).append(unit)
    costs = {key: sum(cost(s) for unit in packed for s in unit) for key, packed in groups.items()}
    total = sum(costs.values())
    unsplit = {key for key, c in costs.items() if part_count(c, total, min_partitions) == 1}
    split_total = total - sum(costs[key] for key in unsplit)
    split_min = max(min_partitions - len(unsplit), 1)
    out: list[tuple[SegmentSlice, ...]] = []
    for key, packed in groups.items():
        parts = 1 if key in unsplit else part_count(costs[key], split_total, split_min)
        parts = min(parts, sum(len(unit) for unit in packed))  # a slice is never split: more parts are empty
        shares = [1] * len(packed)
        unit_costs = [sum(cost(s) for s in unit) for unit in packed]
        # each further part to the unit with the highest cost per part (a unit takes at most one per slice)
        heap = [(-unit_costs[j] / 1, j) for j in range(len(packed)) if len(packed[j]) > 1]
        heapq.heapify(heap)
        for _ in range(parts - len(packed)):
            if not heap:
                break
            _, k = heapq.heappop(heap)
            shares[k] += 1
            if shares[k] < len(packed[k]):
                heapq.heappush(heap, (-unit_costs[k] / shares[k], k))
        for unit, unit_cost, n in zip(packed, unit_costs, shares):
            n = min(n, len(unit))
            if n <= 1 or unit_cost <= 0:
                out.append(unit)
                continue
            share = unit_cost / n
            split: list[list[SegmentSlice]] = [[] for _ in range(n)]
            before = 0
            for piece in unit:
                split[min(n - 1, int((before + cost(piece) / 2) // share))].append(piece)
                before += cost(piece)
            out.extend(tuple(part) for part in split if part)
    return out


def _halved(unit: tuple[SegmentSlice, ...], open_cost: int) -> tuple[tuple[SegmentSlice, ...], ...]:
    """``unit`` (two slices or more) cut in two where its cumulative cost crosses half."""
    costs = [s.size_bytes + open_cost for s in unit]
    half, before, k = sum(costs) / 2, 0, 1
    for k in range(1, len(unit)):
        before += costs[k - 1]
        if before >= half:
            break
    return unit[:k], unit[k:]


#: A segment's largest timestamp when a lenient read cannot walk its tail: prunes nothing.
NO_TIMESTAMP_BOUND = 2**63 - 1


def _unwalkable(seg, reason: str, err: KafkaSegError) -> tuple[OffsetIndex, TimeIndex]:
    """Empty indexes for a segment whose own indexes cannot be used and whose log cannot be walked to rebuild them
    (corrupt framing): the segment is then read from its start, its timestamps are unknown (nothing is pruned by
    time), and the reader reports what is wrong with it (or, reading leniently, skips and counts it), after the
    records before it."""
    reason = f"{reason}; the log cannot be walked either ({err}), so the segment is read from its start"
    return (OffsetIndex(seg.base_offset, [], [], rebuilt=True, rebuild_reason=reason),
            TimeIndex(seg.base_offset, [], [], rebuilt=True, rebuild_reason=reason))


# --------------------------------------------------------------------------------------------------------------------
# Per-partition state (lazy: indexes are loaded only for the segments that need them)

class _WalkStopped(KafkaSegError):
    """A header walk of planning's met bad framing at ``position`` (what it got to)."""

    def __init__(self, position: int):
        super().__init__(f"bad framing at byte {position}")
        self.position = position


class _Partition:
    def __init__(self, pdir: PartitionDir, options: ReadOptions, report: PlanReport | None,
                 log_ends: "LogEndCache | None" = None, read_to: int | None = None,
                 choice_log_ends: ChoiceLogEnds | None = None):
        self.pdir = pdir
        self.options = options
        # where a stream's position says it read this log to: evidence for a last batch past a compaction gap
        # (PartitionDir.reached_end), given by kafkaseg.streaming; None for a batch read
        self.read_to = read_to
        self.report = report
        self.log_ends = log_ends  # log ends found before on the same listing, and where this one's is recorded
        # the log ends a stream's replica choice read (the walk's first step, taken where they stand: find_log_end)
        self.choice_log_ends = choice_log_ends
        self.fs = pdir.filesystem
        self.skipped_start: tuple[str, int, int] | None = None  # see _resolve (a start inside a hole)
        # (segment, byte, why, first, end, proven) of offsets an empty rolled segment lost (_empty_segment_loss)
        self.lost_before: list[tuple[str, int, str, int, int, bool]] = []
        # the partition's copies in other log dirs, which the replica choice passed over: a strict timestamp search
        # that meets damage in this one answers from one of them (_offset_for_timestamp), as a read falls back
        self.other_copies: tuple[PartitionDir, ...] = ()
        # the read's other log dirs (SegmentSlice.move_dirs): where the planned files are looked for when the
        # partition moved between log dirs meanwhile (_planned_reader)
        self.move_dirs: tuple[str, ...] = ()
        self._moved_from: list[str] = []  # (move_sources, once found)
        # where that answer is said without a report (resolve_offsets' ``notes``)
        self.copy_notes: list[str] | None = None
        self.segments: tuple[SegmentFiles, ...] = pdir.segments
        self.bases = [s.base_offset for s in self.segments]
        self._indexes: dict[int, tuple] = {}
        self._txn: dict[int, TransactionIndex] = {}
        # the walk that derives aborted transactions from the log (read_committed, a segment without a usable
        # .txnindex): segments [0, _txn_walked) replayed, the transactions open after each, and those open now
        self._txn_walked = 0
        self._txn_start = 0  # where the walk started: the first local segment, for a log dir extended with copies
        self._txn_evidence: str | None = None  # "" once looked for and none found
        self.log_end_position: int | None = None  # where the last segment's readable batches end, when cut short
        # (position, bytes, why) of corrupt bytes a lenient read leaves out after log_end_position: the read of the
        # slice ending there counts them as skipped (SegmentSlice.corrupt_tail), as the reader counts its own skips
        self.corrupt_tail: tuple[int, int, str] | None = None
        self._derived: dict[int, list] = {}
        self._unreadable_markers: dict[int, list] = {}  # per walked segment: headers of markers failing their CRC
        self._open_after: dict[int, dict[int, int]] = {}
        self._open_txns: dict[int, int] = {}
        self._leo: int | None = None
        self.leo_walk_clean = True  # the log end was found by a walk that met no corruption, torn append or zeros
        # whether the last segment's indexes, as the log end walk loaded them, hold an offset at or past the log end
        # (or were rebuilt, the files disagreeing with the log): the read of its last slice then looks at the files
        # (SegmentSlice.indexed_tail_check), and only then
        self.indexed_past_log_end = True
        self._tail_evidence_found: tuple | None = None  # see _tail_evidence
        self._segment_end: dict[int, int] = {}
        self._legacy: dict[int, bool] = {}
        self._time_judged: set[int] = set()  # segments whose .timeindex's last entry was checked (time_index_foreign)
        self._first_offsets: dict[tuple[int, int], int | None] = {}  # (segment, position) -> its batch's first offset
        # (segment, position) -> (start_entry, walk_from) of a start found by start_position (SegmentSlice's fields)
        self.start_points: dict[tuple[int, int], tuple[int | None, int | None]] = {}

    @property
    def name(self) -> str:
        return f"{self.pdir.topic}-{self.pdir.partition}"

    def move_sources(self) -> list[str]:
        """The folders renamed ``<tp>.<id>-delete`` beside the partition's that hold its planned files when it moved
        to another of the read's log dirs since planning (:func:`moved_partition`), else none: a deletion. A move
        found is kept for the partition's other segments (each asks when its file is gone: one look at the other
        log dirs, not one per segment); none found is asked again."""
        if self._moved_from:
            return self._moved_from
        pdir = self.pdir
        if not self.move_dirs or pdir.tiered is not None or not pdir.segments:
            return []
        planned = (pdir.log_start_offset, self._leo if self._leo is not None else pdir.segments[-1].base_offset)
        if moved_partition(pdir.topic, pdir.partition, pdir.path, self.fs, pdir.topic_id, self.move_dirs,
                           self.options, planned) is None:
            return []
        self._moved_from = move_sources(pdir.path, self.fs, pdir.topic, pdir.partition)
        return self._moved_from

    @functools.cached_property
    def planned_copy_states(self):
        """:attr:`SegmentSlice.copy_states` of the partition's slices (one object, pickled once with them)."""
        remote = self.pdir if self.pdir.tiered is not None else self.pdir.remote_below
        states = remote.copy_states if remote is not None else None
        return states.as_planned() if states is not None else None

    def lenient_decision(self, path: str, position: int | None, first_offset: int | None, end_offset: int | None,
                         decision: str, preport: PartitionReport | None = None) -> None:
        """Report a :class:`LenientDecision`, and its note (in ``preport``'s notes when given)."""
        if self.report is not None:
            entry = LenientDecision(self.name, path, position, first_offset, end_offset, decision)
            self.report.lenient.append(entry)
            (preport or self.report).notes.append(entry.describe())

    def next_base(self, i: int) -> int | None:
        return self.bases[i + 1] if i + 1 < len(self.bases) else None

    def indexes(self, i: int):
        if i not in self._indexes:
            seg = self.segments[i]
            try:
                bound = truncation_bound(self.pdir, seg.log_path, seg.base_offset)  # (the active segment's only)
                offset_index, time_index = load_indexes(seg, self.fs, max_batch_bytes=self.options.max_batch_bytes,
                                                        left_from=bound[0] if bound is not None else None)
            except CorruptDataError as err:  # only a rebuild walks the log: the files are missing or insane
                offset_index, time_index = _unwalkable(seg, "the index files are missing or unusable", err)
            self._set_indexes(i, offset_index, time_index)
        return self._indexes[i]

    def forget_indexes(self, i: int) -> None:
        """Forget segment ``i``'s loaded indexes (a later use loads them again), unless they were rebuilt from the
        log (a header walk of the segment, which a later use would make again)."""
        loaded = self._indexes.get(i)
        if loaded is not None and not any(getattr(index, "rebuilt", False) for index in loaded):
            del self._indexes[i]

    def _set_indexes(self, i: int, offset_index, time_index) -> None:
        for idx in (offset_index, time_index):
            if getattr(idx, "rebuilt", False) and self.report is not None:
                entry = (self.segments[i].log_path, f"{type(idx).__name__}: {idx.rebuild_reason}")
                if entry not in self.report.indexes_rebuilt:
                    self.report.indexes_rebuilt.append(entry)
        self._indexes[i] = (offset_index, time_index)

    def entry_problem(self, i: int, entry_offset: int, position: int) -> str | None:
        """Why the offset index entry ``(entry_offset, position)`` of segment ``i`` cannot be used, or None.

        An index can pass every sanity check and still point at the wrong bytes, and record bytes can parse as a
        header, so the batch at ``position`` is read whole and must carry a valid CRC. Its first offset must then
        be at or below the entry's offset and above the previous entry's (or the segment base), and its last
        offset below the next entry's (or the next segment's base). Brokers wrote an entry's offset as the
        append's first offset (0.8 to 1.x), its largest (2.x on), or the cleaner's largest retained one, at the
        position of the append's first batch, so nothing tighter holds. A legacy compressed wrapper's offset is
        its last inner one: its first comes from decoding it. An index rebuilt from the log is trusted."""
        offset_index, _ = self.indexes(i)
        if position == 0 or offset_index.rebuilt:
            return None
        seg = self.segments[i]
        k = int(np.searchsorted(offset_index.positions, position))
        above, below = entry_neighbours(offset_index.offsets, k, seg.base_offset, self.next_base(i))
        with SegmentReader(seg.log_path, self.fs) as reader:
            problem, first = entry_batch_problem(reader, position, entry_offset, above, below,
                                                 self.options.max_batch_bytes,
                                                 self.options.max_decompressed_batch_bytes)
        if problem is None:
            self._first_offsets[(i, position)] = first
        return problem

    def first_offset_at(self, i: int, position: int) -> int | None:
        """The first offset of the batch at ``position`` of segment ``i`` (a cut whose entry was checked has it
        already; else one header read, a legacy compressed wrapper decoded), None when no whole batch is there."""
        key = (i, position)
        if key not in self._first_offsets:
            try:
                with SegmentReader(self.segments[i].log_path, self.fs) as reader:
                    self._first_offsets[key] = batch_first_offset(reader, position, self.options.max_batch_bytes,
                                                                  self.options.max_decompressed_batch_bytes)
            except KafkaSegError:
                self._first_offsets[key] = None
        return self._first_offsets[key]

    def distrust_index(self, i: int, why: str, reason: str | None = None) -> None:
        """Replace segment ``i``'s indexes by in-memory rebuilds from its batch headers (reported: ``reason``, by
        default that an offset index entry points at the wrong bytes, ``why``). When the log itself cannot be
        walked, by empty indexes: the segment is then read from its start, and the reader reports (or, reading
        leniently, skips and counts) what is wrong with it."""
        seg = self.segments[i]
        reason = reason or f"offset index entry points at the wrong bytes ({why})"
        try:
            with SegmentReader(seg.log_path, self.fs) as reader:
                rebuilt = rebuild_indexes(reader, seg.base_offset, max_batch_bytes=self.options.max_batch_bytes,
                                          reason=reason)
        except KafkaSegError as err:
            rebuilt = _unwalkable(seg, reason, err)
        self._set_indexes(i, *rebuilt)

    def cuts(self, i: int, start: int, end: int) -> "_Cuts":
        """``(position, offset)`` of segment ``i``'s index entries strictly inside ``[start, end)``: where a
        slice may be cut (a view of the index's arrays: no Python object per entry)."""
        offset_index, _ = self.indexes(i)
        positions = offset_index.positions  # numpy, sorted (a sane index): a 1 GB segment has ~260k entries
        lo = int(np.searchsorted(positions, start, side="right"))
        hi = int(np.searchsorted(positions, end, side="left"))
        return _Cuts(positions[lo:max(lo, hi)], offset_index.offsets[lo:max(lo, hi)])

    def checked_floor(self, i: int, offset: int) -> tuple[int, int]:
        """``OffsetIndex.floor`` of segment ``i``, after :meth:`entry_problem` accepts the entry (else the
        index is rebuilt first)."""
        offset_index, _ = self.indexes(i)
        entry_offset, position = offset_index.floor(offset)
        why = self.entry_problem(i, entry_offset, position)
        if why is not None:
            self.distrust_index(i, f"entry {entry_offset} -> byte {position}: {why}")
            offset_index, _ = self.indexes(i)
            entry_offset, position = offset_index.floor(offset)
        return entry_offset, position

    def transactions_evidence(self) -> str | None:
        """Why this partition may have aborted transactions that a missing ``.txnindex`` would hide, or None when
        its files say it has none: no ``.txnindex`` anywhere, and producer snapshots that list no producer which
        ever wrote a transaction marker (coordinatorEpoch >= 0) or has one open. Without a readable snapshot
        there is no such proof."""
        if self._txn_evidence is None:
            self._txn_evidence = self._find_transactions_evidence() or ""
        return self._txn_evidence or None

    def _find_transactions_evidence(self) -> str | None:
        # (a tiered copy's packed transaction index is not counted: copies without one had no abort, and counting
        # old copies' would walk a whole local log whose producers expired long since; review round 4)
        with_index = [s for s in self.segments if s.txnindex_path]
        if with_index:
            return f"{len(with_index)} of its segments have a .txnindex"
        lost = [s for s in self.segments if s.indexes_lost]
        if lost:  # (its producers' snapshot may have expired them long since: no proof either way)
            return f"{len(lost)} of its tiered copies had a transaction index in an .indexes object now missing"
        if not self.pdir.snapshot_paths:
            return "it has no producer snapshot to show it never saw a transaction"
        for path in self.pdir.snapshot_paths:
            try:
                transactional = lists_transactional_producers(path, self.fs)
            except (CorruptDataError, LayoutError) as err:
                return f"producer snapshot {path} is unreadable ({err})"
            if transactional:
                return f"producer snapshot {path} lists transactional producers"
        return None

    def txn_index(self, i: int) -> TransactionIndex:
        """Segment ``i``'s aborted transactions: its ``.txnindex``, or, when the file is missing (Kafka writes it
        lazily, but it can also be lost), unreadable or insane (which sends a broker into recovery, rebuilding
        it), derived from the log by replaying producer state from the first segment (reported as rebuilt). A
        missing file in a partition whose files show no transactions at all (:meth:`transactions_evidence`)
        means none were aborted, as it does to the broker: that costs no walk of a non-transactional log."""
        if i not in self._txn:
            seg = self.segments[i]
            txnindex_path, txnindex_window = index_location(seg, "txnindex")
            # A tiered copy without one had no aborted transaction: RemoteLogManager.copyLogSegment hands the
            # plugin the segment's transaction index only if its file exists, and the broker creates it at the
            # first abort. (Not so a copy whose .indexes object is gone: what it held is unknown.)
            if not txnindex_path and ((seg.tiered is not None and not seg.indexes_lost)
                                      or self.transactions_evidence() is None):
                self._txn[i] = TransactionIndex(seg.base_offset)
                return self._txn[i]
            reason = "the copy's .indexes object is missing" if seg.indexes_lost else "missing .txnindex file"
            if (txnindex_path and txnindex_window is None and self.move_dirs
                    and not _fs.exists(_fs.parent(txnindex_path), self.fs)):
                # the partition moved to another log dir since planning: its planned .txnindex is in the folder
                # renamed -delete (move_sources), as its .log is
                txnindex_path = next((name for name in moved_names(txnindex_path, self.move_sources())
                                      if _fs.exists(name, self.fs)), txnindex_path)
            if txnindex_path:
                try:
                    index = TransactionIndex.load(txnindex_path, seg.base_offset, self.fs, window=txnindex_window)
                    problems = index.sanity_problems(  # (a rolled segment's entries bounded by its end)
                        self.segments[i + 1].base_offset if i + 1 < len(self.segments) else None)
                    stale = None if problems or not self.pdir.past_recovery_point(i) else self._unindexed_abort(i, index)
                    if not problems and stale is None:
                        self._txn[i] = index
                        return index
                    reason = (f"corrupt .txnindex ({problems[0]})" if problems else
                              f"stale .txnindex (no entry for producer {stale[0]}'s ABORT marker at offset "
                              f"{stale[1]}, in a segment past the recovery point, whose index a broker's recovery "
                              "rebuilds)")
                except (CorruptDataError, LayoutError) as err:
                    reason = f"unreadable .txnindex ({err})"
            entries = self._walk_transactions(i)
            self._report_unreadable_markers(i, entries)
            index = TransactionIndex(seg.base_offset, tuple(entries), rebuilt=True, rebuild_reason=reason)
            if self.report is not None:
                self.report.indexes_rebuilt.append((seg.log_path, (
                    f"TransactionIndex: {reason}: aborted transactions derived from the log ({len(entries)} found "
                    "by replaying producer state over batch headers from the partition's first segment, because "
                    f"{self.transactions_evidence() or 'its .txnindex is unusable'})")))
            self._txn[i] = index
        return self._txn[i]

    def _report_unreadable_markers(self, i: int, entries: list) -> None:
        """The transactions of segment ``i`` that the walk took as aborted because their marker fails its CRC, now
        that the segment's derived entries are used (a segment whose own ``.txnindex`` decides leaves them out)."""
        ends = {(txn.producer_id, txn.last_offset): txn.first_offset for txn in entries}
        for header in self._unreadable_markers.get(i, ()):
            first = ends.get((header.producer_id, header.base_offset))
            if first is not None:
                self.lenient_decision(
                    self.segments[i].log_path, header.position, first, header.base_offset + 1,
                    f"the transaction marker of producer {header.producer_id} at offset {header.base_offset} fails "
                    "its CRC, so which end it was is unknown: the transaction is taken as aborted, so its records "
                    f"in offsets [{first}, {header.base_offset}] are left out (also if it committed)")

    def _unindexed_abort(self, i: int, index: TransactionIndex) -> tuple[int, int] | None:
        seg = self.segments[i]
        with _planned_reader(seg, self.fs, self.move_sources) as reader:
            try:
                return unindexed_abort(reader, index, max_batch_bytes=self.options.max_batch_bytes,
                                       open_at_base=transactions_open_at(self.pdir, seg.base_offset))
            except CorruptDataError:
                return None  # the log walk that would replace the file meets the same framing: let it decide

    def _walk_transactions(self, i: int) -> list:
        """The aborted transactions whose markers are in segment ``i``, from one header walk of the partition
        that starts at its first segment (a transaction can begin segments before its marker) and is extended
        only as far as asked. In a log dir extended with tiered-storage copies it starts at the first local segment,
        from the transactions its producer snapshot lists as open there, when the segment asked for is local: the
        copies' history (days of objects, decompressed) is not walked for the local log's markers."""
        if i < self._txn_start:  # a copy asked for after a walk started at the local log: from the start
            self._txn_walked = self._txn_start = 0
            self._open_txns = {}
        elif self._txn_walked == 0 and self.pdir.remote_below is not None:
            local = next((k for k, s in enumerate(self.segments) if s.tiered is None), None)
            opened = (snapshot_transactions_at(self.pdir, self.segments[local].base_offset)
                      if local is not None and 0 < local <= i else None)
            if opened is not None:
                self._txn_walked = self._txn_start = local
                self._open_txns = dict(opened)
        while self._txn_walked <= i:
            j = self._txn_walked
            seg = self.segments[j]
            lenient = self.options.on_corruption == "skip"
            errors: list = []
            markers = self._unreadable_markers.setdefault(j, [])
            try:
                with _planned_reader(seg, self.fs, self.move_sources) as reader:
                    last = j == len(self.segments) - 1
                    self._derived[j] = segment_aborted_txns(reader, self._open_txns,
                                                            max_batch_bytes=self.options.max_batch_bytes,
                                                            errors=errors if lenient else None,
                                                            log_end=self.log_end_offset()
                                                            if last and self.log_end_position is not None else None,
                                                            unreadable_markers=markers)
            except CorruptDataError as err:
                raise type(err)(f"cannot derive aborted transactions for read_committed (no usable .txnindex): "
                                f"{err.detail} (onCorruption=skip derives them up to the corruption)",
                                path=err.path, position=err.position) from err
            for err in errors:  # markers failing their CRC are reported where their segment's entries are used
                if not isinstance(err, CrcMismatchError):
                    self.lenient_decision(
                        err.path or seg.log_path, err.position, None, None,
                        f"aborted transactions derived past corrupt data ({err.detail}), forgetting what was open "
                        "there: records of a transaction aborted after it may be returned")
            self._open_after[j] = dict(self._open_txns)
            self._txn_walked += 1
        return self._derived[i]

    def open_txns_after(self, i: int) -> dict[int, int] | None:
        """Transactions (producerId -> first offset) still open at the end of segment ``i``, when the walk has
        passed it."""
        return self._open_after.get(i)

    @property
    def cleaner_offset(self) -> int | None:
        """The partition's ``cleaner-offset-checkpoint`` entry (offsets missing below it were compacted away), as
        the cleaner takes it (:func:`~kafkaseg.storage.layout.valid_cleaner_offset`)."""
        return valid_cleaner_offset(self.pdir.cleaner_offset, self.log_end_offset())

    def log_end_offset(self) -> int:
        """The partition's log end offset. When the active segment cannot be walked to its end (corrupt framing,
        e.g. an append a crash tore, or a batch whose base offset, which no CRC covers, goes back), it is the end
        of the last whole batch before the corruption, as Kafka's recovery would truncate there. A strict read
        accepts that only when the checkpointed high watermark lies at or below it (the torn bytes were never
        acknowledged); otherwise it raises. A lenient read steps over the
        corruption as its reader will and takes the last batch found. Noted either way.

        With :attr:`log_ends`, a log end found before for this listing of the partition, with the same options,
        whose last segment is unchanged (:meth:`LogEndCache.found`), is taken with its notes instead of walking the
        segment again; one found here is recorded there."""
        if self._leo is None:
            found = self.log_ends.found(self) if self.log_ends is not None else None
            if found is not None:
                found.apply(self)
                return self._leo
            read_ms = time.time() * 1000
            notes = len(self.report.notes) if self.report is not None else 0
            rebuilt = len(self.report.indexes_rebuilt) if self.report is not None else 0
            self._find_log_end()
            if self.log_ends is not None and self.report is not None:
                self.log_ends.record(self, read_ms, tuple(self.report.notes[notes:]),
                                     tuple(self.report.indexes_rebuilt[rebuilt:]))
        return self._leo

    def _find_log_end(self) -> None:
        """Walk the last segment for :meth:`log_end_offset` (sets it, with what the walk found on the way):
        :func:`~kafkaseg.storage.layout.find_log_end`, which lenient lookups share."""
        def index_start() -> int:
            offset_index, _ = self.indexes(len(self.segments) - 1)
            return int(offset_index.positions[-1]) if offset_index is not None and len(offset_index) else 0

        found = find_log_end(self.pdir, lenient=self.options.on_corruption == "skip",
                             verify_crc=self.options.verify_crc, max_batch_bytes=self.options.max_batch_bytes,
                             index_start=index_start, unacknowledged_past=self._unacknowledged_past,
                             read_to=self.read_to, known=self.choice_log_ends)
        self.leo_walk_clean = found.clean
        if found.position is not None:
            self.log_end_position = found.position
        if found.corrupt_tail is not None:
            self.corrupt_tail = found.corrupt_tail
        if self.report is not None:
            self.report.notes.extend(found.notes)
        self._leo = self.bases[0] if found.offset is None else found.offset
        loaded = self._indexes.get(len(self.segments) - 1)
        if loaded is not None and not any(getattr(index, "rebuilt", False) for index in loaded):
            self.indexed_past_log_end = indexed_past_end(*loaded, 0, self._leo) is not None

    def _unacknowledged_past(self, leo: int) -> bool:
        """Whether the checkpointed high watermark lies at or below ``leo`` (and bounds the read): bytes past it
        were never acknowledged, so a torn write there is one Kafka's recovery would simply truncate."""
        hw = self.pdir.high_watermark
        return hw is not None and hw <= leo and self.options.upper_bound != "logEndOffset"

    def segment_end_offset(self, i: int) -> int:
        """Offset after the last complete batch of segment ``i`` (one index interval of headers)."""
        if i == len(self.segments) - 1:
            return self.log_end_offset()
        if i not in self._segment_end:
            from kafkaseg.storage.segment import log_end_offset

            offset_index, _ = self.indexes(i)
            try:
                self._segment_end[i] = log_end_offset(self.segments[i], filesystem=self.fs,
                                                      offset_index=offset_index,
                                                      max_batch_bytes=self.options.max_batch_bytes)
            except CorruptDataError:
                if self.options.on_corruption != "skip":
                    raise
                self._segment_end[i] = self.next_base(i)  # unknown: assume no gap before the next segment
        return self._segment_end[i]

    def segment_of(self, offset: int) -> int:
        """Index of the segment whose range [base, next base) holds ``offset`` (0 when below the first base)."""
        return max(0, bisect.bisect_right(self.bases, offset) - 1)

    def largest_timestamp(self, i: int) -> int:
        """The segment's largest timestamp: its time index's last entry (the broker writes the segment max there on
        roll and clean shutdown), and for the last segment, or one past the recovery point whose time index a crash
        may have cut short, also the headers of the batches its time index may not cover (see below)."""
        if self.legacy_segment(i):
            # v0 compressed wrappers can hold v1 records with timestamps (KAFKA-4298's cleaner output), which the
            # decoder returns and neither the time index nor any batch header shows: unknown
            return NO_TIMESTAMP_BOUND
        offset_index, time_index = self.indexes(i)
        largest = time_index.max_timestamp
        last = i == len(self.segments) - 1
        if last or (self.pdir.past_recovery_point(i) and not time_index.rebuilt):
            # The active segment's last batches are in the broker's memory only. And a crash can leave any segment
            # past the recovery point with a time index short of its last entries (the roll's included), whose
            # pages never reached the disk while the log's did: LogSegment.recover rebuilds it on restart. Every
            # batch appended before the time index's last entry was written is covered by it (its timestamp is the
            # max so far), so the walk starts at the batch holding that entry's offset, or the offset index's last.
            start = (int(offset_index.offsets[-1]), int(offset_index.positions[-1])) if len(offset_index) else (
                offset_index.base_offset, 0)
            if len(time_index):
                start = min(start, offset_index.floor(time_index.last_entry[1]), key=lambda each: each[1])
            elif not last:
                start = (offset_index.base_offset, 0)
            end = None
            if last:
                self.log_end_offset()  # settles where a corrupt active segment's readable batches end
                end = self.log_end_position
            entry = time_index.last_entry if len(time_index) else (-1, offset_index.base_offset)
            left, start = self._left_entries(i, entry, start) if last else (None, start[1])
            if end is not None and start >= end and left is None:
                return largest  # the last entry is at or past the readable end: nothing after it to walk
            try:
                with SegmentReader(self.segments[i].log_path, self.fs) as reader:
                    largest = largest_timestamp_walked(
                        entry, lambda position: reader.iter_headers(position, end,
                                                                    max_batch_bytes=self.options.max_batch_bytes),
                        start, left)[0]
            except CorruptDataError:
                if self.options.on_corruption != "skip":
                    raise
                return NO_TIMESTAMP_BOUND  # unknown: nothing may be pruned by time
        return NO_TIMESTAMP_BOUND if largest < 0 else largest  # no timestamped batch (an empty segment): unknown

    def _left_entries(self, i: int, entry: tuple[int, int], start: tuple[int, int]
                      ) -> tuple[LeftEntries | None, int]:
        """:func:`~kafkaseg.storage.indexes.left_entries` of the active segment ``i`` (None for a time index rebuilt
        from the log, which holds no entry a truncation left), its start checked by :meth:`entry_problem`."""
        offset_index, time_index = self.indexes(i)
        if time_index.rebuilt:
            return None, start[1]

        def before(index, bound: int) -> int:  # (the number of entries below the bound: a prefix of the file's)
            past = np.flatnonzero(index.offsets >= bound)
            return int(past[0]) if past.size else len(index)

        def time_before(bound: int) -> tuple[int, int]:
            k = before(time_index, bound)
            return time_index.entry(k - 1) if k else (-1, self.segments[i].base_offset)

        def offset_before(bound: int) -> int:
            k = before(offset_index, bound)
            return int(offset_index.positions[k - 1]) if k else 0

        return left_entries(self.pdir, self.segments[i], entry, start, time_before=time_before,
                            offset_before=offset_before,
                            start_problem=lambda offset, position: self.entry_problem(i, offset, position))

    def time_index_foreign(self, i: int, entry: tuple[int, int] | None = None) -> bool:
        """Whether segment ``i``'s ``.timeindex`` proves to be another segment's (swapped or copied: its relative
        offsets fit, its timestamps do not), checking ``entry`` (default its last, once per segment) against the
        batch holding its offset (:func:`~kafkaseg.storage.indexes.walked_time_entry_problem`; one index interval
        of headers from the offset index's floor). When it is, the segment's indexes are rebuilt from its batches
        (reported in ``indexes_rebuilt``). A rebuilt index, or damage on the way, is not judged."""
        offset_index, time_index = self.indexes(i)
        if time_index.rebuilt or not len(time_index):
            return False
        if entry is None:
            if i in self._time_judged:
                return False
            self._time_judged.add(i)
            entry = time_index.last_entry
        offset = entry[1]

        def walk():
            with SegmentReader(self.segments[i].log_path, self.fs) as reader:
                yield from reader.iter_headers(offset_index.floor(offset)[1],
                                               max_batch_bytes=self.options.max_batch_bytes)

        problem = walked_time_entry_problem(walk, entry)
        if problem is None:
            return False
        self.distrust_index(i, problem, foreign_time_index(entry, problem))
        return True

    def time_out_of_order(self, i: int) -> bool:
        """Whether segment ``i``'s largest timestamp is not above segment ``i - 1``'s and one of their time indexes
        proved another segment's (:func:`~kafkaseg.storage.indexes.time_pair_foreign`, :meth:`time_index_foreign`),
        and is rebuilt."""
        return time_pair_foreign(i, self._known_largest_timestamp, self.time_index_foreign)

    def _known_largest_timestamp(self, i: int) -> int | None:
        """:meth:`largest_timestamp` of segment ``i``, None when unknown."""
        largest = self.largest_timestamp(i)
        return None if largest == NO_TIMESTAMP_BOUND else largest

    def legacy_segment(self, i: int) -> bool:
        """Whether segment ``i`` starts with a magic 0/1 batch (one header read, cached). Message formats only move
        up within a log, so a segment that starts with a v2 batch holds no v0 wrapper."""
        if i not in self._legacy:
            seg = self.segments[i]
            try:
                with SegmentReader(seg.log_path, self.fs) as reader:
                    first = reader.header_at(0, max_batch_bytes=self.options.max_batch_bytes)
                self._legacy[i] = first is not None and first.magic < 2
            except KafkaSegError:
                self._legacy[i] = True  # unknown: do not prune by time
        return self._legacy[i]

    # -- exact batch boundaries ------------------------------------------------------------------------------
    def start_position(self, i: int, offset: int) -> int:
        """Position of the first batch of segment ``i`` that can hold ``offset`` or later offsets (its last offset
        >= ``offset``): the offset-index floor, then headers up to the next index entry."""
        seg = self.segments[i]
        if offset <= seg.base_offset:
            return 0
        _, floor_position = self.checked_floor(i, offset)
        offset_index, _ = self.indexes(i)
        limit = self._next_entry_position(offset_index, floor_position, seg.log_size)
        # The walk starts an entry earlier (when that one checks out), so the batch at the floor entry is checked
        # against the one before it too: one more index interval of headers
        k = int(np.searchsorted(offset_index.positions, floor_position, side="left"))
        earlier = None
        if 0 < k <= len(offset_index.positions) and floor_position:
            earlier, earlier_offset = int(offset_index.positions[k - 1]), int(offset_index.offsets[k - 1])
            if self.entry_problem(i, earlier_offset, earlier) is not None:
                earlier = None
        elif floor_position:
            earlier = 0
        try:
            with SegmentReader(seg.log_path, self.fs) as reader:
                if earlier is not None:
                    try:
                        position = self._walk_to(reader, earlier, offset, limit)
                    except KafkaSegError:  # (bad framing before the floor entry: the walk from there, as before)
                        earlier = None
                if earlier is None:
                    position = self._walk_to(reader, floor_position, offset, limit)
        except _WalkStopped as stopped:
            position = stopped.position  # the reader will report the corruption; where the walk got is a safe start
        except KafkaSegError:
            position = floor_position
        position = min(position, seg.log_size)
        if position:
            positions = offset_index.positions
            k = int(np.searchsorted(positions, position, side="left"))
            at_entry = k < len(positions) and int(positions[k]) == position and not offset_index.rebuilt
            self.start_points[(i, position)] = self.slice_start(
                i, int(offset_index.offsets[k]) if at_entry else None, int(positions[k - 1]) if k else 0, position)
        return position

    def slice_start(self, i: int, entry: int | None, walk_from: int | None, position: int
                    ) -> tuple[int | None, int | None]:
        """:attr:`SegmentSlice.start_entry` and :attr:`~SegmentSlice.walk_from` of a slice of segment ``i`` starting
        at byte ``position`` (> 0) at index entry offset ``entry`` (None: at none), the position before it being
        ``walk_from``, both fit to the file as planned. The active segment's ``.index`` may hold, past where a
        follower's truncation may have cut it (:func:`~kafkaseg.storage.layout.truncation_bound`), entries of the
        truncated generation (``AbstractIndex.truncateToEntries`` only moves the write position): one may sit at a
        new batch that ends elsewhere, or inside one. The read takes the start entry as the last offset of the
        batches written from the slice's start (and the file rewritten past the high watermark when none ends
        there: ``scan._SliceDecoder.check_start``), and walks headers from ``walk_from`` to the start. So an entry
        at or past the bound is kept only when a batch from ``position`` ends at its offset (a header walk to it,
        mostly one header), else None (the read judges the start as at no entry); a ``walk_from`` past the bound's
        entries only when it is a batch boundary: an index entry checked already or now (:meth:`entry_problem`, the
        rule for a slice cut: one batch read with its CRC), else (no entry there) when a header walk from it lands
        at ``position``; else the position of the last entry below the bound (0 when none), a prefix the truncation
        left alone."""
        seg = self.segments[i]
        bound = truncation_bound(self.pdir, seg.log_path, seg.base_offset)
        check_entry = entry is not None and entry >= bound[0] if bound is not None else False
        if bound is None or (not check_entry and (walk_from is None or walk_from >= position
                                                  or self._first_offsets.get((i, walk_from)) is not None)):
            return entry, walk_from
        offset_index, _ = self.indexes(i)
        kept = int(np.searchsorted(offset_index.offsets, bound[0], side="left"))  # (a sane index: sorted)
        below = int(offset_index.positions[kept - 1]) if kept else 0
        limit = self.options.max_batch_bytes
        with SegmentReader(seg.log_path, self.fs) as reader:
            if check_entry:
                found = None
                try:
                    found = next((h.last_offset for h in reader.iter_headers(position, max_batch_bytes=limit)
                                  if h.last_offset >= entry), None)
                except KafkaSegError:
                    pass
                entry = entry if found == entry else None
            if (walk_from is None or not below < walk_from < position
                    or self._first_offsets.get((i, walk_from)) is not None):
                return entry, walk_from
            k = int(np.searchsorted(offset_index.positions, walk_from, side="left"))
            if k < len(offset_index) and int(offset_index.positions[k]) == walk_from:
                sound = self.entry_problem(i, int(offset_index.offsets[k]), walk_from) is None
            else:
                sound = False
                try:
                    for header in reader.iter_headers(walk_from, max_batch_bytes=limit):
                        sound = header.position == position
                        if header.position >= position:
                            break
                except KafkaSegError:
                    pass
        return entry, walk_from if sound else below

    def end_position(self, i: int, offset: int) -> int:
        """Position just past the last batch of segment ``i`` that can hold an offset below ``offset``."""
        seg = self.segments[i]
        next_base = self.next_base(i)
        if next_base is not None and offset >= next_base:
            return seg.log_size
        if offset <= seg.base_offset:
            return 0
        offset_index, _ = self.indexes(i)
        offsets = offset_index.offsets.tolist()
        slot = bisect.bisect_left(offsets, offset)  # first entry with offset >= `offset`: its batch is the last needed
        if slot + 1 < len(offsets):
            why = self.entry_problem(i, offsets[slot + 1], int(offset_index.positions[slot + 1]))
            if why is not None:
                self.distrust_index(i, f"entry {offsets[slot + 1]}: {why}")
                offset_index, _ = self.indexes(i)
                offsets = offset_index.offsets.tolist()
                slot = bisect.bisect_left(offsets, offset)
        fallback = int(offset_index.positions[slot + 1]) if slot + 1 < len(offsets) else seg.log_size
        _, position = self.checked_floor(i, offset - 1)  # that entry's batch ends below `offset`: needed in full
        try:
            with SegmentReader(seg.log_path, self.fs) as reader:
                walk = reader.iter_headers(position, max_batch_bytes=self.options.max_batch_bytes)
                for header in walk:
                    if header.position >= fallback:
                        return header.position
                    legacy_wrapper = header.magic < 2 and header.codec != 0
                    if header.base_offset >= offset and not legacy_wrapper:
                        return header.position
                    if header.last_offset >= offset:
                        return header.end
                    position = header.end
                return walk.end_position if walk.tail is None else seg.log_size
        except KafkaSegError:
            return fallback

    def _walk_to(self, reader: SegmentReader, position: int, offset: int, limit: int) -> int:
        """:meth:`start_position`'s header walk from ``position``: the first batch whose last offset reaches
        ``offset``, or at ``limit``; the batch before a step where offsets go back (a base offset, outside the CRC,
        moved: the read starts at the batch they go back below and judges the step, instead of this walk stepping
        past a batch by offsets it never had). Bad framing raises :class:`_WalkStopped` with where it got."""
        previous = None  # (position, last offset) of the batch walked before
        try:
            for header in reader.iter_headers(position, max_batch_bytes=self.options.max_batch_bytes):
                if previous is not None and (header.base_offset if header.magic >= 2
                                             else header.last_offset) <= previous[1]:
                    return previous[0]
                if header.last_offset >= offset or header.position >= limit:
                    return header.position
                previous = (header.position, header.last_offset)
                position = header.end
        except KafkaSegError as err:
            raise _WalkStopped(position) from err
        return position

    @staticmethod
    def _next_entry_position(offset_index, position: int, size: int) -> int:
        positions = offset_index.positions.tolist()
        slot = bisect.bisect_right(positions, position)
        return positions[slot] if slot < len(positions) else size


#: How long (ms) a segment must have been unchanged when it was read for what was read of it to be reused while its
#: listed size and mtime still hold (git's "racy clean" rule): an append within the mtime's granularity (milliseconds
#: on a local disk, seconds on S3; a preallocated active segment keeps its size) would otherwise go unseen.
RACY_MS = 2000


class _LogEnd(NamedTuple):
    """What :meth:`_Partition.log_end_offset` found of one partition folder as listed: the log end and the state
    the walk set on the way, and the notes and rebuilt indexes it reported."""

    pdir: PartitionDir  # the listing's object: another listing (or a relisting) is another folder state
    inputs: tuple  # _log_end_inputs of the options it was found with
    read_ms: float  # the wall clock when the walk began
    leo: int
    walk_clean: bool
    log_end_position: int | None
    corrupt_tail: tuple[int, int, str] | None
    indexed_past_log_end: bool
    notes: tuple[str, ...]
    indexes_rebuilt: tuple[tuple[str, str], ...]
    last_indexes: tuple | None  # the last segment's (offset index, time index) the walk loaded, when small

    def apply(self, part: _Partition) -> None:
        """Give ``part`` this log end, and report to its report what the walk reported, as the walk would have."""
        part._leo, part.leo_walk_clean = self.leo, self.walk_clean
        part.log_end_position, part.corrupt_tail = self.log_end_position, self.corrupt_tail
        part.indexed_past_log_end = self.indexed_past_log_end
        if part.report is not None:
            part.report.indexes_rebuilt.extend(entry for entry in self.indexes_rebuilt
                                               if entry not in part.report.indexes_rebuilt)
            part.report.notes.extend(self.notes)
        if self.last_indexes is not None and len(part.segments) - 1 not in part._indexes:
            part._indexes[len(part.segments) - 1] = self.last_indexes


def _log_end_inputs(part: _Partition) -> tuple:
    """The options :meth:`_Partition.log_end_offset` depends on (not the starting and ending offsets, nor the
    topics: a stream's ranges and its micro-batch's plan differ in those), and the stream position it was given as
    evidence (:attr:`_Partition.read_to`: the same for a stream's range and the plan of its next micro-batch)."""
    options = part.options
    return options.max_batch_bytes, options.verify_crc, options.on_corruption, options.upper_bound, part.read_to


class LogEndCache:
    """The log ends that :func:`available_range` found (a walk of each partition's last segment, from its offset
    index's last entry, and of a zero-filled tail), for :func:`plan_scan` of the same listing to take instead of
    walking again: a stream's start and first micro-batch end are ranges, and that batch's plan needed the same
    walks. One is taken only for the very :class:`~kafkaseg.storage.layout.PartitionDir` it was found on (the same
    listing: not a relisted folder), with the same :func:`_log_end_inputs`, when the last segment had not changed
    for :data:`RACY_MS` when it was walked and still has the size, mtime and file (inode) the listing saw; else
    the plan walks. The last segment's indexes that the walk loaded come along when small
    (:attr:`HELD_INDEX_ENTRIES`)."""

    #: The most index entries (offset and time index together) of a last segment whose loaded indexes are kept for
    #: the plan (a plan loads them again, as for the walk): an idle partition's are few, and a stream of thousands
    #: of partitions must not hold every active segment's index arrays between its start and its first plan.
    HELD_INDEX_ENTRIES = 64

    def __init__(self):
        self._found: dict[str, _LogEnd] = {}  # by partition folder path

    def record(self, part: _Partition, read_ms: float, notes: tuple[str, ...],
               indexes_rebuilt: tuple[tuple[str, str], ...]) -> None:
        loaded = part._indexes.get(len(part.segments) - 1)
        if loaded is not None and sum(len(index) for index in loaded) > self.HELD_INDEX_ENTRIES:
            loaded = None
        self._found[part.pdir.path] = _LogEnd(part.pdir, _log_end_inputs(part), read_ms, part._leo,
                                              part.leo_walk_clean, part.log_end_position, part.corrupt_tail,
                                              part.indexed_past_log_end, notes,
                                              indexes_rebuilt, loaded)

    def found(self, part: _Partition) -> _LogEnd | None:
        """The log end recorded for ``part``'s folder, when it may stand for a walk now (see the class)."""
        found = self._found.get(part.pdir.path)
        if found is None or found.pdir is not part.pdir or found.inputs != _log_end_inputs(part):
            return None
        last = part.segments[-1]
        if last.tiered is not None or not 0 < last.mtime_ms < found.read_ms - RACY_MS:
            return None
        return found if unchanged_since_listed(last, part.fs) else None


# --------------------------------------------------------------------------------------------------------------------
# Offsets for times

def _offset_for_timestamp(part: _Partition, timestamp: int, log_start: int, upper: int
                          ) -> tuple[int | None, str | None]:
    """Kafka's ListOffsets rule through :class:`kafkaseg.lookup.PartitionLookup` (one time-index entry per segment,
    one index interval of log), capped at this scan's upper bound instead of the last fetchable offset; with the
    search's note when it found nothing for a reason worth telling. -2 and -1 are ListOffsets' EARLIEST_TIMESTAMP and
    LATEST_TIMESTAMP, which Spark's Kafka source passes to it as they are: the log start offset and this scan's upper
    bound (the high watermark, or the last stable offset under read_committed)."""
    if timestamp == EARLIEST:
        return log_start, None
    if timestamp == LATEST:
        return upper, None
    options = part.options

    def search(pdir: PartitionDir) -> tuple[int | None, str | None, list]:
        with PartitionLookup(pdir, max_batch_bytes=options.max_batch_bytes, verify_crc=options.verify_crc,
                             checkpoints_checked=True,  # _bounds applied the checkpoint policy
                             lenient=options.on_corruption == "skip") as lookup:
            found = lookup.offset_for_timestamp(timestamp)
            # a rolled segment cut short below the answer whose lost records may have held it (the search went
            # past them to the next segment's): the answer rests on lost offsets, as `kafkaseg offsets` fails it
            # (_lost_below); another copy answers (below), or a strict read fails with the loss; a lenient one (or
            # failOnDataLoss=false with no other copy) keeps the answer and says it in the plan's data_loss
            cut = lookup.rolled_cut_below(found, timestamp)
            if cut is not None and cut.proven:
                if options.on_corruption != "skip" and (options.fail_on_data_loss or part.other_copies):
                    raise cut.error()
                if part.report is not None:
                    line = f"{part.name}: the search for timestamp {timestamp}: {cut.summary()}"
                    if line not in part.report.data_loss:
                        part.report.data_loss.append(line)
            if part.report is not None:  # indexes the search did not use (missing, stale, another segment's)
                for path, reason in lookup.stats.rebuilt_indexes:
                    entry = (path, f"the search for timestamp {timestamp}: {reason}")
                    if entry not in part.report.indexes_rebuilt:
                        part.report.indexes_rebuilt.append(entry)
            return found, lookup.search_note if found is None else None, lookup.stats.skipped

    try:
        found, note, skipped = search(part.pdir)
    except CorruptDataError as err:
        # another copy answers, as the scan reads a corrupt batch's offsets from another (not with
        # onCorruption=skip: the search goes past the damage then); one that lacks what the answer rests on, from
        # the log start to the record found (or the upper bound), is passed over
        if options.on_corruption == "skip" or not part.other_copies:
            raise
        (found, note, skipped), switched = from_other_copies(
            part.pdir, part.other_copies, err, search,
            lambda done: (log_start, done[0] + 1 if done[0] is not None and done[0] < upper else upper),
            how="Read another by giving its log dir alone, or every copy with replicas=all")
        line = f"{part.name}: the search for timestamp {timestamp}: {other_copy_line(switched)}"
        if part.report is not None:
            part.report.notes.append(line)
        elif part.copy_notes is not None:
            part.copy_notes.append(line)
    for path, position, detail in skipped:
        part.lenient_decision(path, position, None, None,
                              f"the search for timestamp {timestamp} went past corrupt bytes there ({detail}): "
                              "records after them in that segment were not searched")
    if found is None or found < log_start or found >= upper:
        return None, note
    return found, None


def offset_for_timestamp(partition_dir: PartitionDir, timestamp: int, options: ReadOptions | None = None, *,
                         other_copies: tuple[PartitionDir, ...] = (), notes: list[str] | None = None) -> int | None:
    """Kafka's ListOffsets for ``timestamp`` (ms) on one partition: the first record offset at or after the log
    start offset whose timestamp >= ``timestamp``, below the upper bound; None when there is none. ``other_copies``
    and ``notes``: as :func:`resolve_offsets` (a strict search meeting damage answers from another copy)."""
    options = options or ReadOptions()
    part = _Partition(partition_dir, options, None)
    part.other_copies, part.copy_notes = other_copies, notes
    if not part.segments:
        return None
    bounds = _bounds(part, None)
    return _offset_for_timestamp(part, timestamp, bounds.log_start, bounds.upper)[0]


# --------------------------------------------------------------------------------------------------------------------
# Resolving [start, end)

@dataclass
class _Bounds:
    log_start: int
    log_end: int
    upper: int
    upper_source: str
    high_watermark: int | None
    last_stable: int | None


# Checkpoints that decide where a read starts or ends; the others (recovery point, cleaner offset) only inform.
_BOUNDING_CHECKPOINTS = {
    REPLICATION_OFFSET_CHECKPOINT: ("the high watermark (where 'latest' ends)", "upperBound=logEndOffset"),
    LOG_START_OFFSET_CHECKPOINT: ("the log start offset (where 'earliest' starts)", None),
}


def _check_checkpoints(part: _Partition, preport: PartitionReport | None) -> None:
    """A corrupt checkpoint that bounds this read is an error unless reading leniently, where the bound falls
    back (log end offset, first segment's base), reported as a :class:`LenientDecision`: it must not silently widen
    what is returned."""
    for name, why in part.pdir.unreadable_checkpoints:
        if name not in _BOUNDING_CHECKPOINTS:
            continue
        what, way_around = _BOUNDING_CHECKPOINTS[name]
        if name == REPLICATION_OFFSET_CHECKPOINT and part.options.upper_bound == "logEndOffset":
            continue
        if part.options.on_corruption == "skip":
            path = _fs.join(part.pdir.log_dir, name) if part.pdir.log_dir else name
            if name == REPLICATION_OFFSET_CHECKPOINT:
                part.lenient_decision(path, None, None, None, f"unreadable ({why}), so {what} of {part.name} is "
                                      "unknown: it falls back to the log end offset, which may return records "
                                      "never acknowledged", preport)
            else:
                start = part.pdir.log_start_offset
                part.lenient_decision(path, None, start, None, f"unreadable ({why}), so {what} of {part.name} is "
                                      f"unknown: it falls back to the first segment's base {start}, which may "
                                      "return records already deleted", preport)
            continue
        hint = f"pass {way_around} or onCorruption=skip" if way_around else "pass onCorruption=skip"
        raise CorruptCheckpointError(f"{name} of {part.pdir.log_dir} is unreadable ({why}), so {what} of "
                                     f"{part.name} is unknown; {hint} to read without it")


def _bounds(part: _Partition, preport: PartitionReport | None) -> _Bounds:
    pdir, options = part.pdir, part.options
    _check_checkpoints(part, preport)
    log_start = pdir.log_start_offset
    leo = part.log_end_offset()
    hw = pdir.high_watermark
    if options.upper_bound == "logEndOffset":
        upper, source = leo, "log end offset (upperBound=logEndOffset)"
    elif hw is None:
        upper, source = leo, "log end offset (no high watermark in replication-offset-checkpoint)"
        if preport is not None:
            preport.notes.append(f"{part.name}: replication-offset-checkpoint has no high watermark for this "
                                 f"partition; reading up to the log end offset {leo}")
    elif hw > leo:
        upper, source = leo, f"log end offset (high watermark {hw} is above it: incomplete copy?)"
        if preport is not None:
            preport.notes.append(high_watermark_above_note(part.name, hw, leo, pdir.path))
    elif hw < log_start:  # UnifiedLog.updateHighWatermark raises it to the log start
        upper, source = min(log_start, leo), f"log start offset (high watermark {hw} is below it)"
        if preport is not None:
            preport.notes.append(f"{part.name}: high watermark {hw} is below the log start offset {log_start}, "
                                 "which a broker takes instead")
    else:
        upper, source = hw, "high watermark"
    if (preport is not None and hw is not None and options.upper_bound != "logEndOffset"
            and flushed_past_end(pdir, leo, walk_clean=part.leo_walk_clean,
                                 as_listed=ListingCheck(pdir, part.segments).recovery_point) is not None):
        # (offsets flushed past the log end that no consumer had seen: a note, as a broker's LogLoader clamps the
        # recovery point to the log end without a word)
        preport.notes.append(f"{part.name}: " + flushed_above_words(pdir.recovery_point, hw, leo, pdir.path))
    lso = None
    if options.read_committed:
        errors: list = []
        lso = last_stable_offset(pdir, max_batch_bytes=options.max_batch_bytes,
                                 errors=errors if options.on_corruption == "skip" else None, log_end=leo)
        for err in errors:
            part.lenient_decision(err.path or pdir.path, err.position, None, None,
                                  f"the last stable offset skips corrupt framing ({err.detail}), forgetting the "
                                  "transactions open there: records of a transaction still open may be returned",
                                  preport)
        if lso is not None and lso < upper:
            upper, source = lso, "last stable offset (read_committed)"
    if log_start > upper and preport is not None:
        preport.notes.append(f"{part.name}: log start offset {log_start} is above the upper bound {upper}")
    below = pdir.below_local_log_note()
    if below is not None and preport is not None:
        preport.notes.append(f"{part.name}: {below}; earliest is the first local offset {log_start}")
    return _Bounds(log_start, leo, upper, source, hw, lso)


def high_watermark_above_note(name: str, high_watermark: int, log_end: int, path: str) -> str:
    """The note of a read whose partition's high watermark is above its log end (the read, and ``latest``, stop at
    the log end); ``kafkaseg consume`` says it too, and the other tools say the same words
    (:func:`~kafkaseg.storage.layout.high_watermark_above_words`)."""
    return f"{name}: " + high_watermark_above_words(high_watermark, log_end, path)


def lost_copy_reached_by_time(pdir: PartitionDir, timestamp: int, found: int | None
                              ) -> tuple[str, int, int] | None:
    """The live copy missing from the bucket (of :attr:`PartitionDir.live_copies_lost`, ``(segment id, first,
    end)``) that holds the broker's answer to a lookup of ``timestamp``, given ``found``, the answer of the files
    there (None: none): RemoteLogManager.findOffsetByTimestamp searches the first live copy whose recorded
    ``maxTimestampMs`` is at or above the time, so the first missing copy below ``found`` whose largest timestamp
    reaches it (or is not recorded) holds it, and a fetch from there fails. None when none does (``LATEST``
    resolves to the end; ``EARLIEST`` reaches every copy). ``found`` in a missing copy (an empty log's start, which
    no file holds: every copy missing) is lost with it."""
    if timestamp == LATEST:
        return None
    states = pdir.lost_copy_states
    for lost in pdir.live_copies_lost:
        if found is not None and lost[1] > found:
            break
        known = states.copies.get(lost[0]) if states is not None else None
        if known is None or known.max_timestamp_ms is None or known.max_timestamp_ms >= timestamp:
            return lost
    return None


def _copies_named(copies) -> str:
    """``(segment id, first, end)`` of tiered-storage copies, as messages name them."""
    return ", ".join(f"{segment_id} (offsets {first}-{end - 1})" for segment_id, first, end in copies)


def _acknowledged_loss(part: _Partition, bounds: _Bounds) -> tuple[str, tuple[int, int]] | None:
    """What a read that ends at ``part``'s upper bound loses past it, when that is the log end (the high watermark
    is above it: bounds noted it) and the broker had acknowledged and flushed offsets there that are not in the
    files (:func:`~kafkaseg.storage.layout.acknowledged_loss_end`: the rule and the words offsets, describe and
    locate use too, through layout.lost_tail), as its words and the offsets ``(first, end)`` lost, or None. With ``upperBound=logEndOffset`` too: that read ends at the
    log end as well, and loses the same offsets past it. A read to latest raises it as data loss; a stream's
    micro-batch that reaches the log end says it (:attr:`PartitionReport.lost_past_end`), and so does a stream that
    stands there (:attr:`AvailableRange.lost_past_end`)."""
    leo = bounds.log_end
    if bounds.upper != leo:
        return None
    end = acknowledged_loss_end(part.pdir, leo, walk_clean=part.leo_walk_clean,
                                as_listed=ListingCheck(part.pdir, part.segments).recovery_point)
    if end is None:
        return None
    return (f"{part.name}: " + acknowledged_loss_words(bounds.high_watermark, part.pdir.recovery_point, leo,
                                                       part.pdir.path), (leo, end))


def _resolve(part: _Partition, bounds: _Bounds, report: PlanReport | None, preport: PartitionReport | None
             ) -> tuple[int, int]:
    options = part.options
    topic, partition = part.pdir.topic, part.pdir.partition
    name = part.name
    fail = options.fail_on_data_loss

    def loss(message: str) -> None:
        if fail:
            raise DataLossError(message + " (set failOnDataLoss=false to read what is there)")
        if report is not None:
            report.data_loss.append(message)
        if preport is not None:
            preport.notes.append(message)

    # start -----------------------------------------------------------------------------------------------------
    limit = options.starting
    explicit_start = start_by_time = False
    if limit.kind == "earliest":
        start = bounds.log_start
    elif limit.kind == "offsets":
        value = limit.lookup(topic, partition)
        if value is None or value == EARLIEST:
            start = bounds.log_start
        else:
            start, explicit_start = value, True
    else:
        ts = limit.timestamp if limit.kind == "timestamp" else limit.lookup(topic, partition)
        start_by_time = ts is not None
        if ts is None:
            start = bounds.log_start
        else:
            found, why = _offset_for_timestamp(part, ts, bounds.log_start, bounds.upper)
            because = f" ({why})" if why else ""
            lost_answer = lost_copy_reached_by_time(part.pdir, ts, found)
            if lost_answer is not None:
                # the broker's answer (its first live copy whose maxTimestampMs reaches the time) is in a live copy
                # missing from the bucket: a fetch from it fails there. The start is that copy's first offset (where
                # in it is unknown): the loss is the copies' from there, said as for a start given there, below
                start, explicit_start, start_by_time = lost_answer[1], True, False
                if preport is not None:
                    preport.notes.append(
                        f"{name}: the first record at or after timestamp {ts} is in a live tiered-storage copy "
                        f"__remote_log_metadata lists that is missing: {_copies_named([lost_answer])} (its recorded "
                        f"largest timestamp reaches {ts}); the start is its first offset, {lost_answer[1]}")
            elif found is not None:
                start = found
            elif options.starting_offsets_by_timestamp_strategy == "latest":
                start = bounds.upper
                if preport is not None:
                    preport.notes.append(f"{name}: no record at or after timestamp {ts}{because}; starting at "
                                         f"latest ({bounds.upper}) per startingOffsetsByTimestampStrategy=latest")
            else:
                raise InvalidOptionError(
                    f"no offset matched the starting timestamp {ts} in {name} (option {limit.option!r}){because}; "
                    "set startingOffsetsByTimestampStrategy=latest to start at the latest offset instead")
    # live copies __remote_log_metadata lists that are missing from the bucket, below the log read (the log dir
    # read alone, or the oldest copies missing): lost to a start from the broker's earliest, or the one given,
    # below them. (Those between the copies read are lost to a read over them: below, with the gaps in copies.)
    lost_copies = [(segment_id, max(first, start) if explicit_start else first, last)
                   for segment_id, first, last in part.pdir.live_copies_lost
                   if last <= bounds.log_start and (not explicit_start or last > start)]
    if lost_copies and not start_by_time and start <= bounds.log_start:
        # the broker's earliest is the checkpointed log start, below: a fetch from it fails on the missing copies
        if part.pdir.tiered is not None:  # the copies read without a log dir: the metadata says the log held these
            read = f"the copies there, in {part.pdir.path}, are read from the oldest one, at {bounds.log_start}"
        elif part.pdir.remote_below is not None:
            read = f"the copies there are read with the log dir {part.pdir.path}, from {bounds.log_start}"
        else:
            read = f"the log dir {part.pdir.path} is read alone, from its first local offset {bounds.log_start}"
        loss(f"{name}: offsets below {bounds.log_start} are in live tiered-storage copies __remote_log_metadata "
             f"lists that are missing from the copies given: {_copies_named(lost_copies)}; {read}")
        explicit_start = False  # (said: the start moves up to the log start, as for any start below it)
        start = bounds.log_start
    # live copies __remote_log_metadata lists that are missing from the bucket above the newest copy there (the
    # copies read without a log dir): the remote tier held their offsets (COPY_SEGMENT_FINISHED), so they are lost
    # to a read reaching past the newest copy there, where latest is (the files' end)
    above = [c for c in part.pdir.live_copies_lost if c[2] > bounds.log_end]
    above_said = False
    if explicit_start:
        if start < bounds.log_start:
            below = part.pdir.below_local_log
            if below is not None and start >= below[0]:
                words = (f"{name}: starting offset {start} is below the first local offset {bounds.log_start} in "
                         f"{part.pdir.path}; {part.pdir.below_local_log_note(start)}")
            else:
                words = (f"{name}: starting offset {start} is below the log start offset {bounds.log_start} in "
                         f"{part.pdir.path}; offsets [{start}, {bounds.log_start}) are gone")
            if preport is not None:
                preport.lost_below_start, preport.lost_below_start_words = (start, bounds.log_start), words
            loss(words)
            start = bounds.log_start
        elif start > bounds.upper:
            # kafkaseg's own rule: Spark's batch reader resolves latest as the end and reads nothing for a start
            # above it, silently; here a start past what the files hold is reported (a typo, or a truncated copy)
            named = [(segment_id, max(first, start), last) for segment_id, first, last in above if last > start]
            loss(f"{name}: starting offset {start} is above the available end {bounds.upper} "
                 f"({bounds.upper_source}) in {part.pdir.path}" + (
                     f": offsets from there are in live tiered-storage copies __remote_log_metadata lists that are "
                     f"missing from the copies given: {_copies_named(named)}" if named else ""))
            above_said = True
        elif bounds.log_start <= start < bounds.upper:
            i = part.segment_of(start)
            next_base = part.next_base(i)
            if next_base is not None:
                seg_end = part.segment_end_offset(i)
                # judged by the first offset missing, not the start, as a read across the gap is
                # (scan._check_segment_end): below the cleaner checkpoint the gap may be compaction's
                cleaner = part.cleaner_offset
                compacted = below_cleaner_checkpoint(seg_end, cleaner)
                cut = None
                if seg_end <= start < next_base:
                    # unless the segment's own indexes prove the offsets there lost (a rolled segment cut short,
                    # or copied while it was still active), as a read across them finds (scan._check_segment_end)
                    cut = rolled_cut_of(part.pdir, i, offset_index=part.indexes(i)[0],
                                        end_offset=seg_end, max_batch_bytes=options.max_batch_bytes)
                if cut is not None and start < cut.end_offset:
                    loss(f"{name}: the starting {cut.summary(start)}")
                    if cut.end_offset < next_base:
                        part.skipped_start = (part.segments[i].log_path, cut.end_offset, next_base)
                    start = next_base
                elif seg_end <= start < next_base and not compacted:
                    # as a fetch there returns the next batch, and Spark's source reads past offsets at or above
                    # the earliest that are not there: a follower of a compacted topic and a log mid-cleaning
                    # hold such holes with no checkpoint entry, so they cannot be called loss (a lost file also
                    # looks like this: noted, and kafkaseg verify warns)
                    if preport is not None:
                        preport.notes.append(
                            f"{name}: starting offset {start} is in a hole between segments "
                            f"{part.segments[i].log_path} (ends at {seg_end}) and the next one (base {next_base}) "
                            f"that the cleaner checkpoint ({cleaner if cleaner is not None else 'none'}) does not "
                            f"explain; reading from {next_base}")
                    # the read reports it with the offsets it finds missing (SegmentSlice.missing_before)
                    part.skipped_start = (part.segments[i].log_path, start, next_base)
                    start = next_base

    # end -------------------------------------------------------------------------------------------------------
    # the newest copy read without a log dir, its last batch before its recorded end (its manifest's, or
    # __remote_log_metadata's): no next segment to find the offsets between missing against (as the read does:
    # scan._check_segment_end), so a read whose range reaches them is told here, as kafkaseg verify says it. Not
    # when the metadata records the copy with the size it has (a compaction before the topic went tiered removed
    # them), nor past a torn or corrupt tail (the read reports that)
    last, cut_short = part.segments[-1] if part.segments else None, None
    if (last is not None and last.tiered is not None and last.remote_end is not None and not last.remote_whole
            and part.leo_walk_clean and bounds.log_end <= last.remote_end
            and _ends_with_a_batch(part, len(part.segments) - 1)):
        cut_short = (f"{name}: offsets [{bounds.log_end}, {last.remote_end + 1}) are in no tiered-storage copy: the "
                     f"newest copy read, {_fs.redact(last.log_path)}, ends at offset {bounds.log_end - 1}, before its "
                     f"recorded end offset {last.remote_end} (its manifest's or __remote_log_metadata's). A tiered "
                     "topic is never compacted (Kafka refuses remote storage with cleanup.policy=compact), so they "
                     "were deleted: the copy is cut short at a batch boundary")
    limit = options.ending
    explicit_end = end_by_time = False
    time_reach = None  # the end of a missing live copy holding the broker's answer to an ending time (below)
    if limit.kind == "latest":
        end = bounds.upper
    elif limit.kind == "offsets":
        value = limit.lookup(topic, partition)
        if value is None or value == LATEST:
            end = bounds.upper
        else:
            end, explicit_end = value, True
            if end > bounds.upper:
                if cut_short is not None and bounds.upper == bounds.log_end:
                    loss(cut_short)  # (first: why the end is short of the copy's recorded one)
                named = [(segment_id, max(first, start), min(last, end)) for segment_id, first, last in above
                         if max(first, start) < min(last, end)]
                if named and not above_said:  # (first: why the end is short)
                    loss(f"{name}: ending offset {end} is above the end {bounds.upper} of the copies in "
                         f"{part.pdir.path}: offsets in live tiered-storage copies __remote_log_metadata lists are "
                         f"missing from the copies given: {_copies_named(named)}")
                    above_said = True
                loss(f"{name}: ending offset {end} is above the available end {bounds.upper} "
                     f"({bounds.upper_source}) in {part.pdir.path}")
                end = bounds.upper
    else:
        ts = limit.timestamp if limit.kind == "timestamp" else limit.lookup(topic, partition)
        end_by_time = ts is not None
        found, why = (None, None) if ts is None else _offset_for_timestamp(part, ts, bounds.log_start, bounds.upper)
        end = bounds.upper if found is None else found
        lost_answer = None if ts is None else lost_copy_reached_by_time(part.pdir, ts, found)
        if lost_answer is not None:
            # the broker's answer (as for a start by time) is in a live copy missing from the bucket: its read ends
            # in that copy (where is unknown), so no record after it is the read's (the files' answer, in a later
            # copy, may come after records created before the time). The end is that copy's end: its offsets are
            # the loss said below, for the range reaching them
            time_reach, why = lost_answer[2], None
            end = min(end, lost_answer[2])
            if preport is not None:
                preport.notes.append(
                    f"{name}: the first record at or after ending timestamp {ts} is in a live tiered-storage copy "
                    f"__remote_log_metadata lists that is missing: {_copies_named([lost_answer])} (its recorded "
                    f"largest timestamp reaches {ts}); the read ends with it, at {end}")
        if why and preport is not None:
            preport.notes.append(f"{name}: no record at or after ending timestamp {ts} ({why}); reading to "
                                 f"the end ({end})")
    lost_past_end, lost_offsets = (_acknowledged_loss(part, bounds) if end == bounds.upper else None) or (None, None)
    if preport is not None:
        preport.lost_past_end, preport.lost_past_end_offsets = lost_past_end, lost_offsets
    if lost_past_end is not None and not explicit_end:  # (a given end asked for no more than the files hold)
        loss(lost_past_end)
    if cut_short is not None and not explicit_end and end >= bounds.log_end:  # (a read to latest, or by time)
        loss(cut_short)
    # offsets of a tiered topic in no copy and no local segment (a copy missing from the bucket), in the range read
    # (from where it was asked to start: a start inside them moved past them above)
    read_from = part.skipped_start[1] if part.skipped_start is not None else start
    # those of live copies __remote_log_metadata lists that are missing from the bucket named by copy (once: not
    # also as a gap)
    missing = [c for c in part.pdir.live_copies_lost if c[2] > bounds.log_start]
    # a read to latest (or by a time no record there reaches) reaches past the newest copy there, into those above
    reach = time_reach if time_reach is not None else (
        None if not explicit_end and end == bounds.upper and not above_said else end)
    lost_copies = [(segment_id, max(first, read_from), last if reach is None else min(last, reach))
                   for segment_id, first, last in missing
                   if max(first, read_from) < (last if reach is None else min(last, reach))]
    if lost_copies:
        read = (f"the copies there, in {part.pdir.path}, are read" if part.pdir.tiered is not None else
                f"the copies there are read with the log dir {part.pdir.path}")
        loss(f"{name}: offsets in live tiered-storage copies __remote_log_metadata lists are missing from the "
             f"copies given: {_copies_named(lost_copies)}; {read}")
    for gap in copy_gaps(part.pdir, read_from, end, end_of=part.segment_end_offset) if read_from < end else ():
        for piece in gap.outside((a, b) for _, a, b in missing):
            loss(f"{name}: {piece.describe()}")
    if start > end:
        # this partition's start and end both chosen by the user, at least one by time, the wrong way round: a typo,
        # not data (a start past the log's end is the data-loss rule's)
        if ((explicit_start or start_by_time) and (explicit_end or end_by_time) and (start_by_time or end_by_time)
                and start <= bounds.upper):
            raise InvalidOptionError(
                f"{name}: the start offset {start} ({options.starting.option or 'startingOffsets'}) is after the "
                f"end offset {end} ({options.ending.option or 'endingOffsets'}); check the time window (Spark's "
                "Kafka source fails such a read: 'Beginning offset ... is after the ending offset')")
        if preport is not None:
            preport.notes.append(f"{name}: resolved start {start} is above the end {end}: nothing to read")
    return start, end


def _ends_with_a_batch(part: _Partition, i: int) -> bool:
    """Whether segment ``i``'s last whole batch (the one before its log end) ends at its listed size: no torn or
    corrupt bytes follow it, which the read reports as corruption (a walk of one index interval). False when that
    cannot be read."""
    seg = part.segments[i]
    try:
        _, position = part.checked_floor(i, max(seg.base_offset, part.segment_end_offset(i) - 1))
        with SegmentReader(seg.log_path, part.fs) as reader:
            walk = reader.iter_headers(position, max_batch_bytes=part.options.max_batch_bytes)
            for _ in walk:
                pass
            return walk.tail is None and walk.end_position == seg.log_size
    except KafkaSegError:
        return False


def resolve_offsets(partition_dir: PartitionDir, options: ReadOptions, *,
                    other_copies: tuple[PartitionDir, ...] = (), notes: list[str] | None = None) -> tuple[int, int]:
    """The ``[start, end)`` offsets ``options`` select in one partition replica (Spark semantics, see the module
    doc). Raises :class:`DataLossError` (failOnDataLoss) or :class:`InvalidOptionError` (a starting timestamp
    with no match under strategy error). An empty partition gives ``(base, base)``. ``other_copies``: the
    partition's copies in other log dirs that a strict timestamp search meeting damage answers from, as a plan's
    does (:func:`_offset_for_timestamp`), saying so in ``notes`` when given."""
    def resolve(current: PartitionDir) -> tuple[int, int]:
        part = _Partition(current, options, None)
        part.other_copies, part.copy_notes = other_copies, notes
        if not part.segments:
            start = current.log_start_offset or 0
            return start, start
        return _resolve(part, _bounds(part, None), None, None)

    return relisted(partition_dir, resolve)


# --------------------------------------------------------------------------------------------------------------------
# Slicing

class _Cuts:
    """A piece's candidate cut points, ``(position, offset)`` of index entries: views of its segment's index
    arrays. Planning held them as a list of tuples, about 150 bytes an entry: 4 GB to plan 100 GiB of Kafka's
    default segments (found in review). Indexing gives a tuple of ints, slicing another view."""

    __slots__ = ("positions", "offsets")

    def __init__(self, positions=None, offsets=None):
        self.positions = np.empty(0, np.int64) if positions is None else positions
        self.offsets = np.empty(0, np.int64) if offsets is None else offsets

    def __len__(self) -> int:
        return len(self.positions)

    def __bool__(self) -> bool:
        return len(self.positions) > 0

    def __getitem__(self, k):
        if isinstance(k, slice):
            return _Cuts(self.positions[k], self.offsets[k])
        return int(self.positions[k]), int(self.offsets[k])

    def __iter__(self):
        return zip(self.positions.tolist(), self.offsets.tolist())

    def __eq__(self, other) -> bool:
        return list(self) == list(other)


@dataclass
class _Piece:
    """A slice under construction plus the index entries inside it (candidate cut points)."""

    part: _Partition
    segment: int
    start_position: int
    end_position: int
    start_offset: int
    end_offset: int
    cuts: _Cuts  # (position, offset) of index entries strictly inside the byte range
    start_entry: int | None = None  # offset of the index entry the piece starts at, when it was cut there
    cuts_from: Any = None  # the OffsetIndex the cuts came from (a rebuild replaces it: see _with_current_cuts)
    gaps: tuple[tuple[int, int], ...] = ()  # offsets in [start_offset, end_offset) left out (SegmentSlice.offset_gaps)
    walk_from: int | None = None  # SegmentSlice.walk_from
    # SegmentSlice.start_entry: start_entry when it is the index file's (not an index rebuilt from the log's headers)
    file_entry: int | None = None

    @property
    def size(self) -> int:
        return self.end_position - self.start_position

    def split_at(self, k: int) -> tuple["_Piece", "_Piece"]:
        position, offset = self.cuts[k]
        left = _Piece(self.part, self.segment, self.start_position, position, self.start_offset, self.end_offset,
                      self.cuts[:k], self.start_entry, self.cuts_from, self.gaps, self.walk_from, self.file_entry)
        # (the entry before this cut: the previous cut candidate, else where this piece starts)
        walk_from = self.cuts[k - 1][0] if k > 0 else self.start_position
        file_entry, walk_from = self.part.slice_start(
            self.segment, None if self.cuts_from is None or self.cuts_from.rebuilt else offset, walk_from, position)
        right = _Piece(self.part, self.segment, position, self.end_position, self.start_offset, self.end_offset,
                       self.cuts[k + 1:], offset, self.cuts_from, self.gaps, walk_from, file_entry)
        return left, right

    def with_current_cuts(self) -> "_Piece":
        """This piece, with its cuts taken anew if its segment's index was rebuilt since they were listed (an
        entry found wrong while planning another piece of the segment)."""
        if not self.cuts:
            return self
        offset_index, _ = self.part.indexes(self.segment)
        if self.cuts_from is offset_index:
            return self
        return _Piece(self.part, self.segment, self.start_position, self.end_position, self.start_offset,
                      self.end_offset, self.part.cuts(self.segment, self.start_position, self.end_position),
                      self.start_entry, offset_index, self.gaps, self.walk_from, self.file_entry)

    def check_cut(self, k: int) -> bool:
        """Whether cut ``k`` may become a slice boundary (:meth:`_Partition.entry_problem`); when it may not, the
        segment's index is rebuilt (reported) and the caller takes :meth:`with_current_cuts` again."""
        position, offset = self.cuts[k]
        why = self.part.entry_problem(self.segment, offset, position)
        if why is None:
            return True
        self.part.distrust_index(self.segment, f"entry {offset}: {why}")
        return False


def _intersect(start: int, end: int, ranges: Sequence[tuple[int, int]] | None) -> list[tuple[int, int]]:
    if start >= end:
        return []
    if ranges is None:
        return [(start, end)]
    merged: list[list[int]] = []
    for lo, hi in sorted((max(lo, start), min(hi, end)) for lo, hi in ranges):
        if lo >= hi:
            continue
        if merged and lo <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], hi)
        else:
            merged.append([lo, hi])
    return [(lo, hi) for lo, hi in merged]


def _pieces_for_range(part: _Partition, lo: int, hi: int, ts_lo: int | None, kept: set[int], *,
                      forget: bool = False) -> Iterator[_Piece]:
    """The pieces of ``[lo, hi)``, one per segment that may hold some of it (segments older than ``ts_lo`` pruned).
    ``forget``: forget each segment's index arrays once the caller is done with its piece (or it was pruned), so
    planning holds one segment's at a time (:meth:`_Partition.forget_indexes`); all but those of the range's last
    piece (:func:`_last_of_range`), which the caller may join with the next range's first piece and forgets itself."""
    first = part.segment_of(lo)
    for i in range(first, len(part.segments)):
        if part.segments[i].base_offset >= hi:
            break
        piece = _piece_of_segment(part, i, lo, hi, ts_lo)
        if piece is not None:
            kept.add(i)
            yield piece
        if forget and (piece is None or not _last_of_range(part, i, hi)):
            part.forget_indexes(i)


def _last_of_range(part: _Partition, i: int, hi: int) -> bool:
    """Whether segment ``i`` is the last that can hold offsets below ``hi``."""
    return i + 1 >= len(part.segments) or part.segments[i + 1].base_offset >= hi


def _wants_cuts(part: _Partition, start_position: int, end_position: int) -> bool:
    """Whether a piece over ``[start_position, end_position)`` may be cut (needs its index entries listed)."""
    return end_position - start_position > 0 and (
        end_position - start_position > part.options.split_size or bool(part.options.max_records_per_partition)
        or bool(part.options.min_partitions))


def _joined(a: _Piece, b: _Piece) -> _Piece:
    """One piece for ``a`` and ``b``, pieces of one segment for consecutive offset ranges whose bytes meet (they
    share a batch, or touch): their bytes read once, the offsets between the ranges left out (``gaps``)."""
    part, i = a.part, a.segment
    start, end = min(a.start_position, b.start_position), max(a.end_position, b.end_position)
    cuts = part.cuts(i, start, end) if _wants_cuts(part, start, end) else _Cuts()
    return _Piece(part, i, start, end, a.start_offset, b.end_offset, cuts, a.start_entry,
                  part.indexes(i)[0] if cuts else None, a.gaps + ((a.end_offset, b.start_offset),) + b.gaps,
                  a.walk_from, a.file_entry)


def _piece_of_segment(part: _Partition, i: int, lo: int, hi: int, ts_lo: int | None) -> _Piece | None:
    seg = part.segments[i]
    next_base = part.next_base(i)
    if next_base is not None and next_base <= lo:
        return None
    if seg.log_size == 0:
        # its first missing offset is its base: below the cleaner checkpoint, a gap compaction may have left
        # (scan._check_segment_end), unless its own indexes name offsets it no longer holds (layout.rolled_cut_of)
        if next_base is not None:
            lo = _empty_segment_loss(part, i, lo, hi)
        if next_base is not None and part.report is not None and lo < min(hi, next_base) and (
                not below_cleaner_checkpoint(seg.base_offset, part.cleaner_offset)):
            # no slice reads it, so no read lists its offsets as missing (scan._check_segment_end): say it here
            part.report.notes.append(f"{part.name}: {seg.log_path} is empty, so offsets "
                                     f"[{max(lo, seg.base_offset)}, {min(hi, next_base)}) are missing (above "
                                     f"the cleaner checkpoint: a lost file's data, or compaction it does not "
                                     f"record yet)")
        return None
    start_position = part.start_position(i, lo) if lo > seg.base_offset else 0
    if ts_lo is not None:
        # Time index entry (ts, off): every record with offset <= off has timestamp <= ts. Skip what is older.
        # (a .timeindex that is another segment's would prune records that are there: time_out_of_order)
        if part.largest_timestamp(i) < ts_lo and not (part.time_out_of_order(i) and part.largest_timestamp(i) >= ts_lo):
            return None
        if not part.legacy_segment(i):  # (its entries miss the timestamps of v1 records in v0 wrappers)
            _, time_index = part.indexes(i)
            older_ts, older_offset = time_index.floor(ts_lo - 1)
            if older_ts >= 0 and older_offset + 1 > lo and part.time_index_foreign(i, (older_ts, older_offset)):
                older_ts, older_offset = part.indexes(i)[1].floor(ts_lo - 1)  # from the rebuilt index
            if older_ts >= 0 and older_offset + 1 > lo:
                start_position = max(start_position, part.start_position(i, older_offset + 1))
    end_position = seg.log_size if next_base is not None and hi >= next_base else part.end_position(i, hi)
    if next_base is None and hi >= part.log_end_offset():
        end_position = seg.log_size if part.log_end_position is None else part.log_end_position
    if end_position <= start_position:
        if not (start_position == 0 and next_base is not None and lo < min(hi, next_base)
                and _holds_none_of_its_range(part, i, next_base)):
            return None
        # a range ending before its first batch, which is another segment's: read whole, judged as a read across it
        # is (scan's foreign_file / foreign_below: lost when its own indexes say so, else a gap or corruption)
        end_position = seg.log_size
    cuts = part.cuts(i, start_position, end_position) if _wants_cuts(part, start_position, end_position) else _Cuts()
    file_entry, walk_from = part.start_points.get((i, start_position), (None, None))
    return _Piece(part, i, start_position, end_position, lo, hi, cuts, None, part.indexes(i)[0] if cuts else None,
                  walk_from=walk_from, file_entry=file_entry)


def _holds_none_of_its_range(part: _Partition, i: int, next_base: int) -> bool:
    """Whether rolled segment ``i``'s first batch lies outside its range (at or past ``next_base``, or below its
    base): its file may hold another segment's batches. One header read; asked only for a range that ends before
    that batch (False when it cannot be read)."""
    seg = part.segments[i]
    try:
        with SegmentReader(seg.log_path, part.fs) as reader:
            header = reader.header_at(0, max_batch_bytes=part.options.max_batch_bytes)
    except KafkaSegError:
        return False
    return header is not None and (header.base_offset >= next_base or header.last_offset < seg.base_offset)


#: the way on a strict read's proven lost tail offers (scan and planning raise it)
READ_ON_PAST_LOSS = "set failOnDataLoss=false to read on past this data loss"


def _empty_segment_loss(part: _Partition, i: int, lo: int, hi: int) -> int:
    """Offsets ``[lo, hi)`` of rolled segment ``i``, whose ``.log`` is empty: those its own indexes prove lost (entries
    past byte 0 below the next base, the recovery point above its base, below the cleaner checkpoint too:
    :func:`~kafkaseg.storage.layout.rolled_cut_of`, as a read across a segment cut short after its last batch finds,
    scan._check_segment_end) raise
    :class:`~kafkaseg.errors.LostTailError` at byte 0, or with failOnDataLoss=false (or onCorruption=skip) are
    noted in the plan's data_loss and given to the read (``part.lost_before``: ScanMetrics.lost_tails). Those its
    indexes say it held while the recovery point is not above its base (or none: not known flushed) are noted as
    possibly lost and given to the read as a warning (ScanMetrics.unreadable_tails), as a read across a segment cut
    short after its last batch warns of them. Returns where the offsets not said so start (a compaction gap's,
    noted as missing)."""
    seg, next_base = part.segments[i], part.next_base(i)
    cut = rolled_cut_of(part.pdir, i, end_offset=seg.base_offset,
                        max_batch_bytes=part.options.max_batch_bytes, unflushed=True)
    first, end = max(lo, seg.base_offset), min(hi, next_base)
    if cut is None or not first < min(end, cut.end_offset):
        return lo
    if cut.proven and part.options.fail_on_data_loss and part.options.on_corruption != "skip":
        raise cut.error().saying(READ_ON_PAST_LOSS)
    lost = (seg.log_path, cut.position, cut.message, first, min(end, cut.end_offset), cut.proven)
    if lost not in part.lost_before:
        if part.report is not None and all(said[0] != seg.log_path for said in part.lost_before):
            (part.report.data_loss if cut.proven else part.report.notes).append(f"{part.name}: {cut.summary()}")
        part.lost_before.append(lost)
    return max(lo, cut.end_offset)


def _split_by_size_and_records(piece: _Piece, split_size: int, max_records: int | None) -> list[_Piece]:
    """Cut ``piece`` at index entries: a cut when the bytes since the last cut reach ``split_size``, or when going
    on to the next entry would put more than ``max_records`` offsets (as the index entries approximate them) in
    the current slice."""
    if not piece.cuts:
        return [piece]
    part = piece.part
    next_base = part.next_base(piece.segment)
    range_end = piece.end_offset if next_base is None else min(piece.end_offset, next_base)
    cut_at: list[int] = []
    start_position = piece.start_position
    if max_records is None:  # sizes only: jump from cut to cut by binary search (O(slices log entries))
        positions = piece.cuts.positions
        k = 0
        while True:
            k = int(np.searchsorted(positions[k:], start_position + split_size, side="left")) + k
            if k >= len(positions):
                break
            cut_at.append(k)
            start_position = int(positions[k])
            k += 1
        return _split_at_cuts(piece, cut_at)
    anchor = max(piece.start_offset, part.segments[piece.segment].base_offset)
    offsets = piece.cuts.offsets.tolist()  # (once: indexing the arrays makes a numpy scalar per access)
    for k, (position, offset) in enumerate(piece.cuts):
        following = offsets[k + 1] if k + 1 < len(offsets) else range_end
        too_big = position - start_position >= split_size
        too_many = max_records is not None and following - anchor > max_records
        if too_big or too_many:
            cut_at.append(k)
            start_position = position
            anchor = offsets[k - 1] + 1 if k > 0 else offset
    return _split_at_cuts(piece, cut_at)


def _split_at_cuts(piece: _Piece, cut_at: list[int]) -> list[_Piece]:
    out = []
    current = piece
    consumed = 0
    for k in cut_at:
        left, current = current.split_at(k - consumed)
        consumed = k + 1
        out.append(left)
    out.append(current)
    return out


def _aborted_for(part: _Partition, piece: _Piece) -> tuple[tuple[int, int, int], ...]:
    """Kafka's ``collectAbortedTransactions(fetchOffset, upperBoundOffset)`` over the slice's offsets: the txn
    indexes of this segment and every later one, until one proves completeness."""
    seg = part.segments[piece.segment]
    next_base = part.next_base(piece.segment)
    lo = max(piece.start_offset, seg.base_offset)
    hi = piece.end_offset if next_base is None else min(piece.end_offset, next_base)
    if lo >= hi:
        return ()
    found: dict[tuple[int, int, int], None] = {}
    for j in range(piece.segment, len(part.segments)):
        txns, complete = part.txn_index(j).collect_aborted(lo, hi)
        for txn in txns:
            found[(txn.producer_id, txn.first_offset, txn.last_offset)] = None
        open_after = part.open_txns_after(j)
        if complete or (open_after is not None and all(first >= hi for first in open_after.values())):
            break  # (a walk past j knows every transaction that began below hi and ends after j)
    return tuple(found)


def _planned_reader(seg: SegmentFiles, filesystem, moved: Callable[[], list[str]] | None = None) -> SegmentReader:
    """A reader of the ``.log`` the listing saw for ``seg``, for what runs after the partition was planned (and so
    is not planned again when a file goes: read_committed's aborted transactions, :func:`_aborted_for`): a live
    broker's retention or cleaner may have renamed it ``.deleted`` since (removed ``file.delete.delay.ms`` later),
    or renamed a planned ``.swap`` to its ``.log`` name, and the plan is of its bytes, which the read reads there
    too (:mod:`kafkaseg.scan`). A file is taken only when it is the one listed (same inode), or when that cannot be
    told: not the cleaner's merged copy swapped in under the listed name (a walk of it misses the transactions begun
    in the planned segment); else the :class:`~kafkaseg.errors.LayoutError` for the missing file. ``moved``: the
    folders (``<tp>.<id>-delete``) that hold the partition's planned files when it moved to another log dir since
    (``_Partition.move_sources``), where they are looked for under the same names (or ``.deleted``) too."""
    try:
        listed = _fs.RandomAccessReader(seg.log_path, filesystem)
    except LayoutError as exc:
        if not isinstance(exc.__cause__, FileNotFoundError):
            raise
        missing = exc
    else:
        if seg.identity is None or listed.identity is None or listed.identity == seg.identity:
            return SegmentReader(seg.log_path, filesystem, opened=listed)
        # another file under the name: the cleaner's merged copy swapped in (the planned one renamed .deleted),
        # whose batches are not the planned segment's (a walk of it would miss transactions begun in the segment)
        listed.close()
        missing = LayoutError(f"{seg.log_path} names another file than the one listed (swapped in by the log "
                              "cleaner since?), and the listed one is not under its .deleted name")
    names = planned_file_names(seg.log_path, lambda: moved() if moved is not None and not _fs.exists(
        _fs.parent(seg.log_path), filesystem) else [])
    for name in names:
        try:
            renamed = _fs.RandomAccessReader(name, filesystem)
        except LayoutError:
            continue
        if seg.identity is not None and renamed.identity is not None and renamed.identity != seg.identity:
            renamed.close()
            continue
        return SegmentReader(name, filesystem, opened=renamed)
    raise missing


def _plan_partition(pdir: PartitionDir, options: ReadOptions, predicates: Predicates | None,
                    report: PlanReport, log_ends: LogEndCache | None = None,
                    other_copies: tuple[PartitionDir, ...] = (), read_to: int | None = None) -> list[_Piece]:
    given_logs = None
    if pdir.whole is not None and len(pdir.segments) < len(pdir.whole.segments):
        # .log files given as paths: planned in their partition, so its high watermark, last stable offset and
        # aborted transactions apply (a transaction's marker may lie in a later segment), then cut to these files
        given_logs = {s.log_path for s in pdir.segments}
        pdir = pdir.whole
    preport = PartitionReport(pdir.topic, pdir.partition, pdir.path, pdir.log_dir,
                              segments_total=len(pdir.segments), bytes_total=pdir.size_bytes, topic_id=pdir.topic_id,
                              cluster_id=pdir.log_dir_meta.cluster_id if pdir.log_dir_meta is not None else None)
    preport.notes.extend(pdir.notes)
    report.partitions.append(preport)
    part = _Partition(pdir, options, report, log_ends, read_to)
    part.other_copies = other_copies
    if not part.segments:
        # Kafka's LogLoader gives a partition without segments an empty one at the checkpointed log start: offsets
        # asked of it are checked as for any empty log (below or past it is data loss), and nothing is read
        at = pdir.log_start_offset or 0
        preport.notes.append(f"{part.name}: no segments (an empty log at offset {at})")
        preport.log_start_offset = preport.log_end_offset = preport.upper_bound = at
        preport.upper_bound_source = "log end offset (no segments)"
        hw = preport.high_watermark = pdir.high_watermark
        if hw is not None and hw > at and options.upper_bound == "highWatermark":
            # (the checkpoints' offsets no file holds: with the recovery point above them too, a read to latest
            # loses acknowledged and flushed offsets, raised or noted by _resolve as for a lost last segment)
            preport.notes.append(high_watermark_above_note(part.name, hw, at, pdir.path))
        preport.start_offset, preport.end_offset = _resolve(
            part, _Bounds(at, at, at, "log end offset (no segments)", pdir.high_watermark, None), report, preport)
        return []
    bounds = _bounds(part, preport)
    preport.log_start_offset = bounds.log_start
    preport.log_end_offset = bounds.log_end
    preport.high_watermark = bounds.high_watermark
    preport.last_stable_offset = bounds.last_stable
    preport.upper_bound = bounds.upper
    preport.upper_bound_source = bounds.upper_source
    start, end = _resolve(part, bounds, report, preport)
    preport.start_offset, preport.end_offset = start, end
    ranges = _intersect(start, end, predicates.offset_ranges if predicates else None)
    if given_logs is not None:
        files = [(seg.base_offset, 2**63 - 1 if part.next_base(i) is None else part.next_base(i))
                 for i, seg in enumerate(part.segments) if seg.log_path in given_logs]
        ranges = [r for lo, hi in ranges for r in _intersect(lo, hi, files)]
        preport.notes.append(f"{part.name}: reading {len(files)} of its {len(part.segments)} segment files (given "
                             "as paths), within the partition's offsets")
    ts_lo, no_time = None, False
    if predicates is not None and predicates.timestamp_range is not None:
        ts_lo, ts_hi = predicates.timestamp_range
        if ts_lo is not None and ts_hi is not None and ts_lo >= ts_hi:
            ranges, no_time = [], True
    # whether the read reaches the log end (an empty range there too: a log whose active segment holds no whole
    # batch ends at its base), for the active segment's slice below
    leo = part.log_end_offset()
    reaches_end = ranges[-1][1] >= leo if ranges else (
        start == end == leo and given_logs is None and not no_time
        and bool(_intersect(leo, leo + 1, predicates.offset_ranges if predicates else None)))
    kept: set[int] = set()
    out: list[_Piece] = []
    # Each segment's index arrays (a 1 GiB segment's take several MiB) are forgotten once its piece is cut, so
    # planning holds one segment's at a time, not every planned segment's; minPartitions cuts pieces further once
    # all partitions are planned, and keeps them.
    forget = not options.min_partitions

    def finish(piece: _Piece) -> None:
        pieces = _split_checked(piece, options)
        if forget and piece.cuts:
            pieces = [dataclasses.replace(p, cuts=_Cuts(), cuts_from=None) for p in pieces]
        out.extend(pieces)

    # A range's last piece is held until the next range's first: when both are of one segment and their bytes meet
    # (NOT offset = x is two ranges needing the batch holding x), they are joined, so that batch is read once. Only
    # consecutive ranges: the offsets between them are all the joined piece leaves out.
    held: _Piece | None = None
    held_range = -1
    for k, (lo, hi) in enumerate(ranges):
        for piece in _pieces_for_range(part, lo, hi, ts_lo, kept, forget=forget):
            if held is not None:
                if (held_range == k - 1 and held.segment == piece.segment
                        and piece.start_position <= held.end_position):
                    piece = _joined(held, piece)
                else:
                    finish(held)
                    if forget and held.segment != piece.segment:
                        part.forget_indexes(held.segment)
                held = None
            if _last_of_range(part, piece.segment, hi):
                held, held_range = piece, k
            else:
                finish(piece)
    if held is not None:
        finish(held)
        if forget:
            part.forget_indexes(held.segment)
    last = len(part.segments) - 1
    if reaches_end and part.segments[last].base_offset == leo and not any(p.segment == last for p in out):
        # the active segment holds no whole batch (emptied, or cut inside its first one): no range reaches into it,
        # but a read to the log end asks what its indexes and the recovery point say past byte 0, as for one cut
        # after some batches (SegmentSlice.indexed_tail_check), from an empty slice of it; and a torn first batch
        # is read as the torn tail it is (truncated_tails), as one after whole batches
        seg = part.segments[last]
        readable_end = seg.log_size if part.log_end_position is None else part.log_end_position
        carrier = _Piece(part, last, 0, readable_end, leo, leo, _Cuts())
        if readable_end > 0 or _reads_to_unbounded_log_end(part, carrier):
            out.append(carrier)
    if not out and part.lost_before:
        # the range holds nothing readable, only offsets emptied segments lost, read past (failOnDataLoss=false):
        # an empty slice of the first of those segments carries them to the read (ScanMetrics.lost_tails), as a
        # range with readable data gives them to its first slice
        path, _, _, first, _, _ = part.lost_before[0]
        i = next(k for k, seg in enumerate(part.segments) if seg.log_path == path)
        out.append(_Piece(part, i, 0, 0, first, first, _Cuts()))
    preport.segments_pruned = len(part.segments) - len(kept)
    return out


def _split_checked(piece: _Piece, options: ReadOptions) -> list[_Piece]:
    """Split ``piece`` at index entries, each checked against the log first (a slice starting at a wrong entry
    would start inside a batch); when one is wrong the segment's index is rebuilt and the split redone."""
    piece = piece.with_current_cuts()
    pieces = _split_by_size_and_records(piece, options.split_size, options.max_records_per_partition)
    part = piece.part
    for later in pieces[1:]:
        why = part.entry_problem(piece.segment, later.start_entry, later.start_position)
        if why is not None:
            part.distrust_index(piece.segment, f"entry {later.start_entry}: {why}")
            return _split_by_size_and_records(piece.with_current_cuts(), options.split_size,
                                              options.max_records_per_partition)
    return pieces


def _min_partitions(pieces: list[_Piece], wanted: int | None, report: PlanReport) -> list[_Piece]:
    if not wanted or len(pieces) >= wanted:
        return pieces
    pieces = list(pieces)
    while len(pieces) < wanted:
        candidates = [(p.size, n) for n, p in enumerate(pieces) if p.cuts]
        if not candidates:
            report.notes.append(f"minPartitions={wanted}: only {len(pieces)} slices possible (no more index entries "
                                "to cut at)")
            break
        _, n = max(candidates)
        piece = pieces[n] = pieces[n].with_current_cuts()
        if not piece.cuts:
            continue
        middle = piece.start_position + piece.size // 2
        k = int(np.abs(piece.cuts.positions - middle).argmin())  # (the first of equals, as min() took)
        if piece.check_cut(k):
            pieces[n:n + 1] = piece.split_at(k)
    return pieces


# --------------------------------------------------------------------------------------------------------------------
# Entry point

def plan_scan(paths: str | Sequence[str] | None, options: ReadOptions, predicates: Predicates | None = None,
              *, check_subscribed: bool = True, listing: "Listing | None" = None,
              log_ends: LogEndCache | None = None,
              read_to: Callable[[PartitionDir], int | None] | None = None,
              reach: Callable[[PartitionDir], int | None] | None = None,
              choice_log_ends: ChoiceLogEnds | None = None) -> ScanPlan:
    """Plan a scan of ``paths`` (log dirs, topic-partition dirs, ``.log`` files, globs; default
    ``options.paths``): discover partitions, keep those the topic options and ``predicates`` select, choose
    replicas, resolve each partition's ``[start, end)``, prune segments, and cut slices.
    ``check_subscribed=False`` lets a ``subscribe`` topic have no partition on disk (a stream waits for it; a
    caller with its own rule for a topic gone reports that instead). ``listing`` (from :func:`list_partitions`)
    is a discovery of ``paths`` already made, which the plan uses instead of listing the folders again;
    ``log_ends`` the log ends :func:`available_range` found on that listing (:class:`LogEndCache`), which the plan
    takes instead of walking each partition's last segment again where they still hold (the plan is the same);
    ``read_to``: where a stream's position says it read a copy of a partition to (None where it says nothing:
    evidence for a last batch past a compaction gap, :meth:`~kafkaseg.storage.layout.PartitionDir.reached_end`, in
    the replica choice and the plan; none for a batch read); ``reach``: the stream's position, which the copy
    chosen must reach (:func:`~kafkaseg.storage.layout.choose_replicas`); ``choice_log_ends``: the log ends the
    stream's earlier replica choices read (:class:`~kafkaseg.storage.layout.ChoiceLogEnds`)."""
    report = PlanReport(options=options.as_dict())
    if listing is None:
        listing = list_partitions(paths, options)
    replicas = _select_partitions(listing, options, predicates, report, check_subscribed=check_subscribed,
                                  read_to=read_to, reach=reach, choice_log_ends=choice_log_ends)
    passed_over = copies_not_chosen(listing, report)

    def plan_one(pdir: PartitionDir) -> tuple[PlanReport, list[_Piece]]:
        def plan(current: PartitionDir) -> tuple[PlanReport, list[_Piece]]:
            sub = PlanReport(options=report.options)  # its own: partitions on object storage are planned in threads
            return sub, _plan_partition(current, options, predicates, sub, log_ends,
                                        passed_over.get((current.topic, current.partition), ()),
                                        read_to(current) if read_to is not None else None)

        try:
            return relisted(pdir, plan)
        except LayoutError:
            moved = moved_meanwhile(pdir, listing.log_dirs, options)  # (its folder renamed -delete meanwhile)
            if moved is None:
                raise
            return relisted(moved, plan)

    pieces: list[_Piece] = []
    partition_reports: list[PlanReport] = []
    for sub, planned in _fs.map_files(plan_one, replicas, [p.filesystem for p in replicas]):
        report.partitions.extend(sub.partitions)
        partition_reports.append(sub)
        pieces.extend(planned)
    pieces = _min_partitions(pieces, options.min_partitions, report)
    slices = []
    reports = {(p.topic, p.partition, p.path): p for p in report.partitions}
    identities: dict[str, tuple[str, int, int] | None] = {}
    covered: dict[str, list[tuple[int, int]]] = {}  # per .log: byte ranges already counted as planned
    told: set[int] = set()  # partitions whose skipped start is attached to a slice already
    tails_told: set[int] = set()  # partitions whose corrupt tail is attached to a slice already
    for piece, own_offsets in zip(pieces, _slice_offsets(pieces)):
        part = piece.part
        missing_before, lost_before = None, ()
        if id(part) not in told:
            told.add(id(part))
            missing_before, lost_before = part.skipped_start, tuple(part.lost_before)
        seg = part.segments[piece.segment]
        corrupt_tail = None
        if (part.corrupt_tail is not None and id(part) not in tails_told and piece.segment == len(part.segments) - 1
                and piece.end_position == part.log_end_position):
            tails_told.add(id(part))
            corrupt_tail = part.corrupt_tail
        if len(listing.log_dirs) > 1 and part.pdir.tiered is None:
            part.move_dirs = listing.log_dirs  # (the planned files of a partition moved meanwhile: move_sources)
        aborted = _aborted_for(part, piece) if options.read_committed else ()
        indexed_tail_check = _reads_to_unbounded_log_end(part, piece)
        tail_evidence = _tail_evidence(part) if indexed_tail_check else (None, None)
        lost_past = _lost_segment_past(part, piece)
        if seg.log_path not in identities:
            # the file the listing saw, with the size planned: a file renamed into its name since (the cleaner's
            # merged copy) is another one, read again by offset
            identities[seg.log_path] = _fs.segment_identity(seg.log_path, seg.identity, part.fs)
        if part.pdir.path not in identities:
            identities[part.pdir.path] = _fs.file_identity(part.pdir.path, part.fs)
        slices.append(_segment_slice(piece, aborted, identities[seg.log_path], missing_before, own_offsets,
                                     listing.started_ns, part.pdir.topic_id, identities[part.pdir.path],
                                     corrupt_tail, indexed_tail_check, tail_evidence, lost_before))
        if lost_past is not None:
            slices[-1] = dataclasses.replace(slices[-1], lost_segment_past=lost_past)
        if part.move_dirs:
            slices[-1] = dataclasses.replace(slices[-1], move_dirs=part.move_dirs)
        preport = reports[(part.pdir.topic, part.pdir.partition, part.pdir.path)]
        preport.slices += 1
        # two offset ranges of one partition whose bytes meet are one slice (_joined), unless a range between them
        # planned nothing there: then both slices read the batch they share, but planned bytes are the file's,
        # counted once
        preport.bytes_planned += _newly_covered(covered.setdefault(seg.log_path, []), piece.start_position,
                                                piece.end_position)
    slices.sort(key=slice_order)
    # the copies a strict read falls back to: those a strict search falls back to (one rule, copies_beside)
    others = {tp: tuple(c.path for c in copies) for tp, copies in passed_over.items() if copies}
    if others:
        slices = [dataclasses.replace(s, other_copies=others[(s.topic, s.partition)])
                  if (s.topic, s.partition) in others else s for s in slices]
    for sub in partition_reports:  # in partition order, whichever thread planned them
        report.indexes_rebuilt.extend(sub.indexes_rebuilt)
        report.lenient.extend(sub.lenient)
        report.data_loss.extend(sub.data_loss)
        report.notes.extend(sub.notes)
    for filesystem in {id(p.filesystem): p.filesystem for p in replicas}.values():
        _fs.release_cached_blocks(filesystem)  # planning's small reads are done; reads fetch big ranges
    return ScanPlan(slices, report)


def _segment_slice(piece: _Piece, aborted: tuple[tuple[int, int, int], ...], identity: tuple[str, int, int] | None,
                   missing_before: tuple[str, int, int] | None, own_offsets: tuple[int, int] | None,
                   listed_at_ns: int | None, topic_id: str | None,
                   partition_identity: tuple[str, int, int] | None,
                   corrupt_tail: tuple[int, int, str] | None = None, indexed_tail_check: bool = False,
                   tail_evidence: tuple[int | None, tuple[int, str] | None] = (None, None),
                   lost_before: tuple[tuple[str, int, str, int, int, bool], ...] = ()) -> SegmentSlice:
    part = piece.part
    seg = part.segments[piece.segment]
    index_path, index_window = index_location(seg, "index")
    return SegmentSlice(
        topic=part.pdir.topic, partition=part.pdir.partition, log_path=seg.log_path, base_offset=seg.base_offset,
        start_position=piece.start_position, end_position=piece.end_position, start_offset=piece.start_offset,
        end_offset=piece.end_offset, aborted=aborted, segment_size=seg.log_size, segment_index=piece.segment,
        partition_path=part.pdir.path, log_dir=part.pdir.log_dir, filesystem=part.fs,
        next_base_offset=part.next_base(piece.segment), recovery_point=part.pdir.recovery_point,
        file_identity=identity, cleaner_offset=part.cleaner_offset, missing_before=missing_before,
        lost_before=lost_before,
        index_path=index_path, index_window=index_window,
        slice_offsets=own_offsets, listed_at_ns=listed_at_ns, topic_id=topic_id,
        partition_identity=partition_identity, rolled=seg.tiered is not None, remote_whole=seg.remote_whole,
        remote_path=part.pdir.remote_below.path if part.pdir.remote_below is not None else None,
        corrupt_tail=corrupt_tail, indexed_tail_check=indexed_tail_check, tail_recovery_point=tail_evidence[0],
        tail_snapshot=tail_evidence[1], copy_states=part.planned_copy_states,
        offset_gaps=piece.gaps, start_entry=piece.file_entry if piece.start_position else None,
        walk_from=piece.walk_from if piece.start_position else None,
        high_watermark=_watermark_read_past(part, piece))


def _watermark_read_past(part: _Partition, piece: _Piece) -> int | None:
    """:attr:`SegmentSlice.high_watermark` of ``piece``: the checkpointed high watermark when the slice, of a local
    segment, reads offsets past it (``upperBound=logEndOffset``)."""
    hw = part.pdir.high_watermark
    if (hw is None or part.options.upper_bound != "logEndOffset" or piece.end_offset <= hw
            or part.segments[piece.segment].tiered is not None):
        return None
    return hw


def _reads_to_unbounded_log_end(part: _Partition, piece: _Piece) -> bool:
    """:attr:`SegmentSlice.indexed_tail_check` of ``piece``: it is the last piece of its partition's active segment
    (a local one: a tiered-storage copy is rolled), ends where planning found the segment's readable batches end
    (the end of its bytes as listed, or where zeros end them: not a corrupt tail the read counts, nor a slice cut
    short of the end), and keeps offsets up to the log end, which no high watermark bounds. With a high watermark
    its rules decide (a note, or data loss with the recovery point: :func:`_resolve`)."""
    seg = part.segments[piece.segment]
    if (piece.segment != len(part.segments) - 1 or seg.tiered is not None or part.pdir.high_watermark is not None
            or part.corrupt_tail is not None or not part.pdir.is_active_segment(seg.log_path)):
        return False
    readable_end = part.log_end_position if part.log_end_position is not None else seg.log_size
    # (and only when the indexes the log end walk loaded reach past the log end, or the recovery point or a producer
    # snapshot does: a healthy active segment's do not, and its read then loads no index file)
    return (piece.end_position == readable_end and piece.end_offset >= part.log_end_offset()
            and (part.indexed_past_log_end or _tail_evidence(part) != (None, None)))


def _lost_segment_past(part: _Partition, piece: _Piece) -> tuple[str, int, str, int, int] | None:
    """:attr:`SegmentSlice.lost_segment_past` of ``piece``: the partition's newest segment's ``.log`` is gone while
    its index files prove offsets it held (``PartitionDir.lost_segment``), no high watermark bounds the log, and
    ``piece`` is its last piece, read to the log end. Judged as index entries past a readable end are
    (``layout.judge_tail``): with a recovery point above the log end (trusted: :func:`_tail_evidence`) the offsets
    below it were flushed, the read's :class:`~kafkaseg.errors.LostTailError` (or ``lost_tails``) says them, and
    this is None; else they may never have reached the disk: a warning, whatever ``failOnDataLoss``."""
    lost = part.pdir.lost_segment
    if lost is None or lost.last_offset is None or part.pdir.high_watermark is not None:
        return None
    seg = part.segments[piece.segment]
    if piece.segment != len(part.segments) - 1 or seg.tiered is not None:
        return None
    readable_end = part.log_end_position if part.log_end_position is not None else seg.log_size
    if piece.end_position != readable_end or piece.end_offset < part.log_end_offset():
        return None
    if _tail_evidence(part)[0] is not None:
        return None
    return (lost.log_path, 0, lost.unreadable_words(part.pdir.recovery_point), lost.base_offset,
            lost.last_offset + 1)


def _tail_evidence(part: _Partition) -> tuple[int | None, tuple[int, str] | None]:
    """What besides its indexes says the partition's log held offsets past its log end (no high watermark bounds
    it): the recovery point when it is above the log end and may be trusted
    (:meth:`~kafkaseg.storage.layout.ListingCheck.recovery_point`, the rule ``layout.judge_tail`` applies to a read
    with this answer), else None; and ``(offset, file name)`` of the newest producer snapshot named past the log
    end (``segment.snapshot_past``), else None. Worked out once per partition."""
    found = part._tail_evidence_found
    if found is None:
        leo, recovery_point = part.log_end_offset(), part.pdir.recovery_point
        trusted = (recovery_point if recovery_point is not None and recovery_point > leo
                   and ListingCheck(part.pdir, part.segments).recovery_point() else None)
        found = part._tail_evidence_found = (trusted, snapshot_past(part.pdir.snapshot_paths, leo))
    return found


def _slice_offsets(pieces: list[_Piece]) -> list[tuple[int, int] | None]:
    """Each piece's :attr:`SegmentSlice.slice_offsets`. The pieces of one segment and one offset range partition
    its batches by bytes; by offsets, a piece cut at an index entry starts at the first offset of the batch there
    (read when planning checked the entry), the first piece at the range's start. A piece whose start offset cannot
    be read gets None, and so does the piece before it."""
    out: list[tuple[int, int] | None] = [None] * len(pieces)
    groups: dict[tuple, list[int]] = {}
    for n, piece in enumerate(pieces):
        groups.setdefault((id(piece.part), piece.segment, piece.start_offset, piece.end_offset), []).append(n)
    for members in groups.values():
        members.sort(key=lambda n: pieces[n].start_position)
        lows: list[int | None] = []
        for n in members:
            piece = pieces[n]
            first = max(piece.start_offset, piece.part.segments[piece.segment].base_offset)
            if piece.start_entry is not None:
                at = piece.part.first_offset_at(piece.segment, piece.start_position)
                first = None if at is None else max(first, at)
            lows.append(first)
        for k, n in enumerate(members):
            piece = pieces[n]
            next_base = piece.part.next_base(piece.segment)
            hi = lows[k + 1] if k + 1 < len(members) else (
                piece.end_offset if next_base is None else min(piece.end_offset, next_base))
            if lows[k] is not None and hi is not None:
                out[n] = (lows[k], max(lows[k], hi))
    return out


def moved_partition(topic: str, partition: int, partition_path: str, filesystem, topic_id: str | None,
                    move_dirs: Sequence[str], options: ReadOptions,
                    offsets: tuple[int, int] | None = None) -> PartitionDir | None:
    """The partition's folder ``<topic>-<partition>`` in another of ``move_dirs`` (the read's other log dirs) when
    the partition moved there since planning, else None.

    A move between log dirs of one broker (``AlterReplicaLogDirs``) ends with the destination's
    ``<tp>.<id>-future`` renamed ``<tp>`` and the source's ``<tp>`` renamed ``<tp>.<id>-delete``
    (``LogManager.replaceCurrentWithFutureLog``), as a topic's deletion renames it. It is a move when another log
    dir holds the partition with the topic id planned (``partition.metadata``: a recreated topic has another);
    when either side has no topic id, when that folder's log covers ``offsets`` (the read's planned range of the
    partition: a recreated topic's log rarely does). Else (no such folder, another topic id) the partition was
    deleted."""
    for log_dir in move_dirs:
        path = _fs.join(log_dir, f"{topic}-{partition}")
        if path.rstrip("/") == partition_path.rstrip("/"):
            continue
        try:
            pdir = read_partition_again(path, filesystem, topic=topic, partition=partition)
        except KafkaSegError:
            continue  # not there (or unreadable): not where it moved
        if topic_id is not None and pdir.topic_id is not None:
            if pdir.topic_id == topic_id:
                return pdir
            continue
        if offsets is None or not pdir.segments:
            continue
        try:
            covers = (pdir.log_start_offset <= offsets[0]
                      and _Partition(pdir, options, None).log_end_offset() >= offsets[1])
        except KafkaSegError:
            continue
        if covers:
            return pdir
    return None


def moved_meanwhile(pdir: PartitionDir, log_dirs: Sequence[str], options: ReadOptions) -> PartitionDir | None:
    """``pdir``'s partition in another of ``log_dirs`` (the read's) when its folder is gone because the partition
    moved there since it was listed (:func:`moved_partition`, the listed log as the planned offsets), else None: a
    listing or plan on the old folder, which fails, is then made on the new one."""
    if (len(log_dirs) < 2 or pdir.tiered is not None or not pdir.segments or pdir.given_files
            or _fs.exists(pdir.path, pdir.filesystem)):
        return None
    return moved_partition(pdir.topic, pdir.partition, pdir.path, pdir.filesystem, pdir.topic_id, log_dirs, options,
                           (pdir.log_start_offset, pdir.segments[-1].base_offset))


def move_sources(partition_path: str, filesystem, topic: str, partition: int) -> list[str]:
    """The folders beside ``partition_path`` named ``<topic>-<partition>.<id>-delete`` (the topic perhaps cut to
    fit 255 characters): where a partition that moved to another log dir left its files until the broker deletes
    them (``file.delete.delay.ms``)."""
    log_dir = _fs.parent(partition_path.rstrip("/"))
    try:
        entries = _fs.list_dir(log_dir, filesystem)
    except KafkaSegError:
        return []
    return [_fs.join(log_dir, e.name) for e in entries
            if e.is_dir and e.name.endswith("-delete") and _fs.renamed_for_deletion(f"{topic}-{partition}", [e.name])]


def planned_file_names(log_path: str, moved_from: Callable[[], Sequence[str]]) -> list[str]:
    """The names planned segment ``log_path`` may have since planning, in the order to look: its ``.log`` name when
    planned as a ``.swap`` (recovery renames it), renamed ``.deleted`` (retention, the cleaner, a truncation), then
    in the folders ``moved_from()`` gives (:func:`move_sources`: the partition moved to another log dir; none
    when it did not), by :func:`moved_names`. The readers (:func:`_planned_reader`, the scan's) take each only
    when it is the file planned."""
    names = [log_path + ".deleted"]
    if log_path.endswith(".swap"):
        names.insert(0, log_path[:-len(".swap")])
    return names + moved_names(log_path, moved_from())


def moved_names(log_path: str, folders: Sequence[str]) -> list[str]:
    """Where planned segment ``log_path`` is in the move sources ``folders`` (:func:`move_sources`): under its
    name, its ``.log`` name when planned as a ``.swap``, or renamed ``.deleted`` (each taken only when it is the file
    planned, by its identity)."""
    name = _fs.basename(log_path)
    names = [name[:-len(".swap")], name] if name.endswith(".swap") else [name]
    return [_fs.join(folder, n + suffix) for folder in folders for n in names for suffix in ("", ".deleted")]


def plan_again_by_offset(piece: SegmentSlice, options: ReadOptions
                         ) -> tuple[list[SegmentSlice], list[tuple[int, int, str]]]:
    """Plan ``piece.slice_offsets`` again from its partition's files as they are now, for a reader that found the
    planned file gone or replaced (see :func:`kafkaseg.scan.read_slice`): the log cleaner swaps a compacted copy in
    (under the first merged segment's name, the others renamed ``.deleted``) and a minute later the planned file is
    gone, while the records compaction kept are still in the log at their offsets.

    Returns the slices that read those offsets now (not split: one per segment holding any of them; the
    transactions planning found aborted still apply, as compaction only removes records, and so do its
    ``offset_gaps``), and ``(first, end, why)`` of the offsets of the range lost to the read (none of its gaps):

    * all of them when the folder now holds another incarnation of the topic (``partition.metadata``'s topic id
      differs from the planned one: deleted and recreated);
    * those below the partition's log start now (retention deleted them) and those at or past its log end now (a
      follower truncated its log);
    * all the rest, above the partition's ``cleaner-offset-checkpoint`` now (below it compaction may have removed
      every offset of a segment), when the segment files that can hold them now hold none of the offsets of the
      segment they were in (as planned) and none changed since the plan's listing (``listed_at_ns``,
      :func:`~kafkaseg.storage.fs.changed_since`: status-change times on the planning host, modification times on
      object stores): the file that held them was deleted, not compacted into these. Where that cannot be told
      (another host) they are read again;
    * all the rest of a tiered topic's (the slice was a tiered-storage copy's, or the partition has copies) when no
      file holds any of them now, whatever changed and wherever: Kafka never compacts a topic with remote storage
      (``LogConfig.validateNoRemoteStorageForCompactedTopic``), so they were deleted.

    And all of them when the partition's folder is another one than planned (by device and inode, on the planning
    host): a recreated topic on a broker that writes no ``partition.metadata``.

    When the partition's folder is gone because it moved to another of the read's log dirs
    (:attr:`SegmentSlice.move_dirs`, :func:`moved_partition`), they are planned from its folder there.

    Raises :class:`~kafkaseg.errors.LayoutError` when the partition's folder cannot be listed (the topic was
    deleted)."""
    if piece.slice_offsets is None:
        raise ValueError("the slice's own offsets are not known")
    lo, hi = piece.slice_offsets
    host = piece.file_identity[0] if piece.file_identity is not None else None

    def plan(pdir: PartitionDir, moved: bool = False) -> tuple[list[SegmentSlice], list[tuple[int, int, str]]]:
        if piece.topic_id is not None and pdir.topic_id is not None and pdir.topic_id != piece.topic_id:
            return [], [(lo, hi, f"the topic was deleted and recreated (its topic id is {pdir.topic_id} now, "
                                 f"{piece.topic_id} when planned)")]
        folder = _fs.file_identity(pdir.path, pdir.filesystem)
        if (not moved and piece.partition_identity is not None and folder is not None
                and folder[0] == piece.partition_identity[0] and folder != piece.partition_identity):
            return [], [(lo, hi, "the partition's folder is another one than planned (the topic deleted and "
                                 "recreated, on a broker that writes no topic ids?)")]
        if not pdir.segments:
            return [], [(lo, hi, "the partition has no segments now")]
        part = _Partition(pdir, options, None)
        start, end = pdir.log_start_offset, part.log_end_offset()
        lost = []
        if start > lo:
            lost.append((lo, min(start, hi), f"the partition's log now starts at {start}"))
        if end < hi:
            lost.append((max(lo, start, end), hi, f"the partition's log now ends at {end} (truncated)"))
        first, last = max(lo, start), min(hi, end)
        if first >= last:
            return [], [r for r in lost if r[0] < r[1]]
        pieces = list(_pieces_for_range(part, first, last, None, set()))
        if not pieces and (piece.rolled or piece.remote_path is not None or piece.copy_states is not None
                           or pdir.tiered is not None or pdir.remote_below is not None):
            # a tiered topic (the slice was a copy's, or the partition has copies) is never compacted: Kafka
            # refuses remote storage for a compacted topic (LogConfig.validateNoRemoteStorageForCompactedTopic,
            # UnifiedLog.isRemoteLogEnabled), so offsets no file holds now were deleted, whatever changed since
            return [], lost + [(first, last, "no file of the partition holds them now, and a tiered topic is never "
                                             "compacted (Kafka refuses remote storage with cleanup.policy=compact): "
                                             "the copy or segment that held them was deleted")]
        cleaned = part.cleaner_offset is not None and last <= part.cleaner_offset
        if not pieces and not cleaned:
            # None of them is there, above the cleaner checkpoint (below it, compaction may have removed them all,
            # or a whole segment's). Unless a file that holds some now changed since planning, or holds some of
            # that segment's other offsets (a compacted copy made before planning), the file that held them was
            # deleted.
            seg_end = piece.end_offset if piece.next_base_offset is None else piece.next_base_offset
            seg_lo, seg_hi = max(piece.base_offset, start), min(end, seg_end)
            holding = [seg for i, seg in enumerate(pdir.segments)
                       if seg.base_offset < seg_hi and (part.next_base(i) is None or part.next_base(i) > seg_lo)]
            if (all(_fs.changed_since(seg.log_path, part.fs, piece.listed_at_ns, host) is False for seg in holding)
                    and not any(True for _ in _pieces_for_range(part, seg_lo, seg_hi, None, set()))):
                names = ", ".join(_fs.basename(seg.log_path) for seg in holding)
                return [], lost + [(first, last, f"{names}, which would hold them now, holds none of the offsets of "
                                                 "the segment they were in and did not change since planning (not a "
                                                 "compaction)")]
        return [_segment_slice(dataclasses.replace(p, gaps=piece.offset_gaps), piece.aborted,
                               _fs.segment_identity(p.part.segments[p.segment].log_path,
                                                    p.part.segments[p.segment].identity, part.fs),
                               None, None, None, piece.topic_id, None) for p in pieces], lost

    try:
        pdir = read_partition_again(piece.partition_path, piece.filesystem, topic=piece.topic,
                                    partition=piece.partition, remote_path=piece.remote_path,
                                    key_ring=options.tiered_key_ring, copy_states=piece.copy_states)
    except LayoutError:
        moved = (moved_partition(piece.topic, piece.partition, piece.partition_path, piece.filesystem, piece.topic_id,
                                 piece.move_dirs, options, (piece.start_offset, piece.end_offset))
                 if piece.move_dirs else None)
        if moved is None:
            raise
        slices, lost = relisted(moved, functools.partial(plan, moved=True))
    else:
        slices, lost = relisted(pdir, plan)
    # offsets the slice leaves out (offset_gaps) are no loss to it
    return slices, [(a, b, why) for first, end, why in lost for a, b in piece.outside_gaps(first, end)]


def _newly_covered(intervals: list[tuple[int, int]], start: int, end: int) -> int:
    """Bytes of ``[start, end)`` not yet in ``intervals`` (disjoint ranges of one file), which then take it in."""
    new = end - start
    for lo, hi in intervals:
        new -= max(0, min(end, hi) - max(start, lo))
    merged = [(start, end)]
    for lo, hi in intervals:
        if hi < merged[0][0] or lo > merged[0][1]:
            merged.append((lo, hi))
        else:
            merged[0] = (min(lo, merged[0][0]), max(hi, merged[0][1]))
    intervals[:] = merged
    return max(new, 0)


class Listing(NamedTuple):
    """One discovery of a scan's paths: every partition replica found (:func:`~kafkaseg.storage.layout.discover`)
    and the folders skipped, with why."""

    partitions: tuple[PartitionDir, ...]
    skipped: tuple[tuple[str, str], ...]
    unselected: tuple[tuple[str, int, str], ...] = ()  # (topic, partition, path) not read: the options leave them out
    started_ns: int | None = None  # the wall clock (time.time_ns) when the listing began
    log_dirs: tuple[str, ...] = ()  # the log dirs read (where a partition moved meanwhile is looked for)


def list_partitions(paths: str | Sequence[str] | None, options: ReadOptions) -> Listing:
    """Discover ``paths`` (default ``options.paths``) once, for :func:`select_partitions` and :func:`plan_scan`
    to share (a stream's micro-batch checks which partitions are gone and plans from the same listing). Partition
    folders of a log dir that the topic options leave out are only named, not read (on an object store, a listing
    and two reads each)."""
    if paths is None or (not isinstance(paths, (str, os.PathLike)) and not paths):
        paths = list(options.paths)
    if not paths:
        raise LayoutError("nothing to read: no path given")
    skipped: list[tuple[str, str]] = []
    unselected: list[tuple[str, int, str]] = []
    started = time.time_ns()
    hook = None
    if options.remote_log_metadata == "use":  # which tiered copies are live (remote_metadata's design)
        from kafkaseg.remote_metadata import read_remote_log_metadata

        hook = functools.partial(read_remote_log_metadata, lenient=options.on_corruption == "skip")
        if options.metadata_ways_on is not None:  # (a tool's own words for the read options')
            hook = functools.partial(hook, ways_on=options.metadata_ways_on)
    log_dirs: list[str] = []
    found = discover(paths, skipped=skipped, select=options.selects, unselected=unselected,
                     key_ring=options.tiered_key_ring, remote_log_metadata=hook, log_dirs=log_dirs)
    return Listing(tuple(found), tuple(skipped), tuple(unselected), started, tuple(log_dirs))


def copies_not_chosen(listing: Listing, report: PlanReport) -> dict[tuple[str, int], tuple[PartitionDir, ...]]:
    """Each partition's copies in ``listing`` the replica choice said in ``report`` passed over, in the order
    given (other log dirs' copies and tiered-storage copies, which hold the offsets of the rolled segments they were
    uploaded from): the copies a strict search that meets damage in the chosen one answers from
    (:func:`_offset_for_timestamp`) and a strict read's slices fall back to (``SegmentSlice.other_copies``):
    :func:`~kafkaseg.lookup.other_copies` of each choice, which the report lists by path."""
    listed = {p.path: p for p in listing.partitions}
    return {(r["topic"], r["partition"]): copies_beside([listed[c] for c in r["candidates"] if c in listed],
                                                        r["chosen"])
            for r in report.replicas if len(r["candidates"]) > 1}


def select_partitions(paths: str | Sequence[str] | None, options: ReadOptions,
                      report: PlanReport | None = None, *, check_listed: bool = True,
                      check_subscribed: bool = True, listing: Listing | None = None,
                      read_to: Callable[[PartitionDir], int | None] | None = None,
                      reach: Callable[[PartitionDir], int | None] | None = None,
                      choice_log_ends: ChoiceLogEnds | None = None) -> list[PartitionDir]:
    """The partition replicas a scan of ``paths`` with ``options`` reads (discovery, topic selection, replica
    choice), as :func:`plan_scan` finds them; without planning any slice (streaming's latest offsets).
    ``check_listed=False`` leaves out the error for a partition ``assign`` (or a JSON option) names that is not on
    disk (a stream whose partition folder went away reports data loss instead); ``check_subscribed=False`` the
    one for a ``subscribe`` topic with no partition on disk (see :func:`plan_scan`); ``listing``, ``read_to``,
    ``reach`` and ``choice_log_ends`` as in :func:`plan_scan`."""
    if listing is None:
        listing = list_partitions(paths, options)
    return _select_partitions(listing, options, None, report if report is not None else PlanReport(),
                              check_listed=check_listed, check_subscribed=check_subscribed, read_to=read_to,
                              reach=reach, choice_log_ends=choice_log_ends)


def _select_partitions(listing: Listing, options: ReadOptions, predicates: Predicates | None, report: PlanReport,
                       *, check_listed: bool = True, check_subscribed: bool = True,
                       read_to: Callable[[PartitionDir], int | None] | None = None,
                       reach: Callable[[PartitionDir], int | None] | None = None,
                       choice_log_ends: ChoiceLogEnds | None = None) -> list[PartitionDir]:
    found = listing.partitions
    report.skipped_folders.extend(listing.skipped)
    for path, _ in listing.skipped:
        if path.endswith("-future"):  # ReplicaAlterLogDirsThread's destination: the current copy is elsewhere
            report.notes.append(f"{path} is not read: the destination of a replica move between log dirs in "
                                f"progress (its current copy is in another log dir of the same broker)")
    selected: list[PartitionDir] = []
    pruned = "not selected by assign/subscribe/subscribePattern"
    left_out = list(listing.unselected)  # (topic, partition, path): folders discovery only named
    for pdir in found:
        if not options.selects(pdir.topic, pdir.partition):
            left_out.append((pdir.topic, pdir.partition, pdir.path))
            continue
        selected.append(pdir)
    report.partitions_pruned.extend((topic, partition, pruned) for topic, partition, _ in sorted(left_out))
    if check_listed:
        topics = {pdir.topic for pdir in found} | {topic for topic, _, _ in listing.unselected}
        _check_listed_partitions(options, selected, topics if check_subscribed else None)
    chosen: list[PartitionDir] = []
    checked_only: list[PartitionDir] = []
    for pdir in selected:
        if predicates is not None and not predicates.selects(pdir.topic, pdir.partition):
            report.partitions_pruned.append((pdir.topic, pdir.partition, "pruned by predicates"))
            if _offsets_asked_of(options, pdir.topic, pdir.partition):
                checked_only.append(pdir)
            continue
        chosen.append(pdir)
    # A partition a WHERE clause prunes is still checked against the offsets the options ask of it, so a query
    # fails (DataLossError, a starting timestamp with no match) the same with pushdown on or off, as Spark's Kafka
    # source resolves every assigned partition's offsets whatever the query filters
    # (a search that meets damage in the chosen copy answers from another, as in a partition planned: before, it
    # raised where the unpruned query went on)
    if options.replicas == "all":
        for pdir in checked_only:
            resolve_offsets(pdir, options)
    else:
        for choice in choose_replicas(checked_only, options.replicas, read_to=read_to, reach=reach,
                                      log_ends=choice_log_ends):
            resolve_offsets(choice.chosen, options, other_copies=copies_passed_over(choice),
                            notes=report.notes)
    if options.replicas == "all":
        check_one_incarnation(chosen)
        replicas = chosen
        for pdir in chosen:
            report.replicas.append({"topic": pdir.topic, "partition": pdir.partition, "chosen": pdir.path,
                                    "candidates": [pdir.path], "reason": "replicas=all"})
    else:
        replicas = []
        # (a stream's position is evidence for the copies it may have read to there: see choose_replicas)
        for choice in choose_replicas(chosen, options.replicas, read_to=read_to, reach=reach,
                                      log_ends=choice_log_ends):
            replicas.append(choice.chosen)
            report.replicas.append({"topic": choice.topic, "partition": choice.partition,
                                    "chosen": choice.chosen.path,
                                    "candidates": [c.path for c in choice.candidates], "reason": choice.reason})
    return replicas


def _offsets_asked_of(options: ReadOptions, topic: str, partition: int) -> bool:
    """Whether the starting/ending options ask something of ``topic``-``partition`` that resolving can refuse: an
    offset of its own (past the end or below the log start: failOnDataLoss) or a timestamp."""
    for limit in (options.starting, options.ending):
        if limit.kind == "timestamp":
            return True
        if limit.kind in ("offsets", "timestamps"):
            value = limit.lookup(topic, partition)
            if value is not None and (limit.kind == "timestamps" or value >= 0):
                return True
    return False


class AvailableRange(NamedTuple):
    """What one partition replica holds for a reader: ``earliest`` (the log start offset), ``latest`` (where a
    read with ``endingOffsets=latest`` stops: the high watermark, the log end or the last stable offset, per the
    options), ``log_end`` (the log end offset, where the files end), ``replica`` (the partition folder) and
    ``checkpointed`` (False when ``latest`` fell back to the log end because ``replication-offset-checkpoint``
    has no high watermark for it, or is unreadable); ``lenient``: the :class:`LenientDecision` s of an
    ``onCorruption=skip`` read that decided these offsets (an unreadable checkpoint's); ``topic_id``: the topic id
    in the replica's ``partition.metadata`` (None before Kafka 2.8 or when absent), which tells a topic deleted and
    recreated under the same name from the one these offsets were taken from; ``leader_epochs``: its
    ``leader-epoch-checkpoint``, which tells a log truncated and rewritten (an unclean leader election) from the
    one a reader's position was taken from (KIP-320); ``high_watermark``: the checkpointed high watermark (None
    without one), which may be above ``log_end`` (``latest`` stops at the log end); ``lost_past_end``: what a read
    to ``latest`` loses past it when that is the log end and the high watermark and recovery point say offsets
    past it were acknowledged and flushed (:attr:`PartitionReport.lost_past_end`, in the same words), else None;
    ``lost_past_end_offsets``: those offsets, ``(first, end)``."""

    earliest: int
    latest: int
    log_end: int
    replica: str = ""
    checkpointed: bool = True
    lenient: tuple[LenientDecision, ...] = ()
    topic_id: str | None = None
    leader_epochs: tuple[EpochEntry, ...] = ()
    high_watermark: int | None = None
    lost_past_end: str | None = None
    lost_past_end_offsets: tuple[int, int] | None = None


def available_range(partition_dir: PartitionDir, options: ReadOptions, *, log_ends: LogEndCache | None = None,
                    read_to: int | None = None, choice_log_ends: ChoiceLogEnds | None = None) -> AvailableRange:
    """The :class:`AvailableRange` of one partition replica under ``options`` (isolation level, ``upperBound``).
    An empty partition gives its log start offset three times. ``log_ends``: where the log end found is recorded,
    for a :func:`plan_scan` of the same listing to take (:class:`LogEndCache`); ``read_to``: where a stream's
    position says it read the log to (see :func:`plan_scan`); ``choice_log_ends``: the log ends a stream's replica
    choice read, whose walk of the copy chosen (this one) the range takes where it stands
    (:class:`~kafkaseg.storage.layout.ChoiceLogEnds`)."""
    return relisted(partition_dir, lambda current: _available_range(current, options, log_ends, read_to,
                                                                    choice_log_ends))


def _available_range(partition_dir: PartitionDir, options: ReadOptions, log_ends: LogEndCache | None = None,
                     read_to: int | None = None, choice_log_ends: ChoiceLogEnds | None = None) -> AvailableRange:
    report = PlanReport()  # for its lenient decisions
    part = _Partition(partition_dir, options, report, log_ends, read_to, choice_log_ends)
    checkpointed = partition_dir.high_watermark is not None or options.upper_bound == "logEndOffset"
    if not part.segments:
        start = partition_dir.log_start_offset or 0
        return AvailableRange(start, start, start, partition_dir.path, checkpointed,
                              topic_id=partition_dir.topic_id, leader_epochs=partition_dir.leader_epochs,
                              high_watermark=partition_dir.high_watermark)
    bounds = _bounds(part, None)
    lost_past_end, lost_offsets = _acknowledged_loss(part, bounds) or (None, None)
    return AvailableRange(bounds.log_start, bounds.upper, bounds.log_end, partition_dir.path, checkpointed,
                          tuple(report.lenient), partition_dir.topic_id, partition_dir.leader_epochs,
                          partition_dir.high_watermark, lost_past_end, lost_offsets)


def slice_order(piece: SegmentSlice) -> tuple:
    """The order of a plan's slices: by topic, partition, replica, segment, then position and offset."""
    return (piece.topic, piece.partition, piece.partition_path, piece.base_offset, piece.start_position,
            piece.start_offset)


def _check_listed_partitions(options: ReadOptions, selected: Iterable[PartitionDir], topics_found: set[str] | None
                             ) -> None:
    """A partition named in ``assign`` or in a JSON offsets/timestamps option must be among the partitions read
    (Spark fails when they differ; kafkaseg only when a listed one is missing, unlisted ones take the default),
    and a topic named in ``subscribe`` must have a partition there (Spark's SubscribeStrategy fails on a topic the
    cluster does not have; an empty result would hide a misspelt name), unless ``topics_found`` is None."""
    present = {(p.topic, p.partition) for p in selected}
    if options.subscribe is not None and topics_found is not None:
        absent = [t for t in options.subscribe if t not in topics_found]
        if absent:
            hints = [f"{topic!r}" + did_you_mean(topic, topics_found) for topic in absent]
            listed = ", ".join(sorted(topics_found)[:20]) + (", ..." if len(topics_found) > 20 else "")
            raise InvalidOptionError(
                f"option 'subscribe' names topics with no partition on disk under the given paths: "
                f"{', '.join(hints)}; the topics there: {listed or 'none'} (a topic whose partitions all live on "
                "other brokers is not in this broker's dirs: read those dirs too, or leave it out)")
    if options.assign is not None:  # Spark fails on an assigned partition the cluster does not have
        missing = sorted(set(options.assign) - present)
        if missing:
            names = ", ".join(f"{t}-{p}" for t, p in missing)
            raise InvalidOptionError(f"option 'assign' names topic-partitions that are not on disk under the given "
                                     f"paths: {names}")
    for limit in (options.starting, options.ending):
        if limit.kind not in ("offsets", "timestamps"):
            continue
        missing = sorted(limit.partitions() - present)
        if missing:
            names = ", ".join(f"{t}-{p}" for t, p in missing)
            raise InvalidOptionError(
                f"option {limit.option!r} names topic-partitions that are not being read: {names} (not found on "
                "disk, or not selected by assign/subscribe/subscribePattern)")
