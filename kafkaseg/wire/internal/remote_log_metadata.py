"""``__remote_log_metadata`` records: tiered storage's (KIP-405) segment and partition events, as Kafka's default
``TopicBasedRemoteLogMetadataManager`` writes them (bytes -> values, no I/O).

Framing of a record value (``storage/.../metadata/storage/serialization/RemoteLogMetadataSerde.java`` through
``server-common/.../serialization/BytesApiMessageSerde.java`` and ``AbstractApiMessageSerde.java``, the framing
of ``__cluster_metadata`` records)::

    frameVersion  uvarint  must be 1
    apiKey        uvarint  which record follows (below); read as a Java short
    version       uvarint  the record's version; read as a Java short
    record                 the record at that version (flexible from v0); no byte may follow it

The key is not read: Kafka writes null (``TopicBasedRemoteLogMetadataManager.storeRemoteLogMetadata``), and
``DumpLogSegments`` prints none. Records (``storage/src/main/resources/message/``, all ``validVersions`` "0",
``flexibleVersions`` "0+")::

    0 RemoteLogSegmentMetadataRecord
        remoteLogSegmentId {topicIdPartition {name string, id uuid, partition int32}, id uuid}
        startOffset int64, endOffset int64, brokerId int32, maxTimestampMs int64, eventTimestampMs int64,
        segmentLeaderEpochs []{leaderEpoch int32, offset int64}, segmentSizeInBytes int32,
        customMetadata bytes (nullable, default null), remoteLogSegmentState int8,
        txnIndexEmpty bool (tagged, tag 0; KIP-1058)
    1 RemoteLogSegmentMetadataUpdateRecord
        remoteLogSegmentId {as above}, brokerId int32, eventTimestampMs int64, customMetadata bytes (nullable),
        remoteLogSegmentState int8
    2 RemotePartitionDeleteMetadataRecord
        topicIdPartition {name string, id uuid, partition int32}, brokerId int32, eventTimestampMs int64,
        remotePartitionDeleteState int8
    3 RemoteLogSegmentMetadataSnapshotRecord (the broker's snapshot file holds these, the topic never does)
        segmentId uuid, startOffset int64, endOffset int64, brokerId int32, maxTimestampMs int64,
        eventTimestampMs int64, segmentLeaderEpochs []{leaderEpoch int32, offset int64}, segmentSizeInBytes int32,
        customMetadata bytes (nullable), remoteLogSegmentState int8, txnIndexEmpty bool (tagged, tag 0)

(A later proposal, KIP-1266, adds a v1 of these records with tagged ``brokerLeaderEpoch`` and ``endOffset`` and
keyed records; it is not in a release, and a v1 record prints as Kafka's released tool prints it: an error.)

States (``storage/api/.../RemoteLogSegmentState.java``, ``RemotePartitionDeleteState.java``): segment 0
COPY_SEGMENT_STARTED, 1 COPY_SEGMENT_FINISHED, 2 DELETE_SEGMENT_STARTED, 3 DELETE_SEGMENT_FINISHED; partition 0
DELETE_PARTITION_MARKED, 1 DELETE_PARTITION_STARTED, 2 DELETE_PARTITION_FINISHED. A segment's copy is readable
from COPY_SEGMENT_FINISHED until DELETE_SEGMENT_STARTED; an update record carries a segment's later states.

The records become Kafka's ``RemoteLogMetadata`` objects (``*Transform.fromApiMessageAndVersion``), whose
constructors refuse some values; ``DumpLogSegments --remote-log-metadata-decoder`` (``RemoteMetadataLogMessageParser``)
prints an object's ``toString()`` as the payload, or ``Error at offset O, skipping. <exception message>``:

    RemoteLogSegmentMetadata{remoteLogSegmentId=RemoteLogSegmentId{topicIdPartition=<topicId>:<topic>-<partition>,
        id=<segmentId>}, startOffset=0, endOffset=9, brokerId=1, maxTimestampMs=5, eventTimestampMs=6,
        segmentLeaderEpochs={0=0, 3=5}, segmentSizeInBytes=100, customMetadata=Optional.empty,
        state=COPY_SEGMENT_STARTED, txnIdxEmpty=false}
    RemoteLogSegmentMetadataUpdate{remoteLogSegmentId=RemoteLogSegmentId{...}, customMetadata=Optional[
        CustomMetadata{4 bytes}], state=COPY_SEGMENT_FINISHED, eventTimestampMs=0, brokerId=0}
    RemotePartitionDeleteMetadata{topicPartition=<topicId>:<topic>-<partition>, state=DELETE_PARTITION_MARKED,
        eventTimestampMs=0, brokerId=0}
    RemoteLogSegmentMetadataSnapshot{segmentId=<uuid>, startOffset=0, endOffset=9, maxTimestampMs=5,
        segmentLeaderEpochs={0=0}, segmentSizeInBytes=100, customMetadata=Optional.empty, state=...}

(``segmentLeaderEpochs`` is a Java ``TreeMap``: by epoch, the last entry of a repeated epoch kept. Kafka before
KIP-1058 (3.9 and earlier) printed no ``txnIdxEmpty``.)
"""

