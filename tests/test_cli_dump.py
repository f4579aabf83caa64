"""``kafkaseg dump`` against DumpLogSegments' documented output (the format strings of
``core/src/main/scala/kafka/tools/DumpLogSegments.scala``, transcribed into the regexes below) with kafka-python as
the oracle for every value printed."""

from __future__ import annotations

import io
import json
import re
import shutil
import struct
from pathlib import Path

import pytest
from kafka.record.memory_records import MemoryRecords

from kafkaseg.cli.main import main
from kafkaseg.testing import PartitionWriter, Record, build_batch_v2, build_legacy_entries, build_legacy_wrapper

# printBatchLevel (v2) + " position: " ... ; field names and order from DumpLogSegments.java (Kafka 4.3)
BATCH_V2 = re.compile(
    r"^baseOffset: (-?\d+) lastOffset: (-?\d+) count: (-?\d+) baseSequence: (-?\d+) lastSequence: (-?\d+) "
    r"producerId: (-?\d+) producerEpoch: (-?\d+) partitionLeaderEpoch: (-?\d+) isTransactional: (true|false) "
    r"isControl: (true|false) deleteHorizonMs: (OptionalLong\.empty|OptionalLong\[-?\d+\]) position: (\d+) (CreateTime|LogAppendTime): (-?\d+) "
    r"size: (\d+) magic: 2 compresscodec: (none|gzip|snappy|lz4|zstd) crc: (\d+) isvalid: (true|false)$")
BATCH_LEGACY = re.compile(
    r"^offset: (-?\d+) position: (\d+) (CreateTime|LogAppendTime|NoTimestampType): (-?\d+) size: (\d+) "
    r"magic: ([01]) compresscodec: (none|gzip|snappy|lz4) crc: (\d+) isvalid: (true|false)$")
RECORD = re.compile(
    r"^\| offset: (\d+) (CreateTime|LogAppendTime|NoTimestampType): (-?\d+) keySize: (-?\d+) valueSize: (-?\d+)"
    r"(?: sequence: (-?\d+) headerKeys: \[([^\]]*)\])?(?: isValid: (true|false) crc: (\d+))?(.*)$")
CODECS = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}


def run(argv, capsys):
    code = main(argv)
    captured = capsys.readouterr()
    return code, captured.out.splitlines(), captured.err.splitlines()


def _oracle_batches(path: Path):
    batches = []
    records = MemoryRecords(path.read_bytes())
    while (batch := records.next_batch()) is not None:
        batches.append((batch, list(batch)))
    return batches


@pytest.mark.corpus
@pytest.mark.parametrize("relative", [
    "segments/smartassets__backend-server/51801d05/kafka/data/__consumer_offsets-37/00000000000000000127.log",
    "segments/RaviAzzuraPutra__LATIHAN-MICROSERVICE-NEW/f8f5c464/kafka/data/__consumer_offsets-0/00000000000000000000.log",
    "segments/RaviAzzuraPutra__LATIHAN-MICROSERVICE-NEW/09b38fa5/kafka/data/__cluster_metadata-0/00000000000000000000.log",
    "segments/asayers__kafkalite/1b639b2f/tests/test-data/fs-data/hamlet-gzip-0/00000000000000000000.log",
    "segments/mscaldas2012__kafka-connect-spooldir/d7b17b06/kafka-data/__consumer_offsets-29/00000000000000000000.log",
])
def test_deep_dump_matches_dumplogsegments_format_and_kafka_python(corpus_dir, relative, capsys):
    path = corpus_dir / relative
    if not path.exists():
        pytest.skip(f"{relative} not in this corpus")
    code, out, err = run(["dump", "--files", str(path), "--deep-iteration"], capsys)
    assert code == 0, err
    assert out[0] == f"Dumping {path}"
    assert out[1] == f"Log starting offset: {int(path.name.split('.')[0])}"
    lines = iter(out[2:])
    position = 0
    for batch, records in _oracle_batches(path):
        line = next(lines)
        if batch.magic == 2:
            m = BATCH_V2.match(line)
            assert m, line
            g = m.groups()
            assert int(g[0]) == batch.base_offset
            assert int(g[1]) == batch.base_offset + batch.last_offset_delta
            assert int(g[2]) == len(records)
            assert int(g[3]) == batch.base_sequence and int(g[5]) == batch.producer_id
            assert int(g[6]) == batch.producer_epoch
            assert (g[8] == "true") == batch.is_transactional and (g[9] == "true") == batch.is_control_batch
            assert int(g[11]) == position
            assert int(g[13]) == batch.max_timestamp
            assert g[15] == CODECS[batch.compression_type] and int(g[16]) == batch.crc and g[17] == "true"
            size = int(g[14])
        else:
            m = BATCH_LEGACY.match(line)
            assert m, line
            assert int(m.group(2)) == position and m.group(7) == CODECS[batch.compression_type]
            size = int(m.group(5))
        position += size
        for record in records:
            rline = next(lines)
            m = RECORD.match(rline)
            assert m, rline
            assert int(m.group(1)) == record.offset
            assert int(m.group(3)) == (-1 if record.timestamp is None else record.timestamp)
            assert int(m.group(4)) == (-1 if record.key is None else len(record.key))
            assert int(m.group(5)) == (-1 if record.value is None else len(record.value))
            if batch.magic == 2:
                assert m.group(7) == ",".join(k for k, _ in record.headers)
            if batch.magic < 2:  # legacy records print their own CRC (Kafka 4.3 no longer ends it with a '}')
                assert m.group(8) == "true" and m.group(9) is not None
            elif batch.is_control_batch:
                assert m.group(10).startswith((" endTxnMarker: ", " LeaderChange: ", " controlType: ", " Snapshot"))
    assert position == path.stat().st_size
    assert next(lines, None) is None


@pytest.mark.corpus
def test_offsets_decoder_prints_json_for_every_record(corpus_dir, capsys):
    folder = corpus_dir / "segments/smartassets__backend-server/51801d05/kafka/data"
    files = sorted(str(p) for p in folder.glob("__consumer_offsets-*/*.log") if p.stat().st_size)
    code, out, _ = run(["dump", "--files", ",".join(files), "--offsets-decoder"], capsys)
    assert code == 0
    record_lines = [line for line in out if line.startswith("| offset:")]
    expected = sum(len(records) for f in files for _, records in _oracle_batches(Path(f)))
    assert len(record_lines) == expected > 50
    kinds = set()
    for line in record_lines:
        m = re.search(r" key: (\{.*\}) payload: (.*)$", line)
        assert m, line
        key = json.loads(m.group(1))
        kinds.add(key["type"])
        assert m.group(2) == "<DELETE>" or set(json.loads(m.group(2))) == {"version", "data"}
        if key["type"] in ("0", "1"):
            assert set(key["data"]) == {"group", "topic", "partition"}
    assert {"1", "2"} <= kinds


@pytest.mark.corpus
def test_kraft_snapshot_and_index_dumps(corpus_dir, capsys, tmp_path):
    folder = corpus_dir / "segments/RaviAzzuraPutra__LATIHAN-MICROSERVICE-NEW/f8f5c464/kafka/data/__cluster_metadata-0"
    snapshot = folder / "00000000000000007260-0000000001.checkpoint"
    code, out, _ = run(["dump", "--files", str(snapshot), "--cluster-metadata-decoder"], capsys)
    assert code == 0
    assert out[1] == "Snapshot end offset: 7260, epoch: 1"
    assert re.search(r" SnapshotHeader \{\"version\":0,\"lastContainedLogTimestamp\":\d+\}$", out[3])
    assert any('payload: {"type":"TOPIC_RECORD","version":0,"data":{"name":' in line for line in out)
    assert out[-1].endswith('SnapshotFooter {"version":0}')

    index = folder / "00000000000000000000.index"
    code, out, err = run(["dump", "--files", str(index)], capsys)
    assert code == 0 and not err
    entries = [tuple(map(int, re.fullmatch(r"offset: (\d+) position: (\d+)", line).groups())) for line in out[1:]]
    assert len(entries) == 521  # the corpus MANIFEST's index check: 521 entries
    code, out, err = run(["dump", "--files", str(folder / "00000000000000000000.timeindex"), "--verify-index-only"],
                         capsys)
    assert code == 0 and out == [f"Dumping {folder / '00000000000000000000.timeindex'}"] and not err

    # a copy whose index points one entry at the wrong batch: reported on stderr in Kafka's words, exit 1
    copy = tmp_path / "__cluster_metadata-0"
    copy.mkdir()
    for name in ("00000000000000000000.log", "00000000000000000000.index"):
        shutil.copy(folder / name, copy / name)
    data = bytearray((copy / "00000000000000000000.index").read_bytes())
    data[8 * 5 + 4:8 * 5 + 8] = data[8 * 6 + 4:8 * 6 + 8]  # entry 5 gets entry 6's position
    (copy / "00000000000000000000.index").write_bytes(bytes(data))
    code, out, err = run(["dump", "--files", str(copy / "00000000000000000000.index"), "--verify-index-only"], capsys)
    assert code == 1
    assert err[0] == f"Mismatches in :{copy / '00000000000000000000.index'}"
    assert re.fullmatch(r"  Index offset: \d+, log offset: \d+", err[1])

    # a time index entry one millisecond off the batch's largest record timestamp: the broker's entry is the log's
    # timestamp, printed beside the wrong one
    shutil.copy(folder / "00000000000000000000.index", copy / "00000000000000000000.index")
    data = bytearray((folder / "00000000000000000000.timeindex").read_bytes())
    (stamp,) = struct.unpack_from(">q", data, 12 * 3)
    struct.pack_into(">q", data, 12 * 3, stamp + 1)
    (copy / "00000000000000000000.timeindex").write_bytes(bytes(data))
    code, out, err = run(["dump", "--files", str(copy / "00000000000000000000.timeindex"), "--verify-index-only"],
                         capsys)
    assert code == 1
    assert err[:2] == [f"Found timestamp mismatch in :{copy / '00000000000000000000.timeindex'}",
                       f"  Index timestamp: {stamp + 1}, log timestamp: {stamp}"]


