"""Bounded, positioned reads of one ``.log`` segment file.

A segment is a sequence of record batches (v2) or legacy entries (v0/v1) laid end to end
(``clients/.../record/FileRecords.java``, ``FileLogInputStream.java``); see :mod:`kafkaseg.wire.batch` for the
header grammar. This module never reads a whole segment into memory: headers are read through fixed-size blocks,
record data only when a caller asks for it (:meth:`SegmentReader.chunks`), one chunk at a time.

The end of a segment can be unusable in two ways that are not errors:

* the last batch is incomplete (an active segment being appended to, or a crash mid-write): ``FileLogInputStream``
  returns no batch when the announced size runs past the end, and ``LogSegment.recover`` truncates there;
* a zero-filled preallocated tail (``log.preallocate=true``): a header of zeros.

Both are reported as a :class:`TailReport` on the iterator (``.tail``) and on the reader (``.tail``), never raised.
Corrupt framing inside the scanned range (unknown magic, a size below the format minimum or above
``max_batch_bytes``) raises a :class:`~kafkaseg.errors.CorruptBatchError` located at the file and byte.
"""

from __future__ import annotations

import weakref

from dataclasses import dataclass
from typing import Callable, Iterator, NamedTuple

import numpy as np
import pyarrow.fs as pafs

from kafkaseg.errors import (CorruptBatchError, CorruptDataError, CorruptIndexError, LayoutError, SkippedOffsetsError,
                             TruncatedDataError)
from kafkaseg.storage._index_file import index_location
from kafkaseg.storage.fs import RandomAccessReader, basename
from kafkaseg.storage.producer_snapshot import snapshot_offset_from_name
from kafkaseg.wire.batch import (HEADER_PREFIX_SIZE, LOG_OVERHEAD, MIN_ENTRY_SIZE, V2_HEADER_SIZE, BatchHeader,
                                 read_header)
from kafkaseg.wire import walk as _walk
from kafkaseg.wire.crc import crc_is_valid
from kafkaseg.wire.text import utc_ms_text

__all__ = [
    "SegmentReader",
    "TailReport",
    "HeaderWalk",
    "ChunkWalk",
    "BatchTable",
    "batch_table",
    "header_columns",
    "log_end_offset",
    "readable_end",
    "offsets_hidden_by_last_batch",
    "zero_filled_tail",
    "first_nonzero_byte",
    "data_after_zeros",
    "zeros_hiding_records",
    "zeros_hide_records",
    "torn_before_zeros",
    "IndexedPastEnd",
    "indexed_past_end",
    "load_index_files",
    "largest_timestamp",
    "DEFAULT_BLOCK_SIZE",
    "DEFAULT_MAX_BATCH_BYTES",
    "DEFAULT_CHUNK_BYTES",
]

DEFAULT_BLOCK_SIZE = 64 * 1024
#: Refuse batches larger than this unless told otherwise: Kafka's message.max.bytes defaults to ~1 MiB and is
#: rarely raised past tens of MiB; the int32 length field could otherwise ask for 2 GiB. The reads' default
#: (ReadOptions.max_batch_bytes, maxBatchBytes=128m), so every tool takes the same batches as a read.
DEFAULT_MAX_BATCH_BYTES = 128 * 1024 * 1024
DEFAULT_CHUNK_BYTES = 8 * 1024 * 1024


@dataclass(frozen=True)
class TailReport:
    """The unusable end of a scanned range: ``length`` bytes from file byte ``position`` up to the scan limit.

    ``reason`` is ``"truncated batch"`` (a batch whose header or body runs past the end) or ``"zero-filled tail"``
    (preallocated, never-written space); ``detail`` says more."""

    path: str
    position: int
    length: int
    reason: str
    detail: str

    def __str__(self) -> str:
        return f"{self.path} @ byte {self.position}: {self.reason} ({self.length} bytes): {self.detail}"


def unwritten_at(buf, position: int, partial_append: bool = False) -> bool:
    """Whether the bytes at ``position`` of ``buf`` are a preallocated area not written yet: an all-zero header, or
    with ``partial_append`` (the active segment only: a rolled one is trimmed at its roll, so there it is a batch
    cut short) an append caught after its first bytes (``log.preallocate=true``: the base offset written, the
    length field and all after it still zeros; no batch has length 0)."""
    prefix = bytes(buf[position:position + HEADER_PREFIX_SIZE])
    if partial_append and len(prefix) > 8:
        return not any(prefix[8:])
    return len(prefix) > 0 and not any(prefix)


def _unwritten_tail(buf, position: int, partial_append: bool) -> str | None:
    """The tail report's detail when the bytes at ``position`` are unwritten (:func:`unwritten_at`), else None."""
    if not unwritten_at(buf, position, partial_append):
        return None
    if unwritten_at(buf, position):
        return "all-zero batch header (preallocated, never written)"
    return "an append in progress: zeros from its length field on (preallocated)"


#: The compiled header walk (:mod:`kafkaseg.wire.walk`: its pure twin without it), which the walks below run over
#: the whole batches of each read, parsing in Python only where it stops; None: every header in Python (tests).
_FAST_WALK = _walk.kernel


def _walk_limit(max_batch_bytes: int | None) -> int:
    """``max_batch_bytes`` as the compiled walk takes it: -1 for none, and within what its C long long and a size
    field (an int32) can tell apart (a negative limit refuses every batch, as ``read_header``'s does)."""
    return -1 if max_batch_bytes is None else min(max(max_batch_bytes, 0), 1 << 31)


