"""``kafkaseg verify``/``describe`` on small hand-built partitions: the log end offset, broken checkpoints,
unreadable segments, single files, bounded problem lists."""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
import sys

import pytest

from kafkaseg.cli.main import main
from kafkaseg.testing import PartitionWriter, Record, build_batch_v2
from kafkaseg.testing.partition import write_offset_checkpoint

T0 = 1_700_000_000_000


def records(first: int, last: int, skip=()) -> list[Record]:
    return [Record(o, T0 + o, b"k%d" % o, b"v%d" % o) for o in range(first, last + 1) if o not in skip]


def write_partition(root, batches, *, checkpoints=None, segment_bytes=1 << 30, live=False):
    """A log dir ``root`` with one partition ``t-0`` holding ``batches``; the three offset checkpoints say the
    log end offset unless ``checkpoints`` overrides them (name -> offset)."""
    writer = PartitionWriter(root / "t-0", segment_bytes=segment_bytes, index_interval_bytes=1)
    for batch in batches:
        writer.append(batch)
    log = writer.close(live=live)
    values = {"replication-offset-checkpoint": log.log_end_offset,
              "recovery-point-offset-checkpoint": log.recovery_point,
              "log-start-offset-checkpoint": 0}
    values.update(checkpoints or {})
    for name, offset in values.items():
        write_offset_checkpoint(root / name, {("t", 0): offset})
    return log


def verify_json(argv, capsys):
    code = main(["verify", *map(str, argv), "--json"])
    return code, json.loads(capsys.readouterr().out)


def errors(report):
    return [p for p in report["problems"] if p["severity"] == "error"]


def test_log_end_is_last_batch_last_offset_plus_one(tmp_path, capsys):
    # the last batch ends at 9 but its record 9 was removed by compaction; then an empty batch 10..12 (a
    # producer's last batch the cleaner keeps): Kafka's log end offset is 13
    log = write_partition(tmp_path, [
        build_batch_v2(records(0, 4)),
        build_batch_v2(records(5, 8), last_offset=9),
        build_batch_v2([], base_offset=10, last_offset=12, producer_id=7, producer_epoch=0),
    ])
    assert log.log_end_offset == 13
    for shallow in ([], ["--shallow"]):
        code, report = verify_json([tmp_path, *shallow], capsys)
        assert code == 0 and not errors(report), errors(report)
        assert report["partitions"][0]["logEndOffset"] == 13


def simple_partition(root, *, batches=4, per_batch=5, **kwargs):
    return write_partition(root, [build_batch_v2(records(b * per_batch, b * per_batch + per_batch - 1))
                                  for b in range(batches)], **kwargs)


def test_corrupt_or_unreadable_offset_checkpoints_are_errors(tmp_path, capsys):
    simple_partition(tmp_path)
    hw = tmp_path / "replication-offset-checkpoint"
    hw.write_text("0\n2\nt 0 19x3\nt 1 2000\n")
    code, report = verify_json([tmp_path], capsys)
    assert code == 1 and not report["ok"]
    found = [p for p in errors(report) if p["file"] == str(hw)]
    assert len(found) == 1 and "line 3" in found[0]["message"] and found[0]["position"] == 4, found
    # also when a partition folder is given rather than the log dir, and in the text output
    assert main(["verify", str(tmp_path / "t-0")]) == 1
    out = capsys.readouterr().out
    assert f"ERROR: {hw} @ byte 4: " in out and "1 errors" in out

    hw.unlink()
    start = tmp_path / "log-start-offset-checkpoint"
    start.unlink()
    start.symlink_to(tmp_path / "nowhere")  # unreadable (a broken symlink)
    code, report = verify_json([tmp_path], capsys)
    assert code == 1
    assert [p for p in errors(report) if p["file"] == str(start)], report["problems"]


@pytest.mark.parametrize("name, content", [("leader-epoch-checkpoint", "garbage\n"),
                                           ("partition.metadata", "version: 0\ntopic_id: notbase64!!\n")])
def test_a_malformed_leader_epoch_checkpoint_or_partition_metadata_is_an_error(tmp_path, capsys, name, content):
    # a broker takes the whole log dir offline on either (KafkaStorageException); kafkaseg reads on without it,
    # but verify must not pass a data dir a broker would refuse to load
    simple_partition(tmp_path)
    (tmp_path / "t-0" / name).write_text(content)
    code, report = verify_json([tmp_path], capsys)
    assert code == 1 and not report["ok"]
    (found,) = errors(report)
    assert found["file"] == str(tmp_path / "t-0" / name) and "a broker fails the log dir" in found["message"]


def test_leader_epochs_past_the_log_end_are_a_warning_and_out_of_order_ones_an_error(tmp_path, capsys):
    # Kafka 3.8+ (KAFKA-16541) rewrites leader-epoch-checkpoint in the background after a truncation, so a copy can
    # hold an epoch starting past the log end, which the broker drops when it loads the log: not damage
    simple_partition(tmp_path)  # offsets 0..19
    epochs = tmp_path / "t-0" / "leader-epoch-checkpoint"
    epochs.write_text("0\n2\n5 0\n6 25\n")
    code, report = verify_json([tmp_path], capsys)
    assert code == 0 and report["ok"] and not errors(report), report["problems"]
    (stale,) = [p for p in report["problems"] if p["file"] == str(epochs)]
    assert stale["severity"] == "warning" and "epoch 6 starts at 25, above the log end offset 20" in stale["message"]
    epochs.write_text("0\n2\n6 0\n5 10\n")  # epochs going back: no broker writes that
    code, report = verify_json([tmp_path], capsys)
    assert code == 1
    (found,) = errors(report)
    assert found["file"] == str(epochs) and "epoch 5@10 does not follow 6@0" in found["message"]


