"""``spark.read.format("kafkaseg").load(path)``: kafkaseg as a PySpark (4.1+) Python data source.

Where each piece runs (PySpark's ``pyspark/sql/worker/*.py``):

* ``create_data_source.py`` (a Python worker of the driver JVM, at ``load()``): ``KafkaSegDataSource(options)`` and
  :meth:`KafkaSegDataSource.schema` (not called when the user supplied a schema);
* ``data_source_pushdown_filters.py`` (with ``spark.sql.python.filterPushdown.enabled=true``) or
  ``plan_data_source_read.py`` (without), at planning: :meth:`KafkaSegDataSource.reader`,
  ``reader.pushFilters(filters)`` (pushdown only), then ``reader.partitions()``: :func:`~kafkaseg.planning.plan_scan`
  runs there, once per query plan;
* executors' Python workers: ``reader.read(partition)`` for each :class:`SlicePartition` (one or more slices of
  one topic-partition, or of several small ones, packed by :func:`~kafkaseg.planning.pack_slices`), yielding
  ``pyarrow.RecordBatch`` es straight from :func:`~kafkaseg.scan.read_slice` (PySpark passes Arrow batches through
  when their schema equals the declared one).

Stale pushed-down plans (PySpark 4.1 to 4.3): Spark keeps the read plan (partitions + read function) of a
filter-pushdown pass on the relation (``PythonDataSourceV2.setReadInfo``) and reuses it for any later query on the
same DataFrame that pushes no filter, so ``df.where("partition = 1").count()`` then ``df.count()`` returns the
filtered count. Nothing in Python runs for the second query, so a source cannot detect it. Upstream moved the read
plan into the scan (``PythonScanBuilder``) together with LIMIT pushdown, so kafkaseg takes
``DataSourceReader.pushLimit`` as the sign of a PySpark without the bug. With ``filterPushdown=auto`` (the default)
predicates prune only there; elsewhere ``pushFilters`` claims nothing and prunes nothing (Spark filters the rows;
topic/partition/offset options still prune), and says so in the plan report and the log. ``filterPushdown=true``
prunes anyway: safe only when each ``load()`` feeds exactly one scan of one query, as in kafkaseg's jobs (a
view queried twice, a self-union, self-join or two subqueries over one ``load()`` all share its last pushed plan).

Streaming (``spark.readStream.format("kafkaseg")``): :class:`KafkaSegStreamReader` runs in PySpark's streaming
source runner (one long-lived Python worker of the driver, ``python_streaming_source_runner.py``), which keeps the
reader between triggers: ``initialOffset``, ``latestOffset(start, limit)`` (admission control, PySpark 4.2+),
``partitions(start, end)`` and ``prepareForTriggerAvailableNow``; executors get their own reader for ``read``.
The offsets, limits and data-loss rules are :mod:`kafkaseg.streaming`'s. On PySpark 4.1, whose runner calls
``latestOffset()`` without arguments and knows no read limits, every trigger reads all that is available.

Pushdown on and off: PySpark refuses (``DATA_SOURCE_PUSHDOWN_DISABLED``) a reader whose class overrides
``pushFilters`` when the conf is off, and the reader cannot see the conf (no SparkSession exists in the planning
worker). Ignoring kafkaseg's pushdown is always correct, though: it claims only filters it applies exactly, and with
pushdown off Spark evaluates every filter itself. So ``pushFilters`` is provided by a descriptor that looks like the
base method to PySpark's check (``reader.pushFilters.__func__``) and does the translation when PySpark calls it.
"""

from __future__ import annotations

import logging
import os
import sys
import uuid
from typing import Any, Iterator

import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceReader, DataSourceStreamReader, Filter, InputPartition
from pyspark.sql.pandas.types import from_arrow_schema
from pyspark.sql.types import StructType

from kafkaseg.errors import InvalidOptionError
from kafkaseg.options import ReadOptions, zoneless_datetime
from kafkaseg.planning import Predicates, ScanPlan, SegmentSlice, plan_scan
from kafkaseg.scan import ScanMetrics, read_slice
from kafkaseg.schema import arrow_schema
from kafkaseg.spark import reports
from kafkaseg.spark.filters import translate_filters
from kafkaseg.streaming import MicroBatchPlanner, Offsets, to_offsets

