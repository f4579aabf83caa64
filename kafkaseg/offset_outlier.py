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

The window starts at the batch the step goes back below, above the offsets read before it: when that batch is left
out, it (with the batches left out right after it) is the region to skip; otherwise the decoders' verdict stands.
Starting there, the verdict depends on neither chunk nor slice sizes, and reads, ``kafkaseg verify`` and the lookups
reach the same one.
"""

from __future__ import annotations

from dataclasses import dataclass

from kafkaseg.errors import KafkaSegError
from kafkaseg.storage.segment import SegmentReader
from kafkaseg.wire.crc import crc_is_valid

__all__ = ["OutlierRegion", "outlier_region", "kept_batches", "batch_before", "batch_offset_field_problem",
           "last_batch_before", "offset_before", "goes_back_after", "past_next_base_problem", "record_facts",
           "went_back", "wrapper_below_inner", "AHEAD_BATCHES"]

#: The decoders' words for a batch whose first offset does not follow the offset before it (both kernels, and
#: verify and the lookups through :func:`kafkaseg.decode.api.offset_field_problem`).
WENT_BACK = "non-monotonic offsets: batch base offset "
#: batches after the first backwards step looked at
AHEAD_BATCHES = 16


#: The decoders' words for a v1 compressed wrapper whose offset field (outside its CRC) is below its last inner
#: relative offset, so that no base offset fits its records (both kernels, and ``wire.records``)
WRAPPER_BELOW_INNER = "is less than the last inner offset"


def wrapper_below_inner(what: str) -> bool:
    """Whether a decoder's problem (or error detail) is a v1 wrapper whose offset field is below its last inner
    offset (:data:`WRAPPER_BELOW_INNER`): its offset field is corrupt, whichever offsets are asked of it."""
    return what.startswith("wrapper offset ") and WRAPPER_BELOW_INNER in what


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
    ends: tuple[int, ...] = ()  # where each of its batches ends (a read in slices counts those in each slice's bytes)

    def within(self, start: int, end: int) -> tuple[int, int]:
        """``(batches, bytes)`` of the region inside bytes ``[start, end)`` (batch boundaries)."""
        lo, hi = max(self.position, start), min(self.end, end)
        return sum(1 for e in self.ends if lo < e <= hi), max(hi - lo, 0)

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


def _sound(reader: SegmentReader, header, verify_crc: bool, max_batch_bytes: int | None,
           max_decompressed_bytes: int | None) -> int | None:
    """The first offset of the batch under ``header`` when it is whole and its CRC holds (a legacy compressed
    wrapper decoded for it), else None."""
    from kafkaseg.entry_check import batch_first_offset

    if verify_crc or header.magic < 2:
        data = reader.read_at(header.position, header.size)
        if len(data) < header.size or (verify_crc and not crc_is_valid(data, header._replace(position=0))):
            return None
    if header.magic < 2 and header.codec:
        return batch_first_offset(reader, header.position, max_batch_bytes, max_decompressed_bytes)
    return header.base_offset


def goes_back_after(reader: SegmentReader, end: int, last_offset: int, prefix: bytes | None = None) -> bool:
    """Whether the batch starting at byte ``end`` (right after one whose last offset is ``last_offset``) has an
    offset field at or below it: a backwards step for :func:`outlier_region` to judge (one 17-byte read, unless
    ``prefix`` holds the bytes there already: a caller's buffer). A legacy wrapper's field is its last inner offset,
    so a wrapper whose first inner offset alone goes back is left to the decoders."""
    from kafkaseg.decode.api import batch_start_offset

    if end + 17 > reader.size:
        return False
    following = batch_start_offset(reader.read_at(end, 17) if prefix is None or len(prefix) < 17 else prefix[:17])
    return following is not None and following <= last_offset


def _taken(reader: SegmentReader, start: int, end: int, floor: int, verify_crc: bool, max_batch_bytes: int | None,
           max_decompressed_bytes: int | None) -> list[tuple[int, int, int]]:
    """``(position, last offset before it, its last offset)`` of each batch a read from byte ``start`` (after
    offset ``floor``) takes before byte ``end``: sound, and above the offsets before it, as the decoders take
    batches. Bytes that cannot be walked end the list."""
    taken = []
    try:
        for header in reader.iter_headers(start, end, max_batch_bytes=max_batch_bytes):
            first = _sound(reader, header, verify_crc, max_batch_bytes, max_decompressed_bytes)
            if first is not None and first > floor:
                taken.append((header.position, floor, header.last_offset))
                floor = header.last_offset
    except KafkaSegError:
        pass
    return taken


def last_batch_before(reader: SegmentReader, start: int, end: int, floor: int, *, verify_crc: bool = True,
                      max_batch_bytes: int | None = None, max_decompressed_bytes: int | None = None
                      ) -> tuple[int, int, int] | None:
    """``(position, last offset before it, its last offset)`` of the last batch a read from byte ``start`` (after
    offset ``floor``) takes before byte ``end``, None when there is none: :func:`batch_before` and
    :func:`offset_before` in one walk."""
    taken = _taken(reader, start, end, floor, verify_crc, max_batch_bytes, max_decompressed_bytes)
    return taken[-1] if taken else None


def batch_before(reader: SegmentReader, start: int, step: int, floor: int, *, verify_crc: bool = True,
                 max_batch_bytes: int | None = None, max_decompressed_bytes: int | None = None
                 ) -> tuple[int, int] | None:
    """``(position, last offset before it)`` of the last batch a read from byte ``start`` (after offset ``floor``)
    takes before byte ``step``: the batch a step at ``step`` goes back below. None when there is none."""
    found = last_batch_before(reader, start, step, floor, verify_crc=verify_crc, max_batch_bytes=max_batch_bytes,
                              max_decompressed_bytes=max_decompressed_bytes)
    return found[:2] if found else None


def offset_before(reader: SegmentReader, start: int, end: int, floor: int, *, verify_crc: bool = True,
                  max_batch_bytes: int | None = None, max_decompressed_bytes: int | None = None) -> int:
    """The last offset of the last batch a read from byte ``start`` (after offset ``floor``) takes before byte
    ``end`` (``floor`` when none): what a walk starting at ``end`` mid-segment checks its first batch against
    (``start``: an offset index entry before it, or 0 with the segment's base - 1)."""
    found = last_batch_before(reader, start, end, floor, verify_crc=verify_crc, max_batch_bytes=max_batch_bytes,
                              max_decompressed_bytes=max_decompressed_bytes)
    return found[2] if found else floor


def _window(reader: SegmentReader, start: int, floor: int, limit: int | None, *, verify_crc: bool,
            max_batch_bytes: int | None, max_decompressed_bytes: int | None) -> tuple[list[_Batch], bool]:
    """The batches from ``start`` up to :data:`AHEAD_BATCHES` past the first one that does not follow the offsets
    before it, stopping at bad framing or a batch at or past ``limit`` (where the read of the segment ends).
    Returns them and whether the walk reached the end of the file."""
    batches: list[_Batch] = []
    high = floor
    stepped_at = None
    reached_end = False
    walk = reader.iter_headers(start, max_batch_bytes=max_batch_bytes)
    try:
        for header in walk:
            if limit is not None and header.base_offset >= limit and header.magic >= 2:
                break
            first = _sound(reader, header, verify_crc, max_batch_bytes, max_decompressed_bytes)
            if limit is not None and first is not None and first >= limit:
                break
            batch = _Batch(header.position, header.position + header.size,
                           header.base_offset if first is None else first, header.last_offset, first is not None)
            batches.append(batch)
            if batch.sound and stepped_at is None and batch.first <= high:
                stepped_at = len(batches) - 1
            if batch.sound:
                high = max(high, batch.last)
            if stepped_at is not None and len(batches) - 1 - stepped_at >= AHEAD_BATCHES:
                break
        else:
            reached_end = walk.tail is None
    except KafkaSegError:
        pass  # (the window ends at damage the decoders judge themselves)
    return batches, reached_end


def outlier_region(reader: SegmentReader, start: int, floor: int, *, limit: int | None = None,
                   next_base: int | None = None, verify_crc: bool = True, max_batch_bytes: int | None = None,
                   max_decompressed_bytes: int | None = None, region_end: int | None = None
                   ) -> OutlierRegion | None:
    """The run of batches starting at byte ``start`` of ``reader``'s segment that the window from there leaves out
    (see the module's docstring), when the batch at ``start`` is left out (the batch a step goes back below: its
    offset field, not the later batch's, is the corrupt one), else None (the decoders' verdict stands: the batch
    going back is). ``floor``: the last offset read before ``start`` (the segment's base - 1 at its start);
    ``limit``: where a read of the segment ends (the window stops at a batch reaching it); ``next_base``: the next
    segment's base, which no batch of the segment, nor any true offset of one left out, reaches (None: the last
    segment). ``region_end``: the region is cut at this byte (a slice's end). Reads up to
    :data:`AHEAD_BATCHES` batches after the step (each whole, for its CRC): the error path only. Reads, ``kafkaseg
    verify`` and the lookups all decide with it, from the same batch and floor."""
    batches, reached_end = _window(reader, start, floor, limit, verify_crc=verify_crc,
                                   max_batch_bytes=max_batch_bytes, max_decompressed_bytes=max_decompressed_bytes)
    if not batches or not batches[0].sound:
        return None
    kept = kept_batches(batches, floor, next_base if reached_end else None)
    if kept[0]:
        return None
    run = 0
    while (run + 1 < len(batches) and batches[run + 1].sound and not kept[run + 1]
           and (region_end is None or batches[run + 1].end <= region_end)):
        run += 1
    after = next((b.first for k, b in enumerate(batches) if k > run and kept[k]), None)
    region = batches[:run + 1]
    spans = ", ".join(f"{b.first}..{b.last}" for b in region)
    if len(region) == 1:
        what = (f"the batch here holds offsets {spans} by its base offset, which the CRC does not cover, and the "
                "batches after it go back below that: of the batches around it, this one alone left out leaves "
                "increasing offsets with room for its own, so its offset field is the corrupt one")
    else:
        what = (f"the {len(region)} batches here hold offsets {spans} by their base offsets, which the CRC does not "
                "cover, and overlap: either one's offset field can be the corrupt one, with room for its offsets "
                "among the batches around them, so neither is read")
    what += f" (the readable batches around it end at {floor} and " + (
        f"start at {after})" if after is not None else "go on further)")
    return OutlierRegion(region[0].position, region[-1].end, len(region), floor + 1, after, what,
                         tuple(b.end for b in region))


def batch_offset_field_problem(header, first: int, last_seen: int, limit: int | None, following, segments, i: int,
                               filesystem=None, *, max_batch_bytes: int | None = None) -> str | None:
    """What a walk of segment ``i`` of ``segments`` (each with ``base_offset`` and ``log_path``) finds wrong with
    a whole batch's offset field (``header``; its first offset ``first``; ``following()``: the next batch's offset
    field, None when none follows), as the decoders judge it: :func:`~kafkaseg.decode.api.offset_field_problem`
    after ``last_seen`` below ``limit``, then, for a rolled segment's last batch reaching the next segment's base,
    :func:`past_next_base_problem`. None when neither. Shared by ``kafkaseg verify`` and the lookups."""
    from kafkaseg.decode.api import offset_field_problem

    problem = offset_field_problem(first, header.base_offset, last_seen, limit, following)
    if (problem is None and i + 1 < len(segments) and header.last_offset >= segments[i + 1].base_offset
            and following() is None):  # a rolled segment's last batch across or past the next one's base
        problem = past_next_base_problem(header, first, segments[i + 1].base_offset,
                                         [(seg.base_offset, seg.log_path) for seg in segments[i + 1:]],
                                         filesystem, max_batch_bytes=max_batch_bytes, own_log=segments[i].log_path)
    return problem


def past_next_base_problem(header, first: int, next_base: int, later_logs, filesystem=None, *,
                           max_batch_bytes: int | None = None, own_log: str | None = None) -> str | None:
    """The problem of a rolled segment's LAST batch (``header``, its first offset ``first``, no batch after it;
    ``own_log`` its segment's log) reaching the next segment's base, ``next_base`` (``later_logs``: ``(base offset,
    log path)`` of the segments after it, in order), whose base offset must be corrupt, as a read judges it
    (``scan._SliceDecoder``'s ``check_next_base``): across that base while the next segment's first batch starts at
    its name (Kafka rolls between batches, and its cleaner keeps each batch's offsets, a v2 batch's), or at or past
    it where the next segment does not span its offsets (:func:`_spanned`, any message format), or (v2) with no
    later segment holding what a compacted copy merging the two would hold of it: a batch with its base and last
    offsets whose records include each of its own (:func:`record_facts`, the scan's ``_kept_from_next_segment``; a
    base offset raised onto a later batch's offsets keeps its own records). None when it is no such batch, or a
    later segment holds it or cannot be read (no verdict on damage that may not be there). Shared by ``kafkaseg
    verify`` and the lookups."""
    if header.last_offset < next_base or not later_logs:
        return None
    try:
        if header.magic >= 2 and first < next_base:
            base, path = later_logs[0]
            with SegmentReader(path, filesystem) as following:
                head = following.header_at(0, max_batch_bytes=max_batch_bytes)
            if base != next_base or head is None or head.magic < 2 or head.base_offset != next_base:
                return None
            return (f"the batch here holds offsets {first}..{header.last_offset}, across offset {next_base}, the base "
                    "offset of the partition's next segment: Kafka rolls segments between batches, and its cleaner "
                    "keeps each batch's offsets, so this base offset, which the CRC does not cover, is corrupt")
        if not _spanned(first, header.last_offset, next_base, later_logs, filesystem, max_batch_bytes):
            return (f"the batch here holds offsets {first}..{header.last_offset}, at or past offset {next_base}, the "
                    "base offset of the partition's next segment, which does not span them (its first offset is "
                    "above theirs, or the segment after it starts at or below them): its offset field, which the "
                    "CRC does not cover, is corrupt, or the file is named below its first offset")
        if header.magic < 2:  # (a cleaner's merged copy re-makes legacy wrappers under other offsets: the span alone)
            return None
        other_records = False
        for base, path in later_logs:
            if base > header.last_offset:
                break
            with SegmentReader(path, filesystem) as following:
                for h in following.iter_headers(0, max_batch_bytes=max_batch_bytes):
                    if h.base_offset > header.base_offset:
                        break
                    if (h.magic, h.base_offset, h.last_offset) != (2, header.base_offset, header.last_offset):
                        continue
                    if own_log is None:
                        return None
                    with SegmentReader(own_log, filesystem) as mine:
                        ours = record_facts(mine.read_at(header.position, header.size), header)
                    if set(record_facts(following.read_at(h.position, h.size), h)).issuperset(ours):
                        return None
                    other_records = True
    except KafkaSegError:
        return None
    if other_records:
        return (f"the batch here holds offsets {first}..{header.last_offset}, at or past offset {next_base}, the "
                "base offset of the partition's next segment, and the batch a later segment holds at those offsets "
                "has other records (a compacted copy's would be among them): its base offset, which the CRC does not "
                "cover, is corrupt")
    return (f"the batch here holds offsets {first}..{header.last_offset}, at or past offset {next_base}, the base "
            "offset of the partition's next segment, which holds no such batch: its base offset, which the CRC does "
            "not cover, is corrupt")


def _spanned(first: int, last: int, next_base: int, later_logs, filesystem, max_batch_bytes: int | None) -> bool:
    """Whether the next segment (``later_logs``' first non-empty one) spans offsets ``first``..``last`` of a batch
    at or past its base ``next_base``, as a cleaner's merged copy of the two would hold them beside its original:
    its first offset at or below theirs (at its base or above), and the segment after it, if any, starting above
    ``last`` (``scan._SliceDecoder._next_segment_spans``, the read's rule). Raises what reading them raises."""
    from kafkaseg.entry_check import batch_first_offset

    k = 0
    while k + 1 < len(later_logs):
        with SegmentReader(later_logs[k][1], filesystem) as following:
            if following.size:
                break
        k += 1
    with SegmentReader(later_logs[k][1], filesystem) as following:
        head = batch_first_offset(following, 0, max_batch_bytes, None)
    if head is None:  # (every later segment is empty: none holds these offsets)
        return False
    return (later_logs[k][0] <= head <= max(first, next_base)
            and (k + 1 == len(later_logs) or last < later_logs[k + 1][0]))


def record_facts(data: bytes, header, *, verify_crc: bool = True, max_decompressed_bytes: int | None = None
                 ) -> list[tuple]:
    """``(offset, timestamp, key size, value size)`` of each record of the one batch ``header`` (its bytes
    ``data``): what tells a compacted copy's batch (its records among the original's) from a batch whose base
    offset was raised onto the original's offsets. Raises when the batch is corrupt."""
    from kafkaseg.wire.records import batch_records

    limits = {} if max_decompressed_bytes is None else {"max_decompressed_bytes": max_decompressed_bytes}
    facts = batch_records(data, header._replace(position=0), verify_crc=verify_crc, **limits)
    return list(zip(*(list(column) for column in facts)))
