"""Offset and time lookups on one partition, Spark-free, touching one index entry per segment at most.

This is what ``kafkaseg offsets`` (Kafka's ``kafka-get-offsets.sh``), ``kafkaseg locate`` and ``jobs/lookup.py``
run. Semantics are the broker's ListOffsets (``core/.../log/UnifiedLog.scala`` ``fetchOffsetByTimestamp``,
``LogSegment.findOffsetByTimestamp``, ``FileRecords.searchForTimestamp``, ``cluster/Partition.scala``
``fetchOffsetForTimestamp``, ``server/ReplicaManager.scala``)::

    -2 earliest        the log start offset: max(log-start-offset checkpoint, first segment base) (for a tiered topic
                       the broker answers a checkpoint below the first segment: PartitionDir.below_local_log)
    -4 earliest-local  the same: the first offset in these files
    -1 latest          the last fetchable offset: high watermark (read_uncommitted) or last stable offset
                       (read_committed)
    -5 latest-tiered   no offset (no tiered storage)
    -6 earliest-pending-upload  no offset (no tiered storage). With tiered-storage copies: the offset after the last
                       one copied, at least the log start (UnifiedLog.fetchEarliestPendingUploadOffset, KIP-1023,
                       ListOffsets v11)
    -3 max-timestamp   the segment with the largest maxTimestampSoFar (the first one on ties); its time index's last
                       entry (ts, offset); the offset-index floor of offset; the first batch from there whose
                       maxTimestamp == ts; the first record of it whose timestamp == ts (none for magic 0)
    T >= 0             the first segment whose largestTimestamp >= T; its time-index floor of T (ts, off); the
                       offset-index floor of max(off, logStartOffset); batches from there: in the first whose
                       maxTimestamp >= T, the first record with timestamp >= T and offset >= logStartOffset (else on
                       to the next batch, to the end of that segment)
    -3 and T >= 0      an answer at or past the last fetchable offset is "no offset" (ReplicaManager)

Planning resolves Spark's timestamp options through :meth:`PartitionLookup.offset_for_timestamp` too, so there is
one implementation of the rule. Here:

* the segment is the first whose largest timestamp reaches T, found as the broker finds it, by a linear scan over
  segments' largest timestamps (each reads ONE time-index entry, the last: about 4 ms for 1,000 local segments).
  ``exact=False`` finds it by binary search instead (O(log n) entries), which assumes largest timestamps do not
  decrease from segment to segment: always true for LogAppendTime, but one record from a producer whose clock ran
  ahead breaks it for every later segment, and probes that happen not to see the decrease return a later
  segment (a wrong offset). Planning, and the CLI unless ``--fast``, use the exact scan;
* index floors are binary searches over the index FILES with positioned reads of single entries (a live broker's
  preallocated zero tail is found by binary search too); a missing or insane index is rebuilt in memory from the
  segment's batch headers (:func:`kafkaseg.storage.indexes.load_indexes`), which the stats report;
* log reads are batch headers from the offset-index floor plus the one batch that holds the answer; record
  timestamps are compared as the broker compares them, as raw millisecond longs (:func:`kafkaseg.wire.records.batch_records` reads a
  batch stamped beyond the Arrow decoder's microsecond range, such as a producer sending nanoseconds);
* where files disagree, answers come from the log as after the broker's recovery: an index whose last entry lies
  past its log's data is rebuilt (one entry read per index, and one index interval of headers for a time index,
  checks it), the active segment ends before a final batch wholly past the high watermark that fails its CRC (one
  more batch read), and an unreadable checkpoint an answer depends on raises instead of falling back;
* damage inside a segment (bad framing, zeros hiding records, a batch failing its CRC, a batch whose offset field,
  outside the CRC, the decoders take as corrupt: :meth:`PartitionLookup._offset_field_problem`) that a walk meets raises,
  as a strict read starting there does, or for a lenient lookup is gone past where a lenient read resumes (the
  batch the bad one's length field says follows, when it checks out, else the next offset index entry whose batch
  checks out: :class:`~kafkaseg.entry_check.ResumptionEntries`); a lenient lookup's log end is a lenient read's
  (:func:`~kafkaseg.storage.layout.find_log_end`, planning's rule), so damage in the active segment ends the log
  there instead of failing every lookup of the partition; an index
  entry pointing into such damage is walked to from the entry before it, never taken as a wrong index (a rebuild
  from the log would end the segment at the damage). A lenient locate reports an offset lost to it as unreadable,
  with the range of offsets lost.

:class:`LookupStats` counts index entries read, index and log bytes read, and files opened.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass, field
from typing import Callable, Iterator

from kafkaseg.errors import (
    CorruptCheckpointError,
    CorruptBatchError,
    CorruptDataError,
    CorruptIndexError,
    InvalidOptionError,
    KafkaSegError,
    LayoutError,
)
from kafkaseg.entry_check import (BAD_BATCH_ENDS_SEGMENT, ENTRY_CRC_MAX_BYTES, ResumptionEntries, batch_first_offset,
                                  entry_batch_problem, resynchronised_batch)
from kafkaseg.decode.api import batch_start_offset
from kafkaseg.offset_outlier import (batch_offset_field_problem, goes_back_after, offset_before, outlier_region,
                                     wrapper_below_inner)
from kafkaseg.options import datetime_ms
from kafkaseg.storage.checkpoints import LOG_START_OFFSET_CHECKPOINT, REPLICATION_OFFSET_CHECKPOINT
from kafkaseg.storage.layout import (ListingCheck, LogEnd, LostTail, PartitionDir, find_log_end, flushed_past_end,
                                     last_stable_offset, lost_tail, partition_log_end_offset, rolled_cut_holding,
                                     rolled_cut_of, truncation_bound, unacknowledged_append)
from kafkaseg.storage._index_file import index_location
from kafkaseg.storage.indexes import (LeftEntries, foreign_time_index, largest_timestamp_walked, left_entries,
                                      time_entry_problem, time_pair_foreign, walked_time_entry_problem)
from kafkaseg.storage.offset_index import OffsetIndex
from kafkaseg.storage.time_index import TimeIndex
from kafkaseg.storage.probed_index import LoadedIndexView, OpenFileLimit, ProbedIndex
from kafkaseg.storage.segment import DEFAULT_MAX_BATCH_BYTES, SegmentReader, zeros_hiding_records
from kafkaseg.wire.batch import BatchHeader
from kafkaseg.wire.crc import crc_is_valid
from kafkaseg.wire.records import batch_records

__all__ = [
    "EARLIEST", "LATEST", "MAX_TIMESTAMP", "EARLIEST_LOCAL", "LATEST_TIERED", "EARLIEST_PENDING_UPLOAD",
    "LookupStats", "OffsetAnswer", "RecordLocation", "PartitionLookup",
    "parse_time_spec", "list_offset", "locate_offset", "locate_time", "batch_epoch_mark", "epoch_mark_of",
    "other_copies", "copies_beside", "from_other_copies", "list_offset_rests_on", "locate_rests_on", "widest",
]

LATEST = -1
EARLIEST = -2
MAX_TIMESTAMP = -3
EARLIEST_LOCAL = -4
LATEST_TIERED = -5
EARLIEST_PENDING_UPLOAD = -6
_SPEC_NAMES = {"latest": LATEST, "earliest": EARLIEST, "max-timestamp": MAX_TIMESTAMP,
               "earliest-local": EARLIEST_LOCAL, "latest-tiered": LATEST_TIERED,
               "earliest-pending-upload": EARLIEST_PENDING_UPLOAD}
_SPECS_TEXT = ("-1/latest, -2/earliest, -3/max-timestamp, -4/earliest-local, -5/latest-tiered, "
               "-6/earliest-pending-upload")
ISOLATION_LEVELS = ("read_uncommitted", "read_committed")
_SEGMENT_ENDS = "the segment's offsets end here"  # (PartitionLookup._offset_field_problem)
_UNKNOWN = object()


class _BytesAt:
    """The 17 bytes at ``position`` of ``reader`` (a batch's start, where its offset field is), when called: ``held``
    when given (from a header walk's block), else read at the first call and held for the others."""

    __slots__ = ("reader", "position", "held")

    def __init__(self, reader: SegmentReader, position: int, held: bytes | None):
        self.reader, self.position, self.held = reader, position, held

    def __call__(self) -> bytes:
        if self.held is None:
            self.held = self.reader.read_at(self.position, 17)
        return self.held


def parse_time_spec(text: str | int) -> int:
    """A ``--time`` value as ``kafka-get-offsets.sh`` takes it (``-1``/``latest``, ``-2``/``earliest``,
    ``-3``/``max-timestamp``, ``-4``/``earliest-local``, ``-5``/``latest-tiered``, ``-6``/``earliest-pending-upload``,
    epoch milliseconds) or an ISO-8601
    date-time (``2024-05-01T12:00:00Z``; without a zone it is UTC). Returns the ListOffsets timestamp."""
    if isinstance(text, int):
        value = text
    else:
        raw = str(text).strip()
        if raw.lower() in _SPEC_NAMES:
            return _SPEC_NAMES[raw.lower()]
        try:
            value = int(raw)
        except ValueError:
            moment = datetime_ms(raw)
            if moment is None:
                raise InvalidOptionError(
                    f"time {raw!r} is not {_SPECS_TEXT}, epoch milliseconds, or an ISO-8601 date-time") from None
            return moment
    if value < EARLIEST_PENDING_UPLOAD:
        raise InvalidOptionError(f"time {value} is not a timestamp (>= 0) or one of {_SPECS_TEXT}")
    if value > 2**63 - 1:  # ListOffsets carries an int64; Kafka's tool rejects larger values
        raise InvalidOptionError(f"time {value} does not fit in a 64-bit timestamp")
    return value


@dataclass
class LookupStats:
    """The work one or more lookups did."""

    index_entries: int = 0       # .index/.timeindex entries read (binary-search probes, last-entry probes)
    index_bytes: int = 0         # bytes read from index files
    log_bytes: int = 0           # bytes read from .log files (headers and the decoded batch)
    headers: int = 0             # batch headers walked
    files_opened: int = 0
    segments_probed: int = 0     # segments whose largest timestamp was looked at
    rebuilt_indexes: list = field(default_factory=list)  # (path, reason) of indexes rebuilt in memory
    fell_back_to_linear: bool = False
    skipped: list = field(default_factory=list)  # (path, byte, detail) of corruption a lenient lookup went past

    def as_dict(self) -> dict:
        return {"indexEntries": self.index_entries, "indexBytes": self.index_bytes, "logBytes": self.log_bytes,
                "headers": self.headers, "filesOpened": self.files_opened, "segmentsProbed": self.segments_probed,
                "rebuiltIndexes": [list(r) for r in self.rebuilt_indexes],
                "fellBackToLinear": self.fell_back_to_linear, "skipped": [list(s) for s in self.skipped]}


@dataclass(frozen=True)
class OffsetAnswer:
    """A ListOffsets answer: ``offset`` None means "no offset" (kafka-get-offsets prints nothing for it);
    ``timestamp`` -1 when the spec carries none (earliest/latest); ``reason`` says why there is no offset."""

    topic: str
    partition: int
    spec: int
    offset: int | None
    timestamp: int = -1
    leader_epoch: int | None = None
    reason: str | None = None

    def line(self) -> str:
        """``topic:partition:offset`` as kafka-get-offsets.sh prints it (None -> no line: returns '')."""
        return "" if self.offset is None else f"{self.topic}:{self.partition}:{self.offset}"

    def as_dict(self) -> dict:
        return {"topic": self.topic, "partition": self.partition, "time": self.spec, "offset": self.offset,
                "timestamp": self.timestamp, "leaderEpoch": self.leader_epoch, "reason": self.reason}


@dataclass(frozen=True)
class RecordLocation:
    """Where an offset lives: the segment file, its batch (header and byte position) and the record in it.

    ``found`` is False when no record has exactly ``offset`` (a compaction gap, below the log start, at/past the
    log end, lost to damage a lenient lookup went past, or with a live tiered-storage copy missing that
    ``__remote_log_metadata`` lists: :attr:`~kafkaseg.storage.layout.PartitionDir.live_copies_lost`): then ``record_offset`` is the next record after it in the
    log (None when there is none) and ``reason`` says why."""

    topic: str
    partition: int
    offset: int
    found: bool
    segment: str | None = None
    batch: BatchHeader | None = None
    record_offset: int | None = None
    record_timestamp: int | None = None
    record_index: int | None = None  # position of the record inside its batch (0-based)
    key_size: int | None = None
    value_size: int | None = None
    reason: str | None = None

    def as_dict(self) -> dict:
        b = self.batch
        return {
            "topic": self.topic, "partition": self.partition, "offset": self.offset, "found": self.found,
            "segment": self.segment, "position": b.position if b else None,
            "batch": None if b is None else {
                "baseOffset": b.base_offset, "lastOffset": b.last_offset, "size": b.size, "magic": b.magic,
                "compresscodec": b.codec_name, "maxTimestamp": b.max_timestamp, "producerId": b.producer_id,
                "isTransactional": b.is_transactional, "isControl": b.is_control,
                "partitionLeaderEpoch": b.partition_leader_epoch},
            "recordOffset": self.record_offset, "recordTimestamp": self.record_timestamp,
            "recordIndex": self.record_index, "keySize": self.key_size, "valueSize": self.value_size,
            "reason": self.reason,
        }


# -- one partition ------------------------------------------------------------------------------------------------


def epoch_mark_of(header, offset: int) -> tuple[int, int] | None:
    """:meth:`PartitionLookup.epoch_mark` of ``header``, the last batch below ``offset`` (None: no batch)."""
    if header is None or header.magic < 2 or header.partition_leader_epoch < 0:
        return None
    return header.partition_leader_epoch, min(offset, header.last_offset + 1)

class PartitionLookup:
    """Lookups on one :class:`~kafkaseg.storage.layout.PartitionDir`. Index files are opened lazily and kept open
    until :meth:`close` (use as a context manager); ``stats`` accumulates over calls.

    An answer that depends on an unreadable ``replication-offset-checkpoint`` (latest, and timestamp answers capped
    at it) or ``log-start-offset-checkpoint`` (earliest, and every timestamp answer) raises
    :class:`~kafkaseg.errors.CorruptCheckpointError`; ``checkpoints_checked=True`` is for a caller that has applied
    its own policy to them already (planning: fall back to the log under ``onCorruption=skip``).

    ``lenient=True`` (planning under ``onCorruption=skip``, ``kafkaseg offsets/locate --on-corruption skip``) makes
    timestamp searches and :meth:`locate` go past corruption instead of raising: a segment whose indexes must be
    rebuilt and whose framing breaks is indexed up to the bad bytes, the walk of a segment goes on after bad framing
    (zeros hiding records too) where a lenient read resumes (its next offset index entry whose batch checks out,
    else the next segment), a batch that fails its CRC is passed over, and a segment with no match after such a skip
    sends the search on to the next one; an offset lost to it is located as unreadable (the next readable record,
    and the range lost); each skip is listed in ``stats.skipped``."""

    def __init__(self, partition_dir: PartitionDir, *, isolation: str = "read_uncommitted",
                 max_batch_bytes: int = DEFAULT_MAX_BATCH_BYTES, verify_crc: bool = True,
                 checkpoints_checked: bool = False, open_files: OpenFileLimit | None = None,
                 lenient: bool = False):
        if isolation not in ISOLATION_LEVELS:
            raise InvalidOptionError(f"isolation {isolation!r} is not one of {', '.join(ISOLATION_LEVELS)}")
        self.pdir = partition_dir
        self.isolation = isolation
        self.max_batch_bytes = max_batch_bytes
        self.verify_crc = verify_crc
        self.checkpoints_checked = checkpoints_checked
        self.lenient = lenient
        self.fs = partition_dir.filesystem
        self.segments = partition_dir.segments
        self.bases = [s.base_offset for s in self.segments]
        self.stats = LookupStats()
        # (log path, byte) -> end of the region of batches whose offset field is corrupt found there (_headers)
        self._regions: dict[tuple[str, int], int] = {}
        self._indexes: dict[tuple[int, str], object] = {}
        # index files held open at once (thousands of segments: ulimit -n); lookups of many partitions kept open
        # together (jobs/lookup.py) share one limit
        self._open_files = open_files if open_files is not None else OpenFileLimit()
        self._largest: dict[int, tuple[int, int]] = {}
        self._leo: int | None = None
        self._fetchable: int | None = None
        self._torn: tuple[int, int] | None | bool = False  # False: not looked for yet
        self._end: LogEnd | None = None  # the lenient log end (lenient lookups)
        self._lost: LostTail | None | bool = False  # see lost_tail (False: not looked for yet)
        self._cuts: dict[int, LostTail | None] = {}  # offset -> lost_at's rolled segment cut short holding it
        self.search_note: str | None = None  # why the last timestamp or max-timestamp search found nothing
        self._time_checked: set[int] = set()  # segments whose time index an empty search checked against the log
        self._time_judged: set[int] = set()  # segments whose time index's last entry was checked against its batch
        self._cut_time: set[tuple[int, int]] = set()  # (segment, entries kept): _cut_time_entries_at
        # rolled segments whose walk ended at a batch cut short or zeros, or that were emptied (their own time index
        # past their batches): the offsets from there to the next segment's base are in no batch a read returns
        # (lost or unreadable tails, a warning or an error)
        self._rolled_cuts: set[int] = set()
        self._foreign: dict[int, bool] = {}  # segment -> whether its file holds another segment's batches (locate)

    # -- plumbing --------------------------------------------------------------------------------------------
    def close(self) -> None:
        for index in self._indexes.values():
            index.close()
        self._indexes.clear()

    def __enter__(self) -> "PartitionLookup":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _index(self, i: int, kind: str):
        key = (i, kind)
        if key in self._indexes:
            return self._indexes[key]
        seg = self.segments[i]
        path, window = index_location(seg, "index" if kind == "offset" else "timeindex")
        reason = f"missing .{'index' if kind == 'offset' else 'timeindex'} file"
        if path:
            try:
                index = ProbedIndex(path, kind, seg.base_offset, self.fs, self.stats, self._open_files, window)
            except (CorruptIndexError, LayoutError) as err:
                reason = f"unusable index ({err})"
            else:
                stale = self._stale_entry(i, index)
                if key in self._indexes:  # the check itself rebuilt this segment's indexes
                    index.close()
                    return self._indexes[key]
                self._indexes[key] = index
                if stale is None or self._cut_left_entries(i, kind):
                    return self._indexes[key]
                self._rebuild_stale(i, stale)  # (closes it)
                return self._indexes[key]
        self._rebuild(i, reason)
        return self._indexes[key]

    def _rebuild_stale(self, i: int, stale: str) -> None:
        """:meth:`_rebuild` of segment ``i``, whose index proved stale (``stale``: its entries past its log's data);
        a rolled segment's entries past its bytes are a cut (emptied too: :attr:`_rolled_cuts`)."""
        if i + 1 < len(self.segments):
            self._rolled_cuts.add(i)
        self._rebuild(i, f"stale index ({stale})")

    def _rebuilt(self, i: int) -> bool:
        """Whether segment ``i``'s indexes were rebuilt (found missing, stale or not its own)."""
        return any(path == self.segments[i].log_path for path, _ in self.stats.rebuilt_indexes)

    def _rebuild(self, i: int, reason: str) -> None:
        """Both indexes of segment ``i`` rebuilt from its batch headers, replacing any opened before: once one is
        known to disagree with the log, the log decides both."""
        from kafkaseg.storage.indexes import rebuild_indexes

        seg = self.segments[i]
        with SegmentReader(seg.log_path, self.fs) as reader:
            self.stats.files_opened += 1
            offsets, times = rebuild_indexes(reader, seg.base_offset, max_batch_bytes=self.max_batch_bytes,
                                             reason=reason, on_corruption=self._skip if self.lenient else None)
        self.stats.log_bytes += seg.log_size  # a rebuild walks every header of the segment
        self.stats.rebuilt_indexes.append((seg.log_path, reason))
        for kind, loaded in (("offset", offsets), ("time", times)):
            previous = self._indexes.get((i, kind))
            if previous is not None:
                previous.close()
            self._indexes[(i, kind)] = LoadedIndexView(loaded, kind)
        self._largest.pop(i, None)

    def _skip(self, err: CorruptDataError) -> None:
        """Note corruption a lenient lookup goes past (raised when the lookup is strict)."""
        if not self.lenient:
            raise err
        entry = (err.path, err.position, err.detail)
        if entry not in self.stats.skipped:
            self.stats.skipped.append(entry)

    def _resumption(self, i: int, bad: int | None, last_seen: int) -> int | None:
        """Where a lenient read of segment ``i`` resumes after bad framing at byte ``bad``, having read up to offset
        ``last_seen``: the batch the bad one's length field says follows it when that one checks out (the decoders'
        resynchronisation, :func:`~kafkaseg.entry_check.resynchronised_batch`); else the next entry of its offset
        index file whose batch checks out and starts above it (:class:`~kafkaseg.entry_check.ResumptionEntries`, the
        scan's rule), or None (no sane index file, or no such entry: the read skips the rest of the segment)."""
        seg = self.segments[i]
        if bad is None:
            return None
        region_end = self._regions.get((seg.log_path, bad))
        if region_end is not None:  # batches whose offset field is corrupt (_headers): the read goes on after them
            return region_end if region_end < seg.log_size else None
        with SegmentReader(seg.log_path, self.fs) as reader:  # the decoders' rule: the bad batch's length field
            self.stats.files_opened += 1
            found = resynchronised_batch(reader, bad, self.max_batch_bytes, None)
        if found == BAD_BATCH_ENDS_SEGMENT:
            return None
        if found is not None:
            return found[0]
        index_path, index_window = index_location(seg, "index")
        if not index_path:
            return None
        self.stats.files_opened += 1
        entries = ResumptionEntries(seg.log_path, index_path, seg.base_offset,
                                    self.bases[i + 1] if i + 1 < len(self.segments) else None, self.fs,
                                    max_batch_bytes=self.max_batch_bytes, max_decompressed_bytes=None,
                                    index_window=index_window)
        try:
            found = entries.next_checked(bad, None, last_seen)
        finally:
            entries.close()
        return None if found is None else found[0]

    def _stale_entry(self, i: int, index: ProbedIndex) -> str | None:
        """Why the last entry of segment ``i``'s index file cannot describe its log, or None. An index that runs
        ahead of its log (a copy taken while the broker wrote, a log truncated after its index was flushed) has
        entries past the data; the broker's recovery rebuilds such a segment's indexes from the log (it recovers
        every segment past the recovery point), so kafkaseg rebuilds them too instead of answering from entries
        for records that are not there. One entry read per index."""
        seg = self.segments[i]
        if not len(index):
            return None
        if index.kind == "offset":
            offset, position = index.last()
            if position >= seg.log_size:
                return f"entry for offset {offset} points at byte {position}, past the log's {seg.log_size} bytes"
            if position < 0:
                return f"entry for offset {offset} points at byte {position}"
            return None
        # rolled segments: against the next base only (one entry); a rolled segment cut short within its last index
        # interval is caught when a search there comes back empty (_answer_from_log)
        return self._time_entry_past_end(i, index, from_headers=i + 1 == len(self.segments))

    def _time_entry_past_end(self, i: int, index, *, from_headers: bool) -> str | None:
        """Why time index ``index`` of segment ``i`` is stale (its last entry is for an offset at or past where the
        segment's records end: the next base, or ``from_headers`` the end its batch headers show), or None (also
        when that end cannot be read: the log's own corruption is reported where an answer needs those bytes)."""
        if not len(index):
            return None
        _, offset = index.last()
        try:
            end = self._segment_end_from_headers(i) if from_headers else self.bases[i + 1]
        except KafkaSegError:
            return None
        if offset >= end:
            return f"last entry is for offset {offset}, but the segment's records end below {end}"
        return None

    def _judge_time_index(self, i: int) -> bool:
        """Check the last entry of segment ``i``'s ``.timeindex`` file against the batch holding its offset (once
        per segment, :func:`~kafkaseg.storage.indexes.walked_time_entry_problem`, walking from the offset index's
        floor); when it is not the segment's own, rebuild the segment's indexes from its batches (reported) and
        return True."""
        if i in self._time_judged:
            return False
        self._time_judged.add(i)
        index = self._index(i, "time")
        if index.rebuilt or not len(index):
            return False
        entry = index.last()
        problem = walked_time_entry_problem(lambda: self._walk_from(i, entry[1]), entry)
        if problem is None:
            return False
        self._distrust_time_index(i, entry, problem)
        return True

    def _distrust_time_index(self, i: int, entry: tuple[int, int], problem: str) -> None:
        """Segment ``i``'s ``.timeindex`` is another segment's (its entry ``entry`` cannot be its own: ``problem``):
        judged, and the segment's indexes rebuilt from its batches (reported). Unless ``entry`` is the active
        segment's at or past where a follower's truncation may have cut it (:meth:`_cut_time_entries_at`)."""
        if self._cut_time_entries_at(i, entry):
            return
        self._time_judged.add(i)
        self._rebuild(i, foreign_time_index(entry, problem))

    def _cut_time_entries_at(self, i: int, entry: tuple[int, int]) -> bool:
        """Whether segment ``i``'s ``.timeindex`` entry ``entry``, which fits no batch, is the active segment's at or
        past where a follower's truncation may have cut it (:func:`~kafkaseg.storage.layout.truncation_bound`), and
        the index is now taken up to it: such a truncation leaves the truncated generation's entries as a suffix of
        the file (after the new appends'), so from one that fits nothing on, none is the log's. The entries kept
        are judged again where they are used; nothing rebuilt, nothing reported."""
        seg = self.segments[i]
        index = self._index(i, "time")
        bound = truncation_bound(self.pdir, seg.log_path, seg.base_offset)
        if bound is None or entry[1] < bound[0] or index.rebuilt:
            return False
        loaded = index.index if isinstance(index, LoadedIndexView) else None
        if loaded is None:
            path, window = index_location(seg, "timeindex")
            try:
                loaded = TimeIndex.load(path, seg.base_offset, self.fs, window=window)
            except KafkaSegError:
                return False
            self.stats.files_opened += 1
            self.stats.index_bytes += loaded.ENTRY_SIZE * len(loaded)
        import numpy as np

        at = np.flatnonzero((loaded.offsets == entry[1]) & (loaded.timestamps == entry[0])
                            & (loaded.offsets >= bound[0]))
        if not at.size:
            return False
        k = int(at[0])
        index.close()
        self._indexes[(i, "time")] = LoadedIndexView(
            TimeIndex(seg.base_offset, loaded.timestamps[:k], loaded.offsets[:k], path=loaded.path,
                      file_size=loaded.file_size), "time", rebuilt=False)
        self._cut_time.add((i, k))
        self._largest.pop(i, None)
        self._time_judged.discard(i)  # (its new last entry)
        return True

    def _out_of_order(self, i: int) -> bool:
        """Whether segment ``i``'s largest timestamp is not above segment ``i - 1``'s and one of their time indexes
        proved another segment's (:func:`~kafkaseg.storage.indexes.time_pair_foreign`, :meth:`_judge_time_index`),
        and is rebuilt."""
        return time_pair_foreign(i, self._known_largest_timestamp, self._judge_time_index)

    def _known_largest_timestamp(self, i: int) -> int | None:
        """:meth:`largest_timestamp`'s timestamp of segment ``i``, None when it has none."""
        ts = self.largest_timestamp(i)[0]
        return ts if ts >= 0 else None

    def _segment_end_from_headers(self, i: int) -> int:
        """The offset after the last whole batch of segment ``i``, walking headers from its offset index's last
        entry (about one index interval); for the last segment, the log end offset."""
        if i == len(self.segments) - 1:
            return self.log_end_offset()
        end = self.bases[i]
        _, position = self._index(i, "offset").last()
        for header in self._headers(i, position):
            end = header.next_offset
        return end

    def _unacknowledged_tear(self) -> tuple[int, int] | None:
        """``(offset, position)`` of the active segment's final batch when it lies wholly at or past the high
        watermark and fails its CRC, or None. That is a torn append, never acknowledged, and the broker's recovery
        truncates the log at an invalid batch (``LogSegment.recover``), so lookups end the log there, as planning
        does for torn framing. A bad batch that holds acknowledged offsets, or that is not the last, is corruption
        and raises where it is read. Without a checkpointed high watermark only an append a broker with
        ``log.preallocate`` is caught writing (zeros after it to the end of the file) is known to be unacknowledged
        (:func:`~kafkaseg.storage.layout.unacknowledged_append`, planning's rule). Costs one index interval of
        headers and one batch, once."""
        if self._torn is False:
            self._torn = None
            hw = self.pdir.high_watermark
            if hw is None and self.segments and self.verify_crc:
                torn = unacknowledged_append(self.pdir, max_batch_bytes=self.max_batch_bytes)
                self._torn = None if torn is None else (torn.base_offset, torn.position)
            if hw is not None and self.segments and self.verify_crc:
                last = len(self.segments) - 1
                _, position = self._index(last, "offset").last()
                seg = self.segments[last]
                final = None
                with SegmentReader(seg.log_path, self.fs) as reader:
                    self.stats.files_opened += 1
                    try:
                        for final in reader.iter_headers(position, max_batch_bytes=self.max_batch_bytes):
                            self.stats.headers += 1
                    except CorruptDataError:
                        final = None  # framing: the header walks decide (log_end_offset raises or reports it)
                    if final is not None and final.base_offset >= hw:
                        data = reader.read_at(final.position, final.size)
                        self.stats.log_bytes += len(data)
                        if len(data) < final.size or not crc_is_valid(data, final._replace(position=0)):
                            self._torn = (final.base_offset, final.position)
        return self._torn

    def _tear_in(self, i: int) -> tuple[int, int] | None:
        """:meth:`_unacknowledged_tear` when segment ``i`` is the active one, else None."""
        return self._unacknowledged_tear() if i == len(self.segments) - 1 else None

    def _headers(self, i: int, start: int, after: int | None = None) -> Iterator[BatchHeader]:
        """Batch headers of segment ``i`` from byte ``start``; in the active segment, not past a torn
        unacknowledged batch (:meth:`_unacknowledged_tear`). A batch whose offset field, which the CRC does not
        cover, the decoders take as corrupt raises (:meth:`_offset_field_problem`; ``after`` is the last offset read
        before ``start``, default the segment's base - 1), and a batch at or past the next segment's base with no
        lower batch after it ends the walk, as it ends a read of the segment. Bad framing raises, and so do zeros that end the walk
        with records after them (:func:`~kafkaseg.storage.segment.zeros_hiding_records`: a zeroed page, which a
        read fails on or, leniently, reads past), rather than ending the segment there. In the active segment only
        zeros before its last offset index entry are looked at here: its preallocated tail is
        :meth:`log_end_offset`'s to judge (:meth:`_check_zero_tail`), without reading the zeros to the file's end."""
        seg = self.segments[i]
        torn = self._tear_in(i)
        stop = None if torn is None else torn[1]
        if self.lenient and i == len(self.segments) - 1:  # not past where a lenient read's batches end
            readable = self._lenient_end().readable_position
            if readable is not None:
                stop = readable if stop is None else min(stop, readable)
        last_seen = self.bases[i] - 1 if after is None else after
        limit = self.bases[i + 1] if i + 1 < len(self.segments) else _UNKNOWN  # where a read of the segment ends
        with SegmentReader(seg.log_path, self.fs) as reader:
            self.stats.files_opened += 1
            walk = reader.iter_headers(start, max_batch_bytes=self.max_batch_bytes, block_size=16 * 1024)
            for header in walk:
                if stop is not None and header.position >= stop:
                    return
                self.stats.headers += 1
                self.stats.log_bytes += 61
                if limit is _UNKNOWN:
                    try:
                        limit = self.log_end_offset()
                    except KafkaSegError:
                        limit = None  # (the log end's own damage raises where an answer needs it)
                # the next batch's first bytes, from the walk's block when it holds them (no read of their own),
                # else read once, however many of the checks below look at them
                after_end = header.position + header.size
                next_bytes = _BytesAt(reader, after_end, walk.bytes_at(after_end, 17))
                problem = self._offset_field_problem(i, reader, header, last_seen, limit, next_bytes)
                if problem == _SEGMENT_ENDS:
                    return
                if problem is None and goes_back_after(reader, after_end, header.last_offset, next_bytes.held):
                    # the batch after it goes back below it: whose offset field is corrupt, judged as a read does,
                    # after the offsets a read has before it (at a walk's start mid-segment: found from the index)
                    floor = last_seen if after is not None or header.position == 0 or header.position > start \
                        else self._floor_before(i, reader, header)
                    region = outlier_region(reader, header.position, floor, limit=limit,
                                            next_base=self.bases[i + 1] if i + 1 < len(self.bases) else None,
                                            verify_crc=self.verify_crc, max_batch_bytes=self.max_batch_bytes)
                    if region is not None:
                        self._regions[(seg.log_path, header.position)] = region.end
                        problem = region.what
                if problem is not None:
                    raise CorruptBatchError(f"{problem} (a read with onCorruption=skip leaves the batch out and "
                                            "reads on)", path=seg.log_path, position=header.position)
                last_seen = header.last_offset
                yield header
            tail = walk.tail
            if tail is not None and i + 1 < len(self.segments):
                self._rolled_cuts.add(i)
            if tail is not None and tail.reason != "zero-filled tail":
                # a batch running past the segment's end, before a batch its offset index points at: its length
                # field is damaged (the CRC does not cover it), not a torn end; a read fails there or, leniently,
                # resumes at the next entry whose batch checks out
                entry_offset, entry_position = self._index(i, "offset").last()
                # ... when a sound batch that fits the entry is there: a follower's truncation leaves stale entries
                # in a live active segment's preallocated index (truncateToEntries only moves the position), which
                # an append in progress past them is no damage to
                if entry_position > tail.position and entry_batch_problem(
                        reader, entry_position, entry_offset, self.bases[i] - 1,
                        self.bases[i + 1] if i + 1 < len(self.bases) else None, self.max_batch_bytes, None)[0] is None:
                    raise CorruptBatchError(
                        f"{tail.detail}, but the offset index has an entry for offset {entry_offset} at byte "
                        f"{entry_position} after it: its length field is corrupt", path=seg.log_path,
                        position=tail.position)
                return
            if tail is None or (
                    i == len(self.segments) - 1 and tail.position >= self._index(i, "offset").last()[1]):
                return
            hiding = zeros_hiding_records(reader, tail.position)
            if hiding is not None:
                raise CorruptBatchError(hiding, path=seg.log_path, position=tail.position)

    def _floor_before(self, i: int, reader: SegmentReader, header: BatchHeader) -> int:
        """The last offset a read of segment ``i`` has taken before the batch ``header`` (what its offsets must
        follow), from the headers since the offset index entry before it (one index interval)."""
        index = self._index(i, "offset")
        entry_offset, position = index.floor(header.base_offset)
        while position >= header.position and position > 0:
            entry_offset, position = index.last_below_offset(entry_offset)
        return offset_before(reader, position, header.position, self.bases[i] - 1, verify_crc=self.verify_crc,
                             max_batch_bytes=self.max_batch_bytes)

    def _offset_field_problem(self, i: int, reader: SegmentReader, header: BatchHeader, last_seen: int,
                              limit: int | None, next_bytes: Callable[[], bytes]):
        """The decoders' rule for a batch of segment ``i`` (``reader``) after offset ``last_seen``, whose offset field
        (v2 base offset, legacy entry offset) the CRC does not cover (:func:`~kafkaseg.decode.api.offset_field_problem`,
        which ``kafkaseg verify`` shares): the problem when its first offset does not follow ``last_seen`` (a field
        gone back) or reaches ``limit``, where a read of the segment ends (the next segment's base), while the batch
        after it starts lower (a field gone up), or as a rolled segment's last v2 batch across the next segment's
        base, or past it with no later segment holding it (:func:`~kafkaseg.offset_outlier.past_next_base_problem`,
        as a read skips it); ``_SEGMENT_ENDS`` when it
        reaches there otherwise (the read of the segment ends); else None. In the active segment
        ``limit`` is the log end offset (:meth:`log_end_offset`: a lenient read's for a lenient lookup), None when
        it cannot be had: then a lower batch after it alone decides."""
        first = header.base_offset
        if header.magic < 2 and header.codec:  # a wrapper's offset is its last inner one: the first is inside
            try:
                first = batch_first_offset(reader, header.position, self.max_batch_bytes, None)
            except KafkaSegError as err:
                # its offset field is corrupt: damage for each of its offsets, those above the field's too, which a
                # walk by its header would pass over
                if wrapper_below_inner(getattr(err, "detail", "")):
                    return err.detail
                first = None  # (a wrapper that fails to decode otherwise is damage where its records are read)
            first = header.base_offset if first is None else first

        def following() -> int | None:  # (``next_bytes()``: the 17 bytes there, read once by the caller's walk)
            return batch_start_offset(next_bytes())

        problem = batch_offset_field_problem(header, first, last_seen, limit, following, self.segments, i, self.fs,
                                             max_batch_bytes=self.max_batch_bytes)
        if problem is not None or limit is None or first < limit:
            return problem
        return _SEGMENT_ENDS

    def _walk_from(self, i: int, offset: int, on_damage: Callable[[CorruptDataError], None] | None = None
                   ) -> Iterator[BatchHeader]:
        """:meth:`_walk` of segment ``i`` for ``offset``: from its offset index floor (:meth:`_floor_position`),
        checking the first batches against the offsets before them (:meth:`_offset_before`)."""
        start = self._floor_position(i, offset)
        return self._walk(i, start, on_damage, self._offset_before(i, offset, start))

    def _offset_before(self, i: int, offset: int, start: int) -> int:
        """The last offset a read of segment ``i`` has taken before byte ``start`` (where a walk for ``offset``
        starts), as the decoders check the batch there against it: the segment's base - 1 at its start; else from
        the headers since the offset index entry before ``start`` (one index interval), checked alike (damage
        among them: the last offset before it, which is what a read that skips it has)."""
        last = self.bases[i] - 1
        if start == 0:
            return last
        index = self._index(i, "offset")
        entry_offset, position = index.floor(offset)
        while position >= start and position > 0:
            entry_offset, position = index.last_below_offset(entry_offset)
        try:
            for header in self._headers(i, position):
                if header.position >= start:
                    break
                last = header.last_offset
        except CorruptDataError:
            pass
        return last

    def _walk(self, i: int, start: int, on_damage: Callable[[CorruptDataError], None] | None = None,
              after: int | None = None) -> Iterator[BatchHeader]:
        """:meth:`_headers` of segment ``i`` from byte ``start``, going on past bad framing (zeros hiding records
        too) where a lenient read does: at the next offset index entry whose batch checks out
        (:meth:`_resumption`), else the walk ends; a batch whose offset field is corrupt (:meth:`_headers`) is
        skipped so, and the batches after it are checked against the offsets before it (``after``: the last offset
        before ``start``). A strict lookup raises there (:meth:`_skip`). Each error gone past is given to
        ``on_damage`` before the walk goes on."""
        last_seen = self.bases[i] - 1 if after is None else after
        while True:
            try:
                for header in self._headers(i, start, last_seen):
                    last_seen = max(last_seen, header.last_offset)
                    yield header
                return
            except CorruptDataError as err:
                self._skip(err)
                if on_damage is not None:
                    on_damage(err)
                start = self._resumption(i, err.position, last_seen)
                if start is None:
                    return

    def _batch_sound(self, i: int, header: BatchHeader) -> bool:
        """Whether the batch of segment ``i`` under ``header`` is whole and passes its CRC (one batch read)."""
        try:
            return crc_is_valid(self._read_batch(i, header), header._replace(position=0))
        except CorruptDataError:
            return False

    def _floor_position(self, i: int, offset: int) -> int:
        """Where a walk of segment ``i`` for ``offset`` starts: its offset index's floor entry. An index can pass
        its sanity checks and still point at the wrong bytes; when the v2 batch there starts above the entry's
        offset, records from the entry's offset on would be walked past unseen, so the segment's indexes are
        rebuilt from its log (reported) and the floor taken again. (A legacy wrapper's offset is its last inner
        one, so it is not checked; old brokers wrote the append's first offset.) When what the entry points at is
        no sound batch because the log is damaged there (:meth:`_walk_to_damage`), the index is right and a
        rebuild, which ends where the damage starts, would lose the rest of the segment: the walk starts at an
        earlier entry and meets the damage, as a read does."""
        entry_offset, position = self._index(i, "offset").floor(offset)
        problem, bytes_bad = self._entry_problem(i, entry_offset, position)
        if problem is None:
            return position
        if bytes_bad:
            start = self._walk_to_damage(i, entry_offset, position)
            if start is not None:
                return start
        if self._cut_left_entries(i, "offset"):
            return self._floor_position(i, offset)
        self._rebuild(i, f"offset index entry {entry_offset} -> byte {position}: {problem}")
        return self._index(i, "offset").floor(offset)[1]

    def _cut_left_entries(self, i: int, kind: str) -> bool:
        """Whether segment ``i``'s ``.index`` (``kind`` "offset") or ``.timeindex`` ("time") file, the active
        segment's, had entries from an insane one on at or past where a follower's truncation may have cut it
        (:func:`~kafkaseg.storage.layout.truncation_bound`: the truncated generation's, left after the new appends',
        out of order or past the log), and is now taken up to it instead (loaded once, as a read takes it:
        ``FixedEntryIndex.for_reading``; no rebuild, nothing reported). The entries kept are still checked where
        they are used (:meth:`_floor_position`, :meth:`largest_timestamp`)."""
        seg = self.segments[i]
        index = self._indexes.get((i, kind))
        path, window = index_location(seg, "index" if kind == "offset" else "timeindex")
        bound = truncation_bound(self.pdir, seg.log_path, seg.base_offset)
        if not isinstance(index, ProbedIndex) or not path or bound is None:
            return False
        try:
            loaded = (OffsetIndex if kind == "offset" else TimeIndex).load(path, seg.base_offset, self.fs,
                                                                          window=window)
            checks = {} if kind == "offset" else {"log_end_offset": self.log_end_offset()}
            with SegmentReader(seg.log_path, self.fs) as reader:
                kept = loaded.for_reading(reader.size, active=True, left_from=bound[0], **checks)
        except KafkaSegError:
            return False
        self.stats.files_opened += 1
        self.stats.index_bytes += loaded.ENTRY_SIZE * len(loaded)
        if kept is None or len(kept) == len(loaded):  # (nothing usable, or sane as a whole: no cut helps)
            return False
        index.close()
        self._indexes[(i, kind)] = LoadedIndexView(kept, kind, rebuilt=False)
        return True

    def _entry_problem(self, i: int, entry_offset: int, position: int) -> tuple[str | None, bool]:
        """Why offset index entry ``(entry_offset, position)`` of segment ``i`` cannot start a walk (None when it
        can), and whether that is because no sound batch is there (rather than one starting above the entry)."""
        if position == 0:
            return None, False
        try:
            header = next(iter(self._headers(i, position)), None)
            # record bytes inside a batch can parse as a header (seven bytes into a v2 batch they read as a legacy
            # message): a batch small enough is read whole for its CRC, as planning checks its entries
            whole = header is not None and header.size <= ENTRY_CRC_MAX_BYTES
            if whole and not crc_is_valid(self._read_batch(i, header), header._replace(position=0)):
                raise CorruptBatchError("the bytes there parse as a batch header, not as a batch with a valid CRC",
                                        position=position)
        except CorruptDataError as err:  # not at a batch boundary (inside a batch), or damaged log bytes
            return f"no batch there ({err.detail})", True
        if header is None:  # what is there runs past the segment's end: no whole batch
            return "no whole batch there", True
        if header.magic < 2 or header.base_offset <= entry_offset:
            return None, False
        return f"the batch there starts at offset {header.base_offset}", False

    def _walk_to_damage(self, i: int, entry_offset: int, position: int) -> int | None:
        """Where a walk for offsets from entry ``(entry_offset, position)`` of segment ``i``, which points at no
        sound batch, starts when the log is damaged there rather than the entry wrong: the closest earlier entry
        that can start a walk (or byte 0), when the log's headers from it reach ``position`` as a batch boundary
        (the batch there fails its CRC or is unreadable) or meet bad framing (zeros hiding records too) on the way.
        None when the entry is wrong: the walk passes ``position`` inside a batch, or the log's batches end before
        it. One index interval of headers, and a batch read per earlier entry that points into the damage too."""
        index = self._index(i, "offset")
        before, start = entry_offset, position
        while start > 0:
            before, start = index.last_below_offset(before)
            if self._entry_problem(i, before, start)[0] is None:
                break
        try:
            for header in self._headers(i, start):
                if header.position == position:
                    return start
                if header.position + header.size > position:
                    return None
        except CorruptDataError:
            return start
        return None

    def _read_batch(self, i: int, header: BatchHeader) -> bytes:
        seg = self.segments[i]
        with SegmentReader(seg.log_path, self.fs) as reader:
            self.stats.files_opened += 1
            data = reader.read_at(header.position, header.size)
        self.stats.log_bytes += len(data)
        if len(data) < header.size:
            raise CorruptDataError("batch cut short", path=seg.log_path, position=header.position)
        return data

    def _records(self, i: int, header: BatchHeader):
        """(offsets, timestamps ms, key sizes, value sizes) of the records of one batch, control records included;
        timestamps are Kafka's raw longs, compared as ``FileRecords.searchForTimestamp`` compares them.

        The compiled Arrow decoder reads the batch when it can (15-20 times faster than :func:`~kafkaseg.wire.records.batch_records` on a
        1 MB batch). Its timestamp column is microseconds, so it refuses a batch holding a record stamped beyond
        +-9.2e15 ms (a producer sending nanoseconds), which Kafka stores and answers over: a batch it refuses is
        walked by :func:`batch_records`, which has no such limit and checks the batch as the decoder does, so its
        answer, or its error for a batch that is really corrupt, stands."""
        import pyarrow as pa
        import pyarrow.compute as pc

        from kafkaseg.decode import decode
        from kafkaseg.decode.api import DecodeRequest

        data = self._read_batch(i, header)
        path = self.segments[i].log_path
        request = DecodeRequest(path=path, base_position=header.position, verify_crc=self.verify_crc,
                                include_control=True, max_batch_bytes=self.max_batch_bytes, timestamp_unit="ms")
        try:
            result = decode(memoryview(data), request)
        except CorruptDataError:
            return batch_records(data, header._replace(position=0), path=path, base_position=header.position,
                                 verify_crc=self.verify_crc, max_batch_bytes=self.max_batch_bytes)
        offsets = result.columns["offset"].to_pylist()
        stamps = result.columns["timestamp"].cast(pa.int64()).to_pylist()  # milliseconds as they are
        key_sizes = pc.binary_length(result.columns["key"]).to_pylist()
        value_sizes = pc.binary_length(result.columns["value"]).to_pylist()
        return offsets, stamps, key_sizes, value_sizes

    # -- partition facts -------------------------------------------------------------------------------------
    def _bounding_checkpoint(self, name: str, what: str) -> None:
        """Raise when checkpoint ``name``, which decides ``what``, is unreadable: an answer that depends on it
        must not silently fall back to the log (the rule planning applies to strict reads)."""
        if self.checkpoints_checked:
            return
        for unreadable, why in self.pdir.unreadable_checkpoints:
            if unreadable == name:
                raise CorruptCheckpointError(f"{name} of {self.pdir.log_dir} is unreadable ({why}), so {what} of "
                                             f"{self.pdir.topic}-{self.pdir.partition} is unknown (kafkaseg offsets "
                                             "and locate: --on-corruption skip lets the log stand in for it)")

    @property
    def log_start_offset(self) -> int:
        self._bounding_checkpoint(LOG_START_OFFSET_CHECKPOINT, "the log start offset")
        start = self.pdir.log_start_offset
        return 0 if start is None else start

    def log_end_offset(self) -> int:
        """The log end offset. A lenient lookup takes a lenient read's (:meth:`_lenient_end`): damage in the active
        segment ends it where such a read's batches end, as planning does, instead of raising."""
        if self._leo is None:
            if self.lenient:
                leo = self._lenient_end().offset
            else:
                # a header walk allocates nothing from a length field: no batch size limit (kafkaseg offsets has none)
                leo = partition_log_end_offset(self.pdir, max_batch_bytes=None)
            end = self.log_start_offset if leo is None else leo
            torn = self._unacknowledged_tear()
            if torn is not None:
                end = min(end, torn[0])
            elif leo is not None and not self.lenient:
                self._check_zero_tail(leo)  # (raises each time it is asked: no log end is kept)
            self._leo = end
        return self._leo

    def lost_tail(self) -> LostTail | None:
        """What the partition's files say its log held past :meth:`log_end_offset` (:func:`~kafkaseg.storage.layout.
        lost_tail`, the reads' rule: with no high watermark to bound it, or acknowledged and flushed offsets past
        it), or None; looked for once. Not where a lenient log end left corrupt bytes out of the log (a read counts
        those as skipped corrupt data instead, as planning decides), nor, with a high watermark, where the walk to
        the log end was not clean (planning's ``leo_walk_clean``: a torn append ended it). With no segment (every
        ``.log`` file gone) the empty log's offset is its log start, as a read takes it."""
        if self._lost is False:
            leo = self.log_end_offset() if self.segments else self.log_start_offset
            self._lost = None if self._damaged_end() else lost_tail(
                self.pdir, leo, max_batch_bytes=self.max_batch_bytes, walk_clean=self._walk_clean())
        return self._lost

    def lost_at(self, offset: int) -> LostTail | None:
        """The proven or possible loss a read of ``offset`` meets, or None: at or past :meth:`log_end_offset`, the
        :meth:`lost_tail` holding it; below it (and at or above the log start), a rolled segment cut short whose
        own indexes and the recovery point prove it lost (:func:`~kafkaseg.storage.layout.rolled_cut_holding`, the
        reads' rule: a strict read raises its ``LostTailError``)."""
        leo = self.log_end_offset()
        if offset >= leo:
            tail = self.lost_tail()
            return tail if tail is not None and tail.holds(offset) else None
        if offset < self.log_start_offset:
            return None
        if offset not in self._cuts:
            self._cuts[offset] = rolled_cut_holding(self.pdir, offset,
                                                    max_batch_bytes=self.max_batch_bytes)
        return self._cuts[offset]

    def rolled_cut_below(self, offset: int | None, timestamp: int | None = None, *,
                         unflushed: bool = False) -> LostTail | None:
        """The first rolled segment cut short (:func:`~kafkaseg.storage.layout.rolled_cut_of`, the reads' rule)
        whose lost offsets lie below ``offset`` (None: anywhere) and at or above the log start, or None: offsets
        an answer found at ``offset`` by a search from the log start may have had in them. With ``timestamp`` (a
        time lookup's), a cut whose lost records all carry timestamps below it (:meth:`_cut_below_time`) cannot
        hold the answer and is passed over. About one index interval of headers per rolled segment below
        ``offset`` and the recovery point (and, with ``timestamp``, a cut segment's time index). ``unflushed``: when
        no cut is proven, the first one not proven (the recovery point not above it, or none: a warning), looked for
        in every rolled segment below ``offset``. On object storage (without ``unflushed``) the segments are checked
        at once (:func:`~kafkaseg.storage.fs.map_files`), the answer and any error the same."""
        from kafkaseg.storage import fs as _fs

        start = self.log_start_offset
        possible = None
        below = [i for i in range(len(self.segments) - 1)
                 if (offset is None or self.bases[i] < offset) and self.bases[i + 1] > start]
        ahead = None
        if not unflushed and not _fs.is_local(self.pdir.filesystem):
            # object storage: every check at once (each a .index probe and a .log read, round trips apiece), each
            # one's error kept to be raised where the loop below reaches it, as one after the other raises it
            def check(i: int):
                try:
                    return rolled_cut_of(self.pdir, i, max_batch_bytes=self.max_batch_bytes), None
                except Exception as err:  # noqa: BLE001 (raised below, in order)
                    return None, err

            ahead = _fs.map_files(check, below, [self.pdir.filesystem])
        for k, i in enumerate(below):
            if ahead is None:
                cut = rolled_cut_of(self.pdir, i, max_batch_bytes=self.max_batch_bytes,
                                    unflushed=unflushed and possible is None)
            else:
                cut, err = ahead[k]
                if err is not None:
                    raise err
            if cut is not None and cut.end_offset > start and (offset is None or cut.first_offset < offset):
                if timestamp is not None and self._cut_below_time(i, cut, timestamp):
                    continue
                if cut.proven:
                    return cut
                possible = cut
        return possible

    def _cut_below_time(self, i: int, cut: LostTail, timestamp: int) -> bool:
        """Whether segment ``i``'s own time index proves every record ``cut`` lost has a timestamp below
        ``timestamp``: an entry is (max timestamp so far, offset of the batch holding it), written when that batch
        was already in the segment, so its timestamp bounds every record at or below its offset (a segment's
        offsets are appended in order) and nothing after it. Only an entry at or past the last lost offset (within
        the segment) bounds them all: the last entry (the largest offset and timestamp), with every timestamp in
        the index below ``timestamp``. Anything less (an index cut short with its log, an entry before the last
        lost offset, or one in the next segment, which bounds none of this one's records) proves nothing: False."""
        from kafkaseg.storage.segment import load_index_files

        seg = self.segments[i]
        time_index = load_index_files(seg.base_offset, (None, None), index_location(seg, "timeindex"),
                                      self.pdir.filesystem)[1]
        if time_index is None or not len(time_index):
            return False
        last_offset = time_index.last_entry[1]
        return (cut.end_offset - 1 <= last_offset < self.bases[i + 1]
                and int(time_index.timestamps.max()) < timestamp)

    def _cut_reason(self, offset: int) -> str | None:
        """Why ``offset``, below the log end with no record, was lost (:meth:`lost_at`), or None."""
        cut = self.lost_at(offset)
        return None if cut is None else cut.summary(offset)

    def _damaged_end(self) -> bool:
        """Whether a lenient log end left corrupt bytes out of the log (a read counts them as skipped instead)."""
        return self.lenient and self._end is not None and self._end.corrupt_tail is not None

    def _walk_clean(self) -> bool:
        """Whether the walk to :meth:`log_end_offset` met no corruption or torn append (planning's
        ``leo_walk_clean``)."""
        return self._end.clean if self.lenient and self._end is not None else self._unacknowledged_tear() is None

    def flushed_past_end(self) -> int | None:
        """The recovery point, when it is above :meth:`log_end_offset` and the high watermark is not
        (:func:`~kafkaseg.storage.layout.flushed_past_end`: flushed offsets the files lost that no consumer had
        seen, a note), else None; not where :meth:`lost_tail` would say nothing for the walk's damage."""
        if not self.segments or self._damaged_end():
            return None
        return flushed_past_end(self.pdir, self.log_end_offset(), walk_clean=self._walk_clean(),
                                as_listed=ListingCheck(self.pdir).recovery_point)

    def _lenient_end(self) -> LogEnd:
        """Where a read with ``onCorruption=skip`` ends the partition: planning's own rule
        (:func:`~kafkaseg.storage.layout.find_log_end`), so a lenient lookup answers for the records such a read
        returns; the damage it stopped at is listed in ``stats.skipped``."""
        if self._end is None:
            last = len(self.segments) - 1
            self._end = find_log_end(self.pdir, lenient=True, verify_crc=self.verify_crc,
                                     max_batch_bytes=self.max_batch_bytes,
                                     index_start=lambda: self._index(last, "offset").last()[1])
            if self._end.damage is not None:
                self._skip(self._end.damage)
        return self._end

    def _check_zero_tail(self, leo: int) -> None:
        """Raise when zeros end the active segment's batches at ``leo`` and data follows them (no high watermark
        says those bytes were never acknowledged): a zeroed header hiding records, not a preallocated tail.
        Planning's rule for strict reads; an answer must not silently stop short of records a consumer was told
        exist. Zeros to the end of the file are a preallocated tail, where the log ends, also below a high
        watermark (``segment.zeros_hide_records``). Nothing to check (no I/O) when the high watermark is at or
        below ``leo``."""
        hw = self.pdir.high_watermark
        if (hw is not None and hw <= leo) or not self.segments:
            return
        from kafkaseg.storage.segment import zero_filled_tail, zeros_hide_records

        last = len(self.segments) - 1
        _, position = self._index(last, "offset").last()
        found = zero_filled_tail(self.segments[last], filesystem=self.fs, max_batch_bytes=None,
                                 start_position=position)
        what = None if found is None else zeros_hide_records(found[1])
        if what is not None:
            raise CorruptBatchError(f"zeros in the active segment end its readable batches at offset {leo}, but "
                                    f"{what}", path=self.segments[last].log_path, position=found[0])

    def high_watermark(self) -> int:
        """The checkpointed high watermark inside [log start, log end], as UnifiedLog.updateHighWatermark keeps it
        (the log end offset when none; an unreadable checkpoint raises)."""
        self._bounding_checkpoint(REPLICATION_OFFSET_CHECKPOINT, "the high watermark")
        hw = self.pdir.high_watermark
        leo = self.log_end_offset()
        if hw is None:
            return leo
        # below the log start (at least the first segment's base, known without log-start-offset-checkpoint)
        if hw < (self.pdir.log_start_offset or 0):
            return min(self.log_start_offset, leo)
        return min(hw, leo)

    def last_fetchable_offset(self) -> int:
        """High watermark (read_uncommitted) or last stable offset (read_committed)."""
        if self._fetchable is None:
            if self.isolation == "read_committed":
                lso = last_stable_offset(self.pdir, max_batch_bytes=None)
                self._fetchable = self.high_watermark() if lso is None else min(lso, self.high_watermark())
            else:
                self._fetchable = self.high_watermark()
        return self._fetchable

    def largest_timestamp(self, i: int) -> tuple[int, int]:
        """(maxTimestampSoFar, its offset) of segment ``i``: the time index's last entry, and for the active (last)
        segment also the batch headers after its last offset-index entry, which the broker holds in memory only."""
        if i not in self._largest:
            self.stats.segments_probed += 1
            torn = self._tear_in(i)
            time_index = self._index(i, "time")
            if torn is None:
                ts, offset = time_index.last()
            else:  # entries for the torn batch (a rebuild, or a copy taken mid-write) describe no record
                ts, offset = time_index.last_below_offset(torn[0])
            last = i == len(self.segments) - 1
            # past the recovery point a crash may have cut the time index short (planning's largest_timestamp)
            unrecovered = not last and self.pdir.past_recovery_point(i) and not time_index.rebuilt
            if last or unrecovered:
                offset_index = self._index(i, "offset")
                start = offset_index.last() if torn is None else offset_index.last_below_offset(torn[0])
                if ts >= 0:  # the batches from the one holding the entry's offset on may be newer than it
                    start = min(start, offset_index.floor(offset), key=lambda each: each[1])
                elif unrecovered:
                    start = (self.bases[i], 0)
                left, position = self._left_entries(i, (ts, offset), start) if last else (None, start[1])

                def walk(position: int):
                    try:
                        yield from self._headers(i, position)
                    except KafkaSegError:
                        pass

                ts, offset = largest_timestamp_walked((ts, offset), walk, position, left)
            self._largest[i] = (ts, offset)
        return self._largest[i]

    def _left_entries(self, i: int, entry: tuple[int, int], start: tuple[int, int]
                      ) -> tuple[LeftEntries | None, int]:
        """:func:`~kafkaseg.storage.indexes.left_entries` of the active segment ``i`` (None for indexes rebuilt from
        the log, which hold no entry a truncation left), its start checked by :meth:`_entry_problem`."""
        time_index, offset_index = self._index(i, "time"), self._index(i, "offset")
        if time_index.rebuilt:
            return None, start[1]
        return left_entries(self.pdir, self.segments[i], entry, start, time_before=time_index.last_below_offset,
                            offset_before=lambda bound: offset_index.last_below_offset(bound)[1],
                            start_problem=lambda offset, position: self._entry_problem(i, offset, position)[0])

    def segment_largest_timestamp(self, i: int) -> int:
        """``LogSegment.largestTimestamp`` of segment ``i``: maxTimestampSoFar, or the file's mtime when that is -1
        (no timestamped batch: magic 0, or empty), which retention, ListOffsets and the cleaner's
        ``min.compaction.lag.ms`` all go by."""
        ts = self.largest_timestamp(i)[0]
        return ts if ts >= 0 else int(self.segments[i].mtime_ms)

    def _first_segment_reaching(self, timestamp: int, exact: bool, lo: int = 0, hi: int | None = None) -> int | None:
        """The first segment of ``[lo, hi)`` whose largest timestamp reaches ``timestamp``: the broker's linear scan,
        or (not ``exact``) a binary search, linear after all when the timestamps it probed are out of order."""
        n = len(self.segments) if hi is None else hi
        if lo >= n:
            return None
        if not exact:
            probes: dict[int, int] = {}
            first, end = lo, n  # first i with largest(i) >= timestamp, assuming non-decreasing
            while first < end:
                mid = (first + end) // 2
                probes[mid] = self.segment_largest_timestamp(mid)
                if probes[mid] >= timestamp:
                    end = mid
                else:
                    first = mid + 1
            seen = [probes[k] for k in sorted(probes)]
            # a .timeindex that is another segment's shows as a segment not above the one before it: looked for
            # (_out_of_order) next to the answer only, where it would move it; one found rebuilt, the scan decides
            foreign = any([self._out_of_order(k) for k in (first - 1, first) if lo < k < n])
            if not foreign and all(a <= b for a, b in zip(seen, seen[1:])):
                if first < n:
                    return first
                return None
            self.stats.fell_back_to_linear = True
        i = lo
        while i < n:
            if self._out_of_order(i):  # a time index was another segment's: look again from the first
                i = lo
                continue
            if self.segment_largest_timestamp(i) >= timestamp:
                return i
            i += 1
        return None

    @property
    def _copies(self) -> int:
        """How many of the segments, from the first, are tiered-storage copies (a log dir read with its remote
        copies: those below its first local segment; or copies alone)."""
        count = 0
        for segment in self.segments:
            if segment.tiered is None:
                break
            count += 1
        return count

    # -- ListOffsets -------------------------------------------------------------------------------------------
    def list_offset(self, spec: int, *, exact: bool = True) -> OffsetAnswer:
        """The broker's ListOffsets answer for ``spec`` (see the module doc)."""
        topic, partition = self.pdir.topic, self.pdir.partition
        copies = self._copies
        if spec == EARLIEST_LOCAL and copies:  # the local log starts after the tiered-storage copies
            if copies == len(self.segments):
                return OffsetAnswer(topic, partition, spec, None, reason="tiered-storage copies only: no local log")
            start = self.segments[copies].base_offset
            return OffsetAnswer(topic, partition, spec, start, leader_epoch=self.pdir.leader_epoch_at(start))
        if spec in (LATEST_TIERED, EARLIEST_PENDING_UPLOAD) and copies:
            # RemoteLogManager's highest offset copied to remote storage (of every copy: a log dir extended with
            # copies takes only those below its first segment), or the next one still to copy
            last = (self.pdir.remote_below or self.pdir).segments[-1]
            if last.remote_end is None:
                return OffsetAnswer(topic, partition, spec, None,
                                    reason="the last tiered-storage copy records no end offset (LocalTieredStorage)")
            end = last.remote_end if spec == LATEST_TIERED else max(last.remote_end + 1, self.log_start_offset)
            return OffsetAnswer(topic, partition, spec, end, leader_epoch=self.pdir.leader_epoch_at(end))
        if spec in (EARLIEST, EARLIEST_LOCAL):
            # A log-start checkpoint below the first segment (PartitionDir.below_local_log) is a tiered topic's
            # start, or one older than a retention deletion: the files cannot tell, so both answer the first
            # offset they hold, and the CLI notes the other possibility.
            # UnifiedLog.fetchOffsetByTimestamp answers the earliest cache entry's epoch when it starts at or below
            # the log start (the cache is truncated there), and the latest epoch for LATEST (the cache is truncated
            # at the log end on load, so an entry starting past it is stale)
            start = self.log_start_offset
            if spec == EARLIEST:
                # except where __remote_log_metadata tells: live copies it lists missing below the files hold the
                # broker's log start, their first offset (remote retention moved it there, or it is the
                # checkpoint's: PartitionDir.live_copies_lost starts at neither below), which no file here holds
                start = min([start] + [first for _, first, _ in self.pdir.live_copies_lost])
            return OffsetAnswer(topic, partition, spec, start, leader_epoch=self.pdir.leader_epoch_at(start))
        if spec == LATEST:
            return OffsetAnswer(topic, partition, spec, self.last_fetchable_offset(),
                                leader_epoch=self.pdir.leader_epoch_at(self.log_end_offset()))
        if spec in (LATEST_TIERED, EARLIEST_PENDING_UPLOAD):
            return OffsetAnswer(topic, partition, spec, None, reason="no tiered storage in a local log dir")
        if not self.segments:
            return OffsetAnswer(topic, partition, spec, None, reason="partition has no segments")
        if spec == MAX_TIMESTAMP:
            found = self._max_timestamp()
        elif spec >= 0:
            found = self._offset_for_timestamp(spec, exact)
        else:
            raise InvalidOptionError(f"time {spec} is not a timestamp (>= 0) or one of {_SPECS_TEXT}")
        if found is None:
            if spec == MAX_TIMESTAMP:
                reason = "no record carries the partition's largest timestamp"
            else:
                reason = "no record with a timestamp at or after it"
            note = self.search_note
            return OffsetAnswer(topic, partition, spec, None, reason=reason + (f" ({note})" if note else ""))
        offset, timestamp, epoch = found
        fetchable = self.last_fetchable_offset()
        if offset >= fetchable:
            bound = "last stable offset" if self.isolation == "read_committed" else "high watermark"
            return OffsetAnswer(topic, partition, spec, None, timestamp, epoch,
                                reason=f"offset {offset} is at or past the last fetchable offset {fetchable} ({bound})")
        return OffsetAnswer(topic, partition, spec, offset, timestamp, epoch)

    def offset_for_timestamp(self, timestamp: int, *, exact: bool = True) -> int | None:
        """The first offset at or after the log start offset whose record timestamp >= ``timestamp`` (ms), with
        no cap at the last fetchable offset (callers with their own upper bound, such as planning, apply it)."""
        found = self._offset_for_timestamp(timestamp, exact) if self.segments else None
        return None if found is None else found[0]

    def _answer_from_log(self, search):
        """``search()`` (returning ``(answer, segment searched)``), again after rebuilding that segment's indexes
        when it found nothing there and the segment's time index proves stale: its last entry is for an offset at or
        past where the segment's batches end (a rolled segment cut short within its last index interval; checking
        every rolled segment up front would walk one index interval of each)."""
        while True:
            rebuilt = {path for path, _ in self.stats.rebuilt_indexes} | self._cut_time
            answer, i = search()
            if answer is None and ({path for path, _ in self.stats.rebuilt_indexes} | self._cut_time) - rebuilt:
                # an index the search used proved stale midway and was rebuilt: search again, once per segment (a
                # rebuilt index can look stale again, its entries past where the walks end the segment: a batch
                # past the next segment's base, damaged; searching again would rebuild it again, forever)
                continue
            if answer is not None or i is None or i in self._time_checked:
                return answer
            self._time_checked.add(i)
            stale = self._time_entry_past_end(i, self._index(i, "time"), from_headers=True)
            if stale is not None:
                self._rebuild_stale(i, stale)
            elif not self._judge_time_index(i):  # nor another segment's, claiming timestamps this one lacks
                return answer

    def _offset_for_timestamp(self, timestamp: int, exact: bool) -> tuple[int, int, int | None] | None:
        """:meth:`_search_timestamp` (from the log, :meth:`_answer_from_log`). A segment whose log runs past the
        next segment's base (a ``.log`` copied over another, or in as a new segment) has a largest timestamp, from
        its time index or one rebuilt from that log, that may be of batches past the base, which are the next
        segments' records: when the search finds nothing in it, it goes on from the segment after it (a broker
        would answer from the batches past the base, in the same file; reads take those offsets from the next
        segment)."""
        lo = 0
        while True:
            searched: list = [None]

            def search():
                answer, i = self._search_timestamp(timestamp, exact, lo)
                searched[0] = i
                return answer, i

            answer = self._answer_from_log(search)
            i = searched[0]
            if answer is not None or i is None or i + 1 >= len(self.segments) or self._copies:
                return answer
            if self._index(i, "time").last()[1] < self.bases[i + 1]:
                return answer
            lo = i + 1

    def _search_timestamp(self, timestamp: int, exact: bool, lo: int = 0):
        """The search of ``UnifiedLog.fetchOffsetByTimestamp``: the first segment whose largest timestamp reaches
        ``timestamp``, and in it the first record at or after the log start with a timestamp at or after it (none
        when that segment has none). A tiered topic's (copies below the local log) as the broker searches remote
        storage (``RemoteLogManager.findOffsetByTimestamp``, core/src/main/java/kafka/log/remote/): the first copy
        whose largest timestamp reaches it and that ends at or after the log start; none there, the local log
        from its own first offset (``RemoteLogOffsetReader``'s fallback, ``searchOffsetInLocalLog`` with the
        local log start), never the copies after it."""
        self.search_note = None
        start_offset = self.log_start_offset
        copies, n = self._copies, len(self.segments)
        if not copies:  # (from segment lo: _offset_for_timestamp)
            i = self._first_segment_reaching(timestamp, exact, lo)
            return (None, None) if i is None else self._search_segment(i, timestamp, start_offset, n)
        searched = None
        for i in range(copies):
            end = self.bases[i + 1] if i + 1 < n else self.log_end_offset()
            if self.segment_largest_timestamp(i) >= timestamp and end > start_offset:
                # (a lenient search that skipped corruption in the copy goes on in the copies after it, as a
                # lenient read sees the records; the broker has no such path: it fails on corruption)
                found, searched = self._search_segment(i, timestamp, start_offset, copies)
                if found is not None:
                    return found, searched
                break
        # the local log, from its first offset; with copies alone (no log dir given), the copies after the one
        # searched stand in for the local log, which holds the latest of them
        lo = copies if copies < n else (searched + 1 if searched is not None else 0)
        i = self._first_segment_reaching(timestamp, exact, lo)
        if i is None:
            return None, searched
        return self._search_segment(i, timestamp, max(start_offset, self.bases[lo]) if lo < n else start_offset, n)

    def _first_batch_stamped(self, i: int) -> bool:
        """Whether segment ``i``'s first batch carries a timestamp (one header read; False when it cannot be
        read): a segment whose largest timestamp is -1 then owes it to its ``.timeindex`` having no entry (written
        before Kafka had time indexes, or emptied), not to its batches."""
        try:
            header = next(iter(self._headers(i, 0)), None)
        except KafkaSegError:
            return False
        return header is not None and header.max_timestamp >= 0

    def _search_segment(self, i: int, timestamp: int, start_offset: int, last: int):
        """``LogSegment.findOffsetByTimestamp`` on segment ``i``: ``((offset, timestamp, epoch), i)``, or
        ``(None, i)``; a lenient search that skipped corruption in it goes on in the segments after it, up to
        ``last`` (exclusive), as a lenient read would see the records."""
        unstamped = self.largest_timestamp(i)[0] < 0
        if unstamped:
            # UnifiedLog commits to this segment: with no timestamped batch (empty, or magic 0), or a time index
            # with no entry, its largest timestamp is the file's mtime, so a time past the segments before it ends
            # here with no offset
            why = ("whose .timeindex has no entry although its batches carry timestamps (a broker goes by the time "
                   "index)" if self._first_batch_stamped(i) else "which has no timestamped batch")
            self.search_note = (f"the search stopped at {self.segments[i].log_path}, {why}: as on a broker, its "
                                "file's mtime counts as its largest timestamp and later segments are not searched")
        entry, unchecked = self._search_start(i, timestamp, start_offset)
        while True:
            time_offset = entry[1]
            skipped: list = []  # corruption a lenient search went past in segment i (its match may be lost there)
            for header in self._walk_from(i, max(time_offset, start_offset), skipped.append):  # bad framing: on where a lenient read resumes
                if unchecked and header.last_offset >= time_offset:
                    unchecked = False
                    problem = time_entry_problem(header, *entry)
                    if problem is not None and not skipped:
                        self._distrust_time_index(i, entry, problem)
                        return None, i  # searched again (_answer_from_log): the segment may no longer be the one
                if header.max_timestamp < timestamp:
                    if unstamped and self.lenient and self._rebuilt(i):  # (a batch a lenient read skips is no
                        # reason to stop here: a header zeroed from byte 15 reads as a magic 0 message, no timestamp,
                        # its CRC wrong; only where the segment's own index was rebuilt: a sound magic 0 log's is empty)
                        try:
                            self._records(i, header)
                        except CorruptDataError as err:
                            self._skip(err)
                            skipped.append(err)
                    continue
                if unchecked and not skipped:
                    # a batch before the entry's reaches the time: the entry (the max timestamp so far, first reached
                    # in its batch, at most the time) cannot be the index's (a damaged middle entry's offset)
                    self._distrust_time_index(i, entry, (
                        f"the batch {header.base_offset}..{header.last_offset} before offset {time_offset} has max "
                        f"timestamp {header.max_timestamp}, at or above {timestamp}"))
                    return None, i
                try:
                    offsets, stamps, _, _ = self._records(i, header)
                except CorruptDataError as err:
                    self._skip(err)  # a lenient read skips the batch too
                    skipped.append(err)
                    continue
                for offset, stamp in zip(offsets, stamps):
                    if stamp is not None and stamp >= timestamp and offset >= start_offset:
                        epoch = header.partition_leader_epoch
                        return (offset, stamp, (epoch if epoch >= 0 else None)), i
            # no match in segment i: Kafka's answer is none, unless what a lenient search skipped there held it
            # (then the first record at or after the timestamp is in a later segment, as the lenient read sees it)
            # ... or (lenient) it ended at a cut: a rolled segment cut short (inside its first batch or emptied too,
            # its time index rebuilt empty: not a stop at its mtime) holds none of its offsets past the cut, which a
            # lenient read goes past to the next segment's (lost_tails, unreadable_tails, problems); a strict one
            # answers none there, as a broker's search that stops in the segment (offsets says the cut)
            if (not skipped and not (self.lenient and i in self._rolled_cuts)) or i + 1 >= last:
                return None, i
            self.search_note = None
            # on to the next segment whose largest timestamp reaches the time (the one after may hold only older
            # records: a search that stopped there answered none where later segments hold the answer)
            reaching = self._first_segment_reaching(timestamp, True, i + 1, last)
            if reaching is None:
                return None, i
            i = reaching  # (its own floor entry, checked as the first segment's was)
            unstamped = self.largest_timestamp(i)[0] < 0
            entry, unchecked = self._search_start(i, timestamp, start_offset)

    def _search_start(self, i: int, timestamp: int, start_offset: int) -> tuple[tuple[int, int], bool]:
        """Where :meth:`_search_segment` starts in segment ``i``: its time index's floor entry for ``timestamp``
        (below a torn unacknowledged batch, :meth:`_tear_in`, whose entries describe no record), and whether that
        entry is to be checked. The batch holding the entry's offset is walked to anyway: it must have the entry's
        timestamp, or the .timeindex is another segment's (:meth:`_distrust_time_index`); from a rebuilt index, or
        no entry ((-1, base): a negative timestamp other than that is a damaged entry, Kafka appends only above
        -1), nothing to check."""
        time_index = self._index(i, "time")
        entry = time_index.floor(timestamp)
        torn = self._tear_in(i)
        if torn is not None and entry[1] >= torn[0]:
            entry = time_index.last_below_offset(torn[0])
        return entry, entry[0] != -1 and entry[1] >= start_offset and not time_index.rebuilt

    def _max_timestamp(self) -> tuple[int, int, int | None] | None:
        return self._answer_from_log(self._search_max_timestamp)

    def _search_max_timestamp(self):
        self.search_note = None
        best, best_i = None, None
        # Kafka: logSegments.maxBy(_.maxTimestampSoFar), first on ties; the local log's segments only, for a tiered
        # topic too (its broker does not search remote storage for -3; a copy's record could be below the log start)
        copies = self._copies
        first = copies if copies < len(self.segments) else 0
        rebuilt = False
        for i in range(first + 1, len(self.segments)):  # time indexes that are other segments' (_out_of_order)
            rebuilt = self._out_of_order(i) or rebuilt
        if rebuilt:
            return None, None  # searched again (_answer_from_log), over the rebuilt indexes
        for i in range(first, len(self.segments)):
            ts, _ = self.largest_timestamp(i)
            if best is None or ts > best:
                best, best_i = ts, i
        ts, offset = self.largest_timestamp(best_i)
        for header in self._walk_from(best_i, offset):
            if header.max_timestamp != ts:
                continue
            if header.magic == 0:
                self.search_note = "no batch has a timestamp: message format v0 has none"
                return None, None
            offsets, stamps, _, _ = self._records(best_i, header)
            for record_offset, stamp in zip(offsets, stamps):
                if stamp == ts:
                    epoch = header.partition_leader_epoch
                    return (record_offset, ts, (epoch if epoch >= 0 else None)), best_i
            # the batch is there, its records are not (emptied by compaction): Kafka's answer
            self.search_note = (f"the batch at byte {header.position} of {self.segments[best_i].log_path} has max "
                                f"timestamp {ts} but no record with it left (compaction removed it)")
            return None, None
        self.search_note = ("no batch has a timestamp" if ts < 0 else
                            f"no batch of {self.segments[best_i].log_path} has the largest timestamp {ts} its time "
                            "index records")
        return None, best_i

    # -- locate -------------------------------------------------------------------------------------------------
    def last_batch_before(self, offset: int) -> BatchHeader | None:
        """The header of the last batch that starts below ``offset`` (whose records a reader that stopped at
        ``offset`` read, all or some), None when no batch does. Headers only: the offset index's floor, then a walk
        of at most an index interval, in earlier segments when the one below ``offset`` holds no batch there (a
        compacted or empty segment)."""
        i = bisect.bisect_left(self.bases, offset) - 1
        while i >= 0:
            found = None
            for header in self._headers(i, self._floor_position(i, offset - 1)):
                if header.base_offset >= offset:
                    break
                found = header
            if found is not None:
                return found
            i -= 1
        return None

    def _past_end_reason(self, offset: int, leo: int) -> str:
        """Why ``offset``, at or past the log end offset ``leo``, has no record: past the log, or (a lenient lookup
        whose log end damage in the active segment set) unreadable when records past the damage may hold it, or
        lost (or possibly lost) with the active segment's tail (:meth:`lost_tail`)."""
        end = self._end if self.lenient else None
        damage = None if end is None else end.damage
        hw = self.pdir.high_watermark
        if damage is None or end.readable_position is None or (hw is not None and offset >= max(hw, leo)):
            tail = self.lost_tail()
            if tail is not None and tail.holds(offset):
                return tail.summary(offset)
            return f"offset {offset} is at or past the log end offset {leo}"
        span = f"offsets {leo}..{hw - 1}" if hw is not None and hw > leo else f"offsets from {leo} on"
        return (f"offset {offset} is unreadable: {span} are lost to damage ({damage}; the active segment's readable "
                f"batches end there, and a read with onCorruption=skip ends the log at offset {leo}, `kafkaseg verify` "
                "lists the range); no readable record follows")

    def epoch_mark(self, offset: int) -> tuple[int, int] | None:
        """``(epoch, end)``: the leader epoch stamped on the last batch below ``offset`` and the offset it ends at
        (``offset``, or less below a compacted gap), as Kafka's consumer keeps its position's epoch (KIP-320;
        every replica holds that batch alike). None for a legacy batch, one without an epoch, or none."""
        return epoch_mark_of(self.last_batch_before(offset), offset)

    def locate(self, offset: int) -> RecordLocation:
        """The segment, batch and record holding ``offset`` (see :class:`RecordLocation`)."""
        topic, partition = self.pdir.topic, self.pdir.partition
        # an offset only a live tiered-storage copy __remote_log_metadata lists held, missing from the copies given
        # (ListOffsets' earliest may be one: the broker's log start), is lost with it: no file here holds it
        gone = next((f"offset {offset} is in live tiered-storage copy {segment_id} (offsets {first}-{end - 1}), "
                     "which __remote_log_metadata lists and is missing from the copies given: lost with it"
                     for segment_id, first, end in self.pdir.live_copies_lost if first <= offset < end), None)
        if not self.segments:
            tail = None if gone else self.lost_tail()
            reason = gone or (tail.summary(offset) if tail is not None and tail.holds(offset)
                              else "partition has no segments")
            return RecordLocation(topic, partition, offset, False, reason=reason)
        leo = self.log_end_offset()
        if offset >= leo:
            return RecordLocation(topic, partition, offset, False, reason=gone or self._past_end_reason(offset, leo))
        below_start = offset < self.log_start_offset
        i = max(0, bisect.bisect_right(self.bases, offset) - 1)
        wanted = offset
        lost = _LostRange(self)

        def damaged(err: CorruptDataError) -> None:
            if self._holds_another_segments(i, err):
                raise _AnotherSegments  # (its offsets are lost with the file, as a read says: no damage gone past)
            lost.damaged(err)

        while i < len(self.segments):
            try:
                found = self._locate_in(i, offset, wanted, lost, damaged, gone, below_start)
            except _AnotherSegments:
                found = None
                self.stats.skipped[:] = [e for e in self.stats.skipped if e[0] != self.segments[i].log_path]
            except CorruptDataError as err:
                if not self._holds_another_segments(i, err):
                    raise
                found = None
            if found is not None:
                return found
            i += 1
            if i < len(self.segments):
                wanted = max(wanted, self.bases[i])
        return RecordLocation(topic, partition, offset, False, reason=gone or lost.reason(offset, None, None) or
                              "no record at or after this offset")

    def _holds_another_segments(self, i: int, err: CorruptDataError) -> bool:
        """Whether ``err``, met walking segment ``i``, is in a rolled segment's file that holds another segment's
        batches while its own indexes name offsets of its range (:func:`~kafkaseg.storage.foreign_log.
        outside_batches`, :func:`~kafkaseg.storage.layout.foreign_log_cut`, proven lost or not: the reads' rule,
        ``scan._SliceDecoder.foreign_below``): its offsets are lost with the file (:meth:`lost_at` says so), and its
        batches, an earlier segment's, which go back below its base, are no damage a lenient read goes past.
        Looked for once per segment, on the damage path only."""
        from kafkaseg.storage.foreign_log import outside_batches
        from kafkaseg.storage.layout import foreign_log_cut

        if err.path != self.segments[i].log_path or i + 1 >= len(self.segments):
            return False
        if i not in self._foreign:
            outside = outside_batches(self.pdir, i, self.max_batch_bytes)
            self._foreign[i] = (outside is not None and outside.held
                                and foreign_log_cut(self.pdir, i, outside, unflushed=True) is not None)
        return self._foreign[i]

    def _locate_in(self, i: int, offset: int, wanted: int, lost: "_LostRange", damaged, gone: str | None,
                   below_start: bool) -> RecordLocation | None:
        """:meth:`locate`'s walk of segment ``i`` for the first record at or after ``wanted``: its location, or None
        when the segment holds none."""
        topic, partition = self.pdir.topic, self.pdir.partition
        for header in self._walk_from(i, wanted, damaged):
            if header.last_offset < wanted:
                lost.passed(i, header)
                continue
            try:
                offsets, stamps, keys, values = self._records(i, header)
            except CorruptDataError as err:
                self._skip(err)  # a lenient read skips the batch
                lost.damaged(err)
                continue
            for n, (record_offset, stamp) in enumerate(zip(offsets, stamps)):
                if record_offset >= wanted:
                    exact = record_offset == offset
                    reason = None
                    if gone is not None:
                        reason, exact = f"{gone}; the next record is at {record_offset}", False
                    elif below_start:
                        reason = f"offset {offset} is below the log start offset {self.log_start_offset}"
                    elif not exact:
                        reason = lost.reason(offset, header, record_offset) or self._cut_reason(offset) or (
                            f"offset {offset} is not in the log (removed by compaction, a gap between "
                            "segments, or lost: a segment cut short or missing, which `kafkaseg verify` "
                            f"lists as unreadable offsets); the next record is at {record_offset}")
                    return RecordLocation(topic, partition, offset, exact and not below_start,
                                          self.segments[i].log_path, header, record_offset, stamp, n, keys[n],
                                          values[n], reason)
        return None


class _AnotherSegments(Exception):
    """A walk of :meth:`PartitionLookup.locate` met a file holding another segment's batches
    (:meth:`PartitionLookup._holds_another_segments`)."""


class _LostRange:
    """What a lenient :meth:`PartitionLookup.locate` knows of the offsets lost to the damage it went past: the
    first damage since the last readable batch, and where the readable offsets before it end. An offset between
    them and the next readable batch is unreadable, the range being the one ``kafkaseg verify`` lists: from the
    last readable batch before the damage to the first after it (the batches walked past, headers only, are read
    for their CRCs once damage is met, from the last back)."""

    def __init__(self, lookup: PartitionLookup):
        self.lookup = lookup
        self.walked: list[tuple[int, BatchHeader]] = []  # batches passed (headers only) since the last damage
        self.damage: CorruptDataError | None = None
        self.unsound: tuple[str, BatchHeader] | None = None  # the first batch before it found failing its CRC
        self.lost_from: int | None = None

    def passed(self, i: int, header: BatchHeader) -> None:
        if self.damage is not None:  # a batch after the damage, below the offset looked for: records resume there
            self.damage = None
            self.walked.clear()
        self.walked.append((i, header))
        del self.walked[:-64]

    def damaged(self, err: CorruptDataError) -> None:
        """Damage the walk went past after the batches :meth:`passed` (only the first since them counts)."""
        if self.damage is not None:
            return
        self.damage, self.unsound, self.lost_from = err, None, None
        while self.walked:  # the last readable batch before the damage: one whose CRC checks out
            i, header = self.walked.pop()
            if self.lookup._batch_sound(i, header):
                self.lost_from = header.last_offset + 1
                return
            self.unsound = (self.lookup.segments[i].log_path, header)

    def reason(self, offset: int, header: BatchHeader | None, record_offset: int | None) -> str | None:
        """Why ``offset`` has no record when it lies in offsets lost to damage, the first readable batch after
        them being ``header`` (None when the log has none), or None."""
        err = self.damage
        if err is None or (self.lost_from is not None and offset < self.lost_from):
            return None
        if header is not None and offset >= header.base_offset:
            return None
        first, last = self.lost_from, None if header is None else header.base_offset - 1
        span = (f"offsets {first}..{last}" if first is not None and last is not None else
                f"offsets up to {last}" if last is not None else
                f"offsets from {first} on" if first is not None else "the offsets after it")
        where = f"{err}"
        if self.unsound is not None:
            path, bad = self.unsound
            where = f"a batch failing its CRC at {path} @ byte {bad.position}; then {err}"
        after = (f"the next readable record is at {record_offset}" if record_offset is not None else
                 "no readable record follows")
        return (f"offset {offset} is unreadable: {span} are lost to damage ({where}; a read with "
                f"onCorruption=skip leaves them out, `kafkaseg verify` lists the range); {after}")


# -- conveniences -------------------------------------------------------------------------------------------------

def list_offset(partition_dir: PartitionDir, spec: int | str, *, isolation: str = "read_uncommitted",
                exact: bool = True) -> OffsetAnswer:
    """One ListOffsets answer for one partition (``spec`` as :func:`parse_time_spec` takes it)."""
    with PartitionLookup(partition_dir, isolation=isolation) as lookup:
        return lookup.list_offset(parse_time_spec(spec), exact=exact)


def locate_offset(partition_dir: PartitionDir, offset: int) -> RecordLocation:
    """Where ``offset`` lives in ``partition_dir``."""
    with PartitionLookup(partition_dir) as lookup:
        return lookup.locate(offset)


def batch_epoch_mark(partition_dir: PartitionDir, offset: int) -> tuple[int, int] | None:
    """:meth:`PartitionLookup.epoch_mark` of ``offset`` (headers only, no checkpoint consulted), None as well when
    no batch there can be read: what a reader records with its position, to check the log against later (KIP-320),
    and goes on without."""
    try:
        with PartitionLookup(partition_dir, checkpoints_checked=True) as lookup:
            return lookup.epoch_mark(offset)
    except KafkaSegError:
        return None


def locate_time(partition_dir: PartitionDir, spec: int | str, *, isolation: str = "read_uncommitted"
                ) -> tuple[OffsetAnswer, RecordLocation | None]:
    """The ListOffsets answer for ``spec`` and where that offset lives (None when there is no offset)."""
    with PartitionLookup(partition_dir, isolation=isolation) as lookup:
        answer = lookup.list_offset(parse_time_spec(spec))
        if answer.offset is None:
            return answer, None
        return answer, lookup.locate(answer.offset)


# -- several copies: a lookup falls back as a strict read does ------------------------------------------------------

#: :func:`from_other_copies`' ``rests_on`` ends that are the chosen copy's: its last fetchable offset (what latest and
#: a time's "no offset" are bounded by), and its log end (what max-timestamp and locate's "no record" search to)
CHOSEN_FETCHABLE = "the chosen copy's last fetchable offset"
CHOSEN_END = "the chosen copy's log end"


def other_copies(choice) -> tuple[PartitionDir, ...]:
    """The copies of ``choice`` (a :class:`~kafkaseg.storage.layout.ReplicaChoice`) a strict lookup on the one
    chosen falls back to, in the order given: every other candidate, the other log dirs' copies of the partition
    and its tiered-storage copies, as a strict read falls back to them (``SegmentSlice.other_copies``, which
    :func:`kafkaseg.planning.plan_scan` sets by :func:`copies_beside`). A tiered-storage copy holds the same offsets
    as the log dir's rolled segments it was uploaded from (KIP-405 copies whole rolled segments, same base offsets,
    and a tiered topic is never compacted), which stay in the log dir until local retention deletes them; whether a
    copy holds what an answer rests on is :func:`from_other_copies`' check, as :func:`kafkaseg.planning.
    plan_again_by_offset` checks it for a read."""
    return copies_beside(choice.candidates, choice.chosen.path)


def copies_beside(candidates, chosen: str) -> tuple[PartitionDir, ...]:
    """:func:`other_copies` of a replica choice given as its ``candidates`` and the chosen copy's path ``chosen`` (as
    a plan report's ``replicas`` entry lists it): the one rule for which copies a strict read and a strict lookup
    fall back to."""
    return tuple(c for c in candidates if c.path != chosen)


def list_offset_rests_on(chosen: PartitionDir, spec: int, answer: OffsetAnswer) -> tuple[int, int | str]:
    """``[first, end)``: the offsets ``answer`` (to ListOffsets ``spec``) rests on, which another copy must hold to
    stand in for ``chosen`` (:func:`from_other_copies`): from the chosen copy's log start to the record answered, or
    when there is none (or for latest) to the chosen copy's last fetchable offset; max-timestamp, the whole log."""
    start = chosen.log_start_offset or 0
    if spec == MAX_TIMESTAMP or spec in (LATEST_TIERED, EARLIEST_PENDING_UPLOAD):
        return start, CHOSEN_END
    if spec == LATEST or answer.offset is None:
        return start, CHOSEN_FETCHABLE
    return start, max(answer.offset + 1, start)


def locate_rests_on(chosen: PartitionDir, offset: int, location: RecordLocation) -> tuple[int, int | str]:
    """``[first, end)``: the offsets ``location`` (of ``offset``) rests on (:func:`list_offset_rests_on`): from
    ``offset`` (the log start when below it) to the record found, or to the chosen copy's log end."""
    first = max(offset, chosen.log_start_offset or 0)
    if location.record_offset is None:
        return first, CHOSEN_END
    return first, max(location.record_offset + 1, first)


def widest(one: tuple[int, int | str], other: tuple[int, int | str]) -> tuple[int, int | str]:
    """The offsets two answers rest on together (``rests_on`` ranges): from the lower start to the further end (the
    chosen copy's log end past its last fetchable offset, past any offset)."""
    rank = {CHOSEN_END: 2, CHOSEN_FETCHABLE: 1}
    ends = sorted((one[1], other[1]), key=lambda end: (rank.get(end, 0), end if isinstance(end, int) else 0))
    return min(one[0], other[0]), ends[-1]


def _chosen_ends(chosen: PartitionDir, isolation: str) -> dict[str, int | None]:
    """The chosen copy's ends :data:`CHOSEN_FETCHABLE` and :data:`CHOSEN_END` (None where its damage hides them)."""
    ends: dict[str, int | None] = {CHOSEN_FETCHABLE: None, CHOSEN_END: None}
    with PartitionLookup(chosen, isolation=isolation, checkpoints_checked=True) as lookup:
        try:
            ends[CHOSEN_END] = lookup.log_end_offset()
        except KafkaSegError:
            pass
        try:
            ends[CHOSEN_FETCHABLE] = lookup.last_fetchable_offset()
        except KafkaSegError:
            if chosen.high_watermark is not None and ends[CHOSEN_END] is not None:
                ends[CHOSEN_FETCHABLE] = min(chosen.high_watermark, ends[CHOSEN_END])
    return ends


def standing_in(copy: PartitionDir, chosen: PartitionDir) -> PartitionDir:
    """``copy`` bounded as ``chosen`` is: its high watermark and log start (a read of several copies plans with the
    chosen copy's; a follower's high watermark lags the leader's), its own files."""
    import dataclasses

    return dataclasses.replace(copy, high_watermark=chosen.high_watermark,
                               checkpoint_log_start_offset=chosen.log_start_offset,
                               unreadable_checkpoints=chosen.unreadable_checkpoints)


def from_other_copies(chosen: PartitionDir, others, err: CorruptDataError, attempt, rests_on, *,
                      isolation: str = "read_uncommitted", how: str = "Look another up by giving its log dir alone"):
    """A strict lookup on ``chosen`` met ``err`` (a corrupt batch, bad framing: not an unreadable checkpoint) while
    ``others`` (:func:`other_copies`) are copies of the partition too: answer from the first of them that can, as a
    strict read reads the offsets the chosen copy cannot supply from another copy
    (:func:`kafkaseg.scan.read_slice`). ``attempt(pdir)`` is the lookup, done on the copy bounded as ``chosen`` is
    (:func:`standing_in`); ``rests_on(result)`` the offsets ``[first, end)`` its answer rests on
    (:func:`list_offset_rests_on`, :func:`locate_rests_on`), which the copy must hold, as a read's other copy must
    hold the offsets it supplies: a copy whose log starts above ``first``, or ends below ``end`` (a follower
    behind), or whose tiered-storage copies leave some of them out (:func:`~kafkaseg.storage.layout.copy_gaps`: a
    copy missing from the bucket, which its answer would pass over), is passed over, said among what was tried,
    never answered from.

    Returns ``(result, entry)``, ``entry`` as a read lists it in ``ScanMetrics.other_copies_read`` (say it with
    :func:`~kafkaseg.storage.layout.other_copy_line`). Raises ``err`` when none can, with the read's note naming
    the other copies and why each could not."""
    from kafkaseg.storage.layout import copy_gaps, other_copies_note

    if isinstance(err, CorruptCheckpointError) or getattr(err, "lost_tail", None) is not None or not others:
        raise err
    ends: dict | None = None
    tried: list[str] = []
    for copy in others:
        try:
            result = attempt(standing_in(copy, chosen))
        except CorruptDataError as exc:
            tried.append(f"{copy.path}: corrupt too ({exc})")
            continue
        except KafkaSegError as exc:
            tried.append(f"{copy.path}: not answered ({exc})")
            continue
        first, end = rests_on(result)
        if isinstance(end, str):
            if ends is None:
                ends = _chosen_ends(chosen, isolation)
            if ends[end] is None:
                tried.append(f"{copy.path}: whether it holds what the answer rests on cannot be told ({end} cannot "
                             "be read)")
                continue
            end = max(ends[end], first)
        own_start = copy.log_start_offset
        try:
            with PartitionLookup(copy, checkpoints_checked=True) as lookup:
                own_end = lookup.log_end_offset()
        except KafkaSegError as exc:
            tried.append(f"{copy.path}: its log end cannot be read ({exc})")
            continue
        if own_start is not None and own_start > first:
            tried.append(f"{copy.path}: its log starts at {own_start}, above offset {first} the answer rests on")
            continue
        if own_end < end:
            tried.append(f"{copy.path}: its log ends at {own_end}, behind the chosen copy (the answer rests on "
                         f"offsets up to {end - 1})")
            continue
        # between its ends too: offsets in none of its tiered-storage copies (one missing from the bucket) would be
        # passed over by its answer, which then differs from the chosen copy's (its local segments: no reads)
        try:
            gaps = copy_gaps(copy, first, end)
        except KafkaSegError as exc:
            tried.append(f"{copy.path}: whether it holds offsets {first}..{end - 1} cannot be told ({exc})")
            continue
        if gaps:
            tried.append(f"{copy.path}: {gaps[0].describe()}; the answer rests on offsets {first}..{end - 1}")
            continue
        return result, (err.path or chosen.path, err.position, first, end, copy.path, err.detail)
    err.add_note(other_copies_note(chosen.topic, chosen.partition, [c.path for c in others], chosen.path, how,
                                   tried))
    raise err
