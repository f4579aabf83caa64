"""jobs/export.py: argument parsing without Spark; the transform and the whole job (executor-written Delta and
Parquet tables) on the shared session."""

from __future__ import annotations

import datetime as dt
import os
import time

import pyarrow as pa
import pytest

from jobs import export
from kafkaseg.compacted_table import delta_dataset
from kafkaseg.schema import arrow_schema


def _batch(timestamps_ms):
    n = len(timestamps_ms)
    schema = arrow_schema()
    return pa.RecordBatch.from_pydict({
        "key": [b"k"] * n, "value": [None] * n, "topic": ["t"] * n, "partition": [0] * n, "offset": list(range(n)),
        "timestamp": pa.array([t * 1000 for t in timestamps_ms], pa.int64()).cast(pa.timestamp("us", tz="UTC")),
        "timestampType": [0] * n}, schema=schema)


@pytest.mark.spark
def test_transform_adds_the_utc_date_and_keeps_every_column(spark):
    # 2023-11-14T23:59:59.999Z, 2023-11-15T00:00:00Z, no timestamp (magic 0), a pre-1970 edge
    batch = _batch([1_700_006_399_999, 1_700_006_400_000, -1, -86_400_000])
    previous = spark.conf.get("spark.sql.session.timeZone")
    try:
        spark.conf.set("spark.sql.session.timeZone", "America/Los_Angeles")  # the date must not depend on it
        out = export.with_export_columns(spark.createDataFrame(pa.Table.from_batches([batch])))
        table = out.toArrow()
    finally:
        spark.conf.set("spark.sql.session.timeZone", previous)
    assert table.schema.names == export.export_schema(batch.schema).names
    assert table.column("offset").to_pylist() == [0, 1, 2, 3]
    assert table.column("date").to_pylist() == [dt.date(2023, 11, 14), dt.date(2023, 11, 15), None,
                                                dt.date(1969, 12, 31)]


def test_arguments():
    args = export.parse_args(["--sample", "--work-dir", "/tmp/w", "--format", "parquet"])
    assert (args.output, args.mode, args.partition_by) == ("/tmp/w/sample-parquet", "overwrite", ["topic"])
    args = export.parse_args(["--data-dir", "/a", "--data-dir", "/b", "--output", "/o", "--option",
                              "kafka.isolation.level=read_committed", "--partition-by", ""])
    assert args.data_dir == ["/a", "/b"] and args.mode == "error" and args.partition_by == []
    assert args.options == {"kafka.isolation.level": "read_committed"}
    for bad in (["--data-dir", "/a"], ["--sample", "--option", "novalue"], ["--sample", "--data-dir", "/a"],
                ["--sample", "--option", "Columns=offset"], ["--sample", "--partition-by", "topic,nosuch"],
                ["--sample", "--partition-by", "value"]):
        with pytest.raises(SystemExit):
            export.parse_args(bad)


@pytest.mark.spark
def test_sample_job_writes_delta_and_parquet_tables_matching_the_manifest(spark, tmp_path):
    import pyarrow.dataset as ds

    result = export.run(spark, export.parse_args(["--sample", "--work-dir", str(tmp_path)]))
    manifest = result["manifest"]
    expected = sorted((t, p, r.offset, r.key, r.value) for (t, p), pm in manifest.partitions.items()
                      for r in pm.data_records())
    assert [(t, p, n) for t, p, n, _, _ in result["summary"]] == [
        (t, p, len(pm.data_records())) for (t, p), pm in sorted(manifest.partitions.items())]
    table = delta_dataset(result["output"]).to_table()
    got = sorted(zip(*(table.column(c).to_pylist() for c in ("topic", "partition", "offset", "key", "value"))))
    assert got == expected
    assert table.schema.field("date").type == pa.date32()

    parquet = export.run(spark, export.parse_args(["--data-dir", result["paths"][0], "--output", str(tmp_path / "pq"),
                                                   "--format", "parquet", "--option", "subscribe=orders,clicks"]))
    pq = ds.dataset(parquet["output"], format="parquet", partitioning="hive").to_table()
    assert pq.schema.field("timestamp").type == pa.timestamp("us", tz="UTC")  # not legacy INT96 (naive)
    assert table.schema.field("timestamp").type == pa.timestamp("us", tz="UTC")
    assert sorted(zip(*(pq.column(c).to_pylist() for c in ("topic", "partition", "offset", "key", "value")))) \
        == [row for row in expected if row[0] in ("orders", "clicks")]


@pytest.mark.spark
def test_delta_modes_commit_once_per_run_and_keep_timestamps(spark, tmp_path):
    """append refuses offsets the table holds and other columns; incremental adds one commit with only the newer
    offsets; overwrite replaces every file; error refuses an existing table; the executors' Parquet timestamps
    arrive in Delta as microsecond timestamps."""
    from deltalake import DeltaTable

    from kafkaseg.testing import TopicSpec, write_data_dir

    logs = tmp_path / "logs"
    manifest = write_data_dir(logs, [TopicSpec("t", partitions=2, records_per_partition=150)])
    _lower_high_watermarks(logs, manifest, 50)
    output = str(tmp_path / "table")
    base = ["--data-dir", str(logs), "--output", output]
    export.run(spark, export.parse_args(base))
    with pytest.raises(export.UsageError, match=r"t-0 offsets 0\.\.99; t-1 offsets 0\.\.99"):
        export.run(spark, export.parse_args(base + ["--mode", "append"]))
    with pytest.raises(export.UsageError, match="only in the export: headers"):
        export.run(spark, export.parse_args(base + ["--mode", "incremental", "--option", "includeHeaders=true"]))
    _lower_high_watermarks(logs, manifest, 0)
    assert export.run(spark, export.parse_args(base + ["--mode", "incremental"]))["records"] == 100
    assert export.run(spark, export.parse_args(base + ["--mode", "incremental"]))["records"] == 0
    # appending no records (offsets past the table's that hold none: a transaction's marker) commits nothing
    from kafkaseg.spark.tables import write_delta

    folders = sorted(p.name for p in (tmp_path / "table").iterdir())
    nothing = export.with_export_columns(export.extract(spark, [str(logs)], {})).limit(0)
    assert write_delta(nothing, output, "append", ["topic"], export.export_schema(export._arrow_schema({})))[
        "files"] == 0
    assert sorted(p.name for p in (tmp_path / "table").iterdir()) == folders
    table = DeltaTable(output)
    offsets = sorted(zip(*(delta_dataset(output, table).to_table().column(c).to_pylist() for c in ("partition", "offset"))))
    assert table.version() == 1 and offsets == [(p, o) for p in (0, 1) for o in range(150)]
    export.run(spark, export.parse_args(base + ["--mode", "overwrite"]))
    data = delta_dataset(output).to_table()
    assert DeltaTable(output).version() == 2 and data.num_rows == manifest.record_count
    # overwrite may change the partitioning (delta-rs kept the old partition columns: every topic read as null),
    # keeping what the table's owner set on it (a retention property, its name and description)
    DeltaTable(output).alter.set_table_properties({"delta.deletedFileRetentionDuration": "interval 30 days"})
    DeltaTable(output).alter.set_table_name("orders_raw")
    DeltaTable(output).alter.set_table_description("Kafka orders, exported")
    export.run(spark, export.parse_args(base + ["--mode", "overwrite", "--partition-by", ""]))
    table = DeltaTable(output)
    assert table.version() == 6 and list(table.metadata().partition_columns) == []
    assert table.metadata().configuration == {"delta.deletedFileRetentionDuration": "interval 30 days"}
    assert (table.metadata().name, table.metadata().description) == ("orders_raw", "Kafka orders, exported")
    # and incremental runs go on from the replaced table's offsets
    assert export.run(spark, export.parse_args(base + ["--mode", "incremental", "--partition-by", ""]))[
        "records"] == 0
    assert sorted(set(delta_dataset(output, table).to_table().column("topic").to_pylist())) == ["t"]
    assert delta_dataset(output, table).to_table().num_rows == manifest.record_count
    assert pa.types.is_timestamp(data.schema.field("timestamp").type)
    expected = sorted((p, r.offset, r.timestamp) for (_, p), pm in manifest.partitions.items() for r in pm.records)
    got = sorted(zip(data.column("partition").to_pylist(), data.column("offset").to_pylist(),
                     (int(v.timestamp() * 1000) for v in data.column("timestamp").to_pylist())))
    assert got == expected
    # per-file statistics from the footers: Delta readers can skip files by offset
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    actions = pa.table(DeltaTable(output).get_add_actions(flatten=True)).to_pydict()  # arro3 -> pyarrow
    assert sum(actions["num_records"]) == manifest.record_count
    for path, lo, hi in zip(actions["path"], actions["min.offset"], actions["max.offset"]):
        offsets = pq.read_table(f"{output}/{path}", columns=["offset"]).column("offset")
        assert (lo, hi) == (pc.min(offsets).as_py(), pc.max(offsets).as_py())
    with pytest.raises(FileExistsError):
        export.run(spark, export.parse_args(base))


