"""``kafkaseg dump --deep-iteration`` builds the record lines of v2 data batches column-wise (``dump._COLUMNAR``),
and so does ``--json`` its batch objects: the output must be the per-record path's, byte for byte, stdout and
stderr. Both paths run here on generated segments (every codec, headers, null and invalid-UTF-8 keys and values,
text JSON must escape, transactions and control batches, legacy entries and wrappers among v2 batches, compacted
gaps, offsets going back, bad CRCs, undecodable batches, trailing bytes) with chunks small enough that a segment
spans many, and on every log of the shared corpus."""

from __future__ import annotations

import io
import random
import shutil

import pytest

from kafkaseg.cli import dump
from kafkaseg.cli.dump import DumpOptions, dump_files
from kafkaseg.testing import (
    LOG_APPEND_TIME,
    ControlType,
    Record,
    build_batch_v2,
    build_control_batch,
    build_legacy_entries,
    build_legacy_wrapper,
)

CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
TEXT_OPTIONS = {
    "deep": DumpOptions(deep_iteration=True),
    "print": DumpOptions(print_data_log=True),
    "print-skip-metadata": DumpOptions(print_data_log=True, skip_record_metadata=True),
    "deep-skip-metadata": DumpOptions(deep_iteration=True, skip_record_metadata=True),
}
JSON_OPTIONS = {
    "json-deep": DumpOptions(json=True, deep_iteration=True),
    "json-print": DumpOptions(json=True, print_data_log=True),
    "json-print-skip-metadata": DumpOptions(json=True, print_data_log=True, skip_record_metadata=True),
}


class _RawKey(str):
    """A header key the writer stores as these bytes (invalid UTF-8 included) rather than encoding it."""

    def __new__(cls, raw: bytes):
        key = super().__new__(cls, raw.hex())
        key.raw = raw
        return key

    def encode(self, *args, **kwargs) -> bytes:
        return self.raw


def _bytes(rng: random.Random) -> bytes | None:
    kind = rng.randrange(10)
    if kind == 9:  # what a JSON string escapes (quotes, backslashes, control characters) and what it does not
        return rng.choice([b'{"a": "b\\c"}', b"tab\there\r\n\x00\x1f\x7f", "\u2028\u2029 \ud7ff".encode()])
    if kind == 0:
        return None
    if kind == 1:
        return b""
    if kind == 2:  # malformed UTF-8: a lone continuation, a truncated sequence, an encoded surrogate, an overlong
        return rng.choice([b"\x80", b"ab\xe2\x82", b"\xed\xa0\x80x", b"\xc0\xaf", b"\xf4\x90\x80\x80", b"\xff\xfe"])
    if kind == 3:
        return bytes(rng.randrange(256) for _ in range(rng.randrange(1, 40)))
    if kind == 4:
        return "ключ-é-漢字-🎉 | payload: x\n".encode("utf-8")
    return f"v{rng.randrange(10**6)}".encode() * rng.randrange(1, 4)


def _headers(rng: random.Random) -> tuple:
    keys = ["h", "trace-id", "", "é", "a,b", _RawKey(b"\xff\x80k"), _RawKey(b"\xed\xa0\x80"), 'q"\\\x01\n']
    return tuple((rng.choice(keys), _bytes(rng)) for _ in range(rng.choice([0, 0, 1, 3])))


