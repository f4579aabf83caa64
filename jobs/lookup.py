"""Bulk offset/time lookups on Kafka log dirs, distributed with Spark (spark-submit jobs/lookup.py ...).

Input: rows of ``topic``, ``partition`` and ``time`` (-1/-2/-3/epoch ms/ISO-8601, as ``kafkaseg offsets --time``)
and/or ``offset`` (as ``kafkaseg locate --offset``; partition and offset are an optional '-' and ASCII digits, the
partition 0..2^31-1, the offset a 64-bit long), from a CSV file (with a header), JSON lines, Parquet (a file or
folder), a Delta table, or a table name.
Every row is answered by the Spark-free :mod:`kafkaseg.lookup` on the executors (``mapInArrow``, or
``rdd.mapPartitions`` without pandas: each task opens the partitions it needs once and reuses their index files
across its rows). Output: one row per input row::

    topic, partition, time, request_offset,          what was asked (time as given, request_offset as given)
    offset, timestamp, leader_epoch, reason,          the ListOffsets answer for `time` (offset null = no offset)
    segment, position, batch_base_offset, record_offset, record_timestamp, is_control, found
                                                     where `offset` (or the answer for `time`) lives: its record's
                                                     timestamp, and whether it is a control record (a transaction
                                                     marker, never delivered to consumers)
    ...                                              every other input column, as given (its type kept: a
                                                     request id joins answers back to requests)

written as Parquet or Delta (``deltalake`` package). Every executor must see ``--data-dir`` at the same path (a
shared mount, or a URI pyarrow can open).

Usage::

    spark-submit jobs/lookup.py --data-dir /var/lib/kafka/data --input requests.csv --output answers \\
        [--format parquet|delta] [--isolation read_committed] [--mode overwrite]
"""

from __future__ import annotations

import argparse
import importlib.util
import logging
import re
import sys
import textwrap
from typing import Iterable, Iterator, Sequence

import pyarrow as pa

from jobs.export import WRITE_MODES, UsageError, check_format, check_output_location, data_file_format, job_parser
from kafkaseg.errors import BadPathError, InvalidOptionError
from kafkaseg.spark.jobs import positive_int

OUTPUT_SCHEMA = pa.schema([
    pa.field("topic", pa.string()),
    pa.field("partition", pa.int32()),
    pa.field("time", pa.string()),
    pa.field("request_offset", pa.int64()),
    pa.field("offset", pa.int64()),
    pa.field("timestamp", pa.int64()),
    pa.field("leader_epoch", pa.int32()),
    pa.field("reason", pa.string()),
    pa.field("segment", pa.string()),
    pa.field("position", pa.int64()),
    pa.field("batch_base_offset", pa.int64()),
    pa.field("record_offset", pa.int64()),
    pa.field("record_timestamp", pa.int64()),
    pa.field("is_control", pa.bool_()),
    pa.field("found", pa.bool_()),
])
OUTPUT_DDL = ("topic STRING, partition INT, time STRING, request_offset BIGINT, offset BIGINT, timestamp BIGINT, "
              "leader_epoch INT, reason STRING, segment STRING, position BIGINT, batch_base_offset BIGINT, "
              "record_offset BIGINT, record_timestamp BIGINT, is_control BOOLEAN, found BOOLEAN")
REQUEST_COLUMNS = ("topic", "partition", "time", "offset")


def output_schema(extra: Sequence[str] | pa.Schema = ()) -> pa.Schema:
    """:data:`OUTPUT_SCHEMA` followed by the request's other columns: ``extra`` their fields (types kept), or
    their names (strings)."""
    fields = list(extra) if isinstance(extra, pa.Schema) else [pa.field(name, pa.string()) for name in extra]
    return pa.schema(list(OUTPUT_SCHEMA) + fields)