try:  # PySpark 4.2+: admission control and Trigger.AvailableNow for Python streaming sources
    from pyspark.sql.streaming.datasource import (ReadAllAvailable, ReadLimit, ReadMaxRows, ReadMinRows,
                                                  SupportsTriggerAvailableNow)
except ImportError:  # PySpark 4.1
    ReadLimit = ReadAllAvailable = ReadMaxRows = ReadMinRows = None  # type: ignore[assignment,misc]

    class SupportsTriggerAvailableNow:  # type: ignore[no-redef]
        """Stand-in on PySpark versions without the mixin (their runner never calls it)."""

__all__ = ["KafkaSegDataSource", "KafkaSegReader", "KafkaSegStreamReader", "SlicePartition", "spark_schema",
           "read_options", "PUSHED_PLANS_ARE_SCOPED"]

log = logging.getLogger("kafkaseg.spark")

#: True on PySpark versions that keep a pushed-down read plan to its own query (see the module docstring).
PUSHED_PLANS_ARE_SCOPED = hasattr(DataSourceReader, "pushLimit")
STALE_PLAN_NOTE = ("filter pushdown is not applied: this PySpark reuses a DataFrame's last pushed-down read plan "
                   "for its later queries (wrong rows); Spark filters the rows instead. Prune with options "
                   "(assign, startingOffsets, ...) or set filterPushdown=true with one load() per query")


#: ``CREATE TABLE ... USING kafkaseg``: Spark hands the source the catalog's table properties (``provider``,
#: ``owner``, ``location``, ``option.*``), and PySpark (to 4.3 at least) creates the reader of a later query on the
#: table with no options at all, so such a table can never be read
CREATE_TABLE_REFUSED = (
    "CREATE TABLE ... USING kafkaseg is not supported: PySpark gives a Python data source's reader none of a "
    "catalog table's options (path, subscribe, ...) when the table is queried. Use a temporary view instead: "
    "CREATE TEMPORARY VIEW orders USING kafkaseg OPTIONS (path '/data/kafka', subscribe 'orders'), or "
    "spark.read.format(\"kafkaseg\")...load(path).createOrReplaceTempView(\"orders\")")


def spark_schema(include_headers: bool = False, include_metadata: bool = False,
                 columns: tuple[str, ...] | None = None) -> StructType:
    """Spark's Kafka source schema (plus kafkaseg's opt-in columns, or the ``columns`` projection) as a
    ``StructType``, built from :func:`kafkaseg.schema.arrow_schema` so the batches ``read()`` yields match it
    exactly."""
    return from_arrow_schema(arrow_schema(include_headers, include_metadata, columns))


_TIME_OPTIONS = {name.lower(): name for name in ("startingTimestamp", "endingTimestamp")}


def read_options(options: Any, *, stream: bool = False) -> ReadOptions:
    """Parse the data source's options (for ``spark.readStream`` with ``stream=True``). ``load("/a,/b")`` is split
    at commas like Kafka's ``log.dirs`` (Spark passes it as one ``path``); ``load(["/a", "/b"])`` arrives as
    ``paths`` and is taken as given."""
    given = dict(options or {})
    if any(key.lower() == "provider" for key in given):
        raise InvalidOptionError(CREATE_TABLE_REFUSED)
    for key in list(given):
        if key.lower() in _TIME_OPTIONS and zoneless_datetime(given[key]):
            raise InvalidOptionError(
                f"option {_TIME_OPTIONS[key.lower()]!r}: {given[key]!r} has no time zone, and this source cannot see "
                "spark.sql.session.timeZone, in which Spark reads such a time in SQL; add one (Z, +01:00) or give "
                "ms since the epoch")
        if key.lower() == "path" and isinstance(given[key], str) and "," in given[key]:
            parts = [p.strip() for p in given.pop(key).split(",") if p.strip()]
            given["paths"] = parts
    options = ReadOptions.from_options(given, stream=stream)
    if options.timestamp_unit != "us":
        raise InvalidOptionError("option 'timestampUnit' can only be 'us' in Spark, whose TimestampType is "
                                 "microseconds ('ms' is for kafkaseg.read_arrow/iter_batches and the CLI)")
    return options


