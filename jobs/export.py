"""Export Kafka log dirs to a Delta (or Parquet) table with Spark and the kafkaseg data source.

Try it on the built-in sample (a few MB of realistic topics: codecs, transactions, compaction leftovers, legacy
formats), generated on the fly::

    ./spark-submit.sh jobs/export.py --sample

Real use (every executor must see ``--data-dir`` at the same path, or a URI pyarrow can open)::

    ./spark-submit.sh jobs/export.py --data-dir /var/lib/kafka/data --output /lake/kafka_raw \\
        [--format delta|parquet] [--mode error|overwrite|append|incremental] [--partition-by topic] \\
        [--option subscribe=orders,payments] [--option kafka.isolation.level=read_committed] ...

Steps: :func:`extract` (the kafkaseg source; ``--option`` passes any kafkaseg/Spark-Kafka read option),
:func:`with_export_columns` (the transform: the Kafka columns plus the record's UTC ``date``), then :func:`load`:
executors write the data files (Spark's Parquet writer) and, for Delta, the driver commits them in one delta-rs
transaction (:mod:`kafkaseg.spark.tables`; no delta-spark jar needed). No record passes through the driver, and
the data is read once: the printed per topic-partition counts and offset ranges (:func:`summarize_files`) come
from the written files' footers.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import json
import time
from pathlib import Path
from typing import Callable, Iterable, Sequence

import pyarrow as pa

FORMAT = "kafkaseg"
SAMPLE_DIR = "sample-kafka-logs"  # under --work-dir
# the options that choose where each partition's read starts and ends: replaced by the offsets resolved once
RANGE_OPTIONS = frozenset(name.lower() for name in (
    "startingOffsets", "endingOffsets", "startingTimestamp", "endingTimestamp", "startingOffsetsByTimestamp",
    "endingOffsetsByTimestamp", "startingOffsetsByTimestampStrategy"))
Summary = list  # of (topic, partition, records, first offset, last offset), sorted
# Where each export run records the offsets it read up to (Spark's offsets JSON, {"topic":{"0":11}}), for the next
# incremental run to resume there: a Delta commit's metadata (commitInfo), or for Parquet a file beside the data
# (the underscore: Spark, pyarrow and the export's own listing skip it as no data)
ENDS_KEY = "kafkaseg.export.endingOffsets"
ENDS_FILE = "_kafkaseg_export_ending_offsets.json"
TOPICS_KEY = "kafkaseg.export.topics"  # the topic and cluster ids the runs read (a recreated topic is refused)
TOPICS_FILE = "_kafkaseg_export_topics.json"
APP_ID = "kafkaseg.export"  # the Delta app transaction id of every export commit: overlapping runs conflict
NO_TIMESTAMP_MICROS = -1000  # Kafka's "no timestamp" (-1 ms), as Spark and kafkaseg show it
MICROS_PER_DAY = 86_400_000_000


# --------------------------------------------------------------------------------------------------------------------
# arguments

def job_parser(prog: str, doc: str, verb: str | None) -> argparse.ArgumentParser:
    """An argument parser for a job reading log dirs: ``--sample`` or ``--data-dir`` (one or more, repeatable),
    exclusive; with ``verb`` None (a job without a sample), ``--data-dir`` alone, required."""
    parser = argparse.ArgumentParser(prog=prog, description=doc.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    source = parser.add_mutually_exclusive_group(required=True) if verb is not None else parser
    if verb is not None:
        source.add_argument("--sample", action="store_true",
                            help=f"generate kafkaseg's sample log dir (<work-dir>/sample-kafka-logs, replaced each "
                                 f"run) and {verb} it")
    source.add_argument("--data-dir", action="extend", nargs="+", metavar="DIR", required=verb is None,
                        help="Kafka log dirs, topic-partition dirs or globs (one or more, and repeatable, e.g. every "
                             "log.dirs; an unquoted glob the shell expanded gives several)")
    return parser


#: ``--mode`` of the jobs writing a table: its choices in this order, each job's own help after them.
WRITE_MODES = ("error", "overwrite", "append")


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = job_parser("export.py", __doc__, "export")
    parser.add_argument("--output", metavar="PATH", help="table path (default with --sample: <work-dir>/sample-<format>)")
    parser.add_argument("--format", choices=("delta", "parquet"), default="delta", help="(default delta)")
    parser.add_argument("--mode", choices=(*WRITE_MODES, "incremental"), default=None,
                        help="when the table exists (default: error; overwrite with --sample). append refuses offsets "
                             "the table already holds; incremental exports only the offsets after them (each "
                             "partition from where the table's export runs read up to, as they recorded it, or its "
                             "max offset + 1 if higher), creating the table when missing")
    parser.add_argument("--partition-by", default="topic", help="comma-separated columns, '' for none (default topic)")
    parser.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                        help="a kafkaseg read option, e.g. includeHeaders=true, subscribe=orders (repeatable)")
    parser.add_argument("--work-dir", default="out", help="where --sample puts its data (default ./out)")
    args = parser.parse_args(argv)
    args.options = parse_option_items(parser, args.option)
    if any(key.strip().lower() == "columns" for key in args.options):
        parser.error("--option columns=...: the export writes whole records (its appends and --mode incremental "
                     "need topic, partition, offset and timestamp); drop columns when reading the table")
    if args.output is None:
        if not args.sample:
            parser.error("--output is required with --data-dir")
        args.output = str(Path(args.work_dir) / f"sample-{args.format}")
    if args.mode is None:
        args.mode = "overwrite" if args.sample else "error"
    args.partition_by = [c.strip() for c in args.partition_by.split(",") if c.strip()]
    from kafkaseg.errors import KafkaSegError

    try:
        columns = export_schema(_arrow_schema(args.options))
    except KafkaSegError:
        columns = None  # malformed options: reported with their own message when the job starts
    if columns is not None:
        for name in args.partition_by:
            field = columns.field(name) if name in columns.names else None
            if field is None or pa.types.is_binary(field.type) or pa.types.is_list(field.type):
                usable = ", ".join(f.name for f in columns if not (pa.types.is_binary(f.type)
                                                                   or pa.types.is_list(f.type)))
                parser.error(f"--partition-by {name}: not a column the export can partition by ({usable})")
    return args


def parse_option_items(parser: argparse.ArgumentParser, items: Sequence[str]) -> dict:
    """``--option KEY=VALUE`` items as a dict (a malformed item is a usage error)."""
    options = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            parser.error(f"--option must look like KEY=VALUE, got {item!r}")
        options[key.strip()] = value
    return options


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
# offset ranges (pure, no Spark)

Ranges = dict  # {(topic, partition): (start, end)}, end exclusive


def offsets_json(offsets: dict) -> str:
    """Spark's per-partition offsets JSON, ``{"t":{"0":12}}``, from ``{(topic, partition): offset}``."""
    out: dict = {}
    for (topic, partition), offset in sorted(offsets.items()):
        out.setdefault(topic, {})[str(partition)] = int(offset)
    return json.dumps(out, separators=(",", ":"))


def pinned_options(options: dict, ranges: Ranges) -> dict:
    """``options`` with every starting*/ending* option replaced by explicit ``startingOffsets``/``endingOffsets``
    JSON for ``ranges``, so each read of the job reads exactly these offsets however the log moves meanwhile
    (an end below its start is raised to the start: nothing to read)."""
    out = {k: v for k, v in options.items() if k.strip().lower() not in RANGE_OPTIONS}
    out["startingOffsets"] = offsets_json({key: start for key, (start, _) in ranges.items()})
    out["endingOffsets"] = offsets_json({key: max(start, end) for key, (start, end) in ranges.items()})
    return out


def plan_ranges(paths: Sequence[str], options: dict, listing=None):
    """``(ranges, plan report)``: every selected partition's ``[start, end)`` under ``options``, resolved once on
    the driver by the Spark-free planner (index files and checkpoints only; no record is read), and what planning
    found (topic ids, data loss skipped with ``failOnDataLoss=false``). ``(None, None)`` with ``replicas=all``,
    where one topic-partition has several copies with different ranges and so cannot be pinned by one JSON.
    ``listing``: a discovery of ``paths`` to plan from (:func:`kafkaseg.planning.list_partitions`)."""
    from kafkaseg.options import ReadOptions
    from kafkaseg.planning import plan_scan

    opts = ReadOptions.from_options(options)
    if opts.replicas == "all":
        return None, None
    report = plan_scan(None if listing is not None else list(paths), opts, listing=listing).report
    log_start = {(p.topic, p.partition): p.log_start_offset for p in report.partitions}
    ranges = {}
    for key, (start, end) in report.offsets().items():
        if start is None or end is None:  # a partition without segments: nothing to read now
            start = end = log_start.get(key) or 0
        ranges[key] = (start, max(start, end))
    return ranges, report


