"""Shared loading and bookkeeping for the fixed-size-entry index files (``.index``, ``.timeindex``).

A live broker preallocates the active segment's indexes to ``segment.index.bytes`` (10 MiB) and fills them from the
front, leaving zeros behind the last entry; the file is trimmed on roll or clean shutdown. Kafka itself trusts the
file length when it opens an index (``AbstractIndex.createMappedBuffer``: entries = length / entrySize) and relies
on recovery to rebuild the indexes of segments above the recovery point. A reader of a live or crashed dir needs the
rule ``DumpLogSegments.dumpIndex``/``dumpTimeIndex`` apply instead ("since it is a sparse file, in the event of a
crash there may be many zero entries, stop if we see one"): entries end at the first entry after entry 0 whose
offset equals the base offset (relative offset 0). Entries after entry 0 always have a larger offset (offset index:
strictly increasing; time index: each entry is a later batch), so relative offset 0 there can only be unwritten space.
An all-zero entry 0 followed by unwritten space is unwritten too (a live segment too young for its first entry,
where DumpLogSegments would print it), and so is a lone all-zero offset entry: ``LogSegment.append`` and
``recover`` index a batch only after ``index.interval.bytes`` of earlier ones, so never the one at position 0. A
lone time entry (timestamp 0, base offset) is real: the roll-time entry of a segment whose records all have
timestamp 0.

Files are read in bounded chunks: memory is the real entries plus one chunk, whatever the preallocated size.
:func:`load_entries` (files) and :func:`entries_from_bytes` (bytes in memory) apply the rule through the same
:func:`_cut_at_tail`. :class:`FixedEntryIndex` is the common base of ``OffsetIndex`` and ``TimeIndex``: the file
bookkeeping, construction, ``check``/``__repr__`` and the sanity checks both indexes make; each index module keeps
its grammar, dtype, lookups and its own list of checks.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow.fs as pafs

from kafkaseg.errors import CorruptIndexError, LayoutError
from kafkaseg.storage.fs import RandomAccessReader

#: Default refusal bound for the real (non-zero-tail) part of an index: segment.index.bytes defaults to 10 MiB and
#: Kafka caps it at Int.MaxValue, but nobody runs with more than a few tens of MiB.
DEFAULT_MAX_INDEX_BYTES = 64 * 1024 * 1024
_CHUNK_ENTRIES = 128 * 1024


class IndexProblem(str):
    """A sanity-check finding: the text (a ``str``) plus ``position``, the byte in the index file it concerns."""

    position: int | None

    def __new__(cls, detail: str, position: int | None = None):
        text = detail if position is None else f"byte {position}: {detail}"
        obj = super().__new__(cls, text)
        obj.detail = detail
        obj.position = position
        return obj


@dataclass(frozen=True)
class LoadedEntries:
    entries: np.ndarray          # structured array of the entries before the preallocated tail
    file_size: int               # bytes on disk
    tail_entries: int            # whole entries in the zero tail (0 for a trimmed file)
    tail_garbage_position: int | None  # first non-zero byte inside the tail (None: the tail is all zeros)


def _cut_at_tail(data, count: int, dtype: np.dtype, relative_offset_field: str,
                 first_entry_number: int) -> tuple[np.ndarray, int | None, int | None]:
    """Apply the tail rule (module doc) to ``count`` whole entries at the front of ``data``, the first being entry
    ``first_entry_number`` of the file. Returns the entries before the tail, the number (within ``data``) of the
    entry where the tail starts (None: no tail here) and the byte (within ``data``) of the first non-zero byte of
    the tail's whole entries (None: all zeros)."""
    entry_size = dtype.itemsize
    chunk = np.frombuffer(data, dtype=dtype, count=count)
    zero_at = np.flatnonzero(chunk[relative_offset_field] == 0)
    # a lone (0, 0) is a real time entry (a rolled segment whose records all have timestamp 0), never an offset one
    offset_kind = dtype.names[0] == relative_offset_field
    followed_by_zeros = count > 1 and chunk[relative_offset_field][1] == 0
    entry0_unwritten = (first_entry_number == 0 and count and (followed_by_zeros or (offset_kind and count == 1))
                        and _first_nonzero_byte(np.frombuffer(data, dtype=np.uint8, count=entry_size)) is None)
    if first_entry_number == 0 and not entry0_unwritten:
        zero_at = zero_at[zero_at > 0]  # entry 0 may really be at relative offset 0, unless it is unwritten
    if not zero_at.size:
        return chunk, None, None
    cut = int(zero_at[0])
    garbage = _first_nonzero_byte(np.frombuffer(data, dtype=np.uint8, count=count * entry_size)[cut * entry_size:])
    return chunk[:cut], cut, None if garbage is None else cut * entry_size + garbage


