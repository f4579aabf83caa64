"""End-to-end differential test: random data dirs (kafkaseg.testing) read with random option combinations through
planning + scan must return exactly the manifest's records selected by Spark-Kafka semantics."""

from __future__ import annotations

import dataclasses
import json

import pyarrow.fs as pafs
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kafkaseg
from kafkaseg.planning import Predicates, plan_scan
from kafkaseg.options import ReadOptions
from kafkaseg.scan import read_slice
from kafkaseg.testing import TopicSpec, write_data_dir


@st.composite
def topic_specs(draw):
    magic = draw(st.sampled_from([2, 2, 2, 1]))
    codec = draw(st.sampled_from(["none", "gzip", "snappy", "lz4"] + (["zstd"] if magic == 2 else [])))
    transactional = magic == 2 and draw(st.booleans())
    return TopicSpec(
        "t", partitions=draw(st.integers(1, 2)), records_per_partition=draw(st.integers(1, 400)),
        records_per_batch=draw(st.integers(1, 40)), codec=codec, magic=magic,
        null_key_ratio=draw(st.sampled_from([0.0, 0.3])), tombstone_ratio=draw(st.sampled_from([0.0, 0.2])),
        headers=draw(st.integers(0, 2)) if magic == 2 else 0,
        timestamp_type=draw(st.sampled_from(["CreateTime", "LogAppendTime"])) if magic >= 1 else "CreateTime",
        ts_jitter_ms=draw(st.sampled_from([0, 7])),
        transactional=transactional, abort_ratio=0.4 if transactional else 0.0,
        open_transactions=draw(st.integers(0, 1)) if transactional else 0,
        gap_ratio=draw(st.sampled_from([0.0, 0.1])) if magic == 2 else 0.0,
        segment_bytes=draw(st.sampled_from([2_000, 8_000, 1 << 30])),
        index_interval_bytes=draw(st.sampled_from([256, 4096])),
        log_start_offset=draw(st.sampled_from([0, 0, 3])),
    )


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                  HealthCheck.too_slow])
@given(spec=topic_specs(), seed=st.integers(0, 1000), committed=st.booleans(),
       window=st.tuples(st.integers(0, 60), st.integers(0, 500)), split=st.sampled_from(["1k", "4k", "128m"]),
       use_predicates=st.booleans(), max_records=st.sampled_from([7, 65536]), data=st.data())
def test_random_dirs_and_options_read_exactly_the_selected_records(tmp_path_factory, spec, seed, committed, window,
                                                                    split, use_predicates, max_records, data):
    root = tmp_path_factory.mktemp("diff")
    manifest = write_data_dir(root, [spec], seed=seed)
    options = {"includeHeaders": True, "splitSize": split, "maxRecordsPerBatch": max_records,
               "kafka.isolation.level": "read_committed" if committed else "read_uncommitted",
               "failOnDataLoss": False}
    lo_hi = {}
    starting, ending = {}, {}
    for (topic, partition), pm in manifest.partitions.items():
        lo = pm.log_start_offset + window[0]
        hi = lo + window[1]
        lo_hi[partition] = (lo, hi)
        starting[str(partition)] = lo
        ending[str(partition)] = hi
    use_offsets = data.draw(st.booleans())
    if use_offsets:
        options["startingOffsets"] = json.dumps({"t": starting})
        options["endingOffsets"] = json.dumps({"t": ending})
    predicates = None
    ranges = None
    if use_predicates:
        a = data.draw(st.integers(0, 450))
        b = data.draw(st.integers(0, 450))
        ranges = ((min(a, b), max(a, b) + 1), (a + 5, a + 9))
        if data.draw(st.booleans()):  # NOT offset IN (a, a + d): ranges sharing the batches around them
            d = data.draw(st.integers(1, 12))
            ranges = ((0, a), (a + 1, a + d), (a + d + 1, 1 << 62))
        predicates = Predicates(offset_ranges=ranges)

    # both read paths, with chunks and mapping windows small enough to cut through batches
    options["readMode"] = data.draw(st.sampled_from(["auto", "pread"]))
    sizes = {"read_chunk_bytes": data.draw(st.sampled_from([300, 4096, 2 << 20])),
             "map_window_bytes": data.draw(st.sampled_from([1000, 8192, 32 << 20]))}
    opts = ReadOptions.from_options(options)
    plan = plan_scan(str(root), opts, predicates)
    pieces = plan.slices
    if data.draw(st.booleans()):  # the same files as a non-local filesystem: large fetches, decoded chunk by chunk
        remote = pafs.SubTreeFileSystem("/", pafs.LocalFileSystem())
        pieces = [dataclasses.replace(p, log_path=p.log_path.lstrip("/"), filesystem=remote) for p in pieces]
    got = {}
    for piece in pieces:
        for batch in read_slice(piece, opts, **sizes):
            cols = batch.to_pydict()
            for i in range(batch.num_rows):
                got.setdefault(cols["partition"][i], []).append(
                    (cols["offset"][i], cols["key"][i], cols["value"][i],
                     tuple((h["key"], h["value"]) for h in cols["headers"][i]) if cols["headers"][i] else ()))

    for (topic, partition), pm in manifest.partitions.items():
        upper = pm.last_stable_offset if committed else pm.high_watermark
        lo, hi = lo_hi[partition] if use_offsets else (pm.log_start_offset, upper)
        hi = min(hi, upper)
        expected = [(r.offset, r.key, r.value, tuple(r.headers)) for r in pm.data_records(read_committed=committed)
                    if max(lo, pm.log_start_offset) <= r.offset < hi
                    and (ranges is None or any(a <= r.offset < b for a, b in ranges))]
        assert got.get(partition, []) == expected, (partition, spec, options, ranges)


def test_differential_smoke_reads_through_the_public_api(tmp_path):
    """The same comparison for one fixed case through kafkaseg.read_arrow (the function users call)."""
    manifest = write_data_dir(tmp_path, [TopicSpec("t", records_per_partition=300, records_per_batch=9,
                                                   codec="zstd", transactional=True, abort_ratio=0.3,
                                                   segment_bytes=3000)])
    pm = manifest.partitions[("t", 0)]
    table = kafkaseg.read_arrow(str(tmp_path), **{"kafka.isolation.level": "read_committed"})
    assert table.column("offset").to_pylist() == [r.offset for r in pm.data_records(read_committed=True)]
