"""Decompression of Kafka batch payloads, with Kafka's framings and a hard bound on output size.

The decoder calls :func:`decompress` once per compressed batch (v2: the bytes after the 61-byte header; v0/v1: the
value of a compressed wrapper entry). The hot path is one dict lookup and one call into the codec's function.

Bounded output: no codec ever allocates much more than ``max_output`` bytes, whatever the stream claims. Each
codec either learns the output size before allocating (snappy's varint preamble, zstd's frame content size,
gzip's bounded ``max_length`` loop) or decompresses into buffers capped at the remaining budget; a stream that
would produce more than ``max_output`` bytes raises :class:`DecompressionLimitError` without producing it.

Framings (``clients/src/main/java/org/apache/kafka/common/compress/*.java``, ``CompressionType.java``)::

    codec 0 none     the records themselves
    codec 1 gzip     GzipCompression: java.util.zip.GZIPInputStream -> one or more gzip members (RFC 1952).
                     After a member, bytes that do not start another gzip header are ignored (as GZIPInputStream
                     does); a member that starts but is malformed is an error.
    codec 2 snappy   SnappyCompression: xerial snappy-java SnappyInputStream ->
                       magic    8 bytes  0x82 'S' 'N' 'A' 'P' 'P' 'Y' 0x00
                       version  int32    (1; not checked: some writers stored it little-endian)
                       compat   int32    (1; not checked)
                       then repeated  [blockLength int32 big-endian][raw snappy block of blockLength bytes]
                     a raw snappy block starts with its uncompressed length as a little-endian base-128 varint.
                     Payloads without the magic are one raw (unframed) snappy block (some non-Java clients).
    codec 3 lz4      Lz4Compression: Lz4BlockInputStream -> one LZ4 frame (lz4_Frame_format.md v1.5.1):
                       magic 0x184D2204 (LE) | FLG | BD | [contentSize u64] | [dictId u32] | HC
                       | blocks: [size u32 LE, high bit = stored uncompressed, 0 = end mark][data][blockChecksum?]
                       | [contentChecksum u32]
                     HC = (xxh32(FLG..dictId, seed 0) >> 8) & 0xFF. Magic v0 writers (KAFKA-3160) hashed the
                     4 magic bytes too, so for magic 0 the HC is not verified (Kafka passes
                     ignoreFlagDescriptorChecksum); here it is rewritten to the correct value before decoding.
    codec 4 zstd     ZstdCompression: zstd-jni streaming -> one or more zstd frames (RFC 8878), usually without a
                     content size; skippable frames allowed. Magic v2 only (legacy formats never had zstd).
    codecs 5-7       undefined -> UnsupportedCodecError

Library choice (measured by ``benchmarks/bench_codecs.py`` on 16 KiB and 1 MiB JSON-like batches): gzip through
python-isal's ``isal_zlib`` when installed (about 2-3x zlib), else the standard ``zlib``; snappy through cramjam's
raw block API; lz4 through python-lz4's ``LZ4FrameDecompressor`` (bounded by ``max_length``); zstd through
python-zstandard with a reused per-thread ``ZstdDecompressor`` (cramjam's zstd is 2.5x slower on small batches
because it builds a decoder context per call).

The compiled kernel has fast paths for the frames Kafka's producers write (see ``_kernel.pyx``): it walks the
framing in C and decompresses into one buffer it reuses from batch to batch, with cramjam's ``*_into`` calls
(snappy blocks; lz4 blocks of a FLG 0x60 frame through the block API; zstd frames over 256 KiB), or
python-zstandard for small zstd frames. Allocating a fresh output per batch, as every library's plain call does,
costs more than decompressing a 16 KiB batch with lz4. Anything else, and every failure, comes here.

Errors carry ``position=None``: the caller knows where the payload sits in its file and re-raises with
:meth:`~kafkaseg.errors.CorruptDataError.located`.
"""

from __future__ import annotations

import struct
import threading
import zlib

