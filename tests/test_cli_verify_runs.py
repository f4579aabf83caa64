"""``kafkaseg verify`` decodes a chunk's batches a run at a time (``verify._ChunkRecords``) instead of one kernel call
per batch: its report must be the per-batch one's, word for word, on sound and damaged logs (generator data of every
format, and the real broker logs of the corpus)."""

from __future__ import annotations

import shutil
import struct
import zlib

import pytest

from kafkaseg.cli import verify
from kafkaseg.cli.common import decode_batch
from kafkaseg.errors import KafkaSegError
from kafkaseg.testing import TopicSpec, write_data_dir
from kafkaseg.wire.batch import iter_headers
from kafkaseg.wire.crc import crc32c

_RUNS_CHECK = verify._check_records
SPECS = {
    "v2-none-1": dict(records_per_batch=1, vary_batch_size=False),
    "v2-lz4-6": dict(records_per_batch=6, codec="lz4"),
    "v2-gzip-1": dict(records_per_batch=1, vary_batch_size=False, codec="gzip"),
    "v2-compacted": dict(records_per_batch=8, gap_ratio=0.3, empty_batches=3, idempotent=True),
    "v2-txn": dict(records_per_batch=4, transactional=True, abort_ratio=0.3),
    "v2-logappend": dict(records_per_batch=3, timestamp_type="LogAppendTime"),
    "v1-none": dict(records_per_batch=1, magic=1),
    "v1-gzip-1": dict(records_per_batch=1, vary_batch_size=False, magic=1, codec="gzip"),
    "v1-snappy-5": dict(records_per_batch=5, magic=1, codec="snappy"),
    "v0-gzip-4": dict(records_per_batch=4, magic=0, codec="gzip"),
    "v2-none-unindexed": dict(records_per_batch=2, index_interval_bytes=1 << 20),  # long runs between entries
    "v1-logappend-unindexed": dict(records_per_batch=1, magic=1, timestamp_type="LogAppendTime",
                                   index_interval_bytes=1 << 20),
}


def _per_batch_check_records(records, header, position, last_offset, summary, report):
    """``verify._check_records`` as it was before runs: one ``decode_batch`` per batch, checked record by record
    (the reference)."""
    path = records.path
    try:
        offsets, record_stamps = decode_batch(records.buf, header, path, records.chunk_position)
    except KafkaSegError as err:
        report.add(verify.ERROR, path, position, f"cannot decode batch: {getattr(err, 'detail', err)}")
        return max(last_offset, header.last_offset)
    summary.records += len(offsets)
    for offset in offsets:
        if offset <= last_offset:
            report.add(verify.ERROR, path, position, f"record offset {offset} does not increase (previous "
                                                     f"{last_offset})")
        elif last_offset >= 0 and offset != last_offset + 1:
            summary.compaction_gaps += 1
        if offset > last_offset:
            last_offset = offset
    if offsets and header.magic == 2 and header.timestamp_type == 0 and max(record_stamps) != header.max_timestamp:
        report.add(verify.ERROR, path, position, f"batch maxTimestamp {header.max_timestamp} differs from its "
                   f"records' largest timestamp {max(record_stamps)}")
    if offsets and header.magic == 2 and offsets[-1] > header.last_offset:
        report.add(verify.ERROR, path, position, f"record offset {offsets[-1]} is past the batch's last offset "
                   f"{header.last_offset}")
    return last_offset


def _damaged_copy(source, copy, damage, where):
    """A copy of the generated partition ``source`` whose first, second and last segments ``damage(log, k)``
    damaged, at the ``k`` of ``where`` (three)."""
    shutil.copytree(source, copy)
    logs = sorted((copy / "t-0").glob("*.log"))
    assert len(logs) >= 3
    for log, k in zip((logs[0], logs[1], logs[-1]), where):
        damage(log, k)
    return copy


def _reports(paths, monkeypatch, max_records=None, deep=True):
    """(per-batch report, run report) of verifying ``paths``, each as its JSON dict."""
    out = []
    for runs in (False, True):
        monkeypatch.setattr(verify, "_DECODE_RUNS", runs)
        monkeypatch.setattr(verify, "_check_records", _RUNS_CHECK if runs else _per_batch_check_records)
        if max_records is not None:
            monkeypatch.setattr(verify, "_RUN_RECORDS", max_records)
        out.append(verify.verify_paths([str(p) for p in paths], deep=deep).as_dict())
    return out