def _segment(rng: random.Random, batches: int) -> bytes:
    """Batches of every kind in one log; offsets mostly increase with compaction's gaps, sometimes go back."""
    out = []
    offset, ts = rng.randrange(0, 1000), 1_700_000_000_000
    for _ in range(batches):
        kind = rng.randrange(20)
        if kind == 0:
            entry = build_control_batch(offset, ts, rng.choice([ControlType.COMMIT, ControlType.ABORT]),
                                        producer_id=7, producer_epoch=1, coordinator_epoch=3)
            out.append(entry.data)
            offset += 1
            continue
        if kind == 1:
            records = [Record(offset + i, ts + i, _bytes(rng), _bytes(rng)) for i in range(rng.randrange(1, 4))]
            out.extend(e.data for e in build_legacy_entries(records, rng.choice([0, 1])))
            offset = records[-1].offset + 1
            continue
        if kind == 2:
            records = [Record(offset + i, ts + i, _bytes(rng), _bytes(rng) or b"x") for i in range(rng.randrange(1, 5))]
            out.append(build_legacy_wrapper(records, rng.choice([0, 1]), rng.choice(["gzip", "snappy", "lz4"])).data)
            offset = records[-1].offset + 1
            continue
        if kind == 3:  # emptied by the cleaner: no records, the producer's state kept
            out.append(build_batch_v2([], base_offset=offset, last_offset=offset + 2, producer_id=9,
                                      producer_epoch=0, base_sequence=5, empty_timestamp=ts).data)
            offset += 3
            continue
        if kind == 4:
            offset = max(0, offset - rng.randrange(1, 20))  # goes back: "Non-consecutive offsets"
        records = []
        for _ in range(rng.randrange(1, 30)):
            records.append(Record(offset, ts + rng.randrange(-5000, 5000), _bytes(rng), _bytes(rng), _headers(rng)))
            offset += 1 + (rng.randrange(5) if rng.random() < 0.2 else 0)  # compacted gaps
        append_time = rng.random() < 0.2
        transactional = rng.random() < 0.2
        batch = build_batch_v2(records, codec=rng.choice(CODECS),
                               timestamp_type=LOG_APPEND_TIME if append_time else 0,
                               log_append_time=ts + 99 if append_time else None, is_transactional=transactional,
                               producer_id=7 if transactional else rng.choice([-1, 12]),
                               producer_epoch=1, base_sequence=rng.choice([-1, 0, 2**31 - 3]),
                               partition_leader_epoch=rng.randrange(3),
                               delete_horizon_ms=ts if rng.random() < 0.05 else None).data
        if rng.random() < 0.05:  # a flipped bit in the last byte: CRC mismatch, maybe undecodable
            batch = batch[:-1] + bytes([batch[-1] ^ 0x01])
        if rng.random() < 0.02:  # records that do not parse: the batch's error, record by record
            batch = batch[:61] + b"\x7f" * (len(batch) - 61)
        out.append(batch)
        ts += 1000
    if rng.random() < 0.3:
        out.append(b"\x00\x00\x00\x00\x00\x00\x00\x09\x00\x00")  # trailing bytes
    return b"".join(out)


def _dump_both(files: list[str], options: DumpOptions, monkeypatch) -> tuple[tuple[str, str], tuple[str, str]]:
    """(stdout, stderr) of the per-record path, then of the columnar path."""
    runs = []
    for columnar in (False, True):
        monkeypatch.setattr(dump, "_COLUMNAR", columnar)
        out, err = io.StringIO(), io.StringIO()
        dump_files(files, options, out=out, err=err)
        runs.append((out.getvalue(), err.getvalue()))
    return runs[0], runs[1]


