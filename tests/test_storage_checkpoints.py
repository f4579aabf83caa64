"""Checkpoint, meta.properties, partition.metadata and producer snapshot parsing (kafkaseg.storage)."""

from __future__ import annotations

import struct
import uuid

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafkaseg.errors import CorruptCheckpointError
from kafkaseg.storage import checkpoints as ck
from kafkaseg.storage.producer_snapshot import (ProducerSnapshotEntry, encode_producer_snapshot,
                                                parse_producer_snapshot, read_producer_snapshot)

SMART = "segments/smartassets__backend-server/51801d05/kafka/data"
RAVI = "segments/RaviAzzuraPutra__LATIHAN-MICROSERVICE-NEW/f8f5c464/kafka/data"


def _naive_offset_checkpoint(text: str) -> dict:
    lines = text.splitlines()
    return {(t, int(p)): int(o) for t, p, o in (line.split() for line in lines[2:])}


def test_corpus_offset_checkpoints_match_a_naive_reading(corpus_dir):
    seen = 0
    for path in sorted(corpus_dir.glob("segments/*/*/kafka*/data/*-checkpoint")):
        if path.name == "cleaner-offset-checkpoint" and path.stat().st_size == 0:
            assert ck.read_offset_checkpoint(str(path)) == {}
            continue
        parsed = ck.read_offset_checkpoint(str(path))
        text = path.read_text()
        assert parsed == _naive_offset_checkpoint(text)
        assert len(parsed) == int(text.splitlines()[1])
        seen += 1
    assert seen >= 6
    hw = ck.read_offset_checkpoint(str(corpus_dir / RAVI / "replication-offset-checkpoint"))
    assert hw[("order_created", 0)] == 2 and hw[("__consumer_offsets", 0)] == 6


def test_corpus_leader_epochs_meta_and_partition_metadata(corpus_dir):
    epochs = ck.read_leader_epoch_checkpoint(str(corpus_dir / RAVI / "__cluster_metadata-0/leader-epoch-checkpoint"))
    assert [tuple(e) for e in epochs] == [(1, 0), (2, 14198), (3, 17511), (4, 30056)]
    meta = ck.read_meta_properties(str(corpus_dir / RAVI / "meta.properties"))
    assert (meta.version, meta.node_id, meta.cluster_id) == (1, 1, "EmptNWtoR4FVCK-BH6nGLQ")
    pm = ck.read_partition_metadata(str(corpus_dir / RAVI / "__cluster_metadata-0/partition.metadata"))
    assert pm.topic_id == "AAAAAAAAAAAAAAAAAAAAAQ" and pm.topic_uuid == uuid.UUID(int=1)
    for path in (corpus_dir / RAVI).glob("*/partition.metadata"):
        assert ck.read_partition_metadata(str(path)).topic_uuid.int != 0


_topic = st.text(alphabet="abcxyzABC019._-", min_size=1, max_size=40)


@settings(max_examples=60, deadline=None)
@given(st.dictionaries(st.tuples(_topic, st.integers(0, 2**31 - 1)), st.integers(-1, 2**63 - 1), max_size=20))
def test_offset_checkpoint_roundtrip(entries):
    text = "0\n%d\n" % len(entries) + "".join(f"{t} {p} {o}\n" for (t, p), o in entries.items())
    assert ck.parse_offset_checkpoint(text.encode()) == entries


@pytest.mark.parametrize("text, position, fragment", [
    ("1\n0\n", 0, "version 1"),
    ("0\n2\nt 0 5\n", 2, "expected 2 entries"),
    ("0\n1\nt 0\n", 4, "malformed"),
    ("0\n2\nt 0 5\ntopic.x x 7\n", 10, "partition 'x'"),
    ("0\n1\nt 0 99999999999999999999\n", 4, "does not fit"),
    ("zero\n", 0, "version"),
])
def test_bad_offset_checkpoint_is_located(text, position, fragment):
    with pytest.raises(CorruptCheckpointError) as info:
        ck.parse_offset_checkpoint(text.encode(), "/x/replication-offset-checkpoint")
    assert info.value.position == position and fragment in info.value.detail
    assert "/x/replication-offset-checkpoint" in str(info.value)