def test_a_first_leader_epoch_below_the_first_segment_is_a_warning(tmp_path, capsys):
    """Segments removed from the front other than by retention (which cuts leader-epoch-checkpoint's entries below
    the new log start) leave the first epoch starting below the first segment: a warning naming the offsets."""
    simple_partition(tmp_path, batches=6, segment_bytes=200)  # offsets 0..29 in several segments
    folder = tmp_path / "t-0"
    (folder / "leader-epoch-checkpoint").write_text("0\n1\n0 0\n")
    write_offset_checkpoint(tmp_path / "log-start-offset-checkpoint", {})  # the usual: no entry
    code, report = verify_json([tmp_path], capsys)
    assert code == 0 and not [p for p in report["problems"] if p["severity"] != "info"], report["problems"]
    first, second = sorted(folder.glob("*.log"))[:2]
    for path in folder.glob(first.stem + ".*"):
        path.unlink()
    base = int(second.stem)
    code, report = verify_json([tmp_path], capsys)
    (found,) = [p for p in report["problems"] if p["severity"] == "warning"]
    assert found["file"] == str(folder / "leader-epoch-checkpoint")
    assert f"epoch 0 starts at 0, below the first segment's base {base}" in found["message"]
    assert f"[0, {base})" in found["message"]
    # a checkpointed log start below the first segment explains it (a tiered topic, or a stale checkpoint): its own
    # note, no warning
    write_offset_checkpoint(tmp_path / "log-start-offset-checkpoint", {("t", 0): 0})
    code, report = verify_json([tmp_path], capsys)
    assert code == 0 and not [p for p in report["problems"] if p["severity"] == "warning"], report["problems"]


def _verify_after(paths, damage):
    """verify_partition as ``kafkaseg verify`` runs it, with ``damage()`` done between discovery and the reads."""
    from kafkaseg.cli.verify import VerifyReport, verify_partition
    from kafkaseg.storage.layout import discover

    partitions = discover([str(p) for p in paths])
    damage()
    report = VerifyReport()
    for pdir in partitions:
        verify_partition(pdir, report)
    return report.as_dict()


def test_an_unreadable_segment_is_one_error_and_the_rest_is_verified(tmp_path):
    # discovery refuses a .log it cannot stat (a broken symlink), so the segment becomes unreadable after it, as
    # when retention deletes it mid-run; opening it then raises the LayoutError a chmod 000 file raises (which root,
    # running the tests, can still read: see the setpriv test below)
    log = simple_partition(tmp_path, batches=12, segment_bytes=300)
    assert len(log.segments) >= 3
    middle = log.segments[1].log_path
    last = log.segments[-1].log_path
    data = bytearray(last.read_bytes())
    data[-3] ^= 0xFF  # a CRC error in another segment is still found
    last.write_bytes(bytes(data))

    def damage():
        middle.unlink()
        middle.symlink_to(tmp_path / "nowhere")

    report = _verify_after([tmp_path], damage)
    assert not report["ok"]
    found = errors(report)
    assert [p for p in found if p["file"] == str(middle) and "cannot read" in p["message"]], found
    assert [p for p in found if p["file"] == str(last) and "CRC mismatch" in p["message"]], found
    assert not [p for p in report["problems"] if "missing before this segment" in p["message"]]
    segments = report["partitions"][0]["segments"]
    assert len(segments) == len(log.segments) and segments[-1]["batches"] > 0
    # the last batch fails its CRC, but below the recovery point (flushed): the broker keeps it, as the log end
    assert report["partitions"][0]["logEndOffset"] == log.log_end_offset


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv"), reason="needs root and setpriv")
def test_chmod_000_segment_without_dac_override(tmp_path):
    log = simple_partition(tmp_path, batches=12, segment_bytes=300)
    os.chmod(log.segments[1].log_path, 0)
    result = subprocess.run(["setpriv", "--bounding-set", "-dac_override,-dac_read_search", sys.executable, "-m",
                             "kafkaseg.cli.main", "verify", str(tmp_path), "--json"], capture_output=True, text=True,
                            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}, timeout=60)
    if "Operation not permitted" in result.stderr:
        pytest.skip("setpriv cannot drop capabilities here")
    assert result.returncode == 1, result.stderr
    report = json.loads(result.stdout)
    assert [p for p in errors(report) if p["file"] == str(log.segments[1].log_path)
            and "Permission denied" in p["message"]]
    assert report["partitions"][0]["segments"][-1]["batches"] > 0


def test_describe_prints_what_it_reads_then_exits_2_for_a_partition_it_cannot_read(tmp_path, capsys, monkeypatch):
    # two brokers' copies of t-0; one's middle segment cannot be opened once discovery listed it (a broken symlink,
    # as a chmod 000 file for a user without root's override): every row is printed, then the read-error status
    import kafkaseg.cli.describe as describe
    from kafkaseg.storage.layout import discover

    bad = simple_partition(tmp_path / "a", batches=12, segment_bytes=300)
    simple_partition(tmp_path / "b", batches=12, segment_bytes=300)
    middle = bad.segments[1].log_path
    original = middle.read_bytes()

    def discover_then_damage(*args, **kwargs):
        found = discover(*args, **kwargs)
        if middle.is_file():
            middle.unlink()
            middle.symlink_to(tmp_path / "nowhere")
        return found

    monkeypatch.setattr(describe, "discover", discover_then_damage)
    assert main(["describe", str(tmp_path / "a"), str(tmp_path / "b"), "--json"]) == 2
    described = {d["logDir"]: d for d in json.loads(capsys.readouterr().out)["partitions"]}
    damaged, healthy = described[str(tmp_path / "a")], described[str(tmp_path / "b")]
    assert [e for e in damaged["errors"] if e.startswith(f"{middle}: ")], damaged
    assert not [n for n in damaged["notes"] if str(middle) in n]  # an error, not a note
    assert healthy["errors"] == [] and healthy["logEndOffset"] == bad.log_end_offset
    assert damaged["logEndOffset"] == bad.log_end_offset  # the rest is still described

    middle.unlink()
    middle.write_bytes(original)  # the text output alike, damaged the same way
    assert main(["describe", str(tmp_path / "a"), str(tmp_path / "b")]) == 2
    out, err = capsys.readouterr()
    assert len([line for line in out.splitlines() if "│ t " in line]) == 2  # both rows printed
    assert f"t-0: error: {middle}: " in err and "1 of 2 partitions could not be read in full" in err


def test_one_segment_file_is_checked_against_the_whole_partition(tmp_path, capsys):
    log = simple_partition(tmp_path, batches=12, segment_bytes=300)
    first = log.segments[0]
    assert log.segments[1].base_offset < log.log_end_offset
    for given in ([first.log_path], [first.log_path, log.segments[1].log_path]):
        code, report = verify_json(given, capsys)
        assert code == 0 and not errors(report), errors(report)
        part = report["partitions"][0]
        assert len(part["segments"]) == len(given)
        # offsets are the whole partition's, and the output says so
        assert part["logEndOffset"] == log.log_end_offset and part["logStartOffset"] == 0
        assert "whole partition" in part["note"]
    # a checkpoint beyond the whole partition's end is still an error when one file is given
    write_offset_checkpoint(tmp_path / "replication-offset-checkpoint", {("t", 0): log.log_end_offset + 1})
    code, report = verify_json([first.log_path], capsys)
    assert code == 1 and [p for p in errors(report) if "high watermark" in p["message"]]

    assert main(["describe", str(first.log_path), "--json"]) == 0
    (described,) = json.loads(capsys.readouterr().out)["partitions"]
    assert len(described["segments"]) == 1
    assert described["logEndOffset"] == log.log_end_offset and described["logStartOffset"] == 0
    assert [n for n in described["notes"] if "whole partition" in n]


