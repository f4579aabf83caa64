"""A follower truncation rewrites the active segment's tail past the high watermark between planning and reading.

A read past the high watermark (``upperBound=logEndOffset``, ``consume --to-log-end``) plans byte ranges of the
active segment; a follower truncation (``UnifiedLog.truncateTo``, at or above the high watermark) cuts it there and
the new leader's batches are appended at the same offsets, with other sizes. The bytes the plan names past the cut
are then a different generation of batches: those records were never acknowledged, so the read ends its slice where
the plan no longer matches and reports it, rather than raising or returning two generations of the same offsets. A
batch below the high watermark that does not match the plan stays an error.
"""

from __future__ import annotations

import dataclasses
import io
import time
from pathlib import Path

import pytest

from kafkaseg.cli import consume
from kafkaseg.cli.main import build_parser
from kafkaseg.errors import CorruptDataError, CrcMismatchError
from kafkaseg.options import ReadOptions
from kafkaseg.planning import plan_scan
from kafkaseg.scan import ScanMetrics, read_slice
from kafkaseg.testing import Record, build_batch_v2
from kafkaseg.testing.partition import PartitionWriter, write_offset_checkpoint
from kafkaseg.wire.batch import iter_headers

HW = 100


def _batch(first: int, count: int, generation: int, size: int):
    return build_batch_v2([Record(offset=o, timestamp=1000 + o, key=b"k%d" % o,
                                  value=b"g%d-" % generation + b"x" * size) for o in range(first, first + count)])


@pytest.fixture
def live(tmp_path):
    """A log dir whose partition t-0 holds offsets 0..199 in 5-record batches (one active segment), its high
    watermark checkpointed at 100."""
    writer = PartitionWriter(tmp_path / "t-0", index_interval_bytes=512)
    for first in range(0, 200, 5):
        writer.append(_batch(first, 5, 0, 40))
    writer.close(live=True)
    write_offset_checkpoint(tmp_path / "replication-offset-checkpoint", {("t", 0): HW})
    return tmp_path, tmp_path / "t-0" / f"{0:020d}.log"


def _truncate_and_rewrite(log: Path, target: int, count: int, size: int) -> None:
    """UnifiedLog.truncateTo(target) (a batch boundary), then the new leader's batches of ``count`` records."""
    time.sleep(0.05)  # (past the coarse ctime tick of the plan's listing)
    cut = next(h for h in iter_headers(log.read_bytes()) if h.base_offset == target)
    with open(log, "r+b") as f:
        f.truncate(cut.position)
        f.seek(cut.position)
        for first in range(target, target + 70, count):
            f.write(_batch(first, count, 1, size).data)


def _appending_later(log: Path):
    """A "rewrite" for :func:`_read`: the broker appends one more batch (200..204) after planning."""
    def append():
        time.sleep(0.05)
        with open(log, "ab") as f:
            f.write(_batch(200, 5, 0, 40).data)
    return append


def _read(root, split_size: int, rewrite, read_mode: str = "pread", on_corruption: str = "fail"):
    options = ReadOptions.from_options({"upperBound": "logEndOffset", "splitSize": split_size,
                                        "readMode": read_mode, "onCorruption": on_corruption})
    slices = plan_scan(str(root), options).slices
    rewrite()
    metrics = ScanMetrics()
    rows = []
    for piece in slices:
        for batch in read_slice(piece, options, metrics):
            rows += zip(batch.column("offset").to_pylist(), batch.column("value").to_pylist())
    return slices, rows, metrics


def _check_rows(rows):
    offsets = [o for o, _ in rows]
    assert offsets == sorted(set(offsets)), "offsets go back or repeat"
    assert offsets[:HW] == list(range(HW)), "acknowledged records are all read"
    assert all(v.startswith(b"g0-") for o, v in rows if o < HW)


@pytest.mark.parametrize("on_corruption", ["fail", "skip"])
@pytest.mark.parametrize("read_mode", ["pread", "auto"])
@pytest.mark.parametrize("split_size", [1 << 30, 2000], ids=["one-slice", "split"])
@pytest.mark.parametrize("count,size", [(7, 90), (3, 20)], ids=["bigger-batches", "smaller-batches"])
def test_a_tail_rewritten_past_the_high_watermark_ends_the_read_there(live, read_mode, split_size, count, size,
                                                                     on_corruption):
    """Also under onCorruption=skip: the same evidence makes the rewritten bytes a rewritten tail, not corrupt
    batches skipped (they were counted as corrupt: found in review)."""
    root, log = live
    slices, rows, metrics = _read(root, split_size, lambda: _truncate_and_rewrite(log, 150, count, size), read_mode,
                                  on_corruption)
    _check_rows(rows)
    assert metrics.decode.corrupt_batches == 0
    if count > 5 or len(slices) > 1:  # (smaller batches in one slice: the new generation is read, consistent)
        assert metrics.rewritten_tails and metrics.rewritten_tails[0][0] == str(log)
        assert "high watermark" in metrics.rewritten_tails[0][2]


def _rewrite_aligned_at(log: Path, target: int, position: int) -> None:
    """Truncate at offset ``target`` and write a first new batch of two records that ends exactly at ``position``
    (a planned slice start), then 5-record batches: at ``position`` the new generation holds lower offsets than
    the old one did."""
    time.sleep(0.05)
    cut = next(h for h in iter_headers(log.read_bytes()) if h.base_offset == target).position
    def first_batch(big: int, small: int) -> bytes:
        return build_batch_v2([Record(offset=target + i, timestamp=1000 + target + i, key=b"k%d" % (target + i),
                                      value=b"g1-" + b"x" * n) for i, n in enumerate((big, small))]).data
    big = 0
    while len(first_batch(big, 0)) < position - cut - 2:
        big += 1
    first = next(b for b in (first_batch(big, small) for small in range(4)) if len(b) == position - cut)
    with open(log, "r+b") as f:
        f.truncate(cut)
        f.seek(cut)
        f.write(first)
        for o in range(target + 2, target + 60, 5):
            f.write(_batch(o, 5, 1, 40).data)