def test_empty_and_header_only_checkpoints_have_no_entries():
    assert ck.parse_offset_checkpoint(b"") == {}
    assert ck.parse_offset_checkpoint(b"0\n") == {}
    assert ck.parse_leader_epoch_checkpoint(b"0\n0\n") == ()


def test_meta_properties_syntax_and_v0_broker_id():
    data = b"#comment\n! also\nversion = 0\nbroker.id:7\ncluster.id \\\n   abc\\=d\ndirectory.id=x\n"
    meta = ck.parse_meta_properties(data)
    assert meta.version == 0 and meta.node_id == 7 and meta.cluster_id == "abc=d" and meta.directory_id == "x"
    with pytest.raises(CorruptCheckpointError):
        ck.parse_meta_properties(b"cluster.id=a\n")
    with pytest.raises(CorruptCheckpointError) as info:
        ck.parse_meta_properties(b"version=1\nnode.id=one\n")
    assert info.value.position == len(b"version=1\n")


@pytest.mark.parametrize("data", [b"", b"version: 0\n", b"version: 0\ntopic_id: short\n",
                                  b"version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAA\n", b"version 0 1\n"])
def test_bad_partition_metadata(data):
    with pytest.raises(CorruptCheckpointError):
        ck.parse_partition_metadata(data, "p")


_entry = st.builds(ProducerSnapshotEntry, st.integers(0, 2**63 - 1), st.integers(-2**15, 2**15 - 1),
                   st.integers(-1, 2**31 - 1), st.integers(-1, 2**63 - 1), st.integers(0, 2**31 - 1),
                   st.integers(-1, 2**63 - 1), st.integers(-1, 2**31 - 1), st.integers(-1, 2**63 - 1))


@settings(max_examples=40, deadline=None)
@given(st.lists(_entry, max_size=8))
def test_producer_snapshot_roundtrip_and_crc(entries):
    data = encode_producer_snapshot(entries)
    assert len(data) == 10 + 46 * len(entries)
    snapshot = parse_producer_snapshot(data)
    assert list(snapshot.entries) == entries and len(snapshot.entries) == len(entries)
    assert snapshot.entries[-1:] == entries[-1:] and snapshot.entries == entries
    # the last entry of a producer id wins, as in a dict built from the entries in order
    assert snapshot.ongoing_transactions() == {e.producer_id: e.current_txn_first_offset
                                               for e in entries if e.has_ongoing_transaction}
    if entries:
        flipped = bytearray(data)
        flipped[20] ^= 0x01
        with pytest.raises(CorruptCheckpointError, match="CRC"):
            parse_producer_snapshot(bytes(flipped), "s")


def test_producer_snapshot_rejects_bad_headers():
    good = encode_producer_snapshot([ProducerSnapshotEntry(1, 0, 5, 10, 0, 1000, -1, 7)])
    with pytest.raises(CorruptCheckpointError, match="version"):
        parse_producer_snapshot(struct.pack(">h", 2) + good[2:])
    with pytest.raises(CorruptCheckpointError, match="announces"):
        parse_producer_snapshot(good[:-1])
    with pytest.raises(CorruptCheckpointError, match="header"):
        parse_producer_snapshot(good[:5])
    snap = parse_producer_snapshot(good, "/d/t-0/00000000000000000042.snapshot")
    assert snap.offset == 42 and snap.ongoing_transactions() == {1: 7}


def test_a_large_snapshot_costs_its_file_size_not_an_object_per_producer():
    """describe, verify, dump and read_committed offsets parsed a snapshot into a NamedTuple per producer: 1.4 GB
    for a 230 MB snapshot of 5M producers (found in review). The entries are now a view of the file's bytes."""
    import tracemalloc

    count = 200_000
    entry = struct.pack(">qhiqiqiq", 0, 0, 5, 10, 0, 1000, -1, -1)
    body = struct.pack(">i", count) + entry * (count - 1) + struct.pack(">qhiqiqiq", 77, 0, 5, 10, 0, 1000, 3, 12)
    from kafkaseg.wire.crc import crc32c
    data = struct.pack(">hI", 1, crc32c(body)) + body
    tracemalloc.start()
    try:
        snapshot = parse_producer_snapshot(data)
        assert snapshot.ongoing_transactions() == {77: 12}
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert len(snapshot.entries) == count and snapshot.entries[-1].coordinator_epoch == 3
    assert peak < len(data) // 4, f"parsing {len(data)} bytes peaked at {peak} bytes"


