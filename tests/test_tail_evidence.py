"""A torn active segment with no high watermark, judged by what else the partition's files say it held: the
recovery point alone (no index entry past the readable end), producer state snapshots named past it, and a
preallocated segment's zeros. See tests/test_indexed_tail.py for the index entries' own rules.

* The recovery point is checkpointed only after the log was flushed up to it (``UnifiedLog.flush`` ->
  ``markFlushed``), and lowered and checkpointed again right after a truncation (``LocalLog.updateLogEndOffset``,
  ``LogManager.truncateTo`` -> ``checkpointRecoveryOffsetsInDir``): offsets below it missing from the file are
  loss, unless the checkpoint changed after the listing (a truncation caught between the two writes).
* A ``.snapshot`` is named by the producer state's end offset when taken, the log end offset (``takeSnapshot``):
  the log held those offsets once. At a roll it is written without a sync (``takeSnapshot(false)``) and synced
  with the segment's flush later, so it proves nothing flushed: a warning, as index entries without a recovery
  point past them are.
* Zeros after the last batch of a preallocated segment are preallocation, which Kafka's recovery truncates as an
  invalid tail (``LogSegment.recover``: a batch size of 0 is a ``CorruptRecordException``): no corrupt bytes."""

from __future__ import annotations

import io
import json
import shutil
import contextlib

import pytest

import kafkaseg
from kafkaseg.cli.main import main as cli_main
from kafkaseg.errors import DataLossError, TruncatedDataError
from kafkaseg.wire.batch import iter_headers
from tests.lost_tail_data import (CASES, LOST_FROM, RECORDS, cut_tail, lost_tail_copy,
                                  set_high_watermark as _set_high_watermark,
                                  set_recovery_point as _set_recovery_point, write_whole)


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    """Three segments of 5-record batches (bases 0, 125, 250) as after a clean shutdown: recovery point 300,
    producer snapshots 125, 250 and 300; no high watermark for the partition."""
    root = tmp_path_factory.mktemp("evidence") / "d"
    return root, write_whole(root)


@pytest.fixture
def torn(written, tmp_path, request):
    """A copy whose active segment is cut ``keep`` bytes into batch lost_tail_data.CUT (param, default 0), with no
    index entries (``indexes``: "missing" or "empty") and no snapshot past the cut; returns (root, active, byte of
    the cut)."""
    root, pm = written
    keep, indexes = getattr(request, "param", (0, "missing"))
    target = tmp_path / "d"
    active, at = cut_tail(root, target, pm, keep, indexes)
    return target, active, at


def _offsets(table) -> list[int]:
    return table.column("offset").to_pylist()


def _verify(root) -> tuple[int, dict]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = cli_main(["verify", "--json", str(root)])
    return code, json.loads(out.getvalue())


@pytest.mark.parametrize("torn", [(0, "missing"), (100, "missing"), (0, "empty"), (100, "empty")],
                         indirect=True, ids=["boundary, no indexes", "mid-batch, no indexes",
                                             "boundary, empty indexes", "mid-batch, empty indexes"])
def test_a_recovery_point_past_the_readable_end_is_loss_without_index_entries(torn):
    root, active, at = torn
    keep = active.stat().st_size - at
    with pytest.raises(TruncatedDataError) as info:
        kafkaseg.read_arrow(str(root))
    assert (info.value.path, info.value.position) == (str(active), at)
    assert "recovery point 300" in str(info.value) and f"offsets {LOST_FROM}..299" in str(info.value)
    scan = kafkaseg.open_scan(str(root), onCorruption="skip")
    assert _offsets(scan.to_table()) == list(range(LOST_FROM))
    m = scan.metrics
    (problem,) = m.decode.problems
    assert (problem.path, problem.position, problem.bytes) == (str(active), at, keep)
    assert (problem.first_offset, problem.end_offset) == (LOST_FROM, RECORDS)
    assert (m.decode.corrupt_batches, m.decode.corrupt_bytes) == (1, keep)
    assert m.unreadable_tails == [] and m.truncated_tails == []


def test_a_strict_read_of_a_proven_lost_tail_is_a_data_loss_error_with_its_file_and_byte(torn):
    """Code that catches DataLossError under failOnDataLoss (as for the loss a high watermark and the recovery point
    prove) catches the lost tail too; the error stays a TruncatedDataError naming the file and byte, also once
    pickled out of a Spark worker, and a job's error line finds its class by name (kafkaseg.spark.jobs)."""
    import pickle

    from kafkaseg import errors
    from kafkaseg.spark.jobs import error_line

    root, active, at = torn
    with pytest.raises(errors.DataLossError) as info:
        kafkaseg.read_arrow(str(root))
    err = info.value
    assert isinstance(err, TruncatedDataError) and (err.path, err.position) == (str(active), at)
    assert "set failOnDataLoss=false" in str(err) and "recovery point 300" in str(err)
    again = pickle.loads(pickle.dumps(err))
    assert (type(again), again.path, again.position, str(again)) == (type(err), str(active), at, str(err))
    assert getattr(errors, type(err).__name__) is type(err) and type(err).__name__ in errors.__all__
    assert error_line(err) == (f"{type(err).__name__}: {err}", 1)  # (not a usage error: exit status 1)
    # failOnDataLoss=false reads to the readable end; onCorruption=skip counts the tail as skipped corrupt bytes
    assert _offsets(kafkaseg.read_arrow(str(root), failOnDataLoss="false")) == list(range(LOST_FROM))


@pytest.mark.parametrize("case", ["rp", "hwrp"])
def test_the_tools_raise_both_lost_tails_as_data_loss(tmp_path, case):
    """``offsets``/``locate`` raise the error a strict read raises (``LostTail.error``): a DataLossError in both
    kinds; the one with no high watermark also a TruncatedDataError at the readable end."""
    from kafkaseg.storage.layout import lost_tail, read_partition_dir

    root = tmp_path / "d"
    active, at = lost_tail_copy(root, case)
    err = lost_tail(read_partition_dir(str(active.parent)), LOST_FROM).error()
    assert isinstance(err, DataLossError) and f"{active} @ byte {at}" in str(err)
    assert isinstance(err, TruncatedDataError) == (case == "rp")
    if case == "rp":
        assert (err.path, err.position) == (str(active), at)


@pytest.mark.parametrize("case", ["rp", "hwrp"])
def test_the_two_kinds_of_lost_tail_are_two_classes_of_one_interface(tmp_path, case):
    """``layout.lost_tail`` gives the evidence-judged tail (no high watermark: ``JudgedTail``) or the loss a high
    watermark and the recovery point acknowledge past the end (``AcknowledgedLoss``), each a ``LostTail`` with the
    same members, of the same range and file and byte."""
    from kafkaseg.storage.layout import AcknowledgedLoss, JudgedTail, LostTail, lost_tail, read_partition_dir

    root = tmp_path / "d"
    active, at = lost_tail_copy(root, case)
    tail = lost_tail(read_partition_dir(str(active.parent)), LOST_FROM)
    assert type(tail) is {"rp": JudgedTail, "hwrp": AcknowledgedLoss}[case] and isinstance(tail, LostTail)
    assert (tail.path, tail.position, tail.first_offset, tail.end_offset, tail.proven) == (
        str(active), at, LOST_FROM, RECORDS, True)
    assert tail.as_dict() == {"file": str(active), "position": at, "firstOffset": LOST_FROM, "endOffset": RECORDS,
                              "proven": True, "message": tail.message}
    assert tail.holds(LOST_FROM) and tail.holds(RECORDS - 1) and not tail.holds(RECORDS)
    assert tail.message in tail.summary() and tail.message in str(tail.error())


def test_verify_names_the_log_file_and_byte(torn):
    root, active, at = torn
    code, report = _verify(root)
    assert code == 1
    (found,) = [p for p in report["problems"] if p["file"] == str(active) and "recovery point 300" in p["message"]]
    assert found["severity"] == "error" and found["position"] == at
    (lost,) = report["partitions"][0]["unreadableOffsets"]
    assert (lost["firstOffset"], lost["lastOffset"], lost["file"], lost["position"]) == (LOST_FROM, RECORDS - 1,
                                                                                         str(active), at)


