"""Finding partitions and segments in Kafka log dirs, without changing anything on disk.

Folder names (``core/.../log/LocalLog.scala`` ``parseTopicPartitionName``): ``<topic>-<partition>``, split at the
LAST dash; folders ending ``-delete``, ``-future`` or ``-stray`` (``<topic>-<partition>.<uuid>-delete`` etc.) are
partitions being deleted, moved between log dirs, or not assigned to this broker: skipped. Folders whose name does
not parse are skipped too (Kafka would refuse to start; a reader reports them in ``LogDir.skipped``).

Segment files (``LogFileUtils.java``): ``<base offset, 20 digits>.log`` with ``.index``, ``.timeindex``,
``.txnindex`` beside it; ``<offset>.snapshot`` producer snapshots. Temporary files are resolved the way
``LogLoader.load`` / ``removeTempFilesAndCollectSwapFiles`` does, in memory only:

* ``.deleted`` and ``.cleaned`` files are ignored (Kafka deletes them at startup);
* a ``.swap`` file whose base offset is >= the smallest ``.cleaned`` base is an incomplete split: ignored;
* the remaining ``.log.swap`` files replace every segment file (and snapshot) whose offset is in
  ``[min swap base, max swap next offset)``; their ``.index.swap``/``.timeindex.swap``/``.txnindex.swap`` go with
  them. A side file's ``.swap`` without its ``.log.swap`` (the swap's ``.log`` already renamed into place: a broker
  renames the rest into place too) is ignored (the segment's own side files are read, or a missing index rebuilt).

KRaft's ``__cluster_metadata-0`` also holds ``<offset>-<epoch>.checkpoint`` snapshots (20 and 10 digits): listed in
``PartitionDir.kraft_snapshot_paths``. A ``.checkpoint`` there whose name ``Snapshots.parse`` fails on (named past a
long, its epoch past an int, or its parts not 20 and 10 characters long) is a :class:`SegmentNameError`, as a segment
named past a long is (the broker's ``KafkaMetadataLog`` fails the metadata log on its name). In any other folder
such a file is no snapshot (a broker's ``LogLoader`` passes over it).

Checkpoints of the log dir (``replication-offset-checkpoint`` etc.) are attached to each partition found in it.
``logStartOffset = max(log-start-offset checkpoint, first segment base)`` (``LogLoader``).

A single ``.log`` file given directly becomes a one-segment :class:`PartitionDir`: topic and partition come from its
folder name when that looks like ``<topic>-<n>`` (the folder's checkpoints and snapshots come along); otherwise the
topic is the folder's name and the partition is -1 (unknown).
"""

from __future__ import annotations

import fnmatch
import os
import re
import time
import dataclasses
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, NamedTuple, Sequence

import pyarrow.fs as pafs

from kafkaseg.errors import (BadPathError, CorruptCheckpointError, CorruptDataError, CrcMismatchError, KafkaSegError,
                             LayoutError, SegmentFileError, SegmentNameError, UnreadableSegmentError)
from kafkaseg.storage import checkpoints as ckpt
from kafkaseg.storage import encryption
from kafkaseg.storage import fs as _fs
from kafkaseg.storage import tiered
from kafkaseg.storage._index_file import index_location
from kafkaseg.storage._long_names import LONG_MAX, offset_past_a_long, past_a_long_words
from kafkaseg.storage.checkpoints import EpochEntry, MetaProperties, epoch_at
from kafkaseg.storage.segment import DEFAULT_MAX_BATCH_BYTES

__all__ = [
    "SegmentFiles",
    "PartitionDir",
    "LogDir",
    "ReplicaChoice",
    "ChoiceLogEnds",
    "parse_topic_partition",
    "renamed_partition",
    "read_log_dir",
    "read_partition_dir",
    "discover",
    "choose_replicas",
    "other_copy_line",
    "other_copies_note",
    "read_tiered_partition",
    "CopyGap",
    "copy_gaps",
    "FoundGap",
    "gaps_in_copies",
    "with_remote_copies",
    "read_partition_again",
    "check_one_incarnation",
    "transactions_open_at",
    "snapshot_transactions_at",
    "last_stable_offset",
    "partition_log_end_offset",
    "unacknowledged_append",
    "below_cleaner_checkpoint",
    "ListingCheck",
    "LostTail",
    "JudgedTail",
    "RolledCut",
    "judge_rolled_end",
    "last_entry_as_probed",
    "rolled_segment_cut",
    "rolled_cut_of",
    "rolled_cut_holding",
    "AcknowledgedLoss",
    "EmptyLogLoss",
    "judge_tail",
    "acknowledged_loss_end",
    "acknowledged_loss_words",
    "high_watermark_above_words",
    "flushed_past_end",
    "flushed_above_words",
    "LogEnd",
    "find_log_end",
    "relisted",
    "REDISCOVERIES",
    "rewritten_past_high_watermark",
    "unchanged_since_listed",
    "KRAFT_SNAPSHOT_NAME",
    "kraft_snapshot_id",
    "offset_past_a_long",
    "past_a_long_words",
]

_SEGMENT_NAME = re.compile(r"^(\d+)\.(log|index|timeindex|txnindex)(\.swap)?$")
_SNAPSHOT_NAME = re.compile(r"^(\d+)\.snapshot$")
#: a KRaft snapshot's name as a broker writes it (``Snapshots.filenameFromSnapshotId``): 20 and 10 digits
KRAFT_SNAPSHOT_NAME = re.compile(r"^(\d{20})-(\d{10})\.checkpoint$")
_KRAFT_SNAPSHOT_SUFFIXES = (".checkpoint", ".checkpoint.part", ".checkpoint.deleted")  # names Snapshots.parse parses
_JAVA_INTEGER = re.compile(r"[+-]?\d+")  # what Long.parseLong / Integer.parseInt take, before their range
_OFFSET_PREFIX = re.compile(r"^(\d+)\.")
_LONG_MAX, _INT_MAX = LONG_MAX, 2**31 - 1
#: KRaft's metadata log, whose folder holds its snapshots (``<end offset>-<epoch>.checkpoint``)
CLUSTER_METADATA_TOPIC = "__cluster_metadata"
#: How a partition's note on the ``.swap`` files it resolved begins (``kafkaseg verify`` folds it into its warning)
SWAPS_RESOLVED = "resolved .swap files: "
#: How a partition's notes on the ``.swap`` files it did not swap in begin (one note per reason)
SWAPS_IGNORED = "ignored .swap files "
_SKIPPED_DIR_SUFFIXES = ("-delete", "-future", "-stray")
_GLOB_CHARS = re.compile(r"[*?\[]")


@dataclass(frozen=True)
class SegmentFiles:
    """The files of one segment. ``log_size``/``mtime_ms`` are as listed at discovery; index paths are None when
    the file is absent (an index is then rebuilt in memory when needed)."""

    base_offset: int
    log_path: str
    log_size: int
    index_path: str | None
    timeindex_path: str | None
    txnindex_path: str | None
    mtime_ms: int
    from_swap: bool = False
    filesystem: Any = field(default=None, compare=False, repr=False)
    # Indexes held in ranges of one object rather than files of their own (Aiven's tiered-storage ``.indexes``):
    # ``(kind, path, position, size)``, kind ``index``, ``timeindex`` or ``txnindex``; see ``index_location``.
    packed_indexes: tuple[tuple[str, str, int, int], ...] = ()
    # the tiered-storage layout the segment is a copy in (see PartitionDir.tiered), None for a log dir's segment
    tiered: str | None = None
    # a copy's last offset as its Aiven manifest, or __remote_log_metadata, records it (None: not recorded)
    remote_end: int | None = None
    # the copy has the size __remote_log_metadata records for it (segmentSizeInBytes): it is whole, so offsets after
    # its last batch up to remote_end were removed by a compaction before the topic went tiered, not cut off with
    # the file's end (without that, a tiered read takes them for lost: scan._check_segment_end)
    remote_whole: bool = False
    # a copy whose indexes object is missing (Aiven): its indexes, transactions included, are unknown, not absent
    indexes_lost: bool = False
    # (st_dev, st_ino) of a local .log as the listing saw it (with log_size): the file the plan is of, also when a
    # live broker renames another into its name before the plan takes a look (see planning's file identities)
    identity: tuple[int, int] | None = field(default=None, compare=False)


def is_last_log_in_folder(path: str, filesystem=None, listings: dict | None = None) -> bool:
    """Whether the ``.log`` at ``path`` is the last segment-named ``.log`` of its folder (the active segment of a
    partition folder, whatever the folder is called); False when the folder cannot be listed. ``listings`` (a dict
    kept by the caller) holds each folder's answer, so that many files of one folder list it once."""
    if not path.endswith(".log"):
        return False
    folder = _fs.parent(path)
    if listings is not None and folder in listings:
        return listings[folder] == _fs.basename(path)
    try:
        last = _last_log_name(_fs.list_dir(folder, filesystem))
    except KafkaSegError:
        return False
    if listings is not None:
        listings[folder] = last
    return last == _fs.basename(path)


def segment_log_base(name: str) -> int | None:
    """The base offset a segment's ``.log`` name (``<digits>.log``, not ``.swap``) says, else None."""
    match = _SEGMENT_NAME.match(name)
    return int(match.group(1)) if match and match.group(2) == "log" and not match.group(3) else None


def _last_log_name(entries: Sequence[_fs.FileEntry]) -> str | None:
    """The name of the last segment-named ``.log`` in a folder's listing (of two names for one base, the 20-digit
    one, which _add_named keeps); None when it has none."""
    logs = [(base, e.name) for e in entries if (base := segment_log_base(e.name)) is not None]
    return max(logs, key=lambda log: (log[0], log[1] == f"{log[0]:020d}.log"))[1] if logs else None


def broker_high_watermark(checkpointed: int | None, log_start: int | None, log_end: int) -> int:
    """The high watermark a broker loads from ``checkpointed`` (``UnifiedLog.updateHighWatermark``): kept inside
    [log start, log end]; the log end when none was checkpointed."""
    if checkpointed is None:
        return log_end
    return min(max(checkpointed, log_start if log_start is not None else checkpointed), log_end)


def valid_cleaner_offset(cleaner: int | None, log_end: int | None) -> int | None:
    """A ``cleaner-offset-checkpoint`` entry as the log cleaner takes it: None past the log end, which
    ``LogCleanerManager.cleanableOffsets`` takes as invalid (data corruption or truncation) and cleans from the log
    start instead, so that it explains no missing offset."""
    return None if cleaner is not None and log_end is not None and cleaner > log_end else cleaner


def below_cleaner_checkpoint(first_missing: int, cleaner: int | None) -> bool:
    """Whether a gap whose first missing offset is ``first_missing`` may be compaction's rather than loss: it begins
    below the cleaner checkpoint ``cleaner`` (:func:`valid_cleaner_offset`'s answer; None: none). The cleaner
    cleans whole segments up to its checkpoint, so such a gap may be compaction's throughout, wherever a read
    starts in it. The one comparison of reads (scan._check_segment_end), planning (a start inside the gap, an
    empty segment) and ``verify``'s gaps. Not for offsets the segment's own indexes name past its last batch
    (:func:`rolled_cut_of`): the cleaner rebuilds a cleaned segment's indexes from the batches it keeps, so those
    are loss wherever the checkpoint is, and only the rest of the gap is judged here."""
    return cleaner is not None and first_missing < cleaner


def reaches_past_recovery_point(next_base_offset: int | None, recovery_point: int | None) -> bool:
    """Whether a segment followed by ``next_base_offset`` (None: the active segment) reaches past the partition's
    ``recovery_point`` (None: none checkpointed). After an unclean shutdown ``LogLoader.recoverLog`` recovers
    exactly the segments from the one holding the recovery point on (the active one always), truncating torn tails
    and rebuilding their indexes, so their files may be torn or stale; the segments below it were flushed. Without a
    recovery point only the active segment counts (a copy without checkpoints is not taken as crashed)."""
    return next_base_offset is None or (recovery_point is not None and next_base_offset > recovery_point)


@dataclass(frozen=True)
class PartitionDir:
    """One replica of one topic-partition: its segments (ascending base offset) and the metadata around them.

    ``high_watermark``, ``recovery_point``, ``checkpoint_log_start_offset``, ``cleaner_offset`` come from the log
    dir's checkpoint files (None when absent there); ``leader_epochs`` from ``leader-epoch-checkpoint``;
    ``topic_id`` from ``partition.metadata``.
    """

    topic: str
    partition: int
    path: str
    log_dir: str | None
    segments: tuple[SegmentFiles, ...]
    snapshot_paths: tuple[str, ...] = ()
    high_watermark: int | None = None
    recovery_point: int | None = None
    checkpoint_log_start_offset: int | None = None
    cleaner_offset: int | None = None
    topic_id: str | None = None
    leader_epochs: tuple[EpochEntry, ...] = ()
    kraft_snapshot_paths: tuple[str, ...] = ()
    log_dir_meta: MetaProperties | None = None
    notes: tuple[str, ...] = ()  # what discovery resolved or ignored (swap files, unreadable metadata, ...)
    deleted_files: tuple[tuple[str, int], ...] = ()  # (name, bytes) of .deleted files awaiting the broker's deletion
    # the names of the .swap files discovery did not swap in (their reasons: the notes starting SWAPS_IGNORED)
    ignored_swaps: tuple[str, ...] = ()
    given_files: bool = False  # ``segments`` are .log files given as paths, not everything the folder holds
    # given files outside a partition's context: the last segment-named .log of their folder when it was listed
    folder_last_log: str | None = field(default=None, compare=False, repr=False)
    filesystem: Any = field(default=None, compare=False, repr=False)
    unreadable_checkpoints: tuple[tuple[str, str], ...] = ()  # the log dir's (file name, why), see LogDir
    # When ``segments`` are only the .log files given as paths: the whole partition they belong to, whose other
    # segments decide what a read of these needs (the log end, the last stable offset, later aborts).
    whole: "PartitionDir | None" = field(default=None, compare=False, repr=False)
    # The tiered-storage layout the partition was found in (``tiered.AIVEN``, ``tiered.LOCAL_TIERED_STORAGE``),
    # None for a broker's log dir: then there are no checkpoints, and every segment is a rolled one.
    tiered: str | None = None
    # A log dir's partition whose first segments are a tiered-storage copy's (see with_remote_copies): that copy,
    # as found, so a fresh listing of the log dir's folder can be extended the same way.
    remote_below: "PartitionDir | None" = field(default=None, compare=False, repr=False)
    # The key ring a tiered-storage copy's partition was read with (the key files' paths only, a KeyRing), so a
    # partition listed again where it was planned opens new encrypted copies alike.
    key_ring: Any = field(default=None, compare=False, repr=False)
    # What the cluster's __remote_log_metadata says of a tiered-storage copy's partition (a tiered.CopyStates), so a
    # partition listed again leaves out the same dead copies; None when no metadata was read for it.
    copy_states: Any = field(default=None, compare=False, repr=False)
    # (segment id, first, end) of the offsets below a log dir's first local segment that only live copies its
    # __remote_log_metadata lists held, which are missing from the bucket: of the partition extended with the
    # copies that are there (with_remote_copies), or read alone when none of them is (choose_replicas); of a
    # tiered-storage copy's partition read without a log dir, all of them (read_tiered_partition): those above its
    # newest copy are above the partition's log end.
    # A read of them, or from the earliest when they are below the log read, loses them (planning's data loss)
    live_copies_lost: tuple[tuple[str, int, int], ...] = ()
    # the tiered.CopyStates those are from (their largest timestamps: which of them a timestamp lookup reaches)
    lost_copy_states: Any = field(default=None, compare=False, repr=False)
    # Why the partition's log cannot be read at all: a segment name whose entry is no readable file (a folder, FIFO,
    # socket or device, a broken link, one that cannot be stat'ed), which a read refuses rather than leave its
    # records out, or a segment file named past a 64-bit long (SegmentNameError: a broker fails to load the log;
    # in the metadata log a KRaft snapshot too; each such file of the folder one of its ``each()``).
    # Only discovery asked for ``partition_errors`` returns such a partition, with no segments (nor snapshots), its
    # checkpoints and side files as read; without it discovery raises this error instead. A ``.log`` file given from
    # such a partition's folder is returned with that error too, as its only segment, read on its own (no ``whole``,
    # no checkpoints).
    error: SegmentFileError | None = field(default=None, compare=False)
    # the newest segment, past the last .log, whose .log is gone while its index files are there (its note says
    # it): what the reads with no high watermark warn of (ScanMetrics.unreadable_tails); None without one
    lost_segment: "LostSegment | None" = None

    @property
    def log_start_offset(self) -> int | None:
        """``max(log-start-offset checkpoint, first segment base)``; None for a partition without segments."""
        if not self.segments:
            return self.checkpoint_log_start_offset
        first = self.segments[0].base_offset
        return first if self.checkpoint_log_start_offset is None else max(first, self.checkpoint_log_start_offset)

    @property
    def below_local_log(self) -> tuple[int, int] | None:
        """``(checkpointed log start, first segment base)`` when ``log-start-offset-checkpoint`` is below the first
        segment: offsets the broker lists but these files do not hold. Kafka checkpoints a log start below the
        first local segment only for tiered topics (``LogManager.checkpointLogStartOffsetsInDir`` writes an entry
        when remote storage is on or the start is above the first segment), so those offsets are in tiered
        storage; else the checkpoint predates a retention deletion (it is rewritten every minute). None otherwise."""
        start = self.checkpoint_log_start_offset
        if start is None or not self.segments or start >= self.segments[0].base_offset or self.remote_below:
            return None  # (extended with tiered-storage copies: with_remote_copies notes what they hold)
        return start, self.segments[0].base_offset

    def below_local_log_note(self, start: int | None = None) -> str | None:
        """The sentence that explains :attr:`below_local_log`, None when there is nothing to explain. ``start``: a
        read's start within that range, which misses only the offsets from there (named so; the checkpoint's
        offset is still said)."""
        below = self.below_local_log
        if below is None:
            return None
        first = below[0] if start is None else min(max(start, below[0]), below[1])
        return (f"offsets [{first}, {below[1]}) are not in these files: log-start-offset-checkpoint says "
                f"{below[0]}, below the first local segment (base {below[1]}); for a tiered topic they are in "
                f"remote storage (give its copies with the log dir to read them: Aiven's and "
                f"LocalTieredStorage's layouts), and the broker's earliest offset is {below[0]}; "
                f"otherwise the checkpoint is older than a retention deletion (it is rewritten every minute) and "
                f"the broker's is {below[1]}")

    def is_active_segment(self, log_path: str) -> bool:
        """Whether ``log_path`` is the partition's active (last) segment: of the whole partition when only some of
        its ``.log`` files were given (a lone rolled file is not active; the last one of a folder is), and when
        the whole partition is unknown (files given from a folder not named ``<topic>-<partition>``, or with a
        stray copy), whether it is the last segment-named ``.log`` of its folder."""
        if self.tiered is not None:
            return False  # remote storage holds rolled segments only
        if self.given_files and self.whole is None:
            if self.folder_last_log is not None and _fs.parent(log_path) == self.path:
                return self.folder_last_log == _fs.basename(log_path)
            return is_last_log_in_folder(log_path, self.filesystem)
        segments = (self.whole or self).segments
        return bool(segments) and segments[-1].log_path == log_path

    def reached_end(self, read_to: int | None = None) -> int | None:
        """The highest log end offset the partition's files besides its log say the log reached: its recovery
        point (checkpointed after a flush up to it, lowered at once by a truncation) or its newest producer
        snapshot's name (the log end offset when it was taken; a truncation deletes those above it); None with
        neither. A clean shutdown leaves both at the log end; a running broker's recovery point sits at the
        active segment's base. What vouches for a last batch's base offset past a compaction gap
        (:func:`~kafkaseg.storage.segment.offsets_hidden_by_last_batch`). ``read_to``: an offset a reader's own
        position says it read these files to (a stream's committed position, which it read below a high watermark
        at or past it, on a log that did not diverge since), evidence as good as those files'."""
        named = [offset for offset, _ in _producer_snapshots(self)[:1]]
        return max([*named, *([self.recovery_point] if self.recovery_point is not None else []),
                    *([read_to] if read_to is not None else [])], default=None)

    def past_recovery_point(self, i: int) -> bool:
        """Whether segment ``i`` reaches past the recovery point (see :func:`reaches_past_recovery_point`)."""
        next_base = self.segments[i + 1].base_offset if i + 1 < len(self.segments) else None
        return reaches_past_recovery_point(next_base, self.recovery_point)

    def leader_epoch_at(self, offset: int) -> int | None:
        """The leader epoch ``offset`` belongs to by ``leader-epoch-checkpoint`` (see
        :func:`~kafkaseg.storage.checkpoints.epoch_at`)."""
        return epoch_at(self.leader_epochs, offset)

    @property
    def size_bytes(self) -> int:
        return sum(s.log_size for s in self.segments)

    @property
    def active_segment(self) -> SegmentFiles | None:
        return self.segments[-1] if self.segments else None

    @property
    def name(self) -> str:
        return f"{self.topic}-{self.partition}"


@dataclass(frozen=True)
class LogDir:
    """One ``log.dirs`` entry: ``meta.properties`` (None when absent), its checkpoints, partitions, and the child
    folders it skipped with the reason."""

    path: str
    meta: MetaProperties | None
    partitions: tuple[PartitionDir, ...]
    high_watermarks: dict = field(default_factory=dict, compare=False)
    recovery_points: dict = field(default_factory=dict, compare=False)
    log_start_offsets: dict = field(default_factory=dict, compare=False)
    cleaner_offsets: dict = field(default_factory=dict, compare=False)
    skipped: tuple[tuple[str, str], ...] = ()
    filesystem: Any = field(default=None, compare=False, repr=False)
    unreadable_checkpoints: tuple[tuple[str, str], ...] = ()  # (file name, why): corrupt or unreadable
    # (topic, partition, path) of partition folders a ``select`` left unread (their names only)
    unselected: tuple[tuple[str, int, str], ...] = ()


#: The topic where brokers record which tiered-storage copies are live (``TopicBasedRemoteLogMetadataManager``).
REMOTE_LOG_METADATA_TOPIC = "__remote_log_metadata"


def parse_topic_partition(name: str) -> tuple[str, int] | None:
    """``(topic, partition)`` from a ``<topic>-<partition>`` folder name, None for names Kafka would not load as a
    live partition (no dash, empty topic, non-numeric partition, ``-delete``/``-future``/``-stray`` folders)."""
    if not name or "-" not in name or name.endswith(_SKIPPED_DIR_SUFFIXES):
        return None
    topic, _, number = name.rpartition("-")
    if not topic or not number.isascii() or not number.isdigit():
        return None
    partition = int(number)
    if partition > 2**31 - 1:
        return None
    return topic, partition


def renamed_partition(name: str) -> tuple[str, int] | None:
    """``(topic, partition)`` a ``<topic>-<partition>.<id>-delete`` (``-future``, ``-stray``) folder holds a copy
    of, None when its name does not say (the broker cuts a long topic to keep the name within 255 characters)."""
    return parse_topic_partition(name[:name.rfind(".")]) if "." in name else None


# -- reading one partition folder --------------------------------------------------------------------------------

class _ListedFileGone(Exception):
    """A file the folder listing named was gone when discovery read it (a live broker renamed or deleted it
    meanwhile, e.g. the cleaner's last step ``X.log.swap`` -> ``X.log``): the folder is listed again."""


def _swap_next_offset(log_path: str, base: int, index_path: str | None, filesystem, notes: list[str],
                      size: int) -> int:
    from kafkaseg.errors import CorruptDataError
    from kafkaseg.storage.segment import log_end_offset, readable_end

    probe = SegmentFiles(base, log_path, size, index_path, None, None, 0, True, filesystem)
    # A header walk allocates nothing from a length field, and discovery has no reader options: no batch size
    # limit here, so a large valid batch in a .swap file is not mistaken for corruption.
    try:
        return log_end_offset(probe, filesystem=filesystem, max_batch_bytes=None)
    except LayoutError as err:
        if _fs.exists(log_path, filesystem):
            raise
        raise _ListedFileGone(log_path) from err
    except CorruptDataError as err:
        # the swap file's range ends after the last batch a walk stepping over the bad framing reaches; its
        # corruption is then its partition's read to raise (or skip), not the whole log dir's discovery
        end, _ = readable_end(probe, step_over=True, filesystem=filesystem, max_batch_bytes=None)
        notes.append(f"corrupt framing in {_fs.basename(log_path)} ({err}): its range is taken to end at offset "
                     f"{end}")
        return end


def _files(entries: Sequence[_fs.FileEntry]) -> dict[str, _fs.FileEntry]:
    """Name -> entry of the files in a listing: every entry that is no folder (a FIFO, socket or device is listed
    unreadable by :func:`~kafkaseg.storage.fs.list_dir`), and a folder named as a file a broker writes there (a
    segment's, a snapshot's, a checkpoint's), as unreadable: what it stands in for is then reported as unreadable
    (a segment refused, a checkpoint broken), never silently absent, which would drop records or widen a read."""
    files = {}
    for entry in entries:
        if not entry.is_dir:
            files[entry.name] = entry
        elif entry.name in _BROKER_FILE_NAMES or _SEGMENT_NAME.match(entry.name) or _SNAPSHOT_NAME.match(entry.name):
            files[entry.name] = entry._replace(is_dir=False, readable=False)
    return files


