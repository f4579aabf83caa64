"""jobs/lookup.py: the pure transform (no Spark) and one end-to-end run on the shared local[2] session."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from kafkaseg.errors import InvalidOptionError

from kafkaseg.compacted_table import delta_dataset
from kafkaseg.testing import TopicSpec, write_data_dir

_SPEC = importlib.util.spec_from_file_location("lookup_job", Path(__file__).resolve().parents[1] / "jobs/lookup.py")
job = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(job)


@pytest.fixture(scope="module")
def datadir(tmp_path_factory):
    return write_data_dir(tmp_path_factory.mktemp("job"), [
        TopicSpec("a", partitions=3, records_per_partition=400, segment_bytes=16 * 1024)], seed=11)


def _requests(manifest):
    rows = []
    for p in range(3):
        pm = manifest.partition("a", p)
        rows.append({"topic": "a", "partition": str(p), "time": str(pm.records[123].timestamp), "offset": None})
        rows.append({"topic": "a", "partition": str(p), "time": None, "offset": str(pm.records[250].offset)})
        rows.append({"topic": "a", "partition": str(p), "time": "latest", "offset": None})
    rows.append({"topic": "a", "partition": "9", "time": "-1", "offset": None})
    rows.append({"topic": "a", "partition": "0", "time": "soon", "offset": None})
    rows.append({"topic": "a", "partition": "abc", "time": "-1", "offset": None})
    rows.append({"topic": "a", "partition": "", "time": "-1", "offset": None})
    rows.append({"topic": "a", "partition": "1", "time": None, "offset": "x1"})
    return rows


def _check(manifest, answers: list[dict]):
    by = {}
    for row in answers:
        by.setdefault((row["partition"], row["time"], row["request_offset"]), row)
    for p in range(3):
        pm = manifest.partition("a", p)
        t = by[(p, str(pm.records[123].timestamp), None)]
        assert t["offset"] == pm.records[123].offset and t["found"] and t["segment"].endswith(".log")
        o = by[(p, None, pm.records[250].offset)]
        assert o["record_offset"] == pm.records[250].offset and o["found"] and o["position"] is not None
        assert o["record_timestamp"] == pm.records[250].timestamp and o["is_control"] is False
        assert by[(p, "latest", None)]["offset"] == pm.high_watermark
    assert "no partition a-9" in by[(9, "-1", None)]["reason"]
    assert by[(0, "soon", None)]["offset"] is None and "soon" in by[(0, "soon", None)]["reason"]
    reasons = sorted(row["reason"] for row in answers if row["partition"] is None or row["request_offset"] is None
               and row["time"] is None)
    assert reasons == ["no partition given", "offset 'x1' is not an integer", "partition 'abc' is not an integer"]


def test_lookup_batches_without_spark(datadir):
    batch = pa.RecordBatch.from_pylist(_requests(datadir), schema=pa.schema(
        [(n, pa.string()) for n in ("topic", "partition", "time", "offset")]))
    out = pa.Table.from_batches(list(job.lookup_batches([batch], [str(datadir.path)])))
    assert out.schema == job.OUTPUT_SCHEMA
    _check(datadir, out.to_pylist())
    # other request columns (an id) are passed through, so every answer, a refused one too, joins back
    requests = [{**row, "id": f"r{i}"} for i, row in enumerate(_requests(datadir))]
    batch = pa.RecordBatch.from_pylist(requests, schema=pa.schema(
        [(n, pa.string()) for n in ("topic", "partition", "time", "offset", "id")]))
    out = pa.Table.from_batches(list(job.lookup_batches([batch], [str(datadir.path)], extra=["id"])))
    assert out.schema == job.output_schema(["id"]) and out["id"].to_pylist() == [f"r{i}" for i in range(len(requests))]
    for bad in (["found"], ["Found"], ["Offset"], ["id", "ID"], ["a.b"], ["we`ird"]):
        with pytest.raises(InvalidOptionError, match="rename them"):
            job.extra_columns(["topic", "partition", *bad])


def test_an_offset_on_a_transaction_marker_is_answered_as_a_control_record(tmp_path):
    manifest = write_data_dir(tmp_path, [TopicSpec("tx", records_per_partition=60, records_per_batch=5,
                                                   transactional=True)])
    marker = next(r for r in manifest.partition("tx").records if r.is_control)
    batch = pa.RecordBatch.from_pylist([{"topic": "tx", "partition": "0", "time": None, "offset": str(marker.offset)}],
                                       schema=pa.schema([(n, pa.string()) for n in job.REQUEST_COLUMNS]))
    (row,) = pa.Table.from_batches(list(job.lookup_batches([batch], [str(tmp_path)]))).to_pylist()
    assert row["found"] and row["is_control"] is True and row["record_offset"] == marker.offset


def test_a_stale_copy_of_another_topic_fails_only_that_topics_rows(datadir, tmp_path):
    """Copies of topic b from two incarnations (different topic ids) make b's replica choice an error: b's rows
    get that reason, a's rows are answered (the job never fails for one topic's data)."""
    import shutil

    from kafkaseg.testing.partition import write_partition_metadata

    for k, topic_id in enumerate(("EjRWeBI0VngSNFZ4EjRWeA", "ASNFZ4mrze8BI0VniavN7w")):
        copy = tmp_path / f"broker{k}" / "b-0"
        shutil.copytree(datadir.path / "a-0", copy)
        write_partition_metadata(copy / "partition.metadata", topic_id)
    batch = pa.RecordBatch.from_pylist(
        _requests(datadir) + [{"topic": "b", "partition": "0", "time": "-1", "offset": None}],
        schema=pa.schema([(n, pa.string()) for n in ("topic", "partition", "time", "offset")]))
    dirs = [str(datadir.path), str(tmp_path / "broker0"), str(tmp_path / "broker1")]
    answers = pa.Table.from_batches(list(job.lookup_batches([batch], dirs))).to_pylist()
    (b_row,) = [row for row in answers if row["topic"] == "b"]
    assert b_row["offset"] is None and "different incarnations" in b_row["reason"]
    _check(datadir, [row for row in answers if row["topic"] == "a"])


@pytest.mark.spark
def test_job_end_to_end(spark, datadir, tmp_path, monkeypatch):
    requests = tmp_path / "requests.csv"
    lines = ["topic,partition,time,offset,id"] + [
        f"{r['topic']},{r['partition']},{r['time'] or ''},{r['offset'] or ''},r{i}"
        for i, r in enumerate(_requests(datadir))]
    # values the output's int32/int64 columns cannot hold: once a failed task (and job), now rows with a reason
    lines += ["orders,2147483648,-1,,big1", "a,0,,9223372036854775808,big2"]
    requests.write_text("\n".join(lines) + "\n")
    args = job.parse_args(["--data-dir", str(datadir.path), "--input", str(requests), "--output",
                           str(tmp_path / "out"), "--format", "delta", "--partitions", "2"])
    answers = job.transform(job.extract(spark, args.input), args.data_dir, args.isolation, args.partitions)
    # mapInArrow needs pandas in PySpark; without it the job goes through rdd.mapPartitions: the same answers
    with monkeypatch.context() as patch:
        patch.setattr(job, "_has_pandas", lambda: False)
        plain = job.transform(job.extract(spark, args.input), args.data_dir, args.isolation, args.partitions)
        assert sorted(map(tuple, plain.collect()), key=repr) == sorted(map(tuple, answers.collect()), key=repr)
    assert job._has_pandas() == (importlib.util.find_spec("pandas") is not None)
    # the same requests as a Delta table and as a Spark-written folder of CSV files read the same
    import pyarrow.csv as pacsv
    from deltalake import write_deltalake

    write_deltalake(str(tmp_path / "requests-delta"), pacsv.read_csv(requests, convert_options=pacsv.ConvertOptions(
        strings_can_be_null=True,
        column_types={"topic": "string", "partition": "string", "time": "string", "offset": "string",
                      "id": "string"})))
    job.extract(spark, str(requests)).write.option("header", "true").csv(str(tmp_path / "requests-folder"))
    want = sorted(map(tuple, job.extract(spark, str(requests)).collect()), key=repr)
    for other in ("requests-delta", "requests-folder"):
        assert sorted(map(tuple, job.extract(spark, str(tmp_path / other)).collect()), key=repr) == want, other
    beside = tmp_path / "out.staging"  # a user's folder that the Delta write once used, and deleted, as staging
    beside.mkdir()
    (beside / "mine.txt").write_text("keep")
    job.load(answers, args.output, args.format, "overwrite")
    assert (beside / "mine.txt").read_text() == "keep"

    table = delta_dataset(args.output).to_table()
    assert table.num_rows == len(lines) - 1
    assert sorted(table["id"].to_pylist()) == sorted(line.rsplit(",", 1)[1] for line in lines[1:])
    answers = table.to_pylist()
    out_of_range = sorted(row["reason"] for row in answers if row["topic"] == "orders" or row["time"] is None
                          and row["partition"] == 0 and row["request_offset"] is None)
    assert out_of_range == ["offset 9223372036854775808 is out of range (-9223372036854775808..9223372036854775807)",
                            "partition 2147483648 is out of range (0..2147483647)"]
    _check(datadir, [row for row in answers if row["reason"] not in out_of_range])
    # a request file without a partition column: an error naming the option and the column, before any task
    (tmp_path / "nopart.csv").write_text("topic,time\norders,-1\n")
    with pytest.raises(InvalidOptionError, match="--input .*no partition column"):
        job.extract(spark, str(tmp_path / "nopart.csv"))
    # a failed run (the executors cannot find the data dir) leaves no output behind to block its rerun
    for fmt in ("parquet", "delta"):
        failed = tmp_path / f"failed-{fmt}"
        with pytest.raises(Exception, match="no such file or directory"):
            job.load(job.transform(job.extract(spark, args.input), [str(tmp_path / "nope")]), str(failed), fmt)
        assert not failed.exists()


def test_help_names_the_input_columns(capsys):
    with pytest.raises(SystemExit):
        job.parse_args(["--help"])
    assert "Input columns: topic, partition, and time" in " ".join(capsys.readouterr().out.split())


def test_main_refuses_a_missing_data_dir_or_an_existing_output_in_one_line(datadir, tmp_path, capsys):
    (tmp_path / "out").mkdir()
    requests = tmp_path / "r.csv"
    requests.write_text("topic,partition,time\norders,0,-1\n")
    (tmp_path / "delta" / "_delta_log").mkdir(parents=True)
    (tmp_path / "parquet").mkdir()
    pq.write_table(pa.table({"a": [1]}), tmp_path / "parquet" / "part-0.parquet")
    for argv, message in [
            # one format written into a table of the other: VACUUM would delete the Parquet files, readers mix them
            (["--data-dir", str(datadir.path), "--input", str(requests), "--output", str(tmp_path / "parquet"),
              "--format", "delta", "--mode", "append"], "holds Parquet files but no _delta_log"),
            (["--data-dir", str(datadir.path), "--input", str(requests), "--output", str(tmp_path / "delta"),
              "--mode", "overwrite"], "is a Delta table"),
            (["--data-dir", str(tmp_path / "nope"), "--input", str(requests), "--output", str(tmp_path / "o")],
             "BadPathError: "),
            (["--data-dir", str(datadir.path), "--input", str(requests), "--output", str(tmp_path / "out")],
             "FileExistsError: "),
            (["--data-dir", str(datadir.path), "--input", str(tmp_path / "nope.csv"), "--output",
              str(tmp_path / "o")], "BadPathError: --input "),
            (["--data-dir", str(datadir.path), "--input", str(requests), "--output", str(tmp_path / "o"),
              "--partitions", "0"], "argument --partitions: 0 is not 1 or more"),
            # Spark's overwrite deleted the whole log dir before the lookups ran (found in review)
            (["--data-dir", str(datadir.path), "--input", str(requests), "--output", f"file:{datadir.path}",
              "--mode", "overwrite"], "UsageError: --output file:"),
            (["--data-dir", str(datadir.path), "--input", str(requests), "--output", str(datadir.path / "answers")],
             "is inside --data-dir")]:
        try:
            assert job.main(argv) == 2
        except SystemExit as exit:  # argparse's own usage error
            assert exit.code == 2
        err = capsys.readouterr().err
        assert err.startswith(("lookup.py: error: ", "usage: ")) and message in err, err
        assert err.startswith("usage: ") or err.count("\n") == 1, err
    # a glob is Spark's readers' to expand: not refused as a missing file (found in review)
    job.check(job.parse_args(["--data-dir", str(datadir.path), "--input", str(tmp_path / "*.csv"), "--output",
                              str(tmp_path / "o")]))


def _answer(rows, data_dirs):
    batch = pa.RecordBatch.from_pylist(rows, schema=pa.schema(
        [(n, pa.string()) for n in ("topic", "partition", "time", "offset")]))
    return pa.Table.from_batches(list(job.lookup_batches([batch], data_dirs))).to_pylist()


def test_out_of_range_and_malformed_values_get_a_reason_not_a_failed_batch(datadir):
    """A partition beyond int32 or an offset beyond int64 used to fail the whole Arrow batch (up to 4,096 rows,
    and the task) building the output; Python's int() quirks ('1_000', '+5', non-ASCII digits) passed as
    integers. Each is now its row's reason; the other rows of the batch are answered."""
    wanted = [
        ("2147483648", "-1", None, "partition 2147483648 is out of range"),
        ("-1", "-1", None, "partition -1 is out of range"),
        ("0", None, "9223372036854775808", "offset 9223372036854775808 is out of range"),
        ("0", None, "-9223372036854775809", "offset -9223372036854775809 is out of range"),
        ("0", "9223372036854775808", None, "time 9223372036854775808 does not fit in a 64-bit timestamp"),
        ("1_000", "-1", None, "partition '1_000' is not an integer"),
        ("+0", "-1", None, "partition '+0' is not an integer"),
        ("\u0661", "-1", None, "partition '\u0661' is not an integer"),  # ARABIC-INDIC DIGIT ONE
        ("0", None, "+5", "offset '+5' is not an integer"),
        ("0", None, "1_000", "offset '1_000' is not an integer"),
        ("0", None, "", "no time or offset given"),
    ]
    rows = [{"topic": "a", "partition": p, "time": t, "offset": o} for p, t, o, _ in wanted]
    rows.append({"topic": "a", "partition": " 2 ", "time": None, "offset": "-0"})  # blanks around, and -0
    answers = _answer(rows, [str(datadir.path)])
    assert len(answers) == len(rows)
    for (_, _, _, reason), row in zip(wanted, answers):
        assert row["reason"] is not None and row["reason"].startswith(reason), (reason, row)
        assert row["offset"] is None and row["record_offset"] is None and not row["found"]
    last = answers[-1]
    assert (last["partition"], last["request_offset"], last["record_offset"], last["found"]) == (2, 0, 0, True)


