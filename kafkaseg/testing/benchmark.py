"""Large segments for benchmarks, fast: a few distinct record payloads are encoded and compressed once, then
re-stamped (base offset, timestamps, CRC-32C) for every batch, so writing ~200 MB takes seconds.

Batches are ordinary v2 batches (see :mod:`kafkaseg.testing.writer`); records inside a batch have consecutive
offsets and timestamps ``ts_step_ms`` apart; record contents repeat every ``variants`` batches.
"""

from __future__ import annotations

import os
import random
from dataclasses import dataclass
from pathlib import Path

from kafkaseg.testing.codecs import codec_id, compress
from kafkaseg.testing.partition import SegmentWriter
from kafkaseg.testing.writer import Record, assemble_batch_v2, encode_records

__all__ = ["BenchmarkSegment", "write_benchmark_segment"]


@dataclass(frozen=True)
class BenchmarkSegment:
    log_path: Path
    size: int
    batches: int
    records: int
    records_per_batch: int
    first_offset: int
    last_offset: int
    first_timestamp: int
    max_timestamp: int
    codec: str


def write_benchmark_segment(path: str | os.PathLike, total_bytes: int, batch_bytes: int = 256 * 1024,
                            codec: int | str = "none", *, value_size: int = 200, key_size: int = 16,
                            base_offset: int = 0, start_timestamp_ms: int = 1_700_000_000_000,
                            ts_step_ms: int = 1, index_interval_bytes: int = 4096, variants: int = 8,
                            seed: int = 0) -> BenchmarkSegment:
    """Write one segment of at least ``total_bytes`` (``.log`` + ``.index`` + ``.timeindex``) into directory
    ``path`` (a topic-partition folder, created if needed).

    ``batch_bytes`` is the uncompressed size of each batch's records (like a producer's ``batch.size``);
    values are ``value_size`` bytes of compressible text, keys ``key_size`` bytes (0: null keys).
    """
    cid = codec_id(codec)
    rng = random.Random(f"kafkaseg-benchmark/{seed}")
    record_size = value_size + key_size + 12
    per_batch = max(1, batch_bytes // record_size)
    payloads = []
    for _ in range(max(1, variants)):
        records = []
        for i in range(per_batch):
            key = rng.randbytes(key_size // 2).hex().encode()[:key_size] if key_size else None
            value = (rng.randbytes(value_size // 4 + 1).hex().encode() * 2)[:value_size]
            records.append(Record(i, i * ts_step_ms, key, value))
        raw = encode_records(records, 0, 0)
        payloads.append(compress(cid, raw) if cid else raw)
    segment = SegmentWriter(path, base_offset, index_interval_bytes=index_interval_bytes)
    offset = base_offset
    batches = 0
    span = (per_batch - 1) * ts_step_ms
    while segment.size < total_bytes:
        base_ts = start_timestamp_ms + (offset - base_offset) * ts_step_ms
        data = assemble_batch_v2(base_offset=offset, partition_leader_epoch=0, attributes=cid,
                                 last_offset_delta=per_batch - 1, base_timestamp=base_ts,
                                 max_timestamp=base_ts + span, producer_id=-1, producer_epoch=-1,
                                 base_sequence=-1, records_count=per_batch, payload=payloads[batches % len(payloads)])
        segment.append(data, last_offset=offset + per_batch - 1, max_timestamp=base_ts + span)
        offset += per_batch
        batches += 1
    info = segment.close()
    return BenchmarkSegment(info.log_path, info.size, batches, batches * per_batch, per_batch, base_offset,
                            offset - 1, start_timestamp_ms, info.max_timestamp, codec if isinstance(codec, str)
                            else str(codec))
