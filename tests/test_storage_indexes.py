"""Offset/time/transaction indexes: loading, trimming, sanity checks, floor lookups, verification, rebuild."""

from __future__ import annotations

import csv
import itertools
import re
import shutil
import struct
import tempfile
from pathlib import Path
from unittest import mock

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import kafkaseg.storage.indexes as indexes_module
import kafkaseg.storage.segment as segment_module
from kafkaseg.errors import CorruptDataError, CorruptIndexError
from kafkaseg.storage.checkpoints import read_leader_epoch_checkpoint
from kafkaseg.storage.indexes import load_indexes, rebuild_indexes, verify_offset_index, verify_time_index
from kafkaseg.storage.layout import discover
from kafkaseg.storage.offset_index import OffsetIndex
from kafkaseg.storage.segment import DEFAULT_MAX_BATCH_BYTES, SegmentReader, batch_table
from kafkaseg.storage.time_index import TimeIndex
from kafkaseg.storage.txn_index import AbortedTxn, TransactionIndex
from kafkaseg.testing.writer import LOG_APPEND_TIME, Record, build_batch_v2, build_legacy_entries, build_legacy_wrapper
from kafkaseg.wire import walk

try:
    from kafkaseg.wire import _walk as compiled_walk
except ImportError:  # not built: the pure twin and the Python walk are still compared
    compiled_walk = None

META_F8 = "segments/RaviAzzuraPutra__LATIHAN-MICROSERVICE-NEW/f8f5c464/kafka/data/__cluster_metadata-0"
META_09 = "segments/RaviAzzuraPutra__LATIHAN-MICROSERVICE-NEW/09b38fa5/kafka/data/__cluster_metadata-0"
TEMPERATURE = "segments/smartassets__backend-server/51801d05/kafka/data/temperature-0"
BASE0 = "00000000000000000000"
WALKS = [k for k in (compiled_walk,) if k is not None] + [walk.pure_kernel, None]  # None: Python only


def _manifest(corpus_dir):
    with open(corpus_dir / "MANIFEST.tsv") as handle:
        return {row["path"]: row for row in csv.DictReader(handle, delimiter="\t")}


def test_every_corpus_index_passes_verification_and_matches_the_manifest(corpus_dir):
    manifest = _manifest(corpus_dir)
    checked = 0
    for pd in discover(str(corpus_dir / "segments/*/*/kafka*/data")):
        for seg in pd.segments:
            row = manifest.get(str(seg.log_path)[len(str(corpus_dir)) + 1:])
            if not row or not row["index_check"]:
                continue
            idx, tidx = map(int, re.match(r"idx:(\d+)/0bad tidx:(\d+)/0bad", row["index_check"]).groups())
            with SegmentReader(seg.log_path) as reader:
                table = batch_table(reader)
                assert len(table) == int(row["batches"]) and table.tail is None
                offsets = OffsetIndex.load(seg.index_path, seg.base_offset)
                times = TimeIndex.load(seg.timeindex_path, seg.base_offset)
                assert (len(offsets), len(times)) == (idx, tidx), seg.log_path
                assert offsets.sanity_problems(reader.size) == [] and times.sanity_problems(reader.size) == []
                assert verify_offset_index(offsets, reader, table=table) == []
                assert verify_time_index(times, reader, table=table) == []
                checked += 1
    assert checked >= 40


