"""Filesystem access: local paths, file:// URIs, and a non-local pyarrow filesystem (pyarrow's in-memory mock)."""

from __future__ import annotations

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
