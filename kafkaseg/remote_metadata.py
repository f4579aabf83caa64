"""Which tiered-storage (KIP-405) copies are live, from the cluster's ``__remote_log_metadata`` topic, as the
broker's ``RemoteLogMetadataCache`` knows it (Spark-free; reads the topic's partitions with kafkaseg's own
segment reader and decoder).

Design
------
A broker with the default ``TopicBasedRemoteLogMetadataManager`` records every remote copy's life in
``__remote_log_metadata`` (50 partitions by default, ``remote.log.metadata.topic.num.partitions``; a user
partition's events all go to partition ``toPositive(murmur2(int32 bytes of Objects.hash(topicId lsb, topicId msb,
partition))) % count``, ``RemoteLogMetadataTopicPartitioner``). Brokers keep that topic's replicas in their log dirs
like any other, so a read given log dirs usually has some of it at hand.

* :func:`read_remote_log_metadata` (the entry point planning uses through discovery's hook) takes the
  ``__remote_log_metadata-<n>`` replicas discovery found, keeps one replica per metadata partition (the highest
  high watermark, as reads choose), decodes its record values up to its log end, not its checkpointed high
  watermark, which lags the events brokers acted on
  (:func:`kafkaseg.wire.internal.remote_log_metadata.decode_remote_log_metadata`) and replays them
  (:func:`replay`), partition by partition in offset order, as ``ConsumerTask`` feeds
  ``RemotePartitionMetadataStore``. A record that does not decode is a :class:`CorruptDataError` naming the
  segment and offset.
* :func:`replay` is the state machine of ``RemoteLogMetadataCache`` and ``RemoteLogLeaderEpochState``, per user
  partition (topic id, partition):

  - a ``RemoteLogSegmentMetadata`` must be ``COPY_SEGMENT_STARTED`` for an id not seen yet (else the event is
    dropped, as ``addCopyInProgressSegment``'s ``checkStateTransition`` drops it); the copy is then in progress;
  - an update for an id never seen is dropped (the broker drops it while loading, and logs it once loaded);
    transitions follow ``RemoteLogSegmentState.isValidTransition`` (STARTED -> FINISHED | DELETE_STARTED,
    FINISHED -> DELETE_STARTED, DELETE_STARTED -> DELETE_FINISHED, or the same state again); others are dropped;
  - ``COPY_SEGMENT_FINISHED``: for each leader epoch of the copy, the epoch's offset map takes the copy at the
    epoch's start offset in it (over any copy there), after removing (as superseded duplicates) the epoch's
    entries from that offset up while the epoch's highest copied offset so far is not past the new copy's end of
    that epoch;
  - ``DELETE_SEGMENT_STARTED``: the copy leaves every epoch's offset map (retention is deleting it);
    ``DELETE_SEGMENT_FINISHED``: the broker forgets it; here it is kept as deleted, so that objects still in a
    bucket (a backup made earlier) are known dead;
  - a ``RemotePartitionDeleteMetadata`` (the topic was deleted) marks the whole partition's copies dead.

  A copy is **live** when it is in some epoch's offset map: what ``remoteLogSegmentMetadata(epoch, offset)``, the
  fetch path, can return. Every other known copy is dead, with why: never finished (COPY_SEGMENT_STARTED only),
  being deleted, deleted, superseded by a named copy of the same epoch, or its partition deleted.
* The result, per (topic id, partition), is a :class:`kafkaseg.storage.tiered.CopyStates` (a storage value, so
  that ``layout.read_tiered_partition`` can leave dead copies out without importing this module): the known
  copies by segment id with their offsets, epochs and verdict. A partition the metadata read has no record of is
  *covered* (known to have no copy, so every copy found is newer than the metadata read) only when its metadata
  partition, under the default 50 partitions, is among those read; otherwise the metadata says nothing of it and
  its copies are chosen by leader epochs alone, as without metadata.

Planning passes :func:`read_remote_log_metadata` to :func:`kafkaseg.storage.layout.discover` unless the
``remoteLogMetadata=ignore`` option says the metadata copy at hand is stale; discovery calls it only when it
found both remote copies and metadata partitions, so a read without them is exactly as before.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field
from typing import Iterable, Mapping

from kafkaseg.errors import CorruptDataError, KafkaSegError
from kafkaseg.storage.layout import (REMOTE_LOG_METADATA_TOPIC, PartitionDir, choose_replicas,
                                      partition_log_end_offset)
from kafkaseg.storage.tiered import CopyState, CopyStates
from kafkaseg.wire.internal.remote_log_metadata import (
    RemoteLogSegmentMetadata, RemoteLogSegmentMetadataUpdate, RemoteLogSegmentState as State,
    RemotePartitionDeleteMetadata, decode_remote_log_metadata)

__all__ = ["METADATA_TOPIC", "DEFAULT_METADATA_PARTITIONS", "metadata_partition", "replay",
           "read_remote_log_metadata", "RemoteLogMetadataRead", "READ_WAYS_ON", "ON_CORRUPTION_WAYS_ON"]

METADATA_TOPIC = REMOTE_LOG_METADATA_TOPIC
#: ``remote.log.metadata.topic.num.partitions``' default (``TopicBasedRemoteLogMetadataManagerConfig``)
DEFAULT_METADATA_PARTITIONS = 50

_VALID = {  # RemoteLogSegmentState.isValidTransition (a state to itself is valid too)
    None: {State.COPY_SEGMENT_STARTED},
    State.COPY_SEGMENT_STARTED: {State.COPY_SEGMENT_FINISHED, State.DELETE_SEGMENT_STARTED},
    State.COPY_SEGMENT_FINISHED: {State.DELETE_SEGMENT_STARTED},
    State.DELETE_SEGMENT_STARTED: {State.DELETE_SEGMENT_FINISHED},
    State.DELETE_SEGMENT_FINISHED: set(),
}


def _int32(n: int) -> int:
    n &= 0xFFFFFFFF
    return n - (1 << 32) if n >= 1 << 31 else n


def _murmur2(data: bytes) -> int:
    """Kafka's ``Utils.murmur2`` (the producer's default partitioner hash), as a signed 32-bit int."""
    m, r = 0x5BD1E995, 24
    h = (0x9747B28C ^ len(data)) & 0xFFFFFFFF
    whole = len(data) // 4
    for i in range(whole):
        k = int.from_bytes(data[4 * i:4 * i + 4], "little")
        k = (k * m) & 0xFFFFFFFF
        k ^= k >> r
        k = (k * m) & 0xFFFFFFFF
        h = ((h * m) & 0xFFFFFFFF) ^ k
    tail = data[4 * whole:]
    if len(tail) == 3:
        h ^= tail[2] << 16
    if len(tail) >= 2:
        h ^= tail[1] << 8
    if tail:
        h ^= tail[0]
        h = (h * m) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * m) & 0xFFFFFFFF
    h ^= h >> 15
    return _int32(h)


def metadata_partition(topic_id: str, partition: int, partitions: int = DEFAULT_METADATA_PARTITIONS) -> int:
    """The ``__remote_log_metadata`` partition holding the events of user partition (``topic_id``, ``partition``)
    (``RemoteLogMetadataTopicPartitioner.metadataPartition``)."""
    import base64

    raw = base64.urlsafe_b64decode(topic_id + "=" * (-len(topic_id) % 4))
    msb, lsb = struct.unpack(">qq", raw)
    h = 1  # Objects.hash(Long lsb, Long msb, Integer partition) = Arrays.hashCode
    for value in ((lsb ^ (lsb >> 32) & 0xFFFFFFFF) & 0xFFFFFFFF, (msb ^ (msb >> 32) & 0xFFFFFFFF) & 0xFFFFFFFF,
                  partition & 0xFFFFFFFF):
        h = (31 * h + value) & 0xFFFFFFFF
    return (_murmur2(h.to_bytes(4, "big")) & 0x7FFFFFFF) % partitions


# -- RemoteLogMetadataCache -----------------------------------------------------------------------------------------

class _Epoch:
    """``RemoteLogLeaderEpochState``: the finished copies of one leader epoch by their start offset in it."""

    def __init__(self):
        self.by_offset: dict[int, str] = {}
        self.highest: int | None = None

    def finished(self, start: int, segment_id: str, end: int) -> list[str]:
        superseded = []
        while self.by_offset and self.highest is not None and self.highest <= end:
            last = max(self.by_offset)
            if last < start:
                break
            superseded.append(self.by_offset.pop(last))
        replaced = self.by_offset.get(start)
        if replaced is not None and replaced != segment_id:  # put over it: the broker forgets it the same
            superseded.append(replaced)
        self.by_offset[start] = segment_id
        if self.highest is None or end > self.highest:
            self.highest = end
        return superseded

    def deleting(self, start: int, segment_id: str) -> None:
        if self.by_offset.get(start) == segment_id:
            del self.by_offset[start]


@dataclass
class _Partition:
    topic: str
    segments: dict = field(default_factory=dict)  # segment id -> RemoteLogSegmentMetadata (its latest state)
    epochs: dict = field(default_factory=dict)  # leader epoch -> _Epoch
    superseded_by: dict = field(default_factory=dict)  # segment id -> the id that superseded it
    deleted: RemotePartitionDeleteMetadata | None = None
    dropped: int = 0  # events the cache drops (unknown id, invalid transition)


def _epoch_ranges(metadata: RemoteLogSegmentMetadata):
    """(epoch, its start offset in the copy, its last offset in the copy) for each of the copy's epochs."""
    entries = list(metadata.segment_leader_epochs)
    for i, (epoch, start) in enumerate(entries):
        end = entries[i + 1][1] - 1 if i + 1 < len(entries) else metadata.end_offset
        yield epoch, start, end


