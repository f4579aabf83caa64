"""``spark.readStream.format("kafkaseg")`` end to end in local Spark: a query with a checkpoint follows a log dir
that grows, in rate-limited micro-batches, and fails on data loss. The rules themselves are tested without a JVM
in test_streaming.py; this checks that PySpark's streaming runner drives them as intended (admission control,
Trigger.AvailableNow, offsets in the checkpoint in Spark's Kafka form, executors' reads)."""

from __future__ import annotations

import importlib.util
import json
import shutil

import pytest

from kafkaseg.storage.checkpoints import read_offset_checkpoint
from kafkaseg.streaming import LEADER_EPOCHS, TOPIC_IDS, from_offsets
from kafkaseg.testing import TopicSpec, write_data_dir
from kafkaseg.testing.partition import write_offset_checkpoint

TOPICS = [
    TopicSpec("a", partitions=2, records_per_partition=500, records_per_batch=20, segment_bytes=16 * 1024,
              headers=1),
    TopicSpec("b", records_per_partition=300, codec="zstd", segment_bytes=8 * 1024),
]
COLUMNS = ["topic", "partition", "offset", "key", "value", "timestamp"]

#: PySpark 4.2+ hands Python streaming sources read limits (maxOffsetsPerTrigger, Trigger.AvailableNow); 4.1 has no
#: such API, and its triggers read all that is available (README)
def plain(offsets: dict) -> dict:
    """Offsets without the topic ids and leader epochs they were taken from."""
    return {topic: partitions for topic, partitions in offsets.items() if not topic.startswith("@")}


_READ_LIMITS = importlib.util.find_spec("pyspark.sql.streaming.datasource") is not None


def _run(spark, root, checkpoint, out, **options):
    reader = spark.readStream.format("kafkaseg").option("startingOffsets", "earliest")
    for key, value in options.items():
        reader = reader.option(key, value)
    query = (reader.load(str(root)).writeStream.format("parquet").option("path", str(out))
             .option("checkpointLocation", str(checkpoint)).trigger(availableNow=True).start())
    query.awaitTermination(300)
    return query


