"""Internal-topic decoders against hand-checked records of real broker bytes (the corpus) and hand-built edge cases.

The expected values below were derived BY HAND from the raw record bytes (hex dumps of the records' key/value
printed with kafka-python, not with kafkaseg) following the schemas in apache/kafka's message JSON files; each
test's comment shows the byte split. They are not outputs of the code under test.
"""

from __future__ import annotations

import base64
import json
import struct

import pytest
from kafka.record.memory_records import MemoryRecords

from kafkaseg.errors import CorruptDataError
from kafkaseg.wire.internal import (decode_control_record, decode_group_record, decode_metadata_record,
                                    decode_share_group_state_record, decode_transaction_record,
                                    format_offsets_record, format_share_group_state_record,
                                    format_transaction_record, metadata_type_name, to_json)
from kafkaseg.wire.internal.protocol import _java_double

RAVI = "segments/RaviAzzuraPutra__LATIHAN-MICROSERVICE-NEW/f8f5c464/kafka/data"


def _records(path, wanted: set[int]) -> dict[int, tuple[bytes | None, bytes | None]]:
    """key/value bytes of the records at ``wanted`` offsets, read with kafka-python (the independent oracle)."""
    out = {}
    records = MemoryRecords(path.read_bytes())
    while (batch := records.next_batch()) is not None:
        for record in batch:
            if record.offset in wanted:
                out[record.offset] = (record.key, record.value)
        if len(out) == len(wanted):
            break
    assert set(out) == wanted
    return out


@pytest.mark.corpus
def test_offset_commit_record_hand_checked(corpus_dir):
    (key, value), = _records(corpus_dir / RAVI / "__consumer_offsets-0/00000000000000000000.log", {2}).values()
    # key   0001 | 0013 "stock-service-group" | 000d "order_created" | 00000000
    #       version 1 = OffsetCommitKey; group (int16 length 19); topic (length 13); partition 0
    assert key.hex() == "0001001373746f636b2d736572766963652d67726f7570000d6f726465725f6372656174656400000000"
    # value 0003 | 0000000000000001 | ffffffff | 0000 | 0000019aded2dbd6
    #       version 3; offset 1; leaderEpoch -1; metadata ""; commitTimestamp 0x19aded2dbd6 = 1764674952150
    assert value.hex() == "00030000000000000001ffffffff00000000019aded2dbd6"
    record = decode_group_record(key, value)
    assert record.kind == "offset_commit"
    assert record.key == {"group": "stock-service-group", "topic": "order_created", "partition": 0}
    assert record.value_version == 3
    assert record.value == {"offset": 1, "leaderEpoch": -1, "metadata": "", "commitTimestamp": 1764674952150}
    key_text, payload = format_offsets_record(key, value, 2)
    assert key_text == '{"type":"1","data":{"group":"stock-service-group","topic":"order_created","partition":0}}'
    assert payload == '{"version":"3","data":{"offset":1,"leaderEpoch":-1,"metadata":"","commitTimestamp":1764674952150}}'


@pytest.mark.corpus
def test_group_metadata_record_consumer_protocol(corpus_dir):
    (key, value), = _records(corpus_dir / RAVI / "__consumer_offsets-0/00000000000000000000.log", {1}).values()
    # key 0002 | 0013 "stock-service-group": GroupMetadataKey v2
    assert key[:4].hex() == "00020013"
    record = decode_group_record(key, value)
    assert record.kind == "group_metadata" and record.key == {"group": "stock-service-group"}
    assert record.value["protocolType"] == "consumer" and record.value["protocol"] == "range"
    member = record.value["members"][0]
    # the member's assignment bytes hold int16 version + ConsumerProtocolAssignment; kafka-go wrote
    # 0001 | 00000001 | 000d "order_created" | 00000003 | 00000002 00000001 00000000 | ffffffff (null userData)
    assert member["assignment"] == {"assignedPartitions": [{"topic": "order_created", "partitions": [2, 1, 0]}],
                                    "userData": None}
    # its subscription announces version 1 but omits ownedPartitions: Kafka's parser fails and keeps the bytes
    assert isinstance(member["subscription"], bytes)


@pytest.mark.corpus
def test_cluster_metadata_records_hand_checked(corpus_dir):
    got = _records(corpus_dir / RAVI / "__cluster_metadata-0/00000000000000000000.log", {2, 6, 21, 22, 25})
    # 01 | 0c | 00 | 11 "metadata.version" | 000e | 00
    # frame 1, apiKey 12 FeatureLevelRecord, v0, compact string (uvarint 17 = 16 + 1), featureLevel 14, no tags
    assert got[2][1].hex() == "010c00116d657461646174612e76657273696f6e000e00"
    feature = decode_metadata_record(got[2][1])
    assert (feature.type_name, feature.version) == ("FEATURE_LEVEL_RECORD", 0)
    assert feature.data == {"name": "metadata.version", "featureLevel": 14}

    # 01 02 00 | 13 "__consumer_offsets" | 6c1045627153431288db7dd0d3c33734 | 00: TopicRecord v0;
    # topicId printed as Kafka's Uuid.toString = URL-safe base64 without padding of those 16 bytes
    topic = decode_metadata_record(got[21][1])
    assert topic.type_name == "TOPIC_RECORD"
    assert topic.data == {"name": "__consumer_offsets", "topicId": "bBBFYnFTQxKI233Q08M3NA"}
    assert base64.urlsafe_b64decode("bBBFYnFTQxKI233Q08M3NA==").hex() == "6c1045627153431288db7dd0d3c33734"

    # 01 04 00 | 02 | 13 "__consumer_offsets" | 11 "compression.type" | 09 "producer" | 00: ConfigRecord v0,
    # resourceType 2 (TOPIC)
    config = decode_metadata_record(got[22][1])
    assert config.type_name == "CONFIG_RECORD"
    assert config.data == {"resourceType": 2, "resourceName": "__consumer_offsets", "name": "compression.type",
                           "value": "producer"}

    # 01 03 00 | 00000000 | <uuid> | 02 00000001 | 02 00000001 | 01 | 01 | 00000001 | 00000000 | 00000000 | 00
    # PartitionRecord v0: partition 0, replicas [1], isr [1], removing [], adding [], leader 1, epochs 0, no tags
    partition = decode_metadata_record(got[25][1])
    assert partition.type_name == "PARTITION_RECORD"
    assert partition.data == {"partitionId": 0, "topicId": "bBBFYnFTQxKI233Q08M3NA", "replicas": [1], "isr": [1],
                              "removingReplicas": [], "addingReplicas": [], "leader": 1, "leaderEpoch": 0,
                              "partitionEpoch": 0}

    # 01 00 02 | 00000001 | 00 | 089cea0007554a74834e953a84787605 | 0000000000000006 |
    # 03 [09 "INTERNAL" 06 "kafka" 71a4 0000] [09 "EXTERNAL" 06 "kafka" 2384 0000] | 02 [11 "metadata.version" 0001 000e]
    # | 00 (null rack) | 01 (fenced) | 00 | 00: RegisterBrokerRecord v2; ports 0x71a4 = 29092, 0x2384 = 9092
    broker = decode_metadata_record(got[6][1])
    assert broker.type_name == "REGISTER_BROKER_RECORD" and broker.version == 2
    assert broker.data == {
        "brokerId": 1, "isMigratingZkBroker": False,
        "incarnationId": base64.urlsafe_b64encode(bytes.fromhex("089cea0007554a74834e953a84787605")).decode()
        .rstrip("="),
        "brokerEpoch": 6,
        "endPoints": [{"name": "INTERNAL", "host": "kafka", "port": 29092, "securityProtocol": 0},
                      {"name": "EXTERNAL", "host": "kafka", "port": 9092, "securityProtocol": 0}],
        "features": [{"name": "metadata.version", "minSupportedVersion": 1, "maxSupportedVersion": 14}],
        "rack": None, "fenced": True, "inControlledShutdown": False}


