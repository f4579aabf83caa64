"""Export Kafka log dirs to a Delta (or Parquet) table with Spark and the kafkaseg data source.

Try it on the built-in sample (a few MB of realistic topics: codecs, transactions, compaction leftovers, legacy
formats), generated on the fly::

    ./spark-submit.sh jobs/export.py --sample

Real use (every executor must see ``--data-dir`` at the same path, or a URI pyarrow can open)::

    ./spark-submit.sh jobs/export.py --data-dir /var/lib/kafka/data --output /lake/kafka_raw \\
        [--format delta|parquet] [--mode error|overwrite|append] [--partition-by topic] \\
        [--option subscribe=orders,payments] [--option kafka.isolation.level=read_committed] ...

Steps: :func:`extract` (the kafkaseg source; ``--option`` passes any kafkaseg/Spark-Kafka read option),
:func:`summarize` (per topic-partition counts and offset ranges, printed), :func:`to_export_batch` (a pure Arrow
transform: the Kafka columns plus a UTC ``date`` column, tested without Spark), then :func:`load_delta` (delta-rs
``write_deltalake``, ONE commit; no delta-spark jar needed) or :func:`load_parquet` (pyarrow, hive-partitioned).
Both consume :func:`export_stream`: the driver fetches about ``--chunk-records`` records per query (small partitions of a
topic together, big ones in pushed-down ``offset`` ranges, so only those segments are read and the driver holds one
chunk at a time). (``mapInArrow`` would write from the executors, but PySpark 4.3 requires pandas for it.)
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Iterator, Sequence

import pyarrow as pa
import pyarrow.compute as pc

FORMAT = "kafkaseg"
DEFAULT_CHUNK_RECORDS = 500_000
NO_TIMESTAMP_MICROS = -1000  # Kafka's "no timestamp" (-1 ms), as Spark and kafkaseg show it


# --------------------------------------------------------------------------------------------------------------------
# arguments

def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="export.py", description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--sample", action="store_true",
                        help="generate kafkaseg's sample log dir (under --work-dir) and export it")
    source.add_argument("--data-dir", action="append", metavar="DIR",
                        help="a Kafka log dir, topic-partition dir or glob (repeat for several, e.g. every log.dirs)")
    parser.add_argument("--output", metavar="PATH", help="table path (default with --sample: <work-dir>/sample-<format>)")
    parser.add_argument("--format", choices=("delta", "parquet"), default="delta")
    parser.add_argument("--mode", choices=("error", "overwrite", "append"), default=None,
                        help="when the table exists (default: error; overwrite with --sample)")
    parser.add_argument("--partition-by", default="topic", help="comma-separated columns, '' for none (default topic)")
    parser.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                        help="a kafkaseg read option, e.g. includeHeaders=true, subscribe=orders (repeatable)")
    parser.add_argument("--chunk-records", type=int, default=DEFAULT_CHUNK_RECORDS,
                        help="delta: offsets per chunk fetched to the driver (bounds driver memory)")
    parser.add_argument("--work-dir", default="out", help="where --sample puts its data (default ./out)")
    args = parser.parse_args(argv)
    options = {}
    for item in args.option:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            parser.error(f"--option must look like KEY=VALUE, got {item!r}")
        options[key.strip()] = value
    args.options = options
    if args.output is None:
        if not args.sample:
            parser.error("--output is required with --data-dir")
        args.output = str(Path(args.work_dir) / f"sample-{args.format}")
    if args.mode is None:
        args.mode = "overwrite" if args.sample else "error"
    args.partition_by = [c.strip() for c in args.partition_by.split(",") if c.strip()]
    if args.chunk_records < 1:
        parser.error("--chunk-records must be positive")
    return args


# --------------------------------------------------------------------------------------------------------------------
# transform (pure Arrow, no Spark)

def export_schema(source: pa.Schema) -> pa.Schema:
    """The exported table's schema: every column read, plus ``date`` (the record's UTC date)."""
    return source.append(pa.field("date", pa.date32()))


def to_export_batch(batch: pa.RecordBatch) -> pa.RecordBatch:
    """One batch of kafkaseg rows -> the exported form: the same columns plus ``date`` = the UTC calendar date of
    ``timestamp`` (null for records without a timestamp: magic 0, shown as -1 ms)."""
    timestamps = batch.column(batch.schema.get_field_index("timestamp"))
    micros = pc.cast(timestamps, pa.int64())  # microseconds since the epoch, UTC
    dates = pc.cast(pc.cast(timestamps, pa.timestamp("us")), pa.date32())  # UTC wall clock -> its date
    dates = pc.if_else(pc.equal(micros, NO_TIMESTAMP_MICROS), pa.scalar(None, pa.date32()), dates)
    return pa.RecordBatch.from_arrays(list(batch.columns) + [dates], schema=export_schema(batch.schema))


def export_batches(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """:func:`to_export_batch` over a stream (the ``mapInArrow`` function for the Parquet path)."""
    for batch in batches:
        if batch.num_rows:
            yield to_export_batch(batch)


def offset_chunks(first: int, last: int, size: int) -> list[tuple[int, int]]:
    """``[lo, hi)`` ranges of at most ``size`` offsets covering ``first..last`` inclusive."""
    return [(lo, min(lo + size, last + 1)) for lo in range(first, last + 1, size)]


def plan_chunks(summary, size: int) -> list[tuple[str, tuple[int, ...], int | None, int | None]]:
    """Queries that fetch everything in ``summary`` with at most about ``size`` records each:
    ``(topic, partitions, lo, hi)``. Small partitions of a topic are grouped (``partition IN (...)``, lo/hi None);
    a partition with more than ``size`` records is split into offset ranges ``[lo, hi)``. Every query is a
    conjunction, so all of it is pushed down."""
    chunks: list[tuple[str, tuple[int, ...], int | None, int | None]] = []
    group: list[int] = []
    group_topic, group_records = None, 0

    def flush() -> None:
        nonlocal group, group_records
        if group:
            chunks.append((group_topic, tuple(group), None, None))
        group, group_records = [], 0

    for topic, partition, records, first, last in sorted(summary):
        if topic != group_topic:
            flush()
            group_topic = topic
        if records > size:
            flush()
            chunks.extend((topic, (partition,), lo, hi) for lo, hi in offset_chunks(first, last, size))
            continue
        if group and group_records + records > size:
            flush()
        group.append(partition)
        group_records += records
    flush()
    return chunks


# --------------------------------------------------------------------------------------------------------------------
# extract / load (Spark)

def extract(spark, paths: Sequence[str], options: dict):
    """A fresh kafkaseg DataFrame for one query. One ``load()`` per query is what makes ``filterPushdown=true``
    safe on PySpark versions that reuse a relation's pushed-down plan (see kafkaseg.spark.source)."""
    reader = spark.read.format(FORMAT).option("filterPushdown", "true")
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load(list(paths))


