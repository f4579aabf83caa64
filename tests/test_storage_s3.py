"""Data dirs read through a real S3 API: moto's S3 server on a loopback port, reached with pyarrow's S3 client.

Everything a user does with ``s3://bucket/prefix?endpoint_override=HOST:PORT&scheme=http`` is checked against the
same dir read from local disk (rows, CLI output), plus what only object storage has: errors of the service, the
requests a plan and a read cost, and that reads never send a write. The server records every request it serves
(method, key, query, Range header).
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import threading
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import unquote

import pyarrow as pa
import pyarrow.fs as pafs
import pytest

import kafkaseg
from kafkaseg.cli.main import main as cli_main
from kafkaseg.errors import InvalidOptionError, KafkaSegError, LayoutError
from kafkaseg.testing import TopicSpec, write_data_dir

moto_server = pytest.importorskip("moto.server", reason="moto[server] is not installed (pip install 'moto[server]', "
                                  "part of kafkaseg's dev extra): the S3 tests need its local S3 server")

BUCKET = "kafka-backups"
PREFIX = "backups/data"

TOPICS = [
    TopicSpec("orders", partitions=2, records_per_partition=1200, records_per_batch=30, headers=1, idempotent=True,
              segment_bytes=48 * 1024, ts_jitter_ms=20),
    TopicSpec("payments", records_per_partition=600, records_per_batch=15, transactional=True, abort_ratio=0.3,
              open_transactions=1, codec="lz4", segment_bytes=24 * 1024),
    TopicSpec("legacy", records_per_partition=300, magic=1, codec="gzip", segment_bytes=16 * 1024),
    TopicSpec("clicks", records_per_partition=500, timestamp_type="LogAppendTime", preallocate_active_index=8192,
              segment_bytes=32 * 1024),
]


@dataclass
class Request:
    method: str
    key: str  # "bucket/key..." without the leading slash
    query: str
    range: str | None

    @property
    def kind(self) -> str:
        if self.method == "GET" and "list-type" in self.query:
            return "LIST"
        return self.method


@dataclass
class S3:
    """The running server: ``uri(rel)`` names ``rel`` under the data dir's prefix as a user writes it."""

    endpoint: str
    local: str  # the same data dir on local disk
    manifest: object
    requests: list[Request] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def uri(self, rel: str = "", *, bucket: str = BUCKET, prefix: str = PREFIX) -> str:
        key = "/".join(p for p in (prefix, rel) if p)
        return f"s3://{bucket}/{key}?endpoint_override={self.endpoint}&scheme=http"

    def take(self) -> list[Request]:
        with self.lock:
            taken, self.requests[:] = list(self.requests), []
        return taken


class _Recording:
    """WSGI middleware in front of moto's app: records each request before moto answers it."""

    def __init__(self, app, s3: S3):
        self.app = app
        self.s3 = s3

    def __call__(self, environ, start_response):
        request = Request(environ["REQUEST_METHOD"], unquote(environ.get("PATH_INFO", "")).lstrip("/"),
                          environ.get("QUERY_STRING", ""), environ.get("HTTP_RANGE"))
        with self.s3.lock:
            self.s3.requests.append(request)
        return self.app(environ, start_response)


@pytest.fixture(scope="module")
def s3(tmp_path_factory):
    local = tmp_path_factory.mktemp("s3-source") / "data"
    manifest = write_data_dir(local, TOPICS, seed=11)
    server = moto_server.ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    with pytest.MonkeyPatch.context() as env:
        for name, value in {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing",
                            "AWS_DEFAULT_REGION": "us-east-1", "AWS_EC2_METADATA_DISABLED": "true"}.items():
            env.setenv(name, value)
        for name in ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_PROFILE", "AWS_SESSION_TOKEN"):
            env.delenv(name, raising=False)
        server.start()
        try:
            host, port = server.get_host_and_port()
            state = S3(f"{host}:{port}", str(local), manifest)
            server._server.app = _Recording(server._server.app, state)  # noqa: SLF001 (moto keeps it there)
            client = pafs.S3FileSystem(endpoint_override=state.endpoint, scheme="http", allow_bucket_creation=True)
            client.create_dir(BUCKET)
            pafs.copy_files(str(local), f"{BUCKET}/{PREFIX}", destination_filesystem=client)
            # a stray non-Kafka object next to the data dir, and a folder that is not a log dir
            with client.open_output_stream(f"{BUCKET}/backups/notes.txt") as out:
                out.write(b"not kafka")
            with client.open_output_stream(f"{BUCKET}/other/readme.txt") as out:
                out.write(b"not a log dir")
            state.take()
            yield state
        finally:
            server.stop()


def _rel(segment: str) -> str:
    return "/".join(segment.split("/")[-2:])


def _normalized(table: pa.Table) -> pa.Table:
    """``segment`` names the file as its filesystem does (bucket/key on S3, an absolute path on disk): compare
    the ``<topic>-<partition>/<file>`` part."""
    if "segment" not in table.column_names:
        return table
    i = table.column_names.index("segment")
    return table.set_column(i, "segment", pa.array([_rel(s) for s in table.column("segment").to_pylist()]))


def _writes(requests: list[Request]) -> list[Request]:
    return [r for r in requests if r.method not in ("GET", "HEAD")]


# -- rows -----------------------------------------------------------------------------------------------------------

READS = {
    "whole dir": ("", {}),
    "headers and metadata": ("", {"includeHeaders": True, "includeMetadata": True}),
    "read_committed": ("", {"kafka.isolation.level": "read_committed", "includeMetadata": True}),
    "offsets": ("", {"subscribe": "orders", "startingOffsets": '{"orders":{"0":700,"1":5}}',
                     "endingOffsets": '{"orders":{"0":1100,"1":-1}}'}),
    "timestamps": ("", {"subscribe": "orders,payments", "startingTimestamp": 1_700_000_004_000,
                        "endingTimestamp": 1_700_000_009_000}),
    "log end offset bound": ("", {"upperBound": "logEndOffset", "minPartitions": 12}),
    "topic-partition dir": ("orders-1", {"includeHeaders": True}),
    "one .log file": (None, {"includeMetadata": True}),  # the second segment of orders-0, see below
    "glob": ("orders-*", {}),
    "glob of .log files": ("*-0/*.log", {"kafka.isolation.level": "read_committed"}),
}


@pytest.mark.parametrize("name", list(READS))
def test_rows_from_s3_equal_rows_from_disk(s3, name):
    rel, options = READS[name]
    if rel is None:
        rel = f"orders-0/{s3.manifest.partition('orders', 0).segments[1].base_offset:020d}.log"
    local = kafkaseg.read_arrow(os.path.join(s3.local, rel) if rel else s3.local, **options)
    remote = kafkaseg.read_arrow(s3.uri(rel), **options)
    assert local.num_rows > 0
    assert _normalized(remote).equals(_normalized(local))
    assert not _writes(s3.take())