@pytest.mark.corpus
def test_every_cluster_metadata_record_decodes(corpus_dir):
    """No record of the 30,068 in the KRaft log fails to parse or leaves bytes over; control records are
    LEADER_CHANGE with a leader id in the voters."""
    from collections import Counter

    names = Counter()
    records = MemoryRecords((corpus_dir / RAVI / "__cluster_metadata-0/00000000000000000000.log").read_bytes())
    while (batch := records.next_batch()) is not None:
        for record in batch:
            if batch.is_control_batch:
                control = decode_control_record(record.key, record.value)
                assert control.type_name == "LEADER_CHANGE"
                assert control.data["leaderId"] in [v["voterId"] for v in control.data["voters"]]
                continue
            names[decode_metadata_record(record.value).type_name] += 1
    assert names["TOPIC_RECORD"] >= 2 and names["PARTITION_RECORD"] >= 50
    assert not any(name.startswith("UNKNOWN") for name in names)


TXN_KEY = bytes.fromhex("0000") + struct.pack(">h", 5) + b"txnId"  # TransactionLogKey: type 0 | "txnId"
TXN_KEY_JSON = '{"type":"0","data":{"transactionalId":"txnId"}}'


def _txn_value_v1(tagged: bytes) -> bytes:
    """TransactionLogValue v1 (flexible) as Kafka's DumpLogSegmentsTest sets it: producerId 12, epoch 2, timeout 14,
    status 0, partitions topic1 [0,1,2] and topic2 [3,4,5] (compact arrays, each element ending in an empty tag
    section), lastUpdate 123, start 13, then ``tagged`` (the value's tag section)."""
    def partitions(topic: bytes, ids):
        return bytes([len(topic) + 1]) + topic + bytes([len(ids) + 1]) + struct.pack(f">{len(ids)}i", *ids) + b"\x00"

    return (struct.pack(">hqhib", 1, 12, 2, 14, 0) + bytes([3]) + partitions(b"topic1", [0, 1, 2])
            + partitions(b"topic2", [3, 4, 5]) + struct.pack(">qq", 123, 13) + tagged)


def test_transaction_log_records_print_as_kafkas_transaction_log_message_parser():
    """Kafka 4.1+ (KAFKA-18207) prints __transaction_state through CoordinatorRecordMessageParser; the expected
    strings are DumpLogSegmentsTest.testTransactionLogMessageParser's (Kafka 4.3), the bytes built by hand."""
    # v0 (not flexible) with every field but producerId at its zero value: an empty partitions array prints []
    v0 = struct.pack(">hqhibiqq", 0, 123, 0, 0, 0, 0, 0, 0)
    assert format_transaction_record(TXN_KEY, v0, 0) == (TXN_KEY_JSON, (
        '{"version":"0","data":{"producerId":123,"producerEpoch":0,"transactionTimeoutMs":0,"transactionStatus":0,'
        '"transactionPartitions":[],"transactionLastUpdateTimestampMs":0,"transactionStartTimestampMs":0}}'))
    # v1: tagged previousProducerId (tag 0) = 11 and nextProducerId (tag 1) = 10 print in schema order after
    # producerId; clientTransactionVersion (tag 2) is at its default 0, so the generated JsonConverter leaves it
    # out, whether the bytes carry it or not
    want_v1 = ('{"version":"1","data":{"producerId":12,"previousProducerId":11,"nextProducerId":10,'
               '"producerEpoch":2,"transactionTimeoutMs":14,"transactionStatus":0,'
               '"transactionPartitions":[{"topic":"topic1","partitionIds":[0,1,2]},'
               '{"topic":"topic2","partitionIds":[3,4,5]}],"transactionLastUpdateTimestampMs":123,'
               '"transactionStartTimestampMs":13}}')
    tags = bytes([2]) + bytes([0, 8]) + struct.pack(">q", 11) + bytes([1, 8]) + struct.pack(">q", 10)
    assert format_transaction_record(TXN_KEY, _txn_value_v1(tags), 0) == (TXN_KEY_JSON, want_v1)
    with_default = bytes([3]) + tags[1:] + bytes([2, 2]) + struct.pack(">h", 0)
    assert format_transaction_record(TXN_KEY, _txn_value_v1(with_default), 0) == (TXN_KEY_JSON, want_v1)
    # a non-default clientTransactionVersion prints last; defaults of the producer ids are left out
    assert format_transaction_record(TXN_KEY, _txn_value_v1(bytes([1, 2, 2]) + struct.pack(">h", 2)), 0)[1] == (
        '{"version":"1","data":{"producerId":12,"producerEpoch":2,"transactionTimeoutMs":14,"transactionStatus":0,'
        '"transactionPartitions":[{"topic":"topic1","partitionIds":[0,1,2]},{"topic":"topic2","partitionIds":'
        '[3,4,5]}],"transactionLastUpdateTimestampMs":123,"transactionStartTimestampMs":13,'
        '"clientTransactionVersion":2}}')
    # a tombstone; an unknown record type (the test's key 0x7fff, empty value); an unknown value version, failing
    # in the generated reader and wrapped by CoordinatorRecordSerde.readMessage; a value too short for its version
    assert format_transaction_record(TXN_KEY, None, 0) == (TXN_KEY_JSON, "<DELETE>")
    assert format_transaction_record(b"\x7f\xff", b"", 0) == ("Unknown record type 32767 at offset 0, skipping.",
                                                               None)
    assert format_transaction_record(TXN_KEY, b"\x00\x02" + v0[2:], 7) == (
        "Error at offset 7, skipping. Could not read record with version 2 from value's buffer due to: Can't read "
        "version 2 of TransactionLogValue.", None)
    assert format_transaction_record(TXN_KEY, b"\x00", 3) == (
        "Error at offset 3, skipping. Could not read version from value's buffer.", None)
    # the generated reader leaves bytes after the struct unread, and so does kafkaseg's
    assert format_transaction_record(TXN_KEY + b"xx", v0 + b"\x00\x01", 0) == format_transaction_record(TXN_KEY, v0, 0)
    # the key is mandatory: Kafka's parser throws, failing the dump
    with pytest.raises(CorruptDataError, match="message had a missing key"):
        format_transaction_record(None, v0, 0)
    record = decode_transaction_record(TXN_KEY, v0)
    assert record.kind == "transaction_log" and record.key == {"transactionalId": "txnId"}


