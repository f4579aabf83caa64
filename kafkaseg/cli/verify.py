"""``kafkaseg verify DIR``: every check ``DumpLogSegments`` makes, plus CRCs, checkpoints and stray files.

Per segment (one read of the ``.log``, in bounded chunks):

* batch framing and CRCs (CRC-32C for v2, CRC-32 for legacy), and the tail: a truncated last batch (normal for an
  active segment of a live or crashed broker: a warning there, an error in a rolled segment), a zero-filled
  preallocated tail (info), any other invalid trailing bytes (error); after damage a lenient read reads past (bad
  framing, zeros hiding records, a batch running past the end of the segment) the walk goes on where that read
  does: at the batch the bad one's length field says follows when it checks out, else at the next ``.index`` entry
  whose batch checks out;
* offsets: strictly increasing across batches and records; the first batch at or above the file's base offset; the
  last offset below the next segment's base; non-consecutive offsets are listed and explained (compaction gaps:
  info; records going backwards or repeating: error);
* the ``.index`` against the log (each entry at a batch start whose lastOffset is the entry's offset, or an offset
  within that batch as brokers up to 1.0 and a <=2.0 broker's recovery wrote them, or the last offset of a later
  batch before the next entry's as a follower's multi-batch append writes it: info, once per file) and its
  sanity check; the ``.timeindex`` against the log (offset in a batch, timestamp that batch's max, increasing) and its
  sanity check (in the active segment, an entry past where a follower's truncation may have cut it, which leaves the
  entries past its cut in place, is judged with a warning when no entry after it fits the log:
  ``layout.first_entry_past_truncation_bound``, ``_Leftovers``); a missing
  ``.index``/``.timeindex`` (warning: a broker rebuilds it); batch maxTimestamp equal to the
  largest record timestamp (CreateTime v2); ``.txnindex`` sanity and an entry for every ABORT marker ending a
  transaction with data in the segment (a warning past the recovery point, whose files recovery rebuilds);
* ``.snapshot`` producer snapshots parse and pass their CRC; KRaft ``.checkpoint`` snapshots' batches.

Per log dir: offset checkpoints that cannot be read or parsed (an error for the high-watermark and log-start ones,
which decide where reads end and start; a warning for the recovery point and cleaner offset, which Kafka resets).

Per log dir given: the folders discovery skips (``-delete``, ``-stray``, names that are not
``<topic>-<partition>``: info; ``-future``, a replica move whose current copy is in another log dir: warning).

Per partition: high watermark <= log end offset, log start offset inside [first base, log end], recovery point <=
log end, leader-epoch checkpoint offsets increasing (an error) and <= log end (a warning: a stale entry a broker
drops on load), gaps between segments; files Kafka would
delete or ignore (``.deleted``, ``.cleaned``, ``.swap``, orphaned indexes, unknown names).

Each problem names the file and byte position. Severity: ``error`` (exit status 1), ``warning``, ``info``.

Per partition, the offsets no reader gets (``PartitionSummary.unreadable``): each range between the readable
batches around a piece of damage, with the timestamps of those batches, for an incident report.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Collection, NamedTuple

import numpy as np

from kafkaseg.cli.common import SkippedFolder, decode_batch, skipped_folders, whole_partition_offsets
from kafkaseg.decode.api import batch_start_offset
from kafkaseg.entry_check import BAD_BATCH_ENDS_SEGMENT, ResumptionEntries, resynchronised_batch
from kafkaseg.errors import CorruptCheckpointError, KafkaSegError, LayoutError
from kafkaseg.offset_outlier import batch_offset_field_problem, outlier_region
from kafkaseg.options import ReadOptions
from kafkaseg.storage import fs as _fs
from kafkaseg.storage import tiered
from kafkaseg.storage._index_file import index_location
from kafkaseg.storage.foreign_log import outside_batches
from kafkaseg.storage.layout import (CLUSTER_METADATA_TOPIC, KRAFT_SNAPSHOT_NAME, LOST_NEWEST_SEGMENT, SWAPS_IGNORED,
                                     SWAPS_RESOLVED, ForeignLog, ListingCheck, PartitionDir,
                                     below_cleaner_checkpoint,
                                     check_one_incarnation, discover,
                                     find_log_end, flushed_above_words, flushed_past_end, gaps_in_copies,
                                     high_watermark_above_words, foreign_log_cut, judge_tail, rolled_cut_of,
                                     transactions_open_at,
                                     unacknowledged_append, valid_cleaner_offset)
from kafkaseg.storage.layout import (LEFT_BY_TRUNCATION, _listed_again, active_segment_files,
                                     first_entry_past_truncation_bound, rewritten_past_high_watermark)
from kafkaseg.storage.offset_index import OffsetIndex
from kafkaseg.storage.producer_snapshot import read_producer_snapshot, snapshot_offset_from_name
from kafkaseg.storage.segment import SegmentReader, offsets_hidden_by_last_batch, snapshot_past, zeros_hiding_records
from kafkaseg.storage.time_index import NO_TIMESTAMP, TimeIndex
from kafkaseg.storage.txn_index import TransactionIndex, unindexed_abort
from kafkaseg.wire import walk as header_walk
from kafkaseg.wire.batch import iter_headers, read_header
from kafkaseg.wire.crc import computed_crc

__all__ = ["Problem", "SegmentSummary", "PartitionSummary", "UnreadableRange", "VerifyReport", "verify_paths",
           "verify_partition", "report_skipped_folders"]

ERROR, WARNING, INFO = "error", "warning", "info"
_KNOWN_FILE = re.compile(r"^(\d+)\.(log|index|timeindex|txnindex|snapshot)$")
_TEMP_FILE = re.compile(r"\.(deleted|cleaned|swap)$")
_TEMP_FILE_MEANING = {
    "deleted": "a file retention, the log cleaner or a deleteRecords removed, which a broker deletes "
               "file.delete.delay.ms later or at startup; not read",
    "cleaned": "the log cleaner's (or a segment split's) unfinished output, which a broker deletes at startup; not read",
    "swap": "a broker deletes or completes it at startup",
}
_TEMP_FILE_NOTE = "ignored temporary file "  # discovery's note on each .deleted and .cleaned file
_SIDE_FILES = {"leader-epoch-checkpoint", "partition.metadata"}
_CHUNK = 8 << 20
MAX_LISTED = 100
_NEVER = 1 << 64  # past any offset or position: an index cursor with no entries left
_READ_DEFAULTS = ReadOptions()  # the limits a read applies where it resumes after damage


@dataclass(frozen=True)
class Problem:
    severity: str
    file: str
    position: int | None
    message: str
    count: int = 1  # more than 1: one line standing for this many problems not listed one by one

    def __str__(self) -> str:
        where = self.file if self.position is None else f"{self.file} @ byte {self.position}"
        return f"{self.severity.upper()}: {where}: {self.message}"

    def as_dict(self) -> dict:
        return {"severity": self.severity, "file": self.file, "position": self.position, "message": self.message,
                "count": self.count}


@dataclass
class SegmentSummary:
    path: str
    base_offset: int
    size: int
    batches: int = 0
    records: int = 0
    first_offset: int | None = None  # the first batch's first offset (a legacy wrapper's first inner one)
    last_offset: int | None = None
    bad_crcs: int = 0
    compaction_gaps: int = 0
    unreadable: bool = False
    # where Kafka's recovery would truncate: the largest lastOffset before the first batch that fails its CRC (or
    # the first damage the walk read past), and its position (None: every batch passed)
    recoverable_last: int | None = None
    first_bad_position: int | None = None
    first_bad_base: int | None = None


@dataclass
class PartitionSummary:
    topic: str
    partition: int
    path: str
    segments: list[SegmentSummary] = field(default_factory=list)
    log_start_offset: int | None = None
    log_end_offset: int | None = None
    high_watermark: int | None = None
    note: str | None = None  # only some segments of the partition given: where its offsets come from
    unreadable: list[UnreadableRange] = field(default_factory=list)

    @property
    def name(self) -> str:
        return f"{self.topic}-{self.partition}"


@dataclass
class UnreadableRange:
    """Offsets of a partition no reader gets, between the readable batches around them: a batch failing its CRC
    (its header's offsets are not trusted: the CRC does not cover the base offset), bytes a lenient read skips (up
    to where it goes on, or the end of the segment), a segment that cannot be read, offsets missing between
    segments (not below the cleaner checkpoint). ``time_from``/``time_to``: the largest timestamp of the readable
    records before the range and the first timestamp of the readable batch after it (None: there is none); the lost
    records' own timestamps are in the damaged bytes. ``last`` None: the end is unknown (nothing readable after the
    range, and no high watermark past it)."""

    first: int
    last: int | None
    file: str
    position: int | None
    reason: str
    time_from: int | None = None
    time_to: int | None = None

    @property
    def offsets(self) -> int | None:
        return None if self.last is None else self.last - self.first + 1

    def as_dict(self) -> dict:
        return {"firstOffset": self.first, "lastOffset": self.last, "offsets": self.offsets, "file": self.file,
                "position": self.position, "reason": self.reason, "timeFromMs": self.time_from,
                "timeToMs": self.time_to}


class _ReadableTracker:
    """Follows a partition's walk batch by batch: the last readable offset and timestamp, and the damage seen since
    (one open range until the next readable batch closes it)."""

    def __init__(self, summary: PartitionSummary):
        self.summary = summary
        self.last_offset = -1  # of the last readable batch (-1: none yet)
        self.last_time: int | None = None  # the largest timestamp read so far
        self.open: UnreadableRange | None = None
        self.segment: str | None = None  # the segment walked, until its first readable batch
        self.gap_times: dict[str, tuple[int | None, int | None]] = {}  # segment -> times around a gap before it
        self.indexed_last: int | None = None  # the last offset the active segment's indexes prove past its end

    def segment_start(self, path: str) -> None:
        self.segment = path

    def gap(self, path: str, first: int, last: int, reason: str) -> None:
        """Offsets missing before segment ``path`` that no damage explains (a lost segment file, or compaction
        the cleaner checkpoint does not record)."""
        if any(u.first <= first and (u.last is None or u.last >= last) for u in self.summary.unreadable):
            return  # the end of damage already counted (a segment cut short before it)
        time_from, time_to = self.gap_times.get(path, (None, None))
        self.summary.unreadable.append(UnreadableRange(first, last, path, 0, reason, time_from, time_to))

    def damaged(self, file: str, position: int | None, reason: str) -> None:
        if self.open is None:
            self.open = UnreadableRange(self.last_offset + 1, None, file, position, reason, self.last_time)
        else:  # more damage before anything readable: the range is the first's, its reason says both
            where = os.path.basename(file) + ("" if position is None else f" @ byte {position}")
            self.open.reason += f"; then {reason} ({where})"

    def indexed(self, file: str, position: int, last: int, reason: str) -> None:
        """The active segment's indexes, a producer snapshot or the recovery point prove offsets up to ``last`` past
        its readable end (at ``position``): the range open there (a torn batch) ends at ``last`` unless a high
        watermark says more, or with none open (the file cut at a batch boundary) the offsets from the last readable
        one on are a range of their own."""
        if self.open is not None:
            self.open.reason += f"; {reason}"
            self.indexed_last = last
        elif last > self.last_offset:
            self.summary.unreadable.append(UnreadableRange(self.last_offset + 1, last, file, position, reason,
                                                           self.last_time))

    def readable(self, header, first: int) -> None:
        """The walk read a sound batch whose first offset is ``first`` (a legacy wrapper's header gives its last)."""
        first_time = header.max_timestamp if header.timestamp_type == 1 or header.magic < 2 \
            else header.base_timestamp
        first_time = first_time if first_time >= 0 else None
        if self.segment is not None:
            if self.open is None and self.last_offset >= 0 and first > self.last_offset + 1:
                self.gap_times[self.segment] = (self.last_time, first_time)
            self.segment = None
        if self.open is not None:
            if first > self.open.first:
                self.open.last = first - 1
                self.open.time_to = first_time
                self.summary.unreadable.append(self.open)
            self.open = None
        self.last_offset = max(self.last_offset, header.last_offset)
        if header.max_timestamp >= 0:
            self.last_time = header.max_timestamp if self.last_time is None else max(self.last_time,
                                                                                     header.max_timestamp)

    def readable_run(self, last_offset: int, max_timestamp: int) -> None:
        """:meth:`readable` for a run of sound batches after a readable one in the same segment, nothing open:
        ``last_offset`` the last one's, ``max_timestamp`` their largest (-1: none)."""
        self.last_offset = max(self.last_offset, last_offset)
        if max_timestamp >= 0:
            self.last_time = max_timestamp if self.last_time is None else max(self.last_time, max_timestamp)

    def finish(self, high_watermark: int | None, last_file: str) -> None:
        """At the partition's end: a range still open ends at the high watermark (acknowledged offsets), or its
        end is unknown; with none open, acknowledged offsets past the last readable batch (the end of the log
        lost: its last segment files, say) are a range of their own."""
        if self.open is not None:
            if high_watermark is not None and high_watermark > self.open.first:
                self.open.last = high_watermark - 1
            elif high_watermark is None and self.indexed_last is not None and self.indexed_last >= self.open.first:
                self.open.last = self.indexed_last
            if high_watermark is None or high_watermark > self.open.first:
                self.summary.unreadable.append(self.open)
            self.open = None
        elif high_watermark is not None and high_watermark > self.last_offset + 1 and self.last_offset >= 0:
            self.summary.unreadable.append(UnreadableRange(
                self.last_offset + 1, high_watermark - 1, last_file, None, "acknowledged (below the high "
                "watermark) but past the log's last batch: the end of the log is lost", self.last_time))


@dataclass
class VerifyReport:
    partitions: list[PartitionSummary] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    checked_log_dirs: set = field(default_factory=set, repr=False)  # log-dir files are reported once per log dir
    max_listed: int = MAX_LISTED  # problems listed per file and severity; the rest are counted
    _listed: dict = field(default_factory=dict, repr=False)
    _omitted: dict = field(default_factory=dict, repr=False)

    def add(self, severity: str, file: str, position: int | None, message: str, count: int = 1) -> None:
        """Record a problem (``count``: how many one line stands for): the first ``max_listed`` of each file and
        severity are listed, the rest counted (one bad base offset must not list one error per record of a
        segment)."""
        key = (file, severity)
        listed = self._listed.get(key, 0)
        if listed >= self.max_listed:
            self._omitted[key] = self._omitted.get(key, 0) + count
            return
        self._listed[key] = listed + 1
        self.problems.append(Problem(severity, file, position, message, count))

    def flush_omitted(self) -> None:
        """One line per file and severity for the problems counted but not listed."""
        for (file, severity), n in self._omitted.items():
            self.problems.append(Problem(severity, file, None, f"{n} more {severity} problems in this file, "
                                                                  f"not listed (the first {self.max_listed} are)", n))
        self._omitted.clear()
        self._listed.clear()

    def count(self, severity: str) -> int:
        return sum(p.count for p in self.problems if p.severity == severity)

    @property
    def errors(self) -> list[Problem]:
        return [p for p in self.problems if p.severity == ERROR]

    @property
    def ok(self) -> bool:
        return not self.errors

    def as_dict(self) -> dict:
        return {
            "ok": self.ok,
            "partitions": [{
                "topic": p.topic, "partition": p.partition, "path": p.path, "logStartOffset": p.log_start_offset,
                "logEndOffset": p.log_end_offset, "highWatermark": p.high_watermark, "note": p.note,
                "unreadableOffsets": [u.as_dict() for u in p.unreadable],
                "segments": [s.__dict__ for s in p.segments]} for p in self.partitions],
            "problems": [p.as_dict() for p in self.problems],
        }


#: What a ``.index`` entry at a batch's position says of the batch (:func:`_offset_entry_verdict`).
_LAST, _INSIDE, _LATER, _WRONG = 0, 1, 2, 3


def _offset_entry_verdict(offset, first, last):
    """What a ``.index`` entry holding ``offset`` at the position of a batch holding offsets ``first``..``last``
    says of it: ``_LAST``, its last offset (right); ``_INSIDE``, an offset inside it (right: a pre-1.1 broker's or a
    <=2.0 broker's recovery's entry, which holds the append's first offset); ``_LATER``, past it (a follower's
    append of several batches, indexed at its first: right when a batch reaches the offset before the next entry's
    position); ``_WRONG``, below it. The one rule for :meth:`_OffsetIndexCursor.at_batch` (ints) and
    :meth:`_ChunkRecords._index_entries` (numpy arrays, elementwise: each comparison is 0 or 1, so the sum is one
    verdict). ``first`` is not looked at when ``offset`` is ``last``."""
    return (offset != last) * (_INSIDE + (offset > last) * (_LATER - _INSIDE)
                               + ((offset < first) & (offset < last)) * (_WRONG - _INSIDE))


#: What a ``.timeindex`` entry met at a batch says of it (:func:`_time_entry_verdict`).
_TIME_RIGHT, _TIME_NO_BATCH, _TIME_STAMP = 0, 1, 2


def _time_entry_verdict(offset, timestamp, base_offset, max_timestamp):
    """What a ``.timeindex`` entry (``offset``, ``timestamp``) met at the batch that first reaches its offset (whose
    offset field is ``base_offset``, its maxTimestamp as stored ``max_timestamp``) says of it: ``_TIME_RIGHT``;
    ``_TIME_NO_BATCH``, an offset below the batch (in none); ``_TIME_STAMP``, a timestamp that is not the batch's
    maxTimestamp (an offset inside the batch is right: brokers before 3.8 stored one). The one rule for
    :meth:`_TimeIndexCursor.at_batch` (ints) and :meth:`_ChunkRecords._index_entries` (numpy arrays, elementwise)."""
    return ((offset < base_offset) * _TIME_NO_BATCH
            + ((offset >= base_offset) & (timestamp != max_timestamp)) * _TIME_STAMP)


class _EntryCursor:
    """An index's entries in the order of ``keys`` (one per entry), walked as the log walk passes them: ``n`` is the
    current entry's number in the file, ``next`` its key (``_NEVER`` after the last). Memory is the index's."""

    def __init__(self, index, keys, path: str, report: VerifyReport, truncation_bound: "_Leftovers | None" = None):
        self.index, self.path, self.report = index, path, report
        self.keys = keys
        # (the first entry a truncation may have left, and why: see first_entry_past_truncation_bound)
        self.truncation_bound = truncation_bound
        self.order = np.argsort(keys, kind="stable")
        self.sorted_keys = keys[self.order]  # (the keys in walk order: where a run of batches ends in them)
        self.i = -1
        self._advance()

    def _advance(self) -> None:
        self.i += 1
        if self.i < len(self.order):
            self.n = int(self.order[self.i])
            self.next = int(self.keys[self.n])
        else:
            self.next = _NEVER

    def pass_to(self, key: int) -> None:
        """Go past the entries whose key is ``key`` or below: a run of batches that had nothing to say about them
        (:meth:`_ChunkRecords.sound_run`)."""
        self.i = max(self.i, int(self.sorted_keys.searchsorted(key, side="right"))) - 1
        self._advance()

    def add(self, n: int, what: str) -> None:
        """Report ``what`` of entry ``n``: an error, or a warning for an entry a truncation may have left."""
        _add_entry_problem(self.report, self.path, n, self.index.ENTRY_SIZE, what, self.truncation_bound)


class _Leftovers:
    """The active segment's index entries a follower's truncation may have left, judged once the walk is done. The
    entries a truncation leaves sit in the slots after those the new generation wrote (``truncateToEntries`` moves
    the write position back to the cut; new appends overwrite from there): a suffix of the file's entries, past the
    last one that fits the log, at or past ``first`` (:func:`~kafkaseg.storage.layout.
    first_entry_past_truncation_bound`). A problem of an entry at or past ``first`` waits here (``defer``); the
    entries the walk found past the log's end are ``unfit`` too; ``settle`` then reports each deferred problem
    as a warning when no entry after it fits the log, else as the error it is (an entry that fits nothing followed
    by ones that do is damage, whatever the epochs say)."""

    def __init__(self, bound: tuple[int, str], entries: int):
        self.first, self.why = bound
        self.entries = entries
        self.deferred: list[tuple[str, int, int, str]] = []  # (path, n, entry size, what)
        self.unfit: set[int] = set()

    def defer(self, path: str, n: int, entry_size: int, what: str) -> None:
        self.deferred.append((path, n, entry_size, what))
        self.unfit.add(n)

    def settle(self, report: VerifyReport) -> None:
        if not self.deferred:
            return  # (the common case: nothing to judge, no pass over the entries)
        last_fit = next((n for n in range(self.entries - 1, -1, -1) if n not in self.unfit), -1)
        for path, n, entry_size, what in self.deferred:
            if n > last_fit:
                report.add(WARNING, path, n * entry_size, f"{what} ({LEFT_BY_TRUNCATION.format(bound=self.why)})")
            else:
                report.add(ERROR, path, n * entry_size, what)
        self.deferred.clear()


def _add_entry_problem(report: VerifyReport, path: str, n: int, entry_size: int, what: str,
                      truncation_bound: "_Leftovers | None") -> None:
    """Report ``what`` of entry ``n`` of an index: an error, or, when the entry is at or past where the active
    segment's entries a follower's truncation may have left begin (``truncation_bound``: :class:`_Leftovers`),
    judged with the others there once the walk is done."""
    if truncation_bound is not None and n >= truncation_bound.first:
        truncation_bound.defer(path, n, entry_size, what)
    else:
        report.add(ERROR, path, n * entry_size, what)


class _OffsetIndexCursor(_EntryCursor):
    """The ``.index`` entries in position order, matched with the batches as the walk passes them. Kafka indexes an
    APPEND, not a batch: ``LogSegment.append`` writes (the append's largest offset, the position of its first
    batch). A leader appends one batch at a time, so the entry is the batch's lastOffset (brokers since 1.1;
    recovery since 2.1); a follower appends each fetched chunk of batches at once, so its entry's offset may lie in
    a later batch (``pending`` until the walk reaches it: before the next entry's batch is right, ``appended``);
    brokers up to 1.0 indexed an append's FIRST offset (Kafka commit a5cd34d7962, in 1.1.0) and recovery kept
    indexing ``batch.baseOffset`` until 2.1.0 (d2b2fbdf94c): another offset of the batch (``inside``). The
    broker's lookup only needs an entry's offset to be at least the first offset at its position, so all are
    right (counted, reported once per segment by ``finish``); DumpLogSegments lists the last two as mismatches."""

    def __init__(self, index: OffsetIndex, path: str, report: VerifyReport,
                 truncation_bound: "_Leftovers | None" = None):
        super().__init__(index, index.positions, path, report, truncation_bound)
        self.sorted_offsets = index.offsets[self.order]
        self.inside = 0
        self.appended = 0
        self.pending: tuple[int, int, int] | None = None  # (entry number, offset, position) past its batch
        self.pending_offset = _NEVER

    def _mismatch(self, what: str, n: int | None = None, position: int | None = None) -> None:
        n = self.n if n is None else n
        offset = int(self.index.offsets[n])
        self.add(n, f"entry offset {offset} -> position {self.next if position is None else position}: {what}")

    def at_batch(self, position: int, last_offset: int, first_offset) -> None:
        """The walk reached a batch at ``position`` >= ``next``, or one whose ``last_offset`` reaches a pending
        entry's offset; ``first_offset()`` gives the batch's first offset (called only for an entry that is not
        its last offset: a legacy wrapper is decoded for it)."""
        if self.pending is not None and last_offset >= self.pending_offset:
            n, offset, at = self.pending
            if position < self.next:  # within the append that starts at the entry's position
                self.appended += 1
            else:
                self._mismatch(f"the offset lies in no batch before the next entry's (at {self.next})", n, at)
            self.pending, self.pending_offset = None, _NEVER
        while self.next < position:
            self._mismatch("not at a batch boundary")
            self._advance()
        while self.next == position:
            if self.pending is not None:  # the next entry came first: the pending offset is in no batch before it
                n, offset, at = self.pending
                self._mismatch(f"the offset lies in no batch before the next entry's (at {self.next})", n, at)
                self.pending, self.pending_offset = None, _NEVER
            offset = int(self.index.offsets[self.n])
            first = first_offset() if offset != last_offset else last_offset  # (a legacy wrapper decoded only then)
            verdict = _offset_entry_verdict(offset, first, last_offset)
            if verdict == _INSIDE:
                self.inside += 1
            elif verdict == _LATER:
                self.pending, self.pending_offset = (self.n, offset, position), offset
            elif verdict == _WRONG:
                self._mismatch(f"the batch there holds offsets {first}..{last_offset}")
            self._advance()

    def skip(self, bad: int, resume: int) -> None:
        """The walk met damage at byte ``bad`` and goes on at ``resume``: entries before ``bad`` that no batch start
        matched are mismatches; those pointing into the skipped bytes, and an offset waiting for a later batch, are
        not checked (what they point at is damaged, as the log's error says)."""
        self.pending, self.pending_offset = None, _NEVER
        while self.next < bad:
            self._mismatch("not at a batch boundary")
            self._advance()
        while self.next < resume:
            self._advance()

    def finish(self, walked_to: int | None, log_size: int, unflushed: str | None = None) -> None:
        """After the walk, which read complete batches up to byte ``walked_to`` (None: not known) of a
        ``log_size``-byte log: the entries it did not reach, or whose offset no batch reached, point past the end
        of the complete batches (a log cut short, or damaged at its end): one line for them all, a warning when
        ``unflushed`` (why: :data:`_UNFLUSHED` or :data:`_UNFLUSHED_ROLLED`)."""
        past = [] if self.pending is None else [self.pending[0]]
        while self.next != _NEVER:
            past.append(self.n)
            self._advance()
        if self.truncation_bound is not None:  # (entries that fit no batch of the log either)
            self.truncation_bound.unfit.update(past)
        if past:
            past.sort()
            offsets, positions = self.index.offsets[past], self.index.positions[past]
            beyond = int(np.count_nonzero(positions >= log_size))
            where = "the end of the complete batches" if walked_to is None else \
                f"the last complete batch, which ends at byte {walked_to}"
            beyond = f" ({beyond} past the end of the {log_size}-byte log)" if beyond else ""
            self.report.add(WARNING if unflushed else ERROR, self.path, past[0] * OffsetIndex.ENTRY_SIZE, _past_end(
                offsets, ("position {}", "positions {}..{}", int(positions[0]), int(positions[-1])),
                (f"points past {where}{beyond}", f"point past {where}{beyond}"), unflushed), len(past))
        if self.inside:
            entries = "1 entry holds" if self.inside == 1 else f"{self.inside} entries hold"
            self.report.add(INFO, self.path, None, f"{entries} an offset inside the batch pointed at, not its last "
                            "offset: written by a pre-1.1 broker or a <=2.0 broker's recovery, where entries hold "
                            "the append's first offset (right for lookups, which only need an entry's offset to be "
                            "at most the offsets it points to)")
        if self.appended:
            entries = "1 entry holds" if self.appended == 1 else f"{self.appended} entries hold"
            self.report.add(INFO, self.path, None, f"{entries} the last offset of a later batch than the one "
                            "pointed at: a follower's append of several fetched batches at once, indexed as one "
                            "(LogSegment.append: the append's largest offset at its first batch; right for lookups)")


class _TimeIndexCursor(_EntryCursor):
    """The ``.timeindex`` entries in offset order, matched with the batches as the walk passes them (offset in a
    batch, timestamp that batch's maxTimestamp; brokers before 3.8 stored an offset inside the batch, accepted)."""

    def __init__(self, index: TimeIndex, path: str, report: VerifyReport,
                 truncation_bound: "_Leftovers | None" = None):
        super().__init__(index, index.offsets, path, report, truncation_bound)
        timestamps = index.timestamps
        self.sorted_timestamps = timestamps[self.order]
        if len(timestamps):  # timestamps increase in file order (DumpLogSegments.dumpTimeIndex)
            previous = np.concatenate(([NO_TIMESTAMP], timestamps[:-1]))
            for n in np.flatnonzero(previous >= timestamps):
                self.add(int(n), f"timestamp {int(timestamps[n])} is not above the previous entry's "
                                 f"{int(previous[n])}")

    def _mismatch(self, what: str) -> None:
        self.add(self.n, what)

    def at_batch(self, base_offset: int, last_offset: int, max_timestamp: int) -> None:
        """The walk reached a batch whose ``last_offset`` >= ``next``."""
        while self.next <= last_offset:
            offset, timestamp = self.next, int(self.index.timestamps[self.n])
            verdict = _time_entry_verdict(offset, timestamp, base_offset, max_timestamp)
            if verdict == _TIME_NO_BATCH:
                self._mismatch(f"offset {offset} is in no batch (the next batch spans {base_offset}..{last_offset})")
            elif verdict == _TIME_STAMP:
                self._mismatch(f"timestamp {timestamp} for offset {offset} differs from the batch's max timestamp "
                               f"{max_timestamp}")
            self._advance()

    def skip(self, first: int) -> None:
        """The walk goes on at a batch whose first offset is ``first``, after damage: entries for the offsets
        before it (in the skipped bytes) are not checked."""
        while self.next < first:
            self._advance()

    def finish(self, last_offset: int | None, unflushed: str | None = None) -> None:
        """After the walk, whose last complete batch ends at offset ``last_offset`` (None: no batch): the entries
        for later offsets, one line for them all, a warning when ``unflushed`` (why: :data:`_UNFLUSHED` or
        :data:`_UNFLUSHED_ROLLED`)."""
        past = []
        while self.next != _NEVER:
            past.append(self.n)
            self._advance()
        if self.truncation_bound is not None:  # (entries that fit no batch of the log either)
            self.truncation_bound.unfit.update(past)
        if past:
            batch = "the last complete batch" + ("" if last_offset is None else f", which ends at offset {last_offset}")
            self.report.add(WARNING if unflushed else ERROR, self.path, past[0] * TimeIndex.ENTRY_SIZE, _past_end(
                self.index.offsets[past], ("at byte {} of the file", "at bytes {}..{} of the file",
                                           past[0] * TimeIndex.ENTRY_SIZE, past[-1] * TimeIndex.ENTRY_SIZE),
                (f"holds an offset past {batch}", f"hold offsets past {batch}"), unflushed), len(past))


def _past_end(offsets, where: tuple[str, str, int, int], what: tuple[str, str], unflushed: str | None) -> str:
    """One line for the entries of an index past the end of the log's complete batches, whose ``offsets`` are
    given (in file order): ``where`` they are (a format for one entry, one for several, the first and the last
    place) and ``what`` they do (said of one, of several); why, as ``unflushed`` says when given."""
    one, several, first, last = where
    why = unflushed or _CUT_SHORT
    if len(offsets) == 1:
        return f"1 entry (offset {int(offsets[0])}, {one.format(first)}) {what[0]}: {why}"
    return (f"{len(offsets)} entries (offsets {int(offsets[0])}..{int(offsets[-1])}, {several.format(first, last)}) "
            f"{what[1]}: {why}")


_CUT_SHORT = "the log is cut short (a partial copy?) or damaged at its end"
_UNFLUSHED = (_CUT_SHORT + ", or, as this is the active segment and no recovery point is past its readable end, a "
              "crash lost the log's unflushed pages and kept the index's (Kafka's recovery truncates there)")
_UNFLUSHED_ROLLED = (_CUT_SHORT + ", or, as no recovery point is past this rolled segment's readable end, a crash "
                     "before the flush of its roll was checkpointed lost the log's unflushed pages and kept the "
                     "index's (the reads warn of those offsets, as possibly lost)")


def _without_entry_being_written(index, entry_size: int, log_size: int, path: str, add):
    """The active segment's ``index`` without its last entry when the sanity check fails on that entry alone (or on
    non-zero bytes just after it), each problem a warning: a live broker writes an entry in place (8 or 12 bytes)
    and verify may catch it half-written, and a crash may tear it (a broker's recovery rebuilds an active segment's
    indexes anyway). Any other problem leaves the index as it is, to be reported as an error."""
    problems = index.sanity_problems(log_size) if index is not None else []
    if not problems:
        return index
    n = len(index)
    window = (max(n - 1, 0) * entry_size, (n + 1) * entry_size)
    if not all(p.position is not None and window[0] <= p.position < window[1] for p in problems):
        return index
    for p in problems:
        add(WARNING, path, p.position, f"sanity check: {p.detail} (the active segment's last entry: a live broker "
                                       "may be writing it, or a crash tore it; left out of the checks)")
    keep = n - 1 if any(p.position < n * entry_size for p in problems) else n
    first, second = (getattr(index, name) for name, _ in index._COLUMNS)
    return type(index)(index.base_offset, first[:keep], second[:keep], path=index.path, file_size=index.file_size,
                       tail_entries=index.tail_entries)


def _check_trimmed(index, label: str, add) -> None:
    """A rolled segment's ``index`` ending in zeros (a preallocated tail, which loading leaves out): a warning.
    Kafka trims an index to its entries when it rolls the segment (``LogSegment.onBecomeInactiveSegment``), when
    it recovers it and when it closes it (``AbstractIndex.close``), so zeros there are entries zeroed by damage or
    a copy of a live broker's preallocated file. (Non-zero bytes in them are the sanity check's error.)"""
    if index is None or not index.tail_entries or index.tail_garbage_position is not None:
        return
    n, size = index.tail_entries, index.ENTRY_SIZE
    add(WARNING, label, len(index) * size, f"{n} {'entry' if n == 1 else 'entries'} of zeros from byte "
        f"{len(index) * size} to the end of the file ({n * size} bytes): a rolled segment's index ends at its last "
        "entry (Kafka trims it when it rolls, recovers or closes the segment), so these are entries zeroed by "
        "damage or a copy of a preallocated file; the entries before them are checked")


def _truncation_bound(pdir: PartitionDir, log_path: str, index) -> "_Leftovers | None":
    """The :class:`_Leftovers` of ``index`` (the segment ``log_path``'s): from its first entry at or past where a
    follower's truncation may have cut the segment (:func:`~kafkaseg.storage.layout.
    first_entry_past_truncation_bound`), or None."""
    if index is None:
        return None
    bound = first_entry_past_truncation_bound(pdir, log_path, index.offsets, index.base_offset)
    return None if bound is None else _Leftovers(bound, len(index))


def _add_sanity_problem(report: VerifyReport, label: str, index, problem, truncation_bound) -> None:
    """A sanity problem of ``index``: of an entry a truncation may have left (at or past ``truncation_bound``), a
    warning; else (or of no entry: the file's length, its tail) an error."""
    n, rest = divmod(problem.position, index.ENTRY_SIZE) if problem.position is not None else (None, None)
    if truncation_bound is not None and rest == 0 and truncation_bound.first <= n < len(index):
        _add_entry_problem(report, label, n, index.ENTRY_SIZE, f"sanity check: {problem.detail}", truncation_bound)
    else:
        report.add(ERROR, label, problem.position, f"sanity check: {problem.detail}")


def _load_index(kind, path: str, seg, pdir: PartitionDir, report: VerifyReport, window, label: str):
    try:
        return kind.load(path, seg.base_offset, pdir.filesystem, window=window)
    except KafkaSegError as err:
        report.add(ERROR, label, getattr(err, "position", None), str(err))
        return None


def _index_label(path: str | None, window: tuple[int, int] | None, what: str) -> str | None:
    """How the report names an index: its file, or for an index held in a range of an object with several
    (Aiven's tiered-storage ``.indexes``) the object and the range, positions then counting from its start."""
    if window is None:
        return path
    return f"{path} ({what}, bytes {window[0]}..{window[0] + window[1]})"


def _append_begun_since(pdir: PartitionDir, reader: SegmentReader, header, position: int):
    """An append a broker with ``log.preallocate`` began after :func:`unacknowledged_append` was asked, before
    the walk read its bytes at ``position`` in the active segment and found its CRC bad (``header``: the walk's,
    with a position in its chunk): what that function says when asked again (still in progress), or, when the
    batch there passes its CRC now (the broker finished it since the walk read it) and holds no acknowledged
    offset, its header at ``position``; else None (corruption)."""
    again = unacknowledged_append(pdir, max_batch_bytes=None)
    if again is not None and again.position == position:
        return again
    now = header._replace(position=position)
    hw = pdir.high_watermark
    if (hw is None or header.base_offset >= hw) and reader.crc_is_valid(now):
        return now
    return None


def _tail_damage(reader: SegmentReader, tail, is_active: bool) -> tuple[int, str | None, str, bool] | None:
    """What the walk's ``tail`` is when it is damage a lenient read skips (``(byte, error, reason, framing)`` as
    ``_verify_segment``'s ``broken``): zeros hiding records (data follows them: bad framing to a decoder), or a
    batch running past the end of a rolled segment (cut short, or a corrupt length field); for a batch running
    past the end of the active segment the error is None (a torn write, unless whole batches follow). None: zeros
    to the end (preallocation; after a rolled segment's batches an error of its own, which nothing reads past)."""
    if tail.reason == "zero-filled tail":
        hiding = zeros_hiding_records(reader, tail.position)
        return None if hiding is None else (tail.position, hiding, "zeros hiding records", True)
    if is_active:
        return tail.position, None, "a torn batch", False
    return (tail.position, f"{tail.length} invalid bytes at the end of a rolled segment ({tail.detail})",
            "the rolled segment ends mid-batch (cut short, or a corrupt length field)", False)


class _Resumption:
    """Where a lenient read of segment ``i`` of ``pdir`` goes on after damage at a byte, so verify's unreadable
    ranges are what such a read leaves out: after bad framing, at the batch its length field says follows when that
    one checks out (the decoders' rule, :func:`~kafkaseg.entry_check.resynchronised_batch`); else at the next ``.index``
    entry whose batch checks out (the scan's own :class:`~kafkaseg.entry_check.ResumptionEntries`, loaded at the
    first damage), both with a read's default limits."""

    def __init__(self, pdir: PartitionDir, i: int, index_path: str | None, index_window):
        self.pdir, self.i, self.index_path, self.index_window = pdir, i, index_path, index_window
        self._entries: ResumptionEntries | None = None

    def after(self, reader: SegmentReader, bad: int, last_seen: int, framing: bool) -> tuple[int, int, str] | None:
        """``(position, first offset, how it is found)`` of the batch a lenient read goes on at after damage at byte
        ``bad`` (``framing``: bad framing, which the decoder may step over by its length field), the last offset
        read before it being ``last_seen``; None when it reads no more of the segment."""
        found = resynchronised_batch(reader, bad, _READ_DEFAULTS.max_batch_bytes,
                                     _READ_DEFAULTS.max_decompressed_batch_bytes) if framing else None
        if found == BAD_BATCH_ENDS_SEGMENT:
            return None
        if found is not None:
            return (*found, "the batch its length field says follows it, which checks out")
        if self._entries is None:
            seg, segments = self.pdir.segments[self.i], self.pdir.segments
            self._entries = ResumptionEntries(
                seg.log_path, self.index_path, seg.base_offset,
                segments[self.i + 1].base_offset if self.i + 1 < len(segments) else None, self.pdir.filesystem,
                max_batch_bytes=_READ_DEFAULTS.max_batch_bytes,
                max_decompressed_bytes=_READ_DEFAULTS.max_decompressed_batch_bytes, index_window=self.index_window)
        found = self._entries.next_checked(bad, None, last_seen)
        return None if found is None else (*found, "the next .index entry whose batch checks out")

    def close(self) -> None:
        if self._entries is not None:
            self._entries.close()


def _verify_segment(pdir: PartitionDir, i: int, report: VerifyReport, summary: SegmentSummary,
                    last_offset_before: int, deep: bool, tracker: _ReadableTracker, listing: ListingCheck) -> int:
    """One walk of the segment's ``.log`` (in bounded chunks) checking headers, CRCs, record offsets and timestamps
    and the ``.index``/``.timeindex`` entries as it passes them, going on after damage where a lenient read does
    (:class:`_Resumption`); memory does not grow with the segment (counters, the previous offset, two index cursors;
    problems beyond the first few per file are counted). ``listing``: whether the partition is still as listed,
    asked when the active segment's tail needs it. Returns the last offset seen."""
    seg = pdir.segments[i]
    path = seg.log_path
    add = report.add
    last_offset = last_offset_before
    seg_last = None  # the largest batch lastOffset
    after_bad_crc = False
    ended_damaged = False  # the walk ended at damage: the offsets up to the next segment's base are unknown
    is_active = pdir.is_active_segment(path)
    index_path, index_window = index_location(seg, "index")
    timeindex_path, timeindex_window = index_location(seg, "timeindex")
    txnindex_path, txnindex_window = index_location(seg, "txnindex")
    index_label = _index_label(index_path, index_window, "offset index")
    timeindex_label = _index_label(timeindex_path, timeindex_window, "time index")
    txnindex_label = _index_label(txnindex_path, txnindex_window, "transaction index")
    offset_index = (_load_index(OffsetIndex, index_path, seg, pdir, report, index_window, index_label)
                    if index_path else None)
    time_index = (_load_index(TimeIndex, timeindex_path, seg, pdir, report, timeindex_window, timeindex_label)
                  if timeindex_path else None)
    for kind, present in ((".index", index_path), (".timeindex", timeindex_path)):
        if not present:  # LogSegment.sanityCheck fails and the broker recovers the segment, rebuilding both
            if kind == ".timeindex" and seg.log_size and _first_magic(seg, pdir) in (0, 1):
                add(INFO, path, None, "no .timeindex file (brokers before 0.10.1 wrote none for message formats "
                                      "v0/v1; a newer broker rebuilds it at startup)")
            else:
                add(WARNING if seg.log_size else INFO, path, None,
                    f"no {kind} file (a broker rebuilds it at startup)")
    with SegmentReader(path, pdir.filesystem) as reader:
        # The indexes are judged against the log as the walk reads it, opened after they were loaded: a live
        # broker appends (and indexes) after the listing, whose size would put new entries "outside the log".
        log_size = reader.size
        if is_active:
            offset_index = _without_entry_being_written(offset_index, 8, log_size, index_label, add)
            time_index = _without_entry_being_written(time_index, 12, log_size, timeindex_label, add)
        if not is_active:
            for index, label in ((offset_index, index_label), (time_index, timeindex_label)):
                _check_trimmed(index, label, add)
        # (the active segment's entries from which a follower's truncation may have left them: warnings)
        offsets_bound, times_bound = (_truncation_bound(pdir, path, index) for index in (offset_index, time_index))
        if offset_index is not None:  # (entries past the log's end: the cursor's one line for all of them)
            for p in offset_index.sanity_problems(None):
                _add_sanity_problem(report, index_label, offset_index, p, offsets_bound)
        offsets_cursor = (_OffsetIndexCursor(offset_index, index_label, report, offsets_bound) if offset_index
                          else None)
        times_cursor = _TimeIndexCursor(time_index, timeindex_label, report, times_bound) if time_index else None
        next_index_position = offsets_cursor.next if offsets_cursor else _NEVER
        pending_index_offset = _NEVER
        next_time_offset = times_cursor.next if times_cursor else _NEVER
        # an append a broker with log.preallocate is still writing: a warning, and not part of the log
        in_progress = unacknowledged_append(pdir, max_batch_bytes=None) if is_active else None
        appending = None  # (byte, line) of that append when the walk met it: where the log ends, said once below
        final = None
        resumption = _Resumption(pdir, i, index_path, index_window)
        # where a read of the segment ends (the next segment's base; the high watermark for the active segment)
        next_base = pdir.segments[i + 1].base_offset if i + 1 < len(pdir.segments) else None
        offset_limit = pdir.high_watermark if next_base is None else next_base
        read_last = seg.base_offset - 1  # the last offset of the last batch a read of the segment takes
        skipped_to = -1  # the end of the region a corrupt offset field's batch leaves out
        skip_times = False  # a batch with a corrupt offset field was skipped: time index entries up to the next
        start = 0
        while True:  # one walk, and one more from each sound .index entry after damage, as a lenient read goes on
            walk = reader.chunks(start, target_bytes=_CHUNK, partial_append=is_active)
            broken = None  # (byte, error, reason for the unreadable range): damage a lenient read skips
            raised = False
            try:
                for chunk_position, buf in walk:
                    records = _ChunkRecords(buf, chunk_position, path, offset_limit, reader, offsets_cursor,
                                            times_cursor)
                    headers = _Headers(buf)
                    for header in headers:
                        if (deep and _DECODE_RUNS and not after_bad_crc and not skip_times and tracker.open is None
                                and tracker.segment is None and summary.first_offset is not None):
                            run = records.sound_run(header.position, max(last_offset, read_last),
                                                    next_index_position - chunk_position, pending_index_offset,
                                                    next_time_offset)
                            if run is not None:  # (what the code below does for each of these batches, at once)
                                summary.batches += run.batches
                                summary.records += run.records
                                summary.compaction_gaps += run.gaps + (last_offset >= 0
                                                                       and run.first_record != last_offset + 1)
                                last_offset = run.last_record
                                read_last = max(read_last, run.last)
                                seg_last = run.last if seg_last is None or run.last > seg_last else seg_last
                                if summary.first_bad_position is None:
                                    summary.recoverable_last = seg_last
                                tracker.readable_run(run.last, run.max_timestamp)
                                if offsets_cursor is not None:  # (past the entries at its batches, which said
                                    offsets_cursor.pass_to(chunk_position + run.last_position)  # nothing)
                                    offsets_cursor.inside += run.inside
                                    offsets_cursor.appended += run.appended
                                    next_index_position = offsets_cursor.next
                                if times_cursor is not None:
                                    times_cursor.pass_to(run.last)
                                    next_time_offset = times_cursor.next
                                if is_active:
                                    final = records.final(run, final)
                                headers.position = run.end
                                continue
                        position = chunk_position + header.position
                        crc = computed_crc(buf, header)
                        if (is_active and crc != header.crc
                                and (in_progress is None or position != in_progress.position)):
                            # (a live broker may have begun it after the look before the walk)
                            in_progress = _append_begun_since(pdir, reader, header, position) or in_progress
                        if (in_progress is not None and position == in_progress.position
                                and crc != header.crc):  # (the broker may have finished it since)
                            appending = (position, f"the last batch ({header.base_offset}..{header.last_offset}) "
                                         "fails its CRC and only zeros follow it: an append in progress on a broker "
                                         "with log.preallocate (none of its offsets acknowledged); a broker's "
                                         "recovery truncates it")
                            continue
                        summary.batches += 1
                        if position < skipped_to:  # (in the region of a corrupt offset field: reported once)
                            continue
                        corrupt = None if crc != header.crc else _corrupt_offset_field(
                            reader, buf, header, path, chunk_position, read_last, seg.base_offset, offset_limit,
                            next_base, pdir, i, records)
                        if corrupt is not None:  # skipped by a lenient read, which goes on after it
                            corrupt, skipped_to = corrupt
                            if summary.first_offset is None:  # (its offsets, unknown, are the unreadable range's)
                                summary.first_offset = read_last + 1
                            add(ERROR, path, position, f"{corrupt} (a read with onCorruption=skip leaves the batch "
                                                       "out and reads on)")
                            tracker.damaged(path, position, "a batch whose offset field, which the CRC does not "
                                                            "cover, is corrupt")
                            if offsets_cursor is not None:  # (its entry names the batch's true offset)
                                offsets_cursor.skip(position, skipped_to)
                                next_index_position = offsets_cursor.next
                                pending_index_offset = offsets_cursor.pending_offset
                            after_bad_crc = skip_times = True
                            continue
                        if crc == header.crc:  # (the last offset of the batch read before the next, as the
                            read_last = max(read_last, header.last_offset)  # decoders check each batch against)
                        if skip_times and times_cursor is not None:  # (entries for the skipped batch's offsets)
                            times_cursor.skip(_first_offset(buf, header, path, chunk_position, records))
                            next_time_offset = times_cursor.next
                        skip_times = False
                        if is_active:  # (the batch, its byte, the offset after the batch before it)
                            final = (header, position, seg.base_offset if final is None else final[0].next_offset)
                        if position >= next_index_position or header.last_offset >= pending_index_offset:
                            offsets_cursor.at_batch(position, header.last_offset,
                                                    lambda: _first_offset(buf, header, path, chunk_position, records))
                            next_index_position = offsets_cursor.next
                            pending_index_offset = offsets_cursor.pending_offset
                        if header.last_offset >= next_time_offset:
                            times_cursor.at_batch(header.base_offset, header.last_offset, header.max_timestamp)
                            next_time_offset = times_cursor.next
                        if seg_last is None or header.last_offset > seg_last:
                            seg_last = header.last_offset
                        if summary.first_offset is None:
                            summary.first_offset = _first_offset(buf, header, path, chunk_position, records)
                            if header.magic >= 2 and header.base_offset < seg.base_offset:
                                add(ERROR, path, position, f"first batch's base offset {header.base_offset} is "
                                    f"below the segment's base offset {seg.base_offset} (from its name)")
                        if crc == header.crc and summary.first_bad_position is None:
                            summary.recoverable_last = seg_last
                        if crc != header.crc:
                            summary.bad_crcs += 1
                            if summary.first_bad_position is None:
                                summary.first_bad_position = position
                                summary.first_bad_base = header.base_offset
                            add(ERROR, path, position, f"CRC mismatch in batch {header.base_offset}.."
                                                       f"{header.last_offset}: stored {header.crc}, computed {crc}")
                            tracker.damaged(path, position, f"a batch failing its CRC (its header says offsets "
                                                            f"{header.base_offset}..{header.last_offset})")
                            after_bad_crc = True
                            continue
                        # a compressed legacy wrapper's offset is its LAST inner one: where damage or a segment's
                        # start before it ends, its first is decoded
                        first = (_first_offset(buf, header, path, chunk_position, records)
                                 if after_bad_crc or tracker.open is not None or tracker.segment is not None
                                 else header.base_offset)
                        tracker.readable(header, first)
                        if after_bad_crc:  # the offsets a bad batch held are unknown: no gap is counted across it
                            after_bad_crc = False
                            last_offset = max(last_offset, first - 1)
                        if not deep:
                            if last_offset >= 0 and header.base_offset > last_offset + 1 and header.magic >= 2:
                                summary.compaction_gaps += 1
                            last_offset = max(last_offset, header.last_offset)
                            continue
                        last_offset = _check_records(records, header, position, last_offset, summary, report)
            except KafkaSegError as err:
                raised = True
                broken = (getattr(err, "position", None), f"corrupt framing: {getattr(err, 'detail', err)}",
                          "corrupt framing", True)
            tail = walk.tail
            if tail is not None and broken is None:
                broken = _tail_damage(reader, tail, is_active)
            found = None if broken is None or broken[0] is None else \
                resumption.after(reader, broken[0], tracker.last_offset, broken[3])
            if broken is not None and broken[1] is None:  # a torn tail of the active segment, unless data follows
                acknowledged = pdir.high_watermark is None or pdir.high_watermark > tracker.last_offset + 1
                broken = None if found is None or not acknowledged else (
                    tail.position, f"a batch runs past the end of the active segment ({tail.detail}), but whole "
                    f"batches follow it: its length field is corrupt", "a corrupt batch length field", False)
            if broken is None:
                walked_to = log_size if tail is None else tail.position
                break
            at, problem, reason, framing = broken
            if found is None:
                walked_to, ended_damaged = at, True
                add(ERROR, path, at, problem)
                tracker.damaged(path, at, f"{reason} (nothing sound after it that a read goes on at: the rest of "
                                          "the segment is not read)" if framing else reason)
                break
            start, first, how = found
            add(ERROR, path, at, f"{problem}; read on from byte {start}, {how}, as a read with onCorruption=skip "
                                 "does")
            tracker.damaged(path, at, f"{reason}, read on from byte {start}")
            if summary.first_bad_position is None:  # where a broker's recovery would truncate the segment
                summary.first_bad_position, summary.first_bad_base = at, tracker.last_offset + 1
            if offsets_cursor is not None:
                offsets_cursor.skip(at, start)
                next_index_position, pending_index_offset = offsets_cursor.next, offsets_cursor.pending_offset
            if times_cursor is not None:
                times_cursor.skip(first)
                next_time_offset = times_cursor.next
            after_bad_crc = True  # (the offsets the skipped bytes held are unknown: no gap is counted across them)
        resumption.close()
        hidden = offsets_hidden_by_last_batch(final[0], final[2], pdir.high_watermark, pdir.reached_end()) \
            if final and not raised else None
        if hidden is not None:
            add(ERROR, path, final[1], hidden)
        evidence = None  # (severity, line, LostTail, flushed): the tail evidence, said once with torn bytes
        if is_active and not ended_damaged and pdir.high_watermark is None:
            # with no high watermark, the active segment's own indexes, the producer snapshots and the recovery
            # point may say it held more than it reads now: the indexes were loaded before the log was opened, so
            # no entry of a live broker's append since counts (the snapshots and checkpoints were listed before)
            end_at = walked_to if appending is None else appending[0]  # (the log ends before the append)
            end_offset = seg_last + 1 if seg_last is not None else seg.base_offset
            # (the reads' rule: a snapshot deleted since the listing says nothing, nor does a recovery point the
            # log dir checkpointed again since; the log as the walk found it, opened after the indexes were loaded)
            lost = judge_tail(path, end_at, end_offset, offset_index=offset_index, time_index=time_index,
                              snapshot=snapshot_past(pdir.snapshot_paths, end_offset), partition_path=pdir.path,
                              filesystem=pdir.filesystem, recovery_point=pdir.recovery_point,
                              log_as_listed=lambda: True, recovery_point_as_listed=listing.recovery_point)
            if lost is not None:
                evidence = (ERROR if lost.proven else WARNING, lost.message, lost, lost.proven)
        if tail is not None and broken is None:
            if tail.reason == "zero-filled tail" and is_active:
                add(INFO, path, tail.position, f"{tail.length} zero bytes after the last batch (preallocated segment)")
            elif tail.reason == "zero-filled tail":  # Kafka trims a preallocated segment when it rolls it
                # a fetch there hands a consumer a record size of 0 (CorruptRecordException), and a read fails
                # there as well (a lenient one skips it, counted)
                tracker.damaged(path, tail.position, "zero bytes after the last batch of a rolled segment")
                ended_damaged = True
                add(ERROR, path, tail.position, f"{tail.length} zero bytes after the last batch of a rolled segment "
                                                "(a broker trims them at roll, so they are no preallocation; a "
                                                "consumer's fetch and a read fail there, and DumpLogSegments reports "
                                                "them as invalid bytes)")
            else:
                torn = f"{tail.length} invalid bytes at the end of the active segment ({tail.detail})"
                if evidence is None:
                    add(WARNING, path, tail.position, f"{torn}; a broker would truncate them on recovery")
                else:  # one line for the bytes: the evidence's judgement (an error when it proves them lost)
                    evidence = (evidence[0], f"{evidence[1]}; {torn}", *evidence[2:])
                tracker.damaged(path, tail.position, "a torn batch at the end of the active segment (lost if "
                                                     "acknowledged: up to the high watermark)")
        if appending is not None and evidence is None:
            add(WARNING, path, *appending)
        elif appending is not None:  # (one line for the bytes, as for a torn batch)
            evidence = (evidence[0], f"{evidence[1]}; {appending[1]}", *evidence[2:])
        if evidence is not None:
            severity, said, lost, flushed = evidence
            end_at = walked_to if appending is None else appending[0]
            add(severity, path, end_at, said)
            tracker.indexed(path, end_at, lost.end_offset - 1, lost.evidence.describe() + (
                f" (flushed: the recovery point {pdir.recovery_point} is past the readable end)" if flushed
                else " (none flushed by the recovery point: a crash may have lost them)"))
    summary.last_offset = seg_last
    # entries past the readable end of the active segment with no recovery point past it: the broker may have
    # lost the log's unflushed pages and kept the index's (its recovery truncates there), so a warning, as the
    # torn tail itself is
    readable_end = seg.base_offset if seg_last is None else seg_last + 1
    # a rolled one's the same (the reads' rule, layout.judge_rolled_end: a warning unless the recovery point proves
    # them flushed)
    not_flushed = pdir.recovery_point is None or pdir.recovery_point <= readable_end
    unflushed = (_UNFLUSHED if is_active else _UNFLUSHED_ROLLED if pdir.tiered is None and seg.tiered is None
                 else None) if not_flushed else None
    if offsets_cursor is not None:
        offsets_cursor.finish(walked_to, log_size, unflushed)
    if times_cursor is not None:
        if skip_times and next_base is not None:  # (the segment ended with a skipped batch: entries for its offsets)
            times_cursor.skip(next_base)
        times_cursor.finish(seg_last, unflushed)
    if time_index is not None:
        # (offsets past the last batch: the cursor's one line for all of them)
        for p in time_index.sanity_problems(log_size):
            _add_sanity_problem(report, timeindex_label, time_index, p, times_bound)
    for leftovers in (offsets_bound, times_bound):  # (the entries past the last that fits: see _Leftovers)
        if leftovers is not None:
            leftovers.settle(report)
    if txnindex_label:
        try:
            txn = TransactionIndex.load(txnindex_path, seg.base_offset, pdir.filesystem, window=txnindex_window)
            for p in txn.sanity_problems(next_base):
                add(ERROR, txnindex_label, p.position, p.detail)
            if txn.trailing_bytes:
                add(WARNING, txnindex_label, len(txn) * txn.ENTRY_SIZE,
                    f"{txn.trailing_bytes} bytes of a partial entry (ignored)")
            with SegmentReader(path, pdir.filesystem) as reader:
                missing = unindexed_abort(reader, txn, max_batch_bytes=None,
                                          open_at_base=transactions_open_at(pdir, seg.base_offset),
                                          partial_append=is_active)  # (an append begun since the walk)
            if missing is not None:
                recovered = pdir.past_recovery_point(i)
                add(WARNING if recovered else ERROR, txnindex_label, None,
                    f"no entry for producer {missing[0]}'s ABORT marker at offset {missing[1]}, whose transaction "
                    "has data in this segment or was open at its base: read_committed readers would return the "
                    "aborted records"
                    + ("; the segment is past the recovery point, so a broker's recovery rebuilds the file (kafkaseg"
                       " derives the aborts from the log)" if recovered else ""))
        except KafkaSegError as err:
            vanished = isinstance(err, LayoutError) and _gone(txnindex_path, pdir)
            if vanished and _gone(path, pdir):
                raise  # retention or the cleaner renamed the segment after its walk (.log first): verify_partition
            if vanished and _replaced(seg):
                add(INFO, txnindex_label, None, "replaced while being verified (a live broker's log cleaner "
                    "swapped in a cleaned copy of the segment, with no .txnindex); not checked")
            else:
                add(ERROR, txnindex_label, getattr(err, "position", None), str(err))
    if after_bad_crc and seg_last is not None:
        # the segment ends with batches that failed their CRC: the offsets they held are unknown, so no gap is
        # counted across them into the next segment either (their header's lastOffset is the best bound there is)
        last_offset = max(last_offset, seg_last)
    if skipped_to >= walked_to and i + 1 < len(pdir.segments):
        ended_damaged = True  # (it ended with a batch whose offset field is corrupt: its offsets are unknown too)
    if ended_damaged and i + 1 < len(pdir.segments):
        # the walk ended at damage (a segment cut short, bytes no read goes past): the offsets after it, up to the
        # next segment's base, are lost with it (its unreadable range), not also missing between segments
        last_offset = max(last_offset, pdir.segments[i + 1].base_offset - 1)
    return last_offset


def _corrupt_offset_field(reader: SegmentReader, buf, header, path: str, chunk_position: int, last_offset: int,
                          base_offset: int, limit: int | None, next_base: int | None, pdir: PartitionDir,
                          i: int, records: _ChunkRecords | None = None) -> tuple[str, int] | None:
    """What is wrong with a batch (its CRC sound) whose offset field, which the CRC does not cover, a lenient read
    takes as corrupt and skips, as the decoders do, and the end of the bytes it skips; or None. The decoders' rule
    (:func:`~kafkaseg.decode.api.offset_field_problem`, after ``last_offset``, the last offset of the batch read
    before it in the segment, at least its ``base_offset`` - 1; ``limit`` where the read of the segment ends, None:
    unknown): its first offset gone back, or at or past ``limit`` with a lower batch after it, or (v2, segment
    ``i`` of ``pdir`` rolled) across or past the next segment's base as the segment's last batch, which the next
    segment does not hold (:func:`~kafkaseg.offset_outlier.past_next_base_problem`). And when the batch
    after it goes back below it, whether this batch's field is the corrupt one, judged on the batches around it as
    a read judges it (:func:`~kafkaseg.offset_outlier.outlier_region`; ``next_base``: the next segment's base,
    None for the last): then the region it leaves out (this batch, and any left out with it) is skipped. Either
    way the batches after it are checked against the one before it, not against its offsets. (``records``: the
    chunk's, which give a legacy wrapper's first offset without another decode.)"""
    first = _first_offset(buf, header, path, chunk_position, records)
    floor = max(last_offset, base_offset - 1)
    after = header.position + header.size  # (the next header is in the chunk, but at its end)

    read: list[int | None] = []

    def following() -> int | None:  # (read once: at a chunk's end, from the file)
        # what follows counts only as a batch's start (batch_start_offset: not a preallocated segment's zeros)
        if not read:
            prefix = (bytes(buf[after:after + 17]) if after + 17 <= len(buf)
                      else reader.read_at(chunk_position + after, 17))
            read.append(batch_start_offset(prefix))
        return read[0]

    position = chunk_position + header.position
    problem = batch_offset_field_problem(header, first, floor, limit, following, pdir.segments, i, pdir.filesystem,
                                         max_batch_bytes=_READ_DEFAULTS.max_batch_bytes)
    if problem is not None:
        return problem, position + header.size
    went_back = following()
    if went_back is None or went_back > header.last_offset:
        return None
    region = outlier_region(reader, position, floor, limit=limit, next_base=next_base,
                            max_batch_bytes=_READ_DEFAULTS.max_batch_bytes,
                            max_decompressed_bytes=_READ_DEFAULTS.max_decompressed_batch_bytes)
    return None if region is None else (region.what, region.end)


def _check_records(records: _ChunkRecords, header, position: int, last_offset: int, summary: SegmentSummary,
                   report: VerifyReport) -> int:
    """The batch's records (from its chunk's ``records``): record offsets increase (gaps counted), maxTimestamp is
    the records' largest (CreateTime v2), no record past the batch's lastOffset. Returns the last offset seen."""
    try:
        offsets, record_stamps = records.of(header)
    except KafkaSegError as err:
        report.add(ERROR, records.path, position, f"cannot decode batch: {getattr(err, 'detail', err)}")
        return max(last_offset, header.last_offset)
    summary.records += len(offsets)
    path = records.path
    if offsets and offsets[0] > last_offset and offsets[-1] - offsets[0] == len(offsets) - 1:
        # (the usual case, at once: from above the last offset, consecutive within the batch, as a batch's offsets
        # always increase, or the kernels refuse it)
        if last_offset >= 0 and offsets[0] != last_offset + 1:
            summary.compaction_gaps += 1
        last_offset = offsets[-1]
    else:
        for offset in offsets:
            if offset <= last_offset:
                report.add(ERROR, path, position, f"record offset {offset} does not increase (previous "
                                                  f"{last_offset})")
            elif last_offset >= 0 and offset != last_offset + 1:
                summary.compaction_gaps += 1
            if offset > last_offset:
                last_offset = offset
    if offsets and header.magic == 2 and header.timestamp_type == 0 and max(record_stamps) != header.max_timestamp:
        report.add(ERROR, path, position, f"batch maxTimestamp {header.max_timestamp} differs from its records' "
                   f"largest timestamp {max(record_stamps)}")
    if offsets and header.magic == 2 and offsets[-1] > header.last_offset:
        report.add(ERROR, path, position, f"record offset {offsets[-1]} is past the batch's last offset "
                   f"{header.last_offset}")
    return last_offset


def _first_offset(buf, header, path: str, chunk_position: int, records: _ChunkRecords | None = None) -> int:
    """The batch's first offset: a legacy compressed wrapper's offset is its LAST inner one, so it is decoded for
    its first (from its chunk's ``records`` when given; its header's offset when it cannot be: the walk reports
    why)."""
    if header.magic >= 2 or header.codec == 0:
        return header.base_offset
    try:
        offsets, _ = decode_batch(buf, header, path, chunk_position) if records is None else records.of(header)
    except KafkaSegError:
        return header.base_offset
    return offsets[0] if offsets else header.base_offset


# Deep checks decode the batches of a chunk a run at a time (:class:`_ChunkRecords`): one kernel call per batch
# costs tens of microseconds of overhead, most of a verify of single-record batches. False: one call per batch
# (``decode_batch``), the reference the runs must agree with (tests/test_cli_verify_runs.py).
_DECODE_RUNS = True
_RUN_RECORDS = 1 << 16  # records per run at most (plus one batch's): memory while a run is in use


class _ChunkRecords:
    """The records of one chunk's batches, as :func:`~kafkaseg.cli.common.decode_batch` gives them (offsets and
    timestamps, control records included), for the batches the walk asks about in order: the batches from the one
    asked about on are decoded in one kernel call (a run, up to :data:`_RUN_RECORDS` records) and split by the
    batch position each record carries. Decoding a run checks each batch as decoding it alone does and adds only
    that offsets increase across its batches, so when a run fails (damage, offsets going back, a batch whose CRC
    fails) the batches before the one it fails at are decoded again as a run and that one alone, whose own error
    is then the one reported."""

    def __init__(self, buf, chunk_position: int, path: str, limit: int | None = None,
                 reader: SegmentReader | None = None, offsets_cursor: _OffsetIndexCursor | None = None,
                 times_cursor: _TimeIndexCursor | None = None):
        self.buf, self.chunk_position, self.path, self.limit, self.reader = buf, chunk_position, path, limit, reader
        self.offsets_cursor, self.times_cursor = offsets_cursor, times_cursor  # (their entries, for sound_run)
        self.facts: _RunFacts | None = None
        self.sound = False  # whether sound_run may take batches of the run (no offset goes back in or after it)
        self.start = self.end = 0  # the buffer range of the run decoded: [start, end)
        self.alone_below = 0  # batches starting before this that no run holds are decoded alone
        # the run's batches holding records (their buffer positions, increasing), their records' [first, end) in
        # the run's record offsets and timestamps (numpy arrays: a run's lists would cost more than its checks)
        self.batches = self.firsts = self.ends = self.offsets = self.stamps = np.zeros(0, np.int64)

    def of(self, header) -> tuple[list[int], list[int]]:
        """The offsets and timestamps (ms, -1 for none) of the records of the batch ``header`` (positioned in the
        chunk's buffer); raises as ``decode_batch`` does when it cannot be decoded."""
        at = header.position
        if not self.start <= at < self.end and not (_DECODE_RUNS and at >= self.alone_below and self._run(at)):
            return decode_batch(self.buf, header, self.path, self.chunk_position)
        k = int(self.batches.searchsorted(at))
        if k == len(self.batches) or self.batches[k] != at:  # (a batch of the run with no records: none)
            return [], []
        first, end = self.firsts[k], self.ends[k]
        return self.offsets[first:end].tolist(), self.stamps[first:end].tolist()

    def _run(self, at: int) -> bool:
        """Decode the run of batches from ``at``; False when the batch at ``at`` is to be decoded alone."""
        view = memoryview(self.buf)[at:]
        try:
            decoded = self._decode(view, at)
            return self._take(at, decoded, self._followed_above(at + decoded[0], decoded[-1]))
        except KafkaSegError as err:
            failed = None if getattr(err, "position", None) is None else err.position - self.chunk_position
        if failed is None or not at <= failed < len(self.buf):
            self.alone_below = len(self.buf)  # (not known where: the rest of the chunk one batch at a time)
            return False
        self.alone_below = failed + 1
        if failed == at:
            return False
        try:  # (the batch it fails at may be one whose offsets go back: which one is to blame is the walk's to say)
            return self._take(at, self._decode(view[:failed - at], at), False)
        except KafkaSegError:
            self.alone_below = len(self.buf)
            return False

    def _decode(self, view, at: int):
        import pyarrow as pa

        from kafkaseg.decode import decode
        from kafkaseg.decode.api import DecodeRequest

        result = decode(view, DecodeRequest(
            path=self.path, base_position=self.chunk_position + at, verify_crc=True, include_control=True,
            include_key=False, include_value=False, include_metadata=True, max_records=_RUN_RECORDS,
            max_batch_bytes=max(len(view), 1 << 20), timestamp_unit="ms"))
        stamps = result.columns["timestamp"].cast(pa.int64()).fill_null(-1).to_numpy()
        return (result.consumed, result.columns["position"].to_numpy(), result.columns["offset"].to_numpy(),
                np.where(stamps >= 0, stamps, -1), result.last_offset)

    def _followed_above(self, after: int, last: int) -> bool:
        """Whether what follows the run ending at ``after`` (in the buffer, or the file) is no batch, or one starting
        above ``last``, the run's last offset."""
        if after + 17 <= len(self.buf):
            following = bytes(self.buf[after:after + 17])
        else:
            following = b"" if self.reader is None else self.reader.read_at(self.chunk_position + after, 17)
        first = batch_start_offset(following)
        return first is None or first > last

    def _take(self, at: int, decoded, sound: bool) -> bool:
        consumed, positions, offsets, stamps, _ = decoded
        if consumed <= 0:
            return False
        cuts = np.flatnonzero(positions[1:] != positions[:-1]) + 1
        firsts = np.concatenate(([0], cuts)).astype(np.int64) if len(positions) else cuts
        ends = np.concatenate((cuts, [len(positions)])).astype(np.int64) if len(positions) else cuts
        self.batches = positions[firsts] - self.chunk_position
        self.firsts, self.ends, self.offsets, self.stamps = firsts, ends, offsets, stamps
        self.start, self.end = at, at + consumed
        self.facts, self.sound = None, sound
        return True

    def sound_run(self, at: int, floor: int, next_index: int, pending_offset: int,
                  next_time_offset: int) -> _SoundRun | None:
        """The batches from the one at ``at`` (already decoded, or decoded now) that ``_verify_segment`` would find
        sound one by one, with nothing to say about them: each passes its CRC and decodes (the run's decode checked
        both, and that offsets increase across its batches), is followed in the run by the next (so no batch without
        records hides between them, and the batch after it starts above its last offset: its offset field does not
        jump past the next batch's), starts below ``limit`` (where the read of the segment ends), has a maxTimestamp
        its records' largest (CreateTime v2), and the index entries the walk would match with it say nothing (a
        ``.index`` entry at its position holding its last offset, or an offset inside it, counted in ``inside`` as
        the cursor counts it; none pointing inside the batch before it; a ``.timeindex`` entry for its offsets
        holding its maxTimestamp); the first starts above ``floor`` (the last offset read before it, at least the
        segment's base - 1), at or after ``next_index`` (the buffer position of the next .index entry), and above
        the offsets of the .timeindex entries before ``next_time_offset`` (the cursors' next entries: the cursors
        are where the walk before the run left them); none reaches ``pending_offset`` (a .index offset waiting for
        a later batch), nor, with one waiting, starts at or past ``next_index``. None: the batch at ``at`` is not
        one of them. A run decoded again after it failed, or followed by a batch whose offsets go back, gives none:
        the walk judges each of its batches itself (which one holds a corrupt offset field may take the batches
        around it to tell)."""
        if not (self.start <= at < self.end or (at >= self.alone_below and self._run(at))) or not self.sound:
            return None
        facts = self.facts if self.facts is not None else self._facts()
        i = int(self.batches.searchsorted(at))
        if (i == len(self.batches) or self.batches[i] != at or facts.first[i] <= floor or next_index < at
                or next_time_offset <= (facts.reached[i - 1] if i else facts.field_offset[0] - 1)):
            return None
        end = int(facts.next_unsound[i])
        if pending_offset != _NEVER:
            end = min(end, i + int(facts.last[i:end].searchsorted(pending_offset)),
                      i + int(self.batches[i:end].searchsorted(next_index)))
        if end == i:
            return None
        first_record, last_record = int(self.firsts[i]), int(self.ends[end - 1]) - 1
        last_position = int(self.batches[end - 1])
        return _SoundRun(i, end, last_position + int(facts.size[end - 1]), end - i, last_record - first_record + 1,
                         int(facts.gaps[last_record] - facts.gaps[first_record]), int(self.offsets[first_record]),
                         int(self.offsets[last_record]), int(facts.last[end - 1]),
                         max(int(facts.max_timestamp[i:end].max()), -1), last_position,
                         int(facts.inside[end] - facts.inside[i]), int(facts.appended[end] - facts.appended[i]))

    def final(self, run: _SoundRun, final):
        """The walk's ``final`` (the last batch read, its file position and the offset after the batch before
        it) after ``run``."""
        position = self.batches
        last = read_header(self.buf, int(position[run.stop - 1]))
        before = final[0] if run.batches == 1 else read_header(self.buf, int(position[run.stop - 2]))
        return last, self.chunk_position + last.position, before.next_offset

    def _facts(self) -> _RunFacts:
        """The header facts of the decoded run's batches (gathered from the buffer, vectorised)."""
        positions, firsts, offsets, stamps = self.batches, self.firsts, self.offsets, self.stamps
        n = len(positions)
        # (the run's headers by the compiled walk, whole batches all: the kernel decoded them; the rows of the
        # batches holding records)
        _, _, table = header_walk.kernel.columns(self.buf, self.start, self.end, self.end)
        header = dict(zip(header_walk.COLUMNS, table))
        rows = np.searchsorted(header["position"], positions)
        magic = header["magic"][rows]
        field_offset = header["base_offset"][rows]
        size = header["size"][rows]
        last = header["last_offset"][rows]
        max_timestamp = header["max_timestamp"][rows]  # (a v0 message's: -1)
        v2 = magic == 2
        create_time = v2 & ((header["attributes"][rows] & 0x08) == 0)
        first = np.where(v2, field_offset, offsets[firsts] if n else field_offset)
        record_max = np.maximum.reduceat(stamps, firsts) if n else np.zeros(0, np.int64)
        sound = np.zeros(n, bool)
        sound[:-1] = (positions[:-1] + size[:-1] == positions[1:]) & (field_offset[1:] > last[:-1])
        sound &= ~(create_time & (record_max != max_timestamp))
        if self.limit is not None:
            sound &= first < self.limit
        reached = np.maximum.accumulate(last) if n else last  # (the time index cursor's walk: past these offsets)
        inside = appended = np.zeros(n + 1, np.int64)
        if n:
            inside, appended = self._index_entries(sound, positions, size, first, last, field_offset, max_timestamp,
                                                   reached)
        unsound = np.flatnonzero(~sound)  # (never empty: the run's last batch is followed by none in it)
        next_unsound = unsound[np.searchsorted(unsound, np.arange(n))] if n else unsound
        previous = offsets[:-1]
        gaps = np.concatenate(([0], np.cumsum((previous >= 0) & (offsets[1:] != previous + 1))))
        self.facts = _RunFacts(size, first, last, max_timestamp, next_unsound, gaps, field_offset, reached, inside,
                               appended)
        return self.facts

    def _index_entries(self, sound, positions, size, first, last, field_offset, max_timestamp, reached):
        """Mark not ``sound`` the decoded run's batches at which the walk would have something to say about an index
        entry (``_OffsetIndexCursor.at_batch``, ``_TimeIndexCursor.at_batch``), walking the batches one after
        another from where the cursors are at a run's start (``sound_run`` checks they are): a ``.index`` entry at
        the batch's position holding an offset below it, or above it that no batch reaches before the next entry's
        position with only sound batches between (a follower's append: ``pending``, then ``appended``), or one
        pointing inside the batch before it; a ``.timeindex`` entry for an offset the batch reaches first (its
        cursor goes past the largest last offset so far, ``reached``) that is below the batch's offset field or
        whose timestamp is not the batch's maxTimestamp (``max_timestamp``, as stored). What an entry says of the
        batch it meets is the cursors' own rule (:func:`_offset_entry_verdict`, :func:`_time_entry_verdict`); which
        batch meets which entry (the cursors' walk, one batch after another) is stated here again over the whole
        run, held to the walk by ``tests/test_cli_verify_runs.py``. Returns, per batch, the
        running counts (from 0, one more entry) of the ``.index`` entries at batches before it holding an offset
        inside their batch, not its last (``_OffsetIndexCursor.inside``), and of those holding a later batch's
        (``_OffsetIndexCursor.appended``)."""
        n = len(positions)
        inside, appended = np.zeros(n + 1, np.int64), np.zeros(n + 1, np.int64)
        cursor = self.times_cursor
        if cursor is not None and len(cursor.sorted_keys):
            keys = cursor.sorted_keys
            lo, hi = int(keys.searchsorted(field_offset[0])), int(keys.searchsorted(reached[-1], side="right"))
            batch = reached.searchsorted(keys[lo:hi])
            verdict = _time_entry_verdict(keys[lo:hi], cursor.sorted_timestamps[lo:hi], field_offset[batch],
                                          max_timestamp[batch])
            sound[batch[verdict != _TIME_RIGHT]] = False
        cursor = self.offsets_cursor
        if cursor is not None and len(cursor.sorted_keys):
            keys, base = cursor.sorted_keys, self.chunk_position
            lo, hi = keys.searchsorted([base + positions[0], base + positions[-1] + size[-1]])
            at = keys[lo:hi] - base
            offset = cursor.sorted_offsets[lo:hi]
            batch = positions.searchsorted(at, side="right") - 1
            boundary = positions[batch] == at
            mid = batch[~boundary] + 1  # (said at the batch after the one it points inside)
            sound[mid[mid < n]] = False
            # (an entry at a boundary says nothing when it holds one of the batch's offsets: its last, or one inside)
            verdict = _offset_entry_verdict(offset, first[batch], last[batch])
            later = boundary & (verdict == _LATER)
            sound[batch[boundary & (verdict == _WRONG)]] = False
            inside[1:] = np.cumsum(np.bincount(batch[boundary & (verdict == _INSIDE)], minlength=n))
            if later.any():  # (a follower's append: right when a batch reaches it before the next entry's)
                pending, wanted = batch[later], offset[later]
                # (the next entry's position; past the last, one no position reaches)
                following = np.append(keys, np.iinfo(np.int64).max)[lo + 1:hi + 1][later]
                reaching = reached.searchsorted(wanted)
                unsound = np.append(np.flatnonzero(~sound), n)
                sound_to = unsound[unsound.searchsorted(pending + 1)]  # (the first one not sound after the batch)
                right = (reaching < sound_to) & (base + positions[np.minimum(reaching, n - 1)] < following)
                sound[pending[~right]] = False
                appended[1:] = np.cumsum(np.bincount(pending[right], minlength=n))
        return inside, appended


class _RunFacts(NamedTuple):
    """Per batch of a decoded run holding records (numpy arrays, in the order of ``_ChunkRecords.batches``): what
    :meth:`_ChunkRecords.sound_run` needs."""

    size: np.ndarray
    first: np.ndarray  # the first offset (a v2 base offset; a legacy wrapper's first inner offset)
    last: np.ndarray  # the header's last offset
    max_timestamp: np.ndarray  # as stored (a v0 message's: -1)
    next_unsound: np.ndarray  # the number of the first batch from this one on that is not sound on its own
    gaps: np.ndarray  # per record: the non-consecutive offsets among the run's records up to it
    field_offset: np.ndarray  # the header's offset field
    reached: np.ndarray  # the largest last offset of the batches up to this one
    inside: np.ndarray  # the .index entries holding an offset inside their batch, at the batches before this one
                        # (one more entry)
    appended: np.ndarray  # the .index entries holding a later batch's last offset, likewise


class _SoundRun(NamedTuple):
    start: int  # batch numbers in the run: [start, stop)
    stop: int
    end: int  # the buffer position after the last
    batches: int
    records: int
    gaps: int  # non-consecutive offsets among its records (not counting the first against the offset before it)
    first_record: int
    last_record: int
    last: int  # the last batch's last offset
    max_timestamp: int  # the batches' largest (-1: none)
    last_position: int  # the buffer position of the last batch
    inside: int  # .index entries at its batches holding an offset inside their batch, not its last
    appended: int  # .index entries at its batches holding the last offset of a later batch of the run


class _Headers:
    """``iter_headers(buf)`` whose next position the walk may move (past a run it checked at once)."""

    def __init__(self, buf):
        self.buf, self.position = buf, 0

    def __iter__(self) -> _Headers:
        return self

    def __next__(self):
        if self.position >= len(self.buf):
            raise StopIteration
        header = read_header(self.buf, self.position)
        self.position += header.size
        return header


def _check_files(pdir: PartitionDir, report: VerifyReport) -> None:
    try:
        entries = _fs.list_dir(pdir.path, pdir.filesystem)
    except KafkaSegError:
        return
    # (a folder under a segment's name is its partition's error, not a missing .log whose indexes are orphans)
    logs = {e.name.split(".")[0] for e in entries if e.name.endswith(".log")}
    # the .swap files read in place of the segments they replace, as a broker's LogLoader takes them: one line
    swapped_in = [_fs.basename(p) for s in pdir.segments if s.from_swap
                  for p in (s.log_path, s.index_path, s.timeindex_path, s.txnindex_path) if p]
    resolved = next((note for note in pdir.notes if note.startswith(SWAPS_RESOLVED)), None)
    if swapped_in:
        report.add(WARNING, _fs.join(pdir.path, swapped_in[0]), None,
                   f"unfinished segment swap ({', '.join(swapped_in)}): the log cleaner's or a segment split's new "
                   "files, which a broker renames into place at startup; verified in place of what they replace, as "
                   "Kafka's LogLoader resolves them" + (f": {resolved[len(SWAPS_RESOLVED):]}" if resolved else ""))
    # the .swap files discovery did not swap in (its notes, one per reason, say why), as one line too
    left_out = pdir.ignored_swaps
    if left_out:
        not_swapped = [note[len(SWAPS_IGNORED):] for note in pdir.notes if note.startswith(SWAPS_IGNORED)]
        first = next((name for name in left_out if name.endswith(".log.swap")), left_out[0])
        report.add(WARNING, _fs.join(pdir.path, first), None,
                   f"segment swap files not swapped in, as Kafka's LogLoader does not swap them in: "
                   f"{'; '.join(not_swapped)}")
    said: set[str] = set()  # discovery's notes said as a file's warning above
    for entry in entries:
        if entry.is_dir:
            continue
        name = entry.name
        if name in swapped_in or name in left_out:
            continue
        if _TEMP_FILE.search(name):
            report.add(WARNING, entry.path, None, f"temporary file: {_TEMP_FILE_MEANING[name.rsplit('.', 1)[1]]}")
        elif KRAFT_SNAPSHOT_NAME.match(name):  # a KRaft snapshot in the metadata log's folder only
            if pdir.topic != CLUSTER_METADATA_TOPIC:
                report.add(INFO, entry.path, None, "unknown file in a partition folder (named as a KRaft snapshot, "
                           f"which a broker reads in {CLUSTER_METADATA_TOPIC}-0 only: not read)")
        elif _KNOWN_FILE.match(name):
            stem, kind = name.split(".")[0], name.rsplit(".", 1)[1]
            if kind in ("index", "timeindex", "txnindex") and stem not in logs:
                missing = f"{LOST_NEWEST_SEGMENT}{_fs.join(pdir.path, stem + '.log')} is missing"
                lost = next((note for note in pdir.notes if note.startswith(missing)), None)
                if lost is None:
                    report.add(WARNING, entry.path, None,
                               "orphaned index: no .log with this base offset (a broker deletes it)")
                elif lost not in said:  # the newest segment's .log gone: once, as discovery's note says it
                    said.add(lost)
                    report.add(WARNING, _fs.join(pdir.path, stem + ".log"), None, lost[len(LOST_NEWEST_SEGMENT):])
        elif name not in _SIDE_FILES:
            report.add(INFO, entry.path, None, "unknown file in a partition folder")
    unreadable = {f"log dir: unreadable {name}: {why}" for name, why in pdir.unreadable_checkpoints}
    for note in pdir.notes:
        if note.startswith(_UNREADABLE_META):  # reported once, as a problem of the log dir
            continue
        side = next((name for name in _SIDE_FILES if note.startswith(f"unreadable {name}: ")), None)
        if side is not None and pdir.tiered is None:
            # a broker reading a malformed one (CheckpointFileWithFailureHandler, PartitionMetadataFile) takes the
            # whole log dir offline (KafkaStorageException): kafkaseg reads on without it, a broker would not
            report.add(ERROR, os.path.join(pdir.path, side), None,
                       f"{note[len('unreadable ' + side + ': '):]} (a broker fails the log dir on it; kafkaseg reads "
                       "on without it)")
        elif note.startswith(tiered.LIVE_COPIES_MISSING):  # a warning or error each (report_live_copies_missing)
            continue
        elif note.startswith(SWAPS_RESOLVED) and swapped_in or note.startswith(SWAPS_IGNORED):  # said above
            continue
        elif note.startswith(_TEMP_FILE_NOTE) and _TEMP_FILE.search(note) or note in said:  # its file's line says it
            continue
        elif note not in unreadable:  # reported once, as a problem of the log dir (_check_log_dir_checkpoints)
            report.add(INFO, pdir.path, None, note)


# A corrupt checkpoint that decides where reads end or start is an error (kafkaseg's readers refuse it); Kafka
# resets a broken recovery point (full recovery) or cleaner offset (clean from the start) with a warning.
_CHECKPOINT_SEVERITY = {"replication-offset-checkpoint": ERROR, "log-start-offset-checkpoint": ERROR,
                        "recovery-point-offset-checkpoint": WARNING, "cleaner-offset-checkpoint": WARNING}


_UNREADABLE_META = "log dir: unreadable meta.properties: "


def _check_log_dir_checkpoints(pdir: PartitionDir, report: VerifyReport) -> None:
    """The log dir's corrupt or unreadable offset checkpoints (``PartitionDir.unreadable_checkpoints``), once per
    log dir: the file, the byte where the bad line starts when known, and why."""
    from kafkaseg.storage.checkpoints import read_offset_checkpoint

    if pdir.log_dir is None or pdir.log_dir in report.checked_log_dirs:
        return
    report.checked_log_dirs.add(pdir.log_dir)
    for note in pdir.notes:
        if note.startswith(_UNREADABLE_META):
            # MetaPropertiesEnsemble.Loader: a broker takes a log dir whose meta.properties it cannot read offline
            report.add(ERROR, _fs.join(pdir.log_dir, "meta.properties"), None,
                       f"{note[len(_UNREADABLE_META):]} (a broker takes the log dir offline on it; kafkaseg reads on "
                       "without it)")
    for name, why in pdir.unreadable_checkpoints:
        path = _fs.join(pdir.log_dir, name)
        position, detail, what = None, why, "corrupt or unreadable"
        try:  # read it again for the byte position of the bad line
            read_offset_checkpoint(path, pdir.filesystem)
        except CorruptCheckpointError as err:
            position, detail, what = err.position, err.detail, "corrupt"
        except KafkaSegError as err:
            detail, what = str(err), "unreadable"
        report.add(_CHECKPOINT_SEVERITY.get(name, ERROR), path, position,
                   f"{what} checkpoint (not used): {detail}")


def _read_walk_clean(pdir: PartitionDir) -> bool:
    """Whether a strict read's walk to the log end of ``pdir`` meets no corruption or torn append (planning's
    ``leo_walk_clean``, by its own :func:`~kafkaseg.storage.layout.find_log_end`, a torn end at or above the high
    watermark taken as the end); False where that walk raises. Reads about one index interval of headers."""
    hw = pdir.high_watermark
    try:
        return find_log_end(pdir, lenient=False, max_batch_bytes=_READ_DEFAULTS.max_batch_bytes,
                            unacknowledged_past=lambda end: hw is not None and hw <= end).clean
    except KafkaSegError:
        return False


def _check_checkpoints(pdir: PartitionDir, summary: PartitionSummary, report: VerifyReport,
                       listing: ListingCheck) -> None:
    leo, lso_ = summary.log_end_offset, summary.log_start_offset
    where = pdir.log_dir or pdir.path
    active_base = pdir.segments[-1].base_offset if pdir.segments else None
    for path in pdir.snapshot_paths:
        try:
            read_producer_snapshot(path, pdir.filesystem)
        except KafkaSegError as err:
            if _gone(path, pdir) and _fs.exists(pdir.path, pdir.filesystem):
                # retention renames the snapshots below the new log start .deleted with its segments
                # (ProducerStateManager.removeAndMarkSnapshotForDeletion): a live broker's, as a segment is
                report.add(INFO, path, None, "deleted while being verified (a live broker's retention); not checked")
                continue
            offset = snapshot_offset_from_name(_fs.basename(path))
            # the newest roll's snapshot (named for the active segment's base) may be caught half-written by a live
            # broker, and Kafka's loader skips a corrupt snapshot (an older one, or the log, gives the state)
            newest = active_base is not None and offset is not None and offset >= active_base
            report.add(WARNING if newest else ERROR, path, getattr(err, "position", None), str(err) + (
                " (the newest roll's snapshot: a live broker may still be writing it; a broker skips a corrupt "
                "snapshot)" if newest else ""))
    if leo is None and not pdir.segments and pdir.error is None:
        # (no segment: an empty log at the log start, as a read and Kafka's LogLoader take it, whose end the
        # checkpoints are checked against: a high watermark above it is offsets no file holds)
        leo = pdir.log_start_offset or 0
    if leo is None:
        return
    first_base = pdir.segments[0].base_offset if pdir.segments else None
    if pdir.high_watermark is not None and pdir.high_watermark > leo:
        report.add(ERROR, os.path.join(where, "replication-offset-checkpoint"), None,
                   f"{pdir.name}: {high_watermark_above_words(pdir.high_watermark, leo, pdir.path)}")
    if pdir.high_watermark is not None and lso_ is not None and pdir.high_watermark < lso_:
        report.add(WARNING, os.path.join(where, "replication-offset-checkpoint"), None,
                   f"{pdir.name}: high watermark {pdir.high_watermark} is below the log start offset "
                   f"{lso_} (a broker takes the log start instead)")
    if pdir.checkpoint_log_start_offset is not None and pdir.checkpoint_log_start_offset > leo:
        report.add(ERROR, os.path.join(where, "log-start-offset-checkpoint"), None,
                   f"{pdir.name}: log start offset {pdir.checkpoint_log_start_offset} is above the log "
                   f"end offset {leo}")
    if (pdir.checkpoint_log_start_offset is not None and first_base is not None
            and pdir.checkpoint_log_start_offset < first_base):
        report.add(INFO, os.path.join(where, "log-start-offset-checkpoint"), None,
                   f"{pdir.name}: checkpointed log start offset {pdir.checkpoint_log_start_offset} is "
                   f"below the first segment's base {first_base} (the first segment wins)")
    if pdir.recovery_point is not None and pdir.recovery_point > leo:
        # (a truncation caught between cutting the log and checkpointing: judged as the active segment's tail is)
        checkpoint = os.path.join(where, "recovery-point-offset-checkpoint")
        if flushed_past_end(pdir, leo, walk_clean=_read_walk_clean(pdir),
                            as_listed=listing.recovery_point) is not None:
            # (flushed offsets the high watermark says no consumer had seen: the reads' note, by their one rule;
            # a warning: a follower's truncation caught before its checkpoint leaves the same files)
            report.add(WARNING, checkpoint, None, f"{pdir.name}: " + flushed_above_words(
                pdir.recovery_point, pdir.high_watermark, leo, pdir.path))
        elif not listing.checkpoints():
            report.add(INFO, checkpoint, None, f"{pdir.name}: recovery point {pdir.recovery_point} (as listed) is "
                       f"above the log end offset {leo}, but the log or the checkpoints changed since the listing "
                       "(a follower's truncation cuts the log, then checkpoints the lowered recovery point): not "
                       "compared")
        elif pdir.high_watermark is None or pdir.high_watermark > leo:
            report.add(ERROR, checkpoint, None,
                       f"{pdir.name}: recovery point {pdir.recovery_point} is above the log end offset {leo}")
        # (else the high watermark is at or below the log end and the reads' rule says nothing: the walk to the end
        # met damage, reported where it is, or .log files were given as paths, whose recovery point no read trusts)
    first_epoch = pdir.leader_epochs[0] if pdir.leader_epochs else None
    if (first_epoch is not None and first_base is not None and first_epoch.start_offset < first_base
            and pdir.tiered is None and pdir.below_local_log is None and not pdir.remote_below):
        # Retention and DeleteRecords move the log start and cut this file's entries below it
        # (UnifiedLog.maybeIncrementLogStartOffset -> LeaderEpochFileCache.truncateFromStart*), and the cleaner
        # never moves the first segment's base: an entry below it, with no checkpoint that explains it, says the
        # log reached further down than its first segment
        report.add(WARNING, os.path.join(pdir.path, "leader-epoch-checkpoint"), None,
                   f"epoch {first_epoch.epoch} starts at {first_epoch.start_offset}, below the first segment's base "
                   f"{first_base}, and log-start-offset-checkpoint does not explain it: offsets "
                   f"[{first_epoch.start_offset}, {first_base}) were in this log, and segments holding them may have "
                   "been removed other than by the broker's retention (or the broker had not rewritten this file "
                   "after a retention deletion yet, which it does in the background since Kafka 3.8)")
    previous = None
    for entry in pdir.leader_epochs:
        start = entry.start_offset
        if start > leo:
            # LeaderEpochFileCache.truncateFromEnd*: since Kafka 3.8 (KAFKA-16541) a truncation rewrites this file
            # in the background, and a broker drops such entries when it loads the log (LogLoader)
            report.add(WARNING, os.path.join(pdir.path, "leader-epoch-checkpoint"), None,
                       f"epoch {entry.epoch} starts at {start}, above the log end offset {leo} (a stale entry: left "
                       "by a truncation whose rewrite of this file had not run yet, or by an incomplete copy; a broker "
                       "drops it when it loads the log)")
        if previous is not None and (entry.epoch <= previous.epoch or start < previous.start_offset):
            report.add(ERROR, os.path.join(pdir.path, "leader-epoch-checkpoint"), None,
                       f"epoch {entry.epoch}@{start} does not follow {previous.epoch}@"
                       f"{previous.start_offset}")
        previous = entry


def verify_partition(pdir: PartitionDir, report: VerifyReport, *, deep: bool = True, progress=None) -> None:
    """Run every check on one partition, appending to ``report``."""
    summary = PartitionSummary(pdir.topic, pdir.partition, pdir.path, high_watermark=pdir.high_watermark,
                               log_start_offset=pdir.log_start_offset)
    report.partitions.append(summary)
    if pdir.error is not None:
        # discovery could not list its segments as a log (a segment that is no readable file, or named past a
        # 64-bit long): that file's error; a .log file given from its folder is then checked on its own, else only
        # what needs no segment is (the partition's offsets are unknown)
        for each in pdir.error.each():  # (every file named past a long is one)
            _unreadable(report, each.path, each)
    if pdir.error is not None and not pdir.segments:
        _check_log_dir_checkpoints(pdir, report)
        _check_files(pdir, report)
        report.flush_omitted()
        return
    last_offset = -1
    gaps: list[tuple[str, int, int]] = []  # (segment, first, last offset missing before it), judged at the end
    tracker = _ReadableTracker(summary)
    listing = ListingCheck(pdir)
    vanished_tail = False  # the last segments listed were deleted before their walk: the log's end is unknown
    for i, seg in enumerate(pdir.segments):
        seg_summary = SegmentSummary(seg.log_path, seg.base_offset, seg.log_size)
        summary.segments.append(seg_summary)
        listed_before = len(report.problems)
        tracker.segment_start(seg.log_path)
        try:
            last_offset_after = _verify_segment(pdir, i, report, seg_summary, last_offset, deep, tracker, listing)
        except KafkaSegError as err:  # cannot open or read it (permissions, a broken symlink, an I/O error)
            if isinstance(err, LayoutError) and _gone(seg.log_path, pdir) and _fs.exists(pdir.path, pdir.filesystem):
                # a live broker's retention or cleaner removed it after the folder was listed: not damage (nor
                # are its indexes, gone with it, that could not be opened just before)
                files = {seg.log_path, seg.index_path, seg.timeindex_path, seg.txnindex_path}
                report.problems[listed_before:] = [p for p in report.problems[listed_before:]
                                                   if p.file not in files]
                report.add(INFO, seg.log_path, None, "deleted while being verified (a live broker's retention or "
                           "log cleaner); not checked")
                vanished_tail = True
            else:
                _unreadable(report, seg.log_path, err)
                tracker.damaged(seg.log_path, None, f"the segment cannot be read ({getattr(err, 'detail', err)})")
            seg_summary.unreadable = True
            if i + 1 < len(pdir.segments):  # unknown offsets: no gap or ordering note about the next segment
                last_offset = max(last_offset, pdir.segments[i + 1].base_offset - 1)
            if progress is not None:
                progress(seg.log_size)
            continue
        vanished_tail = False
        if i + 1 < len(pdir.segments) and any(p.file == seg.log_path and p.severity == ERROR
                                              for p in report.problems[listed_before:]):
            _below_base(pdir, i, report)
        if i + 1 < len(pdir.segments) and seg_summary.last_offset is not None:
            next_base = pdir.segments[i + 1].base_offset
            if seg_summary.last_offset >= next_base and _gone(pdir.segments[i + 1].log_path, pdir):
                # the cleaner renames the segments it merged .deleted before its copy takes the first one's name
                # (LocalLog.replaceSegments): a copy swapped in since the listing, not a misnamed file
                report.add(INFO, seg.log_path, None, f"last offset {seg_summary.last_offset} reaches the next "
                           f"segment's base offset {next_base}, deleted while being verified: the log cleaner's "
                           "merged copy, renamed in since the listing")
            elif seg_summary.last_offset >= next_base:
                report.add(ERROR, seg.log_path, None, f"last offset {seg_summary.last_offset} reaches the next "
                           f"segment's base offset {next_base}" + _foreign_words(pdir, i))
        if (seg.remote_end is not None and seg_summary.last_offset is not None
                and seg_summary.last_offset < seg.remote_end and seg_summary.first_bad_position is None
                and not any(p.file == seg.log_path and p.severity == ERROR for p in report.problems[listed_before:])):
            # a copy cut short at a batch boundary (one cut mid-batch is an error of its own): planning takes the
            # recorded end, so only a read of it finds its offsets missing (a DataLossError, scan._check_segment_end)
            # unless __remote_log_metadata records the copy with the size it has: then a compaction before the
            # topic went tiered removed them
            offsets = f"offsets {seg_summary.last_offset + 1}..{seg.remote_end}"
            said = f"the copy's last batch ends at offset {seg_summary.last_offset}, before its recorded end offset " \
                   f"({seg.remote_end})"
            if seg.remote_whole:
                report.add(INFO, seg.log_path, None, f"{said}: __remote_log_metadata records the copy with the size "
                           f"it has, so {offsets} were removed by a compaction before the topic went tiered")
            else:
                report.add(ERROR, seg.log_path, None, f"{said} in its manifest or __remote_log_metadata: {offsets} "
                           "are not in it (a copy cut short at a batch boundary): reads of the copy lose them")
        if seg_summary.first_offset is not None and last_offset >= 0 and seg_summary.first_offset > last_offset + 1:
            gaps.append((seg.log_path, last_offset + 1, seg_summary.first_offset - 1))
        last_offset = last_offset_after
        if seg.remote_end is not None and i + 1 < len(pdir.segments):
            # a tiered-storage copy whose recorded end (its manifest's, __remote_log_metadata's) is past its last
            # batch holds the offsets up to there (a compaction before the topic was made tiered removed their
            # records), as copy_gaps and a read take it: no copy is missing before the next one
            last_offset = max(last_offset, min(seg.remote_end, pdir.segments[i + 1].base_offset - 1))
        if seg_summary.compaction_gaps:
            report.add(INFO, seg.log_path, None, f"{seg_summary.compaction_gaps} non-consecutive offset gaps (records "
                       f"removed by compaction; transaction markers are records and fill "
                       f"none)")
        if progress is not None:
            progress(seg.log_size)
    partial = whole_partition_offsets(pdir)
    if partial is not None:  # single .log files: the checkpoints describe the whole partition, not them
        summary.log_start_offset, summary.log_end_offset = partial.log_start_offset, partial.log_end_offset
        summary.note = partial.note
    elif pdir.segments and summary.segments[-1].unreadable:
        report.add(INFO, pdir.path, None, f"{pdir.name}: log end offset unknown (the last segment cannot be read): "
                   f"checkpoints not compared with it")
    elif pdir.segments:
        # Kafka's log end offset is the last batch's lastOffset + 1, not the last record's offset + 1: compaction
        # can remove a batch's last records or leave it empty (the active segment's base when it holds nothing)
        batch_ends = [s.last_offset for s in summary.segments if s.last_offset is not None]
        summary.log_end_offset = max(max(batch_ends, default=-1) + 1, pdir.segments[-1].base_offset)
        active = summary.segments[-1]
        recovery_point = pdir.recovery_point
        if active.first_bad_position is not None and (recovery_point is None
                                                      or active.first_bad_base >= recovery_point):
            # A bad batch at or past the recovery point (LogLoader recovers only the segments from there on,
            # trusting flushed bytes below it): recovery truncates the active segment at it, so the checkpoints
            # are compared with that end and a high watermark past it is reported, not hidden by its offsets.
            earlier = [s.last_offset for s in summary.segments[:-1] if s.last_offset is not None]
            kept = active.recoverable_last if active.recoverable_last is not None else max(earlier, default=-1)
            summary.log_end_offset = max(kept + 1, pdir.segments[-1].base_offset)
            report.add(INFO, active.path, active.first_bad_position,
                       f"{pdir.name}: log end offset taken as {summary.log_end_offset}, where recovery would "
                       "truncate the active segment (its first batch that fails its CRC, or the first damage read "
                       "past)")
    _check_gaps(pdir, gaps, summary.log_end_offset, report, tracker)
    if vanished_tail and pdir.high_watermark is not None:
        report.add(INFO, pdir.path, None, f"{pdir.name}: the last segments listed were deleted while being verified "
                   "(a live broker's retention or log cleaner): the offsets past the last batch read are not compared "
                   "with the high watermark")
    tracker.finish(pdir.high_watermark if partial is None and not vanished_tail else None,
                   pdir.segments[-1].log_path if pdir.segments else pdir.path)
    summary.unreadable.sort(key=lambda u: u.first)
    _check_log_dir_checkpoints(pdir, report)
    _check_checkpoints(partial.whole if partial is not None else pdir, summary, report,
                       listing if partial is None else ListingCheck(partial.whole))
    for path in pdir.kraft_snapshot_paths:
        try:
            _verify_kraft_snapshot(path, pdir, report)
        except KafkaSegError as err:
            _unreadable(report, path, err)
    _check_files(pdir, report)
    report.flush_omitted()


def _check_gaps(pdir: PartitionDir, gaps: list[tuple[str, int, int]], log_end: int | None,
                report: VerifyReport, tracker: _ReadableTracker) -> None:
    """Offsets missing between segments: compaction's below the cleaner checkpoint (info), else a warning, the
    rule a read's failOnDataLoss follows, since only the cleaner removes offsets from inside a log. A checkpoint
    past the log end explains none: LogCleanerManager.cleanableOffsets takes it as invalid (corruption or
    truncation) and cleans from the log start."""
    cleaner = valid_cleaner_offset(pdir.cleaner_offset, log_end)
    if cleaner is None and pdir.cleaner_offset is not None and log_end is not None:
        report.add(WARNING, os.path.join(pdir.log_dir or pdir.path, "cleaner-offset-checkpoint"), None,
                   f"{pdir.name}: cleaner offset {pdir.cleaner_offset} is above the log end offset {log_end} (a "
                   "broker's cleaner takes it as invalid and starts again from the log start): it explains no "
                   "missing offset")
    number: dict[str, int] = {}  # (each segment's place in the listing, the first where a path is listed twice)
    for k, seg in enumerate(pdir.segments):
        number.setdefault(seg.log_path, k)
    for path, first, last in gaps:
        missing = f"offsets {first}..{last} are missing before this segment"
        if pdir.tiered is not None:
            # a tiered topic is never compacted: a copy missing, said (error or warning, by what the log dirs given
            # hold) by report_copy_gaps, or one remote retention deleted below a log dir's log start (no problem)
            tracker.gap(path, first, last, "in no tiered-storage copy before this one: a copy missing from the "
                                           "bucket, or deleted by remote retention below the log start")
            continue
        own = _own_range_lost(pdir, number.get(path), first, last)
        if own is not None:  # (the segment's own range: its file holds another segment's batches, said as its error)
            how = "lost" if own.proven else "possibly lost"
            report.add(INFO, path, 0, f"{missing}: this segment's own range, {how} with its .log, which holds "
                       "another segment's batches (see its error)")
            tracker.gap(path, first, last, f"{how} with this segment's .log, which holds another segment's batches")
            continue
        cut = (_cut_before(pdir, number.get(path, 0), first, last) if below_cleaner_checkpoint(first, cleaner)
               else None)
        if below_cleaner_checkpoint(first, cleaner) and cut is None:
            report.add(INFO, path, 0, f"{missing} (removed by compaction: below the cleaner checkpoint {cleaner})")
        elif cut is not None:
            # the cleaner indexes only the batches it keeps: entries past the last batch are no compaction's (the
            # reads' rule, layout.rolled_cut_of; the entries themselves are the index files' errors or warnings)
            report.add(WARNING, path, 0, f"{missing}, below the cleaner checkpoint {cleaner} but not removed by "
                       f"compaction: {cut.summary()}")
            tracker.gap(path, first, last, f"{'lost' if cut.proven else 'possibly lost'} with the segment before "
                                           "it, cut short (its own indexes name offsets past its last batch)")
        else:
            report.add(WARNING, path, 0, f"{missing}, above the cleaner checkpoint "
                       f"({cleaner if cleaner is not None else 'none'}): a segment file missing from this copy, lost "
                       "records, or compaction the checkpoint does not record yet (a follower of a compacted topic, "
                       "a cleaning in progress)")
            tracker.gap(path, first, last, "missing before this segment: a lost segment file, or compaction the "
                                           "cleaner checkpoint does not record")


def _below_base(pdir: PartitionDir, i: int, report: VerifyReport) -> None:
    """Rolled segment ``i`` with errors whose batches all lie below its own base offset (an earlier segment's
    ``.log`` copied over it, or every offset field lowered): one error naming the file and what it holds, with its
    own indexes' evidence (:func:`_foreign_words`), beside the batches' own errors. Error path only: a header walk."""
    outside = outside_batches(pdir, i, _READ_DEFAULTS.max_batch_bytes)
    if outside is not None and outside.below:
        report.add(ERROR, pdir.segments[i].log_path, 0, "every batch is below the segment's base offset "
                   f"{pdir.segments[i].base_offset}" + _foreign_words(pdir, i, outside))


def _foreign_words(pdir: PartitionDir, i: int, outside=None) -> str:
    """What rolled segment ``i`` whose batches are all at or past the next segment's base, or below its own, is, for
    its error (else ""): by the storage layer's one rule (:func:`~kafkaseg.storage.foreign_log.outside_batches`,
    ``outside`` when already asked), a file holding another segment's batches (each one another segment holds as
    it is, offsets and CRC), and, when its own indexes name offsets inside its range, those offsets lost with it
    (layout.ForeignLog, the reads' rule: a strict read raises LostTailError at byte 0); without such entries nothing
    says what it held (the reads take its range as a gap, missing_offsets). Batches below its base that no earlier
    segment holds are its own, their offset fields lowered: the reads' corruption; past the next base, nothing
    more is said (a raised offset field, or a cleaner's merged copy: the errors beside this one say which)."""
    seg, next_base = pdir.segments[i], pdir.segments[i + 1].base_offset
    if outside is None:
        outside = outside_batches(pdir, i, _READ_DEFAULTS.max_batch_bytes)
    if outside is None:
        return ""
    first, last = outside.first, outside.last
    if not outside.held and outside.below:
        return (f": no earlier segment holds these batches (offsets {first}..{last}) as they are (offsets and CRC), "
                "so they are the segment's own with corrupt offset fields (the CRC does not cover a batch's base "
                "offset); reads take them as corrupt")
    if not outside.held:  # (a raised offset field, or a cleaner's merged copy: the errors beside this one say which)
        return ""
    try:
        cut = foreign_log_cut(pdir, i, outside, unflushed=True)
    except KafkaSegError:
        cut = None
    if cut is not None:
        return f": {cut.summary()}"
    if first >= next_base:
        where = f"past the next segment's base offset {next_base}"
        also = (", or a log cleaner's merged copy beside the next segment's original; reads take its range as "
                "missing offsets (missing_offsets)")
    else:
        where, also = f"below its own base offset {seg.base_offset}", "; reads take its batches as corrupt"
    return (f": the file holds another segment's batches (offsets {first}..{last}, {where}), none of its own "
            f"range {seg.base_offset}..{next_base - 1}, and no index entry of its own names an offset of that range, "
            "so nothing says what it held: another segment's .log copied over this one (a restore or copy gone "
            f"wrong) or a file renamed{also}")


def _own_range_lost(pdir: PartitionDir, k: int | None, first: int, last: int):
    """The :class:`~kafkaseg.storage.layout.ForeignLog` (proven or not) of rolled segment ``k`` when its file
    holds another segment's batches, its own indexes naming offsets of its range, and that range holds offsets of
    the gap ``first..last`` verify found before its first batch; else None (rolled_cut_of, the reads' rule). Asked
    only when the gap runs past its whole range (its first batch at or past the next segment's base): a compacted
    segment's gap before a batch of its own (the cleaner keeps a segment's base offset, not its first records)
    reads nothing more."""
    if k is None or k + 1 >= len(pdir.segments) or last + 1 < pdir.segments[k + 1].base_offset:
        return None
    try:
        cut = rolled_cut_of(pdir, k, unflushed=True)
    except KafkaSegError:
        return None
    return cut if isinstance(cut, ForeignLog) and cut.first_offset <= last and cut.end_offset > first else None


def _cut_before(pdir: PartitionDir, k: int, first: int, last: int):
    """The :class:`~kafkaseg.storage.layout.RolledCut` (proven or not) of the rolled segment just before segment
    ``k`` when it holds offsets of the gap ``first..last`` before it, else None (:func:`rolled_cut_of`)."""
    try:
        cut = rolled_cut_of(pdir, k - 1, unflushed=True) if k else None
    except KafkaSegError:
        return None
    return cut if cut is not None and cut.first_offset <= last and cut.end_offset > first else None


def _replaced(seg) -> bool:
    """Whether a local segment's ``.log`` is another file than the listing saw (the cleaner's swap)."""
    if seg.identity is None:
        return False
    try:
        now = os.stat(seg.log_path)
    except OSError:
        return False
    return (now.st_dev, now.st_ino) != seg.identity


def _gone(path: str, pdir: PartitionDir) -> bool:
    """Whether nothing is at ``path`` any more (a broken symlink is still there: unreadable, not deleted)."""
    if _fs.is_local(pdir.filesystem):
        return not os.path.lexists(path)
    return not _fs.exists(path, pdir.filesystem)


def _first_magic(seg, pdir: PartitionDir) -> int | None:
    """The magic byte of the segment's first batch (None when it has none or cannot be read)."""
    try:
        with SegmentReader(seg.log_path, pdir.filesystem) as reader:
            first = reader.header_at(0)
    except KafkaSegError:
        return None
    return None if first is None else first.magic


def _unreadable(report: VerifyReport, path: str, err: KafkaSegError) -> None:
    report.add(ERROR, path, getattr(err, "position", None),
               f"cannot read: {getattr(err, 'detail', None) or err}")


def _verify_kraft_snapshot(path: str, pdir: PartitionDir, report: VerifyReport) -> None:
    with SegmentReader(path, pdir.filesystem) as reader:
        walk = reader.chunks(0, target_bytes=_CHUNK)
        try:
            for chunk_position, buf in walk:
                for header in iter_headers(buf):
                    if computed_crc(buf, header) != header.crc:
                        report.add(ERROR, path, chunk_position + header.position,
                                   "CRC mismatch in snapshot batch")
        except KafkaSegError as err:
            report.add(ERROR, path, getattr(err, "position", None), str(err))
        if walk.tail is not None:
            report.add(ERROR, path, walk.tail.position,
                       f"{walk.tail.length} invalid bytes at the end of the snapshot")


def report_skipped_folders(report: VerifyReport, folders: list[SkippedFolder]) -> None:
    """The log dirs' folders discovery skipped: info, but a warning for a ``-future`` folder (a replica move between
    log dirs in progress: this log dir does not hold the partition's current copy, another one does)."""
    for folder in folders:
        report.add(WARNING if folder.moving else INFO, folder.path, None, f"skipped: {folder.reason}")
    report.flush_omitted()


def report_incarnations(report: VerifyReport, partitions: list[PartitionDir]) -> None:
    """What reads refuse, as errors: a topic whose copies come from two incarnations (topic ids) or clusters."""
    by_topic: dict[str, list[PartitionDir]] = {}
    for pdir in partitions:
        by_topic.setdefault(pdir.topic, []).append(pdir)
    for copies in by_topic.values():
        try:
            check_one_incarnation(copies)
        except LayoutError as err:
            report.add(ERROR, copies[0].path, None, str(err))


def report_copies_in_one_broker(report: VerifyReport, partitions: list[PartitionDir]) -> None:
    """A warning for a partition found twice in one broker: in two folders of one log dir (``orders-0`` and
    ``orders-00`` both parse as partition 0), or in two log dirs of the broker (the same ``cluster.id`` and
    ``node.id``, two ``directory.id``s: not two backups of one log dir, which share theirs). Kafka refuses to start
    with either (``LogManager.loadLog``: "Duplicate log directories for ... are found in both ..."); a move between
    log dirs cut short by a log dir failure leaves the second; reads choose one copy (the ``replicas`` option)."""
    by_partition: dict[tuple[str, int], list[PartitionDir]] = {}
    for pdir in partitions:
        by_partition.setdefault((pdir.topic, pdir.partition), []).append(pdir)

    def broker(pdir: PartitionDir):
        meta = pdir.log_dir_meta
        if meta is None or not meta.cluster_id or meta.node_id is None or not meta.directory_id:
            return None
        return meta.cluster_id, meta.node_id, meta.directory_id

    for copies in by_partition.values():
        for i, pdir in enumerate(copies):
            for other in copies[:i]:
                if pdir.log_dir is not None and pdir.log_dir == other.log_dir:
                    where = f"another folder of the same log dir, {other.path}"
                else:
                    mine, theirs = broker(pdir), broker(other)
                    if mine is None or theirs is None or mine[:2] != theirs[:2] or mine[2] == theirs[2]:
                        continue
                    where = (f"{other.log_dir or other.path}, another log dir of the same broker (cluster {mine[0]}, "
                             f"node {mine[1]})")
                report.add(WARNING, pdir.path, None,
                           f"{pdir.name} is also in {where}: the broker refuses to start with both (\"Duplicate log "
                           f"directories for {pdir.name} are found\"); reads choose one copy (replicas)")
                break


def _remote_log_metadata(partitions: list[PartitionDir]):
    """Discovery's hook (:func:`kafkaseg.remote_metadata.read_remote_log_metadata`): which tiered-storage copies
    the ``__remote_log_metadata`` partitions among the paths say are live. Lenient: a corrupt metadata record is
    the metadata partition's own problem, which its verification reports; its copies are then checked as without
    it (noted)."""
    from kafkaseg.remote_metadata import read_remote_log_metadata

    return read_remote_log_metadata(partitions, lenient=True)


def report_live_copies_missing(report: VerifyReport, partitions: list[PartitionDir]) -> None:
    """A tiered-storage copy the partition's ``__remote_log_metadata`` says is live that is not in its remote
    folder: a fetch of its offsets fails on the broker. An error when the partition's log dir among
    ``partitions`` no longer holds them either (its first segment starts above the copy's first offset), or no log
    dir of the partition was given (reads of the copies alone lose them: a ``DataLossError``), a warning when a log
    dir given still holds them. (The dead copies found, and the counts, are the partition's notes.)"""
    local: dict[tuple[str, int], list[PartitionDir]] = {}
    for pdir in partitions:
        if pdir.tiered is None and pdir.segments:
            local.setdefault((pdir.topic, pdir.partition), []).append(pdir)
    for pdir in partitions:
        states = pdir.copy_states
        if pdir.tiered is None or states is None or states.unreadable is not None or states.found is None:
            continue
        for copy in states.live():
            if copy.segment_id in states.found:
                continue
            where = f"live copy {copy.segment_id} (offsets {copy.start_offset}-{copy.end_offset})"
            said = f"says __remote_log_metadata ({states.source})"
            holding = [d for d in local.get((pdir.topic, pdir.partition), ())
                       if d.segments[0].base_offset <= copy.start_offset]
            if holding:
                report.add(WARNING, pdir.path, None, f"{where} is missing from this folder, {said}; the log dir "
                           f"{holding[0].path} still holds its offsets")
            elif local.get((pdir.topic, pdir.partition)):
                report.add(ERROR, pdir.path, None, f"{where} is missing from this folder, {said}, and the log dir "
                           f"no longer holds its offsets either: reads lose them")
            else:  # (a read of the copies alone raises DataLossError for them: the remote tier lost the copy)
                report.add(ERROR, pdir.path, None, f"{where} is missing from this folder, {said}: reads of these "
                           "copies lose its offsets (a log dir of the partition, not given, may still hold them)")


def report_copy_gaps(report: VerifyReport, partitions: list[PartitionDir]) -> None:
    """Offsets of a tiered topic in no tiered-storage copy and no local segment (``layout.gaps_in_copies``: a copy
    missing between two copies, or between the newest copy and the log dir's first segment): an error when reads
    of the log dir's partition with its copies lose them, a warning when a log dir given still holds them, or when
    no log dir is read with the copies (the broker's may). Remote retention's deletions, below the oldest copy or
    the log dir's log start, are none."""
    for found in gaps_in_copies(partitions):
        report.add(ERROR if found.lost else WARNING, found.partition.path, None,
                   f"{found.partition.name}: {found.describe()}")


def verify_partitions(partitions: list[PartitionDir], report: VerifyReport, *, deep: bool = True,
                      progress=None) -> None:
    """:func:`verify_partition` for each of ``partitions``, appending to ``report`` in their order. On object
    storage partitions are verified :data:`~kafkaseg.storage.fs.REMOTE_THREADS` at a time (each in its own
    report, merged in order), so a backup's requests overlap; local ones one after another. The log dirs'
    checkpoints are checked first, once per log dir."""
    for pdir in partitions:
        _check_log_dir_checkpoints(pdir, report)
    report.flush_omitted()

    def verify_one(pdir: PartitionDir) -> VerifyReport:
        own = VerifyReport(checked_log_dirs=set(report.checked_log_dirs), max_listed=report.max_listed)
        verify_partition(pdir, own, deep=deep, progress=progress)
        fresh = _listed_again_if_rewritten(pdir, own)
        if fresh is not None:  # checked once more as it is now (that report stands)
            own = VerifyReport(checked_log_dirs=set(report.checked_log_dirs), max_listed=report.max_listed)
            verify_partition(fresh, own, deep=deep)
        return own

    for own in _fs.map_files(verify_one, partitions, [p.filesystem for p in partitions]):
        report.partitions.extend(own.partitions)
        report.problems.extend(own.problems)


def _listed_again_if_rewritten(pdir: PartitionDir, report: VerifyReport) -> PartitionDir | None:
    """A fresh listing of ``pdir`` when every error ``report`` found is in its active segment's files and a live
    broker's truncation past the high watermark may have rewritten that segment during the walk
    (:func:`~kafkaseg.storage.layout.rewritten_past_high_watermark`: index entries of the old generation judged
    against the new one's batches, a walk from a position the new bytes no longer start a batch at); else None."""
    errors = report.errors
    if not errors or not {p.file for p in errors} <= active_segment_files(pdir):
        return None
    if not rewritten_past_high_watermark(pdir):
        return None
    return _listed_again(pdir)


def discover_to_verify(paths: list[str], skipped: list[tuple[str, str]], key_ring=None, *,
                       topics: Collection[str] | None = None) -> list[PartitionDir]:
    """The partitions under ``paths`` as verify checks them (:func:`kafkaseg.storage.layout.discover`, with
    ``__remote_log_metadata`` deciding which tiered-storage copies are live when it is among the paths);
    ``skipped`` gets the log dirs' folders not read. A partition whose segments cannot be listed as a log (a segment
    that is no readable file, or named past a 64-bit long) is one with its ``error``, which :func:`verify_partition`
    reports (with a ``.log`` file given from its folder, checked on its own). ``topics``: only those topics'
    partitions (the other folders of a log dir are not read; a partition folder or file given is kept only when of
    one of them), as :func:`kafkaseg.cli.describe.describe_paths` selects them."""
    wanted = None if topics is None else frozenset(topics)
    found = discover(paths, skipped=skipped, key_ring=key_ring, remote_log_metadata=_remote_log_metadata,
                     partition_errors=True, select=None if wanted is None else (lambda name, _: name in wanted))
    return found if wanted is None else [p for p in found if p.topic in wanted]


def report_across_partitions(report: VerifyReport, found: list[PartitionDir]) -> None:
    """What only the partitions found together tell: incarnations and brokers mixed, a partition twice in one
    broker, live tiered-storage copies missing, offsets in no copy (:func:`report_copy_gaps`)."""
    report_incarnations(report, found)
    report_copies_in_one_broker(report, found)
    report_live_copies_missing(report, found)
    report_copy_gaps(report, found)


def verify_paths(paths: list[str], *, deep: bool = True, progress=None, key_ring=None) -> VerifyReport:
    """Verify every partition found under ``paths`` (see :func:`discover_to_verify`) and report the folders
    skipped in the log dirs among them: what ``kafkaseg verify`` does."""
    report = VerifyReport()
    skipped: list[tuple[str, str]] = []
    found = discover_to_verify(paths, skipped, key_ring)
    report_across_partitions(report, found)
    verify_partitions(found, report, deep=deep, progress=progress)
    report_skipped_folders(report, skipped_folders(skipped))
    return report