def _apply(part: _Partition, event) -> None:
    if isinstance(event, RemotePartitionDeleteMetadata):
        part.deleted = event
        return
    segment_id = event.segment_id.id
    existing = part.segments.get(segment_id)
    if isinstance(event, RemoteLogSegmentMetadata):
        if event.state is not State.COPY_SEGMENT_STARTED or (
                existing is not None and existing.state is not State.COPY_SEGMENT_STARTED):
            part.dropped += 1
            return
        part.segments[segment_id] = event
        return
    if existing is None or (event.state is not existing.state and event.state not in _VALID[existing.state]):
        part.dropped += 1
        return
    updated = existing.with_update(event)
    part.segments[segment_id] = updated
    if event.state is State.COPY_SEGMENT_FINISHED:
        for epoch, start, end in _epoch_ranges(updated):
            for gone in part.epochs.setdefault(epoch, _Epoch()).finished(start, segment_id, end):
                if gone != segment_id:
                    part.superseded_by[gone] = segment_id
        part.superseded_by.pop(segment_id, None)
    elif event.state is State.DELETE_SEGMENT_STARTED:
        for epoch, start, _ in _epoch_ranges(updated):
            part.epochs.setdefault(epoch, _Epoch()).deleting(start, segment_id)


def _verdicts(part: _Partition) -> dict[str, CopyState]:
    live = {segment_id for epoch in part.epochs.values() for segment_id in epoch.by_offset.values()}
    out = {}
    for segment_id, metadata in part.segments.items():
        state = metadata.state
        if part.deleted is not None:
            why = f"its partition's remote copies are deleted ({part.deleted.state.name}: the topic was deleted)"
        elif segment_id in live:
            why = None
        elif state is State.COPY_SEGMENT_STARTED:
            why = "its upload never finished (COPY_SEGMENT_STARTED only)"
        elif state is State.DELETE_SEGMENT_STARTED:
            why = "remote retention is deleting it (DELETE_SEGMENT_STARTED)"
        elif state is State.DELETE_SEGMENT_FINISHED:
            why = "remote retention deleted it (DELETE_SEGMENT_FINISHED)"
        else:
            other = part.superseded_by.get(segment_id)
            why = (f"superseded by copy {other}, which holds its offsets of the same leader epoch from the same start "
                   "or further (an upload repeated after a leader change)" if other else
                   "no leader epoch's offsets lead to it")
        out[segment_id] = CopyState(segment_id, metadata.start_offset, metadata.end_offset,
                                    tuple(metadata.segment_leader_epochs), state.name, why,
                                    metadata.segment_size_in_bytes, metadata.max_timestamp_ms)
    return out


