"""Helpers the ``kafkaseg`` subcommands share."""

from __future__ import annotations

from kafkaseg.errors import KafkaSegError
from kafkaseg.storage import fs as _fs
from kafkaseg.storage.layout import PartitionDir, partition_log_end_offset

__all__ = ["PartitionOffsets", "whole_partition_offsets"]


class PartitionOffsets:
    """The log start and end offsets of the whole partition when only some of its segments were given (single
    ``.log`` files), with a note saying so (to be prefixed with the partition's name). The log end offset is None
    (and ``note`` says why) when it cannot be read: checkpoints are then not compared with it."""

    def __init__(self, pdir: PartitionDir, whole: PartitionDir):
        self.whole = whole
        self.log_end_offset = None
        self.log_start_offset = whole.log_start_offset
        try:
            self.log_end_offset = partition_log_end_offset(whole)
            end = f"end read from its last segment {_fs.basename(whole.segments[-1].log_path)}"
        except KafkaSegError as err:
            end = f"its log end offset cannot be read ({err}), so checkpoints are not compared with it"
        self.note = (f"{len(pdir.segments)} of its {len(whole.segments)} segments given; log start and end offsets "
                     f"are the whole partition's ({end})")


def whole_partition_offsets(pdir: PartitionDir) -> PartitionOffsets | None:
    """None when ``pdir`` holds every segment of its partition (a log dir or partition dir was given); else, for
    ``.log`` files given as paths (discovery keeps their whole partition in ``pdir.whole``), the whole partition's
    offsets, since its checkpoints (high watermark, recovery point, log start) describe the partition, not the
    files given."""
    whole = pdir.whole
    if whole is None or [s.log_path for s in whole.segments] == [s.log_path for s in pdir.segments]:
        return None
    return PartitionOffsets(pdir, whole)
