"""Spark-free scanning: a planned :class:`~kafkaseg.planning.SegmentSlice` -> ``pyarrow.RecordBatch`` es, and the
public Python API (:func:`iter_batches`, :func:`read_arrow`, :func:`scan`).

A slice is read in bounded chunks (:data:`READ_CHUNK_BYTES`, grown only as far as one batch needs, and never
past ``maxBatchBytes``), each chunk decoded by the kernel into output batches of at most ``maxRecordsPerBatch`` rows /
``maxBytesPerBatch`` bytes (plus at most one on-disk batch). Memory therefore depends on configuration, never on
segment size.
"""

from __future__ import annotations

import contextlib
import os
import struct
import threading
from dataclasses import dataclass, field, replace
from typing import Any, Iterable, Iterator, Sequence

import numpy as np
import pyarrow as pa

from kafkaseg import decode as _decode
from kafkaseg.decode.api import (
    MAX_PROBLEMS,
    REST_SKIPPED,
    STOP_CORRUPT,
    STOP_PARTIAL,
    STOP_PAST_END,
    DecodeRequest,
    DecodeStats,
    Problem,
    past_end_problem,
    uncounted,
)
from kafkaseg.errors import (CorruptBatchError, CorruptDataError, CrcMismatchError, DataLossError, InvalidOptionError,
                             KafkaSegError, LayoutError, TruncatedDataError)
from kafkaseg.options import ReadOptions
from kafkaseg.entry_check import ResumptionEntries, batch_first_offset
from kafkaseg.offset_outlier import (batch_before, goes_back_after, last_batch_before, offset_before,
                                     outlier_region, record_facts, went_back)
from kafkaseg.planning import (READ_ON_PAST_LOSS, ScanPlan, SegmentSlice, move_sources, moved_partition,
                               plan_again_by_offset, plan_scan, planned_file_names)
from kafkaseg.storage.layout import (below_cleaner_checkpoint, judge_rolled_end, judge_tail, other_copies_note, other_copy_line,
                                      read_partition_again)
from kafkaseg.storage.foreign_log import outside_batches
from kafkaseg.storage.offset_index import OffsetIndex
from kafkaseg.storage.segment import SegmentReader, load_index_files, nonzero_extent
from kafkaseg.storage.fs import CTIME_TICK_NS, REMOTE_READ_BYTES, RandomAccessReader, ReadAhead, is_local, redact, same_file
from kafkaseg.storage.fs import basename as fs_basename, exists, join as fs_join, list_dir
from kafkaseg.wire.batch import CODEC_NAMES, HEADER_PREFIX_SIZE, LOG_OVERHEAD, MAGIC_OFFSET

__all__ = ["ScanMetrics", "Problem", "read_slice", "iter_batches", "read_arrow", "open_scan", "Scan"]

# 2 MiB: a chunk small enough to stay in a core's L2 cache between the read that fills it, the CRC pass and the
# record parsing. Measured on 200 MiB segments (16 KiB / 1 MiB batches): 16 MiB chunks 1.9 / 2.4 GB/s, 2 MiB
# 2.6 / 3.0 GB/s; lz4 0.84 -> 0.98 GB/s. Output batches are then at most about one chunk of records.
READ_CHUNK_BYTES = 2 << 20
# 32 MiB: mappings of a local segment are made (and populated) this much at a time, so what a scan keeps mapped is
# bounded by configuration, not by segment size; larger windows measured no faster.
MAP_WINDOW_BYTES = 32 << 20
_CODEC_NAMES = pa.array([CODEC_NAMES.get(i, "unknown") for i in range(8)], pa.string())


@dataclass
class ScanMetrics:
    """What a scan actually read and decoded (planning's numbers are in :class:`~kafkaseg.planning.PlanReport`)."""

    slices: int = 0
    bytes_read: int = 0
    output_batches: int = 0
    decode: DecodeStats = field(default_factory=DecodeStats)
    truncated_tails: list = field(default_factory=list)  # (path, position, bytes) of partial final batches
    # (path, start offset, end offset, what happened) of segments a live broker deleted or replaced after planning
    vanished_segments: list = field(default_factory=list)
    # (path, first missing offset, next segment's base) of offsets missing after a segment above the cleaner
    # checkpoint, read past (see _check_segment_end)
    missing_offsets: list = field(default_factory=list)
    # (corrupt file, byte position, first offset, end offset, copy folder, error text): offsets [first, end) of a
    # strict read that another broker's copy of the partition supplied, as the chosen copy's file was corrupt there
    other_copies_read: list = field(default_factory=list)
    # Problems (file, byte where the readable batches end, what; the bytes after it and the offsets [first, end)):
    # active segments read to their end, with no high watermark to bound the read, whose own indexes (or a producer
    # snapshot) point past that end at offsets none of which the recovery point says was flushed. Not corruption a
    # strict read raises (a crash can lose unflushed log pages and keep the index's), so a warning in every read;
    # flushed ones are data loss (raised, or read past). See _SliceDecoder.check_indexed_tail. Also rolled segments
    # cut short (or emptied) whose own index entries point past their end, the recovery point not above it
    # (_judge_rolled_cut, planning._empty_segment_loss): the offsets up to the next segment's base
    unreadable_tails: list = field(default_factory=list)
    # Problems: active segments read to their end, with no high watermark to bound the read, below the recovery
    # point (the broker had flushed offsets the file does not hold): data loss, read past under
    # ``failOnDataLoss=false`` (then said by lost_tail_lines), or under ``onCorruption=skip`` (then also one of the
    # decode problems skipped); ``kafkaseg consume --fail-on-data-loss`` exits 3 for them
    lost_tails: list = field(default_factory=list)
    # (path, byte position, what) of slices ended early because a live broker truncated their segment past the
    # high watermark and rewrote it after planning (a read past it, upperBound=logEndOffset): from that byte the
    # file holds another generation of batches than the plan named; the records there were never acknowledged.
    # Each is also a truncated tail
    rewritten_tails: list = field(default_factory=list)

    def __post_init__(self):
        self._lock = threading.Lock()
        # the byte ranges of each file the problems added so far count (see uncounted): a region two slices both
        # read is counted once
        self._counted: dict[str, list[tuple[int, int]]] = {}

    @property
    def records(self) -> int:
        return self.decode.records

    @property
    def problems(self) -> list:
        """The corrupt regions a lenient read skipped, the first :data:`~kafkaseg.decode.api.MAX_PROBLEMS`
        (``decode.problems``): :class:`~kafkaseg.decode.api.Problem` s, each the tuple ``(path, position, what)``
        with its ``bytes`` and the offsets ``[first_offset, end_offset)`` it made unreadable when known."""
        return self.decode.problems

    def as_dict(self) -> dict:
        d = self.decode
        return {"slices": self.slices, "bytes_read": self.bytes_read, "records": d.records,
                "output_batches": self.output_batches, "batches": d.batches,
                "skipped_batches_out_of_range": d.skipped_batches_out_of_range,
                "skipped_control_batches": d.skipped_control_batches,
                "skipped_aborted_batches": d.skipped_aborted_batches, "corrupt_batches": d.corrupt_batches,
                "corrupt_bytes": d.corrupt_bytes, "problems": [_problem_list(p) for p in d.problems],
                "truncated_tails": list(self.truncated_tails), "vanished_segments": list(self.vanished_segments),
                "missing_offsets": list(self.missing_offsets), "other_copies_read": list(self.other_copies_read),
                "unreadable_tails": [_problem_list(p) for p in self.unreadable_tails],
                "lost_tails": [_problem_list(p) for p in self.lost_tails],
                "rewritten_tails": [list(t) for t in self.rewritten_tails]}

    def add(self, other: "ScanMetrics") -> None:
        """Add ``other``'s counts and lists to these (a reader that keeps one slice's metrics apart, to report them,
        and a total)."""
        with self._lock:
            self.slices += other.slices
            self.bytes_read += other.bytes_read
            self.output_batches += other.output_batches
            self._add_decode(other.decode)
            self.truncated_tails.extend(other.truncated_tails)
            self.vanished_segments.extend(other.vanished_segments)
            self.missing_offsets.extend(other.missing_offsets)
            self.other_copies_read.extend(other.other_copies_read)
            self.unreadable_tails.extend(other.unreadable_tails)
            self.lost_tails.extend(other.lost_tails)
            self.rewritten_tails.extend(other.rewritten_tails)

    def _add_decode(self, stats: DecodeStats) -> None:
        """Add one slice's (or one reader's) decode counts, less the corrupt regions counted already (with the lock
        held)."""
        kept, batches, nbytes = uncounted(stats.problems, self._counted)
        if batches or nbytes or len(kept) < len(stats.problems):
            stats = replace(stats, problems=kept, corrupt_batches=stats.corrupt_batches - batches,
                            corrupt_bytes=stats.corrupt_bytes - nbytes)
        self.decode.add(stats)

    def corrupt_skips(self) -> list[str]:
        """What a lenient read skipped, for a log: one line per corrupt batch ``problems`` names (file, byte, what,
        and the bytes and offsets when known), and one for those past its cap
        (:data:`~kafkaseg.decode.api.MAX_PROBLEMS`)."""
        d = self.decode
        lines = [f"onCorruption=skip: skipped corrupt data in {problem[0]} at byte {problem[1]}: {problem[2]}"
                 + _extent(problem) for problem in d.problems]
        if d.corrupt_batches > len(d.problems):
            lines.append(f"onCorruption=skip: skipped {d.corrupt_batches - len(d.problems)} more corrupt batches "
                         f"({d.corrupt_bytes} corrupt bytes in all), beyond the {len(d.problems)} named")
        return lines

    def unreadable_tail_lines(self) -> list[str]:
        """The segments whose indexes prove offsets past their readable end (``unreadable_tails``), for a log
        (a warning): one line each, ``<file> @ byte <n>: index entries up to offset ... (<extent>)``."""
        return [f"{p[0]} @ byte {p[1]}: {p[2]}" + _extent(p) for p in self.unreadable_tails]

    def lost_tail_lines(self) -> list[str]:
        """The flushed tails the read found lost and read past (``lost_tails``), for a log (data loss, a warning):
        one line each, ``<file> @ byte <n>: the active segment's readable batches end ... (<extent>)``."""
        return [f"{p[0]} @ byte {p[1]}: {p[2]}" + _extent(p) for p in self.lost_tails]

    def vanished_lines(self) -> list[tuple[bool, str]]:
        """What became of segments a live broker deleted or replaced after planning, for a log: ``(skipped, line)``
        per segment, ``skipped`` True when its offsets were skipped (``failOnDataLoss=false``: a warning), False
        when it was read from its ``.deleted`` (or swapped) name (information)."""
        return [(what.startswith("skipped"), f"{path} (offsets {start}..{end - 1}), gone since planning: {what}")
                for path, start, end, what in self.vanished_segments]

    def rewritten_tail_lines(self) -> list[str]:
        """The slices a truncation past the high watermark overtook (``rewritten_tails``), for a log (information:
        records never acknowledged): one line each, ``<file> @ byte <n>: ...``."""
        return [f"{path} @ byte {at}: {what}" for path, at, what in self.rewritten_tails]

    def other_copies_lines(self) -> list[str]:
        """The offsets a strict read took from another copy of their partition, the one chosen being corrupt there,
        for a log (a warning: the chosen copy needs looking at): one line per switch of copy."""
        return [other_copy_line(entry) for entry in self.other_copies_read]

    def __getstate__(self):
        state = self.__dict__.copy()
        state.pop("_lock", None)
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self.__dict__.setdefault("_counted", {})
        self.__dict__.setdefault("unreadable_tails", [])
        self.__dict__.setdefault("lost_tails", [])
        self.__dict__.setdefault("rewritten_tails", [])
        self._lock = threading.Lock()


def _problem_list(problem) -> list:
    """A problem's JSON form: ``[path, position, what, bytes, first_offset, end_offset]``."""
    return problem.as_list() if isinstance(problem, Problem) else list(problem)


def _extent(problem) -> str:
    """`` (201 bytes; offsets 20..24)``: what a problem knows of its region, for a log line (empty when nothing)."""
    extent = problem.extent() if isinstance(problem, Problem) else ""
    return f" ({extent})" if extent else ""


def _request(piece: SegmentSlice, options: ReadOptions) -> DecodeRequest:
    return DecodeRequest(
        path=piece.log_path,
        verify_crc=options.verify_crc,
        include_control=options.include_control,
        include_headers=options.include_headers,
        include_metadata=options.include_metadata,
        include_key=options.outputs("key"),
        include_value=options.outputs("value"),
        min_offset=piece.start_offset,
        # a segment holds only offsets below the next one's base: a file the log cleaner merged the next segment
        # into during the read (swapped in under this name) must not return that segment's records twice
        max_offset=piece.segment_offsets[1],
        max_records=options.max_records_per_batch,
        max_bytes=options.max_bytes_per_batch,
        max_batch_bytes=options.max_batch_bytes,
        max_decompressed_bytes=options.max_decompressed_batch_bytes,
        aborted=tuple(piece.aborted) if options.isolation_level == "read_committed" else (),
        lenient=options.on_corruption == "skip",
        timestamp_unit=options.timestamp_unit,
    )


class _ConstantColumns:
    """The slice's constant columns (topic, partition, segment), built once at the largest size seen and sliced
    (zero-copy) for each record batch: repeating the topic string for every batch cost more than decoding it."""

    def __init__(self, piece: SegmentSlice):
        self._values = {"topic": pa.scalar(piece.topic, pa.string()),
                        "partition": pa.scalar(piece.partition, pa.int32()),
                        "segment": pa.scalar(piece.log_path, pa.string())}
        self._arrays: dict[str, pa.Array] = {}

    def get(self, name: str, n: int) -> pa.Array:
        array = self._arrays.get(name)
        if array is None or len(array) < n:
            array = self._arrays[name] = pa.repeat(self._values[name], n)
        return array.slice(0, n) if len(array) > n else array


