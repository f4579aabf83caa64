"""Decoder twins: agreement on arbitrary batches, exactness against the writer's records, limits, and bad input.

The compiled kernel and the pure twin must give identical columns, stop points and errors (type and byte
position) for every input; the expected records come from ``kafkaseg.testing`` (an independent writer).
"""

from __future__ import annotations

import struct
from dataclasses import replace

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkaseg.decode import DecodeRequest, _kernel_py
from kafkaseg.decode.api import STOP_CORRUPT, STOP_END, STOP_LIMIT, STOP_PARTIAL, STOP_PAST_END, DecodeStats
from kafkaseg.errors import (
    CorruptBatchError,
    CrcMismatchError,
    DecompressionLimitError,
    KafkaSegError,
    UnsupportedCodecError,
    UnsupportedMagicError,
)
from kafkaseg.testing import Record, build_batch_v2, build_control_batch, build_legacy_entries, build_legacy_wrapper
from kafkaseg.wire.batch import iter_headers
from tests.oracle import kafka_python_records, kafkaseg_rows

try:
    from kafkaseg.decode import _kernel as _compiled
except ImportError:  # pragma: no cover
    _compiled = None

needs_compiled = pytest.mark.skipif(_compiled is None, reason="compiled kernel not built")
KERNELS = [pytest.param(_kernel_py, id="pure"), pytest.param(_compiled, id="compiled", marks=needs_compiled)]

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]


def outcome(kernel, buf, req):
    """Everything observable about one decode, for comparing the twins."""
    try:
        res = kernel.decode(buf, req)
    except KafkaSegError as err:
        return ("error", type(err).__name__, err.position, getattr(err, "path", None))
    stats = res.stats
    # timestamps as integers: a mutated timestamp can be valid for Arrow (and Spark) yet past Python's year 9999
    columns = {k: (v.cast(pa.int64()) if pa.types.is_timestamp(v.type) else v).to_pylist()
               for k, v in res.columns.items()}
    return ("ok", columns, res.num_rows, res.consumed, res.stop,
            res.next_batch_size, res.last_offset, stats.batches, stats.skipped_batches_out_of_range,
            stats.skipped_control_batches, stats.skipped_aborted_batches, stats.corrupt_batches,
            stats.corrupt_bytes, stats.problems)


# --- strategies ------------------------------------------------------------------------------------------------------
_bytes_or_none = st.one_of(st.none(), st.binary(max_size=40))
_header = st.tuples(st.text(max_size=8), _bytes_or_none)


@st.composite
def record_lists(draw, start_offset=0):
    n = draw(st.integers(1, 12))
    offset = start_offset + draw(st.integers(0, 3))
    ts = draw(st.integers(0, 2 ** 41))
    records = []
    for _ in range(n):
        records.append(Record(offset, ts + draw(st.integers(-5000, 5000)), draw(_bytes_or_none), draw(_bytes_or_none),
                              draw(st.lists(_header, max_size=3))))
        offset += 1 + draw(st.sampled_from([0, 0, 0, 1, 5]))
    return records


@st.composite
def log_buffers(draw):
    """A buffer of consecutive batches: v2 of any codec (some transactional, control, LogAppendTime), legacy."""
    parts, expected, offset = [], [], draw(st.integers(0, 10 ** 12))
    for _ in range(draw(st.integers(1, 5))):
        kind = draw(st.sampled_from(["v2", "v2", "v2", "control", "legacy"]))
        if kind == "control":
            batch = build_control_batch(offset, 1_700_000_000_000, draw(st.sampled_from([0, 1])), producer_id=7,
                                        producer_epoch=0)
            parts.append(batch.data)
            offset = batch.last_offset + 1
            continue
        records = draw(record_lists(start_offset=offset))
        if kind == "legacy":
            magic = draw(st.sampled_from([0, 1]))
            codec = draw(st.sampled_from(["none", "gzip", "snappy", "lz4"]))
            # legacy records have no headers, and magic 0 no timestamps
            records = [Record(r.offset, r.timestamp if magic else -1, r.key, r.value, []) for r in records]
            if codec == "none":
                data = b"".join(e.data for e in build_legacy_entries(records, magic))
            else:
                # now and then the inner entries in the other format (KAFKA-4298's cleaner output)
                inner_magic = draw(st.sampled_from([magic, magic, magic, 1 - magic]))
                if inner_magic == 0:
                    records = [Record(r.offset, -1, r.key, r.value, []) for r in records]
                data = build_legacy_wrapper(records, magic, codec, inner_magic=inner_magic).data
        else:
            log_append = draw(st.booleans())
            data = build_batch_v2(records, codec=draw(st.sampled_from(CODECS)),
                                  timestamp_type=1 if log_append else 0,
                                  log_append_time=1_800_000_000_000 if log_append else None,
                                  is_transactional=draw(st.booleans()), producer_id=7, producer_epoch=0,
                                  base_sequence=draw(st.sampled_from([-1, 0, 2 ** 31 - 3]))).data
        parts.append(data)
        expected.extend(records)
        offset = records[-1].offset + 1
    return b"".join(parts), expected


# --- twins agree, and both equal what was written --------------------------------------------------------------------
@needs_compiled
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=log_buffers(), include_headers=st.booleans(), include_metadata=st.booleans(),
       include_control=st.booleans(), max_records=st.sampled_from([1, 3, 1 << 40]),
       window=st.tuples(st.integers(0, 20), st.integers(0, 40)), include_key=st.booleans(),
       include_value=st.booleans())
def test_twins_agree_on_arbitrary_valid_logs(data, include_headers, include_metadata, include_control, max_records,
                                             window, include_key, include_value):
    buf, expected = data
    lo = struct.unpack_from(">q", buf)[0] + window[0]
    req = DecodeRequest(path="x.log", include_headers=include_headers, include_metadata=include_metadata,
                        include_control=include_control, max_records=max_records, min_offset=lo,
                        max_offset=lo + window[1], include_key=include_key, include_value=include_value)
    assert outcome(_kernel_py, buf, req) == outcome(_compiled, buf, req)


