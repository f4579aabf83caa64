"""Finding partitions and segments in tiered-storage (KIP-405) copies, without changing anything.

A broker with ``remote.log.storage.system.enable`` copies each rolled segment, once it lies below the last stable
offset, to remote storage through a ``RemoteStorageManager`` plugin (``RemoteLogManager.copyLogSegment``). Kafka
ships no production plugin; the layout is the plugin's. Two are recognised here:

* **Aiven's tiered-storage-for-apache-kafka** (the open-source plugin in common use; ``ObjectKeyFactory.java``,
  ``KafkaRemoteStorageManager.java``)::

      <key.prefix><topic>-<topic id>/<partition>/<base offset, 20 digits>-<segment id>.log
                                                                           .indexes
                                                                           .rsm-manifest

  ``.log`` is the segment file, byte for byte, unless the plugin compresses (a zstd frame per chunk) or encrypts
  (AES-GCM per chunk) it; the manifest says which (``compression``, ``encryption``, ``chunkIndex``).
  ``.indexes`` holds the offset, time, producer-snapshot, leader-epoch and transaction indexes back to back, at the
  ``segmentIndexes`` positions of the manifest (never compressed). The manifest (JSON, version "1") is uploaded
  last (``copyLogSegmentData``: log, indexes, manifest), so a segment without one is an upload that did not finish.
  Its ``remoteLogSegmentMetadata`` holds ``startOffset``, ``endOffset`` (inclusive) and ``segmentLeaderEpochs``
  (epoch -> start offset) since 2023-09.

* **Apache Kafka's LocalTieredStorage** (the test plugin of Kafka's own tiered-storage tests;
  ``storage/src/test/java/org/apache/kafka/server/log/remote/storage/RemoteTopicPartitionDirectory.java``,
  ``RemoteLogSegmentFileset.java``)::

      <dir>/kafka-tiered-storage/<topic>-<partition>-<topic id>/<base offset, 20 digits>-<segment id>.log
                                                                  .index .timeindex [.txnindex] .snapshot
                                                                  .leader_epoch_checkpoint

  whole copies of the rolled segment's files (``Files.copy``). ``.txnindex`` exists only when the segment has
  aborted transactions. ``.leader_epoch_checkpoint`` is written by the broker for the copy: every epoch that
  starts below the next segment's base offset, in ``leader-epoch-checkpoint`` format.

Ids are Kafka ``Uuid`` strings: base64url without padding, 22 characters, so a folder name splits from its right
end whatever dashes the topic name holds. The producer snapshot of a copy is the one at the *next* segment's base
offset.

Remote storage has no checkpoints: every copied record was below the high watermark when copied, so a partition
found here has none (reads go to the end of its last segment, which is a rolled segment, not an active one). Its
leader epochs come from the copies (Aiven manifests' ``segmentLeaderEpochs`` over the offsets each copy is read
for: :func:`manifest_epochs`; LocalTieredStorage's last ``.leader_epoch_checkpoint``).

Which copies are live is recorded in the cluster's ``__remote_log_metadata`` topic. When its partitions are
among the paths read, planning replays them (:mod:`kafkaseg.remote_metadata`) into a :class:`CopyStates` per
partition, and :func:`apply_copy_states` leaves out the copies it says are dead (an upload that never finished, one
retention is deleting or deleted, one superseded, a deleted partition's), each noted; a copy it does not know (the
metadata copy is older) is kept and noted. The copies' leader epochs then decide among the rest, and stand in for
the metadata where there is none (``resolve_overlap``, and ``layout.read_tiered_partition``'s check that epochs
never go back along the copies kept). Two copies of the same offsets with the same records (same offsets, size and
leader epochs: Kafka's log matching property makes them equal) are kept once; what the epochs do not tell is a
:class:`LayoutError` naming both.
"""

from __future__ import annotations

import bisect
import itertools
import json
import os
import re
import threading
from array import array
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Callable, NamedTuple, Sequence

import pyarrow.fs as pafs

from kafkaseg.errors import LayoutError
from kafkaseg.storage import checkpoints as ckpt
from kafkaseg.storage import fs as _fs
from kafkaseg.storage._long_names import offset_past_a_long, past_a_long_words

__all__ = [
    "AIVEN",
    "LOCAL_TIERED_STORAGE",
    "CopyState",
    "CopyStates",
    "EmptiedFolder",
    "UNKNOWN_LAYOUT",
    "emptied_folders",
    "unfound_partition_folders",
    "apply_copy_states",
    "OverlapResolution",
    "RemoteSegment",
    "TieredPartitionFolder",
    "epochs_from_checkpoint",
    "parse_aiven_topic_folder",
    "parse_local_tiered_folder",
    "read_aiven_manifest",
    "remote_segments",
    "resolve_overlap",
    "epochs_over",
    "live_copies",
    "manifest_epochs",
    "served_decompressed",
    "chunked_filesystem",
    "same_records",
    "tiered_partition_folders",
]

#: ``PartitionDir.tiered`` of a partition found in Aiven's layout.
AIVEN = "aiven"
#: ``PartitionDir.tiered`` of a partition found in LocalTieredStorage's layout.
LOCAL_TIERED_STORAGE = "local-tiered-storage"

_ID = r"[A-Za-z0-9_-]{22}"
_TOPIC = r"[A-Za-z0-9._-]{1,249}"  # Topic.LEGAL_CHARS, Topic.MAX_NAME_LENGTH
_LOCAL_TIERED_FOLDER = re.compile(rf"^({_TOPIC})-(\d+)-({_ID})$")
_AIVEN_TOPIC_FOLDER = re.compile(rf"^({_TOPIC})-({_ID})$")
_REMOTE_FILE = re.compile(
    rf"^(\d{{1,20}})-({_ID})\.(log|index|timeindex|txnindex|snapshot|leader_epoch_checkpoint|indexes|rsm-manifest)$")
_MANIFEST_CAP = 4 * 1024 * 1024  # a manifest is ~1 KB; its chunk index a few hundred bytes more
_INDEX_KINDS = ("offset", "timestamp", "producerSnapshot", "leaderEpoch", "transaction")


def _partition_number(text: str) -> int | None:
    if not text.isascii() or not text.isdigit() or int(text) > 2**31 - 1:
        return None
    return int(text)


def parse_local_tiered_folder(name: str) -> tuple[str, int, str] | None:
    """``(topic, partition, topic id)`` from a LocalTieredStorage folder name ``<topic>-<partition>-<topic id>``,
    None when the name is not one."""
    match = _LOCAL_TIERED_FOLDER.match(name)
    if match is None or match.group(1) in (".", ".."):
        return None
    partition = _partition_number(match.group(2))
    return None if partition is None else (match.group(1), partition, match.group(3))


def parse_aiven_topic_folder(name: str) -> tuple[str, str] | None:
    """``(topic, topic id)`` from an Aiven topic folder name ``<topic>-<topic id>``, None when the name is not
    one. (A LocalTieredStorage partition folder's name also parses: the folder's content tells them apart.)"""
    match = _AIVEN_TOPIC_FOLDER.match(name)
    if match is None or match.group(1) in (".", ".."):
        return None
    return match.group(1), match.group(2)


@dataclass(frozen=True)
class TieredPartitionFolder:
    """A remote partition folder found by :func:`tiered_partition_folders`: where, which partition, which layout."""

    path: str
    topic: str
    partition: int
    topic_id: str
    layout: str  # AIVEN or LOCAL_TIERED_STORAGE
    entries: tuple | None = field(default=None, compare=False, repr=False)  # its listing, when discovery has it