def kraft_snapshot_id(name: str, path: str) -> tuple[int, int] | None:
    """``(end offset, epoch)`` as Kafka's ``Snapshots.parse`` reads them from file name ``name``: None for a name
    not ending ``.checkpoint`` (``.checkpoint.part``, ``.checkpoint.deleted``), which it passes over. It reads the
    end offset from the first 20 characters (``Long.parseLong``) and the epoch from the 10 after the next one
    (``Integer.parseInt``), whatever the name holds there: a name it fails on (``5-3.checkpoint``, an end offset
    past a long, an epoch past an int) is :class:`SegmentNameError` for file ``path``. Only the metadata log's
    folder is parsed so (``KafkaMetadataLog.recoverSnapshots``, which then fails the metadata log), and
    ``kafka-dump-log.sh`` parses a ``.checkpoint`` given to it alike."""
    if not name.endswith(_KRAFT_SNAPSHOT_SUFFIXES):
        return None
    offset_text, epoch_text = name[:20], name[21:31]
    if len(name) < 31 or not _JAVA_INTEGER.fullmatch(offset_text) or not _JAVA_INTEGER.fullmatch(epoch_text):
        raise SegmentNameError("not named <end offset>-<epoch>.checkpoint, 20 and 10 digits: Kafka's "
                               "Snapshots.parse reads them at those places in the name and fails on it", path)
    end, epoch = int(offset_text), int(epoch_text)
    if not -_LONG_MAX - 1 <= end <= _LONG_MAX:
        raise SegmentNameError(past_a_long_words(offset_text, "end offset"), path)
    if not -_INT_MAX - 1 <= epoch <= _INT_MAX:
        raise SegmentNameError(f"epoch {epoch_text} in the file name does not fit in a 32-bit int", path)
    return end, epoch


def _names_past_a_long(entries: Sequence[_fs.FileEntry], named: list, metadata_log: bool) -> None:
    """Raise :class:`SegmentNameError` for the files of a partition folder's listing a broker fails the log on:
    a segment file (``named``) whose base offset does not fit in a long (``LogLoader``: ``Long.parseLong``, once it
    is a file: ``File.isFile``) and, in the metadata log's folder (``metadata_log``), a ``.checkpoint`` whose name
    ``Snapshots.parse`` fails on (``KafkaMetadataLog.recoverSnapshots``, on whatever the entry is; see
    :func:`kraft_snapshot_id`). One error per file, in name order: the first raised, the others its ``also``."""
    past = []
    for n, entry, match in named:
        if entry.readable and offset_past_a_long(match.group(1)):
            past.append((n, SegmentNameError(past_a_long_words(match.group(1)), entry.path)))
    for entry in entries if metadata_log else ():  # (one being written or deleted too: its name is parsed alike)
        try:
            kraft_snapshot_id(entry.name, entry.path)
        except SegmentNameError as err:
            past.append((entry.name, err))
    if past:
        errors = [err for _, err in sorted(past, key=lambda t: t[0])]
        first = errors[0]
        raise SegmentNameError(first.detail, first.path, also=tuple(errors[1:]))


def _segments_from_listing(entries: Sequence[_fs.FileEntry], filesystem, notes: list[str], *,
                           metadata_log: bool = False, found_lost: list | None = None
                           ) -> tuple[list[SegmentFiles], list[str], list[str]]:
    """The segments, the snapshot paths and the names of the ``.swap`` files not swapped in (an incomplete split's,
    then those without their ``.log.swap``: in the order of their notes) of a partition folder's listing
    (``metadata_log``: KRaft's ``__cluster_metadata`` folder, whose snapshots' names a broker parses too). A lost
    newest segment (:class:`LostSegment`) is noted, and appended to ``found_lost`` when given."""
    by_name = _files(entries)
    cleaned_bases = [int(m.group(1)) for n in by_name if n.endswith(".cleaned") and (m := _OFFSET_PREFIX.match(n))]
    min_cleaned = min(cleaned_bases) if cleaned_bases else None
    for n in sorted(by_name):
        if n.endswith(".deleted") or n.endswith(".cleaned"):
            notes.append(f"ignored temporary file {n}")

    regular: dict[int, dict[str, _fs.FileEntry]] = {}
    swapped: dict[int, dict[str, _fs.FileEntry]] = {}
    split: list[str] = []  # the .swap files of an incomplete split
    named = [(n, entry, match) for n, entry in by_name.items() if (match := _SEGMENT_NAME.match(n))]
    _names_past_a_long(entries, named, metadata_log)  # before any entry is refused as unreadable, which a broker
    # would pass over
    for n, entry, match in named:
        base, kind, swap = int(match.group(1)), match.group(2), match.group(3)
        if not entry.readable:
            if kind == "log":  # records would silently go missing: refuse
                raise UnreadableSegmentError("not a readable file (a broken link, a folder, a FIFO, socket or "
                                             "device, or no permission to stat it)", entry.path)
            notes.append(f"ignored unreadable {n} (broken link?)")
            continue
        if swap:
            if min_cleaned is not None and base >= min_cleaned:
                split.append(n)
                continue
            _add_named(swapped.setdefault(base, {}), base, kind, entry, notes)
        else:
            _add_named(regular.setdefault(base, {}), base, kind, entry, notes)

    for kinds in (*regular.values(), *swapped.values()):
        # a segment's side files are its log's (LogSegment.open builds every name from the base offset): a stale
        # short-named .timeindex is not the 20-digit log's, whose own is missing and gets rebuilt
        log_entry = kinds.get("log")
        if log_entry is None:
            continue
        stem = _fs.basename(log_entry.path).split(".", 1)[0]
        for kind in [k for k, e in kinds.items() if k != "log" and _fs.basename(e.path).split(".", 1)[0] != stem]:
            notes.append(f"ignored {_fs.basename(kinds.pop(kind).path)}: not named as its segment's "
                         f"{_fs.basename(log_entry.path)}")

    snapshot_paths = sorted(((int(m.group(1)), e.path) for n, e in by_name.items()
                             if (m := _SNAPSHOT_NAME.match(n))), key=lambda t: t[0])

    if split:  # removeTempFilesAndCollectSwapFiles deletes them
        notes.append(f"{SWAPS_IGNORED}{', '.join(sorted(split))}: an incomplete split (base offset >= the smallest "
                     f".cleaned base {min_cleaned}), which a broker deletes at startup")
    valid_swaps = {b: kinds for b, kinds in swapped.items() if "log" in kinds}
    unpaired = sorted(_fs.basename(e.path) for b, kinds in swapped.items() if b not in valid_swaps
                      for e in kinds.values())
    if unpaired:  # LogLoader's third pass renames every .swap file into place
        notes.append(f"{SWAPS_IGNORED}{', '.join(unpaired)}: no .log.swap beside them (a swap whose .log was "
                     "renamed into place already), which a broker renames into place at startup; not read "
                     "(the segment's own side files are, or a missing index is rebuilt)")
    if valid_swaps:
        lo = min(valid_swaps)
        hi = max(_swap_next_offset(kinds["log"].path, b, kinds["index"].path if "index" in kinds else None,
                                   filesystem, notes, kinds["log"].size) for b, kinds in valid_swaps.items())
        replaced = sorted(b for b in regular if lo <= b < hi)
        notes.append(f"{SWAPS_RESOLVED}segments {replaced} in [{lo}, {hi}) replaced by swap segments "
                     f"{sorted(valid_swaps)}")
        # a swap segment also replaces a regular one at its own base (the rename overwrites it), even when the
        # swap segment is empty and [lo, hi) is
        regular = {b: k for b, k in regular.items() if not lo <= b < hi and b not in valid_swaps}
        dropped = [p for off, p in snapshot_paths if lo <= off < hi]
        if dropped:
            notes.append(f"ignored snapshots {[_fs.basename(p) for p in dropped]} inside the swapped range")
        snapshot_paths = [(off, p) for off, p in snapshot_paths if not lo <= off < hi]

    segments: list[SegmentFiles] = []
    for base, kinds in list(regular.items()) + [(b, k) for b, k in valid_swaps.items()]:
        log = kinds.get("log")
        if log is None:
            continue  # orphaned index (LogLoader.loadSegmentFiles deletes these)
        from_swap = base in valid_swaps and kinds is valid_swaps[base]
        segments.append(SegmentFiles(
            base_offset=base,
            log_path=log.path,
            log_size=log.size,
            index_path=kinds["index"].path if "index" in kinds else None,
            timeindex_path=kinds["timeindex"].path if "timeindex" in kinds else None,
            txnindex_path=kinds["txnindex"].path if "txnindex" in kinds else None,
            mtime_ms=log.mtime_ms or 0,
            from_swap=from_swap,
            filesystem=filesystem,
            identity=log.identity,
        ))
    segments.sort(key=lambda s: s.base_offset)
    lost = _lost_newest_segment(regular, valid_swaps, segments, by_name, filesystem)
    if lost is not None:
        notes.append(f"{LOST_NEWEST_SEGMENT}{lost.words()}")
        if found_lost is not None:
            found_lost.append(lost)
    return segments, [p for _, p in snapshot_paths], sorted(split) + unpaired


#: how discovery's note of a newest segment whose .log is gone starts (verify says it as its warning instead)
LOST_NEWEST_SEGMENT = "lost segment: "


class LostSegment(NamedTuple):
    """The partition's newest segment, whose ``.log`` is gone while its index files are there
    (:func:`_lost_newest_segment`): the missing ``log_path``, its ``base_offset``, and the offsets of the last
    entries of its ``.index`` and ``.timeindex`` (None: no such file, or no entry in it), which prove offsets up to
    :attr:`last_offset` were written to it (a broker indexes a batch after appending it: ``LogSegment.append``)."""

    log_path: str
    base_offset: int
    names: str
    last_index_offset: int | None = None
    last_time_offset: int | None = None

    @property
    def last_offset(self) -> int | None:
        """The last offset its index entries prove it held, None when none does."""
        found = [o for o in (self.last_index_offset, self.last_time_offset) if o is not None and o >= self.base_offset]
        return max(found, default=None)

    def proven_words(self) -> str:
        """``offsets B..N`` and the entries that prove them, or that none does."""
        if self.last_offset is None:
            return "its index files hold no entry, so no offset it held is known"
        entries = [f"its last {kind} entry's offset {offset}" for kind, offset in
                   ((".index", self.last_index_offset), (".timeindex", self.last_time_offset))
                   if offset is not None and offset >= self.base_offset]
        return (f"its index entries prove offsets {self.base_offset}..{self.last_offset} were written to it "
                f"({', '.join(entries)}: a broker indexes a batch after appending it)")

    def words(self) -> str:
        """What discovery's note (and ``verify``'s warning) says of it, after :data:`LOST_NEWEST_SEGMENT`."""
        return self._said() + COPY_AGAIN

    def _said(self) -> str:
        return (f"{self.log_path} is missing, but its {self.names} are there: the segment from offset "
                f"{self.base_offset}, past the newest segment, was deleted, or a copy of a live broker's data dir "
                f"missed it, so the log ends before offset {self.base_offset} and any records that segment held are "
                f"not in these files; {self.proven_words()}")

    def unreadable_words(self, recovery_point: int | None) -> str:
        """The reads' warning with no high watermark (``ScanMetrics.unreadable_tails``), judged as index entries
        past a readable end are when the recovery point is not above it (:meth:`IndexedPastEnd.judged`)."""
        recovery = ("no recovery point is checkpointed" if recovery_point is None else
                    f"none is below the recovery point {recovery_point}")
        return (f"{self._said()}; {recovery}, so they may never have reached the disk, and no "
                f"high watermark says whether they were acknowledged; the read ends at offset {self.base_offset}"
                f"{COPY_AGAIN}")


def _lost_newest_segment(regular: dict, valid_swaps: dict, segments: list, by_name: dict,
                         filesystem=None) -> LostSegment | None:
    """The index files of a segment past the newest one whose ``.log`` is gone, None without such.

    A broker creates a segment's ``.log`` and its indexes together (``UnifiedLog.roll``) and deletes them together
    (renamed to ``.deleted``, the ``.log`` first: ``LogSegment.changeFileSuffixes``), and it never deletes its
    newest segment (retention rolls first), only truncates a follower's log below it, and then a crash between the
    renames leaves the ``.log.deleted`` (a deletion under way, said by its own note). Past the newest ``.log``, index
    files with no ``.log`` and no ``.log.deleted`` are a segment whose ``.log`` was deleted by hand, or that a copy
    of a live data dir missed: the log ends before its base offset (a broker's ``LogLoader`` deletes the indexes and
    ends it there too), and only these files say there was more: their last entries, how far (read in place, a few
    positioned reads each)."""
    newest = segments[-1].base_offset if segments else None
    orphans = sorted((base, kinds) for base, kinds in regular.items()
                     if "log" not in kinds and base not in valid_swaps and (newest is None or base > newest))
    for base, kinds in orphans:
        entry = next(iter(kinds.values()))
        stem = entry.name.split(".")[0]
        if f"{stem}.log.deleted" in by_name:
            continue
        log_path = _fs.join(_fs.parent(entry.path), f"{stem}.log")
        names = ", ".join(sorted(k.name for k in kinds.values()))
        return LostSegment(log_path, base, names,
                           *(_last_entry_offset(kinds[kind].path, kind, base, filesystem) if kind in kinds else None
                             for kind in ("index", "timeindex")))
    return None


def _last_entry_offset(path: str, kind: str, base_offset: int, filesystem) -> int | None:
    """The offset of the last entry of the ``.index`` (``kind`` "index") or ``.timeindex`` at ``path`` of a segment
    at ``base_offset``; None when it has none or cannot be read."""
    from kafkaseg.errors import CorruptIndexError

    try:
        last = probed_last_entry(path, None, "offset" if kind == "index" else "time", base_offset, filesystem)
    except (LayoutError, CorruptIndexError):
        return None
    return None if last is None else int(last[0 if kind == "index" else 1])


#: An index probed for its last entry (:func:`probed_last_entry`) of at most this many bytes (a page: 512 offset
#: entries, a segment of about 2 MiB at the default index interval) is read whole in one positioned read rather
#: than entry by entry (its first and last entries: two reads). Each read is a system call (or, on object storage,
#: a block already fetched): the size of it costs next to nothing.
PROBED_WHOLE_BYTES = 4096


def probed_last_entry(path: str, window: tuple[int, int] | None, kind: str, base_offset: int,
                      filesystem) -> tuple[int, int] | None:
    """The last entry of the index of ``kind`` ("offset": ``(offset, position)``; "time": ``(timestamp,
    offset)``) at ``path`` (``window``: see :func:`~kafkaseg.storage._index_file.index_location`) of a segment at
    ``base_offset``, probed in place (:class:`~kafkaseg.storage.probed_index.ProbedIndex`: an open and a few
    positioned reads, no load; one read for an index of at most :data:`PROBED_WHOLE_BYTES`); None when it has no
    entry. Raises what the probe raises (``LayoutError``,
    ``CorruptIndexError``) for a file that cannot be read or cannot be its segment's index: each caller says what
    that means to it."""
    from kafkaseg.storage.probed_index import ProbedIndex

    index = ProbedIndex(path, kind, base_offset, filesystem, _uncounted_stats(), None, window,
                        whole_up_to=PROBED_WHOLE_BYTES)
    try:
        return index.last() if index.count else None
    finally:
        index.close()


def last_entry_as_probed(index, kind: str) -> tuple | None:
    """What :func:`probed_last_entry` (``kind`` "offset" or "time") reads from the file ``index`` was loaded from
    (an :class:`~kafkaseg.storage.offset_index.OffsetIndex` or :class:`~kafkaseg.storage.time_index.TimeIndex` the
    caller loaded with ``load``, whole file or window), taken from the loaded entries rather than read again:
    ``(last entry,)``, or ``(None,)`` for none, where they are every entry of the file (no zero tail dropped, no
    bytes past a whole entry, not rebuilt) and the probe's checks of its first and last entries cannot fail (the
    offsets at or above the base, the first not above the last; the timestamps not negative, the last not below the
    first). Else None: probe the file (the probe may raise what this leaves to it)."""
    if index is None or getattr(index, "rebuilt", True) or index.file_size is None or index.tail_entries:
        return None
    count = len(index)
    if index.file_size != count * index.ENTRY_SIZE:
        return None
    if not count:
        return (None,)
    first, last = index.entry(0), index.entry(count - 1)
    at = 0 if kind == "offset" else 1
    if first[at] < index.base_offset or first[at] > last[at]:
        return None
    if kind == "time" and (first[0] < 0 or last[0] < first[0]):
        return None
    return (last,)


def _uncounted_stats():  # (a probe's read counters, which no caller reports)
    from types import SimpleNamespace

    return SimpleNamespace(files_opened=0, index_entries=0, index_bytes=0)


def _safe(read, path: str, filesystem, notes: list[str]):
    try:
        return read(path, filesystem)
    except (CorruptDataError, LayoutError) as exc:
        notes.append(f"unreadable {_fs.basename(path)}: {exc}")
        return None


def read_partition_dir(path: str, filesystem: pafs.FileSystem | None = None, *, log_dir: LogDir | None = None,
                       topic: str | None = None, partition: int | None = None,
                       entries: Sequence[_fs.FileEntry] | None = None, key_ring=None,
                       again: bool = False, copy_states=None, partition_errors: bool = False) -> PartitionDir:
    """One topic-partition folder. Checkpoint values come from ``log_dir`` (or, when not given, from the parent
    folder's checkpoint files if it has any). Unreadable side files are noted in ``notes``, not raised. A listed
    segment file discovery must read (a ``.swap``) that is gone when read is not an error: the folder is listed
    again, up to :data:`REDISCOVERIES` times. A tiered-storage copy's partition folder is read by
    :func:`read_tiered_partition` (``key_ring`` for its encrypted copies; ``again``: read again, and
    ``copy_states``, see there). A segment that is no readable file raises :class:`UnreadableSegmentError`, a segment
    file named past a 64-bit long :class:`SegmentNameError`; with ``partition_errors`` either is the partition's
    ``error`` (see :class:`PartitionDir`)."""
    if filesystem is None:
        filesystem, path = _fs.open_filesystem(path)
    if log_dir is None and entries is None and parse_topic_partition(_fs.basename(path)) is None:
        # a tiered-storage copy's partition folder (read again)? listed as stored (see read_tiered_partition)
        listing = _fs.settled_list_dir(path, _fs.base_store(filesystem))
        remote = tiered.tiered_partition_folders(path, filesystem, listing, partition_only=True)
        if remote is not None and len(remote) == 1 and remote[0].path == path:
            return read_tiered_partition(remote[0], filesystem, entries=listing, key_ring=key_ring, again=again,
                                         copy_states=copy_states)
        if _fs.base_store(filesystem) is filesystem:
            entries = listing
    if topic is None or partition is None:
        parsed = parse_topic_partition(_fs.basename(path))
        if parsed is None:
            raise LayoutError(f"{path}: folder name is not <topic>-<partition>")
        topic, partition = parsed
    for attempt in range(REDISCOVERIES + 1):
        if entries is None:  # (whole, also while a live broker renames its files: see settled_list_dir)
            entries = _fs.settled_list_dir(path, filesystem)
        notes: list[str] = []
        error = None
        try:
            found_lost: list[LostSegment] = []
            segments, snapshot_paths, ignored_swaps = _segments_from_listing(
                entries, filesystem, notes, metadata_log=topic == CLUSTER_METADATA_TOPIC, found_lost=found_lost)
            break
        except SegmentFileError as err:
            if not partition_errors:
                raise
            error, segments, snapshot_paths, ignored_swaps, found_lost = err, [], [], [], []
            break
        except _ListedFileGone as gone:  # noqa: PERF203 - a retry loop
            if attempt == REDISCOVERIES:
                raise LayoutError(f"{gone.args[0]} was listed but gone when read, {REDISCOVERIES + 1} listings in a "
                                  f"row: the folder {path} keeps changing") from gone.__cause__
            entries = None  # list again: the folder as it is now
    names = _files(entries)
    epochs = ()
    if ckpt.LEADER_EPOCH_CHECKPOINT in names:
        epochs = _safe(ckpt.read_leader_epoch_checkpoint, names[ckpt.LEADER_EPOCH_CHECKPOINT].path, filesystem,
                       notes) or ()
    topic_id = None
    if ckpt.PARTITION_METADATA in names:
        meta = _safe(ckpt.read_partition_metadata, names[ckpt.PARTITION_METADATA].path, filesystem, notes)
        topic_id = meta.topic_id if meta else None
    # (only the metadata log's folder holds KRaft snapshots: a broker's LogLoader passes over such a name elsewhere)
    kraft = () if error is not None or topic != CLUSTER_METADATA_TOPIC else tuple(
        e.path for n, e in sorted(names.items()) if KRAFT_SNAPSHOT_NAME.match(n))
    if log_dir is None:
        parent_path = _fs.parent(path)
        log_dir = _read_log_dir_metadata(parent_path, filesystem) if parent_path and parent_path != path else None
    key = (topic, partition)
    return PartitionDir(
        topic=topic, partition=partition, path=path, log_dir=log_dir.path if log_dir else None,
        segments=tuple(segments), snapshot_paths=tuple(snapshot_paths),
        high_watermark=log_dir.high_watermarks.get(key) if log_dir else None,
        recovery_point=log_dir.recovery_points.get(key) if log_dir else None,
        checkpoint_log_start_offset=log_dir.log_start_offsets.get(key) if log_dir else None,
        cleaner_offset=log_dir.cleaner_offsets.get(key) if log_dir else None,
        topic_id=topic_id, leader_epochs=tuple(epochs), kraft_snapshot_paths=kraft,
        log_dir_meta=log_dir.meta if log_dir else None,
        notes=tuple(notes) + (tuple(f"log dir: {n}" for n in log_dir.skipped if isinstance(n, str)) if log_dir
                              else ()),
        filesystem=filesystem, unreadable_checkpoints=log_dir.unreadable_checkpoints if log_dir else (),
        deleted_files=tuple((e.name, e.size) for e in entries if not e.is_dir and e.name.endswith(".deleted")),
        ignored_swaps=tuple(ignored_swaps), error=error, lost_segment=found_lost[0] if found_lost else None)


