"""Offsets lost in tiered-storage copies are data loss, never taken for compaction: Kafka refuses remote storage for
a compacted topic (``LogConfig.validateNoRemoteStorageForCompactedTopic``, ``UnifiedLog.isRemoteLogEnabled``), so a
tiered topic's offsets that no file holds were deleted, not compacted away.

* a copy (or a local segment of a log dir read with its copies) gone between planning and reading, whose offsets
  no file holds when the read plans them again, where whether the files changed cannot be told (another host);
* a copy missing between two copies, or between the newest copy and the log dir's first segment, with no
  ``__remote_log_metadata`` to name it. Copies missing below the oldest one are remote retention's
  (``RemoteLogManager.cleanupExpiredRemoteLogSegments`` deletes from the oldest end): not a gap.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import kafkaseg
from kafkaseg.cli.main import main
from kafkaseg.errors import DataLossError
from kafkaseg.scan import ScanMetrics, read_slice
from kafkaseg.testing import TopicSpec, write_data_dir
from kafkaseg.testing.tiered import copy_to_tiered

LAYOUTS = ["aiven", "local"]
COLUMNS = ["topic", "partition", "offset", "timestamp", "timestampType", "key", "value"]


def _tiered(root: Path, layout: str, *, local_from: int | None = None):
    """A partition's rolled segments copied to remote storage in ``layout``; with ``local_from``, its log dir keeps
    only the segments from that rank on (local retention), its log-start-offset-checkpoint at the log's start.
    Returns (log dir, remote root, the rows of the whole log, the segments' base offsets)."""
    spec = TopicSpec("orders", records_per_partition=4000, records_per_batch=20, segment_bytes=24 * 1024,
                     index_interval_bytes=2048)
    write_data_dir(root / "data", [spec])
    folder = root / "data" / "orders-0"
    whole = kafkaseg.read_arrow(str(root / "data")).select(COLUMNS)
    copy_to_tiered(folder, root / "remote", layout=layout)
    bases = sorted(int(p.name[:-4]) for p in folder.glob("*.log"))
    assert len(bases) > 6
    if local_from is not None:
        for base in bases[:local_from]:
            for path in folder.glob(f"{base:020d}.*"):
                path.unlink()
        (root / "data" / "log-start-offset-checkpoint").write_text(f"0\n1\norders 0 {bases[0]}\n")
    return root / "data", root / "remote", whole, bases


def _copy_of(remote: Path, base: int) -> Path:
    (log,) = [p for p in remote.rglob("*.log") if int(p.name.split("-")[0]) == base]
    return log


def _drop_copy(remote: Path, base: int) -> Path:
    """Delete every object of the copy of the segment at ``base`` (a copy missing from the bucket)."""
    log = _copy_of(remote, base)
    for path in log.parent.glob(log.name.split(".")[0] + ".*"):
        path.unlink()
    return log


def _without(table: pa.Table, first: int, end: int) -> pa.Table:
    offsets = table["offset"]
    return table.filter(pc.or_(pc.less(offsets, first), pc.greater_equal(offsets, end)))


def _below(table: pa.Table, end: int) -> pa.Table:
    return table.filter(pc.less(table["offset"], end))


def _elsewhere(piece):
    """The slice as an executor on another host gets it: whether the partition's files changed since planning
    cannot be told there (device and inode numbers, status-change times are the planning host's)."""
    if piece.file_identity is None:
        return piece
    return replace(piece, file_identity=("another host",) + piece.file_identity[1:])


# -- finding 1: a copy gone after planning ------------------------------------------------------------------------

@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("with_log_dir", [False, True], ids=["copies-alone", "with-log-dir"])
def test_a_copy_gone_after_planning_is_lost_not_taken_for_compaction(tmp_path, layout, with_log_dir):
    for fail in (True, False):
        root = tmp_path / str(fail)
        data, remote, whole, bases = _tiered(root, layout, local_from=4 if with_log_dir else None)
        paths = [str(data), str(remote)] if with_log_dir else [str(remote)]
        expected = whole if with_log_dir else _below(whole, bases[-1])
        scan = kafkaseg.open_scan(paths, failOnDataLoss=str(fail).lower())
        assert scan.to_table().select(COLUMNS).equals(expected)
        slices = [_elsewhere(p) for p in scan.plan.slices]
        gone = _drop_copy(remote, bases[2])  # a lifecycle rule, a sync with --delete
        metrics = ScanMetrics()
        if fail:
            with pytest.raises(DataLossError, match="a tiered topic is never compacted") as raised:
                [b for p in slices for b in read_slice(p, scan.options, metrics)]
            assert f"offsets [{bases[2]}, {bases[3]})" in str(raised.value) and str(gone) in str(raised.value)
            # what deleted it: a copy in the bucket, not a segment of a log dir (retention, the log cleaner)
            assert "a remote copy deleted from the bucket" in str(raised.value)
            assert "log cleaner" not in str(raised.value)
            continue
        got = pa.Table.from_batches([b for p in slices for b in read_slice(p, scan.options, metrics)])
        assert got.select(COLUMNS).equals(_without(expected, bases[2], bases[3]))
        skipped = [entry for entry in metrics.vanished_segments if entry[3].startswith("skipped")]
        assert skipped == [(str(gone), bases[2], bases[3], "skipped (failOnDataLoss=false)")]
        assert not any("compacted away" in what for *_, what in metrics.vanished_segments)


def test_a_local_segment_and_its_copy_gone_after_planning_are_lost_to_local_retention_not_the_cleaner(tmp_path):
    data, remote, whole, bases = _tiered(tmp_path, "aiven", local_from=4)
    scan = kafkaseg.open_scan([str(data), str(remote)])
    slices = [_elsewhere(p) for p in scan.plan.slices]
    segment = data / "orders-0" / f"{bases[4]:020d}.log"
    for path in (data / "orders-0").glob(f"{bases[4]:020d}.*"):
        path.unlink()
    _drop_copy(remote, bases[4])
    with pytest.raises(DataLossError, match=f"offsets \\[{bases[4]}, {bases[5]}\\)") as raised:
        [b for p in slices for b in read_slice(p, scan.options, ScanMetrics())]
    assert str(segment) in str(raised.value) and "log cleaner" not in str(raised.value)
    assert "local retention" in str(raised.value)


def test_a_local_segment_gone_after_planning_is_still_read_from_its_copy_elsewhere(tmp_path):
    # local retention deleted the planned segment, which is in remote storage: read from there, on any host
    data, remote, whole, bases = _tiered(tmp_path, "local", local_from=4)
    scan = kafkaseg.open_scan([str(data), str(remote)])
    slices = [_elsewhere(p) for p in scan.plan.slices]
    for path in (data / "orders-0").glob(f"{bases[4]:020d}.*"):
        path.unlink()
    (data / "log-start-offset-checkpoint").write_text(f"0\n1\norders 0 {bases[0]}\n")
    metrics = ScanMetrics()
    got = pa.Table.from_batches([b for p in slices for b in read_slice(p, scan.options, metrics)])
    assert got.select(COLUMNS).equals(whole)
    ((path, _, _, what),) = metrics.vanished_segments
    assert path.endswith(f"{bases[4]:020d}.log") and "tiered-storage copy" in what and "compact" not in what


# -- finding 2: a copy missing between others, no __remote_log_metadata --------------------------------------------

@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("missing", [1, 3], ids=["between-copies", "below-the-log-dir"])
def test_a_copy_missing_below_the_log_dir_is_data_loss_naming_the_gap(tmp_path, layout, missing):
    data, remote, whole, bases = _tiered(tmp_path, layout, local_from=4)
    before = _copy_of(remote, bases[missing - 1])
    after = _copy_of(remote, bases[missing + 1]) if missing + 1 < 4 else data / "orders-0" / f"{bases[4]:020d}.log"
    _drop_copy(remote, bases[missing])
    paths = [str(data), str(remote)]
    gap = f"offsets [{bases[missing]}, {bases[missing + 1]})"
    with pytest.raises(DataLossError) as raised:
        kafkaseg.read_arrow(paths)
    assert gap in str(raised.value) and before.name in str(raised.value) and after.name in str(raised.value)
    scan = kafkaseg.open_scan(paths, failOnDataLoss="false")
    assert scan.to_table().select(COLUMNS).equals(_without(whole, bases[missing], bases[missing + 1]))
    assert [line for line in scan.plan.report.data_loss if gap in line]
    # a read wholly above the gap, or below it, loses nothing
    above = json.dumps({"orders": {"0": bases[missing + 1]}})
    assert kafkaseg.read_arrow(paths, startingOffsets=above).select(COLUMNS).equals(
        whole.filter(pc.greater_equal(whole["offset"], bases[missing + 1])))
    below = json.dumps({"orders": {"0": bases[missing]}})
    assert kafkaseg.read_arrow(paths, endingOffsets=below).select(COLUMNS).equals(_below(whole, bases[missing]))
    # a start inside the gap is in it too
    with pytest.raises(DataLossError, match=rf"offsets \[{bases[missing] + 1}, {bases[missing + 1]}\)"):
        kafkaseg.read_arrow(paths, startingOffsets=json.dumps({"orders": {"0": bases[missing] + 1}}))


@pytest.mark.parametrize("layout", LAYOUTS)
def test_a_copy_missing_between_copies_read_alone_is_data_loss_and_retention_is_not(tmp_path, layout):
    _, remote, whole, bases = _tiered(tmp_path, layout)
    _drop_copy(remote, bases[0])  # remote retention deletes the oldest first: the log starts at the next copy
    expected = _below(whole, bases[-1]).filter(pc.greater_equal(_below(whole, bases[-1])["offset"], bases[1]))
    assert kafkaseg.read_arrow(str(remote)).select(COLUMNS).equals(expected)
    before, after = _copy_of(remote, bases[2]), _copy_of(remote, bases[4])
    _drop_copy(remote, bases[3])
    with pytest.raises(DataLossError, match=rf"offsets \[{bases[3]}, {bases[4]}\)") as raised:
        kafkaseg.read_arrow(str(remote))
    assert before.name in str(raised.value) and after.name in str(raised.value)
    scan = kafkaseg.open_scan(str(remote), failOnDataLoss="false")
    assert scan.to_table().select(COLUMNS).equals(_without(expected, bases[3], bases[4]))
    assert [line for line in scan.plan.report.data_loss if f"[{bases[3]}, {bases[4]})" in line]


@pytest.mark.parametrize("with_log_dir", [False, True], ids=["copies-alone", "with-log-dir"])
def test_a_read_ending_inside_a_gap_names_where_the_next_copy_really_starts(tmp_path, with_log_dir):
    """Found in review: the gap clipped to the read's end said the next copy "starts at" that end (a gap of
    [196, 390) read to 206 said the next copy starts at 206; it starts at 390)."""
    data, remote, _, bases = _tiered(tmp_path, "local", local_from=4 if with_log_dir else None)
    after = _copy_of(remote, bases[3])
    _drop_copy(remote, bases[2])
    paths = [str(data), str(remote)] if with_log_dir else [str(remote)]
    end = bases[2] + 10
    with pytest.raises(DataLossError, match=rf"offsets \[{bases[2]}, {end}\) are in no tiered") as raised:
        kafkaseg.read_arrow(paths, endingOffsets=json.dumps({"orders": {"0": end}}))
    assert f"{after.name}, starts at {bases[3]}" in str(raised.value), str(raised.value)
    assert f"starts at {end}" not in str(raised.value)


def test_describe_and_verify_name_the_gaps_in_a_partitions_copies(tmp_path, capsys):
    data, remote, _, bases = _tiered(tmp_path, "local", local_from=4)
    _drop_copy(remote, bases[1])
    _drop_copy(remote, bases[3])
    gaps = [f"[{bases[1]}, {bases[2]})", f"[{bases[3]}, {bases[4]})"]
    assert main(["verify", str(data), str(remote)]) == 1
    out = capsys.readouterr().out
    lines = [line for line in out.splitlines() if "in no tiered-storage copy" in line]
    assert all(any(gap in line and "error" in line.lower() for line in lines) for gap in gaps), out
    assert main(["describe", str(data), str(remote)]) == 0
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith("orders-0: ") and "in no tiered-storage copy" in line]
    assert all(any(gap in line for line in lines) for gap in gaps), err
    # the copies alone: the gap between two of them, the log dir (which may hold it) not given
    assert main(["verify", str(remote)]) == 0
    out = capsys.readouterr().out
    assert any(gaps[0] in line and "warning" in line.lower() for line in out.splitlines()), out
    # remote retention's deletions, from the oldest copy, are no gap
    _drop_copy(remote, bases[0])
    assert main(["verify", str(remote)]) == 0
    out = capsys.readouterr().out
    assert gaps[0] not in out and f"[{bases[0]}, " not in out