def test_a_recovery_point_checkpointed_again_after_the_listing_is_not_trusted(torn):
    """A follower's truncation cuts the log, then checkpoints the lowered recovery point: a listing between the two
    writes sees the old one above the file's end. Planning reads the checkpoint again and finds it changed."""
    from kafkaseg.options import ReadOptions
    from kafkaseg.planning import list_partitions, plan_scan
    from kafkaseg.scan import Scan

    root, active, at = torn
    options = ReadOptions.from_options({})
    listing = list_partitions(str(root), options)
    _set_recovery_point(root, LOST_FROM)  # LogManager.truncateTo -> checkpointRecoveryOffsetsInDir
    scan = Scan(plan_scan(str(root), options, listing=listing), options)
    assert _offsets(scan.to_table()) == list(range(LOST_FROM))
    assert scan.metrics.decode.problems == [] and scan.metrics.unreadable_tails == []


def test_a_recovery_point_at_the_readable_end_stays_a_quiet_end(torn):
    root, active, at = torn
    _set_recovery_point(root, LOST_FROM)
    for on_corruption in ("fail", "skip"):
        scan = kafkaseg.open_scan(str(root), onCorruption=on_corruption)
        assert _offsets(scan.to_table()) == list(range(LOST_FROM))
        assert scan.metrics.decode.problems == [] and scan.metrics.unreadable_tails == []


def test_consume_fails_on_data_loss_the_recovery_point_proves(torn, capsysbinary):
    root, active, at = torn
    argv = ["consume", "--data-dir", str(root), "--topic", "t", "--from-beginning", "--skip-message-on-error"]
    assert cli_main(argv) == 0
    capsysbinary.readouterr()
    code = cli_main(argv + ["--fail-on-data-loss"])
    out, err = capsysbinary.readouterr()
    assert code == 3 and out.count(b"\n") == LOST_FROM and "exit status 3" in err.decode()
    assert "recovery point 300" in err.decode()


def test_a_snapshot_named_past_the_readable_end_is_said_without_a_flushing_recovery_point(torn):
    """A snapshot at 300 (the log end offset when it was taken) with the recovery point at the active segment's
    base: the log held offsets up to 299 once, none of them flushed by the recovery point: a warning."""
    root, active, at = torn
    (active.parent / f"{RECORDS:020d}.snapshot").write_bytes((active.parent / f"{250:020d}.snapshot").read_bytes())
    _set_recovery_point(root, 250)
    for on_corruption in ("fail", "skip"):
        scan = kafkaseg.open_scan(str(root), onCorruption=on_corruption)
        assert _offsets(scan.to_table()) == list(range(LOST_FROM))
        m = scan.metrics
        (tail,) = m.unreadable_tails
        assert (tail.path, tail.position, tail.first_offset, tail.end_offset) == (str(active), at, LOST_FROM,
                                                                                  RECORDS)
        assert f"{RECORDS:020d}.snapshot" in tail.what and "recovery point 250" in tail.what
        assert m.decode.problems == []
    code, report = _verify(root)
    (found,) = [p for p in report["problems"] if p["file"] == str(active) and ".snapshot" in p["message"]]
    assert found["severity"] == "warning" and found["position"] == at


def test_a_snapshot_at_or_below_the_readable_end_says_nothing(torn):
    root, active, at = torn
    _set_recovery_point(root, 250)  # (snapshots 125 and 250 remain)
    scan = kafkaseg.open_scan(str(root))
    assert _offsets(scan.to_table()) == list(range(LOST_FROM))
    assert scan.metrics.unreadable_tails == [] and scan.metrics.decode.problems == []


@pytest.mark.parametrize("torn", [(0, "missing"), (100, "missing")], indirect=True, ids=["boundary", "mid-batch"])
def test_a_preallocated_tails_zeros_are_not_corrupt_bytes(torn):
    """The active segment ends in zeros to the end of the file (log.preallocate): lost offsets the recovery point
    proves are counted, the zeros are not (Kafka's recovery truncates them: a batch size of 0)."""
    root, active, at = torn
    kept = len(active.read_bytes()[at:].rstrip(b"\0"))  # (a torn batch's own last bytes may be zeros)
    with open(active, "ab") as f:
        f.write(bytes(8192))
    scan = kafkaseg.open_scan(str(root), onCorruption="skip")
    assert _offsets(scan.to_table()) == list(range(LOST_FROM))
    (problem,) = scan.metrics.decode.problems
    assert (problem.position, problem.first_offset, problem.end_offset) == (at, LOST_FROM, RECORDS)
    assert problem.bytes == kept and scan.metrics.decode.corrupt_bytes == kept


@pytest.mark.parametrize("recovery_point", [RECORDS, 250], ids=["flushed", "not flushed"])
def test_zeros_to_the_end_below_a_high_watermark_are_a_log_end_not_corruption(torn, recovery_point):
    """A preallocated active segment (log.preallocate) whose pages past offset 270 were lost reads as zeros to the
    end of the file, where the high watermark says offsets up to 299 were acknowledged. Kafka's recovery truncates
    at the first zero batch size as at any invalid tail, so the log ends there as a file cut at that byte would:
    the high watermark's rules decide (data loss when the recovery point says they were flushed, else a note), and
    no zero is counted as a corrupt byte."""
    from kafkaseg.errors import DataLossError

    root, active, at = torn
    with open(active, "ab") as f:
        f.write(bytes(8192))
    (root / "replication-offset-checkpoint").write_text(f"0\n1\nt 0 {RECORDS}\n")
    _set_recovery_point(root, recovery_point)
    if recovery_point == RECORDS:
        with pytest.raises(DataLossError, match="acknowledged and flushed"):
            kafkaseg.read_arrow(str(root))
        scan = kafkaseg.open_scan(str(root), onCorruption="skip", failOnDataLoss="false")
        assert any("acknowledged and flushed" in note for note in scan.plan.report.data_loss)
    else:
        scan = kafkaseg.open_scan(str(root))
        assert any("high watermark 300 is above the log end offset" in n for p in scan.plan.report.partitions
                   for n in p.notes)
    assert _offsets(scan.to_table()) == list(range(LOST_FROM))
    assert scan.metrics.decode.corrupt_batches == 0 and scan.metrics.decode.corrupt_bytes == 0


def test_a_snapshot_of_an_append_after_the_listing_is_not_taken_for_a_loss(written, tmp_path):
    """The listing stats the active segment, a live broker appends offsets 300..304 and snapshots at 305, and the
    listing sees the snapshot: it is past the end listed, for bytes that are there. The read, which finds the log
    changed since it was listed, says nothing, and so does the tools' judgement (layout.lost_tail: offsets,
    describe, locate)."""
    from kafkaseg.options import ReadOptions
    from kafkaseg.planning import list_partitions, plan_scan
    from kafkaseg.scan import Scan
    from kafkaseg.storage.layout import lost_tail, partition_log_end_offset, read_partition_dir

    root, pm = written
    target = tmp_path / "d"
    shutil.copytree(root, target)
    active = target / "t-0" / pm.segments[-1].log_path.name
    (target / "t-0" / f"{RECORDS + 5:020d}.snapshot").write_bytes((target / "t-0" / f"{RECORDS:020d}.snapshot")
                                                                   .read_bytes())
    options = ReadOptions.from_options({})
    listing = list_partitions(str(target), options)
    pdir = read_partition_dir(str(target / "t-0"))  # (as offsets, describe and locate list it)
    assert lost_tail(pdir, RECORDS) is not None  # (the snapshot, listed, is past the listed end)
    _append(active)
    assert partition_log_end_offset(pdir) == RECORDS and lost_tail(pdir, RECORDS) is None
    scan = Scan(plan_scan(str(target), options, listing=listing), options)
    assert _offsets(scan.to_table()) == list(range(RECORDS))
    assert scan.metrics.unreadable_tails == [] and scan.metrics.decode.problems == []


def _append(active) -> None:
    """Append a batch holding offsets 300..304 to the active segment, as a live broker does."""
    import struct

    data = active.read_bytes()
    nxt = bytearray(data[list(iter_headers(data))[-1].position:])
    struct.pack_into(">q", nxt, 0, RECORDS)  # (no CRC covers the base offset)
    with open(active, "ab") as f:
        f.write(bytes(nxt))


