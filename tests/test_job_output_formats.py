"""Every job's write of one format onto a folder holding another's data is refused before Spark starts.

Spark's csv/json/Parquet writers' ``overwrite`` deletes the whole folder (a Delta table's ``_delta_log`` and files
with it, or another tool's data); their appends and a Delta log put files of one format among another's, which
readers of the folder then read as theirs. Each job (export, lookup, retention audit, compaction) is run through
its pre-Spark checks (``prepare``/``check``) for every format and mode it has, against a folder holding a Delta
table, Parquet files, CSV files, JSON lines files and unrelated files; no JVM is started."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from jobs import compact, export
from kafkaseg.testing import TopicSpec, write_data_dir


def _load(name: str):
    spec = importlib.util.spec_from_file_location(f"{name}_formats_job",
                                                  Path(__file__).resolve().parents[1] / f"jobs/{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


lookup = _load("lookup")
retention_audit = _load("retention_audit")

#: What a refusal for the folder's contents says (the jobs' other usage errors do not)
FORMAT_REFUSAL = re.compile(r"is a Delta table \(it has a _delta_log\)| holds ")
CONTENTS = ("delta", "parquet", "csv", "json", "unrelated")


def _fill(folder: Path, content: str) -> None:
    """``folder`` holding one kind of data, as the tools that write it leave it."""
    if content == "delta":
        from deltalake import write_deltalake

        write_deltalake(str(folder), pa.table({"a": [1, 2]}))
        return
    folder.mkdir(parents=True)
    (folder / "_SUCCESS").write_text("")  # Spark's marker: no data, whatever the format
    if content == "parquet":
        pq.write_table(pa.table({"a": [1]}), folder / "part-00000-x.snappy.parquet")
    elif content == "csv":
        (folder / "topic=a").mkdir()
        (folder / "topic=a" / "part-00000-x.c000.csv").write_text("a\n1\n")
    elif content == "json":
        (folder / "part-00000-x.c000.json.gz").write_bytes(b"\x1f\x8b")
    else:
        (folder / "notes.txt").write_text("not a table\n")


def _refused(fmt: str, content: str, mode: str) -> bool:
    """The rule: another format's data is never written over or among; a folder of unrelated files is not
    replaced by Spark's writers' overwrite (it deletes the folder); Delta's writes leave files outside its log."""
    if content == "unrelated":
        return fmt != "delta" and mode == "overwrite"
    return content != fmt


def _snapshot(folder: Path) -> dict:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def datadir(tmp_path_factory):
    root = tmp_path_factory.mktemp("formats")
    write_data_dir(root, [TopicSpec("state", records_per_partition=50, key_cardinality=10)], seed=5)
    return str(root)


def _jobs(datadir: str, tmp: Path):
    """``(job name, formats, modes, check(output, fmt, mode))`` for each job; check runs what the job runs
    before Spark starts."""
    requests = tmp / "requests.csv"
    requests.write_text("topic,partition,time\nstate,0,-1\n")

    def export_check(output, fmt, mode):
        export.prepare(export.parse_args(["--data-dir", datadir, "--output", output, "--format", fmt,
                                          "--mode", mode]))

    def lookup_check(output, fmt, mode):
        lookup.check(lookup.parse_args(["--data-dir", datadir, "--input", str(requests), "--output", output,
                                        "--format", fmt, "--mode", mode]))

    def audit_check(flag):
        def check(output, fmt, mode):
            other = ["--output", str(tmp / "audit-elsewhere")] if flag == "--segments" else []
            retention_audit.prepare(retention_audit.parse_args(
                ["--data-dir", datadir, flag, output, "--format", fmt, "--mode", mode] + other))
        return check

    def compact_check(output, fmt, mode):
        compact.prepare(compact.parse_args(["--data-dir", datadir, "--output", output, "--mode", mode]),
                        now_ms=1_800_000_000_000)

    return [("export", ("delta", "parquet"), ("error", "overwrite", "append", "incremental"), export_check),
            ("lookup", ("parquet", "delta"), ("error", "overwrite", "append"), lookup_check),
            ("retention_audit --output", ("delta", "parquet", "csv", "json"), ("error", "overwrite", "append"),
             audit_check("--output")),
            ("retention_audit --segments", ("delta", "parquet", "csv", "json"), ("error", "overwrite", "append"),
             audit_check("--segments")),
            ("compact", ("delta",), ("auto", "full", "incremental"), compact_check)]


