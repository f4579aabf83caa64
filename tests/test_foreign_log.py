"""A rolled segment whose ``.log`` holds another segment's batches (a restore that copied a later segment's ``.log``
over it: every batch at or past the next segment's base offset) while its own ``.index``/``.timeindex`` name
offsets inside its range: the segment's offsets are lost with its file, as a rolled segment cut to 0 bytes loses
them (scan's index rule, layout.judge_rolled_end), not a gap Kafka's cleaner or a follower could have left (the
cleaner writes a segment's indexes with the batches it keeps). Without index entries there is no proof, and the
read keeps taking it as a gap (``missing_offsets``); verify says the file is not the segment's either way."""

from __future__ import annotations

import shutil

import pytest

import kafkaseg
from kafkaseg.cli.verify import verify_paths
from kafkaseg.testing.partition import write_offset_checkpoint
from tests.lost_tail_data import set_high_watermark, set_recovery_point, write_whole
from tests.test_cleaner_gap import _status3

RECORDS = 300  # tests/lost_tail_data.py's partition: segments 0, 125, 250 (active), offsets 0..299


def _copied_over(root, source: int, target: int, *, indexes: bool = True, cleaner: int | None = None):
    """The partition (recovery point 250, high watermark 300) with segment ``source``'s .log copied over rolled
    segment ``target``'s (``indexes``: its own index files kept, else emptied, as no index entry proves anything;
    ``cleaner``: a cleaner checkpoint). Returns that .log."""
    write_whole(root)
    set_high_watermark(root, RECORDS)
    set_recovery_point(root, 250)
    folder = root / "t-0"
    log = folder / f"{target:020d}.log"
    log.write_bytes((folder / f"{source:020d}.log").read_bytes())
    if not indexes:
        for suffix in (".index", ".timeindex"):
            (folder / f"{target:020d}{suffix}").write_bytes(b"")
    if cleaner is not None:
        write_offset_checkpoint(root / "cleaner-offset-checkpoint", {("t", 0): cleaner})
    return log


NEXT = {0: 125, 125: 250}


@pytest.mark.parametrize("source, target, cleaner", [(125, 0, None), (250, 125, None), (125, 0, 250),
                                                     (250, 125, 250)])
def test_a_later_segments_log_copied_over_a_rolled_one_is_lost_not_a_gap(tmp_path, source, target, cleaner):
    """Segment ``target``'s .log replaced by segment ``source``'s (its batches all at or past ``target``'s next
    base), its own indexes naming offsets inside its range, the recovery point above its base: a strict read raises
    LostTailError at the file and byte 0 saying it holds another segment's batches, past the next base;
    failOnDataLoss=false and onCorruption=skip read on with the segment's range in lost_tails, not in
    missing_offsets, below the cleaner checkpoint too. (Before: read as a gap, listed in missing_offsets, or
    silently missing below the cleaner checkpoint.)"""
    log = _copied_over(tmp_path, source, target, cleaner=cleaner)
    next_base = NEXT[target]
    with pytest.raises(kafkaseg.LostTailError) as info:
        kafkaseg.read_arrow(str(tmp_path))
    assert (info.value.path, info.value.position) == (str(log), 0)
    said = str(info.value)
    assert "another segment's batches" in said and f"past the next segment's base offset {next_base}" in said
    assert f"offsets {target}..{next_base - 1}" in said and "failOnDataLoss=false" in said
    kept = [o for o in range(RECORDS) if not target <= o < next_base]
    for options in ({"failOnDataLoss": "false"}, {"onCorruption": "skip"}):
        scan = kafkaseg.open_scan(str(tmp_path), **options)
        assert scan.to_table().column("offset").to_pylist() == kept
        (lost,) = scan.metrics.lost_tails
        assert (lost[0], lost[1], lost.first_offset, lost.end_offset) == (str(log), 0, target, next_base)
        assert "another segment's batches" in lost[2]
        assert not scan.metrics.missing_offsets and not scan.metrics.decode.corrupt_batches


def test_a_foreign_log_without_index_entries_stays_a_gap_and_verify_says_it(tmp_path):
    """No index entry inside its range (emptied indexes): nothing proves the segment held anything, so the read
    takes it as today, a gap listed in missing_offsets, no error; verify reports the file as not the segment's."""
    log = _copied_over(tmp_path, 250, 125, indexes=False)
    scan = kafkaseg.open_scan(str(tmp_path))
    assert scan.to_table().column("offset").to_pylist() == [*range(125), *range(250, RECORDS)]
    assert scan.metrics.missing_offsets == [(str(log), 125, 250)]
    assert not scan.metrics.lost_tails
    report = verify_paths([str(tmp_path)])
    mine = [p for p in report.problems if p.file == str(log) and "another segment's batches" in p.message
            and p.severity != "info"]
    assert len(mine) == 1 and mine[0].severity in ("error", "warning"), [str(p) for p in report.problems]


