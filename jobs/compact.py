"""Compact Kafka topics into a Delta table of their latest state per key, and keep it current run after run.

Try it on the built-in sample (its compacted changelog, transactions, keyless topics), generated on the fly::

    ./spark-submit.sh jobs/compact.py --sample --topics users-changelog,payments

Scheduled runs (every executor must see ``--data-dir`` at the same path, or a URI pyarrow can open)::

    ./spark-submit.sh jobs/compact.py --data-dir /var/lib/kafka/data --topics users --output /lake/users_state \\
        [--config conf/compaction.toml] [--mode auto|full|incremental] [--on-data-loss fail|rebuild] \\
        [--option includeHeaders=true] ...

Steps: :func:`kafkaseg.compacted_table.prepare_run` (driver, no JVM: the table's recorded offsets, the partitions'
bounds, data-loss and incarnation checks, the ranges to read), :func:`extract` (the kafkaseg source, pinned to
those ranges, read_committed), :func:`latest_per_key` (the transform, on the executors: per ``(topic, partition,
key)`` the row with the highest offset), then :func:`load`: a full rebuild has the executors write the live rows
as Parquet and the driver commit them in one delta-rs transaction; an incremental run has the executors stage the
change set (tombstones included) as Parquet and the driver merge it with ``DeltaTable.merge`` in one commit that
also records the new offsets. See docs/jobs.md "Compaction to Delta".
"""

from __future__ import annotations

import argparse
import sys
import time
import uuid
from pathlib import Path
from typing import Sequence

from jobs.export import (
    UsageError,
    check_format,
    check_output_location,
    check_partition_values,
    extract,
    generate_sample,
    job_parser,
    parse_option_items,
    run_in_session,
    scan_options,
)
from kafkaseg.storage.fs import redact

STAGING_DIR = "_kafkaseg_staging"  # inside the table: change sets of incremental runs, removed after each merge


# --------------------------------------------------------------------------------------------------------------------
# arguments

def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = job_parser("compact.py", __doc__, "compact")
    parser.add_argument("--output", metavar="PATH",
                        help="the Delta table (default with --sample: <work-dir>/sample-compacted)")
    parser.add_argument("--topics", metavar="T1,T2", help="topics to compact (the read option subscribe)")
    parser.add_argument("--config", metavar="TOML", help="compaction settings (see conf/compaction.toml)")
    parser.add_argument("--mode", choices=("auto", "full", "incremental"), default="auto",
                        help="auto (default): incremental when the table exists, else full; full: rebuild the "
                             "table from the log; incremental: merge what is new (the table must exist)")
    parser.add_argument("--on-data-loss", choices=("fail", "rebuild"), default=None,
                        help="when the table's offsets cannot be continued (overrides the config's on_data_loss)")
    parser.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                        help="a kafkaseg read option, e.g. includeHeaders=true (repeatable)")
    parser.add_argument("--work-dir", default="out", help="where --sample puts its data (default ./out)")
    args = parser.parse_args(argv)
    options = parse_option_items(parser, args.option)
    if args.topics is not None:
        if any(k.strip().lower() in ("subscribe", "assign", "subscribepattern") for k in options):
            parser.error("--topics and --option subscribe/assign/subscribePattern are exclusive")
        options["subscribe"] = args.topics
    args.options = options
    if args.output is None:
        if not args.sample:
            parser.error("--output is required with --data-dir")
        args.output = str(Path(args.work_dir) / "sample-compacted")
    return args


def load_config(args: argparse.Namespace):
    from kafkaseg.compaction import CompactionConfig

    config = CompactionConfig.load(args.config) if args.config else CompactionConfig()
    return config.with_changes(on_data_loss=args.on_data_loss)


# --------------------------------------------------------------------------------------------------------------------
# transform (Spark)

