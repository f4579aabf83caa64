"""``kafkaseg verify`` and ``kafkaseg describe``: clean dirs pass, each kind of damage is found at its file and
byte, and describe's numbers match the generator's manifest."""

from __future__ import annotations

import json
import shutil
import struct

import pytest

from kafkaseg.cli.main import main
from kafkaseg.testing import TopicSpec, write_data_dir
from tests import offset_damage

TOPICS = [
    TopicSpec("orders", partitions=2, records_per_partition=1200, segment_bytes=40 * 1024, headers=1),
    TopicSpec("pay", records_per_partition=600, records_per_batch=10, transactional=True, abort_ratio=0.3,
              open_transactions=1, segment_bytes=32 * 1024, codec="gzip"),
    TopicSpec("compacted", records_per_partition=800, key_cardinality=40, gap_ratio=0.3, idempotent=True,
              cleanup_policy="compact", segment_bytes=24 * 1024),
    TopicSpec("live", records_per_partition=500, preallocate_active_index=8 * 1024, segment_bytes=24 * 1024),
    TopicSpec("zeroed", records_per_partition=1200, segment_bytes=40 * 1024),
]


@pytest.fixture()
def datadir(tmp_path):
    manifest = write_data_dir(tmp_path / "kafka", TOPICS, seed=3)
    return manifest


def verify_json(path, capsys):
    code = main(["verify", str(path), "--json"])
    report = json.loads(capsys.readouterr().out)
    return code, report


def test_clean_dir_passes(datadir, capsys):
    code, report = verify_json(datadir.path, capsys)
    assert code == 0 and report["ok"], [p for p in report["problems"] if p["severity"] != "info"]
    by_name = {(p["topic"], p["partition"]): p for p in report["partitions"]}
    for key, pm in datadir.partitions.items():
        assert by_name[key]["logEndOffset"] == pm.log_end_offset
        assert sum(s["records"] for s in by_name[key]["segments"]) == len(pm.records) - sum(
            1 for r in pm.records if r.offset < pm.segments[0].base_offset)
    gaps = [p for p in report["problems"] if "non-consecutive" in p["message"]]
    assert gaps and all(p["severity"] == "info" and "compacted-0" in p["file"] for p in gaps)
    # the human table
    assert main(["verify", str(datadir.path)]) == 0
    out = capsys.readouterr().out
    assert "orders-1" in out and "0 errors" in out


def test_corruptions_are_located(datadir, capsys):
    pm = datadir.partition("orders", 0)
    seg = pm.directory / f"{pm.segments[1].base_offset:020d}.log"
    data = bytearray(seg.read_bytes())
    data[200] ^= 0xFF  # inside the first batch's records: CRC mismatch at byte 0
    seg.write_bytes(bytes(data))
    index = pm.directory / f"{pm.segments[0].base_offset:020d}.index"
    entries = bytearray(index.read_bytes())
    struct.pack_into(">i", entries, 8 * 2 + 4, struct.unpack_from(">i", entries, 8 * 2 + 4)[0] + 1)
    index.write_bytes(bytes(entries))
    rolled = pm.directory / f"{pm.segments[0].base_offset:020d}.log"
    with open(rolled, "ab") as f:
        f.write(b"\x00\x00\x00\x00\x00\x00\x10\x00\x00\x00\x00\x40\x00")  # a batch header cut short
    # an orphan between segments (one past the newest is a lost segment: tests/test_carried_edges.py)
    orphan = f"{pm.segments[0].base_offset + 1:020d}.index"
    (pm.directory / orphan).write_bytes(b"")
    (pm.directory / "00000000000000000000.log.deleted").write_bytes(b"")
    hw = datadir.path / "replication-offset-checkpoint"
    hw.write_text(hw.read_text().replace(f"orders 1 {datadir.partition('orders', 1).high_watermark}",
                                         f"orders 1 {datadir.partition('orders', 1).high_watermark + 5}"))
    code, report = verify_json(datadir.path, capsys)
    assert code == 1 and not report["ok"]
    problems = report["problems"]

    def find(severity, file_suffix, text):
        return [p for p in problems if p["severity"] == severity and p["file"].endswith(file_suffix)
                and text in p["message"]]

    crc = find("error", seg.name, "CRC mismatch")
    assert crc and crc[0]["position"] == 0
    mismatch = find("error", index.name, "not at a batch boundary")
    assert mismatch and mismatch[0]["position"] == 16
    tail = find("error", rolled.name, "invalid bytes at the end of a rolled segment")
    assert tail and tail[0]["position"] == rolled.stat().st_size - 13
    assert find("warning", orphan, "orphaned index")
    assert find("warning", ".log.deleted", "temporary file")
    assert find("error", "replication-offset-checkpoint", "orders-1: high watermark")


def test_describe_matches_manifest(datadir, capsys):
    assert main(["describe", str(datadir.path), "--json"]) == 0
    described = {(d["topic"], d["partition"]): d for d in json.loads(capsys.readouterr().out)["partitions"]}
    for key, pm in datadir.partitions.items():
        d = described[key]
        assert d["logStartOffset"] == pm.log_start_offset
        assert d["logEndOffset"] == pm.log_end_offset
        assert d["highWatermark"] == pm.high_watermark
        assert len(d["segments"]) == len(pm.segments)
        assert [s["baseOffset"] for s in d["segments"]] == [s.base_offset for s in pm.segments]  # camelCase too
        assert d["logDir"] == str(datadir.path)
        assert d["maxTimestamp"] == max(r.timestamp for r in pm.records)
        assert d["magics"] == [2]
    assert described[("pay", 0)]["lastStableOffset"] == datadir.partition("pay").last_stable_offset
    assert described[("pay", 0)]["codecs"] == ["gzip", "none"]  # control batches are never compressed
    assert described[("pay", 0)]["transactional"] is True
    assert main(["describe", str(datadir.path), "--segments"]) == 0
    assert "orders-0 segments" in capsys.readouterr().out
    for key, d in described.items():  # without transactions the last stable offset is the bound (UnifiedLog)
        if not d["transactional"]:
            assert d["lastStableOffset"] == min(d["highWatermark"], d["logEndOffset"]), key


