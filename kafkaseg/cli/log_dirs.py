"""``kafkaseg log-dirs DIR...``: ``kafka-log-dirs.sh --describe`` on log dirs, plus what ``du`` would say.

``kafka-log-dirs.sh`` asks each broker for ``DescribeLogDirs`` and prints one JSON line::

    {"version":1,"brokers":[{"broker":1,"logDirs":[{"logDir":"/var/kafka-logs","error":null,
      "partitions":[{"partition":"orders-0","size":123456,"offsetLag":0,"isFuture":false}]}]}]}

``--json`` prints that line, computed as the broker computes it (``ReplicaManager.describeLogDirs``,
core/src/main/scala/kafka/server/ReplicaManager.scala; the tool is tools/.../LogDirsCommand.java):

* ``broker``: ``node.id`` (``broker.id``) of the log dir's ``meta.properties``; -1 when it has none. Log dirs of
  one broker are listed under it, in the order given.
* ``size``: ``UnifiedLog.size``, the sum of the partition's ``.log`` files (indexes, snapshots and files awaiting
  deletion are not counted: ``retention.bytes`` compares the same sum).
* ``offsetLag``: for a current replica ``max(highWatermark - logEndOffset, 0)``, which is 0 on a broker (it keeps
  the high watermark at or below the log end); for a ``-future`` replica (a move between log dirs under way,
  ``kafka-reassign-partitions.sh`` with log dirs) the current replica's log end minus the future one's, the
  bytes still to copy in offsets. -1 (``INVALID_OFFSET_LAG``) when the current replica is not in the dirs given.
* ``isFuture``: the replica is a ``<topic>-<partition>.<id>-future`` folder.
* ``error``: null, or ``org.apache.kafka.common.errors.KafkaStorageException`` when the broker would take the log
  dir offline at startup (an unreadable ``meta.properties`` or checkpoint file: kafkaseg still lists the
  partitions it can read there), or for a path that is no log dir it can read (missing, empty as an unmounted
  disk's mount point, unreadable: no partitions, broker -1, exit status 2); the other dirs are still described,
  and stderr says why.
* ``--broker-list`` naming a broker none of the dirs belongs to is the tool's error (``The given brokers do not
  exist from --broker-list``, exit 1, nothing printed).

Beyond Kafka's keys (a JSON reader that knows only those ignores them): per log dir ``totalBytes`` and
``usableBytes`` of its filesystem (as the Admin API's ``LogDirDescription``, KIP-827; -1 when unknown, e.g. on an
object store); ``diskBytes``, everything in the log dir as ``du -sB1`` counts it (allocated blocks, the
folders' own included: the sparse preallocated tail of an active segment's index counts only as written; stored
sizes on an object store; files in the log dir and its folders, one level down, which is all a broker writes,
and a file hard-linked twice counted twice), of
which ``pendingDeletionBytes`` (``.deleted`` files and ``-delete`` folders the broker has yet to remove, after
``file.delete.delay.ms``) and ``strayBytes`` (``-stray`` folders: replicas a KRaft broker found it no longer
hosts, kept for an operator to remove); per partition ``segments`` and ``diskBytes`` (its folder's files, its
``.deleted`` files included). With ``--topic-list``, the last two log dir keys count those topics' folders only.

Without ``--json``: a table per log dir and one per topic (totals across the dirs given, largest first);
``--partitions`` adds one row per replica.
"""

from __future__ import annotations

import os
import shutil
import sys
from dataclasses import dataclass, field
from typing import Iterable, Sequence

from kafkaseg.errors import BadPathError, KafkaSegError, LayoutError, SegmentNameError
from kafkaseg.storage import fs as _fs
from kafkaseg.storage.layout import (
    PartitionDir,
    log_dirs_below,
    log_dirs_named_as_partitions,
    parse_topic_partition,
    partition_log_end_offset,
    read_log_dir,
    read_partition_dir,
    refuse_empty_path,
    renamed_partition,
    segment_log_base,
)

