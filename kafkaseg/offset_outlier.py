"""Which batch of a backwards step holds the corrupt offset field: the rule lenient reads, ``kafkaseg verify`` and the
lookups share.

A v2 batch's base offset (a legacy entry's offset) is outside its CRC; its lastOffsetDelta, record count and records
are inside. When a batch's first offset does not follow the batch before it, either the earlier batch's field went
up or the later one's went down, and "the later one is corrupt" (the decoders' verdict, found one batch at a time)
loses every sound batch after a raised one, up to its last offset, and returns the raised batch's records at offsets
they never had. Compaction gaps make "next base != last + 1" prove nothing, so the step is judged on the batches
around it (:func:`outlier_region`, on the error path only):

* the sound batches (whole, CRC valid) are kept in file order with strictly increasing offsets, above the last
  offset before the window (the segment's base - 1 at its start) and, when the window reaches the end of a rolled
  segment, below the next segment's base;
* a batch left out is taken for one whose offset field is corrupt, so its true offsets, as many as its CRC-covered
  span (``lastOffset - firstOffset + 1``), must fit between the kept batches around it: a hypothesis that cannot
  place them is impossible;
* of the possible hypotheses, those leaving out the fewest batches stand, and a batch is kept only when every one
  of them keeps it. Two equally good explanations (a lone pair of batches that overlap, with room for either) leave
  both out: no record is returned at an offset it may never have had.

The first run of batches left out is the region to skip; callers act on it only when it starts before the batch the
decoders blame (otherwise their verdict stands, and nothing changes).
"""

from __future__ import annotations

from dataclasses import dataclass

from kafkaseg.errors import KafkaSegError
from kafkaseg.storage.segment import SegmentReader
from kafkaseg.wire.crc import crc_is_valid

__all__ = ["OutlierRegion", "outlier_region", "kept_batches", "WENT_BACK", "went_back", "AHEAD_BATCHES",
           "BEHIND_BATCHES"]

#: The decoders' words for a batch whose first offset does not follow the offset before it (both kernels, and
#: verify and the lookups through :func:`kafkaseg.decode.api.offset_field_problem`).
WENT_BACK = "non-monotonic offsets: batch base offset "
#: batches after the first backwards step looked at, and sound batches before it kept in the window
AHEAD_BATCHES = 16
BEHIND_BATCHES = 16


def went_back(what: str) -> bool:
    """Whether a decoder's problem (or error detail) is a batch whose first offset does not follow the batch before
    it (a legacy wrapper's too)."""
    return what.startswith(WENT_BACK) or what.startswith("non-monotonic offsets: wrapper offset ")


@dataclass(frozen=True)
class OutlierRegion:
    """The first run of batches the window leaves out: bytes ``[position, end)`` holding ``batches`` batches,
    which made offsets ``[first_offset, end_offset)`` unreadable (``end_offset`` None: no kept batch after it in
    the window). ``what`` says why, for a problem line."""

    position: int
    end: int
    batches: int
    first_offset: int
    end_offset: int | None
    what: str

    @property
    def size(self) -> int:
        return self.end - self.position


@dataclass(frozen=True)
class _Batch:
    position: int
    end: int
    first: int
    last: int
    sound: bool


def kept_batches(batches: list, floor: int, ceiling: int | None) -> list[bool]:
    """Which of ``batches`` (objects with ``first``, ``last``, ``sound``; in file order) every fewest-drop
    explanation keeps (see the module's docstring). ``floor``: the last offset before them; ``ceiling``: an offset
    none of them, nor any batch left out, reaches (None: unknown). Unsound batches are never kept and take no
    room (their offsets are unknown)."""
    nodes = [k for k, b in enumerate(batches) if b.sound]
    span = [batches[k].last - batches[k].first + 1 for k in nodes]
    before = [0]  # spans of the sound batches before node j
    for s in span:
        before.append(before[-1] + s)
    n = len(nodes)

    def fits(i: int, j: int) -> bool:
        """Node i then node j kept (i = -1: the floor; j = n: the ceiling) with the nodes between left out."""
        low = floor if i < 0 else batches[nodes[i]].last
        room_needed = before[j] - before[i + 1]
        if j == n:
            return ceiling is None or ceiling - low - 1 >= room_needed
        first = batches[nodes[j]].first
        return first > low and first - low - 1 >= room_needed and (ceiling is None or batches[nodes[j]].last
                                                                    < ceiling)

    impossible = -1
    best_to = [impossible] * n  # most nodes kept on a chain from the floor ending with node j
    for j in range(n):
        best = 1 if fits(-1, j) else impossible
        for i in range(j):
            if best_to[i] != impossible and fits(i, j):
                best = max(best, best_to[i] + 1)
        best_to[j] = best
    best_from = [impossible] * n  # most nodes kept on a chain from node i to the ceiling
    for i in range(n - 1, -1, -1):
        best = 1 if fits(i, n) else impossible
        for j in range(i + 1, n):
            if best_from[j] != impossible and fits(i, j):
                best = max(best, best_from[j] + 1)
        best_from[i] = best
    total = max([0 if fits(-1, n) else impossible,
                 *(best_to[i] for i in range(n) if best_to[i] != impossible and fits(i, n))])
    kept = [False] * len(batches)
    if total == impossible:  # no explanation at all (several fields wrong): nothing is trusted over the decoders
        return [b.sound for b in batches]
    on_some = [i for i in range(n) if impossible not in (best_to[i], best_from[i])
               and best_to[i] + best_from[i] - 1 == total]
    levels: dict[int, list[int]] = {}
    for i in on_some:
        levels.setdefault(best_to[i], []).append(i)
    for members in levels.values():
        if len(members) == 1:
            kept[nodes[members[0]]] = True
    return kept


