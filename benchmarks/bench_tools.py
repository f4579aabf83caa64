"""What ``kafkaseg describe``, ``offsets`` (-1, -2, -3, a time), ``locate`` and ``verify`` cost on a partition of many
segments, in this checkout and (``--baseline TREE``) in another one, with the ratios.

Usage: python benchmarks/bench_tools.py [--small 1000] [--big 100] [--big-mib 64] [--compacted 0] [--runs 5]
                                       [--rounds 3] [--clock cpu|wall] [--no-verify] [--quick]
                                       [--baseline /path/to/other/checkout ...] [--json FILE]

Two partitions are written once (:class:`kafkaseg.testing.PartitionWriter`, a 4 KiB index interval, closed as after a
clean shutdown: the recovery point is the log end, so every rolled segment is below it, where the checks for a
rolled segment cut short look): ``small-0``, ``--small`` segments of ~16 KiB (10 batches of 4 records), and
``big-0``, ``--big`` segments of ``--big-mib`` MiB (batches of 16 records of 1 KiB values). Each command is run in a
fresh interpreter per checkout (``kafkaseg.cli.main.main(argv)`` in-process, stdout and stderr discarded: no
interpreter start-up or import in the times), best of ``--runs`` after one warm-up (page cache warm), and must
exit 0; the checkouts alternate for ``--rounds`` rounds and each time is the best over all of them (a machine
busy with other work for a while slows both). Times are the process's CPU time by default (``--clock cpu``: the
files are in the page cache after the warm-up, so it is the work done; a shared machine's wall times vary by 2x).
``verify`` (deep: every batch's CRC) is timed on the small partition only. ``<partition>: rolled_cut_of each``
(in a checkout that has it): ``layout.rolled_cut_of`` of every rolled segment after discovery, the checks alone.
``compacted: read_arrow`` (with ``--compacted``): a strict read of that partition (``kafkaseg.read_arrow``), whose
check of each gap probes the segment's index files (``scan._judge_rolled_cut``).

The rolled-cut checks the tools gained (``layout.rolled_cut_of``) cost per rolled segment below the recovery
point (``describe``) or below the answer (``offsets -3``, ``offsets --time``): ``--baseline`` at the commit before
them shows what they add. A ratio is this checkout's time over the baseline's.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import ROOT, format_table, machine, machine_line, scratch_dir  # noqa: E402
from kafkaseg.testing import PartitionWriter, Record, build_batch_v2  # noqa: E402
from kafkaseg.testing.partition import write_offset_checkpoint  # noqa: E402

T0 = 1_700_000_000_000


def write_partition(directory: Path, segment_bytes: int, segments: int, records_per_batch: int,
                    value_size: int, compacted: bool = False) -> tuple[int, int, int]:
    """Write ``segments`` segments of ``segment_bytes``; (log end offset, recovery point, last timestamp).
    ``compacted``: as the cleaner leaves them, each rolled segment's last batch removed (a gap of its offsets
    before the next base, that no index entry names)."""
    writer = PartitionWriter(directory, segment_bytes=segment_bytes, write_snapshots=False)
    offset, value = 0, b"v" * value_size
    while True:
        batch = build_batch_v2([Record(offset + j, T0 + offset + j, b"k", value) for j in range(records_per_batch)])
        if writer.active.size + len(batch.data) > segment_bytes and len(writer._closed_segments) + 1 >= segments:
            break
        if compacted and writer.active.size + 2 * len(batch.data) > segment_bytes and writer.active.size:
            if len(writer._closed_segments) + 1 >= segments:
                break
            writer.roll(offset + records_per_batch)  # (this batch is the one the cleaner removed)
        else:
            writer.append(batch)
        offset += records_per_batch
    log = writer.close()
    return log.log_end_offset, log.recovery_point, T0 + offset - 1


def generate(root: Path, small: int, big: int, big_mib: int, compacted: int = 0) -> dict:
    root.mkdir(parents=True, exist_ok=True)
    facts, ends, points = {}, {}, {}
    for name, seg_bytes, count, per_batch, value in (("small", 16 << 10, small, 4, 300),
                                                     ("big", big_mib << 20, big, 16, 1000),
                                                     ("compacted", 16 << 10, compacted, 4, 300)):
        if not count:
            continue
        leo, rp, last_ts = write_partition(root / f"{name}-0", seg_bytes, count, per_batch, value,
                                           compacted=name == "compacted")
        ends[(name, 0)], points[(name, 0)] = leo, rp
        facts[name] = {"segments": count, "log_end": leo, "last_ts": last_ts}
    write_offset_checkpoint(root / "replication-offset-checkpoint", ends)
    write_offset_checkpoint(root / "recovery-point-offset-checkpoint", points)
    write_offset_checkpoint(root / "log-start-offset-checkpoint", {})
    write_offset_checkpoint(root / "cleaner-offset-checkpoint",
                            {("compacted", 0): ends[("compacted", 0)]} if ("compacted", 0) in ends else {})
    return facts


def commands(root: Path, facts: dict, with_verify: bool) -> list[tuple[str, list[str]]]:
    out = []
    for topic, f in facts.items():
        d = str(root / f"{topic}-0")
        off = ["offsets", "--data-dir", str(root), "--topic", f"^{topic}$"]
        middle_offset, middle_time = f["log_end"] // 2, T0 + f["log_end"] // 2
        if topic == "compacted":  # (its gaps: describe, offsets -3 and verify)
            out += [(f"{topic}: describe", ["describe", d]), (f"{topic}: offsets -3", off + ["--time", "-3"])]
            if with_verify:
                out.append((f"{topic}: verify", ["verify", "--no-progress", d]))
            continue
        out += [(f"{topic}: describe", ["describe", d]),
                (f"{topic}: offsets -1", off + ["--time", "-1"]),
                (f"{topic}: offsets -2", off + ["--time", "-2"]),
                (f"{topic}: offsets -3", off + ["--time", "-3"]),
                (f"{topic}: offsets --time mid", off + ["--time", str(middle_time)]),
                (f"{topic}: locate --offset mid", ["locate", "--data-dir", str(root), "--topic", topic,
                                                   "--partition", "0", "--offset", str(middle_offset)]),
                (f"{topic}: locate --time mid", ["locate", "--data-dir", str(root), "--topic", topic,
                                                 "--partition", "0", "--time", str(middle_time)])]
        if with_verify and topic == "small":
            out.append((f"{topic}: verify", ["verify", "--no-progress", d]))
    return out


# run in a fresh interpreter with the checkout under test first on sys.path
HARNESS = r"""
import contextlib, io, json, os, sys, time
sys.path.insert(0, sys.argv[1])
from kafkaseg.cli.main import main
cmds, runs = json.loads(sys.argv[2]), int(sys.argv[3])
clock = time.process_time if sys.argv[5] == "cpu" else time.perf_counter
out = {}
for label, argv in cmds:
    best = float("inf")
    for i in range(runs + 1):
        sink = io.StringIO()
        start = clock()
        with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
            rc = main(argv)
        took = clock() - start
        if rc:
            raise SystemExit(f"{label}: exit {rc}: {sink.getvalue()[-2000:]}")
        if i:
            best = min(best, took)
    out[label] = best