def _fix_crc(data: bytearray, header) -> None:
    """Store the CRC the batch's bytes now have (damage a CRC does not catch)."""
    p = header.position
    if header.magic == 2:
        struct.pack_into(">I", data, p + 17, crc32c(bytes(data[p + 21:p + header.size])))
    else:
        struct.pack_into(">I", data, p + 12, zlib.crc32(bytes(data[p + 16:p + header.size])) & 0xFFFFFFFF)


def _damage(log, kind: str, k: int) -> None:
    """Damage the ``k``-th batch of ``log`` (counted from the end when negative) in one way."""
    data = bytearray(log.read_bytes())
    headers = list(iter_headers(memoryview(bytes(data))))
    h = headers[k]
    p, end = h.position, h.position + h.size
    if kind == "crc":  # a flipped bit in the body: the CRC fails
        data[end - 2] ^= 0x10
    elif kind == "body":  # garbage in the records, CRC recomputed: the batch cannot be decoded
        start = p + (61 if h.magic == 2 else 34 if h.magic == 1 else 26)
        data[start:end] = bytes([0xFF]) * (end - start)
        _fix_crc(data, h)
    elif kind == "back":  # the offset field (outside the CRC) goes back below the batch before
        struct.pack_into(">q", data, p, max(headers[k - 1].base_offset - 3, 0))
    elif kind == "up":  # the offset field jumps far up
        struct.pack_into(">q", data, p, h.base_offset + 10_000_000)
    elif kind == "maxts" and h.magic == 2:  # maxTimestamp no longer the records' largest, CRC recomputed
        struct.pack_into(">q", data, p + 35, struct.unpack_from(">q", data, p + 35)[0] + 7)
        _fix_crc(data, h)
    elif kind == "lastdelta" and h.magic == 2:  # lastOffsetDelta below the records' (CRC recomputed)
        struct.pack_into(">i", data, p + 23, 0)
        _fix_crc(data, h)
    elif kind == "length":  # the length field too short: bad framing from here
        struct.pack_into(">i", data, p + 8, 5)
    log.write_bytes(bytes(data))


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    root = tmp_path_factory.mktemp("runs")
    for name, spec in SPECS.items():
        write_data_dir(root / name, [TopicSpec("t", records_per_partition=400, segment_bytes=6_000, value_size=40,
                                               **{"index_interval_bytes": 512, **spec})])
    return root


@pytest.mark.parametrize("name", sorted(SPECS))
def test_runs_report_what_one_batch_at_a_time_does_on_sound_logs(generated, name, monkeypatch):
    per_batch, runs = _reports([generated / name], monkeypatch)
    assert per_batch == runs
    assert per_batch["ok"], per_batch["problems"]
    assert sum(s["records"] for p in runs["partitions"] for s in p["segments"]) > 0


@pytest.mark.parametrize("name", sorted(SPECS))
@pytest.mark.parametrize("kind", ["crc", "body", "back", "up", "maxts", "lastdelta", "length"])
def test_runs_report_what_one_batch_at_a_time_does_on_damaged_logs(generated, tmp_path, name, kind, monkeypatch):
    # (a rolled segment's batch mid-run, the second segment's second, the active segment's last)
    copy = _damaged_copy(generated / name, tmp_path / name, lambda log, k: _damage(log, kind, k), (4, 1, -1))
    per_batch, runs = _reports([copy], monkeypatch)
    assert per_batch == runs
    # small runs: the run boundaries fall everywhere, and damage is met at a run's start, middle and end
    assert _reports([copy], monkeypatch, max_records=3) == [per_batch, per_batch]
    shallow, runs = _reports([copy], monkeypatch, deep=False)  # (legacy wrappers' first offsets come from runs)
    assert shallow == runs


def test_damage_is_reported_through_runs(generated, tmp_path, monkeypatch):
    """The comparison above sees damage: a batch that cannot be decoded and a maxTimestamp mismatch are errors."""
    copy = tmp_path / "v2"
    shutil.copytree(generated / "v2-lz4-6", copy)
    logs = sorted((copy / "t-0").glob("*.log"))
    _damage(logs[0], "body", 3)
    _damage(logs[1], "maxts", 2)
    monkeypatch.setattr(verify, "_DECODE_RUNS", True)
    messages = [p.message for p in verify.verify_paths([str(copy)]).errors]
    assert any(m.startswith("cannot decode batch") for m in messages), messages
    assert any("differs from its records' largest timestamp" in m for m in messages), messages


