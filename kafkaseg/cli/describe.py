"""``kafkaseg describe DIR``: what a log dir holds, from file names, checkpoints, index files and a few batch
headers (never the record data): fast on large dirs.

Per partition: segments, bytes, log start / log end / high watermark, the last stable offset when producer
snapshots exist (a header walk from the latest snapshot), time range (the first record's timestamp, from the one
batch decoded, .. largest timestamp of the time indexes and the active segment's tail), and the magic values and codecs of the batches
sampled: each segment's first batch, the batch at each segment's last ``.index`` entry and the active segment's
batches after it (``--full`` walks every header instead).

What cannot be read (a segment or index that cannot be opened, a segment name whose entry is no readable file or a
segment file named past a 64-bit long, of whose partition's log nothing is then described but ``.log`` files given
from its folder, on their own, a corrupt batch header, a log end that cannot be found, and a file
holding the partition's identity or bounds: ``partition.metadata``, ``leader-epoch-checkpoint``, the log dir's
``replication-offset-checkpoint`` and ``log-start-offset-checkpoint``) is one of the partition's ``errors``, and
the rest is still described; ``notes`` are what was read and is worth saying (checkpoints that disagree with the
log, an append in progress, what discovery resolved or passed over as a broker would: temporary files, ``.swap``
files, a broken recovery-point or cleaner checkpoint, an unreadable ``meta.properties``).
``kafkaseg describe`` exits 2 when a partition has errors, after printing everything.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Collection

from kafkaseg.cli.common import decode_batch, holds_whole_partition, whole_partition_offsets
from kafkaseg.errors import KafkaSegError
from kafkaseg.storage import checkpoints as ckpt
from kafkaseg.storage import fs as _fs
from kafkaseg.storage._index_file import index_location
from kafkaseg.storage.layout import (ListingCheck, PartitionDir, broker_high_watermark, discover,
                                     first_entry_past_truncation_bound, flushed_above_words, flushed_past_end,
                                     gaps_in_copies, high_watermark_above_words, last_stable_offset)
from kafkaseg.storage.offset_index import OffsetIndex
from kafkaseg.storage.segment import SegmentReader
from kafkaseg.storage.time_index import TimeIndex

__all__ = ["SegmentDescription", "PartitionDescription", "describe_partition", "describe_paths"]


@dataclass
class SegmentDescription:
    path: str
    base_offset: int
    size: int
    index_entries: int | None
    time_index_entries: int | None
    has_txn_index: bool
    max_timestamp: int | None
    mtime_ms: int

    def as_dict(self) -> dict:
        """camelCase, as the partition's own keys and every other --json output."""
        return {"path": self.path, "baseOffset": self.base_offset, "sizeBytes": self.size,
                "indexEntries": self.index_entries, "timeIndexEntries": self.time_index_entries,
                "hasTxnIndex": self.has_txn_index, "maxTimestamp": self.max_timestamp, "mtimeMs": self.mtime_ms}


@dataclass
class PartitionDescription:
    topic: str
    partition: int
    path: str
    topic_id: str | None
    segments: list[SegmentDescription] = field(default_factory=list)
    size: int = 0
    log_start_offset: int | None = None
    log_end_offset: int | None = None
    high_watermark: int | None = None
    last_stable_offset: int | None = None
    recovery_point: int | None = None
    first_timestamp: int | None = None
    max_timestamp: int | None = None
    magics: set = field(default_factory=set)
    codecs: set = field(default_factory=set)
    transactional: bool = False
    producer_snapshots: int = 0
    kraft_snapshots: int = 0
    leader_epoch: int | None = None
    notes: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # what could not be read (the rest is described)
    sampled: bool = True
    log_dir: str | None = None  # the log dir (or tiered-storage root) it was found in, when found in one
    # offsets the partition's files say its log held past the log end with no high watermark to bound it
    # (layout.LostTail.as_dict: lost when the recovery point proves them flushed, else possibly lost), None
    lost_tail: dict | None = None
    # (not printed) whether the walk of the active segment passed over its last .index entry, one a truncation may
    # have left (_tail_walk_start): when the segment changed meanwhile, a truncation may have been under the walk
    passed_over_entry: bool = field(default=False, compare=False)

    @property
    def name(self) -> str:
        return f"{self.topic}-{self.partition}"

    def as_dict(self) -> dict:
        return {
            "topic": self.topic, "partition": self.partition, "path": self.path, "topicId": self.topic_id,
            "segments": [s.as_dict() for s in self.segments], "sizeBytes": self.size,
            "logStartOffset": self.log_start_offset, "logEndOffset": self.log_end_offset,
            "highWatermark": self.high_watermark, "lastStableOffset": self.last_stable_offset,
            "recoveryPoint": self.recovery_point, "firstTimestamp": self.first_timestamp,
            "maxTimestamp": self.max_timestamp, "magics": sorted(self.magics), "codecs": sorted(self.codecs),
            "transactional": self.transactional, "producerSnapshots": self.producer_snapshots,
            "kraftSnapshots": self.kraft_snapshots, "leaderEpoch": self.leader_epoch, "notes": self.notes,
            "errors": self.errors, "sampled": self.sampled, "logDir": self.log_dir, "lostTail": self.lost_tail,
        }


