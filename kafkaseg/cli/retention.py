"""``kafkaseg retention``: what the brokers' retention would delete now, per partition (no Spark).

The audit itself is :mod:`kafkaseg.retention` (shared with ``jobs/retention_audit.py``); this module prints it:
a rich table per partition (``--segments``: one per partition's segments too) and a summary, or ``--json``.
"""

from __future__ import annotations

import dataclasses
import json
import sys

from kafkaseg.retention import (
    audit,
    exit_status,
    format_duration,
    labels,
    parse_now,
    partition_row,
    plan_audit,
    segment_rows,
    summarize,
)
from kafkaseg.storage import fs as _fs
from kafkaseg.topic_config import load_config_file

__all__ = ["run"]


def _retention_text(ms: int) -> str:
    return "infinite" if ms < 0 else format_duration(ms)


def _owed(a) -> str:
    """The overdue cell: how long past retention.ms, or (marked) how long over retention.bytes when longer."""
    if a.size_overdue_ms is not None and (a.overdue_ms is None or a.size_overdue_ms > a.overdue_ms):
        return f"{format_duration(a.size_overdue_ms)} (size)"
    return format_duration(a.overdue_ms)


def run(args, console, ms_text) -> int:
    """Audit ``args.paths``; returns the exit status (:func:`kafkaseg.retention.exit_status`, as
    ``jobs/retention_audit.py``: 1 when a partition could not be audited, else 3 with ``--fail-on-overdue`` when a
    partition is past retention.ms by more than a retention check interval, else 0)."""
    now = parse_now(args.now)
    plan = plan_audit(args.paths, load_config_file(args.config), topics=args.topic or (),
                      topic_pattern=args.topic_pattern, all_replicas=args.replicas == "all",
                      key_ring=args.tiered_key_ring)
    audits = [audit(pdir, config, now) for pdir, config in plan.targets]
    if not args.segments:  # keep one small object per partition
        audits = [dataclasses.replace(a, segments=()) for a in audits]
    summary = summarize(audits)
    status = exit_status(summary, args.fail_on_overdue)
    if args.json:
        rows = []
        for a in audits:
            row = partition_row(a)
            row["config"] = a.config.as_dict() if a.config is not None else None
            row["compaction"] = a.compaction.as_dict() if a.compaction is not None else None
            if args.segments:
                row["segments"] = [{k: v for k, v in r.items() if k not in ("topic", "partition", "log_dir",
                                                                             "now_ms")} for r in segment_rows(a)]
            rows.append(row)
        print(json.dumps({"now_ms": now, "metadata_log": plan.cluster.source,
                          "metadata_notes": list(plan.cluster.notes), "partitions": rows,
                          "summary": summary, "pending_topic_deletions": [
                              {"folder": _fs.redact(path), "bytes": size}
                              for path, size in plan.pending_topic_deletions]}, indent=1))
        return status
    from rich.table import Table

    table = Table(title=f"kafkaseg retention at {ms_text(now)}")
    every = args.replicas == "all"
    for column in ("topic", "partition") + (("log dir",) if every else ()) + ("policy", "retention", "segments", "bytes", "log start", "HW",
                   "oldest", "delete segs", "delete bytes", "new start", "by", "overdue", "HW blocks",
                   ".deleted", "dirty"):
        table.add_column(column, justify="left" if column in ("topic", "policy", "oldest", "by", "retention")
                         else "right")
    for a in audits:
        where = (a.log_dir or "",) if every else ()
        if a.error is not None:
            table.add_row(a.topic, str(a.partition), *where, "", "", "", "", "", "", f"[red]{a.error}[/red]")
            continue
        cfg, c = a.config, a.compaction
        retention = _retention_text(cfg.effective_retention_ms)
        if cfg.effective_retention_bytes >= 0:
            retention += f" / {cfg.effective_retention_bytes} B"
        dirty = "-" if c is None or c.dirty_ratio is None else \
            f"{c.dirty_ratio:.2f}{' due' if c.cleanable_now else ''}"
        table.add_row(a.topic, str(a.partition), *where, ",".join(cfg["cleanup.policy"]), retention, str(a.segment_count),
                      str(a.total_bytes), str(a.log_start_offset), str(a.high_watermark), ms_text(a.oldest_timestamp),
                      str(a.deletable_segments), str(a.deletable_bytes),
                      "-" if a.new_log_start_offset is None else str(a.new_log_start_offset),
                      ",".join(f"{rule}:{n}" for rule, n in a.segments_by_rule) or "-", _owed(a),
                      "yes" if a.blocked_by_high_watermark else "",
                      f"{a.deleted_files} ({a.deleted_bytes} B)" if a.deleted_files else "", dirty)
    console.print(table)
    label = labels(audits)
    if args.segments:
        for a in audits:
            if not a.segments:
                continue
            seg_table = Table(title=f"{label[id(a)]} segments")
            for column in ("base offset", "next offset", "bytes", "largest time", "from", "deleted by", "overdue",
                           "HW blocks"):
                seg_table.add_column(column, justify="right")
            for s in a.segments:
                seg_table.add_row(str(s.base_offset), str(s.next_offset), str(s.size), ms_text(s.largest_timestamp),
                                  s.timestamp_source, s.rule or "", format_duration(s.overdue_ms),
                                  "yes" if s.blocked_by_high_watermark else "")
            console.print(seg_table)
    unit = "replicas" if summary["replicas"] != summary["partitions"] else "partitions"
    print(f"{summary['partitions']} partitions" + (f" ({summary['replicas']} replicas)" if unit == "replicas" else "")
          + f", {summary['segments']} segments, {summary['bytes']} bytes; "
          f"retention would delete {summary['deletable_segments']} segments ({summary['deletable_bytes']} bytes) "
          f"in {summary['deletable_partitions']} {unit}; {summary['lagging_partitions']} more than one check "
          f"interval overdue; {summary['blocked_by_high_watermark']} held back by the high watermark; "
          f"{summary['compaction_due']} due for compaction")
    if plan.cluster.source:
        print(f"configs from the metadata log {plan.cluster.source} ({plan.cluster.records} config records)")
    for note in plan.cluster.notes:
        print(f"metadata log: {note}", file=sys.stderr)
    for a in audits:
        for note in a.notes:
            print(f"{label[id(a)]}: {note}", file=sys.stderr)
    for note in plan.replica_notes:
        print(note, file=sys.stderr)
    if plan.deletions_line():
        print(plan.deletions_line())
    return status
