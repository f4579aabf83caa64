"""Three file states the notes carried for many stops: a compacted follower whose high watermark went back into a
compaction gap, a live broker's copy that lost its active segment, and copies of a live data dir taken file by
file (rsync)."""

from __future__ import annotations

import pytest

import kafkaseg
from kafkaseg.cli.main import main
from kafkaseg.cli.verify import verify_paths
from kafkaseg.errors import DataLossError, LostTailError, SkippedOffsetsError
from kafkaseg.testing import PartitionWriter, Record, build_batch_v2
from kafkaseg.testing.partition import write_offset_checkpoint

# -- 1. a compacted follower whose high watermark went back into a gap ---------------------------------------------


def _gap_follower(root, high_watermark: int, stopped: bool):
    """A follower's copy of a compacted topic: its active segment holds [0, 50) and then [95, 100), as it fetched
    them from a leader whose cleaner had removed [50, 95); its high watermark went back to ``high_watermark``
    (inside the gap) with a leader change whose new leader lagged. ``stopped``: as a clean shutdown leaves it
    (recovery point 100, a producer snapshot named 100); else as a running broker's (the recovery point at the
    segment's base, no snapshot past it)."""
    folder = root / "t-0"
    writer = PartitionWriter(folder)
    for base in [*range(0, 50, 5), 95]:
        writer.append(build_batch_v2([Record(base + i, 1_700_000_000_000 + base + i, b"k%d" % (base + i), b"v")
                                      for i in range(5)]))
    log = writer.close()
    assert log.log_end_offset == 100
    if not stopped:
        for snapshot in folder.glob("*.snapshot"):
            snapshot.unlink()
    write_offset_checkpoint(root / "replication-offset-checkpoint", {("t", 0): high_watermark})
    write_offset_checkpoint(root / "recovery-point-offset-checkpoint", {("t", 0): 100 if stopped else 0})
    return root


@pytest.mark.parametrize("high_watermark", [51, 80, 94])
def test_a_stopped_followers_high_watermark_back_in_a_gap_is_no_corruption(tmp_path, capsys, high_watermark):
    """The recovery point and the producer snapshot say the log reached 100, so the last batch's base offset 95
    is the broker's, not a corrupt one: the gap before it is compaction's. A read to latest returns [0, 50) and
    ends at the high watermark; ``offsets -1`` answers it; verify reports no error. (Before, every read, ``offsets``
    (-1 and -2), ``describe`` and ``verify`` called it a corrupt base offset, and a lenient read said offsets
    50..hw-1 were acknowledged but missing.)"""
    root = _gap_follower(tmp_path, high_watermark, stopped=True)
    scan = kafkaseg.open_scan(str(root))
    assert scan.to_table().column("offset").to_pylist() == list(range(50))
    assert not any("acknowledged" in note for p in scan.plan.report.partitions for note in p.notes)
    assert main(["offsets", "--data-dir", str(root), "--time", "-1"]) == 0
    assert capsys.readouterr().out.split() == [f"t:0:{high_watermark}"]
    assert not verify_paths([str(root)]).errors
    upper = kafkaseg.read_arrow(str(root), upperBound="logEndOffset").column("offset").to_pylist()
    assert upper == [*range(50), *range(95, 100)]


def test_a_running_followers_high_watermark_back_in_a_gap_is_still_taken_for_a_corrupt_base(tmp_path):
    """Pinned: with no file saying the log reached past the gap (a running broker's recovery point sits at the
    active segment's base, and it writes producer snapshots at rolls), the state is byte for byte what a base
    offset raised past the high watermark leaves (see offsets_hidden_by_last_batch), so a strict read raises
    and the error names the other cause; docs/bad-input.md says what to do."""
    root = _gap_follower(tmp_path, 80, stopped=False)
    with pytest.raises(SkippedOffsetsError, match="leader change moved this replica's high watermark back"):
        kafkaseg.read_arrow(str(root))


# -- 2. a lost active segment of a live broker's copy --------------------------------------------------------------


def _lost_active_segment(root, *, high_watermark: int | None, leftover: str = "indexes"):
    """tests/lost_tail_data.py's partition (segments 0, 125, 250; offsets 0..299) as a running broker has it (the
    recovery point at the active segment's base, producer snapshots from rolls), whose active segment's .log is
    gone: ``leftover`` "indexes" (its .index and .timeindex stay: deleted, or a copy that missed it), or
    "deleted" (a follower's truncation that crashed between renaming the .log to .deleted and its indexes)."""
    from tests.lost_tail_data import set_high_watermark, set_recovery_point, write_whole

    write_whole(root)
    folder = root / "t-0"
    if high_watermark is not None:
        set_high_watermark(root, high_watermark)
    set_recovery_point(root, 250)
    (folder / f"{300:020d}.snapshot").unlink()
    log = folder / f"{250:020d}.log"
    if leftover == "deleted":
        log.rename(log.with_name(log.name + ".deleted"))
    else:
        log.unlink()
    return folder


@pytest.mark.parametrize("high_watermark", [300, None])
def test_a_lost_active_segment_is_named_where_the_log_now_ends(tmp_path, capsys, high_watermark):
    """The active segment's index files outlive its .log: the log now ends at 250, the lost segment's base, and
    nothing but those files says a segment from 250 was there (the recovery point sits at 250 on a running broker;
    with no high watermark, nothing else at all). Reads, describe and verify name the missing .log and what to do,
    where they said only an 'orphaned index (a broker deletes it)' (verify) or nothing (reads and describe with no
    high watermark)."""
    folder = _lost_active_segment(tmp_path, high_watermark=high_watermark)
    missing = f"{folder / f'{250:020d}.log'} is missing"
    scan = kafkaseg.open_scan(str(tmp_path))
    assert scan.to_table().num_rows == 250
    assert [n for p in scan.plan.report.partitions for n in p.notes if missing in n]
    assert main(["describe", str(tmp_path)]) == 0
    assert missing in capsys.readouterr().err
    report = verify_paths([str(tmp_path)])
    lines = [p for p in report.problems if missing in p.message]
    assert [p.severity for p in lines] == ["warning"] and "filesystem snapshot" in lines[0].message
    assert not [p for p in report.problems if "a broker deletes it" in p.message]


def _last_entries(folder, base: int) -> tuple[int, int]:
    """The offsets of the last entries of the segment at ``base``'s ``.index`` (8 bytes each: relative offset,
    position) and ``.timeindex`` (12 bytes each: timestamp, relative offset), read from the bytes here (a zero
    entry after the first ends the entries: a preallocated file's tail)."""
    import struct

    last = []
    for suffix, size, fmt, at in ((".index", 8, ">ii", 0), (".timeindex", 12, ">qi", 1)):
        data = (folder / f"{base:020d}{suffix}").read_bytes()
        entries = [struct.unpack_from(fmt, data, n) for n in range(0, len(data) - size + 1, size)]
        entries = [e for n, e in enumerate(entries) if n == 0 or any(e)]
        last.append(base + entries[-1][at])
    return last[0], last[1]


def test_a_lost_active_segment_with_no_high_watermark_warns_of_the_offsets_its_indexes_prove(tmp_path, capsys):
    """With no high watermark, the lost segment's .index and .timeindex are all that says it held records: their
    last entries prove offsets [250, last] were written. That is a warning as index entries past a readable end
    with no recovery point above it are (docs/bad-input.md "No high watermark"): the reads return the log to 250
    also under failOnDataLoss=true and list the offsets in unreadable_tails; the plan report, describe and verify say them.
    (Before, only that a segment from 250 was lost, no offsets, and the reads said nothing.)"""
    folder = _lost_active_segment(tmp_path, high_watermark=None)
    last_index, last_time = _last_entries(folder, 250)
    last = max(last_index, last_time)
    assert 250 < last < 300
    offsets = f"offsets 250..{last}"
    missing = str(folder / f"{250:020d}.log")
    for options in ({}, {"onCorruption": "skip"}, {"failOnDataLoss": "false"}):
        scan = kafkaseg.open_scan(str(tmp_path), **options)
        assert scan.to_table().num_rows == 250
        (tail,) = scan.metrics.unreadable_tails
        assert (tail.path, tail.first_offset, tail.end_offset) == (missing, 250, last + 1)
        assert offsets in tail.what and f"offset {last_index}" in tail.what and f"offset {last_time}" in tail.what
        assert not scan.metrics.lost_tails
        assert [n for p in scan.plan.report.partitions for n in p.notes if missing in n and offsets in n]
    assert main(["describe", str(tmp_path)]) == 0
    assert offsets in capsys.readouterr().err
    lines = [p for p in verify_paths([str(tmp_path)]).problems if missing in p.file or missing in p.message]
    assert [p.severity for p in lines] == ["warning"] and offsets in lines[0].message
    # a read that stops short of the log end says nothing of offsets past it
    scan = kafkaseg.open_scan(str(tmp_path), endingOffsets='{"t":{"0":100}}')
    assert scan.to_table().num_rows == 100 and not scan.metrics.unreadable_tails