def _note_header(desc: PartitionDescription, header) -> None:
    desc.magics.add(header.magic)
    desc.codecs.add(header.codec_name)
    if header.is_transactional:
        desc.transactional = True


def describe_partition(pdir: PartitionDir, *, full: bool = False) -> PartitionDescription:
    """Describe one partition (see the module doc)."""
    fs = pdir.filesystem
    errors, notes = _discovery_errors_and_notes(pdir)
    desc = PartitionDescription(pdir.topic, pdir.partition, pdir.path, pdir.topic_id, log_dir=pdir.log_dir,
                                high_watermark=pdir.high_watermark, recovery_point=pdir.recovery_point,
                                log_start_offset=pdir.log_start_offset, producer_snapshots=len(pdir.snapshot_paths),
                                kraft_snapshots=len(pdir.kraft_snapshot_paths), sampled=not full,
                                leader_epoch=pdir.leader_epochs[-1].epoch if pdir.leader_epochs else None,
                                notes=notes, errors=errors)
    if pdir.error is not None:  # discovery could not list its segments as a log: its offsets and times are unknown
        desc.errors.extend(str(each) for each in pdir.error.each())  # (every file named past a long is one)
        if not pdir.segments:
            desc.log_start_offset = None
            return desc
        # (.log files given from its folder: described on their own, as files outside a partition's folder)
    last = len(pdir.segments) - 1
    offset_indexes = []  # (each segment's, as loaded here: the rolled-cut checks take them instead of loading again)
    # a rolled segment's rolled-cut check, asked while its row has its .log open (the check walks that file, not a
    # second open of it): (cut, error) by segment, said after the rows; those of .log files given are of their
    # whole partition (pdir.whole), asked after the rows
    cuts: dict[int, tuple] = {}
    cuts_in_rows = holds_whole_partition(pdir)
    for i, seg in enumerate(pdir.segments):
        desc.size += seg.log_size
        offset_index = time_index = None
        index_path, index_window = index_location(seg, "index")
        timeindex_path, timeindex_window = index_location(seg, "timeindex")
        try:
            offset_index = (OffsetIndex.load(index_path, seg.base_offset, fs, window=index_window) if index_path
                            else None)
        except KafkaSegError as err:
            desc.errors.append(f"{index_path}: {err}")
        try:
            time_index = (TimeIndex.load(timeindex_path, seg.base_offset, fs, window=timeindex_window)
                          if timeindex_path else None)
        except KafkaSegError as err:
            desc.errors.append(f"{timeindex_path}: {err}")
        offset_indexes.append(offset_index)
        max_ts = time_index.max_timestamp if time_index is not None and len(time_index) else None
        # (the active segment's .index entries from which a follower's truncation may have left them, and why)
        past = (first_entry_past_truncation_bound(pdir, seg.log_path, offset_index.offsets, seg.base_offset)
                if offset_index is not None and len(offset_index) else None)
        left = _LeftTimeEntries.of(pdir, seg, offset_index, time_index, past)
        try:
            with _fs.RandomAccessReader(seg.log_path, fs) as opened, \
                    SegmentReader(seg.log_path, opened=opened) as reader:
                if full:
                    starts = [0]
                else:
                    starts = [0]
                    if offset_index is not None and len(offset_index):
                        starts.append(_tail_walk_start(seg, offset_index, past, reader, desc, index_path))
                for n, start in enumerate(starts):
                    walk_all = full or (i == last and n == len(starts) - 1)
                    if not 0 <= start < reader.size:  # (an entry past the log, or a damaged negative one)
                        continue
                    for header in reader.iter_headers(start, partial_append=pdir.is_active_segment(seg.log_path)):
                        _note_header(desc, header)
                        if walk_all and (max_ts is None or header.max_timestamp > max_ts):
                            max_ts = header.max_timestamp
                        if walk_all and left is not None:
                            left.see(header)
                        if not walk_all:
                            break
                if left is not None:
                    max_ts = left.max_timestamp(max_ts, reader)
                if cuts_in_rows and i < last:
                    cuts[i] = _rolled_cut(pdir, i, offset_index, opened, time_index)
        except KafkaSegError as err:
            desc.errors.append(f"{seg.log_path}: {err}")
        desc.segments.append(SegmentDescription(seg.log_path, seg.base_offset, seg.log_size,
                                                len(offset_index) if offset_index is not None else None,
                                                len(time_index) if time_index is not None else None,
                                                bool(index_location(seg, "txnindex")[0]), max_ts, seg.mtime_ms))
        if max_ts is not None and max_ts >= 0:
            desc.max_timestamp = max_ts if desc.max_timestamp is None else max(desc.max_timestamp, max_ts)
    try:
        desc.first_timestamp = _first_record_timestamp(pdir)
    except KafkaSegError as err:
        desc.errors.append(f"first record's timestamp: {err}")
    partial = whole_partition_offsets(pdir)
    if partial is not None:  # single .log files: the checkpoints (HW, log start) are the whole partition's
        # (the note says why when the whole partition's log end cannot be read: then an error)
        (desc.notes if partial.log_end_offset is not None else desc.errors).append(partial.note)
        desc.log_start_offset, desc.log_end_offset = partial.log_start_offset, partial.log_end_offset
        if partial.log_end_offset is None:
            return desc
        pdir = partial.whole
    try:
        from kafkaseg.storage.layout import partition_log_end_offset, unacknowledged_append

        if partial is None:  # (the active segment's offset index as loaded for its row: where both walks start)
            active_index = offset_indexes[-1] if offset_indexes else None
            desc.log_end_offset = partition_log_end_offset(pdir, offset_index=active_index)
            torn = (unacknowledged_append(pdir, offset_index=active_index) if desc.log_end_offset is not None
                    else None)
            if torn is not None:  # as planning and lookups end the log
                desc.log_end_offset = torn.base_offset
                desc.notes.append(f"the active segment's last batch ({torn.base_offset}..{torn.last_offset}) fails "
                                  "its CRC with only zeros after it: an append in progress (log.preallocate), not "
                                  f"counted; log end offset {torn.base_offset}")
        if pdir.snapshot_paths or desc.transactional:
            desc.last_stable_offset = last_stable_offset(pdir, log_end=desc.log_end_offset,
                                                         offset_indexes=offset_indexes if partial is None else None)
        elif desc.log_end_offset is not None:  # no transaction can be open: the bound itself (UnifiedLog)
            desc.last_stable_offset = broker_high_watermark(pdir.high_watermark, desc.log_start_offset,
                                                            desc.log_end_offset)
    except KafkaSegError as err:
        desc.errors.append(f"log end offset: {err}")
    _describe_lost_tail(desc, pdir)
    _describe_rolled_cuts(desc, pdir, offset_indexes if partial is None else None, cuts if partial is None else {})
    hw, leo, start = pdir.high_watermark, desc.log_end_offset, desc.log_start_offset
    if hw is not None and leo is None and not pdir.segments and hw > (pdir.log_start_offset or 0):
        # no segment: an empty log at the log start (a read's rule), below the checkpoints' offsets
        _describe_empty_log_loss(desc, pdir)
    elif hw is not None and leo is not None and hw > leo and desc.lost_tail is None:  # (else said as lost)
        desc.notes.append(high_watermark_above_words(hw, leo, pdir.path))
    elif hw is not None and start is not None and hw < start:  # UnifiedLog.updateHighWatermark
        desc.notes.append(f"high watermark {hw} is below the log start offset {start}, which a broker takes "
                          f"instead: reads and 'latest' stop at {start}")
    if leo is not None and flushed_past_end(pdir, leo, walk_clean=True,
                                            as_listed=ListingCheck(pdir).recovery_point) is not None:
        desc.notes.append(flushed_above_words(pdir.recovery_point, hw, leo, pdir.path))  # (as a read notes it)
    return desc


