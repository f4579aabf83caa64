"""kafkaseg through Spark, against the ceiling of PySpark's Python data source path and against Parquet.

Usage: python benchmarks/bench_spark.py [--mib 256] [--codec none] [--partitions 4] [--repeat 3] [--keep DIR]

One run, one local[N] SparkSession (N = --partitions), the same records three ways:

(a) ceiling: a trivial Python data source whose ``read()`` yields prebuilt Arrow batches (the very batches kafkaseg
    produces, memory-mapped from an Arrow IPC file), same count and size, same number of input partitions: the cost
    of PySpark's Python data source path itself;
(b) kafkaseg: ``format("kafkaseg")`` on a generated segment (``splitSize`` chosen for the same partition count);
(c) Parquet: the same table written by pyarrow (snappy), read by Spark's native reader.

Queries: ``count(*)`` and ``sum(length(value))``; best of --repeat, after one warm-up. Then a 1% offset-range query
(``partition = 0 AND offset BETWEEN a AND b``) shows the bytes planned and read (kafkaseg.spark.last_plan_report()),
and a metadata query (count, max(timestamp), sum(offset)) is timed with every column and with the ``columns``
option (informational: Spark prunes no column of a Python data source).
Floors (exit status 1 when missed): kafkaseg >= 70% of the ceiling's rate and within 1.5x of Parquet's time; the 1%
query reads <= 2% of the partition's bytes.

Last, many small segments (``--small-topic-partitions`` partitions of a quiet topic rolled every ~4 KiB, about 175
segments each): ``count(*)`` with the default packing of small slices into input partitions against one input
partition per slice (``openCostInBytes`` = ``splitSize``, what kafkaseg did before packing). Informational.
And many nearly empty topic-partitions (``--idle-topic-partitions``, 4 records each): ``count(*)`` with the default
packing of small topic-partitions together against ``packTopicPartitions=false`` (one task per topic-partition, as
Spark's Kafka source and kafkaseg before it), one timed run each after a warm-up, against a Python source of as
many input partitions that yield nothing (PySpark's own cost per task) and ``kafkaseg.read_arrow`` on the same
dir (no Spark). Informational. ``--mib 0`` runs only these two.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from benchmarks._common import spark_environment  # noqa: E402

spark_environment()

import pyarrow as pa  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition  # noqa: E402

from kafkaseg.scan import iter_batches, read_arrow  # noqa: E402
from kafkaseg.testing import write_benchmark_segment  # noqa: E402


class PrebuiltBatches(DataSource):
    """The ceiling: yields the batches of an Arrow IPC file (memory-mapped), split into ``partitions`` ranges."""

    @classmethod
    def name(cls):
        return "prebuilt_batches"

    def schema(self):
        from kafkaseg.spark import spark_schema

        return spark_schema()

    def reader(self, schema):
        return PrebuiltReader(self.options["path"], int(self.options["partitions"]))


class PrebuiltReader(DataSourceReader):
    def __init__(self, path, partitions):
        self.path, self.n = path, partitions

    def partitions(self):
        with pa.memory_map(self.path) as source:
            count = pa.ipc.open_file(source).num_record_batches
        bounds = [round(i * count / self.n) for i in range(self.n + 1)]
        return [InputPartition((bounds[i], bounds[i + 1])) for i in range(self.n)]

    def read(self, partition):
        lo, hi = partition.value
        with pa.memory_map(self.path) as source:
            reader = pa.ipc.open_file(source)
            for i in range(lo, hi):
                yield reader.get_batch(i)


class EmptyPartitions(DataSource):
    """PySpark's own cost per task: a source of ``partitions`` input partitions that yield nothing."""

    @classmethod
    def name(cls):
        return "empty_partitions"

    def schema(self):
        from kafkaseg.spark import spark_schema

        return spark_schema()

    def reader(self, schema):
        return EmptyReader(int(self.options["partitions"]))


class EmptyReader(DataSourceReader):
    def __init__(self, partitions):
        self.n = partitions

    def partitions(self):
        return [InputPartition(i) for i in range(self.n)]

    def read(self, partition):
        return iter(())