__all__ = ["ReplicaUsage", "LogDirUsage", "describe_log_dirs", "as_kafka_json"]

#: ``DescribeLogDirsResponse.INVALID_OFFSET_LAG``: the lag is not known
INVALID_OFFSET_LAG = -1
#: ``DescribeLogDirsResponse.UNKNOWN_VOLUME_BYTES``
UNKNOWN_VOLUME_BYTES = -1
#: what ``kafka-log-dirs.sh`` prints for a log dir a broker has offline
STORAGE_ERROR = "org.apache.kafka.common.errors.KafkaStorageException"


@dataclass
class ReplicaUsage:
    """One replica (partition folder) of a log dir."""

    topic: str
    partition: int
    path: str
    size: int  # Kafka's UnifiedLog.size: the .log files
    disk_bytes: int  # every file of the folder, as allocated (local) or stored (object store)
    segments: int
    is_future: bool = False
    offset_lag: int = 0
    log_end_offset: int | None = None  # walked for future replicas and their current ones only
    partition_dir: PartitionDir | None = field(default=None, repr=False, compare=False)

    @property
    def name(self) -> str:
        return f"{self.topic}-{self.partition}"


@dataclass
class LogDirUsage:
    """One log dir as ``DescribeLogDirs`` answers for it, and its disk usage."""

    path: str
    broker: int  # -1: no meta.properties
    error: str | None = None
    why: list[str] = field(default_factory=list)  # why ``error`` is set, and what could not be read
    replicas: list[ReplicaUsage] = field(default_factory=list)
    total_bytes: int = UNKNOWN_VOLUME_BYTES
    usable_bytes: int = UNKNOWN_VOLUME_BYTES
    disk_bytes: int = 0  # everything in the log dir (``du``), the parts below included
    pending_deletion_bytes: int = 0  # .deleted files and -delete folders, of the topics asked for
    stray_bytes: int = 0  # -stray folders, of the topics asked for
    readable: bool = True  # False: the path could not be read as a log dir (``why`` says why)

    @property
    def size(self) -> int:
        return sum(r.size for r in self.replicas)


def describe_log_dirs(paths: Sequence[str], *, topics: Iterable[str] | None = None) -> list[LogDirUsage]:
    """``DescribeLogDirs`` of every log dir in ``paths`` (see the module docstring): only replicas of ``topics``
    when given (``--topic-list``). Reads listings, checkpoints and, for ``-future`` replicas, the tail of the
    active segments: no record data. A path that cannot be read as a log dir (missing, empty as an unmounted
    disk's mount point, a partition's folder, unreadable) is described as offline, ``readable`` false and why,
    as a broker answers for a log dir it has offline, and the others are still described."""
    wanted = set(topics) if topics else None
    usages: list[LogDirUsage] = []
    seen: set = set()
    for given in paths:
        try:
            refuse_empty_path(given)
            filesystem, path = _fs.open_filesystem(os.fspath(given))
        except LayoutError as err:
            usages.append(LogDirUsage(path=str(given), broker=-1, error=STORAGE_ERROR, why=[str(err)],
                                      readable=False))
            continue
        if _fs.is_local(filesystem):
            path = os.path.abspath(path)  # as the broker names its log dirs
        # one folder given by two names (a symlink, a bind mount) is described once, by the first
        key = (_fs.store_key(filesystem), _folder_key(path) if _fs.is_local(filesystem) else path.rstrip("/"))
        if key in seen:
            continue
        seen.add(key)
        try:
            usages.append(_describe_one(path, filesystem, wanted))
        except LayoutError as err:
            usages.append(LogDirUsage(path=path, broker=-1, error=STORAGE_ERROR, why=[str(err)], readable=False))
    _future_lags(usages)
    return usages


def _folder_key(path: str):
    """A local folder by device and inode (a symlink and a bind mount name the same one), else by its real path."""
    try:
        info = os.stat(path)
    except OSError:
        return os.path.realpath(path)
    return info.st_dev, info.st_ino