def latest_per_key(df):
    """The change set of ``df`` (kafkaseg rows) on the executors: per ``(topic, partition, key)`` the row with
    the highest offset (``max_by``: one aggregation, no sort), tombstones kept, keyless rows dropped; the columns
    of ``df`` in its order. The Spark twin of :func:`kafkaseg.compaction.latest_per_key`."""
    from pyspark.sql import functions as F

    identity = ("topic", "partition", "key")
    rest = [c for c in df.columns if c not in identity]
    latest = (df.where(F.col("key").isNotNull()).groupBy(*identity)
              .agg(F.max_by(F.struct(*rest), F.col("offset")).alias("latest")))
    return latest.select(*[F.col(c) if c in identity else F.col(f"latest.{c}").alias(c) for c in df.columns])


def drop_expired(spark, df, expired):
    """``df`` (compacted rows) without the rows below their partition's log start offset in ``expired``
    (``{(topic, partition): offset}``): the Spark twin of :func:`kafkaseg.compaction.drop_expired` (a broadcast
    join of the bounds, one row per partition)."""
    from pyspark.sql import functions as F

    if not expired:
        return df
    bounds = spark.createDataFrame([(t, int(p), int(o)) for (t, p), o in sorted(expired.items())],
                                   "topic string, partition int, _kafkaseg_log_start long")
    joined = df.join(F.broadcast(bounds), ["topic", "partition"], "left")
    kept = joined.where(F.col("_kafkaseg_log_start").isNull() | (F.col("offset") >= F.col("_kafkaseg_log_start")))
    return kept.select(*df.columns)


# --------------------------------------------------------------------------------------------------------------------
# load

def load(spark, changes, plan) -> dict:
    """Write ``changes`` (:func:`latest_per_key`'s) into the table as ``plan`` says: a rebuild commits the live
    rows' files in one delta-rs transaction; an incremental run either stages the change set as Parquet
    (executors), merges it from the driver in one commit recording the new offsets and removes the staging folder,
    or, when the files it may rewrite exceed ``driver_merge_max_bytes``, has the executors rewrite them
    (:func:`rewrite_on_executors`)."""
    from pyspark.sql import functions as F

    from kafkaseg.compacted_table import (
        commit_properties,
        conflicts_reported,
        merge_staged_parquet,
        merges_on_driver,
        remove_stale_staging,
        remove_staging,
        rewrite_scope,
        staging_name,
    )
    from kafkaseg.spark.tables import write_delta, write_parquet

    if plan.full:
        started = time.perf_counter()
        with conflicts_reported(plan.output):
            committed = write_delta(changes.where(F.col("value").isNotNull()), plan.output, "overwrite",
                                    plan.partition_by, plan.schema,
                                    commit_properties=commit_properties(plan.increment.state))
        return {"write_seconds": time.perf_counter() - started, "merge_seconds": 0.0, **committed}
    scope = rewrite_scope(plan)
    if not merges_on_driver(plan, scope):
        return rewrite_on_executors(spark, changes, plan, scope)
    if scope.deletion_vectors and scope.bytes > plan.driver_merge_max_bytes:
        print(f"merging on the driver although the files to rewrite ({scope.bytes:,} bytes) exceed "
              "driver_merge_max_bytes: the table has deletion vectors, which only delta-rs's merge applies (purge "
              "them, e.g. REORG TABLE ... APPLY (PURGE), to let the executors rewrite)")
    from kafkaseg.storage.fs import join

    stale = remove_stale_staging(join(plan.output, STAGING_DIR), time.time(), plan.stale_staging_hours)
    if stale:
        print(f"removed {len(stale)} staging folder(s) that killed runs left over {plan.stale_staging_hours} h ago: "
              f"{', '.join(stale)}")
    staging = join(plan.output, STAGING_DIR, staging_name(time.time(), uuid.uuid4().hex[:8]))
    try:
        started = time.perf_counter()
        write_parquet(changes, staging, "error", [])
        staged = time.perf_counter()
        metrics = merge_staged_parquet(staging, plan)
        return {"write_seconds": staged - started, "merge_seconds": time.perf_counter() - staged, **metrics,
                "abandoned_removed": remove_abandoned(plan.output)}
    finally:
        remove_staging(staging)