@pytest.mark.parametrize("kernel", KERNELS)
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(data=log_buffers(), include_key=st.booleans(), include_value=st.booleans())
def test_a_projection_without_key_or_value_leaves_them_null_and_the_rest_unchanged(kernel, data, include_key,
                                                                                    include_value):
    buf, _ = data
    full = kernel.decode(buf, DecodeRequest(include_headers=True, include_metadata=True))
    projected = kernel.decode(buf, DecodeRequest(include_headers=True, include_metadata=True,
                                                 include_key=include_key, include_value=include_value))
    assert (projected.num_rows, projected.consumed, projected.stop) == (full.num_rows, full.consumed, full.stop)
    for name, column in full.columns.items():
        kept = {"key": include_key, "value": include_value}.get(name, True)
        if kept:
            assert projected.columns[name].equals(column), name
        else:
            assert projected.columns[name].null_count == full.num_rows, name


@pytest.mark.parametrize("kernel", KERNELS)
def test_bytes_not_copied_do_not_count_toward_the_output_limit(kernel):
    records = [Record(i, 1_700_000_000_000 + i, b"k" * 10, b"v" * 1000, []) for i in range(50)]
    buf = b"".join(build_batch_v2(records[i:i + 5]).data for i in range(0, 50, 5))
    # 5 records (about 5 KiB) a batch: with values copied the limit stops after the first batch
    assert kernel.decode(buf, DecodeRequest(max_bytes=4000)).num_rows == 5
    res = kernel.decode(buf, DecodeRequest(max_bytes=4000, include_value=False))
    assert (res.num_rows, res.stop) == (50, STOP_END)


@pytest.mark.parametrize("kernel", KERNELS)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(data=log_buffers())
def test_decoded_records_equal_the_written_ones(kernel, data):
    buf, expected = data
    res = kernel.decode(buf, DecodeRequest(include_headers=True))
    assert res.stop == STOP_END and res.consumed == len(buf)
    rows = kafkaseg_rows(res)
    assert [r["offset"] for r in rows] == [r.offset for r in expected]
    assert [r["key"] for r in rows] == [r.key for r in expected]
    assert [r["value"] for r in rows] == [r.value for r in expected]
    assert [r["headers"] or [] for r in rows] == [list(r.headers) for r in expected]


@needs_compiled
@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=log_buffers(), mutations=st.lists(st.tuples(st.integers(0, 10 ** 6), st.integers(0, 255)), min_size=1,
                                              max_size=4),
       cut=st.one_of(st.none(), st.integers(0, 10 ** 6)), lenient=st.booleans(), verify_crc=st.booleans(),
       timestamp_unit=st.sampled_from(["us", "ms"]))
def test_mutated_bytes_only_raise_kafkaseg_errors_and_twins_agree(data, mutations, cut, lenient, verify_crc,
                                                                  timestamp_unit):
    """With verify_crc off, mutations reach the codecs and the record parser (with it on, the CRC stops them);
    a mutated timestamp of any size is taken as it is under timestamp_unit="ms"."""
    buf = bytearray(data[0])
    for position, value in mutations:
        buf[position % len(buf)] = value
    if cut is not None:
        buf = buf[:cut % (len(buf) + 1)]
    req = DecodeRequest(path="m.log", include_headers=True, include_metadata=True, include_control=True,
                        lenient=lenient, max_decompressed_bytes=1 << 20, verify_crc=verify_crc,
                        timestamp_unit=timestamp_unit)
    # Only KafkaSegError may escape (outcome() lets anything else propagate and fail the test).
    assert outcome(_kernel_py, bytes(buf), req) == outcome(_compiled, bytes(buf), req)


def chunked(kernel, buf, req, chunk):
    """Decode ``buf`` as a scan does: ``chunk`` bytes at a time (more when the kernel asks for more), telling the
    kernel how many bytes follow. Returns the offsets and the summed stats (as a comparable tuple)."""
    pos, offsets, stats, last = 0, [], DecodeStats(), req.check_offsets_after
    n = chunk
    while pos < len(buf):
        n = min(n, len(buf) - pos)
        res = kernel.decode(buf[pos:pos + n], replace(req, base_position=req.base_position + pos,
                                                      check_offsets_after=last, bytes_after=len(buf) - pos - n))
        assert 0 <= res.consumed <= n
        offsets += res.columns["offset"].to_pylist()
        stats.add(res.stats)
        last = res.last_offset
        pos += res.consumed
        if res.stop == STOP_PARTIAL:
            need = res.next_batch_size if res.next_batch_size > 0 else 17
            assert need > n - res.consumed  # it asks for more than it had: no endless loop
            if pos + need > len(buf):
                break  # a truncated tail: a scan reports it
            n = max(chunk, need)
        elif res.stop in (STOP_PAST_END, STOP_CORRUPT):
            break
        else:
            n = chunk
    return offsets, (stats.batches, stats.records, stats.corrupt_batches, stats.corrupt_bytes, stats.problems)


@st.composite
def framing_damage(draw):
    """A valid log, with one batch's magic byte or attributes (codec bits and flags) overwritten, and perhaps its
    length field or one more byte anywhere: what lenient reads must step over (or stop at) the same in both twins,
    whatever the buffers' boundaries."""
    buf, _ = draw(log_buffers())
    buf = bytearray(buf)
    headers = list(iter_headers(bytes(buf)))
    victim = draw(st.sampled_from(headers))
    if draw(st.booleans()):
        buf[victim.position + 16] = draw(st.integers(0, 255))
    else:
        attributes = victim.position + (22 if victim.magic == 2 else 17)
        buf[attributes] = draw(st.integers(0, 255))
    if draw(st.booleans()):
        buf[victim.position + 8:victim.position + 12] = struct.pack(">i", draw(st.integers(-20, 600)))
    if draw(st.booleans()):
        buf[draw(st.integers(0, len(buf) - 1))] = draw(st.integers(0, 255))
    return bytes(buf)


@needs_compiled
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(buf=framing_damage(), verify_crc=st.booleans(), chunk=st.integers(17, 400),
       max_batch_bytes=st.sampled_from([300, 128 << 20]))
def test_damaged_magic_or_attributes_in_lenient_mode_twins_agree_at_any_chunking(buf, verify_crc, chunk,
                                                                                  max_batch_bytes):
    req = DecodeRequest(path="r.log", base_position=64, include_headers=True, include_metadata=True,
                        include_control=True, lenient=True, verify_crc=verify_crc, max_decompressed_bytes=1 << 20,
                        max_batch_bytes=max_batch_bytes)
    whole = outcome(_kernel_py, buf, req)
    assert whole == outcome(_compiled, buf, req)
    one_shot = chunked(_kernel_py, buf, req, len(buf))
    assert chunked(_kernel_py, buf, req, chunk) == one_shot == chunked(_compiled, buf, req, chunk)


