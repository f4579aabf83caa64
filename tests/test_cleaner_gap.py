"""Offsets missing after a rolled segment's last batch whose first is below the cleaner checkpoint, where the
segment's own ``.index``/``.timeindex`` name offsets past that batch: the cleaner rebuilds a cleaned segment's
indexes from the batches it keeps (LogCleaner.cleanSegments writes a new segment, cleanInto appends only the
retained batches to it), so such entries are not compaction's, and the gap is lost data there as above the
checkpoint (tests/test_carried_edges.py's rolled-cut tests, the same partitions with a cleaner checkpoint)."""

from __future__ import annotations

import shutil

import pytest

import kafkaseg
from kafkaseg.cli.main import main
from kafkaseg.cli.verify import verify_paths
from kafkaseg.testing.partition import write_offset_checkpoint
from tests.test_carried_edges import _rolled_cut_copy, _rolled_empty_copy, _rolled_torn_first_batch

CLEANER = 250  # the next base after segment 125: every gap of segments 0 and 125 begins below it


def _cleaned(root):
    write_offset_checkpoint(root / "cleaner-offset-checkpoint", {("t", 0): CLEANER})


def _damaged(root, case):
    """(the damaged .log, the byte its batches end at, the first offset lost, the offsets a read keeps)."""
    if case == "cut short":
        log, at = _rolled_cut_copy(root, 300)
        first, lost = 225, range(225, 250)
    else:
        base = 0 if case in ("empty first", "torn first") else 125
        log = (_rolled_torn_first_batch(root, base) if case.startswith("torn")
               else _rolled_empty_copy(root, base))
        at, first, lost = 0, base, range(base, base + 125)
    _cleaned(root)
    return log, at, first, [o for o in range(300) if o not in lost]


CASES = ["cut short", "empty first", "empty middle", "torn first", "torn middle"]


@pytest.mark.parametrize("case", CASES)
def test_index_proven_loss_below_the_cleaner_checkpoint_is_a_lost_tail(tmp_path, case):
    """A rolled segment cut short (at a batch boundary, to 0 bytes, or inside its first batch) whose own indexes
    name offsets past its batches, the recovery point above them, the cleaner checkpoint above the gap: a strict
    read raises LostTailError at the file and byte, failOnDataLoss=false and onCorruption=skip read on with it in
    lost_tails, as without the checkpoint. (Before: the cut and emptied ones silently lacked the offsets; the torn
    ones raised TruncatedDataError, even with failOnDataLoss=false.)"""
    log, at, first, kept = _damaged(tmp_path, case)
    with pytest.raises(kafkaseg.LostTailError) as info:
        kafkaseg.read_arrow(str(tmp_path))
    assert (info.value.path, info.value.position) == (str(log), at)
    assert f"offsets {first}.." in str(info.value) and "failOnDataLoss=false" in str(info.value)
    for options in ({"failOnDataLoss": "false"}, {"onCorruption": "skip"}):
        scan = kafkaseg.open_scan(str(tmp_path), **options)
        assert scan.to_table().column("offset").to_pylist() == kept
        (lost,) = scan.metrics.lost_tails
        assert (lost[0], lost[1], lost.first_offset) == (str(log), at, first)
        assert not scan.metrics.missing_offsets and not scan.metrics.decode.corrupt_batches


def test_a_start_inside_index_proven_loss_below_the_cleaner_checkpoint_is_data_loss(tmp_path):
    """A start inside those offsets: the read across them's loss (a DataLossError naming file and byte; with
    failOnDataLoss=false a plan data_loss note, the read from the next base). (Before: read from 250, silent.)"""
    log, at, _, _ = _damaged(tmp_path, "cut short")
    start = '{"t":{"0":230}}'
    with pytest.raises(kafkaseg.DataLossError) as info:
        kafkaseg.read_arrow(str(tmp_path), startingOffsets=start)
    assert f"{log} @ byte {at}" in str(info.value) and "offsets 225..249" in str(info.value)
    scan = kafkaseg.open_scan(str(tmp_path), startingOffsets=start, failOnDataLoss="false")
    assert scan.to_table().column("offset").to_pylist() == list(range(250, 300))
    assert [n for n in scan.plan.report.data_loss if f"{log} @ byte {at}" in n]