def remove_abandoned(output: str) -> list[str]:
    """What killed executor rewrites left in the table and VACUUM never removes (their Spark ``_temporary``
    folders), once older than the table's deletedFileRetentionDuration: :func:`kafkaseg.spark.tables.
    remove_abandoned_writes` (a full rebuild's ``write_delta`` does it itself)."""
    from kafkaseg.spark.tables import remove_abandoned_after_commit

    return remove_abandoned_after_commit(output)


def table_rows(spark, plan, scope, columns: Sequence[str]):
    """The rows of ``scope``'s files (the table at the version the run read) with ``columns``, read by the
    executors; partition columns, which the files do not hold, come from each file's Delta partition values."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import IntegerType, StringType

    from kafkaseg.storage.fs import join

    groups: dict = {}
    for path, values in scope.files:
        groups.setdefault(values, []).append(join(plan.output, path))
    types = {"topic": StringType(), "partition": IntegerType()}
    parts = []
    for values, paths in sorted(groups.items(), key=lambda item: str(item[0])):
        df = spark.read.parquet(*paths)
        for column, value in values:
            df = df.withColumn(column, F.lit(None if value is None else value).cast(types[column]))
        parts.append(df.select(*columns))
    if not parts:
        return None
    rows = parts[0]
    for part in parts[1:]:
        rows = rows.unionByName(part)
    return rows


def rewrite_on_executors(spark, changes, plan, scope) -> dict:
    """Apply ``changes`` by rewriting ``scope``'s files on the executors: the table's rows and the change set
    reduced per key again (:func:`latest_per_key`: the higher offset wins, so a change set applied twice changes
    nothing), tombstones dropped and rows below a log start retention moved (:func:`drop_expired`), written as
    Parquet; then one commit replaces those files and records the new
    offsets (:func:`kafkaseg.compacted_table.commit_rewrite`, refused when the table moved meanwhile). Memory is
    Spark's shuffle's, bounded by Spark's settings, not by the table's size."""
    from pyspark.sql import functions as F

    from kafkaseg.compacted_table import commit_rewrite
    from kafkaseg.spark.tables import delta_add_actions, run_folder_name, write_parquet
    from kafkaseg.storage.fs import join, open_filesystem

    started = time.perf_counter()
    current = table_rows(spark, plan, scope, changes.columns)
    rows = changes if current is None else changes.unionByName(current)
    live = drop_expired(spark, latest_per_key(rows).where(F.col("value").isNotNull()), plan.increment.expired)
    folder = run_folder_name(time.time())
    write_parquet(live, join(plan.output, folder), "error", list(plan.partition_by))
    actions = delta_add_actions(plan.output, folder, plan.partition_by)
    written = time.perf_counter()
    try:
        metrics = commit_rewrite(plan, scope, actions)
    except BaseException:
        filesystem, root = open_filesystem(join(plan.output, folder))
        filesystem.delete_dir(root)  # ours, never committed
        raise
    return {"engine": "executors", "write_seconds": written - started,
            "merge_seconds": time.perf_counter() - written, **metrics,
            "abandoned_removed": remove_abandoned(plan.output)}


# --------------------------------------------------------------------------------------------------------------------
# main

def prepare(args: argparse.Namespace, now_ms: int | None = None):
    """Everything decided before Spark starts: the sample dir, the output's location, the config, and
    :func:`kafkaseg.compacted_table.prepare_run`'s plan."""
    from kafkaseg.compacted_table import prepare_run

    paths = generate_sample(args.work_dir)[0] if args.sample else args.data_dir
    check_output_location(args.output, paths)
    check_format(args.output, "delta", formats=("delta",))
    config = load_config(args)
    plan = prepare_run(paths, args.output, config, args.options, args.mode, now_ms)
    if not plan.increment.ranges:
        raise UsageError(f"no topic-partition selected in {', '.join(map(redact, paths))}")
    check_partition_values((topic for topic, _ in plan.increment.ranges), plan.partition_by,
                           "partition_by = [] in the config")
    return paths, plan