@pytest.mark.parametrize("kernel", KERNELS)
def test_a_flipped_bit_under_the_crc_is_always_caught(kernel):
    records = [Record(i, 1_700_000_000_000 + i, b"k%d" % i, b"v" * 50, [("h", b"x")]) for i in range(10)]
    good = build_batch_v2(records, codec="none").data
    for position in range(21, len(good)):  # CRC-32C covers attributes..end
        bad = bytearray(good)
        bad[position] ^= 0x01
        with pytest.raises(CrcMismatchError) as info:
            kernel.decode(bytes(bad), DecodeRequest(path="f.log", base_position=4096))
        assert info.value.position == 4096 and "f.log" in str(info.value)


# --- limits and resumption -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("kernel", KERNELS)
def test_output_limits_stop_on_batch_boundaries_and_resume_exactly(kernel):
    batches = [build_batch_v2([Record(o, 1000 + o, None, b"x" * 100, []) for o in range(b * 10, b * 10 + 10)],
                              codec="lz4").data for b in range(20)]
    buf = b"".join(batches)
    seen, pos = [], 0
    while pos < len(buf):
        res = kernel.decode(memoryview(buf)[pos:], DecodeRequest(max_records=25, check_offsets_after=seen[-1]
                                                                 if seen else -(1 << 63)))
        assert res.num_rows <= 25 + 10 - 1  # the limit is checked after whole batches
        seen.extend(res.columns["offset"].to_pylist())
        pos += res.consumed
        assert res.stop in (STOP_LIMIT, STOP_END)
    assert seen == list(range(200))
    res = kernel.decode(buf, DecodeRequest(max_bytes=1000))
    assert res.stop == STOP_LIMIT and res.num_rows == 10


@pytest.mark.parametrize("kernel", KERNELS)
def test_offset_window_skips_batches_without_decompressing_and_stops_past_the_end(kernel):
    batches = [build_batch_v2([Record(o, 1000, None, b"v", []) for o in range(b * 10, b * 10 + 10)],
                              codec="zstd").data for b in range(10)]
    res = kernel.decode(b"".join(batches), DecodeRequest(min_offset=35, max_offset=52))
    assert res.columns["offset"].to_pylist() == list(range(35, 52))
    assert res.stats.skipped_batches_out_of_range == 3
    assert res.stop == STOP_PAST_END and res.stats.batches == 3
    # the batch the read stopped at (offsets 60-69): where it starts, and (with consumed) its size
    assert (res.stop_position, res.consumed) == (sum(map(len, batches[:6])), sum(map(len, batches[:7])))


@pytest.mark.parametrize("kernel", KERNELS)
def test_read_committed_drops_aborted_transactional_batches_only(kernel):
    def txn(base, pid):
        return build_batch_v2([Record(o, 1, None, b"t", []) for o in range(base, base + 3)], is_transactional=True,
                              producer_id=pid, producer_epoch=0, base_sequence=0).data
    buf = (txn(0, 1) + txn(3, 2) + build_control_batch(6, 1, 0, producer_id=1, producer_epoch=0).data
           + build_control_batch(7, 1, 1, producer_id=2, producer_epoch=0).data)
    res = kernel.decode(buf, DecodeRequest(aborted=((1, 0, 6),)))
    assert res.columns["offset"].to_pylist() == [3, 4, 5]
    assert res.stats.skipped_aborted_batches == 1 and res.stats.skipped_control_batches == 2
    res = kernel.decode(buf, DecodeRequest(aborted=((1, 0, 6),), include_control=True, include_metadata=True))
    assert res.columns["offset"].to_pylist() == [3, 4, 5, 6, 7]
    assert res.columns["isControl"].to_pylist() == [False] * 3 + [True] * 2
    assert res.columns["key"].to_pylist()[3:] == [struct.pack(">hh", 0, 0), struct.pack(">hh", 0, 1)]


# --- bad input: each a located kafkaseg error, or a counted skip when lenient -----------------------------------------
def _three_batches():
    return [build_batch_v2([Record(o, 5000 + o, b"k", b"value", [])
                            for o in range(b * 5, b * 5 + 5)]).data for b in range(3)]


@pytest.mark.parametrize("kernel", KERNELS)
def test_a_batch_past_the_end_offset_followed_by_lower_offsets_is_a_corrupt_offset_field(kernel):
    """A batch at or past ``max_offset`` ends the read (the next segment's records, or the end offset), but not when
    the batch after it starts lower: its baseOffset, which the v2 CRC does not cover, is corrupt, and stopping
    would drop the rest of the segment unseen."""
    batches = _three_batches()
    flipped = bytearray(batches[0])
    flipped[2] ^= 1  # baseOffset += 2**40
    buf = bytes(flipped) + batches[1] + batches[2]
    with pytest.raises(CorruptBatchError, match="offset field the CRC does not cover") as info:
        kernel.decode(buf, DecodeRequest(path="s.log", base_position=100, max_offset=15))
    assert info.value.position == 100
    res = kernel.decode(buf, DecodeRequest(max_offset=15, lenient=True))
    assert res.columns["offset"].to_pylist() == list(range(5, 15)) and res.stats.corrupt_batches == 1
    # the next header not handed over yet: the batch is decoded again with it (never a silent stop)
    res = kernel.decode(bytes(flipped), DecodeRequest(max_offset=15, bytes_after=len(batches[1])))
    assert res.stop == STOP_PARTIAL and res.next_batch_size == len(flipped) + 17 and res.consumed == 0
    # a batch past the end offset followed by higher offsets, or by nothing, still ends the read
    for data in (b"".join(batches), b"".join(batches[:2])):
        res = kernel.decode(data, DecodeRequest(max_offset=5))
        assert res.stop == STOP_PAST_END and res.columns["offset"].to_pylist() == list(range(5))


@pytest.mark.parametrize("kernel", KERNELS)
def test_bad_crc_raises_with_file_and_position_or_is_skipped_and_counted(kernel):
    batches = _three_batches()
    bad = bytearray(batches[1])
    bad[-2] ^= 0xFF  # inside the last record's value (the last byte is its header count)
    buf = batches[0] + bytes(bad) + batches[2]
    with pytest.raises(CrcMismatchError, match=r"seg\.log @ byte %d" % (100 + len(batches[0]))):
        kernel.decode(buf, DecodeRequest(path="seg.log", base_position=100))
    res = kernel.decode(buf, DecodeRequest(path="seg.log", base_position=100, lenient=True))
    assert res.columns["offset"].to_pylist() == list(range(0, 5)) + list(range(10, 15))
    assert res.stats.corrupt_batches == 1 and res.stats.corrupt_bytes == len(bad)
    assert res.stats.problems[0][:2] == ("seg.log", 100 + len(batches[0]))
    # with verifyCrc off the same bytes decode (the flipped byte is in the last value)
    assert kernel.decode(buf, DecodeRequest(verify_crc=False)).num_rows == 15