def test_plan_reports_and_metrics_match(s3):
    local = kafkaseg.open_scan(s3.local, **{"kafka.isolation.level": "read_committed"})
    remote = kafkaseg.open_scan(s3.uri(), **{"kafka.isolation.level": "read_committed"})
    assert [(p.topic, p.partition, p.start_offset, p.end_offset, p.start_position, p.end_position, p.aborted)
            for p in remote.plan.slices] == \
        [(p.topic, p.partition, p.start_offset, p.end_offset, p.start_position, p.end_position, p.aborted)
         for p in local.plan.slices]
    assert remote.to_table().num_rows == local.to_table().num_rows
    assert remote.metrics.bytes_read == local.metrics.bytes_read
    # remote partitions are planned in threads, each into its own report, merged in partition order: the same
    # report as the local plan's, up to the names of files
    def shape(report):
        data = report.as_dict()
        return ([(p["topic"], p["partition"], p["start_offset"], p["end_offset"], p["slices"], len(p["notes"]))
                 for p in data["partitions"]], len(data["notes"]), len(data["indexes_rebuilt"]),
                [why.split(":")[0] for _, why in data["indexes_rebuilt"]])
    assert shape(remote.plan.report) == shape(local.plan.report)
    assert [p.partition_path.rsplit("/", 1)[1] for p in remote.plan.slices] == \
        [p.partition_path.rsplit("/", 1)[1] for p in local.plan.slices]


# -- paths that are not data ----------------------------------------------------------------------------------------

def test_uri_query_is_not_a_glob(s3):
    """The ``?`` of ``?endpoint_override=...`` is no glob character: a folder that is not a log dir and a file that
    is not a segment are errors, as on disk, not silently skipped glob matches (0 rows)."""
    with pytest.raises(LayoutError, match="neither a Kafka log dir"):
        kafkaseg.read_arrow(s3.uri("", prefix="other"))
    with pytest.raises(LayoutError, match="neither a Kafka log dir"):
        kafkaseg.read_arrow(s3.uri("", prefix=""))  # the bucket itself
    with pytest.raises(LayoutError, match="not a .log segment file"):
        kafkaseg.read_arrow(s3.uri("orders-0/00000000000000000000.index"))
    with pytest.raises(LayoutError, match="not a .log segment file"):
        kafkaseg.read_arrow(s3.uri("", prefix="backups/notes.txt"))
    # a real glob in such a URI still skips what it matches that is not data
    assert kafkaseg.read_arrow(s3.uri("orders-0/*"), subscribe="orders").num_rows == 1200


# -- the kafkaseg CLI ----------------------------------------------------------------------------------------------

def _cli(argv, capsys) -> tuple[int, str, str]:
    code = cli_main(argv)
    out = capsys.readouterr()
    return code, out.out, out.err


def _same_paths(text: str, s3: S3) -> str:
    """Output with the data dir named alike: the URI as given, bucket/key as S3 names it, the local dir."""
    text = text.replace(f"?endpoint_override={s3.endpoint}&scheme=http", "")
    return (text.replace(f"s3://{BUCKET}/{PREFIX}", "<dir>").replace(f"{BUCKET}/{PREFIX}", "<dir>")
            .replace(s3.local, "<dir>"))


CLI = {
    "describe": ["describe", "@"],
    "verify": ["verify", "--json", "@"],
    "offsets": ["offsets", "--data-dir", "@", "--topic", "orders|payments", "--time", "1700000005000"],
    "offsets read_committed": ["offsets", "--data-dir", "@", "--topic", "payments", "--time", "-1", "--isolation",
                               "read_committed"],
    "locate": ["locate", "--data-dir", "@", "--topic", "orders", "--partition", "1", "--offset", "777"],
    "dump .log": ["dump", "--deep-iteration", "--print-data-log", "--files", "@/orders-0/00000000000000000000.log"],
    "dump .index": ["dump", "--files", "@/orders-0/00000000000000000000.index"],
    "dump .timeindex": ["dump", "--files", "@/orders-0/00000000000000000000.timeindex"],
    "dump .txnindex and .snapshot": ["dump", "--files", "@/payments-0/00000000000000000000.txnindex"],
    "retention": ["retention", "@", "--now", "1700604810000", "--segments", "--json"],
}


@pytest.mark.parametrize("name", list(CLI))
def test_cli_on_s3_prints_what_it_prints_for_disk(s3, capsys, name):
    argv = CLI[name]
    if name.startswith("dump .txnindex"):
        snapshots = sorted(p.name for p in (s3.manifest.path / "payments-0").glob("*.snapshot"))
        argv = [argv[0], argv[1], f"{argv[2]},@/payments-0/{snapshots[0]}"]

    def with_root(root: str, uri: bool) -> list[str]:
        out = []
        for a in argv:
            parts = [p.replace("@", root) for p in a.split(",")]
            if uri and "@" in a:
                parts = [p + f"?endpoint_override={s3.endpoint}&scheme=http" for p in parts]
            out.append(",".join(parts))
        return out

    local = _cli(with_root(s3.local, False), capsys)
    remote = _cli(with_root(f"s3://{BUCKET}/{PREFIX}", True), capsys)
    assert local[0] == 0 and local[1].strip()
    assert (remote[0], _same_paths(remote[1], s3), _same_paths(remote[2], s3)) == \
        (local[0], _same_paths(local[1], s3), _same_paths(local[2], s3))
    assert not _writes(s3.take())


def test_log_dirs_on_s3_sizes_objects_as_stored(s3, capsys):
    """kafka-log-dirs.sh's sizes are the same on S3 as on disk; disk usage is the objects' stored sizes (no
    blocks, no filesystem totals: -1 as KIP-827's unknown)."""
    local = _cli(["log-dirs", "--json", s3.local], capsys)
    remote = _cli(["log-dirs", "--json", s3.uri()], capsys)
    assert local[0] == remote[0] == 0, remote[2]
    local_dir = json.loads(local[1])["brokers"][0]["logDirs"][0]
    remote_dir = json.loads(remote[1])["brokers"][0]["logDirs"][0]
    assert remote_dir["logDir"] == f"{BUCKET}/{PREFIX}"
    assert [(p["partition"], p["size"], p["segments"]) for p in remote_dir["partitions"]] == \
        [(p["partition"], p["size"], p["segments"]) for p in local_dir["partitions"]]
    stored = sum(os.path.getsize(os.path.join(root, f)) for root, _, files in os.walk(s3.local) for f in files)
    assert remote_dir["diskBytes"] == stored
    assert remote_dir["totalBytes"] == remote_dir["usableBytes"] == -1
    assert not _writes(s3.take())


# -- errors ---------------------------------------------------------------------------------------------------------