@pytest.mark.parametrize("read_mode", ["pread", "auto"])
def test_a_rewrite_that_goes_back_across_slices_returns_each_offset_once(live, read_mode):
    """The slices before the last were read before the truncation (the old generation, past the cut), the last
    after it: the new generation's batch at its planned start holds offsets already returned."""
    root, log = live
    options = ReadOptions.from_options({"upperBound": "logEndOffset", "splitSize": 2000, "readMode": read_mode})
    slices = plan_scan(str(root), options).slices
    assert len(slices) > 2 and slices[-1].start_entry is not None and slices[-1].start_entry > 155
    metrics = ScanMetrics()
    rows = []
    for i, piece in enumerate(slices):
        if i == len(slices) - 1:
            _rewrite_aligned_at(log, 150, piece.start_position)
        for batch in read_slice(piece, options, metrics):
            rows += zip(batch.column("offset").to_pylist(), batch.column("value").to_pylist())
    _check_rows(rows)
    assert metrics.rewritten_tails and metrics.rewritten_tails[0][1] == slices[-1].start_position


def test_a_mismatch_below_the_high_watermark_stays_an_error(live):
    """The same rewrite at offset 50, below the high watermark (no follower truncates there): corruption."""
    root, log = live
    with pytest.raises(CorruptDataError):
        _read(root, 2000, lambda: _truncate_and_rewrite(log, 50, 7, 90))


def test_an_unchanged_file_past_the_high_watermark_stays_an_error(live):
    """A length field corrupt past the high watermark in a file no broker touched since planning: corruption."""
    root, log = live
    data = bytearray(log.read_bytes())
    at = next(h for h in iter_headers(bytes(data)) if h.base_offset == 150).position
    data[at + 8:at + 12] = (10_000).to_bytes(4, "big")
    log.write_bytes(bytes(data))
    time.sleep(0.05)
    with pytest.raises(CorruptDataError):
        _read(root, 1 << 30, lambda: None)


@pytest.mark.parametrize("on_corruption", ["fail", "skip"])
@pytest.mark.parametrize("read_mode", ["pread", "auto"])
def test_a_crc_mismatch_past_the_high_watermark_of_a_growing_file_stays_an_error(live, read_mode, on_corruption):
    """A batch past the high watermark whose bytes fail their CRC, with whole batches after it, while the broker
    appends after planning (the file changed, as a live segment always does): a fresh read shows the same failing
    bytes, which no truncation and rewrite leaves, so it is corruption (the read returned 150 rows and called the
    rest a rewritten tail, found in review). Under onCorruption=skip the batch is skipped as corrupt, the read
    going on after it."""
    root, log = live
    data = bytearray(log.read_bytes())
    at = next(h for h in iter_headers(bytes(data)) if h.base_offset == 150).position
    data[at + 70] ^= 0xFF  # a record byte: the CRC fails, the framing holds
    log.write_bytes(bytes(data))
    time.sleep(0.05)
    append = _appending_later(log)

    if on_corruption == "fail":
        with pytest.raises(CrcMismatchError, match="offset 150"):
            _read(root, 1 << 30, append, read_mode)
        return
    _, rows, metrics = _read(root, 1 << 30, append, read_mode, on_corruption)
    assert metrics.decode.corrupt_batches == 1 and not metrics.rewritten_tails
    assert [o for o, _ in rows] == [*range(150), *range(155, 200)]


def test_consume_to_log_end_never_prints_an_offset_twice_when_the_log_goes_back(live):
    """consume --to-log-end --follow reads to the log end (200); the broker then truncates at 150 (past the high
    watermark) and the new leader has written only up to 180, below where the run stands, and later more: the
    run goes on, but prints no offset at or below one it printed, each once, in order."""
    root, log = live
    writes = iter([(150, 180), (180, 235)])

    def poll(_seconds: float) -> None:
        step = next(writes, None)
        if step is None:
            return
        first, end = step
        time.sleep(0.05)
        with open(log, "r+b") as f:
            if first == 150:
                f.truncate(next(h for h in iter_headers(log.read_bytes()) if h.base_offset == first).position)
            f.seek(0, 2)
            for o in range(first, end, 5):
                f.write(_batch(o, min(5, end - o), 1, 40).data)

    args = build_parser().parse_args(["consume", "--data-dir", str(root), "--topic", "t", "--from-beginning",
                                      "--to-log-end", "--follow", "--timeout-ms", "300", "--poll-ms", "1",
                                      "--property", "print.offset=true", "--property", "print.value=false"])
    out, err = io.BytesIO(), io.StringIO()
    assert consume.run(args, out, err, sleep=poll) == 0
    offsets = [int(line.split(b":")[1]) for line in out.getvalue().splitlines()]
    assert next(writes, None) is None  # both writes were polled
    assert offsets == list(range(235)), err.getvalue()
    assert "not printed again" in err.getvalue()


def _rewrite_before_the_first_read(monkeypatch, log: Path) -> None:
    """The truncation at 150 and the new leader's 7-record batches (150..219) happen once, after planning, just
    before the first slice is read (``kafkaseg.scan.read_slice``, which consume and follow call)."""
    import kafkaseg.scan

    real = kafkaseg.scan.read_slice
    rewrites = iter([lambda: _truncate_and_rewrite(log, 150, 7, 90)])

    def read_slice(piece, *args, **kwargs):
        rewrite = next(rewrites, None)
        if rewrite is not None:
            rewrite()
        return real(piece, *args, **kwargs)

    monkeypatch.setattr(kafkaseg.scan, "read_slice", read_slice)


@pytest.mark.parametrize("split_size", [1 << 30, 2000], ids=["one-slice", "split"])
def test_consume_to_log_end_goes_on_from_where_a_rewritten_slice_stopped(live, monkeypatch, split_size):
    """The truncation at 150 and the new leader's bigger batches (150..219) land after the first poll planned the
    log to 200 and before its read: the read ends where the new batches no longer match the plan (below 200), and
    the next poll goes on from there, not from the plan's end, so every offset is printed once, none skipped (the
    offsets between the rewrite and 200 were never printed: found in review)."""
    root, log = live
    _rewrite_before_the_first_read(monkeypatch, log)
    stream_options = consume._stream_options
    monkeypatch.setattr(consume, "_stream_options", lambda *a: {**stream_options(*a), "splitSize": split_size})
    args = build_parser().parse_args(["consume", "--data-dir", str(root), "--topic", "t", "--from-beginning",
                                      "--to-log-end", "--follow", "--timeout-ms", "300", "--poll-ms", "1",
                                      "--property", "print.offset=true", "--property", "print.value=true"])
    out, err = io.BytesIO(), io.StringIO()
    assert consume.run(args, out, err, sleep=lambda _s: None) == 0
    rows = [line.split(b"\t") for line in out.getvalue().splitlines()]
    offsets = [int(offset.split(b":")[1]) for offset, _ in rows]
    assert offsets == list(range(220)), err.getvalue()
    assert all(value.startswith(b"g1-") for (o, value) in zip(offsets, (v for _, v in rows)) if o >= 150)
    assert "high watermark" in err.getvalue()