class HeaderWalk:
    """Iterator over batch headers returned by :meth:`SegmentReader.iter_headers`; ``tail`` is set when the walk
    stopped at an unusable tail, ``end_position`` is where the walk stopped (just past the last whole batch)."""

    def __init__(self, reader: "SegmentReader", start: int, end: int | None, max_batch_bytes: int | None,
                 block_size: int, partial_append: bool = False):
        self.reader = reader
        self.start = start
        self.end = end
        self.max_batch_bytes = max_batch_bytes
        self.partial_append = partial_append
        self.block_size = max(block_size, V2_HEADER_SIZE)
        self.tail: TailReport | None = None
        self.end_position = start
        self._block, self._block_start = b"", start  # the last block read, and its file position
        # the walk's generator sees the walk through a weak proxy: a walk left unfinished (one header read, a search
        # that stops early) is freed with its read block when dropped, not held in a cycle until a collection
        self._iterator = type(self)._walk(weakref.proxy(self))

    def __iter__(self) -> "HeaderWalk":
        return self

    def __next__(self) -> BatchHeader:
        return next(self._iterator)

    def bytes_at(self, position: int, length: int) -> bytes | None:
        """The ``length`` bytes at file ``position`` when the block the walk read last holds them all (say, the
        start of the batch after the one it yielded: no read of their own), else None."""
        relative = position - self._block_start
        if relative < 0 or relative + length > len(self._block):
            return None
        return bytes(self._block[relative:relative + length])

    def runs(self) -> "HeaderWalk":
        """This walk (not started yet) as it yields to :func:`batch_table`: a run of whole batches the compiled walk
        took at once as a tuple of int64 arrays (``kafkaseg.wire.walk.COLUMNS``), each other batch as its
        :class:`BatchHeader`; ``tail`` and ``end_position`` as when it yields headers."""
        self._iterator = type(self)._walk(weakref.proxy(self), True)
        return self

    def _walk(self, runs: bool = False) -> Iterator[BatchHeader]:
        reader = self.reader
        limit, explicit_end = reader._limit(self.end)
        position = self.start
        block = b""
        block_start = position
        fast = _FAST_WALK
        most = _walk_limit(self.max_batch_bytes)
        wanted = 4  # headers parsed at once, doubling: a caller that wants one (header_at) does not pay for a block
        while position < limit:
            relative = position - block_start
            left = limit - position
            if relative < 0 or relative >= len(block) or (
                    len(block) - relative < min(V2_HEADER_SIZE, left) and block_start + len(block) < limit):
                block = reader.read_at(position, min(self.block_size, left))
                block_start = position
                relative = 0
                self._block, self._block_start = block, block_start
            if fast is not None:
                # the whole batches read_header accepts, at once; it parses (and reports) where this walk stops
                room = V2_HEADER_SIZE if block_start + len(block) < limit else 0
                if runs:
                    stop, _, columns = fast.columns(block, relative, len(block), limit - block_start, room, most,
                                                    block_start)
                    if stop > relative:
                        position = self.end_position = block_start + stop
                        yield columns
                        continue
                    found = None
                else:
                    _, _, found = fast.headers(block, relative, len(block), limit - block_start, room, most, wanted,
                                               block_start, BatchHeader)
                if found:
                    wanted = min(wanted * 2, 1024)
                    for header in found:
                        position = self.end_position = header.position + header.size
                        yield header
                    continue
            try:
                header = read_header(block, relative, max_batch_size=self.max_batch_bytes, available=left)
            except TruncatedDataError as exc:
                if explicit_end:
                    raise CorruptBatchError(
                        f"batch runs past the requested end {limit}, which is not a batch boundary ({exc.detail})",
                        path=reader.path, position=position) from exc
                self.tail = reader._record_tail(position, limit, "truncated batch", exc.detail)
                break
            except CorruptDataError as exc:
                unwritten = _unwritten_tail(block, relative, self.partial_append)
                if unwritten is not None:
                    self.tail = reader._record_tail(position, limit, "zero-filled tail", unwritten)
                    break
                raise exc.located(reader.path, block_start) from exc
            header = header._replace(position=position)
            position += header.size
            self.end_position = position
            yield header
        self.end_position = position if self.tail is None else self.tail.position


class ChunkWalk:
    """Iterator of ``(file_position, buffer)`` pairs returned by :meth:`SegmentReader.chunks`; ``tail`` and
    ``end_position`` as on :class:`HeaderWalk`."""

    def __init__(self, reader: "SegmentReader", start: int, end: int | None, target_bytes: int,
                 max_batch_bytes: int | None, partial_append: bool = False):
        self.reader = reader
        self.start = start
        self.end = end
        self.target_bytes = max(int(target_bytes), V2_HEADER_SIZE)
        self.max_batch_bytes = max_batch_bytes
        self.partial_append = partial_append
        self.tail: TailReport | None = None
        self.end_position = start
        # the walk's generator sees the walk through a weak proxy: a walk left unfinished (one header read, a search
        # that stops early) is freed with its read block when dropped, not held in a cycle until a collection
        self._iterator = type(self)._walk(weakref.proxy(self))

    def __iter__(self) -> "ChunkWalk":
        return self

    def __next__(self) -> tuple[int, memoryview]:
        return next(self._iterator)

    def _walk(self) -> Iterator[tuple[int, memoryview]]:
        reader = self.reader
        limit, explicit_end = reader._limit(self.end)
        position = self.start
        fast = _FAST_WALK
        most = _walk_limit(self.max_batch_bytes)
        while position < limit:
            data = reader.read_at(position, min(self.target_bytes, limit - position))
            if not data:  # the file ends before the size seen at open: cut under the walk (a follower's truncation)
                self.tail = reader._record_tail(position, limit, "truncated batch", "file shrank while being read")
                break
            view = memoryview(data)
            data_end = position + len(data)
            cursor = 0
            stop = False
            failure = None  # corrupt framing: raised after the whole batches before it are handed over
            while cursor < len(data):
                if fast is not None:  # the whole batches read_header accepts, at once; the loop parses the next
                    cursor = fast.skip(view, cursor, len(data), len(data), V2_HEADER_SIZE if data_end < limit else 0,
                                       most)[0]
                    if cursor >= len(data):
                        break
                left = limit - (position + cursor)
                if len(data) - cursor < min(V2_HEADER_SIZE, left) and data_end < limit:
                    break  # the next header straddles this read: it starts the next chunk
                try:
                    header = read_header(view, cursor, max_batch_size=self.max_batch_bytes, available=left)
                except TruncatedDataError as exc:
                    if explicit_end:
                        raise CorruptBatchError(
                            f"batch runs past the requested end {limit}, which is not a batch boundary "
                            f"({exc.detail})", path=reader.path, position=position + cursor) from exc
                    self.tail = reader._record_tail(position + cursor, limit, "truncated batch", exc.detail)
                    stop = True
                    break
                except CorruptDataError as exc:
                    unwritten = _unwritten_tail(view, cursor, self.partial_append)
                    if unwritten is not None:
                        self.tail = reader._record_tail(position + cursor, limit, "zero-filled tail", unwritten)
                        stop = True
                        break
                    failure = exc.located(reader.path, position)
                    failure.__cause__ = exc
                    break
                if cursor + header.size > len(data):
                    if cursor == 0:  # one batch larger than target_bytes: its own chunk
                        whole = reader.read_at(position, header.size)
                        if len(whole) < header.size:  # the file shrank under us
                            self.tail = reader._record_tail(position, limit, "truncated batch",
                                                            "file shrank while being read")
                            stop = True
                            break
                        self.end_position = position + header.size
                        yield position, memoryview(whole)
                        position += header.size
                        cursor = -1
                    break
                cursor += header.size
            if cursor > 0:
                self.end_position = position + cursor
                yield position, view[:cursor]
                position += cursor
            if failure is not None:
                raise failure
            if stop:
                break
            if cursor == 0:  # nothing whole here: a read shorter than one header (the file now ends within it, cut
                # under the walk) would be made again at the same position, for ever
                self.tail = reader._record_tail(position, limit, "truncated batch", "file shrank while being read")
                break
        if self.tail is None:
            self.end_position = position