def test_corpus_producer_snapshots_parse(corpus_dir):
    paths = sorted(corpus_dir.glob("segments/*/*/kafka*/data/*/*.snapshot"))
    assert len(paths) > 10
    for path in paths:
        snap = read_producer_snapshot(str(path))
        assert snap.offset == int(path.stem)
        assert len(snap.entries) == (path.stat().st_size - 10) // 46


def test_a_number_of_thousands_of_digits_is_a_checkpoint_error_not_a_value_error():
    """int() refuses over 4,300 digits with its own ValueError, which every command showed as a traceback (found
    in review); leading zeros stay allowed, as Java's parseLong allows them."""
    from kafkaseg.errors import CorruptCheckpointError
    from kafkaseg.storage.checkpoints import parse_java_integer, parse_offset_checkpoint

    with pytest.raises(CorruptCheckpointError, match=r"does not fit in int64") as info:
        parse_offset_checkpoint(b"0\n1\nt 0 " + b"9" * 5000 + b"\n", "f")
    assert info.value.position == 4
    assert parse_offset_checkpoint(b"0\n1\nt 0 " + b"0" * 5000 + b"7\n") == {("t", 0): 7}
    assert parse_java_integer("-9223372036854775808") == -(1 << 63) and parse_java_integer("9223372036854775808") is None
    assert parse_java_integer("+0000000000000000000000012", 32) == 12 and parse_java_integer("2147483648", 32) is None


@settings(max_examples=40, deadline=None)
@given(st.lists(_entry, max_size=8))
def test_the_vectorised_transactional_check_agrees_with_the_parsed_entries(tmp_path_factory, entries):
    """Planning checked every snapshot through a NamedTuple per producer (8 s for 200 snapshots of 50,000
    producers, 1.4 GB for one of 5M; found in review); the numpy check must agree with the entries and refuse a
    bad CRC the same way."""
    from kafkaseg.storage.producer_snapshot import lists_transactional_producers

    path = tmp_path_factory.mktemp("snap") / "00000000000000000005.snapshot"
    data = encode_producer_snapshot(entries)
    path.write_bytes(data)
    expected = any(e.coordinator_epoch >= 0 or e.has_ongoing_transaction
                   for e in read_producer_snapshot(str(path)).entries)
    assert lists_transactional_producers(str(path)) == expected
    if entries:
        flipped = bytearray(data)
        flipped[20] ^= 0x01
        path.write_bytes(bytes(flipped))
        with pytest.raises(CorruptCheckpointError, match="CRC"):
            lists_transactional_producers(str(path))


def test_mark_divergence_is_kafkas_consumer_validation():
    """KIP-320: the epoch of the reader's last batch must not end below that batch's end in the log now."""
    entries = [(0, 0), (1, 10), (3, 15)]
    assert ck.mark_divergence(entries, (1, 12), log_end=30) is None  # 15 >= 12: the batch is intact
    assert ck.mark_divergence(entries, (1, 18), log_end=30) == ck.Divergence(15)  # truncated at 15, rewritten
    assert ck.mark_divergence(entries, (3, 25), log_end=20) == ck.Divergence(20)  # the latest epoch ends at log_end
    assert ck.mark_divergence(entries, (3, 25), log_end=25) is None
    assert ck.mark_divergence(entries, (4, 25), log_end=30) == ck.Divergence(None)  # an epoch the log never had
    assert ck.mark_divergence(entries, (2, 14), log_end=30) is None  # two elections in a row: Kafka passes it too
    for nothing in (None, (1, 0)):
        assert ck.mark_divergence(entries, nothing, log_end=30) is None
    assert ck.mark_divergence([], (1, 18), log_end=30) is None
