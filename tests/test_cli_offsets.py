"""``kafkaseg offsets`` (kafka-get-offsets.sh output) and ``kafkaseg locate``."""

from __future__ import annotations

import json
import shutil

import pytest

from kafkaseg.cli.main import main
from kafkaseg.testing import TopicSpec, write_data_dir


@pytest.fixture(scope="module")
def datadir(tmp_path_factory):
    return write_data_dir(tmp_path_factory.mktemp("offsets"), [
        TopicSpec("t", partitions=12, records_per_partition=60, segment_bytes=4096),
        TopicSpec("tx", records_per_partition=300, records_per_batch=10, transactional=True, open_transactions=1),
    ], seed=5)


def run(argv, capsys):
    code = main(argv)
    out = capsys.readouterr()
    return code, out.out.splitlines(), out.err


def test_latest_earliest_lines_sorted_like_get_offsets(datadir, capsys):
    code, lines, _ = run(["offsets", "--data-dir", str(datadir.path), "--topic", "t"], capsys)
    assert code == 0
    # GetOffsetShell sorts by TopicPartition.toString: t-0, t-1, t-10, t-11, t-2, ...
    names = sorted(f"t-{p}" for p in range(12))
    assert lines == [f"t:{n.split('-')[1]}:{datadir.partition('t', int(n.split('-')[1])).high_watermark}"
                     for n in names]
    code, lines, _ = run(["offsets", "--data-dir", str(datadir.path), "--topic", "t", "--partitions", "0,3,4",
                          "--time", "earliest"], capsys)
    assert lines == ["t:0:0", "t:3:0", "t:4:0"]


def test_topic_partition_filters_are_get_offsets(datadir, capsys):
    """GetOffsetShell's filters: --topic is optional (every topic), normalised as its TopicFilter (a pasted 'a,b'
    reads both), --topic-partitions rules with exclusive range ends, --exclude-internal-topics."""
    path = str(datadir.path)

    def names(*argv):
        code, lines, err = run(["offsets", "--data-dir", path, "--time", "earliest", *argv], capsys)
        assert code == 0, err
        return [line.rsplit(":", 1)[0] for line in lines]

    every = names()
    assert "tx:0" in every and len(every) == 13
    assert names("--topic", " 't, tx' ") == every
    assert names("--topic-partitions", "t:3-5") == ["t:3", "t:4"]
    assert names("--topic-partitions", "t:10-,tx") == ["t:10", "t:11", "tx:0"]
    assert names("--topic-partitions", "t:-2,:11") == ["t:0", "t:1", "t:11"]
    assert names("--topic-partitions", "t:7") == ["t:7"]
    # Java's split drops trailing empty strings: a trailing comma adds no "every topic" rule, and an empty or
    # all-comma --partitions is GetOffsetShell's empty set, every partition
    assert names("--topic-partitions", "t:7,") == ["t:7"]
    assert names("--topic", "t", "--partitions", "3,") == ["t:3"]
    assert names("--topic", "t", "--partitions", "") == names("--topic", "t", "--partitions", ",") == every[:12]
    assert names("--topic-partitions", "") == every  # Java: "".split(",") is one empty rule, every partition
    assert names("--topic", "t", "--partitions", "+3") == ["t:3"]  # Integer.parseInt takes a sign
    for bad in (" 1", "99999999999"):  # ... but no blank, and only an int
        with pytest.raises(SystemExit):
            main(["offsets", "--data-dir", path, "--topic", "t", "--partitions", bad])
        assert "--partitions expects" in capsys.readouterr().err
    # GetOffsetShell's TerseExceptions: its "Error occurred: " prefix and exit status 1
    code, _, err = run(["offsets", "--data-dir", path, "--topic-partitions", "t:1", "--partitions", ""], capsys)
    assert code == 1 and err == "Error occurred: --topic-partitions cannot be used with --topic or --partitions\n"
    code, _, err = run(["offsets", "--data-dir", path, "--topic", "t", "--topic-partitions", "t:1"], capsys)
    assert code == 1 and err == "Error occurred: --topic-partitions cannot be used with --topic or --partitions\n"
    code, out, err = run(["offsets", "--data-dir", path, "--topic", "nothing"], capsys)
    assert (code, out) == (1, [])
    assert err == "Error occurred: Could not match any topic-partitions with the specified filters\n"


def test_internal_topics_are_excluded_on_request_and_cluster_metadata_only_by_name(tmp_path, capsys):
    manifest = write_data_dir(tmp_path, [TopicSpec("__consumer_offsets", records_per_partition=10),
                                         TopicSpec("__cluster_metadata", records_per_partition=10),
                                         TopicSpec("app", records_per_partition=10)], seed=1)

    def names(*argv):
        code, lines, err = run(["offsets", "--data-dir", str(manifest.path), *argv], capsys)
        return [line.rsplit(":", 1)[0] for line in lines]

    assert names() == ["__consumer_offsets:0", "app:0"]  # Admin.listTopics never lists the metadata log
    assert names("--exclude-internal-topics") == ["app:0"]
    assert names("--topic", "__cluster_metadata") == ["__cluster_metadata:0"]


def test_verbose_says_why_the_filters_matched_no_partition(tmp_path, capsys):
    """``offsets --topic order`` printed GetOffsetShell's "Could not match any topic-partitions" and nothing else,
    also with --verbose ("say why"), where ``describe --topic order`` says "did you mean 'orders'?"; and a regex that
    matches ``__cluster_metadata`` alone (matched only by its exact name) gave no clue why (found by a
    walkthrough). The default stays GetOffsetShell's one line."""
    manifest = write_data_dir(tmp_path, [TopicSpec("__consumer_offsets", records_per_partition=10),
                                         TopicSpec("__cluster_metadata", records_per_partition=10),
                                         TopicSpec("orders", partitions=2, records_per_partition=10)], seed=1)
    no_match = "Error occurred: Could not match any topic-partitions with the specified filters\n"

    def why(*argv):
        code, lines, err = run(["offsets", "--data-dir", str(manifest.path), *argv], capsys)
        assert (code, lines) == (1, [])
        default = run(["offsets", "--data-dir", str(manifest.path), *[a for a in argv if a != "-v"]], capsys)
        assert default == (1, [], no_match)  # without --verbose: GetOffsetShell's line alone
        assert err.startswith(no_match)
        return err[len(no_match):]

    assert "--topic 'order' matches no topic under the paths (did you mean 'orders'?)" in why("--topic", "order", "-v")
    assert "__cluster_metadata is matched only by its exact name" in why("--topic", "__cluster.*", "-v")
    assert "none of partitions 7 of topics --topic matches (orders: 0, 1)" in why(
        "--topic", "orders", "--partitions", "7", "-v")
    assert "left out by --exclude-internal-topics: __consumer_offsets" in why(
        "--topic", "__consumer_offsets", "--exclude-internal-topics", "-v")


