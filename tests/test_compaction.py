"""kafkaseg.compaction and kafkaseg.compacted_table without a JVM: the config, the per-key reduction against a
brute-force replay, whole runs on generated data dirs (transactions, aborts, open transactions, tombstones,
keyless records, a log the cleaner already compacted) checked record for record, incremental runs against full
rebuilds, idempotence, and the refusals (data loss, another incarnation, another schema)."""

from __future__ import annotations

import dataclasses
import datetime as dt
import random
import shutil
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import DeltaTable

from kafkaseg.compacted_table import compact_arrow, delta_dataset, merge_changes, read_state, table_schema
from kafkaseg.compaction import (
    STATE_KEY,
    CompactionConfig,
    PartitionFacts,
    TableState,
    _divergence,
    apply_changes,
    cleanable_end,
    compaction_read_options,
    gather_facts,
    latest_per_key,
    plan_increment,
)
from kafkaseg.errors import CompactedTableError, DataLossError, InvalidOptionError
from kafkaseg.schema import arrow_schema
from kafkaseg.testing import TopicSpec, write_data_dir
from kafkaseg.testing.partition import write_offset_checkpoint
from tests.compaction_data import cleaned_copy, expected_state, retention_copy, table_rows, truncated_copy

ROOT = Path(__file__).resolve().parents[1]
NOW = 1_800_000_000_000

# a changelog with everything compaction must get right: transactions (aborted, and one left open per
# partition), tombstones, keyless records, headers, offset gaps and emptied batches (cleaner leftovers), few keys,
# small segments (several per partition)
CHANGELOG = TopicSpec("entities", partitions=2, records_per_partition=1200, records_per_batch=12,
                      key_cardinality=60, tombstone_ratio=0.15, null_key_ratio=0.05, headers=1,
                      transactional=True, transaction_producers=3, abort_ratio=0.3, open_transactions=1,
                      gap_ratio=0.1, empty_batches=2, segment_bytes=12 * 1024, codec="lz4")


HEADERS = {"includeHeaders": "true"}


def _table(uri) -> dict:
    return table_rows(delta_dataset(str(uri)).to_table())


# --------------------------------------------------------------------------------------------------------------------
# config and options

def test_config_defaults_example_file_and_errors(tmp_path):
    assert CompactionConfig() == CompactionConfig.load(str(ROOT / "conf" / "compaction.toml"))
    bad = tmp_path / "c.toml"
    bad.write_text('read_until = "cleanable"\nmin_compaction_lag = 5\nmystery = 1\n')
    with pytest.raises(InvalidOptionError, match=r"c\.toml: unknown keys min_compaction_lag, mystery"):
        CompactionConfig.load(str(bad))
    bad.write_text("read_until = [")
    with pytest.raises(InvalidOptionError, match="not valid TOML"):
        CompactionConfig.load(str(bad))
    with pytest.raises(InvalidOptionError, match="key_scope 'topic' is not supported: offsets of different"):
        CompactionConfig.from_mapping({"key_scope": "topic"})
    for key, value in (("read_until", "hw"), ("on_data_loss", "skip"), ("min_compaction_lag_ms", -1),
                       ("delete_retention_ms", True), ("max_offsets_per_partition", 0), ("partition_by", "topic"),
                       ("partition_by", ["date"])):
        with pytest.raises(InvalidOptionError, match=f"{key} must be"):
            CompactionConfig.from_mapping({key: value})
    assert CompactionConfig().with_changes(on_data_loss="rebuild", read_until=None).on_data_loss == "rebuild"


def test_read_options_force_a_committed_read_and_refuse_contradictions():
    opts = compaction_read_options({"subscribe": "a", "includeHeaders": "true", "KAFKA.ISOLATION.LEVEL":
                                    "read_committed"})
    assert opts["kafka.isolation.level"] == "read_committed" and opts["includeHeaders"] == "true"
    assert "KAFKA.ISOLATION.LEVEL" not in opts
    for key, value in (("kafka.isolation.level", "read_uncommitted"), ("includeControl", "true"),
                       ("includeMetadata", "true"), ("replicas", "all"), ("failOnDataLoss", "false"),
                       ("startingOffsets", "earliest"), ("endingTimestamp", "5"),
                       # a skipped corrupt batch would be recorded as applied; records past the high watermark are
                       # not committed to the partition yet (a leader change can truncate them)
                       ("onCorruption", "skip"), ("upperBound", "logEndOffset"), ("columns", "key,value"),
                       ("timestampUnit", "ms")):  # the table's timestamps are microseconds
        with pytest.raises(InvalidOptionError, match=key):
            compaction_read_options({key: value})
    assert compaction_read_options({"onCorruption": "fail"})["onCorruption"] == "fail"


# --------------------------------------------------------------------------------------------------------------------
# the reduction

def _brute_force_latest(rows: list[dict]) -> dict:
    latest: dict = {}
    for row in rows:
        if row["key"] is None:
            continue
        ident = (row["topic"], row["partition"], row["key"])
        if ident not in latest or row["offset"] > latest[ident]["offset"]:
            latest[ident] = row
    return latest


@pytest.mark.parametrize("seed", range(8))
def test_latest_per_key_matches_a_brute_force_reduction(seed):
    rng = random.Random(seed)
    rows = []
    for topic in ("a", "b"):
        for partition in range(3):
            offsets = rng.sample(range(500), rng.randint(0, 120))  # any order, gaps
            for offset in offsets:
                key = None if rng.random() < 0.1 else bytes([rng.randrange(6)]) * rng.randint(0, 2)
                value = None if rng.random() < 0.2 else b"v%d" % offset
                rows.append({"key": key, "value": value, "topic": topic, "partition": partition, "offset": offset,
                             "timestamp": offset * 1000, "timestampType": 0})
    rng.shuffle(rows)
    table = pa.Table.from_pylist(rows, schema=pa.schema([f if f.name != "timestamp" else pa.field(
        "timestamp", pa.int64()) for f in arrow_schema()]))
    got = latest_per_key(table)
    expected = _brute_force_latest(rows)
    assert got.num_rows == len(expected)
    assert {(r["topic"], r["partition"], r["key"]): r for r in got.to_pylist()} == expected
    assert got.column("offset").to_pylist() == sorted(got.column("offset").to_pylist())


def test_apply_changes_is_the_newer_offset_and_idempotent():
    schema = pa.schema([("key", pa.binary()), ("value", pa.binary()), ("topic", pa.string()),
                        ("partition", pa.int32()), ("offset", pa.int64())])
    state = pa.Table.from_pylist([{"key": b"a", "value": b"1", "topic": "t", "partition": 0, "offset": 5},
                                  {"key": b"b", "value": b"2", "topic": "t", "partition": 0, "offset": 6},
                                  {"key": b"a", "value": b"x", "topic": "t", "partition": 1, "offset": 1}],
                                 schema=schema)
    changes = pa.Table.from_pylist([{"key": b"a", "value": None, "topic": "t", "partition": 0, "offset": 9},
                                    {"key": b"b", "value": b"3", "topic": "t", "partition": 0, "offset": 8},
                                    {"key": b"c", "value": None, "topic": "t", "partition": 0, "offset": 10},
                                    {"key": b"d", "value": b"4", "topic": "t", "partition": 1, "offset": 2}],
                                   schema=schema)
    once = apply_changes(state, changes)
    rows = {(r["partition"], r["key"]): (r["value"], r["offset"]) for r in once.to_pylist()}
    assert rows == {(0, b"b"): (b"3", 8), (1, b"a"): (b"x", 1), (1, b"d"): (b"4", 2)}
    assert apply_changes(once, changes).sort_by("offset").equals(once.sort_by("offset"))


# --------------------------------------------------------------------------------------------------------------------
# planning increments (pure)

