"""A data dir whose files disagree with each other (a rolled segment that ends mid-batch, a segment holding another's
content, an index that points at the wrong bytes, a corrupt checkpoint) must raise, or be skipped with a count when
the user asked for lenient reads: never return fewer or repeated records without saying so."""

from __future__ import annotations

import shutil
import struct

import pytest

import kafkaseg
from kafkaseg.errors import CorruptBatchError, TruncatedDataError
from kafkaseg.offset_outlier import kept_batches
from kafkaseg.options import ReadOptions
from kafkaseg.planning import plan_scan
from kafkaseg.scan import ScanMetrics, read_slice
from kafkaseg.testing import PartitionWriter, Record, TopicSpec, build_batch_v2, write_data_dir
from kafkaseg.testing.partition import write_offset_checkpoint
from kafkaseg.wire.batch import iter_headers
from tests.offset_damage import CASES, damage

RECORDS = 600


@pytest.fixture(scope="module")
def rolled(tmp_path_factory):
    """One partition of several rolled segments (uncompressed, 10-record batches, small index interval)."""
    root = tmp_path_factory.mktemp("rolled")
    write_data_dir(root, [TopicSpec("t", records_per_partition=RECORDS, records_per_batch=10, vary_batch_size=False,
                                    segment_bytes=16 << 10, index_interval_bytes=1024)])
    logs = sorted((root / "t-0").glob("*.log"))
    assert len(logs) >= 4
    return root


@pytest.fixture
def copy(rolled, tmp_path):
    target = tmp_path / "dir"
    shutil.copytree(rolled, target)
    return target


def _offsets(table) -> list[int]:
    return table.column("offset").to_pylist()


def _logs(root):
    return sorted((root / "t-0").glob("*.log"))


def test_a_rolled_segment_ending_mid_batch_is_corruption_not_a_tail(copy):
    first = _logs(copy)[0]
    size = first.stat().st_size
    last = list(iter_headers(first.read_bytes()))[-1]
    with open(first, "r+b") as f:
        f.truncate(size - 10)  # the last batch of a rolled segment loses its end
    with pytest.raises(TruncatedDataError) as info:
        kafkaseg.read_arrow(str(copy))
    assert info.value.path.endswith(first.name) and info.value.position == last.position
    assert "not the partition's last" in str(info.value)

    scan = kafkaseg.open_scan(str(copy), onCorruption="skip")
    got = _offsets(scan.to_table())
    assert got == [o for o in range(RECORDS) if not last.base_offset <= o <= last.last_offset]
    assert scan.metrics.decode.corrupt_batches == 1 and scan.metrics.truncated_tails == []


def test_a_length_field_past_the_end_of_a_rolled_segment_raises(copy):
    first = _logs(copy)[0]
    headers = list(iter_headers(first.read_bytes()))
    third = headers[2]
    with open(first, "r+b") as f:
        f.seek(third.position + 8)
        f.write(struct.pack(">i", 1_000_000))  # runs past the file, far below maxBatchBytes
    with pytest.raises(TruncatedDataError) as info:
        kafkaseg.read_arrow(str(copy))
    assert info.value.position == third.position
    scan = kafkaseg.open_scan(str(copy), onCorruption="skip")
    got = set(_offsets(scan.to_table()))
    # what follows the bad length cannot be framed up to the segment's next offset index entry, where it resumes
    # (it skipped the rest of the file: what it lost then depended on where slices were cut)
    from kafkaseg.storage.offset_index import OffsetIndex

    entries = [p for p in OffsetIndex.load(str(first.with_suffix(".index")), 0).positions.tolist()
               if p > third.position]
    resume = min(entries) if entries else first.stat().st_size
    after = [h.base_offset for h in headers if h.position >= resume]
    lost = set(range(third.base_offset, after[0] if after else headers[-1].last_offset + 1))
    assert got == set(range(RECORDS)) - lost
    assert scan.metrics.decode.corrupt_batches == 1
    assert scan.metrics.decode.corrupt_bytes == resume - third.position


def test_the_active_segment_may_still_end_mid_batch(copy):
    active = _logs(copy)[-1]
    last = list(iter_headers(active.read_bytes()))[-1]
    with open(active, "r+b") as f:
        f.truncate(active.stat().st_size - 10)
    # (an append not flushed yet: the recovery point below it; one above it would say flushed offsets were lost)
    write_offset_checkpoint(copy / "recovery-point-offset-checkpoint", {("t", 0): last.base_offset})
    scan = kafkaseg.open_scan(str(copy), upperBound="logEndOffset")
    assert _offsets(scan.to_table()) == list(range(last.base_offset))
    assert [t[1] for t in scan.metrics.truncated_tails] == [last.position]


@pytest.mark.parametrize("indexes", [True, False])
def test_a_segment_holding_offsets_below_its_base_is_never_read_at_them(copy, indexes):
    """The second segment's file holds the first one's batches (all below its base): never returned. With its own
    index entries naming offsets of its range (and the recovery point above it), its offsets are lost with its
    file, a LostTailError (a CorruptBatchError) at byte 0, under a skip listed in lost_tails
    (tests/test_foreign_log.py); without them, corruption, every batch counted as skipped."""
    logs = _logs(copy)
    second = logs[1]
    shutil.copyfile(logs[0], second)  # the second segment's file now holds the first one's batches
    if not indexes:
        for suffix in (".index", ".timeindex"):
            second.with_suffix(suffix).write_bytes(b"")
    with pytest.raises(CorruptBatchError) as info:
        kafkaseg.read_arrow(str(copy))
    assert info.value.path.endswith(second.name) and info.value.position == 0
    assert isinstance(info.value, kafkaseg.LostTailError) == indexes
    scan = kafkaseg.open_scan(str(copy), onCorruption="skip")
    got = _offsets(scan.to_table())
    assert len(got) == len(set(got)), "no offset may be returned twice"
    second_base = int(second.stem)
    assert got == [o for o in range(RECORDS) if o < second_base or o >= int(logs[2].stem)]
    if indexes:
        assert scan.metrics.decode.corrupt_batches == 0
        assert [(p[0], p.first_offset, p.end_offset) for p in scan.metrics.lost_tails] == [
            (str(second), second_base, int(logs[2].stem))]
    else:
        assert scan.metrics.decode.corrupt_batches == len(list(iter_headers(logs[0].read_bytes())))


@pytest.mark.parametrize("back_to", ["the batch before", "an earlier one"])
def test_the_last_batch_with_its_base_offset_gone_back_is_corruption_not_a_shorter_log(copy, back_to):
    # the v2 CRC does not cover baseOffset: a last batch claiming offsets below its predecessor's would make the
    # log end there, and every record between silently unread (with no error, and exit 0 from the CLI)
    active = _logs(copy)[-1]
    headers = list(iter_headers(active.read_bytes()))
    last, before = headers[-1], headers[-2] if back_to == "the batch before" else headers[-5]
    with open(active, "r+b") as f:
        f.seek(last.position)
        f.write(struct.pack(">q", before.base_offset))
    with pytest.raises(CorruptBatchError, match="non-monotonic offsets") as info:
        kafkaseg.read_arrow(str(copy))
    assert info.value.path == str(active) and info.value.position == last.position
    scan = kafkaseg.open_scan(str(copy), onCorruption="skip")  # lenient: the log ends before the bad batch
    assert _offsets(scan.to_table()) == list(range(last.base_offset))
    assert any("non-monotonic offsets" in note for note in scan.plan.report.notes)


@pytest.mark.parametrize("indexed", [True, False])
def test_a_last_batch_gone_back_is_found_whether_or_not_an_index_entry_points_at_it(tmp_path, indexed):
    # an entry at the bad batch itself: the walk from it sees no batch before; the log not reaching the entry's
    # offset gives it away. No entry after the batch before: that batch is in the walk
    from kafkaseg.testing import PartitionWriter, Record, build_batch_v2
    from kafkaseg.testing.partition import write_offset_checkpoint

    writer = PartitionWriter(tmp_path / "t-0", index_interval_bytes=1 if indexed else 1 << 20)
    for start in range(0, 100, 10):
        writer.append(build_batch_v2([Record(o, 1_700_000_000_000 + o, b"k", b"v") for o in range(start, start + 10)]))
    writer.close(live=True)
    write_offset_checkpoint(tmp_path / "replication-offset-checkpoint", {("t", 0): 100})
    active = _logs(tmp_path)[-1]
    last = list(iter_headers(active.read_bytes()))[-1]
    with open(active, "r+b") as f:
        f.seek(last.position)
        f.write(struct.pack(">q", 50))  # 90..99 claims 50..59: the read would end at 60
    with pytest.raises(CorruptBatchError, match="non-monotonic offsets: batch base offset 50 follows offset 89"):
        kafkaseg.read_arrow(str(tmp_path))
    assert _offsets(kafkaseg.read_arrow(str(tmp_path), onCorruption="skip")) == list(range(90))


