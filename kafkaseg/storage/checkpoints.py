"""Parsers for the small text files a Kafka log dir and its partition dirs hold.

Offset checkpoints (``replication-offset-checkpoint`` = high watermarks, ``recovery-point-offset-checkpoint``,
``log-start-offset-checkpoint``, ``cleaner-offset-checkpoint``), written by ``OffsetCheckpointFile.java`` through
``server-common/.../CheckpointFile.java``::

    <version>\\n            always 0
    <entry count>\\n
    <topic> <partition> <offset>\\n     fields split on whitespace (topic names have no whitespace; dots,
    ...                                dashes and underscores are fine)

``CheckpointFile.read``: an empty file (or one that ends after the version) holds no entries; an unknown version, a
line that is not three fields, or a count that differs from the number of lines is an error.

``leader-epoch-checkpoint`` (``LeaderEpochCheckpointFile.java``): same framing, entries ``<epoch> <startOffset>``.

``meta.properties`` (``metadata/.../properties/MetaProperties.java``): Java properties with ``version``,
``cluster.id``, ``node.id`` (v1) or ``broker.id`` (v0), ``directory.id``.

``partition.metadata`` (``PartitionMetadataFile.java`` / ``PartitionMetadataReadBuffer.java``)::

    version: 0
    topic_id: <22-char base64url Uuid>

Malformed input raises :class:`CorruptCheckpointError` naming the file and the byte where the bad line starts.
"""

from __future__ import annotations

import base64
import re
import uuid
from typing import NamedTuple, Sequence

import pyarrow.fs as pafs

from kafkaseg.errors import CorruptCheckpointError
from kafkaseg.storage import fs as _fs

__all__ = [
    "REPLICATION_OFFSET_CHECKPOINT",
    "RECOVERY_POINT_OFFSET_CHECKPOINT",
    "LOG_START_OFFSET_CHECKPOINT",
    "CLEANER_OFFSET_CHECKPOINT",
    "LEADER_EPOCH_CHECKPOINT",
    "META_PROPERTIES",
    "PARTITION_METADATA",
    "EpochEntry",
    "MetaProperties",
    "PartitionMetadata",
    "parse_offset_checkpoint",
    "parse_leader_epoch_checkpoint",
    "epoch_at",
    "epoch_end_offset",
    "Divergence",
    "mark_divergence",
    "parse_meta_properties",
    "parse_partition_metadata",
    "decode_kafka_uuid",
    "read_offset_checkpoint",
    "read_leader_epoch_checkpoint",
    "read_meta_properties",
    "read_partition_metadata",
]

REPLICATION_OFFSET_CHECKPOINT = "replication-offset-checkpoint"
RECOVERY_POINT_OFFSET_CHECKPOINT = "recovery-point-offset-checkpoint"
LOG_START_OFFSET_CHECKPOINT = "log-start-offset-checkpoint"
CLEANER_OFFSET_CHECKPOINT = "cleaner-offset-checkpoint"
LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint"
META_PROPERTIES = "meta.properties"
PARTITION_METADATA = "partition.metadata"

_CHECKPOINT_CAP = 16 * 1024 * 1024  # a checkpoint line is < 300 bytes; 16 MiB is ~50k partitions of headroom
_WHITESPACE = re.compile(r"\s+")


class EpochEntry(NamedTuple):
    """One ``leader-epoch-checkpoint`` line: leader ``epoch`` started at ``start_offset``."""

    epoch: int
    start_offset: int


class MetaProperties(NamedTuple):
    """``meta.properties`` of a log dir. ``node_id`` is ``node.id`` (v1) or ``broker.id`` (v0)."""

    version: int
    cluster_id: str | None
    node_id: int | None
    directory_id: str | None
    properties: tuple[tuple[str, str], ...]  # every key/value as written, in file order


class PartitionMetadata(NamedTuple):
    """``partition.metadata``: ``topic_id`` as Kafka prints it (base64url) and as a :class:`uuid.UUID`."""

    version: int
    topic_id: str
    topic_uuid: uuid.UUID