def _facts(**kw) -> PartitionFacts:
    base = dict(topic="t", partition=0, log_start_offset=0, high_watermark=100, last_stable_offset=90,
                active_segment_base=80, cleaner_offset=None, topic_id="ID1", cluster_id="C1")
    base.update(kw)
    return PartitionFacts(**base)


def test_cleanable_end_is_the_cleaners_range_end():
    f = _facts(segments=((0, 1_000), (40, 5_000), (60, 9_000)))
    assert cleanable_end(f, 0, 0, 10_000) == 80  # active segment base below the LSO
    assert cleanable_end(_facts(last_stable_offset=70, active_segment_base=80), 0, 0, 10_000) == 70
    # min.compaction.lag: the first segment whose largest timestamp is newer than now - lag (4_000) ends it
    assert cleanable_end(f, 0, 6_000, 10_000) == 40
    assert cleanable_end(f, 0, 500, 10_000) == 80
    # only segments holding offsets at or after the run's start count (LogCleanerManager: from firstDirtyOffset)
    assert cleanable_end(_facts(segments=((0, 9_000), (40, 1_000))), 40, 6_000, 10_000) == 80


def test_plan_increment_continues_recorded_offsets_and_records_the_new_ones():
    config = CompactionConfig()
    first = plan_increment([_facts()], None, config, NOW)
    assert first.full and first.ranges == {("t", 0): (0, 90)}
    assert first.state == TableState({("t", 0): 90}, {"t": "ID1"}, {"t": "C1"}, NOW, "last_stable_offset",
                                     caught_up_at_ms={("t", 0): NOW}, log_starts={("t", 0): 0})
    assert TableState.from_json(first.state.to_json(), "x") == first.state
    other = TableState({("t", 0): 90, ("u", 3): 7}, {"t": "ID1", "u": "ID2"}, {"t": "C1"}, NOW - 1)
    nxt = plan_increment([_facts(last_stable_offset=95, high_watermark=99)], other, config, NOW)
    assert not nxt.full and nxt.ranges == {("t", 0): (90, 95)}
    assert nxt.state.next_offsets == {("t", 0): 95, ("u", 3): 7}  # a topic not read this run keeps its offsets
    capped = plan_increment([_facts(last_stable_offset=95)], other, config.with_changes(
        max_offsets_per_partition=3), NOW)
    assert capped.ranges == {("t", 0): (90, 93)} and capped.capped == (("t", 0),)
    # rows below a log start that moved since the table recorded it leave the table (older tables: from 0)
    assert nxt.expired == {} and nxt.state.log_starts == {("t", 0): 0}
    moved = plan_increment([_facts(log_start_offset=40, last_stable_offset=95, high_watermark=99)], nxt.state,
                           config, NOW)
    assert moved.expired == {("t", 0): 40} and moved.state.log_starts == {("t", 0): 40}
    assert TableState.from_json(moved.state.to_json(), "x") == moved.state
    assert plan_increment([_facts(log_start_offset=40)], moved.state, config, NOW).expired == {}
    assert plan_increment([_facts(log_start_offset=50)], None, config, NOW).expired == {}  # a rebuild reads from it
    cleanable = plan_increment([_facts()], None, config.with_changes(read_until="cleanable"), NOW)
    assert cleanable.ranges == {("t", 0): (0, 80)} and cleanable.state.read_until == "cleanable"
    with pytest.raises(CompactedTableError, match="malformed"):
        TableState.from_json('{"version": 1}', "table v3")


@pytest.mark.parametrize("facts, finding", [
    (_facts(log_start_offset=120, high_watermark=150, last_stable_offset=150), r"offsets 90\.\.119 were deleted"),
    (_facts(high_watermark=60, last_stable_offset=60), "holds offsets up to 89 but the log ends at 60"),
    (_facts(cleaner_offset=95, high_watermark=99, last_stable_offset=99), "deletes there may be gone"),
])
def test_plan_increment_finds_data_loss(facts, finding):
    state = TableState({("t", 0): 90}, {"t": "ID1"}, {"t": "C1"}, NOW - 86_400_001)
    with pytest.raises(DataLossError, match=finding):
        plan_increment([facts], state, CompactionConfig(), NOW)
    rebuilt = plan_increment([facts], state, CompactionConfig(on_data_loss="rebuild"), NOW)
    assert rebuilt.full and len(rebuilt.losses) == 1
    assert rebuilt.ranges[("t", 0)][0] == facts.log_start_offset


def test_plan_increment_trusts_a_cleaned_log_read_within_delete_retention():
    recent = TableState({("t", 0): 90}, {"t": "ID1"}, {"t": "C1"}, NOW - 86_400_000)
    facts = _facts(cleaner_offset=95, high_watermark=99, last_stable_offset=99)
    assert plan_increment([facts], recent, CompactionConfig(), NOW).ranges == {("t", 0): (90, 99)}


def test_plan_increment_refuses_another_incarnation_or_a_missing_partition():
    state = TableState({("t", 0): 90, ("t", 1): 5}, {"t": "ID1"}, {"t": "C1"}, NOW)
    with pytest.raises(CompactedTableError, match="topic id ID1.*has topic id ID9"):
        plan_increment([_facts(topic_id="ID9")], state, CompactionConfig(on_data_loss="rebuild"), NOW)
    with pytest.raises(CompactedTableError, match="cluster id C1"):
        plan_increment([_facts(cluster_id="C2")], state, CompactionConfig(), NOW)
    with pytest.raises(DataLossError, match=r"t-1 \(table at offset 5\) is not in the data dirs"):
        plan_increment([_facts()], state, CompactionConfig(), NOW)
    # on disk but not selected by this run (a table built by assign): kept as it is, not lost
    kept = plan_increment([_facts()], state, CompactionConfig(), NOW, on_disk=[("t", 0), ("t", 1)])
    assert kept.ranges == {("t", 0): (90, 90)} and kept.state.next_offsets[("t", 1)] == 5


def test_a_table_lagging_behind_the_cleaner_counts_delete_retention_from_when_it_last_caught_up():
    """Capped runs every few hours that never reach the cleaner's checkpoint: each run is recent, but a tombstone
    beyond the table's position may have been cleaned right after the table last reached the cleaner and removed
    delete_retention_ms later, while the table still holds the key's older value. Kafka's rule counts from when
    the consumer last read up to the cleaned part, not from its last poll."""
    day = 86_400_000
    config = CompactionConfig(max_offsets_per_partition=10)
    facts = _facts(cleaner_offset=70)
    first = plan_increment([facts], None, config, NOW)  # a (capped) rebuild from the log start
    assert first.ranges == {("t", 0): (0, 10)}
    state = first.state
    for hours in (8, 16, 24):
        state = plan_increment([facts], state, config, NOW + hours * 3_600_000).state
    with pytest.raises(DataLossError, match=r"t-0: the cleaner compacted offsets from 40 .* the table last read up "
                                            r"to the cleaner's checkpoint 86400001 ms ago"):
        plan_increment([facts], state, config, NOW + day + 1)
    # reaching the cleaner restarts the clock
    caught = plan_increment([_facts(cleaner_offset=45)], state, config, NOW + day - 1).state
    assert caught.next_offsets[("t", 0)] == 50
    later = plan_increment([_facts(cleaner_offset=55)], caught, config, NOW + 2 * day - 2)
    assert later.ranges == {("t", 0): (50, 60)}
    assert TableState.from_json(later.state.to_json(), "x") == later.state


# --------------------------------------------------------------------------------------------------------------------
# whole runs (Spark-free twin of jobs/compact.py) on generated data dirs

@pytest.fixture(scope="module")
def changelog(tmp_path_factory):
    """A transactional changelog (``full``) and the same dir without each partition's last two segments
    (``head``: as it was before they were appended)."""
    root = tmp_path_factory.mktemp("changelog")
    manifest = write_data_dir(root / "full", [CHANGELOG], seed=3)
    ends = truncated_copy(root / "full", root / "head", drop_segments=2)
    assert len(ends) == 2
    return manifest, root, ends