def _record_batch(constants: _ConstantColumns, columns: dict, n: int, schema: pa.Schema) -> pa.RecordBatch:
    arrays = []
    for f in schema:
        name = f.name
        if name in ("topic", "partition", "segment"):
            arrays.append(constants.get(name, n))
        elif name == "compression":
            arrays.append(_CODEC_NAMES.take(columns["codec"]))
        else:
            arrays.append(columns[name])
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def read_slice(piece: SegmentSlice, options: ReadOptions, metrics: ScanMetrics | None = None,
               *, read_chunk_bytes: int = READ_CHUNK_BYTES,
               map_window_bytes: int = MAP_WINDOW_BYTES) -> Iterator[pa.RecordBatch]:
    """Decode one planned slice into record batches of the schema chosen by ``options``.

    Reads ``[start_position, end_position)`` of the slice's ``.log``: through guarded mappings of at most
    ``map_window_bytes`` when ``readMode`` allows it and the file is local, else in ``read_chunk_bytes`` positioned
    reads (a non-local file is fetched :data:`~kafkaseg.storage.fs.REMOTE_READ_BYTES` at a time and decoded
    ``read_chunk_bytes`` at a time). A partial batch at the end of a segment (an active segment mid-write, or a
    crash) ends the slice and is reported in ``metrics``; a partial batch anywhere else is corruption (a
    :class:`~kafkaseg.errors.TruncatedDataError`, or a counted skip with ``onCorruption=skip``). A file that
    shrinks while being read (a live broker truncating it) ends the slice where the file now ends, reported as a
    truncated tail.

    A segment a live broker deleted or replaced since planning is read from its ``.deleted`` name while that holds
    it (not one a follower's truncation deleted past the high watermark, :func:`_truncated_below`: reported as a
    truncated tail, nothing read); after that, the slice's offsets (:attr:`~kafkaseg.planning.SegmentSlice.slice_offsets`) are read from the
    partition's current files (:func:`~kafkaseg.planning.plan_again_by_offset`), as a reader by offset would: what
    the log cleaner kept of them is in its compacted copy. Offsets that are gone (retention, a truncation, a
    recreated topic, a file deleted outright: see that function) are a :class:`~kafkaseg.errors.DataLossError`, or
    with ``failOnDataLoss=false`` a skip in ``metrics.vanished_segments``.
    """
    metrics = metrics if metrics is not None else ScanMetrics()
    if piece.missing_before is not None:  # planning moved the start past offsets missing between segments
        with metrics._lock:
            metrics.missing_offsets.append(piece.missing_before)
    if piece.lost_before:  # planning read past offsets an empty rolled segment lost (failOnDataLoss=false)
        with metrics._lock:  # (or possibly lost, not known flushed: a warning)
            for path, at, why, lo, hi, proven in piece.lost_before:
                (metrics.lost_tails if proven else metrics.unreadable_tails).append(Problem(path, at, why, None, lo,
                                                                                             hi))
    if piece.lost_segment_past is not None:  # a lost newest segment's offsets, past the log end (no HW): a warning
        with metrics._lock:
            path, at, why, lo, hi = piece.lost_segment_past
            metrics.unreadable_tails.append(Problem(path, at, why, None, lo, hi))
    progress: dict = {}
    try:
        yield from _read_slice(piece, options, metrics, read_chunk_bytes, map_window_bytes, again=True,
                               progress=progress)
    except CorruptDataError as err:
        if not (piece.other_copies and piece.partition_path) or options.on_corruption == "skip":
            raise
        tried = yield from _read_other_copies(piece, options, metrics, err, progress, read_chunk_bytes,
                                              map_window_bytes)
        if tried is None:
            return
        err.add_note(other_copies_note(piece.topic, piece.partition, piece.other_copies, piece.partition_path,
                                       "Read another by giving its log dir alone, or every copy with replicas=all",
                                       tried))
        raise


def _read_other_copies(piece: SegmentSlice, options: ReadOptions, metrics: ScanMetrics, err: CorruptDataError,
                       progress: dict, read_chunk_bytes: int, map_window_bytes: int):
    """A strict read of ``piece`` met ``err`` (its file is corrupt): the offsets of the slice it had not returned
    yet are read from the partition's other copies (``piece.other_copies``): those of the corrupt batch only when
    its framing says where the next batch starts (:func:`_after_corrupt_batch`), the chosen copy then read again from
    there; else the rest of the slice. Each copy is read from where the last
    one got to (up to its own corrupt batch, if it has one: :func:`_read_before`), in turn, the chosen copy again
    after the others (a batch corrupt in one copy and another batch in the other heal), until a round of them
    supplies nothing more. Yields their record batches; returns None when the slice's offsets were all read, else
    what was tried (copy: why it could not supply them; empty when what the corrupt read returned cannot be told,
    and none is tried). ``progress``: what that read returned (:func:`_read_slice`)."""
    tried: list[str] = []
    if progress.get("unreliable") or "last_seen" not in progress or piece.slice_offsets is None:
        return tried  # (read again by offset, or never opened: what it returned cannot be told)
    lo, hi = piece.slice_offsets
    end = min(hi, piece.end_offset)
    first = max(progress["last_seen"] + 1, piece.start_offset, lo)
    if first >= end:
        return tried
    first = yield from _read_before(piece, err, first, options, metrics, read_chunk_bytes, map_window_bytes)
    resume = _after_corrupt_batch(piece, err, first, end)
    if resume is not None:
        # only the corrupt batch's offsets from another copy, then this copy again after it: a copy compacted
        # otherwise (or shorter) must not stand in for the batches this one still reads (found in review)
        end, next_position = resume
    failed = err
    copies = [*piece.other_copies, piece.partition_path]
    stalled = 0  # copies tried in a row that supplied nothing
    turn = 0
    while first < end and stalled < len(copies):
        copy = copies[turn % len(copies)]
        turn += 1
        stalled += 1
        # the copy's folder, nothing said of its files: plan_again_by_offset plans the offsets from its files as
        # it lists them, which must hold them all (its log start and end) and be of the same topic id
        elsewhere = replace(piece, partition_path=copy, log_path=fs_join(copy, fs_basename(piece.log_path)),
                            slice_offsets=(first, end), file_identity=None, partition_identity=None,
                            listed_at_ns=None, remote_path=None, missing_before=None, corrupt_tail=None,
                            other_copies=(), lost_before=(), lost_segment_past=None)
        try:
            slices, lost = plan_again_by_offset(elsewhere, options)
        except KafkaSegError as exc:
            tried.append(f"{copy}: not planned ({exc})")
            continue
        if lost or not slices:
            tried.append(f"{copy}: " + ("; ".join(why for _, _, why in lost) if lost else
                                         f"none of its files holds offsets {first}..{end - 1}"))
            continue
        entry = [failed.path or piece.log_path, failed.position, first, end, copy, failed.detail]
        with metrics._lock:
            metrics.other_copies_read.append(tuple(entry))
        started = first
        sub_progress: dict = {}
        try:
            for again_piece in slices:
                sub_progress = {}
                yield from _read_slice(again_piece, options, metrics, read_chunk_bytes, map_window_bytes,
                                       again=False, progress=sub_progress)
        except CorruptDataError as exc:
            if sub_progress.get("unreliable") or "last_seen" not in sub_progress:
                tried.append(f"{copy}: corrupt too ({exc}), after a read that cannot be told")
                _read_to(metrics, entry, first)
                return tried
            first = max(first, sub_progress["last_seen"] + 1)
            first = yield from _read_before(again_piece, exc, first, options, metrics, read_chunk_bytes,
                                            map_window_bytes)
            _read_to(metrics, entry, first)
            tried.append(f"{copy}: corrupt too, from offset {first} ({exc})")
            failed = exc
            if first > started:
                stalled = 1  # (this copy, at least, has nothing more)
            continue
        first = end
        break
    if first < end:
        return tried
    if resume is not None:  # this copy again, from the batch after the corrupt one (failing over again if need be)
        after = replace(piece, start_position=next_position, start_offset=max(piece.start_offset, end),
                        slice_offsets=(end, piece.slice_offsets[1]), missing_before=None,
                        lost_before=(), lost_segment_past=None)
        yield from read_slice(after, options, metrics, read_chunk_bytes=read_chunk_bytes,
                              map_window_bytes=map_window_bytes)
    return None


def _after_corrupt_batch(piece: SegmentSlice, err: CorruptDataError, first: int, end: int
                         ) -> tuple[int, int] | None:
    """``(offset, position)`` where ``piece``'s file goes on after the corrupt batch ``err`` names, which starts at
    offset ``first``: the next batch's base offset and position (v2), or the entry's own offset field plus one
    (legacy entries carry their last offset there) with the next entry's position; after a run of batches whose
    offset field is corrupt (``err.outlier_region``), the first batch read after the run. From the framing fields, which no
    CRC covers, checked against each other; None when they do not hold up (or name the slice's end), and the rest
    of the slice is then read from another copy."""
    at = err.position
    if (not isinstance(err, CorruptBatchError) or err.path != piece.log_path or at is None
            or not piece.start_position <= at < piece.end_position):
        return None
    region = getattr(err, "outlier_region", None)
    if region is not None:  # batches a corrupt offset field leaves out (_SliceDecoder._up_to_outlier): all of them,
        # up to the next batch read (whose offset field the batches around it vouch for), not the first alone
        resume = region.end_offset
        if resume is None or region.end >= piece.end_position:
            return None
        return (resume, region.end) if first < resume < end else None
    try:
        with RandomAccessReader(piece.log_path, piece.filesystem) as reader:
            head = reader.read_at(at, HEADER_PREFIX_SIZE)
            if len(head) < HEADER_PREFIX_SIZE:
                return None
            offset, size = struct.unpack_from(">qi", head)
            magic = head[MAGIC_OFFSET]
            following = at + LOG_OVERHEAD + size
            if magic not in (0, 1, 2) or size <= 0 or following >= piece.end_position:
                return None
            if magic == 2:
                nxt = reader.read_at(following, HEADER_PREFIX_SIZE)
                if len(nxt) < HEADER_PREFIX_SIZE or nxt[MAGIC_OFFSET] != 2:
                    return None
                resume = struct.unpack_from(">q", nxt)[0]
            else:
                resume = offset + 1
    except KafkaSegError:
        return None
    return (resume, following) if first < resume < end else None


def _read_to(metrics: ScanMetrics, entry: list, reached: int) -> None:
    """An other copy's read (``entry`` in ``metrics.other_copies_read``) supplied offsets up to ``reached`` only:
    the entry says so, or goes when it supplied none."""
    was = tuple(entry)
    entry[3] = reached
    with metrics._lock:
        if was not in metrics.other_copies_read:
            return  # (a reader that cleared what it reported)
        at = len(metrics.other_copies_read) - 1 - metrics.other_copies_read[::-1].index(was)
        if reached > entry[2]:
            metrics.other_copies_read[at] = tuple(entry)
        else:
            del metrics.other_copies_read[at]


def _read_before(piece: SegmentSlice, err: CorruptDataError, first: int, options: ReadOptions,
                 metrics: ScanMetrics, read_chunk_bytes: int, map_window_bytes: int):
    """The records of ``piece`` from offset ``first`` in the whole batches before the corrupt one ``err`` names
    (a strict decode refuses the chunk holding it, the good batches before it included). Yields them; returns the
    first offset not read (``first`` when there is nothing to read: ``err`` names no batch of the slice)."""
    at = err.position
    if (not isinstance(err, CorruptBatchError) or err.path != piece.log_path or at is None
            or not piece.start_position < at <= piece.end_position):
        return first
    before = replace(piece, start_offset=max(piece.start_offset, first), end_position=at, slice_offsets=None,
                     missing_before=None, corrupt_tail=None, lost_before=(), lost_segment_past=None)
    progress: dict = {}
    try:
        yield from _read_slice(before, options, metrics, read_chunk_bytes, map_window_bytes, again=False,
                               progress=progress)
    except CorruptDataError:
        pass  # (what it returned is in progress)
    if progress.get("unreliable") or "last_seen" not in progress:
        return first
    return max(first, progress["last_seen"] + 1)


def _read_slice(piece: SegmentSlice, options: ReadOptions, metrics: ScanMetrics, read_chunk_bytes: int,
                map_window_bytes: int, *, again: bool, progress: dict | None = None) -> Iterator[pa.RecordBatch]:
    """:func:`read_slice`; ``again``: whether a segment lost since planning is read again by offset (not for the
    slices that do that, so it happens once). ``progress`` (when given) gets ``last_seen``, the last offset of the
    last decoded chunk accepted (every record up to it that the slice keeps was returned, none after), or
    ``unreliable`` when the read went on from other files (its segment lost or read again by offset)."""
    opened, why = _open_planned_segment(piece, metrics, options)
    if opened is None and why is TRUNCATED_BELOW:
        _truncated_tail(piece, metrics)
        return
    if opened is None:
        if progress is not None:
            progress["unreliable"] = True
        yield from _lost_or_read_again(piece, options, metrics, why, read_chunk_bytes, map_window_bytes, again)
        return
    reading = _SliceDecoder(piece, options, metrics)
    reading.planned_file = same_file(piece.file_identity, opened) is True
    # (size, ctime) of the file as the read opened it: a live broker's write since changes it
    stamp = opened.change_stamp() if piece.indexed_tail_check else None
    counted = True  # whether the slice counts as read (not a remote segment found gone before any record)
    gone = False  # a remote segment found gone before any record was returned
    whole = False
    foreign = False  # the segment's file holds another segment's batches, its offsets lost (foreign_file)
    try:
        with opened as reader, contextlib.ExitStack() as stack:
            end = min(piece.end_position, reader.size)
            whole = reader.size == piece.segment_size  # (not truncated since planning: a live broker's follower)
            ahead = None
            if not is_local(reader.filesystem):
                # on object storage every read is a request: the slice's bytes are fetched once, ahead, and the
                # first-batch check (its header, and the headers from the index entry before it when it walks them)
                # and the look at the next batch's offset field past the end take theirs from those blocks
                fetch = max(read_chunk_bytes, REMOTE_READ_BYTES)
                first = piece.start_position
                if piece.walk_from is not None and 0 < first - piece.walk_from <= _WALK_AHEAD_BYTES:
                    first = piece.walk_from
                ahead = stack.enter_context(ReadAhead(reader, first, end + HEADER_PREFIX_SIZE, block_bytes=fetch))
            try:
                pos = reading.check_start(reader if ahead is None else _AheadReader(reader, ahead), end)
                if options.read_mode != "pread" and reader.mappable:
                    pos = yield from reading.mapped(reader, pos, end, map_window_bytes, read_chunk_bytes)
                if pos < end and not reading.finished:
                    if ahead is None:
                        yield from reading.preads(reader, pos, end, read_chunk_bytes)
                    else:  # (from the start, or past a region the check skipped: a jump forward the blocks follow)
                        yield from reading.preads(reader, pos, end, read_chunk_bytes, fetch, source=ahead)
            except CorruptBatchError as err:  # (its first batch below the base: an earlier segment's file?)
                if err.position != 0 or not reading.foreign_below(reader):
                    raise
                foreign = True
            if (not foreign and reading.stats.corrupt_batches
                    and any(path == piece.log_path and at == 0 for path, at, _ in reading.stats.problems)
                    and reading.foreign_below(reader)):
                reading.forget_skips()  # (onCorruption=skip: the file's batches are another segment's, not corrupt)
                foreign = True
            foreign = foreign or (reading.past_end and reading.foreign_file(reader, end))
            if not foreign:
                reading.check_next_base(reader, end)
            if piece.corrupt_tail is not None and end == piece.end_position < reader.size:
                # read to where planning cut off the corrupt rest of the active segment, still in the file: skipped
                position, skipped, why = piece.corrupt_tail
                reading._count_skip(position, skipped, why, reading.first_unread())
            if stamp is not None and end == piece.end_position:
                reading.check_indexed_tail(reader, end, stamp)
            reading.finish_problems(reader)
        # (skipped corrupt batches held unknown offsets). After a past-end stop last_seen is the batch before it, if
        # the slice decoded one: a slice holding only that batch (a legacy wrapper planned for its last inner offset,
        # at a cut) has seen nothing of its segment's offsets, which earlier slices read
        walked = reading.last_seen >= piece.base_offset
        # ... unless the slice starts the segment: no slice read any of its offsets (its batches all at or past the
        # next base: another segment's file), which are missing from its base on
        walked = walked or (piece.start_position == 0 and piece.start_offset <= piece.base_offset)
        if ((not reading.finished or (reading.past_end and walked)) and not reading.stats.corrupt_batches
                and not foreign):
            _check_segment_end(piece, reading.last_seen, metrics, fail_on_data_loss=options.fail_on_data_loss,
                               on_corruption=options.on_corruption, at_file_end=whole and not reading.past_end)
    except LayoutError as exc:
        # An object store has no rename: a remote segment deleted after planning (retention on the source, a
        # sync with --delete) shows only when a read of a file kept open from planning fails. Before any of its
        # records were returned, it is lost as a deleted local segment is; after, the read cannot be undone.
        if reading.emitted or is_local(piece.filesystem) or not _is_missing(exc.__cause__):
            raise
        counted = False
        gone = True
    finally:
        reading.close()
        if progress is not None:
            progress["last_seen"] = reading.last_seen
        # also when the consumer stops early (a generator closed mid-slice: a row limit, a break) or an error
        # ends the read: what was decoded (records, skipped corrupt batches) up to there is counted, once
        if counted:
            with metrics._lock:
                metrics.slices += 1
                metrics._add_decode(reading.stats)
    if gone:
        if progress is not None:
            progress["unreliable"] = True
        yield from _lost_or_read_again(piece, options, metrics, "is gone since planning", read_chunk_bytes,
                                       map_window_bytes, again)


