"""kafkaseg.testing data dirs: every byte decoded by kafka-python and compared with the manifest; indexes,
transaction indexes, snapshots and checkpoints checked by brute force from the batch headers."""

from __future__ import annotations

import hashlib
import struct
from pathlib import Path

import crc32c
import pytest
from kafka.record.memory_records import MemoryRecords

from kafkaseg.errors import InvalidOptionError
from kafkaseg.testing import (
    SAMPLE_TOPICS,
    ControlType,
    PartitionWriter,
    Record,
    TopicSpec,
    build_batch_v2,
    build_control_batch,
    encode_producer_snapshot,
    sample_data_dir,
    write_benchmark_segment,
    write_data_dir,
)
from kafkaseg.wire.batch import iter_headers

MATRIX = [
    TopicSpec(f"m{magic}-{codec}", partitions=1, records_per_partition=300, records_per_batch=20, codec=codec,
              magic=magic, value_size=90, segment_bytes=8 * 1024, index_interval_bytes=512, ts_jitter_ms=30,
              headers=2 if magic == 2 else 0, null_header_value_ratio=0.3 if magic == 2 else 0,
              null_key_ratio=0.1, tombstone_ratio=0.05, empty_value_ratio=0.05)
    for magic, codecs in ((2, ["none", "gzip", "snappy", "lz4", "zstd"]), (1, ["none", "gzip", "snappy", "lz4"]),
                          (0, ["none", "gzip", "snappy"]))
    for codec in codecs
] + [
    TopicSpec("v1-logappend", magic=1, codec="lz4", timestamp_type="LogAppendTime", records_per_partition=200,
              segment_bytes=4096),
    TopicSpec("v1-logappend-plain", magic=1, timestamp_type="LogAppendTime", records_per_partition=50),
    TopicSpec("v2-logappend", codec="snappy", timestamp_type="LogAppendTime", records_per_partition=400,
              segment_bytes=8 * 1024, index_interval_bytes=256, ts_jitter_ms=100),
    TopicSpec("txn", partitions=2, transactional=True, transaction_producers=3, abort_ratio=0.4,
              open_transactions=2, records_per_partition=600, records_per_batch=10, segment_bytes=6 * 1024,
              codec="gzip", timestamp_type="LogAppendTime"),
    TopicSpec("compacted", records_per_partition=500, key_cardinality=30, tombstone_ratio=0.2, gap_ratio=0.4,
              empty_batches=4, idempotent=True, delete_horizon_ms=1_700_100_000_000, cleanup_policy="compact",
              segment_bytes=4096, codec="zstd", log_start_offset=1000, log_start_advance=7),
    TopicSpec("live", records_per_partition=800, preallocate_active_index=4096 + 100, segment_bytes=16 * 1024,
              partition_leader_epoch=5),
]


@pytest.fixture(scope="module")
def matrix_dir(tmp_path_factory):
    return write_data_dir(tmp_path_factory.mktemp("matrix"), MATRIX, seed=11)


@pytest.fixture(scope="module")
def sample(tmp_path_factory):
    return sample_data_dir(tmp_path_factory.mktemp("sample"))


# -- oracles ---------------------------------------------------------------------------------------------------
def kafka_python_batches(log_path: Path):
    """[(batch, records)] of one segment as kafka-python reads it, every CRC validated."""
    out = []
    mr = MemoryRecords(log_path.read_bytes())
    while (batch := mr.next_batch()) is not None:
        assert batch.validate_crc(), f"bad crc in {log_path}"
        records = list(batch)
        for r in records:
            if batch.magic < 2:
                assert r.validate_crc()
        out.append((batch, records))
    assert mr.valid_bytes() == mr.size_in_bytes()
    return out


def as_tuple(record, batch):
    is_control = batch.magic == 2 and batch.is_control_batch
    ts = -1 if record.timestamp is None else record.timestamp
    tst = -1 if record.timestamp_type is None else record.timestamp_type
    return (record.offset, ts, tst, record.key, record.value, tuple(record.headers), is_control)


def check_partition_against_kafka_python(pm):
    actual = []
    batches = 0
    for seg in pm.segments:
        for batch, records in kafka_python_batches(seg.log_path):
            batches += 1
            if batch.magic == 2:
                # empty batches (writeEmptyHeader) and markers (withEndTransactionMarker) are never compressed
                assert batch.compression_type == (0 if batch.records_count == 0 or batch.is_control_batch else
                                                  ["none", "gzip", "snappy", "lz4", "zstd"].index(pm.codec))
            actual.extend(as_tuple(r, batch) for r in records)
    expected = [(r.offset, r.timestamp, r.timestamp_type, r.key, r.value, r.headers, r.is_control)
                for r in pm.records]
    assert batches == pm.batch_count
    assert len(actual) == len(expected)
    for a, e in zip(actual, expected):
        assert a == e
    return actual