def test_full_run_matches_a_consumer_replaying_the_committed_records(changelog, tmp_path):
    manifest, root, _ = changelog
    result = compact_arrow([str(root / "full")], str(tmp_path / "t"), options={"includeHeaders": "true"},
                           now_ms=NOW)
    expected = expected_state(manifest)
    assert _table(tmp_path / "t") == expected
    pms = manifest.partitions.values()
    assert any(r.aborted and r.key is not None for pm in pms for r in pm.records)  # aborted data was there
    assert any(r.txn_state == "open" for pm in pms for r in pm.records)  # and an open transaction
    assert result["plan"].increment.state.next_offsets == {k: pm.last_stable_offset
                                                            for k, pm in manifest.partitions.items()}
    assert len(expected) < 2 * 60 and result["changes"] > len(expected)  # deletes happened


def test_incremental_run_after_appended_segments_equals_a_full_rebuild(changelog, tmp_path):
    manifest, root, ends = changelog
    table = str(tmp_path / "t")
    first = compact_arrow([str(root / "head")], table, options={"includeHeaders": "true"}, now_ms=NOW)
    head_lso = first["plan"].increment.state.next_offsets
    # the head ends inside a transaction whose marker was appended later: its data is not in the table yet
    open_then = [(tp, r) for tp, pm in manifest.partitions.items() for r in pm.records
                 if head_lso[tp] <= r.offset < ends[tp] and r.txn_state == "committed" and not r.is_control]
    assert open_then, "the head should end inside a transaction committed later"
    assert all(_table(table).get((tp[0], tp[1], r.key), (None,) * 5)[4] != r.offset for tp, r in open_then)
    assert _table(table) == expected_state(manifest, ends=head_lso)
    second = compact_arrow([str(root / "full")], table, options={"includeHeaders": "true"}, now_ms=NOW + 1000)
    assert not second["plan"].full and second["merge"]["num_source_rows"] == second["changes"]
    assert {tp: r[0] for tp, r in second["plan"].increment.ranges.items()} == head_lso
    compact_arrow([str(root / "full")], str(tmp_path / "rebuilt"), options={"includeHeaders": "true"},
                  now_ms=NOW)
    assert _table(table) == _table(tmp_path / "rebuilt") == expected_state(manifest)
    assert any(_table(table)[(tp[0], tp[1], r.key)][4] == r.offset for tp, r in open_then
               if (tp[0], tp[1], r.key) in _table(table))  # committed since: now in the table
    _, state = read_state(table, table_schema(True), ("topic",))
    assert state.next_offsets == {k: pm.last_stable_offset for k, pm in manifest.partitions.items()}