class KafkaSegDataSource(DataSource):
    """``format("kafkaseg")``: Kafka log dirs read from files. Options: Spark's Kafka source names (``assign``,
    ``subscribe``, ``startingOffsets``, ``kafka.isolation.level``, ...) plus kafkaseg's own; see
    :mod:`kafkaseg.options`. The schema is fixed (Spark's Kafka schema; ``includeHeaders``/``includeMetadata`` add
    columns, ``columns`` projects them), as in Spark's Kafka source."""

    @classmethod
    def name(cls) -> str:
        return "kafkaseg"

    def schema(self) -> StructType:
        # load() does not say whether a batch or a stream reads: take the options as either (reader() and
        # streamReader() then reject what their kind of read does not accept)
        try:
            options = read_options(self.options)
        except InvalidOptionError as batch_error:
            try:
                options = read_options(self.options, stream=True)
            except InvalidOptionError as stream_error:
                if str(stream_error) == str(batch_error):  # wrong for either kind of read: said once
                    raise batch_error from None
                raise InvalidOptionError(f"as a batch read (spark.read): {batch_error}; as a streaming read "
                                         f"(spark.readStream): {stream_error}") from None
        return spark_schema(options.include_headers, options.include_metadata, options.columns)

    def reader(self, schema: StructType) -> "KafkaSegReader":
        options = read_options(self.options)
        _check_schema(schema, options)
        return KafkaSegReader(options)

    def streamReader(self, schema: StructType) -> "KafkaSegStreamReader | _RefusedStreamReader":
        # PySpark's streaming runner (python_streaming_source_runner.py, 4.3) calls this inside `try: reader =
        # ...; finally: reader.stop()`: an error raised here ends in UnboundLocalError ('reader'), the last line
        # of the query's exception. The refusal is raised by the reader's first call instead.
        try:
            options = read_options(self.options, stream=True)
            _check_schema(schema, options)
        except InvalidOptionError as error:
            return _RefusedStreamReader(error)
        return KafkaSegStreamReader(options)


def _check_schema(schema: StructType, options: ReadOptions) -> None:
    expected = spark_schema(options.include_headers, options.include_metadata, options.columns)
    if schema != expected:
        raise InvalidOptionError(
            "the kafkaseg source has a fixed schema and cannot be set with a custom one (as Spark's Kafka "
            f"source); drop .schema(...) and use includeHeaders/includeMetadata/columns. Expected "
            f"{expected.simpleString()}, got {schema.simpleString()}")


class SlicePartition(InputPartition):
    """One Spark input partition: planned :class:`~kafkaseg.planning.SegmentSlice` s, read in order: consecutive
    slices of one topic-partition, or of several small ones (small and picklable;
    :func:`~kafkaseg.planning.pack_slices` groups them)."""

    def __init__(self, index: int, pieces: tuple[SegmentSlice, ...], scan_id: str):
        super().__init__(index)
        self.index = index
        self.pieces = tuple(pieces)
        self.scan_id = scan_id

    def __repr__(self) -> str:
        if not self.pieces:
            return f"SlicePartition({self.index}, no slices)"
        first, last = self.pieces[0], self.pieces[-1]
        replicas = {(piece.topic, piece.partition, piece.partition_path) for piece in self.pieces}
        if len(replicas) > 1:
            return (f"SlicePartition({self.index}, {len(replicas)} topic-partitions from {first.topic}-"
                    f"{first.partition} to {last.topic}-{last.partition} ({len(self.pieces)} slices))")
        files = os.path.basename(first.log_path)
        if len(self.pieces) > 1:
            files += f" .. {os.path.basename(last.log_path)} ({len(self.pieces)} slices)"
        return (f"SlicePartition({self.index}, {first.topic}-{first.partition} {files} "
                f"[{first.start_position}, {last.end_position}) offsets [{first.start_offset}, {last.end_offset}))")


