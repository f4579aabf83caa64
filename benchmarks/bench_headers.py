"""The segment header walks with and without the compiled header walk (``kafkaseg.wire.walk``), in one process.

Usage: python benchmarks/bench_headers.py [--batches 100000] [--value-size 300] [--repeat 5] [--quick]

Writes one segment file of ``--batches`` single-record batches per format (v2 uncompressed, v1 uncompressed: a
legacy record is an entry of its own) and times, best of ``--repeat``, over the cached file:

  chunks        ``SegmentReader.chunks`` (8 MiB chunks cut at whole batches: what verify and a read walk);
  iter_headers  every ``BatchHeader`` of ``SegmentReader.iter_headers`` (64 KiB blocks);
  batch_table   ``batch_table`` (the four int64 columns index checks use);
  rebuild       ``rebuild_indexes`` (what a lookup pays for a missing or insane ``.index``);

each with the walk in Python only (``read_header`` per batch, as before the compiled walk), with the compiled walk,
and with its pure twin (``KAFKASEG_PURE=1``'s).
"""

from __future__ import annotations

import argparse
import random
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import best_of, format_table, machine, machine_line, scratch_dir  # noqa: E402
import kafkaseg.storage.segment as segment  # noqa: E402
from kafkaseg.storage.indexes import rebuild_indexes  # noqa: E402
from kafkaseg.testing.writer import Record, build_batch_v2, build_legacy_entries  # noqa: E402
from kafkaseg.wire import walk  # noqa: E402


def write_segment(path: Path, magic: int, batches: int, value_size: int) -> None:
    rng = random.Random(1)
    with open(path, "wb") as out:
        for i in range(batches):
            record = [Record(i, 1_700_000_000_000 + i, None, rng.randbytes(value_size))]
            out.write(build_batch_v2(record).data if magic == 2 else build_legacy_entries(record, magic)[0].data)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, default=100_000)
    parser.add_argument("--value-size", type=int, default=300)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--quick", action="store_true", help="2,000 batches, one run (smoke test)")
    args = parser.parse_args()
    if args.quick:
        args.batches, args.repeat = 2_000, 1
    print(machine_line(machine()))
    kernels = [("python", None), (walk.kernel.IMPLEMENTATION, walk.kernel)]
    if walk.kernel is not walk.pure_kernel:
        kernels.append(("pure twin", walk.pure_kernel))
    rows = []
    with scratch_dir("bench-headers") as root:
        for magic in (2, 1):
            path = root / f"v{magic}.log"
            write_segment(path, magic, args.batches, args.value_size)

            def chunks():
                with segment.SegmentReader(str(path)) as reader:
                    return sum(len(buf) for _, buf in reader.chunks(0))

            def headers():
                with segment.SegmentReader(str(path)) as reader:
                    return sum(1 for _ in reader.iter_headers(0))

            def table():
                with segment.SegmentReader(str(path)) as reader:
                    return len(segment.batch_table(reader))

            def rebuild():
                with segment.SegmentReader(str(path)) as reader:
                    return len(rebuild_indexes(reader, 0)[0])

            for name, fn in (("chunks", chunks), ("iter_headers", headers), ("batch_table", table),
                             ("rebuild", rebuild)):
                times = {}
                for label, kernel in kernels:
                    segment._FAST_WALK = kernel
                    times[label], _ = best_of(fn, args.repeat)
                base = times["python"]
                rows.append([f"v{magic}", name, f"{args.batches:,}"]
                            + [f"{times[label] * 1e3:.1f}" for label, _ in kernels]
                            + [f"{base / times[kernels[1][0]]:.1f}",
                               f"{times[kernels[1][0]] / args.batches * 1e9:.0f}"])
    print(format_table(["format", "walk", "batches"] + [f"{label} ms" for label, _ in kernels]
                       + [f"python / {kernels[1][0]}", f"{kernels[1][0]} ns/batch"], rows))


if __name__ == "__main__":
    main()