def test_a_lost_active_segment_below_the_recovery_point_is_the_lost_tail_it_was(tmp_path):
    """The recovery point above the lost segment's base (a stopped broker's copy) proves offsets up to it flushed:
    the recovery point's rule decides as before (LostTailError, or lost_tails with failOnDataLoss=false), and the
    index entries' warning is not said on top of it."""
    from tests.lost_tail_data import set_recovery_point

    _lost_active_segment(tmp_path, high_watermark=None)
    set_recovery_point(tmp_path, 300)
    with pytest.raises(LostTailError):
        kafkaseg.read_arrow(str(tmp_path))
    scan = kafkaseg.open_scan(str(tmp_path), failOnDataLoss="false")
    assert scan.to_table().num_rows == 250
    assert [(t.first_offset, t.end_offset) for t in scan.metrics.lost_tails] == [(250, 300)]
    assert not scan.metrics.unreadable_tails


def test_a_truncation_that_crashed_midway_is_no_lost_segment(tmp_path):
    """A follower's truncation renames the segments above its new end to .deleted, the .log first: a crash between
    leaves the .log.deleted beside the index files. That is a deletion under way, not a lost segment."""
    for high_watermark in (250, None):
        _lost_active_segment(tmp_path / str(high_watermark), high_watermark=high_watermark, leftover="deleted")
        scan = kafkaseg.open_scan(str(tmp_path / str(high_watermark)))
        assert scan.to_table().num_rows == 250
        assert not [n for p in scan.plan.report.partitions for n in p.notes if "is missing" in n]
        assert not scan.metrics.unreadable_tails


# -- 3. copies of a live data dir taken file by file (rsync) ------------------------------------------------------


def test_a_copy_that_missed_a_roll_says_what_to_do(tmp_path, capsys):
    """rsync lists a folder before it copies it: a broker that rolls at 310 meanwhile (flushing the old segment and
    checkpointing recovery point 310) leaves a copy whose new segment is not there while the checkpoints, copied
    later, say 310. Nothing in the files tells that from lost flushed data (the new segment deleted), so it stays a
    DataLossError, in every tool's words; they now say what to do if the files are such a copy. (Before, they named
    "a copy taken while the broker was writing" among the causes but not the way out.)"""
    from tests.lost_tail_data import set_high_watermark, set_recovery_point, write_whole

    write_whole(tmp_path)
    set_high_watermark(tmp_path, 310)
    set_recovery_point(tmp_path, 310)
    with pytest.raises(kafkaseg.DataLossError, match="filesystem snapshot") as info:
        kafkaseg.read_arrow(str(tmp_path))
    assert "[300, 310)" in str(info.value) and "copy" in str(info.value)
    assert main(["describe", str(tmp_path)]) == 2
    assert "filesystem snapshot" in capsys.readouterr().err


def test_a_copy_whose_checkpoints_and_indexes_are_older_than_its_logs_loses_nothing(tmp_path):
    """Pinned: the other way round (the checkpoints and the active segment's indexes copied before the log grew),
    the files hold more than they say: reads end at the older high watermark, the log end is the log's, and
    nothing is called lost or damaged (index entries a prefix of the log's)."""
    from tests.lost_tail_data import set_high_watermark, set_recovery_point, write_whole

    write_whole(tmp_path)
    set_high_watermark(tmp_path, 280)
    set_recovery_point(tmp_path, 250)
    for suffix, keep in ((".index", 16), (".timeindex", 24)):
        index = tmp_path / "t-0" / f"{250:020d}{suffix}"
        index.write_bytes(index.read_bytes()[:keep])
    assert kafkaseg.read_arrow(str(tmp_path)).column("offset").to_pylist() == list(range(280))
    upper = kafkaseg.read_arrow(str(tmp_path), upperBound="logEndOffset")
    assert upper.column("offset").to_pylist() == list(range(300))
    report = verify_paths([str(tmp_path)])
    assert not report.errors and not [p for p in report.problems if p.severity == "warning"]


def _rolled_cut_copy(root, high_watermark: int | None, recovery_point: int = 250):
    """tests/lost_tail_data.py's partition (segments 0, 125, 250; offsets 0..299) as rsync copies a running broker's
    data dir: segment 125's .log copied while it was still active, 20 batches in (offsets 125..224), its index files
    and the checkpoints after its roll at 250 (recovery point ``recovery_point``: a roll flushes the old segment);
    returns (its .log, its size)."""
    from tests.lost_tail_data import set_high_watermark, set_recovery_point, write_whole
    from kafkaseg.wire.batch import iter_headers

    write_whole(root)
    folder = root / "t-0"
    if high_watermark is not None:
        set_high_watermark(root, high_watermark)
    set_recovery_point(root, recovery_point)
    (folder / f"{300:020d}.snapshot").unlink()
    log = folder / f"{125:020d}.log"
    data = log.read_bytes()
    at = list(iter_headers(data))[20].position
    log.write_bytes(data[:at])
    return log, at


@pytest.mark.parametrize("high_watermark", [300, None])
def test_a_rolled_segment_copied_while_active_is_a_lost_tail_not_a_compaction_gap(tmp_path, high_watermark):
    """Segment 125's .log ends at offset 225 while its own .index and .timeindex hold entries up to offset 249 past
    its end (a broker indexes a batch after writing it) and the recovery point 250 says it was flushed: offsets
    225..249 were on disk in this file, so they are lost, not compacted. A strict read raises the lost tail's
    LostTailError (a DataLossError) at the file and byte where its batches end, saying what to do if the files are
    a copy; failOnDataLoss=false reads on and lists them in lost_tails. (Before, both returned offsets 0..224 and
    250..299 with no error, the gap only in missing_offsets, as a compaction gap.)"""
    log, at = _rolled_cut_copy(tmp_path, high_watermark)
    with pytest.raises(kafkaseg.LostTailError) as info:
        kafkaseg.read_arrow(str(tmp_path))
    assert isinstance(info.value, kafkaseg.DataLossError)
    assert (info.value.path, info.value.position) == (str(log), at)
    assert "offsets 225..249" in str(info.value) and "filesystem snapshot" in str(info.value)
    assert "failOnDataLoss=false" in str(info.value)
    scan = kafkaseg.open_scan(str(tmp_path), failOnDataLoss="false")
    assert scan.to_table().column("offset").to_pylist() == [*range(225), *range(250, 300)]
    metrics = scan.metrics
    assert not metrics.missing_offsets
    (lost,) = metrics.lost_tails
    assert (lost[0], lost[1], lost.first_offset, lost.end_offset) == (str(log), at, 225, 250)
    skip = kafkaseg.open_scan(str(tmp_path), onCorruption="skip")
    assert skip.to_table().num_rows == 275 and [p[:2] for p in skip.metrics.lost_tails] == [(str(log), at)]
    # a read that ends before the loss says nothing of it
    assert kafkaseg.read_arrow(str(tmp_path), endingOffsets='{"t":{"0":200}}').num_rows == 200


@pytest.mark.parametrize("high_watermark", [300, None])
@pytest.mark.parametrize("recovery_point", [125, 225, None])
def test_a_rolled_segment_cut_short_past_the_recovery_point_is_a_warning(tmp_path, high_watermark, recovery_point):
    """With the recovery point at or below the segment's readable end (its roll's flush not checkpointed), or none,
    its pages may never have reached the disk before a crash: nothing proves the loss, so no error, strict or not
    (pinned), but its own index entries past its end say it held offsets 225..249 once, which every read says as a
    warning in unreadable_tails, as for the active segment's unflushed tail, and not as missing_offsets. (Before,
    only missing_offsets, as for a compaction gap.)"""
    log, at = _rolled_cut_copy(tmp_path, high_watermark, recovery_point=recovery_point)
    if recovery_point is None:
        (tmp_path / "recovery-point-offset-checkpoint").write_text("0\n0\n")
    for options in ({}, {"failOnDataLoss": "false"}):
        scan = kafkaseg.open_scan(str(tmp_path), **options)
        assert scan.to_table().num_rows == 275
        assert not scan.metrics.lost_tails and not scan.metrics.missing_offsets
        (warned,) = scan.metrics.unreadable_tails
        assert (warned[0], warned[1], warned.first_offset, warned.end_offset) == (str(log), at, 225, 250)
        assert "may never have reached the disk" in warned[2] and "compaction" in warned[2]