def test_missing_bucket_key_and_file_are_layout_errors_naming_the_path(s3):
    with pytest.raises(LayoutError, match="no-such-bucket/data: no such file or directory"):
        kafkaseg.read_arrow(s3.uri("", bucket="no-such-bucket", prefix="data"))
    with pytest.raises(LayoutError, match=f"{BUCKET}/{PREFIX}/nothing: no such file or directory"):
        kafkaseg.read_arrow(s3.uri("nothing"))
    with pytest.raises(LayoutError, match="no such file or directory"):
        kafkaseg.read_arrow(s3.uri("orders-0/00000000000000000001.log"))
    with pytest.raises(LayoutError, match="the glob matched nothing"):
        kafkaseg.read_arrow(s3.uri("nothing-*"))
    with pytest.raises(LayoutError, match="Unexpected query parameter in S3 URI: 'endpoint'"):
        kafkaseg.read_arrow(s3.uri().replace("endpoint_override", "endpoint"))
    assert not _writes(s3.take())


def test_the_same_bucket_and_key_from_two_endpoints_is_refused_not_merged(s3):
    """Discovery names a partition by its bucket/key: a second store holding the same path (two sites' backups
    at one bucket and prefix) silently replaced the first (found in review)."""
    other = s3.uri().replace("127.0.0.1", "localhost")
    assert other != s3.uri()
    with pytest.raises(LayoutError, match="also found in another store"):
        kafkaseg.read_arrow([s3.uri(), other], subscribe="orders")
    segment = "orders-0/00000000000000000000.log"
    with pytest.raises(LayoutError, match="also found in another store"):  # .log files too (found in review)
        kafkaseg.read_arrow([s3.uri(segment), s3.uri(segment).replace("127.0.0.1", "localhost")])
    # one endpoint with other options (timeouts) is the same store (found in review: it was refused)
    timed = s3.uri().replace("?", "?request_timeout=30&")
    assert kafkaseg.read_arrow([s3.uri(), timed], subscribe="orders").num_rows == \
        kafkaseg.read_arrow(s3.uri(), subscribe="orders").num_rows
    assert kafkaseg.read_arrow([s3.uri(), s3.uri()], subscribe="orders").num_rows == \
        kafkaseg.read_arrow(s3.uri(), subscribe="orders").num_rows


def test_bad_credentials_are_a_layout_error(s3):
    """With moto checking signatures (IAM simulation on), the dummy keys are refused: a LayoutError naming the
    path and S3's answer, not a raw pyarrow OSError."""
    from moto.core.authorization import enable_iam_authentication

    with enable_iam_authentication():
        with pytest.raises(LayoutError, match=f"{BUCKET}/{PREFIX}.*ACCESS_DENIED"):
            kafkaseg.read_arrow(s3.uri())
    assert not _writes(s3.take())


def test_credentials_in_a_uri_never_reach_an_error_message(s3):
    """pyarrow takes ``s3://KEY:SECRET@bucket/...``; kafkaseg's errors show the URI with the secret masked,
    also when pyarrow cannot parse it (a secret with an unescaped ``/``, as AWS secrets often have)."""
    cases = [s3.uri("nothing-*").replace("s3://", "s3://AKIDEXAMPLE:wJalrXUtnFEMI@"),
             s3.uri().replace("s3://", "s3://AKIDEXAMPLE:wJalrXUtn/FEMI@")]
    for uri in cases:
        with pytest.raises(KafkaSegError) as caught:
            kafkaseg.read_arrow(uri)
        assert "wJalrXUtn" not in str(caught.value) and "AKIDEXAMPLE:***@" in str(caught.value)


def test_credentials_in_a_uri_stay_out_of_plan_reports_and_cli_output(s3, capsys):
    """Plan reports (files other users of the host may read) and dump/locate output mask the secret too."""
    uri = s3.uri().replace("s3://", "s3://testing:testing@")
    from kafkaseg.options import ReadOptions
    from kafkaseg.planning import plan_scan

    plan = plan_scan(None, ReadOptions.from_options({"path": uri, "subscribe": "orders"}))  # as Spark passes it
    assert "testing:***@" in str(plan.report.as_dict()["options"]["paths"])
    assert "testing:testing" not in str(plan.report.as_dict())
    segment = s3.uri("orders-0/00000000000000000000.log").replace("s3://", "s3://testing:testing@")
    assert cli_main(["dump", "--files", segment]) == 0
    assert cli_main(["dump", "--files", segment, "--json"]) == 0
    assert cli_main(["locate", "--data-dir", uri, "--topic", "orders", "--partition", "7", "--offset", "1"]) == 1
    printed = capsys.readouterr()
    assert "Dumping s3://testing:***@" in printed.out and "testing:testing" not in printed.out + printed.err
    # messages naming the data dirs when a topic is not there (found in review: they printed the secret)
    for argv in (["consume", "--data-dir", uri, "--topic", "nope", "--from-beginning"],
                 ["consume", "--data-dir", uri, "--include", "nope.*", "--from-beginning"],
                 ["retention", uri, "--topic", "nope"], ["retention", uri, "--topic-pattern", "nope.*"]):
        cli_main(argv)
        printed = capsys.readouterr()
        assert "testing:***@" in printed.err and "testing:testing" not in printed.out + printed.err, argv