def _has_remote_files(entries: Sequence[_fs.FileEntry]) -> bool:
    return any(not e.is_dir and _REMOTE_FILE.match(e.name) for e in entries)


def _aiven_partitions(path: str, topic: str, topic_id: str, entries: Sequence[_fs.FileEntry],
                      skipped: list[tuple[str, str]]) -> list[TieredPartitionFolder]:
    found = []
    for entry in entries:
        number = _partition_number(entry.name) if entry.is_dir else None
        if number is None:
            skipped.append((entry.path, "not a partition folder of Aiven's tiered-storage layout (<partition>/)"))
            continue
        found.append(TieredPartitionFolder(entry.path, topic, number, topic_id, AIVEN))
    return found


def tiered_partition_folders(path: str, filesystem, entries: Sequence[_fs.FileEntry],
                             skipped: list[tuple[str, str]] | None = None,
                             list_dir: Callable = _fs.list_dir, *,
                             partition_only: bool = False) -> list[TieredPartitionFolder] | None:
    """The remote partition folders at or under ``path`` (whose listing is ``entries``), when ``path`` is one of:

    * a LocalTieredStorage partition folder (``<topic>-<partition>-<topic id>`` holding segment copies);
    * an Aiven partition folder (``<partition>`` inside ``<topic>-<topic id>``) or topic folder;
    * a root holding such folders (``kafka-tiered-storage``, or a bucket prefix: Aiven's ``key.prefix``).

    None when it is none of these (the caller then reports what it expected). Folders of a root that are neither
    are appended to ``skipped`` as ``(path, reason)``. ``partition_only``: only the first two (a ``.log``
    file's folder). Only listings are read, never a file: a folder's layout is told by its content (an Aiven topic
    folder named ``events-2-<id>`` also parses as LocalTieredStorage's ``<topic>-<partition>-<id>``).
    """
    skipped = [] if skipped is None else skipped
    name = _fs.basename(path)
    local = parse_local_tiered_folder(name)
    if local is not None and _has_remote_files(entries):
        return [TieredPartitionFolder(path, *local, LOCAL_TIERED_STORAGE, tuple(entries))]
    number = _partition_number(name)
    if number is not None and _has_remote_files(entries):
        parent = parse_aiven_topic_folder(_fs.basename(_fs.parent(path)))
        if parent is not None:
            return [TieredPartitionFolder(path, parent[0], number, parent[1], AIVEN, tuple(entries))]
    if partition_only:
        return None
    aiven = parse_aiven_topic_folder(name)
    dirs = [e for e in entries if e.is_dir]
    if aiven is not None and _holds_aiven_partitions(entries):
        return _aiven_partitions(path, *aiven, dirs, skipped)
    found: list[TieredPartitionFolder] = []
    others: list[tuple[str, str]] = []
    for entry in dirs:
        aiven = parse_aiven_topic_folder(entry.name)  # LocalTieredStorage's names parse too: told by content
        if aiven is None:
            others.append((entry.path, "not a tiered-storage topic or partition folder"))
            continue
        listing = list_dir(entry.path, filesystem)
        local = parse_local_tiered_folder(entry.name)
        if local is not None and _has_remote_files(listing):
            found.append(TieredPartitionFolder(entry.path, *local, LOCAL_TIERED_STORAGE, tuple(listing)))
        elif _holds_aiven_partitions(listing):
            found.extend(_aiven_partitions(entry.path, *aiven, [e for e in listing if e.is_dir], others))
        else:
            others.append((entry.path, "neither a LocalTieredStorage partition folder (no segment copies) nor an "
                                       "Aiven topic folder (no <partition> folders)"))
    if not found:
        return None
    skipped.extend(others)
    return found


#: ``PartitionDir.tiered`` of a partition of a store that holds no copy and whose name does not tell its layout.
UNKNOWN_LAYOUT = "unknown"


@dataclass(frozen=True)
class EmptiedFolder:
    """A folder that holds no file and is named as a tiered-storage store, topic or partition folder is (see
    :func:`emptied_folders`): the copies it held may all be gone. ``holds``: ``(topic, topic id, partition or
    None for any)`` its name says it held, empty for any partition (a store's root)."""

    path: str
    layout: str
    holds: tuple[tuple[str, str, int | None], ...] = ()

    @property
    def names_a_partition(self) -> bool:
        return any(partition is not None for _, _, partition in self.holds)

    def could_hold(self, topic: str, topic_id: str, partition: int) -> bool:
        return not self.holds or any(t == topic and i == topic_id and p in (None, partition)
                                     for t, i, p in self.holds)


def _emptied_by_name(path: str) -> EmptiedFolder | None:
    name = _fs.basename(path)
    local, aiven = parse_local_tiered_folder(name), parse_aiven_topic_folder(name)
    if local is not None:  # (its name also parses as an Aiven topic folder's: the metadata tells which)
        holds = ((local[0], local[2], local[1]),) + (((aiven[0], aiven[1], None),) if aiven is not None else ())
        return EmptiedFolder(path, LOCAL_TIERED_STORAGE, holds)
    if aiven is not None:
        return EmptiedFolder(path, AIVEN, ((aiven[0], aiven[1], None),))
    number = _partition_number(name)
    parent = parse_aiven_topic_folder(_fs.basename(_fs.parent(path)))
    if number is not None and parent is not None:
        return EmptiedFolder(path, AIVEN, ((parent[0], parent[1], number),))
    return None


def emptied_folders(path: str, filesystem, entries: Sequence[_fs.FileEntry],
                    list_dir: Callable = _fs.list_dir, *, globbed: bool = False) -> list[EmptiedFolder] | None:
    """What ``path`` (whose listing is ``entries``) may be when it holds no file, in it or in its folders: a
    tiered-storage store, topic or partition folder whose copies are all gone (an emptied bucket, LocalTieredStorage's
    partition folder once retention deleted its copies). ``path`` itself when it is empty (a partition or topic
    folder by its name, else a store's root that could hold any partition), else its folders when each is empty
    and named as a topic or partition folder; None otherwise. Only the cluster's ``__remote_log_metadata`` can say
    whether it held copies (discovery's decision). A glob's match (``globbed``) stands for a store only by a
    store's (``kafka-tiered-storage``), topic's or partition's name: an empty folder of any other name beside log
    dirs (``/mnt/kafka/*`` matching an unused disk's folder) is None, passed over as a glob's match that is no log
    dir is, not taken for an emptied store's root that lost every tiered partition's copies."""
    if any(not entry.is_dir for entry in entries):
        return None
    own = _emptied_by_name(path)
    if not entries:
        if own is not None:
            return [own]
        layout = LOCAL_TIERED_STORAGE if _fs.basename(path) == "kafka-tiered-storage" else UNKNOWN_LAYOUT
        return None if globbed and layout == UNKNOWN_LAYOUT else [EmptiedFolder(path, layout)]
    if own is not None:
        return None
    found = []
    for entry in entries:
        named = _emptied_by_name(entry.path)
        if named is None or list_dir(entry.path, filesystem):
            return None
        found.append(named)
    return found


