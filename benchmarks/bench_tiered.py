"""What reading tiered-storage copies costs against reading the segment in its log dir, same bytes.

Usage: python benchmarks/bench_tiered.py [--size-mb 100] [--chunk-mib 4] [--repeat 3] [--json FILE]

Generates one 16 KiB-batch uncompressed segment (``kafkaseg.testing.write_benchmark_segment``) and copies it, as
Aiven's remote storage plugin stores it (``kafkaseg.testing.tiered.copy_to_tiered``), once as it is and once with
``compression.enabled`` (``--chunk-mib`` chunks, each a zstd frame). Times, on local disk and one core, best of
``--repeat`` after a warm-up: ``iter_batches`` over the log dir, the plain copy and the compressed copy (CRCs
checked, rows compared once), and a narrow read (1,000 offsets in the middle: what the packed indexes and chunked
reads save). Limits printed beside them: the page-cache read of the segment (mmap + sum) and the raw zstd
decompression of the compressed copy's chunks (the zstandard library, one frame after another). Informational:
nothing here is a floor.
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
from kafkaseg.testing.tiered import copy_to_tiered  # noqa: E402


def page_cache_read(path: Path) -> float:
    def run():
        with open(path, "rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
            return int(np.frombuffer(mapped, dtype=np.uint64, count=len(mapped) // 8).sum())

    return best_of(run, 3)[0]


def raw_zstd(path: Path, starts: tuple[int, ...]) -> float:
    """Seconds to decompress every chunk of the compressed copy, one frame after another."""
    data = path.read_bytes()
    dctx = zstandard.ZstdDecompressor()

    def run():
        return sum(len(dctx.decompress(data[a:b])) for a, b in zip(starts, starts[1:]))

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
        (compressed_log,) = copy_to_tiered(folder, work / "zstd", layout="aiven", include_last=True,
                                           compression=True, chunk_size=int(args.chunk_mib * (1 << 20)))
        (pd,) = discover(str(work / "zstd"))
        starts = pd.filesystem.handler.objects[str(compressed_log)].starts
        limit_s = page_cache_read(log)
        zstd_s = raw_zstd(compressed_log, starts)
        sources = {"log dir": str(folder), "plain copy": str(work / "plain"), "compressed copy": str(work / "zstd")}
        full = kafkaseg.read_arrow(str(folder))
        middle = full["offset"][full.num_rows // 2].as_py()
        narrow = {"startingOffsets": json.dumps({"bench": {"0": middle}}),
                  "endingOffsets": json.dumps({"bench": {"0": middle + 1000}})}
        rows = []
        base_s = None
        for name, path in sources.items():
            assert kafkaseg.read_arrow(path).equals(full), name  # checked once, untimed
            seconds, count = best_of(lambda: stream(path), args.repeat)
            assert count == full.num_rows
            narrow_s, narrow_count = best_of(lambda: stream(path, **narrow), args.repeat)
            assert narrow_count == 1000
            planned = sum(s.size_bytes for s in kafkaseg.open_scan(path, **narrow).plan.slices)
            base_s = seconds if base_s is None else base_s
            rows.append([name, f"{seconds:.3f}", f"{size / seconds / 1e6:,.0f}", f"{limit_s / seconds:.2f}",
                         f"{base_s / seconds:.2f}", f"{zstd_s / seconds:.2f}" if name == "compressed copy" else "-",
                         f"{narrow_s * 1000:.1f}", f"{planned:,}"])
            results["reads"][name] = {"seconds": seconds, "narrow_ms": narrow_s * 1000, "narrow_planned": planned}
        results.update(page_cache_s=limit_s, raw_zstd_s=zstd_s, segment_bytes=size,
                       compressed_bytes=compressed_log.stat().st_size)
    print(f"\none {size / 1e6:,.0f} MB segment of 16 KiB batches, iter_batches on one core, best of {args.repeat}; "
          f"the compressed copy is {results['compressed_bytes'] / 1e6:,.0f} MB in {len(starts) - 1} chunks")
    print(f"page-cache read {size / limit_s / 1e6:,.0f} MB/s; raw zstd decompression of the chunks "
          f"{size / zstd_s / 1e6:,.0f} MB/s (of segment bytes)")
    print(format_table(["read", "s", "segment MB/s", "of page-cache read", "x log dir", "of raw zstd",
                        "1,000 offsets ms", "bytes planned"], rows))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
