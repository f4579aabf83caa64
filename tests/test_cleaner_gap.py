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


def _compacted(root, segments: int = 6, per_batch: int = 4, batches: int = 6, interval: int = 400):
    """A partition ``t-0`` of ``segments`` segments as the cleaner leaves them (benchmarks/bench_tools.py
    ``--compacted``): each rolled segment without its last batch, a gap before the next base that no index entry
    names; the recovery point, high watermark and cleaner checkpoint at the log end. Returns the log end."""
    from kafkaseg.testing import PartitionWriter, Record, build_batch_v2

    writer = PartitionWriter(root / "t-0", index_interval_bytes=interval, write_snapshots=False)
    offset = 0
    for k in range(segments):
        for j in range(batches):
            if j < batches - 1 or k == segments - 1:
                writer.append(build_batch_v2([Record(offset + n, 1_700_000_000_000 + offset + n, b"k", b"v" * 300)
                                              for n in range(per_batch)]))
            offset += per_batch
        if k < segments - 1:
            writer.roll(offset)  # (the batch before: the one the cleaner removed)
    log = writer.close()
    for name in ("recovery-point-offset-checkpoint", "replication-offset-checkpoint", "cleaner-offset-checkpoint"):
        write_offset_checkpoint(root / name, {("t", 0): log.log_end_offset})
    write_offset_checkpoint(root / "log-start-offset-checkpoint", {})
    return log.log_end_offset


def _count_opens(monkeypatch):
    """A Counter of files opened (RandomAccessReader) by path, from now on."""
    from collections import Counter

    import kafkaseg.storage.fs as fs

    opens, init = Counter(), fs.RandomAccessReader.__init__

    def counted(self, path, *args, **kwargs):
        opens[str(path)] += 1
        init(self, path, *args, **kwargs)

    monkeypatch.setattr(fs.RandomAccessReader, "__init__", counted)
    return opens


def test_rolled_cut_of_reads_each_file_of_a_compacted_segment_once(tmp_path, monkeypatch):
    """rolled_cut_of of a rolled segment with a compaction gap after its last batch (its indexes sound): one walk of
    its .log (from its .index's last entry, probed), one load of its .index and one probe of its .timeindex; the
    walk's last batch is the segment's end (log_end_offset's and _position_of_end's walks from the same entry),
    the probed entry the .index's (judge_rolled_end). (Before: the .log opened three times, the .index probed twice
    and loaded once; benchmarks/bench_tools.py --compacted.)"""
    from kafkaseg.storage.layout import discover, rolled_cut_of

    _compacted(tmp_path)
    (pdir,) = discover(str(tmp_path / "t-0"))
    opens = _count_opens(monkeypatch)
    for unflushed in (False, True):
        opens.clear()
        assert rolled_cut_of(pdir, 2, unflushed=unflushed) is None
        seg = pdir.segments[2]
        assert [opens[seg.log_path], opens[seg.index_path], opens[seg.timeindex_path]] == [1, 2, 1], opens
        assert sum(opens.values()) == 4, opens


def test_describe_and_verify_walk_a_compacted_segment_once_for_its_gap(tmp_path, capsys, monkeypatch):
    """describe's rolled-cut check of a compacted segment walks its .log with the file describe's row opened (two
    headers), from the offset index describe loaded, and takes the last entries of its .index and .timeindex from
    the indexes describe's row loaded (layout.last_entry_as_probed): no file opened again. verify's check of the gap
    after it walks the .log once after verify's own read, loads the .index once after verify's two loads and
    probes the .timeindex once after loading it. (Before: two more walks of the .log in each, and in verify one
    more probe of the .index; then describe's check opened the .log again and probed both index files.)"""
    import json

    _compacted(tmp_path)
    seg = str(tmp_path / "t-0" / f"{24:020d}")
    opens = _count_opens(monkeypatch)
    assert main(["describe", "--json", str(tmp_path / "t-0")]) == 0
    (part,) = json.loads(capsys.readouterr().out)["partitions"]
    assert not part["errors"], part
    assert [opens[seg + kind] for kind in (".log", ".index", ".timeindex")] == [1, 1, 1], opens
    opens.clear()
    report = verify_paths([str(tmp_path / "t-0")])
    assert not report.errors and all(p.severity == "info" for p in report.problems), report.problems
    assert [opens[seg + kind] for kind in (".log", ".index", ".timeindex")] == [2, 3, 2], opens