from __future__ import annotations

import base64
import enum
from dataclasses import dataclass
from typing import Union

from kafkaseg.errors import CorruptDataError
from kafkaseg.wire.internal.protocol import Field, Message, Reader, read_message_prefix

__all__ = ["RemoteLogSegmentState", "RemotePartitionDeleteState", "TopicIdPartition", "RemoteLogSegmentId",
           "RemoteLogSegmentMetadata", "RemoteLogSegmentMetadataUpdate", "RemotePartitionDeleteMetadata",
           "RemoteLogSegmentMetadataSnapshot", "RemoteLogMetadata", "REMOTE_LOG_METADATA_RECORDS",
           "decode_remote_log_metadata", "format_remote_log_metadata_record", "remote_log_metadata_json"]


class RemoteLogSegmentState(enum.Enum):
    """``RemoteLogSegmentState``: the value is the id stored in the records."""

    COPY_SEGMENT_STARTED = 0
    COPY_SEGMENT_FINISHED = 1
    DELETE_SEGMENT_STARTED = 2
    DELETE_SEGMENT_FINISHED = 3


class RemotePartitionDeleteState(enum.Enum):
    """``RemotePartitionDeleteState``: the value is the id stored in the records."""

    DELETE_PARTITION_MARKED = 0
    DELETE_PARTITION_STARTED = 1
    DELETE_PARTITION_FINISHED = 2


# -- schemas (storage/src/main/resources/message/*.json) ----------------------------------------------------------

_TOPIC_ID_PARTITION = (Field("Name", "string"), Field("Id", "uuid"), Field("Partition", "int32"))
_SEGMENT_ID = Field("RemoteLogSegmentId", "RemoteLogSegmentIdEntry", fields=(
    Field("TopicIdPartition", "TopicIdPartitionEntry", fields=_TOPIC_ID_PARTITION), Field("Id", "uuid")))
_LEADER_EPOCHS = Field("SegmentLeaderEpochs", "[]SegmentLeaderEpochEntry", fields=(
    Field("LeaderEpoch", "int32"), Field("Offset", "int64")))
_CUSTOM_METADATA = Field("CustomMetadata", "bytes", nullable="0+", default="null")
_TXN_INDEX_EMPTY = Field("TxnIndexEmpty", "bool", tagged="0+", tag=0, default=False)