@pytest.mark.parametrize("recovery_point", [300, 200, None])
@pytest.mark.parametrize("cleaner_offset", [None, 200, 250])
def test_a_compaction_gap_with_sound_indexes_stays_silent(tmp_path, cleaner_offset, recovery_point):
    """The cleaner's output (and a compacted topic's follower): segment 100's last batch ends at offset 225 before
    the next segment's base 250, its indexes hold entries only for its own batches, the recovery point is past it.
    No error, strict or not: the gap is missing_offsets above the cleaner checkpoint, nothing below it."""
    folder = tmp_path / "t-0"
    writer = PartitionWriter(folder, index_interval_bytes=200)
    for base in range(0, 300, 5):
        if base == 100:
            writer.roll(100)
        elif base == 250:
            writer.roll(250)
        if 225 <= base < 250:
            continue
        writer.append(build_batch_v2([Record(base + i, 1_700_000_000_000 + base + i, b"k%d" % (base + i), b"v")
                                      for i in range(5)]))
    writer.close()
    write_offset_checkpoint(tmp_path / "replication-offset-checkpoint", {("t", 0): 300})
    write_offset_checkpoint(tmp_path / "recovery-point-offset-checkpoint",
                            {} if recovery_point is None else {("t", 0): recovery_point})
    if cleaner_offset is not None:
        write_offset_checkpoint(tmp_path / "cleaner-offset-checkpoint", {("t", 0): cleaner_offset})
    expected = [*range(225), *range(250, 300)]
    assert kafkaseg.read_arrow(str(tmp_path)).column("offset").to_pylist() == expected
    scan = kafkaseg.open_scan(str(tmp_path), failOnDataLoss="false")
    assert scan.to_table().column("offset").to_pylist() == expected
    log = str(folder / f"{100:020d}.log")
    assert scan.metrics.missing_offsets == ([] if cleaner_offset == 250 else [(log, 225, 250)])
    assert not scan.metrics.lost_tails and not scan.metrics.unreadable_tails
    inside = kafkaseg.read_arrow(str(tmp_path), startingOffsets='{"t":{"0":230}}')
    assert inside.column("offset").to_pylist() == list(range(250, 300))


def test_a_start_inside_a_rolled_segments_lost_tail_is_data_loss(tmp_path):
    """A start inside those offsets (planning moves it to the next segment, as for a hole between segments) is the
    same loss: a strict read raises a DataLossError naming the file and byte where its batches end; one with
    failOnDataLoss=false reads from the next segment, noting it as data loss in the plan, not as missing_offsets.
    (Before, it read from 250 with the offsets only in missing_offsets.)"""
    log, at = _rolled_cut_copy(tmp_path, 300)
    start = '{"t":{"0":230}}'
    with pytest.raises(kafkaseg.DataLossError) as info:
        kafkaseg.read_arrow(str(tmp_path), startingOffsets=start)
    assert f"{log} @ byte {at}" in str(info.value) and "offsets 225..249" in str(info.value)
    assert "filesystem snapshot" in str(info.value)
    scan = kafkaseg.open_scan(str(tmp_path), startingOffsets=start, failOnDataLoss="false")
    assert scan.to_table().column("offset").to_pylist() == list(range(250, 300))
    assert not scan.metrics.missing_offsets
    assert [n for n in scan.plan.report.data_loss if f"{log} @ byte {at}" in n]


def _rolled_empty_copy(root, base: int, log_start: int | None = None, indexes: bool = True):
    """tests/lost_tail_data.py's partition (segments 0, 125, 250; offsets 0..299, recovery point 250, high watermark
    300) with rolled segment ``base``'s .log cut to 0 bytes (copied when just created, or truncated), its index
    files kept (``indexes``: else emptied, as the cleaner leaves an empty output segment's); ``log_start``: a log
    start offset checkpoint. Returns that .log."""
    from tests.lost_tail_data import set_high_watermark, set_recovery_point, write_whole

    write_whole(root)
    folder = root / "t-0"
    set_high_watermark(root, 300)
    set_recovery_point(root, 250)
    if log_start is not None:
        write_offset_checkpoint(root / "log-start-offset-checkpoint", {("t", 0): log_start})
    log = folder / f"{base:020d}.log"
    log.write_bytes(b"")
    if not indexes:
        for suffix in (".index", ".timeindex"):
            (folder / f"{base:020d}{suffix}").write_bytes(b"")
    return log


@pytest.mark.parametrize("base", [0, 125])
def test_an_empty_rolled_segment_whose_indexes_point_past_its_end_is_a_lost_tail(tmp_path, base):
    """A rolled segment cut to 0 bytes (the partition's first, or one in the middle) whose own .index and .timeindex
    hold entries for offsets it no longer has, below the next base and the recovery point: those offsets were on
    disk in it, so a strict read raises LostTailError at the file and byte 0; failOnDataLoss=false reads on and lists
    them in lost_tails. (Before, both read the other segments with no error: only a plan note said they were
    missing.)"""
    log = _rolled_empty_copy(tmp_path, base)
    with pytest.raises(kafkaseg.LostTailError) as info:
        kafkaseg.read_arrow(str(tmp_path))
    assert (info.value.path, info.value.position) == (str(log), 0)
    assert f"offsets {base}.." in str(info.value) and "failOnDataLoss=false" in str(info.value)
    scan = kafkaseg.open_scan(str(tmp_path), failOnDataLoss="false")
    rest = [o for o in range(300) if not base <= o < base + 125]
    assert scan.to_table().column("offset").to_pylist() == rest
    (lost,) = scan.metrics.lost_tails
    assert (lost[0], lost[1], lost.first_offset) == (str(log), 0, base)
    assert base < lost.end_offset <= base + 125
    assert not scan.metrics.missing_offsets
    skip = kafkaseg.open_scan(str(tmp_path), onCorruption="skip")
    assert skip.to_table().num_rows == 175 and [p[:2] for p in skip.metrics.lost_tails] == [(str(log), 0)]
    # a read that starts after it says nothing of it
    after = kafkaseg.read_arrow(str(tmp_path), startingOffsets=f'{{"t":{{"0":{base + 125}}}}}')
    assert after.num_rows == 300 - base - 125


def test_an_empty_segment_below_the_log_start_or_with_empty_indexes_stays_silent(tmp_path):
    """Legit states: retention moved the log start past an emptied first segment (its offsets are below log start),
    and the cleaner's empty output segment (its indexes hold no entry past its end)."""
    _rolled_empty_copy(tmp_path / "a", 0, log_start=125)
    assert kafkaseg.read_arrow(str(tmp_path / "a")).column("offset").to_pylist() == list(range(125, 300))
    for base in (0, 125):
        root = tmp_path / f"b{base}"
        _rolled_empty_copy(root, base, indexes=False)
        scan = kafkaseg.open_scan(str(root))
        rest = [o for o in range(300) if not base <= o < base + 125]
        assert scan.to_table().column("offset").to_pylist() == rest
        assert not scan.metrics.lost_tails and not scan.plan.report.data_loss


def _locate(capsys, root, offset, *more):
    import json

    code = main(["locate", "--data-dir", str(root), "--topic", "t", "--partition", "0", "--offset", str(offset),
                 *more])
    out, err = capsys.readouterr()
    return code, (json.loads(out)["location"] if "--json" in more else out), err


@pytest.mark.parametrize("case", ["cut short", "empty first", "empty middle"])
def test_locate_says_an_offset_lost_with_a_rolled_segment_cut_short(tmp_path, capsys, case):
    """locate of an offset a read raises LostTailError for (a rolled segment cut short, or to 0 bytes, whose own
    indexes point past its end, the recovery point above): a strict locate fails with the read's error (exit 2),
    --on-corruption skip says the offset was lost, with the file and byte. (Before: 'not in the log', exit 1.)"""
    if case == "cut short":
        (log, at), offset = _rolled_cut_copy(tmp_path, 300), 230
    else:
        base = 0 if case == "empty first" else 125
        log, at, offset = _rolled_empty_copy(tmp_path, base), 0, base + 10
    code, out, err = _locate(capsys, tmp_path, offset)
    assert code == 2 and f"{log}" in err and "--on-corruption skip" in err, (out, err)
    code, location, err = _locate(capsys, tmp_path, offset, "--on-corruption", "skip", "--json")
    assert code == 1 and location["found"] is False
    assert f"offset {offset} was lost with a rolled segment cut short" in location["reason"]
    assert f"{log} @ byte {at}" in location["reason"]
    code, out, err = _locate(capsys, tmp_path, 260)
    assert code == 0 and "offset: 260" in out