def test_generated_transactions_snapshot_txnindex_and_trailing_bytes(tmp_path, capsys):
    from kafkaseg.testing import TopicSpec, write_data_dir

    manifest = write_data_dir(tmp_path, [TopicSpec("pay", records_per_partition=300, records_per_batch=10,
                                                   transactional=True, abort_ratio=0.5, open_transactions=1)])
    pm = manifest.partition("pay")
    log = pm.directory / "00000000000000000000.log"
    code, out, _ = run(["dump", "--files", str(log), "--print-data-log"], capsys)
    assert code == 0
    markers = [line for line in out if "endTxnMarker:" in line]
    expected = [r for r in pm.records if r.is_control]
    assert len(markers) == len(expected) > 0
    assert {re.search(r"endTxnMarker: (\w+) coordinatorEpoch: 0$", m).group(1) for m in markers} <= {"COMMIT", "ABORT"}
    values = [line for line in out if " payload: " in line]
    assert len(values) == sum(1 for r in pm.records if not r.is_control)

    txn = pm.directory / "00000000000000000000.txnindex"
    code, out, _ = run(["dump", "--files", str(txn)], capsys)
    assert out[1:] == [f"version: 0 producerId: {t.producer_id} firstOffset: {t.first_offset} lastOffset: "
                       f"{t.last_offset} lastStableOffset: {t.last_stable_offset}" for t in pm.aborted_txns]
    code, out, _ = run(["dump", "--files", str(txn), "--json"], capsys)  # camelCase keys, as the text and batches
    assert [json.loads(line) for line in out[1:]] == [
        {"version": 0, "producerId": t.producer_id, "firstOffset": t.first_offset, "lastOffset": t.last_offset,
         "lastStableOffset": t.last_stable_offset} for t in pm.aborted_txns]
    snapshots = sorted(pm.directory.glob("*.snapshot"))
    if snapshots:
        code, out, _ = run(["dump", "--files", str(snapshots[-1])], capsys)
        assert all(re.match(r"producerId: \d+ producerEpoch: \d+ coordinatorEpoch: \d+ currentTxnFirstOffset: "
                            r"OptionalLong(\[\d+\]|\.empty) lastTimestamp: -?\d+ ", line) for line in out[1:])
        code, out, _ = run(["dump", "--files", str(snapshots[-1]), "--json"], capsys)
        rows = [json.loads(line) for line in out[1:]]
        assert rows and all({"producerId", "producerEpoch", "coordinatorEpoch", "currentTxnFirstOffset",
                             "lastTimestamp", "lastSequence", "lastOffset", "offsetDelta"} <= set(row)
                            and not any("_" in key for key in row) for row in rows)

    # 10 garbage bytes appended: reported as DumpLogSegments does
    broken = tmp_path / "copy" / "pay-0"
    broken.mkdir(parents=True)
    shutil.copy(log, broken / log.name)
    with open(broken / log.name, "ab") as f:
        f.write(b"\x00\x00\x00\x00\x00\x00\x00\x07\x00\x00")
    code, out, _ = run(["dump", "--files", str(broken / log.name)], capsys)
    assert out[-1] == f"Found 10 invalid bytes at the end of {log.name}"
    code, out, _ = run(["dump", "--files", str(broken / log.name), "--max-bytes", "500"], capsys)
    assert not out[-1].startswith("Found") and len(out) < 10


def test_delete_horizon_prints_as_javas_optional_long(tmp_path, capsys):
    """RecordBatch.deleteHorizonMs is a java.util.OptionalLong: DumpLogSegments prints OptionalLong.empty, or
    OptionalLong[ms] for a batch the cleaner stamped (attribute bit 6); --json keeps a number (-1: none)."""
    from kafkaseg.testing import TopicSpec, write_data_dir

    manifest = write_data_dir(tmp_path, [TopicSpec("dh", records_per_partition=100, records_per_batch=10,
                                                   delete_horizon_ms=1_700_000_999_000, cleanup_policy="compact",
                                                   tombstone_ratio=0.2)])
    log = manifest.partition("dh").directory / "00000000000000000000.log"
    code, out, _ = run(["dump", "--files", str(log)], capsys)
    assert code == 0
    horizons = [BATCH_V2.match(line).group(11) for line in out[2:]]
    assert set(horizons) == {"OptionalLong.empty", "OptionalLong[1700000999000]"}
    code, out, _ = run(["dump", "--files", str(log), "--json"], capsys)
    assert {json.loads(line)["deleteHorizonMs"] for line in out[2:]} == {-1, 1_700_000_999_000}


@pytest.mark.parametrize("tail, trailing", [
    (b"abcdefghijklmnopqrstuvwxyz", True),  # size 0x696a6b6c runs past the end: no batch, whatever the magic ('q')
    (struct.pack(">qiIB", 7, 20, 0, 9) + bytes(9), True),  # 26 bytes where the size asks for 32: no batch either
    (struct.pack(">qiIB", 7, 13, 0, 9) + bytes(9), False),  # size below 14: CorruptRecordException in Kafka too
    (struct.pack(">qiIB", 7, 14, 0, 9) + bytes(9), False),  # a whole 26-byte entry with magic 9: an error
])
def test_a_tail_whose_size_runs_past_the_end_is_trailing_bytes_whatever_its_magic(tmp_path, capsys, tail, trailing):
    """FileLogInputStream.nextBatch checks the size field against the end before the magic byte: an entry whose
    size (>= 14) runs past the end is "no batch", so DumpLogSegments reports the tail as invalid bytes."""
    from kafkaseg.testing import TopicSpec, write_data_dir

    manifest = write_data_dir(tmp_path, [TopicSpec("v0", records_per_partition=20, records_per_batch=5, magic=0)])
    log = manifest.partition("v0").directory / "00000000000000000000.log"
    size = log.stat().st_size
    with open(log, "ab") as f:
        f.write(tail)
    code, out, err = run(["dump", "--files", str(log)], capsys)
    if trailing:
        assert code == 0 and not err
        assert out[-1] == f"Found {len(tail)} invalid bytes at the end of {log.name}"
    else:
        assert code == 1 and err[-1].startswith(f"Error dumping {log}:") and f"byte {size}" in err[-1]
    # FileRecords.slice(0, maxBytes): the end nextBatch checks the size against is the limit, and the last line
    # is the last whole batch (no "Found" line with --max-bytes); a size below 14 is still an error
    code, out, err = run(["dump", "--files", str(log), "--max-bytes", str(size + 20)], capsys)
    below_minimum = struct.unpack_from(">i", tail, 8)[0] < 14
    assert code == (1 if below_minimum else 0) and out[-1].startswith("offset: 19 ")


def test_an_all_zero_preallocated_index_dumps_entry_0_as_dumplogsegments_does(tmp_path, capsys):
    """An active segment younger than its first index entry has all-zero preallocated indexes. DumpLogSegments
    counts length / entrySize entries and stops at a base-offset entry only when i > 0: it prints entry 0 and
    checks it against the log (a mismatch unless the first batch ends at the base offset)."""
    from kafkaseg.testing import TopicSpec, write_data_dir

    manifest = write_data_dir(tmp_path, [TopicSpec("s", records_per_partition=20, records_per_batch=7)])
    folder = manifest.partition("s").directory
    index, time_index = folder / f"{0:020d}.index", folder / f"{0:020d}.timeindex"
    first, _ = _oracle_batches(folder / f"{0:020d}.log")[0]
    first_last = first.base_offset + first.last_offset_delta
    assert first_last > 0
    index.write_bytes(bytes(8 * 1000))
    time_index.write_bytes(bytes(12 * 1000))
    code, out, err = run(["dump", "--files", f"{index},{time_index}"], capsys)
    assert out == [f"Dumping {index}", "offset: 0 position: 0", f"Dumping {time_index}", "timestamp: 0 offset: 0"]
    assert code == 1 and err == [f"Mismatches in :{index.resolve()}", f"  Index offset: 0, log offset: {first_last}",
                                 "The following indexed offsets are not found in the log.",
                                 f"Indexed offset: 0, found log offset: {first_last}"]
    code, out, err = run(["dump", "--files", str(index), "--verify-index-only"], capsys)
    assert code == 1 and out == [f"Dumping {index}"] and err[1] == f"  Index offset: 0, log offset: {first_last}"
    index.write_bytes(bytes(8))  # one zero entry: still entry 0
    code, out, _ = run(["dump", "--files", str(index)], capsys)
    assert out[1:] == ["offset: 0 position: 0"]
    index.write_bytes(bytes(4))  # index.entries == 0
    time_index.write_bytes(b"")
    code, out, err = run(["dump", "--files", f"{index},{time_index}"], capsys)
    assert code == 0 and not err
    assert out == [f"Dumping {index}", f"{index} is empty.", f"Dumping {time_index}"]