def _lookup_job():
    spec = importlib.util.spec_from_file_location("lookup_job", Path(__file__).resolve().parents[1] / "jobs/lookup.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_lookup_job_answers_from_s3_as_from_disk(s3):
    """jobs/lookup.py's executor side (lookup_batches) on an S3 data dir; its answers land in a table, so a
    partition that is not there must not copy the URI's secret into the ``reason`` column."""
    job = _lookup_job()
    requests = pa.RecordBatch.from_pylist([
        {"topic": "orders", "partition": "0", "time": "1700000003000", "offset": None},
        {"topic": "orders", "partition": "1", "time": None, "offset": "999"},
        {"topic": "payments", "partition": "0", "time": "-1", "offset": None},
        {"topic": "clicks", "partition": "0", "time": "-3", "offset": None},
        {"topic": "nope", "partition": "0", "time": "-1", "offset": None},
    ], schema=pa.schema([(n, pa.string()) for n in ("topic", "partition", "time", "offset")]))

    def answers(data_dir: str) -> list[dict]:
        rows = [r for b in job.lookup_batches([requests], [data_dir], "read_committed") for r in b.to_pylist()]
        for row in rows:
            row["segment"] = row["segment"] and _rel(row["segment"])
            row["reason"] = row["reason"] and _same_paths(row["reason"], s3)
        return rows

    local = answers(s3.local)
    assert [r["found"] for r in local] == [True, True, True, True, False], local
    secret = s3.uri().replace("s3://", "s3://AKIDEXAMPLE:wJalrXUtnFEMI@")
    remote = answers(secret)
    assert remote[:4] == local[:4]
    assert "wJalrXUtn" not in remote[4]["reason"] and "AKIDEXAMPLE:***@" in remote[4]["reason"]
    assert not _writes(s3.take())


# -- requests -------------------------------------------------------------------------------------------------------

def _per_object(requests: list[Request], method: str) -> dict[str, int]:
    counts: dict[str, int] = {}
    for r in requests:
        if r.kind == method:
            counts[r.key] = counts.get(r.key, 0) + 1
    return counts


def test_a_topic_selection_reads_only_the_selected_partition_folders(s3):
    """subscribe/assign name the folders to read from the log dir's one listing: the others cost nothing more
    (found in review: every folder was listed and its side files read, thousands of requests for one partition)."""
    s3.take()
    table = kafkaseg.read_arrow(s3.uri(), assign='{"legacy":[0]}')
    requests = s3.take()
    assert table.num_rows == kafkaseg.read_arrow(s3.local, assign='{"legacy":[0]}').num_rows > 0
    others = {r.key for r in requests if any(f"/{topic}-" in r.key + "/" or r.query.find(f"{topic}-") >= 0
                                               for topic in ("orders", "payments", "clicks"))}
    assert not others, sorted(others)[:5]
    scan = kafkaseg.open_scan(s3.uri(), subscribe="legacy")
    pruned = {(t, p) for t, p, _ in scan.plan.report.partitions_pruned}
    assert {t for t, _ in pruned} == {"orders", "payments", "clicks"}  # still reported, by name
    with pytest.raises(InvalidOptionError, match="did you mean 'orders'"):
        kafkaseg.read_arrow(s3.uri(), subscribe="order")
    # the CLI's topic and partition filters too
    for argv in (["offsets", "--data-dir", s3.uri(), "--topic", "legacy"],
                 ["locate", "--data-dir", s3.uri(), "--topic", "legacy", "--partition", "0", "--offset", "3"],
                 ["describe", s3.uri(), "--topic", "legacy"]):
        s3.take()
        assert cli_main(argv) == 0, argv
        touched = {r.key for r in s3.take() if any(f"/{topic}-" in r.key + "/" or f"{topic}-" in r.query
                                                    for topic in ("orders", "payments", "clicks"))}
        assert not touched, (argv, sorted(touched)[:5])


@pytest.mark.parametrize("options", [{}, {"kafka.isolation.level": "read_committed"},
                                     {"startingTimestamp": 1_700_000_003_000, "subscribe": "orders,clicks"}])
def test_a_plan_opens_and_reads_each_object_once(s3, options):
    """Planning reads checkpoints, indexes and batch headers near a few positions, several of them more than once
    (the log end offset, the first batch...) and a time lookup probes index entries one by one: on S3 each open is
    a HEAD and each read a ranged GET (10-50 ms each). Every object here is smaller than a read block, so one HEAD
    and one GET per object is what a plan may cost."""
    s3.take()
    scan = kafkaseg.open_scan(s3.uri(), **options)
    requests = s3.take()
    heads, gets = _per_object(requests, "HEAD"), _per_object(requests, "GET")
    assert scan.plan.slices and gets
    assert {k: n for k, n in heads.items() if n > 1} == {}
    assert {k: n for k, n in gets.items() if n > 1} == {}
    assert not _writes(requests)


def test_lookups_cost_one_get_per_index_file(s3, capsys):
    """ProbedIndex binary-searches .index/.timeindex files entry by entry (one 8- or 12-byte read each)."""
    for argv in (["offsets", "--data-dir", s3.uri(), "--topic", "orders", "--time", "1700000005000"],
                 ["locate", "--data-dir", s3.uri(), "--topic", "orders", "--partition", "0", "--offset", "1000"],
                 ["locate", "--data-dir", s3.uri(), "--topic", "orders", "--partition", "0", "--time",
                  "1700000007000"]):
        s3.take()
        assert cli_main(argv) == 0, capsys.readouterr()
        gets = _per_object(s3.take(), "GET")
        assert any(k.endswith("index") for k in gets)
        assert {k: n for k, n in gets.items() if n > 1} == {}


def test_reading_costs_one_get_per_slice_chunk(s3):
    scan = kafkaseg.open_scan(s3.uri(), subscribe="orders")
    s3.take()
    table = scan.to_table()
    requests = s3.take()
    assert table.num_rows == 2400
    assert len([r for r in requests if r.kind == "GET"]) == len(scan.plan.slices)
    assert {k: n for k, n in _per_object(requests, "HEAD").items() if n > 1} == {}
    assert not _writes(requests)


def test_small_remote_reads_share_bounded_blocks(s3, monkeypatch):
    """Reads shorter than a block are served from aligned blocks kept per filesystem object, at most
    REMOTE_CACHE_BYTES of them; longer reads go straight to the object. Bytes are those of the object."""
    from kafkaseg.storage import fs

    payload = os.urandom(3 * fs.REMOTE_BLOCK_BYTES + 12345)
    filesystem, key = fs.open_filesystem(s3.uri("", prefix="scratch/blob.bin"))
    writer = pafs.S3FileSystem(endpoint_override=s3.endpoint, scheme="http")
    with writer.open_output_stream(key) as out:
        out.write(payload)
    monkeypatch.setattr(fs, "REMOTE_CACHE_BYTES", 2 * fs.REMOTE_BLOCK_BYTES)
    s3.take()
    block = fs.REMOTE_BLOCK_BYTES
    reads = [(0, 100), (50, 8), (block - 10, 20), (block + 5, 64 * 1024), (3 * block, 12345), (3 * block + 12000, 999),
             (2 * block + 7, 3), (7, 9)]
    with fs.RandomAccessReader(key, filesystem) as reader:
        for position, length in reads:
            assert reader.read_at(position, length) == payload[position:position + length]
        assert reader.read_at(10, 2 * block) == payload[10:10 + 2 * block]
        assert fs._remote_files(filesystem).cached_bytes <= fs.REMOTE_CACHE_BYTES
    with fs.RandomAccessReader(key, filesystem) as again:  # the same filesystem: no new HEAD
        assert again.read_at(3 * block + 1, 5) == payload[3 * block + 1:3 * block + 6]
    requests = s3.take()
    assert [r.kind for r in requests].count("HEAD") == 1
    # fetched: block 0; 1 (0 cached); 3 (0 dropped: least recently used); 2 (1 dropped); 0 again (3 dropped); the
    # long read, directly; 3 again
    last = f"bytes={3 * block}-{len(payload) - 1}"
    assert [r.range for r in requests if r.kind == "GET"] == [
        f"bytes=0-{block - 1}", f"bytes={block}-{2 * block - 1}", last, f"bytes={2 * block}-{3 * block - 1}",
        f"bytes=0-{block - 1}", f"bytes=10-{10 + 2 * block - 1}", last]
    assert fs.read_small_file(key, filesystem) == payload
    # a plan drops its filesystem's blocks when done (a scan kept in a notebook would hold them otherwise)
    scan = kafkaseg.open_scan(s3.uri())
    assert all(fs._remote_files(s.filesystem).cached_bytes == 0 for s in scan.plan.slices)


def test_a_big_slice_is_read_in_few_large_requests(s3, tmp_path):
    """A slice of a remote segment is fetched REMOTE_READ_BYTES at a time (one GET per 8 MiB, not per 2 MiB
    decode chunk), its rows those of the same segment on disk, whatever the decode chunk size."""
    from kafkaseg.scan import read_slice
    from kafkaseg.storage import fs

    local = tmp_path / "bulk"
    write_data_dir(local, [TopicSpec("bulk", records_per_partition=5000, records_per_batch=40, value_size=1200)],
                   seed=3)
    size = (local / "bulk-0" / f"{0:020d}.log").stat().st_size
    assert 2 * (2 << 20) < size < fs.REMOTE_READ_BYTES
    writer = pafs.S3FileSystem(endpoint_override=s3.endpoint, scheme="http")
    pafs.copy_files(str(local), f"{BUCKET}/bulk", destination_filesystem=writer)
    expected = kafkaseg.read_arrow(str(local), includeMetadata=True)
    scan = kafkaseg.open_scan(s3.uri("", prefix="bulk"), includeMetadata=True)
    (piece,) = scan.plan.slices
    for chunk in (None, 300, 64 * 1024):  # the default, then decode chunks far smaller than a request
        s3.take()
        kwargs = {} if chunk is None else {"read_chunk_bytes": chunk}
        table = pa.Table.from_batches(list(read_slice(piece, scan.options, **kwargs)))
        assert _normalized(table).equals(_normalized(expected))
        assert [r.range for r in s3.take() if r.kind == "GET"] == [f"bytes=0-{size - 1}"]


def test_the_export_refuses_an_output_in_an_s3_data_dir(s3):
    """The output guard compares the log dirs discovery found (named bucket/key by pyarrow) as URIs, with queries,
    user info and Spark's s3a:// scheme set aside; table checks join paths before a URI's query."""
    from jobs import export

    for output in (s3.uri(), s3.uri("out"), s3.uri(prefix="backups"), "s3a://" + f"{BUCKET}/{PREFIX}/out"):
        with pytest.raises(export.UsageError, match="inside"):
            export.check_output_location(output, [s3.uri()])
    export.check_output_location(s3.uri(prefix="exports"), [s3.uri()])
    assert export.table_exists(s3.uri(prefix="exports"), "delta") is False


def test_an_object_deleted_after_planning_is_data_loss_or_a_recorded_skip(s3):
    """No rename on S3: a segment deleted after planning (retention on the source, a sync with --delete) shows
    when the read of the file opened at planning fails; it is treated as a local segment gone for good."""
    from kafkaseg.errors import DataLossError

    client = pafs.S3FileSystem(endpoint_override=s3.endpoint, scheme="http")
    prefix = "vanishing/data"
    segment = f"{BUCKET}/{prefix}/orders-0/00000000000000000000.log"
    for fail in (True, False):
        pafs.copy_files(s3.local, f"{BUCKET}/{prefix}", destination_filesystem=client)
        scan = kafkaseg.open_scan(s3.uri(prefix=prefix), subscribe="orders", failOnDataLoss=str(fail).lower())
        client.delete_file(segment)
        if fail:
            with pytest.raises(DataLossError, match="00000000000000000000.log is gone since planning"):
                scan.to_table()
        else:
            table = scan.to_table()
            local = kafkaseg.read_arrow(s3.local, subscribe="orders")
            ((path, lo, hi, what),) = scan.metrics.vanished_segments
            assert path == segment and "skipped" in what
            assert table.num_rows == local.num_rows - sum(1 for p, o in zip(local["partition"].to_pylist(),
                                                                            local["offset"].to_pylist())
                                                          if p == 0 and lo <= o < hi)


def test_objects_the_cleaner_merged_after_planning_are_read_again_and_one_deleted_by_hand_is_lost(s3):
    """A sync of a live broker after planning: the log cleaner's compacted copy of segments 0 and 1 uploaded under
    segment 0's name, segment 1 deleted. The planned slices read the kept records again by offset, once each. A
    segment deleted by hand, whose offsets no object uploaded since the listing can hold, stays data loss (told by
    the objects' upload times)."""
    from dataclasses import replace

    import pickle

    from kafkaseg.errors import DataLossError
    from kafkaseg.scan import ScanMetrics, read_slice
    from kafkaseg.wire.batch import iter_headers

    client = pafs.S3FileSystem(endpoint_override=s3.endpoint, scheme="http")
    prefix = "merged/data"
    pafs.copy_files(s3.local, f"{BUCKET}/{prefix}", destination_filesystem=client)
    local_logs = sorted(Path(s3.local, "orders-0").glob("*.log"))
    remote = [f"{BUCKET}/{prefix}/orders-0/{log.name}" for log in local_logs]
    scan = kafkaseg.open_scan(s3.uri(prefix=prefix), assign='{"orders": [0]}', splitSize="8192")
    assert len(scan.plan.slices) > len(local_logs)
    client.delete_file(remote[1])
    later = [replace(p, listed_at_ns=p.listed_at_ns + 30 * 10**9) for p in scan.plan.slices]
    with pytest.raises(DataLossError, match=f"{local_logs[0].name}, which would hold them now, holds none of the "
                                            "offsets of the segment they were in and did not change"):
        [b for p in later for b in read_slice(p, scan.options)]
    first, second = local_logs[0].read_bytes(), local_logs[1].read_bytes()
    heads = list(iter_headers(first)) + [h._replace(position=h.position + len(first)) for h in iter_headers(second)]
    whole, kept, dropped = first + second, [], set()
    for n, h in enumerate(heads):
        if n % 3 == 1:
            dropped.update(range(h.base_offset, h.last_offset + 1))
        else:
            kept.append(whole[h.position:h.position + h.size])
    with client.open_output_stream(remote[0]) as out:
        out.write(b"".join(kept))
    # as Spark's executors get them: pickled, so the objects are opened anew (the planning process keeps the
    # handles it opened, whose sizes are the old objects': a replaced object is not detected there)
    slices = pickle.loads(pickle.dumps(scan.plan.slices))
    metrics = ScanMetrics()
    offsets = [o for p in slices for b in read_slice(p, scan.options, metrics) for o in b["offset"].to_pylist()]
    expected = kafkaseg.read_arrow(s3.local, assign='{"orders": [0]}')["offset"].to_pylist()
    assert offsets == [o for o in expected if o not in dropped]
    assert {path for path, _, _, what in metrics.vanished_segments if "read again" in what} == set(remote[:2])


def test_timeouts_in_the_query_reach_every_copy_of_the_filesystem(s3):
    """``connect_timeout``/``request_timeout`` (kafkaseg's, seconds) are taken out of the query before pyarrow
    parses it and set on the filesystem, in the form Spark executors unpickle: the plan's slices carry them."""
    import pickle

    uri = s3.uri() + "&request_timeout=30&connect_timeout=5"
    scan = kafkaseg.open_scan(uri)
    assert scan.to_table().num_rows == kafkaseg.read_arrow(s3.local).num_rows
    for piece in scan.plan.slices:
        settings = pickle.loads(pickle.dumps(piece.filesystem)).__reduce__()[1][0]
        assert (settings["request_timeout"], settings["connect_timeout"]) == (30.0, 5.0)


@pytest.mark.parametrize("query, message", [
    ("&request_timeout=0", "'request_timeout' must be a number of seconds above 0, not '0'"),
    ("&connect_timeout=soon", "'connect_timeout' must be a number of seconds above 0, not 'soon'"),
    ("&request_timeout=5&tls_verify_certificates=false", "request_timeout cannot be combined with tls_verify"),
])
def test_malformed_timeouts_are_errors_naming_the_parameter(s3, query, message):
    with pytest.raises(LayoutError, match=message):
        kafkaseg.read_arrow(s3.uri() + query)


def test_an_endpoint_that_never_answers_fails_within_its_timeouts():
    """An endpoint that accepts connections and never answers (a hung proxy) was an error only after about 100 s
    (the AWS SDK's 10 attempts that ``from_uri`` filesystems get); with the filesystem rebuilt as executors get it
    (3 attempts) and ``request_timeout=1`` it is a LayoutError naming the path within seconds."""
    import socket
    import time

    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    held = []
    stop = threading.Event()

    def accept():
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(server.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    uri = (f"s3a://deaf/data?endpoint_override=127.0.0.1:{server.getsockname()[1]}&scheme=http&region=us-east-1"
           "&request_timeout=1&connect_timeout=1")
    started = time.monotonic()
    try:
        with pytest.raises(LayoutError, match="Timeout was reached") as caught:
            kafkaseg.read_arrow(uri)
        assert repr(uri) in str(caught.value), caught.value  # the path as given, timeouts and all
    finally:
        stop.set()
        thread.join()
        for conn in held:
            conn.close()
        server.close()
    assert time.monotonic() - started < 30, "100 s is the AWS SDK's default; 3 attempts of 1 s take under 10"


@pytest.mark.parametrize("query, message", [
    ("request_timeout=5&tls_verify_certificates=false", "request_timeout cannot be combined with tls_verify"),
    ("request_timeout=0", "'request_timeout' must be a number of seconds above 0"),
    ("connect_timeout=1&request_timeout=2&region=x&bogus=1", "Unexpected query parameter"),
])
def test_uri_errors_quote_the_uri_as_given(query, message):
    """The messages about an S3 URI's query quoted it as pyarrow was handed it (``s3a://`` read as ``s3://``, the
    timeouts kafkaseg takes taken out): "request_timeout cannot be combined ..." quoted a URI without it. They quote
    what was typed, its secret masked."""
    from kafkaseg.storage.fs import open_filesystem, redact

    uri = f"s3a://KEY:SECRET@bucket/data?endpoint_override=127.0.0.1:9&scheme=http&{query}"
    with pytest.raises(LayoutError, match=message) as caught:
        open_filesystem(uri)
    assert repr(redact(uri)) in str(caught.value) and "SECRET" not in str(caught.value), caught.value


def test_timeout_parameters_are_decoded_and_given_once():
    """A query value may be %-encoded (``2%2E5`` is 2.5, as pyarrow decodes its own parameters); a timeout given
    twice is an error naming it, not the last one silently (pyarrow keeps the first of its own)."""
    from kafkaseg.storage.fs import _s3_timeouts

    assert _s3_timeouts("s3://b/k?region=x&request_timeout=2%2E5") == ("s3://b/k?region=x", {"request_timeout": 2.5})
    with pytest.raises(LayoutError, match="'request_timeout' is given twice"):
        _s3_timeouts("s3://b/k?request_timeout=5&region=x&request_timeout=60")


def test_verify_on_s3_reports_what_it_reports_for_disk_with_several_log_dirs_and_bad_checkpoints(s3, tmp_path,
                                                                                                  capsys):
    """verify checks partitions on object storage 16 at a time, each in its own report: with more partitions than
    threads, two log dirs and a corrupt checkpoint in each (reported once per log dir, before the partitions) and
    a corrupt batch, the report is the local one, in the same order."""
    ld1, ld2 = tmp_path / "ld1", tmp_path / "ld2"
    write_data_dir(ld1, [TopicSpec("a", partitions=20, records_per_partition=40, records_per_batch=10)], seed=3)
    write_data_dir(ld2, [TopicSpec("b", partitions=3, records_per_partition=40, records_per_batch=10)], seed=4)
    (ld1 / "recovery-point-offset-checkpoint").write_text("0\n2\na 0 x\n")
    (ld2 / "replication-offset-checkpoint").write_text("0\n9\nb 0 40\n")
    log = ld2 / "b-1" / "00000000000000000000.log"
    raw = bytearray(log.read_bytes())
    raw[200] ^= 0xFF
    log.write_bytes(bytes(raw))
    client = pafs.S3FileSystem(endpoint_override=s3.endpoint, scheme="http")
    pafs.copy_files(str(tmp_path), f"{BUCKET}/multi", destination_filesystem=client)
    s3.take()
    local = _cli(["verify", "--json", str(ld1), str(ld2)], capsys)
    remote = _cli(["verify", "--json"] + [f"s3://{BUCKET}/multi/{d}?endpoint_override={s3.endpoint}&scheme=http"
                                          for d in ("ld1", "ld2")], capsys)

    def same(text: str) -> str:
        return (text.replace(f"?endpoint_override={s3.endpoint}&scheme=http", "")
                .replace(f"s3://{BUCKET}/multi", "<dir>").replace(f"{BUCKET}/multi", "<dir>")
                .replace(str(tmp_path), "<dir>"))

    import json

    problems = json.loads(local[1])["problems"]
    checkpoints = [p for p in problems if p["file"].endswith(("recovery-point-offset-checkpoint",
                                                              "replication-offset-checkpoint"))]
    assert local[0] == 1 and len(checkpoints) == 2 and problems[:2] == checkpoints, problems[:3]
    assert any("b-1" in p["file"] and p["severity"] == "error" for p in problems)
    assert (remote[0], same(remote[1]), same(remote[2])) == (local[0], same(local[1]), same(local[2]))
    assert not _writes(s3.take())


def test_rows_read_ahead_in_small_blocks_equal_rows_from_disk(s3, monkeypatch):
    """The read-ahead with blocks and decode chunks far smaller than a segment (and than some batches): every
    read spans blocks, batches are cut by both, and reads go back over a cut batch. Rows as from disk, each block
    fetched once."""
    import functools

    from kafkaseg import scan as scan_module

    monkeypatch.setattr(scan_module, "REMOTE_READ_BYTES", 1500)
    monkeypatch.setattr(scan_module, "read_slice", functools.partial(scan_module.read_slice, read_chunk_bytes=700))
    options = {"includeHeaders": True, "kafka.isolation.level": "read_committed"}
    local = kafkaseg.read_arrow(s3.local, **options)
    s3.take()
    remote = kafkaseg.read_arrow(s3.uri(), **options)
    assert local.num_rows > 0 and _normalized(remote).equals(_normalized(local))
    ranges = [(r.key, r.range) for r in s3.take() if r.kind == "GET" and r.range and r.key.endswith(".log")]
    assert len(ranges) == len(set(ranges)) and len(ranges) > 50


def test_tls_verify_certificates_false_survives_pickling_to_executors(s3, tmp_path, monkeypatch):
    """An HTTPS endpoint with a self-signed certificate (an on-premises MinIO, say), read with
    ``tls_verify_certificates=false``: the slices a Spark driver pickles for its executors keep the setting (pyarrow's
    own pickle drops it, and every executor read failed on the certificate)."""
    import pickle

    from pyspark import cloudpickle
    from werkzeug.serving import make_server, make_ssl_devcert

    from kafkaseg.options import ReadOptions
    from kafkaseg.planning import plan_scan
    from kafkaseg.scan import read_slice

    cert, key = make_ssl_devcert(str(tmp_path / "dev"), host="127.0.0.1")
    server = make_server("127.0.0.1", 0, moto_server.DomainDispatcherApplication(moto_server.create_backend_app),
                         threaded=True, ssl_context=(cert, key))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        endpoint = f"127.0.0.1:{server.port}"
        uri = f"s3://tls-bucket/data?endpoint_override={endpoint}&scheme=https&tls_verify_certificates=false"
        client, _ = pafs.FileSystem.from_uri(uri + "&allow_bucket_creation=true")
        client.create_dir("tls-bucket")
        pafs.copy_files(f"{s3.local}/orders-0", "tls-bucket/data/orders-0", destination_filesystem=client)
        with pytest.raises(LayoutError, match="tls-bucket"):  # the certificate is refused without the setting
            kafkaseg.read_arrow(uri.replace("&tls_verify_certificates=false", ""))
        expected = kafkaseg.read_arrow(f"{s3.local}/orders-0")
        plan = plan_scan(uri, ReadOptions())
        for dumps, loads in ((pickle.dumps, pickle.loads), (cloudpickle.dumps, cloudpickle.loads)):
            pieces = [loads(dumps(piece)) for piece in plan.slices]
            batches = [b for piece in pieces for b in read_slice(piece, ReadOptions())]
            got = pa.Table.from_batches(batches)
            assert got.num_rows == expected.num_rows > 0
            assert got.column("value").equals(expected.column("value"))
    finally:
        server.shutdown()
        thread.join()


def test_filesystems_pickled_as_their_uri_are_not_shared_so_objects_read_fresh(s3):
    """Each open of a URI with tls_verify_certificates gets its own filesystem (its open files and cached blocks
    live as long as it does): a replaced object (a sync uploading a broker's newer checkpoint) is read anew."""
    import pickle

    from kafkaseg.storage import fs

    client = pafs.S3FileSystem(endpoint_override=s3.endpoint, scheme="http")
    key = f"{BUCKET}/scratch/replication-offset-checkpoint"
    uri = f"s3://{BUCKET}/scratch?endpoint_override={s3.endpoint}&scheme=http&tls_verify_certificates=false"

    def put(data: bytes) -> None:
        with client.open_output_stream(key) as out:
            out.write(data)

    put(b"0\n1\norders 0 100\n")
    first, path = fs.open_filesystem(uri)
    assert fs.read_small_file(path + "/replication-offset-checkpoint", first) == b"0\n1\norders 0 100\n"
    put(b"0\n2\norders 0 400\norders 1 380\n")
    second, path = fs.open_filesystem(uri)
    assert second is not first
    assert fs.read_small_file(path + "/replication-offset-checkpoint", second) == b"0\n2\norders 0 400\norders 1 380\n"
    assert pickle.loads(pickle.dumps(second)).get_file_info(key).size == 30  # rebuilt from the URI
    assert fs._reduce_s3(second)[0] is fs._s3_from_uri
    entries = len(fs._TLS_URIS)
    del first, second
    import gc

    gc.collect()
    assert len(fs._TLS_URIS) <= entries - 2  # entries go with their filesystems


# -- tiered-storage copies ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("layout, copy", [("aiven", {}), ("local", {}),
                                          ("aiven", {"compression": True, "chunk_size": 3000}),
                                          ("aiven", {"compression": True, "chunk_size": 3000, "encrypted": True})])
