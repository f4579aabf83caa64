"""Tiered-storage copies Aiven's plugin stored encrypted (``encryption.enabled``) are read with the broker's key
ring: as the segments they were, with their own (encrypted) indexes, and refused by name without the right key.
The oracle is ``tests/data/aiven_encrypted``: a real broker's partition encrypted by Java (BouncyCastle and the
JDK, called as the plugin calls them), which kafkaseg did not write."""

from __future__ import annotations

import json
import pickle
import re
import shutil
from pathlib import Path

import pytest

import kafkaseg
from kafkaseg.cli.main import main as cli_main
from kafkaseg.errors import CorruptDataError, InvalidOptionError, KeyUnavailableError, LayoutError
from kafkaseg.options import ReadOptions
from kafkaseg.storage.indexes import load_indexes
from kafkaseg.storage.layout import discover
from kafkaseg.storage.encryption import parse_key_ring
from kafkaseg.testing import TopicSpec, write_data_dir
from kafkaseg.testing.tiered import aiven_encryptor, copy_to_tiered, make_key_pair
from tests.oracle import kafka_python_records

COLUMNS = ["topic", "partition", "offset", "timestamp", "timestampType", "key", "value"]
FIXTURE = Path(__file__).parent / "data" / "aiven_encrypted"
FIXTURE_RING = f"k1={FIXTURE / 'keys' / 'k1-private.pem'}"
CORPUS_SOURCE = "segments/smartassets__backend-server/51801d05/kafka/data/docker-connect-configs-0"


# -- the Java-encrypted fixture --------------------------------------------------------------------------------------

@pytest.mark.parametrize("variant", ["encrypted", "compressed-encrypted"])
def test_copies_java_encrypted_as_the_plugin_does_read_as_the_brokers_log(corpus_dir, variant):
    source = corpus_dir / CORPUS_SOURCE
    got = kafkaseg.read_arrow(str(FIXTURE / variant), tieredKeyRing=FIXTURE_RING).select(COLUMNS)
    assert got.num_rows == 56 and got.equals(kafkaseg.read_arrow(str(source)).select(COLUMNS))
    expected = [r for log in sorted(source.glob("*.log")) for r in kafka_python_records(log.read_bytes())
                if not r["isControl"]]
    assert got["offset"].to_pylist() == [r["offset"] for r in expected]
    assert got["value"].to_pylist() == [r["value"] for r in expected]
    # the stored objects are not the segments: every byte of them went through Java's ciphers
    for log in (FIXTURE / variant).rglob("*.log"):
        plain = (source / log.name.split("-")[0]).with_suffix(".log").read_bytes()
        assert plain[:61] not in log.read_bytes()


def test_the_java_encrypted_indexes_are_the_brokers_entry_for_entry(corpus_dir):
    source = corpus_dir / CORPUS_SOURCE
    (pd,) = discover(str(FIXTURE / "encrypted"), key_ring=parse_key_ring(FIXTURE_RING))
    (local,) = discover(str(source))
    assert [s.base_offset for s in pd.segments] == [s.base_offset for s in local.segments]
    for copy, segment in zip(pd.segments, local.segments):
        offsets, times = load_indexes(copy)
        want_offsets, want_times = load_indexes(segment)
        assert not offsets.rebuilt and not times.rebuilt
        assert list(offsets) == list(want_offsets) and list(times) == list(want_times)


def test_without_the_key_ring_an_encrypted_copy_is_refused_naming_its_manifest_and_key_pair():
    with pytest.raises(LayoutError, match=r"stored encrypted .* key pair 'k1'.*tieredKeyRing") as raised:
        kafkaseg.read_arrow(str(FIXTURE / "encrypted"))
    assert ".rsm-manifest" in str(raised.value)


# -- copies written here (every case of the format) -------------------------------------------------------------------

@pytest.fixture(scope="module")
def key_pair(tmp_path_factory):
    return make_key_pair(tmp_path_factory.mktemp("keys"), "k1")