def test_malformed_inputs_raise_located_errors():
    with pytest.raises(CorruptDataError):
        decode_metadata_record(bytes([0, 2, 0]))            # frame version 0
    with pytest.raises(CorruptDataError):
        decode_metadata_record(bytes([1, 2, 0, 0x7f]))       # string length 126 in a 4-byte value
    with pytest.raises(CorruptDataError):
        decode_metadata_record(bytes([1, 12, 0, 1, 0, 0, 0, 9]))  # trailing garbage after a FeatureLevelRecord
    # an int32 array count of 2^31-1 must be refused without allocating
    with pytest.raises(CorruptDataError):
        decode_group_record(b"\x00\x02\x00\x01g", b"\x00\x00" + struct.pack(">h", 1) + b"c" + struct.pack(">i", 1)
                            + struct.pack(">h", -1) + struct.pack(">h", -1) + struct.pack(">i", 2**31 - 1))
    key, payload = format_offsets_record(b"\x00\x01\x00", b"\x00\x03", 9)
    assert key.startswith("Error at offset 9, skipping.") and payload is None
    assert format_offsets_record(b"\x00\x19", None, 4) == ("Unknown record type 25 at offset 4, skipping.", None)
    assert format_offsets_record(b"\x00\x02\x00\x01g", None, 4)[1] == "<DELETE>"


# Hand encoders for the KIP-848/KIP-932 records below (keys: int16 type, classic int16-length strings; values:
# int16 version 0, then flexible encoding: compact strings/arrays are uvarint(n + 1) (0 = null) and every struct
# ends with a uvarint count of tagged fields). All counts here are < 127, so each uvarint is one byte.
def _key(record_type: int, *strings: str) -> bytes:
    return struct.pack(">h", record_type) + b"".join(struct.pack(">h", len(t)) + t.encode() for t in strings)


def _cs(text: str | None) -> bytes:
    return b"\x00" if text is None else bytes([len(text.encode()) + 1]) + text.encode()


def _carray(*elements: bytes) -> bytes:
    return bytes([len(elements) + 1]) + b"".join(elements)


def _i32(*values: int) -> bytes:
    return struct.pack(f">{len(values)}i", *values)


V0 = b"\x00\x00"  # value version 0
NO_TAGS = b"\x00"
# topic ids: Kafka prints Uuid.toString, URL-safe base64 without padding. fb ff bf in standard base64 is "+/+/",
# URL-safe "-_-_"; the last byte fb is "+w==" -> "-w"
UUID_A, UUID_A_TEXT = bytes.fromhex("fbffbf" * 5 + "fb"), "-_-_" * 5 + "-w"
# 00 01 02 | 03 04 05 | ... | 0c 0d 0e | 0f -> AAEC AwQF BgcI CQoL DA0O Dw
UUID_B, UUID_B_TEXT = bytes(range(16)), "AAECAwQFBgcICQoLDA0ODw"


def _offsets_json(key: bytes, value: bytes | None, offset: int = 7) -> tuple[str, str]:
    text, payload = format_offsets_record(key, value, offset)
    assert payload is not None, text
    return text, payload


@pytest.mark.parametrize("record_type,name", [(3, "consumer_group_metadata"), (11, "share_group_metadata")])
def test_group_epoch_records(record_type, name):
    # key 0003 | 0002 "g1"; value 0000 | 00000005 (epoch) | 00 (no tagged fields): reviewer's reproducer bytes
    key, value = _key(record_type, "g1"), V0 + _i32(5) + NO_TAGS
    assert (key + value).hex() == f"{record_type:04x}000267310000" + "0000000500"
    record = decode_group_record(key, value)
    assert (record.kind, record.key, record.value_version, record.value) == (name, {"groupId": "g1"}, 0, {"epoch": 5})
    assert _offsets_json(key, value) == (f'{{"type":"{record_type}","data":{{"groupId":"g1"}}}}',
                                         '{"version":"0","data":{"epoch":5}}')


@pytest.mark.parametrize("record_type", [6, 12])
def test_target_assignment_metadata_records(record_type):
    # 0000 | 7fffffff (assignmentEpoch 2^31-1) | 00, then an unknown tagged field (tag 9, 2 bytes) Kafka skips
    value = V0 + _i32(2**31 - 1) + bytes([1, 9, 2]) + b"zz"
    assert _offsets_json(_key(record_type, "grp"), value) == (
        f'{{"type":"{record_type}","data":{{"groupId":"grp"}}}}',
        '{"version":"0","data":{"assignmentEpoch":2147483647}}')