def _shift_index_entry(root, segment: int, entry: int, by: int) -> tuple[int, int]:
    """Move one ``.index`` entry's position by ``by`` bytes: entries stay increasing and inside the log, so the
    index passes every sanity check and still points at the wrong bytes. Returns the entry (offset, position)."""
    index = sorted((root / "t-0").glob("*.index"))[segment]
    data = bytearray(index.read_bytes())
    relative, position = struct.unpack_from(">ii", data, 8 * entry)
    struct.pack_into(">ii", data, 8 * entry, relative, position + by)
    index.write_bytes(bytes(data))
    return int(index.stem) + relative, position


@pytest.mark.parametrize("by", [7, -3])
def test_an_index_entry_pointing_inside_a_batch_is_rebuilt_not_trusted(copy, by):
    offset, _ = _shift_index_entry(copy, 0, 2, by)
    ending = json_offsets(offset + 6)
    scan = kafkaseg.open_scan(str(copy), startingOffsets=json_offsets(offset + 1), endingOffsets=ending)
    assert _offsets(scan.to_table()) == list(range(offset + 1, offset + 6))
    rebuilt = [reason for path, reason in scan.plan.report.indexes_rebuilt if path.endswith(_logs(copy)[0].name)]
    assert rebuilt and "points at the wrong bytes" in rebuilt[0]


def test_slices_are_never_cut_at_a_wrong_index_entry(copy):
    for entry in (1, 3, 5):
        _shift_index_entry(copy, 0, entry, 5)
    scan = kafkaseg.open_scan(str(copy), splitSize="2k")
    assert _offsets(scan.to_table()) == list(range(RECORDS))
    first = [s for s in scan.plan.slices if s.segment_index == 0]
    assert len(first) > 2
    headers = {h.position for h in iter_headers(_logs(copy)[0].read_bytes())}
    assert all(s.start_position in headers for s in first)
    assert scan.metrics.decode.corrupt_batches == 0 and scan.metrics.truncated_tails == []


def json_offsets(offset: int) -> str:
    return '{"t":{"0":%d}}' % offset


def test_max_batch_bytes_applies_to_finding_the_log_end(tmp_path):
    """A valid batch larger than the default limit is read when maxBatchBytes allows it, in every step that walks
    headers (log end offset, last stable offset), and refused with the limit that was set otherwise."""
    from kafkaseg.testing import Record, build_batch_v2

    tp = tmp_path / "big-0"
    tp.mkdir()
    small = build_batch_v2([Record(0, 0, b"k", b"v")])
    big = build_batch_v2([Record(1, 0, b"k", b"x" * (65 << 20))])
    (tp / ("0" * 20 + ".log")).write_bytes(small.data + big.data)
    for isolation in ("read_uncommitted", "read_committed"):
        table = kafkaseg.read_arrow(str(tmp_path), maxBatchBytes="128m", **{"kafka.isolation.level": isolation})
        assert _offsets(table) == [0, 1] and len(table.column("value")[1].as_py()) == 65 << 20
    with pytest.raises(CorruptBatchError, match="exceeds maxBatchBytes 33554432"):
        kafkaseg.read_arrow(str(tmp_path), maxBatchBytes="32m")


@pytest.mark.parametrize("name, content", [
    ("replication-offset-checkpoint", "0\n3\nt 0 100\nt 1 100\n"),  # declares 3 entries, holds 2
    ("log-start-offset-checkpoint", "0\n1\nt 0 abc\n"),
])
def test_a_corrupt_checkpoint_that_bounds_the_read_raises_unless_lenient(copy, name, content):
    from kafkaseg.errors import CorruptCheckpointError

    (copy / "meta.properties").write_text("version=0\nbroker.id=0\n")
    (copy / name).write_text(content)
    with pytest.raises(CorruptCheckpointError, match=name):
        kafkaseg.read_arrow(str(copy))
    scan = kafkaseg.open_scan(str(copy), onCorruption="skip")
    assert _offsets(scan.to_table()) == list(range(RECORDS))
    notes = [n for p in scan.plan.report.partitions for n in p.notes]
    assert any(name in n and "onCorruption=skip" in n for n in notes)
    # listed (per partition, naming the file) for the entry points to print with their metrics (found in review)
    assert sorted((d.partition, d.path) for d in scan.plan.report.lenient) == \
        sorted((p.name, str(copy / name)) for p in scan.plan.report.partitions)
    if name == "replication-offset-checkpoint":  # the log end is an explicit choice that needs no high watermark
        assert _offsets(kafkaseg.read_arrow(str(copy), upperBound="logEndOffset")) == list(range(RECORDS))


def test_a_start_past_the_available_end_is_data_loss_as_in_spark(rolled):
    """Spark's consumer meets OffsetOutOfRange there: an error under failOnDataLoss, else nothing read."""
    from kafkaseg.errors import DataLossError

    with pytest.raises(DataLossError, match="starting offset 100000 is above the available end 600"):
        kafkaseg.read_arrow(str(rolled), startingOffsets=json_offsets(100_000))
    scan = kafkaseg.open_scan(str(rolled), startingOffsets=json_offsets(100_000), failOnDataLoss="false")
    assert scan.to_table().num_rows == 0
    assert any("starting offset 100000" in m for m in scan.plan.report.data_loss)
    assert kafkaseg.read_arrow(str(rolled), startingOffsets=json_offsets(RECORDS)).num_rows == 0  # at the end


def test_an_assigned_partition_missing_from_disk_fails(rolled):
    from kafkaseg.errors import InvalidOptionError

    with pytest.raises(InvalidOptionError, match="'assign' .* t-7"):
        kafkaseg.read_arrow(str(rolled), assign='{"t":[0,7]}')
    assert kafkaseg.read_arrow(str(rolled), assign='{"t":[0]}').num_rows == RECORDS


@pytest.mark.parametrize("kind", ["v2", "v1 gzip wrapper"])
def test_index_entries_holding_an_appends_first_offset_are_trusted(tmp_path, kind):
    """Kafka 0.8 to 1.x indexed an append's FIRST offset (later brokers its largest, the cleaner its largest retained
    one), and a legacy compressed wrapper's offset is its last inner one: such entries are right and must not be
    taken for wrong ones (found in review: each sent its segment through an in-memory rebuild, reported as wrong)."""
    from kafkaseg.testing.partition import SegmentWriter
    from kafkaseg.testing.writer import Record, build_batch_v2, build_legacy_wrapper

    ts = 1_600_000_000_000
    writer = SegmentWriter(tmp_path / "t-0", 0, index_interval_bytes=200)
    for b in range(40):
        records = [Record(b * 10 + i, ts + b * 10 + i, b"k", b"v" * 40) for i in range(10)]
        batch = build_batch_v2(records) if kind == "v2" else build_legacy_wrapper(records, 1, "gzip")
        writer.append(batch.data, last_offset=b * 10, max_timestamp=ts + b * 10 + 9)  # the entry: first offset
    writer.close()
    for options in (dict(startingOffsets=json_offsets(155)), dict(splitSize="1k"), dict(minPartitions=8),
                    dict(startingTimestamp=str(ts + 200))):
        scan = kafkaseg.open_scan(str(tmp_path), **options)
        first = {"startingOffsets": 155, "startingTimestamp": 200}.get(next(iter(options)), 0)
        assert _offsets(scan.to_table()) == list(range(first, 400)), options
        assert scan.plan.report.indexes_rebuilt == [], options


