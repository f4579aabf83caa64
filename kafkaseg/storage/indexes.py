"""Index rebuild, verification against the log, and the load-or-rebuild policy.

Rebuild follows ``LogSegment.recover`` (``storage/.../log/LogSegment.java``), header by header, no decompression::

    validBytes = 0; lastIndexEntry = 0; maxTimestampSoFar = (-1, -1)
    for batch in log:
        if batch.maxTimestamp > maxTimestampSoFar.timestamp: maxTimestampSoFar = (batch.maxTimestamp, batch.lastOffset)
        if validBytes - lastIndexEntry > indexIntervalBytes:
            offsetIndex.append(batch.lastOffset, validBytes)          # validBytes = this batch's position
            timeIndex.maybeAppend(maxTimestampSoFar)                  # only if its timestamp > the last entry's
            lastIndexEntry = validBytes
        validBytes += batch.sizeInBytes
    timeIndex.maybeAppend(maxTimestampSoFar)                          # "a normally closed segment" appends its max

(recover stops at the first invalid batch, CRC included; this rebuild stops at framing problems and an incomplete
tail only, since it reads headers.) An index written by ``LogSegment.append`` while the broker ran can differ
from a recovered one: append indexes once per produce request (possibly several batches), not per batch.

Verification mirrors ``DumpLogSegments.dumpIndex``/``dumpTimeIndex`` (``core/.../tools/DumpLogSegments.scala``):
each ``.index`` entry must sit at a batch start whose lastOffset equals the entry's offset; each ``.timeindex``
entry's offset must be some batch's lastOffset (or, as brokers before 3.8 wrote, an offset inside that batch) and
its timestamp that batch's maxTimestamp, timestamps increasing.
It compares header-level values (for a legacy compressed wrapper the wrapper's offset is its last inner offset and
its timestamp the inner maximum, so header values are what Kafka compares too).
"""

from __future__ import annotations

from typing import Callable, Iterable, NamedTuple

import numpy as np
import pyarrow.fs as pafs

from kafkaseg.errors import CorruptDataError, CorruptIndexError, KafkaSegError, LayoutError
from kafkaseg.storage._index_file import DEFAULT_MAX_INDEX_BYTES, index_location
from kafkaseg.storage.offset_index import OffsetIndex
from kafkaseg.storage.segment import (DEFAULT_MAX_BATCH_BYTES, BatchTable, SegmentReader, batch_table,
                                      header_columns, log_end_offset)
from kafkaseg.storage.time_index import NO_TIMESTAMP, TimeIndex

__all__ = [
    "DEFAULT_INDEX_INTERVAL_BYTES",
    "rebuild_indexes",
    "IndexMismatch",
    "verify_offset_index",
    "verify_time_index",
    "load_indexes",
    "time_entry_problem",
    "walked_time_entry_problem",
    "time_pair_foreign",
    "FOREIGN_TIME_INDEX",
    "foreign_time_index",
]

DEFAULT_INDEX_INTERVAL_BYTES = 4096  # index.interval.bytes


def rebuild_indexes(segment_reader: SegmentReader, base_offset: int,
                    interval_bytes: int = DEFAULT_INDEX_INTERVAL_BYTES, *,
                    max_batch_bytes: int | None = DEFAULT_MAX_BATCH_BYTES,
                    reason: str = "rebuilt from batch headers",
                    on_corruption: Callable[[CorruptDataError], None] | None = None) -> tuple[OffsetIndex, TimeIndex]:
    """The ``.index`` and ``.timeindex`` ``LogSegment.recover`` would write for this log (see the module doc),
    built in memory from one header walk. Both come back with ``rebuilt=True`` and ``rebuild_reason=reason``.
    Bad framing raises, unless ``on_corruption`` is given: it is called with the error and the indexes cover the
    batches before it (where ``LogSegment.recover`` would truncate the log)."""
    (positions, last_offsets, max_timestamps), _ = header_columns(
        segment_reader, ("position", "last_offset", "max_timestamp"), max_batch_bytes=max_batch_bytes,
        on_corruption=on_corruption)
    recover = _recovered_entries if positions.size >= _VECTORIZED_FROM else _recovered_entries_loop
    offsets, entry_positions, stamps, stamp_offsets = recover(positions, last_offsets, max_timestamps, interval_bytes)
    offset_index = OffsetIndex(base_offset, offsets, entry_positions, rebuilt=True, rebuild_reason=reason)
    time_index = TimeIndex(base_offset, stamps, stamp_offsets, rebuilt=True, rebuild_reason=reason)
    return offset_index, time_index


