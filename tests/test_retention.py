"""Retention audit (kafkaseg.retention, kafkaseg.topic_config, ``kafkaseg retention``) on hand-built data dirs with
known timestamps and sizes. Expectations are written from UnifiedLog.deleteOldSegments' rules, and a few are
cross-checked against :func:`brute_force`, an independent transcription of those rules written here."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from kafkaseg.cli.main import main as cli_main
from kafkaseg.errors import InvalidOptionError, LayoutError
from kafkaseg.retention import (
    LOG_START_BREACH,
    SIZE_BREACH,
    TIME_BREACH,
    audit,
    parse_now,
    plan_audit,
)
from kafkaseg.storage.layout import discover
from kafkaseg.testing import PartitionWriter, Record, build_batch_v2, build_legacy_entries
from kafkaseg.testing.partition import write_meta_properties, write_offset_checkpoint
from kafkaseg.topic_config import ConfigFile, load_config_file, resolve_topic_config

NOW = 1_700_000_000_000
HOUR = 3_600_000
DAY = 24 * HOUR


class DataDir:
    """A log dir built one partition at a time; checkpoints written by :meth:`finish`."""

    def __init__(self, root: Path, node_id: int = 1):
        self.root = root
        root.mkdir(parents=True, exist_ok=True)
        write_meta_properties(root / "meta.properties", cluster_id="c" * 22, node_id=node_id, directory_id="d" * 22)
        self.hw, self.start, self.cleaner = {}, {}, {}
        self.sizes: dict[tuple[str, int], list[tuple[int, int]]] = {}

    def partition(self, topic: str, segments, *, p: int = 0, hw_back: int = 0, log_start: int | None = None,
                  cleaner: int | None = None, empty_active: bool = False, magic: int = 2):
        """``segments``: (records, max timestamp) per segment, one batch each (values of 100 bytes).
        ``hw_back``: the high watermark this far below the log end. Returns [(base offset, size)]."""
        writer = PartitionWriter(self.root / f"{topic}-{p}")
        offset = 0
        for i, (count, max_ts) in enumerate(segments):
            if i:
                writer.roll()
            records = [Record(offset + k, max_ts - (count - 1 - k), b"key%d" % k, b"v" * 100) for k in range(count)]
            if magic == 2:
                writer.append(build_batch_v2(records))
            else:
                for entry in build_legacy_entries(records, magic):
                    writer.append(entry)
            offset += count
        if empty_active:
            writer.roll()
        log = writer.close()
        self.hw[(topic, p)] = log.log_end_offset - hw_back
        if log_start is not None:
            self.start[(topic, p)] = log_start
        if cleaner is not None:
            self.cleaner[(topic, p)] = cleaner
        self.sizes[(topic, p)] = [(s.base_offset, s.size) for s in log.segments]
        return self.sizes[(topic, p)]

    def finish(self) -> str:
        write_offset_checkpoint(self.root / "replication-offset-checkpoint", self.hw)
        write_offset_checkpoint(self.root / "log-start-offset-checkpoint", self.start)
        write_offset_checkpoint(self.root / "cleaner-offset-checkpoint", self.cleaner)
        return str(self.root)


def audit_one(path: str, topic: str, config_file: ConfigFile | None = None, now: int = NOW, p: int = 0):
    plan = plan_audit([path], config_file, topics=[topic])
    (pdir, config), = [(d, c) for d, c in plan.targets if d.partition == p]
    result = audit(pdir, config, now)
    assert result.error is None, result.error
    return result


def config_for(**settings) -> ConfigFile:
    return ConfigFile(topics={"t": {k.replace("_", "."): v for k, v in settings.items()}})


def brute_force(segments, *, log_end, hw, log_start, retention_ms, retention_bytes, now, delete=True):
    """An independent transcription of UnifiedLog.deleteOldSegments for local logs: ``segments`` are
    (base, size, largest timestamp); returns {base: rule}."""
    segs = list(segments)
    out = {}
    start = max(log_start, segs[0][0])

    def run(pred, rule):
        nonlocal segs, start
        gone = 0
        for i, (base, size, ts) in enumerate(segs):
            nxt = segs[i + 1][0] if i + 1 < len(segs) else None
            upper = nxt if nxt is not None else log_end
            if not (hw >= upper and pred(size, ts, nxt)) or (nxt is None and size == 0):
                break
            out[base] = rule
            gone += 1
        if gone:
            start = segs[gone][0] if gone < len(segs) else log_end
            segs = segs[gone:] if gone < len(segs) else []

    run(lambda size, ts, nxt: nxt is not None and nxt <= start, LOG_START_BREACH)
    if delete and retention_bytes >= 0 and segs and sum(s for _, s, _ in segs) >= retention_bytes:
        left = [sum(s for _, s, _ in segs) - retention_bytes]

        def by_size(size, ts, nxt):
            if left[0] - size >= 0:
                left[0] -= size
                return True
            return False

        run(by_size, SIZE_BREACH)
    if delete and retention_ms >= 0 and segs:
        run(lambda size, ts, nxt: now - ts > retention_ms, TIME_BREACH)
    return out


def rules(result) -> dict[int, str]:
    return {s.base_offset: s.rule for s in result.segments if s.rule is not None}


# -- the rules ------------------------------------------------------------------------------------------------------

def test_time_rule_deletes_oldest_segments_past_retention_ms(tmp_path):
    d = DataDir(tmp_path / "data")
    stamps = [NOW - 10 * DAY, NOW - 8 * DAY, NOW - 6 * DAY, NOW - 1 * DAY]
    sizes = d.partition("t", [(5, ts) for ts in stamps])
    result = audit_one(d.finish(), "t")
    assert rules(result) == {0: TIME_BREACH, 5: TIME_BREACH}
    assert result.deletable_segments == 2
    assert result.deletable_bytes == sizes[0][1] + sizes[1][1]
    assert result.new_log_start_offset == 10
    assert result.overdue_ms == 10 * DAY - 7 * DAY  # the oldest deletable segment: now - largest - retention.ms
    assert result.lagging and not result.blocked_by_high_watermark
    assert result.oldest_timestamp == stamps[0] and result.newest_timestamp == stamps[-1]
    expected = brute_force([(b, s, ts) for (b, s), ts in zip(sizes, stamps)], log_end=20, hw=20, log_start=0,
                           retention_ms=7 * DAY, retention_bytes=-1, now=NOW)
    assert rules(result) == expected


def test_time_rule_stops_at_the_first_young_segment(tmp_path):
    """An old segment after a young one stays: the walk stops at the first that fails the predicate."""
    d = DataDir(tmp_path / "data")
    stamps = [NOW - 9 * DAY, NOW - 1 * DAY, NOW - 30 * DAY, NOW - 1 * HOUR]
    sizes = d.partition("t", [(3, ts) for ts in stamps])
    result = audit_one(d.finish(), "t")
    assert rules(result) == {0: TIME_BREACH}
    assert rules(result) == brute_force([(b, s, ts) for (b, s), ts in zip(sizes, stamps)], log_end=12, hw=12,
                                        log_start=0, retention_ms=7 * DAY, retention_bytes=-1, now=NOW)


def test_size_rule_keeps_at_least_retention_bytes(tmp_path):
    d = DataDir(tmp_path / "data")
    sizes = d.partition("t", [(4, NOW - HOUR)] * 5)
    seg = sizes[0][1]
    assert all(s == seg for _, s in sizes)
    # 5 segments, room for 2.5: diff = 2.5 segments -> two go (diff - size >= 0 twice), then 0.5 - 1 < 0
    result = audit_one(d.finish(), "t", config_for(retention_bytes=seg * 5 // 2))
    assert rules(result) == {0: SIZE_BREACH, 4: SIZE_BREACH}
    assert result.bytes_over_retention == seg * 5 - seg * 5 // 2
    assert result.new_log_start_offset == 8 and result.overdue_ms is None
    # exactly on the boundary: size - retention - segment == 0 deletes
    exact = audit_one(str(tmp_path / "data"), "t", config_for(retention_bytes=seg * 3))
    assert rules(exact) == {0: SIZE_BREACH, 4: SIZE_BREACH}
    assert rules(exact) == brute_force([(b, s, NOW - HOUR) for b, s in sizes], log_end=20, hw=20, log_start=0,
                                       retention_ms=7 * DAY, retention_bytes=seg * 3, now=NOW)


def test_size_then_time_each_pass_walks_what_is_left(tmp_path):
    d = DataDir(tmp_path / "data")
    stamps = [NOW - 20 * DAY, NOW - 10 * DAY, NOW - 9 * DAY, NOW - 1 * DAY]
    sizes = d.partition("t", [(4, ts) for ts in stamps])
    result = audit_one(d.finish(), "t", config_for(retention_bytes=sizes[0][1] * 3))
    assert rules(result) == {0: SIZE_BREACH, 4: TIME_BREACH, 8: TIME_BREACH}
    assert dict(result.segments_by_rule) == {SIZE_BREACH: 1, TIME_BREACH: 2}
    assert rules(result) == brute_force([(b, s, ts) for (b, s), ts in zip(sizes, stamps)], log_end=16, hw=16,
                                        log_start=0, retention_ms=7 * DAY, retention_bytes=sizes[0][1] * 3, now=NOW)


def test_log_start_offset_breach(tmp_path):
    """DeleteRecords moved the log start offset to 9: segments wholly below it go, whatever retention says."""
    d = DataDir(tmp_path / "data")
    d.partition("t", [(4, NOW - HOUR)] * 4, log_start=9)
    result = audit_one(d.finish(), "t", config_for(retention_ms=-1))
    assert rules(result) == {0: LOG_START_BREACH, 4: LOG_START_BREACH}  # 8 holds 9: next base 12 > 9
    assert result.new_log_start_offset == 9  # max(checkpoint, first kept base 8)
    assert result.checkpoint_log_start_offset == 9
    # a log start offset equal to a segment's base: the segment before it is wholly below (next base <= start)
    d2 = DataDir(tmp_path / "data2")
    d2.partition("t", [(4, NOW - HOUR)] * 4, log_start=8)
    at_base = audit_one(d2.finish(), "t", config_for(retention_ms=-1))
    assert rules(at_base) == {0: LOG_START_BREACH, 4: LOG_START_BREACH}
    assert at_base.new_log_start_offset == 8


def test_high_watermark_holds_back_deletion(tmp_path):
    """The last segment past retention is not deletable while the high watermark is below the log end."""
    d = DataDir(tmp_path / "data")
    sizes = d.partition("t", [(4, NOW - 30 * DAY)] * 3, hw_back=1)
    result = audit_one(d.finish(), "t")
    assert rules(result) == {0: TIME_BREACH, 4: TIME_BREACH}
    assert result.blocked_by_high_watermark
    assert [s.blocked_by_high_watermark for s in result.segments] == [False, False, True]
    assert result.new_log_start_offset == 8
    assert rules(result) == brute_force([(b, s, NOW - 30 * DAY) for b, s in sizes], log_end=12, hw=11, log_start=0,
                                        retention_ms=7 * DAY, retention_bytes=-1, now=NOW)
    # the high watermark inside the second segment: only the first goes
    d2 = DataDir(tmp_path / "data2")
    d2.partition("t", [(4, NOW - 30 * DAY)] * 3, hw_back=6)
    assert rules(audit_one(d2.finish(), "t")) == {0: TIME_BREACH}


def test_every_segment_past_retention_rolls_and_the_log_starts_at_its_end(tmp_path):
    d = DataDir(tmp_path / "data")
    d.partition("t", [(4, NOW - 30 * DAY)] * 2)
    result = audit_one(d.finish(), "t")
    assert rules(result) == {0: TIME_BREACH, 4: TIME_BREACH}  # the active segment too (the broker rolls first)
    assert result.new_log_start_offset == 8


def test_empty_active_segment_is_never_deleted(tmp_path):
    d = DataDir(tmp_path / "data")
    d.partition("t", [(4, NOW - 30 * DAY)] * 2, empty_active=True)
    path = d.finish()
    empty = tmp_path / "data" / "t-0" / "00000000000000000008.log"
    os.utime(empty, ((NOW - 30 * DAY) / 1000,) * 2)  # its largestTimestamp (the mtime) is past retention too
    result = audit_one(path, "t")
    assert result.segment_count == 3 and result.segments[-1].size == 0
    assert rules(result) == {0: TIME_BREACH, 4: TIME_BREACH}
    assert result.new_log_start_offset == 8


def test_segments_without_timestamps_use_the_file_mtime(tmp_path):
    d = DataDir(tmp_path / "data")
    d.partition("t", [(3, 0)] * 3, magic=0)
    path = d.finish()
    logs = sorted((tmp_path / "data" / "t-0").glob("*.log"))
    for log, age in zip(logs, (9 * DAY, 8 * DAY, 1 * DAY)):
        os.utime(log, ((NOW - age) / 1000, (NOW - age) / 1000))
    result = audit_one(path, "t")
    assert [s.timestamp_source for s in result.segments] == ["mtime"] * 3
    assert [s.largest_timestamp for s in result.segments] == [NOW - 9 * DAY, NOW - 8 * DAY, NOW - DAY]
    assert rules(result) == {0: TIME_BREACH, 3: TIME_BREACH}


def test_infinite_retention_deletes_nothing(tmp_path):
    d = DataDir(tmp_path / "data")
    d.partition("t", [(4, NOW - 300 * DAY)] * 3)
    result = audit_one(d.finish(), "t", config_for(retention_ms=-1))
    assert rules(result) == {} and result.overdue_ms is None and not result.lagging
    assert result.new_log_start_offset is None


def test_compact_only_topic_keeps_old_segments_and_reports_dirtiness(tmp_path):
    d = DataDir(tmp_path / "data")
    sizes = d.partition("t", [(4, NOW - 30 * DAY)] * 4, cleaner=4)
    result = audit_one(d.finish(), "t", config_for(cleanup_policy="compact"))
    assert rules(result) == {}
    c = result.compaction
    # LogCleanerManager: clean = segments below the first dirty offset 4; cleanable = [4, active base 12)
    assert c.first_dirty_offset == 4 and c.first_uncleanable_offset == 12
    assert c.clean_bytes == sizes[0][1]
    assert c.cleanable_bytes == sizes[1][1] + sizes[2][1]
    assert c.dirty_ratio == pytest.approx(2 / 3)
    assert c.exceeds_min_ratio and c.cleanable_now
    assert c.max_compaction_delay_ms == 0  # max.compaction.lag.ms defaults to Long.MAX_VALUE
    # a higher threshold: not due
    high = audit_one(str(tmp_path / "data"), "t", config_for(cleanup_policy="compact",
                                                            min_cleanable_dirty_ratio=0.9))
    assert not high.compaction.exceeds_min_ratio and not high.compaction.cleanable_now
    # max.compaction.lag.ms exceeded: due even below the ratio; delay = now - lag - first batch timestamp
    lagged = audit_one(str(tmp_path / "data"), "t", config_for(cleanup_policy="compact",
                                                              min_cleanable_dirty_ratio=0.9,
                                                              max_compaction_lag_ms=DAY))
    first_batch_ts = NOW - 30 * DAY  # each segment's single batch
    assert lagged.compaction.max_compaction_delay_ms == (NOW - DAY) - first_batch_ts
    assert lagged.compaction.cleanable_now


def test_compact_only_topic_still_loses_segments_below_the_log_start(tmp_path):
    """LogCleanerManager.deletableLogs hands compacted logs to deleteOldSegments, whose log-start pass ignores the
    cleanup policy."""
    d = DataDir(tmp_path / "data")
    d.partition("t", [(4, NOW - 30 * DAY)] * 3, log_start=5)
    result = audit_one(d.finish(), "t", config_for(cleanup_policy="compact"))
    assert rules(result) == {0: LOG_START_BREACH}


def test_compact_and_delete_applies_retention_and_reports_dirtiness(tmp_path):
    d = DataDir(tmp_path / "data")
    d.partition("t", [(4, NOW - 30 * DAY), (4, NOW - 30 * DAY), (4, NOW - HOUR)])
    result = audit_one(d.finish(), "t", config_for(cleanup_policy="compact,delete"))
    assert rules(result) == {0: TIME_BREACH, 4: TIME_BREACH}
    assert result.compaction is not None and result.compaction.first_dirty_offset == 0  # no cleaner checkpoint


def test_min_compaction_lag_bounds_the_cleanable_range(tmp_path):
    d = DataDir(tmp_path / "data")
    sizes = d.partition("t", [(4, NOW - 30 * DAY), (4, NOW - 2 * HOUR), (4, NOW - HOUR)])
    result = audit_one(d.finish(), "t", config_for(cleanup_policy="compact", min_compaction_lag_ms=3 * HOUR))
    assert result.compaction.first_uncleanable_offset == 4  # the segment written 2 h ago is too young
    assert result.compaction.cleanable_bytes == sizes[0][1]


def test_local_retention_applies_with_remote_storage(tmp_path):
    """Tiered topic: local.retention.ms (1 h) instead of retention.ms; the active segment is rolled, not deleted."""
    d = DataDir(tmp_path / "data")
    d.partition("t", [(4, NOW - 3 * HOUR)] * 3)
    path = d.finish()
    tiered = config_for(remote_storage_enable=True, local_retention_ms=HOUR)
    result = audit_one(path, "t", tiered)
    assert result.config.effective_retention_ms == HOUR
    assert rules(result) == {0: TIME_BREACH, 4: TIME_BREACH}
    assert result.rolls_active and result.overdue_ms == 2 * HOUR
    # -2: retention.ms applies locally too
    assert rules(audit_one(path, "t", config_for(remote_storage_enable=True, local_retention_ms=-2))) == {}
    # without remote storage local.retention.ms is ignored
    assert rules(audit_one(path, "t", config_for(local_retention_ms=HOUR))) == {}


def test_pending_deleted_files_are_counted(tmp_path):
    d = DataDir(tmp_path / "data")
    d.partition("t", [(4, NOW - HOUR)] * 2)
    path = d.finish()
    (tmp_path / "data" / "t-0" / "00000000000000000099.log.deleted").write_bytes(b"x" * 1234)
    (tmp_path / "data" / "t-0" / "00000000000000000099.index.deleted").write_bytes(b"x" * 16)
    result = audit_one(path, "t")
    assert (result.deleted_files, result.deleted_bytes) == (2, 1250)
    # a single .log file outside a <topic>-<partition> folder counts the .deleted files beside it
    plain = tmp_path / "plain"
    plain.mkdir()
    log = next((tmp_path / "data" / "t-0").glob("*.log"))
    (plain / log.name).write_bytes(log.read_bytes())
    (plain / "00000000000000000099.index.deleted").write_bytes(b"x" * 50)
    result = audit_one(str(plain / log.name), "plain", p=-1)
    assert (result.deleted_files, result.deleted_bytes) == (1, 50)


# -- configs --------------------------------------------------------------------------------------------------------

def _metadata_value(api_key: int, body: bytes) -> bytes:
    return bytes([1, api_key, 0]) + body  # frame version 1, type, version 0 (uvarints < 128)


def _compact_string(text: str | None) -> bytes:
    if text is None:
        return b"\x00"
    data = text.encode()
    return bytes([len(data) + 1]) + data


def config_record(resource_type: int, resource: str, name: str, value: str | None) -> bytes:
    """ConfigRecord v0 (metadata/src/main/resources/common/metadata/ConfigRecord.json), encoded by hand."""
    return _metadata_value(4, bytes([resource_type]) + _compact_string(resource) + _compact_string(name)
                           + _compact_string(value) + b"\x00")


def write_metadata_log(root: Path, values: list[bytes]) -> None:
    writer = PartitionWriter(root / "__cluster_metadata-0", write_snapshots=False)
    records = [Record(i, NOW, None, v) for i, v in enumerate(values)]
    writer.append(build_batch_v2(records))
    writer.close()


def test_config_precedence_and_sources(tmp_path):
    d = DataDir(tmp_path / "data", node_id=3)
    d.partition("orders", [(4, NOW - HOUR)])
    write_metadata_log(tmp_path / "data", [
        config_record(2, "orders", "retention.ms", "1000"),
        config_record(2, "orders", "retention.bytes", "5000"),
        config_record(2, "orders", "retention.bytes", None),       # deleted again: last write wins
        config_record(2, "orders", "compression.type", "zstd"),    # not a retention setting
        config_record(4, "", "log.retention.ms", str(48 * HOUR)),  # cluster default
        config_record(4, "", "log.cleaner.min.cleanable.ratio", "0.25"),
        config_record(4, "3", "log.retention.bytes", "777"),       # this broker's own
        config_record(4, "4", "log.retention.bytes", "888"),       # another broker's
    ])
    path = d.finish()
    toml = tmp_path / "retention.toml"
    toml.write_text('[defaults]\n"retention.bytes" = 1\n"delete.retention.ms" = 5\n'
                    '[topics."regex:ord.*"]\n"segment.ms" = 99\n"retention.ms" = 2\n'
                    '[topics."orders"]\n"cleanup.policy" = ["delete", "compact"]\n')
    plan = plan_audit([path], load_config_file(str(toml)))
    assert plan.cluster.records == 8
    (pdir, config), = plan.targets  # __cluster_metadata is not audited
    assert pdir.topic == "orders"
    got = {k: (config[k], config.source(k)) for k in ("cleanup.policy", "segment.ms", "retention.ms",
                                                      "retention.bytes", "min.cleanable.dirty.ratio",
                                                      "delete.retention.ms", "min.compaction.lag.ms")}
    assert got == {
        "cleanup.policy": (("delete", "compact"), "toml topic 'orders'"),
        "segment.ms": (99, "toml 'regex:ord.*'"),
        "retention.ms": (2, "toml 'regex:ord.*'"),  # TOML beats the metadata log's topic config
        "retention.bytes": (777, "cluster metadata broker 3 (log.retention.bytes)"),
        "min.cleanable.dirty.ratio": (0.25, "cluster metadata cluster default (log.cleaner.min.cleanable.ratio)"),
        "delete.retention.ms": (5, "toml defaults"),
        "min.compaction.lag.ms": (0, "kafka default"),
    }
    no_toml = resolve_topic_config("orders", None, plan.cluster, node_id=3)
    assert (no_toml["retention.ms"], no_toml.source("retention.ms")) == (1000, "cluster metadata topic config")
    other = resolve_topic_config("payments", None, plan.cluster, node_id=9)
    assert other["retention.ms"] == 48 * HOUR and other["retention.bytes"] == -1
    both = tmp_path / "both.toml"
    both.write_text('[topics."regex:.*"]\n"retention.ms" = 1\n[topics."regex:o.*"]\n"retention.ms" = 2\n'
                    '[topics."orders"]\n"retention.ms" = 3\n')
    exact = resolve_topic_config("orders", load_config_file(str(both)))
    assert (exact["retention.ms"], exact.source("retention.ms")) == (3, "toml topic 'orders'")
    first = resolve_topic_config("other", load_config_file(str(both)))
    assert (first["retention.ms"], first.source("retention.ms")) == (1, "toml 'regex:.*'")  # the first in the file
    off = ConfigFile(use_cluster_metadata=False)
    assert resolve_topic_config("orders", off, plan.cluster)["retention.ms"] == 7 * DAY


def test_metadata_log_remove_topic_drops_its_configs(tmp_path):
    topic_id = bytes(range(16))
    topic_record = _metadata_value(2, _compact_string("gone") + topic_id + b"\x00")
    remove = _metadata_value(9, topic_id + b"\x00")
    write_metadata_log(tmp_path, [topic_record, config_record(2, "gone", "retention.ms", "5"), remove])
    from kafkaseg.topic_config import read_cluster_configs

    cluster = read_cluster_configs(discover([str(tmp_path)]))
    assert "gone" not in cluster.topics


@pytest.mark.parametrize("text, message", [
    ('[defaults]\n"retention.mss" = 1\n', "unknown setting 'retention.mss'"),
    ('[topics."t"]\n"retention.ms" = "soon"\n', "retention.ms must be an integer"),
    ('[topics."t"]\n"retention.ms" = -5\n', "retention.ms must be at least -1"),
    ('[topics."t"]\n"cleanup.policy" = "compact,purge"\n', "only compact and delete, not purge"),
    ('[topics."t"]\n"min.cleanable.dirty.ratio" = 1.5\n', "between 0 and 1"),
    ('[topics."t"]\nretention.ms = 1\n', "unknown setting 'retention'"),
    ('[topic."t"]\n', "unknown top-level key(s) 'topic'"),
    ('[topics."regex:("]\n', "invalid regex"),
    ('[defaults\n', "not valid TOML"),
])
def test_config_file_errors_name_the_key_and_file(tmp_path, text, message):
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(InvalidOptionError) as err:
        load_config_file(str(path))
    assert message in str(err.value) and str(path) in str(err.value)


def test_a_config_piped_in_is_read(tmp_path):
    """A config generated on the fly (--config <(...), /dev/stdin): a pipe, not a regular file (review)."""
    import os
    import threading

    fifo = tmp_path / "config.fifo"
    os.mkfifo(fifo)

    def write():
        with open(fifo, "w") as handle:
            handle.write('[topics."orders"]\n"retention.ms" = 60000\n')

    writer = threading.Thread(target=write)
    writer.start()
    try:
        assert load_config_file(str(fifo)).topics["orders"]["retention.ms"] == 60_000
    finally:
        writer.join(timeout=10)


def test_example_config_file_parses():
    example = load_config_file(str(Path(__file__).resolve().parents[1] / "conf" / "retention.toml"))
    assert example.topics["orders"]["retention.ms"] == DAY
    assert resolve_topic_config("audit-2024", example)["retention.ms"] == -1


def test_parse_now():
    assert parse_now("1700000000000") == NOW
    assert parse_now("2023-11-14T22:13:20Z") == NOW
    assert parse_now("2023-11-14T22:13:20") == NOW
    with pytest.raises(InvalidOptionError, match="--now 'yesterday'"):
        parse_now("yesterday")


# -- the CLI --------------------------------------------------------------------------------------------------------

def _cli_dir(tmp_path) -> tuple[str, Path]:
    d = DataDir(tmp_path / "data")
    d.partition("t", [(4, NOW - 10 * DAY), (4, NOW - HOUR)])
    d.partition("keep", [(4, NOW - 10 * DAY)] * 2)
    toml = tmp_path / "r.toml"
    toml.write_text('[topics."keep"]\n"retention.ms" = -1\n')
    return d.finish(), toml


def test_cli_json(tmp_path, capsys):
    path, toml = _cli_dir(tmp_path)
    assert cli_main(["retention", path, "--config", str(toml), "--now", str(NOW), "--json", "--segments"]) == 0
    out = json.loads(capsys.readouterr().out)
    by_topic = {p["topic"]: p for p in out["partitions"]}
    assert by_topic["t"]["deletable_segments"] == 1 and by_topic["t"]["deletable_by_time"] == 1
    assert by_topic["t"]["overdue_ms"] == 3 * DAY
    assert [s["deleted_by"] for s in by_topic["t"]["segments"]] == ["time", None]
    assert by_topic["keep"]["deletable_segments"] == 0
    assert by_topic["keep"]["config"]["retention.ms"] == {"value": -1, "source": "toml topic 'keep'"}
    assert out["summary"]["deletable_segments"] == 1 and out["summary"]["lagging_partitions"] == 1


def test_cli_table_and_fail_on_overdue(tmp_path, capsys):
    path, toml = _cli_dir(tmp_path)
    # overdue partitions alone: exit 3, as jobs/retention_audit.py (1 is for a partition that could not be audited)
    assert cli_main(["retention", path, "--config", str(toml), "--now", str(NOW), "--topic", "t",
                     "--fail-on-overdue"]) == 3
    out = capsys.readouterr().out
    assert "kafkaseg retention at 2023-11-14T22:13:20.000Z" in out
    row = next(line for line in out.splitlines() if line.startswith("│ t "))
    assert "time:1" in row and "3d00h" in row
    assert "retention would delete 1 segments" in out
    assert cli_main(["retention", path, "--config", str(toml), "--now", str(NOW), "--topic", "keep",
                     "--fail-on-overdue"]) == 0
    assert cli_main(["retention", path, "--config", str(toml), "--now", str(NOW), "--topic", "t"]) == 0
    assert cli_main(["retention", path, "--config", str(toml), "--now", str(NOW), "--topic", "t", "--json",
                     "--fail-on-overdue"]) == 3


def test_a_topic_selection_that_matches_nothing_fails_instead_of_auditing_nothing(tmp_path, capsys):
    """A scheduled `--fail-on-overdue` check with a misspelt topic must not pass by looking at no partition."""
    path, toml = _cli_dir(tmp_path)
    assert cli_main(["retention", path, "--config", str(toml), "--topic", "kep", "--fail-on-overdue"]) == 2
    assert "no partition of topic kep (did you mean 'keep'?)" in capsys.readouterr().err
    assert cli_main(["retention", path, "--config", str(toml), "--topic-pattern", "ke", "--fail-on-overdue"]) == 2
    assert "matches no topic" in capsys.readouterr().err
    assert cli_main(["retention", path, "--config", str(toml), "--topic-pattern", "ke.*"]) == 0
    capsys.readouterr()
    # a union: the named topic is there, so the pattern may match nothing more
    assert cli_main(["retention", path, "--config", str(toml), "--topic", "keep", "--topic-pattern", "zz"]) == 0
    capsys.readouterr()
    assert cli_main(["retention", path, "--config", str(toml), "--topic", "__cluster_metadata"]) == 2
    assert "KRaft metadata log" in capsys.readouterr().err


def test_every_replica_is_audited_on_request_each_with_its_own_high_watermark(tmp_path, capsys):
    """Two brokers' copies of t-0: the default audits the one a read would choose (the higher high watermark);
    --replicas all audits both, so the broker whose lagging high watermark holds retention back shows."""
    leader, follower = DataDir(tmp_path / "b1", node_id=1), DataDir(tmp_path / "b2", node_id=2)
    leader.partition("t", [(4, NOW - 10 * DAY), (4, NOW - 9 * DAY), (4, NOW - HOUR)])
    follower.partition("t", [(4, NOW - 10 * DAY), (4, NOW - 9 * DAY), (4, NOW - HOUR)], hw_back=10)
    paths = [leader.finish(), follower.finish()]
    assert cli_main(["retention", *paths, "--now", str(NOW), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["partitions"]
    assert [(r["log_dir"], r["deletable_segments"]) for r in rows] == [(paths[0], 2)]
    assert cli_main(["retention", *paths, "--now", str(NOW), "--json", "--replicas", "all"]) == 0
    rows = json.loads(capsys.readouterr().out)["partitions"]
    by_dir = {r["log_dir"]: r for r in rows}
    assert set(by_dir) == set(paths) and by_dir[paths[0]]["deletable_segments"] == 2
    assert by_dir[paths[1]]["deletable_segments"] < 2 and by_dir[paths[1]]["blocked_by_high_watermark"]
    assert cli_main(["retention", *paths, "--now", str(NOW), "--json", "--replicas", "all"]) == 0
    summary = json.loads(capsys.readouterr().out)["summary"]
    assert (summary["partitions"], summary["replicas"]) == (1, 2)
    assert summary["most_overdue"] and all(r["partition"] in (f"t-0 in {paths[0]}", f"t-0 in {paths[1]}")
                                           for r in summary["most_overdue"])
    assert cli_main(["retention", *paths, "--now", str(NOW), "--replicas", "all"]) == 0
    assert "log dir" in capsys.readouterr().out


def test_cli_config_error_is_a_usage_error(tmp_path, capsys):
    path, _ = _cli_dir(tmp_path)
    bad = tmp_path / "bad.toml"
    bad.write_text('[defaults]\n"retention.hours" = 1\n')
    assert cli_main(["retention", path, "--config", str(bad)]) == 2
    assert "unknown setting 'retention.hours'" in capsys.readouterr().err


def test_a_partition_that_cannot_be_read_is_reported_not_raised(tmp_path, capsys):
    d = DataDir(tmp_path / "data")
    d.partition("t", [(4, NOW - HOUR)] * 2)
    path = d.finish()
    (tmp_path / "data" / "log-start-offset-checkpoint").write_text("0\n1\nbroken\n")
    assert cli_main(["retention", path, "--now", str(NOW), "--json"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert "log-start-offset-checkpoint" in out["partitions"][0]["error"]
    assert out["summary"]["errors"][0]["partition"] == "t-0"
    # an error stays 1 with --fail-on-overdue, also when other partitions are overdue
    other = DataDir(tmp_path / "other")  # another broker's log dir, whose checkpoints are fine
    other.partition("late", [(4, NOW - 10 * DAY), (4, NOW - HOUR)])
    (tmp_path / "late.toml").write_text('[topics."late"]\n"retention.ms" = 86400000\n')
    assert cli_main(["retention", path, other.finish(), "--now", str(NOW), "--json", "--fail-on-overdue",
                     "--config", str(tmp_path / "late.toml")]) == 1
    summary = json.loads(capsys.readouterr().out)["summary"]
    assert summary["errors"] and summary["lagging_partitions"] == 1



@pytest.mark.corpus
def test_real_kraft_metadata_snapshot_and_log(corpus_dir):
    """A cp-kafka 7.6.1 broker's data dir: __consumer_offsets' configs live in the newest KRaft snapshot
    (00000000000000024828-0000000003.checkpoint; the ConfigRecords at log offsets ~22 are below its end offset),
    and the audit of its partitions uses them."""
    data = corpus_dir / "segments/RaviAzzuraPutra__LATIHAN-MICROSERVICE-NEW/f8f5c464/kafka/data"
    plan = plan_audit([str(data)], topics=["__consumer_offsets"])
    assert plan.cluster.topics["__consumer_offsets"] == {"compression.type": "producer", "cleanup.policy": "compact",
                                                         "segment.bytes": "104857600"}
    assert len(plan.targets) == 50
    pdir, config = plan.targets[0]
    assert (config["cleanup.policy"], config.source("cleanup.policy")) == (("compact",),
                                                                           "cluster metadata topic config")
    assert config["segment.bytes"] == 104857600
    result = audit(pdir, config, NOW)
    assert result.error is None and result.compaction is not None and result.deletable_segments == 0


def test_rules_agree_with_the_brute_force_transcription_on_random_logs():
    """audit_partition (pure) against brute_force on random logs: sizes (some empty), timestamps out of order,
    high watermarks inside any segment, log start offsets anywhere, size and time retention."""
    import random

    from kafkaseg.retention import PartitionFacts, SegmentFacts, audit_partition

    rng = random.Random(7)
    checked = 0
    for _ in range(3000):
        n = rng.randint(1, 7)
        bases, base = [], rng.randint(0, 50)
        for _ in range(n):
            bases.append(base)
            base += rng.randint(1, 20)
        log_end = base
        sizes = [rng.choice([0, 50, 100, 100, 250]) for _ in range(n)]
        if sizes[-1] == 0:
            log_end = bases[-1]  # an empty last segment holds no offsets
        stamps = [NOW - rng.randint(0, 20) * DAY // 2 for _ in range(n)]
        segments = tuple(SegmentFacts(b, s, ts, 0) for b, s, ts in zip(bases, sizes, stamps))
        hw = rng.randint(bases[0], log_end)
        log_start = rng.choice([bases[0], rng.randint(bases[0], log_end)])
        retention_ms = rng.choice([-1, 3 * DAY, 7 * DAY])
        retention_bytes = rng.choice([-1, 0, 100, 300, 600])
        policy = rng.choice(["delete", "compact", "compact,delete"])
        facts = PartitionFacts("t", 0, None, "", segments, log_start, log_end, hw)
        config = resolve_topic_config("t", config_for(retention_ms=retention_ms, retention_bytes=retention_bytes,
                                                      cleanup_policy=policy))
        got = rules(audit_partition(facts, config, NOW))
        expected = brute_force([(b, s, ts) for b, s, ts in zip(bases, sizes, stamps)], log_end=log_end, hw=hw,
                               log_start=log_start, retention_ms=retention_ms, retention_bytes=retention_bytes,
                               now=NOW, delete="delete" in policy)
        assert got == expected, (facts, config.as_dict())
        checked += bool(expected)
    assert checked > 1000  # most cases delete something


# -- review: where the audit disagreed with a broker ---------------------------------------------------------------

def test_internal_topics_are_compacted_without_any_config_source(tmp_path):
    """GroupCoordinator.offsetsTopicConfigs and TransactionStateManager.transactionTopicConfigs create these topics
    with cleanup.policy=compact: a data dir without a metadata log (a ZooKeeper-era broker) must not audit them as
    delete topics whose old segments retention.ms removes."""
    d = DataDir(tmp_path / "data")
    d.partition("__consumer_offsets", [(4, NOW - 30 * DAY)] * 3)
    d.partition("__transaction_state", [(4, NOW - 30 * DAY)] * 3)
    d.partition("__share_group_state", [(4, NOW - 30 * DAY)] * 3)  # KIP-932: created with cleanup.policy=delete
    path = d.finish()
    for topic in ("__consumer_offsets", "__transaction_state"):
        result = audit_one(path, topic)
        assert result.config["cleanup.policy"] == ("compact",), topic
        assert "internal topic" in result.config.source("cleanup.policy")
        assert rules(result) == {} and result.compaction is not None
    assert rules(audit_one(path, "__share_group_state")) == {0: TIME_BREACH, 4: TIME_BREACH, 8: TIME_BREACH}
    # a topic config (TOML or metadata log) still wins
    explicit = audit_one(path, "__consumer_offsets", ConfigFile(topics={"__consumer_offsets": {
        "cleanup.policy": ("delete",)}}))
    assert rules(explicit) == {0: TIME_BREACH, 4: TIME_BREACH, 8: TIME_BREACH}


def test_a_partition_the_cleaner_checkpointed_is_flagged_when_audited_as_delete_only(tmp_path):
    """cleaner-offset-checkpoint holds only logs the cleaner compacted: a delete-only policy that came from no
    topic-level source is then most likely wrong, and the audit says so."""
    d = DataDir(tmp_path / "data")
    d.partition("connect-offsets", [(4, NOW - 30 * DAY)] * 3, cleaner=8)
    path = d.finish()
    result = audit_one(path, "connect-offsets")
    assert any("cleaner-offset-checkpoint" in n and "compact" in n for n in result.notes), result.notes
    told = audit_one(path, "connect-offsets", ConfigFile(topics={"connect-offsets": {"cleanup.policy": ("delete",)}}))
    assert not any("cleaner-offset-checkpoint" in n for n in told.notes)


def test_broker_configs_in_the_metadata_log_are_read_as_a_broker_reads_dynamic_configs(tmp_path, capsys):
    """DynamicBrokerConfig.fromPersistentProps drops non-dynamic names (log.retention.hours/minutes and
    log.roll.hours are not in DynamicLogConfig.ReconfigurableConfigs) and invalid values, with an error log, instead
    of failing; KafkaConfig.logRetentionTimeMillis reads any negative log.retention.ms as -1."""
    d = DataDir(tmp_path / "data", node_id=3)
    d.partition("t", [(4, NOW - HOUR)])
    write_metadata_log(tmp_path / "data", [
        config_record(4, "", "log.retention.hours", "1"),           # ignored by brokers: not a dynamic config
        config_record(4, "3", "log.retention.bytes", "lots"),       # invalid: ignored
        config_record(4, "", "log.retention.bytes", "4096"),
        config_record(4, "", "log.cleaner.min.cleanable.ratio", "2.5"),  # out of range: ignored
    ])
    plan = plan_audit([d.finish()], topics=["t"])
    (_, config), = plan.targets
    assert (config["retention.ms"], config.source("retention.ms")) == (7 * DAY, "kafka default")
    assert (config["retention.bytes"], config.source("retention.bytes")) == (
        4096, "cluster metadata cluster default (log.retention.bytes)")
    assert config["min.cleanable.dirty.ratio"] == 0.5
    ignored = " ".join(plan.cluster.notes)
    assert "log.retention.hours" in ignored and "lots" in ignored and "2.5" in ignored
    assert cli_main(["retention", str(tmp_path / "data"), "--now", str(NOW), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["metadata_notes"] == list(plan.cluster.notes)
    forever = tmp_path / "forever"
    d2 = DataDir(forever, node_id=1)
    d2.partition("t", [(4, NOW - 30 * DAY)] * 2)
    write_metadata_log(forever, [config_record(4, "", "log.retention.ms", "-2")])
    (pdir, config), = plan_audit([d2.finish()], topics=["t"]).targets
    assert config["retention.ms"] == -1
    assert rules(audit(pdir, config, NOW)) == {}


def test_segment_overdue_fits_a_long_with_infinite_retention_and_future_timestamps():
    """retention.ms = Long.MAX_VALUE and a producer clock ahead: now - ts - retention.ms is below Long.MIN_VALUE;
    the job's BIGINT columns must still take every row."""
    import pyarrow as pa

    from kafkaseg.retention import PartitionFacts, SegmentFacts, audit_partition, partition_row, segment_rows

    segments = (SegmentFacts(0, 100, NOW + DAY, 0), SegmentFacts(5, 100, NOW - DAY, 0))
    facts = PartitionFacts("t", 0, None, "", segments, 0, 10, 10)
    result = audit_partition(facts, resolve_topic_config("t", config_for(retention_ms=2**63 - 1)), NOW)
    assert rules(result) == {}
    for row in segment_rows(result) + [partition_row(result)]:
        for key, value in row.items():
            if isinstance(value, int) and not isinstance(value, bool):
                pa.array([value], pa.int64())  # raises on overflow
    assert result.segments[0].overdue_ms == -(2**63)  # saturated, as far from due as a long can say