def test_skipped_report_lines():
    assert export.skipped_report({}) == ({"corrupt_batches": 0, "corrupt_bytes": 0, "truncated_tails": [],
                                          "problems": [], "vanished_segments": [], "missing_offsets": [],
                                          "unreadable_tails": [], "lost_tails": [], "lenient_decisions": []}, [])
    skipped, lines = export.skipped_report({"corrupt_batches": 2, "corrupt_bytes": 300, "problems": [
        ("/d/t-0/0.log", 10, "CRC-32C mismatch"), ("/d/t-0/0.log", 90, "bad magic")],
        "truncated_tails": [("/d/t-1/0.log", 500, 12)]}, limit=1)
    assert skipped["corrupt_batches"] == 2 and skipped["truncated_tails"] == [["/d/t-1/0.log", 500, 12]]
    assert lines == ["skipped 2 corrupt batches (300 bytes; onCorruption=skip): their records are not in the table",
                     "  /d/t-0/0.log @ byte 10: CRC-32C mismatch", "  ... and 1 more problems",
                     "left out 1 truncated tails (a batch cut off at a segment's end):",
                     "  /d/t-1/0.log @ byte 500: 12 bytes"]
    _, lines = export.skipped_report({"vanished_segments": [("/d/t-0/5.log", 5, 9, "skipped (failOnDataLoss=false)")]})
    assert lines == ["1 segments were deleted or replaced by the broker after planning:",
                     "  /d/t-0/5.log offsets [5, 9): skipped (failOnDataLoss=false)"]
    _, lines = export.skipped_report({"unreadable_tails": [["/d/t-0/250.log", 2584, "index entries ...", 100, 270,
                                                            300]]})
    assert lines[0].startswith("1 segments (active ones with no high watermark, or rolled ones cut short) end "
                               "before offsets their own indexes or producer snapshots prove") and \
        lines[1] == "  /d/t-0/250.log @ byte 2584: offsets [270, 300) not in the table"
    # flushed offsets an active segment lost, read past under failOnDataLoss=false: data loss, listed (they were in
    # no line); under onCorruption=skip the same tail is one of the problems, said once
    tail = ["/d/t-0/250.log", 2584, "the active segment's readable batches end ...", 0, 270, 300]
    _, lines = export.skipped_report({"lost_tails": [tail]})
    assert lines == ["data loss (failOnDataLoss=false): 1 segments (active ones, rolled ones cut short, or a "
                     "partition's deleted .log files) lost offsets the recovery point or high watermark says were "
                     "written:", "  /d/t-0/250.log @ byte 2584: offsets [270, 300) not in the table"]
    _, lines = export.skipped_report({"lost_tails": [tail], "problems": [tail], "corrupt_batches": 1})
    assert not any("data loss" in line for line in lines) and sum("250.log" in line for line in lines) == 1
    _, lines = export.skipped_report({"missing_offsets": [("/d/t-0/0.log", 63, 89)]})
    assert lines[0].startswith("offsets missing between segments in 1 places") and \
        lines[1] == "  after /d/t-0/0.log: offsets [63, 89)"
    # what planning decided under onCorruption=skip (JSON lists, as read_metrics() gets them from the plan file)
    skipped, lines = export.skipped_report({"lenient_decisions": [
        ["t-0", "/d/t-0/0.log", 700, 269, 400, "the transaction is taken as aborted"],
        ["t-1", "/d/replication-offset-checkpoint", None, None, None, "unreadable"]]}, limit=1)
    assert len(skipped["lenient_decisions"]) == 2
    assert lines == ["2 planning decisions of onCorruption=skip change which records are in the table:",
                     "  t-0: /d/t-0/0.log @ byte 700: the transaction is taken as aborted (onCorruption=skip)",
                     "  ... and 1 more"]


def test_append_and_incremental_ranges_without_spark():
    existing = {("t", 0): (0, 99), ("t", 1): (10, 49)}
    ranges = {("t", 0): (0, 150), ("t", 1): (50, 80), ("u", 0): (5, 9)}
    assert export.overlaps(ranges, existing) == ["t-0 offsets 0..99"]
    assert export.overlaps({("t", 1): (40, 40)}, existing) == []  # nothing to read, nothing duplicated
    assert export.incremental_ranges(ranges, existing) == {("t", 0): (100, 150), ("t", 1): (50, 80),
                                                          ("u", 0): (5, 9)}
    assert export.incremental_ranges({("t", 0): (0, 60)}, existing) == {("t", 0): (100, 100)}
    export.check_columns(["topic", "offset"], ["offset", "topic"], "/o", "append")
    with pytest.raises(export.UsageError, match="only in the table: headers; only in the export: none"):
        export.check_columns(["topic", "headers"], ["topic"], "/o", "append")


@pytest.mark.parametrize("fmt", ["delta", "parquet"])
def test_existing_table_offsets_and_columns_without_spark(tmp_path, fmt):
    import pyarrow.dataset as ds

    table = pa.table({"offset": pa.array([5, 9, 7, 3], pa.int64()), "partition": pa.array([0, 0, 1, 0], pa.int32()),
                      "topic": ["a", "a", "a", "b"]})
    output = str(tmp_path / "t")
    assert not export.table_exists(output, fmt)
    if fmt == "delta":
        from deltalake import write_deltalake

        write_deltalake(output, table, partition_by=["topic"])
    else:
        ds.write_dataset(table, output, format="parquet", partitioning=["topic"], partitioning_flavor="hive")
    assert export.table_exists(output, fmt)
    assert export.existing_offsets(output, fmt) == {("a", 0): (5, 9), ("a", 1): (7, 7), ("b", 0): (3, 3)}
    assert sorted(export.existing_columns(output, fmt)) == ["offset", "partition", "topic"]


@pytest.mark.parametrize("output, data, inside", [
    ("/k/data/export", "/k/data", True), ("/k/data", "/k/data/", True), ("/k", "/k/data", True),
    ("/k/data-export", "/k/data", False), ("/k/out/x", "/k/data/*", False), ("/k/data/x", "/k/data/orders-*", True),
    ("s3://b/data/x", "s3://b/data", True), ("s3://b/other", "s3://b/data", False),
    ("s3a://b/data/x", "s3://b/data?region=x", True), ("s3://b?region=x", "s3://K:S@b/data?region=x", True),
    ("s3a://b/out", "s3://b/data", False), ("s3://b/kafka/d%61ta/out", "s3://b/kafka/data", True),
    # every local URI form Spark writes to (file:/x went unrecognised, and an overwrite deleted the log dir)
    ("file:/k/data", "/k/data", True), ("file:///k/data/x", "/k/data", True), ("FILE://localhost/k", "/k/data", True),
    ("file:/k/d%61ta/x", "/k/data", True), ("/k/data/x", "file:/k/data", True), ("file:/k/out", "/k/data", False)])
def test_output_inside_a_data_dir_is_refused(output, data, inside):
    if inside:
        with pytest.raises(export.UsageError, match="inside"):
            export.check_output_location(output, ["/elsewhere", data])
    else:
        export.check_output_location(output, [data])
def test_discovered_log_dirs_keep_the_given_uris_scheme_and_authority(monkeypatch):
    """pyarrow names an HDFS path without its namenode and a GCS one without gs://: the guard rebuilds discovered
    log dirs with what came before the filesystem's path in the URI given (libhdfs is not on this machine)."""
    from kafkaseg.storage import fs

    paths = {"hdfs://nn:8020/kafka/data/t-0": "/kafka/data/t-0", "gs://bkt/kafka/data": "bkt/kafka/data"}
    monkeypatch.setattr(fs, "open_filesystem", lambda uri: (None, paths[uri.split("?")[0]]))
    assert export._uri_prefix("hdfs://nn:8020/kafka/data/t-0") == "hdfs://nn:8020"
    assert export._uri_prefix("gs://bkt/kafka/data?x=1") == "gs://"
    assert export._uri_prefix("/local/kafka") is None


def test_delta_file_stats_from_parquet_footers(tmp_path):
    """Per-file Delta statistics: exact row counts, min/max/null counts of offset, partition, timestamp and date;
    none for binary key/value; a timestamp maximum with sub-millisecond digits is rounded up to stay a bound."""
    import pyarrow.parquet as pq

    from kafkaseg.spark.tables import file_stats

    table = pa.table({
        "key": pa.array([b"a", None, b"c"], pa.binary()),
        "offset": pa.array([7, 9, 8], pa.int64()),
        "partition": pa.array([3, 3, 3], pa.int32()),
        "timestamp": pa.array([1_700_000_000_000_000, 1_700_000_000_001_500, None], pa.timestamp("us", tz="UTC")),
        "date": pa.array([dt.date(2023, 11, 14)] * 3, pa.date32()),
        "topic": pa.array(["t", "t", "u"]),
    })
    pq.write_table(table, tmp_path / "f.parquet", row_group_size=2)  # two row groups to merge
    stats = file_stats(pq.ParquetFile(tmp_path / "f.parquet").metadata)
    assert stats["numRecords"] == 3
    assert stats["minValues"] == {"offset": 7, "partition": 3, "timestamp": "2023-11-14T22:13:20.000Z",
                                  "date": "2023-11-14", "topic": "t"}
    assert stats["maxValues"] == {"offset": 9, "partition": 3, "timestamp": "2023-11-14T22:13:20.002Z",
                                  "date": "2023-11-14", "topic": "u"}
    assert stats["nullCount"] == {"offset": 0, "partition": 0, "timestamp": 1, "date": 0, "topic": 0}


def test_pinned_options_replace_every_range_option_with_the_resolved_offsets():
    options = {"subscribe": "t", "startingTimestamp": "1", "EndingOffsets": "latest",
               "startingOffsetsByTimestampStrategy": "latest", "endingOffsetsByTimestamp": "{}"}
    pinned = export.pinned_options(options, {("t", 1): (5, 9), ("t", 0): (7, 3), ("u", 10): (0, 0)})
    assert pinned == {"subscribe": "t", "startingOffsets": '{"t":{"0":7,"1":5},"u":{"10":0}}',
                      "endingOffsets": '{"t":{"0":7,"1":9},"u":{"10":0}}'}


def _lower_high_watermarks(root, manifest, behind):
    from kafkaseg.testing.partition import write_offset_checkpoint

    write_offset_checkpoint(root / "replication-offset-checkpoint",
                            {key: pm.high_watermark - behind for key, pm in manifest.partitions.items()})


def test_ranges_are_resolved_once_without_spark(tmp_path):
    from kafkaseg.testing import TopicSpec, write_data_dir

    manifest = write_data_dir(tmp_path / "logs", [TopicSpec("t", partitions=2, records_per_partition=150)])
    _lower_high_watermarks(tmp_path / "logs", manifest, 50)
    assert export.plan_ranges([str(tmp_path / "logs")], {"startingTimestamp": str(1_700_000_000_000 + 10 * 20)})[0] \
        == {("t", 0): (20, 100), ("t", 1): (20, 100)}
    assert export.plan_ranges([str(tmp_path / "logs")], {"replicas": "all"})[0] is None