@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("codec", ["none", "lz4"])
def test_lenient_read_skips_a_batch_that_breaks_halfway_whole(kernel, codec):
    """A batch whose fourth record is malformed: its first three records parse before the error, and none of them
    may reach the output (a skipped batch is skipped whole, in every column: keys with a null, headers, metadata)."""
    import crc32c

    def batch(first):
        return build_batch_v2([Record(o, 5000 + o, None if o % 2 else b"k%d" % o, b"v" * o, [("h", b"x")] if o % 3
                                      else []) for o in range(first, first + 5)], codec=codec).data

    good0, good2 = batch(0), batch(10)
    bad = build_batch_v2([Record(o, 5000 + o, b"k", b"value", []) for o in range(5, 10)]).data
    bad = bytearray(bad)
    # each record: length 12 (one zig-zag byte, 24), attributes, ts delta, offset delta, key length, ...
    rec = 61 + 3 * 13  # the fourth record
    assert bad[rec] == 24 and bad[rec + 4] == 2  # key length 1 (zig-zag 2)
    bad[rec + 4] = 0x78  # key length 60: runs past the record
    bad[17:21] = struct.pack(">I", crc32c.crc32c(bytes(bad[21:])))
    buf = good0 + bytes(bad) + good2
    req = DecodeRequest(lenient=True, include_headers=True, include_metadata=True)
    with pytest.raises(CorruptBatchError, match="key length 60"):
        kernel.decode(buf, DecodeRequest(include_headers=True))
    res = kernel.decode(buf, req)
    assert res.columns["offset"].to_pylist() == list(range(0, 5)) + list(range(10, 15))
    assert res.columns["key"].to_pylist() == [None if o % 2 else b"k%d" % o for o in list(range(5)) + list(range(10, 15))]
    assert res.columns["headers"].to_pylist() == [[{"key": "h", "value": b"x"}] if o % 3 else None
                                                  for o in list(range(5)) + list(range(10, 15))]
    assert len(res.columns["batchOffset"]) == 10 and res.stats.corrupt_batches == 1
    assert outcome(kernel, buf, req) == outcome(_kernel_py, buf, req)


@pytest.mark.parametrize("kernel", KERNELS)
def test_absurd_or_past_the_end_lengths_never_allocate(kernel):
    batches = _three_batches()
    absurd = bytearray(batches[1])
    absurd[8:12] = struct.pack(">i", 2 ** 31 - 1)
    buf = batches[0] + bytes(absurd)
    with pytest.raises(CorruptBatchError, match="exceeds maxBatchBytes") as info:
        kernel.decode(buf, DecodeRequest(path="a.log"))
    assert info.value.position == len(batches[0])
    res = kernel.decode(buf, DecodeRequest(lenient=True))
    assert res.stop == STOP_CORRUPT and res.num_rows == 5 and res.stats.corrupt_bytes == len(absurd)
    # a length within bounds but past the buffer: a partial batch to be completed by reading more
    past = bytearray(batches[1])
    past[8:12] = struct.pack(">i", 100_000)
    res = kernel.decode(batches[0] + bytes(past), DecodeRequest())
    assert res.stop == STOP_PARTIAL and res.next_batch_size == 100_012 and res.consumed == len(batches[0])
    # sizes below the format's minimum
    small = bytearray(batches[1])
    small[8:12] = struct.pack(">i", 10)
    with pytest.raises(CorruptBatchError, match="below the minimum"):
        kernel.decode(bytes(small), DecodeRequest())


@pytest.mark.parametrize("kernel", KERNELS)
def test_truncated_tail_is_partial_not_an_error(kernel):
    batches = _three_batches()
    buf = b"".join(batches)
    for cut in (len(buf) - 1, len(buf) - len(batches[2]) + 5, len(buf) - len(batches[2]) + 20):
        res = kernel.decode(buf[:cut], DecodeRequest())
        assert res.stop == STOP_PARTIAL and res.num_rows == 10 and res.consumed == len(batches[0]) + len(batches[1])


@pytest.mark.parametrize("kernel", KERNELS)
def test_unknown_magic_and_codec(kernel):
    batch = bytearray(_three_batches()[0])
    batch[16] = 3
    with pytest.raises(UnsupportedMagicError, match="unknown magic 3"):
        kernel.decode(bytes(batch), DecodeRequest(path="m.log"))
    # codec 5 with a valid CRC: only the codec is wrong
    records = [Record(0, 1, None, b"v", [])]
    good = bytearray(build_batch_v2(records, codec="gzip").data)
    good[22] = (good[22] & ~0x07) | 0x05
    import crc32c

    good[17:21] = struct.pack(">I", crc32c.crc32c(bytes(good[21:])))
    with pytest.raises(UnsupportedCodecError) as info:
        kernel.decode(bytes(good), DecodeRequest(path="c.log", base_position=8))
    assert info.value.position == 8 and info.value.path == "c.log"


@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("wrapper_magic,log_append", [(0, False), (1, False), (1, True)])  # v0: no timestamp type
@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4"])
def test_wrapper_and_inner_magic_may_differ_as_kafka_consumers_allow(kernel, wrapper_magic, log_append, codec):
    """KAFKA-4298: 0.10.0's log cleaner wrote v1 wrappers around v0 messages (and the reverse). Kafka's consumers
    read them (DeepRecordsIterator checks matching magic only for produce requests): offsets follow the wrapper's
    rule, a v0 record has no timestamp, a v1 record takes a LogAppendTime wrapper's timestamp or else its own,
    and the timestamp type is the wrapper's."""
    inner_magic = 1 - wrapper_magic
    records = [Record(100 + i, 1_600_000_000_000 + i, b"k%d" % i, b"v%d" % i, []) for i in range(4)]
    wrapper = build_legacy_wrapper(records, wrapper_magic, codec, inner_magic=inner_magic,
                                   timestamp_type=1 if log_append else 0,
                                   log_append_time=1_700_000_000_000 if log_append else None)
    head = build_legacy_entries([Record(99, 1_500_000_000_000, None, b"before", [])], wrapper_magic)[0].data
    res = kernel.decode(head + wrapper.data, DecodeRequest(path="mixed.log", include_metadata=True))
    assert res.stop == STOP_END
    rows = kafkaseg_rows(res)
    assert [r["offset"] for r in rows] == [99, 100, 101, 102, 103]
    assert [r["value"] for r in rows] == [b"before", b"v0", b"v1", b"v2", b"v3"]
    if inner_magic == 0:
        expected_ts = [-1] * 4
    else:
        expected_ts = [1_700_000_000_000 if log_append else r.timestamp for r in records]
    assert [r["timestamp"] for r in rows[1:]] == expected_ts
    expected_type = -1 if wrapper_magic == 0 else (1 if log_append else 0)
    assert {r["timestampType"] for r in rows[1:]} == {expected_type}
    assert set(res.columns["magic"].to_pylist()[1:]) == {wrapper_magic}