def read_tiered_partition(folder: tiered.TieredPartitionFolder, filesystem, *, root: str | None = None,
                          entries: Sequence[_fs.FileEntry] | None = None, only: str | None = None,
                          key_ring=None, again: bool = False, copy_states=None) -> PartitionDir:
    """One remote partition folder of a tiered-storage copy (see :mod:`kafkaseg.storage.tiered`): its segment
    copies as segments, its topic id from the folder name, its leader epochs from the copies; no checkpoints.

    Copies without their ``.log``, and Aiven copies without a manifest (uploads that did not finish), are noted
    and left out; which of the others are the live log's is :func:`tiered.live_copies`' decision (by their leader
    epochs, each noted), which raises :class:`LayoutError` where the epochs do not tell; so does an Aiven manifest
    kafkaseg cannot read the segment by (encrypted with no key given that opens it, a chunk index that does not
    add up). A partition with compressed or encrypted copies gets a filesystem serving them as they were on disk
    (:func:`tiered.chunked_filesystem`). ``only``: the path of the one ``.log`` copy to take (a file given as a
    path; how to read one of two conflicting copies). ``key_ring``: the private keys of encrypted copies
    (:class:`kafkaseg.storage.encryption.KeyRing`); a partition read again through its own filesystem also
    reuses the data keys that filesystem holds (a worker has no key ring), and, ``again`` (a planned file gone),
    keeps a copy whose key neither gives in the log, only reading it failing (an uploaded since planning).
    ``copy_states`` (a :class:`tiered.CopyStates`, from the cluster's ``__remote_log_metadata``): the copies it
    says are dead are left out first (:func:`tiered.apply_copy_states`), and the offsets only its live copies
    missing from the folder held, below and above its newest copy, become the partition's
    :attr:`PartitionDir.live_copies_lost` (a read of the copies alone loses them; a log dir read with them decides
    its own: :func:`with_remote_copies`).
    """
    known_keys = {chunked.data_key.wrapped: chunked.data_key for chunked in
                  tiered.served_decompressed(filesystem).values() if isinstance(chunked.data_key, encryption.DataKey)}
    key_ring = encryption.RingKeys.of(key_ring)
    # listed and read as stored: a filesystem serving compressed copies decompressed (read again through a
    # partition's own) would list them at their decompressed sizes, which the manifests' chunk indexes do not add
    # up to
    filesystem = _fs.base_store(filesystem)
    if entries is None:
        entries = folder.entries if folder.entries is not None else _fs.list_dir(folder.path, filesystem)
    layout = {tiered.AIVEN: "Aiven tiered-storage layout", tiered.LOCAL_TIERED_STORAGE: "LocalTieredStorage layout"
              }.get(folder.layout, "layout unknown: it holds no copy")
    notes = [f"tiered-storage copy ({layout}): no checkpoints; every segment is a rolled one"]
    copies = tiered.remote_segments(entries, notes)
    found = [copy.segment_id for copy in copies]
    copies = tiered.apply_copy_states(copies, copy_states, notes)
    if only is not None:
        copies = [copy for copy in copies if copy.log.path == only]
    unfinished = []
    if folder.layout == tiered.AIVEN:
        complete = []
        for copy in copies:
            if "rsm-manifest" in copy.files:
                complete.append(copy)
            else:
                unfinished.append(copy)
                notes.append(f"ignored {_fs.basename(copy.log.path)}: no .rsm-manifest beside it (the plugin "
                             "uploads it last: an upload that did not finish)")
        def read_manifest(copy):
            # read again through its own filesystem (a worker has the planned copies' keys and no key ring): a
            # copy uploaded since, whose key it lacks, stays in the log, and only reading it fails, saying why
            return tiered.read_aiven_manifest(copy, filesystem, key_ring, known_keys, unavailable_ok=again)

        copies = _fs.map_files(read_manifest, complete, [filesystem])
        notes.extend(f"{_fs.basename(c.log.path)}: encrypted with a key not held here (uploaded since planning?): "
                     "reading it fails" for c in copies
                     if c.chunked is not None and isinstance(c.chunked.data_key, encryption.UnavailableKey))

        def epochs_of(copy):
            return copy.leader_epochs
    else:
        read_epochs: dict = {}

        def epochs_of(copy):  # None when absent or unreadable (noted): the epochs are then unknown
            if copy.segment_id not in read_epochs:
                try:
                    read_epochs[copy.segment_id] = tiered.epochs_from_checkpoint(copy, filesystem)
                except (CorruptDataError, LayoutError) as exc:
                    notes.append(f"unreadable {_fs.basename(copy.files['leader_epoch_checkpoint'].path)}: {exc}")
                    read_epochs[copy.segment_id] = None
            return read_epochs[copy.segment_id]
    kept = tiered.live_copies(copies, unfinished, epochs_of, notes)

    def side(copy, kind):
        entry = copy.files.get(kind)
        return entry.path if entry is not None else None

    def packed(copy):
        entry = copy.files.get("indexes")
        if entry is None:
            return ()
        kinds = {kind: (position, size) for kind, position, size in copy.packed_indexes}
        return tuple((kind, entry.path, *kinds[name]) for kind, name in (
            ("index", "offset"), ("timeindex", "timestamp"), ("txnindex", "transaction")) if name in kinds)

    # an Aiven copy without its .indexes object (being deleted, or lost): its offset and time indexes are rebuilt
    # from its log, and its aborted transactions derived there when its manifest lists a transaction index
    missing = [c for c in kept if folder.layout == tiered.AIVEN and "indexes" not in c.files]
    lost = {c.log.path for c in missing if any(kind == "transaction" for kind, _, _ in c.packed_indexes)}
    notes.extend(f"{_fs.basename(c.log.path)}: no .indexes object beside it (being deleted, or lost): its indexes "
                 "are rebuilt from its log" + (", its aborted transactions derived from the log (its manifest lists "
                                               "a transaction index)" if c.log.path in lost else "")
                 for c in missing)
    # segments (and indexes) stored compressed or encrypted are read through a filesystem that serves them as they
    # were on disk
    filesystem = tiered.chunked_filesystem(filesystem, {path: chunked for c in kept
                                                        for path, chunked in c.served().items()})

    def known_state(copy):
        if copy_states is None or copy_states.unreadable is not None:
            return None
        state = copy_states.copies.get(copy.segment_id)
        return state if state is not None and state.dead is None and state.start_offset == copy.base_offset \
            else None

    def recorded_end(copy):
        # the manifest's end, else __remote_log_metadata's for a live copy it knows (RemoteLogManager records the
        # next segment's base - 1: offsets after the copy's last batch up to there, removed by a compaction before
        # the topic was made tiered, are the copy's, not a copy missing)
        if copy.end_offset is not None:
            return copy.end_offset
        state = known_state(copy)
        return None if state is None else state.end_offset

    def whole(copy) -> bool:
        state = known_state(copy)
        return state is not None and state.size_in_bytes == copy.original_size \
            and (copy.end_offset is None or copy.end_offset == state.end_offset)

    segments = tuple(SegmentFiles(
        base_offset=copy.base_offset, log_path=copy.log.path, log_size=copy.original_size,
        index_path=side(copy, "index"), timeindex_path=side(copy, "timeindex"),
        txnindex_path=side(copy, "txnindex"), mtime_ms=copy.log.mtime_ms or 0, filesystem=filesystem,
        packed_indexes=packed(copy), tiered=folder.layout, remote_end=recorded_end(copy), remote_whole=whole(copy),
        indexes_lost=copy.log.path in lost) for copy in kept)
    epochs: tuple = ()
    if folder.layout == tiered.AIVEN:
        epochs = tuple(EpochEntry(epoch, start) for epoch, start in tiered.manifest_epochs(kept))
    elif kept:
        epochs = epochs_of(kept[-1]) or ()
    pdir = PartitionDir(topic=folder.topic, partition=folder.partition, path=folder.path,
                        log_dir=root, segments=segments, topic_id=folder.topic_id, leader_epochs=tuple(epochs),
                        notes=tuple(notes), filesystem=filesystem, tiered=folder.layout,
                        key_ring=key_ring.ring if key_ring is not None else None,
                        copy_states=copy_states.applied_to(found) if copy_states is not None else None)
    if only is not None or copy_states is None or copy_states.planned or copy_states.unreadable:
        return pdir
    # read without a log dir: the live copies missing are this log's lost offsets (the metadata says the remote
    # tier held them: COPY_SEGMENT_FINISHED), below the newest copy here (so the oldest copy here is no log start
    # retention moved) and above it (the read ends at the newest copy here: planning says what a read reaching
    # past it loses); every one of them when none is here (an empty log, whose reads lose them all)
    last = segments[-1].base_offset if segments else -1
    ends = [copy.end_offset + 1 for copy in copy_states.live()]
    lost = _live_copies_missing(pdir, segments, 0, max(ends + [last + 1]))
    return _replace(pdir, live_copies_lost=tuple(lost), lost_copy_states=copy_states) if lost else pdir


_CHECKPOINT_FILES = {
    ckpt.REPLICATION_OFFSET_CHECKPOINT: "high_watermarks",
    ckpt.RECOVERY_POINT_OFFSET_CHECKPOINT: "recovery_points",
    ckpt.LOG_START_OFFSET_CHECKPOINT: "log_start_offsets",
    ckpt.CLEANER_OFFSET_CHECKPOINT: "cleaner_offsets",
}
#: the names of the files a broker writes in a log dir or a partition folder, besides segments and snapshots
_BROKER_FILE_NAMES = frozenset(_CHECKPOINT_FILES) | {ckpt.META_PROPERTIES, ckpt.LEADER_EPOCH_CHECKPOINT,
                                                     ckpt.PARTITION_METADATA}


def _as_given(given: str, path: str) -> Callable[[str], str]:
    """How to name a folder below ``path`` (as resolved from ``given``) so that it can be given as it is: a URI
    spelled as ``given`` is (its scheme, user info with the secret masked, and query kept) for a URI that names
    ``path`` literally, else the folder's path (a local one, or a URI that spells it otherwise: percent-encoded)."""
    scheme, sep, rest = _fs.redact(str(given)).partition("://")
    head, mark, query = rest.partition("?")
    user, at, location = head.rpartition("@")
    if not sep or location.rstrip("/") != path:
        return lambda below: below
    return lambda below: f"{scheme}://{user}{at}{below}{mark}{query}"


def log_dirs_below(listing: Sequence[_fs.FileEntry], filesystem=None, most: int = 20,
                   as_given: Callable[[str], str] = lambda below: below, verb: str = "read") -> str:
    """For the error about a folder that is no log dir (``/var/lib/kafka`` for ``/var/lib/kafka/data``): the log
    dirs among its first ``most`` subfolders, and the stores of tiered-storage copies (a bucket given for the
    ``rsm.config.key.prefix`` folder below it; told by the names of their topic folders), as "; it holds one:
    <path> (read that instead)" (each named by ``as_given``; ``verb`` for "read"), or ""."""
    found = []
    for entry in [e for e in listing if e.is_dir][:most]:
        try:
            below = _fs.list_dir(entry.path, filesystem)
        except LayoutError:
            continue
        if (_read_log_dir_metadata(entry.path, filesystem, below) is not None
                or any(e.is_dir and (parse_topic_partition(e.name) or tiered.parse_aiven_topic_folder(e.name))
                       for e in below)):
            found.append(as_given(entry.path))
    if not found:
        return ""
    if len(found) == 1:
        return f"; it holds one: {found[0]} ({verb} that instead)"
    return f"; it holds some: {', '.join(found)} ({verb} those instead)"


def log_dirs_named_as_partitions(listing: Sequence[_fs.FileEntry], filesystem=None, most: int = 20,
                                  as_given: Callable[[str], str] = lambda below: below
                                  ) -> list[tuple[str, str]]:
    """For a folder with no log dir metadata whose subfolders are named ``<topic>-<partition>``: those among the
    first ``most`` that are log dirs, not partitions (``/data`` holding ``kafka-logs-1`` and ``kafka-logs-2``, Kafka's
    default log.dirs name numbered per disk, which parses as partitions 1 and 2 of a topic ``kafka-logs``): they hold
    ``meta.properties``, log dir checkpoints or ``<topic>-<partition>`` folders, and no segment or partition file.
    Each as (its name, its path named by ``as_given``); [] when one of them looks like a partition folder (the
    folder is then a log dir copied without its metadata, read as one)."""
    found = []
    for entry in [e for e in listing if e.is_dir and parse_topic_partition(e.name)][:most]:
        try:
            below = _fs.list_dir(entry.path, filesystem)
        except LayoutError:
            continue
        if _looks_like_partition_dir(below):
            return []
        if (_read_log_dir_metadata(entry.path, filesystem, below) is not None
                or any(e.is_dir and parse_topic_partition(e.name) for e in below)):
            found.append((entry.name, as_given(entry.path)))
    return found


def _misnamed_partition(name: str, listing: Sequence[_fs.FileEntry], logs: str) -> str:
    """For the error about a folder that is no log dir: when it holds a partition's files under a name that is not
    ``<topic>-<partition>`` (``orders-1.bak``, a partition folder copied aside), "; it holds ..." saying why it is
    not read and how to read it (``logs``: its .log files as a glob, spelled as the folder was given), or ""."""
    if parse_topic_partition(name) is not None or not _looks_like_partition_dir(listing):
        return ""
    return (f"; it holds a partition's segments, but {name!r} is not named <topic>-<partition> (a partition "
            f"folder's name gives its topic and partition): copy it under such a name, or give its .log files "
            f"({logs}) to read them as topic {name!r}, partition -1")


def _read_log_dir_metadata(path: str, filesystem, entries: Sequence[_fs.FileEntry] | None = None,
                           strict: bool = False) -> LogDir | None:
    """A LogDir without partitions: meta.properties and checkpoints. None when the folder has none of them
    (and is then not a log dir we know of). ``strict`` raises on a corrupt checkpoint instead of noting it."""
    try:
        if entries is None:
            entries = _fs.list_dir(path, filesystem)
    except LayoutError:
        return None
    names = _files(entries)
    if ckpt.META_PROPERTIES not in names and not any(n in names for n in _CHECKPOINT_FILES):
        return None
    skipped: list = []
    meta = None
    if ckpt.META_PROPERTIES in names:
        try:
            meta = ckpt.read_meta_properties(names[ckpt.META_PROPERTIES].path, filesystem)
        except (CorruptCheckpointError, LayoutError) as exc:
            if strict:
                raise
            skipped.append(f"unreadable meta.properties: {exc}")
    values = {}
    unreadable: list[tuple[str, str]] = []
    for name, attribute in _CHECKPOINT_FILES.items():
        values[attribute] = {}
        if name in names:
            try:
                values[attribute] = ckpt.read_offset_checkpoint(names[name].path, filesystem)
            except (CorruptCheckpointError, LayoutError) as exc:
                if strict:
                    raise
                skipped.append(f"unreadable {name}: {exc}")
                unreadable.append((name, str(exc)))
    return LogDir(path=path, meta=meta, partitions=(), skipped=tuple(skipped), filesystem=filesystem,
                  unreadable_checkpoints=tuple(unreadable), **values)


def read_log_dir(path: str, filesystem: pafs.FileSystem | None = None,
                 select: Callable[[str, int], bool] | None = None,
                 partition_errors: bool = False) -> LogDir:
    """A log dir with its partitions (sorted by topic, partition). Child folders that are not live partitions
    are listed in ``skipped`` as ``(name, reason)``, and so is a partition folder gone when it is listed (a topic
    deleted meanwhile), which is then left out as one that is not there; corrupt checkpoint files are noted, not
    raised. ``select``
    (topic, partition) chooses the partition folders to read: the others are only named (``unselected``), which
    on an object store saves a listing and two reads per folder. A partition folder with a segment that is no
    readable file raises :class:`UnreadableSegmentError`, one with a segment file named past a 64-bit long
    :class:`SegmentNameError`; with ``partition_errors`` it is a partition whose ``error`` says so, and the others
    are read as usual (``kafkaseg log-dirs`` still takes the log dir of the latter offline, as a broker fails to
    load it)."""
    if filesystem is None:
        filesystem, path = _fs.open_filesystem(path)
    entries = _fs.settled_list_dir(path, filesystem)  # (a partition folder renamed meanwhile is not missed)
    base = _read_log_dir_metadata(path, filesystem, entries) or LogDir(path, None, (), filesystem=filesystem)
    folders = []
    unselected: list[tuple[str, int, str]] = []
    skipped = [("(log dir)", note) for note in base.skipped]
    for entry in entries:
        if not entry.is_dir:
            if not entry.readable and parse_topic_partition(entry.name) is not None:
                # a link to nothing (or a loop) named as a partition folder: said, not silently passed over
                skipped.append((entry.name, "named as a partition folder but cannot be read (a broken link?)"))
            continue
        if entry.name.endswith(_SKIPPED_DIR_SUFFIXES):
            skipped.append((entry.name, f"{entry.name.rsplit('-', 1)[1]} folder (not a live partition)"))
            continue
        parsed = parse_topic_partition(entry.name)
        if parsed is None:
            skipped.append((entry.name, "not a <topic>-<partition> folder"))
            continue
        if select is not None and not select(*parsed):
            unselected.append((parsed[0], parsed[1], entry.path))
            continue
        folders.append((entry.path, parsed))

    def read(folder):
        try:
            return read_partition_dir(folder[0], filesystem, log_dir=base, topic=folder[1][0],
                                      partition=folder[1][1], partition_errors=partition_errors)
        except LayoutError:
            if _fs.exists(folder[0], filesystem) or not _renamed_away(path, _fs.basename(folder[0]), filesystem):
                raise
            return None  # gone since the log dir was listed: a topic being deleted (renamed <name>.<id>-delete)

    partitions = []
    for folder, partition_dir in zip(folders, _fs.map_files(read, folders, [filesystem])):  # threads on S3
        if partition_dir is None:
            skipped.append((_fs.basename(folder[0]), "gone while the log dir was read (a topic being deleted: the "
                                                     "broker renames its folders <name>.<id>-delete)"))
        else:
            partitions.append(partition_dir)
    partitions.sort(key=lambda p: (p.topic, p.partition))
    return LogDir(path=path, meta=base.meta, partitions=tuple(partitions), high_watermarks=base.high_watermarks,
                  recovery_points=base.recovery_points, log_start_offsets=base.log_start_offsets,
                  cleaner_offsets=base.cleaner_offsets, skipped=tuple(skipped), filesystem=filesystem,
                  unreadable_checkpoints=base.unreadable_checkpoints, unselected=tuple(unselected))


def _renamed_away(log_dir: str, name: str, filesystem) -> bool:
    """Whether partition folder ``name``, gone from ``log_dir`` since it was listed, was renamed by the broker as
    it deletes it: ``<name>.<id>-delete`` (a topic deletion, or the source of a move between log dirs, whose
    ``-future`` copy took the name elsewhere) or ``<name>.<id>-stray``, its topic perhaps cut to fit 255
    characters (:func:`~kafkaseg.storage.fs.renamed_for_deletion`). Anything else (the log dir unmounted or
    moved, which raises here as it cannot be listed) is no deletion, so the read fails rather than leave it out."""
    deletions = [e.name for e in _fs.list_dir(log_dir, filesystem) if e.is_dir and _fs.DELETION_NAME.match(e.name)]
    if parse_topic_partition(name) is None:
        return any(other.startswith(name + ".") for other in deletions)
    return _fs.renamed_for_deletion(name, deletions)


def _add_named(kinds: dict, base: int, kind: str, entry: _fs.FileEntry, notes: list[str]) -> None:
    """File ``entry`` as segment ``base``'s ``kind`` file. Two names for one base (``522.log`` beside
    ``00000000000000000522.log``): a broker opens the 20-digit name (``LogSegment.open`` builds it from the base
    offset), so that one is kept and the other noted as ignored."""
    canonical = f"{base:020d}."
    kept = kinds.get(kind)
    if kept is not None:
        ignored = entry
        if _fs.basename(entry.path).startswith(canonical) and not _fs.basename(kept.path).startswith(canonical):
            kept, ignored = entry, kept
        notes.append(f"ignored {_fs.basename(ignored.path)}: {_fs.basename(kept.path)} names the same base offset "
                     f"{base}, and a broker opens the 20-digit name")
        entry = kept
    kinds[kind] = entry


def _single_log_file(path: str, entry: _fs.FileEntry, filesystem, key_ring=None, cache: dict | None = None,
                     partition_errors: bool = False) -> PartitionDir:
    """A ``.log`` file given as a path, in its partition's context where its folder gives one. ``cache`` (a dict
    the caller keeps for one discovery) holds what each folder's listing and partition read gave, so that many files
    of one folder read it once, not once a file. A partition folder that cannot be read as a log (see
    :func:`read_partition_dir`) raises, or with ``partition_errors`` gives the file read on its own with that
    ``error``."""
    cache = {} if cache is None else cache
    folder = _fs.parent(path)
    folder_name = _fs.basename(folder)
    parsed = parse_topic_partition(folder_name)
    name = _fs.basename(path)
    match = re.match(r"^(\d+)\.log$", name)

    def cached(key, compute):
        if key not in cache:
            try:
                cache[key] = (compute(), None)
            except LayoutError as err:
                cache[key] = (None, err)
        value, err = cache[key]
        if err is not None:
            raise err
        return value

    def listing():
        return cached(("list", folder), lambda: _fs.list_dir(folder, filesystem))

    def by_path(whole):  # a partition read's segments by .log path
        return cached(("paths", id(whole)), lambda: {s.log_path: s for s in whole.segments})

    remote = None if parsed is not None else cached(("remote", folder), lambda: tiered.tiered_partition_folders(
        folder, filesystem, listing(), partition_only=True))
    if remote is not None and len(remote) == 1 and remote[0].path == folder:  # a segment copy in tiered storage
        try:  # the whole partition decides what a read of the copy needs (transactions ending in later copies)
            whole = cached(("tiered", folder), lambda: read_tiered_partition(remote[0], filesystem, key_ring=key_ring))
            same = by_path(whole).get(path)
            if same is not None:
                return _replace(whole, segments=(same,), whole=whole, given_files=True)
        except LayoutError as err:  # copies that cannot be read as one log: this one is read on its own
            why = f"read on its own: its folder's copies cannot be read as one log ({err})"
        else:
            why = "read on its own: not one of the copies its folder is read as"
        given = read_tiered_partition(remote[0], filesystem, only=path, key_ring=key_ring)
        if given.segments:
            return _replace(given, given_files=True, notes=given.notes + (f"{_fs.basename(path)}: {why}",))
    if parsed is not None:
        whole = cached(("partition", folder), lambda: read_partition_dir(folder, filesystem, topic=parsed[0],
                                                                         partition=parsed[1],
                                                                         partition_errors=partition_errors))
        error = whole.error
        if error is not None:  # (asked for partition_errors) no context to read the file in: on its own, below
            whole = None
        same = by_path(whole).get(path) if whole is not None else None
        if same is not None:
            return _replace(whole, segments=(same,), whole=whole, given_files=True)
        topic, partition = parsed
    else:
        topic, partition = folder_name, -1
        whole = error = None
    itself = False  # the file is only its partition's error (a name past a long): no segment of it
    if match:
        base = int(match.group(1))
        if offset_past_a_long(match.group(1)):  # (LogLoader fails on it: nothing is read under an offset no long holds)
            itself = True
            named = SegmentNameError(past_a_long_words(match.group(1)), path)
            if not partition_errors:
                raise named
            whole, error = None, error or named  # (in a partition folder, its listing's error: said once)
    else:  # a .log file without a Kafka name: take the base offset from its first batch
        from kafkaseg.storage.segment import SegmentReader

        with SegmentReader(path, filesystem) as reader:
            first = reader.header_at(0)
            # (no whole batch: a torn one's offset field, else 0)
            prefix = reader.read_at(0, 8) if first is None and reader.size >= 8 else b""
        if first is not None:
            base = first.base_offset
        else:
            base = max(0, int.from_bytes(prefix, "big", signed=True)) if len(prefix) == 8 else 0
    stem = path[:-len(".log")]
    entries = listing() if folder else []
    siblings = cached(("siblings", folder), lambda: {e.name: e for e in entries})

    def sibling(suffix: str) -> str | None:
        candidate = _fs.basename(stem) + suffix
        return siblings[candidate].path if candidate in siblings else None

    segments = () if itself else (SegmentFiles(base, path, entry.size, sibling(".index"), sibling(".timeindex"),
                                               sibling(".txnindex"), entry.mtime_ms or 0, False, filesystem),)
    if whole is not None:
        return _replace(whole, segments=segments, given_files=True)
    alone = ("single .log file outside a <topic>-<partition> folder: topic is the folder name, partition -1",)
    if error is not None:
        alone = ("read on its own, without its partition's checkpoints: the partition cannot be read as a log (its "
                 "error says why)",)
    return PartitionDir(topic=topic, partition=partition, path=folder, log_dir=None, segments=segments,
                        notes=() if itself else alone,
                        filesystem=filesystem, given_files=True, error=error,
                        folder_last_log=cached(("last", folder), lambda: _last_log_name(entries)) if folder else None,
                        deleted_files=cached(("deleted", folder), lambda: tuple(
                            (e.name, e.size) for e in entries if not e.is_dir and e.name.endswith(".deleted"))))


#: How many times work on a partition starts again on a fresh listing of its folder when the folder changed under
#: it (see :func:`relisted`).
REDISCOVERIES = 3


def relisted(partition_dir: PartitionDir, work):
    """``work(partition_dir)``, done again on a fresh listing of the partition folder (and fresh checkpoints) when
    it fails while the folder changed under it: a live broker's retention renames a deleted segment's files to
    ``.deleted`` and removes them, and its cleaner replaces segments under the same names. The answer then
    reflects the partition as it is now (a start below the new log start is data loss, as for any read). A failure
    whose folder lists as before is raised as it is, and so is any failure of ``.log`` files given as paths
    (re-listing would widen the read to the whole folder). Done again as well when it succeeded but a local
    segment's name holds another file than the listing saw (:func:`_with_replaced_files`)."""
    for attempt in range(REDISCOVERIES + 1):
        last = attempt == REDISCOVERIES or partition_dir.given_files or partition_dir.whole is not None
        try:
            done = work(partition_dir)
        except (LayoutError, CorruptDataError):  # noqa: PERF203 - a retry loop
            if last:
                raise
            fresh = _listed_again(partition_dir)
            if fresh is None or _listing(fresh) == _listing(partition_dir):
                raise
            partition_dir = fresh
            continue
        # done, but a segment's name may hold another file than the listing saw (the cleaner's copy renamed in):
        # what the work read of it by name (indexes, headers) is then of another file than the listed size it
        # planned with. Done again on the files listed, under their .deleted names where they are (a fresh listing
        # would call a segment retention renamed meanwhile gone, and its records lost)
        current = _with_replaced_files(partition_dir)
        if last or current is None:
            return done
        partition_dir = current
    raise AssertionError("unreachable")


def _listed_again(partition_dir: PartitionDir) -> PartitionDir | None:
    """The partition as its folder lists now (extended below with its remote copies as before), None when the
    folder itself went away (a deleted topic)."""
    try:
        fresh = read_partition_dir(partition_dir.path, partition_dir.filesystem, topic=partition_dir.topic,
                                   partition=partition_dir.partition, key_ring=partition_dir.key_ring, again=True,
                                   copy_states=partition_dir.copy_states)
        if partition_dir.remote_below is not None:  # extended below as before (with_remote_copies)
            remote = read_partition_dir(partition_dir.remote_below.path, partition_dir.filesystem,
                                        key_ring=partition_dir.remote_below.key_ring, again=True,
                                        copy_states=partition_dir.remote_below.copy_states)
            fresh = with_remote_copies(fresh, remote)[0] or fresh
    except KafkaSegError:
        return None
    return fresh


def unchanged_since_listed(seg: SegmentFiles, filesystem) -> bool:
    """Whether ``seg``'s log file still has the size and mtime it was listed with (and, on a local disk, is the
    same file: the cleaner renames its copy in under the same name)."""
    if _fs.is_local(filesystem):
        try:
            now = os.stat(seg.log_path)
        except OSError:
            return False
        return (now.st_size == seg.log_size and now.st_mtime_ns // 1_000_000 == seg.mtime_ms
                and (seg.identity is None or (now.st_dev, now.st_ino) == seg.identity))
    try:
        entry = _fs.stat(seg.log_path, filesystem)
    except KafkaSegError:
        return False
    return entry is not None and entry.size == seg.log_size and entry.mtime_ms == seg.mtime_ms


