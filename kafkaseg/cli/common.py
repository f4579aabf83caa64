"""Helpers the ``kafkaseg`` subcommands share."""

from __future__ import annotations

import sys
from dataclasses import dataclass
from typing import Sequence

from kafkaseg.errors import KafkaSegError
from kafkaseg.storage import fs as _fs
from kafkaseg.storage.layout import PartitionDir, parse_topic_partition, partition_log_end_offset, renamed_partition

__all__ = ["PartitionOffsets", "SkippedFolder", "decode_batch", "holds_whole_partition", "partitions_named",
           "say_missing_topics", "skipped_folders", "topics_given", "whole_partition_offsets"]


def decode_batch(buf, header, path: str, buf_position: int, *, verify_crc: bool = False
                 ) -> tuple[list[int], list[int]]:
    """Offsets and timestamps (ms, -1 for none) of the records of the batch ``header`` describes in ``buf`` (which
    starts at byte ``buf_position`` of ``path``), control records included, as consumers read them (a
    LogAppendTime batch's records carry its max timestamp). The CRC is checked only with ``verify_crc`` (verify
    checks it on its own)."""
    import pyarrow as pa

    from kafkaseg.decode import decode
    from kafkaseg.decode.api import DecodeRequest

    view = memoryview(buf)[header.position:header.end]
    result = decode(view, DecodeRequest(path=path, base_position=buf_position + header.position, verify_crc=verify_crc,
                                        include_control=True, max_batch_bytes=max(header.size, 1 << 20),
                                        timestamp_unit="ms"))
    offsets = result.columns["offset"].to_pylist()
    stamps = [ms if ms is not None and ms >= 0 else -1
              for ms in result.columns["timestamp"].cast(pa.int64()).to_pylist()]
    return offsets, stamps


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


def partitions_named(paths: Sequence[str], key_ring=None) -> set[tuple[str, int]]:
    """The ``(topic, partition)`` pairs the partition folders under ``paths`` are named for, from their names only
    (no folder is read), for a message that names what is there; empty when the paths cannot be listed. Discovered
    as the commands discover: with ``__remote_log_metadata`` among the paths, a tiered store whose copies are all
    gone holds the partitions it lists live copies of (read leniently: the hint is no place for its damage); a
    partition folder given is read whatever the selection, and named too."""
    from kafkaseg.remote_metadata import read_remote_log_metadata
    from kafkaseg.storage.layout import discover

    named: list[tuple[str, int, str]] = []
    try:
        found = discover(paths, select=lambda topic, partition: False, unselected=named, key_ring=key_ring,
                         remote_log_metadata=lambda metadata: read_remote_log_metadata(metadata, lenient=True))
    except KafkaSegError:
        return set()
    return {(topic, partition) for topic, partition, _ in named} | {(p.topic, p.partition) for p in found}


def topics_given(given: Sequence[str] | None) -> list[str]:
    """The topic names of a repeatable ``--topic`` option that also takes comma separated names (``describe``,
    ``verify``; as retention's and log-dirs' lists), in order, each once; empty when none is given."""
    return list(dict.fromkeys(t.strip() for value in (given or ()) for t in value.split(",") if t.strip()))


def say_missing_topics(command: str, topics: Sequence[str], found: set[str], paths: Sequence[str],
                       key_ring=None) -> bool:
    """Say on stderr, with a did-you-mean hint from the topics on disk, each of ``topics`` (names given to
    ``--topic``) that is not in ``found`` (the topics read, or a skipped folder holds a copy of): a misspelt name,
    not an empty topic, as reads say it. True when none of them was found (the command then exits 1, as
    kafka-topics.sh does for a topic that does not exist)."""
    missing = [t for t in topics if t not in found]
    if missing:
        from kafkaseg.errors import did_you_mean

        on_disk = {t for t, _ in partitions_named(paths, key_ring)}
        for topic in missing:
            print(f"kafkaseg {command}: no topic {topic!r} under {', '.join(map(_fs.redact, paths))}"
                  + did_you_mean(topic, on_disk), file=sys.stderr)
    return bool(topics) and len(missing) == len(topics)


def holds_whole_partition(pdir: PartitionDir) -> bool:
    """Whether ``pdir`` holds every segment of its partition (a log dir or partition dir was given, not ``.log``
    files of it: discovery keeps their whole partition in ``pdir.whole``)."""
    whole = pdir.whole
    return whole is None or [s.log_path for s in whole.segments] == [s.log_path for s in pdir.segments]


def whole_partition_offsets(pdir: PartitionDir) -> PartitionOffsets | None:
    """None when ``pdir`` holds every segment of its partition (:func:`holds_whole_partition`); else, for ``.log``
    files given as paths, the whole partition's offsets, since its checkpoints (high watermark, recovery point, log
    start) describe the partition, not the files given."""
    if holds_whole_partition(pdir):
        return None
    return PartitionOffsets(pdir, pdir.whole)


# What a skipped folder is, by the suffix a broker gives it (LocalLog.logDirNameWithSuffix)
_SUFFIX_MEANING = {
    "-future": "a copy of {name} being moved into this log dir (alterReplicaLogDirs): until the move completes, the "
               "partition's current copy is in another log dir of the broker, which is the one to read",
    "-delete": "a deleted replica of {name} (or one moved to another log dir or broker) the broker has not removed "
               "yet",
    "-stray": "a replica of {name} this broker found it does not host (KRaft), kept until an operator removes it",
}
_REMOTE_INDEX_CACHE = "remote-log-index-cache"


@dataclass(frozen=True)
class SkippedFolder:
    """A folder in a log dir that discovery does not read as a partition (``LogDir.skipped``), with why.
    ``topic``/``partition``: the partition it holds a copy of, when its name says (``-future``, ``-delete``,
    ``-stray`` folders)."""

    path: str
    reason: str
    topic: str | None = None
    partition: int | None = None

    @property
    def moving(self) -> bool:
        """A ``-future`` folder: a replica move between log dirs in progress, the current copy being elsewhere."""
        return self.path.endswith("-future")

    def as_dict(self) -> dict:
        return {"path": self.path, "reason": self.reason, "topic": self.topic, "partition": self.partition}


def skipped_folders(skipped: Sequence[tuple[str, str]]) -> list[SkippedFolder]:
    """The folders of the log dirs given that discovery did not read (``discover(paths, skipped=...)``'s
    ``(path, reason)`` pairs), with what each kind means to someone reading them; a log dir given twice once."""
    return [_skipped_folder(path, reason) for path, reason in dict.fromkeys(skipped)]


def _skipped_folder(path: str, reason: str) -> SkippedFolder:
    name = _fs.basename(path)
    suffix = next((s for s in _SUFFIX_MEANING if name.endswith(s)), None)
    if suffix is not None:  # <topic>-<partition>.<uuid><suffix>
        parsed = renamed_partition(name)
        meaning = _SUFFIX_MEANING[suffix].format(name=f"{parsed[0]}-{parsed[1]}" if parsed else "a partition")
        return SkippedFolder(path, f"{reason}: {meaning}", *(parsed or (None, None)))
    if name == _REMOTE_INDEX_CACHE:
        return SkippedFolder(path, f"{reason}: tiered storage's cache of remote indexes (brokers skip it too)")
    parsed = parse_topic_partition(name)
    if parsed is not None:  # a partition folder gone while it was listed (its topic deleted meanwhile)
        return SkippedFolder(path, reason, *parsed)
    return SkippedFolder(path, f"{reason} (a broker refuses to start with it in a log dir)")