#: How far before a remote slice's start its read-ahead begins to serve the first-batch check's header walk from the
#: index entry before it (about one index interval, ``index.interval.bytes``: 4 KiB by default); further, the walk
#: reads on its own.
_WALK_AHEAD_BYTES = 1 << 20
# the bytes after a batch read to tell a preallocated file's zero-filled tail from a hole with batches after it
PREALLOCATED_PROBE_BYTES = 64 << 10


class _AheadReader:
    """``reader`` (a :class:`RandomAccessReader` of a remote file) with its reads served by ``ahead`` (the slice's
    :class:`ReadAhead`, which goes to the file itself outside its range): what the first-batch check reads through,
    so that its header comes from the block the read fetches anyway, not a request of its own."""

    def __init__(self, reader: RandomAccessReader, ahead: ReadAhead):
        self._reader = reader
        self._ahead = ahead

    def __getattr__(self, name):
        return getattr(self._reader, name)

    def read_at(self, position: int, length: int, *, cached: bool = True) -> bytes:
        ahead = self._ahead
        if ahead.start <= position < ahead.end:
            length = min(length, ahead.end - position)  # (a read past the range would go to the file whole)
        out = bytearray(max(0, min(length, self._reader.size - position)))
        return bytes(out[:self.read_into(position, out)])

    def read_into(self, position: int, buffer) -> int:
        return self._ahead.read_into(position, buffer)


def _open_planned_segment(piece: SegmentSlice, metrics: ScanMetrics,
                          options: ReadOptions) -> tuple[RandomAccessReader | None, str]:
    """The file planned for ``piece``, also when a live broker deleted, replaced or renamed it since planning; else
    None and why not.

    Kafka deletes a segment (retention, the log cleaner, a truncation) by renaming it ``<name>.deleted`` and
    removing that a minute later (``file.delete.delay.ms``), swaps a compacted segment in under the old name, and
    renames a ``.swap`` file it recovered to its ``.log`` name. So when the name is gone, or names another file than
    planned (told on the planning host by device and inode: :func:`~kafkaseg.storage.fs.same_file`), the planned
    file is looked for under those names. An object of another size than planned (object storage has no inodes) is
    another object too.

    A partition moved to another of the read's log dirs since planning (its folder renamed ``<tp>.<id>-delete``:
    :func:`~kafkaseg.planning.moved_partition`) left the planned file in that folder until the broker deletes it:
    it is read there (the same file, by its identity). A folder so renamed by a topic's deletion is not looked in."""
    try:
        reader = RandomAccessReader(piece.log_path, piece.filesystem)
    except LayoutError as exc:
        if not _is_missing(exc.__cause__):
            raise
        why = "is gone"
    else:
        # an object (S3, GCS) is replaced whole, never changed in place: another size is another object
        resized = not is_local(piece.filesystem) and piece.segment_size and reader.size != piece.segment_size
        # and a rolled segment never grows: a local one larger than listed is not the file the plan's byte ranges
        # describe (a follower truncated it into its active segment and appended, or its identity could not be
        # taken with its size): its offsets are read again from the files as they are now
        grown = (is_local(piece.filesystem) and not piece.is_last_segment and piece.segment_size
                 and reader.size > piece.segment_size)
        if same_file(piece.file_identity, reader) is not False and not resized and not grown:
            return reader, ""
        reader.close()
        why = (f"is another object ({reader.size} bytes, {piece.segment_size} when planned: a compacted segment "
               "uploaded by a sync?)" if resized else
               f"grew to {reader.size} bytes from {piece.segment_size} when listed, and a rolled segment never "
               "grows (truncated and written again since, or another file under its name)" if grown else
               "names another file (a compacted segment swapped in by the log cleaner?)")
    def moved_from() -> list[str]:  # (the partition moved to another of the read's log dirs: not a deletion)
        if piece.move_dirs and not exists(piece.partition_path, piece.filesystem) and moved_partition(
                piece.topic, piece.partition, piece.partition_path, piece.filesystem, piece.topic_id,
                piece.move_dirs, options, (piece.start_offset, piece.end_offset)) is not None:
            return move_sources(piece.partition_path, piece.filesystem, piece.topic, piece.partition)
        return []

    names = planned_file_names(piece.log_path, moved_from)
    tried = []
    for name in names:
        try:
            reader = RandomAccessReader(name, piece.filesystem)
        except LayoutError as exc:
            if not _is_missing(exc.__cause__):
                tried.append(f"{os.path.basename(name)}: {exc.__cause__}")
            continue
        if same_file(piece.file_identity, reader) is not False:
            if name.endswith(".deleted") and _truncated_below(piece):
                reader.close()
                return None, TRUNCATED_BELOW
            _vanished(piece, metrics, f"read from {os.path.basename(name)}")
            return reader, ""
        reader.close()
    return None, (f"{why} since planning, and it is not under {' or '.join(os.path.basename(n) for n in names)}"
                  + (f" ({'; '.join(tried)})" if tried else ""))


#: why :func:`_open_planned_segment` returns no file for a slice whose segment a follower's truncation deleted
TRUNCATED_BELOW = "truncated below"


def _truncated_below(piece: SegmentSlice) -> bool:
    """Whether the slice's segment, found only under its ``.deleted`` name, was deleted by a follower's truncation
    below its base offset (``UnifiedLog.truncateTo`` renames every segment from the truncation offset on
    ``.deleted`` and cuts the one holding it, which becomes the active segment): its base offset is at or past the
    plan's high watermark (a truncation is never below it), and the partition's folder now holds segments, all of
    them below its base offset. Retention deletes the oldest segments (a newer one, the active segment at least,
    stays), the cleaner merges segments below the active one: neither leaves the log ending before a segment it
    deleted. Then the segment's records were never acknowledged and are not the log's any more: not read from the
    ``.deleted`` file (the records after the cut, of the new generation, would be skipped)."""
    hw = piece.high_watermark
    if hw is None or piece.base_offset < hw or not piece.partition_path:
        return False
    try:
        entries = list_dir(piece.partition_path, piece.filesystem)
    except LayoutError:
        return False
    bases = []
    for entry in entries:
        for suffix in (".log", ".log.swap", ".log.cleaned"):
            stem = entry.name[:-len(suffix)]
            if entry.name.endswith(suffix) and stem.isdigit():
                bases.append(int(stem))
    return bool(bases) and max(bases) < piece.base_offset


def _truncated_tail(piece: SegmentSlice, metrics: ScanMetrics) -> None:
    """Report the slice whose segment a truncation deleted (:func:`_truncated_below`): nothing read, its bytes a
    truncated tail, as those of a segment cut while read."""
    _report_tail(piece, metrics, piece.start_position, piece.end_position)


def _lost_or_read_again(piece: SegmentSlice, options: ReadOptions, metrics: ScanMetrics, why: str,
                        read_chunk_bytes: int, map_window_bytes: int, again: bool) -> Iterator[pa.RecordBatch]:
    """The planned file of ``piece`` is gone (``why``): its offsets are read from the partition's current files
    (:func:`~kafkaseg.planning.plan_again_by_offset`), which hold what the log cleaner kept of them. The offsets
    that function finds gone, and all of them when the folder cannot be listed, the slice's own offsets are not
    known or this is already a read again (``again`` False), are lost (:func:`_lost`). Recorded in
    ``metrics.vanished_segments`` either way."""
    if not again or piece.slice_offsets is None:
        _lost(piece, options, metrics, why)
        return
    try:
        slices, lost = plan_again_by_offset(piece, options)
    except LayoutError as exc:
        _lost(piece, options, metrics, f"{why}, and its partition cannot be listed again ({exc})")
        return
    for first, end, reason in lost:
        _lost(piece, options, metrics, f"{why}, and {reason}", (first, end))
    lo, hi = piece.slice_offsets
    if sum(end - first for first, end, _ in lost) < sum(b - a for a, b in piece.outside_gaps(lo, hi)):
        names = ", ".join(os.path.basename(s.log_path) for s in slices)
        # (a tiered topic is never compacted: its offsets are in another copy, a local segment's in its tiered-storage
        # copy once local retention deleted it)
        held = ("tiered-storage copy holds them: local retention deleted the segment, or a copy was superseded"
                if any(s.rolled for s in slices) else "compacted copy holds what the log cleaner kept of them")
        _vanished(piece, metrics, f"{why}: its offsets read again from {names} (a {held})" if slices
                  else f"{why}: its offsets read again, and none of the "
                  "partition's files holds any of them now (compacted away, or deleted where that cannot be told "
                  "from a compaction: below the cleaner checkpoint, or on another host)")
    for again_piece in slices:
        yield from _read_slice(again_piece, options, metrics, read_chunk_bytes, map_window_bytes, again=False)


def _is_missing(cause: BaseException | None) -> bool:
    """Whether a filesystem error says the file is not there (pyarrow's S3 client names it in the message)."""
    return isinstance(cause, FileNotFoundError) or (
        isinstance(cause, OSError) and any(word in str(cause) for word in (
            "RESOURCE_NOT_FOUND", "NO_SUCH_KEY", "NoSuchKey", "Path does not exist")))


def _lost(piece: SegmentSlice, options: ReadOptions, metrics: ScanMetrics, why: str,
          lost: tuple[int, int] | None = None) -> None:
    """The planned segment of ``piece`` is gone: a :class:`~kafkaseg.errors.DataLossError` naming its offsets (or
    ``lost``, those of them deleted), or with ``failOnDataLoss=false`` a skip recorded in
    ``metrics.vanished_segments``."""
    lost = piece.segment_offsets if lost is None else lost
    if piece.rolled:  # a tiered-storage copy's slice
        deleted = ("a remote copy deleted from the bucket (by remote retention or the topic's deletion, or by a "
                   "lifecycle rule or sync)")
    elif piece.remote_path is not None or piece.copy_states is not None:
        # a log dir's segment of a tiered topic, which is never compacted
        deleted = "a live broker or a sync deleted it (local retention, or the topic's deletion)"
    else:
        deleted = "a live broker or a sync deleted it (retention, the log cleaner, or the topic's deletion)"
    message = (f"{redact(piece.log_path)} {why}: {deleted}, so offsets [{lost[0]}, {lost[1]}) of "
               f"{piece.topic}-{piece.partition} in it are lost to this read")
    if options.fail_on_data_loss:
        raise DataLossError(message + " (set failOnDataLoss=false to skip them)")
    _vanished(piece, metrics, "skipped (failOnDataLoss=false)", lost)


def _vanished(piece: SegmentSlice, metrics: ScanMetrics, what: str, offsets: tuple[int, int] | None = None) -> None:
    """Record in ``metrics.vanished_segments`` what became of a segment gone since planning (of ``offsets`` of it,
    default all), once per segment (not per slice of it)."""
    entry = (piece.log_path, *(piece.segment_offsets if offsets is None else offsets), what)
    with metrics._lock:
        if entry not in metrics.vanished_segments:
            metrics.vanished_segments.append(entry)


def _record_facts(data: bytes, header, options: ReadOptions) -> list[tuple]:
    """:func:`~kafkaseg.offset_outlier.record_facts` under the read's options."""
    return record_facts(data, header, verify_crc=options.verify_crc,
                        max_decompressed_bytes=options.max_decompressed_batch_bytes)