from kafkaseg.errors import CorruptBatchError, DecompressionLimitError, UnsupportedCodecError
from kafkaseg.wire.batch import CODEC_NAMES

__all__ = ["CODECS", "decompress", "available_codecs"]

#: Codec id (attribute bits 0-2) -> Kafka's name for it.
CODECS: dict[int, str] = dict(CODEC_NAMES)

_LIBRARIES: dict[str, str | None] = {"none": "builtin"}

# gzip ---------------------------------------------------------------------------------------------------------------
try:  # python-isal: same API as zlib, 2-3x faster inflate
    from isal import isal_zlib as _gzip_lib

    _GZIP_ERRORS: tuple[type[BaseException], ...] = (zlib.error, _gzip_lib.error)
    _LIBRARIES["gzip"] = f"isal {__import__('isal').__version__}"
except ImportError:  # pragma: no cover - depends on the environment
    _gzip_lib = zlib
    _GZIP_ERRORS = (zlib.error,)
    _LIBRARIES["gzip"] = f"zlib {zlib.ZLIB_RUNTIME_VERSION}"

_GZIP_WBITS = 31  # 16 + 15: gzip header and trailer, 32 KiB window
_GZIP_MEMBER_START = b"\x1f\x8b\x08"  # ID1 ID2 CM=deflate

# snappy -------------------------------------------------------------------------------------------------------------
try:
    import cramjam as _cramjam

    _snappy_raw_len = _cramjam.snappy.decompress_raw_len
    _snappy_raw_into = _cramjam.snappy.decompress_raw_into
    _CRAMJAM_ERRORS: tuple[type[BaseException], ...] = (_cramjam.DecompressionError, ValueError, TypeError)
    _LIBRARIES["snappy"] = f"cramjam {_cramjam.__version__}"
except ImportError:  # pragma: no cover
    _cramjam = None
    _LIBRARIES["snappy"] = None

_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER_SIZE = 16  # magic + version int32 + compatible version int32

# lz4 ----------------------------------------------------------------------------------------------------------------
try:
    import lz4 as _lz4
    import lz4.frame as _lz4_frame

    _LZ4FrameDecompressor = _lz4_frame.LZ4FrameDecompressor
    _LIBRARIES["lz4"] = f"lz4 {_lz4.__version__} (liblz4 {_lz4.library_version_string()})"
except ImportError:  # pragma: no cover
    _lz4_frame = None
    _LIBRARIES["lz4"] = None

_LZ4_MAGIC = b"\x04\x22\x4d\x18"  # 0x184D2204 little-endian
_LZ4_MIN_FIRST_CHUNK = 64 * 1024
_LZ4_GUESSED_RATIO = 8  # first output buffer: 8x the compressed size (JSON-like records compress 3-6x with lz4)

# zstd ---------------------------------------------------------------------------------------------------------------
try:
    import zstandard as _zstandard

    _ZSTD_ERRORS: tuple[type[BaseException], ...] = (_zstandard.ZstdError, ValueError, MemoryError)
    _LIBRARIES["zstd"] = f"zstandard {_zstandard.__version__} (libzstd {'.'.join(map(str, _zstandard.ZSTD_VERSION))})"
except ImportError:  # pragma: no cover
    _zstandard = None
    _LIBRARIES["zstd"] = None

_ZSTD_MAGIC = 0xFD2FB528
_ZSTD_SKIPPABLE_MASK = 0xFFFFFFF0
_ZSTD_SKIPPABLE_MAGIC = 0x184D2A50
_ZSTD_BLOCK_SIZE_MAX = 128 * 1024
_ZSTD_DICT_ID_SIZES = (0, 1, 2, 4)
_zstd_local = threading.local()  # ZstdDecompressor is not thread-safe: one per thread, reused across calls