def found_topics(report) -> dict:
    """``{topic: {"topicId": id, "clusterId": id}}`` of the partitions a plan read (ids the files do not give,
    before Kafka 2.8 or without ``meta.properties``, are left out)."""
    out: dict = {}
    for p in report.partitions:
        ids = {name: value for name, value in (("topicId", p.topic_id), ("clusterId", p.cluster_id)) if value}
        out.setdefault(p.topic, {}).update(ids)
    return {topic: ids for topic, ids in out.items() if ids}


def check_incarnations(recorded: dict, report, output: str) -> None:
    """Refuse to go on with a topic whose topic id (``partition.metadata``) or cluster id (``meta.properties``)
    differs from the one the table's export runs recorded (``recorded``: :func:`found_topics`' form): a deleted and
    recreated topic, or another cluster's of the same name. Its offsets start again at 0 and are unrelated to the
    table's rows, so resuming at the recorded end would skip the new topic's first records and mix two topics in
    one table (Spark's Kafka source fails a query the same way when a log goes back)."""
    found = []
    for p in report.partitions:
        for what, key, value in (("topic id", "topicId", p.topic_id), ("cluster id", "clusterId", p.cluster_id)):
            kept = recorded.get(p.topic, {}).get(key)
            if kept and value and kept != value:
                found.append(f"{p.name} has {what} {value}, the table's rows {kept}")
    if found:
        raise UsageError(
            f"{output} holds another incarnation of these topics (a deleted and recreated topic, or another "
            f"cluster's): {'; '.join(found)}. Their offsets are unrelated to the table's rows: export them to "
            "another table, or replace this one with --mode overwrite")


def next_topics(recorded: dict, report, marks: dict | None = None, diverged: Iterable = ()) -> dict:
    """The topic and cluster ids a run records: ``recorded`` with the topics this run read updated (cumulative,
    as :func:`next_ends`), and under ``"epochs"`` each partition's :data:`EpochMark` at the end this run read to
    (``marks``: ``{(topic, partition): (epoch, end)}``; a partition the run did not read keeps its mark, and so
    does one whose mark would go back, unless it is in ``diverged``: a divergence this run reported and went on
    past, which the new mark, of the log as it is now, replaces)."""
    diverged = set(diverged)
    out = {topic: {k: (dict(v) if isinstance(v, dict) else v) for k, v in ids.items()}
           for topic, ids in recorded.items()}
    for topic, ids in found_topics(report).items():
        out.setdefault(topic, {}).update(ids)
    for (topic, partition), mark in sorted((marks or {}).items()):
        epochs = out.setdefault(topic, {}).setdefault("epochs", {})
        kept = epochs.get(str(partition))
        # a mark further on wins (an append of older offsets, a backfill, must not lower it); none found (a legacy
        # batch, an unreadable one) keeps the one before, still a true check of the position it was taken at
        if mark is not None and (not kept or mark[1] >= kept[1] or (topic, partition) in diverged):
            epochs[str(partition)] = [int(mark[0]), int(mark[1])]
    return out


def epoch_marks(pdirs: dict, ends: dict) -> dict:
    """``{(topic, partition): (epoch, end) | None}``: the leader epoch of the last batch below each end in
    ``ends`` and where it ends (:meth:`kafkaseg.lookup.PartitionLookup.epoch_mark`; headers only), which the next
    incremental run checks the log against (:func:`check_divergence`). ``pdirs``: the replicas read, by key."""
    from kafkaseg.lookup import batch_epoch_mark

    return {key: batch_epoch_mark(pdirs[key], end) for key, end in ends.items() if key in pdirs and end > 0}


def check_divergence(recorded: dict, pdirs: dict, ends: dict, fail_on_data_loss: bool) -> dict:
    """Kafka's consumer validation of its position after a leader change (KIP-320), for an incremental run
    resuming at the ends the table's runs read up to: the leader epoch of the last batch they read
    (``recorded[topic]["epochs"]``) must not end below that batch's end in the log's ``leader-epoch-checkpoint``
    now. Else the log was truncated there and written again (an unclean leader election, a replica restored from
    an older copy): the table holds records the log replaced, and resuming at the recorded end would never export
    their replacements. A :class:`~kafkaseg.errors.DataLossError` naming each, or with ``fail_on_data_loss``
    False ``{(topic, partition): line}`` to warn about (the run resumes as before)."""
    from kafkaseg.errors import DataLossError
    from kafkaseg.streaming import divergence

    found = {}
    for key in sorted(pdirs):
        mark = recorded.get(key[0], {}).get("epochs", {}).get(str(key[1]))
        if not mark or ends.get(key, 0) < mark[1]:
            continue  # nothing recorded, or the table does not reach the mark (rows deleted since: read again)
        diverged = divergence(pdirs[key].leader_epochs, (int(mark[0]), int(mark[1])))
        if diverged is not None:
            offset = diverged[0]
            found[key] = (f"{key[0]}-{key[1]}: leader epoch {mark[0]} of the table's last batch (ending at offset "
                          f"{mark[1] - 1}) is above every epoch in the log's leader-epoch-checkpoint (a log older "
                          "than the table, or written again)" if offset is None else
                          f"{key[0]}-{key[1]}: the log diverged from the table at offset {offset} (leader epoch "
                          f"{mark[0]}, under which the table's last batch ending at offset {mark[1] - 1} was read, "
                          f"ends at {offset} in the log): records the table holds were truncated and replaced (an "
                          "unclean leader election), and their replacements are below where this run resumes")
    if found and fail_on_data_loss:
        raise DataLossError("; ".join(found.values()) + " (failOnDataLoss=false resumes anyway, leaving the table "
                            "with the replaced records; or export the partitions again with --mode overwrite)")
    return found


def incremental_ranges(ranges: Ranges, existing: dict, recorded: dict | None = None) -> Ranges:
    """The ranges of an incremental export. A partition the table holds (``existing``: ``{(topic, partition): (min
    offset, max offset)}``) or that an earlier export run recorded an end for (``recorded``: ``{(topic, partition):
    end}``, :func:`recorded_ends`) starts at the higher of that end and its max offset + 1: where the runs before
    read up to, as Spark's Kafka source resumes from the end offset it saved. The end matters when the offsets
    after the last exported row hold no row (a transaction's marker, an aborted tail under read_committed): once
    retention deletes them, max + 1 is below the log start offset, a false data loss. Records retention deleted
    since the last export (the log start past the end) are still a data loss error under ``failOnDataLoss=true``,
    as in Spark; offsets missing between segments where it resumes are read past and listed; a partition neither
    knows keeps its range."""
    recorded = recorded or {}
    existing = existing or {}
    out = {}
    for key, (start, end) in ranges.items():
        resume = ([existing[key][1] + 1] if key in existing else []) + ([recorded[key]] if key in recorded else [])
        if resume:
            start = max(resume)
        out[key] = (start, max(start, end))
    return out


def next_ends(recorded: dict, ranges: Ranges) -> dict:
    """The ends a run records: ``recorded`` (what the table's earlier runs read up to) with each partition of
    ``ranges`` raised to the end this run reads to (kept when higher: an append of older offsets). Cumulative, so
    the next run needs only the newest record, not the table's whole history. The end is the resolved one even
    where the read left a truncated tail: the planner's end is at most the last whole batch's (``log_end_offset``),
    so a tail cut below it means a broker truncated acknowledged offsets during the read (an unclean election),
    which the job reports after the write."""
    out = dict(recorded)
    for key, (start, end) in ranges.items():
        out[key] = max(out.get(key, 0), start, end)
    return out