def test_remote_storage_is_off_for_compacted_and_remote_metadata_topics(tmp_path):
    """UnifiedLog.isRemoteLogEnabled: never for compacted topics, internal topics or __remote_log_metadata, whatever
    remote.storage.enable says; local.retention.* then does not apply."""
    d = DataDir(tmp_path / "data")
    d.partition("t", [(4, NOW - 3 * HOUR)] * 3)
    d.partition("__remote_log_metadata", [(4, NOW - 3 * HOUR)] * 3)
    path = d.finish()
    tiered = {"remote.storage.enable": True, "local.retention.ms": HOUR}
    compacted = audit_one(path, "t", ConfigFile(topics={"t": dict(tiered, **{"cleanup.policy": ("compact", "delete")})}))
    assert not compacted.config.remote_log_enabled and compacted.config.effective_retention_ms == 7 * DAY
    assert rules(compacted) == {} and not compacted.rolls_active
    meta = audit_one(path, "__remote_log_metadata", ConfigFile(topics={"__remote_log_metadata": tiered}))
    assert not meta.config.remote_log_enabled and rules(meta) == {}


def test_high_watermark_checkpoint_below_the_log_start_is_raised_to_it(tmp_path):
    """UnifiedLog.updateHighWatermark bounds the loaded high watermark below by the log start offset, so segments
    wholly below the log start are deletable even when replication-offset-checkpoint is older."""
    d = DataDir(tmp_path / "data")
    d.partition("t", [(4, NOW - HOUR)] * 3, log_start=8, hw_back=10)  # checkpointed high watermark 2
    result = audit_one(d.finish(), "t")
    assert result.high_watermark == 8
    assert rules(result) == {0: LOG_START_BREACH, 4: LOG_START_BREACH}
    assert not result.blocked_by_high_watermark