def active_segment_changed(partition_dir: PartitionDir) -> bool:
    """Whether the partition's active segment's ``.log`` is no longer the file, size and time its listing saw: a
    live broker appended to it, or truncated it past the high watermark and wrote the new leader's batches at the
    same offsets (``UnifiedLog.truncateTo``), since. False for ``.log`` files given as paths, and off local disk
    (object storage holds no live broker's files)."""
    segment = partition_dir.active_segment
    if (segment is None or partition_dir.given_files or partition_dir.whole is not None
            or not _fs.is_local(partition_dir.filesystem)):
        return False
    return not unchanged_since_listed(segment, partition_dir.filesystem)


def rewritten_past_high_watermark(partition_dir: PartitionDir) -> bool:
    """Whether a tool's errors on the active segment may be a live broker's truncation past the high watermark
    overtaking its walk (``UnifiedLog.truncateTo``, never below the high watermark, then the new leader's batches at
    the same offsets in other bytes): the active segment's file changed since the listing
    (:func:`active_segment_changed`) and its batches up to the checkpointed high watermark walk cleanly now, so
    what failed lies at or past it. The tools then look once more on a fresh listing, and what they find then
    stands: damage still there stays an error. False with no high watermark checkpointed."""
    hw = partition_dir.high_watermark
    if hw is None or not active_segment_changed(partition_dir):
        return False
    segment = partition_dir.active_segment
    if hw <= segment.base_offset:
        return True
    from kafkaseg.storage.segment import SegmentReader

    try:  # (an append a broker with log.preallocate is writing may end the walk: its zeros are no damage)
        with SegmentReader(segment.log_path, partition_dir.filesystem) as reader:
            return any(header.last_offset >= hw - 1 for header in reader.iter_headers(0, partial_append=True))
    except KafkaSegError:
        return False


#: Why an active segment's index entry past where a truncation may have cut it that fits no batch is a warning
#: (:func:`first_entry_past_truncation_bound`), as verify and describe say it (``bound``: that offset, and why).
LEFT_BY_TRUNCATION = ("at or past {bound} in the active segment: a follower's truncation there (UnifiedLog.truncateTo) "
                      "cuts the .log but leaves the index entries past its cut in the preallocated file "
                      "(AbstractIndex.truncateToEntries only moves the index's position) until the new appends "
                      "overwrite them, so it may be the truncated generation's (the broker never reads it; its "
                      "recovery rebuilds the active segment's indexes)")


def first_entry_past_truncation_bound(partition_dir: PartitionDir, log_path: str, offsets,
                                      base_offset: int) -> tuple[int, str] | None:
    """``(number, bound)``: the first entry, in file order, of the active segment's ``.index`` or ``.timeindex``
    (their entries' absolute ``offsets``; the segment's ``base_offset``) at or past the lowest offset where a
    follower's truncation may have cut the segment, and words naming that offset. From it on an entry may be one the
    truncation left behind (:data:`LEFT_BY_TRUNCATION`: the entries it leaves follow the ones it kept, the new
    appends overwriting them in order), so one that fits no batch of the log is no damage. A truncation never cuts
    below the high watermark it had, but the new leader's appends may take the high watermark past the entries left
    before an index interval of them overwrites one; after those appends the leader epoch cache starts the new
    leader's epoch at the cut (``UnifiedLog.append`` assigns an epoch at its first batch, above every epoch the
    truncation kept), so the bound is the lower of the checkpointed high watermark and the first epoch start inside
    the segment (the log's first epoch, which no truncation needs to have started, aside). None when no entry is
    there, ``log_path`` is not the partition's active segment, or neither bound is known. An epoch start is no proof
    of a truncation (a leader election starts one with none): of the entries from this one on, only those past the
    last that fits the log (a suffix of the file's, where a truncation's leftovers sit) are to be taken as left by
    one (verify's ``_Leftovers``; describe passes over only the last entry)."""
    found = truncation_bound(partition_dir, log_path, base_offset)
    if found is None:
        return None
    import numpy as np

    bound, words = found
    past = np.flatnonzero(np.asarray(offsets) >= bound)
    return (int(past[0]), words) if past.size else None


def truncation_bound(partition_dir: PartitionDir, log_path: str, base_offset: int) -> tuple[int, str] | None:
    """``(offset, words)``: the lowest offset where a follower's truncation may have cut the active segment at
    ``log_path`` (base ``base_offset``), the lower of the checkpointed high watermark and the first leader epoch
    starting inside it bar the log's first (see :func:`first_entry_past_truncation_bound`), and words naming it;
    None when ``log_path`` is not the partition's active segment or neither is known. The index entries below it
    are a prefix of each index file (a truncation left none there), sorted as the broker wrote them."""
    if not partition_dir.is_active_segment(log_path):
        return None
    bounds = []
    if partition_dir.high_watermark is not None:
        bounds.append((partition_dir.high_watermark, f"the high watermark {partition_dir.high_watermark}"))
    starts = [e for e in partition_dir.leader_epochs[1:] if e.start_offset >= base_offset]
    if starts:
        bounds.append((starts[0].start_offset, f"offset {starts[0].start_offset}, where leader epoch "
                                               f"{starts[0].epoch} starts"))
    return min(bounds) if bounds else None


def active_segment_files(partition_dir: PartitionDir) -> set[str]:
    """The paths of the active segment's ``.log`` and index files (none when it has no segment)."""
    segment = partition_dir.active_segment
    if segment is None:
        return set()
    return {p for p in (segment.log_path, segment.index_path, segment.timeindex_path, segment.txnindex_path) if p}


def _with_replaced_files(partition_dir: PartitionDir) -> PartitionDir | None:
    """``partition_dir`` as its listing saw it, for work done again because a local segment's name holds another
    file than the listing saw (by device and inode: the log cleaner renamed its compacted copy in); None when no
    name does. Each segment whose listed file was renamed ``.deleted`` (the cleaner's originals, retention's
    oldest) is taken under that name, with its side files, so that the work reads the files it listed; a replaced
    one whose original is gone already is taken as it is now (size, time, inode)."""
    if not _fs.is_local(partition_dir.filesystem):
        return None
    segments = list(partition_dir.segments)
    replaced = False
    for i, segment in enumerate(segments):
        if segment.identity is None:
            continue
        try:
            now = os.stat(segment.log_path)
        except OSError:
            now = None
        if now is not None and (now.st_dev, now.st_ino) == segment.identity:
            continue
        replaced = replaced or now is not None
        kept = _listed_file_deleted(segment)
        if kept is not None:
            segments[i] = kept
        elif now is not None:
            segments[i] = dataclasses.replace(segment, log_size=now.st_size, mtime_ms=now.st_mtime_ns // 1_000_000,
                                              identity=(now.st_dev, now.st_ino))
    return _replace(partition_dir, segments=tuple(segments)) if replaced else None


def _listed_file_deleted(segment: SegmentFiles) -> SegmentFiles | None:
    """``segment`` under its ``.deleted`` names when its listed ``.log`` is there (same device and inode), else
    None. Side files without a ``.deleted`` copy are left out (rebuilt from the log when needed)."""
    try:
        info = os.stat(segment.log_path + ".deleted")
    except OSError:
        return None
    if (info.st_dev, info.st_ino) != segment.identity:
        return None

    def side(path: str | None) -> str | None:
        return path + ".deleted" if path is not None and os.path.exists(path + ".deleted") else None

    return dataclasses.replace(segment, log_path=segment.log_path + ".deleted",
                               index_path=side(segment.index_path), timeindex_path=side(segment.timeindex_path),
                               txnindex_path=side(segment.txnindex_path))


def _listing(partition_dir: PartitionDir) -> tuple:
    """What a partition's planning read depends on in its folder listing: each segment's files, sizes and times."""
    return tuple((s.base_offset, s.log_path, s.log_size, s.mtime_ms, s.index_path, s.timeindex_path,
                  s.txnindex_path, s.from_swap, s.identity) for s in partition_dir.segments)


def _replace(partition_dir: PartitionDir, **changes) -> PartitionDir:
    from dataclasses import replace

    return replace(partition_dir, **changes)


def _expand(pattern: str) -> tuple[pafs.FileSystem, list[str], bool]:
    """Paths matching ``pattern`` (``*``, ``?``, ``[...]`` per path component, fnmatch rules), sorted, and whether
    it is a glob: judged on the path, after a URI's query (``s3://b/k?endpoint_override=...``) was parsed off."""
    filesystem, normalized = _fs.open_filesystem(pattern)
    if not _GLOB_CHARS.search(normalized):
        return filesystem, [normalized], False
    absolute = normalized.startswith("/")
    parts = [p for p in normalized.split("/") if p]
    current = ["/" if absolute else ""]
    for part in parts:
        following = []
        for base in current:
            if _GLOB_CHARS.search(part):
                try:
                    listing = _fs.list_dir(base or ".", filesystem)
                except LayoutError:
                    continue
                following.extend(e.path for e in listing if fnmatch.fnmatchcase(e.name, part))
            else:
                following.append(_fs.join(base, part) if base else part)
        current = following
    matches = [p for p in current if _fs.stat(p, filesystem) is not None]
    return filesystem, sorted(set(matches)), True


def _looks_like_partition_dir(entries: Sequence[_fs.FileEntry]) -> bool:
    names = {e.name for e in entries if not e.is_dir}
    return any(_SEGMENT_NAME.match(n) or _SNAPSHOT_NAME.match(n) for n in names) or bool(
        names & {ckpt.LEADER_EPOCH_CHECKPOINT, ckpt.PARTITION_METADATA})


def _found_key(path: str, filesystem):
    """What identifies a partition folder found by discovery: a local folder's device and inode, which no symlink
    or bind mount changes (a log dir or partition folder given under two names is read once: it was read as two
    replicas, doubling a ``replicas=all`` read and retention's counts); else the store's path."""
    if _fs.is_local(filesystem):
        try:
            status = os.stat(path)
        except OSError:  # gone meanwhile: as named
            return os.path.abspath(path)
        return status.st_dev, status.st_ino
    return path


def _keep(found: dict, key, pd: PartitionDir) -> None:
    """Keep ``pd`` for folder ``key`` unless the folder is already found: then the first name it was found by stays,
    but a whole partition (a folder or log dir given) replaces just some of its ``.log`` files given before it
    (paths are a union, in any order)."""
    existing = found.get(key)
    if existing is None or (existing.given_files and not pd.given_files):
        found[key] = pd


def _check_one_store(found: dict, key: str, filesystem, given) -> None:
    """Paths name a partition within its store (an object store's ``bucket/key``, without the endpoint): the same
    path found again in another store (two backups at one bucket and prefix on two endpoints) is refused, as one
    would otherwise silently replace the other. ``key``: :func:`_found_key`'s."""
    existing = found.get(key)
    if existing is not None and not _fs.same_store(existing.filesystem, filesystem):
        raise LayoutError(f"{_fs.redact(given)}: {existing.path} is also found in another store given (another "
                          "endpoint or filesystem holding the same bucket and key): read them in separate calls")


def _discover_tiered(found: dict, left_out: dict, remote: list, path: str, filesystem, given,
                     select: Callable[[str, int], bool] | None, key_ring=None, copy_states=None) -> None:
    """Read the remote partition folders :func:`tiered.tiered_partition_folders` found at or under ``path`` into
    ``found``; those ``select`` leaves out into ``left_out``. ``copy_states(topic id, partition)``: what the
    cluster's ``__remote_log_metadata`` says of a partition's copies (see :func:`read_tiered_partition`)."""
    chosen = []
    for folder in remote:
        if select is not None and folder.path != path and not select(folder.topic, folder.partition):
            left_out[_found_key(folder.path, filesystem)] = (folder.topic, folder.partition, folder.path)
        else:
            chosen.append(folder)
    root = None if len(remote) == 1 and remote[0].path == path else path

    def read(folder):
        states = copy_states(folder.topic_id, folder.partition) if copy_states is not None else None
        return read_tiered_partition(folder, filesystem, root=root, key_ring=key_ring, copy_states=states)

    for folder, pd in zip(chosen, _fs.map_files(read, chosen, [filesystem])):
        key = _found_key(folder.path, filesystem)
        _check_one_store(found, key, filesystem, given)
        _keep(found, key, pd)


def _discover_emptied(found: dict, left_out: dict, emptied: list, path: str, filesystem, given,
                      select: Callable[[str, int], bool] | None, metadata_read, refusal: str | None) -> set[str]:
    """Folders holding no file (:func:`tiered.emptied_folders` of ``path``, or where a store holding other
    partitions' copies lacks one's: :func:`tiered.unfound_partition_folders`) as the tiered-storage partitions whose
    copies ``metadata_read`` (the cluster's ``__remote_log_metadata``) lists live and no copy found holds: each an
    empty partition whose live copies are all missing (:func:`read_tiered_partition`), which reads lose (planning's
    data loss) as they lose some copies missing. A store whose copies are all gone, or a partition's, is the same
    loss as one missing some. Each partition is taken by the first folder that could hold it. Without a live copy
    the folders could hold, ``path`` is refused (``refusal``) as without metadata, or passed over (``refusal``
    None: a glob matched it, or it holds copies). Returns the folders that stand for a partition."""
    live = metadata_read.live_partitions() if metadata_read is not None and hasattr(
        metadata_read, "live_partitions") else []
    taken = {(pd.topic_id, pd.partition) for pd in found.values() if pd.tiered is not None}
    matched = []
    for folder in emptied:
        for topic, topic_id, partition in live:
            if (topic_id, partition) not in taken and folder.could_hold(topic, topic_id, partition):
                taken.add((topic_id, partition))
                matched.append((folder, topic, topic_id, partition))
    if not matched:
        if refusal is not None:
            raise LayoutError(refusal + ("; __remote_log_metadata lists no live copy it could hold"
                                         if metadata_read is not None else ""))
        return set()
    for folder, topic, topic_id, partition in matched:
        key = (_found_key(folder.path, filesystem), topic_id, partition)
        if select is not None and not (folder.path == path and folder.names_a_partition) and not select(topic,
                                                                                                       partition):
            left_out[key] = (topic, partition, folder.path)
            continue
        _check_one_store(found, key, filesystem, given)
        states = metadata_read.copy_states(topic_id, partition)
        pd = read_tiered_partition(tiered.TieredPartitionFolder(folder.path, topic, partition, topic_id, folder.layout,
                                                                ()),
                                   filesystem, root=None if folder.path == path and folder.names_a_partition
                                   else path, copy_states=states)
        note = (f"{folder.path} holds no tiered-storage copy of {topic}-{partition}, whose live copies "
                "__remote_log_metadata lists: read as the store that lost them")
        _keep(found, key, _replace(pd, notes=pd.notes + (note,)))
    return {folder.path for folder, _, _, _ in matched}


def refuse_empty_path(given: str | os.PathLike) -> None:
    """An empty (or blank) path, an unset variable's ``"$DIR"``, is a :class:`LayoutError`: not the working
    directory, as ``os.stat("")`` and Spark's ``load("")`` refuse it too."""
    if not str(given).strip():
        raise BadPathError(f"an empty path ({str(given)!r}) where a log dir, topic-partition dir, .log file or glob "
                          "was expected")


def discover(paths: str | os.PathLike | Sequence[str | os.PathLike],
             skipped: list[tuple[str, str]] | None = None, *, select: Callable[[str, int], bool] | None = None,
             unselected: list[tuple[str, int, str]] | None = None, key_ring=None,
             remote_log_metadata: Callable[[list[PartitionDir]], Any] | None = None,
             partition_errors: bool = False, log_dirs: list[str] | None = None) -> list[PartitionDir]:
    """Every partition replica under ``paths``: log dirs, topic-partition dirs, single ``.log`` files, or globs
    of those (local or any pyarrow filesystem URI). The same topic-partition under several log dirs (several
    brokers' copies) is returned once per copy: see :func:`choose_replicas`. Sorted by (topic, partition, path).
    ``skipped``, when given, gets ``(path, reason)`` for every folder of a log dir that is not read (``-delete``,
    ``-future``, ``-stray``, names that are not ``<topic>-<partition>``). ``select`` (topic, partition) chooses
    which partition folders of a log dir are read (:func:`read_log_dir`); ``unselected``, when given, gets
    ``(topic, partition, path)`` for the others. Partition dirs and files given as paths are always read.
    ``key_ring`` (:class:`kafkaseg.storage.encryption.KeyRing`): the private keys that open tiered-storage copies
    stored encrypted. ``remote_log_metadata``: called, when tiered-storage copies and log dirs holding
    ``__remote_log_metadata`` partitions are both found, with those partitions (read even where ``select`` leaves
    them out, and then still left out), before the copies are read; what it returns tells, by its
    ``copy_states(topic id, partition)``, which copies are live (see :func:`read_tiered_partition`), and by its
    ``live_partitions()``, ``(topic, topic id, partition)`` with live copies, which partitions a path holding no file
    (:func:`tiered.emptied_folders`: a store whose copies are all gone) stands for (:func:`_discover_emptied`), and
    which partitions a store holding other partitions' copies lost all of theirs (their folder left empty or gone:
    :func:`tiered.unfound_partition_folders`).
    ``partition_errors``: a log dir's or given partition folder whose segments cannot be listed as a log (a segment
    that is no readable file, a segment file named past a 64-bit long) is returned as a partition with ``error`` set
    and no segments, for a caller that reports each partition on its own (``describe``, ``verify``, ``offsets``);
    a ``.log`` file given from such a folder is that partition with the file as its only segment, read on its own
    (no ``whole``, no checkpoints). Without it that raises :class:`UnreadableSegmentError` or
    :class:`SegmentNameError`, as a read must (leaving the partition out would drop its records unsaid).
    A ``.log`` name given that is no file, and ``__remote_log_metadata`` partitions read for their copies, always
    raise. ``log_dirs``, when given, gets the path of every log dir read (where a partition moved between log dirs
    since is looked for: ``planning.moved_partition``).

    Raises :class:`LayoutError` for a path that does not exist, a glob that matches nothing, or a folder that is
    neither a log dir nor a topic-partition dir (nor, with the metadata, a store that lost live copies).
    """
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    key_ring = encryption.RingKeys.of(key_ring)  # each key file looked at once in this discovery
    futures: list = []  # (log dir, filesystem, path given, name, node id) of -future folders: _moves_ended_meanwhile
    found: dict = {}  # by _found_key
    left_out: dict = {}  # by _found_key: a folder reached twice (a dir given twice) once
    single_files: dict = {}  # _single_log_file's listings and partition reads, by folder
    # .log files given one by one, added to a folder already found: (its paths, its bases, the new segments),
    # merged into found by merge_added (once, not once a file: a glob over thousands of segments)
    added: dict = {}
    tiered_found: list = []  # _discover_tiered's arguments: read last, once the log dirs' metadata partitions are
    metadata_unread: list = []  # (path, filesystem, log dir, partition) of __remote_log_metadata folders unselected
    # (tiered.emptied_folders, path, filesystem, path given, the LayoutError refusing it) of folders holding no file:
    # stores whose copies are all gone when __remote_log_metadata lists live copies they could hold
    emptied_found: list = []
    # (tiered_partition_folders' answer, the folders it passed over, path, filesystem, path given) of paths holding
    # copies when the metadata may be read: the partitions whose copies they lack may be lost (the metadata says)
    stores_found: list = []

    def merge_added() -> None:
        for folder, (_, _, new) in added.items():
            existing = found[folder]
            merged = tuple(sorted(existing.segments + tuple(new), key=lambda s: s.base_offset))
            # the partition's context holds only if every file given is one of its segments (a stray copy like
            # restored-1054.log is not: then the files are read on their own)
            whole = existing.whole
            if whole is not None and not {s.log_path for s in merged} <= {s.log_path for s in whole.segments}:
                whole = None
            found[folder] = _replace(existing, segments=merged, whole=whole)
        added.clear()

    for given in paths:
        refuse_empty_path(given)
        filesystem, resolved, globbed = _expand(os.fspath(given) if isinstance(given, os.PathLike) else str(given))
        hint = "; several paths are given as a list, not one comma-separated string" if "," in str(given) else ""
        if not resolved:
            raise BadPathError(f"{_fs.redact(given)}: no such file or directory (or the glob matched nothing){hint}")
        not_read = []  # a glob's matches that are nothing to read (side files, other folders): not all of them
        for path in resolved:
            # a URI given as it is (not a glob's match) that cannot be reached (a timeout) is named as typed, query
            # and all, not as its store names the path
            shown = repr(_fs.redact(str(given))) if "://" in str(given) and not globbed else None
            entry = _fs.stat(path, filesystem, shown)
            if entry is None:
                raise BadPathError(f"{path}: no such file or directory{hint}")
            if not entry.is_dir:
                if not path.endswith(".log"):
                    if globbed:
                        not_read.append(path)
                        continue  # a glob may also match side files; only .log files count
                    raise BadPathError(f"{path}: not a .log segment file, topic-partition dir or log dir")
                folder = _found_key(_fs.parent(path), filesystem)
                _check_one_store(found, folder, filesystem, given)
                known = found.get(folder)
                if known is not None and known.path != _fs.parent(path):  # the folder found by another name
                    path = _fs.join(known.path, _fs.basename(path))
                pd = _single_log_file(path, entry, filesystem, key_ring, single_files, partition_errors)
                if not pd.segments:  # (partition_errors: the file is its partition's error, said once)
                    found.setdefault(folder, pd)
                    continue
                segment = pd.segments[0]
                if folder in found:  # already have this partition: add the segment (merged below)
                    if folder not in added:
                        added[folder] = ({s.log_path for s in found[folder].segments},
                                         {s.base_offset: s for s in found[folder].segments}, [])
                    known_paths, bases, new = added[folder]
                    if segment.log_path not in known_paths:
                        clash = bases.get(segment.base_offset)
                        if clash is not None:  # e.g. a restored copy next to the segment: one log cannot hold both
                            raise LayoutError(f"{segment.log_path} and {clash.log_path} both start at offset "
                                              f"{clash.base_offset}: files holding the same offsets of a partition "
                                              "cannot be read as one log; read them in separate calls")
                        known_paths.add(segment.log_path)
                        bases[segment.base_offset] = segment
                        new.append(segment)
                else:
                    found[folder] = pd
                continue
            merge_added()
            listing = _fs.settled_list_dir(path, filesystem)
            name = _fs.basename(path)
            parsed = parse_topic_partition(name)
            if parsed is not None and _looks_like_partition_dir(listing):
                folder = _found_key(path, filesystem)
                _check_one_store(found, folder, filesystem, given)
                if folder not in found or found[folder].given_files:
                    _keep(found, folder, read_partition_dir(path, filesystem, topic=parsed[0],
                                                            partition=parsed[1], entries=listing,
                                                            partition_errors=partition_errors))
                continue
            log_dir_meta = _read_log_dir_metadata(path, filesystem, listing)
            has_partitions = any(e.is_dir and parse_topic_partition(e.name) for e in listing)
            nested = [] if log_dir_meta is not None or not has_partitions else log_dirs_named_as_partitions(
                listing, filesystem, as_given=_as_given(given, path))
            if nested:  # the folder above log dirs, not one: read as one, its log dirs were empty partitions
                if globbed:
                    not_read.append(path)
                    continue
                raise LayoutError(
                    f"{path}: not a Kafka log dir (no meta.properties or checkpoints): it holds log dirs named like "
                    f"partition folders ({nested[0][0]!r} reads as a partition of a topic "
                    f"{parse_topic_partition(nested[0][0])[0]!r}): {', '.join(shown for _, shown in nested)} "
                    f"(read {'that' if len(nested) == 1 else 'those'} instead)")
            if log_dir_meta is None and not has_partitions:
                tiered_skips: list[tuple[str, str]] = []
                remote = tiered.tiered_partition_folders(path, filesystem, listing, tiered_skips)
                refusal = None if globbed else (
                    f"{path}: neither a Kafka log dir (no meta.properties, checkpoints or <topic>-<partition> "
                    "folders), a topic-partition dir, nor a tiered-storage copy (Aiven's or LocalTieredStorage's "
                    f"layout){_misnamed_partition(name, listing, _as_given(given, path)(_fs.join(path, '*.log')))}"
                    f"{log_dirs_below(listing, filesystem, as_given=_as_given(given, path))}")
                emptied = None if remote is not None or remote_log_metadata is None or _SEGMENT_NAME.match(name) \
                    else tiered.emptied_folders(path, filesystem, listing, globbed=globbed)
                if emptied is not None:  # a store whose copies are all gone? the metadata says (below)
                    emptied_found.append((emptied, path, filesystem, given, refusal))
                    continue
                if remote is not None:
                    if remote_log_metadata is None:
                        _discover_tiered(found, left_out, remote, path, filesystem, given, select, key_ring)
                        if skipped is not None:
                            skipped.extend(tiered_skips)
                    else:
                        tiered_found.append((remote, path, filesystem, given))
                        stores_found.append((remote, tiered_skips, path, filesystem, given))
                    continue
                if _SEGMENT_NAME.match(name):  # a folder under a segment's name, given or matched by a glob
                    raise UnreadableSegmentError("a folder, not a file", path)
                if globbed:
                    not_read.append(path)
                    continue
                raise LayoutError(refusal)
            log_dir = read_log_dir(path, filesystem, select, partition_errors=partition_errors)
            if log_dirs is not None:
                log_dirs.append(path)
            left_out.update((_found_key(entry[2], filesystem), entry) for entry in log_dir.unselected)
            metadata_unread.extend((entry[2], filesystem, log_dir, entry[1]) for entry in log_dir.unselected
                                   if entry[0] == REMOTE_LOG_METADATA_TOPIC)
            for pd in log_dir.partitions:
                folder = _found_key(pd.path, filesystem)
                _check_one_store(found, folder, filesystem, given)
                _keep(found, folder, pd)
            node = log_dir.meta.node_id if log_dir.meta is not None else None
            futures.extend((path, filesystem, given, name, node) for name, _ in log_dir.skipped
                           if name.endswith("-future"))
            if skipped is not None:
                skipped.extend((_fs.join(path, name), reason) for name, reason in log_dir.skipped
                               if name != "(log dir)")
        if not_read and len(not_read) == len(resolved):  # (a glob matching nothing at all is refused above)
            matched = ", ".join(not_read[:5]) + (f" and {len(not_read) - 5} more" if len(not_read) > 5 else "")
            raise LayoutError(f"{_fs.redact(given)}: the glob matched no log dir, topic-partition dir or .log file "
                              f"(it matched {matched}){hint}")
    merge_added()
    copy_states = None
    metadata_read = None
    if (tiered_found or emptied_found) and remote_log_metadata is not None:
        metadata = [pd for pd in found.values() if pd.topic == REMOTE_LOG_METADATA_TOPIC and pd.tiered is None]
        for folder, filesystem, log_dir, number in metadata_unread:
            metadata.append(read_partition_dir(folder, filesystem, log_dir=log_dir, topic=REMOTE_LOG_METADATA_TOPIC,
                                               partition=number))
        if metadata:
            metadata_read = remote_log_metadata(metadata)
            copy_states = metadata_read.copy_states
    for remote, path, filesystem, given in tiered_found:
        _discover_tiered(found, left_out, remote, path, filesystem, given, select, key_ring, copy_states)
    for emptied, path, filesystem, given, refusal in emptied_found:
        _discover_emptied(found, left_out, emptied, path, filesystem, given, select, metadata_read, refusal)
    for remote, passed_over, path, filesystem, given in stores_found:
        standing: set[str] = set()
        if metadata_read is not None:  # where the partitions whose copies it lacks could have been
            unfound = tiered.unfound_partition_folders(path, remote, [p for p, _ in passed_over], filesystem)
            standing = _discover_emptied(found, left_out, unfound, path, filesystem, given, select, metadata_read,
                                         None)
        if skipped is not None:
            skipped.extend(entry for entry in passed_over if entry[0] not in standing)
    _moves_ended_meanwhile(found, futures, select, partition_errors)
    if unselected is not None:
        unselected.extend(sorted((entry for key, entry in left_out.items() if key not in found)))
    return sorted(found.values(), key=lambda p: (p.topic, p.partition, p.path))