def unfound_partition_folders(path: str, found: Sequence[TieredPartitionFolder], skipped: Sequence[str],
                              filesystem, list_dir: Callable = _fs.list_dir) -> list[EmptiedFolder]:
    """Where partitions whose copies a store holding others' lacks could have been: ``path``, in which
    :func:`tiered_partition_folders` found ``found`` and passed over the folders ``skipped``, holds only the
    partitions its name or place says (only the metadata can say which of them lost their copies: discovery's
    decision). Its folders named as a topic or partition folder and holding nothing (LocalTieredStorage's
    ``<topic>-<partition>-<topic id>/`` left empty once its copies were deleted), then ``path`` itself: an Aiven
    topic folder for any partition of its topic (a deleted ``<partition>/`` is not in it), a store's root for any
    partition (a deleted partition folder is not in it). None of them for a path naming one partition's folder: it
    says nothing of another's."""
    if len(found) == 1 and found[0].path == path:
        return []
    aiven = parse_aiven_topic_folder(_fs.basename(path))
    if aiven is not None and all(f.layout == AIVEN and _fs.parent(f.path) == path for f in found):
        return [EmptiedFolder(path, AIVEN, ((aiven[0], aiven[1], None),))]
    named = [folder for folder in map(_emptied_by_name, skipped) if folder is not None]
    named = [folder for folder in named if not list_dir(folder.path, filesystem)]
    layouts = {f.layout for f in found}
    return named + [EmptiedFolder(path, layouts.pop() if len(layouts) == 1 else UNKNOWN_LAYOUT)]


def _holds_aiven_partitions(entries: Sequence[_fs.FileEntry]) -> bool:
    dirs = [e for e in entries if e.is_dir]
    return bool(dirs) and all(_partition_number(e.name) is not None for e in dirs)


# -- one remote partition ---------------------------------------------------------------------------------------

@dataclass(frozen=True)
class RemoteSegment:
    """One segment copy found in a remote partition folder: its files by kind (Aiven's packed ``indexes``
    included) and what its manifest says (Aiven only)."""

    base_offset: int
    segment_id: str
    files: dict  # kind -> FileEntry
    end_offset: int | None = None  # inclusive, from an Aiven manifest
    leader_epochs: tuple[tuple[int, int], ...] | None = None  # (epoch, start offset), from an Aiven manifest
    packed_indexes: tuple[tuple[str, int, int], ...] = ()  # (kind, position, size) in the .indexes object
    chunked: "ChunkedObject | None" = None  # stored as compressed and/or encrypted chunks (Aiven)
    indexes_chunked: "ChunkedObject | None" = None  # the .indexes object, when each index is stored encrypted

    @property
    def log(self) -> _fs.FileEntry:
        return self.files["log"]

    @property
    def original_size(self) -> int:
        """The segment's size as it was on disk (its object's, unless stored compressed)."""
        return self.chunked.original_size if self.chunked is not None else self.log.size

    def served(self) -> dict:
        """Its objects stored compressed or encrypted (the ``.log``, an encrypted ``.indexes``), path ->
        :class:`ChunkedObject`: what a :func:`chunked_filesystem` serves as they were on disk."""
        out = {self.log.path: self.chunked} if self.chunked is not None else {}
        if self.indexes_chunked is not None:
            out[self.files["indexes"].path] = self.indexes_chunked
        return out


@dataclass(frozen=True)
class CopyState:
    """One remote copy as the cluster's ``__remote_log_metadata`` knows it (see :mod:`kafkaseg.remote_metadata`):
    its offsets (``end_offset`` inclusive), leader epochs ``(epoch, start)``, last state's name, and ``dead``: why
    a fetch never reads it (None for a live copy), and ``size_in_bytes``: the segment's size when copied
    (``segmentSizeInBytes``: the local ``.log``'s, before any compression or encryption), ``max_timestamp_ms``: its
    records' largest timestamp (``maxTimestampMs``: the broker's timestamp lookups skip a copy below the time)."""

    segment_id: str
    start_offset: int
    end_offset: int
    leader_epochs: tuple[tuple[int, int], ...]
    state: str
    dead: str | None = None
    size_in_bytes: int | None = None
    max_timestamp_ms: int | None = None


@dataclass(frozen=True)
class CopyStates:
    """The copies of one partition the ``__remote_log_metadata`` read (``source``: which partition folder, up to
    which offset) knows, by segment id; empty when it knows the partition has none."""

    source: str
    copies: dict = field(default_factory=dict)  # segment id -> CopyState
    # why the metadata partition that holds this partition's events could not be read (a lenient read left it out):
    # the copies are then chosen by their leader epochs, as without metadata
    unreadable: str | None = None
    # the segment ids of the copies the partition folder held when these verdicts were applied to it (None: not
    # applied yet), so that a read planning again can be given the verdicts it needs (:meth:`as_planned`)
    found: frozenset | None = field(default=None, compare=False)
    # only the dead copies a plan found and left out (:meth:`as_planned`): every other copy is kept, as it kept them
    planned: bool = False

    def live(self) -> list[CopyState]:
        return sorted((c for c in self.copies.values() if c.dead is None), key=lambda c: c.start_offset)

    def applied_to(self, segment_ids) -> "CopyStates":
        """These verdicts, applied to a folder holding the copies ``segment_ids``."""
        from dataclasses import replace

        return replace(self, found=frozenset(segment_ids))

    def as_planned(self) -> "CopyStates | None":
        """What a read planning a slice's offsets again from the partition's files (a planned copy gone since)
        needs of these verdicts, to leave out the copies the plan left out: the dead copies among those the folder
        held (:attr:`found`), with ``planned`` set. Small, as it goes with every slice of the partition (the
        metadata's full record, every copy retention ever deleted included, grows with the topic's age). A copy
        uploaded since is kept, and the epochs decide for it, as for a copy the metadata does not know. None when
        the verdicts did not apply (an unreadable metadata partition): the copies are chosen by epochs again."""
        if self.unreadable is not None:
            return None
        if self.planned:
            return self
        dead = {i: c for i, c in self.copies.items() if c.dead is not None and (self.found is None or i in self.found)}
        return CopyStates(self.source, dead, planned=True)


#: How :func:`apply_copy_states`' note of the live copies missing from a folder begins.
LIVE_COPIES_MISSING = "live copies missing here, says __remote_log_metadata: "


def apply_copy_states(copies: Sequence[RemoteSegment], states: CopyStates | None,
                      notes: list[str]) -> list[RemoteSegment]:
    """``copies`` without those ``states`` says are dead, each left out with a note saying why; a copy it does not
    know is kept (the metadata read is older than the copy: its leader epochs decide, as without metadata) and
    noted; a live copy none of ``copies`` is, noted as missing. ``states`` None: ``copies`` as they are; a plan's
    verdicts carried to a read planning again (:meth:`CopyStates.as_planned`): only its dead copies left out."""
    if states is None:
        return list(copies)
    if states.unreadable is not None:
        notes.append(f"__remote_log_metadata ({states.source}) could not be read ({states.unreadable}): left out "
                     "(onCorruption=skip), so the copies are chosen by their leader epochs, as without it")
        return list(copies)
    kept = []
    unknown = []
    for copy in copies:
        state = states.copies.get(copy.segment_id)
        if state is None and states.planned:  # (a read planning again: the plan kept it, or it is new since)
            kept.append(copy)
        elif state is None:
            unknown.append(copy)
            kept.append(copy)
        elif state.dead is not None:
            notes.append(f"ignored {_fs.basename(copy.log.path)}: {state.dead}, says __remote_log_metadata "
                         f"({states.source})")
        else:
            kept.append(copy)
    if states.planned:
        return kept
    if unknown:
        names = ", ".join(_fs.basename(c.log.path) for c in unknown[:3]) + (
            f" (+{len(unknown) - 3} more)" if len(unknown) > 3 else "")
        notes.append(f"__remote_log_metadata ({states.source}) does not know {len(unknown)} copies ({names}): "
                     "uploaded after the metadata read ends; kept, and chosen by their leader epochs")
    present = {c.segment_id for c in copies}
    missing = [c for c in states.live() if c.segment_id not in present]
    if missing:
        notes.append(LIVE_COPIES_MISSING + ", ".join(
            f"{c.segment_id} (offsets {c.start_offset}-{c.end_offset})" for c in missing[:5])
            + (f" (+{len(missing) - 5} more)" if len(missing) > 5 else ""))
    if states.copies or copies:
        notes.append(f"__remote_log_metadata ({states.source}): {len(states.live())} live copies, "
                     f"{len(copies)} found, {len(kept)} kept")
    return kept


