"""The CLI on data dirs old brokers left: index entries holding an append's first offset (brokers up to 1.0, a
<=2.0 broker's recovery), legacy wrappers, folders discovery skips."""

from __future__ import annotations

import json
import struct

import pytest

from kafkaseg.cli.main import main
from kafkaseg.testing import Record, build_batch_v2, build_legacy_wrapper

from tests.test_cli_verify_edges import errors, verify_json, write_partition

T0 = 1_700_000_000_000
PER_BATCH = 5


def batches(kind: str, count: int = 20):
    out = []
    for b in range(count):
        records = [Record(b * PER_BATCH + i, T0 + b * PER_BATCH + i, b"k", b"v" * 20) for i in range(PER_BATCH)]
        if kind == "v2":
            out.append(build_batch_v2(records, codec="lz4"))
        else:
            out.append(build_legacy_wrapper(records, int(kind[1]), "gzip"))
    return out


def index_first_offsets(partition_dir, shift=PER_BATCH - 1):
    """Rewrite each ``.index`` entry to its batch's first offset, as brokers up to 1.0 wrote them."""
    for index in partition_dir.glob("*.index"):
        data = bytearray(index.read_bytes())
        for e in range(len(data) // 8):
            relative, position = struct.unpack_from(">ii", data, 8 * e)
            struct.pack_into(">ii", data, 8 * e, relative - shift, position)
        index.write_bytes(bytes(data))
        return index, len(data) // 8


@pytest.mark.parametrize("kind", ["v2", "v1", "v0"])
@pytest.mark.parametrize("shallow", [[], ["--shallow"]])
def test_index_entries_holding_the_batch_first_offset_are_one_info_not_errors(tmp_path, capsys, kind, shallow):
    write_partition(tmp_path, batches(kind))
    index, entries = index_first_offsets(tmp_path / "t-0")
    assert entries > 10
    code, report = verify_json([tmp_path, *shallow], capsys)
    assert code == 0 and not errors(report), errors(report)
    about = [p for p in report["problems"] if p["file"] == str(index)]
    assert len(about) == 1 and about[0]["severity"] == "info", about
    assert about[0]["message"].startswith(f"{entries} entries hold an offset inside the batch")
    assert "pre-1.1 broker" in about[0]["message"]
    assert main(["verify", str(tmp_path), *shallow]) == 0
    out = capsys.readouterr().out
    assert "pre-1.1" not in out and "0 errors, 0 warnings" in out  # an info line: shown with --verbose only
    assert main(["verify", str(tmp_path), "--verbose", *shallow]) == 0
    assert f"INFO: {index}: {entries} entries hold" in capsys.readouterr().out


@pytest.mark.parametrize("kind", ["v2", "v1"])
def test_an_index_entry_outside_its_batch_stays_an_error(tmp_path, capsys, kind):
    write_partition(tmp_path, batches(kind))
    index, entries = index_first_offsets(tmp_path / "t-0")
    data = bytearray(index.read_bytes())
    relative, position = struct.unpack_from(">ii", data, 8 * 3)
    struct.pack_into(">ii", data, 8 * 3, relative - 1, position)  # the previous batch's last offset
    index.write_bytes(bytes(data))
    code, report = verify_json([tmp_path], capsys)
    assert code == 1
    (error,) = errors(report)
    assert error["file"] == str(index) and error["position"] == 24, error
    first = relative
    assert f"entry offset {first - 1} -> position {position}: the batch there holds offsets " \
           f"{first}..{first + PER_BATCH - 1}" in error["message"], error
    about = [p for p in report["problems"] if p["severity"] == "info" and p["file"] == str(index)]
    assert about and about[0]["message"].startswith(f"{entries - 1} entries hold"), about


UUID = "0123456789abcdef0123456789abcdef"
SKIPPED = {f"t-1.{UUID}-delete": "info", f"t-0.{UUID}-future": "warning", f"t-2.{UUID}-stray": "info",
           f"u-0.{UUID}-delete": "info", "lost+found": "info", "remote-log-index-cache": "info"}


def log_dir_with_skipped_folders(root, live=True):
    """A log dir holding partition t-0 (when ``live``) and the folders a broker leaves beside partitions."""
    from kafkaseg.testing import PartitionWriter
    from kafkaseg.testing.partition import write_meta_properties

    root.mkdir(parents=True, exist_ok=True)
    write_meta_properties(root / "meta.properties", cluster_id="AAAAAAAAAAAAAAAAAAAAAA", node_id=1,
                          directory_id="BBBBBBBBBBBBBBBBBBBBBB")
    for name in (["t-0"] if live else []) + [n for n in SKIPPED if n.endswith(("-delete", "-future", "-stray"))]:
        writer = PartitionWriter(root / name)
        writer.append(build_batch_v2([Record(0, T0, b"k", b"v")]))
        writer.close()
    (root / "lost+found").mkdir()
    (root / "remote-log-index-cache").mkdir()
    return root


def test_verify_reports_the_folders_discovery_skips(tmp_path, capsys):
    root = log_dir_with_skipped_folders(tmp_path / "data")
    code, report = verify_json([root], capsys)
    assert code == 0 and [p["topic"] for p in report["partitions"]] == ["t"]  # discovery's decisions unchanged
    about = {p["file"]: p for p in report["problems"] if p["message"].startswith("skipped: ")}
    assert {path: p["severity"] for path, p in about.items()} == {str(root / n): s for n, s in SKIPPED.items()}
    future = about[str(root / f"t-0.{UUID}-future")]["message"]
    assert "a copy of t-0 being moved into this log dir" in future and "another log dir" in future, future
    assert "refuses to start" in about[str(root / "lost+found")]["message"]
    assert main(["verify", str(root)]) == 0
    out = capsys.readouterr().out
    assert f"WARNING: {root / f't-0.{UUID}-future'}: skipped: future folder" in out
    assert "lost+found" not in out and "1 warnings" in out
    assert main(["verify", str(root), str(root), "--verbose"]) == 0  # a log dir given twice: listed once
    out = capsys.readouterr().out
    assert all(out.count(f": {root / n}: skipped: ") == 1 for n in SKIPPED), out
    # a partition folder given on its own: its log dir's other folders are none of this run's business
    code, report = verify_json([root / "t-0"], capsys)
    assert not [p for p in report["problems"] if p["message"].startswith("skipped: ")]


def test_describe_lists_the_folders_discovery_skips(tmp_path, capsys):
    root = log_dir_with_skipped_folders(tmp_path / "data")
    assert main(["describe", str(root)]) == 0
    out = capsys.readouterr().out
    section = out[out.index("skipped folders"):]
    assert all(f"  {root / n}: " in section for n in SKIPPED), out
    assert main(["describe", str(root), "--json"]) == 0
    described = json.loads(capsys.readouterr().out)
    assert [p["topic"] for p in described["partitions"]] == ["t"]
    folders = {f["path"]: f for f in described["skippedFolders"]}
    assert set(folders) == {str(root / n) for n in SKIPPED}
    assert (folders[str(root / f"t-0.{UUID}-future")]["topic"], folders[str(root / f"t-0.{UUID}-future")]
            ["partition"]) == ("t", 0)
    assert main(["describe", str(root), "--json", "--topic", "t"]) == 0
    described = json.loads(capsys.readouterr().out)
    assert {f["path"] for f in described["skippedFolders"]} == {str(root / n) for n in SKIPPED if n[0] == "t"}


def test_the_destination_of_a_log_dir_move_read_alone_says_where_its_partition_went(tmp_path, capsys):
    """Only the destination disk of an in-progress move (alterReplicaLogDirs): its one folder is a -future copy,
    so no partition is read; that must not look like an empty log dir."""
    root = log_dir_with_skipped_folders(tmp_path / "disk2", live=False)
    assert main(["describe", str(root)]) == 0
    assert f"{root / f't-0.{UUID}-future'}: future folder" in capsys.readouterr().out
    code, report = verify_json([root], capsys)
    assert code == 0 and report["partitions"] == []
    assert [p["file"] for p in report["problems"] if p["severity"] == "warning"] == [str(root / f"t-0.{UUID}-future")]
    # and through a glob, as discover expands it: a folder it matches that is no log dir is not listed
    (tmp_path / "notes" / "2024").mkdir(parents=True)
    code, report = verify_json([tmp_path / "*"], capsys)
    assert [p["file"] for p in report["problems"] if p["severity"] == "warning"] == [str(root / f"t-0.{UUID}-future")]
    assert not [p for p in report["problems"] if "notes" in p["file"]], report["problems"]


def describe_json(argv, capsys):
    assert main(["describe", *map(str, argv), "--json"]) == 0
    return {d["topic"]: d for d in json.loads(capsys.readouterr().out)["partitions"]}


@pytest.mark.parametrize("kind", ["v2", "v1"])
def test_describe_first_time_is_the_first_records_timestamp(tmp_path, capsys, kind):
    """It was the first batch's MAX timestamp (a review: a 0.10 dir showed .004 where the first record is .000)."""
    write_partition(tmp_path, batches(kind, count=6))
    (described,) = describe_json([tmp_path], capsys).values()
    assert described["firstTimestamp"] == T0 and described["maxTimestamp"] == T0 + 6 * PER_BATCH - 1
    assert main(["describe", str(tmp_path)]) == 0
    assert "2023-11-14T22:13:20.000Z" in capsys.readouterr().out
    # records below the log start offset (DeleteRecords) are not the first any more
    (tmp_path / "log-start-offset-checkpoint").write_text("0\n1\nt 0 7\n")
    (described,) = describe_json([tmp_path], capsys).values()
    assert described["logStartOffset"] == 7 and described["firstTimestamp"] == T0 + 7


def test_describe_first_time_of_log_append_time_and_v0_records(tmp_path, capsys):
    from kafkaseg.testing import LOG_APPEND_TIME, build_legacy_entries

    records = [Record(o, T0 + o, b"k", b"v") for o in range(4)]
    write_partition(tmp_path / "lat", [build_batch_v2(records, timestamp_type=LOG_APPEND_TIME,
                                                      log_append_time=T0 + 99)])
    write_partition(tmp_path / "v0", build_legacy_entries(records, 0))
    assert describe_json([tmp_path / "lat"], capsys)["t"]["firstTimestamp"] == T0 + 99  # as consumers see it
    assert describe_json([tmp_path / "v0"], capsys)["t"]["firstTimestamp"] is None  # v0 records have none


def test_describe_first_time_of_a_batch_failing_its_crc_is_an_error_not_a_made_up_time(tmp_path, capsys):
    """The one batch describe decodes was read without its CRC: a damaged first record's timestamp delta was shown
    as the partition's first time (exit 0), a time no consumer sees (its fetch fails on the CRC)."""
    records = [Record(o, T0 + o, b"k", b"v" * 20) for o in range(4)]
    write_partition(tmp_path, [build_batch_v2(records)])
    log = tmp_path / "t-0" / "00000000000000000000.log"
    data = bytearray(log.read_bytes())
    at = 61 + (2 if data[61] & 0x80 else 1) + 1  # past the first record's length varint and attributes
    assert data[at] == 0  # its timestamp delta: 0
    data[at] = 0x7E  # +63 ms, still a valid varint: the records decode, only the CRC tells
    log.write_bytes(bytes(data))
    assert main(["describe", str(tmp_path), "--json"]) == 2
    (described,) = json.loads(capsys.readouterr().out)["partitions"]
    assert described["firstTimestamp"] is None
    assert any("first record's timestamp" in e and "CRC" in e for e in described["errors"]), described["errors"]


@pytest.mark.parametrize("kind", ["v0", "v1"])
@pytest.mark.parametrize("shallow", [[], ["--shallow"]])
def test_verify_segment_first_offset_of_a_legacy_wrapper_is_its_first_inner_offset(tmp_path, capsys, kind, shallow):
    """A legacy wrapper's offset is its LAST inner one: a segment starting at 0 said first_offset 4, and a rolled
    legacy segment looked as if offsets were missing before the next one."""
    log = write_partition(tmp_path, batches(kind, count=12), segment_bytes=600)
    assert len(log.segments) > 1
    code, report = verify_json([tmp_path, *shallow], capsys)
    assert code == 0, errors(report)
    segments = report["partitions"][0]["segments"]
    assert [s["first_offset"] for s in segments] == [s.base_offset for s in log.segments]
    assert [s["last_offset"] for s in segments[:-1]] == [s.base_offset - 1 for s in log.segments[1:]]
    assert not [p for p in report["problems"] if "missing before this segment" in p["message"]], report["problems"]


def follower_index(partition_dir, group: int = 3):
    """Rewrite the ``.index`` as a follower writes it: one entry per append of ``group`` fetched batches, holding
    the append's largest offset at the position of its first batch (``LogSegment.append``)."""
    from kafkaseg.wire.batch import iter_headers

    log = next(partition_dir.glob("*.log"))
    headers = list(iter_headers(log.read_bytes()))
    data = bytearray()
    for g in range(1, len(headers) // group):  # the first append (at position 0) gets no entry, as in Kafka
        first, last = headers[g * group], headers[g * group + group - 1]
        data += struct.pack(">ii", last.last_offset, first.position)
    index = next(partition_dir.glob("*.index"))
    index.write_bytes(bytes(data))
    return index, len(data) // 8, headers


def test_a_followers_multi_batch_append_entries_are_one_info_not_errors(tmp_path, capsys):
    write_partition(tmp_path, batches("v2", 30))
    index, entries, headers = follower_index(tmp_path / "t-0")
    code, report = verify_json([tmp_path], capsys)
    assert code == 0 and not errors(report), errors(report)
    about = [p for p in report["problems"] if p["file"] == str(index)]
    assert len(about) == 1 and about[0]["severity"] == "info", about
    assert about[0]["message"].startswith(f"{entries} entries hold the last offset of a later batch")
    # an entry whose offset lies at or past the next entry's batch is wrong: an append ends before the next one
    data = bytearray(index.read_bytes())
    struct.pack_into(">ii", data, 8 * 1, headers[10].last_offset, headers[6].position)  # next entry: batch 9
    index.write_bytes(bytes(data))
    code, report = verify_json([tmp_path], capsys)
    assert code == 1
    (error,) = errors(report)
    assert error["position"] == 8 and f"entry offset {headers[10].last_offset} -> position " \
        f"{headers[6].position}: the offset lies in no batch before the next entry's" in error["message"], error


@pytest.mark.parametrize("recovery_point, severity", [(0, "warning"), (None, "error")])
def test_a_txn_index_missing_an_abort_of_its_segment(tmp_path, capsys, recovery_point, severity):
    """A .txnindex without the entry for an ABORT whose batches are in the segment: read_committed readers of the
    file would return the aborted records. Past the recovery point a broker's recovery rebuilds it (warning); in a
    flushed segment it is an error."""
    from kafkaseg.testing import ControlType, build_control_batch

    txn = [build_batch_v2([Record(0, T0, b"k", b"a"), Record(1, T0, b"k", b"b")], is_transactional=True,
                          producer_id=7, producer_epoch=0, base_sequence=0),
           build_control_batch(2, T0, ControlType.ABORT, producer_id=7, producer_epoch=0)]
    tail = [build_batch_v2([Record(3, T0, b"k", b"v")])]
    write_partition(tmp_path, txn + tail, segment_bytes=len(txn[0].data) + len(txn[1].data),
                    checkpoints={"recovery-point-offset-checkpoint": 3 if recovery_point is None else 0})
    txnindex = tmp_path / "t-0" / "00000000000000000000.txnindex"
    assert verify_json([tmp_path], capsys)[0] == 0 and txnindex.stat().st_size == 34
    txnindex.write_bytes(b"")
    code, report = verify_json([tmp_path], capsys)
    about = [p for p in report["problems"] if p["file"] == str(txnindex)]
    assert [p["severity"] for p in about] == [severity], about
    assert "no entry for producer 7's ABORT marker at offset 2" in about[0]["message"]
    assert code == (1 if severity == "error" else 0)