@pytest.mark.parametrize("bad_position", [-1, 1 << 30])
def test_a_timeindex_whose_index_points_outside_the_log_reports_not_found(tmp_path, capsys, bad_position):
    """The .index entry a time-index entry is looked up through is not trusted: a negative or past-the-end position
    makes that entry "not found in the log" (as a bad .index entry is a mismatch), not a raw ValueError."""
    from kafkaseg.testing import TopicSpec, write_data_dir

    manifest = write_data_dir(tmp_path, [TopicSpec("p", records_per_partition=400, records_per_batch=5,
                                                   index_interval_bytes=512)], seed=2)
    folder = manifest.partition("p").directory
    index, time_index = folder / f"{0:020d}.index", folder / f"{0:020d}.timeindex"
    code, out, err = run(["dump", "--files", str(time_index)], capsys)
    assert code == 0 and not err and len(out) > 3
    data = bytearray(index.read_bytes())
    struct.pack_into(">i", data, 4, bad_position)  # entry 0's position
    index.write_bytes(bytes(data))
    first_entry_offset = struct.unpack_from(">i", data, 0)[0]
    code, out, err = run(["dump", "--files", str(time_index)], capsys)
    assert code == 1 and not any("Traceback" in line or "ValueError" in line for line in out + err)
    assert err[0] == "The following indexed offsets are not found in the log."
    assert f"Indexed offset: {first_entry_offset}, found log offset: -1" in err
    code, out, err = run(["dump", "--files", str(index)], capsys)
    assert code == 1 and f"  Index offset: {first_entry_offset}, log offset: -1" in err


def test_json_output_and_unknown_file(tmp_path, capsys):
    from kafkaseg.testing import TopicSpec, write_data_dir

    manifest = write_data_dir(tmp_path, [TopicSpec("j", records_per_partition=50, headers=2)])
    log = manifest.partition("j").directory / "00000000000000000000.log"
    code, out, _ = run(["dump", "--files", str(log), "--deep-iteration", "--json"], capsys)
    batches = [json.loads(line) for line in out[1:] if line.startswith('{"baseOffset"')]
    assert sum(len(b["records"]) for b in batches) == 50
    assert batches[0]["records"][0]["headerKeys"] == ["h0", "h1"]
    other = tmp_path / "notes.txt"
    other.write_text("x")
    code, out, err = run(["dump", "--files", str(other)], capsys)
    assert err == [f"Ignoring unknown file {other}"]


def test_json_stdout_is_json_lines_only_with_mismatches_as_objects(tmp_path, capsys):
    import struct

    from kafkaseg.testing import TopicSpec, write_data_dir

    manifest = write_data_dir(tmp_path, [TopicSpec("j", records_per_partition=400, segment_bytes=1 << 20)])
    folder = manifest.partition("j").directory
    log, index = folder / "00000000000000000000.log", folder / "00000000000000000000.index"
    entries = bytearray(index.read_bytes())
    assert len(entries) >= 16
    struct.pack_into(">i", entries, 8 + 4, struct.unpack_from(">i", entries, 8 + 4)[0] + 1)  # entry 1: wrong byte
    index.write_bytes(bytes(entries))
    other = tmp_path / "notes.txt"
    other.write_text("x")
    files = ",".join(map(str, [log, index, folder / "00000000000000000000.timeindex", other]))
    code, out, err = run(["dump", "--files", files, "--json"], capsys)
    assert code == 1
    rows = [json.loads(line) for line in out]  # every stdout line is a JSON object
    assert {"file": str(log)} in rows and {"file": str(index)} in rows
    mismatches = [r for r in rows if r.get("problem") == "indexMismatch"]
    assert len(mismatches) == 1 and mismatches[0]["file"] == str(index.resolve())
    assert any(r.get("problem") == "ignoredUnknownFile" and r["file"] == str(other) for r in rows)
    assert not err
    code, out, err = run(["dump", "--files", str(index), "--verify-index-only", "--json"], capsys)
    assert code == 1 and not err
    rows = [json.loads(line) for line in out]
    assert rows[0] == {"file": str(index)} and [r["problem"] for r in rows[1:]] == ["indexMismatch"]
    code, out, _ = run(["dump", "--files", str(index), "--index-sanity-check", "--json"], capsys)
    assert [json.loads(line) for line in out][-1] == {"file": str(index), "sanityCheck": "passed"}


def test_index_sanity_check_is_the_brokers_check_in_both_directions(tmp_path, capsys):
    """--index-sanity-check answers "would a restart rebuild this index?": Kafka's OffsetIndex/TimeIndex
    sanityCheck, which takes the file whole (a preallocated zero tail in a time index fails: its last timestamp, 0,
    is below the first) and looks at nothing but the last entry and the length (entries out of order pass)."""
    import struct

    from kafkaseg.testing import TopicSpec, write_data_dir

    manifest = write_data_dir(tmp_path / "d", [TopicSpec("p", records_per_partition=400, records_per_batch=5,
                                                          index_interval_bytes=512)], seed=2)
    folder = manifest.partition("p", 0).directory
    index, time_index = folder / f"{0:020d}.index", folder / f"{0:020d}.timeindex"
    entries = time_index.read_bytes()
    assert len(entries) >= 36 and len(index.read_bytes()) >= 24

    def sanity(path):
        code, out, err = run(["dump", "--files", str(path), "--index-sanity-check"], capsys)
        return code, "\n".join(out + err)

    time_index.write_bytes(entries[:24] + bytes(1200))  # two entries, then a preallocated tail
    code, text = sanity(time_index)
    assert code == 1 and "last timestamp is 0 which is less than the first timestamp" in text
    swapped = bytearray(entries)  # two middle entries' timestamps swapped: out of order, not the broker's concern
    swapped[12:20], swapped[24:32] = entries[24:32], entries[12:20]
    time_index.write_bytes(bytes(swapped))
    code, text = sanity(time_index)
    assert code == 0 and text.endswith(f"{time_index} passed sanity check.")
    data = bytearray(index.read_bytes())
    first, second = struct.unpack_from(">i", data, 8)[0], struct.unpack_from(">i", data, 16)[0]
    struct.pack_into(">i", data, 8, second)
    struct.pack_into(">i", data, 16, first)  # middle offsets going backwards: passes the broker's check
    index.write_bytes(bytes(data))
    code, text = sanity(index)
    assert code == 0 and text.endswith(f"{index} passed sanity check.")
    index.write_bytes(bytes(data) + b"\x00" * 3)
    code, text = sanity(index)
    assert code == 1 and f"found {len(data) + 3} bytes which is neither positive nor a multiple of 8" in text
    index.write_bytes(bytes(8 * 100))  # all preallocated zeros: Kafka counts 100 entries, and they pass
    code, text = sanity(index)
    assert code == 0 and text.endswith(f"{index} passed sanity check.")
    index.write_bytes(bytes(12))  # a zero entry and 4 bytes: Kafka's length check fails, not "is empty"
    code, text = sanity(index)
    assert code == 1 and "found 12 bytes which is neither positive nor a multiple of 8" in text
    struct.pack_into(">i", data, len(data) - 8, -3)  # the last offset below the base: a restart rebuilds it
    index.write_bytes(bytes(data))
    code, text = sanity(index)
    assert code == 1 and "the last offset is -3 which is less than the base offset 0" in text


def test_odd_bytes_and_names_get_one_line_errors_and_text_decodes_as_java(tmp_path, capsys):
    """Garbage index entries are mismatches, not a traceback; a file not named after a base offset is one error
    line; --print-data-log decodes values as Java's new String(bytes, UTF_8) (one U+FFFD per surrogate encoding's
    three bytes, where Python's decoder gives one per byte)."""
    import random

    from kafkaseg.testing import PartitionWriter, Record, build_batch_v2

    writer = PartitionWriter(tmp_path / "t-0")
    writer.append(build_batch_v2([Record(0, 1_700_000_000_000, None, b"x\xed\xa0\x80\xed\xb0\x80y", [])]))
    writer.close()
    log = tmp_path / "t-0" / f"{0:020d}.log"
    code, out, _ = run(["dump", "--files", str(log), "--print-data-log"], capsys)
    assert code == 0 and any(line.endswith("payload: x\ufffd\ufffdy") for line in out)
    index = tmp_path / "t-0" / f"{0:020d}.index"
    index.write_bytes(random.Random(3).randbytes(64))
    code, out, err = run(["dump", "--files", str(index)], capsys)
    assert code == 1 and not any("Traceback" in line for line in out + err)
    assert any("Mismatches in :" in line for line in err)
    odd = tmp_path / "foo.index"
    odd.write_bytes(bytes(16))
    code, out, err = run(["dump", "--files", str(odd)], capsys)
    assert code == 1 and any("not named after a base offset" in line for line in err)


