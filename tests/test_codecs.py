"""kafkaseg.codecs: Kafka framings, bounded output, error mapping.

Oracles: kafka-python's ``kafka.codec`` decoders on real corpus payloads and on payloads written by its encoders
(and by python-lz4 / python-zstandard / zlib directly), byte for byte.
"""

from __future__ import annotations

import gzip
import os
import random
import resource
import struct
import time
import tracemalloc
import zlib

import cramjam
import kafka.codec as kafka_codec
import lz4.block
import lz4.frame
import pytest
import zstandard
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkaseg import codecs
from kafkaseg.codecs import CODECS, available_codecs, decompress
from kafkaseg.errors import (CorruptBatchError, DecompressionLimitError, KafkaSegError,
                             UnsupportedCodecError)
from kafkaseg.wire.batch import V2_HEADER_SIZE, iter_headers

GZIP, SNAPPY, LZ4, ZSTD = 1, 2, 3, 4
ORACLE = {GZIP: kafka_codec.gzip_decode, SNAPPY: kafka_codec.snappy_decode, LZ4: kafka_codec.lz4_decode,
          ZSTD: kafka_codec.zstd_decode}
MiB = 1 << 20
GiB = 1 << 30


def json_records(size: int, seed: int = 7) -> bytes:
    """JSON-ish record values, like a typical Kafka topic's batch contents."""
    rng = random.Random(seed)
    out = bytearray()
    i = 0
    while len(out) < size:
        out += (b'{"id":%d,"user":"user%d","event":"%s","ts":%d,"price":%.2f}' % (
            i, rng.randrange(10_000), rng.choice([b"click", b"view", b"buy"]), 1_700_000_000_000 + 37 * i,
            rng.random() * 100))
        i += 1
    return bytes(out[:size])


def compressed_payloads(buf: bytes):
    """(magic, codec, payload) of every compressed batch or legacy wrapper in a record set."""
    for header in iter_headers(buf):
        if header.codec == 0:
            continue
        if header.magic == 2:
            yield 2, header.codec, memoryview(buf)[header.position + V2_HEADER_SIZE:header.end]
            continue
        cursor = header.position + (26 if header.magic == 1 else 18)  # keyLength (LegacyRecord.java)
        key_length = struct.unpack_from(">i", buf, cursor)[0]
        cursor += 4 + max(key_length, 0)
        value_length = struct.unpack_from(">i", buf, cursor)[0]
        cursor += 4
        yield header.magic, header.codec, memoryview(buf)[cursor:cursor + max(value_length, 0)]


def manifest_files(corpus_dir, codec_names=("gzip", "snappy", "lz4", "zstd")):
    lines = (corpus_dir / "MANIFEST.tsv").read_text().splitlines()
    columns = lines[0].split("\t")
    for line in lines[1:]:
        row = dict(zip(columns, line.split("\t")))
        if any(name in row["codecs"].split(",") for name in codec_names):
            yield row


# --- real payloads ---------------------------------------------------------------------------------------------------

@pytest.mark.corpus
def test_corpus_payloads_match_kafka_python(corpus_dir):
    seen = {}
    for row in manifest_files(corpus_dir):
        buf = (corpus_dir / row["path"]).read_bytes()
        for magic, codec, payload in compressed_payloads(buf):
            if codec == ZSTD and magic < 2:
                continue  # nonstandard files: covered by test_corpus_legacy_zstd_rejected
            expected = ORACLE[codec](bytes(payload))
            got = decompress(codec, payload, max_output=64 * MiB, magic=magic)
            assert bytes(got) == expected, (row["path"], magic, codec)
            seen[(magic, codec)] = seen.get((magic, codec), 0) + 1
    # the corpus covers: v2 gzip/snappy(raw)/lz4 (Java), v1 gzip and lz4, v0 gzip and xerial snappy
    for key in [(2, GZIP), (2, SNAPPY), (2, LZ4), (1, GZIP), (1, LZ4), (0, GZIP), (0, SNAPPY)]:
        assert seen.get(key), f"no corpus payload with (magic, codec) = {key}: {seen}"
    assert sum(seen.values()) > 100


@pytest.mark.corpus
def test_corpus_xerial_and_raw_snappy_both_present(corpus_dir):
    framings = set()
    for row in manifest_files(corpus_dir, ("snappy",)):
        for _, codec, payload in compressed_payloads((corpus_dir / row["path"]).read_bytes()):
            framings.add(bytes(payload[:8]) == b"\x82SNAPPY\x00")
    assert framings == {True, False}