def test_verbose_without_topic_says_cluster_metadata_needs_its_exact_name(tmp_path, capsys):
    """A log dir holding only ``__cluster_metadata`` (a KRaft controller's), ``offsets -v`` without ``--topic``: the
    reason was "--topic '.*' matches no topic under the paths", naming an option not given, where the filter is
    the default and ``__cluster_metadata`` is matched only by its exact name."""
    manifest = write_data_dir(tmp_path, [TopicSpec("__cluster_metadata", records_per_partition=10)], seed=1)
    code, lines, err = run(["offsets", "--data-dir", str(manifest.path), "-v"], capsys)
    assert (code, lines) == (1, [])
    assert "__cluster_metadata is matched only by its exact name (--topic __cluster_metadata)" in err, err
    assert "--topic '.*'" not in err, err


def test_data_dir_takes_several_dirs_as_an_unquoted_glob_gives_them(tmp_path, capsys):
    """``--data-dir /data/kafka-logs-*`` unquoted: the shell gives the log dirs as separate words, and
    ``--data-dir`` took one, so the next was "unrecognized arguments: /data/kafka-logs-2" (found by a walkthrough).
    It takes one or more now, in the commands and the jobs alike, and is still repeatable."""
    import importlib

    dirs = []
    for disk, topic in ((1, "a"), (2, "b")):
        dirs.append(str(write_data_dir(tmp_path / f"kafka-logs-{disk}", [TopicSpec(topic, records_per_partition=5)],
                                       seed=1).path))
    code, lines, _ = run(["offsets", "--data-dir", *dirs, "--time", "-1"], capsys)
    assert (code, lines) == (0, ["a:0:5", "b:0:5"])
    code, lines, _ = run(["offsets", "--data-dir", dirs[0], "--data-dir", dirs[1]], capsys)  # repeated, as before
    assert (code, lines) == (0, ["a:0:5", "b:0:5"])
    code, lines, _ = run(["locate", "--data-dir", *dirs, "--topic", "b", "--partition", "0", "--offset", "3"], capsys)
    assert code == 0 and "offset: 3" in "\n".join(lines)
    code, lines, _ = run(["consume", "--data-dir", *dirs, "--include", ".*", "--from-beginning"], capsys)
    assert code == 0 and len(lines) == 10
    for job, more in (("export", ["--output", str(tmp_path / "out")]), ("lookup", ["--input", "x", "--output", "y"]),
                      ("retention_audit", ["--output", "z"]), ("compact", ["--output", "w"])):
        args = importlib.import_module(f"jobs.{job}").parse_args(["--data-dir", *dirs, *more])
        assert args.data_dir == dirs, job


def test_timestamps_iso_and_no_offset(datadir, capsys):
    pm = datadir.partition("t", 2)
    target = pm.records[17]
    code, lines, _ = run(["offsets", "--data-dir", str(datadir.path), "--topic", "t", "--partitions", "2",
                          "--time", str(target.timestamp)], capsys)
    assert lines == [f"t:2:{target.offset}"]
    from datetime import datetime, timezone

    iso = datetime.fromtimestamp(target.timestamp / 1000, tz=timezone.utc).isoformat()
    assert run(["offsets", "--data-dir", str(datadir.path), "--topic", "t", "--partitions", "2", "--time", iso],
               capsys)[1] == [f"t:2:{target.offset}"]
    # past the last record: the broker answers no offset and kafka-get-offsets prints no line
    code, lines, err = run(["offsets", "--data-dir", str(datadir.path), "--topic", "t", "--partitions", "2",
                            "--time", str(pm.records[-1].timestamp + 1), "-v"], capsys)
    assert code == 0 and lines == [] and "no offset" in err
    code, lines, _ = run(["offsets", "--data-dir", str(datadir.path), "--topic", "t", "--partitions", "2",
                          "--time", "-3", "--json", "--stats"], capsys)
    row = json.loads("\n".join(lines))[0]
    last = max(pm.records, key=lambda r: (r.timestamp, -r.offset))
    assert row["offset"] == last.offset and row["timestamp"] == last.timestamp and row["stats"]["indexEntries"] > 0


def test_read_committed_latest_is_the_last_stable_offset(datadir, capsys):
    pm = datadir.partition("tx")
    assert pm.last_stable_offset < pm.high_watermark
    committed = run(["offsets", "--data-dir", str(datadir.path), "--topic", "tx", "--isolation", "read_committed"],
                    capsys)[1]
    assert committed == [f"tx:0:{pm.last_stable_offset}"]
    assert run(["offsets", "--data-dir", str(datadir.path), "--topic", "tx"], capsys)[1] == [
        f"tx:0:{pm.high_watermark}"]
    assert run(["offsets", "--data-dir", str(datadir.path), "--topic", "nope"], capsys)[0] == 1


def test_locate(datadir, capsys):
    pm = datadir.partition("t", 5)
    record = pm.records[33]
    code, lines, _ = run(["locate", "--data-dir", str(datadir.path), "--topic", "t", "--partition", "5",
                          "--offset", str(record.offset), "--json"], capsys)
    location = json.loads("\n".join(lines))["location"]
    assert code == 0 and location["found"] and location["recordOffset"] == record.offset
    assert location["recordTimestamp"] == record.timestamp
    assert location["keySize"] == len(record.key) and location["valueSize"] == len(record.value)
    segment = max(s.base_offset for s in pm.segments if s.base_offset <= record.offset)
    assert location["segment"].endswith(f"{segment:020d}.log")
    with open(location["segment"], "rb") as f:  # the position is where a batch holding the offset starts
        f.seek(location["position"])
        base = int.from_bytes(f.read(8), "big")
    assert base == location["batch"]["baseOffset"] <= record.offset <= location["batch"]["lastOffset"]
    code, lines, _ = run(["locate", "--data-dir", str(datadir.path), "--topic", "t", "--partition", "5",
                          "--time", str(record.timestamp)], capsys)
    assert code == 0 and any(line.startswith("record:") and f"offset: {record.offset} " in line for line in lines)
    assert run(["locate", "--data-dir", str(datadir.path), "--topic", "t", "--partition", "5", "--offset",
                str(pm.log_end_offset)], capsys)[0] == 1


def test_locate_a_time_after_every_record_says_there_is_no_offset(datadir, capsys):
    """No record at or after the time: locate says so (exit 1), in text and in --json. Found on the way to locate
    reading __remote_log_metadata: it raised a ValueError traceback (its lookup returned three values for this
    answer where four were unpacked)."""
    pm = datadir.partition("t", 5)
    after = max(r.timestamp for r in pm.records) + 1
    argv = ["locate", "--data-dir", str(datadir.path), "--topic", "t", "--partition", "5", "--time", str(after)]
    code, lines, _ = run(argv, capsys)
    assert code == 1 and lines == [f"t-5: no offset for time {after} (no record with a timestamp at or after it)"]
    code, lines, _ = run(argv + ["--json"], capsys)
    said = json.loads("\n".join(lines))
    assert code == 1 and said["location"] is None and said["answer"]["offset"] is None


