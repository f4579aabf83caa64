"""Discovery of log dirs, partition dirs, segments; swap/temp resolution; replicas; last stable offset."""

from __future__ import annotations

import shutil
import struct

import pytest

from kafkaseg.errors import InvalidOptionError, LayoutError
from kafkaseg.storage.checkpoints import read_offset_checkpoint
from kafkaseg.storage.layout import (choose_replicas, discover, last_stable_offset, parse_topic_partition,
                                     partition_log_end_offset, read_log_dir)
from kafkaseg.storage.producer_snapshot import ProducerSnapshotEntry, encode_producer_snapshot
from kafkaseg.wire.crc import crc32c

SMART = "segments/smartassets__backend-server/51801d05/kafka/data"
RAVI_F8 = "segments/RaviAzzuraPutra__LATIHAN-MICROSERVICE-NEW/f8f5c464/kafka/data"


def _name(offset: int, suffix: str) -> str:
    return f"{offset:020d}{suffix}"


def test_parse_topic_partition_follows_kafka():
    assert parse_topic_partition("my.topic_name-with-dashes-12") == ("my.topic_name-with-dashes", 12)
    assert parse_topic_partition("__consumer_offsets-0") == ("__consumer_offsets", 0)
    for bad in ("noDash", "-3", "topic-", "topic-x", "t-1.0123abc-delete", "t-1.abc-future", "t-1.abc-stray"):
        assert parse_topic_partition(bad) is None


def test_a_folder_above_log_dirs_names_them_in_its_error(tmp_path):
    """``load("/var/lib/kafka")`` where the log dir is ``/var/lib/kafka/data``: the error said only what the folder
    is not (found by audit); it now names the log dirs just below it."""
    from kafkaseg.testing import TopicSpec, write_data_dir

    write_data_dir(tmp_path / "kafka" / "data", [TopicSpec("a", records_per_partition=5)], seed=1)
    (tmp_path / "kafka" / "logs").mkdir()
    with pytest.raises(LayoutError, match=r"neither a Kafka log dir.*; it holds one: .*kafka/data\b"):
        discover(str(tmp_path / "kafka"))
    with pytest.raises(LayoutError) as raised:  # nothing below to suggest
        discover(str(tmp_path / "kafka" / "logs"))
    assert "holds" not in str(raised.value)
    write_data_dir(tmp_path / "kafka" / "data2", [TopicSpec("a", records_per_partition=5)], seed=1)
    with pytest.raises(LayoutError, match=r"; it holds some: .*kafka/data, .*kafka/data2 \(read those instead\)$"):
        discover(str(tmp_path / "kafka"))  # several: "read that instead" named one of them


def test_a_folder_above_log_dirs_named_like_partitions_is_refused_not_read_empty(tmp_path, capsys):
    """``load("/data")`` where the log dirs are ``/data/kafka-logs-1`` and ``/data/kafka-logs-2`` (Kafka's default
    log.dirs name, numbered per disk): both names parse as partitions of a topic ``kafka-logs``, so the folder was
    read as a log dir of two empty partitions: 0 rows, and ``verify`` passed it (found by a walkthrough)."""
    from kafkaseg import read_arrow
    from kafkaseg.cli.main import main
    from kafkaseg.testing import TopicSpec, write_data_dir

    for disk, topic in ((1, "a"), (2, "b")):  # one broker's two disks
        write_data_dir(tmp_path / "data" / f"kafka-logs-{disk}", [TopicSpec(topic, records_per_partition=5)], seed=1)
    refusal = r"log dirs named like partition folders.*kafka-logs-1, .*kafka-logs-2 \(read those instead\)$"
    with pytest.raises(LayoutError, match=refusal):
        discover(str(tmp_path / "data"))
    with pytest.raises(LayoutError, match=refusal):
        read_arrow(str(tmp_path / "data"))
    assert main(["verify", "--no-progress", str(tmp_path / "data")]) == 2
    capsys.readouterr()
    assert main(["log-dirs", "--json", str(tmp_path / "data")]) == 2  # an offline log dir, as one not there is
    out, err = capsys.readouterr()
    assert '"partitions":[]' in out and "log dirs named like partition folders" in err, (out, err)
    # each log dir given is still read (its own name parses as a partition's too), and so is a glob of them
    assert len(discover(str(tmp_path / "data" / "kafka-logs-1"))) == 1
    assert read_arrow(str(tmp_path / "data" / "kafka-logs-*")).num_rows == 10
    # a log dir copied without meta.properties or checkpoints is still a log dir, also beside an empty folder
    shutil.copytree(tmp_path / "data" / "kafka-logs-1" / "a-0", tmp_path / "bare" / "a-0")
    (tmp_path / "bare" / "b-0").mkdir()
    assert read_arrow(str(tmp_path / "bare")).num_rows == 5


def test_a_partition_folder_copied_under_another_name_is_refused_saying_how_to_read_it(tmp_path):
    """``read_arrow("/backups/orders-1.bak")``, a partition folder copied aside: the error said only what the
    folder is not (a log dir, a partition dir, a tiered-storage copy), nothing of the segments it holds, nor that
    its name is why (found by a walkthrough)."""
    from kafkaseg import read_arrow
    from kafkaseg.testing import TopicSpec, write_data_dir

    write_data_dir(tmp_path / "data", [TopicSpec("a", partitions=2, records_per_partition=5)], seed=1)
    shutil.copytree(tmp_path / "data" / "a-1", tmp_path / "backups" / "a-1.bak")
    with pytest.raises(LayoutError, match=r"a-1\.bak: .*holds a partition's segments, but 'a-1\.bak' is not named "
                                          r"<topic>-<partition>.*a-1\.bak/\*\.log"):
        read_arrow(str(tmp_path / "backups" / "a-1.bak"))
    # as the error says: its .log files are read, as a partition of a topic named after the folder
    table = read_arrow(str(tmp_path / "backups" / "a-1.bak" / "*.log"))
    assert table.num_rows == 5 and set(table.column("topic").to_pylist()) == {"a-1.bak"}
    with pytest.raises(LayoutError) as raised:  # a folder holding nothing of Kafka's: no such hint
        read_arrow(str(tmp_path / "backups"))
    assert "segments" not in str(raised.value)


def test_a_glob_matching_nothing_kafka_reads_is_an_error_not_an_empty_read(tmp_path, capsys):
    """``verify '/data/orders-0/*.index'`` verified nothing and exited 0 ("0 partitions, 0 segments: 0 errors"), and
    ``read_arrow("/data/kafka*")`` matching only folders that are no log dir read 0 rows: each match a glob may
    pass over (side files, other folders) was passed over, and nothing said that none was left, where a glob
    matching nothing at all is an error (found by a walkthrough)."""
    from kafkaseg import read_arrow
    from kafkaseg.cli.main import main
    from kafkaseg.testing import TopicSpec, write_data_dir

    write_data_dir(tmp_path / "data", [TopicSpec("a", records_per_partition=5)], seed=1)
    (tmp_path / "data-old").mkdir()
    indexes = str(tmp_path / "data" / "a-0" / "*.index")
    with pytest.raises(LayoutError, match=r"\*\.index: the glob matched no log dir, topic-partition dir or \.log "
                                          r"file \(it matched .*00000000000000000000\.index\)"):
        discover(indexes)
    assert main(["verify", "--no-progress", indexes]) == 2
    assert "the glob matched no log dir" in capsys.readouterr().err
    with pytest.raises(LayoutError, match=r"data-o\*: the glob matched no log dir.*data-old"):
        read_arrow(str(tmp_path / "data-o*"))
    # a match kept is enough: the others are passed over as before
    assert read_arrow(str(tmp_path / "data*")).num_rows == 5
    assert read_arrow(str(tmp_path / "data" / "a-0" / "*")).num_rows == 5


@pytest.mark.parametrize("empty", ["", "  "])
def test_an_empty_path_is_an_error_not_the_working_directory(tmp_path, monkeypatch, capsys, empty):
    """``kafkaseg verify "$DATA_DIR"`` with the variable unset, or ``read_arrow(os.environ.get("DIR", ""))``: the
    empty path read the working directory (Spark's load("") and os.stat("") refuse it), so run from a log dir it
    verified or read that one without a word."""
    from kafkaseg.cli.main import main
    from kafkaseg.testing import TopicSpec, write_data_dir

    write_data_dir(tmp_path, [TopicSpec("a", records_per_partition=5)], seed=1)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(LayoutError, match="an empty path"):
        discover(empty)
    with pytest.raises(LayoutError, match="an empty path"):
        discover([str(tmp_path), empty])
    assert main(["verify", empty]) == 2
    assert "an empty path" in capsys.readouterr().err
    assert main(["log-dirs", "--json", empty]) == 2  # described as an offline log dir, as a missing one is
    out, err = capsys.readouterr()
    assert '"partitions":[]' in out and err.startswith(f"an empty path ({empty!r})"), err