@pytest.fixture
def encrypted_copies(tmp_path, key_pair):
    """A transactional partition with headers copied three ways: as it was, encrypted, compressed and encrypted
    (chunks far smaller than a segment, so batches and index entries straddle them)."""
    write_data_dir(tmp_path / "data", [TopicSpec("z", records_per_partition=3000, records_per_batch=20,
                                                 segment_bytes=48 * 1024, index_interval_bytes=2048, headers=1,
                                                 transactional=True, abort_ratio=0.3)])
    folder = tmp_path / "data" / "z-0"
    copy_to_tiered(folder, tmp_path / "plain", layout="aiven")
    encrypt = aiven_encryptor(key_pair)
    for name, compression in (("encrypted", False), ("both", True)):
        copy_to_tiered(folder, tmp_path / name, layout="aiven", compression=compression, chunk_size=5000,
                       encryptor=encrypt)
    return tmp_path


@pytest.mark.parametrize("stored", ["encrypted", "both"])
@pytest.mark.parametrize("options", [
    {}, {"kafka.isolation.level": "read_committed", "includeHeaders": True},
    {"startingOffsets": '{"z":{"0":1234}}', "endingOffsets": '{"z":{"0":2100}}'},
    {"startingTimestamp": 1_700_000_010_000},
])
def test_encrypted_copies_read_as_the_copies_stored_as_they_were(encrypted_copies, key_pair, stored, options):
    columns = COLUMNS + (["headers"] if "includeHeaders" in options else [])
    got = kafkaseg.read_arrow(str(encrypted_copies / stored), tieredKeyRing=key_pair.ring_option, **options)
    expected = kafkaseg.read_arrow(str(encrypted_copies / "plain"), **options)
    assert got.num_rows > 0 and got.select(columns).equals(expected.select(columns))


@pytest.mark.parametrize("stored", ["encrypted", "both"])
def test_a_narrow_read_decrypts_the_index_and_only_the_chunks_it_needs(encrypted_copies, key_pair, stored):
    bounds = {"startingOffsets": '{"z":{"0":1234}}', "endingOffsets": '{"z":{"0":1260}}'}
    scan = kafkaseg.open_scan(str(encrypted_copies / stored), tieredKeyRing=key_pair.ring_option, **bounds)
    assert scan.to_table().equals(kafkaseg.read_arrow(str(encrypted_copies / "data"), **bounds))
    assert sum(s.size_bytes for s in scan.plan.slices) < 10_000
    (pd,) = discover(str(encrypted_copies / stored), key_ring=parse_key_ring(key_pair.ring_option))
    offsets, times = load_indexes(pd.segments[1])
    assert not offsets.rebuilt and not times.rebuilt and len(offsets) > 10


def test_the_key_ring_is_named_by_id_and_a_key_pair_it_lacks_is_named(encrypted_copies, key_pair, tmp_path):
    other = make_key_pair(tmp_path / "other", "k2", seed="another key")
    with pytest.raises(LayoutError, match=r"wrapped by key pair 'k1', which the key ring .* holds 'k2'"):
        kafkaseg.read_arrow(str(encrypted_copies / "encrypted"), tieredKeyRing=other.ring_option)
    # the same id, another key: the data key does not unwrap
    with pytest.raises(LayoutError, match=r"does not decrypt with key pair 'k1'.*not the key pair it was wrapped"):
        kafkaseg.read_arrow(str(encrypted_copies / "encrypted"), tieredKeyRing=f"k1={other.private}")
    # several key pairs (the broker's whole ring; a rotation leaves older segments under older ids), as a dict too
    got = kafkaseg.read_arrow(str(encrypted_copies / "encrypted"),
                              tieredKeyRing={"k2": str(other.private), "k1": str(key_pair.private)})
    assert got.num_rows == kafkaseg.read_arrow(str(encrypted_copies / "plain")).num_rows