def remote_segments(entries: Sequence[_fs.FileEntry], notes: list[str]) -> list[RemoteSegment]:
    """The segment copies of one remote partition folder's listing, by (base offset, segment id), sorted; files of
    a copy without its ``.log`` are noted and left out."""
    groups: dict[tuple[int, str], dict] = {}
    for entry in entries:
        match = None if entry.is_dir else _REMOTE_FILE.match(entry.name)
        if match is None:
            continue
        if offset_past_a_long(match.group(1)):  # (as a log dir's segment: layout's test and words)
            raise LayoutError(f"{entry.path}: {past_a_long_words(match.group(1))}")
        base = int(match.group(1))
        groups.setdefault((base, match.group(2)), {})[match.group(3)] = entry
    copies = []
    for (base, segment_id), files in sorted(groups.items()):
        if "log" not in files:
            notes.append(f"ignored {', '.join(sorted(_fs.basename(e.path) for e in files.values()))}: no .log "
                         "beside them (a copy being deleted)")
            continue
        copies.append(RemoteSegment(base, segment_id, files))
    return copies


def _manifest_field(manifest: dict, path: str, *keys, kind=None):
    value = manifest
    for key in keys:
        if not isinstance(value, dict) or key not in value:
            raise LayoutError(f"{path}: manifest has no {'.'.join(keys)}")
        value = value[key]
    if kind is not None and (not isinstance(value, kind) or isinstance(value, bool) and kind is not bool):
        raise LayoutError(f"{path}: manifest's {'.'.join(keys)} is {value!r}, not a {kind.__name__}")
    return value


def read_aiven_manifest(segment: RemoteSegment, filesystem, key_ring=None, known_keys: dict | None = None, *,
                        unavailable_ok: bool = False) -> RemoteSegment:
    """``segment`` with what its ``.rsm-manifest`` says: its end offset, leader epochs, packed index ranges and,
    for a segment stored compressed or encrypted, where its chunks are (:func:`chunked_object`), with the segment's
    data key (:func:`kafkaseg.storage.encryption.unwrap_data_key`: from ``key_ring``, or ``known_keys``; with
    ``unavailable_ok``, an :class:`~kafkaseg.storage.encryption.UnavailableKey` when neither has it, so that
    only reading this copy fails). Manifests are read once per process (:data:`_MANIFESTS`).

    Raises :class:`LayoutError` naming the manifest when the segment is encrypted and no key given opens it, when
    the chunk index does not describe the object, or when the manifest is not one kafkaseg knows.
    """
    entry = segment.files["rsm-manifest"]
    indexes = segment.files.get("indexes")
    key = (_fs.store_key(filesystem), entry.path, entry.size, entry.mtime_ms, segment.log.size, segment.base_offset,
           indexes.size if indexes is not None else None)
    with _MANIFESTS_LOCK:
        known = _MANIFESTS.get(key)
        if known is not None:
            _MANIFESTS.move_to_end(key)
    if known is None:
        known = _manifest_facts(segment, filesystem)
        with _MANIFESTS_LOCK:
            _MANIFESTS[key] = known
            while len(_MANIFESTS) > _MANIFESTS_KEPT:
                _MANIFESTS.popitem(last=False)
    from dataclasses import replace

    end, epochs, packed, chunked, indexes_chunked, encryption = known
    if encryption is not None:
        from kafkaseg.errors import KeyUnavailableError
        from kafkaseg.storage.encryption import UnavailableKey, unwrap_data_key

        try:
            data_key = unwrap_data_key(key_ring, encryption, entry.path, known_keys)
        except KeyUnavailableError as err:
            if not unavailable_ok:
                raise
            data_key = UnavailableKey(encryption[0].partition(":")[0], encryption[0],
                                      "neither the keys the read was planned with nor a key ring here open it (a "
                                      f"copy uploaded since planning?): {err}")
        chunked = replace(chunked, data_key=data_key)
        if indexes_chunked is not None:
            indexes_chunked = replace(indexes_chunked, data_key=data_key)
    return replace(segment, end_offset=end, leader_epochs=epochs, packed_indexes=packed, chunked=chunked,
                   indexes_chunked=indexes_chunked)


#: Manifests read, by (store, path, size, mtime, log size, base, .indexes size): a manifest is written once, whole
#: (an object store replaces objects, never appends), so a discovery done again (a stream's every trigger, each
#: ``.log`` of a glob) reads only the ones it has not seen. Bounded: about 1.2 KB apiece with 90-character paths (a
#: reviewer's tracemalloc measurement), plus 8 bytes a chunk for a compressed copy (2 KB for a 1 GiB segment of 4 MiB
#: chunks), so 25-65 MB when full.
_MANIFESTS: "OrderedDict[tuple, tuple]" = OrderedDict()
_MANIFESTS_KEPT = 20_000
_MANIFESTS_LOCK = threading.Lock()


def _manifest_facts(segment: RemoteSegment, filesystem) -> tuple:
    """``(end offset, leader epochs, packed index ranges, chunked object or None, the .indexes object's chunks or
    None, (dataKey text, aad) or None)`` of ``segment``'s manifest (see :func:`read_aiven_manifest`); the data key
    is not unwrapped here."""
    path = segment.files["rsm-manifest"].path
    try:
        manifest = json.loads(_fs.read_small_file(path, filesystem, max_bytes=_MANIFEST_CAP))
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise LayoutError(f"{path}: not a JSON manifest ({err})") from err
    if not isinstance(manifest, dict) or manifest.get("version") != "1":
        version = manifest.get("version") if isinstance(manifest, dict) else None
        raise LayoutError(f"{path}: manifest version {version!r}; kafkaseg reads version \"1\"")
    log = segment.log
    encryption = None
    if manifest.get("encryption") is not None:
        from kafkaseg.storage.encryption import decode_aad

        wrapped = _manifest_field(manifest, path, "encryption", "dataKey", kind=str)
        encryption = (wrapped, decode_aad(_manifest_field(manifest, path, "encryption", "aad", kind=str), path))
    chunks = _manifest_field(manifest, path, "chunkIndex", kind=dict)
    compressed = _manifest_field(manifest, path, "compression", kind=bool)
    chunked = chunked_object(chunks, path, log, compressed=compressed, encrypted=encryption is not None)
    packed = []
    indexes = _manifest_field(manifest, path, "segmentIndexes", kind=dict)
    for kind in _INDEX_KINDS:
        where = indexes.get(kind)
        if where is None:
            continue  # a segment without aborted transactions has no transaction index
        position = _manifest_field(manifest, path, "segmentIndexes", kind, "position", kind=int)
        size = _manifest_field(manifest, path, "segmentIndexes", kind, "size", kind=int)
        if position < 0 or size < 0:
            raise LayoutError(f"{path}: manifest's segmentIndexes.{kind} is at {position} for {size} bytes")
        packed.append((kind, position, size))
    indexes_chunked = None
    if encryption is not None:
        packed, indexes_chunked = _encrypted_indexes(packed, path, segment.files.get("indexes"))
    end = epochs = None
    metadata = manifest.get("remoteLogSegmentMetadata")
    if isinstance(metadata, dict):
        start = _manifest_field(manifest, path, "remoteLogSegmentMetadata", "startOffset", kind=int)
        if start != segment.base_offset:
            raise LayoutError(f"{path}: manifest says the segment starts at {start}, its name at "
                              f"{segment.base_offset}")
        end = _manifest_field(manifest, path, "remoteLogSegmentMetadata", "endOffset", kind=int)
        raw = _manifest_field(manifest, path, "remoteLogSegmentMetadata", "segmentLeaderEpochs", kind=dict)
        try:
            epochs = tuple(sorted((int(epoch), int(offset)) for epoch, offset in raw.items()))
        except (TypeError, ValueError) as err:
            raise LayoutError(f"{path}: manifest's segmentLeaderEpochs {raw!r} are not epoch: offset") from err
    return end, epochs, tuple(packed), chunked, indexes_chunked, encryption