def test_tiered_copies_and_their_log_dir_on_s3_read_as_on_disk(s3, tmp_path, layout, copy):
    """A bucket of remote copies beside a backup of the log dir (its oldest segments deleted by local retention):
    read alone and together, from S3 as from disk; a plan reads each manifest and index object once. Encrypted
    copies open with a key ring whose private key file is in the bucket too."""
    from kafkaseg.testing.tiered import aiven_encryptor, make_key_pair
    from tests.test_storage_tiered import _tiered_topic

    ring = {}
    if copy.pop("encrypted", False):
        key_pair = make_key_pair(tmp_path / "keys", "k1")
        copy["encryptor"] = aiven_encryptor(key_pair)
    data, remote, whole, _ = _tiered_topic(tmp_path, layout, **copy)
    layout += ("-compressed" if copy else "") + ("-encrypted" if "encryptor" in copy else "")
    client = pafs.S3FileSystem(endpoint_override=s3.endpoint, scheme="http")
    pafs.copy_files(str(data), f"{BUCKET}/tiered-{layout}/data", destination_filesystem=client)
    pafs.copy_files(str(remote), f"{BUCKET}/tiered-{layout}/remote", destination_filesystem=client)
    if "encryptor" in copy:
        pafs.copy_files(str(key_pair.private), f"{BUCKET}/tiered-{layout}/keys/k1.pem", destination_filesystem=client)
        ring = {"tieredKeyRing": "k1=" + s3.uri("keys/k1.pem", prefix=f"tiered-{layout}"),
                "kafka.isolation.level": "read_committed"}
    data_uri = s3.uri("data", prefix=f"tiered-{layout}")
    remote_uri = s3.uri("remote", prefix=f"tiered-{layout}")
    columns = ["topic", "partition", "offset", "timestamp", "key", "value"]
    for given, on_disk in (([remote_uri], [str(remote)]), ([data_uri, remote_uri], [str(data), str(remote)])):
        s3.take()
        scan = kafkaseg.open_scan(given, **{"kafka.isolation.level": "read_committed", **ring})
        requests = s3.take()
        gets = _per_object(requests, "GET")
        assert {k: n for k, n in gets.items() if n > 1 and k.endswith(("manifest", "indexes", "index"))} == {}
        expected = kafkaseg.read_arrow(on_disk, **{"kafka.isolation.level": "read_committed", **ring}).select(columns)
        assert scan.to_table().select(columns).equals(expected)
    assert expected.equals(whole.select(columns))
    assert not _writes(s3.take())


