"""``__consumer_offsets`` records: offset commits, classic group metadata, and the consumer-group (KIP-848),
share-group (KIP-932) and Kafka Streams group (KIP-1071) records (bytes -> values, no I/O).

Framing and printout: :mod:`~kafkaseg.wire.internal.coordinator_records` (``GroupCoordinatorRecordSerde.java``).
Record types (``CoordinatorRecordType``, generated from the ``apiKey`` of the JSON files); other types are reported
as unknown, as Kafka's parser reports them. Schemas, transcribed from ``group-coordinator/src/main/resources/common/
message/`` (apache/kafka of 2024-10, and of 2025 for the later ones). Keys are never flexible and hold ``groupId``
(and ``memberId`` where shown); the new values are all v0 only and flexible (compact strings/arrays, tagged
fields)::

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
    17  StreamsGroupMetadata                  epoch int32, metadataHash int64, validatedTopologyEpoch (tag 0,
                                          int32, default -1), assignmentConfigs [](key string, value string);
                                          earlier: without assignmentConfigs; epoch only (2024-12)
    18  StreamsGroupPartitionMetadata         as 4; earlier: topics without partitionMetadata
    19  StreamsGroupMemberMetadata (+member)  instanceId string?, rackId string?, clientId string, clientHost string,
                                          rebalanceTimeoutMs int32, topologyEpoch int32, processId string,
                                          userEndpoint (nullable struct: host string, port uint16),
                                          clientTags [](key string, value string)
    20  StreamsGroupTargetAssignmentMetadata  assignmentEpoch int32
    21  StreamsGroupTargetAssignmentMember (+member)  activeTasks, standbyTasks, warmupTasks:
                                          [](subtopologyId string, partitions []int32)
    22  StreamsGroupCurrentMemberAssignment (+member) memberEpoch int32, previousMemberEpoch int32, state int8,
                                          as 21, then activeTasksPendingRevocation, standbyTasksPendingRevocation,
                                          warmupTasksPendingRevocation (as 21's)
    23  StreamsGroupTopology                  epoch int32, subtopologies [](subtopologyId string,
                                          sourceTopics []string, sourceTopicRegex []string,
                                          stateChangelogTopics []TopicInfo, repartitionSinkTopics []string,
                                          repartitionSourceTopics []TopicInfo, copartitionGroups [](sourceTopics
                                          []int16, sourceTopicRegex []int16, repartitionSourceTopics []int16))
            TopicInfo: name string, partitions int32, replicationFactor int16,
                       topicConfigs [](key string, value string)
    24  StreamsGroupTargetAssignmentResolvedTopicIds  assignmentEpoch int32, resolvedTopicIdsBySubtopology
                                          [](subtopologyId string, topicIds []uuid) (added last)

KIP-932 (share groups, 9-15) and KIP-1071 (Kafka Streams groups, 17-24) published their schemas as "in
development, subject to non-backwards-compatible changes", and their values then changed without a new version.
Such a value is therefore read with the newest schema above and, when it does not fit whole, with the earlier ones;
one that fits none is reported as not decoded, saying why. A tagged field kafkaseg does not know (one a later Kafka
added) is skipped, where that Kafka would print it.

For groups of protocol type ``consumer``, each classic member's subscription and assignment bytes are themselves
``int16 version`` + ``ConsumerProtocolSubscription``/``ConsumerProtocolAssignment`` (``clients/src/main/resources/
common/message/``, v0-3, not flexible) and are shown decoded, as ``DumpLogSegments.OffsetsMessageParser`` does (it
leaves ``classicMemberMetadata``'s protocol metadata as bytes).
"""

from __future__ import annotations

from kafkaseg.errors import CorruptDataError
from kafkaseg.wire.internal.coordinator_records import (CoordinatorRecord, RecordType, coordinator_record_type,
                                                        decode_coordinator_record, format_coordinator_record)
from kafkaseg.wire.internal.protocol import Field, Message, Reader, read_message

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