def test_locate_says_when_a_consumer_of_its_isolation_would_not_see_the_record(tmp_path, capsys):
    manifest = write_data_dir(tmp_path, [TopicSpec("p", records_per_partition=400, records_per_batch=10,
                                                   transactional=True, abort_ratio=0.4, open_transactions=1)])
    pm = manifest.partition("p")
    aborted = next(r for r in pm.records if r.aborted)
    committed = next(r for r in pm.records if r.txn_state == "committed")
    past_lso = next(r for r in pm.records if r.offset >= pm.last_stable_offset and not r.is_control)

    def visibility(record, isolation):
        code, lines, _ = run(["locate", "--data-dir", str(tmp_path), "--topic", "p", "--partition", "0", "--offset",
                              str(record.offset), "--isolation", isolation, "--json"], capsys)
        assert code == 0
        return json.loads("\n".join(lines))["visibility"]

    assert "transaction holding it was aborted" in visibility(aborted, "read_committed")
    assert visibility(aborted, "read_uncommitted") is None
    assert visibility(committed, "read_committed") is None
    assert f"at or past the last stable offset {pm.last_stable_offset}" in visibility(past_lso, "read_committed")
    assert visibility(past_lso, "read_uncommitted") is None  # below the high watermark
    marker = next(r for r in pm.records if r.is_control)
    assert "a control record" in visibility(marker, "read_uncommitted")
    # a .log file outside a <topic>-<partition> folder (partition -1): located, its visibility not asked of a read
    loose = tmp_path / "loose"
    loose.mkdir()
    shutil.copy(pm.segments[0].log_path, loose / "00000000000000000000.log")
    code, lines, _ = run(["locate", "--data-dir", str(loose / "00000000000000000000.log"), "--topic", "loose",
                          "--partition", "-1", "--offset", str(aborted.offset), "--isolation", "read_committed",
                          "--json"], capsys)
    assert code == 0 and json.loads("\n".join(lines))["location"]["recordOffset"] == aborted.offset


def test_locate_prints_a_null_key_or_value_size_as_minus_one(tmp_path, capsys):
    """keySize/valueSize of a null key or value: -1, as DumpLogSegments (and dump) print them, not None."""
    manifest = write_data_dir(tmp_path, [TopicSpec("n", records_per_partition=40, null_key_ratio=0.5,
                                                   tombstone_ratio=0.5)], seed=2)
    records = manifest.partition("n").records
    for record in (next(r for r in records if r.key is None), next(r for r in records if r.value is None)):
        code, lines, _ = run(["locate", "--data-dir", str(tmp_path), "--topic", "n", "--partition", "0",
                              "--offset", str(record.offset)], capsys)
        line = next(line for line in lines if line.startswith("record:"))
        sizes = (-1 if record.key is None else len(record.key), -1 if record.value is None else len(record.value))
        assert code == 0 and line.endswith(f" keySize: {sizes[0]} valueSize: {sizes[1]}"), line


@pytest.mark.parametrize("argv, says", [
    (["--partitions", "a"], "--partitions"),
    (["--partitions", "3-1"], "--partitions"),
    (["--partitions", "1-3"], "upper bound exclusive"),  # a range is --topic-partitions', as in Kafka
    (["--partitions", "1-x"], "--partitions"),
    (["--topic", "["], "invalid regex"),
    (["--time", "99999999999999999999"], "--time"),
    (["--time", "-9223372036854775809"], "--time"),
    (["--time", "yesterday"], "--time"),
])
def test_bad_arguments_are_one_line_usage_errors(datadir, capsys, argv, says):
    base = ["offsets", "--data-dir", str(datadir.path), "--topic", "t"]
    with pytest.raises(SystemExit) as exit_info:
        main(base + argv)
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and says in err.splitlines()[-1], err


@pytest.mark.parametrize("argv, says", [(["--time", "soon"], "--time"),
                                        (["--offset", "-5"], "not a record offset"),
                                        (["--offset", "x"], "not a record offset")])
def test_locate_bad_time_or_offset_is_a_usage_error(datadir, capsys, argv, says):
    with pytest.raises(SystemExit) as exit_info:
        main(["locate", "--data-dir", str(datadir.path), "--topic", "t", "--partition", "0", *argv])
    assert exit_info.value.code == 2 and says in capsys.readouterr().err


def test_latest_without_a_checkpointed_high_watermark_is_noted(tmp_path, capsys):
    manifest = write_data_dir(tmp_path, [TopicSpec("t", partitions=2, records_per_partition=60)], seed=5)
    (tmp_path / "replication-offset-checkpoint").write_text("0\n1\nt 1 60\n")  # t-0 is not in it
    code, lines, err = run(["offsets", "--data-dir", str(tmp_path), "--topic", "t", "-v"], capsys)
    assert code == 0 and lines == [f"t:0:{manifest.partition('t', 0).log_end_offset}", "t:1:60"]
    assert "t:0: note: replication-offset-checkpoint has no high watermark" in err and "t:1: note" not in err
    code, out, _ = run(["offsets", "--data-dir", str(tmp_path), "--topic", "t", "--json"], capsys)
    rows = {r["partition"]: r for r in json.loads("\n".join(out))}
    assert "log end offset" in rows[0]["note"] and "note" not in rows[1]
    code, _, err = run(["offsets", "--data-dir", str(tmp_path), "--topic", "t", "--time", "-2", "-v"], capsys)
    assert "note" not in err  # earliest does not depend on the high watermark


def test_max_timestamp_with_no_answer_says_why_in_its_own_words(tmp_path, capsys):
    """-3 with no answer said "no record with a timestamp at or after it", the wording of a time lookup."""
    from kafkaseg.testing import Record, build_batch_v2, build_legacy_entries
    from tests.test_cli_verify_edges import write_partition

    t0 = 1_700_000_000_000
    records = [Record(o, t0 + o, b"k", b"v") for o in range(4)]
    write_partition(tmp_path / "v0", build_legacy_entries(records, 0))
    # the cleaner keeps a producer's last batch with no record left, and its max timestamp
    write_partition(tmp_path / "emptied", [build_batch_v2(records),
                                           build_batch_v2([], base_offset=4, last_offset=6, producer_id=7,
                                                          producer_epoch=0, empty_timestamp=t0 + 100)])
    for where, why in (("v0", "message format v0 has none"), ("emptied", "compaction removed it")):
        code, lines, err = run(["offsets", "--data-dir", str(tmp_path / where), "--topic", "t", "--time", "-3",
                                "-v"], capsys)
        assert code == 0 and lines == []
        assert err.startswith("t:0: no offset (no record carries the partition's largest timestamp (") and why in err
        assert "at or after" not in err, err