def test_follow_goes_on_from_where_a_rewritten_slice_stopped(live, monkeypatch):
    """kafkaseg.follow past the high watermark, the same interleaving as consume's above: each offset once."""
    from kafkaseg.streaming import follow

    root, log = live
    _rewrite_before_the_first_read(monkeypatch, log)
    metrics = ScanMetrics()
    rows = []
    for batch in follow(str(root), startingOffsets="earliest", upperBound="logEndOffset", idle_timeout=0.3,
                        poll_interval=0.001, sleep=lambda _s: None, metrics=metrics):
        rows += zip(batch.column("offset").to_pylist(), batch.column("value").to_pylist())
    assert [o for o, _ in rows] == list(range(220))
    assert all(v.startswith(b"g1-") for o, v in rows if o >= 150)
    assert metrics.rewritten_tails


def _rewrite_ending_at_entry(log: Path, target: int, position: int, entry: int) -> None:
    """Truncate at offset ``target``, write a first new batch of two records ending exactly at ``position`` (a
    planned slice start), then one batch of the offsets from there to ``entry`` (the index entry the slice starts
    at), so that the batch at ``position`` ends at the entry's offset as planned but starts lower."""
    _rewrite_aligned_at(log, target, position)
    with open(log, "r+b") as f:
        f.truncate(position)
        f.seek(position)
        f.write(_batch(target + 2, entry - target - 1, 1, 10).data)
        f.write(_batch(entry + 1, 5, 1, 40).data)


@pytest.mark.parametrize("read_mode", ["pread", "auto"])
def test_a_rewritten_batch_ending_at_a_slice_start_entry_returns_no_offset_twice(live, read_mode):
    """As above, but the new generation's batch at the last slice's start ends at the offset the index entry
    there names (as the planned one did) while starting lower: taken as the planned batch, it returned offsets
    the earlier slices had returned from the old generation (found in review)."""
    root, log = live
    options = ReadOptions.from_options({"upperBound": "logEndOffset", "splitSize": 2000, "readMode": read_mode})
    slices = plan_scan(str(root), options).slices
    last = slices[-1]
    assert len(slices) > 2 and last.start_entry is not None and last.start_entry > 160
    metrics = ScanMetrics()
    rows = []
    for i, piece in enumerate(slices):
        if i == len(slices) - 1:
            _rewrite_ending_at_entry(log, 150, piece.start_position, piece.start_entry)
            header = next(h for h in iter_headers(log.read_bytes()) if h.position == piece.start_position)
            assert header.last_offset == piece.start_entry and header.base_offset < last.slice_offsets[0]
        for batch in read_slice(piece, options, metrics):
            rows += zip(batch.column("offset").to_pylist(), batch.column("value").to_pylist())
    _check_rows(rows)
    assert metrics.rewritten_tails and metrics.rewritten_tails[0][1] == last.start_position


def _exact_batches(first: int, nbytes: int) -> tuple[bytes, int]:
    """New-generation batches from offset ``first`` of small records filling exactly ``nbytes`` (more offsets per
    byte than the old ones), and the offset after them."""
    out = b""
    while nbytes - len(out) > 600:
        out += _batch(first, 5, 1, 0).data
        first += 5
    rest = nbytes - len(out)
    def two(big: int, small: int) -> bytes:
        return build_batch_v2([Record(offset=first + i, timestamp=1000 + first + i, key=b"k%d" % (first + i),
                                      value=b"g1-" + b"x" * n) for i, n in enumerate((big, small))]).data
    big = 0
    while len(two(big, 0)) < rest - 2:
        big += 1
    return out + next(b for b in (two(big, small) for small in range(4)) if len(b) == rest), first + 2


@pytest.mark.parametrize("read_mode", ["pread", "auto"])
def test_a_slice_read_after_a_rewrite_returns_no_offset_of_the_next_slice(live, read_mode):
    """Slices read out of order (as Spark's tasks may be): the last slice before the truncation, the one before
    it after. The new generation's batches from that slice's start (the planned batch there, then smaller ones)
    end exactly at the slice's planned end, holding offsets the last slice had returned from the old batches: the
    slice stops at the batch reaching them (a rewritten tail), never returning one of them twice."""
    root, log = live
    options = ReadOptions.from_options({"upperBound": "logEndOffset", "splitSize": 2000, "readMode": read_mode})
    slices = plan_scan(str(root), options).slices
    a, b = slices[-2], slices[-1]
    assert len(slices) > 2 and a.slice_offsets[0] >= HW and a.start_entry == a.slice_offsets[0] + 4
    metrics = ScanMetrics()
    rows = []
    for piece in [*slices[:-2], b, a]:
        if piece is a:
            time.sleep(0.05)
            with open(log, "r+b") as f:
                f.truncate(a.start_position)
                f.seek(a.start_position)
                first = _batch(a.slice_offsets[0], 5, 1, 40).data
                rest, after = _exact_batches(a.slice_offsets[0] + 5, a.end_position - a.start_position - len(first))
                assert after > b.slice_offsets[0]
                f.write(first + rest + _batch(after, 5, 1, 40).data)
        for batch in read_slice(piece, options, metrics):
            rows += zip(batch.column("offset").to_pylist(), batch.column("value").to_pylist())
    offsets = [o for o, _ in rows]
    assert len(offsets) == len(set(offsets)), "an offset returned twice"
    assert set(range(b.slice_offsets[0], 200)) <= set(offsets)
    assert metrics.rewritten_tails and metrics.rewritten_tails[-1][0] == str(log)


def test_under_skip_a_mismatch_below_the_high_watermark_stays_corruption(live):
    """onCorruption=skip: the rewrite at offset 50, below the high watermark, is skipped corruption there, no tail
    (a later slice whose planned start is past the high watermark still judges its own start, as in a strict
    read)."""
    root, log = live
    cut = next(h for h in iter_headers(log.read_bytes()) if h.base_offset == 50).position
    _, rows, metrics = _read(root, 2000, lambda: _truncate_and_rewrite(log, 50, 7, 90), on_corruption="skip")
    assert metrics.decode.corrupt_batches
    assert not any(at <= cut for _, at, _ in metrics.rewritten_tails)
    assert [o for o, _ in rows][:50] == list(range(50))


