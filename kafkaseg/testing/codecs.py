"""Compression with the framings a Java Kafka producer/broker writes (writer side, for generated test data).

The compression itself is done by well-kept libraries (zlib, cramjam, lz4, zstandard); this module only adds the
stream framing Kafka's Java classes put around it, so generated batches look like a broker's bytes:

gzip (``clients/.../compress/GzipCompression.java`` -> ``java.util.zip.GZIPOutputStream``)::

    1f 8b | CM 08 (deflate) | FLG 00 | MTIME 00000000 | XFL 00 | OS ff (JDK >= 16 writes 255 "unknown")
    | raw deflate stream | CRC-32 of the input (uint32 LE) | input size mod 2^32 (uint32 LE)

snappy (``SnappyCompression.java`` -> xerial ``org.xerial.snappy.SnappyOutputStream``, default block size 32 KiB)::

    magic 82 'S' 'N' 'A' 'P' 'P' 'Y' 00 | version int32 BE = 1 | minimum compatible version int32 BE = 1
    | repeated: [compressed length int32 BE][raw snappy block of <= 32 KiB input]

lz4 (``Lz4Compression.java`` -> ``Lz4BlockOutputStream`` / ``KafkaLZ4BlockOutputStream``): LZ4 frame format::

    magic 04 22 4d 18 (LE 0x184D2204) | FLG 0x60 (version 01, block independence 1, no block checksum, no content
    size, no content checksum) | BD 0x40 (block max size 64 KiB) | HC = (xxh32(FLG BD) >> 8) & 0xff
    | repeated: [block size uint32 LE, high bit set = stored uncompressed][block] | end mark 00000000

    For magic v0 the broker computes HC over the magic bytes too (KAFKA-3160, ``useBrokenFlagDescriptorChecksum``).

zstd (``ZstdCompression.java`` -> zstd-jni ``ZstdOutputStreamNoFinalizer``, level 3): one standard zstd frame,
written by a streaming compressor, hence without the frame content size and without a checksum.
"""

from __future__ import annotations

import struct
import zlib

import cramjam
import lz4.block
import zstandard

from kafkaseg.errors import InvalidOptionError
from kafkaseg.wire.batch import CODEC_IDS, CODEC_NAMES

__all__ = [
    "compress",
    "codec_id",
    "gzip_java",
    "snappy_xerial",
    "lz4_kafka",
    "zstd_streaming",
    "xxh32",
    "SNAPPY_XERIAL_MAGIC",
    "LZ4_FRAME_MAGIC",
]

# gzip ---------------------------------------------------------------------------------------------------------------
_GZIP_HEADER = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"


def gzip_java(data: bytes, level: int = 6) -> bytes:
    """A gzip member as ``java.util.zip.GZIPOutputStream`` writes it (no name, mtime 0, OS 255)."""
    deflater = zlib.compressobj(level, zlib.DEFLATED, -15, 8, zlib.Z_DEFAULT_STRATEGY)
    body = deflater.compress(data) + deflater.flush()
    trailer = struct.pack("<II", zlib.crc32(data) & 0xFFFFFFFF, len(data) & 0xFFFFFFFF)
    return b"".join((_GZIP_HEADER, body, trailer))


# snappy -------------------------------------------------------------------------------------------------------------
SNAPPY_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_SNAPPY_HEADER = SNAPPY_XERIAL_MAGIC + struct.pack(">ii", 1, 1)
SNAPPY_JAVA_BLOCK_SIZE = 32 * 1024


def snappy_xerial(data: bytes, block_size: int = SNAPPY_JAVA_BLOCK_SIZE) -> bytes:
    """snappy-java's ``SnappyOutputStream`` framing: header, then one length-prefixed raw block per 32 KiB of input."""
    parts = [_SNAPPY_HEADER]
    view = memoryview(data)
    for start in range(0, len(data), block_size):
        block = bytes(cramjam.snappy.compress_raw(view[start:start + block_size]))
        parts.append(struct.pack(">i", len(block)))
        parts.append(block)
    return b"".join(parts)


# lz4 ----------------------------------------------------------------------------------------------------------------
LZ4_FRAME_MAGIC = b"\x04\x22\x4d\x18"
_LZ4_FLG = 0x60  # version 01 << 6 | block independence 1 << 5
_LZ4_BD = 0x40   # block max size id 4 (64 KiB) << 4
LZ4_BLOCK_SIZE = 64 * 1024
_LZ4_UNCOMPRESSED_BIT = 0x80000000

_P1, _P2, _P3, _P4, _P5 = 2654435761, 2246822519, 3266489917, 668265263, 374761393
_M32 = 0xFFFFFFFF