def test_a_corrupt_producer_snapshot_fails_the_dump_in_kafkas_words(tmp_path, capsys):
    """ProducerStateManager.readSnapshot's messages (scripts grep for them), and exit status 1 as for a bad CRC."""
    from kafkaseg.testing import ProducerEntry, encode_producer_snapshot

    data = encode_producer_snapshot([ProducerEntry(7, 1, 4, 40, 4, 1_700_000_000_000)])
    good = tmp_path / f"{41:020d}.snapshot"
    good.write_bytes(data)
    code, out, _ = run(["dump", "--files", str(good)], capsys)
    assert code == 0 and out[-1].startswith("producerId: 7 producerEpoch: 1 ")
    flipped = bytearray(data)
    flipped[-1] ^= 0x01
    good.write_bytes(bytes(flipped))
    code, out, err = run(["dump", "--files", str(good)], capsys)
    assert code == 1 and any("Snapshot is corrupt (CRC is no longer valid). Stored crc: " in line and
                             re.search(r"Computed crc: \d+$", line) for line in err)
    good.write_bytes(b"\x00\x07" + data[2:])
    code, out, err = run(["dump", "--files", str(good)], capsys)
    assert code == 1 and any("Snapshot failed schema validation: Snapshot contained an unknown file version 7" in line
                             for line in err)


def test_offsets_decoder_prints_kip848_records(tmp_path, capsys):
    """A consumer-group (KIP-848) record is printed as JSON, as DumpLogSegments does, not skipped as unknown; a type
    past the last one Kafka knows (24) still is."""
    import struct

    from kafkaseg.testing import PartitionWriter, Record, build_batch_v2

    # ConsumerGroupMetadataKey (type 3): 0003 | 0002 "g1"; value v0: 0000 | epoch 00000005 | 00 (no tagged fields)
    key = struct.pack(">hh", 3, 2) + b"g1"
    writer = PartitionWriter(tmp_path / "__consumer_offsets-0")
    writer.append(build_batch_v2([Record(0, 1_700_000_000_000, key, b"\x00\x00\x00\x00\x00\x05\x00"),
                                  Record(1, 1_700_000_000_000, b"\x00\x19", None)]))
    writer.close()
    log = tmp_path / "__consumer_offsets-0" / f"{0:020d}.log"
    code, out, _ = run(["dump", "--files", str(log), "--offsets-decoder", "--skip-record-metadata"], capsys)
    assert code == 0
    assert out[-2:] == ['| key: {"type":"3","data":{"groupId":"g1"}} payload: {"version":"0","data":{"epoch":5}}',
                        "| key: Unknown record type 25 at offset 1, skipping."]


def test_share_group_state_and_streams_group_records_dump_as_json(tmp_path, capsys):
    """--share-group-state-decoder prints __share_group_state records as DumpLogSegments'
    ShareGroupStateMessageParser does; --offsets-decoder prints a Kafka Streams group's record (KIP-1071), not
    "Unknown record type"; --json carries the same objects."""
    import struct

    from kafkaseg.testing import PartitionWriter, Record, build_batch_v2

    # ShareUpdateKey (type 1): 0001 | 0003 "gs1" | topicId (16 bytes) | partition 00000002; ShareUpdateValue v0:
    # 0000 | snapshotEpoch 00000001 | leaderEpoch 00000000 | startOffset 0000000000000005 | stateBatches 01 | 00
    topic_id = bytes(range(16))  # URL-safe base64 "AAECAwQFBgcICQoLDA0ODw"
    share_key = struct.pack(">hh", 1, 3) + b"gs1" + topic_id + struct.pack(">i", 2)
    share_value = struct.pack(">hiiq", 0, 1, 0, 5) + b"\x01\x00"
    writer = PartitionWriter(tmp_path / "__share_group_state-0")
    writer.append(build_batch_v2([Record(0, 1_700_000_000_000, share_key, share_value),
                                  Record(1, 1_700_000_000_000, share_key, None),
                                  Record(2, 1_700_000_000_000, b"\x00\x07", b"\x00\x00")]))
    writer.close()
    log = tmp_path / "__share_group_state-0" / f"{0:020d}.log"
    code, out, _ = run(["dump", "--files", str(log), "--share-group-state-decoder", "--skip-record-metadata"],
                       capsys)
    key_text = '{"type":"1","data":{"groupId":"gs1","topicId":"AAECAwQFBgcICQoLDA0ODw","partition":2}}'
    assert code == 0
    assert out[-3:] == [
        f'| key: {key_text} payload: {{"version":"0","data":{{"snapshotEpoch":1,"leaderEpoch":0,"startOffset":5,'
        '"stateBatches":[]}}',
        f"| key: {key_text} payload: <DELETE>",
        "| key: Unknown record type 7 at offset 2, skipping."]
    code, out, _ = run(["dump", "--files", str(log), "--share-group-state-decoder", "--json"], capsys)
    records = [record for line in out for record in json.loads(line).get("records", [])]
    assert code == 0 and records[0]["key"] == json.loads(key_text)
    assert records[0]["payload"]["data"] == {"snapshotEpoch": 1, "leaderEpoch": 0, "startOffset": 5,
                                             "stateBatches": []}
    assert records[1]["payload"] == "<DELETE>"

    # StreamsGroupTargetAssignmentMetadataKey (type 20): 0014 | 0003 "app"; value v0: 0000 | assignmentEpoch
    # 00000003 | 00
    writer = PartitionWriter(tmp_path / "__consumer_offsets-0")
    writer.append(build_batch_v2([Record(0, 1_700_000_000_000, struct.pack(">hh", 20, 3) + b"app",
                                         b"\x00\x00\x00\x00\x00\x03\x00")]))
    writer.close()
    log = tmp_path / "__consumer_offsets-0" / f"{0:020d}.log"
    code, out, _ = run(["dump", "--files", str(log), "--offsets-decoder", "--skip-record-metadata"], capsys)
    assert code == 0 and out[-1] == ('| key: {"type":"20","data":{"groupId":"app"}} payload: '
                                     '{"version":"0","data":{"assignmentEpoch":3}}')


def test_negative_record_timestamps_are_printed_raw(tmp_path, capsys):
    """DumpLogSegments prints record.timestamp as it is: -5 is -5 (it was shown as -1)."""
    writer = PartitionWriter(tmp_path / "neg-0")
    writer.append(build_batch_v2([Record(0, -1, b"k0", b"v0"), Record(1, -5, b"k1", b"v1"),
                                  Record(2, 1000, b"k2", b"v2")]))
    writer.close()
    code, lines, _ = run(["dump", "--files", str(tmp_path / "neg-0" / "00000000000000000000.log"),
                          "--deep-iteration"], capsys)
    stamps = [re.search(r"CreateTime: (-?\d+)", line).group(1) for line in lines if line.startswith("| offset:")]
    assert code == 0 and stamps == ["-1", "-5", "1000"]


def test_timestamps_beyond_microseconds_are_printed_not_called_corrupt(tmp_path, capsys):
    """A producer that sent nanoseconds (or Long.MAX): DumpLogSegments prints the value, and so do dump, the
    console consumer and verify finds nothing wrong (the microsecond limit is Arrow's and Spark's, not Kafka's)."""
    stamps = [1_700_000_000_000, 1_700_000_000_000_000_000, (1 << 63) - 1]
    writer = PartitionWriter(tmp_path / "big-0")
    writer.append(build_batch_v2([Record(o, ts, None, b"v%d" % o) for o, ts in enumerate(stamps)]))
    writer.close()
    code, lines, _ = run(["dump", "--files", str(tmp_path / "big-0" / "00000000000000000000.log"),
                          "--deep-iteration"], capsys)
    printed = [int(re.search(r"CreateTime: (-?\d+)", line).group(1)) for line in lines if line.startswith("| offset:")]
    assert code == 0 and printed == stamps
    code = main(["consume", "--data-dir", str(tmp_path), "--topic", "big", "--from-beginning",
                 "--property", "print.timestamp=true"])
    out = capsys.readouterr().out.splitlines()
    assert code == 0 and out == [f"CreateTime:{ts}\tv{o}" for o, ts in enumerate(stamps)]
    code = main(["verify", str(tmp_path)])
    assert code == 0, capsys.readouterr().out