@pytest.mark.parametrize("indexes", [True, False])
def test_verify_names_the_foreign_log(tmp_path, indexes):
    """verify: an error on the .log saying it holds another segment's batches, past the next base, and (with index
    entries inside its range) that its offsets were lost with it."""
    log = _copied_over(tmp_path, 250, 125, indexes=indexes)
    report = verify_paths([str(tmp_path)])
    mine = [p for p in report.problems if p.file == str(log) and "another segment's batches" in p.message
            and p.severity != "info"]
    assert len(mine) == 1 and mine[0].severity == "error", [str(p) for p in report.problems if p.file == str(log)]
    assert "offsets 250..299" in mine[0].message and "next segment's base offset 250" in mine[0].message
    assert ("its own indexes name offsets" in mine[0].message) == indexes
    # its own range, missing "before" it as verify walks: with the entries, lost with the file, not "a segment file
    # missing from this copy, or compaction"
    generic = [p for p in report.problems if "missing before this segment" in p.message
               and "a segment file missing from this copy" in p.message]
    assert bool(generic) != indexes, [str(p) for p in generic]


def test_the_real_cleaned_segment_with_a_later_log_copied_over_it_is_lost(corpus_dir, tmp_path):
    """Real broker bytes (docker-connect-status-3, cleaner checkpoint 157): segment 0's .log replaced by segment
    157's; its own .timeindex names offset 156: a strict read raises LostTailError at 0.log byte 0, a lenient one
    lists 0..156 in lost_tails and returns segment 157's records once. (Before: 154..156 silently missing.)
    /tmp/dmg/keep/s1125 was this copy."""
    whole = kafkaseg.read_arrow(str(_status3(corpus_dir, tmp_path / "whole").parent)).column("offset").to_pylist()
    folder = _status3(corpus_dir, tmp_path / "copied")
    log = folder / f"{0:020d}.log"
    shutil.copy(folder / f"{157:020d}.log", log)
    with pytest.raises(kafkaseg.LostTailError) as info:
        kafkaseg.read_arrow(str(tmp_path / "copied"))
    assert (info.value.path, info.value.position) == (str(log), 0)
    assert "another segment's batches" in str(info.value) and "offsets 157..234" in str(info.value)
    lenient = kafkaseg.open_scan(str(tmp_path / "copied"), failOnDataLoss="false")
    assert lenient.to_table().column("offset").to_pylist() == whole[3:]
    (lost,) = lenient.metrics.lost_tails
    assert (lost[0], lost.first_offset, lost.end_offset) == (str(log), 0, 157)
    assert not lenient.metrics.missing_offsets
    report = verify_paths([str(tmp_path / "copied")])
    assert [p for p in report.problems if p.file == str(log) and p.severity == "error"
            and "another segment's batches" in p.message]


def test_another_copy_stands_in_for_the_foreign_log(tmp_path):
    """Two log dirs holding copies of the partition, the chosen one ("a", sorted first) with segment 0's .log
    replaced by segment 125's: a strict read reads segment 0's offsets from the other copy, as for a corrupt
    batch (the LostTailError is a CorruptDataError), every offset once, and says so in other_copies_read."""
    _copied_over(tmp_path / "b", 0, 0)  # (the whole partition: segment 0 over itself)
    shutil.copytree(tmp_path / "b", tmp_path / "a")
    folder = tmp_path / "a" / "t-0"
    log = folder / f"{0:020d}.log"
    log.write_bytes((folder / f"{125:020d}.log").read_bytes())
    scan = kafkaseg.open_scan([str(tmp_path / "a"), str(tmp_path / "b")])
    assert scan.to_table().column("offset").to_pylist() == list(range(RECORDS))
    (entry,) = scan.metrics.other_copies_read
    assert entry[:5] == (str(log), 0, 0, 125, str(tmp_path / "b" / "t-0"))
    assert not scan.metrics.lost_tails and not scan.metrics.missing_offsets