REMOTE_LOG_METADATA_RECORDS = {
    0: Message("RemoteLogSegmentMetadataRecord", "0", "0+", (
        _SEGMENT_ID, Field("StartOffset", "int64"), Field("EndOffset", "int64"), Field("BrokerId", "int32"),
        Field("MaxTimestampMs", "int64"), Field("EventTimestampMs", "int64"), _LEADER_EPOCHS,
        Field("SegmentSizeInBytes", "int32"), _CUSTOM_METADATA, Field("RemoteLogSegmentState", "int8"),
        _TXN_INDEX_EMPTY), api_key=0),
    1: Message("RemoteLogSegmentMetadataUpdateRecord", "0", "0+", (
        _SEGMENT_ID, Field("BrokerId", "int32"), Field("EventTimestampMs", "int64"), _CUSTOM_METADATA,
        Field("RemoteLogSegmentState", "int8")), api_key=1),
    2: Message("RemotePartitionDeleteMetadataRecord", "0", "0+", (
        Field("TopicIdPartition", "TopicIdPartitionEntry", fields=_TOPIC_ID_PARTITION), Field("BrokerId", "int32"),
        Field("EventTimestampMs", "int64"), Field("RemotePartitionDeleteState", "int8")), api_key=2),
    3: Message("RemoteLogSegmentMetadataSnapshotRecord", "0", "0+", (
        Field("SegmentId", "uuid"), Field("StartOffset", "int64"), Field("EndOffset", "int64"),
        Field("BrokerId", "int32"), Field("MaxTimestampMs", "int64"), Field("EventTimestampMs", "int64"),
        _LEADER_EPOCHS, Field("SegmentSizeInBytes", "int32"), _CUSTOM_METADATA,
        Field("RemoteLogSegmentState", "int8"), _TXN_INDEX_EMPTY), api_key=3),
}


# -- the values (storage/api/src/main/java/org/apache/kafka/server/log/remote/storage/) ----------------------------

@dataclass(frozen=True)
class TopicIdPartition:
    """A user topic's partition with its topic id (a Kafka ``Uuid`` string)."""

    topic_id: str
    topic: str
    partition: int

    def kafka_text(self) -> str:
        """``TopicIdPartition.toString``."""
        return f"{self.topic_id}:{self.topic}-{self.partition}"

    def as_json_object(self) -> dict:
        return {"topicId": self.topic_id, "topic": self.topic, "partition": self.partition}


@dataclass(frozen=True)
class RemoteLogSegmentId:
    """A remote copy of a segment: its partition and the copy's own id (each upload gets a new one)."""

    topic_id_partition: TopicIdPartition
    id: str

    def kafka_text(self) -> str:
        return f"RemoteLogSegmentId{{topicIdPartition={self.topic_id_partition.kafka_text()}, id={self.id}}}"

    def as_json_object(self) -> dict:
        return {"topicIdPartition": self.topic_id_partition.as_json_object(), "id": self.id}


def _custom_metadata_text(custom_metadata: bytes | None) -> str:
    """``Optional<CustomMetadata>.toString``."""
    return "Optional.empty" if custom_metadata is None else f"Optional[CustomMetadata{{{len(custom_metadata)} bytes}}]"


def _epochs_text(epochs: tuple[tuple[int, int], ...]) -> str:
    """A ``TreeMap<Integer, Long>``'s ``toString``."""
    return "{" + ", ".join(f"{epoch}={offset}" for epoch, offset in epochs) + "}"


def _bytes_json(data: bytes | None) -> str | None:
    return None if data is None else base64.b64encode(data).decode("ascii")


def _segment_json(segment) -> dict:
    """The fields a segment's metadata and its snapshot share, as JSON (epochs as ``{"epoch": startOffset}``)."""
    return {"startOffset": segment.start_offset, "endOffset": segment.end_offset, "brokerId": segment.broker_id,
            "maxTimestampMs": segment.max_timestamp_ms, "eventTimestampMs": segment.event_timestamp_ms,
            "segmentLeaderEpochs": {str(epoch): offset for epoch, offset in segment.segment_leader_epochs},
            "segmentSizeInBytes": segment.segment_size_in_bytes,
            "customMetadata": _bytes_json(segment.custom_metadata), "state": segment.state.name,
            "txnIdxEmpty": segment.txn_index_empty}


