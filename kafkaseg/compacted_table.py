"""The compacted Delta table of a compaction run (deltalake / delta-rs on the driver; no Spark).

- :func:`table_schema`: the table's columns: Spark's Kafka columns (``key, value, topic, partition, offset,
  timestamp, timestampType``, plus ``headers`` with ``includeHeaders=true``), one row per live key. No ``date``:
  a state table is read by key, and partitioning it by the day of each key's last update would make every merge
  rewrite files across many partitions.
- :func:`read_state`: the :class:`~kafkaseg.compaction.TableState` recorded in the table's newest kafkaseg commit
  (commit metadata ``kafkaseg.compaction``), with the schema checked.
- :func:`merge_changes`: one ``DeltaTable.merge`` commit that applies a change set (newer rows update, newer
  tombstones delete, new keys are inserted; a row is only replaced by a higher offset, so re-applying a change
  set changes nothing) and records the new state in the same commit: a crash before it leaves table and offsets
  as they were, a crash after it leaves both advanced. :func:`merge_staged_parquet` merges a change set the
  executors staged as Parquet (``jobs/compact.py``), streamed batch by batch.
- :func:`prepare_run` / :func:`compact_arrow`: a whole run without Spark (read with :func:`kafkaseg.read_arrow`,
  reduce with :func:`kafkaseg.compaction.latest_per_key`): the reference for ``jobs/compact.py`` and fine for
  small topics (the whole increment is in memory).
- :func:`delta_dataset`: a Delta table (this one, an export's, a lookup's source) as a ``pyarrow.dataset``, read
  so that the process can exit safely afterwards.
"""

from __future__ import annotations

import dataclasses
import json
import re
import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Mapping, Sequence

import pyarrow as pa
import pyarrow.compute as pc

from kafkaseg.compaction import (
    STATE_KEY,
    CompactionConfig,
    Increment,
    TableState,
    compaction_read_options,
    gather_facts,
    latest_per_key,
    plan_increment,
)
from kafkaseg.errors import CompactedTableError, InvalidOptionError, first_line

__all__ = ["table_schema", "read_state", "merge_changes", "merge_staged_parquet", "remove_staging",
           "remove_stale_staging", "staging_name", "commit_properties", "conflicts_reported", "write_full_arrow",
           "RunPlan", "prepare_run", "compact_arrow",
           "MERGE_PREDICATE", "MODES", "ROW_PRESERVING_OPERATIONS", "RewriteScope", "rewrite_scope",
           "merges_on_driver", "commit_rewrite", "delta_dataset"]

MODES = ("auto", "full", "incremental")
APP_ID = "kafkaseg.compaction"  # the Delta app transaction id every compaction commit carries
MERGE_ROW_GROUP = 65_536
MERGE_PREDICATE = "t.topic = s.topic AND t.partition = s.partition AND t.key = s.key"
# Delta operations (delta-rs's and Spark's names) that another writer may commit after a compaction run without
# changing the table's rows: the offsets that run recorded still account for them. Any other operation (DELETE,
# UPDATE, MERGE, WRITE, FSCK...) is refused; a RESTORE continues from the restored version's state.
ROW_PRESERVING_OPERATIONS = frozenset((
    "OPTIMIZE", "VACUUM START", "VACUUM END", "SET TBLPROPERTIES", "UNSET TBLPROPERTIES", "UPGRADE PROTOCOL",
    "ADD FEATURE", "ADD CONSTRAINT", "DROP CONSTRAINT", "UPDATE FIELD METADATA", "UPDATE TABLE METADATA",
    "COMPUTE STATS", "REORG"))


def table_schema(include_headers: bool) -> pa.Schema:
    """The compacted table's Arrow schema (kafkaseg's read schema without metadata columns)."""
    from kafkaseg.schema import arrow_schema

    return arrow_schema(include_headers, False)


def commit_properties(state: TableState):
    """deltalake ``CommitProperties`` carrying ``state`` in the commit's metadata, and the Delta app transaction
    :data:`APP_ID` (its version: the read time): delta-rs's conflict check fails a commit when a concurrent one
    carries the same app id, so two compaction runs of one table never both commit, even where its file-level
    checks let an overwrite through (a commit that only added files)."""
    from deltalake import CommitProperties, Transaction

    return CommitProperties(custom_metadata={STATE_KEY: state.to_json()},
                            app_transactions=[Transaction(APP_ID, state.read_at_ms)])