def _moves_ended_meanwhile(found: dict, futures: list, select: Callable[[str, int], bool] | None,
                           partition_errors: bool = False) -> None:
    """Add to ``found`` the partitions whose move between log dirs ended while discovery read them. The broker
    ends a move by renaming the destination's ``<tp>.<id>-future`` folder to ``<tp>``, then the source's ``<tp>``
    to ``<tp>.<id>-delete`` (``LogManager.replaceCurrentWithFutureLog``): log dirs read one after the other can see
    the ``-future`` folder in one and the ``-delete`` in the other, and the partition in neither. A ``-future``
    folder whose partition no log dir of the same broker held (another broker's replica, or a tiered-storage copy,
    is not this one's) is looked for under its final name, in its own log dir, once all were read."""
    live = {(pd.topic, pd.partition, pd.log_dir_meta.node_id if pd.log_dir_meta is not None else None)
            for pd in found.values() if pd.tiered is None}
    for log_dir, filesystem, given, name, node in futures:
        parsed = renamed_partition(name)
        # (log dirs without meta.properties say no broker: those count as one; a broker with a node id is another)
        if parsed is None or (*parsed, node) in live or (select is not None and not select(*parsed)):
            continue
        final = _fs.join(log_dir, f"{parsed[0]}-{parsed[1]}")
        try:
            pd = read_partition_dir(final, filesystem, topic=parsed[0], partition=parsed[1],
                                    partition_errors=partition_errors)
        except LayoutError:
            continue  # not there (yet): the move has not ended, or the folder went again
        folder = _found_key(final, filesystem)
        _check_one_store(found, folder, filesystem, given)
        _keep(found, folder, pd)
        live.add((*parsed, node))


# -- replicas -----------------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class ReplicaChoice:
    """The replica chosen for one topic-partition, the candidates it was chosen from, and why."""

    topic: str
    partition: int
    chosen: PartitionDir
    candidates: tuple[PartitionDir, ...]
    reason: str


REPLICA_POLICIES = ("highestHighWatermark", "largestLogEndOffset", "largestSize", "first")


def other_copy_line(entry: tuple) -> str:
    """One switch to another copy of a partition, the chosen one being corrupt there: ``entry`` is ``(corrupt file,
    byte, first offset, end offset, the other copy's folder, the error)``, as a strict read lists it
    (``ScanMetrics.other_copies_read``) and a strict lookup says it (:func:`kafkaseg.lookup.from_other_copies`)."""
    path, position, first, end, copy, error = entry
    return (f"{path} is corrupt at byte {position} ({error}): offsets {first}..{end - 1} read from the copy in "
            f"{copy} instead")


def other_copies_note(topic: str, partition: int, others: Sequence[str], this: str, how: str,
                      tried: Sequence[str]) -> str:
    """The note a strict read or lookup adds to the chosen copy's error when it read from several copies and no
    other copy could supply what it needed: which copies there are (``others``, ``this`` the one chosen), ``how``
    to read another, and what was tried (each ``copy: why not``)."""
    return (f"{topic}-{partition} has other copies in the paths given, which the replica choice passed over: "
            f"{', '.join(others)}; this one is {this}. {how}"
            + (f". Tried instead, and they could not supply the rest: {'; '.join(tried)}" if tried else ""))


def check_one_incarnation(partitions: Iterable[PartitionDir]) -> None:
    """Raise :class:`LayoutError` when the partitions of one topic come from different clusters (``cluster.id`` in
    their log dirs' ``meta.properties``) or carry different topic ids (``partition.metadata``): copies of a topic
    that was deleted and recreated (a broker offline at the time keeps the old one), or of another cluster's topic
    of the same name. Their offsets are unrelated, so choosing one copy by high watermark, or reading both, would
    mix them silently; a broker never serves a log whose topic id is not the cluster's (``LogManager``'s stray
    replica check renames it ``-stray``). Partitions that record neither are not compared."""
    seen: dict[str, dict[tuple[str, str], list[str]]] = {}
    for pd in partitions:
        found = seen.setdefault(pd.topic, {})
        cluster = pd.log_dir_meta.cluster_id if pd.log_dir_meta is not None else None
        if cluster:
            found.setdefault(("cluster id", cluster), []).append(pd.path)
        if pd.topic_id:
            found.setdefault(("topic id", pd.topic_id), []).append(pd.path)
    for topic, found in sorted(seen.items()):
        for kind in ("cluster id", "topic id"):
            values = sorted((value, paths) for (k, value), paths in found.items() if k == kind)
            if len(values) > 1:
                listed = "; ".join(f"{value} in {', '.join(sorted(paths)[:3])}"
                                   + (f" (+{len(paths) - 3} more)" if len(paths) > 3 else "")
                                   for value, paths in values)
                what, unit = (("from different clusters", "cluster") if kind == "cluster id" else
                              ("from different incarnations of the topic (deleted and recreated)", "incarnation"))
                raise LayoutError(f"topic {topic!r} has copies {what}: {kind} {listed}. Their offsets are unrelated "
                                  f"and would be mixed; read the dirs of one {unit} only (leave the other's dirs out)")


def with_remote_copies(local: PartitionDir, remote: PartitionDir) -> tuple[PartitionDir | None, str]:
    """``local`` (a log dir's partition) with the segments of ``remote`` (a tiered-storage copy of it) that hold
    its offsets below its first local segment, and a sentence saying what was done; ``(None, why not)`` when they
    cannot be one log.

    A broker keeps a tiered topic's log start in ``log-start-offset-checkpoint`` below its first local segment
    (:attr:`PartitionDir.below_local_log`); the offsets between are in remote storage. Only copies reaching into
    that range are taken (a copy below the log start holds records retention deleted, one at or above the first
    local segment the local files hold), so the result reads as the broker serves it. Both must be in one store
    (one filesystem object reads every segment of a partition) and be the same topic (same topic id when both
    record one). Offsets between the copies taken, or between the newest and the first local segment, that none
    holds (a copy missing from the bucket) do not stop the merge: they are the log's lost offsets, which
    :func:`copy_gaps` finds and planning reports as data loss; copies given as files, some of which may be all
    that was given, are merged only without such a gap (as far as their recorded ends tell). Nor do live copies
    the partition's ``__remote_log_metadata`` lists that are missing from the folder: the copies there are taken,
    and the missing ones' offsets (:attr:`PartitionDir.live_copies_lost`) are planning's data loss, named by
    copy (below the copies taken too: the metadata says they are not remote retention's).
    """
    if local.given_files:
        return None, "the log dir's .log files given are read as given"
    below = local.below_local_log
    if below is None:
        return None, ("the log dir has no log start below its first segment in log-start-offset-checkpoint, so no "
                      "offset of it is in remote storage")
    if local.topic_id and remote.topic_id and local.topic_id != remote.topic_id:
        return None, f"topic id {remote.topic_id} of the remote copies is not the log dir's {local.topic_id}"
    if not _fs.same_store(local.filesystem, remote.filesystem):
        return None, "the remote copies are in another store than the log dir (read them in a call of their own)"
    start, first_local = below
    bases = [s.base_offset for s in remote.segments] + [first_local]
    taken = tuple(s for s, following in zip(remote.segments, bases[1:])
                  if s.base_offset < first_local and following > start)
    if not taken:
        return None, f"no remote copy holds offsets in [{start}, {first_local})"
    # copies given as files are read as given: some of them are not the log below the first local segment. A
    # remote folder's copies with offsets in none of them are (planning's data loss: copy_gaps)
    gaps = _gaps(taken, first_local) if remote.given_files else []
    lost = _live_copies_missing(remote, taken, start, first_local)
    if gaps or (lost and remote.given_files):
        why = (f"offsets {', '.join(f'[{a}, {b})' for a, b in gaps)} below the first local segment are in no remote "
               "copy given (copies missing from the bucket, or only some given)") if gaps else ""
        if lost:
            why += ("; " if why else "") + (
                f"offsets {', '.join(f'[{a}, {b})' for _, a, b in lost)} below the first local segment are in live "
                "copies __remote_log_metadata lists that are missing from the remote copies given")
        return None, why
    first_copy = max(start, taken[0].base_offset)
    note = (f"offsets [{first_copy}, {first_local}) are read from {len(taken)} tiered-storage copies in "
            f"{remote.path}, below the first local segment")
    retained = min([first_copy] + [a for _, a, _ in lost])  # (below a live copy missing: retention's)
    if retained > start:
        note += (f"; [{start}, {retained}) are in no copy (remote retention deleted them after "
                 "log-start-offset-checkpoint was written: the log now starts at the first copy)")
    if lost:
        note += ("; live copies __remote_log_metadata lists are missing from the bucket, their offsets lost: "
                 + ", ".join(f"{segment_id} (offsets {a}-{b - 1})" for segment_id, a, b in lost))
    told = ()
    if remote.copy_states is not None:  # what the metadata decided, said where the merged partition is reported
        told = tuple(n for n in remote.notes if "__remote_log_metadata" in n)
        dead = sum(1 for n in told if n.startswith("ignored "))
        note += (f"; which copies are live is from __remote_log_metadata ({remote.copy_states.source}): "
                 f"{dead} copies it says are dead left out")
    merged = _replace(local, segments=taken + local.segments, remote_below=remote,
                      notes=local.notes + told + (note,), live_copies_lost=tuple(lost),
                      lost_copy_states=remote.copy_states,
                      filesystem=tiered.chunked_filesystem(local.filesystem,
                                                           tiered.served_decompressed(remote.filesystem)))
    return merged, note


def live_copies_lost_below(local: PartitionDir, remote: PartitionDir) -> tuple[tuple[str, int, int], ...]:
    """``(segment id, first, end)`` of the offsets below ``local``'s first segment, from its checkpointed log
    start, that live copies ``remote``'s ``__remote_log_metadata`` lists held and none of ``remote``'s copies
    holds (see :func:`with_remote_copies`); empty without metadata or offsets below the local log."""
    below = local.below_local_log
    if below is None or remote.copy_states is None:
        return ()
    start, first_local = below
    bases = [s.base_offset for s in remote.segments] + [first_local]
    taken = tuple(s for s, following in zip(remote.segments, bases[1:])
                  if s.base_offset < first_local and following > start)
    return tuple(_live_copies_missing(remote, taken, start, first_local))


def _live_copies_missing(remote: PartitionDir, taken: Sequence[SegmentFiles], start: int,
                         end: int) -> list[tuple[str, int, int]]:
    """``(segment id, first, end)`` of the offset ranges in ``[start, end)`` that live copies the partition's
    ``__remote_log_metadata`` (``remote.copy_states``) lists held and none of ``taken`` holds: copies missing from
    the bucket (or from the paths given), whose offsets only they held. A copy of ``taken`` holds up to its
    recorded end (Aiven's manifest), else up to the end the metadata records for it (a LocalTieredStorage copy
    records none), else up to the next one."""
    states = remote.copy_states
    if states is None:
        return []
    following = [s.base_offset for s in taken[1:]] + [end]

    def held_end(segment: SegmentFiles, next_base: int) -> int:
        if segment.remote_end is not None:
            return segment.remote_end + 1
        # (a copy's name is <base>-<segment id>.log; the base has no '-')
        known = states.copies.get(_fs.basename(segment.log_path).split("-", 1)[-1][:-len(".log")])
        return known.end_offset + 1 if known is not None and known.dead is None else next_base

    held = [(s.base_offset, held_end(s, next_base)) for s, next_base in zip(taken, following)]
    lost = []
    for copy in states.live():
        low, high = max(copy.start_offset, start), min(copy.end_offset + 1, end)
        for a, b in sorted(held):
            if low >= high:
                break
            if a <= low < b:
                low = b
            elif low < a < high:
                lost.append((copy.segment_id, low, a))
                low = b
        if low < high:
            lost.append((copy.segment_id, low, high))
    return sorted(set(lost), key=lambda entry: (entry[1], entry[2], entry[0]))


class CopyGap(NamedTuple):
    """Offsets ``[first, end)`` of a tiered topic that no file holds, between two tiered-storage copies or between
    the newest copy and the log dir's first segment (see :func:`copy_gaps`)."""

    first: int
    end: int
    before: str  # the copy they follow (its .log)
    after: str  # the copy, or the log dir's first segment, that starts at ``end`` (its .log)
    after_local: bool  # whether ``after`` is the log dir's first segment
    # ``after``'s base offset: ``end`` unless the gap was clipped to a range read (or to what is said otherwise)
    after_base: int

    def describe(self) -> str:
        """The sentence that names the gap and its neighbours."""
        after = "the log dir's first segment" if self.after_local else "the next copy"
        # (the next copy by name: it is in the same folder)
        following = self.after if self.after_local else _fs.basename(self.after)
        return (f"offsets [{self.first}, {self.end}) are in no tiered-storage copy: the copy "
                f"{_fs.redact(self.before)} ends before them and {after}, {_fs.redact(following)}, starts at "
                f"{self.after_base}. A tiered topic is never compacted (Kafka refuses remote storage with "
                "cleanup.policy=compact), so they were deleted: a copy missing from the bucket (or the copies "
                "given are older than the log dir, or only some of them)")

    def outside(self, ranges: Iterable[tuple[int, int]]) -> list["CopyGap"]:
        """The pieces of this gap outside every ``[a, b)`` of ``ranges`` (offsets said otherwise: live copies
        ``__remote_log_metadata`` lists that are missing, named by copy)."""
        pieces, first = [], self.first
        for a, b in sorted(ranges):
            if b <= first or a >= self.end:
                continue
            if a > first:
                pieces.append(self._replace(first=first, end=a))
            first = max(first, b)
        if first < self.end:
            pieces.append(self._replace(first=first))
        return pieces


def copy_gaps(partition_dir: PartitionDir, lo: int | None = None, hi: int | None = None, *,
              end_of: Callable[[int], int] | None = None) -> list[CopyGap]:
    """The offsets in ``[lo, hi)`` (default: all) of ``partition_dir`` (a tiered-storage copy's partition, or a log
    dir's extended with its copies: :func:`with_remote_copies`) that are in no copy and no local segment: after a
    copy's last offset and below the base of the segment that follows it (the next copy, or the first local
    segment), each clipped to ``[lo, hi)``.

    Kafka copies a partition's rolled segments in offset order (``RemoteLogManager.copyLogSegmentsToRemote``, each
    copy from its segment's base to the next segment's base - 1) and deletes local segments only once copied, and
    a tiered topic is never compacted: live copies and the local log leave no offset out. Remote retention deletes
    from the oldest copy up (``cleanupExpiredRemoteLogSegments``), moving the log start: what is below the first
    copy is not a gap. A copy's end is its recorded one (an Aiven manifest's ``endOffset``), else the offset after
    its last batch, from ``end_of(i)`` (segment ``i``'s; default: one index interval of it read here). Copies given
    as files are read as given: no gap (empty)."""
    from kafkaseg.storage.segment import log_end_offset

    if partition_dir.given_files:
        return []
    segments = partition_dir.segments
    gaps = []
    for i, (segment, following) in enumerate(zip(segments, segments[1:])):
        if segment.tiered is None:
            break  # (local segments follow the copies: a hole among them is the log dir's, as without copies)
        if (hi is not None and segment.base_offset >= hi) or (lo is not None and following.base_offset <= lo):
            continue
        if segment.remote_end is not None:
            end = segment.remote_end + 1
        elif end_of is not None:
            end = end_of(i)
        else:
            end = log_end_offset(segment, filesystem=partition_dir.filesystem)
        first, last = max(end, lo if lo is not None else end), min(following.base_offset,
                                                                  hi if hi is not None else following.base_offset)
        if first < last:
            gaps.append(CopyGap(first, last, segment.log_path, following.log_path, following.tiered is None,
                                following.base_offset))
    return gaps


class FoundGap(NamedTuple):
    """A :class:`CopyGap` of the partitions found (:func:`gaps_in_copies`), and what it means for reads."""

    partition: PartitionDir  # what it is said of: the copies' folder, or a log dir's partition read with them
    gap: CopyGap
    # True: reads of the log dir's partition with its copies lose the offsets; False: a log dir given still holds
    # them (``holder``); None: reads of the copies lose them, and no log dir read with them says whether the
    # broker's still holds them
    lost: bool | None
    holder: str | None = None

    def describe(self) -> str:
        if self.lost:
            return f"{self.gap.describe()}; reads lose them (a DataLossError; failOnDataLoss=false skips them)"
        if self.lost is False:
            return f"{self.gap.describe()}; the log dir's {_fs.redact(self.holder or '')} still holds them"
        return (f"{self.gap.describe()}; reads of these copies lose them (a DataLossError; failOnDataLoss=false "
                "skips them), and the broker's log dir, not read with them, may still hold them")


def gaps_in_copies(partitions: Sequence[PartitionDir]) -> list[FoundGap]:
    """The :func:`copy_gaps` of the tiered-storage copies among ``partitions`` (what ``describe`` and ``verify`` say
    of each partition): between a folder's copies, said of the folder, and those of a log dir's partition read
    with its copies (:func:`with_remote_copies`: from its checkpointed log start, below which are remote
    retention's deletions), said of the log dir's partition. A gap between copies that such a log dir's
    partition reads (below its first segment) is said of that partition only; one a log dir given still holds is
    ``lost`` False. A copy whose end cannot be read is passed over (its own verification says why)."""
    logs: dict[tuple[str, int], list[PartitionDir]] = {}
    for pdir in partitions:
        if pdir.tiered is None and pdir.segments and not pdir.given_files:
            logs.setdefault((pdir.topic, pdir.partition), []).append(pdir)
    ends: dict[str, int | None] = {}

    def end_of(pdir: PartitionDir):
        def end(i: int) -> int:
            segment = pdir.segments[i]
            if segment.log_path not in ends:
                from kafkaseg.storage.segment import log_end_offset

                try:
                    ends[segment.log_path] = log_end_offset(segment, filesystem=pdir.filesystem)
                except KafkaSegError:
                    ends[segment.log_path] = None
            found = ends[segment.log_path]
            return pdir.segments[i + 1].base_offset if found is None else found  # (unknown: no gap said)
        return end

    found: list[FoundGap] = []
    for remote in partitions:
        if remote.tiered is None or remote.given_files:
            continue
        # offsets of live copies __remote_log_metadata lists that are missing from the folder: said of each copy
        # (tiered.LIVE_COPIES_MISSING, verify's report_live_copies_missing), not again as offsets in no copy
        states = remote.copy_states
        said = [(c.start_offset, c.end_offset + 1) for c in states.live() if c.segment_id not in states.found] if (
            states is not None and states.found is not None and states.unreadable is None) else []
        own = logs.get((remote.topic, remote.partition), [])
        merged = [(d, m) for d, m in ((d, with_remote_copies(d, remote)[0]) for d in own) if m is not None]
        for log, whole in merged:
            found.extend(FoundGap(log, piece, True) for gap in copy_gaps(whole, whole.log_start_offset,
                                                                         end_of=end_of(whole))
                         for piece in gap.outside(said))
        start = max((d.log_start_offset for d in own), default=None)
        for gap in (piece for gap in copy_gaps(remote, end_of=end_of(remote)) for piece in gap.outside(said)):
            holder = next((d for d in own if d.segments[0].base_offset <= gap.first), None)
            if holder is not None:
                found.append(FoundGap(remote, gap, False, holder.path))
            elif not merged and (start is None or gap.end > start):
                found.append(FoundGap(remote, gap, None))
            # (else said of the log dir's partition read with the copies, or below its log start: retention's)
    return found


def _gaps(taken: Sequence[SegmentFiles], end: int) -> list[tuple[int, int]]:
    """The offset ranges from the first of ``taken`` (consecutive remote copies) up to ``end`` that none of them
    holds, as far as their recorded ends tell (a LocalTieredStorage copy records none: it is taken to run up to
    the next one). Offsets below the first copy are not a gap: remote retention moves the log start there."""
    gaps = []
    following = [s.base_offset for s in taken[1:]] + [end]
    for segment, next_base in zip(taken, following):
        if segment.remote_end is not None and segment.remote_end + 1 < next_base:
            gaps.append((segment.remote_end + 1, next_base))
    return gaps


def read_partition_again(path: str, filesystem, *, topic: str, partition: int,
                         remote_path: str | None = None, key_ring=None, copy_states=None) -> PartitionDir:
    """A partition folder read again (``read_partition_dir``), extended below by the tiered-storage copies in
    ``remote_path``, read again too, when it was (:func:`with_remote_copies`): what a read whose planned file is
    gone plans from. ``filesystem`` reaches both (they are in one store); encrypted copies open with ``key_ring``
    or the data keys ``filesystem`` already holds. ``copy_states``: the ``__remote_log_metadata`` verdicts the
    plan applied to the tiered-storage copies (``tiered.CopyStates.as_planned``: its dead copies), so the same
    ones are left out (of ``path``'s copies when it is a tiered-storage copy's folder, else of ``remote_path``'s)."""
    pdir = read_partition_dir(path, filesystem, topic=topic, partition=partition, key_ring=key_ring, again=True,
                              copy_states=copy_states if remote_path is None else None)
    if remote_path is None:
        return pdir
    try:
        remote = read_partition_dir(remote_path, filesystem, key_ring=key_ring, again=True, copy_states=copy_states)
    except KafkaSegError:
        return pdir  # the copies are gone: the log dir alone says what is lost
    return with_remote_copies(pdir, remote)[0] or pdir


