"""``__consumer_offsets`` records: offset commits, classic group metadata, and the consumer-group (KIP-848) and
share-group (KIP-932) records (bytes -> values, no I/O).

Framing (``group-coordinator/.../GroupCoordinatorRecordSerde.java``, ``CoordinatorRecordSerde.java``)::

    key    int16 version (= the record type), then the key struct at that version
    value  int16 version, then the value struct at that version; a null value is a tombstone ("<DELETE>")

Record types (``GroupCoordinatorRecordSerde.apiMessageKeyFor``); other types are reported as unknown, as Kafka's
parser reports them. Schemas, transcribed from ``group-coordinator/src/main/resources/common/message/`` (apache/kafka
of 2024-10). Keys are never flexible and hold ``groupId`` (and ``memberId`` where shown) at the version equal to
their type; the new values are all v0 only and flexible (compact strings/arrays, tagged fields)::

    0-1 OffsetCommitKey    v0-1 (not flexible): group string, topic string, partition int32
        OffsetCommitValue  v0-4 (flexible 4+): offset int64, leaderEpoch int32 (v3+), metadata string,
                           commitTimestamp int64, expireTimestamp int64 (v1 only)
    2   GroupMetadataKey   v2 (not flexible): group string
        GroupMetadataValue v0-4 (flexible 4+): protocolType string, generation int32, protocol string?,
                           leader string?, currentStateTimestamp int64 (v2+), members []MemberMetadata
            MemberMetadata: memberId string, groupInstanceId string? (v3+), clientId string, clientHost string,
                            rebalanceTimeout int32 (v1+), sessionTimeout int32, subscription bytes, assignment bytes
    3   ConsumerGroupMetadata                 epoch int32, metadataHash (tag 0, int64, default 0; Kafka 4.1,
                                          KIP-1101), creationTimeMs (tag 1, int64, default -1; KIP-1282)
    4   ConsumerGroupPartitionMetadata        topics []TopicMetadata
            TopicMetadata: topicId uuid, topicName string, numPartitions int32,
                           partitionMetadata [](partition int32, racks []string)
    5   ConsumerGroupMemberMetadata (+member) instanceId string?, rackId string?, clientId string, clientHost string,
                                          subscribedTopicNames []string, subscribedTopicRegex string?,
                                          rebalanceTimeoutMs int32, serverAssignor string?,
                                          classicMemberMetadata (tag 0, nullable, default null):
                                              sessionTimeoutMs int32, supportedProtocols [](name string, metadata bytes)
    6   ConsumerGroupTargetAssignmentMetadata assignmentEpoch int32
    7   ConsumerGroupTargetAssignmentMember (+member)   topicPartitions [](topicId uuid, partitions []int32)
    8   ConsumerGroupCurrentMemberAssignment (+member)  memberEpoch int32, previousMemberEpoch int32, state int8,
                                          assignedPartitions [](topicId uuid, partitions []int32),
                                          partitionsPendingRevocation [](topicId uuid, partitions []int32)
    9   ShareGroupPartitionMetadata           as 4
    10  ShareGroupMemberMetadata (+member)    rackId string?, clientId string, clientHost string,
                                          subscribedTopicNames []string
    11  ShareGroupMetadata                    epoch int32, metadataHash int64 (2025; 2024-10: epoch only)
    12  ShareGroupTargetAssignmentMetadata    assignmentEpoch int32
    13  ShareGroupTargetAssignmentMember (+member)      as 7
    14  ShareGroupCurrentMemberAssignment (+member)     as 8 without partitionsPendingRevocation
    15  ShareGroupStatePartitionMetadata      initializingTopics []TopicPartitionsInfo,
                                          initializedTopics []TopicPartitionsInfo,
                                          deletingTopics [](topicId uuid, topicName string)
            TopicPartitionsInfo: topicId uuid, topicName string, partitions []int32, createTimestamp int64
                                          (2025; 2024-10: no initializingTopics, no createTimestamp)
    16  ConsumerGroupRegularExpression        key: groupId string, regularExpression string;
                                          value: topics []string, version int64, timestamp int64 (Kafka 4.0)

KIP-932 (share groups, 9-15) and KIP-1071 (Kafka Streams groups, 17 and above) published their schemas as "in
development, subject to non-backwards-compatible changes", and share groups' values then changed without a new
version. A share-group value is therefore read with the newest schema above and, when it does not fit whole, with
the earlier one (2024-10); one that fits neither is reported as not decoded, saying why. Streams groups' records
(types 17 and above) are reported as unknown types, as a Kafka tool that predates them reports them.

For groups of protocol type ``consumer``, each classic member's subscription and assignment bytes are themselves
``int16 version`` + ``ConsumerProtocolSubscription``/``ConsumerProtocolAssignment`` (``clients/src/main/resources/
common/message/``, v0-3, not flexible) and are shown decoded, as ``DumpLogSegments.OffsetsMessageParser`` does (it
leaves ``classicMemberMetadata``'s protocol metadata as bytes).
"""