# the rolled-cut checks alone (what describe and offsets -3 add): rolled_cut_of of every rolled segment
try:
    from inspect import signature

    from kafkaseg.storage.layout import discover, partition_log_end_offset, rolled_cut_of
except ImportError:
    rolled_cut_of = None
for folder in (json.loads(sys.argv[4]) if rolled_cut_of is not None else []):
    best = float("inf")
    for i in range(runs + 1):
        (pdir,) = discover(folder)
        # (a checkout from before rolled_cut_of lost its log_end parameter takes it)
        more = {"log_end": partition_log_end_offset(pdir)} if "log_end" in signature(rolled_cut_of).parameters else {}
        start = clock()
        cuts = [rolled_cut_of(pdir, j, **more) for j in range(len(pdir.segments) - 1)]
        assert not any(cuts)
        if i:
            best = min(best, clock() - start)
    out[os.path.basename(folder).rsplit("-", 1)[0] + ": rolled_cut_of each"] = best
# a strict read of the partition with a compaction gap after each rolled segment (--compacted): each gap's
# segment's .index and .timeindex last entries probed (scan._judge_rolled_cut)
import kafkaseg
for folder in json.loads(sys.argv[4]):
    if os.path.basename(folder) != "compacted-0":
        continue
    best = float("inf")
    for i in range(runs + 1):
        start = clock()
        kafkaseg.read_arrow(folder)
        if i:
            best = min(best, clock() - start)
    out["compacted: read_arrow"] = best