@pytest.mark.parametrize("proof", [True, False])
def test_an_earlier_segments_log_copied_over_a_rolled_one_is_lost_as_a_later_ones(tmp_path, proof):
    """Segment 125's .log replaced by segment 0's (every batch below its own base offset), its own indexes naming
    offsets inside its range, the recovery point above its base: the same verdict as a later segment's copy, a
    LostTailError at byte 0 saying the file holds another segment's batches below its base, failOnDataLoss=false
    and onCorruption=skip reading on with 125..249 in lost_tails, no corrupt batch counted. (Before: a
    CorruptBatchError "non-monotonic offsets" even with failOnDataLoss=false; a skip counted 25 corrupt batches.)
    Without ``proof`` (its indexes emptied): as before, corruption."""
    log = _copied_over(tmp_path, 0, 125, indexes=proof)
    if not proof:
        with pytest.raises(kafkaseg.CorruptDataError) as info:
            kafkaseg.read_arrow(str(tmp_path), failOnDataLoss="false")
        assert not isinstance(info.value, kafkaseg.LostTailError) and info.value.position == 0
        return
    with pytest.raises(kafkaseg.LostTailError) as info:
        kafkaseg.read_arrow(str(tmp_path))
    assert (info.value.path, info.value.position) == (str(log), 0)
    assert "another segment's batches (offsets 0..124, below its own base offset 125)" in str(info.value)
    kept = [o for o in range(RECORDS) if not 125 <= o < 250]
    for options in ({"failOnDataLoss": "false"}, {"onCorruption": "skip"}):
        scan = kafkaseg.open_scan(str(tmp_path), **options)
        assert scan.to_table().column("offset").to_pylist() == kept
        (lost,) = scan.metrics.lost_tails
        assert (lost[0], lost[1], lost.first_offset, lost.end_offset) == (str(log), 0, 125, 250)
        assert not scan.metrics.missing_offsets and not scan.metrics.decode.corrupt_batches


def test_one_batch_whose_offset_field_went_below_the_base_stays_corruption(tmp_path):
    """A rolled segment's first batch whose base offset field (outside the CRC) was lowered below the segment's
    base, so that it lies wholly below it, is no copy of an earlier segment (no earlier segment holds that batch,
    CRC and all): corruption, as before, not a lost tail."""
    import struct

    log = _copied_over(tmp_path, 125, 125)
    data = bytearray(log.read_bytes())
    struct.pack_into(">q", data, 0, 3)  # 125..129 -> 3..7
    log.write_bytes(bytes(data))
    with pytest.raises(kafkaseg.CorruptDataError) as info:
        kafkaseg.read_arrow(str(tmp_path), failOnDataLoss="false")
    assert not isinstance(info.value, kafkaseg.LostTailError) and info.value.position == 0


@pytest.mark.parametrize("indexes", [True, False])
def test_verify_names_an_earlier_segments_log_copied_over_a_rolled_one(tmp_path, indexes):
    """verify: beside the batches' own non-monotonic errors, one error at the .log's byte 0 saying every batch is
    below its base, another segment's batches, and (with index entries inside its range) its offsets lost."""
    log = _copied_over(tmp_path, 0, 125, indexes=indexes)
    report = verify_paths([str(tmp_path)])
    mine = [p for p in report.problems if p.file == str(log) and "another segment's batches" in p.message
            and p.severity != "info"]
    assert len(mine) == 1 and mine[0].severity == "error" and mine[0].position == 0, [str(p) for p in mine]
    assert "offsets 0..124, below its own base offset 125" in mine[0].message
    assert ("offsets 125..249 lost" in mine[0].message) == indexes


@pytest.mark.parametrize("source, target", [(125, 0), (0, 125)])
@pytest.mark.parametrize("indexes", [True, False])
def test_a_range_ending_inside_the_foreign_segment_is_judged_as_one_across_it(tmp_path, source, target, indexes):
    """A read whose range ends inside the replaced segment's offsets (before any batch its file holds): planned
    up to its first batch, it read nothing and said nothing. Now the segment is read and judged as a range across
    it is: with its indexes, the LostTailError at byte 0 (lenient: lost_tails up to the range's end); without, a
    later segment's copy is a gap (missing_offsets), an earlier one's corruption."""
    log = _copied_over(tmp_path, source, target, indexes=indexes)
    end = target + 50
    ending = f'{{"t":{{"0":{end}}}}}'
    kept = list(range(target))
    if indexes:
        with pytest.raises(kafkaseg.LostTailError) as info:
            kafkaseg.read_arrow(str(tmp_path), endingOffsets=ending)
        assert (info.value.path, info.value.position) == (str(log), 0)
        scan = kafkaseg.open_scan(str(tmp_path), endingOffsets=ending, failOnDataLoss="false")
        assert scan.to_table().column("offset").to_pylist() == kept
        assert [(p.first_offset, p.end_offset) for p in scan.metrics.lost_tails] == [(target, end)]
    elif source > target:
        scan = kafkaseg.open_scan(str(tmp_path), endingOffsets=ending)
        assert scan.to_table().column("offset").to_pylist() == kept
        assert scan.metrics.missing_offsets == [(str(log), target, end)]
    else:
        with pytest.raises(kafkaseg.CorruptDataError) as info:
            kafkaseg.read_arrow(str(tmp_path), endingOffsets=ending)
        assert info.value.position == 0