def test_a_segment_past_what_a_broker_opens_is_said_not_called_invalid_bytes(tmp_path, monkeypatch):
    # FileRecords refuses a file over Integer.MAX_VALUE bytes; what follows the default --max-bytes there is data,
    # not "invalid bytes" (the 2 GiB limit scaled down to 300 bytes here, the default --max-bytes with it)
    from kafkaseg.cli import dump as dump_module
    from kafkaseg.storage.segment import SegmentReader

    writer = PartitionWriter(tmp_path / "t-0")
    for base in range(0, 40, 5):
        writer.append(build_batch_v2([Record(o, 1_700_000_000_000, b"k", b"v" * 20) for o in range(base, base + 5)]))
    writer.close()
    (log,) = (tmp_path / "t-0").glob("*.log")
    assert log.stat().st_size > 600
    monkeypatch.setattr(dump_module, "INT_MAX", 300)
    out = io.StringIO()
    report = dump_module.dump_files([str(log)], dump_module.DumpOptions(max_bytes=300), out=out, err=io.StringIO())
    assert "invalid bytes" not in out.getvalue()
    size = log.stat().st_size
    with SegmentReader(str(log)) as reader:
        ends = [header.end for header in reader.iter_headers(0)]
    dumped = max(end for end in ends if end <= 300)
    assert [(path, message.split(":")[0]) for path, message in report.errors] == [
        (str(log), f"{size} bytes, more than the 300 a broker opens (FileRecords refuses such a segment)"),
        (str(log), f"dumped up to byte {dumped}, where the next batch runs past --max-bytes 300")]
    # given a larger --max-bytes, all of it is dumped, with no error
    report = dump_module.dump_files([str(log)], dump_module.DumpOptions(max_bytes=10_000), out=io.StringIO(),
                                    err=io.StringIO())
    assert not report.errors
    # bad bytes before the limit are still reported as such (a zeroed header hiding records), not as the limit
    data = bytearray(log.read_bytes())
    data[ends[0]:ends[0] + 61] = bytes(61)  # a whole v2 batch header zeroed
    log.write_bytes(bytes(data))
    out = io.StringIO()
    report = dump_module.dump_files([str(log)], dump_module.DumpOptions(max_bytes=300), out=out, err=io.StringIO())
    assert f"Found {size - ends[0]} invalid bytes at the end of {log.name}" in out.getvalue()
    messages = [message for _, message in report.errors]
    assert any(f"zeros at byte {ends[0]} end the readable batches but data follows" in m for m in messages), messages
    assert not any("runs past --max-bytes" in m for m in messages), messages
    # an entry whose size runs past the end of the file is bad bytes, whatever the limit: no --max-bytes advice
    struct.pack_into(">q", data, ends[0], 5)
    struct.pack_into(">i", data, ends[0] + 8, 100_000)
    log.write_bytes(bytes(data))
    out = io.StringIO()
    report = dump_module.dump_files([str(log)], dump_module.DumpOptions(max_bytes=300), out=out, err=io.StringIO())
    assert f"Found {size - ends[0]} invalid bytes at the end of {log.name}" in out.getvalue()
    assert not any("runs past --max-bytes" in m for _, m in report.errors), report.errors


# -- legacy wrappers around messages of the other magic (KAFKA-4298) ----------------------------------------------

def _legacy_message(offset: int, magic: int, timestamp: int, key: bytes | None, value: bytes | None,
                    attributes: int = 0) -> bytes:
    """One legacy message as LegacyRecord writes it, built here by hand: offset int64 | size int32 | crc uint32
    (CRC-32 of everything after it) | magic int8 | attributes int8 (bits 0-2 codec, bit 3 LogAppendTime) |
    timestamp int64 (magic 1 only) | key length int32 (-1: null) | key | value length int32 (-1: null) | value."""
    import zlib

    body = struct.pack(">bb", magic, attributes) + (struct.pack(">q", timestamp) if magic == 1 else b"")
    for part in (key, value):
        body += struct.pack(">i", -1) if part is None else struct.pack(">i", len(part)) + part
    return struct.pack(">qiI", offset, 4 + len(body), zlib.crc32(body)) + body


def _v0_gzip_wrapper(inner: bytes, last_offset: int) -> bytes:
    """A magic-0 compressed wrapper: a v0 message (no timestamp field) at the last inner offset, attributes 1
    (gzip), a null key and the gzipped inner message set as its value; v0 inner offsets are absolute."""
    import gzip

    return _legacy_message(last_offset, 0, -1, None, gzip.compress(inner, mtime=0), attributes=1)


@pytest.mark.parametrize("inner_magics, inner_attributes", [
    ((1, 1, 1, 1), 0),      # v1 messages in a v0 wrapper
    ((1, 1, 1, 1), 0x08),   # ... whose own attributes say LogAppendTime (ignored: the wrapper's type is taken)
    ((1, 0, 1, 0), 0),      # v1 and v0 messages mixed in one v0 wrapper
])
def test_deep_iteration_prints_a_v0_wrappers_v1_messages_own_timestamps(tmp_path, capsys, inner_magics,
                                                                        inner_attributes):
    """Kafka's deep iterator reads a v0 wrapper's inner messages at their own magic (AbstractLegacyRecordBatch's
    DeepRecordsIterator, ensureMatchingMagic=false on reads), and a v1 message there keeps its own timestamp:
    LegacyRecord.timestamp takes the wrapper's only for a LogAppendTime wrapper, and a v0 wrapper's type is
    NoTimestampType. DumpLogSegments prints batch.timestampType beside record.timestamp, so
    ``NoTimestampType: <the message's timestamp>``; dump printed -1 for all of them, while its own time-index
    check (dumpTimeIndex: the max of record.timestamp) compared the index against the messages' timestamps."""
    inner = b"".join(_legacy_message(100 + i, magic, 1_600_000_000_000 + 7 * i if magic else -1, b"k%d" % i,
                                     b"v%d" % i, inner_attributes if magic else 0)
                     for i, magic in enumerate(inner_magics))
    folder = tmp_path / "old-0"
    folder.mkdir()
    log = folder / "00000000000000000100.log"
    log.write_bytes(_v0_gzip_wrapper(inner, 103))

    # the oracle: kafka-python reads the inner message set as uncompressed entries, each at its own magic (it parses
    # a wrapper's inner messages at the wrapper's magic, so it cannot read the wrapper itself)
    oracle = []
    records = MemoryRecords(inner)
    while (entry := records.next_batch()) is not None:
        oracle.extend(entry)
    assert [r.magic for r in oracle] == list(inner_magics) and all(r.validate_crc() for r in oracle)
    expected = [f"| offset: {r.offset} NoTimestampType: {-1 if r.timestamp is None else r.timestamp} "
                f"keySize: {len(r.key)} valueSize: {len(r.value)} isValid: true crc: {r.checksum}" for r in oracle]

    code, out, err = run(["dump", "--files", str(log), "--deep-iteration"], capsys)
    # (Kafka 4.3's Java tool would report a step from -1 to 100 here, which is no gap: not followed)
    assert code == 0 and err == []
    assert re.fullmatch(r"offset: 103 position: 0 NoTimestampType: -1 size: \d+ magic: 0 compresscodec: gzip "
                        r"crc: \d+ isvalid: true", out[2])
    assert out[3:] == expected
    stamps = [-1 if r.timestamp is None else r.timestamp for r in oracle]
    code, out, _ = run(["dump", "--files", str(log), "--deep-iteration", "--json"], capsys)
    (batch,) = [json.loads(line) for line in out if line.startswith('{"baseOffset"')]
    assert [r["timestamp"] for r in batch["records"]] == stamps

    # the time-index check takes the same timestamps: an entry at the wrapper with the largest printed one agrees
    (folder / "00000000000000000100.index").write_bytes(b"")
    timeindex = folder / "00000000000000000100.timeindex"
    timeindex.write_bytes(struct.pack(">qi", max(stamps), 3))
    code, out, err = run(["dump", "--files", str(timeindex)], capsys)
    assert code == 0 and err == [] and out[-1] == f"timestamp: {max(stamps)} offset: 103"


def test_each_inner_message_of_a_v1_wrapper_at_offset_0_prints_its_own_crc(tmp_path, capsys):
    """A v1 wrapper whose offset is 0 keeps its inner offsets as they are ("produce data from certain versions of
    librdkafka", DeepRecordsIterator); dump looked each inner CRC up by an offset shifted by the usual v1 rule, so
    the record at 0 printed the last message's CRC and the others none. DumpLogSegments prints each message's."""
    import gzip

    inner = b"".join(_legacy_message(i, 1, 1_600_000_000_000 + i, b"k%d" % i, b"v%d" % i) for i in range(4))
    log = tmp_path / "rd-0" / "00000000000000000000.log"
    log.parent.mkdir()
    log.write_bytes(_legacy_message(0, 1, 1_600_000_000_003, None, gzip.compress(inner, mtime=0), attributes=1))
    (batch,) = _oracle_batches(log)
    oracle = batch[1]
    assert [r.offset for r in oracle] == [0, 1, 2, 3]
    code, out, err = run(["dump", "--files", str(log), "--deep-iteration"], capsys)
    assert code == 0 and err == []
    assert out[3:] == [f"| offset: {r.offset} CreateTime: {r.timestamp} keySize: 2 valueSize: 2 isValid: true "
                       f"crc: {r.checksum}" for r in oracle]


@pytest.mark.parametrize("magic", [0, 1])
def test_deep_iteration_prints_inner_offsets_that_go_back_as_dumplogsegments_does(tmp_path, capsys, magic):
    """DumpLogSegments prints every record DeepRecordsIterator gives, in stored order at the offset it computes,
    and lists each step that is not +1 under ``Non-consecutive offsets in`` (Kafka 4.3: a TreeMap by the offset
    before the step, so one line per offset, the last step from it, lowest first; and the first record is
    checked against -1). kafkaseg's readers refuse a wrapper whose inner offsets repeat or go back; dump printed none of its
    records and so reported a step (9 to 13) that is not in the file. It prints them as Kafka does, and still
    reports the readers' error (exit 1)."""
    def stamp(i):
        return 1_600_000_000_000 + i if magic else -1

    inner = [Record(o, stamp(i), b"k%d" % i, b"v%d" % i, []) for i, o in enumerate([10, 12, 11, 11])]
    log = tmp_path / "old-0" / "00000000000000000009.log"
    log.parent.mkdir()
    log.write_bytes(build_legacy_entries([Record(9, stamp(9), None, b"before", [])], magic)[0].data
                    + build_legacy_wrapper(inner, magic, "gzip").data
                    + build_legacy_entries([Record(13, stamp(13), None, b"after", [])], magic)[0].data)
    oracle = [record for _, records in _oracle_batches(log) for record in records]
    assert [r.offset for r in oracle] == [9, 10, 12, 11, 11, 13]
    kind = "CreateTime" if magic else "NoTimestampType"
    expected = [f"| offset: {r.offset} {kind}: {-1 if r.timestamp is None else r.timestamp} "
                f"keySize: {-1 if r.key is None else len(r.key)} valueSize: {len(r.value)} isValid: true "
                f"crc: {r.checksum}" for r in oracle]

    code, out, err = run(["dump", "--files", str(log), "--deep-iteration"], capsys)
    assert [line for line in out if line.startswith("|")] == expected
    assert err[:4] == [f"Non-consecutive offsets in {log}", "  10 is followed by 12", "  11 is followed by 13",
                       "  12 is followed by 11"]
    assert len(err) == 5 and err[4].startswith(f"Error dumping {log}: ")
    assert "inner offset 11 of the compressed legacy wrapper follows 12" in err[4]
    assert code == 1