def test_rebuilt_cluster_metadata_indexes_match_the_brokers(corpus_dir):
    """The KRaft metadata log is appended one batch at a time, so LogSegment.recover's rebuild reproduces the
    broker's .index exactly. The .timeindex differs by exactly the entry LogSegment.close appended when the broker
    shut down: (max timestamp so far, its offset) just before the leader epoch the restart began."""
    for folder, entries in ((META_F8, 521), (META_09, 60)):
        d = corpus_dir / folder
        with SegmentReader(str(d / f"{BASE0}.log")) as reader:
            disk_offsets = OffsetIndex.load(str(d / f"{BASE0}.index"), 0)
            disk_times = TimeIndex.load(str(d / f"{BASE0}.timeindex"), 0)
            rebuilt_offsets, rebuilt_times = rebuild_indexes(reader, 0, 4096)
        assert len(disk_offsets) == entries
        assert np.array_equal(rebuilt_offsets.offsets, disk_offsets.offsets)
        assert np.array_equal(rebuilt_offsets.positions, disk_offsets.positions)
        disk, rebuilt = list(disk_times), list(rebuilt_times)
        extra = [e for e in disk if e not in rebuilt]
        assert [e for e in disk if e in rebuilt] == rebuilt  # same entries, same order
        assert len(extra) == 1
        epochs = read_leader_epoch_checkpoint(str(d / "leader-epoch-checkpoint"))
        assert extra[0][1] + 1 == epochs[-1].start_offset
        assert rebuilt_offsets.rebuilt and rebuilt_times.rebuild_reason


def test_rebuilt_indexes_verify_strictly_for_every_corpus_segment(corpus_dir):
    for pd in discover(str(corpus_dir / "segments/*/*/kafka*/data")):
        for seg in pd.segments:
            if seg.log_size == 0:
                continue
            with SegmentReader(seg.log_path) as reader:
                table = batch_table(reader)
                offsets, times = rebuild_indexes(reader, seg.base_offset, 1024)
                assert verify_offset_index(offsets, reader, table=table) == []
                assert verify_time_index(times, reader, table=table, strict_last_offset=True) == []
                assert offsets.sanity_problems(reader.size) == []
                if len(table) and table.max_timestamps.max() >= 0:
                    assert times.max_timestamp == table.max_timestamps.max()


def _copy_segment(corpus_dir, tmp_path, folder=META_F8):
    target = tmp_path / "__cluster_metadata-0"
    target.mkdir()
    for suffix in (".log", ".index", ".timeindex"):
        shutil.copy(corpus_dir / folder / f"{BASE0}{suffix}", target / f"{BASE0}{suffix}")
    return target


def test_zero_filled_preallocated_tail_is_trimmed(corpus_dir, tmp_path):
    d = _copy_segment(corpus_dir, tmp_path)
    original = OffsetIndex.load(str(d / f"{BASE0}.index"), 0)
    original_times = TimeIndex.load(str(d / f"{BASE0}.timeindex"), 0)
    with open(d / f"{BASE0}.index", "ab") as handle:
        handle.write(b"\0" * 8 * 300_000)  # bigger than one read chunk
    with open(d / f"{BASE0}.timeindex", "ab") as handle:
        handle.write(b"\0" * 12 * 1000)
    padded = OffsetIndex.load(str(d / f"{BASE0}.index"), 0)
    padded_times = TimeIndex.load(str(d / f"{BASE0}.timeindex"), 0)
    assert list(padded) == list(original) and padded.tail_entries == 300_000
    assert list(padded_times) == list(original_times) and padded_times.tail_entries == 1000
    assert padded.sanity_problems((d / f"{BASE0}.log").stat().st_size) == []
    # Garbage after the zero entry is reported at its byte
    data = bytearray((d / f"{BASE0}.index").read_bytes())
    garbage_at = 8 * 521 + 8 * 200_000 + 3
    data[garbage_at] = 7
    (d / f"{BASE0}.index").write_bytes(bytes(data))
    dirty = OffsetIndex.load(str(d / f"{BASE0}.index"), 0)
    assert len(dirty) == 521 and dirty.tail_garbage_position == garbage_at
    assert OffsetIndex.from_bytes(bytes(data), 0).tail_garbage_position == garbage_at
    with pytest.raises(CorruptIndexError) as info:
        dirty.check()
    assert info.value.position == garbage_at


