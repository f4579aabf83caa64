"""jobs/retention_audit.py: argument and input checks without a JVM, and one end-to-end run on the shared local[2]
session writing Delta tables read back with deltalake."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from kafkaseg.compacted_table import delta_dataset
from kafkaseg.testing import TopicSpec, write_data_dir

_SPEC = importlib.util.spec_from_file_location(
    "retention_audit_job", Path(__file__).resolve().parents[1] / "jobs/retention_audit.py")
job = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(job)

DAY = 86_400_000
START = 1_700_000_000_000


@pytest.fixture(scope="module")
def datadir(tmp_path_factory):
    # "old": 3 partitions of ~10 segments whose records span [START, START + 2000 * 600 s): at START + 7 days +
    # 10 days every segment whose largest timestamp is older than 10 days... see the expectations below
    root = tmp_path_factory.mktemp("audit")
    manifest = write_data_dir(root, [
        TopicSpec("old", partitions=3, records_per_partition=2000, value_size=100, ts_step_ms=600_000,
                  segment_bytes=32 * 1024, start_timestamp_ms=START),
        TopicSpec("kept", records_per_partition=300, start_timestamp_ms=START, segment_bytes=16 * 1024),
    ], seed=3)
    config = root.parent / f"{root.name}-retention.toml"
    config.write_text('[topics."kept"]\n"retention.ms" = -1\n')
    return manifest, str(config)


def _expected_deletions(manifest, now: int) -> dict[tuple[str, int], int]:
    """Brute force from the writer's manifest: segments, oldest first, whose largest record timestamp is more than
    7 days before ``now``, up to the first that is not (the high watermark is the log end in these dirs)."""
    out = {}
    for (topic, p), pm in manifest.partitions.items():
        if topic != "old":
            continue
        count = 0
        for seg in pm.segments:
            if now - seg.max_timestamp > 7 * DAY:
                count += 1
            else:
                break
        out[(topic, p)] = count
    return out


def test_prepare_refuses_bad_input_before_spark(datadir, tmp_path, capsys):
    manifest, config = datadir
    data = str(manifest.path)
    (tmp_path / "exists" / "_delta_log").mkdir(parents=True)
    bad = tmp_path / "bad.toml"
    bad.write_text('[defaults]\n"retention.minutes" = 5\n')
    import pyarrow as pa
    import pyarrow.parquet as pq

    (tmp_path / "parquet").mkdir()
    pq.write_table(pa.table({"a": [1]}), tmp_path / "parquet" / "part-0.parquet")
    for argv, message in [
            # one format written into a table of the other: VACUUM would delete the Parquet files, readers mix them
            (["--data-dir", data, "--output", str(tmp_path / "parquet"), "--mode", "append"],
             "holds Parquet files but no _delta_log"),
            (["--data-dir", data, "--output", str(tmp_path / "o"), "--segments", str(tmp_path / "parquet"),
              "--mode", "overwrite"], "holds Parquet files but no _delta_log"),
            (["--data-dir", data, "--output", str(tmp_path / "exists"), "--format", "parquet", "--mode",
              "overwrite"], "is a Delta table"),
            (["--data-dir", str(tmp_path / "nope"), "--output", str(tmp_path / "o")], "BadPathError: "),
            (["--data-dir", data, "--output", str(tmp_path / "exists")], "FileExistsError: "),
            (["--data-dir", data, "--output", str(tmp_path / "o"), "--config", str(bad)],
             "unknown setting 'retention.minutes'"),
            (["--data-dir", data, "--output", str(tmp_path / "o"), "--now", "noon"], "--now 'noon'"),
            (["--data-dir", data, "--output", str(Path(data) / "audit")], "UsageError: --output "),
            (["--data-dir", data, "--output", str(tmp_path / "o"), "--segments", str(Path(data) / "segments")],
             "UsageError: --segments ")]:
        assert job.main(argv) == 2
        err = capsys.readouterr().err
        assert err.startswith("retention_audit.py: error: ") and message in err and err.count("\n") == 1, err


def test_append_refuses_a_delta_table_another_job_wrote_before_spark(datadir, tmp_path, capsys):
    """--mode append adds the columns a later kafkaseg added to the audit's own table, but a Delta table of other
    columns (a compacted table, an export given as --output by mistake) is not the audit's: appending audit rows
    to it would add 40 columns to it and mix the rows. Refused before Spark starts, nothing written."""
    from deltalake import DeltaTable

    from kafkaseg.compacted_table import compact_arrow
    from kafkaseg.errors import TableSchemaError

    manifest, config = datadir
    table = str(tmp_path / "compacted")
    compact_arrow([str(manifest.path)], table, options={"subscribe": "kept"})
    before = DeltaTable(table).version()
    for flag in ("--output", "--segments"):
        argv = ["--data-dir", str(manifest.path), "--mode", "append", "--output", str(tmp_path / "audit"),
                flag, table]
        with pytest.raises(TableSchemaError, match=rf"{table}: cannot append .* columns this job does not "
                                                       r"write: key, value, offset"):
            job.prepare(job.parse_args(argv))
        assert job.main(argv) == 2 and "TableSchemaError" in capsys.readouterr().err
    assert DeltaTable(table).version() == before and not (tmp_path / "audit").exists()
    # the audit's own table of an earlier kafkaseg (fewer columns) is still appended to
    from deltalake import write_deltalake

    old = job.PARTITION_SCHEMA.remove(job.PARTITION_SCHEMA.get_field_index("size_overdue_ms"))
    write_deltalake(str(tmp_path / "own"), old.empty_table())
    job.prepare(job.parse_args(["--data-dir", str(manifest.path), "--mode", "append", "--output",
                                str(tmp_path / "own")]))


def test_exit_status():
    clean = {"errors": [], "lagging_partitions": 0}
    assert job.exit_status(clean, True) == 0
    assert job.exit_status({**clean, "lagging_partitions": 2}, False) == 0
    assert job.exit_status({**clean, "lagging_partitions": 2}, True) == job.EXIT_OVERDUE
    assert job.exit_status({**clean, "errors": [{"partition": "t-0"}]}, False) == 1


@pytest.mark.spark
def test_job_end_to_end_writes_delta_tables(spark, datadir, tmp_path, capsys):
    manifest, config = datadir
    now = START + 7 * DAY + 6 * DAY  # records span ~14 days: about the older half of each "old" partition goes
    args = job.parse_args(["--data-dir", str(manifest.path), "--config", config, "--now", str(now),
                           "--output", str(tmp_path / "audit"), "--segments", str(tmp_path / "segments"),
                           "--tasks", "2"])
    result = job.run(spark, args)
    out = capsys.readouterr().out
    table = delta_dataset(str(tmp_path / "audit")).to_table().to_pylist()
    by = {(r["topic"], r["partition"]): r for r in table}
    assert set(by) == {("old", 0), ("old", 1), ("old", 2), ("kept", 0)}
    expected = _expected_deletions(manifest, now)
    assert all(0 < n < len(manifest.partition("old", p).segments) for (_, p), n in expected.items())
    for key, count in expected.items():
        row = by[key]
        assert row["deletable_segments"] == count == row["deletable_by_time"]
        pm = manifest.partition(*key)
        assert row["new_log_start_offset"] == pm.segments[count].base_offset
        assert row["deletable_bytes"] == sum(s.size for s in pm.segments[:count])
        assert row["retention_ms_source"] == "retention.ms from kafka default"
        assert row["overdue_ms"] == now - pm.segments[0].max_timestamp - 7 * DAY
    kept = by[("kept", 0)]
    assert kept["deletable_segments"] == 0 and kept["retention_ms"] == -1
    assert kept["retention_ms_source"].startswith("retention.ms from toml topic 'kept'")
    segments = delta_dataset(str(tmp_path / "segments")).to_table().to_pylist()
    assert len(segments) == sum(len(pm.segments) for pm in manifest.partitions.values())
    deleted = sum(1 for s in segments if s["deleted_by"] == "time")
    assert deleted == sum(expected.values()) == result["summary"]["deletable_segments"]
    assert f"retention would delete {deleted} segments" in out and "most overdue" in out
    # --mode error refuses the table now there
    with pytest.raises(FileExistsError):
        job.prepare(args)
    # a table an earlier kafkaseg wrote, without a column added since: an append adds it (null in earlier rows)
    # rather than committing rows whose new column every Delta reader would leave out
    from deltalake import write_deltalake

    older = str(tmp_path / "older")
    earlier = delta_dataset(str(tmp_path / "audit")).to_table()
    write_deltalake(older, earlier.drop_columns(["size_overdue_ms"]))
    job.run(spark, job.parse_args(["--data-dir", str(manifest.path), "--config", config, "--now", str(now),
                                   "--output", older, "--mode", "append"]))
    rows = delta_dataset(older).to_table()
    assert rows.num_rows == 2 * earlier.num_rows and "size_overdue_ms" in rows.column_names
    assert rows.column("size_overdue_ms").null_count >= earlier.num_rows  # (the earlier rows have none)


def test_summary_says_when_file_mtimes_bound_the_ages(datadir):
    """Audited now, the 2023 records of files just written are owed only since those writes (their mtimes): the
    stdout summary says how many partitions that bounds, and how to see past it, rather than a bare '0 partitions
    overdue'; audited at a time before the writes (``--now``), the mtimes bound nothing and it says nothing."""
    import io
    import time

    from kafkaseg.retention import audit, plan_audit, summarize
    from kafkaseg.topic_config import load_config_file

    manifest, config = datadir
    plan = plan_audit([str(manifest.path)], load_config_file(config))

    def summary_text(now_ms):
        summary = summarize([audit(pdir, cfg, now_ms) for pdir, cfg in plan.targets])
        out = io.StringIO()
        job.print_summary(summary, out)
        return summary, out.getvalue()

    old = sum(1 for topic, _ in manifest.partitions if topic == "old")  # "kept" has retention.ms -1
    summary, text = summary_text(int(time.time() * 1000))
    assert summary["lagging_partitions"] == 0 and summary["bounded_by_mtimes"] == old
    assert (f"{old} partitions' ages are bounded by file mtimes newer than their records" in text
            and "pass --now" in text and "notes" in text), text
    summary, text = summary_text(START + 17 * DAY)
    assert summary["bounded_by_mtimes"] == 0 and summary["lagging_partitions"] == old
    assert "mtimes" not in text, text