def _lines(data: bytes, path: str | None):
    """(line number from 1, byte position of the line start, text) for each line, like ``BufferedReader.readLine``."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CorruptCheckpointError(f"not UTF-8 text: {exc.reason}", path=path, position=exc.start) from exc
    position = 0
    number = 0
    for raw in text.splitlines(keepends=True):
        number += 1
        line = raw.rstrip("\r\n")
        yield number, position, line
        position += len(raw.encode("utf-8"))


def parse_java_integer(token: str, bits: int = 64) -> int | None:
    """What Java's ``Integer.parseInt``/``Long.parseLong`` (``bits`` 32/64) gives for ``token``, or None where it
    throws: an optional sign and ASCII digits (leading zeros any number), in range. Checked by length before
    ``int()``, which refuses strings of over 4,300 digits with a ValueError of its own."""
    if not re.fullmatch(r"[+-]?[0-9]+", token):
        return None
    digits = token.lstrip("+-").lstrip("0") or "0"
    if len(digits) > 19:
        return None
    value = -int(digits) if token.startswith("-") else int(digits)
    return value if -(1 << (bits - 1)) <= value < (1 << (bits - 1)) else None


def _int(token: str, what: str, path, number: int, position: int, *, bits: int = 64) -> int:
    # Java's Integer/Long.parseInt: optional sign, ASCII digits, range-checked.
    value = parse_java_integer(token, bits)
    if value is None and not re.fullmatch(r"[+-]?[0-9]+", token):
        raise CorruptCheckpointError(f"line {number}: {what} {token!r} is not an integer", path=path,
                                     position=position)
    if value is None:
        shown = token if len(token) <= 40 else f"{token[:20]}... ({len(token)} characters)"
        raise CorruptCheckpointError(f"line {number}: {what} {shown} does not fit in int{bits}", path=path,
                                     position=position)
    return value


def _parse_framed(data: bytes, path: str | None, fields: int, kind: str):
    """The CheckpointFile framing: yields (line number, position, parts) per entry after checking version/count."""
    lines = list(_lines(data, path))
    if not lines:
        return []
    number, position, line = lines[0]
    version = _int(line.strip(), "version", path, number, position, bits=32)
    if version != 0:
        raise CorruptCheckpointError(f"line 1: unrecognised {kind} version {version}, expected 0", path=path,
                                     position=position)
    if len(lines) == 1:
        return []
    number, position, line = lines[1]
    expected = _int(line.strip(), "entry count", path, number, position, bits=32)
    entries = []
    for number, position, line in lines[2:]:
        parts = [p for p in _WHITESPACE.split(line) if p]
        if len(parts) != fields:
            raise CorruptCheckpointError(
                f"line {number}: malformed {kind} entry {line!r} (expected {fields} whitespace-separated fields)",
                path=path, position=position)
        entries.append((number, position, parts))
    if len(entries) != expected:
        raise CorruptCheckpointError(f"expected {expected} entries in {kind}, found {len(entries)}", path=path,
                                     position=lines[1][1])
    return entries


def parse_offset_checkpoint(data: bytes, path: str | None = None) -> dict[tuple[str, int], int]:
    """``{(topic, partition): offset}`` from an offset checkpoint file's bytes."""
    result: dict[tuple[str, int], int] = {}
    for number, position, (topic, partition, offset) in _parse_framed(data, path, 3, "offset checkpoint"):
        result[(topic, _int(partition, "partition", path, number, position, bits=32))] = _int(
            offset, "offset", path, number, position)
    return result


def parse_leader_epoch_checkpoint(data: bytes, path: str | None = None) -> tuple[EpochEntry, ...]:
    """The ``(epoch, start_offset)`` entries of a ``leader-epoch-checkpoint``, in file order."""
    return tuple(
        EpochEntry(_int(epoch, "epoch", path, number, position, bits=32),
                   _int(offset, "start offset", path, number, position))
        for number, position, (epoch, offset) in _parse_framed(data, path, 2, "leader epoch checkpoint"))