def test_first_entry_with_relative_offset_zero_is_kept():
    data = struct.pack(">ii", 0, 0) + struct.pack(">ii", 5, 4200) + b"\0" * 16
    index = OffsetIndex.from_bytes(data, 100)
    assert list(index) == [(100, 0), (105, 4200)] and index.tail_entries == 2
    times = TimeIndex.from_bytes(struct.pack(">qi", 0, 0) + struct.pack(">qi", 10, 3) + b"\0" * 12, 100)
    assert list(times) == [(0, 100), (10, 103)]


def _offset_index_bytes(entries):
    return b"".join(struct.pack(">ii", rel, pos) for rel, pos in entries)


@pytest.mark.parametrize("entries, extra, log_size, position, fragment", [
    ([(1, 10), (2, 20)], b"\1\2\3", 100, 16, "not a multiple"),
    ([(1, 10), (-5, 20)], b"", 100, 8, "less than the base"),
    ([(3, 10), (2, 20)], b"", 100, 8, "not above the previous"),
    ([(1, 30), (2, 20)], b"", 100, 8, "position 20"),
    ([(1, 10), (2, 500)], b"", 100, 8, "outside the 100-byte log"),
    ([(1, 10), (2, -1)], b"", 100, 8, "points at byte -1, a negative position"),
    ([(1, 10), (2, -1)], b"", None, 8, "points at byte -1, a negative position"),  # said "outside the None-byte log"
])
def test_offset_index_sanity_problems_are_located(tmp_path, entries, extra, log_size, position, fragment):
    path = tmp_path / f"{BASE0}.index"
    path.write_bytes(_offset_index_bytes(entries) + extra)
    index = OffsetIndex.load(str(path), 0)
    problems = index.sanity_problems(log_size)
    assert problems and any(fragment in p for p in problems)
    with pytest.raises(CorruptIndexError) as info:
        index.check(log_size)
    assert info.value.path == str(path) and info.value.position == problems[0].position
    assert any(p.position == position for p in problems if fragment in p)


def test_time_index_sanity_problems():
    entries = struct.pack(">qi", 50, 1) + struct.pack(">qi", 40, 2)
    problems = TimeIndex.from_bytes(entries, 0).sanity_problems(100)
    assert any("less than the first" in p for p in problems)
    assert any("not above" in p and p.position == 12 for p in problems)
    assert TimeIndex.from_bytes(entries + b"\1", 0).sanity_problems()[0].position == 24
    past_end = TimeIndex.from_bytes(struct.pack(">qi", 50, 9), 0)
    assert past_end.sanity_problems(100, log_end_offset=5)


@settings(max_examples=80, deadline=None)
@given(st.lists(st.integers(1, 1000), min_size=0, max_size=60, unique=True), st.integers(0, 10**6),
       st.lists(st.integers(-5, 1100), min_size=1, max_size=30))
def test_floor_lookups_match_brute_force(relatives, base, targets):
    relatives = sorted(relatives)
    offsets = OffsetIndex(base, [base + r for r in relatives], [r * 10 for r in relatives])
    times = TimeIndex(base, [1000 + r for r in relatives], [base + r for r in relatives])
    for t in targets:
        below = [r for r in relatives if base + r <= base + t]
        assert offsets.floor(base + t) == ((base + below[-1], below[-1] * 10) if below else (base, 0))
        tbelow = [r for r in relatives if 1000 + r <= 1000 + t]
        assert times.floor(1000 + t) == ((1000 + tbelow[-1], base + tbelow[-1]) if tbelow else (-1, base))