class SegmentReader:
    """Read-only access to one ``.log`` file.

    ``size`` is the file size observed at open: nothing past it is ever read, so a segment that grows while being
    read is seen as it was (complete batches only). ``tail`` is the :class:`TailReport` of the last walk that
    stopped at an unusable tail (None otherwise); ``truncated_at`` its position.
    """

    def __init__(self, path: str, filesystem: pafs.FileSystem | None = None, *,
                 opened: RandomAccessReader | None = None):
        """``opened``: a reader of the file already open (the file it has, whatever the path names now), which
        :meth:`close` then leaves open."""
        self._owned = opened is None
        self._file = RandomAccessReader(path, filesystem) if opened is None else opened
        self.path = self._file.path
        self.filesystem = self._file.filesystem
        self.size = self._file.size
        self.tail: TailReport | None = None

    @property
    def truncated_at(self) -> int | None:
        return None if self.tail is None else self.tail.position

    def read_at(self, position: int, length: int) -> bytes:
        """Up to ``length`` bytes from ``position`` (fewer at the size observed at open)."""
        return self._file.read_at(position, length)

    def crc_is_valid(self, header: BatchHeader) -> bool:
        """Whether the whole batch ``header`` (with a file position) announces carries a valid CRC: one read of
        ``header.size`` bytes, for walks that trust a header only after its batch checks out."""
        return crc_is_valid(self.read_at(header.position, header.size), header._replace(position=0))

    def _limit(self, end: int | None) -> tuple[int, bool]:
        if end is None or end >= self.size:
            return self.size, False
        return max(0, end), True

    def _record_tail(self, position: int, limit: int, reason: str, detail: str) -> TailReport:
        self.tail = TailReport(self.path, position, limit - position, reason, detail)
        return self.tail

    def iter_headers(self, start: int = 0, end: int | None = None, *,
                     max_batch_bytes: int | None = DEFAULT_MAX_BATCH_BYTES,
                     block_size: int = DEFAULT_BLOCK_SIZE, partial_append: bool = False) -> HeaderWalk:
        """Headers of the batches from byte ``start`` (a batch boundary) to ``end`` (default: the size at open),
        with FILE positions, reading ``block_size`` blocks and skipping record data. A tail is reported on the
        returned walk (``.tail``); an explicit ``end`` that cuts a batch raises :class:`CorruptBatchError`.
        ``partial_append``: the active segment, whose preallocated zeros may hold an append's first bytes
        (:func:`unwritten_at`)."""
        return HeaderWalk(self, start, end, max_batch_bytes, block_size, partial_append)

    def header_at(self, position: int = 0, *,
                  max_batch_bytes: int | None = DEFAULT_MAX_BATCH_BYTES) -> BatchHeader | None:
        """The header of the whole batch at ``position``, or None when none is there (the end of the data, or a
        tail); corrupt framing raises as in :meth:`iter_headers`."""
        return next(iter(self.iter_headers(position, max_batch_bytes=max_batch_bytes)), None)

    def chunks(self, start: int = 0, end: int | None = None, target_bytes: int = DEFAULT_CHUNK_BYTES,
               max_batch_bytes: int | None = DEFAULT_MAX_BATCH_BYTES, partial_append: bool = False) -> ChunkWalk:
        """``(file_position, buffer)`` pairs covering ``[start, end)`` whose buffers hold whole batches only,
        about ``target_bytes`` each (a bigger batch is a chunk of its own). A batch larger than
        ``max_batch_bytes`` raises :class:`CorruptBatchError` before anything is allocated for it; an incomplete
        last batch is reported on the walk (``.tail``), not raised, and never yielded. Corrupt framing raises after
        the whole batches before it (in the same read) are yielded. ``partial_append`` as in :meth:`iter_headers`."""
        return ChunkWalk(self, start, end, target_bytes, max_batch_bytes, partial_append)

    def close(self) -> None:
        if self._owned:
            self._file.close()

    def __enter__(self) -> "SegmentReader":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"SegmentReader({self.path!r}, size={self.size})"


# -- whole-segment facts ---------------------------------------------------------------------------------------

@dataclass(frozen=True)
class BatchTable:
    """Header-level facts of every complete batch in a segment, as int64 numpy arrays (one header walk)."""

    positions: np.ndarray
    base_offsets: np.ndarray
    last_offsets: np.ndarray
    max_timestamps: np.ndarray
    tail: TailReport | None

    def __len__(self) -> int:
        return int(self.positions.size)


def header_columns(reader: SegmentReader, names: tuple[str, ...], *,
                   max_batch_bytes: int | None = DEFAULT_MAX_BATCH_BYTES,
                   on_corruption: Callable[[CorruptDataError], None] | None = None
                   ) -> tuple[list[np.ndarray], HeaderWalk]:
    """The header fields ``names`` (of ``kafkaseg.wire.walk.COLUMNS``) of every complete batch of ``reader``, as
    int64 arrays in file order, from one walk from byte 0 (the compiled walk's runs, plus the headers it left to
    ``read_header``), and the walk (``tail``). Bad framing raises, unless ``on_corruption`` is given: it is called
    with the error and the arrays hold the batches before it (those :meth:`SegmentReader.iter_headers` yields)."""
    fields = [_walk.COLUMNS.index(name) for name in names]
    parts: list[list] = [[] for _ in fields]  # arrays, in order
    loose: list[list] = [[] for _ in fields]  # values of the headers read_header parsed since the last run

    def flush():
        if loose[0]:
            for part, values in zip(parts, loose):
                part.append(np.array(values, dtype=np.int64))
                values.clear()

    walk = reader.iter_headers(0, max_batch_bytes=max_batch_bytes)
    try:
        for run in walk.runs():
            if isinstance(run, BatchHeader):  # (one the compiled walk left to read_header; every one without it)
                for values, k in zip(loose, fields):
                    values.append(run[k])
                continue
            flush()
            for part, k in zip(parts, fields):
                part.append(run[k])
    except CorruptDataError as err:
        if on_corruption is None:
            raise
        on_corruption(err)
    flush()
    return [part[0] if len(part) == 1 else np.concatenate(part) if part else np.zeros(0, np.int64)
            for part in parts], walk


def batch_table(reader: SegmentReader, *, max_batch_bytes: int | None = DEFAULT_MAX_BATCH_BYTES) -> BatchTable:
    """Walk every header of ``reader`` once (memory: 32 bytes per batch)."""
    columns, walk = header_columns(reader, ("position", "base_offset", "last_offset", "max_timestamp"),
                                   max_batch_bytes=max_batch_bytes)
    return BatchTable(*columns, walk.tail)