@dataclass(frozen=True)
class RemoteLogSegmentMetadata:
    """Record 0: a segment's copy as its upload began or ended (``state``) and what it holds.
    ``segment_leader_epochs`` are (leader epoch, first offset of that epoch in the segment) by epoch;
    ``end_offset`` is inclusive; ``custom_metadata`` is the ``RemoteStorageManager`` plugin's, as it returned it."""

    segment_id: RemoteLogSegmentId
    start_offset: int
    end_offset: int
    broker_id: int
    max_timestamp_ms: int
    event_timestamp_ms: int
    segment_leader_epochs: tuple[tuple[int, int], ...]
    segment_size_in_bytes: int
    custom_metadata: bytes | None
    state: RemoteLogSegmentState
    txn_index_empty: bool = False
    version: int = 0

    @property
    def topic_id_partition(self) -> TopicIdPartition:
        return self.segment_id.topic_id_partition

    def with_update(self, update: "RemoteLogSegmentMetadataUpdate") -> "RemoteLogSegmentMetadata":
        """The segment after ``update`` (``RemoteLogSegmentMetadata.createWithUpdates``): its state, custom
        metadata, broker and event time. Raises :class:`ValueError` for another segment's update."""
        if update.segment_id != self.segment_id:
            raise ValueError(f"update of {update.segment_id.kafka_text()} applied to {self.segment_id.kafka_text()}")
        return RemoteLogSegmentMetadata(self.segment_id, self.start_offset, self.end_offset, update.broker_id,
                                        self.max_timestamp_ms, update.event_timestamp_ms, self.segment_leader_epochs,
                                        self.segment_size_in_bytes, update.custom_metadata, update.state,
                                        self.txn_index_empty, self.version)

    def kafka_text(self) -> str:
        """``RemoteLogSegmentMetadata.toString`` (with KIP-1058's ``txnIdxEmpty``, Kafka 4.0 and later)."""
        return (f"RemoteLogSegmentMetadata{{remoteLogSegmentId={self.segment_id.kafka_text()}, "
                f"startOffset={self.start_offset}, endOffset={self.end_offset}, brokerId={self.broker_id}, "
                f"maxTimestampMs={self.max_timestamp_ms}, eventTimestampMs={self.event_timestamp_ms}, "
                f"segmentLeaderEpochs={_epochs_text(self.segment_leader_epochs)}, "
                f"segmentSizeInBytes={self.segment_size_in_bytes}, "
                f"customMetadata={_custom_metadata_text(self.custom_metadata)}, state={self.state.name}, "
                f"txnIdxEmpty={'true' if self.txn_index_empty else 'false'}}}")

    def as_json_object(self) -> dict:
        return {"type": "RemoteLogSegmentMetadata", "version": self.version,
                "remoteLogSegmentId": self.segment_id.as_json_object(), **_segment_json(self)}


@dataclass(frozen=True)
class RemoteLogSegmentMetadataUpdate:
    """Record 1: a segment copy's later state (``COPY_SEGMENT_FINISHED``, ``DELETE_SEGMENT_STARTED``...)."""

    segment_id: RemoteLogSegmentId
    custom_metadata: bytes | None
    state: RemoteLogSegmentState
    event_timestamp_ms: int
    broker_id: int
    version: int = 0

    @property
    def topic_id_partition(self) -> TopicIdPartition:
        return self.segment_id.topic_id_partition

    def kafka_text(self) -> str:
        """``RemoteLogSegmentMetadataUpdate.toString``."""
        return (f"RemoteLogSegmentMetadataUpdate{{remoteLogSegmentId={self.segment_id.kafka_text()}, "
                f"customMetadata={_custom_metadata_text(self.custom_metadata)}, state={self.state.name}, "
                f"eventTimestampMs={self.event_timestamp_ms}, brokerId={self.broker_id}}}")

    def as_json_object(self) -> dict:
        return {"type": "RemoteLogSegmentMetadataUpdate", "version": self.version,
                "remoteLogSegmentId": self.segment_id.as_json_object(),
                "customMetadata": _bytes_json(self.custom_metadata), "state": self.state.name,
                "eventTimestampMs": self.event_timestamp_ms, "brokerId": self.broker_id}


