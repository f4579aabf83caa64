"""Tiered-storage (KIP-405) copies: Aiven's and LocalTieredStorage's layouts are discovered and read like the log
they were copied from, with their own indexes, and copies that cannot be read as one log are refused by name."""

from __future__ import annotations

import json
import re
import shutil
import threading
from pathlib import Path

import pyarrow.compute as pc
import pytest

import kafkaseg
from kafkaseg.cli.main import main
from kafkaseg.errors import LayoutError
from kafkaseg.lookup import list_offset
from kafkaseg.storage import tiered
from kafkaseg.storage.indexes import load_indexes
from kafkaseg.storage.layout import choose_replicas, discover
from kafkaseg.storage.offset_index import OffsetIndex
from kafkaseg.storage.time_index import TimeIndex
from kafkaseg.testing import TopicSpec, write_data_dir
from kafkaseg.testing.tiered import copy_to_tiered, kafka_uuid
from tests.oracle import kafka_python_records

LAYOUTS = ["aiven", "local"]
COLUMNS = ["topic", "partition", "offset", "timestamp", "timestampType", "key", "value"]

# real broker folders with rolled segments (and their .index/.timeindex as the broker left them); the KRaft
# metadata log has one segment, with 521 offset index entries: copied as a segment rolled as it is
CORPUS_PARTITIONS = [
    "segments/smartassets__backend-server/51801d05/kafka/data/docker-connect-configs-0",
    "segments/smartassets__backend-server/51801d05/kafka/data/docker-connect-status-2",
    "segments/RaviAzzuraPutra__LATIHAN-MICROSERVICE-NEW",
]


def _corpus_partition(corpus_dir: Path, relative: str) -> Path:
    path = corpus_dir / relative
    if path.name.startswith("RaviAzzura"):  # __cluster_metadata-0 somewhere below
        path = next(p for p in path.rglob("__cluster_metadata-0") if p.is_dir())
    return path


def _whole(folder: Path) -> bool:
    return folder.name == "__cluster_metadata-0"


def _copy(folder: Path, root: Path, **kwargs) -> list[Path]:
    return copy_to_tiered(folder, root, include_last=_whole(folder), **kwargs)


def _rolled_rows(folder: Path, **options):
    """The rows of ``folder``'s rolled segments (what a broker copies to remote storage), read from the log dir."""
    bases = sorted(int(p.name[:-4]) for p in folder.glob("*.log"))
    table = kafkaseg.read_arrow(str(folder), **options).select(COLUMNS)
    return table if _whole(folder) else table.filter(pc.less(table["offset"], bases[-1]))


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("relative", CORPUS_PARTITIONS)
def test_corpus_copies_read_as_the_log_they_came_from(corpus_dir, tmp_path, layout, relative):
    folder = _corpus_partition(corpus_dir, relative)
    written = _copy(folder, tmp_path / "remote", layout=layout)
    assert written, "the folder has rolled segments"
    (pd,) = discover(str(tmp_path / "remote"))
    topic, _, partition = folder.name.rpartition("-")
    assert (pd.topic, pd.partition, pd.tiered) == (topic, int(partition), tiered.AIVEN if layout == "aiven"
                                                  else tiered.LOCAL_TIERED_STORAGE)
    assert [s.log_path for s in pd.segments] == [str(p) for p in written]
    got = kafkaseg.read_arrow(str(tmp_path / "remote")).select(COLUMNS)
    assert got.equals(_rolled_rows(folder))
    # and record by record against kafka-python, reading the copied objects' bytes
    expected = [r for p in written for r in kafka_python_records(p.read_bytes()) if not r["isControl"]]
    assert got["offset"].to_pylist() == [r["offset"] for r in expected]
    assert got["value"].to_pylist() == [r["value"] for r in expected]


@pytest.mark.parametrize("layout", LAYOUTS)
def test_indexes_come_from_the_copy_not_from_a_rebuild(corpus_dir, tmp_path, layout):
    folder = _corpus_partition(corpus_dir, CORPUS_PARTITIONS[2])  # 521 offset index entries
    _copy(folder, tmp_path, layout=layout)
    (pd,) = discover(str(tmp_path))
    checked = 0
    for segment in pd.segments:
        offsets, times = load_indexes(segment)
        assert not offsets.rebuilt and not times.rebuilt, (offsets.rebuild_reason, times.rebuild_reason)
        own = folder / f"{segment.base_offset:020d}"
        original = OffsetIndex.load(str(own.with_suffix(".index")), segment.base_offset)
        assert offsets.offsets.tolist() == original.offsets.tolist()
        assert offsets.positions.tolist() == original.positions.tolist()
        original_times = TimeIndex.load(str(own.with_suffix(".timeindex")), segment.base_offset)
        assert times.timestamps.tolist() == original_times.timestamps.tolist()
        checked += len(original)
    assert checked > 100


