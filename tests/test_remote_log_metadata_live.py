"""Which tiered-storage copies a read takes when the cluster's ``__remote_log_metadata`` partitions are among the
paths: the copies that topic says are dead (never finished, being deleted, superseded, a deleted partition's) are
left out and said so, a live copy missing is data loss, and the same data without the metadata reads as before.
The metadata records are written by kafkaseg.testing.tiered from Kafka's JSON schemas."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pyarrow.compute as pc
import pytest

import kafkaseg
from kafkaseg.errors import DataLossError
from kafkaseg.remote_metadata import _murmur2, metadata_partition
from kafkaseg.testing import TopicSpec, write_data_dir
from kafkaseg.testing.tiered import (COPY_SEGMENT_FINISHED, DELETE_SEGMENT_FINISHED, DELETE_SEGMENT_STARTED,
                                     copy_events, copy_to_tiered, kafka_uuid, partition_deleted, segment_event,
                                     segment_update, write_remote_log_metadata)

COLUMNS = ["topic", "partition", "offset", "timestamp", "timestampType", "key", "value"]
LAYOUTS = ["aiven", "local"]


def test_murmur2_gives_kafkas_values():
    """UtilsTest.testMurmur2's cases."""
    for data, expected in ((b"21", -973932308), (b"foobar", -790332482),
                           (b"a-little-bit-long-string", -985981536),
                           (b"a-little-bit-longer-string", -1486304829),
                           (b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971), (b"abc", 479470107)):
        assert _murmur2(data) == expected


def test_metadata_partition_hashes_the_topic_id_and_partition_as_kafka_does():
    """RemoteLogMetadataTopicPartitioner: murmur2 of the big-endian bytes of Objects.hash(lsb, msb, partition),
    made positive, modulo the partition count; worked here with Java's int arithmetic by hand."""
    def java_int(n):
        n &= 0xFFFFFFFF
        return n - (1 << 32) if n >= 1 << 31 else n

    msb, lsb = 0x0123456789ABCDEF, -0x0123456789ABCDF0  # the uuid 0123456789abcdef fedcba9876543210
    long_hash = lambda v: java_int(v ^ ((v & 0xFFFFFFFFFFFFFFFF) >> 32))  # noqa: E731 - Long.hashCode
    h = java_int(31 * java_int(31 * java_int(31 * 1 + long_hash(lsb)) + long_hash(msb)) + 7)
    expected = (_murmur2(h.to_bytes(4, "big", signed=True)) & 0x7FFFFFFF) % 50
    assert metadata_partition("ASNFZ4mrze_-3LqYdlQyEA", 7) == expected
    assert len({metadata_partition(kafka_uuid(f"t{i}"), p) for i in range(20) for p in range(3)}) > 20  # spread


def _tiered(tmp_path: Path, layout: str, **spec_options):
    """A tiered partition (its 4 oldest segments only in remote storage, the log start still at offset 0) and
    what the broker recorded of its copies. Returns (log dir, remote root, whole log's rows, copies, events,
    topic id, metadata partition). ``spec_options``: more of the topic's TopicSpec."""
    spec = TopicSpec("orders", records_per_partition=3000, records_per_batch=20, segment_bytes=24 * 1024,
                     index_interval_bytes=2048, **spec_options)
    write_data_dir(tmp_path / "data", [spec])
    folder = tmp_path / "data" / "orders-0"
    whole = kafkaseg.read_arrow(str(tmp_path / "data")).select(COLUMNS)
    topic_id = (folder / "partition.metadata").read_text().split("topic_id:")[1].split()[0]
    written, events, start = _tier_oldest(folder, tmp_path / "remote", layout, topic_id)
    (tmp_path / "data" / "log-start-offset-checkpoint").write_text(f"0\n1\norders 0 {start}\n")
    return tmp_path / "data", tmp_path / "remote", whole, written, events, topic_id, metadata_partition(topic_id, 0)


def _tier_oldest(folder: Path, remote: Path, layout: str, topic_id: str):
    """Copy the rolled segments of the partition folder ``folder`` under ``remote`` in ``layout``, and delete its 4
    oldest from it (their offsets then only in remote storage). Returns (the copies, what the broker recorded of
    them, the folder's first offset: the log start)."""
    written = copy_to_tiered(folder, remote, layout=layout)
    epochs = [tuple(map(int, line.split())) for line in (folder / "leader-epoch-checkpoint").read_text()
              .splitlines()[2:]]
    bases = sorted(int(p.name[:-4]) for p in folder.glob("*.log"))
    for base in bases[:4]:
        for path in folder.glob(f"{base:020d}.*"):
            path.unlink()
    return written, copy_events(written, epochs, topic_id=topic_id), bases[0]


class _Said:
    """A plan report with its notes, the partitions' own included."""

    def __init__(self, report):
        self.replicas = report.replicas
        self.notes = list(report.notes) + [n for p in report.partitions for n in p.notes]


def _read(data: Path, remote: Path, **options):
    scan = kafkaseg.open_scan([str(data), str(remote)], subscribe="orders", **options)
    return scan.to_table().select(COLUMNS), _Said(scan.plan.report)


def _range(log: Path, following: Path | None, table):
    base = int(log.name[:20])
    rows = table.filter(pc.greater_equal(table["offset"], base))
    return rows if following is None else rows.filter(pc.less(rows["offset"], int(following.name[:20])))


@pytest.mark.parametrize("layout", LAYOUTS)
def test_all_copies_finished_read_as_without_metadata(tmp_path, layout):
    data, remote, whole, written, events, _, number = _tiered(tmp_path, layout)
    write_remote_log_metadata(data, events, partition=number, codec="zstd")
    got, report = _read(data, remote)
    assert got.equals(whole)
    (replica,) = report.replicas
    assert "from __remote_log_metadata" in replica["reason"] and "0 copies it says are dead" in replica["reason"]
    assert any(f"{len(written)} live copies, {len(written)} found, {len(written)} kept" in n for n in report.notes)
    # the metadata partition is read for the copies, not as a topic the options chose
    assert [r["topic"] for r in report.replicas] == ["orders"]


