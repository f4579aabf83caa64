"""What ``kafkaseg dump --deep-iteration`` costs per record, against the library decoding the same segment.

Usage: python benchmarks/bench_dump.py [--size-mb 50] [--batch-kb 16] [--codec lz4] [--repeat 3] [--no-slow] [--quick]
                                      [--json]

Generates one segment (``kafkaseg.testing.write_benchmark_segment``: 200-byte values, 16-byte keys), then times,
best of ``--repeat``, in this process, one core: ``kafkaseg.iter_batches`` of its folder (default options: the
library's decode rate), and ``dump_files`` (what ``kafkaseg dump --files <seg>.log`` runs) printing to a UTF-8 text
sink that counts bytes, with ``--deep-iteration``, ``--print-data-log``, ``--print-data-log
--skip-record-metadata``, and batches only. Each deep dump runs the column-wise record lines (the default) and,
unless ``--no-slow``, the per-record path they replace (``dump._COLUMNAR = False``, what the tool did before); the
``/ decode`` column is the dump's time over the decode's. ``--json`` runs the same dumps with ``--json`` (one JSON
object per batch, its records in it). Nothing here is a floor.
"""

from __future__ import annotations

import argparse
import dataclasses
import io
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import NullSink, best_of, format_table, machine, machine_line, scratch_dir  # noqa: E402
import kafkaseg  # noqa: E402
from kafkaseg.cli import dump  # noqa: E402
from kafkaseg.testing import write_benchmark_segment  # noqa: E402

RUNS = {
    "--deep-iteration": dump.DumpOptions(deep_iteration=True),
    "--print-data-log": dump.DumpOptions(print_data_log=True),
    "--print-data-log --skip-record-metadata": dump.DumpOptions(print_data_log=True, skip_record_metadata=True),
    "(batches only)": dump.DumpOptions(),
}


def _dump(log: str, options: dump.DumpOptions) -> int:
    sink = NullSink()
    out = io.TextIOWrapper(io.BufferedWriter(sink, 1 << 16), encoding="utf-8", newline="\n")
    report = dump.dump_files([log], options, out=out, err=io.StringIO())
    out.flush()
    if report.errors or report.invalid_batches:
        raise RuntimeError(f"dump reported problems: {report.errors or report.invalid_batches}")
    return sink.bytes


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size-mb", type=int, default=50)
    parser.add_argument("--batch-kb", type=int, default=16)
    parser.add_argument("--codec", default="lz4")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--no-slow", action="store_true", help="skip the per-record path (slow)")
    parser.add_argument("--quick", action="store_true", help="a 2 MiB segment, one run (smoke test)")
    parser.add_argument("--json", action="store_true", help="dump with --json")
    args = parser.parse_args(argv)
    size_mb, repeat = (2, 1) if args.quick else (args.size_mb, args.repeat)
    print(machine_line(machine()))
    with scratch_dir("kafkaseg-bench-dump-") as scratch:
        seg = write_benchmark_segment(scratch / "t-0", size_mb << 20, batch_bytes=args.batch_kb << 10,
                                      codec=args.codec)
        log = str(seg.log_path)
        print(f"segment: {size_mb} MiB, {args.codec}, {args.batch_kb} KiB batches: {seg.batches:,} batches, "
              f"{seg.records:,} records")

        def decode_all() -> int:
            return sum(batch.num_rows for batch in kafkaseg.iter_batches(str(seg.log_path.parent)))

        decode_s, rows = best_of(decode_all, repeat)
        if rows != seg.records:
            raise RuntimeError(f"iter_batches returned {rows} records, the segment has {seg.records}")
        table = [["decode (iter_batches)", "", f"{decode_s:.2f}", f"{seg.records / decode_s / 1e6:.2f}", "1.00", ""]]
        for flags, options in RUNS.items():
            if args.json:
                flags, options = f"--json {flags}", dataclasses.replace(options, json=True)
            for columnar in (True, False) if options.deep else (True,):
                if not columnar and args.no_slow:
                    continue
                dump._COLUMNAR = columnar
                try:
                    seconds, written = best_of(lambda: _dump(log, options), repeat, warmup=not args.quick)
                finally:
                    dump._COLUMNAR = True
                path = ("column-wise" if columnar else "per record") if options.deep else ""
                table.append([f"dump {flags}", path, f"{seconds:.2f}", f"{seg.records / seconds / 1e6:.2f}",
                              f"{seconds / decode_s:.1f}", f"{written / 1e6:.0f}"])
    print(format_table(["run", "record lines", "best s", "M rec/s", "/ decode", "output MB"], table))
    return 0


if __name__ == "__main__":
    sys.exit(main())