class ChoiceLogEnds:
    """The log ends :func:`choose_replicas` read (:func:`partition_log_end_offset`, -1 where unreadable), kept by a
    stream for its later choices: every trigger chooses the replicas of a new listing, and reading the chosen
    copy's log end again at each (a stream's position in the last segment) turned an idle trigger, which reads no
    file, into a walk of every partition's last segment. Shared with :func:`find_log_end` (the walk of a stream's
    range of the copy chosen, right after), which takes one and keeps its own.

    A log end is taken (:meth:`taken`) for the very :class:`PartitionDir` it was read of (one listing: the choice a
    trigger made stands for its range and the plan of its micro-batch), or for a copy listed again with the same
    last segment (name, size, mtime, file), high watermark, evidence and ``maxBatchBytes`` when that segment had not
    changed for ``racy_ms`` when it was read (an append within the mtime's granularity, or to a preallocated
    segment that keeps its size, would otherwise go unseen). Whether a copy reaches a position (:meth:`reached`)
    asks less: an append cannot take a log below a position it reached, so a log end read at or past it of the
    same last segment file (same name, base offset and file: not the cleaner's copy renamed in), no smaller now
    (not cut since), under the same leader epochs (not truncated and written again by a new leader) and with the
    same evidence, answers, also of a segment written since (a live stream's next trigger, and its plan on a new
    listing). One entry per copy's folder: the newest."""

    def __init__(self, racy_ms: float):
        self.racy_ms = racy_ms
        self._found: dict[str, _ReadEnd] = {}  # by folder

    @staticmethod
    def _key(pdir: PartitionDir, read_to: int | None, max_batch_bytes: int | None) -> tuple:
        last = pdir.segments[-1]
        return (last.log_path, last.base_offset, last.log_size, last.mtime_ms, last.identity, last.tiered,
                pdir.high_watermark, pdir.is_active_segment(last.log_path), pdir.reached_end(read_to), read_to,
                max_batch_bytes, pdir.leader_epochs)

    def taken(self, pdir: PartitionDir, read_to: int | None,
              max_batch_bytes: int | None = DEFAULT_MAX_BATCH_BYTES) -> int | None:
        """``pdir``'s log end as read before, where that stands (see the class); else None."""
        found = self._found.get(pdir.path) if pdir.segments else None
        if found is None or found.key != self._key(pdir, read_to, max_batch_bytes):
            return None
        return found.end if found.pdir is pdir or 0 < pdir.segments[-1].mtime_ms < found.read_ms - self.racy_ms \
            else None

    def reached(self, pdir: PartitionDir, read_to: int | None, position: int) -> bool:
        """Whether a log end read before says ``pdir``'s log reaches ``position`` (see the class)."""
        found = self._found.get(pdir.path) if pdir.segments else None
        if found is None or found.end < position:
            return False
        last = pdir.segments[-1]
        log_path, base, size, mtime_ms, identity = found.key[:5]
        same_file = (identity == last.identity if identity is not None
                     else (size, mtime_ms) == (last.log_size, last.mtime_ms))
        return (same_file and (log_path, base) == (last.log_path, last.base_offset) and last.log_size >= size
                and found.key[9] == read_to and found.key[11] == pdir.leader_epochs and last.tiered is None)

    def keep(self, pdir: PartitionDir, read_to: int | None, max_batch_bytes: int | None, end: int,
             read_ms: float) -> None:
        """Keep ``end``, ``pdir``'s log end as a walk begun at ``read_ms`` found it."""
        if pdir.segments:
            self._found[pdir.path] = _ReadEnd(pdir, self._key(pdir, read_to, max_batch_bytes), read_ms, end)

    def log_end(self, pdir: PartitionDir, read_to: int | None, read: Callable[[], int]) -> int:
        """``pdir``'s log end as ``read()`` reads it (the default ``maxBatchBytes``), or as read before."""
        end = self.taken(pdir, read_to)
        if end is None:
            read_ms = time.time() * 1000
            end = read()
            self.keep(pdir, read_to, DEFAULT_MAX_BATCH_BYTES, end, read_ms)
        return end


class _ReadEnd(NamedTuple):
    """A log end :class:`ChoiceLogEnds` keeps: of ``pdir`` as listed, with its inputs (``key``), read from
    ``read_ms`` on."""
    pdir: PartitionDir
    key: tuple
    read_ms: float
    end: int


def choose_replicas(partitions: Iterable[PartitionDir], policy: str = "highestHighWatermark", *,
                    with_remote: bool = True, read_to: Callable[[PartitionDir], int | None] | None = None,
                    reach: Callable[[PartitionDir], int | None] | None = None,
                    log_ends: ChoiceLogEnds | None = None) -> list[ReplicaChoice]:
    """One replica per (topic, partition).

    Policies: ``highestHighWatermark`` (the copy whose log dir checkpointed the highest high watermark; ties, and
    copies without one, fall back to the largest log end offset), ``largestLogEndOffset`` (reads one index interval
    of each copy's last segment), ``largestSize`` (most bytes of segments), ``first`` (first in the given order).
    Remaining ties go to the first copy in the given order.

    Tiered-storage copies (``PartitionDir.tiered``) are not replicas of a log dir's partition but its older
    segments: with ``with_remote`` the chosen log dir replica is extended below by the first of them that fits
    (:func:`with_remote_copies`). Without a log dir replica, one of them is chosen as above.

    ``read_to``: a stream's evidence that it read a copy's log to an offset (:meth:`PartitionDir.reached_end`), per
    copy: a copy's log end is compared with it, as the stream reads that copy (a compacted follower's last batch
    past a gap above its high watermark is then the broker's, not a corrupt base offset that loses the tie). And a
    copy whose log ends below it is behind, whatever its checkpointed high watermark says (a follower's lags: the
    stream read the log there): when the policy's choice is such a copy, the policy chooses again among the copies
    that are not (None for a copy: its high watermark is at or past the position, or the position says nothing of
    its log; taken to reach it, without reading its files); with none left, the policy's choice stands (the stream
    says the loss). ``reach``: the stream's position for a copy whatever its high watermark (None where it says
    nothing of its log), which the copy chosen must reach in the same way: a copy whose high watermark is at or
    past it but whose files end below it (a crash's unflushed tail under a checkpointed high watermark) is behind
    too. Its log end is read only when its last segment's name (the listing's) is below the position: one index
    interval of the chosen copy's last segment, which a tie of high watermarks reads for every tied copy anyway.
    Without ``read_to`` (a batch read) the policy alone chooses. ``log_ends``: the log ends earlier choices read,
    taken where they still stand, and where this one's are kept (:class:`ChoiceLogEnds`; a stream's).
    """
    if policy not in REPLICA_POLICIES:
        from kafkaseg.errors import InvalidOptionError

        raise InvalidOptionError(f"replica policy {policy!r} is not one of {', '.join(REPLICA_POLICIES)}")
    partitions = list(partitions)
    check_one_incarnation(partitions)
    groups: dict[tuple[str, int], list[PartitionDir]] = {}
    for pd in partitions:
        groups.setdefault((pd.topic, pd.partition), []).append(pd)
    choices = []
    for (topic, partition), found in sorted(groups.items()):
        copies = [c for c in found if c.tiered is None] or found
        remote = [c for c in found if c.tiered is not None] if len(copies) < len(found) else []
        choice = _choose_one(topic, partition, copies, policy, read_to, reach, log_ends)
        if remote and with_remote:
            chosen, how = choice.chosen, []
            for candidate in remote:
                merged, why = with_remote_copies(chosen, candidate)
                if merged is not None:
                    chosen, how = merged, [why]
                    break
                how.append(f"{candidate.path} not read: {why}")
            else:  # read alone: what live copies missing from the bucket held is lost to a read from earliest
                lost, source = next(((lost, c) for lost, c in ((live_copies_lost_below(chosen, c), c)
                                                              for c in remote) if lost), ((), None))
                if lost:
                    chosen = _replace(chosen, live_copies_lost=lost, lost_copy_states=source.copy_states)
            choice = ReplicaChoice(topic, partition, chosen, tuple(found), "; ".join([choice.reason, *how]))
        choices.append(choice)
    return choices


def _choose_one(topic: str, partition: int, copies: list[PartitionDir], policy: str,
                read_to: Callable[[PartitionDir], int | None] | None = None,
                reach: Callable[[PartitionDir], int | None] | None = None,
                log_ends: ChoiceLogEnds | None = None) -> ReplicaChoice:
    """:func:`choose_replicas` for one topic-partition's ``copies``."""
    if len(copies) == 1:
        return ReplicaChoice(topic, partition, copies[0], tuple(copies), "only replica")
    leo_cache: dict[int, int] = {}

    def leo(i: int) -> int:
        if i not in leo_cache:
            evidence = read_to(copies[i]) if read_to is not None else None

            def read() -> int:
                try:
                    return partition_log_end_offset(copies[i], read_to=evidence)
                except (CorruptDataError, LayoutError):
                    return -1

            leo_cache[i] = read() if log_ends is None else log_ends.log_end(copies[i], evidence, read)
        return leo_cache[i]

    def pick(indices: Sequence[int]) -> tuple[int, str]:
        if policy == "first":
            return indices[0], "first replica given"
        if policy == "largestSize":
            best = max(indices, key=lambda i: (copies[i].size_bytes, -i))
            return best, f"largest size ({copies[best].size_bytes} bytes)"
        if policy == "largestLogEndOffset":
            best = max(indices, key=lambda i: (leo(i), -i))
            return best, f"largest log end offset ({leo(best)})"
        hw = lambda i: copies[i].high_watermark if copies[i].high_watermark is not None else -1  # noqa: E731
        top = max(hw(i) for i in indices)
        tied = [i for i in indices if hw(i) == top]
        if len(tied) == 1:
            return tied[0], f"highest high watermark ({top})"
        best = max(tied, key=lambda i: (leo(i), -i))
        return best, (f"high watermark tie ({top if top >= 0 else 'none'}) broken by largest log end offset "
                      f"({leo(best)})")

    def short(i: int) -> int | None:
        """The stream's position when copy ``i``'s log ends below it (read with its evidence), else None. Below
        its high watermark (``reach`` alone), not read when its last segment's name is at or past the position (its
        log end is at least that)."""
        evidence = read_to(copies[i]) if read_to is not None else None
        position = evidence if evidence is not None else reach(copies[i]) if reach is not None else None
        if position is None:
            return None
        if evidence is None and copies[i].segments and copies[i].segments[-1].base_offset >= position:
            return None
        if log_ends is not None and i not in leo_cache and log_ends.reached(copies[i], evidence, position):
            return None  # (read before at or past it, and only appended to since)
        return position if leo(i) < position else None

    best, why = pick(range(len(copies)))
    position = short(best)
    if position is not None:
        # a copy whose log ends below the stream's position is behind, whatever its checkpoint says: kept to one
        # that reaches it (the stream read there), by the policy; with none, the policy's choice (the stream's loss)
        reaching = [i for i in range(len(copies)) if short(i) is None]
        if reaching:
            passed = ", ".join(f"{copies[i].path} (log end {leo(i) if leo(i) >= 0 else 'unreadable'})"
                               for i in range(len(copies)) if i not in reaching)
            best, why = pick(reaching)
            why = (f"{why} among the copies whose log reaches the stream's position {position}; ending below it: "
                   f"{passed}")
    others = ", ".join(c.path for j, c in enumerate(copies) if j != best)
    return ReplicaChoice(topic, partition, copies[best], tuple(copies), f"{why}; other replicas: {others}")


# -- offsets that need reading the log -----------------------------------------------------------------------------

def partition_log_end_offset(partition_dir: PartitionDir, *,
                             max_batch_bytes: int | None = DEFAULT_MAX_BATCH_BYTES,
                             read_to: int | None = None, offset_index=None) -> int | None:
    """The log end offset: the next offset after the last complete batch of the last segment (the last segment's
    base when it is empty); None when the partition has no segments. A batch larger than ``max_batch_bytes`` (the
    reader's ``maxBatchBytes``) is corruption, and so is a last batch whose base offset skips offsets below the high
    watermark (:func:`~kafkaseg.storage.segment.offsets_hidden_by_last_batch`) unless the files, or ``read_to``
    (see :meth:`PartitionDir.reached_end`), say the log reached past it. ``offset_index``: the last segment's, if
    the caller loaded it since the listing (where the walk starts; else loaded here)."""
    from kafkaseg.storage.segment import log_end_offset

    if not partition_dir.segments:
        return None
    active = partition_dir.is_active_segment(partition_dir.segments[-1].log_path)
    return log_end_offset(partition_dir.segments[-1], filesystem=partition_dir.filesystem,
                          offset_index=offset_index, max_batch_bytes=max_batch_bytes, active=active,
                          high_watermark=partition_dir.high_watermark if active else None,
                          reached=partition_dir.reached_end(read_to))


def unacknowledged_append(partition_dir: PartitionDir, *, max_batch_bytes: int | None = DEFAULT_MAX_BATCH_BYTES,
                          offset_index=None):
    """The active segment's final batch (a ``BatchHeader``) when it is an append a broker with
    ``log.preallocate=true`` is still writing: zeros after it to the end of the file, a bad CRC, and no offset
    below the high watermark (:func:`kafkaseg.storage.segment.torn_before_zeros`); the log ends before it. None
    otherwise. Reads about one index interval of headers and that batch. ``offset_index``: the active segment's, if
    the caller loaded it since the listing (its last entry is where the walk starts; else loaded here)."""
    from kafkaseg.errors import CorruptIndexError
    from kafkaseg.storage.offset_index import OffsetIndex
    from kafkaseg.storage.segment import torn_before_zeros, zero_filled_tail

    if not partition_dir.segments:
        return None
    seg, fs = partition_dir.segments[-1], partition_dir.filesystem
    start = 0
    index_path, index_window = index_location(seg, "index")
    if offset_index is not None:
        start = int(offset_index.positions[-1]) if len(offset_index) else 0
    elif index_path:
        try:
            index = OffsetIndex.load(index_path, seg.base_offset, fs, window=index_window)
            start = int(index.positions[-1]) if len(index) else 0
        except (LayoutError, CorruptIndexError):
            pass
    if not 0 <= start < seg.log_size:  # (an entry no batch can be at, damaged: the walk starts at the segment's)
        start = 0
    walked: list = []
    found = zero_filled_tail(seg, filesystem=fs, max_batch_bytes=max_batch_bytes, start_position=start,
                             walked=walked)
    if found is None or found[1]:
        return None
    return torn_before_zeros(seg, found[0], partition_dir.high_watermark, filesystem=fs, start_position=start,
                             max_batch_bytes=max_batch_bytes, zero_walk=walked[0])


def unchanged_since_listing(partition_dir: PartitionDir, segments: Sequence[SegmentFiles] | None = None
                            ) -> tuple[bool, bool]:
    """``(log, checkpoints)``: whether the partition folder's ``.log`` files are still ``segments`` (default: the
    partition's; its log dir's own, not tiered-storage copies read with it), the last one at its listed size, and whether its log dir's high watermark and recovery point
    checkpoints still say what was listed (False without a log dir). A listing, a stat and two small reads. The
    checkpoints are read before the folder is listed: a topic deleted and recreated, or a follower's truncation
    (which cuts the log, then checkpoints the lowered recovery point: ``LogManager.truncateTo``), in between
    rewrites them for the files listed; a live broker's append since the listing grows the last file."""
    pdir = partition_dir
    segments = pdir.segments if segments is None else segments
    # (a log dir read with its tiered-storage copies: the copies are not in the folder, and not what a broker
    # appends to or truncates)
    segments = [seg for seg in segments if seg.tiered is None]
    try:
        names = {entry.name for entry in _fs.list_dir(pdir.path, pdir.filesystem)
                 if entry.name.endswith(".log") and not entry.is_dir}
        size = _fs.stat(segments[-1].log_path, pdir.filesystem) if segments else None
    except KafkaSegError:
        return False, False
    # (no segment listed: as listed while the folder still holds no .log file, every one of them lost)
    log = (names == {_fs.basename(seg.log_path) for seg in segments}
           and (not segments or (size is not None and size.size == segments[-1].log_size)))
    if pdir.log_dir is None:
        return log, False
    try:
        checkpoints = [ckpt.read_offset_checkpoint(_fs.join(pdir.log_dir, name), pdir.filesystem).get(
            (pdir.topic, pdir.partition)) for name in (ckpt.REPLICATION_OFFSET_CHECKPOINT,
                                                       ckpt.RECOVERY_POINT_OFFSET_CHECKPOINT)]
    except KafkaSegError:
        return log, False
    return log, checkpoints == [pdir.high_watermark, pdir.recovery_point]


def acknowledged_loss_end(partition_dir: PartitionDir, log_end: int, *, walk_clean: bool,
                          as_listed: Callable[[], bool]) -> int | None:
    """The end of the offsets ``[log_end, end)`` that ``partition_dir``'s checkpoints say its broker had acknowledged
    (below the high watermark) and flushed (below the recovery point: LogManager checkpoints it after a flush) and
    that its files do not hold, or None: ``min(high watermark, recovery point)`` when both are above ``log_end``,
    the walk that found ``log_end`` met no corruption (``walk_clean``: the read reports that itself) and
    ``as_listed()`` holds (:meth:`ListingCheck.recovery_point`: a live broker that appended or rolled after the
    listing wrote the checkpoints after that, and a follower's truncation cuts the log before it lowers the
    recovery point), asked last. Not a crash's unflushed tail, which a restarted broker truncates and fetches
    again, but a lost segment file or a copy that missed it: data loss for a read to latest (planning), and what
    :func:`lost_tail` says for the tools."""
    hw, recovery_point = partition_dir.high_watermark, partition_dir.recovery_point
    if hw is None or recovery_point is None or hw <= log_end or recovery_point <= log_end or not walk_clean:
        return None
    return min(hw, recovery_point) if as_listed() else None


def acknowledged_loss_words(high_watermark: int, recovery_point: int, log_end: int, where: str | None = None) -> str:
    """What the reads' :class:`~kafkaseg.errors.DataLossError` and the tools say of offsets
    :func:`acknowledged_loss_end` finds lost (``where``: the partition's folder, when the words do not name it)."""
    of = "" if where is None else f" of {where}"
    return (f"high watermark {high_watermark} and recovery point {recovery_point} are above the log end offset "
            f"{log_end}{of}: offsets [{log_end}, {min(high_watermark, recovery_point)}) were acknowledged and flushed "
            "to disk but are not in these files (a lost segment file, a copy taken while the broker was writing "
            f"that missed them, or a tail that no longer reads as batches){COPY_AGAIN}")


#: What to do when a partition's files may be a copy of a live broker's data dir taken file by file (rsync, cp,
#: tar), which takes a folder's segments and the log dir's checkpoints at different moments: said where such a
#: copy looks like lost data, as nothing in the files tells the two apart.
COPY_AGAIN = ("; if these files are a copy of a running broker's data dir made file by file (rsync, cp), copy "
              "again from a filesystem snapshot of the whole log dir, or of a stopped broker")


def high_watermark_above_words(high_watermark: int, log_end: int, where: str | None = None) -> str:
    """What a read's plan note and the tools (``consume``, ``describe``, ``offsets``, ``retention``, ``verify``)
    say of a high watermark above the log end that is no proven loss (the recovery point not above it too, or not
    trusted: else :func:`acknowledged_loss_words`): reads and ``latest`` stop at the log end. ``where``: the
    partition's folder, when the words do not name it. (No semicolon: retention joins its notes with them.)"""
    of = "" if where is None else f" of {where}"
    return (f"high watermark {high_watermark} is above the log end offset {log_end}{of}, where reads and 'latest' "
            f"stop: offsets {log_end}..{high_watermark - 1} were acknowledged but are not in these files (an "
            "unflushed tail a crash lost, or an incomplete copy)")


def flushed_past_end(partition_dir: PartitionDir, log_end: int, *, walk_clean: bool,
                     as_listed: Callable[[], bool]) -> int | None:
    """The recovery point of ``partition_dir`` when it is above ``log_end`` while its high watermark is not (at or
    below it), else None: offsets ``[log_end, recovery point)`` the broker had flushed and the files do not hold,
    which the high watermark says no consumer had seen (a read and ``latest`` stop at it, so they lose nothing).
    A follower's truncation (``LogManager.truncateTo``: it cuts the log, then checkpoints the lowered recovery
    point) caught between the two, by a copy or a crash, or a copy that missed them. A broker's ``LogLoader``
    takes ``min(recovery point, log end)`` without a word. As :func:`acknowledged_loss_end`: only when the walk
    that found ``log_end`` met no corruption (``walk_clean``) and ``as_listed()`` holds
    (:meth:`ListingCheck.recovery_point`: a live truncation's checkpoint since the listing), asked last. What reads
    note and the tools say in :func:`flushed_above_words`."""
    hw, recovery_point = partition_dir.high_watermark, partition_dir.recovery_point
    if hw is None or recovery_point is None or hw > log_end or recovery_point <= log_end or not walk_clean:
        return None
    return recovery_point if as_listed() else None


def flushed_above_words(recovery_point: int, high_watermark: int, log_end: int, where: str | None = None) -> str:
    """What a read's plan note and the tools (``describe``, ``offsets``, ``verify``) say of a recovery point above
    the log end that the high watermark is not above (:func:`flushed_past_end`). ``where``: the partition's folder,
    when the words do not name it. (No semicolon, as :func:`high_watermark_above_words`.)"""
    of = "" if where is None else f" of {where}"
    return (f"recovery point {recovery_point} is above the log end offset {log_end}{of} and the high watermark "
            f"{high_watermark} is not: offsets {log_end}..{recovery_point - 1} were flushed to disk but are not in "
            "these files, and the high watermark says no consumer had seen them, so reads and 'latest' lose nothing "
            "(a follower's truncation caught before it checkpointed the lowered recovery point, or a copy that "
            "missed them)")


class LostTail:
    """Offsets the partition's files say its log held past where its active segment's readable batches end
    (:func:`lost_tail`): one of two kinds, with these members. :class:`JudgedTail`, with no high watermark to bound
    the log, judged by evidence and the recovery point (a strict read raises where it is ``proven``); or
    :class:`AcknowledgedLoss`, offsets below a high watermark and the recovery point above the readable end
    (always proven: a read to latest raises :class:`~kafkaseg.errors.DataLossError`, failOnDataLoss, in the same
    words). ``path`` is the active segment's ``.log``, ``position`` the byte where its readable batches end and
    ``first_offset`` the offset there; ``end_offset`` the offset after the last one lost (or possibly lost);
    ``proven`` whether they are lost (else they may never have reached the disk: a warning); ``message`` the words
    the reads and the tools say it in; :meth:`error` the error a strict read raises for it when proven."""

    __slots__ = ()

    #: what the offsets were lost with, in :meth:`summary`'s words
    lost_with = "the active segment's tail"

    path: str
    position: int
    first_offset: int
    end_offset: int
    proven: bool
    message: str

    def error(self) -> KafkaSegError:
        raise NotImplementedError

    def holds(self, offset: int) -> bool:
        return self.first_offset <= offset < self.end_offset

    def summary(self, offset: int | None = None) -> str:
        """The words every tool says it in (``describe``'s error or note, ``offsets``' stderr line, ``locate``'s
        reason): ``offsets A..B lost (or possibly lost) with the active segment's tail (<file> @ byte N): ...``, or
        for one ``offset`` in it, ``offset O was (or may have been) lost with the active segment's tail (offsets
        A..B; <file> @ byte N): ...``."""
        span, where = f"offsets {self.first_offset}..{self.end_offset - 1}", self.where
        if offset is None:
            return (f"{span} {'lost' if self.proven else 'possibly lost'} with {self.lost_with} ({where}): "
                    f"{self.message}")
        return (f"offset {offset} {'was' if self.proven else 'may have been'} lost with {self.lost_with} "
                f"({span}; {where}): {self.message}")

    @property
    def where(self) -> str:
        """Where the readable batches end, as the words name it: ``<file> @ byte N``."""
        return f"{self.path} @ byte {self.position}"

    def as_dict(self) -> dict:
        return {"file": self.path, "position": self.position, "firstOffset": self.first_offset,
                "endOffset": self.end_offset, "proven": self.proven, "message": self.message}


class _Evidenced(LostTail):
    """A :class:`LostTail` whose readable end is its ``evidence``'s
    (:class:`~kafkaseg.storage.segment.IndexedPastEnd`)."""

    __slots__ = ()

    evidence: Any

    @property
    def position(self) -> int:
        return self.evidence.end_position

    @property
    def first_offset(self) -> int:
        return self.evidence.end_offset

    def error(self) -> KafkaSegError:
        """The error a strict read raises for a proven loss at the readable end: a
        :class:`~kafkaseg.errors.LostTailError`, a ``DataLossError`` that is a ``TruncatedDataError`` naming the
        file and byte where the batches end."""
        from kafkaseg.errors import LostTailError

        return LostTailError(self.message, path=self.path, position=self.position)


@dataclass(frozen=True)
class JudgedTail(_Evidenced):
    """A :class:`LostTail` with no high watermark to bound the log (:func:`judge_tail`): ``evidence`` (index
    entries, a producer snapshot, the recovery point: :class:`~kafkaseg.storage.segment.IndexedPastEnd`, whose
    :meth:`judged` words the reads and ``kafkaseg verify`` use), judged by ``recovery_point`` unless it is not
    ``trusted`` (checkpointed again since the listing). ``proven``: the recovery point past the readable end says
    the broker had flushed them, so they are lost (a strict read raises
    :class:`~kafkaseg.errors.LostTailError` there); else they may never have reached the disk (a warning)."""

    path: str
    evidence: Any
    recovery_point: int | None
    trusted: bool

    @property
    def proven(self) -> bool:
        return self.trusted and self.evidence.flushed_below(self.recovery_point) is not None

    @property
    def end_offset(self) -> int:
        """The offset after the last one the evidence says the log held (the reads' ``end_offset`` of the skip
        or the warning)."""
        return self.evidence.lost_end(self.recovery_point) if self.proven else self.evidence.proven_end

    @property
    def message(self) -> str:
        return self.evidence.judged(self.recovery_point, trusted=self.trusted)


@dataclass(frozen=True)
class AcknowledgedLoss(LostTail):
    """A :class:`LostTail` below a high watermark: ``high_watermark`` and ``recovery_point`` both above the readable
    end (byte ``position`` of ``path``, offset ``first_offset``; :func:`acknowledged_loss_end`) say the offsets below
    both were acknowledged and flushed, so they are lost (always ``proven``): a read to latest raises
    :class:`~kafkaseg.errors.DataLossError` (failOnDataLoss), in :func:`acknowledged_loss_words`."""

    path: str
    position: int
    first_offset: int
    high_watermark: int
    recovery_point: int

    @property
    def proven(self) -> bool:
        return True

    @property
    def end_offset(self) -> int:
        """The end of the offsets a read to latest loses."""
        return min(self.high_watermark, self.recovery_point)

    @property
    def message(self) -> str:
        return acknowledged_loss_words(self.high_watermark, self.recovery_point, self.first_offset)

    def error(self) -> KafkaSegError:
        """The plan's :class:`~kafkaseg.errors.DataLossError`, naming the file and byte."""
        from kafkaseg.errors import DataLossError

        return DataLossError(f"{self.where}: {self.message}")


