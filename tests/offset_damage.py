"""A partition with one batch's base offset field (outside the CRC) moved, as the reads, ``kafkaseg verify`` and the
lookups are tested on (tests/test_scan_integrity.py, tests/test_cli_verify.py, tests/test_lookup.py)."""

from __future__ import annotations

import struct

from kafkaseg.testing import TopicSpec, write_data_dir
from kafkaseg.wire.batch import iter_headers

RECORDS = 600
# One partition of five segments of 10-record batches (bases 0, 130, 260, 390, 520; 13 batches each).
SPEC = TopicSpec("t", records_per_partition=RECORDS, records_per_batch=10, vary_batch_size=False,
                 segment_bytes=16 << 10, index_interval_bytes=1024)

# (segment, batch, XOR of the base offset field); segment 1 holds 130..259 in 13 batches, the next starts at 260
CASES = {
    "raised_over_many": (1, 3, 64),  # 160..169 -> 224..233: over the 7 batches after it
    "raised_over_one": (1, 3, 4),  # 160..169 -> 164..173: over the one batch after it only
    "raised_past_next_base": (1, 3, 1 << 20),  # (the decoders' rule offset_field_past_next, as before)
    "lowered_into_previous": (1, 4, 8),  # 170..179 -> 162..171
    "lowered_below_segment_base": (1, 1, 128),  # 140..149 -> 12..21
    "first_batch_raised": (1, 0, 64),  # 130..139 -> 194..203
    "next_to_last_raised": (1, 11, 4),  # 240..249 -> 244..253, over the segment's last batch (250..259)
    "last_raised_past_next_base": (1, 12, 256),  # 250..259 -> 506..515
    # onto the offsets of a batch a later segment holds (same base and last offsets, other records): a compacted copy
    # merging two segments holds such a batch too, so its records tell them apart (the next segment's first batch,
    # and one further on)
    "last_raised_onto_next_segments_first": (1, 12, 250 ^ 260),  # 250..259 -> 260..269
    "last_raised_onto_a_later_batch": (1, 12, 250 ^ 400),  # 250..259 -> 400..409
}


def write(root):
    write_data_dir(root, [SPEC])
    return root


def logs(root):
    return sorted((root / "t-0").glob("*.log"))


def damage(root, segment: int, batch: int, xor: int):
    """XOR the base offset field of batch ``batch`` of segment ``segment`` with ``xor``; returns the log, the batch's
    header (as it was) and the segment's headers, and the base offset of the readable batch after it."""
    log = logs(root)[segment]
    data = bytearray(log.read_bytes())
    headers = list(iter_headers(bytes(data)))
    header = headers[batch]
    field = struct.unpack_from(">q", data, header.position)[0]
    struct.pack_into(">q", data, header.position, field ^ xor)
    log.write_bytes(bytes(data))
    following = headers[batch + 1].base_offset if batch + 1 < len(headers) else int(logs(root)[segment + 1].stem)
    return log, header, headers, following
