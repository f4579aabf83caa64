"""Discovery and planning of ``.log`` files given one by one (a glob, ``kafkaseg verify <files>``), against the same
partition given as its folder.

Usage: python benchmarks/bench_discover.py [--segments 250,1000,4000] [--json FILE]

Each size is one partition of N one-batch segments (written by :class:`kafkaseg.testing.PartitionWriter`), copied
by hard links into a folder that is not named ``<topic>-<partition>`` (files outside a partition's context take
another path). For each, :func:`kafkaseg.open_scan` (discovery and planning) is timed, best of three, on the
folder, on a glob of its ``.log`` files, and on the glob of the other folder. Verdict: a glob costs at most
:data:`FLOOR` times the folder (the same listing, once per folder, not once per file), at every size.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from _common import format_table, machine, machine_line, scratch_dir  # noqa: E402

import kafkaseg  # noqa: E402
from kafkaseg.testing import PartitionWriter, Record, build_batch_v2  # noqa: E402

FLOOR = 3.0


def generate(root: Path, segments: int) -> tuple[Path, Path]:
    partition = root / "t-0"
    writer = PartitionWriter(partition, segment_bytes=1)  # a segment per batch
    for i in range(segments):
        writer.append(build_batch_v2([Record(2 * i, 1_700_000_000_000 + i, b"k", b"v" * 20),
                                      Record(2 * i + 1, 1_700_000_000_001 + i, b"k", b"v" * 20)]))
    writer.close()
    plain = root / "copied-segments"
    plain.mkdir()
    for path in partition.iterdir():
        os.link(path, plain / path.name)
    return partition, plain


def best(paths, runs: int = 3) -> tuple[float, int]:
    times, slices = [], 0
    for _ in range(runs):
        started = time.perf_counter()
        scan = kafkaseg.open_scan(paths)
        times.append(time.perf_counter() - started)
        slices = len(scan.plan.slices)
    return min(times), slices


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--segments", default="250,1000,4000")
    parser.add_argument("--json")
    args = parser.parse_args()
    print(machine_line(machine()))
    rows, results, ok = [], [], True
    for n in (int(x) for x in args.segments.split(",")):
        with scratch_dir(f"discover-{n}") as root:
            partition, plain = generate(root, n)
            folder_s, folder_slices = best(str(partition))
            glob_s, glob_slices = best(str(partition / "*.log"))
            plain_s, plain_slices = best(str(plain / "*.log"))
            assert folder_slices == glob_slices == plain_slices == n, (folder_slices, glob_slices, plain_slices)
            ratio = max(glob_s, plain_s) / folder_s
            ok &= ratio <= FLOOR
            rows.append([str(n), f"{folder_s:.3f}", f"{glob_s:.3f}", f"{plain_s:.3f}", f"{ratio:.2f}",
                         "PASS" if ratio <= FLOOR else "FAIL"])
            results.append({"segments": n, "folder_s": folder_s, "glob_s": glob_s, "plain_glob_s": plain_s,
                            "ratio": ratio})
    print(format_table(["segments", "folder s", "glob of its .log files s", "glob, folder not <topic>-<p> s",
                        f"worst / folder (floor {FLOOR})", "verdict"], rows))
    if args.json:
        Path(args.json).write_text(json.dumps({"machine": machine(), "results": results}, indent=2))
    print("verdict:", "PASS" if ok else "FAIL", f"(a glob at most {FLOOR}x the folder at every size)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