def test_a_time_answered_with_the_log_end_has_no_reason(datadir, tmp_path):
    """-1 answers the high watermark (the log end here) and -2 on an emptied partition the log end too: correct
    answers no record holds, so `found` is false (no record at the offset) and `reason` null (docs/jobs.md keeps
    reasons for rows that are not answered). An offset asked for past the log end still gets its reason."""
    from kafkaseg.testing import PartitionWriter

    PartitionWriter(tmp_path / "gone-0", log_start_offset=40).close()  # every record deleted by retention
    end = datadir.partition("a", 0).high_watermark
    answers = _answer([
        {"topic": "a", "partition": "0", "time": "-1", "offset": None},
        {"topic": "gone", "partition": "0", "time": "-2", "offset": None},
        {"topic": "gone", "partition": "0", "time": "latest", "offset": None},
        {"topic": "a", "partition": "0", "time": None, "offset": str(end)},
        {"topic": "a", "partition": "0", "time": "-1", "offset": str(end)},
    ], [str(datadir.path), str(tmp_path)])
    latest, earliest, gone_latest, past_end, both = answers
    assert (latest["offset"], latest["found"], latest["reason"]) == (end, False, None)
    assert (earliest["offset"], earliest["found"], earliest["reason"]) == (40, False, None)
    assert (gone_latest["offset"], gone_latest["found"], gone_latest["reason"]) == (40, False, None)
    assert past_end["offset"] is None and f"offset {end} is at or past the log end" in past_end["reason"]
    assert both["offset"] == end and f"offset {end} is at or past the log end" in both["reason"]


