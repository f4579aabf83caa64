"""kafkaseg.lookup vs a brute-force ListOffsets over every record (generated dirs with manifests, corpus dirs read
record by record with kafka-python)."""

from __future__ import annotations

import dataclasses
import os
import random
import struct
from pathlib import Path

import pytest
from kafka.record.memory_records import MemoryRecords

from kafkaseg.errors import InvalidOptionError
from kafkaseg.lookup import EARLIEST, LATEST, MAX_TIMESTAMP, PartitionLookup, parse_time_spec
from kafkaseg.storage.layout import discover
from kafkaseg.testing import TopicSpec, write_data_dir

TOPICS = [
    TopicSpec("plain", records_per_partition=2500, segment_bytes=48 * 1024, ts_jitter_ms=0, headers=1),
    TopicSpec("jitter", records_per_partition=2000, segment_bytes=40 * 1024, ts_jitter_ms=40, codec="lz4"),
    TopicSpec("txn", records_per_partition=1500, records_per_batch=10, transactional=True, abort_ratio=0.3,
              open_transactions=1, segment_bytes=32 * 1024),
    TopicSpec("appendtime", records_per_partition=1500, timestamp_type="LogAppendTime", segment_bytes=32 * 1024,
              preallocate_active_index=16 * 1024),
    TopicSpec("compacted", records_per_partition=1500, key_cardinality=50, gap_ratio=0.4, idempotent=True,
              cleanup_policy="compact", segment_bytes=24 * 1024, log_start_offset=100, log_start_advance=37),
    TopicSpec("legacy", records_per_partition=800, magic=1, codec="gzip", segment_bytes=12 * 1024),
]


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    root = tmp_path_factory.mktemp("lookup")
    manifest = write_data_dir(root, TOPICS, seed=7)
    return manifest, {(p.topic, p.partition): p for p in discover(str(root))}


def _segments_of(records, bases):
    """Records grouped by segment ([base, next base))."""
    groups = [[] for _ in bases]
    for r in records:
        i = max(k for k, b in enumerate(bases) if b <= r.offset or k == 0)
        groups[i].append(r)
    return groups


def brute_force(records, bases, log_start, fetchable, spec):
    """UnifiedLog.fetchOffsetByTimestamp + ReplicaManager's last-fetchable filter, record by record.
    ``records``: (offset, timestamp) of every record incl. control records, in offset order."""
    if spec == EARLIEST:
        return log_start
    if spec == LATEST:
        return fetchable
    groups = _segments_of(records, bases)
    if spec == MAX_TIMESTAMP:
        best = max(range(len(groups)), key=lambda i: (max((r.timestamp for r in groups[i]), default=-1), -i))
        top = max(r.timestamp for r in groups[best])
        found = next(r.offset for r in groups[best] if r.timestamp == top)
    else:
        found = None
        for group in groups:
            if group and max(r.timestamp for r in group) >= spec:
                found = next((r.offset for r in group if r.timestamp >= spec and r.offset >= log_start), None)
                break
    return None if found is None or found >= fetchable else found


def _specs(records, rng, n=25):
    stamps = sorted({r.timestamp for r in records})
    taken = set(stamps)
    specs = [EARLIEST, LATEST, MAX_TIMESTAMP, 0, stamps[-1] + 1]
    for _ in range(n):  # between record timestamps (never equal: see FileRecords.searchForTimestamp's floor)
        t = rng.choice(stamps) + rng.choice([1, -1, 3])
        if t not in taken:
            specs.append(t)
    return specs


@pytest.mark.parametrize("topic", [t.name for t in TOPICS])
@pytest.mark.parametrize("isolation", ["read_uncommitted", "read_committed"])
def test_list_offset_matches_brute_force_on_generated_dirs(generated, topic, isolation):
    manifest, partitions = generated
    pm = manifest.partition(topic)
    pdir = partitions[(topic, 0)]
    bases = [s.base_offset for s in pdir.segments]
    assert len(bases) > 3, "the test needs several segments"
    fetchable = pm.last_stable_offset if isolation == "read_committed" else pm.high_watermark
    rng = random.Random(topic)
    with PartitionLookup(pdir, isolation=isolation) as lookup:
        for spec in _specs(pm.records, rng):
            expected = brute_force(pm.records, bases, pm.log_start_offset, fetchable, spec)
            for exact in (False, True):
                answer = lookup.list_offset(spec, exact=exact)
                assert answer.offset == expected, (topic, isolation, spec, exact, answer)


def test_locate_every_kind_of_offset(generated):
    manifest, partitions = generated
    pm = manifest.partition("compacted")
    pdir = partitions[("compacted", 0)]
    present = {r.offset: r for r in pm.records}
    with PartitionLookup(pdir) as lookup:
        for offset in range(pm.log_start_offset, pm.log_end_offset):
            location = lookup.locate(offset)
            nxt = min(o for o in present if o >= offset)
            assert location.record_offset == nxt, offset
            assert location.found == (offset in present)
            assert location.batch.base_offset <= nxt <= location.batch.last_offset
            assert location.record_timestamp == present[nxt].timestamp
            assert Path(location.segment).name == f"{max(b for b in (s.base_offset for s in pdir.segments) if b <= nxt):020d}.log"
        below = lookup.locate(pm.log_start_offset - 1)
        assert not below.found and "below the log start offset" in below.reason
        past = lookup.locate(pm.log_end_offset)
        assert not past.found and past.batch is None


