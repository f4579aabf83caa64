"""What the ``columns`` read option saves in the Python API: a full read against projections, same segments.

Usage: python benchmarks/bench_columns.py [--size-mb 200] [--codecs none,lz4] [--repeat 3]

Generates one 16 KiB-batch segment per codec (``kafkaseg.testing.write_benchmark_segment``: 16-byte keys, 200-byte
values) and times ``kafkaseg.iter_batches`` over it, best of ``--repeat`` after a warm-up, on one core: every
column, ``offset,timestamp`` (no key or value copied), and ``value`` alone. CRCs are checked in every case, and the
projections' rows must equal the full read's columns. The page-cache read of the file (mmap + sum) is the machine's
limit for comparison. Informational: nothing here is a floor. (Spark's gain, where the option also keeps key and
value bytes out of the JVM, is measured by ``bench_spark.py``'s metadata query.)
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import best_of, format_table, machine, machine_line, scratch_dir  # noqa: E402

import numpy as np  # noqa: E402
import pyarrow as pa  # noqa: E402

import kafkaseg  # noqa: E402
from kafkaseg.testing import write_benchmark_segment  # noqa: E402

PROJECTIONS = (None, "offset,timestamp", "value")


def page_cache_read(path: Path) -> float:
    """Seconds to map the (cached) file and sum it as uint64: the read limit every reader pays."""
    import mmap

    def run():
        with open(path, "rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
            words = len(mapped) // 8
            return int(np.frombuffer(mapped, dtype=np.uint64, count=words).sum())

    return best_of(run, 3)[0]


def scan(path: Path, columns: str | None) -> pa.Table:
    options = {} if columns is None else {"columns": columns}
    return pa.Table.from_batches(list(kafkaseg.iter_batches(str(path), **options)))


def stream(path: Path, columns: str | None) -> int:
    """Rows of a read whose batches are dropped as they come (as a consumer of ``iter_batches`` does): what is
    timed, so the output buffers are reused rather than all held."""
    options = {} if columns is None else {"columns": columns}
    return sum(batch.num_rows for batch in kafkaseg.iter_batches(str(path), **options))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mb", type=int, default=200)
    parser.add_argument("--codecs", default="none,lz4")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    print(machine_line(machine()))
    rows = []
    with scratch_dir("kafkaseg-columns-") as work:
        for codec in args.codecs.split(","):
            folder = work / f"bench{codec}-0"
            write_benchmark_segment(folder, args.size_mb << 20, 16 * 1024, codec)
            log = next(folder.glob("*.log"))
            limit_s = page_cache_read(log)
            size = log.stat().st_size
            full = scan(folder, None)
            for columns in PROJECTIONS:
                table = scan(folder, columns)  # checked once, untimed
                assert table.equals(full.select(table.schema.names)), (codec, columns)
                del table
                seconds, count = best_of(lambda: stream(folder, columns), args.repeat)
                assert count == full.num_rows
                held_s, _ = best_of(lambda: scan(folder, columns).num_rows, args.repeat)
                rows.append([codec, columns or "every column", f"{seconds:.3f}", f"{count / seconds / 1e6:.2f}",
                             f"{size / seconds / 1e6:,.0f}", f"{limit_s / seconds:.2f}", f"{held_s:.3f}"])
            del full
            streamed_base, held_base = float(rows[-len(PROJECTIONS)][2]), float(rows[-len(PROJECTIONS)][6])
            for row in rows[-len(PROJECTIONS):]:
                row[6:6] = [f"{streamed_base / float(row[2]):.2f}"]
                row.append(f"{held_base / float(row[-1]):.2f}")
    print(f"\n16 KiB batches, {args.size_mb} MiB segments, iter_batches on one core, best of {args.repeat}:")
    print("Streamed: batches dropped as they come (iter_batches); held: every batch kept (read_arrow), which also pays")
    print("for the memory the output takes.")
    print(format_table(["codec", "columns", "streamed s", "M rec/s", "file MB/s", "of page-cache read",
                        "x every column", "held s", "x every column"], rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