@pytest.mark.parametrize("record_type", [4, 9])
def test_partition_metadata_records(record_type):
    # topics: compact array of 1 (02) | topicId 16 bytes | topicName 02 "t" | numPartitions 00000002 |
    #   partitionMetadata compact array of 2 (03): [00000000 | racks 02 [03 "r1"] | 00], [00000001 | racks 01 [] | 00]
    #   | 00 (topic's tags) | 00 (value's tags)
    value = (V0 + _carray(UUID_A + _cs("t") + _i32(2)
                          + _carray(_i32(0) + _carray(_cs("r1")) + NO_TAGS, _i32(1) + _carray() + NO_TAGS)
                          + NO_TAGS) + NO_TAGS)
    assert value.hex() == "000002" + UUID_A.hex() + "027400000002" + "03" + "000000000203723100" + "000000010100" \
        + "0000"
    assert _offsets_json(_key(record_type, "g"), value)[1] == (
        '{"version":"0","data":{"topics":[{"topicId":"%s","topicName":"t","numPartitions":2,'
        '"partitionMetadata":[{"partition":0,"racks":["r1"]},{"partition":1,"racks":[]}]}]}}' % UUID_A_TEXT)


def test_consumer_group_member_metadata_record():
    key = _key(5, "g1", "m1")
    head = (V0 + _cs(None) + _cs("rack") + _cs("c") + _cs("/1.2.3.4") + _carray(_cs("a"), _cs("b")) + _cs(None)
            + _i32(300000) + _cs("uniform"))
    # instanceId null (00) | rackId 05 "rack" | clientId 02 "c" | clientHost 09 "/1.2.3.4" | topics 03 [02 "a" 02 "b"]
    # | regex null (00) | rebalanceTimeoutMs 000493e0 | serverAssignor 08 "uniform"
    assert head.hex() == ("0000" + "00" + "057261636b" + "0263" + "092f312e322e332e34" + "0302610262" + "00"
                          + "000493e0" + "08756e69666f726d")
    fields = ('"instanceId":null,"rackId":"rack","clientId":"c","clientHost":"/1.2.3.4",'
              '"subscribedTopicNames":["a","b"],"subscribedTopicRegex":null,"rebalanceTimeoutMs":300000,'
              '"serverAssignor":"uniform"')
    key_text, payload = _offsets_json(key, head + NO_TAGS)
    assert key_text == '{"type":"5","data":{"groupId":"g1","memberId":"m1"}}'
    # classicMemberMetadata is tagged with default null: not printed when absent
    assert payload == '{"version":"0","data":{%s}}' % fields
    # tagged field 0 (classicMemberMetadata, a nullable struct): 01 (one tagged field) | 00 (tag) | 11 (size 17) |
    # 01 (present) | 0000afc8 (sessionTimeoutMs 45000) | 02 (1 protocol) [06 "range" | 03 0001 (bytes) | 00] | 00
    classic = b"\x01" + _i32(45000) + _carray(_cs("range") + b"\x03\x00\x01" + NO_TAGS) + NO_TAGS
    assert len(classic) == 17
    payload = _offsets_json(key, head + bytes([1, 0, 17]) + classic)[1]
    assert payload == ('{"version":"0","data":{%s,"classicMemberMetadata":{"sessionTimeoutMs":45000,'
                       '"supportedProtocols":[{"name":"range","metadata":"AAE="}]}}}' % fields)
    # the tag present but its marker 0 = null: still the default, still not printed
    assert _offsets_json(key, head + bytes([1, 0, 1, 0]))[1] == payload.split(',"classicMemberMetadata"')[0] + "}}"
    assert format_offsets_record(key, None, 3) == (key_text, "<DELETE>")


def test_share_group_member_metadata_record():
    # rackId null (00) | clientId 02 "c" | clientHost 02 "h" | subscribedTopicNames 01 (empty) | 00
    value = V0 + _cs(None) + _cs("c") + _cs("h") + _carray() + NO_TAGS
    assert value.hex() == "0000" + "00" + "0263" + "0268" + "01" + "00"
    assert _offsets_json(_key(10, "g", "m"), value) == (
        '{"type":"10","data":{"groupId":"g","memberId":"m"}}',
        '{"version":"0","data":{"rackId":null,"clientId":"c","clientHost":"h","subscribedTopicNames":[]}}')


@pytest.mark.parametrize("record_type", [7, 13])
def test_target_assignment_member_records(record_type):
    # topicPartitions 03 [topicId | 03 [00000000 00000002] | 00] [topicId | 01 [] | 00] | 00
    value = V0 + _carray(UUID_B + _carray(_i32(0), _i32(2)) + NO_TAGS, UUID_A + _carray() + NO_TAGS) + NO_TAGS
    assert _offsets_json(_key(record_type, "g", "m-1"), value) == (
        f'{{"type":"{record_type}","data":{{"groupId":"g","memberId":"m-1"}}}}',
        '{"version":"0","data":{"topicPartitions":[{"topicId":"%s","partitions":[0,2]},'
        '{"topicId":"%s","partitions":[]}]}}' % (UUID_B_TEXT, UUID_A_TEXT))


def test_current_member_assignment_records():
    # memberEpoch 00000005 | previousMemberEpoch 00000004 | state 02 (int8) | assignedPartitions 02 [topicId |
    # 02 [00000001] | 00], then for consumer groups only partitionsPendingRevocation 02 [topicId | 02 [00000003] | 00]
    assigned = _carray(UUID_B + _carray(_i32(1)) + NO_TAGS)
    pending = _carray(UUID_A + _carray(_i32(3)) + NO_TAGS)
    common = '"memberEpoch":5,"previousMemberEpoch":4,"state":2,"assignedPartitions":[{"topicId":"%s",' \
             '"partitions":[1]}]' % UUID_B_TEXT
    consumer = V0 + _i32(5, 4) + b"\x02" + assigned + pending + NO_TAGS
    record = decode_group_record(_key(8, "g", "m"), consumer)
    assert record.kind == "consumer_group_current_member_assignment"
    assert _offsets_json(_key(8, "g", "m"), consumer)[1] == (
        '{"version":"0","data":{%s,"partitionsPendingRevocation":[{"topicId":"%s","partitions":[3]}]}}'
        % (common, UUID_A_TEXT))
    share = V0 + _i32(5, 4) + b"\x02" + assigned + NO_TAGS
    assert _offsets_json(_key(14, "g", "m"), share)[1] == '{"version":"0","data":{%s}}' % common


def test_share_group_state_partition_metadata_record():
    # initializedTopics 02 [topicId | 02 "t" | 03 [00000000 00000001] | 00] | deletingTopics 02 [topicId | 02 "u" |
    # 00] | 00
    value = (V0 + _carray(UUID_B + _cs("t") + _carray(_i32(0), _i32(1)) + NO_TAGS)
             + _carray(UUID_A + _cs("u") + NO_TAGS) + NO_TAGS)
    assert _offsets_json(_key(15, "sg"), value) == (
        '{"type":"15","data":{"groupId":"sg"}}',
        '{"version":"0","data":{"initializedTopics":[{"topicId":"%s","topicName":"t","partitions":[0,1]}],'
        '"deletingTopics":[{"topicId":"%s","topicName":"u"}]}}' % (UUID_B_TEXT, UUID_A_TEXT))


