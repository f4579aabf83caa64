"""What a lenient read says of each corrupt region it skips (``ScanMetrics.decode.problems``): file, byte and what,
as always (a 3-tuple: ``for path, at, what in problems`` unpacks each), plus the bytes it skipped and the offsets it
made unreadable when known, in the metrics' JSON too; and a region two slices both read is counted once."""

from __future__ import annotations

import json

import kafkaseg
from kafkaseg.options import ReadOptions
from kafkaseg.planning import Predicates, plan_scan
from kafkaseg.scan import Scan
from kafkaseg.testing import PartitionWriter, Record, build_batch_v2
from kafkaseg.wire.batch import iter_headers


def _partition(root, batches: int = 30, size: int = 5):
    """One partition of ``batches`` 5-record v2 batches (offsets 0..), a high watermark at its end."""
    writer = PartitionWriter(root / "t-0", index_interval_bytes=300)
    for b in range(batches):
        writer.append(build_batch_v2([Record(o, 1_600_000_000_000 + o, b"k", b"v" * 20)
                                      for o in range(size * b, size * b + size)]))
    writer.close()
    (root / "replication-offset-checkpoint").write_text(f"0\n1\nt 0 {batches * size}\n")
    log = root / "t-0" / "00000000000000000000.log"
    return log, list(iter_headers(log.read_bytes()))


def _flip(log, position: int) -> None:
    data = bytearray(log.read_bytes())
    data[position] ^= 0x55
    log.write_bytes(bytes(data))


def test_a_problem_carries_its_bytes_and_the_offsets_it_made_unreadable(tmp_path, kernel):
    log, headers = _partition(tmp_path)
    bad = headers[7]
    _flip(log, bad.position + 70)  # inside the batch's records: its CRC fails
    scan = kafkaseg.open_scan(str(tmp_path), onCorruption="skip")
    assert scan.to_table().num_rows == 150 - 5
    (problem,) = scan.metrics.decode.problems
    path, at, what = problem  # still the 3-tuple it always was
    assert (path, at) == (str(log), bad.position) and "CRC" in what
    assert problem == (str(log), bad.position, what)
    # the batch's bytes, and the offsets between the readable batches around it
    assert (problem.bytes, problem.first_offset, problem.end_offset) == (bad.size, bad.base_offset,
                                                                         headers[8].base_offset)
    assert scan.metrics.problems == scan.metrics.decode.problems
    as_json = json.loads(json.dumps(scan.metrics.as_dict()))
    assert as_json["problems"] == [[str(log), bad.position, what, bad.size, bad.base_offset, headers[8].base_offset]]
    assert any(f"{bad.size} bytes" in line and f"offsets {bad.base_offset}..{bad.last_offset}" in line
               for line in scan.metrics.corrupt_skips())


def test_a_problem_at_a_slices_first_batch_names_no_offsets_before_it(tmp_path, kernel):
    """A slice that starts at an index entry has seen no batch before it: where the unreadable offsets start is
    not known there (it is not the segment's base)."""
    log, headers = _partition(tmp_path)
    options = ReadOptions.from_options({"onCorruption": "skip", "splitSize": "1k"})
    plan = plan_scan(str(tmp_path), options)
    starts = [s.start_position for s in plan.slices]
    assert len(starts) > 2
    bad = next(h for h in headers if h.position == starts[2])
    _flip(log, bad.position + 70)
    scan = Scan(plan, options)
    scan.to_table()
    (problem,) = scan.metrics.decode.problems
    assert problem[1] == bad.position and problem.bytes == bad.size
    assert problem.first_offset is None
    assert problem.end_offset == headers[headers.index(bad) + 1].base_offset


def test_resuming_at_an_index_entry_says_how_far_the_skip_went(tmp_path, kernel):
    """Bad framing with no batch at its declared end: the read resumes at the next index entry whose batch checks
    out; the problem's bytes and offsets end there (the kernel counted the rest of the slice)."""
    log, headers = _partition(tmp_path)
    bad = headers[4]
    data = bytearray(log.read_bytes())
    data[bad.position + 8:bad.position + 12] = (10_000).to_bytes(4, "big")  # a length past any batch
    log.write_bytes(bytes(data))
    scan = kafkaseg.open_scan(str(tmp_path), onCorruption="skip")
    got = scan.to_table().column("offset").to_pylist()
    d = scan.metrics.decode
    (problem,) = d.problems
    resumed = got[got.index(bad.base_offset - 1) + 1]
    resume_at = next(h.position for h in headers if h.base_offset == resumed)
    assert (problem[1], problem.bytes, d.corrupt_bytes) == (bad.position, resume_at - bad.position,
                                                            resume_at - bad.position)
    assert (problem.first_offset, problem.end_offset) == (bad.base_offset, resumed)