@pytest.mark.corpus
def test_corpus_legacy_zstd_rejected(corpus_dir):
    found = 0
    for row in manifest_files(corpus_dir, ("zstd",)):
        for magic, codec, payload in compressed_payloads((corpus_dir / row["path"]).read_bytes()):
            assert magic < 2 and codec == ZSTD
            with pytest.raises(UnsupportedCodecError):
                decompress(codec, payload, max_output=MiB, magic=magic)
            # the bytes themselves are real zstd (Sarama's): decodable as v2 would, same as the oracle
            assert bytes(decompress(codec, payload, max_output=MiB, magic=2)) == kafka_codec.zstd_decode(
                bytes(payload))
            found += 1
    assert found >= 2


# --- round trips against encoders ------------------------------------------------------------------------------------

SIZES = [0, 1, 100, 16 * 1024, 300 * 1024]


@pytest.mark.parametrize("size", SIZES)
def test_kafka_python_encoders_round_trip(size):
    raw = json_records(size, seed=size)
    cases = {
        GZIP: kafka_codec.gzip_encode(raw),
        SNAPPY: kafka_codec.snappy_encode(raw, xerial_compatible=True, xerial_blocksize=32 * 1024),
        LZ4: kafka_codec.lz4_encode(raw),
        ZSTD: kafka_codec.zstd_encode(raw),
    }
    for codec, payload in cases.items():
        got = decompress(codec, memoryview(payload), max_output=size, magic=2)
        if codec == SNAPPY and size == 0:
            # a bare 16-byte xerial header: kafka-python only detects xerial when there are more than 16 bytes and
            # then fails on it as raw snappy; snappy-java's SnappyInputStream (Kafka) reads it as an empty stream
            assert payload[:8] == b"\x82SNAPPY\x00" and len(payload) == 16 and bytes(got) == b""
            continue
        assert bytes(got) == raw == ORACLE[codec](payload), CODECS[codec]


@pytest.mark.parametrize("size", SIZES)
def test_raw_snappy(size):
    raw = json_records(size)
    payload = bytes(cramjam.snappy.compress_raw(raw))
    assert bytes(decompress(SNAPPY, payload, max_output=size)) == raw == kafka_codec.snappy_decode(payload)


def test_xerial_multi_block_matches_oracle():
    raw = json_records(200 * 1024)
    payload = kafka_codec.snappy_encode(raw, xerial_compatible=True, xerial_blocksize=8 * 1024)
    assert payload.startswith(b"\x82SNAPPY\x00") and len(raw) // (8 * 1024) > 20
    assert bytes(decompress(SNAPPY, payload, max_output=len(raw))) == raw
    with pytest.raises(DecompressionLimitError):
        decompress(SNAPPY, payload, max_output=len(raw) - 1)


def test_gzip_concatenated_members_and_trailing_garbage():
    a, b = json_records(5000, 1), json_records(7000, 2)
    payload = gzip.compress(a) + gzip.compress(b)
    assert bytes(decompress(GZIP, payload, max_output=12000)) == a + b == kafka_codec.gzip_decode(payload)
    with pytest.raises(DecompressionLimitError):
        decompress(GZIP, payload, max_output=11999)
    # GZIPInputStream ignores bytes after a member that do not start another gzip header
    assert bytes(decompress(GZIP, gzip.compress(a) + b"\x00\x00junk", max_output=5000)) == a
    with pytest.raises(CorruptBatchError):  # a second member that starts but is broken is an error
        decompress(GZIP, gzip.compress(a) + gzip.compress(b)[:40], max_output=12000)


@pytest.mark.parametrize("block_size", [lz4.frame.BLOCKSIZE_MAX64KB, lz4.frame.BLOCKSIZE_MAX4MB])
@pytest.mark.parametrize("linked", [False, True])
@pytest.mark.parametrize("checksums", [False, True])
@pytest.mark.parametrize("store_size", [False, True])
def test_lz4_frame_variants(block_size, linked, checksums, store_size):
    raw = json_records(700 * 1024)
    payload = lz4.frame.compress(raw, block_size=block_size, block_linked=linked, content_checksum=checksums,
                                 block_checksum=checksums, store_size=store_size)
    assert bytes(decompress(LZ4, payload, max_output=len(raw))) == raw == kafka_codec.lz4_decode(payload)
    with pytest.raises(DecompressionLimitError):
        decompress(LZ4, payload, max_output=len(raw) - 1)