def test_locate_in_a_compaction_gap_or_an_emptied_segment_without_index_entries_stays_a_gap(tmp_path, capsys):
    """The cleaner's empty output segment (indexes with no entry past its end): not a loss, the gap's note."""
    _rolled_empty_copy(tmp_path, 125, indexes=False)
    code, location, err = _locate(capsys, tmp_path, 130, "--json")
    assert code == 1 and "is not in the log" in location["reason"] and "was lost" not in location["reason"]


def _describe(capsys, root):
    import json

    code = main(["describe", "--json", str(root)])
    (part,) = json.loads(capsys.readouterr().out)["partitions"]
    return code, part


def _count_index_loads(monkeypatch):
    """A Counter of OffsetIndex.load calls by path, from now on."""
    from collections import Counter

    from kafkaseg.storage.offset_index import OffsetIndex

    loads, load = Counter(), OffsetIndex.load.__func__

    def counted(cls, path, *args, **kwargs):
        loads[str(path)] += 1
        return load(cls, path, *args, **kwargs)

    monkeypatch.setattr(OffsetIndex, "load", classmethod(counted))
    return loads


def test_describe_loads_each_offset_index_once_for_its_rolled_cut_checks(tmp_path, capsys, monkeypatch):
    """describe's rolled-cut checks (layout.rolled_cut_of of each rolled segment below the recovery point) take the
    offset index describe loaded for the segment's row, not a second load of each .index file."""
    from tests.lost_tail_data import write_whole

    write_whole(tmp_path)  # segments 0, 125, 250; recovery point 300: both rolled segments are checked
    loads = _count_index_loads(monkeypatch)
    code, part = _describe(capsys, tmp_path)
    assert code == 0 and not part["errors"], part
    rolled = [str(tmp_path / "t-0" / f"{base:020d}.index") for base in (0, 125)]
    assert [loads[path] for path in rolled] == [1, 1], loads


def test_describe_opens_each_rolled_offset_index_once(tmp_path, capsys, monkeypatch):
    """describe's rolled-cut checks pass a rolled segment whose batches reach the next base on the last entry of
    the offset index describe loaded for its row (layout._last_entry_walk): each rolled .index file is opened once
    (it was loaded for the row, then opened again to probe its last entry)."""
    from collections import Counter

    import kafkaseg.storage.fs as fs
    from tests.lost_tail_data import write_whole

    write_whole(tmp_path)  # segments 0, 125, 250; recovery point 300: both rolled segments are checked
    opens, init = Counter(), fs.RandomAccessReader.__init__

    def counted(self, path, *args, **kwargs):
        opens[str(path)] += 1
        init(self, path, *args, **kwargs)

    monkeypatch.setattr(fs.RandomAccessReader, "__init__", counted)
    code, part = _describe(capsys, tmp_path)
    assert code == 0 and not part["errors"], part
    rolled = [str(tmp_path / "t-0" / f"{base:020d}.index") for base in (0, 125)]
    assert [opens[path] for path in rolled] == [1, 1], opens


def test_describe_loads_the_active_offset_index_once(tmp_path, capsys, monkeypatch):
    """describe's log end (layout.partition_log_end_offset) and its check for an append in progress
    (layout.unacknowledged_append) start their walks from the active segment's offset index as describe loaded it
    for the segment's row: one load of the newest .index, not three (a high watermark at the log end: nothing is
    looked for past it)."""
    from tests.lost_tail_data import write_whole

    write_whole(tmp_path)  # segments 0, 125, 250; log end 300
    (tmp_path / "replication-offset-checkpoint").write_text("0\n1\nt 0 300\n")
    loads = _count_index_loads(monkeypatch)
    code, part = _describe(capsys, tmp_path)
    assert code == 0 and not part["errors"] and part["logEndOffset"] == 300, part
    assert loads[str(tmp_path / "t-0" / f"{250:020d}.index")] == 1, loads


def test_offsets_max_timestamp_loads_no_offset_index_of_rolled_segments_whose_batches_reach_the_next_base(
        tmp_path, capsys, monkeypatch):
    """offsets -3 asks layout.rolled_cut_of of every rolled segment below the recovery point: one whose batches,
    walked from its offset index's last entry (probed, not loaded), reach the next segment's base has no gap after
    it, so none of its index files is loaded for the rolled-cut check (benchmarks/bench_tools.py)."""
    from tests.lost_tail_data import write_whole

    write_whole(tmp_path)  # segments 0, 125, 250; recovery point 300
    (tmp_path / "replication-offset-checkpoint").write_text("0\n1\nt 0 300\n")
    loads = _count_index_loads(monkeypatch)
    code, out, err = _offsets(capsys, tmp_path, "--time", "-3")
    assert code == 0 and out.startswith("t:0:") and err == "", (out, err)
    rolled = [str(tmp_path / "t-0" / f"{base:020d}.index") for base in (0, 125)]
    assert [loads[path] for path in rolled] == [0, 0], loads


@pytest.mark.parametrize("seed", range(6))
def test_rolled_cut_of_answers_as_the_full_walk_does_with_its_shortcut(tmp_path, monkeypatch, seed):
    """layout._last_entry_walk (a rolled segment passed on its .index's last entry) changes no answer of
    rolled_cut_of: partitions with compaction gaps, rolled segments cut at random bytes, flipped bits in an
    .index's last entry or no .index, random recovery points, cleaner checkpoints and log ends, each rolled segment
    judged with the shortcut and without it (the full walk)."""
    import os
    import random

    import kafkaseg.storage.layout as layout
    from kafkaseg.errors import KafkaSegError
    from kafkaseg.storage.offset_index import OffsetIndex
    from kafkaseg.testing import TopicSpec, write_data_dir

    rng, shortcut, judged = random.Random(seed), layout._last_entry_walk, 0
    for trial in range(8):
        root = tmp_path / f"r{trial}"
        write_data_dir(root, [TopicSpec("t", records_per_partition=rng.randint(100, 300),
                                        records_per_batch=rng.choice([1, 3, 5]), vary_batch_size=rng.random() < 0.5,
                                        index_interval_bytes=rng.choice([100, 400, 4096]),
                                        segment_bytes=rng.choice([2000, 4000]), gap_ratio=rng.choice([0, 0.1, 0.3]),
                                        cleanup_policy=rng.choice(["delete", "compact"]))], seed=trial)
        for log in sorted((root / "t-0").glob("*.log"))[:-1]:
            index, damage = log.with_suffix(".index"), rng.random()
            if damage < 0.3 and log.stat().st_size:
                os.truncate(log, rng.randint(0, log.stat().st_size))
            elif damage < 0.4 and index.stat().st_size >= 8:
                data = bytearray(index.read_bytes())
                data[len(data) - 8 + rng.randint(0, 7)] ^= 1 << rng.randint(0, 7)
                index.write_bytes(bytes(data))
            elif damage < 0.45:
                index.unlink()
        write_offset_checkpoint(root / "recovery-point-offset-checkpoint",
                                {("t", 0): rng.choice([10 ** 6, rng.randint(0, 300)])})
        write_offset_checkpoint(root / "cleaner-offset-checkpoint", {("t", 0): rng.randint(0, 300)})
        (pdir,) = layout.discover(str(root / "t-0"))
        for i in range(len(pdir.segments) - 1):
            answers = []
            seg = pdir.segments[i]
            try:  # (as describe loads it for the segment's row, and passes it)
                loaded = OffsetIndex.load(seg.index_path, seg.base_offset) if seg.index_path else None
            except KafkaSegError:
                loaded = None
            for judge, offset_index in ((shortcut, None), (shortcut, loaded), (lambda *args, **kwargs: None, None)):
                monkeypatch.setattr(layout, "_last_entry_walk", judge)
                try:
                    cut = layout.rolled_cut_of(pdir, i, offset_index=offset_index)
                    answers.append(None if cut is None else (cut.position, cut.first_offset, cut.end_offset,
                                                             cut.message))
                except Exception as err:  # (the same error either way)
                    answers.append((type(err).__name__, str(err)))
            assert answers[0] == answers[1] == answers[2], (trial, i, answers)
            judged += 1
    assert judged > 20