def _count_chunks(monkeypatch, name: str = "_chunk_text") -> list:
    calls = []
    real = getattr(dump, name)

    def counting(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(dump, name, counting)
    return calls


@pytest.mark.parametrize("seed", range(12))
@pytest.mark.parametrize("chunk_bytes, chunk_records", [(1, 1 << 20), (3000, 7), (1 << 22, 1 << 20)])
def test_generated_segments_print_the_same_bytes_both_ways(tmp_path, monkeypatch, seed, chunk_bytes, chunk_records):
    rng = random.Random(seed)
    log = tmp_path / f"{rng.randrange(100):020d}.log"
    log.write_bytes(_segment(rng, 60))
    monkeypatch.setattr(dump, "_CHUNK_BYTES", chunk_bytes)
    monkeypatch.setattr(dump, "_CHUNK_RECORDS", chunk_records)
    chunks = _count_chunks(monkeypatch)
    json_chunks = _count_chunks(monkeypatch, "_chunk_json")
    for name, options in {**TEXT_OPTIONS, **JSON_OPTIONS}.items():
        slow, fast = _dump_both([str(log)], options, monkeypatch)
        assert fast[0] == slow[0], name
        assert fast[1] == slow[1], name
    assert chunks and json_chunks, "the columnar path was never taken"


@pytest.mark.parametrize("decoder", ["offsets", "transaction", "share-group-state", "cluster-metadata",
                                     "remote-log-metadata"])
def test_internal_topic_decoders_print_the_same_bytes_both_ways(tmp_path, monkeypatch, decoder):
    """The decoders' texts (their errors for bytes that are not such records, mostly) per record in both."""
    log = tmp_path / f"{0:020d}.log"
    log.write_bytes(_segment(random.Random(99), 40))
    monkeypatch.setattr(dump, "_CHUNK_BYTES", 2000)
    for skip in (False, True):
        for as_json in (False, True):
            slow, fast = _dump_both([str(log)], DumpOptions(decoder=decoder, skip_record_metadata=skip, json=as_json),
                                    monkeypatch)
            assert fast == slow


def test_batches_that_fail_to_decode_are_reported_once_each_in_walk_order(tmp_path, monkeypatch):
    """A chunk the decoder refuses is printed batch by batch from that call on: the errors, their order and the
    records before and after are the per-record path's."""
    good = [build_batch_v2([Record(o, 1_700_000_000_000, b"k", b"v")], codec="lz4").data for o in range(6)]
    bad = [b[:61] + b"\x7f" * (len(b) - 61) for b in good]
    log = tmp_path / f"{0:020d}.log"
    log.write_bytes(b"".join([good[0], bad[1], good[2], good[3], bad[4], good[5]]))
    monkeypatch.setattr(dump, "_CHUNK_BYTES", 1 << 20)
    slow, fast = _dump_both([str(log)], DumpOptions(print_data_log=True), monkeypatch)
    assert fast == slow
    assert slow[1].count("Error dumping") == 2
    slow, fast = _dump_both([str(log)], DumpOptions(print_data_log=True, json=True), monkeypatch)
    assert fast == slow
    assert slow[0].count('"problem": "error"') == 2


@pytest.mark.corpus
def test_every_corpus_log_prints_the_same_bytes_both_ways(corpus_dir, tmp_path, monkeypatch):
    """Every .log and KRaft .checkpoint of the corpus, and every client fixture (.bin) dumped as a .log, with and
    without --print-data-log and with the decoder its topic takes."""
    files = sorted(p for p in corpus_dir.rglob("*") if p.is_file() and p.suffix in (".log", ".checkpoint", ".bin"))
    assert files
    monkeypatch.setattr(dump, "_CHUNK_BYTES", 64 << 10)
    chunks = _count_chunks(monkeypatch)
    json_chunks = _count_chunks(monkeypatch, "_chunk_json")
    differ = []
    for i, path in enumerate(files):
        if path.suffix == ".bin":
            copy = tmp_path / f"{i:020d}.log"
            shutil.copyfile(path, copy)
            path = copy
        topic = path.parent.name
        option_sets = [DumpOptions(deep_iteration=True), DumpOptions(print_data_log=True, skip_record_metadata=True)]
        decoder = ("offsets" if topic.startswith("__consumer_offsets") else "transaction"
                   if topic.startswith("__transaction_state") else "cluster-metadata"
                   if topic.startswith("__cluster_metadata") or path.suffix == ".checkpoint" else None)
        option_sets.append(DumpOptions(print_data_log=True, decoder=decoder))
        option_sets += [DumpOptions(json=True, deep_iteration=True), DumpOptions(json=True, print_data_log=True),
                        DumpOptions(json=True, print_data_log=True, decoder=decoder)]
        for options in option_sets:
            slow, fast = _dump_both([str(path)], options, monkeypatch)
            if slow != fast:
                differ.append((str(path), options))
    assert not differ
    assert chunks and json_chunks, "the columnar path was never taken"


def test_the_text_held_at_once_stays_small_for_segments_of_tiny_records(tmp_path):
    """Records of a few bytes compress to almost nothing: a 4 MiB chunk holds millions. The text of one decode
    call is built (and held, with its columns) at once, so a call must end after some tens of thousands of records,
    not a million (~100 MB of text and ~600 MB peak RSS, against ~120 MB for the per-record path)."""
    log = tmp_path / f"{0:020d}.log"
    log.write_bytes(b"".join(build_batch_v2([Record(b * 50_000 + i, 1, None, b"") for i in range(50_000)],
                                            codec="zstd").data for b in range(8)))
    writes = []

    class Sink(io.StringIO):
        def write(self, text):
            writes.append(len(text))
            return super().write(text)

    for options in (DumpOptions(print_data_log=True), DumpOptions(print_data_log=True, json=True)):
        writes.clear()
        dump_files([str(log)], options, out=Sink(), err=io.StringIO())
        assert sum(writes) > 30 << 20  # (all 400,000 records were written)
        assert max(writes) < 16 << 20, options
