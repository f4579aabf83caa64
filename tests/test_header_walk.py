"""The header walk (kafkaseg.wire.walk): its compiled and pure twins agree with read_header / iter_headers batch for
batch, and stop where and why they raise, on valid segments of every format, the corpus and arbitrary damage; and
the segment walks built on it (chunks, iter_headers, batch_table) give what the Python walk gives, errors, tails and
chunk boundaries included."""

from __future__ import annotations

import random
import time

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kafkaseg.storage.segment as segment_module
from kafkaseg.errors import CorruptBatchError, KafkaSegError, TruncatedDataError, UnsupportedMagicError
from kafkaseg.storage.segment import SegmentReader, batch_table
from kafkaseg.testing.writer import Record, build_batch_v2, build_legacy_entries, build_legacy_wrapper
from kafkaseg.wire import walk
from kafkaseg.wire.batch import BatchHeader, read_header

try:
    from kafkaseg.wire import _walk as compiled
except ImportError:  # not built: the pure twin is still held to read_header
    compiled = None

TWINS = [pytest.param(walk.pure_kernel, id="pure"),
         pytest.param(compiled, id="compiled",
                      marks=pytest.mark.skipif(compiled is None, reason="kafkaseg.wire._walk is not built"))]
KERNELS = [k for k in (walk.pure_kernel, compiled) if k is not None]
REASON_OF = {TruncatedDataError: walk.STOP_INCOMPLETE, UnsupportedMagicError: walk.STOP_MAGIC}


def reference(buf, start, end, available_end, room, max_batch_size):
    """What read_header says walking ``buf[start:end]`` (bodies may run to ``available_end``): the headers, where
    it stops and the reason the walk must give there."""
    view = memoryview(bytes(buf))[:end]
    found, pos = [], start
    while pos < available_end:
        if end - pos < room:
            return found, pos, walk.STOP_INCOMPLETE
        try:
            header = read_header(view, pos, max_batch_size=None if max_batch_size < 0 else max_batch_size,
                                 available=available_end - pos)
        except KafkaSegError as err:
            assert err.position == pos
            if type(err) in REASON_OF:
                return found, pos, REASON_OF[type(err)]
            assert type(err) is CorruptBatchError, err
            return found, pos, (walk.STOP_SIZE if "size" in str(err) else walk.STOP_OFFSETS)
        found.append(header)
        pos += header.size
    return found, pos, walk.STOP_END


def check(buf, start=0, end=None, available_end=None, room=0, max_batch_size=-1):
    end = len(buf) if end is None else end
    available_end = end if available_end is None else available_end
    headers, stop, reason = reference(buf, start, end, available_end, room, max_batch_size)
    for kernel in KERNELS:
        args = (buf, start, end, available_end, room, max_batch_size)
        assert kernel.skip(*args) == (stop, len(headers), reason), kernel.IMPLEMENTATION
        got = kernel.headers(*args, -1, 0, BatchHeader)
        assert got == (stop, reason, headers), kernel.IMPLEMENTATION
        assert all(type(h) is BatchHeader for h in got[2])
        position, why, columns = kernel.columns(*args, 1000)
        assert (position, why) == (stop, reason)
        assert len(columns) == len(walk.COLUMNS)
        for k, name in enumerate(walk.COLUMNS):
            assert columns[k].dtype == np.int64
            expected = [getattr(h, name) + (1000 if name == "position" else 0) for h in headers]
            assert columns[k].tolist() == expected, (kernel.IMPLEMENTATION, name)
        writable = memoryview(bytearray(buf))  # (walked as a copy of its first ``end`` bytes)
        assert kernel.skip(writable, *args[1:]) == (stop, len(headers), reason)
        assert kernel.headers(writable, *args[1:], -1, 0, BatchHeader) == got
        if headers:  # max_count stops early, with the reason "end"
            assert kernel.skip(*args, 1) == (headers[0].end, 1, walk.STOP_END)
            moved = headers[0]._replace(position=headers[0].position + 7)
            assert kernel.headers(*args, 1, 7, BatchHeader)[2] == [moved]
    return headers, stop, reason


def _records(n, rng, offset=0):
    return [Record(offset + i, 1_700_000_000_000 + i, rng.randbytes(rng.randrange(0, 5)) if rng.random() < .5
                   else None, rng.randbytes(rng.randrange(0, 60))) for i in range(n)]


