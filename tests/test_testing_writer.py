"""kafkaseg.testing.writer: batches and legacy message sets, decoded by kafka-python (the oracle) and compared
byte for byte with kafka-python's own builders where they produce the same thing."""

from __future__ import annotations

import gzip
import random
import struct

import lz4.frame
import pytest
from kafka.record.default_records import DefaultRecordBatchBuilder
from kafka.record.legacy_records import LegacyRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords
from kafka.record.util import encode_varint as kp_encode_varint

from kafkaseg.errors import InvalidOptionError
from kafkaseg.testing import codecs
from kafkaseg.testing.writer import (
    LOG_APPEND_TIME,
    ControlType,
    Record,
    build_batch_v2,
    build_control_batch,
    build_legacy_entries,
    build_legacy_message,
    build_legacy_wrapper,
    encode_varint,
)
from kafkaseg.wire.batch import read_header
from kafkaseg.wire.crc import crc_is_valid

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]


def decode_all(data: bytes):
    """[(batch, [records])] as kafka-python reads them, CRCs validated."""
    out = []
    mr = MemoryRecords(data)
    while True:
        batch = mr.next_batch()
        if batch is None:
            break
        assert batch.validate_crc()
        out.append((batch, list(batch)))
    return out


def sample_records(n=40, base=100, seed=1):
    rng = random.Random(seed)
    out = []
    for i in range(n):
        key = None if i % 7 == 3 else b"key-%d" % i
        value = None if i % 11 == 5 else (b"" if i % 13 == 6 else rng.randbytes(rng.randint(1, 300)))
        headers = () if i % 3 else (("h", b"v%d" % i), ("null", None), ("ünï", b""))
        out.append(Record(base + i, 1_700_000_000_000 + i * 5 + rng.randint(-3, 3), key, value, headers))
    return out


@pytest.mark.parametrize("value", [0, 1, -1, 63, -64, 64, 127, 128, 300, -300, 2**31 - 1, -2**31, 2**40, -2**40,
                                   2**62, -2**63])
def test_varint_matches_kafka_python(value):
    out = bytearray()
    kp_encode_varint(value, out.append)
    assert encode_varint(value) == bytes(out)


def test_varint_every_small_value_matches_kafka_python():
    for value in range(-20000, 20000, 7):
        out = bytearray()
        kp_encode_varint(value, out.append)
        assert encode_varint(value) == bytes(out), value


@pytest.mark.parametrize("transactional", [False, True])
def test_uncompressed_batch_is_byte_identical_to_kafka_python_builder(transactional):
    records = [Record(i, 1_600_000_000_000 + 3 * i, None if i == 2 else b"k%d" % i,
                      None if i == 4 else b"value-%d" % i, (("a", b"1"), ("b", None)) if i % 2 else ())
               for i in range(10)]
    builder = DefaultRecordBatchBuilder(magic=2, compression_type=0, is_transactional=transactional,
                                        producer_id=4242 if transactional else -1,
                                        producer_epoch=3 if transactional else -1,
                                        base_sequence=17 if transactional else -1, batch_size=1 << 20)
    for r in records:
        builder.append(r.offset, r.timestamp, r.key, r.value, list(r.headers))
    expected = bytes(builder.build())
    ours = build_batch_v2(records, is_transactional=transactional, producer_id=4242 if transactional else -1,
                          producer_epoch=3 if transactional else -1, base_sequence=17 if transactional else -1,
                          partition_leader_epoch=0)
    assert ours.data == expected