def test_lookup_touches_log_n_entries(generated):
    """A time lookup reads O(log n) index entries: here far fewer than the partition's index entries."""
    manifest, partitions = generated
    pdir = partitions[("plain", 0)]
    pm = manifest.partition("plain")
    total_entries = 0
    for seg in pdir.segments:
        total_entries += (Path(seg.index_path).stat().st_size // 8) + (Path(seg.timeindex_path).stat().st_size // 12)
    with PartitionLookup(pdir) as lookup:
        answer = lookup.list_offset(pm.records[len(pm.records) // 2].timestamp + 1)
        assert answer.offset is not None
        assert lookup.stats.index_entries < 40 < total_entries
        assert lookup.stats.log_bytes < 3 * 4096 + 61 * 200


def test_parse_time_spec_refuses_times_past_64_bits():
    assert parse_time_spec(str(2**63 - 1)) == 2**63 - 1
    for value in (str(2**63), 2**63, "99999999999999999999"):
        with pytest.raises(InvalidOptionError, match="64-bit"):
            parse_time_spec(value)


def test_parse_time_spec():
    assert [parse_time_spec(x) for x in ("-1", "latest", "-2", "earliest", "max-timestamp", "-3")] == \
        [-1, -1, -2, -2, -3, -3]
    assert parse_time_spec("1700000000000") == 1_700_000_000_000
    assert parse_time_spec("2023-11-14T22:13:20Z") == 1_700_000_000_000
    assert parse_time_spec("2023-11-14T23:13:20+01:00") == 1_700_000_000_000
    assert parse_time_spec("2023-11-14 22:13:20.5") == 1_700_000_000_500
    assert [parse_time_spec(x) for x in ("-4", "earliest-local", "-5", "latest-tiered", "-6",
                                         "earliest-pending-upload")] == [-4, -4, -5, -5, -6, -6]
    for bad in ("yesterday", "-7"):
        with pytest.raises(InvalidOptionError):
            parse_time_spec(bad)


# -- corpus ---------------------------------------------------------------------------------------------------------

class _Rec:
    def __init__(self, offset, timestamp):
        self.offset, self.timestamp = offset, timestamp


def _corpus_records(pdir):
    out = []
    for seg in pdir.segments:
        records = MemoryRecords(Path(seg.log_path).read_bytes())
        while (batch := records.next_batch()) is not None:
            for record in batch:
                out.append(_Rec(record.offset, -1 if record.timestamp is None else record.timestamp))
    return out


CORPUS_DIRS = [
    "segments/smartassets__backend-server/51801d05/kafka/data",
    "segments/RaviAzzuraPutra__LATIHAN-MICROSERVICE-NEW/f8f5c464/kafka/data/__cluster_metadata-0",
    "segments/mscaldas2012__kafka-connect-spooldir/d7b17b06/kafka-data",
]


@pytest.mark.corpus
@pytest.mark.parametrize("where", CORPUS_DIRS)
def test_list_offset_matches_brute_force_on_corpus(corpus_dir, where):
    rng = random.Random(where)
    checked = 0
    for pdir in discover(str(corpus_dir / where)):
        if not pdir.size_bytes:
            continue
        records = _corpus_records(pdir)
        if not records:
            continue
        bases = [s.base_offset for s in pdir.segments]
        with PartitionLookup(pdir) as lookup:
            fetchable = lookup.last_fetchable_offset()
            assert fetchable <= lookup.log_end_offset()
            for spec in _specs(records, rng, n=8):
                expected = brute_force(records, bases, lookup.log_start_offset, fetchable, spec)
                assert lookup.list_offset(spec, exact=True).offset == expected, (pdir.name, spec)
                assert lookup.list_offset(spec).offset == expected, (pdir.name, spec)
                checked += 1
    assert checked > 10


def test_bench_lookup_quick_runs(tmp_path):
    """benchmarks/bench_lookup.py end to end (--quick): its modes agree with each other and it prints a verdict."""
    import os
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[1]
    env = dict(os.environ, TMPDIR=str(tmp_path), PYTHONPATH=str(root))
    proc = subprocess.run([sys.executable, str(root / "benchmarks/bench_lookup.py"), "--quick", "--no-planning"],
                          capture_output=True, text=True, env=env, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    assert "verdict: time lookup median" in proc.stdout


# --- files that disagree: answers come from the log, as after the broker's recovery ---------------------------------
def _copy_partition_dir(tmp_path):
    """One partition, 2000 records in 20-record batches, 64 KiB segments, preallocated active indexes (a live
    broker's)."""
    root = tmp_path / "dir"
    write_data_dir(root, [TopicSpec("t", partitions=1, records_per_partition=2000, records_per_batch=20,
                                    segment_bytes=64 * 1024, preallocate_active_index=64 * 1024)], seed=3)
    return root


def _lookup(root, **kw):
    (pdir,) = discover(str(root))
    return PartitionLookup(pdir, **kw)


def _records_on_disk(root):
    """(offset, timestamp) of every record kafka-python reads from the partition's logs, stopping at a bad batch."""
    out = []
    for log in sorted((root / "t-0").glob("*.log")):
        records = MemoryRecords(log.read_bytes())
        while (batch := records.next_batch()) is not None:
            if not batch.validate_crc():
                return out
            out.extend((r.offset, r.timestamp) for r in batch)
    return out


def test_an_index_running_ahead_of_a_truncated_log_is_rebuilt(tmp_path):
    """A copy of an active segment taken after its indexes were flushed but with the log cut short: the index and
    time index hold entries for records that are not there. The broker's recovery rebuilds them from the log."""
    root = _copy_partition_dir(tmp_path)
    active = sorted((root / "t-0").glob("*.log"))[-1]
    size = active.stat().st_size
    with open(active, "r+b") as fh:  # cut at a batch boundary about 60% in
        data = fh.read()
        batches, pos = [], 0
        while pos < len(data):
            batches.append(pos)
            pos += 12 + int.from_bytes(data[pos + 8:pos + 12], "big")
        fh.truncate(batches[len(batches) * 3 // 5])
    assert active.stat().st_size < size
    records = _records_on_disk(root)
    last_offset, last_ts = records[-1]
    with _lookup(root) as lookup:
        assert lookup.log_end_offset() == last_offset + 1
        assert lookup.list_offset(LATEST).offset == last_offset + 1  # HW above the log end: capped
        top = max(ts for _, ts in records)
        assert lookup.list_offset(MAX_TIMESTAMP).offset == next(o for o, ts in records if ts == top)
        assert lookup.list_offset(last_ts).offset == next(o for o, ts in records if ts >= last_ts)
        assert lookup.list_offset(last_ts + 1).offset is None
        assert any("stale index" in why for _, why in lookup.stats.rebuilt_indexes)


def _tear_last_batch(root):
    """Zero the second half of the active segment's last batch (its header stays whole, its CRC fails)."""
    active = sorted((root / "t-0").glob("*.log"))[-1]
    data = active.read_bytes()
    pos = last = 0
    while pos < len(data):
        last = pos
        pos += 12 + int.from_bytes(data[pos + 8:pos + 12], "big")
    torn_base = int.from_bytes(data[last:last + 8], "big")
    with open(active, "r+b") as fh:
        fh.seek(last + (pos - last) // 2)
        fh.write(bytes(pos - (last + (pos - last) // 2)))
    return torn_base


def test_a_torn_batch_past_the_high_watermark_ends_the_log_as_recovery_would(tmp_path):
    import re

    root = _copy_partition_dir(tmp_path)
    torn_base = _tear_last_batch(root)
    ckpt = root / "replication-offset-checkpoint"  # the torn batch was never acknowledged
    ckpt.write_text(re.sub(r"^t 0 \d+", f"t 0 {torn_base}", ckpt.read_text(), flags=re.M))
    records = _records_on_disk(root)  # kafka-python stops at the bad CRC
    assert records[-1][0] == torn_base - 1
    with _lookup(root) as lookup:
        assert lookup.log_end_offset() == torn_base
        assert lookup.list_offset(LATEST).offset == torn_base
        top = max(ts for _, ts in records)
        assert lookup.list_offset(MAX_TIMESTAMP).offset == next(o for o, ts in records if ts == top)
        answer = lookup.list_offset(records[-1][1] + 1)  # only the torn batch's records could match
        assert answer.offset is None


def test_a_torn_batch_below_the_high_watermark_is_an_error(tmp_path):
    from kafkaseg.errors import CrcMismatchError

    root = _copy_partition_dir(tmp_path)  # high watermark 2000: the torn batch was acknowledged
    _tear_last_batch(root)
    with _lookup(root) as lookup, pytest.raises(CrcMismatchError) as info:
        lookup.list_offset(MAX_TIMESTAMP)
    assert info.value.path.endswith(".log")


@pytest.mark.parametrize("name,spec", [("replication-offset-checkpoint", LATEST),
                                       ("log-start-offset-checkpoint", EARLIEST)])
def test_an_unreadable_bounding_checkpoint_is_an_error_not_a_fallback(tmp_path, name, spec):
    from kafkaseg.errors import CorruptCheckpointError

    root = _copy_partition_dir(tmp_path)
    (root / name).write_text("0\n1\nt 0 19x3\n")
    with _lookup(root) as lookup:
        with pytest.raises(CorruptCheckpointError, match=name):
            lookup.list_offset(spec)
        with pytest.raises(CorruptCheckpointError, match=name):
            lookup.list_offset(1_700_000_000_000)
    other = LATEST if spec == EARLIEST else EARLIEST
    with _lookup(root) as lookup:
        assert lookup.list_offset(other).offset is not None


def test_an_empty_segment_ends_a_timestamp_search_as_on_a_broker_and_says_so(tmp_path):
    """UnifiedLog.fetchOffsetByTimestamp commits to the first segment whose largestTimestamp reaches the target;
    an empty segment's is its file's mtime (LogSegment.largestTimestamp), so the search ends there empty. kafkaseg
    keeps that answer (it is what Spark's Kafka source gets) and says why."""
    import kafkaseg
    from kafkaseg.testing import PartitionWriter, Record, build_batch_v2

    writer = PartitionWriter(tmp_path / "e-0")
    offset, ts = 0, 1_700_000_000_000
    for n in (30, 0, 30):
        for _ in range(n // 10):
            writer.append(build_batch_v2([Record(offset + i, ts + i, None, b"v", []) for i in range(10)],
                                         base_offset=offset))
            offset, ts = offset + 10, ts + 10
        if n == 0:
            offset += 5
        writer.roll(offset)
    writer.close()
    with _lookup(tmp_path) as lookup:
        assert lookup.list_offset(1_700_000_000_005).offset == 5  # before the empty segment: found
        answer = lookup.list_offset(1_700_000_000_035)
        assert answer.offset is None and "has no timestamped batch" in answer.reason
    with pytest.raises(InvalidOptionError, match="no timestamped batch"):
        kafkaseg.read_arrow(str(tmp_path), startingTimestamp=1_700_000_000_035)


def test_a_rolled_segment_whose_time_index_is_empty_stops_a_timestamp_search_and_the_reason_says_why(tmp_path):
    """A rolled segment with timestamped batches but an empty ``.timeindex`` (a segment older than time indexes, or
    an emptied file; found by fuzzing) has the broker's largest timestamp of an empty one, its file's mtime
    (``TimeIndex.lastEntry`` of no entry is -1), so the search stops there as on a broker. The reason said the
    segment "has no timestamped batch", which sends an operator to the wrong file: it has; its time index has no
    entry."""
    import kafkaseg
    from kafkaseg.testing import PartitionWriter, Record, build_batch_v2

    writer = PartitionWriter(tmp_path / "e-0")
    offset, ts = 0, 1_700_000_000_000
    for _ in range(3):
        for _ in range(3):
            writer.append(build_batch_v2([Record(offset + i, ts + i, None, b"v", []) for i in range(10)],
                                         base_offset=offset))
            offset, ts = offset + 10, ts + 10
        writer.roll(offset)
    writer.close()
    (tmp_path / "e-0" / "00000000000000000030.timeindex").write_bytes(b"")
    with _lookup(tmp_path) as lookup:
        assert lookup.list_offset(1_700_000_000_005).offset == 5  # before the segment: found
        answer = lookup.list_offset(1_700_000_000_065)
        assert answer.offset is None
        assert "00000000000000000030" in answer.reason and ".timeindex has no entry" in answer.reason
        assert "no timestamped batch" not in answer.reason
    with pytest.raises(InvalidOptionError, match=r"\.timeindex has no entry"):
        kafkaseg.read_arrow(str(tmp_path), startingTimestamp=1_700_000_000_065)


def test_a_record_from_a_clock_running_ahead_is_found_as_the_broker_finds_it(tmp_path):
    """One record stamped in 2100 in segment 2 of 7 makes every later segment's largest timestamp lower than
    segment 2's. The broker takes the FIRST segment whose largest timestamp reaches T (a linear scan), so
    ListOffsets(T), and Spark's startingTimestamp, land on that record; a binary search over segments probing
    others answered from segment 5."""
    import kafkaseg
    from kafkaseg.testing import PartitionWriter, Record, build_batch_v2

    t0 = 1_700_000_000_000
    writer = PartitionWriter(tmp_path / "skew-0")
    for seg in range(7):
        if seg:
            writer.roll(seg * 100)
        for b in range(4):
            base = seg * 100 + b * 5
            records = [Record(base + i, t0 + seg * 100_000 + b * 1000 + i, b"k", b"v", []) for i in range(5)]
            if (seg, b) == (2, 1):
                records[2] = Record(base + 2, 4_102_444_800_000, b"k", b"v", [])
            writer.append(build_batch_v2(records, base_offset=base))
    writer.close()
    target = t0 + 450_000
    with _lookup(tmp_path) as lookup:
        assert lookup.list_offset(target).offset == 207
        assert lookup.offset_for_timestamp(target) == 207
    table = kafkaseg.read_arrow(str(tmp_path), startingTimestamp=target)
    assert table["offset"][0].as_py() == 207 and table.num_rows == 13 + 4 * 20  # 207..219, then segments 3-6


def test_a_tiered_topics_log_start_below_the_first_local_segment(tmp_path, capsys):
    """Kafka checkpoints a tiered topic's log start even below its first local segment (it writes an entry only with
    remote storage on or a start above the first segment), but a checkpoint older than a retention deletion looks
    the same: earliest and reads start at the first local segment with a note saying both, and a start in between
    is not called "gone"."""
    import kafkaseg
    from kafkaseg.errors import DataLossError
    from kafkaseg.testing import PartitionWriter, Record, build_batch_v2
    from kafkaseg.testing.partition import write_offset_checkpoint

    writer = PartitionWriter(tmp_path / "tiered-0", log_start_offset=500)
    writer.append(build_batch_v2([Record(500 + i, 1_700_000_000_000 + i, None, b"v", []) for i in range(10)],
                                 base_offset=500))
    writer.close()
    write_offset_checkpoint(tmp_path / "log-start-offset-checkpoint", {("tiered", 0): 100})
    with _lookup(tmp_path) as lookup:  # a tiered topic's broker answers 100, another's 500: the files hold 500
        assert lookup.list_offset(EARLIEST).offset == 500
        assert lookup.list_offset(-4).offset == 500
    scan = kafkaseg.open_scan(str(tmp_path))
    assert scan.to_table()["offset"][0].as_py() == 500
    assert any("[100, 500) are not in these files" in n and "tiered" in n for n in scan.plan.report.partitions[0].notes)
    with pytest.raises(DataLossError, match=r"below the first local offset 500.*for a tiered topic they are in remote"
                       ) as lost:
        kafkaseg.read_arrow(str(tmp_path), startingOffsets='{"tiered":{"0":200}}')
    # a start at 200 misses [200, 500), not the checkpoint's whole [100, 500) (still named as what it says)
    assert "offsets [200, 500) are not in these files" in str(lost.value)
    assert "log-start-offset-checkpoint says 100" in str(lost.value)
    with pytest.raises(DataLossError, match=r"offsets \[50, 500\) are gone"):
        kafkaseg.read_arrow(str(tmp_path), startingOffsets='{"tiered":{"0":50}}')
    from kafkaseg.cli.main import main

    for spec in ("-2", "0"):  # a tiered topic's broker also searches its remote segments for these
        assert main(["offsets", "--data-dir", str(tmp_path), "--topic", "tiered", "--time", spec, "-v"]) == 0
        assert "[100, 500) are not in these files" in capsys.readouterr().err, spec
    # not for -3: the broker answers it from its local log only, as these files do
    assert main(["offsets", "--data-dir", str(tmp_path), "--topic", "tiered", "--time", "-3", "-v"]) == 0
    assert "not in these files" not in capsys.readouterr().err


@pytest.mark.parametrize("time_index", ["missing", "with an entry for the torn batch"])
def test_a_torn_batch_is_no_record_even_where_the_time_index_describes_it(tmp_path, time_index):
    """A rebuilt time index (every header, the torn one included) or a copy taken mid-write can hold an entry for
    the torn batch; -3 must still answer from the records before it, as after the broker's recovery."""
    import re
    import struct

    root = _copy_partition_dir(tmp_path)
    torn_base = _tear_last_batch(root)
    ckpt = root / "replication-offset-checkpoint"
    ckpt.write_text(re.sub(r"^t 0 \d+", f"t 0 {torn_base}", ckpt.read_text(), flags=re.M))
    active = sorted((root / "t-0").glob("*.timeindex"))[-1]
    if time_index == "missing":
        active.unlink()
    else:
        entries = active.read_bytes().rstrip(b"\0")
        entries += b"\0" * (-len(entries) % 12)
        base = int(active.stem)
        active.write_bytes(entries + struct.pack(">qi", 1_900_000_000_000, torn_base + 3 - base))
    records = _records_on_disk(root)
    top = max(ts for _, ts in records)
    with _lookup(root) as lookup:
        assert lookup.list_offset(MAX_TIMESTAMP).offset == next(o for o, ts in records if ts == top)
        assert lookup.list_offset(records[-1][1]).offset == next(o for o, ts in records if ts >= records[-1][1])


def test_a_torn_batch_holding_acknowledged_offsets_is_an_error(tmp_path):
    import re

    from kafkaseg.errors import CrcMismatchError

    root = _copy_partition_dir(tmp_path)
    torn_base = _tear_last_batch(root)
    ckpt = root / "replication-offset-checkpoint"  # the high watermark inside the torn batch
    ckpt.write_text(re.sub(r"^t 0 \d+", f"t 0 {torn_base + 2}", ckpt.read_text(), flags=re.M))
    with _lookup(root) as lookup, pytest.raises(CrcMismatchError):
        lookup.list_offset(MAX_TIMESTAMP)


@pytest.mark.parametrize("locate_first", [False, True])
def test_a_rolled_segment_cut_short_under_its_indexes_answers_from_the_log(tmp_path, locate_first):
    """A copy taken across a roll: a rolled segment's .log is short, its .index/.timeindex final. Answers come from
    the log whichever index is opened first."""
    root = _copy_partition_dir(tmp_path)
    rolled = sorted((root / "t-0").glob("*.log"))[-2]
    data = rolled.read_bytes()
    starts, pos = [], 0
    while pos < len(data):
        starts.append(pos)
        pos += 12 + int.from_bytes(data[pos + 8:pos + 12], "big")
    with open(rolled, "r+b") as fh:
        fh.truncate(starts[len(starts) * 3 // 5])
    records = _records_on_disk(root)
    cut_last = max(o for o, _ in records if o < int(sorted((root / "t-0").glob("*.log"))[-1].stem))
    with _lookup(root) as lookup:
        if locate_first:
            lookup.locate(int(rolled.stem) + 1)
        for spec in (next(ts for o, ts in records if o == cut_last) + 1, MAX_TIMESTAMP):
            if spec == MAX_TIMESTAMP:
                top = max(ts for _, ts in records)
                expected = next(o for o, ts in records if ts == top)
            else:
                expected = next(o for o, ts in records if ts >= spec)
            assert lookup.list_offset(spec).offset == expected, spec


def test_a_rolled_segment_cut_within_its_last_index_interval_answers_from_the_log(tmp_path):
    """Its .index passes (every entry lies inside the file) but its .timeindex's roll-time entry names a lost batch:
    a search that comes back empty there checks the time index against the log and searches again."""
    root = _copy_partition_dir(tmp_path)
    rolled = sorted((root / "t-0").glob("*.log"))[-2]
    data = rolled.read_bytes()
    last, pos = 0, 0
    while pos < len(data):
        last = pos
        pos += 12 + int.from_bytes(data[pos + 8:pos + 12], "big")
    with open(rolled, "r+b") as fh:
        fh.truncate(last)  # only the final batch is lost
    index = rolled.with_suffix(".index")  # keep the .index consistent with the shorter log: only the time index lies
    entries = index.read_bytes()
    index.write_bytes(b"".join(entries[k:k + 8] for k in range(0, len(entries), 8)
                               if int.from_bytes(entries[k + 4:k + 8], "big") < last))
    records = _records_on_disk(root)
    next_base = int(sorted((root / "t-0").glob("*.log"))[-1].stem)
    kept = [ts for o, ts in records if o < next_base]
    spec = max(kept) + 1  # only the lost batch's records (and later segments') reach it
    with _lookup(root) as lookup:
        assert lookup.list_offset(spec).offset == next(o for o, ts in records if ts >= spec)
        assert any("stale index" in why for _, why in lookup.stats.rebuilt_indexes)


def test_a_rolled_segment_of_timestamp_zero_records_keeps_its_lone_time_entry(tmp_path):
    """TimeIndex.maybeAppend at roll writes (largest timestamp, its offset): for a segment whose records all have
    timestamp 0 that is the all-zero entry (0, base). It is real, so the segment's largest timestamp is 0, not its
    mtime, and a search for a later time goes on to the next segment (found in review)."""
    from kafkaseg.testing import PartitionWriter, Record, build_batch_v2

    writer = PartitionWriter(tmp_path / "t-0")
    for i in range(5):
        writer.append(build_batch_v2([Record(i, 0, b"k", b"v" * 50, [])]))
    writer.roll()
    for i in range(5, 10):
        writer.append(build_batch_v2([Record(i, 1000 + i, b"k", b"v" * 50, [])]))
    writer.close()
    first = sorted((tmp_path / "t-0").glob("*.timeindex"))[0]
    assert first.read_bytes() == b"\0" * 12
    with _lookup(tmp_path) as lookup:
        assert lookup.list_offset(500).offset == 5
        assert lookup.list_offset(1007).offset == 7


def test_a_lookup_over_many_segments_keeps_few_index_files_open(tmp_path):
    """The broker's linear scan reads every segment's time index up to the answer: with thousands of segments one
    descriptor each would exceed ulimit -n, so a lookup keeps at most OpenFileLimit.limit index files open and
    reopens a closed one when it is read again. Answers are the same."""
    from kafkaseg.storage.probed_index import OpenFileLimit

    write_data_dir(tmp_path, [TopicSpec("q", records_per_partition=1200, records_per_batch=2, value_size=100,
                                        segment_bytes=1000)])
    (pdir,) = discover(str(tmp_path))
    assert len(pdir.segments) > 100
    times = [1_700_000_000_000 + 10 * k for k in range(0, 1200, 37)]
    with PartitionLookup(pdir) as lookup:
        expected = [lookup.list_offset(t).offset for t in times]
    with PartitionLookup(pdir) as lookup:
        lookup._open_files = OpenFileLimit(4)
        got = []
        for t in times:
            got.append(lookup.list_offset(t).offset)
            assert sum(1 for i in lookup._indexes.values() if getattr(i, "reader", None) is not None) <= 4
        assert got == expected and lookup.stats.files_opened > len(pdir.segments)


def test_a_suspended_index_replaced_meanwhile_is_an_error_not_other_entries(tmp_path):
    """An index closed by the open-file limit and reopened by name must still be the file the lookup read: a file
    the broker swapped in meanwhile would answer with another segment's entries."""
    import shutil

    from kafkaseg.errors import LayoutError
    from kafkaseg.storage.probed_index import OpenFileLimit

    write_data_dir(tmp_path, [TopicSpec("q", records_per_partition=400, records_per_batch=2, value_size=100,
                                        segment_bytes=1000)])
    (pdir,) = discover(str(tmp_path))
    last = 1_700_000_000_000 + 10 * 399
    with PartitionLookup(pdir) as lookup:
        lookup._open_files = OpenFileLimit(2)
        assert lookup.list_offset(last).offset == 399  # every time index read; the first ones suspended
        first = pdir.segments[0].timeindex_path
        shutil.copy(first, first + ".new")
        os.replace(first + ".new", first)
        with pytest.raises(LayoutError, match="was replaced while a lookup used it"):
            lookup._index(0, "time")._raw(0)  # a read that reaches the file (entries read before are cached)


# --- timestamps the Arrow decoder cannot hold: lookups compare Kafka's raw millisecond longs --------------------------
NANOS = 1_700_000_000_000_000_000  # a producer sending nanoseconds: beyond the decoder's microsecond column


def _far_future_partition(root, layout):
    """Partition f-0: offsets 0-4 stamped t0+i, then 5-7 stamped t0+5, NANOS, t0+7 in one batch (or, for the
    legacy layouts, entries) written as ``layout`` says; then 8-9 stamped t0+8, t0+9 in a rolled segment."""
    from kafkaseg.testing import LOG_APPEND_TIME, PartitionWriter, Record, build_batch_v2
    from kafkaseg.testing import build_legacy_entries, build_legacy_wrapper

    t0 = 1_700_000_000_000
    writer = PartitionWriter(root / "f-0")
    writer.append(build_batch_v2([Record(i, t0 + i, b"k", b"v", []) for i in range(5)], base_offset=0))
    middle = [Record(5, t0 + 5, b"k", b"v", []), Record(6, NANOS, b"key", b"value", []),
              Record(7, t0 + 7, None, b"vv", [])]
    if layout == "v1-gzip-wrapper":
        writer.append(build_legacy_wrapper(middle, 1, "gzip"))
    elif layout == "v1-entries":
        for entry in build_legacy_entries(middle, 1):
            writer.append(entry)
    elif layout == "log-append-time":  # the broker's clock, in nanoseconds: every record of the batch has it
        writer.append(build_batch_v2(middle, timestamp_type=LOG_APPEND_TIME, log_append_time=NANOS))
    else:
        writer.append(build_batch_v2(middle, codec=layout))
    writer.roll(8)
    writer.append(build_batch_v2([Record(i, t0 + i, b"k", b"v", []) for i in (8, 9)], base_offset=8))
    writer.close()
    return t0


@pytest.mark.parametrize("layout", ["none", "lz4", "gzip", "v1-gzip-wrapper", "v1-entries", "log-append-time"])
def test_a_record_stamped_in_nanoseconds_is_found_as_kafka_finds_it(tmp_path, layout):
    """FileRecords.searchForTimestamp compares raw longs: a record stamped 1.7e18 "ms" is the max-timestamp answer
    and the answer for any time between the others and it. The Arrow decoder refuses such a batch (its timestamp
    column is microseconds); lookups read it with batch_records and answer as the broker does."""
    t0 = _far_future_partition(tmp_path, layout)
    appended = layout == "log-append-time"
    with _lookup(tmp_path) as lookup:
        top = lookup.list_offset(MAX_TIMESTAMP)
        assert (top.offset, top.timestamp) == ((5, NANOS) if appended else (6, NANOS))
        answer = lookup.list_offset(1_700_000_000_000_001)
        assert (answer.offset, answer.timestamp) == ((5, NANOS) if appended else (6, NANOS))
        assert lookup.list_offset(t0 + 6).offset == (5 if appended else 6)
        assert lookup.list_offset(t0 + 3).offset == 3
        assert lookup.list_offset(NANOS + 1).offset is None
        location = lookup.locate(6)
        assert location.found and location.record_timestamp == NANOS
        assert (location.key_size, location.value_size) == (3, 5)
        nulls = lookup.locate(7)
        assert nulls.found and nulls.key_size is None and nulls.value_size == 2
        assert nulls.record_timestamp == (NANOS if appended else t0 + 7)


def test_a_corrupt_batch_holding_a_nanosecond_stamp_is_still_an_error(tmp_path):
    """The batch the decoder refuses is checked by batch_records as the decoder checks it: a flipped value byte
    is a CRC mismatch at the batch's position, not an answer."""
    from kafkaseg.errors import CrcMismatchError

    _far_future_partition(tmp_path, "none")
    log = tmp_path / "f-0" / "00000000000000000000.log"
    data = bytearray(log.read_bytes())
    second = 12 + int.from_bytes(data[8:12], "big")
    data[-3] ^= 0xFF  # inside the last record's value
    log.write_bytes(bytes(data))
    with _lookup(tmp_path) as lookup, pytest.raises(CrcMismatchError) as info:
        lookup.locate(6)
    assert info.value.path == str(log) and info.value.position == second


def test_batch_records_reads_what_the_decoder_reads(generated):
    """Where both can read a batch, batch_records (the lookups' reader for batches the decoder refuses) gives the
    decoder's offsets, millisecond timestamps and key/value sizes: every batch of every generated topic (v2 plain,
    lz4, transactional with control batches, LogAppendTime, compacted, legacy gzip wrappers)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from kafkaseg.decode import decode
    from kafkaseg.decode.api import DecodeRequest
    from kafkaseg.wire.records import batch_records
    from kafkaseg.wire.batch import iter_headers

    _, pdirs = generated
    batches = 0
    for pdir in pdirs.values():
        for seg in pdir.segments:
            data = Path(seg.log_path).read_bytes()
            for header in iter_headers(data):
                got = batch_records(data, header, path=seg.log_path)
                batch = memoryview(data)[header.position:header.end]
                cols = decode(batch, DecodeRequest(include_control=True)).columns
                want = (cols["offset"].to_pylist(),
                        [us // 1000 for us in cols["timestamp"].cast(pa.int64()).to_pylist()],
                        pc.binary_length(cols["key"]).to_pylist(), pc.binary_length(cols["value"]).to_pylist())
                assert got == want, (seg.log_path, header.position)
                batches += 1
    assert batches > 500


def test_an_index_entry_pointing_past_its_offset_is_rebuilt_not_walked_past(tmp_path):
    """An entry can pass Kafka's sanity checks and still point at a batch that starts above it: a walk from there
    missed the records between, so timestamp searches (and startingTimestamp reads) and locate started late."""
    import struct

    import kafkaseg

    write_data_dir(tmp_path, [TopicSpec("t", records_per_partition=300, records_per_batch=10, segment_bytes=8192,
                                        index_interval_bytes=1024, start_timestamp_ms=1_700_000_000_000)])
    pdir = discover(str(tmp_path))[0]
    clean = {}
    with PartitionLookup(pdir) as lookup:
        for ts in range(1_700_000_000_000, 1_700_000_003_000, 37):
            clean[ts] = lookup.list_offset(ts).offset
        located = {o: lookup.locate(o).record_offset for o in range(0, 300, 7)}
    seg = pdir.segments[1]
    data = bytearray(open(seg.index_path, "rb").read())
    assert struct.unpack(">ii", data[8:16])[1] > 0
    data[8:12] = struct.pack(">i", 0)  # the second entry's offset becomes the segment base: still sane
    open(seg.index_path, "wb").write(bytes(data))
    with PartitionLookup(discover(str(tmp_path))[0]) as lookup:
        assert {ts: lookup.list_offset(ts).offset for ts in clean} == clean
        assert {o: lookup.locate(o).record_offset for o in located} == located
        assert any(path == seg.log_path for path, _ in lookup.stats.rebuilt_indexes)
    for ts, offset in clean.items():
        if offset is not None and seg.base_offset <= offset < pdir.segments[2].base_offset:
            got = kafkaseg.read_arrow(str(tmp_path), startingTimestamp=str(ts)).column("offset")[0].as_py()
            assert got == offset


def test_an_index_entry_pointing_into_a_batch_is_rebuilt_not_blamed_on_the_log(tmp_path):
    """An entry moved into the middle of a batch still passes Kafka's sanity checks; the walk from it failed with
    an 'unknown magic' error naming the healthy .log."""
    import struct

    write_data_dir(tmp_path, [TopicSpec("t", records_per_partition=300, records_per_batch=10, segment_bytes=1 << 20,
                                        index_interval_bytes=1024, start_timestamp_ms=1_700_000_000_000)])
    pdir = discover(str(tmp_path))[0]
    with PartitionLookup(pdir) as lookup:
        clean = {o: lookup.locate(o).record_offset for o in range(0, 300, 7)}
        times = {ts: lookup.list_offset(ts).offset for ts in range(1_700_000_000_000, 1_700_000_003_000, 97)}
    seg = pdir.segments[0]
    pristine = open(seg.index_path, "rb").read()
    relative, position = struct.unpack(">ii", pristine[8:16])
    # 100 bytes in: garbage; 6-8 bytes in: record bytes that parse as a legacy header (a CRC error, or a size past
    # the end) -- every one found in review
    for delta in (6, 7, 8, 100):
        data = bytearray(pristine)
        data[8:16] = struct.pack(">ii", relative, position + delta)
        open(seg.index_path, "wb").write(bytes(data))
        with PartitionLookup(discover(str(tmp_path))[0]) as lookup:
            assert {o: lookup.locate(o).record_offset for o in clean} == clean, delta
            assert {ts: lookup.list_offset(ts).offset for ts in times} == times, delta
            assert any("batch there" in why for _, why in lookup.stats.rebuilt_indexes), delta


@pytest.mark.parametrize("epochs, earliest, latest", [
    ([(0, 0), (3, 90), (5, 150), (9, 400)], 3, 5),  # the log start in epoch 3's range; epoch 9 starts past the end
    ([(2, 100), (4, 160)], 2, 4),  # the cache truncated to the log start exactly
    ([(6, 130)], None, 6),  # the earliest entry starts above the log start (a message format bump): no epoch
    ([], None, None),  # no leader-epoch-checkpoint
])
def test_earliest_and_latest_answer_the_leader_epoch_the_broker_gives(tmp_path, epochs, earliest, latest):
    """UnifiedLog.fetchOffsetByTimestamp answers EARLIEST (and EARLIEST_LOCAL without remote storage) with the
    epoch of the cache entry covering the log start, and LATEST with the latest epoch; kafkaseg left both null
    (found in review). An entry starting past the log end is stale: loading truncates the cache there."""
    from kafkaseg.cli.main import main
    from kafkaseg.lookup import EARLIEST_LOCAL
    from kafkaseg.testing import PartitionWriter, Record, build_batch_v2
    from kafkaseg.testing.partition import write_leader_epoch_checkpoint

    writer = PartitionWriter(tmp_path / "t-0", log_start_offset=100)
    writer.append(build_batch_v2([Record(100 + i, 1_700_000_000_000 + i, None, b"v", []) for i in range(100)],
                                 base_offset=100))
    writer.close()
    checkpoint = tmp_path / "t-0" / "leader-epoch-checkpoint"
    if epochs:
        write_leader_epoch_checkpoint(checkpoint, epochs)
    elif checkpoint.exists():
        checkpoint.unlink()
    with _lookup(tmp_path) as lookup:
        assert [lookup.list_offset(spec).leader_epoch for spec in (EARLIEST, EARLIEST_LOCAL, LATEST)] == [
            earliest, earliest, latest]
        assert lookup.list_offset(LATEST).offset == 200 and lookup.list_offset(EARLIEST).offset == 100
    assert main(["offsets", "--data-dir", str(tmp_path), "--topic", "t", "--time", "-1", "--json"]) == 0


# --- damage inside a segment: lookups read on where a lenient read does, and never call readable offsets absent ----
@dataclasses.dataclass
class ZeroedPage:
    """A partition whose first rolled segment has a 4 KiB page zeroed under one of its ``.index`` entries, and what a
    read with onCorruption=skip makes of it."""

    root: Path
    log: Path
    page: tuple[int, int]       # the zeroed bytes [start, end) of ``log``
    entry_offset: int           # the .index entry pointing into the zeros
    next_entry_offset: int      # the entry after it, pointing at a sound batch past them
    records: dict               # offset -> ExpectedRecord, the whole partition
    segment: range              # the damaged segment's offsets
    read: set                   # the offsets a lenient read returns
    lost: list                  # the damaged segment's offsets it does not return (one range)

    @property
    def after(self) -> list[int]:
        """Readable offsets of the damaged segment past the lost range."""
        return sorted(o for o in self.read if o in self.segment and o > self.lost[-1])


def zero_page_under_an_index_entry(root: Path) -> ZeroedPage:
    import struct

    import kafkaseg

    manifest = write_data_dir(root, [TopicSpec("orders", partitions=1, records_per_partition=1200,
                                               segment_bytes=40 * 1024)], seed=1)
    pm = manifest.partition("orders", 0)
    base, next_base = pm.segments[0].base_offset, pm.segments[1].base_offset
    log = pm.directory / f"{base:020d}.log"
    raw = log.with_suffix(".index").read_bytes()
    entries = [(base + rel, pos) for rel, pos in (struct.unpack_from(">ii", raw, n) for n in range(0, len(raw), 8))]
    # an entry whose page holds neither its neighbours' batches: sound entries on both sides of the zeros
    page = [position // 4096 * 4096 for _, position in entries]
    k = next(k for k in range(1, len(entries) - 1)
             if entries[k - 1][1] < page[k] and entries[k + 1][1] >= page[k] + 4096)
    start = page[k]
    data = bytearray(log.read_bytes())
    data[start:start + 4096] = bytes(4096)
    log.write_bytes(bytes(data))
    table = kafkaseg.read_arrow(str(root), onCorruption="skip", columns=["offset"])
    read = set(table.column("offset").to_pylist())
    segment = range(base, next_base)
    lost = sorted(o for o in segment if o not in read)
    assert lost and lost == list(range(lost[0], lost[-1] + 1)), lost
    return ZeroedPage(root, log, (start, start + 4096), entries[k][0], entries[k + 1][0],
                      {r.offset: r for r in pm.records}, segment, read, lost)


def test_locate_after_zeros_under_an_index_entry_reads_on_where_a_lenient_read_does(tmp_path):
    """A zeroed page under an .index entry: locate of an offset in the sound batch after the zeros said "not in the
    log, the next record is at <the next segment's base>". The floor entry pointed into the zeros, the segment's
    indexes were rebuilt from its log, which stops there, and the walk never resumed at the next sound entry as the
    scan and verify do. Leniently every offset a lenient read returns is found, and those it loses are unreadable
    (with their range); strictly each is found or the damage raises, never "not in the log"."""
    from kafkaseg.errors import CorruptDataError

    zeroed = zero_page_under_an_index_entry(tmp_path)
    after = zeroed.after
    assert [o for o in after if o < zeroed.next_entry_offset], "offsets whose floor entry points into the zeros"
    lost_text = f"offsets {zeroed.lost[0]}..{zeroed.lost[-1]}"
    (pdir,) = discover(str(tmp_path))
    with PartitionLookup(pdir, lenient=True) as lookup:
        for offset in zeroed.segment:
            location = lookup.locate(offset)
            if offset in zeroed.read:
                assert location.found and location.record_offset == offset, (offset, location.reason)
            else:
                assert not location.found and location.record_offset == after[0], (offset, location.reason)
                assert "unreadable" in location.reason and lost_text in location.reason, location.reason
                assert str(zeroed.log) in location.reason and "not in the log" not in location.reason
        assert lookup.stats.skipped and all(path == str(zeroed.log) for path, _, _ in lookup.stats.skipped)
        # the log is damaged, not the index: no rebuild that would end the segment at the zeros
        assert not lookup.stats.rebuilt_indexes, lookup.stats.rebuilt_indexes
    with PartitionLookup(pdir) as lookup:  # one lookup for all: what one offset meets does not change the next
        for offset in zeroed.segment:
            try:
                location = lookup.locate(offset)
            except CorruptDataError as err:
                assert err.path == str(zeroed.log) and err.position < zeroed.page[1], (offset, err)
                assert offset in zeroed.lost or offset < zeroed.next_entry_offset, (offset, err)
                continue
            assert offset in zeroed.read and location.found and location.record_offset == offset, offset


def test_time_lookups_after_zeros_under_an_index_entry_read_on_where_a_lenient_read_does(tmp_path):
    """The timestamp search walked from the same floor: strictly it answered an offset past readable records (or
    none) instead of failing at the damage; leniently (planning's startingTimestamp under onCorruption=skip) it
    skipped to the next segment, leaving out the readable records after the zeros."""
    import json

    import kafkaseg
    from kafkaseg.errors import CorruptDataError

    zeroed = zero_page_under_an_index_entry(tmp_path)
    readable = sorted(zeroed.read)
    (pdir,) = discover(str(tmp_path))
    times = sorted({zeroed.records[o].timestamp for o in zeroed.segment})
    expected = {t: next(o for o in readable if zeroed.records[o].timestamp >= t) for t in times}
    with PartitionLookup(pdir, lenient=True) as lenient, PartitionLookup(pdir) as strict:
        for t in times:
            assert lenient.offset_for_timestamp(t) == expected[t], t
            try:
                assert strict.offset_for_timestamp(t) == expected[t], t
            except CorruptDataError as err:
                assert err.path == str(zeroed.log), err
        assert not lenient.stats.rebuilt_indexes and not strict.stats.rebuilt_indexes
    for offset in (zeroed.lost[0], zeroed.after[0] + 1):  # planning resolves timestamps through the lookup
        t = zeroed.records[offset].timestamp
        table = kafkaseg.read_arrow(str(tmp_path), onCorruption="skip", startingTimestamp=str(t), columns=["offset"],
                                    endingOffsets=json.dumps({"orders": {"0": zeroed.segment.stop}}))
        assert table.column("offset")[0].as_py() == expected[t], offset


@pytest.mark.parametrize("where", ["rolled", "active"])
def test_a_length_field_past_the_segments_end_is_damage_a_lookup_walks_past(tmp_path, where):
    """A batch whose length field (flipped: the CRC does not cover it) runs past its segment's end, before batches
    the offset index still points at. The header walk took it for the segment's end (a torn tail), so a lookup
    called the readable offsets after it absent: leniently "not in the log, the next record is at <the next
    segment's base>" (or none at all in the active segment), strictly the same wrong answer with no error, where
    a lenient read skips to the next offset index entry whose batch checks out and a strict read raises."""
    import kafkaseg
    from kafkaseg.errors import CorruptDataError
    from kafkaseg.storage.offset_index import OffsetIndex
    from kafkaseg.wire.batch import iter_headers

    root = tmp_path / "d"
    pm = write_data_dir(root, [TopicSpec("t", records_per_partition=300, records_per_batch=5, vary_batch_size=False,
                                         segment_bytes=16384, index_interval_bytes=400)]).partition("t")
    seg = pm.segments[0] if where == "rolled" else pm.segments[-1]
    log = root / "t-0" / seg.log_path.name
    data = bytearray(log.read_bytes())
    entries = OffsetIndex.load(str(log.with_suffix(".index")), seg.base_offset).positions
    headers = list(iter_headers(bytes(data)))
    bad = next(h for h in headers[1:] if h.position < int(entries[-1]) - 400)
    struct.pack_into(">i", data, bad.position + 8, len(data))  # runs past the end of the file
    log.write_bytes(bytes(data))
    read = kafkaseg.read_arrow(str(root), onCorruption="skip", columns=["offset"]).column("offset").to_pylist()
    lost = [o for o in range(bad.base_offset, seg.next_offset if hasattr(seg, "next_offset") else 300)
            if o not in read]
    assert lost and lost[0] == bad.base_offset
    after = next(o for o in read if o > bad.base_offset)
    (pdir,) = discover(str(root))
    with PartitionLookup(pdir, lenient=True) as lookup:
        location = lookup.locate(bad.base_offset)
        assert not location.found and location.record_offset == after, location.reason
        assert "unreadable" in location.reason, location.reason
        assert lookup.locate(after).found
    with PartitionLookup(pdir) as lookup:
        with pytest.raises(CorruptDataError):
            lookup.locate(bad.base_offset)


# --- damage inside the ACTIVE segment: lenient lookups take the log end a lenient read takes --------------------
ACTIVE_DAMAGE = ("zeros", "random", "magic", "magic-mid")


def damage_active_segment(root: Path, kind: str):
    """A partition of several segments whose active segment's ``.log`` is damaged in the middle (``zeros``: 4 KiB of
    zeros from a batch boundary over the last .index entry's batch, data after them; ``random``: random bytes over
    that batch; ``magic``: its magic byte flipped; ``magic-mid``: a magic byte flipped in an earlier batch), and the
    offsets a read with onCorruption=skip returns: ``(manifest partition, log, read offsets)``."""
    import struct

    import kafkaseg
    from kafkaseg.storage.segment import SegmentReader

    manifest = write_data_dir(root, [TopicSpec("t", partitions=1, records_per_partition=1200, records_per_batch=10,
                                               segment_bytes=40 * 1024)], seed=1)
    pm = manifest.partition("t", 0)
    assert len(pm.segments) > 2
    log = pm.directory / f"{pm.segments[-1].base_offset:020d}.log"
    raw = log.with_suffix(".index").read_bytes()
    last_entry = max(struct.unpack_from(">ii", raw, n)[1] for n in range(0, len(raw), 8))
    with SegmentReader(str(log)) as reader:
        headers = list(reader.iter_headers())
    data = bytearray(log.read_bytes())
    # the damage meets the log end walk, which starts at the last .index entry's batch; batches follow it
    target = next(h for h in headers if h.position == last_entry)
    if kind == "zeros":
        target = [h for h in headers if h.position <= min(last_entry, len(data) - 4096 - 256)][-1]
        assert target.position <= last_entry < target.position + 4096
    elif kind == "magic-mid":
        target = headers[len(headers) // 3]
    assert target.end < headers[-1].end
    if kind == "zeros":
        data[target.position:target.position + 4096] = bytes(4096)
        assert any(data[target.position + 4096:])
    elif kind == "random":
        rng = random.Random(3)
        data[target.position + 2:target.position + 302] = bytes(rng.randrange(256) for _ in range(300))
    else:
        data[target.position + 16] = 7  # magic
    log.write_bytes(bytes(data))
    read = set(kafkaseg.read_arrow(str(root), onCorruption="skip", columns=["offset"]).column("offset").to_pylist())
    lost = set(r.offset for r in pm.records) - read
    assert lost and min(lost) >= pm.segments[-1].base_offset, "the damage loses offsets of the active segment only"
    return pm, log, read


@pytest.mark.parametrize("kind", ACTIVE_DAMAGE)
def test_lenient_lookups_take_a_lenient_reads_log_end_when_the_active_segment_is_damaged(tmp_path, kind):
    """Damage in the middle of the active segment failed `locate --on-corruption skip` (and lenient time lookups)
    for EVERY offset of the partition: the lenient lookup still took the strict log end, which raises there ("data
    follows them", "unknown magic"). With a lenient read as the oracle: every offset it returns is found, every
    other is unreadable with the range lost, and a time lookup answers the first offset it returns at or after the
    time; strictly each offset is found or the damage raises, naming the file and byte."""
    from kafkaseg.errors import CorruptDataError

    pm, log, read = damage_active_segment(tmp_path, kind)
    readable = sorted(read)
    records = {r.offset: r for r in pm.records}
    (pdir,) = discover(str(tmp_path))
    with PartitionLookup(pdir, lenient=True) as lookup:
        for offset in sorted(records):
            location = lookup.locate(offset)
            if offset in read:
                assert location.found and location.record_offset == offset, (offset, location.reason)
            else:
                assert not location.found, offset
                assert "unreadable" in location.reason and str(log) in location.reason, (offset, location.reason)
                assert "offsets " in location.reason and "lost to damage" in location.reason, location.reason
                after = next((o for o in readable if o > offset), None)
                assert location.record_offset == after, (offset, location.reason)
        rng = random.Random(5)
        times = sorted({r.timestamp for r in pm.records})
        for t in sorted(rng.sample(times, 60)) + [times[0] - 1, times[-1]]:
            expected = next((o for o in readable if records[o].timestamp >= t), None)
            assert lookup.offset_for_timestamp(t) == expected, t
        assert lookup.stats.skipped and all(path == str(log) for path, _, _ in lookup.stats.skipped)
    with PartitionLookup(pdir) as lookup:
        for offset in sorted(records)[::7]:
            try:
                location = lookup.locate(offset)
            except CorruptDataError as err:
                assert err.path == str(log) and err.position is not None, (offset, err)
                continue
            assert offset in read and location.found and location.record_offset == offset, offset


@pytest.mark.parametrize("kind", ACTIVE_DAMAGE)
def test_locate_and_offsets_on_corruption_skip_answer_past_damage_in_the_active_segment(tmp_path, kind, capsys):
    """The CLI as the issue ran it: an offset in a rolled segment is located, `offsets` answers the high watermark
    capped at the lenient log end, and without --on-corruption skip the error names the file and byte."""
    import json

    from kafkaseg.cli.main import main

    pm, log, read = damage_active_segment(tmp_path, kind)
    locate = ["locate", "--data-dir", str(tmp_path), "--topic", "t", "--partition", "0"]
    rolled = pm.segments[1].base_offset + 3
    capsys.readouterr()
    assert main(locate + ["--offset", str(rolled), "--on-corruption", "skip", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["location"]["found"] is True
    lost = min(set(r.offset for r in pm.records) - read)
    assert main(locate + ["--offset", str(lost), "--on-corruption", "skip", "--json"]) == 1
    location = json.loads(capsys.readouterr().out)["location"]
    assert not location["found"] and "unreadable" in location["reason"] and str(log) in location["reason"], location
    assert main(["offsets", "--data-dir", str(tmp_path), "--topic", "t", "--on-corruption", "skip"]) == 0
    (line,) = capsys.readouterr().out.split()
    assert max(read) < int(line.rsplit(":", 1)[1]) <= 1 + max(r.offset for r in pm.records), line
    if kind != "magic-mid":  # (there the strict log end walk from the last .index entry does not meet the damage)
        assert main(locate + ["--offset", str(rolled)]) != 0
        assert f"{log} @ byte" in capsys.readouterr().err


# --- a corrupt offset field (outside the CRC): lookups skip the batch as a lenient read does -----------------------
def corrupt_offset_field(root: Path, magic: int, where: str, direction: str, at_entry: bool):
    """A partition of several segments (message format ``magic``) with one batch's offset field flipped in its
    first rolled segment after the first (``where="rolled"``) or in its active segment: ``raised`` (a high bit set:
    past the next segment's base) or ``lowered`` (its lowest set bit cleared: back over the batch before it). The
    batch is the one under a middle ``.index`` entry (``at_entry``) or the one after it. Returns the manifest
    partition, the log, the damaged batch's position and what a read with onCorruption=skip returns
    (offset -> timestamp ms)."""
    import kafkaseg
    from kafkaseg.storage.offset_index import OffsetIndex
    from kafkaseg.storage.segment import SegmentReader

    spec = TopicSpec("t", records_per_partition=700, records_per_batch=4, magic=magic,
                     codec="gzip" if magic == 1 else "none", segment_bytes=8 * 1024, index_interval_bytes=512)
    pm = write_data_dir(root, [spec], seed=3).partition("t")
    assert len(pm.segments) > 3
    seg = pm.segments[1] if where == "rolled" else pm.segments[-1]
    log = pm.directory / f"{seg.base_offset:020d}.log"
    positions = [int(p) for p in OffsetIndex.load(str(log.with_suffix(".index")), seg.base_offset).positions]
    with SegmentReader(str(log)) as reader:
        headers = list(reader.iter_headers())
    entry = positions[len(positions) // 2]
    k = next(k for k, h in enumerate(headers) if h.position == entry) + (0 if at_entry else 1)
    bad = headers[k]
    assert 0 < k < len(headers) - 1
    data = bytearray(log.read_bytes())
    field = struct.unpack_from(">q", data, bad.position)[0]
    flipped = field ^ ((1 << (22 if magic == 2 else 39)) if direction == "raised" else field & -field)
    struct.pack_into(">q", data, bad.position, flipped)
    log.write_bytes(bytes(data))
    table = kafkaseg.read_arrow(str(root), onCorruption="skip", columns=["offset", "timestamp"])
    stamps = [None if t is None else int(t.timestamp() * 1000) for t in table.column("timestamp").to_pylist()]
    read = dict(zip(table.column("offset").to_pylist(), stamps))
    assert set(read) < {r.offset for r in pm.records}, "the read skips the batch: no offset it returns is new"
    return pm, log, bad.position, read


@pytest.mark.parametrize("at_entry", [True, False], ids=["at-entry", "after-entry"])
@pytest.mark.parametrize("direction", ["raised", "lowered"])
@pytest.mark.parametrize("where", ["rolled", "active"])
@pytest.mark.parametrize("magic", [2, 1, 0])
def test_a_batch_whose_offset_field_is_corrupt_is_skipped_as_a_lenient_read_skips_it(tmp_path, magic, where,
                                                                                     direction, at_entry):
    """The CRC covers neither a v2 batch's base offset nor a legacy entry's offset. With one flipped, a lenient
    locate answered a record at the impossible offset (4194481 in a segment of offsets near 177, 549755814429 for
    v0) and a lenient time lookup answered it too, where a read with onCorruption=skip skips the batch (its offsets
    go back, or reach the next segment's base while the batch after it starts lower: the decoders' rule, which
    `kafkaseg verify` shares). With that read as the oracle: every offset it returns is found, every other below
    its last is unreadable and answers the next record it returns, and a time lookup answers the first offset it
    returns at or after the time; strictly each offset is found or the batch raises, naming file and byte."""
    from kafkaseg.errors import CorruptDataError

    pm, log, bad, read = corrupt_offset_field(tmp_path, magic, where, direction, at_entry)
    readable = sorted(read)
    lost = sorted({r.offset for r in pm.records} - set(read))
    assert lost, "the read loses the damaged batch's offsets"
    (pdir,) = discover(str(tmp_path))
    with PartitionLookup(pdir, lenient=True) as lookup:
        for offset in range(readable[-1] + 2):
            location = lookup.locate(offset)
            following = next((o for o in readable if o >= offset), None)
            assert location.record_offset == following, (offset, location.record_offset, location.reason)
            assert location.found == (offset in read), (offset, location.reason)
            if offset in lost:
                assert "unreadable" in location.reason and str(log) in location.reason, (offset, location.reason)
        if magic > 0:
            rng = random.Random(11)
            times = sorted(set(read.values()))
            for t in sorted(rng.sample(times, 80)) + [times[0] - 1, times[-1], times[-1] + 1]:
                expected = next((o for o in readable if read[o] >= t), None)
                assert lookup.offset_for_timestamp(t) == expected, t
        assert any(path == str(log) and at == bad for path, at, _ in lookup.stats.skipped), lookup.stats.skipped
        assert not lookup.stats.rebuilt_indexes, "the log is damaged, not its index"
    raised = 0
    with PartitionLookup(pdir) as lookup:
        for offset in range(readable[-1] + 1):
            try:
                location = lookup.locate(offset)
            except CorruptDataError as err:
                assert err.path == str(log) and err.position == bad, (offset, err)
                raised += 1
                continue
            assert offset in read and location.found and location.record_offset == offset, (offset, location.reason)
    assert raised >= len(lost), "a strict lookup of an offset lost to the batch raises"


def test_stale_index_entries_past_an_append_in_progress_are_no_damage(tmp_path):
    """A follower truncated its active segment (``truncateToEntries`` only moves the index's position, so the entries
    after it stay in the preallocated file) and is appending the leader's batch there, its bytes so far reaching
    past the stale last entry, with no whole batch at it: a torn append, not a batch whose length field is corrupt
    (found in review: the header walk raised on it)."""
    from kafkaseg.lookup import PartitionLookup
    from kafkaseg.storage.layout import discover
    from kafkaseg.storage.offset_index import OffsetIndex
    from kafkaseg.testing import Record, TopicSpec, build_batch_v2, write_data_dir
    from kafkaseg.wire.batch import iter_headers

    pm = write_data_dir(tmp_path, [TopicSpec("t", records_per_partition=300, records_per_batch=5,
                                             vary_batch_size=False, segment_bytes=16384, index_interval_bytes=400,
                                             preallocate_active_index=True)]).partition("t")
    seg = pm.segments[-1]
    log = tmp_path / "t-0" / seg.log_path.name
    data = log.read_bytes()
    headers = list(iter_headers(data))
    stale = int(OffsetIndex.load(str(log.with_suffix(".index")), seg.base_offset).positions[-1])
    k = next(i for i, h in enumerate(headers) if h.position < stale - 1200 and i > 2)
    at = headers[k]
    new = build_batch_v2([Record(at.base_offset + j, 1_700_000_000_000 + j, b"k", bytes(3000))
                          for j in range(5)]).data
    log.write_bytes(data[:at.position] + new[:stale - at.position + 100])
    (tmp_path / "replication-offset-checkpoint").unlink()
    (pdir,) = discover(str(tmp_path))
    for lenient in (False, True):
        with PartitionLookup(pdir, lenient=lenient) as lookup:
            walked = list(lookup._headers(len(lookup.segments) - 1, 0))
            assert walked[-1].last_offset == at.base_offset - 1
            assert lookup.locate(at.base_offset - 1).found


def test_a_lookups_header_walk_reads_each_next_batchs_offset_field_from_its_block(generated, segment_reads):
    """A lookup's header walk checks each batch against the offset field of the batch after it (whether it goes
    back: ``goes_back_after``); those 17 bytes are in the block the walk read its headers from, so they cost no read
    of their own (one ``read_at`` per batch walked, before)."""
    manifest, partitions = generated
    pm = manifest.partition("plain")
    pdir = partitions[("plain", 0)]
    with PartitionLookup(pdir) as lookup:
        offsets = [pm.records[k].offset for k in range(5, len(pm.records), 97)]
        located = [lookup.locate(offset).record_offset for offset in offsets]
        walked = lookup.stats.headers
    assert located == offsets
    assert walked > 3 * len(offsets)  # (what the bound below is to be told from)
    assert segment_reads.count(17) <= len(offsets), (segment_reads.count(17), walked)


@pytest.mark.parametrize("lenient", [False, True], ids=["strict", "lenient"])
@pytest.mark.parametrize("after", ["a batch", "zeros"])
def test_a_header_walk_reads_the_next_batchs_first_bytes_once_when_its_block_lacks_them(tmp_path, monkeypatch,
                                                                                      after, lenient):
    """A rolled segment's batch reaching the next segment's base (its name, 15) is checked against the batch after
    it twice: the segment-end check (``batch_offset_field_problem``: is it the segment's last?), then whether that
    batch goes back (``goes_back_after``). When the walk's block ends before those 17 bytes (the batch is larger
    than the block), they were read once for each (found by the read-back); now once."""
    from kafkaseg.storage.segment import SegmentReader
    from kafkaseg.testing import PartitionWriter, Record, build_batch_v2

    t0 = 1_700_000_000_000
    writer = PartitionWriter(tmp_path / "t-0")
    writer.append(build_batch_v2([Record(i, t0 + i, b"k", b"v", []) for i in range(10)], base_offset=0))
    big = build_batch_v2([Record(10 + i, t0 + 10 + i, b"k", bytes(2000), []) for i in range(10)], base_offset=10)
    _, position = writer.append(big)
    assert len(big.data) > 16 * 1024  # (past the lookups' 16 KiB block: the bytes after it are not in it)
    if after == "a batch":
        writer.append(build_batch_v2([Record(20 + i, t0 + 20 + i, b"k", b"v", []) for i in range(10)],
                                     base_offset=20))
    else:  # (the next segment's first batch not at its name below: no verdict on the batch, which a read takes)
        writer.append_raw(bytes(64))
    writer.roll(15)
    writer.append(build_batch_v2([Record(40 + i, t0 + 40 + i, b"k", b"v", []) for i in range(10)], base_offset=40))
    writer.close()
    (pdir,) = discover(str(tmp_path))
    end = position + len(big.data)
    reads: list[tuple[int, int]] = []
    read_at = SegmentReader.read_at

    def counted(self, at, length):
        if self.path == pdir.segments[0].log_path:
            reads.append((at, length))
        return read_at(self, at, length)

    monkeypatch.setattr(SegmentReader, "read_at", counted)
    with PartitionLookup(pdir, lenient=lenient) as lookup:
        location = lookup.locate(12)
    assert location.found and location.batch.position == position
    assert reads.count((end, 17)) == 1, reads


# -- found by a damage campaign: a search for a time that rebuilt the same index on every pass never ended ----------


@pytest.mark.parametrize("spec", ["-3", "1700000002000"])
def test_a_time_search_whose_rebuilt_index_still_points_past_the_segments_end_ends(tmp_path, spec):
    """Segment 0's last wrapper's timestamp damaged (its CRC fails; the rebuilt time index's largest timestamp is
    that batch's) and a copy of segment 0 under base 37 (inside segment 0's offsets: segment 0 ends at 37 for
    readers, so that batch is past its end): every pass of the search rebuilt segment 0's indexes again, found
    nothing, and searched again, forever. The lookup ends with an answer or an error, in both twins."""
    import subprocess
    import sys

    from kafkaseg.wire.batch import iter_headers

    write_data_dir(tmp_path, [TopicSpec("v1gz", records_per_partition=400, magic=1, codec="gzip",
                                        segment_bytes=16 * 1024)], seed=1)
    folder = tmp_path / "v1gz-0"
    log = folder / f"{0:020d}.log"
    data = bytearray(log.read_bytes())
    last = list(iter_headers(bytes(data)))[-1]
    data[last.position + 22] ^= 0x34  # (a byte of the wrapper's timestamp)
    log.write_bytes(bytes(data))
    (folder / f"{37:020d}.log").write_bytes(bytes(data))
    for pure in ("1", ""):
        env = {**os.environ, "KAFKASEG_PURE": pure, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
        for argv in (["offsets", "--data-dir", str(tmp_path), "--topic", "v1gz", "--time", spec],
                     ["locate", "--data-dir", str(tmp_path), "--topic", "v1gz", "--partition", "0", "--time", spec]):
            done = subprocess.run([sys.executable, "-m", "kafkaseg", *argv], env=env, capture_output=True, text=True,
                                  timeout=60)
            assert done.returncode in (0, 1, 2) and "Traceback" not in done.stderr, (argv, done.stderr)


def test_a_wrapper_whose_offset_went_below_its_last_inner_offset_is_damage_for_each_of_its_offsets(tmp_path):
    """A v1 compressed wrapper's offset (outside its CRC) lowered below its last inner relative offset (4 -> 3): the
    decoders refuse it ("wrapper offset 3 is less than the last inner offset 4"), a strict read raising at it and a
    lenient one leaving offsets 0..4 out. `locate` of offset 4, above the field's 3, walked past the wrapper by its
    header and said "offset 4 is not in the log (...); the next record is at 5", strictly and leniently; now each of
    its offsets is the read's error strictly, and unreadable leniently, naming the file and byte."""
    import kafkaseg
    from kafkaseg.errors import CorruptDataError
    from kafkaseg.wire.batch import iter_headers

    write_data_dir(tmp_path, [TopicSpec("t", records_per_partition=60, records_per_batch=5, vary_batch_size=False,
                                        magic=1, codec="gzip")])
    log = tmp_path / "t-0" / "00000000000000000000.log"
    data = bytearray(log.read_bytes())
    first = next(iter(iter_headers(bytes(data))))
    assert (first.position, first.base_offset) == (0, 4)
    struct.pack_into(">q", data, 0, 3)
    log.write_bytes(bytes(data))
    with pytest.raises(CorruptDataError) as info:
        kafkaseg.read_arrow(str(tmp_path), columns=["offset"])
    assert (info.value.path, info.value.position) == (str(log), 0)
    read = kafkaseg.read_arrow(str(tmp_path), columns=["offset"], onCorruption="skip").column("offset").to_pylist()
    assert read == list(range(5, 60))
    (pdir,) = discover(str(tmp_path))
    for offset in range(5):
        with PartitionLookup(pdir) as lookup, pytest.raises(CorruptDataError) as info:
            lookup.locate(offset)
        assert (info.value.path, info.value.position) == (str(log), 0), offset
        with PartitionLookup(pdir, lenient=True) as lookup:
            location = lookup.locate(offset)
        assert not location.found and location.record_offset == 5, (offset, location.reason)
        assert "unreadable" in location.reason and f"{log} @ byte 0" in location.reason, location.reason
