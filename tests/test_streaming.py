"""Streaming (kafkaseg.streaming) without a JVM: offsets, admission control and data loss over a log dir that grows.

The dir "grows" the way a live broker's does for a reader: the high watermark in replication-offset-checkpoint moves
up over data already on disk, partition folders appear, retention deletes segments. Every micro-batch plan is read
with the same slice reader Spark's executors use, and the union is compared with one batch read of the final dir.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pytest

import kafkaseg
from kafkaseg.errors import DataLossError, InvalidOptionError
from kafkaseg.options import ReadOptions
from kafkaseg.scan import read_slice
from kafkaseg.storage.checkpoints import read_offset_checkpoint
from kafkaseg.storage.segment import SegmentReader
from kafkaseg.streaming import (LEADER_EPOCHS, TOPIC_IDS, MicroBatchPlanner, from_offsets, leader_epochs_of,
                                poll_micro_batches, rate_limit, to_offsets, topic_ids_of)
from kafkaseg.testing import TopicSpec, write_data_dir
from kafkaseg.testing.partition import write_leader_epoch_checkpoint, write_offset_checkpoint

TOPICS = [
    TopicSpec("a", partitions=2, records_per_partition=600, records_per_batch=20, segment_bytes=16 * 1024,
              start_timestamp_ms=1_700_000_000_000),
    TopicSpec("b", records_per_partition=300, codec="lz4", segment_bytes=8 * 1024),
]


@pytest.fixture(scope="module")
def template(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("stream-template") / "data"
    write_data_dir(root, TOPICS, seed=3)
    return root


@pytest.fixture
def data(template, tmp_path) -> Path:
    root = tmp_path / "data"
    shutil.copytree(template, root)
    return root


def hws(root: Path) -> dict[tuple[str, int], int]:
    return read_offset_checkpoint(str(root / "replication-offset-checkpoint"))


def set_hws(root: Path, values: dict[tuple[str, int], int]) -> None:
    write_offset_checkpoint(root / "replication-offset-checkpoint", values)


def planner(root: Path, clock=None, **options) -> MicroBatchPlanner:
    given = {"path": str(root), "startingOffsets": "earliest", **options}
    return MicroBatchPlanner(ReadOptions.from_options(given, stream=True), clock=clock)


def read_batch(p: MicroBatchPlanner, start, end) -> list[tuple[str, int, int]]:
    plan = p.plan(start, end)
    rows: list[tuple[str, int, int]] = []
    if plan.scan is None:
        return rows
    for piece in plan.scan.slices:
        for batch in read_slice(piece, p.options):
            rows.extend(zip(batch.column("topic").to_pylist(), batch.column("partition").to_pylist(),
                            batch.column("offset").to_pylist()))
    return rows


def drain(p: MicroBatchPlanner, start, **limits) -> tuple[dict, list[tuple[str, int, int]], list[int]]:
    """Run micro-batches until the source has nothing new; return the last end, the rows, the offsets per batch."""
    rows, sizes = [], []
    for _ in range(1000):
        end = p.latest_offsets(start, **limits)
        if end == start:
            return end, rows, sizes
        got = read_batch(p, start, end)
        rows.extend(got)
        sizes.append(sum(hi - from_offsets(start).get(tp, 0) for tp, hi in from_offsets(end).items()))
        start = end
    raise AssertionError("the stream never caught up")


def plain(offsets: dict) -> dict:
    """Offsets without the topic ids and leader epochs they were taken from."""
    return {topic: partitions for topic, partitions in offsets.items() if not topic.startswith("@")}


def batch_rows(root: Path, **options) -> list[tuple[str, int, int]]:
    table = kafkaseg.read_arrow(str(root), **options)
    return list(zip(table.column("topic").to_pylist(), table.column("partition").to_pylist(),
                    table.column("offset").to_pylist()))


def test_offsets_round_trip_as_spark_writes_them():
    positions = {("b", 0): 7, ("a", 1): 3, ("a", 0): 5}
    assert to_offsets(positions) == {"a": {"0": 5, "1": 3}, "b": {"0": 7}}
    assert from_offsets(to_offsets(positions)) == positions
    with pytest.raises(InvalidOptionError):
        from_offsets({"a": 5})


def test_rate_limit_spreads_the_budget_like_spark():
    a0, a1, b0 = ("a", 0), ("a", 1), ("b", 0)
    # 100 and 5 pending: 10 * 100/105 = 9.5 -> 9 (floor); 10 * 5/105 = 0.48 -> 1 (never starved)
    assert rate_limit(10, {a0: 0, a1: 0}, {a0: 100, a1: 5}, {}) == {a0: 9, a1: 1}
    # a partition new since the start counts from its earliest; one with nothing pending keeps its end
    assert rate_limit(10, {a0: 50}, {a0: 50, b0: 30}, {b0: 20}) == {a0: 50, b0: 30}
    assert rate_limit(4, {a0: 0}, {a0: 8, b0: 30}, {b0: 20}) == {a0: 1, b0: 22}
    # nothing pending at all: latest as is
    assert rate_limit(10, {a0: 8}, {a0: 8}, {}) == {a0: 8}
    # no end passes latest
    assert rate_limit(1000, {a0: 0, a1: 0}, {a0: 3, a1: 2}, {}) == {a0: 3, a1: 2}


def test_a_growing_dir_is_read_once_in_order_within_the_rate_limit(data):
    full = hws(data)
    set_hws(data, {tp: hw // 3 for tp, hw in full.items()})
    p = planner(data, maxOffsetsPerTrigger=250)
    start = p.initial_offsets()
    assert plain(start) == {"a": {"0": 0, "1": 0}, "b": {"0": 0}}
    end, rows, sizes = drain(p, start, max_offsets=250)
    assert len(sizes) > 1 and max(sizes) <= 250 + 3  # a share below 1 rounds up: at most one extra per partition
    assert from_offsets(end) == {tp: hw // 3 for tp, hw in full.items()}
    set_hws(data, full)  # the broker's high watermark moves on
    end, more, _ = drain(p, end, max_offsets=250)
    assert from_offsets(end) == full
    assert rows + more != [] and sorted(rows + more) == sorted(batch_rows(data))
    assert len(set(rows + more)) == len(rows + more)
    per_partition = {}
    for topic, partition, offset in rows + more:
        per_partition.setdefault((topic, partition), []).append(offset)
    assert all(offsets == sorted(offsets) for offsets in per_partition.values())


def test_read_committed_stream_stops_at_the_last_stable_offset(tmp_path):
    root = tmp_path / "txn"
    manifest = write_data_dir(root, [TopicSpec("p", records_per_partition=400, records_per_batch=10,
                                               transactional=True, abort_ratio=0.3, open_transactions=1)], seed=5)
    p = planner(root, **{"kafka.isolation.level": "read_committed"})
    end, rows, _ = drain(p, p.initial_offsets())
    assert from_offsets(end) == {("p", 0): manifest.partition("p").last_stable_offset}
    expected = [("p", 0, r.offset) for r in manifest.partition("p").data_records(read_committed=True)
                if r.offset < manifest.partition("p").last_stable_offset]
    assert rows == expected and rows


def test_initial_offsets_follow_starting_options(data):
    full = hws(data)
    p = planner(data, startingOffsets="latest")
    assert plain(p.initial_offsets()) == to_offsets(full)
    set_hws(data, {tp: hw - 1 for tp, hw in full.items()})
    assert plain(p.initial_offsets()) == to_offsets(full)  # one answer per query, however often Spark asks
    set_hws(data, full)
    assert ReadOptions.from_options({"path": str(data)}, stream=True).starting.kind == "latest"
    p = planner(data, startingOffsets='{"a":{"0":-1,"1":7}}')  # b-0 unlisted: earliest
    assert from_offsets(p.initial_offsets()) == {("a", 0): full[("a", 0)], ("a", 1): 7, ("b", 0): 0}
    first = kafkaseg.read_arrow(str(data), assign='{"a":[1]}')
    ts = first.column("timestamp")[100].value // 1000
    p = planner(data, startingTimestamp=ts, assign='{"a":[1]}')
    assert plain(p.initial_offsets()) == {"a": {"1": first.column("offset")[100].as_py()}}
    with pytest.raises(InvalidOptionError, match="not being read"):
        planner(data, startingOffsets='{"zz":{"0":1}}').initial_offsets()


def test_min_offsets_waits_for_enough_data_or_the_delay(data):
    full = hws(data)
    set_hws(data, {tp: 10 for tp in full})
    now = [1_000_000.0]
    p = planner(data, clock=lambda: now[0], minOffsetsPerTrigger=100, maxTriggerDelay="10s")
    start = p.initial_offsets()
    first = p.latest_offsets(start, min_offsets=100)  # the first trigger is never delayed (no trigger before)
    assert from_offsets(first) == {tp: 10 for tp in full}
    set_hws(data, {tp: 30 for tp in full})  # 60 pending < 100
    now[0] += 5_000
    assert p.latest_offsets(first, min_offsets=100) == first
    set_hws(data, {tp: 50 for tp in full})  # 120 pending
    assert from_offsets(p.latest_offsets(first, min_offsets=100)) == {tp: 50 for tp in full}
    set_hws(data, {tp: 51 for tp in full})
    now[0] += 5_000
    second = to_offsets({tp: 50 for tp in full})
    assert p.latest_offsets(second, min_offsets=100) == second  # 3 pending, 5 s since the last batch
    now[0] += 10_000
    assert from_offsets(p.latest_offsets(second, min_offsets=100)) == {tp: 51 for tp in full}  # the delay passed
    # ReadAllAvailable (Trigger.Once, or Spark overriding the options) ignores both limits
    assert from_offsets(p.latest_offsets(second, all_available=True)) == {tp: 51 for tp in full}


def test_available_now_stops_at_what_was_there_when_it_started(data):
    full = hws(data)
    set_hws(data, {tp: hw // 2 for tp, hw in full.items()})
    p = planner(data)
    start = p.initial_offsets()
    p.prepare_available_now()
    set_hws(data, full)
    end, rows, sizes = drain(p, start, max_offsets=200, min_offsets=10_000)  # min is ignored under AvailableNow
    assert from_offsets(end) == {tp: hw // 2 for tp, hw in full.items()}
    assert len(sizes) > 1 and sorted(rows) == sorted(batch_rows(data, endingOffsets=to_offsets(from_offsets(end))))


def test_a_partition_that_appears_is_read_from_its_start(data, tmp_path):
    p = planner(data, subscribePattern="^[a-c]$")
    end, rows, _ = drain(p, p.initial_offsets())
    other = tmp_path / "other"
    write_data_dir(other, [TopicSpec("c", records_per_partition=120)], seed=9)
    shutil.move(str(other / "c-0"), str(data / "c-0"))
    set_hws(data, {**hws(data), ("c", 0): 120})
    end2, new_rows, _ = drain(p, end)
    assert from_offsets(end2)[("c", 0)] == 120
    assert new_rows == [("c", 0, o) for o in range(120)]


def test_a_subscribed_topic_not_on_disk_is_waited_for_and_said_once(data, caplog):
    """``readStream.option("subscribe", "orderz")``: a stream waits for a topic not on disk yet (as Spark's consumer
    waits for one the cluster lacks), but said nothing, so a misspelt name ran a query that never read a record, and
    an AvailableNow one ended with nothing (found by a walkthrough): the start now says it, once, with a hint."""
    p = planner(data, subscribe="a,bb")
    offsets = p.initial_offsets()
    assert set(offsets) - {TOPIC_IDS} == {"a"}
    notes = p.take_start_notes()
    assert len(notes) == 1 and "'bb' (did you mean 'b'?)" in notes[0] and "waits" in notes[0], notes
    assert p.take_start_notes() == []
    p.initial_offsets()  # Spark asks more than once: said once
    assert p.take_start_notes() == []
    every = planner(data, subscribe="a,b")
    every.initial_offsets()
    assert every.take_start_notes() == []  # every topic there: nothing to say
    with caplog.at_level("WARNING", logger="kafkaseg.streaming"):
        assert list(kafkaseg.follow(str(data), subscribe="a,bb", startingOffsets="earliest", idle_timeout=0.2))
    assert sum("'bb' (did you mean 'b'?)" in r.getMessage() for r in caplog.records) == 1


def test_an_added_partition_that_does_not_start_at_zero_is_data_loss(data, tmp_path):
    p = planner(data)
    end, _, _ = drain(p, p.initial_offsets())
    other = tmp_path / "other"
    write_data_dir(other, [TopicSpec("c", records_per_partition=50, log_start_offset=1000)], seed=9)
    shutil.move(str(other / "c-0"), str(data / "c-0"))
    set_hws(data, {**hws(data), ("c", 0): 1050})
    later = p.latest_offsets(end)
    with pytest.raises(DataLossError, match="added partition c-0 starts at offset 1000"):
        p.plan(end, later)
    lenient = planner(data, failOnDataLoss="false")
    plan = lenient.plan(end, later)
    assert plan.ranges == {("c", 0): (1000, 1050)} and "instead of 0" in plan.data_loss[0]


def test_a_partition_that_disappears_is_data_loss(data):
    p = planner(data)
    start = p.initial_offsets()
    end = p.latest_offsets(start)
    shutil.rmtree(data / "b-0")
    with pytest.raises(DataLossError, match="b-0 is gone"):
        p.plan(start, end)
    later = p.latest_offsets(start)  # b-0 no longer listed: gone since the last batch
    with pytest.raises(DataLossError, match="b-0 is gone"):
        p.plan(end, later)
    lenient = planner(data, failOnDataLoss="false")
    plan = lenient.plan(start, end)
    assert ("b", 0) not in plan.ranges and ("a", 0) in plan.ranges and plan.data_loss


def test_a_topic_dropped_from_subscribe_on_restart_is_data_loss_that_says_so(data):
    """Spark's source reports the partitions of a topic left out of ``subscribe`` since the checkpoint as gone;
    kafkaseg did too, but as 'its folder is no longer under the given paths', while the folder is there (found by
    audit)."""
    start = planner(data).initial_offsets()
    restarted = planner(data, subscribe="a")
    end = restarted.latest_offsets(start)
    with pytest.raises(DataLossError, match=r"b-0 is no longer selected by the options .*subscribe") as raised:
        restarted.plan(start, end)
    assert "no longer under the given paths" not in str(raised.value)


def test_retention_past_the_stream_position_is_data_loss(data):
    p = planner(data)
    start = p.initial_offsets()
    end = p.latest_offsets(start)
    segments = sorted((data / "a-0").glob("*.log"))
    assert len(segments) > 2
    new_start = int(segments[1].name.split(".")[0])
    for suffix in (".log", ".index", ".timeindex"):
        segments[0].with_suffix(suffix).unlink(missing_ok=True)
    write_offset_checkpoint(data / "log-start-offset-checkpoint", {("a", 0): new_start})
    with pytest.raises(DataLossError, match="below the log start offset"):
        p.plan(start, end)
    lenient = planner(data, failOnDataLoss="false")
    plan = lenient.plan(start, end)
    assert plan.data_loss and any("below the log start offset" in note for note in plan.data_loss)
    rows = read_batch(lenient, start, end)
    assert min(o for t, part, o in rows if (t, part) == ("a", 0)) == new_start


def test_a_replayed_first_batch_reads_nothing_where_its_start_was_resolved_again(data):
    full = hws(data)
    # Spark replays an uncommitted batch 0 from initialOffset(), which a restarted query resolves again: with
    # startingOffsets=latest that is past the recorded end while the log still reaches it; nothing is lost
    restarted = planner(data, startingOffsets="latest")
    behind = to_offsets({tp: hw - 5 for tp, hw in full.items()})
    plan = restarted.plan(restarted.initial_offsets(), behind)
    assert plan.scan is None and not plan.data_loss and len(plan.notes) == 3
    # the same ranges outside a replayed first batch: the stream's position went back
    with pytest.raises(DataLossError, match="went back"):
        planner(data).plan(to_offsets(full), behind)


def test_a_replayed_first_batch_leaves_a_partition_found_since_for_the_next_batch(data, tmp_path):
    before_crash = planner(data)
    end = before_crash.latest_offsets(before_crash.initial_offsets())  # batch 0's end, in Spark's offset log
    other = tmp_path / "other"
    write_data_dir(other, [TopicSpec("a", partitions=3, records_per_partition=40)], seed=3)  # same topic id
    shutil.move(str(other / "a-2"), str(data / "a-2"))  # a partition added while the query was down
    set_hws(data, {**hws(data), ("a", 2): 40})
    restarted = planner(data)  # a new source runner: initialOffset() now lists a-2 too
    start = restarted.initial_offsets()
    assert ("a", 2) in from_offsets(start) and ("a", 2) not in from_offsets(end)
    plan = restarted.plan(start, end)
    assert not plan.data_loss and ("a", 2) not in plan.ranges and any("a-2" in note for note in plan.notes)
    _, rows, _ = drain(restarted, end)
    assert [r for r in rows if r[:2] == ("a", 2)] == [("a", 2, o) for o in range(40)]
    # outside a replayed first batch, a partition on disk but missing from the end lost its position: data loss
    without_b = {topic: parts for topic, parts in end.items() if topic != "b"}
    with pytest.raises(DataLossError, match="b-0 was missing when this micro-batch's end was fixed"):
        restarted.plan(end, without_b)


def test_a_log_truncated_below_the_stream_position_is_data_loss(data):
    p = planner(data)
    end, _, _ = drain(p, p.initial_offsets())
    last = sorted((data / "a-0").glob("*.log"))[-1]
    base = int(last.name.split(".")[0])
    for suffix in (".log", ".index", ".timeindex"):  # an unclean leader election cut the log back
        last.with_suffix(suffix).unlink(missing_ok=True)
    set_hws(data, {**hws(data), ("a", 0): base})
    later = p.latest_offsets(end)
    assert from_offsets(later)[("a", 0)] == base
    with pytest.raises(DataLossError, match=r"a-0's offsets went back from 600 to \d+ .*: the log was truncated "
                                            r"\(its topic id is the same\)"):
        p.plan(end, later)


def _two_replicas(tmp_path, hw_ahead=90, hw_behind=80):
    spec = [TopicSpec("a", records_per_partition=100, records_per_batch=5)]
    ahead, behind = tmp_path / "broker1", tmp_path / "broker2"
    write_data_dir(ahead, spec, seed=4)
    write_data_dir(behind, spec, seed=4)  # the same records: two replicas
    set_hws(ahead, {("a", 0): hw_ahead})
    set_hws(behind, {("a", 0): hw_behind})
    options = ReadOptions.from_options({"paths": [str(ahead), str(behind)], "startingOffsets": "earliest"},
                                       stream=True)
    return ahead, behind, options


def test_a_lagging_replica_read_after_the_copy_ahead_went_away_is_no_new_data(tmp_path):
    ahead, behind, options = _two_replicas(tmp_path)
    p = MicroBatchPlanner(options)
    start = to_offsets({("a", 0): 70})
    end = p.latest_offsets(start)
    assert plain(end) == {"a": {"0": 90}}  # the replica ahead
    assert read_batch(p, start, end) == [("a", 0, o) for o in range(70, 90)]
    shutil.move(str(ahead / "a-0"), str(tmp_path / "moved-away"))  # reassigned away from that broker
    assert p.latest_offsets(end) == end  # the other copy's high watermark 80 is below the position: no new data
    set_hws(behind, {("a", 0): 85})
    assert p.latest_offsets(end) == end  # still below: still waiting, not a truncation
    set_hws(behind, {("a", 0): 100})
    later = p.latest_offsets(end)
    assert read_batch(p, end, later) == [("a", 0, o) for o in range(90, 100)]


def test_a_replica_switch_between_fixing_an_end_and_planning_it_is_data_loss(tmp_path):
    """The records above the other copy's high watermark may be a fenced leader's: they are not read."""
    ahead, behind, options = _two_replicas(tmp_path)
    p = MicroBatchPlanner(options)
    start = to_offsets({("a", 0): 70})
    end = p.latest_offsets(start)
    shutil.move(str(ahead / "a-0"), str(tmp_path / "moved-away"))
    with pytest.raises(DataLossError, match="ending offset 90 is above the available end 80"):
        p.plan(start, end)


def test_a_copy_whose_high_watermark_is_past_the_position_but_whose_files_end_below_it_is_passed_over(tmp_path):
    """broker1 checkpointed a high watermark of 100 but its files end at 60 (a crash lost its unflushed tail);
    broker2's high watermark is 90 and its files hold 0..99. A stream at 70 chose broker1 by its high watermark,
    counting it as reaching the position without reading its files, and failed: "a-0's offsets went back from 70
    to 60". The copy chosen must reach the position below its high watermark too: broker2, read on from 70."""
    ahead, behind = tmp_path / "broker1", tmp_path / "broker2"
    write_data_dir(ahead, [TopicSpec("a", records_per_partition=60, records_per_batch=5)], seed=4)
    write_data_dir(behind, [TopicSpec("a", records_per_partition=100, records_per_batch=5)], seed=4)
    set_hws(ahead, {("a", 0): 100})
    set_hws(behind, {("a", 0): 90})
    p = MicroBatchPlanner(ReadOptions.from_options({"paths": [str(ahead), str(behind)],
                                                    "startingOffsets": "earliest"}, stream=True))
    start = to_offsets({("a", 0): 70})
    end = p.latest_offsets(start)
    assert plain(end) == {"a": {"0": 90}}
    assert read_batch(p, start, end) == [("a", 0, o) for o in range(70, 90)]
    start = to_offsets({("a", 0): 50})  # (a position broker1's files hold: its high watermark wins, as before)
    assert plain(p.latest_offsets(start)) == {"a": {"0": 60}}