@dataclass(frozen=True)
class EmptyLogLoss(AcknowledgedLoss):
    """An :class:`AcknowledgedLoss` of a partition with no segment (every ``.log`` file gone): ``path`` is its
    folder, ``position`` 0 and ``first_offset`` the empty log's offset (its log start, a read's rule), below a high
    watermark and recovery point both above it (:func:`acknowledged_loss_end`): a read to latest raises
    :class:`~kafkaseg.errors.DataLossError`."""

    lost_with = "every .log file of the partition"

    @property
    def where(self) -> str:
        return f"folder {self.path}"


@dataclass(frozen=True)
class RolledCut(_Evidenced):
    """A :class:`LostTail` of a rolled segment (:func:`judge_rolled_end`): its batches end (byte ``position`` of
    ``path``, offset ``first_offset``) before the next segment's base ``next_base``, while its own index entries
    (``evidence``, :class:`~kafkaseg.storage.segment.IndexedPastEnd`) name offsets past that end: the file held
    them once and does not now (a file cut short, or a copy of it taken while it was still the active segment),
    not a compaction gap, whose indexes the cleaner writes with its batches. ``proven`` when the recovery point
    says the log was flushed past that end: a strict read raises :class:`~kafkaseg.errors.LostTailError`
    (failOnDataLoss), one with failOnDataLoss=false lists it in the metrics' ``lost_tails``. Else (asked for with
    ``unflushed``: the recovery point at or below the end, or none) they may never have reached the disk (a crash
    before the roll's flush was checkpointed; Kafka's recovery takes the segment as it reads), a warning, as for
    the active segment's unflushed tail: the reads list it in ``unreadable_tails``."""

    lost_with = "a rolled segment cut short"

    path: str
    evidence: Any
    recovery_point: int | None
    next_base: int

    @property
    def proven(self) -> bool:
        return self.evidence.flushed_below(self.recovery_point) is not None

    @property
    def end_offset(self) -> int:
        """The offset after the last one lost: the recovery point's or the entries', within the segment."""
        return min(self.next_base, self.evidence.lost_end(self.recovery_point))

    @property
    def message(self) -> str:
        if not self.proven:
            recovery = ("no recovery point is checkpointed" if self.recovery_point is None else
                        f"the recovery point {self.recovery_point} is not above its readable end")
            return (f"{self.evidence.describe()}, before the next segment's base offset {self.next_base}: offsets "
                    f"{self.first_offset}..{self.end_offset - 1} were written to this file once (a broker indexes a "
                    f"batch after writing it), but {recovery}, so they may never have reached the disk (a crash "
                    "before the flush of its roll was checkpointed, which lost the log's unflushed pages and kept "
                    "the index's), or a copy of it was taken while it was still the active segment, its indexes "
                    "after its log; not a compaction gap (the cleaner writes a segment's indexes with its "
                    f"batches){COPY_AGAIN}")
        return (f"{self.evidence.describe()}, before the next segment's base offset {self.next_base}, and the "
                f"recovery point {self.recovery_point} says the broker had flushed the log up to offset "
                f"{self.recovery_point}: offsets {self.first_offset}.."
                f"{self.end_offset - 1} were on disk in this file and are not readable now (a file cut short, or a "
                "copy of it taken while it was still the active segment), not a compaction gap (the cleaner writes "
                f"a segment's indexes with its batches){COPY_AGAIN}")



@dataclass(frozen=True)
class ForeignLog(RolledCut):
    """A :class:`RolledCut` whose ``.log`` holds no batch of its own range: every batch in it (offsets
    ``held``, first and last) lies at or past the next segment's base ``next_base`` (another segment's ``.log``
    copied over it: a restore gone wrong) or below its own ``base_offset`` (an earlier one's), while its own index
    entries (``evidence``, read at byte 0 and its base offset) name offsets inside its range: the file held them
    once, and another file stands in its name now. Not a gap: a cleaner's merged copy indexes the batches it
    writes (none in that range), and a follower's segment holds its own batches. Judged, raised and listed as the
    :class:`RolledCut` of a segment cut to 0 bytes is (``lost_tails``, or a warning when the recovery point does
    not prove the offsets flushed), in words that say what the file holds."""

    lost_with = "a rolled segment whose .log holds another segment's batches"

    held: tuple[int, int] = (0, 0)
    base_offset: int = 0

    @property
    def what(self) -> str:
        """``the file holds another segment's batches (offsets A..B, past the next segment's base offset N)``."""
        first, last = self.held
        where = (f"past the next segment's base offset {self.next_base}" if first >= self.next_base
                 else f"below its own base offset {self.base_offset}")
        return f"the file holds another segment's batches (offsets {first}..{last}, {where})"

    @property
    def message(self) -> str:
        evidence = self.evidence
        counts = ", ".join(f"{n} {kind} entr{'y' if n == 1 else 'ies'}"
                           for n, kind in ((evidence.offset_entries, ".index"), (evidence.time_entries, ".timeindex"))
                           if n)
        head = (f"{self.what}, none of its own range {self.base_offset}..{self.next_base - 1}, while its own "
                f"indexes name offsets up to {evidence.last_offset} inside that range ({counts}; a broker indexes "
                "a batch after writing it, and the cleaner indexes only the batches it writes): another segment's "
                ".log copied over this one (a restore or copy gone wrong), or a file renamed")
        span = f"offsets {self.first_offset}..{self.end_offset - 1}"
        if not self.proven:
            recovery = ("no recovery point is checkpointed" if self.recovery_point is None else
                        f"the recovery point {self.recovery_point} is not above its base offset")
            return (f"{head}; {span} were written to this segment once, but {recovery}, so they may never have "
                    f"reached the disk{COPY_AGAIN}")
        return (f"{head}; the recovery point {self.recovery_point} says the broker had flushed them: {span} were "
                f"on disk in this segment's file and are in none now; copy the segment's .log again from the "
                f"source or another replica{COPY_AGAIN}")


def judge_rolled_end(path: str, end_position: int, end_offset: int, next_base: int, *, base_offset: int,
                     index: tuple[str | None, tuple[int, int] | None],
                     timeindex: tuple[str | None, tuple[int, int] | None], filesystem: pafs.FileSystem | None,
                     recovery_point: int | None, unflushed: bool = False,
                     index_last: tuple[int, int] | None = None, offset_index=None,
                     held: tuple[int, int] | None = None, time_probed: tuple | None = None) -> RolledCut | None:
    """Whether offsets ``[end_offset, next_base)`` missing after a rolled segment's last batch (which ends at byte
    ``end_position`` of ``path``, its end) are proven lost (a :class:`RolledCut`) rather than a gap the cleaner
    left: the recovery point is above ``end_offset`` (the broker had flushed the log past it: a roll flushes the
    segment it closes) and the segment's own ``index`` or ``timeindex`` (``(path, window)`` each, as
    :func:`~kafkaseg.storage._index_file.index_location` gives them) holds entries past that end below
    ``next_base`` (:func:`~kafkaseg.storage.segment.indexed_past_end`). Else None: a compacted segment's indexes
    (the cleaner's, or a follower's own appends) hold entries of its batches only. Reads nothing without such a
    recovery point; then probes the last entries of the two files (a few positioned reads) and loads them only
    when one reaches ``end_offset``. ``unflushed``: also when the recovery point is at or below the end (or none),
    an unproven :class:`RolledCut` (a warning); then the last entries are probed whatever the recovery point.
    ``index_last``: the ``.index``'s last entry ``(offset, position)`` as this caller probed it at ``index`` (not
    probed again), with ``offset_index`` that file as the caller loaded it (not loaded again): one read of each file
    per check (:func:`rolled_cut_of`); ``time_probed``: the ``.timeindex``'s last entry as a probe reads it, from
    the file as the caller loaded it (:func:`last_entry_as_probed`: not probed).
    ``held``: the first and last offsets of the batches the file holds, none of them in its range (``end_position``
    0, ``end_offset`` its base): a :class:`ForeignLog`."""
    from kafkaseg.storage.segment import indexed_past_end, load_index_files

    if not unflushed and (recovery_point is None or recovery_point <= end_offset):
        return None
    if not _index_files_reach(base_offset, (index, timeindex), end_offset, filesystem, index_last=index_last,
                              time_probed=time_probed):
        return None
    if index_last is not None and offset_index is not None:
        time_index = load_index_files(base_offset, (None, None), timeindex, filesystem)[1]
    else:
        offset_index, time_index = load_index_files(base_offset, index, timeindex, filesystem)
    found = indexed_past_end(offset_index, time_index, end_position, end_offset, below=next_base)
    if found is None:
        return None
    if held is not None:
        return ForeignLog(path, found, recovery_point, next_base, held, base_offset)
    return RolledCut(path, found, recovery_point, next_base)


def rolled_segment_cut(seg: SegmentFiles, end_offset: int, next_base: int, *, offset_index,
                       recovery_point: int | None, filesystem: pafs.FileSystem | None,
                       max_batch_bytes: int | None = DEFAULT_MAX_BATCH_BYTES,
                       unflushed: bool = False, end_position: int | None = None,
                       index_last: tuple[int, int] | None = None,
                       time_probed: tuple | None = None) -> RolledCut | None:
    """:func:`judge_rolled_end` for listed segment ``seg``, whose batches end at offset ``end_offset`` before
    ``next_base`` (planning's answer for a start between the two): the byte where they end is found from
    ``offset_index``'s last entry below ``end_offset`` (about one index interval of headers; ``end_position``: that
    byte, when the caller's walk found it), and only when the recovery point is above ``end_offset`` (any, with
    ``unflushed``: :func:`judge_rolled_end`, which takes ``index_last`` and ``offset_index`` as read from the
    segment's ``.index`` when ``index_last`` is given, and ``time_probed``)."""
    if seg.tiered is not None or (not unflushed and (recovery_point is None or recovery_point <= end_offset)):
        return None
    position = (_position_of_end(seg, offset_index, end_offset, filesystem, max_batch_bytes) if end_position is None
                else end_position)
    if position is None:
        return None
    return judge_rolled_end(seg.log_path, position, end_offset, next_base, base_offset=seg.base_offset,
                            index=index_location(seg, "index"), timeindex=index_location(seg, "timeindex"),
                            filesystem=filesystem, recovery_point=recovery_point, unflushed=unflushed,
                            index_last=index_last, offset_index=offset_index if index_last is not None else None,
                            time_probed=time_probed)


def rolled_cut_of(partition_dir: PartitionDir, i: int, *, offset_index=None,
                  end_offset: int | None = None, max_batch_bytes: int | None = DEFAULT_MAX_BATCH_BYTES,
                  unflushed: bool = False, opened: _fs.RandomAccessReader | None = None,
                  time_index=None, as_loaded: bool = False) -> RolledCut | None:
    """The :class:`RolledCut` (:func:`rolled_segment_cut`) of rolled segment ``i`` of ``partition_dir``: offsets
    after its last batch, below the next segment's base, that its own indexes and the recovery point prove lost;
    None when there are none. Below the cleaner checkpoint too: the cleaner rebuilds a cleaned segment's indexes
    from the batches it keeps (``LogCleaner.cleanSegments`` writes a new segment, ``cleanInto`` appends only the
    retained batches to it), so an entry past its last batch is no compaction's (the gap with no such entry is, and
    stays silent: :func:`below_cleaner_checkpoint`). The one rule of reads across the gap
    (scan._check_segment_end), a start inside it (planning), ``locate``, ``describe`` and ``verify``: where the
    read starts does not change what left the gap.
    ``offset_index``: the segment's, if loaded; ``end_offset``: the offset after its last batch, if known;
    ``opened``: its ``.log`` as the caller has it open (``describe``'s row), which the first walk reads rather than
    opening the file again (left open); ``as_loaded``: ``offset_index`` and ``time_index`` (either None) are the
    segment's index files as ``load`` read them (describe's rows), so the last entry a probe of either file would
    read is taken from them where they hold every entry (:func:`last_entry_as_probed`), not probed again. Reads
    nothing unless the recovery point is above the segment's base (or ``unflushed``); then about one index interval
    of its headers, from its offset index's last entry (probed, :func:`_last_entry_walk`). When they stop short of
    the next base it loads that index, and where that walk was clean and the index is sound (the walks of
    :func:`~kafkaseg.storage.segment.log_end_offset` and :func:`_position_of_end` would start at that entry and
    find the same last batch) its last batch is the segment's end, and the ``.index`` probed and loaded here is
    not read again (:func:`judge_rolled_end`); else it walks again (damage there: None, what walks the segment
    says it). ``unflushed``: also an unproven cut, the recovery point at or below its end or none
    (:func:`judge_rolled_end`), looked for whatever the recovery point. A segment whose file holds another
    segment's batches and none of its own range (:func:`~kafkaseg.storage.foreign_log.outside_batches`, asked only
    when its batches end past the next base or at its base) is judged at byte 0, a :class:`ForeignLog`, as a read
    judges it; one whose batches all lie outside its range, held by no other segment as they are (offset fields
    moved), is no cut: None (what walks the segment says it, corruption)."""
    from kafkaseg.storage.foreign_log import outside_batches
    from kafkaseg.storage.segment import load_index_files, log_end_offset

    pdir = partition_dir
    recovery_point = pdir.recovery_point
    if (pdir.tiered is not None or not 0 <= i < len(pdir.segments) - 1
            or (not unflushed and (recovery_point is None or recovery_point <= pdir.segments[i].base_offset))):
        return None
    seg, next_base, fs = pdir.segments[i], pdir.segments[i + 1].base_offset, pdir.filesystem
    walk = None
    if end_offset is None:
        walk = _last_entry_walk(seg, fs, max_batch_bytes, offset_index, opened)
        if walk is not None and walk.last.next_offset >= next_base:
            return None  # no offset missing after its last batch (the common case: nothing loaded)
    elif end_offset >= next_base:
        return None
    loaded_here = offset_index is None
    if loaded_here:
        offset_index = load_index_files(seg.base_offset, index_location(seg, "index"), (None, None), fs)[0]
    end, position, index_last, time_probed = end_offset, None, None, None
    if as_loaded and not loaded_here:  # (the caller's loads of the files stand in for their probes)
        index_probed = last_entry_as_probed(offset_index, "offset")
        index_last = index_probed[0] if index_probed is not None else None
        time_probed = last_entry_as_probed(time_index, "time")
    if walk is not None and walk.ends_log(offset_index):
        # (the one walk: log_end_offset's and _position_of_end's from the same entry find the same last batch)
        end, position = walk.last.next_offset, walk.last.position + walk.last.size
        if loaded_here:  # (the .index as probed and loaded here: not again)
            index_last = walk.entry
    elif end is None:
        try:
            end = log_end_offset(seg, filesystem=fs, offset_index=offset_index, max_batch_bytes=max_batch_bytes)
        except CorruptDataError:
            return None
    if end >= next_base or end <= seg.base_offset:  # (its batches all past the range, or none in it: whose?)
        outside = outside_batches(pdir, i, max_batch_bytes)
        if outside is not None and not outside.held:
            return None  # (its own batches, their offset fields moved: corruption, what walks the segment says)
        if outside is not None:
            return foreign_log_cut(pdir, i, outside, unflushed=unflushed)
    if end >= next_base:
        return None
    return rolled_segment_cut(seg, end, next_base, offset_index=offset_index, recovery_point=recovery_point,
                              filesystem=fs, max_batch_bytes=max_batch_bytes, unflushed=unflushed,
                              end_position=position, index_last=index_last, time_probed=time_probed)


def foreign_log_cut(partition_dir: PartitionDir, i: int, outside, *, unflushed: bool) -> RolledCut | None:
    """:func:`judge_rolled_end` at byte 0 of rolled segment ``i`` of ``partition_dir``, whose file holds another
    segment's batches (``outside``: :func:`~kafkaseg.storage.foreign_log.outside_batches`' answer, ``held``): a
    :class:`ForeignLog` when its own indexes name offsets inside its range (and the recovery point is above its
    base, or ``unflushed``); else None. :func:`rolled_cut_of`'s answer for such a segment, and ``verify``'s words."""
    pdir = partition_dir
    seg, recovery_point = pdir.segments[i], pdir.recovery_point
    if not unflushed and (recovery_point is None or recovery_point <= seg.base_offset):
        return None
    return judge_rolled_end(seg.log_path, 0, seg.base_offset, pdir.segments[i + 1].base_offset,
                            base_offset=seg.base_offset, index=index_location(seg, "index"),
                            timeindex=index_location(seg, "timeindex"), filesystem=pdir.filesystem,
                            recovery_point=recovery_point, unflushed=unflushed, held=(outside.first, outside.last))


class _EntryWalk(NamedTuple):
    """A clean walk of a rolled segment's whole batches from its offset index's last ``entry`` ``(offset,
    position)`` to the end of its listed bytes (:func:`_last_entry_walk`): ``last`` its last batch's header,
    ``size`` the ``.log``'s size when it was opened."""

    entry: tuple[int, int]
    last: Any
    size: int

    def ends_log(self, offset_index) -> bool:
        """Whether ``last`` is where :func:`~kafkaseg.storage.segment.log_end_offset` and :func:`_position_of_end`
        end the segment with ``offset_index`` (the one the walk started from, or the file it was probed from as
        loaded): a sound index (``sanity_problems``: strictly increasing, positions inside the log) whose last entry
        is ``entry``, so both walks start there, over the same batches, to the same end; and a batch holding the
        entry's offset first, each above the one before (as the walk checked), so log_end_offset's walk reaches the
        entry and raises nothing."""
        if offset_index is None or not len(offset_index):
            return False
        if (int(offset_index.offsets[-1]), int(offset_index.positions[-1])) != self.entry:
            return False
        return not offset_index.sanity_problems(self.size)


def _last_entry_walk(seg: SegmentFiles, filesystem, max_batch_bytes: int | None,
                     offset_index=None, opened: _fs.RandomAccessReader | None = None) -> _EntryWalk | None:
    """Rolled segment ``seg``'s whole batches walked from its offset index's last entry (``offset_index``'s, when
    the caller loaded it; else probed: a positioned read, no load) when that entry names a position inside the
    listed bytes whose batch holds the entry's offset, and the batches from there, each above the one before, end
    the listed bytes or the readable data (an :class:`_EntryWalk`: its last batch reaching the next base, no offset
    is missing after it and :func:`rolled_cut_of` has nothing to judge). None when anything there is missing,
    damaged, inconsistent or raises: the full walk decides (a whole batch ending the listed bytes at the next base or
    past it is where that walk ends too, or it raises). About one index interval of headers, of the ``.log`` as
    ``opened`` (the caller's open file of it, left open) or opened here."""
    from kafkaseg.storage.segment import SegmentReader

    path, window = index_location(seg, "index")
    if not path or seg.tiered is not None:
        return None
    last = None
    try:
        if offset_index is not None:  # (the entries the full walk would start from: no second read of the file)
            if not len(offset_index):
                return None
            entry_offset, position = int(offset_index.offsets[-1]), int(offset_index.positions[-1])
        else:
            entry = probed_last_entry(path, window, "offset", seg.base_offset, filesystem)
            if entry is None:
                return None
            entry_offset, position = entry
        if not 0 <= position < seg.log_size:
            return None
        with SegmentReader(seg.log_path, filesystem, opened=opened) as reader:
            size = reader.size
            for header in reader.iter_headers(position, max_batch_bytes=max_batch_bytes):
                if header.position + header.size > seg.log_size:
                    break
                if (header.base_offset > entry_offset or header.last_offset < entry_offset) if last is None \
                        else header.base_offset <= last.last_offset:
                    return None
                last = header
    except KafkaSegError:
        return None
    return None if last is None else _EntryWalk((entry_offset, position), last, size)


def rolled_cut_holding(partition_dir: PartitionDir, offset: int, *,
                       max_batch_bytes: int | None = DEFAULT_MAX_BATCH_BYTES) -> RolledCut | None:
    """:func:`rolled_cut_of` the rolled segment whose range holds ``offset`` when the cut holds it, for a tool
    asked about that one offset (``locate``), judged as a read starting there is (planning); else None. Reads
    nothing unless the recovery point is above ``offset``."""
    import bisect

    pdir = partition_dir
    if pdir.recovery_point is None or pdir.recovery_point <= offset:
        return None
    i = bisect.bisect_right([s.base_offset for s in pdir.segments], offset) - 1
    cut = rolled_cut_of(pdir, i, max_batch_bytes=max_batch_bytes)
    return cut if cut is not None and cut.holds(offset) else None


class ListingCheck:
    """Whether a partition is still as listed (:func:`unchanged_since_listing`: a listing, a stat and two small
    reads), asked once, when first needed."""

    def __init__(self, partition_dir: PartitionDir, segments: Sequence[SegmentFiles] | None = None):
        self.pdir, self.segments = partition_dir, segments
        self._found: tuple[bool, bool] | None = None

    def _as_listed(self) -> tuple[bool, bool]:
        if self._found is None:
            self._found = unchanged_since_listing(self.pdir, self.segments)
        return self._found

    def log(self) -> bool:
        """The ``.log`` files are the ones listed, the last one at its listed size."""
        return self._as_listed()[0]

    def checkpoints(self) -> bool:
        """The ``.log`` files and the log dir's checkpoints are still as listed (False without a log dir)."""
        return all(self._as_listed())

    def recovery_point(self) -> bool:
        """Whether the listed recovery point may be trusted to say what the broker had flushed: the folder (not a
        set of given files) and the log dir's checkpoints are still as listed (:meth:`checkpoints`). A follower's
        truncation cuts the log, then checkpoints the lowered recovery point (``LogManager.truncateTo``): a listing
        between the two sees the old one above the log's end, which the re-read finds changed (or the log shorter
        than listed)."""
        return not self.pdir.given_files and self.pdir.log_dir is not None and self.checkpoints()


def judge_tail(path: str, end_position: int, end_offset: int, *, offset_index, time_index,
               snapshot: tuple[int, str] | None, partition_path: str, filesystem: pafs.FileSystem | None,
               recovery_point: int | None, log_as_listed: Callable[[], bool],
               recovery_point_as_listed: Callable[[], bool]) -> JudgedTail | None:
    """What the partition's files say its active segment (``path``) held past its readable end (byte
    ``end_position``, offset ``end_offset``) with no high watermark to bound the log, judged as the reads, verify
    and the tools that report a log end all judge it; None when nothing says anything. What each caller has
    loaded: the segment's ``offset_index`` and ``time_index`` (None: missing or unreadable; loaded after the log
    was listed), ``snapshot`` ``(offset, file name)`` of the newest producer snapshot the listing named past the
    end (``segment.snapshot_past``), and the listed ``recovery_point``. The trust rules, in this one place:

    * index entries past the end (``segment.indexed_past_end``) count, and a snapshot counts only if it is still
      in ``partition_path`` (a follower's truncation, or recovery, deletes the snapshots past its new end);
    * then, after those were looked at, ``log_as_listed()`` must hold, else nothing is said: a live broker writes
      the log before it indexes or snapshots, so an append since the listing shows there (a caller that loaded the
      indexes after opening the log it walks, whose end includes such appends, passes one that is always true);
    * the recovery point above the end proves the offsets below it flushed (and lost) only when index entries
      point past the end or ``recovery_point_as_listed()`` (:meth:`ListingCheck.recovery_point`, or planning's
      answer to it), asked only then: as planning asks it only for a recovery point above the log end.

    Nothing is read unless something points past the end."""
    from kafkaseg.storage.segment import indexed_past_end, with_snapshot

    found = indexed_past_end(offset_index, time_index, end_position, end_offset)
    if snapshot is not None and snapshot[0] > end_offset and _fs.stat(_fs.join(partition_path, snapshot[1]),
                                                                      filesystem) is None:
        snapshot = None  # (deleted since the listing: a follower's truncation finished, or recovery)
    found = with_snapshot(found, snapshot, end_position, end_offset)
    flushable = found.flushed_below(recovery_point) is not None
    if not (found.proves_written or flushable) or not log_as_listed():
        return None
    trusted = found.last_offset is not None or not flushable or recovery_point_as_listed()
    tail = JudgedTail(path, found, recovery_point, trusted)
    if not found.proves_written and not tail.proven:
        return None
    return tail