def delta_dataset(uri: str, table=None):
    """The Delta table at ``uri`` (``table``: a ``DeltaTable`` of it already open, e.g. at a version) as a
    ``pyarrow.dataset.Dataset``.

    deltalake's own ``to_pyarrow_dataset()`` reads through a ``pyarrow.fs.PyFileSystem`` over its Python storage
    handler. Arrow's I/O threads may release the last reference to that filesystem just after a read returned, and
    freeing it takes the GIL: when that happens while the interpreter finalizes, the thread is unwound through the
    C++ destructor and the process aborts with "terminate called without an active exception" (about one run in
    twenty of a script that reads a table twice and exits). A local table is read through pyarrow's own
    filesystem, which frees without the GIL; a table on object storage through deltalake's handler, which takes
    the credentials and options deltalake was given."""
    import pyarrow.fs as pafs
    from deltalake import DeltaTable

    from kafkaseg.storage.fs import open_filesystem

    table = DeltaTable(uri) if table is None else table
    if "://" in uri and not uri.lower().startswith("file://"):  # (no filesystem of pyarrow's made for it: no I/O)
        return table.to_pyarrow_dataset()
    filesystem, root = open_filesystem(uri)
    return table.to_pyarrow_dataset(filesystem=pafs.SubTreeFileSystem(root, filesystem))


def read_state(uri: str, expected: pa.Schema, partition_by: Sequence[str], *, keep_deletes: bool = False):
    """``(DeltaTable, TableState)`` of the table at ``uri``: the state of its newest commit that recorded one,
    when every later commit kept the rows (:data:`ROW_PRESERVING_OPERATIONS`: OPTIMIZE, VACUUM...; with
    ``keep_deletes`` also DELETE, whose removed rows then stay removed); through a RESTORE to version v, the state
    of the newest such commit at or before v (the rows are v's again).
    Raises :class:`CompactedTableError` when no commit did (not a kafkaseg compacted table, or its log was cleaned
    up past it), when another writer's later commit may have changed rows (a DELETE, UPDATE, foreign write), or
    when the table's columns or partitioning differ from ``expected``/``partition_by``."""
    from deltalake import DeltaTable

    table = DeltaTable(uri)
    refuse_foreign_table(table, uri)
    check_schema(table, expected, partition_by, uri)
    lineage_end = None  # a RESTORE to version v: the commits after v (up to the RESTORE) no longer hold rows
    kept: list[int] = []  # DELETEs accepted with keep_deletes, recorded in the next state
    for commit in newest_commits(table):
        version = commit.get("version")
        if lineage_end is not None and version is not None and version > lineage_end:
            continue
        text = commit.get(STATE_KEY)
        if text is not None:
            state = TableState.from_json(text, f"{uri} version {version}")
            if kept:
                state = dataclasses.replace(state, kept_deletes=tuple(state.kept_deletes) + tuple(sorted(kept)))
            return table, state
        operation = commit.get("operation")
        if operation == "RESTORE":
            target = (commit.get("operationParameters") or {}).get("version")
            if target is not None:
                lineage_end = int(target)
                continue
        if operation == "DELETE" and keep_deletes:
            if version is not None:
                kept.append(int(version))
            continue
        if operation not in ROW_PRESERVING_OPERATIONS:
            hint = (" (or, for a DELETE, set keep_foreign_deletes = true to keep its rows deleted)"
                    if operation == "DELETE" else "")
            raise CompactedTableError(
                f"{uri} version {version} ({operation or 'a commit without commit info'}) was written by another "
                "writer after the last compaction run and may have changed rows: the offsets that run recorded no "
                f"longer account for the table's rows. Rebuild it with --mode full{hint}")
    raise CompactedTableError(f"{uri} is a Delta table without recorded compaction offsets ({STATE_KEY} in its "
                              "commits): not written by a compaction run, or its log was cleaned up past the last "
                              "run. Rebuild it with --mode full or write another table")