def test_discover_corpus_log_dir(corpus_dir):
    root = corpus_dir / SMART
    parts = discover(str(root))
    tps = {(p.topic, p.partition) for p in parts}
    expected = {parse_topic_partition(d.name) for d in root.iterdir() if d.is_dir()}
    assert tps == expected and len(parts) == len(expected)
    hw = read_offset_checkpoint(str(root / "replication-offset-checkpoint"))
    cleaner = read_offset_checkpoint(str(root / "cleaner-offset-checkpoint"))
    by_tp = {(p.topic, p.partition): p for p in parts}
    for tp, p in by_tp.items():
        assert p.high_watermark == hw.get(tp) and p.cleaner_offset == cleaner.get(tp)
        on_disk = sorted(int(f.name[:20]) for f in (root / f"{tp[0]}-{tp[1]}").glob("*.log"))
        assert [s.base_offset for s in p.segments] == on_disk
        for seg in p.segments:
            assert seg.log_size == (root / f"{tp[0]}-{tp[1]}" / _name(seg.base_offset, ".log")).stat().st_size
    configs = by_tp[("docker-connect-configs", 0)]
    assert [s.base_offset for s in configs.segments] == [0, 66, 69] and configs.log_start_offset == 0
    assert partition_log_end_offset(configs) == configs.high_watermark == 107
    assert last_stable_offset(configs) == 107


def test_discover_kraft_metadata_dir(corpus_dir):
    (meta,) = [p for p in discover(str(corpus_dir / RAVI_F8)) if p.topic == "__cluster_metadata"]
    assert [s.rsplit("/", 1)[1] for s in meta.kraft_snapshot_paths] == [
        "00000000000000007260-0000000001.checkpoint", "00000000000000024828-0000000003.checkpoint"]
    assert meta.topic_id == "AAAAAAAAAAAAAAAAAAAAAQ" and len(meta.leader_epochs) == 4
    assert meta.log_dir_meta.node_id == 1 and len(meta.snapshot_paths) == 2
    assert partition_log_end_offset(meta) == 30068 and last_stable_offset(meta) == 30068


def test_globs_single_files_and_partition_dirs(corpus_dir):
    by_glob = discover(str(corpus_dir / "segments/*/*/kafka*/data"))
    assert len({p.log_dir for p in by_glob}) == 3
    one = discover(str(corpus_dir / SMART / "temperature-0"))
    assert [(p.topic, p.partition, p.high_watermark) for p in one] == [("temperature", 0, 412)]
    segs = discover([str(corpus_dir / SMART / "docker-connect-configs-0" / _name(66, ".log")),
                     str(corpus_dir / SMART / "docker-connect-configs-0" / _name(69, ".log"))])
    assert len(segs) == 1 and [s.base_offset for s in segs[0].segments] == [66, 69]
    assert segs[0].segments[0].index_path.endswith(_name(66, ".index"))
    matched = discover(str(corpus_dir / SMART / "docker-connect-status-*"))
    assert sorted(p.partition for p in matched) == [0, 1, 2, 3, 4]
    with pytest.raises(LayoutError):
        discover(str(corpus_dir / "segments/nothing-here-*"))
    with pytest.raises(LayoutError):
        discover(str(corpus_dir / "segments"))  # not a log dir
    with pytest.raises(LayoutError, match="as a list, not one comma-separated string"):
        discover(f"{corpus_dir / SMART},{corpus_dir / SMART}")  # Spark's load() splits at commas; Python does not


def test_single_log_file_outside_a_partition_folder(corpus_dir, tmp_path):
    folder = tmp_path / "loose"
    folder.mkdir()
    shutil.copy(corpus_dir / SMART / "temperature-0" / _name(0, ".log"), folder / "dump.log")
    (pd,) = discover(str(folder / "dump.log"))
    assert (pd.topic, pd.partition) == ("loose", -1) and pd.segments[0].base_offset == 0
    assert pd.segments[0].index_path is None


def _fake_log_dir(corpus_dir, tmp_path):
    """A log dir made of corpus files: temperature-0 plus skipped folders and temp files."""
    root = tmp_path / "logdir"
    shutil.copytree(corpus_dir / SMART / "temperature-0", root / "temperature-0")
    shutil.copytree(corpus_dir / SMART / "docker-connect-configs-0", root / "docker-connect-configs-0")
    for skipped in ("temperature-1.8f3a7c-delete", "temperature-0.8f3a7c-future", "temperature-2.8f3a7c-stray",
                    "not_a_partition"):
        shutil.copytree(corpus_dir / SMART / "temperature-0", root / skipped)
    (root / "meta.properties").write_text("version=0\nbroker.id=3\ncluster.id=abc\n")
    (root / "replication-offset-checkpoint").write_text("0\n2\ntemperature 0 400\ndocker-connect-configs 0 107\n")
    (root / "log-start-offset-checkpoint").write_text("0\n1\ndocker-connect-configs 0 70\n")
    return root


def test_skipped_folders_and_checkpoints(corpus_dir, tmp_path):
    root = _fake_log_dir(corpus_dir, tmp_path)
    log_dir = read_log_dir(str(root))
    assert [(p.topic, p.partition) for p in log_dir.partitions] == [("docker-connect-configs", 0),
                                                                    ("temperature", 0)]
    assert {name for name, _ in log_dir.skipped} == {"temperature-1.8f3a7c-delete", "temperature-0.8f3a7c-future",
                                                     "temperature-2.8f3a7c-stray", "not_a_partition"}
    assert log_dir.meta.node_id == 3
    configs = log_dir.partitions[0]
    assert configs.checkpoint_log_start_offset == 70 and configs.log_start_offset == 70
    assert log_dir.partitions[1].high_watermark == 400 and last_stable_offset(log_dir.partitions[1]) == 400
    skipped: list = []
    assert [p.path for p in discover(str(root), skipped=skipped)] == [p.path for p in log_dir.partitions]
    assert sorted(skipped) == sorted((str(root / name), reason) for name, reason in log_dir.skipped)
    from kafkaseg import open_scan

    report = open_scan(str(root), upperBound="logEndOffset").plan.report
    assert sorted(p for p, _ in report.skipped_folders) == sorted(str(root / n) for n, _ in log_dir.skipped)
    assert "skipped_folders" in report.as_dict()
    assert [n for n in report.notes if "replica move" in n] == [
        f"{root / 'temperature-0.8f3a7c-future'} is not read: the destination of a replica move between log dirs "
        "in progress (its current copy is in another log dir of the same broker)"]
    (root / "recovery-point-offset-checkpoint").write_text("0\n3\ntemperature 0 1\n")  # count mismatch
    broken = read_log_dir(str(root))
    assert broken.recovery_points == {} and any("recovery-point" in reason for _, reason in broken.skipped)


def test_temporary_and_swap_files_are_resolved_in_memory(corpus_dir, tmp_path):
    root = _fake_log_dir(corpus_dir, tmp_path)
    part = root / "docker-connect-configs-0"
    before = sorted(p.name for p in part.iterdir())
    # the cleaner rewrote segments 66 and 69 into one swap segment at 66 (contents of segment 69 stand in)
    shutil.copy(part / _name(69, ".log"), part / _name(66, ".log.swap"))
    shutil.copy(part / _name(69, ".index"), part / _name(66, ".index.swap"))
    shutil.copy(part / _name(0, ".log"), part / _name(0, ".log.deleted"))
    shutil.copy(part / _name(0, ".log"), part / _name(150, ".log.cleaned"))
    shutil.copy(part / _name(69, ".log"), part / _name(200, ".log.swap"))  # >= smallest .cleaned: invalid split
    snapshot = part / _name(66, ".snapshot")
    shutil.copy(snapshot, part / _name(70, ".snapshot"))  # inside the swapped range: Kafka deletes it
    listing = sorted(p.name for p in part.iterdir())
    (pd,) = discover(str(part))
    # next offset of the swap segment is 107: segments 66 and 69 are both in [66, 107)
    assert [(s.base_offset, s.from_swap) for s in pd.segments] == [(0, False), (66, True)]
    assert pd.segments[1].log_path.endswith(".log.swap") and pd.segments[1].index_path.endswith(".index.swap")
    assert pd.segments[1].timeindex_path is None
    assert [p.rsplit("/", 1)[1][:20] for p in pd.snapshot_paths] == [_name(107, "")]  # 66, 69, 70, 99 dropped
    assert any("swap" in n for n in pd.notes) and any("incomplete split" in n for n in pd.notes)
    assert pd.ignored_swaps == (_name(200, ".log.swap"),)
    assert sorted(p.name for p in part.iterdir()) == listing and set(before) <= set(listing)  # nothing renamed
    # a .cleaned file at or below every swap base marks them all as an incomplete split: ignored
    shutil.copy(part / _name(0, ".log"), part / _name(0, ".log.cleaned"))
    (pd,) = discover(str(part))
    assert [(s.base_offset, s.from_swap) for s in pd.segments] == [(0, False), (66, False), (69, False)]
    assert pd.ignored_swaps == (_name(66, ".index.swap"), _name(66, ".log.swap"), _name(200, ".log.swap"))
    # side files whose .log.swap was renamed into place already: not swapped in either (after the split's)
    (part / _name(0, ".log.cleaned")).unlink()
    (part / _name(66, ".log.swap")).unlink()
    (pd,) = discover(str(part))
    assert pd.ignored_swaps == (_name(200, ".log.swap"), _name(66, ".index.swap"))