def _first_nonzero_byte(data) -> int | None:
    nz = np.flatnonzero(np.frombuffer(data, dtype=np.uint8))
    return int(nz[0]) if nz.size else None


def entries_from_bytes(data, dtype: np.dtype, relative_offset_field: str) -> LoadedEntries:
    """:func:`load_entries` for an index held in memory (no size cap: the bytes are already there)."""
    whole = len(data) // dtype.itemsize
    entries, cut, garbage = _cut_at_tail(data, whole, dtype, relative_offset_field, 0)
    return LoadedEntries(entries, len(data), 0 if cut is None else whole - cut, garbage)


def index_location(segment, kind: str) -> tuple[str | None, tuple[int, int] | None]:
    """Where ``segment``'s index of ``kind`` (``"index"``, ``"timeindex"``, ``"txnindex"``) is: ``(path, None)``
    for a file of its own, ``(path, (position, size))`` for a range of an object holding several indexes (Aiven's
    tiered-storage ``.indexes``: ``SegmentFiles.packed_indexes``), ``(None, None)`` when it has none."""
    path = getattr(segment, f"{kind}_path", None)
    if path:
        return path, None
    for packed_kind, packed_path, position, size in getattr(segment, "packed_indexes", ()):
        if packed_kind == kind:
            return packed_path, (position, size)
    return None, None


def window_of(reader: RandomAccessReader, window: tuple[int, int] | None) -> tuple[int, int]:
    """``(start, size)`` of the bytes an index occupies in the file ``reader`` opened: all of it, or ``window``
    (``(position, size)``), which must lie within the file."""
    if window is None:
        return 0, reader.size
    position, size = window
    if position < 0 or size < 0 or position + size > reader.size:
        raise LayoutError(f"{reader.path}: an index placed at bytes [{position}, {position + size}) of it, which "
                          f"holds {reader.size} bytes")
    return position, size


def load_entries(path: str, filesystem: pafs.FileSystem | None, dtype: np.dtype, relative_offset_field: str,
                 max_bytes: int = DEFAULT_MAX_INDEX_BYTES, window: tuple[int, int] | None = None) -> LoadedEntries:
    """Read an index file's entries (or those of the ``window`` ``(position, size)`` of a file holding several),
    stopping at the preallocated tail (see the module doc). Positions reported are within the index."""
    entry_size = dtype.itemsize
    with RandomAccessReader(path, filesystem) as reader:
        start, file_size = window_of(reader, window)
        whole = file_size // entry_size
        kept: list[np.ndarray] = []
        kept_count = 0
        tail_start: int | None = None  # entry number where the tail starts
        garbage: int | None = None
        entry_number = 0
        while entry_number < whole:
            count = min(_CHUNK_ENTRIES, whole - entry_number)
            data = reader.read_at(start + entry_number * entry_size, count * entry_size)
            if len(data) < count * entry_size:  # the file shrank under us: use what is there
                count = len(data) // entry_size
                whole = entry_number + count
                data = data[:count * entry_size]
            if tail_start is None:
                chunk, cut, chunk_garbage = _cut_at_tail(data, count, dtype, relative_offset_field, entry_number)
                kept.append(chunk)
                kept_count += len(chunk)
                if cut is not None:
                    tail_start = entry_number + cut
                if chunk_garbage is not None:
                    garbage = entry_number * entry_size + chunk_garbage
                if kept_count * entry_size > max_bytes:
                    raise CorruptIndexError(
                        f"index holds more than {max_bytes} bytes of entries (cap maxIndexBytes); refusing to load",
                        path=path, position=max_bytes)
            elif garbage is None:
                chunk_garbage = _first_nonzero_byte(data)
                if chunk_garbage is not None:
                    garbage = entry_number * entry_size + chunk_garbage
            else:
                break
            entry_number += count
    entries = np.concatenate(kept) if kept else np.zeros(0, dtype=dtype)
    tail_entries = 0 if tail_start is None else whole - tail_start
    return LoadedEntries(entries, file_size, tail_entries, garbage)