#: Batches from which :func:`_recovered_entries` runs in arrays: below, its fixed cost (some twenty numpy calls,
#: ~15 us) exceeds the loop's over a few batches (a segment of 4 batches rebuilt 2x slower, 64 about the same).
_VECTORIZED_FROM = 48


def _recovered_entries_loop(positions: np.ndarray, last_offsets: np.ndarray, max_timestamps: np.ndarray,
                            interval_bytes: int) -> tuple[list, list, list, list]:
    """:func:`_recovered_entries` as the module doc's loop, batch by batch (for a few batches)."""
    offsets: list[int] = []
    entry_positions: list[int] = []
    stamps: list[int] = []
    stamp_offsets: list[int] = []
    last_index_entry = 0
    max_ts, max_ts_offset = NO_TIMESTAMP, -1
    for position, last_offset, timestamp in zip(positions.tolist(), last_offsets.tolist(), max_timestamps.tolist()):
        if timestamp > max_ts:
            max_ts, max_ts_offset = timestamp, last_offset
        if position - last_index_entry > interval_bytes:
            if not offsets or last_offset > offsets[-1]:  # OffsetIndex.append refuses non-increasing
                offsets.append(last_offset)
                entry_positions.append(position)
            if max_ts > (stamps[-1] if stamps else NO_TIMESTAMP):  # TimeIndex.maybeAppend
                stamps.append(max_ts)
                stamp_offsets.append(max_ts_offset)
            last_index_entry = position
    if max_ts > (stamps[-1] if stamps else NO_TIMESTAMP):
        stamps.append(max_ts)
        stamp_offsets.append(max_ts_offset)
    return offsets, entry_positions, stamps, stamp_offsets