def _unclean_election(data: Path, partition: str, at: int) -> None:
    """A leader elected uncleanly truncated ``partition``'s log at offset ``at`` (a batch boundary) and wrote on
    from there under a new leader epoch: the batches from ``at`` on carry the new epoch in their headers (outside
    the CRC), and ``leader-epoch-checkpoint`` gains it, starting at ``at``. (The records' content stays the test
    data's; no reader compares content with what it read before.)"""
    path = data / partition / "leader-epoch-checkpoint"
    entries = [tuple(map(int, line.split())) for line in path.read_text().splitlines()[2:]]
    epoch = max(e for e, _ in entries) + 1
    write_leader_epoch_checkpoint(path, [(e, start) for e, start in entries if start < at] + [(epoch, at)])
    for log_file in sorted((data / partition).glob("*.log")):
        with SegmentReader(str(log_file)) as reader:
            positions = [h.position for h in reader.iter_headers(0) if h.base_offset >= at]
        with open(log_file, "r+b") as f:
            for position in positions:
                f.seek(position + 12)  # baseOffset, batchLength, then partitionLeaderEpoch
                f.write(epoch.to_bytes(4, "big"))


@pytest.mark.parametrize("restart", [False, True])
def test_a_log_cut_back_and_grown_again_is_data_loss(data, restart):
    """An unclean leader election: the log (same replica) is truncated below the stream's position and regrows
    past it before the high watermark does. The leader epoch of the last batch the stream read, recorded with its
    position, tells (KIP-320): that batch (ending at 99) was written under an epoch that now ends at 80, also after
    a restart. Spark's source reports this only while the high watermark is below the position, and not at all
    once it passed it."""
    p = planner(data, assign='{"a":[0]}')
    full = hws(data)
    set_hws(data, {**full, ("a", 0): 100})
    position = p.latest_offsets(p.initial_offsets())
    assert plain(position) == {"a": {"0": 100}} and leader_epochs_of(position) == {("a", 0): (0, 100)}
    _unclean_election(data, "a-0", 80)
    set_hws(data, {**full, ("a", 0): 90})  # the new leader's high watermark, below the position; the log reaches it
    if restart:
        p = planner(data, assign='{"a":[0]}')
    later = p.latest_offsets(position)
    assert plain(later) == {"a": {"0": 90}}
    with pytest.raises(DataLossError, match=r"a-0: leader epoch 0 of the last batch the stream read \(ending at "
                                            r"offset 99\) ends at offset 80 .* the log was truncated at 80"):
        p.plan(position, later)
    set_hws(data, {**full, ("a", 0): 150})  # the high watermark passed the position: the offsets alone say nothing
    p = planner(data, assign='{"a":[0]}', failOnDataLoss="false")
    later = p.latest_offsets(position)
    plan = p.plan(position, later)
    assert plan.ranges == {("a", 0): (80, 150)}  # the stream's records [80, 100) were replaced: read again
    assert len(plan.data_loss) == 1 and "records [80, 100) were replaced" in plan.data_loss[0]
    assert leader_epochs_of(later) == {("a", 0): (1, 150)}
    assert p.plan(later, p.latest_offsets(later)).data_loss == []


def test_a_restart_while_waiting_above_the_high_watermark_is_not_data_loss(data):
    """The stream read a-0 to the log end (no high watermark checkpointed yet), stopped, and restarted after the
    broker checkpointed a lower high watermark. The leader epoch recorded with the position shows the log was not
    truncated: the stream waits for the high watermark, as it does without the restart (a carried limit until the
    epochs were recorded). Without a leader-epoch-checkpoint the dip is still data loss, as in Spark's source."""
    full = hws(data)
    set_hws(data, {tp: hw for tp, hw in full.items() if tp != ("a", 0)})
    p = planner(data, assign='{"a":[0]}')
    end, _, _ = drain(p, p.initial_offsets())
    assert from_offsets(end) == {("a", 0): 600}
    set_hws(data, {**full, ("a", 0): 580})
    restarted = planner(data, assign='{"a":[0]}')
    assert restarted.latest_offsets(end) == end  # no new data; not a log that went back
    (data / "a-0" / "leader-epoch-checkpoint").unlink()
    restarted = planner(data, assign='{"a":[0]}')
    later = restarted.latest_offsets(end)
    with pytest.raises(DataLossError, match="went back from 600 to 580 .*: the high watermark went back below the "
                                            "position while the log still reaches it"):
        restarted.plan(end, later)