def test_missing_timeindex_below_the_recovery_point_is_an_empty_time_index(tmp_path):
    """LogLoader.loadSegmentFiles: a segment with an .index but no .timeindex gets an empty time index
    (LogSegment.sanityCheck resizes it to 0) unless recovery rebuilds it (unclean shutdown, segment reaching the
    recovery point): maxTimestampSoFar is then -1 and largestTimestamp the .log file's mtime, as for a segment
    from before Kafka 0.10.1. A segment at the recovery point is rebuilt from its batches."""
    d = DataDir(tmp_path / "data")
    d.partition("t", [(4, NOW - 30 * DAY)] * 3 + [(4, NOW - HOUR)])
    path = d.finish()
    write_offset_checkpoint(tmp_path / "data" / "recovery-point-offset-checkpoint", {("t", 0): 10})
    folder = tmp_path / "data" / "t-0"
    for base in (0, 4, 8):
        (folder / f"{base:020d}.timeindex").unlink()
        os.utime(folder / f"{base:020d}.log", ((NOW - HOUR) / 1000,) * 2)
    result = audit_one(path, "t")
    assert [s.timestamp_source for s in result.segments] == ["mtime", "mtime", "timeindex", "timeindex"]
    assert rules(result) == {}  # the first segment's mtime is an hour old: the time walk stops there
    assert any("mtime" in n for n in result.notes), result.notes
    # after a clean shutdown nothing is recovered: every rolled segment without a .timeindex loads an empty one
    write_offset_checkpoint(tmp_path / "data" / "recovery-point-offset-checkpoint", {("t", 0): 0})
    (tmp_path / "data" / ".kafka_cleanshutdown").write_text("")
    clean = audit_one(path, "t")
    assert [s.timestamp_source for s in clean.segments] == ["mtime", "mtime", "mtime", "timeindex"]


