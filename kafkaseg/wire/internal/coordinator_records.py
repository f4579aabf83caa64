"""Records of Kafka's coordinators (``__consumer_offsets``, ``__share_group_state``, ``__transaction_state``): one
framing, one printout (bytes -> values, no I/O).

Framing (``coordinator-common/.../CoordinatorRecordSerde.java``)::

    key    int16 record type, then the key struct (never flexible; since Kafka 4.0 the JSON files name it version 0,
           earlier ones the version equal to the type: the same bytes)
    value  int16 version, then the value struct at that version; a null value is a tombstone ("<DELETE>")

``DumpLogSegments``' parsers of these topics (``CoordinatorRecordMessageParser``) print a record as
``key: {"type":"<record type>","data":{...}} payload: {"version":"<value version>","data":{...}}``, an unknown type
as ``Unknown record type N at offset O, skipping.`` and any other failure as ``Error at offset O, skipping. <why>``.

Schemas Kafka published as "in development, subject to non-backwards-compatible changes" (KIP-932's, KIP-1071's)
changed later without a new version: a record type may list earlier schemas of its value, tried in turn when the
newest does not fit whole; a value that fits none is reported as not decoded, saying why.
"""

from __future__ import annotations

from dataclasses import dataclass

from kafkaseg.errors import CorruptDataError
from kafkaseg.wire.internal.protocol import Field, Message, Reader, VersionRange, read_message, to_json

__all__ = ["RecordType", "CoordinatorRecord", "coordinator_record_type", "decode_coordinator_record",
           "format_coordinator_record"]


@dataclass(frozen=True)
class RecordType:
    """One record type of a coordinator topic: its ``kind`` (snake-case name), key and value schemas, the value's
    earlier schemas at the same version (newest first) and, for schemas published as in development, the KIP."""

    kind: str
    key: Message
    value: Message
    older: tuple[Message, ...] = ()
    in_development: str | None = None


@dataclass(frozen=True)
class CoordinatorRecord:
    """One decoded coordinator record. ``kind`` is the record type's snake-case name or ``"unknown"`` (``key``
    None then); ``key_version`` is the record type; ``value`` is None for a tombstone."""

    kind: str
    key_version: int
    key: dict | None
    value_version: int | None
    value: dict | None


def _snake_case(name: str) -> str:
    return "".join("_" + c.lower() if c.isupper() else c for c in name).lstrip("_")


def coordinator_record_type(record_type: int, name: str, key_fields: tuple[Field, ...],
                            value_fields: tuple[Field, ...], *, older: tuple[tuple[Field, ...], ...] = (),
                            in_development: str | None = None) -> tuple[int, RecordType]:
    """``(type, RecordType)`` for a record whose key is ``<name>Key`` (``key_fields``, read at the version equal to
    the type, not flexible) and whose value is ``<name>Value`` v0 (flexible)."""
    version = str(record_type)
    return record_type, RecordType(_snake_case(name), Message(name + "Key", version, "none", key_fields),
                                   Message(name + "Value", "0", "0+", value_fields),
                                   tuple(Message(name + "Value", "0", "0+", fields) for fields in older),
                                   in_development)


def _settled(record_type: RecordType) -> bool:
    """Whether the record type's schemas are released ones (no earlier schema at the same version to tell apart):
    then bytes left after the struct are ignored, as Kafka's generated ``read`` ignores them."""
    return not record_type.older and record_type.in_development is None


def _version(data: bytes, name: str) -> int:
    """The int16 version (record type) heading a key or value, failing in ``CoordinatorRecordSerde.readVersion``'s
    words."""
    if len(data) < 2:
        raise CorruptDataError(f"Could not read version from {name}'s buffer.")
    return Reader(data).int16()


def _read_value(record_type: RecordType, value: bytes, version: int) -> dict:
    """The value under its record type's newest schema, else the first earlier one it fits whole."""
    if version not in VersionRange(record_type.value.valid):
        # the generated reader's UnsupportedVersionException, wrapped by CoordinatorRecordSerde.readMessage
        raise CorruptDataError(f"Could not read record with version {version} from value's buffer due to: Can't "
                               f"read version {version} of {record_type.value.name}.")
    try:
        return read_message(record_type.value, value, version, 2, require_all=not _settled(record_type))
    except CorruptDataError as err:
        for spec in record_type.older:
            try:
                return read_message(spec, value, version, 2)
            except CorruptDataError:
                continue
        if record_type.in_development is None:
            raise
        raise CorruptDataError(f"{err.detail} (Kafka published {record_type.in_development}'s schemas as in "
                               "development and changed some later without a new version: kafkaseg knows "
                               f"{1 + len(record_type.older)} of {record_type.value.name}, not this one)",
                               position=err.position) from err


def decode_coordinator_record(topic: str, record_types: dict[int, RecordType], key: bytes,
                              value: bytes | None) -> CoordinatorRecord:
    """Decode one record of a coordinator ``topic``. Raises :class:`CorruptDataError` (buffer-relative positions;
    the key's for key problems, the value's for value problems) on malformed bytes."""
    if key is None:
        raise CorruptDataError(f"{topic} record without a key")
    record_type_id = _version(key, "key")
    record_type = record_types.get(record_type_id)
    if record_type is None:
        return CoordinatorRecord("unknown", record_type_id, None, None, None)
    decoded_key = read_message(record_type.key, key, record_type_id, 2, require_all=not _settled(record_type))
    if value is None:
        return CoordinatorRecord(record_type.kind, record_type_id, decoded_key, None, None)
    value_version = _version(value, "value")
    return CoordinatorRecord(record_type.kind, record_type_id, decoded_key, value_version,
                             _read_value(record_type, value, value_version))


def format_coordinator_record(decode, key: bytes | None, value: bytes | None, offset: int
                              ) -> tuple[str | None, str | None]:
    """``(key, payload)`` strings of ``decode(key, value)``'s record as ``DumpLogSegments``'
    ``CoordinatorRecordMessageParser`` prints them::

        key: {"type":"1","data":{"group":"g","topic":"t","partition":0}}
        payload: {"version":"3","data":{"offset":42,"leaderEpoch":0,"metadata":"","commitTimestamp":...}}

    Tombstones print ``<DELETE>``; unknown record types ``Unknown record type N at offset O, skipping.`` and no
    payload; undecodable records ``Error at offset O, skipping. <reason>``. A record without a key raises
    :class:`CorruptDataError`, as Kafka's tool fails on one."""
    if key is None:
        raise CorruptDataError(f"Failed to decode message at offset {offset} using the specified decoder (message "
                               "had a missing key)")
    try:
        record = decode(key, value)
    except CorruptDataError as err:
        return f"Error at offset {offset}, skipping. {err}", None
    if record.kind == "unknown":
        return f"Unknown record type {record.key_version} at offset {offset}, skipping.", None
    key_text = to_json({"type": str(record.key_version), "data": record.key})
    if record.value is None:
        return key_text, "<DELETE>"
    return key_text, to_json({"version": str(record.value_version), "data": record.value})
