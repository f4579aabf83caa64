"""JVM-free: Spark filter objects -> Predicates, which filters are claimed, the pushdown guard, and PySpark's
auto-discovery of ``pyspark_kafkaseg`` (run through PySpark's own lookup code)."""

from __future__ import annotations

import datetime as dt
import io
import pickle

import pytest
from pyspark.sql.datasource import (
    DataSourceReader,
    EqualNullSafe,
    EqualTo,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    IsNotNull,
    IsNull,
    LessThan,
    LessThanOrEqual,
    Not,
    StringContains,
    StringEndsWith,
    StringStartsWith,
)

from kafkaseg.errors import InvalidOptionError
from kafkaseg.options import ReadOptions
from kafkaseg.planning import Predicates, plan_scan
from kafkaseg.spark import KafkaSegDataSource, KafkaSegReader, read_options, spark_schema, translate_filters
from kafkaseg.spark.filters import OFFSET_END, OFFSET_MIN
from kafkaseg.testing import TopicSpec, write_data_dir

UTC = dt.timezone.utc


def _ids(filters):
    return [id(f) for f in filters]


def test_offset_comparisons_become_exact_ranges_and_are_claimed():
    filters = [IsNotNull(("offset",)), GreaterThanOrEqual(("offset",), 100), LessThanOrEqual(("offset",), 199),
               Not(EqualTo(("offset",), 150))]
    result = translate_filters(filters)
    assert result.predicates.offset_ranges == ((100, 150), (151, 200))
    assert _ids(result.handled) == _ids(filters) and result.remaining == []
    assert translate_filters([GreaterThan(("offset",), 9), LessThan(("offset",), 12)]).predicates.offset_ranges \
        == ((10, 12),)
    assert translate_filters([In(("offset",), (7, 3, 4, None))]).predicates.offset_ranges == ((3, 5), (7, 8))
    assert translate_filters([EqualNullSafe(("offset",), 5)]).predicates.offset_ranges == ((5, 6),)
    assert translate_filters([LessThan(("offset",), 0)]).predicates.offset_ranges == ((OFFSET_MIN, 0),)
    assert translate_filters([GreaterThan(("offset",), 5)]).predicates.offset_ranges == ((6, OFFSET_END),)


def test_contradictions_and_nulls_read_nothing():
    assert translate_filters([EqualTo(("offset",), 5), EqualTo(("offset",), 6)]).predicates.offset_ranges == ()
    assert translate_filters([IsNull(("offset",))]).predicates.offset_ranges == ()
    assert translate_filters([EqualNullSafe(("partition",), None)]).predicates.partitions == frozenset()
    assert translate_filters([EqualTo(("partition",), 1), In(("partition",), (2, 3))]).predicates.partitions \
        == frozenset()


def test_partition_and_topic_sets_intersect():
    filters = [In(("partition",), (1, 2, 3)), EqualTo(("partition",), 2), IsNotNull(("partition",)),
               In(("topic",), ("a", "b")), EqualNullSafe(("topic",), "b")]
    result = translate_filters(filters)
    assert result.predicates == Predicates(topics=frozenset({"b"}), partitions=frozenset({2}))
    assert len(result.handled) == len(filters)


def test_topic_patterns_and_exclusions_prune_partitions_exactly(tmp_path):
    """``topic LIKE 'events%'``, ``partition <> 0``, ``topic NOT IN (...)`` read every partition before (found by
    audit): they are exact on the topic and partition columns, which are never null."""
    filters = [StringStartsWith(("topic",), "ev"), StringEndsWith(("topic",), "-lz4"), StringContains(("topic",), "s"),
               Not(EqualTo(("partition",), 0)), Not(In(("partition",), (2, 3))),
               Not(EqualNullSafe(("topic",), "events-a-lz4")), Not(In(("topic",), ("x",)))]
    result = translate_filters(filters)
    assert _ids(result.handled) == _ids(filters) and result.remaining == []
    predicates = result.predicates
    assert predicates == Predicates(topic_patterns=(("startswith", "ev"), ("endswith", "-lz4"), ("contains", "s")),
                                    excluded_partitions=frozenset({0, 2, 3}),
                                    excluded_topics=frozenset({"events-a-lz4", "x"}))
    assert predicates.selects("events-lz4", 1) and predicates.selects("events-lz4", 4)
    assert not predicates.selects("events-lz4", 0) and not predicates.selects("events-lz4", 3)
    assert not predicates.selects("events-gzip", 1) and not predicates.selects("orders-lz4", 1)
    assert not predicates.selects("events-a-lz4", 1) and not predicates.selects("evt-lz4", 1)
    # NOT IN with a NULL is never true: left to Spark, as are patterns on other columns and negated patterns
    kept = [Not(In(("partition",), (1, None))), StringStartsWith(("key",), "a"), Not(StringStartsWith(("topic",), "a"))]
    assert _ids(translate_filters(kept).remaining) == _ids(kept)

    # planning lists only the partitions they select (Spark's filters arrive this way for
    # where("topic LIKE 'ev%' AND partition <> 0"))
    write_data_dir(tmp_path, [TopicSpec("events", partitions=2, records_per_partition=10),
                              TopicSpec("orders", partitions=2, records_per_partition=10)], seed=1)
    where = translate_filters([StringStartsWith(("topic",), "ev"), Not(EqualTo(("partition",), 0))]).predicates
    plan = plan_scan(str(tmp_path), ReadOptions.from_options({}), where)
    assert [(p.topic, p.partition) for p in plan.report.partitions] == [("events", 1)]


