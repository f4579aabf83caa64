"""What the export job (``jobs/export.py``) costs end to end, against reading the same data alone.

Usage: python benchmarks/bench_export.py [--records 1000000] [--repeat 4] [--codec lz4]

Generates a data dir (one topic, 4 partitions, 200-byte values, 32 MiB segments), then in one local[2] Spark
session: the time of ``count()`` over the kafkaseg source (every record decoded: PySpark's Python sources get no
column pruning) and the time of the export job's ``run`` into a fresh Delta table, each the best of ``--repeat``
warm runs (the first run of each is also printed: it starts the Python workers). The ratio says how much of an
export is the write and commit rather than the read. Nothing here is a floor.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import spark_environment  # noqa: E402
from kafkaseg.testing import TopicSpec, write_data_dir  # noqa: E402


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=4)
    parser.add_argument("--codec", default="lz4")
    args = parser.parse_args(argv)
    spark_environment()  # Spark's Python workers need this interpreter and checkout
    from pyspark.sql import SparkSession

    import jobs.export as export
    from kafkaseg.spark import plan_reports, register

    with tempfile.TemporaryDirectory(prefix="kafkaseg-bench-export-") as tmp:
        data = Path(tmp) / "data"
        write_data_dir(data, [TopicSpec("big", partitions=4, records_per_partition=args.records // 4,
                                        records_per_batch=200, value_size=200, segment_bytes=32 << 20,
                                        codec=args.codec)])
        size = sum(f.stat().st_size for f in data.rglob("*.log"))
        os.environ["KAFKASEG_SPARK_REPORT_DIR"] = str(Path(tmp) / "reports")  # this run's scans only
        spark = (SparkSession.builder.master("local[2]").config("spark.sql.python.filterPushdown.enabled", "true")
                 .config("spark.sql.session.timeZone", "UTC").config("spark.ui.showConsoleProgress", "false")
                 .getOrCreate())
        spark.sparkContext.setLogLevel("ERROR")
        register(spark)
        try:
            counts, exports = [], []
            for _ in range(args.repeat):
                started = time.perf_counter()
                n = spark.read.format("kafkaseg").load(str(data)).count()
                counts.append(time.perf_counter() - started)
                assert n == args.records // 4 * 4, n
            read_bytes = []
            for i in range(args.repeat):
                output = Path(tmp) / f"out{i}"
                parsed = export.parse_args(["--data-dir", str(data), "--output", str(output)])
                prepared = export.prepare(parsed)
                since = time.time()
                started = time.perf_counter()
                with contextlib.redirect_stdout(io.StringIO()):
                    result = export.run(spark, parsed, prepared)
                exports.append(time.perf_counter() - started)
                read_bytes.append(sum(r.read_metrics()["bytes_read"] for r in plan_reports() if r.created >= since))
                assert result["records"] == n, result["records"]
                shutil.rmtree(output)
        finally:
            spark.stop()
    count_s, export_s = min(counts[1:] or counts), min(exports[1:] or exports)
    print(f"{n:,} records, {size / 1e6:,.0f} MB of {args.codec} segments, local[2]")
    print(f"count():     best {count_s:6.2f} s  (first {counts[0]:.2f} s)")
    print(f"export run:  best {export_s:6.2f} s  (first {exports[0]:.2f} s)  {n / export_s / 1e6:.2f} M rec/s")
    print(f"export / count: {export_s / count_s:.2f}")
    print(f"segment bytes the export read: {max(read_bytes) / 1e6:,.0f} MB ({max(read_bytes) / size:.2f}x the data)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