def test_verification_reports_entries_that_disagree_with_the_log(corpus_dir, tmp_path):
    d = corpus_dir / TEMPERATURE
    index_bytes = bytearray((d / f"{BASE0}.index").read_bytes())
    index_bytes[8 * 3 + 7] ^= 0x01  # entry 3's position moves off the batch boundary by one byte
    time_bytes = bytearray((d / f"{BASE0}.timeindex").read_bytes())
    struct.pack_into(">q", time_bytes, 12 * 2, struct.unpack_from(">q", time_bytes, 12 * 2)[0] + 1)
    with SegmentReader(str(d / f"{BASE0}.log")) as reader:
        bad_offsets = verify_offset_index(OffsetIndex.from_bytes(bytes(index_bytes), 0, "x.index"), reader)
        bad_times = verify_time_index(TimeIndex.from_bytes(bytes(time_bytes), 0, "x.timeindex"), reader)
    assert [(m.file, m.position) for m in bad_offsets] == [("x.index", 24)]
    assert "not at a batch boundary" in bad_offsets[0].detail
    assert [(m.file, m.position) for m in bad_times] == [("x.timeindex", 24)]
    assert "max timestamp" in bad_times[0].detail


def test_load_indexes_rebuilds_missing_or_corrupt_indexes(corpus_dir, tmp_path):
    d = _copy_segment(corpus_dir, tmp_path)
    (part,) = discover(str(d))
    seg = part.segments[0]
    offsets, times = load_indexes(seg)
    assert not offsets.rebuilt and not times.rebuilt and len(offsets) == 521
    (d / f"{BASE0}.index").unlink()
    (part,) = discover(str(d))
    offsets, times = load_indexes(part.segments[0])
    assert offsets.rebuilt and "missing .index" in offsets.rebuild_reason and len(offsets) == 521
    assert not times.rebuilt and len(times) == 523
    # entries pointing past the end of the log: sanity check fails, rebuilt
    (d / f"{BASE0}.index").write_bytes(_offset_index_bytes([(5, 100), (9, 10**8)]))
    (part,) = discover(str(d))
    offsets, _ = load_indexes(part.segments[0])
    assert offsets.rebuilt and "outside" in offsets.rebuild_reason and len(offsets) == 521
    (d / f"{BASE0}.timeindex").write_bytes(b"\1" * 13)
    (part,) = discover(str(d))
    _, times = load_indexes(part.segments[0])
    assert times.rebuilt and "corrupt .timeindex" in times.rebuild_reason and len(times) == 522


def test_index_over_the_cap_is_refused_then_rebuilt(corpus_dir, tmp_path):
    d = _copy_segment(corpus_dir, tmp_path)
    with pytest.raises(CorruptIndexError):
        OffsetIndex.load(str(d / f"{BASE0}.index"), 0, max_bytes=1024)
    (part,) = discover(str(d))
    offsets, _ = load_indexes(part.segments[0], max_index_bytes=1024)
    assert offsets.rebuilt and "unreadable" in offsets.rebuild_reason


def test_transaction_index(tmp_path):
    rows = [AbortedTxn(0, 7, 100, 120, 100), AbortedTxn(0, 8, 90, 130, 95), AbortedTxn(0, 9, 200, 210, 205)]
    data = b"".join(struct.pack(">hqqqq", *r) for r in rows)
    path = tmp_path / "00000000000000000100.txnindex"
    path.write_bytes(data + b"\1\2")  # a partial trailing entry is ignored, as Kafka does
    index = TransactionIndex.load(str(path), 100)
    assert list(index) == rows and index.trailing_bytes == 2 and index.sanity_problems() == []
    for start, end in [(0, 95), (121, 200), (125, 201), (300, 400), (100, 101)]:
        brute = [r for r in rows if r.last_offset >= start and r.first_offset < end]
        assert index.aborted_overlapping(start, end) == brute
    found, complete = index.collect_aborted(0, 101)  # row 2's lastStableOffset 205 >= 101 ends the search
    assert complete and found == rows[:2]
    assert index.collect_aborted(0, 100) == ([], True)  # row 0's lastStableOffset 100 >= 100 stops at once
    assert index.collect_aborted(0, 1000) == (rows, False)
    bad = TransactionIndex.from_bytes(struct.pack(">hqqqq", 1, 7, 100, 50, 0), 100, "t")
    problems = bad.sanity_problems()
    assert any("version" in p for p in problems) and any("below the segment base" in p for p in problems)
    with pytest.raises(CorruptIndexError):
        bad.check()