def parse_ends(text: str) -> dict:
    """``{(topic, partition): end}`` from recorded ends (Spark's offsets JSON, parsed as the ``endingOffsets``
    option is); ValueError (``InvalidOptionError``) when malformed."""
    from kafkaseg.options import ReadOptions

    ending = ReadOptions.from_options({"endingOffsets": text}).ending
    if ending.kind != "offsets":
        raise ValueError(f"not a {{topic: {{partition: offset}}}} object: {text!r}")
    return {(topic, partition): offset for topic, partition, offset in ending.entries}


def overlaps(ranges: Ranges, existing: dict) -> list[str]:
    """``topic-partition offsets a..b`` for every partition whose ``[start, end)`` shares offsets with the table's
    ``(min, max)`` for it: what an append would duplicate."""
    found = []
    for key in sorted(ranges):
        start, end = ranges[key]
        if key in existing and end > start:
            low, high = existing[key]
            first, last = max(start, low), min(end - 1, high)
            if first <= last:
                found.append(f"{key[0]}-{key[1]} offsets {first}..{last}")
    return found


class UsageError(Exception):
    """A problem with the job's arguments or its input (exit status 2)."""


def _location(path: str) -> str:
    """A comparable form of a path: the local real path (a glob cut at its first wildcard), or the URI without its
    query and user info, with ``s3a://``/``s3n://`` (Spark's names) as ``s3://``, normalized."""
    import posixpath

    from kafkaseg.storage.fs import canonical_scheme

    from urllib.parse import unquote, urlsplit

    text = str(path)
    if text[:5].lower() == "file:":
        # every form Spark and Hadoop take for a local path: file:/x (as they print paths), file:///x,
        # file://localhost/x; keeping the prefix made a relative path that never matched (found in review)
        text = unquote(urlsplit(text).path) or "/"
    scheme = None
    if "://" in text:
        scheme, _, text = text.partition("://")
        text = unquote(text.split("?", 1)[0])  # what Hadoop's Path and pyarrow make of %61
        host, slash, rest = text.partition("/")
        text = host.rpartition("@")[2] + slash + rest
        scheme = canonical_scheme(scheme).lower()
    parts = text.split("/")
    for i, part in enumerate(parts):
        if any(c in part for c in "*?["):
            text = "/".join(parts[:i]) or "/"
            break
    if scheme is not None:
        return f"{scheme}://{posixpath.normpath(text)}"
    return os.path.realpath(text)


def _log_dirs(data_dirs: Sequence[str]) -> list[str]:
    """The Kafka log dirs the data dirs are or are in: a partition dir's or a ``.log`` file's parent log dir, each
    glob's matches (from discovery; as URIs with the given URI's scheme and authority on other filesystems; a
    tiered-storage copy's is its store's root, also for a store whose copies are all gone that
    ``__remote_log_metadata`` among ``data_dirs`` lists), else the paths as given."""
    from kafkaseg.errors import KafkaSegError
    from kafkaseg.remote_metadata import read_remote_log_metadata
    from kafkaseg.storage import fs as _fs
    from kafkaseg.storage.layout import REMOTE_LOG_METADATA_TOPIC, discover

    alone: dict = {}
    for given in data_dirs:
        try:
            alone[given] = discover([given])
        except KafkaSegError:
            alone[given] = None
    # a path refused alone may be a tiered store whose copies are all gone, which __remote_log_metadata among the
    # other paths makes the store that lost them (as the read finds it): discovered again with those paths, its
    # partitions are what the others do not hold (lenient: a corrupt metadata record is the read's to report)
    metadata = [given for given, found in alone.items()
                if found and any(p.topic == REMOTE_LOG_METADATA_TOPIC for p in found)]
    theirs = {(p.topic, p.partition, p.path) for given in metadata for p in alone[given]}
    dirs = set()
    for given, found in alone.items():
        if found is None and metadata:
            try:
                found = [p for p in discover([given, *metadata], remote_log_metadata=lambda partitions:
                                             read_remote_log_metadata(partitions, lenient=True))
                         if (p.topic, p.partition, p.path) not in theirs] or None
            except KafkaSegError:
                pass
        if found is None:
            dirs.add(str(given))
            continue
        prefix = _uri_prefix(str(given))
        for pdir in found:
            d = pdir.log_dir or _fs.parent(pdir.path)
            if d and not _fs.is_local(pdir.filesystem):  # pyarrow names it without scheme (and, HDFS, authority)
                d = prefix + d if prefix is not None else f"{pdir.filesystem.type_name}://{d}"
            if d:
                dirs.add(d)
    return sorted(dirs) or [str(d) for d in data_dirs]


def _uri_prefix(uri: str) -> str | None:
    """What comes before the filesystem's own path in ``uri``: ``s3://`` for ``s3://bucket/key`` (pyarrow's path
    is ``bucket/key``), ``hdfs://nn:8020`` for ``hdfs://nn:8020/kafka`` (its path is ``/kafka``); None for a local
    path or a URI that cannot be opened."""
    from kafkaseg.errors import KafkaSegError
    from kafkaseg.storage import fs as _fs

    if "://" not in uri or uri.startswith("file://"):
        return None
    try:
        filesystem, path = _fs.open_filesystem(uri)
    except KafkaSegError:
        return None
    head = uri.split("?", 1)[0]
    at = head.find(path.rstrip("/")) if path.strip("/") else -1
    return head[:at] if at > 0 else None


def check_partition_values(topics: Iterable[str], partition_by: Sequence[str], instead: str) -> None:
    """Refuse a topic named ``__HIVE_DEFAULT_PARTITION__`` (legal in Kafka) as a partition folder's value: Spark
    names a null value's folder so and reads it back as null, so the rows would lose their topic."""
    from kafkaseg.spark.tables import HIVE_DEFAULT_PARTITION

    if "topic" in partition_by and HIVE_DEFAULT_PARTITION in set(topics):
        raise UsageError(f"topic {HIVE_DEFAULT_PARTITION} cannot be a partition folder's value (it reads back "
                         f"as null): write it with {instead} or partitioned by other columns")


def check_output_location(output: str, data_dirs: Sequence[str], flag: str = "--output") -> None:
    """Refuse an output equal to or inside a Kafka log dir that holds the data (a broker fails a log dir holding a
    folder that is not a topic-partition), also when a partition dir or ``.log`` file of it was given, or containing
    one (an overwrite would delete it). ``flag`` is the option that gave ``output``, for the message."""
    from kafkaseg.storage.fs import redact

    out = _location(output)
    for data in _log_dirs(data_dirs):
        d = _location(data)
        if out == d or out.startswith(d.rstrip("/") + "/"):
            raise UsageError(f"{flag} {redact(output)} is inside --data-dir {redact(data)}: a Kafka log dir must "
                             "hold only topic-partition folders (a broker fails it otherwise); write the table "
                             "elsewhere")
        if d.startswith(out.rstrip("/") + "/"):
            raise UsageError(f"--data-dir {redact(data)} is inside {flag} {redact(output)}; write the table "
                             "elsewhere")


# --------------------------------------------------------------------------------------------------------------------
# the existing table (pyarrow, no Spark)

def table_exists(output: str, fmt: str) -> bool:
    from kafkaseg.storage.fs import join, stat

    entry = stat(join(output, "_delta_log") if fmt == "delta" else output)
    return entry is not None and (fmt == "parquet" or entry.is_dir)


#: The formats' names in messages.
FORMAT_NAMES = {"delta": "Delta", "parquet": "Parquet", "csv": "CSV", "json": "JSON"}
#: Suffixes of the codecs Spark's CSV/JSON writers compress with (``compression`` option).
_COMPRESSION_SUFFIXES = (".gz", ".bz2", ".snappy", ".zst", ".lz4", ".deflate")


def data_file_format(name: str) -> str | None:
    """``csv``, ``json`` or ``parquet`` for a data file's name as Spark's writers name them (compressed or not),
    else None."""
    lower = name.lower()
    for suffix in _COMPRESSION_SUFFIXES:
        if lower.endswith(suffix) and not lower.endswith(".parquet"):
            lower = lower[:-len(suffix)]
            break
    for suffixes, fmt in (((".csv",), "csv"), ((".json", ".jsonl", ".ndjson"), "json"), ((".parquet",), "parquet")):
        if lower.endswith(suffixes):
            return fmt
    return None