@dataclass(frozen=True)
class RemotePartitionDeleteMetadata:
    """Record 2: a partition's remote copies being deleted (the topic was deleted)."""

    topic_id_partition: TopicIdPartition
    state: RemotePartitionDeleteState
    event_timestamp_ms: int
    broker_id: int
    version: int = 0

    def kafka_text(self) -> str:
        """``RemotePartitionDeleteMetadata.toString``."""
        return (f"RemotePartitionDeleteMetadata{{topicPartition={self.topic_id_partition.kafka_text()}, "
                f"state={self.state.name}, eventTimestampMs={self.event_timestamp_ms}, brokerId={self.broker_id}}}")

    def as_json_object(self) -> dict:
        return {"type": "RemotePartitionDeleteMetadata", "version": self.version,
                "topicIdPartition": self.topic_id_partition.as_json_object(), "state": self.state.name,
                "eventTimestampMs": self.event_timestamp_ms, "brokerId": self.broker_id}


@dataclass(frozen=True)
class RemoteLogSegmentMetadataSnapshot:
    """Record 3: a segment as a broker's metadata snapshot file keeps it (its partition is the file's)."""

    segment_id: str
    start_offset: int
    end_offset: int
    broker_id: int
    max_timestamp_ms: int
    event_timestamp_ms: int
    segment_leader_epochs: tuple[tuple[int, int], ...]
    segment_size_in_bytes: int
    custom_metadata: bytes | None
    state: RemoteLogSegmentState
    txn_index_empty: bool = False
    version: int = 0

    def kafka_text(self) -> str:
        """``RemoteLogSegmentMetadataSnapshot.toString`` (no broker, event time or txnIdxEmpty in it)."""
        return (f"RemoteLogSegmentMetadataSnapshot{{segmentId={self.segment_id}, startOffset={self.start_offset}, "
                f"endOffset={self.end_offset}, maxTimestampMs={self.max_timestamp_ms}, "
                f"segmentLeaderEpochs={_epochs_text(self.segment_leader_epochs)}, "
                f"segmentSizeInBytes={self.segment_size_in_bytes}, "
                f"customMetadata={_custom_metadata_text(self.custom_metadata)}, state={self.state.name}}}")

    def as_json_object(self) -> dict:
        return {"type": "RemoteLogSegmentMetadataSnapshot", "version": self.version, "segmentId": self.segment_id,
                **_segment_json(self)}


RemoteLogMetadata = Union[RemoteLogSegmentMetadata, RemoteLogSegmentMetadataUpdate, RemotePartitionDeleteMetadata,
                          RemoteLogSegmentMetadataSnapshot]


# -- decoding ---------------------------------------------------------------------------------------------------

class _Refused(Exception):
    """A value Kafka's serde or constructors refuse: ``kafka_message`` is the exception message its tool prints,
    ``error`` kafkaseg's error for it."""

    def __init__(self, kafka_message: str, error: CorruptDataError):
        super().__init__(kafka_message)
        self.kafka_message = kafka_message
        self.error = error


def _short(reader: Reader, entity: str) -> int:
    """``AbstractApiMessageSerde.unsignedIntToShort``: an unsigned varint read into a Java int, at most
    ``Short.MAX_VALUE``."""
    start = reader.pos
    try:
        value = reader.uvarint(entity) & 0xFFFFFFFF
    except CorruptDataError as err:
        raise _Refused(f"Error while reading {entity}", err) from err
    value = value - (1 << 32) if value >= 1 << 31 else value
    if value > 0x7FFF:
        raise _Refused(f"Value for {entity} was too large.",
                       CorruptDataError(f"{entity} {value} is larger than a Java short", position=start))
    return (value + 0x8000) % 0x10000 - 0x8000