def raise_first_problem(problems: list[IndexProblem], path: str | None) -> None:
    """The ``check`` of every index: raise :class:`CorruptIndexError` (file and byte) on the first problem."""
    if problems:
        raise CorruptIndexError(problems[0].detail, path=path, position=problems[0].position)


class FixedEntryIndex:
    """Base of ``OffsetIndex`` and ``TimeIndex``: the entries of one index file (or of one rebuilt in memory) as
    two int64 numpy arrays, one of them the absolute ``offsets``.

    ``file_size`` is the size on disk (None when rebuilt), ``tail_entries`` how many zero entries of a preallocated
    tail were dropped and ``tail_garbage_position`` the first non-zero byte in that tail (None: clean).
    ``rebuilt``/``rebuild_reason`` say whether this index came from walking the log instead of the file, and why.

    A subclass states its file format in its class statement (``class OffsetIndex(FixedEntryIndex, dtype=...,
    columns=..., kind=...)``): ``dtype`` the on-disk entry (``ENTRY_SIZE`` is its size), ``columns`` the
    (attribute, dtype field) of the two arrays in the order of an entry tuple (the ``relative_offset`` field is
    stored as absolute offsets, plus the base offset), ``kind`` its name in problem texts.
    """

    ENTRY_SIZE: int
    _DTYPE: np.dtype
    _COLUMNS: tuple[tuple[str, str], tuple[str, str]]
    _KIND: str
    offsets: np.ndarray

    def __init_subclass__(cls, *, dtype: np.dtype, columns: tuple[tuple[str, str], tuple[str, str]], kind: str,
                          **kwargs):
        super().__init_subclass__(**kwargs)
        cls._DTYPE = dtype
        cls.ENTRY_SIZE = dtype.itemsize
        cls._COLUMNS = columns
        cls._KIND = kind

    def __init__(self, base_offset: int, first, second, *, path: str | None = None, file_size: int | None = None,
                 tail_entries: int = 0, tail_garbage_position: int | None = None, rebuilt: bool = False,
                 rebuild_reason: str | None = None):
        """``first``/``second``: the two arrays (see the class doc); the bookkeeping arguments are keyword-only."""
        self.base_offset = int(base_offset)
        (first_name, _), (second_name, _) = self._COLUMNS
        setattr(self, first_name, np.asarray(first, dtype=np.int64))
        setattr(self, second_name, np.asarray(second, dtype=np.int64))
        if getattr(self, first_name).shape != getattr(self, second_name).shape:
            raise ValueError(f"{first_name} and {second_name} differ in length")
        self.path = path
        self.file_size = file_size
        self.tail_entries = tail_entries
        self.tail_garbage_position = tail_garbage_position
        self.rebuilt = rebuilt
        self.rebuild_reason = rebuild_reason

    # -- construction -------------------------------------------------------------------------------------------
    @classmethod
    def _from_loaded(cls, loaded: LoadedEntries, base_offset: int, path: str | None):
        columns = []
        for _, field in cls._COLUMNS:
            column = loaded.entries[field].astype(np.int64)
            columns.append(column + base_offset if field == "relative_offset" else column)
        return cls(base_offset, *columns, path=path, file_size=loaded.file_size,
                   tail_entries=loaded.tail_entries, tail_garbage_position=loaded.tail_garbage_position)

    @classmethod
    def empty(cls, base_offset: int, **kwargs):
        """An index without entries; ``kwargs`` are the constructor's keyword arguments."""
        return cls(base_offset, np.zeros(0, np.int64), np.zeros(0, np.int64), **kwargs)

    @classmethod
    def from_bytes(cls, data: bytes, base_offset: int, path: str | None = None):
        """Parse an index held in memory (same trimming rule as :meth:`load`)."""
        return cls._from_loaded(entries_from_bytes(data, cls._DTYPE, "relative_offset"), base_offset, path)

    @classmethod
    def load(cls, path: str, base_offset: int, filesystem: pafs.FileSystem | None = None, *,
             max_bytes: int = DEFAULT_MAX_INDEX_BYTES, window: tuple[int, int] | None = None):
        """Read ``path`` (or its ``window`` ``(position, size)``: see :func:`index_location`) in bounded chunks.
        Raises :class:`LayoutError` when missing/unreadable and :class:`CorruptIndexError` when its real entries
        exceed ``max_bytes``."""
        loaded = load_entries(path, filesystem, cls._DTYPE, "relative_offset", max_bytes, window)
        return cls._from_loaded(loaded, base_offset, path)

    # -- queries ------------------------------------------------------------------------------------------------
    def __len__(self) -> int:
        return int(self.offsets.size)

    @property
    def entries(self) -> int:
        return len(self)

    def _arrays(self) -> tuple[np.ndarray, np.ndarray]:
        (first_name, _), (second_name, _) = self._COLUMNS
        return getattr(self, first_name), getattr(self, second_name)

    def entry(self, n: int) -> tuple[int, int]:
        """Entry ``n`` as a tuple of ints, in the order of ``_COLUMNS``."""
        first, second = self._arrays()
        return int(first[n]), int(second[n])

    def __iter__(self):
        first, second = self._arrays()
        return zip(first.tolist(), second.tolist())

    def sane_prefix(self, log_size: int | None, *, attempts: int = 8, **checks):
        """This index cut before the first entry a sanity problem (``sanity_problems(log_size, **checks)``) flags,
        again while the cut one has one: what a live broker reads of an active segment's index after a follower's
        truncation (``UnifiedLog.truncateTo`` cuts the ``.log`` but ``AbstractIndex.truncateToEntries`` only moves
        the index's position, so the truncated generation's entries follow the new appends' in the preallocated
        file, out of order with them or past the log). ``self`` when sane (no copy); None when the cut keeps no
        entry, a problem names no entry (the file's length, its tail), or ``attempts`` cuts do not make it sane."""
        index = self
        for _ in range(attempts):
            problems = index.sanity_problems(log_size, **checks)
            if not problems:
                return index
            flagged = [p.position // self.ENTRY_SIZE for p in problems if p.position is not None]
            k = min(flagged) if len(flagged) == len(problems) else 0
            if not 0 < k < len(index):
                return None
            first, second = (getattr(index, name)[:k] for name, _ in self._COLUMNS)
            index = type(self)(self.base_offset, first, second, path=self.path, file_size=self.file_size)
        return None

    def for_reading(self, log_size: int | None, *, active: bool, left_from: int | None = None, **checks):
        """The entries a read may go by: the active segment's index (``active``) up to its first insane entry
        (:meth:`sane_prefix`: what a follower's truncation left after the new appends' entries), any other's whole
        when sane (:meth:`sanity_problems` with ``log_size`` and ``checks``); None when no entry can be used. With
        ``left_from`` (the lowest offset where a truncation may have cut the segment,
        :func:`~kafkaseg.storage.layout.truncation_bound`), a cut only before an entry at or past it: the entries
        such a truncation leaves, where an insane entry below it is damage."""
        if not active:
            return None if self.sanity_problems(log_size, **checks) else self
        kept = self.sane_prefix(log_size, **checks)
        if kept is None or kept is self or left_from is None or self.offsets[len(kept)] >= left_from:
            return kept
        return None

    def entry_file_position(self, n: int) -> int:
        """Byte position of entry ``n`` inside the index file."""
        return n * self.ENTRY_SIZE

    # -- checks shared by both indexes (each index's ``sanity_problems`` picks and orders them) -----------------
    def _problems(self, *checks: IndexProblem | None) -> list[IndexProblem]:
        """The problems found by the length check, then by ``checks`` (an index's own list, in its order), then by
        the tail check."""
        found = (self._length_problem(), *checks, self._tail_problem())
        return [problem for problem in found if problem is not None]

    def _length_problem(self) -> IndexProblem | None:
        """Kafka's ``sanityCheck``: the file length must be a multiple of the entry size."""
        if self.file_size is not None and self.file_size % self.ENTRY_SIZE:
            return IndexProblem(f"{self._KIND} length {self.file_size} is not a multiple of {self.ENTRY_SIZE}",
                                self.file_size - self.file_size % self.ENTRY_SIZE)
        return None

    def _last_offset_problem(self) -> IndexProblem | None:
        """Kafka's ``sanityCheck``: the last offset must not be below the base offset."""
        n = len(self)
        if n and self.offsets[-1] < self.base_offset:
            return IndexProblem(f"last offset {int(self.offsets[-1])} is less than the base offset "
                                f"{self.base_offset}", self.entry_file_position(n - 1))
        return None

    def _offset_below_base_problem(self) -> IndexProblem | None:
        """An entry other than the last (that one is :meth:`_last_offset_problem`'s) below the base offset."""
        n = len(self)
        below = np.flatnonzero(self.offsets < self.base_offset)
        if below.size and below[0] != n - 1:
            i = int(below[0])
            return IndexProblem(f"entry {i} offset {int(self.offsets[i])} is below the base offset "
                                f"{self.base_offset}", self.entry_file_position(i))
        return None

    def _order_problem(self, label: str, values: np.ndarray, *, strict: bool) -> IndexProblem | None:
        """The first entry whose ``values`` element is not above (``strict``) / is below its predecessor's."""
        steps = np.diff(values)
        bad = np.flatnonzero(steps <= 0 if strict else steps < 0)
        if bad.size:
            i = int(bad[0]) + 1
            relation = "is not above" if strict else "is below"
            return IndexProblem(f"entry {i} {label} {int(values[i])} {relation} the previous entry's "
                                f"{int(values[i - 1])}", self.entry_file_position(i))
        return None

    def _tail_problem(self) -> IndexProblem | None:
        if self.tail_garbage_position is not None:
            return IndexProblem(f"non-zero bytes after the zero entry that ends the {self._KIND}",
                                self.tail_garbage_position)
        return None

    def __repr__(self) -> str:
        extra = f", rebuilt ({self.rebuild_reason})" if self.rebuilt else ""
        return f"{type(self).__name__}(base={self.base_offset}, entries={len(self)}, path={self.path!r}{extra})"


def broker_sanity_check(path: str, base_offset: int, kind: str, filesystem: pafs.FileSystem | None = None, *,
                        window: tuple[int, int] | None = None) -> None:
    """The sanity check a broker runs when it opens an index (``OffsetIndex.sanityCheck`` /
    ``TimeIndex.sanityCheck`` in storage/internals/log), and nothing more: it decides whether a restart rebuilds
    the index. Kafka takes the file as it is (entries = length / entry size, a preallocated zero tail included, so
    a time index whose last slot is zeros fails: its timestamp 0 is below the first), and checks only the last
    entry against the first entry or the base offset and the length against the entry size. ``kind`` is
    ``"offset"`` (8-byte entries: relative offset, position) or ``"time"`` (12: timestamp, relative offset).
    ``window``: the index is those bytes of the file (see :func:`index_location`).
    Raises :class:`CorruptIndexError` with Kafka's message; the stricter checks of ``check()`` are kafkaseg's."""
    import struct

    size = 8 if kind == "offset" else 12
    with RandomAccessReader(path, filesystem) as reader:
        start, length = window_of(reader, window)
        entries = length // size
        if entries:
            last = reader.read_at(start + (entries - 1) * size, size)
            first = reader.read_at(start, size) if kind == "time" else b""
    if entries and kind == "offset":
        last_offset = base_offset + struct.unpack(">i", last[:4])[0]
        if last_offset < base_offset:
            raise CorruptIndexError(f"Corrupt index found, index file {path} has non-zero size but the last offset "
                                    f"is {last_offset} which is less than the base offset {base_offset}.", path=path)
    if entries and kind == "time":
        last_timestamp, relative = struct.unpack(">qi", last)
        first_timestamp = struct.unpack(">q", first[:8])[0]
        if last_timestamp < first_timestamp:
            raise CorruptIndexError(f"Corrupt time index found, time index file ({path}) has non-zero size but the "
                                    f"last timestamp is {last_timestamp} which is less than the first timestamp "
                                    f"{first_timestamp}", path=path)
        if base_offset + relative < base_offset:
            raise CorruptIndexError(f"Corrupt time index found, time index file ({path}) has non-zero size but the "
                                    f"last offset is {base_offset + relative} which is less than the first offset "
                                    f"{base_offset}", path=path)
    if length % size:
        what = "Index file" if kind == "offset" else "Time index file"
        raise CorruptIndexError(f"{what} {path} is corrupt, found {length} bytes which is neither positive nor a "
                                f"multiple of {size}", path=path)