def extra_columns(columns: Sequence[str]) -> list[str]:
    """The request columns passed through to the answers: every column but the request's own, and but any that
    would clash with an answer column (refused, naming it)."""
    extra = [c for c in columns if c not in REQUEST_COLUMNS]
    answers = {name.lower() for name in OUTPUT_SCHEMA.names}
    # (Spark resolves names case-insensitively; mapInArrow cannot take a name with a dot or a backtick)
    clash = [c for c in extra if c.lower() in answers or c.lower() in REQUEST_COLUMNS]
    seen: dict = {}
    for c in extra:
        seen.setdefault(c.lower(), []).append(c)
    clash += [c for names in seen.values() if len(names) > 1 for c in names]
    odd = [c for c in extra if "." in c or "`" in c]
    if clash or odd:
        why = (f"columns {', '.join(map(repr, dict.fromkeys(clash)))} have the name of an answer or request column, "
               "or of each other, in another case" if clash else
               f"columns {', '.join(map(repr, odd))} have a dot or a backtick in their names")
        raise InvalidOptionError(f"--input {why}: rename them (every other input column is passed through to the "
                                 "answers as it is)")
    return extra


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = job_parser(
        "lookup.py", textwrap.fill("Bulk kafkaseg offset/time lookups with Spark. Input columns: topic, partition, and time "
        "(-1/latest, -2/earliest, -3/max-timestamp, epoch ms or ISO-8601) and/or offset; partition and offset are an "
        "optional '-' and ASCII digits (partition 0..2147483647, offset 64-bit); one output row per input row (a row "
        "that cannot be answered gets a reason).", 100), None)
    parser.add_argument("--input", required=True, metavar="PATH",
                        help="CSV (.csv), JSON lines (.json/.jsonl), Parquet, a folder of one of them (as Spark writes "
                             "it), a Delta table, or a table name")
    parser.add_argument("--output", required=True, metavar="PATH", help="output path (or table location)")
    parser.add_argument("--format", choices=("parquet", "delta"), default="parquet", help="(default parquet)")
    parser.add_argument("--mode", choices=WRITE_MODES, default="error",
                        help="when the output exists (default: error)")
    parser.add_argument("--isolation", choices=("read_uncommitted", "read_committed"), default="read_uncommitted",
                        help="which offsets are fetchable: up to the high watermark or the last stable offset, as "
                             "Kafka's ListOffsets answers (default read_uncommitted)")
    parser.add_argument("--partitions", type=positive_int, default=None, metavar="N",
                        help="repartition the requests into this many tasks (1 or more)")
    parser.add_argument("--on-corruption", choices=("fail", "skip"), default="fail",
                        help="as `kafkaseg locate --on-corruption`; with fail (default) the damage is the row's "
                             "reason")
    return parser.parse_args(argv)


# -- extract --------------------------------------------------------------------------------------------------

def input_format(source: str) -> str:
    """How ``--input`` is read: ``delta`` for a folder holding ``_delta_log`` (whatever its name), ``csv``,
    ``json`` (JSON lines) or ``parquet`` for a file or folder (by its extension, compressed or not, or for a folder by
    the extension its data files share, as Spark writes them, ``partitionBy`` subfolders included), else ``table``
    (a table name). A folder whose files name no single format is a ValueError."""
    from kafkaseg.storage.fs import join, list_dir, open_filesystem, stat

    entry = stat(source)
    if entry is not None and entry.is_dir and stat(join(source, "_delta_log")) is not None:
        return "delta"
    named = data_file_format(source.rstrip("/").rsplit("/", 1)[-1])
    if named is not None:
        return named
    if entry is None:
        return "table"
    if not entry.is_dir:
        raise ValueError(f"{source}: give a .csv, .json/.jsonl or .parquet file, a folder of them, a Delta table "
                         "or a table name")
    filesystem, root = open_filesystem(source)  # listed paths are the filesystem's own (no scheme on S3)
    kinds = set()
    folders, seen = [root], 0
    while folders and seen < 1000:  # Spark's output: part files, maybe under partitionBy folders (topic=x/)
        for item in list_dir(folders.pop(), filesystem):
            if item.name.startswith(("_", ".")):
                continue
            if item.is_dir:
                folders.append(item.path)
                continue
            seen += 1
            kinds.add(data_file_format(item.name))
    if len(kinds) != 1 or None in kinds:
        raise ValueError(f"{source}: cannot tell the format of this folder's files (give a folder of .csv, .json or "
                         ".parquet files, compressed or not, or a Delta table)")
    return kinds.pop()