# Entry points for the compiled kernel's fast paths: they decompress into a buffer the kernel reuses from batch
# to batch (allocating a fresh output per batch costs more than decompressing a 16 KiB batch: see BENCHMARKS.md).
# The kernel walks the framing itself (the same walks as below), sizes the buffer from it, and hands anything
# unusual, and every failure, to the functions below, which own the error messages. None when not installed.
snappy_raw_into = _cramjam.snappy.decompress_raw_into if _cramjam is not None else None
lz4_block_into = _cramjam.lz4.decompress_block_into if _cramjam is not None else None  # LZ4_decompress_safe
zstd_frame_into = _cramjam.zstd.decompress_into if _cramjam is not None else None


def available_codecs() -> dict[str, str | None]:
    """Codec name -> the library (and version) that decodes it here, or None when that library is not installed."""
    return dict(_LIBRARIES)


def decompress(codec: int, data, *, max_output: int, magic: int = 2):
    """Decompress one batch payload written with Kafka codec ``codec`` (0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd).

    ``data`` is a bytes-like object (typically a memoryview slice of a segment buffer). Returns a bytes-like
    object (``bytes``, ``bytearray`` or, for codec 0, ``data`` itself) of at most ``max_output`` bytes.
    ``magic`` is the batch's magic: it selects the lz4 header-checksum rule (KAFKA-3160) and rejects zstd below v2.

    Raises :class:`UnsupportedCodecError` for codec ids 5-7, zstd under magic 0/1 or a codec whose library is
    missing; :class:`DecompressionLimitError` when the output would exceed ``max_output`` (detected before that
    much is allocated); :class:`CorruptBatchError` (chained from the library's error) for a corrupt or truncated
    stream. Errors have ``position=None``: the caller locates them.
    """
    return decoder_for(codec)(data, max_output, magic)


def decoder_for(codec: int):
    """The function behind :func:`decompress` for ``codec``: ``decoder(data, max_output, magic)``, for callers
    that decompress many batches (the decoder kernel looks each codec up once per buffer, not once per batch).
    Raises :class:`UnsupportedCodecError` for an unknown codec id."""
    try:
        return _DECODERS[codec]
    except (KeyError, TypeError):
        raise UnsupportedCodecError(f"unknown compression codec id {codec!r} (Kafka defines 0-4)") from None


# --- helpers ---------------------------------------------------------------------------------------------------------

def _limit(codec: str, max_output: int, what: str = "") -> DecompressionLimitError:
    return DecompressionLimitError(
        f"{codec} payload decompresses to more than the {max_output}-byte limit{what} "
        f"(a decompression bomb, or raise the option maxDecompressedBatchBytes)")


def _none(data, max_output: int, magic: int):
    return data


# --- gzip ------------------------------------------------------------------------------------------------------------

def _gzip(data, max_output: int, magic: int):
    inflater = _gzip_lib.decompressobj(_GZIP_WBITS)
    try:
        out = inflater.decompress(data, max_output + 1)
    except _GZIP_ERRORS as exc:
        raise CorruptBatchError(f"corrupt gzip payload: {exc}") from exc
    if len(out) > max_output:
        raise _limit("gzip", max_output)
    if not inflater.eof:
        raise CorruptBatchError(f"truncated gzip payload ({len(data)} bytes end inside the deflate stream)")
    tail = inflater.unused_data
    if not tail.startswith(_GZIP_MEMBER_START):
        return out  # one member (the common case); trailing non-gzip bytes are ignored like GZIPInputStream does
    return _gzip_members(out, tail, max_output)


def _gzip_members(first: bytes, tail: bytes, max_output: int) -> bytes:
    """Concatenated gzip members (RFC 1952 section 2.2), each decoded within what is left of the budget."""
    parts = [first]
    total = len(first)
    while tail.startswith(_GZIP_MEMBER_START):
        inflater = _gzip_lib.decompressobj(_GZIP_WBITS)
        try:
            piece = inflater.decompress(tail, max_output - total + 1)
        except _GZIP_ERRORS as exc:
            raise CorruptBatchError(f"corrupt gzip payload (member {len(parts) + 1}): {exc}") from exc
        total += len(piece)
        if total > max_output:
            raise _limit("gzip", max_output)
        if not inflater.eof:
            raise CorruptBatchError(f"truncated gzip payload (member {len(parts) + 1} is incomplete)")
        parts.append(piece)
        tail = inflater.unused_data
    return b"".join(parts)