def _encrypted_indexes(packed: list, path: str, indexes: _fs.FileEntry | None) -> tuple[list, "ChunkedObject"]:
    """An encrypted segment's index ranges in its ``.indexes`` object as served decrypted, and where each is
    stored: every index is one encrypted chunk (28 bytes more than the index), an empty one none, back to back in
    the manifest's order (``SegmentIndexesV1Builder``)."""
    from kafkaseg.storage.encryption import OVERHEAD

    stored, original = array("q", [0]), array("q", [0])
    plain = []
    for kind, position, size in sorted(packed, key=lambda entry: entry[1]):
        if size and size < OVERHEAD or position != stored[-1]:
            raise LayoutError(f"{path}: manifest's segmentIndexes.{kind} at {position} for {size} bytes is not "
                              f"the next encrypted index (at {stored[-1]}, at least {OVERHEAD} bytes or none)")
        plain.append((kind, original[-1], size - OVERHEAD if size else 0))
        if size:
            stored.append(position + size)
            original.append(original[-1] + size - OVERHEAD)
    if indexes is None:  # (as for a copy stored as it was: its indexes are rebuilt from the log; which ones it had
        return plain, None  # is kept, see SegmentFiles.indexes_lost)
    if indexes.size != stored[-1]:
        raise LayoutError(f"{path}: the manifest's encrypted indexes take {stored[-1]} bytes; "
                          f"{_fs.basename(indexes.path)} holds {indexes.size} bytes")
    return plain, ChunkedObject(0, original[-1], stored, compressed=False, original_starts=original)


def same_records(first: RemoteSegment, second: RemoteSegment, epochs_of: Callable[[RemoteSegment], object]) -> bool:
    """Whether two copies starting at the same offset hold the same records: the same size, the same end (when
    known) and the same leader epochs (by Kafka's log matching property, records at the same offsets and epochs
    are the same records)."""
    return (first.base_offset == second.base_offset and first.original_size == second.original_size
            and first.end_offset == second.end_offset and epochs_of(first) == epochs_of(second))


class OverlapResolution(NamedTuple):
    """What :func:`resolve_overlap` keeps of two overlapping copies (in order), and the note saying why."""

    kept: list
    note: str


def epochs_over(entries, low: int, high: int | None) -> tuple[tuple[int, int], ...]:
    """The ``(epoch, start)`` entries (ascending) that cover offsets ``[low, high]`` (``high`` None: no end),
    the first starting at ``low``."""
    entries = sorted(((int(e), int(s)) for e, s in entries), key=lambda entry: (entry[1], entry[0]))
    out = []
    for i, (epoch, start) in enumerate(entries):
        following = entries[i + 1][1] if i + 1 < len(entries) else None
        if following is not None and following <= low:
            continue  # ends before the range
        if high is not None and start > high:
            break
        out.append((epoch, max(start, low)))
    return tuple(out)


def resolve_overlap(first: RemoteSegment, second: RemoteSegment, epochs_of: Callable) -> OverlapResolution | None:
    """Two copies holding some of the same offsets (``second`` starts at or after ``first``, and no later than its
    end) and not the same records: which to read, by their leader epochs, or None when those do not tell.

    ``RemoteLogManager`` copies from the segment holding the next offset to copy, so after a leader change the new
    leader's first copy can start inside the last copy of the old one, or at its base and be longer (segments roll
    at different offsets on different replicas). Where the copies' leader epochs agree over the offsets both hold
    (LocalTieredStorage copies record no end: where one's epochs continue the other's), the records are the same
    (Kafka's log matching): at a shared base the copy with the later epochs, or else the longer, is read; otherwise
    the first up to the second's base, unless it holds all of the second. Where they differ (an unclean election),
    the copy with the later leader epoch is the live log's: the other is dropped, or (an older first copy) read
    only up to the second's base. Equally late epochs that differ do not tell."""
    first_epochs, second_epochs = epochs_of(first), epochs_of(second)
    if first_epochs is None or second_epochs is None:
        return None
    name_first, name_second = _fs.basename(first.log.path), _fs.basename(second.log.path)
    low = second.base_offset
    ends = [end for end in (first.end_offset, second.end_offset) if end is not None]
    high = min(ends) if ends else None
    over_first, over_second = epochs_over(first_epochs, low, high), epochs_over(second_epochs, low, high)
    if not over_first or not over_second:
        return None
    if len(ends) < 2:  # an end unknown: one's epochs must continue the other's
        shorter = min(len(over_first), len(over_second))
        agree = over_first[:shorter] == over_second[:shorter]
    else:
        agree = over_first == over_second
    newest_first, newest_second = _newest(first, epochs_of), _newest(second, epochs_of)
    if newest_first is None or newest_second is None:
        return None
    same_base = first.base_offset == second.base_offset
    if agree:
        if same_base:
            ranked = sorted((first, second), key=lambda c: (
                newest_first if c is first else newest_second, c.end_offset or -1, c.original_size))
            kept, dropped = ranked[1], ranked[0]
            later = max(newest_first, newest_second)
            how = ("the same records from the same base and more (a leader change: segments roll at other offsets "
                   "on another replica)" if newest_first == newest_second else
                   f"the same base with leader epochs that continue the other's to a later one ({later})")
            return OverlapResolution([kept], f"ignored {_fs.basename(dropped.log.path)}: "
                                             f"{_fs.basename(kept.log.path)} holds {how}")
        if len(ends) == 2 and second.end_offset <= first.end_offset:
            return OverlapResolution([first], f"ignored {name_second}: {name_first} holds all its offsets with the "
                                              "same leader epochs")
        return OverlapResolution([first, second], f"{name_first} is read up to offset {low}, where {name_second} "
                                                  "starts with the same records (a leader change: the new leader "
                                                  "copies from the segment holding the next offset)")
    if newest_first > newest_second:
        return OverlapResolution([first], f"ignored {name_second}: {name_first} holds its first offsets with a "
                                          f"later leader epoch ({newest_first}), the live log's after an unclean "
                                          "election; the rest of it is the replaced log's")
    if newest_second > newest_first:
        if same_base:
            return OverlapResolution([second], f"ignored {name_first}: {name_second} holds the same offsets "
                                               f"with a later leader epoch ({newest_second}), the live log's "
                                               "after an unclean election")
        return OverlapResolution([first, second], f"{name_first} is read up to offset {low} only: from there "
                                                  f"{name_second} holds the same offsets with a later leader epoch "
                                                  f"({newest_second}), the live log's after an unclean election")
    return None