def test_an_all_zero_first_entry_before_unwritten_space_is_no_entry(tmp_path):
    """A live segment younger than index.interval.bytes has a preallocated index of zeros only: no entry (Kafka
    never indexes the batch at position 0), where DumpLogSegments would print an entry (base offset, position 0)."""
    from kafkaseg.lookup import LookupStats
    from kafkaseg.storage.probed_index import ProbedIndex

    assert list(OffsetIndex.from_bytes(b"\0" * 64, 100)) == []
    assert list(TimeIndex.from_bytes(b"\0" * 60, 100)) == []
    assert list(OffsetIndex.from_bytes(b"\0" * 8, 100)) == []
    # but a lone time entry (0, 0) is real: the roll-time entry of a segment whose records all have timestamp 0
    assert list(TimeIndex.from_bytes(b"\0" * 12, 100)) == [(0, 100)]
    lone = tmp_path / "lone.time"
    lone.write_bytes(b"\0" * 12)
    assert len(ProbedIndex(str(lone), "time", 100, None, LookupStats())) == 1
    for kind, size in (("offset", 64), ("time", 60)):
        path = tmp_path / f"young.{kind}"
        path.write_bytes(b"\0" * size)
        assert len(ProbedIndex(str(path), kind, 100, None, LookupStats())) == 0


def test_a_probed_index_reads_its_first_and_last_entries_once(tmp_path):
    """Opening a ProbedIndex checks its first and last entries (the tail rule, the sanity checks): one positioned
    read each, and last() after that reads nothing (it read its last entry twice on open, and a third time for
    last(): layout's rolled-segment checks open one per segment)."""
    from kafkaseg.lookup import LookupStats
    from kafkaseg.storage.probed_index import ProbedIndex

    path = tmp_path / "five.index"
    path.write_bytes(b"".join(struct.pack(">ii", rel, 100 * rel) for rel in range(1, 6)))
    stats = LookupStats()
    index = ProbedIndex(str(path), "offset", 1000, None, stats)
    assert (len(index), stats.index_entries) == (5, 2)
    assert index.last() == (1005, 500) and index.get(0) == (1001, 100) and stats.index_entries == 2
    assert index.floor(1003) == (1003, 300)
    index.close()
    lone = tmp_path / "one.index"
    lone.write_bytes(struct.pack(">ii", 3, 0))
    stats = LookupStats()
    index = ProbedIndex(str(lone), "offset", 1000, None, stats)
    assert (index.last(), stats.index_entries) == ((1003, 0), 1)
    index.close()



def _counted_reads(monkeypatch):
    """RandomAccessReader.read_at calls by path (the positioned reads an index probe makes)."""
    from collections import Counter

    from kafkaseg.storage import fs

    reads, read_at = Counter(), fs.RandomAccessReader.read_at

    def counted(self, *args, **kwargs):
        reads[self.path] += 1
        return read_at(self, *args, **kwargs)

    monkeypatch.setattr(fs.RandomAccessReader, "read_at", counted)
    return reads