def test_segments_past_retention_kept_behind_a_future_timestamp_are_reported(tmp_path):
    """A producer clock ahead puts a future largestTimestamp in one segment: the time walk stops there and every
    older segment behind it stays (deleteRetentionMsBreachedSegments deletes oldest first). The broker's answer
    is 'nothing', which the audit repeats, and says why."""
    d = DataDir(tmp_path / "data")
    d.partition("t", [(4, NOW + 2 * DAY)] + [(4, NOW - 30 * DAY)] * 3 + [(4, NOW - HOUR)])
    result = audit_one(d.finish(), "t")
    assert rules(result) == {} and result.overdue_ms is None
    note = next(n for n in result.notes if "kept behind" in n)
    assert "3 segment(s)" in note and "segment 0" in note and "in the future" in note
    # nothing to say when the walk stops at a young segment with nothing past retention behind it
    d2 = DataDir(tmp_path / "data2")
    d2.partition("t", [(4, NOW - 30 * DAY), (4, NOW - HOUR), (4, NOW - HOUR)])
    assert not any("kept behind" in n for n in audit_one(d2.finish(), "t").notes)


def _topic_record(name: str, topic_id: bytes) -> bytes:
    return _metadata_value(2, _compact_string(name) + topic_id + b"\x00")


def _b64(topic_id: bytes) -> str:
    import base64

    return base64.urlsafe_b64encode(topic_id).decode().rstrip("=")