# --- snappy ----------------------------------------------------------------------------------------------------------

def _snappy(data, max_output: int, magic: int):
    view = memoryview(data)
    if view[:8] == _XERIAL_MAGIC:
        return _snappy_xerial(view, max_output)
    return _snappy_block(view, max_output, "raw snappy payload")


def _snappy_block(block, max_output: int, what: str) -> bytearray:
    """One raw snappy block; its varint length is checked against ``max_output`` before anything is allocated."""
    try:
        size = _snappy_raw_len(block)
    except _CRAMJAM_ERRORS as exc:
        raise CorruptBatchError(f"corrupt {what}: {exc}") from exc
    if size > max_output:
        raise _limit("snappy", max_output, f" ({what} declares {size} bytes)")
    out = bytearray(size)
    try:
        written = _snappy_raw_into(block, out)
    except _CRAMJAM_ERRORS as exc:
        raise CorruptBatchError(f"corrupt {what}: {exc}") from exc
    if written != size:
        raise CorruptBatchError(f"corrupt {what}: declares {size} bytes but decodes to {written}")
    return out


def _snappy_xerial(view: memoryview, max_output: int) -> bytearray:
    end = len(view)
    if end < _XERIAL_HEADER_SIZE:
        raise CorruptBatchError(f"truncated xerial snappy header ({end} of {_XERIAL_HEADER_SIZE} bytes)")
    # First pass: block boundaries and declared sizes, so the budget is checked before any output exists.
    blocks = []
    total = 0
    position = _XERIAL_HEADER_SIZE
    while position < end:
        if end - position < 4:
            raise CorruptBatchError(f"truncated xerial snappy block length at payload byte {position}")
        length = int.from_bytes(view[position:position + 4], "big", signed=True)
        start = position + 4
        if length < 0 or start + length > end:
            raise CorruptBatchError(
                f"xerial snappy block at payload byte {position} declares {length} bytes, {end - start} remain")
        block = view[start:start + length]
        try:
            size = _snappy_raw_len(block)
        except _CRAMJAM_ERRORS as exc:
            raise CorruptBatchError(f"corrupt xerial snappy block at payload byte {position}: {exc}") from exc
        total += size
        if total > max_output:
            raise _limit("snappy", max_output, f" (xerial blocks declare at least {total} bytes)")
        blocks.append((block, size, position))
        position = start + length
    out = bytearray(total)
    target = memoryview(out)
    offset = 0
    for block, size, block_position in blocks:
        try:
            written = _snappy_raw_into(block, target[offset:offset + size])
        except _CRAMJAM_ERRORS as exc:
            raise CorruptBatchError(f"corrupt xerial snappy block at payload byte {block_position}: {exc}") from exc
        if written != size:
            raise CorruptBatchError(f"xerial snappy block at payload byte {block_position} declares {size} bytes "
                                    f"but decodes to {written}")
        offset += size
    return out


# --- lz4 -------------------------------------------------------------------------------------------------------------

