"""Retention audit of a cluster's Kafka log dirs with Spark: what the brokers' retention would delete now.

Per topic-partition: the effective cleanup policy and retention settings (each with its source), segments,
bytes, offsets, high watermark, oldest/newest data, what retention would delete now (segments, bytes, the new log
start offset, which rule: log-start-offset breach, size or time), how overdue it is, whether the high watermark
holds deletion back, ``.deleted`` files left behind, and for compacted topics the log cleaner's dirty ratio.
The rules are :mod:`kafkaseg.retention` (Kafka's ``UnifiedLog.deleteOldSegments`` and ``LogCleanerManager``);
``kafkaseg retention`` runs the same audit without Spark.

Try it on the built-in sample::

    ./spark-submit.sh jobs/retention_audit.py --sample --now 2023-11-22T00:00:00Z

Real use (every executor must see ``--data-dir`` at the same path, or a URI pyarrow can open)::

    ./spark-submit.sh jobs/retention_audit.py --data-dir /mnt/broker-1/data --data-dir /mnt/broker-2/data \\
        --config conf/retention.toml --output /lake/retention_audit [--format delta|parquet|csv|json] \\
        [--mode error|overwrite|append] [--segments /lake/retention_segments] [--topic orders] \\
        [--topic-pattern 'logs-.*'] [--now 2024-05-01T00:00:00Z] [--fail-on-overdue]

Steps: extract (the driver discovers partitions, chooses one replica each and resolves every topic's config, from
the TOML file and the KRaft metadata log), transform (each partition audited on an executor by
:func:`kafkaseg.retention.audit`, from indexes and checkpoints only), load (one row per partition to ``--output``,
with ``--segments`` one row per segment to that path; a summary on stdout: totals and the most overdue
partitions). Exit status: 0; 1 when a partition could not be audited (its row has ``error``; the table is still
written) or on another failure; 2 for a usage or input problem (before Spark starts); 3 with
``--fail-on-overdue`` when a partition is past retention.ms by more than a retention check interval (5 minutes).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path
from typing import Iterable, Sequence

import pyarrow as pa

from jobs.export import (
    WRITE_MODES,
    UsageError,
    check_format,
    check_output_location,
    generate_sample,
    job_parser,
    run_in_session,
)
from kafkaseg.retention import EXIT_OVERDUE, exit_status  # the exit rule kafkaseg retention shares
from kafkaseg.spark.jobs import positive_int

PARTITION_SCHEMA = pa.schema([
    ("topic", pa.string()), ("partition", pa.int32()), ("log_dir", pa.string()), ("path", pa.string()),
    ("now_ms", pa.int64()),
    ("cleanup_policy", pa.string()), ("cleanup_policy_source", pa.string()),
    ("retention_ms", pa.int64()), ("retention_ms_source", pa.string()),
    ("retention_bytes", pa.int64()), ("retention_bytes_source", pa.string()), ("remote_storage", pa.bool_()),
    ("segment_count", pa.int64()), ("total_bytes", pa.int64()),
    ("log_start_offset", pa.int64()), ("checkpoint_log_start_offset", pa.int64()), ("first_offset", pa.int64()),
    ("log_end_offset", pa.int64()), ("high_watermark", pa.int64()),
    ("oldest_timestamp", pa.int64()), ("newest_timestamp", pa.int64()),
    ("deletable_segments", pa.int64()), ("deletable_bytes", pa.int64()), ("new_log_start_offset", pa.int64()),
    ("deletable_by_log_start", pa.int64()), ("deletable_by_size", pa.int64()), ("deletable_by_time", pa.int64()),
    ("overdue_ms", pa.int64()), ("size_overdue_ms", pa.int64()), ("lagging", pa.bool_()),
    ("bytes_over_retention", pa.int64()),
    ("blocked_by_high_watermark", pa.bool_()), ("rolls_active", pa.bool_()),
    ("pending_deleted_files", pa.int64()), ("pending_deleted_bytes", pa.int64()),
    ("dirty_ratio", pa.float64()), ("min_cleanable_dirty_ratio", pa.float64()), ("dirty_ratio_exceeded", pa.bool_()),
    ("cleanable_bytes", pa.int64()), ("max_compaction_lag_exceeded_ms", pa.int64()), ("compaction_due", pa.bool_()),
    ("notes", pa.string()), ("error", pa.string()),
])
SEGMENT_SCHEMA = pa.schema([
    ("topic", pa.string()), ("partition", pa.int32()), ("log_dir", pa.string()), ("now_ms", pa.int64()),
    ("base_offset", pa.int64()), ("next_offset", pa.int64()), ("size", pa.int64()), ("path", pa.string()),
    ("largest_timestamp", pa.int64()), ("timestamp_source", pa.string()), ("deleted_by", pa.string()),
    ("overdue_ms", pa.int64()), ("blocked_by_high_watermark", pa.bool_()),
])
_DDL_TYPES = {pa.string(): "STRING", pa.int32(): "INT", pa.int64(): "BIGINT", pa.bool_(): "BOOLEAN",
              pa.float64(): "DOUBLE"}


def ddl(schema: pa.Schema) -> str:
    """Spark's DDL for ``schema`` (the types used here)."""
    return ", ".join(f"`{f.name}` {_DDL_TYPES[f.type]}" for f in schema)


