"""What ``kafkaseg verify`` (deep checks, the default) costs against reading the same partition.

Usage: python benchmarks/bench_verify.py [--records 100000] [--value-size 300] [--magics 2,1] [--codecs none,gzip,lz4]
                                        [--per-batch 1,10] [--repeat 3] [--quick] [--json out.json]

For each message format (``--magics``), codec and records per batch, generates one partition
(``kafkaseg.testing.write_data_dir``: ``--records`` records of ``--value-size``-byte values, 8 MiB segments, an index
entry every 4 KiB) in a temporary directory, then times, best of ``--repeat``, in this process, one core:

  page cache  mmap every (cached) ``.log`` of the partition and sum it as uint64 with numpy: the read limit;
  read_arrow  ``kafkaseg.read_arrow`` of the partition folder (every column): what reading it costs;
  verify      ``kafkaseg.cli.verify.verify_paths([folder])`` (what ``kafkaseg verify <folder>`` runs; it must report
              no error).

Ratios: verify's time over read_arrow's and over the page-cache read's. Single-record batches (a low-throughput
producer with linger.ms=0) and legacy uncompressed message sets (one "batch" per record) are where a per-batch
cost shows. Nothing here is a floor.
"""

from __future__ import annotations

import argparse
import json
import mmap
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from benchmarks._common import best_of, format_table, machine, machine_line, scratch_dir  # noqa: E402
import kafkaseg  # noqa: E402
from kafkaseg.cli.verify import verify_paths  # noqa: E402
from kafkaseg.testing import TopicSpec, write_data_dir  # noqa: E402


def page_cache_read(logs: list[Path]) -> int:
    """Map each (cached) file and sum it as uint64: the read limit every reader pays."""
    total = 0
    for path in logs:
        with open(path, "rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
            total += int(np.frombuffer(mapped, dtype=np.uint64, count=len(mapped) // 8).sum())
    return total


def verify(folder: str) -> int:
    report = verify_paths([folder])
    if not report.ok:
        raise RuntimeError(f"verify reported errors: {[str(p) for p in report.errors[:5]]}")
    return sum(s.records for p in report.partitions for s in p.segments)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=100_000, help="records in each generated partition")
    parser.add_argument("--value-size", type=int, default=300)
    parser.add_argument("--magics", default="2,1")
    parser.add_argument("--codecs", default="none,gzip,lz4")
    parser.add_argument("--per-batch", default="1,10", help="records per batch (comma-separated)")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="2,000 records, one run (smoke test)")
    parser.add_argument("--json", metavar="PATH", help="also write the results as JSON")
    args = parser.parse_args(argv)
    records, repeat = (2_000, 1) if args.quick else (args.records, args.repeat)
    print(machine_line(machine()))
    rows, results = [], []
    with scratch_dir("kafkaseg-bench-verify-") as scratch:
        for magic in (int(m) for m in args.magics.split(",")):
            for codec in args.codecs.split(","):
                for per_batch in (int(n) for n in args.per_batch.split(",")):
                    name = f"v{magic}-{codec}-{per_batch}"
                    write_data_dir(scratch / name, [TopicSpec(
                        "bench", records_per_partition=records, records_per_batch=per_batch, vary_batch_size=False,
                        value_size=args.value_size, segment_bytes=8 << 20, index_interval_bytes=4096, magic=magic,
                        codec=codec)])
                    folder = scratch / name / "bench-0"
                    logs = sorted(folder.glob("*.log"))
                    size = sum(p.stat().st_size for p in logs)
                    cache_s, _ = best_of(lambda: page_cache_read(logs), repeat)
                    read_s, table = best_of(lambda: kafkaseg.read_arrow(str(folder)), repeat)
                    verify_s, checked = best_of(lambda: verify(str(folder)), repeat, warmup=not args.quick)
                    if table.num_rows != records or checked != records:
                        raise RuntimeError(f"{name}: read {table.num_rows} and verified {checked} of {records} "
                                           "records")
                    del table
                    batches = records // per_batch if codec != "none" or magic == 2 else records
                    results.append({"magic": magic, "codec": codec, "records_per_batch": per_batch,
                                    "records": records, "batches": batches, "log_bytes": size,
                                    "page_cache_s": cache_s, "read_arrow_s": read_s, "verify_s": verify_s})
                    rows.append([f"v{magic}", codec, str(per_batch), f"{records:,}", f"{batches:,}",
                                 f"{size / 1e6:.1f}", f"{cache_s * 1e3:.1f}", f"{read_s:.3f}", f"{verify_s:.3f}",
                                 f"{verify_s / batches * 1e6:.1f}", f"{verify_s / read_s:.1f}",
                                 f"{verify_s / cache_s:.0f}"])
    print(format_table(["magic", "codec", "rec/batch", "records", "batches", "log MB", "page cache ms",
                        "read_arrow s", "verify s", "verify us/batch", "/ read_arrow", "/ page cache"], rows))
    print("columns: best of --repeat wall times, one process; 'batches' counts a legacy uncompressed record as one "
          "(each is a message set entry of its own); ratios are verify's time over the other's")
    if args.json:
        Path(args.json).write_text(json.dumps({"machine": machine(), "results": results}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