def test_input_format_follows_files_and_folders_as_spark_writes_them(tmp_path):
    (tmp_path / "a.csv").write_text("topic,partition\n")
    assert job.input_format(str(tmp_path / "a.csv")) == "csv"
    assert job.input_format(str(tmp_path / "b.jsonl")) == "json"
    assert job.input_format("db.requests") == "table"
    spark_csv = tmp_path / "out-csv"
    spark_csv.mkdir()
    for name in ("_SUCCESS", "._SUCCESS.crc", "part-00000-x.csv", "part-00001-x.csv"):
        (spark_csv / name).write_text("")
    assert job.input_format(str(spark_csv)) == "csv"
    spark_parquet = tmp_path / "out-parquet"
    spark_parquet.mkdir()
    (spark_parquet / "part-00000.snappy.parquet").write_text("")
    assert job.input_format(str(spark_parquet)) == "parquet"
    (spark_parquet / "notes.txt").write_text("")
    with pytest.raises(ValueError, match="cannot tell the format"):
        job.input_format(str(spark_parquet))
    delta = tmp_path / "delta"
    (delta / "_delta_log").mkdir(parents=True)
    assert job.input_format(str(delta)) == "delta"
    # partitionBy folders and compressed part files, as Spark writes them
    partitioned = tmp_path / "by-topic"
    (partitioned / "topic=t").mkdir(parents=True)
    (partitioned / "_SUCCESS").write_text("")
    (partitioned / "topic=t" / "part-00000-x.c000.csv.bz2").write_text("")
    (partitioned / "topic=t" / ".part-00000-x.c000.csv.bz2.crc").write_text("")
    assert job.input_format(str(partitioned)) == "csv"
    assert job.input_format(str(tmp_path / "requests.json.gz")) == "json"
    named_parquet = tmp_path / "x.parquet"  # a Delta table in a folder so named is still read as Delta
    (named_parquet / "_delta_log").mkdir(parents=True)
    assert job.input_format(str(named_parquet)) == "delta"
    # an object store's listed paths have no scheme: the walk lists through the store's own filesystem
    import pyarrow.fs as pafs

    from kafkaseg.storage import fs as kfs

    def as_object_store(uri):
        assert uri.startswith("memlike://")
        return pafs.SubTreeFileSystem(str(tmp_path), pafs.LocalFileSystem()), uri[len("memlike://"):]

    original = kfs.open_filesystem
    kfs.open_filesystem = as_object_store
    try:
        assert job.input_format("memlike://by-topic") == "csv"
    finally:
        kfs.open_filesystem = original