from __future__ import annotations

from dataclasses import dataclass

from kafkaseg.errors import CorruptDataError
from kafkaseg.wire.internal.protocol import Field, Message, Reader, read_message, to_json

__all__ = ["OFFSET_COMMIT_KEY", "OFFSET_COMMIT_VALUE", "GROUP_METADATA_KEY", "GROUP_METADATA_VALUE",
           "CONSUMER_PROTOCOL_SUBSCRIPTION", "CONSUMER_PROTOCOL_ASSIGNMENT", "GroupRecord",
           "decode_group_record", "format_offsets_record"]

OFFSET_COMMIT_KEY = Message("OffsetCommitKey", "0-1", "none", (
    Field("group", "string", "0-1"),
    Field("topic", "string", "0-1"),
    Field("partition", "int32", "0-1"),
))
OFFSET_COMMIT_VALUE = Message("OffsetCommitValue", "0-4", "4+", (
    Field("offset", "int64", "0+"),
    Field("leaderEpoch", "int32", "3+", default=-1),
    Field("metadata", "string", "0+"),
    Field("commitTimestamp", "int64", "0+"),
    Field("expireTimestamp", "int64", "1", default=-1),
))
GROUP_METADATA_KEY = Message("GroupMetadataKey", "2", "none", (
    Field("group", "string", "2"),
))
_MEMBER = (
    Field("memberId", "string", "0+"),
    Field("groupInstanceId", "string", "3+", nullable="3+", default="null"),
    Field("clientId", "string", "0+"),
    Field("clientHost", "string", "0+"),
    Field("rebalanceTimeout", "int32", "1+", default=-1),
    Field("sessionTimeout", "int32", "0+"),
    Field("subscription", "bytes", "0+"),
    Field("assignment", "bytes", "0+"),
)
GROUP_METADATA_VALUE = Message("GroupMetadataValue", "0-4", "4+", (
    Field("protocolType", "string", "0+"),
    Field("generation", "int32", "0+"),
    Field("protocol", "string", "0+", nullable="0+"),
    Field("leader", "string", "0+", nullable="0+"),
    Field("currentStateTimestamp", "int64", "2+", default=-1),
    Field("members", "[]MemberMetadata", "0+", fields=_MEMBER),
))
_TOPIC_PARTITION = lambda versions: (  # noqa: E731
    Field("topic", "string", versions), Field("partitions", "[]int32", versions))
CONSUMER_PROTOCOL_SUBSCRIPTION = Message("ConsumerProtocolSubscription", "0-3", "none", (
    Field("topics", "[]string", "0+"),
    Field("userData", "bytes", "0+", nullable="0+", default="null"),
    Field("ownedPartitions", "[]TopicPartition", "1+", fields=_TOPIC_PARTITION("1+")),
    Field("generationId", "int32", "2+", default=-1),
    Field("rackId", "string", "3+", nullable="3+", default="null"),
))
CONSUMER_PROTOCOL_ASSIGNMENT = Message("ConsumerProtocolAssignment", "0-3", "none", (
    Field("assignedPartitions", "[]TopicPartition", "0+", fields=_TOPIC_PARTITION("0+")),
    Field("userData", "bytes", "0+", nullable="0+", default="null"),
))