def segment_bytes(magic: int, codec: str, batches: int, per_batch: int, seed: int = 0) -> bytes:
    rng = random.Random(seed)
    out, offset = [], 0
    for _ in range(batches):
        records = _records(per_batch, rng, offset)
        if magic == 2:
            out.append(build_batch_v2(records, codec=codec).data)
        elif codec == "none":
            out.extend(e.data for e in build_legacy_entries(records, magic))
        else:
            out.append(build_legacy_wrapper(records, magic, codec).data)
        offset += per_batch
    return b"".join(out)


FORMATS = [(2, "none"), (2, "gzip"), (2, "lz4"), (2, "zstd"), (1, "none"), (1, "gzip"), (0, "none"), (0, "snappy")]


@pytest.mark.parametrize("magic,codec", FORMATS)
def test_valid_segments_every_format(magic, codec):
    data = segment_bytes(magic, codec, 40, 3)
    headers, stop, reason = check(data)
    assert stop == len(data) and reason == walk.STOP_END and headers
    assert check(data, max_batch_size=30)[2] == walk.STOP_SIZE
    for cut in range(0, len(data), 37):  # every kind of incomplete tail
        check(data[:cut])
        check(data, end=cut, available_end=len(data), room=61)  # bodies past a block of headers
        check(data, end=cut, available_end=len(data))


@pytest.mark.parametrize("value", [0x7FFFFFFF, -1, 0, 48, 1 << 30])
def test_length_fields_never_allocate(value):
    """An absurd length field stops the walk (incomplete or bad size); the columns stay sized by the buffer."""
    data = bytearray(segment_bytes(2, "none", 3, 1))
    second = read_header(data).size
    data[second + 8:second + 12] = value.to_bytes(4, "big", signed=True)
    headers, stop, reason = check(bytes(data))
    assert stop == second and len(headers) == 1
    assert reason in (walk.STOP_INCOMPLETE, walk.STOP_SIZE)


def test_offset_limits():
    data = bytearray(build_batch_v2(_records(3, random.Random(1))).data)
    for base in ((1 << 63) - 3, (1 << 63) - 2, (1 << 63) - 1, -(1 << 63), -5):
        data[0:8] = base.to_bytes(8, "big", signed=True)
        check(bytes(data))
    legacy = bytearray(build_legacy_entries(_records(1, random.Random(1)), 1)[0].data)
    for offset in ((1 << 63) - 2, (1 << 63) - 1, -1):
        legacy[0:8] = offset.to_bytes(8, "big", signed=True)
        check(bytes(legacy))


@settings(max_examples=300, deadline=None)
@given(fmt=st.sampled_from(FORMATS), batches=st.integers(1, 12), per_batch=st.integers(1, 4), seed=st.integers(0, 9),
       mutations=st.lists(st.tuples(st.integers(0, 1 << 16), st.integers(0, 255)), max_size=6),
       cut=st.one_of(st.none(), st.integers(0, 1 << 16)), start=st.integers(0, 3),
       max_batch_size=st.sampled_from([-1, 0, 60, 1 << 20]), room=st.sampled_from([0, 61]),
       extra=st.integers(0, 1 << 12))
def test_mutated_bytes_agree(fmt, batches, per_batch, seed, mutations, cut, start, max_batch_size, room, extra):
    data = bytearray(segment_bytes(*fmt, batches, per_batch, seed))
    for position, value in mutations:
        data[position % len(data)] = value
    if cut is not None:
        data = data[:cut % (len(data) + 1)]
    positions = [0] + [h.end for h in reference(data, 0, len(data), len(data), 0, -1)[0]]
    begin = positions[start % len(positions)]
    check(bytes(data), begin, max_batch_size=max_batch_size)
    check(bytes(data), begin, available_end=len(data) + extra, room=room, max_batch_size=max_batch_size)


@pytest.mark.parametrize("kernel", TWINS)
def test_a_start_before_the_buffer_is_refused(kernel):
    data = segment_bytes(2, "none", 2, 1)
    for call in (kernel.skip, kernel.headers, kernel.columns):
        with pytest.raises(ValueError, match="before its buffer"):
            call(data, -1, len(data), len(data))
    assert kernel.skip(data, len(data) + 5, len(data), len(data) + 100) == (len(data) + 5, 0, walk.STOP_INCOMPLETE)


