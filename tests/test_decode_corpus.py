"""Conformance: every record set in ../shared/corpus decodes exactly as kafka-python decodes it, with both twins."""

from __future__ import annotations

import csv

import pytest

from kafkaseg.decode import _kernel_py, DecodeRequest
from kafkaseg.decode.api import STOP_END, STOP_PARTIAL
from kafkaseg.errors import CorruptBatchError, KafkaSegError
from tests.oracle import kafka_python_records, kafkaseg_rows

try:
    from kafkaseg.decode import _kernel as _compiled
except ImportError:  # pragma: no cover - the CI installs with a compiler
    _compiled = None

KERNELS = [pytest.param(_kernel_py, id="pure"),
           pytest.param(_compiled, id="compiled",
                        marks=pytest.mark.skipif(_compiled is None, reason="compiled kernel not built"))]


def _manifest(corpus_dir):
    with open(corpus_dir / "MANIFEST.tsv", newline="") as fh:
        return list(csv.DictReader(fh, delimiter="\t"))


def _is_nonstandard(row) -> bool:
    return "/nonstandard/" in row["path"] or "/handmade/" in row["path"]


@pytest.fixture(scope="module")
def manifest(corpus_dir):
    return _manifest(corpus_dir)


# Files where Apache Kafka's own reader and kafka-python disagree: kafkaseg follows Kafka and raises.
KAFKA_REJECTS = {
    "fixtures/sarama/message_test.emptyGzipMessage.msgset.bin":
        "AbstractLegacyRecordBatch.DeepRecordsIterator: 'Found invalid compressed record set with no inner records'",
}

# Files kafka-python cannot read but Apache Kafka's consumer does: kafkaseg follows Kafka. Each maps to what the
# Java consumer returns, (offset, timestamp, timestampType, key, value) per record, worked out by hand from the bytes
# and Kafka's rules, not from kafkaseg's output.
KAFKA_READS = {
    # Sarama's v1 lz4 wrapper around two v0 messages with empty values (Sarama's test asserts two messages).
    # DeepRecordsIterator checks matching magic only when a broker validates a produce request (the KAFKA-4298
    # fix, so logs 0.10.1.0's cleaner wrote stay readable); wrapper offset 0 means absolute inner offsets
    # ("produce data from certain versions of librdkafka"); a v0 record has no timestamp; the type is the
    # wrapper's, CreateTime.
    "fixtures/sarama/nonstandard/message_test.emptyBulkLZ4Message.msgset.bin":
        [(0, -1, 0, None, b""), (1, -1, 0, None, b"")],
}

FULL = DecodeRequest(include_control=True, include_headers=True, include_metadata=True)


class _Joined:
    """Results of decoding a fixture batch by batch, joined (fixtures are record sets, not logs: their batches
    need not have increasing offsets, which kafkaseg rightly treats as corruption inside a segment)."""

    def __init__(self, parts, consumed, stop):
        import pyarrow as pa

        self.columns = {name: pa.concat_arrays([p.columns[name] for p in parts]) for name in parts[0].columns}
        self.num_rows = sum(p.num_rows for p in parts)
        self.consumed = consumed
        self.stop = stop


def decode_record_set(kernel, data: bytes, path: str, request: DecodeRequest):
    """Decode a corpus file: a real segment as one buffer, a client fixture one batch at a time."""
    if path.startswith("segments/"):
        return kernel.decode(data, request)
    parts, pos, stop = [], 0, STOP_END
    while pos < len(data):
        size = int.from_bytes(data[pos + 8:pos + 12], "big", signed=True) if len(data) - pos >= 12 else -1
        span = memoryview(data)[pos:pos + 12 + size] if size >= 0 else memoryview(data)[pos:]
        res = kernel.decode(span, request)
        parts.append(res)
        pos += res.consumed
        stop = res.stop
        if res.stop != STOP_END:
            break
    if not parts:
        return kernel.decode(data, request)
    return _Joined(parts, pos, stop)


@pytest.mark.corpus
@pytest.mark.parametrize("kernel", KERNELS)
def test_every_standard_corpus_file_matches_kafka_python(kernel, corpus_dir, manifest):
    checked = 0
    for row in manifest:
        if _is_nonstandard(row) or row["decode_error"]:
            continue
        data = (corpus_dir / row["path"]).read_bytes()
        if row["path"] in KAFKA_REJECTS:
            with pytest.raises(CorruptBatchError, match="no inner records"):
                decode_record_set(kernel, data, row["path"], FULL)
            continue
        expected = kafka_python_records(data)
        result = decode_record_set(kernel, data, row["path"], DecodeRequest(
            path=row["path"], include_control=True, include_headers=True, include_metadata=True))
        got = kafkaseg_rows(result)
        assert len(got) == len(expected) == int(row["records"]), row["path"]
        assert got == expected, row["path"]
        # Whatever kafka-python left unread (a partial trailing batch), kafkaseg reports as partial, not as data.
        if result.consumed < len(data):
            assert result.stop == STOP_PARTIAL, row["path"]
        else:
            assert result.stop == STOP_END
        checked += 1
    assert checked > 100


@pytest.mark.corpus
@pytest.mark.parametrize("kernel", KERNELS)
def test_nonstandard_corpus_files_are_rejected_or_left_unread(kernel, corpus_dir, manifest):
    """Bytes no broker writes must raise a kafkaseg error or stay unconsumed (reported as a partial tail)."""
    for row in manifest:
        if not _is_nonstandard(row) or row["path"] in KAFKA_READS:
            continue
        data = (corpus_dir / row["path"]).read_bytes()
        try:
            result = decode_record_set(kernel, data, row["path"],
                                       DecodeRequest(path=row["path"], include_control=True))
        except KafkaSegError as err:
            assert row["path"] in str(err)
            continue
        assert result.consumed < len(data), f"{row['path']} decoded silently: {kafkaseg_rows(result)}"


@pytest.mark.corpus
@pytest.mark.parametrize("kernel", KERNELS)
def test_corpus_files_only_kafka_reads_decode_as_its_consumer_does(kernel, corpus_dir):
    for path, expected in KAFKA_READS.items():
        res = decode_record_set(kernel, (corpus_dir / path).read_bytes(), path, FULL)
        assert res.stop == STOP_END
        rows = [(r["offset"], r["timestamp"], r["timestampType"], r["key"], r["value"]) for r in kafkaseg_rows(res)]
        assert rows == expected, path


@pytest.mark.corpus
def test_twins_agree_on_every_corpus_file_with_all_options(corpus_dir, manifest):
    if _compiled is None:
        pytest.skip("compiled kernel not built")
    for row in manifest:
        data = (corpus_dir / row["path"]).read_bytes()
        for req in (FULL, DecodeRequest(), DecodeRequest(verify_crc=False, lenient=True, include_headers=True)):
            outcomes = []
            for kernel in (_kernel_py, _compiled):
                try:
                    res = kernel.decode(data, req)
                    outcomes.append(("ok", {k: v.to_pylist() for k, v in res.columns.items()}, res.consumed,
                                     res.stop, res.stats.corrupt_batches, res.stats.skipped_control_batches))
                except KafkaSegError as err:
                    outcomes.append(("error", type(err), err.position))
            assert outcomes[0] == outcomes[1], row["path"]