def _lz4_output_bound(view: memoryview) -> tuple[int, int] | None:
    """(end of the frame, most bytes it can decode to) from a walk over the frame's block headers, or None when
    the frame is not the plain single frame Kafka writes (the bounded decoder below then sorts it out).

    LZ4 frame (lz4_Frame_format.md): magic 0x184D2204 LE | FLG | BD | [content size u64 if FLG.3] | [dict id u32
    if FLG.0] | HC | blocks: [u32 LE size, high bit = stored uncompressed; 0 = end mark] data [u32 checksum if
    FLG.4] ... | [u32 content checksum if FLG.2]. A compressed block decodes to at most BD's block maximum.
    Runs once per compressed batch, so it sticks to struct calls (about 0.3 us for a one-block frame)."""
    n = len(view)
    if n < 7:
        return None
    magic, flg, bd = _LZ4_PREFIX.unpack_from(view, 0)
    block_max = _LZ4_BLOCK_MAX.get((bd >> 4) & 0x07)
    if magic != _LZ4_MAGIC_U32 or block_max is None or flg >> 6 != 1:
        return None
    position = 6 + (8 if flg & 0x08 else 0) + (4 if flg & 0x01 else 0) + 1
    block_checksum = 4 if flg & 0x10 else 0
    bound = 0
    unpack = _U32LE.unpack_from
    while position + 4 <= n:
        (size,) = unpack(view, position)
        position += 4
        if size == 0:
            position += 4 if flg & 0x04 else 0
            return (position, bound) if position <= n else None
        if size & 0x80000000:
            size &= 0x7FFFFFFF
            bound += size
        else:
            bound += block_max
        position += size + block_checksum
    return None


_LZ4_PREFIX = struct.Struct("<IBB")
_U32LE = struct.Struct("<I")
_LZ4_MAGIC_U32 = 0x184D2204
_LZ4_BLOCK_MAX = {4: 64 << 10, 5: 256 << 10, 6: 1 << 20, 7: 4 << 20}


def _lz4(data, max_output: int, magic: int):
    if magic == 0:
        data = _lz4_fix_header_checksum(data)
    view = memoryview(data)
    walked = _lz4_output_bound(view)
    if walked is not None and walked[1] <= max_output:
        # The block headers prove the output fits the budget: one unbounded call, no growing buffers
        # (python-lz4's bounded decompressor allocates the bound and trims, about 30% slower on 16 KiB batches).
        try:
            return _lz4_frame.decompress(view[:walked[0]])
        except RuntimeError as exc:
            raise CorruptBatchError(f"corrupt lz4 frame: {exc}") from exc
    decoder = _LZ4FrameDecompressor()
    chunk = min(max_output + 1, max(_LZ4_MIN_FIRST_CHUNK, len(data) * _LZ4_GUESSED_RATIO))
    try:
        out = decoder.decompress(data, max_length=chunk)
    except RuntimeError as exc:  # python-lz4 raises RuntimeError for every LZ4F error
        raise CorruptBatchError(f"corrupt lz4 frame: {exc}") from exc
    if len(out) > max_output:
        raise _limit("lz4", max_output)
    if decoder.eof:
        return out  # trailing bytes after the end mark are ignored, as Lz4BlockInputStream does
    parts = [out]
    total = len(out)
    while not decoder.eof:
        if decoder.needs_input:
            raise CorruptBatchError(f"truncated lz4 frame ({len(data)} bytes end before the end mark)")
        chunk = min(max_output - total + 1, chunk * 4)
        try:
            piece = decoder.decompress(b"", max_length=chunk)
        except RuntimeError as exc:
            raise CorruptBatchError(f"corrupt lz4 frame: {exc}") from exc
        total += len(piece)
        if total > max_output:
            raise _limit("lz4", max_output)
        parts.append(piece)
    return b"".join(parts)


def _lz4_fix_header_checksum(data) -> bytearray:
    """A copy of a magic-v0 LZ4 frame with its HC byte recomputed the standard way (KAFKA-3160)."""
    view = memoryview(data)
    if len(view) < 7 or view[:4] != _LZ4_MAGIC:
        raise CorruptBatchError("corrupt lz4 frame: missing LZ4 frame magic 0x184D2204")
    flg = view[4]
    descriptor_end = 6 + (8 if flg & 0x08 else 0) + (4 if flg & 0x01 else 0)  # FLG BD [contentSize] [dictId]
    if len(view) <= descriptor_end:
        raise CorruptBatchError("truncated lz4 frame descriptor")
    fixed = bytearray(view)
    fixed[descriptor_end] = (_xxh32_short(view[4:descriptor_end]) >> 8) & 0xFF
    return fixed