@settings(max_examples=200, deadline=None)
@given(data=st.binary(max_size=300), start=st.integers(0, 40))
def test_arbitrary_bytes_agree(data, start):
    check(data, min(start, len(data)))


def _corpus_logs(corpus_dir):
    return sorted(corpus_dir.rglob("*.log"))


@pytest.mark.corpus
def test_corpus_segments_agree(corpus_dir):
    logs = _corpus_logs(corpus_dir)
    assert logs
    for path in logs:
        data = path.read_bytes()
        check(data)
        check(data, max_batch_size=1 << 20)


@pytest.mark.corpus
@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(pick=st.integers(0, 10_000),
       mutations=st.lists(st.tuples(st.integers(0, 1 << 24), st.integers(0, 255)), min_size=1, max_size=6))
def test_corpus_mutations_agree(corpus_dir, pick, mutations):
    logs = [p for p in _corpus_logs(corpus_dir) if 0 < p.stat().st_size <= 1 << 20]
    data = bytearray(logs[pick % len(logs)].read_bytes())
    for position, value in mutations:
        data[position % len(data)] = value
    check(bytes(data))


# -- the segment walks: the compiled walk under them changes nothing they give ---------------------------------------

def _outcome(walk_fn):
    """Everything a walk gives: its items, then its error (type, message, path, position) or tail."""
    items, error = [], None
    it = walk_fn()
    try:
        for item in it:
            items.append(item if not isinstance(item[1], memoryview) else (item[0], bytes(item[1])))
    except KafkaSegError as err:
        error = (type(err), str(err), err.position)
    return items, error, it.tail, it.end_position


def _table(reader, max_batch_bytes):
    try:
        t = batch_table(reader, max_batch_bytes=max_batch_bytes)
    except KafkaSegError as err:
        return type(err), str(err), err.position
    return [a.tolist() for a in (t.positions, t.base_offsets, t.last_offsets, t.max_timestamps)], t.tail


def _safe_header_at(path, start, max_batch_bytes):
    with SegmentReader(str(path)) as reader:
        try:
            return reader.header_at(start, max_batch_bytes=max_batch_bytes)
        except KafkaSegError as err:
            return type(err), str(err), err.position


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(fmt=st.sampled_from(FORMATS), batches=st.integers(1, 60), per_batch=st.integers(1, 3), seed=st.integers(0, 5),
       mutations=st.lists(st.tuples(st.integers(0, 1 << 16), st.integers(0, 255)), max_size=3),
       cut=st.one_of(st.none(), st.integers(0, 1 << 16)), zeros=st.integers(0, 300), start=st.integers(0, 5),
       end=st.one_of(st.none(), st.integers(0, 1 << 16)), block=st.sampled_from([61, 100, 1000, 1 << 16]),
       target=st.sampled_from([61, 200, 1500, 1 << 20]),
       max_batch_bytes=st.sampled_from([None, 100, 1 << 20, 0, -5, 1 << 70]),
       partial=st.booleans())
def test_segment_walks_same_with_and_without_the_compiled_walk(tmp_path_factory, monkeypatch, fmt, batches,
                                                               per_batch, seed, mutations, cut, zeros, start, end,
                                                               block, target, max_batch_bytes, partial):
    data = bytearray(segment_bytes(*fmt, batches, per_batch, seed))
    for position, value in mutations:
        data[position % len(data)] = value
    if cut is not None:
        data = data[:cut % (len(data) + 1)]
    data += bytes(zeros)
    path = tmp_path_factory.mktemp("walk") / "00000000000000000000.log"
    path.write_bytes(bytes(data))
    positions = [0] + [h.end for h in reference(data, 0, len(data), len(data), 0, -1)[0]]
    begin = positions[start % len(positions)]
    end = None if end is None else end % (len(data) + 1)
    results = []
    for kernel in [None] + KERNELS:
        monkeypatch.setattr(segment_module, "_FAST_WALK", kernel)
        with SegmentReader(str(path)) as reader:
            results.append((
                _outcome(lambda: reader.iter_headers(begin, end, max_batch_bytes=max_batch_bytes, block_size=block,
                                                     partial_append=partial)),
                _outcome(lambda: reader.chunks(begin, end, target_bytes=target, max_batch_bytes=max_batch_bytes,
                                               partial_append=partial)),
                _table(reader, max_batch_bytes),
                _safe_header_at(path, begin, max_batch_bytes)))
    for other in results[1:]:
        assert other == results[0]