@pytest.mark.parametrize("source, target", [(125, 0), (250, 125), (0, 125)])
def test_describe_and_locate_say_what_the_read_raises(tmp_path, capsys, source, target):
    """describe (an error) and locate of an offset of the segment's range (the read's error, exit 2; lenient, the
    offset lost with the file, at its byte 0) say the file holds another segment's batches, as the read does.
    (Before: describe said nothing, locate answered the next segment's first offset; for an earlier segment's
    copy a start inside called it "a rolled segment cut short" at the file's end, and locate called its batches
    damage: strictly "non-monotonic offsets" at byte 0, leniently each batch gone past and the offsets
    "unreadable", where a read says lost_tails.)"""
    import json

    from kafkaseg.cli.main import main

    log = _copied_over(tmp_path, source, target)
    assert main(["describe", "--json", str(tmp_path)]) == 2
    (part,) = json.loads(capsys.readouterr().out)["partitions"]
    said = [e for e in part["errors"] if "another segment's batches" in e]
    assert len(said) == 1 and f"{log} @ byte 0" in said[0], part["errors"]
    locate = ["locate", "--data-dir", str(tmp_path), "--topic", "t", "--partition", "0", "--offset", str(target + 10)]
    code = main(locate)
    out, err = capsys.readouterr()
    assert code == 2 and f"{log} @ byte 0" in err and "another segment's batches" in err, (out, err)
    code = main([*locate, "--on-corruption", "skip", "--json"])
    said = capsys.readouterr()
    location = json.loads(said.out)["location"]
    assert code == 1 and location["found"] is False and location["recordOffset"] == NEXT[target]
    assert f"offset {target + 10} was lost with" in location["reason"], location["reason"]
    assert "another segment's batches" in location["reason"] and f"{log} @ byte 0" in location["reason"]
    assert "went past damage" not in said.err, said.err
    with pytest.raises(kafkaseg.DataLossError) as info:
        kafkaseg.read_arrow(str(tmp_path), startingOffsets=f'{{"t":{{"0":{target + 10}}}}}')
    assert "another segment's batches" in str(info.value) and f"{log} @ byte 0" in str(info.value)


@pytest.mark.parametrize("source, target", [(125, 0), (0, 125)])
def test_locate_past_a_foreign_log_the_recovery_point_does_not_prove_lost_reads_on_as_the_read(tmp_path, capsys,
                                                                                              source, target):
    """The recovery point at or below the replaced segment's base: its offsets possibly lost, not proven, which a
    strict read warns of (unreadable_tails) and reads on past. locate answers the next segment's first record,
    strictly too (exit 1), for an earlier segment's copy as for a later one's (before: strictly "non-monotonic
    offsets" at byte 0, exit 2; leniently each of its batches damage gone past)."""
    from kafkaseg.cli.main import main

    log = _copied_over(tmp_path, source, target)
    set_recovery_point(tmp_path, target)
    scan = kafkaseg.open_scan(str(tmp_path))
    assert scan.to_table().column("offset").to_pylist() == [o for o in range(RECORDS)
                                                            if not target <= o < NEXT[target]]
    assert [(p[0], p.first_offset, p.end_offset) for p in scan.metrics.unreadable_tails] == [
        (str(log), target, NEXT[target])]
    locate = ["locate", "--data-dir", str(tmp_path), "--topic", "t", "--partition", "0", "--offset", str(target + 10)]
    for lenient in ([], ["--on-corruption", "skip"]):
        code = main([*locate, *lenient])
        out, err = capsys.readouterr()
        assert code == 1 and f"offset: {NEXT[target]} " in out and "damage" not in out + err, (lenient, out, err)


