"""The benchmark scripts run end to end (``--quick``) and print their tables and verdict lines.

Performance is measured by the scripts, never asserted here: only exit status and output shape are checked.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "benchmarks"


def run(script: str, scratch: Path, *args: str) -> str:
    env = dict(os.environ)
    env["TMPDIR"] = str(scratch)  # the scripts generate segments under tempfile.gettempdir()
    env.pop("KAFKASEG_PURE", None)  # measure the compiled kernel (it falls back to the twin when not built)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH")) if p)
    proc = subprocess.run([sys.executable, str(BENCH / script), *args], capture_output=True, text=True, env=env,
                          timeout=120, check=False)
    assert proc.returncode == 0, f"{script} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


def test_bench_decode_quick(tmp_path):
    out_json = tmp_path / "decode.json"
    pytest.importorskip("aiokafka")
    out = run("bench_decode.py", tmp_path, "--quick", "--json", str(out_json))
    assert out.startswith("machine: nproc=")
    header = next(line for line in out.splitlines() if line.lstrip().startswith("codec"))
    for column in ("mmap-sum", "codec-raw", "kseg rec/s", "pread file", "aiokafka rec/s", "kafka-py rec/s",
                   "pure rec/s"):
        assert column in header
    rows = [line.split() for line in out.splitlines() if re.match(r"\s*(none|gzip|snappy|lz4|zstd)\s+\d+[KM]\s", line)]
    assert {(r[0], r[1]) for r in rows} == {(c, b) for c in ("none", "gzip", "snappy", "lz4", "zstd")
                                             for b in ("16K", "1M")}
    verdicts = [line for line in out.splitlines() if re.match(r"(PASS|FAIL)  ", line)]
    assert len(verdicts) == 10 * 3  # one codec floor and two client floors per segment
    data = json.loads(out_json.read_text())
    assert len(data["results"]) == 10 and len(data["floors"]) == 30
    for r in data["results"]:
        assert r["records"] > 0 and r["scan_records_per_s"] > 0 and r["mmap_sum_MBps"] > 0
        assert (r["codec"] == "none") == ("codec_raw_MBps" not in r)
    assert not list(tmp_path.glob("kafkaseg-*")), "generated segments were left behind"


def test_bench_memory_quick(tmp_path):
    pytest.importorskip("duckdb", reason="duckdb is not installed (part of the dev extra)")
    out_json = tmp_path / "memory.json"
    out = run("bench_memory.py", tmp_path, "--quick", "--json", str(out_json))
    assert "peak RSS MiB" in out
    verdicts = [line for line in out.splitlines() if re.match(r"(PASS|FAIL)  memory does not grow", line)]
    assert len(verdicts) == 4  # defaults, a small maxRecordsPerBatch, readMode=pread, DuckDB over a Scan
    data = json.loads(out_json.read_text())
    assert len(data["results"]) == 8
    for r in data["results"]:
        assert r["rows"] > 0 and r["peak_rss"] >= r["baseline_rss"] > 0
    assert not list(tmp_path.glob("kafkaseg-*")), "generated segments were left behind"


def test_bench_s3_quick(tmp_path):
    pytest.importorskip("moto.server", reason="moto[server] is not installed (part of the dev extra)")
    out_json = tmp_path / "s3.json"
    out = run("bench_s3.py", tmp_path, "--mib", "3", "--latency-ms", "0", "--json", str(out_json))
    assert out.splitlines()[0].split()[:2] == ["operation", "latency"]
    rows = json.loads(out_json.read_text())
    assert {r["operation"] for r in rows} >= {"plan, sample dir", "read, big partition"}
    assert all(r["GET"] > 0 and r["HEAD"] > 0 and r["other"] == 0 for r in rows)  # reads only: no PUT or DELETE


@pytest.mark.spark
def test_bench_export_quick(tmp_path):
    pytest.importorskip("pyspark")
    out = run("bench_export.py", tmp_path, "--records", "20000", "--repeat", "1")
    assert "20,000 records" in out and re.search(r"export / count: \d+\.\d\d", out)
    assert not list(tmp_path.glob("kafkaseg-bench-export-*")), "the generated data dir was left behind"


def test_bench_stream_quick(tmp_path):
    out = run("bench_stream.py", tmp_path, "--quick")
    assert out.startswith("machine: nproc=")
    header = next(line for line in out.splitlines() if line.lstrip().startswith("partitions"))
    for column in ("first latest ms", "idle latest ms", "rate-limited ms", "plan ms", "scandir ms"):
        assert column in header
    row = next(line.split() for line in out.splitlines() if re.match(r"\s*20\s+\d", line))
    assert int(row[5]) > 0  # slices planned


def test_bench_consume_quick(tmp_path):
    out = run("bench_consume.py", tmp_path, "--quick")
    rows = [line for line in out.splitlines() if "consume:" in line]
    assert len(rows) == 3 and all(float(r.split()[-3]) > 0 for r in rows)  # M rec/s
    out = run("bench_consume.py", tmp_path, "--partitions", "150", "--repeat", "1")
    rows = [line for line in out.splitlines() if "first record" in line]
    assert len(rows) == 4 and all(int(r.split()[-3]) >= 1 for r in rows)  # log dir listings


def test_bench_columns_quick(tmp_path):
    out = run("bench_columns.py", tmp_path, "--size-mb", "4", "--codecs", "none", "--repeat", "1")
    assert "offset,timestamp" in out and "every column" in out


def test_bench_plan_quick(tmp_path):
    out_json = tmp_path / "plan.json"
    out = run("bench_plan.py", tmp_path, "--quick", "--json", str(out_json))
    assert "working MiB" in out
    verdicts = [line for line in out.splitlines() if re.match(r"(PASS|FAIL)  planning memory is bounded", line)]
    assert len(verdicts) == 8  # two segment counts, four cases
    data = json.loads(out_json.read_text())
    assert len(data["results"]) == 8 and all(r["slices"] > 0 and r["peak_bytes"] > 0 for r in data["results"])
    assert not list(tmp_path.glob("kafkaseg-*")), "generated data dirs were left behind"


def test_bench_tiered_quick(tmp_path):
    out = run("bench_tiered.py", tmp_path, "--size-mb", "4", "--chunk-mib", "1", "--repeat", "1")
    assert "compressed copy" in out and "compressed, encrypted copy" in out and "of raw undo" in out


def test_bench_discover_quick(tmp_path):
    out_json = tmp_path / "discover.json"
    out = run("bench_discover.py", tmp_path, "--segments", "20", "--json", str(out_json))
    assert "glob of its .log files" in out
    data = json.loads(out_json.read_text())
    assert [r["segments"] for r in data["results"]] == [20] and all(r["folder_s"] > 0 for r in data["results"])
    assert not list(tmp_path.glob("discover-*")), "generated data dirs were left behind"


def test_bench_verify_quick(tmp_path):
    out = run("bench_verify.py", tmp_path, "--quick", "--codecs", "none,lz4", "--json", str(tmp_path / "v.json"))
    rows = [line.split() for line in out.splitlines() if re.match(r"\s*v[012]\s+(none|lz4)\s+\d+\s", line)]
    assert {(r[0], r[1], r[2]) for r in rows} == {(f"v{m}", c, n) for m in "21" for c in ("none", "lz4")
                                                  for n in ("1", "10")}
    assert all(float(r[8]) > 0 and float(r[10]) > 0 for r in rows)  # verify s, / read_arrow
    assert len(json.loads((tmp_path / "v.json").read_text())["results"]) == 8
    assert not list(tmp_path.glob("kafkaseg-*")), "generated partitions were left behind"


def test_bench_dump_quick(tmp_path):
    out = run("bench_dump.py", tmp_path, "--quick")
    rows = [line for line in out.splitlines() if line.strip().startswith("dump --")]
    assert len(rows) == 6 and all(float(r.split()[-3]) > 0 for r in rows)  # M rec/s, both paths of 3 runs
    out = run("bench_dump.py", tmp_path, "--quick", "--json")
    rows = [line for line in out.splitlines() if line.strip().startswith("dump --json")]
    assert len(rows) == 7 and all(float(r.split()[-3]) > 0 for r in rows)  # and batches only


def test_bench_headers_quick(tmp_path):
    out = run("bench_headers.py", tmp_path, "--quick")
    assert out.startswith("machine: nproc=")
    rows = [line.split() for line in out.splitlines() if re.match(r"\s*v[12]\s", line)]
    assert {(row[0], row[1]) for row in rows} == {(f"v{m}", walk) for m in (1, 2)
                                                   for walk in ("chunks", "iter_headers", "batch_table", "rebuild")}


def test_bench_tools_quick(tmp_path):
    out_json = tmp_path / "tools.json"
    out = run("bench_tools.py", tmp_path, "--quick", "--json", str(out_json))
    assert out.startswith("machine: nproc=")
    data = json.loads(out_json.read_text())
    assert set(data["facts"]) == {"small", "big"} and data["baselines"] == {}
    for topic in ("small", "big"):
        for command in ("describe", "offsets -1", "offsets -2", "offsets -3", "offsets --time mid",
                        "locate --offset mid", "locate --time mid", "rolled_cut_of each"):
            assert data["this"][f"{topic}: {command}"] > 0 and f"{topic}: {command}" in out
    assert data["this"]["small: verify"] > 0
    assert not list(tmp_path.glob("kafkaseg-*")), "generated segments were left behind"