def test_tables_wider_than_the_console_are_printed_whole(tmp_path, capsys):
    """A table wider than the console (240 columns for a pipe, the terminal's width for a terminal) is printed at
    its natural width: rich would shorten its cells to "24…", which reads like a value."""
    topic = "t" * 200  # Kafka allows 249 characters
    data = write_data_dir(tmp_path / "logs", [TopicSpec(topic, records_per_partition=1234)], seed=3)
    assert main(["describe", str(data.path)]) == 0
    out = capsys.readouterr().out
    assert "…" not in out and topic in out
    assert any(len(line) > 240 for line in out.splitlines())
    row = next(line for line in out.splitlines() if topic in line)
    assert [cell.strip() for cell in row.split("│")].count("1234") >= 2  # log end and HW, whole


def test_describe_names_each_replicas_log_dir_and_a_misspelt_topic(datadir, tmp_path, capsys):
    copy = tmp_path / "broker2"
    shutil.copytree(datadir.path, copy)
    assert main(["describe", str(datadir.path), str(copy), "--topic", "orders"]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if "orders" in line and "│" in line]
    assert "log dir" not in rows[0] and len(rows) == 2 * len([k for k in datadir.partitions if k[0] == "orders"])
    assert any(str(copy) in row for row in rows) and any(str(datadir.path) in row for row in rows)
    assert main(["describe", str(datadir.path), "--topic", "Orders"]) == 1  # not an empty table: a typo
    err = capsys.readouterr().err
    assert "no topic 'Orders'" in err and "did you mean 'orders'?" in err
    # --topic is repeatable and takes a comma list (the last one given used to win, silently)
    for argv in (["--topic", "orders", "--topic", "pay"], ["--topic", "orders,pay"]):
        assert main(["describe", str(datadir.path), "--json", *argv]) == 0
        described = {p["topic"] for p in json.loads(capsys.readouterr().out)["partitions"]}
        assert described == {"orders", "pay"}, argv
    assert main(["describe", str(datadir.path), "--json", "--topic", "orders,Pay"]) == 0  # one found: its rows
    out = capsys.readouterr()
    assert {p["topic"] for p in json.loads(out.out)["partitions"]} == {"orders"} and "no topic 'Pay'" in out.err


def test_describe_notes_a_high_watermark_above_the_log_end(datadir, capsys):
    """A copy cut short below its high watermark: a note while the recovery point is at the log end (a crash's
    unflushed tail, which a read ends at); with the recovery point above it too, acknowledged and flushed offsets
    are missing, which a read to latest raises (DataLossError) and describe calls an error."""
    (log,) = sorted((datadir.path / "orders-0").glob("*.log"))[-1:]
    with open(log, "r+b") as fh:
        fh.truncate(log.stat().st_size - 100)  # a copy cut short: the last batch is gone

    def orders_0():
        code = main(["describe", str(datadir.path), "--json"])
        return code, next(d for d in json.loads(capsys.readouterr().out)["partitions"]
                          if (d["topic"], d["partition"]) == ("orders", 0))

    code, d = orders_0()  # (the recovery point 1200, at the high watermark)
    assert code == 2 and d["highWatermark"] > d["logEndOffset"] == d["lastStableOffset"]
    assert any("acknowledged and flushed" in error for error in d["errors"]) and d["lostTail"]["proven"]
    checkpoint = datadir.path / "recovery-point-offset-checkpoint"
    checkpoint.write_text(checkpoint.read_text().replace("orders 0 1200", f"orders 0 {d['logEndOffset']}"))
    code, d = orders_0()
    assert code == 0 and d["highWatermark"] > d["logEndOffset"] == d["lastStableOffset"]
    assert any("is above the log end offset" in note for note in d["notes"]) and d["lostTail"] is None


@pytest.mark.corpus
def test_corpus_dirs_verify_clean(corpus_dir, capsys):
    """Every real broker log dir of the corpus (the folders holding its partition folders) verifies without an
    error, and no rolled segment's index ends in zeros (real brokers trim them)."""
    log_dirs = sorted({log.parent.parent for log in (corpus_dir / "segments").rglob("*.log")})
    assert len(log_dirs) >= 4, log_dirs
    for where in log_dirs:
        code, report = verify_json(where, capsys)
        errors = [p for p in report["problems"] if p["severity"] == "error"]
        assert code == 0 and not errors, (where, errors)
        untrimmed = [p for p in report["problems"] if "of zeros from byte" in p["message"]]
        assert not untrimmed, (where, untrimmed)


def test_a_live_partition_too_young_for_its_first_index_entry_verifies_clean(tmp_path, capsys):
    """Preallocated active indexes holding only zeros (fewer than index.interval.bytes appended, or an empty
    partition) are healthy live data, not index mismatches."""
    write_data_dir(tmp_path, [
        TopicSpec("plain", partitions=2, records_per_partition=3000, segment_bytes=60000, preallocate_active_index=True),
        TopicSpec("empty", records_per_partition=0, preallocate_active_index=True)], seed=1)
    code, report = verify_json(tmp_path, capsys)
    assert code == 0, [p for p in report["problems"] if p["severity"] == "error"]


