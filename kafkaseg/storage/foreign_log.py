"""Whether a rolled segment's ``.log`` holds another segment's batches: the one rule of scan (``_SliceDecoder.
foreign_file`` / ``foreign_below``), layout (``rolled_cut_of``: describe, locate, a start inside) and verify.

A file holds another segment's batches when whole batches fill it, none in its own range (every one at or past the
next segment's base, or every one below its own base), and each is a batch another segment of the partition holds
as it is: the same base and last offsets and the same CRC. The CRC covers a batch's attributes and records, not its
base offset, so the three equal say the same batch; a batch whose offset field alone moved (raised onto a later
segment's offsets, lowered onto an earlier one's) has the same CRC but another's offsets hold other records: no
segment holds it, and it stays corruption. Error path only: this file's headers, then those of the segments
holding its offsets (found by bisecting the segments' names, not walked from the first)."""

from __future__ import annotations

import bisect
from typing import TYPE_CHECKING, NamedTuple

from kafkaseg.errors import KafkaSegError
from kafkaseg.storage.segment import SegmentReader

if TYPE_CHECKING:
    from kafkaseg.storage.fs import RandomAccessReader
    from kafkaseg.storage.layout import PartitionDir


class OutsideBatches(NamedTuple):
    """Rolled segment's batches, all outside its range: offsets ``first``..``last``, ``below`` its own base (else at
    or past the next segment's), ``held`` when each is a batch another segment holds as it is (the file holds
    another segment's batches; else they are its own, their offset fields moved)."""

    first: int
    last: int
    below: bool
    held: bool


def outside_batches(partition_dir: PartitionDir, i: int, max_batch_bytes: int | None, *,
                    opened: RandomAccessReader | None = None) -> OutsideBatches | None:
    """The :class:`OutsideBatches` of rolled segment ``i`` of ``partition_dir`` (its ``.log`` as listed, or
    ``opened``: a reader of it already open) when whole batches fill its file and every one lies outside its range;
    None otherwise (a batch of its own range, none at all, a torn or unreadable batch, or no next segment). Reads the
    first header; the rest, and the segments that would hold them, only when that one is outside the range."""
    pdir, fs = partition_dir, partition_dir.filesystem
    if not 0 <= i < len(pdir.segments) - 1:
        return None
    seg, next_base = pdir.segments[i], pdir.segments[i + 1].base_offset
    limits = {"max_batch_bytes": max_batch_bytes}
    try:
        with (SegmentReader(seg.log_path, fs) if opened is None
              else SegmentReader(seg.log_path, opened=opened)) as reader:
            size = reader.size if opened is not None else seg.log_size
            head = reader.header_at(0, **limits)
            if head is None or seg.base_offset <= head.last_offset and head.base_offset < next_base:
                return None
            mine = list(reader.iter_headers(0, size, **limits))
    except KafkaSegError:
        return None
    if not mine or mine[-1].position + mine[-1].size != size:
        return None
    if all(h.base_offset >= next_base for h in mine):
        below = False
    elif all(h.last_offset < seg.base_offset for h in mine):
        below = True
    else:
        return None
    first, last = mine[0].base_offset, mine[-1].last_offset
    return OutsideBatches(first, last, below, _held_elsewhere(pdir, i, mine, limits))


def _held_elsewhere(pdir: PartitionDir, i: int, mine: list, limits: dict) -> bool:
    """Whether each header of ``mine`` (segment ``i``'s batches, in file order) is one another segment of ``pdir``
    holds as it is (base and last offsets and CRC). Walks the headers of the segments whose names could hold
    them: from the last named at or below the first batch's offset (bisected), up to the last batch's offset."""
    first, last = mine[0].base_offset, mine[-1].last_offset
    bases = [s.base_offset for s in pdir.segments]
    theirs = set()
    for k in range(max(bisect.bisect_right(bases, first) - 1, 0), len(bases)):
        if bases[k] > last:
            break
        if k == i:
            continue
        try:
            with SegmentReader(pdir.segments[k].log_path, pdir.filesystem) as reader:
                for h in reader.iter_headers(0, **limits):
                    if h.base_offset > last:
                        break
                    theirs.add((h.base_offset, h.last_offset, h.crc))
        except KafkaSegError:
            pass  # (the batches before the damage are read; a batch past it is held by no one here)
    return all((h.base_offset, h.last_offset, h.crc) in theirs for h in mine)