def refuse_foreign_table(table, uri: str) -> None:
    """Refuse a table no compaction run wrote: no commit records a state and its columns are not a compacted
    table's (another job's table, e.g. an export's with its ``date`` column, given as ``--output`` by mistake).
    Neither merging into it nor a rebuild (which replaces every row) is what was meant. A compacted table whose
    Delta log was cleaned up past its last run keeps its columns and is left to the other checks."""
    names = {f.name for f in table.schema().fields}
    if names in ({f.name for f in table_schema(False)}, {f.name for f in table_schema(True)}):
        return
    if any(commit.get(STATE_KEY) is not None for commit in newest_commits(table)):
        return
    raise CompactedTableError(f"{uri} is a Delta table not written by a compaction run (no {STATE_KEY} in its "
                              f"commits; columns {', '.join(sorted(names))}): another job's table? A compaction run "
                              "neither merges into it nor replaces it; give another --output, or delete the table "
                              "first")


def newest_commits(table, first: int = 16):
    """The table's commit infos, newest first, read a page at a time (``history(limit)``): the state a run needs
    is normally in the newest commit, and a whole history is a file per commit (thousands after weeks of
    runs, each a request on object storage)."""
    seen = 0
    limit = first
    while True:
        commits = table.history(limit)
        yield from commits[seen:]
        if len(commits) < limit:
            return
        seen, limit = len(commits), limit * 16


def recorded_state(uri: str) -> TableState | None:
    """The newest recorded state of the table at ``uri`` whatever came after it, or None (a rebuild's check that
    it covers what the table holds); DELETEs committed after it count among its ``kept_deletes`` (a rebuild undoes
    them too)."""
    from deltalake import DeltaTable

    deletes: list[int] = []
    for commit in newest_commits(DeltaTable(uri)):
        text = commit.get(STATE_KEY)
        if text is not None:
            try:
                state = TableState.from_json(text, uri)
            except CompactedTableError:
                return None
            return dataclasses.replace(state, kept_deletes=tuple(state.kept_deletes) + tuple(sorted(deletes)))
        if commit.get("operation") == "DELETE" and commit.get("version") is not None:
            deletes.append(int(commit["version"]))
    return None


def check_schema(table, expected: pa.Schema, partition_by: Sequence[str], uri: str) -> None:
    """Refuse a table whose columns (names and Delta types) or partition columns are not the run's."""
    from deltalake import Schema

    have = {f.name: f for f in table.schema().fields}
    want = {f.name: f for f in Schema.from_arrow(expected).fields}
    problems = []
    only_table = [n for n in have if n not in want]
    only_run = [n for n in want if n not in have]
    if only_table:
        problems.append(f"only in the table: {', '.join(only_table)}")
    if only_run:
        problems.append(f"only in this run: {', '.join(only_run)}")
    for name in want:
        if name in have and have[name].type != want[name].type:
            problems.append(f"{name} is {have[name].type} in the table, {want[name].type} in this run")
    partitioning = list(table.metadata().partition_columns)
    if partitioning != list(partition_by):
        problems.append(f"partitioned by {', '.join(partitioning) or 'nothing'}, this run by "
                        f"{', '.join(partition_by) or 'nothing'}")
    if problems:
        raise CompactedTableError(f"{uri} does not match this compaction run ({'; '.join(problems)}): use the "
                                  "options and partition_by it was built with (includeHeaders), or rebuild it with "
                                  "--mode full")


def check_partitioning(uri: str, partition_by: Sequence[str]) -> None:
    """Refuse a rebuild of a table partitioned otherwise: a Delta overwrite keeps the table's partition columns,
    so files partitioned by others would be mislabeled."""
    from deltalake import DeltaTable

    partitioning = list(DeltaTable(uri).metadata().partition_columns)
    if partitioning != list(partition_by):
        raise CompactedTableError(f"{uri} is partitioned by {', '.join(partitioning) or 'nothing'}, this run by "
                                  f"{', '.join(partition_by) or 'nothing'}: a rebuild cannot change a Delta table's "
                                  "partitioning; set partition_by to the table's, or write another table")