def test_verify_memory_does_not_grow_with_the_number_of_batches(tmp_path, monkeypatch):
    import tracemalloc

    from kafkaseg.cli import verify
    from kafkaseg.storage.layout import discover
    from kafkaseg.testing import write_benchmark_segment

    monkeypatch.setattr(verify, "_CHUNK", 64 << 10)  # reads in 64 KiB chunks: what is left is per-batch state
    info = write_benchmark_segment(tmp_path / "t-0", 2 << 20, batch_bytes=64, value_size=20, key_size=0)
    assert info.batches > 15_000
    (pdir,) = discover([str(tmp_path / "t-0")])
    report = verify.VerifyReport()
    tracemalloc.start()
    try:
        verify.verify_partition(pdir, report, deep=False)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert report.ok and report.partitions[0].segments[0].batches == info.batches
    assert peak < 1 << 20, peak  # per-batch lists took ~40 bytes a batch for each of 4 fields


def test_problems_beyond_the_first_hundred_per_file_are_counted_not_listed(tmp_path, capsys):
    # two first batches with wild offsets: the second's field jumps past the batch after it (one error), and
    # every later batch goes back below the first's, each one error (a lenient read skips each of them)
    batches = [build_batch_v2(records(1_000_000, 1_000_000)), build_batch_v2(records(2_000_000, 2_000_000))]
    batches += [build_batch_v2(records(b, b)) for b in range(439)]
    write_partition(tmp_path, batches, checkpoints={"replication-offset-checkpoint": 0,
                                                    "recovery-point-offset-checkpoint": 0})
    log_path = str(tmp_path / "t-0" / "00000000000000000000.log")
    code, report = verify_json([tmp_path], capsys)
    assert code == 1
    mine = [p for p in errors(report) if p["file"] == log_path]
    assert len(mine) == 101
    assert sum(p["count"] for p in mine) == 1 + 439
    assert "340 more error problems" in mine[-1]["message"] and mine[-1]["count"] == 340
    assert main(["verify", str(tmp_path)]) == 1
    assert "440 errors" in capsys.readouterr().out.splitlines()[-1]


def test_missing_indexes_are_reported_alike(tmp_path, capsys):
    log = simple_partition(tmp_path, batches=12, segment_bytes=300)
    rolled, active = log.segments[0], log.segments[-1]
    for seg, suffix in ((rolled, ".index"), (rolled, ".timeindex"), (active, ".index"), (active, ".timeindex")):
        seg.log_path.with_suffix(suffix).unlink()
    code, report = verify_json([tmp_path], capsys)
    assert code == 0
    warned = {(p["file"], p["message"].split()[1]) for p in report["problems"] if p["severity"] == "warning"}
    assert warned == {(str(s.log_path), k) for s in (rolled, active) for k in (".index", ".timeindex")}, warned


def test_a_bad_crc_is_not_also_a_compaction_gap(tmp_path, capsys):
    log = simple_partition(tmp_path, batches=6)
    path = log.segments[0].log_path
    data = bytearray(path.read_bytes())
    second = struct.unpack_from(">i", data, 8)[0] + 12  # where the second batch starts
    data[second + 70] ^= 0xFF  # inside its records
    path.write_bytes(bytes(data))
    for shallow in ([], ["--shallow"]):
        code, report = verify_json([tmp_path, *shallow], capsys)
        assert code == 1 and [p for p in errors(report) if "CRC mismatch" in p["message"]]
        assert not [p for p in report["problems"] if "non-consecutive" in p["message"]], report["problems"]


@pytest.mark.parametrize("shallow", [[], ["--shallow"]])
def test_a_bad_last_batch_does_not_hide_a_high_watermark_past_where_recovery_truncates(tmp_path, capsys, shallow):
    """Recovery (LogLoader: the segments from the recovery point on) truncates the active segment at its first
    batch that fails its CRC, so the checkpoints are compared with that end: a high watermark past it is an error,
    not hidden by the bad batch's offsets (found in review). Below the recovery point the broker trusts the
    flushed bytes and keeps its log end (found in the next review: false errors on a cleanly shut down dir)."""
    for name, recovery_point, log_end in (("unflushed", 15, 15), ("flushed", 20, 20)):
        simple_partition(tmp_path / name, checkpoints={"recovery-point-offset-checkpoint": recovery_point})
        log = tmp_path / name / "t-0" / "00000000000000000000.log"
        data = bytearray(log.read_bytes())
        data[-2] ^= 0xFF  # a value byte of the last batch (offsets 15..19): its CRC fails
        log.write_bytes(bytes(data))
        code, report = verify_json([tmp_path / name, *shallow], capsys)
        assert code == 1  # the CRC error
        assert report["partitions"][0]["logEndOffset"] == log_end, name
        messages = [p["message"] for p in errors(report)]
        above = [m for m in messages if "is above the log end offset" in m]
        if log_end == 15:
            assert any("high watermark 20 is above the log end offset 15" in m for m in above), messages
        else:
            assert not above, messages


def test_zeros_after_a_rolled_segment_are_an_error_and_a_legacy_segment_needs_no_timeindex(tmp_path, capsys):
    import kafkaseg
    from kafkaseg.errors import CorruptBatchError
    from kafkaseg.testing import build_legacy_entries

    log = simple_partition(tmp_path / "a", batches=12, segment_bytes=300)
    rolled = log.segments[0].log_path
    with open(rolled, "ab") as fh:
        fh.write(b"\0" * 4096)  # a preallocated segment the broker did not trim
    # a read fails there, as a consumer's fetch does (record size 0): verify must not pass the dir
    with pytest.raises(CorruptBatchError, match=str(rolled)):
        kafkaseg.read_arrow(str(tmp_path / "a"))
    code, report = verify_json([tmp_path / "a"], capsys)
    assert code == 1 and [p for p in report["problems"] if p["severity"] == "error" and p["file"] == str(rolled)
                          and "zero bytes after the last batch of a rolled segment" in p["message"]], report["problems"]
    # brokers before 0.10.1 wrote no .timeindex: for a magic-0 segment its absence is normal
    write_partition(tmp_path / "b", build_legacy_entries(records(0, 9), 0))
    for path in (tmp_path / "b" / "t-0").glob("*.timeindex"):
        path.unlink()
    code, report = verify_json([tmp_path / "b"], capsys)
    about = [p for p in report["problems"] if "no .timeindex" in p["message"]]
    assert about and {p["severity"] for p in about} == {"info"}, about