@pytest.mark.parametrize("kernel", KERNELS)
def test_an_inner_message_with_a_non_legacy_magic_is_corruption(kernel):
    records = [Record(5, 1_600_000_000_000, None, b"v", [])]
    wrapper = build_legacy_wrapper(records, 1, "gzip")
    # rebuild the wrapper around an inner entry whose magic byte says 2
    from kafkaseg.testing import build_legacy_message, compress

    inner = bytearray(build_legacy_message(0, 1, None, b"v", timestamp=1))
    inner[16] = 2
    bad = build_legacy_message(5, 1, None, compress("gzip", bytes(inner), magic=1), timestamp=1, attributes=1)
    with pytest.raises(CorruptBatchError, match="magic 2 is not a legacy magic") as info:
        kernel.decode(bad, DecodeRequest(path="bad.log", verify_crc=False, base_position=40))
    assert info.value.position == 40 and info.value.path == "bad.log"
    assert kernel.decode(wrapper.data, DecodeRequest()).num_rows == 1


def _bad_magic(batch: bytes, magic: int = 3) -> bytes:
    bad = bytearray(batch)
    bad[16] = magic
    return bytes(bad)


@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("verify_crc", [True, False])
def test_lenient_read_resynchronises_after_an_unknown_magic_with_an_intact_length(kernel, verify_crc):
    batches = _three_batches() + [build_legacy_entries([Record(15, 5015, b"k", b"legacy", [])], 1)[0].data]
    bad = _bad_magic(batches[1])
    buf = batches[0] + bad + batches[2] + batches[3]
    with pytest.raises(UnsupportedMagicError, match="unknown magic 3") as info:  # strict: as before
        kernel.decode(buf, DecodeRequest(path="seg.log", base_position=100, verify_crc=verify_crc))
    assert info.value.position == 100 + len(batches[0]) and info.value.path == "seg.log"
    req = DecodeRequest(path="seg.log", base_position=100, lenient=True, verify_crc=verify_crc)
    res = kernel.decode(buf, req)
    assert res.columns["offset"].to_pylist() == list(range(5)) + list(range(10, 16))
    assert res.stop == STOP_END and res.consumed == len(buf) and res.last_offset == 15
    assert res.stats.corrupt_batches == 1 and res.stats.corrupt_bytes == len(bad)
    (path, position, message), = res.stats.problems
    assert (path, position) == ("seg.log", 100 + len(batches[0]))
    assert message.startswith("unknown magic 3") and f"resynchronised at byte {100 + len(batches[0]) + len(bad)}" \
        in message
    assert outcome(kernel, buf, req) == outcome(_kernel_py, buf, req)
    # two bad batches in a row: the first one's length leads to nothing plausible, so the rest is skipped
    res = kernel.decode(batches[0] + bad + _bad_magic(batches[2], 0xFF) + batches[3], req)
    assert res.stop == STOP_CORRUPT and res.columns["offset"].to_pylist() == list(range(5))
    assert res.stop_position == len(batches[0])  # where the framing it could not step over starts
    assert res.stats.corrupt_batches == 1 and res.stats.corrupt_bytes == len(buf) - len(batches[0])


@pytest.mark.parametrize("kernel", KERNELS)
def test_lenient_read_resynchronises_after_a_size_below_the_minimum(kernel):
    batches = _three_batches()
    small = bytearray(batches[1])
    small[8:12] = struct.pack(">i", 30)  # below v2's 49: the 42 bytes it declares are followed by garbage
    res = kernel.decode(batches[0] + bytes(small) + batches[2], DecodeRequest(lenient=True))
    assert res.stop == STOP_CORRUPT and res.columns["offset"].to_pylist() == list(range(5))
    assert res.stats.corrupt_batches == 1 and res.stats.corrupt_bytes == len(small) + len(batches[2])
    # the same size field on a batch that really is that short (a hand-made 42-byte entry) resynchronises
    short = _bad_magic(batches[1])[:17] + bytes(25)
    short = short[:8] + struct.pack(">i", 30) + short[12:]
    res = kernel.decode(batches[0] + short + batches[2], DecodeRequest(lenient=True))
    assert res.stop == STOP_END and res.columns["offset"].to_pylist() == list(range(5)) + list(range(10, 15))
    assert res.stats.corrupt_batches == 1 and res.stats.corrupt_bytes == 42


@pytest.mark.parametrize("kernel", KERNELS)
def test_lenient_read_stops_counted_when_the_declared_length_lands_on_garbage(kernel):
    batches = _three_batches()
    bad = bytearray(_bad_magic(batches[1]))
    bad[8:12] = struct.pack(">i", len(bad) - 12 + 7)  # seven bytes into the next batch
    buf = batches[0] + bytes(bad) + batches[2]
    res = kernel.decode(buf, DecodeRequest(path="g.log", lenient=True))
    assert res.stop == STOP_CORRUPT and res.consumed == len(buf)
    assert res.columns["offset"].to_pylist() == list(range(5))
    assert res.stats.corrupt_batches == 1 and res.stats.corrupt_bytes == len(bad) + len(batches[2])
    assert "no valid batch at its declared end" in res.stats.problems[0][2]
    # past the end of the data, and beyond maxBatchBytes: the same
    for size in (len(bad) + len(batches[2]), 2 ** 31 - 1):
        bad[8:12] = struct.pack(">i", size)
        res = kernel.decode(batches[0] + bytes(bad) + batches[2], DecodeRequest(lenient=True))
        assert res.stop == STOP_CORRUPT and res.num_rows == 5
        assert res.stats.corrupt_batches == 1 and res.stats.corrupt_bytes == len(bad) + len(batches[2])
    # the rest of the data (bytes_after: what a scan has not handed over yet) is counted too
    res = kernel.decode(batches[0] + bytes(bad), DecodeRequest(lenient=True, bytes_after=1000))
    assert res.stop == STOP_CORRUPT and res.stats.corrupt_bytes == len(bad) + 1000


