"""Shared fixtures. The Spark session is created lazily, once, only by tests that ask for it."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
# ../shared beside the checkout; KAFKASEG_SHARED points elsewhere (a git worktree, a checkout in another place)
CORPUS = Path(os.environ.get("KAFKASEG_SHARED", ROOT.parent / "shared")) / "corpus"


@pytest.fixture(scope="session")
def corpus_dir() -> Path:
    """``../shared/corpus`` (real broker and client bytes); skips the test when the checkout has no ../shared."""
    if not (CORPUS / "MANIFEST.tsv").exists():
        pytest.skip(f"conformance corpus not found at {CORPUS} (it lives in ../shared beside the project checkout, "
                    "or set KAFKASEG_SHARED)")
    return CORPUS


@pytest.fixture
def segment_reads(monkeypatch) -> list[int]:
    """The length of each ``SegmentReader.read_at`` call the test makes, in order."""
    from kafkaseg.storage.segment import SegmentReader

    reads: list[int] = []
    read_at = SegmentReader.read_at

    def counted(self, position, length):
        reads.append(length)
        return read_at(self, position, length)

    monkeypatch.setattr(SegmentReader, "read_at", counted)
    return reads


@pytest.fixture(params=["compiled", "pure"])
def kernel(request, monkeypatch):
    """Run a scan test with each decoder twin (the scan looks the kernel up at read time)."""
    import kafkaseg.decode as decode

    if request.param == "pure":
        monkeypatch.setattr(decode, "decode", decode.pure_kernel.decode)
    elif decode.IMPLEMENTATION != "cython":
        pytest.skip("compiled kernel not built")
    return request.param


@pytest.fixture(scope="session")
def spark(tmp_path_factory):
    """One local[2] SparkSession for the whole run, with Python filter pushdown on (as conf/spark-defaults.conf).
    Scan reports go to this run's own folder (the workers inherit the variable), so another process's Spark scans
    on the host cannot become this run's ``last_plan_report()``."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    os.environ["KAFKASEG_SPARK_REPORT_DIR"] = str(tmp_path_factory.mktemp("spark-reports"))
    from pyspark.sql import SparkSession

    session = (
        SparkSession.builder.master("local[2]")
        .appName("kafkaseg-tests")
        .config("spark.sql.python.filterPushdown.enabled", "true")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    yield session
    session.stop()