class _PushFilters:
    """``reader.pushFilters``: see the module docstring. Accessed on the class it is the base method; on an
    instance, a callable whose ``__func__`` is the base method, which runs :meth:`KafkaSegReader._push_filters`."""

    def __get__(self, reader: "KafkaSegReader | None", owner: type | None = None):
        if reader is None:
            return DataSourceReader.pushFilters

        def push_filters(filters: list[Filter]) -> list[Filter]:
            return reader._push_filters(filters)

        push_filters.__func__ = DataSourceReader.pushFilters  # type: ignore[attr-defined]
        return push_filters


class KafkaSegReader(DataSourceReader):
    """Plans once (``partitions()``, in the planning worker) and reads slices (``read()``, in executors)."""

    pushFilters = _PushFilters()

    def __init__(self, options: ReadOptions):
        self.options = options
        self.predicates: Predicates | None = None
        self.pushdown: dict[str, list[str]] = {"handled": [], "pruning_only": [], "remaining": []}
        self.scan_id = uuid.uuid4().hex[:16]

    def _push_filters(self, filters: list[Filter]) -> list[Filter]:
        mode = self.options.filter_pushdown
        if mode == "false" or (mode == "auto" and not PUSHED_PLANS_ARE_SCOPED):
            self.pushdown = {"handled": [], "pruning_only": [], "remaining": [],
                             "disabled": [STALE_PLAN_NOTE if mode == "auto" else "filterPushdown=false"]}
            return list(filters)
        result = translate_filters(filters)
        self.predicates = result.predicates
        self.pushdown = result.describe()
        return result.remaining

    def partitions(self) -> list[InputPartition]:
        plan = plan_scan(None, self.options, self.predicates)
        # one empty partition rather than PySpark's InputPartition(None): it names the scan (plan_report(df))
        return _input_partitions(plan, self.options, self.scan_id, self.pushdown) or [
            SlicePartition(0, (), self.scan_id)]

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return _read_partition(partition, self.options)


def _input_partitions(plan: ScanPlan, options: ReadOptions, scan_id: str, pushdown: dict[str, list[str]],
                      logged: set | None = None) -> list[InputPartition]:
    """A plan's slices packed into Spark input partitions, with its report written and logged. ``logged``: the
    lenient decisions a stream has logged already (each micro-batch plans again), which are not logged again."""
    units = plan.input_partitions(options)
    report = reports.write_plan(scan_id, plan.report, plan.slices, pushdown, len(units))
    logger = _worker_logger()
    logger.info("%s", report.summary())
    for choice in plan.report.replicas:
        if len(choice.get("candidates", ())) > 1:
            logger.info("kafkaseg scan %s: %s-%s: reading replica %s of %d copies (%s)", scan_id,
                        choice["topic"], choice["partition"], choice["chosen"], len(choice["candidates"]),
                        choice.get("reason"))
    for note in plan.report.data_loss:
        logger.warning("kafkaseg scan %s: data loss: %s", scan_id, note)
    for decision in plan.report.lenient:
        if logged is None or decision not in logged:
            logger.warning("kafkaseg scan %s: %s", scan_id, decision.describe())
            if logged is not None:
                logged.add(decision)
    return [SlicePartition(i, unit, scan_id) for i, unit in enumerate(units)]


#: what a stream's executor adds to a rewritten tail's line (see :meth:`KafkaSegStreamReader.read`)
STREAM_REWRITE_NOTE = ("; Spark commits this micro-batch's end all the same: the next micro-batch reads the partition "
                       "again only where its driver sees the rewrite (the leader epochs, or the last batch below the "
                       "end changed: its warning says so), else the new records from here to the end are not read")