# -- the tools that report a log end: offsets, describe, locate; verify's one line for a torn batch --------------
# The tail evidence reads use (above: no high watermark, the active segment's readable end
# below the recovery point, a producer snapshot or index entries) said by the tools that report a partition's log
# end: ``kafkaseg offsets`` (on stderr: its stdout stays kafka-get-offsets.sh's ``topic:partition:offset`` lines),
# ``kafkaseg describe`` (its notes or errors, and ``lostTail`` in --json), ``kafkaseg locate`` (an offset in the
# lost range was lost with the tail), and ``kafkaseg verify``'s one line for a tear inside a batch.
#
# A recovery point past the readable end proves flushed offsets lost: a strict read raises there, so a strict lookup
# whose answer depends on the tail (latest, max-timestamp, a time with no answer below the tail, locate of an offset
# in it) fails for that partition too, and ``--on-corruption skip`` answers the readable end, said on stderr, as a
# lenient read ends there. A snapshot or index entries alone are a warning: the answer stands, with the warning.


def _run(capsys, argv) -> tuple[int, str, str]:
    code = cli_main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def _snapshot_at_end(root, active) -> None:
    """A producer snapshot named at 300, past the readable end (270), with the recovery point at 250."""
    (active.parent / f"{RECORDS:020d}.snapshot").write_bytes((active.parent / f"{250:020d}.snapshot").read_bytes())
    _set_recovery_point(root, 250)


def _offsets_argv(root, *more) -> list[str]:
    return ["offsets", "--data-dir", str(root), "--topic", "t", *more]


@pytest.mark.parametrize("torn", [(0, "missing"), (100, "missing")], indirect=True, ids=["boundary", "mid-batch"])
def test_offsets_says_a_proven_loss_on_stderr_and_a_strict_latest_fails(torn, capsys):
    root, active, at = torn
    code, out, err = _run(capsys, _offsets_argv(root))
    assert code == 2 and out == ""
    assert "t-0" in err and "recovery point 300" in err and f"offsets {LOST_FROM}..{RECORDS - 1}" in err
    assert str(active) in err and f"byte {at}" in err and "--on-corruption skip" in err
    code, out, err = _run(capsys, _offsets_argv(root, "--on-corruption", "skip"))
    assert code == 0 and out == f"t:0:{LOST_FROM}\n"  # (stdout parseable: the line alone)
    assert "recovery point 300" in err and f"offsets {LOST_FROM}..{RECORDS - 1}" in err and "lost" in err
    # earliest does not depend on the tail: answered, the loss still said
    code, out, err = _run(capsys, _offsets_argv(root, "--time", "earliest"))
    assert code == 0 and out == "t:0:0\n" and "recovery point 300" in err


def test_offsets_warns_of_a_possibly_lost_tail(torn, capsys):
    root, active, at = torn
    _snapshot_at_end(root, active)
    for more in ((), ("--on-corruption", "skip")):
        code, out, err = _run(capsys, _offsets_argv(root, *more))
        assert code == 0 and out == f"t:0:{LOST_FROM}\n"
        assert f"{RECORDS:020d}.snapshot" in err and "may" in err and f"offsets {LOST_FROM}..{RECORDS - 1}" in err
    code, out, err = _run(capsys, _offsets_argv(root, "--json"))
    ((row,),) = [json.loads(out)]
    assert row["offset"] == LOST_FROM and row["lostTail"]["proven"] is False
    assert (row["lostTail"]["firstOffset"], row["lostTail"]["endOffset"], row["lostTail"]["position"]) == (
        LOST_FROM, RECORDS, at)


def test_offsets_stays_quiet_at_a_recovery_point_at_the_readable_end(torn, capsys):
    root, active, at = torn
    _set_recovery_point(root, LOST_FROM)
    code, out, err = _run(capsys, _offsets_argv(root))
    assert (code, out, err) == (0, f"t:0:{LOST_FROM}\n", "")


def _describe(capsys, root) -> tuple[int, dict]:
    code, out, err = _run(capsys, ["describe", "--json", str(root)])
    (part,) = json.loads(out)["partitions"]
    return code, part


def test_describe_says_the_lost_tail(torn, capsys):
    root, active, at = torn
    code, part = _describe(capsys, root)
    lost = part["lostTail"]
    assert (lost["firstOffset"], lost["endOffset"], lost["file"], lost["position"]) == (LOST_FROM, RECORDS,
                                                                                        str(active), at)
    assert lost["proven"] is True and "recovery point 300" in lost["message"]
    assert part["logEndOffset"] == LOST_FROM
    assert code == 2 and any("recovery point 300" in e for e in part["errors"])  # (a strict read fails there)
    code, out, err = _run(capsys, ["describe", str(root)])
    assert code == 2 and "t-0: error: " in err and "recovery point 300" in err


def test_describe_warns_of_a_possibly_lost_tail_and_is_quiet_otherwise(torn, capsys):
    root, active, at = torn
    _snapshot_at_end(root, active)
    code, part = _describe(capsys, root)
    assert code == 0 and part["lostTail"]["proven"] is False and part["lostTail"]["endOffset"] == RECORDS
    assert any(f"{RECORDS:020d}.snapshot" in n for n in part["notes"]) and part["errors"] == []
    (active.parent / f"{RECORDS:020d}.snapshot").unlink()
    code, part = _describe(capsys, root)
    assert code == 0 and part["lostTail"] is None and part["notes"] == [] and part["errors"] == []


def _locate(root, offset, *more) -> list[str]:
    return ["locate", "--data-dir", str(root), "--topic", "t", "--partition", "0", "--offset", str(offset), *more]


def test_locate_an_offset_lost_with_the_tail(torn, capsys):
    root, active, at = torn
    code, out, err = _run(capsys, _locate(root, 280))
    assert code == 2 and "recovery point 300" in err and "--on-corruption skip" in err
    code, out, err = _run(capsys, _locate(root, 280, "--on-corruption", "skip", "--json"))
    location = json.loads(out)["location"]
    assert code == 1 and location["found"] is False
    assert "lost with the active segment's tail" in location["reason"] and "recovery point 300" in location["reason"]
    assert "not in the log" not in location["reason"] and "at or past the log end" not in location["reason"]
    # below the tail: found as before; past what the evidence says the log held: past the log end as before
    code, out, err = _run(capsys, _locate(root, 10))
    assert code == 0 and "offset: 10" in out
    code, out, err = _run(capsys, _locate(root, RECORDS + 5, "--on-corruption", "skip"))
    assert code == 1 and "at or past the log end offset" in out


def test_locate_an_offset_possibly_lost_with_the_tail(torn, capsys):
    root, active, at = torn
    _snapshot_at_end(root, active)
    code, out, err = _run(capsys, _locate(root, 280))
    assert code == 1 and "may have been lost with the active segment's tail" in out and ".snapshot" in out


@pytest.mark.parametrize("torn", [(100, "missing")], indirect=True, ids=["mid-batch"])
@pytest.mark.parametrize("evidence", ["recovery point", "snapshot", "none"])
def test_verify_says_a_torn_batch_once(torn, evidence, capsys):
    root, active, at = torn
    if evidence == "snapshot":
        _snapshot_at_end(root, active)
    elif evidence == "none":
        _set_recovery_point(root, LOST_FROM)
    code, out, err = _run(capsys, ["verify", "--json", str(root)])
    report = json.loads(out)
    (line,) = [p for p in report["problems"] if p["file"] == str(active) and p["position"] == at]
    if evidence == "recovery point":
        assert line["severity"] == "error" and "recovery point 300" in line["message"]
    elif evidence == "snapshot":
        assert line["severity"] == "warning" and ".snapshot" in line["message"]
    else:
        assert line["severity"] == "warning" and "a broker would truncate them on recovery" in line["message"]
    if evidence != "none":  # (the torn batch's bytes are said in the one line)
        assert "100 invalid bytes" in line["message"]


@pytest.mark.parametrize("torn", [(100, "missing")], indirect=True, ids=["mid-batch"])
def test_verify_judges_a_preallocated_torn_batch_where_the_reads_do(torn, capsys):
    """The torn batch's 100 bytes and zeros after them to the end of the file (log.preallocate) read as a whole
    batch failing its CRC with only zeros after it, an append in progress: the log ends before it, where the reads
    and the tools judge the tail (byte ``at``). Verify says it there, in one line."""
    root, active, at = torn
    with open(active, "ab") as f:
        f.write(bytes(8192))
    code, out, err = _run(capsys, ["verify", "--json", str(root)])
    lines = [p for p in json.loads(out)["problems"] if p["file"] == str(active) and p["severity"] != "info"]
    assert [(p["position"], p["severity"]) for p in lines if p["position"] is not None] == [(at, "error")]
    (line,) = [p for p in lines if p["position"] == at]
    assert "recovery point 300" in line["message"] and "append in progress" in line["message"]
    code, out, err = _run(capsys, ["describe", "--json", str(root)])
    assert json.loads(out)["partitions"][0]["lostTail"]["position"] == at