# -- Kafka 4.3's DumpLogSegments.java (tools/src/main/java/org/apache/kafka/tools/DumpLogSegments.java) ------------

def test_transaction_log_decoder_prints_coordinator_record_json(tmp_path, capsys):
    """--transaction-log-decoder as TransactionLogMessageParser extends CoordinatorRecordMessageParser (Kafka
    4.1+): key and payload as the generated JSON converters write them, not Kafka 4.0's
    ``transaction_metadata::transactionalId=...`` text; --json carries the same objects."""
    key = struct.pack(">hh", 0, 3) + b"tx1"
    # TransactionLogValue v1: producerId 7 | epoch 2 | timeout 60000 | status 1 | partitions [t: [0]] | lastUpdate
    # 1000 | start 900 | tags: clientTransactionVersion (tag 2) = 2
    value = (struct.pack(">hqhib", 1, 7, 2, 60000, 1) + b"\x02\x02t\x02" + struct.pack(">i", 0) + b"\x00"
             + struct.pack(">qq", 1000, 900) + b"\x01\x02\x02" + struct.pack(">h", 2))
    writer = PartitionWriter(tmp_path / "__transaction_state-0")
    writer.append(build_batch_v2([Record(0, 1_700_000_000_000, key, value), Record(1, 1_700_000_000_000, key, None)]))
    writer.close()
    log = tmp_path / "__transaction_state-0" / f"{0:020d}.log"
    key_text = '{"type":"0","data":{"transactionalId":"tx1"}}'
    payload = ('{"version":"1","data":{"producerId":7,"producerEpoch":2,"transactionTimeoutMs":60000,'
               '"transactionStatus":1,"transactionPartitions":[{"topic":"t","partitionIds":[0]}],'
               '"transactionLastUpdateTimestampMs":1000,"transactionStartTimestampMs":900,'
               '"clientTransactionVersion":2}}')
    code, out, err = run(["dump", "--files", str(log), "--transaction-log-decoder"], capsys)
    assert code == 0 and err == []
    assert out[3:] == [
        f"| offset: 0 CreateTime: 1700000000000 keySize: 7 valueSize: {len(value)} sequence: -1 headerKeys: [] "
        f"key: {key_text} payload: {payload}",
        f"| offset: 1 CreateTime: 1700000000000 keySize: 7 valueSize: -1 sequence: -1 headerKeys: [] "
        f"key: {key_text} payload: <DELETE>"]
    code, out, _ = run(["dump", "--files", str(log), "--transaction-log-decoder", "--json"], capsys)
    records = [record for line in out for record in json.loads(line).get("records", [])]
    assert code == 0 and records[0]["key"] == json.loads(key_text) and records[0]["payload"] == json.loads(payload)
    assert records[1]["payload"] == "<DELETE>"


def test_skip_record_metadata_prints_payload_after_the_indent_and_control_records_as_empty_lines(tmp_path, capsys):
    """dumpBatchRecords with --skip-record-metadata: the contents start with ``| `` (a keyless record's payload
    too: the Scala tool printed `` payload:`` there), and a control record prints nothing but its newline ("This
    flag also skips control records")."""
    from kafkaseg.testing import build_control_batch

    writer = PartitionWriter(tmp_path / "t-0")
    writer.append(build_batch_v2([Record(0, 1_700_000_000_000, None, b"v0"), Record(1, 1_700_000_000_001, b"k", b"v1"),
                                  Record(2, 1_700_000_000_002, b"k", None)],
                                 producer_id=5, producer_epoch=0, base_sequence=0, is_transactional=True))
    writer.append(build_control_batch(3, 1_700_000_000_003, 1, producer_id=5, producer_epoch=0, coordinator_epoch=4))
    writer.close()
    log = tmp_path / "t-0" / f"{0:020d}.log"
    code, out, _ = run(["dump", "--files", str(log), "--print-data-log", "--skip-record-metadata"], capsys)
    assert code == 0
    assert [line for line in out if not line.startswith(("baseOffset", "Dumping", "Log starting"))] == [
        "| payload: v0", "| key: k payload: v1", "| key: k", ""]
    code, out, _ = run(["dump", "--files", str(log), "--print-data-log"], capsys)
    assert [line for line in out if line.startswith("|")] == [
        "| offset: 0 CreateTime: 1700000000000 keySize: -1 valueSize: 2 sequence: 0 headerKeys: [] payload: v0",
        "| offset: 1 CreateTime: 1700000000001 keySize: 1 valueSize: 2 sequence: 1 headerKeys: [] key: k payload: v1",
        "| offset: 2 CreateTime: 1700000000002 keySize: 1 valueSize: -1 sequence: 2 headerKeys: [] key: k",
        "| offset: 3 CreateTime: 1700000000003 keySize: 4 valueSize: 6 sequence: -1 headerKeys: [] "
        "endTxnMarker: COMMIT coordinatorEpoch: 4"]


def test_leader_change_control_record_prints_as_json(tmp_path, capsys):
    """printControlRecord's LEADER_CHANGE case (KAFKA-19069, Kafka 4.1): `` LeaderChange: <json>``, not
    ``controlType: LEADER_CHANGE(2)``."""
    from kafkaseg.testing.writer import control_key

    # LeaderChangeMessage v0 (flexible): version 0 | leaderId 1 | voters [{voterId 1}] | grantingVoters [{1}] | tags
    voter = struct.pack(">i", 1) + b"\x00"
    value = struct.pack(">hi", 0, 1) + b"\x02" + voter + b"\x02" + voter + b"\x00"
    writer = PartitionWriter(tmp_path / "__cluster_metadata-0")
    writer.append(build_batch_v2([Record(0, 1_700_000_000_000, control_key(2), value)], is_control=True))
    writer.close()
    log = tmp_path / "__cluster_metadata-0" / f"{0:020d}.log"
    code, out, _ = run(["dump", "--files", str(log), "--deep-iteration"], capsys)
    assert code == 0 and out[-1] == (
        f"| offset: 0 CreateTime: 1700000000000 keySize: 4 valueSize: {len(value)} sequence: -1 headerKeys: [] "
        'LeaderChange: {"version":0,"leaderId":1,"voters":[{"voterId":1}],"grantingVoters":[{"voterId":1}]}')


def test_a_producer_snapshot_entry_without_batch_metadata_ends_at_its_last_timestamp(tmp_path, capsys):
    """dumpProducerIdSnapshot prints `` lastTimestamp: T`` and, only with batch metadata, `` firstSequence: ...``:
    no trailing space (the Scala tool ended the first part with one)."""
    from kafkaseg.testing import ProducerEntry, encode_producer_snapshot

    path = tmp_path / f"{41:020d}.snapshot"
    path.write_bytes(encode_producer_snapshot([ProducerEntry(7, 1, 4, 40, 4, 1_700_000_000_000),
                                               ProducerEntry(9, 0)]))
    code, out, _ = run(["dump", "--files", str(path)], capsys)
    assert code == 0 and out[1:] == [
        "producerId: 7 producerEpoch: 1 coordinatorEpoch: -1 currentTxnFirstOffset: OptionalLong.empty "
        "lastTimestamp: 1700000000000 firstSequence: 0 lastSequence: 4 lastOffset: 40 offsetDelta: 4 "
        "timestamp: 1700000000000",
        "producerId: 9 producerEpoch: 0 coordinatorEpoch: -1 currentTxnFirstOffset: OptionalLong.empty "
        "lastTimestamp: -1"]


def test_index_mismatches_print_once_per_offset_highest_first(tmp_path, capsys):
    """dumpIndex keeps a file's mismatches in a TreeMap(reverseOrder()) keyed by the index offset: highest offset
    first, one line per offset holding the last log offset found for it."""
    writer = PartitionWriter(tmp_path / "t-0")
    for offset in range(3):
        writer.append(build_batch_v2([Record(offset, 1_700_000_000_000 + offset, b"k", b"v")]))
    writer.close()
    folder = tmp_path / "t-0"
    log = folder / f"{0:020d}.log"
    size = len(build_batch_v2([Record(0, 1_700_000_000_000, b"k", b"v")]).data)
    assert log.stat().st_size == 3 * size
    index = folder / f"{0:020d}.index"
    # entries (relative offset, position): 2 -> batch 0, 1 -> batch 0, 2 -> batch 1
    index.write_bytes(struct.pack(">ii", 2, 0) + struct.pack(">ii", 1, 0) + struct.pack(">ii", 2, size))
    code, out, err = run(["dump", "--files", str(index)], capsys)
    assert out[1:] == ["offset: 2 position: 0", "offset: 1 position: 0", f"offset: 2 position: {size}"]
    assert code == 1 and err == [f"Mismatches in :{index.resolve()}", "  Index offset: 2, log offset: 1",
                                 "  Index offset: 1, log offset: 0"]


