"""Three file states the notes carried for many stops: a compacted follower whose high watermark went back into a
compaction gap, a live broker's copy that lost its active segment, and copies of a live data dir taken file by
file (rsync)."""

from __future__ import annotations

import pytest

import kafkaseg
from kafkaseg.cli.main import main
from kafkaseg.cli.verify import verify_paths
from kafkaseg.errors import SkippedOffsetsError
from kafkaseg.testing import PartitionWriter, Record, build_batch_v2
from kafkaseg.testing.partition import write_offset_checkpoint

# -- 1. a compacted follower whose high watermark went back into a gap ---------------------------------------------


def _gap_follower(root, high_watermark: int, stopped: bool):
    """A follower's copy of a compacted topic: its active segment holds [0, 50) and then [95, 100), as it fetched
    them from a leader whose cleaner had removed [50, 95); its high watermark went back to ``high_watermark``
    (inside the gap) with a leader change whose new leader lagged. ``stopped``: as a clean shutdown leaves it
    (recovery point 100, a producer snapshot named 100); else as a running broker's (the recovery point at the
    segment's base, no snapshot past it)."""
    folder = root / "t-0"
    writer = PartitionWriter(folder)
    for base in [*range(0, 50, 5), 95]:
        writer.append(build_batch_v2([Record(base + i, 1_700_000_000_000 + base + i, b"k%d" % (base + i), b"v")
                                      for i in range(5)]))
    log = writer.close()
    assert log.log_end_offset == 100
    if not stopped:
        for snapshot in folder.glob("*.snapshot"):
            snapshot.unlink()
    write_offset_checkpoint(root / "replication-offset-checkpoint", {("t", 0): high_watermark})
    write_offset_checkpoint(root / "recovery-point-offset-checkpoint", {("t", 0): 100 if stopped else 0})
    return root


@pytest.mark.parametrize("high_watermark", [51, 80, 94])
def test_a_stopped_followers_high_watermark_back_in_a_gap_is_no_corruption(tmp_path, capsys, high_watermark):
    """The recovery point and the producer snapshot say the log reached 100, so the last batch's base offset 95
    is the broker's, not a corrupt one: the gap before it is compaction's. A read to latest returns [0, 50) and
    ends at the high watermark; ``offsets -1`` answers it; verify reports no error. (Before, every read, ``offsets``
    (-1 and -2), ``describe`` and ``verify`` called it a corrupt base offset, and a lenient read said offsets
    50..hw-1 were acknowledged but missing.)"""
    root = _gap_follower(tmp_path, high_watermark, stopped=True)
    scan = kafkaseg.open_scan(str(root))
    assert scan.to_table().column("offset").to_pylist() == list(range(50))
    assert not any("acknowledged" in note for p in scan.plan.report.partitions for note in p.notes)
    assert main(["offsets", "--data-dir", str(root), "--time", "-1"]) == 0
    assert capsys.readouterr().out.split() == [f"t:0:{high_watermark}"]
    assert not verify_paths([str(root)]).errors
    upper = kafkaseg.read_arrow(str(root), upperBound="logEndOffset").column("offset").to_pylist()
    assert upper == [*range(50), *range(95, 100)]


def test_a_running_followers_high_watermark_back_in_a_gap_is_still_taken_for_a_corrupt_base(tmp_path):
    """Pinned: with no file saying the log reached past the gap (a running broker's recovery point sits at the
    active segment's base, and it writes producer snapshots at rolls), the state is byte for byte what a base
    offset raised past the high watermark leaves (see offsets_hidden_by_last_batch), so a strict read raises
    and the error names the other cause; README says what to do."""
    root = _gap_follower(tmp_path, 80, stopped=False)
    with pytest.raises(SkippedOffsetsError, match="leader change moved this replica's high watermark back"):
        kafkaseg.read_arrow(str(root))
