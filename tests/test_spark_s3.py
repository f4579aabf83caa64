"""The Spark source on ``s3://`` data dirs (moto's S3 server on a loopback port, as tests/test_storage_s3.py runs it):
what docs/storage.md's "Data dirs on S3" says the Spark source does, checked in Spark rather than by hand. The
credentials go in the URI so the executors (Python workers started by the session's JVM, whose environment may
predate the server's) get them with each slice, as docs/storage.md says."""

from __future__ import annotations

import pyarrow.fs as pafs
import pytest

from kafkaseg.spark import plan_report
from tests import test_storage_s3
from tests.test_storage_s3 import BUCKET, PREFIX

s3_server = test_storage_s3.s3  # the module's moto server fixture, as a fixture of this module too

COLUMNS = ["topic", "partition", "offset", "timestamp", "timestampType", "key", "value", "headers"]


def _with_keys(uri: str) -> str:
    return uri.replace("s3://", "s3://testing:testing@")


def _same_rows(got, expected) -> int:
    got, expected = got.select(*COLUMNS), expected.select(*COLUMNS)
    assert got.count() == expected.count()
    assert got.exceptAll(expected).count() == 0 and expected.exceptAll(got).count() == 0
    return got.count()


def test_spark_reads_streams_and_fails_on_s3_as_on_disk(s3_server, spark, tmp_path):
    s3 = s3_server
    read = spark.read.format("kafkaseg").option("includeHeaders", "true")
    local = read.load(s3.local)
    # a batch read, and a pushed-down one that plans only the partition's segments it needs
    assert _same_rows(read.load(_with_keys(s3.uri())), local) == local.count() > 0
    where = "topic = 'orders' AND partition = 1 AND offset BETWEEN 300 AND 599"
    pushed = read.option("filterPushdown", "true").load(_with_keys(s3.uri()))
    assert _same_rows(pushed.where(where), local.where(where)) == 300
    report = plan_report(pushed)
    everything = read.option("filterPushdown", "false").load(_with_keys(s3.uri()))
    assert everything.where(where).count() == 300
    assert 0 < report.segments_planned < plan_report(everything).segments_planned

    # a stream from a prefix that receives new objects between triggers (a sync uploading partition folders)
    client = pafs.S3FileSystem(endpoint_override=s3.endpoint, scheme="http")
    grown = "spark-grown/data"  # (moto keeps buckets per process: not under PREFIX's folder, which other tests list)
    for name in ("meta.properties", "replication-offset-checkpoint", "recovery-point-offset-checkpoint",
                 "log-start-offset-checkpoint"):
        pafs.copy_files(f"{s3.local}/{name}", f"{BUCKET}/{grown}/{name}", destination_filesystem=client)
    pafs.copy_files(f"{s3.local}/orders-0", f"{BUCKET}/{grown}/orders-0", destination_filesystem=client)

    def run_stream() -> int:
        query = (spark.readStream.format("kafkaseg").option("startingOffsets", "earliest")
                 .option("includeHeaders", "true").option("maxOffsetsPerTrigger", 500)
                 .load(_with_keys(s3.uri(prefix=grown)))
                 .writeStream.format("parquet").option("path", str(tmp_path / "sink"))
                 .option("checkpointLocation", str(tmp_path / "checkpoint")).trigger(availableNow=True).start())
        assert query.awaitTermination(300)
        assert query.exception() is None
        return spark.read.parquet(str(tmp_path / "sink")).count()

    assert run_stream() == local.where("topic = 'orders' AND partition = 0").count()
    for folder in ("orders-1", "payments-0"):
        pafs.copy_files(f"{s3.local}/{folder}", f"{BUCKET}/{grown}/{folder}", destination_filesystem=client)
    run_stream()
    _same_rows(spark.read.parquet(str(tmp_path / "sink")),
               local.where("(topic = 'orders' AND partition IN (0, 1)) OR (topic = 'payments' AND partition = 0)"))

    # a missing bucket, a prefix holding no log dir: the driver's error is kafkaseg's, naming the path
    for uri, message in ((s3.uri(bucket="no-such-bucket"), f"BadPathError: no-such-bucket/{PREFIX}: no such file"),
                         (s3.uri(prefix="other"), f"LayoutError: {BUCKET}/other: neither a Kafka log dir")):
        with pytest.raises(Exception, match=message):
            read.load(_with_keys(uri)).count()
    assert not [r for r in s3.take() if r.method not in ("GET", "HEAD") and not r.key.startswith(f"{BUCKET}/{grown}")]
