"""The kafkaseg Spark data source end to end, on the session-scoped local[2] SparkSession (few tests, each meaningful).

Oracles: the manifests of generated data dirs (:mod:`kafkaseg.testing`, an independent writer) and kafka-python's
decoding of real broker segments from the corpus.
"""

from __future__ import annotations

import datetime as dt
import struct
from pathlib import Path

import pytest
from chispa.rows_comparer import assert_basic_rows_equality
from pyspark.errors import PythonException
from pyspark.sql import Row
from pyspark.sql import functions as F

from kafkaseg.spark import last_plan_report, spark_schema
from kafkaseg.testing import PartitionWriter, Record, TopicSpec, build_batch_v2, sample_data_dir, write_data_dir
from tests.oracle import kafka_python_records

pytestmark = pytest.mark.spark

PUSHDOWN = "spark.sql.python.filterPushdown.enabled"
COLUMNS = ["key", "value", "topic", "partition", "offset", "timestamp_us", "timestampType"]


# --------------------------------------------------------------------------------------------------------------------
# helpers

def _expected_rows(manifest, *, read_committed=False, headers=False, keep=lambda tp, r: True):
    """The manifest's records as rows of :data:`COLUMNS` (timestamps in microseconds, as Spark stores them)."""
    rows = []
    for (topic, partition), pm in sorted(manifest.partitions.items()):
        for r in pm.data_records(read_committed=read_committed):
            if keep((topic, partition), r):
                row = Row(key=r.key, value=r.value, topic=topic, partition=partition, offset=r.offset,
                          timestamp_us=r.timestamp * 1000, timestampType=r.timestamp_type)
                if headers:
                    row = Row(**row.asDict(), headers=[(k, v) for k, v in r.headers] if r.headers else None)
                rows.append(row)
    return rows


def _assert_rows(actual_df, expected_rows, *, headers=False):
    """Rows of ``actual_df`` equal ``expected_rows`` in any order; on a difference, chispa shows the rows around
    the first mismatch (not all of them)."""
    columns = COLUMNS + (["headers"] if headers else [])
    selected = actual_df.select(*[F.unix_micros("timestamp").alias("timestamp_us") if c == "timestamp_us" else c
                                  for c in columns])
    actual = []
    for row in selected.collect():
        values = row.asDict()
        if headers and values["headers"] is not None:
            values["headers"] = [(h["key"], h["value"]) for h in values["headers"]]
        actual.append(Row(**values))
    key = lambda r: (r.topic, r.partition, r.offset, repr(r))  # noqa: E731
    actual.sort(key=key)
    expected = sorted(expected_rows, key=key)
    if actual != expected:
        first = next((i for i, (a, e) in enumerate(zip(actual, expected)) if a != e), min(len(actual), len(expected)))
        window = slice(max(0, first - 3), first + 5)
        assert_basic_rows_equality(actual[window], expected[window])
        assert len(actual) == len(expected), f"{len(actual)} rows read, {len(expected)} expected"


def _kafkaseg(spark, path, **options):
    reader = spark.read.format("kafkaseg")
    for key, value in options.items():
        reader = reader.option(key, value)
    return reader.load(path)


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    return sample_data_dir(tmp_path_factory.mktemp("sample") / "kafka-logs")


@pytest.fixture(scope="module")
def wide(tmp_path_factory):
    """Four partitions of 10,000 records in ~100 KiB segments: a 1% offset range is a small part of a partition."""
    spec = TopicSpec("wide", partitions=4, records_per_partition=10_000, records_per_batch=20, value_size=100,
                     segment_bytes=100 * 1024, index_interval_bytes=2048, ts_step_ms=10)
    return write_data_dir(tmp_path_factory.mktemp("wide") / "kafka-logs", [spec], seed=3)


# --------------------------------------------------------------------------------------------------------------------
# tests