def test_version_says_which_decoder_runs(capsys):
    from kafkaseg import __version__

    with pytest.raises(SystemExit) as done:
        main(["--version"])
    out = " ".join(capsys.readouterr().out.split())
    assert done.value.code == 0 and out.startswith(f"kafkaseg {__version__}: decoder ")
    from kafkaseg.decode import IMPLEMENTATION

    assert ("compiled (Cython)" in out) == (IMPLEMENTATION == "cython") and "pyarrow" in out


def test_version_is_one_line_whatever_the_terminal_width(capsys, monkeypatch):
    """argparse's version action wraps its text at the terminal's width: a bug report or ``grep`` got it in
    pieces."""
    monkeypatch.setenv("COLUMNS", "60")
    with pytest.raises(SystemExit):
        main(["--version"])
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 1 and lines[0].startswith("kafkaseg ") and "Python" in lines[0]


def test_a_segment_missing_from_a_copy_is_a_warning_and_a_compaction_gap_is_not(datadir, capsys):
    """Offsets missing between segments above the cleaner checkpoint are what a copy that lost a file looks like
    (only the cleaner removes offsets inside a log): a warning, where a compacted partition's gaps stay info."""
    pm = datadir.partition("orders", 0)
    middle = pm.segments[1]
    for path in pm.directory.glob(f"{middle.base_offset:020d}.*"):
        path.unlink()
    code, report = verify_json(datadir.path, capsys)
    warnings = [p for p in report["problems"] if p["severity"] == "warning"]
    following = f"{pm.segments[2].base_offset:020d}.log"
    assert [(p["file"].rsplit("/", 1)[-1], p["message"].split(" are missing")[0]) for p in warnings] == [
        (following, f"offsets {middle.base_offset}..{pm.segments[2].base_offset - 1}")]
    assert "missing from this copy" in warnings[0]["message"]


def test_a_zeroed_batch_header_hiding_records_is_an_error_and_a_preallocated_tail_is_not(tmp_path, capsys):
    """Zeros where a batch header should be, with records after them, look like a preallocated tail to a header
    walk; Kafka's reader fails on the header (record size 0). verify, dump and offsets must say so (the records after
    it were acknowledged), while zeros to the end of the file stay the harmless preallocation they are."""
    from kafkaseg.wire.batch import iter_headers

    spec = TopicSpec("act", records_per_partition=60, records_per_batch=5, vary_batch_size=False, value_size=20)
    zeroed = write_data_dir(tmp_path / "zeroed", [spec], seed=1)
    preallocated = write_data_dir(tmp_path / "preallocated", [spec], seed=1)
    for manifest in (zeroed, preallocated):
        log = manifest.partition("act", 0).directory / f"{0:020d}.log"
        data = bytearray(log.read_bytes())
        if manifest is zeroed:
            second = list(iter_headers(bytes(data)))[1].position
            data[second:second + 20] = bytes(20)
        else:
            data += bytes(8192)
        log.write_bytes(bytes(data))
    log = f"{zeroed.partition('act', 0).directory}/{0:020d}.log"
    code, report = verify_json(zeroed.path, capsys)
    assert code == 1 and any("data follows at byte" in p["message"] and p["severity"] == "error"
                             for p in report["problems"])
    assert main(["dump", "--files", log]) == 1
    assert "a zeroed batch header hiding records" in capsys.readouterr().err
    assert main(["offsets", "--data-dir", str(zeroed.path), "--topic", "act", "--time", "-1"]) == 2
    assert "data follows them" in capsys.readouterr().err

    code, report = verify_json(preallocated.path, capsys)
    assert code == 0 and any("preallocated segment" in p["message"] for p in report["problems"])
    assert main(["dump", "--files", f"{preallocated.partition('act', 0).directory}/{0:020d}.log"]) == 0
    assert "Found 8192 invalid bytes" in capsys.readouterr().out
    assert main(["offsets", "--data-dir", str(preallocated.path), "--topic", "act", "--time", "-1"]) == 0
    assert capsys.readouterr().out.strip() == "act:0:60"


def test_a_preallocated_active_segment_growing_during_verify_and_dump_is_no_error(tmp_path):
    """A live broker with log.preallocate appends into the zeros: a walk that stopped at the zeros then finds the
    new batch's bytes past them. That is growth, not a zeroed header hiding records."""
    import contextlib
    import io
    import os
    import threading
    import time

    from kafkaseg.testing import PartitionWriter, Record, build_batch_v2

    def batch(offset):
        return build_batch_v2([Record(offset + j, 1_700_000_000_000 + offset + j, b"k", b"v" * 50, [])
                               for j in range(5)], base_offset=offset)

    writer = PartitionWriter(tmp_path / "t-0")
    for offset in range(0, 1000, 5):
        writer.append(batch(offset))
    writer.close()
    log = tmp_path / "t-0" / f"{0:020d}.log"
    state = {"size": os.path.getsize(log), "offset": 1000, "stop": False}
    with open(log, "ab") as handle:
        handle.write(bytes(4 << 20))  # log.preallocate=true

    def append():
        while not state["stop"]:
            data = batch(state["offset"]).data
            with open(log, "r+b") as handle:
                handle.seek(state["size"])
                handle.write(data)
            state["size"] += len(data)
            state["offset"] += 5
            time.sleep(0.0005)

    thread = threading.Thread(target=append)
    thread.start()
    try:
        codes = []
        for _ in range(6):
            with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
                codes.append((main(["verify", str(tmp_path), "--no-progress"]), main(["dump", "--files", str(log)])))
    finally:
        state["stop"] = True
        thread.join()
    assert codes == [(0, 0)] * 6