def test_lz4_output_needing_several_rounds():
    # compresses ~100x: more than the first output guess (8x input), so decoding continues in rounds
    raw = b"".join(json_records(200, seed=i % 3) for i in range(20000))
    payload = lz4.frame.compress(raw, store_size=False)
    assert len(raw) > 8 * len(payload) + 64 * 1024
    assert bytes(decompress(LZ4, payload, max_output=len(raw))) == raw
    with pytest.raises(DecompressionLimitError):
        decompress(LZ4, payload, max_output=len(raw) - 1)


def test_zstd_multiple_frames_skippable_and_content_size():
    a, b = json_records(50_000, 1), json_records(300_000, 2)
    with_size = zstandard.ZstdCompressor(write_content_size=True, write_checksum=True).compress(a)
    streamed = zstandard.ZstdCompressor(write_content_size=False).compress(b)
    skippable = struct.pack("<II", 0x184D2A5E, 5) + b"hello"
    payload = with_size + skippable + streamed
    assert bytes(decompress(ZSTD, payload, max_output=len(a) + len(b))) == a + b == kafka_codec.zstd_decode(payload)
    for limit in (len(a) - 1, len(a) + len(b) - 1):
        with pytest.raises(DecompressionLimitError):
            decompress(ZSTD, payload, max_output=limit)


def test_codec_none_and_unknown_codecs():
    data = memoryview(b"records")
    assert decompress(0, data, max_output=1) is data
    for codec in (5, 6, 7, -1, 8, None, "gzip"):
        with pytest.raises(UnsupportedCodecError):
            decompress(codec, b"x", max_output=MiB)


def test_zstd_rejected_below_magic_2():
    payload = zstandard.ZstdCompressor().compress(b"abc")
    for magic in (0, 1):
        with pytest.raises(UnsupportedCodecError):
            decompress(ZSTD, payload, max_output=MiB, magic=magic)
    assert decompress(ZSTD, payload, max_output=MiB, magic=2) == b"abc"


def test_codecs_and_available_codecs():
    assert CODECS == {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}
    report = available_codecs()
    assert set(report) == set(CODECS.values()) and all(report.values())


# --- KAFKA-3160: magic v0 lz4 header checksum -------------------------------------------------------------------------

@pytest.mark.parametrize("block_size", [0, lz4.frame.BLOCKSIZE_MAX256KB, lz4.frame.BLOCKSIZE_MAX1MB])
@pytest.mark.parametrize("store_size", [False, True])
@pytest.mark.parametrize("checksums", [False, True])
@pytest.mark.parametrize("content", [b"", b"x", b"0123456789" * 100])
def test_xxh32_matches_lz4_header_checksums(block_size, store_size, checksums, content):
    frame = lz4.frame.compress(content, block_size=block_size, store_size=store_size,
                               content_checksum=checksums, block_checksum=checksums)
    descriptor_end = 6 + (8 if frame[4] & 0x08 else 0)
    assert (codecs._xxh32_short(frame[4:descriptor_end]) >> 8) & 0xFF == frame[descriptor_end]


def test_xxh32_reference_vectors():
    # published XXH32 test values (xxHash's sanity checks / python-xxhash docs)
    assert codecs._xxh32_short(b"") == 0x02CC5D05
    assert codecs._xxh32_short(b"a") == 0x550D7456
    assert codecs._xxh32_short(b"abc") == 0x32D153FF
    xxhash = pytest.importorskip("xxhash")
    for n in range(16):
        data = bytes(range(n))
        assert codecs._xxh32_short(data) == xxhash.xxh32_intdigest(data)


def kafka_3160_frame(raw: bytes) -> bytes:
    """An LZ4 frame whose HC is computed over magic+descriptor, as Kafka 0.8/0.9 (magic v0) wrote it."""
    frame = bytearray(lz4.frame.compress(raw, store_size=False))
    assert not frame[4] & 0x09  # no content size, no dict id: descriptor is FLG BD
    broken = (codecs._xxh32_short(bytes(frame[0:6])) >> 8) & 0xFF
    assert broken != frame[6], "pick another payload: broken and correct HC coincide"
    frame[6] = broken
    return bytes(frame)