@pytest.mark.parametrize("kernel", KERNELS)
def test_lenient_resynchronisation_checks_the_next_batch_crc_unless_crcs_are_off(kernel):
    batches = _three_batches()
    flipped = bytearray(batches[2])
    flipped[-2] ^= 0xFF  # inside the last record's value: only the CRC notices
    buf = batches[0] + _bad_magic(batches[1]) + bytes(flipped)
    res = kernel.decode(buf, DecodeRequest(lenient=True))
    assert res.stop == STOP_CORRUPT and res.num_rows == 5
    assert res.stats.corrupt_batches == 1 and res.stats.corrupt_bytes == len(batches[1]) + len(flipped)
    # verifyCrc=false trusts a plausible header there, as it trusts every batch's header
    res = kernel.decode(buf, DecodeRequest(lenient=True, verify_crc=False))
    assert res.stop == STOP_END and res.columns["offset"].to_pylist() == list(range(5)) + list(range(10, 15))
    assert res.stats.corrupt_batches == 1 and res.stats.corrupt_bytes == len(batches[1])


@pytest.mark.parametrize("kernel", KERNELS)
def test_lenient_read_of_a_bad_last_batch_counts_it_and_ends_normally(kernel):
    batches = _three_batches()
    buf = batches[0] + batches[1] + _bad_magic(batches[2], 0x7F)
    res = kernel.decode(buf, DecodeRequest(lenient=True))
    assert res.stop == STOP_END and res.consumed == len(buf) and res.last_offset == 9
    assert res.columns["offset"].to_pylist() == list(range(10))
    assert res.stats.corrupt_batches == 1 and res.stats.corrupt_bytes == len(batches[2])
    # when the buffer is not all there is, the kernel needs to see what follows before deciding
    res = kernel.decode(buf, DecodeRequest(lenient=True, bytes_after=200))
    assert res.stop == STOP_PARTIAL and res.consumed == len(batches[0]) + len(batches[1])
    assert res.next_batch_size == len(batches[2]) + 17 and res.stats.corrupt_batches == 0 and res.num_rows == 10


@pytest.mark.parametrize("kernel", KERNELS)
def test_lenient_resynchronisation_past_the_buffer_asks_for_the_bytes_it_needs(kernel):
    """A scan hands the kernel chunks: when the bad batch or the one after it runs past the chunk, the kernel asks
    for exactly what it needs (STOP_PARTIAL) and decides on the next call as if it had seen everything at once."""
    batches = _three_batches()
    buf = batches[0] + _bad_magic(batches[1]) + batches[2]
    start = len(batches[0])
    for cut in (start + 20, start + len(batches[1]), start + len(batches[1]) + 10, len(buf) - 1):
        res = kernel.decode(buf[:cut], DecodeRequest(lenient=True, bytes_after=len(buf) - cut))
        assert res.stop == STOP_PARTIAL and res.consumed == start and res.num_rows == 5
        assert res.stats.corrupt_batches == 0 and res.stats.corrupt_bytes == 0 and not res.stats.problems
        expected_need = len(batches[1]) + (17 if cut < start + len(batches[1]) + 17 else len(batches[2]))
        assert res.next_batch_size == expected_need
    whole = kernel.decode(buf, DecodeRequest(lenient=True))
    assert whole.columns["offset"].to_pylist() == list(range(5)) + list(range(10, 15))
    for chunk in range(17, len(buf) + 1):
        assert chunked(kernel, buf, DecodeRequest(lenient=True), chunk) == (
            whole.columns["offset"].to_pylist(), (2, 10, 1, len(batches[1]), whole.stats.problems))
    # the bad batch and the next one must fit in one read of at most 12 + maxBatchBytes, else resync is refused,
    # whatever the chunking
    for chunk in (17, 100, len(buf)):
        offsets, stats = chunked(kernel, buf, DecodeRequest(lenient=True, max_batch_bytes=200), chunk)
        assert offsets == list(range(5)) and stats[2:4] == (1, len(batches[1]) + len(batches[2]))
        offsets, stats = chunked(kernel, buf, DecodeRequest(lenient=True, max_batch_bytes=300), chunk)
        assert offsets == list(range(5)) + list(range(10, 15)) and stats[2:4] == (1, len(batches[1]))


@pytest.mark.parametrize("kernel", KERNELS)
def test_non_monotonic_offsets_are_corruption(kernel):
    batches = _three_batches()
    buf = batches[1] + batches[0]
    with pytest.raises(CorruptBatchError, match="non-monotonic") as info:
        kernel.decode(buf, DecodeRequest(path="n.log"))
    assert info.value.position == len(batches[1])
    res = kernel.decode(buf, DecodeRequest(lenient=True))
    assert res.num_rows == 5 and res.stats.corrupt_batches == 1


# --- legacy wrappers whose inner offsets do not increase --------------------------------------------------------------
def _legacy_stamp(magic, i):
    return 1_600_000_000_000 + i if magic else -1


def _wrapper_with_inner_offsets(offsets, magic, codec="gzip"):
    """A compressed wrapper whose inner records have ``offsets``, in this order, as DeepRecordsIterator computes
    them (v1: relative to the first, the wrapper at the last; v0: absolute)."""
    records = [Record(o, _legacy_stamp(magic, i), b"k%d" % i, b"v%d" % i, []) for i, o in enumerate(offsets)]
    return build_legacy_wrapper(records, magic, codec).data


def _entry(offset, magic, value):
    return build_legacy_entries([Record(offset, _legacy_stamp(magic, offset), None, value, [])], magic)[0].data


def _compared(rows):
    return [(r["offset"], r["timestamp"], r["timestampType"], r["key"], r["value"]) for r in rows]


@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4"])
def test_legacy_inner_offsets_with_gaps_decode_as_kafka_python_does(kernel, magic, codec):
    """The log cleaner rewrites a legacy wrapper's retained records at their own offsets (MemoryRecords.filterTo,
    a v1 wrapper's relative offsets from the first retained one), so inner offsets with gaps are what compaction
    leaves: read as Kafka's consumers read them."""
    buf = _entry(9, magic, b"before") + _wrapper_with_inner_offsets([10, 13, 20], magic, codec)
    res = kernel.decode(buf, DecodeRequest(path="gaps.log"))
    assert _compared(kafkaseg_rows(res)) == _compared(kafka_python_records(buf))
    assert [r["offset"] for r in kafkaseg_rows(res)] == [9, 10, 13, 20] and res.last_offset == 20