@pytest.mark.spark
def test_a_high_watermark_moving_before_the_read_changes_nothing(spark, tmp_path, monkeypatch):
    """On a live dir the replication-offset-checkpoint moves between the job's planning and Spark's read: the
    read takes the offsets resolved before. The printed summary comes from the written files. A Delta commit
    whose files do not hold the expected count is refused."""

    from kafkaseg.errors import ExportMismatchError
    from kafkaseg.spark.tables import write_delta
    from kafkaseg.testing import TopicSpec, write_data_dir

    logs = tmp_path / "logs"
    manifest = write_data_dir(logs, [TopicSpec("t", partitions=2, records_per_partition=150)])
    _lower_high_watermarks(logs, manifest, 50)
    extract = export.extract

    def advance_then_extract(*a, **k):
        _lower_high_watermarks(logs, manifest, 0)  # the broker acknowledged 50 more per partition meanwhile
        return extract(*a, **k)

    monkeypatch.setattr(export, "extract", advance_then_extract)
    output = str(tmp_path / "table")
    result = export.run(spark, export.parse_args(["--data-dir", str(logs), "--output", output]))
    assert result["records"] == 200 and delta_dataset(output).to_table().num_rows == 200
    assert result["summary"] == [("t", 0, 100, 0, 99), ("t", 1, 100, 0, 99)]
    monkeypatch.setattr(export, "extract", extract)

    df = export.with_export_columns(export.extract(spark, [str(logs)], {}))
    with pytest.raises(ExportMismatchError, match="expected 7"):
        write_delta(df, str(tmp_path / "t2"), "error", ["topic"], export.export_schema(export._arrow_schema({})),
                    expected_records=7)
    assert not (tmp_path / "t2" / "_delta_log").exists()

    # onCorruption=skip: what was skipped is said and returned
    segment = logs / "t-0" / "00000000000000000000.log"
    data = bytearray(segment.read_bytes())
    data[5000] ^= 0xFF
    segment.write_bytes(bytes(data))
    result = export.run(spark, export.parse_args(["--data-dir", str(logs), "--output", str(tmp_path / "pq"),
                                                  "--format", "parquet", "--option", "onCorruption=skip"]))
    skipped = result["skipped"]
    assert skipped["corrupt_batches"] == 1 and skipped["corrupt_bytes"] > 0 and result["records"] < 300
    assert skipped["problems"][0][0].endswith("00000000000000000000.log") and "CRC" in skipped["problems"][0][2]


def test_errors_are_one_line_with_an_exit_status():
    from kafkaseg.errors import CrcMismatchError, LayoutError
    from kafkaseg.spark.jobs import error_line

    assert error_line(LayoutError("/nope: no such file or directory")) == (
        "LayoutError: /nope: no such file or directory", 2)
    assert error_line(CrcMismatchError("/d/t-0/0.log @ byte 1410: CRC-32C mismatch")) == (
        "CrcMismatchError: /d/t-0/0.log @ byte 1410: CRC-32C mismatch", 1)
    assert error_line(FileExistsError("/o exists"))[1] == 2
    assert error_line(export.UsageError("bad"), usage=(export.UsageError,)) == ("UsageError: bad", 2)
    assert error_line(KeyError("a bug keeps its traceback")) is None

    wrapped = type("PythonException", (Exception,), {"__module__": "pyspark.errors.exceptions.captured"})
    text = ("\n  An exception was thrown from the Python worker. Please see the stack trace below.\nTraceback (most "
            "recent call last):\n  File \"/x/planning.py\", line 1116, in plan_scan\n    found = discover(paths)\n"
            "kafkaseg.errors.DataLossError: t-0: offset 5 is below the log start offset 9\n SQLSTATE: 38000")
    assert error_line(wrapped(text)) == ("DataLossError: t-0: offset 5 is below the log start offset 9", 1)
    assert error_line(wrapped(text.replace("DataLossError", "InvalidOptionError")))[1] == 2
    other = wrapped("[PATH_NOT_FOUND] Path does not exist: file:/x.csv. SQLSTATE: 42K03\nJVM stacktrace: ...")
    assert error_line(other) == ("PythonException: [PATH_NOT_FOUND] Path does not exist: file:/x.csv. SQLSTATE: "
                                 "42K03", 1)
    # another error in a worker: its own line, not the wrapper's "An exception was thrown from the Python worker:"
    missing = wrapped("[PYTHON_EXCEPTION] An exception was thrown from the Python worker: Traceback (most recent "
                      "call last):\n  File \"/x/serializers.py\", line 483, in loads\n    return cloudpickle.loads(obj)"
                      "\nModuleNotFoundError: No module named 'pyarrow'\n SQLSTATE: 38000\n\tat org.apache.spark.api")
    assert error_line(missing) == ("PythonException: ModuleNotFoundError: No module named 'pyarrow'", 1)


def test_main_reports_input_problems_in_one_line_before_starting_spark(tmp_path, capsys):
    from kafkaseg.testing import TopicSpec, write_data_dir

    write_data_dir(tmp_path / "logs", [TopicSpec("t", records_per_partition=10)])
    write_data_dir(tmp_path / "hive", [TopicSpec("__HIVE_DEFAULT_PARTITION__", records_per_partition=10)])
    (tmp_path / "table" / "_delta_log").mkdir(parents=True)
    for argv, message in [
            # a legal topic name that is Spark's folder name for null: its rows read back with a null topic
            (["--data-dir", str(tmp_path / "hive"), "--output", str(tmp_path / "o")],
             "UsageError: topic __HIVE_DEFAULT_PARTITION__ cannot be a partition folder's value"),
            (["--data-dir", str(tmp_path / "hive"), "--output", str(tmp_path / "o"), "--option", "replicas=all"],
             "UsageError: topic __HIVE_DEFAULT_PARTITION__ cannot be a partition folder's value"),

            (["--data-dir", str(tmp_path / "nope"), "--output", str(tmp_path / "o")], "BadPathError: "),
            (["--data-dir", str(tmp_path / "logs"), "--output", str(tmp_path / "table")], "already exists"),
            (["--data-dir", str(tmp_path / "logs"), "--output", str(tmp_path / "o"), "--option", "subscrbe=t"],
             "InvalidOptionError: unknown option 'subscrbe'"),
            (["--data-dir", str(tmp_path / "logs"), "--output", str(tmp_path / "logs" / "x")], "inside --data-dir")]:
        assert export.main(argv) == 2
        err = capsys.readouterr().err
        assert err.startswith("export.py: error: ") and message in err and err.count("\n") == 1, err


def test_a_hive_default_partition_topic_the_options_leave_out_is_not_refused(tmp_path):
    from kafkaseg.testing import TopicSpec, write_data_dir

    write_data_dir(tmp_path / "d", [TopicSpec("t", records_per_partition=10),
                                    TopicSpec("__HIVE_DEFAULT_PARTITION__", records_per_partition=10)])
    for extra in ([], ["--option", "replicas=all"]):
        args = export.parse_args(["--data-dir", str(tmp_path / "d"), "--output", str(tmp_path / "o"),
                                  "--option", "subscribe=t", *extra])
        assert export.prepare(args)["paths"] == [str(tmp_path / "d")]
        with pytest.raises(export.UsageError, match="__HIVE_DEFAULT_PARTITION__"):
            export.prepare(export.parse_args(["--data-dir", str(tmp_path / "d"), "--output", str(tmp_path / "o"),
                                              *extra]))


def test_sample_data_dir_is_one_fixed_dir_replaced_each_run(tmp_path):
    args = export.parse_args(["--sample", "--work-dir", str(tmp_path)])
    first = export.prepare(args)
    (tmp_path / "sample-kafka-logs" / "stale").write_text("x")
    second = export.prepare(args)
    assert first["paths"] == second["paths"] == [str(tmp_path / "sample-kafka-logs")]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["sample-kafka-logs"]
    assert not (tmp_path / "sample-kafka-logs" / "stale").exists()


def test_existing_parquet_table_keeps_numeric_topic_names_and_its_partitioning(tmp_path):
    """A Parquet table read back for append/incremental: partition values typed as the export writes them (topic
    "007" stays a string: inferred as 7 it matched no partition and incremental re-exported everything), its
    partition columns known, and a folder with no data files is no table."""
    import pyarrow.dataset as ds

    table = pa.table({"offset": pa.array([5, 9], pa.int64()), "partition": pa.array([0, 0], pa.int32()),
                      "topic": ["007", "123"]})
    output = tmp_path / "t"
    ds.write_dataset(table, str(output), format="parquet", partitioning=["topic"], partitioning_flavor="hive")
    assert export.existing_offsets(str(output), "parquet") == {("007", 0): (5, 5), ("123", 0): (9, 9)}
    assert export.existing_partitioning(str(output), "parquet") == ["topic"]
    with pytest.raises(export.UsageError, match="partitioned by topic, this export by nothing"):
        export.check_partitioning(["topic"], [], str(output), "append")
    export.check_partitioning(["topic"], ["topic"], str(output), "append")
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "_SUCCESS").write_text("")
    assert export._parquet_files(str(empty)) == []


def test_delta_partitioning_is_read_from_the_table(tmp_path):
    from deltalake import write_deltalake

    table = pa.table({"offset": pa.array([5], pa.int64()), "partition": pa.array([0], pa.int32()), "topic": ["a"]})
    write_deltalake(str(tmp_path / "d"), table, partition_by=["topic"])
    assert export.existing_partitioning(str(tmp_path / "d"), "delta") == ["topic"]


def test_output_inside_the_log_dir_of_a_partition_dir_or_log_file_is_refused(tmp_path):
    from kafkaseg.testing import sample_data_dir

    sample_data_dir(tmp_path / "data")
    partition = next(p for p in sorted((tmp_path / "data").iterdir()) if p.is_dir())
    log = next(partition.glob("*.log"))
    for given in (partition, log):
        with pytest.raises(export.UsageError, match="inside"):
            export.check_output_location(str(tmp_path / "data" / "out"), [str(given)])
        with pytest.raises(export.UsageError, match="inside"):
            export.check_output_location(str(partition / "out"), [str(given)])
    export.check_output_location(str(tmp_path / "lake"), [str(tmp_path / "d[a]ta")])  # a glob: its matches count