@pytest.mark.parametrize("key_file, message", [
    (lambda kp, d: kp.public, "a public key; the key ring needs each key pair's private key"),
    (lambda kp, d: d / "missing.pem", "no such key file"),
    (lambda kp, d: _write(d / "junk.pem", b"not a key"), "not a PEM file"),
    (lambda kp, d: _write(d / "bad.pem", b"-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"),
     "not an RSA key"),
])
def test_key_files_that_are_not_private_keys_are_refused_naming_the_file(encrypted_copies, key_pair, tmp_path,
                                                                         key_file, message):
    path = key_file(key_pair, tmp_path)
    with pytest.raises(LayoutError, match=message) as raised:
        kafkaseg.read_arrow(str(encrypted_copies / "encrypted"), tieredKeyRing=f"k1={path}")
    assert str(path) in str(raised.value)


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def test_a_pkcs1_key_under_any_pem_label_opens_the_copies(encrypted_copies, tmp_path):
    from Crypto.PublicKey import RSA

    from kafkaseg.testing.tiered import _GENERATED

    key = _GENERATED[("kafkaseg", 2048)]  # the module's key pair's key
    pkcs1 = tmp_path / "rsa.pem"
    pkcs1.write_bytes(key.export_key("PEM", pkcs=1))  # "RSA PRIVATE KEY", as openssl genrsa writes it
    assert b"RSA PRIVATE KEY" in pkcs1.read_bytes() and RSA.import_key(pkcs1.read_bytes()).has_private()
    some = make_key_pair(tmp_path / "some", "k1", label="SOME KEY")  # Aiven's own tests' label
    for path in (pkcs1, some.private):
        assert kafkaseg.read_arrow(str(encrypted_copies / "encrypted"), tieredKeyRing=f"k1={path}").num_rows > 0


@pytest.mark.parametrize("stored", ["encrypted", "both"])
def test_a_damaged_encrypted_chunk_is_an_error_naming_the_object_and_byte(encrypted_copies, key_pair, stored):
    logs = sorted((encrypted_copies / stored).rglob("*.log"))
    data = bytearray(logs[1].read_bytes())
    data[-5] ^= 0x01  # the last chunk's tag
    logs[1].write_bytes(bytes(data))
    (pd,) = discover(str(encrypted_copies / stored), key_ring=parse_key_ring(key_pair.ring_option))
    last_chunk = pd.filesystem.handler.objects[str(logs[1])].starts[-2]
    with pytest.raises(CorruptDataError, match=r"encrypted chunk \d+ .* does not decrypt") as raised:
        kafkaseg.read_arrow(str(encrypted_copies / stored), tieredKeyRing=key_pair.ring_option)
    assert raised.value.path == str(logs[1]) and raised.value.position == last_chunk


def test_a_damaged_encrypted_index_is_an_error_naming_the_indexes_object(encrypted_copies, key_pair):
    indexes = sorted((encrypted_copies / "encrypted").rglob("*.indexes"))[1]
    data = bytearray(indexes.read_bytes())
    data[20] ^= 0x01  # inside the offset index's ciphertext
    indexes.write_bytes(bytes(data))
    (pd,) = discover(str(encrypted_copies / "encrypted"), key_ring=parse_key_ring(key_pair.ring_option))
    with pytest.raises(CorruptDataError, match="does not decrypt") as raised:
        load_indexes(pd.segments[1])
    assert raised.value.path == str(indexes) and raised.value.position == 0


@pytest.mark.parametrize("change, message", [
    (lambda m: m["chunkIndex"].update(transformedChunkSize=m["chunkIndex"]["originalChunkSize"]),
     "not that of an encrypted segment"),
    (lambda m: m["segmentIndexes"]["timestamp"].update(size=m["segmentIndexes"]["timestamp"]["size"] - 1),
     "is not the next encrypted index"),
    (lambda m: m["encryption"].update(dataKey=m["encryption"]["dataKey"].split(":")[1]),
     "is not <key pair id>:<base64>"),
    (lambda m: m["encryption"].update(aad="not base64!"), "encryption.aad .* is not base64"),
    (lambda m: m["encryption"].pop("aad"), "manifest has no encryption.aad"),
])
def test_encryption_facts_that_do_not_add_up_are_refused_naming_the_manifest(encrypted_copies, key_pair, change,
                                                                             message):
    manifest = sorted((encrypted_copies / "encrypted").rglob("*.rsm-manifest"))[0]
    content = json.loads(manifest.read_text())
    change(content)
    manifest.write_text(json.dumps(content))
    with pytest.raises(LayoutError, match=message) as raised:
        discover(str(encrypted_copies / "encrypted"), key_ring=parse_key_ring(key_pair.ring_option))
    assert str(manifest) in str(raised.value)