@pytest.mark.spark
def test_request_columns_pass_through_with_their_types(spark, datadir, tmp_path, monkeypatch):
    """An id, a struct, a list, a map, a timestamp and a decimal given with the requests come back as they were
    given, of their own types (they were strings once: a join back on an integer id needed a cast, a struct came
    back as its text), through mapInArrow and the RDD fallback alike, and a Delta table of them takes a second
    run's append; so does a table an earlier version wrote, its request columns strings."""
    import decimal

    import pyarrow.parquet as pq

    rows = _requests(datadir)
    n = len(rows)
    requests = pa.table({
        **{name: pa.array([r[name] for r in rows], pa.string()) for name in ("topic", "partition", "time", "offset")},
        "id": pa.array(range(1000, 1000 + n), pa.int64()),
        "meta": pa.array([{"who": f"u{i}", "tags": ["x"] * (i % 3)} for i in range(n)]),
        "attrs": pa.array([[("k", i)] for i in range(n)], pa.map_(pa.string(), pa.int64())),
        # (a timestamp needs its time zone for the Delta schema; a decimal has no JSON number for Delta's stats)
        "at": pa.array([1_700_000_000_000_000 + i for i in range(n)], pa.timestamp("us", "UTC")),
        "amount": pa.array([decimal.Decimal(f"{i}.25") for i in range(n)], pa.decimal128(10, 2)),
    })
    pq.write_table(requests, tmp_path / "requests.parquet")
    source = str(tmp_path / "requests.parquet")
    answers = job.transform(job.extract(spark, source), [str(datadir.path)])
    with monkeypatch.context() as patch:
        patch.setattr(job, "_has_pandas", lambda: False)
        plain = job.transform(job.extract(spark, source), [str(datadir.path)])
        assert plain.schema == answers.schema
        assert sorted(map(repr, plain.collect())) == sorted(map(repr, answers.collect()))
    assert [f.dataType.simpleString() for f in answers.schema.fields[-5:]] == [
        "bigint", "struct<who:string,tags:array<string>>", "map<string,bigint>", "timestamp", "decimal(10,2)"]
    output = str(tmp_path / "answers")
    for mode in ("error", "append"):
        job.load(job.transform(job.extract(spark, source), [str(datadir.path)]), output, "delta", mode)
    table = delta_dataset(output).to_table()
    assert table.num_rows == 2 * n
    assert table.schema.field("id").type == pa.int64()
    first = {row["id"]: row for row in table.to_pylist()}
    for i in range(n):
        row = first[1000 + i]
        assert row["meta"] == {"who": f"u{i}", "tags": ["x"] * (i % 3)} and row["attrs"] == [("k", i)]
        assert row["at"] == requests["at"][i].as_py() and row["amount"] == decimal.Decimal(f"{i}.25")
    # each answer is its own request's: the same as the answers computed with no column passed through
    by_id = {r["id"]: (r["offset"], r["reason"]) for r in answers.collect()}
    bare = job.lookup_batches([pa.RecordBatch.from_pylist(rows, schema=pa.schema(
        [(name, pa.string()) for name in ("topic", "partition", "time", "offset")]))], [str(datadir.path)])
    assert [by_id[1000 + i] for i in range(n)] == [(r["offset"], r["reason"])
                                                   for r in pa.Table.from_batches(list(bare)).to_pylist()]
    # a table the job wrote before request columns kept their types (strings): a scheduled append goes on
    from deltalake import write_deltalake

    older = str(tmp_path / "older")
    earlier = table.slice(0, n)
    passed = ("id", "meta", "attrs", "at", "amount")
    write_deltalake(older, pa.table({name: pa.array([None if v is None else str(v) for v in earlier[name].to_pylist()],
                                                    pa.string()) if name in passed else earlier[name]
                                     for name in earlier.column_names}))
    job.load(job.transform(job.extract(spark, source), [str(datadir.path)]), older, "delta", "append")
    grown = delta_dataset(older).to_table()
    assert grown.num_rows == 2 * n and grown.schema.field("id").type == pa.string()
    assert sorted(grown["id"].to_pylist()) == sorted([str(1000 + i) for i in range(n)] * 2)