def test_the_spark_read_metrics_carry_the_lost_tails(torn, tmp_path, monkeypatch):
    """``ScanReport.read_metrics()`` (what a Spark user and the export job's summary get) lists a tail the recovery
    point proves lost under ``lost_tails``, as ``ScanMetrics`` does, beside its problem."""
    from kafkaseg.options import ReadOptions
    from kafkaseg.planning import plan_scan
    from kafkaseg.scan import ScanMetrics, read_slice
    from kafkaseg.spark import reports

    root, active, at = torn
    _set_recovery_point(root, RECORDS)
    monkeypatch.setenv(reports.REPORT_DIR_ENV, str(tmp_path / "reports"))
    options = ReadOptions.from_options({"onCorruption": "skip"})
    plan = plan_scan(str(root), options)
    for n, piece in enumerate(plan.slices):
        own = ScanMetrics()
        list(read_slice(piece, options, own))
        reports.write_read_metrics("s1", n, own.as_dict())
    totals = reports.ScanReport("s1", 0.0, len(plan.slices), 1, 0, {}, plan.report).read_metrics()
    (lost,) = totals["lost_tails"]
    assert (lost.path, lost.position, lost.first_offset, lost.end_offset) == (str(active), at, LOST_FROM, RECORDS)
    assert [(p.path, p.position) for p in totals["problems"]] == [(str(active), at)]


def test_verify_does_not_trust_a_recovery_point_checkpointed_again_after_the_listing(torn):
    """As reads (test_a_recovery_point_checkpointed_again_after_the_listing_is_not_trusted): verify lists the
    partition, a follower's truncation checkpoints the lowered recovery point, and verify reads on. The recovery
    point it listed proves nothing (layout.judge_tail re-reads the checkpoint, as planning does): no error."""
    from kafkaseg.cli.verify import VerifyReport, discover_to_verify, verify_partitions

    root, active, at = torn
    found = discover_to_verify([str(root)], [])
    _set_recovery_point(root, LOST_FROM)  # LogManager.truncateTo -> checkpointRecoveryOffsetsInDir
    report = VerifyReport()
    verify_partitions(found, report)
    assert [p for p in report.problems if p.severity == "error"] == []
    assert report.partitions[0].unreadable == []
    (note,) = [p for p in report.problems if p.file.endswith("recovery-point-offset-checkpoint")]
    assert note.severity == "info" and "changed since the listing" in note.message


def test_reads_word_a_recovery_point_at_the_readable_end_as_the_tools_do(torn):
    """A snapshot past the readable end with the recovery point below it: the recovery point proves nothing either
    way, and reads say so as offsets/describe do (not that it was checkpointed again since the listing)."""
    from kafkaseg.storage.layout import lost_tail, read_partition_dir

    root, active, at = torn
    _snapshot_at_end(root, active)
    scan = kafkaseg.open_scan(str(root))
    scan.to_table()
    (tail,) = scan.metrics.unreadable_tails
    assert "checkpointed again" not in tail.what
    tool = lost_tail(read_partition_dir(str(active.parent)), LOST_FROM)
    assert tail.what.startswith(tool.message)


def test_verify_does_not_count_a_snapshot_deleted_after_the_listing(torn):
    """The listing sees a snapshot past the readable end, which a follower's truncation deletes before verify reads
    the log (UnifiedLog.truncateTo): reads and the tools stat it again and say nothing; so does verify."""
    from kafkaseg.cli.verify import VerifyReport, discover_to_verify, verify_partitions

    root, active, at = torn
    _snapshot_at_end(root, active)
    found = discover_to_verify([str(root)], [])
    (active.parent / f"{RECORDS:020d}.snapshot").unlink()
    report = VerifyReport()
    verify_partitions(found, report)
    assert not [p for p in report.problems if ".snapshot" in p.message and p.file == str(active)]
    assert report.partitions[0].unreadable == []


# -- with a high watermark: acknowledged and flushed offsets the files do not hold ---------------------------------
# A high watermark above the readable end alone is a crash's unflushed tail (a note: a restarted broker truncates
# it and fetches it again). With the recovery point above it too, the broker had acknowledged and flushed offsets
# these files do not hold: a read to latest raises DataLossError (planning), so the tools say the same loss, as
# they say a proven lost tail without a high watermark: a strict lookup whose answer depends on it fails,
# ``--on-corruption skip`` answers the log end with the line on stderr, describe calls it an error, and locate
# says an offset in it was lost. The lost range is the read's: [log end, min(high watermark, recovery point)).


@pytest.mark.parametrize("torn", [(0, "missing"), (100, "missing")], indirect=True, ids=["boundary", "mid-batch"])
def test_offsets_fails_a_strict_latest_where_a_read_loses_acknowledged_offsets(torn, capsys):
    from kafkaseg.errors import DataLossError

    root, active, at = torn
    _set_high_watermark(root, RECORDS)
    with pytest.raises(DataLossError, match="acknowledged and flushed"):
        kafkaseg.read_arrow(str(root))
    code, out, err = _run(capsys, _offsets_argv(root))
    assert code == 2 and out == ""
    assert "Skip getting offsets for topic-partition t-0" in err
    assert f"high watermark {RECORDS} and recovery point {RECORDS}" in err and "acknowledged and flushed" in err
    assert str(active) in err and f"byte {at}" in err and "--on-corruption skip" in err
    code, out, err = _run(capsys, _offsets_argv(root, "--on-corruption", "skip"))
    assert code == 0 and out == f"t:0:{LOST_FROM}\n"
    assert f"offsets {LOST_FROM}..{RECORDS - 1} lost with the active segment's tail ({active} @ byte {at})" in err
    code, out, err = _run(capsys, _offsets_argv(root, "--time", "earliest"))
    assert code == 0 and out == "t:0:0\n" and "acknowledged and flushed" in err
    code, out, err = _run(capsys, _offsets_argv(root, "--on-corruption", "skip", "--json"))
    (row,) = json.loads(out)
    assert row["offset"] == LOST_FROM and row["lostTail"]["proven"] is True
    assert (row["lostTail"]["firstOffset"], row["lostTail"]["endOffset"], row["lostTail"]["file"],
            row["lostTail"]["position"]) == (LOST_FROM, RECORDS, str(active), at)


@pytest.mark.parametrize("high_watermark, recovery_point", [(290, RECORDS), (RECORDS, 280)],
                         ids=["high watermark lower", "recovery point lower"])
def test_the_tools_lose_the_range_a_read_loses(torn, capsys, high_watermark, recovery_point):
    from kafkaseg.errors import DataLossError

    root, active, at = torn
    _set_high_watermark(root, high_watermark)
    _set_recovery_point(root, recovery_point)
    end = min(high_watermark, recovery_point)
    with pytest.raises(DataLossError, match=rf"offsets \[{LOST_FROM}, {end}\)"):
        kafkaseg.read_arrow(str(root))
    code, part = _describe(capsys, root)
    assert code == 2 and part["lostTail"]["endOffset"] == end and part["lostTail"]["proven"] is True
    code, out, err = _run(capsys, _locate(root, end - 1))
    assert code == 2 and f"[{LOST_FROM}, {end})" in err
    code, out, err = _run(capsys, _locate(root, end, "--on-corruption", "skip"))
    assert code == 1 and "at or past the log end offset" in out


def test_describe_calls_lost_acknowledged_offsets_an_error(torn, capsys):
    root, active, at = torn
    _set_high_watermark(root, RECORDS)
    code, part = _describe(capsys, root)
    lost = part["lostTail"]
    assert (lost["firstOffset"], lost["endOffset"], lost["file"], lost["position"]) == (LOST_FROM, RECORDS,
                                                                                        str(active), at)
    assert lost["proven"] is True and "acknowledged and flushed" in lost["message"]
    assert part["logEndOffset"] == LOST_FROM and part["highWatermark"] == RECORDS
    assert code == 2 and any("acknowledged and flushed" in e for e in part["errors"])
    # (not also the note that reads stop at the log end: a read to latest fails)
    assert not any("where reads and 'latest' stop" in n for n in part["notes"])