@pytest.mark.parametrize("options", [{"splitSize": "8192"},
                                     {"subscribe": "orders", "startingOffsets": '{"orders": {"0": 500, "1": 700}}'}],
                         ids=["cut", "pushed-down-start"])
def test_a_slice_starting_mid_segment_is_read_in_one_request(s3, options):
    """A slice starting mid-segment (a cut, a pushed-down start) is fetched with one GET, as one starting at a
    segment's first byte: the check of its first batch (scan._SliceDecoder.check_start: its header, and the
    headers from the index entry before it) and the look at the next batch's offset field past its end take their
    bytes from the blocks the read fetches. Found in review: each was a request of its own (up to three GETs a
    slice, the first-batch check's one of the file from byte 0)."""
    from kafkaseg.scan import read_slice

    scan = kafkaseg.open_scan(s3.uri(), **options)
    assert any(piece.start_position > 0 for piece in scan.plan.slices)
    batches = []
    for piece in scan.plan.slices:
        s3.take()
        batches.extend(read_slice(piece, scan.options))
        gets = [r.range for r in s3.take() if r.kind == "GET"]
        assert len(gets) == 1, (piece.log_path, piece.start_position, gets)
    expected = kafkaseg.read_arrow(s3.local, **options)
    assert _normalized(pa.Table.from_batches(batches)).equals(_normalized(expected))