def test_corrupt_framing_does_not_hide_the_batches_before_it(tmp_path, capsys):
    """From a review: corrupt framing made the chunk walk raise before handing over the whole batches read with it,
    so a CRC error earlier in the same 8 MiB went unreported and every index entry looked past the end."""
    simple_partition(tmp_path, batches=6)
    log = tmp_path / "t-0" / "00000000000000000000.log"
    data = bytearray(log.read_bytes())
    positions, pos = [], 0
    while pos < len(data):
        positions.append(pos)
        pos += 12 + int.from_bytes(data[pos + 8:pos + 12], "big")
    data[positions[1] + 70] ^= 0xFF  # batch 1: a record byte, its CRC fails
    data[positions[4] + 8:positions[4] + 12] = (10).to_bytes(4, "big")  # batch 4: a size below any batch's
    log.write_bytes(bytes(data))
    code, report = verify_json([tmp_path], capsys)
    messages = [p["message"] for p in errors(report)]
    assert any("CRC mismatch in batch 5..9" in m for m in messages), messages
    assert any("corrupt framing" in m for m in messages), messages
    # and it reads on at the next .index entry whose batch checks out (every batch is indexed here), as a lenient
    # read does: the batch after the bad one is walked too
    assert report["partitions"][0]["segments"][0]["batches"] == 5
    import kafkaseg

    read = kafkaseg.read_arrow(str(tmp_path), onCorruption="skip", columns=["offset"]).column("offset").to_pylist()
    lost = report["partitions"][0]["unreadableOffsets"]
    assert [(u["firstOffset"], u["lastOffset"]) for u in lost] == [(5, 9), (20, 24)]
    assert sorted(set(range(30)) - set(read)) == [*range(5, 10), *range(20, 25)]


def test_a_bad_last_batch_of_a_rolled_segment_is_not_also_a_gap_before_the_next(tmp_path, capsys):
    log = simple_partition(tmp_path, batches=12, segment_bytes=300)
    rolled = log.segments[0].log_path
    data = bytearray(rolled.read_bytes())
    data[-2] ^= 0xFF  # the last batch of the first segment fails its CRC
    rolled.write_bytes(bytes(data))
    code, report = verify_json([tmp_path], capsys)
    assert any("CRC mismatch" in p["message"] for p in errors(report))
    assert not [p for p in report["problems"] if "missing before this segment" in p["message"]
                or "non-consecutive" in p["message"]], report["problems"]


def test_a_segment_retention_deletes_while_verify_runs_is_a_note_not_an_error(tmp_path):
    from pathlib import Path

    from kafkaseg.cli.verify import VerifyReport, verify_partition
    from kafkaseg.storage.layout import discover
    from kafkaseg.testing import TopicSpec, write_data_dir

    write_data_dir(tmp_path / "data", [TopicSpec("t", records_per_partition=200, records_per_batch=10,
                                                 segment_bytes=2048)], seed=4)
    pdir = discover([str(tmp_path / "data")])[0]
    first = Path(pdir.segments[0].log_path)
    for path in (first, first.with_suffix(".index"), first.with_suffix(".timeindex")):
        path.rename(path.with_name(path.name + ".deleted"))  # after the listing, as retention does
    report = VerifyReport()
    verify_partition(pdir, report)
    about_it = [p for p in report.problems if p.file == str(first)]
    assert [p.severity for p in about_it] == ["info"] and "deleted while being verified" in about_it[0].message
    assert not [p for p in report.problems if p.severity == "error"]
    # a segment that is there and cannot be read is still an error
    os.chmod(pdir.segments[1].log_path, 0)
    try:
        if os.access(pdir.segments[1].log_path, os.R_OK):
            pytest.skip("running as a user who reads any file (root): permissions cannot make it unreadable")
        report = VerifyReport()
        verify_partition(pdir, report)
        assert any(p.severity == "error" and p.file == pdir.segments[1].log_path for p in report.problems)
    finally:
        os.chmod(pdir.segments[1].log_path, 0o644)


@pytest.mark.parametrize("directory_ids, warned", [(("dirA", "dirB"), True), (("dirA", "dirA"), False)])
def test_a_partition_in_two_log_dirs_of_one_broker_is_a_warning(tmp_path, directory_ids, warned):
    """Kafka refuses to start with a partition in two log dirs (LogManager.loadLog: "Duplicate log directories"),
    which verify passed in silence (found in review). Two backups of one log dir share its directory.id: no
    warning then."""
    from kafkaseg.cli.verify import WARNING, verify_paths
    from kafkaseg.testing import TopicSpec, write_data_dir
    from kafkaseg.testing.partition import write_meta_properties

    write_data_dir(tmp_path / "a", [TopicSpec("t", partitions=1, records_per_partition=20)], seed=4)
    shutil.copytree(tmp_path / "a", tmp_path / "b")
    for name, directory_id in zip("ab", directory_ids):
        write_meta_properties(tmp_path / name / "meta.properties", cluster_id="c1", node_id=3,
                              directory_id=directory_id)
    report = verify_paths([str(tmp_path / "a"), str(tmp_path / "b")])
    found = [p for p in report.problems if "another log dir of the same broker" in p.message]
    assert [(p.severity, p.file) for p in found] == ([(WARNING, str(tmp_path / "b" / "t-0"))] if warned else [])


def test_two_folders_of_one_partition_in_one_log_dir_are_a_warning(tmp_path):
    """orders-0 and orders-00 both parse as partition 0 (as in Kafka, which refuses to start with both); verify
    passed them in silence (found in review)."""
    from kafkaseg.cli.verify import WARNING, verify_paths
    from kafkaseg.testing import TopicSpec, write_data_dir

    write_data_dir(tmp_path / "d", [TopicSpec("orders", partitions=1, records_per_partition=20)], seed=4)
    shutil.copytree(tmp_path / "d" / "orders-0", tmp_path / "d" / "orders-00")
    found = [p for p in verify_paths([str(tmp_path / "d")]).problems if "Duplicate log directories" in p.message]
    assert [(p.severity, p.file) for p in found] == [(WARNING, str(tmp_path / "d" / "orders-00"))]


