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

from kafkaseg.storage._index_file import FixedEntryIndex, IndexProblem, raise_first_problem

__all__ = ["TimeIndex", "TIME_INDEX_ENTRY_SIZE", "NO_TIMESTAMP"]

_DTYPE = np.dtype([("timestamp", ">i8"), ("relative_offset", ">i4")])
TIME_INDEX_ENTRY_SIZE = _DTYPE.itemsize  # 12
NO_TIMESTAMP = -1


class TimeIndex(FixedEntryIndex, dtype=_DTYPE, columns=(("timestamps", "timestamp"), ("offsets", "relative_offset")),
                kind="time index"):
    """The entries of one ``.timeindex`` file (or of one rebuilt in memory): int64 numpy arrays ``timestamps``
    and absolute ``offsets``; entries iterate as (timestamp, offset) pairs. Same bookkeeping attributes,
    construction (``empty``, ``from_bytes``, ``load``) and ``entry_file_position`` as
    :class:`~kafkaseg.storage.offset_index.OffsetIndex`, from their common base
    :class:`~kafkaseg.storage._index_file.FixedEntryIndex`."""

    timestamps: np.ndarray
    offsets: np.ndarray

    def __init__(self, base_offset: int, timestamps, offsets, **bookkeeping):
        super().__init__(base_offset, timestamps, offsets, **bookkeeping)

    # -- queries ------------------------------------------------------------------------------------------------
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

    # -- checks -------------------------------------------------------------------------------------------------
    def sanity_problems(self, log_size: int | None = None, *,
                        log_end_offset: int | None = None) -> list[IndexProblem]:
        """Kafka's ``TimeIndex.sanityCheck`` (length a multiple of 12, last timestamp >= first, last offset >= base)
        plus strictly increasing timestamps and non-decreasing offsets (``DumpLogSegments`` reports out-of-order
        timestamps), offsets below ``log_end_offset`` when given, and a clean preallocated tail. ``log_size`` is
        accepted for symmetry with :meth:`OffsetIndex.sanity_problems`: an empty log must have an empty index."""
        return self._problems(
            self._last_timestamp_problem(),
            self._last_offset_problem(),
            self._order_problem("timestamp", self.timestamps, strict=True),
            self._order_problem("offset", self.offsets, strict=False),
            self._offset_below_base_problem(),
            IndexProblem("time index has entries but the log is empty", 0) if len(self) and log_size == 0 else None,
            self._offset_past_log_end_problem(log_end_offset))

    def _last_timestamp_problem(self) -> IndexProblem | None:
        """Kafka's ``TimeIndex.sanityCheck``: the last timestamp must not be below the first."""
        n = len(self)
        if n and self.timestamps[-1] < self.timestamps[0]:
            return IndexProblem(f"last timestamp {int(self.timestamps[-1])} is less than the first "
                                f"{int(self.timestamps[0])}", self.entry_file_position(n - 1))
        return None

    def _offset_past_log_end_problem(self, log_end_offset: int | None) -> IndexProblem | None:
        if log_end_offset is None:
            return None
        bad = np.flatnonzero(self.offsets >= log_end_offset)
        if bad.size:
            i = int(bad[0])
            return IndexProblem(f"entry {i} offset {int(self.offsets[i])} is at or past the log end offset "
                                f"{log_end_offset}", self.entry_file_position(i))
        return None

    def check(self, log_size: int | None = None, *, log_end_offset: int | None = None) -> None:
        """Raise :class:`CorruptIndexError` (file and byte of the bad entry) on the first sanity problem."""
        raise_first_problem(self.sanity_problems(log_size, log_end_offset=log_end_offset), self.path)