def test_a_stream_follows_a_growing_dir_once_and_fails_on_data_loss(spark, tmp_path):
    root, other = tmp_path / "data", tmp_path / "other"
    write_data_dir(root, TOPICS, seed=11)
    write_data_dir(other, [TopicSpec("c", records_per_partition=80)], seed=12)
    full = read_offset_checkpoint(str(root / "replication-offset-checkpoint"))
    write_offset_checkpoint(root / "replication-offset-checkpoint", {tp: hw // 2 for tp, hw in full.items()})
    checkpoint, out = tmp_path / "checkpoint", tmp_path / "out"

    first = _run(spark, root, checkpoint, out, maxOffsetsPerTrigger=200)
    rows = [p["numInputRows"] for p in first.recentProgress]
    assert sum(rows) == sum(hw // 2 for hw in full.values())
    if _READ_LIMITS:  # PySpark 4.1 runs Trigger.AvailableNow as one batch of everything available
        assert len(rows) > 1 and max(rows) <= 200 + 3

    # the broker writes on: the high watermark moves up, a new topic's partition appears
    shutil.move(str(other / "c-0"), str(root / "c-0"))
    write_offset_checkpoint(root / "replication-offset-checkpoint", {**full, ("c", 0): 80})
    second = _run(spark, root, checkpoint, out, maxOffsetsPerTrigger=200)
    assert sum(p["numInputRows"] for p in second.recentProgress) == sum(full.values()) - sum(rows) + 80

    streamed = spark.read.parquet(str(out)).select(*COLUMNS)
    batch = spark.read.format("kafkaseg").load(str(root)).select(*COLUMNS)
    assert streamed.count() == batch.count() == sum(full.values()) + 80
    assert streamed.exceptAll(batch).count() == 0 and batch.exceptAll(streamed).count() == 0

    # the offset log holds Spark's Kafka source offsets, and the topic ids they were taken from
    offsets_files = sorted((checkpoint / "offsets").glob("[0-9]*"), key=lambda p: int(p.name))
    last = json.loads(offsets_files[-1].read_text().splitlines()[-1])
    ids, epochs = last.pop(TOPIC_IDS), last.pop(LEADER_EPOCHS)
    assert last == {"a": {"0": full[("a", 0)], "1": full[("a", 1)]}, "b": {"0": full[("b", 0)]}, "c": {"0": 80}}
    assert sorted(ids) == ["a", "b", "c"] and len(set(ids.values())) == 3
    # the leader epoch of each partition's last batch read, and where that batch ends
    assert epochs == {"a": {"0": [0, full[("a", 0)]], "1": [0, full[("a", 1)]]}, "b": {"0": [0, full[("b", 0)]]},
                      "c": {"0": [0, 80]}}

    # a partition the query was reading disappears: failOnDataLoss (the default) stops the query, naming it
    shutil.rmtree(root / "b-0")
    with pytest.raises(Exception, match="b-0 is gone"):
        _run(spark, root, checkpoint, out)


def test_a_stream_that_reaches_a_log_end_missing_acknowledged_offsets_says_the_loss(spark, tmp_path):
    """The high watermark and the recovery point above where the files end (tests/lost_tail_data.py): the micro-batch
    that reads to the log end fails the query under failOnDataLoss, as a batch read to latest fails (Spark's Kafka
    source fails a query on data loss); with failOnDataLoss=false it reads what is there and goes on."""
    from tests.lost_tail_data import LOST_FROM, lost_tail_copy

    root = tmp_path / "data"
    lost_tail_copy(root, "hwrp")
    with pytest.raises(Exception, match=r"offsets \[270, 300\) were acknowledged and flushed"):
        _run(spark, root, tmp_path / "strict", tmp_path / "strict-out")
    lenient = _run(spark, root, tmp_path / "checkpoint", tmp_path / "out", failOnDataLoss="false")
    assert lenient.exception() is None
    assert sum(p["numInputRows"] for p in lenient.recentProgress) == LOST_FROM
    offsets = sorted(r.offset for r in spark.read.parquet(str(tmp_path / "out")).select("offset").collect())
    assert offsets == list(range(LOST_FROM))


def test_a_stream_started_at_a_log_end_missing_acknowledged_offsets_says_the_loss(spark, tmp_path):
    """Started at latest, the log end there, the stream has no micro-batch to read to it, but a batch read from
    there to latest raises the DataLossError of the offsets lost past it: the query fails under failOnDataLoss (its
    first latestOffset raises), and with failOnDataLoss=false it logs the loss and goes on, reading nothing."""
    from tests.lost_tail_data import lost_tail_copy

    root = tmp_path / "data"
    lost_tail_copy(root, "hwrp")
    with pytest.raises(Exception, match=r"offsets \[270, 300\) were acknowledged and flushed"):
        _run(spark, root, tmp_path / "strict", tmp_path / "strict-out", startingOffsets="latest")
    lenient = _run(spark, root, tmp_path / "checkpoint", tmp_path / "out", startingOffsets="latest",
                   failOnDataLoss="false")
    assert lenient.exception() is None
    assert sum(p["numInputRows"] for p in lenient.recentProgress) == 0


def test_the_stream_reader_says_a_lost_log_end_it_stands_at_once(tmp_path, caplog):
    """No JVM: the reader as PySpark's streaming runner calls it, started at latest on a log end past which the high
    watermark and recovery point say offsets were acknowledged and flushed: latestOffset raises the DataLossError a
    batch read from there raises, or with failOnDataLoss=false logs it, at the first trigger only."""
    from kafkaseg.errors import DataLossError
    from kafkaseg.spark.source import KafkaSegStreamReader, read_options
    from tests.lost_tail_data import LOST_FROM, lost_tail_copy

    root = tmp_path / "data"
    lost_tail_copy(root, "hwrp")

    def reader(**options):
        return KafkaSegStreamReader(read_options({"path": str(root), "startingOffsets": "latest", **options},
                                                 stream=True))

    strict = reader()
    start = strict.initialOffset()
    with pytest.raises(DataLossError, match=r"offsets \[270, 300\) were acknowledged and flushed"):
        strict.latestOffset(start)
    lenient = reader(failOnDataLoss="false")
    start = lenient.initialOffset()
    with caplog.at_level("WARNING", logger="kafkaseg.spark"):
        for _ in range(3):
            assert lenient.latestOffset(start) == start
    said = [r.getMessage() for r in caplog.records if "were acknowledged and flushed" in r.getMessage()]
    assert len(said) == 1 and "data loss" in said[0] and from_offsets(start) == {("t", 0): LOST_FROM}

    # PySpark 4.1's runner asks latestOffset() with no start before initialOffset() on a new query (found by CI's
    # 4.1.4 run: the query started at latest ended without a word): said by initialOffset there
    strict = reader()
    strict.latestOffset()
    with pytest.raises(DataLossError, match=r"offsets \[270, 300\) were acknowledged and flushed"):
        strict.initialOffset()
    caplog.clear()
    lenient = reader(failOnDataLoss="false")
    with caplog.at_level("WARNING", logger="kafkaseg.spark"):
        lenient.latestOffset()
        start = lenient.initialOffset()
        for _ in range(3):
            assert lenient.latestOffset() == start
    said = [r.getMessage() for r in caplog.records if "were acknowledged and flushed" in r.getMessage()]
    assert len(said) == 1 and "data loss" in said[0]


def test_the_stream_reader_maps_spark_read_limits_onto_the_options(tmp_path):
    """No JVM: the reader as PySpark's streaming runner calls it (getDefaultReadLimit, latestOffset with each
    ReadLimit, the 4.1 runner's argument-less latestOffset, reportLatestOffset)."""
    from kafkaseg.spark.source import KafkaSegStreamReader, read_options

    root = tmp_path / "data"
    write_data_dir(root, [TopicSpec("a", partitions=2, records_per_partition=100, records_per_batch=5)], seed=2)

    def reader(**options):
        return KafkaSegStreamReader(read_options({"path": str(root), "startingOffsets": "earliest", **options},
                                                 stream=True))

    assert from_offsets(reader(maxOffsetsPerTrigger=10).latestOffset()) == {("a", 0): 100, ("a", 1): 100}  # 4.1
    if not _READ_LIMITS:
        pytest.skip("read limits for Python streaming sources came with PySpark 4.2 (4.1's call checked above)")
    from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxRows, ReadMinRows

    assert reader().getDefaultReadLimit() == ReadAllAvailable()
    assert reader(maxOffsetsPerTrigger=30).getDefaultReadLimit() == ReadMaxRows(30)
    assert reader(minOffsetsPerTrigger=30).getDefaultReadLimit() == ReadMinRows(30)
    assert reader(minOffsetsPerTrigger=30, maxOffsetsPerTrigger=50).getDefaultReadLimit() == ReadMaxRows(50)

    both = reader(minOffsetsPerTrigger=40, maxOffsetsPerTrigger=50)
    start = both.initialOffset()
    assert plain(start) == {"a": {"0": 0, "1": 0}}
    assert plain(both.latestOffset(start, ReadMaxRows(50))) == {"a": {"0": 25, "1": 25}}  # the first trigger runs
    both.planner.last_trigger_ms = both.planner.clock()  # a batch just ran and 200 offsets are pending...
    assert plain(both.latestOffset(start, ReadMaxRows(50))) == {"a": {"0": 25, "1": 25}}  # ...over the min: runs
    few = {"a": {"0": 90, "1": 90}}  # 20 pending, under the options' min (Spark passes it with the max)
    assert both.latestOffset(few, ReadMaxRows(50)) == few
    assert plain(both.latestOffset(few, ReadMinRows(10))) == {"a": {"0": 100, "1": 100}}  # the engine's own min
    assert plain(both.latestOffset(few, ReadAllAvailable())) == {"a": {"0": 100, "1": 100}}  # Trigger.Once etc.
    assert plain(both.reportLatestOffset()) == {"a": {"0": 100, "1": 100}}


def test_the_stream_reader_behind_retention_logs_each_lost_offset_once(tmp_path, caplog):
    """No JVM: the reader as PySpark's streaming runner calls it (latestOffset with maxOffsetsPerTrigger's limit,
    then partitions), on a stream that retention overtook: it creeps through the deleted offsets at the limit
    (Spark's rateLimit), and its warnings name each lost offset once (a warning a micro-batch, each from the batch's
    start to the log start, before)."""
    import re

    from kafkaseg.spark.source import KafkaSegStreamReader, read_options

    if not _READ_LIMITS:
        pytest.skip("read limits for Python streaming sources came with PySpark 4.2")
    from pyspark.sql.streaming.datasource import ReadMaxRows

    root = tmp_path / "data"
    write_data_dir(root, TOPICS[:1], seed=4)
    folder = root / "a-0"
    bases = sorted(int(log.stem) for log in folder.glob("*.log"))
    assert len(bases) > 3
    reader = KafkaSegStreamReader(read_options({"path": str(root), "startingOffsets": "earliest", "assign":
                                                '{"a":[0]}', "failOnDataLoss": "false", "maxOffsetsPerTrigger": 25},
                                               stream=True))
    start = reader.initialOffset()
    for log in folder.glob("*.log"):  # retention deletes the first two segments
        if int(log.stem) < bases[2]:
            for suffix in (".log", ".index", ".timeindex", ".snapshot"):
                log.with_suffix(suffix).unlink(missing_ok=True)
    write_offset_checkpoint(root / "log-start-offset-checkpoint", {("a", 0): bases[2]})
    batches = 0
    with caplog.at_level("WARNING", logger="kafkaseg.spark"):
        while batches < 100:
            end = reader.latestOffset(start, ReadMaxRows(25))
            if end == start:
                break
            reader.partitions(start, end)
            reader.commit(end)
            start, batches = end, batches + 1
    said = [r.getMessage() for r in caplog.records if "data loss" in r.getMessage()]
    named = [(int(a), int(b)) for words in said for a, b in re.findall(r"\[(\d+), (\d+)\)", words)]
    assert batches > bases[2] // 25 and len(said) == 1 and named == [(0, bases[2])]


def test_options_no_read_accepts_are_refused_with_both_reasons():
    """No JVM: load() does not say which kind of read follows, so the schema takes options either kind accepts;
    options neither accepts name both reasons."""
    from kafkaseg.errors import InvalidOptionError
    from kafkaseg.spark.source import KafkaSegDataSource

    assert KafkaSegDataSource({"startingOffsets": "latest"}).schema()  # a stream's
    assert KafkaSegDataSource({"endingOffsets": "latest"}).schema()  # a batch's
    with pytest.raises(InvalidOptionError, match=r"batch read .*startingOffsets.* streaming read .*endingOffsets"):
        KafkaSegDataSource({"startingOffsets": "latest", "endingOffsets": "latest"}).schema()


def test_lenient_planning_decisions_are_logged_and_in_the_read_metrics(tmp_path, monkeypatch, caplog):
    """No JVM: an unreadable replication-offset-checkpoint under onCorruption=skip (the read falls back to the log
    end) is logged by planning as data loss is, listed in the scan report's read_metrics(), and logged once per
    stream, not at every micro-batch (found in review: it was only a plan note)."""
    from kafkaseg.spark import reports
    from kafkaseg.spark.source import KafkaSegReader, KafkaSegStreamReader, read_options

    monkeypatch.setenv(reports.REPORT_DIR_ENV, str(tmp_path / "reports"))
    root = tmp_path / "data"
    write_data_dir(root, [TopicSpec("a", records_per_partition=100, records_per_batch=5)], seed=2)
    (root / "replication-offset-checkpoint").write_text("0\n1\na 0 1x0\n")
    options = {"path": str(root), "onCorruption": "skip"}
    with caplog.at_level("INFO", logger="kafkaseg.spark"):
        KafkaSegReader(read_options(options)).partitions()
    said = [r for r in caplog.records if "replication-offset-checkpoint: unreadable" in r.getMessage()]
    assert len(said) == 1 and said[0].levelname == "WARNING"
    [decision] = reports.last_plan_report().read_metrics()["lenient_decisions"]
    assert decision.partition == "a-0" and decision.path == str(root / "replication-offset-checkpoint")

    caplog.clear()
    stream = KafkaSegStreamReader(read_options({**options, "startingOffsets": "earliest"}, stream=True))
    start = stream.initialOffset()
    with caplog.at_level("INFO", logger="kafkaseg.spark"):
        stream.partitions(start, {"a": {"0": 50}})
        stream.partitions({"a": {"0": 50}}, {"a": {"0": 100}})
    assert sum("replication-offset-checkpoint: unreadable" in r.getMessage() for r in caplog.records) == 1


def test_a_corrupt_batch_skipped_by_a_partition_read_is_logged_with_its_file_and_byte(tmp_path, monkeypatch,
                                                                                      caplog):
    """No JVM: read() of an input partition logs each corrupt batch onCorruption=skip skips, as it logs truncated
    tails (found in review: a stream's skips were in no log, and its reports are pruned after KEEP_SCANS scans)."""
    import kafkaseg
    from kafkaseg.spark import reports
    from kafkaseg.spark.source import KafkaSegReader, read_options

    monkeypatch.setenv(reports.REPORT_DIR_ENV, str(tmp_path / "reports"))
    root = tmp_path / "data"
    write_data_dir(root, [TopicSpec("a", records_per_partition=100, records_per_batch=5)], seed=2)
    row = next(r for r in kafkaseg.read_arrow(str(root), includeMetadata="true").to_pylist() if r["offset"] == 42)
    log = root / "a-0" / row["segment"].rsplit("/", 1)[-1]
    data = bytearray(log.read_bytes())
    data[row["position"] + 70] ^= 1
    log.write_bytes(bytes(data))
    reader = KafkaSegReader(read_options({"path": str(root), "onCorruption": "skip"}))
    with caplog.at_level("INFO", logger="kafkaseg.spark"):
        for partition in reader.partitions():
            list(reader.read(partition))
    said = [r for r in caplog.records if f"{row['segment']} at byte {row['position']}" in r.getMessage()]
    assert len(said) == 1 and said[0].levelname == "WARNING" and "onCorruption=skip" in said[0].getMessage()


def test_pyspark_41s_argumentless_latest_offset_knows_where_the_stream_is(tmp_path):
    """No JVM: PySpark 4.1's runner calls latestOffset() without a start, and the source planned from nothing: a
    start above the high watermark read the offsets below it (found in review). The reader keeps its position
    (initial offsets, then each batch's end) for such calls."""
    from kafkaseg.spark.source import KafkaSegStreamReader, read_options

    root = tmp_path / "data"
    write_data_dir(root, [TopicSpec("t", records_per_partition=150, records_per_batch=10)], seed=2)
    write_offset_checkpoint(root / "replication-offset-checkpoint", {("t", 0): 100})  # followers behind
    reader = KafkaSegStreamReader(read_options({"path": str(root), "startingOffsets": '{"t":{"0":120}}'},
                                               stream=True))
    start = reader.initialOffset()
    assert from_offsets(start) == {("t", 0): 120}
    assert reader.latestOffset() == start  # waits at 120 as a consumer's fetch does; it read back from 100
    write_offset_checkpoint(root / "replication-offset-checkpoint", {("t", 0): 150})
    end = reader.latestOffset()
    assert plain(end) == {"t": {"0": 150}}
    rows = [o for p in reader.partitions(start, end) for b in reader.read(p) for o in b.column("offset").to_pylist()]
    assert rows == list(range(120, 150))
    reader.commit(end)
    assert reader.latestOffset() == end


def test_a_refused_stream_option_is_the_error_pyspark_s_runner_reports(tmp_path):
    """No JVM: PySpark's streaming runner (python_streaming_source_runner.py, 4.3) creates the reader inside
    ``try: reader = streamReader(...) ... finally: reader.stop()``, so an error raised by streamReader() itself was
    followed by ``UnboundLocalError: cannot access local variable 'reader'``, the last line of the query's
    exception, under the option's refusal (found in a user pass). The refusal is raised by the reader's first call."""
    from kafkaseg.errors import InvalidOptionError
    from kafkaseg.spark.source import KafkaSegDataSource

    root = tmp_path / "data"
    write_data_dir(root, [TopicSpec("a", records_per_partition=10)], seed=2)
    for option, first_call, said in (({"endingOffsets": "latest"}, "initialOffset", "'endingOffsets' is not valid"),
                                     ({"replicas": "all"}, "latestOffset", "replicas"),
                                     ({"endingTimestamp": "1"}, "getDefaultReadLimit", "'endingTimestamp' is not")):
        source = KafkaSegDataSource({"path": str(root), **option})
        schema = source.schema()
        with pytest.raises(InvalidOptionError, match=said):
            try:  # the runner's own shape
                reader = source.streamReader(schema)
                getattr(reader, first_call)()
            finally:
                reader.stop()


def test_a_refused_stream_option_fails_a_real_query_naming_the_option(spark, tmp_path):
    """The same through a JVM (the test above copies PySpark 4.3's runner shape; CI also runs this file on 4.1):
    the query's exception ends with the refusal, and no ``UnboundLocalError`` of the runner's follows it."""
    from pyspark.errors import StreamingQueryException

    root = tmp_path / "data"
    write_data_dir(root, [TopicSpec("a", records_per_partition=10)], seed=2)
    with pytest.raises(StreamingQueryException) as caught:
        _run(spark, root, tmp_path / "checkpoint", tmp_path / "out", endingOffsets="latest")
    message = str(caught.value)
    assert "'endingOffsets' is not valid in streaming queries" in message
    assert "UnboundLocalError" not in message


@pytest.mark.spark
@pytest.mark.skipif(not _READ_LIMITS, reason="PySpark 4.2+ (Trigger.AvailableNow for Python sources)")
def test_a_restarted_available_now_query_past_a_compaction_gap_stands_then_reads_on(spark, tmp_path):
    """A compacted follower's copy read to 100 by an AvailableNow query; a leader change moves its high watermark
    back to 80, into the gap before the last batch. Restarted from its checkpoint, the query used to fail with
    SkippedOffsetsError: PySpark calls prepareForTriggerAvailableNow before the reader learns the checkpoint's
    position, the evidence that the log reached 100. Now the run reads nothing and ends; once the high watermark
    passes 100 again, the next run reads the new records."""
    from tests.test_carried_edges import _gap_follower
    from kafkaseg.testing import Record, build_batch_v2

    root, checkpoint, out = tmp_path / "data", tmp_path / "ck", tmp_path / "out"
    _gap_follower(root, 100, stopped=False)
    options = {"failOnDataLoss": "false"}
    assert _run(spark, root, checkpoint, out, **options).exception() is None
    assert sorted(r.offset for r in spark.read.parquet(str(out)).collect()) == [*range(50), *range(95, 100)]
    write_offset_checkpoint(root / "replication-offset-checkpoint", {("t", 0): 80})
    query = _run(spark, root, checkpoint, out, **options)
    assert query.exception() is None, query.exception()
    assert spark.read.parquet(str(out)).count() == 55
    with open(root / "t-0" / f"{0:020d}.log", "ab") as f:
        f.write(build_batch_v2([Record(o, 1_700_000_000_000 + o, b"k%d" % o, b"v") for o in range(100, 105)]).data)
    write_offset_checkpoint(root / "replication-offset-checkpoint", {("t", 0): 105})
    assert _run(spark, root, checkpoint, out, **options).exception() is None
    assert sorted(r.offset for r in spark.read.parquet(str(out)).collect())[-6:] == [99, 100, 101, 102, 103, 104]


@pytest.mark.spark
@pytest.mark.skipif(not _READ_LIMITS, reason="PySpark 4.2+: PySpark 4.1 calls latestOffset() without the start, so "
                    "a restarted reader learns its position only in partitions(), after the end is fixed, and "
                    "cannot write @readFrom (there the rewrite is DataLossError, or re-read with failOnDataLoss=false)")
def test_a_query_past_the_high_watermark_reads_again_what_a_follower_truncation_rewrote(spark, tmp_path):
    """An AvailableNow query with upperBound=logEndOffset reads t-0 to its log end (200, high watermark 100). A
    follower truncation at 150 and the new leader's records (150..219, a new leader epoch) follow. Restarted from its
    checkpoint, the query reads the partition again from the cut (the end in its offset log says so, @readFrom),
    not from 200, and does not fail on data loss: the records replaced were past the high watermark recorded with
    the position (@highWatermarks), never acknowledged."""
    from kafkaseg.streaming import HIGH_WATERMARKS, READ_FROM
    from tests.test_rewritten_tail import _new_leader_rewrites, epoch_partition

    root, checkpoint, out = tmp_path / "data", tmp_path / "ck", tmp_path / "out"
    log = epoch_partition(root)
    assert _run(spark, root, checkpoint, out, upperBound="logEndOffset").exception() is None
    _new_leader_rewrites(log, 150, 220)
    query = _run(spark, root, checkpoint, out, upperBound="logEndOffset")
    assert query.exception() is None, query.exception()
    rows = [(r.offset, bytes(r.value)[:3]) for r in spark.read.parquet(str(out)).select("offset", "value").collect()]
    assert sorted(o for o, v in rows if v == b"g1-") == list(range(150, 220))
    assert sorted(o for o, v in rows if v == b"g0-") == list(range(200))
    offsets_files = sorted((checkpoint / "offsets").glob("[0-9]*"), key=lambda p: int(p.name))
    last = json.loads(offsets_files[-1].read_text().splitlines()[-1])
    assert last[READ_FROM] == {"t": {"0": 150}} and last["t"] == {"0": 220}
    assert last[HIGH_WATERMARKS] == {"t": {"0": 100}}


def test_the_stream_reader_warns_of_a_rewritten_tail_and_reads_again_from_the_cut(tmp_path, caplog):
    """No JVM: the reader as PySpark's runner and an executor call it, upperBound=logEndOffset, the truncation at 150
    and the new leader's records landing between partitions() and read(): the executor warns that the slice ended
    at a rewrite (information before, though its records up to the end were then never read), and the next
    micro-batch reads again from the cut, the driver warning that offsets may come again."""
    from kafkaseg.spark.source import STREAM_REWRITE_NOTE, KafkaSegStreamReader, read_options
    from tests.test_rewritten_tail import _new_leader_rewrites, epoch_partition

    log = epoch_partition(tmp_path)
    reader = KafkaSegStreamReader(read_options({"path": str(tmp_path), "startingOffsets": "earliest",
                                                "upperBound": "logEndOffset"}, stream=True))
    start = reader.initialOffset()
    offsets = []
    with caplog.at_level("WARNING", logger="kafkaseg.spark"):
        for rewrite in (lambda: _new_leader_rewrites(log, 150, 220), lambda: None):
            end = reader.latestOffset(start, None)
            parts = reader.partitions(start, end)
            rewrite()
            offsets.append([o for part in parts for batch in reader.read(part)
                            for o in batch.column("offset").to_pylist()])
            reader.commit(end)
            start = end
    assert offsets[0][-1] < 199 and offsets[1] == list(range(150, 220))
    warned = [r.getMessage() for r in caplog.records]
    assert any(STREAM_REWRITE_NOTE in line for line in warned), warned
    assert any("reads the partition again from offset 150" in line for line in warned), warned