@pytest.mark.parametrize("where, name, content, status", [
    # what describe prints could be wrong: an error of the partition, exit status 2
    ("t-0", "partition.metadata", "version: 0\ntopic_id: notbase64!!\n", 2),  # the topic id (which incarnation)
    ("t-0", "leader-epoch-checkpoint", "garbage\n", 2),  # the leader epoch
    (".", "replication-offset-checkpoint", "0\n1\nt 0\n", 2),  # the high watermark, so the last stable offset
    (".", "log-start-offset-checkpoint", "0\n1\nt x 3\n", 2),  # the log start
    # informational: Kafka resets these, and describe shows nothing read from them
    (".", "recovery-point-offset-checkpoint", "0\n1\nt 0\n", 0),
    (".", "cleaner-offset-checkpoint", "garbage\n", 0),
    (".", "meta.properties", "node.id=1\n", 0),  # the broker's identity, which describe does not show
    ("t-0", "00000000000000000005.log.deleted", "", 0),  # a temporary file, which a broker deletes too
])
def test_describe_exits_2_when_a_discovery_note_means_what_it_prints_could_be_wrong(tmp_path, capsys, where, name,
                                                                                    content, status):
    simple_partition(tmp_path)
    (tmp_path / where / name).write_text(content)
    assert main(["describe", str(tmp_path), "--json"]) == status
    (described,) = json.loads(capsys.readouterr().out)["partitions"]
    said = described["errors"] if status else described["notes"]
    assert [text for text in said if name.split(".")[0] in text], described
    assert not (described["notes"] if status else described["errors"]), described
    assert main(["describe", str(tmp_path)]) == status
    err = capsys.readouterr().err
    assert ("t-0: error: " in err and "could not be read in full" in err) == bool(status), err


def test_describe_says_a_log_dirs_own_problem_once(tmp_path, capsys):
    """A garbled checkpoint of the log dir is every partition's error, and was printed once per partition (50 lines
    on a broker's dir: found by the incident audit); it is one line naming the partitions now."""
    from kafkaseg.testing import TopicSpec, write_data_dir

    write_data_dir(tmp_path / "d", [TopicSpec("t", partitions=7, records_per_partition=10)])
    (tmp_path / "d" / "replication-offset-checkpoint").write_text("garbage\n")
    assert main(["describe", str(tmp_path / "d")]) == 2
    err = capsys.readouterr().err.splitlines()
    (line,) = [line for line in err if "replication-offset-checkpoint" in line]
    assert line.startswith("t-0, t-1, t-2, t-3, t-4 and 2 more partitions: error: log dir: unreadable "), line


def _index_entries(path, size: int) -> list[tuple[int, ...]]:
    """The entries of an ``.index`` (size 8: relative offset, position) or ``.timeindex`` (12: timestamp, relative
    offset) file, as written."""
    data = path.read_bytes()
    return [struct.unpack_from(">ii" if size == 8 else ">qi", data, n) for n in range(0, len(data) - size + 1, size)]