def summarize(spark, paths: Sequence[str], options: dict) -> list[tuple[str, int, int, int, int]]:
    """``(topic, partition, records, first offset, last offset)`` per topic-partition, sorted."""
    from pyspark.sql import functions as F

    df = extract(spark, paths, options)
    rows = (df.groupBy("topic", "partition")
            .agg(F.count(F.lit(1)).alias("records"), F.min("offset").alias("first"), F.max("offset").alias("last"))
            .orderBy("topic", "partition").collect())
    return [(r.topic, r.partition, r.records, r.first, r.last) for r in rows]


def print_summary(summary, out=sys.stdout) -> None:
    width = max([len(f"{t}-{p}") for t, p, *_ in summary] + [15])
    print(f"{'topic-partition':<{width}}  {'records':>10}  {'offsets':>21}", file=out)
    for topic, partition, records, first, last in summary:
        print(f"{f'{topic}-{partition}':<{width}}  {records:>10,}  {f'{first}..{last}':>21}", file=out)
    print(f"{'total':<{width}}  {sum(s[2] for s in summary):>10,}", file=out)


def export_stream(spark, paths, options, summary, chunk_records) -> pa.RecordBatchReader:
    """The exported rows as one Arrow stream on the driver, fetched in the queries of :func:`plan_chunks` (each a
    fresh, pushed-down query of about ``chunk_records`` records), through :func:`to_export_batch`."""
    from pyspark.sql import functions as F

    source_schema = _arrow_schema(options)

    def chunks() -> Iterator[pa.RecordBatch]:
        for topic, partitions, lo, hi in plan_chunks(summary, chunk_records):
            condition = (F.col("topic") == topic) & F.col("partition").isin(*partitions)
            if lo is not None:
                condition = condition & (F.col("offset") >= lo) & (F.col("offset") < hi)
            for batch in extract(spark, paths, options).where(condition).toArrow().cast(source_schema).to_batches():
                if batch.num_rows:
                    yield to_export_batch(batch)

    return pa.RecordBatchReader.from_batches(export_schema(source_schema), chunks())