def test_unsupported_shapes_are_left_to_spark():
    filters = [EqualTo(("offset",), 1.5), EqualTo(("offset",), True), GreaterThan(("partition",), 2),
               Not(In(("partition",), (1, "2"))), StringStartsWith(("topic",), 5), EqualTo(("value",), b"x"),
               EqualTo(("headers", "key"), "h"), In(("offset",), (1, "2")), Not(GreaterThan(("offset",), 3))]
    result = translate_filters(filters)
    assert result.predicates is None
    assert _ids(result.remaining) == _ids(filters) and result.handled == []


def test_timestamp_bounds_only_prune_and_are_widened_to_whole_milliseconds():
    t = dt.datetime(2023, 11, 14, 22, 13, 20, 123456, tzinfo=UTC)  # 1700000000123.456 ms
    ms = 1_700_000_000_123
    filters = [GreaterThan(("timestamp",), t), LessThanOrEqual(("timestamp",), t + dt.timedelta(seconds=1))]
    result = translate_filters(filters)
    assert result.handled == [] and _ids(result.remaining) == _ids(filters) == _ids(result.pruning_only)
    assert result.predicates.timestamp_range == (ms, ms + 1000 + 1)
    assert translate_filters([EqualTo(("timestamp",), t)]).predicates.timestamp_range == (ms, ms + 1)
    assert translate_filters([In(("timestamp",), (t, t - dt.timedelta(milliseconds=5)))]).predicates \
        .timestamp_range == (ms - 5, ms + 1)
    # a record at exactly the bound's millisecond is never pruned, on either side
    at = dt.datetime.fromtimestamp(ms / 1000, UTC)
    lo, hi = translate_filters([GreaterThanOrEqual(("timestamp",), at), LessThan(("timestamp",), at)]) \
        .predicates.timestamp_range
    assert lo == ms and hi == ms + 1
    naive = translate_filters([GreaterThan(("timestamp",), dt.datetime(2023, 1, 1))])
    assert naive.predicates is None and naive.pruning_only == []


def test_reader_passes_pysparks_pushdown_guard_yet_translates_when_called():
    reader = KafkaSegReader(ReadOptions.from_options({"path": "/nowhere", "filterPushdown": "true"}))
    # plan_data_source_read.py raises DATA_SOURCE_PUSHDOWN_DISABLED when this is not the base method
    assert getattr(reader.pushFilters, "__func__", None) is DataSourceReader.pushFilters
    assert KafkaSegReader.pushFilters is DataSourceReader.pushFilters
    kept = GreaterThan(("value",), b"a")
    pushed = EqualTo(("partition",), 3)
    assert list(reader.pushFilters([pushed, kept])) == [kept]
    assert reader.predicates == Predicates(partitions=frozenset({3}))
    clone = pickle.loads(pickle.dumps(reader))  # PySpark pickles the reader into the read function
    assert clone.predicates == reader.predicates and clone.scan_id == reader.scan_id


def test_filter_pushdown_auto_claims_nothing_where_pyspark_reuses_pushed_plans():
    from kafkaseg.spark.source import PUSHED_PLANS_ARE_SCOPED

    filters = [EqualTo(("partition",), 3), GreaterThan(("value",), b"a")]
    auto = KafkaSegReader(ReadOptions.from_options({"path": "/nowhere"}))
    off = KafkaSegReader(ReadOptions.from_options({"path": "/nowhere", "filterPushdown": "false"}))
    assert list(off.pushFilters(filters)) == filters and off.predicates is None
    if PUSHED_PLANS_ARE_SCOPED:
        assert list(auto.pushFilters(filters)) == filters[1:]
    else:
        assert list(auto.pushFilters(filters)) == filters and auto.predicates is None
        assert auto.pushdown["disabled"] and auto.pushdown["handled"] == []