def test_a_segment_deleted_by_retention_during_a_lookup_is_answered_from_the_partition_as_it_is_now(tmp_path,
                                                                                                     capsys,
                                                                                                     monkeypatch):
    from kafkaseg.lookup import PartitionLookup
    from kafkaseg.testing.partition import write_offset_checkpoint

    manifest = write_data_dir(tmp_path / "data", [TopicSpec("r", records_per_partition=300, records_per_batch=10,
                                                            segment_bytes=4096)], seed=7)
    folder = tmp_path / "data" / "r-0"
    first, second = sorted(folder.glob("*.log"))[:2]
    records = manifest.partition("r").records
    real = PartitionLookup.list_offset

    def retention_meanwhile(self, spec, **kwargs):
        if first.exists():
            for path in (first, first.with_suffix(".index"), first.with_suffix(".timeindex")):
                path.rename(path.with_name(path.name + ".deleted"))
            write_offset_checkpoint(tmp_path / "data" / "log-start-offset-checkpoint", {("r", 0): int(second.stem)})
        return real(self, spec, **kwargs)

    monkeypatch.setattr(PartitionLookup, "list_offset", retention_meanwhile)
    code, lines, err = run(["offsets", "--data-dir", str(tmp_path / "data"), "--topic", "r", "--time",
                            str(records[0].timestamp)], capsys)
    assert code == 0 and lines == [f"r:0:{int(second.stem)}"], err  # the first record still there


def test_a_partition_that_cannot_be_answered_is_skipped_and_the_others_printed(tmp_path, capsys):
    """GetOffsetShell answers each partition on its own ("Skip getting offsets for topic-partition ... due to
    error"); one corrupt batch no longer hides every other partition's answer. Exit 2 says something was skipped."""
    manifest = write_data_dir(tmp_path / "d", [TopicSpec("a", partitions=2, records_per_partition=50)], seed=3)
    log_file = tmp_path / "d" / "a-1" / "00000000000000000000.log"
    data = bytearray(log_file.read_bytes())
    data[70] ^= 0xFF  # inside the first batch's records: its CRC fails
    log_file.write_bytes(bytes(data))
    stamp = manifest.partition("a", 0).records[10].timestamp
    code, lines, err = run(["offsets", "--data-dir", str(tmp_path / "d"), "--time", str(stamp)], capsys)
    assert code == 2 and lines == ["a:0:10"]
    assert "Skip getting offsets for topic-partition a-1 due to error: " in err and "CRC" in err
    code, lines, _ = run(["offsets", "--data-dir", str(tmp_path / "d"), "--time", str(stamp), "--json"], capsys)
    rows = json.loads("\n".join(lines))
    assert code == 2 and [(r["partition"], "error" in r) for r in rows] == [(0, False), (1, True)]


def test_a_partition_skipped_before_others_leaves_their_answers_and_notes_alone(tmp_path, capsys):
    """The partition that cannot be answered comes first: the skip's own notes overwrote the list of the answered
    partitions' notes (AttributeError on the next partition, a traceback and none of their answers; or, with the
    skip last, a note made of one character of the error's notes in --json)."""
    manifest = write_data_dir(tmp_path / "d", [TopicSpec("a", partitions=3, records_per_partition=50)], seed=3)
    for bad in ("a-0", "a-2"):
        log_file = tmp_path / "d" / bad / "00000000000000000000.log"
        data = bytearray(log_file.read_bytes())
        data[70] ^= 0xFF  # inside the first batch's records: its CRC fails
        log_file.write_bytes(bytes(data))
    stamp = manifest.partition("a", 1).records[10].timestamp
    code, lines, err = run(["offsets", "--data-dir", str(tmp_path / "d"), "--time", str(stamp)], capsys)
    assert code == 2 and lines == ["a:1:10"], err
    assert err.count("Skip getting offsets for topic-partition a-") == 2 and "Traceback" not in err
    code, lines, _ = run(["offsets", "--data-dir", str(tmp_path / "d"), "--time", str(stamp), "--json", "-v"],
                         capsys)
    rows = json.loads("\n".join(lines))
    assert code == 2 and [(r["partition"], "error" in r) for r in rows] == [(1, False), (0, True), (2, True)]
    assert "note" not in rows[0], rows[0]


def test_a_log_file_given_answers_for_its_whole_partition(datadir, capsys):
    """As describe and reads do: one .log file stands for its partition (whose log start and end the broker
    answers), not for the offsets inside that file."""
    folder = datadir.path / "t-0"
    logs = sorted(folder.glob("*.log"))
    assert len(logs) > 1
    whole = datadir.partition("t", 0)
    for log_file in (logs[0], logs[-1]):
        for spec, expected in (("-1", whole.high_watermark), ("-2", 0)):
            code, lines, _ = run(["offsets", "--data-dir", str(log_file), "--time", spec], capsys)
            assert code == 0 and lines == [f"t:0:{expected}"]


def test_locate_given_a_log_file_answers_for_its_whole_partition(datadir, capsys):
    logs = sorted((datadir.path / "t-0").glob("*.log"))
    whole = datadir.partition("t", 0)
    last = whole.high_watermark - 1
    code, lines, _ = run(["locate", "--data-dir", str(logs[0]), "--topic", "t", "--partition", "0",
                          "--offset", str(last), "--json"], capsys)
    found = json.loads("\n".join(lines))["location"]
    assert code == 0 and found["found"] and found["recordOffset"] == last


def test_commands_pasted_from_kafka_tools(datadir, capsys):
    """A kafka-get-offsets.sh command line pasted with --bootstrap-server gets a hint instead of argparse's
    "required: --data-dir"; its --command-config is accepted (no effect), and --isolation-level (the console
    consumer's spelling) is --isolation."""
    code, out, err = run(["offsets", "--bootstrap-server", "localhost:9092", "--topic", "a"], capsys)
    assert code == 2 and out == [] and "reads log dirs, not brokers: give --data-dir DIR" in err
    code, _, err = run(["locate", "--bootstrap-server=localhost:9092", "--topic", "a", "--partition", "0",
                        "--offset", "1"], capsys)
    assert code == 2 and "give --data-dir DIR" in err
    code, _, err = run(["describe", "--bootstrap-server", "b:9092"], capsys)
    assert code == 2 and "give the log dirs as arguments" in err
    base = ["offsets", "--data-dir", str(datadir.path), "--time", "-1"]
    code, expected, _ = run(base + ["--isolation", "read_committed"], capsys)
    assert code == 0 and expected
    assert run(base + ["--isolation-level", "read_committed", "--command-config", "client.properties"],
               capsys)[:2] == (0, expected)