def test_tables_show_a_dash_for_an_unknown_high_watermark_or_log_end(tmp_path, capsys):
    """No checkpointed high watermark (verify's HW column) and a log end that cannot be read (describe) print
    '-', as describe's HW and LSO columns already did, never Python's None."""
    manifest = write_data_dir(tmp_path / "d", [TopicSpec("t", records_per_partition=40)], seed=1)
    (manifest.path / "replication-offset-checkpoint").unlink()
    assert main(["verify", str(manifest.path)]) == 0
    row = next(line for line in capsys.readouterr().out.splitlines() if "t-0" in line)
    assert "None" not in row and [cell.strip() for cell in row.strip("│ ").split("│")][7] == "-"
    with open(manifest.partition("t").directory / f"{0:020d}.log", "ab") as f:
        f.write(b"abcdefghijklmnopqrstuvwxyz")  # an unknown magic: the log end is unknown to describe
    assert main(["describe", str(manifest.path)]) == 2  # a log end that cannot be read: the read-error status
    row = next(line for line in capsys.readouterr().out.splitlines() if "│ t " in line)
    assert "None" not in row and [cell.strip() for cell in row.strip("│ ").split("│")][5] == "-"


def test_an_append_indexed_between_the_listing_and_the_index_load_is_no_error(tmp_path, capsys, monkeypatch):
    """A live broker appends (and indexes) batches after verify listed the folder: the new index entries were
    checked against the listed size ("points at byte N, outside the N-byte log", exit 1 about half the runs on a
    busy partition; found in review). Pinned: the files grow just before the active .index is loaded."""
    import kafkaseg.cli.verify as verify
    from kafkaseg.storage.segment import SegmentReader
    from kafkaseg.testing.partition import write_offset_checkpoint

    write_data_dir(tmp_path, [TopicSpec("t", records_per_partition=600, records_per_batch=10,
                                        index_interval_bytes=1024)], seed=1)
    part = tmp_path / "t-0"
    log, index, times = (part / _name(0, suffix) for suffix in (".log", ".index", ".timeindex"))
    grown = {path: path.read_bytes() for path in (log, index, times)}
    entries = [struct.unpack(">ii", grown[index][n:n + 8]) for n in range(0, len(grown[index]), 8)]
    assert len(entries) > 4
    kept, position = len(entries) // 2, entries[len(entries) // 2][1]
    with SegmentReader(str(log)) as reader:
        first_new = reader.header_at(position).base_offset
    earlier = b"".join(grown[times][n:n + 12] for n in range(0, len(grown[times]), 12)
                       if struct.unpack(">qi", grown[times][n:n + 12])[1] < first_new)
    log.write_bytes(grown[log][:position])  # the partition as listed
    index.write_bytes(grown[index][:kept * 8])
    times.write_bytes(earlier)
    for checkpoint in ("replication-offset-checkpoint", "recovery-point-offset-checkpoint"):
        write_offset_checkpoint(tmp_path / checkpoint, {("t", 0): first_new})
    code, report = verify_json(tmp_path, capsys)
    assert code == 0, [p for p in report["problems"] if p["severity"] != "info"]

    real = verify._load_index

    def appended_meanwhile(kind, path, *args, **kwargs):
        if path == str(index):
            for grown_path, data in grown.items():
                grown_path.write_bytes(data)
        return real(kind, path, *args, **kwargs)

    monkeypatch.setattr(verify, "_load_index", appended_meanwhile)
    code, report = verify_json(tmp_path, capsys)
    assert code == 0, [p for p in report["problems"] if p["severity"] == "error"]
    (partition,) = report["partitions"]
    assert partition["logEndOffset"] == 600


def _name(offset: int, suffix: str) -> str:
    return f"{offset:020d}{suffix}"


def test_a_half_written_snapshot_of_the_newest_roll_is_a_warning_an_older_one_an_error(tmp_path, capsys):
    """A live broker writes the producer snapshot of each roll in place; verify caught mid-write reported an ERROR
    and exit 1 on a healthy dir (found in review). Kafka's loader skips a corrupt snapshot."""
    write_data_dir(tmp_path, [TopicSpec("t", records_per_partition=600, records_per_batch=10, segment_bytes=8 * 1024,
                                        idempotent=True)], seed=1)
    part = tmp_path / "t-0"
    active = sorted(part.glob("*.log"))[-1].name[:20]
    snapshots = sorted(part.glob("*.snapshot"))
    (newest,) = [s for s in snapshots if s.name[:20] == active]
    assert snapshots[0] != newest
    newest.write_bytes(newest.read_bytes()[:10])
    code, report = verify_json(tmp_path, capsys)
    assert code == 0, [p for p in report["problems"] if p["severity"] == "error"]
    assert [p["severity"] for p in report["problems"] if p["file"] == str(newest)] == ["warning"]
    snapshots[0].write_bytes(snapshots[0].read_bytes()[:10])
    code, report = verify_json(tmp_path, capsys)
    assert code == 1 and [p["severity"] for p in report["problems"] if p["file"] == str(snapshots[0])] == ["error"]