def test_replicas_of_deleted_or_replaced_topic_incarnations_are_strays_not_audited(tmp_path):
    """LogManager.isStrayKraftReplica: a log whose partition.metadata topic id is not the metadata image's id for
    its name (the topic was deleted, or deleted and re-created while this broker was away) is deleted whole at
    startup, not kept under retention. The audit leaves it out and says so, instead of auditing it with the new
    incarnation's configs or failing on two incarnations of one topic."""
    from kafkaseg.testing.partition import write_partition_metadata

    old_id, new_id, gone_id = bytes(range(16)), bytes(range(1, 17)), bytes(range(2, 18))
    d1, d2 = DataDir(tmp_path / "b1", node_id=1), DataDir(tmp_path / "b2", node_id=2)
    d1.partition("t", [(4, NOW - 30 * DAY)] * 2)
    d2.partition("t", [(4, NOW - HOUR)] * 2)
    d1.partition("gone", [(4, NOW - HOUR)] * 2)
    write_partition_metadata(tmp_path / "b1" / "t-0" / "partition.metadata", _b64(old_id))
    write_partition_metadata(tmp_path / "b2" / "t-0" / "partition.metadata", _b64(new_id))
    write_partition_metadata(tmp_path / "b1" / "gone-0" / "partition.metadata", _b64(gone_id))
    write_metadata_log(tmp_path / "b2", [
        _topic_record("t", old_id), config_record(2, "t", "retention.ms", "1000"),
        _metadata_value(9, old_id + b"\x00"),
        _topic_record("gone", gone_id), _metadata_value(9, gone_id + b"\x00"),
        _topic_record("t", new_id)])
    plan = plan_audit([d1.finish(), d2.finish()])
    assert plan.cluster.topic_ids == {"t": _b64(new_id)}
    assert [(p.topic, p.log_dir) for p, _ in plan.targets] == [("t", str(tmp_path / "b2"))]
    assert plan.targets[0][1]["retention.ms"] == 7 * DAY  # the old incarnation's config went with it
    strays = " ".join(plan.replica_notes)
    assert "gone-0" in strays and "stray" in strays and str(tmp_path / "b1" / "t-0") in strays
    # a log dir of another cluster (its own meta.properties cluster.id) is not judged by this metadata log: the
    # mix of clusters is refused as before
    other = DataDir(tmp_path / "other", node_id=7)
    other.partition("t", [(4, NOW - HOUR)])
    write_meta_properties(tmp_path / "other" / "meta.properties", cluster_id="x" * 22, node_id=7,
                          directory_id="e" * 22)
    write_partition_metadata(tmp_path / "other" / "t-0" / "partition.metadata", _b64(gone_id))
    with pytest.raises(LayoutError, match="different clusters"):
        plan_audit([str(tmp_path / "b2"), other.finish()])