def _damage(rng, path):
    """One random change to the file at ``path`` (None: left alone): cut at a random byte, a bit flipped anywhere,
    zeros or garbage appended, removed."""
    import os

    if not path.exists() or rng.random() < 0.4:
        return
    data, what = bytearray(path.read_bytes()), rng.random()
    if what < 0.35:
        os.truncate(path, rng.randint(0, len(data)))
    elif what < 0.7 and data:
        data[rng.randrange(len(data))] ^= 1 << rng.randint(0, 7)
        path.write_bytes(bytes(data))
    elif what < 0.8:
        path.write_bytes(bytes(data) + bytes(rng.choice([4, 8, 12, 24])))
    elif what < 0.9:
        path.write_bytes(bytes(data) + bytes(rng.randrange(256) for _ in range(rng.choice([8, 12, 16]))))
    else:
        path.unlink()


def test_rolled_cut_of_answers_as_its_full_walks_do_on_damaged_compacted_segments(tmp_path, monkeypatch):
    """The one walk rolled_cut_of shares (layout._last_entry_walk: its last batch the segment's end, its .index
    probed and loaded once) changes no answer of it: compacted partitions (a gap after each rolled segment's last
    batch, the cleaner checkpoint at the log end) whose rolled .log, .index and .timeindex files are cut at random
    bytes, have a bit flipped anywhere, zeros or garbage appended, or are removed, random recovery points; each
    rolled segment judged with the offset index loaded by the caller and not, unflushed and not, with the shared
    walk and with the full walks (log_end_offset, _position_of_end, the .index probed again in judge_rolled_end);
    the shared walk also over the .log as the caller opened it and with the index files as it loaded them
    (``opened``, ``time_index``, ``as_loaded``: describe's row's files)."""
    import os
    import random
    import struct
    from collections import Counter

    import kafkaseg.storage.fs as fs
    import kafkaseg.storage.layout as layout
    from kafkaseg.errors import KafkaSegError
    from kafkaseg.storage.offset_index import OffsetIndex
    from kafkaseg.storage.time_index import TimeIndex

    rng, shared, ends_log, judge = (random.Random(1478), layout._last_entry_walk, layout._EntryWalk.ends_log,
                                    layout.judge_rolled_end)
    taken, cuts, judged = Counter(), 0, 0

    def counted(self, offset_index):
        answer = ends_log(self, offset_index)
        taken["walk ends the log"] += answer
        return answer

    def judged_with(*args, **kwargs):  # (cuts found with the .index as probed and loaded once)
        cut = judge(*args, **kwargs)
        taken["cut, the .index read once"] += cut is not None and kwargs.get("index_last") is not None
        return cut

    monkeypatch.setattr(layout._EntryWalk, "ends_log", counted)
    monkeypatch.setattr(layout, "judge_rolled_end", judged_with)
    for trial in range(40):
        root = tmp_path / f"r{trial}"
        log_end = _compacted(root, segments=rng.randint(3, 6), per_batch=rng.choice([1, 3, 4]),
                             batches=rng.randint(2, 8), interval=rng.choice([100, 400, 4096]))
        for log in sorted((root / "t-0").glob("*.log"))[:-1]:
            if rng.random() < 0.3:  # (cut short: its indexes name offsets past its batches)
                os.truncate(log, rng.randint(0, log.stat().st_size))
            for suffix in (".log", ".index", ".timeindex"):
                if rng.random() < 0.5:
                    _damage(rng, log.with_suffix(suffix))
            if rng.random() < 0.5 and log.with_suffix(".timeindex").exists():
                # (a time entry past the .index's last, below the next base, as a roll appends one)
                base, next_base = int(log.stem), min(int(p.stem) for p in log.parent.glob("*.log") if p > log)
                offset = rng.randint(max(base, next_base - 8), next_base - 1)
                with open(log.with_suffix(".timeindex"), "ab") as timeindex:
                    timeindex.write(struct.pack(">qi", 1_700_000_000_000 + offset, offset - base))
        write_offset_checkpoint(root / "recovery-point-offset-checkpoint",
                                {("t", 0): rng.choice([log_end, rng.randint(0, log_end)])})
        (pdir,) = layout.discover(str(root / "t-0"))
        for i in range(len(pdir.segments) - 1):
            seg = pdir.segments[i]
            try:  # (as describe loads them for the segment's row, and passes them)
                loaded = OffsetIndex.load(seg.index_path, seg.base_offset) if seg.index_path else None
            except KafkaSegError:
                loaded = None
            try:
                loaded_time = TimeIndex.load(seg.timeindex_path, seg.base_offset) if seg.timeindex_path else None
            except KafkaSegError:
                loaded_time = None
            for offset_index in (None, loaded):
                for unflushed in (False, True):
                    answers = []
                    # (the shared walk over the file the caller opened and with the index files as it loaded them,
                    # describe's row's; its own open; none)
                    for walk, opened in ((shared, True), (shared, False), (lambda *args, **kwargs: None, False)):
                        monkeypatch.setattr(layout, "_last_entry_walk", walk)
                        file = fs.RandomAccessReader(seg.log_path) if opened and os.path.exists(seg.log_path) else None
                        try:
                            cut = layout.rolled_cut_of(pdir, i, offset_index=offset_index, unflushed=unflushed,
                                                       **({"opened": file, "time_index": loaded_time,
                                                           "as_loaded": True} if opened else {}))
                            answers.append(None if cut is None else (cut.position, cut.first_offset,
                                                                     cut.end_offset, cut.proven, cut.message))
                        except Exception as err:  # (the same error either way)
                            answers.append((type(err).__name__, str(err)))
                        finally:
                            if file is not None:
                                file.close()
                    assert answers[0] == answers[1] == answers[2], (trial, i, offset_index is None, unflushed,
                                                                    answers)
                    cuts += answers[0] is not None
                    judged += 1
    assert judged > 300 and cuts > 50 and taken["walk ends the log"] > 50 and taken["cut, the .index read once"] > 5, (
        judged, taken, cuts)