@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("inner_offsets", [
    [10, 12, 11],  # back: the v1 wrapper's offset (11, its last inner one) is below one of its records
    [10, 10, 11],  # the same offset twice
    [7, 7, 7],
    [4, 6, 7],  # increasing, but from below the entry before the wrapper (5)
])
def test_legacy_inner_offsets_that_repeat_or_go_back_are_corruption(kernel, magic, inner_offsets):
    """Kafka's DeepRecordsIterator does not check that a wrapper's inner offsets increase: the Java consumer skips,
    unsaid, a record below the next offset it expects, kafka-python returns it. Returning them would put an
    offset in the results twice or out of order, skipping some would lose them unsaid, and no broker writes such
    a wrapper: a strict read raises at the wrapper, a lenient one skips it whole and counts it. Only dump's
    ``allow_unordered_inner_offsets`` takes them as stored, record for record as kafka-python does."""
    head, wrapper, tail = (_entry(5, magic, b"before"), _wrapper_with_inner_offsets(inner_offsets, magic),
                           _entry(13, magic, b"after"))
    buf = head + wrapper + tail
    expected = kafka_python_records(buf)
    offsets = [r["offset"] for r in expected]
    assert offsets == [5, *inner_offsets, 13] and any(b <= a for a, b in zip(offsets, offsets[1:]))

    strict = DecodeRequest(path="back.log", base_position=100)
    with pytest.raises(CorruptBatchError, match="inner offset .* of the compressed legacy wrapper follows") as info:
        kernel.decode(buf, strict)
    assert info.value.position == 100 + len(head) and info.value.path == "back.log"

    lenient = DecodeRequest(lenient=True)
    res = kernel.decode(buf, lenient)
    assert [r["value"] for r in kafkaseg_rows(res)] == [b"before", b"after"]
    assert (res.stats.corrupt_batches, res.stats.corrupt_bytes) == (1, len(wrapper))

    as_stored = DecodeRequest(allow_unordered_inner_offsets=True, include_metadata=True)
    res = kernel.decode(buf, as_stored)
    assert _compared(kafkaseg_rows(res)) == _compared(expected)
    assert res.last_offset == 13
    assert kernel.decode(wrapper, as_stored).last_offset == max(inner_offsets)
    if _compiled is not None:
        for req in (strict, lenient, as_stored):
            assert outcome(_compiled, buf, req) == outcome(_kernel_py, buf, req)


@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_decompression_bomb_is_bounded(kernel, codec):
    records = [Record(i, 1, None, b"\0" * 1_000_000, []) for i in range(8)]  # 8 MB that compresses to little
    batch = build_batch_v2(records, codec=codec).data
    assert len(batch) < 1_000_000
    with pytest.raises(DecompressionLimitError) as info:
        kernel.decode(batch, DecodeRequest(path="bomb.log", max_decompressed_bytes=1 << 20))
    assert info.value.path == "bomb.log" and info.value.position == 0
    assert kernel.decode(batch, DecodeRequest(max_decompressed_bytes=16 << 20)).num_rows == 8


@pytest.mark.parametrize("kernel", KERNELS)
def test_empty_buffer_and_zero_record_batches(kernel):
    res = kernel.decode(b"", DecodeRequest())
    assert (res.num_rows, res.consumed, res.stop) == (0, 0, STOP_END)
    empty = build_batch_v2([], base_offset=10, last_offset=14, producer_id=3, producer_epoch=0).data
    res = kernel.decode(empty, DecodeRequest())
    assert (res.num_rows, res.consumed, res.last_offset) == (0, len(empty), 14)