def test_missing_compiled_walk_warns_and_falls_back_to_the_twin(tmp_path):
    """Without kafkaseg.wire._walk (no compiler at install), kafkaseg warns once and walks with the pure twin; the
    decoder's own fallback is unchanged. ``KAFKASEG_PURE=1`` picks the twins without a warning."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    script = (
        "import sys, warnings\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name in ('kafkaseg.wire._walk', 'kafkaseg.decode._kernel'):\n"
        "            raise ImportError('blocked: ' + name)\n"
        "sys.meta_path.insert(0, Block())\n"
        "with warnings.catch_warnings(record=True) as caught:\n"
        "    warnings.simplefilter('always')\n"
        "    import kafkaseg.storage.segment as s\n"
        "    import kafkaseg.decode as d\n"
        "print(s._FAST_WALK.IMPLEMENTATION, d.IMPLEMENTATION)\n"
        "for w in caught: print(w.category.__name__, w.message)\n")
    env = {k: v for k, v in os.environ.items() if k != "KAFKASEG_PURE"}
    env["PYTHONPATH"] = str(root)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, env=env, check=True,
                         cwd=tmp_path).stdout.splitlines()
    assert out[0] == "python python"
    warned = [line for line in out[1:] if line.startswith("RuntimeWarning")]
    assert len(warned) == 2
    assert any("compiled header walk unavailable" in line and "pure-Python header walk" in line for line in warned)
    assert any("compiled decoder unavailable" in line and "pure-Python decoder" in line for line in warned)
    env["KAFKASEG_PURE"] = "1"
    unblocked = script.replace("sys.meta_path.insert(0, Block())\n", "")
    out = subprocess.run([sys.executable, "-c", unblocked], capture_output=True, text=True, env=env, check=True,
                         cwd=tmp_path).stdout.splitlines()
    assert out == ["python python"]


@pytest.mark.parametrize("kernel", TWINS)
def test_a_buffer_another_thread_rewrites_is_walked_as_it_was_at_the_call(kernel):
    """A writable buffer (a bytearray) another thread keeps rewriting whole, pausing after each rewrite, while walks
    run over it: every walk gives the result of the buffer before or after a rewrite, never half of each (a walk
    reads a copy of a buffer that can change, made when it starts)."""
    import threading

    before = segment_bytes(2, "none", 20_000, 1)
    after = bytearray(before)
    position = 0
    while position < len(after):  # the same batches at other base offsets (outside the CRC)
        header = read_header(after, position)
        after[position:position + 8] = (header.base_offset + 1_000_000).to_bytes(8, "big")
        position += header.size
    after = bytes(after)

    def results(buf):
        position, reason, columns = kernel.columns(buf, 0, len(buf), len(buf))
        return ((position, reason, [column.tolist() for column in columns]),
                kernel.headers(buf, 0, len(buf), len(buf), 0, -1, -1, 0, BatchHeader))

    expected = [results(state) for state in (before, after)]
    assert expected[0] != expected[1]
    buf = bytearray(before)
    stop = threading.Event()

    def rewrite():
        while not stop.is_set():
            for state in (after, before):
                buf[:] = state
                time.sleep(0)  # (lets a walk take the GIL back in either state)

    writer = threading.Thread(target=rewrite)
    writer.start()
    torn = walks = 0
    try:
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline and walks < (100 if kernel is compiled else 5):
            position, reason, columns = kernel.columns(buf, 0, len(buf), len(buf))
            got = [(position, reason, [column.tolist() for column in columns]),
                   kernel.headers(buf, 0, len(buf), len(buf), 0, -1, -1, 0, BatchHeader)]
            walks += 1
            torn += sum(result not in (expected[0][k], expected[1][k]) for k, result in enumerate(got))
    finally:
        stop.set()
        writer.join()
    assert torn == 0, f"{torn} of {2 * walks} walks saw a buffer half rewritten"
