"""How long a Delta table's killed runs' Spark ``_temporary`` folders are left before a committing run removes
them (kafkaseg.spark.tables.abandoned_after_s / remove_abandoned_writes), without Spark."""

from __future__ import annotations

import math
import os
import time

import pyarrow as pa

from kafkaseg.spark import tables

WEEK = 7 * 86400


def _retention(text):
    return tables.abandoned_after_s({"delta.deletedFileRetentionDuration": text})


def test_a_short_retention_never_lets_a_commit_remove_a_concurrent_runs_temporary_folder(tmp_path):
    """A table whose deletedFileRetentionDuration was set short for VACUUM ("interval 0 hours" is common in
    development setups) must not make every commit remove the Spark _temporary folder of a run writing right now:
    the cleanup runs unattended, so it waits at least Delta's default week."""
    from deltalake import write_deltalake

    output = tmp_path / "table"
    write_deltalake(str(output), pa.table({"offset": pa.array([], pa.int64())}))
    started = time.time() - 120  # a concurrent run, two minutes in, whose tasks are sorting before they write
    name = f"kafkaseg-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime(started))}-0000abcd"
    attempt = output / name / "_temporary" / "0" / "_temporary" / "attempt_1"
    attempt.mkdir(parents=True)
    (attempt / "part-00000.parquet").write_bytes(b"x")
    for path in [output / name, *(output / name).rglob("*")]:
        os.utime(path, (started, started))
    for text in ("interval 0 hours", "interval 1 seconds", "interval 1 hour"):
        assert tables.remove_abandoned_writes(str(output), time.time(), _retention(text)) == []
        assert (attempt / "part-00000.parquet").exists()
    assert _retention("interval 0 hours") == WEEK


def test_retentions_longer_than_a_week_that_delta_reads_are_kept():
    """Delta reads the property as a Spark interval: with or without the word interval, several units summed.
    A week is never taken for a longer retention, and a value not read waits forever (nothing is removed)."""
    assert _retention("interval 30 days") == 30 * 86400
    assert _retention("interval 2 weeks 3 days") == 17 * 86400
    assert _retention("INTERVAL 1 WEEK 12 HOURS") == WEEK + 12 * 3600
    assert _retention("14 days") == 14 * 86400
    assert _retention("interval 1 month") == math.inf  # not read: nothing removed rather than a week too early
    assert _retention("soon") == math.inf
    assert tables.abandoned_after_s(None) == WEEK and tables.abandoned_after_s({}) == WEEK


def test_a_folder_named_like_a_run_with_an_impossible_time_is_left_alone(tmp_path):
    """The cleanup runs after the commit: a folder whose name matches a run folder's digits but is no time (month
    13) must be passed over, not fail the job that just committed."""
    from deltalake import write_deltalake

    output = tmp_path / "table"
    write_deltalake(str(output), pa.table({"offset": pa.array([], pa.int64())}))
    for name in ("kafkaseg-20241301T000000Z-0000abcd", "kafkaseg-00000000T000000-0000abcd"):
        (output / name / "_temporary").mkdir(parents=True)
    assert tables.remove_abandoned_writes(str(output), time.time(), WEEK) == []
    assert (output / "kafkaseg-20241301T000000Z-0000abcd" / "_temporary").is_dir()


def test_files_under_a_hidden_folder_of_a_run_are_never_committed(tmp_path):
    """Spark leaves a task's attempt files under _temporary when its cleanup fails and is ignored; committing them
    would make a later cleanup of that folder delete data a version references (found in review). Partition
    folders count whatever their first character."""
    import pyarrow.parquet as pq

    run = tmp_path / "table" / "kafkaseg-20261123T000000Z-0000abcd"
    for folder in ["date=2026-11-23", "_day=1", "_temporary/0/_temporary/attempt_1/date=2026-11-23",
                   ".spark-staging-1/date=2026-11-23"]:
        (run / folder).mkdir(parents=True)
        pq.write_table(pa.table({"offset": pa.array([1], pa.int64())}), run / folder / "part-00000.parquet")
    actions = tables.delta_add_actions(str(tmp_path / "table"), run.name, ["date"])
    assert sorted(a.path for a in actions) == [f"{run.name}/_day=1/part-00000.parquet",
                                                f"{run.name}/date=2026-11-23/part-00000.parquet"]


def test_a_cleanup_that_cannot_read_the_table_warns_and_never_fails_the_committed_run(tmp_path, capsys):
    """compact.py reopened the table after its commit to look for leftovers, and a deltalake error there failed a
    run whose data was committed (found in review)."""
    assert tables.remove_abandoned_after_commit(str(tmp_path / "no-table")) == []
    assert "were not looked for" in capsys.readouterr().err
