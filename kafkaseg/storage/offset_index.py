"""``.index`` files: the sparse offset -> file position index of one segment.

Layout (``storage/.../log/OffsetIndex.java``), big-endian, 8-byte entries::

    relativeOffset  int32   offset - segment base offset
    position        int32   byte position of a batch in the ``.log`` file

An entry holds the LAST offset of the batch that starts at ``position`` (``LogSegment.append``:
``offsetIndex().append(largestOffset, physicalPosition)``), written every ``index.interval.bytes`` (4096) of log.
``OffsetIndex.lookup(target)``: the entry with the largest offset <= target, else ``(baseOffset, 0)``.
``OffsetIndex.sanityCheck``: the last offset must be >= the base offset and the file length a multiple of 8.
Zero-filled preallocated tails are trimmed as ``DumpLogSegments`` does (see :mod:`kafkaseg.storage._index_file`).
"""

from __future__ import annotations

import numpy as np
import pyarrow.fs as pafs

from kafkaseg.errors import CorruptIndexError
from kafkaseg.storage._index_file import DEFAULT_MAX_INDEX_BYTES, IndexProblem, load_entries

__all__ = ["OffsetIndex", "OFFSET_INDEX_ENTRY_SIZE", "IndexProblem"]

OFFSET_INDEX_ENTRY_SIZE = 8
_DTYPE = np.dtype([("relative_offset", ">i4"), ("position", ">i4")])