@pytest.mark.parametrize("case", ["cut short", "empty first", "empty middle"])
def test_describe_calls_offsets_lost_with_a_rolled_segment_cut_short_an_error(tmp_path, capsys, case):
    """describe says what a read raises LostTailError for: an error (exit 2) naming the offsets, file and byte.
    (Before: exit 0, nothing said.)"""
    if case == "cut short":
        (log, at), first = _rolled_cut_copy(tmp_path, 300), 225
    else:
        first = 0 if case == "empty first" else 125
        log, at = _rolled_empty_copy(tmp_path, first), 0
    code, part = _describe(capsys, tmp_path)
    said = [e for e in part["errors"] if "lost with a rolled segment cut short" in e]
    assert code == 2 and len(said) == 1, part
    assert f"offsets {first}.." in said[0] and f"{log} @ byte {at}" in said[0]


def test_describe_says_nothing_of_a_compaction_gap_and_notes_a_cut_past_the_recovery_point(tmp_path, capsys):
    """No error for either; the cut past the recovery point (index entries past its end, not flushed) is a note
    that the offsets were possibly lost, as describe notes the active segment's unflushed tail."""
    _rolled_empty_copy(tmp_path / "a", 125, indexes=False)
    log, at = _rolled_cut_copy(tmp_path / "b", None, recovery_point=125)
    for root in (tmp_path / "a", tmp_path / "b"):
        code, part = _describe(capsys, root)
        assert code == 0 and not [e for e in part["errors"] if "rolled segment cut short" in e], part
        noted = [n for n in part["notes"] if "possibly lost with a rolled segment cut short" in n]
        if root.name == "a":
            assert not noted, part
        else:
            assert len(noted) == 1 and "offsets 225..249" in noted[0] and f"{log} @ byte {at}" in noted[0], part


def test_verify_warns_of_a_rolled_segments_entries_past_its_end_the_recovery_point_does_not_cover(tmp_path):
    """verify: entries past the end of a rolled segment cut short are errors when the recovery point is above its
    end (proven lost), warnings when it is not, as for the active segment's. (Before, errors either way.)"""
    _rolled_cut_copy(tmp_path / "a", None, recovery_point=250)
    _rolled_cut_copy(tmp_path / "b", None, recovery_point=125)
    for name, severity in (("a", "error"), ("b", "warning")):
        report = verify_paths([str(tmp_path / name)])
        past = [p for p in report.problems if p.file.endswith(("125.index", "125.timeindex"))]
        assert len(past) == 2 and {p.severity for p in past} == {severity}, past
    assert not verify_paths([str(tmp_path / "b")]).errors


def _offsets(capsys, root, *more):
    code = main(["offsets", "--data-dir", str(root), "--topic", "t", *more])
    out, err = capsys.readouterr()
    return code, out, err


def test_offsets_fails_where_its_answer_depends_on_offsets_a_rolled_segment_cut_short_lost(tmp_path, capsys):
    """Segment 125 cut short (offsets 225..249 lost): max-timestamp and a time whose first record at or after it is
    past them (a lost record may have been it) fail strict (exit 2, the read's LostTailError naming the file and
    byte), and --on-corruption skip answers with the loss on stderr; latest and a time found below them do not
    depend on them. (Before: all answered, exit 0, nothing said.)"""
    log, at = _rolled_cut_copy(tmp_path, 300)
    for spec, skipped in (("-3", "t:0:299\n"), ("1700000002260", "t:0:250\n")):
        code, out, err = _offsets(capsys, tmp_path, "--time", spec)
        assert code == 2 and out == "" and f"{log} @ byte {at}" in err and "offsets 225..249" in err, (spec, err)
        code, out, err = _offsets(capsys, tmp_path, "--time", spec, "--on-corruption", "skip")
        assert code == 0 and out == skipped and "lost with a rolled segment cut short" in err, (spec, err)
    for spec, answer in (("-1", "t:0:300\n"), ("1700000001000", "t:0:100\n")):
        code, out, err = _offsets(capsys, tmp_path, "--time", spec)
        assert code == 0 and out == answer and err == "", (spec, err)


def test_offsets_earliest_fails_when_the_log_start_was_lost_with_an_emptied_first_segment(tmp_path, capsys):
    log = _rolled_empty_copy(tmp_path, 0)
    code, out, err = _offsets(capsys, tmp_path, "--time", "-2")
    assert code == 2 and out == "" and f"{log} @ byte 0" in err
    code, out, err = _offsets(capsys, tmp_path, "--time", "-2", "--on-corruption", "skip")
    assert code == 0 and out == "t:0:0\n" and "lost with a rolled segment cut short" in err


def test_below_cleaner_checkpoint_is_strictly_below():
    """layout.below_cleaner_checkpoint, the one comparison reads, planning, locate, describe and verify make: a gap
    is compaction's only when its first missing offset is below the checkpoint, not at it."""
    from kafkaseg.storage.layout import below_cleaner_checkpoint

    assert below_cleaner_checkpoint(224, 225)
    assert not below_cleaner_checkpoint(225, 225) and not below_cleaner_checkpoint(226, 225)
    assert not below_cleaner_checkpoint(0, None)


@pytest.mark.parametrize("above", [0, 3, 250])
@pytest.mark.parametrize("case, first_missing, start", [("cut short", 225, 230), ("empty middle", 125, 135)])
def test_a_cleaner_checkpoint_anywhere_leaves_an_index_proven_gap_lost_for_every_start(tmp_path, capsys, case,
                                                                                       first_missing, start, above):
    """The cleaner checkpoint at the first missing offset (225 after segment 125's last batch, or the empty segment's
    base 125: it explains none of the gap), between it and a start inside the gap, or at the next base: the
    segment's own indexes name offsets past its last batch, which no cleaning leaves (the cleaner rebuilds a cleaned
    segment's indexes from the batches it keeps), so a read across the gap and one starting inside it raise the
    proven lost tail, describe calls it an error and locate says the offset was lost, judged alike wherever the
    read starts. (Before, with the checkpoint above the first missing offset, all of them took the gap for
    compaction's and said nothing.)"""
    (_rolled_cut_copy(tmp_path, 300) if case == "cut short" else _rolled_empty_copy(tmp_path, 125))
    write_offset_checkpoint(tmp_path / "cleaner-offset-checkpoint",
                            {("t", 0): 250 if above == 250 else first_missing + above})
    with pytest.raises(DataLossError):
        kafkaseg.open_scan(str(tmp_path)).to_table()
    with pytest.raises(DataLossError):
        kafkaseg.open_scan(str(tmp_path), startingOffsets=f'{{"t":{{"0":{start}}}}}').to_table()
    code, part = _describe(capsys, tmp_path)
    assert code == 2 and [e for e in part["errors"] if "rolled segment cut short" in e], part
    code, location, err = _locate(capsys, tmp_path, start, "--on-corruption", "skip", "--json")
    assert code == 1 and f"offset {start} was lost" in location["reason"], location


def test_offsets_time_answers_past_a_cut_whose_own_time_index_bounds_every_lost_timestamp(tmp_path, capsys):
    """Segment 125 cut short (offsets 225..249 lost, timestamps ...2250..2490): its .timeindex's last entry names
    offset 249, the last lost one, with max timestamp ...2490 (an entry's timestamp is the max over every record
    appended before it, offsets in order): no lost record reaches a time above it, so the answer 250 does not depend
    on them and a strict lookup answers (before: exit 2). At ...2490 a lost record (249) may be the answer: fails."""
    log, at = _rolled_cut_copy(tmp_path, 300)
    code, out, err = _offsets(capsys, tmp_path, "--time", "1700000002500")
    assert code == 0 and out == "t:0:250\n" and err == "", err
    code, out, err = _offsets(capsys, tmp_path, "--time", "1700000002490")
    assert code == 2 and out == "" and f"{log} @ byte {at}" in err and "offsets 225..249" in err, err


def test_offsets_time_still_fails_when_the_cut_segments_time_index_does_not_reach_its_last_lost_offset(
        tmp_path, capsys):
    """Its .timeindex without the last entry ends at offset 244 (max timestamp ...2440): records 245..249 are bounded
    by nothing (an entry bounds only records up to its offset), so a time above every entry still fails strict."""
    log, at = _rolled_cut_copy(tmp_path, 300)
    timeindex = tmp_path / "t-0" / f"{125:020d}.timeindex"
    timeindex.write_bytes(timeindex.read_bytes()[:-12])
    code, out, err = _offsets(capsys, tmp_path, "--time", "1700000002500")
    assert code == 2 and out == "" and f"{log} @ byte {at}" in err, err