def _tail_walk_start(seg, offset_index: OffsetIndex, found: tuple[int, str] | None, reader: SegmentReader,
                     desc: PartitionDescription, index_path: str) -> int:
    """Where the walk of a segment's batches after its first starts: at its last ``.index`` entry, unless that is
    an entry of the active segment that fits no batch past where a follower's truncation may have cut it (the high
    watermark, or a leader epoch's start), which the truncation may have left (``found``, the first such entry and
    why: :func:`~kafkaseg.storage.layout.first_entry_past_truncation_bound`): then at the last entry before that
    bound (the segment's start when none is), noted."""
    from kafkaseg.entry_check import entry_batch_problem
    from kafkaseg.storage.layout import LEFT_BY_TRUNCATION

    offset, position = int(offset_index.offsets[-1]), int(offset_index.positions[-1])
    if found is None:
        return position
    bound, why = found
    problem = (entry_batch_problem(reader, position, offset, seg.base_offset - 1, None, None, None)[0]
               if 0 <= position < reader.size else f"byte {position} is outside the {reader.size}-byte log")
    if problem is None:
        return position
    start = int(offset_index.positions[bound - 1]) if bound else 0
    desc.notes.append(f"{index_path}: the last entry (offset {offset} -> byte {position}) fits no batch ({problem}); "
                      f"it is {LEFT_BY_TRUNCATION.format(bound=why)}: the active segment's batches are "
                      f"walked from byte {start} instead")
    desc.passed_over_entry = True
    return start