def _assert_locate_says_lost(capsys, root, offset, words) -> None:
    """A strict locate of acknowledged and flushed ``offset`` fails (exit 2, saying how to read on); with
    --on-corruption skip its location is not found, the reason saying ``words`` and the read's."""
    code, out, err = _run(capsys, _locate(root, offset))
    assert code == 2 and "acknowledged and flushed" in err and "--on-corruption skip" in err
    code, out, err = _run(capsys, _locate(root, offset, "--on-corruption", "skip", "--json"))
    location = json.loads(out)["location"]
    assert code == 1 and location["found"] is False
    assert words in location["reason"] and "acknowledged and flushed" in location["reason"]


def test_locate_an_acknowledged_offset_lost_from_the_files(torn, capsys):
    root, active, at = torn
    _set_high_watermark(root, RECORDS)
    _assert_locate_says_lost(capsys, root, 280, "was lost with the active segment's tail")
    code, out, err = _run(capsys, _locate(root, 10))
    assert code == 0 and "offset: 10" in out


@pytest.mark.parametrize("torn", [(0, "missing"), (100, "missing")], indirect=True, ids=["boundary", "mid-batch"])
def test_a_high_watermark_alone_above_the_log_end_stays_a_note(torn, capsys):
    """The recovery point at the readable end: a crash's unflushed tail, which a read ends at with a note, and so
    do the tools (as before)."""
    root, active, at = torn
    _set_high_watermark(root, RECORDS)
    _set_recovery_point(root, LOST_FROM)
    assert _offsets(kafkaseg.read_arrow(str(root))) == list(range(LOST_FROM))
    code, out, err = _run(capsys, _offsets_argv(root))
    assert (code, out, err) == (0, f"t:0:{LOST_FROM}\n", "")
    code, part = _describe(capsys, root)
    assert code == 0 and part["lostTail"] is None and part["errors"] == []
    assert any("where reads and 'latest' stop" in n for n in part["notes"])
    code, out, err = _run(capsys, _locate(root, 280, "--on-corruption", "skip"))
    assert code == 1 and "at or past the log end offset" in out


@pytest.mark.parametrize("high_watermark", [LOST_FROM, 250], ids=["at the log end", "below it"])
def test_a_recovery_point_alone_above_the_log_end_is_a_note(torn, capsys, high_watermark):
    """The high watermark at (or below) the log end and the recovery point above it: offsets flushed once and gone
    from the files, which the high watermark says no consumer had seen. A broker clamps the recovery point to the
    log end (``LogLoader.recoverLog``: ``min(recoveryPointCheckpoint, logEndOffset)``) and serves up to the high
    watermark, as the reads do: nothing fails or is lost, and a read's plan, describe and offsets note it in one
    wording (``layout.flushed_above_words``), as verify says it."""
    from kafkaseg.storage.layout import flushed_above_words

    root, active, at = torn
    _set_high_watermark(root, high_watermark)
    _set_recovery_point(root, RECORDS)
    folder = str(active.parent)
    words = flushed_above_words(RECORDS, high_watermark, LOST_FROM, folder)
    assert words.startswith(f"recovery point {RECORDS} is above the log end offset {LOST_FROM} of {folder}")
    assert f"offsets {LOST_FROM}..{RECORDS - 1}" in words and ";" not in words
    scan = kafkaseg.open_scan(str(root))
    assert _offsets(scan.to_table()) == list(range(high_watermark))
    assert [n for p in scan.plan.report.partitions for n in p.notes if "recovery point" in n] == [f"t-0: {words}"]
    assert scan.plan.report.data_loss == [] and scan.metrics.lost_tails == [] == scan.metrics.unreadable_tails
    code, part = _describe(capsys, root)
    assert code == 0 and part["errors"] == [] and part["lostTail"] is None and words in part["notes"]
    code, out, err = _run(capsys, _offsets_argv(root, "-v"))
    assert code == 0 and out == f"t:0:{high_watermark}\n" and f"t:0: note: {words}" in err
    code, report = _verify(root)
    (said,) = [p["message"] for p in report["problems"] if "recovery point" in p["message"]]
    assert said == f"t-0: {words}"
    # a recovery point checkpointed again since the listing (a follower's truncation lowers it right after cutting
    # the log): not trusted, nothing said
    from kafkaseg.options import ReadOptions
    from kafkaseg.planning import list_partitions, plan_scan

    options = ReadOptions.from_options({})
    listing = list_partitions(str(root), options)
    _set_recovery_point(root, LOST_FROM + 1)
    plan = plan_scan(str(root), options, listing=listing)
    assert not [n for p in plan.report.partitions for n in p.notes if "recovery point" in n]


@pytest.mark.parametrize("tail, noted", [(b"\xff" * 30, False), (b"\x01\x02" * 15, True)],
                         ids=["corrupt framing", "a batch cut short"])
def test_verify_says_a_recovery_point_above_a_torn_end_where_the_read_does(torn, tail, noted):
    """30 torn bytes after the last batch (high watermark 270, recovery point 300): verify says the recovery point
    above the log end by the reads' one rule (``layout.flushed_past_end``), so only where a read's plan notes it.
    Bad framing there is a walk that met corruption (the read is silent of the recovery point, and verify reports
    the bytes themselves); a final batch cut short is the end of a clean walk (both note it)."""
    root, active, at = torn
    with open(active, "ab") as f:
        f.write(tail)
    _set_high_watermark(root, LOST_FROM)
    _set_recovery_point(root, RECORDS)
    scan = kafkaseg.open_scan(str(root))
    assert _offsets(scan.to_table()) == list(range(LOST_FROM))
    notes = [n for p in scan.plan.report.partitions for n in p.notes if f"recovery point {RECORDS}" in n]
    assert bool(notes) is noted
    code, report = _verify(root)
    said = [p["message"] for p in report["problems"] if f"recovery point {RECORDS}" in p["message"]]
    assert said == notes
    assert any(p["file"] == str(active) and p["position"] == at for p in report["problems"])  # (the torn bytes)


def test_a_recovery_point_at_the_log_end_with_a_high_watermark_says_nothing(torn, capsys):
    root, active, at = torn
    _set_high_watermark(root, LOST_FROM)
    _set_recovery_point(root, LOST_FROM)
    scan = kafkaseg.open_scan(str(root))
    assert _offsets(scan.to_table()) == list(range(LOST_FROM))
    assert [n for p in scan.plan.report.partitions for n in p.notes] == []
    code, part = _describe(capsys, root)
    assert (code, part["notes"], part["errors"]) == (0, [], [])


def test_the_tools_word_a_high_watermark_above_the_log_end_alike(tmp_path, capsys):
    """The high watermark alone above the log end (lost_tail_data's "hw": the recovery point below it, a note, not
    a loss): one wording (``layout.high_watermark_above_words``) for a read's plan note and consume's stderr line
    (``planning.high_watermark_above_note``), describe's note, offsets' note, retention's note and verify's
    problem, each naming the partition's folder."""
    from kafkaseg.planning import high_watermark_above_note
    from kafkaseg.storage.layout import high_watermark_above_words

    root = tmp_path / "d"
    lost_tail_copy(root, "hw")
    folder = str(root / "t-0")
    words = high_watermark_above_words(RECORDS, LOST_FROM, folder)
    note = f"t-0: {words}"
    assert high_watermark_above_note("t-0", RECORDS, LOST_FROM, folder) == note
    scan = kafkaseg.open_scan(str(root))
    assert [n for p in scan.plan.report.partitions for n in p.notes if "high watermark" in n] == [note]
    code, out, err = _run(capsys, ["consume", "--data-dir", str(root), "--topic", "t", "--from-beginning"])
    assert code == 0 and f"kafkaseg consume: {note}\n" in err
    code, part = _describe(capsys, root)
    assert code == 0 and part["errors"] == [] and [n for n in part["notes"] if "high watermark" in n] == [words]
    code, out, err = _run(capsys, ["describe", str(root)])
    assert f"{note}\n" in out + err
    code, out, err = _run(capsys, _offsets_argv(root, "--json"))
    (row,) = json.loads(out)
    assert code == 0 and row["offset"] == LOST_FROM and row["note"] == words
    code, out, err = _run(capsys, _offsets_argv(root, "--verbose"))
    assert code == 0 and f"t:0: note: {words}\n" in err
    code, out, err = _run(capsys, ["retention", "--json", str(root)])
    (facts,) = json.loads(out)["partitions"]
    assert words in facts["notes"].split("; ")
    code, out, err = _run(capsys, ["retention", str(root)])
    assert f"{note}\n" in out + err
    code, report = _verify(root)
    (found,) = [p for p in report["problems"] if "high watermark" in p["message"]]
    assert found["message"] == note and found["file"] == str(root / "replication-offset-checkpoint")