def extract(spark, source: str):
    """The request rows as a DataFrame with string columns topic, partition, time, offset (missing ones null),
    followed by the other columns as they are (passed through to the answers), from
    a CSV file or folder (with a header), JSON lines, Parquet, a Delta table (read with ``deltalake``), or a table
    name (:func:`input_format`)."""
    from pyspark.sql import functions as F

    fmt = input_format(source)
    if fmt == "csv":
        df = spark.read.option("header", "true").csv(source)
    elif fmt == "json":
        df = spark.read.json(source)
    elif fmt == "parquet":
        df = spark.read.parquet(source)
    elif fmt == "delta":
        from kafkaseg.compacted_table import delta_dataset

        df = spark.createDataFrame(delta_dataset(source).to_table())
    else:
        df = spark.table(source)
    missing = [name for name in ("topic", "partition") if name not in df.columns]
    extra = extra_columns(df.columns)
    if missing:
        raise InvalidOptionError(f"--input {source}: no {' or '.join(missing)} column (found: "
                                 f"{', '.join(df.columns) or 'none'}); every request names a topic and a partition")
    for name in ("time", "offset"):
        if name not in df.columns:
            df = df.withColumn(name, F.lit(None).cast("string"))
    from pyspark.sql.types import CalendarIntervalType, DayTimeIntervalType, YearMonthIntervalType

    intervals = (CalendarIntervalType, DayTimeIntervalType, YearMonthIntervalType)  # no table format stores them
    return df.select(*(F.col(f"`{name}`").cast("string").alias(name) for name in REQUEST_COLUMNS),
                     *(F.col(f"`{name}`").cast("string").alias(name) if isinstance(df.schema[name].dataType, intervals)
                       else F.col(f"`{name}`") for name in extra))


# -- transform (pure: no Spark) -------------------------------------------------------------------------------

INT32_MAX = (1 << 31) - 1
INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1
_INTEGER = re.compile(r"-?[0-9]+")  # ASCII only: Python's int() also takes '+5', '1_000' and non-ASCII digits


def _as_int(value, name: str = "value", low: int = INT64_MIN, high: int = INT64_MAX) -> int | None:
    """``value`` (a string cell; surrounding blanks ignored) as an integer in ``[low, high]``, None when empty.
    An integer is an optional '-' then ASCII digits; anything else, or a value outside the range (which the
    output's int32/int64 column cannot hold: one such row would fail its whole Arrow batch), is a ValueError
    naming the column, which the row gets as its reason."""
    if value is None:
        return None
    text = str(value).strip()
    if not text:
        return None
    if _INTEGER.fullmatch(text) is None:
        raise ValueError(f"{name} {text!r} is not an integer")
    number = int(text)
    if not low <= number <= high:
        raise ValueError(f"{name} {text} is out of range ({low}..{high})")
    return number