def lost_tail(partition_dir: PartitionDir, end_offset: int, *,
              max_batch_bytes: int | None = DEFAULT_MAX_BATCH_BYTES, walk_clean: bool = True) -> LostTail | None:
    """What the partition's files say its log held past ``end_offset``, the log end a lookup or ``describe`` found
    (the active segment's readable end); None when nothing says anything, or when the folder changed since it was
    listed (a live broker appended or rolled: its index entries and snapshots are of bytes that are there now).
    With no high watermark, :func:`judge_tail`, the reads' rule, for tools that report the log end; with one above
    the end, offsets it and the recovery point say were acknowledged and flushed (:func:`acknowledged_loss_end`,
    planning's rule, given whether the walk to the end was ``walk_clean``); with no segment at all (every ``.log``
    file gone), the same rule at the empty log's offset ``end_offset`` (an :class:`EmptyLogLoss`). Loads the active
    segment's two index files only when their last entries reach the end (with a high watermark, only when it and
    the recovery point are past the end); walks about one index interval of headers only when something points past
    the end."""
    from kafkaseg.storage.segment import load_index_files, snapshot_past

    pdir = partition_dir
    if not pdir.segments and pdir.tiered is None and pdir.high_watermark is not None:
        # every .log file gone: an empty log at ``end_offset`` (its log start), as a read takes it
        if acknowledged_loss_end(pdir, end_offset, walk_clean=walk_clean,
                                 as_listed=ListingCheck(pdir).recovery_point) is None:
            return None
        return EmptyLogLoss(pdir.path, 0, end_offset, pdir.high_watermark, pdir.recovery_point)
    if not pdir.segments or pdir.tiered is not None:
        return None
    seg, fs = pdir.segments[-1], pdir.filesystem
    if seg.tiered is not None or not pdir.is_active_segment(seg.log_path) or end_offset < seg.base_offset:
        return None
    if pdir.high_watermark is not None:
        listing = ListingCheck(pdir)
        if acknowledged_loss_end(pdir, end_offset, walk_clean=walk_clean, as_listed=listing.recovery_point) is None:
            return None
        offset_index = load_index_files(seg.base_offset, index_location(seg, "index"), (None, None), fs)[0]
        position = _position_of_end(seg, offset_index, end_offset, fs, max_batch_bytes)
        return AcknowledgedLoss(seg.log_path, seg.log_size if position is None else position, end_offset,
                                pdir.high_watermark, pdir.recovery_point)
    snapshot = snapshot_past(pdir.snapshot_paths, end_offset)
    recovery_point = pdir.recovery_point
    reach = _indexes_reach(seg, end_offset, fs)
    if not reach and snapshot is None and (recovery_point is None or recovery_point <= end_offset):
        return None
    loaded = (load_index_files(seg.base_offset, index_location(seg, "index"), index_location(seg, "timeindex"), fs)
              if reach else (None, None))
    position = _position_of_end(seg, loaded[0], end_offset, fs, max_batch_bytes)
    if position is None:
        return None
    listing = ListingCheck(pdir)
    return judge_tail(seg.log_path, position, end_offset, offset_index=loaded[0], time_index=loaded[1],
                      snapshot=snapshot, partition_path=pdir.path, filesystem=fs, recovery_point=recovery_point,
                      log_as_listed=listing.log, recovery_point_as_listed=listing.recovery_point)


def _indexes_reach(seg: SegmentFiles, end_offset: int, filesystem) -> bool:
    """Whether the last entry of either index file of ``seg`` holds an offset at or past ``end_offset`` (entries
    are ordered by offset): a few positioned reads, before :func:`lost_tail` loads the files whole (a live
    broker's active segment's are preallocated, megabytes of zeros). An index that cannot be probed is loaded."""
    locations = (index_location(seg, "index"), index_location(seg, "timeindex"))
    return _index_files_reach(seg.base_offset, locations, end_offset, filesystem)


def _index_files_reach(base_offset: int, locations, end_offset: int, filesystem,
                       index_last: tuple[int, int] | None = None, time_probed: tuple | None = None) -> bool:
    """:func:`_indexes_reach` of a segment at ``base_offset`` whose ``.index`` and ``.timeindex`` are at
    ``locations`` (``(path, window)`` each); ``index_last``: the ``.index``'s last entry as the caller probed it
    there (not probed again); ``time_probed``: the ``.timeindex``'s, as :func:`last_entry_as_probed` gives it.
    Locally the ``.timeindex`` is probed only when the ``.index`` does not reach; on a filesystem that is not local
    both at once (each probe an open and a read there, a round trip apiece: a HEAD and a GET on S3)."""
    from kafkaseg.errors import CorruptIndexError

    def last_of(location_and_kind):
        (path, window), kind = location_and_kind
        if not path:
            return None
        if kind == "offset" and index_last is not None:
            return index_last
        if kind == "time" and time_probed is not None:
            return time_probed[0]
        try:
            return probed_last_entry(path, window, kind, base_offset, filesystem)
        except (LayoutError, CorruptIndexError):
            return None  # (as lost_tail's load counts it: empty)

    pairs = list(zip(locations, ("offset", "time")))
    lasts = (map(last_of, pairs) if _fs.is_local(filesystem) or (index_last is not None or time_probed is not None)
             else _fs.map_files(last_of, pairs, [filesystem]))
    for last, (_, kind) in zip(lasts, pairs):
        if last is not None and last[0 if kind == "offset" else 1] >= end_offset:
            return True
    return False


def _position_of_end(seg: SegmentFiles, offset_index, end_offset: int, filesystem,
                     max_batch_bytes: int | None) -> int | None:
    """The byte where the batches of ``seg`` holding offsets below ``end_offset`` end (as listed), walking from its
    offset index's last entry below ``end_offset`` inside the listed bytes (from the start without one); None when
    no batch ends at ``end_offset`` (or ``seg`` holds none and it is not its base)."""
    from kafkaseg.storage.segment import SegmentReader

    start = 0
    if offset_index is not None and len(offset_index):
        import numpy as np

        below = (offset_index.offsets < end_offset) & (offset_index.positions < seg.log_size) & \
            (offset_index.positions >= 0)
        if np.any(below):
            start = int(offset_index.positions[below].max())
    for attempt in dict.fromkeys((start, 0)):
        end = 0 if end_offset == seg.base_offset else None
        try:
            with SegmentReader(seg.log_path, filesystem) as reader:
                for header in reader.iter_headers(attempt, max_batch_bytes=max_batch_bytes, partial_append=True):
                    if header.position + header.size > seg.log_size or header.base_offset >= end_offset:
                        break
                    end = header.position + header.size if header.next_offset == end_offset else None
        except CorruptDataError:
            end = None
        if end is not None:
            return end
    return None


@dataclass(frozen=True)
class LogEnd:
    """Where a read of a partition ends (:func:`find_log_end`): ``offset`` the log end offset (None: no segments);
    ``position`` where the active segment's readable batches end when the walk stopped short of its bytes (corrupt
    framing, zeros, a torn append), else None; ``corrupt_tail`` ``(position, bytes, why)`` of bytes after it that a
    lenient read leaves out and counts as skipped corrupt data; ``damage`` the corruption the walk met (None: none);
    ``clean`` whether the walk met no corruption or torn append, nor zeros with data after them (zeros to the end of
    the file, a preallocated tail, end it as the end of the file does); ``notes`` what was decided, to report;
    ``readable_position`` where the readable batches end when bytes follow them that a read does not return (as
    ``position``, and also where a lenient read's own step-over walk ended, which its reader meets by itself)."""

    offset: int | None
    position: int | None = None
    corrupt_tail: tuple[int, int, str] | None = None
    damage: CorruptDataError | None = None
    clean: bool = True
    notes: tuple[str, ...] = ()
    readable_position: int | None = None

    def __post_init__(self):
        if self.readable_position is None:
            object.__setattr__(self, "readable_position", self.position)


def find_log_end(partition_dir: PartitionDir, *, lenient: bool, verify_crc: bool = True,
                 max_batch_bytes: int | None = DEFAULT_MAX_BATCH_BYTES,
                 index_start: Callable[[], int] | None = None,
                 unacknowledged_past: Callable[[int], bool] | None = None, read_to: int | None = None,
                 known: ChoiceLogEnds | None = None) -> LogEnd:
    """The log end a read of ``partition_dir`` takes (planning's rule; lenient lookups take it too). When the active
    segment cannot be walked to its end (corrupt framing, e.g. an append a crash tore, or a batch whose base offset,
    which no CRC covers, goes back), it is the end of the last whole batch before the corruption, as Kafka's
    recovery would truncate there: a strict read accepts that only when ``unacknowledged_past(offset)`` (the
    checkpointed high watermark lies at or below it, and bounds the read), else raises; a ``lenient`` read steps
    over the corruption as its reader will and takes the last batch found. Where zeros end the active segment's
    batches (:func:`~kafkaseg.storage.segment.zero_filled_tail`) the read stops: zeros to the end of the file are
    a preallocated tail, where the log ends as a file cut there does (also below a high watermark, whose rules then
    decide: :func:`~kafkaseg.storage.segment.zeros_hide_records`); a final batch before zeros to the end that fails
    its CRC and holds no acknowledged offset is an append caught in progress, and the log ends before it; zeros
    with data after them raise for a strict read (unless ``unacknowledged_past``), and a lenient read stops there,
    counting the rest as skipped.
    ``index_start()``: the position of the active segment's last offset index entry (0 without one), asked only
    when zeros are found. ``read_to``: where a stream's position says it read the log to, evidence for a last
    batch past a compaction gap (:meth:`PartitionDir.reached_end`). ``known``: the log ends a stream's replica
    choice read, taken where they stand (not one it could not read: walked again here for its damage), and where
    this walk's is kept (:class:`ChoiceLogEnds`)."""
    from kafkaseg.errors import SkippedOffsetsError
    from kafkaseg.storage.segment import readable_end

    past = unacknowledged_past or (lambda leo: False)
    name = f"{partition_dir.topic}-{partition_dir.partition}"
    try:
        leo = known.taken(partition_dir, read_to, max_batch_bytes) if known is not None else None
        if leo is None or leo < 0:
            read_ms = time.time() * 1000
            leo = partition_log_end_offset(partition_dir, max_batch_bytes=max_batch_bytes, read_to=read_to)
            if leo is None:
                return LogEnd(None)
            if known is not None:
                known.keep(partition_dir, read_to, max_batch_bytes, leo, read_ms)
        # (inside the try: damage the zeros are is judged as damage the walk met, by the walk from the start, which
        # finds earlier damage the walk from the last index entry does not, as planning did before this moved here)
        return _zero_tail(partition_dir, leo, name, lenient=lenient, verify_crc=verify_crc,
                          max_batch_bytes=max_batch_bytes, index_start=index_start, unacknowledged_past=past)
    except CorruptDataError as err:
        seg = partition_dir.segments[-1]
        active = partition_dir.is_active_segment(seg.log_path)
        leo, position = readable_end(seg, step_over=lenient, verify_crc=verify_crc,
                                     filesystem=partition_dir.filesystem, max_batch_bytes=max_batch_bytes,
                                     high_watermark=partition_dir.high_watermark if active else None,
                                     reached=partition_dir.reached_end(read_to))
        end_position, corrupt_tail = None, None
        if lenient and isinstance(err, SkippedOffsetsError) and position == err.position:
            # the reader would stop at the batch (its base offset is past the read's end) without a word:
            # the read of the slice that ends before it counts it as skipped corrupt data
            end_position = position
            corrupt_tail = (position, seg.log_size - position, f"{err.detail}: the batch and what follows it "
                            "skipped (onCorruption=skip)")
            how = f"{leo}, before that batch (onCorruption=skip; counted as skipped corrupt data)"
        elif lenient:
            how = f"{leo}, stepping over it as a lenient read does"
        elif past(leo):
            end_position = position
            how = (f"{leo}, the end of the last whole batch before it (at or above the high watermark "
                   f"{partition_dir.high_watermark})")
        else:
            # whole batches after the bad bytes: corruption inside the log, not a torn end. The log ends
            # after them, and the read raises where it meets the bad bytes, after the records before them
            # (as it does when an index entry past them spares this walk)
            after, _ = readable_end(seg, step_over=True, verify_crc=verify_crc, filesystem=partition_dir.filesystem,
                                    max_batch_bytes=max_batch_bytes,
                                    high_watermark=partition_dir.high_watermark if active else None,
                                    reached=partition_dir.reached_end(read_to))
            if after <= leo:
                raise
            leo = after
            how = (f"{leo}, the end of the whole batches after it; a strict read raises when it reaches "
                   "the corruption")
        readable = position if lenient and position < seg.log_size else end_position
        return LogEnd(leo, end_position, corrupt_tail, err, False,
                      (f"{name}: corruption in the active segment ({err}): the log end offset is taken as {how}",),
                      readable)


def _zero_tail(partition_dir: PartitionDir, leo: int, name: str, *, lenient: bool, verify_crc: bool,
               max_batch_bytes: int | None, index_start: Callable[[], int] | None,
               unacknowledged_past: Callable[[int], bool]) -> LogEnd:
    """:func:`find_log_end` once the walk of the active segment found its end at ``leo``: zeros there are a
    preallocated tail (no data), an append caught in progress before them, or damage."""
    from kafkaseg.errors import CorruptBatchError
    from kafkaseg.storage.segment import torn_before_zeros, zero_filled_tail, zeros_hide_records

    seg, fs = partition_dir.segments[-1], partition_dir.filesystem
    start = index_start() if index_start is not None else 0
    walked: list = []
    found = zero_filled_tail(seg, filesystem=fs, max_batch_bytes=max_batch_bytes, start_position=start,
                             walked=walked)
    if found is None:
        return LogEnd(leo)
    position, data_after = found
    # A live broker may have appended between the walk that found ``leo`` and the one that found the zeros: the
    # offset is then the zero walk's, so that the log end and its byte describe the same bytes (a slice ending past
    # a batch at its own end offset reads as a corrupt offset field)
    leo = max(leo, _offset_before_zeros(seg, position, start, fs, max_batch_bytes, leo, walked[0]))
    torn = None if data_after or not verify_crc else torn_before_zeros(
        seg, position, partition_dir.high_watermark, filesystem=fs, start_position=start,
        max_batch_bytes=max_batch_bytes, zero_walk=walked[0])
    if torn is not None:
        return LogEnd(torn.base_offset, torn.position, clean=False, notes=(
            f"{name}: the active segment's last batch ({torn.base_offset}..{torn.last_offset}, byte "
            f"{torn.position}) fails its CRC and only zeros follow it: an append a broker with "
            "log.preallocate is still writing (never acknowledged), so the log end offset is taken as "
            f"{torn.base_offset}",))
    what = zeros_hide_records(data_after)
    if what is None:  # a preallocated tail: the file ends here (clean: no read reports the zeros)
        return LogEnd(leo, position)
    if unacknowledged_past(leo):
        return LogEnd(leo, position, clean=False, notes=(
            f"{name}: the active segment's batches end in zeros at byte {position} and {what}; reading up to "
            f"offset {leo}",))
    damage = CorruptBatchError(f"zeros in the active segment end its readable batches, but {what}",
                               path=seg.log_path, position=position)
    if not lenient:
        raise damage
    # corruption a lenient read skips: counted by the read of the slice that ends here
    corrupt_tail = (position, seg.log_size - position, f"zeros in the active segment end its readable batches, but "
                    f"{what}: the rest of the segment skipped (read up to offset {leo})")
    return LogEnd(leo, position, corrupt_tail, damage, False, (
        f"{name}: {seg.log_path} @ byte {position}: the active segment's batches end in zeros here and {what}: "
        f"reading up to offset {leo}, leaving out what follows the zeros (onCorruption=skip; counted as skipped "
        "corrupt data when the read reaches it)",))


def _offset_before_zeros(seg: SegmentFiles, position: int, start: int, filesystem, max_batch_bytes: int | None,
                         walked: int, zero_walk: tuple | None = None) -> int:
    """The offset after the last batch of ``seg`` ending at byte ``position`` (where :func:`_zero_tail`'s walk
    found zeros; its walk started at ``start``, a batch boundary), or ``walked`` (the log end walk's answer) when
    no batch ends there or the walk meets bad framing. One walk of at most an index interval of headers, or none
    when ``zero_walk`` (``(start, last header)`` of the walk that found the zeros: ``zero_filled_tail``'s
    ``walked``) started where this one would: its last header is this one's (the same whole batches, up to
    ``position``)."""
    from kafkaseg.storage.segment import SegmentReader

    begin = start if start < position else 0
    if zero_walk is not None and zero_walk[0] == begin:
        last = zero_walk[1]
        return last.next_offset if last is not None and last.end == position else walked
    last = None
    try:
        with SegmentReader(seg.log_path, filesystem) as reader:
            for last in reader.iter_headers(begin, position, max_batch_bytes=max_batch_bytes):
                pass
    except CorruptDataError:
        return walked
    return last.next_offset if last is not None and last.end == position else walked


def _producer_snapshots(partition_dir: PartitionDir) -> list[tuple[int, str]]:
    """``(offset, path)`` of the partition's producer ``.snapshot`` files, newest first."""
    from kafkaseg.storage.producer_snapshot import snapshot_offset_from_name

    named = ((snapshot_offset_from_name(_fs.basename(p)), p) for p in partition_dir.snapshot_paths)
    return sorted(((offset, p) for offset, p in named if offset is not None), reverse=True)


def _readable_snapshot(path: str, filesystem):
    """The producer snapshot at ``path``, or None when it is corrupt or unreadable (Kafka deletes such a snapshot
    and falls back to an older one)."""
    from kafkaseg.storage.producer_snapshot import read_producer_snapshot

    try:
        return read_producer_snapshot(path, filesystem)
    except (CorruptDataError, LayoutError):
        return None


def transactions_open_at(partition_dir: PartitionDir, offset: int) -> dict[int, int]:
    """The transactions open at ``offset`` (producer id -> first offset) by the producer snapshot named for exactly
    that offset (Kafka writes one at each segment roll, named for the new segment's base); empty when there is none
    or it is unreadable."""
    return snapshot_transactions_at(partition_dir, offset) or {}


def snapshot_transactions_at(partition_dir: PartitionDir, offset: int) -> dict[int, int] | None:
    """:func:`transactions_open_at`, None when no readable snapshot is named for ``offset``."""
    for at, path in _producer_snapshots(partition_dir):
        if at == offset:
            snapshot = _readable_snapshot(path, partition_dir.filesystem)
            return snapshot.ongoing_transactions() if snapshot is not None else None
    return None


def last_stable_offset(partition_dir: PartitionDir, *,
                       max_batch_bytes: int | None = DEFAULT_MAX_BATCH_BYTES, errors: list | None = None,
                       log_end: int | None = None, offset_indexes: Sequence | None = None) -> int | None:
    """The last stable offset (``UnifiedLog.lastStableOffset``): the first offset of the earliest transaction that
    is still open, or whose marker is not below the high watermark, capped by the high watermark (the log end
    offset when no high watermark was checkpointed). None when the partition has no segments.

    Producer state comes from the latest readable ``.snapshot`` at or below the high watermark (its
    ``currentTxnFirstOffset`` entries; a later snapshot has forgotten transactions whose markers lie between the
    high watermark and it, which still hold the last stable offset down), then a header-only walk of the batches
    after it: a transactional data batch from producer P opens a transaction at its base offset when P has none
    open; a control batch from P ends it (a marker for a transaction with no data has no effect). Without such a
    snapshot the walk starts at the first segment, as a broker rebuilding producer state from the log start does;
    the oldest snapshot above the high watermark (if any) adds the transactions begun before the walk (in segments
    retention deleted) that were still open there. A transaction begun in a deleted segment, continued in the
    walk and completed before that snapshot is taken to begin at its first batch seen, as such a broker takes it.
    As in ``UnifiedLog.maybeIncrementFirstUnstableOffset``, no transaction holds the result below the log start
    offset, and none begun below ``cleaner-offset-checkpoint`` holds it at all (the cleaner cleans only stable
    offsets, and may have removed the marker). Corrupt framing raises, or, when ``errors`` is a list (a lenient
    read), is appended to it, ends that segment's walk and forgets the transactions open there (their markers may
    lie in the bytes not walked). ``log_end`` is the log end offset when the caller has it; ``offset_indexes``, each
    segment's offset index when the caller loaded it since the listing (None where it did not: loaded here).
    """
    from kafkaseg.storage.offset_index import OffsetIndex
    from kafkaseg.storage.segment import SegmentReader

    end = log_end if log_end is not None else partition_log_end_offset(partition_dir,
                                                                       max_batch_bytes=max_batch_bytes)
    if end is None or not partition_dir.segments:
        return None
    bound = broker_high_watermark(partition_dir.high_watermark, partition_dir.log_start_offset, end)
    open_txns: dict[int, int] = {}
    opened_by: dict[int, tuple[str, object]] = {}  # producer -> (log path, header) of the batch that opened it
    unreplicated: dict[int, int] = {}  # completed, but the marker is at/after the high watermark
    start_offset = partition_dir.segments[0].base_offset
    candidates = _producer_snapshots(partition_dir)

    before_walk: dict[int, int] = {}  # transactions begun before a walk from nothing, still open at the bound
    for offset, path in candidates:
        if offset <= bound and (snapshot := _readable_snapshot(path, partition_dir.filesystem)) is not None:
            open_txns = snapshot.ongoing_transactions()
            start_offset = offset
            break
    else:  # no producer state at or below the bound: the walk starts from nothing
        for offset, path in reversed(candidates):  # the oldest snapshot above the bound
            if bound < offset <= end and (
                    snapshot := _readable_snapshot(path, partition_dir.filesystem)) is not None:
                before_walk = {pid: first for pid, first in snapshot.ongoing_transactions().items()
                               if first < start_offset}
                break
    # The log cleaner only cleans below the first unstable offset (LogCleanerManager's firstUncleanableDirtyOffset,
    # itself at most the active segment's base), so a transaction begun below cleaner-offset-checkpoint had
    # completed when it cleaned: its marker may since be gone (dropped with the transaction's last batch, or past
    # the delete horizon), which a walk from a snapshot taken before the cleaning cannot see. Such transactions are
    # forgotten once the walk reaches the checkpoint, so a later batch of the same producer opens a new one. A
    # checkpoint above the active segment's base is ignored: a cleaner never writes one (a file copied at another
    # time does; LogCleanerManager resets one past the log end), though a follower's truncation can leave one
    # (maybeTruncateCheckpoint): ignoring it can only lower the result, never return an open transaction.
    cleaned = partition_dir.cleaner_offset
    if cleaned is not None and cleaned > partition_dir.segments[-1].base_offset:
        cleaned = None
    forgotten = cleaned is None

    def forget_cleaned():
        nonlocal open_txns, before_walk, forgotten
        if not forgotten:
            open_txns = {pid: first for pid, first in open_txns.items() if first >= cleaned}
            before_walk = {pid: first for pid, first in before_walk.items() if first >= cleaned}
            forgotten = True

    if not forgotten and start_offset >= cleaned:
        forget_cleaned()
    fs_ = partition_dir.filesystem
    for i, segment in enumerate(partition_dir.segments):
        next_base = partition_dir.segments[i + 1].base_offset if i + 1 < len(partition_dir.segments) else None
        if next_base is not None and next_base <= start_offset:
            continue
        position = 0
        index_path, index_window = index_location(segment, "index")
        if segment.base_offset < start_offset and index_path:
            try:
                index = offset_indexes[i] if offset_indexes is not None else None
                if index is None:
                    index = OffsetIndex.load(index_path, segment.base_offset, fs_, window=index_window)
                if not index.sanity_problems(segment.log_size):
                    # floor(start - 1): the batch at that entry ends <= start - 1, so every batch holding offsets
                    # >= start comes after it
                    position = index.floor(start_offset - 1)[1]
            except (CorruptDataError, LayoutError):
                position = 0
        walked_to = segment.base_offset
        with SegmentReader(segment.log_path, fs_) as reader:
            try:
                for header in reader.iter_headers(position, max_batch_bytes=max_batch_bytes):
                    walked_to = header.next_offset
                    if not forgotten and header.last_offset >= cleaned:
                        forget_cleaned()
                    if header.last_offset < start_offset or header.producer_id < 0 or header.magic < 2:
                        continue
                    pid = header.producer_id
                    if header.is_control:
                        # A marker for a transaction not seen begin: an empty one (a fenced producer's abort)
                        # has no effect (ProducerAppendInfo.appendEndTxnMarker); one begun in a deleted segment
                        # and still open at a later snapshot is in before_walk.
                        first = open_txns.pop(pid, None)
                        if first is not None and header.base_offset >= bound:
                            unreplicated[pid] = min(first, unreplicated.get(pid, first))
                    elif header.is_transactional and pid not in open_txns:
                        open_txns[pid] = header.base_offset
                        opened_by[pid] = (segment.log_path, header)
            except CorruptDataError as err:
                if next_base is None and walked_to >= end:
                    pass  # past the log end the caller settled on (a torn append it accepted): nothing to read
                elif errors is None:
                    raise
                else:
                    errors.append(err)
                    open_txns.clear()
    # The walk trusts headers; a transaction still open caps the read, so the batch that opened it must be real:
    # one flipped transactional bit would otherwise end a read early without a word. One batch read each.
    for pid in list(open_txns):
        if pid not in opened_by:
            continue  # opened before the walk (a producer snapshot says so)
        path, header = opened_by[pid]
        if header.base_offset >= bound:
            del open_txns[pid]  # cannot hold the result below the bound (and may be a torn append past it)
            continue
        with SegmentReader(path, fs_) as reader:
            valid = reader.crc_is_valid(header)
        if not valid:
            err = CrcMismatchError(f"the batch that opens producer {pid}'s transaction at offset {header.base_offset} "
                                   "fails its CRC-32C, so the last stable offset is unknown", path=path,
                                   position=header.position)
            if errors is None:
                raise err
            errors.append(err)
            del open_txns[pid]
    forget_cleaned()
    firsts = list(open_txns.values()) + list(unreplicated.values()) + list(before_walk.values())
    log_start = partition_dir.log_start_offset
    return min([bound] + [max(first, log_start if log_start is not None else first) for first in firsts])