def _reader_for(segment, filesystem, reader):
    if reader is not None:
        return reader, False
    return SegmentReader(segment.log_path, filesystem if filesystem is not None else getattr(segment, "filesystem",
                                                                                             None)), True


def log_end_offset(segment, *, filesystem: pafs.FileSystem | None = None, offset_index=None,
                   reader: SegmentReader | None = None,
                   max_batch_bytes: int | None = DEFAULT_MAX_BATCH_BYTES, as_listed: bool = True,
                   active: bool = False, high_watermark: int | None = None, reached: int | None = None) -> int:
    """``LogSegment.readNextOffset``: the offset after the last complete batch of ``segment`` (any object with
    ``base_offset``, ``log_path`` and ``index_path``, e.g. :class:`~kafkaseg.storage.layout.SegmentFiles`), or its
    base offset when it holds none. Starts at the last offset-index entry's position, so it reads about one index
    interval, not the segment. Every batch's offsets must follow the one before, and the log must reach the last
    entry's offset (a base offset, which no CRC covers, gone back would otherwise silently end the log early);
    falls back to a walk from byte 0 when the index is missing, insane or wrong (an ``active`` segment's is taken up
    to its first insane entry: :meth:`~kafkaseg.storage._index_file.FixedEntryIndex.sane_prefix`). A
    segment with a ``log_size`` (as listed) ends there unless ``as_listed`` is False: batches a live broker appended
    since are not counted. ``active``: the partition's last segment (see :func:`unwritten_at`). With the
    partition's ``high_watermark``, a last batch whose base offset skips acknowledged offsets raises
    (:func:`offsets_hidden_by_last_batch`; ``reached``: the log end the partition's other files vouch for)."""
    from kafkaseg.storage.offset_index import OffsetIndex

    reader, owned = _reader_for(segment, filesystem, reader)
    try:
        # A segment as listed (SegmentFiles.log_size): a live broker's appends since are not counted, so the end
        # agrees with the bytes a plan of the listing reads (a batch finished after the listing is the next read's)
        listed = getattr(segment, "log_size", None) if as_listed else None
        start, entry_offset, kept = 0, None, 0
        index = offset_index
        index_path, index_window = index_location(segment, "index")
        if index is None and index_path:
            try:
                index = OffsetIndex.load(index_path, segment.base_offset, reader.filesystem, window=index_window)
            except (LayoutError, CorruptIndexError):
                index = None
        if index is not None and len(index):  # (the active segment's up to what a follower's truncation left)
            index = index.for_reading(reader.size, active=active)
        if index is not None and len(index):
            kept = len(index.positions) if listed is None else int(np.count_nonzero(index.positions < listed))
            if kept:  # (entries for appends since the listing: not)
                start, entry_offset = int(index.positions[kept - 1]), int(index.offsets[kept - 1])

        cut = [False]  # whether the walk stopped at a batch past the listed size (a live broker's append since)

        before = [None]  # the batch before the last one the walk found (None: the last was the walk's first)

        def last_whole(walk_from: int):
            found = before[0] = None
            for header in reader.iter_headers(walk_from, max_batch_bytes=max_batch_bytes, partial_append=active):
                if listed is not None and header.position + header.size > listed:
                    cut[0] = True
                    break
                if found is not None and header.base_offset <= found.last_offset:
                    # (a base offset is outside the CRC: the end of the log would silently move back to it)
                    raise CorruptBatchError(_backwards(header, found), path=reader.path, position=header.position)
                before[0], found = found, header
            return found

        last = None
        from_start = start == 0
        try:
            last = last_whole(start)
            if entry_offset is not None and not cut[0] and (last is None or last.last_offset < entry_offset):
                # every broker's entry holds an offset of the log (its batch's last; inside it, up to Kafka 1.0;
                # a later batch's, on a follower): the log ends below it only if the index or the last batch is
                # wrong, which the walk from the start tells
                raise CorruptIndexError(f"the offset index's last entry holds offset {entry_offset}, past the "
                                        f"log's last batch", path=reader.path, position=start)
        except CorruptDataError:
            if from_start:
                raise
            last = None
            from_start = True  # the index may point at garbage: walk from the start (which raises if the log is bad)
            if active:  # entries a follower's truncation left after the new appends' may point into their batches:
                for k in range(kept - 2, max(kept - 2 - _EARLIER_ENTRIES, -1), -1):  # walk from an earlier one
                    if not _batch_may_fit(reader, int(index.positions[k]), int(index.offsets[k]),
                                          int(segment.base_offset), max_batch_bytes):
                        continue  # (no sound batch there, left too: one batch read, not a walk to the file's end)
                    try:
                        found = last_whole(int(index.positions[k]))
                    except CorruptDataError:
                        continue
                    if found is not None and (cut[0] or found.last_offset >= int(index.offsets[k])):
                        last, start, from_start = found, int(index.positions[k]), False
                    break
        if last is None and (start > 0 or from_start):  # the index pointed at garbage or past the data
            last = last_whole(0)
        if last is not None and high_watermark is not None and last.base_offset > high_watermark:
            walk_from = 0 if from_start else start
            before_end = (before[0].next_offset if before[0] is not None
                          else int(segment.base_offset) if last.position == walk_from == 0
                          else _end_before(reader, index, last.position, max_batch_bytes))
            hidden = offsets_hidden_by_last_batch(last, before_end, high_watermark, reached)
            if hidden is not None:
                raise SkippedOffsetsError(hidden, path=reader.path, position=last.position)
        # (batches all below the segment's base, which no segment holds: recovery truncates them, LogSegment.recover's
        # ensureOffsetInRange, and the log ends at the base)
        return max(last.next_offset, int(segment.base_offset)) if last is not None else int(segment.base_offset)
    finally:
        if owned:
            reader.close()


_EARLIER_ENTRIES = 8  # (log_end_offset: the active segment's entries before its last tried when that one fails)
_FIT_CRC_MAX_BYTES = 64 << 10  # (_batch_may_fit: a larger batch is judged by its header, as planning's entry check)


def _batch_may_fit(reader: SegmentReader, position: int, entry_offset: int, base_offset: int,
                   max_batch_bytes: int | None) -> bool:
    """Whether a whole batch starts at ``position`` that may be the one the offset index entry ``(entry_offset,
    position)`` names: its CRC valid (read whole up to 64 KiB; a larger one by its header alone), and for v2 its
    first offset between the segment's base and the entry's offset. One batch read: ``log_end_offset`` looks before
    it walks from an earlier entry to the file's end (the entry checks of planning, ``entry_check``, sit in a layer
    above and decode a legacy wrapper for its first offset; a walk from a legacy entry that does not fit fails)."""
    try:
        header = reader.header_at(position, max_batch_bytes=max_batch_bytes)
        if header is None:
            return False
        if header.size <= _FIT_CRC_MAX_BYTES and not crc_is_valid(reader.read_at(position, header.size),
                                                                  header._replace(position=0)):
            return False
    except CorruptDataError:
        return False
    return header.magic < 2 or base_offset <= header.base_offset <= entry_offset