def test_locate_names_what_is_there_when_the_partition_is_not(datadir, capsys):
    code, _, err = run(["locate", "--data-dir", str(datadir.path), "--topic", "t", "--partition", "99",
                        "--offset", "1"], capsys)
    assert code == 1 and "no partition t-99" in err and "(its partitions there: 0, 1, 2," in err
    code, _, err = run(["locate", "--data-dir", str(datadir.path), "--topic", "txx", "--partition", "0",
                        "--offset", "1"], capsys)
    assert code == 1 and "no partition txx-0" in err and "did you mean 'tx'?" in err
    assert err.startswith("kafkaseg locate: no partition txx-0 under "), err  # named as every command's error is
    # --stats lines are JSON, not a Python dict's repr
    code, _, err = run(["offsets", "--data-dir", str(datadir.path), "--topic", "tx", "--stats"], capsys)
    line = next(line for line in err.splitlines() if line.startswith("tx-0: "))
    assert code == 0 and json.loads(line[len("tx-0: "):])["filesOpened"] >= 1


@pytest.mark.parametrize("unbuffered", [False, True], ids=["buffered", "PYTHONUNBUFFERED"])
def test_a_reader_that_stops_early_ends_the_command_quietly(tmp_path, unbuffered):
    """`kafkaseg retention ... | true`: the closed pipe ends the command with status 0 and nothing on stderr
    (rich exited 1 there, silently). The reader is gone before the command starts (its end of the pipe closed
    first), so no timing decides whether a write meets it: the test closed its end after starting the command,
    and a command whose output was all written before that (a parent slow under load) passed whatever it did
    with a closed pipe. And with stdout buffered, as it is for a user (the test inherited PYTHONUNBUFFERED=1 from
    this machine, so every print was a write), `offsets`' few KB stayed in the buffer until the interpreter's exit,
    after main's handling of a closed pipe: "Exception ignored ... BrokenPipeError" on stderr, status 120."""
    import os

    data = write_data_dir(tmp_path / "logs", [TopicSpec("t", partitions=600, records_per_partition=1)], seed=1)
    wide = write_data_dir(tmp_path / "wide", [TopicSpec("w" * 200, partitions=400, records_per_partition=1)], seed=1)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    if unbuffered:
        env["PYTHONUNBUFFERED"] = "1"
    for argv in (["describe", str(data.path)], ["retention", str(data.path), "--segments"],
                 ["offsets", "--data-dir", str(data.path)], ["describe", str(wide.path)]):  # wider than 240
        assert _into_closed_pipe(argv, env) == (0, ""), argv


def _into_closed_pipe(argv: list[str], env: dict[str, str]) -> tuple[int, str]:
    """``kafkaseg <argv> | true``, the reader gone before anything was written: (status, stderr)."""
    import os
    import subprocess
    import sys

    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        proc = subprocess.Popen([sys.executable, "-m", "kafkaseg.cli.main", *argv], stdout=write_end,
                                stderr=subprocess.PIPE, env=env)
    finally:
        os.close(write_end)
    err = proc.stderr.read().decode()
    return proc.wait(), err


def test_a_closed_pipe_keeps_the_commands_status(tmp_path):
    """``kafkaseg locate ... --offset <past the end> | true``: exit 1 (no record has the offset) whether or not the
    reader read the answer; main's flush of the buffered answer into a closed pipe returned 0 ("found")."""
    import os

    data = write_data_dir(tmp_path / "logs", [TopicSpec("t", records_per_partition=5)], seed=1)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    argv = ["locate", "--data-dir", str(data.path), "--topic", "t", "--partition", "0", "--offset", "999"]
    assert main(argv) == 1  # (the status a reader sees)
    assert _into_closed_pipe(argv, env) == (1, "")


def test_verbose_says_which_way_the_high_watermark_is_missing(tmp_path, capsys):
    """offsets -v said "replication-offset-checkpoint has no high watermark for this partition" when the file was
    not there at all (found by the incident audit): a copy that missed the file is told apart from an entry
    missing."""
    from kafkaseg.cli.main import main
    from kafkaseg.testing import TopicSpec, write_data_dir

    write_data_dir(tmp_path / "d", [TopicSpec("t", records_per_partition=20)])
    (tmp_path / "d" / "replication-offset-checkpoint").unlink()
    assert main(["offsets", "--data-dir", str(tmp_path / "d"), "--topic", "t", "--time", "-1", "-v"]) == 0
    err = capsys.readouterr().err
    assert "no replication-offset-checkpoint in its log dir" in err and "stands in for it" in err
    (tmp_path / "d" / "replication-offset-checkpoint").write_text("0\n0\n")
    assert main(["offsets", "--data-dir", str(tmp_path / "d"), "--topic", "t", "--time", "-1", "-v"]) == 0
    assert "has no high watermark for this partition" in capsys.readouterr().err


def test_describe_takes_no_progress_as_verify_and_dump_do(tmp_path, capsys):
    from kafkaseg.cli.main import main
    from kafkaseg.testing import TopicSpec, write_data_dir

    write_data_dir(tmp_path / "d", [TopicSpec("t", records_per_partition=20)])
    assert main(["describe", str(tmp_path / "d"), "--no-progress"]) == 0


def test_a_corrupt_high_watermark_checkpoint_fails_offsets_and_locate_unless_the_log_may_stand_in(tmp_path, capsys):
    """A power loss that garbled replication-offset-checkpoint blocked offsets and locate altogether, a sound record
    included, with no way on short of editing the copy (found by the incident audit). --on-corruption skip lets
    the log end stand in for the high watermark, said on stderr per partition."""
    from kafkaseg.cli.main import main
    from kafkaseg.testing import TopicSpec, write_data_dir

    write_data_dir(tmp_path / "d", [TopicSpec("t", partitions=2, records_per_partition=40)])
    (tmp_path / "d" / "replication-offset-checkpoint").write_text("garbage\n")
    data = str(tmp_path / "d")
    assert main(["offsets", "--data-dir", data, "--topic", "t"]) == 2
    assert "--on-corruption skip" in capsys.readouterr().err
    assert main(["locate", "--data-dir", data, "--topic", "t", "--partition", "1", "--offset", "7"]) != 0
    capsys.readouterr()
    assert main(["offsets", "--data-dir", data, "--topic", "t", "--on-corruption", "skip"]) == 0
    out, err = capsys.readouterr()
    assert out.split() == ["t:0:40", "t:1:40"]
    assert err.count("replication-offset-checkpoint is unreadable") == 2 and "stands in for its high watermark" in err
    assert main(["locate", "--data-dir", data, "--topic", "t", "--partition", "1", "--offset", "7",
                 "--on-corruption", "skip"]) == 0
    assert "offset: 7" in capsys.readouterr().out


