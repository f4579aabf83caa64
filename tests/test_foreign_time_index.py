"""A ``.timeindex`` that is not its own segment's (swapped with, or copied from, another segment of the partition):
every time lookup (ListOffsets via PartitionLookup, planning's startingTimestamp/endingTimestamp, the CLI's
``offsets --time`` and ``locate --time``) must answer what the records say, checked against a brute force over
``read_arrow``, and say that the index was not used."""

from __future__ import annotations

import shutil
from pathlib import Path

import pyarrow as pa
import pytest

import kafkaseg
from kafkaseg.cli.main import main
from kafkaseg.lookup import MAX_TIMESTAMP, PartitionLookup
from kafkaseg.options import ReadOptions
from kafkaseg.planning import plan_scan
from kafkaseg.storage.layout import discover
from kafkaseg.testing import TopicSpec, write_data_dir

SPECS = {
    # several segments, several time-index entries each
    "v2": TopicSpec("t", records_per_partition=1200, records_per_batch=10, segment_bytes=16 * 1024,
                    index_interval_bytes=1024, ts_jitter_ms=0),
    "v2-jitter": TopicSpec("t", records_per_partition=1200, records_per_batch=10, segment_bytes=16 * 1024,
                           index_interval_bytes=1024, ts_jitter_ms=40, codec="lz4"),
    "magic1-gzip": TopicSpec("t", records_per_partition=800, magic=1, codec="gzip", segment_bytes=12 * 1024,
                             index_interval_bytes=1024, ts_jitter_ms=0),
}

# (kind, from segment, to segment): swap the two files, or copy the first over the second
DAMAGES = {
    "swap-0-1": ("swap", 0, 1),
    "swap-1-2": ("swap", 1, 2),
    "copy-0-over-1": ("copy", 0, 1),
    "copy-later-over-earlier": ("copy", 2, 0),
    "copy-earlier-over-later": ("copy", 0, 2),
}


@pytest.fixture(scope="module")
def originals(tmp_path_factory):
    root = tmp_path_factory.mktemp("foreign")
    for name, spec in SPECS.items():
        write_data_dir(root / name, [spec], seed=5)
    return root


def _damaged(originals, tmp_path, spec, damage) -> Path:
    root = tmp_path / "dir"
    shutil.copytree(originals / spec, root)
    indexes = sorted((root / "t-0").glob("*.timeindex"))
    assert len(indexes) >= 4
    kind, a, b = DAMAGES[damage]
    first, second = indexes[a], indexes[b]
    assert len(first.read_bytes()) >= 3 * 12 and first.read_bytes() != second.read_bytes()  # several entries
    if kind == "swap":
        held = first.read_bytes()
        first.write_bytes(second.read_bytes())
        second.write_bytes(held)
    else:
        second.write_bytes(first.read_bytes())
    return root


def _records(root) -> list[tuple[int, int]]:
    table = kafkaseg.read_arrow(str(root))
    stamps = table["timestamp"].cast(pa.timestamp("ms")).cast(pa.int64()).to_pylist()
    return sorted(zip(table["offset"].to_pylist(), stamps))


def brute_force(records, t: int) -> int | None:
    """The first offset whose record timestamp >= t (ListOffsets with sound indexes)."""
    return next((offset for offset, stamp in records if stamp >= t), None)