def _two_reads(root, options):
    """The slices of two reads of one partition whose offset ranges meet inside batch 20..24 (two micro-batches of
    a stream, two queries summed): each reads that batch for its own offsets."""
    plans = [plan_scan(str(root), options, Predicates(offset_ranges=(bounds,))) for bounds in ((0, 22), (22, 150))]
    return [piece for plan in plans for piece in plan.slices]


def test_a_batch_two_reads_read_is_counted_once_in_their_total(tmp_path, kernel):
    """Slices that both read a corrupt batch (each for its own offsets) each count it, and a total of them counted,
    and named, it twice (found by the incident audit). One scan no longer plans two such slices (ranges whose bytes
    meet are one slice); reads added up still do."""
    from kafkaseg.scan import ScanMetrics, read_slice

    log, headers = _partition(tmp_path)
    bad = headers[4]  # offsets 20..24
    _flip(log, bad.position + 70)
    options = ReadOptions.from_options({"onCorruption": "skip"})
    pieces = _two_reads(tmp_path, options)
    assert [s.start_position <= bad.position < s.end_position for s in pieces] == [True, True]
    total = ScanMetrics()
    for piece in pieces:
        own = ScanMetrics()
        list(read_slice(piece, options, own))
        assert own.decode.corrupt_batches == 1
        total.add(own)
    d = total.decode
    assert (d.corrupt_batches, d.corrupt_bytes, [p[:2] for p in d.problems]) == (1, bad.size,
                                                                                 [(str(log), bad.position)])
    assert len(total.corrupt_skips()) == 1
    both = ScanMetrics()  # one metrics object both reads count into, as kafkaseg consume keeps one
    for piece in pieces:
        list(read_slice(piece, options, both))
    assert (both.decode.corrupt_batches, both.decode.corrupt_bytes, len(both.decode.problems)) == (1, bad.size, 1)


def test_the_spark_read_metrics_count_a_region_two_slices_read_once(tmp_path, monkeypatch):
    """``ScanReport.read_metrics()`` sums the slices' JSON metrics: a region two name is counted once, and its
    problems come back as problems (the 3-tuple with bytes and offsets)."""
    from kafkaseg.scan import ScanMetrics, read_slice
    from kafkaseg.spark import reports

    monkeypatch.setenv(reports.REPORT_DIR_ENV, str(tmp_path / "reports"))
    log, headers = _partition(tmp_path / "d")
    bad = headers[4]
    _flip(log, bad.position + 70)
    options = ReadOptions.from_options({"onCorruption": "skip"})
    pieces = _two_reads(tmp_path / "d", options)
    for n, piece in enumerate(pieces):
        own = ScanMetrics()
        list(read_slice(piece, options, own))
        reports.write_read_metrics("s1", n, own.as_dict())
    plan = plan_scan(str(tmp_path / "d"), options)
    totals = reports.ScanReport("s1", 0.0, len(pieces), 1, 0, {}, plan.report).read_metrics()
    assert (totals["corrupt_batches"], totals["corrupt_bytes"]) == (1, bad.size)
    (problem,) = totals["problems"]
    path, at, what = problem
    assert (path, at, problem.bytes) == (str(log), bad.position, bad.size) and "CRC" in what


def test_a_streams_total_counts_a_batch_two_micro_batches_read_once(tmp_path):
    """A corrupt batch straddling two micro-batches' ranges is read (and logged) by both; the total a stream keeps
    (``follow(metrics=...)``, as ``kafkaseg consume`` keeps one) counts it once."""
    from kafkaseg.scan import ScanMetrics
    from kafkaseg.streaming import follow

    log, headers = _partition(tmp_path)
    bad = headers[4]  # offsets 20..24: across the first two micro-batches of 22 offsets
    _flip(log, bad.position + 70)
    total = ScanMetrics()
    rows = sum(b.num_rows for b in follow(str(tmp_path), idle_timeout=0, sleep=lambda s: None, metrics=total,
                                          startingOffsets="earliest", maxOffsetsPerTrigger="22",
                                          onCorruption="skip"))
    assert rows == 150 - 5
    d = total.decode
    assert (d.corrupt_batches, d.corrupt_bytes, [p[:2] for p in d.problems]) == (1, bad.size,
                                                                                 [(str(log), bad.position)])