def check_format(output: str, fmt: str, flag: str = "--output", formats: Sequence[str] = ("delta", "parquet"),
                 mode: str | None = None) -> dict:
    """Refuse to write ``fmt`` over or among another format's data at ``output``, before Spark starts:

    * a Delta table's folder (a ``_delta_log``) written as Parquet, CSV or JSON: Spark's overwrite deletes the
      table's files and leaves what it wrote next to, or without, a ``_delta_log`` Delta readers then read; an
      append puts files outside the log (Delta readers never see them; readers of the folder see Delta's files,
      removed ones included);
    * a folder of Parquet, CSV or JSON files made a Delta table: its files would be outside the log (a VACUUM
      deletes them) and readers of the folder would read the table's Parquet files as theirs;
    * a folder of one of those formats written as another: an overwrite deletes the files, an append mixes formats
      that readers of the folder read as one;
    * with Spark's writers (not Delta), ``mode`` overwrite of a folder holding other files (not a table's): Spark
      deletes the whole folder.

    Overwrites and appends of the job's own format go on. ``flag`` named ``output``; ``formats``: the job's
    ``--format`` choices, suggested when what is there is one of them. Returns the data files it listed
    (:func:`_data_files`; empty for a Delta table, whose folder it does not list), so that the job need not list
    the folder again. Raises :class:`UsageError`."""
    from kafkaseg.storage.fs import join, redact, stat

    shown, name = redact(output), FORMAT_NAMES[fmt]
    what = f"--format {fmt}: " if len(formats) > 1 else ""
    delta_log = stat(join(output, "_delta_log"))
    if delta_log is not None and delta_log.is_dir:
        if fmt != "delta":
            harm = (f"an overwrite with {name} files would delete it" if mode == "overwrite"
                    else f"{name} files written there would be outside its log")
            raise UsageError(f"{what}{shown} is a Delta table (it has a _delta_log): {harm}; use --format delta, "
                             f"or another {flag}")
        return {}
    found = _data_files(output)
    other = sorted(k for k in found if k is not None and k != fmt)
    if other:
        kinds = " and ".join(FORMAT_NAMES[k] for k in other)
        instead = (f"use --format {other[0]}, or another " if len(other) == 1 and other[0] in formats
                   else "give another ")
        if fmt == "delta":
            raise UsageError(f"{what}{shown} holds {kinds} files but no _delta_log (a {kinds} table, which a Delta "
                             f"table there would leave unreferenced: a VACUUM deletes them); {instead}{flag}")
        harm = (f"an overwrite with {name} files would delete them" if mode == "overwrite"
                else f"{name} files written among them would make a folder no reader reads as one format")
        raise UsageError(f"{what}{shown} holds {kinds} files ({_examples(found, other, output)}): {harm}; "
                         f"{instead}{flag}")
    if fmt != "delta" and mode == "overwrite" and None in found:
        raise UsageError(f"{what}{shown} holds files that are not {name} ({_examples(found, [None], output)}): "
                         f"Spark's overwrite deletes the whole folder; give another {flag}, or remove them")
    return found


def _examples(found: dict, kinds, output: str, limit: int = 3) -> str:
    from kafkaseg.storage.fs import open_filesystem

    _, root = open_filesystem(output)
    paths = [path for kind in kinds for path in found[kind]]
    shown = [path[len(root):].lstrip("/") or path.rsplit("/", 1)[-1] for path in paths[:limit]]
    return ", ".join(shown) + (f", ... ({len(paths)} files)" if len(paths) > limit else "")


def _data_files(output: str) -> dict:
    """``{format or None: [paths]}`` of the files at ``output`` (a folder, searched recursively, or one file):
    :func:`data_file_format`'s, None for other files. What readers of a folder pass over is left out: hidden and
    ``_`` files and folders (Spark's ``_SUCCESS``, checksums, the export's ``_kafkaseg_*`` files), and a Delta
    export run's ``kafkaseg-<time>-<id>/`` folder a first run left uncommitted."""
    import pyarrow.fs as pafs

    from kafkaseg.spark.tables import RUN_FOLDER_PREFIX
    from kafkaseg.storage.fs import open_filesystem, stat

    entry = stat(output)
    if entry is None:
        return {}
    filesystem, root = open_filesystem(output)
    if not entry.is_dir:
        return {data_file_format(root.rsplit("/", 1)[-1]): [root]}
    infos = filesystem.get_file_info(pafs.FileSelector(root, recursive=True, allow_not_found=True))
    found: dict = {}
    for info in infos:
        relative = info.path[len(root):].lstrip("/")
        if (info.type != pafs.FileType.File or relative.startswith(RUN_FOLDER_PREFIX)
                or any(part.startswith(("_", ".")) for part in relative.split("/"))):
            continue
        found.setdefault(data_file_format(info.base_name), []).append(info.path)
    return found


def _parquet_files(output: str) -> list[str]:
    """The Parquet data files under ``output`` (Spark's ``_SUCCESS`` and hidden files are not data, nor the files
    of a Delta export run that was never committed: ``kafkaseg-<time>-<id>/`` folders, left by a first run that
    failed before its commit)."""
    return _data_files(output).get("parquet", [])


def existing_partitioning(output: str, fmt: str, files: list[str] | None = None, table=None) -> list[str]:
    """The table's partition columns: Delta's metadata (``table``: the ``DeltaTable`` when already loaded), or the
    ``column=value`` folders of a Parquet table (``files``: its data files when already listed)."""
    if fmt == "delta":
        from deltalake import DeltaTable

        return list((DeltaTable(output) if table is None else table).metadata().partition_columns)
    from kafkaseg.storage.fs import open_filesystem

    _, root = open_filesystem(output)
    files = _parquet_files(output) if files is None else files
    keys: list[str] = []
    for path in files[:1]:
        keys = [part.split("=", 1)[0] for part in path[len(root):].split("/")[:-1] if "=" in part]
    return keys


def _existing_dataset(output: str, fmt: str, files: list[str] | None = None):
    """The table as a ``pyarrow.dataset`` (``files``: a Parquet table's data files when already listed)."""
    import pyarrow.dataset as ds

    if fmt == "delta":
        from kafkaseg.compacted_table import delta_dataset

        return delta_dataset(output)
    from kafkaseg.storage.fs import open_filesystem

    files = _parquet_files(output) if files is None else files
    # partition values typed as the export writes them, never inferred: topic=007 stays the string "007"
    types = {f.name: f.type for f in export_schema(_arrow_schema({}))}
    schema = pa.schema([pa.field(k, types.get(k, pa.string())) for k in existing_partitioning(output, fmt, files)])
    filesystem, root = open_filesystem(output)
    return ds.dataset(files, format="parquet", filesystem=filesystem,
                      partitioning=ds.partitioning(schema, flavor="hive"), partition_base_dir=root)


def existing_columns(output: str, fmt: str, dataset=None) -> list[str]:
    """The table's column names (``dataset``: :func:`_existing_dataset`'s, when already made)."""
    return list((_existing_dataset(output, fmt) if dataset is None else dataset).schema.names)


def existing_offsets(output: str, fmt: str, dataset=None) -> dict:
    """``{(topic, partition): (min offset, max offset)}`` of the table at ``output`` (only the topic, partition and
    offset columns are read; ``dataset``: :func:`_existing_dataset`'s, when already made)."""
    out: dict = {}
    # batch by batch: the driver keeps one batch and one (min, max) per partition, whatever the table's size
    if dataset is None:
        dataset = _existing_dataset(output, fmt)
    for batch in dataset.to_batches(columns=["topic", "partition", "offset"]):
        if not batch.num_rows:
            continue
        grouped = pa.Table.from_batches([batch]).group_by(["topic", "partition"]).aggregate(
            [("offset", "min"), ("offset", "max")])
        for t, p, lo, hi in zip(grouped.column("topic").to_pylist(), grouped.column("partition").to_pylist(),
                                grouped.column("offset_min").to_pylist(), grouped.column("offset_max").to_pylist()):
            if lo is None:  # only null offsets for it in this batch
                continue
            key = (t, int(p))
            seen = out.get(key)
            out[key] = (lo, hi) if seen is None else (min(seen[0], lo), max(seen[1], hi))
    return out


def recorded_ends(output: str, fmt: str) -> dict:
    """``{(topic, partition): end}``: where the export runs that wrote the table at ``output`` read up to
    (:func:`recorded_state`)."""
    return recorded_state(output, fmt)[0]


