"""``.timeindex`` files: the sparse timestamp -> offset index of one segment.

Layout (``storage/.../log/TimeIndex.java``), big-endian, 12-byte entries::

    timestamp       int64   the largest batch max timestamp seen so far in the segment
    relativeOffset  int32   offset of the batch holding it (its last offset) - segment base offset

``TimeIndex.maybeAppend`` only appends a timestamp greater than the last entry's, so timestamps strictly increase;
on roll/close the segment's max timestamp is appended (``LogSegment.onBecomeInactiveSegment``), so the last entry
is the segment's largest timestamp. ``TimeIndex.lookup(target)``: the entry with the largest timestamp <= target,
else ``(-1, baseOffset)``. ``TimeIndex.sanityCheck``: last timestamp >= first, last offset >= base, length a
multiple of 12. Zero-filled preallocated tails are trimmed as ``DumpLogSegments`` does
(see :mod:`kafkaseg.storage._index_file`).
"""

from __future__ import annotations

import numpy as np
import pyarrow.fs as pafs

from kafkaseg.errors import CorruptIndexError
from kafkaseg.storage._index_file import DEFAULT_MAX_INDEX_BYTES, IndexProblem, load_entries

__all__ = ["TimeIndex", "TIME_INDEX_ENTRY_SIZE", "NO_TIMESTAMP"]

TIME_INDEX_ENTRY_SIZE = 12
NO_TIMESTAMP = -1
_DTYPE = np.dtype([("timestamp", ">i8"), ("relative_offset", ">i4")])