def test_sample_data_dir_reads_exactly_the_manifest_records(spark, sample):
    """format("kafkaseg") resolves without register() (pyspark_kafkaseg is found on the workers' path), and every
    record of every topic (codecs, transactions, compaction leftovers, legacy v1) comes back as written."""
    df = _kafkaseg(spark, str(sample.path), includeHeaders="true")
    assert df.schema == spark_schema(include_headers=True)
    _assert_rows(df, _expected_rows(sample, headers=True), headers=True)
    report = last_plan_report()
    assert report.bytes_planned == report.bytes_total == sum(
        s.size for pm in sample.partitions.values() for s in pm.segments)
    metrics = report.read_metrics()
    assert metrics["records"] == sample.record_count and metrics["slices_read"] == report.slices
    # small segments of one topic-partition are packed into one task, and small topic-partitions share tasks (each
    # of this sample's 14 holds under openCostInBytes): these rows came from fewer tasks than topic-partitions
    assert df.rdd.getNumPartitions() == report.input_partitions < len(sample.partitions) < report.slices
    # packTopicPartitions=false: one per topic-partition, as Spark's Kafka source reads them
    unpacked = _kafkaseg(spark, str(sample.path), packTopicPartitions="false")
    assert unpacked.rdd.getNumPartitions() == len(sample.partitions)


@pytest.mark.corpus
@pytest.mark.parametrize("log_dir", ["smartassets__backend-server/51801d05/kafka/data",  # Kafka 2.1, compacted
                                     "mscaldas2012__kafka-connect-spooldir/d7b17b06/kafka-data"])  # lz4, LogAppendTime
def test_corpus_broker_dir_matches_kafka_python(spark, corpus_dir, log_dir):
    data = corpus_dir / "segments" / log_dir
    df = _kafkaseg(spark, str(data), upperBound="logEndOffset")
    got = {}
    for row in df.select("topic", "partition", "offset", "key", "value", "timestamp", "timestampType").collect():
        got[(row.topic, row.partition, row.offset)] = (
            row.key, row.value, int(row.timestamp.timestamp() * 1000), row.timestampType)
    offsets = last_plan_report().plan.offsets()
    expected = {}
    for folder in sorted(p for p in data.iterdir() if p.is_dir()):
        topic, _, partition = folder.name.rpartition("-")
        start, end = offsets[(topic, int(partition))]
        for log in sorted(folder.glob("*.log")):
            for r in kafka_python_records(log.read_bytes(), include_control=False):
                if start <= r["offset"] < end:
                    expected[(topic, int(partition), r["offset"])] = (
                        r["key"], r["value"], r["timestamp"], r["timestampType"])
    assert len(expected) > 500
    assert got == expected


def test_options_reach_the_reader(spark, wide):
    df = _kafkaseg(spark, str(wide.path), assign='{"wide":[1,2]}',
                   startingOffsets='{"wide":{"1":500,"2":-2}}', endingOffsets='{"wide":{"1":700,"2":50}}',
                   includeMetadata="true", splitSize="16k")
    assert "producerId" in df.columns and "segment" in df.columns
    bounds = {1: (500, 700), 2: (0, 50)}
    expected = _expected_rows(wide, keep=lambda tp, r: tp[1] in bounds and bounds[tp[1]][0] <= r.offset < bounds[tp[1]][1])
    _assert_rows(df, expected)
    segments = {r.segment for r in df.select("segment").distinct().collect()}
    assert all(Path(s).parent.name in ("wide-1", "wide-2") for s in segments)
    assert last_plan_report().plan.options["splitSize"] == 16 * 1024


def test_pushdown_on_and_off_give_the_same_rows_and_on_prunes_to_the_offset_range(spark, wide):
    part = wide.partition("wide", 3)
    lo, hi, left_out = 4000, 4099, 4050  # 1% of the partition's offsets, less one
    where = f"partition = 3 AND offset BETWEEN {lo} AND {hi} AND offset <> {left_out}"
    expected = _expected_rows(wide, keep=lambda tp, r: tp[1] == 3 and lo <= r.offset <= hi and r.offset != left_out)
    partition_bytes = sum(s.size for s in part.segments)
    previous = spark.conf.get(PUSHDOWN)
    try:
        for enabled in ("true", "false"):
            spark.conf.set(PUSHDOWN, enabled)
            # a fresh load() per query, so pruning is safe on every PySpark (filterPushdown=true)
            df = _kafkaseg(spark, str(wide.path), filterPushdown="true").where(where)
            _assert_rows(df, expected)
            report = last_plan_report()
            if enabled == "true":
                assert [p.partition for p in report.plan.partitions] == [3]
                assert report.bytes_planned <= 0.02 * partition_bytes, report.summary()
                assert report.segments_planned <= 2
                assert "partition = 3" in report.pushdown["handled"]
                assert f"offset >= {lo}" in report.pushdown["handled"]
                assert report.read_metrics()["bytes_read"] <= 0.02 * partition_bytes
                # offset <> 4050 makes two ranges needing the batch holding 4050: one slice a segment reads it once
                assert f"NOT (offset = {left_out})" in report.pushdown["handled"]
                assert report.slices == report.segments_planned
                assert report.read_metrics()["bytes_read"] == report.bytes_planned
            else:
                assert report.pushdown["handled"] == []
                assert report.bytes_planned == report.bytes_total == sum(
                    s.size for pm in wide.partitions.values() for s in pm.segments)
    finally:
        spark.conf.set(PUSHDOWN, previous)


