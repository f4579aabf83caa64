"""Time lookups in a partition of many segments: ``kafkaseg.lookup`` touches one time-index entry per segment up to
the answer (O(log n) with ``--fast``'s binary search) plus about one index interval of log per lookup.

Usage: python benchmarks/bench_lookup.py [--segments 1000] [--lookups 200] [--quick] [--magic 2] [--codec none]
[--records-per-batch 10] [--value-size 300] [--without-indexes] [--json FILE]

The partition is generated once with :func:`kafkaseg.testing.write_data_dir` (small segments, 4 KiB index
interval, LogAppendTime-like increasing timestamps) in a temporary directory. Each lookup is COLD for the partition:
a fresh :class:`~kafkaseg.lookup.PartitionLookup` (index files opened anew), a random timestamp between the first
and last record. Printed per mode: median / p95 / max ms, and per lookup the index entries read, index bytes and
log bytes read, files opened. Modes: default (the broker's linear scan over segments, one time-index entry per
segment; what planning and ``kafkaseg offsets`` use), ``fast`` (binary search over segments, exact only while
segments' largest timestamps never decrease), ``locate`` (offset -> segment, batch, record), and ``planning``
(``kafkaseg.planning.offset_for_timestamp``: the same lookup plus the partition's bounds).
Target: default mode median < 20 ms on 1,000 segments. ``--magic 1 --codec gzip`` times the same lookups over legacy
compressed wrappers, whose header walk decompresses each wrapper it passes (a v1 wrapper's header holds its last
inner offset only). ``--without-indexes`` deletes the ``.index`` and ``.timeindex`` files after generating: each
lookup then rebuilds the indexes of the segments it reads in memory (``kafkaseg.storage.indexes.rebuild_indexes``).
``--records-per-batch 1 --value-size 20`` makes batches of ~90 bytes, about 45 to an index interval (segments of
~16 KiB, ~170 records): the header walk a lookup makes from its index entry is then long.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kafkaseg.lookup import PartitionLookup  # noqa: E402
from kafkaseg.storage.layout import discover  # noqa: E402
from kafkaseg.testing import TopicSpec, write_data_dir  # noqa: E402

TARGET_MS = 20.0


def generate(root: Path, segments: int, magic: int = 2, codec: str = "none", records_per_batch: int = 10,
             value_size: int = 300):
    # (defaults: records of ~300 bytes + overhead: ~16 KiB segments, 3-4 index entries each; smaller records make
    # as many ~16 KiB segments hold more of them)
    per_segment = max(40, 40 * 400 // (value_size + 100))
    spec = TopicSpec("bench", records_per_partition=segments * per_segment, records_per_batch=records_per_batch,
                     vary_batch_size=False, value_size=value_size, segment_bytes=40 * 400,
                     ts_step_ms=7, index_interval_bytes=4096, magic=magic, codec=codec)
    manifest = write_data_dir(root, [spec], seed=1)
    pdir = next(p for p in discover(str(root)) if p.topic == "bench")
    return manifest.partition("bench"), pdir


def run_mode(pdir, targets, mode: str):
    times, entries, index_bytes, log_bytes, files = [], [], [], [], []
    answers = []
    for t in targets:
        start = time.perf_counter()
        if mode == "planning":
            from kafkaseg.planning import offset_for_timestamp

            answers.append(offset_for_timestamp(pdir, t))
            stats = None
        else:
            with PartitionLookup(pdir) as lookup:
                if mode == "locate":
                    location = lookup.locate(t)
                    answers.append(location.record_offset)
                else:
                    answers.append(lookup.list_offset(t, exact=(mode != "fast")).offset)
                stats = lookup.stats
        times.append((time.perf_counter() - start) * 1000)
        if stats is not None:
            entries.append(stats.index_entries)
            index_bytes.append(stats.index_bytes)
            log_bytes.append(stats.log_bytes)
            files.append(stats.files_opened)
    times.sort()
    row = {"mode": mode, "lookups": len(targets), "median_ms": statistics.median(times),
           "p95_ms": times[int(0.95 * (len(times) - 1))], "max_ms": times[-1]}
    if entries:
        row.update(index_entries=statistics.mean(entries), max_index_entries=max(entries),
                   index_bytes=statistics.mean(index_bytes), log_bytes=statistics.mean(log_bytes),
                   max_log_bytes=max(log_bytes), files_opened=statistics.mean(files))
    return row, answers


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--segments", type=int, default=1000)
    parser.add_argument("--lookups", type=int, default=200)
    parser.add_argument("--quick", action="store_true", help="100 segments, 30 lookups")
    parser.add_argument("--no-planning", action="store_true", help="skip the planning.offset_for_timestamp baseline")
    parser.add_argument("--magic", type=int, choices=(1, 2), default=2,
                        help="record batch format of the generated partition (1: legacy message sets)")
    parser.add_argument("--codec", default="none", choices=("none", "gzip", "snappy", "lz4", "zstd"),
                        help="compression of the generated batches (zstd needs --magic 2)")
    parser.add_argument("--records-per-batch", type=int, default=10)
    parser.add_argument("--value-size", type=int, default=300)
    parser.add_argument("--without-indexes", action="store_true",
                        help="delete every .index and .timeindex: each lookup rebuilds what it reads in memory")
    parser.add_argument("--json", help="also write the results as JSON here")
    args = parser.parse_args(argv)
    if args.quick:
        args.segments, args.lookups = 100, 30
    if args.magic < 2 and args.codec == "zstd":
        parser.error("zstd needs --magic 2 (legacy message sets have no zstd)")
    from kafkaseg.decode import IMPLEMENTATION

    with tempfile.TemporaryDirectory(prefix="kafkaseg-bench-lookup-") as tmp:
        t0 = time.perf_counter()
        pm, pdir = generate(Path(tmp), args.segments, args.magic, args.codec, args.records_per_batch, args.value_size)
        total_index_entries = sum(Path(s.index_path).stat().st_size // 8 + Path(s.timeindex_path).stat().st_size // 12
                                  for s in pdir.segments)
        if args.without_indexes:
            for s in pdir.segments:
                Path(s.index_path).unlink()
                Path(s.timeindex_path).unlink()
            pdir = next(p for p in discover(tmp) if p.topic == "bench")
            total_index_entries = 0
        print(f"partition: {len(pdir.segments)} segments, {pm.log_end_offset} records, {pdir.size_bytes} bytes, "
              f"{total_index_entries} index entries (generated in {time.perf_counter() - t0:.1f}s); "
              f"magic {args.magic}, codec {args.codec}; decoder: {IMPLEMENTATION}")
        rng = random.Random(0)
        first, last = pm.records[0].timestamp, pm.records[-1].timestamp
        times = [rng.randint(first, last) for _ in range(args.lookups)]
        offsets = [rng.randint(0, pm.log_end_offset - 1) for _ in range(args.lookups)]
        rows = []
        default_row, default_answers = run_mode(pdir, times, "default")
        rows.append(default_row)
        fast_row, fast_answers = run_mode(pdir, times, "fast")
        rows.append(fast_row)
        assert fast_answers == default_answers, "binary search and linear scan disagree"
        rows.append(run_mode(pdir, offsets, "locate")[0])
        if not args.no_planning:
            planning_row, planning_answers = run_mode(pdir, times[: max(5, args.lookups // 10)], "planning")
            rows.append(planning_row)
            assert planning_answers == default_answers[:len(planning_answers)], "planning disagrees"
    print(f"{'mode':10} {'lookups':>7} {'median ms':>10} {'p95 ms':>8} {'max ms':>8} {'idx entries':>11} "
          f"{'idx bytes':>9} {'log bytes':>9} {'max log B':>9} {'files':>6}")
    for r in rows:
        print(f"{r['mode']:10} {r['lookups']:>7} {r['median_ms']:>10.2f} {r['p95_ms']:>8.2f} {r['max_ms']:>8.2f} "
              f"{r.get('index_entries', float('nan')):>11.1f} {r.get('index_bytes', float('nan')):>9.0f} "
              f"{r.get('log_bytes', float('nan')):>9.0f} {r.get('max_log_bytes', float('nan')):>9.0f} "
              f"{r.get('files_opened', float('nan')):>6.1f}")
    verdict = "PASS" if default_row["median_ms"] < TARGET_MS else "MISS"
    print(f"verdict: time lookup median {default_row['median_ms']:.2f} ms on {args.segments} segments "
          f"(target < {TARGET_MS:.0f} ms): {verdict}")
    if args.json:
        Path(args.json).write_text(json.dumps({"segments": args.segments, "magic": args.magic, "codec": args.codec,
                                               "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