@pytest.mark.parametrize("layout", LAYOUTS)
def test_a_copy_retention_is_deleting_is_left_out(tmp_path, layout):
    """DELETE_SEGMENT_STARTED: the copy is still in the bucket, and no fetch reads it: the log starts at the
    next copy."""
    data, remote, whole, written, events, topic_id, number = _tiered(tmp_path, layout)
    first = written[0].name[21:-4]
    events.append(segment_update("orders", topic_id, 0, first, DELETE_SEGMENT_STARTED))
    write_remote_log_metadata(data, events, partition=number)
    got, report = _read(data, remote)
    assert got.equals(whole.filter(pc.greater_equal(whole["offset"], int(written[1].name[:20]))))
    assert any(n.startswith(f"ignored {written[0].name}: remote retention is deleting it (DELETE_SEGMENT_STARTED)")
               for n in report.notes)
    # without the metadata (or with it ignored): today's reading, the copy read
    assert _read(data, remote, remoteLogMetadata="ignore")[0].equals(whole)
    shutil.rmtree(data / f"__remote_log_metadata-{number}")
    assert _read(data, remote)[0].equals(whole)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_an_upload_that_never_finished_is_left_out(tmp_path, layout):
    """COPY_SEGMENT_STARTED only, for a copy past the others (an upload in progress when the broker stopped,
    its file partial): it is not read; the offsets it would hold are the log dir's."""
    data, remote, whole, written, events, topic_id, number = _tiered(tmp_path, layout)
    folder = data / "orders-0"
    local = sorted(folder.glob("*.log"))
    base = int(local[0].name[:20])
    partial = written[0].parent / f"{base:020d}-{kafka_uuid('partial')}.log"
    partial.write_bytes(local[0].read_bytes()[:1000])
    for suffix in (".index", ".timeindex", ".snapshot", ".leader_epoch_checkpoint", ".indexes", ".rsm-manifest"):
        sibling = written[0].with_suffix(suffix)
        if sibling.exists():
            shutil.copy(sibling, partial.with_suffix(suffix))
    events.append(segment_event("orders", topic_id, 0, partial.name[21:-4], base, base + 50, [(0, base)]))
    write_remote_log_metadata(data, events, partition=number)
    got, report = _read(data, remote)
    assert got.equals(whole)
    assert any(n.startswith(f"ignored {partial.name}: its upload never finished (COPY_SEGMENT_STARTED only)")
               for n in report.notes)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_a_retried_upload_reads_the_finished_copy(tmp_path, layout):
    """Two segment ids for the same offsets: the first upload never finished (a partial file), the retry did."""
    data, remote, whole, written, events, topic_id, number = _tiered(tmp_path, layout)
    second = written[1]
    base = int(second.name[:20])
    failed = second.parent / f"{base:020d}-{kafka_uuid('failed-first-try')}.log"
    failed.write_bytes(second.read_bytes()[:len(second.read_bytes()) // 2])
    for suffix in (".index", ".timeindex", ".snapshot", ".leader_epoch_checkpoint", ".indexes", ".rsm-manifest"):
        if second.with_suffix(suffix).exists():
            shutil.copy(second.with_suffix(suffix), failed.with_suffix(suffix))
    started = segment_event("orders", topic_id, 0, failed.name[21:-4], base, int(written[2].name[:20]) - 1,
                            [(0, base)])
    write_remote_log_metadata(data, [started] + events, partition=number)
    got, report = _read(data, remote)
    assert got.equals(whole)
    assert any(n.startswith(f"ignored {failed.name}: its upload never finished") for n in report.notes)


def test_a_copy_superseded_in_its_epoch_is_left_out(tmp_path):
    """A leader's copy of the same epoch that reaches as far from the same offset replaces an earlier one in the
    broker's cache (RemoteLogLeaderEpochState.handleSegmentWithCopySegmentFinishedState)."""
    data, remote, whole, written, events, topic_id, number = _tiered(tmp_path, "local")
    second = written[1]
    base = int(second.name[:20])
    again = second.parent / f"{base:020d}-{kafka_uuid('uploaded-again')}.log"
    for suffix in (".log", ".index", ".timeindex", ".snapshot", ".leader_epoch_checkpoint"):
        shutil.copy(second.with_suffix(suffix), again.with_suffix(suffix))
    end = int(written[2].name[:20]) - 1
    events += [segment_event("orders", topic_id, 0, again.name[21:-4], base, end, [(0, base)]),
               segment_update("orders", topic_id, 0, again.name[21:-4], COPY_SEGMENT_FINISHED)]
    write_remote_log_metadata(data, events, partition=number)
    got, report = _read(data, remote)
    assert got.equals(whole)
    assert any(n.startswith(f"ignored {second.name}: superseded by copy {again.name[21:-4]}") for n in report.notes)


def test_a_deleted_partitions_copies_are_all_left_out(tmp_path):
    data, remote, whole, written, events, topic_id, number = _tiered(tmp_path, "aiven")
    events.append(partition_deleted("orders", topic_id, 0))
    write_remote_log_metadata(data, events, partition=number)
    got, report = _read(data, remote)
    (replica,) = report.replicas
    assert "no remote copy holds offsets" in replica["reason"]
    assert got.equals(whole.filter(pc.greater_equal(whole["offset"], int(sorted(
        (data / "orders-0").glob("*.log"))[0].name[:20]))))


def test_a_live_copy_missing_from_the_bucket_is_data_loss(tmp_path):
    """The metadata lists the first copy as live; with its objects gone, its offsets are lost, not a log start
    that retention moved (as it is taken without metadata): the copies there are read with the log dir, and a read
    from earliest (the broker's is the checkpointed log start) loses the missing copy's offsets."""
    data, remote, whole, written, events, _, number = _tiered(tmp_path, "local")
    write_remote_log_metadata(data, events, partition=number)
    for path in written[0].parent.glob(written[0].name[:-4] + ".*"):
        path.unlink()
    second = int(written[1].name[:20])
    _, report = _read(data, remote, failOnDataLoss="false")
    (replica,) = report.replicas
    assert f"missing from the bucket, their offsets lost: {written[0].name[21:-4]} (offsets 0-{second - 1})" in (
        replica["reason"])
    assert "remote retention deleted them" not in replica["reason"]
    from kafkaseg.errors import DataLossError

    with pytest.raises(DataLossError, match=rf"{written[0].name[21:-4]} \(offsets 0-{second - 1}\)"):
        _read(data, remote)
    with pytest.raises(DataLossError, match=rf"{written[0].name[21:-4]} \(offsets 5-{second - 1}\)"):
        _read(data, remote, startingOffsets='{"orders": {"0": 5}}')
    got, report = _read(data, remote, failOnDataLoss="false")
    assert got.equals(whole.filter(pc.greater_equal(whole["offset"], second)))
    assert any(written[0].name[21:-4] in n and f"read with the log dir {data / 'orders-0'}, from {second}" in n
               for n in report.notes)
    shutil.rmtree(data / f"__remote_log_metadata-{number}")  # without the metadata: retention moved the start
    got, report = _read(data, remote)
    assert got.equals(whole.filter(pc.greater_equal(whole["offset"], second)))


def test_copies_the_metadata_does_not_know_are_chosen_by_epochs_and_noted(tmp_path):
    data, remote, whole, written, events, _, number = _tiered(tmp_path, "aiven")
    write_remote_log_metadata(data, events[:4], partition=number)  # the first two copies' events only
    got, report = _read(data, remote)
    assert got.equals(whole)
    assert any(f"does not know {len(written) - 2} copies" in n for n in report.notes)


def test_events_above_the_checkpointed_high_watermark_are_read(tmp_path):
    """The broker deletes a local segment only once its copy's COPY_SEGMENT_FINISHED is consumed, but the high
    watermark on disk is a checkpoint written every few seconds (a follower's lags further): the metadata copy's
    last events can be above it while the local segment is already gone. Read only to that checkpoint, the copy
    looked unfinished and was left out, and LocalTieredStorage copies (no end offset recorded) hid its 198 offsets
    as missing ones: records lost with failOnDataLoss at its default."""
    data, remote, whole, written, events, _, number = _tiered(tmp_path, "local")
    write_remote_log_metadata(data, events, partition=number)
    assert len(events) == 2 * len(written)  # STARTED, FINISHED per copy: the 4th copy's FINISHED is at offset 7
    (data / "replication-offset-checkpoint").write_text(f"0\n2\norders 0 3000\n__remote_log_metadata {number} 7\n")
    got, report = _read(data, remote)
    assert got.equals(whole)
    assert not any(n.startswith("ignored ") for n in report.notes)


def test_a_corrupt_metadata_record_fails_a_strict_read_saying_how_on_and_a_lenient_one_reads_by_epochs(tmp_path):
    """One metadata batch failing its CRC: a strict read raised with no way on (found in review); it now names
    remoteLogMetadata=ignore and onCorruption=skip. A lenient read leaves that metadata partition out whole (a
    missed FINISHED would drop a live copy, a missed DELETE_STARTED read a dead one) and chooses by epochs, noted."""
    from kafkaseg.errors import CorruptDataError

    data, remote, whole, written, events, topic_id, number = _tiered(tmp_path, "local")
    first = written[0].name[21:-4]
    events.append(segment_update("orders", topic_id, 0, first, DELETE_SEGMENT_STARTED))
    write_remote_log_metadata(data, events, partition=number)
    (log,) = (data / f"__remote_log_metadata-{number}").glob("*.log")
    raw = bytearray(log.read_bytes())
    raw[100] ^= 0xFF
    log.write_bytes(bytes(raw))
    with pytest.raises(CorruptDataError, match="remoteLogMetadata=ignore reads the tiered copies without"):
        _read(data, remote)
    got, report = _read(data, remote, onCorruption="skip")
    assert got.equals(whole)  # (the copy being deleted is read, as without metadata)
    assert any("could not be read" in n and "chosen by their leader epochs" in n for n in report.notes)
    assert _read(data, remote, remoteLogMetadata="ignore")[0].equals(whole)


@pytest.mark.parametrize("with_log_dir", [True, False], ids=["with-log-dir", "copies-alone"])
def test_a_read_planning_again_leaves_out_the_dead_copies_the_plan_left_out(tmp_path, with_log_dir):
    """A planned copy's file gone before the read: its offsets are planned again from the partition's files
    (plan_again_by_offset). That re-plan read the copies without the metadata's verdicts, so it took the copy the
    plan left out as dead (a retried upload's first try, half a file) in place of the finished one."""
    from kafkaseg.planning import plan_again_by_offset

    data, remote, whole, written, events, topic_id, number = _tiered(tmp_path, "local")
    second = written[1]
    base = int(second.name[:20])
    failed = second.parent / f"{base:020d}-{kafka_uuid('failed-first-try')}.log"
    failed.write_bytes(second.read_bytes()[:len(second.read_bytes()) // 2])
    for suffix in (".index", ".timeindex", ".snapshot", ".leader_epoch_checkpoint"):
        shutil.copy(second.with_suffix(suffix), failed.with_suffix(suffix))
    started = segment_event("orders", topic_id, 0, failed.name[21:-4], base, int(written[2].name[:20]) - 1,
                            [(0, base)])
    write_remote_log_metadata(data, [started] + events, partition=number)
    paths = [str(data), str(remote)] if with_log_dir else [str(remote), str(data / f"__remote_log_metadata-{number}")]
    scan = kafkaseg.open_scan(paths, subscribe="orders", failOnDataLoss="false")
    planned = [s for s in scan.plan.slices if s.log_path == str(second)]
    assert planned and not any(s.log_path == str(failed) for s in scan.plan.slices)
    second.unlink()  # remote retention, or a sync, removed the finished copy after planning
    for piece in planned:
        slices, _ = plan_again_by_offset(piece, scan.options)
        assert not any(s.log_path == str(failed) for s in slices)
    got = scan.to_table().select(COLUMNS)
    following = int(written[2].name[:20])
    outside = pc.or_(pc.less(whole["offset"], base), pc.greater_equal(whole["offset"], following))
    if not with_log_dir:  # the copies end where the active segment, never copied, starts
        outside = pc.and_(outside, pc.less(whole["offset"], int(sorted((data / "orders-0").glob("*.log"))[-1]
                                                                .name[:20])))
    assert got.equals(whole.filter(outside))
    assert [entry[0] for entry in scan.metrics.vanished_segments] == [str(second)]


def test_describe_and_verify_say_what_the_metadata_says_of_the_copies(tmp_path):
    """With __remote_log_metadata among the paths, describe and verify say per partition how many copies it says
    are live, how many were found and kept, name each dead copy in the bucket, and verify warns of a live copy
    missing from it (an error when the log dir no longer holds its offsets either)."""
    from kafkaseg.cli.describe import describe_paths
    from kafkaseg.cli.verify import ERROR, INFO, verify_paths

    data, remote, whole, written, events, topic_id, number = _tiered(tmp_path, "local")
    events.append(segment_update("orders", topic_id, 0, written[2].name[21:-4], DELETE_SEGMENT_STARTED))
    write_remote_log_metadata(data, events, partition=number)
    for path in written[0].parent.glob(written[0].name[:-4] + ".*"):  # a live copy missing, only it held [0, ..)
        path.unlink()
    copies = len(written)
    (described,) = [d for d in describe_paths([str(data), str(remote)], topics={"orders"}) if d.path != str(
        data / "orders-0")]
    assert any(f"{copies - 1} live copies, {copies - 1} found, {copies - 2} kept" in n for n in described.notes)
    assert any(n.startswith(f"ignored {written[2].name}: remote retention is deleting it") for n in described.notes)
    assert str(written[2]) not in [s.path for s in described.segments]

    report = verify_paths([str(data), str(remote)])
    said = [(p.severity, p.file, p.message) for p in report.problems]
    assert any(severity == INFO and f"ignored {written[2].name}: remote retention is deleting it" in message
               for severity, _, message in said)
    assert any(f"{copies - 1} live copies, {copies - 1} found, {copies - 2} kept" in message for _, _, message in said)
    missing = [(severity, message) for severity, _, message in said if written[0].name[21:-4] in message]
    assert missing and all(severity == ERROR for severity, _ in missing), said
    assert f"offsets 0-{int(written[1].name[:20]) - 1}" in missing[0][1]
    # no log dir given for the partition: a read of the copies alone loses them (DataLossError), so an error too
    copies_alone = [str(remote), str(data / f"__remote_log_metadata-{number}")]
    report = verify_paths(copies_alone)
    missing = [p for p in report.problems if written[0].name[21:-4] in p.message]
    assert missing and all(p.severity == ERROR for p in missing)
    assert "reads of these copies lose its offsets" in missing[0].message
    with pytest.raises(DataLossError):
        kafkaseg.read_arrow(copies_alone, subscribe="orders")



def test_the_verify_command_reads_the_metadata_and_reports_a_live_copy_missing(tmp_path, capsys):
    """``kafkaseg verify`` says what :func:`verify_paths` says: with __remote_log_metadata among the paths, the dead
    copies left out and a live copy missing from the bucket (an error: the log dir no longer holds its offsets).
    Found in review: the command discovered without the metadata and never reported a live copy missing."""
    from kafkaseg.cli.main import main

    data, remote, whole, written, events, topic_id, number = _tiered(tmp_path, "local")
    write_remote_log_metadata(data, events, partition=number)
    for path in written[0].parent.glob(written[0].name[:-4] + ".*"):  # a live copy missing, only it held [0, ..)
        path.unlink()
    assert main(["verify", str(data), str(remote), "--no-progress"]) == 1
    out = capsys.readouterr().out
    assert any(line.startswith("ERROR") and written[0].name[21:-4] in line for line in out.splitlines()), out


def _drop(log: Path) -> None:
    for path in log.parent.glob(log.name[:-4] + ".*"):
        path.unlink()


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("missing", [0, 1, 3], ids=["oldest", "between-copies", "below-the-log-dir"])
def test_a_live_copy_missing_reads_the_copies_there_and_loses_only_its_offsets(tmp_path, layout, missing):
    """As a copy missing with no metadata (tests/test_tiered_loss.py): the copies that are there are read with the
    log dir, and exactly the missing copy's offsets are data loss, named by its segment id. Before, the log dir was
    read alone from its first local offset with failOnDataLoss=false, the copies there left unread."""
    from kafkaseg.errors import DataLossError

    data, remote, whole, written, events, _, number = _tiered(tmp_path, layout)
    write_remote_log_metadata(data, events, partition=number)
    gone = written[missing]
    first, end = int(gone.name[:20]), int(written[missing + 1].name[:20])
    _drop(gone)
    copy = f"{gone.name[21:-4]} (offsets {first}-{end - 1})"
    with pytest.raises(DataLossError) as raised:
        _read(data, remote)
    assert copy in str(raised.value)
    scan = kafkaseg.open_scan([str(data), str(remote)], subscribe="orders", failOnDataLoss="false")
    offsets = whole["offset"]
    assert scan.to_table().select(COLUMNS).equals(
        whole.filter(pc.or_(pc.less(offsets, first), pc.greater_equal(offsets, end))))
    (lost,) = scan.plan.report.data_loss  # the copy, once (not also as offsets in no copy)
    assert copy in lost and f"[{first}, {end})" not in lost.replace(copy, "")
    # a read wholly above the missing copy, or below it, loses nothing
    above = kafkaseg.read_arrow([str(data), str(remote)], subscribe="orders",
                                startingOffsets=f'{{"orders": {{"0": {end}}}}}').select(COLUMNS)
    assert above.equals(whole.filter(pc.greater_equal(offsets, end)))
    if first:
        below = kafkaseg.read_arrow([str(data), str(remote)], subscribe="orders",
                                    endingOffsets=f'{{"orders": {{"0": {first}}}}}').select(COLUMNS)
        assert below.equals(whole.filter(pc.less(offsets, first)))
    # a start inside it loses the rest of it
    with pytest.raises(DataLossError, match=rf"{gone.name[21:-4]} \(offsets {first + 5}-{end - 1}\)"):
        _read(data, remote, startingOffsets=f'{{"orders": {{"0": {first + 5}}}}}')


def test_verify_and_describe_say_a_live_copy_missing_between_copies_once(tmp_path, capsys):
    """The copy named by __remote_log_metadata, an error (reads of the log dir with its copies lose it): not also
    as offsets in no copy."""
    from kafkaseg.cli.main import main

    data, remote, whole, written, events, topic_id, number = _tiered(tmp_path, "aiven")
    write_remote_log_metadata(data, events, partition=number)
    _drop(written[1])
    assert main(["verify", str(data), str(remote), "--no-progress"]) == 1
    out = capsys.readouterr().out
    said = [line for line in out.splitlines() if written[1].name[21:-4] in line
            or f"[{int(written[1].name[:20])}, {int(written[2].name[:20])})" in line]
    assert len(said) == 1 and said[0].startswith("ERROR"), out
    assert main(["describe", str(data), str(remote)]) == 0
    err = capsys.readouterr().err
    assert f"[{int(written[1].name[:20])}, {int(written[2].name[:20])}) are in no tiered-storage copy" not in err


def test_every_live_copy_below_the_log_dir_missing_reads_the_log_dir_alone(tmp_path):
    from kafkaseg.errors import DataLossError

    data, remote, whole, written, events, _, number = _tiered(tmp_path, "aiven")
    write_remote_log_metadata(data, events, partition=number)
    first_local = int(sorted((data / "orders-0").glob("*.log"))[0].name[:20])
    gone = [log for log in written if int(log.name[:20]) < first_local]
    for log in gone:
        _drop(log)
    with pytest.raises(DataLossError, match="read alone, from its first local offset"):
        _read(data, remote)
    scan = kafkaseg.open_scan([str(data), str(remote)], subscribe="orders", failOnDataLoss="false")
    assert scan.to_table().select(COLUMNS).equals(whole.filter(pc.greater_equal(whole["offset"], first_local)))
    (lost,) = scan.plan.report.data_loss
    assert all(log.name[21:-4] in lost for log in gone)


def test_below_a_live_copy_missing_at_the_bottom_the_offsets_in_no_copy_are_retentions(tmp_path):
    """The oldest copy deleted by remote retention (the metadata no longer lists it), the next one live and missing:
    the replica reason gives retention only the offsets below the missing copy, which is named as lost."""
    data, remote, whole, written, events, topic_id, number = _tiered(tmp_path, "aiven")
    first_id = written[0].name[21:-4]
    events += [segment_update("orders", topic_id, 0, first_id, DELETE_SEGMENT_STARTED),
               segment_update("orders", topic_id, 0, first_id, DELETE_SEGMENT_FINISHED)]
    write_remote_log_metadata(data, events, partition=number)
    _drop(written[0])
    _drop(written[1])
    second, third = int(written[1].name[:20]), int(written[2].name[:20])
    scan = kafkaseg.open_scan([str(data), str(remote)], subscribe="orders", failOnDataLoss="false")
    (replica,) = scan.plan.report.replicas
    assert f"[0, {second}) are in no copy (remote retention" in replica["reason"], replica["reason"]
    assert f"{written[1].name[21:-4]} (offsets {second}-{third - 1})" in replica["reason"]
    assert scan.to_table().select(COLUMNS).equals(whole.filter(pc.greater_equal(whole["offset"], third)))


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("missing", [0, 1], ids=["oldest", "between-copies"])
def test_copies_read_alone_with_the_metadata_lose_a_missing_live_copy_named(tmp_path, layout, missing):
    """No log dir, __remote_log_metadata among the paths: a live copy it lists that is missing from the bucket is
    lost as it is with the log dir. Found in review: with the oldest one missing the read started silently at the
    next copy (taken for remote retention's log start, which the metadata contradicts), and one between copies was
    only an anonymous gap in no copy."""
    from kafkaseg.errors import DataLossError

    data, remote, whole, written, events, _, number = _tiered(tmp_path, layout)
    write_remote_log_metadata(data, events, partition=number)
    gone = written[missing]
    first, end = int(gone.name[:20]), int(written[missing + 1].name[:20])
    _drop(gone)
    paths = [str(remote), str(data / f"__remote_log_metadata-{number}")]
    copy = f"{gone.name[21:-4]} (offsets {first}-{end - 1})"
    with pytest.raises(DataLossError) as raised:
        kafkaseg.read_arrow(paths, subscribe="orders")
    assert copy in str(raised.value)
    scan = kafkaseg.open_scan(paths, subscribe="orders", failOnDataLoss="false")
    offsets = whole["offset"]
    active = int(sorted((data / "orders-0").glob("*.log"))[-1].name[:20])  # (never copied: the copies end there)
    assert scan.to_table().select(COLUMNS).equals(whole.filter(pc.and_(
        pc.or_(pc.less(offsets, first), pc.greater_equal(offsets, end)), pc.less(offsets, active))))
    (lost,) = scan.plan.report.data_loss  # the copy, once (not also as offsets in no copy)
    assert copy in lost and f"[{first}, {end})" not in lost.replace(copy, "")
    # a start inside it loses the rest of it; a read wholly above it loses nothing
    with pytest.raises(DataLossError, match=rf"{gone.name[21:-4]} \(offsets {first + 5}-{end - 1}\)"):
        kafkaseg.read_arrow(paths, subscribe="orders", startingOffsets=f'{{"orders": {{"0": {first + 5}}}}}')
    above = kafkaseg.read_arrow(paths, subscribe="orders", startingOffsets=f'{{"orders": {{"0": {end}}}}}')
    assert above.select(COLUMNS).equals(whole.filter(pc.and_(pc.greater_equal(offsets, end),
                                                             pc.less(offsets, active))))


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("count", [1, 2], ids=["newest", "newest-two"])
def test_copies_read_alone_with_the_metadata_lose_the_missing_newest_live_copies_named(tmp_path, layout, count):
    """No log dir, __remote_log_metadata among the paths, the newest live copies it lists missing from the bucket:
    the metadata says the remote tier held their offsets (COPY_SEGMENT_FINISHED), so the tier lost them, as it
    lost a missing oldest or middle copy. Before, the read ended at the newest copy there, only noted. latest is
    still where the copies there end; a read to it, or to an end or from a start in the missing copies, is told."""
    from kafkaseg.errors import DataLossError

    data, remote, whole, written, events, _, number = _tiered(tmp_path, layout)
    write_remote_log_metadata(data, events, partition=number)
    active = int(sorted((data / "orders-0").glob("*.log"))[-1].name[:20])  # (never copied: the copies end there)
    ends = [int(log.name[:20]) for log in written[1:]] + [active]
    gone = list(zip(written, ends))[-count:]
    for log, _ in gone:
        _drop(log)
    first = int(gone[0][0].name[:20])
    named = [f"{log.name[21:-4]} (offsets {int(log.name[:20])}-{end - 1})" for log, end in gone]
    paths = [str(remote), str(data / f"__remote_log_metadata-{number}")]
    with pytest.raises(DataLossError) as raised:
        kafkaseg.read_arrow(paths, subscribe="orders")
    assert all(copy in str(raised.value) for copy in named), str(raised.value)
    scan = kafkaseg.open_scan(paths, subscribe="orders", failOnDataLoss="false")
    offsets = whole["offset"]
    assert scan.to_table().select(COLUMNS).equals(whole.filter(pc.less(offsets, first)))
    (lost,) = scan.plan.report.data_loss  # the copies, once
    assert all(copy in lost for copy in named), lost
    # a read ending at the newest copy there loses nothing; one ending inside a missing copy loses up to its end
    below = kafkaseg.read_arrow(paths, subscribe="orders", endingOffsets=f'{{"orders": {{"0": {first}}}}}')
    assert below.select(COLUMNS).equals(whole.filter(pc.less(offsets, first)))
    with pytest.raises(DataLossError, match=rf"{gone[0][0].name[21:-4]} \(offsets {first}-{first + 4}\)"):
        kafkaseg.read_arrow(paths, subscribe="orders", endingOffsets=f'{{"orders": {{"0": {first + 5}}}}}')
    # an ending time no record there reaches may be in them: as a read to latest
    after = pc.max(whole["timestamp"]).value // 1000 + 1
    with pytest.raises(DataLossError, match=re.escape(named[0])):
        kafkaseg.read_arrow(paths, subscribe="orders", endingTimestamp=after)
    # a start inside a missing copy (above the copies there) names it
    with pytest.raises(DataLossError, match=rf"{gone[0][0].name[21:-4]} \(offsets {first + 5}-"):
        kafkaseg.read_arrow(paths, subscribe="orders", startingOffsets=f'{{"orders": {{"0": {first + 5}}}}}')


def test_every_live_copy_missing_from_a_partition_folder_read_alone_is_data_loss_with_their_offsets(tmp_path):
    """The partition folder still there (an Aiven <partition>/ on a filesystem that keeps folders), every copy in it
    gone, __remote_log_metadata listing them live: all their offsets are lost, each copy named. Before, the folder
    read as an empty log at offset 0, without a word."""
    from kafkaseg.errors import DataLossError

    data, remote, whole, written, events, _, number = _tiered(tmp_path, "aiven")
    write_remote_log_metadata(data, events, partition=number)
    active = int(sorted((data / "orders-0").glob("*.log"))[-1].name[:20])
    ends = [int(log.name[:20]) for log in written[1:]] + [active]
    for log in written:
        _drop(log)
    assert written[0].parent.is_dir()
    named = [f"{log.name[21:-4]} (offsets {int(log.name[:20])}-{end - 1})" for log, end in zip(written, ends)]
    paths = [str(remote), str(data / f"__remote_log_metadata-{number}")]
    with pytest.raises(DataLossError) as raised:
        kafkaseg.read_arrow(paths, subscribe="orders")
    assert named[0] in str(raised.value)
    scan = kafkaseg.open_scan(paths, subscribe="orders", failOnDataLoss="false")
    assert scan.to_table().num_rows == 0
    (lost,) = scan.plan.report.data_loss
    assert all(copy in lost for copy in named), lost
    # without the metadata nothing says the folder held copies: an empty log
    assert kafkaseg.read_arrow(str(remote), subscribe="orders").num_rows == 0


@pytest.mark.parametrize("with_log_dir", [True, False], ids=["with-log-dir", "copies-alone"])
@pytest.mark.parametrize("missing", [0, 1], ids=["oldest", "between-copies"])
def test_a_start_by_timestamp_whose_answer_is_in_a_missing_live_copy_is_data_loss(tmp_path, capsys, with_log_dir,
                                                                                    missing):
    """The broker answers a timestamp from the first live copy whose maxTimestampMs reaches it: when that copy is
    missing from the bucket the answer is lost, as a start from earliest is. Found in review: a time before every
    record read from the next copy there with no word (a batch read and a stream alike)."""
    from kafkaseg.errors import DataLossError
    from kafkaseg.options import ReadOptions
    from kafkaseg.streaming import MicroBatchPlanner, from_offsets, poll_micro_batches

    data, remote, whole, written, _, topic_id, number = _tiered(tmp_path, "local")
    folder = data / "orders-0"
    epochs = [tuple(map(int, line.split())) for line in (folder / "leader-epoch-checkpoint").read_text()
              .splitlines()[2:]]
    bounds = [int(log.name[:20]) for log in written] + [None]
    def ms(column):  # (timestamps read as Spark's, in microseconds)
        return pc.divide(column.cast("int64"), 1000)

    stamps = ms(whole["timestamp"])
    times = [pc.max(ms(_range(log, following, whole)["timestamp"])).as_py()
             for log, following in zip(written, written[1:] + [None])]
    write_remote_log_metadata(data, copy_events(written, epochs, topic_id=topic_id, max_timestamps=times),
                              partition=number)
    gone = written[missing]
    first, end = bounds[missing], bounds[missing + 1]
    _drop(gone)
    paths = ([str(data)] if with_log_dir else []) + [str(remote), str(data / f"__remote_log_metadata-{number}")]
    copy = gone.name[21:-4]
    for ts in (1, stamps[first + 3].as_py()):  # before every record; inside the missing copy
        with pytest.raises(DataLossError, match=copy):
            kafkaseg.read_arrow(paths, subscribe="orders", startingTimestamp=ts)
        with pytest.raises(DataLossError, match=copy):
            kafkaseg.read_arrow(paths, subscribe="orders", startingOffsetsByTimestamp=f'{{"orders": {{"0": {ts}}}}}')
        scan = kafkaseg.open_scan(paths, subscribe="orders", startingTimestamp=ts, failOnDataLoss="false")
        table = scan.to_table().select(COLUMNS)
        assert any(copy in lost for lost in scan.plan.report.data_loss), scan.plan.report.data_loss
        assert table["offset"].to_pylist() and table["offset"][0].as_py() == (end if missing == 0 or ts != 1 else 0)
        planner = MicroBatchPlanner(ReadOptions.from_options(
            {"paths": paths, "subscribe": "orders", "startingTimestamp": ts, "maxOffsetsPerTrigger": 400},
            stream=True))
        with pytest.raises(DataLossError, match=copy):
            from_offsets(planner.initial_offsets())
            for _ in poll_micro_batches(planner):
                pass
    # kafkaseg offsets --time: the files' answer, and on stderr that the broker's is in the missing copy
    from kafkaseg.cli.main import main

    args = ["offsets", "--topic", "orders"] + [arg for path in paths for arg in ("--data-dir", path)]
    for ts, said in ((stamps[first + 3].as_py(), True), (times[missing] + 1, False)):
        assert main(args + ["--time", str(ts)]) == 0
        out, err = capsys.readouterr()
        assert out.startswith("orders:0:")
        assert (f"copy {copy} (offsets {first}-{end - 1})" in err) == said, err
    if missing == 0:  # -2 (ListOffsets' EARLIEST_TIMESTAMP, passed as it is) is earliest: the copy's loss too
        with pytest.raises(DataLossError, match=copy):
            kafkaseg.read_arrow(paths, subscribe="orders", startingOffsetsByTimestamp='{"orders": {"0": -2}}')
    # a time past the missing copy's largest timestamp is answered by the copies there: nothing lost
    after = times[missing] + 1
    table = kafkaseg.read_arrow(paths, subscribe="orders", startingTimestamp=after).select(COLUMNS)
    assert table["offset"][0].as_py() == end


def test_a_stream_started_by_timestamp_beside_a_missing_live_copy_finds_its_time_in_another_broker(tmp_path):
    """Two brokers' log dirs of a tiered partition whose live copies below the log dirs are all missing from the
    bucket (each log dir is read alone, from its first local offset: so the other broker's copy holds all the search
    rests on), a start by timestamp in the chosen log dir's local segments, which are corrupt there. The stream's
    start asks again whether the broker's answer lies in a missing copy, by the same search: it falls back to the
    other broker's copy as the start's resolution did, and the switch is said once. Before, that second search had
    no other copy and raised the CRC error, where a batch read of the same paths started at the record."""
    from kafkaseg.options import ReadOptions
    from kafkaseg.streaming import MicroBatchPlanner, from_offsets
    from kafkaseg.testing.tiered import copy_events as events_of
    from kafkaseg.wire.batch import iter_headers

    data, remote, whole, written, _, topic_id, number = _tiered(tmp_path, "local")
    folder = data / "orders-0"
    epochs = [tuple(map(int, line.split())) for line in (folder / "leader-epoch-checkpoint").read_text()
              .splitlines()[2:]]
    stamps = pc.divide(whole["timestamp"].cast("int64"), 1000).to_pylist()  # (milliseconds)
    times = [max(_range(log, following, whole)["timestamp"].cast("int64").to_pylist()) // 1000
             for log, following in zip(written, written[1:] + [None])]
    write_remote_log_metadata(data, events_of(written, epochs, topic_id=topic_id, max_timestamps=times),
                              partition=number)
    first_local = int(sorted(folder.glob("*.log"))[0].name[:20])
    gone = [log for log in written if int(log.name[:20]) < first_local]
    for log in gone:
        _drop(log)
    other = tmp_path / "other"
    shutil.copytree(data, other, ignore=shutil.ignore_patterns("__remote_log_metadata-*"))
    local = sorted(folder.glob("*.log"))[1]  # a local segment above the missing copies
    data_bytes = bytearray(local.read_bytes())
    header = list(iter_headers(bytes(data_bytes)))[5]
    data_bytes[header.position + 70] ^= 0xFF  # (its CRC fails)
    local.write_bytes(bytes(data_bytes))
    wanted = header.base_offset + 3
    ts = stamps[wanted]
    assert ts > times[len(gone) - 1] and stamps[wanted - 1] < ts  # (the missing copies' records are all older)
    paths = [str(data), str(other), str(remote), str(data / f"__remote_log_metadata-{number}")]
    batch = kafkaseg.open_scan(paths, subscribe="orders", startingTimestamp=ts)
    assert batch.to_table()["offset"][0].as_py() == wanted
    planner = MicroBatchPlanner(ReadOptions.from_options(
        {"paths": paths, "subscribe": "orders", "startingTimestamp": ts}, stream=True))
    assert from_offsets(planner.initial_offsets()) == {("orders", 0): wanted}
    (said,) = planner.take_start_notes()
    assert str(local) in said and f"read from the copy in {other / 'orders-0'} instead" in said, said


@pytest.mark.parametrize("with_log_dir", [True, False], ids=["with-log-dir", "copies-alone"])
def test_a_stream_from_earliest_loses_a_missing_oldest_live_copy_as_a_batch_read_does(tmp_path, with_log_dir):
    """Found in review: a batch read from earliest raised DataLossError for the oldest live copy missing from the
    bucket, a stream from earliest started at the next copy there with no word."""
    from kafkaseg.options import ReadOptions
    from kafkaseg.streaming import MicroBatchPlanner, poll_micro_batches

    data, remote, whole, written, events, _, number = _tiered(tmp_path, "local")
    write_remote_log_metadata(data, events, partition=number)
    _drop(written[0])
    copy, end = written[0].name[21:-4], int(written[1].name[:20])
    paths = ([str(data)] if with_log_dir else []) + [str(remote), str(data / f"__remote_log_metadata-{number}")]

    def planner(**options):
        return MicroBatchPlanner(ReadOptions.from_options(
            {"paths": paths, "subscribe": "orders", "startingOffsets": "earliest", "maxOffsetsPerTrigger": 400,
             **options}, stream=True))

    with pytest.raises(DataLossError, match=copy):
        for _ in poll_micro_batches(planner()):
            pass
    plans = list(poll_micro_batches(planner(failOnDataLoss="false")))
    assert any(copy in lost for plan in plans for lost in plan.data_loss)
    # the first micro-batch's range starts below the copies there; what it reads starts at the next copy
    assert plans[0].ranges[("orders", 0)][0] == 0
    first_read = min(s.start_offset for s in plans[0].scan.slices)
    assert first_read == end


@pytest.mark.parametrize("with_log_dir", [True, False], ids=["with-log-dir", "copies-alone"])
@pytest.mark.parametrize("layout,shape", [("aiven", "empty-root"), ("local", "empty-root"),
                                          ("local", "empty-partition-folder"), ("aiven", "empty-topic-folder")])
def test_a_tiered_store_emptied_whose_metadata_lists_live_copies_loses_them_named(tmp_path, capsys, layout, shape,
                                                                                  with_log_dir):
    """The whole tiered copy gone (an emptied bucket, or LocalTieredStorage's partition folder left empty by the
    deletion of its copies), __remote_log_metadata listing them live: the same loss as some copies missing, each
    copy named, in reads, verify, describe and offsets. Before, discovery refused the empty folder (a LayoutError,
    "neither a Kafka log dir ... nor a tiered-storage copy") before the metadata was read."""
    from kafkaseg.cli.describe import describe_paths
    from kafkaseg.cli.main import main
    from kafkaseg.cli.verify import ERROR, verify_paths

    data, remote, whole, written, events, topic_id, number = _tiered(tmp_path, layout)
    write_remote_log_metadata(data, events, partition=number)
    local = sorted((data / "orders-0").glob("*.log"))
    first_local, active = int(local[0].name[:20]), int(local[-1].name[:20])
    ends = [int(log.name[:20]) for log in written[1:]] + [active]
    named = [f"{log.name[21:-4]} (offsets {int(log.name[:20])}-{end - 1})" for log, end in zip(written, ends)]
    for log in written:
        _drop(log)
    if shape == "empty-root":
        for child in list(remote.iterdir()):
            shutil.rmtree(child)
    elif shape == "empty-topic-folder":  # (an Aiven <topic>-<id> folder without its <partition> folders)
        shutil.rmtree(written[0].parent)
    given = remote if shape != "empty-partition-folder" else written[0].parent
    assert given.is_dir() and not any(p.is_file() for p in given.rglob("*"))
    meta = str(data / f"__remote_log_metadata-{number}")
    paths = [str(data), str(given)] if with_log_dir else [str(given), meta]
    below = [copy for copy, log in zip(named, written) if int(log.name[:20]) < first_local] if with_log_dir else named
    with pytest.raises(DataLossError) as raised:
        kafkaseg.read_arrow(paths, subscribe="orders")
    assert below[0] in str(raised.value), str(raised.value)
    scan = kafkaseg.open_scan(paths, subscribe="orders", failOnDataLoss="false")
    got = scan.to_table().select(COLUMNS)
    assert got.equals(whole.filter(pc.greater_equal(whole["offset"], first_local)) if with_log_dir else
                      whole.slice(0, 0))
    (lost,) = scan.plan.report.data_loss
    assert all(copy in lost for copy in below), lost
    # verify: an error naming the copies; describe: no refusal, the copies said missing
    report = verify_paths(paths)
    missing = [p for p in report.problems if written[0].name[21:-4] in p.message]
    assert missing and all(p.severity == ERROR for p in missing), [(p.severity, p.message) for p in report.problems]
    described = describe_paths(paths, topics={"orders"})
    assert any(written[0].name[21:-4] in n for d in described for n in d.notes), [d.notes for d in described]
    # offsets: -2 (earliest) is in the first copy lost, said on stderr
    args = ["offsets", "--topic", "orders"] + [arg for path in paths for arg in ("--data-dir", path)]
    main(args + ["--time", "-2"])
    err = capsys.readouterr().err
    assert f"copy {named[0]}" in err, err
    # without the metadata nothing says the store held copies: refused as before
    with pytest.raises(kafkaseg.errors.LayoutError, match="nor a tiered-storage copy"):
        kafkaseg.read_arrow(paths, subscribe="orders", remoteLogMetadata="ignore")


def test_a_glob_matching_an_empty_folder_beside_a_tiered_log_dir_reads_the_log_dir_as_before(tmp_path):
    """A glob over log dirs (``/mnt/kafka/*``) that also matches an empty folder of no tiered-storage name (an
    unused disk's folder), with __remote_log_metadata in the log dir and no copies given: the folder is passed over
    as a glob's match that is no log dir always was, and the log dir is read as when given alone. Taken for an
    emptied store's root, it made every tiered partition a DataLossError naming copies 'missing from the copies
    given' when none were given (found in review)."""
    data, _, whole, written, events, _, number = _tiered(tmp_path, "aiven")
    write_remote_log_metadata(data, events, partition=number)
    parent = tmp_path / "disks"
    parent.mkdir()
    shutil.move(str(data), str(parent / "kafka"))
    (parent / "unused").mkdir()
    alone = kafkaseg.read_arrow(str(parent / "kafka"), subscribe="orders").select(COLUMNS)
    assert alone.num_rows and alone.num_rows < whole.num_rows  # (the copies' offsets are not in the log dir)
    assert kafkaseg.read_arrow(str(parent / "*"), subscribe="orders").select(COLUMNS).equals(alone)
    # given by its own name, an empty folder is still the store that lost the copies (as the emptied-store test)
    with pytest.raises(DataLossError, match=written[0].name[21:-4]):
        kafkaseg.read_arrow([str(parent / "kafka"), str(parent / "unused")], subscribe="orders")


def test_an_empty_folder_the_metadata_lists_no_live_copy_for_is_still_refused(tmp_path):
    """A path holding no file stands for a tiered store only where __remote_log_metadata lists live copies it could
    hold: the partition's copies all deleted by the topic's deletion, it is refused as without the metadata."""
    data, remote, _, written, events, topic_id, number = _tiered(tmp_path, "local")
    events.append(partition_deleted("orders", topic_id, 0))
    write_remote_log_metadata(data, events, partition=number)
    for log in written:
        _drop(log)
    with pytest.raises(kafkaseg.errors.LayoutError, match="lists no live copy it could hold"):
        kafkaseg.read_arrow([str(remote), str(data / f"__remote_log_metadata-{number}")])


def test_an_empty_folder_under_a_segments_name_is_still_no_segment_with_the_metadata(tmp_path):
    from kafkaseg.errors import UnreadableSegmentError

    data, remote, _, written, events, _, number = _tiered(tmp_path, "local")
    write_remote_log_metadata(data, events, partition=number)
    (tmp_path / "00000000000000000000.log").mkdir()
    with pytest.raises(UnreadableSegmentError, match="a folder, not a file"):
        kafkaseg.read_arrow([str(tmp_path / "00000000000000000000.log"), str(remote),
                             str(data / f"__remote_log_metadata-{number}")])


def _oldest_live_copy_missing(tmp_path: Path, retained: bool, with_log_dir: bool):
    """The oldest live copy missing from the bucket (``retained``: the oldest copy deleted by remote retention, the
    next one live and missing). Returns (log dir, paths to read, the missing copy's .log, its first offset, the
    next copy's)."""
    data, remote, _, written, events, topic_id, number = _tiered(tmp_path, "local")
    if retained:
        first_id = written[0].name[21:-4]
        events += [segment_update("orders", topic_id, 0, first_id, DELETE_SEGMENT_STARTED),
                   segment_update("orders", topic_id, 0, first_id, DELETE_SEGMENT_FINISHED)]
        _drop(written[0])
    write_remote_log_metadata(data, events, partition=number)
    gone = written[1] if retained else written[0]
    _drop(gone)
    paths = ([str(data)] if with_log_dir else []) + [str(remote), str(data / f"__remote_log_metadata-{number}")]
    return data, paths, gone, int(gone.name[:20]), int(written[2 if retained else 1].name[:20])


@pytest.mark.parametrize("with_log_dir", [True, False], ids=["with-log-dir", "copies-alone"])
@pytest.mark.parametrize("retained", [False, True], ids=["log-start-0", "above-remote-retention"])
def test_a_partition_found_after_the_stream_started_loses_a_missing_oldest_live_copy_named(tmp_path, with_log_dir,
                                                                                            retained):
    """A partition a stream finds after it started is read from its beginning (Spark: earliest), by another path
    than the initial offsets': it started at the oldest copy there, so a live copy missing below it was at best
    "offsets [0, n) may have been missed" (a log start above 0), never named, and its offsets were not in the
    micro-batch's range. It now starts below the missing copies, as a stream from earliest does, so the
    micro-batch that reads it names them."""
    from kafkaseg.options import ReadOptions
    from kafkaseg.streaming import MicroBatchPlanner, poll_micro_batches

    data, paths, gone, first, end = _oldest_live_copy_missing(tmp_path, retained, with_log_dir)
    copy = f"{gone.name[21:-4]} (offsets {first}-{end - 1})"

    def planner(**options):
        return MicroBatchPlanner(ReadOptions.from_options(
            {"paths": paths, "subscribe": "orders", "maxOffsetsPerTrigger": 400, **options}, stream=True))

    # started when the subscribed topic had no partition: every partition is found after the start
    plans = list(poll_micro_batches(planner(failOnDataLoss="false"), start={}))
    assert any(copy in lost for plan in plans for lost in plan.data_loss), [p.data_loss for p in plans]
    assert plans[0].ranges[("orders", 0)][0] == first
    assert min(s.start_offset for s in plans[0].scan.slices) == end
    if not retained:  # (above retention, Spark's "added partition starts at ... instead of 0" comes first)
        with pytest.raises(DataLossError, match=re.escape(copy)):
            for _ in poll_micro_batches(planner(), start={}):
                pass


@pytest.mark.parametrize("with_log_dir", [True, False], ids=["with-log-dir", "copies-alone"])
def test_an_ending_timestamp_whose_answer_is_in_a_missing_live_copy_ends_there_named(tmp_path, with_log_dir):
    """The broker answers an ending time as a starting one (RemoteLogManager.findOffsetByTimestamp: the first live
    copy whose maxTimestampMs reaches it), so when that copy is missing the read's end is in it: no record after it
    is the read's. Found in review: the end was the files' answer, the first record at or after the time in a later
    copy, so with failOnDataLoss=false records between the missing copy and that answer (created earlier than the
    time: producers' clocks are not in offset order) were read past the broker's end, the loss said only as the
    copy's offsets a range reaches."""
    from kafkaseg.errors import DataLossError

    data, remote, whole, written, _, topic_id, number = _tiered(tmp_path, "local", ts_jitter_ms=3000)
    folder = data / "orders-0"
    epochs = [tuple(map(int, line.split())) for line in (folder / "leader-epoch-checkpoint").read_text()
              .splitlines()[2:]]
    stamps = whole["timestamp"].cast("int64").to_pylist()  # (read as Spark's, in microseconds)
    stamps = [t // 1000 for t in stamps]
    bounds = [int(log.name[:20]) for log in written]
    times = [max(stamps[a:b]) for a, b in zip(bounds, bounds[1:] + [
        int(sorted(folder.glob("*.log"))[-1].name[:20])])]  # (the active segment: never copied)
    write_remote_log_metadata(data, copy_events(written, epochs, topic_id=topic_id, max_timestamps=times),
                              partition=number)
    first, end = bounds[1], bounds[2]
    _drop(written[1])
    ts = times[1]  # the missing copy's largest: the copy before reaches less, the records after start below it
    assert times[0] < ts
    files_answer = next(i for i in range(end, len(stamps)) if stamps[i] >= ts)
    assert files_answer > end  # (records after the missing copy created before the time)
    paths = ([str(data)] if with_log_dir else []) + [str(remote), str(data / f"__remote_log_metadata-{number}")]
    copy = f"{written[1].name[21:-4]} (offsets {first}-{end - 1})"
    for option in ({"endingTimestamp": ts}, {"endingOffsetsByTimestamp": f'{{"orders": {{"0": {ts}}}}}'}):
        with pytest.raises(DataLossError, match=re.escape(copy)):
            kafkaseg.read_arrow(paths, subscribe="orders", **option)
        scan = kafkaseg.open_scan(paths, subscribe="orders", failOnDataLoss="false", **option)
        got = scan.to_table().select(COLUMNS)
        assert got.equals(whole.filter(pc.less(whole["offset"], first))), got["offset"][-1]
        assert any(copy in lost for lost in scan.plan.report.data_loss), scan.plan.report.data_loss
        notes = [n for p in scan.plan.report.partitions for n in p.notes]
        assert any("ending timestamp" in n and written[1].name[21:-4] in n for n in notes), notes
    # a start above the missing copy is after the broker's end, in it: the time window is the wrong way round
    from kafkaseg.errors import InvalidOptionError

    with pytest.raises(InvalidOptionError, match="is after the end offset"):
        kafkaseg.read_arrow(paths, subscribe="orders", endingTimestamp=ts,
                            startingOffsets=f'{{"orders": {{"0": {end + 5}}}}}')
    # a time the missing copy's largest timestamp does not reach is the files' answer: nothing lost before it
    after = kafkaseg.read_arrow(paths, subscribe="orders", endingTimestamp=times[0]).select(COLUMNS)
    expected = next(i for i in range(len(stamps)) if stamps[i] >= times[0])
    assert after.equals(whole.filter(pc.less(whole["offset"], expected)))


@pytest.mark.parametrize("with_log_dir", [True, False], ids=["with-log-dir", "copies-alone"])
@pytest.mark.parametrize("retained", [False, True], ids=["log-start-0", "above-remote-retention"])
def test_offsets_earliest_below_a_missing_oldest_live_copy_prints_the_brokers_log_start(tmp_path, capsys,
                                                                                        with_log_dir, retained):
    """ListOffsets' earliest (-2) is the broker's log start offset (UnifiedLog.fetchOffsetByTimestamp), which
    __remote_log_metadata tells when its oldest live copies are missing from the bucket: their first offset (above
    the checkpointed log start, which lags remote retention). Before, `kafkaseg offsets --time -2` printed the
    first offset the files hold, and said on stderr that the broker's answer is in the missing copy."""
    from kafkaseg.cli.main import main
    from kafkaseg.lookup import list_offset
    from kafkaseg.remote_metadata import read_remote_log_metadata
    from kafkaseg.storage.layout import choose_replicas, discover

    data, paths, gone, first, end = _oldest_live_copy_missing(tmp_path, retained, with_log_dir)
    args = ["offsets", "--topic", "orders"] + [arg for path in paths for arg in ("--data-dir", path)]
    assert main(args + ["--time", "-2"]) == 0
    out, err = capsys.readouterr()
    assert out == f"orders:0:{first}\n", (out, err)
    assert f"copy {gone.name[21:-4]} (offsets {first}-{end - 1})" in err and "log start" in err, err
    assert main(args + ["--time", "-2", "--json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    assert row["offset"] == first and gone.name[21:-4] in row["note"]
    # -4 (earliest-local) is the local log's start: the files' answer, not in the missing copy (found in review:
    # stderr said it was, as for every negative time)
    if with_log_dir:
        assert main(args + ["--time", "-4"]) == 0
        out, err = capsys.readouterr()
        assert out == f"orders:0:{int(sorted((data / 'orders-0').glob('*.log'))[0].name[:20])}\n"
        assert gone.name[21:-4] not in err, err
    # the lookup API answers the same
    found = discover(paths, remote_log_metadata=read_remote_log_metadata)
    (choice,) = choose_replicas([p for p in found if p.topic == "orders"])
    assert list_offset(choice.chosen, "earliest").offset == first


@pytest.mark.parametrize("with_log_dir", [True, False], ids=["with-log-dir", "copies-alone"])
def test_a_recreated_topic_read_from_its_beginning_loses_a_missing_oldest_live_copy_named(tmp_path, with_log_dir):
    """A stream whose topic was deleted and created again reads the new topic from its beginning, by a path of its
    own: as a partition found after the start, it began at the oldest copy there, never naming a live copy
    missing below it."""
    from kafkaseg.options import ReadOptions
    from kafkaseg.streaming import TOPIC_IDS, MicroBatchPlanner, poll_micro_batches

    _, paths, gone, first, end = _oldest_live_copy_missing(tmp_path, False, with_log_dir)
    copy = f"{gone.name[21:-4]} (offsets {first}-{end - 1})"
    planner = MicroBatchPlanner(ReadOptions.from_options(
        {"paths": paths, "subscribe": "orders", "maxOffsetsPerTrigger": 400, "failOnDataLoss": "false"},
        stream=True))
    start = {"orders": {"0": 5}, TOPIC_IDS: {"orders": kafka_uuid("the deleted topic")}}
    plans = list(poll_micro_batches(planner, start=start))
    assert any("deleted and recreated" in lost for lost in plans[0].data_loss), plans[0].data_loss
    assert any(copy in lost for plan in plans for lost in plan.data_loss), [p.data_loss for p in plans]
    assert plans[0].ranges[("orders", 0)][0] == first


def _two_partitions_tiered(tmp_path: Path, layout: str):
    """``orders`` with two partitions, each tiered as :func:`_tiered`'s (its 4 oldest segments only in remote
    storage, the log start still at 0), the metadata written for both. Returns (log dir, remote root, whole log's
    rows, {partition: its copies}, the metadata partitions' folders, topic id)."""
    spec = TopicSpec("orders", partitions=2, records_per_partition=3000, records_per_batch=20,
                     segment_bytes=24 * 1024, index_interval_bytes=2048)
    data, remote = tmp_path / "data", tmp_path / "remote"
    write_data_dir(data, [spec])
    whole = kafkaseg.read_arrow(str(data), subscribe="orders").select(COLUMNS)
    written, events, starts = {}, {}, []
    topic_id = (data / "orders-0" / "partition.metadata").read_text().split("topic_id:")[1].split()[0]
    for partition in (0, 1):
        written[partition], recorded, start = _tier_oldest(data / f"orders-{partition}", remote, layout, topic_id)
        starts.append(f"orders {partition} {start}")
        events.setdefault(metadata_partition(topic_id, partition), []).extend(recorded)
    (data / "log-start-offset-checkpoint").write_text(f"0\n{len(starts)}\n" + "\n".join(starts) + "\n")
    metadata = [write_remote_log_metadata(data, values, partition=number) for number, values in events.items()]
    return data, remote, whole, written, metadata, topic_id


def _partition_rows(whole, data: Path, partition: int, with_log_dir: bool):
    """The rows of ``partition`` a read holds: all of them with the log dir, else the copies' (up to its active
    segment, never copied)."""
    rows = whole.filter(pc.equal(whole["partition"], partition))
    if with_log_dir:
        return rows
    active = int(sorted((data / f"orders-{partition}").glob("*.log"))[-1].name[:20])
    return rows.filter(pc.less(rows["offset"], active))


def _named(written: list[Path], end: int) -> list[str]:
    """How a loss names each copy of ``written`` (the next one's base, else ``end``, ending it)."""
    ends = [int(log.name[:20]) for log in written[1:]] + [end]
    return [f"{log.name[21:-4]} (offsets {int(log.name[:20])}-{stop - 1})" for log, stop in zip(written, ends)]


@pytest.mark.parametrize("with_log_dir", [True, False], ids=["with-log-dir", "copies-alone"])
@pytest.mark.parametrize("layout,shape,given", [("local", "emptied", "root"), ("local", "gone", "root"),
                                                ("aiven", "gone", "root"), ("aiven", "gone", "topic-folder"),
                                                ("aiven", "emptied", "root")])
def test_a_partitions_copies_gone_from_a_store_holding_others_are_lost_named(tmp_path, capsys, layout, shape, given,
                                                                             with_log_dir):
    """One partition's copies all gone from a store still holding another's (LocalTieredStorage's
    <topic>-<partition>-<id>/ left empty or deleted, an Aiven <partition>/ deleted), __remote_log_metadata listing
    them live: the same loss as some of its copies missing, in reads, verify, describe and offsets. Before, the
    empty LocalTieredStorage folder was skipped ("neither ...") and a deleted folder was simply absent: a read of
    the topic got the other partition only, without a word. (An Aiven <partition>/ left empty was already read as
    an empty partition that lost them.)"""
    from kafkaseg.cli.describe import describe_paths
    from kafkaseg.cli.main import main
    from kafkaseg.cli.verify import ERROR, verify_paths

    data, remote, whole, written, metadata, _ = _two_partitions_tiered(tmp_path, layout)
    first_local = int(sorted((data / "orders-1").glob("*.log"))[0].name[:20])
    active = int(sorted((data / "orders-1").glob("*.log"))[-1].name[:20])
    named = _named(written[1], active)
    for log in written[1]:
        _drop(log)
    if shape == "gone":
        shutil.rmtree(written[1][0].parent)
    store = remote if given == "root" else written[0][0].parent.parent  # (Aiven's <topic>-<id>/)
    paths = ([str(data)] if with_log_dir else list(map(str, metadata))) + [str(store)]
    below = named[:len([log for log in written[1] if int(log.name[:20]) < first_local])] if with_log_dir else named
    with pytest.raises(DataLossError) as raised:
        kafkaseg.read_arrow(paths, subscribe="orders")
    assert below[0] in str(raised.value), str(raised.value)
    scan = kafkaseg.open_scan(paths, subscribe="orders", failOnDataLoss="false")
    got = scan.to_table().select(COLUMNS)
    other = _partition_rows(whole, data, 0, with_log_dir)
    assert got.filter(pc.equal(got["partition"], 0)).equals(other)
    ones = got.filter(pc.equal(got["partition"], 1))
    rows = _partition_rows(whole, data, 1, True)
    assert ones.equals(rows.filter(pc.greater_equal(rows["offset"], first_local)) if with_log_dir
                       else rows.slice(0, 0)), ones.num_rows
    (lost,) = scan.plan.report.data_loss
    assert all(copy in lost for copy in below), lost
    # a selection leaving the partition out reads as before
    assert kafkaseg.read_arrow(paths, assign='{"orders": [0]}').select(COLUMNS).equals(other)
    # verify: an error naming the copies; describe: the copies said missing
    report = verify_paths(paths)
    missing = [p for p in report.problems if written[1][0].name[21:-4] in p.message]
    assert missing and all(p.severity == ERROR for p in missing), [(p.severity, p.message) for p in report.problems]
    described = describe_paths(paths, topics={"orders"})
    assert any(written[1][0].name[21:-4] in n for d in described for n in d.notes), [d.notes for d in described]
    # offsets: -2 is the broker's log start, in the first copy lost, said on stderr
    args = ["offsets", "--topic", "orders", "--partitions", "1"] + [a for path in paths for a in ("--data-dir", path)]
    assert main(args + ["--time", "-2"]) == 0
    out, err = capsys.readouterr()
    assert out == "orders:1:0\n" and f"copy {named[0]}" in err, (out, err)


@pytest.mark.parametrize("with_log_dir", [True, False], ids=["with-log-dir", "copies-alone"])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_a_path_naming_one_partitions_copies_claims_no_other_partition(tmp_path, layout, with_log_dir):
    """A path naming one partition's folder (LocalTieredStorage's <topic>-<partition>-<id>/, Aiven's
    <topic>-<id>/<partition>/) says nothing of another partition's copies: the other's gone from the store is not
    this path's loss (its copies were not given)."""
    data, remote, whole, written, metadata, _ = _two_partitions_tiered(tmp_path, layout)
    for log in written[1]:
        _drop(log)
    shutil.rmtree(written[1][0].parent)
    paths = ([str(data)] if with_log_dir else list(map(str, metadata))) + [str(written[0][0].parent)]
    scan = kafkaseg.open_scan(paths, subscribe="orders")
    got = scan.to_table().select(COLUMNS)
    assert got.filter(pc.equal(got["partition"], 0)).equals(_partition_rows(whole, data, 0, with_log_dir))
    assert not any(written[1][0].name[21:-4] in lost for lost in scan.plan.report.data_loss)


@pytest.mark.parametrize("with_log_dir", [True, False], ids=["with-log-dir", "copies-alone"])
@pytest.mark.parametrize("retained", [False, True], ids=["log-start-0", "above-remote-retention"])
def test_locate_earliest_below_a_missing_oldest_live_copy_answers_the_brokers_log_start(tmp_path, capsys,
                                                                                        with_log_dir, retained):
    """`kafkaseg locate --time -2` answers what `offsets --time -2` prints: the broker's log start, which
    __remote_log_metadata tells when its oldest live copies are missing (their first offset), and says that offset
    is lost with the copy (no file holds it) rather than locating it. Before, locate read no metadata: it answered
    the first offset the files hold, and an offset in the missing copy was "below the log start"."""
    from kafkaseg.cli.main import main
    from kafkaseg.lookup import locate_offset, locate_time
    from kafkaseg.remote_metadata import read_remote_log_metadata
    from kafkaseg.storage.layout import choose_replicas, discover

    data, paths, gone, first, end = _oldest_live_copy_missing(tmp_path, retained, with_log_dir)
    copy = f"{gone.name[21:-4]} (offsets {first}-{end - 1})"
    args = ["locate", "--topic", "orders", "--partition", "0"] + [a for path in paths for a in ("--data-dir", path)]
    main(["offsets", "--topic", "orders", "--time", "-2"] + args[5:])
    assert capsys.readouterr().out == f"orders:0:{first}\n"
    assert main(args + ["--time", "-2"]) == 1  # (no record there: lost)
    out, err = capsys.readouterr()
    assert f"time -2 -> offset {first} " in out, out
    assert copy in out and "lost" in out, out
    assert main(args + ["--time", "-2", "--json"]) == 1
    said = json.loads(capsys.readouterr().out)
    assert said["answer"]["offset"] == first and not said["location"]["found"]
    assert copy in said["location"]["reason"], said["location"]
    # an offset in the missing copy is said lost with it, not below the log start
    assert main(args + ["--offset", str(first + 5)]) == 1
    out = capsys.readouterr().out
    assert copy in out and "below the log start" not in out, out
    # a time whose broker answer is in the missing copy (its recorded largest timestamp, 0 here, reaches time 0):
    # the files' answer is located, and stderr says the broker's is in the copy, as offsets says it
    assert main(args + ["--time", "0"]) == 0
    out, err = capsys.readouterr()
    assert f"time 0 -> offset {end} " in out and f"copy {copy}" in err, (out, err)
    # the lookup API answers the same
    found = discover(paths, remote_log_metadata=read_remote_log_metadata)
    (choice,) = choose_replicas([p for p in found if p.topic == "orders"])
    answer, location = locate_time(choice.chosen, "earliest")
    assert answer.offset == first and not location.found and copy in location.reason
    assert copy in locate_offset(choice.chosen, first + 5).reason


def _corrupt_metadata(tmp_path: Path):
    """:func:`_tiered`'s partition with its metadata, whose first batch fails its CRC; returns (log dir, remote root,
    metadata partition)."""
    data, remote, _, _, events, _, number = _tiered(tmp_path, "local")
    write_remote_log_metadata(data, events, partition=number)
    (log,) = (data / f"__remote_log_metadata-{number}").glob("*.log")
    raw = bytearray(log.read_bytes())
    raw[100] ^= 0xFF
    log.write_bytes(bytes(raw))
    return data, remote, number


@pytest.mark.parametrize("command", ["offsets", "locate", "lookup-job"])
def test_a_corrupt_metadata_record_names_the_tools_own_switch(tmp_path, capsys, command):
    """The corrupt metadata's way on, from `kafkaseg offsets`/`locate` and the lookup job, is their own switch
    (--on-corruption skip, which then reads on), not the read options (remoteLogMetadata=ignore, onCorruption=skip),
    which none of them takes."""
    from kafkaseg.cli.main import main

    data, remote, number = _corrupt_metadata(tmp_path)
    dirs = [arg for path in (data, remote) for arg in ("--data-dir", str(path))]
    if command == "lookup-job":
        from jobs import lookup as job
        from kafkaseg.errors import CorruptDataError

        (tmp_path / "requests.csv").write_text("topic,partition,time,offset\norders,0,-2,\n")
        argv = dirs + ["--input", str(tmp_path / "requests.csv"), "--output", str(tmp_path / "out")]
        with pytest.raises(CorruptDataError) as raised:
            job.check(job.parse_args(argv))
        said = str(raised.value)
        job.check(job.parse_args(argv + ["--on-corruption", "skip"]))
    else:
        argv = [command, "--topic", "orders"] + dirs + (["--time", "-2"] if command == "offsets" else
                                                        ["--partition", "0", "--offset", "5"])
        assert main(argv) != 0
        said = capsys.readouterr().err
        assert main(argv + ["--on-corruption", "skip"]) == 0, capsys.readouterr().err
    assert f"__remote_log_metadata-{number}" in said and "--on-corruption skip" in said, said
    assert "remoteLogMetadata=ignore" not in said and "onCorruption=skip" not in said, said


def test_consume_names_its_own_switch_for_a_corrupt_metadata_record(tmp_path, capsysbinary):
    """`kafkaseg consume` reads through planning, whose hook said the read options' way on (remoteLogMetadata=ignore,
    which consume does not take, and onCorruption=skip, which it spells --skip-message-on-error): found in review.
    It now names --skip-message-on-error, which then reads on."""
    from kafkaseg.cli.main import main

    data, remote, number = _corrupt_metadata(tmp_path)
    argv = ["consume", "--data-dir", str(data), "--data-dir", str(remote), "--topic", "orders", "--from-beginning"]
    assert main(argv) == 2
    said = capsysbinary.readouterr().err.decode()
    assert f"__remote_log_metadata-{number}" in said and "--skip-message-on-error leaves this metadata" in said, said
    assert "remoteLogMetadata=ignore" not in said and "onCorruption=skip" not in said, said
    assert said.count("--skip-message-on-error") == 1, said  # (said once: no note repeating it)
    assert main(argv + ["--skip-message-on-error"]) == 0
    assert capsysbinary.readouterr().out.count(b"\n") == 3000


def test_a_reads_way_on_past_a_corrupt_metadata_record_is_the_one_its_options_carry(tmp_path):
    """Planning's metadata read names, for a corrupt record, the way on the read's options carry
    (``metadata_ways_on``, which a tool sets in its own words: consume's --skip-message-on-error), else the read
    options' own (``READ_WAYS_ON``). Consume named its flag by rewriting the error's text (found in the read-back)."""
    from kafkaseg.cli.consume import WAYS_ON
    from kafkaseg.errors import CorruptDataError
    from kafkaseg.options import ReadOptions
    from kafkaseg.planning import list_partitions
    from kafkaseg.remote_metadata import READ_WAYS_ON

    data, remote, number = _corrupt_metadata(tmp_path)
    options = ReadOptions.from_options({"paths": [str(data), str(remote)], "subscribe": "orders"})
    for carried, said in ((None, READ_WAYS_ON), (WAYS_ON, WAYS_ON), ("a tool's own words", "a tool's own words")):
        with pytest.raises(CorruptDataError) as raised:
            list_partitions(None, options if carried is None else options.replace(metadata_ways_on=carried))
        assert f"__remote_log_metadata-{number}" in str(raised.value)
        assert raised.value.detail.endswith(f"; {said}"), (carried, raised.value.detail)
        assert str(raised.value).count(said) == 1 and (carried is None or READ_WAYS_ON not in str(raised.value))
    # words that only say, not options: a read with them is the same read
    assert options.replace(metadata_ways_on=WAYS_ON) == options
    assert "metadata_ways_on" not in json.dumps(options.replace(metadata_ways_on=WAYS_ON).as_dict())


@pytest.mark.parametrize("shape", ["empty-root", "empty-partition-folder"])
def test_locate_of_a_misspelt_topic_over_an_emptied_store_hints_the_topic_the_metadata_makes_it_hold(tmp_path,
                                                                                                      capsys, shape):
    """`locate --topic ordrs` over a tiered store whose copies are all gone, with __remote_log_metadata among the
    --data-dirs listing orders-0's live: locate reads orders-0 there (its copies lost), so the message for a
    misspelt topic hints at it as for a store holding copies. Before, the names for the hint were discovered without
    the metadata, which refused the emptied store: no hint."""
    from kafkaseg.cli.main import main

    data, remote, _, written, events, _, number = _tiered(tmp_path, "local")
    write_remote_log_metadata(data, events, partition=number)
    for log in written:
        _drop(log)
    if shape == "empty-root":
        for child in list(remote.iterdir()):
            shutil.rmtree(child)
    given = remote if shape == "empty-root" else written[0].parent
    dirs = [arg for path in (given, data / f"__remote_log_metadata-{number}") for arg in ("--data-dir", str(path))]
    assert main(["locate", "--topic", "orders", "--partition", "0", "--offset", "5"] + dirs) != 0
    assert "no partition" not in capsys.readouterr().err  # (the partition is there: its copies are lost)
    assert main(["locate", "--topic", "ordrs", "--partition", "0", "--offset", "5"] + dirs) == 1
    err = capsys.readouterr().err
    assert "no partition ordrs-0" in err and "did you mean 'orders'?" in err, err