def recorded_state(output: str, fmt: str, table=None) -> tuple[dict, dict]:
    """``(ends, topics)``: where the export runs that wrote the table at ``output`` read up to, ``{(topic,
    partition): end}``, and the topic and cluster ids they read, ``{topic: {"topicId": .., "clusterId": ..}}``, as
    the newest of them recorded them (:func:`next_ends`, :func:`next_topics`: cumulative). Empty for a table
    written by an older kafkaseg or another writer (the caller then goes on from the table's max offset + 1), and
    when what was recorded cannot be trusted for the rows the table now holds (said on stdout when it cannot be
    read). ``table``: the Delta table as the run read it (a ``DeltaTable`` at a version; the newest when None).

    * Delta: the newest commit carrying :data:`ENDS_KEY` (and :data:`TOPICS_KEY`), walking back past commits
      without it that kept the export's rows or only removed some (OPTIMIZE, VACUUM, a DELETE: the deleted rows are
      not exported again), and through a RESTORE to version v from v (the rows are v's again). A commit that
      replaced the rows without recording ends (another writer's overwrite, CREATE OR REPLACE, a RESTORE to a time)
      ends the walk: nothing.
    * Parquet: the :data:`ENDS_FILE` and :data:`TOPICS_FILE` beside the data (no commit log: they are written after
      Spark committed the data, the ends first, so a run killed in between leaves the older, lower ends, never ends
      past rows that are missing, and at worst older ids, which refuse the next run rather than skip records)."""
    from kafkaseg.storage.fs import join

    if fmt == "parquet":
        ends_text, topics_text = _read_text(join(output, ENDS_FILE)), _read_text(join(output, TOPICS_FILE))
        return (_parsed_ends(ends_text, join(output, ENDS_FILE)) if ends_text is not None else {},
                _parsed_topics(topics_text, join(output, TOPICS_FILE)) if topics_text is not None else {})

    from deltalake import DeltaTable

    from kafkaseg.compacted_table import newest_commits

    restored_to = None  # a RESTORE to version v: the commits after v (up to the RESTORE) no longer hold rows
    for commit in newest_commits(DeltaTable(output) if table is None else table):
        version = commit.get("version")
        if restored_to is not None and version is not None and version > restored_to:
            continue
        text = commit.get(ENDS_KEY)
        if text is not None:
            topics = commit.get(TOPICS_KEY)
            return (_parsed_ends(text, f"{output} version {version}"),
                    _parsed_topics(topics, f"{output} version {version}") if topics is not None else {})
        operation = str(commit.get("operation") or "")
        parameters = commit.get("operationParameters") or {}
        if operation == "RESTORE" and parameters.get("version") is not None:
            restored_to = int(parameters["version"])
            continue
        if (operation == "RESTORE" or parameters.get("mode") == "Overwrite" or "CREATE" in operation
                or "REPLACE" in operation or "TRUNCATE" in operation):
            return {}, {}
    return {}, {}


def _read_text(path: str) -> str | None:
    from kafkaseg.storage.fs import open_filesystem

    filesystem, inner = open_filesystem(path)
    try:
        with filesystem.open_input_stream(inner) as handle:
            return handle.read().decode("utf-8", "replace")
    except FileNotFoundError:
        return None


def _parsed_ends(text: str, where: str) -> dict:
    """:func:`parse_ends`, or nothing when malformed: going on from the table's max offset + 1 never skips a
    record (at worst it is a data loss error for offsets that held none)."""
    try:
        return parse_ends(text)
    except (ValueError, TypeError) as exc:
        print(f"warning: {where}: the recorded ending offsets are unreadable ({exc}); going on from the table's "
              "max offsets + 1")
        return {}


def _parsed_topics(text: str, where: str) -> dict:
    """The recorded ``{topic: {"topicId": .., "clusterId": ..}}``, or nothing (warned) when malformed."""
    try:
        data = json.loads(text)
        if not isinstance(data, dict) or not all(isinstance(v, dict) for v in data.values()):
            raise ValueError(f"not a {{topic: {{topicId, clusterId}}}} object: {text[:80]!r}")
        out = {}
        for topic, ids in data.items():
            kept = {k: str(v) for k, v in ids.items() if k in ("topicId", "clusterId") and v}
            epochs = ids.get("epochs")
            if isinstance(epochs, dict):  # the leader epoch marks (next_topics); a malformed one is not kept
                kept["epochs"] = {str(p): [int(m[0]), int(m[1])] for p, m in epochs.items()
                                  if isinstance(m, list) and len(m) == 2 and all(type(v) is int for v in m)}
            out[str(topic)] = kept
        return out
    except ValueError as exc:
        print(f"warning: {where}: the recorded topic ids are unreadable ({exc}); a recreated topic cannot be told "
              "from the one exported before")
        return {}


def ends_commit_properties(ends: dict, topics: dict | None = None, read_at_ms: int | None = None):
    """deltalake ``CommitProperties`` recording ``ends`` (and ``topics``) in the commit's metadata
    (:data:`ENDS_KEY`, :data:`TOPICS_KEY`), and, with ``read_at_ms``, the Delta app transaction :data:`APP_ID`
    (its version: when the run read the table), by which the next run's commit tells whether another export run
    committed since it read the table (runs overlapping, which would both append the same offsets)."""
    from deltalake import CommitProperties, Transaction

    metadata = {ENDS_KEY: offsets_json(ends)}
    if topics:
        metadata[TOPICS_KEY] = json.dumps(topics, sort_keys=True)
    return CommitProperties(custom_metadata=metadata,
                            app_transactions=None if read_at_ms is None else [Transaction(APP_ID, read_at_ms)])


def write_ends_file(output: str, ends: dict, topics: dict | None = None) -> None:
    """Record ``ends`` in a Parquet table's :data:`ENDS_FILE`, then ``topics`` in its :data:`TOPICS_FILE`,
    replacing them: each written beside it then moved over it, so a reader sees the old file or the new one (a
    local or HDFS rename; on object storage a copy)."""
    from kafkaseg.storage.fs import join, open_filesystem

    for name, text in ((ENDS_FILE, offsets_json(ends)),
                       (TOPICS_FILE, None if topics is None else json.dumps(topics, sort_keys=True))):
        if text is None:
            continue
        filesystem, path = open_filesystem(join(output, name))
        partial = f"{path}.{os.getpid()}.tmp"  # a hidden name too: no reader takes it for data
        with filesystem.open_output_stream(partial) as handle:
            handle.write(text.encode())
        filesystem.move(partial, path)


def check_partitioning(table_keys: Sequence[str], export_keys: Sequence[str], output: str, mode: str) -> None:
    """Refuse to add files partitioned otherwise than the table's (Delta would read the new rows' partition columns
    as null; Spark would not see Parquet files outside the table's folders)."""
    if list(table_keys) != list(export_keys):
        raise UsageError(f"--mode {mode}: {output} is partitioned by {', '.join(table_keys) or 'nothing'}, this "
                         f"export by {', '.join(export_keys) or 'nothing'}; pass --partition-by "
                         f"'{','.join(table_keys)}' or use --mode overwrite")


def check_not_compacted(table, output: str, mode: str) -> None:
    """Refuse to add an export's rows to a compacted table (jobs/compact.py's: its commits carry the app transaction
    :data:`kafkaseg.compacted_table.APP_ID`), saying what it is rather than which columns differ: the usual way out
    of a column mismatch, ``--mode overwrite``, would replace the table's state with an export."""
    from kafkaseg.compacted_table import APP_ID as COMPACTION_APP_ID

    if table.transaction_version(COMPACTION_APP_ID) is not None:
        raise UsageError(f"--mode {mode}: {output} is a compacted table written by jobs/compact.py (a row per key, "
                         "kept current by compaction runs), not an export table; export to another --output "
                         "(--mode overwrite would replace the table's state with this export)")


def check_columns(table_columns: Sequence[str], export_columns: Sequence[str], output: str, mode: str) -> None:
    """Refuse to append rows whose columns differ from the table's (Spark's writer would drop or null them)."""
    only_table = [c for c in table_columns if c not in export_columns]
    only_export = [c for c in export_columns if c not in table_columns]
    if only_table or only_export:
        raise UsageError(
            f"--mode {mode}: {output} has other columns than this export (only in the table: "
            f"{', '.join(only_table) or 'none'}; only in the export: {', '.join(only_export) or 'none'}); use the "
            "read options it was written with (includeHeaders, includeMetadata) or --mode overwrite")


