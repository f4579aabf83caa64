"""What a Spark scan planned and read, carried from Spark's Python workers back to the driver program.

PySpark runs a Python data source's ``reader()``/``pushFilters()``/``partitions()`` in a Python *worker* process
that the driver JVM starts (not in the driver's Python process), and ``read()`` in executor workers. So the plan
report cannot be handed back in memory. Instead:

* planning writes ``<report dir>/plans/<time ns>-<scan id>.json`` (the :class:`~kafkaseg.planning.PlanReport`, the
  pushed filters and the slice count) and logs one line per scan (and one per replica choice among several copies);
* each ``read()`` of a slice writes ``<report dir>/reads/<scan id>/<slice>-<pid>.json`` (its
  :class:`~kafkaseg.scan.ScanMetrics`).

The report dir is ``$KAFKASEG_SPARK_REPORT_DIR``, else ``<tmp>/kafkaseg-spark-reports-<uid>``. Planning workers run
on the driver's host, so :func:`last_plan_report` always sees the plan; read metrics are complete only when the
executors share that directory (local mode, or a shared mount named by the environment variable). The newest
``KEEP_SCANS`` scans are kept; older files are removed when a new plan is written. Writing reports never fails a
scan (errors are logged).
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kafkaseg.decode.api import Problem, uncounted
from kafkaseg.planning import LenientDecision, PartitionReport, PlanReport

__all__ = ["ScanReport", "report_dir", "write_plan", "write_read_metrics", "last_plan_report", "plan_reports",
           "plan_report", "plan_report_for", "plan_report_for_load",
           "KEEP_SCANS", "REPORT_DIR_ENV"]

REPORT_DIR_ENV = "KAFKASEG_SPARK_REPORT_DIR"
KEEP_SCANS = 64

log = logging.getLogger("kafkaseg.spark")


def report_dir() -> Path:
    """Where scan reports go (see the module docstring)."""
    configured = os.environ.get(REPORT_DIR_ENV)
    if configured:
        return Path(configured)
    uid = os.getuid() if hasattr(os, "getuid") else "user"
    return Path(tempfile.gettempdir()) / f"kafkaseg-spark-reports-{uid}"


@dataclass
class ScanReport:
    """One Spark scan of kafkaseg: what planning decided (``plan``) and, via :meth:`read_metrics`, what was read.

    ``segments_planned``/``bytes_planned`` count what the slices cover; ``plan.bytes_total`` is the size of every
    partition considered, so ``bytes_planned / plan.bytes_total`` is the fraction a query touches.
    """

    scan_id: str
    created: float
    slices: int
    segments_planned: int
    bytes_planned: int
    pushdown: dict
    plan: PlanReport
    path: Path | None = field(default=None, repr=False)
    input_partitions: int = 0  # Spark input partitions (tasks) the slices were packed into

    @property
    def segments_considered(self) -> int:
        return self.plan.segments_considered

    @property
    def bytes_total(self) -> int:
        return self.plan.bytes_total

    @property
    def segments_skipped(self) -> int:
        """Segments of the partitions read that no slice covers (the plan's pruning by offsets and timestamps)."""
        return self.plan.segments_considered - self.segments_planned

    @property
    def bytes_skipped(self) -> int:
        """Bytes of the partitions read that no slice covers (pruned partitions are not counted: they are never
        listed)."""
        return self.plan.bytes_total - self.bytes_planned

    def read_metrics(self) -> dict[str, Any]:
        """What reading this scan's slices did, summed over slices, counting the latest read of each slice (an
        action that runs the plan again replaces it; ``executions`` is the most times any slice was read):
        ``slices_read``, ``bytes_read``, ``records``, ``batches``, ``truncated_tails``, ``problems`` (each a
        :class:`~kafkaseg.decode.api.Problem`: ``(path, position, what)`` with its ``bytes`` and offsets; a region
        two slices both read counted once, in ``corrupt_batches``/``corrupt_bytes`` too), ``unreadable_tails``
        (active segments whose indexes or producer snapshots prove offsets past their readable end, with no high
        watermark to bound the read: see README), ``lost_tails`` (those of them, and tails cut below the recovery
        point, that the broker had flushed: data loss, read past under ``failOnDataLoss=false`` or, under
        ``onCorruption=skip``, each also one of ``problems``),
        ``vanished_segments`` (segments a live broker deleted or replaced after planning), ``missing_offsets``
        (offsets missing between segments above the cleaner checkpoint, read past), ``other_copies_read`` (offsets a
        strict read took from another copy of their partition, the chosen one being corrupt), ``rewritten_tails``
        (``[path, position, what]`` of slices a follower truncation past the high watermark overtook, ended there;
        each also a truncated tail), ``lenient_decisions`` (the
        plan's :class:`~kafkaseg.planning.LenientDecision` s: records an ``onCorruption=skip`` read leaves out or
        takes beyond the corrupt batches it counts)..."""
        latest: dict[str, Path] = {}
        reads: dict[str, int] = {}
        folder = report_dir() / "reads" / self.scan_id
        for path in sorted(folder.glob("*.json"), key=lambda p: p.stem.split("-")[-1]) if folder.is_dir() else ():
            slice_index = path.stem.split("-")[0]
            latest[slice_index] = path
            reads[slice_index] = reads.get(slice_index, 0) + 1
        totals: dict[str, Any] = {"slices_read": 0, "executions": max(reads.values(), default=0), "bytes_read": 0,
                                  "records": 0, "batches": 0, "output_batches": 0, "skipped_aborted_batches": 0,
                                  "corrupt_batches": 0, "corrupt_bytes": 0, "truncated_tails": [], "problems": [],
                                  "vanished_segments": [], "missing_offsets": [], "other_copies_read": [],
                                  "unreadable_tails": [], "lost_tails": [], "rewritten_tails": [],
                                  "lenient_decisions": list(self.plan.lenient)}
        counted: dict = {}  # the byte ranges of each file the problems summed so far count
        for path in sorted(latest.values()):
            try:
                metrics = json.loads(path.read_text())
            except (OSError, ValueError):
                continue
            totals["slices_read"] += metrics.get("slices", 0)
            for key in ("bytes_read", "records", "batches", "output_batches", "skipped_aborted_batches",
                        "corrupt_batches", "corrupt_bytes"):
                totals[key] += metrics.get(key, 0)
            kept, batches, nbytes = uncounted([Problem.from_list(p) for p in metrics.get("problems", [])], counted)
            totals["corrupt_batches"] -= batches
            totals["corrupt_bytes"] -= nbytes
            totals["problems"].extend(kept)
            totals["unreadable_tails"].extend(Problem.from_list(p) for p in metrics.get("unreadable_tails", []))
            totals["lost_tails"].extend(Problem.from_list(p) for p in metrics.get("lost_tails", []))
            totals["truncated_tails"].extend(metrics.get("truncated_tails", []))
            totals["rewritten_tails"].extend(metrics.get("rewritten_tails", []))
            totals["vanished_segments"].extend(metrics.get("vanished_segments", []))
            totals["missing_offsets"].extend(metrics.get("missing_offsets", []))
            totals["other_copies_read"].extend(metrics.get("other_copies_read", []))
        return totals

    def summary(self) -> str:
        """The one line planning logs for this scan: what the plan skipped, and which filters the scan applies
        (``pushed``: Spark does not check them again), which only prune (``pruning only``: Spark applies them too)
        and which Spark alone applies (``left to Spark``: the rest of ``remaining``). ``df.explain()`` cannot show these
        (docs/spark.md)."""
        plan = self.plan
        pushdown = self.pushdown

        def listed(key: str) -> str:
            shown = pushdown.get(key, [])
            if key == "remaining":  # the pruning-only filters are remaining too: named once, above
                shown = [f for f in shown if f not in pushdown.get("pruning_only", [])]
            return "[" + ", ".join(shown) + "]"

        return (f"kafkaseg scan {self.scan_id}: {self.segments_planned} of {plan.segments_considered} segments "
                f"({self.segments_skipped} skipped), {self.bytes_planned:,} of {plan.bytes_total:,} bytes "
                f"({self.bytes_skipped:,} bytes skipped) in {len(plan.partitions)} partitions read, "
                f"{len(plan.partitions_pruned)} partitions pruned; {self.slices} slices in {self.input_partitions} "
                f"input partitions; pushed {listed('handled')}, pruning only {listed('pruning_only')}, left to "
                f"Spark {listed('remaining')}"
                + "".join(f"; {note}" for note in pushdown.get("disabled", [])))

    @classmethod
    def from_dict(cls, data: dict, path: Path | None = None) -> "ScanReport":
        raw = data["plan"]
        plan = PlanReport(
            options=raw.get("options", {}),
            partitions=[PartitionReport(**p) for p in raw.get("partitions", [])],
            partitions_pruned=[tuple(x) for x in raw.get("partitions_pruned", [])],
            replicas=raw.get("replicas", []),
            indexes_rebuilt=[tuple(x) for x in raw.get("indexes_rebuilt", [])],
            data_loss=raw.get("data_loss", []),
            notes=raw.get("notes", []),
            skipped_folders=[tuple(x) for x in raw.get("skipped_folders", [])],
            lenient=[LenientDecision(*x) for x in raw.get("lenient", [])],
        )
        return cls(data["scan_id"], data["created"], data["slices"], data["segments_planned"],
                   data["bytes_planned"], data.get("pushdown", {}), plan, path,
                   data.get("input_partitions", data["slices"]))


def write_plan(scan_id: str, plan_report: PlanReport, slices: list, pushdown: dict,
               input_partitions: int | None = None) -> ScanReport:
    """Record a scan's plan (called by ``partitions()`` in the planning worker); returns the :class:`ScanReport`."""
    segments = {s.log_path for s in slices}
    report = ScanReport(scan_id, time.time(), len(slices), len(segments), sum(s.size_bytes for s in slices),
                        pushdown, plan_report,
                        input_partitions=len(slices) if input_partitions is None else input_partitions)
    data = {"scan_id": scan_id, "created": report.created, "slices": report.slices,
            "input_partitions": report.input_partitions,
            "segments_planned": report.segments_planned, "bytes_planned": report.bytes_planned,
            "pushdown": pushdown, "plan": plan_report.as_dict()}
    try:
        folder = report_dir() / "plans"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{time.time_ns():020d}-{scan_id}.json"
        _write_atomically(path, json.dumps(data, default=str))
        report.path = path
        _prune(folder)
    except OSError as err:
        log.warning("kafkaseg: could not write the plan report of scan %s: %s", scan_id, err)
    return report


def write_read_metrics(scan_id: str, partition_index: int, metrics: dict) -> None:
    """Record what reading one input partition (its slices) did (called by ``read()`` in an executor's Python
    worker)."""
    try:
        folder = report_dir() / "reads" / scan_id
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{partition_index:06d}-{os.getpid()}-{time.time_ns()}.json"
        _write_atomically(path, json.dumps(metrics, default=str))
    except OSError as err:
        log.warning("kafkaseg: could not write read metrics of scan %s input partition %d: %s", scan_id,
                    partition_index, err)


def plan_reports(limit: int | None = None) -> list[ScanReport]:
    """The kept scan reports, newest first (at most ``limit``)."""
    folder = report_dir() / "plans"
    if not folder.is_dir():
        return []
    out = []
    for path in sorted(folder.glob("*.json"), reverse=True):
        try:
            out.append(ScanReport.from_dict(json.loads(path.read_text()), path))
        except (OSError, ValueError, KeyError, TypeError):
            continue  # being pruned by another process, or not ours
        if limit is not None and len(out) >= limit:
            break
    return out


def last_plan_report() -> ScanReport | None:
    """The most recent kafkaseg scan planned on this host (None when there is none): not necessarily the scan of
    the last query run, which Spark may not have planned again (see :func:`plan_report`)."""
    reports = plan_reports(limit=1)
    return reports[0] if reports else None


def plan_report(df: Any) -> ScanReport | None:
    """The plan report of the kafkaseg ``load()`` that the DataFrame ``df`` reads: the scan Spark last planned for
    that load (None before its first planned query, or when the report is no longer kept: never another load's).

    :func:`last_plan_report` is the newest scan planned on the host, which is not ``df``'s once another DataFrame
    was planned after it: PySpark (4.1-4.3) plans a ``load()`` once and reuses that plan for its later queries
    that push no filter, so ``dfA.count()`` after ``dfB.count()`` plans nothing and leaves ``dfB``'s report the
    newest. ``df``'s load is found in its analyzed plan, and its scan in the read plan Spark keeps for that load
    (the scan id its input partitions carry; no query is planned or run), so this needs a classic PySpark
    DataFrame, not a Spark Connect one. Each ``load()`` is its own, also with the same options as another; the
    queries of one load share it: with filter pushdown each query with pushable filters plans again, and the
    report is the last one planned. A DataFrame that reads several kafkaseg loads is refused (call this on
    each)."""
    from kafkaseg.errors import InvalidOptionError

    jdf = getattr(df, "_jdf", None)
    if jdf is None:
        raise InvalidOptionError("plan_report(df) needs a classic PySpark DataFrame (a Spark Connect DataFrame "
                                 "does not show its plan's relations); use last_plan_report() or "
                                 "kafkaseg.spark.reports.plan_report_for_load(options, since)")
    jvm = df.sparkSession.sparkContext._jvm
    leaves = jdf.queryExecution().analyzed().collectLeaves()
    loads: dict[int, Any] = {}  # the PythonDataSourceV2 of each load(), which keeps the load's read plan
    for i in range(leaves.length()):
        leaf = leaves.apply(i)
        if leaf.getClass().getSimpleName() == "DataSourceV2Relation" and leaf.table().name() == "kafkaseg":
            source = _private_field(leaf.table(), "ds")
            loads.setdefault(jvm.java.lang.System.identityHashCode(source), source)
    if len(loads) != 1:
        raise InvalidOptionError(
            "plan_report(df): the DataFrame reads no kafkaseg batch load()" if not loads else
            f"plan_report(df): the DataFrame reads {len(loads)} kafkaseg loads; call plan_report() on the "
            f"DataFrame of each load()")
    (source,) = loads.values()
    read_info = _private_field(source, "readInfo")
    if read_info is None:
        return None  # no query of this load was planned yet
    scan_id = _scan_id(bytes(read_info.partitions().apply(0)))
    return next((r for r in plan_reports() if r.scan_id == scan_id), None)


def _private_field(obj: Any, name: str) -> Any:
    """A private field of a JVM object (PySpark's Python data source classes expose no accessor for these)."""
    from kafkaseg.errors import InvalidOptionError

    cls = obj.getClass()
    while cls is not None:
        for declared in cls.getDeclaredFields():
            if declared.getName() == name:
                declared.setAccessible(True)
                return declared.get(obj)
        cls = cls.getSuperclass()
    raise InvalidOptionError(f"plan_report(df): this PySpark's {obj.getClass().getName()} has no {name!r} field; "
                             "use kafkaseg.spark.reports.plan_report_for_load(options, since)")


def _scan_id(pickled_partition: bytes) -> str:
    """The scan id of a kafkaseg read plan's first input partition as PySpark keeps it (pickled)."""
    from pyspark.serializers import CPickleSerializer

    from kafkaseg.errors import InvalidOptionError

    partition = CPickleSerializer().loads(pickled_partition)
    scan_id = getattr(partition, "scan_id", None)
    if not isinstance(scan_id, str):
        raise InvalidOptionError(f"plan_report(df): the load's read plan holds no kafkaseg scan ({partition!r})")
    return scan_id


def plan_report_for(options: dict, paths: list[str], since: float) -> ScanReport | None:
    """The newest kept report of a scan planned at or after ``since`` (``time.time()``) with exactly these read
    ``options`` over these ``paths``: a job's own scan. :func:`last_plan_report` is the host's newest scan, which
    another application (a second scheduled job, a test run) may have planned after the job's. None when there
    is none (also when the options cannot be parsed: they were the scan's, so that is not expected)."""
    return plan_report_for_load({**options, "paths": json.dumps(list(paths))}, since)


def plan_report_for_load(options: dict, since: float) -> ScanReport | None:
    """The newest kept report of a scan planned at or after ``since`` with the options of one ``load()``, as Spark
    hands them to the data source (``path``, with commas between log dirs, or ``paths``). Two loads with the same
    options share it (:func:`kafkaseg.spark.plan_report` tells a DataFrame's load apart). None when there is
    none."""
    from kafkaseg.errors import KafkaSegError
    from kafkaseg.spark.source import read_options

    try:
        parsed = read_options(options)
    except KafkaSegError as err:
        log.warning("kafkaseg: cannot match a plan report to options %s: %s", options, err)
        return None
    return _newest_planned_with(parsed.as_dict(), since)


def _newest_planned_with(options: dict, since: float) -> ScanReport | None:
    wanted = json.loads(json.dumps(options, default=str))  # as write_plan stored them
    for report in plan_reports():
        if report.created < since:
            break  # newest first
        if report.plan.options == wanted:
            return report
    return None


def _write_atomically(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def _prune(folder: Path) -> None:
    plans = sorted(folder.glob("*.json"))
    for old in plans[:-KEEP_SCANS] if len(plans) > KEEP_SCANS else ():
        scan_id = old.stem.split("-", 1)[-1]
        try:
            old.unlink()
            reads = folder.parent / "reads" / scan_id
            if reads.is_dir():
                for f in reads.iterdir():
                    f.unlink()
                reads.rmdir()
        except OSError:
            pass  # another process got there first