def test_capped_runs_catch_up_to_the_full_rebuild(changelog, tmp_path):
    manifest, root, _ = changelog
    table = str(tmp_path / "t")
    config = CompactionConfig(max_offsets_per_partition=250)
    for runs in range(1, 20):
        result = compact_arrow([str(root / "full")], table, config, {"includeHeaders": "true"}, now_ms=NOW + runs)
        if not result["plan"].increment.capped:
            break
    else:
        pytest.fail("capped runs never caught up")
    most = max(pm.last_stable_offset for pm in manifest.partitions.values())
    assert runs == -(-most // 250) > 1
    assert _table(table) == expected_state(manifest)


def test_rerunning_an_increment_changes_nothing(changelog, tmp_path):
    manifest, root, _ = changelog
    table = str(tmp_path / "t")
    compact_arrow([str(root / "head")], table, now_ms=NOW)
    second = compact_arrow([str(root / "full")], table, now_ms=NOW + 1)
    after = _table(table)
    # the same increment again (as after a crash that lost the knowledge of the commit): the change set of the
    # same offsets, merged into the table that already holds it, changes no row
    from kafkaseg.scan import read_arrow

    changes = latest_per_key(read_arrow([str(root / "full")], **second["plan"].read_options)).cast(
        table_schema(False))
    metrics = merge_changes(DeltaTable(table), changes, second["plan"].increment.state)
    assert (metrics["num_target_rows_updated"], metrics["num_target_rows_deleted"],
            metrics["num_target_rows_inserted"]) == (0, 0, 0)
    assert _table(table) == after
    # and a scheduled rerun with nothing new reads nothing, merges nothing, and records its read time
    third = compact_arrow([str(root / "full")], table, now_ms=NOW + 2)
    assert third["plan"].increment.offsets_to_read == 0 and third["changes"] == 0
    assert _table(table) == after
    history = DeltaTable(table).history()
    assert '"read_at_ms":%d' % (NOW + 2) in history[0][STATE_KEY]


def test_a_log_the_cleaner_compacted_gives_the_same_table(tmp_path):
    spec = TopicSpec("users", partitions=2, records_per_partition=1500, records_per_batch=10, key_cardinality=80,
                     tombstone_ratio=0.2, null_key_ratio=0.1, headers=1, segment_bytes=16 * 1024)
    manifest = write_data_dir(tmp_path / "raw", [spec], seed=5)
    bounds = {tp: pm.segments[-1].base_offset for tp, pm in manifest.partitions.items()}
    cleaned_copy(manifest, tmp_path / "kept", clean_below=bounds, drop_tombstones=False)
    cleaned_copy(manifest, tmp_path / "gone", clean_below=bounds, drop_tombstones=True)
    from kafkaseg.scan import read_arrow

    raw_rows = read_arrow(str(tmp_path / "raw")).num_rows
    assert read_arrow(str(tmp_path / "gone")).num_rows < read_arrow(str(tmp_path / "kept")).num_rows < raw_rows / 3
    tables = {}
    for name in ("raw", "kept", "gone"):
        compact_arrow([str(tmp_path / name)], str(tmp_path / f"t-{name}"), options={"includeHeaders": "true"},
                      now_ms=NOW)
        tables[name] = _table(tmp_path / f"t-{name}")
    assert tables["raw"] == tables["kept"] == tables["gone"] == expected_state(manifest)


@pytest.mark.parametrize("nothing_new", [False, True])
def test_keys_whose_records_retention_deleted_leave_the_table_as_from_a_rebuild(tmp_path, nothing_new):
    """cleanup.policy=compact,delete: time or size retention deletes a compacted topic's oldest segments, and with
    them every key whose latest record was there (DeleteRecords does the same to any topic). An incremental run
    must then drop those keys' rows, as a rebuild from the log (and a consumer starting at the log start) has no
    such key, not keep them for ever; the other partitions' rows stay."""
    root = tmp_path / "d"
    manifest = write_data_dir(root / "full", [dataclasses.replace(CHANGELOG, key_cardinality=400)], seed=3)
    truncated_copy(root / "full", root / "head", drop_segments=2)
    table = str(tmp_path / "t")
    first = compact_arrow([str(root / ("full" if nothing_new else "head"))], table, options=HEADERS, now_ms=NOW)
    tp = ("entities", 0)
    read_to = first["plan"].increment.state.next_offsets[tp]
    starts = retention_copy(root / "full", tmp_path / "expired", {tp: read_to})
    expected = expected_state(manifest, starts=starts)
    left = {r.key for r in manifest.partition(*tp).records if r.offset >= starts[tp]}
    gone = {k for k in _table(table) if k[:2] == tp and k[2] not in left}
    assert gone  # retention took keys the table holds with every record of theirs
    result = compact_arrow([str(tmp_path / "expired")], table, options=HEADERS, now_ms=NOW + 1000)
    assert not result["plan"].full and result["plan"].increment.expired == starts
    assert _table(table) == expected
    compact_arrow([str(tmp_path / "expired")], str(tmp_path / "rebuilt"), options=HEADERS, now_ms=NOW)
    assert _table(table) == _table(tmp_path / "rebuilt")
    # nothing new, nothing moved: nothing to drop
    again = compact_arrow([str(tmp_path / "expired")], table, options=HEADERS, now_ms=NOW + 2000)
    assert again["plan"].increment.offsets_to_read == 0 and not again["plan"].increment.expired
    assert _table(table) == _table(tmp_path / "rebuilt")


def test_data_loss_is_refused_or_rebuilt(changelog, tmp_path):
    manifest, root, ends = changelog
    table = str(tmp_path / "t")
    compact_arrow([str(root / "head")], table, now_ms=NOW)
    recorded = dict(read_state(table, table_schema(False), ("topic",))[1].next_offsets)
    moved = tmp_path / "moved"
    shutil.copytree(root / "full", moved)  # retention (DeleteRecords) moved the log start past the table
    tp = ("entities", 0)
    lost_start = recorded[tp] + 10
    write_offset_checkpoint(moved / "log-start-offset-checkpoint", {tp: lost_start})
    version = DeltaTable(table).version()
    with pytest.raises(DataLossError, match=rf"entities-0: offsets {recorded[tp]}\.\.{lost_start - 1} were "
                                            r"deleted .*--on-data-loss rebuild"):
        compact_arrow([str(moved)], table, now_ms=NOW + 1)
    assert DeltaTable(table).version() == version  # nothing committed
    rebuilt = compact_arrow([str(moved)], table, CompactionConfig(on_data_loss="rebuild"), now_ms=NOW + 1)
    assert rebuilt["plan"].full and rebuilt["plan"].increment.losses
    compact_arrow([str(moved)], str(tmp_path / "fresh"), now_ms=NOW + 1)
    assert _table(table) == _table(tmp_path / "fresh")


def test_another_incarnation_or_schema_is_refused(changelog, tmp_path):
    manifest, root, _ = changelog
    table = str(tmp_path / "t")
    compact_arrow([str(root / "head")], table, now_ms=NOW)
    write_data_dir(tmp_path / "recreated", [CHANGELOG], seed=4)  # same topic name, new topic id and cluster
    with pytest.raises(CompactedTableError, match="deleted and recreated"):
        compact_arrow([str(tmp_path / "recreated")], table, now_ms=NOW + 1)
    with pytest.raises(CompactedTableError, match="only in this run: headers"):
        compact_arrow([str(root / "full")], table, options={"includeHeaders": "true"}, now_ms=NOW + 1)
    with pytest.raises(CompactedTableError, match="partitioned by topic, this run by partition"):
        compact_arrow([str(root / "full")], table, CompactionConfig(partition_by=("partition",)), now_ms=NOW + 1)
    with pytest.raises(CompactedTableError, match="not a Delta table yet"):
        compact_arrow([str(root / "full")], str(tmp_path / "none"), mode="incremental", now_ms=NOW)
    with pytest.raises(CompactedTableError, match="a rebuild cannot change a Delta table's partitioning"):
        compact_arrow([str(root / "full")], table, CompactionConfig(partition_by=()), mode="full", now_ms=NOW + 1)
    compact_arrow([str(tmp_path / "recreated")], table, mode="full", now_ms=NOW + 2)  # a rebuild is allowed
    assert read_state(table, table_schema(False), ("topic",))[1].topic_ids["entities"] != manifest.topic_ids[
        "entities"]
    from deltalake import write_deltalake

    write_deltalake(str(tmp_path / "foreign"), pa.table({"a": [1]}))
    with pytest.raises(CompactedTableError, match="not written by a compaction run.*columns a"):
        compact_arrow([str(root / "full")], str(tmp_path / "foreign"), now_ms=NOW)


def test_a_table_another_job_wrote_is_never_replaced_by_a_rebuild(changelog, tmp_path):
    """An --output pointing at another job's table (an export's, with its `date` column and every topic) is refused
    by every mode, nothing written, and the message does not advise the --mode full that would replace it."""
    from deltalake import write_deltalake

    _, root, _ = changelog
    export_like = pa.table({"key": [b"k"], "value": [b"v"], "topic": ["orders"], "partition": [0],
                            "offset": [7], "date": [dt.date(2024, 5, 1)]})
    table = str(tmp_path / "export")
    write_deltalake(table, export_like, partition_by=["topic"])
    for mode in ("auto", "full"):
        with pytest.raises(CompactedTableError, match="not written by a compaction run") as caught:
            compact_arrow([str(root / "full")], table, mode=mode, now_ms=NOW)
        assert "--mode full" not in str(caught.value)
    assert DeltaTable(table).version() == 0 and delta_dataset(table).to_table().num_rows == 1


def test_delta_tables_are_read_through_pyarrows_own_filesystem_when_local(tmp_path):
    """deltalake's ``to_pyarrow_dataset()``/``to_pyarrow_table()`` read through a ``pyarrow.fs.PyFileSystem`` over its
    Python storage handler. Arrow's I/O threads may drop the last reference to it just after a read returned; when
    that happens while the interpreter finalizes, the thread taking the GIL to free it is unwound through a C++
    destructor and the process aborts at exit ("terminate called without an active exception", about one run in
    twenty of a script that reads a table twice and exits, with or without kafkaseg). ``delta_dataset`` reads a
    local table through pyarrow's own filesystem, which needs no GIL, and kafkaseg and its jobs read no Delta table
    otherwise."""
    import ast

    import pyarrow.fs as pafs
    from deltalake import write_deltalake

    uri = str(tmp_path / "t")
    write_deltalake(uri, pa.table({"topic": ["a", "b"], "v": [1, 2]}), partition_by=["topic"])
    write_deltalake(uri, pa.table({"topic": ["a"], "v": [3]}), partition_by=["topic"], mode="append")
    for dataset, values in ((delta_dataset(uri), [1, 2, 3]), (delta_dataset(uri, DeltaTable(uri, version=0)), [1, 2]),
                            (delta_dataset("file://" + uri), [1, 2, 3])):
        assert not isinstance(dataset.filesystem, pafs.PyFileSystem)
        assert sorted(dataset.to_table().column("v").to_pylist()) == values
    helper = ROOT / "kafkaseg" / "compacted_table.py"
    for path in sorted((ROOT / "kafkaseg").rglob("*.py")) + sorted((ROOT / "jobs").rglob("*.py")):
        calls = [node.lineno for node in ast.walk(ast.parse(path.read_text())) if isinstance(node, ast.Call)
                 and isinstance(node.func, ast.Attribute)
                 and node.func.attr in ("to_pyarrow_dataset", "to_pyarrow_table")]
        assert path == helper or not calls, f"{path.relative_to(ROOT)}:{calls} reads a Delta table without delta_dataset"


def test_cleanable_mode_stops_at_the_active_segment(changelog, tmp_path):
    manifest, root, _ = changelog
    result = compact_arrow([str(root / "full")], str(tmp_path / "t"), CompactionConfig(read_until="cleanable"),
                           {"includeHeaders": "true"}, now_ms=NOW)
    ends = {tp: min(pm.last_stable_offset, pm.segments[-1].base_offset) for tp, pm in manifest.partitions.items()}
    assert result["plan"].increment.state.next_offsets == ends
    assert _table(tmp_path / "t") == expected_state(manifest, ends=ends)
    # min.compaction.lag: the first segment whose largest timestamp (its .timeindex) is newer than now - lag ends
    # the range; here now - lag falls just below the third segment's largest timestamp
    cut = {tp: pm.segments[2] for tp, pm in manifest.partitions.items()}
    horizon = min(seg.max_timestamp for seg in cut.values()) - 1
    assert all(seg.max_timestamp <= horizon for pm in manifest.partitions.values() for seg in pm.segments[:2])
    lag = NOW - horizon
    mid = compact_arrow([str(root / "full")], str(tmp_path / "mid"), CompactionConfig(
        read_until="cleanable", min_compaction_lag_ms=lag), {"includeHeaders": "true"}, now_ms=NOW)
    ends = {tp: min(pm.last_stable_offset, next(s.base_offset for s in pm.segments if s.max_timestamp > horizon))
            for tp, pm in manifest.partitions.items()}
    assert mid["plan"].increment.state.next_offsets == ends
    assert _table(tmp_path / "mid") == expected_state(manifest, ends=ends)
    # a lag newer than every record: nothing is cleanable yet
    lagged = compact_arrow([str(root / "full")], str(tmp_path / "lag"), CompactionConfig(
        read_until="cleanable", min_compaction_lag_ms=NOW), now_ms=NOW, mode="full")
    assert lagged["plan"].increment.offsets_to_read == 0


def test_min_compaction_lag_takes_a_segment_without_timestamps_at_its_file_time(tmp_path):
    """``LogSegment.largestTimestamp`` falls back to the file's mtime when no batch has a timestamp (magic 0):
    segments written just now are not cleanable yet under a lag, as the cleaner (and the retention audit) see it."""
    import os
    import time

    write_data_dir(tmp_path / "d", [TopicSpec("m0", magic=0, records_per_partition=200, records_per_batch=10,
                                              key_size=2, key_cardinality=30, segment_bytes=4096,
                                              cleanup_policy="compact")])
    config = CompactionConfig(read_until="cleanable", min_compaction_lag_ms=3_600_000)
    now = int(time.time() * 1000)
    facts, _ = gather_facts([str(tmp_path / "d")], compaction_read_options({}), config)
    assert cleanable_end(facts[0], 0, config.min_compaction_lag_ms, now) == 0
    long_ago = time.time() - 7200  # written two hours ago: old enough
    for path in (tmp_path / "d" / "m0-0").glob("*.log"):
        os.utime(path, (long_ago, long_ago))
    facts, _ = gather_facts([str(tmp_path / "d")], compaction_read_options({}), config)
    assert cleanable_end(facts[0], 0, config.min_compaction_lag_ms, now) == facts[0].active_segment_base > 0


def test_other_writers_commits_after_the_last_run(changelog, tmp_path):
    """The recorded offsets describe the rows only while nobody else changed them: an OPTIMIZE or VACUUM keeps
    the rows (accepted), a RESTORE brings back an older version's rows with that version's offsets (continued
    from those), and a DELETE, UPDATE or foreign write changes rows the offsets no longer account for (refused)."""
    manifest, root, _ = changelog
    table = str(tmp_path / "t")
    compact_arrow([str(root / "head")], table, options=HEADERS, now_ms=NOW)
    compact_arrow([str(root / "full")], table, options=HEADERS, now_ms=NOW + 1)
    assert _table(table) == expected_state(manifest)
    DeltaTable(table).restore(0)  # back to the head's rows: the run must re-read what version 1 had merged
    DeltaTable(table).optimize.compact()
    DeltaTable(table).vacuum(retention_hours=0, enforce_retention_duration=False, dry_run=False)
    again = compact_arrow([str(root / "full")], table, options=HEADERS, now_ms=NOW + 2)
    assert not again["plan"].full and again["plan"].increment.offsets_to_read > 0
    assert _table(table) == expected_state(manifest)
    live = next(iter(_table(table).values()))
    DeltaTable(table).delete(f"key = X'{live[2].hex()}'")
    version = DeltaTable(table).version()
    with pytest.raises(CompactedTableError, match=rf"version {version} \(DELETE\) .*--mode full"):
        compact_arrow([str(root / "full")], table, options=HEADERS, now_ms=NOW + 3)
    compact_arrow([str(root / "full")], table, options=HEADERS, mode="full", now_ms=NOW + 4)
    assert _table(table) == expected_state(manifest)


def test_kept_foreign_deletes_stay_deleted_until_their_keys_get_new_records(changelog, tmp_path):
    """An erasure request served on the table (a DELETE), the Kafka data being a backup: with keep_foreign_deletes
    the next runs continue, the deleted keys stay out until a record for the key arrives, and other rows are
    what a rebuild gives."""
    manifest, root, _ = changelog
    table = str(tmp_path / "t")
    compact_arrow([str(root / "head")], table, options=HEADERS, now_ms=NOW)
    head_rows = _table(table)
    after = expected_state(manifest)
    # a key the appended segments do not write again, and one they do
    untouched = next(k for k, row in head_rows.items() if after.get(k) == row)
    rewritten = next(k for k, row in head_rows.items() if k in after and after[k] != row)
    for _, _, key in (untouched, rewritten):
        DeltaTable(table).delete(f"key = X'{key.hex()}'")
    with pytest.raises(CompactedTableError, match="keep_foreign_deletes"):
        compact_arrow([str(root / "full")], table, options=HEADERS, now_ms=NOW + 1)
    keep = CompactionConfig(keep_foreign_deletes=True)
    result = compact_arrow([str(root / "full")], table, keep, options=HEADERS, now_ms=NOW + 1)
    assert not result["plan"].full
    rows = _table(table)
    assert untouched not in rows and rows[rewritten] == after[rewritten]
    assert rows == {k: v for k, v in after.items() if k != untouched}
    # the erasures are recorded, kept by later runs, and a rebuild says it undoes them
    deletes = result["plan"].increment.state.kept_deletes
    assert len(deletes) == 2 and read_state(table, table_schema(True), ("topic",))[1].kept_deletes == deletes
    again = compact_arrow([str(root / "full")], table, keep, options=HEADERS, now_ms=NOW + 2)
    assert again["plan"].increment.state.kept_deletes == deletes
    moved = tmp_path / "moved"
    shutil.copytree(root / "full", moved)  # retention moved the log start past the table: an automatic rebuild...
    write_offset_checkpoint(moved / "log-start-offset-checkpoint", {("entities", 0): 10_000})
    with pytest.raises(CompactedTableError, match=r"would bring back the rows the DELETEs at table versions"):
        compact_arrow([str(moved)], table, CompactionConfig(keep_foreign_deletes=True, on_data_loss="rebuild"),
                      options=HEADERS, now_ms=NOW + 3)  # ...would undo the erasures: refused
    rebuilt = compact_arrow([str(root / "full")], table, keep, options=HEADERS, mode="full", now_ms=NOW + 4)
    assert any("brings back the rows" in note for note in rebuilt["plan"].increment.notes)
    assert rebuilt["plan"].increment.state.kept_deletes == ()  # the rebuilt table holds the log's rows again
    assert untouched in _table(table)


def test_a_selected_topic_gone_from_the_dirs_or_a_rebuild_of_part_of_the_table(tmp_path):
    """A topic the run selects and the table holds, gone from the data dirs (deleted, or its dir not given), is
    data loss, not skipped with its rows left as they were; a rebuild (--mode full, or on_data_loss = rebuild)
    replaces the whole table, so it is refused while the table holds topic-partitions the run does not select."""
    specs = [TopicSpec(t, partitions=2, records_per_partition=300, key_cardinality=10, segment_bytes=4096)
             for t in ("a", "b")]
    manifest = write_data_dir(tmp_path / "d", specs, seed=3)
    head_ends = truncated_copy(tmp_path / "d", tmp_path / "head")
    table = str(tmp_path / "t")
    compact_arrow([str(tmp_path / "head")], table, options={"subscribe": "a,b"}, now_ms=NOW)
    shutil.copytree(tmp_path / "d", tmp_path / "no-b", ignore=shutil.ignore_patterns("b-*"))
    with pytest.raises(DataLossError, match=rf"b-0 \(table at offset {head_ends[('b', 0)]}\) is not in the data "
                                            "dirs given"):
        compact_arrow([str(tmp_path / "no-b")], table, options={"subscribe": "a,b"}, now_ms=NOW + 1)
    shutil.copytree(tmp_path / "d", tmp_path / "moved")
    write_offset_checkpoint(tmp_path / "moved" / "log-start-offset-checkpoint", {("a", 0): head_ends[("a", 0)] + 5})
    for config, mode in ((CompactionConfig(on_data_loss="rebuild"), "auto"), (CompactionConfig(), "full")):
        with pytest.raises(CompactedTableError, match=r"replaces the whole table.* b-0, b-1"):
            compact_arrow([str(tmp_path / "moved")], table, config, options={"subscribe": "a"}, mode=mode,
                          now_ms=NOW + 2)
    compact_arrow([str(tmp_path / "no-b")], table, options={"subscribe": "a"}, now_ms=NOW + 3)  # b not selected
    assert _table(table) == {**expected_state(manifest, topics={"a"}),
                             **expected_state(manifest, topics={"b"}, ends=head_ends)}
    compact_arrow([str(tmp_path / "d")], table, options={"subscribe": "a,b"}, mode="full", now_ms=NOW + 4)
    assert _table(table) == expected_state(manifest)


def test_offsets_missing_where_a_run_resumes_are_reported(tmp_path):
    """The table read to the end of a segment the next copy lost: the run resumes inside the hole (planning moves
    it to the next segment, as a fetch would), and says which offsets it went past (keys whose later records were
    in the lost file may be stale), instead of nothing."""
    spec = TopicSpec("a", records_per_partition=400, key_cardinality=10, segment_bytes=4096)
    write_data_dir(tmp_path / "d", [spec], seed=3)
    head_ends = truncated_copy(tmp_path / "d", tmp_path / "head", drop_segments=3)
    table = str(tmp_path / "t")
    compact_arrow([str(tmp_path / "head")], table, options={"subscribe": "a"}, now_ms=NOW)
    resume = head_ends[("a", 0)]
    lost = tmp_path / "d" / "a-0"
    bases = sorted(int(f.stem) for f in lost.glob("*.log"))
    after = bases[bases.index(resume) + 1]
    for f in lost.glob(f"{resume:020d}.*"):
        f.unlink()
    result = compact_arrow([str(tmp_path / "d")], table, options={"subscribe": "a"}, now_ms=NOW + 1)
    assert [(m[1], m[2]) for m in result["missing_offsets"]] == [(resume, after)]


def test_the_remedy_a_gone_topic_names_works_with_the_subscribe_that_named_it(tmp_path):
    """A subscribed topic gone from the dirs is the run's own data loss, whose message says to rebuild: that
    rebuild reads what the run decided (assign), not the subscribe a read would refuse for the missing topic."""
    specs = [TopicSpec(t, records_per_partition=100, key_cardinality=10, segment_bytes=4096) for t in ("a", "b")]
    manifest = write_data_dir(tmp_path / "d", specs, seed=3)
    table = str(tmp_path / "t")
    compact_arrow([str(tmp_path / "d")], table, options={"subscribe": "a,b"}, now_ms=NOW)
    shutil.copytree(tmp_path / "d", tmp_path / "no-b", ignore=shutil.ignore_patterns("b-*"))
    with pytest.raises(DataLossError, match="--mode full"):
        compact_arrow([str(tmp_path / "no-b")], table, options={"subscribe": "a,b"}, now_ms=NOW + 1)
    compact_arrow([str(tmp_path / "no-b")], table, options={"subscribe": "a,b"}, mode="full", now_ms=NOW + 2)
    assert _table(table) == expected_state(manifest, topics={"a"})


def test_a_concurrent_commit_fails_the_run_with_one_line_and_nothing_committed(changelog, tmp_path):
    """Two runs of the same table at once (cron overlapping a slow run): the one committing second fails on
    delta-rs's conflict check; it reports a CompactedTableError naming the table (one line, not a deltalake
    traceback), and a rerun continues from what the first one recorded."""
    from kafkaseg.compacted_table import prepare_run
    from kafkaseg.scan import read_arrow
    from kafkaseg.spark.jobs import error_line

    manifest, root, _ = changelog
    table = str(tmp_path / "t")
    compact_arrow([str(root / "head")], table, options=HEADERS, now_ms=NOW)
    slow = prepare_run([str(root / "full")], table, CompactionConfig(), HEADERS, now_ms=NOW + 1)
    compact_arrow([str(root / "full")], table, options=HEADERS, now_ms=NOW + 2)  # the other run, done first
    version = DeltaTable(table).version()
    changes = latest_per_key(read_arrow([str(root / "full")], **slow.read_options)).cast(slow.schema)
    for rows in (changes, changes.slice(0, 0)):  # a merge, and the empty commit of a run with nothing new
        with pytest.raises(CompactedTableError, match="another writer committed to .* run again") as caught:
            merge_changes(DeltaTable(table, version=slow.table_version), rows, slow.increment.state,
                          slow.topics_read)
        assert DeltaTable(table).version() == version
        line, code = error_line(caught.value, (CompactedTableError,))  # as jobs/compact.py reports it
        assert "\n" not in line and code == 2
    assert _table(table) == expected_state(manifest)


def test_a_log_truncated_and_rewritten_by_an_unclean_leader_election_is_data_loss(tmp_path):
    """After an unclean leader election the new leader's log lacks the old leader's last records and goes on
    under a new epoch at the same offsets: the log end is past the table's offsets again, so only leader epochs
    (leader-epoch-checkpoint, Kafka's consumer validation, KIP-320) show the table holds records the log no longer
    has. A normal epoch change (a clean election) continues."""
    from tests.compaction_data import write_epoch_log

    def records(first, last, prefix, value):
        return [(o, b"%s%d" % (prefix, o % 7), value) for o in range(first, last)]

    common = [(0, records(0, 10, b"k", b"a")), (1, records(10, 15, b"x", b"b"))]
    write_epoch_log(tmp_path / "before", "t", common + [(1, records(15, 20, b"x", b"b"))])
    diverged = write_epoch_log(tmp_path / "diverged", "t", common + [(2, records(15, 25, b"y", b"c"))])
    clean = write_epoch_log(tmp_path / "clean", "t", common + [(1, records(15, 20, b"x", b"b")),
                                                                (2, records(20, 25, b"y", b"c"))])

    def table_of(uri):
        return {(r["topic"], r["partition"], r["key"]): (r["value"], r["offset"])
                for r in delta_dataset(uri).to_table().to_pylist()}

    table, other = str(tmp_path / "t"), str(tmp_path / "u")
    for uri in (table, other):
        compact_arrow([str(tmp_path / "before")], uri, now_ms=NOW)
    # the epoch of the last batch read and where it ends, as Kafka's consumer keeps its position's epoch
    assert read_state(table, table_schema(False), ("topic",))[1].leader_epochs == {("t", 0): (1, 20)}
    with pytest.raises(DataLossError, match=r"t-0: the log diverged from the table at offset 15 \(leader epoch 1 "
                                            r"ends at 15 in the log, the table's last batch ends at 19\)"):
        compact_arrow([str(tmp_path / "diverged")], table, now_ms=NOW + 1)
    compact_arrow([str(tmp_path / "diverged")], table, CompactionConfig(on_data_loss="rebuild"), now_ms=NOW + 1)
    assert table_of(table) == diverged
    compact_arrow([str(tmp_path / "clean")], other, now_ms=NOW + 1)
    assert table_of(other) == clean
    assert read_state(other, table_schema(False), ("topic",))[1].leader_epochs == {("t", 0): (2, 25)}


def test_replicas_whose_epoch_checkpoints_differ_after_compaction_are_no_divergence(tmp_path):
    """Run 1 reads a replica rebuilt from a compacted log (no batch in [10, 15), so its checkpoint never got epoch
    1), up to 12; run 2 reads the leader's copy, where epoch 0 ends at 10. The table's last batch (epoch 0, ending
    at 9) is intact there: no divergence (with the checkpoint's epoch of offset 11, 0, it was called one)."""
    from tests.compaction_data import write_epoch_log

    def records(first, last, prefix):
        return [(o, b"%s%d" % (prefix, o), b"v%d" % o) for o in range(first, last)]

    leader = [(0, records(0, 10, b"a")), (1, records(10, 15, b"b")), (2, records(15, 25, b"c"))]
    write_epoch_log(tmp_path / "leader", "t", leader)
    write_epoch_log(tmp_path / "rebuilt", "t", [(0, records(0, 10, b"a")), (2, records(15, 25, b"c"))])
    assert "2 15" in (tmp_path / "rebuilt" / "t-0" / "leader-epoch-checkpoint").read_text()
    write_offset_checkpoint(tmp_path / "rebuilt" / "replication-offset-checkpoint", {("t", 0): 12})
    table = str(tmp_path / "table")
    compact_arrow([str(tmp_path / "rebuilt")], table, now_ms=NOW)
    assert read_state(table, table_schema(False), ("topic",))[1].leader_epochs == {("t", 0): (0, 10)}
    compact_arrow([str(tmp_path / "leader")], table, now_ms=NOW + 1)  # no DataLossError
    state = read_state(table, table_schema(False), ("topic",))[1]
    assert state.next_offsets == {("t", 0): 25} and state.leader_epochs == {("t", 0): (2, 25)}


def test_tables_that_recorded_the_checkpoints_epoch_are_still_checked():
    """A table written before the last batch's epoch was recorded holds an int: the old rule still applies."""
    facts = PartitionFacts("t", 0, 0, 30, 30, leader_epochs=((0, 0), (1, 10), (2, 15)))
    assert _divergence(facts, 20, 1) is not None and _divergence(facts, 12, 1) is None
    assert _divergence(facts, 20, (1, 15)) is None and "diverged" in _divergence(facts, 20, (1, 18))
    state = TableState({("t", 0): 20}, {}, {}, 0, "last_stable_offset", {("t", 0): (1, 15), ("t", 1): 2})
    assert TableState.from_json(state.to_json(), "x").leader_epochs == {("t", 0): (1, 15), ("t", 1): 2}
    for bad in ("[5]", "[5,6,7]"):
        with pytest.raises(CompactedTableError, match="malformed"):
            TableState.from_json(state.to_json().replace("[1,15]", bad), "x")


def test_empty_and_odd_binary_keys_are_keys_and_null_keys_are_dropped_across_merges(tmp_path):
    from tests.compaction_data import write_epoch_log

    first = [(0, b"", b"empty"), (1, None, b"keyless"), (2, b"\x00", b"nul"), (3, b"\xff\xfe\x00a", b"odd"),
             (4, b"\x00\x00", b"two")]
    later = [(5, b"", None), (6, b"\x00", b"nul2"), (7, None, None), (8, b"\x00\x00", None), (9, b"\x00\x01", b"n")]
    before = write_epoch_log(tmp_path / "before", "t", [(0, first)])
    after = write_epoch_log(tmp_path / "after", "t", [(0, first + later)])
    table = str(tmp_path / "t")

    def rows():
        return {(r["topic"], r["partition"], r["key"]): (r["value"], r["offset"])
                for r in delta_dataset(table).to_table().to_pylist()}

    compact_arrow([str(tmp_path / "before")], table, now_ms=NOW)
    assert rows() == before and ("t", 0, b"") in before and len(before) == 4
    merged = compact_arrow([str(tmp_path / "after")], table, now_ms=NOW + 1)
    assert not merged["plan"].full and rows() == after


def test_the_recorded_state_is_read_from_the_newest_commits_first(tmp_path, monkeypatch):
    """The state is normally in the newest commit: a run reads the history a page at a time (a whole history is a
    file per commit, thousands after weeks of runs), and pages further back when it must."""
    from deltalake import write_deltalake

    from kafkaseg.compacted_table import commit_properties, newest_commits

    table = str(tmp_path / "t")
    write_deltalake(table, pa.table({"key": [b"k"]}), commit_properties=commit_properties(TableState({("t", 0): 7})))
    for _ in range(40):
        DeltaTable(table).create_write_transaction([], "append", DeltaTable(table).schema(), [])
    assert [c["version"] for c in newest_commits(DeltaTable(table), first=4)] == list(range(40, -1, -1))
    limits = []
    history = DeltaTable.history
    monkeypatch.setattr(DeltaTable, "history", lambda self, limit=None: limits.append(limit) or history(self, limit))
    assert next(newest_commits(DeltaTable(table)))["version"] == 40 and limits == [16]


def test_a_damaged_staged_file_fails_the_merge_instead_of_being_skipped(changelog, tmp_path):
    """The executors' staged change set is read back by the driver: a file in it that is not valid Parquet (cut
    short by a failing store or committer) must fail the merge, not be left out while the offsets it held are
    recorded as applied."""
    import pyarrow.parquet as pq

    from kafkaseg.compacted_table import merge_staged_parquet, prepare_run
    from kafkaseg.scan import read_arrow

    _, root, _ = changelog
    table = str(tmp_path / "t")
    compact_arrow([str(root / "head")], table, now_ms=NOW)
    plan = prepare_run([str(root / "full")], table, CompactionConfig(), {}, now_ms=NOW + 1)
    changes = latest_per_key(read_arrow([str(root / "full")], **plan.read_options)).cast(plan.schema)
    staging = tmp_path / "t" / "_kafkaseg_staging" / "run"
    staging.mkdir(parents=True)
    pq.write_table(changes.slice(0, 10), staging / "part-00000.parquet")
    damaged = staging / "part-00001.parquet"
    pq.write_table(changes.slice(10), damaged)
    damaged.write_bytes(damaged.read_bytes()[: damaged.stat().st_size // 2])
    version = DeltaTable(table).version()
    with pytest.raises(CompactedTableError, match=r"part-00001.parquet is not readable Parquet .* nothing committed"):
        merge_staged_parquet(str(staging), plan)
    assert DeltaTable(table).version() == version


def test_a_merge_skips_the_files_of_topics_the_run_did_not_read(tmp_path):
    """Partitioned by topic, a merge given the topics read leaves the other topics' files unscanned (a table of
    many topics, few of them busy), with the same result."""
    import datetime as dt

    from deltalake import write_deltalake

    schema = table_schema(False)

    def rows(items):
        return pa.Table.from_pylist([dict(topic=t, key=k, value=v, partition=0, offset=o, timestampType=0,
                                          timestamp=dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc))
                                     for t, k, v, o in items]).select(schema.names).cast(schema)

    for topics, skipped in ((None, 0), (["a"], 2)):
        table = str(tmp_path / f"t{skipped}")
        write_deltalake(table, rows([("a", b"k", b"1", 1), ("b", b"k", b"1", 1), ("c'x", b"k", b"1", 1)]),
                        partition_by=["topic"])
        metrics = merge_changes(DeltaTable(table), rows([("a", b"k", b"2", 5), ("a", b"j", None, 6)]),
                                TableState(), topics)
        assert metrics["num_target_files_skipped_during_scan"] == skipped
        assert sorted((r["topic"], r["value"]) for r in delta_dataset(table).to_table().to_pylist()) == [
            ("a", b"2"), ("b", b"1"), ("c'x", b"1")]


def test_an_executor_rewrite_is_refused_when_the_table_moved_since_the_run_read_it(tmp_path):
    """delta-rs commits an overwrite over a concurrent commit without complaint (and would leave that commit's
    files beside the rewritten ones: two rows for a key); the rewrite's commit checks the version first."""
    from kafkaseg.compacted_table import commit_rewrite, merges_on_driver, prepare_run, rewrite_scope

    write_data_dir(tmp_path / "full", [CHANGELOG], seed=5)
    truncated_copy(tmp_path / "full", tmp_path / "head", drop_segments=2)
    out = str(tmp_path / "table")
    compact_arrow([str(tmp_path / "head")], out, now_ms=NOW)
    config = CompactionConfig(driver_merge_max_bytes=0)
    plan = prepare_run([str(tmp_path / "full")], out, config, {}, now_ms=NOW)
    scope = rewrite_scope(plan)
    assert not merges_on_driver(plan, scope) and scope.topics == ("entities",) and scope.files
    small = prepare_run([str(tmp_path / "full")], out, CompactionConfig(), {}, now_ms=NOW)
    assert merges_on_driver(small, rewrite_scope(small))  # a small table under the default: the driver merges
    compact_arrow([str(tmp_path / "full")], out, now_ms=NOW)  # another run commits first
    version = DeltaTable(out).version()
    with pytest.raises(CompactedTableError, match="changed while this run worked"):
        commit_rewrite(plan, scope, [])
    assert DeltaTable(out).version() == version


def test_a_run_committing_between_the_rewrites_version_check_and_its_commit_still_fails_it(tmp_path, monkeypatch):
    """The executor rewrite checks the table's version, then commits an overwrite: two steps. A run committing
    between them must still fail it: delta-rs commits the overwrite over a commit that only added files (here
    the other run inserting new keys), which loses or doubles rows. Every compaction commit carries one Delta app
    transaction id, which delta-rs's conflict check holds against concurrent commits carrying it."""
    import kafkaseg.compacted_table as ct
    from tests.compaction_data import write_epoch_log

    old = [(o, b"k%d" % o, b"v") for o in range(5)]
    write_epoch_log(tmp_path / "before", "t", [(0, old)])
    after = write_epoch_log(tmp_path / "after", "t", [(0, old + [(o, b"new%d" % o, b"v") for o in range(5, 9)])])
    out = str(tmp_path / "table")
    compact_arrow([str(tmp_path / "before")], out, now_ms=NOW)
    plan = ct.prepare_run([str(tmp_path / "after")], out, CompactionConfig(driver_merge_max_bytes=0), {},
                          now_ms=NOW + 1)
    scope = ct.rewrite_scope(plan)
    real = ct.commit_properties
    raced = []

    def other_run_commits_first(state):  # called by commit_rewrite after its version check
        if not raced:
            raced.append(None)
            raced[0] = compact_arrow([str(tmp_path / "after")], out, now_ms=NOW + 2)
        return real(state)

    monkeypatch.setattr(ct, "commit_properties", other_run_commits_first)
    with pytest.raises(CompactedTableError, match="another writer committed"):
        ct.commit_rewrite(plan, scope, [])  # (its files: none, i.e. every key of the version it read deleted)
    assert raced[0]["merge"]["num_target_files_removed"] == 0  # the other run only added files
    assert DeltaTable(out).version() == plan.table_version + 1  # only the other run's commit
    assert {(r["key"]) for r in delta_dataset(out).to_table().to_pylist()} == {k for _, _, k in after}


def test_the_executor_rewrite_covers_only_the_topics_read_and_nothing_when_nothing_was_read(tmp_path):
    """Above driver_merge_max_bytes the executors rewrite every file of the topics in scope: a topic with
    nothing new must not be in it (an idle topic's files rewritten every run), and a run with nothing new at all
    rewrites nothing (it only records its read, on the driver), whatever driver_merge_max_bytes says."""
    from kafkaseg.compacted_table import merges_on_driver, prepare_run, rewrite_scope
    from tests.compaction_data import write_epoch_log

    def records(first, last):
        return [(o, b"k%d" % (o % 3), b"v%d" % o) for o in range(first, last)]

    write_epoch_log(tmp_path / "a1", "a", [(0, records(0, 5))])
    write_epoch_log(tmp_path / "a2", "a", [(0, records(0, 9))])
    write_epoch_log(tmp_path / "b", "b", [(0, records(0, 5))])
    out = str(tmp_path / "t")
    compact_arrow([str(tmp_path / "a1"), str(tmp_path / "b")], out, now_ms=NOW)
    always = CompactionConfig(driver_merge_max_bytes=0)
    plan = prepare_run([str(tmp_path / "a2"), str(tmp_path / "b")], out, always, {}, now_ms=NOW + 1)
    assert plan.increment.ranges == {("a", 0): (5, 9), ("b", 0): (5, 5)}
    scope = rewrite_scope(plan)
    assert scope.topics == ("a",) and all(dict(values)["topic"] == "a" for _, values in scope.files)
    assert not merges_on_driver(plan, scope)
    idle = prepare_run([str(tmp_path / "a1"), str(tmp_path / "b")], out, always, {}, now_ms=NOW + 1)
    assert idle.increment.offsets_to_read == 0
    assert rewrite_scope(idle).files == () and merges_on_driver(idle, rewrite_scope(idle))


def test_stale_staging_folders_of_killed_runs_are_removed_and_young_ones_kept(tmp_path):
    from kafkaseg.compacted_table import remove_stale_staging, staging_name

    root = tmp_path / "table" / "_kafkaseg_staging"
    now = 1_800_000_000.0
    old, young, legacy = staging_name(now - 25 * 3600, "aa11"), staging_name(now - 3600, "bb22"), "20200101T000000-cc33"
    for name in (old, young, legacy, "notes"):
        (root / name).mkdir(parents=True)
        (root / name / "part-0.parquet").write_bytes(b"x")
    (root / "20200101T000000-dd44.txt").write_bytes(b"a file, not a run's folder")
    assert sorted(remove_stale_staging(str(root), now, 24)) == sorted([old, legacy])
    assert sorted(p.name for p in root.iterdir()) == sorted([young, "notes", "20200101T000000-dd44.txt"])
    assert remove_stale_staging(str(tmp_path / "missing"), now, 24) == []
    # named like a run's folder with an impossible time: no run's, left alone (it raised ValueError, as the
    # abandoned-write cleanup it shares the listing with did until review)
    (root / "20241301T000000Z-ee55").mkdir()
    assert remove_stale_staging(str(root), now, 24) == []
    assert (root / "20241301T000000Z-ee55").is_dir()
    with pytest.raises(InvalidOptionError, match="stale_staging_hours must be a positive integer"):
        CompactionConfig.from_mapping({"stale_staging_hours": 0})


def test_a_table_with_deletion_vectors_is_merged_on_the_driver_whatever_its_size(changelog, tmp_path):
    """A Spark DELETE kept with keep_foreign_deletes may be a deletion vector (rows marked deleted beside an
    unchanged file): the executors' rewrite reads the raw files and would bring those rows back, delta-rs's merge
    applies it. So such a table is always merged on the driver."""
    from deltalake import TableFeatures

    from kafkaseg.compacted_table import merges_on_driver, prepare_run, rewrite_scope

    manifest, root, _ = changelog
    table = str(tmp_path / "t")
    compact_arrow([str(root / "head")], table, options=HEADERS, now_ms=NOW)
    always_executors = CompactionConfig(driver_merge_max_bytes=0, keep_foreign_deletes=True)
    plan = prepare_run([str(root / "full")], table, always_executors, HEADERS, "auto", NOW + 1)
    scope = rewrite_scope(plan)
    assert not scope.deletion_vectors and not merges_on_driver(plan, scope)
    DeltaTable(table).alter.add_feature([TableFeatures.DeletionVectors], allow_protocol_versions_increase=True)
    plan = prepare_run([str(root / "full")], table, always_executors, HEADERS, "auto", NOW + 1)
    scope = rewrite_scope(plan)
    assert scope.deletion_vectors and scope.bytes > 0 and merges_on_driver(plan, scope)