# --------------------------------------------------------------------------------------------------------------------
# extract / load (Spark)

def extract(spark, paths: Sequence[str], options: dict):
    """A fresh kafkaseg DataFrame for one query, which scans it once. One ``load()`` per scan is what makes
    ``filterPushdown=true`` safe on PySpark versions that reuse a relation's pushed-down plan (see
    kafkaseg.spark.source)."""
    reader = spark.read.format(FORMAT)
    for key, value in scan_options(options).items():
        reader = reader.option(key, value)
    return reader.load(list(paths))


def scan_options(options: dict) -> dict:
    """The options :func:`extract` reads with (its scan's report records them)."""
    return {"filterPushdown": "true", **options}


def summarize_files(files: Iterable[tuple[dict, dict, Callable[[], pa.Table]]]) -> Summary:
    """``(topic, partition, records, first offset, last offset)`` per topic-partition, sorted, of the data files
    an export wrote, each given as ``(partition values from its path, its Delta-style stats, a function reading
    its topic, partition and offset columns)``. A file whose partition values or bounds pin one topic and one
    partition is counted from its footer's row count and offset bounds alone, which is every file the export
    writes (a Spark task reads slices of one topic-partition); any other is read, three columns of it."""
    totals: dict[tuple[str, int], list[int]] = {}

    def add(key: tuple[str, int], records: int, first: int, last: int) -> None:
        seen = totals.get(key)
        totals[key] = [records, first, last] if seen is None else [seen[0] + records, min(seen[1], first),
                                                                    max(seen[2], last)]

    for values, stats, read_columns in files:
        if not stats.get("numRecords"):
            continue
        low, high = stats.get("minValues", {}), stats.get("maxValues", {})
        pinned = {}
        for column in ("topic", "partition"):
            if values.get(column) is not None:
                pinned[column] = values[column]
            elif column in low and low[column] == high.get(column):
                pinned[column] = low[column]
        if len(pinned) == 2 and "offset" in low and "offset" in high:
            add((str(pinned["topic"]), int(pinned["partition"])), stats["numRecords"], low["offset"], high["offset"])
            continue
        grouped = read_columns().group_by(["topic", "partition"]).aggregate(
            [("offset", "count"), ("offset", "min"), ("offset", "max")])
        for t, p, n, lo, hi in zip(*(grouped.column(c).to_pylist() for c in (
                "topic", "partition", "offset_count", "offset_min", "offset_max"))):
            add((t, int(p)), n, lo, hi)
    return [(t, p, n, lo, hi) for (t, p), (n, lo, hi) in sorted(totals.items())]


def _delta_files(output: str, actions: list) -> list:
    """:func:`summarize_files`' input for the add actions of a Delta write."""
    return [(dict(a.partition_values), json.loads(a.stats), lambda a=a: _file_columns(output, a.path,
                                                                                      a.partition_values))
            for a in actions]


def spark_write_ids(paths: Iterable[str]) -> set[str]:
    """The write job ids in the names of Spark's data files (``part-00000-<job uuid>-c000.snappy.parquet``): one
    per write, so several among the files one write added mean another writer added files meanwhile."""
    import re

    names = (re.match(r"part-\d+-([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})",
                      p.rsplit("/", 1)[-1]) for p in paths)
    return {m.group(1) for m in names if m}


def _parquet_facts(output: str, files: Sequence[str]) -> list:
    """:func:`summarize_files`' input for Parquet data files of a table (paths as its filesystem names them)."""
    from kafkaseg.spark.tables import footer_stats, hive_partition_values
    from kafkaseg.storage.fs import open_filesystem

    filesystem, root = open_filesystem(output)
    out = []
    for path, stats in zip(files, footer_stats(filesystem, files)):
        values = hive_partition_values(path[len(root):].strip("/").split("/")[:-1])
        relative = path[len(root):].lstrip("/")
        out.append((values, stats, lambda relative=relative, values=values: _file_columns(output, relative, values)))
    return out


def _file_columns(output: str, relative: str, values: dict) -> pa.Table:
    """The topic, partition and offset columns of one data file (a partition column from its path)."""
    import pyarrow.parquet as pq

    from kafkaseg.storage.fs import join, open_filesystem

    filesystem, path = open_filesystem(join(output, relative))
    with filesystem.open_input_file(path) as handle:
        file = pq.ParquetFile(handle)
        present = [c for c in ("topic", "partition", "offset") if c in file.schema_arrow.names]
        table = file.read(columns=present)
    for column, kind in (("topic", pa.string()), ("partition", pa.int32())):
        if column not in table.column_names:
            table = table.append_column(column, pa.array([values.get(column)] * table.num_rows).cast(kind))
    return table


def print_summary(summary, out=None) -> None:
    out = sys.stdout if out is None else out
    width = max([len(f"{t}-{p}") for t, p, *_ in summary] + [15])
    print(f"{'topic-partition':<{width}}  {'records':>10}  {'offsets':>21}", file=out)
    for topic, partition, records, first, last in summary:
        print(f"{f'{topic}-{partition}':<{width}}  {records:>10,}  {f'{first}..{last}':>21}", file=out)
    print(f"{'total':<{width}}  {sum(s[2] for s in summary):>10,}", file=out)


def load(df, args: argparse.Namespace, source_schema: pa.Schema,
         check: Callable[[Summary], None] | None = None, prepared: dict | None = None) -> tuple[dict, Summary]:
    """Write the exported rows from the executors: Parquet with Spark's writer, Delta with Spark's Parquet writer
    and one delta-rs commit (:mod:`kafkaseg.spark.tables`). Returns what was committed and the summary of the
    files written (:func:`summarize_files`: from their footers, no second read of the data). ``check(summary)``
    runs before the Delta commit (after a Parquet write, which Spark commits itself); what it raises stops the
    job, for Delta with nothing committed. ``prepared`` (:func:`prepare`'s) gives what is recorded with the write,
    the ends (:func:`next_ends`) and topic ids (:func:`next_topics`): in the Delta commit's metadata, which is then
    made even when no record was read (an incremental run that read only a transaction's marker must still record
    that it read past it), or in a Parquet table's :data:`ENDS_FILE` and :data:`TOPICS_FILE`, after the data. A
    Delta append is refused when another export run committed since ``prepare`` read the table
    (:class:`~kafkaseg.errors.ConcurrentWriteError`, nothing committed; ``write_delta``'s ``seen``); a Parquet
    folder has no commit log, so another run's recorded ends appearing meanwhile are only warned about."""
    from kafkaseg.spark.tables import write_delta, write_parquet

    prepared = prepared or {}
    ends, topics = prepared.get("ends"), prepared.get("topics")
    mode = "append" if args.mode == "incremental" else args.mode
    if args.format == "parquet":
        # the files there before are not this run's, whatever the mode: an append keeps them, and so does an
        # overwrite under Spark's dynamic partition overwrite (spark.sql.sources.partitionOverwriteMode) for the
        # partition folders it does not write. Spark names each write's files with its own job id.
        before = set(_parquet_files(args.output))
        write_parquet(df, args.output, mode, args.partition_by)
        new = [f for f in _parquet_files(args.output) if f not in before]
        if len(spark_write_ids(new)) > 1:  # a plain Parquet folder has no transactions to tell them apart
            print(f"warning: other writes added files to {args.output} during this one: the summary below counts "
                  "theirs too")
        summary = summarize_files(_parquet_facts(args.output, new))
        if check is not None:
            check(summary)
        if ends is not None:
            now = recorded_ends(args.output, "parquet") if mode == "append" else {}
            if mode == "append" and now != prepared.get("recorded", {}):
                print(f"warning: another export run recorded its ends in {args.output} while this one ran: runs of "
                      "one Parquet table must not overlap (it has no commit log to refuse one), and offsets both "
                      "read are now in it twice")
                ends = {key: max(ends.get(key, 0), now.get(key, 0)) for key in {*ends, *now}}
            write_ends_file(args.output, ends, topics)
        return {}, summary
    found: list[Summary] = []

    def before_commit(actions):
        found.append(summarize_files(_delta_files(args.output, actions)))
        if check is not None:
            check(found[0])

    seen = prepared.get("seen") if mode == "append" else None
    properties = None if ends is None else ends_commit_properties(ends, topics, prepared.get("read_at_ms"))
    committed = write_delta(df, args.output, mode, args.partition_by, export_schema(source_schema),
                            before_commit=before_commit, commit_properties=properties, seen=seen)
    return committed, found[0]