def test_magic_v0_lz4_with_broken_header_checksum():
    raw = json_records(40_000)
    frame = kafka_3160_frame(raw)
    with pytest.raises(RuntimeError):
        lz4.frame.decompress(frame)  # a standard decoder rejects it: the HC really is wrong
    assert bytes(decompress(LZ4, frame, max_output=len(raw), magic=0)) == raw
    with pytest.raises(CorruptBatchError):  # v1/v2 verify the HC like Kafka does
        decompress(LZ4, frame, max_output=len(raw), magic=1)
    if kafka_codec.xxhash is not None:  # kafka-python's own v0 decoder, when xxhash is installed
        assert kafka_codec.lz4_decode_old_kafka(frame) == raw
    # a v0 frame with a correct HC is accepted too (the HC is simply not checked)
    assert bytes(decompress(LZ4, lz4.frame.compress(raw), max_output=len(raw), magic=0)) == raw
    with pytest.raises(DecompressionLimitError):
        decompress(LZ4, frame, max_output=len(raw) - 1, magic=0)


# --- corrupt and truncated streams -----------------------------------------------------------------------------------

def valid_payloads():
    raw = json_records(100_000)
    return raw, {
        GZIP: gzip.compress(raw),
        SNAPPY: kafka_codec.snappy_encode(raw, xerial_compatible=True, xerial_blocksize=32 * 1024),
        LZ4: lz4.frame.compress(raw, store_size=False, content_checksum=True),
        ZSTD: zstandard.ZstdCompressor(write_content_size=False, write_checksum=True).compress(raw),
    }