def load_delta(stream: pa.RecordBatchReader, output: str, mode: str, partition_by: list[str]) -> None:
    """One delta-rs commit of the whole stream."""
    from deltalake import write_deltalake

    write_deltalake(output, stream, mode=mode, partition_by=partition_by or None)


def load_parquet(stream: pa.RecordBatchReader, output: str, mode: str, partition_by: list[str]) -> None:
    """Hive-partitioned Parquet files (pyarrow). ``error`` refuses a non-empty output, ``overwrite`` replaces the
    partitions written, ``append`` adds files beside existing ones."""
    import pyarrow.dataset as ds

    target = Path(output)
    if mode == "error" and target.exists() and any(target.iterdir()):
        raise SystemExit(f"{output} exists and is not empty (use --mode overwrite or append)")
    ds.write_dataset(stream, output, format="parquet", partitioning=partition_by or None,
                     partitioning_flavor="hive" if partition_by else None,
                     basename_template=f"part-{time.time_ns()}-{{i}}.parquet",
                     existing_data_behavior="delete_matching" if mode == "overwrite" else "overwrite_or_ignore")


def _arrow_schema(options: dict) -> pa.Schema:
    from kafkaseg.spark import read_options
    from kafkaseg.schema import arrow_schema

    parsed = read_options({**options, "path": "."})
    return arrow_schema(parsed.include_headers, parsed.include_metadata)


# --------------------------------------------------------------------------------------------------------------------
# main

def run(spark, args: argparse.Namespace) -> dict:
    """The job on an existing SparkSession; returns what it did (for tests and the final report line)."""
    started = time.perf_counter()
    manifest = None
    paths = args.data_dir
    if args.sample:
        from kafkaseg.testing import sample_data_dir

        Path(args.work_dir).mkdir(parents=True, exist_ok=True)
        data = Path(tempfile.mkdtemp(prefix="sample-kafka-logs-", dir=args.work_dir))
        manifest = sample_data_dir(data)
        paths = [str(data)]
        print(f"sample log dir: {data} ({manifest.record_count:,} records in {len(manifest.partitions)} "
              f"topic-partitions)")
    summary = summarize(spark, paths, args.options)
    print_summary(summary)
    total = sum(s[2] for s in summary)
    if manifest is not None and not args.options and total != manifest.record_count:
        raise SystemExit(f"read {total} records but the sample holds {manifest.record_count}")
    stream = export_stream(spark, paths, args.options, summary, args.chunk_records)
    load = load_parquet if args.format == "parquet" else load_delta
    load(stream, args.output, args.mode, args.partition_by)
    seconds = time.perf_counter() - started
    print(f"wrote {total:,} records to {args.format} table {args.output} in {seconds:.1f}s")
    return {"paths": paths, "output": args.output, "records": total, "summary": summary, "manifest": manifest}


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.appName("kafkaseg-export")
    if "PYSPARK_GATEWAY_PORT" not in os.environ:  # plain `python jobs/export.py`, not spark-submit
        builder = (builder.master("local[*]").config("spark.sql.python.filterPushdown.enabled", "true")
                   .config("spark.sql.session.timeZone", "UTC"))
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel(os.environ.get("KAFKASEG_SPARK_LOG_LEVEL_JVM", "WARN"))
    try:
        from kafkaseg.spark import register

        register(spark)  # harmless when PySpark already found pyspark_kafkaseg on its own
        run(spark, args)
    finally:
        spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
