"""A partition whose active segment lost its tail: three segments of 5-record batches (bases 0, 125, 250, offsets
0..299) written as after a clean shutdown, then the active segment cut at its batch :data:`CUT` (offset
:data:`LOST_FROM`), its index files and the producer snapshot past the cut gone, with checkpoints saying what the
broker had acknowledged (high watermark) and flushed (recovery point). Shared by tests/test_tail_evidence.py (the
tools and batch reads) and the streams' tests (tests/test_spark_stream.py)."""

from __future__ import annotations

import shutil
from pathlib import Path

from kafkaseg.testing import TopicSpec, write_data_dir
from kafkaseg.wire.batch import iter_headers

RECORDS = 300
CUT = 4  # the active segment's batch the tear starts at: offsets 270.. are lost
LOST_FROM = 270


def write_whole(root: Path):
    """The partition before the cut (recovery point 300, producer snapshots 125, 250 and 300; no high watermark
    for it); returns its manifest."""
    manifest = write_data_dir(root, [TopicSpec("t", records_per_partition=RECORDS, records_per_batch=5,
                                               vary_batch_size=False, index_interval_bytes=400,
                                               segment_bytes=16384)])
    (root / "replication-offset-checkpoint").write_text("0\n0\n")
    return manifest.partition("t")


def cut_tail(whole: Path, target: Path, pm, keep: int = 0, indexes: str = "missing") -> tuple[Path, int]:
    """A copy of ``whole`` at ``target`` whose active segment is cut ``keep`` bytes into batch :data:`CUT`, with
    no index entries (``indexes``: "missing" or "empty") and no snapshot past the cut; returns (active segment, byte
    of the cut)."""
    shutil.copytree(whole, target)
    active = target / "t-0" / pm.segments[-1].log_path.name
    headers = list(iter_headers(active.read_bytes()))
    at = headers[CUT].position
    active.write_bytes(active.read_bytes()[:at + keep])
    for suffix in (".index", ".timeindex"):
        if indexes == "missing":
            active.with_suffix(suffix).unlink()
        else:
            active.with_suffix(suffix).write_bytes(b"")
    (target / "t-0" / f"{RECORDS:020d}.snapshot").unlink()
    return active, at


def set_high_watermark(root: Path, offset: int) -> None:
    (root / "replication-offset-checkpoint").write_text(f"0\n1\nt 0 {offset}\n")


def set_recovery_point(root: Path, offset: int) -> None:
    (root / "recovery-point-offset-checkpoint").write_text(f"0\n1\nt 0 {offset}\n")


#: The three cases of a log end below what the checkpoints say: ``hwrp``, high watermark and recovery point both
#: above it (acknowledged and flushed offsets lost: a read to latest raises DataLossError); ``rp``, the recovery
#: point alone (no high watermark: the tail's loss is proven, a strict read raises LostTailError, a DataLossError
#: that is a TruncatedDataError at the file and byte, and one with failOnDataLoss=false reads to the log end,
#: listing it in the metrics' lost_tails); ``hw``, the high watermark alone (the recovery point below it: an
#: unflushed tail a crash lost, a note only).
CASES = {"hwrp": (RECORDS, RECORDS), "rp": (None, RECORDS), "hw": (RECORDS, 250)}


def lost_tail_copy(root: Path, case: str) -> tuple[Path, int]:
    """The cut partition under ``root`` with the checkpoints of ``case`` (:data:`CASES`); returns (active segment,
    byte of the cut)."""
    whole = root.parent / f"{root.name}.whole"
    pm = write_whole(whole)
    active, at = cut_tail(whole, root, pm)
    shutil.rmtree(whole)
    high_watermark, recovery_point = CASES[case]
    if high_watermark is not None:
        set_high_watermark(root, high_watermark)
    set_recovery_point(root, recovery_point)
    return active, at
