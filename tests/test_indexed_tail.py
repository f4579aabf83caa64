"""An active segment whose bytes end before what its own ``.index``/``.timeindex`` entries point at, with no high
watermark to bound the read (no replication-offset-checkpoint entry): a broker indexes a batch only after writing
it, so those entries prove offsets the file no longer holds. A read used to end at the readable bytes without a
word. Now: when the recovery point says the broker had flushed them, a strict read raises (file, byte) and a
lenient one counts the skip; when not (a crash can lose the log's unflushed pages and keep the index's), every
read says it as a warning (``ScanMetrics.unreadable_tails``), and so do ``kafkaseg consume`` and ``verify``. A
torn append with no index entry past it, what a live broker's disk holds mid-append, stays a quiet end."""

from __future__ import annotations

import json
import shutil
import struct

import pytest

import kafkaseg
from kafkaseg.cli.main import main as cli_main
from kafkaseg.errors import DataLossError, TruncatedDataError
from kafkaseg.testing import TopicSpec, write_data_dir
from kafkaseg.wire.batch import iter_headers

RECORDS = 300
CUT = 4  # the active segment's batch the tear starts at


@pytest.fixture(scope="module", params=["flushed", "live"])
def written(request, tmp_path_factory):
    """A partition of three segments, 5-record batches, an index entry per batch. ``flushed``: as after a clean
    shutdown (recovery point at the log end, trimmed indexes); ``live``: as a running broker leaves it (recovery
    point at the active segment's base, preallocated indexes). No high watermark for it."""
    root = tmp_path_factory.mktemp(request.param) / "d"
    manifest = write_data_dir(root, [TopicSpec("t", records_per_partition=RECORDS, records_per_batch=5,
                                               vary_batch_size=False, index_interval_bytes=400, segment_bytes=16384,
                                               preallocate_active_index=64 * 1024 if request.param == "live" else
                                               False)])
    (root / "replication-offset-checkpoint").write_text("0\n0\n")
    return request.param, root, manifest.partition("t")


@pytest.fixture
def copy(written, tmp_path):
    kind, root, pm = written
    target = tmp_path / "d"
    shutil.copytree(root, target)
    active = target / "t-0" / pm.segments[-1].log_path.name
    return kind, target, active, list(iter_headers(active.read_bytes()))


def _tear(active, headers, keep: int) -> tuple[int, int]:
    """Cut the active segment ``keep`` bytes into batch ``CUT``; returns (its position, its base offset)."""
    torn = headers[CUT]
    active.write_bytes(active.read_bytes()[:torn.position + keep])
    return torn.position, torn.base_offset


def _offsets(table) -> list[int]:
    return table.column("offset").to_pylist()


@pytest.mark.parametrize("keep", [0, 100], ids=["at a batch boundary", "mid-batch"])
def test_offsets_the_indexes_prove_past_the_readable_end_are_said(copy, keep):
    kind, root, active, headers = copy
    at, lost_from = _tear(active, headers, keep)
    last_time = 1_700_000_000_000 + 10 * (RECORDS - 1)
    said = f"index entries up to offset {RECORDS - 1} / time {last_time}"
    if kind == "flushed":  # the recovery point (300) says offsets 270..299 were on disk: this file lost them
        with pytest.raises(TruncatedDataError) as info:
            kafkaseg.read_arrow(str(root))
        assert (info.value.path, info.value.position) == (str(active), at)
        assert said in str(info.value) and "point past the readable end" in str(info.value)
        assert "recovery point 300" in str(info.value)
        scan = kafkaseg.open_scan(str(root), onCorruption="skip")
        assert _offsets(scan.to_table()) == list(range(lost_from))
        m = scan.metrics
        ((path, position, what),) = m.decode.problems
        problem = m.decode.problems[0]
        assert (path, position, problem.bytes) == (str(active), at, keep) and said in what
        assert (problem.first_offset, problem.end_offset) == (lost_from, RECORDS)
        assert (m.decode.corrupt_batches, m.decode.corrupt_bytes) == (1, keep)
        assert m.unreadable_tails == [] and m.truncated_tails == []  # (one account of it)
        return
    # live: nothing past the active segment's base was flushed, so a crash may have lost them (a warning)
    for on_corruption in ("fail", "skip"):
        scan = kafkaseg.open_scan(str(root), onCorruption=on_corruption)
        assert _offsets(scan.to_table()) == list(range(lost_from))
        m = scan.metrics
        ((path, position, what),) = m.unreadable_tails
        tail = m.unreadable_tails[0]
        assert (path, position, tail.bytes, tail.first_offset, tail.end_offset) == (str(active), at, keep,
                                                                                      lost_from, RECORDS)
        assert said in what and "point past the readable end" in what and "recovery point 250" in what
        assert m.decode.corrupt_batches == 0 and m.decode.problems == [] and m.truncated_tails == []
        as_json = json.loads(json.dumps(m.as_dict()))
        assert as_json["unreadable_tails"] == [[str(active), at, what, keep, lost_from, RECORDS]]