def merge_changes(table, changes, state: TableState, topics: Sequence[str] | None = None,
                  expired: Mapping[tuple[str, int], int] | None = None) -> dict:
    """Apply ``changes`` (a change set: one row per identity, tombstones included; a ``pyarrow.Table`` or
    ``RecordBatchReader``) to the ``DeltaTable`` ``table`` in one commit that also records ``state``. A target
    row is updated or deleted only by a higher offset, so a change set applied twice changes nothing. ``expired``:
    ``{(topic, partition): log start offset}`` whose rows below it are deleted in the same commit
    (:func:`kafkaseg.compaction.drop_expired`). ``topics``: the only topics ``changes`` and ``expired`` can hold
    (the merge then skips the table's files of other topics). Returns delta-rs's merge metrics. A concurrent
    commit to the table in between fails the commit (delta-rs's conflict check), leaving it unchanged: a
    :class:`CompactedTableError`."""
    predicate = MERGE_PREDICATE
    if topics:  # (none read: the change set is empty, nothing to restrict)
        predicate += f" AND t.topic IN ({', '.join(_sql_string(t) for t in sorted(set(topics)))})"
    with conflicts_reported(table.table_uri):
        return _merge(table, changes, state, predicate, _expired_predicate(expired or {}))


def _expired_predicate(expired: Mapping[tuple[str, int], int]) -> str | None:
    """The SQL condition on the target's rows below their partition's log start offset in ``expired``."""
    if not expired:
        return None
    return " OR ".join(f"(t.topic = {_sql_string(topic)} AND t.partition = {int(partition)} AND t.offset < "
                       f"{int(start)})" for (topic, partition), start in sorted(expired.items()))