def test_probing_a_small_index_last_entry_is_one_read(tmp_path, monkeypatch):
    """layout.probed_last_entry (the rolled-cut checks of a strict read, describe, offsets -3 and verify: a
    segment's .index and .timeindex each) reads an index of at most a page in one positioned read, not one for its
    first entry and one for its last; a bigger one as before (first, last, and the zero tail's binary search).
    (Before: two reads of each small file.)"""
    from kafkaseg.storage.layout import probed_last_entry

    offsets = tmp_path / "five.index"
    offsets.write_bytes(b"".join(struct.pack(">ii", rel, 100 * rel) for rel in range(1, 6)))
    times = tmp_path / "five.timeindex"
    times.write_bytes(b"".join(struct.pack(">qi", 7000 + rel, rel) for rel in range(1, 6)))
    big = tmp_path / "big.index"  # (512 entries past a page, then a preallocated zero tail)
    big.write_bytes(b"".join(struct.pack(">ii", rel, 100 * rel) for rel in range(1, 514)) + bytes(8 * 100))
    reads = _counted_reads(monkeypatch)
    assert probed_last_entry(str(offsets), None, "offset", 1000, None) == (1005, 500)
    assert probed_last_entry(str(times), None, "time", 1000, None) == (7005, 1005)
    assert probed_last_entry(str(big), None, "offset", 1000, None) == (1513, 51300)
    assert [reads[str(offsets)], reads[str(times)]] == [1, 1], reads
    assert reads[str(big)] > 2, reads


@settings(max_examples=300, deadline=None)
@given(kind=st.sampled_from(["offset", "time"]),
       entries=st.lists(st.tuples(st.integers(-3, 40), st.integers(-3, 9000)), max_size=12),
       zeros=st.integers(0, 6), size=st.sampled_from([4096, 8192]), ragged=st.booleans())
def test_a_probed_last_entry_is_the_probed_index_last_entry(kind, entries, zeros, size, ragged):
    """probed_last_entry's one read of a small index answers as a ProbedIndex reading entry by entry: the same
    last entry, none, or the same error (damaged first or last entries, all-zero tails, a ragged length), whether
    the index is under a page (one read) or padded past it with zeros (the entry-by-entry reads)."""
    from kafkaseg.lookup import LookupStats
    from kafkaseg.storage.layout import probed_last_entry
    from kafkaseg.storage.probed_index import ProbedIndex

    fmt = ">ii" if kind == "offset" else ">qi"
    data = b"".join(struct.pack(fmt, *((a, b) if kind == "offset" else (b, a))) for a, b in entries)
    data += bytes(struct.calcsize(fmt) * zeros) + (b"\1" if ragged else b"")
    with tempfile.TemporaryDirectory() as tmp:
        for padded in (data, data + bytes(size)):
            path = Path(tmp) / f"x.{kind}"
            path.write_bytes(padded)

            def outcome(probe):
                try:
                    return probe()
                except Exception as err:  # noqa: BLE001 - the error itself is compared
                    return type(err), str(err)

            def entry_by_entry():
                index = ProbedIndex(str(path), kind, 1000, None, LookupStats())
                try:
                    return index.last() if index.count else None
                finally:
                    index.close()

            assert outcome(lambda: probed_last_entry(str(path), None, kind, 1000, None)) == outcome(entry_by_entry)



@settings(max_examples=300, deadline=None)
@given(kind=st.sampled_from(["offset", "time"]),
       entries=st.lists(st.tuples(st.integers(-3, 40), st.integers(-3, 9000)), max_size=12),
       zeros=st.integers(0, 6), ragged=st.booleans())
def test_a_loaded_index_stands_in_for_its_probe_only_where_the_probe_reads_the_same(kind, entries, zeros, ragged):
    """layout.last_entry_as_probed (describe's rolled-cut checks, from the index files its rows loaded): where it
    answers, the probe of the file (probed_last_entry) reads the same last entry (or none) and raises nothing;
    where the loaded entries are not every entry of the file (a zero tail, a ragged length) or the probe's checks
    could fail, it does not answer (the file is probed). Asked of each loaded index and of every file length."""
    from kafkaseg.errors import KafkaSegError
    from kafkaseg.storage.layout import last_entry_as_probed, probed_last_entry

    index_class = OffsetIndex if kind == "offset" else TimeIndex
    fmt = ">ii" if kind == "offset" else ">qi"
    data = b"".join(struct.pack(fmt, *((a, b) if kind == "offset" else (b, a))) for a, b in entries)
    data += bytes(struct.calcsize(fmt) * zeros) + (b"\1" if ragged else b"")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"x.{kind}"
        path.write_bytes(data)
        try:
            loaded = index_class.load(str(path), 1000)
        except KafkaSegError:
            return
        stands = last_entry_as_probed(loaded, kind)
        try:
            probed = (probed_last_entry(str(path), None, kind, 1000, None),)
        except KafkaSegError as err:
            probed = err
        if stands is not None:
            assert stands == probed, (stands, probed)
        if zeros and entries or ragged or isinstance(probed, Exception):
            assert stands is None