def test_follow_logs_a_slice_ended_at_a_rewrite_past_the_high_watermark(live, caplog):
    """follow() (kafkaseg.follow, the Python stream without Spark) says a slice the broker's truncation and rewrite
    overtook, as consume and the Spark workers do: an INFO line of the ``kafkaseg.streaming`` logger naming the
    segment and the byte where the read stopped. Its first slice is read before the rewrite, the last after it."""
    import logging

    from kafkaseg.streaming import follow

    root, log = live
    rewritten = []
    rows = []
    caplog.set_level(logging.INFO, logger="kafkaseg.streaming")
    for batch in follow(str(root), startingOffsets="earliest", upperBound="logEndOffset", splitSize=2000,
                        idle_timeout=0, sleep=lambda _s: None):
        rows += zip(batch.column("offset").to_pylist(), batch.column("value").to_pylist())
        if not rewritten:
            rewritten.append(True)
            _truncate_and_rewrite(log, 150, 7, 90)
    _check_rows(rows)
    said = [r for r in caplog.records if r.name == "kafkaseg.streaming" and "stopped here" in r.getMessage()]
    assert said, [r.getMessage() for r in caplog.records]
    assert said[0].levelno == logging.INFO
    assert said[0].getMessage().startswith(f"{log} @ byte ")
    assert "the read past the high watermark 100 stopped here" in said[0].getMessage()


def test_a_mapped_read_keeps_nothing_of_a_mismatch_s_second_decode_the_file_changed_under(live, monkeypatch):
    """A mapped read whose decode meets a mismatch past the high watermark decodes the bytes before it a second
    time (``_SliceDecoder.before_mismatch``); a truncation and rewrite during that second decode leaves it with
    the old generation's bytes up to where the write had got and the new one's after (simulated here: the second
    decode is handed the mapping's bytes as they were below offset 170 and as they are from there, the new
    generation's batch there starting at offset 172). Nothing decoded from the mapping since the file changed is
    kept: the read goes on from its last check by positioned reads of the file as it is now, so it returns each
    offset of one generation, not the old records to 169 and the new ones from 172 (offsets 170 and 171 lost
    between two generations)."""
    from kafkaseg import scan

    root, log = live
    data = bytearray(log.read_bytes())
    heads = {h.base_offset: h.position for h in iter_headers(bytes(data))}
    size = heads[155] - heads[150]  # every old batch's size
    data[heads[175] + 70] ^= 0xFF  # the old generation's batch 175 fails its CRC: the first decode stops there
    log.write_bytes(bytes(data))
    time.sleep(0.05)
    old = bytes(data)

    def first_new_batch() -> bytes:
        """Offsets 150..171 of the new generation in one batch that ends exactly where the old batch 170 began."""
        for big in range(4 * size):
            for small in range(8):
                batch = build_batch_v2([Record(offset=o, timestamp=1000 + o, key=b"k%d" % o,
                                               value=b"g1-" + b"x" * (big if o == 150 else small if o == 151 else 0))
                                        for o in range(150, 172)]).data
                if len(batch) == heads[170] - heads[150]:
                    return batch
        raise AssertionError("no size fits")

    original = scan._SliceDecoder.before_mismatch
    torn = []

    def rewritten_while_decoding(self, err, view, pos, end, reader):
        if torn:
            return original(self, err, view, pos, end, reader)
        time.sleep(0.05)
        with open(log, "r+b") as f:  # the new leader's log from 150: a truncation, then its batches
            f.truncate(heads[150])
            f.seek(heads[150])
            f.write(first_new_batch())
            for first in range(172, 222, 5):
                f.write(_batch(first, 5, 1, 40).data)
        cut = heads[170] - pos
        torn.append(old[pos:pos + cut] + bytes(view[cut:]))
        assert len(torn[0]) == len(view)
        return original(self, err, memoryview(torn[0]), pos, end, reader)

    monkeypatch.setattr(scan._SliceDecoder, "before_mismatch", rewritten_while_decoding)
    slices, rows, metrics = _read(root, 1 << 30, lambda: None, "mmap")
    assert torn, "the mapped read met the mismatch"
    _check_rows(rows)
    offsets = [o for o, _ in rows]
    assert offsets == list(range(len(offsets))), "offsets lost between two generations"
    assert len({v[:3] for o, v in rows if o >= 150}) == 1, "two generations of the offsets past the cut"


