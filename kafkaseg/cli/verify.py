"""``kafkaseg verify DIR``: every check ``DumpLogSegments`` makes, plus CRCs, checkpoints and stray files.

Per segment (one read of the ``.log``, in bounded chunks):

* batch framing and CRCs (CRC-32C for v2, CRC-32 for legacy), and the tail: a truncated last batch (normal for an
  active segment of a live or crashed broker: a warning there, an error in a rolled segment), a zero-filled
  preallocated tail (info), any other invalid trailing bytes (error);
* offsets: strictly increasing across batches and records; the first batch at or above the file's base offset; the
  last offset below the next segment's base; non-consecutive offsets are listed and explained (compaction gaps:
  info; records going backwards or repeating: error);
* the ``.index`` against the log (each entry at a batch start whose lastOffset is the entry's offset) and its sanity
  check; the ``.timeindex`` against the log (offset in a batch, timestamp that batch's max, increasing) and its
  sanity check; batch maxTimestamp equal to the largest record timestamp (CreateTime v2); ``.txnindex`` sanity;
* ``.snapshot`` producer snapshots parse and pass their CRC; KRaft ``.checkpoint`` snapshots' batches.

Per log dir: offset checkpoints that cannot be read or parsed (an error for the high-watermark and log-start ones,
which decide where reads end and start; a warning for the recovery point and cleaner offset, which Kafka resets).

Per partition: high watermark <= log end offset, log start offset inside [first base, log end], recovery point <=
log end, leader-epoch checkpoint offsets increasing and <= log end, gaps between segments; files Kafka would
delete or ignore (``.deleted``, ``.cleaned``, ``.swap``, orphaned indexes, unknown names).

Each problem names the file and byte position. Severity: ``error`` (exit status 1), ``warning``, ``info``.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

import pyarrow as pa

from kafkaseg.cli.common import whole_partition_offsets
from kafkaseg.decode import decode
from kafkaseg.decode.api import DecodeRequest
from kafkaseg.errors import CorruptCheckpointError, KafkaSegError
from kafkaseg.storage import fs as _fs
from kafkaseg.storage.indexes import verify_offset_index, verify_time_index
from kafkaseg.storage.layout import PartitionDir, discover
from kafkaseg.storage.offset_index import OffsetIndex
from kafkaseg.storage.producer_snapshot import read_producer_snapshot
from kafkaseg.storage.segment import BatchTable, SegmentReader
from kafkaseg.storage.time_index import TimeIndex
from kafkaseg.storage.txn_index import TransactionIndex
from kafkaseg.wire.crc import computed_crc

__all__ = ["Problem", "SegmentSummary", "PartitionSummary", "VerifyReport", "verify_paths", "verify_partition"]

ERROR, WARNING, INFO = "error", "warning", "info"
_KNOWN_FILE = re.compile(r"^(\d+)\.(log|index|timeindex|txnindex|snapshot)$|^\d+-\d+\.checkpoint$")
_TEMP_FILE = re.compile(r"\.(deleted|cleaned|swap)$")
_SIDE_FILES = {"leader-epoch-checkpoint", "partition.metadata"}
_CHUNK = 8 << 20


@dataclass(frozen=True)
class Problem:
    severity: str
    file: str
    position: int | None
    message: str

    def __str__(self) -> str:
        where = self.file if self.position is None else f"{self.file} @ byte {self.position}"
        return f"{self.severity.upper()}: {where}: {self.message}"

    def as_dict(self) -> dict:
        return {"severity": self.severity, "file": self.file, "position": self.position, "message": self.message}


@dataclass
class SegmentSummary:
    path: str
    base_offset: int
    size: int
    batches: int = 0
    records: int = 0
    first_offset: int | None = None
    last_offset: int | None = None
    bad_crcs: int = 0
    compaction_gaps: int = 0
    unreadable: bool = False


@dataclass
class PartitionSummary:
    topic: str
    partition: int
    path: str
    segments: list[SegmentSummary] = field(default_factory=list)
    log_start_offset: int | None = None
    log_end_offset: int | None = None
    high_watermark: int | None = None
    note: str | None = None  # only some segments of the partition given: where its offsets come from

    @property
    def name(self) -> str:
        return f"{self.topic}-{self.partition}"


@dataclass
class VerifyReport:
    partitions: list[PartitionSummary] = field(default_factory=list)
    problems: list[Problem] = field(default_factory=list)
    checked_log_dirs: set = field(default_factory=set, repr=False)  # log-dir files are reported once per log dir

    @property
    def errors(self) -> list[Problem]:
        return [p for p in self.problems if p.severity == ERROR]

    @property
    def ok(self) -> bool:
        return not self.errors

    def as_dict(self) -> dict:
        return {
            "ok": self.ok,
            "partitions": [{
                "topic": p.topic, "partition": p.partition, "path": p.path, "logStartOffset": p.log_start_offset,
                "logEndOffset": p.log_end_offset, "highWatermark": p.high_watermark, "note": p.note,
                "segments": [s.__dict__ for s in p.segments]} for p in self.partitions],
            "problems": [p.as_dict() for p in self.problems],
        }


def _walk_segment(pdir: PartitionDir, i: int, report: VerifyReport, summary: SegmentSummary,
                  last_offset_before: int, deep: bool) -> tuple[BatchTable, int]:
    """Read one segment once: headers, CRCs, record offsets and timestamps. Returns the batch table and the last
    offset seen."""
    import numpy as np

    seg = pdir.segments[i]
    path = seg.log_path
    problems = report.problems
    positions, bases, lasts, stamps = [], [], [], []
    last_offset = last_offset_before
    is_active = i == len(pdir.segments) - 1
    with SegmentReader(path, pdir.filesystem) as reader:
        walk = reader.chunks(0, target_bytes=_CHUNK)
        try:
            for chunk_position, buf in walk:
                from kafkaseg.wire.batch import iter_headers

                for header in iter_headers(buf):
                    position = chunk_position + header.position
                    summary.batches += 1
                    positions.append(position)
                    bases.append(header.base_offset)
                    lasts.append(header.last_offset)
                    stamps.append(header.max_timestamp)
                    if summary.first_offset is None:
                        summary.first_offset = header.base_offset
                        if header.magic >= 2 and header.base_offset < seg.base_offset:
                            problems.append(Problem(ERROR, path, position,
                                                    f"first batch's base offset {header.base_offset} is below the "
                                                    f"segment's base offset {seg.base_offset} (from its name)"))
                    if computed_crc(buf, header) != header.crc:
                        summary.bad_crcs += 1
                        problems.append(Problem(ERROR, path, position,
                                                f"CRC mismatch in batch {header.base_offset}..{header.last_offset}: "
                                                f"stored {header.crc}, computed {computed_crc(buf, header)}"))
                        continue
                    if header.magic >= 2 and header.base_offset <= last_offset and header.records_count != 0:
                        problems.append(Problem(ERROR, path, position,
                                                f"batch base offset {header.base_offset} does not increase "
                                                f"(previous offset {last_offset})"))
                    if not deep:
                        if last_offset >= 0 and header.base_offset > last_offset + 1 and header.magic >= 2:
                            summary.compaction_gaps += 1
                        last_offset = max(last_offset, header.last_offset)
                        continue
                    try:
                        records = _decode_one(buf, header, path, chunk_position)
                    except KafkaSegError as err:
                        problems.append(Problem(ERROR, path, position,
                                                f"cannot decode batch: {getattr(err, 'detail', err)}"))
                        last_offset = max(last_offset, header.last_offset)
                        continue
                    offsets, record_stamps = records
                    summary.records += len(offsets)
                    for offset in offsets:
                        if offset <= last_offset:
                            problems.append(Problem(ERROR, path, position,
                                                    f"record offset {offset} does not increase (previous {last_offset})"))
                        elif last_offset >= 0 and offset != last_offset + 1:
                            summary.compaction_gaps += 1
                        last_offset = max(last_offset, offset)
                    if (offsets and header.magic == 2 and header.timestamp_type == 0
                            and max(record_stamps) != header.max_timestamp):
                        problems.append(Problem(ERROR, path, position,
                                                f"batch maxTimestamp {header.max_timestamp} differs from its "
                                                f"records' largest timestamp {max(record_stamps)}"))
                    if offsets and header.magic == 2 and offsets[-1] > header.last_offset:
                        problems.append(Problem(ERROR, path, position,
                                                f"record offset {offsets[-1]} is past the batch's last offset "
                                                f"{header.last_offset}"))
        except KafkaSegError as err:
            problems.append(Problem(ERROR, path, getattr(err, "position", None),
                                    f"corrupt framing: {getattr(err, 'detail', err)}"))
        tail = walk.tail
        if tail is not None:
            if tail.reason == "zero-filled tail":
                problems.append(Problem(INFO, path, tail.position,
                                        f"{tail.length} zero bytes after the last batch (preallocated segment)"))
            elif is_active:
                problems.append(Problem(WARNING, path, tail.position,
                                        f"{tail.length} invalid bytes at the end of the active segment "
                                        f"({tail.detail}); a broker would truncate them on recovery"))
            else:
                problems.append(Problem(ERROR, path, tail.position,
                                        f"{tail.length} invalid bytes at the end of a rolled segment ({tail.detail})"))
    summary.last_offset = None if not lasts else max(lasts)
    arr = lambda xs: np.asarray(xs, dtype=np.int64)  # noqa: E731
    table = BatchTable(arr(positions), arr(bases), arr(lasts), arr(stamps), tail)
    return table, last_offset


def _decode_one(buf, header, path: str, chunk_position: int) -> tuple[list[int], list[int]]:
    view = memoryview(buf)[header.position:header.end]
    result = decode(view, DecodeRequest(path=path, base_position=chunk_position + header.position, verify_crc=False,
                                        include_control=True, max_batch_bytes=max(header.size, 1 << 20)))
    offsets = result.columns["offset"].to_pylist()
    stamps = [us // 1000 if us is not None and us >= 0 else -1
              for us in result.columns["timestamp"].cast(pa.int64()).to_pylist()]
    return offsets, stamps


def _check_indexes(pdir: PartitionDir, i: int, table: BatchTable, report: VerifyReport) -> None:
    seg = pdir.segments[i]
    problems = report.problems
    is_active = i == len(pdir.segments) - 1
    with SegmentReader(seg.log_path, pdir.filesystem) as reader:
        if seg.index_path:
            try:
                index = OffsetIndex.load(seg.index_path, seg.base_offset, pdir.filesystem)
                for p in index.sanity_problems(seg.log_size):
                    problems.append(Problem(ERROR, seg.index_path, p.position, f"sanity check: {p.detail}"))
                for m in verify_offset_index(index, reader, table=table):
                    problems.append(Problem(ERROR, m.file or seg.index_path, m.position, m.detail))
            except KafkaSegError as err:
                problems.append(Problem(ERROR, seg.index_path, getattr(err, "position", None), str(err)))
        elif seg.log_size and not is_active:
            problems.append(Problem(WARNING, seg.log_path, None, "no .index file (a broker rebuilds it)"))
        if seg.timeindex_path:
            try:
                time_index = TimeIndex.load(seg.timeindex_path, seg.base_offset, pdir.filesystem)
                end = int(table.last_offsets.max()) + 1 if len(table) else seg.base_offset
                for p in time_index.sanity_problems(seg.log_size, log_end_offset=end):
                    problems.append(Problem(ERROR, seg.timeindex_path, p.position, f"sanity check: {p.detail}"))
                for m in verify_time_index(time_index, reader, table=table):
                    problems.append(Problem(ERROR, m.file or seg.timeindex_path, m.position, m.detail))
            except KafkaSegError as err:
                problems.append(Problem(ERROR, seg.timeindex_path, getattr(err, "position", None), str(err)))
        if seg.txnindex_path:
            try:
                txn = TransactionIndex.load(seg.txnindex_path, seg.base_offset, pdir.filesystem)
                for p in txn.sanity_problems():
                    problems.append(Problem(ERROR, seg.txnindex_path, p.position, p.detail))
                if txn.trailing_bytes:
                    problems.append(Problem(WARNING, seg.txnindex_path, len(txn) * txn.ENTRY_SIZE,
                                            f"{txn.trailing_bytes} bytes of a partial entry (ignored)"))
            except KafkaSegError as err:
                problems.append(Problem(ERROR, seg.txnindex_path, getattr(err, "position", None), str(err)))


def _check_files(pdir: PartitionDir, report: VerifyReport) -> None:
    try:
        entries = _fs.list_dir(pdir.path, pdir.filesystem)
    except KafkaSegError:
        return
    names = {e.name for e in entries if not e.is_dir}
    logs = {n.split(".")[0] for n in names if n.endswith(".log")}
    for entry in entries:
        if entry.is_dir:
            continue
        name = entry.name
        if _TEMP_FILE.search(name):
            report.problems.append(Problem(WARNING, entry.path, None,
                                           "temporary file (a broker deletes or completes it at startup)"))
        elif _KNOWN_FILE.match(name):
            stem, kind = name.split(".")[0], name.rsplit(".", 1)[1]
            if kind in ("index", "timeindex", "txnindex") and stem not in logs:
                report.problems.append(Problem(WARNING, entry.path, None,
                                               "orphaned index: no .log with this base offset (a broker deletes it)"))
        elif name not in _SIDE_FILES:
            report.problems.append(Problem(INFO, entry.path, None, "unknown file in a partition folder"))
    unreadable = {f"log dir: unreadable {name}: {why}" for name, why in pdir.unreadable_checkpoints}
    for note in pdir.notes:
        if note not in unreadable:  # reported once, as a problem of the log dir (_check_log_dir_checkpoints)
            report.problems.append(Problem(INFO, pdir.path, None, note))


# A corrupt checkpoint that decides where reads end or start is an error (kafkaseg's readers refuse it); Kafka
# resets a broken recovery point (full recovery) or cleaner offset (clean from the start) with a warning.
_CHECKPOINT_SEVERITY = {"replication-offset-checkpoint": ERROR, "log-start-offset-checkpoint": ERROR,
                        "recovery-point-offset-checkpoint": WARNING, "cleaner-offset-checkpoint": WARNING}


def _check_log_dir_checkpoints(pdir: PartitionDir, report: VerifyReport) -> None:
    """The log dir's corrupt or unreadable offset checkpoints (``PartitionDir.unreadable_checkpoints``), once per
    log dir: the file, the byte where the bad line starts when known, and why."""
    from kafkaseg.storage.checkpoints import read_offset_checkpoint

    if pdir.log_dir is None or pdir.log_dir in report.checked_log_dirs:
        return
    report.checked_log_dirs.add(pdir.log_dir)
    for name, why in pdir.unreadable_checkpoints:
        path = _fs.join(pdir.log_dir, name)
        position, detail, what = None, why, "corrupt or unreadable"
        try:  # read it again for the byte position of the bad line
            read_offset_checkpoint(path, pdir.filesystem)
        except CorruptCheckpointError as err:
            position, detail, what = err.position, err.detail, "corrupt"
        except KafkaSegError as err:
            detail, what = str(err), "unreadable"
        report.problems.append(Problem(_CHECKPOINT_SEVERITY.get(name, ERROR), path, position,
                                       f"{what} checkpoint (not used): {detail}"))


def _check_checkpoints(pdir: PartitionDir, summary: PartitionSummary, report: VerifyReport) -> None:
    leo, lso_ = summary.log_end_offset, summary.log_start_offset
    where = pdir.log_dir or pdir.path
    problems = report.problems
    for path in pdir.snapshot_paths:
        try:
            read_producer_snapshot(path, pdir.filesystem)
        except KafkaSegError as err:
            problems.append(Problem(ERROR, path, getattr(err, "position", None), str(err)))
    if leo is None:
        return
    first_base = pdir.segments[0].base_offset if pdir.segments else None
    if pdir.high_watermark is not None and pdir.high_watermark > leo:
        problems.append(Problem(ERROR, os.path.join(where, "replication-offset-checkpoint"), None,
                                f"{pdir.name}: high watermark {pdir.high_watermark} is above the log end offset {leo}"))
    if pdir.high_watermark is not None and lso_ is not None and pdir.high_watermark < lso_:
        problems.append(Problem(WARNING, os.path.join(where, "replication-offset-checkpoint"), None,
                                f"{pdir.name}: high watermark {pdir.high_watermark} is below the log start offset "
                                f"{lso_}"))
    if pdir.checkpoint_log_start_offset is not None and pdir.checkpoint_log_start_offset > leo:
        problems.append(Problem(ERROR, os.path.join(where, "log-start-offset-checkpoint"), None,
                                f"{pdir.name}: log start offset {pdir.checkpoint_log_start_offset} is above the log "
                                f"end offset {leo}"))
    if (pdir.checkpoint_log_start_offset is not None and first_base is not None
            and pdir.checkpoint_log_start_offset < first_base):
        problems.append(Problem(INFO, os.path.join(where, "log-start-offset-checkpoint"), None,
                                f"{pdir.name}: checkpointed log start offset {pdir.checkpoint_log_start_offset} is "
                                f"below the first segment's base {first_base} (the first segment wins)"))
    if pdir.recovery_point is not None and pdir.recovery_point > leo:
        problems.append(Problem(ERROR, os.path.join(where, "recovery-point-offset-checkpoint"), None,
                                f"{pdir.name}: recovery point {pdir.recovery_point} is above the log end offset {leo}"))
    previous = None
    for entry in pdir.leader_epochs:
        start = entry.start_offset
        if start > leo:
            problems.append(Problem(ERROR, os.path.join(pdir.path, "leader-epoch-checkpoint"), None,
                                    f"epoch {entry.epoch} starts at {start}, above the log end offset {leo}"))
        if previous is not None and (entry.epoch <= previous.epoch or start < previous.start_offset):
            problems.append(Problem(ERROR, os.path.join(pdir.path, "leader-epoch-checkpoint"), None,
                                    f"epoch {entry.epoch}@{start} does not follow {previous.epoch}@"
                                    f"{previous.start_offset}"))
        previous = entry


def verify_partition(pdir: PartitionDir, report: VerifyReport, *, deep: bool = True, progress=None) -> None:
    """Run every check on one partition, appending to ``report``."""
    summary = PartitionSummary(pdir.topic, pdir.partition, pdir.path, high_watermark=pdir.high_watermark,
                               log_start_offset=pdir.log_start_offset)
    report.partitions.append(summary)
    last_offset = -1
    for i, seg in enumerate(pdir.segments):
        seg_summary = SegmentSummary(seg.log_path, seg.base_offset, seg.log_size)
        summary.segments.append(seg_summary)
        try:
            table, last_offset_after = _walk_segment(pdir, i, report, seg_summary, last_offset, deep)
        except KafkaSegError as err:  # cannot open or read it (permissions, a broken symlink, an I/O error)
            _unreadable(report, seg.log_path, err)
            seg_summary.unreadable = True
            if i + 1 < len(pdir.segments):  # unknown offsets: no gap or ordering note about the next segment
                last_offset = max(last_offset, pdir.segments[i + 1].base_offset - 1)
            if progress is not None:
                progress(seg.log_size)
            continue
        if i + 1 < len(pdir.segments) and seg_summary.last_offset is not None:
            next_base = pdir.segments[i + 1].base_offset
            if seg_summary.last_offset >= next_base:
                report.problems.append(Problem(ERROR, seg.log_path, None,
                                               f"last offset {seg_summary.last_offset} reaches the next segment's "
                                               f"base offset {next_base}"))
        if seg_summary.first_offset is not None and last_offset >= 0 and seg_summary.first_offset > last_offset + 1:
            report.problems.append(Problem(INFO, seg.log_path, 0,
                                           f"offsets {last_offset + 1}..{seg_summary.first_offset - 1} are missing "
                                           f"before this segment (compaction or deleted records)"))
        last_offset = last_offset_after
        try:
            _check_indexes(pdir, i, table, report)
        except KafkaSegError as err:
            _unreadable(report, seg.log_path, err)
        if seg_summary.compaction_gaps:
            report.problems.append(Problem(INFO, seg.log_path, None,
                                           f"{seg_summary.compaction_gaps} non-consecutive offset gaps (records "
                                           f"removed by compaction; transaction markers are records and fill none)"))
        if progress is not None:
            progress(seg.log_size)
    partial = whole_partition_offsets(pdir)
    if partial is not None:  # single .log files: the checkpoints describe the whole partition, not them
        summary.log_start_offset, summary.log_end_offset = partial.log_start_offset, partial.log_end_offset
        summary.note = partial.note
    elif pdir.segments and summary.segments[-1].unreadable:
        report.problems.append(Problem(INFO, pdir.path, None, f"{pdir.name}: log end offset unknown (the last segment "
                                       f"cannot be read): checkpoints not compared with it"))
    elif pdir.segments:
        # Kafka's log end offset is the last batch's lastOffset + 1, not the last record's offset + 1: compaction
        # can remove a batch's last records or leave it empty (the active segment's base when it holds nothing)
        batch_ends = [s.last_offset for s in summary.segments if s.last_offset is not None]
        summary.log_end_offset = max(max(batch_ends, default=-1) + 1, pdir.segments[-1].base_offset)
    _check_log_dir_checkpoints(pdir, report)
    _check_checkpoints(partial.whole if partial is not None and partial.whole is not None else pdir, summary,
                       report)
    for path in pdir.kraft_snapshot_paths:
        try:
            _verify_kraft_snapshot(path, pdir, report)
        except KafkaSegError as err:
            _unreadable(report, path, err)
    _check_files(pdir, report)


def _unreadable(report: VerifyReport, path: str, err: KafkaSegError) -> None:
    report.problems.append(Problem(ERROR, path, getattr(err, "position", None),
                                   f"cannot read: {getattr(err, 'detail', None) or err}"))


def _verify_kraft_snapshot(path: str, pdir: PartitionDir, report: VerifyReport) -> None:
    with SegmentReader(path, pdir.filesystem) as reader:
        walk = reader.chunks(0, target_bytes=_CHUNK)
        try:
            for chunk_position, buf in walk:
                from kafkaseg.wire.batch import iter_headers

                for header in iter_headers(buf):
                    if computed_crc(buf, header) != header.crc:
                        report.problems.append(Problem(ERROR, path, chunk_position + header.position,
                                                       "CRC mismatch in snapshot batch"))
        except KafkaSegError as err:
            report.problems.append(Problem(ERROR, path, getattr(err, "position", None), str(err)))
        if walk.tail is not None:
            report.problems.append(Problem(ERROR, path, walk.tail.position,
                                           f"{walk.tail.length} invalid bytes at the end of the snapshot"))


def verify_paths(paths: list[str], *, deep: bool = True, progress=None) -> VerifyReport:
    """Verify every partition found under ``paths`` (see :func:`kafkaseg.storage.layout.discover`)."""
    report = VerifyReport()
    for pdir in discover(paths):
        verify_partition(pdir, report, deep=deep, progress=progress)
    return report