print(json.dumps(out))
"""


def time_tree(tree: Path, cmds, runs: int, folders: list[str], clock: str) -> dict:
    env = dict(os.environ, PYTHONPATH=str(tree))
    done = subprocess.run([sys.executable, "-c", HARNESS, str(tree), json.dumps(cmds), str(runs),
                           json.dumps(folders), clock], env=env, check=True, capture_output=True, text=True,
                          cwd=str(tree))
    return json.loads(done.stdout.strip().splitlines()[-1])


def best_over(rounds: list[dict]) -> dict:
    return {label: min(r[label] for r in rounds) for label in rounds[0]}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", type=int, default=1000, help="segments of ~16 KiB (0: none)")
    parser.add_argument("--big", type=int, default=100, help="segments of --big-mib MiB (0: none)")
    parser.add_argument("--big-mib", type=int, default=64)
    parser.add_argument("--compacted", type=int, default=0,
                        help="segments of ~16 KiB below the cleaner checkpoint, each with a compaction gap after its "
                             "last batch (0: none)")
    parser.add_argument("--runs", type=int, default=5, help="timed runs of each command per round")
    parser.add_argument("--rounds", type=int, default=3, help="rounds, alternating the checkouts; best over all")
    parser.add_argument("--clock", choices=("cpu", "wall"), default="cpu",
                        help="cpu (default): the process's CPU time (time.process_time), what a machine busy with "
                             "other work disturbs least; wall: time.perf_counter")
    parser.add_argument("--no-verify", action="store_true")
    parser.add_argument("--baseline", action="append", default=[],
                        help="another kafkaseg checkout (its compiled .so files in place) to compare (repeatable)")
    parser.add_argument("--quick", action="store_true", help="50 small segments, 2 of 2 MiB, one run and round")
    parser.add_argument("--json")
    args = parser.parse_args(argv)
    if args.quick:
        args.small, args.big, args.big_mib, args.runs, args.rounds = 50, 2, 2, 1, 1
    print(machine_line(machine()))
    with scratch_dir("kafkaseg-bench-tools-") as tmp:
        facts = generate(tmp / "logs", args.small, args.big, args.big_mib, args.compacted)
        for topic, f in facts.items():
            print(f"{topic}-0: {f['segments']} segments, log end {f['log_end']}")
        cmds = commands(tmp / "logs", facts, not args.no_verify)
        folders = [str(tmp / "logs" / f"{topic}-0") for topic in facts]
        trees = [ROOT] + [Path(b) for b in args.baseline]
        rounds: list[list[dict]] = [[] for _ in trees]
        for _ in range(args.rounds):  # (alternating, so that a busy spell on the machine falls on each)
            for tree, got in zip(trees, rounds):
                got.append(time_tree(tree, cmds, args.runs, folders, args.clock))
        now, *bases = [best_over(got) for got in rounds]
    rows = []
    for label in now:
        row = [label, f"{now[label] * 1000:.1f}"]
        for base in bases:
            row += ([f"{base[label] * 1000:.1f}", f"{now[label] / base[label]:.2f}"] if label in base
                    else ["-", "-"])
        rows.append(row)
    headers = ["command", f"this {args.clock} ms"]
    for n in range(len(bases)):
        headers += [f"baseline{n + 1} ms", f"ratio{n + 1}"]
    print(format_table(headers, rows))
    for n, tree in enumerate(args.baseline):
        print(f"baseline{n + 1}: {tree}; ratio{n + 1}: this checkout's time over its")
    if args.json:
        Path(args.json).write_text(json.dumps({"facts": facts, "clock": args.clock, "this": now,
                                               "baselines": dict(zip(args.baseline, bases))}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
