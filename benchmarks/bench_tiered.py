"""What reading tiered-storage copies costs against reading the segment in its log dir, same bytes.

Usage: python benchmarks/bench_tiered.py [--size-mb 100] [--chunk-mib 4] [--repeat 3] [--json FILE]

Generates one 16 KiB-batch uncompressed segment (``kafkaseg.testing.write_benchmark_segment``) and copies it, as
Aiven's remote storage plugin stores it (``kafkaseg.testing.tiered.copy_to_tiered``): as it is, with
``compression.enabled`` (``--chunk-mib`` chunks, each a zstd frame), with ``encryption.enabled`` (each chunk
AES-256-GCM), and with both. Times, on local disk and one core, best of ``--repeat`` after a warm-up:
``iter_batches`` over the log dir and each copy (CRCs checked, rows compared once), and a narrow read (1,000
offsets in the middle: what the packed indexes and chunked reads save). Limits printed beside them: the page-cache
read of the segment (mmap + sum) and the raw undoing of each copy's transform, chunk after chunk: zstd
decompression (the zstandard library), AES-GCM decryption (cryptography), or both. Informational: nothing here is
a floor.
"""

from __future__ import annotations

import argparse
import json
import mmap
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import best_of, format_table, machine, machine_line, scratch_dir  # noqa: E402

import numpy as np  # noqa: E402
import zstandard  # noqa: E402

import kafkaseg  # noqa: E402
from kafkaseg.storage.layout import discover  # noqa: E402
from kafkaseg.testing import write_benchmark_segment  # noqa: E402
from kafkaseg.testing.tiered import aiven_encryptor, copy_to_tiered, make_key_pair  # noqa: E402


def page_cache_read(path: Path) -> float:
    def run():
        with open(path, "rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
            return int(np.frombuffer(mapped, dtype=np.uint64, count=len(mapped) // 8).sum())

    return best_of(run, 3)[0]


def raw_undo(path: Path, chunked) -> float:
    """Seconds to undo every chunk of a copy's transform, one chunk after another: decrypt (AES-GCM, the data key
    from the manifest) and/or decompress (zstd), with the libraries kafkaseg uses, from bytes in memory."""
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    data = path.read_bytes()
    dctx = zstandard.ZstdDecompressor()
    starts, key = chunked.starts, chunked.data_key

    def run():
        total = 0
        for a, b in zip(starts, starts[1:]):
            chunk = data[a:b]
            if key is not None:
                chunk = AESGCM(key.key).decrypt(chunk[:12], chunk[12:], key.aad)
            if chunked.compressed:
                chunk = dctx.decompress(chunk)
            total += len(chunk)
        return total

    return best_of(run, 3)[0]


def stream(path: str, **options) -> int:
    return sum(batch.num_rows for batch in kafkaseg.iter_batches(path, **options))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mb", type=int, default=100)
    parser.add_argument("--chunk-mib", type=float, default=4)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json")
    args = parser.parse_args(argv)
    info = machine()
    print(machine_line(info))
    results: dict = {"machine": info, "size_mb": args.size_mb, "chunk_mib": args.chunk_mib, "reads": {}}
    with scratch_dir("kafkaseg-tiered-") as work:
        folder = work / "data" / "bench-0"
        # distinct batches throughout (variants): repeated ones would let zstd shrink a chunk to almost nothing
        write_benchmark_segment(folder, args.size_mb << 20, 16 * 1024, "none", variants=1024)
        log = next(folder.glob("*.log"))
        size = log.stat().st_size
        copy_to_tiered(folder, work / "plain", layout="aiven", include_last=True)
        key_pair = make_key_pair(work / "keys")
        ring = {"tieredKeyRing": key_pair.ring_option}
        chunk = int(args.chunk_mib * (1 << 20))
        limit_s = page_cache_read(log)
        sources = {"log dir": (str(folder), None), "plain copy": (str(work / "plain"), None)}
        for name, folder_name, kwargs in (
                ("compressed copy", "zstd", {"compression": True}),
                ("encrypted copy", "aes", {"encryptor": aiven_encryptor(key_pair)}),
                ("compressed, encrypted copy", "both", {"compression": True, "encryptor": aiven_encryptor(key_pair)})):
            (stored,) = copy_to_tiered(folder, work / folder_name, layout="aiven", include_last=True,
                                       chunk_size=chunk, **kwargs)
            (pd,) = discover(str(work / folder_name), key_ring=kafkaseg.ReadOptions.from_options(ring).tiered_key_ring)
            chunked = pd.filesystem.handler.objects[str(stored)]
            sources[name] = (str(work / folder_name), (stored, chunked, raw_undo(stored, chunked)))
        full = kafkaseg.read_arrow(str(folder))
        middle = full["offset"][full.num_rows // 2].as_py()
        narrow = {"startingOffsets": json.dumps({"bench": {"0": middle}}),
                  "endingOffsets": json.dumps({"bench": {"0": middle + 1000}})}
        rows = []
        base_s = None
        for name, (path, stored) in sources.items():
            options = ring if stored is not None else {}
            assert kafkaseg.read_arrow(path, **options).equals(full), name  # checked once, untimed
            seconds, count = best_of(lambda: stream(path, **options), args.repeat)
            assert count == full.num_rows
            narrow_s, narrow_count = best_of(lambda: stream(path, **options, **narrow), args.repeat)
            assert narrow_count == 1000
            planned = sum(s.size_bytes for s in kafkaseg.open_scan(path, **options, **narrow).plan.slices)
            base_s = seconds if base_s is None else base_s
            undo_s = stored[2] if stored is not None else None
            rows.append([name, f"{seconds:.3f}", f"{size / seconds / 1e6:,.0f}", f"{limit_s / seconds:.2f}",
                         f"{base_s / seconds:.2f}", f"{size / undo_s / 1e6:,.0f}" if undo_s else "-",
                         f"{undo_s / seconds:.2f}" if undo_s else "-", f"{narrow_s * 1000:.1f}", f"{planned:,}"])
            results["reads"][name] = {"seconds": seconds, "narrow_ms": narrow_s * 1000, "narrow_planned": planned,
                                      "raw_undo_s": undo_s,
                                      "stored_bytes": stored[0].stat().st_size if stored else size,
                                      "chunks": len(stored[1].starts) - 1 if stored else None}
        results.update(page_cache_s=limit_s, segment_bytes=size)
    print(f"\none {size / 1e6:,.0f} MB segment of 16 KiB batches, iter_batches on one core, best of {args.repeat}; "
          f"copies in {results['reads']['compressed copy']['chunks']} chunks, compressed to "
          f"{results['reads']['compressed copy']['stored_bytes'] / 1e6:,.0f} MB")
    print(f"page-cache read {size / limit_s / 1e6:,.0f} MB/s; raw undo: the copy's chunks decrypted and/or "
          "decompressed one after another, in memory (MB/s of segment bytes)")
    print(format_table(["read", "s", "segment MB/s", "of page-cache read", "x log dir", "raw undo MB/s",
                        "of raw undo", "1,000 offsets ms", "bytes planned"], rows))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
