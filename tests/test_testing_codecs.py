"""kafkaseg.testing.codecs: Java-compatible compression framing, checked against independent decoders and real
broker bytes from the corpus."""

from __future__ import annotations

import gzip
import random
import struct

import cramjam
import lz4.frame
import pytest
import zstandard
from kafka import codec as kp_codec

from kafkaseg.testing import codecs
from kafkaseg.wire.batch import V2_HEADER_SIZE, iter_headers

RNG = random.Random(7)
TEXT = b"".join(b"record %d: the quick brown fox jumps over the lazy dog\n" % i for i in range(6000))  # ~330 KB
RANDOM = RNG.randbytes(150_000)


@pytest.mark.parametrize("data", [b"", b"x", TEXT, RANDOM], ids=["empty", "one", "text", "random"])
def test_every_codec_round_trips_through_kafka_python(data):
    assert kp_codec.gzip_decode(codecs.compress("gzip", data)) == data
    if data:  # kafka-python takes a header-only xerial stream for raw snappy; Kafka never compresses nothing
        assert kp_codec.snappy_decode(codecs.compress("snappy", data)) == data
    assert kp_codec.lz4_decode(codecs.compress("lz4", data)) == data
    assert kp_codec.zstd_decode(codecs.compress("zstd", data)) == data


def test_gzip_is_a_java_style_gzip_member():
    out = codecs.gzip_java(TEXT)
    assert out[:4] == b"\x1f\x8b\x08\x00"  # magic, deflate, no flags (no file name)
    assert out[4:8] == b"\x00\x00\x00\x00"  # mtime 0
    assert gzip.decompress(out) == TEXT
    crc, size = struct.unpack("<II", out[-8:])
    assert size == len(TEXT)


def test_snappy_uses_xerial_framing_with_32k_blocks():
    out = codecs.snappy_xerial(TEXT)
    assert out[:8] == b"\x82SNAPPY\x00"
    assert struct.unpack(">ii", out[8:16]) == (1, 1)
    pos, blocks = 16, []
    while pos < len(out):
        (length,) = struct.unpack_from(">i", out, pos)
        blocks.append(bytes(cramjam.snappy.decompress_raw(out[pos + 4:pos + 4 + length])))
        pos += 4 + length
    assert pos == len(out)
    assert b"".join(blocks) == TEXT
    assert all(len(b) == 32 * 1024 for b in blocks[:-1]) and 0 < len(blocks[-1]) <= 32 * 1024
    assert len(blocks) == -(-len(TEXT) // (32 * 1024))


def test_xxh32_known_vectors_and_lz4_library_header_checksum():
    assert codecs.xxh32(b"") == 0x02CC5D05
    assert codecs.xxh32(b"abc") == 0x32D153FF
    assert codecs.xxh32(b"Nobody inspects the spammish repetition") == 0xE2293B2F
    reference = lz4.frame.compress(b"abc", block_size=lz4.frame.BLOCKSIZE_MAX64KB, block_linked=False,
                                   content_checksum=False, store_size=False)
    assert codecs.lz4_frame_header() == reference[:7]


@pytest.mark.parametrize("data", [TEXT, RANDOM, TEXT + RANDOM], ids=["text", "random", "mixed"])
def test_lz4_frame_blocks_decode_with_lz4_library(data):
    out = codecs.lz4_kafka(data)
    assert out[:4] == b"\x04\x22\x4d\x18" and out[4] == 0x60 and out[5] == 0x40
    assert out[-4:] == b"\x00\x00\x00\x00"
    assert lz4.frame.decompress(out) == data
    # independent blocks of at most 64 KiB input; incompressible ones stored raw with the high bit set
    pos, stored_raw = 7, 0
    while True:
        (size,) = struct.unpack_from("<I", out, pos)
        if size == 0:
            break
        stored_raw += bool(size & 0x80000000)
        pos += 4 + (size & 0x7FFFFFFF)
    assert pos + 4 == len(out)
    assert (stored_raw > 0) == (data is not TEXT)


def test_lz4_magic_v0_header_checksum_reproduces_kafka_3160():
    out = codecs.lz4_kafka(TEXT, broken_checksum=True)
    assert out[6] == (codecs.xxh32(out[0:6]) >> 8) & 0xFF
    assert out[6] != codecs.lz4_frame_header()[6]
    fixed = out[:6] + codecs.lz4_frame_header()[6:7] + out[7:]
    assert lz4.frame.decompress(fixed) == TEXT


def test_zstd_frame_has_no_content_size():
    out = codecs.zstd_streaming(TEXT)
    params = zstandard.get_frame_parameters(out)
    assert params.content_size == zstandard.CONTENTSIZE_UNKNOWN
    assert not params.has_checksum
    with zstandard.ZstdDecompressor().stream_reader(out) as reader:
        assert reader.read() == TEXT


def test_zstd_rejected_for_legacy_magic():
    from kafkaseg.errors import InvalidOptionError
    with pytest.raises(InvalidOptionError):
        codecs.compress("zstd", b"x", magic=1)
    with pytest.raises(InvalidOptionError):
        codecs.codec_id("brotli")


def _corpus_payloads(corpus_dir, folder, codec):
    found = []
    for log in sorted((corpus_dir / "segments" / folder).rglob("*.log")):
        data = log.read_bytes()
        if not data:
            continue
        try:
            headers = list(iter_headers(data))
        except Exception:
            continue
        for h in headers:
            if h.codec == codec:
                start = h.position + (V2_HEADER_SIZE if h.magic == 2 else 0)
                found.append((h, data[start:h.end]))
    return found


@pytest.mark.corpus
def test_lz4_frame_header_matches_real_java_broker(corpus_dir):
    payloads = _corpus_payloads(corpus_dir, "mscaldas2012__kafka-connect-spooldir", 3)
    assert payloads, "corpus should hold v2 lz4 batches"
    ours = codecs.lz4_frame_header()
    for header, payload in payloads:
        assert header.magic == 2
        assert payload[:7] == ours  # magic, FLG 0x60, BD 0x40, HC
        assert payload[-4:] == b"\x00\x00\x00\x00"
    # and a real payload re-encoded by us decompresses to the same bytes
    _, payload = payloads[0]
    raw = lz4.frame.decompress(payload)
    assert lz4.frame.decompress(codecs.lz4_kafka(raw)) == raw


@pytest.mark.corpus
def test_snappy_header_matches_real_broker_wrappers(corpus_dir):
    # kafkalite's magic-v0 snappy wrappers: the wrapper's value (after key/value lengths) is the xerial stream
    found = 0
    for log in sorted((corpus_dir / "segments" / "asayers__kafkalite").rglob("*.log")):
        data = log.read_bytes()
        for h in iter_headers(data):
            if h.codec != 2:
                continue
            pos = h.position + 18  # offset, size, crc, magic, attributes (v0)
            (key_len,) = struct.unpack_from(">i", data, pos)
            pos += 4 + max(key_len, 0)
            (value_len,) = struct.unpack_from(">i", data, pos)
            value = data[pos + 4:pos + 4 + value_len]
            assert value[:16] == codecs.snappy_xerial(b"")[:16]
            raw = kp_codec.snappy_decode(value)
            assert kp_codec.snappy_decode(codecs.snappy_xerial(raw)) == raw
            found += 1
            if found > 20:
                return
    assert found, "corpus should hold snappy wrappers"