@pytest.mark.corpus
def test_runs_report_what_one_batch_at_a_time_does_on_the_corpus(corpus_dir, monkeypatch):
    log_dirs = sorted({log.parent.parent for log in (corpus_dir / "segments").rglob("*.log")})
    assert log_dirs
    per_batch, runs = _reports(log_dirs, monkeypatch)
    assert per_batch == runs
    per_batch, runs = _reports(log_dirs, monkeypatch, max_records=2)
    assert per_batch == runs


def _damage_index(log, kind: str, k: int) -> None:
    """Damage the ``k``-th entry (counted from the end when negative) of the ``.index`` or ``.timeindex`` of
    ``log`` in one way (the log is left alone)."""
    headers = list(iter_headers(memoryview(log.read_bytes())))
    base = int(log.stem)
    index, timeindex = log.with_suffix(".index"), log.with_suffix(".timeindex")
    entries = bytearray(index.read_bytes())
    times = bytearray(timeindex.read_bytes())
    n, t = len(entries) // 8, len(times) // 12
    if kind in ("stamp", "toffset", "tdup") and t == 0:  # (v0: no timestamps, an empty .timeindex)
        return
    k, kt = k % n, k % max(t, 1)
    relative, position = struct.unpack_from(">ii", entries, 8 * k)
    at = next(i for i, h in enumerate(headers) if h.position == position)
    stamp, time_relative = struct.unpack_from(">qi", times, 12 * kt) if t else (0, 0)
    if kind == "mid":  # an entry pointing inside its batch
        struct.pack_into(">i", entries, 8 * k + 4, position + 7)
    elif kind == "first":  # the batch's first offset (pre-1.1 brokers), or below it for a single-record batch
        struct.pack_into(">i", entries, 8 * k, headers[at].base_offset - base - (headers[at].base_offset ==
                                                                                 headers[at].last_offset))
    elif kind == "later":  # a later batch's last offset (a follower's append of several batches)
        struct.pack_into(">i", entries, 8 * k, headers[min(at + 2, len(headers) - 1)].last_offset - base)
    elif kind == "far":  # an offset no batch before the next entry's reaches
        struct.pack_into(">i", entries, 8 * k, relative + 1_000)
    elif kind == "dup":  # the entry repeated over the next one
        entries[8 * k + 8:8 * k + 16] = entries[8 * k:8 * k + 8]
    elif kind == "stamp":  # a time entry's timestamp not its batch's max timestamp
        struct.pack_into(">q", times, 12 * kt, stamp + 1)
    elif kind == "toffset":  # a time entry's offset one lower: in the batch before, or in none
        struct.pack_into(">i", times, 12 * kt + 8, time_relative - 1)
    elif kind == "tdup":  # a time entry repeated over the next one
        times[12 * kt + 12:12 * kt + 24] = times[12 * kt:12 * kt + 12]
    index.write_bytes(bytes(entries))
    timeindex.write_bytes(bytes(times))


@pytest.mark.parametrize("name", sorted(set(SPECS) - {"v2-none-unindexed", "v1-logappend-unindexed"}))
@pytest.mark.parametrize("kind", ["mid", "first", "later", "far", "dup", "stamp", "toffset", "tdup"])
def test_runs_report_what_one_batch_at_a_time_does_on_damaged_indexes(generated, tmp_path, name, kind,
                                                                     monkeypatch):
    # (a rolled segment's entry mid-run, the second segment's first, the active segment's last but one)
    copy = _damaged_copy(generated / name, tmp_path / name, lambda log, k: _damage_index(log, kind, k), (2, 0, -2))
    per_batch, runs = _reports([copy], monkeypatch)
    assert per_batch == runs
    assert any(".index" in p["file"] or ".timeindex" in p["file"] for p in runs["problems"]) or kind == "toffset" \
        or name.startswith("v0") and kind in ("stamp", "tdup")  # (an offset moved within its batch: sound)
    assert _reports([copy], monkeypatch, max_records=3) == [per_batch, per_batch]