def test_choose_replicas(corpus_dir, tmp_path):
    a, b = tmp_path / "broker1", tmp_path / "broker2"
    for root, hw in ((a, 300), (b, 412)):
        shutil.copytree(corpus_dir / SMART / "temperature-0", root / "temperature-0")
        (root / "replication-offset-checkpoint").write_text(f"0\n1\ntemperature 0 {hw}\n")
    parts = discover([str(a), str(b)])
    assert len(parts) == 2
    (choice,) = choose_replicas(parts)
    assert choice.chosen.log_dir == str(b) and "highest high watermark (412)" in choice.reason
    assert len(choice.candidates) == 2
    (by_size,) = choose_replicas(parts, "largestSize")
    assert by_size.chosen is parts[0] and "largest size" in by_size.reason  # tie: first given
    (by_leo,) = choose_replicas(parts, "largestLogEndOffset")
    assert "412" in by_leo.reason
    with pytest.raises(InvalidOptionError):
        choose_replicas(parts, "random")


def test_copies_of_different_topic_incarnations_or_clusters_are_refused(corpus_dir, tmp_path):
    """Broker 1 was offline while the topic was deleted and recreated: its copy (old topic id, the higher high
    watermark) must not be chosen over, or read with, the new one; nor copies from two clusters."""
    from kafkaseg import read_arrow
    from kafkaseg.testing.partition import write_partition_metadata

    a, b = tmp_path / "broker1", tmp_path / "broker2"
    for root, hw in ((a, 412), (b, 300)):
        shutil.copytree(corpus_dir / SMART / "temperature-0", root / "temperature-0")
        (root / "replication-offset-checkpoint").write_text(f"0\n1\ntemperature 0 {hw}\n")
        (root / "meta.properties").write_text("version=1\nnode.id=1\ncluster.id=abc\n")
    write_partition_metadata(a / "temperature-0" / "partition.metadata", "EjRWeBI0VngSNFZ4EjRWeA")
    assert len(read_arrow([str(a), str(b)])) > 0  # one copy without partition.metadata: nothing to compare
    write_partition_metadata(b / "temperature-0" / "partition.metadata", "ASNFZ4mrze8BI0VniavN7w")
    for options in ({}, {"replicas": "all"}):
        with pytest.raises(LayoutError, match="different incarnations.*EjRWeBI0VngSNFZ4EjRWeA"):
            read_arrow([str(a), str(b)], **options)
    with pytest.raises(LayoutError, match="different incarnations"):
        choose_replicas(discover([str(a), str(b)]))
    from kafkaseg.cli.verify import verify_paths

    problems = [p for p in verify_paths([str(a), str(b)], deep=False).problems if p.severity == "error"]
    assert len(problems) == 1 and "different incarnations" in problems[0].message
    from kafkaseg.cli.main import main

    assert main(["verify", str(a), str(b), "--shallow", "--no-progress"]) == 1  # the command, as verify_paths
    assert len(read_arrow(str(a))) > 0  # each alone reads
    write_partition_metadata(b / "temperature-0" / "partition.metadata", "EjRWeBI0VngSNFZ4EjRWeA")
    (b / "meta.properties").write_text("version=1\nnode.id=2\ncluster.id=other\n")
    with pytest.raises(LayoutError, match="different clusters: cluster id abc in .*broker1.*; other in"):
        read_arrow([str(a), str(b)])
    (b / "meta.properties").write_text("version=1\nnode.id=2\ncluster.id=abc\n")
    assert len(read_arrow([str(a), str(b)])) > 0


# -- last stable offset on fabricated transactional logs -------------------------------------------------------------

def _varint(value: int) -> bytes:
    value = (value << 1) ^ (value >> 63)
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _batch(base: int, count: int, *, pid: int = -1, transactional: bool = False, control: bool = False,
           timestamp: int = 1_000) -> bytes:
    """A v2 batch (DefaultRecordBatch layout) with ``count`` small records, or one ABORT marker when ``control``."""
    records = b""
    for delta in range(count):
        if control:
            key, value = struct.pack(">hh", 0, 0), struct.pack(">hi", 0, 5)
        else:
            key, value = None, b"v%d" % delta
        body = (b"\x00" + _varint(0) + _varint(delta)
                + (_varint(-1) if key is None else _varint(len(key)) + key)
                + _varint(len(value)) + value + _varint(0))
        records += _varint(len(body)) + body
    attributes = (0x10 if transactional else 0) | (0x20 if control else 0)
    after_crc = struct.pack(">hiqqqhii", attributes, count - 1, timestamp, timestamp, pid, 0 if pid >= 0 else -1,
                            0 if pid >= 0 else -1, count) + records
    batch_length = 4 + 1 + 4 + len(after_crc)
    return struct.pack(">qiib", base, batch_length, 0, 2) + struct.pack(">I", crc32c(after_crc)) + after_crc


def test_fabricated_batches_are_valid_kafka_batches():
    from kafka.record.memory_records import MemoryRecords

    data = _batch(10, 3, pid=7, transactional=True) + _batch(13, 1, pid=7, transactional=True, control=True)
    records = MemoryRecords(data)
    first = records.next_batch()
    assert first.validate_crc() and first.is_transactional and [r.offset for r in first] == [10, 11, 12]
    marker = records.next_batch()
    assert marker.validate_crc() and marker.is_control_batch


def _txn_partition(tmp_path, batches: list[bytes], *, hw: int | None, snapshot: tuple[int, list] | None = None):
    root = tmp_path / "txlog"
    part = root / "tx-0"
    part.mkdir(parents=True)
    (part / _name(0, ".log")).write_bytes(b"".join(batches))
    if hw is not None:
        (root / "replication-offset-checkpoint").write_text(f"0\n1\ntx 0 {hw}\n")
    if snapshot is not None:
        (part / _name(snapshot[0], ".snapshot")).write_bytes(encode_producer_snapshot(snapshot[1]))
    (pd,) = discover(str(root))
    return pd


def test_last_stable_offset_open_and_unreplicated_transactions(tmp_path):
    batches = [_batch(0, 2), _batch(2, 3, pid=7, transactional=True), _batch(5, 2, pid=8, transactional=True),
               _batch(7, 1, pid=7, transactional=True, control=True), _batch(8, 2)]
    # producer 8's transaction (first offset 5) is still open
    assert last_stable_offset(_txn_partition(tmp_path / "a", batches, hw=10)) == 5
    # close producer 8 too: everything is stable, LSO = high watermark
    closed = batches + [_batch(10, 1, pid=8, transactional=True, control=True)]
    assert last_stable_offset(_txn_partition(tmp_path / "b", closed, hw=11)) == 11
    # producer 8's marker is at the high watermark (not replicated yet): its transaction is still unstable
    assert last_stable_offset(_txn_partition(tmp_path / "c", closed, hw=10)) == 5
    # no high watermark: the log end offset caps it
    assert last_stable_offset(_txn_partition(tmp_path / "d", closed, hw=None)) == 11
    assert last_stable_offset(_txn_partition(tmp_path / "e", [_batch(0, 4)], hw=2)) == 2