def lookup_batches(batches: Iterable[pa.RecordBatch], data_dirs: Sequence[str],
                   isolation: str = "read_uncommitted", extra: Sequence[str] = (),
                   lenient: bool = False) -> Iterator[pa.RecordBatch]:
    """Answer every request row of ``batches`` (columns topic, partition, time, offset, and ``extra`` ones passed
    through as they are, whatever their type) with :mod:`kafkaseg.lookup`.

    Runs anywhere (Spark's ``mapInArrow`` calls it on executors). Partitions are discovered once per call and each
    partition's :class:`~kafkaseg.lookup.PartitionLookup` is reused across rows. A row naming a partition that is
    not there, a partition, offset or time that is malformed or out of range (partition 0..2^31-1, offset and time
    64-bit), or neither a time nor an offset, gets a null answer and a ``reason``; it never fails the task. A time
    answered with an offset no record holds (the log end for -1) has ``found`` false and no reason. ``lenient``
    (``--on-corruption skip``): lookups go past damage as a read with ``onCorruption=skip`` does, and the log stands
    in for unreadable checkpoints; by default such damage is the row's reason, unless another copy of the partition
    among the data dirs answers (:func:`~kafkaseg.lookup.from_other_copies`, as ``kafkaseg offsets``/``locate`` and a
    strict read fall back), said as a warning on the ``kafkaseg.lookup`` logger (the executor's log)."""
    from kafkaseg.errors import CorruptCheckpointError, CorruptDataError, KafkaSegError
    from kafkaseg.lookup import (PartitionLookup, from_other_copies, list_offset_rests_on, locate_rests_on,
                                 other_copies, parse_time_spec, widest)
    from kafkaseg.storage.layout import other_copy_line
    from kafkaseg.remote_metadata import ON_CORRUPTION_WAYS_ON, read_remote_log_metadata
    from kafkaseg.storage.fs import redact
    from kafkaseg.storage.layout import choose_replicas, discover
    from kafkaseg.storage.probed_index import OpenFileLimit

    by_topic: dict[str, list] = {}
    # which tiered-storage copies are live (and which live ones are missing: -2 is then the broker's log start, an
    # offset in one lost with it) from __remote_log_metadata among the data dirs, as for `kafkaseg offsets`/`locate`
    for pdir in discover(list(data_dirs), remote_log_metadata=lambda metadata: read_remote_log_metadata(
            metadata, lenient=lenient, ways_on=ON_CORRUPTION_WAYS_ON)):
        by_topic.setdefault(pdir.topic, []).append(pdir)
    chosen: dict[str, dict | KafkaSegError] = {}  # per topic, when a row first asks: a stale copy of one topic
                                                   # (a refused replica choice) fails that topic's rows only

    def replica(topic: str, partition: int):
        if topic not in chosen:
            try:
                chosen[topic] = {c.partition: c for c in choose_replicas(by_topic.get(topic, []))}
            except KafkaSegError as err:
                chosen[topic] = err
        found = chosen[topic]
        if isinstance(found, KafkaSegError):
            raise found
        if partition not in found:
            raise KafkaSegError(f"no partition {topic}-{partition} under {', '.join(redact(d) for d in data_dirs)}")
        return found[partition]

    open_files = OpenFileLimit(256)  # shared by every partition's lookup kept open across rows
    lookups: dict[tuple[str, int], PartitionLookup] = {}
    copy_lookups: dict[str, PartitionLookup] = {}  # other copies' (by folder), opened when one is asked

    def answer_row(lookup, time, request_offset) -> tuple[dict, tuple]:
        """The row's answer columns from ``lookup``, and the offsets the answer rests on."""
        found, rests = {}, None
        target = request_offset
        if time not in (None, ""):
            spec = parse_time_spec(time)
            result = lookup.list_offset(spec)
            found.update(offset=result.offset, timestamp=result.timestamp, leader_epoch=result.leader_epoch,
                         reason=result.reason)
            rests = list_offset_rests_on(chosen_pdir, spec, result)
            if target is None:
                target = result.offset
        if target is not None:
            location = lookup.locate(target)
            found.update(found=location.found, segment=location.segment, record_offset=location.record_offset,
                         record_timestamp=location.record_timestamp)
            if location.batch is not None:
                found.update(position=location.batch.position, batch_base_offset=location.batch.base_offset,
                             is_control=location.batch.is_control)
            # `reason` says why a row is not answered. An offset given is answered only where a record has it; a
            # time's offset is the answer even where no record has it (-1 on a caught-up partition is the log end,
            # -2 on an emptied one too): `found` false says so, no reason.
            if found.get("reason") is None and request_offset is not None:
                found["reason"] = location.reason
            located = locate_rests_on(chosen_pdir, target, location)
            rests = located if rests is None else widest(rests, located)
        return found, rests

    def copy_lookup(copy):
        if copy.path not in copy_lookups:
            copy_lookups[copy.path] = PartitionLookup(copy, isolation=isolation, open_files=open_files)
        return copy_lookups[copy.path]

    chosen_pdir = None
    try:
        for batch in batches:
            rows = batch.select(list(REQUEST_COLUMNS)).to_pylist()
            out = {f.name: [] for f in OUTPUT_SCHEMA}
            for row in rows:
                topic = row.get("topic")
                answer = dict.fromkeys(out)
                answer.update(topic=topic, time=row.get("time"), found=False)
                try:
                    partition = _as_int(row.get("partition"), "partition", 0, INT32_MAX)
                    answer["partition"] = partition
                    request_offset = _as_int(row.get("offset"), "offset")
                    answer["request_offset"] = request_offset
                    if topic in (None, ""):
                        raise ValueError("no topic given")
                    if partition is None:
                        raise ValueError("no partition given")
                    if request_offset is None and answer["time"] in (None, ""):
                        raise ValueError("no time or offset given")
                    key = (topic, partition)
                    choice = replica(topic, partition)
                    chosen_pdir = choice.chosen
                    if key not in lookups:
                        lookups[key] = PartitionLookup(chosen_pdir, isolation=isolation, open_files=open_files,
                                                       lenient=lenient, checkpoints_checked=lenient)
                    try:
                        found, _ = answer_row(lookups[key], answer["time"], request_offset)
                    except CorruptDataError as err:
                        # another copy answers, as a strict read reads the offsets the chosen copy cannot supply
                        # from another (not with --on-corruption skip: the lookup went past the damage then)
                        others = other_copies(choice)
                        if lenient or not others:
                            raise
                        (found, _), switched = from_other_copies(
                            chosen_pdir, others, err,
                            lambda copy: answer_row(copy_lookup(copy), answer["time"], request_offset),
                            lambda done: done[1], isolation=isolation)
                        logging.getLogger("kafkaseg.lookup").warning("jobs/lookup.py: %s-%s: %s", topic, partition,
                                                                     other_copy_line(switched))
                    answer.update(found)
                except (KafkaSegError, ValueError) as err:
                    # (with what its notes add: the other copies tried, ...)
                    answer["reason"] = str(err) + "".join(f" ({note})" for note in getattr(err, "__notes__", ()))
                    if not lenient and isinstance(err, CorruptDataError) \
                            and not isinstance(err, CorruptCheckpointError):
                        answer["reason"] += (" (--on-corruption skip reads on past damage where a read with "
                                             "onCorruption=skip does)")
                for name in out:
                    out[name].append(answer[name])
            # the request's other columns pass through as they came, whatever their type (no Python value each)
            passed = [batch.column(name) for name in extra]
            yield pa.RecordBatch.from_arrays([pa.array(out[f.name], f.type) for f in OUTPUT_SCHEMA] + passed,
                                             schema=output_schema(pa.schema([batch.schema.field(n) for n in extra])))
    finally:
        for lookup in [*lookups.values(), *copy_lookups.values()]:
            lookup.close()