_KEY_VALUE = (Field("key", "string", "0+"), Field("value", "string", "0+"))
_STREAMS_GROUP_METADATA_HASHED = _EPOCH + (
    Field("metadataHash", "int64", "0+"),
    Field("validatedTopologyEpoch", "int32", "0+", tagged="0+", tag=0, default=-1),
)
_STREAMS_GROUP_METADATA = _STREAMS_GROUP_METADATA_HASHED + (
    Field("assignmentConfigs", "[]AssignmentConfig", "0+", fields=_KEY_VALUE),
)
_STREAMS_PARTITION_METADATA_WITHOUT_RACKS = (Field("topics", "[]TopicMetadata", "0+", fields=_TOPIC_METADATA[:3]),)
_STREAMS_PARTITION_METADATA = _PARTITION_METADATA
_STREAMS_MEMBER_METADATA = (
    Field("instanceId", "string", "0+", nullable="0+"),
    Field("rackId", "string", "0+", nullable="0+"),
    Field("clientId", "string", "0+"),
    Field("clientHost", "string", "0+"),
    Field("rebalanceTimeoutMs", "int32", "0+", default=-1),
    Field("topologyEpoch", "int32", "0+"),
    Field("processId", "string", "0+"),
    Field("userEndpoint", "Endpoint", "0+", nullable="0+", default="null", fields=(
        Field("host", "string", "0+"), Field("port", "uint16", "0+"))),
    Field("clientTags", "[]KeyValue", "0+", fields=_KEY_VALUE),
)
_TASK_IDS = (Field("subtopologyId", "string", "0+"), Field("partitions", "[]int32", "0+"))
_STREAMS_TASKS = tuple(Field(name, "[]TaskIds", "0+", fields=_TASK_IDS)
                       for name in ("activeTasks", "standbyTasks", "warmupTasks"))
# memberEpoch, previousMemberEpoch, state, the tasks, then the tasks pending revocation
_STREAMS_CURRENT_MEMBER_ASSIGNMENT = _CURRENT_MEMBER_ASSIGNMENT[:3] + _STREAMS_TASKS + tuple(
    Field(name, "[]TaskIds", "0+", fields=_TASK_IDS)
    for name in ("activeTasksPendingRevocation", "standbyTasksPendingRevocation", "warmupTasksPendingRevocation"))
_STREAMS_TOPIC_INFO = (
    Field("name", "string", "0+"),
    Field("partitions", "int32", "0+"),
    Field("replicationFactor", "int16", "0+"),
    Field("topicConfigs", "[]TopicConfig", "0+", fields=_KEY_VALUE),
)
_STREAMS_TOPOLOGY = (
    Field("epoch", "int32", "0+"),
    Field("subtopologies", "[]Subtopology", "0+", fields=(
        Field("subtopologyId", "string", "0+"),
        Field("sourceTopics", "[]string", "0+"),
        Field("sourceTopicRegex", "[]string", "0+"),
        Field("stateChangelogTopics", "[]TopicInfo", "0+", fields=_STREAMS_TOPIC_INFO),
        Field("repartitionSinkTopics", "[]string", "0+"),
        Field("repartitionSourceTopics", "[]TopicInfo", "0+", fields=_STREAMS_TOPIC_INFO),
        Field("copartitionGroups", "[]CopartitionGroup", "0+", fields=(
            Field("sourceTopics", "[]int16", "0+"),
            Field("sourceTopicRegex", "[]int16", "0+"),
            Field("repartitionSourceTopics", "[]int16", "0+"))),
    )),
)
_STREAMS_RESOLVED_TOPIC_IDS = (
    Field("assignmentEpoch", "int32", "0+"),
    Field("resolvedTopicIdsBySubtopology", "[]ResolvedTopicIds", "0+", fields=(
        Field("subtopologyId", "string", "0+"), Field("topicIds", "[]uuid", "0+"))),
)


def _group_record(record_type: int, name: str, value_fields: tuple[Field, ...], *, member: bool = False,
                  extra_key: tuple[Field, ...] = (), older: tuple[tuple[Field, ...], ...] = (),
                  in_development: str | None = None):
    """A KIP-848/KIP-932/KIP-1071 record: key ``<name>Key`` (groupId, and memberId with ``member`` or
    ``extra_key``) and value ``<name>Value`` (v0, flexible)."""
    version = str(record_type)
    key_fields = ((Field("groupId", "string", version),) + ((Field("memberId", "string", version),) if member else ())
                  + extra_key)
    return coordinator_record_type(record_type, name, key_fields, value_fields, older=older,
                                   in_development=in_development)


def _share_group_record(record_type: int, name: str, value_fields: tuple[Field, ...], **kwargs):
    return _group_record(record_type, name, value_fields, in_development="KIP-932", **kwargs)


def _streams_group_record(record_type: int, name: str, value_fields: tuple[Field, ...], **kwargs):
    return _group_record(record_type, name, value_fields, in_development="KIP-1071", **kwargs)