def test_help_describes_the_shared_options_as_the_other_jobs_do(capsys):
    """--data-dir, --output, --format and --mode read as in export.py, compact.py and retention_audit.py (one parser
    builder): the same metavars, defaults said, --mode's choices in the same order."""
    from jobs import retention_audit

    def helps(parse):
        with pytest.raises(SystemExit):
            parse(["--help"])
        return " ".join(capsys.readouterr().out.split())

    mine, audit = helps(job.parse_args), helps(retention_audit.parse_args)
    assert "--data-dir DIR " in mine and "--data-dir DATA_DIR" not in mine
    assert "--output PATH" in mine and "--mode {error,overwrite,append}" in mine and "{error,overwrite,append}" in audit
    for default in ("default parquet", "default: error", "default read_uncommitted"):
        assert default in mine
    assert "Kafka log dirs, topic-partition dirs or globs (one or more, and repeatable" in mine


def test_on_corruption_skip_answers_past_damage_as_a_lenient_read(tmp_path):
    """A zeroed page under an .index entry: by default a row whose lookup meets the damage gets it as its reason
    (file and byte); with --on-corruption skip the job answers as `kafkaseg locate --on-corruption skip` does: every
    offset a lenient read returns is found, and one the damage lost is unreadable, with its range."""
    from test_lookup import zero_page_under_an_index_entry

    zeroed = zero_page_under_an_index_entry(tmp_path)
    found = next(o for o in zeroed.after if o < zeroed.next_entry_offset)  # its floor entry points into the zeros
    lost = zeroed.lost[0]
    requests = pa.RecordBatch.from_pylist([{"topic": "orders", "partition": "0", "time": None, "offset": str(o)}
                                           for o in (found, lost)],
                                          schema=pa.schema([(n, pa.string()) for n in job.REQUEST_COLUMNS]))
    strict = pa.Table.from_batches(list(job.lookup_batches([requests], [str(tmp_path)]))).to_pylist()
    assert [row["found"] for row in strict] == [False, False]
    assert all(str(zeroed.log) in row["reason"] and "byte" in row["reason"] for row in strict), strict
    assert "--on-corruption skip" in strict[0]["reason"]
    lenient = pa.Table.from_batches(list(job.lookup_batches([requests], [str(tmp_path)], lenient=True))).to_pylist()
    assert lenient[0]["found"] and lenient[0]["record_offset"] == found and lenient[0]["reason"] is None
    assert not lenient[1]["found"] and "unreadable" in lenient[1]["reason"]
    assert job.parse_args(["--data-dir", str(tmp_path), "--input", "x.csv", "--output", "o",
                           "--on-corruption", "skip"]).on_corruption == "skip"


