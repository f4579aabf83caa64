"""Export Kafka log dirs to a Delta (or Parquet) table with Spark and the kafkaseg data source.

Try it on the built-in sample (a few MB of realistic topics: codecs, transactions, compaction leftovers, legacy
formats), generated on the fly::

    ./spark-submit.sh jobs/export.py --sample

Real use (every executor must see ``--data-dir`` at the same path, or a URI pyarrow can open)::

    ./spark-submit.sh jobs/export.py --data-dir /var/lib/kafka/data --output /lake/kafka_raw \\
        [--format delta|parquet] [--mode error|overwrite|append] [--partition-by topic] \\
        [--option subscribe=orders,payments] [--option kafka.isolation.level=read_committed] ...

Steps: :func:`extract` (the kafkaseg source; ``--option`` passes any kafkaseg/Spark-Kafka read option),
:func:`summarize` (per topic-partition counts and offset ranges, printed), :func:`with_export_columns` (the
transform: the Kafka columns plus the record's UTC ``date``), then :func:`load`: executors write the data files
(Spark's Parquet writer) and, for Delta, the driver commits them in one delta-rs transaction
(:mod:`kafkaseg.spark.tables`; no delta-spark jar needed). No record passes through the driver.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Sequence

import pyarrow as pa

FORMAT = "kafkaseg"
NO_TIMESTAMP_MICROS = -1000  # Kafka's "no timestamp" (-1 ms), as Spark and kafkaseg show it
MICROS_PER_DAY = 86_400_000_000


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
    return args


# --------------------------------------------------------------------------------------------------------------------
# transform

def export_schema(source: pa.Schema) -> pa.Schema:
    """The exported table's schema: every column read, plus ``date`` (the record's UTC date)."""
    return source.append(pa.field("date", pa.date32()))


def with_export_columns(df):
    """The exported form of kafkaseg rows: every column plus ``date``, the UTC calendar date of ``timestamp``
    (null for records without a timestamp: magic 0, shown as -1 ms). Computed from the microseconds, so it does
    not depend on the session time zone."""
    from pyspark.sql import functions as F

    micros = F.unix_micros(F.col("timestamp"))
    day = F.date_from_unix_date(F.floor(micros / MICROS_PER_DAY).cast("int"))
    return df.withColumn("date", F.when(micros == NO_TIMESTAMP_MICROS, F.lit(None).cast("date")).otherwise(day))


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


def load(df, args: argparse.Namespace, source_schema: pa.Schema) -> dict:
    """Write the exported rows from the executors: Parquet with Spark's writer, Delta with Spark's Parquet writer
    and one delta-rs commit (:mod:`kafkaseg.spark.tables`)."""
    from kafkaseg.spark.tables import write_delta, write_parquet

    if args.format == "parquet":
        write_parquet(df, args.output, args.mode, args.partition_by)
        return {}
    return write_delta(df, args.output, args.mode, args.partition_by, export_schema(source_schema))


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
    committed = load(with_export_columns(extract(spark, paths, args.options)), args, _arrow_schema(args.options))
    if committed and committed["records"] != total:
        raise SystemExit(f"committed {committed['records']} records but read {total}")
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
