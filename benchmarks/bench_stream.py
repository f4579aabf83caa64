"""What streaming costs: a trigger's planning on the driver, and a rate-limited stream against one batch read.

Usage: python benchmarks/bench_stream.py [--partitions 100,1000] [--records 1000000] [--batches 10] [--repeat 3]
       [--quick] [--no-spark] [--copies 2]

1. Per trigger (Spark-free, ``kafkaseg.streaming.MicroBatchPlanner``): for data dirs of N partitions (3 segments
   each), the time of ``latest_offsets`` (list the dirs, each partition's log start and high watermark) and of
   ``plan`` (a micro-batch over every partition), against the machine's floor for the same work, one
   ``os.scandir`` of every partition folder (every trigger lists them), and the time of an idle trigger (nothing
   changed for over 2 s: each partition's range is reused and only the listing is redone), also in CPU seconds of
   this process (``time.process_time``), which other work on a shared machine disturbs less than wall time.
2. In one local[2] Spark session, the same data dir (4 partitions, ``--records`` 200-byte records, lz4): a batch
   ``count()``-like read to the ``noop`` sink, and a stream to ``noop`` with ``Trigger.AvailableNow``, once in one
   micro-batch and once with ``maxOffsetsPerTrigger`` = records / ``--batches``. The ratios say what the micro-batch
   machinery adds over reading the same records once. Nothing here is a floor.
3. With ``--copies K`` (K >= 2), instead of 1. and 2.: K log dirs holding the same N partitions (copy k with 10
   records fewer per partition than copy k-1, so checkpointing a lower high watermark), read as one stream standing
   at its end (a stream that caught up): the CPU time of an idle trigger (``latest_offsets`` over files unchanged
   for a minute) and of the plan of a micro-batch of each partition's last 2 offsets (inside its last segment) on a
   listing of its own (as Spark's ``planInputPartitions`` lists): both choose each partition's copy, checking that
   the copy chosen reaches the stream's position.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import best_of, format_table, machine, machine_line, spark_environment  # noqa: E402
from kafkaseg.options import ReadOptions  # noqa: E402
from kafkaseg.streaming import MicroBatchPlanner  # noqa: E402
from kafkaseg.testing import TopicSpec, write_data_dir  # noqa: E402


def trigger_costs(partitions: list[int], repeat: int, tmp: Path) -> list[list[str]]:
    rows = []
    for n in partitions:
        root = tmp / f"p{n}"
        topics = [TopicSpec(f"t{i}", partitions=min(10, n - 10 * i), records_per_partition=60, records_per_batch=5,
                            value_size=40, segment_bytes=2048) for i in range((n + 9) // 10)]
        write_data_dir(root, topics)
        long_ago = time.time() - 60  # written a minute ago: idle partitions
        for path in root.rglob("*"):
            os.utime(path, (long_ago, long_ago))
        folders = [e.path for e in os.scandir(root) if e.is_dir()]
        listing, _ = best_of(lambda: [list(os.scandir(f)) for f in folders], repeat)
        planner = MicroBatchPlanner(ReadOptions.from_options({"path": str(root), "startingOffsets": "earliest"},
                                                             stream=True))
        start = planner.initial_offsets()
        latest, end = best_of(lambda: planner.latest_offsets(start), repeat)
        limited, _ = best_of(lambda: planner.latest_offsets(start, max_offsets=n * 10), repeat)
        plan_s, plan = best_of(lambda: planner.plan(start, end), repeat)
        cold = MicroBatchPlanner(planner.options)  # a fresh planner: every range computed
        first_s, _ = best_of(lambda: MicroBatchPlanner(planner.options).latest_offsets(start), repeat)
        cold.latest_offsets(start)
        idle_s, _ = best_of(lambda: cold.latest_offsets(start), repeat, warmup=False)
        idle_cpu = min(_cpu_seconds(lambda: cold.latest_offsets(start)) for _ in range(max(1, repeat)))
        rows.append([f"{n:,}", f"{first_s * 1e3:,.0f}", f"{idle_s * 1e3:,.0f}", f"{limited * 1e3:,.0f}",
                     f"{plan_s * 1e3:,.0f}", f"{len(plan.scan.slices):,}", f"{listing * 1e3:,.1f}",
                     f"{idle_s / listing:,.0f}x", f"{idle_cpu * 1e3:,.0f}"])
    return rows


def copies_trigger_costs(partitions: list[int], copies: int, repeat: int, tmp: Path) -> list[list[str]]:
    rows = []
    for n in partitions:
        roots = [tmp / f"c{n}-{k}" for k in range(copies)]
        for k, root in enumerate(roots):
            topics = [TopicSpec(f"t{i}", partitions=min(10, n - 10 * i), records_per_partition=60 - 10 * k,
                                records_per_batch=5, value_size=40, segment_bytes=2048) for i in range((n + 9) // 10)]
            write_data_dir(root, topics, node_id=k + 1)
            long_ago = time.time() - 60
            for path in root.rglob("*"):
                os.utime(path, (long_ago, long_ago))
        planner = MicroBatchPlanner(ReadOptions.from_options({"paths": [str(r) for r in roots],
                                                              "startingOffsets": "earliest"}, stream=True))
        end = planner.latest_offsets(planner.initial_offsets())
        end = planner.latest_offsets(end)
        before = {topic: ({p: max(0, o - 2) for p, o in parts.items()} if not topic.startswith("@") else parts)
                  for topic, parts in end.items()}
        idle_s, _ = best_of(lambda: planner.latest_offsets(end), repeat)
        idle_cpu = min(_cpu_seconds(lambda: planner.latest_offsets(end)) for _ in range(max(1, repeat)))
        planner.latest_offsets(before)
        plan_cpu = min(_cpu_seconds(lambda: planner.plan(before, end)) for _ in range(max(1, repeat)))
        rows.append([f"{n:,}", str(copies), f"{idle_s * 1e3:,.0f}", f"{idle_cpu * 1e3:,.0f}",
                     f"{plan_cpu * 1e3:,.0f}"])
    return rows


def _cpu_seconds(fn) -> float:
    """The CPU time of this process that one call of ``fn`` takes."""
    start = time.process_time()
    fn()
    return time.process_time() - start


def spark_costs(records: int, batches: int, repeat: int, tmp: Path) -> list[list[str]]:
    spark_environment()
    from pyspark.sql import SparkSession

    data = tmp / "spark-data"
    write_data_dir(data, [TopicSpec("big", partitions=4, records_per_partition=records // 4, records_per_batch=200,
                                    value_size=200, segment_bytes=32 << 20, codec="lz4")])
    os.environ["KAFKASEG_SPARK_REPORT_DIR"] = str(tmp / "reports")
    spark = (SparkSession.builder.master("local[2]").config("spark.sql.python.filterPushdown.enabled", "true")
             .config("spark.ui.showConsoleProgress", "false").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    runs = [0]

    def batch():
        spark.read.format("kafkaseg").load(str(data)).write.format("noop").mode("overwrite").save()
        return None

    def stream(limit: int | None):
        def go():
            runs[0] += 1
            reader = spark.readStream.format("kafkaseg").option("startingOffsets", "earliest")
            if limit:
                reader = reader.option("maxOffsetsPerTrigger", limit)
            query = (reader.load(str(data)).writeStream.format("noop")
                     .option("checkpointLocation", str(tmp / f"checkpoint-{runs[0]}"))
                     .trigger(availableNow=True).start())
            query.awaitTermination()
            progress = query.recentProgress
            total = sum(p["numInputRows"] for p in progress)
            assert total == records // 4 * 4, total
            return len([p for p in progress if p["numInputRows"]])
        return go

    try:
        batch_s, _ = best_of(batch, repeat)
        one_s, one_n = best_of(stream(None), repeat)
        many_s, many_n = best_of(stream(records // batches), repeat)
    finally:
        spark.stop()
    n = records // 4 * 4
    return [["batch read (noop sink)", "1", f"{batch_s:.2f}", f"{n / batch_s / 1e6:.2f}", "1.00"],
            ["stream, AvailableNow", str(one_n), f"{one_s:.2f}", f"{n / one_s / 1e6:.2f}", f"{one_s / batch_s:.2f}"],
            [f"stream, maxOffsetsPerTrigger={records // batches:,}", str(many_n), f"{many_s:.2f}",
             f"{n / many_s / 1e6:.2f}", f"{many_s / batch_s:.2f}"]]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--partitions", default="100,1000")
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--batches", type=int, default=10)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="small sizes, no Spark (smoke test)")
    parser.add_argument("--no-spark", action="store_true", help="only the per-trigger costs")
    parser.add_argument("--copies", type=int, default=1,
                        help="K >= 2: the per-trigger costs of K log dirs holding copies of the partitions (3.)")
    args = parser.parse_args(argv)
    print(machine_line(machine()))
    with tempfile.TemporaryDirectory(prefix="kafkaseg-bench-stream-") as tmp:
        partitions = [20] if args.quick else [int(x) for x in args.partitions.split(",")]
        if args.copies > 1:
            rows = copies_trigger_costs(partitions, args.copies, 1 if args.quick else args.repeat, Path(tmp))
            print(f"\nPer trigger, {args.copies} copies of each partition, a stream at its end (CPU: best of runs):")
            print(format_table(["partitions", "copies", "idle latest ms", "idle CPU ms", "plan CPU ms"], rows))
            return 0
        rows = trigger_costs(partitions, 1 if args.quick else args.repeat, Path(tmp))
        print("\nPer trigger, on the driver (best of runs, local files in the page cache):")
        print(format_table(["partitions", "first latest ms", "idle latest ms", "rate-limited ms", "plan ms", "slices",
                            "scandir ms", "idle / scandir", "idle CPU ms"], rows))
        if not args.quick and not args.no_spark:
            rows = spark_costs(args.records, args.batches, args.repeat, Path(tmp))
            print(f"\nlocal[2] Spark, {args.records:,} records of 200 bytes (lz4), 4 partitions:")
            print(format_table(["read", "micro-batches", "best s", "M rec/s", "/ batch read"], rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