def test_last_stable_offset_ignores_snapshots_above_the_high_watermark(tmp_path):
    """A broker snapshots producer state at every roll, so a copy whose high watermark lags its log end often has a
    snapshot above the high watermark. Transactions completed between the two are gone from that snapshot, but
    their markers are not replicated yet: they still hold the last stable offset down."""
    batches = [_batch(0, 2), _batch(2, 3, pid=7, transactional=True), _batch(5, 2),
               _batch(7, 1, pid=7, transactional=True, control=True), _batch(8, 2)]
    after_marker = ProducerSnapshotEntry(7, 0, 2, 4, 7, 1000, 0, -1)  # at 8: producer 7 has nothing open
    pd = _txn_partition(tmp_path / "a", batches, hw=6, snapshot=(8, [after_marker]))
    assert last_stable_offset(pd) == 2
    # with the high watermark past the marker the transaction is stable and the snapshot may be used
    pd = _txn_partition(tmp_path / "b", batches, hw=10, snapshot=(8, [after_marker]))
    assert last_stable_offset(pd) == 10


def test_last_stable_offset_uses_the_producer_snapshot(tmp_path):
    # producer 9 opened a transaction at offset 1, in data no longer walked: only the snapshot knows
    batches = [_batch(0, 1), _batch(1, 2, pid=9, transactional=True), _batch(3, 2), _batch(5, 1)]
    entry = ProducerSnapshotEntry(9, 0, 1, 2, 1, 1000, -1, 1)
    pd = _txn_partition(tmp_path / "a", batches, hw=6, snapshot=(3, [entry]))
    assert last_stable_offset(pd) == 1
    # a snapshot saying no transaction is open hides the earlier transactional batch (Kafka trusts snapshots)
    done = ProducerSnapshotEntry(9, 0, 1, 2, 1, 1000, -1, -1)
    assert last_stable_offset(_txn_partition(tmp_path / "b", batches, hw=6, snapshot=(3, [done]))) == 6
    # a corrupt snapshot is skipped: the walk from the log start finds the open transaction
    pd = _txn_partition(tmp_path / "c", batches, hw=6, snapshot=(3, [done]))
    path = pd.snapshot_paths[0]
    with open(path, "r+b") as handle:
        handle.seek(12)
        handle.write(b"\xff")
    assert last_stable_offset(pd) == 1


def _cleaned_txn_dir(root, later: list[bytes], *, cleaner_offset: int | None):
    """Segment 0 (offsets 0-4) as the cleaner left it: producer 9's transaction (from offset 1) and its COMMIT
    removed, the snapshot at 3 taken before that still listing it open; the active segment at 5 holds ``later``."""
    part = root / "tx-0"
    part.mkdir(parents=True)
    (part / _name(0, ".log")).write_bytes(_batch(0, 1) + _batch(3, 2))
    (part / _name(5, ".log")).write_bytes(b"".join(later))
    (part / _name(3, ".snapshot")).write_bytes(encode_producer_snapshot(
        [ProducerSnapshotEntry(9, 0, 1, 2, 1, 1000, -1, 1)]))  # currentTxnFirstOffset 1
    (root / "replication-offset-checkpoint").write_text("0\n1\ntx 0 8\n")
    if cleaner_offset is not None:
        (root / "cleaner-offset-checkpoint").write_text(f"0\n1\ntx 0 {cleaner_offset}\n")
    (pd,) = discover(str(root))
    return pd


def test_a_transaction_begun_below_the_cleaner_checkpoint_is_complete_even_without_its_marker(tmp_path):
    """The log cleaner cleans only stable offsets, so a transaction begun below its checkpoint had completed, even
    when the cleaner has since removed its marker and an older snapshot still lists it open."""
    plain = [_batch(5, 3)]
    assert last_stable_offset(_cleaned_txn_dir(tmp_path / "a", plain, cleaner_offset=None)) == 1  # nothing says so
    assert last_stable_offset(_cleaned_txn_dir(tmp_path / "b", plain, cleaner_offset=5)) == 8
    assert last_stable_offset(_cleaned_txn_dir(tmp_path / "c", plain, cleaner_offset=1)) == 1  # cleaned below it
    # a checkpoint above the active segment's base is no cleaner's (the active segment is never cleaned): ignored
    assert last_stable_offset(_cleaned_txn_dir(tmp_path / "d", plain, cleaner_offset=6)) == 1
    # the same producer's NEW transaction from offset 5, still open: forgetting the cleaned one must not forget it
    reused = [_batch(5, 2, pid=9, transactional=True), _batch(7, 1)]
    assert last_stable_offset(_cleaned_txn_dir(tmp_path / "e", reused, cleaner_offset=5)) == 5


def _retention_deleted_txn_dir(root, *, keep_low_snapshot: bool, hw: int, marker_at: int | None = None):
    """pid 7 opens a transaction at 10 in segment 0, which retention then deletes (log start 20). Snapshots are
    written at each roll (20, 60); ``keep_low_snapshot`` keeps the one at 20. With ``marker_at`` pid 7 commits at
    that offset (in the last segment), else the transaction stays open."""
    from kafkaseg.testing import ControlType, PartitionWriter, Record, build_batch_v2, build_control_batch
    from kafkaseg.testing.partition import write_offset_checkpoint

    writer = PartitionWriter(root / "t-0")
    ts = 1_700_000_000_000

    def plain(base, n):
        writer.append(build_batch_v2([Record(base + i, ts + base + i, None, b"v", []) for i in range(n)],
                                     base_offset=base))

    plain(0, 10)
    writer.append(build_batch_v2([Record(10 + i, ts + 10 + i, None, b"t", []) for i in range(5)], base_offset=10,
                                 producer_id=7, producer_epoch=0, base_sequence=0, is_transactional=True))
    plain(15, 5)
    writer.roll()
    for base in range(20, 60, 10):
        plain(base, 10)
    writer.roll()
    if marker_at is None:
        plain(60, 10)
    else:
        plain(60, marker_at - 60)
        writer.append(build_control_batch(marker_at, ts + marker_at, ControlType.COMMIT, producer_id=7,
                                          producer_epoch=0))
        plain(marker_at + 1, 5)
    writer.close()
    for path in (root / "t-0").glob(_name(0, ".*")):
        path.unlink()
    if not keep_low_snapshot:
        (root / "t-0" / _name(20, ".snapshot")).unlink()
    write_offset_checkpoint(root / "replication-offset-checkpoint", {("t", 0): hw})
    write_offset_checkpoint(root / "log-start-offset-checkpoint", {("t", 0): 20})
    (pd,) = discover(str(root))
    return pd


@pytest.mark.parametrize("keep_low_snapshot", [True, False])
def test_last_stable_offset_of_a_transaction_begun_in_a_deleted_segment(tmp_path, keep_low_snapshot):
    """Still open: the LSO is held at the log start (UnifiedLog.maybeIncrementFirstUnstableOffset never lets it
    below), whether the snapshot at or below the high watermark survives or only a later one says it is open."""
    pd = _retention_deleted_txn_dir(tmp_path / "a", keep_low_snapshot=keep_low_snapshot, hw=50)
    assert pd.log_start_offset == 20
    assert last_stable_offset(pd) == 20


def test_last_stable_offset_of_a_deleted_transaction_committed_past_the_high_watermark(tmp_path):
    """No snapshot at or below the high watermark: the walk from the first segment meets a marker for a
    transaction it never saw begin, past the high watermark: unstable, begun before the log start."""
    pd = _retention_deleted_txn_dir(tmp_path / "a", keep_low_snapshot=False, hw=50, marker_at=65)
    assert last_stable_offset(pd) == 20
    # with the marker below the high watermark the transaction is stable
    pd = _retention_deleted_txn_dir(tmp_path / "b", keep_low_snapshot=False, hw=70, marker_at=65)
    assert last_stable_offset(pd) == 70


def test_a_torn_transaction_opening_batch_past_the_high_watermark_does_not_fail_read_committed(tmp_path):
    batches = [_batch(0, 40), _batch(40, 5, pid=7, transactional=True)]
    torn = bytearray(batches[1])
    torn[-3:] = b"\0\0\0"  # the tail of an append a crash cut: its CRC fails
    pd = _txn_partition(tmp_path / "a", [batches[0], bytes(torn)], hw=40)
    assert last_stable_offset(pd) == 40


def test_a_marker_for_a_transaction_without_data_does_not_move_the_last_stable_offset(tmp_path):
    """ProducerAppendInfo.appendEndTxnMarker: 'A transaction marker without any associated data will not have any
    impact on the last stable offset' (a fenced producer's abort lands on every partition added to the
    transaction). Here the only snapshot lies above the high watermark, so the walk starts at the first segment."""
    marker = _batch(10, 1, pid=9, transactional=True, control=True)
    batches = [_batch(0, 10), marker, _batch(11, 5)]
    pd = _txn_partition(tmp_path / "a", batches, hw=10, snapshot=(16, []))
    assert last_stable_offset(pd) == 10


