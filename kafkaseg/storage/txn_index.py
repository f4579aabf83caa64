"""``.txnindex`` files: the aborted transactions whose ABORT marker lies in a segment.

Layout (``storage/.../log/AbortedTxn.java``, ``TransactionIndex.java``), big-endian, 34-byte entries::

    version           int16   0 (AbortedTxn.CURRENT_VERSION; a larger one is an error)
    producerId        int64
    firstOffset       int64   first offset of the aborted transaction (may be in an earlier segment)
    lastOffset        int64   offset of the ABORT marker
    lastStableOffset  int64   the partition's LSO when the marker was written

Kafka reads whole entries only (a partial trailing entry is ignored, ``TransactionIndex.iterable``) and its
``sanityCheck`` rejects an entry whose lastOffset is below the segment base. A missing ``.txnindex`` file means no
transaction was aborted in the segment (Kafka creates it lazily on the first abort).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pyarrow.fs as pafs

from kafkaseg.errors import CorruptIndexError
from kafkaseg.storage import fs as _fs
from kafkaseg.storage._index_file import DEFAULT_MAX_INDEX_BYTES, IndexProblem, raise_first_problem

__all__ = ["AbortedTxn", "TransactionIndex", "TXN_INDEX_ENTRY_SIZE"]

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
                 file_size: int | None = None):
        self.base_offset = int(base_offset)
        self.entries = tuple(entries)
        self.path = path
        self.file_size = file_size

    @classmethod
    def from_bytes(cls, data: bytes, base_offset: int, path: str | None = None) -> "TransactionIndex":
        count = len(data) // TXN_INDEX_ENTRY_SIZE
        rows = np.frombuffer(data, dtype=_DTYPE, count=count)
        entries = tuple(AbortedTxn(*map(int, row)) for row in rows.tolist())
        return cls(base_offset, entries, path=path, file_size=len(data))

    @classmethod
    def load(cls, path: str, base_offset: int, filesystem: pafs.FileSystem | None = None, *,
             max_bytes: int = DEFAULT_MAX_INDEX_BYTES) -> "TransactionIndex":
        """Read ``path`` (refusing files over ``max_bytes``: ~2M aborted transactions in one segment)."""
        with _fs.RandomAccessReader(path, filesystem) as reader:
            if reader.size > max_bytes:
                raise CorruptIndexError(f"transaction index of {reader.size} bytes exceeds the {max_bytes}-byte cap",
                                        path=path, position=max_bytes)
            data = reader.read_at(0, reader.size)
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

    def sanity_problems(self) -> list[IndexProblem]:
        """``TransactionIndex.sanityCheck`` (lastOffset >= segment base) plus the version check its reader does,
        and firstOffset <= lastOffset."""
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
        return problems

    def check(self) -> None:
        """Raise :class:`CorruptIndexError` (file and byte of the bad entry) on the first sanity problem."""
        raise_first_problem(self.sanity_problems(), self.path)

    def __repr__(self) -> str:
        return f"TransactionIndex(base={self.base_offset}, entries={len(self)}, path={self.path!r})"