def _sql_string(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


@contextmanager
def conflicts_reported(uri: str):
    """Turn delta-rs's failed commit (another writer committed since the version a run read: its conflict check)
    into a one-line :class:`CompactedTableError` naming the table; nothing of the run was committed."""
    from deltalake.exceptions import CommitFailedError

    try:
        yield
    except CommitFailedError as exc:
        raise CompactedTableError(
            f"another writer committed to {uri} while this run wrote to it ({first_line(exc)}): nothing of this "
            "run was committed; run again (runs of one table must not overlap)") from exc


def _merge(table, changes, state: TableState, predicate: str, expired: str | None = None) -> dict:
    from deltalake import WriterProperties

    before = table.version()
    # rewritten files in row groups of MERGE_ROW_GROUP rows: the writer buffers a row group (delta-rs's default is
    # about a million rows), which measured a quarter of a merge's peak memory (BENCHMARKS.md)
    merger = (table.merge(changes, predicate, source_alias="s", target_alias="t",
                          writer_properties=WriterProperties(max_row_group_size=MERGE_ROW_GROUP),
                          commit_properties=commit_properties(state))
              .when_matched_delete("s.value IS NULL AND s.offset > t.offset")
              .when_matched_update_all("s.offset > t.offset")
              .when_not_matched_insert_all("s.value IS NOT NULL"))
    if expired is not None:
        # a key with no new record whose row is below the log start: retention deleted all of its records
        merger = merger.when_not_matched_by_source_delete(expired)
    metrics = merger.execute()
    if table.version() == before:
        # a merge that changes no row commits nothing (delta-rs); the offsets read must still be recorded, or the
        # next run would read the same range again: an empty commit carries them
        table.create_write_transaction([], "append", table.schema(), list(table.metadata().partition_columns),
                                       commit_properties=commit_properties(state))
    return metrics


def write_full_arrow(uri: str, rows: pa.Table, state: TableState, partition_by: Sequence[str]) -> None:
    """Replace the table at ``uri`` (created when missing) by ``rows`` (live keys only) in one commit recording
    ``state`` (the Spark-free rebuild; the job's executors write files and commit them the same way)."""
    from deltalake import write_deltalake

    with conflicts_reported(uri):
        write_deltalake(uri, rows, mode="overwrite", schema_mode="overwrite",
                        partition_by=list(partition_by) or None, commit_properties=commit_properties(state))


def merge_staged_parquet(staging: str, plan: RunPlan) -> dict:
    """Merge the staged change set (Parquet files under ``staging``) into the table at the version ``plan`` read,
    streamed batch by batch into ``DeltaTable.merge``; the commit records ``plan``'s new offsets."""
    import pyarrow.dataset as ds
    from deltalake import DeltaTable

    from kafkaseg.storage.fs import open_filesystem

    filesystem, root = open_filesystem(staging)
    dataset = ds.dataset(root, format="parquet", filesystem=filesystem, ignore_prefixes=["_", "."])
    for fragment in dataset.get_fragments():
        # every staged file must be read: one left out would have its offsets recorded as applied
        try:
            fragment.ensure_complete_metadata()
        except (OSError, pa.ArrowException) as exc:
            raise CompactedTableError(f"the staged change set file {fragment.path} is not readable Parquet "
                                      f"({first_line(exc)}): nothing committed; run again") from exc
    source = dataset.scanner(columns=plan.schema.names).to_reader()
    source = _cast_reader(source, plan.schema)
    table = DeltaTable(plan.output, version=plan.table_version)
    return merge_changes(table, source, plan.increment.state, plan.topics_changed, plan.increment.expired)


@dataclass(frozen=True)
class RewriteScope:
    """The table files an incremental run must rewrite when the executors apply its change set: with ``topic``
    among the partition columns, the files of the topics the run read (``topics``; the others are kept), else
    every file (``topics`` None). ``files``: ``(path relative to the table, its partition values)``; ``bytes``:
    their total size, which decides between the driver's merge and the executors' rewrite. ``deletion_vectors``:
    the table's protocol has Delta's deletion vectors (a Spark DELETE marks rows deleted in a side file instead of
    rewriting the data file), which the executors' plain Parquet read of the files would not apply."""

    topics: tuple[str, ...] | None
    files: tuple[tuple[str, tuple[tuple[str, str | None], ...]], ...]
    bytes: int
    deletion_vectors: bool = False


def rewrite_scope(plan: RunPlan) -> RewriteScope:
    """:class:`RewriteScope` of ``plan`` at the table version it read (the Delta log only, no data file)."""
    from deltalake import DeltaTable

    if not plan.topics_changed:
        return RewriteScope((), (), 0)  # nothing read or expired, nothing to rewrite (the run only records its read)
    table = DeltaTable(plan.output, version=plan.table_version)
    deletion_vectors = "deletionVectors" in (table.protocol().reader_features or ())
    actions = pa.table(table.get_add_actions(flatten=True))
    values = [tuple(zip([c] * actions.num_rows, actions.column(f"partition.{c}").to_pylist()))
              for c in plan.partition_by]
    files = list(zip(actions.column("path").to_pylist(), zip(*values) if values else [()] * actions.num_rows,
                     actions.column("size_bytes").to_pylist()))
    topics = None
    if "topic" in plan.partition_by:
        topics = tuple(plan.topics_changed)  # (a topic with nothing new keeps its files)
        files = [f for f in files if dict(f[1])["topic"] in topics]
    return RewriteScope(topics, tuple((path, tuple(parts)) for path, parts, _ in files), sum(f[2] for f in files),
                        deletion_vectors)


def merges_on_driver(plan: RunPlan, scope: RewriteScope) -> bool:
    """Whether ``plan``'s change set is merged by the driver (delta-rs, in memory) rather than by the executors:
    the files it may rewrite total at most ``driver_merge_max_bytes``, or the run read nothing (the driver then
    only records the read, in an empty commit), or the table may hold deletion vectors (a DELETE by Spark kept
    with ``keep_foreign_deletes``: delta-rs's merge applies them, a rewrite from the raw files would bring the
    deleted rows back; purge them, e.g. Spark's ``REORG TABLE ... APPLY (PURGE)``, to return to the executors)."""
    if not plan.topics_changed or scope.deletion_vectors:
        return True
    return scope.bytes <= plan.driver_merge_max_bytes and plan.driver_merge_max_bytes > 0


def commit_rewrite(plan: RunPlan, scope: RewriteScope, actions: list) -> dict:
    """Replace the files of ``scope`` by ``actions`` (the executors' rewrite of them) in one commit recording
    ``plan``'s new offsets. Refused, with nothing committed, when the table moved past the version the run read:
    a concurrent commit would otherwise be partly undone (delta-rs does not refuse such an overwrite over a
    commit that only added files); a compaction run committing between that check and this commit fails it on
    their common app transaction id (:func:`commit_properties`); another writer's in that instant is not seen."""
    from deltalake import DeltaTable

    latest = DeltaTable(plan.output)
    if latest.version() != plan.table_version:
        raise CompactedTableError(
            f"{plan.output} changed while this run worked (version {plan.table_version} read, now "
            f"{latest.version()}: another writer or a concurrent run): nothing committed; run again")
    table = DeltaTable(plan.output, version=plan.table_version)
    filters = [("topic", "in", list(scope.topics))] if scope.topics is not None else None
    with conflicts_reported(plan.output):  # a run committing after the check above: the app transaction id
        table.create_write_transaction(actions, "overwrite", table.schema(), list(plan.partition_by) or None,
                                       partition_filters=filters,
                                       commit_properties=commit_properties(plan.increment.state))
    return {"files_rewritten": len(scope.files), "bytes_rewritten": scope.bytes, "files_written": len(actions),
            "num_target_rows": sum(json.loads(a.stats)["numRecords"] for a in actions)}


def _cast_reader(reader, schema):
    """``reader`` with its batches cast to ``schema`` (Spark names a list's element field ``element``)."""
    def batches():
        for batch in reader:
            yield pa.RecordBatch.from_arrays([batch.column(i).cast(f.type) for i, f in enumerate(schema)],
                                             schema=schema)
    return pa.RecordBatchReader.from_batches(schema, batches())


#: A staging folder's name: ``<UTC time>Z-<run id>`` (``<local time>-<run id>`` before the Z was added).
_STAGING_NAME = re.compile(r"(\d{8}T\d{6})(Z?)-[0-9a-f]+")


def staging_name(now_s: float, run_id: str) -> str:
    """The staging folder name of a run started at ``now_s`` (epoch seconds)."""
    return time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(now_s)) + f"-{run_id}"