def test_the_summary_comes_from_file_footers_and_reads_only_files_they_cannot_attribute():
    """Each file the export writes holds one topic-partition (a task reads slices of one), so its footer's row
    count and offset bounds are its part of the summary; a file whose bounds span partitions is read (three
    columns) and grouped."""
    read = []

    def columns(table):
        def reader():
            read.append(table)
            return table
        return reader

    mixed = pa.table({"topic": ["a", "b", "b"], "partition": pa.array([0, 1, 1], pa.int32()),
                      "offset": [7, 3, 9]})
    files = [
        ({}, {"numRecords": 5, "minValues": {"topic": "a", "partition": 0, "offset": 10},
              "maxValues": {"topic": "a", "partition": 0, "offset": 19}}, columns(None)),
        ({"topic": "a"}, {"numRecords": 2, "minValues": {"partition": 0, "offset": 30},
                          "maxValues": {"partition": 0, "offset": 31}}, columns(None)),
        ({"topic": "b"}, {"numRecords": 0}, columns(None)),  # an empty file: nothing, not even read
        ({}, {"numRecords": 3, "minValues": {"topic": "a", "partition": 0, "offset": 3},
              "maxValues": {"topic": "b", "partition": 1, "offset": 9}}, columns(mixed)),
    ]
    assert export.summarize_files(files) == [("a", 0, 8, 7, 31), ("b", 1, 2, 3, 9)]
    assert read == [mixed]


@pytest.mark.spark
def test_parquet_summary_counts_only_the_files_this_run_wrote(spark, tmp_path):
    """With Spark's dynamic partition overwrite (a common cluster default), ``--mode overwrite`` replaces only the
    topic folders it writes: the other topics' files stay, and are not this run's to summarize."""
    from kafkaseg.testing import TopicSpec, write_data_dir

    logs = tmp_path / "logs"
    write_data_dir(logs, [TopicSpec("x", records_per_partition=30), TopicSpec("y", records_per_partition=20)])
    base = ["--data-dir", str(logs), "--output", str(tmp_path / "pq"), "--format", "parquet"]
    assert export.run(spark, export.parse_args(base))["records"] == 50
    spark.conf.set("spark.sql.sources.partitionOverwriteMode", "dynamic")
    try:
        result = export.run(spark, export.parse_args(base + ["--mode", "overwrite", "--option", "subscribe=x"]))
    finally:
        spark.conf.unset("spark.sql.sources.partitionOverwriteMode")
    assert [(t, n) for t, _, n, _, _ in result["summary"]] == [("x", 30)] and result["records"] == 30
    assert sorted(p.name for p in (tmp_path / "pq").iterdir() if p.is_dir()) == ["topic=x", "topic=y"]
    assert len(export.spark_write_ids(export._parquet_files(str(tmp_path / "pq")))) == 2  # Spark's real names


def test_appending_nothing_to_delta_when_the_store_kept_no_folder(tmp_path, monkeypatch):
    """On object storage a write of no rows can leave nothing at all under its run folder (partitioned, and
    ``_SUCCESS`` markers off: an object store has no empty folders). Appending nothing then commits nothing and
    is not an error for the folder being absent."""
    from deltalake import DeltaTable, write_deltalake

    from kafkaseg.spark import tables

    schema = export.export_schema(export._arrow_schema({}))
    output = str(tmp_path / "table")
    write_deltalake(output, schema.empty_table(), partition_by=["topic"])
    monkeypatch.setattr(tables, "write_parquet", lambda *a, **k: None)  # wrote no object
    seen = []
    assert tables.write_delta(None, output, "append", ["topic"], schema, before_commit=seen.append) == {
        "files": 0, "records": 0, "version": 0, "abandoned_removed": []}
    assert seen == [[]] and DeltaTable(output).version() == 0


@pytest.mark.parametrize("partition_by", [["topic", "partition"], ["partition"], ["date"], []])
def test_parquet_summary_from_files_partitioned_any_way(tmp_path, partition_by):
    """The summary of Parquet files whatever the partition columns (taken from the folders, out of the files):
    each file pinned by its folders and footer, or read when it spans partitions."""
    import pyarrow.dataset as ds

    table = pa.table({"topic": ["a", "a", "a", "b", "b", "007"],
                      "partition": pa.array([0, 0, 1, 0, 0, 3], pa.int32()),
                      "offset": [5, 6, 9, 0, 1, 40],
                      "date": pa.array([dt.date(2023, 11, 14)] * 3 + [dt.date(2023, 11, 15)] * 3)})
    output = str(tmp_path / "pq")
    ds.write_dataset(table, output, format="parquet", partitioning=partition_by or None,
                     partitioning_flavor="hive" if partition_by else None)
    summary = export.summarize_files(export._parquet_facts(output, export._parquet_files(output)))
    assert summary == [("007", 3, 1, 40, 40), ("a", 0, 2, 5, 6), ("a", 1, 1, 9, 9), ("b", 0, 2, 0, 1)]


def test_spark_write_ids_tell_one_write_from_several():
    """A plain Parquet append lists the files before and after its write: files another writer added meanwhile
    carry another job id in their names, and the job warns that its summary counts them."""
    one = "0f8fad5b-d9cb-469f-a165-70867728950e"
    other = "7c9e6679-7425-40de-944b-e07fc1f90ae7"
    paths = [f"/t/topic=a/part-00000-{one}.c000.snappy.parquet", f"s3://b/t/topic=b/part-00003-{one}-c000.snappy"
             ".parquet", "/t/other.parquet"]
    assert export.spark_write_ids(paths) == {one}
    assert export.spark_write_ids(paths + [f"/t/topic=a/part-00001-{other}-c000.snappy.parquet"]) == {one, other}


def test_footer_stats_keep_the_files_order_when_read_in_threads(tmp_path):
    """On object storage footers are read 16 at a time (a SubTreeFileSystem counts as non-local here); each
    file's stats stay with its path."""
    import pyarrow.fs as pafs
    import pyarrow.parquet as pq

    from kafkaseg.spark.tables import footer_stats

    paths = []
    for n in range(40):
        pq.write_table(pa.table({"offset": pa.array(range(n), pa.int64())}), tmp_path / f"f{n:02d}.parquet")
        paths.append(f"f{n:02d}.parquet")
    remote = pafs.SubTreeFileSystem(str(tmp_path), pafs.LocalFileSystem())
    stats = footer_stats(remote, paths[::-1])
    assert [s["numRecords"] for s in stats] == list(range(39, -1, -1))
    assert stats[0]["maxValues"]["offset"] == 38


# A quiet transactional partition: data 0..9 and the COMMIT marker at offset 10 (high watermark 11), then the same
# partition after retention deleted that segment: log start 11, data 11..20 and the COMMIT at 21
TXN = dict(transactional=True, transaction_producers=1, records_per_partition=10, records_per_batch=10,
           vary_batch_size=False)


def _txn_dirs(root):
    from kafkaseg.testing import TopicSpec, write_data_dir

    before = write_data_dir(root / "txn_before", [TopicSpec("txn", **TXN)]).partition("txn")
    after = write_data_dir(root / "txn_after", [TopicSpec("txn", log_start_offset=11, **TXN)]).partition("txn")
    assert [r.offset for r in before.data_records()] == list(range(10)) and before.high_watermark == 11
    assert [r.offset for r in after.data_records()] == list(range(11, 21)) and after.log_start_offset == 11
    return str(root / "txn_before"), str(root / "txn_after")


def test_incremental_resumes_from_the_recorded_end_past_a_transaction_marker(tmp_path):
    """The table's last row is offset 9, but the run read up to 11 (past the COMMIT marker at 10): going on from
    max + 1 = 10 after retention moved the log start to 11 was a false DataLossError. From the recorded end it
    reads [11, 22); a table with no recorded end (an older kafkaseg) still goes on from max + 1; records deleted
    that were never read (recorded end 10 < log start 11) are still a data loss."""
    from kafkaseg.errors import DataLossError

    before, after = _txn_dirs(tmp_path)
    key = ("txn", 0)
    first = export.plan_ranges([before], {})[0]
    assert first == {key: (0, 11)}
    ends = export.next_ends({}, first)
    assert ends == {key: 11}
    existing = {key: (0, 9)}  # what the first run wrote: the marker is no row
    ranges = export.plan_ranges([after], {})[0]
    assert export.plan_ranges([after], export.pinned_options({}, export.incremental_ranges(
        ranges, existing, ends)))[0] == {key: (11, 22)}
    with pytest.raises(DataLossError, match=r"offsets \[10, 11\) are gone"):
        export.plan_ranges([after], export.pinned_options({}, export.incremental_ranges(ranges, existing, {})))[0]
    with pytest.raises(DataLossError, match=r"offsets \[10, 11\) are gone"):  # the run read only up to 10
        export.plan_ranges([after], export.pinned_options({}, export.incremental_ranges(
            ranges, existing, {key: 10})))[0]
    # the higher of the two wins; a partition only recorded (its offsets held no row) resumes at its end
    assert export.incremental_ranges({key: (0, 30), ("u", 0): (0, 5)}, {key: (0, 14)}, {key: 11, ("u", 0): 3}) \
        == {key: (15, 30), ("u", 0): (3, 5)}
    # the record is cumulative, never lowered (an append of older offsets), and round-trips as Spark's JSON
    assert export.next_ends({key: 11, ("u", 0): 3}, {key: (0, 5), ("v", 1): (7, 2)}) == {
        key: 11, ("u", 0): 3, ("v", 1): 7}
    assert export.parse_ends(export.offsets_json({key: 11, ("u", 2): 3})) == {key: 11, ("u", 2): 3}
    for bad in ("[]", '{"t":{"0":"x"}}', '{"t":3}', "{"):
        with pytest.raises(ValueError):
            export.parse_ends(bad)


