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

from kafkaseg.storage._index_file import FixedEntryIndex, IndexProblem, raise_first_problem

__all__ = ["OffsetIndex", "OFFSET_INDEX_ENTRY_SIZE", "IndexProblem"]

_DTYPE = np.dtype([("relative_offset", ">i4"), ("position", ">i4")])
OFFSET_INDEX_ENTRY_SIZE = _DTYPE.itemsize  # 8


class OffsetIndex(FixedEntryIndex, dtype=_DTYPE, columns=(("offsets", "relative_offset"), ("positions", "position")),
                  kind="index"):
    """The entries of one ``.index`` file (or of an index rebuilt in memory).

    ``offsets`` (absolute) and ``positions`` are int64 numpy arrays of the real entries. ``file_size`` is the
    size on disk (None when rebuilt), ``tail_entries`` how many zero entries of a preallocated tail were dropped.
    ``rebuilt``/``rebuild_reason`` say whether this index came from walking the log instead of the file, and why.
    The bookkeeping keywords of the constructor, construction (``empty``, ``from_bytes``, ``load``), ``entry``
    and iteration as (offset, position) pairs, ``entry_file_position``, the checks shared with
    :class:`~kafkaseg.storage.time_index.TimeIndex` and ``repr`` come from
    :class:`~kafkaseg.storage._index_file.FixedEntryIndex`.
    """

    offsets: np.ndarray
    positions: np.ndarray

    def __init__(self, base_offset: int, offsets, positions, **bookkeeping):
        super().__init__(base_offset, offsets, positions, **bookkeeping)

    # -- queries ------------------------------------------------------------------------------------------------
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

    # -- checks -------------------------------------------------------------------------------------------------
    def sanity_problems(self, log_size: int | None = None) -> list[IndexProblem]:
        """Kafka's ``OffsetIndex.sanityCheck`` (length a multiple of 8, last offset >= base) plus the invariants an
        index must keep to be usable: entries with strictly increasing offsets and positions, no offset below the
        base, positions inside the log (when ``log_size`` is given), nothing but zeros in a preallocated tail."""
        return self._problems(
            self._last_offset_problem(),
            self._offset_below_base_problem(),
            self._order_problem("offset", self.offsets, strict=True),
            self._order_problem("position", self.positions, strict=True),
            self._position_outside_log_problem(log_size))

    def _position_outside_log_problem(self, log_size: int | None) -> IndexProblem | None:
        limit = log_size if log_size is not None else np.iinfo(np.int64).max
        bad = np.flatnonzero((self.positions < 0) | (self.positions >= limit))
        if bad.size:
            i = int(bad[0])
            position = int(self.positions[i])
            where = "a negative position" if position < 0 else f"outside the {log_size}-byte log"
            return IndexProblem(f"entry {i} (offset {int(self.offsets[i])}) points at byte {position}, {where}",
                                self.entry_file_position(i))
        return None

    def check(self, log_size: int | None = None) -> None:
        """Raise :class:`CorruptIndexError` (file and byte of the bad entry) on the first sanity problem."""
        raise_first_problem(self.sanity_problems(log_size), self.path)