class _LeftTimeEntries:
    """The active segment's ``.timeindex`` entries at or past where a follower's truncation may have cut it
    (:func:`~kafkaseg.storage.layout.first_entry_past_truncation_bound`), which may be the truncated generation's:
    its last entry, which describe takes as the segment's max timestamp, stands only when the batch holding its
    offset has that max timestamp (:func:`~kafkaseg.storage.indexes.time_entry_problem`), judged on the walk of the
    segment's last batches when it reaches that batch (no extra read), else by one index interval of headers from
    the offset index's floor among the entries before that bound. An entry that does not stand is left out: the
    max timestamp is then the entries' before the bound, and the batches' from the last offset index entry before
    the bound on."""

    def __init__(self, seg, offset_index: OffsetIndex | None, time_index: TimeIndex, time_bound: int,
                 offset_bound: tuple[int, str] | None):
        self.seg, self.time_index, self.time_bound = seg, time_index, time_bound
        self.timestamp, self.offset = time_index.last_entry
        self.problem: str | None = None
        self.judged = False
        kept = offset_bound[0] if offset_bound is not None else len(offset_index) if offset_index is not None else 0
        # the offset index's entries before the bound (none left by a truncation)
        self.kept = OffsetIndex(seg.base_offset, offset_index.offsets[:kept], offset_index.positions[:kept]) if kept \
            else None

    @classmethod
    def of(cls, pdir: PartitionDir, seg, offset_index: OffsetIndex | None, time_index: TimeIndex | None,
           offset_bound: tuple[int, str] | None) -> "_LeftTimeEntries | None":
        """None when no entry of ``time_index`` lies at or past the bound (or it is not the active segment's);
        ``offset_bound``: ``offset_index``'s first entry at or past it, and why (None: none is)."""
        if time_index is None or not len(time_index):
            return None
        found = first_entry_past_truncation_bound(pdir, seg.log_path, time_index.offsets, seg.base_offset)
        return None if found is None else cls(seg, offset_index, time_index, found[0], offset_bound)

    def see(self, header) -> None:
        """A batch of the walk of the segment's last batches, in order."""
        if not self.judged and header.last_offset >= self.offset:
            from kafkaseg.storage.indexes import time_entry_problem

            self.problem, self.judged = time_entry_problem(header, self.timestamp, self.offset), True

    def max_timestamp(self, walked: int | None, reader: SegmentReader) -> int | None:
        """The segment's max timestamp, given ``walked``: the last entry's and the walked batches' max."""
        from kafkaseg.storage.indexes import walked_time_entry_problem

        if not self.judged:
            start = self.kept.floor(self.offset)[1] if self.kept is not None else 0
            self.problem = walked_time_entry_problem(
                lambda: reader.iter_headers(start, partial_append=True), (self.timestamp, self.offset))
        if self.problem is None:
            return walked
        largest = int(self.time_index.timestamps[:self.time_bound].max()) if self.time_bound else -1
        start = int(self.kept.positions[-1]) if self.kept is not None else 0
        for header in reader.iter_headers(start, partial_append=True):
            largest = max(largest, header.max_timestamp)
        return largest if largest >= 0 else None