def _rotl32(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M32


def xxh32(data: bytes, seed: int = 0) -> int:
    """XXH32 of ``data`` (pure Python: only used for the few bytes of an LZ4 frame descriptor)."""
    n = len(data)
    i = 0
    if n >= 16:
        v1 = (seed + _P1 + _P2) & _M32
        v2 = (seed + _P2) & _M32
        v3 = seed & _M32
        v4 = (seed - _P1) & _M32
        while i + 16 <= n:
            lanes = struct.unpack_from("<4I", data, i)
            v1 = (_rotl32((v1 + lanes[0] * _P2) & _M32, 13) * _P1) & _M32
            v2 = (_rotl32((v2 + lanes[1] * _P2) & _M32, 13) * _P1) & _M32
            v3 = (_rotl32((v3 + lanes[2] * _P2) & _M32, 13) * _P1) & _M32
            v4 = (_rotl32((v4 + lanes[3] * _P2) & _M32, 13) * _P1) & _M32
            i += 16
        h = (_rotl32(v1, 1) + _rotl32(v2, 7) + _rotl32(v3, 12) + _rotl32(v4, 18)) & _M32
    else:
        h = (seed + _P5) & _M32
    h = (h + n) & _M32
    while i + 4 <= n:
        (lane,) = struct.unpack_from("<I", data, i)
        h = (_rotl32((h + lane * _P3) & _M32, 17) * _P4) & _M32
        i += 4
    while i < n:
        h = (_rotl32((h + data[i] * _P5) & _M32, 11) * _P1) & _M32
        i += 1
    h ^= h >> 15
    h = (h * _P2) & _M32
    h ^= h >> 13
    h = (h * _P3) & _M32
    h ^= h >> 16
    return h


def lz4_frame_header(broken_checksum: bool = False) -> bytes:
    """The 7-byte frame header Kafka writes; ``broken_checksum`` reproduces the magic-v0 HC bug (KAFKA-3160)."""
    descriptor = bytes((_LZ4_FLG, _LZ4_BD))
    hashed = LZ4_FRAME_MAGIC + descriptor if broken_checksum else descriptor
    return LZ4_FRAME_MAGIC + descriptor + bytes(((xxh32(hashed) >> 8) & 0xFF,))


def lz4_kafka(data: bytes, *, broken_checksum: bool = False) -> bytes:
    """An LZ4 frame like Kafka's ``Lz4BlockOutputStream``: independent 64 KiB blocks, no sizes or checksums."""
    parts = [lz4_frame_header(broken_checksum)]
    view = memoryview(data)
    for start in range(0, len(data), LZ4_BLOCK_SIZE):
        chunk = view[start:start + LZ4_BLOCK_SIZE]
        block = lz4.block.compress(chunk, store_size=False)
        if len(block) >= len(chunk):  # incompressible: stored raw, flagged by the high bit
            parts.append(struct.pack("<I", len(chunk) | _LZ4_UNCOMPRESSED_BIT))
            parts.append(bytes(chunk))
        else:
            parts.append(struct.pack("<I", len(block)))
            parts.append(block)
    parts.append(b"\x00\x00\x00\x00")
    return b"".join(parts)


# zstd ---------------------------------------------------------------------------------------------------------------
_ZSTD_LEVEL = 3


def zstd_streaming(data: bytes, level: int = _ZSTD_LEVEL) -> bytes:
    """One zstd frame without content size or checksum, as zstd-jni's streaming output stream writes."""
    return zstandard.ZstdCompressor(level=level, write_content_size=False, write_checksum=False).compress(data)


# dispatch -----------------------------------------------------------------------------------------------------------
def codec_id(codec: int | str) -> int:
    """The attribute value (0-4) of a codec given by name ("none", "gzip", ...) or id."""
    if isinstance(codec, str):
        if codec.lower() not in CODEC_IDS:
            raise InvalidOptionError(f"unknown codec {codec!r}; expected one of {sorted(CODEC_IDS)}")
        return CODEC_IDS[codec.lower()]
    if codec not in CODEC_NAMES:
        raise InvalidOptionError(f"unknown codec id {codec!r}; expected one of {sorted(CODEC_NAMES)}")
    return codec


def compress(codec: int | str, data: bytes, *, magic: int = 2) -> bytes:
    """``data`` compressed and framed as a Java broker writes codec ``codec`` for a batch of ``magic``."""
    cid = codec_id(codec)
    if cid == 0:
        return bytes(data)
    if cid == 1:
        return gzip_java(data)
    if cid == 2:
        return snappy_xerial(data)
    if cid == 3:
        return lz4_kafka(data, broken_checksum=magic == 0)
    if magic < 2:
        raise InvalidOptionError(f"codec zstd needs magic 2, not {magic}")
    return zstd_streaming(data)