def read_index(path: Path, entry: struct.Struct):
    data = path.read_bytes()
    assert len(data) % entry.size == 0
    entries = [entry.unpack_from(data, i) for i in range(0, len(data), entry.size)]
    # a preallocated tail is zero-filled: stop at the first all-zero entry after entry 0
    for i, e in enumerate(entries):
        if i > 0 and not any(e):
            assert not any(x for rest in entries[i:] for x in rest)
            return entries[:i], len(data)
    return entries, len(data)


def brute_force_check_indexes(seg, interval: int, *, active_live: bool):
    data = seg.log_path.read_bytes()
    headers = list(iter_headers(data))
    by_position = {h.position: h for h in headers}
    base = seg.base_offset
    offset_entries, _ = read_index(seg.log_path.with_suffix(".index"), struct.Struct(">ii"))
    time_entries, _ = read_index(seg.log_path.with_suffix(".timeindex"), struct.Struct(">qi"))
    # every offset entry points at a batch whose last offset is the entry's
    for rel, pos in offset_entries:
        assert pos in by_position, f"{seg.log_path}: index entry {rel}->{pos} off a batch boundary"
        assert by_position[pos].last_offset == base + rel
    assert [r for r, _ in offset_entries] == sorted({r for r, _ in offset_entries})
    # Kafka's spacing rule (LogSegment.append with one batch per append), recomputed from the headers
    expected_positions, since, max_ts, max_off, expected_times = [], 0, -1, -1, []
    for h in headers:
        if h.max_timestamp > max_ts:
            max_ts, max_off = h.max_timestamp, h.last_offset
        if since > interval:
            expected_positions.append(h.position)
            if max_ts > (expected_times[-1][0] if expected_times else -1):
                expected_times.append((max_ts, max_off - base))
            since = 0
        since += h.size
    assert [p for _, p in offset_entries] == expected_positions
    if not active_live and max_ts > (expected_times[-1][0] if expected_times else -1):
        expected_times.append((max_ts, max_off - base))
    assert [tuple(e) for e in time_entries] == expected_times
    # time entries: increasing timestamps, each the max timestamp of the batch whose last offset it names
    last_by_offset = {h.last_offset: h for h in headers}
    assert all(a[0] < b[0] for a, b in zip(time_entries, time_entries[1:]))
    for ts, rel in time_entries:
        assert last_by_offset[base + rel].max_timestamp == ts
    if not active_live and max_ts >= 0:
        assert time_entries[-1][0] == max(h.max_timestamp for h in headers)
    return headers


def walk_transactions(pm):
    """Independent replay of the partition's batches: aborted transactions per segment, LSO, producer state."""
    ongoing: dict[int, int] = {}
    per_segment = {}
    producers = {}
    for seg in pm.segments:
        entries = []
        for batch, records in kafka_python_batches(seg.log_path):
            if batch.magic < 2 or batch.producer_id < 0:
                continue
            pid = batch.producer_id
            if batch.is_control_batch:
                first = ongoing.pop(pid, None)
                if records[0].type == ControlType.ABORT and first is not None:
                    lso = min(ongoing.values()) if ongoing else batch.last_offset + 1
                    entries.append((0, pid, first, batch.last_offset, lso))
                producers.setdefault(pid, {})["txn"] = -1
            else:
                if batch.is_transactional and pid not in ongoing:
                    ongoing[pid] = batch.base_offset
                producers[pid] = {"epoch": batch.producer_epoch, "last_offset": batch.last_offset,
                                  "last_seq": batch.last_sequence, "txn": ongoing.get(pid, -1)}
        per_segment[seg.base_offset] = entries
    lso = min(ongoing.values()) if ongoing else pm.log_end_offset
    return per_segment, lso, producers


def read_snapshot(path: Path):
    data = path.read_bytes()
    version, crc = struct.unpack_from(">hI", data, 0)
    assert version == 1 and crc == crc32c.crc32c(data[6:])
    (count,) = struct.unpack_from(">i", data, 6)
    assert len(data) == 10 + 46 * count
    return [struct.unpack_from(">qhiqiqiq", data, 10 + 46 * i) for i in range(count)]


def read_checkpoint(path: Path):
    lines = path.read_text().splitlines()
    assert lines[0] == "0" and int(lines[1]) == len(lines) - 2
    return {(t, int(p)): int(o) for t, p, o in (line.split() for line in lines[2:])}