def _wanted(name: str, parsed: tuple[str, int] | None, wanted: set | None) -> bool:
    """Whether folder ``name`` (a partition, or a ``-delete``/``-future``/``-stray`` copy of ``parsed``) is of a
    topic in ``wanted``: the broker cuts the topic of a ``-delete``/``-stray`` name to keep it within 255
    characters (``LocalLog.logDirNameWithSuffixCappedLength``), so a cut name counts for every topic it starts."""
    if wanted is None or parsed is None:
        return True
    return any(_fs.names_topic(name, parsed[0], topic) for topic in wanted)


def _describe_one(path: str, filesystem, wanted: set | None) -> LogDirUsage:
    entry = _fs.stat(path, filesystem)
    if entry is None:
        raise BadPathError(f"{path}: no such directory (a log dir that is not there, or a disk not mounted)")
    if not entry.is_dir:
        raise BadPathError(f"{path}: not a log dir (a file; give the log dirs, as log.dirs lists them)")
    # (a partition folder with a segment that is no readable file: a partition with its error, described below;
    # one with a segment file named past a 64-bit long: the log dir offline, as a broker fails to load it)
    log_dir = read_log_dir(path, filesystem, select=lambda t, p: _wanted(f"{t}-{p}", (t, p), wanted),
                           partition_errors=True)
    # one listing, read_log_dir's: a folder renamed meanwhile (a move finishing) is then seen once, as it was
    folders = [(pdir.path, _fs.basename(pdir.path)) for pdir in log_dir.partitions]
    folders += [(_fs.join(path, name), name) for name, _ in log_dir.skipped if name != "(log dir)"]
    folders += [(folder, _fs.basename(folder)) for _, _, folder in log_dir.unselected]
    partly = {pdir.path: pdir.error for pdir in log_dir.partitions if pdir.error is not None}
    for error in partly.values():
        if isinstance(error, SegmentNameError):  # LogLoader fails the log, and the broker the log dir's load
            raise error
    listing = _fs.list_dir(path, filesystem)
    files = [e for e in listing if not e.is_dir]
    known = log_dir.meta is not None or log_dir.high_watermarks or log_dir.recovery_points \
        or log_dir.log_start_offsets or log_dir.unreadable_checkpoints
    kafka_folders = [name for _, name in folders if parse_topic_partition(name) is not None
                     or name.endswith(("-delete", "-future", "-stray"))]
    if not known and not kafka_folders:
        below = ""
        if parse_topic_partition(_fs.basename(path)):
            what = "a partition's folder? give its log dir"
        elif not folders and not files:
            what = "empty: a disk not mounted?"
        else:
            what = "no meta.properties, checkpoint files or <topic>-<partition> folders"
            below = log_dirs_below(listing, filesystem, verb="give")  # /var/lib/kafka for /var/lib/kafka/data
        raise BadPathError(f"{path}: not a log dir ({what}){below}")
    nested = [] if known else log_dirs_named_as_partitions(listing, filesystem)
    if nested:  # /data holding kafka-logs-1, kafka-logs-2: not two empty partitions of a topic 'kafka-logs'
        raise BadPathError(f"{path}: not a log dir (no meta.properties or checkpoint files; it holds log dirs named "
                           f"like partition folders: {', '.join(shown for _, shown in nested)}; give those)")
    node = log_dir.meta.node_id if log_dir.meta is not None and log_dir.meta.node_id is not None else -1
    usage = LogDirUsage(path=path, broker=node)
    offline = [f"unreadable {name}: {why}" for name, why in log_dir.unreadable_checkpoints]
    offline += [note for name, note in log_dir.skipped if name == "(log dir)" and "meta.properties" in note]
    if offline:
        usage.error = STORAGE_ERROR
        usage.why.extend(offline)
    if _fs.is_local(filesystem):
        try:
            disk = shutil.disk_usage(path)
            usage.total_bytes, usage.usable_bytes = disk.total, disk.free
        except OSError:
            pass
    usage.disk_bytes = _own_blocks(path, filesystem) + sum(_allocated(e.path, e.size, filesystem) for e in files)
    read = {p.path: p for p in log_dir.partitions if p.error is None}
    # every folder's files (threads on an object store)
    sizes = _fs.map_files(lambda f: _folder_disk_bytes(f[0], filesystem), folders, [filesystem])
    for (folder, name), (on_disk, deleted) in zip(folders, sizes):
        usage.disk_bytes += on_disk
        renamed = name.endswith(("-delete", "-future", "-stray"))
        parsed = renamed_partition(name) if renamed else parse_topic_partition(name)
        if not _wanted(name, parsed, wanted):
            continue
        if folder in read:
            usage.replicas.append(_replica(read[folder], on_disk))
            usage.pending_deletion_bytes += deleted
        elif folder in partly:
            # a broker's LogLoader passes over entries that are not files (File.isFile): the log is its .log files
            logs = [e for e in _fs.list_dir(folder, filesystem)
                    if not e.is_dir and e.readable and segment_log_base(e.name) is not None]
            usage.replicas.append(ReplicaUsage(topic=parsed[0], partition=parsed[1], path=folder,
                                               size=sum(e.size for e in logs), disk_bytes=on_disk,
                                               segments=len(logs)))
            usage.pending_deletion_bytes += deleted
            usage.why.append(f"{folder}: {partly[folder]} (a broker passes over it; its size counts the "
                             ".log files that are files)")
        elif name.endswith("-future"):
            if parsed is None:
                usage.why.append(f"{folder}: a -future folder whose name does not say its partition: left out")
                continue
            try:
                pdir = read_partition_dir(folder, filesystem, log_dir=log_dir, topic=parsed[0],
                                          partition=parsed[1])
            except LayoutError as err:
                if _fs.exists(folder, filesystem):
                    raise
                usage.why.append(f"{folder}: gone while read (the move finished: describe again): {err}")
                continue
            usage.replicas.append(_replica(pdir, on_disk, is_future=True))
            usage.pending_deletion_bytes += deleted
        elif name.endswith("-delete"):
            usage.pending_deletion_bytes += on_disk
        elif name.endswith("-stray"):
            usage.stray_bytes += on_disk
    usage.replicas.sort(key=lambda r: (r.topic, r.partition, r.is_future))
    return usage