def _newest(copy: RemoteSegment, epochs_of: Callable) -> int | None:
    """The latest leader epoch of ``copy``'s own offsets, None when not known (none recorded, or none inside)."""
    entries = epochs_of(copy)
    over = epochs_over(entries, copy.base_offset, copy.end_offset) if entries else ()
    return max(e for e, _ in over) if over else None


def live_copies(copies: Sequence[RemoteSegment], unfinished: Sequence[RemoteSegment], epochs_of: Callable,
                notes: list[str]) -> list[RemoteSegment]:
    """The copies of one remote partition (sorted by base offset and segment id) that are the live log's, by their
    leader epochs (``epochs_of(copy)``: ``(epoch, start)`` entries, or None when not known), each decision
    appended to ``notes``: an upload done twice is read once, overlapping copies are resolved by
    :func:`resolve_overlap`, and a copy whose epochs are all older than the latest epoch kept before it is a
    replaced log's, dropped when that epoch is the latest of any copy. Raises :class:`LayoutError` where the epochs
    do not tell, and for an ``unfinished`` upload (no manifest) between finished copies whose offsets none of them
    holds."""
    newest_of = {(copy.base_offset, copy.segment_id): _newest(copy, epochs_of) for copy in copies}
    newest = max((e for e in newest_of.values() if e is not None), default=None)
    kept: list[RemoteSegment] = []
    latest: tuple[int, RemoteSegment] | None = None  # the latest epoch of the copies kept, and its copy

    def keep(copy: RemoteSegment) -> None:
        nonlocal latest
        epoch = newest_of[copy.base_offset, copy.segment_id]
        if epoch is not None and (latest is None or epoch > latest[0]):
            latest = (epoch, copy)

    for copy in copies:
        previous = kept[-1] if kept else None
        mine = newest_of[copy.base_offset, copy.segment_id]
        if previous is None or not (previous.base_offset == copy.base_offset or (
                previous.end_offset is not None and previous.end_offset >= copy.base_offset)):
            if latest is not None and mine is not None and mine < latest[0]:  # epochs never go back along a log
                if latest[0] != newest:  # which of the two is the replaced log's is not known
                    raise LayoutError(
                        f"{copy.log.path} comes after {latest[1].log.path} with older leader epochs (up to {mine}, "
                        f"against {latest[0]}), and copies with a later epoch ({newest}) do not say which of the "
                        "two is the replaced log's (after unclean elections); which is live is recorded only in the "
                        "cluster's __remote_log_metadata topic: give the .log files to read as paths")
                notes.append(f"ignored {_fs.basename(copy.log.path)}: its leader epochs (up to {mine}) are older "
                             f"than {latest[0]} of {_fs.basename(latest[1].log.path)} before it, the latest of any "
                             "copy, so it is a copy of the log an unclean election replaced")
                continue
            kept.append(copy)
            keep(copy)
            continue
        if previous.base_offset == copy.base_offset and same_records(previous, copy, epochs_of):
            notes.append(f"ignored {_fs.basename(copy.log.path)}: another copy of the records of "
                         f"{_fs.basename(previous.log.path)} (same offsets, size and leader epochs; an upload "
                         "done twice)")
            continue
        resolved = resolve_overlap(previous, copy, epochs_of)
        if resolved is None:
            raise LayoutError(f"{copy.log.path} and {previous.log.path} are copies of the same offsets from "
                              f"{copy.base_offset} holding different records, and their leader epochs do not say "
                              "which is the live log's; which one is live is recorded only in the cluster's "
                              "__remote_log_metadata topic: give the .log files to read as paths")
        kept[-1:] = resolved.kept
        notes.append(resolved.note)
        for survivor in resolved.kept:
            keep(survivor)
    for copy in unfinished:  # uploads go in offset order: one between finished copies is a hole unless covered
        # (below them all it is the log's old start, being deleted; above, an upload in progress)
        covered = any(k.base_offset <= copy.base_offset and (k.end_offset is None or k.end_offset >= copy.base_offset)
                      for k in kept)
        if not covered and any(k.base_offset > copy.base_offset for k in kept) and any(
                k.base_offset < copy.base_offset for k in kept):
            raise LayoutError(f"{copy.log.path}: offsets from {copy.base_offset} are in no finished copy, only in "
                              "this upload, which has no .rsm-manifest (the plugin uploads it last); the copies "
                              "after it cannot be read as the rest of the same log")
    return kept


def manifest_epochs(kept: Sequence[RemoteSegment]) -> list[tuple[int, int]]:
    """The ``(epoch, start offset)`` entries of the live log the Aiven copies ``kept`` (:func:`live_copies`) hold:
    each copy's ``segmentLeaderEpochs`` over the offsets it is read for (up to the next copy kept: a copy read only
    up to a later leader's holds the replaced log's epochs above that), by epoch."""
    starts: dict[int, int] = {}
    following = [k.base_offset - 1 for k in kept[1:]] + [None]
    for copy, last in zip(kept, following):
        high = last if last is not None else copy.end_offset
        for epoch, start in epochs_over(copy.leader_epochs or (), copy.base_offset, high):
            starts[epoch] = min(start, starts.get(epoch, start))
    return sorted(starts.items())


def epochs_from_checkpoint(segment: RemoteSegment, filesystem) -> tuple[ckpt.EpochEntry, ...] | None:
    """A LocalTieredStorage copy's ``.leader_epoch_checkpoint`` (None when absent); raises
    :class:`CorruptCheckpointError` or :class:`LayoutError` when unreadable."""
    entry = segment.files.get("leader_epoch_checkpoint")
    if entry is None:
        return None
    return ckpt.read_leader_epoch_checkpoint(entry.path, filesystem)



# -- segments the plugin stored as compressed or encrypted chunks ------------------------------------------------
#
# compression.enabled (KafkaRemoteStorageManager.transformation, transform/CompressionChunkEnumeration.java): the
# segment is cut into chunks of originalChunkSize bytes (the last one shorter), each compressed on its own into one
# zstd frame with its content size, stored back to back. The manifest's chunkIndex is then "variable":
#     transformedChunks = base64(zstd(ChunkSizesBinaryCodec))      (manifest/index/serde/*.java), big-endian:
#         count int32 | count 0: nothing more | count 1: size int32
#                     | else: base int32, bytesPerValue int8, (count - 1) x (size - base) in bytesPerValue bytes,
#                       last size int32
# Chunk i holds original bytes [i * originalChunkSize, ...); its frame starts at the sum of the sizes before it.
# encryption.enabled (kafkaseg.storage.encryption): each chunk, compressed or not, is then encrypted on its own and
# stored 28 bytes longer; without compression the index is "fixed" (manifest/index/FixedSizeChunkIndex.java):
#     transformedChunkSize = originalChunkSize + 28, finalTransformedChunkSize = the last chunk's + 28
# A segment stored as it was on disk has a "fixed" index with transformedChunkSize = originalChunkSize.

_MAX_CHUNK_SIZES_BYTES = 10 * 1024 * 1024  # TransformedChunksDeserializer.MAX_DECOMPRESSED_SIZE
_MAX_CHUNK_BYTES = 256 * 1024 * 1024  # chunk.size is an int; a chunk is decompressed whole, so cap it