# -- tests -----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("spec", MATRIX, ids=[s.name for s in MATRIX])
def test_every_record_decodes_with_kafka_python(matrix_dir, spec):
    for p in range(spec.partitions):
        pm = matrix_dir.partition(spec.name, p)
        assert pm.records, "a topic with no records tests nothing"
        check_partition_against_kafka_python(pm)


@pytest.mark.parametrize("spec", MATRIX, ids=[s.name for s in MATRIX])
def test_indexes_match_brute_force(matrix_dir, spec):
    for p in range(spec.partitions):
        pm = matrix_dir.partition(spec.name, p)
        for i, seg in enumerate(pm.segments):
            active_live = bool(spec.preallocate_active_index) and i == len(pm.segments) - 1
            headers = brute_force_check_indexes(seg, spec.index_interval_bytes, active_live=active_live)
            assert headers, "segments are never empty"
            # a segment's name is the first offset of its first batch (first record for a legacy wrapper)
            assert seg.base_offset <= headers[0].base_offset
            assert seg.size <= spec.segment_bytes or len(headers) == 1


def test_segments_roll_and_index_entries_exist(matrix_dir):
    pm = matrix_dir.partition("m2-none")
    assert len(pm.segments) > 3
    assert sum(s.offset_index_entries for s in pm.segments) > 10
    assert sum(s.time_index_entries for s in pm.segments) > 5
    bases = [s.base_offset for s in pm.segments]
    assert bases == sorted(bases) and bases[0] == 0
    for seg in pm.segments:
        first = next(iter_headers(seg.log_path.read_bytes()))
        assert first.base_offset == seg.base_offset


def test_legacy_wrapper_segment_names_use_first_inner_offset(matrix_dir):
    pm = matrix_dir.partition("m1-gzip")
    assert len(pm.segments) > 1
    for seg in pm.segments:
        batch, records = kafka_python_batches(seg.log_path)[0]
        assert records[0].offset == seg.base_offset


