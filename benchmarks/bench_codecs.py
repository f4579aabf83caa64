"""Decompression throughput of kafkaseg.codecs and the candidate libraries it was chosen from.

Usage: python benchmarks/bench_codecs.py [--seconds 0.3] [--max-output-mib 64]

Payloads are JSON-like record values of 16 KiB and 1 MiB (typical Kafka batch sizes), compressed the way Kafka's
Java producer frames them: gzip stream, xerial snappy with 32 KiB blocks (snappy-java's default), LZ4 frame with
independent 64 KiB blocks and no content size, zstd streaming frame without content size (zstd-jni).
Rates are MB/s of decompressed output, single thread. "(unbounded)" candidates ignore the output limit and are shown
as a ceiling only; kafkaseg must stay bounded.
"""

from __future__ import annotations

import argparse
import gzip
import random
import sys
import time
import zlib
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import cramjam  # noqa: E402
import kafka.codec as kafka_codec  # noqa: E402
import lz4.frame  # noqa: E402
import zstandard  # noqa: E402

from kafkaseg.codecs import available_codecs, decompress  # noqa: E402

try:
    from isal import isal_zlib
except ImportError:  # pragma: no cover
    isal_zlib = None


def json_records(size: int, seed: int = 1) -> bytes:
    rng = random.Random(seed)
    out = bytearray()
    i = 0
    while len(out) < size:
        out += (b'{"id":%d,"user":"user%d","event":"%s","ts":%d,"price":%.2f,"tags":["%s","%s"]}' % (
            i, rng.randrange(10_000), rng.choice([b"click", b"view", b"buy"]), 1_700_000_000_000 + 37 * i,
            rng.random() * 100, rng.choice([b"a", b"bb", b"ccc"]), rng.choice([b"x", b"yy", b"zzz"])))
        i += 1
    return bytes(out[:size])


def rate(fn, size: int, seconds: float) -> float:
    fn()
    runs = 0
    start = time.perf_counter()
    while True:
        fn()
        runs += 1
        elapsed = time.perf_counter() - start
        if elapsed >= seconds:
            return size * runs / elapsed / 1e6


def candidates(raw: bytes, limit: int):
    gz = gzip.compress(raw, compresslevel=6)
    xerial = kafka_codec.snappy_encode(raw, xerial_compatible=True, xerial_blocksize=32 * 1024)
    lz = lz4.frame.compress(raw, block_size=lz4.frame.BLOCKSIZE_MAX64KB, block_linked=False, store_size=False)
    zs = zstandard.ZstdCompressor(level=3, write_content_size=False).compress(raw)
    dctx = zstandard.ZstdDecompressor()

    def xerial_blocks(into: bool):
        view = memoryview(xerial)
        pos, blocks = 16, []
        while pos < len(view):
            n = int.from_bytes(view[pos:pos + 4], "big")
            blocks.append(view[pos + 4:pos + 4 + n])
            pos += 4 + n
        if not into:
            return b"".join(bytes(cramjam.snappy.decompress_raw(b)) for b in blocks)
        sizes = [cramjam.snappy.decompress_raw_len(b) for b in blocks]
        out = bytearray(sum(sizes))
        target, offset = memoryview(out), 0
        for b, s in zip(blocks, sizes):
            cramjam.snappy.decompress_raw_into(b, target[offset:offset + s])
            offset += s
        return out

    gzip_rows = [
        ("kafkaseg.codecs", lambda: decompress(1, gz, max_output=limit)),
        ("zlib decompressobj(max_length)", lambda: zlib.decompressobj(31).decompress(gz, limit + 1)),
        ("cramjam.gzip (unbounded)", lambda: cramjam.gzip.decompress(gz)),
        ("kafka-python gzip_decode (unbounded)", lambda: kafka_codec.gzip_decode(gz)),
    ]
    if isal_zlib is not None:
        gzip_rows.insert(2, ("isal decompressobj(max_length)",
                             lambda: isal_zlib.decompressobj(31).decompress(gz, limit + 1)))
    return {
        "gzip": (gz, gzip_rows),
        "snappy (xerial)": (xerial, [
            ("kafkaseg.codecs", lambda: decompress(2, xerial, max_output=limit)),
            ("cramjam decompress_raw per block + join", lambda: xerial_blocks(False)),
            ("cramjam decompress_raw_into one buffer", lambda: xerial_blocks(True)),
            ("kafka-python snappy_decode", lambda: kafka_codec.snappy_decode(xerial)),
        ]),
        "lz4": (lz, [
            ("kafkaseg.codecs", lambda: decompress(3, lz, max_output=limit)),
            ("LZ4FrameDecompressor(max_length=limit)",
             lambda: lz4.frame.LZ4FrameDecompressor().decompress(lz, max_length=limit + 1)),
            ("lz4.frame.decompress (unbounded)", lambda: lz4.frame.decompress(lz)),
            ("cramjam.lz4.decompress (unbounded)", lambda: cramjam.lz4.decompress(lz)),
            ("kafka-python lz4_decode (unbounded)", lambda: kafka_codec.lz4_decode(lz)),
        ]),
        "zstd": (zs, [
            ("kafkaseg.codecs", lambda: decompress(4, zs, max_output=limit)),
            ("zstandard decompress(max_output_size=limit)", lambda: dctx.decompress(zs, max_output_size=limit)),
            ("zstandard stream_reader.read(limit)", lambda: dctx.stream_reader(zs).read(limit + 1)),
            ("zstandard decompressobj (unbounded)", lambda: dctx.decompressobj().decompress(zs)),
            ("cramjam.zstd.decompress (unbounded)", lambda: cramjam.zstd.decompress(zs)),
            ("kafka-python zstd_decode (unbounded)", lambda: kafka_codec.zstd_decode(zs)),
        ]),
    }


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=0.3, help="time per measurement")
    parser.add_argument("--max-output-mib", type=int, default=64, help="max_output passed to bounded decoders")
    args = parser.parse_args(argv)
    limit = args.max_output_mib << 20
    print(f"libraries: {available_codecs()}")
    print(f"max_output = {args.max_output_mib} MiB; MB/s of decompressed output")
    for size in (16 * 1024, 1024 * 1024):
        raw = json_records(size)
        print(f"\n== {size // 1024} KiB batch ==")
        for codec, (payload, rows) in candidates(raw, limit).items():
            print(f"{codec}: {len(payload)} bytes compressed (ratio {size / len(payload):.1f})")
            for name, fn in rows:
                out = fn()
                assert bytes(out) == raw, (codec, name)
                print(f"  {name:<46} {rate(fn, size, args.seconds):8.0f} MB/s")


if __name__ == "__main__":
    main()