def test_the_most_advanced_metadata_log_copy_is_replayed(tmp_path):
    """Every broker and controller keeps a copy of __cluster_metadata-0; a copy that lags (a broker that was down)
    may hold more segments than an up-to-date one that has snapshotted and trimmed. The replay reads the copy that
    reaches furthest, not the one with most files."""
    d1, d2 = DataDir(tmp_path / "b1", node_id=1), DataDir(tmp_path / "b2", node_id=2)
    d1.partition("t", [(4, NOW - HOUR)])
    d2.partition("t", [(4, NOW - HOUR)])
    behind = PartitionWriter(tmp_path / "b1" / "__cluster_metadata-0", write_snapshots=False)
    behind.append(build_batch_v2([Record(0, NOW, None, config_record(2, "t", "retention.ms", "1000"))]))
    behind.roll()
    behind.roll()
    behind.close()
    write_metadata_log(tmp_path / "b2", [config_record(2, "t", "retention.ms", "1000"),
                                          config_record(2, "t", "retention.ms", "2000")])
    plan = plan_audit([d1.finish(), d2.finish()])
    assert plan.cluster.source == str(tmp_path / "b2" / "__cluster_metadata-0")
    assert {c["retention.ms"] for _, c in plan.targets} == {2000}


def test_an_index_entry_with_a_negative_position_is_rebuilt_not_a_crash(tmp_path, capsys):
    """A garbage .index whose last entry has a negative position (int32 sign bit set) is stale like one pointing
    past the log: rebuilt from the batches. It raised ValueError from a positioned read, which no KafkaSegError
    handler caught, and stopped the whole audit."""
    d = DataDir(tmp_path / "data")
    d.partition("t", [(4, NOW - 30 * DAY)] * 2 + [(4, NOW - HOUR)])
    path = d.finish()
    (tmp_path / "data" / "t-0" / f"{8:020d}.index").write_bytes(bytes([0, 0, 0, 1, 0xE0, 0, 0, 0]))
    result = audit_one(path, "t")
    assert rules(result) == {0: TIME_BREACH, 4: TIME_BREACH} and result.log_end_offset == 12
    assert cli_main(["retention", path, "--now", str(NOW), "--json"]) == 0
    capsys.readouterr()