def _txn_table(output, fmt, offsets, ends=None, mode="error", topics=None, topic="txn"):
    """A table as the export writes it, holding ``<topic>-0`` (default ``txn-0``) rows at ``offsets`` (with
    ``ends`` recorded when given: ``None`` stands for a table written by an older kafkaseg)."""
    import pyarrow.dataset as ds

    schema = export.export_schema(export._arrow_schema({}))
    n = len(offsets)
    table = pa.table({"key": [b"k"] * n, "value": [b"v"] * n, "topic": [topic] * n, "partition": [0] * n,
                      "offset": offsets, "timestamp": [dt.datetime(2023, 11, 14, tzinfo=dt.timezone.utc)] * n,
                      "timestampType": [0] * n, "date": [dt.date(2023, 11, 14)] * n}).cast(schema)
    if fmt == "delta":
        from deltalake import write_deltalake

        write_deltalake(output, table, partition_by=["topic"], mode=mode,
                        commit_properties=None if ends is None else export.ends_commit_properties(ends, topics))
    else:
        ds.write_dataset(table, output, format="parquet", partitioning=["topic"], partitioning_flavor="hive")
        if ends is not None:
            export.write_ends_file(output, ends, topics)


@pytest.mark.parametrize("fmt", ["delta", "parquet"])
def test_prepare_reads_the_recorded_ends_of_the_table(tmp_path, fmt):
    """prepare() (no Spark) on the repro: the table holds offsets 0..9 and recorded end 11; retention moved the log
    start to 11. Incremental reads [11, 22) and will record 22; without the record (an older table) it is the
    DataLossError it always was."""
    from kafkaseg.errors import DataLossError

    before, after = _txn_dirs(tmp_path)
    output = str(tmp_path / "table")
    _txn_table(output, fmt, list(range(10)), {("txn", 0): 11})
    args = export.parse_args(["--data-dir", after, "--output", output, "--format", fmt, "--mode", "incremental"])
    prepared = export.prepare(args)
    assert prepared["ranges"] == {("txn", 0): (11, 22)} and prepared["ends"] == {("txn", 0): 22}
    assert export.recorded_ends(output, fmt) == {("txn", 0): 11}
    # append: the offsets the table holds are still what it refuses; it records its ends too
    append = export.prepare(export.parse_args(["--data-dir", after, "--output", output, "--format", fmt,
                                               "--mode", "append"]))
    assert append["ends"] == {("txn", 0): 22}
    if fmt == "parquet":  # a folder whose only run read markers: no data file, but its recorded end stands
        markers_only = tmp_path / "markers-only"
        markers_only.mkdir()
        export.write_ends_file(str(markers_only), {("txn", 0): 11})
        prepared = export.prepare(export.parse_args(["--data-dir", after, "--output", str(markers_only),
                                                     "--format", fmt, "--mode", "incremental"]))
        assert prepared["ranges"] == {("txn", 0): (11, 22)}
    old = str(tmp_path / "old")
    _txn_table(old, fmt, list(range(10)))
    assert export.recorded_ends(old, fmt) == {}
    with pytest.raises(DataLossError, match=r"offsets \[10, 11\) are gone"):
        export.prepare(export.parse_args(["--data-dir", after, "--output", old, "--format", fmt,
                                          "--mode", "incremental"]))


@pytest.mark.parametrize("fmt", ["delta", "parquet"])
def test_incremental_export_refuses_a_log_truncated_and_rewritten_below_the_tables_end(tmp_path, fmt, capsys):
    """KIP-320, as streams and compaction check it: the first run records the leader epoch of the last batch it
    read (epoch 1, ending at 20). An unclean leader election truncated the log at 15 and wrote on under epoch 2
    to 25: resuming at 20 would keep the replaced records 15..19 in the table and never export their
    replacements. A clean election (epoch 1 up to 20, then 2) continues and records the new epoch."""
    from kafkaseg.errors import DataLossError
    from tests.compaction_data import write_epoch_log

    def records(first, last, prefix):
        return [(o, b"%s%d" % (prefix, o), b"v") for o in range(first, last)]

    common = [(0, records(0, 10, b"a")), (1, records(10, 15, b"b"))]
    write_epoch_log(tmp_path / "before", "t", common + [(1, records(15, 20, b"b"))])
    write_epoch_log(tmp_path / "diverged", "t", common + [(2, records(15, 25, b"c"))])
    write_epoch_log(tmp_path / "clean", "t", common + [(1, records(15, 20, b"b")), (2, records(20, 25, b"c"))])
    output = str(tmp_path / "table")

    def prepare(data, *options):
        return export.prepare(export.parse_args(["--data-dir", str(tmp_path / data), "--output", output, "--format",
                                                 fmt, "--mode", "incremental", *options]))

    first = prepare("before")
    assert first["ranges"] == {("t", 0): (0, 20)} and first["topics"]["t"]["epochs"] == {"0": [1, 20]}
    _txn_table(output, fmt, list(range(20)), first["ends"], topics=first["topics"], topic="t")
    with pytest.raises(DataLossError, match=r"t-0: the log diverged from the table at offset 15 \(leader epoch 1"):
        prepare("diverged")
    lenient = prepare("diverged", "--option", "failOnDataLoss=false")  # warned, and resumes as before
    assert lenient["ranges"] == {("t", 0): (20, 25)} and "diverged from the table at offset 15" in capsys.readouterr().out
    clean = prepare("clean")
    assert clean["ranges"] == {("t", 0): (20, 25)} and clean["topics"]["t"]["epochs"] == {"0": [2, 25]}
    assert clean["topics"]["t"]["topicId"] == first["topics"]["t"]["topicId"]  # ids kept beside the marks
    # an append of older offsets (a backfill) keeps the mark further on; none found keeps the one before
    from types import SimpleNamespace

    recorded = {"t": {"topicId": "x", "epochs": {"0": [1, 20]}}}
    assert export.next_topics(recorded, SimpleNamespace(partitions=[]), {("t", 0): (0, 10)})["t"]["epochs"] == {
        "0": [1, 20]}
    assert export.next_topics(recorded, SimpleNamespace(partitions=[]), {("t", 0): None})["t"]["epochs"] == {
        "0": [1, 20]}
    assert export.next_topics(recorded, SimpleNamespace(partitions=[]), {("t", 0): (2, 30)})["t"]["epochs"] == {
        "0": [2, 30]}
    # ...unless this run reported the divergence there and went on (failOnDataLoss=false): the log as it is now
    # replaces the mark, or every later run would raise the divergence again (review round 4)
    assert export.next_topics(recorded, SimpleNamespace(partitions=[]), {("t", 0): (2, 18)},
                              diverged={("t", 0)})["t"]["epochs"] == {"0": [2, 18]}
    # and an append checks the log too: after a divergence it would stamp a new mark and hide it
    with pytest.raises(DataLossError, match="diverged from the table at offset 15"):
        export.prepare(export.parse_args(["--data-dir", str(tmp_path / "diverged"), "--output", output, "--format",
                                          fmt, "--mode", "append", "--option", 'endingOffsets={"t":{"0":10}}']))


def test_a_divergence_a_lenient_backfill_went_past_is_marked_at_the_tables_end(tmp_path):
    """A lenient (failOnDataLoss=false) append of older offsets reports the divergence at 15 and goes on: the mark
    it records for the log as it is now is taken at the table's end (20), not at the backfill's end (10), so a
    second unclean election truncating at 12 (rows 12..14 the table holds) is still caught (review round 5)."""
    from kafkaseg.errors import DataLossError
    from tests.compaction_data import write_epoch_log

    def records(first, last, prefix):
        return [(o, b"%s%d" % (prefix, o), b"v") for o in range(first, last)]

    write_epoch_log(tmp_path / "before", "t", [(0, records(0, 10, b"a")), (1, records(10, 20, b"b"))])
    write_epoch_log(tmp_path / "diverged", "t", [(0, records(0, 10, b"a")), (1, records(10, 15, b"b")),
                                                 (2, records(15, 30, b"c"))])
    write_epoch_log(tmp_path / "again", "t", [(0, records(0, 10, b"a")), (1, records(10, 12, b"b")),
                                              (3, records(12, 40, b"d"))])
    output = str(tmp_path / "table")

    def prepare(data, mode, *options):
        return export.prepare(export.parse_args(["--data-dir", str(tmp_path / data), "--output", output, "--format",
                                                 "parquet", "--mode", mode, *options]))

    first = prepare("before", "incremental", "--option", 'startingOffsets={"t":{"0":10}}')
    assert first["ranges"] == {("t", 0): (10, 20)} and first["topics"]["t"]["epochs"] == {"0": [1, 20]}
    _txn_table(output, "parquet", list(range(10, 20)), first["ends"], topics=first["topics"], topic="t")
    backfill = prepare("diverged", "append", "--option", "failOnDataLoss=false", "--option",
                       'startingOffsets={"t":{"0":0}}', "--option", 'endingOffsets={"t":{"0":10}}')
    assert backfill["ranges"] == {("t", 0): (0, 10)} and backfill["topics"]["t"]["epochs"] == {"0": [2, 20]}
    export.write_ends_file(output, backfill["ends"], backfill["topics"])
    assert prepare("diverged", "incremental")["ranges"] == {("t", 0): (20, 30)}  # gone past: no longer raised
    with pytest.raises(DataLossError, match="diverged from the table at offset 12"):
        prepare("again", "incremental")


def test_recorded_ends_follow_the_delta_tables_history(tmp_path):
    """The newest recorded ends count, past commits that kept the rows (OPTIMIZE) or removed some (DELETE); a
    RESTORE to version v goes back to v's; another writer's overwrite that recorded none leaves none (max + 1)."""
    from deltalake import DeltaTable

    output = str(tmp_path / "table")
    key = ("txn", 0)
    _txn_table(output, "delta", list(range(10)), {key: 11})  # v0
    _txn_table(output, "delta", [11, 12], {key: 14}, "append")  # v1
    DeltaTable(output).optimize.compact()  # v2
    DeltaTable(output).delete("offset = 12")  # v3
    assert export.recorded_ends(output, "delta") == {key: 14}
    DeltaTable(output).restore(0)  # v4
    assert export.recorded_ends(output, "delta") == {key: 11}
    _txn_table(output, "delta", [30], {key: 31}, "append")  # v5
    from deltalake import write_deltalake

    write_deltalake(output, delta_dataset(output).to_table(), mode="overwrite")  # another writer, v6
    assert export.recorded_ends(output, "delta") == {}
    DeltaTable(output).restore(5)
    assert export.recorded_ends(output, "delta") == {key: 31}