def test_remote_log_metadata_decoder_prints_the_objects_as_kafkas_tool_does(tmp_path, capsys):
    """--remote-log-metadata-decoder as RemoteMetadataLogMessageParser: no key, the deserialized object's
    toString as the payload (DumpLogSegmentsTest.testDumpRemoteLogMetadataMultipleRecordsOneBatch's update and
    delete records, then "corrupted" as testDumpRemoteLogMetadataWithCorruption has it); --json gives the object's
    fields. Values built by hand from RemoteLogSegmentMetadataUpdateRecord.json and
    RemotePartitionDeleteMetadataRecord.json: frame 1 | api key | version 0 | fields | tagged fields."""
    topic_id = bytes.fromhex("0123456789abcdef0123456789abcdef")
    segment_id = bytes.fromhex("fedcba9876543210fedcba9876543210")
    topic_id_partition = b"\x04foo" + topic_id + struct.pack(">i", 0) + b"\x00"
    update = (b"\x01\x01\x00" + topic_id_partition + segment_id + b"\x00" + struct.pack(">iq", 0, 0)
              + b"\x05\x00\x01\x02\x03" + b"\x01" + b"\x00")
    delete = b"\x01\x02\x00" + topic_id_partition + struct.pack(">iqb", 0, 0, 0) + b"\x00"
    writer = PartitionWriter(tmp_path / "__remote_log_metadata-0")
    writer.append(build_batch_v2([Record(offset, 1_700_000_000_000, None, value)
                                  for offset, value in enumerate((update, delete, b"corrupted"))]))
    writer.close()
    log = tmp_path / "__remote_log_metadata-0" / f"{0:020d}.log"
    update_text = ("RemoteLogSegmentMetadataUpdate{remoteLogSegmentId=RemoteLogSegmentId{topicIdPartition="
                   "ASNFZ4mrze8BI0VniavN7w:foo-0, id=_ty6mHZUMhD-3LqYdlQyEA}, customMetadata=Optional["
                   "CustomMetadata{4 bytes}], state=COPY_SEGMENT_FINISHED, eventTimestampMs=0, brokerId=0}")
    delete_text = ("RemotePartitionDeleteMetadata{topicPartition=ASNFZ4mrze8BI0VniavN7w:foo-0, "
                   "state=DELETE_PARTITION_MARKED, eventTimestampMs=0, brokerId=0}")
    code, out, err = run(["dump", "--files", str(log), "--remote-log-metadata-decoder"], capsys)
    assert code == 0 and err == []
    assert out[1] == "Log starting offset: 0" and BATCH_V2.match(out[2])
    metadata = "CreateTime: 1700000000000 keySize: -1 valueSize: {} sequence: -1 headerKeys: []"
    assert out[3:] == [
        f"| offset: 0 {metadata.format(len(update))} payload: {update_text}",
        f"| offset: 1 {metadata.format(len(delete))} payload: {delete_text}",
        f"| offset: 2 {metadata.format(9)} payload: Error at offset 2, skipping. Could not deserialize metadata "
        "record due to unknown frame version 99(only frame version 1 is supported)"]
    code, out, _ = run(["dump", "--files", str(log), "--remote-log-metadata-decoder", "--json"], capsys)
    records = [record for line in out for record in json.loads(line).get("records", [])]
    assert code == 0 and [("key" in record) for record in records] == [False] * 3
    assert records[0]["payload"] == {
        "type": "RemoteLogSegmentMetadataUpdate", "version": 0,
        "remoteLogSegmentId": {"topicIdPartition": {"topicId": "ASNFZ4mrze8BI0VniavN7w", "topic": "foo",
                                                    "partition": 0}, "id": "_ty6mHZUMhD-3LqYdlQyEA"},
        "customMetadata": "AAECAw==", "state": "COPY_SEGMENT_FINISHED", "eventTimestampMs": 0, "brokerId": 0}
    assert records[1]["payload"]["state"] == "DELETE_PARTITION_MARKED"
    assert records[2]["payload"].startswith("Error at offset 2, skipping. Could not deserialize")


@pytest.mark.parametrize("name", ["99999999999999999999.log", "99999999999999999999.index",
                                  "99999999999999999999.timeindex", "99999999999999999999.txnindex",
                                  "09223372036854775808.log", "99999999999999999999-0000000001.checkpoint",
                                  "00000000000000000005-9999999999.checkpoint"])
def test_a_file_named_past_a_long_is_an_error_not_dumped(tmp_path, capsys, name):
    """Kafka's tool parses the offset in the name as a long (``toLong``, ``Long.parseLong``; a KRaft snapshot's
    epoch as an int) and fails on one that does not fit, as its broker does and kafkaseg's discovery refuses the
    name (found: a .log was dumped under "Log starting offset: 99999999999999999999", an index died in a
    traceback): one error naming the file, exit 1, nothing of it dumped, and the next file still dumped."""
    writer = PartitionWriter(tmp_path / "t-0", index_interval_bytes=1)
    for b in range(3):
        writer.append(build_batch_v2([Record(o, 1_700_000_000_000 + o, b"k", b"v") for o in range(5 * b, 5 * b + 5)]))
    writer.close()
    good = tmp_path / "t-0" / f"{0:020d}.log"
    suffix = name[name.index("."):]
    source = good.with_suffix(suffix) if suffix in (".index", ".timeindex") else good
    odd = tmp_path / name
    odd.write_bytes(b"" if suffix == ".txnindex" else source.read_bytes())
    code, out, err = run(["dump", "--no-progress", "--files", f"{odd},{good}"], capsys)
    assert code == 1 and not any("Traceback" in line for line in out + err)
    assert out[0] == f"Dumping {odd}" and out[1] == f"Dumping {good}", out
    assert out[2] == "Log starting offset: 0" and len(out) == 6
    (line,) = err
    assert line.startswith(f"Error dumping {odd}: ") and "in the file name does not fit in a " in line
    code, out, err = run(["dump", "--no-progress", "--json", "--files", str(odd)], capsys)
    assert code == 1 and [json.loads(line)["file"] for line in out] == [str(odd)] * 2 and err == []


@pytest.mark.parametrize("name", ["09223372036854775807.log", "09223372036854775807-2147483647.checkpoint"])
def test_a_file_named_at_the_largest_long_is_dumped(tmp_path, capsys, name):
    writer = PartitionWriter(tmp_path / "t-0")
    writer.append(build_batch_v2([Record(0, 1_700_000_000_000, b"k", b"v")]))
    writer.close()
    odd = tmp_path / name
    odd.write_bytes((tmp_path / "t-0" / f"{0:020d}.log").read_bytes())
    code, out, err = run(["dump", "--no-progress", "--files", str(odd)], capsys)
    assert code == 0 and err == [] and len(out) == 3
    assert out[1] in ("Log starting offset: 9223372036854775807",
                      "Snapshot end offset: 9223372036854775807, epoch: 2147483647")


def _one_segment(tmp_path):
    writer = PartitionWriter(tmp_path / "t-0", index_interval_bytes=1)
    for b in range(2):
        writer.append(build_batch_v2([Record(o, 1_700_000_000_000 + o, b"k", b"v") for o in range(3 * b, 3 * b + 3)]))
    writer.close()
    return tmp_path / "t-0" / f"{0:020d}.log"


@pytest.mark.parametrize("name", ["abc.checkpoint", "00000000000000000005.checkpoint", "5-.checkpoint",
                                  "-1.checkpoint", "00000000000000000005-1-2.checkpoint", "x5-1.checkpoint",
                                  # Snapshots.parse reads 20 and 10 characters: a shorter part fails it
                                  "5-3.checkpoint", "00000000000000000005-3.checkpoint", "5-0000000003.checkpoint"])
def test_a_checkpoint_not_named_end_offset_dash_epoch_is_an_error_not_a_log_at_offset_0(tmp_path, capsys, name):
    """DumpLogSegments takes a .checkpoint other than bootstrap.checkpoint as a KRaft snapshot and parses its name
    (Snapshots.parse(...).get(): Long.parseLong, Integer.parseInt), which fails on another name; kafkaseg dumped it
    as 'Log starting offset: 0'. One error naming the file, exit 1, the next file still dumped."""
    good = _one_segment(tmp_path)
    odd = tmp_path / name
    odd.write_bytes(good.read_bytes())
    code, out, err = run(["dump", "--no-progress", "--files", f"{odd},{good}"], capsys)
    assert code == 1 and out[:3] == [f"Dumping {odd}", f"Dumping {good}", "Log starting offset: 0"], out
    assert len(out) == 5
    (line,) = err
    assert line.startswith(f"Error dumping {odd}: ") and "<end offset>-<epoch>.checkpoint" in line, line
    code, out, err = run(["dump", "--no-progress", "--json", "--files", str(odd)], capsys)
    assert code == 1 and err == [] and [json.loads(row).get("problem") for row in out] == [None, "error"]
    # bootstrap.checkpoint is Kafka's bootstrap snapshot, dumped as one
    boot = tmp_path / "bootstrap.checkpoint"
    boot.write_bytes(good.read_bytes())
    code, out, err = run(["dump", "--no-progress", "--files", str(boot)], capsys)
    assert code == 0 and err == [] and out[1] == "KRaft bootstrap snapshot" and len(out) == 4