class _SliceDecoder:
    """One slice's decoding state (last offset seen, stats, constant columns) shared by its two read paths."""

    def __init__(self, piece: SegmentSlice, options: ReadOptions, metrics: ScanMetrics):
        self.piece = piece
        self.options = options
        self.metrics = metrics
        self.schema = options.schema
        self.base_request = _request(piece, options)
        self.kernel = _decode.decode
        self.stats = DecodeStats()
        self.emitted = False  # whether a record batch of this slice was handed out
        self.constants = _ConstantColumns(piece)
        # Every offset in a segment is at least its base offset (the file name): content from elsewhere, e.g. a
        # segment copied over another, fails the kernels' monotonic-offset check on its first batch.
        self.last_seen = piece.base_offset - 1
        # whether last_seen is the last offset of a batch walked (or the slice starts at its segment's start): else
        # the offsets before the slice's first batch are unknown here, and a problem there says none
        self.walked = piece.start_position == 0
        self.finished = False  # past the end offset, corrupt framing skipped, or a tail reported
        self.past_end = False  # finished by a batch at or past the slice's end offset (its segment's offsets end)
        self.resume_at: int | None = None  # where the read goes on after bad framing (an offset index entry)
        self._entries: ResumptionEntries | None = None  # the segment's offset index, loaded at the first bad framing
        # the segment's offset index for the error path's judgements (_offset_index), loaded when first needed
        self._index: OffsetIndex | None = None
        self._index_loaded = False
        # the bounds of the error path's CRC-checked walks (offset_outlier)
        self._walk_limits = {"verify_crc": options.verify_crc, "max_batch_bytes": options.max_batch_bytes,
                             "max_decompressed_bytes": options.max_decompressed_batch_bytes}
        # whether the file read is the one planned (told on the planning host only): then no log cleaner can have
        # merged the next segment into it, and offsets at or past the next segment's base in it are corruption
        self.planned_file = False
        self.past_end_at: int | None = None  # where a batch at or past the slice's end offset stopped the read
        self.tail_at: int | None = None  # where a partial batch ending the segment stopped the read (a tail)
        self.shrank = False  # the file ended before the planned end while it was read (a live broker truncating)
        self.straddler_skipped = False  # a batch across the next segment's base counted as skipped already
        # the offsets the slice leaves out (SegmentSlice.offset_gaps), as sorted arrays of gap starts and ends
        self.gap_starts = np.array([lo for lo, _ in piece.offset_gaps], np.int64)
        self.gap_ends = np.array([hi for _, hi in piece.offset_gaps], np.int64)
        # the next slice's first offset in the segment, for a slice read past the high watermark: a batch of this
        # slice reaching it is a new generation's, which a truncation let in (_within_slice); else None
        self.next_slice_offset: int | None = None
        if piece.high_watermark is not None and piece.slice_offsets is not None \
                and piece.slice_offsets[1] < piece.segment_offsets[1]:
            self.next_slice_offset = piece.slice_offsets[1]

    def decode(self, view, pos: int, end: int, reader: RandomAccessReader, peek=None):
        """The kernel's decode of ``view`` (file position ``pos``; the slice ends at ``end``). When a batch's
        offsets go back (found by the kernel, or at the view's end by a look at the next header: one 17-byte read
        per decode), which batch holds the corrupt offset field is judged on the batches around it
        (:func:`~kafkaseg.offset_outlier.outlier_region`): when that is an earlier one than the kernel blames (a
        base offset raised over the batches after it), the view is decoded up to it, and it is raised or counted
        as skipped (the read goes on after it), never returned at offsets its records never had. ``peek(at)``: the
        bytes from file position ``at`` the caller's buffer already holds (the look is read from the file only
        past them: on object storage, a request of its own)."""
        request = replace(self.base_request, base_position=pos, check_offsets_after=self.last_seen,
                          bytes_after=end - pos - len(view))
        try:
            result = self.kernel(view, request)
        except CorruptBatchError as err:
            if err.position is None or not went_back(err.detail):
                raise
            region = self._outlier(reader, pos, err.position, end)
            if region is None:
                raise
            return self._up_to_outlier(view, request, region)
        step = min((problem[1] for problem in result.stats.problems if went_back(problem[2])), default=None)
        if (step is None and result.stop not in (STOP_PAST_END, STOP_CORRUPT) and result.last_offset > self.last_seen
                and goes_back_after(SegmentReader(self.piece.log_path, opened=reader), pos + result.consumed,
                                    result.last_offset, None if peek is None else peek(pos + result.consumed))):
            step = pos + result.consumed
        if step is None:
            return result
        region = self._outlier(reader, pos, step, end)
        return result if region is None else self._up_to_outlier(view, request, region)

    @staticmethod
    def _peek(chunk: bytearray, buf_pos: int, filled: int, at: int, source) -> bytes:
        """The 17 bytes at file position ``at`` for the look at the next batch's offset field: from the positioned
        reads' buffer (``chunk``, file position ``buf_pos``, ``filled`` bytes valid) when it holds them, else read
        through ``source`` (a remote file's read-ahead serves them from the block the next read takes anyway)."""
        i = at - buf_pos
        if 0 <= i and i + 17 <= filled:
            return bytes(chunk[i:i + 17])
        out = bytearray(17)
        got = source.read_into(at, memoryview(out))
        return bytes(out[:got])

    def check_start(self, reader: RandomAccessReader, end: int) -> int:
        """Where the read of a slice starting mid-segment begins, after judging its first batch as a read of the
        whole segment judges it (a base offset, outside the CRC, lowered there would otherwise be checked against
        the segment's base only and read at offsets its records never had). The offset index entry the slice starts
        at holds the last offset of the append written there (``LogSegment.append``): a first batch ending at it
        follows the batch before it, and nothing more is read (one header). Else (an old broker's entry, a
        multi-batch append's, a stale one, no entry) the headers from the entry before it
        (:attr:`~kafkaseg.planning.SegmentSlice.walk_from`, about one index interval) say whether the batch goes
        back below one before it; only then is the step judged from the batch it goes back below
        (:func:`~kafkaseg.offset_outlier.outlier_region`, the whole read's rule and floor): the slice then checks
        its first batch against the offsets the whole read has before it (the kernels blame it, or the region left
        out before it is the previous slice's), or, starting inside a region left out, skips (or raises at) its
        part of it."""
        piece, options = self.piece, self.options
        start = piece.start_position
        if start == 0 or start >= end:
            return start
        segment = SegmentReader(piece.log_path, opened=reader)
        limits = self._walk_limits
        moved = None
        try:
            header = segment.header_at(start, max_batch_bytes=options.max_batch_bytes)
            if header is None:
                return start
            if header.last_offset == piece.start_entry:
                if self._starts_as_planned(header):
                    return start
                moved = (f"the batch at the slice's start ends at offset {piece.start_entry}, as the offset index "
                         f"entry there named when planned, but holds offsets {header.base_offset}.."
                         f"{header.last_offset}, where the planned one started at offset {piece.slice_offsets[0]}")
                if self.rewritten(reader, start, moved):
                    return start
            if self._rewritten_start(reader, segment, header, end):
                return start
            first = (batch_first_offset(segment, start, options.max_batch_bytes,
                                        options.max_decompressed_batch_bytes)
                     if header.magic < 2 and header.codec else header.base_offset)
        except KafkaSegError:
            return start  # (the read meets the damage itself)
        if moved is not None:
            # no truncation past the high watermark explains it (below it, or the file unchanged since planning):
            # read as planned, it would return offsets the slices before it returned
            err = CorruptBatchError(f"{moved}; nothing rewrites a segment in place below the high watermark "
                                    f"{piece.high_watermark}: the file changed under the read, or its offset field "
                                    f"is corrupt", path=piece.log_path, position=start)
            if options.on_corruption != "skip":
                raise err
            self._count_skip(start, header.size, err.detail, piece.slice_offsets[0], piece.start_entry + 1)
            return start + header.size
        walk_from = piece.walk_from if piece.walk_from is not None else self._entry_before(start)
        high = self._highest_before(segment, walk_from, start)
        if high is None and walk_from:  # (an entry pointing inside a batch: from the segment's start)
            high = self._highest_before(segment, 0, start)
        if first is None or high is None or first > high:
            return start
        # a step at the slice's first batch: judged from the batch it goes back below, as the whole read does
        # (from an index entry far enough back that the batch it goes back below is not the walk's first: the
        # offsets before that one are what its judgement is made above; an entry whose walk finds no batch, one
        # pointing inside a batch, is passed over too)
        walk_from = self._entry_before(start)
        found = last_batch_before(segment, walk_from, start, piece.base_offset - 1, **limits)
        while (found is None or found[0] == walk_from) and walk_from > 0:
            walk_from = self._entry_before(walk_from)
            found = last_batch_before(segment, walk_from, start, piece.base_offset - 1, **limits)
        if found is None:
            return start
        region = outlier_region(segment, *found[:2], limit=piece.segment_offsets[1],
                                next_base=piece.next_base_offset, **limits)
        self.walked = True
        if region is None:  # the batch before it stands: the kernels judge the first batch against it
            self.last_seen = found[2]
            return start
        self.last_seen = found[1]
        if region.end <= start:  # (the previous slice's region: the first batch follows the offsets before it)
            return start
        # the slice starts inside the region: the previous slice raised at it, or skipped its part and named it
        # whole (unless this batch's own index entry vouched for it there: then this part is named here)
        if options.on_corruption != "skip":
            raise CorruptBatchError(region.what, path=piece.log_path, position=region.position)
        batches, size = region.within(start, end)
        self._count_skip(start, size, region.what, region.first_offset, region.end_offset, batches=batches,
                         named=not self._names_whole_region(reader, start))
        if region.end >= end:
            self.finished = True
        return min(region.end, end)

    def _starts_as_planned(self, header) -> bool:
        """Whether the slice's first batch (``header``, ending at the planned index entry's offset) starts at the
        offset planning read there (:attr:`~kafkaseg.planning.SegmentSlice.slice_offsets`), when the slice reads
        past the high watermark: a new generation's batch a truncation let in may end at the entry's offset and
        start lower, at offsets an earlier slice returned from the old batches. True when that cannot be told (no
        high watermark, a legacy batch, no planned offsets, or the slice starting the read's range, whose first
        offset is the range's)."""
        piece = self.piece
        if piece.high_watermark is None or header.magic < 2 or piece.slice_offsets is None:
            return True
        first = piece.slice_offsets[0]
        return first <= piece.start_offset or header.base_offset == first

    def _rewritten_start(self, reader: RandomAccessReader, segment: SegmentReader, header, end: int) -> bool:
        """Whether the slice's first batch (``header``, not ending at the planned index entry's offset) is a live
        broker's rewrite of the log past the high watermark (:meth:`rewritten`: the slice is then finished). The
        entry holds the last offset of the append written at the slice's start (``LogSegment.append``), so the
        batches from there, as planned, reach it exactly; new batches the truncation let in at the same offsets
        need not (an earlier slice may have returned their offsets from the old ones)."""
        piece = self.piece
        entry = piece.start_entry
        if piece.high_watermark is None or entry is None or entry < piece.high_watermark:
            return False
        try:
            for batch in segment.iter_headers(header.position, end, max_batch_bytes=self.options.max_batch_bytes):
                if batch.last_offset >= entry:
                    if batch.last_offset == entry:
                        return False
                    break
        except KafkaSegError:
            pass
        return self.rewritten(reader, piece.start_position, (
            f"the batch at the slice's start holds offsets {header.base_offset}..{header.last_offset}, and the batches "
            f"from it do not end at offset {entry}, which the offset index entry there named when planned"))

    def _highest_before(self, segment: SegmentReader, start: int, end: int) -> int | None:
        """The highest last offset of the batches in bytes ``[start, end)`` by their headers (the segment's base - 1
        when none), None when they cannot be walked."""
        high = self.piece.base_offset - 1
        try:
            for before in segment.iter_headers(start, end, max_batch_bytes=self.options.max_batch_bytes):
                high = max(high, before.last_offset)
        except KafkaSegError:
            return None
        return high

    def _offset_index(self) -> OffsetIndex | None:
        """The segment's offset index file (None without one, or when it cannot be loaded). Error path only: loaded
        once per slice."""
        if not self._index_loaded:
            self._index_loaded = True
            piece = self.piece
            try:
                if piece.index_path:
                    self._index = OffsetIndex.load(piece.index_path, piece.base_offset, piece.filesystem,
                                                   window=piece.index_window)
            except KafkaSegError:
                pass
        return self._index

    def _entry_before(self, position: int) -> int:
        """The position of the offset index entry before ``position`` of this segment (0 without one)."""
        index = self._offset_index()
        if index is None:
            return 0
        below = int(np.searchsorted(index.positions, position, side="left")) - 1
        return int(index.positions[below]) if below >= 0 else 0

    def _outlier(self, reader: RandomAccessReader, pos: int, step: int, end: int):
        """The region of batches whose offset field is corrupt (:func:`~kafkaseg.offset_outlier.outlier_region`)
        when the batch a step at ``step`` goes back below is (decoded from ``pos``, after ``last_seen``), else None
        (the kernel's verdict stands)."""
        piece = self.piece
        segment = SegmentReader(piece.log_path, opened=reader)
        limits = self._walk_limits
        floor = self.last_seen
        if not self.walked:  # (a slice starting mid-segment: the offsets before it are another slice's)
            floor = self._offset_after_batch_before(reader, piece.start_position) - 1
        found = batch_before(segment, pos, step, floor, **limits)
        if found is None:
            return None
        region = outlier_region(segment, *found, limit=piece.segment_offsets[1], next_base=piece.next_base_offset,
                                **limits)
        if region is not None and region.end > end and not self._names_whole_region(reader, end):
            region = outlier_region(segment, *found, limit=piece.segment_offsets[1],
                                    next_base=piece.next_base_offset, region_end=end, **limits)
        return region if region is not None and region.position < end else None

    def _names_whole_region(self, reader: RandomAccessReader, position: int) -> bool:
        """Whether a region of batches left out across the slice boundary at ``position`` is named whole (one
        problem, as a read of the whole segment names it) by the slice it starts in, the next slice counting its
        part without naming it: when the segment's offset index file has an entry at ``position`` (slices are cut
        at entries) that does not hold the last offset of the batch there. An entry that does vouches for that
        batch, which a slice starting there reads without judging it (:meth:`check_start`): the region stops at the
        boundary; and so it does at a boundary that is no entry (offset ranges, a start found by a walk), whose
        slices name their own parts. Error path only: one index load and one header."""
        piece = self.piece
        index = self._offset_index()
        if index is None:
            return False
        try:
            k = int(np.searchsorted(index.positions, position, side="left"))
            if k >= len(index.positions) or int(index.positions[k]) != position:
                return False
            header = SegmentReader(piece.log_path, opened=reader).header_at(
                position, max_batch_bytes=self.options.max_batch_bytes)
        except KafkaSegError:
            return False
        return header is not None and header.last_offset != int(index.offsets[k])

    def _up_to_outlier(self, view, request: DecodeRequest, region):
        """Raise at ``region`` (strict), or decode ``view`` up to it and count it as skipped, the read going on
        after it (lenient)."""
        if not request.lenient:
            err = CorruptBatchError(region.what, path=self.piece.log_path, position=region.position)
            err.outlier_region = region  # (another copy stands in for all of its batches: _after_corrupt_batch)
            raise err
        cut = region.position - request.base_position
        result = self.kernel(view[:cut], replace(request, bytes_after=request.bytes_after + len(view) - cut))
        if result.consumed != cut or result.stop in (STOP_PAST_END, STOP_CORRUPT, STOP_PARTIAL):
            return result  # (stopped before it: the next decode meets the step again)
        stats = result.stats
        # (a region running past the slice's end: the next slice, starting inside it, counts the rest; the problem
        # names it whole, as a read of the whole segment does)
        end = request.base_position + len(view) + request.bytes_after
        batches, size = region.within(region.position, end)
        stats.corrupt_batches += batches
        stats.corrupt_bytes += size
        if len(stats.problems) < MAX_PROBLEMS:
            stats.problems.append(Problem(self.piece.log_path, region.position, region.what, region.size,
                                          region.first_offset, region.end_offset))
        self.resume_at = min(region.end, end)
        return result

    def accept(self, result, pos: int, end: int, reader: RandomAccessReader) -> pa.RecordBatch | None:
        """Take a decode result (decoded at ``pos``; the slice ends at ``end``): stats, last offset and stop
        reason; the record batch to yield, if any."""
        next_base = self.piece.next_base_offset
        if next_base is not None and result.last_offset >= next_base and self.planned_file and result.num_rows:
            result = self._without_straddler(reader, result, pos, next_base)
        if not self.walked:
            if result.stats.problems:
                unknown = self.last_seen + 1  # (the kernel's first offset for a problem before any batch walked)
                result.stats.problems[:] = [
                    problem._replace(first_offset=None)
                    if isinstance(problem, Problem) and problem.first_offset == unknown else problem
                    for problem in result.stats.problems]
            self.walked = result.last_offset > self.last_seen
        if self.next_slice_offset is not None and result.last_offset >= self.next_slice_offset:
            result = self._within_slice(reader, result, pos)
        self.last_seen = result.last_offset
        if result.stop == STOP_CORRUPT:
            self.resume_at = self._after_bad_framing(result, pos + result.stop_position, end)
        self.stats.add(result.stats)
        if result.stop == STOP_PAST_END or (result.stop == STOP_CORRUPT and self.resume_at is None):
            self.finished = True
            self.past_end = result.stop == STOP_PAST_END
        if len(self.gap_starts) and result.num_rows:
            result = self._without_gaps(result)
        if not result.num_rows:
            return None
        self.metrics.output_batches += 1
        self.emitted = True
        return _record_batch(self.constants, result.columns, result.num_rows, self.schema)

    def _within_slice(self, reader: RandomAccessReader, result, pos: int):
        """``result`` (decoded at ``pos``) holds offsets at or past the next slice's first (``next_slice_offset``),
        in a slice read past the high watermark: when the batch reaching them is a rewrite (:meth:`rewritten`: the
        slice's bytes, planned to end below that offset, hold another generation's batches), ``result`` up to that
        batch, the slice ending there; the next slice, read before the truncation, returned those offsets from the
        old batches (or, read after it, judges its own start). Else ``result`` as it is. Error path only: one walk of
        the decoded bytes' headers."""
        try:
            crossing = next((header for header in SegmentReader(self.piece.log_path, opened=reader).iter_headers(
                pos, pos + result.consumed, max_batch_bytes=self.options.max_batch_bytes)
                if header.last_offset >= self.next_slice_offset), None)
        except KafkaSegError:
            return result
        if crossing is None or crossing.magic < 2:
            return result
        seen = self.last_seen
        self.last_seen = max(seen, crossing.base_offset - 1)
        if not self.rewritten(reader, crossing.position, (
                f"the batch here holds offsets {crossing.base_offset}..{crossing.last_offset}, reaching offset "
                f"{self.next_slice_offset}, the next slice's first when planned")):
            self.last_seen = seen
            return result
        offsets = result.columns["offset"].to_numpy(zero_copy_only=False)
        kept = int(np.searchsorted(offsets, crossing.base_offset))
        result.stats.records -= result.num_rows - kept
        return replace(result, columns={name: column.slice(0, kept) for name, column in result.columns.items()},
                       num_rows=kept, last_offset=self.last_seen)

    def _without_gaps(self, result):
        """``result`` without the records whose offsets are in the slice's ``offset_gaps`` (not counted as
        records)."""
        offsets = result.columns["offset"].to_numpy(zero_copy_only=False)
        at = np.searchsorted(self.gap_starts, offsets, side="right") - 1
        keep = (at < 0) | (offsets >= self.gap_ends[np.maximum(at, 0)])
        kept = int(np.count_nonzero(keep))
        if kept == result.num_rows:
            return result
        self.stats.records -= result.num_rows - kept
        mask = pa.array(keep)
        return replace(result, columns={name: column.filter(mask) for name, column in result.columns.items()},
                       num_rows=kept)

    def _without_straddler(self, reader: RandomAccessReader, result, pos: int, next_base: int):
        """``result`` without the records of a v2 batch it decoded that straddles the next segment's base offset
        (see :meth:`check_next_base`), which raises, or with ``onCorruption=skip`` is counted as skipped: its
        records, read as they are, would carry offsets they never had. Rare (a batch walked at or past the next
        base): one walk of the decoded bytes' headers."""
        straddler = None
        try:
            for header in SegmentReader(self.piece.log_path, opened=reader).iter_headers(
                    pos, pos + result.consumed, max_batch_bytes=self.options.max_batch_bytes):
                if header.last_offset >= next_base:
                    straddler = header
                    break
        except KafkaSegError:
            return result  # (check_next_base judges the bytes after the read)
        if straddler is None or not self._corrupt_straddler(straddler, next_base):
            return result
        problem = self._straddle_problem(straddler, next_base)
        if self.options.on_corruption != "skip":
            raise CorruptBatchError(problem, path=self.piece.log_path, position=straddler.position)
        self._count_skip(straddler.position, straddler.size, problem,
                         self._offset_after_batch_before(reader, straddler.position), next_base)
        self.straddler_skipped = True
        offsets = result.columns["offset"]
        kept = int(np.searchsorted(offsets.to_numpy(zero_copy_only=False), straddler.base_offset))
        return replace(result, columns={name: column.slice(0, kept) for name, column in result.columns.items()},
                       num_rows=kept)

    def _corrupt_straddler(self, header, next_base: int) -> bool:
        """Whether ``header``, a batch of this slice reaching the next segment's base offset, is a v2 batch across
        it whose base offset must be corrupt: the segment's last batch (a corrupt base offset inside a segment
        goes back below the batch after it, which the decoders catch), and the next segment's first batch starts
        at its name, so the name is right. (A file renamed below its first offset, whose name is wrong, is judged
        by :meth:`check_next_base`.)"""
        if not (header.magic >= 2 and header.base_offset < next_base <= header.last_offset
                and header.end == self.piece.segment_size):
            return False
        path = fs_join(self.piece.partition_path, f"{next_base:020d}.log")
        try:
            with SegmentReader(path, self.piece.filesystem) as following:
                head = following.header_at(0, max_batch_bytes=self.options.max_batch_bytes)
        except KafkaSegError:
            return False
        return head is not None and head.magic >= 2 and head.base_offset == next_base

    @staticmethod
    def _straddle_problem(header, next_base: int) -> str:
        return (f"the batch here holds offsets {header.base_offset}..{header.last_offset}, across offset "
                f"{next_base}, the base offset of the partition's next segment: Kafka rolls segments between "
                "batches, and its cleaner keeps each batch's offsets, so this base offset, which the CRC does not "
                "cover, is corrupt (its records would read with offsets they never had)")

    def resume(self, reader: RandomAccessReader, result, pos: int, end: int) -> tuple[int, int]:
        """Where the next decode starts after ``result`` (decoded at ``pos``) and how many bytes it needs there: 0
        for whatever is available, also when a partial batch is the slice's tail (reported; the slice is
        finished)."""
        batch_start = pos + result.stop_position
        pos += result.consumed
        if self.resume_at is not None:
            pos, self.resume_at = self.resume_at, None
        if result.stop == STOP_PAST_END:
            self.past_end_at = batch_start
        if result.stop == STOP_PAST_END and pos == end and end < self.piece.segment_size:
            self._check_after_slice(reader, batch_start, end)
        if result.stop != STOP_PARTIAL:
            return pos, 0
        needed = result.next_batch_size if result.next_batch_size > 0 else HEADER_PREFIX_SIZE
        if pos + needed > end:
            return self._past_the_end(reader, pos, end)
        return pos, needed

    def _after_bad_framing(self, result, bad: int, end: int) -> int | None:
        """A lenient decode met framing at ``bad`` it could not step over and counted the rest of the slice as
        corrupt. When the segment's offset index has an entry past ``bad`` whose batch checks out (at or before the
        slice's end, which is itself such an entry or the segment's end), only the bytes up to it are lost: the
        count and the problem say so, and the position is returned when the read resumes there (before ``end``)."""
        found = self._next_checked_entry(bad, end)
        if found is None:
            return None
        position, first = found
        result.stats.corrupt_bytes -= end - position
        where = (self.piece.log_path, bad)
        result.stats.problems[:] = [
            _resumed(problem, problem[2].replace(REST_SKIPPED, self._skipped_to(position, first)), position - bad,
                     first) if (problem[0], problem[1]) == where else problem for problem in result.stats.problems]
        return position if position < end else None

    def _skipped_to(self, position: int, first: int) -> str:
        """How a problem says where a lenient read resumed, and which offsets of the read it lost."""
        lost_from = max(self.last_seen + 1, self.piece.start_offset)
        lost = f", offsets {lost_from}..{first - 1} not read" if first > lost_from else ""
        return f"skipped to byte {position}, the next offset index entry whose batch checks out{lost}"

    def _next_checked_entry(self, bad: int, end: int) -> tuple[int, int] | None:
        if self._entries is None:
            piece = self.piece
            self._entries = ResumptionEntries(piece.log_path, piece.index_path, piece.base_offset,
                                              piece.next_base_offset, piece.filesystem,
                                              max_batch_bytes=self.options.max_batch_bytes,
                                              max_decompressed_bytes=self.options.max_decompressed_batch_bytes,
                                              index_window=piece.index_window)
        return self._entries.next_checked(bad, end, self.last_seen)

    def _skipped_just_before(self, reader: RandomAccessReader, pos: int) -> bool:
        """Whether the batch right before ``pos`` was a corrupt one this slice skipped (its offsets unknown, so
        ``last_seen`` may be short of where the data really is): the last problem's batch ends at ``pos``. True
        when that cannot be told (skips beyond the problems kept, or an unreadable length)."""
        if not self.stats.corrupt_batches:
            return False
        mine = [at for path, at, _ in self.stats.problems if path == self.piece.log_path and at < pos]
        if not mine or len(self.stats.problems) >= MAX_PROBLEMS:
            return True
        at = max(mine)
        prefix = reader.read_at(at, LOG_OVERHEAD)  # baseOffset, length: the batch is 12 + length bytes
        return len(prefix) < LOG_OVERHEAD or at + LOG_OVERHEAD + int.from_bytes(prefix[8:12], "big",
                                                                                signed=True) == pos

    def _past_the_end(self, reader: RandomAccessReader, pos: int, end: int) -> tuple[int, int]:
        """A batch at ``pos`` runs past the slice's end: a tail (reported, the slice is finished), or corruption
        (:func:`_partial_problem`): raised, or with ``onCorruption=skip`` counted, and the read resumes at the
        segment's next checked offset index entry before ``end`` if there is one, as after bad framing."""
        problem = _partial_problem(self.piece, reader.size, pos, end, self.last_seen,
                                   self._skipped_just_before(reader, pos))
        if problem is None:
            _report_tail(self.piece, self.metrics, pos, end)
            self.finished = True
            self.tail_at = pos
            return pos, 0
        if pos == 0 and self._torn_first_batch_lost(reader, end):
            return end, 0
        if self.rewritten(reader, pos, problem):
            return pos, 0
        err = TruncatedDataError(problem, path=self.piece.log_path, position=pos)
        if self.options.on_corruption != "skip":
            raise err
        found = self._next_checked_entry(pos, end)
        to = end if found is None else found[0]
        self._count_skip(pos, to - pos, err.detail if found is None else f"{err.detail}; {self._skipped_to(*found)}",
                         self.first_unread(), None if found is None else found[1])
        if to >= end:
            self.finished = True
            return end, 0
        return to, 0

    def before_mismatch(self, err: KafkaSegError, view, pos: int, end: int, reader: RandomAccessReader):
        """After a decode of ``view`` (at ``pos``) raised ``err``: None when it is a batch at ``pos`` rewritten past
        the high watermark (:meth:`rewritten`: the slice is finished), else the decode of the bytes before the
        batch it blames when there are any (the next decode starts at that batch and is judged the same way, once
        the batches before it are accepted), else ``err`` raised."""
        if not isinstance(err, CorruptDataError) or self.piece.high_watermark is None:
            raise err
        at = err.position
        if at == pos and self.rewritten(reader, pos, err.detail, crc_mismatch=isinstance(err, CrcMismatchError)):
            return None
        if at is None or not pos < at < pos + len(view):
            raise err
        try:
            result = self.decode(view[:at - pos], pos, end, reader)
        except KafkaSegError:
            raise err from None
        if not result.consumed:
            raise err
        return result

    def lenient_mismatch(self, result, view, pos: int, end: int, reader: RandomAccessReader):
        """Under ``onCorruption=skip``, after a decode of ``view`` (at ``pos``) that counted corrupt batches
        (``result``): what :meth:`before_mismatch` does with the error a strict decode raises. None when the first
        batch counted is at ``pos`` and a rewrite past the high watermark (:meth:`rewritten`, the same evidence: the
        slice is finished), else the decode of the bytes before it when that may be one (the next decode starts at
        it and is judged the same way), else ``result``: corruption, counted."""
        piece = self.piece
        hw = piece.high_watermark
        if hw is None:
            return result
        mine = [problem for problem in result.stats.problems if problem[0] == piece.log_path and problem[1] >= pos]
        if not mine:
            return result
        first = min(mine, key=lambda problem: problem[1])
        at, what = first[1], first[2]
        if at == pos:
            error = getattr(first, "error", None)
            crc_mismatch = error is not None and issubclass(error, CrcMismatchError)
            return None if self.rewritten(reader, pos, what, crc_mismatch=crc_mismatch) else result
        known = getattr(first, "first_offset", None)
        if (not pos < at < pos + len(view) or (known is not None and known < hw)
                or not self._changed_since_planning(reader)):
            return result
        try:
            before = self.decode(view[:at - pos], pos, end, reader)
        except KafkaSegError:
            return result
        return before if before.consumed and not before.stats.corrupt_batches else result

    def rewritten(self, reader: RandomAccessReader, pos: int, problem: str, *, crc_mismatch: bool = False) -> bool:
        """Whether the batch at ``pos`` that does not match the plan (``problem``: it runs past the slice's end,
        goes back, its framing is not a batch's) is a live broker's rewrite of the log past the high watermark: the
        slice reads past it (:attr:`~kafkaseg.planning.SegmentSlice.high_watermark`), every offset below it is
        read already (the batches before ``pos`` reach it, or the slice started at an index entry past it), and the
        file changed since planning (its size, or its ctime past the plan's listing). A follower truncation
        (never below the high watermark) cut the segment there and the new leader's batches took the same offsets
        in other bytes. Then the slice ends at ``pos``, reported (``rewritten_tails``, and a truncated tail): those
        records were never acknowledged, and the plan's bytes past there are gone. Else (False) the mismatch is
        corruption, as before; so is a CRC mismatch (``crc_mismatch``: the decode's error, or the problem a lenient
        decode counted) that a fresh read shows again (:meth:`_crc_fails_as_read`, read only once the checks above
        hold)."""
        piece = self.piece
        hw = piece.high_watermark
        if hw is None:
            return False
        reached = self.last_seen + 1
        if not self.walked and piece.start_entry is not None and pos == piece.start_position:
            reached = max(reached, piece.start_entry)
        if reached < hw or not self._changed_since_planning(reader):
            return False
        if crc_mismatch and self._crc_fails_as_read(reader, pos):
            return False
        _report_tail(piece, self.metrics, pos, max(pos, min(piece.end_position, reader.size)))
        with self.metrics._lock:
            self.metrics.rewritten_tails.append((piece.log_path, pos, (
                f"the read past the high watermark {hw} stopped here: the broker truncated the log at or past it "
                f"and rewrote it while it was read (the batch here no longer matches the plan: {problem}); the "
                f"records from offset {reached} on, never acknowledged, were not read")))
        self.finished = True
        return True

    def _crc_fails_as_read(self, reader: RandomAccessReader, pos: int) -> bool:
        """Whether the CRC mismatch at ``pos`` is one a fresh read of the file shows again, in a batch that
        is not the file's last: bytes that stay corrupt with whole batches after them, which no truncation and
        rewrite explains (a rewrite leaves whole batches with their CRCs; only the append being written, the last
        batch, can fail one while read). Such a batch is corruption even past the high watermark of a file that
        changed (a live broker's segment grows all the time). A batch with zeros after it to the end of the file,
        or for :data:`PREALLOCATED_PROBE_BYTES` (``file.preallocate``'s zero-filled tail), is the last too."""
        from kafkaseg.wire.batch import V2_HEADER_SIZE, read_header
        from kafkaseg.wire.crc import crc_is_valid

        size, _ = reader.change_stamp()
        try:
            head = reader.read_at(pos, V2_HEADER_SIZE, cached=False)
            header = read_header(head, 0, max_batch_size=self.options.max_batch_bytes, available=size - pos)
            if pos + header.size >= size:
                return False  # the last batch: an append still being written
            after = reader.read_at(pos + header.size, min(size - pos - header.size, PREALLOCATED_PROBE_BYTES),
                                   cached=False)
            if after and not any(after):
                return False  # the last batch of a preallocated file (zeros after it): an append being written
            data = reader.read_at(pos, header.size, cached=False)
            return len(data) == header.size and not crc_is_valid(data, header)
        except (KafkaSegError, OSError, ValueError):
            return False

    def _changed_since_planning(self, reader: RandomAccessReader) -> bool:
        """Whether the slice's file was written or truncated since the plan listed it: another size than planned,
        or (a local file) a ctime from the listing on (less the coarse clock's tick)."""
        size, ctime = reader.change_stamp()
        if size != self.piece.segment_size:
            return True
        listed = self.piece.listed_at_ns
        return bool(ctime) and listed is not None and ctime >= listed - CTIME_TICK_NS

    def _torn_first_batch_lost(self, reader: RandomAccessReader, end: int) -> bool:
        """A rolled segment's first batch runs past the end of its file (no whole batch in it), which is whole as
        planned: its readable end is byte 0, as an emptied segment's, and the same rule judges the offsets after
        it (:func:`_judge_rolled_cut`, planning's ``_empty_segment_loss``): those its own indexes and the recovery
        point prove lost raise :class:`~kafkaseg.errors.LostTailError` at byte 0, or (failOnDataLoss=false,
        onCorruption=skip) are listed in ``metrics.lost_tails`` with the torn bytes, the rest in
        ``missing_offsets`` (none below the cleaner checkpoint: compaction's), and the slice is finished (True). False when nothing proves them lost: the torn batch
        stays corruption (a corrupt length field looks the same)."""
        piece = self.piece
        next_base = piece.next_base_offset
        if (next_base is None or piece.rolled or self.last_seen >= piece.base_offset or piece.start_position != 0
                or end < piece.segment_size or reader.size != piece.segment_size):
            return False
        return self._lost_from_byte_0(unflushed=False)

    def _lost_from_byte_0(self, *, unflushed: bool, held: tuple[int, int] | None = None) -> bool:
        """The slice's whole rolled segment read nothing of its range from byte 0 (:meth:`_torn_first_batch_lost`,
        :meth:`foreign_file`): its offsets in the slice that its own indexes (and the recovery point) prove lost are
        raised or listed (:func:`_judge_rolled_cut`, with ``unflushed`` and ``held``), the rest listed in
        ``missing_offsets`` (none below the cleaner checkpoint: compaction's), and the slice is finished (True);
        False when nothing proves any lost."""
        piece = self.piece
        next_base = piece.next_base_offset
        first, last = max(piece.base_offset, piece.start_offset), min(next_base, piece.end_offset)
        missing = piece.outside_gaps(first, last) if first < last else []
        if not missing:
            return False
        rest = _judge_rolled_cut(piece, piece.base_offset, next_base, missing, self.metrics,
                                 fail_on_data_loss=self.options.fail_on_data_loss,
                                 on_corruption=self.options.on_corruption, end_position=0,
                                 torn_bytes=piece.segment_size, unflushed=unflushed, held=held)
        if rest == missing:
            return False
        if not below_cleaner_checkpoint(piece.base_offset, piece.cleaner_offset):  # (else compaction's)
            with self.metrics._lock:
                self.metrics.missing_offsets.extend((piece.log_path, lo, hi) for lo, hi in rest)
        self.finished = True
        return True

    def forget_skips(self) -> None:
        """Undo the corrupt batches this slice counted (a lenient decode's skips of a whole file that
        :meth:`foreign_below` found another segment's: its loss is said instead)."""
        stats = self.stats
        stats.corrupt_batches = stats.corrupt_bytes = 0
        stats.problems = [p for p in stats.problems if p[0] != self.piece.log_path]
        self.finished = True

    def foreign_file(self, reader: RandomAccessReader, end: int) -> bool:
        """Whether the slice's segment holds another segment's batches, and its own indexes prove its offsets lost
        with its file: asked only where the read stopped at its first batch, at byte 0 of a whole rolled segment,
        for being at or past the slice's end (the happy path never gets here). Every batch's header is walked
        (error path only): all at or past the next segment's base, each a batch a later segment holds as it is
        (base and last offsets and CRC, :meth:`_held_elsewhere`: a later segment's ``.log`` copied over this one,
        not one batch whose offset field, outside the CRC, was raised onto a later segment's offsets), with index
        entries of its own naming offsets inside its range (:func:`_judge_rolled_cut`,
        ``held``: a :class:`~kafkaseg.storage.layout.ForeignLog`), its offsets are lost as an emptied segment's
        are: :class:`~kafkaseg.errors.LostTailError` at byte 0, or (failOnDataLoss=false, onCorruption=skip)
        ``metrics.lost_tails``, the rest in ``missing_offsets`` (none below the cleaner checkpoint), and the slice
        is finished (True). False when the file holds a batch below the next base, or no entry proves anything:
        the read goes on as before (a gap: a cleaner's merged copy beside the next segment's original, whose
        indexes name no offset of the range, looks the same)."""
        piece = self.piece
        next_base = piece.next_base_offset
        if (next_base is None or piece.rolled or self.past_end_at != 0 or piece.start_position != 0
                or self.last_seen >= piece.base_offset or self.stats.corrupt_batches
                or reader.size != piece.segment_size):
            return False
        held = self._held_elsewhere(reader, below=False)
        if held is None:
            return False
        return self._lost_from_byte_0(unflushed=True, held=held)

    def foreign_below(self, reader: RandomAccessReader) -> bool:
        """:meth:`foreign_file` for a file holding an earlier segment's batches: asked only where the read of a
        whole rolled segment, from byte 0, found nothing of its range and its first batch went back below the base
        (a strict decode's non-monotonic error there, or a lenient one's skip of it): every batch below the base,
        each one an earlier segment holds as it is (same offsets and CRC: :meth:`_held_elsewhere`, so a batch
        whose offset field alone was lowered stays corruption), and index entries of its own inside its range
        (a :class:`~kafkaseg.storage.layout.ForeignLog`): lost as a later segment's copy is (True); else False
        (the decode's verdict stands)."""
        piece = self.piece
        if (piece.next_base_offset is None or piece.rolled or piece.start_position != 0 or self.emitted
                or self.last_seen >= piece.base_offset or reader.size != piece.segment_size):
            return False
        held = self._held_elsewhere(reader, below=True)
        if held is None:
            return False
        return self._lost_from_byte_0(unflushed=True, held=held)

    def _held_elsewhere(self, reader: RandomAccessReader, *, below: bool) -> tuple[int, int] | None:
        """``(first, last)`` offsets of the batches of the slice's whole segment file when every one lies ``below``
        its base (else at or past the next segment's) and is a batch another segment holds as it is (base and last
        offsets and CRC), as the partition's folder lists now: the storage layer's one rule
        (:func:`~kafkaseg.storage.foreign_log.outside_batches`, also describe's, locate's and verify's). None
        otherwise, or when the folder no longer lists this segment before the same next one."""
        piece = self.piece
        try:
            pdir = read_partition_again(piece.partition_path, piece.filesystem, topic=piece.topic,
                                        partition=piece.partition, remote_path=piece.remote_path)
        except KafkaSegError:
            return None
        bases = [s.base_offset for s in pdir.segments]
        if piece.base_offset not in bases:
            return None
        i = bases.index(piece.base_offset)
        if i + 1 >= len(bases) or bases[i + 1] != piece.next_base_offset:
            return None
        outside = outside_batches(pdir, i, self.options.max_batch_bytes, opened=reader)
        if outside is None or not outside.held or outside.below != below:
            return None
        return outside.first, outside.last

    def close(self) -> None:
        if self._entries is not None:
            self._entries.close()

    def check_indexed_tail(self, reader: RandomAccessReader, end: int, stamp: tuple[int, int]) -> None:
        """The read of the active segment reached its readable end, with no high watermark to bound it
        (:attr:`~kafkaseg.planning.SegmentSlice.indexed_tail_check`): whether the segment's own indexes point past
        that end, proving offsets the file held once and does not now, judged by
        :func:`~kafkaseg.storage.layout.judge_tail` (as verify and the tools judge it). The end is where a partial
        last batch starts (a tail), else ``end``, the end of the bytes planned.

        The indexes are read after the log, and the log must be unchanged since the listing (the size it was
        listed with, and its ``(size, ctime)`` at open, ``stamp``, still): a live broker indexes a batch only after
        writing it, so entries for appends since the read (or the listing) point at bytes that are there, and are
        no loss. A torn append with no entry past it is what a live broker's disk holds mid-append: a quiet tail.

        A producer snapshot named past that end (:attr:`~kafkaseg.planning.SegmentSlice.tail_snapshot`, still there)
        proves the same as entries do, and the recovery point alone, above that end, proves the offsets below it
        flushed, as planning found it still checkpointed after the listing
        (:attr:`~kafkaseg.planning.SegmentSlice.tail_recovery_point`). What they prove is judged by the recovery
        point (see :class:`~kafkaseg.storage.segment.IndexedPastEnd`); zeros to the end of the file (a
        preallocated segment's) are not counted as lost bytes (:func:`~kafkaseg.storage.segment.nonzero_extent`).
        Above the readable end, the broker had flushed offsets the file does not hold (a file cut short, a copy
        that missed them: no crash loses flushed bytes, and a truncation lowers the checkpoint at once): offsets
        below the end of a read to latest (with no high watermark, the log end) that the files lost, data loss as
        when a high watermark and the recovery point are both above the log end (planning's DataLossError), so
        raised (:class:`~kafkaseg.errors.LostTailError`: a ``DataLossError`` and a ``TruncatedDataError`` naming the
        file and byte) unless ``failOnDataLoss=false``, which
        reads on, listed in ``metrics.lost_tails``; ``onCorruption=skip`` also reads on, counting the rest of the
        segment as a skip (listed there too). Else none of them may ever
        have reached the disk (a crash losing the log's unflushed pages and not the index's, a copy taking the
        indexes after the log, entries a follower's truncation left in the preallocated index): recorded in
        ``metrics.unreadable_tails`` by every read, strict or not, as a warning, since nothing says whether they
        were acknowledged. Either way the tail reported before is taken back (one account of the bytes)."""
        if self.past_end or self.shrank or (self.finished and self.tail_at is None):
            return
        piece = self.piece
        at = end if self.tail_at is None else self.tail_at
        log_path = piece.log_path
        timeindex = _time_index_of(log_path)
        offset_index, time_index = load_index_files(piece.base_offset, (piece.index_path, piece.index_window),
                                                    timeindex, piece.filesystem)
        # the log as listed: the size it was listed with, and its (size, ctime) at open, still; the recovery point
        # as planning found it still checkpointed after the listing (tail_recovery_point)
        tail = judge_tail(log_path, at, piece.end_offset, offset_index=offset_index, time_index=time_index,
                          snapshot=piece.tail_snapshot, partition_path=piece.partition_path,
                          filesystem=piece.filesystem, recovery_point=piece.recovery_point,
                          log_as_listed=lambda: stamp[0] == piece.segment_size and reader.change_stamp() == stamp,
                          recovery_point_as_listed=lambda: piece.tail_recovery_point is not None)
        if tail is None:
            return
        with self.metrics._lock:
            torn = (log_path, at, end - at)
            if self.tail_at is not None and torn in self.metrics.truncated_tails:
                self.metrics.truncated_tails.remove(torn)
        detail = tail.message
        lost = nonzero_extent(reader, at, piece.segment_size)  # (a preallocated segment's zeros are no damage)
        if tail.proven:
            if self.options.on_corruption == "skip":
                self._count_skip(at, lost, detail, tail.first_offset, tail.end_offset)
            elif self.options.fail_on_data_loss:
                err = tail.error()
                if isinstance(err, CorruptDataError):  # (LostTailError; a high watermark's DataLossError says it)
                    err = err.saying(f"{READ_ON_PAST_LOSS}, or onCorruption=skip to skip it as corrupt")
                raise err
            with self.metrics._lock:
                self.metrics.lost_tails.append(Problem(log_path, at, detail, lost, tail.first_offset,
                                                       tail.end_offset))
            return
        detail += f"; the read ends at offset {tail.first_offset}"
        with self.metrics._lock:
            self.metrics.unreadable_tails.append(Problem(log_path, at, detail, lost, tail.first_offset,
                                                         tail.end_offset))

    def _check_after_slice(self, reader: RandomAccessReader, start: int, end: int) -> None:
        """The slice's last batch, ``[start, end)``, is at or past its segment's read end, and the kernel could not
        see the batch after it (the next slice's first): when that one starts below the end, the last batch's offset
        field, which the CRC does not cover, is corrupt, and the records it holds would be dropped unseen. Raised
        or counted as the kernels do for batches within a buffer: at the batch's start, all its bytes skipped."""
        limit = self.piece.segment_offsets[1]
        prefix = reader.read_at(end, 8)
        if len(prefix) < 8:
            return
        following = int.from_bytes(prefix, "big", signed=True)
        if following >= limit:
            return
        first_offset = int.from_bytes(reader.read_at(start, 8), "big", signed=True)
        err = CorruptBatchError(past_end_problem(first_offset, limit, following), path=self.piece.log_path,
                                position=start)
        if self.options.on_corruption != "skip":
            raise err
        self._count_skip(start, end - start, err.detail, self.first_unread(), following)

    def check_next_base(self, reader: RandomAccessReader, end: int) -> None:
        """After the slice's read (up to ``end``): whether its segment held offsets at or past the next segment's
        base, which the read drops (the batch holding them was cut, or stopped the read with bytes left). In the
        planned file (no cleaner merged the next segment into it during the read) whose offsets past that base
        the next segment does not span (:meth:`_next_segment_spans`: a copy of a log dir taken while the cleaner
        swapped holds its compacted copy beside the next segment's original), that is a file holding offsets its
        successor's name says start there (one named or renamed too low, or a batch whose offset field, which the
        CRC does not cover, is corrupt), and Kafka would serve such records from one file or the other by where a
        fetch starts: raised at the first batch reaching the next base, or with ``onCorruption=skip`` those
        batches counted as skipped, never dropped unsaid. Where the file cannot be told from a merged copy
        (another host, a filesystem without identities) the read ends there as before."""
        piece = self.piece
        next_base = piece.next_base_offset
        if (not self.planned_file or next_base is None or piece.end_offset < next_base or self.stats.corrupt_batches
                or reader.size != piece.segment_size):
            return
        stopped_inside = self.past_end_at is not None and self.past_end_at < end
        if self.last_seen < next_base and not stopped_inside:
            return
        reaching = None  # the first batch reaching the next base, and how many batches from it on
        batches = 0
        # the offset after the batch before it, where the offsets it makes unreadable start (unknown at a slice's
        # first batch, unless the slice starts the segment)
        lost_from = piece.base_offset if piece.start_position == 0 else None
        try:
            walk = SegmentReader(piece.log_path, opened=reader).iter_headers(
                piece.start_position, end, max_batch_bytes=self.options.max_batch_bytes)
            for header in walk:
                if reaching is None and header.last_offset >= next_base:
                    reaching = header
                elif reaching is None:
                    lost_from = header.last_offset + 1
                batches += reaching is not None
        except KafkaSegError:
            pass  # (the read went past those bytes)
        if reaching is None:
            return
        if lost_from is None:
            lost_from = self._offset_after_batch_before(reader, reaching.position)
        # A v2 batch straddling the next base is no merged copy: Kafka rolls between batches, and its cleaner keeps
        # each retained batch's base and last offsets (MemoryRecords.filterTo), so a merged copy's batches each lie
        # on one side of the old boundary. As the segment's last batch, with the next segment's name right, only its
        # offset field can put it across (judged before its records are returned, _without_straddler; here when
        # that walk could not)
        if self.straddler_skipped:
            return
        if self._corrupt_straddler(reaching, next_base):
            err = CorruptBatchError(self._straddle_problem(reaching, next_base), path=piece.log_path,
                                    position=reaching.position)
            if self.options.on_corruption != "skip":
                raise err
            self._count_skip(reaching.position, reaching.size, err.detail, lost_from)
            return
        if (self._next_segment_spans(reader, reaching.position, reaching.last_offset)
                and self._kept_from_next_segment(reader, reaching.position, end, next_base)):
            return
        at, first, last = reaching.position, reaching.base_offset, reaching.last_offset
        err = CorruptBatchError(
            f"the batch here holds offsets {first}..{last}, at or past offset {next_base}, the base offset of the "
            f"partition's next segment, which starts above them: {batches} batches ({end - at} bytes) of this "
            f"read from here keep no offset from {next_base} on. A segment file named (or renamed) below its first "
            "offset, or a corrupt offset field? Kafka would serve these records from one file or the other by where "
            "a fetch starts", path=piece.log_path, position=at)
        if self.options.on_corruption != "skip":
            raise err
        self._count_skip(at, end - at, err.detail, lost_from, batches=batches)

    def _offset_after_batch_before(self, reader: RandomAccessReader, position: int) -> int:
        """The offset after the last batch a read takes before ``position`` of this segment (where offsets a problem
        there makes unreadable start, and what the batch there follows), found by a header walk from the offset
        index entry before it (from the segment's start without one). Error path only: about one index interval of
        headers, each batch read for its CRC."""
        piece = self.piece
        start = self._entry_before(position)
        return offset_before(SegmentReader(piece.log_path, opened=reader), start, position, piece.base_offset - 1,
                             **self._walk_limits) + 1

    def _next_segment_spans(self, reader: RandomAccessReader, position: int, last: int) -> bool:
        """Whether the partition's next segment, as its folder lists now, spans the batch at ``position`` of this
        file (its last offset ``last``): the first non-empty segment from the next base on starts at or below the
        batch's first offset (legacy wrappers decoded for it), and the segment after that one, if any, starts
        above ``last``. Then this file is a compacted copy holding both segments' kept records (a copy of a data
        dir taken across the cleaner's swap, whose original of the next segment has them). True as well when the
        planned next segment is gone (its own slices read its offsets again from this copy). False when that
        cannot be read."""
        piece = self.piece
        limits = (self.options.max_batch_bytes, self.options.max_decompressed_batch_bytes)
        try:
            pdir = read_partition_again(piece.partition_path, piece.filesystem, topic=piece.topic,
                                        partition=piece.partition, remote_path=piece.remote_path)
            bases = [s.base_offset for s in pdir.segments]
            if piece.next_base_offset not in bases:
                return True
            k = bases.index(piece.next_base_offset)
            while k + 1 < len(bases) and pdir.segments[k].log_size == 0:
                k += 1
            first = batch_first_offset(SegmentReader(piece.log_path, opened=reader), position, *limits)
            with SegmentReader(pdir.segments[k].log_path, piece.filesystem) as following:
                head = batch_first_offset(following, 0, *limits)
        except KafkaSegError:
            return False
        if head is None or first is None:  # (every later segment is empty: none holds these offsets)
            return False
        # (a next segment whose first offset is below its own base is no cleaner's original: no segment holds
        # offsets below its name, so it is damaged or misnamed itself, e.g. its file swapped with this one's)
        return (bases[k] <= head <= max(first, piece.next_base_offset)
                and (k + 1 == len(bases) or last < bases[k + 1]))

    def _kept_from_next_segment(self, reader: RandomAccessReader, start: int, end: int, next_base: int) -> bool:
        """Whether each v2 batch of this file in ``[start, end)`` reaching ``next_base`` is what the cleaner keeps of
        a batch of the next segment's original: one with the same base and last offsets (``MemoryRecords.filterTo``
        keeps both) holding each of its records at its offset with its timestamp and key and value sizes. A batch
        whose base offset, which the CRC does not cover, was raised onto the next segment's offsets has its own
        records, not those: its records would be dropped unsaid as the merged copy's. Legacy wrappers, which the
        cleaner re-makes under other offsets, are left to :meth:`_next_segment_spans`, and so is a next segment gone
        since planning. False when it cannot be read."""
        piece = self.piece
        limits = {"max_batch_bytes": self.options.max_batch_bytes}
        try:
            mine = [h for h in SegmentReader(piece.log_path, opened=reader).iter_headers(start, end, **limits)
                    if h.magic >= 2 and h.last_offset >= next_base]
            if not mine:
                return True
            wanted = {h.base_offset for h in mine}
            pdir = read_partition_again(piece.partition_path, piece.filesystem, topic=piece.topic,
                                        partition=piece.partition, remote_path=piece.remote_path)
            if next_base not in {seg.base_offset for seg in pdir.segments}:
                return True  # (gone since planning: its slices read its offsets again from this copy)
            originals = {}
            for seg in pdir.segments:
                if seg.base_offset < next_base or seg.base_offset > mine[-1].last_offset:
                    continue
                with SegmentReader(seg.log_path, piece.filesystem) as following:
                    for h in following.iter_headers(0, **limits):
                        if h.base_offset in wanted:
                            originals[h.base_offset] = (h, following.read_at(h.position, h.size))
                        if h.base_offset > mine[-1].last_offset:
                            break
            for h in mine:
                found = originals.get(h.base_offset)
                if found is None or found[0].last_offset != h.last_offset:
                    return False
                ours = _record_facts(reader.read_at(h.position, h.size), h, self.options)
                theirs = set(_record_facts(found[1], found[0], self.options))
                if not theirs.issuperset(ours):
                    return False
        except KafkaSegError:
            return False
        return True

    def _count_skip(self, position: int, skipped_bytes: int, detail: str, first_offset: int | None = None,
                    end_offset: int | None = None, *, batches: int = 1, named: bool = True) -> None:
        """Count ``batches`` corrupt batches skipped from ``position`` (with ``onCorruption=skip``), as the kernels
        count theirs (one per batch): their bytes, and the problem while fewer than MAX_PROBLEMS are kept, with the
        offsets it made unreadable when known (an end left None is looked for by :meth:`finish_problems`); no
        problem when not ``named`` (another slice's names the region whole)."""
        self.stats.corrupt_batches += batches
        self.stats.corrupt_bytes += skipped_bytes
        if named and len(self.stats.problems) < MAX_PROBLEMS:
            self.stats.problems.append(Problem(self.piece.log_path, position, detail, skipped_bytes, first_offset,
                                               end_offset))

    def first_unread(self) -> int | None:
        """The first offset after the last batch this slice walked, None when it walked none and does not start
        at its segment's start (the offsets before its first batch are another slice's, and unknown here)."""
        return self.last_seen + 1 if self.walked else None

    def finish_problems(self, reader: RandomAccessReader) -> None:
        """Give the slice's problems that do not say where their unreadable offsets end the first offset of the
        batch their region ends at (another problem's region, whose end is theirs; the next segment's base at the
        end of the file; else the batch read there, None when none is whole). At most one header read (a legacy
        wrapper decoded) per problem named, after the read."""
        mine = sorted((p for p in self.stats.problems if isinstance(p, Problem) and p.path == self.piece.log_path),
                      key=lambda p: p.position, reverse=True)
        ends: dict[int, int | None] = {}  # region start -> the end offset found for it
        found: dict[tuple, Problem] = {}
        for problem in mine:
            end = problem.end_offset
            if end is None and problem.bytes is not None:
                following = problem.position + problem.bytes
                if following in ends:
                    end = ends[following]
                elif following >= self.piece.segment_size and self.piece.next_base_offset is not None:
                    end = self.piece.next_base_offset
                elif following < reader.size:
                    try:
                        end = batch_first_offset(SegmentReader(self.piece.log_path, opened=reader), following,
                                                 self.options.max_batch_bytes,
                                                 self.options.max_decompressed_batch_bytes)
                    except KafkaSegError:
                        end = None
            ends[problem.position] = end
            if end != problem.end_offset:
                found[(problem.position, id(problem))] = problem._replace(end_offset=end)
        if found:
            self.stats.problems[:] = [found.get((p[1], id(p)), p) for p in self.stats.problems]

    def shrunk(self, pos: int, end: int) -> None:
        """The file ended at ``pos`` before the planned ``end``: a live broker truncated it while we read."""
        _report_tail(self.piece, self.metrics, pos, end)
        self.finished = True
        self.shrank = True

    def mapped(self, reader: RandomAccessReader, pos: int, end: int, window_bytes: int, chunk_bytes: int):
        """Decode ``[pos, end)`` in place through guarded mappings of at most ``window_bytes`` (a batch larger
        than a window gets a window of its own size), handing the kernel ``chunk_bytes`` at a time so its output
        stays cache-sized. Returns where it stopped; unless the slice is finished, the positioned-read path
        continues from there (mapping refused, or the file changed under a mapping: truncated, rewritten or
        appended to, in which case nothing decoded from that mapping since its last check is kept)."""
        want = 0
        while pos < end and not self.finished:
            window_end = min(end, pos + max(window_bytes, want))
            mapping = reader.map_range(pos, window_end - pos)
            if mapping is None:
                return pos
            window_start = pos
            stamp = reader.change_stamp()  # taken before the first decode from this mapping, compared after each
            if stamp[0] < window_end:  # already shorter than planned: positioned reads see where it ends now
                mapping.close()
                return pos
            view = memoryview(mapping)
            try:
                self.metrics.bytes_read += window_end - window_start
                while pos < window_end and not self.finished:
                    piece_end = min(window_end, pos + max(chunk_bytes, want))
                    error = None
                    try:
                        result = self.decode(view[pos - window_start:piece_end - window_start], pos, end,
                                             reader, lambda at: view[at - window_start:at - window_start + 17])
                    except KafkaSegError as err:
                        error = err
                    if mapping.faulted or reader.change_stamp() != stamp:
                        return pos  # decoded bytes that changed (or zeros where the file was cut): reread
                    if error is not None or result.stats.corrupt_batches:
                        chunk = view[pos - window_start:piece_end - window_start]
                        result = (self.before_mismatch(error, chunk, pos, end, reader) if error is not None else
                                  self.lenient_mismatch(result, chunk, pos, end, reader))
                        if result is None:
                            break
                        if mapping.faulted or reader.change_stamp() != stamp:
                            return pos  # (the bytes before the mismatch, decoded again, changed meanwhile)
                    batch = self.accept(result, pos, end, reader)
                    if batch is not None:
                        yield batch
                    pos, want = self.resume(reader, result, pos, end)
                    if pos + want > window_end:
                        break  # the next window starts at the partial batch
            finally:
                view.release()
                mapping.close()
        return pos

    def preads(self, reader: RandomAccessReader, pos: int, end: int, chunk_bytes: int, fetch_bytes: int = 0,
               source: ReadAhead | None = None):
        """Decode ``[pos, end)`` from positioned reads of ``fetch_bytes`` (at least ``chunk_bytes``) into one
        reusable buffer, handing the kernel ``chunk_bytes`` at a time. The kernel copies what it keeps, so nothing
        references the buffer after a decode call; it grows only when one batch is larger (bounded by
        maxBatchBytes, checked by the kernel). ``source`` serves the reads instead of ``reader`` (a non-local
        file's :class:`~kafkaseg.storage.fs.ReadAhead`)."""
        source = reader if source is None else source
        chunk = bytearray(min(max(chunk_bytes, fetch_bytes), max(end - pos, 0)))
        filled = 0  # valid bytes in chunk
        buf_pos = pos  # file position of chunk[0]
        want = 0  # bytes the next decode needs from pos (0: whatever the chunk holds)
        while pos < end and not self.finished:
            offset_in_buf = pos - buf_pos
            if offset_in_buf >= filled or want > filled - offset_in_buf:
                need = min(max(want, len(chunk)), end - pos)
                if need > len(chunk):
                    chunk = bytearray(need)
                read_to = buf_pos + filled  # the bytes before it were counted (read again: a batch the buffer cut)
                filled = source.read_into(pos, memoryview(chunk)[:need])
                buf_pos, offset_in_buf = pos, 0
                self.metrics.bytes_read += max(0, pos + filled - max(pos, read_to))  # one reader thread per slice
                if filled < want or not filled:
                    self.shrunk(pos, end)  # a short read: the file is now shorter than planned
                    break
            # at most chunk_bytes (or the one batch wanted whole) per decode; a batch the view cuts is decoded
            # from the buffer next time round, or refilled above when the buffer does not hold it whole
            view = memoryview(chunk)[offset_in_buf:min(filled, offset_in_buf + max(chunk_bytes, want))]
            try:
                result = self.decode(view, pos, end, reader,
                                     lambda at: self._peek(chunk, buf_pos, filled, at, source))
            except KafkaSegError as err:
                result = self.before_mismatch(err, view, pos, end, reader)
            else:
                if result.stats.corrupt_batches:
                    result = self.lenient_mismatch(result, view, pos, end, reader)
            view.release()
            if result is None:
                break
            batch = self.accept(result, pos, end, reader)
            if batch is not None:
                yield batch
            pos, want = self.resume(reader, result, pos, end)