# --------------------------------------------------------------------------------------------------------------------
# arguments

def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = job_parser("retention_audit.py", __doc__, "audit")
    parser.add_argument("--config", metavar="TOML", help="retention settings (see conf/retention.toml)")
    parser.add_argument("--now", help="audit as of this time: epoch ms or ISO-8601 (default: the current time)")
    parser.add_argument("--output", metavar="PATH",
                        help="per-partition table (default with --sample: <work-dir>/retention-audit)")
    parser.add_argument("--format", choices=("delta", "parquet", "csv", "json"), default="delta",
                        help="(default delta)")
    parser.add_argument("--mode", choices=WRITE_MODES, default=None,
                        help="when the output exists (default: error; overwrite with --sample)")
    parser.add_argument("--segments", metavar="PATH", help="also write one row per segment to this path")
    parser.add_argument("--topic", action="append", default=[], help="only this topic (repeatable)")
    parser.add_argument("--topic-pattern", help="only topics whose whole name matches this regex")
    parser.add_argument("--replicas", choices=("highestHighWatermark", "all"), default="highestHighWatermark",
                        help="audit one replica of each partition (default) or every copy found (each broker's "
                             "retention runs on its own replica; rows differ by log_dir)")
    parser.add_argument("--tasks", type=positive_int, default=None,
                        help="audit tasks, 1 or more (default: Spark's default parallelism)")
    parser.add_argument("--top", type=int, default=10, help="most overdue partitions to print (default 10)")
    parser.add_argument("--fail-on-overdue", action="store_true", help=f"exit {EXIT_OVERDUE} when a partition is "
                        "lagging: past retention.ms, or over retention.bytes, for longer than a retention check "
                        "interval, held back by the high watermark or not (for scheduled checks)")
    parser.add_argument("--work-dir", default="out", help="where --sample puts its data (default ./out)")
    args = parser.parse_args(argv)
    if args.output is None:
        if not args.sample:
            parser.error("--output is required with --data-dir")
        args.output = str(Path(args.work_dir) / "retention-audit")
    if args.mode is None:
        args.mode = "overwrite" if args.sample else "error"
    return args


# --------------------------------------------------------------------------------------------------------------------
# extract (driver, no JVM)

def prepare(args: argparse.Namespace):
    """What the job decides before Spark starts: the sample data dir, the time, the config file, the partitions
    and their configs (:func:`kafkaseg.retention.plan_audit`), and the outputs' locations. Raises
    ``InvalidOptionError``/``LayoutError``/``FileExistsError`` (usage errors) or another ``KafkaSegError``."""
    from kafkaseg.retention import parse_now, plan_audit
    from kafkaseg.spark.tables import check_delta_append
    from kafkaseg.storage.fs import join, stat
    from kafkaseg.topic_config import load_config_file

    paths = generate_sample(args.work_dir)[0] if args.sample else args.data_dir
    now = parse_now(args.now)
    plan = plan_audit(paths, load_config_file(args.config), topics=args.topic, topic_pattern=args.topic_pattern,
                      all_replicas=args.replicas == "all")
    for flag, output in (("--output", args.output), ("--segments", args.segments)):
        if not output:
            continue
        check_output_location(output, paths, flag)
        check_format(output, args.format, flag, ("delta", "parquet", "csv", "json"), args.mode)
        if args.mode == "error" and stat(join(output, "_delta_log") if args.format == "delta" else output):
            raise FileExistsError(f"{output} already exists (use --mode overwrite or append)")
        if args.mode == "append" and args.format == "delta":
            # before Spark starts: another job's table (a compacted or export table) is refused, not widened
            check_delta_append(output, PARTITION_SCHEMA if flag == "--output" else SEGMENT_SCHEMA, add_columns=True)
    return paths, now, plan


# --------------------------------------------------------------------------------------------------------------------
# transform (executors; the rules are kafkaseg.retention, pure and tested without Spark)

def audit_targets(targets: Iterable, now_ms: int) -> Iterable:
    """:func:`kafkaseg.retention.audit` for each ``(PartitionDir, TopicConfig)``: what each task runs."""
    from kafkaseg.retention import audit

    return [audit(pdir, config, now_ms) for pdir, config in targets]


def transform(spark, plan, now_ms: int, tasks: int | None = None):
    """The audits as a persisted RDD of :class:`~kafkaseg.retention.PartitionAudit`, one partition per item,
    spread over ``tasks`` tasks."""
    from pyspark import StorageLevel

    targets = list(plan.targets)
    sc = spark.sparkContext
    slices = max(1, min(len(targets), tasks or sc.defaultParallelism))
    return (sc.parallelize(targets, slices).mapPartitions(lambda it: audit_targets(it, now_ms))
            .persist(StorageLevel.MEMORY_AND_DISK))


# --------------------------------------------------------------------------------------------------------------------
# load