def remove_stale_staging(root: str, now_s: float, max_age_hours: float) -> list[str]:
    """Remove the staging folders under ``root`` (a table's staging root) that runs started more than
    ``max_age_hours`` ago left behind (a run killed between staging and merging; a finished run removes its own).
    A younger folder may be a concurrent run's change set and is kept, and so is anything not named like a
    staging folder. Returns the names removed."""
    from kafkaseg.storage.fs import FILESYSTEM_ERRORS, open_filesystem, started_folders

    filesystem, base = open_filesystem(root)
    removed = []
    for entry, started in started_folders(filesystem, base, _STAGING_NAME):
        if now_s - started > max_age_hours * 3600:
            try:
                filesystem.delete_dir(entry.path)
                removed.append(entry.base_name)
            except FILESYSTEM_ERRORS:
                pass
    return removed


def remove_staging(path: str) -> None:
    """Remove a run's staging folder, and the staging root once no run's folder is left in it."""
    import pyarrow.fs as pafs

    from kafkaseg.storage.fs import FILESYSTEM_ERRORS, open_filesystem

    filesystem, root = open_filesystem(path)
    parent = root.rsplit("/", 1)[0]
    try:
        filesystem.delete_dir(root)
        if not filesystem.get_file_info(pafs.FileSelector(parent)):
            filesystem.delete_dir(parent)
    except FILESYSTEM_ERRORS:  # FileNotFoundError included: nothing to remove
        pass


@dataclass(frozen=True)
class RunPlan:
    """Everything a run decided before reading a record: the table's state (None: no table or a rebuild), the
    increment, the read options pinned to its ranges, and the table's schema."""

    output: str
    increment: Increment
    previous: TableState | None
    read_options: dict
    schema: pa.Schema
    partition_by: tuple[str, ...]
    table_version: int | None
    driver_merge_max_bytes: int = 64 << 20
    stale_staging_hours: int = 24

    @property
    def full(self) -> bool:
        return self.increment.full

    @property
    def topics_read(self) -> list[str]:
        """The topics whose read covers at least one offset (no other topic can be in the change set)."""
        return sorted({topic for (topic, _), (start, end) in self.increment.ranges.items() if end > start})

    @property
    def topics_changed(self) -> list[str]:
        """The topics whose table rows the run may change: those read, and those with a partition whose log start
        moved (``increment.expired``: rows below it are dropped)."""
        return sorted(set(self.topics_read) | {topic for topic, _ in self.increment.expired})


