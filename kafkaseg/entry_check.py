"""Whether an offset index entry points at a batch that fits it: the checks planning applies to the entries it cuts
slices at, and lenient reads and lookups to the entries they resume at after bad framing.

An index can pass every sanity check (``OffsetIndex.sanity_problems``, Kafka's ``sanityCheck``) and still point at
the wrong bytes, and record bytes can parse as a batch header, so the batch at an entry's position is read whole for
its CRC (up to :data:`ENTRY_CRC_MAX_BYTES`; a larger v2 batch by its header's structure) and its offsets must fit
between the entry's neighbours. Brokers wrote an entry's offset as the append's first offset (0.8 to 1.x), its
largest (2.x on), or the cleaner's largest retained one, at the position of the append's first batch
(``storage/src/main/java/org/apache/kafka/storage/internals/log/LogSegment.java``, ``append``), so nothing tighter
holds. A legacy compressed wrapper's offset is its last inner one: its first comes from decoding it.
"""

from __future__ import annotations

import dataclasses

import numpy as np

from kafkaseg.decode import decode, resynchronised_at
from kafkaseg.decode.api import DecodeRequest
from kafkaseg.errors import CorruptDataError, KafkaSegError
from kafkaseg.storage.offset_index import OffsetIndex
from kafkaseg.storage.segment import SegmentReader
from kafkaseg.wire.batch import LOG_OVERHEAD
from kafkaseg.wire.crc import crc_is_valid

__all__ = ["ENTRY_CRC_MAX_BYTES", "entry_neighbours", "entry_batch_problem", "batch_first_offset", "ResumptionEntries",
           "resynchronised_position", "resynchronised_batch", "BAD_BATCH_ENDS_SEGMENT"]

#: Index entries are checked with the batch's CRC up to this size; a larger v2 batch by its header's structure
#: (a 1 GiB segment cut every megabyte would otherwise read half the log while planning). Lookups and planning.
ENTRY_CRC_MAX_BYTES = 64 << 10


def entry_neighbours(offsets, k: int, base_offset: int, next_base_offset: int | None) -> tuple[int, int | None]:
    """``(above, below)`` for entry ``k`` of an offset index's ``offsets``: the previous entry's offset (or the
    segment base - 1) and the next entry's (or the next segment's base, None for the last segment), which the
    batch the entry points at must lie between (see :func:`entry_batch_problem`)."""
    above = int(offsets[k - 1]) if 0 < k <= len(offsets) else base_offset - 1
    below = int(offsets[k + 1]) if k + 1 < len(offsets) else next_base_offset
    return above, below


def entry_batch_problem(reader: SegmentReader, position: int, entry_offset: int, above: int, below: int | None,
                        max_batch_bytes: int | None, max_decompressed_bytes: int | None
                        ) -> tuple[str | None, int | None]:
    """Why the batch at ``position`` of ``reader``'s segment does not fit the offset index entry ``(entry_offset,
    position)`` (None when it does), and the batch's first offset when it got that far. ``above``/``below`` are the
    previous entry's offset (or the segment base - 1) and the next entry's (or the next segment's base, None for
    the last segment). Planning applies the rules to the entries it cuts slices at
    (``planning._Partition.entry_problem``), the scan and lenient lookups to the entries they may resume at after
    bad framing (:class:`ResumptionEntries`). The two limits are the read's (``maxBatchBytes``, and
    ``maxDecompressedBatchBytes`` for a legacy wrapper decoded for its first offset)."""
    path = reader.path
    try:
        header = reader.header_at(position, max_batch_bytes=max_batch_bytes)
        if header is None:  # (also an entry at a torn tail: rebuilding then costs a walk, rows are right)
            return f"no whole batch at byte {position}", None
        header = header._replace(position=0)
        # The whole batch for a CRC where that is cheap: large v2 batches keep to their header, whose
        # structure record bytes rarely imitate; legacy messages are read whole (a wrapper is decoded).
        whole = header.magic < 2 or header.size <= ENTRY_CRC_MAX_BYTES
        data = reader.read_at(position, header.size) if whole else None
        if data is not None and not crc_is_valid(data, header):
            return f"the bytes at {position} parse as a batch header, but not as a batch with a valid CRC", None
        if data is None and not _plausible_v2_header(header):
            return f"the bytes at {position} parse as an implausible batch header", None
        first = _first_offset(path, position, header, data, max_batch_bytes, max_decompressed_bytes)
    except CorruptDataError as err:  # a LayoutError (the file went away) is not the index's fault: raised
        return f"no batch at byte {position}: {err.detail}", None
    where = f"the batch at byte {position} holds offsets {first}..{header.last_offset}"
    if first > entry_offset:
        return f"{where}, starting above the entry's offset {entry_offset}", first
    if first <= above:
        return f"{where}, not above {above} (the previous entry or the segment base)", first
    if below is not None and header.last_offset >= below:
        return f"{where}, not below {below} (the next entry or the next segment)", first
    return None, first


