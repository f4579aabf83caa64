"""``.index``/``.timeindex`` files searched in place, one positioned read per entry looked at: O(log n) entries per
lookup instead of loading whole files (what :mod:`kafkaseg.lookup` needs for ListOffsets-style lookups across
thousands of segments). :class:`~kafkaseg.storage.offset_index.OffsetIndex` and
:class:`~kafkaseg.storage.time_index.TimeIndex` are the loaded counterparts (planning, verification, rebuilds).

Entry layouts (``storage/.../log/OffsetIndex.java``, ``TimeIndex.java``), big-endian::

    .index      relativeOffset int32 | position int32
    .timeindex  timestamp int64      | relativeOffset int32

Real entries end at the first entry after entry 0 whose relative offset is 0 (a live broker's zero-filled,
preallocated tail; the same rule as :mod:`kafkaseg.storage._index_file`), found here by binary search.
"""

from __future__ import annotations

import struct
from collections import OrderedDict

from kafkaseg.errors import CorruptIndexError, LayoutError
from kafkaseg.storage._index_file import window_of
from kafkaseg.storage.fs import RandomAccessReader

__all__ = ["ProbedIndex", "LoadedIndexView", "OpenFileLimit"]


class OpenFileLimit:
    """At most ``limit`` :class:`ProbedIndex` files open at once (a lookup scanning thousands of segments would
    otherwise hold a descriptor per index and hit ``ulimit -n``): the least recently read one is closed, and
    reopened by its next read."""

    def __init__(self, limit: int = 64):
        self.limit = limit
        self._open: OrderedDict[int, "ProbedIndex"] = OrderedDict()

    def used(self, index: "ProbedIndex") -> None:
        key = id(index)
        if key in self._open:
            self._open.move_to_end(key)
            return
        self._open[key] = index
        while len(self._open) > self.limit:
            _, oldest = self._open.popitem(last=False)
            oldest.suspend()

    def forget(self, index: "ProbedIndex") -> None:
        self._open.pop(id(index), None)

_OFFSET_ENTRY = struct.Struct(">ii")   # relativeOffset, position  (OffsetIndex.java)
_TIME_ENTRY = struct.Struct(">qi")     # timestamp, relativeOffset  (TimeIndex.java)