def _describe_empty_log_loss(desc: PartitionDescription, pdir: PartitionDir) -> None:
    """A partition with no segment (every .log file gone) whose high watermark is above its empty log: with the
    recovery point above it too, acknowledged and flushed offsets lost (an error: a read to latest raises
    DataLossError), else the note of a high watermark above the log end."""
    at = pdir.log_start_offset or 0
    if not _describe_lost_tail(desc, pdir, at):  # (layout.lost_tail's EmptyLogLoss: the read's rule)
        desc.notes.append(high_watermark_above_words(pdir.high_watermark, at, pdir.path))


def _describe_lost_tail(desc: PartitionDescription, pdir: PartitionDir, end: int | None = None) -> bool:
    """What the partition's files say its log held past the log end described (:func:`~kafkaseg.storage.layout.
    lost_tail`, the reads' rule: with no high watermark to bound it, or acknowledged and flushed offsets below a
    high watermark above it): an error when the recovery point proves the offsets flushed and lost (a strict read,
    or a read to latest, fails there), else a note (they may never have reached the disk). The log end stays the
    readable end, where a broker's recovery truncates the log. ``end``: the log end to look past (the log end
    described when None; a partition with no segment gives its empty log's offset). Returns whether it said one."""
    from kafkaseg.storage.layout import lost_tail

    end = desc.log_end_offset if end is None else end
    if end is None:
        return False
    try:
        tail = lost_tail(pdir, end)
    except KafkaSegError as err:
        desc.errors.append(f"the active segment's tail: {err}")
        return True
    if tail is None:
        return False
    desc.lost_tail = tail.as_dict()
    (desc.errors if tail.proven else desc.notes).append(tail.summary())
    return True


def _describe_rolled_cuts(desc: PartitionDescription, pdir: PartitionDir, offset_indexes: list | None,
                          asked: dict[int, tuple]) -> None:
    """Offsets a rolled segment cut short (or to 0 bytes) lost (:func:`~kafkaseg.storage.layout.rolled_cut_of`,
    the reads' rule: its own indexes point past its last batch, below the next base, and the recovery point is
    above it): an error each, as a strict read across them raises ``LostTailError``; with the recovery point not
    above it (or none), a note that they were possibly lost, as a read warns of them (``unreadable_tails``) and as
    the active segment's unflushed tail is noted. About one index interval of headers per rolled segment
    (benchmarks/bench_tools.py). ``offset_indexes``: each segment's offset index as :func:`describe_partition`
    loaded it (None where it could not: loaded again), or None; ``asked``: the checks its rows asked
    (:func:`_rolled_cut`), the rest asked here."""
    for i, seg in enumerate(pdir.segments[:-1]):
        cut, err = (asked[i] if i in asked
                    else _rolled_cut(pdir, i, offset_indexes[i] if offset_indexes is not None else None))
        if err is not None:
            desc.errors.append(f"{seg.log_path}: {err}")
        elif cut is not None:
            (desc.errors if cut.proven else desc.notes).append(cut.summary())


def _rolled_cut(pdir: PartitionDir, i: int, offset_index, opened=None, time_index=None) -> tuple:
    """``(cut, None)``: :func:`~kafkaseg.storage.layout.rolled_cut_of` rolled segment ``i`` with ``unflushed``,
    from ``offset_index`` and ``time_index`` as the row loaded them from its files (either None: not loaded, the
    file probed there) and the ``.log`` as ``opened`` (or None: opened there); ``(None, error)`` when that
    raises."""
    from kafkaseg.storage.layout import rolled_cut_of

    try:
        return rolled_cut_of(pdir, i, unflushed=True, offset_index=offset_index, opened=opened,
                             time_index=time_index, as_loaded=True), None
    except KafkaSegError as err:
        return None, err