def _recreated(root, before: str) -> str:
    """The txn topic of ``before`` deleted and created again: the same files' layout and cluster, a new topic id
    (its offsets start at 0 again)."""
    from kafkaseg.testing import TopicSpec, write_data_dir
    from kafkaseg.testing.partition import write_partition_metadata

    again = root / "txn_recreated"
    write_data_dir(again, [TopicSpec("txn", **{**TXN, "records_per_partition": 30})])
    write_partition_metadata(again / "txn-0" / "partition.metadata", "Vq8cD0o1RZ6LJvcUX2C4SA")
    return str(again)


@pytest.mark.parametrize("fmt", ["delta", "parquet"])
def test_a_recreated_topic_is_refused_not_resumed_at_the_old_topics_end(tmp_path, fmt):
    """The table holds txn-0 0..9 (recorded end 11) of one topic; the topic is deleted and recreated with 30
    records. Incremental resumed at 11, so the new topic's 0..10 were never exported and two topics shared one
    table (and once the new topic passed the old end the run even succeeded); append called it a duplicate. Both
    are now refused for the new topic id; overwrite records the new id, and a table recorded without ids (an
    older kafkaseg) goes on as before."""
    before, _ = _txn_dirs(tmp_path)
    again = _recreated(tmp_path, before)
    output = str(tmp_path / "table")
    first = export.prepare(export.parse_args(["--data-dir", before, "--output", output, "--format", fmt]))
    topic_id = first["topics"]["txn"]["topicId"]
    assert topic_id != "Vq8cD0o1RZ6LJvcUX2C4SA" and first["topics"]["txn"]["clusterId"]
    _txn_table(output, fmt, list(range(10)), first["ends"], topics=first["topics"])
    assert export.recorded_state(output, fmt) == ({("txn", 0): 11}, first["topics"])
    for mode in ("incremental", "append"):
        with pytest.raises(export.UsageError, match=f"txn-0 has topic id Vq8cD0o1RZ6LJvcUX2C4SA, the table's rows "
                                                    f"{topic_id}"):
            export.prepare(export.parse_args(["--data-dir", again, "--output", output, "--format", fmt,
                                              "--mode", mode]))
    # the same topic still resumes
    assert export.prepare(export.parse_args(["--data-dir", before, "--output", output, "--format", fmt,
                                             "--mode", "incremental"]))["ranges"] == {("txn", 0): (11, 11)}
    replaced = export.prepare(export.parse_args(["--data-dir", again, "--output", output, "--format", fmt,
                                                 "--mode", "overwrite"]))
    assert replaced["ranges"] == {("txn", 0): (0, 32)}
    assert replaced["topics"]["txn"]["topicId"] == "Vq8cD0o1RZ6LJvcUX2C4SA"
    old = str(tmp_path / "old")
    _txn_table(old, fmt, list(range(10)), {("txn", 0): 11})
    assert export.prepare(export.parse_args(["--data-dir", again, "--output", old, "--format", fmt, "--mode",
                                             "incremental"]))["ranges"] == {("txn", 0): (11, 32)}


def _write_with_pyarrow(df, path, mode, partition_by):
    """tables.write_parquet without Spark: ``df`` is a pyarrow Table."""
    import pyarrow.dataset as ds

    ds.write_dataset(df, path, format="parquet", partitioning=list(partition_by) or None,
                     partitioning_flavor="hive" if partition_by else None, existing_data_behavior="overwrite_or_ignore",
                     basename_template=f"part-{len(list(__import__('pathlib').Path(path).rglob('*.parquet')))}-{{i}}"
                                       ".parquet")


def _rows(offsets):
    schema = export.export_schema(export._arrow_schema({}))
    n = len(offsets)
    return pa.table({"key": [b"k"] * n, "value": [b"v"] * n, "topic": ["txn"] * n, "partition": [0] * n,
                     "offset": offsets, "timestamp": [dt.datetime(2023, 11, 14, tzinfo=dt.timezone.utc)] * n,
                     "timestampType": [0] * n, "date": [dt.date(2023, 11, 14)] * n}).cast(schema)


def test_overlapping_delta_exports_commit_once(tmp_path, monkeypatch):
    """Two incremental runs prepared on one table (a cron run overlapping the previous one) both appended the same
    new offsets. The second now fails with nothing committed. Other writers' commits in between (OPTIMIZE, a
    DELETE, which a first version of this check refused) do not fail a run, and a run prepared after the first
    commit goes on. Two first runs: the one finding the other's table, before or after its own write, fails."""
    from deltalake import DeltaTable

    from kafkaseg.errors import ConcurrentWriteError
    from kafkaseg.spark import tables

    monkeypatch.setattr(tables, "write_parquet", _write_with_pyarrow)
    _, after = _txn_dirs(tmp_path)
    output = str(tmp_path / "table")
    _txn_table(output, "delta", list(range(5)))
    _txn_table(output, "delta", list(range(5, 10)), {("txn", 0): 11}, "append")
    args = export.parse_args(["--data-dir", after, "--output", output, "--mode", "incremental"])
    first, second = export.prepare(args), export.prepare(args)
    assert first["ranges"] == second["ranges"] == {("txn", 0): (11, 22)}
    DeltaTable(output).optimize.compact()  # v2: other writers' commits
    DeltaTable(output).delete("\"offset\" < 2")  # v3 (a retention or GDPR delete)
    assert DeltaTable(output).version() == 3
    export.load(_rows(list(range(11, 21))), args, export._arrow_schema({}), None, first)
    assert DeltaTable(output).version() == 4
    with pytest.raises(ConcurrentWriteError, match="another run committed to .* since this one read it.*nothing of "
                                                   "this run was committed"):
        export.load(_rows(list(range(11, 21))), args, export._arrow_schema({}), None, second)
    assert DeltaTable(output).version() == 4
    assert sorted(delta_dataset(output).to_table().column("offset").to_pylist()) == [*range(2, 10),
                                                                                         *range(11, 21)]
    third = export.prepare(args)
    assert third["ranges"] == {("txn", 0): (22, 22)}
    export.load(_rows([]), args, export._arrow_schema({}), None, third)  # records its ends: commits
    assert DeltaTable(output).version() == 5
    # two first runs: the table the first creates is not the second's to append to
    for race in ("before", "during"):
        new = str(tmp_path / f"new-{race}")
        args = export.parse_args(["--data-dir", after, "--output", new, "--mode", "incremental"])
        first, second = export.prepare(args), export.prepare(args)
        if race == "before":
            export.load(_rows(list(range(11, 21))), args, export._arrow_schema({}), None, first)
        else:  # the first commits while the second's executors write
            def writing(df, path, mode, partition_by):
                monkeypatch.setattr(tables, "write_parquet", _write_with_pyarrow)
                export.load(_rows(list(range(11, 21))), args, export._arrow_schema({}), None, first)
                _write_with_pyarrow(df, path, mode, partition_by)
            monkeypatch.setattr(tables, "write_parquet", writing)
        with pytest.raises(ConcurrentWriteError, match="another run created"):
            export.load(_rows(list(range(11, 21))), args, export._arrow_schema({}), None, second)
        assert DeltaTable(new).version() == 0 and delta_dataset(new).to_table().num_rows == 10
        assert DeltaTable(new).transaction_version("kafkaseg.export") == first["read_at_ms"]  # a first run's too


def test_a_delta_run_that_failed_before_its_commit_leaves_no_parquet_table(tmp_path, monkeypatch):
    """A first Delta run that wrote its files and failed before the commit (a failed check, a killed driver) left
    a kafkaseg-<time>-<id>/ folder of Parquet files: the next --format delta run was refused as "a Parquet table",
    and a --format parquet run counted the uncommitted files as exported rows."""

    from kafkaseg.spark import tables

    monkeypatch.setattr(tables, "write_parquet", _write_with_pyarrow)
    before, _ = _txn_dirs(tmp_path)
    output = str(tmp_path / "table")
    args = export.parse_args(["--data-dir", before, "--output", output])

    def failing(summary):
        raise SystemExit("check failed")
    with pytest.raises(SystemExit):
        export.load(_rows(list(range(10))), args, export._arrow_schema({}), failing, export.prepare(args))
    assert [p.name for p in (tmp_path / "table").iterdir()][0].startswith("kafkaseg-")
    assert export._parquet_files(output) == []
    export.load(_rows(list(range(10))), args, export._arrow_schema({}), None, export.prepare(args))
    assert delta_dataset(output).to_table().num_rows == 10


def test_overlapping_parquet_exports_are_warned_about(tmp_path, monkeypatch, capsys):
    """A Parquet folder has no commit log to refuse the second of two overlapping runs: it says so, and the ends
    it records are the higher of both runs'."""
    from kafkaseg.spark import tables

    monkeypatch.setattr(tables, "write_parquet", _write_with_pyarrow)
    _, after = _txn_dirs(tmp_path)
    output = str(tmp_path / "table")
    _txn_table(output, "parquet", list(range(10)), {("txn", 0): 11})
    args = export.parse_args(["--data-dir", after, "--output", output, "--format", "parquet", "--mode",
                              "incremental", "--partition-by", "topic"])
    first, second = export.prepare(args), export.prepare(args)
    export.load(_rows(list(range(11, 21))), args, export._arrow_schema({}), None, first)
    assert "another export run" not in capsys.readouterr().out
    second["ends"] = {("txn", 0): 15}  # as if it had read less
    export.load(_rows(list(range(11, 21))), args, export._arrow_schema({}), None, second)
    assert "warning: another export run recorded its ends" in capsys.readouterr().out
    assert export.recorded_ends(output, "parquet") == {("txn", 0): 22}


@pytest.mark.parametrize("fmt", ["delta", "parquet"])
def test_data_loss_stepped_over_with_fail_on_data_loss_false_is_printed(tmp_path, fmt, capsys):
    """The table holds 0..9 and recorded no end (an older kafkaseg); retention moved the log start to 11. With
    failOnDataLoss=false the run starts at 11: it said nothing about offset 10, which it never exported."""
    _, after = _txn_dirs(tmp_path)
    output = str(tmp_path / "table")
    _txn_table(output, fmt, list(range(10)))
    prepared = export.prepare(export.parse_args(["--data-dir", after, "--output", output, "--format", fmt,
                                                 "--mode", "incremental", "--option", "failOnDataLoss=false"]))
    assert prepared["ranges"] == {("txn", 0): (11, 22)}
    assert len(prepared["data_loss"]) == 1 and "offsets [10, 11) are gone" in prepared["data_loss"][0]
    assert "warning: data loss (failOnDataLoss=false): txn-0: starting offset 10" in capsys.readouterr().out