def pinned(options: Mapping[str, str], ranges: Mapping[tuple[str, int], tuple[int, int]]) -> dict:
    """``options`` with explicit ``startingOffsets``/``endingOffsets`` JSON for ``ranges``, and the topic selection
    replaced by ``assign`` of exactly those partitions: the run decided what to read (a selected topic gone from
    the dirs is its own data-loss rule, whose remedy, a rebuild, must not then fail on ``subscribe``)."""
    starts: dict = {}
    ends: dict = {}
    for (topic, partition), (start, end) in sorted(ranges.items()):
        starts.setdefault(topic, {})[str(partition)] = int(start)
        ends.setdefault(topic, {})[str(partition)] = int(end)
    out = dict(options)
    if ranges:
        out = {k: v for k, v in out.items() if k.strip().lower() not in ("subscribe", "subscribepattern", "assign")}
        out["assign"] = json.dumps({t: sorted(int(p) for p in parts) for t, parts in starts.items()},
                                   separators=(",", ":"))
    return {**out, "startingOffsets": json.dumps(starts, separators=(",", ":")),
            "endingOffsets": json.dumps(ends, separators=(",", ":"))}


def prepare_run(paths: Sequence[str], output: str, config: CompactionConfig, options: Mapping[str, str],
                mode: str = "auto", now_ms: int | None = None) -> RunPlan:
    """Decide a run: the table's state and schema check (``mode`` ``auto``: incremental when the table exists,
    else full; ``incremental`` requires the table; ``full`` rebuilds), the partitions' facts, the increment (data
    loss and incarnation checks) and the pinned read options. Reads index files, checkpoints and the table's log
    only."""
    from kafkaseg.options import ReadOptions

    if mode not in MODES:
        raise InvalidOptionError(f"mode must be one of {', '.join(MODES)}, not {mode!r}")
    read_options = compaction_read_options(options)
    schema = table_schema(ReadOptions.from_options(dict(read_options)).include_headers)
    now_ms = int(time.time() * 1000) if now_ms is None else now_ms
    from kafkaseg.storage.fs import is_delta_table

    exists = is_delta_table(output)
    if mode == "incremental" and not exists:
        raise CompactedTableError(f"--mode incremental: {output} is not a Delta table yet (run --mode full or auto "
                                  "first)")
    state = version = None
    if exists and mode != "full":
        table, state = read_state(output, schema, config.partition_by, keep_deletes=config.keep_foreign_deletes)
        version = table.version()
    elif exists:
        from deltalake import DeltaTable

        refuse_foreign_table(DeltaTable(output), output)
        check_partitioning(output, config.partition_by)
        state = recorded_state(output)
    facts, on_disk = gather_facts(paths, read_options, config)
    increment = plan_increment(facts, state, config, now_ms, full=(mode == "full"), on_disk=on_disk,
                               selects=ReadOptions.from_options(dict(read_options)).selects)
    return RunPlan(output, increment, None if increment.full else state, pinned(read_options, increment.ranges),
                   schema, tuple(config.partition_by), version, config.driver_merge_max_bytes,
                   config.stale_staging_hours)


def compact_arrow(paths: Sequence[str], output: str, config: CompactionConfig | None = None,
                  options: Mapping[str, str] | None = None, mode: str = "auto", now_ms: int | None = None) -> dict:
    """A whole compaction run without Spark (the increment is read into memory: small topics, tests). Returns
    ``{"plan": RunPlan, "changes": rows in the change set, "merge": metrics or None, "missing_offsets": (segment,
    first, end) the read went past}``."""
    from kafkaseg.scan import open_scan

    config = config or CompactionConfig()
    plan = prepare_run(paths, output, config, options or {}, mode, now_ms)
    if not plan.increment.ranges:
        raise InvalidOptionError(f"no topic-partition selected in {', '.join(map(str, paths))}")
    scan = open_scan(list(paths), **plan.read_options)
    changes = latest_per_key(scan.to_table()).cast(plan.schema)
    # offsets missing between segments the read went past (compaction a follower's checkpoint does not record, or
    # a lost segment file, whose keys the table then keeps stale): said, as the job prints them
    missing = list(scan.metrics.missing_offsets)
    if plan.full:
        write_full_arrow(output, changes.filter(pc.is_valid(changes.column("value"))), plan.increment.state,
                         plan.partition_by)
        return {"plan": plan, "changes": changes.num_rows, "merge": None, "missing_offsets": missing}
    from deltalake import DeltaTable

    table = DeltaTable(output, version=plan.table_version)
    return {"plan": plan, "changes": changes.num_rows, "missing_offsets": missing,
            "merge": merge_changes(table, changes, plan.increment.state, plan.topics_changed,
                                   plan.increment.expired)}
