"""plan_scan / resolve_offsets on generated data dirs (kafkaseg.testing) and the corpus.

The oracle for coverage is an independent walk of every batch header of every segment (kafkaseg.wire.batch on the
file bytes): the union of the planned byte ranges must hold each batch with an offset in [start, end) exactly once,
and every cut must be a batch boundary. Expected offsets come from the records the tests wrote.
"""

from __future__ import annotations

import os
import pickle
import time
from pathlib import Path

import pytest

from kafkaseg.errors import DataLossError, InvalidOptionError, LayoutError
from kafkaseg.options import ReadOptions
from kafkaseg.planning import (
    Predicates,
    SegmentSlice,
    offset_for_timestamp,
    pack_slices,
    plan_scan,
    resolve_offsets,
)
from kafkaseg.scan import Scan
from kafkaseg.storage.layout import discover
from kafkaseg.testing import (
    ControlType,
    PartitionWriter,
    Record,
    TopicSpec,
    build_batch_v2,
    build_control_batch,
    write_data_dir,
)
from kafkaseg.testing.partition import write_offset_checkpoint
from kafkaseg.wire.batch import iter_headers

T0 = 1_700_000_000_000


def opts(**options) -> ReadOptions:
    return ReadOptions.from_options(options)


# --------------------------------------------------------------------------------------------------------------------
# Data builders

def write_partition(log_dir: Path, topic: str, partition: int, *, records: int, per_batch: int = 5,
                    value_size: int = 100, segment_bytes: int = 1 << 30, start: int = 0, codec: str = "none",
                    timestamp=lambda offset: T0 + offset * 10, index_interval: int = 4096, hole: tuple | None = None,
                    live: bool = False):
    """``records`` records from offset ``start`` in batches of ``per_batch``; ``hole=(at, to)`` skips offsets
    [at, to) by rolling a new segment at ``to``. Returns (PartitionLog, {offset: timestamp})."""
    writer = PartitionWriter(log_dir / f"{topic}-{partition}", segment_bytes=segment_bytes,
                             index_interval_bytes=index_interval, log_start_offset=start)
    stamps = {}
    offset = start
    written = 0
    while written < records:
        if hole is not None and offset == hole[0]:
            writer.roll(hole[1])
            offset = hole[1]
        count = min(per_batch, records - written)
        if hole is not None and offset < hole[0]:
            count = min(count, hole[0] - offset)
        batch = [Record(offset + k, timestamp(offset + k), f"k{offset + k}".encode(), bytes(value_size))
                 for k in range(count)]
        for r in batch:
            stamps[r.offset] = r.timestamp
        writer.append(build_batch_v2(batch, codec=codec))
        offset += count
        written += count
    return writer.close(live=live), stamps


def batches_of(log_path: str | Path):
    data = Path(log_path).read_bytes()
    return list(iter_headers(data))


def check_coverage(plan, start_end: dict | None = None, *, exact_outside: bool = False):
    """Every batch with an offset in the partition's [start, end) lies in exactly one slice; cuts are batch
    boundaries. Returns the number of batches covered."""
    report_offsets = plan.report.offsets()
    by_segment: dict[str, list[SegmentSlice]] = {}
    for piece in plan.slices:
        by_segment.setdefault(piece.log_path, []).append(piece)
        assert piece.start_position < piece.end_position <= piece.segment_size
    covered = 0
    partitions = {(p.topic, p.partition): p for p in plan.report.partitions}
    for (topic, partition), preport in partitions.items():
        start, end = (start_end or report_offsets)[(topic, partition)]
        for log in sorted(Path(preport.path).glob("*.log")):
            headers = batches_of(log)
            boundaries = {h.position for h in headers} | {log.stat().st_size}
            pieces = by_segment.get(str(log), [])
            for piece in pieces:
                assert piece.start_position in boundaries and piece.end_position in boundaries, (piece, log)
                assert (piece.topic, piece.partition) == (topic, partition)
            for h in headers:
                holders = [p for p in pieces if p.start_position <= h.position and h.end <= p.end_position]
                wanted = h.last_offset >= start and h.base_offset < end
                if wanted:
                    assert len(holders) == 1, (log, h.position, h.base_offset, len(holders))
                    covered += 1
                    assert holders[0].start_offset <= max(h.base_offset, start)
                    assert holders[0].end_offset >= min(h.last_offset + 1, end)
                else:
                    assert len(holders) <= 1
                    if exact_outside:
                        assert not holders, (log, h.base_offset, start, end)
    return covered


@pytest.fixture
def single(tmp_path):
    """One log dir, topic t partition 0: 2000 records, 5 per batch, ~4 KiB index interval, 3 segments."""
    log_dir = tmp_path / "broker0"
    log, stamps = write_partition(log_dir, "t", 0, records=2000, segment_bytes=100_000)
    write_offset_checkpoint(log_dir / "replication-offset-checkpoint", {("t", 0): 2000})
    return log_dir, log, stamps


# --------------------------------------------------------------------------------------------------------------------
# Basics

def test_defaults_cover_everything_once(single):
    log_dir, log, _ = single
    assert len(log.segments) >= 3
    plan = plan_scan(str(log_dir), opts())
    assert plan.report.offsets() == {("t", 0): (0, 2000)}
    assert check_coverage(plan, exact_outside=True) == 400
    assert len(plan.slices) == len(log.segments)  # segments smaller than splitSize: one slice each
    assert plan.report.bytes_planned == plan.report.bytes_total == sum(s.size for s in log.segments)
    p = plan.report.partitions[0]
    assert (p.log_start_offset, p.log_end_offset, p.high_watermark, p.upper_bound) == (0, 2000, 2000, 2000)
    assert p.upper_bound_source == "high watermark"
    assert all(s.aborted == () for s in plan.slices)
    clone = pickle.loads(pickle.dumps(plan.slices))
    assert clone == plan.slices
    assert plan.report.as_dict()["bytes_planned"] == plan.report.bytes_planned


def test_high_watermark_and_upper_bound(single):
    log_dir, _, _ = single
    write_offset_checkpoint(log_dir / "replication-offset-checkpoint", {("t", 0): 1234})
    plan = plan_scan(str(log_dir), opts())
    assert plan.report.offsets()[("t", 0)] == (0, 1234)
    check_coverage(plan, exact_outside=True)
    plan = plan_scan(str(log_dir), opts(upperBound="logEndOffset"))
    assert plan.report.offsets()[("t", 0)] == (0, 2000)
    (log_dir / "replication-offset-checkpoint").unlink()
    plan = plan_scan(str(log_dir), opts())
    assert plan.report.offsets()[("t", 0)] == (0, 2000)
    assert "no high watermark" in plan.report.partitions[0].upper_bound_source
    assert any("no high watermark" in n for n in plan.report.partitions[0].notes)


def test_a_lost_last_segment_is_data_loss_when_the_recovery_point_says_it_was_flushed(single):
    """A high watermark above the log end is a crash's unflushed tail (a note: a restarted broker truncates it and
    fetches it again) unless the recovery point is above the log end too: then offsets the broker had flushed are
    missing (a lost segment file, a copy that missed it), which failOnDataLoss fails and otherwise reports."""
    log_dir, log, _ = single
    last = log.segments[-1]
    for path in last.log_path.parent.glob(last.log_path.stem + ".*"):
        path.unlink()
    leo = last.base_offset
    write_offset_checkpoint(log_dir / "recovery-point-offset-checkpoint", {("t", 0): 2000})
    with pytest.raises(DataLossError, match=rf"high watermark 2000 and recovery point 2000 are above the log end "
                                            rf"offset {leo} .*offsets \[{leo}, 2000\)"):
        plan_scan(str(log_dir), opts())
    plan = plan_scan(str(log_dir), opts(failOnDataLoss="false"))
    assert plan.report.offsets()[("t", 0)] == (0, leo)
    assert any(f"offsets [{leo}, 2000)" in note for note in plan.report.data_loss)
    # a read that does not reach the end lost nothing; one to the log end (upperBound=logEndOffset) loses the same
    # offsets past it (before, it said nothing of them)
    assert plan_scan(str(log_dir), opts(endingOffsets='{"t": {"0": 10}}')).report.offsets()[("t", 0)] == (0, 10)
    with pytest.raises(DataLossError, match=rf"offsets \[{leo}, 2000\) were acknowledged and flushed"):
        plan_scan(str(log_dir), opts(upperBound="logEndOffset"))
    plan = plan_scan(str(log_dir), opts(upperBound="logEndOffset", failOnDataLoss="false"))
    assert plan.report.offsets()[("t", 0)] == (0, leo)
    assert any(f"offsets [{leo}, 2000)" in note for note in plan.report.data_loss)
    # the recovery point at or below the log end: an unflushed tail lost in a crash, only noted
    write_offset_checkpoint(log_dir / "recovery-point-offset-checkpoint", {("t", 0): leo})
    plan = plan_scan(str(log_dir), opts())
    assert plan.report.offsets()[("t", 0)] == (0, leo) and not plan.report.data_loss
    assert any("high watermark 2000 is above the log end offset" in n for n in plan.report.partitions[0].notes)


def test_specific_offsets_exact_bytes(single):
    log_dir, _, _ = single
    plan = plan_scan(str(log_dir), opts(startingOffsets='{"t":{"0":503}}', endingOffsets='{"t":{"0":1497}}'))
    assert plan.report.offsets()[("t", 0)] == (503, 1497)
    check_coverage(plan, exact_outside=True)
    assert all(s.start_offset == 503 and s.end_offset == 1497 for s in plan.slices)
    assert plan.report.segments_pruned == 0 or plan.report.segments_pruned < plan.report.segments_considered


def test_segments_outside_range_are_pruned_by_name(single):
    log_dir, log, _ = single
    second = log.segments[1].base_offset
    plan = plan_scan(str(log_dir), opts(startingOffsets=f'{{"t":{{"0":{second}}}}}',
                                        endingOffsets=f'{{"t":{{"0":{second + 10}}}}}'))
    assert plan.report.segments_pruned == len(log.segments) - 1
    assert {s.base_offset for s in plan.slices} == {second}
    check_coverage(plan, exact_outside=True)


def test_live_broker_dir_with_preallocated_indexes(tmp_path):
    log_dir = tmp_path / "live"
    log, stamps = write_partition(log_dir, "t", 0, records=1500, segment_bytes=120_000, live=True)
    active = Path(log.segments[-1].log_path).with_suffix(".index")
    assert active.stat().st_size == 10 * 1024 * 1024  # zero-filled tail, as a running broker leaves it
    plan = plan_scan(str(log_dir), opts(splitSize="20k", startingTimestamp=stamps[1100]))
    assert plan.report.offsets()[("t", 0)] == (1100, 1500)
    check_coverage(plan, exact_outside=True)
    assert plan.report.partitions[0].log_end_offset == 1500
    assert not plan.report.indexes_rebuilt


