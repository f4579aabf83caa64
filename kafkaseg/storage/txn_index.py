"""``.txnindex`` files: the aborted transactions whose ABORT marker lies in a segment.

Layout (``storage/.../log/AbortedTxn.java``, ``TransactionIndex.java``), big-endian, 34-byte entries::

    version           int16   0 (AbortedTxn.CURRENT_VERSION; a larger one is an error)
    producerId        int64
    firstOffset       int64   first offset of the aborted transaction (may be in an earlier segment)
    lastOffset        int64   offset of the ABORT marker
    lastStableOffset  int64   the partition's LSO when the marker was written

Kafka reads whole entries only (a partial trailing entry is ignored, ``TransactionIndex.iterable``) and its
``sanityCheck`` rejects an entry whose lastOffset is below the segment base.

Kafka creates the file lazily, on the segment's first abort (``TransactionIndex``'s file channel is only opened
when the file exists or an entry is appended, in 2.x ``kafka.log.TransactionIndex`` as in 3.x), so a missing
``.txnindex`` is normal for a segment without aborts, but it is also what a lost or deleted file looks like. The
broker rebuilds the index during recovery (``LogSegment.recover`` -> ``updateProducerState`` -> ``updateTxnIndex``)
by replaying producer state over the log; :func:`derive_aborted_txns` (pure) and :func:`segment_aborted_txns`
(one segment's header walk) do the same from batch headers and the key of each control batch's first record:

* a transactional data batch from producer P opens P's transaction at the batch's base offset when P has none
  open (``ProducerAppendInfo.appendDataBatch``);
* a control batch from P with a record ends P's transaction (``appendEndTxnMarker``); when the marker is an ABORT
  and a transaction was open, the entry is ``(P, first offset, marker offset, LSO)`` where the LSO is the first
  offset of the earliest other open transaction, else marker + 1 (``ProducerStateManager.lastStableOffset``);
* an empty control batch (its records cleaned away) changes nothing; a marker without an open transaction (an
  empty transaction) gives no entry.

A transaction can start segments before its marker: the caller keeps the open transactions (producerId -> first
offset) from one segment to the next, starting at the partition's first segment. Where the log no longer holds a
transaction's first batches, its first offset is the first of its batches still present.
"""

from __future__ import annotations

from typing import Iterable, NamedTuple

import numpy as np
import pyarrow.fs as pafs

from kafkaseg.errors import CorruptBatchError, CorruptDataError, CorruptIndexError, CrcMismatchError
from kafkaseg.storage import fs as _fs
from kafkaseg.storage._index_file import DEFAULT_MAX_INDEX_BYTES, IndexProblem, raise_first_problem, window_of
from kafkaseg.storage.segment import DEFAULT_MAX_BATCH_BYTES, SegmentReader
from kafkaseg.wire.batch import CONTROL_ABORT, CONTROL_COMMIT, V2_HEADER_SIZE, BatchHeader, read_control_key
from kafkaseg.wire.crc import crc_is_valid

#: The control type of a marker whose batch failed its CRC (a lenient walk): which end it was is unknown.
MARKER_UNREADABLE = -1

__all__ = [
    "AbortedTxn", "TransactionIndex", "TXN_INDEX_ENTRY_SIZE", "derive_aborted_txns", "segment_aborted_txns",
    "unindexed_abort"]

TXN_INDEX_ENTRY_SIZE = 34
CURRENT_VERSION = 0
_DTYPE = np.dtype([("version", ">i2"), ("producer_id", ">i8"), ("first_offset", ">i8"), ("last_offset", ">i8"),
                   ("last_stable_offset", ">i8")])


class AbortedTxn(NamedTuple):
    version: int
    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int


