"""``__remote_log_metadata`` records (kafkaseg.wire.internal.remote_log_metadata) against Kafka's serde and its
tool's printout. The values are built here byte by byte from Kafka's JSON schemas
(``storage/src/main/resources/message/RemoteLogSegmentMetadataRecord.json`` and its siblings) and the framing of
``AbstractApiMessageSerde.write`` (uvarint frame version 1, uvarint api key, uvarint version), not with kafkaseg's
code; the expected lines are those of Kafka's ``DumpLogSegmentsTest.testDumpRemoteLogMetadata*`` and the objects'
``toString`` methods."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafkaseg.errors import CorruptDataError, KafkaSegError
from kafkaseg.wire.internal.remote_log_metadata import (
    RemoteLogSegmentMetadata, RemoteLogSegmentMetadataSnapshot, RemoteLogSegmentMetadataUpdate,
    RemoteLogSegmentState, RemotePartitionDeleteMetadata, RemotePartitionDeleteState, decode_remote_log_metadata,
    format_remote_log_metadata_record, remote_log_metadata_json)

TOPIC_ID_BYTES = bytes.fromhex("0123456789abcdef0123456789abcdef")
TOPIC_ID = "ASNFZ4mrze8BI0VniavN7w"  # Uuid.toString: URL-safe base64, no padding
SEGMENT_ID_BYTES = bytes.fromhex("fedcba9876543210fedcba9876543210")
SEGMENT_ID = "_ty6mHZUMhD-3LqYdlQyEA"


# -- a hand encoder of the flexible-version grammar ---------------------------------------------------------------

def uvarint(n: int) -> bytes:
    """An unsigned varint below 128: one byte (the tests' lengths and counts are small)."""
    assert 0 <= n < 128
    return bytes([n])


def compact_string(text: str) -> bytes:
    data = text.encode()
    return uvarint(len(data) + 1) + data


def compact_bytes(data: bytes | None) -> bytes:
    return b"\x00" if data is None else uvarint(len(data) + 1) + data


def frame(api_key: int, version: int = 0) -> bytes:
    return b"\x01" + uvarint(api_key) + uvarint(version)


NO_TAGS = b"\x00"


def topic_id_partition(topic: str = "foo", partition: int = 0) -> bytes:
    # TopicIdPartitionEntry: Name string, Id uuid, Partition int32, then its (empty) tagged fields
    return compact_string(topic) + TOPIC_ID_BYTES + struct.pack(">i", partition) + NO_TAGS


def segment_id_entry() -> bytes:
    # RemoteLogSegmentIdEntry: TopicIdPartition, Id uuid, tagged fields
    return topic_id_partition() + SEGMENT_ID_BYTES + NO_TAGS


def epochs(pairs) -> bytes:
    # []SegmentLeaderEpochEntry: uvarint count + 1, each LeaderEpoch int32, Offset int64, tagged fields
    return uvarint(len(pairs) + 1) + b"".join(struct.pack(">iq", e, o) + NO_TAGS for e, o in pairs)


def segment_record(*, start=0, end=99, broker=1, max_ts=1_700_000_000_500, event_ts=1_700_000_000_900,
                   leader_epochs=((0, 0),), size=4096, custom=None, state=0, tags=NO_TAGS, version=0) -> bytes:
    return (frame(0, version) + segment_id_entry() + struct.pack(">qqiqq", start, end, broker, max_ts, event_ts)
            + epochs(leader_epochs) + struct.pack(">i", size) + compact_bytes(custom) + struct.pack(">b", state)
            + tags)


def update_record(*, custom=None, state=1, event_ts=0, broker=0) -> bytes:
    return (frame(1) + segment_id_entry() + struct.pack(">iq", broker, event_ts) + compact_bytes(custom)
            + struct.pack(">b", state) + NO_TAGS)


def delete_record(*, state=0, event_ts=0, broker=0) -> bytes:
    return frame(2) + topic_id_partition() + struct.pack(">iqb", broker, event_ts, state) + NO_TAGS


SEGMENT_ID_TEXT = f"RemoteLogSegmentId{{topicIdPartition={TOPIC_ID}:foo-0, id={SEGMENT_ID}}}"


# -- Kafka's DumpLogSegmentsTest expectations ---------------------------------------------------------------------

def test_partition_delete_and_update_print_as_dumplogsegments_test_expects():
    """testDumpRemoteLogMetadataMultipleRecordsOneBatch: an update with 4 bytes of custom metadata and a partition
    delete mark, both at event time 0 from broker 0."""
    assert format_remote_log_metadata_record(update_record(custom=bytes([0, 1, 2, 3])), 0) == (
        f"RemoteLogSegmentMetadataUpdate{{remoteLogSegmentId={SEGMENT_ID_TEXT}, customMetadata=Optional["
        "CustomMetadata{4 bytes}], state=COPY_SEGMENT_FINISHED, eventTimestampMs=0, brokerId=0}")
    assert format_remote_log_metadata_record(delete_record(), 1) == (
        f"RemotePartitionDeleteMetadata{{topicPartition={TOPIC_ID}:foo-0, state=DELETE_PARTITION_MARKED, "
        "eventTimestampMs=0, brokerId=0}")


def test_a_value_that_is_not_a_framed_record_prints_kafkas_error():
    """testDumpRemoteLogMetadataWithCorruption: "corrupted" reads as frame version 'c' = 99."""
    assert format_remote_log_metadata_record(b"corrupted", 0) == (
        "Error at offset 0, skipping. Could not deserialize metadata record due to unknown frame version 99(only "
        "frame version 1 is supported)")


# -- the objects' toString ----------------------------------------------------------------------------------------

def test_segment_metadata_prints_its_epochs_as_a_treemap_and_its_tagged_txn_index_flag():
    """The record's epochs go through a HashMap into a TreeMap: by epoch, a repeated epoch's last offset kept;
    txnIndexEmpty is tagged field 0 (KIP-1058), false when absent."""
    value = segment_record(start=10, end=99, leader_epochs=((5, 40), (3, 10), (5, 50)), custom=b"xy")
    assert format_remote_log_metadata_record(value, 7) == (
        f"RemoteLogSegmentMetadata{{remoteLogSegmentId={SEGMENT_ID_TEXT}, startOffset=10, endOffset=99, "
        "brokerId=1, maxTimestampMs=1700000000500, eventTimestampMs=1700000000900, segmentLeaderEpochs={3=10, 5=50}, "
        "segmentSizeInBytes=4096, customMetadata=Optional[CustomMetadata{2 bytes}], state=COPY_SEGMENT_STARTED, "
        "txnIdxEmpty=false}")
    tagged = segment_record(tags=b"\x01" + b"\x00" + b"\x01" + b"\x01", state=1)  # 1 field: tag 0, size 1, true
    metadata = decode_remote_log_metadata(tagged)
    assert isinstance(metadata, RemoteLogSegmentMetadata)
    assert metadata.txn_index_empty is True and metadata.state is RemoteLogSegmentState.COPY_SEGMENT_FINISHED
    assert metadata.custom_metadata is None and metadata.segment_leader_epochs == ((0, 0),)
    assert metadata.topic_id_partition.kafka_text() == f"{TOPIC_ID}:foo-0"
    assert format_remote_log_metadata_record(tagged, 0).endswith(
        "customMetadata=Optional.empty, state=COPY_SEGMENT_FINISHED, txnIdxEmpty=true}")


def test_snapshot_record_prints_without_broker_or_event_time():
    value = (frame(3) + SEGMENT_ID_BYTES + struct.pack(">qqiqq", 0, 9, 2, 5, 6) + epochs([(1, 0)])
             + struct.pack(">i", 100) + compact_bytes(None) + struct.pack(">b", 3) + NO_TAGS)
    assert format_remote_log_metadata_record(value, 0) == (
        f"RemoteLogSegmentMetadataSnapshot{{segmentId={SEGMENT_ID}, startOffset=0, endOffset=9, maxTimestampMs=5, "
        "segmentLeaderEpochs={1=0}, segmentSizeInBytes=100, customMetadata=Optional.empty, "
        "state=DELETE_SEGMENT_FINISHED}")
    snapshot = decode_remote_log_metadata(value)
    assert isinstance(snapshot, RemoteLogSegmentMetadataSnapshot)
    assert (snapshot.broker_id, snapshot.event_timestamp_ms) == (2, 6)


# -- what Kafka refuses, in its words -----------------------------------------------------------------------------

@pytest.mark.parametrize("value, message", [
    (b"", "Error while reading frame version"),
    (b"\x00", "Could not deserialize metadata record with frame version 0. Note that upgrades from the preview "
              "release of KRaft in 2.8 to newer versions are not supported."),
    (b"\x01", "Error while reading type"),
    (b"\x01\x80\x80\x02\x00", "Value for type was too large."),
    (frame(4) + NO_TAGS, "org.apache.kafka.common.errors.UnsupportedVersionException: Unknown metadata id 4"),
    # a version past validVersions "0": the generated read's UnsupportedVersionException, wrapped
    (segment_record(version=1), "Failed to deserialize record with type 0"),
    (delete_record()[:-3], "Failed to deserialize record with type 2"),
    (delete_record() + b"\x00", "Found 1 byte(s) of garbage after 2"),
    (segment_record(start=-1), "Unexpected start offset = -1. StartOffset for a remote segment cannot be negative"),
    (segment_record(start=10, end=9), "Unexpected end offset = 9. EndOffset for a remote segment cannot be less "
                                      "than startOffset = 10"),
    (segment_record(leader_epochs=()), "segmentLeaderEpochs can not be null or empty"),
    (segment_record(state=4), "state can not be null"),
    (update_record(state=-1), "state can not be null"),
    # Objects.requireNonNull(state) with no message: the NullPointerException's message is null
    (delete_record(state=3), "null"),
    (None, 'Cannot invoke "java.nio.ByteBuffer.remaining()" because the return value of '
           '"org.apache.kafka.common.record.Record.value()" is null'),
])
def test_refused_values_print_kafkas_exception_message_and_raise_kafkaseg_errors(value, message):
    assert format_remote_log_metadata_record(value, 42) == f"Error at offset 42, skipping. {message}"
    assert remote_log_metadata_json(value, 42) == f"Error at offset 42, skipping. {message}"
    with pytest.raises(CorruptDataError):
        decode_remote_log_metadata(value)


def test_structured_values_and_json():
    update = decode_remote_log_metadata(update_record(custom=b"\x00\x01", state=2, event_ts=77, broker=3))
    assert isinstance(update, RemoteLogSegmentMetadataUpdate)
    assert (update.segment_id.id, update.segment_id.topic_id_partition.topic_id, update.state,
            update.custom_metadata, update.event_timestamp_ms, update.broker_id) == (
        SEGMENT_ID, TOPIC_ID, RemoteLogSegmentState.DELETE_SEGMENT_STARTED, b"\x00\x01", 77, 3)
    delete = decode_remote_log_metadata(delete_record(state=2))
    assert isinstance(delete, RemotePartitionDeleteMetadata)
    assert delete.state is RemotePartitionDeleteState.DELETE_PARTITION_FINISHED
    segment = decode_remote_log_metadata(segment_record(leader_epochs=((0, 0), (2, 60))))
    assert remote_log_metadata_json(segment_record(leader_epochs=((0, 0), (2, 60))), 0) == {
        "type": "RemoteLogSegmentMetadata", "version": 0,
        "remoteLogSegmentId": {"topicIdPartition": {"topicId": TOPIC_ID, "topic": "foo", "partition": 0},
                               "id": SEGMENT_ID},
        "startOffset": 0, "endOffset": 99, "brokerId": 1, "maxTimestampMs": 1_700_000_000_500,
        "eventTimestampMs": 1_700_000_000_900, "segmentLeaderEpochs": {"0": 0, "2": 60}, "segmentSizeInBytes": 4096,
        "customMetadata": None, "state": "COPY_SEGMENT_STARTED", "txnIdxEmpty": False}
    # createWithUpdates: the update's state, custom metadata, broker and event time; the segment's own facts
    finished = segment.with_update(update)
    assert (finished.state, finished.custom_metadata, finished.broker_id, finished.event_timestamp_ms,
            finished.end_offset, finished.segment_leader_epochs) == (
        RemoteLogSegmentState.DELETE_SEGMENT_STARTED, b"\x00\x01", 3, 77, 99, ((0, 0), (2, 60)))


@settings(max_examples=400, deadline=None)
@given(st.one_of(st.none(), st.binary(max_size=120),
                 st.binary(max_size=120).map(lambda b: b"\x01" + b),
                 st.sampled_from([0, 1, 2, 3]).flatmap(lambda k: st.binary(max_size=120).map(
                     lambda b: frame(k) + b))))
def test_arbitrary_values_only_raise_kafkaseg_errors(value):
    try:
        decode_remote_log_metadata(value)
    except KafkaSegError:
        pass
    assert isinstance(format_remote_log_metadata_record(value, 0), str)
