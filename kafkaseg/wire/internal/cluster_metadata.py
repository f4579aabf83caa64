"""KRaft ``__cluster_metadata`` records and Raft control records (bytes -> values, no I/O).

Metadata record value framing (``server-common/.../AbstractApiMessageSerde.java``; the key is null)::

    frameVersion  uvarint  must be 1
    apiKey        uvarint  the record type (MetadataRecordType)
    version       uvarint  the record's version
    record                 the record at that version (all metadata records are flexible from v0)

Record types decoded field by field (schemas transcribed from ``metadata/src/main/resources/common/metadata/``):
RegisterBrokerRecord (0), UnregisterBrokerRecord (1), TopicRecord (2), PartitionRecord (3), ConfigRecord (4),
PartitionChangeRecord (5), FenceBrokerRecord (7), UnfenceBrokerRecord (8), RemoveTopicRecord (9),
FeatureLevelRecord (12), ClientQuotaRecord (14), ProducerIdsRecord (15), BrokerRegistrationChangeRecord (17),
NoOpRecord (20), ZkMigrationStateRecord (21), Begin/End/AbortTransactionRecord (23-25),
RegisterControllerRecord (27); other known ids are named only.
``MetadataRecordType.toString`` is the spec name in upper snake case (``TOPIC_RECORD``).

Control records (``clients/.../record/ControlRecordType.java``): key ``int16 version, int16 type``; type 0 ABORT,
1 COMMIT (value: ``EndTransactionMarker``: int16 version, int32 coordinatorEpoch), 2 LEADER_CHANGE,
3 SNAPSHOT_HEADER, 4 SNAPSHOT_FOOTER, 5 KRAFT_VERSION, 6 KRAFT_VOTERS. Raft control values are read at version 0
(``ControlRecordUtils``), their own first field being a ``Version`` int16 (``clients/src/main/resources/common/
message/LeaderChangeMessage.json`` etc.).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from kafkaseg.errors import CorruptDataError
from kafkaseg.wire.internal.protocol import Field, Message, Reader, read_message

__all__ = ["METADATA_RECORDS", "METADATA_TYPE_NAMES", "MetadataRecord", "decode_metadata_record",
           "metadata_type_name", "CONTROL_TYPES", "ControlRecord", "decode_control_record",
           "LEADER_CHANGE_MESSAGE", "SNAPSHOT_HEADER_RECORD", "SNAPSHOT_FOOTER_RECORD", "KRAFT_VERSION_RECORD",
           "VOTERS_RECORD"]

_BROKER_ENDPOINT = (Field("Name", "string"), Field("Host", "string"), Field("Port", "uint16"),
                    Field("SecurityProtocol", "int16"))
_FEATURE = (Field("Name", "string"), Field("MinSupportedVersion", "int16"), Field("MaxSupportedVersion", "int16"))

_SPECS = [
    Message("RegisterBrokerRecord", "0-3", "0+", (
        Field("BrokerId", "int32"),
        Field("IsMigratingZkBroker", "bool", "2+", default=False),
        Field("IncarnationId", "uuid"),
        Field("BrokerEpoch", "int64"),
        Field("EndPoints", "[]BrokerEndpoint", fields=_BROKER_ENDPOINT),
        Field("Features", "[]BrokerFeature", fields=_FEATURE),
        Field("Rack", "string", nullable="0+"),
        Field("Fenced", "bool", default=True),
        Field("InControlledShutdown", "bool", "1+", default=False),
        Field("LogDirs", "[]uuid", "3+", tagged="3+", tag=0),
    ), api_key=0),
    Message("UnregisterBrokerRecord", "0", "0+", (Field("BrokerId", "int32"), Field("BrokerEpoch", "int64")),
            api_key=1),
    Message("TopicRecord", "0", "0+", (Field("Name", "string"), Field("TopicId", "uuid")), api_key=2),
    Message("PartitionRecord", "0-2", "0+", (
        Field("PartitionId", "int32", default=-1),
        Field("TopicId", "uuid"),
        Field("Replicas", "[]int32"),
        Field("Isr", "[]int32"),
        Field("RemovingReplicas", "[]int32"),
        Field("AddingReplicas", "[]int32"),
        Field("Leader", "int32", default=-1),
        Field("LeaderRecoveryState", "int8", tagged="0+", tag=0, default=0),
        Field("LeaderEpoch", "int32", default=-1),
        Field("PartitionEpoch", "int32", default=-1),
        Field("Directories", "[]uuid", "1+"),
        Field("EligibleLeaderReplicas", "[]int32", "2+", nullable="2+", tagged="2+", tag=1, default="null"),
        Field("LastKnownElr", "[]int32", "2+", nullable="2+", tagged="2+", tag=2, default="null"),
    ), api_key=3),
    Message("ConfigRecord", "0", "0+", (
        Field("ResourceType", "int8"), Field("ResourceName", "string"), Field("Name", "string"),
        Field("Value", "string", nullable="0+"),
    ), api_key=4),
    Message("PartitionChangeRecord", "0-2", "0+", (
        Field("PartitionId", "int32", default=-1),
        Field("TopicId", "uuid"),
        Field("Isr", "[]int32", nullable="0+", tagged="0+", tag=0, default="null"),
        Field("Leader", "int32", tagged="0+", tag=1, default=-2),
        Field("Replicas", "[]int32", nullable="0+", tagged="0+", tag=2, default="null"),
        Field("RemovingReplicas", "[]int32", nullable="0+", tagged="0+", tag=3, default="null"),
        Field("AddingReplicas", "[]int32", nullable="0+", tagged="0+", tag=4, default="null"),
        Field("LeaderRecoveryState", "int8", tagged="0+", tag=5, default=-1),
        Field("Directories", "[]uuid", "1+", nullable="1+", tagged="1+", tag=8, default="null"),
        Field("EligibleLeaderReplicas", "[]int32", "2+", nullable="2+", tagged="2+", tag=6, default="null"),
        Field("LastKnownElr", "[]int32", "2+", nullable="2+", tagged="2+", tag=7, default="null"),
    ), api_key=5),
    Message("FenceBrokerRecord", "0", "0+", (Field("Id", "int32"), Field("Epoch", "int64")), api_key=7),
    Message("UnfenceBrokerRecord", "0", "0+", (Field("Id", "int32"), Field("Epoch", "int64")), api_key=8),
    Message("RemoveTopicRecord", "0", "0+", (Field("TopicId", "uuid"),), api_key=9),
    Message("FeatureLevelRecord", "0", "0+", (Field("Name", "string"), Field("FeatureLevel", "int16")),
            api_key=12),
    Message("ClientQuotaRecord", "0", "0+", (
        Field("Entity", "[]EntityData", fields=(Field("EntityType", "string"),
                                                Field("EntityName", "string", nullable="0+"))),
        Field("Key", "string"), Field("Value", "float64"), Field("Remove", "bool"),
    ), api_key=14),
    Message("ProducerIdsRecord", "0", "0+", (
        Field("BrokerId", "int32"), Field("BrokerEpoch", "int64", default=-1), Field("NextProducerId", "int64"),
    ), api_key=15),
    Message("BrokerRegistrationChangeRecord", "0-2", "0+", (
        Field("BrokerId", "int32"),
        Field("BrokerEpoch", "int64"),
        Field("Fenced", "int8", tagged="0+", tag=0),
        Field("InControlledShutdown", "int8", "1+", tagged="1+", tag=1),
        Field("LogDirs", "[]uuid", "2+", tagged="2+", tag=2),
    ), api_key=17),
    Message("NoOpRecord", "0", "0+", (), api_key=20),
    Message("ZkMigrationStateRecord", "0", "0+", (Field("ZkMigrationState", "int8"),), api_key=21),
    Message("BeginTransactionRecord", "0", "0+", (
        Field("Name", "string", nullable="0+", tagged="0+", tag=0, default="null"),), api_key=23),
    Message("EndTransactionRecord", "0", "0+", (), api_key=24),
    Message("AbortTransactionRecord", "0", "0+", (
        Field("Reason", "string", nullable="0+", tagged="0+", tag=0, default="null"),), api_key=25),
    Message("RegisterControllerRecord", "0", "0+", (
        Field("ControllerId", "int32"), Field("IncarnationId", "uuid"), Field("ZkMigrationReady", "bool"),
        Field("EndPoints", "[]ControllerEndpoint", fields=_BROKER_ENDPOINT),
        Field("Features", "[]ControllerFeature", fields=_FEATURE),
    ), api_key=27),
]
METADATA_RECORDS: dict[int, Message] = {m.api_key: m for m in _SPECS}

#: Every record type id of ``metadata/src/main/resources/common/metadata/*.json`` (apiKey -> spec name), decoded or
#: not.
METADATA_TYPE_NAMES: dict[int, str] = {
    0: "RegisterBrokerRecord", 1: "UnregisterBrokerRecord", 2: "TopicRecord", 3: "PartitionRecord",
    4: "ConfigRecord", 5: "PartitionChangeRecord", 6: "AccessControlRecord", 7: "FenceBrokerRecord",
    8: "UnfenceBrokerRecord", 9: "RemoveTopicRecord", 10: "DelegationTokenRecord", 11: "UserScramCredentialRecord",
    12: "FeatureLevelRecord", 14: "ClientQuotaRecord", 15: "ProducerIdsRecord",
    17: "BrokerRegistrationChangeRecord", 18: "AccessControlEntryRecord", 19: "RemoveAccessControlEntryRecord",
    20: "NoOpRecord", 21: "ZkMigrationStateRecord", 22: "RemoveUserScramCredentialRecord",
    23: "BeginTransactionRecord", 24: "EndTransactionRecord", 25: "AbortTransactionRecord",
    26: "RemoveDelegationTokenRecord", 27: "RegisterControllerRecord", 28: "ClearElrRecord",
}


def _snake_upper(name: str) -> str:
    """``MessageGenerator.toSnakeCase(name).toUpperCase()``: an underscore before a capital that follows a
    lower-case letter."""
    out = []
    previous_capital = True
    for ch in name:
        if ch.isupper():
            if not previous_capital:
                out.append("_")
            out.append(ch.lower())
            previous_capital = True
        else:
            out.append(ch)
            previous_capital = False
    return "".join(out).upper()


def metadata_type_name(api_key: int) -> str:
    """``MetadataRecordType.fromId(id).toString()`` (e.g. ``TOPIC_RECORD``), or ``UNKNOWN(<id>)``."""
    name = METADATA_TYPE_NAMES.get(api_key)
    return _snake_upper(name) if name else f"UNKNOWN({api_key})"


@dataclass(frozen=True)
class MetadataRecord:
    """A decoded metadata record value. ``data`` is None for a type this module names but does not decode."""

    api_key: int
    version: int
    type_name: str
    data: dict | None

    def as_json_object(self) -> dict:
        """What ``DumpLogSegments --cluster-metadata-decoder`` prints: ``{"type":..,"version":..,"data":..}``."""
        return {"type": self.type_name, "version": self.version, "data": self.data}


def decode_metadata_record(value: bytes) -> MetadataRecord:
    """Decode a ``__cluster_metadata`` record value (raises :class:`CorruptDataError` on malformed bytes, a frame
    version other than 1, or garbage after the record)."""
    if value is None:
        raise CorruptDataError("metadata record without a value")
    reader = Reader(value)
    frame = reader.uvarint("frame version")
    if frame != 1:
        raise CorruptDataError(f"unknown metadata frame version {frame} (only frame version 1 is supported)",
                               position=0)
    api_key = reader.uvarint("type")
    version = reader.uvarint("version")
    spec = METADATA_RECORDS.get(api_key)
    if spec is None:
        return MetadataRecord(api_key, version, metadata_type_name(api_key), None)
    return MetadataRecord(api_key, version, metadata_type_name(api_key),
                          read_message(spec, value, version, reader.pos))


# -- control records ------------------------------------------------------------------------------------------

CONTROL_TYPES = {0: "ABORT", 1: "COMMIT", 2: "LEADER_CHANGE", 3: "SNAPSHOT_HEADER", 4: "SNAPSHOT_FOOTER",
                 5: "KRAFT_VERSION", 6: "KRAFT_VOTERS"}
_VOTER = (Field("VoterId", "int32"), Field("VoterDirectoryId", "uuid", "1+"))
LEADER_CHANGE_MESSAGE = Message("LeaderChangeMessage", "0-1", "0+", (
    Field("Version", "int16"), Field("LeaderId", "int32"),
    Field("Voters", "[]Voter", fields=_VOTER), Field("GrantingVoters", "[]Voter", fields=_VOTER)))
SNAPSHOT_HEADER_RECORD = Message("SnapshotHeaderRecord", "0", "0+", (
    Field("Version", "int16"), Field("LastContainedLogTimestamp", "int64")))
SNAPSHOT_FOOTER_RECORD = Message("SnapshotFooterRecord", "0", "0+", (Field("Version", "int16"),))
KRAFT_VERSION_RECORD = Message("KRaftVersionRecord", "0", "0+", (
    Field("Version", "int16"), Field("KRaftVersion", "int16")))
VOTERS_RECORD = Message("VotersRecord", "0", "0+", (
    Field("Version", "int16"),
    Field("Voters", "[]Voter", fields=(
        Field("VoterId", "int32"), Field("VoterDirectoryId", "uuid"),
        Field("Endpoints", "[]Endpoint", fields=(Field("Name", "string"), Field("Host", "string"),
                                                 Field("Port", "uint16"))),
        Field("KRaftVersionFeature", "KRaftVersionFeature", fields=(
            Field("MinSupportedVersion", "int16"), Field("MaxSupportedVersion", "int16"))))),
))
_CONTROL_SPECS = {2: LEADER_CHANGE_MESSAGE, 3: SNAPSHOT_HEADER_RECORD, 4: SNAPSHOT_FOOTER_RECORD,
                  5: KRAFT_VERSION_RECORD, 6: VOTERS_RECORD}
_END_TXN = struct.Struct(">hi")


@dataclass(frozen=True)
class ControlRecord:
    """A decoded control record: ``type_id``/``type_name`` from the key; for ABORT/COMMIT ``coordinator_epoch``;
    for Raft control records ``data`` (None when the value does not parse)."""

    type_id: int
    type_name: str
    coordinator_epoch: int | None = None
    data: dict | None = None


def decode_control_record(key: bytes, value: bytes | None) -> ControlRecord:
    """Decode a control record's key (and value where its type has one). Raises :class:`CorruptDataError` for a
    key shorter than 4 bytes or an end-transaction marker value shorter than 6."""
    if key is None or len(key) < 4:
        raise CorruptDataError(f"control record key needs at least 4 bytes, found {0 if key is None else len(key)}",
                               position=0)
    type_id = struct.unpack_from(">h", key, 2)[0]
    name = CONTROL_TYPES.get(type_id, "UNKNOWN")
    if type_id in (0, 1):
        if value is None or len(value) < _END_TXN.size:
            raise CorruptDataError("end transaction marker value needs 6 bytes", position=0)
        _, epoch = _END_TXN.unpack_from(value, 0)
        return ControlRecord(type_id, name, coordinator_epoch=epoch)
    spec = _CONTROL_SPECS.get(type_id)
    data = None
    if spec is not None and value is not None:
        try:
            data = read_message(spec, value, 0, require_all=False)
        except CorruptDataError:
            data = None
    return ControlRecord(type_id, name, data=data)