def test_resolve_offsets_and_empty_ranges(single):
    log_dir, _, _ = single
    pdir = discover(str(log_dir))[0]
    assert resolve_offsets(pdir, opts()) == (0, 2000)
    assert resolve_offsets(pdir, opts(startingOffsets='{"t":{"0":-2}}', endingOffsets='{"t":{"0":-1}}')) == (0, 2000)
    # start above the end reads nothing (Spark drops such ranges)
    plan = plan_scan(str(log_dir), opts(startingOffsets='{"t":{"0":1999}}', endingOffsets='{"t":{"0":1999}}'))
    assert plan.slices == []


def test_unlisted_partitions_take_defaults_and_listed_must_exist(tmp_path):
    log_dir = tmp_path / "b"
    write_partition(log_dir, "t", 0, records=50)
    write_partition(log_dir, "t", 1, records=60)
    write_partition(log_dir, "u", 0, records=70)
    plan = plan_scan(str(log_dir), opts(startingOffsets='{"t":{"1":7}}'))
    assert plan.report.offsets() == {("t", 0): (0, 50), ("t", 1): (7, 60), ("u", 0): (0, 70)}
    check_coverage(plan)
    with pytest.raises(InvalidOptionError, match="t-5"):
        plan_scan(str(log_dir), opts(startingOffsets='{"t":{"5":7}}'))
    with pytest.raises(InvalidOptionError, match="u-0"):
        plan_scan(str(log_dir), opts(subscribe="t", endingOffsetsByTimestamp='{"u":{"0":5}}'))


def test_topic_selection_and_predicates(tmp_path):
    log_dir = tmp_path / "b"
    for topic, partition in (("alpha", 0), ("alpha", 1), ("beta", 0), ("gamma", 0)):
        write_partition(log_dir, topic, partition, records=20)
    names = lambda plan: sorted({(s.topic, s.partition) for s in plan.slices})  # noqa: E731
    assert names(plan_scan(str(log_dir), opts(subscribe="alpha,gamma"))) == [("alpha", 0), ("alpha", 1),
                                                                           ("gamma", 0)]
    assert names(plan_scan(str(log_dir), opts(subscribePattern="^al"))) == [("alpha", 0), ("alpha", 1)]
    assert names(plan_scan(str(log_dir), opts(subscribePattern="et"))) == [("beta", 0)]  # searched, as Spark does
    assert names(plan_scan(str(log_dir), opts(assign='{"alpha":[1],"beta":[0]}'))) == [("alpha", 1), ("beta", 0)]
    plan = plan_scan(str(log_dir), opts(), Predicates(topics=frozenset({"alpha", "beta"}),
                                                      partitions=frozenset({0})))
    assert names(plan) == [("alpha", 0), ("beta", 0)]
    assert plan.report.partitions_considered == 4
    assert len(plan.report.partitions_pruned) == 2
    plan = plan_scan(str(log_dir), opts(), Predicates(partitions=frozenset({("gamma", 0)})))
    assert names(plan) == [("gamma", 0)]
    with pytest.raises(LayoutError):
        plan_scan(None, opts())
    assert names(plan_scan(None, opts(path=str(log_dir / "beta-0")))) == [("beta", 0)]


# --------------------------------------------------------------------------------------------------------------------
# Data loss

def test_start_below_log_start(tmp_path):
    log_dir = tmp_path / "b"
    write_partition(log_dir, "t", 0, records=100, start=1000)
    with pytest.raises(DataLossError, match=r"t-0.*500.*1000"):
        plan_scan(str(log_dir), opts(startingOffsets='{"t":{"0":500}}'))
    plan = plan_scan(str(log_dir), opts(startingOffsets='{"t":{"0":500}}', failOnDataLoss="false"))
    assert plan.report.offsets()[("t", 0)] == (1000, 1100)
    assert len(plan.report.data_loss) == 1 and "500" in plan.report.data_loss[0]
    check_coverage(plan, exact_outside=True)


def test_log_start_offset_checkpoint_moves_earliest(single):
    log_dir, log, _ = single
    write_offset_checkpoint(log_dir / "log-start-offset-checkpoint", {("t", 0): 777})
    plan = plan_scan(str(log_dir), opts())
    assert plan.report.offsets()[("t", 0)] == (777, 2000)
    check_coverage(plan, exact_outside=True)
    assert plan.report.segments_pruned == sum(1 for i, s in enumerate(log.segments)
                                              if i + 1 < len(log.segments) and log.segments[i + 1].base_offset <= 777)
    with pytest.raises(DataLossError):
        plan_scan(str(log_dir), opts(startingOffsets='{"t":{"0":776}}'))


def test_start_in_a_hole_between_segments(tmp_path):
    """As a fetch there returns the next batch (and Spark reads past offsets at or above the earliest that are not
    there): the start moves to the next segment with a note, under either failOnDataLoss; a follower of a
    compacted topic holds such holes with no cleaner checkpoint entry."""
    log_dir = tmp_path / "b"
    write_partition(log_dir, "t", 0, records=300, hole=(100, 250))
    for fail in (True, False):
        plan = plan_scan(str(log_dir), opts(startingOffsets='{"t":{"0":120}}', failOnDataLoss=fail))
        assert plan.report.offsets()[("t", 0)] == (250, 450)
        assert not plan.report.data_loss
        assert any("starting offset 120 is in a hole between segments" in n and "reading from 250" in n
                   for p in plan.report.partitions for n in p.notes)
        check_coverage(plan, exact_outside=True)
    # starting before the hole is fine: the reader just meets the gap
    assert plan_scan(str(log_dir), opts(startingOffsets='{"t":{"0":99}}')).report.offsets()[("t", 0)] == (99, 450)


def test_end_above_upper_bound(single):
    log_dir, _, _ = single
    with pytest.raises(DataLossError, match="2500"):
        plan_scan(str(log_dir), opts(endingOffsets='{"t":{"0":2500}}'))
    plan = plan_scan(str(log_dir), opts(endingOffsets='{"t":{"0":2500}}', failOnDataLoss="false"))
    assert plan.report.offsets()[("t", 0)] == (0, 2000)


# --------------------------------------------------------------------------------------------------------------------
# Splitting

def test_split_size_cuts_at_index_entries(single):
    log_dir, log, _ = single
    plan = plan_scan(str(log_dir), opts(splitSize="16k"))
    assert check_coverage(plan, exact_outside=True) == 400
    assert len(plan.slices) > len(log.segments) * 4
    interval = 4096 + 5 * 200  # one index interval plus a batch
    for piece in plan.slices:
        assert piece.size_bytes < 16384 + interval


def test_min_partitions(single):
    log_dir, log, _ = single
    plan = plan_scan(str(log_dir), opts(minPartitions="10"))
    assert len(plan.slices) == 10
    assert check_coverage(plan, exact_outside=True) == 400
    # more than possible: stops at one slice per index interval
    plan = plan_scan(str(log_dir), opts(minPartitions="100000"))
    assert check_coverage(plan, exact_outside=True) == 400
    assert any("minPartitions" in n for n in plan.report.notes)
    assert len(plan.slices) == sum(len(Path(s.log_path.with_suffix(".index")).read_bytes()) // 8 + 1
                                   for s in log.segments)


def test_max_records_per_partition(single):
    log_dir, _, _ = single
    plan = plan_scan(str(log_dir), opts(maxRecordsPerPartition="100"))
    assert check_coverage(plan, exact_outside=True) == 400
    for piece in plan.slices:
        headers = [h for h in batches_of(piece.log_path) if piece.start_position <= h.position < piece.end_position]
        count = sum(h.last_offset - h.base_offset + 1 for h in headers)
        assert count <= 100 + 25  # approximate: cuts are index entries (~4 KiB = ~20 records apart)
    assert len(plan.slices) >= 20


def _piece(topic, partition, start, size, path="d"):
    return SegmentSlice(topic=topic, partition=partition, log_path=f"/{topic}-{partition}/{start:020d}.log",
                        base_offset=start, start_position=0, end_position=size, start_offset=start,
                        end_offset=start + 10, partition_path=path)


def test_pack_slices_groups_consecutive_small_slices_of_one_partition():
    a = [_piece("a", 0, i * 10, 1000) for i in range(5)]
    b = [_piece("a", 1, i * 10, 1000) for i in range(2)]
    c = [_piece("b", 0, 0, 50_000), _piece("b", 0, 10, 100), _piece("b", 0, 20, 100)]
    other_replica = [_piece("b", 0, 30, 100, path="e")]
    slices = a + b + c + other_replica
    units = pack_slices(slices, 4000, 0)
    assert units == [tuple(a[:4]), (a[4],), tuple(b), (c[0],), tuple(c[1:]), tuple(other_replica)]
    # the open cost counts per slice: 1000 + 1000 each -> two per 4000-byte unit
    assert pack_slices(a, 4000, 1000) == [tuple(a[0:2]), tuple(a[2:4]), (a[4],)]
    # an open cost at the target keeps every slice alone; so does maxRecordsPerPartition (packing=False)
    assert pack_slices(slices, 4000, 4000) == [(s,) for s in slices]
    assert pack_slices(slices, 1 << 30, 0, packing=False) == [(s,) for s in slices]
    # every slice in exactly one unit, in plan order
    assert [s for unit in pack_slices(slices, 1 << 30, 4 << 20) for s in unit] == slices
    assert pack_slices([], 100, 10) == []


@pytest.mark.parametrize("count, wanted", [(5, 4), (10, 3), (10, 10), (7, 2), (3, 5)])
@pytest.mark.parametrize("first_size", [None, 50 << 20])  # one slice far larger than the rest
def test_pack_slices_never_leaves_fewer_units_than_min_partitions(count, wanted, first_size):
    slices = [_piece("t", 0, i * 10, first_size if i == 0 and first_size else 100 + 37 * i) for i in range(count)]
    units = pack_slices(slices, 1 << 30, 4 << 20, wanted)
    assert len(units) >= min(wanted, count)
    assert [s for unit in units for s in unit] == slices


