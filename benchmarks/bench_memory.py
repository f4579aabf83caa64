"""Peak memory of reading one segment end to end: it must depend on configuration, not on segment size.

Usage::

    PYTHONPATH=. python benchmarks/bench_memory.py [--sizes-mb 200,1024] [--codec none] [--batch-size 16k]
        [--small-max-records 1000] [--quick] [--json out.json]

For each size a segment is written under /tmp (``kafkaseg.testing.write_benchmark_segment``; deleted afterwards).
Each (segment, options) pair is read by ``kafkaseg.iter_batches`` in a fresh subprocess that drops every batch after
counting it; the child reports ``resource.getrusage(RUSAGE_SELF).ru_maxrss`` (peak RSS) once after its imports
(baseline) and once after the read. Options: the defaults (local files decoded from mapped windows, whose file
pages count in RSS while mapped), a small ``maxRecordsPerBatch``, ``readMode=pread``, and (when duckdb is installed)
a DuckDB ``count(*)`` over a ``kafkaseg.open_scan`` reading its Arrow C stream, whose baseline is taken after
importing duckdb.

Check printed as PASS/FAIL: for each option set, the peak RSS of the largest segment exceeds that of the smallest by
no more than 10% of the smaller peak plus 16 MiB (noise: allocator and Arrow pool high-water marks).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import MiB, format_table, machine, machine_line, parse_size, scratch_dir, size_label  # noqa: E402

SLACK_FRACTION = 0.10
SLACK_BYTES = 16 * MiB

CHILD = r"""
import json, resource, sys, time
import pyarrow  # noqa: F401
import kafkaseg, kafkaseg.scan  # noqa: F401  (load the whole stack before the baseline)
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
path, options = sys.argv[1], json.loads(sys.argv[2])
rows = batches = biggest = 0
start = time.perf_counter()
if options.pop("_consumer", None) == "duckdb":  # DuckDB pulls the Scan's Arrow stream as its query runs
    import duckdb
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    scan = kafkaseg.open_scan(path, **options)
    rows = duckdb.sql("select count(*) from scan where octet_length(value) >= 0").fetchall()[0][0]
    batches = scan.metrics.output_batches
else:
    for batch in kafkaseg.iter_batches(path, **options):
        rows += batch.num_rows
        batches += 1
        biggest = max(biggest, batch.nbytes)
        del batch
elapsed = time.perf_counter() - start
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps({"rows": rows, "batches": batches, "largest_batch_bytes": biggest, "baseline_rss": base,
                  "peak_rss": peak, "seconds": elapsed}))
"""


def measure(partition_dir: Path, options: dict) -> dict:
    root = Path(__file__).resolve().parents[1]
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(root), env.get("PYTHONPATH")) if p)
    proc = subprocess.run([sys.executable, "-c", CHILD, str(partition_dir), json.dumps(options)],
                          capture_output=True, text=True, env=env, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"child failed ({proc.returncode}):\n{proc.stderr}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes-mb", default="200,1024", help="segment sizes in MiB")
    parser.add_argument("--codec", default="none")
    parser.add_argument("--batch-size", default="16k", help="uncompressed batch size")
    parser.add_argument("--small-max-records", type=int, default=1000, help="the small maxRecordsPerBatch")
    parser.add_argument("--quick", action="store_true", help="smoke run: 64 and 160 MiB segments")
    parser.add_argument("--json", help="also write the results here")
    args = parser.parse_args(argv)
    sizes = [int(float(s) * MiB) for s in ("64,160" if args.quick else args.sizes_mb).split(",") if s.strip()]
    batch_bytes = parse_size(args.batch_size)
    option_sets = [("defaults", {}), (f"maxRecordsPerBatch={args.small_max_records}",
                                      {"maxRecordsPerBatch": str(args.small_max_records)}),
                   ("readMode=pread", {"readMode": "pread"})]
    if importlib.util.find_spec("duckdb") is not None:
        option_sets.append(("DuckDB query over a Scan", {"_consumer": "duckdb"}))
    else:
        print("duckdb not installed: the DuckDB row is left out", file=sys.stderr)

    from kafkaseg.testing import write_benchmark_segment

    info = machine()
    print(machine_line(info))
    print(f"segments: {', '.join(size_label(s) + 'B' for s in sizes)}, codec {args.codec}, "
          f"{size_label(batch_bytes)} batches; each read in a fresh subprocess by kafkaseg.iter_batches")
    results = []
    with scratch_dir("kafkaseg-membench-") as root:
        for size in sizes:
            partition_dir = root / f"mem-{size_label(size)}-0"
            t0 = time.perf_counter()
            seg = write_benchmark_segment(partition_dir, size, batch_bytes, args.codec)
            os.sync()  # no background writeback competing with the reads
            print(f"  wrote {seg.size / MiB:.0f} MiB ({seg.records:,} records) in {time.perf_counter() - t0:.1f} s",
                  file=sys.stderr, flush=True)
            for label, options in option_sets:
                r = measure(partition_dir, options)
                if r["rows"] != seg.records:
                    raise RuntimeError(f"read {r['rows']} records of {seg.records}")
                r.update(segment_bytes=seg.size, options=label)
                results.append(r)
            for p in partition_dir.iterdir():  # free the disk before writing the next (bigger) one
                p.unlink()
    rows = [[f"{r['segment_bytes'] / MiB:,.0f}", r["options"], f"{r['rows']:,}", f"{r['batches']:,}",
             f"{r['largest_batch_bytes'] / MiB:.1f}" if r["largest_batch_bytes"] else "-", f"{r['baseline_rss'] / MiB:.0f}", f"{r['peak_rss'] / MiB:.0f}",
             f"{(r['peak_rss'] - r['baseline_rss']) / MiB:.0f}", f"{r['seconds']:.1f}"] for r in results]
    print(format_table(["segment MiB", "options", "records", "arrow batches", "largest batch MiB",
                        "baseline RSS MiB", "peak RSS MiB", "peak - baseline", "s"], rows))
    print()
    verdicts = []
    for label, _ in option_sets:
        mine = sorted((r for r in results if r["options"] == label), key=lambda r: r["segment_bytes"])
        small, big = mine[0], mine[-1]
        allowed = small["peak_rss"] * (1 + SLACK_FRACTION) + SLACK_BYTES
        ok = big["peak_rss"] <= allowed
        desc = (f"{label}: peak RSS {big['peak_rss'] / MiB:.0f} MiB for {big['segment_bytes'] / MiB:.0f} MiB vs "
                f"{small['peak_rss'] / MiB:.0f} MiB for {small['segment_bytes'] / MiB:.0f} MiB "
                f"(allowed <= {allowed / MiB:.0f} MiB)")
        print(f"{'PASS' if ok else 'FAIL'}  memory does not grow with segment size: {desc}")
        verdicts.append({"check": desc, "pass": ok})
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"machine": info, "results": results, "checks": verdicts}, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