def test_locate_of_an_offset_in_no_batch_names_loss_too(tmp_path, capsys):
    """An offset between segments: the reason named compaction only, on a delete-policy topic whose segment was cut
    short as well (found by the incident audit)."""
    from kafkaseg.cli.main import main
    from kafkaseg.testing import PartitionWriter, Record, build_batch_v2

    writer = PartitionWriter(tmp_path / "t-0")
    writer.append(build_batch_v2([Record(o, 1_700_000_000_000, None, b"v") for o in range(5)]))
    writer.roll(10)
    writer.append(build_batch_v2([Record(o, 1_700_000_000_000, None, b"v") for o in range(10, 15)]))
    writer.close()
    assert main(["locate", "--data-dir", str(tmp_path), "--topic", "t", "--partition", "0", "--offset", "7"]) != 0
    out = capsys.readouterr()
    text = out.out + out.err
    assert "removed by compaction, a gap between segments, or lost" in text and "kafkaseg verify" in text, text


@pytest.mark.parametrize("onto", [260, 400], ids=["next-segments-first-batch", "a-later-batch"])
def test_locate_calls_a_base_offset_raised_onto_a_later_segments_batch_corruption_as_a_read_does(tmp_path, capsys,
                                                                                                  onto):
    """A rolled segment's last batch whose base offset (outside the CRC) was raised onto the base and last offsets of
    a batch a later segment holds: a strict read raises at it (file, byte) and a lenient one skips it, its records
    not being that batch's (a compacted copy's would be). `locate` of an offset in it said "offset 252 is not in the
    log (...); the next record is at 260", exit 1, with or without --on-corruption skip: the lookups took the batch
    for a merged copy's, comparing its offsets only. Now strictly the read's error (exit 2), leniently unreadable."""
    import kafkaseg
    from kafkaseg.errors import CorruptBatchError
    from tests import offset_damage

    root = offset_damage.write(tmp_path / "kafka")
    log, bad, _, following = offset_damage.damage(root, 1, 12, 250 ^ onto)
    assert (bad.base_offset, following) == (250, 260)
    with pytest.raises(CorruptBatchError) as info:
        kafkaseg.read_arrow(str(root), columns=["offset"])
    assert (info.value.path, info.value.position) == (str(log), bad.position)
    read = set(kafkaseg.read_arrow(str(root), columns=["offset"], onCorruption="skip").column("offset").to_pylist())
    assert read == set(range(offset_damage.RECORDS)) - set(range(250, 260))
    locate = ["locate", "--data-dir", str(root), "--topic", "t", "--partition", "0", "--offset", "252"]
    code, _, err = run(locate, capsys)
    assert code == 2 and f"{log} @ byte {bad.position}" in err, (code, err)
    code, lines, err = run(locate + ["--on-corruption", "skip", "--json"], capsys)
    location = json.loads("\n".join(lines))["location"]
    assert code == 1 and not location["found"] and location["recordOffset"] == 260, location
    assert "offsets 250..259 are lost to damage" in location["reason"], location["reason"]
    assert f"{log} @ byte {bad.position}" in location["reason"], location["reason"]


@pytest.mark.parametrize("magic", [0, 1])
def test_locate_calls_a_legacy_entry_raised_past_the_next_segment_corruption_as_a_read_does(tmp_path, capsys, magic):
    """A rolled segment's last legacy entry whose offset (outside the CRC) was raised past the next segment, into a
    later one's offsets: the next segment does not span them (the one after it starts below them), so a strict read
    raises at the entry and a lenient one leaves it out. The lookups let any legacy entry past the next base end the
    segment (as a cleaner's merged copy would), and `locate` said "not in the log" (exit 1), with or without
    --on-corruption skip; they take the read's rule (the next segment must span them) for every message format now."""
    import struct

    import kafkaseg
    from kafkaseg.errors import CorruptBatchError
    from kafkaseg.wire.batch import iter_headers

    write_data_dir(tmp_path, [TopicSpec("t", records_per_partition=200, records_per_batch=5, vary_batch_size=False,
                                        magic=magic, segment_bytes=3000, index_interval_bytes=1024)])
    logs = sorted((tmp_path / "t-0").glob("*.log"))
    log, next_base, further = logs[0], int(logs[1].stem), int(logs[2].stem)
    data = bytearray(log.read_bytes())
    last = list(iter_headers(bytes(data)))[-1]
    assert last.last_offset == next_base - 1
    struct.pack_into(">q", data, last.position, further + 2)  # into the segment after the next one
    log.write_bytes(bytes(data))
    with pytest.raises(CorruptBatchError) as info:
        kafkaseg.read_arrow(str(tmp_path), columns=["offset"])
    assert (info.value.path, info.value.position) == (str(log), last.position)
    read = kafkaseg.read_arrow(str(tmp_path), columns=["offset"], onCorruption="skip").column("offset").to_pylist()
    assert next_base - 1 not in read and next_base in read
    locate = ["locate", "--data-dir", str(tmp_path), "--topic", "t", "--partition", "0", "--offset",
              str(next_base - 1)]
    code, _, err = run(locate, capsys)
    assert code == 2 and f"{log} @ byte {last.position}" in err, (code, err)
    code, lines, _ = run(locate + ["--on-corruption", "skip", "--json"], capsys)
    location = json.loads("\n".join(lines))["location"]
    assert code == 1 and location["recordOffset"] == next_base, location
    assert "unreadable" in location["reason"] and f"{log} @ byte {last.position}" in location["reason"], location