def _resumed(problem, what: str, skipped_bytes: int, end_offset: int):
    """``problem`` (a region skipped to the end of its slice) as a read that resumed further on says it."""
    if isinstance(problem, Problem):
        return problem._replace(what=what, bytes=skipped_bytes, end_offset=end_offset)
    return Problem(problem[0], problem[1], what, skipped_bytes, None, end_offset)


def _check_segment_end(piece: SegmentSlice, last_offset: int, metrics: ScanMetrics, *,
                       fail_on_data_loss: bool, on_corruption: str = "fail", at_file_end: bool = False) -> None:
    """After a slice was read to its end: when that is its segment's end and the read range goes on into the next
    segment, offsets between the segment's last batch and the next base that the cleaner checkpoint does not
    explain are recorded in ``metrics.missing_offsets``, and the read goes on. Not an error: besides a copy that
    lost a segment file, they are what a follower of a compacted topic holds (it rolls a segment at the first
    offset of a compacted batch it fetches, and checkpoints nothing until its own cleaner runs) and what a cleaning
    in progress leaves (segments swapped in before the checkpoint is written); Kafka cannot tell them apart and
    Spark's source reads past them. ``kafkaseg verify`` warns about them. Costs no I/O: the last offset is the one
    the decoder saw.

    Except after a tiered-storage copy (:attr:`SegmentSlice.rolled`): a tiered topic is never compacted, so they
    were deleted (a copy cut short at a batch boundary, whose recorded end offset, which planning's
    ``layout.copy_gaps`` takes, says more): a :class:`~kafkaseg.errors.DataLossError` with ``fail_on_data_loss``
    (the read's ``failOnDataLoss``). Unless ``__remote_log_metadata`` records the copy with the size it has
    (:attr:`SegmentSlice.remote_whole`): a topic compacted before it was made tiered (Kafka refuses remote storage
    only while ``cleanup.policy`` holds ``compact``) has copies whose last offsets the cleaner removed.

    And except where the segment's own ``.index`` or ``.timeindex`` holds entries past its end while the recovery
    point is above it (:func:`~kafkaseg.storage.layout.judge_rolled_end`: a file cut short, or a copy taken while
    it was still the active segment; the cleaner indexes the batches it writes, no more, so below the cleaner
    checkpoint too, where the rest of the gap is compaction's and said nowhere): those offsets are lost as
    the active segment's proven lost tail is, a :class:`~kafkaseg.errors.LostTailError` at the byte where its
    batches end unless ``failOnDataLoss=false`` or ``onCorruption=skip``, which read on, listed in
    ``metrics.lost_tails``. Asked only when offsets are missing there and the read's last batch ends the file as
    planned (``at_file_end``; not a read stopped at a batch whose offset field says it is past the next base, nor
    a file a live broker truncated since planning, whose index keeps its entries: the read again says that): the
    index files' last entries are probed (a few positioned reads) and the files loaded only when they reach past
    it."""
    next_base = piece.next_base_offset
    if next_base is None or piece.end_position < piece.segment_size:
        return
    first_missing = last_offset + 1
    if first_missing >= next_base or first_missing >= piece.end_offset or next_base <= piece.start_offset:
        return
    compacted = below_cleaner_checkpoint(first_missing, piece.cleaner_offset)
    if compacted and (piece.rolled or not at_file_end):
        return
    missing = piece.outside_gaps(max(first_missing, piece.start_offset), min(next_base, piece.end_offset))
    if missing and piece.rolled and not piece.remote_whole and fail_on_data_loss:
        raise DataLossError(
            f"{redact(piece.log_path)}: offsets {', '.join(f'[{lo}, {hi})' for lo, hi in missing)} of "
            f"{piece.topic}-{piece.partition} are in no tiered-storage copy: this copy's last batch ends at offset "
            f"{last_offset} and the next segment starts at {next_base}. A tiered topic is never compacted (Kafka "
            "refuses remote storage with cleanup.policy=compact), so they were deleted: the copy is cut short at a "
            "batch boundary (its recorded end offset may say more), or a copy missing from the bucket "
            "(set failOnDataLoss=false to read past them)")
    if missing and at_file_end and not piece.rolled:
        missing = _judge_rolled_cut(piece, first_missing, next_base, missing, metrics,
                                    fail_on_data_loss=fail_on_data_loss, on_corruption=on_corruption)
    if compacted:
        return  # (the rest: compaction's)
    with metrics._lock:
        metrics.missing_offsets.extend((piece.log_path, lo, hi) for lo, hi in missing)