def test_live_active_segment_indexes_are_preallocated(matrix_dir):
    pm = matrix_dir.partition("live")
    active = pm.segments[-1]
    for suffix, entry_size in ((".index", 8), (".timeindex", 12)):
        data = active.log_path.with_suffix(suffix).read_bytes()
        assert len(data) == (4196 // entry_size) * entry_size
        assert data.endswith(bytes(entry_size * 10))
    # inactive segments are trimmed
    for seg in pm.segments[:-1]:
        assert seg.log_path.with_suffix(".index").stat().st_size == seg.offset_index_entries * 8
    assert pm.recovery_point == active.base_offset
    assert (pm.directory / "leader-epoch-checkpoint").read_text() == "0\n1\n5 0\n"
    assert not (pm.directory / f"{pm.log_end_offset:020d}.snapshot").exists()


def test_transactions_txnindex_and_lso(matrix_dir):
    for p in range(2):
        pm = matrix_dir.partition("txn", p)
        per_segment, lso, _ = walk_transactions(pm)
        assert any(per_segment.values()), "aborts expected"
        for seg in pm.segments:
            path = seg.log_path.with_suffix(".txnindex")
            expected = per_segment[seg.base_offset]
            if not expected:
                assert not path.exists()
                continue
            data = path.read_bytes()
            assert len(data) == 34 * len(expected)
            assert [struct.unpack_from(">hqqqq", data, i * 34) for i in range(len(expected))] == expected
        assert pm.last_stable_offset == lso < pm.log_end_offset == pm.high_watermark
        assert len(pm.open_txns) == 2
        # manifest states agree with the markers
        states = {r.txn_state for r in pm.records if not r.is_control}
        assert states == {"committed", "aborted", "open"}
        visible = pm.data_records(read_committed=True)
        assert all(r.txn_state == "committed" and r.offset < lso for r in visible)
        markers = [r for r in pm.records if r.is_control]
        assert {m.control_type for m in markers} == {ControlType.ABORT, ControlType.COMMIT}


def test_producer_snapshots(matrix_dir):
    for name in ("txn", "compacted", "m2-none"):
        pm = matrix_dir.partition(name)
        snaps = sorted(pm.directory.glob("*.snapshot"))
        # one per roll (named after the new segment) plus one at the log end on clean shutdown
        assert [int(s.stem) for s in snaps] == [s.base_offset for s in pm.segments[1:]] + [pm.log_end_offset]
        _, _, producers = walk_transactions(pm)
        entries = {e[0]: e for e in read_snapshot(snaps[-1])}
        assert set(entries) == set(producers)
        for pid, state in producers.items():
            _, epoch, last_seq, last_offset, _, _, _, txn_first = entries[pid]
            assert (epoch, last_seq, last_offset, txn_first) == (state["epoch"], state["last_seq"],
                                                                state["last_offset"], state["txn"])


@pytest.mark.corpus
def test_empty_snapshot_matches_a_real_broker_file(corpus_dir):
    real = next(p for p in sorted((corpus_dir / "segments").rglob("*.snapshot")) if p.stat().st_size == 10)
    assert encode_producer_snapshot([]) == real.read_bytes()


def test_compaction_leftovers(matrix_dir):
    pm = matrix_dir.partition("compacted")
    assert pm.segments[0].base_offset == 1000 and pm.log_start_offset == 1007
    headers = [h for seg in pm.segments for h in iter_headers(seg.log_path.read_bytes())]
    assert any(h.records_count == 0 for h in headers)
    assert any(h.has_delete_horizon for h in headers)
    offsets = [r.offset for r in pm.records]
    assert len(offsets) < offsets[-1] - offsets[0] + 1, "offset gaps expected"
    assert any(r.value is None for r in pm.records)
    assert all(r.offset >= 1007 for r in pm.data_records())
    checkpoints = read_checkpoint(matrix_dir.path / "log-start-offset-checkpoint")
    assert checkpoints == {("compacted", 0): 1007}
    assert read_checkpoint(matrix_dir.path / "cleaner-offset-checkpoint") == {
        ("compacted", 0): pm.segments[-1].base_offset}


def test_log_dir_files(matrix_dir):
    root = matrix_dir.path
    hw = read_checkpoint(root / "replication-offset-checkpoint")
    assert hw == {tp: pm.high_watermark for tp, pm in matrix_dir.partitions.items()}
    rp = read_checkpoint(root / "recovery-point-offset-checkpoint")
    assert rp[("live", 0)] < hw[("live", 0)] and rp[("m2-none", 0)] == hw[("m2-none", 0)]
    props = dict(line.split("=", 1) for line in (root / "meta.properties").read_text().splitlines()
                 if not line.startswith("#"))
    assert props["version"] == "1" and props["node.id"] == "1" and len(props["cluster.id"]) == 22
    for (topic, p), pm in matrix_dir.partitions.items():
        meta = (pm.directory / "partition.metadata").read_text()
        assert meta == f"version: 0\ntopic_id: {matrix_dir.topic_ids[topic]}"
        if pm.magic == 2:
            assert (pm.directory / "leader-epoch-checkpoint").read_text().startswith("0\n1\n")


def test_sample_data_dir_is_realistic_and_decodes(sample):
    total = sum(f.stat().st_size for f in sample.path.rglob("*") if f.is_file())
    assert 1 << 20 < total < 12 << 20
    assert {t.name for t in SAMPLE_TOPICS} == {t for t, _ in sample.partitions}
    codecs_seen, magics = set(), set()
    for pm in sample.partitions.values():
        check_partition_against_kafka_python(pm)
        codecs_seen.add(pm.codec)
        magics.add(pm.magic)
        spec = next(t for t in SAMPLE_TOPICS if t.name == pm.topic)
        for i, seg in enumerate(pm.segments):
            brute_force_check_indexes(seg, spec.index_interval_bytes,
                                      active_live=bool(spec.preallocate_active_index) and i == len(pm.segments) - 1)
    assert codecs_seen == {"none", "gzip", "snappy", "lz4", "zstd"} and magics == {1, 2}
    assert len(sample.partition("orders", 0).segments) > 2
    assert any(r.headers for r in sample.partition("orders", 1).records)
    assert any(r.aborted for r in sample.partition("payments", 0).records)
    assert sample.partition("payments", 0).last_stable_offset < sample.partition("payments", 0).log_end_offset
    assert any(r.timestamp_type == 1 for r in sample.partition("clicks").records)


def _digest(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def test_deterministic_given_seed(tmp_path):
    specs = [TopicSpec("a", records_per_partition=200, codec="gzip", headers=1, ts_jitter_ms=5),
             TopicSpec("b", transactional=True, abort_ratio=0.5, records_per_partition=200, open_transactions=1)]
    write_data_dir(tmp_path / "one", specs, seed=3)
    write_data_dir(tmp_path / "two", specs, seed=3)
    write_data_dir(tmp_path / "three", specs, seed=4)
    assert _digest(tmp_path / "one") == _digest(tmp_path / "two")
    assert _digest(tmp_path / "one") != _digest(tmp_path / "three")


def test_spec_validation(tmp_path):
    for bad in (TopicSpec("x", magic=1, codec="zstd"), TopicSpec("x", magic=1, headers=1),
                TopicSpec("x", magic=3), TopicSpec("x", open_transactions=1),
                TopicSpec("x", magic=0, timestamp_type="LogAppendTime")):
        with pytest.raises(InvalidOptionError):
            write_data_dir(tmp_path / "bad", [bad])
    with pytest.raises(InvalidOptionError):
        write_data_dir(tmp_path / "dup", [TopicSpec("x"), TopicSpec("x")])


def test_never_writes_over_a_log_dir(tmp_path):
    """A sample written into a folder that already is a log dir (a broker's, say) is refused before anything is
    written: its checkpoints and meta.properties stay byte for byte, and so do its partition folders."""
    spec = [TopicSpec("x", records_per_partition=50)]
    write_data_dir(tmp_path / "broker", [TopicSpec("other", records_per_partition=50)])
    before = _digest(tmp_path / "broker")
    with pytest.raises(InvalidOptionError, match="meta.properties.*replication-offset-checkpoint"):
        write_data_dir(tmp_path / "broker", spec)
    assert _digest(tmp_path / "broker") == before
    assert not (tmp_path / "broker" / "x-0").exists()
    (tmp_path / "one-file").mkdir()
    (tmp_path / "one-file" / "cleaner-offset-checkpoint").write_text("0\n0\n")
    with pytest.raises(InvalidOptionError, match="cleaner-offset-checkpoint"):
        sample_data_dir(tmp_path / "one-file")
    write_data_dir(tmp_path / "broker" / "nested", spec)  # a new folder inside one is fine
    (tmp_path / "x-0").mkdir()
    (tmp_path / "x-0" / "00000000000000000000.log").write_bytes(b"")
    with pytest.raises(InvalidOptionError, match="x-0 already exists and is not empty"):
        write_data_dir(tmp_path, spec)


def test_value_generator_and_null_keys(tmp_path):
    spec = TopicSpec("gen", records_per_partition=30, key_size=None,
                     value_generator=lambda rng, partition, index: b"v%d" % index)
    pm = write_data_dir(tmp_path, [spec]).partition("gen")
    actual = check_partition_against_kafka_python(pm)
    assert [a[4] for a in actual] == [b"v%d" % i for i in range(30)]
    assert all(a[3] is None for a in actual)


def test_partition_writer_low_level_raw_batches_and_garbage_tail(tmp_path):
    writer = PartitionWriter(tmp_path / "t-0", segment_bytes=1 << 20, index_interval_bytes=0)
    b1 = build_batch_v2([Record(0, 1000, b"k", b"v"), Record(1, 1005, None, None)], codec="snappy",
                        producer_id=7, producer_epoch=0, base_sequence=0, is_transactional=True)
    writer.append(b1.data)  # raw bytes: facts come from the header
    marker = build_control_batch(2, 1010, ControlType.ABORT, producer_id=7, producer_epoch=0)
    writer.append(marker.data, control_type=ControlType.ABORT, coordinator_epoch=0)
    writer.roll()
    writer.append(build_batch_v2([Record(3, 990, b"late", b"x")]))
    writer.append_raw(b"\x00" * 7)  # a torn tail, as a crash leaves it
    log = writer.close()
    assert [s.base_offset for s in log.segments] == [0, 3]
    assert log.aborted_txns and log.aborted_txns[0].first_offset == 0 and log.aborted_txns[0].last_offset == 2
    assert (tmp_path / "t-0" / "00000000000000000000.txnindex").stat().st_size == 34
    tail = log.segments[-1].log_path.read_bytes()
    mr = MemoryRecords(tail)
    assert mr.next_batch() is not None and mr.valid_bytes() == len(tail) - 7
    assert struct.unpack(">qi", (tmp_path / "t-0" / "00000000000000000000.timeindex").read_bytes()) == (1010, 2)


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_benchmark_segment(tmp_path, codec):
    info = write_benchmark_segment(tmp_path / f"bench-{codec}-0", 1 << 20, batch_bytes=64 * 1024, codec=codec,
                                   value_size=120)
    assert info.size >= 1 << 20 and info.log_path.stat().st_size == info.size
    offsets, count = [], 0
    for batch, records in kafka_python_batches(info.log_path):
        count += len(records)
        offsets.extend(r.offset for r in records[:1] + records[-1:])
    assert count == info.records and offsets[0] == 0 and offsets[-1] == info.last_offset
    assert info.batches > 3

    class Seg:  # shape brute_force_check_indexes expects
        log_path = info.log_path
        base_offset = 0
    brute_force_check_indexes(Seg, 4096, active_live=False)