def test_group_records_of_later_brokers():
    # ConsumerGroupMetadataValue's tagged fields (Kafka 4.1 KIP-1101 metadataHash, tag 0; KIP-1282 creationTimeMs,
    # tag 1): 01 (one tagged field) | 00 (tag) | 08 (size) | int64, then both
    hashed = V0 + _i32(7) + bytes([1, 0, 8]) + struct.pack(">q", 99)
    assert _offsets_json(_key(3, "g"), hashed)[1] == '{"version":"0","data":{"epoch":7,"metadataHash":99}}'
    both = V0 + _i32(7) + bytes([2, 0, 8]) + struct.pack(">q", 99) + bytes([1, 8]) + struct.pack(">q", 1_700_000)
    assert _offsets_json(_key(3, "g"), both)[1] == \
        '{"version":"0","data":{"epoch":7,"metadataHash":99,"creationTimeMs":1700000}}'
    # ShareGroupMetadataValue v0 as later brokers write it: epoch | metadataHash (untagged int64) | 00; the 2024-10
    # form (epoch alone) is test_group_epoch_records'
    share = V0 + _i32(5) + struct.pack(">q", 0x0102030405060708) + NO_TAGS
    assert _offsets_json(_key(11, "sg"), share)[1] == \
        '{"version":"0","data":{"epoch":5,"metadataHash":72623859790382856}}'
    # ShareGroupStatePartitionMetadataValue v0 as later brokers write it: initializingTopics 01 (empty) |
    # initializedTopics 02 [topicId | 02 "t" | 02 [00000000] | createTimestamp int64 | 00] | deletingTopics 01 | 00
    state = (V0 + _carray() + _carray(UUID_B + _cs("t") + _carray(_i32(0)) + struct.pack(">q", 1234) + NO_TAGS)
             + _carray() + NO_TAGS)
    assert _offsets_json(_key(15, "sg"), state)[1] == (
        '{"version":"0","data":{"initializingTopics":[],"initializedTopics":[{"topicId":"%s","topicName":"t",'
        '"partitions":[0],"createTimestamp":1234}],"deletingTopics":[]}}' % UUID_B_TEXT)
    # ConsumerGroupRegularExpression (type 16, Kafka 4.0): key groupId, regularExpression; value topics 03 [02 "a"
    # 02 "b"] | version int64 | timestamp int64 | 00
    regex = V0 + _carray(_cs("a"), _cs("b")) + struct.pack(">qq", 3, 1_700_000_000_000) + NO_TAGS
    record = decode_group_record(_key(16, "g", "orders-.*"), regex)
    assert record.kind == "consumer_group_regular_expression"
    assert _offsets_json(_key(16, "g", "orders-.*"), regex) == (
        '{"type":"16","data":{"groupId":"g","regularExpression":"orders-.*"}}',
        '{"version":"0","data":{"topics":["a","b"],"version":3,"timestamp":1700000000000}}')
    # a share-group value fitting neither schema says why
    text, payload = format_offsets_record(_key(11, "sg"), V0 + _i32(5) + b"\x00\x01\x02", 9)
    assert payload is None and text.startswith("Error at offset 9, skipping.") and "KIP-932" in text


def _i64(*values: int) -> bytes:
    return struct.pack(f">{len(values)}q", *values)


def _i16(*values: int) -> bytes:
    return struct.pack(f">{len(values)}h", *values)


def _payload_data(text: str) -> dict:
    """The ``data`` of a printed payload, checking its envelope: {"version":"0","data":{...}}."""
    parsed = json.loads(text)
    assert list(parsed) == ["version", "data"] and parsed["version"] == "0"
    return parsed["data"]


# Kafka Streams groups' records (KIP-1071, types 17-24): values transcribed from group-coordinator's
# StreamsGroup*Value.json (validVersions 0, flexibleVersions 0+); keys as StreamsGroup*Key.json (apiKey = type,
# groupId string, and memberId string for 19, 21 and 22, never flexible).
def test_streams_group_metadata_record():
    # epoch 00000003 | metadataHash fffffffffffffffe (-2) | assignmentConfigs 02 [15 "num.standby.replicas" | 02 "1"
    # | 00] | tagged fields: 01 (one) | 00 (tag 0 validatedTopologyEpoch) | 04 (size) | 00000002
    key = _key(17, "app")
    assert key.hex() == "0011" + "0003" + "617070"
    value = (V0 + _i32(3) + _i64(-2) + _carray(_cs("num.standby.replicas") + _cs("1") + NO_TAGS)
             + bytes([1, 0, 4]) + _i32(2))
    assert value.hex() == ("0000" + "00000003" + "fffffffffffffffe" + "02" + "15" + b"num.standby.replicas".hex()
                           + "0231" + "00" + "010004" + "00000002")
    key_text, payload = _offsets_json(key, value)
    assert key_text == '{"type":"17","data":{"groupId":"app"}}'
    data = _payload_data(payload)
    assert data["epoch"] == 3 and data["metadataHash"] == -2 and data["validatedTopologyEpoch"] == 2
    assert data["assignmentConfigs"] == [{"key": "num.standby.replicas", "value": "1"}]
    assert payload == ('{"version":"0","data":{"epoch":3,"metadataHash":-2,"validatedTopologyEpoch":2,'
                       '"assignmentConfigs":[{"key":"num.standby.replicas","value":"1"}]}}')
    # the tagged validatedTopologyEpoch at its default (-1, absent) is not printed
    assert _payload_data(_offsets_json(key, value[:-7] + NO_TAGS)[1]) == {
        "epoch": 3, "metadataHash": -2, "assignmentConfigs": [{"key": "num.standby.replicas", "value": "1"}]}
    # earlier forms of the same v0 value: without assignmentConfigs (epoch | hash | 00), and epoch alone (2024-12)
    assert _offsets_json(key, V0 + _i32(3) + _i64(-2) + NO_TAGS)[1] == \
        '{"version":"0","data":{"epoch":3,"metadataHash":-2}}'
    assert _offsets_json(key, V0 + _i32(3) + NO_TAGS)[1] == '{"version":"0","data":{"epoch":3}}'
    assert decode_group_record(key, None).kind == "streams_group_metadata"
    assert format_offsets_record(key, None, 3) == (key_text, "<DELETE>")