_XXH_PRIME1, _XXH_PRIME2, _XXH_PRIME3, _XXH_PRIME4, _XXH_PRIME5 = (
    2654435761, 2246822519, 3266489917, 668265263, 374761393)
_U32 = 0xFFFFFFFF


def _xxh32_short(data, seed: int = 0) -> int:
    """XXH32 of fewer than 16 bytes (the xxHash spec's short-input path); enough for an LZ4 frame descriptor."""
    data = bytes(data)
    length = len(data)
    if length >= 16:
        raise ValueError("_xxh32_short handles inputs shorter than 16 bytes")
    acc = (seed + _XXH_PRIME5 + length) & _U32
    i = 0
    while i + 4 <= length:
        acc = (acc + int.from_bytes(data[i:i + 4], "little") * _XXH_PRIME3) & _U32
        acc = (((acc << 17) | (acc >> 15)) & _U32) * _XXH_PRIME4 & _U32
        i += 4
    while i < length:
        acc = (acc + data[i] * _XXH_PRIME5) & _U32
        acc = (((acc << 11) | (acc >> 21)) & _U32) * _XXH_PRIME1 & _U32
        i += 1
    acc ^= acc >> 15
    acc = (acc * _XXH_PRIME2) & _U32
    acc ^= acc >> 13
    acc = (acc * _XXH_PRIME3) & _U32
    acc ^= acc >> 16
    return acc


# --- zstd ------------------------------------------------------------------------------------------------------------

def zstd_decompressor():
    """This thread's reusable ``zstandard.ZstdDecompressor`` (the objects are not thread-safe)."""
    try:
        return _zstd_local.dctx
    except AttributeError:
        dctx = _zstd_local.dctx = _zstandard.ZstdDecompressor()
        return dctx


def _zstd(data, max_output: int, magic: int):
    if magic < 2:
        raise UnsupportedCodecError(f"zstd (codec 4) in a magic v{magic} message: legacy formats never had zstd")
    view = memoryview(data)
    dctx = zstd_decompressor()
    parts = []
    total = 0
    for start, end, content_size, bound in _zstd_frames(view):
        remaining = max_output - total
        if content_size > remaining:
            raise _limit("zstd", max_output, f" (a frame declares {content_size} bytes)")
        frame = view[start:end]
        try:
            if bound <= remaining:  # the frame cannot exceed the budget: one-shot into a buffer of `bound` bytes
                piece = dctx.decompress(frame, max_output_size=max(bound, 1))
            else:  # it might: stream at most remaining + 1 bytes
                piece = _zstd_stream(dctx, frame, remaining + 1)
        except _ZSTD_ERRORS as exc:
            raise CorruptBatchError(f"corrupt zstd frame at payload byte {start}: {exc}") from exc
        total += len(piece)
        if total > max_output:
            raise _limit("zstd", max_output)
        parts.append(piece)
    if len(parts) == 1:
        return parts[0]
    return b"".join(parts)


def _zstd_stream(dctx, frame, limit: int) -> bytes:
    reader = dctx.stream_reader(frame, read_across_frames=False)
    pieces = []
    got = 0
    while got < limit:
        piece = reader.read(limit - got)
        if not piece:
            break
        pieces.append(piece)
        got += len(piece)
    return b"".join(pieces)