def _recovered_entries(positions: np.ndarray, last_offsets: np.ndarray, max_timestamps: np.ndarray,
                       interval_bytes: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The module doc's loop run over the batches' columns (positions strictly increasing, as a walk gives them):
    ``(offsets, positions)`` of the offset index and ``(timestamps, offsets)`` of the time index."""
    n = positions.size
    if n == 0:  # no entry, and the final maybeAppend of (NO_TIMESTAMP, -1) appends nothing
        return (np.zeros(0, np.int64),) * 4
    # maxTimestampSoFar after each batch: the running maximum (from NO_TIMESTAMP), and the lastOffset of the batch
    # that reached it first (a later batch takes over only with a strictly greater timestamp)
    running = np.maximum.accumulate(np.maximum(max_timestamps, NO_TIMESTAMP))
    takes_over = max_timestamps > np.concatenate(([NO_TIMESTAMP], running[:-1]))
    holder = np.maximum.accumulate(np.where(takes_over, np.arange(n), -1))  # that batch's index, -1 before any
    # the batches that get an entry: the first whose position is more than interval_bytes past the last entry's
    # (0 before the first); one step per entry, each the next batch past its own position plus the interval
    interval = min(max(int(interval_bytes), -1), 1 << 62)  # the same choices, within int64 (positions are >= 0)
    following = np.maximum(np.searchsorted(positions, positions + interval, side="right"), np.arange(1, n + 1))
    following = following.tolist()
    chosen = []
    k = int(np.searchsorted(positions, interval, side="right"))
    while k < n:
        chosen.append(k)
        k = following[k]
    entries = np.array(chosen, dtype=np.int64)
    # OffsetIndex.append refuses a non-increasing offset: an entry's offset is kept when above every one before it
    # (the last one kept is the largest so far)
    candidates = last_offsets[entries]
    above = np.ones(entries.size, bool)
    above[1:] = candidates[1:] > np.maximum.accumulate(candidates)[:-1]
    # the time index: maxTimestampSoFar at each entry, then after the last batch, each appended when above the last
    # one appended; a running maximum never goes down, so that is when above the one before (NO_TIMESTAMP first)
    at = np.append(entries, n - 1)
    times, holders = running[at], holder[at]
    fresh = times > np.concatenate(([NO_TIMESTAMP], times[:-1]))
    time_offsets = np.where(holders >= 0, last_offsets[np.maximum(holders, 0)], -1)
    return candidates[above], positions[entries][above], times[fresh], time_offsets[fresh]


class IndexMismatch(NamedTuple):
    """One index entry that disagrees with the log: ``file`` the index file, ``position`` the entry's byte in it."""

    file: str | None
    position: int
    entry: tuple[int, int]   # (offset, position) or (timestamp, offset)
    detail: str

    def __str__(self) -> str:
        return f"{self.file} @ byte {self.position}: {self.detail}"


def _table(segment_reader: SegmentReader, table: BatchTable | None, max_batch_bytes) -> BatchTable:
    return table if table is not None else batch_table(segment_reader, max_batch_bytes=max_batch_bytes)


def verify_offset_index(index: OffsetIndex, segment_reader: SegmentReader, *, table: BatchTable | None = None,
                        max_batch_bytes: int | None = DEFAULT_MAX_BATCH_BYTES) -> list[IndexMismatch]:
    """Entries that do not point at a batch start whose lastOffset equals the entry's offset."""
    table = _table(segment_reader, table, max_batch_bytes)
    mismatches = []
    for n, (offset, position) in enumerate(index):
        at = int(np.searchsorted(table.positions, position))
        file_position = n * OffsetIndex.ENTRY_SIZE
        if at >= len(table) or table.positions[at] != position:
            where = "past the end of the complete batches" if at >= len(table) else "not at a batch boundary"
            mismatches.append(IndexMismatch(index.path, file_position, (offset, position),
                                            f"entry offset {offset} -> position {position}: {where}"))
        elif table.last_offsets[at] != offset:
            mismatches.append(IndexMismatch(
                index.path, file_position, (offset, position),
                f"entry offset {offset} -> position {position}: the batch there ends at offset "
                f"{int(table.last_offsets[at])}"))
    return mismatches


def verify_time_index(time_index: TimeIndex, segment_reader: SegmentReader, *, table: BatchTable | None = None,
                      strict_last_offset: bool = False,
                      max_batch_bytes: int | None = DEFAULT_MAX_BATCH_BYTES) -> list[IndexMismatch]:
    """Entries whose offset is in no batch, whose timestamp is not the holding batch's maxTimestamp, or whose
    timestamp does not increase (``DumpLogSegments.dumpTimeIndex``).

    Brokers before Kafka 3.8 (KAFKA-16310) stored the offset of the RECORD holding the max timestamp, which lies
    inside its batch; later ones store the batch's last offset. By default any offset inside the batch is accepted;
    ``strict_last_offset=True`` requires the batch's last offset, as today's ``DumpLogSegments`` does."""
    table = _table(segment_reader, table, max_batch_bytes)
    mismatches = []
    previous = NO_TIMESTAMP
    for n, (timestamp, offset) in enumerate(time_index):
        file_position = n * TimeIndex.ENTRY_SIZE
        at = int(np.searchsorted(table.last_offsets, offset))  # first batch with lastOffset >= offset
        if at >= len(table):
            mismatches.append(IndexMismatch(time_index.path, file_position, (timestamp, offset),
                                            f"offset {offset} is past the last complete batch"))
        elif table.base_offsets[at] > offset:
            mismatches.append(IndexMismatch(
                time_index.path, file_position, (timestamp, offset),
                f"offset {offset} is in no batch (the next batch spans {int(table.base_offsets[at])}.."
                f"{int(table.last_offsets[at])})"))
        elif strict_last_offset and table.last_offsets[at] != offset:
            mismatches.append(IndexMismatch(
                time_index.path, file_position, (timestamp, offset),
                f"offset {offset} is not its batch's last offset {int(table.last_offsets[at])}"))
        else:
            if table.max_timestamps[at] != timestamp:
                mismatches.append(IndexMismatch(
                    time_index.path, file_position, (timestamp, offset),
                    f"timestamp {timestamp} for offset {offset} differs from the batch's max timestamp "
                    f"{int(table.max_timestamps[at])}"))
            if previous >= timestamp:
                mismatches.append(IndexMismatch(
                    time_index.path, file_position, (timestamp, offset),
                    f"timestamp {timestamp} is not above the previous entry's {previous}"))
        previous = timestamp
    return mismatches


def time_entry_problem(header, timestamp: int, offset: int) -> str | None:
    """Why time index entry ``(timestamp, offset)`` does not describe the batch under ``header`` (a
    :class:`~kafkaseg.wire.batch.BatchHeader`), the first of its segment ending at or after ``offset``, or None: a v2
    batch must hold the offset, and the batch's max timestamp must be the entry's (:func:`verify_time_index`'s rule;
    a legacy wrapper's header values are what the broker indexed). An entry of a ``.timeindex`` swapped with or
    copied from another segment of the partition fails it: its relative offsets fit, its timestamps do not."""
    if header.magic >= 2 and header.base_offset > offset:
        return f"offset {offset} is in no batch (the next spans {header.base_offset}..{header.last_offset})"
    if header.max_timestamp != timestamp:
        return f"the batch holding offset {offset} has max timestamp {header.max_timestamp}, not {timestamp}"
    return None


def walked_time_entry_problem(walk: Callable[[], Iterable], entry: tuple[int, int]) -> str | None:
    """:func:`time_entry_problem` of time index entry ``entry`` (timestamp, offset) against the first batch that
    ``walk()`` (its segment's batch headers from the offset index's floor of the offset: one index interval) gives
    ending at or after the offset; when none does, the offset is past the segment's batches. Damage on the way
    (a :class:`~kafkaseg.errors.KafkaSegError` from ``walk``, called here, or from the walk itself) is not the
    index's fault: None. The walk is closed before this returns."""
    timestamp, offset = entry
    try:
        headers = iter(walk())
        try:
            for header in headers:
                if header.last_offset >= offset:
                    return time_entry_problem(header, timestamp, offset)
        finally:
            close = getattr(headers, "close", None)
            if close is not None:
                close()
    except KafkaSegError:
        return None
    return f"offset {offset} is past the segment's batches"


class LeftEntries(NamedTuple):
    """What the active segment's indexes hold below where a follower's truncation may have cut it
    (:func:`~kafkaseg.storage.layout.truncation_bound`), whose entries no truncation left: ``entry``, the last
    ``.timeindex`` entry there (``(-1, base)`` when none), and ``start``, the position of the last ``.index`` entry
    there (0 when none), a batch boundary."""

    entry: tuple[int, int]
    start: int


def left_entries(partition_dir, segment, entry: tuple[int, int], start: tuple[int, int], *,
                 time_before: Callable[[int], tuple[int, int]], offset_before: Callable[[int], int],
                 start_problem: Callable[[int, int], str | None]) -> tuple[LeftEntries | None, int]:
    """``(left, position)`` for :func:`largest_timestamp_walked` of ``segment``, the partition's active one
    (``partition_dir``'s): ``left`` when its time index entry ``entry`` lies at or past where a follower's truncation
    may have cut it (:func:`~kafkaseg.storage.layout.truncation_bound`), so that it may be the truncated
    generation's, else None; ``position``, where the walk starts: at offset index entry ``start`` ``(offset,
    position)``, unless that one, at or past the bound too, points at no sound batch (``start_problem(offset,
    position)``, the problem or None: an entry the truncation left inside a batch), then at ``left.start``.
    ``time_before(bound)``: the last ``.timeindex`` entry below the bound, ``(-1, base)`` when none;
    ``offset_before(bound)``: the position of the last ``.index`` entry below it, 0 when none."""
    from kafkaseg.storage.layout import truncation_bound

    found = truncation_bound(partition_dir, segment.log_path, segment.base_offset) if entry[0] >= 0 else None
    if found is None or entry[1] < found[0]:
        return None, start[1]
    left = LeftEntries(time_before(found[0]), offset_before(found[0]))
    if start[0] >= found[0] and start_problem(*start) is not None:
        return left, left.start
    return left, start[1]


def largest_timestamp_walked(entry: tuple[int, int], walk: Callable[[int], Iterable], start: int,
                             left: LeftEntries | None = None) -> tuple[int, int]:
    """``(timestamp, offset)``: the larger of time index entry ``entry`` (the last one the answer may take; its
    offset ``(-1, base)`` when none) and the max timestamps of the batches ``walk(start)`` gives (headers from byte
    ``start`` on, which must pass the batch holding ``entry``'s offset; the walk's own errors are the caller's).

    ``left``: ``entry`` lies at or past where a follower's truncation may have cut the active segment, so it may
    be an entry of the truncated generation (:data:`~kafkaseg.storage.layout.LEFT_BY_TRUNCATION`), stamped above
    every record the log holds (another leader's clock). It then stands only when the batch holding its offset has
    its timestamp (:func:`time_entry_problem`, judged on the walk: no extra read); else the answer is ``left``'s
    entry and the batches from ``left.start`` on (a second walk, unless ``start`` is that position), as the broker's
    ``LogSegment.truncateTo`` reads its max timestamp again."""
    judged = fits = left is None  # (an entry judged on the walk: the batch holding its offset has its timestamp)
    walked = (-1, entry[1])
    for header in walk(start):
        if not judged and header.last_offset >= entry[1]:
            judged, fits = True, time_entry_problem(header, *entry) is None
        if header.max_timestamp > walked[0]:
            walked = (header.max_timestamp, header.last_offset)
    if not fits:  # (also when the walk ends before its offset)
        entry = left.entry
        if start != left.start:
            walked = (-1, entry[1])
            for header in walk(left.start):
                if header.max_timestamp > walked[0]:
                    walked = (header.max_timestamp, header.last_offset)
    return walked if walked[0] > entry[0] else entry


def time_pair_foreign(i: int, largest: Callable[[int], int | None], judge: Callable[[int], bool]) -> bool:
    """Whether a ``.timeindex`` of segment ``i - 1`` or ``i`` proved another segment's. Only a pair whose largest
    timestamps (``largest(k)``, None when unknown) do not rise is looked at: a ``.timeindex`` swapped with or copied
    from another segment's always leaves such a pair among segments whose largest timestamps rose (a copy repeats a
    value, a swap puts two out of order), and a record from a clock running behind is rare. Then both are judged
    (``judge(k)``: True when segment ``k``'s proved another's and was rebuilt; one index interval of headers
    each)."""
    if i == 0:
        return False
    before, here = largest(i - 1), largest(i)
    if before is None or here is None or here > before:
        return False
    foreign = judge(i - 1)
    return judge(i) or foreign


#: How the reason for rebuilding a segment's indexes starts when its ``.timeindex`` is another segment's (damage, not
#: a broker's normal state: ``kafkaseg offsets``/``locate`` say it on stderr)
FOREIGN_TIME_INDEX = ".timeindex not this segment's"


def foreign_time_index(entry: tuple[int, int], problem: str) -> str:
    """The reason a ``.timeindex`` is not used: its entry ``entry`` (timestamp, offset) cannot be its segment's."""
    return (f"{FOREIGN_TIME_INDEX}: entry (timestamp {entry[0]}, offset {entry[1]}): {problem}; not used, the "
            "answer comes from the segment's batches")


def load_indexes(segment, filesystem: pafs.FileSystem | None = None, *, reader: SegmentReader | None = None,
                 interval_bytes: int = DEFAULT_INDEX_INTERVAL_BYTES, max_index_bytes: int = DEFAULT_MAX_INDEX_BYTES,
                 max_batch_bytes: int | None = DEFAULT_MAX_BATCH_BYTES, left_from: int | None = None
                 ) -> tuple[OffsetIndex, TimeIndex]:
    """The segment's ``.index`` and ``.timeindex``, or in-memory rebuilds of them when a file is missing,
    unreadable, over ``max_index_bytes``, or fails its sanity checks (``rebuilt``/``rebuild_reason`` say so).
    ``left_from``: the segment is the active one and a follower's truncation may have cut it there
    (:func:`~kafkaseg.storage.layout.truncation_bound`): a file whose first insane entry is at or past that offset
    is taken up to it (:meth:`~kafkaseg.storage._index_file.FixedEntryIndex.for_reading`: the entries such a
    truncation leaves), as a read takes its ``.index``, not rebuilt.

    ``segment`` is any object with ``base_offset``, ``log_path``, ``index_path`` and ``timeindex_path`` (e.g.
    :class:`~kafkaseg.storage.layout.SegmentFiles`). The on-disk index is used as found (after trimming a
    preallocated tail); only rebuilding reads the log, one header walk.
    """
    filesystem = filesystem if filesystem is not None else getattr(segment, "filesystem", None)
    owned = reader is None
    if owned:
        reader = SegmentReader(segment.log_path, filesystem)
    try:
        base = int(segment.base_offset)
        offset_index = time_index = None
        offset_reason = time_reason = None
        index_path, index_window = index_location(segment, "index")
        timeindex_path, timeindex_window = index_location(segment, "timeindex")
        if not index_path:
            offset_reason = "missing .index file"
        else:
            try:
                offset_index = OffsetIndex.load(index_path, base, filesystem, max_bytes=max_index_bytes,
                                                window=index_window)
                kept = offset_index.for_reading(reader.size, active=left_from is not None, left_from=left_from)
                if kept is None:
                    offset_reason = f"corrupt .index ({offset_index.sanity_problems(reader.size)[0]})"
                offset_index = kept
            except (LayoutError, CorruptIndexError) as exc:
                offset_reason = f"unreadable .index ({exc})"
        if not timeindex_path:
            time_reason = "missing .timeindex file"
        else:
            try:
                time_index = TimeIndex.load(timeindex_path, base, filesystem, max_bytes=max_index_bytes,
                                            window=timeindex_window)
                try:
                    end = log_end_offset(segment, offset_index=offset_index, reader=reader, as_listed=False,
                                         max_batch_bytes=max_batch_bytes) if len(time_index) else None
                except CorruptDataError:
                    end = None  # the log's own corruption is the reader's to report (or skip); check the rest
                kept = time_index.for_reading(reader.size, active=left_from is not None, left_from=left_from,
                                              log_end_offset=end)
                if kept is None:
                    problems = time_index.sanity_problems(reader.size, log_end_offset=end)
                    time_reason = f"corrupt .timeindex ({problems[0]})"
                time_index = kept
            except (LayoutError, CorruptIndexError) as exc:
                time_reason = f"unreadable .timeindex ({exc})"
        if offset_reason or time_reason:
            reason = "; ".join(r for r in (offset_reason, time_reason) if r)
            rebuilt_offsets, rebuilt_times = rebuild_indexes(reader, base, interval_bytes,
                                                             max_batch_bytes=max_batch_bytes, reason=reason)
            if offset_index is None:
                offset_index = rebuilt_offsets
            if time_index is None:
                time_index = rebuilt_times
        return offset_index, time_index
    finally:
        if owned:
            reader.close()