class TimeIndex:
    """The entries of one ``.timeindex`` file (or of one rebuilt in memory): int64 numpy arrays ``timestamps``
    and absolute ``offsets``. Same bookkeeping attributes as :class:`~kafkaseg.storage.offset_index.OffsetIndex`."""

    ENTRY_SIZE = TIME_INDEX_ENTRY_SIZE

    def __init__(self, base_offset: int, timestamps, offsets, *, path: str | None = None,
                 file_size: int | None = None, tail_entries: int = 0, tail_garbage_position: int | None = None,
                 rebuilt: bool = False, rebuild_reason: str | None = None):
        self.base_offset = int(base_offset)
        self.timestamps = np.asarray(timestamps, dtype=np.int64)
        self.offsets = np.asarray(offsets, dtype=np.int64)
        if self.offsets.shape != self.timestamps.shape:
            raise ValueError("timestamps and offsets differ in length")
        self.path = path
        self.file_size = file_size
        self.tail_entries = tail_entries
        self.tail_garbage_position = tail_garbage_position
        self.rebuilt = rebuilt
        self.rebuild_reason = rebuild_reason

    @classmethod
    def empty(cls, base_offset: int, **kwargs) -> "TimeIndex":
        return cls(base_offset, np.zeros(0, np.int64), np.zeros(0, np.int64), **kwargs)

    @classmethod
    def from_bytes(cls, data: bytes, base_offset: int, path: str | None = None) -> "TimeIndex":
        whole = len(data) // TIME_INDEX_ENTRY_SIZE
        entries = np.frombuffer(data, dtype=_DTYPE, count=whole)
        zeros = np.flatnonzero(entries["relative_offset"][1:] == 0)
        cut = int(zeros[0]) + 1 if zeros.size else whole
        garbage = None
        if cut < whole:
            nz = np.flatnonzero(np.frombuffer(data, np.uint8)[cut * 12:whole * 12])
            garbage = cut * 12 + int(nz[0]) if nz.size else None
        entries = entries[:cut]
        return cls(base_offset, entries["timestamp"].astype(np.int64),
                   entries["relative_offset"].astype(np.int64) + base_offset, path=path, file_size=len(data),
                   tail_entries=whole - cut, tail_garbage_position=garbage)

    @classmethod
    def load(cls, path: str, base_offset: int, filesystem: pafs.FileSystem | None = None, *,
             max_bytes: int = DEFAULT_MAX_INDEX_BYTES) -> "TimeIndex":
        """Read ``path`` in bounded chunks (see :meth:`OffsetIndex.load`)."""
        loaded = load_entries(path, filesystem, _DTYPE, "relative_offset", max_bytes)
        entries = loaded.entries
        return cls(base_offset, entries["timestamp"].astype(np.int64),
                   entries["relative_offset"].astype(np.int64) + base_offset, path=path,
                   file_size=loaded.file_size, tail_entries=loaded.tail_entries,
                   tail_garbage_position=loaded.tail_garbage_position)

    def __len__(self) -> int:
        return int(self.offsets.size)

    @property
    def entries(self) -> int:
        return len(self)

    def entry(self, n: int) -> tuple[int, int]:
        return int(self.timestamps[n]), int(self.offsets[n])

    def __iter__(self):
        return zip(self.timestamps.tolist(), self.offsets.tolist())

    @property
    def last_entry(self) -> tuple[int, int]:
        """``TimeIndex.lastEntry``: (timestamp, offset) of the last entry, or ``(-1, base_offset)`` when empty."""
        if len(self):
            return int(self.timestamps[-1]), int(self.offsets[-1])
        return NO_TIMESTAMP, self.base_offset

    max_entry = last_entry  # timestamps increase, so the last entry holds the segment's max timestamp

    @property
    def max_timestamp(self) -> int:
        """The segment's largest timestamp per this index (-1 when empty)."""
        return self.last_entry[0]

    def floor(self, timestamp: int) -> tuple[int, int]:
        """``TimeIndex.lookup``: (timestamp, offset) of the entry with the largest timestamp <= ``timestamp``,
        else ``(-1, base_offset)``."""
        slot = int(np.searchsorted(self.timestamps, timestamp, side="right")) - 1
        if slot < 0:
            return NO_TIMESTAMP, self.base_offset
        return int(self.timestamps[slot]), int(self.offsets[slot])

    def entry_file_position(self, n: int) -> int:
        return n * TIME_INDEX_ENTRY_SIZE

    def sanity_problems(self, log_size: int | None = None, *,
                        log_end_offset: int | None = None) -> list[IndexProblem]:
        """Kafka's ``TimeIndex.sanityCheck`` (length a multiple of 12, last timestamp >= first, last offset >= base)
        plus strictly increasing timestamps and non-decreasing offsets (``DumpLogSegments`` reports out-of-order
        timestamps), offsets below ``log_end_offset`` when given, and a clean preallocated tail. ``log_size`` is
        accepted for symmetry with :meth:`OffsetIndex.sanity_problems`: an empty log must have an empty index."""
        problems: list[IndexProblem] = []
        n = len(self)
        if self.file_size is not None and self.file_size % TIME_INDEX_ENTRY_SIZE:
            problems.append(IndexProblem(
                f"time index length {self.file_size} is not a multiple of {TIME_INDEX_ENTRY_SIZE}",
                self.file_size - self.file_size % TIME_INDEX_ENTRY_SIZE))
        if n and self.timestamps[-1] < self.timestamps[0]:
            problems.append(IndexProblem(
                f"last timestamp {int(self.timestamps[-1])} is less than the first {int(self.timestamps[0])}",
                self.entry_file_position(n - 1)))
        if n and self.offsets[-1] < self.base_offset:
            problems.append(IndexProblem(
                f"last offset {int(self.offsets[-1])} is less than the base offset {self.base_offset}",
                self.entry_file_position(n - 1)))
        if n > 1:
            bad = np.flatnonzero(np.diff(self.timestamps) <= 0)
            if bad.size:
                i = int(bad[0]) + 1
                problems.append(IndexProblem(
                    f"entry {i} timestamp {int(self.timestamps[i])} is not above the previous entry's "
                    f"{int(self.timestamps[i - 1])}", self.entry_file_position(i)))
            bad = np.flatnonzero(np.diff(self.offsets) < 0)
            if bad.size:
                i = int(bad[0]) + 1
                problems.append(IndexProblem(
                    f"entry {i} offset {int(self.offsets[i])} is below the previous entry's "
                    f"{int(self.offsets[i - 1])}", self.entry_file_position(i)))
        if n:
            below = np.flatnonzero(self.offsets < self.base_offset)
            if below.size and below[0] != n - 1:
                i = int(below[0])
                problems.append(IndexProblem(
                    f"entry {i} offset {int(self.offsets[i])} is below the base offset {self.base_offset}",
                    self.entry_file_position(i)))
        if n and log_size == 0:
            problems.append(IndexProblem("time index has entries but the log is empty", 0))
        if n and log_end_offset is not None:
            bad = np.flatnonzero(self.offsets >= log_end_offset)
            if bad.size:
                i = int(bad[0])
                problems.append(IndexProblem(
                    f"entry {i} offset {int(self.offsets[i])} is at or past the log end offset {log_end_offset}",
                    self.entry_file_position(i)))
        if self.tail_garbage_position is not None:
            problems.append(IndexProblem("non-zero bytes after the zero entry that ends the time index",
                                         self.tail_garbage_position))
        return problems

    def check(self, log_size: int | None = None, *, log_end_offset: int | None = None) -> None:
        """Raise :class:`CorruptIndexError` (file and byte of the bad entry) on the first sanity problem."""
        problems = self.sanity_problems(log_size, log_end_offset=log_end_offset)
        if problems:
            raise CorruptIndexError(problems[0].detail, path=self.path, position=problems[0].position)

    def __repr__(self) -> str:
        extra = f", rebuilt ({self.rebuild_reason})" if self.rebuilt else ""
        return f"TimeIndex(base={self.base_offset}, entries={len(self)}, path={self.path!r}{extra})"