def test_every_job_refuses_writing_over_or_among_another_formats_data(datadir, tmp_path):
    for content in CONTENTS:
        _fill(tmp_path / content, content)
    before = {content: _snapshot(tmp_path / content) for content in CONTENTS}
    wrong = []
    for name, formats, modes, check in _jobs(datadir, tmp_path):
        for fmt in formats:
            for mode in modes:
                for content in CONTENTS:
                    output = str(tmp_path / content)
                    case = f"{name} --format {fmt} --mode {mode} onto {content}"
                    # compact writes only Delta, whatever its --mode (which says what it reads)
                    refused = _refused(fmt, content, "append" if name == "compact" else mode)
                    try:
                        check(output, fmt, mode)
                    except export.UsageError as exc:
                        if FORMAT_REFUSAL.search(str(exc)):
                            if not refused or output not in str(exc):  # the message names the folder
                                wrong.append(f"{case}: refused: {exc}")
                        elif refused:  # another check of the job (an append's columns...)
                            wrong.append(f"{case}: not refused for its format, but UsageError: {exc}")
                        continue
                    except Exception as exc:  # noqa: BLE001 - another check of the job (an existing table...)
                        if refused:
                            wrong.append(f"{case}: not refused for its format, but {type(exc).__name__}: {exc}")
                        continue
                    if refused:
                        wrong.append(f"{case}: not refused")
    assert not wrong, "\n".join(wrong)
    assert {content: _snapshot(tmp_path / content) for content in CONTENTS} == before


@pytest.mark.parametrize("content, says", [
    ("delta", "is a Delta table (it has a _delta_log): an overwrite with CSV files would delete it"),
    ("parquet", "holds Parquet files"),
    ("json", "holds JSON files"),
    ("unrelated", "holds files that are not CSV (notes.txt)")])
def test_retention_audit_csv_overwrite_is_refused_with_exit_2_in_one_line(datadir, tmp_path, capsys, content, says):
    """The reported case: --format csv --mode overwrite onto a Delta table's folder replaced it with CSV files
    (Spark's overwrite deleted the table's files, _delta_log with them). Refused before Spark starts: exit 2, one
    line naming the folder and what is in it, nothing changed."""
    folder = tmp_path / "out"
    _fill(folder, content)
    before = _snapshot(folder)
    code = retention_audit.main(["--data-dir", datadir, "--output", str(folder), "--format", "csv",
                                 "--mode", "overwrite"])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("retention_audit.py: error: UsageError: --format csv") and err.count("\n") == 1
    assert f"{folder} {says}" in err, err
    assert _snapshot(folder) == before


def test_the_lookup_and_the_export_refuse_in_one_line_too(datadir, tmp_path, capsys):
    folder = tmp_path / "out"
    _fill(folder, "csv")
    requests = tmp_path / "requests.csv"
    requests.write_text("topic,partition,time\nstate,0,-1\n")
    code = lookup.main(["--data-dir", datadir, "--input", str(requests), "--output", str(folder), "--mode",
                        "overwrite"])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("lookup.py: error: UsageError: --format parquet: ") and f"{folder} holds CSV" \
        in err and err.count("\n") == 1, err
    code = export.main(["--data-dir", datadir, "--output", str(folder), "--format", "delta", "--mode", "overwrite"])
    err = capsys.readouterr().err
    assert code == 2 and f"{folder} holds CSV files but no _delta_log" in err and err.count("\n") == 1, err