@pytest.mark.parametrize("codec", [GZIP, SNAPPY, LZ4, ZSTD])
def test_truncated_streams_raise_corrupt(codec):
    raw, payloads = valid_payloads()
    payload = payloads[codec]
    for cut in (0, 3, 10, len(payload) // 2, len(payload) - 1):
        with pytest.raises(CorruptBatchError) as info:
            decompress(codec, memoryview(payload)[:cut], max_output=len(raw))
        assert not isinstance(info.value, DecompressionLimitError)
        assert info.value.position is None


def test_raw_snappy_truncated_raises_corrupt():
    raw = json_records(10_000)
    payload = bytes(cramjam.snappy.compress_raw(raw))
    for cut in (0, 1, len(payload) // 2, len(payload) - 1):
        with pytest.raises(CorruptBatchError):
            decompress(SNAPPY, payload[:cut], max_output=len(raw))


@pytest.mark.parametrize("codec", [GZIP, SNAPPY, LZ4, ZSTD])
def test_corrupted_bytes_raise_corrupt_chained(codec):
    raw, payloads = valid_payloads()
    payload = bytearray(payloads[codec])
    # every codec here carries a checksum of its output (gzip CRC32, snappy-none: see below, lz4/zstd checksums)
    for i in range(len(payload) // 3, len(payload) // 3 + 64):
        payload[i] ^= 0x5A
    if codec == SNAPPY:  # raw snappy has no checksum: corrupt a length so the block no longer decodes
        payload[16:20] = (len(payload)).to_bytes(4, "big")
    with pytest.raises(CorruptBatchError) as info:
        decompress(codec, bytes(payload), max_output=len(raw))
    assert not isinstance(info.value, DecompressionLimitError)


@pytest.mark.parametrize("codec", [GZIP, LZ4, ZSTD])
def test_library_errors_are_chained(codec):
    with pytest.raises(CorruptBatchError) as info:
        decompress(codec, valid_payloads()[1][codec][:-1] if codec == GZIP else b"\x04\x22\x4d\x18\x64\x40\x00"
                   if codec == LZ4 else b"\x28\xb5\x2f\xfd\x00\x58\x11\x00\x00" + b"\xff" * 20, max_output=MiB)
    if codec == LZ4:
        assert isinstance(info.value.__cause__, RuntimeError)


def test_gzip_corrupt_deflate_chains_library_error():
    payload = bytearray(gzip.compress(json_records(10_000)))
    payload[10] = 0xFF  # invalid deflate block type (BTYPE=11)
    with pytest.raises(CorruptBatchError) as info:
        decompress(GZIP, bytes(payload), max_output=MiB)
    assert info.value.__cause__ is not None


# --- decompression bombs ---------------------------------------------------------------------------------------------

def gzip_bomb(repeats: int) -> bytes:
    """A valid gzip member of ``repeats`` MiB of zeros, built from one full-flushed deflate segment (~1 KiB/MiB)."""
    zeros = bytes(MiB)
    deflater = zlib.compressobj(9, zlib.DEFLATED, -15)
    segment = deflater.compress(zeros) + deflater.flush(zlib.Z_FULL_FLUSH)
    crc = 0
    for _ in range(repeats):
        crc = zlib.crc32(zeros, crc)
    return (b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff" + segment * repeats + deflater.flush()
            + struct.pack("<II", crc, (repeats * MiB) & 0xFFFFFFFF))


def lz4_bomb(repeats: int) -> bytes:
    """A valid LZ4 frame (4 MiB independent blocks, no checksums) of ``repeats`` x 4 MiB of zeros."""
    # (a source bigger than one block keeps the 4 MiB block size: LZ4F shrinks it for small sources)
    header = lz4.frame.compress(bytes(4 * MiB + 1), block_size=lz4.frame.BLOCKSIZE_MAX4MB, block_linked=False,
                                content_checksum=False, store_size=False)[:7]
    assert header[5] == 0x70
    block = lz4.block.compress(bytes(4 * MiB), store_size=False)
    return header + (struct.pack("<I", len(block)) + block) * repeats + b"\x00\x00\x00\x00"


def zstd_bomb(total: int, with_size: bool) -> bytes:
    compressor = zstandard.ZstdCompressor(write_content_size=with_size)
    stream = compressor.compressobj(size=total if with_size else -1)
    parts = [stream.compress(bytes(MiB)) for _ in range(total // MiB)]
    parts.append(stream.flush())
    return b"".join(parts)


def test_bomb_builders_are_valid_streams():
    assert zlib.decompress(gzip_bomb(3), 31) == bytes(3 * MiB)
    assert lz4.frame.decompress(lz4_bomb(2)) == bytes(8 * MiB)
    assert kafka_codec.zstd_decode(zstd_bomb(3 * MiB, False)) == bytes(3 * MiB)


def bombs():
    snappy_block = bytes(cramjam.snappy.compress_raw(bytes(MiB)))
    xerial = b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1) + (struct.pack(">i", len(snappy_block)) + snappy_block) * 1024
    return {
        "gzip": (GZIP, gzip_bomb(1024)),
        "snappy-xerial": (SNAPPY, xerial),
        "snappy-raw-declared": (SNAPPY, b"\x80\x80\x80\x80\x04" + b"\x00" * 1000),  # varint 2**30
        "lz4": (LZ4, lz4_bomb(256)),
        "zstd-streamed": (ZSTD, zstd_bomb(GiB, False)),
        "zstd-with-size": (ZSTD, zstd_bomb(GiB, True)),
    }


@pytest.fixture(scope="module")
def bomb_payloads():
    return bombs()


@pytest.mark.parametrize("name", ["gzip", "snappy-xerial", "snappy-raw-declared", "lz4", "zstd-streamed",
                                  "zstd-with-size"])
def test_decompression_bombs_stop_early_with_small_memory(bomb_payloads, name):
    codec, payload = bomb_payloads[name]
    assert len(payload) < 60 * MiB  # each expands to 1 GiB
    limit = 4 * MiB
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    tracemalloc.start()
    started = time.perf_counter()
    try:
        with pytest.raises(DecompressionLimitError, match="raise the option maxDecompressedBatchBytes"):
            decompress(codec, memoryview(payload), max_output=limit)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    elapsed = time.perf_counter() - started
    rss_growth = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - rss_before
    assert peak < 4 * limit, f"{name}: traced peak {peak}"
    assert rss_growth < 128 * MiB, f"{name}: max RSS grew by {rss_growth}"
    assert elapsed < 2.0, f"{name}: took {elapsed:.2f}s"


def test_limit_is_exact_at_the_boundary():
    raw, payloads = valid_payloads()
    for codec, payload in payloads.items():
        assert bytes(decompress(codec, payload, max_output=len(raw))) == raw
        with pytest.raises(DecompressionLimitError):
            decompress(codec, payload, max_output=len(raw) - 1)
        with pytest.raises(DecompressionLimitError):
            decompress(codec, payload, max_output=0)


# --- fuzzing ---------------------------------------------------------------------------------------------------------

FUZZ = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FUZZ
@given(codec=st.sampled_from([GZIP, SNAPPY, LZ4, ZSTD]), magic=st.sampled_from([0, 1, 2]),
       data=st.binary(max_size=300), prefix=st.sampled_from([b"", b"\x1f\x8b\x08", b"\x82SNAPPY\x00\x00\x00\x00\x01"
                                                             b"\x00\x00\x00\x01", b"\x04\x22\x4d\x18",
                                                             b"\x28\xb5\x2f\xfd"]))
def test_arbitrary_bytes_only_raise_kafkaseg_errors(codec, magic, data, prefix):
    try:
        out = decompress(codec, memoryview(prefix + data), max_output=64 * 1024, magic=magic)
    except KafkaSegError:
        return
    assert len(out) <= 64 * 1024


_FUZZ_RAW = json_records(3000)
_FUZZ_VALID = {
    GZIP: gzip.compress(_FUZZ_RAW),
    SNAPPY: kafka_codec.snappy_encode(_FUZZ_RAW, xerial_compatible=True, xerial_blocksize=1024),
    LZ4: lz4.frame.compress(_FUZZ_RAW, store_size=False),
    ZSTD: zstandard.ZstdCompressor(write_content_size=False).compress(_FUZZ_RAW),
}


@FUZZ
@given(codec=st.sampled_from([GZIP, SNAPPY, LZ4, ZSTD]), magic=st.sampled_from([0, 2]),
       edits=st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 255)), min_size=1, max_size=4),
       cut=st.integers(0, 10_000), limit=st.integers(0, 5000))
def test_mutated_valid_payloads_only_raise_kafkaseg_errors(codec, magic, edits, cut, limit):
    payload = bytearray(_FUZZ_VALID[codec])
    for index, value in edits:
        payload[index % len(payload)] = value
    if cut % 3 == 0:  # a third of the examples are also truncated
        del payload[len(payload) - cut % len(payload):]
    try:
        out = decompress(codec, memoryview(bytes(payload)), max_output=limit, magic=magic)
    except KafkaSegError:
        return
    assert len(out) <= limit


def test_gzip_without_isal_uses_zlib_with_the_same_behaviour(monkeypatch):
    monkeypatch.setattr(codecs, "_gzip_lib", zlib)
    monkeypatch.setattr(codecs, "_GZIP_ERRORS", (zlib.error,))
    raw = json_records(50_000)
    payload = gzip.compress(raw[:20_000]) + gzip.compress(raw[20_000:])
    assert bytes(decompress(GZIP, payload, max_output=len(raw))) == raw
    with pytest.raises(DecompressionLimitError):
        decompress(GZIP, payload, max_output=len(raw) - 1)
    with pytest.raises(CorruptBatchError):
        decompress(GZIP, payload[:-3], max_output=len(raw))
    with pytest.raises(DecompressionLimitError):
        decompress(GZIP, gzip_bomb(64), max_output=MiB)


def test_lz4_output_bound_walks_kafka_frames():
    """The fast path's proof that a frame fits the budget: block headers, checksums and trailing bytes."""
    import lz4.frame

    from kafkaseg.codecs import _lz4_output_bound

    payload = b"kafkaseg " * 20_000  # 180 kB: three 64 KiB blocks
    for kwargs in ({}, {"block_checksum": True}, {"content_checksum": True}, {"store_size": True}):
        frame = lz4.frame.compress(payload, block_size=lz4.frame.BLOCKSIZE_MAX64KB, **kwargs)
        end, bound = _lz4_output_bound(memoryview(frame + b"trailing"))
        assert end == len(frame)
        assert len(payload) <= bound <= 3 * 64 * 1024
        assert decompress(3, frame + b"trailing", max_output=len(payload)) == payload
    raw = lz4.frame.compress(os.urandom(1000), block_size=lz4.frame.BLOCKSIZE_MAX64KB)
    assert _lz4_output_bound(memoryview(raw))[1] in (1000, 64 * 1024)  # stored block: exactly its size
    # not a frame it understands (bad magic, cut in a block header): no bound, the bounded decoder decides
    assert _lz4_output_bound(memoryview(b"\x00" * 16)) is None
    assert _lz4_output_bound(memoryview(frame[:9])) is None
    # a budget below the walked bound falls back to the bounded decoder, which still enforces the limit
    with pytest.raises(DecompressionLimitError):
        decompress(3, lz4.frame.compress(payload), max_output=len(payload) - 1)