def test_a_partition_pickles_for_executors_with_data_keys_and_never_the_private_key(encrypted_copies, key_pair):
    from kafkaseg.testing.tiered import _GENERATED

    (pd,) = discover(str(encrypted_copies / "both"), key_ring=parse_key_ring(key_pair.ring_option))
    shipped = pickle.dumps(pd)
    private = _GENERATED[("kafkaseg", 2048)]
    secret = private.d.to_bytes((private.d.bit_length() + 7) // 8, "big")
    assert secret[:32] not in shipped and key_pair.private.read_bytes()[40:80] not in shipped
    again = pickle.loads(shipped)
    segment = again.segments[1]
    with again.filesystem.open_input_file(segment.log_path) as copied, \
            pd.filesystem.open_input_file(segment.log_path) as own:
        assert copied.size() == own.size() == segment.log_size
        assert copied.read_at(7000, 4000) == own.read_at(7000, 4000)
    shown = repr(again.filesystem.handler.objects)
    data_key = again.filesystem.handler.objects[segment.log_path].data_key
    assert "DataKey(key_id='k1')" in shown and repr(data_key.key) not in shown  # a data key is not printed


def test_a_log_dir_with_encrypted_copies_below_is_one_log_and_a_deleted_segment_is_read_from_its_copy(
        tmp_path, key_pair):
    spec = TopicSpec("orders", records_per_partition=4000, records_per_batch=20, segment_bytes=24 * 1024,
                     index_interval_bytes=2048)
    write_data_dir(tmp_path / "data", [spec])
    folder = tmp_path / "data" / "orders-0"
    whole = kafkaseg.read_arrow(str(tmp_path / "data")).select(COLUMNS)
    copy_to_tiered(folder, tmp_path / "staged", layout="aiven", compression=True, chunk_size=3000,
                   encryptor=aiven_encryptor(key_pair))
    (staged,) = (tmp_path / "staged").glob("*/0")
    bucket = tmp_path / "remote" / staged.parent.name / "0"
    bucket.mkdir(parents=True)

    def upload(base):  # as the broker's remote log manager does, one rolled segment at a time
        for path in staged.glob(f"{base:020d}-*"):
            shutil.copy(path, bucket / path.name)

    bases = sorted(int(p.name[:-4]) for p in folder.glob("*.log"))
    for base in bases[:5]:
        upload(base)
    for base in bases[:4]:  # local retention: deleted here, in remote storage
        for path in folder.glob(f"{base:020d}.*"):
            path.unlink()
    (tmp_path / "data" / "log-start-offset-checkpoint").write_text(f"0\n1\norders 0 {bases[0]}\n")
    paths = [str(tmp_path / "data"), str(tmp_path / "remote")]
    scan = kafkaseg.open_scan(paths, tieredKeyRing=key_pair.ring_option)
    # then, as on a worker (no key file there) while the broker goes on: the next segment is uploaded (a copy
    # whose key the plan does not hold) and local retention deletes a planned segment, which is read from its
    # copy with the key the plan holds
    moved = key_pair.private.rename(key_pair.private.with_suffix(".elsewhere"))
    try:
        upload(bases[5])
        for path in folder.glob(f"{bases[4]:020d}.*"):
            path.unlink()
        assert scan.to_table().select(COLUMNS).equals(whole)
        # the new copy's own local segment deleted too: its records are only in a copy this reader cannot open;
        # the read fails saying so (not a data loss, nor the copies below it given up)
        for path in folder.glob(f"{bases[5]:020d}.*"):
            path.unlink()
        with pytest.raises(KeyUnavailableError, match="cannot be decrypted here: neither the keys the read was"):
            scan.to_table()
    finally:
        moved.rename(key_pair.private)
    assert kafkaseg.read_arrow(paths, tieredKeyRing=key_pair.ring_option).select(COLUMNS).equals(whole)


def test_a_key_file_replaced_or_removed_is_seen_by_the_next_discovery(encrypted_copies, key_pair, tmp_path):
    ring = f"k1={tmp_path / 'k1.pem'}"
    shutil.copy(key_pair.private, tmp_path / "k1.pem")
    assert kafkaseg.read_arrow(str(encrypted_copies / "encrypted"), tieredKeyRing=ring).num_rows > 0
    shutil.copy(key_pair.public, tmp_path / "k1.pem")  # the data keys unwrapped before are not reused with it
    with pytest.raises(KeyUnavailableError, match="a public key"):
        kafkaseg.read_arrow(str(encrypted_copies / "encrypted"), tieredKeyRing=ring)
    (tmp_path / "k1.pem").unlink()
    with pytest.raises(KeyUnavailableError, match="no such key file"):
        kafkaseg.read_arrow(str(encrypted_copies / "encrypted"), tieredKeyRing=ring)


@pytest.mark.parametrize("stored", ["plain", "encrypted"])
def test_a_copy_without_its_indexes_object_is_read_with_its_indexes_and_aborts_rebuilt(encrypted_copies, key_pair,
                                                                                      stored):
    # its transaction index is unknown, not absent: read_committed must not take its aborted records as committed
    ring = {"tieredKeyRing": key_pair.ring_option}
    committed = {"kafka.isolation.level": "read_committed", **ring}
    plain = str(encrypted_copies / "plain")
    expected, expected_committed = kafkaseg.read_arrow(plain), kafkaseg.read_arrow(plain, **committed)
    assert expected_committed.num_rows < expected.num_rows  # (aborted transactions there to leave out)
    for path in (encrypted_copies / stored).rglob("*.indexes"):
        path.unlink()
    scan = kafkaseg.open_scan(str(encrypted_copies / stored), **committed)
    assert scan.to_table().equals(expected_committed)
    assert any("TransactionIndex: the copy's .indexes object is missing" in why
               for _, why in scan.plan.report.indexes_rebuilt)
    assert kafkaseg.read_arrow(str(encrypted_copies / stored), **ring).equals(expected)


def test_the_cli_reads_encrypted_copies_with_the_key_ring_flag(encrypted_copies, key_pair, capsys):
    remote, plain = encrypted_copies / "both", encrypted_copies / "plain"
    log = sorted(remote.rglob("*.log"))[1]
    plain_log = next(plain.rglob(log.name))

    def dump(path, *flags):
        capsys.readouterr()
        status = cli_main(["dump", "--files", str(path), "--deep-iteration", "--no-progress", *flags])
        out = capsys.readouterr()
        return status, out.out.replace(str(path), "<file>"), out.err

    status, text, _ = dump(log, "--tiered-key-ring", key_pair.ring_option)
    assert status == 0 and text == dump(plain_log)[1] and "| offset:" in text
    status, text, err = dump(log)  # without the key: refused, not dumped as ciphertext
    assert status != 0 and "| offset:" not in text and "tieredKeyRing" in err
    assert cli_main(["verify", str(remote), "--no-progress", "--tiered-key-ring", key_pair.ring_option]) == 0
    capsys.readouterr()
    assert cli_main(["offsets", "--data-dir", str(remote), "--time", "-1", "--tiered-key-ring",
                     key_pair.ring_option]) == 0
    assert capsys.readouterr().out.strip() == "z:0:" + str(
        kafkaseg.read_arrow(str(plain))["offset"][-1].as_py() + 1)
    with pytest.raises(SystemExit):
        cli_main(["describe", str(remote), "--tiered-key-ring", "k1"])
    assert "is not <key pair id>=<private key file>" in capsys.readouterr().err


@pytest.mark.parametrize("value, message", [
    ("k1", "is not <key pair id>=<private key file>"),
    ("k1=/a,k1=/b", "key pair id 'k1' is given twice"),
    ("", "must be '<key pair id>=<private key file>,...'"),
    (42, "must be '<key pair id>=<private key file>,...'"),
])
def test_a_malformed_key_ring_option_is_an_error_naming_it(value, message):
    with pytest.raises(InvalidOptionError, match=message) as raised:
        ReadOptions.from_options({"tieredKeyRing": value})
    assert "tieredKeyRing" in str(raised.value)


def test_the_key_ring_option_is_reported_by_file_name_only():
    options = ReadOptions.from_options({"tieredkeyring": "k1=/etc/kafka/k1.pem, k2 = s3://keys/k2.pem"})
    assert options.tiered_key_ring.files == (("k1", "/etc/kafka/k1.pem"), ("k2", "s3://keys/k2.pem"))
    assert options.as_dict()["tieredKeyRing"] == "k1=/etc/kafka/k1.pem,k2=s3://keys/k2.pem"


def test_an_upload_of_an_encrypted_copy_whose_indexes_object_is_short_is_refused(encrypted_copies, key_pair):
    indexes = sorted((encrypted_copies / "encrypted").rglob("*.indexes"))[0]
    indexes.write_bytes(indexes.read_bytes()[:-1])
    with pytest.raises(LayoutError, match="encrypted indexes take .* bytes; .* holds"):
        discover(str(encrypted_copies / "encrypted"), key_ring=parse_key_ring(key_pair.ring_option))
    shutil.rmtree(encrypted_copies / "encrypted")


def _dumped(capsys, files, *flags):
    capsys.readouterr()
    status = cli_main(["dump", "--files", ",".join(map(str, files)), "--no-progress", *flags])
    out = capsys.readouterr()
    lines = [re.sub(r"^\S+ is empty\.$", "<file> is empty.", line) for line in out.out.splitlines()
             if not line.startswith(("Dumping ", "Index "))]
    return status, lines, out.err


@pytest.mark.parametrize("variant", ["encrypted", "compressed-encrypted"])
def test_dump_of_an_indexes_object_is_the_dump_of_the_brokers_index_files(corpus_dir, capsys, variant):
    source = corpus_dir / CORPUS_SOURCE
    for packed in sorted((FIXTURE / variant).rglob("*.indexes")):
        base = int(packed.name.split("-")[0])
        following = [int(p.name[:-4]) for p in sorted(source.glob("*.log")) if int(p.name[:-4]) > base]
        own = [source / f"{base:020d}.index", source / f"{base:020d}.timeindex"]
        snapshot = source / f"{following[0] if following else 107:020d}.snapshot"
        got = _dumped(capsys, [packed], "--tiered-key-ring", FIXTURE_RING)
        want = _dumped(capsys, own + ([snapshot] if snapshot.exists() else []))
        assert got[0] == want[0] and got[1][:len(want[1])] == want[1] and got[2] == want[2]
        assert got[1][len(want[1]):] == ["epoch: 0 startOffset: 0"]  # the leader epochs the copy was handed


def test_dump_of_a_plain_indexes_object_has_every_index_including_aborted_transactions(encrypted_copies, key_pair,
                                                                                      capsys):
    folder = encrypted_copies / "data" / "z-0"
    packed = next(p for p in sorted((encrypted_copies / "plain").rglob("*.indexes"))
                  if (folder / f"{int(p.name.split('-')[0]):020d}.txnindex").exists())
    base = int(packed.name.split("-")[0])
    status, lines, _ = _dumped(capsys, [packed])
    _, want_txn, _ = _dumped(capsys, [folder / f"{base:020d}.txnindex"])
    _, want_offsets, _ = _dumped(capsys, [folder / f"{base:020d}.index"])
    assert status == 0 and want_txn and lines[:len(want_offsets)] == want_offsets
    assert lines[-len(want_txn):] == want_txn  # the transaction index comes last in .indexes
    # and encrypted: the same lines, with the key ring
    (encrypted,) = (encrypted_copies / "encrypted").rglob(packed.name)
    assert _dumped(capsys, [encrypted], "--tiered-key-ring", key_pair.ring_option)[1] == lines


def test_a_copy_below_a_log_dir_without_its_indexes_object_has_its_aborts_derived(tmp_path):
    # read with its log dir, whose producer snapshot no longer lists the transactional producers (expired) and
    # whose segments have no .txnindex: the copies' packed transaction indexes, and the lost one's manifest, are
    # the evidence that aborts exist, so the lost copy's are derived from its log (review round 3)
    from kafkaseg.testing.partition import ProducerEntry, encode_producer_snapshot

    write_data_dir(tmp_path / "data", [TopicSpec("z", records_per_partition=3000, records_per_batch=20,
                                                 segment_bytes=48 * 1024, index_interval_bytes=2048,
                                                 transactional=True, abort_ratio=0.3)])
    folder = tmp_path / "data" / "z-0"
    copy_to_tiered(folder, tmp_path / "remote", layout="aiven")
    bases = sorted(int(p.name[:-4]) for p in folder.glob("*.log"))
    committed = {"kafka.isolation.level": "read_committed", "endingOffsets": '{"z":{"0":%d}}' % bases[3]}
    expected = kafkaseg.read_arrow(str(tmp_path / "remote"), **committed)
    for base in bases[:3]:
        for path in folder.glob(f"{base:020d}.*"):
            path.unlink()
    for path in folder.glob("*.txnindex"):
        path.unlink()
    for path in folder.glob("*.snapshot"):
        path.write_bytes(encode_producer_snapshot([ProducerEntry(producer_id=999, producer_epoch=0, last_sequence=5,
                                                                 last_offset=bases[3] + 5)]))
    (tmp_path / "data" / "log-start-offset-checkpoint").write_text("0\n1\nz 0 0\n")
    paths = [str(tmp_path / "data"), str(tmp_path / "remote")]
    # the copies' own transaction indexes are no reason to walk the local log for its aborts (review round 4)
    tail = kafkaseg.open_scan(paths, **{"kafka.isolation.level": "read_committed",
                                        "startingOffsets": '{"z":{"0":%d}}' % bases[-1]})
    tail.to_table()
    assert not [why for _, why in tail.plan.report.indexes_rebuilt if "TransactionIndex" in why]
    (lost,) = (tmp_path / "remote").rglob(f"{bases[1]:020d}-*.indexes")
    lost.unlink()
    scan = kafkaseg.open_scan([str(tmp_path / "data"), str(tmp_path / "remote")], **committed)
    assert scan.to_table().equals(expected) and expected.num_rows < bases[3]
    assert any("the copy's .indexes object is missing" in why for _, why in scan.plan.report.indexes_rebuilt)


def test_planning_from_a_listing_the_broker_moved_past_opens_new_encrypted_copies_with_the_key_ring(
        tmp_path, key_pair):
    # the listing is stale (copies uploaded, local segments deleted since): planning lists the partition again,
    # with the key ring it was read with, not as a worker without one (review round 3)
    from kafkaseg.options import ReadOptions
    from kafkaseg.planning import list_partitions, plan_scan

    write_data_dir(tmp_path / "data", [TopicSpec("orders", records_per_partition=4000, records_per_batch=20,
                                                 segment_bytes=24 * 1024, index_interval_bytes=2048)])
    folder = tmp_path / "data" / "orders-0"
    copy_to_tiered(folder, tmp_path / "staged", layout="aiven", encryptor=aiven_encryptor(key_pair))
    (staged,) = (tmp_path / "staged").glob("*/0")
    bucket = tmp_path / "remote" / staged.parent.name / "0"
    bucket.mkdir(parents=True)
    bases = sorted(int(p.name[:-4]) for p in folder.glob("*.log"))

    def upload(base):
        for path in staged.glob(f"{base:020d}-*"):
            shutil.copy(path, bucket / path.name)

    for base in bases[:5]:
        upload(base)
    for base in bases[:4]:
        for path in folder.glob(f"{base:020d}.*"):
            path.unlink()
    (tmp_path / "data" / "log-start-offset-checkpoint").write_text(f"0\n1\norders 0 {bases[0]}\n")
    paths = [str(tmp_path / "data"), str(tmp_path / "remote")]
    options = ReadOptions.from_options({"tieredKeyRing": key_pair.ring_option, "startingOffsets": '{"orders":{"0":%d}}'
                                        % bases[5], "endingOffsets": '{"orders":{"0":%d}}' % (bases[5] + 100)})
    listing = list_partitions(paths, options)
    upload(bases[5])
    upload(bases[6])
    for base in bases[4:6]:
        for path in folder.glob(f"{base:020d}.*"):
            path.unlink()
    plan = plan_scan(None, options, listing=listing)
    assert plan.report.offsets() == {("orders", 0): (bases[5], bases[5] + 100)}