_TOPIC_METADATA = (
    Field("topicId", "uuid", "0+"),
    Field("topicName", "string", "0+"),
    Field("numPartitions", "int32", "0+"),
    Field("partitionMetadata", "[]PartitionMetadata", "0+", fields=(
        Field("partition", "int32", "0+"), Field("racks", "[]string", "0+"))),
)
_TOPIC_ID_PARTITIONS = (Field("topicId", "uuid", "0+"), Field("partitions", "[]int32", "0+"))
_EPOCH = (Field("epoch", "int32", "0+"),)
_CONSUMER_GROUP_METADATA = _EPOCH + (
    Field("metadataHash", "int64", "0+", tagged="0+", tag=0, default=0),
    Field("creationTimeMs", "int64", "0+", tagged="0+", tag=1, default=-1),
)
_REGULAR_EXPRESSION = (
    Field("topics", "[]string", "0+"),
    Field("version", "int64", "0+"),
    Field("timestamp", "int64", "0+"),
)
_ASSIGNMENT_EPOCH = (Field("assignmentEpoch", "int32", "0+"),)
_PARTITION_METADATA = (Field("topics", "[]TopicMetadata", "0+", fields=_TOPIC_METADATA),)
_TARGET_ASSIGNMENT_MEMBER = (Field("topicPartitions", "[]TopicPartition", "0+", fields=_TOPIC_ID_PARTITIONS),)
_CURRENT_MEMBER_ASSIGNMENT = (
    Field("memberEpoch", "int32", "0+"),
    Field("previousMemberEpoch", "int32", "0+"),
    Field("state", "int8", "0+"),
    Field("assignedPartitions", "[]TopicPartitions", "0+", fields=_TOPIC_ID_PARTITIONS),
)
_CONSUMER_MEMBER_METADATA = (
    Field("instanceId", "string", "0+", nullable="0+"),
    Field("rackId", "string", "0+", nullable="0+"),
    Field("clientId", "string", "0+"),
    Field("clientHost", "string", "0+"),
    Field("subscribedTopicNames", "[]string", "0+"),
    Field("subscribedTopicRegex", "string", "0+", nullable="0+"),
    Field("rebalanceTimeoutMs", "int32", "0+", default=-1),
    Field("serverAssignor", "string", "0+", nullable="0+"),
    Field("classicMemberMetadata", "ClassicMemberMetadata", "0+", nullable="0+", tagged="0+", tag=0,
          default="null", fields=(
              Field("sessionTimeoutMs", "int32", "0+"),
              Field("supportedProtocols", "[]ClassicProtocol", "0+", fields=(
                  Field("name", "string", "0+"), Field("metadata", "bytes", "0+"))))),
)
_SHARE_MEMBER_METADATA = (
    Field("rackId", "string", "0+", nullable="0+"),
    Field("clientId", "string", "0+"),
    Field("clientHost", "string", "0+"),
    Field("subscribedTopicNames", "[]string", "0+"),
)
_SHARE_STATE_PARTITION_METADATA_2024 = (
    Field("initializedTopics", "[]TopicPartitionsInfo", "0+", fields=(
        Field("topicId", "uuid", "0+"), Field("topicName", "string", "0+"), Field("partitions", "[]int32", "0+"))),
    Field("deletingTopics", "[]TopicInfo", "0+", fields=(
        Field("topicId", "uuid", "0+"), Field("topicName", "string", "0+"))),
)
_SHARE_TOPIC_PARTITIONS_INFO = (
    Field("topicId", "uuid", "0+"), Field("topicName", "string", "0+"), Field("partitions", "[]int32", "0+"),
    Field("createTimestamp", "int64", "0+"))
_SHARE_STATE_PARTITION_METADATA = (
    Field("initializingTopics", "[]TopicPartitionsInfo", "0+", fields=_SHARE_TOPIC_PARTITIONS_INFO),
    Field("initializedTopics", "[]TopicPartitionsInfo", "0+", fields=_SHARE_TOPIC_PARTITIONS_INFO),
    Field("deletingTopics", "[]TopicInfo", "0+", fields=(
        Field("topicId", "uuid", "0+"), Field("topicName", "string", "0+"))),
)