def test_lookups_do_not_trust_a_recovery_point_checkpointed_again_after_the_listing(torn):
    """As planning (``ListingCheck.recovery_point``): a follower's truncation cuts the log, then checkpoints the
    lowered recovery point; a listing between the two sees the old one, which the tools read again."""
    from kafkaseg.storage.layout import lost_tail, read_partition_dir

    root, active, at = torn
    _set_high_watermark(root, RECORDS)
    pdir = read_partition_dir(str(active.parent))
    assert lost_tail(pdir, LOST_FROM) is not None
    _set_recovery_point(root, LOST_FROM)  # LogManager.truncateTo -> checkpointRecoveryOffsetsInDir
    assert lost_tail(pdir, LOST_FROM) is None


@pytest.mark.parametrize("high_watermark", [None, RECORDS], ids=["no high watermark", "high watermark"])
def test_the_tools_word_a_lost_tail_alike(torn, capsys, high_watermark):
    """One wording (``LostTail.summary``) for offsets' stderr line, describe's error and locate's reason."""
    from kafkaseg.storage.layout import lost_tail, read_partition_dir

    root, active, at = torn
    if high_watermark is not None:
        _set_high_watermark(root, high_watermark)
    said = lost_tail(read_partition_dir(str(active.parent)), LOST_FROM).summary()
    assert said.startswith(f"offsets {LOST_FROM}..{RECORDS - 1} lost with the active segment's tail ({active} @ "
                           f"byte {at}): ")
    code, part = _describe(capsys, root)
    assert said in part["errors"]
    code, out, err = _run(capsys, _offsets_argv(root, "--time", "earliest"))
    assert f"kafkaseg offsets: t-0: {said}\n" in err
    code, out, err = _run(capsys, _locate(root, 280, "--on-corruption", "skip", "--json"))
    reason = json.loads(out)["location"]["reason"]
    assert reason == (f"offset 280 was lost with the active segment's tail (offsets {LOST_FROM}..{RECORDS - 1}; "
                      f"{active} @ byte {at}): {lost_tail(read_partition_dir(str(active.parent)), LOST_FROM).message}")


# --- streams: a micro-batch that reads a partition to its log end says what a batch read to latest says of offsets
# lost past it (planning's rule, layout.acknowledged_loss_end), under failOnDataLoss as Spark's Kafka source says
# data loss: true fails the query, false warns and goes on. The three cases of tests/lost_tail_data.CASES.

def _batch_outcome(root, **options) -> tuple[list[int] | None, tuple | None, list[str]]:
    """(offsets read, (error type, words) of the error raised, data loss said: the plan's, and the flushed tails the
    read found lost) of a batch read to latest."""
    try:
        scan = kafkaseg.open_scan(str(root), **options)
        offsets = _offsets(scan.to_table())
        return offsets, None, list(scan.plan.report.data_loss) + scan.metrics.lost_tail_lines()
    except kafkaseg.KafkaSegError as err:
        return None, (type(err), str(err).split(" (set failOnDataLoss=false")[0]), []


class _Idle(Exception):
    """Ends a followed stream that has nothing new and no change left to make (see _stream_outcome)."""


def _stream_outcome(root, caplog, changes=(), **options) -> tuple[list[int] | None, tuple | None, list[str],
                                                                   list[int]]:
    """The same of a stream (kafkaseg.streaming.follow, Spark's planner without Spark; from earliest unless
    ``startingOffsets`` says otherwise), polled until nothing new, plus the offsets it yielded before an error. Each
    of ``changes`` (callables) is made in turn when the stream has nothing new, and it polls on."""
    from kafkaseg.streaming import follow

    pending = list(changes)

    def idle(seconds: float) -> None:
        if not pending:
            raise _Idle
        pending.pop(0)()

    yielded: list[int] = []
    caplog.clear()
    try:
        with caplog.at_level("WARNING", logger="kafkaseg.streaming"):
            for batch in follow(str(root), sleep=idle, **{"startingOffsets": "earliest", **options}):
                yielded.extend(batch.column("offset").to_pylist())
    except _Idle:
        outcome, error = yielded, None
    except kafkaseg.KafkaSegError as err:
        outcome, error = None, (type(err), str(err).split(" (set failOnDataLoss=false")[0])
    said = [r.getMessage().removeprefix("data loss (failOnDataLoss=false): ") for r in caplog.records
            if r.getMessage().startswith("data loss")]
    return outcome, error, said, yielded


@pytest.mark.parametrize("upper", ["highWatermark", "logEndOffset"], ids=["", "upperBound=logEndOffset"])
@pytest.mark.parametrize("limit", [None, 100], ids=["all available", "maxOffsetsPerTrigger=100"])
@pytest.mark.parametrize("fail", ["true", "false"], ids=["failOnDataLoss", "failOnDataLoss=false"])
@pytest.mark.parametrize("case", ["hwrp", "rp", "hw"])
def test_a_stream_reads_a_lost_log_end_as_a_batch_read_to_latest_does(tmp_path, caplog, case, fail, limit, upper):
    """Also with upperBound=logEndOffset, whose reads end at the log end too: the offsets past it that the high
    watermark and recovery point say were acknowledged and flushed are lost all the same (before, such reads said
    nothing of them)."""
    root = tmp_path / "d"
    lost_tail_copy(root, case)
    batch = _batch_outcome(root, failOnDataLoss=fail, upperBound=upper)
    more = {"upperBound": upper} if limit is None else {"maxOffsetsPerTrigger": limit, "upperBound": upper}
    offsets, error, said, yielded = _stream_outcome(root, caplog, failOnDataLoss=fail, **more)
    assert (offsets, error, said) == batch
    if case == "hwrp":  # (what each case is, so that the agreement above is not of two reads that say nothing)
        assert (batch[1] is not None) == (fail == "true") and (batch[2] != []) == (fail == "false")
        assert "offsets [270, 300) were acknowledged and flushed" in (batch[1][1] if batch[1] else batch[2][0])
        # the micro-batches below the log end read their records; the one that reaches it says the loss: with
        # failOnDataLoss it fails when it is planned (as Spark's source fails planInputPartitions), reading nothing
        before = 0 if limit is None else LOST_FROM // limit * limit
        assert yielded == list(range(before if fail == "true" else LOST_FROM))
    elif case == "rp":  # flushed offsets the file lost: data loss as for hwrp (with failOnDataLoss=false it raised
        # TruncatedDataError too, which only onCorruption=skip read past: found in review); strict, a DataLossError
        # as hwrp's is, naming the file and byte as a TruncatedDataError
        if fail == "true":
            assert issubclass(batch[1][0], DataLossError) and issubclass(batch[1][0], TruncatedDataError)
            assert batch[2] == []
        else:
            assert batch[0] == list(range(LOST_FROM)) and batch[1] is None and len(batch[2]) == 1
            assert "the recovery point 300 says the broker had flushed" in batch[2][0]
    else:
        assert batch == (list(range(LOST_FROM)), None, [])


_CONSUME_WAYS = {"": [], "--follow": ["--follow", "--timeout-ms", "0"], "--to-log-end": ["--to-log-end"],
                 "--to-log-end --follow": ["--to-log-end", "--follow", "--timeout-ms", "0"]}


@pytest.mark.parametrize("way", list(_CONSUME_WAYS))
@pytest.mark.parametrize("case, code, strict_code", [("hwrp", 0, 3), ("rp", 0, 3), ("hw", 0, 0)])
def test_consume_says_a_lost_log_end_as_a_read_does(tmp_path, capsysbinary, case, code, strict_code, way):
    """``kafkaseg consume`` reads with failOnDataLoss=false (a consumer goes on), says the loss on stderr and
    counts it for --fail-on-data-loss (exit status 3); a strict read's error ends it (2). --to-log-end reads with
    upperBound=logEndOffset, which loses the acknowledged and flushed offsets past the log end all the same (before,
    it said nothing of them)."""
    root = tmp_path / "d"
    lost_tail_copy(root, case)
    follow = _CONSUME_WAYS[way]
    argv = ["consume", "--data-dir", str(root), "--topic", "t", "--from-beginning"] + follow
    for strict in (False, True):
        got = cli_main(argv + (["--fail-on-data-loss"] if strict else []))
        out, err = (text.decode() for text in capsysbinary.readouterr())
        assert got == (strict_code if strict else code), err
        assert out.count("\n") == LOST_FROM
        said = err.count("offsets [270, 300) were acknowledged and flushed to disk but are not in these files")
        assert said == (1 if case == "hwrp" else 0), err
        # (rp: an error, exit 2 whatever --fail-on-data-loss, before consume read it as the data loss it is)
        flushed = err.count("the recovery point 300 says the broker had flushed the log up to offset 300")
        assert flushed == (1 if case == "rp" else 0), err
        assert ("exit status 3" in err) == (got == 3)
        # the high watermark alone above the log end: the read's plan note, at the end of a run that stops (as the
        # line for records past the high watermark); not where the loss was said
        noted = err.count(f"t-0: high watermark {RECORDS} is above the log end offset {LOST_FROM} of {root / 't-0'}")
        assert noted == (1 if case == "hw" and "--follow" not in follow else 0), err


