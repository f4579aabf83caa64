"""Filesystem access: local paths, file:// URIs, and a non-local pyarrow filesystem (pyarrow's in-memory mock)."""

from __future__ import annotations

import os

import pyarrow.fs as pafs
import pytest

from kafkaseg.errors import LayoutError
from kafkaseg.storage import fs
from kafkaseg.storage.indexes import load_indexes
from kafkaseg.storage.layout import discover, read_log_dir
from kafkaseg.storage.segment import SegmentReader, log_end_offset
from kafkaseg.wire.batch import iter_headers

SMART = "segments/smartassets__backend-server/51801d05/kafka/data"


def test_open_filesystem_local_and_uri(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    filesystem, path = fs.open_filesystem("rel/dir")
    assert isinstance(filesystem, pafs.LocalFileSystem) and path == str(tmp_path / "rel/dir")
    filesystem, path = fs.open_filesystem(f"file://{tmp_path}/x/")
    assert isinstance(filesystem, pafs.LocalFileSystem) and path == f"{tmp_path}/x"


def test_file_uri_discovery_matches_plain_paths(corpus_dir):
    plain = discover(str(corpus_dir / SMART / "temperature-0"))
    uri = discover(f"file://{corpus_dir / SMART / 'temperature-0'}")
    assert [(p.topic, p.partition, p.high_watermark, p.segments) for p in plain] == \
        [(p.topic, p.partition, p.high_watermark, p.segments) for p in uri]


def test_small_file_cap_and_missing_files(tmp_path):
    (tmp_path / "f").write_bytes(b"x" * 100)
    assert fs.read_small_file(str(tmp_path / "f"), max_bytes=100) == b"x" * 100
    with pytest.raises(LayoutError, match="cap"):
        fs.read_small_file(str(tmp_path / "f"), max_bytes=99)
    with pytest.raises(LayoutError):
        fs.read_small_file(str(tmp_path / "missing"))
    with pytest.raises(LayoutError):
        SegmentReader(str(tmp_path / "missing.log"))
    assert fs.read_at(str(tmp_path / "f"), 95, 50) == b"x" * 5


def test_non_local_filesystem(corpus_dir):
    mock = pafs._MockFileSystem()
    source = corpus_dir / SMART
    mock.create_dir("logs/docker-connect-configs-0")
    for local in [source / "replication-offset-checkpoint", *sorted((source / "docker-connect-configs-0").iterdir())]:
        name = local.name if local.parent == source else f"docker-connect-configs-0/{local.name}"
        with mock.open_output_stream(f"logs/{name}") as out:
            out.write(local.read_bytes())
    log_dir = read_log_dir("logs", mock)
    (pd,) = log_dir.partitions
    assert [s.base_offset for s in pd.segments] == [0, 66, 69] and pd.high_watermark == 107
    seg = pd.segments[-1]
    data = (source / "docker-connect-configs-0" / f"{69:020d}.log").read_bytes()
    with SegmentReader(seg.log_path, mock) as reader:
        assert list(reader.iter_headers(block_size=256)) == list(iter_headers(data))
        assert b"".join(bytes(b) for _, b in reader.chunks(0, None, 1000)) == data
    assert log_end_offset(seg) == 107
    offsets, times = load_indexes(seg)
    assert not offsets.rebuilt and len(times) == 3


def test_non_local_readers_fill_buffers_and_never_map():
    """Scans of non-local files take the positioned-read path: read_into fills the caller's buffer from the
    pyarrow handle, map_range declines, change_stamp holds the size at open."""
    mock = pafs._MockFileSystem()
    with mock.open_output_stream("seg.log") as out:
        out.write(bytes(range(256)) * 40)
    with fs.RandomAccessReader("seg.log", mock) as reader:
        assert not reader.mappable and reader.map_range(0, 100) is None
        buf = bytearray(300)
        assert reader.read_into(10_000, buf) == 240 and bytes(buf[:240]) == (bytes(range(256)) * 40)[10_000:]
        assert reader.read_into(5, memoryview(buf)[:7]) == 7 and bytes(buf[:7]) == bytes(range(5, 12))
        assert reader.change_stamp() == (reader.size, 0) and reader.size == 10_240


def test_local_readers_map_bounded_read_only_windows(tmp_path):
    path = tmp_path / "seg.log"
    path.write_bytes(bytes(range(256)) * 64)
    with fs.RandomAccessReader(str(path)) as reader:
        if not fs.MAPPING_AVAILABLE:
            pytest.skip("kafkaseg.storage._mapped not compiled")
        mapping = reader.map_range(5000, 1 << 30)  # clipped to the file
        view = memoryview(mapping)
        assert len(view) == 16384 - 5000 and bytes(view[:3]) == bytes(range(5000 % 256, 5000 % 256 + 3))
        assert view.readonly
        with pytest.raises(TypeError):
            view[0] = 1
        view.release()
        mapping.close()
        assert reader.map_range(16384, 10) is None  # nothing left to map


def test_without_the_mapping_module_every_read_mode_falls_back_to_preads(tmp_path, monkeypatch):
    """A build without a compiler has no kafkaseg.storage._mapped: readMode=mmap/auto read with pread, same rows."""
    import kafkaseg
    from kafkaseg.testing import TopicSpec, write_data_dir

    write_data_dir(tmp_path, [TopicSpec("t", records_per_partition=300, records_per_batch=7, codec="lz4")])
    expected = kafkaseg.read_arrow(str(tmp_path), readMode="pread")
    monkeypatch.setattr(fs, "_MappedRange", None)
    with fs.RandomAccessReader(str(next(tmp_path.glob("t-0/*.log")))) as reader:
        assert not reader.mappable and reader.map_range(0, 10) is None
    for mode in ("auto", "mmap"):
        assert kafkaseg.read_arrow(str(tmp_path), readMode=mode).equals(expected)


class _Watched:
    """A reader's stand-in for :class:`fs.ReadAhead`: a non-local file's bytes, counting the fetches running at
    once, failing at ``fail_at`` or ending early at ``short_at`` (a file shortened since it was opened)."""

    def __init__(self, data: bytes, *, fail_at: int | None = None, short_at: int | None = None, delay: float = 0.002):
        import threading

        self.data, self.size, self.fail_at, self.short_at, self.delay = data, len(data), fail_at, short_at, delay
        self.lock = threading.Lock()
        self.running = self.most_running = self.fetches = 0
        self.direct = 0

    def read_at(self, position: int, length: int, *, cached: bool = True) -> bytes:
        import time

        with self.lock:
            self.running += 1
            self.fetches += 1
            self.most_running = max(self.most_running, self.running)
        try:
            time.sleep(self.delay)
            if self.fail_at is not None and position <= self.fail_at < position + length:
                raise LayoutError(f"cannot read {length} bytes at byte {position} of f: boom")
            stop = position + length if self.short_at is None else min(position + length, self.short_at)
            return self.data[position:stop]
        finally:
            with self.lock:
                self.running -= 1

    def read_into(self, position: int, buffer) -> int:
        self.direct += 1
        data = self.read_at(position, len(buffer))
        memoryview(buffer)[:len(data)] = data
        return len(data)


def _read_in_order(source, start: int, end: int, sizes) -> bytes:
    """``[start, end)`` read as the scan reads it: in order, each read starting a few bytes before the previous
    one's end (a batch cut by the buffer is read again from its start)."""
    out, pos, i = bytearray(), start, 0
    while pos < end:
        buf = bytearray(min(sizes[i % len(sizes)], end - pos))
        n = source.read_into(pos, buf)
        have = start + len(out)
        if pos + n > have:
            out += buf[have - pos:n]
        if n < len(buf):
            break
        pos += n - 3 if n > 3 and pos + n < end else n
        i += 1
    return bytes(out)


def test_read_ahead_returns_the_file_and_bounds_requests_in_flight():
    data = bytes(range(256)) * 4096  # 1 MiB
    for start, end, sizes in ((0, len(data), [100_000]), (12_345, 1_000_000, [7_000, 130_000, 1])):
        reader = _Watched(data)
        with fs.ReadAhead(reader, start, end, block_bytes=64 * 1024, depth=3) as ahead:
            assert _read_in_order(ahead, start, end, sizes) == data[start:end]
        assert reader.most_running <= 4 and reader.direct == 0
        assert reader.fetches == -(-(end - start) // (64 * 1024))  # each block fetched once, none past the end
        assert reader.most_running > 1  # fetches did overlap


def test_read_ahead_reads_behind_its_blocks_and_outside_its_range_from_the_file():
    data = bytes(range(256)) * 1024
    reader = _Watched(data)
    with fs.ReadAhead(reader, 1000, 200_000, block_bytes=10_000, depth=2) as ahead:
        buf = bytearray(500)
        assert ahead.read_into(150_000, buf) == 500 and bytes(buf) == data[150_000:150_500]
        assert ahead.read_into(5_000, buf) == 500 and bytes(buf) == data[5_000:5_500]  # behind: direct
        assert ahead.read_into(0, buf) == 500 and bytes(buf) == data[:500]  # before the range: direct
        assert ahead.read_into(199_800, buf) == 500 and bytes(buf) == data[199_800:200_300]  # past its end
    assert reader.direct == 3


def test_read_ahead_raises_a_failed_fetch_only_where_its_bytes_are_read():
    data = bytes(300_000)
    reader = _Watched(data, fail_at=250_000)
    with fs.ReadAhead(reader, 0, len(data), block_bytes=50_000, depth=4) as ahead:
        buf = bytearray(50_000)
        for pos in range(0, 250_000, 50_000):  # the failing block is already requested by now
            assert ahead.read_into(pos, buf) == 50_000
        with pytest.raises(LayoutError, match="boom"):
            ahead.read_into(250_000, buf)


def test_read_ahead_stops_where_a_shortened_file_ends():
    data = bytes(range(256)) * 1000
    reader = _Watched(data, short_at=123_456)
    with fs.ReadAhead(reader, 0, len(data), block_bytes=50_000, depth=2) as ahead:
        got = _read_in_order(ahead, 0, len(data), [40_000])
    assert got == data[:123_456]


def test_closing_read_ahead_waits_for_fetches_already_running():
    reader = _Watched(bytes(1_000_000), delay=0.05)
    ahead = fs.ReadAhead(reader, 0, 1_000_000, block_bytes=100_000, depth=5)
    ahead.read_into(0, bytearray(10))
    ahead.close()
    assert reader.running == 0


def test_closing_read_ahead_waits_also_for_fetches_it_skipped_past():
    """A read that jumps forward drops the blocks behind it; those already running must still be waited for by
    :meth:`close`, or a pool thread reads the file after its reader was closed."""

    class SlowMiddle(_Watched):
        def read_at(self, position, length, **kw):
            self.delay = 0.3 if 100_000 <= position < 600_000 else 0.001
            return super().read_at(position, length, **kw)

    reader = SlowMiddle(bytes(1_000_000))
    ahead = fs.ReadAhead(reader, 0, 1_000_000, block_bytes=100_000, depth=5)
    assert ahead.read_into(0, bytearray(10)) == 10  # blocks 1..5 are fetched meanwhile, slowly
    assert ahead.read_into(800_000, bytearray(10)) == 10  # a jump: those blocks are not wanted any more
    ahead.close()
    assert reader.running == 0


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork here")
def test_a_child_forked_while_a_thread_holds_the_remote_lock_can_read_ahead():
    """A process forked while another of its threads held the lock guarding the read-ahead pool and the remote
    files (planning on object storage takes it in 16 threads) must not deadlock on first use in the child (a
    multiprocessing worker; a Spark python worker forked from a busy parent)."""
    import signal
    import threading

    held, release = threading.Event(), threading.Event()

    def hold():
        with fs._REMOTE_LOCK:
            held.set()
            release.wait(10)

    thread = threading.Thread(target=hold)
    thread.start()
    held.wait(10)
    try:
        pid = os.fork()
        if pid == 0:  # the child: its copy of the lock is held by a thread that does not exist here
            signal.alarm(5)
            try:
                fs._read_ahead_pool().submit(int).result()
                fs._remote_files(pafs.LocalFileSystem())
            finally:
                os._exit(0)
    finally:
        release.set()
        thread.join()
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, "the child hung on the lock"


def test_read_ahead_fetches_exactly_its_range_not_through_the_small_read_cache():
    """A slice's record data is fetched as asked (the tail of a segment an incremental run reads is often well
    under 1 MiB): not rounded out to the aligned 1 MiB blocks kept for planning's small reads, which cost an
    executor up to 2 MiB per slice and pushed planning's blocks out of the cache."""
    mock = pafs._MockFileSystem()
    data = bytes(range(256)) * 16384  # 4 MiB
    with mock.open_output_stream("seg.log") as out:
        out.write(data)
    with fs.RandomAccessReader("seg.log", mock) as reader:
        start, end = 3_000_000, 3_100_000
        with fs.ReadAhead(reader, start, end, block_bytes=8 << 20) as ahead:
            buf = bytearray(end - start)
            assert ahead.read_into(start, buf) == end - start and bytes(buf) == data[start:end]
        assert fs._remote_files(mock).cached_bytes == 0


def test_gcs_uris_retry_for_a_bounded_time(monkeypatch):
    """Google's client retries for 15 minutes by default: a gs:// read without credentials seemed to hang. The
    URI's retry_limit_seconds bounds it (30 s when not given)."""
    import datetime
    import time

    import kafkaseg
    from kafkaseg.storage.fs import GCS_RETRY_LIMIT_SECONDS, open_filesystem

    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", "/nonexistent/credentials.json")
    filesystem, _ = open_filesystem("gs://kafka-backups/data")
    assert filesystem.__reduce__()[1][0]["retry_time_limit"] == datetime.timedelta(seconds=GCS_RETRY_LIMIT_SECONDS)
    filesystem, _ = open_filesystem("gs://kafka-backups/data?retry_limit_seconds=2")
    assert filesystem.__reduce__()[1][0]["retry_time_limit"] == datetime.timedelta(seconds=2)
    filesystem, _ = open_filesystem("gs://kafka-backups/data#a-fragment")  # the limit goes in the query
    assert filesystem.__reduce__()[1][0]["retry_time_limit"] == datetime.timedelta(seconds=GCS_RETRY_LIMIT_SECONDS)
    started = time.monotonic()
    with pytest.raises(LayoutError, match="kafka-backups"):
        kafkaseg.read_arrow("gs://kafka-backups/data?retry_limit_seconds=1&endpoint_override=127.0.0.1:1&scheme=http")
    assert time.monotonic() - started < 30


def test_a_file_created_while_a_folder_is_listed_is_not_taken_for_a_broken_link(tmp_path, monkeypatch):
    """The local listing is pyarrow's plus a plain one for entries pyarrow cannot stat (broken links): a segment
    a live broker rolls between the two is left for the next listing, not an unreadable segment."""
    folder = tmp_path / "t-0"
    folder.mkdir()
    (folder / "00000000000000000000.log").write_bytes(b"")
    (folder / "00000000000000000010.index").symlink_to(tmp_path / "nowhere")
    real_listdir = os.listdir

    def listdir_after_a_roll(path):
        (folder / "00000000000000000020.log").write_bytes(b"")  # created between the two listings
        return real_listdir(path)

    monkeypatch.setattr(fs.os, "listdir", listdir_after_a_roll)
    entries = {e.name: e for e in fs.list_dir(str(folder))}
    assert "00000000000000000020.log" not in entries
    assert entries["00000000000000000000.log"].readable
    assert not entries["00000000000000000010.index"].readable  # a broken link is still reported