def test_an_emptied_bucket_with_the_metadata_listing_live_copies_is_data_loss(s3, tmp_path):
    """An S3 bucket of tiered-storage copies emptied (every copy gone), the log dir's __remote_log_metadata
    listing them live: a read from earliest loses them, named, as it does a few copies missing (not a LayoutError
    refusing the bucket)."""
    from kafkaseg.errors import DataLossError
    from tests.test_remote_log_metadata_live import _tiered
    from kafkaseg.testing.tiered import write_remote_log_metadata

    data, _, whole, written, events, _, number = _tiered(tmp_path, "aiven")
    write_remote_log_metadata(data, events, partition=number)
    client = pafs.S3FileSystem(endpoint_override=s3.endpoint, scheme="http", allow_bucket_creation=True)
    client.create_dir("emptied")
    pafs.copy_files(str(data), f"{BUCKET}/emptied-bucket/data", destination_filesystem=client)
    paths = [s3.uri("data", prefix="emptied-bucket"), s3.uri("", bucket="emptied", prefix="")]
    s3.take()
    with pytest.raises(DataLossError, match=written[0].name[21:-4]):
        kafkaseg.read_arrow(paths, subscribe="orders")
    first_local = int(sorted((data / "orders-0").glob("*.log"))[0].name[:20])
    got = kafkaseg.read_arrow(paths, subscribe="orders", failOnDataLoss="false").select(whole.column_names)
    assert got.equals(whole.filter(pa.compute.greater_equal(whole["offset"], first_local)))
    assert not _writes(s3.take())