def test_a_fifo_in_place_of_a_checkpoint_is_refused_not_waited_on(tmp_path):
    """Opening a FIFO blocks until a writer comes: small files are opened as segments are (non-blocking, regular
    files only)."""
    import os

    import kafkaseg
    from kafkaseg.errors import CorruptCheckpointError
    from kafkaseg.testing import TopicSpec, write_data_dir

    write_data_dir(tmp_path, [TopicSpec("t", records_per_partition=20)])
    (tmp_path / "replication-offset-checkpoint").unlink()
    os.mkfifo(tmp_path / "replication-offset-checkpoint")
    with pytest.raises(CorruptCheckpointError, match="not a regular file"):
        kafkaseg.read_arrow(str(tmp_path))
    assert kafkaseg.read_arrow(str(tmp_path), upperBound="logEndOffset").num_rows == 20


def test_names_that_are_not_utf8_are_left_out_of_a_listing(tmp_path):
    import os

    import kafkaseg
    from kafkaseg.testing import TopicSpec, write_data_dir

    write_data_dir(tmp_path, [TopicSpec("t", records_per_partition=20)])
    for folder in (tmp_path, tmp_path / "t-0"):
        open(os.path.join(os.fsencode(folder), b"notes-\xe9t\xe9.txt"), "wb").close()
    assert kafkaseg.read_arrow(str(tmp_path)).num_rows == 20


def test_a_corrupt_swap_file_is_its_partitions_problem_not_the_log_dirs(tmp_path):
    """A .swap file is resolved at discovery, before any read option exists: its bad framing used to fail every read
    of the log dir, lenient ones and ones of other topics included."""
    import kafkaseg
    from kafkaseg.errors import UnsupportedMagicError
    from kafkaseg.testing import TopicSpec, write_data_dir

    write_data_dir(tmp_path, [TopicSpec("a", records_per_partition=50, records_per_batch=5, segment_bytes=1024),
                              TopicSpec("b", records_per_partition=20)])
    (tmp_path / "a-0" / _name(0, ".log.swap")).write_bytes(b"\xff" * 100)
    assert kafkaseg.read_arrow(str(tmp_path), subscribe="b").num_rows == 20
    with pytest.raises(UnsupportedMagicError) as info:
        kafkaseg.read_arrow(str(tmp_path), subscribe="a")
    assert info.value.path.endswith(".log.swap") and info.value.position == 0
    scan = kafkaseg.open_scan(str(tmp_path), subscribe="a", onCorruption="skip")
    assert scan.to_table().num_rows > 0 and scan.metrics.decode.corrupt_batches == 1
    assert any("corrupt framing" in note for p in scan.plan.report.partitions for note in p.notes) or \
        any("corrupt framing" in note for note in scan.plan.report.notes)


def test_partitions_left_out_by_the_topic_options_are_reported_once_each_in_order(tmp_path):
    """Discovery only names the folders a read's topic options leave out; a log dir given twice (or as a glob and
    a path) named them twice, and the report listed them in listing order (found in review)."""
    import kafkaseg
    from kafkaseg.testing import TopicSpec, write_data_dir

    write_data_dir(tmp_path, [TopicSpec("orders", partitions=2, records_per_partition=10),
                              TopicSpec("pay", partitions=12, records_per_partition=5)])
    for paths in ([str(tmp_path)], [str(tmp_path), str(tmp_path)], [str(tmp_path / "pay-*"), str(tmp_path)]):
        pruned = kafkaseg.open_scan(paths, subscribe="orders").plan.report.partitions_pruned
        assert [(t, p) for t, p, _ in pruned] == [("pay", n) for n in range(12)], paths


def _cleaner_before_its_last_rename(root, topic_dir: str) -> list:
    """The log cleaner between its last two steps (``LocalLog.replaceSegments``): the cleaned copy of segment 0 is
    in place as ``.swap`` files and the old segment's files were renamed ``.deleted``. Returns the swap files."""
    part = root / topic_dir
    swaps = []
    for old in sorted(part.glob(_name(0, ".*"))):
        if old.suffix == ".snapshot":
            continue
        shutil.copy(old, old.with_name(old.name + ".swap"))
        old.rename(old.with_name(old.name + ".deleted"))
        swaps.append(old.with_name(old.name + ".swap"))
    return swaps


def test_a_swap_file_renamed_by_the_cleaner_during_discovery_is_found_under_its_new_name(tmp_path, monkeypatch):
    """The cleaner's last rename (X.log.swap -> X.log) between discovery's folder listing and its read of the .swap
    failed every read and stream with "cannot open ... .log.swap" (found in review): the folder is listed again."""
    import kafkaseg
    import kafkaseg.storage.layout as layout
    from kafkaseg.testing import TopicSpec, write_data_dir

    write_data_dir(tmp_path, [TopicSpec("t", records_per_partition=300, records_per_batch=10, segment_bytes=2048)])
    swaps = _cleaner_before_its_last_rename(tmp_path, "t-0")
    real = layout._swap_next_offset
    calls = []

    def renamed_meanwhile(*args, **kwargs):
        if not calls:
            for swap in swaps:  # the broker's next step, just after the listing
                swap.rename(swap.with_name(swap.name[:-len(".swap")]))
        calls.append(args[0])
        return real(*args, **kwargs)

    monkeypatch.setattr(layout, "_swap_next_offset", renamed_meanwhile)
    table = kafkaseg.read_arrow(str(tmp_path))
    assert len(calls) == 1 and table.num_rows == 300
    assert table.column("offset").to_pylist() == list(range(300))


def test_a_folder_whose_swap_file_is_gone_at_every_listing_fails_clearly(tmp_path, monkeypatch):
    import kafkaseg.storage.layout as layout
    from kafkaseg.testing import TopicSpec, write_data_dir

    write_data_dir(tmp_path, [TopicSpec("t", records_per_partition=300, records_per_batch=10, segment_bytes=2048)])
    (swap,) = [s for s in _cleaner_before_its_last_rename(tmp_path, "t-0") if s.name.endswith(".log.swap")]
    real = layout._swap_next_offset
    calls = []

    def gone_while_read(*args, **kwargs):
        calls.append(args[0])
        away = swap.with_name("elsewhere")
        swap.rename(away)
        try:
            return real(*args, **kwargs)
        finally:
            away.rename(swap)

    monkeypatch.setattr(layout, "_swap_next_offset", gone_while_read)
    with pytest.raises(LayoutError, match="listed but gone when read, 4 listings in a row"):
        discover(str(tmp_path))
    assert len(calls) == layout.REDISCOVERIES + 1


def test_one_log_dir_given_under_two_names_is_read_once(tmp_path):
    """A log dir given as itself and through a symlink (or a bind mount) was read as two replicas of every
    partition: replicas=all returned each record twice and retention counted every segment twice (found in review).
    Folders are known by their real path; the first name given is the one kept."""
    import kafkaseg
    from kafkaseg.testing import TopicSpec, write_data_dir

    data = tmp_path / "data"
    write_data_dir(data, [TopicSpec("a", partitions=2, records_per_partition=50)], seed=3)
    (tmp_path / "link").symlink_to(data)
    once = discover([str(data)])
    twice = discover([str(data), str(tmp_path / "link"), str(tmp_path / "link" / "a-0")])
    assert [p.path for p in twice] == [p.path for p in once] and len(once) == 2
    assert [p.path for p in discover([str(tmp_path / "link"), str(data)])] == [
        str(tmp_path / "link" / "a-0"), str(tmp_path / "link" / "a-1")]
    table = kafkaseg.read_arrow([str(data), str(tmp_path / "link")], replicas="all")
    assert table.num_rows == 100