class OffsetIndex:
    """The entries of one ``.index`` file (or of an index rebuilt in memory).

    ``offsets`` (absolute) and ``positions`` are int64 numpy arrays of the real entries. ``file_size`` is the
    size on disk (None when rebuilt), ``tail_entries`` how many zero entries of a preallocated tail were dropped.
    ``rebuilt``/``rebuild_reason`` say whether this index came from walking the log instead of the file, and why.
    """

    ENTRY_SIZE = OFFSET_INDEX_ENTRY_SIZE

    def __init__(self, base_offset: int, offsets, positions, *, path: str | None = None,
                 file_size: int | None = None, tail_entries: int = 0, tail_garbage_position: int | None = None,
                 rebuilt: bool = False, rebuild_reason: str | None = None):
        self.base_offset = int(base_offset)
        self.offsets = np.asarray(offsets, dtype=np.int64)
        self.positions = np.asarray(positions, dtype=np.int64)
        if self.offsets.shape != self.positions.shape:
            raise ValueError("offsets and positions differ in length")
        self.path = path
        self.file_size = file_size
        self.tail_entries = tail_entries
        self.tail_garbage_position = tail_garbage_position
        self.rebuilt = rebuilt
        self.rebuild_reason = rebuild_reason

    # -- construction -------------------------------------------------------------------------------------------
    @classmethod
    def empty(cls, base_offset: int, **kwargs) -> "OffsetIndex":
        return cls(base_offset, np.zeros(0, np.int64), np.zeros(0, np.int64), **kwargs)

    @classmethod
    def from_bytes(cls, data: bytes, base_offset: int, path: str | None = None) -> "OffsetIndex":
        """Parse an index held in memory (same trimming rule as :meth:`load`)."""
        whole = len(data) // OFFSET_INDEX_ENTRY_SIZE
        entries = np.frombuffer(data, dtype=_DTYPE, count=whole)
        rel = entries["relative_offset"]
        zeros = np.flatnonzero(rel[1:] == 0)
        cut = int(zeros[0]) + 1 if zeros.size else whole
        garbage = None
        if cut < whole:
            nz = np.flatnonzero(np.frombuffer(data, np.uint8)[cut * 8:whole * 8])
            garbage = cut * 8 + int(nz[0]) if nz.size else None
        entries = entries[:cut]
        return cls(base_offset, entries["relative_offset"].astype(np.int64) + base_offset,
                   entries["position"].astype(np.int64), path=path, file_size=len(data),
                   tail_entries=whole - cut, tail_garbage_position=garbage)

    @classmethod
    def load(cls, path: str, base_offset: int, filesystem: pafs.FileSystem | None = None, *,
             max_bytes: int = DEFAULT_MAX_INDEX_BYTES) -> "OffsetIndex":
        """Read ``path`` in bounded chunks. Raises :class:`LayoutError` when missing/unreadable and
        :class:`CorruptIndexError` when its real entries exceed ``max_bytes``."""
        loaded = load_entries(path, filesystem, _DTYPE, "relative_offset", max_bytes)
        entries = loaded.entries
        return cls(base_offset, entries["relative_offset"].astype(np.int64) + base_offset,
                   entries["position"].astype(np.int64), path=path, file_size=loaded.file_size,
                   tail_entries=loaded.tail_entries, tail_garbage_position=loaded.tail_garbage_position)

    # -- queries ------------------------------------------------------------------------------------------------
    def __len__(self) -> int:
        return int(self.offsets.size)

    @property
    def entries(self) -> int:
        return len(self)

    def entry(self, n: int) -> tuple[int, int]:
        return int(self.offsets[n]), int(self.positions[n])

    def __iter__(self):
        return zip(self.offsets.tolist(), self.positions.tolist())

    @property
    def last_offset(self) -> int:
        """``OffsetIndex.lastOffset``: the last entry's offset, or the base offset when empty."""
        return int(self.offsets[-1]) if len(self) else self.base_offset

    def floor(self, offset: int) -> tuple[int, int]:
        """``OffsetIndex.lookup``: (offset, position) of the largest entry with offset <= ``offset``, else
        ``(base_offset, 0)``. Assumes sorted entries (true for any index that passes :meth:`sanity_problems`)."""
        slot = int(np.searchsorted(self.offsets, offset, side="right")) - 1
        if slot < 0:
            return self.base_offset, 0
        return int(self.offsets[slot]), int(self.positions[slot])

    def entry_file_position(self, n: int) -> int:
        """Byte position of entry ``n`` inside the ``.index`` file."""
        return n * OFFSET_INDEX_ENTRY_SIZE

    # -- checks -------------------------------------------------------------------------------------------------
    def sanity_problems(self, log_size: int | None = None) -> list[IndexProblem]:
        """Kafka's ``OffsetIndex.sanityCheck`` (length a multiple of 8, last offset >= base) plus the invariants an
        index must keep to be usable: entries with strictly increasing offsets and positions, no offset below the
        base, positions inside the log (when ``log_size`` is given), nothing but zeros in a preallocated tail."""
        problems: list[IndexProblem] = []
        n = len(self)
        if self.file_size is not None and self.file_size % OFFSET_INDEX_ENTRY_SIZE:
            problems.append(IndexProblem(
                f"index length {self.file_size} is not a multiple of {OFFSET_INDEX_ENTRY_SIZE}",
                self.file_size - self.file_size % OFFSET_INDEX_ENTRY_SIZE))
        if n and self.offsets[-1] < self.base_offset:
            problems.append(IndexProblem(
                f"last offset {int(self.offsets[-1])} is less than the base offset {self.base_offset}",
                self.entry_file_position(n - 1)))
        if n:
            below = np.flatnonzero(self.offsets < self.base_offset)
            if below.size and below[0] != n - 1:
                i = int(below[0])
                problems.append(IndexProblem(
                    f"entry {i} offset {int(self.offsets[i])} is below the base offset {self.base_offset}",
                    self.entry_file_position(i)))
        if n > 1:
            bad = np.flatnonzero(np.diff(self.offsets) <= 0)
            if bad.size:
                i = int(bad[0]) + 1
                problems.append(IndexProblem(
                    f"entry {i} offset {int(self.offsets[i])} is not above the previous entry's "
                    f"{int(self.offsets[i - 1])}", self.entry_file_position(i)))
            bad = np.flatnonzero(np.diff(self.positions) <= 0)
            if bad.size:
                i = int(bad[0]) + 1
                problems.append(IndexProblem(
                    f"entry {i} position {int(self.positions[i])} is not above the previous entry's "
                    f"{int(self.positions[i - 1])}", self.entry_file_position(i)))
        if n:
            limit = log_size if log_size is not None else np.iinfo(np.int64).max
            bad = np.flatnonzero((self.positions < 0) | (self.positions >= limit))
            if bad.size:
                i = int(bad[0])
                problems.append(IndexProblem(
                    f"entry {i} (offset {int(self.offsets[i])}) points at byte {int(self.positions[i])}, "
                    f"outside the {log_size}-byte log", self.entry_file_position(i)))
        if self.tail_garbage_position is not None:
            problems.append(IndexProblem("non-zero bytes after the zero entry that ends the index",
                                         self.tail_garbage_position))
        return problems

    def check(self, log_size: int | None = None) -> None:
        """Raise :class:`CorruptIndexError` (file and byte of the bad entry) on the first sanity problem."""
        problems = self.sanity_problems(log_size)
        if problems:
            raise CorruptIndexError(problems[0].detail, path=self.path, position=problems[0].position)

    def __repr__(self) -> str:
        extra = f", rebuilt ({self.rebuild_reason})" if self.rebuilt else ""
        return f"OffsetIndex(base={self.base_offset}, entries={len(self)}, path={self.path!r}{extra})"