def test_metadata_transactions_apply_at_their_end_and_never_when_aborted(tmp_path):
    """KIP-868 metadata transactions (ZooKeeper migration): MetadataBatchLoader publishes a transaction's records
    when its EndTransactionRecord comes, drops them at an AbortTransactionRecord, and holds back one still open."""
    begin, end, abort = _metadata_value(23, b"\x00"), _metadata_value(24, b"\x00"), _metadata_value(25, b"\x00")
    write_metadata_log(tmp_path, [
        config_record(2, "t", "retention.ms", "1000"),
        begin, config_record(2, "t", "retention.ms", "5"), config_record(2, "t", "retention.bytes", "5"), abort,
        begin, config_record(2, "t", "retention.ms", "6"), end,
        begin, config_record(2, "t", "retention.ms", "7"), config_record(2, "u", "retention.ms", "7")])
    from kafkaseg.topic_config import read_cluster_configs

    cluster = read_cluster_configs(discover([str(tmp_path)]))
    assert cluster.topics == {"t": {"retention.ms": "6"}}
    assert any("transaction" in n for n in cluster.notes)  # the open one is reported


def _partition_record(topic_id: bytes, partition: int, replicas: list[int]) -> bytes:
    import struct

    def array(items):
        return bytes([len(items) + 1]) + b"".join(struct.pack(">i", x) for x in items)

    return _metadata_value(3, struct.pack(">i", partition) + topic_id + array(replicas) + array(replicas)
                           + array([]) + array([]) + struct.pack(">iii", replicas[0], 0, 0) + b"\x00")


def _partition_change_replicas(topic_id: bytes, partition: int, replicas: list[int]) -> bytes:
    import struct

    items = bytes([len(replicas) + 1]) + b"".join(struct.pack(">i", x) for x in replicas)
    return _metadata_value(5, struct.pack(">i", partition) + topic_id + bytes([1, 2, len(items)]) + items)


def test_replicas_the_metadata_log_no_longer_assigns_to_their_broker_are_strays(tmp_path):
    """LogManager.isStrayKraftReplica: a log of a partition whose replica set (PartitionRecord, then
    PartitionChangeRecord's replicas) does not hold this broker's node id is deleted, not retained: a
    reassignment moved it away."""
    from kafkaseg.testing.partition import write_partition_metadata

    topic_id = bytes(range(16))
    b1, b2 = DataDir(tmp_path / "b1", node_id=1), DataDir(tmp_path / "b2", node_id=2)
    for d, parts in ((b1, (0, 1)), (b2, (0,))):
        for p in parts:
            d.partition("t", [(4, NOW - HOUR)], p=p)
            write_partition_metadata(d.root / f"t-{p}" / "partition.metadata", _b64(topic_id))
    write_metadata_log(tmp_path / "b2", [
        _topic_record("t", topic_id), _partition_record(topic_id, 0, [1, 2]), _partition_record(topic_id, 1, [2]),
        _partition_change_replicas(topic_id, 0, [2, 3])])
    plan = plan_audit([b1.finish(), b2.finish()])
    assert [(p.topic, p.partition, p.log_dir) for p, _ in plan.targets] == [("t", 0, str(tmp_path / "b2"))]
    strays = " ".join(plan.replica_notes)
    assert "t-1" in strays and "[2]" in strays and str(tmp_path / "b1" / "t-0") in strays