def test_paths_are_a_union_in_any_order_and_under_any_name(tmp_path):
    """Found in review of the real-path keys: a .log file given before its folder shrank the partition's read to
    that file, a symlinked partition folder given beside its log dir was read twice, and one .log file under two
    names was refused as two files starting at the same offset."""
    import kafkaseg
    from kafkaseg.testing import TopicSpec, write_data_dir

    disk, data = tmp_path / "disk2", tmp_path / "data"
    write_data_dir(data, [TopicSpec("a", partitions=2, records_per_partition=400, segment_bytes=8 * 1024)], seed=3)
    disk.mkdir()
    shutil.move(str(data / "a-0"), str(disk / "a-0"))
    (data / "a-0").symlink_to(disk / "a-0")  # a partition moved to another disk, linked from the log dir
    (tmp_path / "link").symlink_to(data)
    first = sorted((data / "a-0").glob("*.log"))[0]
    whole = {0: 400, 1: 400}

    def counts(*paths, **options):
        table = kafkaseg.read_arrow([str(p) for p in paths], **options)
        partitions = table.column("partition").to_pylist()
        return {p: partitions.count(p) for p in sorted(set(partitions))}

    for paths in ([first, data / "a-0"], [first, data], [data, first], [first, tmp_path / "link" / "*"],
                  [data, data / "a-0"], [data, disk / "a-0"], [tmp_path / "link", data / "a-0", first]):
        expected = {0: 400} if paths == [first, data / "a-0"] else whole
        assert counts(*paths, replicas="all") == expected, paths
        assert not any(p.given_files for p in discover([str(p) for p in paths])), paths
    again = tmp_path / "link" / "a-0" / first.name  # the same file by another name: read once
    assert counts(first, again) == counts(first) == {0: len(kafkaseg.read_arrow(str(first)))}
    [pdir] = discover([str(first), str(again)])
    assert len(pdir.segments) == 1 and pdir.whole is not None


def test_segment_names_as_a_broker_reads_them(tmp_path):
    """Found in review: a short-named stale copy (522.log) beside the segment's 20-digit file replaced it (a broker
    opens the 20-digit name), and a base offset beyond int64 in a name raised Python's OverflowError."""
    import kafkaseg
    from kafkaseg.testing import TopicSpec, write_data_dir

    write_data_dir(tmp_path / "d", [TopicSpec("t", records_per_partition=600, segment_bytes=8 * 1024)], seed=2)
    folder = tmp_path / "d" / "t-0"
    logs = sorted(folder.glob("*.log"))
    whole = kafkaseg.read_arrow(str(tmp_path / "d")).num_rows
    stale = folder / f"{int(logs[1].stem)}.log"
    stale.write_bytes(logs[1].read_bytes()[:200])
    [pdir] = discover(str(tmp_path / "d"))
    assert [s.log_path for s in pdir.segments] == [str(p) for p in logs]
    assert any(f"ignored {stale.name}" in n for n in pdir.notes)
    assert kafkaseg.read_arrow(str(tmp_path / "d")).num_rows == whole
    # the segment's own .timeindex missing, a stale short-named one is not taken for it (a broker rebuilds it)
    logs[1].with_suffix(".timeindex").unlink()
    stale.with_suffix(".timeindex").write_bytes(logs[2].with_suffix(".timeindex").read_bytes())
    [pdir] = discover(str(tmp_path / "d"))
    assert pdir.segments[1].timeindex_path is None and pdir.segments[1].index_path == str(logs[1].with_suffix(".index"))
    assert any(f"ignored {stale.stem}.timeindex" in n for n in pdir.notes)
    stale.with_suffix(".timeindex").unlink()
    stale.unlink()
    (folder / "99999999999999999999.log").write_bytes(b"")
    with pytest.raises(LayoutError, match="99999999999999999999.log: base offset .* does not fit in a 64-bit long"):
        discover(str(tmp_path / "d"))


def test_a_long_named_topic_deleted_while_its_log_dir_is_listed_is_left_out(tmp_path, monkeypatch):
    """The broker cuts the topic in a -delete name to fit 255 characters (LocalLog.logDirNameWithSuffixCappedLength):
    a 249-character topic deleted mid-listing failed the whole read (found in review); a short one was left out."""
    import kafkaseg.storage.layout as layout
    from kafkaseg.testing import TopicSpec, write_data_dir

    topic = "t" * 249
    write_data_dir(tmp_path / "d", [TopicSpec(topic, records_per_partition=10), TopicSpec("keep")], seed=1)
    folder = tmp_path / "d" / f"{topic}-0"
    suffix = "-0." + "0123456789abcdef" * 2 + "-delete"
    real = layout.read_partition_dir

    def renamed_meanwhile(path, *args, **kwargs):
        if path == str(folder) and folder.exists():
            folder.rename(folder.with_name(topic[:255 - len(suffix)] + suffix))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(layout, "read_partition_dir", renamed_meanwhile)
    skipped: list = []
    assert [(p.topic, p.partition) for p in discover(str(tmp_path / "d"), skipped=skipped)] == [("keep", 0)]
    assert [(name.rsplit("/", 1)[-1], reason.split(" (")[0]) for name, reason in skipped] == [
        (f"{topic}-0", "gone while the log dir was read")]


def test_a_listing_taken_across_the_cleaners_rename_is_taken_again(tmp_path, monkeypatch):
    """A directory listing is no snapshot: one taken while the cleaner renames its merged X.log.swap to X.log can
    hold neither name (X's originals already .deleted), and a name read before a rename is gone by its stat. A
    local folder changed while it was listed (its status change time moved) or with a name gone by its stat is
    listed again, so the merged segment is not left out as if its offsets were a compaction gap (found by a live
    test: a whole segment's records missing, with no error); a quiet folder is listed once."""
    import os
    import time

    from kafkaseg.storage import fs as _fs
    from kafkaseg.storage import layout
    from kafkaseg.testing import TopicSpec, write_data_dir

    write_data_dir(tmp_path, [TopicSpec("r", records_per_partition=600, records_per_batch=20, segment_bytes=8_000)])
    folder = tmp_path / "r-0"
    logs = sorted(folder.glob("*.log"))
    assert len(logs) >= 4
    merged_base = int(logs[1].name[:20])
    swap = folder / (logs[1].name + ".swap")
    swap.write_bytes(logs[1].read_bytes() + logs[2].read_bytes())
    for log in logs[1:3]:  # the merge's originals, renamed .deleted before the swap is renamed in
        log.rename(folder / (log.name + ".deleted"))
    real = _fs._list_local
    calls = []

    def across_the_rename(path):
        entries, gone = real(path)
        calls.append(path)
        if path == str(folder) and len(calls) == 1:  # the names were read, then the swap renamed in: neither seen
            os.rename(swap, logs[1])
            entries = [e for e in entries if e.name not in (swap.name, logs[1].name)]
        return entries, gone

    monkeypatch.setattr(_fs, "_list_local", across_the_rename)
    pdir = layout.read_partition_dir(str(folder))
    assert merged_base in [s.base_offset for s in pdir.segments] and calls.count(str(folder)) >= 2
    assert [s.base_offset for s in pdir.segments if s.base_offset == int(logs[2].name[:20])] == []

    # a name gone by its stat (a deletion under way): listed again too
    calls.clear()
    monkeypatch.setattr(_fs, "_list_local", lambda path: (calls.append(path), real(path)[0],
                                                          [logs[0].name] if len(calls) == 1 else [])[1:])
    layout.read_partition_dir(str(folder))
    assert calls.count(str(folder)) >= 2
    # a folder that has not changed for a clock tick is listed once, .deleted files or not
    time.sleep(2 * _fs.CTIME_TICK_NS / 1e9)
    calls.clear()
    monkeypatch.setattr(_fs, "_list_local", lambda path: (calls.append(path), *real(path))[1:])
    layout.read_partition_dir(str(folder))
    assert calls.count(str(folder)) == 1
    # a folder whose segment files change under every listing is an error, never a listing that may miss one
    from kafkaseg.errors import LayoutError

    def renamed_each_time(path):
        entries, gone = real(path)
        calls.append(path)
        if path == str(folder):  # (a rename changes the folder's status change time too)
            (folder / "renamed.tmp").write_bytes(b"")
            (folder / "renamed.tmp").unlink()
        return [e._replace(identity=(0, len(calls))) if e.name == logs[0].name else e for e in entries], gone

    monkeypatch.setattr(_fs, "_list_local", renamed_each_time)
    with pytest.raises(LayoutError, match="cannot list .* whole"):
        layout.read_partition_dir(str(folder))


