"""SegmentReader: header walks, chunking, truncated/zero-filled tails, growth; log end offset, largest timestamp."""

from __future__ import annotations

import os
import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from kafka.record.memory_records import MemoryRecords

from kafkaseg.errors import CorruptBatchError, UnsupportedMagicError
from kafkaseg.storage.layout import discover
from kafkaseg.storage.segment import SegmentReader, largest_timestamp, log_end_offset
from kafkaseg.storage.time_index import TimeIndex
from kafkaseg.wire.batch import iter_headers

META = "segments/RaviAzzuraPutra__LATIHAN-MICROSERVICE-NEW/f8f5c464/kafka/data/__cluster_metadata-0"
TEMPERATURE = "segments/smartassets__backend-server/51801d05/kafka/data/temperature-0"
HAMLET = "segments/asayers__kafkalite/1b639b2f/tests/test-data/fs-data/hamlet-gzip-0"  # magic 0 gzip wrappers
LOG0 = "00000000000000000000.log"


def _oracle(data: bytes):
    """(base offset, last offset, max timestamp or None) per batch as kafka-python reads them."""
    records = MemoryRecords(data)
    out = []
    while (batch := records.next_batch()) is not None:
        if batch.magic == 2:
            out.append((batch.base_offset, batch.last_offset, batch.max_timestamp))
        else:
            out.append((batch._offset, batch._offset, None))
    return out


@pytest.mark.parametrize("folder", [META, TEMPERATURE, HAMLET])
def test_header_walk_matches_kafka_python(corpus_dir, folder):
    path = corpus_dir / folder / LOG0
    data = path.read_bytes()
    with SegmentReader(str(path)) as reader:
        walk = reader.iter_headers(block_size=4096)
        headers = list(walk)
    assert walk.tail is None and walk.end_position == len(data)
    assert headers == list(iter_headers(data))  # same headers, file positions, as a whole-buffer walk
    oracle = _oracle(data)
    assert len(headers) == len(oracle)
    for header, (base, last, max_ts) in zip(headers, oracle):
        assert (header.base_offset, header.last_offset) == (base, last)
        if max_ts is not None:
            assert header.max_timestamp == max_ts


def test_every_corpus_segment_walks_to_its_manifest_batch_count(corpus_dir):
    import csv

    with open(corpus_dir / "MANIFEST.tsv") as handle:
        rows = {r["path"]: r for r in csv.DictReader(handle, delimiter="\t") if r["path"].endswith(".log")}
    for rel, row in rows.items():
        if row["decode_error"]:
            continue
        with SegmentReader(str(corpus_dir / rel)) as reader:
            assert sum(1 for _ in reader.iter_headers()) == int(row["batches"]), rel


@settings(max_examples=25, deadline=None)
@given(target=st.integers(61, 300_000), start_batch=st.integers(0, 29_000), span=st.integers(1, 2000))
def test_chunks_hold_whole_batches_and_cover_the_range(corpus_dir, target, start_batch, span):
    path = corpus_dir / META / LOG0
    data = path.read_bytes()
    positions = [h.position for h in iter_headers(data)] + [len(data)]
    start = positions[min(start_batch, len(positions) - 2)]
    end = positions[min(start_batch + span, len(positions) - 1)]
    with SegmentReader(str(path)) as reader:
        pieces = list(reader.chunks(start, end, target_bytes=target))
    assert b"".join(bytes(buf) for _, buf in pieces) == data[start:end]
    cursor = start
    for position, buf in pieces:
        assert position == cursor
        inner = list(iter_headers(buf))  # raises if a chunk holds a torn batch
        assert sum(h.size for h in inner) == len(buf)
        assert len(buf) <= target or len(inner) == 1
        cursor += len(buf)