def test_schema_options_and_user_schema():
    source = KafkaSegDataSource({"path": "/x", "includeHeaders": "true"})
    assert source.schema() == spark_schema(include_headers=True)
    assert [f.name for f in source.schema()][-1] == "headers"
    with pytest.raises(InvalidOptionError, match="fixed schema"):
        source.reader(spark_schema())
    with pytest.raises(InvalidOptionError, match="subscribePatern"):
        KafkaSegDataSource({"path": "/x", "subscribePatern": "a.*"}).schema()
    # wrong for either kind of read: said once, not "as a batch read: X; as a streaming read: X"
    with pytest.raises(InvalidOptionError) as raised:
        KafkaSegDataSource({"path": "/x", "includeHeaders": "yes"}).schema()
    assert "includeHeaders" in str(raised.value) and "streaming read" not in str(raised.value)
    with pytest.raises(InvalidOptionError, match="as a batch read .* as a streaming read"):  # each its own
        KafkaSegDataSource({"path": "/x", "startingOffsets": "latest", "endingOffsets": "earliest"}).schema()
    assert read_options({"path": "/a, /b"}).paths == ("/a", "/b")
    assert read_options({"paths": '["/a,b"]'}).paths == ("/a,b",)


def test_create_table_is_refused_with_the_temporary_view_that_works():
    """``CREATE TABLE t USING kafkaseg OPTIONS (...)`` hands the source the catalog's table properties (as PySpark
    4.3 passes them, seen by the audit), and a later query on the table reaches the reader with no options at all:
    it was refused as "unknown option 'location'; did you mean 'onCorruption'?" (found by audit)."""
    table = {"location": "file:/x", "path": "file:/x", "subscribe": "orders", "option.subscribe": "orders",
             "owner": "root", "provider": "kafkaseg"}
    for options in (table, {"owner": "root", "provider": "kafkaseg"}):  # ... USING kafkaseg, no OPTIONS
        with pytest.raises(InvalidOptionError, match=r"CREATE TABLE .*CREATE TEMPORARY VIEW"):
            KafkaSegDataSource(options).schema()
    # an option of that name given by hand is still just unknown
    with pytest.raises(InvalidOptionError, match="unknown option 'owner'"):
        KafkaSegDataSource({"path": "/x", "owner": "me"}).schema()


def test_pyspark_lookup_finds_the_kafkaseg_default_source():
    from pyspark.serializers import read_int, UTF8Deserializer
    from pyspark.sql.worker import lookup_data_sources

    if not hasattr(lookup_data_sources, "_main"):
        pytest.skip("PySpark 4.1's lookup worker reads the JVM's handshake first (its Spark tests load "
                    "format('kafkaseg') through the same discovery)")
    out = io.BytesIO()
    lookup_data_sources._main(io.BytesIO(), out)
    out.seek(0)
    names = []
    for _ in range(read_int(out)):
        names.append(UTF8Deserializer().loads(out))
        length = read_int(out)
        out.read(length)
    assert "kafkaseg" in names


def test_offsets_left_out_inside_a_batch_are_read_once(tmp_path):
    """``offset <> 7`` and ``offset IN (6, 8)`` are ranges that each need the batch holding 7: planned as one
    slice per segment that reads it once (and leaves 7 out), not two slices both reading it."""
    from kafkaseg.scan import Scan

    write_data_dir(tmp_path, [TopicSpec("t", records_per_partition=300, records_per_batch=10,
                                        vary_batch_size=False, segment_bytes=8_000)], seed=1)
    options = ReadOptions.from_options({})
    whole = Scan(plan_scan(str(tmp_path), options), options)
    expected = whole.to_table()["offset"].to_pylist()
    for filters, kept in (([Not(EqualTo(("offset",), 7))], lambda o: o != 7),
                          ([In(("offset",), (6, 8))], lambda o: o in (6, 8))):
        result = translate_filters(filters)
        assert _ids(result.handled) == _ids(filters)  # Spark does not check the rows again: the read must be exact
        scan = Scan(plan_scan(str(tmp_path), options, result.predicates), options)
        assert scan.to_table()["offset"].to_pylist() == [o for o in expected if kept(o)]
        assert [s.offset_gaps for s in scan.plan.slices if s.start_offset <= 7 < s.end_offset] == [((7, 8),)]
        if kept(0):
            assert len(scan.plan.slices) == len(whole.plan.slices)
            assert scan.metrics.bytes_read == whole.metrics.bytes_read
            assert scan.metrics.decode.batches == whole.metrics.decode.batches
        else:
            assert len(scan.plan.slices) == 1 and scan.metrics.decode.batches == 1