def test_a_segment_replaced_after_the_listing_is_read_as_listed(tmp_path, monkeypatch):
    """The plan is of the files the listing saw (their size and inode, from one stat): when the cleaner renames
    its compacted copy of segments 0 and 1 into segment 0's name before planning looks at the file, the planning
    notices the name holds another file and plans the partition as it is now, instead of reading the copy's bytes
    at the original's positions (found by review: a TruncatedDataError, 405 records unread)."""
    import os

    import kafkaseg
    from kafkaseg.storage import fs as _fs
    from kafkaseg.testing import TopicSpec, write_data_dir

    write_data_dir(tmp_path, [TopicSpec("r", records_per_partition=900, records_per_batch=20,
                                        segment_bytes=12_000)])
    folder = tmp_path / "r-0"
    logs = sorted(folder.glob("*.log"))
    assert len(logs) >= 3
    expected = kafkaseg.read_arrow(str(tmp_path))
    real = _fs.settled_list_dir
    done = []

    def then_the_cleaner_swaps(path, filesystem=None):
        entries = real(path, filesystem)
        if str(path).endswith("r-0") and not done:
            done.append(True)
            compacted = folder / "compacted.tmp"  # every other batch of segments 0 and 1 (smaller than segment 0)
            from kafkaseg.wire.batch import iter_headers

            data = logs[0].read_bytes() + logs[1].read_bytes()
            heads = list(iter_headers(logs[0].read_bytes()))
            heads += [h._replace(position=h.position + logs[0].stat().st_size)
                      for h in iter_headers(logs[1].read_bytes())]
            compacted.write_bytes(b"".join(data[h.position:h.position + h.size] for n, h in enumerate(heads)
                                           if n % 2 == 0))
            for log in logs[:2]:
                os.rename(log, str(log) + ".deleted")
            os.rename(compacted, logs[0])
        return entries

    monkeypatch.setattr(_fs, "settled_list_dir", then_the_cleaner_swaps)
    scan = kafkaseg.open_scan(str(tmp_path), splitSize="4096")
    table = scan.to_table()
    assert done
    # the plan is of the folder as listed (the originals, from their .deleted names) or, where planning failed
    # on the names' new contents, as it is now (the compacted copy's records): either way each record once and
    # as written
    kept = kafkaseg.read_arrow(str(tmp_path))
    assert len(kept) < len(expected) and (table.equals(kept) or table.equals(expected))
    by_offset = {o: v for o, v in zip(expected.column("offset").to_pylist(), expected.column("value").to_pylist())}
    assert all(by_offset[o] == v for o, v in zip(table.column("offset").to_pylist(),
                                                 table.column("value").to_pylist()))


def test_a_segment_deleted_while_another_is_replaced_during_planning_is_still_read(tmp_path, monkeypatch):
    """Retention renames segment 0 .deleted while the cleaner renames a copy into segment 2's name, both during
    planning: the plan is done again with segment 2 as it is now, and segment 0 as listed (read from its
    .deleted name), not on a fresh listing whose log start is past it (found by review: a DataLossError for
    records still readable)."""
    import os
    import shutil

    import kafkaseg
    from kafkaseg import planning
    from kafkaseg.testing import PartitionWriter, Record, build_batch_v2
    from kafkaseg.testing.partition import write_offset_checkpoint

    folder = tmp_path / "t-0"
    writer = PartitionWriter(folder, segment_bytes=2048, index_interval_bytes=512)
    for lo in range(0, 600, 20):
        writer.append(build_batch_v2([Record(o, 1_700_000_000_000 + o, b"k", b"v" * 30, ())
                                      for o in range(lo, lo + 20)]))
    writer.close()
    write_offset_checkpoint(tmp_path / "replication-offset-checkpoint", {("t", 0): 600})
    logs = sorted(folder.glob("*.log"))
    planned = planning._plan_partition
    done = []

    def during_planning(*args, **kwargs):
        out = planned(*args, **kwargs)
        if not done:
            done.append(True)
            for path in folder.glob(logs[0].name[:20] + ".*"):
                os.rename(path, str(path) + ".deleted")  # retention
            copy = folder / (logs[2].name + ".cleaned")
            shutil.copyfile(logs[2], copy)
            os.rename(copy, logs[2])  # the cleaner's copy (nothing to drop here) renamed in
        return out

    monkeypatch.setattr(planning, "_plan_partition", during_planning)
    scan = kafkaseg.open_scan(str(tmp_path), startingOffsets='{"t":{"0":0}}')
    assert [o for b in scan for o in b.column("offset").to_pylist()] == list(range(600))
    assert done


def test_a_partition_folder_renamed_in_while_the_log_dir_was_listed_is_found(tmp_path, monkeypatch):
    """A move between log dirs ends with ``t-1.<id>-future`` renamed ``t-1``: a log dir listing taken across the
    rename can hold neither name, and two such listings hold the same (no) segment files. The log dir's folders
    are compared too, so the partition is found (found by review: its records silently missing)."""
    import os

    from kafkaseg.storage import fs as _fs
    from kafkaseg.storage import layout
    from kafkaseg.testing import TopicSpec, write_data_dir

    write_data_dir(tmp_path, [TopicSpec("t", partitions=2, records_per_partition=50)])
    future = tmp_path / "t-1.0123456789abcdef0123456789abcdef-future"
    (tmp_path / "t-1").rename(future)
    real = _fs._list_local
    calls = []

    def across_the_move(path):
        entries, gone = real(path)
        calls.append(path)
        if path == str(tmp_path) and calls.count(str(tmp_path)) == 1:
            os.rename(future, tmp_path / "t-1")  # during the listing: neither name seen
            entries = [e for e in entries if e.name not in (future.name, "t-1")]
        return entries, gone

    monkeypatch.setattr(_fs, "_list_local", across_the_move)
    found = layout.read_log_dir(str(tmp_path))
    assert [(p.topic, p.partition) for p in found.partitions] == [("t", 0), ("t", 1)]


def test_a_folder_rolling_under_every_listing_is_listed(tmp_path, monkeypatch):
    """A broker rolling new segments faster than a listing takes: each listing differs from the next by new
    segment files past the last one, which a listing may miss without missing the log (it ends there). Such a
    listing, confirmed by the next, is taken, not refused as a folder that keeps changing."""
    from kafkaseg.storage import fs as _fs
    from kafkaseg.storage import layout
    from kafkaseg.testing import TopicSpec, write_data_dir

    write_data_dir(tmp_path, [TopicSpec("r", records_per_partition=300, segment_bytes=4_000)])
    folder = tmp_path / "r-0"
    bases = sorted(int(p.name[:20]) for p in folder.glob("*.log"))
    real = _fs._list_local
    rolled = [bases[-1] + 1000]

    def rolling(path):
        entries, gone = real(path)
        if path == str(folder):  # a new (empty) segment after every listing
            (folder / f"{rolled[-1]:020d}.log").write_bytes(b"")
            rolled.append(rolled[-1] + 1000)
        return entries, gone

    monkeypatch.setattr(_fs, "_list_local", rolling)
    pdir = layout.read_partition_dir(str(folder))
    assert [s.base_offset for s in pdir.segments][:len(bases)] == bases


def test_a_move_between_log_dirs_ending_during_discovery_keeps_the_partition(tmp_path, monkeypatch):
    """The broker ends a move by renaming the destination's -future folder to its final name, then the
    source's folder to -delete. Discovery reading the destination before the move ended and the source after it
    saw the partition in neither; it now looks for a -future folder's partition under its final name once every
    log dir was read (found by review: a stream lost the partition for a trigger and read it again)."""
    import os
    import shutil

    from kafkaseg.storage import layout
    from kafkaseg.testing import TopicSpec, write_data_dir

    source = write_data_dir(tmp_path / "a", [TopicSpec("t", records_per_partition=300)], node_id=1)
    destination = tmp_path / "b"
    write_data_dir(destination, [TopicSpec("u", records_per_partition=10)], node_id=1)
    future = destination / "t-0.0123456789abcdef0123456789abcdef-future"
    shutil.copytree(source.path / "t-0", future)
    real = layout.read_log_dir

    def move_ends_after(path, *args, **kwargs):
        listed = real(path, *args, **kwargs)
        if str(path) == str(destination) and future.exists():
            os.rename(future, destination / "t-0")
            os.rename(source.path / "t-0", source.path / "t-0.0123456789abcdef0123456789abcdef-delete")
        return listed

    monkeypatch.setattr(layout, "read_log_dir", move_ends_after)
    found = layout.discover([str(destination), str(source.path)])
    assert [(p.topic, p.partition, p.path) for p in found if p.topic == "t"] == [("t", 0, str(destination / "t-0"))]
    # also when another broker's log dir holds a replica of the partition: that one is not this broker's
    os.rename(destination / "t-0", future)
    os.rename(source.path / "t-0.0123456789abcdef0123456789abcdef-delete", source.path / "t-0")
    other = write_data_dir(tmp_path / "c", [TopicSpec("t", records_per_partition=100)], node_id=2)
    found = layout.discover([str(destination), str(source.path), str(other.path)])
    assert sorted(p.path for p in found if p.topic == "t") == sorted([str(destination / "t-0"),
                                                                     str(other.path / "t-0")])
    # and when the moving broker's log dirs say no broker (no meta.properties): a broker with a node id is another
    os.rename(destination / "t-0", future)
    os.rename(source.path / "t-0.0123456789abcdef0123456789abcdef-delete", source.path / "t-0")
    (destination / "meta.properties").unlink()
    (source.path / "meta.properties").unlink()
    found = layout.discover([str(destination), str(source.path), str(other.path)])
    assert sorted(p.path for p in found if p.topic == "t") == sorted([str(destination / "t-0"),
                                                                     str(other.path / "t-0")])