def _replica(pdir: PartitionDir, disk_bytes: int, is_future: bool = False) -> ReplicaUsage:
    return ReplicaUsage(topic=pdir.topic, partition=pdir.partition, path=pdir.path, size=pdir.size_bytes,
                        disk_bytes=disk_bytes, segments=len(pdir.segments), is_future=is_future, partition_dir=pdir)


def _allocated(path: str, size: int, filesystem) -> int:
    """Bytes a file takes: its allocated blocks on a local disk (``du``: a sparse preallocated index counts only
    as written), its stored ``size`` elsewhere; 0 for one gone meanwhile."""
    if not _fs.is_local(filesystem):
        return size
    try:
        st = os.lstat(path)
    except OSError:
        return 0
    return st.st_blocks * 512 if hasattr(st, "st_blocks") else st.st_size


def _own_blocks(path: str, filesystem) -> int:
    """A local directory's own blocks (its entries' names), which ``du`` counts; nothing on an object store."""
    return _allocated(path, 0, filesystem) if _fs.is_local(filesystem) else 0


def _folder_disk_bytes(path: str, filesystem) -> tuple[int, int]:
    """``(bytes, of which .deleted files)`` a folder takes, as ``du`` counts it (see :func:`_allocated`; the
    folder's own blocks too); a folder gone meanwhile (a deletion finishing) takes none."""
    try:
        entries = _fs.list_dir(path, filesystem)
    except LayoutError:
        return 0, 0
    total, deleted = _own_blocks(path, filesystem), 0
    for entry in entries:
        if entry.is_dir:
            continue
        size = _allocated(entry.path, entry.size, filesystem)
        total += size
        if entry.name.endswith(".deleted"):
            deleted += size
    return total, deleted