def test_available_now_target_fixed_before_the_initial_offsets(data):
    full = hws(data)
    set_hws(data, {tp: hw // 2 for tp, hw in full.items()})
    p = planner(data, startingOffsets="latest")
    p.prepare_available_now()  # Spark calls it before initialOffset()
    set_hws(data, full)
    start = p.initial_offsets()  # resolved after the target: above it
    assert from_offsets(start) == full
    assert p.latest_offsets(start) == start  # nothing to read, and no partition called gone
    plan = p.plan(start, start)
    assert plan.scan is None and not plan.notes and not plan.data_loss


def _ranges_computed(monkeypatch) -> list[int]:
    """The partition of each range the planner computes from now on (``available_range``)."""
    import kafkaseg.streaming as streaming

    calls: list[int] = []
    real = streaming.available_range
    monkeypatch.setattr(streaming, "available_range", lambda pdir, options, **kw: calls.append(pdir.partition) or
                        real(pdir, options, **kw))
    return calls


def _written_ago(root: Path, seconds: float) -> None:
    when = time.time() - seconds
    for path in root.rglob("*"):
        os.utime(path, (when, when))


def test_a_trigger_reuses_the_ranges_of_partitions_whose_files_did_not_change(data, monkeypatch):
    calls = _ranges_computed(monkeypatch)
    _written_ago(data, 60)
    p = planner(data)
    full = hws(data)
    start = p.initial_offsets()
    assert len(calls) == 3
    calls.clear()
    first = p.latest_offsets(start)
    assert calls == []  # the ranges the start was resolved on: nothing changed since
    cold = planner(data)
    cold.latest_offsets(start)
    assert len(calls) == 3  # a trigger with no range before it computes each
    calls.clear()
    assert p.latest_offsets(start) == first and calls == []  # nothing changed: nothing recomputed
    set_hws(data, {**full, ("b", 0): full[("b", 0)] - 1})
    assert from_offsets(p.latest_offsets(start))[("b", 0)] == full[("b", 0)] - 1 and calls == [0]
    # a segment written within the last moments may change again within its mtime's granularity (a preallocated
    # active segment keeps its size): its range is recomputed until it has been still for a while
    last = sorted((data / "a-1").glob("*.log"))[-1]
    recently = time.time() - 0.5
    os.utime(last, (recently, recently))
    calls.clear()
    p.latest_offsets(start)
    p.latest_offsets(start)
    assert calls == [1, 1]


def test_a_listing_just_made_is_passed_on_instead_of_listing_again(data, monkeypatch):
    """The first trigger after the start, and the plan of the end it fixed, can take the listing the planner just
    made (``last_listing``): no folder is listed again and no range computed again, also of segments written a
    moment ago, whose ranges a later listing recomputes (their files may have changed within their mtime)."""
    import kafkaseg.planning as planning

    listings: list = []
    real = planning.discover
    monkeypatch.setattr(planning, "discover", lambda *a, **k: listings.append(a) or real(*a, **k))
    ranges = _ranges_computed(monkeypatch)
    _written_ago(data, 0.5)
    p = planner(data)
    start = p.initial_offsets()
    assert len(listings) == 1 and len(ranges) == 3
    end = p.latest_offsets(start, listing=p.last_listing)
    assert p.plan(start, end, listing=p.last_listing).scan is not None
    assert len(listings) == 1 and len(ranges) == 3
    assert p.latest_offsets(start) == end and len(listings) == 2 and len(ranges) == 6  # a new listing: recomputed
    # poll_micro_batches does the same: one listing up to the first micro-batch's plan, one for each poll after
    listings.clear()
    fresh = planner(data)
    polled = poll_micro_batches(fresh)
    first = next(polled)
    assert {tp: hi for tp, (_, hi) in first.ranges.items()} == from_offsets(end)
    assert len(listings) == 1
    assert next(polled, None) is None and len(listings) == 2  # the next poll listed again: nothing new


def test_a_micro_batch_plan_lists_the_folders_once(data, monkeypatch):
    """The partitions gone and the plan come from one listing (they were two, each a scan of every folder)."""
    import kafkaseg.planning as planning

    p = planner(data)
    start = p.initial_offsets()
    end = p.latest_offsets(start)
    listings = []
    real = planning.discover
    monkeypatch.setattr(planning, "discover", lambda *a, **k: listings.append(a) or real(*a, **k))
    assert sorted(read_batch(p, start, end)) == sorted(batch_rows(data))
    assert len(listings) == 2  # the batch read's own listing, and the micro-batch's
    listings.clear()
    p.plan(start, end)
    assert len(listings) == 1


@pytest.fixture
def damaged(tmp_path) -> Path:
    """Partitions whose log ends say something, idle for a minute: t-0 as written (several segments), t-1's last
    batch torn (its first half zeros, the high watermark above it: a corrupt tail that onCorruption=skip leaves
    out), t-2 with bad framing in its last batch (a lenient walk steps over it: noted), t-3 without its active
    segment's .index (rebuilt from the log: reported)."""
    from kafkaseg.wire.batch import iter_headers

    root = tmp_path / "damaged"
    write_data_dir(root, [TopicSpec("t", partitions=4, records_per_partition=300, records_per_batch=10,
                                    vary_batch_size=False, segment_bytes=8 << 10, index_interval_bytes=1024)])
    active = {n: sorted((root / f"t-{n}").glob("*.log"))[-1] for n in range(4)}
    data = active[1].read_bytes()
    last = list(iter_headers(data))[-1]
    torn = bytearray(data[last.position:])
    torn[:len(torn) // 2] = bytes(len(torn) // 2)
    active[1].write_bytes(data[:last.position] + bytes(torn))
    data = bytearray(active[2].read_bytes())
    data[list(iter_headers(bytes(data)))[-1].position + 16] = 9  # (the walk starts at the last index entry)
    active[2].write_bytes(bytes(data))
    active[3].with_suffix(".index").unlink()
    _written_ago(root, 60)
    return root


def _log_end_walks(monkeypatch) -> list[str]:
    """The segment of each log end walk from now on (``kafkaseg.storage.segment.log_end_offset``)."""
    import kafkaseg.storage.segment as segment

    walked: list[str] = []
    real = segment.log_end_offset
    monkeypatch.setattr(segment, "log_end_offset", lambda seg, *a, **k: walked.append(seg.log_path) or
                        real(seg, *a, **k))
    return walked


def _first_plan(p: MicroBatchPlanner):
    start = p.initial_offsets()
    end = p.latest_offsets(start, listing=p.last_listing)
    return start, end, p.plan(start, end, listing=p.last_listing)


@pytest.mark.parametrize("upper_bound", ["highWatermark", "logEndOffset"])
def test_the_first_micro_batch_plan_takes_the_log_ends_its_ranges_found(damaged, monkeypatch, upper_bound):
    """The plan of the first micro-batch (on the listing the start and its end were taken on) does not walk each
    partition's last segment again (and load its indexes) for the log end its range found: it takes that log end,
    with what the walk reported (notes, a rebuilt index) and where it cut a corrupt tail off, and plans the same
    slices with the same report as a plan that walks again."""
    p = planner(damaged, onCorruption="skip", upperBound=upper_bound)
    start = p.initial_offsets()
    end = p.latest_offsets(start, listing=p.last_listing)
    walked = _log_end_walks(monkeypatch)
    taken = p.plan(start, end, listing=p.last_listing)
    lasts = {str(sorted((damaged / f"t-{n}").glob("*.log"))[-1]) for n in range(4)}
    assert lasts.isdisjoint(walked)
    from kafkaseg.planning import LogEndCache

    monkeypatch.setattr(LogEndCache, "found", lambda self, part: None)  # every log end walked again
    walked.clear()
    again = p.plan(start, end, listing=p.last_listing)
    assert lasts <= set(walked)
    assert taken.scan.slices == again.scan.slices
    assert taken.scan.report == again.scan.report
    assert (taken.ranges, taken.notes, taken.data_loss) == (again.ranges, again.notes, again.data_loss)
    # what the damage made the plan say, so that the comparison compares something
    report = taken.scan.report
    assert [s.corrupt_tail is not None for s in taken.scan.slices if s.partition == 1 and s.end_position > 0][-1]
    assert any("t-2: corruption in the active segment" in note for note in report.notes)
    assert any(path.startswith(str(damaged / "t-3")) for path, _ in report.indexes_rebuilt)


def test_a_log_end_is_walked_again_when_the_segment_changed_since_or_was_recent(damaged, monkeypatch):
    """A log end found by a range is taken by the plan only on the same listing, while the last segment has the size,
    mtime and file listed, and was unchanged for a while before the range walked it (an append within the mtime's
    granularity keeps a preallocated segment's size): else the plan walks it as it is now."""
    last = sorted((damaged / "t-0").glob("*.log"))[-1]
    p = planner(damaged, assign='{"t":[0]}')
    start = p.initial_offsets()
    end = p.latest_offsets(start, listing=p.last_listing)
    walked = _log_end_walks(monkeypatch)
    p.plan(start, end)  # a listing of its own
    assert str(last) in walked
    walked.clear()
    later = time.time() - 30
    os.utime(last, (later, later))  # changed since the listing
    p.plan(start, end, listing=p.last_listing)
    assert str(last) in walked
    _written_ago(damaged, 0.5)
    p = planner(damaged, assign='{"t":[0]}')
    start, end, _ = _first_plan(p)
    walked.clear()
    p.plan(start, end, listing=p.last_listing)
    assert str(last) in walked


def test_an_assigned_partition_whose_folder_goes_away_is_data_loss_not_an_option_error(data):
    p = planner(data, assign='{"a":[0,1]}')
    start = p.initial_offsets()
    shutil.rmtree(data / "a-1")
    end = p.latest_offsets(start)
    assert set(from_offsets(end)) == {("a", 0)}
    with pytest.raises(DataLossError, match="a-1 is gone"):
        p.plan(start, end)


def test_a_partition_deleted_while_its_latest_offset_is_read_is_gone(data, monkeypatch):
    import kafkaseg.streaming as streaming

    real = streaming.available_range

    def deleted_meanwhile(pdir, options, **kw):
        if pdir.partition == 1:
            shutil.rmtree(pdir.path)  # the broker renames it to a-1.<id>-delete
            return real(pdir, options, **kw)  # its files are gone: LayoutError
        return real(pdir, options, **kw)

    start = planner(data).initial_offsets()
    # a planner of its own: one that took the initial offsets reuses their ranges when the files are over 2 s old
    # (the module's template, when the whole file runs), and would not look at the partition again
    monkeypatch.setattr(streaming, "available_range", deleted_meanwhile)
    end = planner(data).latest_offsets(start)
    assert set(from_offsets(end)) == {("a", 0), ("b", 0)}


def _deleted_while_the_log_dir_is_listed(monkeypatch, folder: Path) -> None:
    """Kafka deletes a topic by renaming its folders <name>.<id>-delete: here just after the log dir was listed,
    before ``folder`` is (once)."""
    import kafkaseg.storage.layout as layout

    real = layout.read_partition_dir

    def renamed_meanwhile(path, *args, **kwargs):
        if path == str(folder) and folder.exists():
            folder.rename(folder.with_name(folder.name + ".0123456789abcdef0123456789abcdef-delete"))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(layout, "read_partition_dir", renamed_meanwhile)


def test_a_topic_deleted_while_its_folders_are_listed_is_gone_not_an_error(data, monkeypatch):
    """The rename landing between the log dir's listing and the partition folder's failed whole-dir reads and
    every stream's latestOffset with "cannot list .../b-0", also with failOnDataLoss=false (found in review)."""
    p = planner(data, failOnDataLoss="false")
    start = p.initial_offsets()
    _deleted_while_the_log_dir_is_listed(monkeypatch, data / "b-0")
    end = p.latest_offsets(start)
    assert set(from_offsets(end)) == {("a", 0), ("a", 1)}
    plan = p.plan(start, end)
    assert ("b", 0) not in plan.ranges and any("b-0 is gone" in line for line in plan.data_loss)


def test_a_whole_dir_read_leaves_out_a_topic_deleted_while_it_is_listed(data, monkeypatch):
    expected = sum(n for (topic, _), n in hws(data).items() if topic == "a")
    _deleted_while_the_log_dir_is_listed(monkeypatch, data / "b-0")
    scan = kafkaseg.open_scan(str(data))
    assert scan.to_table().num_rows == expected
    assert [(folder.rsplit("/", 1)[-1], reason.split(" (")[0]) for folder, reason in scan.plan.report.skipped_folders
            ] == [("b-0", "gone while the log dir was read")]
    from kafkaseg.cli.common import skipped_folders  # describe and verify say which partition, not "bad name"

    (folder,) = skipped_folders(scan.plan.report.skipped_folders)
    assert (folder.topic, folder.partition) == ("b", 0) and "refuses to start" not in folder.reason


def test_a_folder_gone_without_a_brokers_rename_still_fails_the_read(data, tmp_path, monkeypatch):
    """Only a broker's rename (<name>.<id>-delete) makes a folder gone while the log dir is listed a deletion: one
    moved away (an operator's mv) or a log dir unmounted meanwhile still fails the read, as before; it returned the
    other partitions, or 0 rows, saying only that a topic was being deleted (found in review)."""
    import kafkaseg.storage.layout as layout

    from kafkaseg.errors import LayoutError

    real = layout.read_partition_dir
    moved = tmp_path / "elsewhere"

    def moved_meanwhile(path, *args, **kwargs):
        if path == str(data / "b-0") and (data / "b-0").exists():
            (data / "b-0").rename(moved)
        return real(path, *args, **kwargs)

    monkeypatch.setattr(layout, "read_partition_dir", moved_meanwhile)
    with pytest.raises(LayoutError, match="b-0"):
        kafkaseg.open_scan(str(data)).to_table()


def test_stream_options_follow_spark():
    with pytest.raises(InvalidOptionError, match="not valid in streaming queries"):
        ReadOptions.from_options({"endingOffsets": "latest"}, stream=True)
    with pytest.raises(InvalidOptionError, match="higher than the maxOffsetsPerTrigger"):
        ReadOptions.from_options({"minOffsetsPerTrigger": 10, "maxOffsetsPerTrigger": "5"}, stream=True)
    with pytest.raises(InvalidOptionError, match="maxTriggerDelay"):
        ReadOptions.from_options({"maxTriggerDelay": "soon"}, stream=True)
    with pytest.raises(InvalidOptionError, match="replicas"):
        ReadOptions.from_options({"replicas": "all"}, stream=True)
    options = ReadOptions.from_options({"maxOffsetsPerTrigger": "500", "maxTriggerDelay": "2m",
                                        "startingOffsets": '{"a":{"0":-1}}'}, stream=True)
    assert (options.max_offsets_per_trigger, options.max_trigger_delay_ms) == (500, 120_000)
    assert ReadOptions.from_options({"maxTriggerDelay": "250"}, stream=True).max_trigger_delay_ms == 250
    batch = ReadOptions.from_options({"maxOffsetsPerTrigger": "500"})  # a batch read ignores them, as Spark's
    assert batch.max_offsets_per_trigger is None and batch.ignored == ("maxOffsetsPerTrigger",)
    with pytest.raises(InvalidOptionError, match="latest"):
        ReadOptions.from_options({"startingOffsets": "latest"})


def test_follow_yields_records_as_the_dir_grows_and_ends_when_idle(data):
    full = hws(data)
    set_hws(data, {tp: hw // 2 for tp, hw in full.items()})
    steps = iter([full, full])

    def poll(_seconds):  # the broker moves on while the reader sleeps
        time.sleep(0.03)
        values = next(steps, None)
        if values is not None:
            set_hws(data, values)

    rows = []
    # (idle_timeout: one poll of the listing may take longer than 0.1 s on a loaded machine, which ended the read
    # before the broker moved on)
    for batch in kafkaseg.follow(str(data), startingOffsets="earliest", maxOffsetsPerTrigger=100, idle_timeout=1.0,
                                 sleep=poll):
        rows.extend(zip(batch.column("topic").to_pylist(), batch.column("partition").to_pylist(),
                        batch.column("offset").to_pylist()))
    assert hws(data) == full and sorted(rows) == sorted(batch_rows(data)) and len(set(rows)) == len(rows)
    # the default start is latest: nothing was there to read, and nothing came
    assert list(kafkaseg.follow([str(data)], idle_timeout=0, sleep=poll)) == []


@pytest.mark.parametrize("typo, keyword", [("idle_timout", "idle_timeout"), ("pollInterval", "poll_interval"),
                                            ("metric", "metrics")])
def test_follow_suggests_its_own_keyword_for_a_misspelt_one(data, typo, keyword):
    """A misspelt keyword of follow's own lands in ``**options``: the error suggests the keyword, as a misspelt read
    option gets the option's name, instead of listing only the read options."""
    with pytest.raises(InvalidOptionError, match=f"unknown option '{typo}'.*did you mean '{keyword}'") as err:
        next(kafkaseg.follow(str(data), **{typo: 1}))
    assert "startingOffsets" not in str(err.value)  # not the list of read options, which has no such name
    with pytest.raises(InvalidOptionError, match="did you mean 'startingOffsets'"):  # read options as before
        next(kafkaseg.follow(str(data), startingOffset="earliest"))


def test_follow_raises_data_loss_unless_told_otherwise(data, caplog):
    full = hws(data)
    set_hws(data, {tp: hw - 10 for tp, hw in full.items()})
    moves = iter([lambda: set_hws(data, full)])

    def grow_then_remove(seconds):
        step = next(moves, None)
        if step is not None:
            step()
            shutil.rmtree(data / "b-0")

    with pytest.raises(DataLossError, match="b-0 is gone"):
        for _ in kafkaseg.follow(str(data), startingOffsets="earliest", idle_timeout=5, sleep=grow_then_remove):
            pass
    # lenient: the loss is logged and the stream goes on
    set_hws(data, {("a", 0): full[("a", 0)] - 10, ("a", 1): full[("a", 1)]})
    moves = iter([lambda: set_hws(data, {("a", 0): full[("a", 0)], ("a", 1): full[("a", 1)]})])

    def grow_a0_remove_a1(seconds):
        time.sleep(0.03)
        step = next(moves, None)
        if step is not None:
            step()
            shutil.rmtree(data / "a-1")

    with caplog.at_level("WARNING", logger="kafkaseg.streaming"):
        rows = sum(b.num_rows for b in kafkaseg.follow(str(data), startingOffsets="earliest", idle_timeout=0.1,
                                                       failOnDataLoss="false", sleep=grow_a0_remove_a1))
    assert rows == full[("a", 0)] + full[("a", 1)]  # all of a-0 (the last 10 after the move), a-1 before it went
    assert "a-1 is gone" in caplog.text


def test_a_start_above_the_high_watermark_the_log_reaches_waits_for_it(data):
    """A consumer fetching there gets nothing until the high watermark arrives: not data loss, not a rewind."""
    full = hws(data)
    set_hws(data, {**full, ("a", 0): 20})
    p = planner(data, startingOffsets='{"a":{"0":40}}', assign='{"a":[0]}')
    start = p.initial_offsets()
    assert plain(start) == {"a": {"0": 40}} and p.latest_offsets(start) == start
    set_hws(data, {**full, ("a", 0): 50})
    end = p.latest_offsets(start)
    assert read_batch(p, start, end) == [("a", 0, o) for o in range(40, 50)]


def test_a_start_past_the_log_end_is_data_loss_named_at_the_start_not_a_truncation(data):
    """Spark's first micro-batch reports a starting offset past the end as data loss; kafkaseg said so only at the
    first batch, as 'the log was truncated', which it never was (found by audit)."""
    log_end = hws(data)[("a", 0)]
    with pytest.raises(DataLossError, match=rf"option 'startingOffsets'.* a-0 .*{log_end + 100}.* log end "
                                            rf"{log_end}") as raised:
        planner(data, startingOffsets=f'{{"a":{{"0":{log_end + 100}}}}}').initial_offsets()
    assert "truncated" not in str(raised.value)
    # failOnDataLoss=false: the first batch logs the loss and the stream goes on from the log end, as Spark's does
    p = planner(data, startingOffsets=f'{{"a":{{"0":{log_end + 100}}}}}', assign='{"a":[0]}',
                failOnDataLoss="false")
    start = p.initial_offsets()
    end = p.latest_offsets(start)
    assert p.plan(start, end).data_loss and from_offsets(end) == {("a", 0): log_end}


@pytest.mark.parametrize("isolation", ["read_uncommitted", "read_committed"])
def test_follow_reads_a_partition_being_written_exactly_once(tmp_path, monkeypatch, isolation):
    """A writer appends a partition's segments to a live dir in arbitrary byte chunks (torn batches at the file's
    end included), rolls segments, and checkpoints a high watermark behind what is written, while follow() reads
    it from another thread: every record exactly once, in order. Under read_committed the partition is
    transactional (interleaved producers, aborts; markers arrive after their data) and the active segment has no
    .txnindex yet (a roll writes it)."""
    import threading

    from kafkaseg.wire.batch import iter_headers

    template = tmp_path / "template"
    transactional = isolation == "read_committed"
    write_data_dir(template, [TopicSpec("t", records_per_partition=3000, records_per_batch=20, codec="lz4",
                                        segment_bytes=48 * 1024, headers=1, transactional=transactional,
                                        transaction_producers=3, abort_ratio=0.3 if transactional else 0.0)],
                   seed=6)
    source = template / "t-0"
    segments = sorted(source.glob("*.log"))
    assert len(segments) >= 3
    live = tmp_path / "live"
    (live / "t-0").mkdir(parents=True)
    for name in ("meta.properties",):
        shutil.copy(template / name, live / name)
    for side in source.iterdir():
        if side.suffix not in (".log", ".index", ".timeindex", ".snapshot", ".txnindex"):
            shutil.copy(side, live / "t-0" / side.name)
    set_hws(live, {("t", 0): 0})
    done = threading.Event()
    failures: list[BaseException] = []

    def writer() -> None:
        try:
            rng = __import__("random").Random(1)
            for segment in segments:
                data = segment.read_bytes()
                ends = [(h.position + h.size, h.last_offset + 1) for h in iter_headers(data)]
                target = live / "t-0" / segment.name
                written = 0
                with open(target, "ab") as out:
                    while written < len(data):
                        step = min(len(data) - written, rng.randint(1, 6000))
                        out.write(data[written:written + step])
                        out.flush()
                        written += step
                        complete = [offset for end, offset in ends if end <= written]
                        if complete and rng.random() < 0.7:  # the checkpoint lags behind the appends
                            set_hws(live, {("t", 0): complete[-1]})
                        time.sleep(0.002)
                set_hws(live, {("t", 0): ends[-1][1]})
                for suffix in (".index", ".timeindex", ".txnindex"):  # a roll writes the finished segment's indexes
                    if segment.with_suffix(suffix).exists():
                        shutil.copy(segment.with_suffix(suffix), target.with_suffix(suffix))
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            failures.append(exc)
        finally:
            done.set()

    plans = []
    real_plan = MicroBatchPlanner.plan
    monkeypatch.setattr(MicroBatchPlanner, "plan", lambda self, start, end, **kw: plans.append(end) or
                        real_plan(self, start, end, **kw))
    thread = threading.Thread(target=writer)
    thread.start()
    offsets = []
    try:
        for batch in kafkaseg.follow(str(live), startingOffsets="earliest", poll_interval=0.005, idle_timeout=1.0,
                                     **{"kafka.isolation.level": isolation}):
            offsets.extend(batch.column("offset").to_pylist())
    finally:
        thread.join()
    assert not failures and done.is_set()
    expected = kafkaseg.read_arrow(str(template), **{"kafka.isolation.level": isolation}).column("offset")
    assert offsets == expected.to_pylist() and len(offsets) > 1500
    assert len(plans) >= 5  # read while being written, in many micro-batches


def test_follow_survives_retention_deleting_old_segments_meanwhile(tmp_path):
    """While follow() reads, the broker's retention renames old segments to .deleted and removes them (and
    advances log-start-offset-checkpoint), as UnifiedLog.deleteSegmentFiles does: the reader neither crashes nor
    returns a record twice; records it had not read when their segment went are data loss (failOnDataLoss=false:
    skipped, logged)."""
    import threading

    from kafkaseg.testing.partition import write_offset_checkpoint as write_checkpoint

    root = tmp_path / "data"
    write_data_dir(root, [TopicSpec("t", records_per_partition=6000, records_per_batch=20,
                                    segment_bytes=24 * 1024)], seed=12)
    folder = root / "t-0"
    segments = sorted(folder.glob("*.log"))
    assert len(segments) > 10
    stop = threading.Event()
    failures: list[BaseException] = []

    def retention() -> None:
        try:
            for segment in segments[:-1]:
                if stop.is_set():
                    return
                time.sleep(0.003)
                renamed = []
                for suffix in (".log", ".index", ".timeindex"):
                    path = segment.with_suffix(suffix)
                    if path.exists():
                        path.rename(path.with_name(path.name + ".deleted"))
                        renamed.append(path.with_name(path.name + ".deleted"))
                following = segments[segments.index(segment) + 1]
                write_checkpoint(root / "log-start-offset-checkpoint", {("t", 0): int(following.stem)})
                time.sleep(0.003)
                for path in renamed:
                    path.unlink()
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            failures.append(exc)

    thread = threading.Thread(target=retention)
    offsets = []
    thread.start()
    try:
        for batch in kafkaseg.follow(str(root), startingOffsets="earliest", poll_interval=0.002, idle_timeout=0.5,
                                     failOnDataLoss="false", maxOffsetsPerTrigger=300):
            offsets.extend(batch.column("offset").to_pylist())
    finally:
        stop.set()
        thread.join()
    assert not failures
    assert offsets == sorted(set(offsets)) and offsets  # in order, none twice
    assert offsets[-1] == 5999  # the last segment is never deleted: the stream reached the end


def test_an_end_fixed_at_the_log_end_before_the_broker_checkpointed_is_read_to_that_end(data):
    """A partition the broker had not checkpointed yet is read to its log end; when the checkpoint written before
    the micro-batch is planned says less, the batch still reads to the end it fixed (not data loss)."""
    p = planner(data, assign='{"a":[0]}')
    full = hws(data)
    set_hws(data, {**full, ("a", 0): 100})
    start = p.latest_offsets(p.initial_offsets())
    read_batch(p, p.initial_offsets(), start)
    set_hws(data, {tp: hw for tp, hw in full.items() if tp != ("a", 0)})  # no high watermark for a-0 yet
    end = p.latest_offsets(start)
    assert plain(end) == {"a": {"0": full[("a", 0)]}}  # its log end
    set_hws(data, {**full, ("a", 0): 150})  # the broker checkpoints it, below the log end
    plan = p.plan(start, end)
    assert not plan.data_loss
    assert read_batch(p, start, end) == [("a", 0, o) for o in range(100, full[("a", 0)])]


def test_follow_logs_and_counts_each_corrupt_batch_it_skips(tmp_path, caplog):
    """onCorruption=skip: follow dropped a corrupt batch with no log and no account (found in review). Each skip is
    logged once with its file and byte, across micro-batches, and the metrics given add them up."""
    from kafkaseg.scan import ScanMetrics

    write_data_dir(tmp_path, [TopicSpec("t", records_per_partition=200, records_per_batch=10,
                                        vary_batch_size=False)], seed=5)
    log = next((tmp_path / "t-0").glob("*.log"))
    rows = kafkaseg.read_arrow(str(tmp_path), includeMetadata="true").to_pylist()
    bad = [r for r in rows if r["offset"] in (55, 145)]  # two batches, in different micro-batches
    data = bytearray(log.read_bytes())
    for r in bad:
        data[r["position"] + 70] ^= 1
    log.write_bytes(bytes(data))
    metrics = ScanMetrics()
    with caplog.at_level("WARNING", logger="kafkaseg.streaming"):
        got = [o for b in kafkaseg.follow(str(tmp_path), startingOffsets="earliest", idle_timeout=0,
                                          maxOffsetsPerTrigger=60, onCorruption="skip", metrics=metrics,
                                          sleep=lambda s: None) for o in b.column("offset").to_pylist()]
    assert got == [o for o in range(200) if o // 10 not in (5, 14)]
    for r in bad:
        assert caplog.text.count(f"{log} at byte {r['position']}: CRC-32C mismatch") == 1
    assert metrics.decode.corrupt_batches == 2 and metrics.records == 180


def test_a_segment_deleted_between_planning_and_reading_is_logged_when_skipped(tmp_path, caplog):
    """failOnDataLoss=false skipped a segment retention deleted after the micro-batch was planned without a log line,
    in the Spark stream's readers and in follow (found in review; the README says it "skips and logs a warning")."""
    from kafkaseg.spark.source import KafkaSegDataSource

    write_data_dir(tmp_path, [TopicSpec("t", records_per_partition=600, segment_bytes=8 * 1024)], seed=2)
    first = sorted((tmp_path / "t-0").glob("*.log"))[0]
    source = KafkaSegDataSource({"path": str(tmp_path), "startingOffsets": "earliest", "failOnDataLoss": "false"})
    reader = source.streamReader(source.schema())
    start = reader.initialOffset()
    partitions = reader.partitions(start, reader.latestOffset(start, None))
    first.unlink()  # retention's .deleted rename and removal, after planning
    with caplog.at_level("INFO", logger="kafkaseg"):
        rows = sum(batch.num_rows for p in partitions for batch in reader.read(p))
    said = [r for r in caplog.records if f"{first} (offsets 0.." in r.getMessage()]
    assert rows < 600 and len(said) == 1 and said[0].levelname == "WARNING" and "skipped" in said[0].getMessage()

    caplog.clear()
    write_data_dir(tmp_path / "f", [TopicSpec("t", records_per_partition=600, segment_bytes=8 * 1024)], seed=2)
    second = sorted((tmp_path / "f" / "t-0").glob("*.log"))[1]
    # (files written within a clock tick of the listing count as changed since: segment 0 could then hold the
    # deleted offsets, which would be read again from it, not skipped)
    time.sleep(0.1)
    with caplog.at_level("INFO", logger="kafkaseg"):
        seen = 0
        for batch in kafkaseg.follow(str(tmp_path / "f"), startingOffsets="earliest", failOnDataLoss="false",
                                     idle_timeout=0.2, poll_interval=0.05, maxRecordsPerBatch=10):
            seen += batch.num_rows
            if second.exists():
                second.unlink()
    said = [r for r in caplog.records if f"{second} (offsets" in r.getMessage()]
    assert seen < 600 and len(said) == 1 and said[0].levelname == "WARNING"


def test_offsets_carry_the_topic_ids_they_were_taken_from():
    a0, a1, b0 = ("a", 0), ("a", 1), ("b", 0)
    offsets = to_offsets({a0: 5, a1: 3, b0: 7}, {a0: "idA", a1: "idA", b0: None})
    assert offsets == {"a": {"0": 5, "1": 3}, "b": {"0": 7}, TOPIC_IDS: {"a": "idA"}}  # b has none (before 2.8)
    assert from_offsets(offsets) == {a0: 5, a1: 3, b0: 7}
    assert topic_ids_of(offsets) == {a0: "idA", a1: "idA"}
    # a topic seen while it was being deleted and recreated: its partitions' ids differ, so each is kept
    mixed = to_offsets({a0: 5, a1: 3}, {a0: "old", a1: "new"})
    assert mixed[TOPIC_IDS] == {"a": {"0": "old", "1": "new"}} and topic_ids_of(mixed) == {a0: "old", a1: "new"}
    assert topic_ids_of({"a": {"0": 5}}) == {}  # offsets written before kafkaseg recorded ids, or by Spark's source
    for bad in ({"a": {"0": 5}, TOPIC_IDS: "x"}, {"a": {"0": 5}, TOPIC_IDS: {"a": 7}}):
        with pytest.raises(InvalidOptionError):
            topic_ids_of(bad)
    # the leader epoch of each partition's offset before its position, for partitions that have one
    with_epochs = to_offsets({a0: 5, b0: 7}, {a0: "idA"}, {a0: (3, 5), b0: None})
    assert with_epochs[LEADER_EPOCHS] == {"a": {"0": [3, 5]}} and leader_epochs_of(with_epochs) == {a0: (3, 5)}
    assert from_offsets(with_epochs) == {a0: 5, b0: 7}
    for bad in ({"a": {"0": 5}, LEADER_EPOCHS: {"a": 3}}, {"a": {"0": 5}, LEADER_EPOCHS: {"a": {"0": 3}}},
                {"a": {"0": 5}, LEADER_EPOCHS: {"a": {"0": ["3", 5]}}}):
        with pytest.raises(InvalidOptionError):
            leader_epochs_of(bad)


def _recreate_topic_a(data: Path, tmp_path: Path, records: int) -> dict[tuple[str, int], int]:
    """Delete topic ``a`` and create it again under the same name (another topic id), holding ``records`` new
    records per partition; return the new high watermarks."""
    other = tmp_path / "recreated"
    manifest = write_data_dir(other, [TopicSpec("a", partitions=2, records_per_partition=records,
                                                records_per_batch=10, segment_bytes=16 * 1024)], seed=11)
    for p in (0, 1):
        shutil.rmtree(data / f"a-{p}")
        shutil.copytree(other / f"a-{p}", data / f"a-{p}")
    set_hws(data, {**hws(data), **{("a", p): records for p in (0, 1)}})
    return manifest.topic_ids


def test_a_topic_recreated_past_the_stream_position_is_data_loss_not_a_silent_skip(data, tmp_path):
    """The stream stops at offset 600 of topic a; the topic is deleted and recreated, and the new one reaches
    offset 900 before the stream restarts. The offsets alone look like 300 new records: the topic ids recorded with
    them tell that offsets [0, 600) of the new topic would be skipped and the old topic's end may have been missed."""
    p = planner(data)
    end, rows, _ = drain(p, p.initial_offsets())
    assert topic_ids_of(end)[("a", 0)] != topic_ids_of(end)[("b", 0)]
    new_ids = _recreate_topic_a(data, tmp_path, records=900)
    assert new_ids["a"] != topic_ids_of(end)[("a", 0)]
    restarted = planner(data)  # a restart: only the offset log remembers where the stream was
    later = restarted.latest_offsets(end)
    assert from_offsets(later) == {("a", 0): 900, ("a", 1): 900, ("b", 0): from_offsets(end)[("b", 0)]}
    assert topic_ids_of(later)[("a", 0)] == new_ids["a"]
    with pytest.raises(DataLossError, match=r"a-0: the topic was deleted and recreated \(topic id .* at the "
                                            r"stream's offset 600"):
        restarted.plan(end, later)
    lenient = planner(data, failOnDataLoss="false")
    later = lenient.latest_offsets(end)
    plan = lenient.plan(end, later)
    assert sorted(plan.ranges) == [("a", 0), ("a", 1)] and plan.ranges[("a", 0)] == (0, 900)
    assert len(plan.data_loss) == 2 and all("new topic is read from its beginning (offset 0)" in note
                                            for note in plan.data_loss)
    got = sorted(read_batch(lenient, end, later))
    assert got == sorted(batch_rows(data, subscribe="a")) and len(got) == 1800
    # from there on the stream follows the new topic without further notes
    assert lenient.latest_offsets(later) == later and lenient.plan(later, later).data_loss == []


def test_a_topic_recreated_below_the_stream_position_is_told_from_a_truncation(data, tmp_path):
    p = planner(data, failOnDataLoss="false", maxOffsetsPerTrigger=100)
    end, _, _ = drain(p, p.initial_offsets(), max_offsets=100)
    _recreate_topic_a(data, tmp_path, records=250)
    later = p.latest_offsets(end, max_offsets=100)
    # the rate limit counts the new topic from its beginning, as for a partition found after the start
    assert from_offsets(later)[("a", 0)] + from_offsets(later)[("a", 1)] == 100
    plan = p.plan(end, later)
    assert plan.ranges[("a", 0)][0] == 0 and all("deleted and recreated" in note for note in plan.data_loss)
    # Trigger.AvailableNow's target, fixed on the new topic, is not raised to the old topic's position
    available_now = planner(data)
    available_now.prepare_available_now()
    assert from_offsets(available_now.latest_offsets(end))[("a", 0)] == 250
    # offsets without ids (written before kafkaseg recorded them): the same files are a log that went back
    old_style = plain(end)
    strict = planner(data)
    with pytest.raises(DataLossError, match="went back from 600 to 250.*truncated or the topic recreated"):
        strict.plan(old_style, strict.latest_offsets(old_style))


def test_a_topic_recreated_between_fixing_an_end_and_planning_it_is_data_loss(data, tmp_path):
    p = planner(data, failOnDataLoss="false")
    start = p.initial_offsets()
    end = p.latest_offsets(start)
    _recreate_topic_a(data, tmp_path, records=900)  # after the end was fixed on the old topic
    plan = p.plan(start, end)
    assert sorted(plan.ranges) == [("b", 0)]  # the old topic's offsets are not read from the new one
    assert sum("after this micro-batch's end was fixed" in note for note in plan.data_loss) == 2
    later = p.latest_offsets(end)  # the next batch reads the new topic from its beginning
    assert p.plan(end, later).ranges[("a", 0)] == (0, 900)


def test_offsets_from_a_checkpoint_are_accepted_as_starting_offsets(data):
    """A query's offsets, pasted from its checkpoint into startingOffsets (of a stream or a batch read): the ids and
    epochs recorded with them are not topics."""
    p = planner(data)
    end, _, _ = drain(p, p.initial_offsets())
    assert TOPIC_IDS in end and LEADER_EPOCHS in end
    again = planner(data, startingOffsets=json.dumps(end))
    assert from_offsets(again.initial_offsets()) == from_offsets(end)
    assert kafkaseg.read_arrow(str(data), startingOffsets=json.dumps(end)).num_rows == 0


def test_a_topic_recreated_during_an_available_now_run_is_reported_once(data, tmp_path):
    """Trigger.AvailableNow fixed its target on the deleted topic: once a trigger finds the topic recreated, the
    target is the new topic's, which is read from its beginning, and the loss is reported once per partition."""
    p = planner(data, failOnDataLoss="false")
    p.prepare_available_now()
    start = p.initial_offsets()
    end = p.latest_offsets(start, max_offsets=400)
    read_batch(p, start, end)
    _recreate_topic_a(data, tmp_path, records=900)
    losses, rows = [], []
    for _ in range(100):
        start, end = end, p.latest_offsets(end, max_offsets=400)
        if end == start:
            break
        losses.extend(p.plan(start, end).data_loss)
        rows.extend(read_batch(p, start, end))
    assert sorted(from_offsets(end).items()) == [(("a", 0), 900), (("a", 1), 900), (("b", 0), 300)]
    assert len(losses) == 2 and all("the new topic is read from its beginning" in loss for loss in losses)
    assert sorted(r for r in rows if r[0] == "a") == sorted(batch_rows(data, subscribe="a"))


def test_the_topic_id_is_kept_through_a_trigger_that_finds_no_partition_metadata(data, tmp_path):
    p = planner(data, failOnDataLoss="false")
    end, _, _ = drain(p, p.initial_offsets())
    meta = data / "a-0" / "partition.metadata"
    saved = meta.read_bytes()
    meta.unlink()  # a copy or sync step that writes the folder again, the file last
    full = hws(data)
    set_hws(data, {**full, ("b", 0): full[("b", 0)] - 1})
    assert topic_ids_of(p.latest_offsets(end)) == topic_ids_of(end)
    meta.write_bytes(saved)
    set_hws(data, full)
    _recreate_topic_a(data, tmp_path, records=900)
    later = p.latest_offsets(end)
    assert p.plan(end, later).ranges[("a", 0)] == (0, 900)


def test_a_changed_topic_id_is_seen_even_when_the_segment_files_did_not_change(data):
    """The range cache of idle partitions: a partition.metadata rewritten over the same segment files (e.g. a
    restore of the same bytes under another topic) is not an idle partition."""
    from kafkaseg.testing.partition import write_partition_metadata

    old = time.time() - 60
    for f in data.rglob("*"):
        os.utime(f, (old, old))
    p = planner(data, failOnDataLoss="false")
    end, _, _ = drain(p, p.initial_offsets())
    for q in (0, 1):
        write_partition_metadata(data / f"a-{q}" / "partition.metadata", "gPWyJm9pvRczcm5bHdWHbg")
    later = p.latest_offsets(end)
    assert topic_ids_of(later)[("a", 0)] == "gPWyJm9pvRczcm5bHdWHbg"
    assert p.plan(end, later).ranges[("a", 0)] == (0, 600)


def test_a_log_that_diverged_after_a_batch_end_was_fixed_is_read_once(data):
    """The end was fixed on the log as it was (a replayed batch after a restart, or an election between Spark's
    calls); the log then diverged below it. The batch reads up to the divergence and the next one on from there:
    every offset once, and the loss (the end's records as they were) reported once."""
    full = hws(data)
    set_hws(data, {**full, ("a", 0): 100})
    strict = planner(data, assign='{"a":[0]}')
    start = strict.initial_offsets()
    end = strict.latest_offsets(start)
    lenient = planner(data, assign='{"a":[0]}', failOnDataLoss="false")
    _unclean_election(data, "a-0", 80)
    set_hws(data, {**full, ("a", 0): 150})
    with pytest.raises(DataLossError, match=r"after this micro-batch's end 100 was fixed: this micro-batch's "
                                            r"offsets \[80, 100\) as they were when its end was fixed are gone"):
        strict.plan(start, end)
    plan = lenient.plan(start, end)
    assert plan.ranges == {("a", 0): (0, 80)} and len(plan.data_loss) == 1
    rows = read_batch(lenient, start, end)
    later = lenient.latest_offsets(end)
    plan = lenient.plan(end, later)
    assert plan.ranges == {("a", 0): (80, 150)} and plan.data_loss == [] and "where the log diverged" in \
        plan.notes[0]
    rows += read_batch(lenient, end, later)
    assert [o for _, _, o in rows] == list(range(150))


def test_a_log_that_diverged_during_an_available_now_run_is_read_again_once(data):
    p = planner(data, assign='{"a":[0]}', failOnDataLoss="false")
    p.prepare_available_now()
    start = p.initial_offsets()
    end = p.latest_offsets(start, max_offsets=200)
    rows = read_batch(p, start, end)
    _unclean_election(data, "a-0", 100)
    losses = []
    for _ in range(20):
        start, end = end, p.latest_offsets(end, max_offsets=200)
        if end == start:
            break
        losses.extend(p.plan(start, end).data_loss)
        rows += read_batch(p, start, end)
    assert from_offsets(end) == {("a", 0): 600} and len(losses) == 1 and "records [100, 200) were replaced" in losses[0]
    offsets = sorted(o for _, _, o in rows)
    assert offsets == sorted(list(range(600)) + list(range(100, 200)))  # the replaced ones read again, once


def _write_partition(folder: Path, batches: list[tuple[int, int, int]]) -> None:
    """Write ``folder``'s log again as ``(first offset, last offset, leader epoch)`` batches (its other files kept)."""
    from kafkaseg.testing.partition import PartitionWriter
    from kafkaseg.testing.writer import Record, build_batch_v2

    for f in folder.iterdir():
        if f.name[0].isdigit() or f.name == "leader-epoch-checkpoint":
            f.unlink()
    writer = PartitionWriter(folder)
    for first, last, epoch in batches:
        records = [Record(o, 1_700_000_000_000 + o, b"k%d" % o, b"v") for o in range(first, last + 1)]
        writer.append(build_batch_v2(records, partition_leader_epoch=epoch))
    writer.close()


def test_replicas_whose_epoch_checkpoints_differ_after_compaction_are_not_a_divergence(tmp_path):
    """broker1 led epochs 1 and 2 (from 50 and 60); broker2 was rebuilt from a log already compacted, holding no
    batch in [50, 95), so its leader-epoch-checkpoint never got epoch 1 and has epoch 2 from 95. The same batches
    on both. The stream reads broker2 to 90, then broker2's copy goes away: broker1's epochs are no divergence,
    because the epoch recorded is the last batch's (0, ending at 49), as Kafka's consumer takes it. (Its high
    watermark went back into the gap with a leader change; a batch follows the one after the gap, since a gap
    below the high watermark right before a log's last batch starting above it is what a corrupt base offset
    leaves: offsets_hidden_by_last_batch.)"""
    ahead, behind, options = _two_replicas(tmp_path, hw_ahead=90, hw_behind=80)
    leader = [(o, o + 4, 0) for o in range(0, 50, 5)] + [(50, 54, 1), (55, 59, 1)] + \
        [(o, o + 4, 2) for o in range(60, 105, 5)]
    _write_partition(behind / "a-0", leader)
    _write_partition(ahead / "a-0", [b for b in leader if not 50 <= b[0] < 95])
    assert "2 95" in (ahead / "a-0" / "leader-epoch-checkpoint").read_text()
    p = MicroBatchPlanner(options)
    start = to_offsets({("a", 0): 70})
    end = p.latest_offsets(start)
    assert from_offsets(end) == {("a", 0): 90} and leader_epochs_of(end) == {("a", 0): (0, 50)}
    shutil.move(str(ahead / "a-0"), str(tmp_path / "moved-away"))
    for restarted in (p, MicroBatchPlanner(options)):
        assert restarted.latest_offsets(end) == end  # broker1's high watermark is 80: no new data, no loss


def _lenient_stream_then_election(data: Path, at: int, hw: int):
    """A lenient stream of a-0 at 100; then an unclean election truncates the log at ``at`` and the new leader's
    high watermark is ``hw``. Returns the planner, the original high watermarks and the stream's position."""
    full = hws(data)
    set_hws(data, {**full, ("a", 0): 100})
    p = planner(data, assign='{"a":[0]}', failOnDataLoss="false")
    position = p.latest_offsets(p.initial_offsets())
    _unclean_election(data, "a-0", at)
    set_hws(data, {**full, ("a", 0): hw})
    return p, full, position


def test_a_rate_limited_stream_moves_on_after_a_divergence_that_ends_its_batch_at_the_old_position(data):
    """Stream at 100, the log diverges at 80: with 20 offsets a trigger, the next end is the old position again,
    whose mark must be taken from the new log's batch (a stale one made the end equal the start: no batch, ever)."""
    p, full, position = _lenient_stream_then_election(data, at=80, hw=300)
    plans = list(poll_micro_batches(p, position))
    assert from_offsets(position) == {("a", 0): 100} and len(plans) > 0
    ranges = [plan.ranges[("a", 0)] for plan in plans if plan.ranges]
    assert ranges[0] == (80, 300) and sum(len(plan.data_loss) for plan in plans) == 1
    limited = planner(data, assign='{"a":[0]}', failOnDataLoss="false", maxOffsetsPerTrigger=20)
    first = limited.latest_offsets(position, max_offsets=20)
    assert from_offsets(first) == {("a", 0): 100} and first != position  # the new log's mark
    assert limited.plan(position, first).ranges == {("a", 0): (80, 100)}
    assert from_offsets(limited.latest_offsets(first, max_offsets=20)) == {("a", 0): 120}


def test_a_second_divergence_after_a_batch_stopped_at_the_first_is_data_loss(data):
    p, full, start, end = _batch_cut_by_an_election(data, hw_at_plan=160)  # the batch stops at 140
    assert p.plan(start, end).ranges == {("a", 0): (100, 140)}
    _unclean_election(data, "a-0", 120)  # a second election, below where the batch stopped
    plan = p.plan(end, p.latest_offsets(end))
    assert plan.ranges[("a", 0)][0] == 120 and len(plan.data_loss) == 1 and plan.notes == []


def test_an_available_now_target_above_a_diverged_logs_high_watermark_is_lowered(data):
    """The target was fixed on the old log (200); it diverges at 80 and the new leader's high watermark is 130: the
    run reads the new log [80, 130) and ends there, as a trigger without AvailableNow does, instead of moving the
    position to 200 over records the new log does not have yet (a later run then skipped [130, 200))."""
    full = hws(data)
    set_hws(data, {**full, ("a", 0): 200})
    p = planner(data, assign='{"a":[0]}', failOnDataLoss="false", startingOffsets='{"a":{"0":100}}')
    p.prepare_available_now()
    start = p.initial_offsets()
    _unclean_election(data, "a-0", 80)
    set_hws(data, {**full, ("a", 0): 130})
    end = p.latest_offsets(start)
    assert from_offsets(end) == {("a", 0): 130}
    plan = p.plan(start, end)
    assert plan.ranges == {("a", 0): (80, 130)} and len(plan.data_loss) == 1
    assert p.latest_offsets(end) == end  # the run ends there


def test_a_replayed_first_batch_whose_end_diverged_is_reported_once(data):
    """startingOffsets=latest: the first batch's end (150) is fixed, the query stops before it commits, the log
    diverges at 120 while it is down. The replay (its start resolved again, 180) reads nothing and reports the loss;
    the next batch reads the new log from 120 with a note, not a second report."""
    full = hws(data)
    set_hws(data, {**full, ("a", 0): 100})
    p = planner(data, assign='{"a":[0]}', failOnDataLoss="false", startingOffsets="latest")
    set_hws(data, {**full, ("a", 0): 150})
    end = p.latest_offsets(p.initial_offsets(), all_available=True)
    _unclean_election(data, "a-0", 120)
    set_hws(data, {**full, ("a", 0): 180})
    restarted = planner(data, assign='{"a":[0]}', failOnDataLoss="false", startingOffsets="latest")
    replay = restarted.plan(restarted.initial_offsets(), end)
    assert replay.ranges == {} and len(replay.data_loss) == 1 and "stops at 120" in replay.data_loss[0]
    following = restarted.plan(end, restarted.latest_offsets(end, all_available=True))
    assert following.ranges == {("a", 0): (120, 180)} and following.data_loss == [] and len(following.notes) == 1


def test_one_divergence_below_both_ends_of_a_batch_is_one_report(data):
    # below the start (100) and the end (160), after both were fixed
    p, _, start, end = _batch_cut_by_an_election(data, hw_at_plan=160, at=80)
    plan = p.plan(start, end)
    assert plan.ranges == {}  # nothing below the divergence to read; the next batch reads on from 80
    assert len(plan.data_loss) == 1


def test_a_second_election_at_the_same_offset_after_an_end_was_fixed_is_its_own_loss(data):
    """The first election (at 140) stops batch 1 there; batch 2's end (200) is fixed on the new leader's log
    (epoch 1, [140, 200) committed); a second unclean leader truncates at 140 again before batch 2 is planned. The
    start's divergence is the one already reported (a note), but epoch 1's [140, 200) is a loss of its own."""
    p, full, start, end = _batch_cut_by_an_election(data, hw_at_plan=160)
    assert p.plan(start, end).ranges == {("a", 0): (100, 140)}
    set_hws(data, {**full, ("a", 0): 200})
    end2 = p.latest_offsets(end)
    _unclean_election(data, "a-0", 140)
    plan = p.plan(end, end2)
    assert plan.ranges == {} and len(plan.data_loss) == 1 and "leader epoch 1" in plan.data_loss[0]


def test_a_new_leaders_high_watermark_below_the_divergence_is_waited_for_not_read_again(data):
    """Stream at 100, the log diverges at 90, the new leader's high watermark is 80: offsets below 90 are the ones
    the stream read (they were not replaced), so it waits at 90 instead of going back to 80 and reading 80..89
    twice."""
    p, full, position = _lenient_stream_then_election(data, at=90, hw=80)
    end = p.latest_offsets(position)
    assert from_offsets(end) == {("a", 0): 90}
    plan = p.plan(position, end)
    assert plan.ranges == {} and len(plan.data_loss) == 1
    assert p.latest_offsets(end) == end  # no new data until the high watermark passes 90
    set_hws(data, {**full, ("a", 0): 150})
    later = p.latest_offsets(end)
    assert p.plan(end, later).ranges == {("a", 0): (90, 150)}


def _batch_cut_by_an_election(data: Path, hw_at_plan: int, at: int = 140):
    """A lenient stream of a-0 at 100 whose next batch's end is fixed at 160; before the batch is planned an
    unclean election truncates the log at ``at`` and the new leader's high watermark is ``hw_at_plan``. Returns the
    planner, the original high watermarks, and the batch's start and end."""
    full = hws(data)
    set_hws(data, {**full, ("a", 0): 100})
    p = planner(data, assign='{"a":[0]}', failOnDataLoss="false")
    start = p.latest_offsets(p.initial_offsets())
    set_hws(data, {**full, ("a", 0): 160})
    end = p.latest_offsets(start)
    _unclean_election(data, "a-0", at)
    set_hws(data, {**full, ("a", 0): hw_at_plan})
    return p, full, start, end


def test_a_batch_cut_at_a_divergence_and_at_a_lower_high_watermark_is_read_on_from_where_it_stopped(data):
    """Batch [100, 160) fixed on the old log; before it is planned the log diverges at 140 and the new leader's high
    watermark is 120: the batch reads [100, 120) (the planner reports the end above the available end), and the
    next ones read on from 120, not from the divergence (offsets [120, 140) were never read)."""
    p, full, start, end = _batch_cut_by_an_election(data, hw_at_plan=120)
    rows = read_batch(p, start, end)
    set_hws(data, {**full, ("a", 0): 200})
    later = p.latest_offsets(end)
    plan = p.plan(end, later)
    assert plan.ranges == {("a", 0): (120, 200)} and plan.data_loss == []
    rows += read_batch(p, end, later)
    assert [o for _, _, o in rows] == list(range(100, 200))


def test_one_divergence_below_both_ends_is_one_report_naming_both_losses(data):
    """A clean leader change at 100 (the stream's position) and then an unclean election at 80, after the batch's
    end was fixed: one report, naming the stream's replaced records and the batch's records that are gone."""
    full = hws(data)
    set_hws(data, {**full, ("a", 0): 100})
    p = planner(data, assign='{"a":[0]}', failOnDataLoss="false")
    start = p.latest_offsets(p.initial_offsets())
    _unclean_election(data, "a-0", 100)  # here: a clean election, which only starts an epoch at the log end
    set_hws(data, {**full, ("a", 0): 160})
    end = p.latest_offsets(start)
    assert leader_epochs_of(end)[("a", 0)][0] == 1
    _unclean_election(data, "a-0", 80)
    plan = p.plan(start, end)
    assert len(plan.data_loss) == 1
    assert "records [80, 100) were replaced" in plan.data_loss[0] and "offsets [100, 160)" in plan.data_loss[0]


@pytest.mark.parametrize("hw_at_plan,second_election", [(90, None), (120, 130), (120, 110)])
def test_batches_cut_at_a_divergence_read_every_offset_once_or_report_it(data, hw_at_plan, second_election):
    """Batch [100, 160) fixed on the old log, which then diverges at 140 with the new leader's high watermark at
    90 (below the batch's start: it reads nothing, and the stream waits at 100, not at 90) or 120 (it reads
    [100, 120)); a second election after it, above where it stopped (nothing the stream read is replaced) or below
    (its records from there are, and are read again with a report)."""
    p, full, start, end = _batch_cut_by_an_election(data, hw_at_plan=hw_at_plan)
    rows, reports = read_batch(p, start, end), []
    if second_election is not None:
        _unclean_election(data, "a-0", second_election)
    set_hws(data, {**full, ("a", 0): 200})
    position = end
    for _ in range(10):
        later = p.latest_offsets(position)
        if later == position:
            break
        reports += p.plan(position, later).data_loss
        rows += read_batch(p, position, later)
        position = later
    offsets = sorted(o for _, _, o in rows)
    replaced = list(range(second_election, 120)) if second_election is not None and second_election < 120 else []
    assert offsets == sorted(list(range(100, 200)) + replaced)
    assert len(reports) == (1 if replaced else 0)


def test_where_a_cut_batch_stopped_serves_only_the_batch_after_it(data, tmp_path):
    """A batch of topic a is cut at a divergence (stop kept in memory); the stream reads on, and the topic is then
    deleted and recreated. A batch of the new topic ending at the same offset under the same epoch must not be
    taken for the batch after the cut one: an election on the new topic is reported and read again from there."""
    p, full, start, end = _batch_cut_by_an_election(data, hw_at_plan=120)
    p.plan(start, end)  # cut at 140 and at 120: where it stopped is kept for the next batch
    set_hws(data, {**full, ("a", 0): 200})
    position, _, _ = drain(p, end)
    _recreate_topic_a(data, tmp_path, records=300)
    set_hws(data, {**hws(data), ("a", 0): 160})
    later = p.latest_offsets(position)
    p.plan(position, later)  # the new topic from its beginning to 160
    position = later
    assert leader_epochs_of(position)[("a", 0)] == (0, 160)
    _unclean_election(data, "a-0", 130)
    set_hws(data, {**hws(data), ("a", 0): 300})
    later = p.latest_offsets(position)
    plan = p.plan(position, later)
    assert plan.ranges[("a", 0)] == (130, 300) and len(plan.data_loss) == 1
    assert "records [130, 160) were replaced" in plan.data_loss[0]


def test_planning_a_cut_batch_again_gives_the_same_plan(data):
    """Spark plans a batch again for each action of a foreachBatch: a batch that starts where a cut batch stopped
    and is cut itself must plan the same each time (its own record of where it stopped is kept apart from the one
    it was planned from)."""
    p, full, start, end = _batch_cut_by_an_election(data, hw_at_plan=120)
    p.plan(start, end)
    set_hws(data, {**full, ("a", 0): 200})
    end2 = p.latest_offsets(end)
    _unclean_election(data, "a-0", 180)
    first, again = p.plan(end, end2), p.plan(end, end2)
    assert first.ranges == again.ranges == {("a", 0): (120, 180)}
    assert first.data_loss == again.data_loss and len(first.data_loss) == 1
    assert "[180, 200) as they were when its end was fixed are gone" in first.data_loss[0]


def test_planning_again_a_batch_that_ends_where_it_starts_gives_the_same_plan(data):
    """The cut batch stopped at 120 below its end 160; with 40 offsets a trigger the next batch ends at 160 again,
    on the new log (another epoch), and is cut itself by a second election at 150: its own record of where it
    stopped has the same end, so entries are told apart by the end's mark too."""
    p, full, start, end = _batch_cut_by_an_election(data, hw_at_plan=120)
    p.plan(start, end)
    set_hws(data, {**full, ("a", 0): 250})
    end2 = p.latest_offsets(end, max_offsets=40)
    assert from_offsets(end2) == from_offsets(end) and leader_epochs_of(end2) != leader_epochs_of(end)
    _unclean_election(data, "a-0", 150)
    first, again = p.plan(end, end2), p.plan(end, end2)
    assert first.ranges == again.ranges == {("a", 0): (120, 150)} and first.data_loss == again.data_loss


def test_a_range_computed_while_its_file_was_recent_stays_unsettled_when_reused(data, monkeypatch):
    """A range taken while the last segment had just changed is reused on the listing it was taken on, but a later
    listing computes it again, however much later that reuse came (it was marked settled at reuse; found in
    review)."""
    import kafkaseg.streaming as streaming

    ranges = _ranges_computed(monkeypatch)
    _written_ago(data, 0.5)
    p = planner(data)
    start = p.initial_offsets()
    assert len(ranges) == 3
    real_time = time.time
    monkeypatch.setattr(streaming.time, "time", lambda: real_time() + 10)  # the reuse comes 10 s later
    p.latest_offsets(start, listing=p.last_listing)
    assert len(ranges) == 3  # reused: the same listing
    p.latest_offsets(start)
    assert len(ranges) == 6  # a new listing: computed again, since they were taken of files just written


@pytest.mark.parametrize("reached", ["standing", "by a batch"])
def test_a_lost_log_end_is_said_again_only_when_the_lost_offsets_change(tmp_path, reached):
    """failOnDataLoss=false, the stream at a log end past which the high watermark and recovery point say offsets
    were acknowledged and flushed (tests/lost_tail_data.py): said once (standing there from latest, or by the batch
    that read to it). A new high watermark checkpoint (310) over the same files loses no other offsets
    ([270, min(high watermark, recovery point)) still): it was said again, its words naming the new value; a
    recovery point that lowers the end of the loss says it again."""
    from tests.lost_tail_data import LOST_FROM, lost_tail_copy, set_high_watermark, set_recovery_point

    root = tmp_path / "data"
    lost_tail_copy(root, "hwrp")
    p = planner(root, failOnDataLoss="false",
                startingOffsets="latest" if reached == "standing" else "earliest")
    start = p.initial_offsets()
    said = []
    end = p.latest_offsets(start)
    said += [words for _, words in p.standing_loss]
    if reached == "by a batch":
        plan = p.plan(start, end)
        said += plan.data_loss
        assert from_offsets(end) == {("t", 0): LOST_FROM}
        start = end
        said += [words for _ in range(2) for _, words in (p.latest_offsets(start), p.standing_loss)[1]]
    assert len(said) == 1 and "offsets [270, 300) were acknowledged and flushed" in said[0], said
    set_high_watermark(root, 310)
    assert p.latest_offsets(start) == start and p.standing_loss == []
    set_recovery_point(root, 290)
    assert p.latest_offsets(start) == start
    (again,) = [words for _, words in p.standing_loss]
    assert "offsets [270, 290) were acknowledged and flushed" in again
    assert p.latest_offsets(start) == start and p.standing_loss == []


def test_a_batch_read_checks_the_form_of_the_stream_options_it_ignores():
    """maxOffsetsPerTrigger, minOffsetsPerTrigger and maxTriggerDelay mean nothing to a batch read, which ignores
    them as Spark's does; but a malformed one was silently accepted there, and so by the Spark source's load()
    (whose schema takes the options as either kind of read), a stream saying it only when its query started (found
    in a user pass). An unknown or malformed option is an error naming it (README "Options")."""
    for options, said in (({"maxOffsetsPerTrigger": "1e6"}, "'maxOffsetsPerTrigger' must be"),
                          ({"minOffsetsPerTrigger": "0"}, "'minOffsetsPerTrigger' must be"),
                          ({"maxTriggerDelay": "5 minutes"}, "'maxTriggerDelay' must be"),
                          ({"minOffsetsPerTrigger": "10", "maxOffsetsPerTrigger": 5}, "higher than the max")):
        with pytest.raises(InvalidOptionError, match=said):
            ReadOptions.from_options(options)
    batch = ReadOptions.from_options({"maxOffsetsPerTrigger": "500", "maxTriggerDelay": "2m"})
    assert batch.max_offsets_per_trigger is None and batch.ignored == ("maxOffsetsPerTrigger", "maxTriggerDelay")


def _named_offsets(words: str) -> list[tuple[int, int]]:
    """The offset ranges ``[a, b)`` a data-loss warning names."""
    import re

    return [(int(a), int(b)) for a, b in re.findall(r"\[(\d+), (\d+)\)", words)]


def _delete_segments_below(folder: Path, keep_from: int) -> None:
    """Retention: the segments of ``folder`` wholly below the one based at ``keep_from`` go, and the log start
    offset checkpoint moves there (as UnifiedLog.deleteOldSegments leaves them)."""
    for log in folder.glob("*.log"):
        if int(log.stem) < keep_from:
            for suffix in (".log", ".index", ".timeindex", ".snapshot"):
                log.with_suffix(suffix).unlink(missing_ok=True)
    write_offset_checkpoint(folder.parent / "log-start-offset-checkpoint",
                            {(folder.name.rsplit("-", 1)[0], int(folder.name.rsplit("-", 1)[1])): keep_from})


def test_a_rate_limited_stream_behind_retention_says_each_lost_offset_once(data):
    """maxOffsetsPerTrigger keeps Spark's rateLimit rule, so a stream that retention overtook creeps through the
    deleted offsets a limit at a time; each micro-batch said the loss from its start to the log start again (244
    overlapping warnings in a few minutes in a live run). Each lost offset is said once: by the first batch that
    meets it, a later retention step naming only the offsets it newly lost."""
    p = planner(data, assign='{"a":[0]}', failOnDataLoss="false", maxOffsetsPerTrigger=20)
    folder = data / "a-0"
    bases = sorted(int(log.stem) for log in folder.glob("*.log"))
    assert len(bases) > 4
    position = p.initial_offsets()
    _delete_segments_below(folder, bases[2])
    said: list[str] = []
    batches = 0
    for plan in poll_micro_batches(p, position):
        batches += 1
        said.extend(plan.data_loss)
        if batches == 3:  # retention goes on while the stream creeps through what it deleted
            _delete_segments_below(folder, bases[3])
    assert batches > 5  # crept a limit at a time (Spark's rule, kept)
    named = [r for words in said for r in _named_offsets(words)]
    assert len(said) == 2, said
    covered = sorted(o for lo, hi in named for o in range(lo, hi))
    assert covered == list(range(bases[3]))  # every lost offset, each once


def test_a_rate_limited_stream_behind_retention_still_fails_under_fail_on_data_loss(data):
    p = planner(data, assign='{"a":[0]}', maxOffsetsPerTrigger=20)
    bases = sorted(int(log.stem) for log in (data / "a-0").glob("*.log"))
    position = p.initial_offsets()
    _delete_segments_below(data / "a-0", bases[2])
    with pytest.raises(DataLossError, match=rf"offsets \[0, {bases[2]}\) are gone"):
        next(iter(poll_micro_batches(p, position)))


def test_recorded_high_watermarks_and_read_from_round_trip_and_malformed_ones_are_refused():
    """@highWatermarks and @readFrom: written for positioned partitions only, read back, ignored by from_offsets,
    and refused when not {topic: {partition: offset}}."""
    from kafkaseg.streaming import HIGH_WATERMARKS, READ_FROM, high_watermarks_of, read_from_of

    offsets = to_offsets({("t", 0): 200, ("t", 1): 50}, high_watermarks={("t", 0): 100, ("u", 0): 7},
                         read_from={("t", 0): 150})
    assert offsets == {"t": {"0": 200, "1": 50}, HIGH_WATERMARKS: {"t": {"0": 100}}, READ_FROM: {"t": {"0": 150}}}
    assert from_offsets(offsets) == {("t", 0): 200, ("t", 1): 50}
    assert high_watermarks_of(offsets) == {("t", 0): 100} and read_from_of(offsets) == {("t", 0): 150}
    assert high_watermarks_of({"t": {"0": 5}, HIGH_WATERMARKS: {"t": {"9": 1}}}) == {}  # not positioned: left out
    for bad in ({"t": {"0": 5}, READ_FROM: {"t": {"0": "3"}}}, {"t": {"0": 5}, READ_FROM: [1]},
                {"t": {"0": 5}, HIGH_WATERMARKS: {"t": {"0": True}}}):
        with pytest.raises(InvalidOptionError, match="not a kafkaseg source offset"):
            read_from_of(bad) if READ_FROM in bad else high_watermarks_of(bad)


def _two_log_dirs(tmp_path: Path, records: int) -> tuple[Path, Path, list[int]]:
    """Log dirs d0 (topic t, one partition of ``records`` records in 4 KiB segments) and d1 (empty, of the same
    broker), and the offsets a read of both returns: where a move between log dirs takes t-0."""
    d0, d1 = tmp_path / "d0", tmp_path / "d1"
    write_data_dir(d0, [TopicSpec("t", records_per_partition=records, records_per_batch=10, segment_bytes=4096)],
                   seed=4)
    d1.mkdir()
    shutil.copy(d0 / "meta.properties", d1 / "meta.properties")
    return d0, d1, kafkaseg.read_arrow([str(d0), str(d1)]).column("offset").to_pylist()


@pytest.mark.parametrize("lenient", [False, True])
def test_follow_reads_a_partition_moved_to_another_log_dir_meanwhile_once(tmp_path, lenient):
    """A move between log dirs ends while follow() reads (``LogManager.replaceCurrentWithFutureLog``: the copy
    renamed ``<topic>-<partition>`` in the other log dir, the source folder ``<topic>-<partition>.<id>-delete``,
    removed a minute later, the checkpoints following): the micro-batch planned before reads its planned files in
    the folder renamed for deletion, the next ones find the partition in its new log dir; every offset once, no data
    loss (found by tests/live_broker.py --move)."""
    d0, d1, want = _two_log_dirs(tmp_path, 1200)
    gone = d0 / "t-0.fedcba9876543210fedcba9876543210-delete"
    options = {"failOnDataLoss": "false"} if lenient else {}
    offsets = []
    for batch in kafkaseg.follow([str(d0), str(d1)], startingOffsets="earliest", poll_interval=0.01,
                                 idle_timeout=0.3, maxOffsetsPerTrigger=250, **options):
        offsets.extend(batch.column("offset").to_pylist())
        if len(offsets) >= 100 and (d0 / "t-0").exists():  # mid-micro-batch
            shutil.copytree(d0 / "t-0", d1 / "t-0.0123456789abcdef0123456789abcdef-future")
            (d1 / "t-0.0123456789abcdef0123456789abcdef-future").rename(d1 / "t-0")
            for checkpoint in d0.glob("*checkpoint"):
                shutil.copy(checkpoint, d1 / checkpoint.name)
            (d0 / "t-0").rename(gone)
        elif len(offsets) >= 600 and gone.exists():
            shutil.rmtree(gone)
    assert not gone.exists()
    assert offsets == want


@pytest.mark.parametrize("lenient", [False, True])
def test_follow_goes_on_with_a_partition_whose_move_to_another_log_dir_ends_while_its_range_is_taken(
        tmp_path, monkeypatch, lenient):
    """The move's end (the copy renamed ``<topic>-<partition>`` in the other log dir, the source folder renamed
    ``<topic>-<partition>.<id>-delete``) between a trigger's listing and its look at the partition's files: the
    partition is in its new log dir, not gone (left out, the next trigger took it for a new partition and read it
    from its start again: tests/live_broker.py --move saw a follow repeat ~1,600 offsets)."""
    from kafkaseg import planning

    d0, d1, want = _two_log_dirs(tmp_path, 1200)
    real = planning._available_range
    calls = []

    def moved_meanwhile(pdir, *args, **kwargs):
        calls.append(pdir.path)
        if len(calls) == 3 and (d0 / "t-0").exists():
            shutil.copytree(d0 / "t-0", d1 / "t-0")
            for checkpoint in d0.glob("*checkpoint"):
                shutil.copy(checkpoint, d1 / checkpoint.name)
            (d0 / "t-0").rename(d0 / "t-0.fedcba9876543210fedcba9876543210-delete")
        return real(pdir, *args, **kwargs)

    monkeypatch.setattr(planning, "_available_range", moved_meanwhile)
    offsets = []
    for batch in kafkaseg.follow([str(d0), str(d1)], startingOffsets="earliest", poll_interval=0.01,
                                 idle_timeout=0.3, maxOffsetsPerTrigger=250,
                                 **({"failOnDataLoss": "false"} if lenient else {})):
        offsets.extend(batch.column("offset").to_pylist())
    assert len(calls) > 3 and not (d0 / "t-0").exists()
    assert offsets == want


def test_a_partition_moved_to_another_log_dir_while_planned_is_planned_in_its_new_folder(tmp_path, monkeypatch):
    """The move's end between the listing and the plan's look at the partition's files: planned from its new folder,
    not a ``LayoutError`` for a file gone (found by tests/live_broker.py --move)."""
    from kafkaseg import planning

    d0, d1, want = _two_log_dirs(tmp_path, 400)
    real = planning._plan_partition

    def moved_meanwhile(pdir, *args, **kwargs):
        if (d0 / "t-0").exists():
            shutil.copytree(d0 / "t-0", d1 / "t-0")
            (d0 / "t-0").rename(d0 / "t-0.fedcba9876543210fedcba9876543210-delete")
        return real(pdir, *args, **kwargs)

    monkeypatch.setattr(planning, "_plan_partition", moved_meanwhile)
    scan = kafkaseg.open_scan([str(d0), str(d1)])
    assert {s.partition_path for s in scan.plan.slices} == {str(d1 / "t-0")}
    assert scan.to_table().column("offset").to_pylist() == want


def _walks(monkeypatch) -> dict[str, int]:
    """Counts, from now on, of the log-end walks the replica choice makes (``partition_log_end_offset``) and of
    the segment files opened (``SegmentReader``)."""
    import kafkaseg.storage.layout as layout

    counts = {"walks": 0, "opens": 0}
    real_walk, real_open = layout.partition_log_end_offset, SegmentReader.__init__

    def walk(*a, **k):
        counts["walks"] += 1
        return real_walk(*a, **k)

    def opened(self, *a, **k):
        counts["opens"] += 1
        return real_open(self, *a, **k)

    monkeypatch.setattr(layout, "partition_log_end_offset", walk)
    monkeypatch.setattr(SegmentReader, "__init__", opened)
    return counts


def test_the_copy_reaching_the_position_is_not_read_again_on_idle_triggers_nor_by_the_plan(tmp_path, monkeypatch):
    """Two log dirs holding topic t's four partitions, broker1's ahead (high watermark 200, broker2's 150), the
    stream at broker1's end. Checking that the copy chosen reaches the stream's position read its log end at every
    replica choice: each idle trigger walked the last segment of each partition's chosen copy again (4 walks, 4
    segments opened, where a trigger over unchanged files read none), and so did the plan of a micro-batch on the
    listing its end was fixed on (4 walks). The log end read stands while the copy's files are as they were: a
    trigger reads it again only for a partition whose last segment changed."""
    one, two = tmp_path / "broker1", tmp_path / "broker2"
    for root, records in ((one, 200), (two, 150)):
        write_data_dir(root, [TopicSpec("t", partitions=4, records_per_partition=records, segment_bytes=4000)],
                       seed=1)
        _written_ago(root, 60)
    p = MicroBatchPlanner(ReadOptions.from_options({"paths": [str(one), str(two)], "subscribe": "t"}, stream=True))
    start = p.initial_offsets()
    end = p.latest_offsets(start)
    assert plain(end) == {"t": {str(n): 200 for n in range(4)}}
    counts = _walks(monkeypatch)
    for _ in range(3):
        assert p.latest_offsets(end) == end
    assert counts == {"walks": 0, "opens": 0}
    assert p.plan(start, end, listing=p.last_listing).scan is None
    assert counts == {"walks": 0, "opens": 0}
    moved = p.latest_offsets(to_offsets({("t", n): 180 for n in range(4)}))
    assert plain(moved) == plain(end) and p.plan(to_offsets({("t", n): 180 for n in range(4)}), moved,
                                                 listing=p.last_listing).scan is not None
    counts.update(walks=0, opens=0)
    last = sorted((one / "t-2").glob("*.log"))[-1]
    os.utime(last, (time.time() - 30, time.time() - 30))  # changed since: read again, that partition only
    assert p.latest_offsets(end) == end and counts["walks"] == 1


def test_a_trigger_over_segments_written_a_moment_ago_reads_each_log_end_once(tmp_path, monkeypatch):
    """The same two log dirs, written a moment ago: a trigger cannot take a range it computed before (their files
    may have changed within their mtime), so it walks each partition's last segment for its range, and walked it
    a second time to check that the copy chosen reaches the stream's position (8 walks and 16 segment opens per
    idle trigger instead of 4 and 12). The check takes the range's walk of the trigger before (a log end at or past
    the position, of the same file, no smaller now: an append cannot take it below), and the range the walk the
    check made; the plan of a micro-batch on a listing of its own (Spark's) walked each again (4), now none."""
    one, two = tmp_path / "broker1", tmp_path / "broker2"
    for root, records in ((one, 200), (two, 150)):
        write_data_dir(root, [TopicSpec("t", partitions=4, records_per_partition=records, segment_bytes=4000)],
                       seed=1)
    p = MicroBatchPlanner(ReadOptions.from_options({"paths": [str(one), str(two)], "subscribe": "t"}, stream=True))
    start = p.initial_offsets()
    end = p.latest_offsets(start)
    counts = _walks(monkeypatch)
    for _ in range(2):
        counts.update(walks=0, opens=0)
        assert p.latest_offsets(end) == end
        assert counts == {"walks": 4, "opens": 12}
    counts.update(walks=0, opens=0)
    assert p.plan(start, end).scan is None
    assert counts == {"walks": 0, "opens": 0}


def test_a_copy_cut_below_the_position_since_its_log_end_was_read_is_passed_over(tmp_path):
    """The log end a trigger read stands for a copy's later choices only while its last segment is the same file
    and no smaller: broker1 (high watermark 100, files 0..99) is chosen for a stream at 70; its segment is then cut
    in place at offset 60 (a crash's lost tail: same file), and the next trigger reads it again and chooses
    broker2 (high watermark 90, files 0..99)."""
    ahead, behind, short = tmp_path / "broker1", tmp_path / "broker2", tmp_path / "short"
    for root, records in ((ahead, 100), (behind, 100), (short, 60)):
        write_data_dir(root, [TopicSpec("a", records_per_partition=records, records_per_batch=5)], seed=4)
    set_hws(ahead, {("a", 0): 100})
    set_hws(behind, {("a", 0): 90})
    _written_ago(ahead, 60)
    _written_ago(behind, 60)
    p = MicroBatchPlanner(ReadOptions.from_options({"paths": [str(ahead), str(behind)],
                                                    "startingOffsets": "earliest"}, stream=True))
    start = to_offsets({("a", 0): 70})
    assert plain(p.latest_offsets(start)) == {"a": {"0": 100}}
    log = sorted((ahead / "a-0").glob("*.log"))[-1]
    cut = sorted((short / "a-0").glob("*.log"))[-1].stat().st_size
    with open(log, "r+b") as f:  # the same file (inode), cut where broker1's batch at offset 60 begins
        f.truncate(cut)
    os.utime(log, (time.time() - 30, time.time() - 30))
    end = p.latest_offsets(start)
    assert plain(end) == {"a": {"0": 90}}
    assert read_batch(p, start, end) == [("a", 0, o) for o in range(70, 90)]