def test_min_partitions_divides_each_partition_as_spark_rounds_it():
    """KafkaOffsetRangeCalculator: a partition gets round(size / (total / minPartitions)) parts, so 14 equal
    partitions asked for 15 stay one unit each (plus one halved to reach 15), not a full unit and a sliver each."""
    slices = [_piece(f"t{p}", 0, i * 10, 1000) for p in range(14) for i in range(7)]
    for wanted, expected in ((14, 14), (15, 15), (28, 28), (42, 42)):
        units = pack_slices(slices, 1 << 30, 0, wanted)
        assert len(units) == expected, (wanted, len(units))
        assert [s for unit in units for s in unit] == slices
    sizes = sorted(sum(s.size_bytes for s in unit) for unit in pack_slices(slices, 1 << 30, 0, 28))
    assert sizes[0] >= 3000 and sizes[-1] <= 4000  # halves of 7 slices: 3 and 4, never 6 and 1
    # Spark first takes out the partitions whose share rounds to one part, then divides the rest of minPartitions
    skewed = [_piece("big", 0, i * 10, 1000) for i in range(100)] + [_piece(f"s{p}", 0, 0, 1000) for p in range(9)]
    assert len(pack_slices(skewed, 1 << 30, 0, 20)) == 20
    # Java rounds halves up: two equal partitions asked for 5 get 3 parts each (2.5 -> 3)
    even = [_piece(t, 0, i * 10, 1000) for t in ("a", "b") for i in range(10)]
    assert [len(u) for u in pack_slices(even, 1 << 30, 0, 5)] == [3, 4, 3, 3, 4, 3]
    # more parallelism never makes a unit larger than packing allowed
    mixed = [_piece("p0", 0, i * 10, c) for i, c in enumerate([10, 60, 60, 1000])] + \
        [_piece("p1", 0, i * 10, c) for i, c in enumerate([1000, 10, 10, 1000])]
    for wanted in range(1, 12):
        units = pack_slices(mixed, 100, 0, wanted)
        assert all(len(u) == 1 or sum(s.size_bytes for s in u) <= 100 for u in units), wanted
        assert [s for unit in units for s in unit] == mixed
    assert len(pack_slices([_piece("z", 0, 0, 0)], 5000, 0, 8)) == 1  # nothing to divide, and no division by 0
    # the largest minPartitions the option takes: as many units as slices, at once (parts past that are empty)
    many = [_piece("t", 0, i * 10, 1000) for i in range(1000)]
    started = time.perf_counter()
    assert len(pack_slices(many, 1000, 0, 2**31 - 1)) == 1000 and time.perf_counter() - started < 1


def test_pack_slices_packs_small_topic_partitions_together():
    """With across_partitions, units of topic-partitions holding no more bytes than the open cost share units up to
    the target (each slice counting its bytes plus the open cost), in plan order; a larger one stays alone."""
    mib = 1 << 20
    tiny = [_piece(f"t{p}", p % 3, 0, 1000) for p in range(10)]  # 10 partitions of one small slice each
    big = [_piece("big", 0, 0, 50 * mib)]
    last = [_piece("u", 0, 0, 4 * mib), _piece("u", 1, 0, 4 * mib + 1)]  # at the open cost, and just over it
    slices = tiny[:4] + big + tiny[4:] + last
    units = pack_slices(slices, 20 * mib, 4 * mib, across_partitions=True)
    # 4 MiB + 1000 bytes each: four fit in 20 MiB, a fifth does not
    assert units == [tuple(tiny[:4]), tuple(big), tuple(tiny[4:8]), (tiny[8], tiny[9], last[0]), (last[1],)]
    assert [s for unit in units for s in unit] == slices  # the merged units follow the plan here
    # off (the default of the function, and packTopicPartitions=false): one unit per topic-partition
    assert pack_slices(slices, 20 * mib, 4 * mib) == [(s,) for s in slices]
    # an open cost of 0 packs nothing across partitions but empty ones (tasks cost nothing, by that setting)
    empty = [_piece(f"e{p}", 0, 0, 0) for p in range(3)]
    assert pack_slices(tiny + empty, 1 << 30, 0, across_partitions=True) == [(s,) for s in tiny] + [tuple(empty)]
    # a partition's own slices are packed first, and a unit of many small slices can still join others
    several = [_piece("s", 0, i * 10, 100) for i in range(3)]
    assert pack_slices(several + tiny[:2], 1 << 30, 1000, across_partitions=True) == [tuple(several + tiny[:2])]
    # the small last unit of a larger partition (its active segment) stays after that partition's other units: a
    # topic-partition's records come in offset order (found in review)
    busy = [_piece("b", 0, 0, 125 * mib), _piece("b", 0, 1000, 1 * mib)]
    units = pack_slices(tiny[:1] + busy + tiny[1:2], 128 * mib, 4 * mib, across_partitions=True)
    assert units == [(tiny[0], tiny[1]), (busy[0],), (busy[1],)]


def test_pack_small_topic_partitions_keeps_min_partitions():
    """minPartitions lowers the packing target as Spark's maxSplitBytes lowers it for minPartitionNum (total cost
    over minPartitions, at least the open cost); when packing would still leave fewer units, none are packed."""
    mib = 1 << 20
    tiny = [_piece(f"t{p}", 0, 0, 1000) for p in range(100)]
    assert len(pack_slices(tiny, 128 * mib, 4 * mib, across_partitions=True)) == 4  # 31 per 128 MiB
    for wanted in (1, 4, 10, 25, 50, 100):
        units = pack_slices(tiny, 128 * mib, 4 * mib, wanted, across_partitions=True)
        assert len(units) >= wanted, wanted
        assert len(units) <= max(4, 2 * wanted), wanted  # still packed, not one unit per partition
        assert [s for unit in units for s in unit] == tiny
    # more than the partitions there are: Spark's division, one unit each (nothing to halve)
    assert pack_slices(tiny, 128 * mib, 4 * mib, 150, across_partitions=True) == [(s,) for s in tiny]


def test_input_partitions_pack_small_topic_partitions(tmp_path):
    """A log dir of many nearly empty topic-partitions (the usual state of most of a cluster's partitions) is read
    in a few units of work, not one Spark task per partition; packTopicPartitions=false gives one per partition."""
    log_dir = tmp_path / "broker0"
    for partition in range(40):
        write_partition(log_dir, "idle", partition, records=3)
    write_partition(log_dir, "busy", 0, records=40_000, segment_bytes=1 << 30)
    options = opts()
    plan = plan_scan(str(log_dir), options)
    assert len(plan.slices) == 41
    units = plan.input_partitions(options)
    busy = [u for u in units if any(s.topic == "busy" for s in u)]
    assert len(busy) == 1 and len(busy[0]) == 1  # over the open cost: alone, as before
    assert sorted(s.partition for u in units if u not in busy for s in u) == list(range(40))
    assert len(units) == 1 + 2  # 40 x (4 MiB + a few bytes): 31 per 128 MiB
    assert len(plan.input_partitions(opts(packTopicPartitions="false"))) == 41
    idle = [u for u in plan.input_partitions(opts(splitSize="16m")) if u[0].topic == "idle"]
    assert [len(u) for u in idle] == [3] * 13 + [1]  # three 4 MiB costs per 16 MiB
    assert len(plan.input_partitions(opts(minPartitions="8"))) >= 8
    with pytest.raises(InvalidOptionError, match="packTopicPartitions"):
        opts(packTopicPartitions="sometimes")