@pytest.mark.parametrize("with_log_dir", [True, False], ids=["with-log-dir", "copies-alone"])
def test_earliest_below_a_missing_oldest_live_tiered_copy_is_the_brokers_log_start(tmp_path, with_log_dir):
    """The job answers as `kafkaseg offsets`/`locate` do with __remote_log_metadata among the --data-dirs: -2 is the
    broker's log start (the missing oldest live copy's first offset, no record there), and an offset in that copy is
    lost with it, named. Before, the job read no metadata: -2 answered the first offset the files hold."""
    from tests.test_remote_log_metadata_live import _oldest_live_copy_missing

    _, paths, gone, first, end = _oldest_live_copy_missing(tmp_path, False, with_log_dir)
    copy = f"{gone.name[21:-4]} (offsets {first}-{end - 1})"
    batch = pa.RecordBatch.from_pylist(
        [{"topic": "orders", "partition": "0", "time": "-2", "offset": None},
         {"topic": "orders", "partition": "0", "time": None, "offset": str(first + 5)}],
        schema=pa.schema([(n, pa.string()) for n in job.REQUEST_COLUMNS]))
    earliest, inside = pa.Table.from_batches(list(job.lookup_batches([batch], paths))).to_pylist()
    assert earliest["offset"] == first and not earliest["found"] and earliest["record_offset"] == end, earliest
    assert not inside["found"] and copy in inside["reason"], inside