def test_a_table_of_the_other_format_is_refused(tmp_path):
    """--format parquet wrote plain Parquet files into a Delta table's folder, outside its log (Delta readers never
    saw the rows; Parquet readers saw Delta's files too); --format delta would put a log over a Parquet table."""
    _, after = _txn_dirs(tmp_path)
    delta, parquet = str(tmp_path / "delta"), str(tmp_path / "parquet")
    _txn_table(delta, "delta", list(range(10)), {("txn", 0): 11})
    _txn_table(parquet, "parquet", list(range(10)), {("txn", 0): 11})
    for output, fmt, says in ((delta, "parquet", "is a Delta table"), (parquet, "delta", "a Parquet table")):
        for mode in ("incremental", "append", "overwrite", "error"):
            with pytest.raises(export.UsageError, match=f"--format {fmt}: .*{says}"):
                export.prepare(export.parse_args(["--data-dir", after, "--output", output, "--format", fmt,
                                                  "--mode", mode]))


@pytest.mark.spark
def test_incremental_export_of_a_transactional_partition_after_retention(spark, tmp_path):
    """The reported repro, end to end: export txn_before (offsets 0..9, the COMMIT marker at 10), then
    --mode incremental from txn_after (log start 11) exports 11..20 instead of failing with a DataLossError.
    Delta records the ends in its commits; Parquet in its ENDS_FILE; a run that read only a marker records too."""
    from deltalake import DeltaTable

    before, after = _txn_dirs(tmp_path)
    for fmt in ("delta", "parquet"):
        output = str(tmp_path / f"txn_table_{fmt}")
        base = ["--output", output, "--format", fmt]
        assert export.run(spark, export.parse_args(["--data-dir", before] + base))["records"] == 10
        assert export.recorded_ends(output, fmt) == {("txn", 0): 11}
        result = export.run(spark, export.parse_args(["--data-dir", after, "--mode", "incremental"] + base))
        assert result["records"] == 10 and result["summary"] == [("txn", 0, 10, 11, 20)]
        assert export.recorded_ends(output, fmt) == {("txn", 0): 22}
        assert sorted(export.existing_offsets(output, fmt).items()) == [(("txn", 0), (0, 20))]
    # the marker alone read by an incremental run: no row, but the end it read up to is committed
    output = str(tmp_path / "marker_only")
    from kafkaseg.testing.partition import write_offset_checkpoint

    write_offset_checkpoint(tmp_path / "txn_after" / "replication-offset-checkpoint", {("txn", 0): 21})
    export.run(spark, export.parse_args(["--data-dir", after, "--output", output]))
    write_offset_checkpoint(tmp_path / "txn_after" / "replication-offset-checkpoint", {("txn", 0): 22})
    result = export.run(spark, export.parse_args(["--data-dir", after, "--output", output, "--mode",
                                                  "incremental"]))
    assert result["records"] == 0 and result["skipped"]["missing_offsets"] == []
    assert export.recorded_ends(output, "delta") == {("txn", 0): 22} and DeltaTable(output).version() == 1


def test_a_job_run_with_plain_python_gives_spark_workers_this_interpreter(monkeypatch):
    """Without spark-submit (no PYSPARK_GATEWAY_PORT) Spark's workers would start the `python3` on PATH, which
    may lack kafkaseg and pyarrow: the job sets PYSPARK_PYTHON to its own interpreter unless it is set."""
    import sys

    import pyspark.sql

    seen = {}

    class Builder:
        def __getattr__(self, name):
            return lambda *args, **kwargs: self

        def getOrCreate(self):
            import os

            seen["python"] = os.environ.get("PYSPARK_PYTHON")
            raise RuntimeError("no session in this test")

    monkeypatch.setattr(pyspark.sql.SparkSession, "builder", Builder())
    monkeypatch.delenv("PYSPARK_GATEWAY_PORT", raising=False)
    monkeypatch.delenv("PYSPARK_PYTHON", raising=False)
    with pytest.raises(RuntimeError, match="no session"):
        export.run_in_session("t", lambda spark: None)
    assert seen["python"] == sys.executable
    monkeypatch.setenv("PYSPARK_PYTHON", "/opt/python")  # set by the user: kept
    with pytest.raises(RuntimeError):
        export.run_in_session("t", lambda spark: None)
    assert seen["python"] == "/opt/python"