def test_big_batch_makes_its_own_chunk_and_absurd_length_raises(corpus_dir, tmp_path):
    data = (corpus_dir / TEMPERATURE / LOG0).read_bytes()
    sizes = [h.size for h in iter_headers(data)]
    with SegmentReader(str(corpus_dir / TEMPERATURE / LOG0)) as reader:
        pieces = list(reader.chunks(0, None, target_bytes=100))
    assert [len(buf) for _, buf in pieces] == sizes
    with SegmentReader(str(corpus_dir / TEMPERATURE / LOG0)) as reader:
        with pytest.raises(CorruptBatchError) as info:
            list(reader.chunks(0, None, target_bytes=1 << 20, max_batch_bytes=max(sizes) - 13))
    assert info.value.path.endswith(LOG0) and info.value.position in {h.position for h in iter_headers(data)}
    # A length field claiming ~2 GiB is rejected before anything is allocated for it
    bad = bytearray(data)
    second = sizes[0]
    struct.pack_into(">i", bad, second + 8, 2**31 - 1)
    target = tmp_path / LOG0
    target.write_bytes(bytes(bad))
    with SegmentReader(str(target)) as reader:
        with pytest.raises(CorruptBatchError) as info:
            list(reader.iter_headers())
    assert info.value.position == second and str(target) in str(info.value)


def test_truncated_tail_is_reported_not_raised(corpus_dir, tmp_path):
    data = (corpus_dir / TEMPERATURE / LOG0).read_bytes()
    headers = list(iter_headers(data))
    last = headers[-1]
    for cut in (last.position + 5, last.position + 40, last.position + 70, len(data) - 1):
        path = tmp_path / f"cut{cut}.log"
        path.write_bytes(data[:cut])
        with SegmentReader(str(path)) as reader:
            walk = reader.iter_headers()
            assert len(list(walk)) == len(headers) - 1
            assert walk.tail.position == last.position and walk.tail.reason == "truncated batch"
            chunk_walk = reader.chunks(0, None, target_bytes=4096)
            assert b"".join(bytes(b) for _, b in chunk_walk) == data[:last.position]
            assert chunk_walk.tail.position == last.position and reader.truncated_at == last.position
            assert chunk_walk.end_position == last.position


def test_zero_filled_log_tail_is_reported(corpus_dir, tmp_path):
    data = (corpus_dir / TEMPERATURE / LOG0).read_bytes()
    path = tmp_path / LOG0
    path.write_bytes(data + b"\0" * 5000)
    with SegmentReader(str(path)) as reader:
        walk = reader.iter_headers()
        assert len(list(walk)) == len(list(iter_headers(data)))
        assert walk.tail.reason == "zero-filled tail" and walk.tail.position == len(data)
        chunks = reader.chunks(0, None, 1 << 16)
        assert sum(len(b) for _, b in chunks) == len(data) and chunks.tail.reason == "zero-filled tail"


def test_corrupt_magic_in_the_middle_raises_located(corpus_dir, tmp_path):
    data = bytearray((corpus_dir / TEMPERATURE / LOG0).read_bytes())
    third = list(iter_headers(bytes(data)))[2].position
    data[third + 16] = 9
    path = tmp_path / LOG0
    path.write_bytes(bytes(data))
    with SegmentReader(str(path)) as reader:
        with pytest.raises(UnsupportedMagicError) as info:
            list(reader.iter_headers(block_size=512))
        assert info.value.position == third and info.value.path == str(path)
        with pytest.raises(UnsupportedMagicError) as info:
            list(reader.chunks(0, None, 1 << 20))
        assert info.value.position == third


def test_explicit_end_must_be_a_batch_boundary(corpus_dir):
    data = (corpus_dir / TEMPERATURE / LOG0).read_bytes()
    second = list(iter_headers(data))[1]
    with SegmentReader(str(corpus_dir / TEMPERATURE / LOG0)) as reader:
        assert [h.position for h in reader.iter_headers(0, second.end)][-1] == second.position
        with pytest.raises(CorruptBatchError, match="not a batch boundary"):
            list(reader.chunks(0, second.end - 1, 1 << 20))