def epoch_at(entries: Sequence[EpochEntry] | Sequence[tuple[int, int]], offset: int) -> int | None:
    """The leader epoch ``offset`` was written under by ``leader-epoch-checkpoint`` ``entries``: the last entry
    starting at or below it (``LeaderEpochFileCache.epochForOffset``; the cache's ``truncateFromStart`` keeps the
    entry covering the log start), None when no entry does (a log written before leader epochs, or none)."""
    found = None
    for epoch, start in entries:
        if start > offset:
            break
        found = epoch
    return found


def epoch_end_offset(entries: Sequence[EpochEntry] | Sequence[tuple[int, int]], epoch: int, log_end: int
                     ) -> tuple[int, int] | None:
    """``(epoch, end offset)`` as ``LeaderEpochFileCache.endOffsetFor`` answers a consumer validating its position
    after a leader change (KIP-320; ``storage/src/main/java/org/apache/kafka/storage/internals/epoch/
    LeaderEpochFileCache.java``): the latest epoch ends at ``log_end``; an older one at the start of the first
    higher epoch, reported under the highest epoch at or below it; None (undefined) for an epoch above every epoch
    the log knows, or no entries. A consumer whose last offset was written under ``epoch`` and whose position is
    past the answer's end offset holds records the log no longer has: the log diverged there."""
    if not entries:
        return None
    ordered = sorted((int(e), int(start)) for e, start in entries)
    if ordered[-1][0] == epoch:
        return epoch, log_end
    higher = next(((e, start) for e, start in ordered if e > epoch), None)
    if higher is None:
        return None
    floor = [e for e, _ in ordered if e <= epoch]
    return (floor[-1] if floor else epoch), higher[1]


class Divergence(NamedTuple):
    """A log diverged from what a reader read: at ``offset`` (its records from there on were truncated and
    replaced), or at an offset the log cannot tell (None: it does not know the reader's epoch)."""

    offset: int | None


def mark_divergence(entries: Sequence[EpochEntry] | Sequence[tuple[int, int]], mark: tuple[int, int] | None,
                    log_end: int) -> Divergence | None:
    """Kafka's consumer validation of its position after a leader change (KIP-320,
    ``SubscriptionState.maybeCompleteValidation``): a reader whose last batch was written under leader epoch
    ``mark[0]`` and ends below ``mark[1]`` asks the log where that epoch ends (:func:`epoch_end_offset`, the
    latest epoch ending at ``log_end``); an end below ``mark[1]`` is a divergence. None when the log has not
    diverged, or nothing tells (no mark, no entries). An epoch the log never held between two it holds (two
    unclean elections in a row) passes, as it does for Kafka's consumer."""
    if mark is None or not entries or mark[1] <= 0:
        return None
    answer = epoch_end_offset(entries, mark[0], log_end)
    if answer is None:
        return Divergence(None)
    return Divergence(answer[1]) if answer[1] < mark[1] else None


_PROPERTY_SEPARATOR = re.compile(r"(?<!\\)[=:]|(?<!\\)[ \t\f]")
_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def _unescape(text: str) -> str:
    out = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text):
            nxt = text[i + 1]
            if nxt == "u" and i + 6 <= len(text):
                try:
                    out.append(chr(int(text[i + 2:i + 6], 16)))
                    i += 6
                    continue
                except ValueError:
                    pass
            out.append(_ESCAPES.get(nxt, nxt))
            i += 2
            continue
        out.append(ch)
        i += 1
    return "".join(out)