_RECORD_TYPES = dict([
    (0, RecordType("offset_commit", OFFSET_COMMIT_KEY, OFFSET_COMMIT_VALUE)),
    (1, RecordType("offset_commit", OFFSET_COMMIT_KEY, OFFSET_COMMIT_VALUE)),
    (2, RecordType("group_metadata", GROUP_METADATA_KEY, GROUP_METADATA_VALUE)),
    _group_record(3, "ConsumerGroupMetadata", _CONSUMER_GROUP_METADATA),
    _group_record(4, "ConsumerGroupPartitionMetadata", _PARTITION_METADATA),
    _group_record(5, "ConsumerGroupMemberMetadata", _CONSUMER_MEMBER_METADATA, member=True),
    _group_record(6, "ConsumerGroupTargetAssignmentMetadata", _ASSIGNMENT_EPOCH),
    _group_record(7, "ConsumerGroupTargetAssignmentMember", _TARGET_ASSIGNMENT_MEMBER, member=True),
    _group_record(8, "ConsumerGroupCurrentMemberAssignment", _CURRENT_MEMBER_ASSIGNMENT + (
        Field("partitionsPendingRevocation", "[]TopicPartitions", "0+", fields=_TOPIC_ID_PARTITIONS),),
                  member=True),
    _share_group_record(9, "ShareGroupPartitionMetadata", _PARTITION_METADATA),
    _share_group_record(10, "ShareGroupMemberMetadata", _SHARE_MEMBER_METADATA, member=True),
    _share_group_record(11, "ShareGroupMetadata", _EPOCH + (Field("metadataHash", "int64", "0+"),),
                        older=(_EPOCH,)),
    _share_group_record(12, "ShareGroupTargetAssignmentMetadata", _ASSIGNMENT_EPOCH),
    _share_group_record(13, "ShareGroupTargetAssignmentMember", _TARGET_ASSIGNMENT_MEMBER, member=True),
    _share_group_record(14, "ShareGroupCurrentMemberAssignment", _CURRENT_MEMBER_ASSIGNMENT, member=True),
    _share_group_record(15, "ShareGroupStatePartitionMetadata", _SHARE_STATE_PARTITION_METADATA,
                        older=(_SHARE_STATE_PARTITION_METADATA_2024,)),
    _group_record(16, "ConsumerGroupRegularExpression", _REGULAR_EXPRESSION, extra_key=(
        Field("regularExpression", "string", "16"),)),
    _streams_group_record(17, "StreamsGroupMetadata", _STREAMS_GROUP_METADATA,
                          older=(_STREAMS_GROUP_METADATA_HASHED, _EPOCH)),
    _streams_group_record(18, "StreamsGroupPartitionMetadata", _STREAMS_PARTITION_METADATA,
                          older=(_STREAMS_PARTITION_METADATA_WITHOUT_RACKS,)),
    _streams_group_record(19, "StreamsGroupMemberMetadata", _STREAMS_MEMBER_METADATA, member=True),
    _streams_group_record(20, "StreamsGroupTargetAssignmentMetadata", _ASSIGNMENT_EPOCH),
    _streams_group_record(21, "StreamsGroupTargetAssignmentMember", _STREAMS_TASKS, member=True),
    _streams_group_record(22, "StreamsGroupCurrentMemberAssignment", _STREAMS_CURRENT_MEMBER_ASSIGNMENT,
                          member=True),
    _streams_group_record(23, "StreamsGroupTopology", _STREAMS_TOPOLOGY),
    _streams_group_record(24, "StreamsGroupTargetAssignmentResolvedTopicIds", _STREAMS_RESOLVED_TOPIC_IDS),
])

#: ``decode_group_record``'s result (the generic coordinator record)
GroupRecord = CoordinatorRecord


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


def decode_group_record(key: bytes, value: bytes | None, *, expand_consumer_protocol: bool = True) -> GroupRecord:
    """Decode one record of ``__consumer_offsets``. Raises :class:`CorruptDataError` (buffer-relative positions;
    the key's for key problems, the value's for value problems) on malformed bytes."""
    record = decode_coordinator_record("__consumer_offsets", _RECORD_TYPES, key, value)
    if (record.kind == "group_metadata" and record.value is not None and expand_consumer_protocol
            and record.value.get("protocolType") == "consumer"):
        for member in record.value.get("members") or []:
            for name, member_spec in (("subscription", CONSUMER_PROTOCOL_SUBSCRIPTION),
                                      ("assignment", CONSUMER_PROTOCOL_ASSIGNMENT)):
                parsed = _embedded(member_spec, member.get(name))
                if parsed is not None:
                    member[name] = parsed
    return record


def format_offsets_record(key: bytes | None, value: bytes | None, offset: int) -> tuple[str | None, str | None]:
    """``(key, payload)`` strings as ``DumpLogSegments --offsets-decoder`` prints them (see
    :func:`~kafkaseg.wire.internal.coordinator_records.format_coordinator_record`)."""
    return format_coordinator_record(decode_group_record, key, value, offset)