#: The files whose loss leaves a value describe prints of a partition unknown or possibly wrong, and which: its own
#: side files and the log dir's checkpoints bounding its offsets (the files verify calls an error, bar
#: meta.properties, of which describe shows nothing). One that cannot be read is an error of the partition, as a
#: segment that cannot be read is. Discovery's other notes are what it resolved or passed over, as a broker would
#: (temporary files, .swap files, a broken recovery-point or cleaner checkpoint, which Kafka resets): notes.
_UNREADABLE_LEAVES = {
    ckpt.PARTITION_METADATA: "its topic id is unknown: which incarnation of the topic the folder holds cannot be told",
    ckpt.LEADER_EPOCH_CHECKPOINT: "its leader epoch is unknown",
    ckpt.REPLICATION_OFFSET_CHECKPOINT: "its high watermark is unknown: the log end stands in for it, as the bound "
                                        "of the last stable offset",
    ckpt.LOG_START_OFFSET_CHECKPOINT: "its log start offset is unknown: the first segment's base stands in for it, "
                                      "below the real one after a deleteRecords or a retention not yet at a segment",
}


def _discovery_errors_and_notes(pdir: PartitionDir) -> tuple[list[str], list[str]]:
    """Discovery's notes of ``pdir`` as the partition's errors (a file of :data:`_UNREADABLE_LEAVES` that could not
    be read, with what that leaves unknown) and its notes (the rest)."""
    of_log_dir = {f"log dir: unreadable {name}: {why}": name for name, why in pdir.unreadable_checkpoints}
    side_files = (ckpt.PARTITION_METADATA, ckpt.LEADER_EPOCH_CHECKPOINT) if pdir.tiered is None else ()
    errors, notes = [], []
    for note in pdir.notes:
        name = of_log_dir.get(note) or next((n for n in side_files if note.startswith(f"unreadable {n}: ")), None)
        if name in _UNREADABLE_LEAVES:
            errors.append(f"{note} ({_UNREADABLE_LEAVES[name]})")
        else:
            notes.append(note)
    return errors, notes


def _first_record_timestamp(pdir: PartitionDir) -> int | None:
    """The timestamp of the first record at or after the log start offset, as consumers see it (None when it has
    none, as in message format v0, or there is no record): one batch decoded, found through the offset index and
    batch headers, control and empty batches passed over."""
    start = pdir.log_start_offset
    for i, seg in enumerate(pdir.segments):
        if i + 1 < len(pdir.segments) and pdir.segments[i + 1].base_offset <= start:
            continue  # wholly below the log start offset
        position = 0
        index_path, index_window = index_location(seg, "index")
        if index_path and start > seg.base_offset:
            index = OffsetIndex.load(index_path, seg.base_offset, pdir.filesystem, window=index_window)
            if not index.sanity_problems(seg.log_size):  # else walk from the start: no batch is skipped
                position = index.floor(start)[1]
        with SegmentReader(seg.log_path, pdir.filesystem) as reader:
            for header in reader.iter_headers(position):
                if header.last_offset < start or header.is_control or header.records_count == 0:
                    continue
                data = reader.read_at(header.position, header.size)
                # CRC checked: a damaged record's timestamp is no consumer's first time (its fetch fails there)
                offsets, stamps = decode_batch(data, header._replace(position=0), seg.log_path, header.position,
                                               verify_crc=True)
                for offset, stamp in zip(offsets, stamps):
                    if offset >= start:
                        return stamp if stamp >= 0 else None
    return None