def test_streams_group_partition_metadata_record():
    # topics 02 [topicId | 02 "t" | numPartitions 00000001 | partitionMetadata 02 [00000000 | racks 01 | 00] | 00]
    # | 00
    value = V0 + _carray(UUID_A + _cs("t") + _i32(1) + _carray(_i32(0) + _carray() + NO_TAGS) + NO_TAGS) + NO_TAGS
    assert value.hex() == "0000" + "02" + UUID_A.hex() + "0274" + "00000001" + "02" + "00000000" + "01" + "00" \
        + "00" + "00"
    assert _offsets_json(_key(18, "app"), value) == (
        '{"type":"18","data":{"groupId":"app"}}',
        '{"version":"0","data":{"topics":[{"topicId":"%s","topicName":"t","numPartitions":1,'
        '"partitionMetadata":[{"partition":0,"racks":[]}]}]}}' % UUID_A_TEXT)
    # the form without partitionMetadata: topicId | 02 "t" | 00000001 | 00
    bare = V0 + _carray(UUID_A + _cs("t") + _i32(1) + NO_TAGS) + NO_TAGS
    assert _payload_data(_offsets_json(_key(18, "app"), bare)[1]) == {
        "topics": [{"topicId": UUID_A_TEXT, "topicName": "t", "numPartitions": 1}]}


def test_streams_group_member_metadata_record():
    # instanceId null (00) | rackId 03 "r1" | clientId 02 "c" | clientHost 02 "h" | rebalanceTimeoutMs 0000ea60
    # | topologyEpoch 00000004 | processId 02 "p" | userEndpoint: 01 (present, int8) 0a "localhost" 1f90 (port
    # 8080, uint16) 00 | clientTags 02 [03 "az" 02 "1" 00] | 00
    key = _key(19, "app", "m1")
    assert key.hex() == "0013" + "0003617070" + "00026d31"
    head = V0 + _cs(None) + _cs("r1") + _cs("c") + _cs("h") + _i32(60000) + _i32(4) + _cs("p")
    tags = _carray(_cs("az") + _cs("1") + NO_TAGS) + NO_TAGS
    value = head + b"\x01" + _cs("localhost") + struct.pack(">H", 8080) + NO_TAGS + tags
    assert value.hex() == ("0000" + "00" + "037231" + "0263" + "0268" + "0000ea60" + "00000004" + "0270" + "01"
                           + "0a" + b"localhost".hex() + "1f90" + "00" + "02" + "03617a" + "0231" + "00" + "00")
    key_text, payload = _offsets_json(key, value)
    assert key_text == '{"type":"19","data":{"groupId":"app","memberId":"m1"}}'
    fields = ('"instanceId":null,"rackId":"r1","clientId":"c","clientHost":"h","rebalanceTimeoutMs":60000,'
              '"topologyEpoch":4,"processId":"p",')
    assert payload == ('{"version":"0","data":{%s"userEndpoint":{"host":"localhost","port":8080},'
                       '"clientTags":[{"key":"az","value":"1"}]}}' % fields)
    # a null userEndpoint: int8 marker ff
    assert _offsets_json(key, head + b"\xff" + tags)[1] == \
        '{"version":"0","data":{%s"userEndpoint":null,"clientTags":[{"key":"az","value":"1"}]}}' % fields
    # a port above 32767 is unsigned: ffff is 65535
    high = head + b"\x01" + _cs("h") + b"\xff\xff" + NO_TAGS + tags
    assert _payload_data(_offsets_json(key, high)[1])["userEndpoint"] == {"host": "h", "port": 65535}


def test_streams_group_assignment_records():
    # TaskIds: subtopologyId compact string | partitions compact []int32 | 00
    sub0 = _cs("0") + _carray(_i32(0), _i32(1)) + NO_TAGS
    sub1 = _cs("1") + _carray(_i32(2)) + NO_TAGS
    assert sub0.hex() == "0230" + "03" + "00000000" + "00000001" + "00"
    # 20: assignmentEpoch 00000009 | 00
    assert _offsets_json(_key(20, "app"), V0 + _i32(9) + NO_TAGS) == (
        '{"type":"20","data":{"groupId":"app"}}', '{"version":"0","data":{"assignmentEpoch":9}}')
    # 21: activeTasks 03 [sub0, sub1] | standbyTasks 01 | warmupTasks 02 [sub1] | 00
    target = V0 + _carray(sub0, sub1) + _carray() + _carray(sub1) + NO_TAGS
    assert _offsets_json(_key(21, "app", "m"), target) == (
        '{"type":"21","data":{"groupId":"app","memberId":"m"}}',
        '{"version":"0","data":{"activeTasks":[{"subtopologyId":"0","partitions":[0,1]},'
        '{"subtopologyId":"1","partitions":[2]}],"standbyTasks":[],"warmupTasks":[{"subtopologyId":"1",'
        '"partitions":[2]}]}}')
    # 22: memberEpoch 00000007 | previousMemberEpoch 00000006 | state 01 | active 02 [sub0] | standby 01 | warmup 01
    # | activeTasksPendingRevocation 02 [sub1] | standby.. 01 | warmup.. 01 | 00
    current = V0 + _i32(7, 6) + b"\x01" + _carray(sub0) + _carray() * 2 + _carray(sub1) + _carray() * 2 + NO_TAGS
    data = _payload_data(_offsets_json(_key(22, "app", "m"), current)[1])
    assert list(data) == ["memberEpoch", "previousMemberEpoch", "state", "activeTasks", "standbyTasks",
                          "warmupTasks", "activeTasksPendingRevocation", "standbyTasksPendingRevocation",
                          "warmupTasksPendingRevocation"]
    assert (data["memberEpoch"], data["previousMemberEpoch"], data["state"]) == (7, 6, 1)
    assert data["activeTasks"] == [{"subtopologyId": "0", "partitions": [0, 1]}]
    assert data["activeTasksPendingRevocation"] == [{"subtopologyId": "1", "partitions": [2]}]
    assert data["standbyTasks"] == data["warmupTasks"] == data["warmupTasksPendingRevocation"] == []
    # 22 without its revocation arrays does not fit (KIP-1071's schema, said so), and a type-21 key needs memberId
    text, payload = format_offsets_record(_key(22, "app", "m"), V0 + _i32(7, 6) + b"\x01" + _carray(sub0)
                                          + _carray() * 2 + NO_TAGS, 5)
    assert payload is None and text.startswith("Error at offset 5, skipping.") and "KIP-1071" in text
    assert format_offsets_record(_key(21, "app"), None, 6)[0].startswith("Error at offset 6, skipping.")


