"""``__consumer_offsets`` records: offset commits and classic group metadata (bytes -> values, no I/O).

Framing (``group-coordinator/.../GroupCoordinatorRecordSerde.java``, ``CoordinatorRecordSerde.java``)::

    key    int16 version (= the record type), then the key struct at that version
    value  int16 version, then the value struct at that version; a null value is a tombstone ("<DELETE>")

Key versions 0 and 1 are ``OffsetCommitKey``, 2 is ``GroupMetadataKey``; 3+ are the KIP-848 consumer-group and
share-group records (reported as unknown types here, as Kafka's parser reports types it does not know).
Schemas, transcribed from ``group-coordinator/src/main/resources/common/message/``:

    OffsetCommitKey    v0-1 (not flexible): group string, topic string, partition int32
    OffsetCommitValue  v0-4 (flexible 4+): offset int64, leaderEpoch int32 (v3+), metadata string,
                       commitTimestamp int64, expireTimestamp int64 (v1 only)
    GroupMetadataKey   v2 (not flexible): group string
    GroupMetadataValue v0-4 (flexible 4+): protocolType string, generation int32, protocol string?, leader string?,
                       currentStateTimestamp int64 (v2+), members []MemberMetadata
        MemberMetadata: memberId string, groupInstanceId string? (v3+), clientId string, clientHost string,
                        rebalanceTimeout int32 (v1+), sessionTimeout int32, subscription bytes, assignment bytes

For groups of protocol type ``consumer``, each member's subscription and assignment bytes are themselves
``int16 version`` + ``ConsumerProtocolSubscription``/``ConsumerProtocolAssignment`` (``clients/src/main/resources/
common/message/``, v0-3, not flexible) and are shown decoded, as ``DumpLogSegments.OffsetsMessageParser`` does.
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

_KEY_SPECS = {0: OFFSET_COMMIT_KEY, 1: OFFSET_COMMIT_KEY, 2: GROUP_METADATA_KEY}
_VALUE_SPECS = {0: OFFSET_COMMIT_VALUE, 1: OFFSET_COMMIT_VALUE, 2: GROUP_METADATA_VALUE}


@dataclass(frozen=True)
class GroupRecord:
    """One decoded ``__consumer_offsets`` record. ``kind`` is ``"offset_commit"``, ``"group_metadata"`` or
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


def decode_group_record(key: bytes, value: bytes | None, *, expand_consumer_protocol: bool = True) -> GroupRecord:
    """Decode one record of ``__consumer_offsets``. Raises :class:`CorruptDataError` (buffer-relative positions;
    the key's for key problems, the value's for value problems) on malformed bytes."""
    if key is None:
        raise CorruptDataError("__consumer_offsets record without a key")
    reader = Reader(key)
    key_version = reader.int16()
    spec = _KEY_SPECS.get(key_version)
    if spec is None:
        return GroupRecord("unknown", key_version, None, None, None)
    decoded_key = read_message(spec, key, key_version, 2)
    kind = "offset_commit" if key_version < 2 else "group_metadata"
    if value is None:
        return GroupRecord(kind, key_version, decoded_key, None, None)
    value_version = Reader(value).int16()
    value_spec = OFFSET_COMMIT_VALUE if kind == "offset_commit" else GROUP_METADATA_VALUE
    decoded_value = read_message(value_spec, value, value_version, 2)
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