def replay(events: Iterable) -> dict[tuple[str, int], tuple[str, dict[str, CopyState], int]]:
    """Replay ``__remote_log_metadata`` values (decoded, in offset order) as ``RemoteLogMetadataCache`` does: per
    (topic id, partition), ``(topic, copies by segment id, events dropped)`` (see the module docstring). Snapshot
    records (a broker's own snapshot file's, never the topic's) are ignored."""
    parts: dict[tuple[str, int], _Partition] = {}
    for event in events:
        if not isinstance(event, (RemoteLogSegmentMetadata, RemoteLogSegmentMetadataUpdate,
                                  RemotePartitionDeleteMetadata)):
            continue
        tip = event.topic_id_partition
        part = parts.setdefault((tip.topic_id, tip.partition), _Partition(tip.topic))
        _apply(part, event)
    return {key: (part.topic, _verdicts(part), part.dropped) for key, part in parts.items()}


# -- reading the topic --------------------------------------------------------------------------------------------

def _values(pdir: PartitionDir, upper: int) -> Iterable[tuple[str, int, bytes | None]]:
    """``(segment path, offset, value)`` of every data record of ``pdir`` below ``upper``; one batch in memory."""
    from kafkaseg.decode import decode
    from kafkaseg.decode.api import DecodeRequest
    from kafkaseg.storage.segment import SegmentReader

    start = pdir.log_start_offset or 0
    for i, segment in enumerate(pdir.segments):
        following = pdir.segments[i + 1].base_offset if i + 1 < len(pdir.segments) else None
        if segment.base_offset >= upper or (following is not None and following <= start):
            continue
        with SegmentReader(segment.log_path, segment.filesystem or pdir.filesystem) as reader:
            for header in reader.iter_headers(0, max_batch_bytes=None):
                if header.is_control or header.last_offset < start:
                    continue
                if header.base_offset >= upper:
                    break
                data = reader.read_at(header.position, header.size)
                result = decode(memoryview(data), DecodeRequest(
                    path=segment.log_path, base_position=header.position, max_batch_bytes=max(header.size, 1 << 20),
                    min_offset=start, max_offset=upper))
                for offset, value in zip(result.columns["offset"].to_pylist(), result.columns["value"].to_pylist()):
                    yield segment.log_path, offset, value


