"""What both decoder twins take and return. No decoding here: see ``_kernel_py.py`` (reference) and ``_kernel.pyx``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

import pyarrow as pa

INT64_MIN = -(1 << 63)
INT64_MAX = (1 << 63) - 1

# Why the kernel stopped before the end of its buffer (DecodeResult.stop).
STOP_END = "end"  # consumed the whole buffer, which ended on a batch boundary
STOP_LIMIT = "limit"  # max_records or max_bytes reached (after a whole batch)
STOP_PARTIAL = "partial"  # the buffer ends inside a batch: read more (next_batch_size says how much, when known)
STOP_PAST_END = "past_end"  # a batch starts at or beyond max_offset: nothing further can match
# lenient mode met framing it could not resynchronise after: the rest of the buffer was skipped, and it and
# bytes_after are counted as corrupt
STOP_CORRUPT = "corrupt"
# how a STOP_CORRUPT problem ends (a scan that resumes the read further on replaces it by where it resumed)
REST_SKIPPED = "the rest of the data skipped"


@dataclass(frozen=True)
class DecodeRequest:
    """How to decode one buffer of whole (or partial trailing) batches.

    ``base_position`` is the file position of ``buf[0]``: errors and the ``position`` column use file positions.
    Records are kept when ``min_offset <= offset < max_offset``. ``aborted`` lists read_committed's aborted
    transactions as ``(producerId, firstOffset, lastOffset)``: a transactional data batch of that producer whose
    base offset lies in ``[firstOffset, lastOffset]`` is dropped.

    ``bytes_after`` says how many bytes of the same data follow ``buf`` (a scan hands them over in later calls; 0:
    ``buf`` is all there is). Lenient reads use it to resynchronise after bad framing (an unknown magic, an
    impossible size) without depending on where a buffer happens to end: the bad batch's declared length (never one
    beyond ``max_batch_bytes``) is trusted only if it ends exactly where the data ends or at a plausible batch (magic 0-2, a size within the format's
    minimum and ``max_batch_bytes``, wholly inside the data, and its CRC correct when ``verify_crc``; with
    ``verify_crc`` off the header checks alone decide, as every other batch's length is then trusted on its header
    alone). When that batch runs past ``buf`` the kernel stops with STOP_PARTIAL and asks for the bytes it needs
    (never more than ``12 + max_batch_bytes`` from the bad batch's start: a resynchronisation that would need more
    is refused). Refused, the rest of the data is skipped: one corrupt batch, all its bytes.
    """

    path: str | None = None
    base_position: int = 0
    verify_crc: bool = True
    include_control: bool = False
    include_headers: bool = False
    include_metadata: bool = False
    # False: the column comes back all null and its bytes are not copied (a projection without it). Framing and
    # CRC are checked as before; bytes not copied do not count toward max_bytes.
    include_key: bool = True
    include_value: bool = True
    min_offset: int = INT64_MIN
    max_offset: int = INT64_MAX
    max_records: int = 1 << 62
    max_bytes: int = 64 << 20
    max_batch_bytes: int = 128 << 20
    max_decompressed_bytes: int = 256 << 20
    aborted: tuple[tuple[int, int, int], ...] = ()
    lenient: bool = False
    check_offsets_after: int = INT64_MIN  # the last offset seen before this buffer (monotonicity across buffers)
    # ``kafkaseg dump`` only: a compressed legacy wrapper's inner records come back in their stored order at the
    # offsets Kafka's DeepRecordsIterator gives them even when those repeat or go back (DumpLogSegments prints them
    # so); a read never sets it, since its results would then hold an offset twice or out of order (the kernels'
    # comment at the inner-offset check says why that is corruption). The last offset is then the highest.
    allow_unordered_inner_offsets: bool = False
    bytes_after: int = 0  # bytes of the same data after buf (lenient resynchronisation; see above)
    # "us": timestamp[us] as Spark stores them (a millisecond value beyond +-9.2e15, e.g. a producer that sent
    # nanoseconds, is a CorruptBatchError); "ms": timestamp[ms], Kafka's values as they are (the CLI prints them)
    timestamp_unit: str = "us"


class _Where(NamedTuple):
    path: str | None
    position: int
    what: str


class Problem(_Where):
    """One corrupt region a lenient read skipped: the tuple ``(path, position, what)`` problems always were, so
    ``for path, at, what in problems`` and comparisons with 3-tuples go on working, with what is known of the region
    as attributes: ``bytes`` skipped from ``position``, and the offsets ``[first_offset, end_offset)`` it made
    unreadable (from the offset after the last readable batch before it to the first offset of the readable batch
    after it; either None when the read did not see one). A corrupt batch's own header is not trusted for them: the
    CRC does not cover its base offset. ``error``: the :class:`~kafkaseg.errors.KafkaSegError` class a strict read
    raises there (a decoder's problem; None otherwise, and in the JSON form, which leaves it out). :meth:`as_list`
    is its JSON form, :meth:`from_list` reads it back."""

    bytes: int | None
    first_offset: int | None
    end_offset: int | None
    error: type | None

    def __new__(cls, path: str | None, position: int, what: str, bytes: int | None = None,  # noqa: A002
                first_offset: int | None = None, end_offset: int | None = None, *, error: type | None = None):
        self = super().__new__(cls, path, position, what)
        self.bytes, self.first_offset, self.end_offset, self.error = bytes, first_offset, end_offset, error
        return self

    def _replace(self, **changes) -> "Problem":
        return Problem(**{**self.as_dict(), "error": self.error, **changes})

    def as_dict(self) -> dict:
        return {"path": self.path, "position": self.position, "what": self.what, "bytes": self.bytes,
                "first_offset": self.first_offset, "end_offset": self.end_offset}

    def as_list(self) -> list:
        """``[path, position, what, bytes, first_offset, end_offset]``: the metrics' JSON form (the three values
        problems always had, then the new ones)."""
        return [self.path, self.position, self.what, self.bytes, self.first_offset, self.end_offset]

    @classmethod
    def from_list(cls, values) -> "Problem":
        """A problem from its JSON form (:meth:`as_list`, or the 3-element list of older metrics)."""
        return cls(*values)

    def extent(self) -> str:
        """What is known of the region, for a log line: ``"201 bytes; offsets 20..24"`` (empty when nothing)."""
        parts = [] if self.bytes is None else [f"{self.bytes} bytes"]
        if self.first_offset is not None and self.end_offset is not None:
            parts.append(f"offsets {self.first_offset}..{self.end_offset - 1}" if self.end_offset > self.first_offset
                         else "no offset")
        elif self.first_offset is not None:
            parts.append(f"offsets from {self.first_offset}")
        elif self.end_offset is not None:
            parts.append(f"offsets below {self.end_offset}")
        return "; ".join(parts)

    def __repr__(self) -> str:
        return (f"Problem(path={self.path!r}, position={self.position!r}, what={self.what!r}, bytes={self.bytes!r}, "
                f"first_offset={self.first_offset!r}, end_offset={self.end_offset!r})")


def uncounted(problems: list, seen: dict) -> tuple[list, int, int]:
    """``problems`` (of one slice, or one reader's total) less what ``seen`` already counts: ``(kept, batches,
    bytes)``, the problems to add and the batches and bytes to take off their counts. ``seen`` maps a path to the
    byte ranges counted in it (``[start, end)``, merged), and is updated with the kept ones. A problem whose region
    lies wholly in counted ranges is a region read twice (two slices of one file reading a batch both need: a
    pushed-down ``NOT offset = x``): it goes, with its batch and bytes; one partly inside keeps its batch, less the
    bytes counted already. Problems without a byte count, and corrupt batches past the named ones, are counted as
    they are."""
    kept, batches, nbytes = [], 0, 0
    for problem in problems:
        size = getattr(problem, "bytes", None)
        if size is None or size <= 0:
            kept.append(problem)
            continue
        start, end = problem[1], problem[1] + size
        ranges = seen.setdefault(problem[0], [])
        covered = sum(max(0, min(end, hi) - max(start, lo)) for lo, hi in ranges)
        if covered >= size:
            batches += 1
            nbytes += size
            continue
        nbytes += covered
        kept.append(problem)
        ranges.append((start, end))
        ranges.sort()
        merged = [ranges[0]]
        for lo, hi in ranges[1:]:
            if lo <= merged[-1][1]:
                merged[-1] = (merged[-1][0], max(merged[-1][1], hi))
            else:
                merged.append((lo, hi))
        ranges[:] = merged
    return kept, batches, nbytes


@dataclass
class DecodeStats:
    batches: int = 0  # batches whose records were looked at
    records: int = 0  # records emitted
    skipped_batches_out_of_range: int = 0
    skipped_control_batches: int = 0
    skipped_aborted_batches: int = 0
    corrupt_batches: int = 0  # lenient mode: batches (or unreadable regions) skipped because they failed checks
    corrupt_bytes: int = 0  # lenient mode: bytes skipped (whole corrupt batches and unreadable tails)
    problems: list = field(default_factory=list)  # lenient mode: Problem (path, position, message, ...), the first few

    def add(self, other: "DecodeStats") -> None:
        for name in ("batches", "records", "skipped_batches_out_of_range", "skipped_control_batches",
                     "skipped_aborted_batches", "corrupt_batches", "corrupt_bytes"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        room = MAX_PROBLEMS - len(self.problems)
        if room > 0:
            self.problems.extend(other.problems[:room])


MAX_PROBLEMS = 20


@dataclass
class DecodeResult:
    """Decoded columns (no topic/partition/segment: the scan adds constant columns) and how far decoding went.

    ``columns`` maps names to Arrow arrays of equal length: key, value (all null unless include_key/include_value),
    offset, timestamp, timestampType, then
    headers (with include_headers) and leaderEpoch, producerId, producerEpoch, sequence, isTransactional,
    isControl, magic, codec (int8 codec id), batchOffset, position (with include_metadata).
    """

    columns: dict
    num_rows: int
    consumed: int
    stop: str
    next_batch_size: int = -1  # with STOP_PARTIAL: the bytes from ``consumed`` the next call needs, when known
    # the last offset of the last batch walked (for monotonicity across buffers); not the batch a past-end stop
    # ends at, so that the read can tell where its segment's offsets ended
    last_offset: int = INT64_MIN
    stats: DecodeStats = field(default_factory=DecodeStats)
    # the buffer position of what the decode stopped at: with STOP_PAST_END the batch at or past the end (its size
    # is ``consumed - stop_position``), with STOP_CORRUPT the framing it could not step over; else -1
    stop_position: int = -1


def past_end_problem(first_offset: int, max_offset: int, following: int) -> str:
    """The problem of a batch at or past ``max_offset`` followed by one starting lower, at ``following`` (its offset
    field, which the CRC does not cover, is corrupt): the kernels' words, and the scan's at a slice's end."""
    return (f"batch at offset {first_offset} is at or past offset {max_offset}, where this read of the segment "
            f"ends, but the next batch starts at offset {following}: an offset field the CRC does not cover is "
            "corrupt")