def _future_lags(usages: list[LogDirUsage]) -> None:
    """``getLogEndOffsetLag``: a future replica's lag is its current replica's log end minus its own, the current
    replica found among the same broker's log dirs given; current replicas lag 0."""
    futures = [(u, r) for u in usages for r in u.replicas if r.is_future]
    if not futures:
        return
    current = {(u.broker, r.topic, r.partition): (u, r) for u in usages for r in u.replicas if not r.is_future}
    for usage, future in futures:
        future.offset_lag = INVALID_OFFSET_LAG
        found = current.get((usage.broker, future.topic, future.partition))
        if found is None or usage.broker < 0:
            why = "no meta.properties says which broker's it is" if usage.broker < 0 else \
                f"its current replica is not in broker {usage.broker}'s log dirs given"
            usage.why.append(f"{future.name} (-future): {why}, offsetLag -1")
            continue
        replica = found[1]
        if replica.partition_dir is None or future.partition_dir is None:
            usage.why.append(f"{future.name}: a replica could not be read, offsetLag -1")
            continue
        try:
            if future.log_end_offset is None:
                future.log_end_offset = partition_log_end_offset(future.partition_dir)
            if replica.log_end_offset is None:
                replica.log_end_offset = partition_log_end_offset(replica.partition_dir)
        except KafkaSegError as err:
            usage.why.append(f"{future.name}: log end offset not read, offsetLag -1: {err}")
            continue
        if future.log_end_offset is not None and replica.log_end_offset is not None:
            future.offset_lag = replica.log_end_offset - future.log_end_offset


def as_kafka_json(usages: Sequence[LogDirUsage]) -> dict:
    """The object ``kafka-log-dirs.sh --describe`` prints, with kafkaseg's extra keys (module docstring)."""
    brokers: dict[int, list] = {}
    for u in usages:
        brokers.setdefault(u.broker, []).append({
            "logDir": u.path, "error": u.error,
            "partitions": [{"partition": r.name, "size": r.size, "offsetLag": r.offset_lag, "isFuture": r.is_future,
                            "segments": r.segments, "diskBytes": r.disk_bytes} for r in u.replicas],
            "totalBytes": u.total_bytes, "usableBytes": u.usable_bytes, "diskBytes": u.disk_bytes,
            "pendingDeletionBytes": u.pending_deletion_bytes, "strayBytes": u.stray_bytes})
    return {"version": 1, "brokers": [{"broker": b, "logDirs": dirs} for b, dirs in brokers.items()]}


def human_bytes(n: int) -> str:
    """1023 B, 1.0 KiB, 12.3 MiB, ... (binary units, as ``du -h``)."""
    if n < 0:
        return "-"
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            return f"{n} B" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