@dataclass(frozen=True)
class _RecordType:
    kind: str
    key: Message
    value: Message
    older: tuple[Message, ...] = ()  # the value's earlier schemas at the same version, tried in turn


def _group_record(record_type: int, name: str, value_fields: tuple[Field, ...], *, member: bool = False,
                  extra_key: tuple[Field, ...] = (), older: tuple[tuple[Field, ...], ...] = ()):
    """A KIP-848/KIP-932 record: key ``<name>Key`` (groupId, and memberId with ``member`` or ``extra_key``, at
    the version equal to the type, not flexible) and value ``<name>Value`` (v0, flexible)."""
    version = str(record_type)
    key_fields = ((Field("groupId", "string", version),) + ((Field("memberId", "string", version),) if member else ())
                  + extra_key)
    kind = "".join("_" + c.lower() if c.isupper() else c for c in name).lstrip("_")
    return record_type, _RecordType(kind, Message(name + "Key", version, "none", key_fields),
                                    Message(name + "Value", "0", "0+", value_fields),
                                    tuple(Message(name + "Value", "0", "0+", fields) for fields in older))


_RECORD_TYPES = dict([
    (0, _RecordType("offset_commit", OFFSET_COMMIT_KEY, OFFSET_COMMIT_VALUE)),
    (1, _RecordType("offset_commit", OFFSET_COMMIT_KEY, OFFSET_COMMIT_VALUE)),
    (2, _RecordType("group_metadata", GROUP_METADATA_KEY, GROUP_METADATA_VALUE)),
    _group_record(3, "ConsumerGroupMetadata", _CONSUMER_GROUP_METADATA),
    _group_record(4, "ConsumerGroupPartitionMetadata", _PARTITION_METADATA),
    _group_record(5, "ConsumerGroupMemberMetadata", _CONSUMER_MEMBER_METADATA, member=True),
    _group_record(6, "ConsumerGroupTargetAssignmentMetadata", _ASSIGNMENT_EPOCH),
    _group_record(7, "ConsumerGroupTargetAssignmentMember", _TARGET_ASSIGNMENT_MEMBER, member=True),
    _group_record(8, "ConsumerGroupCurrentMemberAssignment", _CURRENT_MEMBER_ASSIGNMENT + (
        Field("partitionsPendingRevocation", "[]TopicPartitions", "0+", fields=_TOPIC_ID_PARTITIONS),),
                  member=True),
    _group_record(9, "ShareGroupPartitionMetadata", _PARTITION_METADATA),
    _group_record(10, "ShareGroupMemberMetadata", _SHARE_MEMBER_METADATA, member=True),
    _group_record(11, "ShareGroupMetadata", _EPOCH + (Field("metadataHash", "int64", "0+"),), older=(_EPOCH,)),
    _group_record(12, "ShareGroupTargetAssignmentMetadata", _ASSIGNMENT_EPOCH),
    _group_record(13, "ShareGroupTargetAssignmentMember", _TARGET_ASSIGNMENT_MEMBER, member=True),
    _group_record(14, "ShareGroupCurrentMemberAssignment", _CURRENT_MEMBER_ASSIGNMENT, member=True),
    _group_record(15, "ShareGroupStatePartitionMetadata", _SHARE_STATE_PARTITION_METADATA,
                  older=(_SHARE_STATE_PARTITION_METADATA_2024,)),
    _group_record(16, "ConsumerGroupRegularExpression", _REGULAR_EXPRESSION, extra_key=(
        Field("regularExpression", "string", "16"),)),
])
#: the types whose schemas Kafka published as in development (KIP-932), changed since without a new version
_IN_DEVELOPMENT = range(9, 16)