def _rows_to_answers(rows, data_dirs: Sequence[str], isolation: str, extra: Sequence[str] = (), chunk: int = 4096,
                     lenient: bool = False):
    """RDD fallback of :func:`lookup_batches`: Spark Rows in, answer tuples out (in chunks of ``chunk`` rows), each
    followed by its row's ``extra`` values as Spark gave them."""
    from collections import deque

    request_schema = pa.schema([(n, pa.string()) for n in REQUEST_COLUMNS])
    pending: deque = deque()  # each batch's rows, until its answers come back (one batch in, one out, in order)

    def batches():
        for chunk_rows in _chunks(rows, chunk):
            pending.append(chunk_rows)
            yield pa.RecordBatch.from_pylist([{n: row[n] for n in REQUEST_COLUMNS} for row in chunk_rows],
                                             schema=request_schema)

    for answer_batch in lookup_batches(batches(), data_dirs, isolation, lenient=lenient):
        for answer, row in zip(answer_batch.to_pylist(), pending.popleft(), strict=True):
            yield (*answer.values(), *(row[n] for n in extra))


def _chunks(items: Iterable, size: int) -> Iterator[list]:
    buffer = []
    for item in items:
        buffer.append(item)
        if len(buffer) >= size:
            yield buffer
            buffer = []
    if buffer:
        yield buffer