def test_locate_and_offsets_after_zeros_under_an_index_entry(tmp_path, capsys):
    """`locate` of an offset in the sound batch after a zeroed page said "offset N is not in the log ... the next
    record is at <the next segment's base>", with or without --on-corruption skip, though a lenient read returns
    it. Strictly that is now the damage's error (file @ byte, and how to read on); with --on-corruption skip it is
    found, and an offset lost to the damage is unreadable, with its range. `offsets --time` alike."""
    from tests.test_lookup import zero_page_under_an_index_entry

    zeroed = zero_page_under_an_index_entry(tmp_path)
    data = str(tmp_path)
    offset = next(o for o in zeroed.after if o < zeroed.next_entry_offset)  # its floor entry points into the zeros
    locate = ["locate", "--data-dir", data, "--topic", "orders", "--partition", "0"]
    code, lines, err = run(locate + ["--offset", str(offset)], capsys)
    assert code == 2 and f"{zeroed.log} @ byte" in err and "--on-corruption skip" in err, (code, lines, err)
    assert "not in the log" not in "\n".join(lines) + err
    code, lines, err = run(locate + ["--offset", str(offset), "--on-corruption", "skip"], capsys)
    assert code == 0 and any(f"offset: {offset} " in line for line in lines), lines
    assert f"{zeroed.log} @ byte" in err, err  # what it went past, on stderr
    lost = zeroed.lost[len(zeroed.lost) // 2]
    code, lines, err = run(locate + ["--offset", str(lost), "--on-corruption", "skip", "--json"], capsys)
    location = json.loads("\n".join(lines))["location"]
    assert code == 1 and not location["found"] and location["recordOffset"] == zeroed.after[0], location
    assert f"offsets {zeroed.lost[0]}..{zeroed.lost[-1]}" in location["reason"] and "unreadable" in location["reason"]
    when = str(zeroed.records[lost].timestamp)
    offsets = ["offsets", "--data-dir", data, "--topic", "orders", "--time", when]
    code, lines, err = run(offsets + ["--on-corruption", "skip"], capsys)
    assert code == 0 and lines == [f"orders:0:{zeroed.after[0]}"], (lines, err)
    code, lines, err = run(offsets, capsys)
    assert code == 2 and lines == [] and f"{zeroed.log} @ byte" in err, (lines, err)


# -- several copies of a partition: the lookups fall back as strict reads do ----------------------------------------

def _two_copies(tmp_path, records: int = 300, other_records: int | None = None):
    """Two brokers' copies of t-0 (``a`` and ``b``, one topic id): ``b`` holds ``other_records`` (default the same
    as ``a``: a whole copy; fewer: a follower behind)."""
    from pathlib import Path

    tmp_path = Path(tmp_path)
    write_data_dir(tmp_path / "a", [TopicSpec("t", records_per_partition=records, records_per_batch=10)], seed=2)
    write_data_dir(tmp_path / "b", [TopicSpec("t", records_per_partition=other_records or records,
                                              records_per_batch=10)], seed=2)
    shutil.copy(tmp_path / "a" / "t-0" / "partition.metadata", tmp_path / "b" / "t-0" / "partition.metadata")
    return str(tmp_path / "a"), str(tmp_path / "b")


def _corrupt_batch(log, offset: int):
    """Flip a byte inside the records of the batch of ``log`` holding ``offset`` (its CRC then fails): its header."""
    from kafkaseg.wire.batch import iter_headers

    data = bytearray(log.read_bytes())
    (header,) = [h for h in iter_headers(bytes(data)) if h.base_offset <= offset <= h.last_offset]
    data[header.position + 70] ^= 0xFF
    log.write_bytes(bytes(data))
    return header


def _dirs(*paths):
    return [arg for path in paths for arg in ("--data-dir", path)]


def _record_time(path, offset: int) -> int:
    import kafkaseg

    table = kafkaseg.read_arrow(path, columns=["offset", "timestamp"], timestampUnit="ms")
    return table.column("timestamp").to_pylist()[table.column("offset").to_pylist().index(offset)]


def test_offsets_and_locate_answer_from_another_copy_where_the_chosen_one_is_corrupt(tmp_path, capsys):
    """Given two brokers' copies, the lookups choose one as reads do (the highest high watermark; a tie by order)
    and, when it is corrupt where the answer lies, answer from the other copy as a strict read reads the corrupt
    batch's offsets from it: the answer the sound copy gives, and stderr says which copy and why in the read's
    words. They failed ('Skip getting offsets ...') though the other copy answered."""
    a, b = _two_copies(tmp_path)
    log = tmp_path / "a" / "t-0" / "00000000000000000000.log"
    header = _corrupt_batch(log, 86)
    wanted = 86
    ms = _record_time(b, wanted)
    other = str(tmp_path / "b" / "t-0")
    code, sound, _ = run(["offsets", *_dirs(b), "--time", str(ms)], capsys)
    assert (code, sound) == (0, [f"t:0:{wanted}"])
    code, lines, err = run(["offsets", *_dirs(a, b), "--time", str(ms)], capsys)
    assert (code, lines) == (0, sound), err
    assert f"kafkaseg offsets: t-0: {log} is corrupt at byte {header.position} (" in err
    assert f"offsets 0..{wanted} read from the copy in {other} instead" in err and "Skip getting" not in err
    code, lines, _ = run(["offsets", *_dirs(a, b), "--time", str(ms), "--json"], capsys)
    (row,) = json.loads("\n".join(lines))
    assert row["offset"] == wanted and "read from the copy in" in row["otherCopiesRead"][0]
    # locate: the record as the sound copy holds it, named in its file
    code, sound, _ = run(["locate", *_dirs(b), "--topic", "t", "--partition", "0", "--offset", str(wanted)], capsys)
    assert code == 0
    code, lines, err = run(["locate", *_dirs(a, b), "--topic", "t", "--partition", "0", "--offset", str(wanted)],
                           capsys)
    assert (code, lines) == (0, sound), err
    assert f"kafkaseg locate: t-0: {log} is corrupt at byte {header.position}" in err and other in err
    code, lines, err = run(["locate", *_dirs(a, b), "--topic", "t", "--partition", "0", "--time", str(ms),
                            "--json"], capsys)
    out = json.loads("\n".join(lines))
    assert code == 0 and out["location"]["recordOffset"] == wanted and out["otherCopiesRead"]
    # an answer the chosen copy gives without meeting the damage is its own, nothing said
    code, lines, err = run(["offsets", *_dirs(a, b), "--time", str(_record_time(b, 10))], capsys)
    assert (code, lines) == (0, ["t:0:10"]) and "corrupt" not in err
    # --on-corruption skip goes past the damage as a read with onCorruption=skip does: no other copy is read
    code, lines, err = run(["offsets", *_dirs(a, b), "--time", str(ms), "--on-corruption", "skip"], capsys)
    assert code == 0 and lines == [f"t:0:{header.last_offset + 1}"]
    assert "went past damage" in err and "read from the copy" not in err


def test_a_copy_behind_the_chosen_one_answers_only_what_it_holds(tmp_path, capsys):
    """A follower behind the chosen copy (its log ends lower) stands in for offsets it holds, as a read takes a
    corrupt batch from a shorter copy that holds it, but never answers from what it lacks: a time past its log
    end, or max-timestamp (the whole log), fails naming it and why, as a read that no copy can supply fails."""
    a, b = _two_copies(tmp_path, 300, 200)
    log = tmp_path / "a" / "t-0" / "00000000000000000000.log"
    late, early = _record_time(a, 250), _record_time(a, 50)
    _corrupt_batch(log, 250)  # above the follower's log end
    code, lines, err = run(["offsets", *_dirs(a, b), "--time", str(late)], capsys)
    assert code == 2 and lines == [] and "Skip getting offsets for topic-partition t-0" in err
    assert f"other copies in the paths given, which the replica choice passed over: {tmp_path / 'b' / 't-0'}" in err
    assert "its log ends at 200, behind the chosen copy (the answer rests on offsets up to 299)" in err
    _corrupt_batch(log, 50)  # below it: the follower holds those offsets
    code, lines, err = run(["offsets", *_dirs(a, b), "--time", str(early)], capsys)
    assert (code, lines) == (0, ["t:0:50"]), err
    assert "offsets 0..50 read from the copy in" in err
    # the answer is bounded by the chosen copy's high watermark: -v's notes are the chosen copy's, not the
    # follower's log end "below" it
    code, lines, err = run(["offsets", *_dirs(a, b), "--time", str(early), "-v"], capsys)
    assert (code, lines) == (0, ["t:0:50"]) and "above the log end" not in err, err
    # max-timestamp rests on the whole log (its record is in the last batch, corrupt now)
    code, lines, err = run(["offsets", *_dirs(a, b), "--time", "max-timestamp"], capsys)
    assert (code, lines) == (0, ["t:0:299"]) and "corrupt" not in err
    _corrupt_batch(log, 299)
    code, lines, err = run(["offsets", *_dirs(a, b), "--time", "max-timestamp"], capsys)
    assert code == 2 and "its log ends at 200, behind the chosen copy" in err


def test_every_copy_corrupt_fails_naming_them_as_a_read_does(tmp_path, capsys):
    """When no copy can answer (each corrupt where the answer lies), the lookup fails as a read that no copy can
    supply fails: the chosen copy's error, naming the other copies and what was tried."""
    a, b = _two_copies(tmp_path)
    ms = _record_time(b, 123)  # (before the damage: every copy is corrupt at the batch holding it)
    for name in ("a", "b"):
        _corrupt_batch(tmp_path / name / "t-0" / "00000000000000000000.log", 123)
    code, lines, err = run(["offsets", *_dirs(a, b), "--time", str(ms)], capsys)
    assert code == 2 and lines == [] and "Skip getting offsets for topic-partition t-0" in err
    assert f"which the replica choice passed over: {tmp_path / 'b' / 't-0'}" in err and "corrupt too" in err
    code, lines, err = run(["locate", *_dirs(a, b), "--topic", "t", "--partition", "0", "--offset", "123"], capsys)
    assert code == 2 and "which the replica choice passed over" in err


def test_another_copy_answers_within_the_chosen_copys_high_watermark(tmp_path, capsys):
    """A follower whose checkpointed high watermark lags (its files hold the offsets) stands in bounded as the
    chosen copy is, as a read of both plans with the chosen copy's high watermark: a time whose record is between
    the two is answered with it, as the read returns it, not as 'no offset' (the follower's own bound)."""
    import kafkaseg

    a, b = _two_copies(tmp_path)
    ms = _record_time(b, 270)
    (tmp_path / "b" / "replication-offset-checkpoint").write_text("0\n1\nt 0 250\n")
    code, lines, _ = run(["offsets", *_dirs(b), "--time", str(ms)], capsys)
    assert (code, lines) == (0, [])  # (alone, at or past its high watermark)
    _corrupt_batch(tmp_path / "a" / "t-0" / "00000000000000000000.log", 270)
    read = kafkaseg.read_arrow([a, b], columns=["offset", "timestamp"], timestampUnit="ms")
    assert 270 in read.column("offset").to_pylist()  # (the read takes the corrupt batch from b)
    code, lines, err = run(["offsets", *_dirs(a, b), "--time", str(ms)], capsys)
    assert (code, lines) == (0, ["t:0:270"]), err
    assert "offsets 0..270 read from the copy in" in err
    code, lines, err = run(["offsets", *_dirs(a, b), "--time", "latest"], capsys)
    assert (code, lines) == (0, ["t:0:300"])



def test_only_the_answering_copys_lines_are_said(tmp_path, capsys):
    """Three copies: ``a`` chosen and corrupt where the answer lies; ``b``, whose own lookup answers and says its
    lost tail (its high watermark and recovery point above its log end), but which starts above the offsets the
    answer rests on, so it is passed over; ``c``, a follower with a lost tail of its own, which answers. b's line was
    said on stderr though b gave no answer: only the answering copy's lines, and the line saying which copy
    answered, are said."""
    a, b = _two_copies(tmp_path, 300, 200)
    c = _two_copies(tmp_path / "more", 300, 250)[1]
    shutil.copy(tmp_path / "a" / "t-0" / "partition.metadata", tmp_path / "more" / "b" / "t-0" / "partition.metadata")
    for root in (tmp_path / "b", tmp_path / "more" / "b"):
        for name in ("replication-offset-checkpoint", "recovery-point-offset-checkpoint"):
            (root / name).write_text("0\n1\nt 0 300\n")
    (tmp_path / "b" / "log-start-offset-checkpoint").write_text("0\n1\nt 0 100\n")
    ms = _record_time(a, 86)
    for path, lost, answer in ((b, "offsets 200..299 lost", 100), (c, "offsets 250..299 lost", 86)):
        code, lines, err = run(["offsets", *_dirs(path), "--time", str(ms)], capsys)
        assert (code, lines) == (0, [f"t:0:{answer}"]) and lost in err, err  # (each copy's own line)
    _corrupt_batch(tmp_path / "a" / "t-0" / "00000000000000000000.log", 86)
    code, lines, err = run(["offsets", *_dirs(a, b, c), "--time", str(ms)], capsys)
    assert (code, lines) == (0, ["t:0:86"]), err
    own, fallback = err.splitlines()
    assert "offsets 250..299 lost" in own and "offsets 200..299" not in err, err
    assert f"offsets 0..86 read from the copy in {tmp_path / 'more' / 'b' / 't-0'} instead" in fallback, err


def test_locate_says_only_the_reason_the_high_watermark_supports(tmp_path, capsys):
    """Past the last stable offset but below the high watermark the record is acknowledged: only its open
    transaction hides it; at or past the high watermark it is not acknowledged; with no checkpointed high watermark
    (the log end stands in) either may be, and both are said."""
    from kafkaseg.testing.partition import write_offset_checkpoint

    manifest = write_data_dir(tmp_path, [TopicSpec("p", records_per_partition=400, records_per_batch=10,
                                                   transactional=True, abort_ratio=0.4, open_transactions=1)])
    pm = manifest.partition("p")
    past_lso = next(r for r in pm.records if r.offset >= pm.last_stable_offset and not r.is_control)
    assert past_lso.offset < pm.log_end_offset - 1

    def visibility(record, isolation):
        code, lines, _ = run(["locate", "--data-dir", str(tmp_path), "--topic", "p", "--partition", "0", "--offset",
                              str(record.offset), "--isolation", isolation, "--json"], capsys)
        assert code == 0
        return json.loads("\n".join(lines))["visibility"]

    said = visibility(past_lso, "read_committed")
    assert "in a transaction still open" in said and "not yet acknowledged" not in said
    assert f"high watermark {pm.log_end_offset}" in said  # the fact that rules acknowledgement out
    # a high watermark below the record: not acknowledged, whatever its transaction
    write_offset_checkpoint(tmp_path / "replication-offset-checkpoint", {("p", 0): past_lso.offset})
    for isolation in ("read_committed", "read_uncommitted"):
        said = visibility(past_lso, isolation)
        assert f"high watermark {past_lso.offset}" in said and "not yet acknowledged" in said, isolation
        assert "transaction" not in said, isolation
    # no high watermark checkpointed: the log end stands in, which proves nothing either way
    write_offset_checkpoint(tmp_path / "replication-offset-checkpoint", {})
    said = visibility(past_lso, "read_committed")
    assert "not yet acknowledged" in said and "in a transaction still open" in said