def offsets_hidden_by_last_batch(last: BatchHeader, before_end: int | None, high_watermark: int | None,
                                 reached: int | None = None) -> str | None:
    """What is wrong, or None, when ``last``, the final batch of a partition's log, starts above the high
    watermark while the batch before it ends below: acknowledged offsets ``before_end..high_watermark - 1`` are
    then in no batch (``before_end``: the offset after the batch before ``last``, or the segment's base offset when
    ``last`` is its first).

    Only the base offset, which no CRC covers (``DefaultRecordBatch``: the CRC starts at the attributes), can do
    that in a log Kafka wrote. A leader assigns offsets one after the other (``LogValidator`` takes them from the
    log end offset) and cleans only below its high watermark (``LogCleanerManager.cleanableOffsets``: at most the
    last stable offset, and never the active segment). A follower copies the leader's batches, compaction gaps
    included, but sets its high watermark after the append, to ``min(leader's, its log end)``: the leader's is at
    least the end of any gap its cleaner made, so the follower's lies at or above ``last``'s base, or at or below
    ``before_end`` in a checkpoint written before the append. Read as they are, the batch's records fall past the
    high watermark and out of the read without a word. A high watermark inside ``last`` is left alone: a follower
    of a compacted topic holds exactly that (the same corruption by a few offsets then goes unseen), and so is a
    follower's high watermark that went back into such a gap with a leader change. Legacy (v0/v1) entries are left
    alone: a compressed wrapper's header gives its last offset only.

    That high watermark can also lie in the gap before ``last``: a leader change to a replica whose high
    watermark lagged moves a follower's back (``UnifiedLog.updateHighWatermark`` takes the leader's, bounded by
    the log end only). Nothing in the log tells the two apart, but ``reached`` can: the log end offset the
    partition's other files say the log reached (:meth:`~kafkaseg.storage.layout.PartitionDir.reached_end`, the
    recovery point or the newest producer snapshot's name). A raised base offset leaves the log's true end at
    ``before_end`` plus the batch's records, below ``last.next_offset``; no file names an offset the log never
    reached, so ``reached`` at or past ``last.next_offset`` vouches for the base offset (a clean shutdown leaves
    both there). A running broker's files do not (its recovery point is the active segment's base)."""
    if (before_end is None or high_watermark is None or last.magic < 2
            or not before_end < high_watermark < last.base_offset
            or (reached is not None and reached >= last.next_offset)):
        return None
    return (f"the last batch's base offset {last.base_offset} (offsets {last.base_offset}..{last.last_offset}) "
            f"skips offsets {before_end}..{high_watermark - 1}, below the high watermark {high_watermark}: "
            "acknowledged offsets are in no batch. Kafka assigns offsets one after the other, and a follower of a "
            "compacted topic sets its high watermark after it appends such a batch, so this base offset, which no "
            "CRC covers, is corrupt (unless a leader change moved this replica's high watermark back into a "
            "compaction gap; onCorruption=skip leaves the batch out, counted)")


def _end_before(reader: SegmentReader, index, position: int, max_batch_bytes: int | None) -> int | None:
    """The offset after the batch that ends at ``position`` (a batch boundary), walking from the offset index
    entry before it (from the start without one); None when the walk does not land on ``position`` or there is
    no batch before it."""
    k = int(np.searchsorted(index.positions, position)) if index is not None and len(index) else 0
    previous = None
    try:
        for header in reader.iter_headers(int(index.positions[k - 1]) if k else 0, position,
                                          max_batch_bytes=max_batch_bytes):
            previous = header
    except CorruptDataError:
        return None
    return previous.next_offset if previous is not None and previous.end == position else None


def _backwards(header: BatchHeader, previous: BatchHeader) -> str:
    """What the decoders say of a batch whose offsets do not follow the batch before it."""
    return f"non-monotonic offsets: batch base offset {header.base_offset} follows offset {previous.last_offset}"