def test_streams_group_topology_record():
    # TopicInfo: name 05 "repa" | partitions 00000003 | replicationFactor ffff (-1) | topicConfigs 02 [0f
    # "cleanup.policy" 08 "compact" 00] | 00
    topic_info = _cs("repa") + _i32(3) + _i16(-1) + _carray(_cs("cleanup.policy") + _cs("compact") + NO_TAGS) + NO_TAGS
    assert topic_info.hex() == ("0572657061" + "00000003" + "ffff" + "02" + "0f" + b"cleanup.policy".hex() + "08"
                                + b"compact".hex() + "00" + "00")
    # epoch 00000002 | subtopologies 02 [02 "0" | sourceTopics 02 [03 "in"] | sourceTopicRegex 01 |
    # stateChangelogTopics 01 | repartitionSinkTopics 02 [05 "repa"] | repartitionSourceTopics 02 [topic_info] |
    # copartitionGroups 02 [sourceTopics 02 [0000] | sourceTopicRegex 01 | repartitionSourceTopics 02 [0000] | 00]
    # | 00] | 00
    subtopology = (_cs("0") + _carray(_cs("in")) + _carray() + _carray() + _carray(_cs("repa"))
                   + _carray(topic_info) + _carray(_carray(_i16(0)) + _carray() + _carray(_i16(0)) + NO_TAGS)
                   + NO_TAGS)
    value = V0 + _i32(2) + _carray(subtopology) + NO_TAGS
    key_text, payload = _offsets_json(_key(23, "app"), value)
    assert key_text == '{"type":"23","data":{"groupId":"app"}}'
    assert payload == (
        '{"version":"0","data":{"epoch":2,"subtopologies":[{"subtopologyId":"0","sourceTopics":["in"],'
        '"sourceTopicRegex":[],"stateChangelogTopics":[],"repartitionSinkTopics":["repa"],'
        '"repartitionSourceTopics":[{"name":"repa","partitions":3,"replicationFactor":-1,'
        '"topicConfigs":[{"key":"cleanup.policy","value":"compact"}]}],'
        '"copartitionGroups":[{"sourceTopics":[0],"sourceTopicRegex":[],"repartitionSourceTopics":[0]}]}]}}')


def test_streams_group_resolved_topic_ids_record():
    # assignmentEpoch 00000004 | resolvedTopicIdsBySubtopology 02 [02 "0" | topicIds 03 [UUID_A UUID_B] | 00] | 00
    value = V0 + _i32(4) + _carray(_cs("0") + _carray(UUID_A, UUID_B) + NO_TAGS) + NO_TAGS
    assert _offsets_json(_key(24, "app"), value) == (
        '{"type":"24","data":{"groupId":"app"}}',
        '{"version":"0","data":{"assignmentEpoch":4,"resolvedTopicIdsBySubtopology":[{"subtopologyId":"0",'
        '"topicIds":["%s","%s"]}]}}' % (UUID_A_TEXT, UUID_B_TEXT))


def test_every_group_record_type_is_known_and_later_ones_are_unknown():
    # every type Kafka's group coordinator defines (0-24) decodes its key (tombstones); 25 and Short.MAX_VALUE are
    # unknown, printed as DumpLogSegments prints them
    keys = {0: _key(0, "g", "t") + _i32(0), 1: _key(1, "g", "t") + _i32(0), 2: _key(2, "g")}
    for record_type in range(3, 25):
        strings = ("g", "m") if record_type in (5, 7, 8, 10, 13, 14, 16, 19, 21, 22) else ("g",)
        key = keys.get(record_type, _key(record_type, *strings))
        text, payload = format_offsets_record(key, None, 1)
        assert payload == "<DELETE>" and json.loads(text)["type"] == str(record_type), text
        assert decode_group_record(key, None).kind != "unknown"
    assert format_offsets_record(_key(25, "g"), V0, 4) == ("Unknown record type 25 at offset 4, skipping.", None)
    assert format_offsets_record(b"\x7f\xff", b"", 0) == ("Unknown record type 32767 at offset 0, skipping.", None)
    # a record without a key stops Kafka's tool: kafkaseg raises its error, in Kafka's words
    with pytest.raises(CorruptDataError, match="at offset 8 using the specified decoder \\(message had a missing"):
        format_offsets_record(None, V0, 8)


# __share_group_state (KIP-932): ShareSnapshot (type 0) and ShareUpdate (type 1), from share-coordinator's
# Share*Key/Value.json: keys groupId string | topicId uuid | partition int32 (not flexible); values v0, flexible.
TOPIC_ID = bytes.fromhex("523e709ff16a4d78ab1004af559458d7")


def _share_key(record_type: int) -> bytes:
    return struct.pack(">h", record_type) + struct.pack(">h", 3) + b"gs1" + TOPIC_ID + _i32(0)


