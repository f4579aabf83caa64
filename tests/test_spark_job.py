"""jobs/export.py: the pure Arrow transform and argument parsing without Spark; the whole job on the session."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pytest

from jobs import export
from kafkaseg.schema import arrow_schema


def _batch(timestamps_ms):
    n = len(timestamps_ms)
    schema = arrow_schema()
    return pa.RecordBatch.from_pydict({
        "key": [b"k"] * n, "value": [None] * n, "topic": ["t"] * n, "partition": [0] * n, "offset": list(range(n)),
        "timestamp": pa.array([t * 1000 for t in timestamps_ms], pa.int64()).cast(pa.timestamp("us", tz="UTC")),
        "timestampType": [0] * n}, schema=schema)


def test_transform_adds_the_utc_date_and_keeps_every_column():
    # 2023-11-14T23:59:59.999Z, 2023-11-15T00:00:00Z, no timestamp (magic 0), a pre-1970 edge
    batch = _batch([1_700_006_399_999, 1_700_006_400_000, -1, -86_400_000])
    out = export.to_export_batch(batch)
    assert out.schema == export.export_schema(batch.schema)
    assert out.select(batch.schema.names).equals(batch)
    assert out.column("date").to_pylist() == [dt.date(2023, 11, 14), dt.date(2023, 11, 15), None,
                                              dt.date(1969, 12, 31)]
    assert list(export.export_batches(iter([batch.slice(0, 0), batch]))) == [out]


def test_offset_chunks_cover_the_range_exactly():
    assert export.offset_chunks(5, 14, 4) == [(5, 9), (9, 13), (13, 15)]
    assert export.offset_chunks(7, 7, 100) == [(7, 8)]
    chunks = export.offset_chunks(0, 999, 7)
    assert sum(hi - lo for lo, hi in chunks) == 1000 and all(a[1] == b[0] for a, b in zip(chunks, chunks[1:]))


def test_chunks_group_small_partitions_and_split_big_ones():
    summary = [("b", 0, 10, 0, 9), ("a", 1, 40, 0, 39), ("a", 0, 30, 5, 34), ("a", 2, 250, 0, 299), ("a", 3, 50, 0, 49)]
    assert export.plan_chunks(summary, 100) == [
        ("a", (0, 1), None, None), ("a", (2,), 0, 100), ("a", (2,), 100, 200), ("a", (2,), 200, 300),
        ("a", (3,), None, None), ("b", (0,), None, None)]


def test_arguments():
    args = export.parse_args(["--sample", "--work-dir", "/tmp/w", "--format", "parquet"])
    assert (args.output, args.mode, args.partition_by) == ("/tmp/w/sample-parquet", "overwrite", ["topic"])
    args = export.parse_args(["--data-dir", "/a", "--data-dir", "/b", "--output", "/o", "--option",
                              "kafka.isolation.level=read_committed", "--partition-by", ""])
    assert args.data_dir == ["/a", "/b"] and args.mode == "error" and args.partition_by == []
    assert args.options == {"kafka.isolation.level": "read_committed"}
    for bad in (["--data-dir", "/a"], ["--sample", "--option", "novalue"], ["--sample", "--data-dir", "/a"]):
        with pytest.raises(SystemExit):
            export.parse_args(bad)


@pytest.mark.spark
def test_sample_job_writes_delta_and_parquet_tables_matching_the_manifest(spark, tmp_path):
    from deltalake import DeltaTable
    import pyarrow.dataset as ds

    result = export.run(spark, export.parse_args(["--sample", "--work-dir", str(tmp_path), "--chunk-records", "2500"]))
    manifest = result["manifest"]
    expected = sorted((t, p, r.offset, r.key, r.value) for (t, p), pm in manifest.partitions.items()
                      for r in pm.data_records())
    assert [(t, p, n) for t, p, n, _, _ in result["summary"]] == [
        (t, p, len(pm.data_records())) for (t, p), pm in sorted(manifest.partitions.items())]
    table = DeltaTable(result["output"]).to_pyarrow_table()
    got = sorted(zip(*(table.column(c).to_pylist() for c in ("topic", "partition", "offset", "key", "value"))))
    assert got == expected
    assert table.schema.field("date").type == pa.date32()

    parquet = export.run(spark, export.parse_args(["--data-dir", result["paths"][0], "--output", str(tmp_path / "pq"),
                                                   "--format", "parquet", "--option", "subscribe=orders,clicks"]))
    pq = ds.dataset(parquet["output"], format="parquet", partitioning="hive").to_table()
    assert sorted(zip(*(pq.column(c).to_pylist() for c in ("topic", "partition", "offset", "key", "value")))) \
        == [row for row in expected if row[0] in ("orders", "clicks")]