# -- rebuild_indexes against LogSegment.recover's loop ------------------------------------------------------------

def _recover_loop(reader, base_offset, interval_bytes, *, max_batch_bytes, on_corruption):
    """The module doc's loop, header by header over ``iter_headers`` (rebuild_indexes before it ran on columns):
    the reference the vectorized rebuild must reproduce entry for entry."""
    offsets, positions, stamps, stamp_offsets = [], [], [], []
    last_index_entry, max_ts, max_ts_offset, last_time_entry = 0, -1, -1, -1

    def maybe_append_time(ts, offset):
        nonlocal last_time_entry
        if ts > last_time_entry:
            stamps.append(ts)
            stamp_offsets.append(offset)
            last_time_entry = ts

    try:
        for header in reader.iter_headers(0, max_batch_bytes=max_batch_bytes):
            if header.max_timestamp > max_ts:
                max_ts, max_ts_offset = header.max_timestamp, header.last_offset
            if header.position - last_index_entry > interval_bytes:
                if not offsets or header.last_offset > offsets[-1]:
                    offsets.append(header.last_offset)
                    positions.append(header.position)
                maybe_append_time(max_ts, max_ts_offset)
                last_index_entry = header.position
    except CorruptDataError as err:
        if on_corruption is None:
            raise
        on_corruption(err)
    maybe_append_time(max_ts, max_ts_offset)
    return (offsets, positions), (stamps, stamp_offsets)


INTERVALS = (-3, 0, 1, 70, 200, 1024, 4096, 1 << 70)


def _assert_rebuild_matches_loop(path, base_offset=0, intervals=INTERVALS, max_batch_bytes=DEFAULT_MAX_BATCH_BYTES):
    """rebuild_indexes == the loop for every interval, with every walk (compiled, pure twin, Python only), in
    arrays and batch by batch over the columns (however many batches), raising the same error or, with
    on_corruption, reporting the same one and covering the same batches."""
    for fast, vectorized_from in itertools.product(WALKS, (0, 1 << 62)):
        with mock.patch.object(segment_module, "_FAST_WALK", fast), \
                mock.patch.object(indexes_module, "_VECTORIZED_FROM", vectorized_from):
            for interval in intervals:
                for tolerant in (False, True):
                    got_errors, want_errors = [], []
                    with SegmentReader(str(path)) as reader:
                        try:
                            want = _recover_loop(reader, base_offset, interval, max_batch_bytes=max_batch_bytes,
                                                 on_corruption=want_errors.append if tolerant else None)
                        except CorruptDataError as err:
                            want = (type(err), str(err))
                        want_tail = reader.tail
                    with SegmentReader(str(path)) as reader:
                        try:
                            offsets, times = rebuild_indexes(reader, base_offset, interval,
                                                             max_batch_bytes=max_batch_bytes,
                                                             on_corruption=got_errors.append if tolerant else None)
                            got = ((offsets.offsets.tolist(), offsets.positions.tolist()),
                                   (times.timestamps.tolist(), times.offsets.tolist()))
                        except CorruptDataError as err:
                            got = (type(err), str(err))
                        got_tail = reader.tail
                    where = (path, getattr(fast, "IMPLEMENTATION", None), vectorized_from, interval, tolerant)
                    assert got == want, where
                    assert [str(e) for e in got_errors] == [str(e) for e in want_errors], where
                    assert got_tail == want_tail, where