def batch_first_offset(reader: SegmentReader, position: int, max_batch_bytes: int | None,
                       max_decompressed_bytes: int | None) -> int | None:
    """The first offset of the whole batch at ``position`` of ``reader``'s segment (a legacy compressed wrapper is
    decoded for it), None when no whole batch starts there. Raises what the read or the decode raises."""
    header = reader.header_at(position, max_batch_bytes=max_batch_bytes)
    if header is None:
        return None
    header = header._replace(position=0)
    data = reader.read_at(position, header.size) if header.magic < 2 and header.codec else None
    return _first_offset(reader.path, position, header, data, max_batch_bytes, max_decompressed_bytes)


def resynchronised_position(reader: SegmentReader, bad: int, max_batch_bytes: int) -> int | None:
    """The file position where a lenient decoder goes on after bad framing at byte ``bad`` without the index
    (:func:`kafkaseg.decode.resynchronised_at`), or None: what ``kafkaseg verify`` and lenient lookups skip, as a
    lenient read does. Reads the bad batch and the one after it, each within ``max_batch_bytes``."""
    size = int.from_bytes(reader.read_at(bad + 8, 4), "big", signed=True)
    following = bad + LOG_OVERHEAD + size
    if not 0 <= size <= max_batch_bytes or following > reader.size:
        return None
    next_size = int.from_bytes(reader.read_at(following + 8, 4) or b"\0", "big", signed=True)
    length = following - bad + LOG_OVERHEAD + min(max(next_size, 0), max_batch_bytes)
    buf = reader.read_at(bad, length)
    at = resynchronised_at(buf, DecodeRequest(path=reader.path, lenient=True, max_batch_bytes=max_batch_bytes,
                                              bytes_after=max(reader.size - bad - len(buf), 0)))
    return None if at is None else bad + at


BAD_BATCH_ENDS_SEGMENT = "the bad batch ends the segment"  # (resynchronised_batch: nothing after it to read)


def resynchronised_batch(reader: SegmentReader, bad: int, max_batch_bytes: int,
                         max_decompressed_bytes: int | None) -> tuple[int, int] | str | None:
    """The first step of where a lenient read goes on after bad framing at byte ``bad``, shared by ``kafkaseg
    verify`` and lenient lookups: ``(position, first offset)`` of the batch the bad one's length field says follows
    it when that one checks out (:func:`resynchronised_position`, the decoders' rule); :data:`BAD_BATCH_ENDS_SEGMENT`
    when the bad batch ends the segment; None when no batch is found that way (the read goes on at the next offset
    index entry whose batch checks out: :meth:`ResumptionEntries.next_checked`)."""
    at = resynchronised_position(reader, bad, max_batch_bytes)
    if at is None:
        return None
    if at >= reader.size:
        return BAD_BATCH_ENDS_SEGMENT
    try:
        first = batch_first_offset(reader, at, max_batch_bytes, max_decompressed_bytes)
    except KafkaSegError:
        return None
    return None if first is None else (at, first)