def _window(reader: SegmentReader, start: int, floor: int, limit: int | None, *, verify_crc: bool,
            max_batch_bytes: int | None, max_decompressed_bytes: int | None) -> tuple[list[_Batch], int, bool]:
    """The batches from ``start`` up to :data:`AHEAD_BATCHES` past the first one that does not follow the offsets
    before it (the last :data:`BEHIND_BATCHES` sound ones before that, with the last offset before them), stopping
    at bad framing or a batch at or past ``limit`` (where the read of the segment ends). Returns them, that floor,
    and whether the walk reached the end of the file."""
    from kafkaseg.entry_check import batch_first_offset

    batches: list[_Batch] = []
    high = floor
    stepped_at = None
    reached_end = False
    walk = reader.iter_headers(start, max_batch_bytes=max_batch_bytes)
    try:
        for header in walk:
            if limit is not None and header.base_offset >= limit and header.magic >= 2:
                break
            data = reader.read_at(header.position, header.size) if verify_crc or header.magic < 2 else None
            sound = data is None or (len(data) == header.size and crc_is_valid(data, header._replace(position=0)))
            first = header.base_offset
            if sound and header.magic < 2 and header.codec:
                first = batch_first_offset(reader, header.position, max_batch_bytes, max_decompressed_bytes)
                sound = first is not None
            if limit is not None and first >= limit:
                break
            batch = _Batch(header.position, header.position + header.size, first, header.last_offset, sound)
            batches.append(batch)
            if sound and stepped_at is None and first <= high:
                stepped_at = len(batches) - 1
            if sound:
                high = max(high, batch.last)
            if stepped_at is None and len(batches) > BEHIND_BATCHES:
                dropped = batches.pop(0)
                floor = max(floor, dropped.last) if dropped.sound else floor
            if stepped_at is not None and len(batches) - 1 - stepped_at >= AHEAD_BATCHES:
                break
        else:
            reached_end = walk.tail is None
    except KafkaSegError:
        pass  # (the window ends at damage the decoders judge themselves)
    return batches, floor, reached_end


def outlier_region(reader: SegmentReader, start: int, floor: int, *, limit: int | None = None,
                   next_base: int | None = None, verify_crc: bool = True, max_batch_bytes: int | None = None,
                   max_decompressed_bytes: int | None = None, region_end: int | None = None
                   ) -> OutlierRegion | None:
    """The first run of batches from byte ``start`` of ``reader``'s segment that the window around the first
    backwards step after it leaves out (see the module's docstring), or None when there is no step or every batch
    is kept. ``floor``: the last offset read before ``start`` (the segment's base - 1 at its start); ``limit``:
    where a read of the segment ends (the window stops at a batch reaching it); ``next_base``: the next segment's
    base, which no batch of the segment, nor any true offset of one left out, reaches (None: the last segment).
    ``region_end``: the region is cut at this byte (a slice's end). Reads the window's headers and batches (CRC),
    on the error path only."""
    batches, floor, reached_end = _window(reader, start, floor, limit, verify_crc=verify_crc,
                                          max_batch_bytes=max_batch_bytes,
                                          max_decompressed_bytes=max_decompressed_bytes)
    if not batches:
        return None
    kept = kept_batches(batches, floor, next_base if reached_end else None)
    left_out = [k for k, b in enumerate(batches) if b.sound and not kept[k]]
    if not left_out:
        return None
    first = left_out[0]
    run = first
    while (run + 1 < len(batches) and batches[run + 1].sound and not kept[run + 1]
           and (region_end is None or batches[run + 1].end <= region_end)):
        run += 1
    before = [b.last for b in batches[:first] if b.sound]
    low = max([floor, *before])
    after = next((b.first for k, b in enumerate(batches) if k > run and kept[k]), None)
    region = batches[first:run + 1]
    spans = ", ".join(f"{b.first}..{b.last}" for b in region)
    what = (f"the batch here holds offsets {spans}, which overlap the batches around it, and the fewest batches "
            "whose offset field (outside the CRC) can be corrupt are this one" if len(region) == 1 else
            f"the {len(region)} batches here hold offsets {spans}, which overlap each other, and either one's offset "
            "field (outside the CRC) can be the corrupt one")
    what += (f": its records are not read at those offsets (the batches around it end at {low} and start "
             + (f"at {after})" if after is not None else "further on)"))
    return OutlierRegion(region[0].position, region[-1].end, len(region), low + 1, after, what)