def _cli(argv, capsys):
    from kafkaseg.cli.main import main

    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_one_batch_raised_past_the_next_base_is_corruption_everywhere(tmp_path, capsys):
    """Segment 0 cut to its first batch, whose offset field (outside the CRC) was raised onto offsets 130..134 of
    segment 125, which holds other records there: no segment holds that batch as it is, so the read's corruption
    ("a corrupt offset field?") is what describe, locate (strict and lenient) and verify say too, not a segment
    lost with a .log holding another segment's batches. (Before: those four called it a foreign .log; /tmp/review-25
    probe1.)"""
    import json
    import struct

    log = _copied_over(tmp_path, 0, 0)
    data = bytearray(log.read_bytes())
    size = struct.unpack_from(">i", data, 8)[0] + 12
    first = struct.unpack_from(">q", data, 0)[0]
    struct.pack_into(">q", data, 0, first + 130)
    log.write_bytes(bytes(data[:size]))
    with pytest.raises(kafkaseg.CorruptDataError) as info:
        kafkaseg.read_arrow(str(tmp_path))
    assert not isinstance(info.value, kafkaseg.LostTailError) and info.value.position == 0
    foreign = "another segment's batches"
    code, out, _ = _cli(["describe", "--json", str(tmp_path)], capsys)
    (part,) = json.loads(out)["partitions"]
    assert not [e for e in part["errors"] if foreign in e], part["errors"]
    locate = ["locate", "--data-dir", str(tmp_path), "--topic", "t", "--partition", "0", "--offset", "10"]
    code, out, err = _cli(locate, capsys)
    assert foreign not in out + err, (out, err)
    code, out, err = _cli([*locate, "--on-corruption", "skip", "--json"], capsys)
    assert foreign not in out + err, (out, err)
    report = verify_paths([str(tmp_path)])
    assert not [p for p in report.problems if foreign in p.message], [str(p) for p in report.problems]
    assert [p for p in report.problems if p.file == str(log) and p.severity == "error"]


def test_every_offset_field_lowered_below_the_base_is_corruption_everywhere(tmp_path, capsys):
    """Every offset field of segment 125 lowered by 125 (onto segment 0's offsets, whose batches hold other records):
    no earlier segment holds these batches as they are, so the read's non-monotonic corruption is what verify and
    describe say too; describe calls the whole file no segment "cut short" at its end. (Before: verify said a foreign
    .log with 125..249 lost, describe "a rolled segment cut short @ byte 16150"; /tmp/review-25 probe3.)"""
    import json

    from kafkaseg.storage.segment import SegmentReader

    log = _copied_over(tmp_path, 125, 125)
    data = bytearray(log.read_bytes())
    with SegmentReader(str(log), None) as reader:
        positions = [h.position for h in reader.iter_headers(0)]
    import struct

    for at in positions:
        struct.pack_into(">q", data, at, struct.unpack_from(">q", data, at)[0] - 125)
    log.write_bytes(bytes(data))
    with pytest.raises(kafkaseg.CorruptDataError) as info:
        kafkaseg.read_arrow(str(tmp_path), failOnDataLoss="false")
    assert not isinstance(info.value, kafkaseg.LostTailError) and info.value.position == 0
    foreign = "another segment's batches"
    report = verify_paths([str(tmp_path)])
    assert not [p for p in report.problems if foreign in p.message], [str(p) for p in report.problems]
    assert [p for p in report.problems if p.file == str(log) and p.severity == "error"]
    code, out, _ = _cli(["describe", "--json", str(tmp_path)], capsys)
    (part,) = json.loads(out)["partitions"]
    assert not [e for e in part["errors"] if foreign in e or "cut short" in e], part["errors"]


def test_the_storage_rule_is_offsets_and_crc(tmp_path):
    """storage.foreign_log.outside_batches, the one rule of scan, layout and verify: a copied .log's batches are
    held elsewhere (base and last offsets and CRC), the same batches with every offset field moved by one batch
    are not (same CRC, other offsets), and a segment's own file is no outside batches at all."""
    import struct

    from kafkaseg.storage.foreign_log import outside_batches
    from kafkaseg.storage.layout import read_partition_dir
    from kafkaseg.storage.segment import SegmentReader

    log = _copied_over(tmp_path, 125, 0)
    pdir = read_partition_dir(str(tmp_path / "t-0"))
    assert outside_batches(pdir, 1, None) is None
    found = outside_batches(pdir, 0, None)
    assert found is not None and (found.first, found.last, found.below, found.held) == (125, 249, False, True)
    data = bytearray(log.read_bytes())
    with SegmentReader(str(log), None) as reader:
        positions = [h.position for h in reader.iter_headers(0)]
    for at in positions:
        struct.pack_into(">q", data, at, struct.unpack_from(">q", data, at)[0] + 5)
    log.write_bytes(bytes(data))
    found = outside_batches(read_partition_dir(str(tmp_path / "t-0")), 0, None)
    assert found is not None and (found.first, found.below, found.held) == (130, False, False)