def test_a_rolled_segment_cut_short_is_one_line_per_index_not_one_per_entry(tmp_path, capsys):
    """A partial copy cuts a rolled segment short: every ``.index``/``.timeindex`` entry past the cut was an error of
    its own (dozens per segment, burying the one line that says what happened). One line per index file says how
    many entries point past the log's end, with the first and last; JSON keeps the count."""
    from kafkaseg.storage.segment import SegmentReader
    from kafkaseg.testing import TopicSpec, write_data_dir

    manifest = write_data_dir(tmp_path, [TopicSpec("t", records_per_partition=2000, records_per_batch=10,
                                                   segment_bytes=64 * 1024)], seed=1)
    pm = manifest.partition("t", 0)
    assert len(pm.segments) > 1
    rolled = pm.directory / f"{pm.segments[0].base_offset:020d}.log"
    with open(rolled, "r+b") as f:
        f.truncate(rolled.stat().st_size // 2 + 7)
    with SegmentReader(str(rolled)) as reader:
        whole = list(reader.iter_headers())
    end, last = whole[-1].end, whole[-1].last_offset
    base = pm.segments[0].base_offset
    index, timeindex = rolled.with_suffix(".index"), rolled.with_suffix(".timeindex")
    past_index = [(base + rel, pos) for rel, pos in _index_entries(index, 8) if pos >= end]
    past_time = [(base + rel, ts) for ts, rel in _index_entries(timeindex, 12) if base + rel > last]
    assert len(past_index) > 2 and len(past_time) > 2
    code, report = verify_json([tmp_path], capsys)
    assert code == 1
    for path, past in ((index, past_index), (timeindex, past_time)):
        (line,) = [p for p in report["problems"] if p["file"] == str(path)]
        assert line["severity"] == "error" and line["count"] == len(past), line
        assert f"offsets {past[0][0]}..{past[-1][0]}" in line["message"], line
    (index_line,) = [p for p in report["problems"] if p["file"] == str(index)]
    assert f"positions {past_index[0][1]}..{past_index[-1][1]}" in index_line["message"], index_line
    # the offsets after the cut are lost with it: not also "missing before" the next segment, nor compaction gaps
    assert not [p for p in report["problems"] if "missing before this segment" in p["message"]
                or "non-consecutive" in p["message"]], report["problems"]
    (lost,) = report["partitions"][0]["unreadableOffsets"]
    assert (lost["firstOffset"], lost["lastOffset"]) == (last + 1, pm.segments[1].base_offset - 1)
    assert main(["verify", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    errors_counted = sum(p["count"] for p in errors(report))
    assert f"{errors_counted} errors" in out.splitlines()[-1]
    assert sum(1 for line in out.splitlines() if line.startswith("ERROR: ") and "index @ byte" in line) == 2


def test_a_zero_filled_index_tail_in_a_rolled_segment_is_a_warning(tmp_path, capsys):
    """Kafka trims a segment's indexes when it rolls (LogSegment.onBecomeInactiveSegment), when it recovers it and
    when it closes it, so zeros ending a rolled segment's ``.index``/``.timeindex`` are damage (entries zeroed) or a
    copy of a preallocated file, not a live broker's preallocation: a warning naming the byte where they start and
    how many entries they take. The active segment's preallocated indexes stay silent."""
    from kafkaseg.testing import TopicSpec, write_data_dir

    manifest = write_data_dir(tmp_path, [TopicSpec("t", records_per_partition=2000, records_per_batch=10,
                                                   segment_bytes=64 * 1024, preallocate_active_index=True)], seed=1)
    pm = manifest.partition("t", 0)
    first, second = (pm.directory / f"{s.base_offset:020d}" for s in pm.segments[:2])
    index = first.with_suffix(".index")
    appended_at = index.stat().st_size
    with open(index, "ab") as f:
        f.write(bytes(8 * 10))  # a preallocated file's zeros, copied
    timeindex = second.with_suffix(".timeindex")
    data = bytearray(timeindex.read_bytes())
    zeroed_at = len(data) - 3 * 12
    data[zeroed_at:] = bytes(3 * 12)  # its last three entries zeroed
    timeindex.write_bytes(bytes(data))
    code, report = verify_json([tmp_path], capsys)
    assert code == 0, errors(report)
    warned = [p for p in report["problems"] if p["severity"] == "warning"]
    assert [(p["file"], p["position"]) for p in warned] == [(str(index), appended_at), (str(timeindex), zeroed_at)]
    assert "10 entries" in warned[0]["message"] and "3 entries" in warned[1]["message"], warned
    assert all("rolled" in p["message"] for p in warned)


def test_an_unfinished_segment_swap_is_one_warning(tmp_path, capsys):
    """The log cleaner's last steps rename its ``.cleaned`` files ``.swap`` and then into place: a copy taken (or a
    crash) in between holds a ``.log.swap`` with its ``.index.swap`` and ``.timeindex.swap``, resolved as Kafka's
    LogLoader does. That was three warnings, one per file, beside an info note on the resolution: one line says
    it all."""
    from kafkaseg.testing import TopicSpec, write_data_dir

    manifest = write_data_dir(tmp_path, [TopicSpec("t", records_per_partition=2000, records_per_batch=10,
                                                   segment_bytes=64 * 1024)], seed=1)
    pm = manifest.partition("t", 0)
    stem = pm.directory / f"{pm.segments[1].base_offset:020d}"
    swapped = []
    for suffix in (".log", ".index", ".timeindex"):
        shutil.copy(stem.with_suffix(suffix), f"{stem}{suffix}.swap")
        swapped.append(f"{stem.name}{suffix}.swap")
    code, report = verify_json([tmp_path], capsys)
    assert code == 0, errors(report)
    about = [p for p in report["problems"] if ".swap" in p["file"] + p["message"]]
    assert len(about) == 1 and about[0]["severity"] == "warning", about
    assert about[0]["file"] == f"{stem}.log.swap" and all(name in about[0]["message"] for name in swapped), about
    assert f"[{pm.segments[1].base_offset}, {pm.segments[2].base_offset})" in about[0]["message"], about
    assert main(["verify", "--verbose", str(tmp_path)]) == 0
    assert sum(".swap" in line for line in capsys.readouterr().out.splitlines()) == 1


def test_temporary_files_are_one_line_each_and_swap_files_not_swapped_in_one_warning(tmp_path, capsys):
    """Retention's and the cleaner's ``.deleted`` files and the cleaner's ``.cleaned`` files are said once each (they
    were a warning and an info line each). The ``.swap`` files of an incomplete split (at or past the smallest
    ``.cleaned`` base), which Kafka's LogLoader deletes at startup instead of swapping them in, and the side files
    of a swap whose ``.log`` is already renamed into place are said in one warning, as an unfinished swap is."""
    from kafkaseg.testing import TopicSpec, write_data_dir

    manifest = write_data_dir(tmp_path, [TopicSpec("t", records_per_partition=2000, records_per_batch=10,
                                                   segment_bytes=64 * 1024)], seed=1)
    pm = manifest.partition("t", 0)
    first, second, third = (pm.directory / f"{s.base_offset:020d}" for s in pm.segments[1:4])
    temporary = []
    for suffix in (".log", ".index", ".timeindex"):
        shutil.copy(first.with_suffix(suffix), f"{first}{suffix}.deleted")
        temporary.append(f"{first}{suffix}.deleted")
    ignored = []
    for suffix in (".log", ".index"):
        shutil.copy(second.with_suffix(suffix), f"{second}{suffix}.cleaned")
        temporary.append(f"{second}{suffix}.cleaned")
        shutil.copy(second.with_suffix(suffix), f"{second}{suffix}.swap")
        ignored.append(f"{second.name}{suffix}.swap")
    shutil.copy(third.with_suffix(".timeindex"), f"{third}.timeindex.swap")  # its .log.swap renamed already
    ignored.append(f"{third.name}.timeindex.swap")
    code, report = verify_json([tmp_path], capsys)
    assert code == 0, errors(report)
    lines = [(p["severity"], p["file"], p["message"]) for p in report["problems"]]
    for path in temporary:
        about = [line for line in lines if line[1] == path or os.path.basename(path) in line[2]]
        assert [severity for severity, _, _ in about] == ["warning"], about
    about = [line for line in lines if ".swap" in line[1] + line[2]]
    assert len(about) == 1 and about[0][0] == "warning", about
    assert all(name in about[0][2] for name in ignored) and "incomplete split" in about[0][2], about
    assert main(["verify", "--verbose", str(tmp_path)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert sum(".swap" in line for line in out) == 1
    assert all(sum(os.path.basename(path) in line for line in out) == 1 for path in temporary), out


@pytest.mark.parametrize("magic", [0, 1])
def test_a_bad_legacy_wrapper_is_unreadable_up_to_the_first_inner_offset_of_the_next(tmp_path, capsys, magic):
    """A compressed legacy wrapper's offset field is its LAST inner offset. After a wrapper failing its CRC, the
    next (sound) wrapper's records start at its first inner offset: the unreadable range ends just before it (the
    records a lenient read returns are not listed as lost), and those records do not 'go back' below the
    wrapper's own offset."""
    import kafkaseg
    from kafkaseg.testing import build_legacy_wrapper

    wrappers = [build_legacy_wrapper(records(first, first + 2), magic, "gzip") for first in range(0, 15, 3)]
    write_partition(tmp_path, wrappers)
    log = tmp_path / "t-0" / f"{0:020d}.log"
    data = bytearray(log.read_bytes())
    second = len(wrappers[0].data)
    data[second + len(wrappers[1].data) - 3] ^= 0xFF  # wrapper 3..5: a byte of its compressed records
    log.write_bytes(bytes(data))
    read = kafkaseg.read_arrow(str(tmp_path), onCorruption="skip", columns=["offset"]).column("offset").to_pylist()
    assert read == [0, 1, 2, *range(6, 15)]
    code, report = verify_json([tmp_path], capsys)
    assert code == 1
    messages = [p["message"] for p in errors(report)]
    assert any("CRC mismatch in batch 5..5" in m for m in messages), messages
    assert not [m for m in messages if "does not increase" in m], messages
    lost = report["partitions"][0]["unreadableOffsets"]
    assert [(u["firstOffset"], u["lastOffset"]) for u in lost] == [(3, 5)]


def _live_partition(tmp_path):
    """A partition of 4 segments with the high watermark at its log end, listed (as verify lists it) before a
    live broker changes it."""
    from kafkaseg.storage.layout import discover
    from kafkaseg.testing import TopicSpec, write_data_dir

    write_data_dir(tmp_path / "data", [TopicSpec("t", records_per_partition=200, records_per_batch=10,
                                                 segment_bytes=2048)], seed=4)
    pdir = discover([str(tmp_path / "data")])[0]
    assert len(pdir.segments) >= 4 and pdir.high_watermark == 200
    return pdir


@pytest.mark.parametrize("when", ["after-the-first-was-walked", "before-the-walk"])
def test_the_cleaner_merging_the_listed_segments_while_verify_runs_is_no_error(tmp_path, monkeypatch, when):
    """Found by a live-disk run: the log cleaner merged segments verify had listed into the first one (after a roll
    verify did not list), renaming the originals .deleted and its copy in. Verify noted the merged ones deleted,
    then (its walk of the first one done before the swap) reported the offsets past the first segment as
    acknowledged but lost ("the end of the log is lost"), or (the copy swapped in before the walk) the first
    segment's last offset reaching the next one's base: errors both, where the offsets of segments deleted while
    being verified are only unknown to it, and the copy is the cleaner's."""
    from pathlib import Path

    from kafkaseg.cli import verify
    from kafkaseg.testing.partition import segment_file

    pdir = _live_partition(tmp_path)
    first, merged = Path(pdir.segments[0].log_path), [Path(s.log_path) for s in pdir.segments[1:]]
    copy = b"".join(Path(s.log_path).read_bytes() for s in pdir.segments)  # keeps every record: all keys differ

    def clean() -> None:
        for log in merged + [first]:  # LocalLog.replaceSegments: the originals renamed .deleted, the copy renamed in
            for suffix in (".log", ".index", ".timeindex"):
                path = log.with_suffix(suffix)
                path.rename(path.with_name(path.name + ".deleted"))
        swap = first.with_name(first.name + ".swap")
        swap.write_bytes(copy)
        swap.rename(first)
        for suffix in (".index", ".timeindex"):
            first.with_suffix(suffix).write_bytes(b"")
        segment_file(first.parent, 200, ".log").write_bytes(b"")  # the roll before the cleaning, not listed

    if when == "before-the-walk":
        clean()
    else:
        real = verify._verify_segment

        def walk_then_clean(pdir_, i, *args, **kwargs):
            result = real(pdir_, i, *args, **kwargs)
            if i == 0:
                clean()
            return result
        monkeypatch.setattr(verify, "_verify_segment", walk_then_clean)
    report = verify.VerifyReport()
    verify.verify_partition(pdir, report)
    assert not [p for p in report.problems if p.severity == "error"], [p.message for p in report.problems]
    assert not report.partitions[0].unreadable
    assert [p.severity for p in report.problems if p.file == str(merged[-1])] == ["info"]


def test_a_producer_snapshot_retention_deletes_while_verify_runs_is_a_note_not_an_error(tmp_path):
    """Found by a live-disk run: retention renames the producer snapshots below the new log start to .deleted
    (ProducerStateManager) as it does the segments; verify reported the snapshot it had listed as an unreadable
    file (an error) where it reports such a segment as an info line."""
    from pathlib import Path

    from kafkaseg.cli.verify import VerifyReport, verify_partition

    pdir = _live_partition(tmp_path)
    snapshots = sorted(pdir.snapshot_paths)
    assert len(snapshots) >= 2
    gone = Path(snapshots[0])
    gone.rename(gone.with_name(gone.name + ".deleted"))
    report = VerifyReport()
    verify_partition(pdir, report)
    assert not [p for p in report.problems if p.severity == "error"], [p.message for p in report.problems]
    assert [p.severity for p in report.problems if p.file == str(gone)] == ["info"]
    # a snapshot that is there and cannot be read is still an error
    Path(snapshots[1]).write_bytes(b"\x00\x01garbage")
    report = VerifyReport()
    verify_partition(pdir, report)
    assert [p.severity for p in report.problems if p.file == snapshots[1]] == ["error"]


# (found by a damage campaign: a bit flipped in the active segment's offset index made verify and describe crash
# with a ValueError, "negative position ... or length 65536", from the preallocated-append check)
@pytest.mark.parametrize("position", [-2147482026, -1, 1 << 30])
def test_an_active_segments_index_entry_at_an_impossible_position_is_no_crash(tmp_path, capsys, position):
    from kafkaseg.testing import TopicSpec, write_data_dir

    write_data_dir(tmp_path, [TopicSpec("t", records_per_partition=200, records_per_batch=5, index_interval_bytes=200)])
    index = tmp_path / "t-0" / f"{0:020d}.index"
    data = bytearray(index.read_bytes())
    assert len(data) >= 16
    struct.pack_into(">i", data, len(data) - 4, position)  # (the last entry's position)
    index.write_bytes(bytes(data))
    for argv in (["verify", str(tmp_path)], ["describe", str(tmp_path)], ["describe", str(tmp_path), "--full"]):
        assert main(argv) in (0, 1, 2), argv
    capsys.readouterr()


def _rolled_segment_with_a_txnindex(tmp_path):
    """A transactional partition: (its PartitionDir, a rolled segment with a .txnindex, that segment's .log Path)."""
    from pathlib import Path

    from kafkaseg.storage.layout import discover
    from kafkaseg.testing import TopicSpec, write_data_dir

    write_data_dir(tmp_path / "data", [TopicSpec("t", records_per_partition=300, records_per_batch=5,
                                                 segment_bytes=2048, transactional=True, abort_ratio=0.5)], seed=4)
    pdir = discover([str(tmp_path / "data")])[0]
    seg = next(s for s in pdir.segments[:-1] if s.txnindex_path)
    return pdir, seg, Path(seg.log_path)


def test_a_segment_retention_deletes_between_its_walk_and_its_txnindex_check_is_a_note_not_an_error(tmp_path,
                                                                                                   monkeypatch):
    """Retention renames a segment's files ``.deleted`` (``.log`` first, ``.txnindex`` last) after verify walked its
    ``.log`` and before it loads its ``.txnindex``: the segment was deleted while being verified (a note), not an
    ERROR "cannot open ... .txnindex" (found by tests/live_broker.py --retention); a ``.txnindex`` that is gone
    while its ``.log`` is there is still an error."""
    import kafkaseg.cli.verify as verify

    pdir, seg, first = _rolled_segment_with_a_txnindex(tmp_path)
    real = verify.TransactionIndex.load

    def retention_meanwhile(path, *args, **kwargs):
        if path == seg.txnindex_path and first.exists():
            for suffix in (".log", ".index", ".timeindex", ".txnindex"):
                p = first.with_suffix(suffix)
                p.rename(p.with_name(p.name + ".deleted"))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(verify.TransactionIndex, "load", retention_meanwhile)
    report = verify.VerifyReport()
    verify.verify_partition(pdir, report)
    about_it = [p for p in report.problems if p.file in (seg.log_path, seg.txnindex_path)]
    assert [p.severity for p in about_it] == ["info"] and "deleted while being verified" in about_it[0].message
    assert not [p for p in report.problems if p.severity == "error"], report.problems

    for suffix in (".log", ".index", ".timeindex"):  # back, but for the .txnindex: damage
        p = first.with_suffix(suffix)
        p.with_name(p.name + ".deleted").rename(p)
    monkeypatch.undo()
    report = verify.VerifyReport()
    verify.verify_partition(pdir, report)
    assert any(p.severity == "error" and p.file == seg.txnindex_path for p in report.problems)


def test_a_segment_the_cleaner_replaces_between_its_walk_and_its_txnindex_check_is_a_note_not_an_error(
        tmp_path, monkeypatch):
    """The cleaner's swap after verify walked a segment's ``.log`` and before it loads its ``.txnindex``: the old
    files renamed ``.deleted``, a cleaned ``.log`` (another file) in place, and no ``.txnindex`` (the cleaned segment
    kept no aborted transaction's data). The segment was replaced while being verified: a note, not an ERROR
    "cannot open ... .txnindex" (found by tests/test_live_broker.py)."""
    import kafkaseg.cli.verify as verify

    pdir, seg, first = _rolled_segment_with_a_txnindex(tmp_path)
    real = verify.TransactionIndex.load

    def cleaner_meanwhile(path, *args, **kwargs):
        if path == seg.txnindex_path and os.path.exists(path):
            for suffix in (".log", ".index", ".timeindex", ".txnindex"):
                p = first.with_suffix(suffix)
                p.rename(p.with_name(p.name + ".deleted"))
            shutil.copy(str(first) + ".deleted", first)  # (a cleaned copy: another inode)
        return real(path, *args, **kwargs)

    monkeypatch.setattr(verify.TransactionIndex, "load", cleaner_meanwhile)
    report = verify.VerifyReport()
    verify.verify_partition(pdir, report)
    about_it = [p for p in report.problems if p.file == seg.txnindex_path]
    assert [p.severity for p in about_it] == ["info"] and "replaced" in about_it[0].message, report.problems
    assert not [p for p in report.problems if p.severity == "error"], report.problems


def test_an_abort_marker_the_cleaner_gave_a_delete_horizon_needs_no_txnindex_entry(tmp_path, capsys):
    """The cleaner drops an aborted transaction's data, then, at the next cleaning, finds no batch of it left:
    its ABORT marker stays until ``delete.retention.ms`` passes, rewritten with a delete horizon (attribute bit 6,
    ``containsMarkerForEmptyTxn``), and the cleaned ``.txnindex`` gets no entry for it
    (``CleanedTransactionMetadata.onControlBatchRead``). The producer snapshot at the segment's base still lists
    the transaction as open, but no record of it is left for read_committed to return: no error (found by
    tests/live_broker.py --compact, seed 14). Without the horizon, the missing entry is still said."""
    from kafkaseg.testing import ControlType, build_control_batch

    def write(with_horizon):
        root = tmp_path / ("h" if with_horizon else "n")
        log = PartitionWriter(root / "t-0", index_interval_bytes=1 << 20)
        log.append(build_batch_v2(records(0, 2), producer_id=7, producer_epoch=0, base_sequence=0,
                                  is_transactional=True))
        log.append(build_batch_v2(records(3, 5)))
        log.roll()  # the snapshot at 6: producer 7's transaction open since 0
        if with_horizon:
            marker = build_batch_v2([Record(6, 1000 + 6, struct.pack(">hh", 0, ControlType.ABORT),
                                            struct.pack(">hi", 0, 0))],
                                    is_control=True, is_transactional=True, producer_id=7, producer_epoch=0,
                                    delete_horizon_ms=1_800_000_000_000)
        else:
            marker = build_control_batch(6, 1000 + 6, ControlType.ABORT, producer_id=7, producer_epoch=0)
        log.append(marker, control_type=ControlType.ABORT)
        log.append(build_batch_v2(records(7, 9)))
        log.close()
        folder = root / "t-0"
        first = sorted(folder.glob("*.log"))[0]
        first.write_bytes(first.read_bytes()[len(build_batch_v2(records(0, 2), producer_id=7, producer_epoch=0,
                                                                  base_sequence=0, is_transactional=True).data):])
        for side in (".index", ".timeindex"):
            first.with_suffix(side).write_bytes(b"")
        (folder / "00000000000000000006.txnindex").write_bytes(b"")  # the cleaned one: no entry
        write_offset_checkpoint(root / "replication-offset-checkpoint", {("t", 0): 10})
        write_offset_checkpoint(root / "recovery-point-offset-checkpoint", {("t", 0): 10})
        return root

    code, report = verify_json([write(True)], capsys)
    assert not [p for p in report["problems"] if "ABORT marker" in p["message"]], report["problems"]
    code, report = verify_json([write(False)], capsys)
    assert any("ABORT marker" in p["message"] for p in report["problems"]), report["problems"]