def _arrow_schema(options: dict) -> pa.Schema:
    from kafkaseg.spark import read_options
    from kafkaseg.schema import arrow_schema

    parsed = read_options({**options, "path": "."})
    return arrow_schema(parsed.include_headers, parsed.include_metadata)


def skipped_report(metrics: dict, limit: int = 5) -> tuple[dict, list[str]]:
    """What the write's read skipped, from :meth:`kafkaseg.spark.ScanReport.read_metrics`: ``(summary, lines to
    print)``. Corrupt batches are skipped only with ``onCorruption=skip``; a torn tail of an active segment is
    always left out (reported); a segment deleted after planning is read from its ``.deleted`` name or, with
    ``failOnDataLoss=false``, skipped (reported), as is an active segment's flushed tail that is lost; ``lenient_decisions`` are the plan's choices under
    ``onCorruption=skip`` that leave records out or take more (a transaction whose marker fails its CRC taken as
    aborted, an unreadable checkpoint's bound replaced by the log end). Empty lines when nothing was skipped."""
    skipped = {"corrupt_batches": metrics.get("corrupt_batches", 0), "corrupt_bytes": metrics.get("corrupt_bytes", 0),
               "truncated_tails": [list(t) for t in metrics.get("truncated_tails", [])],
               # (read_metrics() gives Problems: the list keeps their bytes and offsets after path, byte, what)
               "problems": [p.as_list() if hasattr(p, "as_list") else list(p) for p in metrics.get("problems", [])],
               "vanished_segments": [list(v) for v in metrics.get("vanished_segments", [])],
               "missing_offsets": [list(m) for m in metrics.get("missing_offsets", [])],
               "unreadable_tails": [p.as_list() if hasattr(p, "as_list") else list(p)
                                    for p in metrics.get("unreadable_tails", [])],
               "lost_tails": [p.as_list() if hasattr(p, "as_list") else list(p)
                              for p in metrics.get("lost_tails", [])],
               "lenient_decisions": [list(d) for d in metrics.get("lenient_decisions", [])]}
    lines = []
    if skipped["lenient_decisions"]:
        from kafkaseg.planning import LenientDecision
        lines.append(f"{len(skipped['lenient_decisions'])} planning decisions of onCorruption=skip change which "
                     "records are in the table:")
        lines += _first([[LenientDecision(*d).describe()] for d in skipped["lenient_decisions"]], limit, "{}", "")
    if skipped["corrupt_batches"]:
        lines.append(f"skipped {skipped['corrupt_batches']:,} corrupt batches ({skipped['corrupt_bytes']:,} bytes; "
                     "onCorruption=skip): their records are not in the table")
    lines += _first(skipped["problems"], limit, "{} @ byte {}: {}", "problems")
    if skipped["truncated_tails"]:
        lines.append(f"left out {len(skipped['truncated_tails'])} truncated tails (a batch cut off at a segment's "
                     "end):")
        lines += _first(skipped["truncated_tails"], limit, "{} @ byte {}: {:,} bytes", "")
    if skipped["vanished_segments"]:
        lines.append(f"{len(skipped['vanished_segments'])} segments were deleted or replaced by the broker after "
                     "planning:")
        lines += _first(skipped["vanished_segments"], limit, "{} offsets [{}, {}): {}", "")
    if skipped["missing_offsets"]:
        lines.append(f"offsets missing between segments in {len(skipped['missing_offsets'])} places, above the cleaner "
                     "checkpoint (a segment file lost from this copy, or compaction the checkpoint does not record "
                     "yet; kafkaseg verify checks):")
        lines += _first(skipped["missing_offsets"], limit, "after {}: offsets [{}, {})", "")
    if skipped["unreadable_tails"]:
        lines.append(f"{len(skipped['unreadable_tails'])} segments (active ones with no high watermark, or rolled "
                     "ones cut short) end before offsets their own indexes or producer snapshots prove they held, "
                     "which the recovery point does not say were flushed (a crash may have lost them unflushed):")
        lines += _first(skipped["unreadable_tails"], limit, "{0} @ byte {1}: offsets [{4}, {5}) not in the table", "")
    skipped_at = {(p[0], p[1]) for p in skipped["problems"]}  # (under onCorruption=skip a lost tail is one of them)
    lost = [t for t in skipped["lost_tails"] if (t[0], t[1]) not in skipped_at]
    if lost:
        lines.append(f"data loss (failOnDataLoss=false): {len(lost)} segments (active ones, rolled ones cut short, or "
                     "a partition's deleted .log files) lost offsets the recovery point or high watermark says were "
                     "written:")
        lines += _first(lost, limit, "{0} @ byte {1}: offsets [{4}, {5}) not in the table", "")
    return skipped, lines


def _first(entries: list, limit: int, form: str, what: str) -> list[str]:
    """The first ``limit`` entries as indented lines, and how many more there are."""
    lines = ["  " + form.format(*entry) for entry in entries[:limit]]
    if len(entries) > limit:
        lines.append(f"  ... and {len(entries) - limit} more {what}".rstrip())
    return lines


def _write_metrics(paths: Sequence[str], options: dict, since: float) -> dict:
    """The read metrics of this run's scan (``extract``'s options over ``paths``, planned after ``since``), not of
    the newest scan on the host, which another application may have planned meanwhile."""
    from kafkaseg.spark.reports import plan_report_for

    report = plan_report_for(scan_options(options), list(paths), since)
    return report.read_metrics() if report is not None else {}


# --------------------------------------------------------------------------------------------------------------------
# main

def generate_sample(work_dir: str):
    """``([sample log dir], manifest)``: kafkaseg's sample data dir at ``<work_dir>/sample-kafka-logs`` (one fixed
    dir, replaced each run)."""
    from kafkaseg.testing import sample_data_dir

    data = Path(work_dir) / SAMPLE_DIR
    if data.exists():
        shutil.rmtree(data)
    data.mkdir(parents=True)
    manifest = sample_data_dir(data)
    print(f"sample log dir: {data} ({manifest.record_count:,} records in {len(manifest.partitions)} "
          f"topic-partitions)")
    return [str(data)], manifest


def run_in_session(app_name: str, work) -> None:
    """``work(spark)`` on a SparkSession (spark-submit's, or a local[*] one for a plain ``python jobs/...``) with
    the kafkaseg source registered; the session is stopped afterwards."""
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.appName(app_name)
    if "PYSPARK_GATEWAY_PORT" not in os.environ:  # plain `python jobs/<job>.py`, not spark-submit
        # Spark's Python workers run PYSPARK_PYTHON, else the `python3` on PATH, which may lack kafkaseg and
        # pyarrow (spark-submit.sh sets it): this interpreter has them
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        builder = (builder.master("local[*]").config("spark.sql.python.filterPushdown.enabled", "true")
                   .config("spark.sql.session.timeZone", "UTC"))
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel(os.environ.get("KAFKASEG_SPARK_LOG_LEVEL_JVM", "WARN"))
    try:
        from kafkaseg.spark import register

        register(spark)  # only when PySpark did not find pyspark_kafkaseg on its own
        work(spark)
    finally:
        spark.stop()