class ProbedIndex:
    """An ``.index`` or ``.timeindex`` file searched in place: one positioned read per entry looked at.

    ``kind`` "offset" (entries (offset, position), key = offset) or "time" (entries (timestamp, offset),
    key = timestamp). ``stats`` is any object with ``files_opened``, ``index_entries`` and ``index_bytes``
    counters (:class:`kafkaseg.lookup.LookupStats`), incremented as the file is read. ``whole_up_to``: an index of
    at most that many bytes is read in one positioned read on open and its entries taken from those bytes (a
    probe of a rolled segment's last entry, whose file is closed after: one read, not one for the first entry and
    one for the last); the rules and checks are the same."""

    rebuilt = False  # (the file's own entries: see LoadedIndexView.rebuilt)

    def __init__(self, path: str, kind: str, base_offset: int, filesystem, stats,
                 open_files: OpenFileLimit | None = None, window: tuple[int, int] | None = None,
                 whole_up_to: int = 0):
        self.kind = kind
        self.base = base_offset
        self.stats = stats
        self.entry = _OFFSET_ENTRY if kind == "offset" else _TIME_ENTRY
        self.filesystem = filesystem
        self.open_files = open_files
        self.reader: RandomAccessReader | None = RandomAccessReader(path, filesystem)
        stats.files_opened += 1
        if open_files is not None:
            open_files.used(self)
        self.path = self.reader.path
        self._identity = self.reader.identity  # which file (local: device and inode), checked when reopened
        try:  # the index's bytes: the whole file, or a window of an object holding several (index_location)
            self._start, size = window_of(self.reader, window)
        except LayoutError:
            self.close()
            raise
        if size % self.entry.size:
            self.close()
            raise CorruptIndexError(f"length {size} is not a multiple of {self.entry.size}", path=path,
                                    position=size - size % self.entry.size)
        self.count = size // self.entry.size
        self._whole = self.reader.read_at(self._start, size) if 0 < size <= whole_up_to else None
        raw: dict[int, tuple[int, int]] = {}  # (each entry these checks look at read once: the last one twice before)

        def relative(i: int) -> int:
            if i not in raw:
                raw[i] = self._raw(i)
            return raw[i][0 if kind == "offset" else 1]

        if self.count:
            relative(0)
        first = raw.get(0)  # (the tail rule and the checks below use it)
        if first == (0, 0) and (
                (self.count == 1 and kind == "offset") or (self.count > 1 and relative(1) == 0)):
            self.count = 0  # an all-zero entry 0 before unwritten space: no entry yet (see _index_file)
        if self.count > 1 and relative(self.count - 1) == 0:
            lo, hi = 1, self.count - 1  # first i >= 1 with relative offset 0
            while lo < hi:
                mid = (lo + hi) // 2
                if relative(mid) == 0:
                    hi = mid
                else:
                    lo = mid + 1
            self.count = lo
        if self.count:
            relative(self.count - 1)
        self._cache: dict[int, tuple[int, int]] = {  # (the entries read, absolute: get() reads them no more)
            i: (a + base_offset, b) if kind == "offset" else (a, b + base_offset)
            for i, (a, b) in raw.items() if i < self.count}
        last = self._cache[self.count - 1] if self.count else None
        if last is not None and last[1 if kind == "time" else 0] < base_offset:
            self.close()
            raise CorruptIndexError("last entry's offset is below the base offset", path=path,
                                    position=(self.count - 1) * self.entry.size)
        # the first entry, read already: Kafka's TimeIndex.sanityCheck (last timestamp not below the first), and no
        # offset below the base (an index that cannot be its segment's)
        if self.count and (first[0] if kind == "offset" else first[1]) < 0:
            self.close()
            raise CorruptIndexError("first entry's offset is below the base offset", path=path, position=0)
        if self.count and kind == "time" and first[0] < 0:  # (TimeIndex appends only above -1, no timestamp)
            self.close()
            raise CorruptIndexError(f"first entry's timestamp {first[0]} is negative", path=path, position=0)
        if self.count > 1 and base_offset + (first[0] if kind == "offset" else first[1]) > last[
                1 if kind == "time" else 0]:  # (entries rise in offset: a damaged offset field)
            self.close()
            raise CorruptIndexError("first entry's offset is above the last entry's", path=path, position=0)
        if last is not None and kind == "time" and last[0] < first[0]:
            self.close()
            raise CorruptIndexError(f"last timestamp {last[0]} is less than the first {first[0]}", path=path,
                                    position=(self.count - 1) * self.entry.size)

    def _raw(self, i: int) -> tuple[int, int]:
        if self.reader is None:  # suspended by the open-file limit: entries below count are as they were,
            reader = RandomAccessReader(self.path, self.filesystem)  # if it is still the same file
            if reader.identity != self._identity:
                reader.close()
                raise LayoutError(f"{self.path} was replaced while a lookup used it (a live broker's log cleaner or "
                                  "retention): look up again")
            self.reader = reader
            self.stats.files_opened += 1
        if self.open_files is not None:
            self.open_files.used(self)
        at = i * self.entry.size
        whole = self._whole
        data = (whole[at:at + self.entry.size] if whole is not None and at + self.entry.size <= len(whole)
                else self.reader.read_at(self._start + at, self.entry.size))
        self.stats.index_entries += 1
        self.stats.index_bytes += len(data)
        if len(data) < self.entry.size:
            raise CorruptIndexError(f"entry {i} is cut short", path=self.path, position=i * self.entry.size)
        return self.entry.unpack(data)

    def get(self, i: int) -> tuple[int, int]:
        """Entry ``i`` as (offset, position) or (timestamp, offset), offsets absolute."""
        cache = self._cache
        if i in cache:
            return cache[i]
        a, b = self._raw(i)
        value = cache[i] = (a + self.base, b) if self.kind == "offset" else (a, b + self.base)
        return value

    def __len__(self) -> int:
        return self.count

    def floor(self, key: int) -> tuple[int, int]:
        """The entry with the largest key <= ``key``; ``(base, 0)`` / ``(-1, base)`` when none (Kafka's lookup)."""
        lo, hi = 0, self.count - 1
        best = None
        while lo <= hi:
            mid = (lo + hi) // 2
            entry = self.get(mid)
            if entry[0] <= key:
                best = entry
                lo = mid + 1
            else:
                hi = mid - 1
        if best is None:
            return (self.base, 0) if self.kind == "offset" else (-1, self.base)
        return best

    def last(self) -> tuple[int, int]:
        if not self.count:
            return (self.base, 0) if self.kind == "offset" else (-1, self.base)
        return self.get(self.count - 1)

    def last_below_offset(self, offset: int) -> tuple[int, int]:
        """The last entry for an offset below ``offset`` (entries are ordered by offset in both kinds)."""
        return _last_below_offset(self, self.get, offset)

    def suspend(self) -> None:
        """Close the file until the next read needs it."""
        if self.reader is not None:
            self.reader.close()
            self.reader = None

    def close(self) -> None:
        self.suspend()
        if self.open_files is not None:
            self.open_files.forget(self)


def _last_below_offset(index, entry, offset: int) -> tuple[int, int]:
    position_of_offset = 0 if index.kind == "offset" else 1
    lo, hi, best = 0, len(index) - 1, None
    while lo <= hi:
        mid = (lo + hi) // 2
        found = entry(mid)
        if found[position_of_offset] < offset:
            best, lo = found, mid + 1
        else:
            hi = mid - 1
    if best is None:
        return (index.base, 0) if index.kind == "offset" else (-1, index.base)
    return best


class LoadedIndexView:
    """A loaded (or rebuilt) :class:`OffsetIndex`/:class:`TimeIndex` behind the same interface as
    :class:`ProbedIndex`. ``rebuilt``: built from the log (its entries need no check against it), not the file's
    entries cut short (the active segment's before those a follower's truncation left)."""

    def __init__(self, index, kind: str, *, rebuilt: bool = True):
        self.kind = kind
        self.index = index
        self.base = index.base_offset
        self.rebuilt = rebuilt

    def __len__(self) -> int:
        return len(self.index)

    def floor(self, key: int) -> tuple[int, int]:
        return self.index.floor(key)

    def last(self) -> tuple[int, int]:
        if not len(self.index):
            return (self.base, 0) if self.kind == "offset" else (-1, self.base)
        return self.index.entry(len(self.index) - 1)

    def last_below_offset(self, offset: int) -> tuple[int, int]:
        return _last_below_offset(self, self.index.entry, offset)

    def close(self) -> None:
        pass
