"""Planning's memory and time against the number of segments: a plan loads a segment's ``.index``/``.timeindex``
only where it needs positions (slice starts and ends, cuts), and forgets a segment's index arrays once its pieces
are cut, so what planning holds grows with one segment's index, not with the partition's.

Usage: python benchmarks/bench_plan.py [--segment-mib 8] [--segments 3,9] [--quick] [--json FILE]

Each size is one partition generated with :func:`kafkaseg.testing.write_data_dir`: one ~100-byte record per batch
and an index entry for every batch (``index_interval_bytes=1``, the densest index a broker writes), so a segment's
index files are about 1/5 of its log (a broker's default 4 KiB interval makes them about 1/200). For each, and for
the default ``splitSize`` (128 MiB: no cuts), a small one (a cut every 1 MiB), a pushed-down timestamp filter
that prunes all but the last segment and offset ranges that end inside every segment, a fresh :func:`plan_scan` is
timed and its peak of Python and numpy allocations measured with ``tracemalloc`` beyond the plan it returns (the
slices, which grow with their number as any plan does), next to the bytes of index files. Verdict: that working
memory is at most :data:`FLOOR` times the largest segment's index files, at every segment count (it grows with one
segment's index, not with the partition's).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _common import format_table, machine, machine_line, scratch_dir  # noqa: E402

from kafkaseg.options import ReadOptions  # noqa: E402
from kafkaseg.planning import Predicates, plan_scan  # noqa: E402
from kafkaseg.storage.segment import SegmentReader  # noqa: E402
from kafkaseg.testing import TopicSpec, write_data_dir  # noqa: E402

RECORD_BYTES = 100 + 70  # value + key + batch overhead of a one-record v2 batch
# a segment's index arrays in memory (int64 offsets, positions, timestamps) and the temporaries of loading and
# checking them: a small multiple of its two files, whatever the partition's segment count
FLOOR = 8.0


def generate(root: Path, segments: int, segment_bytes: int) -> tuple[int, int]:
    """The bytes of all index files, and of the largest segment's two."""
    records = segments * segment_bytes // RECORD_BYTES
    write_data_dir(root, [TopicSpec("plan", records_per_partition=records, records_per_batch=1, vary_batch_size=False,
                                    value_size=100, key_size=8, segment_bytes=segment_bytes, index_interval_bytes=1)])
    per_segment: dict[str, int] = {}
    for p in (root / "plan-0").iterdir():
        if p.suffix in (".index", ".timeindex"):
            per_segment[p.stem] = per_segment.get(p.stem, 0) + p.stat().st_size
    return sum(per_segment.values()), max(per_segment.values())


def cases(root: Path, segment_bytes: int) -> list[tuple[str, int, Predicates | None]]:
    """(name, splitSize, predicates): no cut, cuts at index entries, a pushed-down timestamp filter that prunes
    all but the last segment, offset ranges that end inside every segment."""
    logs = sorted((root / "plan-0").glob("*.log"))
    bases = [int(log.name[:20]) for log in logs]
    with SegmentReader(str(logs[-1])) as reader:
        last_ts = reader.header_at(0).max_timestamp
    cut = max(segment_bytes // 8, 64 << 10)
    return [("no cut", 128 << 20, None), (f"cut every {cut >> 10} KiB", cut, None),
            ("timestamp >= last segment's", 128 << 20, Predicates(timestamp_range=(last_ts, None))),
            ("offset ranges mid-segment", 128 << 20, Predicates(offset_ranges=tuple((b + 10, b + 20) for b in bases)))]


def measure(root: Path, split_size: int, predicates: Predicates | None) -> tuple[float, int, int]:
    options = ReadOptions.from_options({"splitSize": str(split_size)})
    plan_scan(str(root), options, predicates)  # (imports and caches warm)
    tracemalloc.start()
    started = time.perf_counter()
    plan = plan_scan(str(root), options, predicates)
    seconds = time.perf_counter() - started
    held, peak = tracemalloc.get_traced_memory()  # (held: the plan itself, alive here)
    tracemalloc.stop()
    return seconds, peak - held, len(plan.slices)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--segment-mib", type=float, default=8.0)
    parser.add_argument("--segments", default="3,9", help="comma-separated segment counts")
    parser.add_argument("--quick", action="store_true", help="1 MiB segments (a smoke run)")
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args()
    segment_bytes = int((1.0 if args.quick else args.segment_mib) * (1 << 20))
    counts = [int(n) for n in args.segments.split(",")]
    print(machine_line(machine()))
    rows, results = [], []
    for count in counts:
        with scratch_dir("kafkaseg-plan-") as root:
            index_bytes, largest = generate(root, count, segment_bytes)
            for name, split, predicates in cases(root, segment_bytes):
                seconds, peak, slices = measure(root, split, predicates)
                results.append({"segments": count, "segment_bytes": segment_bytes, "index_bytes": index_bytes,
                                "largest_segment_index_bytes": largest, "case": name, "split_size": split,
                                "slices": slices, "plan_s": seconds, "peak_bytes": peak})
                rows.append([str(count), f"{index_bytes / 2**20:.1f}", f"{largest / 2**20:.2f}", name, str(slices),
                             f"{seconds:.3f}", f"{peak / 2**20:.1f}", f"{peak / index_bytes:.2f}",
                             f"{peak / largest:.2f}"])
    print(format_table(["segments", "index MiB", "largest seg's", "case", "slices", "plan s", "working MiB",
                        "/ all index", "/ largest seg's"], rows))
    for r in results:
        multiple = r["peak_bytes"] / r["largest_segment_index_bytes"]
        print(f"{'PASS' if multiple <= FLOOR else 'FAIL'}  planning memory is bounded by one segment's index "
              f"({r['segments']} segments, {r['case']}): working memory {multiple:.2f}x "
              f"the largest segment's index files (floor <= {FLOOR:g}x; all the partition's are "
              f"{r['index_bytes'] / r['largest_segment_index_bytes']:.1f}x)")
    if args.json:
        Path(args.json).write_text(json.dumps({"machine": machine(), "results": results}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