def _shift_entries(root, keep=lambda relative: False, by=5):
    index = sorted((root / "t-0").glob("*.index"))[0]
    data = bytearray(index.read_bytes())
    for e in range(len(data) // 8):
        relative, position = struct.unpack_from(">ii", data, 8 * e)
        if not keep(relative):
            struct.pack_into(">ii", data, 8 * e, relative, position + by)
    index.write_bytes(bytes(data))


def test_min_partitions_never_cuts_at_a_wrong_index_entry(copy):
    _shift_entries(copy)
    for options in (dict(minPartitions=12), dict(splitSize="2k", minPartitions=40)):
        scan = kafkaseg.open_scan(str(copy), **options)
        assert _offsets(scan.to_table()) == list(range(RECORDS)), options
        heads = {h.position for h in iter_headers(_logs(copy)[0].read_bytes())}
        assert all(s.start_position in heads for s in scan.plan.slices if s.segment_index == 0)
        assert scan.metrics.decode.corrupt_batches == 0


def test_a_rebuild_for_one_piece_recuts_the_other_pieces_of_the_segment(tmp_path):
    """Filter pushdown gives one segment two pieces; the first one's split finds a wrong entry and rebuilds the
    index, and the second must then be cut at the rebuilt entries, not at the wrong ones listed before."""
    from kafkaseg.options import ReadOptions
    from kafkaseg.planning import Predicates, plan_scan
    from kafkaseg.scan import Scan

    write_data_dir(tmp_path, [TopicSpec("t", records_per_partition=RECORDS, records_per_batch=10,
                                        vary_batch_size=False, segment_bytes=1 << 20, index_interval_bytes=1024)])
    _shift_entries(tmp_path, keep=lambda relative: not (20 < relative < 180 or 320 < relative < 580))
    heads = {h.position for h in iter_headers(_logs(tmp_path)[0].read_bytes())}
    options = ReadOptions.from_options({"splitSize": "2k"})
    plan = plan_scan(str(tmp_path), options, Predicates(offset_ranges=((0, 200), (300, 600))))
    assert len(plan.slices) > 4 and all(s.start_position in heads for s in plan.slices)
    scan = Scan(plan, options)
    assert _offsets(scan.to_table()) == list(range(0, 200)) + list(range(300, RECORDS))


def test_a_rolled_segment_past_the_recovery_point_may_be_torn_by_a_crash(copy):
    """Kafka flushes rolled segments lazily; after a crash, LogLoader recovers (truncates) the segments from the
    recovery point on. A torn tail there is an expected tail, reported; below the recovery point it is lost data."""
    logs = _logs(copy)
    torn = logs[2]
    (copy / "recovery-point-offset-checkpoint").write_text(f"0\n1\nt 0 {int(torn.stem)}\n")
    last = list(iter_headers(torn.read_bytes()))[-1]
    with open(torn, "r+b") as f:
        f.truncate(torn.stat().st_size - 10)
    scan = kafkaseg.open_scan(str(copy))
    assert _offsets(scan.to_table()) == [o for o in range(RECORDS) if not last.base_offset <= o <= last.last_offset]
    assert [(t[0].endswith(torn.name), t[1]) for t in scan.metrics.truncated_tails] == [(True, last.position)]
    below = logs[1]
    with open(below, "r+b") as f:
        f.truncate(below.stat().st_size - 10)
    with pytest.raises(TruncatedDataError, match="recovery point"):
        kafkaseg.read_arrow(str(copy))


def _same_without_index(root, **options):
    """(rows read with the .index files, rows read with them deleted) for ``options``."""
    got = _offsets(kafkaseg.read_arrow(str(root), onCorruption="skip", **options))
    for index in (root / "t-0").glob("*.index"):
        index.unlink()
    return got, _offsets(kafkaseg.read_arrow(str(root), **options))


def test_an_entry_shifted_onto_bytes_that_parse_as_a_header_is_still_caught(tmp_path):
    """Record values holding big-endian longs parse as a magic-0 message header with a small, plausible offset
    (found in review: such an entry passed and a lenient read lost every row after it). The batch at an entry must
    carry a valid CRC."""
    from kafkaseg.testing import PartitionWriter, Record, build_batch_v2

    writer = PartitionWriter(tmp_path / "t-0", index_interval_bytes=400, write_snapshots=False)
    for b in range(200):
        writer.append(build_batch_v2([Record(3 * b + i, 1_600_000_000_000, struct.pack(">q", 3 * b + i),
                                             struct.pack(">qqq", 3 * b + i, 1_600_000_000_000, 0))
                                      for i in range(3)]))
    writer.close()
    index = next((tmp_path / "t-0").glob("*.index"))
    data = bytearray(index.read_bytes())
    relative, position = struct.unpack_from(">ii", data, 0)
    struct.pack_into(">ii", data, 0, relative, position - 25)  # into the previous batch's values
    index.write_bytes(bytes(data))
    with_index, without = _same_without_index(tmp_path, startingOffsets=json_offsets(12))
    assert with_index == without == list(range(12, 600))


@pytest.mark.parametrize("kind", ["v1", "v1 gzip wrapper"])
def test_a_legacy_entry_pointing_at_a_later_message_is_caught(tmp_path, kind):
    """Legacy messages carry no base offset: the entry's offset must still not be below the first offset at its
    position (a wrapper's first inner offset comes from decoding it), or a read starting between them loses rows
    (found in review)."""
    from kafkaseg.testing.partition import SegmentWriter
    from kafkaseg.testing.writer import Record, build_legacy_entries, build_legacy_wrapper

    writer = SegmentWriter(tmp_path / "t-0", 0, index_interval_bytes=10**9)  # the test writes the .index
    positions = {}
    for first in range(0, 100, 5):
        records = [Record(o, 1_600_000_000_000 + o, b"k", b"v" * 30) for o in range(first, first + 5)]
        if kind == "v1":
            for record in records:
                positions[record.offset] = writer.append(build_legacy_entries([record], 1)[0].data,
                                                         last_offset=record.offset, max_timestamp=record.timestamp)
        else:
            positions[first] = writer.append(build_legacy_wrapper(records, 1, "gzip").data, last_offset=first + 4,
                                             max_timestamp=records[-1].timestamp)
    writer.close()
    entries = [(20, positions[20]), (50, positions[55]), (80, positions[80])]  # (50 -> a later message): wrong
    (tmp_path / "t-0" / ("0" * 20 + ".index")).write_bytes(b"".join(struct.pack(">ii", o, p) for o, p in entries))
    with_index, without = _same_without_index(tmp_path, startingOffsets=json_offsets(52))
    assert with_index == without == list(range(52, 100))


def test_corrupt_framing_does_not_stop_a_lenient_read_committed_plan(copy):
    """Without producer snapshots the last stable offset comes from walking every segment's headers; corrupt
    framing there failed lenient read_committed plans (found in review). It is noted and skipped instead."""
    for snapshot in (copy / "t-0").glob("*.snapshot"):
        snapshot.unlink()
    logs = _logs(copy)
    bad = []
    for log in (logs[0], logs[-1]):
        data = bytearray(log.read_bytes())
        header = list(iter_headers(bytes(data)))[-2]
        data[header.position + 16] = 9  # an unknown magic, its length intact
        log.write_bytes(bytes(data))
        bad.extend(range(header.base_offset, header.last_offset + 1))
    committed = {"kafka.isolation.level": "read_committed"}
    with pytest.raises(kafkaseg.KafkaSegError, match="unknown magic 9"):
        kafkaseg.read_arrow(str(copy), **committed)
    scan = kafkaseg.open_scan(str(copy), onCorruption="skip", **committed)
    assert _offsets(scan.to_table()) == [o for o in range(RECORDS) if o not in bad]
    assert scan.metrics.decode.corrupt_batches == 2
    assert any("last stable offset skips corrupt framing" in n for p in scan.plan.report.partitions for n in p.notes)


@pytest.mark.parametrize("segment", [0, -1])
def test_corrupt_framing_after_the_last_index_entry_is_never_a_short_log(tmp_path, segment):
    """The log end walk starts at a segment's last index entry; corrupt framing there made it return the segment's
    base offset as its end, without an error (found in review): a strict read of the active segment silently
    stopped at its base, and a rolled segment's time index looked past the log end."""
    from kafkaseg.testing import PartitionWriter, Record, build_batch_v2

    writer = PartitionWriter(tmp_path / "t-0", write_snapshots=True, index_interval_bytes=600)
    for b in range(30):
        if b == 20:
            writer.roll(200)
        writer.append(build_batch_v2([Record(o, 1_600_000_000_000 + o, b"k", b"v") for o in range(b * 10, b * 10 + 10)]))
    writer.close()
    log = _logs(tmp_path)[segment]
    data = bytearray(log.read_bytes())
    bad = list(iter_headers(bytes(data)))[-2]
    data[bad.position + 16] = 9  # an unknown magic, its length intact
    log.write_bytes(bytes(data))
    with pytest.raises(kafkaseg.KafkaSegError, match="unknown magic 9"):
        kafkaseg.read_arrow(str(tmp_path))
    for isolation in ("read_uncommitted", "read_committed"):
        scan = kafkaseg.open_scan(str(tmp_path), onCorruption="skip", **{"kafka.isolation.level": isolation})
        skipped = set(range(bad.base_offset, bad.last_offset + 1))
        if segment == -1:  # no high watermark: the log end steps over the corruption as the reader does, noted
            assert any("stepping over it as a lenient read does" in n for n in scan.plan.report.notes)
        assert _offsets(scan.to_table()) == [o for o in range(300) if o not in skipped], isolation
    if segment == -1:  # with the broker's high watermark a lenient read goes on through the corruption
        (tmp_path / "replication-offset-checkpoint").write_text("0\n1\nt 0 300\n")
        scan = kafkaseg.open_scan(str(tmp_path), onCorruption="skip")
        assert _offsets(scan.to_table()) == [o for o in range(300) if not bad.base_offset <= o <= bad.last_offset]
        with pytest.raises(kafkaseg.KafkaSegError, match="unknown magic 9"):
            kafkaseg.read_arrow(str(tmp_path))


def test_a_torn_append_above_the_high_watermark_does_not_fail_a_strict_read(tmp_path):
    """After a crash the active segment can end in a torn append that was never acknowledged (above the high
    watermark); Kafka's recovery truncates it and serves everything below. So does a strict read (found in review:
    it raised, before that it silently read nothing)."""
    from kafkaseg.testing import PartitionWriter, Record, build_batch_v2

    writer = PartitionWriter(tmp_path / "t-0", segment_bytes=1 << 20, index_interval_bytes=300)
    for b in range(30):
        writer.append(build_batch_v2([Record(o, 1_600_000_000_000 + o, b"k", b"v" * 20) for o in range(5 * b, 5 * b + 5)],
                                     producer_id=3, producer_epoch=0, base_sequence=5 * b))
    writer.close(live=True)
    (tmp_path / "replication-offset-checkpoint").write_text("0\n1\nt 0 140\n")
    with open(_logs(tmp_path)[-1], "ab") as f:
        f.write(struct.pack(">q", 150) + bytes(120))  # only the base offset reached the disk
    for isolation in ("read_uncommitted", "read_committed"):
        scan = kafkaseg.open_scan(str(tmp_path), **{"kafka.isolation.level": isolation})
        assert _offsets(scan.to_table()) == list(range(140)), isolation
    from kafkaseg.options import ReadOptions
    from kafkaseg.planning import Predicates, plan_scan

    timed = plan_scan(str(tmp_path), ReadOptions.from_options({}),
                      Predicates(timestamp_range=(1_600_000_000_100, None)))  # ms
    assert timed.slices and timed.report.partitions[0].upper_bound == 140
    (tmp_path / "replication-offset-checkpoint").write_text("0\n1\nt 0 150\n")
    assert _offsets(kafkaseg.read_arrow(str(tmp_path))) == list(range(150))  # 150 is the end before the tear


def test_large_compressed_batches_of_tiny_records_are_not_taken_for_garbage(tmp_path):
    """zstd packs small records under 7 bytes each; the header check for batches over 64 KiB must not assume the
    uncompressed minimum (found in review: every entry of such a segment was reported wrong and rebuilt)."""
    write_data_dir(tmp_path, [TopicSpec("t", records_per_partition=120_000, records_per_batch=20_000, codec="zstd",
                                        value_size=4, key_size=None, vary_batch_size=False,
                                        index_interval_bytes=4096)])
    scan = kafkaseg.open_scan(str(tmp_path), splitSize="64k", startingOffsets=json_offsets(50_000))
    assert _offsets(scan.to_table()) == list(range(50_000, 120_000))
    assert scan.plan.report.indexes_rebuilt == [] and len(scan.plan.slices) > 1


def test_a_preallocated_zero_tail_of_the_active_segment_is_not_data(copy):
    """log.preallocate=true leaves the active segment's unwritten space as zeros; a strict read must stop where
    they start (found in review: the slice ran over them and the decoder raised on a batch of size 0)."""
    with open(_logs(copy)[-1], "ab") as f:
        f.write(bytes(4096))
    for options in ({}, {"kafka.isolation.level": "read_committed"}, {"minPartitions": 8}):
        assert _offsets(kafkaseg.read_arrow(str(copy), upperBound="logEndOffset", **options)) == list(range(RECORDS))


def test_a_hole_of_zeros_before_more_data_is_not_a_preallocated_tail(copy):
    """Zeros followed by intact batches are a hole, not a tail: a strict read must raise, not stop at the zeros
    (found in review: records after the hole vanished without an error)."""
    active = _logs(copy)[-1]
    data = active.read_bytes()
    headers = list(iter_headers(data))
    cut = headers[-2].position
    active.write_bytes(data[:cut] + bytes(4096) + data[cut:])
    index = active.with_suffix(".index")  # its entries all before the hole, as they would have been flushed
    entries = index.read_bytes()
    index.write_bytes(b"".join(entries[k:k + 8] for k in range(0, len(entries), 8)
                               if struct.unpack(">ii", entries[k:k + 8])[1] < cut))
    with pytest.raises(CorruptBatchError):
        kafkaseg.read_arrow(str(copy), upperBound="logEndOffset")


def test_a_lenient_log_end_steps_over_corruption_only_where_the_reader_does(copy):
    """The decoders step over a batch with bad framing only onto a batch with a valid CRC; the lenient log end
    must do the same (found in review: it stepped over any number of bad batches by header alone, claiming
    offsets the read never reached, or a garbage offset)."""
    from kafkaseg.storage.layout import discover
    from kafkaseg.storage.segment import readable_end

    active = _logs(copy)[-1]
    original = active.read_bytes()
    headers = list(iter_headers(original))
    segment = next(p for p in discover(str(copy))).segments[-1]
    for bad, expected in ((headers[-3:-2], headers[-1].next_offset), (headers[-3:-1], headers[-3].base_offset)):
        data = bytearray(original)
        for h in bad:
            data[h.position + 16] = 9
        active.write_bytes(bytes(data))
        assert readable_end(segment, step_over=True)[0] == expected, len(bad)


def test_a_torn_write_whose_first_page_is_zeros_is_judged_by_the_high_watermark(copy):
    """The last write lost its first page but not the rest: zeros, then data. At or above the high watermark it was
    never acknowledged, so a strict read ends before it; below, it raises (found in review: it raised always)."""
    active = _logs(copy)[-1]
    data = active.read_bytes()
    last = list(iter_headers(data))[-1]
    torn = bytearray(data[last.position:])
    lost = min(4096, len(torn) - 32)
    torn[:lost] = bytes(lost)
    # (data after the zeros: a batch's own last byte is a record's header count, 0, so zeros up to it would run to
    # the end of the file, a preallocated tail, where the log ends as a file cut there does)
    assert any(torn[lost:])
    active.write_bytes(data[:last.position] + bytes(torn))
    (copy / "replication-offset-checkpoint").write_text(f"0\n1\nt 0 {last.base_offset}\n")
    assert _offsets(kafkaseg.read_arrow(str(copy))) == list(range(last.base_offset))
    (copy / "replication-offset-checkpoint").write_text(f"0\n1\nt 0 {RECORDS}\n")
    with pytest.raises(CorruptBatchError, match="zeros in the active segment"):
        kafkaseg.read_arrow(str(copy))


@pytest.mark.parametrize("high_watermark", ["above the zeros", "none", "at the zeros"])
def test_a_lenient_read_counts_the_corrupt_tail_planning_cuts_off(copy, high_watermark):
    """Zeros ending the active segment's batches with data after them, or acknowledged offsets past them: a strict
    read raises, a lenient one ends at the zeros. The rest of the segment was then skipped with only a plan note
    saying so, and the scan metrics counted no skip (found in review): it is one skipped corrupt region now,
    counted once per read, with its file and byte, as every skip. Zeros at or above the high watermark were never
    acknowledged (a torn write Kafka's recovery truncates): not corruption, nothing counted."""
    active = _logs(copy)[-1]
    data = active.read_bytes()
    last = list(iter_headers(data))[-1]
    torn = bytearray(data[last.position:])
    torn[:len(torn) // 2] = bytes(len(torn) // 2)  # the last write lost its first page
    active.write_bytes(data[:last.position] + bytes(torn))
    hw = {"above the zeros": RECORDS, "none": None, "at the zeros": last.base_offset}[high_watermark]
    (copy / "replication-offset-checkpoint").write_text("0\n0\n" if hw is None else f"0\n1\nt 0 {hw}\n")
    benign = high_watermark == "at the zeros"
    if not benign:
        with pytest.raises(CorruptBatchError, match="zeros in the active segment"):
            kafkaseg.read_arrow(str(copy))
    scan = kafkaseg.open_scan(str(copy), onCorruption="skip", splitSize=4096)  # the active segment in slices
    assert len([s for s in scan.plan.slices if s.log_path == str(active)]) > 1
    for _ in range(2):  # each read of the scan counts it, once
        assert _offsets(scan.to_table()) == list(range(last.base_offset))
        metrics = scan.metrics
        assert metrics.truncated_tails == []  # (not a partial batch being written)
        if benign:
            assert metrics.decode.corrupt_batches == 0 and metrics.corrupt_skips() == []
            continue
        assert metrics.decode.corrupt_batches == 1
        assert metrics.decode.corrupt_bytes == len(data) - last.position
        ((path, position, what),) = metrics.decode.problems
        assert (path, position) == (str(active), last.position) and "zeros in the active segment" in what
        assert [f"{active} at byte {last.position}" in line for line in metrics.corrupt_skips()] == [True]
        assert scan.plan.report.lenient == []  # counted as a skip, not also reported as a planning decision
    # a read that ends before the zeros skips nothing
    scan = kafkaseg.open_scan(str(copy), onCorruption="skip", endingOffsets=json_offsets(last.base_offset - 20))
    assert _offsets(scan.to_table()) == list(range(last.base_offset - 20))
    assert scan.metrics.decode.corrupt_batches == 0


def test_the_lenient_log_end_follows_verify_crc_like_the_reader(copy):
    """With verifyCrc=false the decoders step over a bad batch onto one whose CRC is wrong; the log end must agree
    (found in review: it demanded a valid CRC and cut the read short)."""
    from kafkaseg.storage.layout import discover
    from kafkaseg.storage.segment import readable_end

    active = _logs(copy)[-1]
    data = bytearray(active.read_bytes())
    headers = list(iter_headers(bytes(data)))
    data[headers[-3].position + 16] = 9  # bad framing
    data[headers[-2].position + 70] ^= 1  # the batch it steps onto: a wrong CRC
    active.write_bytes(bytes(data))
    segment = next(iter(discover(str(copy)))).segments[-1]
    assert readable_end(segment, step_over=True, verify_crc=False)[0] == headers[-1].next_offset
    assert readable_end(segment, step_over=True)[0] == headers[-3].base_offset


@pytest.mark.parametrize("indexes", ["kept", "missing"])
def test_a_lenient_timestamp_read_goes_past_bad_framing_as_the_read_does(copy, indexes):
    """startingTimestamp with onCorruption=skip raised at planning when the timestamp search met bad framing (a
    segment whose indexes had to be rebuilt, or a walk through it). The search now goes past it as the lenient
    read does (at the next index entry whose batch checks out, else at the next segment): a timestamp read returns
    what the whole lenient read returns from the first surviving record at or after the timestamp."""
    log = _logs(copy)[1]
    if indexes == "missing":
        log.with_suffix(".index").unlink()
        log.with_suffix(".timeindex").unlink()
    data = bytearray(log.read_bytes())
    header = list(iter_headers(bytes(data)))[len(list(iter_headers(bytes(data)))) // 3]
    struct.pack_into(">i", data, header.position + 8, 0x7FFFFFF0)  # an absurd length: the framing breaks here
    log.write_bytes(bytes(data))
    with pytest.raises(CorruptBatchError, match="absurd length"):
        kafkaseg.read_arrow(str(copy), startingTimestamp=str(1))
    whole = kafkaseg.read_arrow(str(copy), onCorruption="skip")
    offsets = _offsets(whole)
    stamps = [us // 1000 for us in whole.column("timestamp").cast("int64").to_pylist()]
    lost = sorted(set(range(RECORDS)) - set(offsets))
    assert lost and lost[0] == header.base_offset
    reference = {r.offset: r.timestamp for r in write_data_dir(
        copy.parent / "reference", [TopicSpec("t", records_per_partition=RECORDS, records_per_batch=10,
                                                vary_batch_size=False, segment_bytes=16 << 10,
                                                index_interval_bytes=1024)]).partition("t", 0).data_records()}
    for offset in (lost[0] - 1, lost[0], lost[len(lost) // 2], lost[-1], lost[-1] + 1, lost[-1] + 15):
        scan = kafkaseg.open_scan(str(copy), onCorruption="skip", startingTimestamp=str(reference[offset]))
        first = next(o for o, ts in zip(offsets, stamps) if ts >= reference[offset])
        assert _offsets(scan.to_table()) == [o for o in offsets if o >= first], offset
        if offset == lost[0] or indexes == "missing":  # the search walked into the bad bytes: said so
            assert any("search for timestamp" in d.decision for d in scan.plan.report.lenient), offset


@pytest.mark.parametrize("delta", [-50, -1, -(1 << 31)])
def test_a_negative_last_offset_delta_in_the_active_segment_is_corruption_not_a_short_log(copy, delta):
    """lastOffsetDelta is covered by the CRC, but the log end walks headers only: a negative one in the active
    segment's last batch made the log end at (or before) that batch's offsets and a strict read silently returned
    fewer records, down to none (found in review)."""
    log = _logs(copy)[-1]
    data = bytearray(log.read_bytes())
    last = list(iter_headers(bytes(data)))[-1]
    struct.pack_into(">i", data, last.position + 23, delta)
    log.write_bytes(bytes(data))
    with pytest.raises(CorruptBatchError, match="negative lastOffsetDelta"):
        kafkaseg.read_arrow(str(copy))
    lenient = _offsets(kafkaseg.read_arrow(str(copy), onCorruption="skip"))
    assert lenient == list(range(last.base_offset))


def test_a_lenient_timestamp_search_goes_on_past_a_skipped_batch_that_held_the_match(tmp_path):
    """The batch holding the timestamp is the last of a rolled segment and fails its CRC: a lenient read skips it,
    so the first record at or after the timestamp it returns is the next segment's first. The search stopped at
    that segment ("no offset matched", or an endingTimestamp past everything; found in review)."""
    from kafkaseg.testing import PartitionWriter, Record, build_batch_v2
    from kafkaseg.testing.partition import write_offset_checkpoint

    t0 = 1_700_000_000_000
    writer = PartitionWriter(tmp_path / "t-0", index_interval_bytes=1024, segment_bytes=8000)
    for o in range(0, 300, 10):
        writer.append(build_batch_v2([Record(o + j, t0 + o + j, b"k", b"v" * 50, []) for j in range(10)],
                                     base_offset=o))
    writer.close()
    write_offset_checkpoint(tmp_path / "replication-offset-checkpoint", {("t", 0): 300})
    log = tmp_path / "t-0" / f"{0:020d}.log"
    data = bytearray(log.read_bytes())
    data[-5] ^= 0xFF  # a value byte of the segment's last batch: a bad CRC, framing intact
    log.write_bytes(bytes(data))
    whole = _offsets(kafkaseg.read_arrow(str(tmp_path), onCorruption="skip"))
    first = next(o for o in whole if o >= 115)
    assert first == int(sorted((tmp_path / "t-0").glob("*.log"))[1].stem)
    starting = kafkaseg.read_arrow(str(tmp_path), onCorruption="skip", startingTimestamp=str(t0 + 115))
    assert _offsets(starting) == [o for o in whole if o >= first]
    ending = kafkaseg.read_arrow(str(tmp_path), onCorruption="skip", endingTimestamp=str(t0 + 115))
    assert _offsets(ending) == [o for o in whole if o < first]


@pytest.mark.parametrize("new_base", ["just past the high watermark", "far past"])
def test_a_last_batch_whose_base_offset_skips_acknowledged_offsets_is_corruption(copy, new_base):
    """The base offset is outside the CRC. Raised on the log's last batch past the high watermark (nothing after it
    goes back to show it), the batch's records fell out of the read without a word (found in review: offsets 0-44
    returned, 45-49 dropped). Offsets below the high watermark in no batch before a batch starting above it can
    only be that (see offsets_hidden_by_last_batch): a strict read raises naming the byte, a lenient one ends
    before the batch and counts it."""
    from kafkaseg.errors import SkippedOffsetsError

    active = _logs(copy)[-1]
    data = bytearray(active.read_bytes())
    last = list(iter_headers(bytes(data)))[-1]
    assert last.next_offset == RECORDS  # (the fixture's high watermark)
    struct.pack_into(">q", data, last.position, RECORDS + 1 if new_base == "just past the high watermark" else 2 ** 62)
    active.write_bytes(bytes(data))
    for options in ({}, {"upperBound": "logEndOffset"}, {"startingOffsets": json_offsets(RECORDS - 30)}):
        with pytest.raises(SkippedOffsetsError, match=rf"skips offsets {last.base_offset}\.\.") as info:
            kafkaseg.read_arrow(str(copy), **options)
        assert (info.value.path, info.value.position) == (str(active), last.position)
    scan = kafkaseg.open_scan(str(copy), onCorruption="skip", splitSize=4096)
    for _ in range(2):  # each read of the scan counts it, once
        assert _offsets(scan.to_table()) == list(range(last.base_offset))
        assert scan.metrics.decode.corrupt_batches == 1
        ((path, position, what),) = scan.metrics.decode.problems
        assert (path, position) == (str(active), last.position) and "skips offsets" in what
    # the batch's own offsets at or above the high watermark: none acknowledged, so none missing (the read ends
    # before it, as before)
    (copy / "replication-offset-checkpoint").write_text(f"0\n1\nt 0 {last.base_offset}\n")
    assert _offsets(kafkaseg.read_arrow(str(copy))) == list(range(last.base_offset))


def test_verify_reports_a_last_batch_that_skips_acknowledged_offsets(copy):
    from kafkaseg.cli.verify import verify_paths

    active = _logs(copy)[-1]
    data = bytearray(active.read_bytes())
    last = list(iter_headers(bytes(data)))[-1]
    struct.pack_into(">q", data, last.position, RECORDS + 20)
    active.write_bytes(bytes(data))
    report = verify_paths([str(copy)])
    assert [(e.file, e.position) for e in report.errors if "skips offsets" in e.message] == [(str(active),
                                                                                              last.position)]


@pytest.mark.parametrize("read_mode", ["mmap", "pread"])
def test_a_rolled_segments_last_batch_across_the_next_base_offset_is_corruption(copy, read_mode):
    """A rolled segment's last batch with its base offset (outside the CRC) raised so that it straddles the next
    segment's base: its records read with offsets they never had, two of them fell out, and no read said a word
    (a merged copy of the cleaner's was presumed). Kafka rolls between batches and its cleaner keeps each batch's
    offsets, so no Kafka file holds such a batch: a strict read raises at it, a lenient one leaves it out, counted,
    before any of its records is returned."""
    first = _logs(copy)[0]
    data = bytearray(first.read_bytes())
    last = list(iter_headers(bytes(data)))[-1]
    next_base = int(_logs(copy)[1].stem)
    assert last.next_offset == next_base
    struct.pack_into(">q", data, last.position, last.base_offset + 2)
    first.write_bytes(bytes(data))
    with pytest.raises(CorruptBatchError, match=rf"holds offsets {last.base_offset + 2}\.\.{next_base + 1}, across "
                                                rf"offset {next_base}") as info:
        kafkaseg.read_arrow(str(copy), readMode=read_mode)
    assert (info.value.path, info.value.position) == (str(first), last.position)
    scan = kafkaseg.open_scan(str(copy), onCorruption="skip", readMode=read_mode, splitSize=4096)
    assert _offsets(scan.to_table()) == [o for o in range(RECORDS) if not last.base_offset <= o < next_base]
    assert scan.metrics.decode.corrupt_batches == 1
    assert [p[:2] for p in scan.metrics.decode.problems] == [(str(first), last.position)]


@pytest.mark.parametrize("shift", [10, 15, 30])
def test_a_rolled_segments_last_batch_raised_onto_the_next_segments_offsets_is_corruption(copy, shift):
    """A rolled segment's last batch (120..129) with its base offset, which the CRC does not cover, raised to or
    past the next segment's base (130): taken for a merged copy of the cleaner's that the next segment's original
    spans, its ten acknowledged records were dropped by strict and lenient reads alike, without a word (found in
    review). A merged copy's v2 batch has the same base and last offsets as a batch of the next segment's original
    and only records of it; this one has its own records."""
    first = _logs(copy)[0]
    data = bytearray(first.read_bytes())
    last = list(iter_headers(bytes(data)))[-1]
    assert last.next_offset == int(_logs(copy)[1].stem)
    struct.pack_into(">q", data, last.position, last.base_offset + shift)
    first.write_bytes(bytes(data))
    with pytest.raises(CorruptBatchError, match=rf"holds offsets {last.base_offset + shift}\.\.") as info:
        kafkaseg.read_arrow(str(copy))
    assert (info.value.path, info.value.position) == (str(first), last.position)
    scan = kafkaseg.open_scan(str(copy), onCorruption="skip")
    assert _offsets(scan.to_table()) == [o for o in range(RECORDS) if not last.base_offset <= o <= last.last_offset]
    assert scan.metrics.decode.corrupt_batches == 1
    assert [p[:2] for p in scan.metrics.decode.problems] == [(str(first), last.position)]


# --- a base offset (outside the CRC) moved: which batch of a backwards step is the damaged one --------------------
# The decoders blamed each batch going back below the one before it ("non-monotonic offsets"): a raised base cost a
# lenient read every sound batch up to its last offset and returned its records at offsets they never had, and a
# strict read named the innocent batch after it. kafkaseg.offset_outlier judges the step on the batches around it.

def _rows(table) -> dict:
    return {o: (k, v) for o, k, v in zip(*(table.column(c).to_pylist() for c in ("offset", "key", "value")))}


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("read_mode", ["mmap", "pread"])
def test_a_damaged_base_offset_costs_only_its_batch(rolled, copy, kernel, case, read_mode):
    """A batch's base offset (outside the CRC) raised (over many later batches, over the one after it only, past
    the next segment's base), lowered (over the batch before it, below the segment's base), at the segment's first
    or last batches: a lenient read loses that batch's records alone, as one problem at its byte with the offsets
    between the readable batches around it, and a strict read names it (found: a raised one cost a lenient read
    every later batch up to its last offset, its own records came back at offsets they never had, and a strict
    read named the sound batch after it)."""
    segment, batch, xor = CASES[case]
    undamaged = _rows(kafkaseg.read_arrow(str(rolled)))
    log, bad, _, following = damage(copy, segment, batch, xor)
    lost = range(bad.base_offset, bad.last_offset + 1)
    with pytest.raises(CorruptBatchError) as info:
        kafkaseg.read_arrow(str(copy), readMode=read_mode)
    assert (info.value.path, info.value.position) == (str(log), bad.position), str(info.value)
    for split in ({}, {"splitSize": "4k"}):
        scan = kafkaseg.open_scan(str(copy), onCorruption="skip", readMode=read_mode, **split)
        rows = _rows(scan.to_table())
        assert rows == {o: row for o, row in undamaged.items() if o not in lost}, split
        assert scan.metrics.decode.corrupt_batches == 1
        (problem,) = scan.metrics.decode.problems
        assert (problem.path, problem.position, problem.bytes) == (str(log), bad.position, bad.size)
        assert (problem.first_offset, problem.end_offset) == (bad.base_offset, following), problem


@pytest.mark.parametrize("case", ["raised_over_many", "raised_over_one", "next_to_last_raised", "first_batch_raised"])
@pytest.mark.parametrize("batches_per_chunk", [1, 2, 3, 4, 5])
def test_the_raised_batch_is_judged_wherever_a_chunk_ends(copy, kernel, case, batches_per_chunk):
    """The kernel sees one chunk at a time: a raised batch that ends a chunk is told from the one after it by a look
    at the next header before its records are returned."""
    segment, batch, xor = CASES[case]
    log, bad, _, _ = damage(copy, segment, batch, xor)
    for on_corruption in ("skip", "fail"):
        options = ReadOptions.from_options({"onCorruption": on_corruption, "readMode": "pread"})
        metrics = ScanMetrics()
        offsets = []
        try:
            for piece in plan_scan(str(copy), options).slices:
                for record_batch in read_slice(piece, options, metrics, read_chunk_bytes=bad.size * batches_per_chunk):
                    offsets.extend(record_batch.column("offset").to_pylist())
        except CorruptBatchError as err:
            assert on_corruption == "fail" and (err.path, err.position) == (str(log), bad.position)
            assert not set(offsets) & set(range(bad.base_offset, bad.last_offset + 1))
            continue
        assert on_corruption == "skip"
        assert offsets == [o for o in range(RECORDS) if not bad.base_offset <= o <= bad.last_offset]
        assert [p[:2] for p in metrics.decode.problems] == [(str(log), bad.position)]


def _compacted(root, batches: int = 12):
    """One partition of 5-record batches at offsets 20b..20b+4 (compaction gaps of 15 between them)."""
    writer = PartitionWriter(root / "t-0", index_interval_bytes=300)
    for b in range(batches):
        writer.append(build_batch_v2([Record(o, 1_600_000_000_000 + o, b"k", b"v" * 20)
                                      for o in range(20 * b, 20 * b + 5)]))
    writer.close()
    log = root / "t-0" / "00000000000000000000.log"
    return log, list(iter_headers(log.read_bytes()))


def test_a_base_lowered_into_a_compaction_gap_over_the_batch_before_it_leaves_out_both(tmp_path, kernel):
    """Lowered over the batch before it (100..104 -> 82..86 after 80..84) where compaction gaps leave room for either
    to be the damaged one: nothing tells them apart, so neither is returned at offsets it may never have had; one
    region (both batches), and a strict read names the first."""
    log, headers = _compacted(tmp_path)
    data = bytearray(log.read_bytes())
    struct.pack_into(">q", data, headers[5].position, 82)
    log.write_bytes(bytes(data))
    scan = kafkaseg.open_scan(str(tmp_path), onCorruption="skip")
    offsets = scan.to_table().column("offset").to_pylist()
    assert offsets == [o for b in range(12) if b not in (4, 5) for o in range(20 * b, 20 * b + 5)]
    (problem,) = scan.metrics.decode.problems
    assert (problem.position, problem.bytes) == (headers[4].position, headers[4].size + headers[5].size)
    assert (problem.first_offset, problem.end_offset) == (65, 120)
    assert scan.metrics.decode.corrupt_batches == 2
    with pytest.raises(CorruptBatchError) as info:
        kafkaseg.read_arrow(str(tmp_path))
    assert info.value.position == headers[4].position


def test_a_base_lowered_over_the_batch_before_it_in_a_gapless_log_is_that_batch(tmp_path, kernel):
    """Without room for the earlier batch's ten offsets below the lowered one, only the lowered batch can be the
    damaged one (its CRC-covered span must fit between the batches kept around it)."""
    log, headers = _compacted(tmp_path)
    data = bytearray(log.read_bytes())
    struct.pack_into(">q", data, headers[5].position, 63)  # 100..104 -> 63..67, over 60..64
    log.write_bytes(bytes(data))
    scan = kafkaseg.open_scan(str(tmp_path), onCorruption="skip")
    offsets = scan.to_table().column("offset").to_pylist()
    assert offsets == [o for b in range(12) if b != 5 for o in range(20 * b, 20 * b + 5)]
    assert [p[:2] for p in scan.metrics.decode.problems] == [(str(log), headers[5].position)]


class _B:
    def __init__(self, first, last, sound=True):
        self.first, self.last, self.sound = first, last, sound


def _kept(spans, floor=-1, ceiling=None):
    return kept_batches([_B(a, b) for a, b in spans], floor, ceiling)


def test_the_fewest_batches_left_out_decide():
    # raised over many: the raised one
    assert _kept([(0, 4), (52, 56), (10, 14), (15, 19), (20, 24)]) == [True, False, True, True, True]
    # lowered over the one before it: the lowered one (the earlier one's five offsets cannot fit below it)
    assert _kept([(0, 4), (5, 9), (6, 10), (15, 19)]) == [True, True, False, True]
    # two overlapping batches with room for either: both left out
    assert _kept([(0, 4), (20, 24), (22, 26), (60, 64)]) == [True, False, False, True]
    # a coincidence of compaction gaps (15..19 right after 10..14) does not blame the sound 20..24: 20..24 left out
    # would leave no room for its offsets between 10..14 and 15..19
    assert _kept([(10, 14), (20, 24), (15, 19), (40, 44)], floor=9) == [True, True, False, True]
    # at a rolled segment's end, a batch left out must fit below the next segment's base
    assert _kept([(230, 239), (244, 253), (250, 259)], floor=229, ceiling=260) == [True, False, True]
    assert _kept([(230, 239), (244, 253), (250, 259)], floor=229) == [True, False, False]
    # unsound batches (CRC) are never kept and take no room
    assert kept_batches([_B(0, 4), _B(90, 99, sound=False), _B(5, 9)], -1, None) == [True, False, True]


# --- a slice that starts mid-segment: its first batch judged as a read of the whole segment judges it -------------
# A slice cut at an offset index entry (splitSize) or started at a pushed-down offset checked its first batch against
# the segment's base only: a base offset lowered there (outside the CRC) was read at offsets its records never had.

# (segment 1 of offset_damage's partition, cut at splitSize=4k before batches 4 and 8: 170..179 and 210..219)
SLICE_STARTS = {
    "lowered_into_previous": (1, 4, 8),  # 170..179 -> 162..171, over the previous slice's last batch
    "lowered_below_previous_entry": (1, 4, 32),  # 170..179 -> 138..147, below the entry before it
    "lowered_later_slice": (1, 8, 16),  # 210..219 -> 194..203
    "raised_first_of_slice": (1, 4, 64),  # 170..179 -> 234..243, over the rest of its slice and into the next
}


def _read(root, **options):
    """``(rows, problems, corrupt batches)`` of a lenient read, or ``(path, position)`` of a strict one's error."""
    if options.get("onCorruption") == "skip":
        scan = kafkaseg.open_scan(str(root), **options)
        rows = _rows(scan.to_table())
        problems = [(p.path, p.position, p.bytes, p.first_offset, p.end_offset) for p in scan.metrics.decode.problems]
        return rows, problems, scan.metrics.decode.corrupt_batches
    try:
        return _rows(kafkaseg.read_arrow(str(root), **options))
    except CorruptBatchError as err:
        return err.path, err.position


@pytest.mark.parametrize("case", sorted(SLICE_STARTS))
@pytest.mark.parametrize("read_mode", ["mmap", "pread"])
@pytest.mark.parametrize("on_corruption", ["skip", "fail"])
def test_a_slices_first_batch_is_judged_as_a_whole_segment_read_judges_it(rolled, copy, kernel, case, read_mode,
                                                                         on_corruption):
    """The damaged batch starts a slice (splitSize=4k cuts at its index entry): the read loses what a read of the
    whole segment loses, with the same problem (byte, size, offsets) or error position (found: a lowered one was
    read at its lowered offsets, overwriting none but returning records at offsets they never had)."""
    segment, batch, xor = SLICE_STARTS[case]
    log, bad, _, following = damage(copy, segment, batch, xor)
    options = {"onCorruption": on_corruption, "readMode": read_mode}
    assert bad.position in {p.start_position for p in plan_scan(str(copy), ReadOptions.from_options(
        {**options, "splitSize": "4k"})).slices}
    whole = _read(copy, **options)
    assert _read(copy, **options, splitSize="4k") == whole
    if on_corruption == "fail":
        assert whole == (str(log), bad.position)
        return
    undamaged = _rows(kafkaseg.read_arrow(str(rolled)))
    rows, problems, corrupt = whole
    assert rows == {o: row for o, row in undamaged.items() if not bad.base_offset <= o <= bad.last_offset}
    assert corrupt == 1 and [p[:3] for p in problems] == [(str(log), bad.position, bad.size)]
    assert problems[0][3:] == (bad.base_offset, following)


@pytest.mark.parametrize("start", [165, 170, 172, 179])
@pytest.mark.parametrize("on_corruption", ["skip", "fail"])
def test_a_pushed_down_start_at_or_past_a_lowered_batch_is_judged_as_a_whole_read(rolled, copy, kernel, start,
                                                                                 on_corruption):
    """startingOffsets pushed down to the batch that can hold it: a batch whose base offset went down (170..179 ->
    162..171) is judged against the batch before it, whether the read starts at it (170, 165: the batch before it)
    or planning's walk would have stepped over it by its lowered offsets (172, 179: its records lost unsaid)."""
    log, bad, _, following = damage(copy, *SLICE_STARTS["lowered_into_previous"])
    options = {"onCorruption": on_corruption, "startingOffsets": json_offsets(start)}
    if on_corruption == "fail":
        assert _read(copy, **options) == (str(log), bad.position)
        return
    rows, problems, corrupt = _read(copy, **options)
    undamaged = _rows(kafkaseg.read_arrow(str(rolled)))
    assert rows == {o: row for o, row in undamaged.items()
                    if o >= start and not bad.base_offset <= o <= bad.last_offset}
    assert corrupt == 1 and [p[:3] for p in problems] == [(str(log), bad.position, bad.size)]


def _rewrite_index(root, segment: int, entry_for):
    """Rewrite segment ``segment``'s offset index: ``entry_for(k, headers)`` gives ``(offset, position)`` of entry
    ``k`` or None to leave it out (the headers are the segment's batches)."""
    log = _logs(root)[segment]
    base = int(log.stem)
    headers = list(iter_headers(log.read_bytes()))
    entries = [e for e in (entry_for(k, headers) for k in range(len(headers))) if e is not None]
    index = log.with_suffix(".index")
    index.write_bytes(b"".join(struct.pack(">ii", offset - base, position) for offset, position in entries))
    return headers


ODD_ENTRIES = {
    # an 0.8 to 1.x broker's entries: the append's first offset
    "first_offsets": lambda k, h: (h[k].base_offset, h[k].position) if k % 2 else None,
    # a follower's (or the cleaner's) appends of several batches: the append's largest offset, at its first batch
    "appends_of_two_batches": lambda k, h: (h[k + 1].last_offset, h[k].position) if k % 2 and k + 1 < len(h) else None,
    # a broker with another index.interval.bytes rebuilt it
    "every_third_batch": lambda k, h: (h[k].last_offset, h[k].position) if k and k % 3 == 0 else None,
    # entries a follower's truncation left (their offsets another leader's, then appended over at the same bytes)
    "stale_offsets": lambda k, h: (h[k].last_offset + (5 if k % 2 else 0), h[k].position)
    if k and (k + 1 >= len(h) or h[k].last_offset + 5 < h[k + 1].last_offset) else None,
}


@pytest.mark.parametrize("entries", sorted(ODD_ENTRIES))
@pytest.mark.parametrize("read_mode", ["mmap", "pread"])
def test_slices_cut_at_odd_index_entries_of_valid_data_read_it_all(rolled, copy, kernel, entries, read_mode):
    """Index entries that fit their batches without holding their last offsets (an old broker's, a multi-batch
    append's, stale ones over the same bytes) cut slices of a valid log: strict and lenient reads return every
    record, nothing counted as corrupt."""
    for segment in range(len(_logs(copy)) - 1):
        _rewrite_index(copy, segment, ODD_ENTRIES[entries])
    undamaged = _rows(kafkaseg.read_arrow(str(rolled)))
    for split in ("2k", "4k"):
        assert _read(copy, readMode=read_mode, splitSize=split) == undamaged
        assert _read(copy, readMode=read_mode, splitSize=split, onCorruption="skip") == (undamaged, [], 0)
    for start in (165, 170, 172, 255):
        assert _read(copy, readMode=read_mode, startingOffsets=json_offsets(start), splitSize="2k") == {
            o: row for o, row in undamaged.items() if o >= start}


@pytest.mark.parametrize("lowered", [False, True])
def test_a_compacted_segments_slices_judge_their_first_batch_by_its_own_offsets(tmp_path, kernel, lowered):
    """Compaction gaps between batches (20b..20b+4) and slices cut at each index entry: valid data reads whole;
    a base lowered over the batch before it at a slice's start (100..104 -> 82..86, room for either) leaves out
    both, as a whole read does, and a strict read names the first of them in both."""
    log, headers = _compacted(tmp_path)
    # (an entry every other batch: the lowered one's entry still fits between its neighbours)
    _rewrite_index(tmp_path, 0, lambda k, h: (h[k].last_offset, h[k].position) if k % 2 else None)
    if lowered:
        data = bytearray(log.read_bytes())
        struct.pack_into(">q", data, headers[5].position, 82)
        log.write_bytes(bytes(data))
    starts = {p.start_position for p in plan_scan(str(tmp_path), ReadOptions.from_options({"splitSize": 1})).slices}
    assert headers[5].position in starts
    for on_corruption in ("fail", "skip"):
        whole = _read(tmp_path, onCorruption=on_corruption)
        assert _read(tmp_path, onCorruption=on_corruption, splitSize=1) == whole, on_corruption
    assert whole[1:] == (([], 0) if not lowered else ([(str(log), headers[4].position,
                                                         headers[4].size + headers[5].size, 65, 120)], 2))


@pytest.mark.parametrize("cutting", [{"splitSize": 1}, {"maxRecordsPerPartition": 5}, {"minPartitions": 12}])
@pytest.mark.parametrize("read_mode", ["mmap", "pread"])
def test_a_slice_starting_inside_a_region_left_out_counts_each_of_its_batches(tmp_path, kernel, cutting, read_mode):
    """Three overlapping batches with room for any one of them (80..84, then 100..104 -> 82..86 and 120..124 ->
    83..87): none is returned, one region of three. Slices cut at every other batch start one at 100..104's bytes,
    inside the region, with two of its batches in that slice: the lenient read counts all three batches and their
    bytes as a whole read does, names the region once, and returns the same records."""
    log, headers = _compacted(tmp_path)
    undamaged = _rows(kafkaseg.read_arrow(str(tmp_path)))
    _rewrite_index(tmp_path, 0, lambda k, h: (h[k].last_offset, h[k].position) if k % 2 else None)
    data = bytearray(log.read_bytes())
    for batch, base in ((5, 82), (6, 83)):
        struct.pack_into(">q", data, headers[batch].position, base)
    log.write_bytes(bytes(data))
    region = headers[4:7]
    slices = [(p.start_position, p.end_position)
              for p in plan_scan(str(tmp_path), ReadOptions.from_options(cutting)).slices]
    assert (headers[5].position, headers[7].position) in slices  # (batches 5 and 6 of the region in one slice)
    expected_rows = {o: row for o, row in undamaged.items() if not region[0].base_offset <= o <= region[-1].last_offset}
    # (the offsets it made unreadable: from after the batch before it to the batch after it)
    expected_problems = [(str(log), region[0].position, sum(h.size for h in region), headers[3].last_offset + 1,
                          headers[7].base_offset)]
    for options in ({}, cutting):
        scan = kafkaseg.open_scan(str(tmp_path), onCorruption="skip", readMode=read_mode, **options)
        assert _rows(scan.to_table()) == expected_rows, options
        stats = scan.metrics.decode
        assert (stats.corrupt_batches, stats.corrupt_bytes) == (3, sum(h.size for h in region)), options
        assert [(p.path, p.position, p.bytes, p.first_offset, p.end_offset) for p in stats.problems] == \
            expected_problems, options
        with pytest.raises(CorruptBatchError) as info:
            kafkaseg.read_arrow(str(tmp_path), readMode=read_mode, **options)
        assert info.value.position == region[0].position, options


@pytest.mark.parametrize("entries", [None, "appends_of_two_batches", "first_offsets"])
def test_valid_slices_judge_no_step_at_their_start(rolled, copy, monkeypatch, entries):
    """On valid data a slice's first batch costs one header when its index entry holds its last offset (what
    brokers since 2.0 write), else a header walk from the entry before it: the judgement of a step (each batch
    read whole for its CRC, the offset index loaded) never runs."""
    import kafkaseg.scan as scan

    if entries is not None:
        for segment in range(len(_logs(copy)) - 1):
            _rewrite_index(copy, segment, ODD_ENTRIES[entries])
    walks = []
    real = scan.SegmentReader.iter_headers

    def counted(self, start=0, end=None, **kw):
        if end is not None:  # (not a header read)
            walks.append((start, end))
        return real(self, start, end, **kw)

    def judged(*args, **kwargs):
        raise AssertionError("a step judged on valid data")

    monkeypatch.setattr(scan, "batch_before", judged)
    monkeypatch.setattr(scan, "offset_before", judged)
    monkeypatch.setattr(scan.SegmentReader, "iter_headers", counted)
    scan_ = kafkaseg.open_scan(str(copy), splitSize="2k", onCorruption="skip")
    assert scan_.to_table().num_rows == RECORDS and scan_.metrics.slices > 10
    # one walk from the entry before each slice that starts mid-segment, and only without the entry's evidence
    assert (walks == []) == (entries is None)


def test_a_slice_after_an_entry_pointing_inside_a_batch_still_judges_its_first_batch(copy, kernel):
    """The entry before the slice's (where its header walk starts) points inside a batch: the walk goes from the
    segment's start instead, and the lowered first batch (170..179 -> 162..171, still above that entry's offset,
    so planning keeps the index) is judged as a whole read judges it."""
    _rewrite_index(copy, 1, lambda k, h: (h[k].last_offset, h[k].position + (100 if k == 2 else 0))
                   if k and k % 2 == 0 else None)
    log, bad, _, _ = damage(copy, *SLICE_STARTS["lowered_into_previous"])
    assert bad.position in {p.start_position for p in plan_scan(str(copy), ReadOptions.from_options(
        {"splitSize": "4k"})).slices if p.log_path == str(log)}
    for on_corruption in ("fail", "skip"):
        whole = _read(copy, onCorruption=on_corruption)
        assert _read(copy, onCorruption=on_corruption, splitSize="4k") == whole
    assert whole[1:] == ([(str(log), bad.position, bad.size, 170, 180)], 1)


@pytest.mark.parametrize("cutting", [{"minPartitions": 40}, {"maxRecordsPerPartition": 20}])
def test_slices_cut_for_parallelism_or_record_counts_judge_their_first_batch(copy, kernel, cutting):
    """minPartitions and maxRecordsPerPartition cut at index entries too: the lowered batch starting a slice is
    judged as a whole read judges it."""
    log, bad, _, _ = damage(copy, *SLICE_STARTS["lowered_into_previous"])
    assert bad.position in {p.start_position for p in plan_scan(str(copy), ReadOptions.from_options(cutting)).slices
                            if p.log_path == str(log)}
    for on_corruption in ("fail", "skip"):
        assert _read(copy, onCorruption=on_corruption, **cutting) == _read(copy, onCorruption=on_corruption)


# (found by a damage campaign: the last two .log files of a magic-1 gzip partition swapped read as an empty log)
@pytest.mark.parametrize("on_corruption", ["fail", "skip"])
def test_legacy_segments_swapped_are_not_taken_for_a_cleaners_merged_copy(tmp_path, kernel, on_corruption):
    """Segment 0's file holds segment 187's wrappers (offsets 187.., at or past the next base) and the next
    segment's file holds offsets 0..186, below its own base: no cleaner's original of a merged copy (its offsets
    start at its base), so the first file's records past the next base are corruption, raised or counted, not
    dropped unsaid as a read that returns no record at all."""
    write_data_dir(tmp_path, [TopicSpec("v1gz", records_per_partition=400, magic=1, codec="gzip",
                                        segment_bytes=16 * 1024)], seed=1)
    first, second = sorted((tmp_path / "v1gz-0").glob("*.log"))[-2:]
    a, b = first.read_bytes(), second.read_bytes()
    first.write_bytes(b)
    second.write_bytes(a)
    # (the checkpoints' high watermark and recovery point, 400, are above the log end either file order gives: the
    # acknowledged loss past it is said as data loss, which failOnDataLoss=false reads past to the corruption)
    options = {"upperBound": "logEndOffset", "onCorruption": on_corruption, "failOnDataLoss": "false"}
    if on_corruption == "fail":
        with pytest.raises(CorruptBatchError) as info:
            kafkaseg.read_arrow(str(tmp_path), **options)
        assert info.value.path == str(first) and info.value.position == 0
        return
    scan = kafkaseg.open_scan(str(tmp_path), **options)
    scan.to_table()
    assert scan.metrics.decode.corrupt_batches > 0 and scan.metrics.decode.problems[0].path == str(first)


# (found by a damage campaign: as above, with the zero-filled tail of a preallocated file after segment 0's batches
# swapped into the active segment: its log end was taken as 241, below its own base, and the read returned nothing)
def test_an_active_segment_holding_only_offsets_below_its_base_ends_the_log_at_its_base(tmp_path, kernel):
    write_data_dir(tmp_path, [TopicSpec("v1gz", records_per_partition=400, magic=1, codec="gzip",
                                        segment_bytes=16 * 1024)], seed=1)
    first, second = sorted((tmp_path / "v1gz-0").glob("*.log"))[-2:]
    a, b = first.read_bytes(), second.read_bytes()
    first.write_bytes(b)
    second.write_bytes(a[:len(a) // 2] + bytes(len(a) - len(a) // 2))  # (offsets below 187, then zeros)
    with pytest.raises(CorruptBatchError) as info:
        kafkaseg.read_arrow(str(tmp_path), upperBound="logEndOffset", failOnDataLoss="false")
    assert info.value.path == str(first) and info.value.position == 0
