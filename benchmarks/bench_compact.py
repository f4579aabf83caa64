"""jobs/compact.py: a full rebuild and an incremental run of a generated changelog, with the merge's share.

Usage: python benchmarks/bench_compact.py [--records 1000000] [--keys 100000] [--partitions 4] [--quick]

One generated topic (``--partitions`` partitions, ``--records`` records in all, keys drawn from ``--keys`` distinct
keys, 2% tombstones, 100-byte values, lz4, 8 MiB segments), and the same dir without each partition's last segment
(the "head": the dir before that segment was appended). One local[2] SparkSession (the machine's 2 cores).

1. full rebuild of the whole dir (executors reduce and write Parquet, the driver commits once): offsets/s;
2. full rebuild of the head, then an incremental run on the whole dir: the read + per-key reduction + staging of
   the change set (executors), against the driver's ``DeltaTable.merge`` of it; the driver's peak RSS before and
   after the merge (``ru_maxrss``: the Python driver only, the JVM is another process);
3. the Spark-free twin (``kafkaseg.compacted_table.compact_arrow``, everything in one process's memory) on the
   whole dir, for scale.

The incremental table is checked against the full rebuild (same rows), so a fast wrong answer cannot pass.
Informational: no floors.
"""

from __future__ import annotations

import argparse
import multiprocessing
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks._common import machine, spark_environment  # noqa: E402

spark_environment()


def generate(root: Path, spec) -> None:
    from kafkaseg.testing import write_data_dir
    from tests.compaction_data import truncated_copy

    write_data_dir(root / "full", [spec], seed=1)
    truncated_copy(root / "full", root / "head", drop_segments=1)


def rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--keys", type=int, default=100_000)
    parser.add_argument("--partitions", type=int, default=4)
    parser.add_argument("--quick", action="store_true", help="20,000 records, 2,000 keys: a smoke run")
    parser.add_argument("--driver-merge-max-bytes", type=int, default=None,
                        help="the config's driver_merge_max_bytes (0: the executors rewrite; default: the config's "
                             "default, under which this benchmark's table is merged on the driver)")
    args = parser.parse_args(argv)
    if args.quick:
        args.records, args.keys = 20_000, 2_000
    from deltalake import DeltaTable
    from pyspark.sql import SparkSession

    from jobs import compact
    from kafkaseg.compacted_table import compact_arrow
    from kafkaseg.testing import TopicSpec

    m = machine()
    print(f"machine: nproc={m['nproc']} cpu={m['cpu']} python={m['python']}")
    spec = TopicSpec("bench", partitions=args.partitions, records_per_partition=args.records // args.partitions,
                     records_per_batch=200, key_cardinality=max(1, args.keys // args.partitions), value_size=100,
                     tombstone_ratio=0.02, codec="lz4", idempotent=True,
                     segment_bytes=(256 << 10) if args.quick else (8 << 20))
    with tempfile.TemporaryDirectory(prefix="bench-compact-") as tmp:
        root = Path(tmp)
        started = time.perf_counter()
        # in another process, so the driver's peak RSS below is the job's, not the generator's
        generator = multiprocessing.get_context("spawn").Process(target=generate, args=(root, spec))
        generator.start()
        generator.join()
        if generator.exitcode != 0:
            raise SystemExit(f"generating the data dir failed (exit status {generator.exitcode})")
        print(f"generated {args.records:,} records ({args.keys:,} keys, {args.partitions} partitions) in "
              f"{time.perf_counter() - started:.1f}s")
        spark = (SparkSession.builder.master("local[2]").appName("bench-compact")
                 .config("spark.sql.python.filterPushdown.enabled", "true")
                 .config("spark.sql.shuffle.partitions", "4").config("spark.ui.enabled", "false")
                 .config("spark.ui.showConsoleProgress", "false")
                 .config("spark.sql.session.timeZone", "UTC").getOrCreate())
        spark.sparkContext.setLogLevel("ERROR")
        try:
            config = []
            if args.driver_merge_max_bytes is not None:
                (root / "compaction.toml").write_text(f"driver_merge_max_bytes = {args.driver_merge_max_bytes}\n")
                config = ["--config", str(root / "compaction.toml")]

            def job(data: str, table: str) -> dict:
                return compact.run(spark, compact.parse_args(["--data-dir", data, "--output", table, *config]))

            job(str(root / "head"), str(root / "warmup"))  # JVM and Python workers warm
            full = job(str(root / "full"), str(root / "t-full"))
            offsets = full["plan"].increment.offsets_to_read
            head = job(str(root / "head"), str(root / "t-inc"))
            before = rss_mib()
            inc = job(str(root / "full"), str(root / "t-inc"))
            after = rss_mib()
        finally:
            spark.stop()
        same = (DeltaTable(str(root / "t-inc")).to_pyarrow_table().sort_by([("partition", "ascending"),
                                                                              ("offset", "ascending")])
                .equals(DeltaTable(str(root / "t-full")).to_pyarrow_table().sort_by(
                    [("partition", "ascending"), ("offset", "ascending")])))
        started = time.perf_counter()
        compact_arrow([str(root / "full")], str(root / "t-arrow"))
        arrow_seconds = time.perf_counter() - started
        keys = DeltaTable(str(root / "t-full")).count()
    inc_offsets = inc["plan"].increment.offsets_to_read
    r = inc["result"]
    print(f"{'run':<34} {'offsets':>10} {'seconds':>8} {'offsets/s':>11}")
    print(f"{'full rebuild (Spark)':<34} {offsets:>10,} {full['seconds']:>8.1f} {offsets / full['seconds']:>11,.0f}")
    print(f"{'full rebuild of the head':<34} {head['plan'].increment.offsets_to_read:>10,} "
          f"{head['seconds']:>8.1f}")
    executors = r.get("engine") == "executors"
    print(f"{'incremental (Spark + ' + ('rewrite)' if executors else 'merge)'):<34} {inc_offsets:>10,} "
          f"{inc['seconds']:>8.1f} {inc_offsets / inc['seconds']:>11,.0f}")
    if executors:
        print(f"{'  read + reduce + rewrite (executors)':<34} {'':>10} {r['write_seconds']:>8.1f}")
        print(f"{'  commit (driver)':<34} {'':>10} {r['merge_seconds']:>8.1f}")
    else:
        print(f"{'  read + reduce + stage (executors)':<34} {'':>10} {r['write_seconds']:>8.1f}")
        print(f"{'  DeltaTable.merge (driver)':<34} {'':>10} {r['merge_seconds']:>8.1f}")
    print(f"{'full rebuild (compact_arrow, no Spark)':<34} {offsets:>10,} {arrow_seconds:>8.1f} "
          f"{offsets / arrow_seconds:>11,.0f}")
    if executors:
        print(f"table: {keys:,} live keys; the executors rewrote {r['files_rewritten']} files "
              f"({r['bytes_rewritten']:,} bytes) into {r['files_written']}")
    else:
        print(f"table: {keys:,} live keys; incremental change set {r.get('num_source_rows', 0):,} rows: "
              f"{r.get('num_target_rows_updated', 0):,} updated, {r.get('num_target_rows_inserted', 0):,} inserted, "
              f"{r.get('num_target_rows_deleted', 0):,} deleted; files removed {r.get('num_target_files_removed', 0)}, "
              f"added {r.get('num_target_files_added', 0)}")
    print(f"driver peak RSS (Python process): {before:,.0f} MiB after the full rebuilds, {after:,.0f} MiB after the "
          "incremental run's merge")
    print(f"incremental table equals the full rebuild: {same}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