@dataclass(frozen=True)
class GroupRecord:
    """One decoded ``__consumer_offsets`` record. ``kind`` is ``"offset_commit"``, ``"group_metadata"``, the
    snake-case name of a newer record (``"consumer_group_member_metadata"``, ``"share_group_metadata"``...) or
    ``"unknown"`` (``key`` None then); ``value`` is None for a tombstone."""

    kind: str
    key_version: int
    key: dict | None
    value_version: int | None
    value: dict | None


def _embedded(spec: Message, data: bytes | None):
    """``int16 version`` + ``spec``; None when it does not parse (Kafka then keeps the raw bytes)."""
    if data is None or len(data) < 2:
        return None
    try:
        reader = Reader(data)
        version = reader.int16()
        return read_message(spec, data, version, 2, require_all=False)
    except CorruptDataError:
        return None


def _read_value(record_type: _RecordType, key_version: int, value: bytes, version: int) -> dict:
    """The value under its record type's newest schema, else the first earlier one it fits whole (a schema changed
    without a new version)."""
    try:
        return read_message(record_type.value, value, version, 2)
    except CorruptDataError as err:
        for spec in record_type.older:
            try:
                return read_message(spec, value, version, 2)
            except CorruptDataError:
                continue
        if key_version not in _IN_DEVELOPMENT:
            raise
        raise CorruptDataError(f"{err.detail} (Kafka published KIP-932's schemas as in development and changed some "
                               "later without a new version: kafkaseg knows those of 2024-10 and 2025, not this "
                               "one)", position=err.position) from err


def decode_group_record(key: bytes, value: bytes | None, *, expand_consumer_protocol: bool = True) -> GroupRecord:
    """Decode one record of ``__consumer_offsets``. Raises :class:`CorruptDataError` (buffer-relative positions;
    the key's for key problems, the value's for value problems) on malformed bytes."""
    if key is None:
        raise CorruptDataError("__consumer_offsets record without a key")
    reader = Reader(key)
    key_version = reader.int16()
    record_type = _RECORD_TYPES.get(key_version)
    if record_type is None:
        return GroupRecord("unknown", key_version, None, None, None)
    kind = record_type.kind
    decoded_key = read_message(record_type.key, key, key_version, 2)
    if value is None:
        return GroupRecord(kind, key_version, decoded_key, None, None)
    value_version = Reader(value).int16()
    decoded_value = _read_value(record_type, key_version, value, value_version)
    if kind == "group_metadata" and expand_consumer_protocol and decoded_value.get("protocolType") == "consumer":
        for member in decoded_value.get("members") or []:
            for name, member_spec in (("subscription", CONSUMER_PROTOCOL_SUBSCRIPTION),
                                      ("assignment", CONSUMER_PROTOCOL_ASSIGNMENT)):
                parsed = _embedded(member_spec, member.get(name))
                if parsed is not None:
                    member[name] = parsed
    return GroupRecord(kind, key_version, decoded_key, value_version, decoded_value)


def format_offsets_record(key: bytes | None, value: bytes | None, offset: int) -> tuple[str | None, str | None]:
    """``(key, payload)`` strings as ``DumpLogSegments --offsets-decoder`` prints them::

        key: {"type":"1","data":{"group":"g","topic":"t","partition":0}}
        payload: {"version":"3","data":{"offset":42,"leaderEpoch":0,"metadata":"","commitTimestamp":...}}

    Tombstones print ``<DELETE>``; unknown key types ``Unknown record type N at offset O, skipping.`` and no
    payload; undecodable records ``Error at offset O, skipping. <reason>``."""
    if key is None:
        raise CorruptDataError(f"Failed to decode message at offset {offset} using offset topic decoder (message "
                               f"had a missing key)")
    try:
        record = decode_group_record(key, value)
    except CorruptDataError as err:
        return f"Error at offset {offset}, skipping. {err}", None
    if record.kind == "unknown":
        return f"Unknown record type {record.key_version} at offset {offset}, skipping.", None
    key_text = to_json({"type": str(record.key_version), "data": record.key})
    if record.value is None:
        return key_text, "<DELETE>"
    return key_text, to_json({"version": str(record.value_version), "data": record.value})