@pytest.mark.parametrize("read_mode", ["pread", "auto"])
def test_a_torn_append_before_a_preallocated_tail_is_the_last_batch_not_corruption(live, read_mode):
    """A segment preallocated (``file.preallocate``) is zero-filled past its last batch, so a batch being written
    there is not the file's last by size. Past the high watermark, in a file changed since planning, a new
    generation's batch at the planned position caught half written (its CRC failing on the fresh read too) with
    zeros after it is the append in progress, so the slice ends there as rewritten, not a CrcMismatchError (seen in
    a live-broker run: a preallocated 16 KiB segment, "CRC-32C mismatch" at byte 16231)."""
    root, log = live
    preallocated = 64 * 1024
    with open(log, "r+b") as f:
        f.truncate(preallocated)

    def rewrite():
        time.sleep(0.05)  # (past the coarse ctime tick of the plan's listing)
        data = log.read_bytes()
        cut = next(h for h in iter_headers(data) if h.base_offset == 150).position
        new = _batch(150, 7, 1, 90).data
        with open(log, "r+b") as f:  # the new leader's append, half written, the preallocated zeros after it
            f.seek(cut)
            f.write(new[:len(new) // 2] + bytes(preallocated - cut - len(new) // 2))

    _, rows, metrics = _read(root, 1 << 30, rewrite, read_mode)
    _check_rows(rows)
    assert [o for o, _ in rows] == list(range(150))
    assert metrics.rewritten_tails and metrics.rewritten_tails[0][0] == str(log)


@pytest.mark.parametrize("read_mode", ["pread", "auto"])
def test_a_batch_at_a_slice_start_that_starts_lower_below_the_high_watermark_is_no_silent_repeat(live, read_mode):
    """As above, but with the high watermark inside the last slice, past the change (no truncation cuts below it):
    nothing explains the batch at the slice's start ending at the planned entry's offset while starting lower than
    planned, so the slice does not read it as planned (which returned offsets the earlier slices had returned,
    silently): a strict read raises at the slice's start (found in review)."""
    root, log = live
    options = ReadOptions.from_options({"upperBound": "logEndOffset", "splitSize": 2000, "readMode": read_mode})
    entry = plan_scan(str(root), options).slices[-1].start_entry
    write_offset_checkpoint(root / "replication-offset-checkpoint", {("t", 0): entry + 3})
    slices = plan_scan(str(root), options).slices
    last = slices[-1]
    assert len(slices) > 2 and last.start_entry == entry > 160 and last.high_watermark == entry + 3
    metrics = ScanMetrics()
    offsets = []
    with pytest.raises(CorruptDataError) as err:
        for i, piece in enumerate(slices):
            if i == len(slices) - 1:
                _rewrite_ending_at_entry(log, 150, piece.start_position, piece.start_entry)
            for batch in read_slice(piece, options, metrics):
                offsets += batch.column("offset").to_pylist()
    assert err.value.path == str(log) and err.value.position == last.start_position, err.value
    assert offsets == sorted(set(offsets)) and not metrics.rewritten_tails


def test_a_batch_at_a_slice_start_that_starts_lower_below_the_high_watermark_is_skipped_counted(live):
    """The same under onCorruption=skip: that batch is skipped and counted as corrupt (its planned offsets the
    problem's), and no offset is returned twice."""
    root, log = live
    options = ReadOptions.from_options({"upperBound": "logEndOffset", "splitSize": 2000, "onCorruption": "skip"})
    entry = plan_scan(str(root), options).slices[-1].start_entry
    write_offset_checkpoint(root / "replication-offset-checkpoint", {("t", 0): entry + 3})
    slices = plan_scan(str(root), options).slices
    metrics, offsets = ScanMetrics(), []
    for i, piece in enumerate(slices):
        if i == len(slices) - 1:
            _rewrite_ending_at_entry(log, 150, piece.start_position, piece.start_entry)
        for batch in read_slice(piece, options, metrics):
            offsets += batch.column("offset").to_pylist()
    assert offsets == sorted(set(offsets)) and not metrics.rewritten_tails
    problems = metrics.decode.problems
    assert metrics.decode.corrupt_batches == 1 and problems[0].position == slices[-1].start_position, problems
    assert (problems[0].first_offset, problems[0].end_offset) == (slices[-1].slice_offsets[0], entry + 1)


def test_a_crc_mismatch_before_a_hole_with_batches_after_it_stays_an_error(live):
    """Zeros right after a CRC-failing batch past the high watermark are a preallocated tail only when they run to
    the file's end (or far): a zeroed stretch with whole batches after it leaves the mismatch corruption (a check
    of the next 12 bytes alone took it for the append being written; found in review)."""
    root, log = live
    data = bytearray(log.read_bytes())
    headers = list(iter_headers(bytes(data)))
    bad = next(h for h in headers if h.base_offset == 150)
    data[bad.position + 70] ^= 0xFF
    hole = next(h for h in headers if h.base_offset == 155)
    data[hole.position:hole.position + 100] = bytes(100)  # the next batch's first 100 bytes zeroed
    log.write_bytes(bytes(data))
    time.sleep(0.05)
    append = _appending_later(log)

    with pytest.raises(CrcMismatchError, match="offset 150"):
        _read(root, 1 << 30, append)


def _epoch_batch(first: int, count: int, generation: int, size: int, epoch: int):
    return build_batch_v2([Record(offset=o, timestamp=1000 + o, key=b"k%d" % o,
                                  value=b"g%d-" % generation + b"x" * size) for o in range(first, first + count)],
                          partition_leader_epoch=epoch)


def epoch_partition(root: Path) -> Path:
    """As ``live``, with what a broker's follower truncation leaves besides: its batches stamped with leader epoch
    3 in ``leader-epoch-checkpoint``, and one index entry (so no entry is left past a cut). Returns the log."""
    writer = PartitionWriter(root / "t-0", index_interval_bytes=1 << 20)
    for first in range(0, 200, 5):
        writer.append(_epoch_batch(first, 5, 0, 40, 3))
    writer.close(live=True)
    write_offset_checkpoint(root / "replication-offset-checkpoint", {("t", 0): HW})
    return root / "t-0" / f"{0:020d}.log"


@pytest.fixture
def epochs(tmp_path):
    """:func:`epoch_partition` in ``tmp_path``: (the log dir, the log)."""
    return tmp_path, epoch_partition(tmp_path)


def _new_leader_rewrites(log: Path, cut: int, end: int, epoch: int = 4) -> None:
    """UnifiedLog.truncateTo(cut) on the replica read and the new leader's 7-record batches from there to ``end``,
    under leader epoch ``epoch``, which ``leader-epoch-checkpoint`` starts at the cut (as ``assign`` writes it before
    the batches land)."""
    from kafkaseg.testing.partition import write_leader_epoch_checkpoint

    time.sleep(0.05)  # (past the coarse ctime tick of the plan's listing)
    data = log.read_bytes()  # (the log may end at the cut already: truncated earlier)
    position = next((h.position for h in iter_headers(data) if h.base_offset == cut), len(data))
    write_leader_epoch_checkpoint(log.parent / "leader-epoch-checkpoint", [(3, 0), (epoch, cut)])
    with open(log, "r+b") as f:
        f.truncate(position)
        f.seek(position)
        for first in range(cut, end, 7):
            f.write(_epoch_batch(first, min(7, end - first), 1, 90, epoch).data)


def _spark_batch(planner, start, end, rewrite=None):
    """One micro-batch as Spark runs it: ``partitions(start, end)``, then the tasks read (``rewrite`` runs between),
    and the end is committed whatever the tasks met. Returns the plan and its rows."""
    plan = planner.plan(start, end)
    if rewrite is not None:
        rewrite()
    rows, metrics = [], ScanMetrics()
    for piece in plan.scan.slices if plan.scan is not None else ():
        for batch in read_slice(piece, planner.options, metrics):
            rows += zip(batch.column("offset").to_pylist(), batch.column("value").to_pylist())
    return plan, rows, metrics


def _stream_options(root, **more):
    return ReadOptions.from_options({"path": str(root), "startingOffsets": "earliest", "upperBound": "logEndOffset",
                                     **more}, stream=True)


@pytest.mark.parametrize("fail_on_data_loss", ["true", "false"])
def test_a_spark_stream_reads_the_new_generation_a_rewrite_past_the_high_watermark_left_unread(epochs,
                                                                                                fail_on_data_loss):
    """A stream past the high watermark (upperBound=logEndOffset) fixes a micro-batch's end at the log end (200);
    a follower truncation at 150 and the new leader's records (150..219, a new leader epoch) land after planning,
    before the tasks read: their slice ends at the rewrite (below 200), and Spark commits 200 all the same. The
    next micro-batch reads the partition again from the cut, not from 200: the new generation's offsets up to 200
    are read (they were lost), no offset twice within a micro-batch, and it is no data loss under failOnDataLoss
    (the records replaced were past the high watermark recorded with the position: never acknowledged)."""
    from kafkaseg.streaming import MicroBatchPlanner

    root, log = epochs
    planner = MicroBatchPlanner(_stream_options(root, failOnDataLoss=fail_on_data_loss))
    start = planner.initial_offsets()
    end = planner.latest_offsets(start, all_available=True)
    _, first, metrics = _spark_batch(planner, start, end, lambda: _new_leader_rewrites(log, 150, 220))
    assert metrics.rewritten_tails and [o for o, _ in first][-1] < 199  # the read stopped short of 200
    after = planner.latest_offsets(end, all_available=True)
    plan, second, _ = _spark_batch(planner, end, after)
    for rows in (first, second):
        offsets = [o for o, _ in rows]
        assert offsets == sorted(set(offsets)), "an offset twice within a micro-batch"
    assert not plan.data_loss
    assert set(range(220)) <= {o for o, _ in first + second}, "offsets the stream never read"
    assert all(v.startswith(b"g1-") for o, v in second)
    assert any("150" in line and "high watermark" in line for line in plan.read_again), plan.read_again
    # replayed after a restart, the micro-batch is planned alike from the offset log
    replayed = MicroBatchPlanner(_stream_options(root, failOnDataLoss=fail_on_data_loss)).plan(end, after)
    assert replayed.ranges == plan.ranges == {("t", 0): (150, 220)}
    # the read again applies to that micro-batch only: nothing new after it is no micro-batch
    assert planner.latest_offsets(after, all_available=True) == after


def test_a_divergence_below_the_high_watermark_recorded_with_the_position_stays_data_loss(epochs):
    """The same stream when the log diverges below the high watermark (100) recorded with its position: records
    acknowledged were replaced (an unclean election), which failOnDataLoss raises as before."""
    from kafkaseg.errors import DataLossError
    from kafkaseg.streaming import MicroBatchPlanner

    root, log = epochs
    planner = MicroBatchPlanner(_stream_options(root))
    start = planner.initial_offsets()
    end = planner.latest_offsets(start, all_available=True)
    _spark_batch(planner, start, end)
    _new_leader_rewrites(log, 90, 220)
    with pytest.raises(DataLossError, match="were replaced"):
        planner.plan(end, planner.latest_offsets(end, all_available=True))


def test_offsets_without_a_recorded_high_watermark_keep_the_divergence_rule(epochs):
    """An offset log written before the high watermark was recorded with a position (no ``@highWatermarks``): a
    divergence below the position is data loss, as it was (nothing tells it was past the high watermark)."""
    from kafkaseg.errors import DataLossError
    from kafkaseg.streaming import MicroBatchPlanner, from_offsets, leader_epochs_of, to_offsets

    root, log = epochs
    planner = MicroBatchPlanner(_stream_options(root))
    start = planner.initial_offsets()
    end = planner.latest_offsets(start, all_available=True)
    old = to_offsets(from_offsets(end), leader_epochs=leader_epochs_of(end))
    _spark_batch(planner, start, old, lambda: _new_leader_rewrites(log, 150, 220))
    with pytest.raises(DataLossError, match="were replaced"):
        planner.plan(old, planner.latest_offsets(old, all_available=True))


def test_a_stream_past_the_high_watermark_reads_on_from_a_truncation_seen_before_the_new_leader_writes(epochs):
    """The truncation at 150 lands after the micro-batch read to 200 and before the next trigger, the new leader's
    records later: the log went back past the high watermark recorded with the position, which is no data loss (the
    records were never acknowledged); the stream reads on from the log end, then the new leader's records."""
    from kafkaseg.streaming import MicroBatchPlanner

    root, log = epochs
    planner = MicroBatchPlanner(_stream_options(root))
    start = planner.initial_offsets()
    end = planner.latest_offsets(start, all_available=True)
    _, first, _ = _spark_batch(planner, start, end)
    assert [o for o, _ in first] == list(range(200))
    time.sleep(0.05)
    with open(log, "r+b") as f:
        f.truncate(next(h for h in iter_headers(log.read_bytes()) if h.base_offset == 150).position)
    back = planner.latest_offsets(end, all_available=True)
    plan, rows, _ = _spark_batch(planner, end, back)
    assert not rows and not plan.data_loss
    assert any("150" in line and "high watermark 100" in line for line in plan.read_again), plan.read_again
    _new_leader_rewrites(log, 150, 220)
    later = planner.latest_offsets(back, all_available=True)
    plan, rows, _ = _spark_batch(planner, back, later)
    assert [o for o, _ in rows] == list(range(150, 220)) and not plan.data_loss
    assert all(v.startswith(b"g1-") for _, v in rows)


def test_a_high_watermark_that_reached_the_position_ends_the_excuse(epochs):
    """Once the high watermark reached the stream's position (checkpointed at 200), the records below it were
    acknowledged: a later divergence below it is data loss again, not a rewrite past the high watermark."""
    from kafkaseg.errors import DataLossError
    from kafkaseg.streaming import HIGH_WATERMARKS, MicroBatchPlanner

    root, log = epochs
    planner = MicroBatchPlanner(_stream_options(root))
    start = planner.initial_offsets()
    end = planner.latest_offsets(start, all_available=True)
    assert end[HIGH_WATERMARKS] == {"t": {"0": HW}}
    _spark_batch(planner, start, end)
    write_offset_checkpoint(log.parent.parent / "replication-offset-checkpoint", {("t", 0): 200})
    caught_up = planner.latest_offsets(end, all_available=True)
    assert HIGH_WATERMARKS not in caught_up
    _spark_batch(planner, end, caught_up)
    _new_leader_rewrites(log, 150, 220)
    with pytest.raises(DataLossError, match="were replaced"):
        planner.plan(caught_up, planner.latest_offsets(caught_up, all_available=True))


@pytest.mark.parametrize("restart", [False, True], ids=["same-process", "restarted"])
def test_a_rewrite_past_the_high_watermark_between_fixing_and_planning_a_micro_batch_is_no_data_loss(epochs,
                                                                                                      restart):
    """The truncation at 150 and the new leader's records land after latestOffset fixed the end at 200 and before
    partitions() plans it: the micro-batch reads up to the cut, the next one reads on from there (also when the
    query restarted in between, the planner's memory gone), and neither is data loss."""
    from kafkaseg.streaming import MicroBatchPlanner

    root, log = epochs
    planner = MicroBatchPlanner(_stream_options(root))
    start = planner.initial_offsets()
    end = planner.latest_offsets(start, all_available=True)
    _new_leader_rewrites(log, 150, 220)
    plan, first, _ = _spark_batch(planner, start, end)
    assert [o for o, _ in first] == list(range(150)) and not plan.data_loss
    if restart:
        planner = MicroBatchPlanner(_stream_options(root))
    after = planner.latest_offsets(end, all_available=True)
    plan, second, _ = _spark_batch(planner, end, after)
    assert [o for o, _ in second] == list(range(150, 220)) and not plan.data_loss
    assert all(v.startswith(b"g1-") for _, v in second)


def test_follow_reads_again_what_a_follower_truncation_rewrote_after_its_read(epochs, caplog):
    """kafkaseg.follow past the high watermark reads t-0 to 200; then the truncation at 150 and the new leader's
    records (150..219): the next poll reads again from 150 with a warning (it raised DataLossError, 'the stream's
    records [150, 200) were replaced', though they were never acknowledged)."""
    import logging

    from kafkaseg.streaming import follow

    root, log = epochs
    steps = iter([lambda: _new_leader_rewrites(log, 150, 220)])
    rows = []
    with caplog.at_level(logging.WARNING, logger="kafkaseg.streaming"):
        for batch in follow(str(root), startingOffsets="earliest", upperBound="logEndOffset", idle_timeout=0.3,
                            poll_interval=0.001, sleep=lambda _s: next(steps, lambda: None)()):
            rows += zip(batch.column("offset").to_pylist(), batch.column("value").to_pylist())
    assert [o for o, _ in rows] == [*range(200), *range(150, 220)]
    assert all(v.startswith(b"g1-") for o, v in rows[200:])
    assert "reads the partition again from offset 150" in caplog.text


def test_consume_to_log_end_says_a_rewrite_after_its_read_is_read_again_not_lost(epochs):
    """consume --to-log-end --follow prints t-0 to 200; the truncation at 150 and the new leader's records follow:
    the next poll reads again from 150, says so (no data loss: it said the records [150, 200) it printed were
    replaced), and prints each offset once (the new leader's from 200 on)."""
    root, log = epochs
    steps = iter([lambda: _new_leader_rewrites(log, 150, 220)])
    args = build_parser().parse_args(["consume", "--data-dir", str(root), "--topic", "t", "--from-beginning",
                                      "--to-log-end", "--follow", "--timeout-ms", "300", "--poll-ms", "1",
                                      "--property", "print.offset=true", "--property", "print.value=false"])
    out, err = io.BytesIO(), io.StringIO()
    assert consume.run(args, out, err, sleep=lambda _s: next(steps, lambda: None)()) == 0
    assert [int(line.split(b":")[1]) for line in out.getvalue().splitlines()] == list(range(220))
    assert "reads the partition again from offset 150" in err.getvalue() and "replaced" not in err.getvalue()


def test_a_spark_stream_reads_again_a_rewrite_no_leader_epoch_shows_from_the_recorded_high_watermark(live):
    """As the Spark stream above, with the new leader's batches under the same leader epoch (what a log without
    epochs looks like: v0/v1 batches, no leader-epoch-checkpoint): nothing tells where the log was cut, but the
    last batch below the micro-batch's end is not the one recorded with it (its CRC, @lastBatchCrcs), so the next
    micro-batch reads the partition again from the high watermark recorded with the end, where no truncation
    reaches below: the offsets the tasks did not read are read (they were lost, silently)."""
    from kafkaseg.streaming import MicroBatchPlanner

    root, log = live
    planner = MicroBatchPlanner(_stream_options(root))
    start = planner.initial_offsets()
    end = planner.latest_offsets(start, all_available=True)
    _, first, metrics = _spark_batch(planner, start, end, lambda: _truncate_and_rewrite(log, 150, 7, 90))
    assert metrics.rewritten_tails and [o for o, _ in first][-1] < 199
    after = planner.latest_offsets(end, all_available=True)
    plan, second, _ = _spark_batch(planner, end, after)
    assert [o for o, _ in second] == list(range(HW, 220)) and not plan.data_loss
    assert any(f"again from offset {HW}" in line for line in plan.read_again), plan.read_again
    assert MicroBatchPlanner(_stream_options(root)).plan(end, after).ranges == {("t", 0): (HW, 220)}


def _rewritten_before_planning(root: Path, log: Path) -> None:
    """The follower truncation at 150 and the new leader's 7-record batches (150..219, leader epoch 1, which
    ``leader-epoch-checkpoint`` starts at 150) done before planning, with the ``.index`` left as the truncation
    leaves it (``AbstractIndex.truncateToEntries`` only moves its write position): the old generation's entries
    past the cut are still in the file, the first of them, (154, the cut's position), at the new batch 150..156."""
    from kafkaseg.testing.partition import write_leader_epoch_checkpoint

    _truncate_and_rewrite(log, 150, 7, 90)
    write_leader_epoch_checkpoint(log.parent / "leader-epoch-checkpoint", [(0, 0), (1, 150)])


def _fits_a_batch(log: Path, piece) -> bool:
    """Whether ``piece``'s start entry (if any) names the last offset of the batches from its start position, as
    the read takes it (``scan._SliceDecoder.check_start``), and its ``walk_from`` is a batch boundary."""
    headers = list(iter_headers(log.read_bytes()))
    if piece.walk_from is not None and piece.walk_from not in {h.position for h in headers} | {0}:
        return False
    if piece.start_entry is None:
        return True
    ends = [h.last_offset for h in headers if h.position >= piece.start_position]
    return piece.start_entry in ends[:next((n + 1 for n, e in enumerate(ends) if e >= piece.start_entry), 0)]


@pytest.mark.parametrize("split_size", [1 << 30, 2000], ids=["one-slice", "split"])
@pytest.mark.parametrize("starting", ['{"t":{"0":150}}', '{"t":{"0":100}}'], ids=["from-the-cut", "from-hw"])
def test_an_index_entry_a_truncation_left_is_no_slice_start_entry(live, split_size, starting):
    """A truncation and the new leader's batches landed before planning; the ``.index`` still holds the old
    generation's entries past the cut (154 at the cut's position, where the new batch holds 150..156). Planning
    took that entry as its slice's start entry (and a split, as the start entry of the slice it cut there): a read
    whose listing fell within the ctime tick of the last write (the file did not change after planning) then judged
    the batch there against it as a rewrite past the high watermark and read nothing of the slice (70 offsets of a
    Spark stream lost, silently). A slice start entry must fit a batch of the file as planned."""
    root, log = live
    _rewritten_before_planning(root, log)
    options = ReadOptions.from_options({"upperBound": "logEndOffset", "splitSize": split_size,
                                        "startingOffsets": starting})
    slices = plan_scan(str(root), options).slices
    assert all(_fits_a_batch(log, piece) for piece in slices), [(s.start_position, s.start_entry, s.walk_from)
                                                                  for s in slices]
    # a listing within the coarse ctime tick of the last write (a racy one): the read cannot tell the file unchanged
    ctime = log.stat().st_ctime_ns
    metrics = ScanMetrics()
    rows = []
    for piece in slices:
        for batch in read_slice(dataclasses.replace(piece, listed_at_ns=ctime), options, metrics):
            rows += batch.column("offset").to_pylist()
    first = int(starting.split(":")[-1].strip("}"))
    assert rows == list(range(first, 220)) and not metrics.rewritten_tails


def _one_batch_of(first: int, count: int, nbytes: int) -> bytes:
    """A new-generation batch of offsets ``first`` .. ``first + count - 1`` exactly ``nbytes`` long."""
    def batch(big: int, small: int) -> bytes:
        return build_batch_v2([Record(offset=o, timestamp=1000 + o, key=b"k%d" % o,
                                      value=b"g1-" + b"x" * (big if o == first else small))
                               for o in range(first, first + count)]).data
    return next(b for small in range(3) for b in (batch(big, small) for big in range(nbytes)) if len(b) == nbytes)


def test_a_slice_cut_after_an_index_entry_a_truncation_left_inside_a_batch_walks_from_a_batch_boundary(live):
    """The new generation after a truncation at 150 (byte 9820) lines up with the old one's index entry (174, byte
    11144) (one batch 150..164 up to there, then an append of two batches 165..174), so planning cuts a slice there;
    the entry before it, (164, byte 10482), left by the truncation, points inside the batch 150..164. The read
    walks headers from the slice's ``walk_from`` to its start when its first batch does not end at the start entry
    (here 169, not 174): from inside a batch that walk meets record bytes (it then walked the segment from byte
    0). ``walk_from`` must be a batch boundary of the file as planned."""
    from kafkaseg.testing.partition import write_leader_epoch_checkpoint

    root, log = live
    headers = list(iter_headers(log.read_bytes()))
    cut = next(h.position for h in headers if h.base_offset == 150)
    entry_at = next(h.position for h in headers if h.base_offset == 170)  # (the old entry 174's batch)
    with open(log, "r+b") as f:
        f.truncate(cut)
        f.seek(cut)
        f.write(_one_batch_of(150, 15, entry_at - cut))
        for first in range(165, 220, 5):
            f.write(_batch(first, 5, 1, 40).data)
    write_leader_epoch_checkpoint(log.parent / "leader-epoch-checkpoint", [(0, 0), (1, 150)])
    options = ReadOptions.from_options({"upperBound": "logEndOffset", "splitSize": entry_at - cut,
                                        "startingOffsets": '{"t":{"0":150}}', "endingOffsets": '{"t":{"0":180}}'})
    plan = plan_scan(str(root), options)
    assert not plan.report.indexes_rebuilt
    assert [s.start_position for s in plan.slices] == [cut, entry_at] and plan.slices[1].start_entry == 174
    assert all(_fits_a_batch(log, piece) for piece in plan.slices), [(s.start_position, s.start_entry, s.walk_from)
                                                                       for s in plan.slices]
    rows = [o for piece in plan.slices for b in read_slice(piece, options, ScanMetrics())
            for o in b.column("offset").to_pylist()]
    assert rows == list(range(150, 180))


@pytest.mark.parametrize("split_size", [1 << 30, 1000], ids=["one-slice", "split"])
@pytest.mark.parametrize("first,end", [(100, 220), (140, 157), (150, 155), (157, 220), (170, 220), (100, 160),
                                       (100, 175), (155, 185)])
def test_slices_bounded_at_index_entries_a_truncation_left_read_their_range(live, split_size, first, end):
    """Ranges starting and ending around the cut and the entries the truncation left past it (planned after the
    rewrite; slice starts and ends at or between such entries): each reads exactly its range, also when listed
    within the ctime tick of the last write, and every slice's start entry and ``walk_from`` fit the file."""
    root, log = live
    _rewritten_before_planning(root, log)
    options = ReadOptions.from_options({"upperBound": "logEndOffset", "splitSize": split_size,
                                        "startingOffsets": f'{{"t":{{"0":{first}}}}}',
                                        "endingOffsets": f'{{"t":{{"0":{end}}}}}'})
    slices = plan_scan(str(root), options).slices
    assert all(_fits_a_batch(log, piece) for piece in slices), [(s.start_position, s.start_entry, s.walk_from)
                                                                  for s in slices]
    ctime = log.stat().st_ctime_ns
    metrics = ScanMetrics()
    rows = [o for piece in slices for b in read_slice(dataclasses.replace(piece, listed_at_ns=ctime), options, metrics)
            for o in b.column("offset").to_pylist()]
    assert rows == list(range(first, end)) and not metrics.rewritten_tails
