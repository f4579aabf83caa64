"""Writing Spark DataFrames as tables from the executors, with no JVM-side table format jar.

* Parquet: Spark's own writer (``DataFrame.write.parquet``), hive-partitioned.
* Delta: Spark's Parquet writer puts the data files into a fresh folder inside the table (executors, in parallel),
  then the driver commits them in ONE Delta transaction with delta-rs (``deltalake``): add actions built from the
  files' paths, sizes and footers (row counts and min/max/null counts, so Delta readers can skip files). No record passes through the driver, and a failed job leaves only unreferenced
  files behind (never a half-committed table); ``DeltaTable.vacuum`` removes them, and the next run that commits
  removes what VACUUM passes over (Spark's ``_temporary`` attempt folders): :func:`remove_abandoned_writes`.

Both write timestamps as INT64 microseconds adjusted to UTC (Delta needs them; for Parquet they read back as
``timestamp[us, tz=UTC]`` instead of Spark's legacy naive INT96): ``write_parquet`` sets
``spark.sql.parquet.outputTimestampType`` to ``TIMESTAMP_MICROS`` for its duration.
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass
import json
import math
import posixpath
import re
import sys
import time
import uuid
from typing import Sequence
from urllib.parse import unquote

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from kafkaseg.errors import ConcurrentWriteError, ExportMismatchError, TableSchemaError, first_line
from kafkaseg.storage.fs import is_delta_table, join, open_filesystem, started_folders

#: The folder name Spark (and Hive) give a null partition value, and read back as null.
HIVE_DEFAULT_PARTITION = "__HIVE_DEFAULT_PARTITION__"

__all__ = ["write_parquet", "write_delta", "run_folder_name", "remove_abandoned_writes",
           "remove_abandoned_after_commit", "abandoned_after_s", "delta_add_actions", "file_stats", "footer_stats",
           "hive_partition_values"]


def write_parquet(df, output: str, mode: str, partition_by: Sequence[str]) -> None:
    """Hive-partitioned Parquet written by the executors. ``mode``: error, overwrite or append. Timestamps are
    written as INT64 microseconds adjusted to UTC (``spark.sql.parquet.outputTimestampType=TIMESTAMP_MICROS`` for
    the write's duration), not Spark's default legacy INT96, which other readers take as naive."""
    spark = df.sparkSession
    previous = spark.conf.get("spark.sql.parquet.outputTimestampType", None)
    spark.conf.set("spark.sql.parquet.outputTimestampType", "TIMESTAMP_MICROS")
    try:
        writer = df.write.mode("errorifexists" if mode == "error" else mode)
        if partition_by:
            writer = writer.partitionBy(*partition_by)
        writer.parquet(output)
    finally:
        if previous is None:
            spark.conf.unset("spark.sql.parquet.outputTimestampType")
        else:
            spark.conf.set("spark.sql.parquet.outputTimestampType", previous)


RUN_FOLDER_PREFIX = "kafkaseg-"  # write_delta's folder of one run's data files, under the table
#: A run folder's name: ``kafkaseg-<UTC start time>Z-<run id>`` (``<local time>-<run id>`` before the Z was added).
_RUN_FOLDER = re.compile(re.escape(RUN_FOLDER_PREFIX) + r"(\d{8}T\d{6})(Z?)-[0-9a-f]+")
SPARK_TEMPORARY = "_temporary"  # Spark's job and task attempt folder inside a write's output, gone once it commits
#: Delta's default ``delta.deletedFileRetentionDuration``: how long VACUUM leaves unreferenced files, since "old
#: snapshots and uncommitted files can still be in use by concurrent readers or writers" (Delta's VACUUM docs).
DEFAULT_RETENTION_S = 7 * 24 * 3600
#: Delta reads the property as a Spark interval (``interval`` optional, several ``<n> <unit>`` terms summed).
_INTERVAL = re.compile(r"\s*(?:interval\s+)?((?:\d+\s+[a-z]+\s*)+)", re.IGNORECASE)
_INTERVAL_TERM = re.compile(r"(\d+)\s+([a-z]+?)s?\b", re.IGNORECASE)
_UNIT_S = {"nanosecond": 1e-9, "microsecond": 1e-6, "millisecond": 1e-3, "second": 1, "minute": 60, "hour": 3600,
           "day": 86400, "week": 7 * 86400}


def run_folder_name(now_s: float) -> str:
    """The folder of one run's data files inside a Delta table, for a run started at ``now_s`` (epoch seconds)."""
    return f"{RUN_FOLDER_PREFIX}{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime(now_s))}-{uuid.uuid4().hex[:8]}"


def abandoned_after_s(configuration: dict | None) -> float:
    """After how long a run's uncommitted files count as abandoned: the table's ``delta.deletedFileRetentionDuration``
    (Delta's interval text, e.g. ``interval 7 days``, ``2 weeks 3 days``), which VACUUM applies to unreferenced files
    for the same reason (a writer may still be running), but never less than Delta's default of a week: VACUUM runs
    when a user asks, this cleanup on every commit, so a retention set short for VACUUM (``interval 0 hours``) must
    not let each commit delete the ``_temporary`` folder of a run writing meanwhile (its tasks fail, or, removed
    between task commits, its job commit moves only the later tasks' files and the run commits part of its data).
    Unset: the week; a value this does not read (months, fractions): infinity, nothing is removed (a week could be
    shorter than what the table says)."""
    text = (configuration or {}).get("delta.deletedFileRetentionDuration")
    if text is None:
        return DEFAULT_RETENTION_S
    match = _INTERVAL.fullmatch(text)
    if match is None:
        return math.inf
    seconds = 0.0
    for count, unit in _INTERVAL_TERM.findall(match.group(1)):
        if unit.lower() not in _UNIT_S:
            return math.inf
        seconds += int(count) * _UNIT_S[unit.lower()]
    return max(seconds, DEFAULT_RETENTION_S)


def remove_abandoned_writes(output: str, now_s: float, max_age_s: float) -> list[str]:
    """Remove what killed runs' writes left in the Delta table at ``output`` that ``DeltaTable.vacuum`` never will:
    Spark's ``_temporary`` folder of a run folder (a write killed before Spark's job commit; VACUUM skips folders
    whose names start with ``_``), then the run folder itself when nothing else is in it. Only for a run certainly
    dead: its folder's name says it started more than ``max_age_s`` ago AND nothing under its ``_temporary`` was
    written for that long (a concurrent run still writing, however long it has run, keeps its files). A committed run
    has no ``_temporary`` (Spark's job commit removes it), and the data files of a run that failed after Spark's
    commit are left to VACUUM, which knows whether a version references them. Returns the run folders cleaned."""
    filesystem, root = open_filesystem(output)
    removed = []
    for entry, started in started_folders(filesystem, root, _RUN_FOLDER):  # (after a commit: never raising)
        if now_s - started <= max_age_s:
            continue
        temporary = posixpath.join(entry.path, SPARK_TEMPORARY)
        try:
            written = filesystem.get_file_info(pafs.FileSelector(temporary, recursive=True, allow_not_found=True))
            if any(info.mtime_ns is not None and now_s - info.mtime_ns / 1e9 <= max_age_s for info in written):
                continue
            if written or filesystem.get_file_info(temporary).type == pafs.FileType.Directory:
                filesystem.delete_dir(temporary)
            elif filesystem.get_file_info(pafs.FileSelector(entry.path)):
                continue  # no _temporary, and data files: VACUUM's
            if not filesystem.get_file_info(pafs.FileSelector(entry.path)):
                filesystem.delete_dir(entry.path)
            removed.append(entry.base_name)
        except (OSError, pa.ArrowException):
            continue  # removed meanwhile, or not ours to remove: the next run tries again
    return removed


@dataclass(frozen=True)
class SeenTable:
    """What a job run saw of its Delta table before writing, so that a run of the same job committing meanwhile is
    told from any other writer's commit: whether the table existed, and the version of the job's app transaction
    ``app_id`` in it (None: no commit carried it yet)."""

    app_id: str
    existed: bool
    app_version: int | None = None


def write_delta(df, output: str, mode: str, partition_by: Sequence[str], schema: pa.Schema,
                expected_records: int | None = None, before_commit=None, commit_properties=None,
                seen: SeenTable | None = None, add_columns: bool = False) -> dict:
    """``df`` as a Delta table at ``output``; ``schema`` is ``df``'s Arrow schema (the table's). ``mode``: error
    (refuse an existing table), overwrite (one commit replacing every file) or append. With ``expected_records``,
    the commit is made only if the written files hold exactly that many records (their footers say), else
    :class:`~kafkaseg.errors.ExportMismatchError` is raised and the files stay unreferenced (``DeltaTable.vacuum``
    removes them). ``before_commit(actions)`` is called with the add actions of the files written (their stats:
    footers' row counts and bounds) before anything is committed; what it raises prevents the commit. Appending no
    records to an existing table commits nothing (no empty version) and removes the folder just written, unless
    ``commit_properties`` (deltalake ``CommitProperties``, e.g. custom metadata recorded with the commit) are given.

    ``seen`` (an append; ``commit_properties`` then carry the app transaction ``seen.app_id``): the commit is refused
    with :class:`~kafkaseg.errors.ConcurrentWriteError`, nothing committed, when another run of the job committed
    since the caller read the table (the app transaction's version changed), or created the table the caller did
    not find. Other writers' commits (OPTIMIZE, DELETE, UPDATE, appends) do not refuse it: the commit is made on
    the newest version, where delta-rs's own conflict check also fails a run of the job committing in the same
    instant (same app id).

    An append whose ``schema`` has a column the table lacks, or one of another type, is refused with
    :class:`~kafkaseg.errors.TableSchemaError` before anything is written: delta-rs would commit the files under
    the table's schema, and every reader would silently leave the new column out. With ``add_columns`` (a job
    whose own output gained columns between kafkaseg versions), the new columns are added to the table instead,
    as nullable (earlier rows read them as null), in a commit of their own just before the append's. Columns
    only in the table read as null for the rows appended, as Delta allows.
    Once committed (or having nothing to commit), what killed runs left in the table and VACUUM never removes is
    removed (:func:`remove_abandoned_writes`, after the table's ``delta.deletedFileRetentionDuration``).
    Returns what was committed: ``{"files": n, "records": n, "version": v, "abandoned_removed": [run folders]}``."""
    from deltalake import DeltaTable, Schema
    from deltalake.transaction import create_table_with_add_actions

    exists = is_delta_table(output)
    if exists and mode == "error":
        raise FileExistsError(f"{output} is already a Delta table (use mode overwrite or append)")
    new_fields = _check_append_schema(DeltaTable(output), schema, output, add_columns) \
        if exists and mode == "append" else []
    if exists and seen is not None and not seen.existed:
        raise ConcurrentWriteError(f"another run created {output} after this one found no table there: nothing of "
                                   "this run was written; runs of one table must not overlap")
    run_folder = run_folder_name(time.time())
    write_parquet(df, join(output, run_folder), "error", partition_by)  # timestamps as INT64 micros, as Delta needs
    unreferenced = (f"nothing of this run was committed (its files in {join(output, run_folder)} are "
                    "unreferenced: DeltaTable.vacuum removes them); runs of one table must not overlap")
    actions = delta_add_actions(output, run_folder, partition_by)
    records = sum(json.loads(a.stats)["numRecords"] for a in actions)
    if before_commit is not None:
        before_commit(actions)
    if expected_records is not None and records != expected_records:
        raise ExportMismatchError(
            f"wrote {records} records to {join(output, run_folder)} but expected {expected_records}; nothing "
            f"committed (the files are unreferenced: DeltaTable.vacuum removes them)")
    if exists and mode == "append" and records == 0 and commit_properties is None:
        filesystem, root = open_filesystem(output)
        try:
            filesystem.delete_dir(posixpath.join(root, run_folder))  # ours, just written, and it holds no record
        except FileNotFoundError:
            pass  # an object store that kept nothing of an empty write
        table = DeltaTable(output)
        return {"files": 0, "records": 0, "version": table.version(),
                "abandoned_removed": _remove_abandoned(table, output)}
    delta_schema = Schema.from_arrow(schema)
    current = DeltaTable(output).metadata() if exists else None
    if current is not None and mode == "overwrite" and list(current.partition_columns) != list(partition_by):
        # delta-rs's write transaction keeps the table's partition columns, and the new files' partition values
        # would be read as null: replace the table's metadata too (CREATE OR REPLACE TABLE, history kept). That
        # metadata is made anew, so what the table's owner set is carried over: its properties (retention
        # durations, which vacuum and log cleanup obey), name and description. Its id is new (delta-rs sets none).
        create_table_with_add_actions(output, delta_schema, actions, mode="overwrite",
                                      partition_by=list(partition_by) or None, name=current.name,
                                      description=current.description, configuration=current.configuration or None,
                                      commit_properties=commit_properties)
    elif exists:
        from deltalake.exceptions import CommitFailedError

        table = DeltaTable(output)
        if seen is not None and (now := table.transaction_version(seen.app_id)) != seen.app_version:
            raise ConcurrentWriteError(
                f"another run committed to {output} since this one read it (app transaction {seen.app_id} "
                f"{seen.app_version} -> {now}): {unreferenced}")
        if new_fields:
            table.alter.add_columns(new_fields)
            table = DeltaTable(output)
        try:
            table.create_write_transaction(actions, mode, delta_schema, list(partition_by) or None,
                                           commit_properties=commit_properties)
        except CommitFailedError as exc:
            if seen is None:
                raise
            raise ConcurrentWriteError(f"a commit to {output} in the same instant conflicted with this one "
                                       f"({first_line(exc)}): {unreferenced}") from exc
    else:
        try:
            create_table_with_add_actions(output, delta_schema, actions, mode="error",
                                          partition_by=list(partition_by) or None,
                                          commit_properties=commit_properties)
        except Exception as exc:
            if seen is None or not is_delta_table(output):
                raise
            raise ConcurrentWriteError(f"another run created {output} while this one wrote ({first_line(exc)}): "
                                       f"{unreferenced}") from exc
    table = DeltaTable(output)
    return {"files": len(actions), "records": records, "version": table.version(),
            "abandoned_removed": _remove_abandoned(table, output)}


def _remove_abandoned(table, output: str) -> list[str]:
    """:func:`remove_abandoned_writes` on a table just committed to, after its retention duration."""
    return remove_abandoned_after_commit(output, table)


def remove_abandoned_after_commit(output: str, table=None) -> list[str]:
    """:func:`remove_abandoned_writes` on the Delta table at ``output`` (``table``: its ``DeltaTable``, opened
    again without), after its retention duration, once a run committed: whatever goes wrong there (the table
    unreadable again, a deltalake error, permissions) is a warning on stderr, never a failure of a run whose data
    is committed."""
    try:
        if table is None:
            from deltalake import DeltaTable

            table = DeltaTable(output)
        return remove_abandoned_writes(output, time.time(), abandoned_after_s(table.metadata().configuration))
    except Exception as err:  # noqa: BLE001 - the run's data is committed: cleanup must not fail it
        print(f"warning: killed runs' leftovers in {output} were not looked for: {first_line(err)}",
              file=sys.stderr)
        return []


def _type_text(kind) -> str:
    """A Delta type as text, nullability left out (Spark and delta-rs set it differently for the same data)."""
    name = type(kind).__name__
    if name == "ArrayType":
        return f"array<{_type_text(kind.element_type)}>"
    if name == "MapType":
        return f"map<{_type_text(kind.key_type)},{_type_text(kind.value_type)}>"
    if name == "StructType":
        return "struct<" + ",".join(f"{f.name}:{_type_text(f.type)}" for f in kind.fields) + ">"
    return str(kind.type)


def check_delta_append(output: str, schema: pa.Schema, add_columns: bool = False) -> None:
    """The checks an append of rows of ``schema`` to the Delta table at ``output`` makes (``write_delta``), for a
    job to make before Spark starts; nothing when ``output`` is no Delta table yet. ``schema`` may be the columns
    the job always writes (the lookup job's answers: the request columns it passes through are known once Spark
    reads them); the table's other columns are then checked at commit."""
    if is_delta_table(output):
        from deltalake import DeltaTable

        _check_append_schema(DeltaTable(output), schema, output, add_columns)


def _check_append_schema(table, schema: pa.Schema, output: str, add_columns: bool) -> list:
    """The fields of ``schema`` an append must add to ``table`` (``add_columns``); raises TableSchemaError for a
    column of another type, a new column without ``add_columns``, or a table that lacks columns of ``schema``
    and holds others (another job's table, refused as such first, whatever its shared columns' types: only the
    job's own table, of an earlier kafkaseg, gains columns)."""
    from deltalake import Schema

    have = {f.name: _type_text(f.type) for f in table.schema().fields}
    fields = Schema.from_arrow(schema).fields
    other = [f"{f.name} ({have[f.name]} in the table, {_type_text(f.type)} here)" for f in fields
             if f.name in have and have[f.name] != _type_text(f.type)]
    new = [f for f in fields if f.name not in have]
    foreign = [name for name in have if name not in schema.names]
    if new and foreign:
        raise TableSchemaError(f"{output}: cannot append to it: it is not this job's table (it has columns this job "
                               f"does not write: {', '.join(foreign)}, and lacks {len(new)} of its columns: "
                               f"{', '.join(f.name for f in new[:5])}{', ...' if len(new) > 5 else ''}); nothing "
                               "was written (write to a new table, or overwrite it)")
    if other:
        raise TableSchemaError(f"{output}: cannot append: column(s) of another type: {'; '.join(other)}; nothing "
                               "was written (write with the options the table was written with, or to a new table, "
                               "or overwrite it)")
    if new and not add_columns:
        raise TableSchemaError(f"{output}: cannot append: column(s) the table lacks: "
                               f"{', '.join(f.name for f in new)} (Delta readers would leave them out); nothing was "
                               "written (write with the columns the table was written with, or to a new table, or "
                               "overwrite it)")
    return [Schema.from_arrow(pa.schema([schema.field(f.name).with_nullable(True)])).fields[0] for f in new]


def delta_add_actions(table: str, folder: str, partition_by: Sequence[str]) -> list:
    """One Delta add action per Parquet data file under ``table``/``folder``: its path relative to the table,
    size, partition values (from Spark's ``column=value`` directories, unescaped), modification time and
    ``numRecords`` from the file's footer. Spark's markers (``_SUCCESS``) and checksum files are skipped, and so is
    everything under a hidden folder (``_temporary``, ``.spark-staging-*``: a task's attempt files, left when Spark's
    cleanup failed and was ignored; :func:`remove_abandoned_writes` deletes them later, so they must never be
    committed). Partition folders (``column=value``) count whatever their first character."""
    from deltalake.transaction import AddAction

    filesystem, root = open_filesystem(table)
    actions = []
    # allow_not_found: on object storage a write of no rows may leave no object at all there (no empty folders)
    base = posixpath.join(root, folder)
    selector = pafs.FileSelector(base, recursive=True, allow_not_found=True)
    infos = [info for info in filesystem.get_file_info(selector)
             if info.type == pafs.FileType.File and info.base_name.endswith(".parquet")
             and not info.base_name.startswith((".", "_"))
             and not any(part.startswith((".", "_")) and "=" not in part
                         for part in posixpath.relpath(info.path, base).split("/")[:-1])]
    for info, stats in zip(infos, footer_stats(filesystem, [info.path for info in infos])):
        relative = posixpath.relpath(info.path, root)
        values = hive_partition_values(relative.split("/")[1:-1], partition_by)
        actions.append(AddAction(relative, info.size, values, int(info.mtime_ns // 1_000_000), True,
                                 json.dumps(stats)))
    return actions


def hive_partition_values(folders: Sequence[str], columns: Sequence[str] | None = None) -> dict:
    """The partition values of Spark's ``column=value`` folder names (unescaped; its null folder as None), of
    ``columns`` only when given."""
    values = {}
    for part in folders:
        column, sep, value = part.partition("=")
        if sep and (columns is None or column in columns):
            values[column] = None if value == HIVE_DEFAULT_PARTITION else unquote(value)
    return values


def footer_stats(filesystem: pafs.FileSystem, paths: Sequence[str]) -> list[dict]:
    """:func:`file_stats` of each Parquet file of ``paths`` (as ``filesystem`` names them), in order; on object
    storage 16 footers at a time (:func:`kafkaseg.storage.fs.map_files`: each is a request or two)."""
    from kafkaseg.storage.fs import map_files

    def one(path: str) -> dict:
        with filesystem.open_input_file(path) as handle:
            return file_stats(pq.ParquetFile(handle).metadata)

    return map_files(one, list(paths), [filesystem])


def file_stats(metadata: pq.FileMetaData) -> dict:
    """Delta's per-file statistics from a Parquet footer (PROTOCOL.md "Per-file Statistics"): ``numRecords``, and
    ``minValues``/``maxValues``/``nullCount`` of the top-level numeric, boolean, date, timestamp and string columns
    (offset, partition, timestamp, ...), so Delta readers can skip files by offset or time. Binary columns (key,
    value), nested ones, decimals and timestamps without a time zone get none, which the protocol allows."""
    mins: dict = {}
    maxs: dict = {}
    nulls: dict = {}
    complete: dict = {}
    for g in range(metadata.num_row_groups):
        group = metadata.row_group(g)
        for c in range(group.num_columns):
            column = group.column(c)
            name = column.path_in_schema
            stats = column.statistics
            if ("." not in name and stats is not None and stats.has_null_count and not stats.has_min_max
                    and stats.null_count == column.num_values):
                nulls[name] = nulls.get(name, 0) + stats.null_count  # an all-null row group: no bounds needed
                continue
            if "." in name or not _has_usable_stats(column):
                complete[name] = False
                continue
            low, high = stats.min, stats.max
            if complete.get(name, True) and low is not None and high is not None:
                mins[name] = low if name not in mins else min(mins[name], low)
                maxs[name] = high if name not in maxs else max(maxs[name], high)
                nulls[name] = nulls.get(name, 0) + stats.null_count
                complete.setdefault(name, True)
            else:
                complete[name] = False
    keep = [name for name, ok in complete.items() if ok and name in mins]
    out = {"numRecords": metadata.num_rows}
    if keep:
        out["minValues"] = {n: _json_value(mins[n]) for n in keep}
        out["maxValues"] = {n: _json_value(maxs[n], upper=True) for n in keep}
        out["nullCount"] = {n: nulls[n] for n in keep}
    return out


def _has_usable_stats(column) -> bool:
    stats = column.statistics
    if stats is None or not stats.has_min_max or not stats.has_null_count:
        return False
    if column.physical_type == "BYTE_ARRAY":
        return str(stats.logical_type) == "String"
    # a decimal of up to 18 digits is stored as INT32/INT64 too: its bounds (Decimal) have no JSON number form
    # that keeps their precision, and the protocol lets a file go without them
    if str(stats.logical_type).startswith("Decimal"):
        return False
    # a timestamp without a time zone (Spark's TIMESTAMP_NTZ) has naive bounds: Delta's UTC form would need a
    # zone they do not have (the machine's would shift them), so it goes without
    if "isAdjustedToUTC=false" in str(stats.logical_type):
        return False
    return column.physical_type in ("INT32", "INT64", "BOOLEAN", "FLOAT", "DOUBLE")


def _json_value(value, upper: bool = False):
    """Delta's JSON forms: timestamps as ISO-8601 UTC with milliseconds and 'Z' (a maximum with sub-millisecond
    digits is rounded up, so the bound stays a bound), dates as YYYY-MM-DD."""
    if isinstance(value, _dt.datetime):
        value = value.astimezone(_dt.timezone.utc)
        if upper and value.microsecond % 1000:
            value += _dt.timedelta(microseconds=1000 - value.microsecond % 1000)
        return value.strftime("%Y-%m-%dT%H:%M:%S.") + f"{value.microsecond // 1000:03d}Z"
    if isinstance(value, _dt.date):
        return value.isoformat()
    return value