@pytest.mark.parametrize("layout", LAYOUTS)
def test_the_log_dir_starting_inside_a_missing_copy_loses_the_offsets_below_it(tmp_path, layout):
    """The review's case: copies of [b0, b1) and [b2, ...) in the bucket, the copy of [b1, b2) missing, the log dir
    from inside it (its first segment's base between b1 and b2: a new leader rolled there). Before: read as the log
    dir alone (Aiven: from its first offset, the copies' offsets passed over without a word) or, without recorded
    ends (LocalTieredStorage), the first copy then the log dir, the offsets between read past unsaid."""
    from kafkaseg.wire.batch import iter_headers

    data, remote, whole, bases = _tiered(tmp_path, layout, local_from=1)
    folder = data / "orders-0"
    segment = folder / f"{bases[1]:020d}.log"
    heads = list(iter_headers(segment.read_bytes()))
    cut = heads[len(heads) // 2]
    (folder / f"{cut.base_offset:020d}.log").write_bytes(segment.read_bytes()[cut.position:])
    for path in folder.glob(f"{bases[1]:020d}.*"):
        path.unlink()
    _drop_copy(remote, bases[1])
    paths = [str(data), str(remote)]
    with pytest.raises(DataLossError, match=rf"offsets \[{bases[1]}, {cut.base_offset}\) are in no tiered"):
        kafkaseg.read_arrow(paths)
    got = kafkaseg.read_arrow(paths, failOnDataLoss="false").select(COLUMNS)
    assert got.equals(_without(whole, bases[1], cut.base_offset))  # in order, each offset once


# -- a copy whose content ends before its recorded end ---------------------------------------------------------------

def _cut_copy(tmp_path: Path, layout: str, rank: int = 1):
    """A partition whose second (``rank``) segment's copy lacks its last three batches (cut at a batch boundary),
    its manifest's endOffset (Aiven) still the segment's; the log dir keeps the segments from the 5th on. Returns
    (log dir, remote root, the rows of the whole log, the bases, the first offset not in the cut copy)."""
    from kafkaseg.wire.batch import iter_headers

    spec = TopicSpec("orders", records_per_partition=4000, records_per_batch=20, segment_bytes=24 * 1024,
                     index_interval_bytes=2048)
    write_data_dir(tmp_path / "data", [spec])
    folder = tmp_path / "data" / "orders-0"
    whole = kafkaseg.read_arrow(str(tmp_path / "data")).select(COLUMNS)
    bases = sorted(int(p.name[:-4]) for p in folder.glob("*.log"))
    segment = folder / f"{bases[rank]:020d}.log"
    cut = list(iter_headers(segment.read_bytes()))[-3]
    segment.write_bytes(segment.read_bytes()[:cut.position])
    for side in (".index", ".timeindex"):  # (no index entry past the cut: only the end offset says more)
        (folder / f"{bases[rank]:020d}{side}").write_bytes(b"")
    copy_to_tiered(folder, tmp_path / "remote", layout=layout)
    for base in bases[:4]:
        for path in folder.glob(f"{base:020d}.*"):
            path.unlink()
    (tmp_path / "data" / "log-start-offset-checkpoint").write_text(f"0\n1\norders 0 {bases[0]}\n")
    return tmp_path / "data", tmp_path / "remote", whole, bases, cut.base_offset


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("with_log_dir", [True, False], ids=["with-log-dir", "copies-alone"])
def test_a_copy_cut_short_at_a_batch_boundary_before_its_recorded_end_is_data_loss(tmp_path, layout, with_log_dir):
    """A copy whose last batches are not in it, its manifest's endOffset (Aiven) still the segment's: planning takes
    the recorded end and finds no gap, and the read ran past the offsets between its last batch and the next copy
    with only a missing_offsets entry. A tiered topic is never compacted: they are lost."""
    data, remote, whole, bases, cut = _cut_copy(tmp_path, layout)
    paths = [str(data), str(remote)] if with_log_dir else [str(remote)]
    expected = whole if with_log_dir else _below(whole, bases[-1])
    with pytest.raises(DataLossError, match=rf"offsets \[{cut}, {bases[2]}\) .*in no tiered-storage copy"):
        kafkaseg.read_arrow(paths)
    scan = kafkaseg.open_scan(paths, failOnDataLoss="false")
    assert scan.to_table().select(COLUMNS).equals(_without(expected, cut, bases[2]))


def test_the_last_copy_read_alone_cut_short_before_its_recorded_end_is_data_loss(tmp_path, capsys):
    """Found in review: the newest copy, read without a log dir, has no next segment for the read to find its
    missing offsets against, so the read ended at its last batch without a word while verify called it an error.
    The read now agrees: a DataLossError naming them, or with failOnDataLoss=false a data_loss note."""
    data, remote, whole, bases, cut = _cut_copy(tmp_path, "aiven", rank=-2)
    copy = _copy_of(remote, bases[-2])
    lost = f"offsets [{cut}, {bases[-1]})"
    with pytest.raises(DataLossError, match=re.escape(lost)) as raised:
        kafkaseg.read_arrow(str(remote))
    assert copy.name in str(raised.value) and "recorded end" in str(raised.value)
    scan = kafkaseg.open_scan(str(remote), failOnDataLoss="false")
    assert scan.to_table().select(COLUMNS).equals(_below(whole, cut))
    (said,) = scan.plan.report.data_loss
    assert lost in said and copy.name in said
    # a read that ends before the cut loses nothing; one that ends past it is told why the end is short
    assert kafkaseg.read_arrow(str(remote), endingOffsets=json.dumps({"orders": {"0": cut}})).select(
        COLUMNS).equals(_below(whole, cut))
    with pytest.raises(DataLossError, match=re.escape(lost)):
        kafkaseg.read_arrow(str(remote), endingOffsets=json.dumps({"orders": {"0": bases[-1]}}))
    # verify says the same of the copy
    assert main(["verify", str(remote), "--no-progress"]) == 1
    out = capsys.readouterr().out
    assert any(line.startswith("ERROR") and copy.name in line and f"offsets {cut}..{bases[-1] - 1}" in line
               for line in out.splitlines()), out


def test_verify_says_a_copy_ends_before_its_recorded_end(tmp_path, capsys):
    data, remote, _, bases, cut = _cut_copy(tmp_path, "aiven")
    copy = _copy_of(remote, bases[1])
    assert main(["verify", str(data), str(remote), "--no-progress"]) == 1
    out = capsys.readouterr().out
    assert any(line.startswith("ERROR") and copy.name in line and f"offsets {cut}..{bases[2] - 1}" in line
               and "manifest" in line for line in out.splitlines()), out


# -- review: a copy's end recorded in __remote_log_metadata ----------------------------------------------------------

def _compacted_then_tiered(tmp_path, layout, **copying):
    """A topic compacted before it went tiered: the first segment's last batch (offsets 50..54) removed by the
    cleaner, its copy's recorded end 54; copies in ``layout`` with their __remote_log_metadata, the first two
    segments gone from the log dir. Returns (paths to read, the whole log's rows, the copies written)."""
    from kafkaseg.remote_metadata import metadata_partition
    from kafkaseg.testing import Record, build_batch_v2
    from kafkaseg.testing.partition import PartitionWriter, write_offset_checkpoint, write_partition_metadata
    from kafkaseg.testing.tiered import copy_events, kafka_uuid, write_remote_log_metadata

    data = tmp_path / "data"
    folder = data / "t-0"
    topic_id = kafka_uuid("t")
    writer = PartitionWriter(folder)
    offset = 0
    for segment in range(3):
        for _ in range(10):
            writer.append(build_batch_v2([Record(offset + i, 1_700_000_000_000 + offset + i, b"k%d" % (offset + i),
                                                 b"v") for i in range(5)]))
            offset += 5
        if segment == 0:
            offset += 5  # the cleaner removed the segment's last batch whole, before the topic went tiered
        writer.roll(offset)
    writer.append(build_batch_v2([Record(offset, 1_700_000_000_000 + offset, b"k", b"v")]))
    writer.close()
    write_partition_metadata(folder / "partition.metadata", topic_id)
    write_offset_checkpoint(data / "log-start-offset-checkpoint", {("t", 0): 0})
    whole = kafkaseg.read_arrow(str(data)).select(COLUMNS)
    written = copy_to_tiered(folder, tmp_path / "remote", layout=layout, **copying)
    epochs = [tuple(map(int, line.split())) for line in (folder / "leader-epoch-checkpoint").read_text()
              .splitlines()[2:]]
    write_remote_log_metadata(data, copy_events(written, epochs, topic_id=topic_id),
                              partition=metadata_partition(topic_id, 0))
    bases = sorted(int(p.name[:-4]) for p in folder.glob("*.log"))
    assert bases[1] == 55
    for base in bases[:2]:  # local retention
        for path in folder.glob(f"{base:020d}.*"):
            path.unlink()
    return [str(data), str(tmp_path / "remote")], whole, written


@pytest.mark.parametrize("layout", LAYOUTS)
def test_a_copys_recorded_end_past_its_last_batch_is_no_gap(tmp_path, capsys, layout):
    """A topic compacted before it was made tiered (Kafka refuses remote storage only while cleanup.policy holds
    compact: switching to delete first is allowed) has segments whose last offsets the cleaner removed. Their
    copies' recorded ends (an Aiven manifest's; for LocalTieredStorage copies, which record none,
    ``__remote_log_metadata``'s: RemoteLogManager records the next segment's base - 1) say offsets after a copy's
    last batch up to there are the copy's: no copy is missing, for a read or for verify."""
    paths, whole, _ = _compacted_then_tiered(tmp_path, layout)
    scan = kafkaseg.open_scan(paths, subscribe="t")
    assert scan.to_table().select(COLUMNS).equals(whole)
    assert not scan.plan.report.data_loss
    assert main(["verify", *paths]) == 0
    assert "in no tiered-storage copy" not in capsys.readouterr().out


@pytest.mark.parametrize("stored", ["compressed", "encrypted"])
def test_a_compressed_or_encrypted_copys_recorded_size_is_its_segments(tmp_path, capsys, stored):
    """RemoteLogManager records a copy's segmentSizeInBytes from the local segment (LogSegment.size), before the
    remote storage manager compresses or encrypts it: copy_events must record that size, not the stored object's,
    and a copy whose recorded end is past its last batch (compacted before the topic went tiered) is then whole
    for a read and for verify, stored as it may be."""
    from kafkaseg.testing.tiered import aiven_encryptor, make_key_pair

    copying, ring = {"compression": True, "chunk_size": 1000}, []
    if stored == "encrypted":
        key_pair = make_key_pair(tmp_path / "keys", "k1")
        copying = {"encryptor": aiven_encryptor(key_pair)}
        ring = ["--tiered-key-ring", key_pair.ring_option]
    paths, whole, written = _compacted_then_tiered(tmp_path, "aiven", **copying)
    assert all(p.stat().st_size != json.loads(p.with_suffix(".rsm-manifest").read_text())["chunkIndex"][
        "originalFileSize"] for p in written)  # (stored other than as it was)
    options = {"tieredKeyRing": ring[1]} if ring else {}
    scan = kafkaseg.open_scan(paths, subscribe="t", **options)
    assert scan.to_table().select(COLUMNS).equals(whole)
    assert not scan.plan.report.data_loss
    assert main(["verify", *ring, *paths]) == 0
    assert "in no tiered-storage copy" not in capsys.readouterr().out


def test_a_copy_smaller_than_its_recorded_size_loses_the_offsets_after_its_last_batch(tmp_path):
    """The same copies with the first one's last batch cut off after the upload: __remote_log_metadata records a
    size the copy no longer has, so the offsets after its last batch up to its recorded end are lost, not compacted
    away (the metadata's end alone cannot tell them apart)."""
    from kafkaseg.wire.batch import iter_headers

    paths, whole, written = _compacted_then_tiered(tmp_path, "local")  # (a LocalTieredStorage copy: its plain file)
    first = min(written, key=lambda p: p.name)
    data = first.read_bytes()
    last = list(iter_headers(data))[-1]
    first.write_bytes(data[:last.position])
    with pytest.raises(DataLossError, match=r"offsets \[45, 55\)"):
        kafkaseg.read_arrow(paths, subscribe="t")


@pytest.mark.parametrize("layout", LAYOUTS)
def test_the_last_copy_read_alone_with_the_metadata_ends_where_it_says(tmp_path, layout):
    """The newest copy read without a log dir, with __remote_log_metadata: when the metadata records it with the
    size it has, the offsets after its last batch up to its recorded end were compacted away before the topic went
    tiered (no loss; the live copies the metadata lists above it, missing, are); the same copy with its last batch
    cut off since (a LocalTieredStorage copy: its plain file) loses them, as verify says."""
    from kafkaseg.remote_metadata import metadata_partition
    from kafkaseg.testing.tiered import kafka_uuid
    from kafkaseg.wire.batch import iter_headers

    paths, whole, written = _compacted_then_tiered(tmp_path, layout)
    first, *later = sorted(written, key=lambda p: p.name)
    for log in later:  # the first copy, whose last batch (45..49) the cleaner removed before, is the newest one
        for path in log.parent.glob(log.name[:-4] + ".*"):
            path.unlink()
    number = metadata_partition(kafka_uuid("t"), 0)
    metadata = Path(paths[0]) / f"__remote_log_metadata-{number}"
    alone = [paths[1], str(metadata)]
    scan = kafkaseg.open_scan(alone, subscribe="t", endingOffsets=json.dumps({"t": {"0": 50}}))
    assert scan.to_table().select(COLUMNS).equals(_below(whole, 50))
    assert not scan.plan.report.data_loss
    # the metadata still lists the later copies, missing from the bucket: the remote tier lost them, from 55 where
    # the next copy starts (50..54 were compacted away, not lost), which a read to latest is told
    scan = kafkaseg.open_scan(alone, subscribe="t", failOnDataLoss="false")
    assert scan.to_table().select(COLUMNS).equals(_below(whole, 50))
    (said,) = scan.plan.report.data_loss
    assert f"{later[0].name[21:-4]} (offsets 55-" in said and "offsets 50" not in said and "[50," not in said, said
    if layout == "aiven":
        return
    data = first.read_bytes()
    first.write_bytes(data[:list(iter_headers(data))[-1].position])  # its last batch, 40..44, gone since
    with pytest.raises(DataLossError, match=r"offsets \[45, 55\)"):
        kafkaseg.read_arrow(alone, subscribe="t")
    assert main(["verify", *alone, "--no-progress"]) == 1


# -- a start by timestamp: batch and stream alike ---------------------------------------------------------------------

@pytest.mark.parametrize("fail", [True, False], ids=["failOnDataLoss", "lenient"])
def test_a_stream_of_copies_started_by_timestamp_meets_a_gap_where_a_batch_read_does(tmp_path, fail):
    """Copies read alone, a copy missing between two others, a start by timestamp below it. A batch read over the
    gap loses it (a DataLossError; failOnDataLoss=false skips it); a stream from that timestamp loses it where its
    micro-batch reaches it, as a stream from the same offset does. Before, the stream's initial offsets resolved the
    timestamp over the whole range to latest, which raised before any record was read."""
    from kafkaseg.options import ReadOptions
    from kafkaseg.streaming import MicroBatchPlanner, from_offsets, poll_micro_batches

    _, remote, whole, bases = _tiered(tmp_path, "local")
    whole = _below(whole, bases[-1])  # (the copies end at the newest one)
    _drop_copy(remote, bases[3])
    at = whole.filter(pc.equal(whole["offset"], bases[1] + 10))["timestamp"][0]
    ts = at.value // 1000  # (milliseconds)
    first = pc.min(whole.filter(pc.greater_equal(whole["timestamp"], at))["offset"]).as_py()
    expected = _without(whole.filter(pc.greater_equal(whole["offset"], first)), bases[3], bases[4])
    gap = rf"offsets \[{bases[3]}, {bases[4]}\) are in no tiered-storage copy"
    piece = rf"offsets \[{bases[3]}, \d+\) are in no tiered-storage copy"  # (a micro-batch's part of the gap)
    option = {"failOnDataLoss": str(fail).lower()}
    if fail:
        with pytest.raises(DataLossError, match=gap):
            kafkaseg.read_arrow(str(remote), startingTimestamp=ts)
    else:
        scan = kafkaseg.open_scan(str(remote), startingTimestamp=ts, **option)
        assert scan.to_table().select(COLUMNS).equals(expected)
        assert any(re.search(gap, line) for line in scan.plan.report.data_loss)
    planner = MicroBatchPlanner(ReadOptions.from_options(
        {"path": str(remote), "startingTimestamp": ts, "maxOffsetsPerTrigger": 100, **option}, stream=True))
    assert from_offsets(planner.initial_offsets()) == {("orders", 0): first}
    batches, said = [], []
    with pytest.raises(DataLossError, match=piece) if fail else _nothing():
        for plan in poll_micro_batches(planner):
            said.extend(plan.data_loss)
            if plan.scan is not None:
                batches.extend(b for piece in plan.scan.slices for b in read_slice(piece, planner.options))
    got = pa.Table.from_batches(batches).select(COLUMNS)
    if fail:  # the micro-batches below the gap were read first, from the timestamp's offset on
        assert got.num_rows and got.equals(expected.slice(0, got.num_rows))
        assert pc.max(got["offset"]).as_py() < bases[3]
    else:
        assert got.equals(expected)
        assert any(re.search(piece, line) for line in said), said


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


@pytest.mark.parametrize("layout", ["aiven", "local"])
def test_a_torn_active_tail_is_judged_alike_with_and_without_the_copies(tmp_path, layout):
    """A log dir whose active segment lost its flushed tail (no high watermark, the recovery point past the readable
    end, no index files) raises the same TruncatedDataError read alone or with its tiered copies: the check that
    the folder is unchanged since the listing compares its own .log files, not the copies' (found in review: with
    the copies the read returned what was there without a word)."""
    from kafkaseg.errors import TruncatedDataError
    from kafkaseg.wire.batch import iter_headers

    data, remote, whole, bases = _tiered(tmp_path, layout, local_from=3)
    folder = data / "orders-0"
    active = sorted(folder.glob("*.log"))[-1]
    headers = list(iter_headers(active.read_bytes()))
    cut = headers[len(headers) // 2]
    active.write_bytes(active.read_bytes()[:cut.position])
    for suffix in (".index", ".timeindex"):
        active.with_suffix(suffix).unlink()
    for snapshot in folder.glob("*.snapshot"):
        if int(snapshot.name[:-9]) > cut.base_offset:
            snapshot.unlink()
    (data / "replication-offset-checkpoint").write_text("0\n0\n")
    (data / "recovery-point-offset-checkpoint").write_text(f"0\n1\norders 0 {whole.num_rows}\n")
    for paths in ([str(data)], [str(data), str(remote)]):
        with pytest.raises(TruncatedDataError) as info:
            kafkaseg.read_arrow(paths)
        assert (info.value.path, info.value.position) == (str(active), cut.position), paths
