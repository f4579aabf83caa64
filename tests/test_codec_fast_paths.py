"""The compiled kernel's codec fast paths (framing walked in C, output into a reused buffer) against
``kafkaseg.codecs`` (through the pure twin): same records for every frame shape, the fast path taken for the
frames Kafka's producers write, and left for everything else, with the same error when a frame is corrupt.

The frames come from the codec libraries themselves (lz4.frame, zstandard, cramjam) and from the test writer's
Java-compatible framing, not from the kernel's own walks.
"""

from __future__ import annotations

import os
import random

import cramjam
import lz4.frame
import pytest
import zstandard

from kafkaseg.decode import DecodeRequest, _kernel_py
from kafkaseg.errors import KafkaSegError
from kafkaseg.testing import Record
from kafkaseg.testing.codecs import lz4_kafka, snappy_xerial, zstd_streaming
from kafkaseg.testing.writer import assemble_batch_v2, encode_records

try:
    from kafkaseg.decode import _kernel as _compiled
except ImportError:  # pragma: no cover
    _compiled = None

pytestmark = pytest.mark.skipif(_compiled is None, reason="compiled kernel not built")

SNAPPY, LZ4, ZSTD = 2, 3, 4


def _records(n: int, value_size: int, seed: int = 0) -> list[Record]:
    rng = random.Random(seed)
    words = [b"alpha", b"beta", b"gamma", b"delta", os.urandom(7)]
    out = []
    for i in range(n):
        if i % 5 == 4:
            value = rng.randbytes(value_size)  # incompressible: lz4 stores such blocks raw
        else:
            value = b" ".join(rng.choice(words) for _ in range(value_size // 5))[:value_size]
        out.append(Record(i, 1_700_000_000_000 + i, None if i % 3 == 0 else b"key-%d" % i, value, []))
    return out


def _batch(records: list[Record], codec: int, frame) -> bytes:
    """A v2 batch whose payload is ``frame(raw records)``: any framing, valid CRC."""
    raw = encode_records(records, 0, records[0].timestamp)
    return assemble_batch_v2(base_offset=0, partition_leader_epoch=0, attributes=codec,
                             last_offset_delta=len(records) - 1, base_timestamp=records[0].timestamp,
                             max_timestamp=records[-1].timestamp, producer_id=-1, producer_epoch=-1,
                             base_sequence=-1, records_count=len(records), payload=frame(raw))


def _decode_both(buf: bytes, codec: int, **req):
    request = DecodeRequest(path="fast.log", **req)
    before = _compiled._codec_fast_path_counts()[codec]
    try:
        compiled = _compiled.decode(buf, request)
    except KafkaSegError as err:
        compiled = err
    after = _compiled._codec_fast_path_counts()[codec]
    try:
        pure = _kernel_py.decode(buf, request)
    except KafkaSegError as err:
        pure = err
    return compiled, pure, (after[0] - before[0], after[1] - before[1])


def _same(compiled, pure):
    if isinstance(pure, KafkaSegError):
        assert type(compiled) is type(pure) and compiled.position == pure.position and str(compiled) == str(pure)
        return
    assert {k: v.to_pylist() for k, v in compiled.columns.items()} == {k: v.to_pylist() for k, v in
                                                                      pure.columns.items()}


SIZES = [(1, 10), (70, 200), (400, 1000), (30, 70_000)]  # down to one record, up to multi-block payloads


@pytest.mark.parametrize("n,value_size", SIZES)
@pytest.mark.parametrize("codec,frame", [
    (SNAPPY, snappy_xerial),  # xerial framing, 32 KiB blocks (snappy-java)
    (SNAPPY, lambda raw: bytes(cramjam.snappy.compress_raw(raw))),  # one raw block (non-Java clients)
    (LZ4, lz4_kafka),  # KafkaLZ4BlockOutputStream: FLG 0x60, 64 KiB independent blocks, raw blocks when larger
    (ZSTD, zstd_streaming),  # zstd-jni streaming: no content size
    (ZSTD, lambda raw: zstandard.ZstdCompressor(write_content_size=True, write_checksum=True).compress(raw)),
], ids=["snappy-xerial", "snappy-raw", "lz4-kafka", "zstd-stream", "zstd-sized-checksum"])
def test_frames_producers_write_take_the_fast_path_and_decode_like_the_pure_twin(codec, frame, n, value_size):
    records = _records(n, value_size)
    compiled, pure, (hits, misses) = _decode_both(_batch(records, codec, frame), codec)
    _same(compiled, pure)
    assert compiled.columns["value"].to_pylist() == [r.value for r in records]
    assert (hits, misses) == (1, 0)


@pytest.mark.parametrize("codec,frame", [
    (LZ4, lambda raw: lz4.frame.compress(raw, block_linked=True)),  # dependent blocks (liblz4's default)
    (LZ4, lambda raw: lz4.frame.compress(raw, content_checksum=True, block_linked=False)),
    (LZ4, lambda raw: lz4.frame.compress(raw, store_size=True, block_linked=False)),
    (LZ4, lambda raw: lz4.frame.compress(raw, block_checksum=True, block_linked=False)),
    (ZSTD, lambda raw: zstd_streaming(raw[:len(raw) // 2]) + zstd_streaming(raw[len(raw) // 2:])),  # two frames
    (ZSTD, lambda raw: bytes.fromhex("502a4d1803000000616263") + zstd_streaming(raw)),  # a skippable frame first
], ids=["lz4-linked", "lz4-content-checksum", "lz4-content-size", "lz4-block-checksum", "zstd-two-frames",
        "zstd-skippable"])
@pytest.mark.parametrize("n,value_size", SIZES[1:])
def test_other_frames_are_left_to_kafkaseg_codecs(codec, frame, n, value_size):
    records = _records(n, value_size, seed=1)
    compiled, pure, (hits, misses) = _decode_both(_batch(records, codec, frame), codec)
    _same(compiled, pure)
    assert compiled.columns["value"].to_pylist() == [r.value for r in records]
    assert (hits, misses) == (0, 1)


@pytest.mark.parametrize("codec,frame", [(SNAPPY, snappy_xerial), (LZ4, lz4_kafka), (ZSTD, zstd_streaming)],
                         ids=["snappy", "lz4", "zstd"])
def test_corrupt_or_oversized_frames_fail_exactly_like_kafkaseg_codecs(codec, frame):
    records = _records(400, 1000, seed=2)
    good = _batch(records, codec, frame)
    rng = random.Random(3)
    for _ in range(300):
        bad = bytearray(good)
        for _ in range(rng.randint(1, 4)):
            bad[rng.randrange(61, len(bad))] = rng.randrange(256)
        compiled, pure, _ = _decode_both(bytes(bad), codec, verify_crc=False)
        _same(compiled, pure)
    # a budget below the frame's output: both raise the same DecompressionLimitError (or corrupt-data error)
    compiled, pure, _ = _decode_both(good, codec, max_decompressed_bytes=100_000)
    assert isinstance(pure, KafkaSegError)
    _same(compiled, pure)


def test_lz4_batches_written_by_real_java_producers_take_the_fast_path(corpus_dir):
    """The fast path is for what brokers hold in practice: the corpus's lz4 segments from a Confluent Platform 5.1
    broker (Java producers) all take it, and decode like the pure twin."""
    segments = sorted((corpus_dir / "segments").glob("*/*/kafka-data/_confluent-*-0/*.log"))
    lz4_batches = 0
    for path in segments:
        data = path.read_bytes()
        before = _compiled._codec_fast_path_counts()[LZ4]
        compiled = _compiled.decode(data, DecodeRequest(path=str(path)))
        after = _compiled._codec_fast_path_counts()[LZ4]
        assert after[1] == before[1], f"{path.name}: an lz4 batch missed the fast path"
        lz4_batches += after[0] - before[0]
        _same(compiled, _kernel_py.decode(data, DecodeRequest(path=str(path))))
    if not lz4_batches:
        pytest.skip("no lz4 segments of Java producers in this corpus")
    assert lz4_batches >= 50
