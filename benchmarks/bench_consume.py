"""What ``kafkaseg consume`` costs per record, against decoding the same records alone and writing the same bytes.

Usage: python benchmarks/bench_consume.py [--records 1000000] [--repeat 3] [--quick]

Generates one topic (4 partitions, 200-byte values, lz4), then times, best of ``--repeat``, in this process:
``kafkaseg.read_arrow`` of the topic (decoding only, the floor for any tool reading it), and ``kafkaseg consume
--from-beginning`` (its ``run``, output to a null sink) printing values only, the key/offset/timestamp too, and
every field with headers. The ``/ decode`` ratio is what formatting each record in Python adds. The console
consumer itself needs a broker, so it is not run here. Nothing here is a floor.
"""

from __future__ import annotations

import argparse
import io
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks._common import best_of, format_table, machine, machine_line  # noqa: E402
from kafkaseg.cli import consume  # noqa: E402
from kafkaseg.cli.main import build_parser  # noqa: E402
from kafkaseg.testing import TopicSpec, write_data_dir  # noqa: E402

PRINTS = {
    "values": [],
    "key, offset, timestamp, value": ["print.key=true", "print.offset=true", "print.timestamp=true"],
    "every field, 2 headers": ["print.key=true", "print.offset=true", "print.timestamp=true", "print.partition=true",
                               "print.headers=true", "print.epoch=true"],
}


class _Null(io.RawIOBase):
    """A sink that counts bytes (so the output is produced but costs no I/O)."""

    def __init__(self):
        self.bytes = 0

    def writable(self) -> bool:
        return True

    def write(self, data) -> int:
        self.bytes += len(data)
        return len(data)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="20,000 records, one run (smoke test)")
    args = parser.parse_args(argv)
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
                sink = _Null()
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