def test_retention_held_back_by_the_high_watermark_is_overdue_too(tmp_path, capsys):
    """Every segment 30 days old, the high watermark stuck in the first one (a follower down, the ISR below
    min.insync.replicas): the broker deletes nothing, correctly, and a scheduled --fail-on-overdue check must still
    say retention is not happening (it exited 0: an exploratory review)."""
    d = DataDir(tmp_path / "data")
    sizes = d.partition("t", [(4, NOW - 30 * DAY)] * 3)
    d.hw[("t", 0)] = 2
    result = audit_one(d.finish(), "t")
    assert rules(result) == {} and result.blocked_by_high_watermark
    assert result.overdue_ms == 23 * DAY and result.lagging  # now - largest timestamp - retention.ms (7 days)
    assert cli_main(["retention", str(tmp_path / "data"), "--now", str(NOW), "--topic", "t",
                     "--fail-on-overdue"]) == 3
    assert len(sizes) == 3


def test_a_partition_over_retention_bytes_for_long_is_overdue(tmp_path, capsys):
    """Deletable by the size rule alone (retention.ms -1): the broker deletes such segments at its next check, so
    finding them an hour after the limit was crossed means retention is not running (it never counted: review)."""
    import os

    d = DataDir(tmp_path / "data")
    stamps = [NOW - 3 * HOUR, NOW - 2 * HOUR, NOW - HOUR, NOW - HOUR // 2]
    sizes = d.partition("t", [(4, ts) for ts in stamps])
    for (base, _), ts in zip(sizes, stamps):  # each written when its last record was (a live broker's files)
        os.utime(tmp_path / "data" / "t-0" / f"{base:020d}.log", (ts / 1000, ts / 1000))
    seg = sizes[0][1]
    result = audit_one(d.finish(), "t", config_for(retention_ms=-1, retention_bytes=seg * 2))
    assert rules(result) == {0: SIZE_BREACH, 4: SIZE_BREACH} and result.overdue_ms is None
    # the segments after the first reach retention.bytes by the end of the third (at NOW - 1 h): owed since then
    assert result.size_overdue_ms == HOUR and result.lagging
    # ...and the time rule's overdue counts whichever rule deletes the segment (here both apply; size goes first)
    both = audit_one(str(tmp_path / "data"), "t", config_for(retention_ms=HOUR, retention_bytes=seg * 2))
    assert dict(both.segments_by_rule)["size"] == 2 and both.overdue_ms == 2 * HOUR
    fresh = audit_one(str(tmp_path / "data"), "t", config_for(retention_ms=-1, retention_bytes=seg * 2),
                      now=NOW - HOUR + 60_000)  # crossed a minute ago: not yet a check interval
    assert fresh.size_overdue_ms == 60_000 and not fresh.lagging
    # records whose timestamps are older than their writes (MirrorMaker, Streams, a backfill): the third segment
    # written a minute ago with records an hour old is over the limit for a minute, not an hour (review round 6)
    third = tmp_path / "data" / "t-0" / f"{sizes[2][0]:020d}.log"
    os.utime(third, ((NOW - 60_000) / 1000, (NOW - 60_000) / 1000))
    late = audit_one(str(tmp_path / "data"), "t", config_for(retention_ms=-1, retention_bytes=seg * 2))
    assert late.size_overdue_ms == 60_000 and not late.lagging


def test_topic_folders_awaiting_deletion_are_counted(tmp_path, capsys):
    """A topic deletion renames its partition folders <topic>-<p>.<id>-delete and removes them later: deletions
    that never finish fill disks, and the audit said nothing of them (exploratory review)."""
    d = DataDir(tmp_path / "data")
    d.partition("t", [(4, NOW - HOUR)] * 2)
    d.partition("gone", [(4, NOW - HOUR)] * 3)
    path = d.finish()
    folder = tmp_path / "data" / "gone-0"
    size = sum(f.stat().st_size for f in folder.iterdir())
    folder.rename(tmp_path / "data" / "gone-0.0123456789abcdef0123456789abcdef-delete")
    plan = plan_audit([path])
    assert [(Path(p).name, s) for p, s in plan.pending_topic_deletions] == [
        ("gone-0.0123456789abcdef0123456789abcdef-delete", size)]
    assert "1 partition folder(s) awaiting deletion" in plan.deletions_line() and f"{size} bytes" in plan.deletions_line()
    assert plan_audit([path], topics=["t"]).pending_topic_deletions == ()  # another topic's: not this audit's
    assert cli_main(["retention", path, "--now", str(NOW), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["pending_topic_deletions"][0]["bytes"] == size


def test_time_owed_only_where_the_time_rule_reaches(tmp_path):
    """A segment stamped in the future stops the time rule; a deleteRecords just moved the log start past it and
    a ten-day-old segment: both go at the next check, owed since the deleteRecords, not for days (review round 6)."""
    d = DataDir(tmp_path / "data")
    d.partition("t", [(4, NOW + 2 * DAY), (4, NOW - 10 * DAY), (4, NOW - HOUR)], log_start=8)
    result = audit_one(d.finish(), "t")
    assert rules(result) == {0: LOG_START_BREACH, 4: LOG_START_BREACH}
    assert result.overdue_ms is None and not result.lagging


def test_over_retention_bytes_held_back_by_the_high_watermark_is_lagging(tmp_path):
    """retention.ms -1, the partition far over retention.bytes, the high watermark stuck in the first segment for
    a month: the size rule is held back, and that is owed too (review round 6)."""
    import os

    d = DataDir(tmp_path / "data")
    stamps = [NOW - 30 * DAY, NOW - 29 * DAY, NOW - 28 * DAY, NOW - 27 * DAY]
    sizes = d.partition("t", [(4, ts) for ts in stamps])
    for (base, _), ts in zip(sizes, stamps):
        os.utime(tmp_path / "data" / "t-0" / f"{base:020d}.log", (ts / 1000, ts / 1000))
    d.hw[("t", 0)] = 2
    result = audit_one(d.finish(), "t", config_for(retention_ms=-1, retention_bytes=sizes[0][1]))
    assert rules(result) == {} and result.blocked_by_high_watermark
    assert result.size_overdue_ms == 29 * DAY and result.lagging


def test_time_owed_no_earlier_than_the_segments_last_write(tmp_path):
    """A backfill writes records eight days old into segments rolled minutes ago: retention.ms (7 days) deletes
    them at its next check, owed for minutes, not a day; a compacted topic owes nothing to retention.ms (round 7)."""
    import os

    d = DataDir(tmp_path / "data")
    sizes = d.partition("t", [(4, NOW - 8 * DAY)] * 3)
    for k, (base, _) in enumerate(sizes):
        written = NOW - (3 - k) * 60_000
        os.utime(tmp_path / "data" / "t-0" / f"{base:020d}.log", (written / 1000, written / 1000))
    result = audit_one(d.finish(), "t")
    assert dict(result.segments_by_rule) == {"time": 3} and result.overdue_ms == 3 * 60_000
    assert not result.lagging and any("owed only 3m" in note for note in result.notes)  # the gap is said
    # the walk deletes oldest first: a segment written long ago behind one that came due a minute ago is owed a
    # minute, not since its own write (round 8)
    os.utime(tmp_path / "data" / "t-0" / f"{sizes[0][0]:020d}.log", ((NOW - 60_000) / 1000, (NOW - 60_000) / 1000))
    os.utime(tmp_path / "data" / "t-0" / f"{sizes[1][0]:020d}.log", ((NOW - HOUR) / 1000, (NOW - HOUR) / 1000))
    assert audit_one(str(tmp_path / "data"), "t").overdue_ms == 60_000
    compacted = DataDir(tmp_path / "compacted")
    compacted.partition("t", [(4, NOW - 30 * DAY)] * 3, log_start=4)
    only = audit_one(compacted.finish(), "t", config_for(cleanup_policy="compact"))
    assert only.overdue_ms is None and not only.lagging
