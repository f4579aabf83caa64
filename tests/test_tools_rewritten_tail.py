"""verify and describe meet a follower truncation that rewrites the active segment past the high watermark while
they walk it (found by tests/live_broker.py: verify reported a ``.timeindex`` timestamp mismatch, describe an
``unknown magic``, on a segment a truncation had just rewritten).

Each loads the active segment's indexes, then walks its ``.log``: a truncation in between (``UnifiedLog.truncateTo``
at or above the high watermark, then the new leader's batches at the same offsets in other bytes) leaves index
entries of the old generation judged against the new one. Those records were never acknowledged: the tools look
again on a fresh listing when the active segment's file changed since they listed it, and what they find then
stands. Damage in a file that did not change stays an error.
"""

from __future__ import annotations

import shutil
import time

import pytest

from kafkaseg.cli import describe, verify
from kafkaseg.storage.segment import SegmentReader
from kafkaseg.testing import Record, build_batch_v2
from kafkaseg.testing.partition import PartitionWriter, write_offset_checkpoint
from kafkaseg.wire.batch import iter_headers

HW = 100


def _batch(first: int, count: int, generation: int, size: int):
    return build_batch_v2([Record(offset=o, timestamp=1000 * (generation + 1) + o, key=b"k%d" % o,
                                  value=b"g%d-" % generation + b"x" * size) for o in range(first, first + count)])


def _partition(folder, generation_after_hw: int):
    """t-0 with offsets 0..199: 5-record batches of generation 0 below the high watermark, and past it 5-record
    batches of generation 0 or 7-record batches of generation 1 (other sizes and timestamps)."""
    writer = PartitionWriter(folder, index_interval_bytes=256)
    for first in range(0, HW, 5):
        writer.append(_batch(first, 5, 0, 40))
    count, size = (5, 40) if generation_after_hw == 0 else (7, 90)
    first = HW
    while first < 200:
        writer.append(_batch(first, min(count, 200 - first), generation_after_hw, size))
        first += count
    writer.close(live=True)


@pytest.fixture
def live(tmp_path):
    root = tmp_path / "data"
    _partition(root / "t-0", 0)
    write_offset_checkpoint(root / "replication-offset-checkpoint", {("t", 0): HW})
    _partition(tmp_path / "next" / "t-0", 1)  # the same log after a truncation to HW and the new leader's appends
    return root, tmp_path / "next" / "t-0"


def _truncate_and_rewrite(folder, rewritten):
    """The broker's truncation past HW and new appends, in place (same inodes): every file of the segment."""
    time.sleep(0.05)  # (past the coarse ctime tick of the listing)
    for path in sorted(rewritten.iterdir()):
        target = folder / path.name
        if target.exists() and path.suffix in (".log", ".index", ".timeindex"):
            with open(target, "r+b") as f:
                f.truncate(0)
                f.write(path.read_bytes())
        elif not target.exists():
            shutil.copy(path, target)


def _rewrite_when_the_walk_opens(module, monkeypatch, root, rewritten):
    """The truncation lands after the tool loaded the active segment's indexes, as it opens its .log to walk it."""
    done = []

    class Racing(SegmentReader):
        def __init__(self, path, *args, **kwargs):
            if not done and str(path).endswith(f"{0:020d}.log"):
                done.append(path)
                _truncate_and_rewrite(root / "t-0", rewritten)
            super().__init__(path, *args, **kwargs)

    monkeypatch.setattr(module, "SegmentReader", Racing)
    return done


def test_verify_looks_again_when_a_truncation_past_the_high_watermark_rewrote_the_active_segment(live,
                                                                                                  monkeypatch):
    root, rewritten = live
    done = _rewrite_when_the_walk_opens(verify, monkeypatch, root, rewritten)
    report = verify.verify_paths([str(root)])
    assert done
    assert not report.errors, [str(p) for p in report.errors]
    [summary] = report.partitions
    assert summary.log_end_offset == 200


def test_describe_looks_again_when_a_truncation_past_the_high_watermark_rewrote_the_active_segment(live,
                                                                                                    monkeypatch):
    root, rewritten = live
    done = _rewrite_when_the_walk_opens(describe, monkeypatch, root, rewritten)
    [desc] = describe.describe_paths([str(root)])
    assert done
    assert not desc.errors, desc.errors
    assert desc.log_end_offset == 200
    assert desc.max_timestamp == 2000 + 199  # the new generation's


def _damage(root):
    """A static corruption of the active segment past the high watermark: its last index entry points mid-batch
    (as a damaged offset index does), in a file nothing changes while the tools read it."""
    from kafkaseg.storage.offset_index import OffsetIndex

    log = root / "t-0" / f"{0:020d}.log"
    index = OffsetIndex.load(str(log.with_suffix(".index")), 0)
    n = len(index) - 1
    data = bytearray(log.read_bytes())
    at = int(index.positions[n])
    data[at + 16] = 107  # the batch's magic byte
    log.write_bytes(bytes(data))


def test_static_damage_past_the_high_watermark_stays_an_error(live):
    root, _ = live
    _damage(root)
    report = verify.verify_paths([str(root)])
    assert report.errors
    [desc] = describe.describe_paths([str(root)])
    assert desc.errors


def test_damage_in_the_active_segment_stays_an_error_when_it_changes_meanwhile(live, monkeypatch):
    """A file that changed while being read is looked at once more: damage still there is still an error."""
    root, rewritten = live
    _damage(rewritten.parent)
    done = _rewrite_when_the_walk_opens(verify, monkeypatch, root, rewritten)
    assert verify.verify_paths([str(root)]).errors
    assert done
    done = _rewrite_when_the_walk_opens(describe, monkeypatch, root, rewritten)
    done.append("once")  # (the files hold the damaged generation already)
    [desc] = describe.describe_paths([str(root)])
    assert desc.errors


def test_only_a_change_with_the_log_sound_up_to_the_high_watermark_is_looked_at_again(live):
    """The tools look again only when the active segment changed since the listing and its batches up to the high
    watermark walk cleanly now: what failed then lies past it, where a truncation may rewrite the log."""
    from kafkaseg.storage.layout import read_partition_dir, rewritten_past_high_watermark

    root, rewritten = live
    pdir = read_partition_dir(str(root / "t-0"))
    assert not rewritten_past_high_watermark(pdir)  # unchanged since listed
    _truncate_and_rewrite(root / "t-0", rewritten)
    assert rewritten_past_high_watermark(pdir)
    pdir = read_partition_dir(str(root / "t-0"))
    log = root / "t-0" / f"{0:020d}.log"
    time.sleep(0.05)
    at = next(h.position for h in iter_headers(log.read_bytes()) if h.base_offset == 20)
    with open(log, "r+b") as f:  # damage below the high watermark in a file that changes
        f.seek(at + 16)  # (the magic byte of the batch at offset 20)
        f.write(b"k")
    assert not rewritten_past_high_watermark(pdir)