def parse_meta_properties(data: bytes, path: str | None = None) -> MetaProperties:
    """A ``meta.properties`` file (``java.util.Properties`` syntax: ``#``/``!`` comments, ``key=value``,
    ``key: value`` or ``key value``, backslash escapes and continuation lines)."""
    properties: list[tuple[str, str]] = []
    positions: dict[str, tuple[int, int]] = {}
    pending = ""
    pending_start = None
    for number, position, line in _lines(data, path):
        stripped = line.lstrip(" \t\f")
        if not pending and (not stripped or stripped[0] in "#!"):
            continue
        if pending_start is None:
            pending_start = (number, position)
        trailing = len(stripped) - len(stripped.rstrip("\\"))
        if trailing % 2 == 1:  # odd number of backslashes: the line continues
            pending += stripped[:-1]
            continue
        logical = pending + stripped
        pending = ""
        start = pending_start
        pending_start = None
        match = _PROPERTY_SEPARATOR.search(logical)
        if match is None:
            key, value = logical, ""
        else:
            key = logical[:match.start()]
            rest = logical[match.end():].lstrip(" \t\f")
            if match.group() in " \t\f" and rest[:1] in ("=", ":"):
                rest = rest[1:].lstrip(" \t\f")
            value = rest
        key = _unescape(key)
        properties.append((key, _unescape(value)))
        positions[key] = start
    values = dict(properties)

    def number_of(key: str, bits: int) -> int | None:
        if key not in values:
            return None
        line_number, position = positions[key]
        return _int(values[key].strip(), key, path, line_number, position, bits=bits)

    version = number_of("version", 32)
    if version is None:
        raise CorruptCheckpointError("meta.properties has no 'version'", path=path, position=0)
    node_id = number_of("node.id", 32)
    if node_id is None:
        node_id = number_of("broker.id", 32)
    return MetaProperties(version, values.get("cluster.id"), node_id, values.get("directory.id"), tuple(properties))


def decode_kafka_uuid(text: str, path: str | None = None, position: int | None = None) -> uuid.UUID:
    """A Kafka ``Uuid`` string (base64url of 16 bytes, no padding, ``Uuid.fromString``) as a :class:`uuid.UUID`."""
    if not re.fullmatch(r"[A-Za-z0-9_-]{22}", text):
        raise CorruptCheckpointError(f"{text!r} is not a 22-character base64url Kafka Uuid", path=path,
                                     position=position)
    raw = base64.urlsafe_b64decode(text + "==")
    return uuid.UUID(bytes=raw)


def parse_partition_metadata(data: bytes, path: str | None = None) -> PartitionMetadata:
    """A ``partition.metadata`` file: ``version: 0`` then ``topic_id: <Uuid>`` (the zero Uuid is rejected)."""
    lines = list(_lines(data, path))
    if not lines:
        raise CorruptCheckpointError("empty partition.metadata", path=path, position=0)
    number, position, line = lines[0]
    parts = [p for p in _WHITESPACE.split(line) if p]
    if len(parts) != 2:
        raise CorruptCheckpointError(f"line 1: malformed line {line!r}", path=path, position=position)
    version = _int(parts[1], "version", path, number, position, bits=32)
    if version < 0:
        raise CorruptCheckpointError(f"line 1: unrecognised partition.metadata version {version}", path=path,
                                     position=position)
    if len(lines) < 2:
        raise CorruptCheckpointError("partition.metadata has no topic_id line", path=path, position=len(data))
    number, position, line = lines[1]
    parts = [p for p in _WHITESPACE.split(line) if p]
    if len(parts) != 2:
        raise CorruptCheckpointError(f"line 2: malformed line {line!r}", path=path, position=position)
    topic_uuid = decode_kafka_uuid(parts[1], path, position)
    if topic_uuid.int == 0:
        raise CorruptCheckpointError("line 2: the zero Uuid is not a valid topic id", path=path, position=position)
    return PartitionMetadata(version, parts[1], topic_uuid)


# -- file readers -------------------------------------------------------------------------------------------------

def read_offset_checkpoint(path: str, filesystem: pafs.FileSystem | None = None) -> dict[tuple[str, int], int]:
    return parse_offset_checkpoint(_fs.read_small_file(path, filesystem, max_bytes=_CHECKPOINT_CAP), path)


def read_leader_epoch_checkpoint(path: str, filesystem: pafs.FileSystem | None = None) -> tuple[EpochEntry, ...]:
    return parse_leader_epoch_checkpoint(_fs.read_small_file(path, filesystem, max_bytes=_CHECKPOINT_CAP), path)


def read_meta_properties(path: str, filesystem: pafs.FileSystem | None = None) -> MetaProperties:
    return parse_meta_properties(_fs.read_small_file(path, filesystem, max_bytes=1024 * 1024), path)


def read_partition_metadata(path: str, filesystem: pafs.FileSystem | None = None) -> PartitionMetadata:
    return parse_partition_metadata(_fs.read_small_file(path, filesystem, max_bytes=1024 * 1024), path)