@dataclass(frozen=True)
class RemoteLogMetadataRead:
    """What the ``__remote_log_metadata`` partitions given say: per (topic id, partition) the copies they know
    (:class:`CopyStates`), which metadata partitions were read (and from where, up to which offset)."""

    partitions: Mapping[tuple[str, int], CopyStates]
    read: Mapping[int, tuple[str, int]]  # metadata partition -> (folder, offset read up to)
    # metadata partition -> (folder, why): corrupt, left out by a lenient read
    unreadable: Mapping[int, tuple[str, str]] = field(default_factory=dict)
    # (topic id, partition) -> its topic's name, as the events name it
    topics: Mapping[tuple[str, int], str] = field(default_factory=dict)

    def live_partitions(self) -> list[tuple[str, str, int]]:
        """``(topic, topic id, partition)`` of every partition with a live copy, sorted: the partitions whose copies
        a tiered-storage store should hold (discovery's answer to a store that holds none)."""
        return sorted((self.topics.get(key, ""), *key) for key, states in self.partitions.items()
                      if states.unreadable is None and states.live())

    def copy_states(self, topic_id: str | None, partition: int) -> CopyStates | None:
        """The copies the metadata knows of (``topic_id``, ``partition``); an empty :class:`CopyStates` when the
        metadata partition that holds its events (under the default partition count) was read and has none; None
        when the metadata read says nothing of it."""
        if topic_id is None:
            return None
        known = self.partitions.get((topic_id, partition))
        if known is not None:
            return known
        try:
            number = metadata_partition(topic_id, partition)
        except (ValueError, struct.error):
            return None
        bad = self.unreadable.get(number)
        if bad is not None:
            return CopyStates(bad[0], {}, unreadable=bad[1])
        where = self.read.get(number)
        if where is None:
            return None
        return CopyStates(f"{where[0]}, up to offset {where[1]}", {})