def test_input_partitions_of_a_partition_of_many_small_segments(tmp_path):
    """A quiet topic's partition rolled into 27 small segments is one unit of work, as Spark's Kafka source reads
    one topic-partition in one task (a task per segment costs tens of ms each for a few KiB)."""
    log_dir = tmp_path / "broker0"
    for partition in range(2):
        write_partition(log_dir, "quiet", partition, records=400, segment_bytes=2000)
    options = opts()
    plan = plan_scan(str(log_dir), options)
    assert len(plan.slices) >= 50
    units = plan.input_partitions(options)
    assert [[(s.topic, s.partition) for s in u] for u in units] == [[("quiet", p)] * (len(plan.slices) // 2)
                                                                   for p in range(2)]
    assert len(plan.input_partitions(opts(openCostInBytes="128m"))) == len(plan.slices)
    assert len(plan.input_partitions(opts(minPartitions="8"))) >= 8
    # Spark divides only when minPartitions exceeds the units there are (KafkaOffsetRangeCalculator), however
    # uneven the partitions: here one holds four times the other's bytes
    write_partition(log_dir, "busy", 0, records=1600, segment_bytes=2000)
    plan = plan_scan(str(log_dir), opts())
    units = plan.input_partitions(opts())
    assert len(units) >= 3
    assert plan.input_partitions(opts(minPartitions=str(len(units)))) == units
    assert len(plan.input_partitions(opts(minPartitions=str(len(units) + 1)))) >= len(units) + 1
    with pytest.raises(InvalidOptionError, match="openCostInBytes"):
        opts(openCostInBytes="-1")
    assert opts(openCostInBytes="0").open_cost == 0


def test_a_partition_without_segments_is_an_empty_log_at_its_log_start(tmp_path):
    """Kafka's LogLoader gives it an empty segment at the checkpointed log start: offsets asked below or past it are
    data loss, as on any empty log, not a silent empty read."""
    log_dir = tmp_path / "broker0"
    (log_dir / "nolog-0").mkdir(parents=True)
    write_offset_checkpoint(log_dir / "log-start-offset-checkpoint", {("nolog", 0): 42})
    write_offset_checkpoint(log_dir / "replication-offset-checkpoint", {("nolog", 0): 42})
    plan = plan_scan(str(log_dir), opts())
    assert plan.slices == [] and plan.report.offsets()[("nolog", 0)] == (42, 42)
    for starting in ('{"nolog":{"0":10}}', '{"nolog":{"0":50}}'):
        with pytest.raises(DataLossError, match="nolog-0: starting offset"):
            plan_scan(str(log_dir), opts(startingOffsets=starting))
    plan = plan_scan(str(log_dir), opts(startingOffsets='{"nolog":{"0":10}}', failOnDataLoss="false"))
    assert plan.slices == [] and plan.report.data_loss


def test_a_stale_txn_index_past_the_recovery_point_is_not_trusted(tmp_path):
    """A crash (or a live copy) left the active segment's .txnindex without the entry for an ABORT whose batches
    are in the segment; the broker's recovery rebuilds that file from the log, so aborted records must not come
    back as committed under read_committed."""
    import kafkaseg
    from kafkaseg.testing import ControlType, build_control_batch

    log_dir = tmp_path / "broker0"
    writer = PartitionWriter(log_dir / "tx-0")
    writer.append(build_batch_v2([Record(0, T0, b"k", b"v")]))
    writer.append(build_batch_v2([Record(1, T0, b"k", b"a"), Record(2, T0, b"k", b"b")], is_transactional=True,
                                 producer_id=7, producer_epoch=0, base_sequence=0))
    writer.append(build_control_batch(3, T0, ControlType.ABORT, producer_id=7, producer_epoch=0))
    writer.append(build_batch_v2([Record(4, T0, b"k", b"v")]))
    writer.close()
    (txnindex,) = (log_dir / "tx-0").glob("*.txnindex")
    assert txnindex.stat().st_size == 34  # the writer indexed the abort, as the broker does
    committed = {"kafka.isolation.level": "read_committed"}
    write_offset_checkpoint(log_dir / "replication-offset-checkpoint", {("tx", 0): 5})
    assert kafkaseg.read_arrow(str(log_dir), **committed)["offset"].to_pylist() == [0, 4]
    txnindex.write_bytes(b"")  # the entry never reached the disk
    write_offset_checkpoint(log_dir / "recovery-point-offset-checkpoint", {("tx", 0): 0})
    scan = kafkaseg.open_scan(str(log_dir), **committed)
    assert scan.to_table()["offset"].to_pylist() == [0, 4]
    assert any("stale .txnindex (no entry for producer 7's ABORT marker at offset 3" in why
               for _, why in scan.plan.report.indexes_rebuilt)


def test_a_stale_txn_index_missing_an_abort_of_a_transaction_from_the_previous_segment(tmp_path):
    """The segment rolled between a transaction's data and its ABORT: the producer snapshot Kafka writes at the
    roll says the transaction was open at the new segment's base, so its ABORT there needs an entry too."""
    import kafkaseg
    from kafkaseg.testing import ControlType, build_control_batch

    log_dir = tmp_path / "broker0"
    writer = PartitionWriter(log_dir / "tx-0")
    writer.append(build_batch_v2([Record(0, T0, b"k", b"v")]))
    writer.append(build_batch_v2([Record(1, T0, b"k", b"a"), Record(2, T0, b"k", b"b")], is_transactional=True,
                                 producer_id=7, producer_epoch=0, base_sequence=0))
    writer.roll(3)
    writer.append(build_control_batch(3, T0, ControlType.ABORT, producer_id=7, producer_epoch=0))
    writer.append(build_batch_v2([Record(4, T0, b"k", b"v")]))
    writer.close()
    assert (log_dir / "tx-0" / "00000000000000000003.snapshot").exists()
    (txnindex,) = (log_dir / "tx-0").glob("*3.txnindex")
    committed = {"kafka.isolation.level": "read_committed"}
    write_offset_checkpoint(log_dir / "replication-offset-checkpoint", {("tx", 0): 5})
    assert kafkaseg.read_arrow(str(log_dir), **committed)["offset"].to_pylist() == [0, 4]
    txnindex.write_bytes(b"")
    write_offset_checkpoint(log_dir / "recovery-point-offset-checkpoint", {("tx", 0): 3})
    assert kafkaseg.read_arrow(str(log_dir), **committed)["offset"].to_pylist() == [0, 4]


def test_one_percent_offset_range_plans_at_most_two_percent_of_bytes(corpus_dir, tmp_path):
    log_dir = tmp_path / "b"
    log, _ = write_partition(log_dir, "big", 0, records=20000, per_batch=4, value_size=90)
    total = sum(s.size for s in log.segments)
    assert total > 2_000_000
    for lo in (0, 7777, 19800):
        plan = plan_scan(str(log_dir), opts(), Predicates(offset_ranges=((lo, lo + 200),)))
        assert plan.report.bytes_planned <= 0.02 * total, (lo, plan.report.bytes_planned, total)
        assert all((s.start_offset, s.end_offset) == (lo, lo + 200) for s in plan.slices)
        check_coverage(plan, {("big", 0): (lo, lo + 200)}, exact_outside=True)
    # the real 2 MB KRaft metadata segment with its broker-written index
    path = next(corpus_dir.glob("segments/RaviAzzuraPutra__*/*/kafka/data/__cluster_metadata-0"))
    full = plan_scan(str(path), opts())
    end = full.report.offsets()[("__cluster_metadata", 0)][1]
    lo = end // 2
    span = end // 100
    plan = plan_scan(str(path), opts(), Predicates(offset_ranges=((lo, lo + span),)))
    assert plan.report.bytes_planned <= 0.02 * full.report.bytes_planned
    check_coverage(plan, {("__cluster_metadata", 0): (lo, lo + span)}, exact_outside=True)


def test_offset_range_union_and_intersection(single):
    log_dir, _, _ = single
    ranges = ((10, 20), (15, 40), (900, 950), (1990, 5000), (-5, 3))
    plan = plan_scan(str(log_dir), opts(startingOffsets='{"t":{"0":1}}'), Predicates(offset_ranges=ranges))
    assert sorted({(s.start_offset, s.end_offset) for s in plan.slices}) == [(1, 3), (10, 40), (900, 950),
                                                                             (1990, 2000)]
    for lo, hi in [(1, 3), (10, 40), (900, 950), (1990, 2000)]:
        sub = [s for s in plan.slices if (s.start_offset, s.end_offset) == (lo, hi)]
        for h in (h for log in sorted(Path(log_dir, "t-0").glob("*.log")) for h in batches_of(log)):
            if h.last_offset >= lo and h.base_offset < hi:
                assert sum(1 for s in sub if s.start_position <= h.position and h.end <= s.end_position) == 1
    assert plan_scan(str(log_dir), opts(), Predicates(offset_ranges=())).slices == []


END = 1 << 62


@pytest.mark.parametrize("ranges, split", [
    (((0, 7), (8, END)), None),  # NOT offset = 7: 7 is mid-batch (5 records a batch)
    (((6, 7), (8, 9)), None),  # offset IN (6, 8): one batch holds both
    (((0, 700), (701, 703), (705, END)), None),  # offset <> 700 AND offset <> 703 AND offset <> 704
    (((0, 7), (8, END)), "4k"),  # the merged piece is cut by size; every cut keeps the exclusion
    (((0, 1000), (1001, 1002), (1003, END)), "10k"),
])
def test_ranges_sharing_a_batch_are_read_once(single, ranges, split):
    """NOT offset = 7 is [earliest, 7) and [8, latest): both needed the batch holding 7, and they were planned as
    two slices that both read and decoded it (and the batches around it). Ranges of one segment whose bytes meet
    are one slice, which reads those bytes once and leaves the offsets between the ranges out."""
    log_dir, _, _ = single
    options = opts(**({"splitSize": split} if split else {}))
    plan = plan_scan(str(log_dir), options, Predicates(offset_ranges=ranges))
    by_log: dict[str, list] = {}
    for s in plan.slices:
        by_log.setdefault(s.log_path, []).append((s.start_position, s.end_position))
    for spans in by_log.values():
        spans.sort()
        assert all(a[1] <= b[0] for a, b in zip(spans, spans[1:])), spans  # no byte planned twice
    assert plan.report.bytes_planned == sum(s.size_bytes for s in plan.slices)

    scan = Scan(plan, options)
    table = scan.to_table()
    assert table["offset"].to_pylist() == [o for o in range(2000) if any(lo <= o < hi for lo, hi in ranges)]
    assert scan.metrics.records == table.num_rows
    assert scan.metrics.bytes_read == plan.report.bytes_planned
    wanted = [h for log in sorted(Path(log_dir, "t-0").glob("*.log")) for h in batches_of(log)
              if any(h.last_offset >= lo and h.base_offset < hi for lo, hi in ranges)]
    assert scan.metrics.decode.batches == len(wanted)  # each batch holding a wanted offset decoded once
    if split is None and ranges[0][0] == 0:  # whole segments, one slice each
        whole = plan_scan(str(log_dir), options)
        assert len(plan.slices) == len(whole.slices)
        assert plan.report.bytes_planned == whole.report.bytes_planned


def test_ranges_apart_stay_apart(single):
    """Ranges whose batches do not meet are still separate slices: the bytes between them are not read."""
    log_dir, _, _ = single
    ranges = ((0, 5), (15, 20))  # batches [0, 5) and [15, 20): the two batches between them are not needed
    plan = plan_scan(str(log_dir), opts(), Predicates(offset_ranges=ranges))
    assert sorted((s.start_offset, s.end_offset) for s in plan.slices) == [(0, 5), (15, 20)]
    scan = Scan(plan, opts())
    assert scan.to_table()["offset"].to_pylist() == list(range(5)) + list(range(15, 20))
    assert scan.metrics.decode.batches == 2


# --------------------------------------------------------------------------------------------------------------------
# Timestamps

def jumbled(offset: int) -> int:
    """CreateTime timestamps that go back and forth inside batches but trend upward."""
    return T0 + offset * 10 + (37 if offset % 3 == 0 else 0) - (25 if offset % 5 == 1 else 0)


@pytest.mark.parametrize("codec", ["none", "gzip", "zstd"])
def test_offset_for_timestamp_is_exact(tmp_path, codec):
    log_dir = tmp_path / "b"
    _, stamps = write_partition(log_dir, "t", 0, records=600, per_batch=7, segment_bytes=30_000, codec=codec,
                                timestamp=jumbled)
    pdir = discover(str(log_dir))[0]
    assert len(pdir.segments) > 1 or codec != "none"
    for target in (T0 - 5, T0, T0 + 1234, T0 + 3001, T0 + 4567, T0 + 5990, T0 + 6100):
        expected = next((o for o in sorted(stamps) if stamps[o] >= target), None)
        assert offset_for_timestamp(pdir, target) == expected, target


def test_offset_for_timestamp_within_one_batch(tmp_path):
    """The first record (not batch) with timestamp >= T, at or after the log start offset; LogAppendTime batches
    give every record the batch's max timestamp."""
    def one_batch_partition(name, batch, log_start=10):
        writer = PartitionWriter(tmp_path / name / "t-0", log_start_offset=log_start)
        writer.append(batch)
        writer.close()
        return discover(str(tmp_path / name))[0]

    batch = build_batch_v2([Record(10, 500, None, b"a"), Record(11, 300, None, b"b"), Record(12, 700, None, b"c")])
    pdir = one_batch_partition("create", batch)
    assert offset_for_timestamp(pdir, 400) == 10
    assert offset_for_timestamp(pdir, 600) == 12
    assert offset_for_timestamp(pdir, 701) is None
    one_batch_partition("start11", batch)
    write_offset_checkpoint(tmp_path / "start11" / "log-start-offset-checkpoint", {("t", 0): 11})
    assert offset_for_timestamp(discover(str(tmp_path / "start11"))[0], 400) == 12
    log_append = build_batch_v2([Record(10, 500, None, b"a"), Record(11, 300, None, b"b")],
                                timestamp_type=1, log_append_time=900)
    assert offset_for_timestamp(one_batch_partition("append", log_append), 800) == 10


def test_timestamp_options(tmp_path):
    log_dir = tmp_path / "b"
    _, stamps = write_partition(log_dir, "t", 0, records=500, segment_bytes=20_000)
    write_partition(log_dir, "t", 1, records=100, timestamp=lambda o: T0 + 100_000 + o)
    first_at = lambda ts: next(o for o in sorted(stamps) if stamps[o] >= ts)  # noqa: E731
    plan = plan_scan(str(log_dir), opts(assign='{"t":[0]}', startingTimestamp=T0 + 1005, endingTimestamp=T0 + 3000))
    assert plan.report.offsets()[("t", 0)] == (first_at(T0 + 1005), first_at(T0 + 3000))
    check_coverage(plan, exact_outside=True)
    # per-partition timestamps; an ending timestamp past everything resolves to latest
    plan = plan_scan(str(log_dir), opts(startingOffsetsByTimestamp=f'{{"t":{{"0":{T0 + 2000}}}}}',
                                        endingOffsetsByTimestamp=f'{{"t":{{"0":{T0 + 10 ** 9}}}}}'))
    assert plan.report.offsets() == {("t", 0): (200, 500), ("t", 1): (0, 100)}
    # the global timestamp wins over per-partition ones and offsets
    plan = plan_scan(str(log_dir), opts(startingTimestamp=T0 + 100_050, startingOffsets='{"t":{"0":3,"1":4}}',
                                        startingOffsetsByTimestamp=f'{{"t":{{"0":{T0}}}}}',
                                        startingOffsetsByTimestampStrategy="latest"))
    assert plan.report.offsets() == {("t", 0): (500, 500), ("t", 1): (50, 100)}


def test_a_time_window_the_wrong_way_round_is_an_error(tmp_path):
    """Spark's Kafka source fails a read whose start is after its end ("Beginning offset ... is after the ending
    offset"); a start and an end resolved from the user's timestamps the wrong way round are a typo, not data."""
    log_dir = tmp_path / "b"
    _, stamps = write_partition(log_dir, "t", 0, records=100)
    with pytest.raises(InvalidOptionError, match=r"t-0: the start offset 60 \(startingTimestamp\) is after the end "
                                                 r"offset 10 \(endingTimestamp\)"):
        plan_scan(str(log_dir), opts(startingTimestamp=stamps[60], endingTimestamp=stamps[10]))
    with pytest.raises(InvalidOptionError, match="is after the end offset 10"):
        plan_scan(str(log_dir), opts(startingOffsets='{"t":{"0":60}}', endingTimestamp=stamps[10]))
    # a start past the end of the log is the data-loss rule's (failOnDataLoss=false: noted, nothing read)
    plan = plan_scan(str(log_dir), opts(startingOffsets='{"t":{"0":150}}', failOnDataLoss="false"))
    assert plan.slices == [] and "starting offset 150 is above the available end 100" in plan.report.data_loss[0]


def test_starting_timestamp_without_match(tmp_path):
    log_dir = tmp_path / "b"
    write_partition(log_dir, "t", 0, records=50)
    with pytest.raises(InvalidOptionError, match="no offset matched"):
        plan_scan(str(log_dir), opts(startingTimestamp=T0 + 10 ** 6))
    plan = plan_scan(str(log_dir), opts(startingTimestamp=T0 + 10 ** 6, startingOffsetsByTimestampStrategy="latest"))
    assert plan.report.offsets()[("t", 0)] == (50, 50) and plan.slices == []


def test_timestamp_answer_at_or_past_the_high_watermark_is_no_match(tmp_path):
    log_dir = tmp_path / "b"
    _, stamps = write_partition(log_dir, "t", 0, records=100)
    write_offset_checkpoint(log_dir / "replication-offset-checkpoint", {("t", 0): 60})
    with pytest.raises(InvalidOptionError):
        plan_scan(str(log_dir), opts(startingTimestamp=stamps[70]))
    plan = plan_scan(str(log_dir), opts(endingTimestamp=stamps[70]))
    assert plan.report.offsets()[("t", 0)] == (0, 60)


def test_timestamp_predicate_prunes_segments_and_leading_bytes(single):
    log_dir, log, stamps = single
    lo = stamps[1500]
    plan = plan_scan(str(log_dir), opts(), Predicates(timestamp_range=(lo, None)))
    assert plan.report.segments_pruned >= 1
    planned = plan.report.bytes_planned
    assert planned < 0.4 * plan.report.bytes_total
    # every batch that may hold a record with timestamp >= lo is planned exactly once
    for segment in log.segments:
        for h in batches_of(segment.log_path):
            holders = [s for s in plan.slices if s.log_path == str(segment.log_path)
                       and s.start_position <= h.position and h.end <= s.end_position]
            if h.max_timestamp >= lo:
                assert len(holders) == 1
    assert plan_scan(str(log_dir), opts(), Predicates(timestamp_range=(T0 + 10 ** 8, None))).slices == []
    assert plan_scan(str(log_dir), opts(), Predicates(timestamp_range=(5, 5))).slices == []


# --------------------------------------------------------------------------------------------------------------------
# Transactions

def write_transactional(log_dir: Path, *, open_at_end: bool):
    """Producer 7 commits, producer 8 aborts (twice, across a segment roll), producer 9 interleaves; optionally
    producer 10 leaves a transaction open at the end. Returns (PartitionLog, aborted [(pid, first, last)])."""
    writer = PartitionWriter(log_dir / "tx-0", segment_bytes=3000, index_interval_bytes=512)
    offset = 0
    seq: dict[int, int] = {}

    def data(pid, n=3, transactional=True):
        nonlocal offset
        records = [Record(offset + k, T0 + offset + k, b"k", bytes(60)) for k in range(n)]
        writer.append(build_batch_v2(records, is_transactional=transactional, producer_id=pid if pid else -1,
                                     producer_epoch=0 if pid else -1,
                                     base_sequence=seq.get(pid, 0) if pid else -1))
        if pid:
            seq[pid] = seq.get(pid, 0) + n
        offset += n

    def marker(pid, kind):
        nonlocal offset
        writer.append(build_control_batch(offset, T0 + offset, kind, producer_id=pid, producer_epoch=0))
        offset += 1

    for round_ in range(6):
        data(7)
        data(8)
        data(9)
        data(0, transactional=False)
        data(8)
        marker(7, ControlType.COMMIT)
        marker(8, ControlType.ABORT)
        data(9)
        marker(9, ControlType.COMMIT if round_ % 2 else ControlType.ABORT)
    if open_at_end:
        data(10)
        data(0, transactional=False)
    log = writer.close()
    return log, [(t.producer_id, t.first_offset, t.last_offset) for t in log.aborted_txns]


def test_read_committed_aborted_lists_and_lso(tmp_path):
    log_dir = tmp_path / "b"
    log, aborted = write_transactional(log_dir, open_at_end=True)
    assert len(log.segments) > 2 and len(aborted) == 9
    plan = plan_scan(str(log_dir), opts(**{"kafka.isolation.level": "read_committed"}))
    start, end = plan.report.offsets()[("tx", 0)]
    assert end == log.last_stable_offset < log.log_end_offset
    assert plan.report.partitions[0].upper_bound_source.startswith("last stable offset")
    check_coverage(plan, exact_outside=True)
    for piece in plan.slices:
        headers = [h for h in batches_of(piece.log_path) if piece.start_position <= h.position < piece.end_position]
        lo = min(h.base_offset for h in headers)
        hi = max(h.last_offset for h in headers) + 1
        needed = {a for a in aborted if a[2] >= lo and a[1] < hi}  # transactions touching the slice's batches
        assert needed <= set(piece.aborted), (piece, needed)
        assert set(piece.aborted) <= set(aborted)
    # every aborted data batch is listed in the slice that holds it
    for segment in log.segments:
        for h in batches_of(segment.log_path):
            if not h.is_transactional or h.is_control or h.base_offset >= end:
                continue
            txn = [a for a in aborted if a[0] == h.producer_id and a[1] <= h.base_offset <= a[2]]
            (holder,) = [s for s in plan.slices if s.log_path == str(segment.log_path)
                         and s.start_position <= h.position < s.end_position]
            assert all(a in holder.aborted for a in txn)
    uncommitted = plan_scan(str(log_dir), opts())
    assert uncommitted.report.offsets()[("tx", 0)] == (0, log.log_end_offset)
    assert all(s.aborted == () for s in uncommitted.slices)


def test_read_committed_with_split_slices(tmp_path):
    log_dir = tmp_path / "b"
    log, aborted = write_transactional(log_dir, open_at_end=False)
    plan = plan_scan(str(log_dir), opts(**{"kafka.isolation.level": "read_committed", "minPartitions": 40}))
    assert len(plan.slices) >= 20
    assert plan.report.offsets()[("tx", 0)] == (0, log.log_end_offset)
    check_coverage(plan, exact_outside=True)
    seen = set()
    for piece in plan.slices:
        seen.update(piece.aborted)
    assert seen == set(aborted)


# --------------------------------------------------------------------------------------------------------------------
# Replicas

def test_replicas(tmp_path):
    dirs = []
    for n, (records, hw) in enumerate([(300, 250), (300, 300), (200, 200)]):
        log_dir = tmp_path / f"broker{n}"
        write_partition(log_dir, "r", 0, records=records)
        write_offset_checkpoint(log_dir / "replication-offset-checkpoint", {("r", 0): hw})
        dirs.append(str(log_dir))
    plan = plan_scan(dirs, opts())
    assert {s.log_dir for s in plan.slices} == {dirs[1]}
    assert plan.report.offsets()[("r", 0)] == (0, 300)
    (choice,) = plan.report.replicas
    assert choice["chosen"].startswith(dirs[1]) and len(choice["candidates"]) == 3
    assert "high watermark" in choice["reason"]
    check_coverage(plan)
    everything = plan_scan(dirs, opts(replicas="all"))
    assert {s.log_dir for s in everything.slices} == set(dirs)
    assert sorted(p.end_offset for p in everything.report.partitions) == [200, 250, 300]
    assert len(everything.report.replicas) == 3


# --------------------------------------------------------------------------------------------------------------------
# Corpus

def test_corpus_log_dir_plan_covers_every_batch(corpus_dir):
    data = next(corpus_dir.glob("segments/smartassets__backend-server/*/kafka/data"))
    plan = plan_scan(str(data), opts(upperBound="logEndOffset"))
    assert plan.report.bytes_planned == plan.report.bytes_total
    check_coverage(plan)
    hw_plan = plan_scan(str(data), opts())
    assert hw_plan.report.bytes_planned <= plan.report.bytes_planned
    check_coverage(hw_plan)


def test_corpus_split_of_broker_written_index(corpus_dir):
    path = next(corpus_dir.glob("segments/RaviAzzuraPutra__*/*/kafka/data/__cluster_metadata-0"))
    plan = plan_scan(str(path), opts(splitSize="200k"))
    assert len(plan.slices) >= 10
    assert check_coverage(plan, exact_outside=True) > 20000
    assert not plan.report.indexes_rebuilt


def test_segments_without_timestamped_batches_are_not_pruned_by_time(tmp_path):
    """v0 wrappers carry no timestamp (their segments' largest is -1), yet may hold v1 records with timestamps
    (KAFKA-4298's cleaner output), which the decoder returns: such segments must not be pruned by a timestamp
    predicate, or rows Spark's filter would keep are lost."""
    from kafkaseg.scan import Scan
    from kafkaseg.testing import PartitionWriter, Record, build_legacy_wrapper
    from kafkaseg.testing.partition import write_offset_checkpoint

    writer = PartitionWriter(tmp_path / "t-0", write_snapshots=False, segment_bytes=600)
    ts, offset = 1_600_000_000_000, 0
    for _ in range(12):
        records = [Record(offset + i, ts + offset + i, b"k", b"v", []) for i in range(5)]
        writer.append(build_legacy_wrapper(records, 0, "gzip", inner_magic=1))
        offset += 5
    writer.close()
    write_offset_checkpoint(tmp_path / "replication-offset-checkpoint", {("t", 0): offset})
    assert len(list(tmp_path.glob("t-0/*.log"))) > 1
    options = opts()
    table = Scan(plan_scan(str(tmp_path), options, Predicates(timestamp_range=(ts + 30, None))), options).to_table()
    kept = [t for t in table.column("timestamp").cast("int64").to_pylist() if t >= (ts + 30) * 1000]
    assert len(kept) == 30


def test_a_legacy_segment_mixing_wrapped_v1_records_and_v1_entries_is_not_pruned_by_time(tmp_path):
    """KAFKA-4298's cleaner output mixes v0 wrappers around v1 records (timestamps no header or index shows) with
    v1 entries (which do set the segment's largest timestamp): a legacy segment is never pruned by time."""
    from kafkaseg.scan import Scan
    from kafkaseg.testing import PartitionWriter, Record, build_legacy_entries, build_legacy_wrapper
    from kafkaseg.testing.partition import write_offset_checkpoint

    writer = PartitionWriter(tmp_path / "t-0", write_snapshots=False)
    ts = 1_600_000_000_000
    writer.append(build_legacy_wrapper([Record(i, ts + 100 + i, b"k", b"w", []) for i in range(5)], 0, "gzip",
                                       inner_magic=1))
    for entry in build_legacy_entries([Record(5 + i, ts + i, b"k", b"v", []) for i in range(5)], 1):
        writer.append(entry)
    writer.close()
    write_offset_checkpoint(tmp_path / "replication-offset-checkpoint", {("t", 0): 10})
    options = opts()
    plan = plan_scan(str(tmp_path), options, Predicates(timestamp_range=(ts + 50, None)))
    table = Scan(plan, options).to_table()
    assert len([t for t in table.column("timestamp").cast("int64").to_pylist() if t >= (ts + 50) * 1000]) == 5


def test_a_segment_deleted_by_retention_during_planning_is_planned_as_the_partition_is_now(tmp_path, monkeypatch):
    """Discovery listed a segment that the broker's retention renames to .deleted before planning reads it: the
    partition is listed again (fresh checkpoints) and planned as it is now; what went is data loss, never a
    LayoutError about a missing file."""
    import kafkaseg.planning as planning
    from kafkaseg.testing import TopicSpec as Spec, write_data_dir

    root = tmp_path / "data"
    write_data_dir(root, [Spec("t", records_per_partition=400, records_per_batch=10, segment_bytes=4096)], seed=2)
    segments = sorted((root / "t-0").glob("*.log"))
    first, second = segments[0], segments[1]
    real = planning._plan_partition
    deleted = []

    def retention_meanwhile(pdir, *args, **kwargs):
        if not deleted:
            for path in (first, first.with_suffix(".index"), first.with_suffix(".timeindex")):
                path.rename(path.with_name(path.name + ".deleted"))
            write_offset_checkpoint(root / "log-start-offset-checkpoint", {("t", 0): int(second.stem)})
            deleted.append(first)
        return real(pdir, *args, **kwargs)

    monkeypatch.setattr(planning, "_plan_partition", retention_meanwhile)
    with pytest.raises(DataLossError, match="below the log start offset"):
        plan_scan(str(root), ReadOptions.from_options({"startingOffsets": '{"t":{"0":0}}'}))
    for path in (first, first.with_suffix(".index"), first.with_suffix(".timeindex")):
        path.with_name(path.name + ".deleted").rename(path)
    deleted.clear()
    plan = plan_scan(str(root), ReadOptions())  # earliest: from the new log start, nothing lost
    assert plan.slices[0].start_offset == int(second.stem) and not plan.report.data_loss


def test_a_segment_the_cleaner_replaces_under_the_same_name_during_planning_is_planned_anew(tmp_path, monkeypatch):
    """The cleaner renames the old .log to .deleted and its .swap to .log: planning that failed in between finds
    the folder changed (a new file under the name) and plans again; a file that vanishes while an index entry is
    checked (entry_problem) is a LayoutError planning retries, not an AttributeError."""
    import shutil

    import kafkaseg.planning as planning
    from kafkaseg.testing import TopicSpec as Spec, write_data_dir

    root = tmp_path / "data"
    write_data_dir(root, [Spec("t", records_per_partition=400, records_per_batch=10, segment_bytes=4096)], seed=2)
    first = sorted((root / "t-0").glob("*.log"))[0]
    cleaned = tmp_path / "cleaned.log"
    shutil.copy(first, cleaned)
    real = planning._plan_partition
    swapped = []

    def cleaner_meanwhile(pdir, *args, **kwargs):
        if swapped:
            return real(pdir, *args, **kwargs)
        swapped.append(True)
        first.rename(first.with_name(first.name + ".deleted"))
        try:
            return real(pdir, *args, **kwargs)
        finally:
            shutil.copy(cleaned, first)
            os.utime(first, (1, 1))  # another file under the name

    monkeypatch.setattr(planning, "_plan_partition", cleaner_meanwhile)
    plan = plan_scan(str(root), ReadOptions())
    assert plan.slices and plan.slices[0].start_offset == 0
    monkeypatch.undo()

    # a segment file gone when an index entry is checked is the folder's change (raised for planning to retry),
    # not an index problem (it was an AttributeError)
    indexed = tmp_path / "indexed"
    write_data_dir(indexed, [Spec("t", records_per_partition=400, records_per_batch=10, segment_bytes=64 * 1024,
                                  index_interval_bytes=512)], seed=2)
    pdir = discover([str(indexed)])[0]
    part = planning._Partition(pdir, ReadOptions(), None)
    index = part.indexes(0)[0]
    assert len(index) > 0
    Path(pdir.segments[0].log_path).rename(pdir.segments[0].log_path + ".deleted")
    with pytest.raises(LayoutError):
        part.entry_problem(0, int(index.offsets[0]), int(index.positions[0]))


def test_log_files_given_as_paths_are_not_widened_to_their_folder_when_one_goes_away(tmp_path, monkeypatch):
    import shutil

    import kafkaseg.planning as planning
    from kafkaseg.testing import TopicSpec as Spec, write_data_dir

    write_data_dir(tmp_path / "data", [Spec("t", records_per_partition=400, records_per_batch=10,
                                            segment_bytes=4096)], seed=2)
    backup = tmp_path / "backup"  # not a <topic>-<partition> folder
    shutil.copytree(tmp_path / "data" / "t-0", backup)
    given = sorted(backup.glob("*.log"))[1]
    assert len(plan_scan(str(given), ReadOptions()).slices) == 1
    real = planning._plan_partition

    def vanish(pdir, *args, **kwargs):
        if given.exists():
            given.rename(given.with_name(given.name + ".deleted"))
        return real(pdir, *args, **kwargs)

    monkeypatch.setattr(planning, "_plan_partition", vanish)
    with pytest.raises(LayoutError, match=given.name):
        plan_scan(str(given), ReadOptions())


def _crashed_before_its_time_index_was_flushed(root: Path, recovery_point: int) -> int:
    """A topic whose first segment's last .timeindex entry (the one the roll appends) never reached the disk
    while its .log did (an unclean shutdown), with ``recovery_point`` checkpointed; returns a timestamp above what
    the shortened index claims and below the segment's largest."""
    from kafkaseg.testing import TopicSpec, write_data_dir

    write_data_dir(root, [TopicSpec("t", records_per_partition=1200, records_per_batch=20, value_size=60,
                                    segment_bytes=16 * 1024, index_interval_bytes=512)])
    write_offset_checkpoint(root / "recovery-point-offset-checkpoint", {("t", 0): recovery_point})
    time_index = root / "t-0" / "00000000000000000000.timeindex"
    data = time_index.read_bytes()
    time_index.write_bytes(data[:-12])
    return int.from_bytes(data[-24:-16], "big") + 1


def test_a_time_index_a_crash_cut_short_past_the_recovery_point_prunes_nothing_it_should_not(tmp_path):
    """LogSegment.recover rebuilds the indexes of segments past the recovery point after a crash; kafkaseg trusted
    such a segment's time index for its largest timestamp, so `timestamp >= T` pushdown dropped the segment's last
    records and startingTimestamp / offsets --time answered the next segment's first offset (found in review).
    Those segments' headers after the time index's last entry are now walked; a segment wholly below the recovery
    point was flushed, and its index is trusted as before (no walk)."""
    import pyarrow.compute as pc

    from kafkaseg.lookup import PartitionLookup
    from kafkaseg.scan import read_arrow, read_slice

    root = tmp_path / "logs"
    ts = _crashed_before_its_time_index_was_flushed(root, recovery_point=0)
    full = read_arrow(str(root), columns="offset,timestamp")
    millis = pc.divide(pc.cast(full["timestamp"], "int64"), 1000)
    truth = full.filter(pc.greater_equal(millis, ts))["offset"].to_pylist()
    assert truth[0] == 192 and len(truth) == 1008
    options = ReadOptions.from_options({"columns": "offset,timestamp"})
    plan = plan_scan(str(root), options, Predicates(timestamp_range=(ts, None)))
    got = sorted(o for s in plan.slices for b in read_slice(s, options) for o, t in
                 zip(b.column("offset").to_pylist(), pc.divide(pc.cast(b.column("timestamp"), "int64"), 1000)
                     .to_pylist()) if t >= ts)
    assert got == truth
    assert read_arrow(str(root), columns="offset", startingTimestamp=ts)["offset"][0].as_py() == 192
    (pdir,) = discover(str(root))
    with PartitionLookup(pdir) as lookup:
        assert lookup.list_offset(ts).offset == 192
    flushed = tmp_path / "flushed"
    _crashed_before_its_time_index_was_flushed(flushed, recovery_point=1200)
    (pdir,) = discover(str(flushed))
    with PartitionLookup(pdir) as lookup:
        assert lookup.largest_timestamp(0)[0] == ts - 1 and lookup.stats.headers == 0


def test_a_partition_pruned_by_predicates_is_still_checked_against_the_offsets_asked_of_it(tmp_path):
    """startingOffsets asks a-0 for offset 500, past its end: a DataLossError without pushdown (and in Spark's
    Kafka source), but `WHERE topic = 'b'` pushed down pruned a-0 before the check and the query read b quietly
    (found in review). A pruned partition the options ask nothing of is not planned."""
    from kafkaseg.testing import TopicSpec, write_data_dir

    write_data_dir(tmp_path, [TopicSpec("a", records_per_partition=100), TopicSpec("b", records_per_partition=100)])
    only_b = Predicates(topics=frozenset({"b"}))
    for options in ({"startingOffsets": '{"a":{"0":500}}'}, {"endingOffsets": '{"a":{"0":500},"b":{"0":-1}}'}):
        for predicates in (None, only_b):
            with pytest.raises(DataLossError, match="a-0: .* 500 is above the available end 100"):
                plan_scan(str(tmp_path), ReadOptions.from_options(options), predicates)
    lenient = ReadOptions.from_options({"startingOffsets": '{"a":{"0":500}}', "failOnDataLoss": "false"})
    assert {s.topic for s in plan_scan(str(tmp_path), lenient, only_b).slices} == {"b"}
    plan = plan_scan(str(tmp_path), ReadOptions.from_options({"startingOffsets": '{"b":{"0":5}}'}), only_b)
    assert [p.name for p in plan.report.partitions] == ["b-0"]


def test_cut_points_are_views_of_the_index_not_python_tuples(tmp_path):
    """Planning kept every index entry of a read range as a Python tuple (about 150 bytes each: 4 GB to plan 100
    GiB of default segments; found in review). The cut points are views of the index arrays that index, slice and
    iterate as the tuples did."""
    import numpy as np

    from kafkaseg.planning import _Cuts

    cuts = _Cuts(np.array([10, 20, 30], np.int64), np.array([1, 2, 3], np.int64))
    assert cuts[1] == (20, 2) and list(cuts[1:]) == [(20, 2), (30, 3)] and len(cuts[:1]) == 1
    assert cuts[2:] and not cuts[3:] and not _Cuts()
    assert cuts[1:].positions.base is not None  # a view, not a copy
    from kafkaseg.testing import TopicSpec, write_data_dir

    write_data_dir(tmp_path, [TopicSpec("t", records_per_partition=2000, records_per_batch=10,
                                        index_interval_bytes=512)])
    plan = plan_scan(str(tmp_path), ReadOptions.from_options({"splitSize": "2k"}))
    assert len(plan.slices) > 5
    starts = [s.start_position for s in plan.slices]
    assert starts == sorted(starts) and all(a.end_position == b.start_position
                                            for a, b in zip(plan.slices, plan.slices[1:])
                                            if a.log_path == b.log_path)


def test_the_wrong_way_round_check_looks_at_this_partitions_own_start_and_end(tmp_path):
    """A partition left out of startingOffsetsByTimestamp starts at earliest: an end below its log start is the
    usual empty read, not a time window the wrong way round (only t-1's start came from a time)."""
    log_dir = tmp_path / "b"
    for p in (0, 1):
        write_partition(log_dir, "t", p, records=20)
    write_offset_checkpoint(log_dir / "log-start-offset-checkpoint", {("t", 0): 10})
    _, stamps = write_partition(tmp_path / "c", "t", 0, records=20)
    plan = plan_scan(str(log_dir), opts(endingOffsets='{"t":{"0":5,"1":-1}}',
                                        startingOffsetsByTimestamp=f'{{"t":{{"1":{stamps[3]}}}}}'))
    assert plan.report.offsets() == {("t", 0): (10, 5), ("t", 1): (3, 20)}


def test_an_index_entry_at_a_legacy_wrapper_holding_a_huge_timestamp_is_not_called_bad(tmp_path):
    """Planning decodes a v1 wrapper an index entry points at only for its first offset: a record stamped beyond
    microseconds there (a producer's nanoseconds) is no fault of the index (it was rebuilt from the log)."""
    from kafkaseg.testing import build_legacy_wrapper

    writer = PartitionWriter(tmp_path / "leg-0", index_interval_bytes=1)
    offset = 0
    for b in range(8):
        records = [Record(offset + i, 10 ** 18 if (b == 3 and i == 1) else T0 + offset + i, b"k", b"v" * 50)
                   for i in range(3)]
        writer.append(build_legacy_wrapper(records, 1, "gzip"))
        offset += 3
    writer.close()
    plan = plan_scan(str(tmp_path), opts(startingOffsets='{"leg":{"0":13}}', timestampUnit="ms"))
    assert plan.report.indexes_rebuilt == [] and plan.report.offsets() == {("leg", 0): (13, 24)}


def test_timestamps_minus_1_and_minus_2_are_latest_and_earliest_as_in_spark(tmp_path):
    """Spark's Kafka source passes a timestamp option's value to Kafka's ListOffsets as it is
    (``OffsetSpec.forTimestamp``, KafkaOffsetReaderAdmin), where -1 is LATEST_TIMESTAMP (the high watermark, or the
    last stable offset under read_committed) and -2 EARLIEST_TIMESTAMP (the log start offset): the same here, in every
    timestamp option. Other negative values, which Spark also passes on (-3 max-timestamp, ...), are refused, saying
    so."""
    log_dir = tmp_path / "b"
    write_partition(log_dir, "t", 0, records=100, start=10)
    write_offset_checkpoint(log_dir / "replication-offset-checkpoint", {("t", 0): 90})  # the high watermark
    write_offset_checkpoint(log_dir / "log-start-offset-checkpoint", {("t", 0): 20})

    def offsets(**options):
        return plan_scan(str(log_dir), opts(**options)).report.offsets()[("t", 0)]

    assert offsets(startingTimestamp=-2, endingTimestamp=-1) == (20, 90)
    assert offsets(startingTimestamp="-2") == (20, 90)
    assert offsets(startingOffsetsByTimestamp='{"t":{"0":-1}}') == (90, 90)
    assert offsets(startingOffsetsByTimestamp='{"t":{"0":-2}}', endingOffsetsByTimestamp='{"t":{"0":-1}}') == (20, 90)
    assert offsets(startingOffsets="earliest", endingOffsetsByTimestamp='{"t":{"0":-2}}') == (20, 20)
    assert offsets(startingTimestamp=T0 + 500, endingOffsetsByTimestamp='{"t":{"0":-1}}') == (50, 90)
    for option, value in [("startingTimestamp", -3), ("endingOffsetsByTimestamp", '{"t":{"0":-3}}')]:
        with pytest.raises(InvalidOptionError, match=r"-3 .*Spark's Kafka source passes .* max-timestamp"):
            opts(**{option: value})


def test_a_log_end_found_under_other_options_is_walked_again(tmp_path):
    """A log end a range found (``available_range(log_ends=...)``) stands for the plan's walk only under the options
    the walk depends on: a torn last batch at the high watermark is never-acknowledged data under
    upperBound=highWatermark (the log ends before it, noted), but corruption a strict plan with
    upperBound=logEndOffset raises, as without the range before it."""
    from kafkaseg.errors import CorruptBatchError
    from kafkaseg.planning import LogEndCache, available_range, list_partitions

    root = tmp_path / "data"
    write_data_dir(root, [TopicSpec("t", records_per_partition=300, records_per_batch=10, vary_batch_size=False,
                                    segment_bytes=8 << 10)])
    active = sorted((root / "t-0").glob("*.log"))[-1]
    data = active.read_bytes()
    last = list(iter_headers(data))[-1]
    torn = bytearray(data[last.position:])
    torn[:len(torn) // 2] = bytes(len(torn) // 2)
    active.write_bytes(data[:last.position] + bytes(torn))
    write_offset_checkpoint(root / "replication-offset-checkpoint", {("t", 0): last.base_offset})
    long_ago = time.time() - 60
    for path in root.rglob("*"):
        os.utime(path, (long_ago, long_ago))
    options = ReadOptions.from_options({"path": str(root)})
    listing = list_partitions(None, options)
    log_ends = LogEndCache()
    assert available_range(listing.partitions[0], options, log_ends=log_ends).log_end == last.base_offset
    plan = plan_scan(None, options, listing=listing, log_ends=log_ends)  # the same options: taken
    assert any("the active segment's batches end in zeros" in note for note in plan.report.notes)
    with pytest.raises(CorruptBatchError, match="zeros in the active segment"):
        plan_scan(None, options.replace(upper_bound="logEndOffset"), listing=listing, log_ends=log_ends)


def test_strict_zeros_after_earlier_damage_in_the_active_segment_plan_as_before(tmp_path):
    """The log end rule moved into ``storage.layout.find_log_end`` keeps planning's behaviour: zeros hiding data
    at the end of the active segment, with a base offset gone back in a batch before its last index entry (which
    the last-entry walk does not meet), plan as before the move: a strict plan takes the log end after the whole
    batches past the earlier damage (noted), and the strict read raises at that damage, the first in the file,
    not at the zeros after it."""
    from kafkaseg.errors import CorruptBatchError

    root = tmp_path / "data"
    write_data_dir(root, [TopicSpec("t", records_per_partition=400, records_per_batch=10, segment_bytes=12000,
                                    index_interval_bytes=1024)])
    (root / "replication-offset-checkpoint").unlink()  # no high watermark: the zeros' data may be acknowledged
    active = sorted((root / "t-0").glob("*.log"))[-1]
    data = bytearray(active.read_bytes())
    headers = list(iter_headers(bytes(data)))
    gone_back = headers[len(headers) // 3]
    data[gone_back.position:gone_back.position + 8] = headers[0].base_offset.to_bytes(8, "big")
    data += bytes(4096) + b"\x01" * 100 + bytes(1000)  # a zeroed region with data after it
    active.write_bytes(bytes(data))
    plan = plan_scan(str(root), opts())
    assert any("corruption in the active segment" in n and "a strict read raises when it reaches" in n
               for n in plan.report.notes), plan.report.notes
    assert plan.report.partitions[0].log_end_offset == headers[-1].last_offset + 1
    with pytest.raises(CorruptBatchError) as caught:
        Scan(plan, opts()).to_table()
    assert caught.value.position == gone_back.position


def test_a_partition_moved_to_another_log_dir_after_planning_is_read_from_its_folder_renamed_for_deletion(tmp_path):
    """A move between log dirs ends (``LogManager.replaceCurrentWithFutureLog``) with the ``-future`` copy renamed
    to ``<topic>-<partition>`` in the other log dir and the source folder renamed
    ``<topic>-<partition>.<id>-delete`` (removed ``file.delete.delay.ms`` later). A read planned before reads the
    planned files there (same inodes), not a ``DataLossError`` for offsets that were never lost (found by
    tests/live_broker.py --move: a follow died so)."""
    import shutil

    import kafkaseg
    from kafkaseg.testing import TopicSpec as Spec, write_data_dir

    d0, d1 = tmp_path / "d0", tmp_path / "d1"
    write_data_dir(d0, [Spec("t", records_per_partition=400, records_per_batch=10, segment_bytes=4096)], seed=2)
    d1.mkdir()
    shutil.copy(d0 / "meta.properties", d1 / "meta.properties")
    want = kafkaseg.read_arrow([str(d0), str(d1)]).column("offset").to_pylist()
    scan = kafkaseg.open_scan([str(d0), str(d1)])
    shutil.copytree(d0 / "t-0", d1 / "t-0.0123456789abcdef0123456789abcdef-future")
    (d1 / "t-0.0123456789abcdef0123456789abcdef-future").rename(d1 / "t-0")
    (d0 / "t-0").rename(d0 / "t-0.fedcba9876543210fedcba9876543210-delete")
    assert scan.to_table().column("offset").to_pylist() == want
    assert scan.metrics.vanished_segments
    assert all(what.startswith("read from ") for *_, what in scan.metrics.vanished_segments)
    # and once the broker removed the folder renamed for deletion too, from the partition's new folder
    again = kafkaseg.open_scan([str(d0), str(d1)])
    (d1 / "t-0").rename(d0 / "t-0")
    scan = kafkaseg.open_scan([str(d0), str(d1)])
    (d0 / "t-0").rename(d1 / "t-0")
    shutil.rmtree(d0 / "t-0.fedcba9876543210fedcba9876543210-delete")
    assert scan.to_table().column("offset").to_pylist() == want
    assert any("read again from" in what for *_, what in scan.metrics.vanished_segments)
    assert again.to_table().column("offset").to_pylist() == want  # (planned in d1: nothing moved for it)


def _moved_or_recreated(tmp_path, recreated: bool, topic_ids: bool):
    """Log dirs d0 (topic t, 400 records) and d1 (empty), a scan of both planned, then t-0 renamed
    ``t-0.<id>-delete`` in d0 and a t-0 in d1: the same partition (a move between log dirs) or, ``recreated``,
    another incarnation of the topic (deleted, recreated, its partition placed in d1; 40 records). Without
    ``topic_ids`` neither folder has a ``partition.metadata``."""
    import shutil

    import kafkaseg
    from kafkaseg.testing import TopicSpec as Spec, write_data_dir

    d0, d1 = tmp_path / "d0", tmp_path / "d1"
    write_data_dir(d0, [Spec("t", records_per_partition=400, records_per_batch=10, segment_bytes=4096)], seed=2)
    d1.mkdir()
    shutil.copy(d0 / "meta.properties", d1 / "meta.properties")
    if not topic_ids:
        (d0 / "t-0" / "partition.metadata").unlink()
    want = kafkaseg.read_arrow([str(d0), str(d1)]).column("offset").to_pylist()
    strict = kafkaseg.open_scan([str(d0), str(d1)])
    lenient = kafkaseg.open_scan([str(d0), str(d1)], failOnDataLoss="false")
    if recreated:
        write_data_dir(tmp_path / "again", [Spec("t", records_per_partition=40, records_per_batch=10,
                                                 segment_bytes=4096)], seed=3)
        shutil.copytree(tmp_path / "again" / "t-0", d1 / "t-0")
        if topic_ids:
            assert (d0 / "t-0" / "partition.metadata").read_text() != (d1 / "t-0" / "partition.metadata").read_text()
        else:
            (d1 / "t-0" / "partition.metadata").unlink()
    else:
        shutil.copytree(d0 / "t-0", d1 / "t-0")
    (d0 / "t-0").rename(d0 / "t-0.fedcba9876543210fedcba9876543210-delete")
    return want, strict, lenient


@pytest.mark.parametrize("topic_ids", [True, False])
def test_a_partition_deleted_after_planning_is_lost_though_another_log_dir_holds_the_topic_recreated(
        tmp_path, topic_ids):
    """A topic's deletion renames its partition folders ``<topic>-<partition>.<id>-delete`` as the end of a move
    between log dirs does. When another log dir of the read holds the partition again, but with another topic id
    (or, with no ``partition.metadata``, a log that does not cover the planned offsets), the topic was deleted and
    recreated: the planned offsets are data loss, not read from the folder renamed for deletion."""
    _, strict, lenient = _moved_or_recreated(tmp_path, True, topic_ids)
    with pytest.raises(DataLossError, match=r"offsets \[0, \d+\) of t-0 .*lost"):
        strict.to_table()
    assert lenient.to_table().num_rows == 0
    assert lenient.metrics.vanished_segments
    assert all(what.startswith("skipped") for *_, what in lenient.metrics.vanished_segments)


def test_a_partition_moved_between_log_dirs_without_topic_ids_is_read_when_its_new_folder_covers_the_offsets(
        tmp_path):
    """With no ``partition.metadata`` (an old broker) a folder renamed ``-delete`` is a move's source when another
    log dir of the read holds the partition with a log covering the planned offsets."""
    want, strict, lenient = _moved_or_recreated(tmp_path, False, False)
    assert strict.to_table().column("offset").to_pylist() == want
    assert lenient.to_table().column("offset").to_pylist() == want


def _cut_copy(root, cut_at: int = 4066):
    """A compacted partition (kafkaseg.testing) copied twice, the first copy's rolled segment 358 cut short at
    ``cut_at`` (its .index/.timeindex entries and the recovery point prove offsets 406..503 lost with it)."""
    import shutil

    from kafkaseg.testing import TopicSpec, write_data_dir

    write_data_dir(root / "intact", [TopicSpec("cmp", records_per_partition=500, codec="gzip", key_cardinality=20,
                                               gap_ratio=0.2, cleanup_policy="compact", segment_bytes=8 * 1024,
                                               log_start_advance=5, idempotent=True, empty_batches=3)], seed=1)
    shutil.copytree(root / "intact", root / "cut")
    log = root / "cut" / "cmp-0" / "00000000000000000358.log"
    log.write_bytes(log.read_bytes()[:cut_at])
    return str(root / "intact"), str(root / "cut")


@pytest.mark.parametrize("window", [{"startingTimestamp": 1_700_000_004_580},
                                    {"startingTimestamp": 1_700_000_002_580, "endingTimestamp": 1_700_000_004_580}])
def test_a_timestamp_whose_record_was_lost_with_a_rolled_segment_cut_short_is_not_resolved_past_the_loss(tmp_path,
                                                                                                        window):
    """Found by fuzzing two copies of a partition: the timestamp search of the copy cut short went past its lost
    offsets (406..503) to the next segment's first record (504), so a strict read started (or ended) there without a
    word: a start lost the records from the one the time names (461) on, with one copy and with an intact one beside
    it, and an end read the records after it from the other copy. ``kafkaseg offsets`` fails the lookup there (the
    answer rests on lost offsets); the read now does too, and with another copy answers from it, as a lookup that
    meets damage does."""
    import kafkaseg

    intact, cut = _cut_copy(tmp_path)
    want = kafkaseg.read_arrow(intact, **window).column("offset").to_pylist()
    assert want and (461 in want or want[-1] == 457)  # the time names offset 461: the start, or the end
    got = kafkaseg.read_arrow([cut, intact], **window)
    assert got.column("offset").to_pylist() == want
    with pytest.raises(DataLossError, match="00000000000000000358.log"):
        kafkaseg.read_arrow(cut, **window)
    for lenient in ({"failOnDataLoss": "false"}, {"onCorruption": "skip"}):  # plan what is there, and say it
        scan = kafkaseg.open_scan(cut, **window, **lenient)
        assert any("00000000000000000358.log" in line and "406..503" in line for line in scan.plan.report.data_loss)


def test_a_time_lookups_rolled_cut_checks_run_at_once_on_object_storage(tmp_path, monkeypatch):
    """A time-bounded plan checks every rolled segment below the answer for a cut (PartitionLookup.rolled_cut_below:
    a .index probe and a .log read each, two HEADs and two GETs apiece on S3: 276 segments at 5 ms a request took a
    plan from 5.1 to 13.9 s). On a filesystem that is not local they run in threads, as map_files runs other probes,
    and answer as one after the other does: the first proven cut in segment order, on a healthy copy none."""
    import threading

    import kafkaseg.lookup as lookup_module
    import kafkaseg.storage.fs as fs
    from kafkaseg.lookup import PartitionLookup
    from kafkaseg.storage.layout import discover

    intact, cut = _cut_copy(tmp_path)
    timestamp = 1_700_000_004_580
    answers = {}
    for name, path in (("intact", intact), ("cut", cut)):
        (pdir,) = discover(path)
        with PartitionLookup(pdir) as lookup:
            found = lookup.offset_for_timestamp(timestamp)
            local = lookup.rolled_cut_below(found, timestamp)
            probe, together = lookup_module.rolled_cut_of, threading.Barrier(2, timeout=10)

            def waiting(*args, **kwargs):  # (the first two checks wait for each other: one after the other hangs)
                try:
                    together.wait()
                except threading.BrokenBarrierError:
                    pass
                return probe(*args, **kwargs)

            monkeypatch.setattr(lookup_module, "rolled_cut_of", waiting)
            monkeypatch.setattr(fs, "is_local", lambda filesystem: False)
            remote = lookup.rolled_cut_below(found, timestamp)
            monkeypatch.undo()
            assert not together.broken, name
            answers[name] = (local, remote)
    assert answers["intact"] == (None, None)
    local, remote = answers["cut"]
    assert local is not None and local.proven and (remote.first_offset, remote.end_offset, remote.message) == (
        local.first_offset, local.end_offset, local.message)