# -- 1b. the same high watermark gone back under a stream that had read past the gap -------------------------------


def _stream_past_the_gap(root, **options):
    """A stream that read the running follower's copy to 100 while its high watermark was 100; then a leader change
    moves the high watermark back to 80, into the gap. Returns the planner (a new one: a restarted query) and the
    stream's committed position."""
    from kafkaseg.options import ReadOptions
    from kafkaseg.streaming import MicroBatchPlanner, from_offsets, poll_micro_batches

    _gap_follower(root, 100, stopped=False)
    given = {"path": str(root), "startingOffsets": "earliest", "failOnDataLoss": "false", **options}
    first = MicroBatchPlanner(ReadOptions.from_options(given, stream=True))
    plans = list(poll_micro_batches(first))
    position = first.latest_offsets(first.initial_offsets())
    assert from_offsets(position) == {("t", 0): 100} and [p.ranges for p in plans] == [{("t", 0): (0, 100)}]
    write_offset_checkpoint(root / "replication-offset-checkpoint", {("t", 0): 80})
    return first, MicroBatchPlanner(ReadOptions.from_options(given, stream=True)), position


def test_a_stream_that_read_past_the_gap_stands_when_the_high_watermark_goes_back_into_it(tmp_path):
    """The stream's own position (100, read from these files while the high watermark was there) proves the log
    reached past the batch after the gap, as a stopped broker's recovery point does: its next micro-batch is the
    high watermark going back (no new data, no loss), not a corrupt base offset (SkippedOffsetsError before), in
    the process that read it and in a restarted one; once the high watermark passes 100 again it reads on."""
    from kafkaseg.streaming import from_offsets, poll_micro_batches

    same, restarted, position = _stream_past_the_gap(tmp_path)
    for p in (same, restarted):
        assert p.latest_offsets(position) == position
        assert list(poll_micro_batches(p, position)) == []
    # the new leader appends, and the high watermark passes the stream again
    log = tmp_path / "t-0" / f"{0:020d}.log"
    with open(log, "ab") as f:
        f.write(build_batch_v2([Record(o, 1_700_000_000_000 + o, b"k%d" % o, b"v") for o in range(100, 105)]).data)
    write_offset_checkpoint(tmp_path / "replication-offset-checkpoint", {("t", 0): 105})
    plans = list(poll_micro_batches(restarted, position))
    assert [plan.ranges for plan in plans] == [{("t", 0): (100, 105)}] and not plans[0].data_loss
    assert from_offsets(restarted.latest_offsets(position)) == {("t", 0): 105}


def test_a_restarted_available_now_stream_past_the_gap_stands_at_its_position(tmp_path):
    """Trigger.AvailableNow: Spark calls prepareForTriggerAvailableNow before anything tells the reader the
    checkpoint's position (its first call with it is latestOffset), so the position could not vouch for the batch
    past the gap there, and every restarted run raised SkippedOffsetsError. The target is still the high watermark
    of that moment: records the broker makes readable after it are the next run's."""
    from kafkaseg.streaming import from_offsets, poll_micro_batches

    _, restarted, position = _stream_past_the_gap(tmp_path)
    restarted.prepare_available_now()
    log = tmp_path / "t-0" / f"{0:020d}.log"
    with open(log, "ab") as f:  # after the run started: not this run's to read
        f.write(build_batch_v2([Record(o, 1_700_000_000_000 + o, b"k%d" % o, b"v") for o in range(100, 105)]).data)
    write_offset_checkpoint(tmp_path / "replication-offset-checkpoint", {("t", 0): 105})
    assert restarted.latest_offsets(position, all_available=True) == position
    assert list(poll_micro_batches(restarted, position)) == []
    # the next run's target is the high watermark of its start
    write_offset_checkpoint(tmp_path / "replication-offset-checkpoint", {("t", 0): 105})
    nxt = type(restarted)(restarted.options)
    nxt.prepare_available_now()
    assert from_offsets(nxt.latest_offsets(position, all_available=True)) == {("t", 0): 105}


def test_an_available_now_stream_before_the_gap_still_takes_it_for_a_corrupt_base(tmp_path):
    """Pinned: the position is evidence only past the batch; a restarted AvailableNow stream standing at 50 raises
    at its first micro-batch, as a stream of another trigger does."""
    from kafkaseg.streaming import to_offsets

    _, restarted, _ = _stream_past_the_gap(tmp_path)
    restarted.prepare_available_now()
    with pytest.raises(SkippedOffsetsError):
        restarted.latest_offsets(to_offsets({("t", 0): 50}), all_available=True)


def test_a_stream_below_the_gap_or_a_batch_read_still_takes_it_for_a_corrupt_base(tmp_path):
    """Pinned: a position is evidence only where the stream stands past the batch; a stream at 50 (before the gap)
    and a batch read (no position) still raise as for a running broker's copy."""
    from kafkaseg.streaming import to_offsets

    _, restarted, _ = _stream_past_the_gap(tmp_path)
    with pytest.raises(SkippedOffsetsError):
        restarted.latest_offsets(to_offsets({("t", 0): 50}))
    with pytest.raises(SkippedOffsetsError):
        kafkaseg.read_arrow(str(tmp_path))


def _rolled_torn_first_batch(root, base: int, indexes: bool = True, keep: int = 30):
    """:func:`_rolled_empty_copy` with rolled segment ``base``'s .log cut ``keep`` bytes into its first batch
    (``truncate -s 30``) instead of to 0 bytes: no whole batch left. Returns that .log."""
    from tests.lost_tail_data import write_whole

    whole = root.parent / f"{root.name}.whole"
    write_whole(whole)
    data = (whole / "t-0" / f"{base:020d}.log").read_bytes()
    log = _rolled_empty_copy(root, base, indexes=indexes)
    log.write_bytes(data[:keep])
    return log


@pytest.mark.parametrize("base", [0, 125])
def test_a_rolled_segment_whose_first_batch_is_cut_is_a_lost_tail_as_an_emptied_one(tmp_path, base):
    """A rolled segment cut inside its first batch (no whole batch left), its own indexes pointing past byte 0 and
    the recovery point above it: the offsets an emptied one would lose, plus bytes of a batch. A strict read raises
    LostTailError at the file and byte 0; failOnDataLoss=false and onCorruption=skip read on, listing them in
    lost_tails, in read_arrow and iter_batches alike. (Before, failOnDataLoss=false raised TruncatedDataError at
    byte 0, and a skip counted a corrupt batch, not the loss.)"""
    log = _rolled_torn_first_batch(tmp_path, base)
    for read in (kafkaseg.read_arrow, lambda p, **o: list(kafkaseg.iter_batches(p, **o))):
        with pytest.raises(kafkaseg.LostTailError) as info:
            read(str(tmp_path))
        assert (info.value.path, info.value.position) == (str(log), 0)
        assert f"offsets {base}.." in str(info.value) and "failOnDataLoss=false" in str(info.value)
    rest = [o for o in range(300) if not base <= o < base + 125]
    for options in ({"failOnDataLoss": "false"}, {"onCorruption": "skip"}):
        scan = kafkaseg.open_scan(str(tmp_path), **options)
        assert scan.to_table().column("offset").to_pylist() == rest
        (lost,) = scan.metrics.lost_tails
        assert (lost[0], lost[1], lost.first_offset) == (str(log), 0, base)
        assert base < lost.end_offset <= base + 125
        assert not scan.metrics.missing_offsets and not scan.metrics.decode.corrupt_batches


def test_a_rolled_segment_whose_first_batch_is_cut_without_index_proof_stays_corruption(tmp_path):
    """Pinned: with no index entry past its readable end nothing proves a loss (a corrupt length field looks the
    same): a strict read and failOnDataLoss=false raise TruncatedDataError at byte 0, a skip counts it."""
    log = _rolled_torn_first_batch(tmp_path, 125, indexes=False)
    for options in ({}, {"failOnDataLoss": "false"}):
        with pytest.raises(kafkaseg.TruncatedDataError) as info:
            kafkaseg.read_arrow(str(tmp_path), **options)
        assert (info.value.path, info.value.position) == (str(log), 0)
        assert not isinstance(info.value, kafkaseg.LostTailError)
    scan = kafkaseg.open_scan(str(tmp_path), onCorruption="skip")
    assert scan.to_table().num_rows == 175 and scan.metrics.decode.corrupt_batches == 1