def _read_partition(partition: InputPartition, options: ReadOptions, stream: bool = False
                    ) -> Iterator[pa.RecordBatch]:
    if not isinstance(partition, SlicePartition):
        return  # PySpark substitutes one empty InputPartition(None) when the plan has no slices
    metrics = ScanMetrics()
    try:
        for piece in partition.pieces:
            yield from read_slice(piece, options, metrics)
    finally:
        reports.write_read_metrics(partition.scan_id, partition.index, metrics.as_dict())
        for line in metrics.corrupt_skips():
            _worker_logger().warning("kafkaseg scan %s: %s", partition.scan_id, line)
        for skipped, line in metrics.vanished_lines():
            _worker_logger().log(logging.WARNING if skipped else logging.INFO, "kafkaseg scan %s: %s",
                                 partition.scan_id, line)
        for line in metrics.other_copies_lines():
            _worker_logger().warning("kafkaseg scan %s: %s", partition.scan_id, line)
        for line in metrics.unreadable_tail_lines():
            _worker_logger().warning("kafkaseg scan %s: %s", partition.scan_id, line)
        for line in metrics.lost_tail_lines() if options.on_corruption != "skip" else ():  # (else among the skips)
            _worker_logger().warning("kafkaseg scan %s: data loss (failOnDataLoss=false): %s", partition.scan_id,
                                     line)
        for line in metrics.rewritten_tail_lines():  # (a warning in a stream: see STREAM_REWRITE_NOTE)
            _worker_logger().log(logging.WARNING if stream else logging.INFO, "kafkaseg scan %s: %s%s",
                                 partition.scan_id, line, STREAM_REWRITE_NOTE if stream else "")
        for path, position, size in metrics.truncated_tails:
            _worker_logger().info("kafkaseg scan %s: %s: stopped before a partial batch at byte %d (%d bytes, "
                                  "still being written?)", partition.scan_id, path, position, size)
        for path, start, end in metrics.missing_offsets:
            _worker_logger().warning("kafkaseg scan %s: offsets [%d, %d) are missing after %s, above the cleaner "
                                     "checkpoint (a lost segment file, or compaction not checkpointed yet)",
                                     partition.scan_id, start, end, path)


class KafkaSegStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """``spark.readStream.format("kafkaseg")``: micro-batches over log dirs that grow (see the module docstring
    and :mod:`kafkaseg.streaming`). Offsets are Spark's Kafka source JSON, ``{"topic": {"0": 23}}``."""

    def __init__(self, options: ReadOptions):
        self.options = options
        self.planner = MicroBatchPlanner(options)
        self.stream_id = uuid.uuid4().hex[:8]
        self.batches = 0
        self.lenient_logged: set = set()
        # Where the stream is, for PySpark 4.1, whose runner calls latestOffset() without it: the initial offsets,
        # then each batch's end (partitions, commit). The planner's rules about a high watermark below the
        # position (not data loss; a start above it waits) need it.
        self.position: Offsets | None = None
        # PySpark 4.1's runner asks latestOffset() before initialOffset() on a new query, with no start to say a
        # lost log end from (see initialOffset)
        self.latest_before_start = False

    def initialOffset(self) -> Offsets:
        offsets = self.planner.initial_offsets()
        self.position = offsets
        _worker_logger().info("kafkaseg stream %s: initial offsets %s (%s)", self.stream_id, offsets,
                              self.options.starting.option or "startingOffsets")
        for note in self.planner.take_start_notes():  # once (Spark asks more than once): another copy answered
            _worker_logger().warning("kafkaseg stream %s: %s", self.stream_id, note)
        if self.latest_before_start:
            # (PySpark 4.1) the latest offsets were taken before the stream had a start, so the offsets lost past
            # the log end it starts at (started at latest) were not said there: said now, as latestOffset(start)
            # says them on 4.2+ (under failOnDataLoss a DataLossError that fails the query, else logged once)
            self.latest_before_start = False
            self.planner.latest_offsets(offsets, all_available=True)
            self._log_standing_loss()
        return offsets

    def getDefaultReadLimit(self):  # the options' limits, as Spark's Kafka source declares them
        if self.options.max_offsets_per_trigger is not None:
            return ReadMaxRows(self.options.max_offsets_per_trigger)
        if self.options.min_offsets_per_trigger is not None:
            return ReadMinRows(self.options.min_offsets_per_trigger)
        return ReadAllAvailable()

    def latestOffset(self, start: Offsets | None = None, limit: Any = None) -> Offsets:
        # Spark's KafkaMicroBatchStream: ReadAllAvailable wins (Trigger.Once, or a caller that overrides the
        # options); with a max limit the min one comes from the options (PySpark passes one limit, Spark a
        # composite of both)
        if start is None:
            start = self.position  # PySpark 4.1
            self.latest_before_start = start is None
        if start is None or limit is None or isinstance(limit, ReadAllAvailable):
            end = self.planner.latest_offsets(start or {}, all_available=True)
        else:
            max_rows = limit.max_rows if isinstance(limit, ReadMaxRows) else None
            min_rows = (limit.min_rows if isinstance(limit, ReadMinRows)
                        else self.options.min_offsets_per_trigger if max_rows is not None else None)
            end = self.planner.latest_offsets(start, max_offsets=max_rows, min_offsets=min_rows)
        self._log_standing_loss()
        return end

    def _log_standing_loss(self) -> None:
        # offsets lost past the log end of a partition the stream stands at, which no micro-batch reads to
        # (failOnDataLoss raised them in the planner, failing the query as a micro-batch's data loss does)
        for _, words in self.planner.standing_loss:
            _worker_logger().warning("kafkaseg stream %s: data loss: %s", self.stream_id, words)

    def reportLatestOffset(self) -> Offsets | None:
        return (to_offsets(self.planner.latest, self.planner.latest_topic_ids) if self.planner.latest
                else None)

    def prepareForTriggerAvailableNow(self) -> None:
        self.planner.prepare_available_now()

    def partitions(self, start: Offsets, end: Offsets) -> list[InputPartition]:
        self.batches += 1
        scan_id = f"{self.stream_id}-{self.batches}-{uuid.uuid4().hex[:6]}"
        plan = self.planner.plan(start, end)
        self.position = end
        logger = _worker_logger()
        for note in plan.notes:
            logger.info("kafkaseg stream %s: %s", self.stream_id, note)
        for note in plan.read_again:  # (a rewrite past the high watermark: offsets may come again)
            logger.warning("kafkaseg stream %s: %s", self.stream_id, note)
        skipped = [note for note in plan.data_loss if plan.scan is None or note not in plan.scan.report.data_loss]
        for note in skipped:
            logger.warning("kafkaseg stream %s: data loss: %s", self.stream_id, note)
        if plan.scan is None:
            return []
        return _input_partitions(plan.scan, self.options, scan_id, {"handled": [], "pruning_only": [],
                                                                     "remaining": []}, self.lenient_logged)

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        return _read_partition(partition, self.options, stream=True)

    def commit(self, end: Offsets) -> None:
        """Nothing to release (the files are only read): the end is where the stream is."""
        self.position = end


class _RefusedStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """The stream reader of options a stream refuses: every call the runner makes raises the refusal (see
    :meth:`KafkaSegDataSource.streamReader`); ``stop()`` does nothing."""

    def __init__(self, error: InvalidOptionError):
        self.error = error

    def _refuse(self, *args: Any, **kwargs: Any) -> Any:
        raise self.error

    initialOffset = latestOffset = getDefaultReadLimit = reportLatestOffset = _refuse
    prepareForTriggerAvailableNow = partitions = read = commit = _refuse


def _worker_logger() -> logging.Logger:
    """``kafkaseg.spark`` logging at INFO to the worker's stderr (which Spark forwards to the driver's or
    executor's log), unless the application configured logging or PySpark's worker log capture is on.
    ``KAFKASEG_SPARK_LOG_LEVEL`` changes the level (e.g. WARNING to silence the per-scan line)."""
    if not log.handlers and not logging.getLogger().handlers and "PYSPARK_SPARK_SESSION_UUID" not in os.environ:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
        log.addHandler(handler)
        log.propagate = False
    if log.level == logging.NOTSET:
        log.setLevel(os.environ.get("KAFKASEG_SPARK_LOG_LEVEL", "INFO").upper())
    return log