def test_plan_line_says_what_was_pushed_skipped_and_left_to_spark(tmp_path, monkeypatch, caplog):
    """``df.explain()`` cannot show a Python source's pruning (PySpark's ``PythonScan.description`` is the constant
    ``(Python)``), so the per-scan INFO line and ``ScanReport.summary()`` must: the segments and bytes the plan
    skipped, the filters the scan applies, those that only prune, and those left to Spark, with readable values."""
    from kafkaseg.spark import last_plan_report

    monkeypatch.setenv("KAFKASEG_SPARK_REPORT_DIR", str(tmp_path / "reports"))
    write_data_dir(tmp_path / "logs", [TopicSpec("t", partitions=2, records_per_partition=300, records_per_batch=10,
                                                 segment_bytes=4096)], seed=2)
    after = dt.datetime(2023, 11, 14, 22, 13, 20, tzinfo=UTC)
    filters = [EqualTo(("partition",), 1), LessThan(("offset",), 10), GreaterThan(("timestamp",), after),
               EqualTo(("key",), b"k")]
    reader = KafkaSegDataSource({"path": str(tmp_path / "logs"), "filterPushdown": "true"}).reader(spark_schema())
    reader.pushFilters(filters)
    with caplog.at_level("INFO", logger="kafkaseg.spark"):
        reader.partitions()
    report = last_plan_report()
    line = report.summary()
    assert line in caplog.text
    segments_skipped = report.segments_considered - report.segments_planned
    bytes_skipped = report.bytes_total - report.bytes_planned
    assert segments_skipped > 0 and bytes_skipped > 0
    assert report.segments_skipped == segments_skipped and report.bytes_skipped == bytes_skipped
    assert f"{segments_skipped} skipped" in line and f"{bytes_skipped:,} bytes skipped" in line
    assert f"{len(report.plan.partitions_pruned)} partitions pruned" in line
    assert "pushed [partition = 1, offset < 10]" in line
    assert f"pruning only [timestamp > {after.isoformat()}]" in line
    assert "left to Spark [key = b'k']" in line
    assert "datetime.datetime(" not in line


def test_a_loads_report_is_found_by_its_options_not_by_being_the_newest(tmp_path, monkeypatch):
    """``last_plan_report()`` is the host's newest planned scan, and PySpark (4.1-4.3) does not plan a later query
    on the same ``load()`` again: after ``dfA.count()`` it is ``dfB``'s scan. ``plan_report_for_load`` matches the
    options of a ``load()`` (as Spark hands them to the source: one ``path`` with commas, or ``paths``)."""
    from kafkaseg.spark import last_plan_report
    from kafkaseg.spark.reports import plan_report_for_load

    monkeypatch.setenv("KAFKASEG_SPARK_REPORT_DIR", str(tmp_path / "reports"))
    for name in ("a", "b"):
        write_data_dir(tmp_path / name, [TopicSpec("t", partitions=2, records_per_partition=20)], seed=4)
    since = dt.datetime.now().timestamp()
    load_a = {"path": f"{tmp_path / 'a'},{tmp_path / 'b'}", "assign": '{"t":[0]}'}
    load_b = {"paths": f'["{tmp_path / "a"}", "{tmp_path / "b"}"]', "assign": '{"t":[1]}'}
    for options in (load_a, load_b):
        KafkaSegDataSource(options).reader(spark_schema()).partitions()
    newest = last_plan_report()
    assert newest.plan.options["assign"] == {"t": [1]}
    report_a = plan_report_for_load(load_a, since)
    assert report_a.plan.options["assign"] == {"t": [0]} and report_a.scan_id != newest.scan_id
    assert plan_report_for_load(load_b, since).scan_id == newest.scan_id
    assert plan_report_for_load({**load_a, "assign": '{"t":[2]}'}, since) is None
    assert plan_report_for_load(load_a, dt.datetime.now().timestamp() + 60) is None


def test_pyspark_hands_python_sources_no_or_and_kafkaseg_knows_every_kind_it_does():
    """PySpark (4.1.4, 4.3.0) sends a Python source only single-column comparisons, each possibly under NOT: its
    pushdown worker deserializes no ``Or``/``And`` (Spark keeps ``offset < 10 OR offset > 100`` in its own Filter;
    README). Fails when a PySpark hands over a kind of filter kafkaseg's translation does not know, such as Or."""
    from pyspark.errors.exceptions.base import PySparkNotImplementedError
    from pyspark.sql.worker import data_source_pushdown_filters as worker

    sent = set(worker.binary_filters) | set(worker.unary_filters)
    known = {cls.__name__ for cls in (EqualTo, EqualNullSafe, GreaterThan, GreaterThanOrEqual, LessThan,
                                      LessThanOrEqual, In, IsNull, IsNotNull, StringStartsWith, StringEndsWith,
                                      StringContains)}
    assert sent == known
    for name in ("Or", "And"):  # PySpark 4.1.4 fails on its own message (no UNSUPPORTED_FILTER error class)
        with pytest.raises((PySparkNotImplementedError, ValueError)):
            worker.deserializeFilter({"name": name, "columnPath": ["offset"], "isNegated": False})
