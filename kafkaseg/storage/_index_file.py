"""Shared loading for the fixed-size-entry index files (``.index``, ``.timeindex``).

A live broker preallocates the active segment's indexes to ``segment.index.bytes`` (10 MiB) and fills them from the
front, leaving zeros behind the last entry; the file is trimmed on roll or clean shutdown. Kafka itself trusts the
file length when it opens an index (``AbstractIndex.createMappedBuffer``: entries = length / entrySize) and relies
on recovery to rebuild the indexes of segments above the recovery point. A reader of a live or crashed dir needs the
rule ``DumpLogSegments.dumpIndex``/``dumpTimeIndex`` apply instead ("since it is a sparse file, in the event of a
crash there may be many zero entries, stop if we see one"): entries end at the first entry after entry 0 whose
offset equals the base offset (relative offset 0). Entries after entry 0 always have a larger offset (offset index:
strictly increasing; time index: each entry is a later batch), so relative offset 0 there can only be unwritten space.

Files are read in bounded chunks: memory is the real entries plus one chunk, whatever the preallocated size.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow.fs as pafs

from kafkaseg.errors import CorruptIndexError
from kafkaseg.storage.fs import RandomAccessReader

#: Default refusal bound for the real (non-zero-tail) part of an index: segment.index.bytes defaults to 10 MiB and
#: Kafka caps it at Int.MaxValue, but nobody runs with more than a few tens of MiB.
DEFAULT_MAX_INDEX_BYTES = 64 * 1024 * 1024
_CHUNK_ENTRIES = 128 * 1024


class IndexProblem(str):
    """A sanity-check finding: the text (a ``str``) plus ``position``, the byte in the index file it concerns."""

    position: int | None

    def __new__(cls, detail: str, position: int | None = None):
        text = detail if position is None else f"byte {position}: {detail}"
        obj = super().__new__(cls, text)
        obj.detail = detail
        obj.position = position
        return obj


@dataclass(frozen=True)
class LoadedEntries:
    entries: np.ndarray          # structured array of the entries before the preallocated tail
    file_size: int               # bytes on disk
    tail_entries: int            # whole entries in the zero tail (0 for a trimmed file)
    tail_garbage_position: int | None  # first non-zero byte inside the tail (None: the tail is all zeros)


def load_entries(path: str, filesystem: pafs.FileSystem | None, dtype: np.dtype, relative_offset_field: str,
                 max_bytes: int = DEFAULT_MAX_INDEX_BYTES) -> LoadedEntries:
    """Read an index file's entries, stopping at the preallocated tail (see the module doc)."""
    entry_size = dtype.itemsize
    with RandomAccessReader(path, filesystem) as reader:
        file_size = reader.size
        whole = file_size // entry_size
        kept: list[np.ndarray] = []
        kept_count = 0
        tail_start: int | None = None  # entry number where the tail starts
        garbage: int | None = None
        entry_number = 0
        while entry_number < whole:
            count = min(_CHUNK_ENTRIES, whole - entry_number)
            data = reader.read_at(entry_number * entry_size, count * entry_size)
            if len(data) < count * entry_size:  # the file shrank under us: use what is there
                count = len(data) // entry_size
                whole = entry_number + count
                data = data[:count * entry_size]
            if tail_start is None:
                chunk = np.frombuffer(data, dtype=dtype, count=count)
                rel = chunk[relative_offset_field]
                zero_at = np.flatnonzero(rel == 0)
                if entry_number == 0:
                    zero_at = zero_at[zero_at > 0]
                if zero_at.size:
                    cut = int(zero_at[0])
                    tail_start = entry_number + cut
                    kept.append(chunk[:cut])
                    kept_count += cut
                    rest = np.frombuffer(data, dtype=np.uint8)[cut * entry_size:]
                    nz = np.flatnonzero(rest)
                    if nz.size:
                        garbage = tail_start * entry_size + int(nz[0])
                else:
                    kept.append(chunk)
                    kept_count += count
                if kept_count * entry_size > max_bytes:
                    raise CorruptIndexError(
                        f"index holds more than {max_bytes} bytes of entries (cap maxIndexBytes); refusing to load",
                        path=path, position=max_bytes)
            elif garbage is None:
                nz = np.flatnonzero(np.frombuffer(data, dtype=np.uint8))
                if nz.size:
                    garbage = entry_number * entry_size + int(nz[0])
            else:
                break
            entry_number += count
    entries = np.concatenate(kept) if kept else np.zeros(0, dtype=dtype)
    tail_entries = 0 if tail_start is None else whole - tail_start
    return LoadedEntries(entries, file_size, tail_entries, garbage)