def test_columns_option_projects_the_schema_and_pushdown_still_prunes(spark, wide):
    """Spark's Python data sources get no column pruning, so a metadata query would decode and ship every key and
    value: ``columns`` projects at the source. Its rows are the full read's, and WHERE predicates on its columns
    are still pushed down."""
    df = _kafkaseg(spark, str(wide.path), columns="partition,offset,timestamp",
                   filterPushdown="true").where("partition = 2 AND offset >= 9000")
    assert [(f.name, f.dataType.simpleString()) for f in df.schema] == [
        ("partition", "int"), ("offset", "bigint"), ("timestamp", "timestamp")]
    got = sorted((r.partition, r.offset, r.timestamp) for r in df.collect())
    assert "partition = 2" in last_plan_report().pushdown["handled"]
    full = _kafkaseg(spark, str(wide.path), filterPushdown="true").where("partition = 2 AND offset >= 9000")
    assert got == sorted((r.partition, r.offset, r.timestamp) for r in
                         full.select("partition", "offset", "timestamp").collect())
    assert len(got) == 1000


def test_timestamp_filter_prunes_segments_but_spark_still_applies_it(spark, wide):
    part = wide.partition("wide", 0)
    cut = part.records[7000].timestamp  # ms
    since = dt.datetime.fromtimestamp(cut / 1000, dt.timezone.utc)
    df = _kafkaseg(spark, str(wide.path), filterPushdown="true").where(
        (F.col("partition") == 0) & (F.col("timestamp") >= F.lit(since)))
    expected = _expected_rows(wide, keep=lambda tp, r: tp[1] == 0 and r.timestamp >= cut)
    _assert_rows(df, expected)
    report = last_plan_report()
    assert report.pushdown["pruning_only"] and not any("timestamp" in f for f in report.pushdown["handled"])
    assert report.plan.segments_pruned >= 1 and report.bytes_planned < report.bytes_total


def test_read_committed_drops_aborted_and_open_transactions(spark, tmp_path):
    spec = TopicSpec("payments", partitions=2, records_per_partition=800, records_per_batch=10, transactional=True,
                     transaction_producers=3, abort_ratio=0.35, open_transactions=1, codec="lz4",
                     segment_bytes=16 * 1024)
    manifest = write_data_dir(tmp_path / "logs", [spec], seed=5)
    assert any(r.aborted for pm in manifest.partitions.values() for r in pm.records)
    committed = _kafkaseg(spark, str(tmp_path / "logs"), **{"kafka.isolation.level": "read_committed"})
    _assert_rows(committed, _expected_rows(manifest, read_committed=True))
    everything = _kafkaseg(spark, str(tmp_path / "logs"))
    assert everything.count() == len(_expected_rows(manifest))