def offset_field_past_next(first_offset: int, max_offset: int | None, following: int | None) -> str | None:
    """The decoders' rule for a batch whose first offset is at or past ``max_offset`` (where the read of its segment
    ends; None: not known, the batch after it alone decides): the problem when the batch after it starts at a lower
    offset, ``following`` (its offset field, which the CRC does not cover, jumped past it: a lenient read skips the
    batch and reads on), else None (the segment's offsets end there). Shared with ``kafkaseg verify``."""
    if following is None or following >= first_offset or (max_offset is not None and first_offset < max_offset):
        return None
    if max_offset is None:
        return (f"batch at offset {first_offset} is followed by a batch starting at offset {following}: an offset "
                "field the CRC does not cover is corrupt")
    return past_end_problem(first_offset, max_offset, following)


def offset_field_problem(first_offset: int, offset_field: int, last_seen: int, max_offset: int | None,
                         following) -> str | None:
    """The decoders' rule for a whole batch (its CRC sound) whose offset field (v2 base offset, legacy entry
    offset) the CRC does not cover, for callers that walk headers (``kafkaseg verify``, the lookups): the problem
    when its first offset (``first_offset``: a legacy compressed wrapper's first inner one; its ``offset_field`` is
    its last) does not follow ``last_seen``, the last offset of the batch read before it (the segment's base - 1 at
    its start): a field gone back, whatever the batch holds (the kernels exempt no empty batch either). Else, when
    it reaches ``max_offset`` (where the read of its segment ends; None: unknown), :func:`offset_field_past_next`
    on its offset field with the batch after it, ``following()`` (a callable: the next batch's offset field, None
    when none follows; read only then). None when neither."""
    if first_offset <= last_seen:
        return f"non-monotonic offsets: batch base offset {first_offset} follows offset {last_seen}"
    if max_offset is not None and first_offset < max_offset:
        return None
    return offset_field_past_next(offset_field, max_offset, following())


def batch_start_offset(prefix: bytes) -> int | None:
    """The offset field of the batch whose first 17 bytes are ``prefix`` (offset, length, partition leader epoch or
    legacy CRC, magic), None when they start no batch (length > 0 and magic 0-2: not the zeros of a preallocated
    segment, which end its batches): the ``following`` :func:`offset_field_past_next` takes."""
    if len(prefix) < 17 or int.from_bytes(prefix[8:12], "big", signed=True) <= 0 or prefix[16] not in (0, 1, 2):
        return None
    return int.from_bytes(prefix[:8], "big", signed=True)


TIMESTAMP_TYPE = pa.timestamp("us", tz="UTC")
TIMESTAMP_MS_TYPE = pa.timestamp("ms", tz="UTC")