def run(args, console) -> int:
    """The ``log-dirs`` command; returns the exit status (2 when a log dir could not be read at all)."""
    import json

    topics = [t for t in (args.topic_list or "").split(",") if t]
    brokers = None
    if args.broker_list:
        try:
            brokers = [int(b) for b in args.broker_list.split(",") if b]
        except ValueError:
            from kafkaseg.errors import InvalidOptionError

            raise InvalidOptionError(f"--broker-list {args.broker_list!r}: broker ids are integers, e.g. 0,1,2") \
                from None
    usages = describe_log_dirs(args.paths, topics=topics or None)
    for u in usages:
        for why in u.why:
            print(why if not u.path.strip() or why.startswith(f"{u.path}: ") else f"{u.path}: {why}", file=sys.stderr)
    status = 0 if all(u.readable for u in usages) else 2
    if brokers is not None:
        present = sorted({u.broker for u in usages if u.readable})
        absent = sorted(set(brokers) - set(present))
        if absent:  # LogDirsCommand's TerseException, exit 1, nothing else printed
            offline = [u.path for u in usages if not u.readable]
            print(f"ERROR: The given brokers do not exist from --broker-list: {','.join(map(str, absent))}. Current "
                  f"existent brokers: {','.join(map(str, present))} (node.id of the log dirs' meta.properties"
                  + (f"; not readable: {', '.join(offline)}, said above)" if offline else ")"), file=sys.stderr)
            return max(status, 1)
        # a log dir that cannot be read says no broker: it stays in the output, whichever broker it belongs to
        usages = [u for u in usages if u.broker in set(brokers) or not u.readable]
    found = {r.topic for u in usages for r in u.replicas}
    for topic in topics:
        if topic not in found:  # kafka-log-dirs.sh prints nothing for it and exits 0 (a topic hosted on other
            # brokers is usual on one broker's disks); a hint in case it is a typo
            from kafkaseg.errors import did_you_mean

            print(f"no replica of topic {topic} in the log dirs given"
                  + did_you_mean(topic, found | _all_topics(usages)), file=sys.stderr)
    if args.json:
        print(json.dumps(as_kafka_json(usages), separators=(",", ":")))
        return status
    size = (lambda n: str(n)) if args.bytes else human_bytes
    from rich.table import Table

    dirs = Table(title="log dirs", show_lines=False)
    for column in ("log dir", "broker", "partitions", "size", "on disk", "pending deletion", "stray", "fs used",
                   "fs usable", "error"):
        dirs.add_column(column, justify="left" if column in ("log dir", "error") else "right")
    for u in usages:
        used = u.total_bytes - u.usable_bytes if u.total_bytes >= 0 else -1
        futures = sum(r.is_future for r in u.replicas)
        dirs.add_row(u.path, str(u.broker), f"{len(u.replicas) - futures}" + (f" (+{futures} future)" if futures
                                                                              else ""),
                     size(u.size), size(u.disk_bytes), size(u.pending_deletion_bytes), size(u.stray_bytes),
                     size(used), size(u.usable_bytes), u.error or "")
    console.print(dirs)
    by_topic: dict[str, list[ReplicaUsage]] = {}
    for u in usages:
        for r in u.replicas:
            by_topic.setdefault(r.topic, []).append(r)
    topics_table = Table(title="topics (all replicas in the dirs given)", show_lines=False)
    for column in ("topic", "partitions", "replicas", "size", "on disk", "largest replica"):
        topics_table.add_column(column, justify="left" if column == "topic" else "right")
    for topic, replicas in sorted(by_topic.items(), key=lambda kv: (-sum(r.size for r in kv[1]), kv[0])):
        largest = max(replicas, key=lambda r: r.size)
        topics_table.add_row(topic, str(len({r.partition for r in replicas})), str(len(replicas)),
                             size(sum(r.size for r in replicas)), size(sum(r.disk_bytes for r in replicas)),
                             f"{largest.name} {size(largest.size)}")
    console.print(topics_table)
    if args.partitions:
        rows = Table(title="replicas", show_lines=False)
        for column in ("partition", "log dir", "broker", "segments", "size", "on disk", "offsetLag", "future"):
            rows.add_column(column, justify="left" if column in ("partition", "log dir") else "right")
        for u in usages:
            for r in u.replicas:
                rows.add_row(r.name, u.path, str(u.broker), str(r.segments), size(r.size), size(r.disk_bytes),
                             str(r.offset_lag), "yes" if r.is_future else "")
        console.print(rows)
    return status


def _all_topics(usages: Sequence[LogDirUsage]) -> set:
    """Every topic with a partition folder in the log dirs (for a misspelt --topic-list name's hint)."""
    names = set()
    for u in usages:
        if not u.readable:
            continue
        filesystem, path = _fs.open_filesystem(u.path)
        try:
            listing = _fs.list_dir(path, filesystem)
        except LayoutError:
            continue
        for entry in listing:
            parsed = parse_topic_partition(entry.name) if entry.is_dir else None
            if parsed is not None:
                names.add(parsed[0])
    return names