def _epochs(entries: list[dict]) -> tuple[tuple[int, int], ...]:
    """The record's (epoch, offset) entries as the ``HashMap`` then ``TreeMap`` Kafka puts them in: a repeated
    epoch keeps its last offset."""
    by_epoch: dict[int, int] = {}
    for entry in entries:
        by_epoch[entry["leaderEpoch"]] = entry["offset"]
    return tuple(sorted(by_epoch.items()))


def _topic_id_partition(entry: dict) -> TopicIdPartition:
    return TopicIdPartition(entry["id"], entry["name"], entry["partition"])


def _segment_id(entry: dict) -> RemoteLogSegmentId:
    return RemoteLogSegmentId(_topic_id_partition(entry["topicIdPartition"]), entry["id"])


def _refuse(kafka_message: str, detail: str) -> _Refused:
    return _Refused(kafka_message, CorruptDataError(detail))


def _segment_state(name: str, state_id: int) -> RemoteLogSegmentState:
    """``RemoteLogSegmentState.forId``, whose null the objects' constructors refuse."""
    try:
        return RemoteLogSegmentState(state_id)
    except ValueError:
        raise _refuse("state can not be null",
                      f"{name}: remoteLogSegmentState {state_id} is not a RemoteLogSegmentState id (0-3)") from None


def _check_segment(name: str, start: int, end: int, epochs: tuple) -> None:
    """``RemoteLogSegmentMetadata``'s constructor checks, in its order."""
    if start < 0:
        raise _refuse(f"Unexpected start offset = {start}. StartOffset for a remote segment cannot be negative",
                      f"{name}: negative start offset {start}")
    if end < start:
        raise _refuse(f"Unexpected end offset = {end}. EndOffset for a remote segment cannot be less than "
                      f"startOffset = {start}", f"{name}: end offset {end} is below start offset {start}")
    _check_epochs(name, epochs)


def _check_epochs(name: str, epochs: tuple) -> None:
    if not epochs:
        raise _refuse("segmentLeaderEpochs can not be null or empty", f"{name}: no segment leader epochs")


def _build(api_key: int, version: int, data: dict) -> RemoteLogMetadata:
    """``*Transform.fromApiMessageAndVersion``, with the checks of the objects' constructors."""
    name = REMOTE_LOG_METADATA_RECORDS[api_key].name
    if api_key == 0:
        epochs = _epochs(data["segmentLeaderEpochs"])
        _check_segment(name, data["startOffset"], data["endOffset"], epochs)
        return RemoteLogSegmentMetadata(
            _segment_id(data["remoteLogSegmentId"]), data["startOffset"], data["endOffset"], data["brokerId"],
            data["maxTimestampMs"], data["eventTimestampMs"], epochs, data["segmentSizeInBytes"],
            data["customMetadata"], _segment_state(name, data["remoteLogSegmentState"]),
            data.get("txnIndexEmpty", False), version)
    if api_key == 1:
        return RemoteLogSegmentMetadataUpdate(
            _segment_id(data["remoteLogSegmentId"]), data["customMetadata"],
            _segment_state(name, data["remoteLogSegmentState"]), data["eventTimestampMs"], data["brokerId"], version)
    if api_key == 2:
        state_id = data["remotePartitionDeleteState"]
        try:
            state = RemotePartitionDeleteState(state_id)
        except ValueError:
            # Objects.requireNonNull(state) without a message: the NullPointerException's message is null
            raise _refuse("null", f"{name}: remotePartitionDeleteState {state_id} is not a "
                                  "RemotePartitionDeleteState id (0-2)") from None
        return RemotePartitionDeleteMetadata(_topic_id_partition(data["topicIdPartition"]), state,
                                             data["eventTimestampMs"], data["brokerId"], version)
    state = _segment_state(name, data["remoteLogSegmentState"])
    epochs = _epochs(data["segmentLeaderEpochs"])
    _check_epochs(name, epochs)
    return RemoteLogSegmentMetadataSnapshot(
        data["segmentId"], data["startOffset"], data["endOffset"], data["brokerId"], data["maxTimestampMs"],
        data["eventTimestampMs"], epochs, data["segmentSizeInBytes"], data["customMetadata"], state,
        data.get("txnIndexEmpty", False), version)