def prepare(args: argparse.Namespace) -> dict:
    """Everything the job decides before Spark starts (no JVM): the sample data dir, the output's location, the
    existing table (mode error refuses it here, before anything is read; append/incremental check its columns,
    offsets and topic incarnations) and the pinned read options. Prints the data loss a read with
    ``failOnDataLoss=false`` steps over. Raises :class:`UsageError`, ``FileExistsError`` or a ``KafkaSegError``."""
    from kafkaseg.spark.tables import SeenTable

    manifest = None
    paths = args.data_dir
    if args.sample:
        paths, manifest = generate_sample(args.work_dir)
    check_output_location(args.output, paths)
    listed = check_format(args.output, args.format, mode=args.mode)
    existing = None
    recorded: dict = {}  # where the table's export runs read up to (append and incremental keep it)
    topics: dict = {}  # the topic and cluster ids they read
    seen = None  # what this run saw of its Delta table: another export committing since fails it
    read_at_ms = int(time.time() * 1000)  # the version of its app transaction (kafkaseg.export) in its commit
    exists = table_exists(args.output, args.format)
    if not exists and args.format == "delta" and args.mode in ("append", "incremental"):
        seen = SeenTable(APP_ID, existed=False)  # another run creating the table meanwhile fails this one's write
    # (listed once, by check_format: a parquet output has no _delta_log there, or it raised)
    files = listed.get("parquet", []) if exists and args.format == "parquet" else None
    if files == []:
        exists = False  # a folder without data files (an earlier run that wrote nothing): no rows to keep,
        if args.mode in ("append", "incremental"):  # but the ends that run recorded still stand
            recorded, topics = recorded_state(args.output, args.format)
    if exists:
        if args.mode == "error":
            raise FileExistsError(f"{args.output} already exists (use --mode overwrite, append or incremental)")
        if args.mode in ("append", "incremental"):
            table = None
            if args.format == "delta":
                from deltalake import DeltaTable

                # read first: what is read below is of this state or a later one, so a run committing since is seen
                table = DeltaTable(args.output)
                check_not_compacted(table, args.output, args.mode)
                seen = SeenTable(APP_ID, existed=True, app_version=table.transaction_version(APP_ID))
            if table is not None:
                from kafkaseg.compacted_table import delta_dataset

                dataset = delta_dataset(args.output, table)
            else:
                dataset = _existing_dataset(args.output, args.format, files)
            check_columns(existing_columns(args.output, args.format, dataset),
                          export_schema(_arrow_schema(args.options)).names, args.output, args.mode)
            check_partitioning(existing_partitioning(args.output, args.format, files, table), args.partition_by,
                               args.output, args.mode)
            existing = existing_offsets(args.output, args.format, dataset)
            recorded, topics = recorded_state(args.output, args.format, table)
    # The write reads explicit offsets, resolved once here (an incremental run's from the table's): Spark may plan
    # the read more than once, and on a live broker's dir the high watermark moves meanwhile. One listing serves
    # every plan of the run, and the replicas it reads give the leader epochs checked and recorded.
    from kafkaseg.options import ReadOptions
    from kafkaseg.planning import list_partitions, select_partitions

    read_options = ReadOptions.from_options(args.options)
    listing = None if read_options.replicas == "all" else list_partitions(list(paths), read_options)
    ranges, report = plan_ranges(paths, args.options, listing)
    pdirs = {} if listing is None else {(p.topic, p.partition): p for p in select_partitions(
        None, read_options, check_subscribed=False, listing=listing)}
    if args.mode in ("incremental", "append") and ranges is None:
        raise UsageError(f"--mode {args.mode} cannot be used with replicas=all (one partition, several ranges: "
                         "duplicates could not be told from copies)")
    if "topic" in args.partition_by:  # (replicas=all plans no ranges here: the topics the options select then)
        if report is not None:
            selected = {p.topic for p in report.partitions}
        else:  # discovered as the read discovers (its __remote_log_metadata: a tiered store whose copies are all
            # gone is the metadata's data loss, said by the read, not a path to refuse here; its key ring)
            selected = {p.topic for p in list_partitions(list(paths), read_options).partitions
                        if read_options.selects_topic(p.topic)}
        check_partition_values(selected, args.partition_by, "--partition-by ''")
    if report is not None and args.mode in ("incremental", "append"):
        check_incarnations(topics, report, args.output)
    diverged: dict = {}
    if args.mode in ("incremental", "append") and recorded:  # (an append after a divergence would hide it)
        diverged = check_divergence(topics, pdirs, recorded, read_options.fail_on_data_loss)
    if (existing or recorded) and ranges is not None:
        if args.mode == "incremental":
            # resolved again from the new starts: a start below the log start offset is data loss (or clamped)
            ranges, report = plan_ranges(paths, pinned_options(args.options,
                                                               incremental_ranges(ranges, existing, recorded)),
                                         listing)
        elif args.mode == "append" and (duplicated := overlaps(ranges, existing or {})):
            raise UsageError(f"--mode append would duplicate what {args.output} holds: {'; '.join(duplicated)} "
                             "(use --mode incremental to export only newer offsets, or --mode overwrite)")
    data_loss = list(diverged.values()) + (list(report.data_loss) if report is not None else [])
    for line in data_loss:  # failOnDataLoss=false: the read starts past records that are gone
        print(f"warning: data loss (failOnDataLoss=false): {line}")
    if ranges is None:
        options = dict(args.options)
        print("replicas=all: offsets not pinned (each copy has its own range)")
    else:
        options = pinned_options(args.options, ranges)
    # with replicas=all nothing can be recorded: an empty record, so a later run goes on from the table's offsets
    ends = {} if ranges is None else next_ends(recorded, ranges)
    # (a partition whose divergence this run went past: its mark, replacing the table's, is taken at the table's
    # end at least, not at a backfill's lower end, which would leave offsets between out of later checks)
    marks = {} if ranges is None else epoch_marks(pdirs, {key: max(end, recorded.get(key, 0)) if key in diverged
                                                          else end for key, (_, end) in ranges.items()})
    return {"paths": paths, "manifest": manifest, "existing": existing, "ranges": ranges, "options": options,
            "ends": ends, "recorded": recorded,
            "topics": {} if report is None else next_topics(topics, report, marks, diverged),
            "seen": seen, "read_at_ms": read_at_ms, "data_loss": data_loss}


def run(spark, args: argparse.Namespace, prepared: dict | None = None) -> dict:
    """The job on an existing SparkSession (``prepared``: :func:`prepare`'s result, made here when None); returns
    what it did (for tests and the final report line)."""
    started, planned_after = time.perf_counter(), time.time()
    if prepared is None:
        prepared = prepare(args)
    paths, manifest, existing = prepared["paths"], prepared["manifest"], prepared["existing"]
    ranges, options = prepared["ranges"], prepared["options"]
    unchanged = {"paths": paths, "output": args.output, "records": 0, "summary": [], "manifest": manifest,
                 "ranges": ranges, "committed": {}}
    if existing is not None and ranges is not None and all(start >= end for start, end in ranges.values()):
        print(f"nothing new to export: {args.output} unchanged (no offsets past the table's)")
        return unchanged

    def check(summary: Summary) -> None:
        total = sum(s[2] for s in summary)
        if manifest is not None and not args.options and total != manifest.record_count:
            raise SystemExit(f"read {total} records but the sample holds {manifest.record_count}")

    committed, summary = load(with_export_columns(extract(spark, paths, options)), args,
                              _arrow_schema(args.options), check, prepared)
    print_summary(summary)
    from kafkaseg.spark.jobs import abandoned_line

    if (line := abandoned_line(args.output, committed)) is not None:
        print(line)
    total = sum(s[2] for s in summary)
    skipped, lines = skipped_report(_write_metrics(paths, options, planned_after))  # also when nothing was written: the read may have skipped
    if total == 0 and existing is not None:
        print(f"nothing new to export: {args.output} holds the same rows (the offsets past the table's hold no "
              "records, e.g. a transaction's marker; recorded that they were read)")
        for line in lines:
            print(line)
        return {**unchanged, "committed": committed, "skipped": skipped}
    seconds = time.perf_counter() - started
    print(f"wrote {total:,} records to {args.format} table {args.output} in {seconds:.1f}s")
    for line in lines:
        print(line)
    return {"paths": paths, "output": args.output, "records": total, "summary": summary, "manifest": manifest,
            "ranges": ranges, "committed": committed, "skipped": skipped}


def main(argv: Sequence[str] | None = None) -> int:
    """Exit status 0, 2 for a usage or input problem (bad arguments or options, a missing data dir, an existing
    table, a refused append), 1 otherwise; errors are one line on stderr."""
    from kafkaseg.spark.jobs import report_error

    args = parse_args(argv)
    try:
        prepared = prepare(args)
        run_in_session("kafkaseg-export", lambda spark: run(spark, args, prepared))
    except Exception as exc:  # noqa: BLE001 - report_error re-raises what it does not know
        return report_error(exc, "export.py", usage=(UsageError,))
    return 0


if __name__ == "__main__":
    sys.exit(main())