def _first_offset(path: str, position: int, header, data, max_batch_bytes: int | None,
                  max_decompressed_bytes: int | None) -> int:
    """A batch's first offset: its header's, or for a legacy compressed wrapper (whose offset is its last inner one)
    its first inner record's, decoded from ``data`` (the whole wrapper)."""
    if not (header.magic < 2 and header.codec):
        return header.base_offset
    request = DecodeRequest(path=path, base_position=position, include_control=True, max_batch_bytes=max_batch_bytes,
                            timestamp_unit="ms")  # only the offsets matter: any timestamp Kafka takes is no fault
    if max_decompressed_bytes is not None:  # None: the decoder's default bound
        request = dataclasses.replace(request, max_decompressed_bytes=max_decompressed_bytes)
    offsets = decode(data, request).columns["offset"]
    return offsets[0].as_py() if len(offsets) else header.last_offset


def _plausible_v2_header(header) -> bool:
    """A v2 header whose fields hang together: a known codec, no unknown attribute bits, a record count that fits
    its size when uncompressed (a record is at least 7 bytes) and a last-offset delta that covers it (compaction
    only lowers the count), a leader epoch of -1 or more. (Timestamps prove nothing: a delete horizon or a
    LogAppendTime batch from a producer whose clock ran ahead puts the base timestamp above the maximum.)"""
    count = header.records_count
    fits = header.codec != 0 or 7 * count <= header.size - 49  # compressed records can take under 7 bytes each
    return (header.magic == 2 and header.codec <= 4 and not header.attributes & ~0x7F and count >= 0 and fits
            and header.last_offset - header.base_offset >= max(count - 1, 0) and header.partition_leader_epoch >= -1)


class ResumptionEntries:
    """The entries of a segment's offset index that a lenient read may resume at after bad framing, loaded (and
    sanity-checked against the log) once, with the segment open beside them: a segment with many bad spots costs
    one index load. No index, an insane one, or a segment unreadable now: no resumption. ``close()`` when done."""

    def __init__(self, log_path: str, index_path: str | None, base_offset: int, next_base_offset: int | None,
                 filesystem=None, *, max_batch_bytes: int | None, max_decompressed_bytes: int | None,
                 index_window: tuple[int, int] | None = None):
        self.base_offset, self.next_base_offset = base_offset, next_base_offset
        self.max_batch_bytes, self.max_decompressed_bytes = max_batch_bytes, max_decompressed_bytes
        self.index: OffsetIndex | None = None
        self.reader: SegmentReader | None = None
        if not index_path:
            return
        try:
            index = OffsetIndex.load(index_path, base_offset, filesystem, window=index_window)
            self.reader = SegmentReader(log_path, filesystem)
            # (the active segment's: entries a follower's truncation left follow its own)
            self.index = index.for_reading(self.reader.size, active=next_base_offset is None)
        except KafkaSegError:
            self.index = None

    def next_checked(self, bad: int, end: int | None, last_seen: int) -> tuple[int, int] | None:
        """``(position, first offset)`` of the first entry in ``(bad, end]`` (``end`` None: the segment's end)
        whose batch checks out (:func:`entry_batch_problem`) and starts above ``last_seen``; None when there is
        none, or no sane index, or the segment is unreadable now. Where a lenient read resumes after bad framing at
        byte ``bad``: the same entries, in the same order, whatever the slicing."""
        if self.index is None or self.reader is None:
            return None
        end = self.reader.size if end is None else end
        positions, offsets = self.index.positions, self.index.offsets
        try:
            for k in range(int(np.searchsorted(positions, bad, side="right")), len(positions)):
                position = int(positions[k])
                if position > end:
                    break
                above, below = entry_neighbours(offsets, k, self.base_offset, self.next_base_offset)
                problem, first = entry_batch_problem(self.reader, position, int(offsets[k]), above, below,
                                                     self.max_batch_bytes, self.max_decompressed_bytes)
                if problem is None and first > last_seen:
                    return position, first
        except KafkaSegError:  # the segment unreadable now
            return None
        return None

    def close(self) -> None:
        if self.reader is not None:
            self.reader.close()
            self.reader = None
