"""Entries a copied data dir can hold that no broker writes: a FIFO, socket, device or folder under a segment's or a
checkpoint's name, checkpoints out of range. Each is refused or reported, never silently dropping or adding rows."""

from __future__ import annotations

import json
import os
import socket

import pytest

import kafkaseg
from kafkaseg.cli.main import main
from kafkaseg.errors import KafkaSegError, LayoutError
from kafkaseg.testing import TopicSpec, write_data_dir


@pytest.fixture
def data_dir(tmp_path):
    root = tmp_path / "data"
    write_data_dir(root, [TopicSpec("orders", records_per_partition=600, records_per_batch=20,
                                    segment_bytes=8 * 1024)])
    return root


def _segments(root):
    return sorted((root / "orders-0").glob("*.log"))


def _middle(root):
    logs = _segments(root)
    assert len(logs) >= 4
    return logs[len(logs) // 2]


def _fifo(path):
    path.unlink()
    os.mkfifo(path)


def _socket(path):
    path.unlink()
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    return server


def _device(path):
    path.unlink()
    path.symlink_to("/dev/zero")


def _folder(path):
    path.unlink()
    path.mkdir()


@pytest.mark.parametrize("plant", [_fifo, _socket, _device, _folder])
@pytest.mark.parametrize("which", ["first", "middle"])
def test_a_segment_that_is_no_file_is_refused_not_read_as_empty(data_dir, capsys, plant, which):
    # a FIFO, socket or device has size 0 and a folder is left out of a file listing: either way the segment's
    # records went missing with a note at most (a read of the FIFO itself would block)
    log = _segments(data_dir)[0] if which == "first" else _middle(data_dir)
    kept = plant(log)
    try:
        with pytest.raises(LayoutError, match=f"cannot read segment {log}: not a readable file"):
            kafkaseg.read_arrow(str(data_dir))
        assert main(["consume", "--data-dir", str(data_dir), "--topic", "orders", "--from-beginning"]) == 2
        assert "not a readable file" in capsys.readouterr().err
        # verify: that file's error (exit 1, as for any error it finds), the rest of the run as usual
        assert main(["verify", str(data_dir)]) == 1
        out = capsys.readouterr().out
        assert f"ERROR: {log}: cannot read: not a readable file" in out and "1 partitions" in out
    finally:
        if kept is not None:
            kept.close()


@pytest.mark.parametrize("name, what", [("replication-offset-checkpoint", "high watermark"),
                                        ("log-start-offset-checkpoint", "log start offset")])
def test_a_folder_under_a_checkpoint_name_is_a_broken_checkpoint_not_a_missing_one(data_dir, capsys, name, what):
    # a missing checkpoint widens the read to the log's ends; a folder there is one a broker cannot read
    (data_dir / name).unlink()
    (data_dir / name).mkdir()
    with pytest.raises(KafkaSegError, match=f"{name} of .* is unreadable"):
        kafkaseg.read_arrow(str(data_dir))
    assert main(["verify", "--json", str(data_dir)]) == 1
    report = json.loads(capsys.readouterr().out)
    assert any(p["severity"] == "error" and p["file"] == str(data_dir / name) for p in report["problems"])


@pytest.mark.parametrize("name", ["leader-epoch-checkpoint", "partition.metadata"])
def test_a_folder_under_a_partition_file_name_is_an_error_in_verify(data_dir, capsys, name):
    path = data_dir / "orders-0" / name
    path.unlink()
    path.mkdir()
    assert main(["verify", "--json", str(data_dir)]) == 1
    report = json.loads(capsys.readouterr().out)
    assert any(p["severity"] == "error" and p["file"] == str(path) for p in report["problems"]), report["problems"]


def test_a_high_watermark_below_the_log_start_is_the_log_start(data_dir, capsys):
    # UnifiedLog.updateHighWatermark raises it to the log start: nothing is fetchable, and latest is the log start
    (data_dir / "replication-offset-checkpoint").write_text("0\n1\norders 0 -5\n")
    assert kafkaseg.read_arrow(str(data_dir)).num_rows == 0
    assert main(["offsets", "--data-dir", str(data_dir)]) == 0
    assert capsys.readouterr().out == "orders:0:0\n"
    scan = kafkaseg.open_scan(str(data_dir))
    (partition,) = scan.plan.report.partitions
    assert any("high watermark -5 is below the log start offset 0" in note for note in partition.notes)
    assert main(["describe", "--json", str(data_dir)]) == 0
    (described,) = json.loads(capsys.readouterr().out)["partitions"]
    assert described["lastStableOffset"] == 0
    assert any("below the log start offset 0" in note for note in described["notes"])


def test_a_cleaner_checkpoint_past_the_log_end_explains_no_missing_segment(data_dir, capsys):
    # LogCleanerManager.cleanableOffsets takes such an entry as invalid: a lost segment stays a reported loss
    lost = _middle(data_dir)
    base = int(lost.name[:-4])
    for path in (data_dir / "orders-0").glob(f"{base:020d}.*"):
        path.unlink()
    (data_dir / "cleaner-offset-checkpoint").write_text(f"0\n1\norders 0 {2**63 - 1}\n")
    scan = kafkaseg.open_scan(str(data_dir))
    scan.to_table()
    assert [start for _, start, _ in scan.metrics.missing_offsets] == [base]
    assert main(["verify", "--json", str(data_dir)]) == 0
    problems = json.loads(capsys.readouterr().out)["problems"]
    assert any(p["severity"] == "warning" and "cleaner offset 9223372036854775807 is above the log end offset" in
               p["message"] for p in problems)
    assert any(p["severity"] == "warning" and f"offsets {base}.." in p["message"] for p in problems), problems


def test_an_unreadable_meta_properties_is_one_error_of_the_log_dir(data_dir, capsys):
    # MetaPropertiesEnsemble: a broker takes the log dir offline on it
    (data_dir / "meta.properties").write_bytes(b"\xfd\x01binary")
    assert main(["verify", "--json", str(data_dir)]) == 1
    problems = json.loads(capsys.readouterr().out)["problems"]
    meta = [p for p in problems if "meta.properties" in p["message"]]
    assert [(p["severity"], p["file"]) for p in meta] == [("error", str(data_dir / "meta.properties"))]


def test_a_broken_link_named_as_a_partition_folder_is_reported_skipped(data_dir, capsys):
    (data_dir / "orders-5").symlink_to(data_dir / "nowhere")
    scan = kafkaseg.open_scan(str(data_dir))
    assert scan.to_table().num_rows == 600
    assert [reason for path, reason in scan.plan.report.skipped_folders if path.endswith("orders-5")] == [
        "named as a partition folder but cannot be read (a broken link?)"]
    assert main(["verify", "--json", str(data_dir)]) == 0
    problems = json.loads(capsys.readouterr().out)["problems"]
    assert any(p["file"] == str(data_dir / "orders-5") and "cannot be read" in p["message"] for p in problems)


def test_log_dirs_describes_a_log_dir_with_a_segment_that_is_no_file(data_dir, capsys):
    # a broker's LogLoader passes over entries that are not files: the log dir is not offline, and the partition's
    # size is its .log files
    logs = _segments(data_dir)
    middle = _middle(data_dir)
    size = sum(p.stat().st_size for p in logs if p != middle)
    _folder(middle)
    assert main(["log-dirs", "--describe", "--json", str(data_dir)]) == 0
    out, err = capsys.readouterr()
    (broker,) = json.loads(out.splitlines()[-1])["brokers"]
    (log_dir,) = broker["logDirs"]
    assert log_dir["error"] is None
    (replica,) = log_dir["partitions"]
    assert (replica["partition"], replica["size"], replica["segments"]) == ("orders-0", size, len(logs) - 1)
    assert f"cannot read segment {middle}" in err
    # a segment name past a long is another matter: Long.parseLong fails the log, and the log dir goes offline
    (data_dir / "orders-0" / "99999999999999999999.log").write_bytes(logs[0].read_bytes())
    assert main(["log-dirs", "--describe", "--json", str(data_dir)]) == 2
    (broker,) = json.loads(capsys.readouterr().out.splitlines()[-1])["brokers"]
    assert broker["logDirs"][0]["error"] == "org.apache.kafka.common.errors.KafkaStorageException"


def test_checkpoints_out_of_range_in_retention_offsets_and_compaction(data_dir, capsys):
    from kafkaseg.compaction import CompactionConfig, compaction_read_options, gather_facts

    (data_dir / "replication-offset-checkpoint").write_text("0\n1\norders 0 -5\n")
    assert main(["offsets", "--data-dir", str(data_dir), "-v"]) == 0
    out, err = capsys.readouterr()
    assert out == "orders:0:0\n" and "high watermark -5 is below the log start offset: the log start 0" in err
    assert main(["retention", "--json", str(data_dir)]) == 0
    (facts,) = json.loads(capsys.readouterr().out)["partitions"]
    assert "checkpointed high watermark -5 is below the log start offset 0" in facts["notes"]
    # the cleaner's checkpoint past the log end is none to a compaction run too (it would report a loss)
    (data_dir / "replication-offset-checkpoint").write_text("0\n1\norders 0 600\n")
    (data_dir / "cleaner-offset-checkpoint").write_text("0\n1\norders 0 5000\n")
    (fact,), _ = gather_facts([str(data_dir)], compaction_read_options({}), CompactionConfig())
    assert fact.cleaner_offset is None
    (data_dir / "cleaner-offset-checkpoint").write_text("0\n1\norders 0 300\n")
    (fact,), _ = gather_facts([str(data_dir)], compaction_read_options({}), CompactionConfig())
    assert fact.cleaner_offset == 300


@pytest.mark.parametrize("which", ["last", "rolled"])
def test_a_base_offset_whose_last_offset_overflows_64_bits_is_corruption(tmp_path, capsys, which, kernel):
    # baseOffset is outside the CRC: 2^63-1 there with lastOffsetDelta 1 wraps in Java; it crashed planning with
    # an OverflowError and made `offsets` print 2^63+1; the pure twin's unbounded sum took it for a batch past the
    # next segment's base and dropped it from a strict read without a word
    import struct

    from kafkaseg.errors import CorruptBatchError
    from kafkaseg.testing import PartitionWriter, Record, build_batch_v2

    folder = tmp_path / "t-0"
    writer = PartitionWriter(folder, segment_bytes=1)  # a segment per batch
    for base in range(0, 6, 2):
        writer.append(build_batch_v2([Record(base, 1_700_000_000_000 + base, b"k", b"v"),
                                      Record(base + 1, 1_700_000_000_001 + base, b"k", b"v")]))
    writer.close()
    logs = sorted(folder.glob("*.log"))
    assert len(logs) == 3
    bad = logs[-1] if which == "last" else logs[1]
    data = bytearray(bad.read_bytes())
    data[0:8] = struct.pack(">q", 2**63 - 1)
    bad.write_bytes(bytes(data))
    with pytest.raises(CorruptBatchError, match=f"{bad} @ byte 0: .*"):
        kafkaseg.read_arrow(str(folder))
    kept = kafkaseg.read_arrow(str(folder), onCorruption="skip").column("offset").to_pylist()
    assert kept == [o for o in range(6) if o not in ((4, 5) if which == "last" else (2, 3))]
    if which == "last":
        assert main(["offsets", "--data-dir", str(tmp_path)]) == 2
        out, err = capsys.readouterr()
        assert out == "" and "leaves no next offset in a 64-bit long" in err


def test_a_folder_under_a_segment_name_matched_alone_by_a_glob_is_refused(data_dir):
    # the glob matched no file, so nothing read the partition that would have refused it: 0 rows, no word
    from kafkaseg.errors import UnreadableSegmentError

    middle = _middle(data_dir)
    _folder(middle)
    for given in (str(middle), str(middle.parent / (middle.name[:-5] + "*.log"))):
        with pytest.raises(UnreadableSegmentError, match=f"cannot read segment {middle}: a folder, not a file"):
            kafkaseg.read_arrow(given)


def test_a_name_past_a_long_fails_the_log_only_when_it_is_a_file(data_dir, capsys):
    # LogLoader passes over what is no file before it parses the name (File.isFile, then Long.parseLong)
    (data_dir / "orders-0" / "99999999999999999999.log").mkdir()
    assert main(["log-dirs", "--describe", "--json", str(data_dir)]) == 0
    (broker,) = json.loads(capsys.readouterr().out.splitlines()[-1])["brokers"]
    assert broker["logDirs"][0]["error"] is None


def _dangling(path):
    path.unlink()
    path.symlink_to(path.parent / "nowhere")  # a link to nothing: the name cannot be stat'ed


@pytest.fixture
def two_partitions(tmp_path):
    root = tmp_path / "data"
    write_data_dir(root, [TopicSpec("orders", partitions=2, records_per_partition=600, records_per_batch=20,
                                    segment_bytes=8 * 1024)])
    return root


@pytest.mark.parametrize("plant", [_fifo, _folder, _dangling])
def test_a_segment_that_is_no_file_is_its_partitions_error_and_the_rest_is_still_checked(two_partitions, capsys,
                                                                                        plant):
    # docs/cli.md: what describe and verify cannot read is an error of that partition, and the rest is still described
    # or verified; offsets skips that partition as it skips one it cannot answer. A read still refuses it.
    data_dir = two_partitions
    log = _middle(data_dir)
    plant(log)
    why = f"cannot read segment {log}: not a readable file"
    with pytest.raises(LayoutError, match=why):
        kafkaseg.read_arrow(str(data_dir))
    with pytest.raises(LayoutError, match=why):
        kafkaseg.read_arrow(str(data_dir), onCorruption="skip")
    other = [s.name for s in sorted((data_dir / "orders-1").glob("*.log"))]

    assert main(["verify", "--json", str(data_dir)]) == 1
    report = json.loads(capsys.readouterr().out)
    by_name = {(p["topic"], p["partition"]): p for p in report["partitions"]}
    assert set(by_name) == {("orders", 0), ("orders", 1)}
    assert [s["path"].rsplit("/", 1)[1] for s in by_name["orders", 1]["segments"]] == other
    assert by_name["orders", 1]["logEndOffset"] == 600
    mine = [p for p in report["problems"] if p["file"] == str(log)]
    assert [p["severity"] for p in mine] == ["error"] and "not a readable file" in mine[0]["message"], mine
    assert not [p for p in report["problems"] if p["severity"] == "error" and "orders-1" in p["file"]]

    assert main(["verify", str(data_dir)]) == 1
    out = capsys.readouterr().out
    assert f"ERROR: {log}: cannot read: not a readable file" in out
    assert "2 partitions" in out

    assert main(["describe", "--json", str(data_dir)]) == 2
    out, err = capsys.readouterr()
    described = {d["partition"]: d for d in json.loads(out)["partitions"]}
    assert [e for e in described[0]["errors"] if why in e], described[0]["errors"]
    assert (described[1]["errors"], described[1]["logEndOffset"]) == ([], 600)
    assert main(["describe", str(data_dir)]) == 2
    out, err = capsys.readouterr()
    assert f"orders-0: error: {why}" in err
    assert "orders-1" not in err

    assert main(["offsets", "--data-dir", str(data_dir)]) == 2
    out, err = capsys.readouterr()
    assert out == "orders:1:600\n"
    assert f"Skip getting offsets for topic-partition orders-0 due to error: {why}" in err
    assert main(["offsets", "--data-dir", str(data_dir), "--json"]) == 2
    rows = json.loads(capsys.readouterr().out)
    assert [(r["partition"], "error" in r) for r in rows] == [(1, False), (0, True)]


def test_a_partition_folder_given_with_a_segment_that_is_no_file_is_that_partitions_error(two_partitions, capsys):
    log = _middle(two_partitions)
    _folder(log)
    given = [str(two_partitions / "orders-0"), str(two_partitions / "orders-1")]
    assert main(["verify", "--json", *given]) == 1
    report = json.loads(capsys.readouterr().out)
    assert len(report["partitions"]) == 2
    assert [p["severity"] for p in report["problems"] if p["file"] == str(log)] == ["error"]
    assert main(["describe", *given]) == 2
    assert f"orders-0: error: cannot read segment {log}" in capsys.readouterr().err
    with pytest.raises(LayoutError, match=f"cannot read segment {log}"):
        kafkaseg.read_arrow(given)


def test_offsets_skips_a_partition_one_replica_of_which_has_a_segment_that_is_no_file(two_partitions, tmp_path,
                                                                                       capsys):
    # a read of both log dirs refuses the partition (discovery): offsets answers neither replica rather than the
    # other one unsaid, and still answers the other partition
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(two_partitions, copy)
    log = _middle(copy)
    _folder(log)
    with pytest.raises(LayoutError, match=f"cannot read segment {log}"):
        kafkaseg.read_arrow([str(two_partitions), str(copy)])
    assert main(["offsets", "--data-dir", str(two_partitions), "--data-dir", str(copy)]) == 2
    out, err = capsys.readouterr()
    assert out == "orders:1:600\n"
    assert err.count("Skip getting offsets for topic-partition orders-0") == 1 and str(log) in err


def _named_past_a_long(root):
    """A copy of orders-0's first segment named past a 64-bit long: (that segment, the copy, the error's words)."""
    first = _segments(root)[0]
    odd = first.parent / "99999999999999999999.log"
    odd.write_bytes(first.read_bytes())
    return first, odd, f"{odd}: base offset 99999999999999999999 in the file name does not fit in a 64-bit long"


def test_a_segment_name_past_a_long_is_its_partitions_error_to_verify_describe_and_offsets(two_partitions, capsys):
    # a broker does not load such a log (Long.parseLong; LogManager rethrows what is no IOException): log-dirs says
    # the log dir offline and a read refuses it, but verify, describe and offsets inspect the other partitions
    data_dir = two_partitions
    first, odd, why = _named_past_a_long(data_dir)
    with pytest.raises(LayoutError, match=why):
        kafkaseg.read_arrow(str(data_dir))
    with pytest.raises(LayoutError, match=why):
        kafkaseg.read_arrow(str(data_dir / "orders-0"), onCorruption="skip")
    assert main(["log-dirs", "--describe", "--json", str(data_dir)]) == 2
    (broker,) = json.loads(capsys.readouterr().out.splitlines()[-1])["brokers"]
    assert broker["logDirs"][0]["error"] == "org.apache.kafka.common.errors.KafkaStorageException"

    for given in ([str(data_dir)], [str(data_dir / "orders-0"), str(data_dir / "orders-1")]):
        assert main(["verify", "--json", *given]) == 1
        report = json.loads(capsys.readouterr().out)
        by_name = {(p["topic"], p["partition"]): p for p in report["partitions"]}
        assert set(by_name) == {("orders", 0), ("orders", 1)}
        assert by_name["orders", 1]["logEndOffset"] == 600
        mine = [p for p in report["problems"] if p["file"] == str(odd)]
        assert [p["severity"] for p in mine] == ["error"] and "does not fit in a 64-bit long" in mine[0]["message"]
        assert main(["describe", *given]) == 2
        out, err = capsys.readouterr()
        assert f"orders-0: error: {why}" in err and "orders-1" not in err
        assert main(["describe", "--json", *given]) == 2
        described = {d["partition"]: d for d in json.loads(capsys.readouterr().out)["partitions"]}
        assert (described[1]["errors"], described[1]["logEndOffset"]) == ([], 600)
    assert main(["offsets", "--data-dir", str(data_dir)]) == 2
    out, err = capsys.readouterr()
    assert out == "orders:1:600\n"
    assert f"Skip getting offsets for topic-partition orders-0 due to error: {why}" in err


def test_a_segment_file_named_past_a_long_given_is_its_partitions_error(two_partitions, capsys):
    # that file given: its error, nothing read under an offset no long holds; a file beside it is checked on its own
    first, odd, why = _named_past_a_long(two_partitions)
    with pytest.raises(LayoutError, match=why):
        kafkaseg.read_arrow(str(odd))
    for given, segments in (([odd], []), ([odd, first], [first]), ([first, odd], [first])):
        assert main(["verify", "--json", *map(str, given)]) == 1
        report = json.loads(capsys.readouterr().out)
        (partition,) = report["partitions"]
        assert [s["path"] for s in partition["segments"]] == [str(s) for s in segments]
        assert [p["file"] for p in report["problems"] if p["severity"] == "error"] == [str(odd)]
    assert main(["describe", str(odd)]) == 2
    assert f"orders-0: error: {why}" in capsys.readouterr().err


@pytest.mark.parametrize("plant", [_folder, _dangling])
def test_a_log_file_given_beside_a_segment_that_is_no_file_is_verified_on_its_own(two_partitions, capsys, plant):
    # the file given can be read; its partition cannot (the odd sibling): verify checks the file and reports the
    # sibling as an error, describe says the partition's error, a read still refuses it
    logs = _segments(two_partitions)
    given_log = logs[0]
    odd = _middle(two_partitions)
    plant(odd)
    given = [str(given_log), str(two_partitions / "orders-1")]
    with pytest.raises(LayoutError, match=f"cannot read segment {odd}"):
        kafkaseg.read_arrow(given)
    assert main(["verify", "--json", *given]) == 1
    report = json.loads(capsys.readouterr().out)
    by_name = {(p["topic"], p["partition"]): p for p in report["partitions"]}
    assert set(by_name) == {("orders", 0), ("orders", 1)}
    assert [s["path"] for s in by_name["orders", 0]["segments"]] == [str(given_log)]
    assert by_name["orders", 1]["logEndOffset"] == 600
    errors = [p for p in report["problems"] if p["severity"] == "error"]
    assert [p["file"] for p in errors] == [str(odd)], errors
    assert main(["verify", *given]) == 1
    out = capsys.readouterr().out
    assert f"ERROR: {odd}: cannot read: not a readable file" in out and "2 partitions" in out
    assert main(["describe", "--json", *given]) == 2
    described = {d["partition"]: d for d in json.loads(capsys.readouterr().out)["partitions"]}
    assert [e for e in described[0]["errors"] if f"cannot read segment {odd}" in e], described[0]["errors"]
    assert (described[1]["errors"], described[1]["logEndOffset"]) == ([], 600)
    assert main(["offsets", "--data-dir", str(two_partitions)]) == 2
    assert capsys.readouterr().out == "orders:1:600\n"


def test_a_lone_log_file_named_past_a_long_is_refused_not_read_as_nothing(data_dir, tmp_path, capsys):
    # outside a <topic>-<partition> folder no listing refused it: a read gave 0 rows without a word (each batch's
    # offset below the name's base), and verify called every batch corrupt
    from kafkaseg.errors import SegmentNameError

    lone = tmp_path / "restored" / "99999999999999999999.log"
    lone.parent.mkdir()
    lone.write_bytes(_segments(data_dir)[0].read_bytes())
    why = f"{lone}: base offset 99999999999999999999 in the file name does not fit in a 64-bit long"
    for options in ({}, {"onCorruption": "skip"}):
        with pytest.raises(SegmentNameError, match=why):
            kafkaseg.read_arrow(str(lone), **options)
    assert main(["verify", "--json", str(lone)]) == 1
    report = json.loads(capsys.readouterr().out)
    (partition,) = report["partitions"]
    assert partition["segments"] == []
    assert [(p["file"], p["severity"]) for p in report["problems"] if p["severity"] != "info"] == [(str(lone), "error")]
    assert main(["describe", str(lone)]) == 2
    assert f"error: {why}" in capsys.readouterr().err


def test_the_three_refusals_of_a_name_past_a_long_are_one_test_and_one_wording(data_dir, tmp_path, capsys):
    """A folder's listing (``layout._names_past_a_long``), a lone ``.log`` given as a path (``_single_log_file``)
    and ``dump`` (``_fitting``) refuse a segment named one past a long by one test (``layout.offset_past_a_long``,
    Kafka's ``Long.parseLong``) in one wording (``layout.past_a_long_words``); the largest long itself passes."""
    from kafkaseg.errors import SegmentNameError
    from kafkaseg.storage.layout import discover, offset_past_a_long, past_a_long_words

    largest, past = f"{2**63 - 1:020d}", f"{2**63:020d}"
    assert (offset_past_a_long(largest), offset_past_a_long(past)) == (False, True)
    words = past_a_long_words(past)
    assert words == f"base offset {past} in the file name does not fit in a 64-bit long"
    folder = _segments(data_dir)[0].parent
    in_folder = folder / f"{past}.log"
    in_folder.write_bytes(_segments(data_dir)[0].read_bytes())
    with pytest.raises(SegmentNameError) as listed:
        discover(str(folder))
    assert (listed.value.detail, listed.value.path) == (words, str(in_folder))
    lone = tmp_path / "restored" / f"{past}.log"
    lone.parent.mkdir()
    lone.write_bytes(in_folder.read_bytes())
    with pytest.raises(SegmentNameError) as given:
        discover(str(lone))
    assert (given.value.detail, given.value.path) == (words, str(lone))
    assert main(["dump", "--no-progress", "--files", str(lone)]) == 1
    assert capsys.readouterr().err.strip() == f"Error dumping {lone}: {words}"


def _metadata_log(root):
    """A __cluster_metadata-0 folder: one segment, and a KRaft snapshot named as a broker names one."""
    from kafkaseg.testing import PartitionWriter, Record, build_batch_v2

    folder = root / "__cluster_metadata-0"
    writer = PartitionWriter(folder)
    writer.append(build_batch_v2([Record(o, 1_700_000_000_000, b"k", b"v") for o in range(3)]))
    writer.close()
    (folder / f"{3:020d}-{1:010d}.checkpoint").write_bytes((folder / f"{0:020d}.log").read_bytes())
    return folder


_NOT_FIXED_WIDTH = ("not named <end offset>-<epoch>.checkpoint, 20 and 10 digits: Kafka's Snapshots.parse reads them "
                    "at those places in the name and fails on it")


@pytest.mark.parametrize("name,words", [
    ("99999999999999999999-0000000001.checkpoint", "end offset 99999999999999999999 in the file name does not fit "
                                                   "in a 64-bit long"),
    ("00000000000000000005-9999999999.checkpoint", "epoch 9999999999 in the file name does not fit in a 32-bit int"),
    # a snapshot being written or deleted: Snapshots.parse parses its name as well (then deletes the file)
    ("99999999999999999999-0000000001.checkpoint.part", "end offset 99999999999999999999 in the file name does not "
                                                        "fit in a 64-bit long"),
    ("00000000000000000005-9999999999.checkpoint.deleted", "epoch 9999999999 in the file name does not fit in a "
                                                           "32-bit int"),
    # Snapshots.parse reads the end offset from the name's first 20 characters and the epoch from the 10 after the
    # next one, whatever they are: shorter parts fail it too (StringIndexOutOfBounds, NumberFormatException), where
    # discovery listed 5-3.checkpoint as a snapshot
    *[(name, _NOT_FIXED_WIDTH) for name in ("5-3.checkpoint", "00000000000000000005-3.checkpoint",
                                            "5-0000000003.checkpoint", "snapshot.checkpoint",
                                            "5-3.checkpoint.deleted")],
])
def test_a_kraft_snapshot_named_past_a_long_is_the_metadata_logs_error(tmp_path, capsys, name, words):
    # KafkaMetadataLog.recoverSnapshots parses every .checkpoint of the metadata log's folder (Snapshots.parse:
    # Long.parseLong, Integer.parseInt) and fails on such a name, as LogLoader fails a log on a segment name past a
    # long: discovery refuses it as it refuses such a segment (SegmentNameError; with partition_errors the
    # partition's error), where it listed it as a snapshot to verify and to read a topic's config from
    from kafkaseg.errors import SegmentNameError
    from kafkaseg.storage.layout import discover

    folder = _metadata_log(tmp_path / "data")
    odd = folder / name
    odd.write_bytes((folder / f"{0:020d}.log").read_bytes())
    with pytest.raises(SegmentNameError, match=f"{odd}: {words}"):
        discover([str(folder.parent)])
    (pdir,) = discover([str(folder.parent)], partition_errors=True)
    assert isinstance(pdir.error, SegmentNameError) and pdir.error.path == str(odd)
    assert (pdir.segments, pdir.kraft_snapshot_paths) == ((), ())
    assert main(["verify", "--json", str(folder.parent)]) == 1
    report = json.loads(capsys.readouterr().out)
    errors = [(p["file"], p["message"]) for p in report["problems"] if p["severity"] == "error"]
    assert errors == [(str(odd), f"cannot read: {words}")]
    # at the largest long and int it is a snapshot as any other
    odd.rename(folder / f"{2**63 - 1:020d}-{2**31 - 1:010d}{name[name.index('.'):]}")
    (pdir,) = discover([str(folder.parent)], partition_errors=True)
    assert pdir.error is None and len(pdir.kraft_snapshot_paths) == (2 if name.endswith(".checkpoint") else 1)


def test_a_partition_folder_with_two_names_past_a_long_reports_each(two_partitions, capsys):
    # each file named past a long fails the log on its own: verify and describe name every one, not the first only
    first, odd, why = _named_past_a_long(two_partitions)
    second = first.parent / "99999999999999999998.index"
    second.write_bytes(b"")
    assert main(["verify", "--json", str(two_partitions)]) == 1
    report = json.loads(capsys.readouterr().out)
    errors = sorted(p["file"] for p in report["problems"] if p["severity"] == "error")
    assert errors == sorted([str(odd), str(second)])
    assert main(["describe", "--json", str(two_partitions)]) == 2
    described = {d["partition"]: d for d in json.loads(capsys.readouterr().out)["partitions"]}
    assert sorted(described[0]["errors"]) == sorted([why, f"{second}: base offset 99999999999999999998 in the file "
                                                          "name does not fit in a 64-bit long"])


def test_a_kraft_snapshot_name_outside_the_metadata_log_is_no_snapshot(tmp_path, capsys):
    # only KafkaMetadataLog parses <end offset>-<epoch>.checkpoint names (Snapshots.parse); a broker's LogLoader
    # passes over such a file in any other partition's folder: discovery listed it as a KRaft snapshot and verify
    # read it as one. It is an unknown file there, as any other stray file of a partition folder
    from kafkaseg.storage.layout import discover
    from kafkaseg.testing import PartitionWriter, Record, build_batch_v2

    folder = tmp_path / "data" / "orders-0"
    writer = PartitionWriter(folder)
    writer.append(build_batch_v2([Record(o, 1_700_000_000_000, b"k", b"v") for o in range(3)]))
    writer.close()
    stray = folder / f"{3:020d}-{1:010d}.checkpoint"
    stray.write_bytes(b"not a snapshot")
    (pdir,) = discover([str(folder.parent)])
    assert pdir.error is None and pdir.kraft_snapshot_paths == ()
    # so is one a broker's Snapshots.parse would fail on: nothing parses it there
    (folder / "5-3.checkpoint").write_bytes(b"")
    (pdir,) = discover([str(folder.parent)], partition_errors=True)
    assert pdir.error is None and pdir.kraft_snapshot_paths == ()
    assert main(["verify", "--json", str(folder.parent)]) == 0
    report = json.loads(capsys.readouterr().out)
    odd = sorted((p["file"], p["severity"]) for p in report["problems"] if "checkpoint" in p["file"])
    assert odd == [(str(stray), "info"), (str(folder / "5-3.checkpoint"), "info")], report["problems"]
    messages = {p["message"] for p in report["problems"] if "checkpoint" in p["file"]}
    assert all(m.startswith("unknown file in a partition folder") for m in messages), messages