def _judge_rolled_cut(piece: SegmentSlice, end_offset: int, next_base: int, missing: list[tuple[int, int]],
                      metrics: ScanMetrics, *, fail_on_data_loss: bool, on_corruption: str,
                      end_position: int | None = None, torn_bytes: int | None = None,
                      unflushed: bool = True, held: tuple[int, int] | None = None) -> list[tuple[int, int]]:
    """:func:`_check_segment_end`'s offsets ``missing`` after a rolled segment whose batches end at offset
    ``end_offset`` (at its end, or at ``end_position`` with ``torn_bytes`` of a cut batch after it), less those
    :func:`~kafkaseg.storage.layout.judge_rolled_end` proves lost: raised, or recorded in ``metrics.lost_tails``;
    and less those its index entries say it held but the recovery point does not prove flushed (``unflushed``):
    recorded in ``metrics.unreadable_tails``, a warning. ``held``: the offsets of the batches the file holds instead
    of its own (:meth:`_SliceDecoder.foreign_file`): the loss is a
    :class:`~kafkaseg.storage.layout.ForeignLog`'s, said in its words."""
    log_path = piece.log_path
    timeindex = _time_index_of(log_path)
    at = piece.segment_size if end_position is None else end_position
    tail = judge_rolled_end(log_path, at, end_offset, next_base, base_offset=piece.base_offset,
                            index=(piece.index_path, piece.index_window), timeindex=timeindex,
                            filesystem=piece.filesystem, recovery_point=piece.recovery_point, unflushed=unflushed,
                            held=held)
    if tail is None:
        return missing
    if not tail.proven:  # (not known flushed: a warning, as the active segment's unflushed tail)
        found = metrics.unreadable_tails
    elif fail_on_data_loss and on_corruption != "skip":
        raise tail.error().saying(READ_ON_PAST_LOSS)
    else:
        found = metrics.lost_tails
    lost = [(max(lo, tail.first_offset), min(hi, tail.end_offset)) for lo, hi in missing]
    with metrics._lock:
        found.extend(Problem(log_path, tail.position, tail.message, torn_bytes, lo, hi) for lo, hi in lost if lo < hi)
    rest = []
    for lo, hi in missing:
        rest.extend((a, b) for a, b in ((lo, min(hi, tail.first_offset)), (max(lo, tail.end_offset), hi)) if a < b)
    return rest