@pytest.mark.parametrize("codec", CODECS)
def test_v2_batch_decodes_with_kafka_python(codec):
    records = sample_records()
    batch = build_batch_v2(records, codec=codec, producer_id=77, producer_epoch=2, base_sequence=1000,
                           partition_leader_epoch=9)
    header = read_header(batch.data)
    assert header.size == len(batch.data) and crc_is_valid(batch.data, header)
    assert header.codec_name == codec and header.partition_leader_epoch == 9
    [(kb, krecs)] = decode_all(batch.data)
    assert kb.base_offset == 100 and kb.last_offset == 139 and kb.producer_id == 77
    assert kb.max_timestamp == max(r.timestamp for r in records) == batch.max_timestamp
    assert kb.base_sequence == 1000 and kb.timestamp_type == 0
    assert len(krecs) == len(records)
    for r, k in zip(records, krecs):
        assert (k.offset, k.timestamp, k.key, k.value) == (r.offset, r.timestamp, r.key, r.value)
        assert tuple(k.headers) == r.headers


@pytest.mark.parametrize("codec", ["none", "zstd"])
def test_log_append_time_batch(codec):
    records = sample_records(10)
    batch = build_batch_v2(records, codec=codec, timestamp_type=LOG_APPEND_TIME, log_append_time=1_800_000_000_000)
    [(kb, krecs)] = decode_all(batch.data)
    assert kb.timestamp_type == 1 and kb.max_timestamp == 1_800_000_000_000
    assert [k.timestamp for k in krecs] == [1_800_000_000_000] * 10
    assert all(k.timestamp_type == 1 for k in krecs)


def test_records_with_offset_gaps_and_delete_horizon():
    records = [r for r in sample_records(30) if r.offset % 4]
    batch = build_batch_v2(records, base_offset=100, last_offset=129, delete_horizon_ms=1_700_000_999_000)
    header = read_header(batch.data)
    assert header.has_delete_horizon and header.delete_horizon_ms == 1_700_000_999_000
    assert header.base_offset == 100 and header.last_offset == 129 and header.records_count == len(records)
    [(kb, krecs)] = decode_all(batch.data)
    # record timestamps survive the horizon base (deltas are relative to it, possibly negative)
    assert [(k.offset, k.timestamp) for k in krecs] == [(r.offset, r.timestamp) for r in records]


def test_empty_batch_as_compaction_leaves_it():
    batch = build_batch_v2([], codec="lz4", base_offset=50, last_offset=57, producer_id=5, producer_epoch=1,
                           base_sequence=20, empty_timestamp=1_700_000_000_123)
    assert len(batch.data) == 61
    header = read_header(batch.data)
    assert header.records_count == 0 and header.codec == 0 and header.last_offset == 57
    assert header.base_timestamp == -1 and header.max_timestamp == 1_700_000_000_123
    [(kb, krecs)] = decode_all(batch.data)
    assert krecs == [] and kb.last_sequence == 27
    with pytest.raises(InvalidOptionError):
        build_batch_v2([])


@pytest.mark.parametrize("kind", [ControlType.COMMIT, ControlType.ABORT])
def test_control_batch(kind):
    batch = build_control_batch(500, 1_700_000_000_500, kind, producer_id=9, producer_epoch=4, coordinator_epoch=12)
    assert batch.control_type == kind
    [(kb, krecs)] = decode_all(batch.data)
    assert kb.is_control_batch and kb.is_transactional and kb.producer_id == 9 and kb.base_sequence == -1
    [rec] = krecs
    assert rec.offset == 500 and rec.type == kind and rec.version == 0
    assert (rec.abort, rec.commit) == (kind == ControlType.ABORT, kind == ControlType.COMMIT)
    assert struct.unpack(">hi", rec.value) == (0, 12)


@pytest.mark.parametrize("magic", [0, 1])
def test_uncompressed_legacy_entries_byte_identical_to_kafka_python(magic):
    records = [Record(10 + i, 1_500_000_000_000 + i, None if i == 1 else b"k%d" % i,
                      None if i == 2 else b"value %d" % i) for i in range(5)]
    ours = b"".join(e.data for e in build_legacy_entries(records, magic))
    expected = bytearray()
    for r in records:
        builder = LegacyRecordBatchBuilder(magic, 0, 1 << 20)
        builder.append(r.offset, r.timestamp, r.key, r.value)
        expected += builder.build()
    assert ours == bytes(expected)