def _zstd_frames(view: memoryview):
    """Walk zstd frames (RFC 8878 section 3.1) without decoding them.

    Yields ``(start, end, content_size, bound)`` per data frame: ``content_size`` is the declared
    Frame_Content_Size or -1, ``bound`` the most the frame can decode to (its content size, else the sum of its
    raw/RLE block sizes plus Block_Maximum_Size per compressed block). Skippable frames are stepped over.
    Raises CorruptBatchError for a bad magic, reserved bits, reserved block types or a truncated frame::

        Magic_Number 4 LE | Frame_Header_Descriptor 1 | [Window_Descriptor 1] | [Dictionary_ID 0-4]
        | [Frame_Content_Size 0-8] | blocks: Block_Header 3 LE (bit 0 Last_Block, bits 1-2 Block_Type
        0 raw 1 RLE 2 compressed 3 reserved, bits 3-23 Block_Size) + content | [Content_Checksum 4]
    """
    end = len(view)
    if end == 0:
        raise CorruptBatchError("empty zstd payload")
    position = 0
    while position < end:
        if end - position < 4:
            raise CorruptBatchError(f"truncated zstd frame magic at payload byte {position}")
        frame_magic = int.from_bytes(view[position:position + 4], "little")
        if frame_magic & _ZSTD_SKIPPABLE_MASK == _ZSTD_SKIPPABLE_MAGIC:
            if end - position < 8:
                raise CorruptBatchError(f"truncated zstd skippable frame at payload byte {position}")
            position += 8 + int.from_bytes(view[position + 4:position + 8], "little")
            if position > end:
                raise CorruptBatchError("truncated zstd skippable frame")
            continue
        if frame_magic != _ZSTD_MAGIC:
            raise CorruptBatchError(f"not a zstd frame at payload byte {position} (magic 0x{frame_magic:08x})")
        if end - position < 5:
            raise CorruptBatchError(f"truncated zstd frame header at payload byte {position}")
        descriptor = view[position + 4]
        if descriptor & 0x08:
            raise CorruptBatchError(f"zstd frame at payload byte {position} sets the reserved descriptor bit")
        single_segment = descriptor & 0x20
        fcs_flag = descriptor >> 6
        fcs_size = (1 if single_segment else 0) if fcs_flag == 0 else (2, 4, 8)[fcs_flag - 1]
        header_end = position + 5 + (0 if single_segment else 1) + _ZSTD_DICT_ID_SIZES[descriptor & 0x03] + fcs_size
        if header_end > end:
            raise CorruptBatchError(f"truncated zstd frame header at payload byte {position}")
        content_size = -1
        if fcs_size:
            content_size = int.from_bytes(view[header_end - fcs_size:header_end], "little")
            if fcs_size == 2:
                content_size += 256
        if single_segment:
            window = content_size
        else:
            window_descriptor = view[position + 5]
            window_base = 1 << (10 + (window_descriptor >> 3))
            window = window_base + (window_base >> 3) * (window_descriptor & 0x07)
        block_max = min(window, _ZSTD_BLOCK_SIZE_MAX)
        bound = 0
        cursor = header_end
        while True:
            if end - cursor < 3:
                raise CorruptBatchError(f"truncated zstd block header at payload byte {cursor}")
            block_header = int.from_bytes(view[cursor:cursor + 3], "little")
            block_type = (block_header >> 1) & 0x03
            block_size = block_header >> 3
            if block_type == 0:  # raw
                cursor += 3 + block_size
                bound += block_size
            elif block_type == 1:  # RLE: one byte repeated block_size times
                cursor += 4
                bound += block_size
            elif block_type == 2:  # compressed
                cursor += 3 + block_size
                bound += block_max
            else:
                raise CorruptBatchError(f"zstd block at payload byte {cursor} has the reserved block type 3")
            if cursor > end:
                raise CorruptBatchError(f"truncated zstd block at payload byte {cursor - block_size - 3}")
            if block_header & 0x01:
                break
        if descriptor & 0x04:
            cursor += 4
            if cursor > end:
                raise CorruptBatchError("truncated zstd content checksum")
        yield position, cursor, content_size, (content_size if content_size >= 0 else bound)
        position = cursor


def _missing(name: str):
    def decoder(data, max_output: int, magic: int):
        raise UnsupportedCodecError(f"{name} payloads need a library that is not installed "
                                    f"(see kafkaseg.codecs.available_codecs())")
    return decoder


_DECODERS = {
    0: _none,
    1: _gzip,
    2: _snappy if _cramjam is not None else _missing("snappy"),
    3: _lz4 if _lz4_frame is not None else _missing("lz4"),
    4: _zstd if _zstandard is not None else _missing("zstd"),
}