def test_replicas_in_several_log_dirs_read_the_highest_high_watermark_once(spark, tmp_path):
    small = write_data_dir(tmp_path / "broker1", [TopicSpec("t", partitions=2, records_per_partition=300)], seed=1)
    big = write_data_dir(tmp_path / "broker2", [TopicSpec("t", partitions=2, records_per_partition=450)], seed=1)
    paths = [str(tmp_path / "broker1"), str(tmp_path / "broker2")]
    df = spark.read.format("kafkaseg").load(paths)  # Spark passes a list as the "paths" option
    _assert_rows(df, _expected_rows(big))
    report = last_plan_report()
    chosen = {(c["topic"], c["partition"]): c["chosen"] for c in report.plan.replicas}
    assert chosen == {("t", 0): str(tmp_path / "broker2" / "t-0"), ("t", 1): str(tmp_path / "broker2" / "t-1")}
    comma = _kafkaseg(spark, ",".join(paths), replicas="all")  # Kafka's log.dirs spelling
    assert comma.count() == len(_expected_rows(small)) + len(_expected_rows(big))


def test_a_log_dir_and_its_compressed_encrypted_tiered_copies_read_as_one_log_on_executors(spark, tmp_path):
    # the copies' decrypting and decompressing filesystem travels to the Python workers pickled, with the slices
    # and each segment's data key (the key ring's private keys stay on the driver)
    from kafkaseg.testing.tiered import aiven_encryptor, make_key_pair
    from tests.test_storage_tiered import COLUMNS, _tiered_topic

    key_pair = make_key_pair(tmp_path / "keys", "k1")
    data, remote, whole, bases = _tiered_topic(tmp_path, "aiven", compression=True, chunk_size=3000,
                                               encryptor=aiven_encryptor(key_pair))
    df = spark.read.format("kafkaseg").option("tieredKeyRing", key_pair.ring_option).load([str(data), str(remote)])
    got = df.select(*COLUMNS).orderBy("offset").collect()
    assert [r.offset for r in got] == whole["offset"].to_pylist()
    assert [bytes(r.value) for r in got] == whole["value"].to_pylist()
    (replica,) = last_plan_report().plan.replicas
    assert f"offsets [{bases[0]}, {bases[4]}) are read from 4 tiered-storage copies" in replica["reason"]