def _as_a_follower_indexes(folder) -> None:
    """Rewrite each ``.index`` of ``folder`` as a follower's appends of 3 fetched batches write it: each entry holds
    the last offset of the second batch after the one it points at (``LogSegment.append``: the append's largest
    offset at its first batch's position), where that batch is before the next entry's."""
    for log in sorted(folder.glob("*.log")):
        headers = list(iter_headers(memoryview(log.read_bytes())))
        number = {h.position: k for k, h in enumerate(headers)}
        index = log.with_suffix(".index")
        entries = bytearray(index.read_bytes())
        positions = [struct.unpack_from(">i", entries, 8 * k + 4)[0] for k in range(len(entries) // 8)]
        for k, position in enumerate(positions):
            later = number[position] + 2
            if later < len(headers) and (k + 1 == len(positions) or headers[later].position < positions[k + 1]):
                struct.pack_into(">i", entries, 8 * k, headers[later].last_offset - int(log.stem))
        index.write_bytes(bytes(entries))


@pytest.mark.parametrize("writer", ["leader", "follower"])
def test_batches_at_sound_index_entries_are_checked_with_the_run_around_them(generated, tmp_path, writer,
                                                                            monkeypatch):
    """A ``.index`` entry at its batch holding its last offset (a leader's), or the last offset of a later batch
    before the next entry's (a follower's multi-batch append: an info line), and a ``.timeindex`` entry holding an
    offset of its batch and that batch's max timestamp have nothing to say: the run around them checks them, so a
    sound segment is checked one batch at a time only at its first batch (which starts the walk) and its runs'
    last (which no batch of its run follows), however many index entries it holds; plus, for a follower's, the batch
    of an entry whose append ends with a run's last batch."""
    folder = tmp_path / "t-0"
    shutil.copytree(generated / "v2-none-1" / "t-0", folder)
    if writer == "follower":
        _as_a_follower_indexes(folder)
    per_batch, _ = _reports([folder], monkeypatch)
    monkeypatch.undo()
    checked = []

    def counted(records, header, position, *args):
        checked.append(position)
        return _RUNS_CHECK(records, header, position, *args)

    monkeypatch.setattr(verify, "_check_records", counted)
    report = verify.verify_paths([str(folder)])
    assert report.as_dict() == per_batch and report.ok
    appended = [p for p in report.problems if "of a later batch than the one pointed at" in p.message]
    assert bool(appended) == (writer == "follower")
    segments = len(report.partitions[0].segments)
    entries = sum(p.stat().st_size // 8 for p in folder.glob("*.index"))
    assert entries >= 3 * segments  # (what the bound below is to be told from)
    assert len(checked) <= (2 if writer == "leader" else 3) * segments, (len(checked), entries)


def test_the_index_entry_verdicts_are_one_rule_for_the_cursors_and_the_runs():
    """What a ``.index`` entry at a batch's position, and a ``.timeindex`` entry met at a batch, say of it is stated
    once (``_offset_entry_verdict``, ``_time_entry_verdict``) and judged alike on ints (the cursors' ``at_batch``,
    one batch at a time) and on numpy arrays (``_ChunkRecords._index_entries``, a run at a time)."""
    import itertools

    import numpy as np

    cases = list(itertools.product(range(8, 14), [8, 10], [10, 12]))  # (entry offset, first, last): below..past
    offsets, firsts, lasts = (np.array(column, np.int64) for column in zip(*cases))
    expected = []
    for offset, first, last in cases:  # (the rule in words: the batch's last offset; inside it; past it; below it)
        expected.append(verify._LAST if offset == last else verify._LATER if offset > last
                        else verify._INSIDE if first <= offset else verify._WRONG)
    assert [verify._offset_entry_verdict(*case) for case in cases] == expected
    assert verify._offset_entry_verdict(offsets, firsts, lasts).tolist() == expected
    cases = list(itertools.product([9, 10, 11], [5, 7], [10], [7]))  # (offset, timestamp, base offset, max ts)
    expected = [verify._TIME_NO_BATCH if offset < base else verify._TIME_STAMP if stamp != top else verify._TIME_RIGHT
                for offset, stamp, base, top in cases]
    assert [verify._time_entry_verdict(*case) for case in cases] == expected
    columns = (np.array(column, np.int64) for column in zip(*cases))
    assert verify._time_entry_verdict(*columns).tolist() == expected