def describe_paths(paths: list[str], *, full: bool = False, progress=None,
                   skipped: list[tuple[str, str]] | None = None,
                   topics: Collection[str] | None = None, key_ring=None) -> list[PartitionDescription]:
    """Describe every partition found under ``paths`` (of ``topics`` only, when given: the other folders are not
    read); ``skipped`` gets discovery's ``(path, reason)`` for the log dirs' folders it did not read
    (:func:`kafkaseg.storage.layout.discover`)."""
    wanted = None if topics is None else frozenset(topics)
    from kafkaseg.remote_metadata import read_remote_log_metadata

    # which tiered-storage copies are live, when __remote_log_metadata partitions are among the paths: the dead
    # ones are left out of the copies described, each named in the partition's notes with the counts (lenient: a
    # corrupt metadata partition is described as a partition of its own, and the copies as without it, noted)
    # (a partition whose segments cannot be listed as a log, a segment that is no readable file or is named past a
    # 64-bit long, is one with its error: described as such, the others as usual)
    found = discover(paths, skipped=skipped, select=None if wanted is None else (lambda name, _: name in wanted),
                     key_ring=key_ring, remote_log_metadata=lambda metadata: read_remote_log_metadata(metadata, lenient=True),
                     partition_errors=True)
    if wanted is not None:
        found = [pdir for pdir in found if pdir.topic in wanted]
    # offsets of a tiered topic in no copy (a copy missing from the bucket): said of the copies' folder, or of the
    # log dir's partition when reads of it with its copies lose them
    gaps: dict[int, list[str]] = {}
    for gap in gaps_in_copies(found):
        gaps.setdefault(id(gap.partition), []).append(gap.describe())

    def one(pdir: PartitionDir) -> PartitionDescription:
        description = _described_as_now(pdir, full)
        description.notes.extend(gaps.get(id(pdir), ()))
        if progress is not None:
            progress(pdir.size_bytes)
        return description

    return _fs.map_files(one, found, [p.filesystem for p in found])  # in threads on object storage


def _described_as_now(pdir: PartitionDir, full: bool) -> PartitionDescription:
    """:func:`describe_partition`, done again on a fresh listing (and fresh checkpoints) when it found errors while
    files it listed went away: a live broker's retention and log cleaner rename segments ``.deleted`` (and the
    cleaner renames its merged copy in), as planning and the other tools take it (``layout.relisted``); and once
    when a truncation past the high watermark may have rewritten the active segment under it: errors only in that
    segment's files, or a walk that passed over an ``.index`` entry a truncation may have left
    (:func:`_tail_walk_start`), with the segment changed since the listing and sound up to the high watermark now
    (:func:`~kafkaseg.storage.layout.rewritten_past_high_watermark`). Files given as paths are not listed again
    (that would widen what is described)."""
    from kafkaseg.storage.layout import REDISCOVERIES, _listed_again, rewritten_past_high_watermark

    rewritten = False
    for attempt in range(REDISCOVERIES + 1):
        desc = describe_partition(pdir, full=full)
        if attempt == REDISCOVERIES or pdir.given_files or pdir.whole is not None:
            return desc
        if not desc.errors:
            # the walk passed over an .index entry a truncation may have left, and the active segment changed
            # since the listing: a truncation under the walk (the entries loaded before it, the bytes after it, the
            # listed size cutting the new batches), described once more as the files are now
            if not desc.passed_over_entry or rewritten or not rewritten_past_high_watermark(pdir):
                return desc
            rewritten = True
        elif not _listed_files_gone(pdir):
            # a live broker's truncation past the high watermark that rewrote the active segment under the walk
            # (an index entry of the old generation pointing into the new one's bytes): described once more
            if rewritten or not _rewritten_under(pdir, desc):
                return desc
            rewritten = True
        fresh = _listed_again(pdir)
        if fresh is None:  # the folder itself went away (a deleted topic): described as listed
            return desc
        pdir = fresh
    raise AssertionError("unreachable")


def _rewritten_under(pdir: PartitionDir, desc: PartitionDescription) -> bool:
    """Whether every error of ``desc`` is about the active segment's files and a truncation past the high watermark
    may have rewritten that segment while it was described (:func:`~kafkaseg.storage.layout.
    rewritten_past_high_watermark`)."""
    from kafkaseg.storage.layout import active_segment_files, rewritten_past_high_watermark

    files = active_segment_files(pdir)
    return (bool(files) and all(any(e.startswith(f + ":") for f in files) for e in desc.errors)
            and rewritten_past_high_watermark(pdir))


def _listed_files_gone(pdir: PartitionDir) -> bool:
    """Whether a segment file or producer snapshot the listing saw is no longer there."""
    paths = [p for seg in pdir.segments for p in (seg.log_path, seg.index_path, seg.timeindex_path, seg.txnindex_path)
             if p] + list(pdir.snapshot_paths)
    return any(not _fs.exists(p, pdir.filesystem) for p in paths)