class TransactionIndex:
    """The aborted transactions of one segment, in file order."""

    ENTRY_SIZE = TXN_INDEX_ENTRY_SIZE

    def __init__(self, base_offset: int, entries: tuple[AbortedTxn, ...] = (), *, path: str | None = None,
                 file_size: int | None = None, rebuilt: bool = False, rebuild_reason: str | None = None):
        self.base_offset = int(base_offset)
        self.entries = tuple(entries)
        self.path = path
        self.file_size = file_size
        self.rebuilt = rebuilt
        self.rebuild_reason = rebuild_reason

    @classmethod
    def from_bytes(cls, data: bytes, base_offset: int, path: str | None = None) -> "TransactionIndex":
        count = len(data) // TXN_INDEX_ENTRY_SIZE
        rows = np.frombuffer(data, dtype=_DTYPE, count=count)
        entries = tuple(AbortedTxn(*map(int, row)) for row in rows.tolist())
        return cls(base_offset, entries, path=path, file_size=len(data))

    @classmethod
    def load(cls, path: str, base_offset: int, filesystem: pafs.FileSystem | None = None, *,
             max_bytes: int = DEFAULT_MAX_INDEX_BYTES, window: tuple[int, int] | None = None
             ) -> "TransactionIndex":
        """Read ``path``, or its ``window`` ``(position, size)`` (see :func:`index_location`), refusing indexes
        over ``max_bytes`` (~2M aborted transactions in one segment)."""
        with _fs.RandomAccessReader(path, filesystem) as reader:
            start, size = window_of(reader, window)
            if size > max_bytes:
                raise CorruptIndexError(f"transaction index of {size} bytes exceeds the {max_bytes}-byte cap",
                                        path=path, position=max_bytes)
            data = reader.read_at(start, size)
        return cls.from_bytes(data, base_offset, path)

    def __len__(self) -> int:
        return len(self.entries)

    def __iter__(self):
        return iter(self.entries)

    @property
    def trailing_bytes(self) -> int:
        """Bytes of a partial last entry (ignored, as Kafka does)."""
        return 0 if self.file_size is None else self.file_size % TXN_INDEX_ENTRY_SIZE

    def aborted_overlapping(self, start_offset: int, end_offset: int) -> list[AbortedTxn]:
        """Aborted transactions that touch ``[start_offset, end_offset)``: lastOffset >= start and
        firstOffset < end (the filter of ``TransactionIndex.collectAbortedTxns``)."""
        return [t for t in self.entries if t.last_offset >= start_offset and t.first_offset < end_offset]

    def collect_aborted(self, fetch_offset: int, upper_bound_offset: int) -> tuple[list[AbortedTxn], bool]:
        """``TransactionIndex.collectAbortedTxns``: the overlapping transactions and whether the search is complete
        (an entry whose lastStableOffset >= upper bound means later segments cannot add any)."""
        found = []
        for txn in self.entries:
            if txn.last_offset >= fetch_offset and txn.first_offset < upper_bound_offset:
                found.append(txn)
            if txn.last_stable_offset >= upper_bound_offset:
                return found, True
        return found, False

    def sanity_problems(self, end_offset: int | None = None) -> list[IndexProblem]:
        """``TransactionIndex.sanityCheck`` (lastOffset >= segment base) plus the version check its reader does,
        and what every entry a broker writes holds: 0 <= firstOffset <= lastOffset, and, with ``end_offset`` (a
        rolled segment's end: the next segment's base), lastStableOffset <= ``end_offset``
        (``ProducerStateManager.lastStableOffset``: the first offset of another producer's open transaction, or
        the offset after the marker; a follower appends a whole fetch at once, every producer's batches updating
        the state before the entries are written, so that transaction may begin after the marker, later in the
        same append, which lies in one segment). A lastStableOffset raised past that ends :meth:`collect_aborted`
        at the entry (the aborted transactions of every later entry would go unseen), and a negative firstOffset
        aborts a producer's earlier, committed records. (The active segment's entries are not bounded: a
        follower's truncation may leave one whose lastStableOffset is past the log's end until it grows.)"""
        problems = []
        for n, txn in enumerate(self.entries):
            position = n * TXN_INDEX_ENTRY_SIZE
            if txn.version > CURRENT_VERSION or txn.version < 0:
                problems.append(IndexProblem(f"entry {n}: unexpected aborted transaction version {txn.version}",
                                             position))
            if txn.last_offset < self.base_offset:
                problems.append(IndexProblem(
                    f"entry {n}: last offset {txn.last_offset} is below the segment base {self.base_offset}",
                    position))
            if txn.first_offset > txn.last_offset:
                problems.append(IndexProblem(
                    f"entry {n}: first offset {txn.first_offset} is after the marker offset {txn.last_offset}",
                    position))
            elif txn.first_offset < 0:
                problems.append(IndexProblem(f"entry {n}: negative first offset {txn.first_offset}", position))
            if end_offset is not None and txn.last_stable_offset > end_offset:
                problems.append(IndexProblem(
                    f"entry {n}: last stable offset {txn.last_stable_offset} is past the segment's end (the next "
                    f"segment's base {end_offset}), which no broker writes", position))
        return problems

    def check(self) -> None:
        """Raise :class:`CorruptIndexError` (file and byte of the bad entry) on the first sanity problem."""
        raise_first_problem(self.sanity_problems(), self.path)

    def __repr__(self) -> str:
        rebuilt = ", rebuilt" if self.rebuilt else ""
        return f"TransactionIndex(base={self.base_offset}, entries={len(self)}, path={self.path!r}{rebuilt})"