def test_growing_file_is_read_as_it_was_at_open(corpus_dir, tmp_path):
    data = (corpus_dir / TEMPERATURE / LOG0).read_bytes()
    headers = list(iter_headers(data))
    half = headers[len(headers) // 2].position
    path = tmp_path / LOG0
    path.write_bytes(data[:half])
    with SegmentReader(str(path)) as reader:
        with open(path, "ab") as handle:
            handle.write(data[half:half + 100])  # a writer appends part of the next batch after open
        pieces = list(reader.chunks(0, None, target_bytes=7000))
        assert b"".join(bytes(b) for _, b in pieces) == data[:half]
        assert reader.size == half and reader.tail is None
        assert reader.read_at(half - 10, 1000) == data[half - 10:half]


def test_log_end_offset_and_largest_timestamp(corpus_dir):
    checked = 0
    for pd in discover(str(corpus_dir / "segments/*/*/kafka*/data")):
        for seg in pd.segments:
            data = open(seg.log_path, "rb").read()
            headers = list(iter_headers(data))
            expected = headers[-1].next_offset if headers else seg.base_offset
            assert log_end_offset(seg) == expected, seg.log_path
            times = TimeIndex.load(seg.timeindex_path, seg.base_offset) if seg.timeindex_path else None
            if times is not None and len(times):
                assert largest_timestamp(seg) == max(h.max_timestamp for h in headers)
            else:
                # Kafka: the file's lastModified(), whole milliseconds (a float st_mtime * 1000 can round up)
                assert largest_timestamp(seg) == os.stat(seg.log_path).st_mtime_ns // 1_000_000
            checked += 1
    assert checked > 100


def test_log_end_offset_reads_about_one_index_interval(corpus_dir, segment_reads):
    (pd,) = [p for p in discover(str(corpus_dir / META).rsplit("/", 1)[0]) if p.topic == "__cluster_metadata"]
    seg = pd.segments[0]
    assert log_end_offset(seg) == 30068
    assert sum(segment_reads) < 64 * 1024 and seg.log_size > 2_000_000


def test_zeros_are_searched_past_a_sparse_files_holes_unread(tmp_path):
    # a preallocated segment is one hole past its last append: verify and dump read 1 GiB of zeros per segment
    # looking for data after them; SEEK_DATA skips the hole, and data after a hole is still found
    from kafkaseg.storage.segment import first_nonzero_byte

    path = tmp_path / "00000000000000000000.log"
    with open(path, "wb") as fh:
        fh.write(b"\1" * 100 + b"\0" * 50)
        fh.truncate(3 << 30)  # a 3 GiB hole
    with SegmentReader(str(path)) as reader:
        read = []
        real_read_at = reader.read_at
        reader.read_at = lambda position, length, **kw: read.append(length) or real_read_at(position, length, **kw)
        assert first_nonzero_byte(reader, 100) is None
        assert sum(read) <= 1 << 20, sum(read)  # the written block at most, not the 3 GiB of the hole
    with open(path, "r+b") as fh:
        fh.seek((2 << 30) + 12345)
        fh.write(b"\0\0\7")
    with SegmentReader(str(path)) as reader:
        assert first_nonzero_byte(reader, 100) == (2 << 30) + 12347
        assert first_nonzero_byte(reader, (2 << 30) + 12348) is None


@pytest.mark.parametrize("where", ["at an index entry", "no index", "first of its segment"])
def test_log_end_offset_finds_the_batch_before_a_last_batch_that_skips_acknowledged_offsets(tmp_path, where):
    """The walk for the log end starts at the last index entry; when that entry is the last batch's, the batch
    before it is found by a walk from the entry before (or the segment's base offset, for its first batch)."""
    from kafkaseg.errors import SkippedOffsetsError
    from kafkaseg.testing import PartitionWriter, Record, build_batch_v2

    writer = PartitionWriter(tmp_path / "t-0", index_interval_bytes=4096, log_start_offset=100)
    count = 1 if where == "first of its segment" else 9
    for k in range(count):
        writer.append(build_batch_v2([Record(100 + 5 * k + i, 1_700_000_000_000, None, b"v" * 1000)
                                      for i in range(5)]))
    writer.close()
    (pd,) = discover(str(tmp_path))
    seg = pd.segments[-1]
    data = bytearray(open(seg.log_path, "rb").read())
    last = list(iter_headers(bytes(data)))[-1]
    struct.pack_into(">q", data, last.position, last.base_offset + 3)
    open(seg.log_path, "wb").write(bytes(data))
    if where == "at an index entry":
        from kafkaseg.storage.offset_index import OffsetIndex
        assert int(OffsetIndex.load(seg.index_path, seg.base_offset).positions[-1]) == last.position
    elif where == "no index":
        os.remove(seg.index_path)
        (pd,) = discover(str(tmp_path))
        seg = pd.segments[-1]
    hw = last.base_offset + 2
    with pytest.raises(SkippedOffsetsError, match=rf"skips offsets {last.base_offset}\.\.{hw - 1}, below the high "
                                                   rf"watermark {hw}") as info:
        log_end_offset(seg, high_watermark=hw)
    assert info.value.position == last.position
    assert log_end_offset(seg) == last.next_offset + 3  # (without the high watermark: no judgement)
    assert log_end_offset(seg, high_watermark=last.base_offset) == last.next_offset + 3


def test_no_real_partition_has_a_last_batch_that_skips_acknowledged_offsets(corpus_dir):
    """Every partition of the corpus (leaders, followers, compacted topics, transactions) against its checkpointed
    high watermark: no false alarm."""
    from kafkaseg.storage.layout import partition_log_end_offset

    checked = 0
    for pd in discover(str(corpus_dir / "segments/*/*/kafka*/data")):
        if pd.segments and pd.high_watermark is not None:
            partition_log_end_offset(pd, max_batch_bytes=None)
            checked += 1
    assert checked > 50


@pytest.mark.parametrize("high_watermark", [40, 50, 95, 97, 100])
def test_a_compacted_followers_gap_before_its_last_batch_is_no_corruption(tmp_path, high_watermark):
    """A follower copies a compacted leader's batches, gaps and all: [0, 50) then [95, 100). Its high watermark
    is checkpointed before that append (at or below 50) or after it (at least the leader's, which is past the gap
    its cleaner made): no judgement of the base offset then."""
    from kafkaseg.testing import PartitionWriter, Record, build_batch_v2

    writer = PartitionWriter(tmp_path / "t-0")
    for base in [*range(0, 50, 5), 95]:
        writer.append(build_batch_v2([Record(base + i, 1_700_000_000_000, None, b"v") for i in range(5)]))
    writer.close()
    (pd,) = discover(str(tmp_path))
    assert log_end_offset(pd.segments[-1], high_watermark=high_watermark) == 100


class _ShrinkingReader(SegmentReader):
    """A reader whose second read finds the file cut to ``keep`` bytes past the first read's end (a follower's
    truncation between two chunks), with a guard: a walk that reads on and on fails instead of hanging."""

    def __init__(self, path, keep):
        super().__init__(str(path))
        self._path, self._keep, self.reads, self.cut_at = path, keep, 0, None

    def read_at(self, position, length):
        self.reads += 1
        assert self.reads < 200, f"the walk reads byte {position} on and on (file now {self._path.stat().st_size})"
        if self.reads == 2:
            self.cut_at = position + self._keep
            os.truncate(self._path, self.cut_at)
        return super().read_at(position, length)


@pytest.mark.parametrize("keep", [0, 1, 10, 60, 61, 300])
@pytest.mark.parametrize("walk", ["chunks", "headers"])
def test_a_log_cut_between_reads_ends_the_walk_there(tmp_path, keep, walk):
    """Whatever is left past the next read's position (nothing, part of a batch header, part of a batch), the walk
    ends at the file's new end as at a torn tail, having handed over only whole batches before it (before, a cut
    leaving 1..60 bytes, less than a header, made the chunk walk read those bytes over and over, for ever)."""
    from tests.lost_tail_data import write_whole

    write_whole(tmp_path)
    path = tmp_path / "t-0" / LOG0
    whole = [(h.position, h.size) for h in iter_headers(path.read_bytes())]
    with _ShrinkingReader(path, keep) as reader:
        if walk == "chunks":
            it = reader.chunks(0, target_bytes=1000)
            got = []
            for position, buf in it:
                got.extend((position + h.position, h.size) for h in iter_headers(bytes(buf)))
        else:
            it = reader.iter_headers(0, block_size=1000)
            got = [(h.position, h.size) for h in it]
    assert reader.cut_at is not None
    assert it.tail is not None
    if walk == "chunks":  # (buffers: whole batches only, the walk's end where the last one ends)
        assert got == [(p, s) for p, s in whole if p + s <= reader.cut_at]
        assert it.tail.position == (got[-1][0] + got[-1][1] if got else 0)
    else:  # (a header walk skips record data unread: a header whose batch the cut ends can still be handed over)
        assert got == whole[:len(got)] and all(p < reader.cut_at for p, _ in got)