def test_kernel_selection_env_and_fallback_warning(tmp_path):
    """KAFKASEG_PURE=1 forces the twin; a missing compiled module warns once and falls back."""
    import os
    import subprocess
    import sys

    code = "import kafkaseg.decode as d; print(d.IMPLEMENTATION)"
    env = dict(os.environ, KAFKASEG_PURE="1", PYTHONPATH=os.getcwd())
    assert subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          check=True).stdout.strip() == "python"
    # Hide the compiled module with an import hook and check the one-time warning.
    hide = ("import sys, warnings\n"
            "class Block:\n"
            "    def find_spec(self, name, path=None, target=None):\n"
            "        if name == 'kafkaseg.decode._kernel': raise ImportError('hidden for the test')\n"
            "sys.meta_path.insert(0, Block())\n"
            "with warnings.catch_warnings(record=True) as caught:\n"
            "    warnings.simplefilter('always')\n"
            "    import kafkaseg.decode as d\n"
            "    import kafkaseg.decode\n"
            "print(d.IMPLEMENTATION, len([w for w in caught if 'pure-Python decoder' in str(w.message)]))\n")
    env = dict(os.environ, PYTHONPATH=os.getcwd())
    env.pop("KAFKASEG_PURE", None)
    out = subprocess.run([sys.executable, "-c", hide], env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["python", "1"]


def test_the_compiled_modules_are_optional_at_build_time(monkeypatch):
    """A machine without a working C compiler still installs kafkaseg (with the pure-Python twin, warned about
    at import): setup.py marks every extension optional, after cythonize, which drops the flag it is given."""
    import runpy
    from pathlib import Path

    import setuptools

    captured = {}
    monkeypatch.setattr(setuptools, "setup", lambda **kw: captured.update(kw))
    monkeypatch.delenv("KAFKASEG_NO_EXTENSION", raising=False)
    monkeypatch.chdir(Path(__file__).resolve().parents[1])
    runpy.run_path("setup.py")
    names = sorted(e.name for e in captured["ext_modules"])
    assert names == ["kafkaseg.decode._kernel", "kafkaseg.storage._mapped", "kafkaseg.wire._walk"]
    assert all(e.optional for e in captured["ext_modules"])


@pytest.mark.parametrize("kernel", KERNELS)
def test_record_offset_below_its_batch_base_is_corruption(kernel):
    """A record whose offsetDelta is negative (offset below the batch's base offset) is refused, even with CRC
    checks off and even as the first record of a buffer."""
    from kafkaseg.testing.writer import assemble_batch_v2, encode_record

    payload = encode_record(-3, 0, None, b"x", []) + encode_record(1, 0, None, b"y", [])
    batch = assemble_batch_v2(base_offset=100, partition_leader_epoch=0, attributes=0, last_offset_delta=1,
                              base_timestamp=1, max_timestamp=1, producer_id=-1, producer_epoch=-1,
                              base_sequence=-1, records_count=2, payload=payload)
    with pytest.raises(CorruptBatchError, match="out of order"):
        kernel.decode(batch, DecodeRequest(path="neg.log", verify_crc=False))


@needs_compiled
def test_freed_output_blocks_are_reused_within_a_fixed_bound():
    """The compiled kernel keeps blocks Arrow has released for the next call, at most 32 blocks and 64 MiB, so
    reading many buffers neither grows memory nor allocates afresh for every call."""
    records = [Record(i, 1, b"k%d" % i, b"v" * 3000, []) for i in range(400)]
    buf = build_batch_v2(records).data  # about 1.2 MB of output per call
    for _ in range(50):
        result = _compiled.decode(buf, DecodeRequest())
        assert result.num_rows == 400
        del result
        blocks, nbytes = _compiled._output_cache_info()
        assert blocks <= 32 and nbytes <= 64 << 20
    assert blocks > 0  # released blocks were kept ...
    held = _compiled.decode(buf, DecodeRequest())
    assert _compiled._output_cache_info()[0] < blocks  # ... and the next call took them back
    assert held.columns["value"].to_pylist() == [r.value for r in records]


@needs_compiled
def test_output_cache_keeps_large_blocks_when_small_ones_fill_it():
    """Small freed blocks (validity bytes, key offsets) must not crowd out the value blocks every call needs again:
    a cache full of them made each decode write its values into fresh pages."""
    _compiled._output_cache_clear()
    small = build_batch_v2([Record(i, 0, None, b"v") for i in range(20_000)]).data  # 80-160 KiB columns
    held = [_compiled.decode(small, DecodeRequest()) for _ in range(12)]
    del held  # dozens of small blocks come back at once and fill every slot
    blocks, small_bytes = _compiled._output_cache_info()
    assert blocks == 32 and small_bytes <= 16 << 20
    big = build_batch_v2([Record(i, 0, b"k", bytes(3000)) for i in range(1000)]).data  # ~3 MB of values
    result = _compiled.decode(big, DecodeRequest())
    del result
    blocks, nbytes = _compiled._output_cache_info()
    assert blocks <= 32 and nbytes <= 64 << 20
    assert nbytes > small_bytes + (2 << 20)  # the values block was kept: smaller ones made room for it
    again = _compiled.decode(big, DecodeRequest())
    assert _compiled._output_cache_info()[1] < nbytes and again.num_rows == 1000


@needs_compiled
@pytest.mark.parametrize("codec", ["none", "gzip"])
def test_rows_of_a_batch_survive_its_columns_growing_into_cached_blocks(codec):
    """A batch keeps 150,000 rows: its fixed-width columns grow mid-batch (every 65,536 rows) while its rows are not
    yet committed. Growing into a cached block must keep them, as realloc did (found in review: offsets of
    262,144 rows came back wrong on the second read in one process)."""
    N = 150_000

    def batch(base, codec=codec):
        return build_batch_v2([Record(base + i, 1_600_000_000_000, None, b"") for i in range(N)], codec=codec).data

    _compiled._output_cache_clear()
    warm = [_compiled.decode(batch(10**9, c), DecodeRequest()) for c in ("none", codec)]
    del warm  # their freed blocks, of several sizes, hold other offsets
    assert _compiled._output_cache_info()[0] > 0
    result = _compiled.decode(batch(0), DecodeRequest())
    assert result.columns["offset"].to_pylist() == list(range(N))
    assert set(result.columns["timestamp"].cast("int64").to_pylist()) == {1_600_000_000_000_000}
    assert result.columns["value"].null_count == 0 and result.columns["key"].null_count == N


@pytest.mark.parametrize("kernel", KERNELS)
def test_a_timestamp_past_the_microsecond_range_says_what_it_likely_is(kernel):
    """A record stamped in nanoseconds is valid to a broker but does not fit Arrow's (and Spark's) microseconds."""
    buf = build_batch_v2([Record(0, 1_700_000_000_000_000_000, None, b"v", [])]).data
    with pytest.raises(CorruptBatchError, match=r"1700000000000000000 ms is outside .*nanoseconds\?"):
        kernel.decode(buf, DecodeRequest())


@pytest.mark.parametrize("kernel", KERNELS)
def test_a_timestamp_out_of_range_is_named_as_the_record_has_it(kernel):
    """Base timestamp plus delta, as Java sums them: the error names the record's timestamp, not the delta; and a
    record below the read's start whose part is out of range does not fail the records read."""
    buf = build_batch_v2([Record(0, 1_700_000_000_000, None, b"a", []), Record(1, 1 << 62, None, b"b", [])]).data
    with pytest.raises(CorruptBatchError, match=f"timestamp {1 << 62} ms is outside"):
        kernel.decode(buf, DecodeRequest())
    far = build_batch_v2([Record(0, -(1 << 62), None, b"a", []), Record(1, 1_700_000_000_000, None, b"b", [])]).data
    result = kernel.decode(far, DecodeRequest(min_offset=1))
    assert result.columns["timestamp"].cast("int64").to_pylist() == [1_700_000_000_000_000]


@pytest.mark.parametrize("kernel", KERNELS)
def test_milliseconds_as_they_are_with_timestamp_unit_ms(kernel):
    """timestamp_unit="ms" (the CLI, and timestampUnit=ms): Kafka's values as they are, a producer's nanoseconds
    and Long.MAX included; legacy messages too."""
    big = (1 << 63) - 1
    records = [Record(0, 1_700_000_000_000, None, b"a", []), Record(1, 1_700_000_000_000_000_000, None, b"b", []),
               Record(2, big, None, b"c", []), Record(3, -5, None, b"d", [])]
    result = kernel.decode(build_batch_v2(records).data, DecodeRequest(timestamp_unit="ms"))
    assert result.columns["timestamp"].type == pa.timestamp("ms", tz="UTC")
    assert result.columns["timestamp"].cast("int64").to_pylist() == [r.timestamp for r in records]
    legacy = b"".join(e.data for e in build_legacy_entries([Record(5, 10 ** 18, None, b"x", [])], 1))
    result = kernel.decode(legacy, DecodeRequest(timestamp_unit="ms"))
    assert result.columns["timestamp"].cast("int64").to_pylist() == [10 ** 18]
    with pytest.raises(CorruptBatchError, match="outside the representable range"):
        kernel.decode(legacy, DecodeRequest())