def _decode(value: bytes | None) -> RemoteLogMetadata:
    if value is None:
        # record.value().remaining() on a null value: the JVM's NullPointerException message
        raise _refuse('Cannot invoke "java.nio.ByteBuffer.remaining()" because the return value of '
                      '"org.apache.kafka.common.record.Record.value()" is null',
                      "__remote_log_metadata record without a value")
    reader = Reader(value)
    frame = _short(reader, "frame version")
    if frame == 0:
        raise _Refused("Could not deserialize metadata record with frame version 0. Note that upgrades from the "
                       "preview release of KRaft in 2.8 to newer versions are not supported.",
                       CorruptDataError("frame version 0 (only frame version 1 is supported)", position=0))
    if frame != 1:
        raise _Refused(f"Could not deserialize metadata record due to unknown frame version {frame}(only frame "
                       "version 1 is supported)",
                       CorruptDataError(f"unknown frame version {frame} (only frame version 1 is supported)",
                                        position=0))
    key_at = reader.pos
    api_key = _short(reader, "type")
    version = _short(reader, "version")
    spec = REMOTE_LOG_METADATA_RECORDS.get(api_key)
    if spec is None:  # MetadataRecordType.fromId, wrapped in MetadataParseException(Throwable)
        raise _Refused(f"org.apache.kafka.common.errors.UnsupportedVersionException: Unknown metadata id {api_key}",
                       CorruptDataError(f"unknown __remote_log_metadata record type {api_key} (known: 0-3)",
                                        position=key_at))
    try:
        data, after = read_message_prefix(spec, value, version, reader.pos)
    except CorruptDataError as err:
        raise _Refused(f"Failed to deserialize record with type {api_key}", err) from err
    if after < len(value):
        raise _Refused(f"Found {len(value) - after} byte(s) of garbage after {api_key}",
                       CorruptDataError(f"{spec.name} v{version}: {len(value) - after} byte(s) of garbage after "
                                        "the record", position=after))
    return _build(api_key, version, data)


def decode_remote_log_metadata(value: bytes | None) -> RemoteLogMetadata:
    """Decode one ``__remote_log_metadata`` record value into the value Kafka's ``RemoteLogMetadataSerde``
    gives. Raises :class:`CorruptDataError` (buffer-relative position) where Kafka's serde or its objects'
    constructors refuse the value (an unknown record type or version, malformed bytes, an unknown state, offsets
    or leader epochs a segment cannot have)."""
    try:
        return _decode(value)
    except _Refused as refused:
        raise refused.error from None


def format_remote_log_metadata_record(value: bytes | None, offset: int) -> str:
    """The payload ``DumpLogSegments --remote-log-metadata-decoder`` prints for a record at ``offset``: the
    object's ``toString()``, or ``Error at offset O, skipping. <Kafka's exception message>``. Never raises."""
    try:
        return _decode(value).kafka_text()
    except _Refused as refused:
        return f"Error at offset {offset}, skipping. {refused.kafka_message}"


def remote_log_metadata_json(value: bytes | None, offset: int) -> dict | str:
    """The payload as a JSON object (``kafkaseg dump --json``), or the error line of
    :func:`format_remote_log_metadata_record`."""
    try:
        return _decode(value).as_json_object()
    except _Refused as refused:
        return f"Error at offset {offset}, skipping. {refused.kafka_message}"