def test_kafkaseg_spark_is_reachable_after_a_plain_import():
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", "import kafkaseg; print(kafkaseg.spark.last_plan_report.__name__)"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "last_plan_report", done.stderr
    # without PySpark (optional): an AttributeError, so hasattr() says False rather than raising
    done = subprocess.run([sys.executable, "-c", "import sys; sys.modules['pyspark'] = None; import kafkaseg; "
                           "print(hasattr(kafkaseg, 'spark'), getattr(kafkaseg, 'spark', None))"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "False None", done.stderr


def test_delta_appends_refuse_columns_the_table_would_drop(tmp_path, monkeypatch):
    """delta-rs commits an append under the table's schema: a column only in the rows would be silently left out
    by every reader, and one of another type misread. Such an append is refused before anything is written,
    unless the job asks for new columns to be added (then earlier rows read them as null)."""
    import pyarrow.parquet as pq
    from deltalake import DeltaTable, write_deltalake

    from kafkaseg.errors import TableSchemaError
    from kafkaseg.spark import tables

    output = str(tmp_path / "table")
    write_deltalake(output, pa.table({"a": pa.array([1, 2], pa.int64())}))
    written = []

    def fake_parquet(rows):
        def write(_df, folder, _mode, _partition_by):
            written.append(folder)
            os.makedirs(folder)
            pq.write_table(rows, os.path.join(folder, "part-0.parquet"))
        return write

    wider = pa.table({"a": pa.array([3], pa.int64()), "b": pa.array(["x"])})
    monkeypatch.setattr(tables, "write_parquet", fake_parquet(wider))
    with pytest.raises(TableSchemaError, match="column.s. the table lacks: b"):
        tables.write_delta(None, output, "append", [], wider.schema)
    other_type = pa.schema([("a", pa.timestamp("us", "UTC"))])
    with pytest.raises(TableSchemaError, match=r"a \(long in the table, timestamp here\)"):
        tables.write_delta(None, output, "append", [], other_type, add_columns=True)
    assert written == [] and DeltaTable(output).version() == 0  # nothing written, nothing committed
    tables.write_delta(None, output, "append", [], wider.schema, add_columns=True)
    assert delta_dataset(output).to_table().sort_by("a").to_pylist() == [
        {"a": 1, "b": None}, {"a": 2, "b": None}, {"a": 3, "b": "x"}]
    # columns only in the table are Delta's ordinary append: null for the rows appended
    narrow = pa.table({"a": pa.array([4], pa.int64())})
    monkeypatch.setattr(tables, "write_parquet", fake_parquet(narrow))
    tables.write_delta(None, output, "append", [], narrow.schema)
    assert delta_dataset(output).to_table().sort_by("a").to_pylist()[-1] == {"a": 4, "b": None}


def test_file_stats_leave_out_decimals_stored_as_integers():
    """Spark stores a decimal of up to 18 digits as INT32/INT64: its footer bounds are Decimals, which have no
    JSON number form keeping their precision. They are left out of the Delta stats (which the protocol allows),
    instead of failing the commit (found by review: a lookup request with a decimal column)."""
    import decimal
    import io
    import json

    import pyarrow.parquet as pq

    from kafkaseg.spark.tables import file_stats

    table = pa.table({"d": pa.array([decimal.Decimal("1.50"), decimal.Decimal("2.25")], pa.decimal128(10, 2)),
                      "offset": pa.array([7, 9], pa.int64())})
    buffer = io.BytesIO()
    pq.write_table(table, buffer, store_decimal_as_integer=True)
    metadata = pq.ParquetFile(io.BytesIO(buffer.getvalue())).metadata
    assert metadata.row_group(0).column(0).physical_type in ("INT32", "INT64")
    stats = json.loads(json.dumps(file_stats(metadata)))
    assert stats == {"numRecords": 2, "minValues": {"offset": 7}, "maxValues": {"offset": 9},
                     "nullCount": {"offset": 0}}


def test_file_stats_leave_out_timestamps_without_a_time_zone(monkeypatch):
    """A TIMESTAMP_NTZ column's footer bounds are naive: converting them to Delta's UTC form took the machine's
    time zone (found by review: a stored 05:30 recorded as 10:30Z under America/New_York, so readers skipping
    files on the stats could skip the right one). Such columns go without stats; UTC ones keep theirs."""
    import io
    import time

    import pyarrow.parquet as pq

    from kafkaseg.spark.tables import file_stats

    monkeypatch.setenv("TZ", "America/New_York")
    time.tzset()
    try:
        micros = 1_700_000_000_000_000
        table = pa.table({"ntz": pa.array([micros], pa.timestamp("us")),
                          "utc": pa.array([micros], pa.timestamp("us", "UTC"))})
        buffer = io.BytesIO()
        pq.write_table(table, buffer)
        stats = file_stats(pq.ParquetFile(io.BytesIO(buffer.getvalue())).metadata)
    finally:
        monkeypatch.delenv("TZ")
        time.tzset()
    assert stats["minValues"] == {"utc": "2023-11-14T22:13:20.000Z"} and "ntz" not in stats["maxValues"]


def test_a_job_reports_its_own_scan_not_the_newest_one_on_the_host(tmp_path, monkeypatch):
    """Another application's scan planned on the same host after the job's (a second scheduled job, a test run)
    must not stand in for the job's own in its report of what the read skipped."""
    import json

    from kafkaseg.options import ReadOptions
    from kafkaseg.planning import PlanReport
    from kafkaseg.spark import reports

    monkeypatch.setenv(reports.REPORT_DIR_ENV, str(tmp_path / "reports"))
    since = reports.time.time()
    ours = {"filterPushdown": "true", "startingOffsets": '{"t":{"0":0}}', "endingOffsets": '{"t":{"0":10}}'}
    paths = [str(tmp_path / "logs")]

    def plan(options, paths, scan_id):
        parsed = ReadOptions.from_options({**options, "paths": json.dumps(paths)})
        reports.write_plan(scan_id, PlanReport(options=json.loads(json.dumps(parsed.as_dict(), default=str))), [],
                           {})

    plan(ours, paths, "ours")
    plan({**ours, "endingOffsets": '{"t":{"0":11}}'}, paths, "same-dirs-other-range")
    plan(ours, ["/elsewhere/logs"], "other-dirs")
    assert reports.last_plan_report().scan_id == "other-dirs"
    assert reports.plan_report_for(ours, paths, since).scan_id == "ours"
    assert reports.plan_report_for(ours, paths, reports.time.time() + 60) is None


def test_export_onto_a_compacted_table_says_what_the_table_is(tmp_path):
    """A compacted table (jobs/compact.py's) given as an export's --output: not "other columns, use --mode overwrite",
    which would replace the table's state, but what the table is (no Spark)."""
    from kafkaseg.compacted_table import compact_arrow
    from kafkaseg.testing import TopicSpec, write_data_dir

    write_data_dir(tmp_path / "d", [TopicSpec("state", records_per_partition=20, key_cardinality=5)], seed=1)
    compact_arrow([str(tmp_path / "d")], str(tmp_path / "state"))
    for mode in ("incremental", "append"):
        with pytest.raises(export.UsageError) as refused:
            export.prepare(export.parse_args(["--data-dir", str(tmp_path / "d"), "--output", str(tmp_path / "state"),
                                              "--mode", mode]))
        message = str(refused.value)
        assert "compacted table written by jobs/compact.py" in message and "only in the table" not in message
        assert "--mode overwrite would replace" in message


def test_a_killed_runs_spark_temporary_folder_is_removed_once_its_run_is_certainly_dead(tmp_path, monkeypatch):
    """A Delta export killed during Spark's write leaves ``kafkaseg-<time>-<id>/_temporary``, which VACUUM skips (a
    ``_`` folder): the next run that commits removes it once the run started, and last wrote there, longer ago than
    the table's deletedFileRetentionDuration (Delta's bound for writers still running), never a younger one's."""
    from deltalake import write_deltalake

    from kafkaseg.spark import tables

    week, now = 7 * 86400, 1_800_000_000.0
    output = tmp_path / "table"
    write_deltalake(str(output), pa.table({"offset": pa.array([], pa.int64())}))

    def run(name: str, started: float, written: float, temporary: bool = True, data: bool = False):
        folder = output / (name.replace("T", dt.datetime.fromtimestamp(started, dt.timezone.utc).strftime(
            "%Y%m%dT%H%M%S"), 1) if "T" in name else name)
        attempt = folder / "_temporary" / "0" / "_temporary" / "attempt_1"
        attempt.mkdir(parents=True) if temporary else folder.mkdir()
        for path in [attempt / "part-00000.parquet"] if temporary else []:
            path.write_bytes(b"x")
        if data:
            (folder / "part-00001.parquet").write_bytes(b"x")
        for path in [folder, *folder.rglob("*")]:
            os.utime(path, (written, written))
        return folder.name

    dead = run("kafkaseg-TZ-0000aaaa", now - week - 3600, now - week - 3600)
    young = run("kafkaseg-TZ-0000bbbb", now - week + 3600, now - week + 3600)  # may still be running
    writing = run("kafkaseg-TZ-0000cccc", now - 2 * week, now - 60)  # started long ago, still writing
    committed = run("kafkaseg-TZ-0000dddd", now - 2 * week, now - 2 * week, temporary=False, data=True)  # VACUUM's
    empty = run("kafkaseg-TZ-0000eeee", now - 2 * week, now - 2 * week, temporary=False)
    other = run("_kafkaseg_staging", now - 2 * week, now - 2 * week)  # not a run folder
    assert sorted(tables.remove_abandoned_writes(str(output), now, week)) == sorted([dead, empty])
    left = {p.name for p in output.iterdir()}
    assert {young, writing, committed, other} <= left and not {dead, empty} & left
    assert (output / young / "_temporary").is_dir() and (output / committed / "part-00001.parquet").exists()

    assert tables.abandoned_after_s(None) == week
    assert tables.abandoned_after_s({"delta.deletedFileRetentionDuration": "interval 9 days"}) == 9 * 86400
    assert tables.abandoned_after_s({"delta.deletedFileRetentionDuration": "interval 36 hours"}) == week  # at least
    assert tables.abandoned_after_s({"delta.deletedFileRetentionDuration": "200 hours"}) == 200 * 3600
    assert tables.run_folder_name(now).startswith("kafkaseg-20270115T080000Z-")

    # the next run that commits cleans up (here one appending nothing, which commits nothing)
    dead = run("kafkaseg-TZ-0000ffff", time.time() - week - 3600, time.time() - week - 3600)
    monkeypatch.setattr(tables, "write_parquet", lambda *a, **k: None)
    schema = pa.schema([pa.field("offset", pa.int64())])
    assert tables.write_delta(None, str(output), "append", [], schema)["abandoned_removed"] == [dead]


def test_a_job_session_reads_kafkaseg_without_registering_it_again(tmp_path):
    """Spark registers ``kafkaseg`` itself (the top-level pyspark_kafkaseg module's DefaultSource): a job that
    registered it again logged ``WARN DataSourceManager: The data source kafkaseg replaced a statically registered
    data source`` on every run. In a fresh session (its own JVM, whose log is this process's stderr) the job reads
    every record with no such line."""
    import subprocess
    import sys
    from pathlib import Path

    from kafkaseg.testing import TopicSpec, write_data_dir

    root = Path(__file__).resolve().parents[1]
    manifest = write_data_dir(tmp_path / "data", [TopicSpec("t", partitions=2, records_per_partition=30)], seed=1)
    script = ("import sys; from jobs.export import run_in_session; "
              "run_in_session('t', lambda spark: print('rows', spark.read.format('kafkaseg').load(sys.argv[1]).count()))")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH")])),
           "KAFKASEG_SPARK_REPORT_DIR": str(tmp_path / "reports")}
    env.pop("PYSPARK_GATEWAY_PORT", None)
    done = subprocess.run([sys.executable, "-c", script, str(manifest.path)], capture_output=True, text=True,
                          cwd=root, env=env, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["rows", str(manifest.record_count)], done.stdout
    assert "replaced a statically registered data source" not in done.stderr, done.stderr
    assert "DataSourceManager" not in done.stderr, done.stderr


@pytest.mark.parametrize("known, registered", [(True, 0), (False, 1), (None, 1)])
def test_register_registers_only_a_source_the_session_does_not_know(known, registered):
    """Without a JVM: register() asks the session's DataSourceManager; a session that cannot be asked (Spark
    Connect: no ``_jsparkSession``) gets the source registered, as before."""
    from types import SimpleNamespace

    from kafkaseg.spark import KafkaSegDataSource, register

    calls, asked = [], []

    def exists(name):
        asked.append(name)
        return known

    manager = SimpleNamespace(dataSourceExists=exists)
    spark = SimpleNamespace(dataSource=SimpleNamespace(register=calls.append))
    if known is not None:
        spark._jsparkSession = SimpleNamespace(sessionState=lambda: SimpleNamespace(dataSourceManager=lambda: manager))
    register(spark)
    assert calls == [KafkaSegDataSource] * registered
    assert asked == ([] if known is None else ["kafkaseg"])


@pytest.mark.parametrize("with_log_dir", [True, False], ids=["with-log-dir", "copies-alone"])
def test_export_takes_a_tiered_store_emptied_whose_metadata_lists_live_copies_as_a_read_does(tmp_path,
                                                                                              with_log_dir):
    """A LocalTieredStorage partition folder left empty (its copies all deleted), __remote_log_metadata among the
    --data-dirs listing them live: a read loses the copies, named (DataLossError), with replicas=all too. The
    export's own discoveries now read the metadata as the read does: with replicas=all and --partition-by topic the
    topics it selects (before, a LayoutError refused the empty folder, "neither a Kafka log dir ... nor a
    tiered-storage copy"), and the log dirs an --output must stay out of (before, the empty folder itself, where a
    folder still holding copies gives the store's root)."""
    import kafkaseg
    from kafkaseg.errors import DataLossError
    from tests.test_remote_log_metadata_live import _drop, _tiered
    from kafkaseg.testing.tiered import write_remote_log_metadata

    data, remote, _, written, events, _, number = _tiered(tmp_path, "local")
    write_remote_log_metadata(data, events, partition=number)
    for log in written:
        _drop(log)
    folder = written[0].parent
    paths = [str(data), str(folder)] if with_log_dir else [str(folder), str(data / f"__remote_log_metadata-{number}")]
    copy = written[0].name[21:-4]
    data_dirs = [arg for path in paths for arg in ("--data-dir", path)]
    for extra in ([], ["--option", "replicas=all"]):
        with pytest.raises(DataLossError, match=copy):  # what a read says
            kafkaseg.read_arrow(paths, **dict(option.split("=", 1) for option in extra[1::2]))
        args = export.parse_args(data_dirs + ["--output", str(tmp_path / "out"), *extra])
        if not extra:
            with pytest.raises(DataLossError, match=copy):
                export.prepare(args)
        else:  # (no ranges planned: the read in Spark says the loss, as read_arrow does)
            assert export.prepare(args)["options"] == {"replicas": "all"}
        lenient = export.prepare(export.parse_args(data_dirs + ["--output", str(tmp_path / "out"), *extra,
                                                                "--option", "failOnDataLoss=false"]))
        assert not extra or lenient["ranges"] is None
    # the store's root holds the emptied folder, as it holds one with copies
    with pytest.raises(export.UsageError, match="is inside --data-dir"):
        export.prepare(export.parse_args(data_dirs + ["--output", str(remote / "out")]))