# -- aborted transactions from the log itself ------------------------------------------------------------------

def derive_aborted_txns(batches: Iterable[tuple[BatchHeader, int | None]], open_txns: dict[int, int]
                        ) -> list[AbortedTxn]:
    """The aborted transactions whose markers are among ``batches`` (``(header, control type)`` pairs in log order;
    the type is the first control record's, None for data batches and empty control batches), replaying producer
    state as the module doc says. ``open_txns`` (producerId -> first offset of its open transaction) is the state
    before the first batch and is updated in place, so a caller can carry it into the next segment."""
    aborted = []
    for header, control_type in batches:
        pid = header.producer_id
        if header.magic < 2 or pid < 0:
            continue
        if header.is_control:
            if control_type is None:
                continue
            first = open_txns.pop(pid, None)  # an unreadable marker ends the transaction too
            # which end an unreadable marker was is unknown: its transaction is taken as aborted, so that a
            # read_committed read never returns records that may have been aborted (they are left out instead)
            if first is not None and control_type in (CONTROL_ABORT, MARKER_UNREADABLE):
                lso = min(open_txns.values(), default=header.base_offset + 1)
                aborted.append(AbortedTxn(CURRENT_VERSION, pid, first, header.base_offset, lso))
        elif header.is_transactional and pid not in open_txns:
            open_txns[pid] = header.base_offset
    return aborted


def _marker_type(reader: SegmentReader, header: BatchHeader) -> int | None:
    """The control type of a producer's control batch (None when it holds no record): reads the (tiny) batch
    whole, so its CRC guards the type. A compressed or non-end-transaction control batch is an error: brokers
    write their markers uncompressed (``MemoryRecords.withEndTransactionMarker``) and
    ``EndTransactionMarker.deserialize`` refuses other types."""
    if header.records_count == 0 or header.size <= V2_HEADER_SIZE:
        return None
    if header.codec:
        raise CorruptBatchError(
            f"control batch of producer {header.producer_id} at offset {header.base_offset} is compressed "
            f"({header.codec_name}); brokers write transaction markers uncompressed, so its marker type is not "
            "read", path=reader.path, position=header.position)
    batch = reader.read_at(header.position, header.size)
    if not crc_is_valid(batch, header._replace(position=0)):
        raise CrcMismatchError(f"control batch of producer {header.producer_id} at offset {header.base_offset} "
                               "fails its CRC-32C, so its marker type is unknown", path=reader.path,
                               position=header.position)
    start = header.position + V2_HEADER_SIZE
    data = batch[V2_HEADER_SIZE:V2_HEADER_SIZE + 64]
    try:
        _, control_type = read_control_key(data, 0)
    except CorruptDataError as exc:
        raise exc.located(reader.path, start) from exc
    if control_type not in (CONTROL_ABORT, CONTROL_COMMIT):
        raise CorruptBatchError(
            f"control batch of producer {header.producer_id} at offset {header.base_offset} has control type "
            f"{control_type}, not ABORT or COMMIT", path=reader.path, position=header.position)
    return control_type