@pytest.mark.parametrize("case", ["cut short", "empty middle"])
def test_describe_locate_and_verify_call_index_proven_loss_below_the_cleaner_checkpoint_loss(tmp_path, capsys,
                                                                                              case):
    """describe (an error), locate (the read's error, exit 2) and verify (errors, and the gap not called
    compaction's) say what the read raises. (Before: describe and locate silent, verify called the gap removed by
    compaction.)"""
    import json

    log, at, first, _ = _damaged(tmp_path, case)
    assert main(["describe", "--json", str(tmp_path)]) == 2
    (part,) = json.loads(capsys.readouterr().out)["partitions"]
    said = [e for e in part["errors"] if "lost with a rolled segment cut short" in e]
    assert len(said) == 1 and f"offsets {first}.." in said[0] and f"{log} @ byte {at}" in said[0], part
    code = main(["locate", "--data-dir", str(tmp_path), "--topic", "t", "--partition", "0", "--offset",
                 str(first + 1)])
    out, err = capsys.readouterr()
    assert code == 2 and str(log) in err, (out, err)
    report = verify_paths([str(tmp_path)])
    assert report.errors
    gap = [p for p in report.problems if "missing before this segment" in p.message]
    assert len(gap) == 1 and gap[0].severity == "warning" and "not removed by compaction" in gap[0].message, gap
    assert f"{log} @ byte {at}" in gap[0].message


def test_a_compacted_gap_with_sound_indexes_below_the_checkpoint_stays_silent_everywhere(tmp_path, capsys):
    """Pinned, the cleaner's empty output segment (index files with no entry past its end) below the checkpoint:
    no error, no lost or missing offsets, describe and verify say no loss."""
    import json

    _rolled_empty_copy(tmp_path, 125, indexes=False)
    _cleaned(tmp_path)
    scan = kafkaseg.open_scan(str(tmp_path))
    assert scan.to_table().column("offset").to_pylist() == [*range(125), *range(250, 300)]
    m = scan.metrics
    assert not m.lost_tails and not m.unreadable_tails and not m.missing_offsets and not scan.plan.report.data_loss
    assert kafkaseg.read_arrow(str(tmp_path), startingOffsets='{"t":{"0":130}}').num_rows == 50
    assert main(["describe", "--json", str(tmp_path)]) == 0
    (part,) = json.loads(capsys.readouterr().out)["partitions"]
    assert not part["errors"]
    assert not verify_paths([str(tmp_path)]).errors


STATUS3 = "segments/smartassets__backend-server/51801d05/kafka/data"


def _status3(corpus_dir, root):
    """A copy of a real broker's cleaned docker-connect-status-3 (segments 0 and 157; segment 0 cleaned down to
    offsets 154..156, its .timeindex's one entry, the cleaner's, at 156; cleaner checkpoint 157, recovery point
    and high watermark 235) with its checkpoints."""
    data = corpus_dir / STATUS3
    root.mkdir()
    shutil.copytree(data / "docker-connect-status-3", root / "docker-connect-status-3")
    for name in ("cleaner-offset-checkpoint", "recovery-point-offset-checkpoint", "replication-offset-checkpoint",
                 "log-start-offset-checkpoint"):
        shutil.copy(data / name, root / name)
    for path in root.rglob("*"):
        path.chmod(0o755 if path.is_dir() else 0o644)
    return root / "docker-connect-status-3"


def test_a_real_cleaned_segment_is_silent_and_its_emptied_copy_is_loss(corpus_dir, tmp_path):
    """Real broker bytes: the cleaned segment 0 (its gap 0..153 before its first batch, compaction's) reads
    silently; with its .log emptied, its own .timeindex entry at 156 proves offsets up to 156 were in it: the
    lost tail, not compaction. (Before: silently lacked 154..156.)"""
    folder = _status3(corpus_dir, tmp_path / "whole")
    scan = kafkaseg.open_scan(str(tmp_path / "whole"))
    whole = scan.to_table().column("offset").to_pylist()
    assert whole[:3] == [154, 155, 156]
    assert not scan.metrics.lost_tails and not scan.metrics.missing_offsets and not scan.metrics.unreadable_tails
    damaged = _status3(corpus_dir, tmp_path / "emptied")
    log = damaged / f"{0:020d}.log"
    log.write_bytes(b"")
    with pytest.raises(kafkaseg.LostTailError) as info:
        kafkaseg.read_arrow(str(tmp_path / "emptied"))
    assert (info.value.path, info.value.position) == (str(log), 0)
    lenient = kafkaseg.open_scan(str(tmp_path / "emptied"), failOnDataLoss="false")
    assert lenient.to_table().column("offset").to_pylist() == whole[3:]
    (lost,) = lenient.metrics.lost_tails
    assert lost[0] == str(log) and lost.end_offset == 157
    assert folder.exists()
