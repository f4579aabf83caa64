"""What reading a data dir from S3 costs: requests, bytes and time, measured against a real S3 API.

Usage: python benchmarks/bench_s3.py [--latency-ms 0,20] [--stream-mbps 0] [--mib 48] [--compacted 0] [--json FILE]

One run starts moto's S3 server on a loopback port (``moto[server]``, kafkaseg's dev extra), uploads two data dirs
made by :mod:`kafkaseg.testing` (the built-in sample: 14 partitions, 28 segments; and one partition of three
``--mib``/3 MiB segments), and for each operation counts the requests the server answered (LIST, HEAD, GET), the
bytes it sent, and the wall time. ``--latency-ms`` makes the server wait that long before answering each request
(a stand-in for the 10-50 ms of a real S3 round trip; the rest of the time is moto's and kafkaseg's own), one
row per value; ``--stream-mbps`` also makes each response take as long as sending its body at that many MB/s (S3
serves one connection at about 50-100 MB/s; concurrent requests each get that rate); the same operations on the
local copy are timed for comparison. Nothing here is a floor: the
counts are deterministic for a given kafkaseg, the times are this machine's. ``--compacted N``: also a partition of N
~16 KiB segments below the cleaner checkpoint with a compaction gap after each rolled segment's last batch
(``bench_tools.py --compacted``'s), read, described and verified: the checks of each gap (its index files' last
entries) are requests too.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import pyarrow.fs as pafs  # noqa: E402

import kafkaseg  # noqa: E402
from kafkaseg.testing import TopicSpec, sample_data_dir, write_data_dir  # noqa: E402

BUCKET = "bench"


class Recorder:
    """WSGI middleware in front of moto's app: counts requests by kind and response bytes, optionally delaying
    each request."""

    def __init__(self, app):
        self.app = app
        self.latency = 0.0
        self.stream_bytes_per_s = 0.0
        self.lock = threading.Lock()
        self.reset()

    def reset(self):
        with self.lock:
            self.counts = {"LIST": 0, "HEAD": 0, "GET": 0, "other": 0}
            self.bytes = 0

    def __call__(self, environ, start_response):
        method = environ["REQUEST_METHOD"]
        query = environ.get("QUERY_STRING", "")
        kind = "LIST" if method == "GET" and "list-type" in query else method
        if self.latency:
            time.sleep(self.latency)
        body = self.app(environ, start_response)
        size = 0
        chunks = []
        for chunk in body:
            size += len(chunk)
            chunks.append(chunk)
        if self.stream_bytes_per_s:
            time.sleep(size / self.stream_bytes_per_s)
        with self.lock:
            self.counts[kind if kind in self.counts else "other"] += 1
            self.bytes += size
        return chunks


def compacted_operations(compacted: str):
    """(name, path, function) of the compacted partition (``--compacted``)."""
    def run(*argv):
        from kafkaseg.cli.main import main
        import contextlib
        import io
        with contextlib.redirect_stdout(io.StringIO()):
            return main(list(argv))

    return [("read, compacted partition", compacted, lambda path: kafkaseg.read_arrow(path).num_rows),
            ("kafkaseg describe, compacted partition", compacted, lambda path: run("describe", path, "--json")),
            ("kafkaseg verify, compacted partition", compacted, lambda path: run("verify", path, "--json"))]


def operations(root: str, big: str, big_records: int):
    """(name, function of a path prefix) pairs: what a user does."""
    def plan(path):
        return len(kafkaseg.open_scan(path).plan.slices)

    def read(path):
        return kafkaseg.read_arrow(path).num_rows

    def read_committed(path):
        return kafkaseg.read_arrow(path, **{"kafka.isolation.level": "read_committed"}).num_rows

    def describe(path):
        from kafkaseg.cli.main import main
        import contextlib
        import io
        with contextlib.redirect_stdout(io.StringIO()):
            return main(["describe", path, "--json"])

    def verify(path):
        from kafkaseg.cli.main import main
        import contextlib
        import io
        with contextlib.redirect_stdout(io.StringIO()):
            return main(["verify", path, "--json"])

    def big_read(path):
        return kafkaseg.read_arrow(path).num_rows

    def big_time_lookup(path):
        scan = kafkaseg.open_scan(path, startingTimestamp=str(1_700_000_000_000 + big_records // 2))  # mid-log
        return len(scan.plan.slices)

    return [("plan, sample dir", root, plan), ("read, sample dir", root, read),
            ("read_committed, sample dir", root, read_committed), ("kafkaseg describe, sample dir", root, describe),
            ("kafkaseg verify, sample dir", root, verify),
            ("read, big partition", big, big_read), ("plan with startingTimestamp, big partition", big,
                                                      big_time_lookup)]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency-ms", default="0,20", help="comma list of per-request delays (ms)")
    parser.add_argument("--stream-mbps", type=float, default=0.0,
                        help="each response's bandwidth in MB/s (0: as fast as loopback)")
    parser.add_argument("--mib", type=int, default=48, help="size of the big partition (three segments)")
    parser.add_argument("--compacted", type=int, default=0,
                        help="segments of a partition with a compaction gap after each (0: none)")
    parser.add_argument("--json", help="also write the results as JSON here")
    args = parser.parse_args(argv)
    try:
        from moto.server import ThreadedMotoServer
    except ImportError:
        print("moto[server] is not installed (pip install 'moto[server]', part of kafkaseg's dev extra)")
        return 2
    for name, value in {"AWS_ACCESS_KEY_ID": "bench", "AWS_SECRET_ACCESS_KEY": "bench",
                        "AWS_DEFAULT_REGION": "us-east-1", "AWS_EC2_METADATA_DISABLED": "true"}.items():
        os.environ[name] = value
    with tempfile.TemporaryDirectory(prefix="kafkaseg-bench-s3-") as tmp:
        sample = Path(tmp) / "sample"
        sample_data_dir(sample)
        big = Path(tmp) / "big"
        big_records = (args.mib << 20) // 240
        write_data_dir(big, [TopicSpec("big", records_per_partition=big_records, records_per_batch=200,
                                       vary_batch_size=False, value_size=200, segment_bytes=(args.mib << 20) // 3,
                                       ts_step_ms=1)])
        compacted = Path(tmp) / "compacted"
        if args.compacted:
            from bench_tools import generate  # (benchmarks/ is on sys.path: this script's folder)

            generate(compacted, 0, 0, 0, args.compacted)
        logging.getLogger("werkzeug").setLevel(logging.ERROR)  # moto's server logs every request otherwise
        server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
        server.start()
        try:
            host, port = server.get_host_and_port()
            recorder = Recorder(server._server.app)  # noqa: SLF001 (moto keeps its WSGI app there)
            recorder.stream_bytes_per_s = args.stream_mbps * 1e6
            server._server.app = recorder  # noqa: SLF001
            client = pafs.S3FileSystem(endpoint_override=f"{host}:{port}", scheme="http", allow_bucket_creation=True)
            client.create_dir(BUCKET)
            pafs.copy_files(str(sample), f"{BUCKET}/sample", destination_filesystem=client)
            pafs.copy_files(str(big), f"{BUCKET}/big", destination_filesystem=client)
            todo = operations(str(sample), str(big), big_records)
            if args.compacted:
                pafs.copy_files(str(compacted), f"{BUCKET}/compacted", destination_filesystem=client)
                todo += compacted_operations(str(compacted / "compacted-0"))
            query = f"?endpoint_override={host}:{port}&scheme=http"
            rows = []
            for name, local_path, run in todo:
                started = time.perf_counter()
                local_result = run(local_path)
                local_s = time.perf_counter() - started
                remote = (f"s3://{BUCKET}/{Path(local_path).relative_to(tmp)}{query}"
                          if local_path.startswith(str(compacted)) else
                          f"s3://{BUCKET}/{'sample' if local_path == str(sample) else 'big'}{query}")
                for latency in (float(x) for x in args.latency_ms.split(",")):
                    recorder.latency = latency / 1000
                    recorder.reset()
                    started = time.perf_counter()
                    result = run(remote)
                    seconds = time.perf_counter() - started
                    assert result == local_result, (name, result, local_result)
                    rows.append({"operation": name, "latency_ms": latency, "seconds": seconds,
                                 "local_seconds": local_s, **recorder.counts, "bytes": recorder.bytes})
        finally:
            server.stop()
    print(f"{'operation':<44} {'latency':>7} {'LIST':>5} {'HEAD':>5} {'GET':>5} {'MB sent':>8} {'S3 s':>7} "
          f"{'local s':>8}")
    for r in rows:
        print(f"{r['operation']:<44} {r['latency_ms']:>5.0f}ms {r['LIST']:>5} {r['HEAD']:>5} {r['GET']:>5} "
              f"{r['bytes'] / 1e6:>8.2f} {r['seconds']:>7.2f} {r['local_seconds']:>8.3f}")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