def test_segment_appended_while_read_returns_rows_up_to_the_planned_size(spark, tmp_path):
    def batch(start):
        return build_batch_v2([Record(o, 1_700_000_000_000 + o, b"k%d" % o, b"v%d" % o) for o in range(start, start + 50)])

    writer = PartitionWriter(tmp_path / "logs" / "live-0")
    for start in range(0, 200, 50):
        writer.append(batch(start))
    writer.close(live=True)
    log = next((tmp_path / "logs" / "live-0").glob("*.log"))
    df = _kafkaseg(spark, str(tmp_path / "logs"), upperBound="logEndOffset")
    first = sorted(r.offset for r in df.select("offset").collect())
    assert first == list(range(200))
    # The broker appends a batch and half of the next one after planning: same rows, no torn batch, no error.
    extra = batch(200).data
    with open(log, "ab") as fh:
        fh.write(extra + extra[: len(extra) // 2])
    again = sorted(r.offset for r in df.select("offset").collect())
    assert again == first
    fresh = _kafkaseg(spark, str(tmp_path / "logs"), upperBound="logEndOffset")  # replanned: sees the whole batch
    assert sorted(r.offset for r in fresh.select("offset").collect()) == list(range(250))
    assert last_plan_report().read_metrics()["truncated_tails"], "the half batch is reported, not read"


def test_errors_surface_with_their_message(spark, tmp_path):
    with pytest.raises(Exception, match=r"fixed schema.*custom one"):
        spark.read.format("kafkaseg").schema("value STRING").load(str(tmp_path)).collect()
    with pytest.raises(Exception, match=r"startingOffset.*(did you mean|startingOffsets)"):
        spark.read.format("kafkaseg").option("startingOffset", "earliest").load(str(tmp_path))
    # A flipped byte inside a batch: the CRC error names the file and the byte position of the batch.
    manifest = write_data_dir(tmp_path / "logs", [TopicSpec("c", records_per_partition=100)], seed=2)
    log = manifest.partition("c", 0).segments[0].log_path
    data = bytearray(Path(log).read_bytes())
    (batch_length,) = struct.unpack_from(">i", data, 8)
    second_batch = 12 + batch_length
    data[second_batch + 70] ^= 0xFF
    Path(log).write_bytes(bytes(data))
    with pytest.raises(PythonException) as caught:
        _kafkaseg(spark, str(tmp_path / "logs")).collect()
    message = str(caught.value)
    assert "CrcMismatchError" in message and str(log) in message and f"byte {second_batch}" in message
    # ...and onCorruption=skip reads the rest.
    assert _kafkaseg(spark, str(tmp_path / "logs"), onCorruption="skip").count() < 100


def test_reusing_a_dataframe_after_a_filtered_query_gives_right_rows(spark, wide):
    """The notebook pattern: one DataFrame, a filtered query, then an unfiltered one. PySpark 4.1-4.3 reuse the
    first query's pushed-down plan for the second; with the default filterPushdown=auto kafkaseg then prunes
    nothing, so both answers are right (and the report says why nothing was pushed)."""
    from kafkaseg.spark.source import PUSHED_PLANS_ARE_SCOPED

    df = _kafkaseg(spark, str(wide.path))
    assert df.where("partition = 1 AND offset < 10").count() == 10
    if not PUSHED_PLANS_ARE_SCOPED:
        report = last_plan_report()
        assert report.pushdown["handled"] == [] and "reuses" in report.pushdown["disabled"][0]
    assert df.count() == len(_expected_rows(wide))



def test_plan_report_of_a_dataframe_is_its_loads_scan_not_the_newest(spark, wide):
    """Two loads in one session: after ``dfA.count()`` the newest planned scan is ``dfB``'s, because PySpark 4.1-4.3
    plan a load() once and reuse that plan for a later query pushing no filter (nothing plans). ``plan_report(df)``
    finds ``dfA``'s scan from its load's options, and its read metrics are that count's."""
    from kafkaseg.errors import InvalidOptionError
    from kafkaseg.spark import plan_report
    from kafkaseg.spark.source import PUSHED_PLANS_ARE_SCOPED

    df_a = _kafkaseg(spark, str(wide.path), assign='{"wide":[0]}')
    df_b = _kafkaseg(spark, str(wide.path), assign='{"wide":[1]}')
    assert df_a.where("offset < 10").count() == 10 and df_b.where("offset < 10").count() == 10
    rows_a = df_a.count()
    if not PUSHED_PLANS_ARE_SCOPED:
        assert last_plan_report().plan.options["assign"] == {"wide": [1]}  # dfA's count planned nothing
    report_a = plan_report(df_a)
    assert report_a.plan.options["assign"] == {"wide": [0]}
    assert report_a.read_metrics()["records"] == rows_a == len(wide.partitions[("wide", 0)].data_records())
    assert plan_report(df_b.where("partition = 1")).plan.options["assign"] == {"wide": [1]}
    with pytest.raises(InvalidOptionError, match="2 kafkaseg loads"):
        plan_report(df_a.unionAll(df_b))
    # another load() with dfA's options: no report until it is planned (not dfA's), then its own; dfA keeps its own
    df_c = _kafkaseg(spark, str(wide.path), assign='{"wide":[0]}')
    assert plan_report(df_c) is None
    assert df_c.count() == rows_a and plan_report(df_c).scan_id != report_a.scan_id
    assert plan_report(df_a).scan_id == report_a.scan_id


def test_explain_formatted_lists_the_filters_the_scan_applies(spark, wide, capsys):
    """What a user can see of pushdown in ``explain()`` (README): with filterPushdown=true the claimed filters in
    the formatted plan's ``PushedFilters`` and out of Spark's Filter; the timestamp filter, which only prunes,
    stays in the Filter. Plain ``explain()`` shows only ``(Python)``."""
    df = _kafkaseg(spark, str(wide.path), filterPushdown="true").where(
        "partition = 2 AND offset < 5 AND timestamp > timestamp'2020-01-01 00:00:00'")
    df.explain(mode="formatted")
    formatted = capsys.readouterr().out
    (pushed,) = [line for line in formatted.splitlines() if line.startswith("PushedFilters:")]
    assert "EqualTo(partition,2)" in pushed and "LessThan(offset,5)" in pushed and "timestamp" not in pushed
    (condition,) = [line for line in formatted.splitlines() if line.startswith("Condition")]
    assert "timestamp" in condition and "offset" not in condition and "partition" not in condition
    df.explain()
    simple = capsys.readouterr().out
    assert "BatchScan kafkaseg" in simple and "(Python)" in simple and "PushedFilters" not in simple


def test_a_time_option_without_a_zone_is_refused_in_spark(tmp_path):
    """No JVM: Spark reads '2023-11-14 22:13:25' in SQL in spark.sql.session.timeZone, which a Python data source
    cannot see; startingTimestamp='2023-11-14T22:13:25' was taken as UTC, so in a session of another zone the option
    and a WHERE on the same text disagreed by the zone's offset (found in a user pass). In Spark such a value must
    say its zone; the Python API keeps taking one without a zone as UTC (README)."""
    from kafkaseg.errors import InvalidOptionError
    from kafkaseg.options import ReadOptions
    from kafkaseg.spark.source import read_options

    for given, name in (("startingTimestamp",) * 2, ("endingTimestamp",) * 2,
                        ("startingtimestamp", "startingTimestamp")):  # as Spark passes it
        with pytest.raises(InvalidOptionError, match=rf"'{name}'.*no time zone.*spark\.sql\.session\.timeZone"):
            read_options({"path": str(tmp_path), given: "2023-11-14T22:13:25"})
    for value in ("2023-11-14T22:13:25Z", "2023-11-14 22:13:25+01:00", "1700000005000", "-2"):
        assert read_options({"path": str(tmp_path), "startingTimestamp": value}).starting.kind == "timestamp"
    assert ReadOptions.from_options({"startingTimestamp": "2023-11-14T22:13:25"}).starting.kind == "timestamp"


def test_a_where_clause_pruning_a_partition_of_copies_still_finds_its_time_in_another_copy(spark, tmp_path):
    """A partition a WHERE clause prunes still has its startingTimestamp resolved; with several brokers' copies, a
    corrupt batch of the chosen copy where that search lands is answered from another copy, as without the WHERE
    clause (before, the pruned partition's search raised where the unpruned query went on)."""
    import shutil

    import kafkaseg
    from kafkaseg.wire.batch import iter_headers

    write_data_dir(tmp_path / "b", [TopicSpec("t", partitions=2, records_per_partition=300, records_per_batch=10)],
                   seed=2)
    shutil.copytree(tmp_path / "b", tmp_path / "a")
    log = tmp_path / "a" / "t-0" / "00000000000000000000.log"
    data = bytearray(log.read_bytes())
    header = list(iter_headers(bytes(data)))[12]
    data[header.position + 70] ^= 0xFF  # its CRC fails
    log.write_bytes(bytes(data))
    stamps = kafkaseg.read_arrow(str(tmp_path / "b" / "t-0"), columns=["offset", "timestamp"], timestampUnit="ms")
    ts = stamps.column("timestamp").cast("int64").to_pylist()[header.base_offset + 3]
    paths = [str(tmp_path / "a"), str(tmp_path / "b")]
    expected = kafkaseg.read_arrow(str(tmp_path / "b" / "t-1"), startingTimestamp=ts).num_rows
    assert expected > 0
    # (a fresh load() for the one query: pruning is safe on every PySpark with filterPushdown=true)
    assert _kafkaseg(spark, paths, startingTimestamp=str(ts), filterPushdown="true").where(
        F.col("partition") == 1).count() == expected
    report = last_plan_report().plan
    assert ("t", 0, "pruned by predicates") in [tuple(p) for p in report.partitions_pruned]
    assert [n for n in report.notes if "read from the copy in" in n and str(tmp_path / "b" / "t-0") in n]


def test_a_lost_newest_segment_with_no_high_watermark_is_a_read_warning(spark, tmp_path):
    """The Spark reader sums the offsets a lost newest segment's index files prove (no high watermark) into
    read_metrics()["unreadable_tails"], as the batch read lists them, and returns the log before it."""
    from tests.test_carried_edges import _last_entries, _lost_active_segment

    folder = _lost_active_segment(tmp_path, high_watermark=None)
    last = max(_last_entries(folder, 250))
    assert _kafkaseg(spark, str(tmp_path)).count() == 250
    (tail,) = last_plan_report().read_metrics()["unreadable_tails"]
    assert (tail.path, tail.first_offset, tail.end_offset) == (str(folder / f"{250:020d}.log"), 250, last + 1)