@pytest.mark.parametrize("way", list(_CONSUME_WAYS))
@pytest.mark.parametrize("case", ["hwrp", "rp", "hw"])
def test_consume_from_latest_says_a_lost_log_end_as_a_read_from_there_does(tmp_path, capsysbinary, case, way):
    """A run from latest starts at the log end, where it stands: offsets the high watermark and the recovery point
    say were acknowledged and flushed past it are lost as a batch read from there to latest says (its DataLossError,
    or with failOnDataLoss=false its data loss, which consume reads with): said on stderr, exit status 3 with
    --fail-on-data-loss, with or without --follow or --to-log-end (before, a run from latest said nothing of them,
    --follow included). The high watermark alone above the log end is noted as for any run that stops; the
    recovery point alone reads nothing there, as the batch read does."""
    root = tmp_path / "d"
    lost_tail_copy(root, case)
    upper = "logEndOffset" if "--to-log-end" in way else "highWatermark"
    _, _, batch_said = _batch_outcome(root, failOnDataLoss="false", upperBound=upper,
                                      startingOffsets=json.dumps({"t": {"0": LOST_FROM}}))
    assert (batch_said != []) == (case == "hwrp")
    got = cli_main(["consume", "--data-dir", str(root), "--topic", "t", "--fail-on-data-loss"] + _CONSUME_WAYS[way])
    out, err = (text.decode() for text in capsysbinary.readouterr())
    assert (got, out) == (3 if case == "hwrp" else 0, "")
    assert [line.removeprefix("kafkaseg consume: ") for line in err.splitlines()
            if "were acknowledged and flushed" in line] == batch_said
    noted = err.count(f"t-0: high watermark {RECORDS} is above the log end offset {LOST_FROM}")
    assert noted == (1 if case == "hw" and "--follow" not in way else 0), err


#: How a stream comes to stand at the log end: started at latest, or having read to it while the checkpoints said
#: nothing was lost past it (both at the log end; or the recovery point below it, the high watermark as the case
#: has it), after which they came to say what the case says.
_STANDING = {"started at latest": None, "read to it, then both checkpoints rose": (LOST_FROM, LOST_FROM),
             "read to it, then the recovery point rose": ("case", 250)}


@pytest.mark.parametrize("upper", ["highWatermark", "logEndOffset"], ids=["", "upperBound=logEndOffset"])
@pytest.mark.parametrize("fail", ["true", "false"], ids=["failOnDataLoss", "failOnDataLoss=false"])
@pytest.mark.parametrize("case", ["hwrp", "rp", "hw"])
@pytest.mark.parametrize("standing", list(_STANDING))
def test_a_stream_standing_at_a_lost_log_end_says_it_as_a_batch_read_from_there_does(tmp_path, caplog, standing,
                                                                                      case, fail, upper):
    """A stream that stands at the log end has no micro-batch to read to it, but a batch read from there to latest
    raises the DataLossError of offsets acknowledged and flushed past it (high watermark and recovery point both
    above the log end): the stream says it when it finds itself there, in the same words, failing under
    failOnDataLoss, logging it once and going on under false (before, it said nothing)."""
    root = tmp_path / "d"
    lost_tail_copy(root, case)
    high_watermark, recovery_point = CASES[case]
    batch = _batch_outcome(root, failOnDataLoss=fail, upperBound=upper,
                           startingOffsets=json.dumps({"t": {"0": LOST_FROM}}))
    options = {"failOnDataLoss": fail, "upperBound": upper}
    before = _STANDING[standing]
    if before is None:
        offsets, error, said, yielded = _stream_outcome(root, caplog, startingOffsets="latest", **options)
        assert yielded == []
    else:
        if high_watermark is not None:
            _set_high_watermark(root, high_watermark if before[0] == "case" else before[0])
        _set_recovery_point(root, before[1])
        assert _batch_outcome(root, failOnDataLoss="true", upperBound=upper) == (list(range(LOST_FROM)), None, [])

        def went_missing():
            if high_watermark is not None:
                _set_high_watermark(root, high_watermark)
            _set_recovery_point(root, recovery_point)

        offsets, error, said, yielded = _stream_outcome(root, caplog, [went_missing], **options)
        assert yielded[:LOST_FROM] == list(range(LOST_FROM))
        offsets = offsets[LOST_FROM:] if offsets is not None else None
    assert (offsets, error, said) == batch
    if case == "hwrp":
        assert (batch[1] is not None) == (fail == "true") and (batch[2] != []) == (fail == "false")
        assert "offsets [270, 300) were acknowledged and flushed" in (batch[1][1] if batch[1] else batch[2][0])
    else:  # (the recovery point alone: a read from the log end reads no tail to find it lost)
        assert batch == ([], None, [])


def test_a_stream_that_said_a_lost_log_end_reads_on_as_batch_reads_do(tmp_path, caplog):
    """failOnDataLoss=false: a stream standing at a lost log end (it said so) reads what comes after, as batch reads
    from where it stood read it: a new partition's records (the loss not said again), then the same partition's,
    its files growing again (a broker's follower fetching the lost offsets back from the leader): partly (the batch
    that reaches the new log end says the offsets still lost past it, once), then whole (nothing lost)."""
    from kafkaseg.streaming import follow
    from kafkaseg.testing import TopicSpec, write_data_dir
    from kafkaseg.testing.partition import write_offset_checkpoint

    whole_root, root, other = tmp_path / "whole", tmp_path / "d", tmp_path / "other"
    pm = write_whole(whole_root)
    active, at = cut_tail(whole_root, root, pm)
    _set_high_watermark(root, RECORDS)
    _set_recovery_point(root, RECORDS)
    whole = (whole_root / "t-0" / active.name).read_bytes()
    mid = [h.position for h in iter_headers(whole) if h.base_offset == 290][0]  # the batch of offsets 290..294
    write_data_dir(other, [TopicSpec("u", records_per_partition=40)], seed=3)

    def stood() -> dict:
        """Where the stream stands after each step below (a batch read's start)."""
        return {"t": {"0": position["t"]}, "u": {"0": position["u"]}}

    def batch_from_there() -> tuple:
        return _batch_outcome(root, failOnDataLoss="false", startingOffsets=json.dumps(stood()))

    def new_partition():
        shutil.move(str(other / "u-0"), str(root / "u-0"))
        write_offset_checkpoint(root / "replication-offset-checkpoint", {("t", 0): RECORDS, ("u", 0): 40})

    def grows_to_290():
        active.write_bytes(whole[:mid])

    def grows_whole():
        active.write_bytes(whole)

    steps = [new_partition, grows_to_290, grows_whole]
    position = {"t": LOST_FROM, "u": 0}
    expected: list[tuple] = []  # per step: the batch read from where the stream stood
    got: list[tuple] = []  # per step: what the stream yielded and said
    yielded: list[tuple[str, int]] = []

    def idle(seconds: float) -> None:
        said = [r.getMessage().removeprefix("data loss (failOnDataLoss=false): ") for r in caplog.records
                if r.getMessage().startswith("data loss")]
        got.append((sorted(yielded), said))
        for topic, offset in yielded:
            position[topic] = max(position[topic], offset + 1)
        yielded.clear()
        caplog.clear()
        if not steps:
            raise _Idle
        steps.pop(0)()
        offsets, error, said = batch_from_there()
        assert error is None
        expected.append((offsets, said))

    # the batch read of the first step: from the log end, before the stream started there
    offsets, _, said = _batch_outcome(root, failOnDataLoss="false", startingOffsets=json.dumps({"t": {"0": LOST_FROM}}))
    expected.insert(0, (offsets, said))
    caplog.clear()
    with caplog.at_level("WARNING", logger="kafkaseg.streaming"), pytest.raises(_Idle):
        for batch in follow(str(root), startingOffsets="latest", failOnDataLoss="false", sleep=idle):
            yielded.extend(zip(batch.column("topic").to_pylist(), batch.column("offset").to_pylist()))
    # (the batch reads list their offsets only; the stream's, with their topic.) A batch read says the loss past
    # where it starts each time; the stream, once
    got = [(sorted(offset for _, offset in records), said) for records, said in got]
    said_before: list[str] = []
    for (offsets, said), (batch_offsets, batch_said) in zip(got, expected, strict=True):
        assert offsets == sorted(batch_offsets)
        assert said == [line for line in batch_said if line not in said_before]
        said_before.extend(said)
    lost_270, lost_290 = (f"offsets [{end}, 300) were acknowledged and flushed" for end in (LOST_FROM, 290))
    assert [[lost_270 in line for line in said] for _, said in got] == [[True], [], [False], []]
    assert lost_290 in got[2][1][0] and got[1][0] == list(range(40)) and got[2][0] == list(range(LOST_FROM, 290))
    assert got[3] == (list(range(290, RECORDS)), [])