@pytest.mark.parametrize("base,log_start,end", [(0, None, 100), (125, 125, 200), (125, 125, 250)])
def test_a_range_of_nothing_but_an_emptied_segments_offsets_lists_them_in_lost_tails(tmp_path, base, log_start,
                                                                                     end):
    """failOnDataLoss=false, a read from earliest whose range holds nothing but an emptied rolled segment's
    proven-lost offsets: no slice reads a byte, but the read lists them in lost_tails, as a range that also holds
    readable data does (checked here too), besides the plan's data_loss. (Before, only data_loss said it.)"""
    log = _rolled_empty_copy(tmp_path, base, log_start=log_start)
    for stop, rows in ((end, 0), (300, 175 - (log_start or 0))):
        bounds = dict(endingOffsets=f'{{"t":{{"0":{stop}}}}}')
        scan = kafkaseg.open_scan(str(tmp_path), failOnDataLoss="false", **bounds)
        assert scan.to_table().num_rows == rows
        assert [(p[0], p[1], p.first_offset, p.end_offset) for p in scan.metrics.lost_tails] == [
            (str(log), 0, base, min(stop, base + 125))]
        assert len([n for n in scan.plan.report.data_loss if str(log) in n]) == 1
        assert not scan.metrics.missing_offsets
    bounds = dict(endingOffsets=f'{{"t":{{"0":{end}}}}}')
    assert list(kafkaseg.iter_batches(str(tmp_path), failOnDataLoss="false", **bounds)) == []
    with pytest.raises(kafkaseg.LostTailError):
        kafkaseg.read_arrow(str(tmp_path), **bounds)


@pytest.mark.parametrize("keep", [0, 30])
def test_an_active_segment_with_no_whole_batch_is_judged_as_one_cut_later(tmp_path, keep):
    """The active segment cut to 0 bytes or inside its first batch, no high watermark: its readable end is byte 0,
    and what its own indexes and the recovery point say past it is judged as for one cut after some batches. With
    the recovery point 300 above it, a strict read raises LostTailError at byte 0 and failOnDataLoss=false lists
    the loss in lost_tails; with it at 250 (not flushed), an unreadable_tails warning. (Before, no slice read the
    segment, so nothing was said.)"""
    from tests.lost_tail_data import set_recovery_point, write_whole

    whole = tmp_path / "whole"
    write_whole(whole)
    active = whole / "t-0" / f"{250:020d}.log"
    active.write_bytes(active.read_bytes()[:keep])
    (whole / "t-0" / f"{300:020d}.snapshot").unlink()
    set_recovery_point(whole, 300)
    with pytest.raises(kafkaseg.LostTailError) as info:
        kafkaseg.read_arrow(str(whole))
    assert (info.value.path, info.value.position) == (str(active), 0)
    scan = kafkaseg.open_scan(str(whole), failOnDataLoss="false")
    assert scan.to_table().num_rows == 250
    assert [(p[0], p[1], p.first_offset) for p in scan.metrics.lost_tails] == [(str(active), 0, 250)]
    set_recovery_point(whole, 250)
    scan = kafkaseg.open_scan(str(whole))
    assert scan.to_table().num_rows == 250
    assert [(p[0], p[1], p.first_offset) for p in scan.metrics.unreadable_tails] == [(str(active), 0, 250)]


@pytest.mark.parametrize("base", [0, 125])
def test_an_emptied_rolled_segment_past_the_recovery_point_is_a_warning(tmp_path, base):
    """An emptied rolled segment whose indexes point past byte 0, the recovery point not above its base: no error,
    strict or not; every read warns of the offsets (unreadable_tails), also one whose range holds nothing else, and
    the plan notes them as possibly lost, not as missing. (Before, only a plan note that they were missing.)"""
    from tests.lost_tail_data import set_recovery_point

    log = _rolled_empty_copy(tmp_path, base)
    set_recovery_point(tmp_path, base)
    for options in ({}, {"failOnDataLoss": "false"}, {"endingOffsets": f'{{"t":{{"0":{base + 50}}}}}'}):
        scan = kafkaseg.open_scan(str(tmp_path), **options)
        assert scan.to_table().num_rows == (base if "endingOffsets" in options else 175)
        assert not scan.metrics.lost_tails and not scan.metrics.missing_offsets and not scan.plan.report.data_loss
        (warned,) = scan.metrics.unreadable_tails
        assert (warned[0], warned[1], warned.first_offset) == (str(log), 0, base)
        assert [n for n in scan.plan.report.notes if "possibly lost with a rolled segment cut short" in n]
        assert not [n for n in scan.plan.report.notes if "is empty, so offsets" in n]


def test_offsets_notes_offsets_possibly_lost_with_a_rolled_segment_cut_past_the_recovery_point(tmp_path, capsys):
    """Segment 125 cut short, its entries past the end not covered by the recovery point: offsets whose answer may
    have been among them (max-timestamp, a time past them) answer, strict too (exit 0: not proven lost), with the
    possible loss on stderr, as for the active segment's unflushed tail; latest says nothing of it."""
    log, at = _rolled_cut_copy(tmp_path, 300, recovery_point=125)
    # (the time's search stops in segment 125, whose time index reaches it, and finds no record there: no answer,
    # as a broker's; one of the lost records may have been it)
    for spec, answer in (("-3", "t:0:299\n"), ("1700000002260", "")):
        code, out, err = _offsets(capsys, tmp_path, "--time", spec)
        assert code == 0 and out == answer, (spec, err)
        assert "offsets 225..249 possibly lost with a rolled segment cut short" in err and f"{log} @ byte {at}" in err
    code, out, err = _offsets(capsys, tmp_path, "--time", "-1")
    assert code == 0 and out == "t:0:300\n" and err == "", err


def test_an_active_segment_whose_only_batch_is_torn_reports_its_torn_tail(tmp_path):
    """The active segment cut inside its first batch with nothing saying it held more (no index entry, snapshot or
    recovery point past it): a torn append, reported as truncated_tails as one after whole batches is, also for a
    .log given alone without a Kafka name (discovery takes its base offset from the torn batch's offset field).
    (Before, no slice read it: nothing was said, and the unnamed file's base offset was taken as 0.)"""
    from tests.lost_tail_data import set_recovery_point, write_whole

    root = tmp_path / "d"
    write_whole(root)
    active = root / "t-0" / f"{250:020d}.log"
    data = active.read_bytes()
    active.write_bytes(data[:30])
    for suffix in (".index", ".timeindex"):
        active.with_suffix(suffix).write_bytes(b"")
    (root / "t-0" / f"{300:020d}.snapshot").unlink()
    set_recovery_point(root, 250)
    scan = kafkaseg.open_scan(str(root))
    assert scan.to_table().num_rows == 250
    assert scan.metrics.truncated_tails == [(str(active), 0, 30)]
    alone = tmp_path / "alone" / "copy.log"
    alone.parent.mkdir()
    alone.write_bytes(data[:30])
    scan = kafkaseg.open_scan(str(alone))
    assert scan.to_table().num_rows == 0
    assert scan.metrics.truncated_tails == [(str(alone), 0, 30)]
    assert scan.plan.report.partitions[0].log_end_offset == 250


def test_a_recreated_topics_log_takes_no_evidence_from_the_deleted_topics_position(tmp_path):
    """Pinned: the stream's position vouches only for the log it was read from. A stream at 100 on a deleted
    topic, whose recreated topic's partition is that follower's shape (its high watermark back inside the gap, a
    running broker's), takes no evidence from it: the new log's range and a micro-batch onto the new topic (which
    reads it from its beginning: the recreated-topic path of plan(), whose start is the new log's start taken
    without the position, pinned by a batch ending at 0 that reads nothing) raise as a batch read does. The same
    position on the same topic id vouches for it, as above."""
    from kafkaseg.options import ReadOptions
    from kafkaseg.streaming import MicroBatchPlanner, to_offsets
    from kafkaseg.testing.partition import write_partition_metadata
    from kafkaseg.testing.tiered import kafka_uuid

    _gap_follower(tmp_path, 80, stopped=False)
    new, old = kafka_uuid("new"), kafka_uuid("old")
    write_partition_metadata(tmp_path / "t-0" / "partition.metadata", new)
    planner = MicroBatchPlanner(ReadOptions.from_options({"path": str(tmp_path), "failOnDataLoss": "false"},
                                                         stream=True))
    on_new, on_old = (to_offsets({("t", 0): 100}, {("t", 0): topic_id}) for topic_id in (new, old))
    planner.latest_offsets(on_new)  # (evidence: no error)
    with pytest.raises(SkippedOffsetsError):
        planner.latest_offsets(on_old)
    # a micro-batch onto the new topic: where it starts (its log start, taken without evidence), and its plan
    for end in (0, 80):
        with pytest.raises(SkippedOffsetsError, match="base offset 95"):
            planner.plan(on_old, to_offsets({("t", 0): end}, {("t", 0): new}))
    with pytest.raises(SkippedOffsetsError):
        kafkaseg.read_arrow(str(tmp_path))


