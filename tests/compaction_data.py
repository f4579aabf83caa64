"""Data dirs and an independent reference for the compaction tests (tests/test_compaction*.py).

- :func:`expected_state`: brute force over a generator manifest: replay every record a read_committed consumer
  sees, in offset order, into a dict (a tombstone pops its key, keyless records are skipped).
- :func:`truncated_copy`: a copy of a log dir without each partition's last segments, as the dir was before they
  were appended (checkpoints and producer snapshots cut back to the new log end).
- :func:`cleaned_copy`: a copy of a non-transactional log dir as Kafka's cleaner leaves it: below the active
  segment only the newest record of each key survives (keyless records go; tombstones stay with a delete horizon or
  go with their key), offsets preserved (gaps).
"""

from __future__ import annotations

import datetime as dt
import shutil
from pathlib import Path

from kafkaseg.testing import PartitionWriter, Record, build_batch_v2
from kafkaseg.testing.partition import write_meta_properties, write_offset_checkpoint, write_partition_metadata

EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
COLUMNS = ("topic", "partition", "key", "value", "offset", "timestamp_ms", "timestampType", "headers")


def expected_state(manifest, topics=None, ends: dict | None = None, starts: dict | None = None) -> dict:
    """``{(topic, partition, key): row tuple}`` a consumer replaying the topics' committed records (up to each
    partition's last stable offset, or ``ends[(topic, partition)]`` when lower; from ``starts[(topic, partition)]``
    when given, a log start retention moved) into a map ends with."""
    state: dict = {}
    for (topic, partition), pm in manifest.partitions.items():
        if topics is not None and topic not in topics:
            continue
        end = pm.last_stable_offset if ends is None else min(ends.get((topic, partition), 0), pm.last_stable_offset)
        start = (starts or {}).get((topic, partition), 0)
        for r in sorted(pm.data_records(read_committed=True), key=lambda r: r.offset):
            if r.offset >= end or r.offset < start or r.key is None:
                continue
            if r.value is None:
                state.pop((topic, partition, r.key), None)
            else:
                state[(topic, partition, r.key)] = (topic, partition, r.key, r.value, r.offset, r.timestamp,
                                                    r.timestamp_type, list(r.headers) or None)
    return state


def table_rows(table) -> dict:
    """A compacted table (pyarrow) as ``{(topic, partition, key): row tuple}`` in :func:`expected_state`'s form."""
    out = {}
    names = table.schema.names
    for row in table.to_pylist():
        ts = row["timestamp"]
        millis = None if ts is None else (ts - EPOCH) // dt.timedelta(milliseconds=1)
        headers = [(h["key"], h["value"]) for h in row["headers"]] if "headers" in names and row["headers"] \
            else None
        key = (row["topic"], row["partition"], row["key"])
        assert key not in out, f"identity {key} twice in the table"
        out[key] = (row["topic"], row["partition"], row["key"], row["value"], row["offset"], millis,
                    row["timestampType"], headers)
    return out


def _read_checkpoint(path: Path) -> dict:
    lines = path.read_text().split("\n") if path.exists() else []
    out = {}
    for line in lines[2:]:
        if line.strip():
            topic, partition, offset = line.rsplit(" ", 2)
            out[(topic, int(partition))] = int(offset)
    return out


def truncated_copy(source: Path, target: Path, drop_segments: int = 1) -> dict:
    """Copy log dir ``source`` to ``target`` without each partition's last ``drop_segments`` segments (a partition
    with fewer segments keeps its first). Returns ``{(topic, partition): new log end offset}``."""
    shutil.copytree(source, target)
    ends = {}
    for folder in sorted(p for p in target.iterdir() if p.is_dir()):
        topic, _, partition = folder.name.rpartition("-")
        bases = sorted(int(f.stem) for f in folder.glob("*.log"))
        keep = max(1, len(bases) - drop_segments)
        if keep == len(bases):
            continue
        end = bases[keep]
        for f in folder.iterdir():
            if f.suffix in (".log", ".index", ".timeindex", ".txnindex") and int(f.stem) >= end:
                f.unlink()
            elif f.suffix == ".snapshot" and int(f.stem) > end:
                f.unlink()
        ends[(topic, int(partition))] = end
    for name in ("replication-offset-checkpoint", "recovery-point-offset-checkpoint"):
        offsets = _read_checkpoint(target / name)
        offsets.update({tp: min(offsets.get(tp, end), end) for tp, end in ends.items()})
        write_offset_checkpoint(target / name, offsets)
    cleaner = _read_checkpoint(target / "cleaner-offset-checkpoint")
    write_offset_checkpoint(target / "cleaner-offset-checkpoint",
                            {tp: min(o, ends.get(tp, o)) for tp, o in cleaner.items()})
    return ends