@pytest.mark.parametrize("magic,codec", [(0, "gzip"), (0, "snappy"), (1, "gzip"), (1, "snappy"), (1, "lz4")])
def test_legacy_wrappers_decode_with_kafka_python(magic, codec):
    records = sample_records(25, base=1000)
    records = [Record(r.offset, r.timestamp, r.key, r.value if r.value is not None else b"x") for r in records]
    wrapper = build_legacy_wrapper(records, magic, codec)
    header = read_header(wrapper.data)
    assert header.last_offset == 1024 and wrapper.first_offset == 1000 and header.magic == magic
    [(kb, krecs)] = decode_all(wrapper.data)
    assert [k.offset for k in krecs] == [r.offset for r in records]
    assert [(k.key, k.value) for k in krecs] == [(r.key, r.value) for r in records]
    if magic == 1:
        assert [k.timestamp for k in krecs] == [r.timestamp for r in records]
        assert header.max_timestamp == max(r.timestamp for r in records)
    for k in krecs:
        assert k.validate_crc()


def test_legacy_v1_inner_offsets_are_relative_and_v0_absolute():
    records = [Record(5000 + i, 1_500_000_000_000, b"k", b"v") for i in range(3)]
    for magic, expected in ((1, [0, 1, 2]), (0, [5000, 5001, 5002])):
        wrapper = build_legacy_wrapper(records, magic, "gzip")
        value_at = 12 + 4 + 2 + (8 if magic == 1 else 0) + 4  # crc magic attrs [ts] keyLength(-1)
        (length,) = struct.unpack_from(">i", wrapper.data, value_at)
        inner = gzip.decompress(wrapper.data[value_at + 4:value_at + 4 + length])
        offsets, pos = [], 0
        while pos < len(inner):
            off, size = struct.unpack_from(">qi", inner, pos)
            offsets.append(off)
            pos += 12 + size
        assert offsets == expected


def test_legacy_v1_log_append_time_wrapper_and_entries():
    records = sample_records(6)
    records = [Record(r.offset, r.timestamp, r.key, r.value) for r in records]
    wrapper = build_legacy_wrapper(records, 1, "snappy", timestamp_type=LOG_APPEND_TIME, log_append_time=42_000)
    [(kb, krecs)] = decode_all(wrapper.data)
    assert kb.timestamp_type == 1 and [k.timestamp for k in krecs] == [42_000] * 6
    entries = build_legacy_entries(records, 1, timestamp_type=LOG_APPEND_TIME, log_append_time=43_000)
    decoded = decode_all(b"".join(e.data for e in entries))
    assert [(b.timestamp_type, r[0].timestamp) for b, r in decoded] == [(1, 43_000)] * 6


def test_legacy_v0_lz4_wrapper_has_kafka_3160_header_checksum():
    records = [Record(i, -1, b"k", b"value %d" % i) for i in range(4)]
    wrapper = build_legacy_wrapper(records, 0, "lz4")
    (length,) = struct.unpack_from(">i", wrapper.data, 12 + 4 + 2 + 4)
    frame = wrapper.data[26:26 + length]
    assert frame[6] == (codecs.xxh32(frame[:6]) >> 8) & 0xFF
    inner = lz4.frame.decompress(frame[:6] + codecs.lz4_frame_header()[6:7] + frame[7:])
    decoded = decode_all(inner)
    assert [r[0].offset for _, r in decoded] == [0, 1, 2, 3]


def test_legacy_rejects_what_old_formats_cannot_hold():
    with pytest.raises(InvalidOptionError):
        build_legacy_wrapper([Record(0, 0, None, b"x")], 1, "zstd")
    with pytest.raises(InvalidOptionError):
        build_legacy_message(0, 2, None, b"x")