def test_check_takes_a_tiered_store_emptied_whose_metadata_lists_live_copies(tmp_path):
    """The driver's check discovers as the executors do: a store whose copies are all gone, with
    __remote_log_metadata among the --data-dirs listing them live, is the metadata's data loss (its rows answered,
    -2 the broker's log start), not a path to refuse. Before, check refused it (a LayoutError) before Spark started."""
    from tests.test_remote_log_metadata_live import _drop, _tiered
    from kafkaseg.testing.tiered import write_remote_log_metadata

    data, remote, _, written, events, _, number = _tiered(tmp_path, "local")
    write_remote_log_metadata(data, events, partition=number)
    for log in written:
        _drop(log)
    dirs = [str(remote), str(data / f"__remote_log_metadata-{number}")]
    (tmp_path / "requests.csv").write_text("topic,partition,time,offset\norders,0,-2,\n")
    job.check(job.parse_args([arg for d in dirs for arg in ("--data-dir", d)] + [
        "--input", str(tmp_path / "requests.csv"), "--output", str(tmp_path / "out")]))


def test_rows_are_answered_from_another_copy_where_the_chosen_one_is_corrupt(tmp_path, caplog):
    """Several brokers' data dirs: a row whose answer lies in a corrupt batch of the copy chosen is answered from
    another copy, as `kafkaseg offsets`/`locate` and a strict read fall back (it was the corruption as its reason),
    said as a warning in the read's words; a copy behind (its log ends lower) never answers what it does not hold;
    with --on-corruption skip the lookup goes past the damage in the chosen copy, no other copy read."""
    import logging
    import shutil

    from kafkaseg.wire.batch import iter_headers

    write_data_dir(tmp_path / "a", [TopicSpec("t", records_per_partition=300, records_per_batch=10)], seed=2)
    manifest = write_data_dir(tmp_path / "b", [TopicSpec("t", records_per_partition=200, records_per_batch=10)],
                              seed=2)  # a follower behind
    shutil.copy(tmp_path / "a" / "t-0" / "partition.metadata", tmp_path / "b" / "t-0" / "partition.metadata")
    log = tmp_path / "a" / "t-0" / "00000000000000000000.log"
    data = bytearray(log.read_bytes())
    for wanted in (86, 250):
        (header,) = [h for h in iter_headers(bytes(data)) if h.base_offset <= wanted <= h.last_offset]
        data[header.position + 70] ^= 0xFF
        if wanted == 86:
            position = header.position
    log.write_bytes(bytes(data))
    records = manifest.partition("t", 0).records
    rows = [{"topic": "t", "partition": "0", "time": str(records[86].timestamp), "offset": None},
            {"topic": "t", "partition": "0", "time": None, "offset": "86"},
            {"topic": "t", "partition": "0", "time": None, "offset": "250"}]
    dirs = [str(tmp_path / "a"), str(tmp_path / "b")]
    with caplog.at_level(logging.WARNING, logger="kafkaseg.lookup"):
        by_time, by_offset, behind = _answer(rows, dirs)
    other = str(tmp_path / "b" / "t-0")
    assert (by_time["offset"], by_time["reason"], by_time["found"]) == (86, None, True)
    assert by_time["segment"] == str(tmp_path / "b" / "t-0" / "00000000000000000000.log")
    assert (by_offset["record_offset"], by_offset["found"], by_offset["reason"]) == (86, True, None)
    said = [r.getMessage() for r in caplog.records if r.name == "kafkaseg.lookup"]
    assert len(said) == 2 and all(f"{log} is corrupt at byte {position}" in line and
                                  f"read from the copy in {other} instead" in line for line in said)
    assert behind["found"] is False and "CRC" in behind["reason"]
    assert f"{other}: its log ends at 200, behind the chosen copy" in behind["reason"]
    lenient = pa.Table.from_batches(list(job.lookup_batches(
        [pa.RecordBatch.from_pylist(rows[:1], schema=pa.schema([(n, pa.string()) for n in job.REQUEST_COLUMNS]))],
        dirs, lenient=True))).to_pylist()
    assert lenient[0]["offset"] > 86 and lenient[0]["segment"] == str(log)