def retention_copy(source: Path, target: Path, upto: dict) -> dict:
    """Copy log dir ``source`` to ``target`` as after the broker's retention (cleanup.policy=compact,delete)
    deleted each ``(topic, partition)``'s segments that end at or below ``upto[...]``: files gone, log start moved
    to the first kept segment's base (log-start-offset-checkpoint). Returns the new log start offsets."""
    shutil.copytree(source, target)
    starts = {}
    for (topic, partition), limit in upto.items():
        folder = target / f"{topic}-{partition}"
        start = max(base for base in (int(f.stem) for f in folder.glob("*.log")) if base <= limit)
        starts[(topic, partition)] = start
        for f in folder.iterdir():
            if f.suffix in (".log", ".index", ".timeindex", ".txnindex") and int(f.stem) < start:
                f.unlink()
    write_offset_checkpoint(target / "log-start-offset-checkpoint", starts)
    return starts


def cleaned_copy(manifest, target: Path, *, clean_below: dict, drop_tombstones: bool,
                 delete_horizon_ms: int = 1_700_086_400_000, segment_bytes: int = 16 * 1024) -> None:
    """Write ``manifest``'s log dir (non-transactional topics) to ``target`` as after the cleaner cleaned each
    partition's offsets below ``clean_below[(topic, partition)]`` (the active segment's base, say): there a record
    survives only when it has a key and no later record of that key lies below the bound; tombstones survive
    (in batches carrying ``delete_horizon_ms``) unless ``drop_tombstones``. Offsets, timestamps, headers, ids and
    checkpoints are the original's."""
    target.mkdir(parents=True)
    hws, recovery, cleaner = {}, {}, {}
    for (topic, partition), pm in manifest.partitions.items():
        bound = clean_below[(topic, partition)]
        records = sorted((r for r in pm.records if not r.is_control), key=lambda r: r.offset)
        newest = {}
        for r in records:
            if r.offset < bound and r.key is not None:
                newest[r.key] = r.offset
        kept = [r for r in records if r.offset >= bound or (
            r.key is not None and newest[r.key] == r.offset and not (drop_tombstones and r.value is None))]
        folder = target / f"{topic}-{partition}"
        writer = PartitionWriter(folder, segment_bytes=segment_bytes, log_start_offset=pm.log_start_offset)
        chunk: list = []

        def flush(chunk=chunk):
            if chunk:
                horizon = delete_horizon_ms if any(r.value is None for r in chunk) and chunk[0].offset < bound \
                    else None
                writer.append(build_batch_v2([Record(r.offset, r.timestamp, r.key, r.value, r.headers)
                                              for r in chunk], delete_horizon_ms=horizon))
                chunk.clear()

        for r in kept:
            if chunk and (len(chunk) == 10 or (chunk[0].offset < bound) != (r.offset < bound)):
                flush()
            chunk.append(r)
        flush()
        log = writer.close()
        assert log.log_end_offset == pm.log_end_offset, "the cleaner never removes the log's last record"
        write_partition_metadata(folder / "partition.metadata", pm.topic_id)
        hws[(topic, partition)] = log.log_end_offset
        recovery[(topic, partition)] = log.recovery_point
        cleaner[(topic, partition)] = bound
    write_meta_properties(target / "meta.properties", cluster_id=manifest.cluster_id, node_id=manifest.node_id,
                          directory_id=manifest.directory_id)
    write_offset_checkpoint(target / "replication-offset-checkpoint", hws)
    write_offset_checkpoint(target / "recovery-point-offset-checkpoint", recovery)
    write_offset_checkpoint(target / "log-start-offset-checkpoint", {})
    write_offset_checkpoint(target / "cleaner-offset-checkpoint", cleaner)


def write_epoch_log(root: Path, topic: str, epochs: list[tuple[int, list[tuple[int, bytes, bytes | None]]]],
                    *, topic_id: str = "AAAAAAAAAAAAAAAAAAAAAQ", cluster_id: str = "epochs-cluster") -> dict:
    """A one-partition data dir (``<root>/<topic>-0``) whose records were written under the given leader epochs:
    ``epochs`` ``[(epoch, [(offset, key, value), ...]), ...]``, one batch per record, and its
    ``leader-epoch-checkpoint``, as a replica leaves them (an unclean leader election is two such logs sharing a
    prefix). Returns ``{(topic, 0, key): (value, offset)}`` of the live keys (a consumer's replay)."""
    root.mkdir(parents=True)
    writer = PartitionWriter(root / f"{topic}-0", segment_bytes=1024)
    state: dict = {}
    for epoch, records in epochs:
        for offset, key, value in records:
            writer.append(build_batch_v2([Record(offset, 1_700_000_000_000 + offset, key, value)],
                                         partition_leader_epoch=epoch))
            if key is None:
                continue  # keyless: dropped
            if value is None:
                state.pop((topic, 0, key), None)
            else:
                state[(topic, 0, key)] = (value, offset)
    log = writer.close()
    write_partition_metadata(root / f"{topic}-0" / "partition.metadata", topic_id)
    write_meta_properties(root / "meta.properties", cluster_id=cluster_id, node_id=1,
                          directory_id="AAAAAAAAAAAAAAAAAAAAAg")
    write_offset_checkpoint(root / "replication-offset-checkpoint", {(topic, 0): log.log_end_offset})
    write_offset_checkpoint(root / "recovery-point-offset-checkpoint", {(topic, 0): log.recovery_point})
    write_offset_checkpoint(root / "log-start-offset-checkpoint", {})
    return state
