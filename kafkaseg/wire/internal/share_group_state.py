"""``__share_group_state`` records: the share coordinator's state of each share-partition (KIP-932; bytes ->
values, no I/O).

Framing and printout: :mod:`~kafkaseg.wire.internal.coordinator_records` (``ShareCoordinatorRecordSerde.java``,
``DumpLogSegments``' ``ShareGroupStateMessageParser``). Schemas, transcribed from ``share-coordinator/src/main/
resources/common/message/`` (apache/kafka of 2024-10 and of Kafka 4.2). Keys are not flexible; values are v0 only
and flexible::

    0  ShareSnapshotKey     groupId string, topicId uuid, partition int32
       ShareSnapshotValue   snapshotEpoch int32, stateEpoch int32, leaderEpoch int32, startOffset int64,
                            deliveryCompleteCount (tag 0, int32, default -1; Kafka 4.2, KIP-1226),
                            createTimestamp int64, writeTimestamp int64, stateBatches []StateBatch
                            (2024-10: snapshotEpoch uint16, no timestamps)
    1  ShareUpdateKey       as 0
       ShareUpdateValue     snapshotEpoch int32, leaderEpoch int32, startOffset int64,
                            deliveryCompleteCount (tag 0, as above), stateBatches []StateBatch
                            (2024-10: snapshotEpoch uint16)
           StateBatch: firstOffset int64, lastOffset int64, deliveryState int8, deliveryCount int16

KIP-932 published these schemas as in development and changed them without a new version: a value is read with the
newest schema above and, when it does not fit whole, with the 2024-10 one.
"""

from __future__ import annotations

from kafkaseg.wire.internal.coordinator_records import (CoordinatorRecord, coordinator_record_type,
                                                        decode_coordinator_record, format_coordinator_record)
from kafkaseg.wire.internal.protocol import Field

__all__ = ["decode_share_group_state_record", "format_share_group_state_record"]

_STATE_BATCHES = Field("stateBatches", "[]StateBatch", "0+", fields=(
    Field("firstOffset", "int64", "0+"),
    Field("lastOffset", "int64", "0+"),
    Field("deliveryState", "int8", "0+"),
    Field("deliveryCount", "int16", "0+"),
))
_DELIVERY_COMPLETE_COUNT = Field("deliveryCompleteCount", "int32", "0+", tagged="0+", tag=0, default=-1)


def _key(record_type: int) -> tuple[Field, ...]:
    version = str(record_type)
    return (Field("groupId", "string", version), Field("topicId", "uuid", version),
            Field("partition", "int32", version))


_RECORD_TYPES = dict([
    coordinator_record_type(0, "ShareSnapshot", _key(0), (
        Field("snapshotEpoch", "int32", "0+"),
        Field("stateEpoch", "int32", "0+"),
        Field("leaderEpoch", "int32", "0+"),
        Field("startOffset", "int64", "0+"),
        _DELIVERY_COMPLETE_COUNT,
        Field("createTimestamp", "int64", "0+"),
        Field("writeTimestamp", "int64", "0+"),
        _STATE_BATCHES,
    ), older=((
        Field("snapshotEpoch", "uint16", "0+"),
        Field("stateEpoch", "int32", "0+"),
        Field("leaderEpoch", "int32", "0+"),
        Field("startOffset", "int64", "0+"),
        _STATE_BATCHES,
    ),), in_development="KIP-932"),
    coordinator_record_type(1, "ShareUpdate", _key(1), (
        Field("snapshotEpoch", "int32", "0+"),
        Field("leaderEpoch", "int32", "0+"),
        Field("startOffset", "int64", "0+"),
        _DELIVERY_COMPLETE_COUNT,
        _STATE_BATCHES,
    ), older=((
        Field("snapshotEpoch", "uint16", "0+"),
        Field("leaderEpoch", "int32", "0+"),
        Field("startOffset", "int64", "0+"),
        _STATE_BATCHES,
    ),), in_development="KIP-932"),
])


def decode_share_group_state_record(key: bytes, value: bytes | None) -> CoordinatorRecord:
    """Decode one record of ``__share_group_state`` (kind ``"share_snapshot"``, ``"share_update"`` or
    ``"unknown"``). Raises :class:`~kafkaseg.errors.CorruptDataError` on malformed bytes."""
    return decode_coordinator_record("__share_group_state", _RECORD_TYPES, key, value)


def format_share_group_state_record(key: bytes | None, value: bytes | None, offset: int
                                    ) -> tuple[str | None, str | None]:
    """``(key, payload)`` strings as ``DumpLogSegments --share-group-state-decoder`` prints them."""
    return format_coordinator_record(decode_share_group_state_record, key, value, offset)