def segment_aborted_txns(reader: SegmentReader, open_txns: dict[int, int], *,
                         max_batch_bytes: int | None = DEFAULT_MAX_BATCH_BYTES,
                         errors: list | None = None, log_end: int | None = None,
                         unreadable_markers: list | None = None, partial_append: bool = False) -> list[AbortedTxn]:
    """:func:`derive_aborted_txns` over one segment: a walk of every batch header (no decompression), reading the
    first control record's key of each producer's control batch. A control batch failing its CRC raises, or, when
    ``errors`` is a list, is appended to it (and its header to ``unreadable_markers``, when given) and taken as an
    unreadable marker. An incomplete tail ends the walk as it ends a
    read; corrupt framing raises, or, when ``errors`` is a list (a lenient read), is appended to it and ends the
    walk of this segment there: what came before it counts, and the transactions open then are forgotten (their
    markers may have been in the bytes not walked; carrying them on could extend a later abort over committed
    records, while forgetting them can at worst let records of an aborted transaction through, which the caller
    reports). Corrupt framing met once the walk has reached ``log_end`` (a torn append past the log end the caller
    settled on) just ends the walk. ``partial_append``: the active segment, where an append a broker with
    ``log.preallocate`` is writing ends the walk as its zeros do (:meth:`~kafkaseg.storage.segment.SegmentReader.
    iter_headers`)."""
    def batches():
        walked_to = None
        walk = iter(reader.iter_headers(0, max_batch_bytes=max_batch_bytes, partial_append=partial_append))
        while True:
            try:
                header = next(walk)
            except StopIteration:
                return
            except CorruptDataError as err:  # framing: the walk cannot go on
                if log_end is not None and walked_to is not None and walked_to >= log_end:
                    return
                if errors is None:
                    raise
                errors.append(err)
                open_txns.clear()
                return
            walked_to = header.next_offset
            marker = None
            if header.is_control and header.producer_id >= 0:
                try:
                    marker = _marker_type(reader, header)
                except CrcMismatchError as err:  # the batch's framing holds: the walk can go on
                    if errors is None:
                        raise
                    errors.append(err)
                    if unreadable_markers is not None:
                        unreadable_markers.append(header)
                    marker = MARKER_UNREADABLE
            yield header, marker

    return derive_aborted_txns(batches(), open_txns)


def unindexed_abort(reader: SegmentReader, index: TransactionIndex, *,
                    max_batch_bytes: int | None = DEFAULT_MAX_BATCH_BYTES,
                    open_at_base: dict[int, int] | None = None, partial_append: bool = False
                    ) -> tuple[int, int] | None:
    """``(producer id, marker offset)`` of the first aborted transaction :func:`segment_aborted_txns` derives for
    the segment that has no entry in ``index``: the file is stale (a crash wrote the log's page but not the
    index's, or a live copy took the index first; the broker's recovery rebuilds it). None when every one has its
    entry. ``open_at_base``: the transactions open at the segment's base (producer id -> first offset, from the
    producer snapshot Kafka writes there at the roll); aborts of transactions begun in an earlier segment and not
    listed there are not seen (that needs the partition's walk). Corrupt framing raises. ``partial_append``: the
    active segment (:func:`segment_aborted_txns`)."""
    indexed = {(entry.producer_id, entry.last_offset) for entry in index}
    emptied: dict[int, bool] | None = None  # (walked once, when an abort without its entry is met)
    for txn in segment_aborted_txns(reader, dict(open_at_base or {}), max_batch_bytes=max_batch_bytes,
                                    partial_append=partial_append):
        if (txn.producer_id, txn.last_offset) in indexed:
            continue
        if emptied is None:
            emptied = _emptied_markers(reader, max_batch_bytes, partial_append)
        if not emptied.get(txn.last_offset, False):
            return txn.producer_id, txn.last_offset
    return None


def _emptied_markers(reader: SegmentReader, max_batch_bytes: int | None, partial_append: bool) -> dict[int, bool]:
    """Each marker's offset -> whether it has a delete horizon (the first control batch at an offset): the log
    cleaner sets one on a marker only when it found no batch of its transaction left (``containsMarkerForEmptyTxn``),
    and writes no ``.txnindex`` entry for it then (``CleanedTransactionMetadata.onControlBatchRead``): there is no
    aborted record for one to hide."""
    horizons: dict[int, bool] = {}
    for header in reader.iter_headers(max_batch_bytes=max_batch_bytes, partial_append=partial_append):
        if header.is_control:
            horizons.setdefault(header.base_offset, header.has_delete_horizon)
    return horizons