# -- every .log file of the partition gone: the checkpoints still say what the broker held -------------------------
# (found by a damage campaign: a partition folder whose only .log was deleted read as an empty log, silently, with a
# high watermark and recovery point of 1500 in the log dir's checkpoints)


def _without_logs(written, tmp_path):
    root, _ = written
    target = tmp_path / "d"
    shutil.copytree(root, target)
    for log in (target / "t-0").glob("*.log"):
        log.unlink()
    return target


def test_a_partition_whose_logs_are_all_gone_loses_the_acknowledged_and_flushed_offsets(written, tmp_path):
    """High watermark and recovery point (300) above the empty log's offset 0: a read to latest raises
    DataLossError, as for a lost segment at the log's end; failOnDataLoss=false reads nothing and says so."""
    from kafkaseg.errors import DataLossError

    root = _without_logs(written, tmp_path)
    _set_high_watermark(root, RECORDS)
    with pytest.raises(DataLossError, match=r"offsets \[0, 300\) were acknowledged and flushed"):
        kafkaseg.read_arrow(str(root))
    scan = kafkaseg.open_scan(str(root), failOnDataLoss="false")
    assert scan.to_table().num_rows == 0
    assert any("acknowledged and flushed" in note for note in scan.plan.report.data_loss)
    # a given end asks for no more than the files hold
    assert kafkaseg.read_arrow(str(root), endingOffsets='{"t":{"0":0}}').num_rows == 0


def test_a_partition_whose_logs_are_all_gone_notes_a_high_watermark_above_it(written, tmp_path):
    """The recovery point not above the empty log (an unflushed log a crash lost): no error, the note a read whose
    high watermark is above its log end makes."""
    root = _without_logs(written, tmp_path)
    _set_high_watermark(root, RECORDS)
    _set_recovery_point(root, 0)
    scan = kafkaseg.open_scan(str(root))
    assert scan.to_table().num_rows == 0
    (part,) = scan.plan.report.partitions
    assert any(f"high watermark {RECORDS} is above the log end offset 0" in note for note in part.notes), part.notes


def test_verify_calls_a_high_watermark_above_a_partition_whose_logs_are_all_gone_an_error(written, tmp_path):
    """verify says what it says of any log end below the high watermark (an error), the empty log's offset taken
    as its log end, as a read takes it: a strict read of it raises."""
    root = _without_logs(written, tmp_path)
    _set_high_watermark(root, RECORDS)
    code, d = _verify(root)
    assert code == 1, d
    assert any(p["severity"] == "error" and f"high watermark {RECORDS} is above the log end offset 0" in p["message"]
               for p in d["problems"]), d


def test_describe_says_what_a_partition_whose_logs_are_all_gone_lost(written, tmp_path, capsys):
    """describe says of the empty log what a read says: acknowledged and flushed offsets lost (an error, exit 2),
    or with the recovery point not above it, the note of a high watermark above the log end."""
    root = _without_logs(written, tmp_path)
    _set_high_watermark(root, RECORDS)
    code, part = _describe(capsys, root)
    assert code == 2 and any("acknowledged and flushed" in e for e in part["errors"]), part
    _set_recovery_point(root, 0)
    code, part = _describe(capsys, root)
    assert code == 0 and part["errors"] == [], part
    assert any(f"high watermark {RECORDS} is above the log end offset 0" in n for n in part["notes"]), part


def test_offsets_says_what_a_partition_whose_logs_are_all_gone_lost(written, tmp_path, capsys):
    """offsets says of the empty log what a read to latest raises: a strict -1 fails for the partition (exit 2,
    the read's words), --on-corruption skip answers the empty log's offset with the loss on stderr, and -2 (which
    does not depend on the lost offsets) is answered with the line on stderr."""
    root = _without_logs(written, tmp_path)
    _set_high_watermark(root, RECORDS)
    code, out, err = _run(capsys, _offsets_argv(root))
    assert code == 2 and out == "" and "Skip getting offsets for topic-partition t-0" in err
    assert f"offsets [0, {RECORDS}) were acknowledged and flushed" in err and "--on-corruption skip" in err
    code, out, err = _run(capsys, _offsets_argv(root, "--on-corruption", "skip", "--json"))
    (row,) = json.loads(out)
    assert code == 0 and row["offset"] == 0 and row["lostTail"]["proven"] is True
    assert (row["lostTail"]["firstOffset"], row["lostTail"]["endOffset"]) == (0, RECORDS)
    assert f"offsets 0..{RECORDS - 1} lost with every .log file of the partition" in err
    code, out, err = _run(capsys, _offsets_argv(root, "--time", "earliest"))
    assert code == 0 and out == "t:0:0\n" and "acknowledged and flushed" in err
    _set_recovery_point(root, 0)  # (an unflushed log a crash lost: the log end is answered)
    code, out, err = _run(capsys, _offsets_argv(root))
    assert code == 0 and out == "t:0:0\n" and "acknowledged and flushed" not in err


def test_offsets_verbose_says_a_partition_whose_logs_are_all_gone_lost_its_offsets_once(written, tmp_path, capsys):
    """-v and --json with --on-corruption skip: the loss line (acknowledged and flushed, lost) is the one thing said
    of offsets 0..299, without the note of a high watermark above the log end, which calls them an unflushed tail a
    crash lost (before: both, contradicting each other); with the recovery point not above the empty log, that note
    is what is said."""
    root = _without_logs(written, tmp_path)
    _set_high_watermark(root, RECORDS)
    above = f"high watermark {RECORDS} is above the log end offset 0"
    code, out, err = _run(capsys, _offsets_argv(root, "--on-corruption", "skip", "-v"))
    assert code == 0 and out.startswith("t:0:0\n") and "acknowledged and flushed" in err, err
    assert above not in err and "unflushed tail a crash lost" not in err, err
    code, out, err = _run(capsys, _offsets_argv(root, "--on-corruption", "skip", "--json"))
    (row,) = json.loads(out)
    assert code == 0 and row["lostTail"]["proven"] is True and above not in (row.get("note") or ""), row
    _set_recovery_point(root, 0)
    code, out, err = _run(capsys, _offsets_argv(root, "-v"))
    assert code == 0 and above in err and "unflushed tail a crash lost" in err and "acknowledged and flushed" not in err


def test_locate_says_an_offset_of_a_partition_whose_logs_are_all_gone_was_lost(written, tmp_path, capsys):
    root = _without_logs(written, tmp_path)
    _set_high_watermark(root, RECORDS)
    _assert_locate_says_lost(capsys, root, 10, "offset 10 was lost with every .log file of the partition")
    code, out, err = _run(capsys, _locate(root, RECORDS, "--on-corruption", "skip", "--json"))
    assert code == 1 and "was lost" not in json.loads(out)["location"]["reason"]


def test_describe_gives_the_lost_tail_of_a_partition_whose_logs_are_all_gone(written, tmp_path, capsys):
    """describe's lostTail, as offsets' --json row gives it, for the empty log's lost offsets."""
    root = _without_logs(written, tmp_path)
    _set_high_watermark(root, RECORDS)
    code, part = _describe(capsys, root)
    assert code == 2 and part["lostTail"] is not None
    assert (part["lostTail"]["firstOffset"], part["lostTail"]["endOffset"]) == (0, RECORDS)