def _has_pandas() -> bool:
    return importlib.util.find_spec("pandas") is not None


def transform(requests, data_dirs: Sequence[str], isolation: str = "read_uncommitted", partitions: int | None = None,
              lenient: bool = False):
    """The answers DataFrame (schema :data:`OUTPUT_DDL`) for a requests DataFrame: ``mapInArrow`` over
    :func:`lookup_batches`, or the same function over ``rdd.mapPartitions`` where pandas (which PySpark's
    ``mapInArrow`` insists on importing) is not installed."""
    if partitions:
        requests = requests.repartition(partitions)
    dirs = list(data_dirs)
    from pyspark.sql.types import StructType

    extra = extra_columns(requests.columns)
    # the answers' schema, then the request's other columns with their own types
    schema = StructType(list(requests.sparkSession.createDataFrame([], OUTPUT_DDL).schema.fields)
                        + [requests.schema[name] for name in extra])
    if _has_pandas():
        return requests.mapInArrow(lambda it: lookup_batches(it, dirs, isolation, extra, lenient), schema)
    # Rows carry a timestamp as a naive local datetime, which the hour a daylight-saving clock repeats makes
    # ambiguous: top-level ones go through the RDD as microseconds since the epoch (nested ones as Rows do)
    from pyspark.sql import functions as F
    from pyspark.sql.types import TimestampType

    stamped = {name for name in extra if isinstance(requests.schema[name].dataType, TimestampType)}

    def column(name: str, convert):
        return convert(F.col(f"`{name}`")).alias(name) if name in stamped else F.col(f"`{name}`")

    plain = requests.select(*(column(name, F.unix_micros) for name in requests.columns))
    rdd = plain.rdd.mapPartitions(lambda rows: _rows_to_answers(rows, dirs, isolation, extra, lenient=lenient))
    answers = requests.sparkSession.createDataFrame(rdd, StructType(
        list(schema.fields[:len(OUTPUT_SCHEMA)]) + [plain.schema[name] for name in extra]))
    return answers.select(*(column(name, F.timestamp_micros) for name in answers.columns))


def _arrow_fields(spark_schema, names: Sequence[str]) -> pa.Schema:
    """The Arrow fields of Spark columns ``names`` as they are written to Parquet (timestamps in UTC)."""
    from pyspark.sql.pandas.types import to_arrow_type

    def arrow(data_type):
        try:
            return to_arrow_type(data_type, timezone="UTC")
        except TypeError:  # a PySpark whose to_arrow_type takes no time zone (its timestamps are UTC)
            return to_arrow_type(data_type)

    return pa.schema([pa.field(name, arrow(spark_schema[name].dataType)) for name in names])


# -- load -----------------------------------------------------------------------------------------------------

def load(answers, output: str, fmt: str = "parquet", mode: str = "error") -> None:
    """Write the answers as Parquet (Spark's writer) or Delta (Spark writes the Parquet files into the table's
    folder, in parallel, and one delta-rs commit adds them: :func:`kafkaseg.spark.tables.write_delta`; no staging
    copy beside the output). When the write fails, an output this call created is removed, so that a rerun does
    not find an empty or partial one in its way."""
    from kafkaseg.storage.fs import open_filesystem, stat

    created = stat(output) is None
    try:
        _write(answers, output, fmt, mode)
    except BaseException:
        if created and stat(output) is not None:
            filesystem, root = open_filesystem(output)
            try:
                filesystem.delete_dir(root)
            except OSError:
                pass
        raise