def test_append_refuses_a_delta_table_another_job_wrote_before_spark(datadir, tmp_path, capsys):
    """--mode append --format delta onto another job's Delta table (a compacted table given as --output by
    mistake) is refused before Spark starts, as the retention audit's append is: the table holds columns the job
    does not write and lacks its answer columns (it was refused only once Spark ran, and by chance: the
    ``timestamp`` column's type clashes). The job's own table, with a passed-through request column, is not."""
    from deltalake import DeltaTable, write_deltalake

    from kafkaseg.compacted_table import compact_arrow
    from kafkaseg.errors import TableSchemaError

    requests = tmp_path / "r.csv"
    requests.write_text("topic,partition,time,id\na,0,-1,x\n")
    table = str(tmp_path / "compacted")
    compact_arrow([str(datadir.path)], table, options={"subscribe": "a"})
    before = DeltaTable(table).version()
    argv = ["--data-dir", str(datadir.path), "--input", str(requests), "--output", table, "--format", "delta",
            "--mode", "append"]
    with pytest.raises(TableSchemaError, match=rf"{table}: cannot append .* columns this job does not write: key"):
        job.check(job.parse_args(argv))
    assert job.main(argv) == 2 and "TableSchemaError" in capsys.readouterr().err
    assert DeltaTable(table).version() == before
    own = str(tmp_path / "answers")
    write_deltalake(own, job.output_schema(["id"]).empty_table())
    job.check(job.parse_args(argv[:5] + [own] + argv[6:]))