def _errors_of_each_kind(tmp_path):
    """Files each of which fails the dump with a per-file error: (file, words of its error)."""
    good = _one_segment(tmp_path)
    folder = good.parent
    odd_index = tmp_path / "foo.index"
    odd_index.write_bytes(bytes(16))
    bad_magic = tmp_path / "badmagic.log"
    data = bytearray(good.read_bytes())
    data[16] = 9
    bad_magic.write_bytes(bytes(data))
    past = tmp_path / "99999999999999999999.log"
    past.write_bytes(good.read_bytes())
    checkpoint = tmp_path / "abc.checkpoint"
    checkpoint.write_bytes(good.read_bytes())
    snapshot = tmp_path / f"{5:020d}.snapshot"
    snapshot.write_bytes(b"\x00\x01garbage")
    manifest = folder / f"{0:020d}.rsm-manifest"
    manifest.write_text("abc")
    return [(odd_index, "not named after a base offset"), (bad_magic, "unknown magic 9"),
            (past, "does not fit in a 64-bit long"), (checkpoint, "<end offset>-<epoch>.checkpoint"),
            (tmp_path / "gone.log", "No such file or directory"), (snapshot, "producer snapshot needs"),
            (manifest, "not a JSON manifest")]


@pytest.mark.parametrize("deep", [False, True])
def test_a_per_file_error_names_the_file_once(tmp_path, capsys, deep):
    """'Error dumping X: X: ...' (X once as given, once absolute) said the file twice, a missing file's three
    times: the line names it once, as given; the message is what is wrong with it (a byte position kept)."""
    cases = _errors_of_each_kind(tmp_path)
    argv = ["dump", "--no-progress", "--files", ",".join(str(f) for f, _ in cases)]
    if deep:
        argv.append("--deep-iteration")
    code, out, err = run(argv, capsys)
    assert code == 1
    lines = [line for line in err if line.startswith("Error dumping ")]
    assert len(lines) == len(cases), err
    for (path, words), line in zip(cases, lines):
        assert line.startswith(f"Error dumping {path}: ") and words in line, line
        assert line.count(path.name) == 1, line
    code, out, err = run([*argv, "--json"], capsys)
    rows = [json.loads(line) for line in out]
    messages = {row["file"]: row["message"] for row in rows if row.get("problem") == "error"}
    assert list(messages) == [str(f) for f, _ in cases]
    for path, words in cases:
        assert words in messages[str(path)] and path.name not in messages[str(path)], messages[str(path)]
    assert "byte 0" in messages[str(cases[1][0])]


def _exit_status(argv, capsys):
    try:
        code = main(argv)
    except SystemExit as done:
        code = done.code
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.parametrize("option,value", [("--max-bytes", "-1"), ("--max-message-size", "0"),
                                          ("--max-message-size", "-5")])
def test_a_size_option_no_read_can_use_is_a_usage_error_not_a_silent_nothing(tmp_path, capsys, option, value):
    """Kafka's tool fails on them (FileRecords.slice: 'Invalid size'; a slice of 0 bytes has no batch for an
    index entry); kafkaseg dumped nothing with exit 0 (--max-bytes -1) or called every index entry a mismatch."""
    log = _one_segment(tmp_path)
    index = log.with_suffix(".index")
    code, out, err = _exit_status(["dump", "--no-progress", "--files", f"{log},{index}", option, value], capsys)
    assert code == 2 and out == "" and option in err and "Traceback" not in err, err
    # --max-bytes 0 is a slice of nothing, as in Kafka's tool: the header only
    code, out, err = _exit_status(["dump", "--no-progress", "--files", str(log), "--max-bytes", "0"], capsys)
    assert code == 0 and out.splitlines() == [f"Dumping {log}", "Log starting offset: 0"] and err == ""


def test_files_given_twice_dumps_both_not_the_last_only(tmp_path, capsys):
    """argparse kept the last --files and dropped the first without a word (Kafka's tool refuses a second)."""
    log = _one_segment(tmp_path)
    index = log.with_suffix(".index")
    code, out, err = _exit_status(["dump", "--no-progress", "--files", str(log), "--files", str(index)], capsys)
    assert code == 0 and err == ""
    assert [line for line in out.splitlines() if line.startswith("Dumping ")] == [f"Dumping {log}",
                                                                                f"Dumping {index}"]


def test_an_error_about_another_file_names_that_file_once(tmp_path, capsys):
    """An index whose .log is not beside it: the error names the log it could not open, once (the OS error's
    own copy of the name, '... No such file or directory: <log>', repeated it)."""
    log = _one_segment(tmp_path)
    alone = tmp_path / "alone"
    alone.mkdir()
    index = alone / log.with_suffix(".index").name
    index.write_bytes(log.with_suffix(".index").read_bytes())
    code, out, err = run(["dump", "--no-progress", "--files", str(index)], capsys)
    (line,) = err
    missing = alone / log.name
    assert code == 1 and line.startswith(f"Error dumping {index}: ") and "No such file or directory" in line, line
    assert line.count(str(missing)) == 1, line


def test_files_as_separate_arguments_from_a_shell_glob_are_all_dumped(tmp_path, capsys):
    """'--files <dir>/*.log' hands the shell's matches as separate arguments: each is dumped, as a comma separated
    list is (argparse refused all but the first as unrecognized; Kafka's tool dumps the first only)."""
    log = _one_segment(tmp_path)
    index, timeindex = log.with_suffix(".index"), log.with_suffix(".timeindex")
    code, out, err = _exit_status(["dump", "--no-progress", "--files", str(log), str(index), f"{timeindex},{log}",
                                   "--verify-index-only"], capsys)
    assert code == 0 and err == ""
    assert [line for line in out.splitlines() if line.startswith("Dumping ")] == [
        f"Dumping {path}" for path in (log, index, timeindex, log)]


@pytest.mark.parametrize("given", ["", ",", " "])
def test_files_naming_no_file_is_a_usage_error_not_an_empty_success(capsys, given):
    """'--files \"$FILES\"' with the variable empty dumped nothing and exited 0, as if every file were fine (Kafka's
    tool fails on the empty name)."""
    code, out, err = _exit_status(["dump", "--no-progress", "--files", given], capsys)
    assert code == 2 and out == "" and "--files" in err and "Traceback" not in err, err


def test_a_log_not_named_after_an_offset_is_dumped_from_its_first_batchs_base_offset(tmp_path, capsys):
    """Kafka's tool fails on a .log whose name is no offset (``toLong``); kafkaseg dumps it (an operator's renamed
    backup), but printed 'Log starting offset: 0' for one whose records start at 40. It prints the base offset
    discovery reads such a file at, its first batch's, and says the name is no offset; an empty one says so."""
    from kafkaseg.storage.layout import discover

    writer = PartitionWriter(tmp_path / "t-0", log_start_offset=40)
    for b in range(2):
        writer.append(build_batch_v2([Record(o, 1_700_000_000_000 + o, b"k", b"v") for o in range(40 + 3 * b,
                                                                                             43 + 3 * b)]))
    writer.close()
    backup = tmp_path / "backup.log"
    backup.write_bytes((tmp_path / "t-0" / f"{40:020d}.log").read_bytes())
    (pdir,) = discover([str(backup)])
    code, out, err = run(["dump", "--no-progress", "--files", str(backup)], capsys)
    assert code == 0 and err == [] and len(out) == 4, out
    assert out[1] == (f"Log starting offset: {pdir.segments[0].base_offset} (backup.log is not named after an "
                      "offset: its first batch's base offset)") and pdir.segments[0].base_offset == 40
    code, out, err = run(["dump", "--no-progress", "--json", "--files", str(backup)], capsys)
    assert code == 0 and json.loads(out[1])["info"].startswith("Log starting offset: 40 (")
    empty = tmp_path / "empty.log"
    empty.write_bytes(b"")
    code, out, err = run(["dump", "--no-progress", "--files", str(empty)], capsys)
    assert code == 0 and out == [f"Dumping {empty}", "Log starting offset: 0 (empty.log is not named after an "
                                 "offset, and holds no readable batch to take one from)"], out


def test_a_missing_log_not_named_after_an_offset_is_only_its_error(tmp_path, capsys):
    """A .log not named after an offset that cannot be opened (missing, or no file) printed 'Log starting offset: 0
    (... holds no readable batch to take one from)' before its error: a claim about contents nothing read (the
    open's error was taken for an unreadable first batch). Only the error line is said, naming the file once."""
    missing = tmp_path / "backup.log"
    code, out, err = run(["dump", "--no-progress", "--files", str(missing)], capsys)
    assert code == 1 and out == [f"Dumping {missing}"], out
    (line,) = [e for e in err if e.startswith("Error dumping")]
    assert "No such file or directory" in line and line.count(str(missing)) == 1, err