def test_rebuild_matches_the_loop_on_every_corpus_segment(corpus_dir):
    logs = sorted(p for p in corpus_dir.rglob("*.log") if p.stat().st_size)
    assert logs
    for path in logs:
        _assert_rebuild_matches_loop(path, intervals=(0, 1024, 4096))


FORMATS = [(2, "none"), (2, "gzip"), (2, "zstd"), (1, "none"), (1, "gzip"), (0, "none"), (0, "snappy"),
           (1, "lz4")]


@st.composite
def _segments(draw):
    """Bytes of a log of batches in any format (compressed legacy wrappers included), with compaction's gaps and
    empty batches, LogAppendTime, timestamps that repeat, go back or are -1, offsets that go back, and then maybe
    damage: flipped bytes, a cut, zeros at the end."""
    out, offset = [], draw(st.integers(0, 50))
    for _ in range(draw(st.integers(0, 14))):
        magic, codec = draw(st.sampled_from(FORMATS))
        count = draw(st.integers(1, 4))
        offsets = [offset + sum(draw(st.lists(st.integers(1, 3), min_size=i, max_size=i))) for i in range(count)]
        stamps = draw(st.lists(st.sampled_from([-1, 5, 10, 10, 20, 30, 1_700_000_000_000]), min_size=count,
                               max_size=count))
        value = draw(st.binary(max_size=draw(st.sampled_from([0, 40, 300]))))
        records = [Record(o, t, None, value) for o, t in zip(sorted(set(offsets)), stamps)]
        append_time = draw(st.one_of(st.none(), st.sampled_from([7, 25, 1_700_000_000_001])))
        if magic == 2:
            if draw(st.booleans()) and draw(st.booleans()):  # compaction's empty batch
                out.append(build_batch_v2([], base_offset=records[0].offset, last_offset=records[-1].offset,
                                          empty_timestamp=draw(st.sampled_from([None, 15]))).data)
            elif append_time is not None:
                out.append(build_batch_v2(records, codec=codec, timestamp_type=LOG_APPEND_TIME,
                                          log_append_time=append_time).data)
            else:
                out.append(build_batch_v2(records, codec=codec).data)
        elif codec == "none":
            kind = dict(timestamp_type=LOG_APPEND_TIME, log_append_time=append_time) if (
                magic == 1 and append_time is not None) else {}
            out.extend(e.data for e in build_legacy_entries(records, magic, **kind))
        else:
            kind = dict(timestamp_type=LOG_APPEND_TIME, log_append_time=append_time) if (
                magic == 1 and append_time is not None) else {}
            out.append(build_legacy_wrapper(records, magic, codec, **kind).data)
        offset = records[-1].offset + 1 - (draw(st.integers(0, 6)) if draw(st.integers(0, 9)) == 0 else 0)
    data = bytearray(b"".join(out))
    for at, byte in draw(st.lists(st.tuples(st.integers(0, 1 << 14), st.integers(0, 255)), max_size=3)):
        if data:
            data[at % len(data)] = byte
    cut = draw(st.one_of(st.none(), st.integers(0, 1 << 14)))
    if cut is not None and data:
        del data[cut % len(data):]
    return bytes(data) + bytes(draw(st.sampled_from([0, 0, 12, 70])))


@settings(max_examples=300, deadline=None)
@given(data=_segments(), max_batch_bytes=st.sampled_from([DEFAULT_MAX_BATCH_BYTES, 200]))
def test_rebuild_matches_the_loop_on_any_log(data, max_batch_bytes):
    with tempfile.TemporaryDirectory() as root:
        path = Path(root) / f"{BASE0}.log"
        path.write_bytes(data)
        _assert_rebuild_matches_loop(path, 0, max_batch_bytes=max_batch_bytes)