def test_a_torn_append_with_no_index_entry_past_it_stays_a_quiet_end(copy):
    """What a live broker's active segment holds mid-append: a partial last batch, indexed by nothing."""
    kind, root, active, headers = copy
    data = active.read_bytes()
    nxt = bytearray(data[headers[-1].position:])
    struct.pack_into(">q", nxt, 0, RECORDS)
    active.write_bytes(data + bytes(nxt[:len(nxt) // 2]))
    for on_corruption in ("fail", "skip"):
        scan = kafkaseg.open_scan(str(root), onCorruption=on_corruption)
        assert _offsets(scan.to_table()) == list(range(RECORDS))
        m = scan.metrics
        assert m.unreadable_tails == [] and m.decode.problems == []
        assert [t[1] for t in m.truncated_tails] == [len(data)]


def _append_and_index(active, headers) -> None:
    """Append a batch (offsets 300..304) to the active segment and index it, as a live broker does."""
    data = active.read_bytes()
    nxt = bytearray(data[headers[-1].position:])
    struct.pack_into(">q", nxt, 0, RECORDS)  # (its CRC does not cover the base offset)
    with open(active, "ab") as f:
        f.write(bytes(nxt))
    index = active.with_suffix(".index")
    entries = index.read_bytes().rstrip(b"\0")
    entries += bytes(-len(entries) % 8)
    with open(index, "r+b") as f:
        f.seek(len(entries))
        f.write(struct.pack(">ii", RECORDS + 4 - int(active.stem), len(data)))


@pytest.mark.parametrize("when", ["after planning", "between the listing and planning"])
def test_a_broker_appending_after_the_listing_is_not_taken_for_a_loss(copy, when):
    """The read ends where the listing saw the active segment end; a live broker that appends a batch and indexes
    it after the listing has entries past that end, for bytes that are there. Planning may load the index after the
    append: the read, which reads the index after the log, then sees the log changed since it was listed."""
    from kafkaseg.options import ReadOptions
    from kafkaseg.planning import list_partitions, plan_scan
    from kafkaseg.scan import Scan

    kind, root, active, headers = copy
    options = ReadOptions.from_options({})
    listing = list_partitions(str(root), options)
    if when != "after planning":
        _append_and_index(active, headers)
    plan = plan_scan(str(root), options, listing=listing)
    if when == "after planning":
        _append_and_index(active, headers)
    scan = Scan(plan, options)
    assert _offsets(scan.to_table()) == list(range(RECORDS))
    assert scan.metrics.unreadable_tails == [] and scan.metrics.decode.problems == []


def test_a_high_watermark_decides_as_before(copy):
    """With a high watermark above the tear the rules are unchanged: data loss when the recovery point is above it
    too, else a note."""
    kind, root, active, headers = copy
    at, lost_from = _tear(active, headers, 100)
    (root / "replication-offset-checkpoint").write_text(f"0\n1\nt 0 {RECORDS}\n")
    if kind == "flushed":
        with pytest.raises(DataLossError, match="acknowledged and flushed"):
            kafkaseg.read_arrow(str(root))
        return
    scan = kafkaseg.open_scan(str(root))
    assert _offsets(scan.to_table()) == list(range(lost_from))
    assert scan.metrics.unreadable_tails == [] and scan.metrics.decode.problems == []
    assert any("high watermark 300 is above the log end offset" in n for p in scan.plan.report.partitions
               for n in p.notes)


def test_consume_says_it_on_stderr(copy, capsysbinary):
    kind, root, active, headers = copy
    at, lost_from = _tear(active, headers, 100)
    argv = ["consume", "--data-dir", str(root), "--topic", "t", "--from-beginning"]
    code = cli_main(argv)
    out, err = capsysbinary.readouterr()
    err = err.decode()
    said = f"{active} @ byte {at}: index entries up to offset {RECORDS - 1}"
    if kind == "flushed":  # data loss, which a consumer reads past (before, a read error: exit 2)
        assert code == 0 and out.count(b"\n") == lost_from and f"kafkaseg consume: data loss: {said}" in err, err
        assert "point past the readable end" in err and "skipped" not in err
        assert cli_main(argv + ["--fail-on-data-loss"]) == 3
        capsysbinary.readouterr()
        code = cli_main(argv + ["--skip-message-on-error"])
        out, err = capsysbinary.readouterr()
        err = err.decode()
        assert code == 0 and out.count(b"\n") == lost_from and "skipped 1 corrupt batch" in err
        assert f"  {said}" in err and f"offsets {lost_from}..{RECORDS - 1}" in err
    else:
        assert code == 0 and out.count(b"\n") == lost_from
        assert f"kafkaseg consume: {said}" in err and "skipped" not in err


def test_verify_says_it(copy, capsys):
    kind, root, active, headers = copy
    at, lost_from = _tear(active, headers, 0)  # at a batch boundary: no torn batch to see
    code = cli_main(["verify", "--json", str(root)])
    report = json.loads(capsys.readouterr().out)
    severity = "error" if kind == "flushed" else "warning"
    assert code == (1 if kind == "flushed" else 0)
    (found,) = [p for p in report["problems"] if "point past the readable end" in p["message"]]
    assert (found["file"], found["position"]) == (str(active), at)
    assert found["severity"] == severity
    # the index files' own lines for those entries judge them the same way: not flushed, a crash may have lost
    # the log's pages and kept the index's, which Kafka's recovery truncates
    entries = [p for p in report["problems"] if p["file"].endswith(("index", "timeindex"))
               and ("point past" in p["message"] or "offsets past" in p["message"])]
    assert len(entries) == 2 and {p["severity"] for p in entries} == {severity}
    assert f"index entries up to offset {RECORDS - 1}" in found["message"]
    ((part,),) = [report["partitions"]]
    (lost,) = part["unreadableOffsets"]
    assert (lost["firstOffset"], lost["lastOffset"], lost["file"], lost["position"]) == (lost_from, RECORDS - 1,
                                                                                         str(active), at)


def test_offsets_and_describe_say_it(copy, capsys):
    """``kafkaseg offsets`` and ``describe`` judge the entries as the reads do (tests/test_tail_evidence_cli.py):
    lost when the recovery point says they were flushed, else possibly lost; the log end stays the readable end."""
    kind, root, active, headers = copy
    at, lost_from = _tear(active, headers, 0)
    code = cli_main(["offsets", "--data-dir", str(root), "--topic", "t", "--on-corruption", "skip"])
    out, err = capsys.readouterr()
    assert code == 0 and out == f"t:0:{lost_from}\n"
    assert f"index entries up to offset {RECORDS - 1}" in err and f"{active} @ byte {at}" in err
    assert ("possibly lost" in err) == (kind == "live") and f"offsets {lost_from}..{RECORDS - 1}" in err
    code = cli_main(["describe", "--json", str(root)])
    (part,) = json.loads(capsys.readouterr().out)["partitions"]
    lost = part["lostTail"]
    assert (lost["file"], lost["position"], lost["firstOffset"], lost["endOffset"]) == (str(active), at, lost_from,
                                                                                        RECORDS)
    assert lost["proven"] == (kind == "flushed") and code == (2 if kind == "flushed" else 0)


def test_the_tools_judgement_of_an_append_indexed_after_the_listing_is_quiet(copy):
    """``offsets``, ``describe`` and ``locate`` (layout.lost_tail) of a partition listed before a live broker
    appended and indexed offsets 300..304: the entry past the listed end is of bytes that are there."""
    from kafkaseg.storage.layout import lost_tail, read_partition_dir

    kind, root, active, headers = copy
    pdir = read_partition_dir(str(active.parent))
    _append_and_index(active, headers)
    assert lost_tail(pdir, RECORDS) is None
