"""jobs/compact.py: arguments and refusals without a JVM; the Spark transform and the whole job (full rebuild,
then an incremental merge through staged Parquet) on the shared session, against the Spark-free twin and a
brute-force replay."""

from __future__ import annotations

import dataclasses
import random

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable

from jobs import compact
from kafkaseg.compacted_table import compact_arrow, delta_dataset
from kafkaseg.compaction import latest_per_key
from kafkaseg.schema import arrow_schema
from kafkaseg.testing import TopicSpec, write_data_dir
from tests.compaction_data import expected_state, retention_copy, table_rows, truncated_copy

SPEC = TopicSpec("state", partitions=2, records_per_partition=900, records_per_batch=10, key_cardinality=40,
                 tombstone_ratio=0.15, null_key_ratio=0.05, headers=1, transactional=True, abort_ratio=0.3,
                 open_transactions=1, segment_bytes=10 * 1024)


def test_arguments_and_config(tmp_path):
    args = compact.parse_args(["--data-dir", "/a", "--data-dir", "/b", "--output", "/o", "--topics", "x,y",
                               "--option", "includeHeaders=true", "--on-data-loss", "rebuild"])
    assert args.data_dir == ["/a", "/b"] and args.mode == "auto"
    assert args.options == {"includeHeaders": "true", "subscribe": "x,y"}
    assert compact.load_config(args).on_data_loss == "rebuild"
    assert compact.parse_args(["--sample", "--work-dir", "/w"]).output == "/w/sample-compacted"
    for bad in (["--data-dir", "/a"], ["--sample", "--topics", "a", "--option", "subscribe=b"],
                ["--sample", "--mode", "append"]):
        with pytest.raises(SystemExit):
            compact.parse_args(bad)


def test_refusals_exit_before_spark_with_one_line(tmp_path, capsys):
    manifest = write_data_dir(tmp_path / "data", [SPEC], seed=1)
    table = tmp_path / "t"
    compact_arrow([str(tmp_path / "data")], str(table))
    truncated_copy(tmp_path / "data", tmp_path / "behind", drop_segments=3)  # the log is behind the table
    code = compact.main(["--data-dir", str(tmp_path / "behind"), "--output", str(table)])
    err = capsys.readouterr().err
    assert code == 1 and err.startswith("compact.py: error: DataLossError: the table's recorded offsets cannot be "
                                        "continued: state-0: the table holds offsets up to")
    bad = tmp_path / "c.toml"
    bad.write_text("on_data_los = 'rebuild'\n")
    code = compact.main(["--data-dir", str(tmp_path / "data"), "--output", str(table), "--config", str(bad)])
    assert code == 2 and "unknown key on_data_los" in capsys.readouterr().err
    code = compact.main(["--data-dir", str(tmp_path / "data"), "--output", str(tmp_path / "data" / "t")])
    assert code == 2 and "inside --data-dir" in capsys.readouterr().err
    code = compact.main(["--data-dir", str(tmp_path / "data"), "--output", str(table), "--option",
                         "kafka.isolation.level=read_uncommitted"])
    assert code == 2 and "needs kafka.isolation.level=read_committed" in capsys.readouterr().err
    assert len(manifest.partitions) == 2
    # a folder of another tool's Parquet files: a Delta log over it would leave them unreferenced (VACUUM deletes
    # them) and its Parquet readers would read the table's files too
    parquet = tmp_path / "parquet"
    parquet.mkdir()
    pq.write_table(pa.table({"a": [1]}), parquet / "part-0.parquet")
    code = compact.main(["--data-dir", str(tmp_path / "data"), "--output", str(parquet)])
    err = capsys.readouterr().err
    assert code == 2 and "holds Parquet files but no _delta_log" in err and "--format" not in err, err
    assert sorted(p.name for p in parquet.iterdir()) == ["part-0.parquet"]
    write_data_dir(tmp_path / "hive", [TopicSpec("__HIVE_DEFAULT_PARTITION__", records_per_partition=10)], seed=1)
    code = compact.main(["--data-dir", str(tmp_path / "hive"), "--output", str(tmp_path / "h")])
    assert code == 2 and "__HIVE_DEFAULT_PARTITION__ cannot be a partition folder's value" in capsys.readouterr().err
    assert not (tmp_path / "h").exists()


@pytest.mark.spark
def test_spark_reduction_matches_the_reference(spark):
    rng = random.Random(7)
    rows = [{"key": None if rng.random() < 0.1 else bytes([rng.randrange(5)]), "topic": rng.choice("ab"),
             "partition": rng.randrange(2), "offset": o, "value": None if rng.random() < 0.2 else b"v%d" % o,
             "timestamp": o * 1000, "timestampType": 0, "headers": [{"key": "h", "value": b"%d" % o}]}
            for o in rng.sample(range(10_000), 600)]
    schema = arrow_schema(include_headers=True)
    table = pa.Table.from_pylist(rows, schema=pa.schema([f if f.name != "timestamp" else pa.field(
        "timestamp", pa.int64()) for f in schema])).cast(schema)
    got = compact.latest_per_key(spark.createDataFrame(table)).toArrow()
    want = latest_per_key(table)
    assert got.schema.names == table.schema.names
    key = lambda r: (r["topic"], r["partition"], r["key"])  # noqa: E731
    assert sorted(got.to_pylist(), key=key) == sorted(want.to_pylist(), key=key)