def zero_filled_tail(segment, *, filesystem: pafs.FileSystem | None = None, offset_index=None,
                     max_batch_bytes: int | None = DEFAULT_MAX_BATCH_BYTES,
                     start_position: int | None = None, walked: list | None = None) -> tuple[int, bool] | None:
    """``(position, data_after)`` of a zero-filled region that ends ``segment``'s walk, or None: brokers with
    ``log.preallocate=true`` leave one in the active segment. Walks from the last offset-index entry (from the
    start when that entry itself lies in the zeros, as after a crash that flushed the index but not the log), and
    samples the rest of the file: ``data_after`` is True when a non-zero byte follows (a hole, or a torn write
    whose first page was lost), not a preallocated tail. Sampling can miss data between its probes.
    ``start_position`` (a batch position, e.g. the last index entry's) replaces ``offset_index`` as the walk's
    start. ``walked``: a list that gets ``(start, last header)`` of the walk that found the zeros (where it started,
    and the whole batch it walked last, which ends where they begin; None when it walked none)."""
    reader, owned = _reader_for(segment, filesystem, None)
    try:
        if start_position is not None:
            start = start_position
        else:
            start = int(offset_index.positions[-1]) if offset_index is not None and len(offset_index) else 0
        for attempt_start in dict.fromkeys((start, 0)):
            walk = reader.iter_headers(attempt_start, max_batch_bytes=max_batch_bytes, partial_append=True)
            last = None
            try:
                for last in walk:
                    pass
            except CorruptDataError:
                return None
            tail = walk.tail
            if tail is None or tail.reason != "zero-filled tail":
                return None
            if tail.position > attempt_start or attempt_start == 0:
                break
        if walked is not None:
            walked.append((attempt_start, last))
        first = min(tail.position + 8, reader.size)  # an append in progress may have written its base offset
        span = reader.size - first
        probes = [first + span * k // 16 for k in range(16)] + [max(first, reader.size - 4096)]
        return tail.position, any(any(reader.read_at(p, 4096)) for p in probes)
    finally:
        if owned:
            reader.close()


def first_nonzero_byte(reader: "SegmentReader", position: int, chunk: int = 1 << 20) -> int | None:
    """The position of the first non-zero byte at or after ``position`` in ``reader``'s file, or None (zeros to
    the end: a preallocated tail, not a zeroed batch header with records after it). Reads the rest of the file
    once, ``chunk`` bytes at a time (no more held), skipping a local sparse file's holes (all zeros) unread."""
    next_data = getattr(reader._file, "next_data", None)
    while position < reader.size:
        following = position if next_data is None else next_data(position)
        if following is None or following >= reader.size:
            return None
        position = following
        data = reader.read_at(position, min(chunk, reader.size - position))
        if not data:
            return None
        stripped = len(data) - len(bytes(data).lstrip(b"\0"))
        if stripped < len(data):
            return position + stripped
        position += len(data)
    return None


def torn_before_zeros(segment, zeros_at: int, high_watermark: int | None, *,
                      filesystem: pafs.FileSystem | None = None, start_position: int = 0,
                      max_batch_bytes: int | None = DEFAULT_MAX_BATCH_BYTES,
                      zero_walk: tuple | None = None) -> BatchHeader | None:
    """The active segment's final batch, the one ending at ``zeros_at`` where zeros run to the end of the file
    (:func:`zero_filled_tail` without data after), when it fails its CRC and holds no acknowledged offset (its
    base offset is at or past ``high_watermark``, or none is checkpointed); else None. A broker with
    ``log.preallocate=true`` writes an append into the zeros in several writes: caught between them, the length
    field is in place and the rest is still zeros, so the bytes read as a whole batch with a bad CRC. Kafka's
    recovery truncates there (``LogSegment.recover``), as it does a torn tail in a file that is not preallocated.
    ``start_position``: a batch boundary before it (the last offset-index entry's position). ``zero_walk``:
    :func:`zero_filled_tail`'s ``walked`` (``(start, last header)``), whose last header is the final batch when
    that walk started where this one would (no second walk of the same headers)."""
    begin = start_position if start_position < zeros_at else 0
    reader, owned = _reader_for(segment, filesystem, None)
    try:
        last = None
        if zero_walk is not None and zero_walk[0] == begin:
            last = zero_walk[1]  # (the whole batches up to the zeros, walked there)
        else:
            try:
                for last in reader.iter_headers(begin, zeros_at, max_batch_bytes=max_batch_bytes):
                    pass
            except CorruptDataError:
                return None
        if (last is None or last.end != zeros_at or (high_watermark is not None and last.base_offset < high_watermark)
                or reader.crc_is_valid(last)):
            return None
        return last
    finally:
        if owned:
            reader.close()


def zeros_hide_records(data_after: bool) -> str | None:
    """Why zeros that end the active segment's walk (:func:`zero_filled_tail`: ``data_after``) are not a
    preallocated tail, or None: data follows them. Zeros to the end of the file are a preallocated segment's
    (``log.preallocate``) however many offsets the high watermark says the log held past them: a crash that lost
    such a file's unflushed pages leaves zeros where they were, and Kafka's recovery truncates at the first zero
    batch size as at any invalid tail (``LogSegment.recover``: a size of 0 is a ``CorruptRecordException``), so
    the log ends there as a file cut at that byte does, and the high watermark's rules decide (a note, or data loss
    when the recovery point says the offsets were flushed). The rule planning and lookups share."""
    return "data follows them" if data_after else None


def data_after_zeros(reader: "SegmentReader", position: int) -> int | None:
    """Where data follows the zeros that end a walk at ``position`` (a zeroed batch header hiding records), or
    None: zeros to the end (preallocation), or a header there now (a live broker appended at ``position`` after
    the walk: a preallocated active segment grows into its zeros, so bytes found past them can be a new batch)."""
    data_at = first_nonzero_byte(reader, position)
    if data_at is None or any(reader.read_at(position, HEADER_PREFIX_SIZE)):
        return None
    return data_at


def zeros_hiding_records(reader: "SegmentReader", position: int) -> str | None:
    """Why the zeros that end a walk of ``reader``'s segment at ``position`` are damage (a zeroed batch header with
    records after it, which Kafka's reader fails on: record size 0), or None when they are not (zeros to the end:
    preallocation; see :func:`data_after_zeros`). Verify and lookups report it alike."""
    data_at = data_after_zeros(reader, position)
    if data_at is None:
        return None
    return (f"zeros end the readable batches but data follows at byte {data_at}: a zeroed batch header hiding "
            "records, not a preallocated tail")


def readable_end(segment, *, step_over: bool = False, verify_crc: bool = True, filesystem: pafs.FileSystem | None = None,
                 max_batch_bytes: int | None = DEFAULT_MAX_BATCH_BYTES,
                 high_watermark: int | None = None, reached: int | None = None) -> tuple[int, int]:
    """``(offset, position)`` just after the last whole batch of ``segment`` that a walk from its start reaches
    (its base offset and 0 when there is none). Without ``step_over`` the walk ends at the first corrupt framing,
    where Kafka's recovery would truncate. With it, corrupt framing is stepped over as the decoders'
    resynchronisation does for a lenient read: by its declared length, only onto a whole batch (with a valid CRC
    when ``verify_crc``), the two together within one ``max_batch_bytes`` batch; else the walk ends there. A batch
    whose offsets do not follow the one before (a base offset, which no CRC covers, gone back) ends the walk, or
    is stepped over with ``step_over``, unless it follows the batch before that one: then the one before it,
    whose offset field jumped past it, is stepped over instead, as a lenient read skips it. With the partition's ``high_watermark`` (``segment`` is its active one), a
    last batch whose base offset skips acknowledged offsets (:func:`offsets_hidden_by_last_batch`, ``reached`` as
    there) is not readable: the walk ends before it."""
    reader, owned = _reader_for(segment, filesystem, None)
    last, before, position = None, None, 0
    stepped = adjacent = False  # whether bytes were stepped over since ``last``; before ``last`` (``adjacent``: not)
    listed = getattr(segment, "log_size", None)  # as listed: appends since are not counted (log_end_offset)
    limit = reader.size if listed is None else min(reader.size, listed)
    try:
        while position < limit:
            try:
                for header in reader.iter_headers(position, max_batch_bytes=max_batch_bytes):
                    if header.position + header.size > limit:
                        break
                    if last is not None and header.base_offset <= last.last_offset:
                        if (step_over and header.base_offset < last.base_offset
                                and (before is None or header.base_offset > before.last_offset)):
                            # ``last``'s offset field jumped past this batch, which follows the one before it:
                            # the decoders skip ``last`` (offset_field_past_next), not this one
                            last, adjacent, stepped = header, False, False
                            continue
                        if step_over:
                            stepped = True
                            continue
                        break
                    before, last, adjacent, stepped = last, header, not stepped, False
                break
            except CorruptDataError as err:
                if not step_over or err.position is None or err.position < position:
                    break
                prefix = reader.read_at(err.position, LOG_OVERHEAD)
                size = int.from_bytes(prefix[8:], "big", signed=True) if len(prefix) == LOG_OVERHEAD else -1
                following = err.position + LOG_OVERHEAD + size
                if (size < min(MIN_ENTRY_SIZE.values()) or following >= limit
                        or (max_batch_bytes is not None and size > max_batch_bytes)):
                    break
                try:
                    landing = reader.header_at(following, max_batch_bytes=max_batch_bytes)
                except CorruptDataError:
                    break
                if landing is None or (max_batch_bytes is not None
                                       and following - err.position + landing.size > LOG_OVERHEAD + max_batch_bytes):
                    break
                if verify_crc and not reader.crc_is_valid(landing):
                    break
                position, stepped = following, True
    finally:
        if owned:
            reader.close()
    if last is not None and adjacent and offsets_hidden_by_last_batch(
            last, before.next_offset if before is not None else int(segment.base_offset), high_watermark, reached):
        last, position = before, last.position
        return (last.next_offset if last is not None else int(segment.base_offset)), position
    return (last.next_offset, last.end) if last is not None else (int(segment.base_offset), 0)


class IndexedPastEnd(NamedTuple):
    """What a partition's files say its active segment held past where its readable batches end (byte
    ``end_position``, offset ``end_offset``): ``offset_entries`` ``.index`` entries at or past that byte holding
    offsets at or past that offset, ``time_entries`` ``.timeindex`` entries holding such offsets, the largest offset
    either holds (``last_offset``, None without such an entry) and the largest timestamp of those time entries
    (``timestamp``, None without one); ``snapshot``: ``(offset, file name)`` of the newest producer state
    ``.snapshot`` named past ``end_offset`` (:func:`with_snapshot`), None without one.

    Why entries past the end prove records were there: ``LogSegment.append`` appends a batch to the log and only
    then indexes it (``offsetIndex().append(largestOffset, physicalPosition)``, ``timeIndex().maybeAppend``), so
    an entry names a batch the file held whole. A snapshot is named by the producer state's end offset when taken
    (``ProducerStateManager.takeSnapshot``), which is the log end offset (``UnifiedLog.append`` updates it after the
    append; a roll sets it to the new segment's base): the log had reached that offset. Neither proves the records
    were ever on disk or acknowledged: the indexes are memory-mapped and the operating system writes their pages
    back on its own, apart from the log's, so a power loss can keep index entries whose batches' log pages never
    reached the disk (Kafka's recovery truncates the active segment and rebuilds its indexes: ``LogSegment.recover``);
    a roll writes its snapshot without a sync and syncs it with the flush of the segment later
    (``UnifiedLog.roll``: ``takeSnapshot(false)``), so a crash can keep the snapshot and lose the log's pages
    (recovery then deletes snapshots past the log end: ``ProducerStateManager.truncateAndReload``); a copy taken
    while a broker wrote can take the indexes after the log; ``AbstractIndex.truncateToEntries`` only moves the
    index's position, so a follower's truncation leaves the truncated entries in a live active segment's
    preallocated index file; and a follower's truncation cuts the log before it deletes the snapshots past its new
    end (``UnifiedLog.truncateTo``). The recovery point (``recovery-point-offset-checkpoint``) is what tells flushed
    from not, and it says so on its own, with no entry or snapshot past the end: a broker checkpoints it after
    flushing the log up to it (``UnifiedLog.flush``, ``markFlushed``), and lowers and checkpoints it at once when it
    truncates (``LocalLog.updateLogEndOffset``, ``LogManager.truncateTo``); see :meth:`flushed_below`."""

    end_position: int
    end_offset: int
    last_offset: int | None
    timestamp: int | None = None
    offset_entries: int = 0
    time_entries: int = 0
    snapshot: tuple[int, str] | None = None

    @property
    def proves_written(self) -> bool:
        """Whether an index entry or a snapshot says the log held offsets past the end."""
        return self.last_offset is not None or self.snapshot is not None

    @property
    def proven_end(self) -> int:
        """The offset after the last one the entries and the snapshot prove (``end_offset`` when none does)."""
        ends = [self.end_offset]
        if self.last_offset is not None:
            ends.append(self.last_offset + 1)
        if self.snapshot is not None:
            ends.append(self.snapshot[0])
        return max(ends)

    def flushed_below(self, recovery_point: int | None) -> int | None:
        """The recovery point when it is above the readable end: the broker had flushed the log up to it, so the
        file lost offsets ``[end_offset, recovery_point)`` it had on disk; else None (none of the offsets past
        the end was flushed: a crash may have lost them unflushed)."""
        if recovery_point is None or recovery_point <= self.end_offset:
            return None
        return recovery_point

    def lost_end(self, recovery_point: int | None) -> int:
        """The end of the offsets past the readable end that the files say the log held: the recovery point's
        (flushed) or the entries' and snapshot's, whichever is further."""
        return max(self.flushed_below(recovery_point) or self.end_offset, self.proven_end)

    def judged(self, recovery_point: int | None, *, trusted: bool = True) -> str:
        """:meth:`describe` and what the evidence proves by ``recovery_point`` (:meth:`flushed_below`): the words a
        read's error or warning and ``kafkaseg verify`` use. Not ``trusted``: the recovery point was checkpointed
        again since the listing (a truncation in progress), so it proves nothing flushed."""
        flushed = self.flushed_below(recovery_point) if trusted else None
        proven = self.proven_end
        if flushed is not None:
            # (the entries are this file's; a snapshot or the recovery point speaks for the log)
            indexed = self.last_offset is not None and self.last_offset + 1 >= flushed
            where = "in this file" if indexed else "(in this file, or in a segment after it that is gone)"
            later = (f"; offsets {flushed}..{proven - 1} were written after that flush" if proven > flushed
                     else "")
            return (f"{self.describe()}: the recovery point {recovery_point} says the broker had flushed the log "
                    f"up to offset {flushed}, so offsets {self.end_offset}..{flushed - 1} were on disk {where} "
                    f"and are not readable now (a file cut short, or a copy that missed them){later}")
        recovery = ("no recovery point is checkpointed" if recovery_point is None else
                    f"none is below the recovery point {recovery_point}" if trusted else
                    f"the recovery point {recovery_point} was checkpointed again since the listing (a truncation "
                    "lowers it), so it says nothing")
        why = []
        if self.last_offset is not None:
            why.append("a broker indexes a batch after writing it")
        if self.snapshot is not None:
            why.append("a producer snapshot is named by the log end offset when it is taken")
        lost = ["a crash that lost the log's unflushed pages but not the "
                + " or ".join(w for w, has in (("index's", self.last_offset is not None),
                                              ("snapshot (written unsynced at a roll)", self.snapshot is not None))
                              if has)
                + " (Kafka's recovery truncates there)", "a copy taken while the broker wrote (the "
                + ("indexes" if self.snapshot is None else "other files") + " after the log)"]
        if self.last_offset is not None:
            lost.append("entries a follower's truncation left in a live active segment's preallocated index")
        if self.snapshot is not None:
            lost.append("a follower's truncation caught before it deleted the snapshots past its new end")
        return (f"{self.describe()}: offsets {self.end_offset}..{proven - 1} were written to this log once "
                f"({'; '.join(why)}), but {recovery}, so they may never have reached the disk: "
                f"{', '.join(lost[:-1])}, or {lost[-1]}. No high watermark says whether they were acknowledged")

    def describe(self) -> str:
        """``index entries up to offset N / time T (...) [and the producer snapshot S] point past the readable end
        (byte B, offset O; ...)``, or where the readable end is when nothing points past it."""
        said = []
        if self.last_offset is not None:
            when = "" if self.timestamp is None else \
                f" / time {self.timestamp} ({utc_ms_text(self.timestamp) or 'not a date'})"
            said.append(f"index entries up to offset {self.last_offset}{when}")
        if self.snapshot is not None:
            said.append(f"the producer snapshot {self.snapshot[1]} (taken at log end offset {self.snapshot[0]})")
        if not said:
            return f"the active segment's readable batches end at byte {self.end_position}, offset {self.end_offset}"
        counts = ", ".join(f"{n} {kind} entr{'y' if n == 1 else 'ies'}"
                           for n, kind in ((self.offset_entries, ".index"), (self.time_entries, ".timeindex")) if n)
        verb = "point" if self.last_offset is not None else "points"  # (entries, or the snapshot alone)
        return (f"{' and '.join(said)} {verb} past the readable end (byte {self.end_position}, offset "
                f"{self.end_offset}{'; ' + counts if counts else ''})")


def indexed_past_end(offset_index, time_index, end_position: int, end_offset: int,
                     below: int | None = None) -> IndexedPastEnd | None:
    """What the loaded ``offset_index`` and ``time_index`` of a segment (either None) say it held past its readable
    end (see :class:`IndexedPastEnd`), or None when no entry points past it. Entries that disagree with the end
    (at or past the byte but below the offset) prove nothing and are left out; so are entries at or past ``below``
    (a rolled segment's next base: offsets of another segment, as a cleaner's copy merging it holds)."""
    last, timestamp, offset_entries, time_entries = None, None, 0, 0
    if offset_index is not None and len(offset_index):
        past = (offset_index.positions >= end_position) & (offset_index.offsets >= end_offset)
        if below is not None:
            past &= offset_index.offsets < below
        offset_entries = int(np.count_nonzero(past))
        if offset_entries:
            last = int(offset_index.offsets[past].max())
    if time_index is not None and len(time_index):
        past = (time_index.offsets >= end_offset) & (time_index.timestamps >= 0)
        if below is not None:
            past &= time_index.offsets < below
        time_entries = int(np.count_nonzero(past))
        if time_entries:
            timestamp = int(time_index.timestamps[past].max())
            last = max(int(time_index.offsets[past].max()), -1 if last is None else last)
    if last is None:
        return None
    return IndexedPastEnd(end_position, end_offset, last, timestamp, offset_entries, time_entries)


def with_snapshot(found: IndexedPastEnd | None, snapshot: tuple[int, str] | None, end_position: int,
                  end_offset: int) -> IndexedPastEnd:
    """``found`` (None: no index entry past the end) with the newest producer snapshot named past ``end_offset``
    (``(offset, file name)``, None when there is none: see :func:`snapshot_past`)."""
    if found is None:
        found = IndexedPastEnd(end_position, end_offset, None)
    return found._replace(snapshot=snapshot if snapshot is not None and snapshot[0] > end_offset else None)


def snapshot_past(snapshot_paths, end_offset: int) -> tuple[int, str] | None:
    """``(offset, file name)`` of the newest ``<offset>.snapshot`` among ``snapshot_paths`` named past
    ``end_offset``, or None."""
    named = ((snapshot_offset_from_name(basename(path)), basename(path)) for path in snapshot_paths)
    return max(((offset, name) for offset, name in named if offset is not None and offset > end_offset),
               default=None)


def nonzero_extent(reader, position: int, end: int, chunk: int = 1 << 20) -> int:
    """How many of the bytes ``[position, end)`` of ``reader`` come before the zeros that run to ``end`` (all of
    them when the last is not a zero): what a lost tail counts as corrupt bytes, since zeros to the end of the
    file are a preallocated segment's (``log.preallocate``), which Kafka's recovery truncates as it does any
    invalid tail (``LogSegment.recover``: a batch size of 0 is a ``CorruptRecordException``), not damage."""
    at = end
    while at > position:
        start = max(position, at - chunk)
        data = np.frombuffer(bytes(reader.read_at(start, at - start)), np.uint8)
        found = np.flatnonzero(data)
        if len(found):
            return start + int(found[-1]) + 1 - position
        if len(data) < at - start:  # (the file is shorter now: count what was there as listed)
            return end - position
        at = start
    return 0


def load_index_files(base_offset: int, index: tuple[str | None, tuple[int, int] | None],
                     timeindex: tuple[str | None, tuple[int, int] | None],
                     filesystem: pafs.FileSystem | None = None) -> tuple:
    """``(offset index, time index)`` of the files at ``index`` and ``timeindex`` (``(path, window)`` each, as
    :func:`~kafkaseg.storage._index_file.index_location` gives them), read now; an index that is missing or cannot
    be read is None (counted as empty)."""
    from kafkaseg.storage.offset_index import OffsetIndex
    from kafkaseg.storage.time_index import TimeIndex

    loaded = []
    for kind, (path, window) in ((OffsetIndex, index), (TimeIndex, timeindex)):
        try:
            loaded.append(kind.load(path, base_offset, filesystem, window=window) if path else None)
        except (LayoutError, CorruptIndexError):
            loaded.append(None)
    return tuple(loaded)


def largest_timestamp(segment, *, filesystem: pafs.FileSystem | None = None, time_index=None) -> int:
    """``LogSegment.largestTimestamp`` as retention uses it: the time index's last timestamp when it is >= 0, else
    the ``.log`` file's mtime (``segment.mtime_ms``). Without ``time_index``, the segment's ``.timeindex`` file is
    read when present (a missing one counts as empty, as Kafka resizes a newly created time index to 0). The file
    alone, as a rolled segment's stands: the retention audit takes ``PartitionLookup.largest_timestamp``
    (:mod:`kafkaseg.lookup`), which adds an active segment's batches past its last entry and passes over the
    entries a follower's truncation may have left in it (the truncated generation's, another leader's clock)."""
    from kafkaseg.storage.time_index import TimeIndex

    timeindex_path, timeindex_window = index_location(segment, "timeindex")
    if time_index is None and timeindex_path:
        fs_ = filesystem if filesystem is not None else getattr(segment, "filesystem", None)
        try:
            time_index = TimeIndex.load(timeindex_path, segment.base_offset, fs_, window=timeindex_window)
        except (LayoutError, CorruptIndexError):
            time_index = None
    if time_index is not None and time_index.max_timestamp >= 0:
        return time_index.max_timestamp
    return int(segment.mtime_ms)