def test_share_group_state_records_as_kafkas_own_test_prints_them():
    # Uuid "Uj5wn_FqTXirEASvVZRY1w" (DumpLogSegmentsTest's) is these 16 bytes in URL-safe base64
    assert base64.urlsafe_b64encode(TOPIC_ID).rstrip(b"=") == b"Uj5wn_FqTXirEASvVZRY1w"
    key = _share_key(0)
    assert key.hex() == "0000" + "0003" + "677331" + TOPIC_ID.hex() + "00000000"
    # ShareSnapshotValue: snapshotEpoch 00000000 | stateEpoch 00000000 | leaderEpoch 00000000 | startOffset 0 (int64)
    # | createTimestamp | writeTimestamp | stateBatches 02 [firstOffset 0 | lastOffset 4 | deliveryState 02 |
    # deliveryCount 0001 | 00] | 00
    ts = 1_700_000_000_123
    batch = _i64(0, 4) + b"\x02" + _i16(1) + NO_TAGS
    snapshot = V0 + _i32(0, 0, 0) + _i64(0) + _i64(ts, ts) + _carray(batch) + NO_TAGS
    assert snapshot.hex() == ("0000" + "00" * 12 + "00" * 8 + f"{ts:016x}" * 2 + "02" + "00" * 8
                              + "0000000000000004" + "02" + "0001" + "00" + "00")
    # expected strings: DumpLogSegmentsTest.testShareGroupStateMessageParser's
    expected_key = '{"type":"0","data":{"groupId":"gs1","topicId":"Uj5wn_FqTXirEASvVZRY1w","partition":0}}'
    assert format_share_group_state_record(key, snapshot, 0) == (
        expected_key,
        '{"version":"0","data":{"snapshotEpoch":0,"stateEpoch":0,"leaderEpoch":0,"startOffset":0,'
        '"createTimestamp":%d,"writeTimestamp":%d,"stateBatches":[{"firstOffset":0,"lastOffset":4,'
        '"deliveryState":2,"deliveryCount":1}]}}' % (ts, ts))
    # ShareUpdateValue: snapshotEpoch | leaderEpoch | startOffset | stateBatches | 00
    update = V0 + _i32(0, 0) + _i64(0) + _carray(batch) + NO_TAGS
    assert format_share_group_state_record(_share_key(1), update, 0) == (
        '{"type":"1","data":{"groupId":"gs1","topicId":"Uj5wn_FqTXirEASvVZRY1w","partition":0}}',
        '{"version":"0","data":{"snapshotEpoch":0,"leaderEpoch":0,"startOffset":0,"stateBatches":[{"firstOffset":0,'
        '"lastOffset":4,"deliveryState":2,"deliveryCount":1}]}}')
    assert format_share_group_state_record(key, None, 0) == (expected_key, "<DELETE>")
    assert format_share_group_state_record(b"\x7f\xff", b"", 0) == (
        "Unknown record type 32767 at offset 0, skipping.", None)
    # a ShareSnapshotValue given to a ShareUpdate key does not fit (Kafka: "Error at offset 0, skipping. ...")
    text, payload = format_share_group_state_record(_share_key(1), V0 + b"\x00" * 40 + NO_TAGS, 0)
    assert payload is None and text.startswith("Error at offset 0, skipping.") and "KIP-932" in text
    with pytest.raises(CorruptDataError, match="using the specified decoder"):
        format_share_group_state_record(None, None, 0)
    assert decode_share_group_state_record(key, snapshot).kind == "share_snapshot"


def test_share_group_state_records_of_other_kafka_versions():
    batch = _i64(10, 12) + b"\x00" + _i16(3) + NO_TAGS
    # Kafka 4.2 (KIP-1226) tags deliveryCompleteCount (tag 0, int32, default -1): 01 | 00 | 04 | 00000005, printed
    # after startOffset, where the JSON file declares it
    update = V0 + _i32(2, 7) + _i64(10) + _carray(batch) + bytes([1, 0, 4]) + _i32(5)
    data = _payload_data(format_share_group_state_record(_share_key(1), update, 0)[1])
    assert list(data) == ["snapshotEpoch", "leaderEpoch", "startOffset", "deliveryCompleteCount", "stateBatches"]
    assert (data["snapshotEpoch"], data["leaderEpoch"], data["startOffset"], data["deliveryCompleteCount"]) == \
        (2, 7, 10, 5)
    assert data["stateBatches"] == [{"firstOffset": 10, "lastOffset": 12, "deliveryState": 0, "deliveryCount": 3}]
    # 2024-10's form: snapshotEpoch uint16 (ffff = 65535), no timestamps
    old = V0 + b"\xff\xff" + _i32(1, 2) + _i64(10) + _carray(batch) + NO_TAGS
    assert format_share_group_state_record(_share_key(0), old, 0)[1] == (
        '{"version":"0","data":{"snapshotEpoch":65535,"stateEpoch":1,"leaderEpoch":2,"startOffset":10,'
        '"stateBatches":[{"firstOffset":10,"lastOffset":12,"deliveryState":0,"deliveryCount":3}]}}')


def test_new_group_records_malformed():
    # a non-nullable compact string given as null (00): clientId of ShareGroupMemberMetadataValue
    key, payload = format_offsets_record(_key(10, "g", "m"), V0 + _cs(None) + _cs(None), 11)
    assert key.startswith("Error at offset 11, skipping.") and payload is None
    # a value cut short inside its int32, and a key missing its memberId
    assert format_offsets_record(_key(3, "g"), V0 + b"\x00\x00", 1)[0].startswith("Error at offset 1, skipping.")
    assert format_offsets_record(_key(7, "g"), None, 2)[0].startswith("Error at offset 2, skipping.")
    # a tagged classicMemberMetadata whose size runs past the value
    head = V0 + _cs(None) * 2 + _cs("c") + _cs("h") + _carray() + _cs(None) + _i32(1) + _cs(None)
    assert format_offsets_record(_key(5, "g", "m"), head + bytes([1, 0, 40, 1]), 3)[0].startswith("Error at offset 3")


def test_names_and_json_printing():
    assert metadata_type_name(0) == "REGISTER_BROKER_RECORD"
    assert metadata_type_name(21) == "ZK_MIGRATION_STATE_RECORD"
    assert metadata_type_name(99) == "UNKNOWN(99)"
    assert to_json({"a": [1, None, True], "b": b"\x00\x01", "c": "é\n"}) == '{"a":[1,null,true],"b":"AAE=","c":"é\\n"}'
    assert [_java_double(x) for x in (1e7, 0.5, 1.0, 1.5e-4, 123456789.0)] == \
        ["1.0E7", "0.5", "1.0", "1.5E-4", "1.23456789E8"]


from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from kafkaseg.errors import KafkaSegError  # noqa: E402


@settings(max_examples=400, deadline=None)
@given(key=st.binary(max_size=40), value=st.one_of(st.none(), st.binary(max_size=200)),
       prefix=st.sampled_from([b"", b"\x00\x00", b"\x00\x01", b"\x00\x02", b"\x00\x03", b"\x00\x05",
                               b"\x00\x0f", b"\x01", b"\x01\x02\x00"]))
def test_arbitrary_bytes_only_raise_kafkaseg_errors(key, value, prefix):
    """Internal-topic decoders on garbage: a KafkaSegError or a value, never another exception (and, since inputs
    are small, never a large allocation from a length field)."""
    for call in (lambda: decode_group_record(prefix + key, value),
                 lambda: decode_transaction_record(prefix + key, value),
                 lambda: decode_metadata_record(prefix + (value or b"")),
                 lambda: decode_control_record(prefix + key, value)):
        try:
            call()
        except KafkaSegError:
            pass
    # the formatters used by `kafkaseg dump` never raise at all: they print an error line instead
    format_offsets_record(prefix + key, value, 0)
    format_transaction_record(prefix + key, value, 0)