@dataclass(frozen=True)
class ChunkedObject:
    """Where the chunks of an object stored compressed and/or encrypted are: original chunk size (0: chunks of
    their own sizes, ``original_starts``), original size, and each chunk's start in the object (``starts[i]``..
    ``starts[i + 1]``; one more entry than chunks), an ``array('q')``: 8 bytes a chunk, kept for every manifest in
    :data:`_MANIFESTS`. ``compressed``: each chunk is a zstd frame; ``data_key``: each chunk is encrypted with it
    (:class:`kafkaseg.storage.encryption.DataKey`; decrypted before it is decompressed). An encrypted ``.indexes``
    object is one chunk an index (``original_starts``)."""

    chunk_size: int
    original_size: int
    starts: "array" = field(hash=False)
    compressed: bool = True
    data_key: object = None
    original_starts: "array | None" = field(default=None, hash=False)

    def original_range(self, i: int) -> tuple[int, int]:
        """Where chunk ``i`` is in the object as served: ``(start, size)``."""
        if self.original_starts is not None:
            return self.original_starts[i], self.original_starts[i + 1] - self.original_starts[i]
        start = i * self.chunk_size
        return start, min(self.chunk_size, self.original_size - start)

    def chunk_at(self, position: int) -> int:
        """The chunk holding byte ``position`` (``0 <= position < original_size``) of the object as served."""
        if self.original_starts is None:
            return position // self.chunk_size
        return bisect.bisect_right(self.original_starts, position) - 1


def decode_chunk_sizes(text: str, path: str) -> list[int]:
    """The transformed chunk sizes of a variable chunk index (``transformedChunks``). Raises :class:`LayoutError`
    naming the manifest when they do not decode."""
    import base64
    import binascii
    import struct

    from kafkaseg import codecs
    from kafkaseg.errors import CorruptDataError

    try:
        raw = codecs.decompress(4, base64.b64decode(text, validate=True), max_output=_MAX_CHUNK_SIZES_BYTES)
    except (binascii.Error, ValueError, CorruptDataError) as err:
        raise LayoutError(f"{path}: the manifest's transformedChunks do not decode ({err})") from err
    raw = bytes(raw)
    try:
        (count,) = struct.unpack_from(">i", raw, 0)
        if count <= 1:
            return [] if count == 0 else [struct.unpack_from(">i", raw, 4)[0]]
        base, width = struct.unpack_from(">ib", raw, 4)
        if not 1 <= width <= 4 or len(raw) != 9 + (count - 1) * width + 4:
            raise ValueError(f"{len(raw)} bytes for {count} sizes of {width} bytes")
        sizes = [base + int.from_bytes(raw[9 + i * width:9 + (i + 1) * width], "big") for i in range(count - 1)]
        sizes.append(struct.unpack_from(">i", raw, 9 + (count - 1) * width)[0])
    except (struct.error, ValueError) as err:
        raise LayoutError(f"{path}: the manifest's transformedChunks do not decode ({err})") from err
    return sizes