def _write(answers, output: str, fmt: str, mode: str) -> None:
    if fmt == "parquet":
        answers.write.mode("errorifexists" if mode == "error" else mode).parquet(output)
        return
    from kafkaseg.spark.tables import write_delta

    extra = extra_columns(answers.columns[len(OUTPUT_SCHEMA):])
    if mode == "append":
        answers = _as_the_tables_strings(answers, output, extra)
    write_delta(answers, output, mode, [], output_schema(_arrow_fields(answers.schema, extra)))


def _as_the_tables_strings(answers, output: str, extra: Sequence[str]):
    """``answers`` with the request columns an existing Delta table holds as strings cast to strings: the job
    passed every request column through as a string until 2026-11, and a scheduled append to a table it wrote
    goes on (the table's other columns must match: :func:`kafkaseg.spark.tables.write_delta` refuses others)."""
    from kafkaseg.storage.fs import is_delta_table

    if not extra or not is_delta_table(output):
        return answers
    from deltalake import DeltaTable
    from pyspark.sql import functions as F
    from pyspark.sql.types import StringType

    held = {f.name: str(getattr(f.type, "type", "")) for f in DeltaTable(output).schema().fields}
    strings = {name for name in extra if held.get(name) == "string"
               and not isinstance(answers.schema[name].dataType, StringType)}
    return answers.select(*(F.col(f"`{name}`").cast("string").alias(name) if name in strings
                            else F.col(f"`{name}`") for name in answers.columns))


def check(args: argparse.Namespace) -> None:
    """What can be refused before Spark starts: a data dir or an ``--input`` file or folder that is not there
    (``BadPathError``, the ``LayoutError`` discovery raises for such a path; a table name is Spark's to find), an
    output inside a data dir's log dir or holding one (``UsageError``: an overwrite deleted the log dir before the
    lookups ran), an existing output with ``--mode error`` (``FileExistsError``), a Delta table ``--mode append``
    cannot add answers to (``TableSchemaError``: another job's table, or answer columns of another type)."""
    from kafkaseg.remote_metadata import ON_CORRUPTION_WAYS_ON, read_remote_log_metadata
    from kafkaseg.storage.fs import join, stat
    from kafkaseg.spark.tables import check_delta_append
    from kafkaseg.storage.layout import discover

    # discovered as the executors discover (a store whose copies are all gone is there when the metadata says so)
    discover(list(args.data_dir), remote_log_metadata=lambda metadata: read_remote_log_metadata(
        metadata, lenient=args.on_corruption == "skip", ways_on=ON_CORRUPTION_WAYS_ON))
    check_output_location(args.output, list(args.data_dir))
    check_format(args.output, args.format, mode=args.mode)
    globbed = any(c in args.input for c in "*?[{")  # Spark's readers expand globs
    if not globbed and input_format(args.input) != "table" and stat(args.input) is None:
        raise BadPathError(f"--input {args.input}: no such file or directory")
    if args.mode == "error":
        entry = stat(join(args.output, "_delta_log") if args.format == "delta" else args.output)
        if entry is not None:
            raise FileExistsError(f"{args.output} already exists (use --mode overwrite or append)")
    if args.mode == "append" and args.format == "delta":
        # before Spark starts: another job's table (a compacted or export table) is refused, as at commit
        check_delta_append(args.output, OUTPUT_SCHEMA)


def main(argv: Sequence[str] | None = None) -> int:
    """Exit status 0, 2 for a usage or input problem, 1 otherwise; errors are one line on stderr."""
    from kafkaseg.spark.jobs import report_error

    args = parse_args(argv)
    try:
        check(args)
        from jobs.export import run_in_session  # plain `python jobs/lookup.py`: workers run this Python too

        def work(spark) -> None:
            answers = transform(extract(spark, args.input), args.data_dir, args.isolation, args.partitions,
                                lenient=args.on_corruption == "skip")
            load(answers, args.output, args.format, args.mode)

        run_in_session("kafkaseg-lookup", work)
    except Exception as exc:  # noqa: BLE001 - report_error re-raises what it does not know
        return report_error(exc, "lookup.py", usage=(UsageError,))
    return 0


if __name__ == "__main__":
    sys.exit(main())