def write(df, output: str, fmt: str, mode: str, schema: pa.Schema) -> None:
    """``df`` to ``output``: Delta (executors write Parquet, the driver commits with delta-rs:
    :mod:`kafkaseg.spark.tables`), Parquet, CSV (with a header) or JSON lines with Spark's writers."""
    from kafkaseg.spark.tables import write_delta, write_parquet

    if fmt == "delta":
        write_delta(df, output, mode, [], schema, add_columns=True)  # columns a later kafkaseg added
    elif fmt == "parquet":
        write_parquet(df, output, mode, [])
    else:
        writer = df.write.mode("errorifexists" if mode == "error" else mode)
        (writer.option("header", "true").csv(output) if fmt == "csv" else writer.json(output))


def print_summary(summary: dict, out=None) -> None:
    out = out or sys.stdout
    unit = "replicas" if summary.get("replicas", summary["partitions"]) != summary["partitions"] else "partitions"
    print(f"{summary['partitions']} partitions" + (f" ({summary['replicas']} replicas)" if unit == "replicas" else "")
          + f", {summary['segments']:,} segments, {summary['bytes']:,} bytes", file=out)
    print(f"retention would delete {summary['deletable_segments']:,} segments ({summary['deletable_bytes']:,} bytes) "
          f"in {summary['deletable_partitions']} {unit}; {summary['lagging_partitions']} {unit} overdue by "
          f"more than a retention check interval; {summary['blocked_by_high_watermark']} held back by the high "
          f"watermark; {summary['pending_deleted_files']} .deleted files pending "
          f"({summary['pending_deleted_bytes']:,} bytes); {summary['compaction_due']} compacted {unit} due for "
          "cleaning", file=out)
    if summary.get("bounded_by_mtimes"):  # (the overdue count above is low for them: say so, not a bare 0)
        print(f"{summary['bounded_by_mtimes']} {unit}' ages are bounded by file mtimes newer than their records "
              "(written or copied after them: a backfill, a copy that did not keep mtimes, the --sample just "
              "written): pass --now to audit as of an earlier time, or see their rows' notes", file=out)
    if summary["most_overdue"]:
        width = max(len(r["partition"]) for r in summary["most_overdue"])
        print(f"{'most overdue':<{width}}  {'overdue':>14}  {'segments':>8}  {'bytes':>14}", file=out)
        from kafkaseg.retention import format_duration

        for row in summary["most_overdue"]:
            print(f"{row['partition']:<{width}}  {format_duration(row['owed_ms']):>14}  "
                  f"{row['deletable_segments']:>8}  {row['deletable_bytes']:>14,}", file=out)
    for error in summary["errors"]:
        print(f"not audited: {error['partition']} ({error['path']}): {error['error']}", file=out)


def run(spark, args: argparse.Namespace, prepared=None) -> dict:
    """The job on an existing SparkSession; returns the summary (and the rows written, for tests)."""
    from kafkaseg.retention import partition_row, segment_rows, summarize

    paths, now, plan = prepared if prepared is not None else prepare(args)
    if plan.cluster.source:
        print(f"topic configs from the metadata log {plan.cluster.source} ({plan.cluster.records} config records)")
    for note in plan.cluster.notes:
        print(f"metadata log: {note}")
    audits = transform(spark, plan, now, args.tasks)
    try:
        # one small object per partition: the segment detail stays on the executors
        collected = audits.map(lambda a: dataclasses.replace(a, segments=())).collect()
        summary = summarize(collected, top=args.top)
        rows = [partition_row(a) for a in collected]
        df = spark.createDataFrame([tuple(r[f.name] for f in PARTITION_SCHEMA) for r in rows], ddl(PARTITION_SCHEMA))
        write(df.coalesce(1), args.output, args.format, args.mode, PARTITION_SCHEMA)
        print(f"wrote {len(rows)} partition rows to {args.format} {args.output}")
        if args.segments:
            names = SEGMENT_SCHEMA.names
            seg_rdd = audits.flatMap(lambda a: [tuple(r[n] for n in names) for r in segment_rows(a)])
            write(spark.createDataFrame(seg_rdd, ddl(SEGMENT_SCHEMA)), args.segments, args.format, args.mode,
                  SEGMENT_SCHEMA)
            print(f"wrote {summary['segments']} segment rows to {args.format} {args.segments}")
    finally:
        audits.unpersist()
    print_summary(summary)
    for note in plan.replica_notes:
        print(note)
    if plan.deletions_line():
        print(plan.deletions_line())
    return {"summary": summary, "rows": rows}


def main(argv: Sequence[str] | None = None) -> int:
    """Exit status: see the module docstring. Errors are one line on stderr."""
    from kafkaseg.spark.jobs import report_error

    args = parse_args(argv)
    try:
        prepared = prepare(args)
        results = []
        run_in_session("kafkaseg-retention-audit", lambda spark: results.append(run(spark, args, prepared)))
    except Exception as exc:  # noqa: BLE001 - report_error re-raises what it does not know
        return report_error(exc, "retention_audit.py", usage=(UsageError,))
    return exit_status(results[0]["summary"], args.fail_on_overdue)


if __name__ == "__main__":
    sys.exit(main())
