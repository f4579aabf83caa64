"""What ``kafkaseg consume`` costs per record, against decoding the same records alone and writing the same bytes.

Usage: python benchmarks/bench_consume.py [--records 1000000] [--repeat 3] [--quick]
       python benchmarks/bench_consume.py --partitions 20000 [--repeat 1]

Generates one topic (4 partitions, 200-byte values, lz4), then times, best of ``--repeat``, in this process:
``kafkaseg.read_arrow`` of the topic (decoding only, the floor for any tool reading it), and ``kafkaseg consume
--from-beginning`` (its ``run``, output to a null sink) printing values only, the key/offset/timestamp too, and
every field with headers. The ``/ decode`` ratio is what formatting each record in Python adds. The console
consumer itself needs a broker, so it is not run here. Nothing here is a floor.

``--partitions N``: the time to the first record instead, on N topic-partitions (topics ``t0``, ``t1``, ... of 100
partitions, 10 records each, written a minute before: idle partitions), against one ``kafkaseg.read_arrow`` of all
of them, for ``--include '.*'``, ``--topic t0`` (with and without ``--follow``) and ``--topic t0 --partition 0
--offset 1``, each with the number of times the log dir was listed (``read_log_dir``, what every discovery does)
before that first record. Best of ``--repeat``.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import NullSink, best_of, format_table, machine, machine_line  # noqa: E402
from kafkaseg.cli import consume  # noqa: E402
from kafkaseg.cli.main import build_parser  # noqa: E402
from kafkaseg.testing import TopicSpec, write_data_dir  # noqa: E402

PRINTS = {
    "values": [],
    "key, offset, timestamp, value": ["print.key=true", "print.offset=true", "print.timestamp=true"],
    "every field, 2 headers": ["print.key=true", "print.offset=true", "print.timestamp=true", "print.partition=true",
                               "print.headers=true", "print.epoch=true"],
}


class _FirstRecord(Exception):
    """Raised by :class:`_StopAtFirst` at the first write: the run stops there."""


class _StopAtFirst(io.RawIOBase):
    def writable(self) -> bool:
        return True

    def write(self, data) -> int:
        raise _FirstRecord()


@contextlib.contextmanager
def _counting_log_dir_listings():
    """Count ``read_log_dir`` calls (every discovery of a log dir lists it there) while the block runs."""
    import kafkaseg.storage.layout as layout

    real, calls = layout.read_log_dir, [0]

    def counted(*args, **kwargs):
        calls[0] += 1
        return real(*args, **kwargs)

    layout.read_log_dir = counted
    try:
        yield calls
    finally:
        layout.read_log_dir = real


FIRST_RECORD = {
    "--include '.*' --from-beginning": ["--include", ".*", "--from-beginning"],
    "--topic t0 --from-beginning": ["--topic", "t0", "--from-beginning"],
    "--topic t0 --from-beginning --follow": ["--topic", "t0", "--from-beginning", "--follow"],
    "--topic t0 --partition 0 --offset 1": ["--topic", "t0", "--partition", "0", "--offset", "1"],
}


def first_record(partitions: int, repeat: int) -> int:
    import kafkaseg

    with tempfile.TemporaryDirectory(prefix="kafkaseg-bench-consume-") as tmp:
        root = Path(tmp) / "data"
        started = time.perf_counter()
        write_data_dir(root, [TopicSpec(f"t{i}", partitions=min(100, partitions - 100 * i), records_per_partition=10,
                                        records_per_batch=5, value_size=20)
                              for i in range((partitions + 99) // 100)])
        long_ago = time.time() - 60  # idle partitions, as most of a broker's are
        for path in root.rglob("*"):
            os.utime(path, (long_ago, long_ago))
        print(f"wrote {partitions:,} partitions in {time.perf_counter() - started:.1f} s")
        whole_s, table = best_of(lambda: kafkaseg.read_arrow(str(root)), repeat, warmup=False)
        assert table.num_rows == partitions * 10
        rows = [["read_arrow, every record", "", f"{whole_s:.2f}", "1.00"]]
        for label, argv_ in FIRST_RECORD.items():
            parsed = build_parser().parse_args(["consume", "--data-dir", str(root), *argv_])

            def go():
                with _counting_log_dir_listings() as listed:
                    try:
                        consume.run(parsed, _StopAtFirst(), io.StringIO())
                    except _FirstRecord:
                        return listed[0]
                raise AssertionError(f"{label}: no record printed")

            seconds, listings = best_of(go, repeat, warmup=False)
            rows.append([f"consume {label}, first record", str(listings), f"{seconds:.2f}",
                         f"{seconds / whole_s:.2f}"])
    print(f"\n{partitions:,} topic-partitions (10 records each), one core:")
    print(format_table(["read", "log dir listings", "best s", "/ read_arrow"], rows))
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="20,000 records, one run (smoke test)")
    parser.add_argument("--partitions", type=int, help="time to the first record on this many partitions instead")
    args = parser.parse_args(argv)
    if args.partitions is not None:
        print(machine_line(machine()))
        return first_record(args.partitions, args.repeat)
    records = 20_000 if args.quick else args.records
    repeat = 1 if args.quick else args.repeat
    print(machine_line(machine()))
    import kafkaseg

    with tempfile.TemporaryDirectory(prefix="kafkaseg-bench-consume-") as tmp:
        root = Path(tmp) / "data"
        write_data_dir(root, [TopicSpec("t", partitions=4, records_per_partition=records // 4, records_per_batch=200,
                                        value_size=200, headers=2, codec="lz4", segment_bytes=32 << 20)])
        n = records // 4 * 4
        decode_s, table = best_of(lambda: kafkaseg.read_arrow(str(root), includeHeaders=True), repeat)
        assert table.num_rows == n
        rows = [["decode only (read_arrow, headers)", f"{decode_s:.2f}", f"{n / decode_s / 1e6:.2f}", "1.00", ""]]
        for label, properties in PRINTS.items():
            argv_ = ["consume", "--data-dir", str(root), "--topic", "t", "--from-beginning"]
            for item in properties:
                argv_ += ["--property", item]
            parsed = build_parser().parse_args(argv_)
            def go():
                sink = NullSink()
                assert consume.run(parsed, sink, io.StringIO()) == 0
                return sink.bytes

            seconds, size = best_of(go, repeat)
            rows.append([f"consume: {label}", f"{seconds:.2f}", f"{n / seconds / 1e6:.2f}",
                         f"{seconds / decode_s:.2f}", f"{size / 1e6:,.0f}"])
    print(f"\n{n:,} records of 200 bytes (lz4), 4 partitions, one core:")
    print(format_table(["read", "best s", "M rec/s", "/ decode", "output MB"], rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