def describe_plan(plan, out=sys.stdout) -> None:
    inc = plan.increment
    kind = "full rebuild" if inc.full else f"incremental from table version {plan.table_version}"
    print(f"{kind} of {plan.output}: {inc.offsets_to_read:,} offsets in {len(inc.ranges)} topic-partitions", file=out)
    for finding in inc.losses:
        print(f"  data loss, rebuilding: {finding}", file=out)
    for note in inc.notes:
        print(f"  note: {note}", file=out)
    width = max(len(f"{t}-{p}") for t, p in inc.ranges)
    for (topic, partition), (start, end) in sorted(inc.ranges.items()):
        note = "  (capped by max_offsets_per_partition: run again)" if (topic, partition) in inc.capped else ""
        # the offsets read, first..last as the export job prints them (the recorded end is exclusive)
        span = f"offsets {start}..{end - 1}" if end > start else f"nothing new from offset {start}"
        print(f"  {f'{topic}-{partition}':<{width}}  {span}{note}", file=out)


def run(spark, args: argparse.Namespace, prepared=None) -> dict:
    """The job on an existing SparkSession (``prepared``: :func:`prepare`'s result, made here when None)."""
    started, planned_after = time.perf_counter(), time.time()
    paths, plan = prepared if prepared is not None else prepare(args)
    describe_plan(plan)
    changes = latest_per_key(extract(spark, paths, plan.read_options))
    result = load(spark, changes, plan)
    seconds = time.perf_counter() - started
    from deltalake import DeltaTable

    rows = DeltaTable(plan.output).count()
    if plan.full:
        merged = ""
    elif result.get("engine") == "executors":
        merged = (f"; the executors rewrote {result['files_rewritten']:,} files ({result['bytes_rewritten']:,} "
                  f"bytes, above driver_merge_max_bytes) into {result['files_written']:,}")
    else:
        merged = (f"; merge: {result.get('num_source_rows', 0):,} changes, "
                  f"{result.get('num_target_rows_inserted', 0):,} inserted, "
                  f"{result.get('num_target_rows_updated', 0):,} updated, "
                  f"{result.get('num_target_rows_deleted', 0):,} deleted in {result['merge_seconds']:.1f}s")
    print(f"compacted {plan.increment.offsets_to_read:,} offsets into {plan.output} in {seconds:.1f}s{merged}"
          + f"; the table holds {rows:,} keys")
    from kafkaseg.spark.jobs import abandoned_line

    if (line := abandoned_line(plan.output, result)) is not None:
        print(line)
    missing = _read_missing_offsets(paths, plan.read_options, planned_after)
    for path, start, end in missing:
        print(f"  note: offsets [{start}, {end}) were missing after {path}, above the cleaner checkpoint (compaction "
              "the checkpoint does not record yet, or a segment file lost from this copy: then keys it held may be "
              "stale in the table; kafkaseg verify checks)")
    return {"plan": plan, "result": result, "seconds": seconds, "missing_offsets": missing}


def _read_missing_offsets(paths, read_options: dict, since: float) -> list:
    from kafkaseg.spark.reports import plan_report_for

    report = plan_report_for(scan_options(read_options), list(paths), since)  # this run's scan, not the host's newest
    return [tuple(m) for m in report.read_metrics().get("missing_offsets", [])] if report is not None else []


def main(argv: Sequence[str] | None = None) -> int:
    """Exit status 0, 2 for a usage or input problem (bad arguments, config or options, a missing data dir, a
    table that does not fit the run), 1 otherwise (data loss under on_data_loss=fail included); errors are one
    line on stderr."""
    from kafkaseg.errors import CompactedTableError
    from kafkaseg.spark.jobs import report_error

    args = parse_args(argv)
    try:
        prepared = prepare(args)
        run_in_session("kafkaseg-compact", lambda spark: run(spark, args, prepared))
    except Exception as exc:  # noqa: BLE001 - report_error re-raises what it does not know
        return report_error(exc, "compact.py", usage=(UsageError, CompactedTableError))
    return 0


if __name__ == "__main__":
    sys.exit(main())