def chunked_object(chunks: dict, path: str, log: _fs.FileEntry, *, compressed: bool = True,
                   encrypted: bool = False) -> ChunkedObject | None:
    """The :class:`ChunkedObject` a manifest's chunk index describes, checked against the object as listed; None
    for a segment stored as it was on disk (then the index must say so)."""
    from kafkaseg.storage.encryption import OVERHEAD

    within = {"chunkIndex": chunks}  # (so errors name the manifest's field)
    chunk_size = _manifest_field(within, path, "chunkIndex", "originalChunkSize", kind=int)
    original = _manifest_field(within, path, "chunkIndex", "originalFileSize", kind=int)
    kind = "variable" if compressed else "fixed"
    if chunks.get("type") != kind:
        stored = "compressed" if compressed else "encrypted" if encrypted else "stored as it was"
        raise LayoutError(f"{path}: a {stored} segment's chunk index is {chunks.get('type')!r}, not {kind!r}")
    if not compressed and not encrypted:
        transformed = chunks.get("transformedChunkSize")
        if transformed != chunk_size or original != log.size:
            raise LayoutError(f"{path}: the manifest's chunk index ({kind!r}, original size {original}) does not "
                              f"describe {_fs.basename(log.path)} ({log.size} bytes) stored as it was on disk")
        return None
    count = -(-original // chunk_size) if chunk_size > 0 else -1
    if compressed:
        sizes = decode_chunk_sizes(_manifest_field(within, path, "chunkIndex", "transformedChunks", kind=str), path)
    else:  # encrypted only: every chunk 28 bytes longer, the last as long as it is
        transformed = _manifest_field(within, path, "chunkIndex", "transformedChunkSize", kind=int)
        final = _manifest_field(within, path, "chunkIndex", "finalTransformedChunkSize", kind=int)
        if count > 0 and (transformed != chunk_size + OVERHEAD
                          or final != original - (count - 1) * chunk_size + OVERHEAD):
            raise LayoutError(f"{path}: the manifest's chunk index (chunks of {chunk_size} bytes stored in "
                              f"{transformed}, the last in {final}, {original} bytes in all) is not that of an "
                              f"encrypted segment (each chunk {OVERHEAD} bytes longer)")
        sizes = [transformed] * (count - 1) + [final] if count > 0 else []
    if chunk_size > _MAX_CHUNK_BYTES:
        raise LayoutError(f"{path}: chunks of {chunk_size} bytes (chunk.size) are above kafkaseg's "
                          f"{_MAX_CHUNK_BYTES}-byte cap: a read decompresses a chunk whole")
    least = OVERHEAD if encrypted else 1
    if not 0 < chunk_size or original < 0 or len(sizes) != count or any(
            s < least for s in sizes) or sum(sizes) != log.size:
        raise LayoutError(f"{path}: the manifest's chunk index ({len(sizes)} chunks of {chunk_size} bytes, "
                          f"{original} bytes in all, {sum(sizes)} stored) does not describe "
                          f"{_fs.basename(log.path)} ({log.size} bytes)")
    starts = array("q", [0])
    for size in sizes:
        starts.append(starts[-1] + size)
    return ChunkedObject(chunk_size, original, starts, compressed=compressed)


#: Decompressed chunks kept, across every open compressed copy of the process (readers keep their files open for
#: the scan: a cache per file would hold two chunks for each of thousands of segments), by (object, chunk): the
#: most recently used up to this many bytes, and always the last two.
CHUNK_CACHE_BYTES = 64 * 1024 * 1024
_CHUNKS: "OrderedDict[tuple, bytes]" = OrderedDict()
_CHUNKS_BYTES = [0]
_CHUNKS_LOCK = threading.Lock()
_OPENED = itertools.count()


def _after_fork_in_child() -> None:
    """A forked child starts with fresh locks (a fork while another thread held one would leave it held) and
    empty caches."""
    global _CHUNKS_LOCK, _MANIFESTS_LOCK
    _CHUNKS_LOCK, _MANIFESTS_LOCK = threading.Lock(), threading.Lock()
    _CHUNKS.clear()
    _CHUNKS_BYTES[0] = 0
    _MANIFESTS.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def _keep_chunk(key: tuple, data: bytes) -> None:
    with _CHUNKS_LOCK:
        previous = _CHUNKS.pop(key, None)
        _CHUNKS_BYTES[0] += len(data) - (len(previous) if previous is not None else 0)
        _CHUNKS[key] = data
        while _CHUNKS_BYTES[0] > CHUNK_CACHE_BYTES and len(_CHUNKS) > 2:
            _, dropped = _CHUNKS.popitem(last=False)
            _CHUNKS_BYTES[0] -= len(dropped)


class _ChunkedFile:
    """An object stored as compressed and/or encrypted chunks, read as it was: positioned reads decrypt and
    decompress the chunks they span, kept in one process-wide cache (:data:`CHUNK_CACHE_BYTES`), so memory is
    bounded by configuration and the chunk size, never by the segment's or by how many are open."""

    def __init__(self, handle, path: str, chunked: ChunkedObject):
        self._handle, self._path, self._chunked = handle, path, chunked
        self._position = 0
        self._key = (next(_OPENED), path)  # this open file's: the object is not known to stay the same
        self._mine: set[int] = set()  # the chunks it put in the cache
        self.closed = False

    # the file protocol pyarrow.PythonFile uses
    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def writable(self) -> bool:
        return False

    def tell(self) -> int:
        return self._position

    def seek(self, offset: int, whence: int = 0) -> int:
        base = (0, self._position, self._chunked.original_size)[whence]
        self._position = max(0, base + offset)
        return self._position

    def size(self) -> int:
        return self._chunked.original_size

    def close(self, *, blocking: bool = True) -> None:
        """Drops this file's chunks from the cache: no other open file shares them. Not ``blocking`` (from a
        finalizer, which may run in a forked child before its locks are renewed, or inside a holder of the lock
        when the garbage collector runs): left to the cache's eviction when the lock is taken."""
        self.closed = True
        lock = _CHUNKS_LOCK
        if not lock.acquire(blocking=blocking):
            return
        try:
            for i in self._mine:
                dropped = _CHUNKS.pop((*self._key, i), None)
                if dropped is not None:
                    _CHUNKS_BYTES[0] -= len(dropped)
            self._mine.clear()
        finally:
            lock.release()

    def __del__(self):
        try:
            self.close(blocking=False)
        except Exception:  # (interpreter shutdown)
            pass

    def _chunk(self, i: int, stored: dict | None = None) -> bytes:
        """Chunk ``i`` as it was: from the cache, else decrypted and/or decompressed from its stored bytes
        (``stored[i]`` when fetched already, else read)."""
        from kafkaseg import codecs
        from kafkaseg.errors import CorruptDataError

        key = (*self._key, i)
        with _CHUNKS_LOCK:
            data = _CHUNKS.get(key)
            if data is not None:
                _CHUNKS.move_to_end(key)
        if data is not None:
            return data
        chunked = self._chunked
        start, end = chunked.starts[i], chunked.starts[i + 1]
        origin, want = chunked.original_range(i)
        what = f"chunk {i} (original bytes {origin}..)"
        data = stored.pop(i) if stored and i in stored else self._handle.read_at(end - start, start)
        if chunked.data_key is not None:
            from kafkaseg.storage.encryption import decrypt_chunk

            data = decrypt_chunk(chunked.data_key, data, self._path, start, f"encrypted {what}")
        try:
            if chunked.compressed:
                data = codecs.decompress(4, data, max_output=want)
            data = bytes(data)
            if len(data) != want:
                raise ValueError(f"it holds {len(data)} bytes, not {want}")
        except (CorruptDataError, ValueError) as err:
            done = "decompress" if chunked.compressed else "hold what the manifest says"
            raise CorruptDataError(f"{'compressed' if chunked.compressed else 'decrypted'} {what} does not {done}: "
                                   f"{err}", path=self._path, position=start) from err
        _keep_chunk(key, data)
        self._mine.add(i)
        return data

    def _fetch(self, first: int, last: int) -> dict:
        """The stored bytes of chunks ``first``..``last`` that are not in the cache, in one read when there are
        several (an encrypted ``.indexes`` object is a chunk an index: one request for all, as for a plain one)
        and together no larger than the cache."""
        with _CHUNKS_LOCK:
            missing = [i for i in range(first, last + 1) if (*self._key, i) not in _CHUNKS]
        starts = self._chunked.starts
        if len(missing) < 2 or starts[missing[-1] + 1] - starts[missing[0]] > CHUNK_CACHE_BYTES:
            return {}
        low = starts[missing[0]]
        data = memoryview(self._handle.read_at(starts[missing[-1] + 1] - low, low))  # sliced without copies
        return {i: data[starts[i] - low:starts[i + 1] - low] for i in missing}

    def read(self, n: int = -1) -> bytes:
        chunked = self._chunked
        end = chunked.original_size if n is None or n < 0 else min(chunked.original_size, self._position + n)
        parts = []
        stored = self._fetch(chunked.chunk_at(self._position), chunked.chunk_at(end - 1)) \
            if self._position < end else {}
        while self._position < end:
            i = chunked.chunk_at(self._position)
            data = self._chunk(i, stored)
            within = self._position - chunked.original_range(i)[0]
            piece = data[within:within + end - self._position]
            parts.append(piece)
            self._position += len(piece)
        return b"".join(parts)


class ChunkedObjects(pafs.FileSystemHandler):
    """A read-only filesystem handler over ``base`` that serves the segments in ``objects`` (path ->
    :class:`ChunkedObject`) decompressed, as the segment files they were, and every other path as ``base`` does.
    Wrapped in a ``pyarrow.fs.PyFileSystem`` (:func:`chunked_filesystem`), it is the filesystem of an Aiven
    partition with compressed segments, so every reader of the partition reads them like any segment. Pickles
    with its base (to Spark executors)."""

    def __init__(self, base, objects: dict):
        self.base, self.objects = base, dict(objects)

    def __reduce__(self):
        return ChunkedObjects, (self.base, self.objects)

    def __eq__(self, other):
        return (isinstance(other, ChunkedObjects) and _fs.same_store(self.base, other.base)
                and self.objects == other.objects)

    def get_type_name(self):
        return f"kafkaseg-chunked+{self.base.type_name}"

    def normalize_path(self, path):
        return self.base.normalize_path(path)

    def _info(self, info):
        chunked = self.objects.get(info.path)
        if chunked is None or info.type != pafs.FileType.File:
            return info
        return pafs.FileInfo(info.path, pafs.FileType.File, size=chunked.original_size, mtime_ns=info.mtime_ns)

    def get_file_info(self, paths):
        return [self._info(info) for info in self.base.get_file_info(paths)]

    def get_file_info_selector(self, selector):
        return [self._info(info) for info in self.base.get_file_info(selector)]

    def open_input_file(self, path):
        chunked = self.objects.get(path)
        if chunked is None:
            return self.base.open_input_file(path)
        import pyarrow as pa

        return pa.PythonFile(_ChunkedFile(self.base.open_input_file(path), path, chunked), mode="r")

    def open_input_stream(self, path):
        return self.open_input_file(path)

    def _read_only(self, *args, **kwargs):
        raise OSError("kafkaseg reads tiered-storage copies and never writes to them")

    create_dir = delete_dir = delete_dir_contents = delete_root_dir_contents = delete_file = _read_only
    move = copy_file = open_output_stream = open_append_stream = _read_only


def chunked_filesystem(filesystem, objects: dict):
    """``filesystem`` serving ``objects`` (path -> :class:`ChunkedObject`) decompressed (see
    :class:`ChunkedObjects`); ``filesystem`` itself when there are none. A filesystem that already is one is
    extended, not wrapped again."""
    known = {**served_decompressed(filesystem), **objects}
    base = _fs.base_store(filesystem)
    return pafs.PyFileSystem(ChunkedObjects(base, known)) if known else base


def served_decompressed(filesystem) -> dict:
    """The objects a :func:`chunked_filesystem` serves decompressed (path -> :class:`ChunkedObject`); empty for
    any other filesystem."""
    handler = getattr(filesystem, "handler", None)
    return dict(handler.objects) if isinstance(handler, ChunkedObjects) else {}