def _time_index_of(log_path: str) -> tuple[str | None, None]:
    """The ``.timeindex`` beside a segment's ``.log`` (none for a file not named ``.log``), as
    :func:`~kafkaseg.storage.segment.load_index_files` takes it (no window: read whole)."""
    return (log_path[:-len(".log")] + ".timeindex" if log_path.endswith(".log") else None, None)


def _report_tail(piece: SegmentSlice, metrics: ScanMetrics, pos: int, end: int) -> None:
    """Record ``[pos, end)`` of the slice's segment as a truncated tail (not read, not an error)."""
    with metrics._lock:
        metrics.truncated_tails.append((piece.log_path, pos, end - pos))


def _partial_problem(piece: SegmentSlice, file_size: int, pos: int, end: int, last_seen: int,
                     skipped: bool = False) -> str | None:
    """Why a batch at ``pos`` that runs past the slice's ``end`` is corruption, or None when it is a tail. At the
    end of a segment that may end mid-batch (the active one, or one past the recovery point that a crash can leave
    torn) that is its tail, and so is a file that shrank after planning (a live broker truncating it): reported,
    not an error. But not at the end of the active segment when offsets the read was planned for are still unread
    (the high watermark is above the batch): those were acknowledged, so the batch is whole on the broker and its
    length field is corrupt (unless a lenient read ``skipped`` the corrupt batch right before it: the offsets that
    one held are unknown, so the gap proves nothing). Anywhere else it is corruption: a slice that ends inside a batch, or a
    flushed rolled segment that ends mid-batch, whose missing bytes no broker will write."""
    at_file_end = end >= piece.segment_size or end >= file_size
    if at_file_end and file_size < piece.segment_size:
        return None
    if at_file_end and piece.rolled:
        return (f"batch runs past the end of the segment at byte {end}, a tiered-storage copy of a rolled segment: "
                "the copy is cut short or its length field is corrupt")
    if at_file_end and piece.is_last_segment and not skipped and last_seen + 1 < piece.end_offset:
        return (f"batch runs past the end of the active segment at byte {end}, but offsets from {last_seen + 1} "
                f"up to the read's end {piece.end_offset} (the high watermark, or the log end) are not read: a torn "
                "tail holds no acknowledged record, so its length field is corrupt")
    if at_file_end and piece.may_end_mid_batch:
        return None
    if at_file_end:
        flushed = ("no recovery point is checkpointed for it" if piece.recovery_point is None else
                   f"the recovery point {piece.recovery_point} is past it, so the broker had flushed it")
        return (f"batch runs past the end of the segment at byte {end}, and the segment is not the partition's "
                f"last (the next starts at offset {piece.next_base_offset}; {flushed}): its bytes are lost or "
                "its length field is corrupt")
    return f"batch runs past the planned slice end at byte {end}"