@pytest.mark.parametrize("kind,entry", [(".index", ">ii"), (".timeindex", ">qi")])
def test_an_index_entry_half_written_in_the_active_segment_is_a_warning(tmp_path, capsys, kind, entry):
    """A live broker writes an index entry in place (8 or 12 bytes): caught with its offset written and the rest
    still zero, the active segment's last entry failed the sanity check and verify exited 1 on a healthy broker
    (found in review). There it is a warning and left out of the checks; in a rolled segment it stays an error."""
    import struct

    from kafkaseg.cli.main import main
    from kafkaseg.testing import TopicSpec, write_data_dir

    write_data_dir(tmp_path, [TopicSpec("t", records_per_partition=400, records_per_batch=10, value_size=20,
                                        index_interval_bytes=1000, segment_bytes=12000)])
    indexes = sorted((tmp_path / "t-0").glob(f"*{kind}"))
    active, rolled = indexes[-1], indexes[0]
    for index in (active, rolled):
        data = index.read_bytes()
        last = struct.unpack(entry, data[-struct.calcsize(entry):])
        half = struct.pack(entry, last[0] + 7, 0)
        index.write_bytes(data + half + bytes(4 * len(half)))  # its first field in place, the rest still zero
    assert main(["verify", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert f"WARNING: {active} @ byte" in out and "the active segment's last entry" in out
    assert f"ERROR: {rolled} @ byte" in out and f"ERROR: {active}" not in out
    rolled.write_bytes(rolled.read_bytes()[:-5 * struct.calcsize(entry)])
    assert main(["verify", str(tmp_path)]) == 0


def _offset_ranges(offsets):
    ranges: list[list[int]] = []
    for o in sorted(offsets):
        if ranges and ranges[-1][1] + 1 == o:
            ranges[-1][1] = o
        else:
            ranges.append([o, o])
    return ranges


def test_unreadable_offsets_are_summed_up_per_partition_with_their_times(datadir, capsys):
    """An incident needs, per partition, which offsets cannot be read and when they were written ("orders-0 lost
    offsets 410..441, 10:02-10:04 UTC"), not a list of byte positions to turn into offsets by hand. Each range is
    checked against what a lenient read returns: the manifest's records it leaves out are exactly those in the
    ranges, and the times are those of the readable records around each range."""
    import kafkaseg

    orders0, orders1, pay, live = (datadir.partition("orders", 0), datadir.partition("orders", 1),
                                   datadir.partition("pay", 0), datadir.partition("live", 0))
    flipped = orders0.directory / f"{orders0.segments[1].base_offset:020d}.log"
    data = bytearray(flipped.read_bytes())
    data[200] ^= 0xFF  # a record of the segment's first batch: a CRC mismatch
    flipped.write_bytes(bytes(data))
    cut = orders1.directory / f"{orders1.segments[0].base_offset:020d}.log"  # a rolled segment cut in two
    with open(cut, "r+b") as f:
        f.truncate(cut.stat().st_size // 2)

    def lose(pm, segment):
        for suffix in (".log", ".index", ".timeindex", ".txnindex", ".snapshot"):
            (pm.directory / f"{segment.base_offset:020d}{suffix}").unlink(missing_ok=True)

    assert len(live.segments) == 3 and len(pay.segments) == 2
    lose(live, live.segments[1])  # a segment file lost from the middle
    lose(pay, pay.segments[-1])  # the last one, of a transactional partition: acknowledged offsets past the log end
    zeroed = datadir.partition("zeroed", 0)
    paged = zeroed.directory / f"{zeroed.segments[0].base_offset:020d}.log"  # a zero-filled page in a rolled segment
    data = bytearray(paged.read_bytes())
    assert len(data) > 5 * 4096 and len(zeroed.segments) > 1
    data[2 * 4096:3 * 4096] = bytes(4096)
    paged.write_bytes(bytes(data))

    code, report = verify_json(datadir.path, capsys)
    assert code == 1
    by_name = {(p["topic"], p["partition"]): p for p in report["partitions"]}
    table = kafkaseg.read_arrow(str(datadir.path), onCorruption="skip", failOnDataLoss=False,
                                columns=["topic", "partition", "offset"])
    read = set(zip(*(table.column(c).to_pylist() for c in ("topic", "partition", "offset"))))
    damaged = {("orders", 0), ("orders", 1), ("pay", 0), ("live", 0), ("zeroed", 0)}
    for key, pm in datadir.partitions.items():
        ranges = by_name[key]["unreadableOffsets"]
        records = sorted((r for r in pm.records if r.offset < pm.high_watermark), key=lambda r: r.offset)
        not_read = {r.offset for r in records if not r.is_control and (key[0], key[1], r.offset) not in read}
        assert not_read == {r.offset for r in records if not r.is_control and any(
            u["firstOffset"] <= r.offset <= u["lastOffset"] for u in ranges)}, key
        if key not in damaged:
            assert ranges == [], key
            continue
        assert len(ranges) == 1, (key, ranges)
        u = ranges[0]
        before = [r for r in records if r.offset < u["firstOffset"]]
        after = [r for r in records if r.offset > u["lastOffset"]]
        assert u["firstOffset"] == before[-1].offset + 1, (key, u)
        assert u["lastOffset"] == (after[0].offset - 1 if after else pm.high_watermark - 1), (key, u)
        assert u["offsets"] == u["lastOffset"] - u["firstOffset"] + 1
        assert u["timeFromMs"] == max(r.timestamp for r in before), key
        assert u["timeToMs"] == (after[0].timestamp if after else None), key
        assert u["file"] and u["reason"], key
    assert by_name[("orders", 0)]["unreadableOffsets"][0]["file"] == str(flipped)
    assert "CRC" in by_name[("orders", 0)]["unreadableOffsets"][0]["reason"]
    assert by_name[("orders", 1)]["unreadableOffsets"][0]["file"] == str(cut)
    assert "missing" in by_name[("live", 0)]["unreadableOffsets"][0]["reason"]
    assert "high watermark" in by_name[("pay", 0)]["unreadableOffsets"][0]["reason"]
    # the zero-filled page: verify reads on where a lenient read resumes (the next .index entry whose batch checks
    # out), so the range ends inside the segment, and the index entries after the zeros are no errors
    (u,) = by_name[("zeroed", 0)]["unreadableOffsets"]
    assert u["file"] == str(paged) and u["lastOffset"] < zeroed.segments[1].base_offset - 1, u
    index_entries = paged.with_suffix(".index").read_bytes()
    resumed_at = {struct.unpack_from(">i", index_entries, n + 4)[0] for n in range(0, len(index_entries), 8)}
    zeros = [p for p in report["problems"] if p["file"] == str(paged) and "zeros" in p["message"]]
    assert len(zeros) == 1 and zeros[0]["severity"] == "error", zeros
    assert any(f"read on from byte {at}," in zeros[0]["message"] for at in resumed_at if at > 3 * 4096), zeros
    assert not [p for p in report["problems"] if p["severity"] != "info" and p["file"].startswith(
        str(paged.with_suffix(""))) and p["file"] != str(paged)], "index entries after the zeros are right"
    # the human output: one line per range, to paste into an incident channel
    assert main(["verify", str(datadir.path)]) == 1
    out = capsys.readouterr().out
    u = by_name[("orders", 0)]["unreadableOffsets"][0]
    line = next(line for line in out.splitlines() if line.startswith("orders-0: offsets "))
    assert f"offsets {u['firstOffset']}..{u['lastOffset']} ({u['offsets']})" in line and "UTC" in line


@pytest.mark.parametrize("magic, codec", [(2, "none"), (1, "gzip")])
@pytest.mark.parametrize("where", ["rolled", "active"])
@pytest.mark.parametrize("change", ["raised", "lowered"])
def test_a_corrupt_offset_field_is_one_batch_unreadable_not_a_cascade(tmp_path, capsys, magic, codec, where, change):
    """A batch's offset field (a v2 base offset, a legacy wrapper's offset) is outside the CRC. Raised past where
    its segment's offsets end (the next segment's base, the high watermark) with a lower batch after it, or
    lowered below the batch before it, a lenient read skips that one batch as corrupt; verify says so once, at the
    batch, with its offsets as the unreadable range, and checks the batches after it against the batch before
    (not one "does not increase" error per record for the rest of the partition)."""
    import kafkaseg
    from kafkaseg.wire.batch import iter_headers

    manifest = write_data_dir(tmp_path / "kafka", [TopicSpec("t", records_per_partition=300, records_per_batch=5,
                                                             segment_bytes=8000, magic=magic, codec=codec)])
    pm = manifest.partition("t", 0)
    assert len(pm.segments) > 2
    segment, k = (pm.segments[0], 5) if where == "rolled" else (pm.segments[-1], 1)
    log = pm.directory / f"{segment.base_offset:020d}.log"
    data = bytearray(log.read_bytes())
    headers = list(iter_headers(memoryview(bytes(data))))
    assert len(headers) > k + 1
    bad = headers[k]
    field = bad.base_offset
    data[bad.position:bad.position + 8] = struct.pack(
        ">q", field ^ (0xFF << 24) if change == "raised" else field ^ (1 << (field.bit_length() - 1)))
    log.write_bytes(bytes(data))

    table = kafkaseg.read_arrow(str(tmp_path / "kafka"), onCorruption="skip", failOnDataLoss=False,
                                columns=["offset"])
    read = set(table.column("offset").to_pylist())
    lost = {r.offset for r in pm.records if r.offset < pm.high_watermark and r.offset not in read}
    assert lost == set(range(headers[k - 1].last_offset + 1, bad.last_offset + 1)), sorted(lost)
    code, report = verify_json(tmp_path / "kafka", capsys)
    assert code == 1
    problems = [p for p in report["problems"] if p["severity"] != "info"]
    assert [(p["file"], p["position"]) for p in problems] == [(str(log), bad.position)], problems
    (part,) = report["partitions"]
    assert [(u["firstOffset"], u["lastOffset"], u["file"], u["position"]) for u in part["unreadableOffsets"]] == [
        (min(lost), max(lost), str(log), bad.position)]
    assert part["logEndOffset"] == pm.high_watermark


@pytest.mark.parametrize("case", sorted(offset_damage.CASES))
def test_verify_and_the_lookups_say_what_a_lenient_read_skips_for_a_moved_base_offset(tmp_path, capsys, case):
    """A batch's base offset (outside the CRC) raised or lowered (tests/offset_damage.py): verify, the lookups and
    a read with onCorruption=skip reach one verdict on which batch is damaged (kafkaseg.offset_outlier). Verify has
    one error at it and its offsets as the one unreadable range the read's problem names; a lenient locate finds
    what the read returns and calls the rest unreadable, naming the file; a lenient time lookup answers as the read
    does; a strict locate of a lost offset raises at the damaged batch (found: a raised base was blamed on the batch
    after it, with an error and an unreadable range per later batch, and lookups skipped those batches too)."""
    import kafkaseg
    from kafkaseg.errors import CorruptDataError
    from kafkaseg.lookup import PartitionLookup
    from kafkaseg.storage.layout import discover

    root = offset_damage.write(tmp_path / "kafka")
    log, bad, _, following = offset_damage.damage(root, *offset_damage.CASES[case])
    scan = kafkaseg.open_scan(str(root), onCorruption="skip", columns=["offset", "timestamp"])
    table = scan.to_table()
    stamps = [int(t.timestamp() * 1000) for t in table.column("timestamp").to_pylist()]
    read = dict(zip(table.column("offset").to_pylist(), stamps))
    (problem,) = scan.metrics.decode.problems
    assert (problem.position, problem.first_offset, problem.end_offset) == (bad.position, bad.base_offset, following)

    code, report = verify_json(root, capsys)
    assert code == 1
    problems = [p for p in report["problems"] if p["severity"] != "info"]
    assert [(p["file"], p["position"]) for p in problems] == [(str(log), bad.position)], problems
    (part,) = report["partitions"]
    assert [(u["firstOffset"], u["lastOffset"], u["file"], u["position"]) for u in part["unreadableOffsets"]] == [
        (problem.first_offset, problem.end_offset - 1, str(log), bad.position)]

    readable = sorted(read)
    around = range(problem.first_offset - 3, problem.end_offset + 3)
    (pdir,) = discover(str(root))
    with PartitionLookup(pdir, lenient=True) as lookup:
        for offset in around:
            location = lookup.locate(offset)
            assert location.found == (offset in read), (offset, location.reason)
            assert location.record_offset == next(o for o in readable if o >= offset), (offset, location.reason)
            if offset not in read:
                assert "unreadable" in location.reason and str(log) in location.reason, (offset, location.reason)
        for t in sorted({read[o] for o in readable if o in around} | {read[problem.first_offset - 1] + 1}):
            assert lookup.offset_for_timestamp(t) == next(o for o in readable if read[o] >= t), t
        assert {(path, at) for path, at, _ in lookup.stats.skipped} == {(str(log), bad.position)}
    with PartitionLookup(pdir) as lookup:  # (a walk for a readable offset may pass the damage: it raises there too)
        for offset in around:
            try:
                location = lookup.locate(offset)
            except CorruptDataError as err:
                assert (err.path, err.position) == (str(log), bad.position), offset
                continue
            assert offset in read and location.found, offset


def test_an_empty_batch_whose_base_goes_back_is_skipped_by_verify_as_by_a_read(tmp_path, capsys, kernel):
    """The cleaner keeps an empty v2 batch (recordsCount 0) for a producer's last batch, with its base and last
    offsets. Its base offset going back below the batch before it is the decoders' "non-monotonic offsets" as for
    any batch (they exempt none), and the lookups' rule was theirs; verify exempted empty batches, saying nothing
    where a lenient read skips the batch and a strict one fails. One rule now (decode.api.offset_field_problem)."""
    import kafkaseg
    from kafkaseg.errors import CorruptBatchError
    from kafkaseg.testing import PartitionWriter, Record, build_batch_v2
    from kafkaseg.wire.batch import iter_headers

    writer = PartitionWriter(tmp_path / "kafka" / "t-0", index_interval_bytes=300)
    for b in range(8):
        if b == 4:
            writer.append(build_batch_v2([], base_offset=20, last_offset=24, empty_timestamp=1_600_000_000_000))
            continue
        writer.append(build_batch_v2([Record(o, 1_600_000_000_000 + o, b"k", b"v") for o in range(5 * b, 5 * b + 5)]))
    writer.close()
    log = tmp_path / "kafka" / "t-0" / "00000000000000000000.log"
    data = bytearray(log.read_bytes())
    empty = list(iter_headers(bytes(data)))[4]
    assert empty.records_count == 0
    struct.pack_into(">q", data, empty.position, 17)  # 20..24 -> 17..21, over 15..19
    log.write_bytes(bytes(data))
    scan = kafkaseg.open_scan(str(tmp_path / "kafka"), onCorruption="skip")
    assert scan.to_table().column("offset").to_pylist() == [o for o in range(40) if not 20 <= o < 25]
    assert [p[:2] for p in scan.metrics.decode.problems] == [(str(log), empty.position)]
    with pytest.raises(CorruptBatchError) as info:
        kafkaseg.read_arrow(str(tmp_path / "kafka"))
    assert info.value.position == empty.position
    code, report = verify_json(tmp_path / "kafka", capsys)
    assert code == 1
    assert [(p["file"], p["position"]) for p in report["problems"] if p["severity"] == "error"] == [
        (str(log), empty.position)]


def test_the_offset_field_rule_takes_a_legacy_wrappers_field_as_the_kernels_do(kernel):
    """A compressed legacy wrapper's offset field is its LAST inner offset. At or past where its segment's read ends,
    it is corrupt when the batch after it starts below that field (the kernels pass the field to
    offset_field_past_next); the lookups passed its first inner offset instead, and took a batch starting inside
    the wrapper's offsets for the segment's end. The shared rule (decode.api.offset_field_problem) against both
    kernels, on the same bytes."""
    import kafkaseg.decode as decode
    from kafkaseg.decode.api import DecodeRequest, batch_start_offset, offset_field_problem
    from kafkaseg.errors import CorruptBatchError
    from kafkaseg.testing import Record, build_legacy_wrapper
    from kafkaseg.testing.writer import build_legacy_message

    def wrapper(first):
        return build_legacy_wrapper([Record(o, 1_600_000_000_000 + o, b"k", b"v") for o in range(first, first + 4)],
                                    1, "gzip").data

    for field, corrupt in ((101, True), (103, False), (120, False)):
        # the wrapper 100..103, then a message whose offset field is ``field``
        buf = wrapper(100) + build_legacy_message(field, 1, b"k", b"v", timestamp=1_600_000_000_000)
        following = batch_start_offset(buf[len(wrapper(100)):][:17])
        assert following == field
        problem = offset_field_problem(100, 103, 99, 50, lambda: following)
        assert (problem is not None) == corrupt, field
        request = DecodeRequest(path="x", max_offset=50, check_offsets_after=99, include_control=True)
        if corrupt:
            with pytest.raises(CorruptBatchError):
                decode.decode(buf, request)
        else:
            assert decode.decode(buf, request).stop == "past_end"
    # and an empty v2 batch gone back is a problem as any other
    assert offset_field_problem(17, 17, 19, None, lambda: None) is not None


def test_a_lookup_judges_a_legacy_wrapper_past_the_next_base_by_its_field_as_a_read_does(tmp_path):
    """A rolled segment whose compressed legacy wrapper (offsets 100..103, field 103) lies past the next segment's
    base (50), followed by a message at offset 101 (inside the wrapper's offsets): a read raises at the wrapper (the
    kernels judge its field, 103, against the 101 after it); a strict lookup passing it took the wrapper's first inner
    offset (100) and ended the segment there."""
    import kafkaseg
    from kafkaseg.errors import CorruptDataError
    from kafkaseg.lookup import PartitionLookup
    from kafkaseg.storage.layout import discover
    from kafkaseg.testing import PartitionWriter, Record, build_legacy_wrapper
    from kafkaseg.testing.writer import build_legacy_message

    def wrapper(first):
        return build_legacy_wrapper([Record(o, 1_600_000_000_000 + o, b"k", b"v") for o in range(first, first + 4)],
                                    1, "gzip")

    writer = PartitionWriter(tmp_path / "kafka" / "t-0")
    writer.append(wrapper(0))
    _, bad = writer.append_raw(wrapper(100).data + build_legacy_message(101, 1, b"k", b"v",
                                                                         timestamp=1_600_000_000_000))
    writer.roll(50)
    writer.append(wrapper(50))
    writer.close()
    with pytest.raises(CorruptDataError) as info:
        kafkaseg.read_arrow(str(tmp_path / "kafka"))
    assert info.value.position == bad
    (pdir,) = discover(str(tmp_path / "kafka"))
    with PartitionLookup(pdir) as lookup:
        with pytest.raises(CorruptDataError) as info:
            lookup.locate(4)
    assert info.value.position == bad


@pytest.mark.parametrize("new_base", [11, 12, 40, 8], ids=["across-by-1", "across", "past", "lowered"])
def test_a_single_batch_rolled_segment_whose_base_moved_is_one_verdict(tmp_path, capsys, new_base):
    """A rolled segment holding one batch (10..14; the next segment starts at 15) whose base offset (outside the
    CRC) moved: across the next segment's base, past it, or below its own. A read skips it (strict: raises at it),
    verify has one error at it and its offsets as the unreadable range, and a lenient locate calls them unreadable
    (found: verify took a batch across the next base for a merged copy, with a "reaches the next segment's base"
    line, an error per record of the next segment and offsets "missing" before it)."""
    import kafkaseg
    from kafkaseg.errors import CorruptBatchError
    from kafkaseg.lookup import PartitionLookup
    from kafkaseg.storage.layout import discover
    from kafkaseg.testing import PartitionWriter, Record, build_batch_v2

    def batch(first):
        return build_batch_v2([Record(o, 1_600_000_000_000 + o, b"k", b"v") for o in range(first, first + 5)])

    root = tmp_path / "kafka"
    writer = PartitionWriter(root / "t-0")
    for first, roll in ((0, None), (5, 10), (10, 15), (15, None), (20, None)):
        writer.append(batch(first))
        if roll is not None:
            writer.roll(roll)
    writer.close()
    log = root / "t-0" / "00000000000000000010.log"
    data = bytearray(log.read_bytes())
    struct.pack_into(">q", data, 0, new_base)
    log.write_bytes(bytes(data))
    scan = kafkaseg.open_scan(str(root), onCorruption="skip")
    assert scan.to_table().column("offset").to_pylist() == [o for o in range(25) if not 10 <= o < 15]
    assert [(p.path, p.position, p.first_offset, p.end_offset) for p in scan.metrics.decode.problems] == [
        (str(log), 0, 10, 15)]
    with pytest.raises(CorruptBatchError) as info:
        kafkaseg.read_arrow(str(root))
    assert (info.value.path, info.value.position) == (str(log), 0)
    code, report = verify_json(root, capsys)
    assert code == 1
    assert [(p["file"], p["position"]) for p in report["problems"] if p["severity"] != "info"] == [(str(log), 0)]
    (part,) = report["partitions"]
    assert [(u["firstOffset"], u["lastOffset"], u["file"]) for u in part["unreadableOffsets"]] == [(10, 14, str(log))]
    (pdir,) = discover(str(root))
    with PartitionLookup(pdir, lenient=True) as lookup:
        for offset in range(10, 15):
            location = lookup.locate(offset)
            assert not location.found and "unreadable" in location.reason and location.record_offset == 15, offset


def test_verify_one_topic_of_a_data_dir(datadir, capsys):
    """``verify --topic``, as describe's: only that topic's partitions are read and checked (damage in another
    topic is not reported), repeatable or comma separated; a name on no partition is a typo, said with a hint."""
    pm = datadir.partition("orders", 0)
    seg = pm.directory / f"{pm.segments[1].base_offset:020d}.log"
    data = bytearray(seg.read_bytes())
    data[200] ^= 0xFF  # a CRC error in orders-0
    seg.write_bytes(bytes(data))
    assert main(["verify", str(datadir.path), "--json"]) == 1
    capsys.readouterr()
    for argv in (["--topic", "pay", "--topic", "live"], ["--topic", "pay,live"]):
        assert main(["verify", str(datadir.path), "--json", *argv]) == 0, argv
        report = json.loads(capsys.readouterr().out)
        assert {p["topic"] for p in report["partitions"]} == {"pay", "live"}
        assert not any("orders" in p["file"] for p in report["problems"])
    assert main(["verify", str(datadir.path), "--json", "--topic", "orders"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert {p["topic"] for p in report["partitions"]} == {"orders"}
    assert main(["verify", str(datadir.path), "--topic", "Pay"]) == 1
    err = capsys.readouterr().err
    assert "kafkaseg verify: no topic 'Pay'" in err and "did you mean 'pay'?" in err
    assert main(["verify", str(datadir.path), "--json", "--topic", "pay,Orderz"]) == 0  # one found: its rows
    out = capsys.readouterr()
    assert {p["topic"] for p in json.loads(out.out)["partitions"]} == {"pay"} and "no topic 'Orderz'" in out.err