def _streamed_past_the_gap(b1, given: dict):
    """A stream over ``given`` (b1, a running gap follower, with other copies) that read b1 to 100 while its high
    watermark was 100, then b1's high watermark moved back to 80 (a leader change): the planner and its position."""
    from kafkaseg.options import ReadOptions
    from kafkaseg.streaming import MicroBatchPlanner, from_offsets, poll_micro_batches

    write_offset_checkpoint(b1 / "replication-offset-checkpoint", {("t", 0): 100})
    first = MicroBatchPlanner(ReadOptions.from_options(given, stream=True))
    plans = list(poll_micro_batches(first))
    assert [p.ranges for p in plans] == [{("t", 0): (0, 100)}]
    assert plans[0].scan.report.replicas[0]["chosen"] == str(b1 / "t-0")
    position = first.latest_offsets(first.initial_offsets())
    assert from_offsets(position) == {("t", 0): 100}
    write_offset_checkpoint(b1 / "replication-offset-checkpoint", {("t", 0): 80})
    return first, position


def test_a_stream_over_two_replicas_keeps_the_gap_follower_it_read_past_the_gap(tmp_path):
    """Two brokers' copies of t-0: b1 the compacted follower above ([0, 50) and [95, 100), a running broker's), b2
    a follower behind that the cleaner has not reached ([0, 85), its high watermark 80). The stream reads b1 to 100
    while its high watermark is 100 (the highest: b1 chosen); then a leader change moves b1's high watermark back
    to 80, into the gap: a tie, which the replica choice breaks by the larger log end. b1's, with the stream's
    position as the evidence that its log reached 100, is 100; without it, b1's last batch is a corrupt base offset
    (no log end) and b2 (log end 85) was chosen: the stream's position 100 is past b2's log end, a log that went
    back, so the stream raised data loss (with failOnDataLoss=false it read b2's offsets 80..84 again after 95..99:
    offsets going back). It stands instead, as over b1 alone, and reads on from b1 when its high watermark passes
    100 again."""
    from kafkaseg.options import ReadOptions
    from kafkaseg.streaming import MicroBatchPlanner, poll_micro_batches

    b1, b2 = tmp_path / "b1", tmp_path / "b2"
    b1.mkdir(), b2.mkdir()
    _gap_follower(b1, 100, stopped=False)
    writer = PartitionWriter(b2 / "t-0")
    for base in range(0, 85, 5):
        writer.append(build_batch_v2([Record(base + i, 1_700_000_000_000 + base + i, b"k%d" % (base + i), b"v")
                                      for i in range(5)]))
    writer.close(live=True)
    write_offset_checkpoint(b2 / "replication-offset-checkpoint", {("t", 0): 80})
    write_offset_checkpoint(b2 / "recovery-point-offset-checkpoint", {("t", 0): 0})
    for fail in ("true", "false"):
        given = {"paths": [str(b1), str(b2)], "startingOffsets": "earliest", "failOnDataLoss": fail}
        first, position = _streamed_past_the_gap(b1, given)
        restarted = MicroBatchPlanner(ReadOptions.from_options(given, stream=True))
        for planner in (first, restarted):
            assert planner.latest_offsets(position) == position, fail
            assert list(poll_micro_batches(planner, position)) == [], fail
        # b1's new leader appends, and its high watermark passes the stream again
        log = b1 / "t-0" / f"{0:020d}.log"
        with open(log, "ab") as f:
            f.write(build_batch_v2([Record(o, 1_700_000_000_000 + o, b"k%d" % o, b"v")
                                    for o in range(100, 105)]).data)
        write_offset_checkpoint(b1 / "replication-offset-checkpoint", {("t", 0): 105})
        plans = list(poll_micro_batches(restarted, position))
        assert [plan.ranges for plan in plans] == [{("t", 0): (100, 105)}] and not plans[0].data_loss, fail
        _gap_follower(b1, 100, stopped=False)  # (as it was, for the next round)


@pytest.mark.parametrize("behind_hw", [85, 82])
def test_a_stream_keeps_to_a_replica_that_reaches_its_position_over_one_with_a_higher_high_watermark(
        tmp_path, behind_hw):
    """As above, but the copy behind (b2: [0, 85), given first, the most bytes) checkpointed a higher high watermark
    (85 or 82) than b1's 80, back in its gap: the replica choice took b2, whose log ends below the stream's position
    100 (the stream read b1 there): "offsets went back from 100 to 85", a DataLossError (with failOnDataLoss=false,
    the stream went back to 85 and read b2's offsets again). A copy whose files end below the stream's position is
    behind, whatever its checkpoint says: the stream keeps to b1, which reaches it, stands, and reads on from b1.
    A batch read (no position) still chooses by the policy alone; so does the choice when no copy reaches the
    position (the stream says the loss). choose_replicas' other policies (first, largestSize) alike."""
    from kafkaseg.options import ReadOptions
    from kafkaseg.storage.layout import choose_replicas, discover
    from kafkaseg.streaming import MicroBatchPlanner, poll_micro_batches

    b1, b2 = tmp_path / "b1", tmp_path / "b2"
    b1.mkdir(), b2.mkdir()
    writer = PartitionWriter(b2 / "t-0")
    for base in range(0, 85, 5):
        writer.append(build_batch_v2([Record(base + i, 1_700_000_000_000 + base + i, b"k%d" % (base + i), b"v" * 40)
                                      for i in range(5)]))
    writer.close(live=True)
    write_offset_checkpoint(b2 / "replication-offset-checkpoint", {("t", 0): behind_hw})
    write_offset_checkpoint(b2 / "recovery-point-offset-checkpoint", {("t", 0): 0})
    for fail in ("true", "false"):
        _gap_follower(b1, 100, stopped=False)
        given = {"paths": [str(b2), str(b1)], "startingOffsets": "earliest", "failOnDataLoss": fail}
        first, position = _streamed_past_the_gap(b1, given)
        # a batch read chooses as before: b2, the higher high watermark
        batch = kafkaseg.open_scan([str(b2), str(b1)])
        assert batch.plan.report.replicas[0]["chosen"] == str(b2 / "t-0")
        restarted = MicroBatchPlanner(ReadOptions.from_options(given, stream=True))
        for planner in (first, restarted):
            assert planner.latest_offsets(position) == position, fail
            assert list(poll_micro_batches(planner, position)) == [], fail
        # (b2 first: discover sorts by path)
        copies = sorted((p for p in discover([str(b2), str(b1)]) if p.topic == "t"), key=lambda p: "b1" in p.path)
        for policy in ("highestHighWatermark", "first", "largestSize"):
            (choice,) = choose_replicas(copies, policy)
            assert choice.chosen.path == str(b2 / "t-0"), policy
            (choice,) = choose_replicas(copies, policy, read_to=lambda pdir: 100)
            assert choice.chosen.path == str(b1 / "t-0") and "stream's position" in choice.reason, policy
            # no copy reaching the position: the policy's choice (the stream says the loss)
            (choice,) = choose_replicas(copies, policy, read_to=lambda pdir: 110)
            assert choice.chosen.path == str(b2 / "t-0"), policy
        # b1's new leader appends, and its high watermark passes the stream again
        with open(b1 / "t-0" / f"{0:020d}.log", "ab") as f:
            f.write(build_batch_v2([Record(o, 1_700_000_000_000 + o, b"k%d" % o, b"v")
                                    for o in range(100, 105)]).data)
        write_offset_checkpoint(b1 / "replication-offset-checkpoint", {("t", 0): 105})
        plans = list(poll_micro_batches(restarted, position))
        assert [plan.ranges for plan in plans] == [{("t", 0): (100, 105)}] and not plans[0].data_loss, fail
        assert plans[0].scan.report.replicas[0]["chosen"] == str(b1 / "t-0")