#: How a read goes on past a corrupt metadata record: its read options (a tool without them names its own switch:
#: ``ways_on``, or through planning ``ReadOptions.metadata_ways_on``)
READ_WAYS_ON = ("remoteLogMetadata=ignore reads the tiered copies without the metadata (chosen by their leader "
                "epochs), onCorruption=skip leaves this metadata partition out")
#: ... and that of `kafkaseg offsets`/`locate` and jobs/lookup.py, whose switch is --on-corruption (none of them takes
#: remoteLogMetadata)
ON_CORRUPTION_WAYS_ON = ("--on-corruption skip leaves this metadata partition out (the tiered copies of its "
                         "partitions then chosen by their leader epochs)")


def read_remote_log_metadata(partitions: Iterable[PartitionDir], *, lenient: bool = False,
                             ways_on: str = READ_WAYS_ON) -> RemoteLogMetadataRead:
    """Replay the ``__remote_log_metadata`` replicas among ``partitions`` (one per metadata partition: the
    highest high watermark) up to each one's log end (its high watermark when the end cannot be told: the
    checkpointed high watermark lags the events the brokers acted on); see the module docstring. Raises a
    :class:`CorruptDataError` naming the segment and offset of a record that does not decode (or a batch that
    fails its CRC), saying how to read on (``ways_on``: the read options by default; a command-line tool or job
    passes its own switches); ``lenient`` (``onCorruption=skip``) leaves that metadata partition out
    instead, whole: a missed FINISHED event would drop a live copy, a missed DELETE_STARTED read a dead one, so its
    partitions' copies are chosen by their leader epochs, as without metadata (noted)."""
    metadata = [p for p in partitions if p.topic == METADATA_TOPIC and p.tiered is None and p.segments]
    read: dict[int, tuple[str, int]] = {}
    states: dict[tuple[str, int], CopyStates] = {}
    unreadable: dict[int, tuple[str, str]] = {}
    topics: dict[tuple[str, int], str] = {}
    for choice in choose_replicas(metadata, with_remote=False):
        pdir = choice.chosen
        try:
            end = partition_log_end_offset(pdir, max_batch_bytes=None)
        except KafkaSegError:
            end = None
        # to the log end, not the high watermark: the one on disk is a checkpoint (every 5 s, a follower's later),
        # and an event above it is an action a broker already took (a FINISHED is written once the upload is whole,
        # and the local segment goes once it is consumed), so stopping there can leave a live copy out
        upper = end if end is not None else pdir.high_watermark
        if upper is None:
            continue

        def events():
            for path, offset, value in _values(pdir, upper):  # noqa: B023 - consumed within this iteration
                try:
                    yield decode_remote_log_metadata(value)
                except CorruptDataError as err:
                    raise CorruptDataError(f"__remote_log_metadata record at offset {offset} does not decode: "
                                           f"{err}", path=path) from err

        source = f"{pdir.path}, up to offset {upper}"
        try:
            replayed = replay(events())
        except CorruptDataError as err:
            if not lenient:
                raise CorruptDataError(f"{err.detail}; {ways_on}", path=err.path, position=err.position) from err
            unreadable[pdir.partition] = (pdir.path, str(err))
            continue
        read[pdir.partition] = (pdir.path, upper)
        for key, (topic, copies, _) in replayed.items():
            states[key] = CopyStates(source, copies)
            topics[key] = topic
    return RemoteLogMetadataRead(states, read, unreadable, topics)