@pytest.mark.spark
def test_job_full_then_incremental_equals_the_reference(spark, tmp_path):
    manifest = write_data_dir(tmp_path / "full", [SPEC], seed=2)
    ends = truncated_copy(tmp_path / "full", tmp_path / "head", drop_segments=2)
    table = tmp_path / "t"
    common = ["--output", str(table), "--option", "includeHeaders=true"]
    first = compact.run(spark, compact.parse_args(["--data-dir", str(tmp_path / "head"), *common]))
    assert first["plan"].full
    head_state = expected_state(manifest, ends=first["plan"].increment.state.next_offsets)
    assert table_rows(delta_dataset(str(table)).to_table()) == head_state
    second = compact.run(spark, compact.parse_args(["--data-dir", str(tmp_path / "full"), *common]))
    assert not second["plan"].full and second["result"]["num_source_rows"] > 0
    assert not (table / compact.STAGING_DIR).exists()  # the staged change set is gone after the merge
    got = table_rows(delta_dataset(str(table)).to_table())
    assert got == expected_state(manifest) != head_state
    compact_arrow([str(tmp_path / "full")], str(tmp_path / "ref"), options={"includeHeaders": "true"})
    assert got == table_rows(delta_dataset(str(tmp_path / "ref")).to_table())
    assert len(ends) == 2


@pytest.mark.spark
def test_incremental_rewrite_on_the_executors_equals_the_reference_and_keeps_other_topics(spark, tmp_path):
    """Above driver_merge_max_bytes (0 here: always) the executors rewrite the touched topics' files: the table
    equals a consumer's replay, rows of a topic the run did not read stay as they were, and the run commits once
    with its offsets."""
    other = TopicSpec("other", partitions=1, records_per_partition=300, records_per_batch=10, key_cardinality=20,
                      tombstone_ratio=0.1, segment_bytes=10 * 1024)
    manifest = write_data_dir(tmp_path / "full", [SPEC, other], seed=3)
    truncated_copy(tmp_path / "full", tmp_path / "head", drop_segments=2)
    table = tmp_path / "t"
    (tmp_path / "c.toml").write_text("driver_merge_max_bytes = 0\n")
    common = ["--output", str(table), "--option", "includeHeaders=true", "--config", str(tmp_path / "c.toml")]
    compact.run(spark, compact.parse_args(["--data-dir", str(tmp_path / "head"), *common]))
    before = table_rows(delta_dataset(str(table)).to_table())
    version = DeltaTable(str(table)).version()
    second = compact.run(spark, compact.parse_args(["--data-dir", str(tmp_path / "full"), "--topics", "state",
                                                    *common]))
    assert second["result"]["engine"] == "executors" and second["result"]["files_rewritten"] > 0
    got = table_rows(delta_dataset(str(table)).to_table())
    assert {k: v for k, v in got.items() if k[0] == "state"} == expected_state(manifest, topics={"state"})
    assert {k: v for k, v in got.items() if k[0] == "other"} == \
        {k: v for k, v in before.items() if k[0] == "other"} != {}
    assert DeltaTable(str(table)).version() == version + 1
    assert not [p for p in table.iterdir() if p.name.startswith("kafkaseg-")
                and not any(p.rglob("*.parquet"))]  # no empty run folder left behind


@pytest.mark.spark
@pytest.mark.parametrize("engine", ["driver", "executors"])
def test_keys_retention_deleted_leave_the_table_on_either_merge_engine(spark, tmp_path, engine):
    """cleanup.policy=compact,delete: retention deleted the oldest segments and with them every record of some
    keys. The driver's merge and the executors' rewrite both drop those keys' rows, as a rebuild would, with new
    records to merge and with none (the run then reads nothing and only drops)."""
    manifest = write_data_dir(tmp_path / "full", [dataclasses.replace(SPEC, key_cardinality=300)], seed=3)
    truncated_copy(tmp_path / "full", tmp_path / "head", drop_segments=2)
    table = tmp_path / "t"
    (tmp_path / "c.toml").write_text(f"driver_merge_max_bytes = {0 if engine == 'executors' else 1 << 30}\n")
    common = ["--output", str(table), "--option", "includeHeaders=true", "--config", str(tmp_path / "c.toml")]
    first = compact.run(spark, compact.parse_args(["--data-dir", str(tmp_path / "head"), *common]))
    head_ends = first["plan"].increment.state.next_offsets
    starts = retention_copy(tmp_path / "full", tmp_path / "expired", {("state", 0): head_ends[("state", 0)]})
    second = compact.run(spark, compact.parse_args(["--data-dir", str(tmp_path / "expired"), *common]))
    assert second["plan"].increment.expired == starts and second["plan"].increment.offsets_to_read > 0
    assert second["result"].get("engine", "driver") == engine
    assert table_rows(delta_dataset(str(table)).to_table()) == expected_state(manifest, starts=starts)
    ends = second["plan"].increment.state.next_offsets
    later = retention_copy(tmp_path / "full", tmp_path / "later", {tp: ends[tp] for tp in ends})
    third = compact.run(spark, compact.parse_args(["--data-dir", str(tmp_path / "later"), *common]))
    assert third["plan"].increment.offsets_to_read == 0 and set(third["plan"].increment.expired) == set(ends)
    got = table_rows(delta_dataset(str(table)).to_table())
    assert got == expected_state(manifest, starts=later) != expected_state(manifest, starts=starts)