@pytest.mark.parametrize("layout", LAYOUTS)
def test_offset_and_time_lookups_and_pushdown_agree_with_the_log(corpus_dir, tmp_path, layout):
    folder = _corpus_partition(corpus_dir, CORPUS_PARTITIONS[2])
    _copy(folder, tmp_path, layout=layout)
    rolled = _rolled_rows(folder)
    offsets = rolled["offset"].to_pylist()
    middle = offsets[len(offsets) // 2]
    start = json.dumps({"__cluster_metadata": {"0": middle}})
    got = kafkaseg.read_arrow(str(tmp_path), startingOffsets=start).select(COLUMNS)
    assert got.equals(rolled.filter(pc.greater_equal(rolled["offset"], middle)))
    times = rolled["timestamp"].cast("int64").to_pylist()
    when = times[len(times) // 3] // 1000
    (pd,) = discover(str(tmp_path))
    answer = list_offset(pd, when)
    expected = next(o for o, t in zip(offsets, times) if t // 1000 >= when)
    assert answer.offset == expected


def test_read_committed_uses_the_copied_transaction_indexes(tmp_path):
    write_data_dir(tmp_path / "data", [TopicSpec("txn", records_per_partition=3000, records_per_batch=20,
                                                 transactional=True, abort_ratio=0.4, segment_bytes=16 * 1024,
                                                 index_interval_bytes=1024)])
    folder = tmp_path / "data" / "txn-0"
    assert any(folder.glob("*.txnindex")), "the log has aborted transactions"
    for layout in LAYOUTS:
        _copy(folder, tmp_path / layout, layout=layout)
        (pd,) = discover(str(tmp_path / layout))
        assert any(s.txnindex_path or any(k == "txnindex" for k, *_ in s.packed_indexes) for s in pd.segments)
        for isolation in ("read_committed", "read_uncommitted"):
            got = kafkaseg.read_arrow(str(tmp_path / layout), **{"kafka.isolation.level": isolation})
            assert got.select(COLUMNS).equals(
                _rolled_rows(folder, **{"kafka.isolation.level": isolation})), (layout, isolation)


def test_folder_names_split_from_the_right(tmp_path):
    uid = kafka_uuid("t")
    assert tiered.parse_local_tiered_folder(f"my-topic-5-3-{uid}") == ("my-topic-5", 3, uid)
    assert tiered.parse_aiven_topic_folder(f"my-topic-5-{uid}") == ("my-topic-5", uid)
    assert tiered.parse_local_tiered_folder(f"t-{2**31}-{uid}") is None  # not an int32 partition
    assert tiered.parse_local_tiered_folder(f"bad/name-0-{uid}") is None
    assert tiered.parse_aiven_topic_folder("orders-0") is None  # a log dir's partition folder


def test_a_root_holds_both_layouts_and_other_folders_are_skipped_with_a_reason(corpus_dir, tmp_path):
    folder = _corpus_partition(corpus_dir, CORPUS_PARTITIONS[0])
    _copy(folder, tmp_path / "root", layout="aiven", prefix="tenant-a/")
    _copy(folder, tmp_path / "root" / "kafka-tiered-storage", layout="local")
    (tmp_path / "root" / "kafka-tiered-storage" / "notes").mkdir()
    skipped: list = []
    found = discover(str(tmp_path / "root" / "tenant-a"), skipped)
    assert [(p.topic, p.partition, p.tiered) for p in found] == [("docker-connect-configs", 0, tiered.AIVEN)]
    found = discover(str(tmp_path / "root" / "kafka-tiered-storage"), skipped)
    assert [p.tiered for p in found] == [tiered.LOCAL_TIERED_STORAGE]
    assert [Path(path).name for path, _ in skipped] == ["notes"]
    # an Aiven topic folder or partition folder given directly
    topic_folder = next((tmp_path / "root" / "tenant-a").iterdir())
    assert [p.partition for p in discover(str(topic_folder))] == [0]
    assert [p.path for p in discover(str(topic_folder / "0"))] == [str(topic_folder / "0")]
    # subscribe leaves other topics' folders unread
    unselected: list = []
    assert discover(str(tmp_path / "root" / "tenant-a"), select=lambda t, p: t == "other",
                    unselected=unselected) == []
    assert [(t, p) for t, p, _ in unselected] == [("docker-connect-configs", 0)]


def test_a_single_copied_log_file_keeps_its_topic_and_partition(corpus_dir, tmp_path):
    folder = _corpus_partition(corpus_dir, CORPUS_PARTITIONS[0])
    for layout in LAYOUTS:
        written = _copy(folder, tmp_path / layout, layout=layout)
        table = kafkaseg.read_arrow(str(written[1]))
        assert set(table["topic"].to_pylist()) == {"docker-connect-configs"}
        assert set(table["partition"].to_pylist()) == {0}
        assert table["offset"][0].as_py() >= int(written[1].name.split("-")[0])


# -- what a bucket can hold besides whole, plain copies ------------------------------------------------------------

@pytest.fixture
def aiven_copy(corpus_dir, tmp_path):
    folder = _corpus_partition(corpus_dir, CORPUS_PARTITIONS[0])
    written = _copy(folder, tmp_path, layout="aiven")
    return folder, written


def _manifest(log: Path) -> Path:
    return log.with_suffix(".rsm-manifest")


def test_an_upload_without_its_manifest_is_left_out_and_noted(aiven_copy, tmp_path):
    folder, written = aiven_copy
    _manifest(written[-1]).unlink()
    (pd,) = discover(str(tmp_path))
    assert [s.log_path for s in pd.segments] == [str(p) for p in written[:-1]]
    assert any("no .rsm-manifest" in note and written[-1].name in note for note in pd.notes)


@pytest.mark.parametrize("change, says", [
    (lambda m: m.update(compression=True), "chunk index is 'fixed', not 'variable'"),
    (lambda m: m.update(encryption={"dataKey": "k:AAAA", "aad": "AA=="}), "encrypted"),
    (lambda m: m["chunkIndex"].update(originalFileSize=m["chunkIndex"]["originalFileSize"] + 1), "chunk index"),
    (lambda m: m.update(version="2"), "version '2'"),
    (lambda m: m["remoteLogSegmentMetadata"].update(startOffset=1), "starts at 1"),
])
def test_a_log_object_not_stored_as_it_was_on_disk_is_refused_naming_its_manifest(aiven_copy, tmp_path, change,
                                                                                  says):
    _, written = aiven_copy
    path = _manifest(written[1])
    manifest = json.loads(path.read_text())
    change(manifest)
    path.write_text(json.dumps(manifest))
    with pytest.raises(LayoutError, match=says) as raised:
        kafkaseg.read_arrow(str(tmp_path))
    assert str(path) in str(raised.value)


def test_an_index_range_past_the_indexes_object_is_rebuilt_from_the_log(aiven_copy, tmp_path):
    folder, written = aiven_copy
    path = _manifest(written[-1])
    manifest = json.loads(path.read_text())
    manifest["segmentIndexes"]["offset"]["position"] = 10_000
    path.write_text(json.dumps(manifest))
    (pd,) = discover(str(tmp_path))
    offsets, _ = load_indexes(pd.segments[-1])
    assert offsets.rebuilt and "bytes [10000" in offsets.rebuild_reason
    assert kafkaseg.read_arrow(str(tmp_path)).select(COLUMNS).equals(_rolled_rows(folder))


@pytest.mark.parametrize("layout", LAYOUTS)
def test_an_upload_done_twice_is_read_once(corpus_dir, tmp_path, layout):
    folder = _corpus_partition(corpus_dir, CORPUS_PARTITIONS[0])
    first = _copy(folder, tmp_path, layout=layout)
    base = int(first[1].name.split("-")[0])
    again = _copy(folder, tmp_path, layout=layout, segment_ids={base: kafka_uuid("retry")})
    (pd,) = discover(str(tmp_path))
    assert len(pd.segments) == len(first)
    assert any("another copy of the records" in note for note in pd.notes)
    assert kafkaseg.read_arrow(str(tmp_path)).select(COLUMNS).equals(_rolled_rows(folder))
    assert again[1] != first[1]


@pytest.mark.parametrize("layout", LAYOUTS)
def test_two_different_copies_of_the_same_offsets_are_refused_naming_both(corpus_dir, tmp_path, layout):
    # the same base, and leader epochs that differ without one being later: nothing tells which is live
    folder = _corpus_partition(corpus_dir, CORPUS_PARTITIONS[0])
    copies = []
    for name, epochs in (("one", "0 0\n2 67\n"), ("two", "0 0\n1 66\n2 67\n")):
        replica = tmp_path / name / folder.name
        shutil.copytree(folder, replica)
        (replica / "leader-epoch-checkpoint").chmod(0o644)
        (replica / "leader-epoch-checkpoint").write_text(f"0\n{epochs.count(chr(10))}\n{epochs}")
        copies.append(_copy(replica, tmp_path / "remote", layout=layout,
                            segment_ids={66: kafka_uuid(f"leader-{name}")}))
    if layout == "aiven":  # the manifest's epochs are the segment's: those of the checkpoint over its offsets
        for written, epochs in zip(copies, ({"0": 66}, {"1": 66})):
            path = _manifest(written[1])
            manifest = json.loads(path.read_text())
            manifest["remoteLogSegmentMetadata"]["segmentLeaderEpochs"] = {**epochs, "2": 68}
            path.write_text(json.dumps(manifest))
    with pytest.raises(LayoutError, match="do not say which is the live log") as raised:
        discover(str(tmp_path / "remote"))
    assert str(copies[0][1]) in str(raised.value) and str(copies[1][1]) in str(raised.value)
    # either copy can still be read on its own, given as a path
    assert kafkaseg.read_arrow(str(copies[0][1])).num_rows > 0


@pytest.mark.parametrize("layout", LAYOUTS)
def test_a_truncated_copy_is_an_error_not_an_active_segments_tail(corpus_dir, tmp_path, layout):
    folder = _corpus_partition(corpus_dir, CORPUS_PARTITIONS[0])
    written = _copy(folder, tmp_path, layout=layout)
    last = written[-1]
    data = last.read_bytes()
    last.write_bytes(data[:-7])
    if layout == "aiven":
        path = _manifest(last)
        manifest = json.loads(path.read_text())
        manifest["chunkIndex"]["originalFileSize"] -= 7
        path.write_text(json.dumps(manifest))
    (pd,) = discover(str(tmp_path))
    assert not pd.is_active_segment(str(last))
    with pytest.raises(kafkaseg.KafkaSegError, match=last.name):
        kafkaseg.read_arrow(str(tmp_path))
    lenient = kafkaseg.read_arrow(str(tmp_path), onCorruption="skip")
    assert 0 < lenient.num_rows < _rolled_rows(folder).num_rows


@pytest.mark.parametrize("layout", LAYOUTS)
def test_a_partition_folder_read_again_by_its_path_is_the_tiered_partition(corpus_dir, tmp_path, layout):
    # what a read does when a planned object is gone (remote retention deleted it): it reads the folder again
    from kafkaseg.storage.layout import read_partition_dir

    folder = _corpus_partition(corpus_dir, CORPUS_PARTITIONS[0])
    _copy(folder, tmp_path, layout=layout)
    (pd,) = discover(str(tmp_path))
    again = read_partition_dir(pd.path)
    assert (again.topic, again.partition, again.tiered, again.segments) == (pd.topic, pd.partition, pd.tiered,
                                                                           pd.segments)


# -- a log dir and its tiered copies read as one log -------------------------------------------------------------

def _tiered_topic(tmp_path, layout, *, keep_checkpoint=True, transactional=False, **copy):
    """A partition as a broker with tiered storage holds it: its rolled segments copied to remote storage, the
    oldest ones deleted locally (local retention), and log-start-offset-checkpoint still at the log's start.
    Returns (log dir, remote root, the rows of the whole log)."""
    spec = TopicSpec("orders", records_per_partition=4000, records_per_batch=20, segment_bytes=24 * 1024,
                     index_interval_bytes=2048, transactional=transactional, abort_ratio=0.3 if transactional else 0)
    write_data_dir(tmp_path / "data", [spec])
    folder = tmp_path / "data" / "orders-0"
    isolation = {"kafka.isolation.level": "read_committed"} if transactional else {}
    whole = kafkaseg.read_arrow(str(tmp_path / "data"), **isolation).select(COLUMNS)
    copy_to_tiered(folder, tmp_path / "remote", layout=layout, **copy)
    bases = sorted(int(p.name[:-4]) for p in folder.glob("*.log"))
    assert len(bases) > 6
    for base in bases[:4]:  # local retention: deleted here, still in remote storage
        for path in folder.glob(f"{base:020d}.*"):
            path.unlink()
    checkpoint = tmp_path / "data" / "log-start-offset-checkpoint"
    checkpoint.write_text(f"0\n1\norders 0 {bases[0]}\n" if keep_checkpoint else "0\n0\n")
    return tmp_path / "data", tmp_path / "remote", whole, bases


@pytest.mark.parametrize("layout", LAYOUTS)
def test_a_log_dir_and_its_remote_copies_read_as_the_broker_serves_the_log(tmp_path, layout):
    data, remote, whole, bases = _tiered_topic(tmp_path, layout)
    scan = kafkaseg.open_scan([str(data), str(remote)])
    got = scan.to_table().select(COLUMNS)
    assert got.equals(whole)
    (replica,) = scan.plan.report.replicas
    assert "tiered-storage copies" in replica["reason"] and f"[{bases[0]}, {bases[4]})" in replica["reason"]
    # the local segments the remote copies also hold are read once, from the log dir
    (pd,) = [choice.chosen for choice in choose_replicas(discover([str(data), str(remote)]))]
    assert [s.tiered is not None for s in pd.segments] == [True] * 4 + [False] * (len(bases) - 4)
    # bounds below the first local segment are resolved through the copies' indexes
    middle = whole["offset"][len(whole) // 10].as_py()
    assert middle < bases[4]
    start = json.dumps({"orders": {"0": middle}})
    assert kafkaseg.read_arrow([str(data), str(remote)], startingOffsets=start).select(COLUMNS).equals(
        whole.filter(pc.greater_equal(whole["offset"], middle)))


def test_read_committed_across_the_remote_and_local_segments(tmp_path):
    data, remote, whole, _ = _tiered_topic(tmp_path, "aiven", transactional=True)
    got = kafkaseg.read_arrow([str(data), str(remote)], **{"kafka.isolation.level": "read_committed"})
    assert got.select(COLUMNS).equals(whole)


def test_remote_copies_are_not_read_where_the_log_dir_does_not_start_below_its_first_segment(tmp_path):
    data, remote, whole, bases = _tiered_topic(tmp_path, "aiven", keep_checkpoint=False)
    scan = kafkaseg.open_scan([str(data), str(remote)])
    got = scan.to_table()
    assert got["offset"][0].as_py() >= bases[4]
    (replica,) = scan.plan.report.replicas
    assert "not read: the log dir has no log start below its first segment" in replica["reason"]


def test_remote_copies_of_another_incarnation_of_the_topic_are_refused(tmp_path):
    data, remote, _, _ = _tiered_topic(tmp_path, "aiven")
    (topic_folder,) = remote.iterdir()
    topic_folder.rename(remote / f"orders-{kafka_uuid('recreated')}")
    with pytest.raises(LayoutError, match="different incarnations"):
        kafkaseg.read_arrow([str(data), str(remote)])


def _corrupt_copied_batch(data, bases):
    """One CRC flipped in the fourth batch of local segment ``bases[5]``, a rolled segment still in the log dir
    that remote storage holds a copy of too (the window before local retention deletes it). Returns its log and the
    corrupt batch's header."""
    from kafkaseg.wire.batch import iter_headers

    log = data / "orders-0" / f"{bases[5]:020d}.log"
    raw = bytearray(log.read_bytes())
    header = list(iter_headers(bytes(raw)))[3]
    raw[header.position + 70] ^= 0xFF
    log.write_bytes(bytes(raw))
    return log, header


@pytest.mark.parametrize("layout", LAYOUTS)
def test_lookups_fall_back_to_a_tiered_copy_of_a_corrupt_local_segment_as_the_read_does(tmp_path, layout, capsys):
    """A strict read whose local segment is corrupt reads the corrupt batch's offsets from a tiered-storage copy that
    holds them (a rolled segment copied to remote storage and not yet deleted locally): every candidate beside the
    chosen copy is one of the slice's other copies. The lookups fall back by the same rule: a startingTimestamp /
    endingTimestamp search, `offsets`/`locate --time`, jobs/lookup.py's rows and a stream's start by timestamp
    answer from that copy. Before, they left tiered copies out of the other copies and raised the CRC error (exit 2)
    where the read of the same files returned every record."""
    import dataclasses
    import importlib.util

    import pyarrow as pa

    from kafkaseg.lookup import other_copies
    from kafkaseg.options import ReadOptions
    from kafkaseg.planning import copies_not_chosen, list_partitions
    from kafkaseg.streaming import MicroBatchPlanner

    data, remote, whole, bases = _tiered_topic(tmp_path, layout)
    log, header = _corrupt_copied_batch(data, bases)
    paths = [str(data), str(remote)]
    (copy,) = [p.path for p in discover([str(remote)])]
    scan = kafkaseg.open_scan(paths)
    assert scan.to_table().select(COLUMNS).equals(whole)  # the read: the corrupt batch from the tiered copy
    assert [entry[4] for entry in scan.metrics.other_copies_read] == [copy]

    offsets = whole["offset"].to_pylist()
    stamps = whole["timestamp"].cast(pa.timestamp("ms")).cast(pa.int64()).to_pylist()
    target = header.base_offset + 3
    ts = stamps[offsets.index(target)]
    wanted = next(o for o, s in zip(offsets, stamps) if s >= ts)
    # startingTimestamp / endingTimestamp
    scan = kafkaseg.open_scan(paths, startingTimestamp=ts)
    assert scan.to_table().select(COLUMNS).equals(whole.filter(pc.greater_equal(whole["offset"], wanted)))
    (note,) = [n for n in scan.plan.report.notes if "read from the copy in" in n]
    assert f"{log} is corrupt at byte {header.position}" in note and f"the copy in {copy} instead" in note
    ending = kafkaseg.read_arrow(paths, endingTimestamp=ts, columns=["offset"])
    assert ending["offset"].to_pylist() == [o for o in offsets if o < wanted]
    # offsets / locate --time
    code = main(["offsets", "--data-dir", str(data), "--data-dir", str(remote), "--time", str(ts)])
    out = capsys.readouterr()
    assert (code, out.out.splitlines()) == (0, [f"orders:0:{wanted}"]), out.err
    assert f"{log} is corrupt at byte {header.position}" in out.err and f"the copy in {copy} instead" in out.err
    code = main(["locate", "--data-dir", str(data), "--data-dir", str(remote), "--topic", "orders", "--partition",
                 "0", "--time", str(ts), "--json"])
    out = capsys.readouterr()
    located = json.loads(out.out)
    assert code == 0 and located["location"]["recordOffset"] == wanted and located["otherCopiesRead"], out.err
    assert located["location"]["segment"].startswith(copy)
    # jobs/lookup.py
    spec = importlib.util.spec_from_file_location("lookup_job", Path(__file__).resolve().parents[1] / "jobs/lookup.py")
    job = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(job)
    batch = pa.RecordBatch.from_pylist([{"topic": "orders", "partition": "0", "time": str(ts), "offset": None}],
                                       schema=pa.schema([(n, pa.string()) for n in job.REQUEST_COLUMNS]))
    (row,) = pa.Table.from_batches(list(job.lookup_batches([batch], paths))).to_pylist()
    assert (row["offset"], row["found"], row["reason"]) == (wanted, True, None)
    # a stream started by timestamp
    options = dataclasses.replace(ReadOptions.from_options({"startingTimestamp": str(ts)}, stream=True),
                                  paths=tuple(paths))
    assert MicroBatchPlanner(options).initial_offsets()["orders"] == {"0": wanted}
    # one rule: the copies a slice's read falls back to are the ones a lookup falls back to
    (choice,) = choose_replicas(discover(paths))
    assert [c.path for c in other_copies(choice)] == [copy]
    assert {s.other_copies for s in scan.plan.slices} == {(copy,)}
    listing = list_partitions(paths, ReadOptions())
    assert [c.path for c in copies_not_chosen(listing, scan.plan.report)[("orders", 0)]] == [copy]


def test_an_aiven_topic_whose_name_ends_in_digits_is_not_taken_for_a_local_tiered_storage_partition(tmp_path):
    # events-2-<id> parses as LocalTieredStorage's <topic>-<partition>-<id> too: the folder's content decides
    write_data_dir(tmp_path / "data", [TopicSpec("events-2", records_per_partition=400, segment_bytes=8192)])
    copy_to_tiered(tmp_path / "data" / "events-2-0", tmp_path / "bucket", layout="aiven")
    copy_to_tiered(tmp_path / "data" / "events-2-0", tmp_path / "bucket", layout="local")
    found = discover(str(tmp_path / "bucket"))
    assert sorted((p.topic, p.partition, p.tiered) for p in found) == [
        ("events-2", 0, tiered.AIVEN), ("events-2", 0, tiered.LOCAL_TIERED_STORAGE)]
    rolled = _rolled_rows(tmp_path / "data" / "events-2-0")
    assert all(kafkaseg.read_arrow(p.path).select(COLUMNS).equals(rolled) for p in found)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_verify_and_describe_read_the_copied_indexes(tmp_path, layout, capsys):
    from kafkaseg.cli.main import main

    write_data_dir(tmp_path / "data", [TopicSpec("txn", records_per_partition=2000, records_per_batch=20,
                                                 transactional=True, abort_ratio=0.4, segment_bytes=16 * 1024,
                                                 index_interval_bytes=1024)])
    copy_to_tiered(tmp_path / "data" / "txn-0", tmp_path / layout, layout=layout)
    assert main(["verify", str(tmp_path / layout)]) == 0
    assert "0 errors, 0 warnings" in capsys.readouterr().out
    assert main(["describe", str(tmp_path / layout), "--segments", "--json"]) == 0
    described = json.loads(capsys.readouterr().out)
    text = json.dumps(described)
    assert '"hasTxnIndex": true' in text


@pytest.mark.parametrize("layout", LAYOUTS)
def test_one_copy_given_as_a_path_is_read_committed_with_its_partition_as_context(tmp_path, layout):
    # a transaction whose marker is in a later copy is not open: the read of the copy does not stop at it
    write_data_dir(tmp_path / "data", [TopicSpec("txn", records_per_partition=3000, records_per_batch=20,
                                                 transactional=True, abort_ratio=0.4, segment_bytes=16 * 1024)])
    written = copy_to_tiered(tmp_path / "data" / "txn-0", tmp_path / layout, layout=layout)
    committed = {"kafka.isolation.level": "read_committed"}
    whole = kafkaseg.read_arrow(str(tmp_path / layout), **committed).select(COLUMNS)
    bases = [int(p.name.split("-")[0]) for p in written] + [None]
    for path, base, following in zip(written, bases, bases[1:]):
        got = kafkaseg.read_arrow(str(path), **committed).select(COLUMNS)
        mask = pc.greater_equal(whole["offset"], base)
        if following is not None:
            mask = pc.and_(mask, pc.less(whole["offset"], following))
        assert got.equals(whole.filter(mask)), path.name


def test_a_lenient_read_resumes_at_the_next_entry_of_the_copied_offset_index(tmp_path):
    import struct

    write_data_dir(tmp_path / "data", [TopicSpec("t", records_per_partition=3000, records_per_batch=10,
                                                 segment_bytes=32 * 1024, index_interval_bytes=1024)])
    rows = {}
    for layout in LAYOUTS:
        written = copy_to_tiered(tmp_path / "data" / "t-0", tmp_path / layout, layout=layout)
        data = bytearray(written[2].read_bytes())
        position = 0
        for _ in range(3):  # the third batch's length field: absurd
            position += 12 + struct.unpack_from(">i", data, position + 8)[0]
        struct.pack_into(">i", data, position + 8, 0x7FFF0000)
        written[2].write_bytes(bytes(data))
        rows[layout] = kafkaseg.read_arrow(str(tmp_path / layout), onCorruption="skip")["offset"].to_pylist()
    whole = _rolled_rows(tmp_path / "data" / "t-0")["offset"].to_pylist()
    assert rows["aiven"] == rows["local"]  # both resume at the same index entry
    lost = len(whole) - len(rows["aiven"])
    assert 0 < lost < 60  # the bad batch and those up to the next index entry, not the rest of the segment


# -- copies by two leaders --------------------------------------------------------------------------------------

def _batch_starts(data: bytes) -> list[tuple[int, int]]:
    import struct

    out, position = [], 0
    while position + 12 <= len(data):
        offset, length = struct.unpack_from(">qi", data, position)
        out.append((position, offset))
        position += 12 + length
    return out


def _new_leader_copy(copy: Path, log: bytes, base: int, end: int, epochs: dict[int, int], layout: str) -> Path:
    """Write a copy of ``log`` (offsets ``base``..``end``) beside ``copy``, as another leader's upload whose
    segments rolled elsewhere; ``epochs``: its leader epochs (epoch -> start offset)."""
    stem = f"{base:020d}-{kafka_uuid(f'new-leader/{base}/{len(log)}')}"
    (copy.parent / f"{stem}.log").write_bytes(log)
    text = ("0\n" + f"{len(epochs)}\n" + "".join(f"{e} {s}\n" for e, s in sorted(epochs.items()))).encode()
    if layout == "local":
        for suffix, data in ((".index", b""), (".timeindex", b""), (".snapshot", b""),
                             (".leader_epoch_checkpoint", text)):
            (copy.parent / f"{stem}{suffix}").write_bytes(data)
    else:
        (copy.parent / f"{stem}.indexes").write_bytes(text)
        manifest = json.loads(copy.with_suffix(".rsm-manifest").read_text())
        manifest["chunkIndex"]["originalFileSize"] = len(log)
        manifest["segmentIndexes"] = {"offset": {"position": 0, "size": 0}, "timestamp": {"position": 0, "size": 0},
                                      "producerSnapshot": {"position": 0, "size": 0},
                                      "leaderEpoch": {"position": 0, "size": len(text)}, "transaction": None}
        metadata = manifest["remoteLogSegmentMetadata"]
        metadata.update(startOffset=base, endOffset=end, segmentLeaderEpochs={str(e): s for e, s in epochs.items()})
        (copy.parent / f"{stem}.rsm-manifest").write_text(json.dumps(manifest))
    return copy.parent / f"{stem}.log"


@pytest.fixture
def two_leaders(tmp_path):
    """A partition's copies (epoch 0 throughout), and the log's rows; the copy after the third is replaced by
    what a new leader uploads (see the tests)."""
    write_data_dir(tmp_path / "data", [TopicSpec("t", records_per_partition=3000, records_per_batch=20,
                                                 segment_bytes=16 * 1024)])
    rolled = _rolled_rows(tmp_path / "data" / "t-0")

    def make(layout):
        written = copy_to_tiered(tmp_path / "data" / "t-0", tmp_path / layout, layout=layout)
        a, b = written[2], written[3]
        following = int(written[4].name.split("-")[0])
        data_a, data_b = a.read_bytes(), b.read_bytes()
        for path in b.parent.glob(b.name.split(".")[0] + ".*"):
            path.unlink()  # the old leader never copied it
        return a, data_a, data_b, following

    return tmp_path, rolled, make


@pytest.mark.parametrize("layout", LAYOUTS)
def test_a_new_leaders_longer_copy_from_the_same_base_is_read_instead(two_leaders, layout):
    root, rolled, make = two_leaders
    a, data_a, data_b, following = make(layout)
    base = int(a.name.split("-")[0])
    _new_leader_copy(a, data_a + data_b, base, following - 1, {0: base}, layout)
    (pd,) = discover(str(root / layout))
    assert any("holds the same records from the same base and more" in note for note in pd.notes)
    assert kafkaseg.read_arrow(str(root / layout)).select(COLUMNS).equals(rolled)


@pytest.mark.parametrize("epoch, says", [
    (0, "is read up to offset {start}, where"),  # a leader change: the same records where both hold them
    (1, "later leader epoch (1)"),  # an unclean election: the later epoch's copy is the live log's
])
def test_a_new_leaders_copy_starting_inside_the_last_copy_is_read_from_there(two_leaders, epoch, says):
    root, rolled, make = two_leaders
    a, data_a, data_b, following = make("aiven")
    position, start = _batch_starts(data_a)[3]
    _new_leader_copy(a, data_a[position:] + data_b, start, following - 1, {epoch: start}, "aiven")
    for manifest_path in a.parent.glob("*.rsm-manifest"):  # the new leader's later copies: its epoch too
        manifest = json.loads(manifest_path.read_text())
        metadata = manifest["remoteLogSegmentMetadata"]
        if metadata["startOffset"] > start:
            metadata["segmentLeaderEpochs"] = {str(epoch): metadata["startOffset"]}
            manifest_path.write_text(json.dumps(manifest))
    (pd,) = discover(str(root / "aiven"))
    assert any(says.format(start=start) in note for note in pd.notes)
    assert kafkaseg.read_arrow(str(root / "aiven")).select(COLUMNS).equals(rolled)


def test_copies_whose_epochs_do_not_tell_which_is_live_are_refused_naming_both(two_leaders):
    root, _, make = two_leaders
    a, data_a, data_b, following = make("aiven")
    base = int(a.name.split("-")[0])
    manifest = json.loads(a.with_suffix(".rsm-manifest").read_text())
    manifest["remoteLogSegmentMetadata"]["segmentLeaderEpochs"] = {"3": base}
    a.with_suffix(".rsm-manifest").write_text(json.dumps(manifest))
    other = _new_leader_copy(a, data_a + data_b, base, following - 1, {2: base, 3: base + 5}, "aiven")
    with pytest.raises(LayoutError, match="do not say which is the live log") as raised:
        discover(str(root / "aiven"))
    assert str(a) in str(raised.value) and str(other) in str(raised.value)


def test_an_unfinished_upload_between_finished_copies_is_a_hole_named_not_skipped(corpus_dir, tmp_path):
    folder = _corpus_partition(corpus_dir, CORPUS_PARTITIONS[0])
    written = copy_to_tiered(folder, tmp_path, layout="aiven", include_last=True)
    _manifest(written[1]).unlink()  # the middle copy: its offsets are in no other copy
    with pytest.raises(LayoutError, match="in no finished copy") as raised:
        discover(str(tmp_path))
    assert str(written[1]) in str(raised.value)
    _manifest(written[2]).unlink()  # now the last: an upload in progress, left out with a note
    (pd,) = discover(str(tmp_path))
    assert [s.log_path for s in pd.segments] == [str(written[0])]


# -- segments stored as compressed chunks (Aiven's compression.enabled) --------------------------------------------

@pytest.fixture
def compressed_copy(tmp_path):
    write_data_dir(tmp_path / "data", [TopicSpec("z", records_per_partition=3000, records_per_batch=20,
                                                 segment_bytes=48 * 1024, index_interval_bytes=2048, headers=1,
                                                 transactional=True, abort_ratio=0.3)])
    folder = tmp_path / "data" / "z-0"
    # chunks far smaller than a segment, so batches and index entries straddle chunk boundaries
    written = copy_to_tiered(folder, tmp_path / "remote", layout="aiven", compression=True, chunk_size=5000)
    return folder, tmp_path / "remote", written


@pytest.mark.parametrize("options", [
    {}, {"kafka.isolation.level": "read_committed", "includeHeaders": True},
    {"startingOffsets": '{"z":{"0":1234}}', "endingOffsets": '{"z":{"0":2100}}'},
    {"startingTimestamp": 1_700_000_010_000},
])
def test_compressed_copies_read_as_the_segments_they_were(compressed_copy, tmp_path, options):
    folder, remote, written = compressed_copy
    assert all(p.stat().st_size < (folder / p.name.split("-")[0]).with_suffix(".log").stat().st_size
               for p in written)  # stored compressed
    plain = copy_to_tiered(folder, tmp_path / "plain", layout="aiven")
    assert [p.name for p in plain] == [p.name for p in written]
    columns = COLUMNS + (["headers"] if "includeHeaders" in options else [])
    got = kafkaseg.read_arrow(str(remote), **options).select(columns)
    assert got.num_rows > 0 and got.equals(kafkaseg.read_arrow(str(tmp_path / "plain"), **options).select(columns))
    if "kafka.isolation.level" not in options:  # (the copies alone do not hold the markers of the last ones'
        # transactions, which read_committed of the log dir reads in its last segment)
        expected = kafkaseg.read_arrow(str(folder), **options).select(columns)
        last = int(sorted(folder.glob("*.log"))[-1].name[:-4])
        assert got.equals(expected.filter(pc.less(expected["offset"], last)))


def test_a_narrow_read_of_a_compressed_copy_decompresses_only_the_chunks_it_needs(compressed_copy):
    _, remote, written = compressed_copy
    bounds = {"startingOffsets": '{"z":{"0":1234}}', "endingOffsets": '{"z":{"0":1260}}'}
    scan = kafkaseg.open_scan(str(remote), **bounds)
    assert scan.to_table().equals(kafkaseg.read_arrow(str(compressed_copy[0]), **bounds))
    planned = sum(s.size_bytes for s in scan.plan.slices)
    assert planned < 10_000  # one index interval or so: a few of the 5,000-byte chunks, not the segment
    (pd,) = discover(str(remote))
    offsets, _ = load_indexes(pd.segments[1])
    assert not offsets.rebuilt


def test_a_compressed_copys_partition_pickles_for_executors_and_reads_the_same(compressed_copy):
    import pickle

    _, remote, _ = compressed_copy
    (pd,) = discover(str(remote))
    again = pickle.loads(pickle.dumps(pd.filesystem))
    segment = pd.segments[1]
    with again.open_input_file(segment.log_path) as copied, pd.filesystem.open_input_file(segment.log_path) as own:
        assert copied.size() == own.size() == segment.log_size
        assert copied.read_at(7000, 4000) == own.read_at(7000, 4000)


def test_a_chunk_that_does_not_decompress_is_an_error_naming_the_object_and_byte(compressed_copy):
    _, remote, written = compressed_copy
    data = bytearray(written[1].read_bytes())
    data[0] ^= 0xFF  # the first frame's magic
    written[1].write_bytes(bytes(data))
    with pytest.raises(kafkaseg.KafkaSegError, match="compressed chunk 0 .* does not decompress") as raised:
        kafkaseg.read_arrow(str(remote))
    assert raised.value.path == str(written[1]) and raised.value.position == 0


def test_chunk_sizes_that_do_not_add_up_to_the_object_are_refused_naming_the_manifest(compressed_copy):
    _, remote, written = compressed_copy
    written[0].write_bytes(written[0].read_bytes() + b"\0")
    with pytest.raises(LayoutError, match="chunk index") as raised:
        discover(str(remote))
    assert str(_manifest(written[0])) in str(raised.value)


def test_a_compressed_copy_below_a_log_dir_is_read_with_it(tmp_path):
    data, remote, whole, _ = _tiered_topic(tmp_path, "aiven", compression=True, chunk_size=3000)
    assert kafkaseg.read_arrow([str(data), str(remote)]).select(COLUMNS).equals(whole)


# -- review round 2: merged reads -----------------------------------------------------------------------------------

def test_remote_copies_with_a_gap_below_the_log_dir_are_its_log_with_the_gap_lost(tmp_path):
    # (read as the log dir alone until the tiered-loss review: the copies' offsets, and the gap, were passed over
    # without a word; tests/test_tiered_loss.py has the cases)
    data, remote, whole, bases = _tiered_topic(tmp_path, "aiven")
    (hole,) = [p for p in remote.rglob("*.log") if int(p.name.split("-")[0]) == bases[2]]
    for path in hole.parent.glob(hole.name.split(".")[0] + ".*"):
        path.unlink()  # a copy missing from the bucket
    with pytest.raises(kafkaseg.errors.DataLossError, match=rf"offsets \[{bases[2]}, {bases[3]}\) are in no"):
        kafkaseg.read_arrow([str(data), str(remote)])
    scan = kafkaseg.open_scan([str(data), str(remote)], failOnDataLoss="false")
    offsets = scan.to_table()["offset"]
    assert offsets[0].as_py() == bases[0] and not pc.any(pc.and_(pc.greater_equal(offsets, bases[2]),
                                                                  pc.less(offsets, bases[3]))).as_py()
    (replica,) = scan.plan.report.replicas
    assert "tiered-storage copies" in replica["reason"] and "not read" not in replica["reason"]


def test_one_remote_copy_or_one_local_file_given_with_the_other_is_not_taken_for_the_whole_log(tmp_path):
    data, remote, whole, bases = _tiered_topic(tmp_path, "aiven")
    one_copy = next(p for p in remote.rglob("*.log") if int(p.name.split("-")[0]) == bases[1])
    scan = kafkaseg.open_scan([str(data), str(one_copy)])
    assert scan.to_table()["offset"][0].as_py() == bases[4]
    assert "in no remote copy given" in scan.plan.report.replicas[0]["reason"]
    local_file = data / "orders-0" / f"{bases[5]:020d}.log"
    scan = kafkaseg.open_scan([str(local_file), str(remote)])
    got = scan.to_table()
    assert set(got["offset"].to_pylist()) <= set(range(bases[5], bases[6]))
    assert "the log dir's .log files given are read as given" in scan.plan.report.replicas[0]["reason"]


@pytest.mark.parametrize("layout, copy", [("aiven", {}), ("local", {}),
                                          ("aiven", {"compression": True, "chunk_size": 3000})])
def test_a_local_segment_deleted_after_planning_is_read_from_its_remote_copy(tmp_path, layout, copy):
    # local retention deletes segments that are in remote storage: the broker serves them from there, and so does
    # a read that finds its planned file gone
    data, remote, whole, bases = _tiered_topic(tmp_path, layout, **copy)
    scan = kafkaseg.open_scan([str(data), str(remote)])
    for path in (data / "orders-0").glob(f"{bases[4]:020d}.*"):
        path.unlink()
    assert scan.to_table().select(COLUMNS).equals(whole)


@pytest.mark.parametrize("new_id", ["0000000000000000000000", "zzzzzzzzzzzzzzzzzzzzzz"])  # before and after
def test_which_copy_is_live_after_an_unclean_election_does_not_depend_on_segment_ids(two_leaders, new_id):
    root, _, make = two_leaders
    a, data_a, data_b, following = make("aiven")
    base = int(a.name.split("-")[0])
    starts = _batch_starts(data_a)
    position, diverged = starts[len(starts) // 2]
    manifest = json.loads(a.with_suffix(".rsm-manifest").read_text())
    # the new leader's copy, from the same base, shorter; its epoch 1 began inside the old copy's range
    stem = f"{base:020d}-{new_id}"
    new = _new_leader_copy(a, data_a[:position] + data_a[position:starts[-1][0]], base,
                           starts[-1][1] - 1, {0: base, 1: diverged}, "aiven")
    for path in new.parent.glob(new.name.split(".")[0] + ".*"):
        path.rename(path.with_name(stem + path.name[len(new.name.split(".")[0]):]))
    assert (stem < a.name) == new_id.startswith("0")  # the new copy sorts first, then last
    (pd,) = discover(str(root / "aiven"))
    kept = [s.log_path for s in pd.segments if s.base_offset == base]
    assert kept == [str(a.parent / f"{stem}.log")], pd.notes
    assert manifest["remoteLogSegmentMetadata"]["segmentLeaderEpochs"] == {"0": base}


def test_a_local_tiered_storage_copy_with_a_later_epoch_from_the_same_base_is_the_live_one(two_leaders):
    root, _, make = two_leaders
    a, data_a, data_b, following = make("local")
    base = int(a.name.split("-")[0])
    position, diverged = _batch_starts(data_a)[2]
    new = _new_leader_copy(a, data_a[:position], base, diverged - 1, {0: 0, 1: diverged}, "local")
    (pd,) = discover(str(root / "local"))
    assert [s.log_path for s in pd.segments if s.base_offset == base] == [str(new)]
    assert any("continue the other's to a later one (1)" in note for note in pd.notes)


def test_the_retention_audit_leaves_tiered_copies_out(tmp_path):
    from kafkaseg.retention import plan_audit

    data, remote, _, _ = _tiered_topic(tmp_path, "aiven")
    plan = plan_audit([str(data), str(remote)])
    assert [pdir.path for pdir, _ in plan.targets] == [str(data / "orders-0")]
    assert any("a tiered-storage copy, not audited" in note for note in plan.replica_notes)


def test_dump_prints_a_copy_as_the_segment_it_was(compressed_copy, tmp_path, capsys):
    from kafkaseg.cli.main import main

    folder, _, written = compressed_copy
    plain = copy_to_tiered(folder, tmp_path / "local", layout="local")

    def dumped(path):
        assert main(["dump", "--files", str(path)]) == 0
        return [line for line in capsys.readouterr().out.splitlines() if not line.startswith("Dumping")]

    source = folder / f"{written[1].name.split('-')[0]}.log"
    assert dumped(written[1]) == dumped(plain[1]) == dumped(source)  # compressed, LocalTieredStorage, the log
    assert dumped(plain[1].with_suffix(".index")) == dumped(source.with_suffix(".index"))



# -- review round 3 ----------------------------------------------------------------------------------------------

def test_copies_below_a_stale_log_start_checkpoint_are_read_from_the_first_copy(tmp_path):
    # remote retention deleted the oldest copy after the broker last wrote log-start-offset-checkpoint
    data, remote, whole, bases = _tiered_topic(tmp_path, "aiven")
    (oldest,) = [p for p in remote.rglob("*.log") if int(p.name.split("-")[0]) == bases[0]]
    for path in oldest.parent.glob(oldest.name.split(".")[0] + ".*"):
        path.unlink()
    scan = kafkaseg.open_scan([str(data), str(remote)])
    assert scan.to_table().select(COLUMNS).equals(whole.filter(pc.greater_equal(whole["offset"], bases[1])))
    assert f"[{bases[0]}, {bases[1]}) are in no copy (remote retention" in scan.plan.report.replicas[0]["reason"]


def test_a_log_dir_extended_with_compressed_copies_keeps_reading_its_own_files_as_local_files(tmp_path):
    data, remote, whole, bases = _tiered_topic(tmp_path, "aiven", compression=True, chunk_size=3000)
    scan = kafkaseg.open_scan([str(data), str(remote)])
    local = [s for s in scan.plan.slices if s.base_offset >= bases[4]]
    remote_slices = [s for s in scan.plan.slices if s.base_offset < bases[4]]
    assert local and remote_slices
    assert all(s.file_identity is not None for s in local)  # known by inode, mapped: a live broker's files
    assert scan.to_table().select(COLUMNS).equals(whole)


def test_decompressed_chunks_kept_are_bounded_across_open_copies(compressed_copy, monkeypatch):
    from kafkaseg.storage import tiered as tiered_module

    monkeypatch.setattr(tiered_module, "CHUNK_CACHE_BYTES", 20_000)
    _, remote, written = compressed_copy
    assert kafkaseg.read_arrow(str(remote)).num_rows > 0
    assert tiered_module._CHUNKS_BYTES[0] <= 20_000 + 2 * 5000  # (the last two always: up to two chunks over)


def test_chunks_above_the_cap_are_refused_as_such(compressed_copy):
    _, remote, written = compressed_copy
    path = _manifest(written[0])
    manifest = json.loads(path.read_text())
    manifest["chunkIndex"]["originalChunkSize"] = 2**30
    path.write_text(json.dumps(manifest))
    with pytest.raises(LayoutError, match="above kafkaseg's .*-byte cap"):
        discover(str(remote))


def test_an_old_leaders_copy_after_a_new_leaders_is_the_replaced_logs(two_leaders):
    root, _, make = two_leaders
    a, data_a, data_b, following = make("aiven")
    base = int(a.name.split("-")[0])
    # the new leader (epoch 1 from the old copy's base) copied a short segment; the old leader's next copy, of
    # epoch 0 only, is still in the bucket after it
    position, start = _batch_starts(data_a)[3]
    new = _new_leader_copy(a, data_a[:position], base, start - 1, {1: base}, "aiven")
    for path in a.parent.glob(a.name.split(".")[0] + ".*"):
        path.unlink()
    later = [p for p in a.parent.glob("*.log") if int(p.name.split("-")[0]) > base]
    (pd,) = discover(str(root / "aiven"))
    assert [s.log_path for s in pd.segments if s.base_offset >= base] == [str(new)]
    assert all(any(p.name in note and "an unclean election replaced" in note for note in pd.notes) for p in later)


# -- review round 4 ----------------------------------------------------------------------------------------------

def test_an_unreadable_epoch_checkpoint_of_one_copy_is_noted_not_fatal(tmp_path):
    data, remote, whole, bases = _tiered_topic(tmp_path, "local")
    (bad,) = [p for p in remote.rglob("*.leader_epoch_checkpoint") if int(p.name.split("-")[0]) == bases[1]]
    bad.write_text("garbage")
    (pd,) = discover(str(remote))
    assert len(pd.segments) == len(bases) - 1 and any(f"unreadable {bad.name}" in note for note in pd.notes)
    assert kafkaseg.read_arrow([str(data), str(remote)]).select(COLUMNS).equals(whole)


def test_epochs_going_back_where_a_later_epoch_does_not_say_which_log_is_replaced_are_refused(two_leaders):
    # a leader elected uncleanly at epoch 2 never held the epoch-1 copy before its own epoch-0 one: which of the two
    # is the replaced log's is not in the copies (the broker's epoch cache says)
    root, _, make = two_leaders
    a, data_a, data_b, following = make("aiven")
    for i, path in enumerate(sorted(a.parent.glob("*.rsm-manifest"))):  # epochs 0, 0-1, 0, then 2
        manifest = json.loads(path.read_text())
        start = manifest["remoteLogSegmentMetadata"]["startOffset"]
        manifest["remoteLogSegmentMetadata"]["segmentLeaderEpochs"] = (
            {"0": start, "1": start + 1} if i == 1 else {"2": start} if i > 2 else {"0": start})
        path.write_text(json.dumps(manifest))
    with pytest.raises(LayoutError, match=r"older leader epochs .* do not say which of the two"):
        discover(str(root / "aiven"))


def test_epochs_outside_a_copys_offsets_are_unknown_epochs(aiven_copy, tmp_path):
    folder, written = aiven_copy
    path = _manifest(written[0])
    manifest = json.loads(path.read_text())
    manifest["remoteLogSegmentMetadata"]["segmentLeaderEpochs"] = {"0": 10_000}  # past its end offset
    path.write_text(json.dumps(manifest))
    (pd,) = discover(str(tmp_path))
    assert [s.log_path for s in pd.segments] == [str(p) for p in written]


def test_a_read_over_leaves_no_decompressed_chunk_behind(compressed_copy):
    import gc

    from kafkaseg.storage import tiered as tiered_module

    _, remote, _ = compressed_copy
    assert kafkaseg.read_arrow(str(remote)).num_rows > 0
    gc.collect()
    assert tiered_module._CHUNKS_BYTES[0] == 0 and not tiered_module._CHUNKS


def test_list_offsets_of_a_log_dir_extended_with_copies(tmp_path, capsys):
    from kafkaseg.lookup import EARLIEST, EARLIEST_LOCAL, EARLIEST_PENDING_UPLOAD, LATEST_TIERED

    data, remote, _, bases = _tiered_topic(tmp_path, "aiven")
    (choice,) = choose_replicas(discover([str(data), str(remote)]))
    pd = choice.chosen
    assert pd.below_local_log is None  # the copies hold those offsets: nothing to explain
    assert list_offset(pd, EARLIEST).offset == bases[0]
    assert list_offset(pd, EARLIEST_LOCAL).offset == bases[4]  # the broker's local log start
    # the last offset copied, by the last copy: past the first local segment (local retention keeps copied ones)
    assert list_offset(pd, LATEST_TIERED).offset == bases[-1] - 1 > bases[4]
    # the next offset to copy (UnifiedLog.fetchEarliestPendingUploadOffset): the active segment's base here
    assert list_offset(pd, EARLIEST_PENDING_UPLOAD).offset == bases[-1]
    assert main(["offsets", "--data-dir", str(data), "--data-dir", str(remote), "--time",
                 "earliest-pending-upload"]) == 0
    assert capsys.readouterr().out == f"orders:0:{bases[-1]}\n"
    # a log dir alone holds no copies: no offset, as a broker of a topic without remote storage answers
    (local,) = discover(str(data))
    for spec in (LATEST_TIERED, EARLIEST_PENDING_UPLOAD):
        answer = list_offset(local, spec)
        assert answer.offset is None and "no tiered storage" in answer.reason


def test_a_copy_after_one_of_unknown_epochs_is_still_checked_against_the_latest_epoch_kept(tmp_path):
    data, remote, whole, bases = _tiered_topic(tmp_path, "local")
    checkpoints = sorted(remote.rglob("*.leader_epoch_checkpoint"))
    for i, path in enumerate(checkpoints):  # epochs 0, then 1 from the second copy, then a replaced log's 0 again
        path.write_text("0\n1\n0 0\n" if i == 0 or i == 3 else f"0\n2\n0 0\n1 {bases[1]}\n")
    checkpoints[2].write_text("garbage")  # unknown epochs just before the replaced log's copy
    (pd,) = discover(str(remote))
    assert bases[3] not in [s.base_offset for s in pd.segments]
    assert any(f"{bases[3]:020d}" in note and "an unclean election replaced" in note for note in pd.notes)


def test_a_finalized_compressed_file_never_waits_for_the_chunk_cache_lock(compressed_copy):
    # a forked child (or the garbage collector inside a holder of the lock) finalizes files before the lock is free
    from kafkaseg.storage import tiered as tiered_module

    _, remote, written = compressed_copy
    (pd,) = discover(str(remote))
    path = pd.segments[0].log_path
    chunked = tiered_module._ChunkedFile(pd.filesystem.handler.base.open_input_file(path), path,
                                         pd.filesystem.handler.objects[path])
    chunked.read(10)
    with tiered_module._CHUNKS_LOCK:  # held: the finalizer returns at once
        finalizer = threading.Thread(target=chunked.__del__)
        finalizer.start()
        finalizer.join(5)
        assert not finalizer.is_alive()
    chunked.close()
    assert not chunked._mine


# -- review round 6 ----------------------------------------------------------------------------------------------

def test_a_copy_read_only_below_a_later_leaders_copy_gives_no_epochs_above_it(two_leaders):
    # the old leader's copy took epoch 1 late in its range; the new leader (epoch 2, elected uncleanly below that)
    # copied from inside it: the partition's epochs are the live log's, 0 then 2
    root, _, make = two_leaders
    a, data_a, data_b, following = make("aiven")
    base = int(a.name.split("-")[0])
    starts = _batch_starts(data_a)
    (position, start), (_, late) = starts[3], starts[-2]
    manifest = json.loads(a.with_suffix(".rsm-manifest").read_text())
    manifest["remoteLogSegmentMetadata"]["segmentLeaderEpochs"] = {"0": base, "1": late}
    a.with_suffix(".rsm-manifest").write_text(json.dumps(manifest))
    _new_leader_copy(a, data_a[position:] + data_b, start, following - 1, {2: start}, "aiven")
    for manifest_path in a.parent.glob("*.rsm-manifest"):  # the new leader's later copies
        manifest = json.loads(manifest_path.read_text())
        if manifest["remoteLogSegmentMetadata"]["startOffset"] > start:
            manifest["remoteLogSegmentMetadata"]["segmentLeaderEpochs"] = {
                "2": manifest["remoteLogSegmentMetadata"]["startOffset"]}
            manifest_path.write_text(json.dumps(manifest))
    (pd,) = discover(str(root / "aiven"))
    assert [e.epoch for e in pd.leader_epochs] == [0, 2] and pd.leader_epochs[1].start_offset == start


def test_read_committed_of_the_local_log_does_not_walk_the_copies_below_it(tmp_path, monkeypatch):
    import collections

    import kafkaseg.planning as planning

    write_data_dir(tmp_path / "data", [TopicSpec("t", records_per_partition=4000, records_per_batch=10,
                                                 segment_bytes=12 * 1024, transactional=True, abort_ratio=0.02,
                                                 transaction_producers=2)])
    folder = tmp_path / "data" / "t-0"
    for path in folder.glob("*.txnindex"):  # as a broker leaves them: only where an abort's marker is
        if path.stat().st_size == 0:
            path.unlink()
    committed = {"kafka.isolation.level": "read_committed"}
    whole = kafkaseg.read_arrow(str(tmp_path / "data"), **committed).select(COLUMNS)
    copy_to_tiered(folder, tmp_path / "remote", layout="aiven", compression=True, chunk_size=4000)
    bases = sorted(int(p.name[:-4]) for p in folder.glob("*.log"))
    for base in bases[:-4]:
        for path in folder.glob(f"{base:020d}.*"):
            path.unlink()
    (tmp_path / "data" / "log-start-offset-checkpoint").write_text("0\n1\nt 0 0\n")
    opened = collections.Counter()
    real = planning.SegmentReader.__init__

    def counting(self, path, *args, **kwargs):
        opened["remote" if "remote" in str(path) else "local"] += 1
        return real(self, path, *args, **kwargs)

    monkeypatch.setattr(planning.SegmentReader, "__init__", counting)
    start = bases[-4] + 5
    got = kafkaseg.read_arrow([str(tmp_path / "data"), str(tmp_path / "remote")],
                              startingOffsets=json.dumps({"t": {"0": start}}), **committed)
    assert got.select(COLUMNS).equals(whole.filter(pc.greater_equal(whole["offset"], start)))
    assert opened["local"] and not opened["remote"]
    everything = kafkaseg.read_arrow([str(tmp_path / "data"), str(tmp_path / "remote")], **committed)
    assert everything.select(COLUMNS).equals(whole)


def test_dump_prints_a_manifest_and_its_decoded_chunk_sizes(compressed_copy, capsys):
    from kafkaseg.cli.main import main

    _, _, written = compressed_copy
    manifest = json.loads(_manifest(written[1]).read_text())
    (pd,) = discover(str(written[1].parent))
    chunked = pd.filesystem.handler.objects[str(written[1])]
    assert main(["dump", "--files", str(_manifest(written[1]))]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert f"chunks: {len(chunked.starts) - 1} storedBytes: {written[1].stat().st_size}" in lines[1]
    assert lines[2] == "compression: true encryption: false"
    metadata = manifest["remoteLogSegmentMetadata"]
    assert f"startOffset: {metadata['startOffset']} endOffset: {metadata['endOffset']}" in lines[4]
    assert main(["dump", "--files", str(_manifest(written[1])), "--json"]) == 0
    shown = json.loads(capsys.readouterr().out.splitlines()[1])
    starts = list(chunked.starts)
    assert shown["chunkIndex"]["transformedChunks"] == [b - a for a, b in zip(starts, starts[1:])]


def _tiered_log(root: Path, log_start: int, stamps: dict[int, int]) -> tuple[Path, Path]:
    """t-0: segments [0,10) [10,20) [20,30) [30,40) of 5-record batches with ``stamps``; [0,30) copied to an
    Aiven-layout store, then local retention deleted the local [0,20); ``log_start`` as deleteRecords left it."""
    from kafkaseg.testing import PartitionWriter, Record, build_batch_v2
    from kafkaseg.testing.partition import write_offset_checkpoint

    logs, store = root / "data", root / "store"
    folder = logs / "t-0"
    writer = PartitionWriter(folder)
    for base in (0, 10, 20, 30):
        if base:
            writer.roll(base)
        for first in (base, base + 5):
            writer.append(build_batch_v2([Record(o, stamps[o], b"k", b"v", []) for o in range(first, first + 5)],
                                         base_offset=first))
    log = writer.close()
    write_offset_checkpoint(logs / "replication-offset-checkpoint", {("t", 0): log.log_end_offset})
    write_offset_checkpoint(logs / "log-start-offset-checkpoint", {("t", 0): log_start})
    (folder / "partition.metadata").write_text(f"version: 0\ntopic_id: {kafka_uuid('t')}\n")
    copy_to_tiered(folder, store, layout="aiven")  # the rolled segments: [0,30)
    for base in (0, 10):
        for path in folder.glob(f"{base:020d}.*"):
            path.unlink()
    return logs, store


def _broker_offset_for_time(stamps: dict[int, int], log_start: int, target: int) -> int | None:
    """RemoteLogManager.findOffsetByTimestamp then RemoteLogOffsetReader's local fallback, brute force over the
    segments of _tiered_log: the first remote segment whose largest timestamp reaches ``target`` and that ends at
    or after the log start is searched (remote, as it starts below the local log); a miss there, or no such
    segment, searches the local log from its first offset (20): its first segment reaching ``target``, only."""
    def largest(base):
        return max(stamps[o] for o in range(base, base + 10))

    def first_in(base, start):
        return next((o for o in range(base, base + 10) if o >= start and stamps[o] >= target), None)

    for base in (0, 10, 20):
        if largest(base) >= target and base + 9 >= log_start:
            if base < 20:
                found = first_in(base, log_start)
                if found is not None:
                    return found
                break
            break  # a copy of a local segment: the local search below
    for base in (20, 30):
        if largest(base) >= target:
            return first_in(base, max(log_start, 20))
    return None


@pytest.mark.parametrize("log_start", [0, 12, 15, 20])
def test_a_tiered_topics_time_lookups_search_as_its_broker(tmp_path, log_start):
    """A log dir read with its remote copies is searched for a time as the broker searches a tiered topic, not as
    one local log: a copy whose largest timestamp reaches the time but holds no record at or after the log start
    with it sends the search to the local log (found by review: a deleteRecords inside a copy and a late-stamped
    record made reads start or end wrong, with no error); -3 answers from the local log only, as the broker does."""
    T0 = 1_700_000_000_000
    stamps = {o: T0 + o for o in range(40)}
    stamps[12], stamps[35] = T0 + 1000, T0 + 600  # producers whose clocks ran ahead
    logs, store = _tiered_log(tmp_path, log_start, stamps)
    paths = [str(logs), str(store)]
    partition = [p for p in discover(paths) if p.topic == "t"]
    assert len(partition) == 2 and any(p.tiered for p in partition)
    merged = choose_replicas(partition)[0].chosen
    for target in sorted({T0 + d for d in (0, 5, 11, 13, 17, 25, 30, 500, 601, 700, 999, 1000, 1001)}):
        expected = _broker_offset_for_time(stamps, log_start, target)
        answer = list_offset(merged, target)
        assert answer.offset == expected, (target - T0, answer)
        rows = kafkaseg.read_arrow(paths, startingTimestamp=target, failOnDataLoss="false",
                                   **({"startingOffsetsByTimestampStrategy": "latest"} if expected is None else {}))
        assert rows.column("offset").to_pylist()[:1] == ([] if expected is None else [expected]), target - T0
    assert list_offset(merged, -3).offset == 35  # the local log's largest timestamp, not offset 12's copy


def test_a_lenient_time_search_goes_on_past_corruption_in_a_copy(tmp_path):
    """onCorruption=skip: a copy whose batch holding the time's records is corrupt is searched on in the copies
    after it, as a lenient read of a local log goes on in its later segments (found by review: the tiered search
    went from that copy to the local log, silently skipping the readable offsets 10..19 of the next copy)."""
    import struct

    T0 = 1_700_000_000_000
    stamps = {o: T0 + o for o in range(40)}
    logs, store = _tiered_log(tmp_path, 0, stamps)
    first_copy = sorted(store.rglob("*.log"))[0]
    data = bytearray(first_copy.read_bytes())
    data[struct.unpack(">i", data[8:12])[0] + 12 + 70] ^= 0xFF  # a record byte of the batch of offsets 5..9
    first_copy.write_bytes(bytes(data))
    paths = [str(logs), str(store)]
    rows = kafkaseg.read_arrow(paths, startingTimestamp=T0 + 7, onCorruption="skip", failOnDataLoss="false")
    assert rows.column("offset").to_pylist() == list(range(10, 40))
    with pytest.raises(kafkaseg.CorruptDataError):  # strict: the broker's search fails on it too
        kafkaseg.read_arrow(paths, startingTimestamp=T0 + 7)


def test_a_globs_emptied_folder_stands_for_a_store_only_by_a_stores_topics_or_partitions_name(tmp_path):
    """:func:`tiered.emptied_folders` keeps the rule for a glob's match (``globbed``): an empty folder of no
    tiered-storage name is no emptied store's root then (``/mnt/kafka/*`` matching an unused disk's folder), while
    one named as a store (``kafka-tiered-storage``), topic or partition folder is, as is any empty folder given."""
    from kafkaseg.storage import fs as _fs

    topic_id = kafka_uuid("orders")
    folders = {"unused": None, "kafka-tiered-storage": tiered.LOCAL_TIERED_STORAGE,
               f"orders-0-{topic_id}": tiered.LOCAL_TIERED_STORAGE, f"orders-{topic_id}": tiered.AIVEN}
    for name, layout in folders.items():
        path = str(tmp_path / name)
        (tmp_path / name).mkdir()
        given = tiered.emptied_folders(path, None, _fs.list_dir(path, None))
        assert [(f.path, f.layout) for f in given] == [(path, layout or tiered.UNKNOWN_LAYOUT)], name
        globbed = tiered.emptied_folders(path, None, _fs.list_dir(path, None), globbed=True)
        assert (globbed is None) == (layout is None), name
        assert globbed is None or globbed == given, name
    # a folder holding only empty folders named as a store's topics: the same with or without a glob
    (tmp_path / "store" / f"orders-{topic_id}").mkdir(parents=True)
    root = str(tmp_path / "store")
    assert tiered.emptied_folders(root, None, _fs.list_dir(root, None), globbed=True) == \
        tiered.emptied_folders(root, None, _fs.list_dir(root, None)) == \
        [tiered.EmptiedFolder(str(tmp_path / "store" / f"orders-{topic_id}"), tiered.AIVEN,
                              (("orders", topic_id, None),))]


def test_a_remote_copy_named_past_a_long_is_refused_by_discoverys_test_in_its_words():
    """A tiered-storage copy's file named past a Java long (RemoteLogSegmentMetadata's offsets are longs) is refused
    as a log dir's segment is: by ``layout.offset_past_a_long`` in ``layout.past_a_long_words``, a LayoutError; the
    largest long itself is a copy as any other."""
    from kafkaseg.storage import fs as _fs
    from kafkaseg.storage.layout import past_a_long_words
    from kafkaseg.storage.tiered import remote_segments

    segment_id = "A" * 22
    largest, past = f"{2**63 - 1:020d}", f"{2**63:020d}"
    entry = _fs.FileEntry(f"/r/{largest}-{segment_id}.log", f"{largest}-{segment_id}.log", False, 0, None)
    assert [c.base_offset for c in remote_segments([entry], [])] == [2**63 - 1]
    path = f"/r/{past}-{segment_id}.log"
    with pytest.raises(LayoutError) as raised:
        remote_segments([_fs.FileEntry(path, f"{past}-{segment_id}.log", False, 0, None)], [])
    assert str(raised.value) == f"{path}: {past_a_long_words(past)}"


@pytest.mark.parametrize("layout", LAYOUTS)
def test_a_folder_above_a_store_of_copies_names_it_in_its_error(tmp_path, layout):
    """``load("s3://tiered/")`` where the plugin writes under ``rsm.config.key.prefix=kafka/``: the error said only
    what the bucket is not (found reading a bucket of copies as a user gives it); it now names the store's root
    below it, as it names log dirs below a folder."""
    data, remote, _, _ = _tiered_topic(tmp_path, layout)
    store = remote / "kafka"
    store.mkdir()
    for child in list(remote.iterdir()):
        if child != store:
            child.rename(store / child.name)
    assert kafkaseg.read_arrow(str(store)).num_rows > 0
    with pytest.raises(LayoutError, match=rf"neither a Kafka log dir.*; it holds one: {re.escape(str(store))}\b"):
        kafkaseg.read_arrow(str(remote))
    (remote / "notes").mkdir()  # a folder holding neither copies nor log dirs is not named
    with pytest.raises(LayoutError, match=rf"; it holds one: {re.escape(str(store))} \(read that instead\)$"):
        kafkaseg.read_arrow(str(remote))


def test_a_tiered_copy_does_not_answer_for_the_active_segment_it_lacks(tmp_path):
    """The active segment is never uploaded: a corrupt batch there is in no tiered copy, so the read and the
    timestamp search fail alike, the error's note naming the tiered copy tried and why it could not stand in (its
    log ends below the offsets wanted)."""
    import pyarrow as pa

    from kafkaseg.errors import CrcMismatchError
    from kafkaseg.wire.batch import iter_headers

    data, remote, whole, bases = _tiered_topic(tmp_path, "local")
    log = data / "orders-0" / f"{bases[-1]:020d}.log"
    raw = bytearray(log.read_bytes())
    header = list(iter_headers(bytes(raw)))[3]
    raw[header.position + 70] ^= 0xFF
    log.write_bytes(bytes(raw))
    paths = [str(data), str(remote)]
    (copy,) = [p.path for p in discover([str(remote)])]
    offsets = whole["offset"].to_pylist()
    ts = whole["timestamp"].cast(pa.timestamp("ms")).cast(pa.int64()).to_pylist()[offsets.index(header.base_offset + 3)]
    for options in ({}, {"startingTimestamp": ts}):
        with pytest.raises(CrcMismatchError) as caught:
            kafkaseg.read_arrow(paths, **options)
        (note,) = caught.value.__notes__
        assert re.search(f"{re.escape(copy)}: (the partition's log now ends|its log ends) at {bases[-1]}", note), note


@pytest.mark.parametrize("layout", LAYOUTS)
def test_a_tiered_copy_with_a_copy_missing_before_the_answer_does_not_answer(tmp_path, layout, capsys):
    """A tiered-storage copy stands in for a search only where it holds every offset the answer rests on, from the
    log start to the record answered: with the copy of the corrupt local segment missing from the bucket, its ends
    still span the answer, but the search there would skip the missing offsets and answer a later record (the next
    copy's). It is passed over, the note naming the offsets no copy holds, and the search fails as the read of the
    same files does (which finds no file holding the corrupt batch's offsets there)."""
    import pyarrow as pa

    from kafkaseg.errors import CrcMismatchError

    data, remote, whole, bases = _tiered_topic(tmp_path, layout)
    log, header = _corrupt_copied_batch(data, bases)
    (copy,) = [p.path for p in discover([str(remote)])]
    for path in Path(copy).glob(f"{bases[5]:020d}-*"):
        path.unlink()
    paths = [str(data), str(remote)]
    offsets = whole["offset"].to_pylist()
    ts = whole["timestamp"].cast(pa.timestamp("ms")).cast(pa.int64()).to_pylist()[offsets.index(header.base_offset + 3)]
    for options in ({}, {"startingTimestamp": ts}):
        with pytest.raises(CrcMismatchError) as caught:
            kafkaseg.read_arrow(paths, **options)
        assert copy in caught.value.__notes__[0]
    assert f"offsets [{bases[5]}, {bases[6]}) are in no tiered-storage copy" in caught.value.__notes__[0]
    code = main(["offsets", "--data-dir", str(data), "--data-dir", str(remote), "--time", str(ts)])
    out = capsys.readouterr()
    assert (code, out.out) == (2, ""), out.out
    assert f"offsets [{bases[5]}, {bases[6]}) are in no tiered-storage copy" in out.err