def _times(records) -> list[int]:
    stamps = sorted({stamp for _, stamp in records})
    picked = stamps[::max(1, len(stamps) // 30)] + [stamps[-1]]
    return sorted({t + d for t in picked for d in (0, 1)})


@pytest.mark.parametrize("damage", DAMAGES)
@pytest.mark.parametrize("spec", SPECS)
def test_lookup_answers_from_the_records_when_a_time_index_is_another_segments(originals, tmp_path, spec, damage):
    root = _damaged(originals, tmp_path, spec, damage)
    records = _records(root)
    assert records == _records(originals / spec)
    (pdir,) = discover(str(root))
    wrong, rebuilt = [], set()
    for t in _times(records):
        for exact in (True, False):  # the broker's linear scan, and --fast's binary search
            with PartitionLookup(pdir) as lookup:  # a fresh lookup per time: each must find the damage itself
                got = lookup.offset_for_timestamp(t, exact=exact)
                rebuilt |= {path for path, _ in lookup.stats.rebuilt_indexes}
            if got != brute_force(records, t):
                wrong.append((t, exact, got, brute_force(records, t)))
    assert wrong == []
    assert rebuilt  # said (stats.rebuilt_indexes)
    top = max(stamp for _, stamp in records)
    with PartitionLookup(pdir) as lookup:
        assert lookup.list_offset(MAX_TIMESTAMP).offset == next(o for o, s in records if s == top)


@pytest.mark.parametrize("damage", ["swap-0-1", "copy-earlier-over-later"])
def test_planning_timestamps_answer_from_the_records_and_report_the_index(originals, tmp_path, damage):
    root = _damaged(originals, tmp_path, "v2", damage)
    records = _records(root)
    times = _times(records)
    reasons = set()
    for start, end in zip(times[1:-8:3], times[8::3]):
        plan = plan_scan(str(root), ReadOptions.from_options({"startingTimestamp": start, "endingTimestamp": end}))
        want = (brute_force(records, start), brute_force(records, end))
        assert plan.report.offsets()[("t", 0)] == want, (start, end)
        reasons |= {why for _, why in plan.report.indexes_rebuilt}
    # the report says which index was not used and why, as for other insane indexes
    assert any(".timeindex" in why for why in reasons), reasons


@pytest.mark.parametrize("spec", ["v2", "magic1-gzip"])
def test_cli_offsets_and_locate_by_time_answer_from_the_records_and_say_so(originals, tmp_path, capsys, spec):
    root = _damaged(originals, tmp_path, spec, "copy-0-over-1")
    records = _records(root)
    bases = sorted(int(p.stem) for p in (root / "t-0").glob("*.log"))
    # a time inside segment 1's records, whose index now claims segment 0's timestamps
    t = next(stamp for offset, stamp in records if offset > (bases[1] + bases[2]) // 2) - 1
    want = brute_force(records, t)
    assert bases[1] < want < bases[2]
    code = main(["offsets", "--data-dir", str(root), "--topic", "t", "--time", str(t)])
    out = capsys.readouterr()
    assert (code, out.out.strip()) == (0, f"t:0:{want}")
    assert ".timeindex" in out.err and "not used" in out.err, out.err
    code = main(["locate", "--data-dir", str(root), "--topic", "t", "--partition", "0", "--time", str(t)])
    out = capsys.readouterr()
    assert code == 0 and f"offset {want}" in out.out.replace(":", ""), out.out
    assert ".timeindex" in out.err and "not used" in out.err, out.err


def test_a_segment_whose_log_runs_past_the_next_base_does_not_end_a_time_search(tmp_path, capsys):
    """A damaged copy: a magic-1 gzip partition with ``0.log`` copied in as ``37.log`` and a wrapper's CRC broken
    further on. Segment 0's batches past 37 are not its records (reads take offsets from 37 on from ``37.log``), but
    its time index, and one rebuilt from its log, reach their timestamps: the search picks segment 0, finds nothing
    below 37, and must go on to the segments after it rather than print no offset."""
    root = tmp_path / "dir"
    write_data_dir(root, [SPECS["magic1-gzip"]], seed=7)
    part = root / "t-0"
    logs = sorted(part.glob("*.log"))
    assert int(logs[1].stem) > 60
    shutil.copy(logs[0], part / f"{37:020d}.log")
    data = bytearray(logs[2].read_bytes())  # break the CRC of a wrapper in the middle of a later segment
    starts = [0]
    while starts[-1] < len(data):
        starts.append(starts[-1] + 12 + int.from_bytes(data[starts[-1] + 8:starts[-1] + 12], "big"))
    data[starts[len(starts) // 2] + 12] ^= 0xFF  # (the byte after offset and size: the legacy message's CRC)
    logs[2].write_bytes(bytes(data))
    records = _records_skipping(root)
    wrong = []
    for t in sorted({stamp for offset, stamp in records if 37 <= offset < int(logs[1].stem)}):
        want = brute_force(records, t)
        argv = ["offsets", "--data-dir", str(root), "--topic", "t", "--time", str(t)]
        # as a read with onCorruption=skip sees the records
        code = main(argv + ["--on-corruption", "skip"])
        out = capsys.readouterr().out.strip()
        if (code, out) != (0, f"t:0:{want}"):
            wrong.append((t, want, code, out))
        # strict: the right answer, or the error a strict read meets in 37.log (its batch below its base)
        code = main(argv)
        captured = capsys.readouterr()
        if (code, captured.out.strip()) != (0, f"t:0:{want}") and (code == 0 or "37.log" not in captured.err):
            wrong.append((t, want, code, captured.out.strip(), "strict"))
    assert wrong == []


def _records_skipping(root) -> list[tuple[int, int]]:
    table = kafkaseg.read_arrow(str(root), onCorruption="skip")
    stamps = table["timestamp"].cast(pa.timestamp("ms")).cast(pa.int64()).to_pylist()
    return sorted(zip(table["offset"].to_pylist(), stamps))


@pytest.mark.parametrize("damage", DAMAGES)
def test_timestamp_predicates_prune_no_records_when_a_time_index_is_another_segments(originals, tmp_path, damage):
    """``timestamp >= t`` pushed down prunes segments by their largest timestamp and skips what the time index proves
    older: neither may drop a record at or after ``t``."""
    from kafkaseg.planning import Predicates
    from kafkaseg.scan import Scan

    root = _damaged(originals, tmp_path, "v2", damage)
    records = _records(root)
    options = ReadOptions.from_options({})
    missing, reasons = [], set()
    for t in _times(records)[::2]:
        plan = plan_scan(str(root), options, Predicates(timestamp_range=(t, None)))
        reasons |= {why for _, why in plan.report.indexes_rebuilt}
        table = Scan(plan, options).to_table()
        got = set(table["offset"].to_pylist())
        lost = [offset for offset, stamp in records if stamp >= t and offset not in got]
        if lost:
            missing.append((t, len(lost)))
    assert missing == []
    assert any(".timeindex" in why for why in reasons), reasons  # the plan report says which index was not used


def test_lookup_job_answers_times_from_the_records(originals, tmp_path):
    """jobs/lookup.py (its Spark-free core, ``lookup_batches``) uses the same lookups."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("lookup_job", Path(__file__).resolve().parents[1] / "jobs/lookup.py")
    job = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(job)
    root = _damaged(originals, tmp_path, "v2", "copy-0-over-1")
    records = _records(root)
    times = _times(records)
    batch = pa.RecordBatch.from_pylist(
        [{"topic": "t", "partition": "0", "time": str(t), "offset": None} for t in times],
        schema=pa.schema([(n, pa.string()) for n in ("topic", "partition", "time", "offset")]))
    out = pa.Table.from_batches(list(job.lookup_batches([batch], [str(root)]))).to_pylist()
    got = {int(row["time"]): row["offset"] for row in out}
    hw = max(offset for offset, _ in records) + 1
    want = {t: (None if brute_force(records, t) is None or brute_force(records, t) >= hw else brute_force(records, t))
            for t in times}
    assert got == want


@pytest.mark.parametrize("field", ["timestamp-above-the-last", "offset-below-the-base", "negative-timestamp",
                                   "offset-above-the-last"])
def test_a_time_index_whose_first_entry_cannot_be_its_segments_is_not_used(originals, tmp_path, field):
    """Kafka's TimeIndex.sanityCheck compares the last entry with the first; the first entry (read anyway, for the
    preallocated-tail rule) must also not lie below the segment's base nor above the last entry's offset, nor have a
    negative timestamp (Kafka appends time index entries only above -1, no timestamp)."""
    import struct

    root = tmp_path / "dir"
    shutil.copytree(originals / "v2", root)
    index = sorted((root / "t-0").glob("*.timeindex"))[1]
    data = bytearray(index.read_bytes())
    timestamp, relative = struct.unpack_from(">qi", data, 0)
    last_timestamp, _ = struct.unpack_from(">qi", data, len(data) - 12)
    if field == "timestamp-above-the-last":
        struct.pack_into(">qi", data, 0, last_timestamp + 10_000, relative)
    elif field == "negative-timestamp":  # its top bit flipped (found by the damage campaign, on a real broker's
        # .timeindex): every time is at or above it, so the floor entry sent the search past the records before it
        struct.pack_into(">qi", data, 0, timestamp - (1 << 63), relative)
    elif field == "offset-above-the-last":  # a byte of its offset flipped (the damage campaign, a real broker's)
        struct.pack_into(">qi", data, 0, timestamp, relative + 0xFC00)
    else:
        struct.pack_into(">qi", data, 0, timestamp, -5)
    index.write_bytes(bytes(data))
    records = _records(root)
    base = int(index.stem)  # (and the times of the records before the first entry's offset, which it skips)
    before = [stamp for offset, stamp in records if base <= offset <= base + relative]
    _assert_answered_from_the_records(root, records, index, _times(records) + before,
                                      _times(records)[::4] + before)


def _assert_answered_from_the_records(root, records, index, times, plan_times):
    """Fresh lookups at ``times`` and planning's startingTimestamp at ``plan_times`` answer as the records say, and
    ``index``'s segment had its indexes rebuilt."""
    (pdir,) = discover(str(root))
    wrong, rebuilt = [], []
    for t in times:
        with PartitionLookup(pdir) as lookup:
            got = lookup.offset_for_timestamp(t)
            rebuilt += lookup.stats.rebuilt_indexes
        if got != brute_force(records, t):
            wrong.append((t, got, brute_force(records, t)))
    assert wrong == []
    assert any(path.endswith(f"{index.stem}.log") for path, _ in rebuilt), rebuilt
    for t in plan_times:
        plan = plan_scan(str(root), ReadOptions.from_options({"startingTimestamp": t}))
        if plan.report.offsets()[("t", 0)][0] != brute_force(records, t):
            wrong.append(("plan", t, plan.report.offsets()[("t", 0)][0], brute_force(records, t)))
    assert wrong == []


def _first_batch_end(log: Path) -> int:
    data = log.read_bytes()
    return 12 + int.from_bytes(data[8:12], "big")


@pytest.mark.parametrize("emptied", [False, True])
@pytest.mark.parametrize("flushed", [True, False])
def test_a_rolled_segment_cut_inside_its_first_batch_does_not_end_a_time_search(originals, tmp_path, capsys,
                                                                               flushed, emptied):
    """Found by a damage campaign (a real broker's __consumer_offsets copy): a rolled segment cut inside its first
    batch holds no record; its time index, past its end, is rebuilt empty, so the file's mtime was taken as its
    largest timestamp and a lenient search (``--on-corruption skip``) stopped there with no offset, while a lenient
    read returns the later segments' records, the first at or after the time among them. ``emptied``: cut to 0 bytes (no torn batch left
    to see; its own time index's entries past its end say it held records)."""
    root = tmp_path / "dir"
    shutil.copytree(originals / "v2", root)
    logs = sorted((root / "t-0").glob("*.log"))
    cut = logs[1]
    cut.write_bytes(b"" if emptied else cut.read_bytes()[:_first_batch_end(cut) // 2])
    recovery = int(logs[3].stem) if flushed else int(logs[1].stem)
    (root / "recovery-point-offset-checkpoint").write_text(f"0\n1\nt 0 {recovery}\n")
    table = kafkaseg.read_arrow(str(root), onCorruption="skip", failOnDataLoss="false")
    stamps = table["timestamp"].cast(pa.timestamp("ms")).cast(pa.int64()).to_pylist()
    records = sorted(zip(table["offset"].to_pylist(), stamps))
    assert not any(int(logs[1].stem) <= offset < int(logs[2].stem) for offset, _ in records)
    # times the lost segment's records had: the first record at or after each is the next segment's first
    times = [t for t in _times(_records(originals / "v2")) if brute_force(records, t) == int(logs[2].stem)]
    assert len(times) >= 2
    (pdir,) = discover(str(root))
    wrong = []
    for lenient in [True]:  # (strict: no answer, as a broker's search stopping in the segment; test_carried_edges)
        for t in times:
            for exact in (True, False):
                with PartitionLookup(pdir, lenient=lenient) as lookup:
                    got = lookup.offset_for_timestamp(t, exact=exact)
                if got != brute_force(records, t):
                    wrong.append((lenient, exact, t, got, brute_force(records, t)))
        argv = ["offsets", "--data-dir", str(root), "--topic", "t", "--time", str(times[0])]
        code = main(argv + (["--on-corruption", "skip"] if lenient else []))
        out = capsys.readouterr().out.strip()
        if (code, out) != (0, f"t:0:{brute_force(records, times[0])}"):
            wrong.append((lenient, "cli", code, out))
    assert wrong == []


def test_a_log_swapped_with_the_active_ones_and_a_foreign_time_index_does_not_end_a_lenient_time_search(
        originals, tmp_path):
    """Found by the damage campaign: segment 3's ``.log`` swapped with the active segment's, and its ``.timeindex``
    with segment 0's. Segment 3's file now holds the active segment's batches (past the next base: no record a read
    takes from it), whose timestamps send the search there; the lenient search skips them and went on to the next
    segment, which holds only older records, found none there and stopped with no offset. A lenient read returns
    the segments after it, where the first record at or after the time is: the search must go on to the next
    segment whose largest timestamp reaches the time."""
    root = tmp_path / "dir"
    shutil.copytree(originals / "v2", root)
    part = root / "t-0"
    logs, tix = sorted(part.glob("*.log")), sorted(part.glob("*.timeindex"))
    for a, b in ((logs[3], logs[-1]), (tix[0], tix[3])):
        held = a.read_bytes()
        a.write_bytes(b.read_bytes())
        b.write_bytes(held)
    _assert_lenient_lookups_answer_as_a_lenient_read(root)


def test_a_segment_whose_log_is_the_next_segments_copy_says_its_offsets_lost(originals, tmp_path):
    """Found by the damage campaign: segment 3's ``.log`` replaced by a copy of segment 4's (no cleaner checkpoint:
    a delete topic). Every batch in it is at or past the next base, so the read of segment 3 ends at its first batch
    having read none of its offsets, and said nothing of them. Its own indexes name offsets inside its range and
    the recovery point is above it, so they are lost with its file (tests/test_foreign_log.py): a strict read
    raises LostTailError at its byte 0, failOnDataLoss=false lists them in lost_tails. (Before this rule, the
    read listed them in missing_offsets, as after a segment whose batches end early.)"""
    root = tmp_path / "dir"
    shutil.copytree(originals / "v2", root)
    logs = sorted((root / "t-0").glob("*.log"))
    shutil.copy(logs[4], logs[3])
    with pytest.raises(kafkaseg.LostTailError) as info:
        kafkaseg.read_arrow(str(root))
    assert (info.value.path, info.value.position) == (str(logs[3]), 0)
    scan = kafkaseg.open_scan(str(root), failOnDataLoss="false")
    got = set(scan.to_table()["offset"].to_pylist())
    lost = set(range(int(logs[3].stem), int(logs[4].stem)))
    assert not got & lost
    said = {offset for p in scan.metrics.lost_tails for offset in range(p.first_offset, p.end_offset)}
    assert lost <= said, scan.metrics.as_dict()


@pytest.mark.parametrize("field", ["negative-timestamp", "offset-past-the-segment", "offset-a-batch-later"])
def test_a_time_index_whose_floor_entry_in_the_middle_is_damaged_is_not_used(originals, tmp_path, field):
    """One byte of a MIDDLE ``.timeindex`` entry flipped (the damage campaign): the floor search picks the damaged
    entry for the times around it, and the check of the floor entry against its batch must catch it. A negative
    timestamp (its top bit flipped) is no entry Kafka appends (only above -1, no timestamp); an entry whose offset
    lies past a batch that reaches the time cannot be the index's (its entry is the max timestamp so far, first
    reached in the entry's batch), nor one past the segment's batches."""
    import struct

    root = tmp_path / "dir"
    shutil.copytree(originals / "v2", root)
    index = sorted((root / "t-0").glob("*.timeindex"))[2]
    data = bytearray(index.read_bytes())
    at = (len(data) // 12 // 2) * 12
    assert 0 < at < len(data) - 12
    timestamp, relative = struct.unpack_from(">qi", data, at)
    _, next_relative = struct.unpack_from(">qi", data, at + 12)
    if field == "negative-timestamp":
        struct.pack_into(">qi", data, at, timestamp - (1 << 63), relative)
    elif field == "offset-past-the-segment":  # a byte of its offset flipped
        struct.pack_into(">qi", data, at, timestamp, relative ^ 0x1000)
    else:  # the batch after the entry's (records_per_batch 10): a time reached in the batch before it is skipped
        struct.pack_into(">qi", data, at, timestamp, relative + 10)
    index.write_bytes(bytes(data))
    records = _records(root)
    base = int(index.stem)
    around = [stamp + d for offset, stamp in records if base <= offset <= base + next_relative for d in (0, 1)]
    _assert_answered_from_the_records(root, records, index, _times(records) + around, around[::3])


def test_a_log_copied_over_a_later_segment_does_not_end_a_lenient_time_search(originals, tmp_path):
    """Found by the damage campaign: an earlier segment's ``.log`` copied over a later one's, so its batches lie
    below its base (a lenient read skips them). A lenient search for a time in the segment after it went on there,
    but checked that segment's time index floor entry with the copied segment's entry (kept from the segment it
    went past), found it in no batch, rebuilt the sound index, and answered no offset."""
    root = tmp_path / "dir"
    shutil.copytree(originals / "v2", root)
    logs = sorted((root / "t-0").glob("*.log"))
    logs[3].write_bytes(logs[1].read_bytes())
    base, end = int(logs[3].stem), int(logs[4].stem)  # (and the times the copied-over segment held)
    _assert_lenient_lookups_answer_as_a_lenient_read(
        root, [stamp for offset, stamp in _records(originals / "v2") if base <= offset < end])


def test_a_segment_whose_only_batch_has_a_zeroed_header_does_not_end_a_lenient_time_search(tmp_path):
    """Found by the damage campaign (a __consumer_offsets segment): the only batch (one record) of a segment zeroed
    from byte 15 reads as a magic 0 message (no timestamp), so the segment has no timestamped batch and, as on a
    broker, its file's mtime counted as its largest timestamp: a lenient search stopped there with no offset, while
    a lenient read skips the batch (its CRC fails) and returns the segments after it."""
    root = tmp_path / "dir"
    write_data_dir(root, [TopicSpec("t", records_per_partition=12, records_per_batch=1, segment_bytes=50,
                                    index_interval_bytes=1024, ts_jitter_ms=0)], seed=5)
    logs = sorted((root / "t-0").glob("*.log"))
    assert len(logs) >= 4
    data = bytearray(logs[1].read_bytes())
    data[15:] = bytes(len(data) - 15)
    logs[1].write_bytes(bytes(data))
    _assert_lenient_lookups_answer_as_a_lenient_read(root)


def _assert_lenient_lookups_answer_as_a_lenient_read(root, more_times=()):
    """Fresh lenient lookups answer the first offset at or after each time that a lenient read returns."""
    table = kafkaseg.read_arrow(str(root), onCorruption="skip", failOnDataLoss="false", upperBound="logEndOffset")
    stamps = table["timestamp"].cast(pa.timestamp("ms")).cast(pa.int64()).to_pylist()
    records = sorted(zip(table["offset"].to_pylist(), stamps))
    (pdir,) = discover(str(root))
    wrong = []
    for t in _times(records) + list(more_times):
        with PartitionLookup(pdir, lenient=True) as lookup:
            got = lookup.offset_for_timestamp(t)
        if got != brute_force(records, t):
            wrong.append((t, got, brute_force(records, t)))
    assert wrong == []
