"""Helpers shared by the benchmark scripts: machine description, best-of-N timing, segment generation in a
temporary directory, batch walking and plain-text tables. Benchmarks import kafkaseg from this checkout."""

from __future__ import annotations

import contextlib
import io
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable, Iterator

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from kafkaseg.wire.batch import BatchHeader, read_header  # noqa: E402

MB = 1_000_000  # rates are decimal MB/s (what `dd` and most papers print); sizes given on the command line are MiB
MiB = 1 << 20

ALL_CODECS = ("none", "gzip", "snappy", "lz4", "zstd")


def spark_environment() -> None:
    """What a benchmark's local SparkSession needs before it starts: this interpreter for the Python workers, and
    this checkout on their PYTHONPATH (they import kafkaseg); kafkaseg's INFO scan lines off."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    os.environ.setdefault("KAFKASEG_SPARK_LOG_LEVEL", "WARNING")
    root = str(ROOT)
    os.environ["PYTHONPATH"] = root + (os.pathsep + os.environ["PYTHONPATH"] if os.environ.get("PYTHONPATH") else "")


def parse_size(text: str) -> int:
    """'16k', '1m', '16384' -> bytes (binary units)."""
    text = text.strip().lower()
    units = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
    if text and text[-1] in units:
        return int(float(text[:-1]) * units[text[-1]])
    return int(text)


def size_label(n: int) -> str:
    for unit, div in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if n >= div and n % div == 0:
            return f"{n // div}{unit}"
    return str(n)


def machine() -> dict:
    """nproc, CPU model, Python and library versions: printed at the top of every run (nothing is pinned)."""
    model, mhz = platform.machine(), None
    with contextlib.suppress(OSError):
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, _, value = line.partition(":")
                if key.strip() == "model name" and model == platform.machine():
                    model = value.strip()
                elif key.strip() == "cpu MHz" and mhz is None:
                    mhz = float(value)
    mem = None
    with contextlib.suppress(OSError, ValueError, IndexError):
        with open("/proc/meminfo") as f:
            mem = int(f.readline().split()[1]) * 1024
    return {"nproc": os.cpu_count(), "affinity": len(os.sched_getaffinity(0)), "cpu": model, "cpu_mhz": mhz,
            "mem_bytes": mem, "python": sys.version.split()[0], "platform": platform.platform()}


def machine_line(info: dict) -> str:
    mem = f", {info['mem_bytes'] / (1 << 30):.1f} GiB RAM" if info.get("mem_bytes") else ""
    mhz = f" @ {info['cpu_mhz']:.0f} MHz" if info.get("cpu_mhz") else ""
    return (f"machine: nproc={info['nproc']} (affinity {info['affinity']}), CPU {info['cpu']}{mhz}{mem}; "
            f"Python {info['python']}; {info['platform']}")


def best_of(fn: Callable[[], object], runs: int, *, warmup: bool = True) -> tuple[float, object]:
    """(best wall time in seconds of ``runs`` calls, the last call's return value); one untimed warm-up call."""
    result = fn() if warmup else None
    best = float("inf")
    for _ in range(max(1, runs)):
        start = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - start)
    return best, result


@contextlib.contextmanager
def scratch_dir(prefix: str) -> Iterator[Path]:
    """A directory under /tmp (or $TMPDIR) removed afterwards, even on error."""
    path = Path(tempfile.mkdtemp(prefix=prefix))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def walk_batches(buf, limit: int | None = None) -> Iterator[BatchHeader]:
    """Headers of the whole batches in ``buf`` (stopping before one that would end past ``limit``)."""
    end = len(buf) if limit is None else min(limit, len(buf))
    position = 0
    while position + 17 <= end:
        header = read_header(buf, position)
        if header.end > end:
            return
        yield header
        position = header.end


def v2_payload_start(header: BatchHeader) -> int:
    """Where a v2 batch's records (compressed or not) start: after the 61-byte header."""
    return header.position + 61


def format_table(headers: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]
    line = "  ".join(h.rjust(w) for h, w in zip(headers, widths))
    out = [line, "-" * len(line)]
    for row in rows:
        out.append("  ".join(c.rjust(w) for c, w in zip(row, widths)))
    return "\n".join(out)


def fmt_rate(value: float | None, digits: int = 0) -> str:
    if value is None:
        return "-"
    return f"{value:,.{digits}f}"


def fmt_ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


class NullSink(io.RawIOBase):
    """A sink that counts bytes (so output is produced but costs no I/O)."""

    def __init__(self):
        self.bytes = 0

    def writable(self) -> bool:
        return True

    def write(self, data) -> int:
        self.bytes += len(data)
        return len(data)