@pytest.mark.parametrize("layout", ["aiven", "local"])
def test_a_partitions_copies_gone_from_a_bucket_holding_others_are_data_loss(s3, tmp_path, layout):
    """A bucket still holding one partition's tiered-storage copies and none of another's (on an object store a
    partition whose objects are all deleted has no folder at all), the log dir's __remote_log_metadata listing them
    live: a read of the topic loses them, named, instead of reading the other partition alone without a word."""
    from kafkaseg.errors import DataLossError
    import shutil

    from tests.test_remote_log_metadata_live import _drop, _two_partitions_tiered

    data, remote, whole, written, _, _ = _two_partitions_tiered(tmp_path, layout)
    for log in written[1]:
        _drop(log)
    shutil.rmtree(written[1][0].parent)  # (copied, an empty folder would be an empty directory marker object)
    client = pafs.S3FileSystem(endpoint_override=s3.endpoint, scheme="http", allow_bucket_creation=True)
    bucket = f"one-partition-{layout}"
    client.create_dir(bucket)
    pafs.copy_files(str(remote), f"{bucket}/tiered", destination_filesystem=client)
    pafs.copy_files(str(data), f"{BUCKET}/{bucket}/data", destination_filesystem=client)
    paths = [s3.uri("data", prefix=bucket), s3.uri("tiered", bucket=bucket, prefix="")]
    s3.take()
    with pytest.raises(DataLossError, match=written[1][0].name[21:-4]):
        kafkaseg.read_arrow(paths, subscribe="orders")
    first_local = int(sorted((data / "orders-1").glob("*.log"))[0].name[:20])
    got = kafkaseg.read_arrow(paths, subscribe="orders", failOnDataLoss="false").select(whole.column_names)
    pc = pa.compute
    kept = pc.or_(pc.equal(whole["partition"], 0), pc.greater_equal(whole["offset"], first_local))
    assert got.sort_by([("partition", "ascending"), ("offset", "ascending")]).equals(whole.filter(kept))
    assert not _writes(s3.take())


def test_a_folder_above_a_log_dir_names_it_as_a_uri_to_read(s3, capsys):
    """The hint of the error for a folder above a log dir named the log dir as ``bucket/key``, which read as given
    is a local path (found giving a bucket's prefix one level too high): it is now the URI to read, the query of
    the one given kept (and a URI's secret masked)."""
    with pytest.raises(LayoutError, match="; it holds one: " + re.escape(s3.uri()) + r" \(read that instead\)$"):
        kafkaseg.read_arrow(s3.uri("", prefix="backups"))
    assert cli_main(["describe", s3.uri("", prefix="backups") + "&region=us-east-1"]) == 2
    assert f"it holds one: {s3.uri()}&region=us-east-1 (read that instead)" in capsys.readouterr().err
    with pytest.raises(LayoutError) as caught:
        kafkaseg.read_arrow(s3.uri("", prefix="backups").replace("s3://", "s3://AKID:s3cret@"))
    assert str(caught.value).endswith(f"it holds one: {s3.uri().replace('s3://', 's3://AKID:***@')} (read that instead)")
    assert cli_main(["describe", s3.uri()]) == 0  # what the hint says reads