def timed(fn, repeat):
    fn()  # warm-up (Python workers, JIT of the JVM paths)
    best = float("inf")
    result = None
    for _ in range(repeat):
        started = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - started)
    return best, result


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mib", type=int, default=256, help="segment size (MiB); 0 skips the comparison")
    parser.add_argument("--codec", default="none")
    parser.add_argument("--partitions", type=int, default=os.cpu_count() or 2, help="input partitions and cores")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--keep", help="reuse/keep generated data in this directory")
    parser.add_argument("--small-topic-partitions", type=int, default=8,
                        help="partitions of the many-small-segments case (0 skips it)")
    parser.add_argument("--idle-topic-partitions", type=int, default=1000,
                        help="nearly empty topic-partitions of the packTopicPartitions case (0 skips it)")
    args = parser.parse_args(argv)

    work = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="kafkaseg-bench-spark-"))
    ok = True
    if args.mib:
        log_dir = work / f"logs-{args.codec}-{args.mib}"
        tp_dir = log_dir / "bench-0"
        ipc_path = work / f"batches-{args.codec}-{args.mib}.arrow"
        parquet_path = work / f"records-{args.codec}-{args.mib}.parquet"
        if not tp_dir.exists():
            started = time.perf_counter()
            info = write_benchmark_segment(tp_dir, args.mib << 20, codec=args.codec)
            print(f"wrote {info.size / 2**20:.0f} MiB segment, {info.records:,} records in {info.batches:,} batches "
                  f"({time.perf_counter() - started:.1f}s)")
        split_size = max(1 << 20, sum(f.stat().st_size for f in tp_dir.glob("*.log")) // args.partitions + 1)
        if not ipc_path.exists() or not parquet_path.exists():
            batches = list(iter_batches(str(log_dir), upperBound="logEndOffset", splitSize=split_size))
            with pa.OSFile(str(ipc_path), "wb") as sink, pa.ipc.new_file(sink, batches[0].schema) as writer:
                for batch in batches:
                    writer.write_batch(batch)
            pq.write_table(pa.Table.from_batches(batches), parquet_path, compression="snappy",
                           row_group_size=1 << 20)
            del batches

    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    from kafkaseg.spark import last_plan_report, register

    spark = (SparkSession.builder.master(f"local[{args.partitions}]").appName("kafkaseg-bench")
             .config("spark.sql.python.filterPushdown.enabled", "true").config("spark.ui.enabled", "false")
             .config("spark.ui.showConsoleProgress", "false").config("spark.sql.session.timeZone", "UTC")
             .config("spark.driver.memory", "2g").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    register(spark)
    spark.dataSource.register(PrebuiltBatches)

    if args.mib:
        def frames():
            return {
                "ceiling": lambda: spark.read.format("prebuilt_batches").option("partitions", args.partitions)
                .load(str(ipc_path)),
                "kafkaseg": lambda: spark.read.format("kafkaseg").option("filterPushdown", "true").option("upperBound", "logEndOffset")
                .option("splitSize", split_size).load(str(log_dir)),
                "parquet": lambda: spark.read.parquet(str(parquet_path)),
            }

        results = {}
        for name, make in frames().items():
            count_s, count = timed(lambda: make().count(), args.repeat)
            sum_s, total = timed(lambda: make().agg(F.sum(F.length("value"))).first()[0], args.repeat)
            results[name] = (count_s, sum_s, count, total)
        records = results["kafkaseg"][2]
        value_bytes = results["kafkaseg"][3]
        assert all(r[2] == records and r[3] == value_bytes for r in results.values()), results
        print(f"\n{records:,} records, {value_bytes / 2**20:.0f} MiB of values, {args.partitions} partitions, "
              f"codec {args.codec}, PySpark {spark.version}")
        print(f"{'source':<10} {'count(*) s':>11} {'Mrec/s':>8} {'sum(len(value)) s':>18} {'Mrec/s':>8}")
        for name, (count_s, sum_s, _, _) in results.items():
            print(f"{name:<10} {count_s:>11.2f} {records / count_s / 1e6:>8.2f} {sum_s:>18.2f} "
                  f"{records / sum_s / 1e6:>8.2f}")
        for i, query in ((0, "count(*)"), (1, "sum(length(value))")):
            vs_ceiling = results["ceiling"][i] / results["kafkaseg"][i]
            vs_parquet = results["kafkaseg"][i] / results["parquet"][i]
            print(f"{query}: kafkaseg at {vs_ceiling:.0%} of the ceiling's rate (floor 70%), "
                  f"{vs_parquet:.2f}x Parquet's time (floor 1.5x)")
            ok &= vs_ceiling >= 0.70 and vs_parquet <= 1.5

        first, last = 0, records - 1
        lo = first + (last - first) // 2
        hi = lo + records // 100 - 1
        query = spark.read.format("kafkaseg").option("filterPushdown", "true").option("upperBound", "logEndOffset").option("splitSize", split_size) \
            .load(str(log_dir)).where(f"partition = 0 AND offset BETWEEN {lo} AND {hi}")
        started = time.perf_counter()
        n = query.count()
        seconds = time.perf_counter() - started
        report = last_plan_report()
        read = report.read_metrics()["bytes_read"]
        print(f"1% offset range [{lo}, {hi}]: {n:,} records in {seconds:.2f}s; planned {report.bytes_planned:,} bytes "
              f"in {report.segments_planned} segment(s), read {read:,} of {report.bytes_total:,} bytes "
              f"({read / report.bytes_total:.2%}, floor 2%)")
        ok &= n == hi - lo + 1 and read <= 0.02 * report.bytes_total

        # Python data sources get no column pruning from Spark: a metadata query still ships every key and value to
        # the JVM unless the source is told the columns (informational)
        meta = {}
        for label, extra in (("every column", {}), ("columns=partition,offset,timestamp",
                                                    {"columns": "partition,offset,timestamp"})):
            def metadata_query():
                reader = spark.read.format("kafkaseg").option("upperBound", "logEndOffset").option("splitSize", split_size)
                for key, value in extra.items():
                    reader = reader.option(key, value)
                return tuple(reader.load(str(log_dir)).agg(F.count("*"), F.max("timestamp"), F.sum("offset")).first())
            meta[label] = timed(metadata_query, args.repeat)
        assert len({answer for _, answer in meta.values()}) == 1, meta
        for label, (seconds, _) in meta.items():
            print(f"metadata query (count, max(timestamp), sum(offset)), {label}: {seconds:.2f}s "
                  f"({records / seconds / 1e6:.2f} Mrec/s)")
        print(f"metadata query: the columns option is {meta['every column'][0] / meta['columns=partition,offset,timestamp'][0]:.1f}x faster")

    if args.small_topic_partitions:
        small_dir = work / f"small-{args.small_topic_partitions}"
        if not small_dir.exists():
            from kafkaseg.testing import TopicSpec, write_data_dir
            write_data_dir(small_dir, [TopicSpec("quiet", partitions=args.small_topic_partitions,
                                                 records_per_partition=5000, records_per_batch=5, value_size=100,
                                                 segment_bytes=4096)])
        timings = {}
        for label, extra in (("packed (default)", {}), ("one task per slice", {"openCostInBytes": "128m"})):
            def count_small():
                reader = spark.read.format("kafkaseg")
                for key, value in extra.items():
                    reader = reader.option(key, value)
                return reader.load(str(small_dir)).count()
            seconds, n = timed(count_small, args.repeat)
            report = last_plan_report()
            timings[label] = seconds
            print(f"many small segments, {label}: {n:,} records from {report.segments_planned:,} segments "
                  f"({report.bytes_planned / 2**20:.1f} MiB) in {report.input_partitions} input partitions: "
                  f"count(*) {seconds:.2f}s")
        print(f"many small segments: packing is {timings['one task per slice'] / timings['packed (default)']:.1f}x "
              f"faster")
    if args.idle_topic_partitions:
        idle_dir = work / f"idle-{args.idle_topic_partitions}"
        if not idle_dir.exists():
            from kafkaseg.testing import TopicSpec, write_data_dir
            write_data_dir(idle_dir, [TopicSpec("idle", partitions=args.idle_topic_partitions,
                                                records_per_partition=4, records_per_batch=2, value_size=100)])
        timings = {}
        for label, extra in (("packed (default)", {}), ("one task per topic-partition",
                                                         {"packTopicPartitions": "false"})):
            def count_idle():
                reader = spark.read.format("kafkaseg")
                for key, value in extra.items():
                    reader = reader.option(key, value)
                return reader.load(str(idle_dir)).count()
            seconds, n = timed(count_idle, 1)
            report = last_plan_report()
            timings[label] = seconds
            print(f"nearly empty topic-partitions, {label}: {n:,} records from {report.segments_planned:,} "
                  f"segments in {report.input_partitions} input partitions: count(*) {seconds:.2f}s")
        spark.dataSource.register(EmptyPartitions)
        seconds, _ = timed(lambda: spark.read.format("empty_partitions")
                           .option("partitions", args.idle_topic_partitions).load().count(), 1)
        print(f"nearly empty topic-partitions, PySpark's own cost: a Python source of {args.idle_topic_partitions} "
              f"input partitions that yield nothing: count(*) {seconds:.2f}s")
        started = time.perf_counter()
        n = read_arrow(str(idle_dir)).num_rows
        print(f"nearly empty topic-partitions, kafkaseg.read_arrow (no Spark): {n:,} records in "
              f"{time.perf_counter() - started:.2f}s")
        print(f"nearly empty topic-partitions: packing is "
              f"{timings['one task per topic-partition'] / timings['packed (default)']:.1f}x faster")
    spark.stop()
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)
    print("floors met" if ok else "FLOORS MISSED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