def test_a_gaps_index_files_are_probed_at_once_on_object_storage(tmp_path, monkeypatch):
    """A strict read's check of a gap (scan._judge_rolled_cut -> layout.judge_rolled_end) on a filesystem that is
    not local probes the segment's .index and .timeindex at once (a HEAD and a GET each on S3: one round trip of
    waiting, not two), and answers as the probes one after the other do locally, cut or not, for every end. (Before:
    the .timeindex was probed after the .index; benchmarks/bench_s3.py --compacted.)"""
    import threading

    import pyarrow.fs as pafs

    import kafkaseg.storage.layout as layout
    from kafkaseg.storage._index_file import index_location

    _compacted(tmp_path)
    (pdir,) = layout.discover(str(tmp_path / "t-0"))
    remote = pafs.SubTreeFileSystem("/", pafs.LocalFileSystem())  # (local files, read as any object store's)
    seg, next_base = pdir.segments[2], pdir.segments[3].base_offset
    where = dict(base_offset=seg.base_offset, index=index_location(seg, "index"),
                 timeindex=index_location(seg, "timeindex"), recovery_point=pdir.recovery_point, unflushed=True)
    probe, together = layout.probed_last_entry, threading.Barrier(2, timeout=10)

    def waiting(*args, **kwargs):  # (each probe waits for the other: one after the other, the first never returns)
        together.wait()
        return probe(*args, **kwargs)

    monkeypatch.setattr(layout, "probed_last_entry", waiting)
    assert layout.judge_rolled_end(seg.log_path, seg.log_size, next_base - 4, next_base, filesystem=remote,
                                   **where) is None
    monkeypatch.setattr(layout, "probed_last_entry", probe)
    for end in range(seg.base_offset, next_base + 1):  # (cut at each offset: the indexes' last entries past some)
        for position in (0, seg.log_size // 2, seg.log_size):
            local = layout.judge_rolled_end(seg.log_path, position, end, next_base, filesystem=None, **where)
            far = layout.judge_rolled_end(seg.log_path, position, end, next_base, filesystem=remote, **where)
            assert (far is None) == (local is None) and (far is None or far.message == local.message), end