SMALL_BATCH_BYTES = 256 * 1024  # Scan.to_table merges runs of record batches smaller than this ...
MERGED_BATCH_BYTES = 8 * 1024 * 1024  # ... into batches of about this many bytes
MERGED_BATCH_COUNT = 256  # ... or of this many (a small batch may hold 32 KiB of buffers for a few bytes of data)


def _merged(batches: list[pa.RecordBatch], schema: pa.Schema) -> list[pa.RecordBatch]:
    """``batches`` copied into one batch with buffers of their size (one batch: kept as it is)."""
    if len(batches) < 2:
        return batches
    return pa.Table.from_batches(batches, schema=schema).combine_chunks().to_batches()


@dataclass
class Scan:
    """A planned scan: ``plan`` says what will be read (and what was pruned), ``metrics`` fills while iterating.
    Each iteration reads the files again and starts a new ``metrics`` (so it describes the latest read)."""

    plan: ScanPlan
    options: ReadOptions
    metrics: ScanMetrics = field(default_factory=ScanMetrics)

    @property
    def schema(self) -> pa.Schema:
        return self.options.schema

    def __iter__(self) -> Iterator[pa.RecordBatch]:
        metrics = self.metrics = ScanMetrics()
        for piece in self.plan.slices:
            yield from read_slice(piece, self.options, metrics)

    def to_table(self) -> pa.Table:
        """The whole read as one table. Runs of small record batches (the slices of tiny segments or partitions)
        are merged as they come, in order, into buffers of their size: the kernels' output buffers start at 4 KiB
        a column, so 20,000 one-record partitions held 800 MiB for 1.6 MiB of data (found in review)."""
        batches: list[pa.RecordBatch] = []
        small: list[pa.RecordBatch] = []
        small_bytes = 0
        for batch in self:
            if batch.nbytes >= SMALL_BATCH_BYTES:
                batches.extend(_merged(small, self.schema))
                small, small_bytes = [], 0
                batches.append(batch)
                continue
            small.append(batch)
            small_bytes += batch.nbytes
            if small_bytes >= MERGED_BATCH_BYTES or len(small) >= MERGED_BATCH_COUNT:
                batches.extend(_merged(small, self.schema))
                small, small_bytes = [], 0
        batches.extend(_merged(small, self.schema))
        return pa.Table.from_batches(batches, schema=self.schema)

    def to_reader(self) -> pa.RecordBatchReader:
        """A ``pyarrow.RecordBatchReader`` over a new read: batches are decoded as the consumer pulls them, so
        memory stays bounded by the batch size (``maxRecordsPerBatch``/``maxBytesPerBatch``), not the data."""
        return pa.RecordBatchReader.from_batches(self.schema, iter(self))

    def __arrow_c_stream__(self, requested_schema: object = None) -> object:
        """The Arrow C stream interface: DuckDB, polars, pandas and ``pyarrow.table()`` read a ``Scan`` directly
        (a new read each time, pulled batch by batch)."""
        return self.to_reader().__arrow_c_stream__(requested_schema)


def open_scan(path: str | Sequence[str] | None = None, /, **options: Any) -> Scan:
    """Plan a scan of ``path`` (log dir(s), topic-partition dir(s), ``.log`` file(s) or globs) with Spark-Kafka-style
    options (see README); iterate it for record batches, read ``.plan.report`` and ``.metrics`` for what it did."""
    if path is None and "path" in options:  # open_scan(path=...): the keyword is the argument, as before
        path = options.pop("path")
    if isinstance(path, (str, os.PathLike)):
        path = [path]
    elif not isinstance(path, (bytes, bytearray)) and isinstance(path, Iterable):
        path = list(path)  # a tuple, a numpy array, a generator, dict keys...
    if not isinstance(path, list) or not all(isinstance(p, (str, os.PathLike)) for p in path):
        raise InvalidOptionError(f"the path to read must be a path (str or os.PathLike) or several of them, got "
                                 f"{path!r}")
    # an option named path or paths (in any case), beside the paths given, is refused saying where paths go
    opts = ReadOptions.from_options(options, path_options=False)
    return Scan(plan_scan(path, opts), opts)


def iter_batches(path: str | Sequence[str] | None = None, /, **options: Any) -> Iterator[pa.RecordBatch]:
    """Yield ``pyarrow.RecordBatch`` es of the records under ``path``, in topic, partition, offset order."""
    yield from open_scan(path, **options)


def read_arrow(path: str | Sequence[str] | None = None, /, **options: Any) -> pa.Table:
    """Read the records under ``path`` into one ``pyarrow.Table`` (Spark's Kafka schema; see README for options)."""
    return open_scan(path, **options).to_table()