def test_a_log_dir_whose_topic_is_being_deleted_is_listed(tmp_path, monkeypatch):
    """A topic deletion renames every partition folder <tp>.<id>-delete, one after another, for as long as a large
    topic takes: listings taken meanwhile differ by those renames only, which miss no live folder, so the log dir
    is listed (found by review: a FolderChangingError after over a second, ending a stream reading another topic)."""
    import os

    from kafkaseg.storage import fs as _fs
    from kafkaseg.storage import layout
    from kafkaseg.testing import TopicSpec, write_data_dir

    write_data_dir(tmp_path, [TopicSpec("gone", partitions=40, records_per_partition=5),
                              TopicSpec("kept", records_per_partition=20)])
    real = _fs._list_local
    doomed = [f"gone-{p}" for p in range(40)]

    def deleting(path):
        entries, gone = real(path)
        if path == str(tmp_path) and doomed:  # one more folder renamed away after every listing
            name = doomed.pop()
            os.rename(tmp_path / name, tmp_path / f"{name}.0123456789abcdef0123456789abcdef-delete")
        return entries, gone

    monkeypatch.setattr(_fs, "_list_local", deleting)
    found = layout.read_log_dir(str(tmp_path))
    assert ("kept", 0) in [(p.topic, p.partition) for p in found.partitions]
    # and a minute later the -delete folders are removed, one after another: no live folder goes with them
    import shutil

    for name in doomed:
        os.rename(tmp_path / name, tmp_path / f"{name}.0123456789abcdef0123456789abcdef-delete")
    doomed.clear()
    removing = sorted(tmp_path.glob("*-delete"))
    assert len(removing) == 40

    def removed(path):
        entries, gone = real(path)
        if path == str(tmp_path) and removing:
            shutil.rmtree(removing.pop())
        return entries, gone

    monkeypatch.setattr(_fs, "_list_local", removed)
    found = layout.read_log_dir(str(tmp_path))
    assert [(p.topic, p.partition) for p in found.partitions] == [("kept", 0)]


@pytest.mark.parametrize("folder_name", ["t-0", "copied-segments"])
def test_log_files_given_one_by_one_list_their_folder_once(tmp_path, monkeypatch, folder_name):
    # a glob over a partition's segments read the folder (a listing and a stat of every entry) once per file:
    # quadratic, 25 s for 1,000 segments; now once per folder, and the result is the folder's own
    from kafkaseg.storage import fs as fs_module
    from kafkaseg.testing import PartitionWriter, Record, build_batch_v2

    folder = tmp_path / folder_name
    writer = PartitionWriter(folder, segment_bytes=1)
    for base in range(0, 120, 2):
        writer.append(build_batch_v2([Record(base, 1_700_000_000_000, b"k", b"v"),
                                      Record(base + 1, 1_700_000_000_001, b"k", b"v")]))
    writer.close()
    logs = sorted(str(p) for p in folder.glob("*.log"))
    assert len(logs) == 60
    listed = []
    real_list_dir = fs_module.list_dir
    monkeypatch.setattr(fs_module, "list_dir", lambda path, *a, **k: listed.append(path) or real_list_dir(path, *a, **k))
    real_settled = fs_module.settled_list_dir
    monkeypatch.setattr(fs_module, "settled_list_dir",
                        lambda path, *a, **k: listed.append(path) or real_settled(path, *a, **k))
    (given,) = discover(logs[::-1])  # any order
    assert len(listed) <= 3, listed
    assert [s.log_path for s in given.segments] == logs
    assert given.given_files and [given.is_active_segment(p) for p in logs] == [False] * 59 + [True]
    assert len(listed) <= 3, listed
    if folder_name == "t-0":
        (whole,) = discover(str(folder))
        assert given.whole is not None and [s.log_path for s in whole.segments] == logs
    shutil.copy(logs[0], folder / "restored.log")  # a copy of the first segment: two files for offset 0
    with pytest.raises(LayoutError, match="both start at offset 0"):
        discover([*logs, str(folder / "restored.log")])


def _zero_tailed(root, case: str):
    """A partition whose active segment ends in zeros (a broker's preallocated file): after whole batches
    ("zeros"), after an append's first bytes ("partial"), or after a batch whose CRC fails ("torn"); its .index's
    last entry at a batch ("indexed"), inside the zeros ("entry in zeros"), inside a batch ("entry mid-batch") or no
    .index ("no index")."""
    from kafkaseg.testing import PartitionWriter, Record, build_batch_v2

    writer = PartitionWriter(root / "t-0", index_interval_bytes=300, write_snapshots=False)
    for n in range(12):
        writer.append(build_batch_v2([Record(n * 3 + j, 1_000 + n * 3 + j, b"k", b"v" * 40) for j in range(3)]))
    log = writer.close()
    active = root / "t-0" / log.segments[-1].log_path.name
    data = active.read_bytes()
    extra = build_batch_v2([Record(36 + j, 2_000 + j, b"k", b"v" * 40) for j in range(3)]).data
    if case.startswith("partial"):
        data += extra[:20]
    elif case.startswith("torn"):
        data += extra[:-1] + bytes([extra[-1] ^ 1])
    active.write_bytes(data + b"\0" * 4096)
    index = active.with_suffix(".index")
    if case.endswith("no index"):
        index.unlink()
    elif case.endswith("entry in zeros"):
        index.write_bytes(index.read_bytes() + struct.pack(">ii", 40, len(data) + 100))
    elif case.endswith("entry mid-batch"):
        index.write_bytes(index.read_bytes() + struct.pack(">ii", 35, len(data) - 30))
    return active


@pytest.mark.parametrize("case", [f"{tail} {index}" for tail in ("zeros", "partial", "torn")
                                  for index in ("indexed", "entry in zeros", "entry mid-batch", "no index")])
def test_the_headers_before_zeros_are_walked_once_for_the_log_end(tmp_path, monkeypatch, case):
    """find_log_end's offset before a zero-filled tail (layout._offset_before_zeros) and its torn-append check
    (segment.torn_before_zeros) take the last batch zero_filled_tail walked on its way to the zeros, when that walk
    started where theirs would: no second and third walk of the same headers (each walked them again, up to the
    zeros' byte). Every answer is the one of those walks."""
    import kafkaseg.storage.layout as layout
    import kafkaseg.storage.segment as segment

    active = _zero_tailed(tmp_path, case)
    (pdir,) = discover(str(tmp_path / "t-0"))
    index = active.with_suffix(".index")
    last_entry = struct.unpack(">ii", index.read_bytes()[-8:])[1] if index.exists() else 0
    walks, iter_headers = [], segment.SegmentReader.iter_headers

    def counted(self, start=0, end=None, **kwargs):
        walks.append((self.path, start, end))
        return iter_headers(self, start, end, **kwargs)

    monkeypatch.setattr(segment.SegmentReader, "iter_headers", counted)
    answers, shortcut, torn = [], layout._offset_before_zeros, segment.torn_before_zeros
    for judge in (shortcut, lambda *args: shortcut(*args[:6])):
        monkeypatch.setattr(layout, "_offset_before_zeros", judge)
        if judge is not shortcut:  # (and the torn-append check walks again too)
            monkeypatch.setattr(segment, "torn_before_zeros", lambda *args, zero_walk=None, **kw: torn(*args, **kw))
        for lenient, index_start in ((False, None), (True, None), (False, lambda: last_entry),
                                     (True, lambda: last_entry)):  # (planning's: from the last index entry)
            del walks[:]
            try:
                found = layout.find_log_end(pdir, lenient=lenient, index_start=index_start)
                answers.append((found.offset, found.position, found.clean, found.notes))
            except Exception as err:  # (the same error either way)
                answers.append((type(err).__name__, str(err)))
            if judge is shortcut:  # (the walks again were up to an explicit end, the zeros' byte, from its start)
                mine = [w for w in walks if w[0] == str(active)]
                again = [w for n, w in enumerate(mine) if w[2] is not None
                         and w[1] == [v for v in mine[:n] if v[2] is None][-1][1]]
                assert again == [], walks
    assert answers[:4] == answers[4:], answers
