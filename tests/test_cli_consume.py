"""``kafkaseg consume``: kafka-console-consumer.sh's options and DefaultMessageFormatter's output, over log dirs
written by kafkaseg.testing (an independent writer), checked against its manifest of what was written."""

from __future__ import annotations

import re

import io
import os
import shutil
import struct
import time

import pytest

from kafkaseg.cli import consume
from kafkaseg.errors import InvalidOptionError
from kafkaseg.cli.main import build_parser, main as cli_main
from kafkaseg.storage.checkpoints import read_offset_checkpoint
from kafkaseg.testing import TopicSpec, write_data_dir
from kafkaseg.testing.partition import write_offset_checkpoint


def _ints(rng, partition, index):
    return None if index % 7 == 3 else struct.pack(">i", index * 1000 - 5)


def _ints_one_bad(rng, partition, index):
    return b"\x00\x01\x02\x03\x04" if index == 17 else struct.pack(">i", index)


TOPICS = [
    TopicSpec("orders", partitions=2, records_per_partition=60, records_per_batch=7, headers=2,
              null_header_value_ratio=0.2, null_key_ratio=0.1, tombstone_ratio=0.1, segment_bytes=4096),
    TopicSpec("plain", records_per_partition=20, key_size=None),
    TopicSpec("counts", records_per_partition=30, value_generator=_ints),
    TopicSpec("counts-bad", records_per_partition=30, value_generator=_ints_one_bad),
    TopicSpec("payments", records_per_partition=80, records_per_batch=4, transactional=True, abort_ratio=0.4,
              open_transactions=1),
    TopicSpec("legacy", records_per_partition=10, magic=0),
]


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    root = tmp_path_factory.mktemp("consume") / "data"
    manifest = write_data_dir(root, TOPICS, seed=21)
    return root, manifest


def consume_cli(capsysbinary, *argv) -> tuple[int, bytes, str]:
    code = cli_main(["consume", *argv])
    captured = capsysbinary.readouterr()
    return code, captured.out, captured.err.decode()


def test_values_from_the_beginning_partition_by_partition(data, capsysbinary):
    root, manifest = data
    code, out, err = consume_cli(capsysbinary, "--data-dir", str(root), "--topic", "orders", "--from-beginning")
    expected = [r.value if r.value is not None else b"null"
                for p in (0, 1) for r in manifest.partition("orders", p).data_records()]
    assert code == 0 and out == b"".join(v + b"\n" for v in expected)
    assert err.strip() == f"Processed a total of {len(expected)} messages"


def test_every_formatter_property(data, capsysbinary):
    root, manifest = data
    code, out, _ = consume_cli(
        capsysbinary, "--data-dir", str(root), "--topic", "orders", "--partition", "1", "--offset", "earliest",
        *[f"--property={p}" for p in ("print.timestamp=true", "print.partition=TRUE", "print.offset=true",
                                      "print.headers=true", "print.key=true", "print.epoch=true",
                                      "key.separator=|", "headers.separator=;", "null.literal=<nil>")])
    lines = out.split(b"\n")
    assert lines[-1] == b""
    records = manifest.partition("orders", 1).data_records()
    assert code == 0 and len(lines) - 1 == len(records)
    for line, r in zip(lines, records):
        headers = b";".join(k.encode() + b":" + (v if v is not None else b"<nil>") for k, v in r.headers)
        want = b"|".join([f"CreateTime:{r.timestamp}".encode(), b"Partition:1", f"Offset:{r.offset}".encode(),
                          b"Epoch:0", headers or b"NO_HEADERS", r.key if r.key is not None else b"<nil>",
                          r.value if r.value is not None else b"<nil>"])
        assert line == want
    assert any(r.value is None for r in records) and any(v is None for r in records for _, v in r.headers)


def test_a_record_ends_with_the_line_separator_whatever_is_printed(data, capsysbinary):
    root, manifest = data
    code, out, _ = consume_cli(capsysbinary, "--data-dir", str(root), "--topic", "plain", "--from-beginning",
                               "--property", "print.value=false", "--property", "print.offset=true",
                               "--property", "print.timestamp=true", "--property", "line.separator=\n--\n",
                               "--max-messages", "2")
    records = manifest.partition("plain").data_records()[:2]
    assert out == b"".join(f"CreateTime:{r.timestamp}\tOffset:{r.offset}\n--\n".encode() for r in records)


def test_separators_are_taken_byte_for_byte_as_kafka_takes_them(data, capsysbinary, tmp_path):
    """DefaultMessageFormatter.getByteProperty: a property's UTF-8 bytes, nothing unescaped. --property passes
    the shell's characters (a Windows path keeps its backslashes); --formatter-config's file was read by
    Properties.load, whose own escapes give '\\t' the two characters backslash and t, not a tab."""
    root, manifest = data
    base = ("--data-dir", str(root), "--topic", "plain", "--from-beginning", "--max-messages", "1",
            "--property", "print.offset=true", "--property", "print.key=true", "--property", "print.value=false")
    code, out, _ = consume_cli(capsysbinary, *base, "--property", r"key.separator=C:\temp\new",
                               "--property", r"line.separator=\n")
    key = manifest.partition("plain").data_records()[0].key or b"null"
    assert code == 0 and out == b"Offset:0C:\\temp\\new" + key + b"\\n"
    config = tmp_path / "fmt.properties"
    config.write_bytes(b"key.separator=\\\\t\nline.separator=\\n|\\u00e9\n")  # Properties.load: '\\t'; newline|é
    code, out, _ = consume_cli(capsysbinary, *base, "--formatter-config", str(config))
    assert code == 0 and out == b"Offset:0\\t" + key + "\n|\u00e9".encode()


def test_magic_0_records_have_no_timestamp_and_no_epoch(data, capsysbinary):
    root, _ = data
    code, out, _ = consume_cli(capsysbinary, "--data-dir", str(root), "--topic", "legacy", "--from-beginning",
                               "--property", "print.timestamp=true", "--property", "print.epoch=true",
                               "--property", "print.value=false")
    assert out.split(b"\n")[:-1] == [b"NO_TIMESTAMP\tEpoch:NOT_PRESENT"] * 10


def test_offsets_latest_default_include_and_max_messages(data, capsysbinary):
    root, manifest = data
    records = manifest.partition("orders", 0).data_records()
    code, out, _ = consume_cli(capsysbinary, "--data-dir", str(root), "--topic", "orders", "--partition", "0",
                               "--offset", str(records[10].offset), "--max-messages", "3",
                               "--property", "print.offset=true", "--property", "print.value=false")
    assert out == b"".join(f"Offset:{r.offset}\n".encode() for r in records[10:13])
    # without --from-beginning a consumer starts at the end: nothing is on disk past it
    code, out, err = consume_cli(capsysbinary, "--data-dir", str(root), "--topic", "orders")
    assert code == 0 and out == b"" and "total of 0 messages" in err
    # --include matches whole names, as a pattern subscription does
    code, out, _ = consume_cli(capsysbinary, "--data-dir", str(root), "--include", "pl.*|count", "--from-beginning",
                               "--property", "print.value=false", "--property", "print.partition=true")
    assert out == b"Partition:0\n" * 20  # plain's 20; "count" is not the whole name "counts"
    # a leading inline flag, as Java's Pattern takes it (the anchors once went in front of it: a regex error)
    code, out, _ = consume_cli(capsysbinary, "--data-dir", str(root), "--include", "(?i)PL.*", "--from-beginning",
                               "--property", "print.value=false", "--property", "print.partition=true")
    assert code == 0 and out == b"Partition:0\n" * 20
    code, out, _ = consume_cli(capsysbinary, "--data-dir", str(root), "--include", "(?x) pl.*   # the plain topic",
                               "--from-beginning", "--property", "print.value=false", "--property",
                               "print.partition=true")
    assert code == 0 and out == b"Partition:0\n" * 20


def test_read_committed_leaves_out_aborted_and_open_transactions(data, capsysbinary):
    root, manifest = data
    code, out, _ = consume_cli(capsysbinary, "--data-dir", str(root), "--topic", "payments", "--from-beginning",
                               "--isolation-level", "read_committed", "--property", "print.offset=true",
                               "--property", "print.value=false")
    want = manifest.partition("payments").data_records(read_committed=True)
    assert out == b"".join(f"Offset:{r.offset}\n".encode() for r in want)
    assert len(want) < len(manifest.partition("payments").data_records())


def test_deserializers(data, capsysbinary):
    root, manifest = data
    code, out, _ = consume_cli(capsysbinary, "--data-dir", str(root), "--topic", "counts", "--from-beginning",
                               "--property", "value.deserializer=org.apache.kafka.common.serialization."
                               "IntegerDeserializer")
    want = [b"null" if r.value is None else str(struct.unpack(">i", r.value)[0]).encode()
            for r in manifest.partition("counts").data_records()]
    assert code == 0 and out.split(b"\n")[:-1] == want and b"-5" in want
    code, out, err = consume_cli(capsysbinary, "--data-dir", str(root), "--topic", "plain", "--from-beginning",
                                 "--property", "value.deserializer=LongDeserializer")
    assert code == 2 and "LongDeserializer is not 8" in err
    code, _, err = consume_cli(capsysbinary, "--data-dir", str(root), "--topic", "plain", "--property",
                               "value.deserializer=com.example.AvroDeserializer")
    assert code == 2 and "not available here" in err
    fmt = consume.Formatter.from_properties({"value.deserializer": "StringDeserializer"})
    assert fmt.value_deserializer(b"ok \xff\xfe") == "ok \ufffd\ufffd".encode()


@pytest.mark.parametrize("argv, message", [
    ([], "Exactly one of --include/--topic is required."),
    (["--topic", "a", "--include", "b"], "Exactly one of --include/--topic is required."),
    (["--include", "a", "--partition", "0"], "The topic is required when partition is specified."),
    (["--topic", "a", "--partition", "0", "--offset", "5", "--from-beginning"],
     "Options from-beginning and offset cannot be specified together."),
    (["--topic", "a", "--offset", "5"], "The partition is required when offset is specified."),
    (["--topic", "a", "--partition", "0", "--offset", "-3"], "The provided offset value '-3' is incorrect."),
    (["--topic", "a", "--partition", "0", "--offset", "9223372036854775808"],
     "The provided offset value '9223372036854775808' is incorrect."),  # past a long (5,000 digits: a ValueError)
    (["--topic", "a", "--partition", "0", "--offset", "9" * 5000], "is incorrect."),
    (["--topic", "a", "--consumer-property", "isolation.level=committed"], "isolation.level='committed'"),
    (["--topic", "a", "--bootstrap-server", "localhost:9092"], "give --data-dir DIR"),
])
def test_usage_errors_are_the_console_consumers(data, capsysbinary, argv, message):
    root, _ = data
    code, out, err = consume_cli(capsysbinary, "--data-dir", str(root), *argv)
    assert code == 2 and message in err and out == b""


def test_follow_prints_records_as_the_high_watermark_moves(tmp_path):
    root = tmp_path / "live"
    manifest = write_data_dir(root, [TopicSpec("t", records_per_partition=50, records_per_batch=5)], seed=3)
    checkpoint = root / "replication-offset-checkpoint"
    write_offset_checkpoint(checkpoint, {("t", 0): 20})
    steps = iter([30, 30, 50])  # the broker's checkpointed high watermark, one value per poll

    def poll(_seconds: float) -> None:
        value = next(steps, None)
        if value is not None:
            write_offset_checkpoint(checkpoint, {("t", 0): value})

    args = build_parser().parse_args(["consume", "--data-dir", str(root), "--topic", "t", "--from-beginning",
                                      "--follow", "--max-messages", "45", "--property", "print.offset=true",
                                      "--property", "print.value=false", "--poll-ms", "1"])
    out, err = io.BytesIO(), io.StringIO()
    assert consume.run(args, out, err, sleep=poll) == 0
    assert out.getvalue() == b"".join(f"Offset:{o}\n".encode() for o in range(45))
    assert "total of 45 messages" in err.getvalue()
    assert read_offset_checkpoint(str(checkpoint)) == {("t", 0): 50}  # it kept polling until there were 45
    # --timeout-ms ends a follow that sees nothing new
    args = build_parser().parse_args(["consume", "--data-dir", str(root), "--topic", "t", "--follow",
                                      "--timeout-ms", "0"])
    assert consume.run(args, io.BytesIO(), io.StringIO(), sleep=poll) == 0
    assert manifest.partition("t").log_end_offset == 50


@pytest.mark.corpus
@pytest.mark.parametrize("topic", ["numbers", "hamlet-none", "hamlet-gzip", "hamlet-snappy"])
def test_real_broker_v0_segments_print_what_kafkalite_golden_files_hold(corpus_dir, capsysbinary, topic):
    """Magic-0 segments a 0.8-0.10 broker wrote (gzip and xerial snappy wrappers), against the golden output the
    kafkalite project keeps beside them (``<offset>: "<value>"`` lines, Rust's debug quoting)."""
    base = next((corpus_dir / "segments" / "asayers__kafkalite").glob("*/tests/test-data"))
    code, out, _ = consume_cli(capsysbinary, "--data-dir", str(base / "fs-data"), "--topic", topic,
                               "--from-beginning", "--property", "print.offset=true", "--property", "key.separator=: ")
    golden = (base / "golden" / f"{topic}-0").read_bytes().decode().splitlines()
    ours = out.decode("utf-8").splitlines()
    assert code == 0 and len(ours) == len(golden) > 1000
    compared = 0
    for mine, theirs in zip(ours, golden):
        offset, _, quoted = theirs.partition(": ")
        assert mine.startswith(f"Offset:{offset}: ")
        if "\\" not in quoted:  # no escapes to undo: the value is the text between the quotes
            assert mine[len(f"Offset:{offset}: "):] == quoted[1:-1]
            compared += 1
    assert compared > len(golden) * 0.9


def test_partition_with_from_beginning_starts_at_the_beginning(data, capsysbinary):
    root, manifest = data
    code, out, _ = consume_cli(capsysbinary, "--data-dir", str(root), "--topic", "plain", "--partition", "0",
                               "--from-beginning")
    assert out.count(b"\n") == len(manifest.partition("plain").data_records()) == 20


@pytest.mark.parametrize("value, single, java", [
    (0.1, True, "0.1"), (1e-4, True, "1.0E-4"), (1.23456789e8, True, "1.2345679E8"), (3.4028235e38, True,
                                                                                       "3.4028235E38"),
    (1e7, False, "1.0E7"), (1e-4, False, "1.0E-4"), (1e16, False, "1.0E16"), (100.0, False, "100.0"),
    (1234567.0, False, "1234567.0"), (0.001, False, "0.001"), (-2.5, False, "-2.5"), (0.1, False, "0.1"),
    (9999999.999, False, "9999999.999"), (123.456, False, "123.456"), (-0.0, False, "-0.0"),
    (float("nan"), False, "NaN"), (float("-inf"), True, "-Infinity"), (1.0 / 3, False, "0.3333333333333333"),
    (2.0 ** -20, False, "9.5367431640625E-7"),
    # subnormals: a one-digit shortest form gives way to the closest two-digit one (Double.MIN_VALUE is 4.9E-324)
    (5e-324, False, "4.9E-324"), (1e-323, False, "9.9E-324"), (1.401298464324817e-45, True, "1.4E-45"),
    (2.802596928649634e-45, True, "2.8E-45"),
])
def test_float_and_double_deserializers_print_as_java(value, single, java):
    """Java 19+ Double.toString/Float.toString (the shortest round-trip digits), values checked with a JDK."""
    assert consume.java_float_text(value, single=single) == java
    raw = struct.pack(">f" if single else ">d", value)
    name = "FloatDeserializer" if single else "DoubleDeserializer"
    assert consume.Formatter.from_properties({"value.deserializer": name}).value_deserializer(raw) == java.encode()


def test_uuid_deserializer_parses_as_java():
    deserialize = consume._deserializer("UUIDDeserializer")
    assert deserialize(b"1-2-3-4-5") == b"00000001-0002-0003-0004-000000000005"
    assert deserialize(b"123E4567-E89B-12D3-A456-426614174000") == b"123e4567-e89b-12d3-a456-426614174000"
    for bad in (b"123e4567e89b12d3a456426614174000", b"{123e4567-e89b-12d3-a456-426614174000}", b"1-2-3-4"):
        with pytest.raises(consume.DeserializationError):
            deserialize(bad)


def test_a_record_that_cannot_be_deserialized_ends_the_run_after_the_records_before_it(data, capsysbinary):
    root, manifest = data
    code, out, err = consume_cli(capsysbinary, "--data-dir", str(root), "--topic", "plain", "--from-beginning",
                                 "--value-deserializer", "LongDeserializer")
    # ConsoleConsumer counts a record before writeTo: the one that failed is in the total
    assert code == 2 and out == b"" and "offset 0 of plain-0" in err and "total of 1 messages" in err
    # 4-byte ints but for one record (offset 17): the records before it are printed, then the error
    code, out, err = consume_cli(capsysbinary, "--data-dir", str(root), "--topic", "counts-bad", "--from-beginning",
                                 "--value-deserializer", "IntegerDeserializer")
    assert code == 2 and out == b"".join(f"{i}\n".encode() for i in range(17))
    assert "offset 17 of counts-bad-0" in err and "total of 18 messages" in err
    code, out, err = consume_cli(capsysbinary, "--data-dir", str(root), "--topic", "counts-bad", "--from-beginning",
                                 "--value-deserializer", "IntegerDeserializer", "--skip-message-on-error")
    assert code == 0 and out == b"".join(f"{i}\n".encode() for i in range(30) if i != 17)
    assert "skipping offset 17 of counts-bad-0" in err and "total of 30 messages" in err
    # skipped records count toward --max-messages, and a batch cut by the limit loses nothing unreported
    code, out, err = consume_cli(capsysbinary, "--data-dir", str(root), "--topic", "counts-bad", "--from-beginning",
                                 "--value-deserializer", "IntegerDeserializer", "--skip-message-on-error",
                                 "--max-messages", "19")
    assert code == 0 and out == b"".join(f"{i}\n".encode() for i in range(19) if i != 17)
    assert "total of 19 messages" in err


def test_a_corrupt_batch_stops_after_the_records_before_it_or_is_skipped(tmp_path, capsysbinary):
    root = tmp_path / "data"
    manifest = write_data_dir(root, [TopicSpec("t", records_per_partition=60, records_per_batch=6)], seed=8)
    log = next((root / "t-0").glob("*.log"))
    raw = bytearray(log.read_bytes())
    position = len(raw) // 2
    raw[position] ^= 0xFF  # inside some batch's records: its CRC no longer matches
    log.write_bytes(bytes(raw))
    everything = [r.value + b"\n" for r in manifest.partition("t").data_records()]
    code, out, err = consume_cli(capsysbinary, "--data-dir", str(root), "--topic", "t", "--from-beginning")
    printed = out.count(b"\n")
    assert code == 2 and 0 < printed < 60 and out == b"".join(everything[:printed])
    assert str(log) in err and "byte" in err and f"total of {printed} messages" in err
    # the way on in consume's own flag (a read error said none, or named the read option onCorruption=skip)
    assert "(--skip-message-on-error reads on past damage" in err, err
    code, out, err = consume_cli(capsysbinary, "--data-dir", str(root), "--topic", "t", "--from-beginning",
                                 "--skip-message-on-error")
    assert code == 0 and 3 <= 60 - out.count(b"\n") <= 6 and "skipped 1 corrupt batch" in err  # its 3-6 records
    # the batch named with its file and byte as every kafkaseg error names it (it printed a Python tuple: found by
    # the incident audit)
    assert re.search(rf"^  {re.escape(str(log))} @ byte \d+: CRC", err, re.M) and "('" not in err
    assert out.startswith(b"".join(everything[:printed]))
    code, out, err = consume_cli(capsysbinary, "--data-dir", str(root), "--topic", "t", "--from-beginning",
                                 "--skip-message-on-error", "--max-messages", str(printed + 3))
    # stopped mid-slice, past the skipped batch: the skip is reported all the same (found in review)
    assert code == 0 and out.count(b"\n") == printed + 3 and "skipped 1 corrupt batch" in err


def test_a_corrupt_batch_in_the_chosen_copy_is_read_from_another_and_said(tmp_path, capsysbinary):
    """Two brokers' log dirs: the copy read ("a", a tie goes to the first) has a corrupt batch; its records come from
    the other copy, every one once, and stderr says so."""
    manifest = write_data_dir(tmp_path / "b", [TopicSpec("t", records_per_partition=60, records_per_batch=6)], seed=8)
    shutil.copytree(tmp_path / "b", tmp_path / "a")
    log = next((tmp_path / "a" / "t-0").glob("*.log"))
    raw = bytearray(log.read_bytes())
    raw[len(raw) // 2] ^= 0xFF  # inside some batch's records: its CRC no longer matches
    log.write_bytes(bytes(raw))
    everything = [r.value + b"\n" for r in manifest.partition("t").data_records()]
    code, out, err = consume_cli(capsysbinary, "--data-dir", str(tmp_path / "a"), "--data-dir", str(tmp_path / "b"),
                                 "--topic", "t", "--from-beginning")
    assert code == 0 and out == b"".join(everything)
    assert f"kafkaseg consume: {log} is corrupt at byte" in err and f"read from the copy in {tmp_path / 'b' / 't-0'}" \
        in err and "total of 60 messages" in err


def test_an_offset_out_of_range_resets_to_the_latest_and_an_unknown_topic_says_so(data, capsysbinary):
    root, manifest = data
    end = manifest.partition("plain").log_end_offset
    for offset in (end + 5, ):
        code, out, err = consume_cli(capsysbinary, "--data-dir", str(root), "--topic", "plain", "--partition", "0",
                                     "--offset", str(offset))
        assert code == 0 and out == b"" and f"starting at the latest offset {end}" in err
    code, out, err = consume_cli(capsysbinary, "--data-dir", str(root), "--topic", "nosuch", "--from-beginning")
    assert code == 2 and out == b"" and "no partition of nosuch" in err  # (without --follow: nothing to wait for)
    code, out, err = consume_cli(capsysbinary, "--data-dir", str(root), "--topic", "plainn", "--from-beginning")
    assert code == 2 and "no partition of plainn" in err and "did you mean 'plain'?" in err
    code, out, err = consume_cli(capsysbinary, "--data-dir", str(root), "--topic", "plain", "--partition", "9",
                                 "--offset", "0")  # named as given: --partition, not the assign option it becomes
    assert code != 0 and "no partition 9 of plain" in err and "its partitions there: 0" in err
    assert "'assign'" not in err
    code, out, err = consume_cli(capsysbinary, "--data-dir", str(root), "--include", "nomatch.*", "--from-beginning")
    assert code == 0 and "no partition of a topic matching" in err  # a pattern matching nothing yet: no error


def test_a_topic_or_partition_not_on_disk_is_a_usage_error_naming_the_closest_topics(data, capsysbinary):
    """Files have no broker to wait for (without --follow): a --topic with no partition on disk, or a --partition
    the topic does not have, is a usage error (exit 2, as documented; describe, offsets and locate exit 1: see
    docs/cli.md) that names the closest topic there, and, as the console consumer's usage errors, it prints no total: no consumer ran."""
    root, _ = data
    for argv, expected in (
            (["--topic", "count", "--from-beginning"],
             ["no partition of count under", "(did you mean 'counts'?)"]),
            (["--topic", "orders", "--partition", "7", "--offset", "0"],
             ["no partition 7 of orders under", "(its partitions there: 0, 1)"]),
            (["--topic", "orders", "--partition", "-1", "--from-beginning"],
             ["no partition -1 of orders under", "(its partitions there: 0, 1)"])):
        code, out, err = consume_cli(capsysbinary, "--data-dir", str(root), *argv)
        assert code == 2 and out == b"", (argv, err)
        assert all(text in err for text in expected) and "'assign'" not in err, (argv, err)
        assert "Processed a total" not in err, (argv, err)


def test_a_data_dir_that_is_no_data_dir_is_a_usage_error_with_no_total(data, tmp_path, capsysbinary):
    """A --data-dir that does not exist (or is empty, or names some other file) is an argument error, as a --topic
    not on disk is: exit 2 naming it, and no "Processed a total" line, since no consumer ran. (A read that fails,
    even before its first record, still prints the total, as ConsoleConsumer does when its first fetch fails.)"""
    root, _ = data
    other = tmp_path / "notes.txt"
    other.write_text("not kafka")
    for data_dir, said in ((str(tmp_path / "nope"), "no such file or directory"), ("", "an empty path"),
                           (str(other), "not a .log segment file")):
        for extra in ([], ["--follow", "--timeout-ms", "0"], ["--partition", "0", "--offset", "0"]):
            code, out, err = consume_cli(capsysbinary, "--data-dir", data_dir, "--topic", "orders",
                                         *(extra or ["--from-beginning"]))
            assert code == 2 and out == b"" and said in err, (data_dir, extra, err)
            assert "Processed a total" not in err, (data_dir, extra, err)
    code, _, err = consume_cli(capsysbinary, "--data-dir", str(root), "--topic", "orders",
                               "--consumer-property", "auto.offset.reset=none")
    assert code == 2 and "Processed a total of 0 messages" in err


def test_an_offset_between_the_high_watermark_and_the_log_end_waits_for_it(tmp_path):
    """LocalLog.read: such a fetch is empty, not out of range; the consumer waits there for the high watermark."""
    root = tmp_path / "live"
    write_data_dir(root, [TopicSpec("t", records_per_partition=50, records_per_batch=5)], seed=3)
    checkpoint = root / "replication-offset-checkpoint"
    write_offset_checkpoint(checkpoint, {("t", 0): 20})
    steps = iter([50])

    def poll(_seconds: float) -> None:
        value = next(steps, None)
        if value is not None:
            write_offset_checkpoint(checkpoint, {("t", 0): value})

    args = build_parser().parse_args(["consume", "--data-dir", str(root), "--topic", "t", "--partition", "0",
                                      "--offset", "40", "--follow", "--max-messages", "10", "--poll-ms", "1",
                                      "--property", "print.offset=true", "--property", "print.value=false"])
    out, err = io.BytesIO(), io.StringIO()
    assert consume.run(args, out, err, sleep=poll) == 0
    assert out.getvalue() == b"".join(f"Offset:{o}\n".encode() for o in range(40, 50))
    assert "out of range" not in err.getvalue()


def test_a_pasted_console_consumer_command_with_a_group_runs_and_says_the_group_does_nothing(data, capsysbinary):
    root, manifest = data
    code, out, err = consume_cli(capsysbinary, "--data-dir", str(root), "--topic", "plain", "--from-beginning",
                                 "--group", "my-group")
    assert code == 0 and out.count(b"\n") == 20 and "group my-group has no effect" in err
    assert cli_main(["consume", "--topic", "plain"]) == 2  # no --data-dir


def test_auto_offset_reset_starts_a_subscription_and_kafkas_conflicts_are_usage_errors(data, capsysbinary, tmp_path):
    """The console consumer subscribes with a fresh group, so auto.offset.reset (--consumer-property over
    --consumer.config) decides where --topic/--include start; --from-beginning with another reset, --group with
    --partition and group ids that disagree are ConsoleConsumerOptions' usage errors."""
    root, manifest = data
    every = [r.value for r in manifest.partition("plain").data_records()]
    topic = ("--data-dir", str(root), "--topic", "plain")
    code, out, err = consume_cli(capsysbinary, *topic, "--consumer-property", "auto.offset.reset=earliest")
    assert code == 0 and out.splitlines() == every and "no effect" not in err
    config = tmp_path / "consumer.properties"
    config.write_text("auto.offset.reset=earliest\n")
    code, out, _ = consume_cli(capsysbinary, "--data-dir", str(root), "--include", "pla.n", "--consumer.config",
                               str(config))
    assert code == 0 and out.splitlines() == every
    code, out, _ = consume_cli(capsysbinary, *topic, "--consumer.config", str(config), "--consumer-property",
                               "auto.offset.reset=latest")
    assert code == 0 and out == b""
    code, out, _ = consume_cli(capsysbinary, *topic, "--from-beginning", "--consumer-property",
                               "auto.offset.reset=earliest")
    assert code == 0 and out.splitlines() == every
    # --partition --offset N outside the log: reset as auto.offset.reset says
    code, out, err = consume_cli(capsysbinary, *topic, "--partition", "0", "--offset", "100000",
                                 "--consumer-property", "auto.offset.reset=earliest")
    assert code == 0 and out.splitlines() == every and "starting at the earliest offset 0" in err

    code, out, err = consume_cli(capsysbinary, *topic, "--consumer-property", "auto.offset.reset=none")
    assert code == 2 and out == b"" and "Processed a total of 0 messages" in err
    assert "Undefined offset with no reset policy for partitions: [plain-0]" in err
    code, _, err = consume_cli(capsysbinary, *topic, "--partition", "0", "--offset", "100000",
                               "--consumer-property", "auto.offset.reset=none")
    assert code == 2 and "Offsets out of range with no configured reset policy for partitions: {plain-0=100000}" in err
    code, _, err = consume_cli(capsysbinary, *topic, "--consumer-property", "auto.offset.reset=first")
    assert code == 2 and ("Invalid value first for configuration auto.offset.reset: String must be one of: latest, "
                          "earliest, none") in err

    usage = {
        ("--from-beginning", "--consumer-property", "auto.offset.reset=latest"):
            "Can't simultaneously specify --from-beginning and 'auto.offset.reset=latest', please remove one option",
        ("--group", "g", "--partition", "0"): "Options group and partition cannot be specified together.",
        ("--partition", "0", "--consumer-property", "group.id=g"):
            "Options group and partition cannot be specified together.",
        ("--group", "a", "--consumer-property", "group.id=b"):
            "The group ids provided in different places (directly using '--group', via '--consumer-property', or "
            "via '--consumer.config') do not match. Detected group ids: 'a', 'b'",
    }
    config.write_text("group.id=a\n")
    usage[("--consumer.config", str(config), "--consumer-property", "group.id=b")] = usage[
        ("--group", "a", "--consumer-property", "group.id=b")]  # the file's is checked, not only the merged one
    for argv, message in usage.items():
        code, out, err = consume_cli(capsysbinary, *topic, *argv)
        assert (code, out, err) == (2, b"", f"kafkaseg consume: {message}\n"), argv
    code, out, err = consume_cli(capsysbinary, *topic, "--from-beginning", "--group", "g", "--consumer-property",
                                 "group.id=g")
    assert code == 0 and out.splitlines() == every


def test_the_console_consumers_config_options_and_lenient_properties(data, capsysbinary, tmp_path):
    """A pasted command's --consumer-property/--consumer.config/--formatter-config work as the console consumer
    merges them (isolation.level takes effect, --isolation-level wins; the rest is noted as no effect on files);
    formatter properties it does not know are noted and ignored, as DefaultMessageFormatter ignores them; a
    property without '=' is empty (false); --max-messages -1 is no limit, 0 prints nothing."""
    root, _ = data
    base = ["--data-dir", str(root), "--topic", "payments", "--from-beginning", "--property", "print.offset=true"]
    _, uncommitted_out, _ = consume_cli(capsysbinary, *base)
    _, committed_out, _ = consume_cli(capsysbinary, *base, "--isolation-level", "read_committed")
    assert committed_out != uncommitted_out
    config = tmp_path / "consumer.properties"
    config.write_text("# pasted\nbootstrap.servers=broker:9092\nisolation.level = read_committed\n")
    code, out, err = consume_cli(capsysbinary, *base, "--consumer.config", str(config))
    assert code == 0 and out == committed_out and "no effect on files: bootstrap.servers" in err
    code, out, _ = consume_cli(capsysbinary, *base, "--consumer.config", str(config), "--consumer-property",
                               "isolation.level=read_uncommitted")
    assert out == uncommitted_out
    # a pipe (--consumer.config <(...)) can be read once: the checks and the run share that read
    import os
    import threading

    fifo = tmp_path / "consumer.fifo"
    os.mkfifo(fifo)

    done = threading.Event()

    def feed():
        with open(fifo, "w") as pipe:
            pipe.write("isolation.level=read_committed\n")
        while not done.wait(0.05):  # a second reader gets an empty pipe (as from a shell), never a hang
            try:
                os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
            except OSError:  # no reader waiting
                pass

    writer = threading.Thread(target=feed)
    writer.start()
    try:
        code, out, _ = consume_cli(capsysbinary, *base, "--consumer.config", str(fifo))
    finally:
        done.set()
        writer.join(timeout=10)
    assert code == 0 and out == committed_out
    code, out, _ = consume_cli(capsysbinary, *base, "--consumer-property", "isolation.level=read_committed",
                               "--isolation-level", "read_uncommitted")
    assert out == uncommitted_out
    formatter = tmp_path / "formatter.properties"
    formatter.write_text("print.partition=true\nkey.separator=|\n")
    code, out, err = consume_cli(capsysbinary, *base, "--formatter-config", str(formatter), "--property",
                                 "print.colour=true", "--property", "print.value")
    lines = out.splitlines()
    assert code == 0 and lines[0] == b"Partition:0|Offset:0" and "no effect: print.colour" in err
    # formatterArgs(): --property is applied after --value-deserializer, so it wins
    code, out, _ = consume_cli(capsysbinary, "--data-dir", str(root), "--topic", "plain", "--from-beginning",
                               "--value-deserializer", "LongDeserializer", "--property",
                               "value.deserializer=org.apache.kafka.common.serialization.StringDeserializer")
    assert code == 0 and out.count(b"\n") == 20
    code, out, err = consume_cli(capsysbinary, *base, "--max-messages", "-1")
    assert out == uncommitted_out
    code, out, err = consume_cli(capsysbinary, *base, "--max-messages", "0")
    assert code == 0 and out == b"" and "total of 0 messages" in err


def _java_write_to(fmt: consume.Formatter, record: dict) -> bytes:
    """DefaultMessageFormatter.writeTo for one record, field by field as Java writes it (the reference the batch
    formatter is checked against); raises the deserializer's error."""
    def deserialize(value, deserializer):
        if value is None:
            return fmt.null_literal
        return deserializer(value) if deserializer is not None else value

    fields = fmt.fields()
    out = []
    for k, name in enumerate(fields):
        if name == "timestamp":
            kind = record["timestampType"]
            ms = record["timestamp_us"] // 1000
            out.append(f"CreateTime:{ms}".encode() if kind == 0 else f"LogAppendTime:{ms}".encode() if kind == 1
                       else b"NO_TIMESTAMP")
        elif name == "partition":
            out.append(f"Partition:{record['partition']}".encode())
        elif name == "offset":
            out.append(f"Offset:{record['offset']}".encode())
        elif name == "delivery":
            out.append(b"Delivery:NOT_PRESENT")
        elif name == "epoch":
            epoch = record["leaderEpoch"]
            out.append(f"Epoch:{epoch}".encode() if epoch >= 0 else b"Epoch:NOT_PRESENT")
        elif name == "headers":
            headers = record["headers"]
            out.append(fmt.headers_separator.join(
                h["key"].encode() + b":" + deserialize(h["value"], fmt.headers_deserializer) for h in headers)
                if headers else b"NO_HEADERS")
        else:
            out.append(deserialize(record[name], fmt.key_deserializer if name == "key" else fmt.value_deserializer))
        out.append(fmt.key_separator if k < len(fields) - 1 else fmt.line_separator)
    return b"".join(out)


@pytest.mark.parametrize("header_chunk", [65536, 2])
def test_the_batch_formatter_writes_what_java_writes_record_by_record(header_chunk, monkeypatch):
    """Random batches (nulls, headers, values some deserializers refuse) and random properties: the columnar
    formatter's output, its count, and which records it reports, equal a per-record writeTo's; also when a
    record's headers are turned into Python values a few at a time."""
    monkeypatch.setattr(consume, "_HEADER_CHUNK", header_chunk)
    import pyarrow as pa
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from kafkaseg.errors import DeserializationError
    from kafkaseg.schema import arrow_schema

    blob = st.one_of(st.none(), st.sampled_from([b"", b"\x00\x00\x00\x07", b"\x00\x01\x02", b"abc\xff", b"12345678"]))
    header = st.fixed_dictionaries({"key": st.sampled_from(["h", "ü"]), "value": blob})
    record = st.fixed_dictionaries({
        "key": blob, "value": blob, "timestampType": st.sampled_from([-1, 0, 1]),
        "timestamp_us": st.integers(-1000, 2 ** 50).map(lambda us: us - us % 1000),
        "partition": st.integers(0, 5), "offset": st.integers(0, 2 ** 40), "leaderEpoch": st.integers(-1, 9),
        "headers": st.one_of(st.none(), st.lists(header, min_size=1, max_size=3))})
    deserializer = st.sampled_from([None, "StringDeserializer", "IntegerDeserializer", "LongDeserializer"])

    @settings(max_examples=300, deadline=None)
    @given(records=st.lists(record, max_size=12), flags=st.lists(st.booleans(), min_size=8, max_size=8),
           key_d=deserializer, value_d=deserializer, headers_d=deserializer, skip=st.booleans())
    def check(records, flags, key_d, value_d, headers_d, skip):
        properties = dict(zip(consume._BOOLEAN_PROPERTIES, map(str, flags)))
        for name, chosen in (("key.deserializer", key_d), ("value.deserializer", value_d),
                             ("headers.deserializer", headers_d)):
            if chosen is not None:
                properties[name] = chosen
        properties.update({"key.separator": "|", "null.literal": "NULL"})
        fmt = consume.Formatter.from_properties(properties)
        schema = arrow_schema(True, True)
        columns = {f.name: [] for f in schema}
        for r in records:
            for name in columns:
                columns[name].append({"timestamp": r["timestamp_us"], "topic": "t", "isTransactional": False,
                                      "isControl": False, "magic": 2, "compression": "none", "batchOffset": 0,
                                      "segment": "s", "position": 0, "producerId": -1, "producerEpoch": -1,
                                      "sequence": -1}.get(name, r.get(name)))
        batch = pa.RecordBatch.from_pydict(
            {name: pa.array(values, schema.field(name).type) for name, values in columns.items()}, schema=schema)
        want, reported, failure = [], [], None
        for row, r in enumerate(records):
            try:
                want.append(_java_write_to(fmt, r))
            except DeserializationError:
                if not skip:
                    failure = row
                    break
                reported.append(row)
        out = io.BytesIO()
        got_reported = []
        try:
            written = fmt.write_batch(batch, out, (lambda row, _: got_reported.append(row)) if skip else None)
        except DeserializationError as error:
            assert failure is not None and f"offset {records[failure]['offset']} of t-" in str(error)
            written = error.written
        else:
            assert failure is None
        assert out.getvalue() == b"".join(want) and written == len(want)
        assert got_reported == reported

    check()


def test_properties_files_are_read_as_java_reads_them(tmp_path):
    """Utils.loadProps (java.util.Properties.load): ISO-8859-1, escapes, continuations, ':' and blanks as
    separators, trailing blanks kept."""
    path = tmp_path / "formatter.properties"
    path.write_bytes(b"line.separator=\\r\\n\nkey.separator=\\u2192\n# comment\n! comment\n  print.key = true   \n"
                     b"long=a\\\n   b\nx\\:y : 1\nlatin=\xe9\nbare\n")
    assert consume.read_properties_file(str(path)) == {
        "line.separator": "\r\n", "key.separator": "\u2192", "print.key": "true   ", "long": "ab", "x:y": "1",
        "latin": "\u00e9", "bare": ""}
    path.write_bytes(b"\\\n#foo=bar\nok=1\n")  # a continued empty line whose next starts with '#': a comment
    assert consume.read_properties_file(str(path)) == {"ok": "1"}
    path.write_bytes(b"key.separator=\\uD83D\\uDE00\nlone=a\\uD83Db\n")  # Java strings are UTF-16: a pair is one char
    assert consume.read_properties_file(str(path)) == {"key.separator": "\U0001F600", "lone": "a?b"}
    for malformed in (b"u=\\u41G\n", b"u=\\u004\n"):
        path.write_bytes(malformed)
        with pytest.raises(InvalidOptionError, match="Malformed"):
            consume.read_properties_file(str(path))


def test_offsets_missing_between_segments_are_said_on_stderr(tmp_path, capsysbinary):
    """A copy that lost a segment file: the records around it print, and stderr says which offsets were not there."""
    manifest = write_data_dir(tmp_path / "d", [TopicSpec("t", records_per_partition=300, records_per_batch=5,
                                                         segment_bytes=4096)], seed=2)
    pm = manifest.partition("t")
    gone, after = pm.segments[1].base_offset, pm.segments[2].base_offset
    for path in pm.directory.glob(f"{gone:020d}.*"):
        path.unlink()
    code, out, err = consume_cli(capsysbinary, "--data-dir", str(tmp_path / "d"), "--topic", "t", "--from-beginning",
                                 "--property", "print.offset=true", "--property", "print.value=false")
    assert code == 0 and out.count(b"\n") == pm.log_end_offset - (after - gone)
    assert f"offsets {gone}..{after - 1} are missing after" in err
    # following, it is said as soon as the read meets it (before the follow ends), once
    said_before_the_end = []

    def poll(_seconds: float) -> None:
        said_before_the_end.append(f"offsets {gone}..{after - 1} are missing after" in follow_err.getvalue())
        time.sleep(0.05)

    # (an idle timeout long enough for a poll on a loaded machine: with 20 ms, a listing slower than that ended the
    # follow before its first poll, and the test failed with nothing said before the end)
    follow_err = io.StringIO()
    args = build_parser().parse_args(["consume", "--data-dir", str(tmp_path / "d"), "--topic", "t",
                                      "--from-beginning", "--follow", "--timeout-ms", "1000", "--poll-ms", "1"])
    assert consume.run(args, io.BytesIO(), follow_err, sleep=poll) == 0
    assert said_before_the_end and all(said_before_the_end)
    assert follow_err.getvalue().count(f"offsets {gone}..{after - 1} are missing") == 1


def test_lenient_planning_decisions_are_said_on_stderr(tmp_path, capsysbinary):
    """--skip-message-on-error: records a plan leaves out or takes beyond the corrupt batches it counts are said
    (found in review: nothing was printed). An unreadable replication-offset-checkpoint makes the read go to the
    log end; a transaction whose marker fails its CRC is taken as aborted, its committed records left out."""
    import os

    root = tmp_path / "d"
    write_data_dir(root, [TopicSpec("t", records_per_partition=50, records_per_batch=5),
                          TopicSpec("x", records_per_partition=300, records_per_batch=10, transactional=True,
                                    abort_ratio=0.3, segment_bytes=6000)], seed=1)
    checkpoint = root / "replication-offset-checkpoint"
    checkpoint.write_text(checkpoint.read_text().replace("t 0 50", "t 0 5x0"))
    args = ["--data-dir", str(root), "--from-beginning", "--skip-message-on-error"]
    code, out, err = consume_cli(capsysbinary, *args, "--topic", "t")
    assert code == 0 and out.count(b"\n") == 50
    assert err.count(f"{checkpoint}: unreadable") == 1 and "falls back to the log end offset" in err

    checkpoint.write_text(checkpoint.read_text().replace("t 0 5x0", "t 0 50"))
    for f in (root / "x-0").glob("*.txnindex"):
        os.unlink(f)  # derived from the log
    import kafkaseg
    rows = kafkaseg.read_arrow(str(root), subscribe="x", includeControl="true", includeMetadata="true").to_pylist()
    marker = next(r for r in rows if r["isControl"] and r["key"][2:4] == b"\x00\x01")  # a COMMIT
    data = bytearray(open(marker["segment"], "rb").read())
    data[marker["position"] + 70] ^= 1
    open(marker["segment"], "wb").write(bytes(data))
    code, out, err = consume_cli(capsysbinary, *args, "--topic", "x", "--isolation-level", "read_committed")
    assert code == 0
    assert err.count(f"{marker['segment']} @ byte {marker['position']}: the transaction marker") == 1
    assert "taken as aborted" in err and "skipped 1 corrupt batch" in err


def test_a_record_of_many_headers_prints_without_a_python_object_per_header(tmp_path, capsysbinary):
    """print.headers turned a whole batch's headers into a dict each (2.9 GB for one record of 8 million headers,
    found in review); the text is now built a chunk of headers at a time, so memory follows the printed text."""
    import tracemalloc

    import kafkaseg.decode as decode

    if decode.IMPLEMENTATION != "cython":  # the pure twin builds a Python tuple per header while it decodes
        pytest.skip("the pure-Python decoder holds a Python object per header (KAFKASEG_PURE=1 or no compiled kernel)")

    from kafkaseg.testing.writer import Record, build_batch_v2

    count = 300_000
    headers = tuple(("h", None if i % 7 == 0 else b"%d" % (i % 10)) for i in range(count))
    partition = tmp_path / "data" / "t-0"
    partition.mkdir(parents=True)
    (partition / "00000000000000000000.log").write_bytes(
        build_batch_v2([Record(0, 1_700_000_000_000, b"k", b"v", headers)]).data)
    warm = tmp_path / "warm" / "t-0"  # the same command once first, so the modules it imports are not counted
    warm.mkdir(parents=True)
    (warm / "00000000000000000000.log").write_bytes(
        build_batch_v2([Record(0, 1_700_000_000_000, b"k", b"v", (("h", b"1"),))]).data)
    assert consume_cli(capsysbinary, "--data-dir", str(warm.parent), "--topic", "t", "--from-beginning",
                       "--property", "print.headers=true", "--property", "print.value=false")[0] == 0
    tracemalloc.start()
    try:
        code, out, _ = consume_cli(capsysbinary, "--data-dir", str(tmp_path / "data"), "--topic", "t",
                                   "--from-beginning", "--property", "print.headers=true",
                                   "--property", "print.value=false")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    expected = b",".join(b"h:" + (b"null" if v is None else v) for _, v in headers) + b"\n"
    assert code == 0 and out == expected
    assert peak < 12 * len(expected) + (16 << 20), f"{count} headers ({len(expected)} bytes printed) peaked at {peak}"


def test_a_null_headers_slot_prints_no_headers_whatever_its_offsets_say():
    """Arrow lets a null list slot span values; the formatter reads offsets directly, so it checks validity."""
    import pyarrow as pa

    values = pa.StructArray.from_arrays([pa.array(["a", "b", "c"]), pa.array([b"1", None, b"3"], pa.binary())],
                                        names=["key", "value"])
    headers = pa.ListArray.from_arrays(pa.array([0, 1, 3], pa.int32()), values, mask=pa.array([False, True]))
    fmt = consume.Formatter.from_properties({})
    texts, errors = fmt._header_texts(headers)
    assert texts == [b"a:1", b"NO_HEADERS"] and not errors


def test_topic_is_one_literal_name(data, capsysbinary):
    """The console consumer subscribes to exactly the --topic given: a comma list or a padded name is an illegal
    topic name there (Topic.validate), not two topics or a trimmed one."""
    root, _ = data
    for topic in ("orders,payments", " orders", "a" * 250):
        code, out, err = consume_cli(capsysbinary, "--data-dir", str(root), "--topic", topic, "--from-beginning")
        assert code != 0 and out == b"" and "is illegal" in err


@pytest.mark.parametrize("topic", [".", ".."])
def test_dot_topic_names_are_illegal(data, capsysbinary, topic):
    root, _ = data
    code, out, err = consume_cli(capsysbinary, "--data-dir", str(root), "--topic", topic, "--from-beginning")
    assert code != 0 and out == b"" and "is illegal" in err


def test_fail_on_data_loss_exits_3_after_printing_what_there_is(tmp_path, capsysbinary):
    """The console consumer's reset is silent to a script; --fail-on-data-loss makes each kind of loss exit 3
    (records deleted under a follow before they were read, an --offset below the log start), and nothing else:
    an --offset past the end resets without loss, and offsets missing between segments are no proof of one."""
    root = tmp_path / "live"
    manifest = write_data_dir(root, [TopicSpec("t", records_per_partition=300, records_per_batch=5,
                                               segment_bytes=4096, log_start_offset=0)], seed=4)
    pm = manifest.partition("t")
    assert len(pm.segments) >= 4
    second, third = pm.segments[1].base_offset, pm.segments[2].base_offset
    checkpoint = root / "replication-offset-checkpoint"
    write_offset_checkpoint(checkpoint, {("t", 0): second})

    def retention_runs(_seconds: float) -> None:  # the second segment goes before the consumer reaches it
        for path in pm.directory.glob(f"{second:020d}.*"):
            path.unlink()
        write_offset_checkpoint(root / "log-start-offset-checkpoint", {("t", 0): third})
        write_offset_checkpoint(checkpoint, {("t", 0): pm.log_end_offset})

    def follow(*flags):
        args = build_parser().parse_args(["consume", "--data-dir", str(root), "--topic", "t", "--from-beginning",
                                          "--follow", "--max-messages", str(pm.log_end_offset - (third - second)),
                                          "--poll-ms", "1", "--property", "print.offset=true", *flags])
        out, err = io.BytesIO(), io.StringIO()
        return consume.run(args, out, err, sleep=retention_runs), out.getvalue(), err.getvalue()

    code, out, err = follow("--fail-on-data-loss")
    expected = [o for o in range(pm.log_end_offset) if not second <= o < third]
    assert code == 3 and [int(line.split(b"\t")[0][7:]) for line in out.splitlines()] == expected
    assert "exit status 3: records were lost" in err
    # (a second run: the segment is gone already, and the log start says so: nothing is lost reading from it)
    code, out, err = consume_cli(capsysbinary, "--data-dir", str(root), "--topic", "t", "--from-beginning",
                                 "--fail-on-data-loss")
    assert code == 0 and "lost" not in err

    # an --offset below the log start: reset (earliest), and lost
    argv = ["--data-dir", str(root), "--topic", "t", "--partition", "0", "--consumer-property",
            "auto.offset.reset=earliest", "--property", "print.offset=true", "--property", "print.value=false"]
    code, out, err = consume_cli(capsysbinary, *argv, "--offset", str(second), "--fail-on-data-loss")
    assert code == 3 and out.splitlines()[0] == f"Offset:{third}".encode()
    code, _, _ = consume_cli(capsysbinary, *argv, "--offset", str(second))
    assert code == 0  # without the flag: the console consumer's status
    code, _, err = consume_cli(capsysbinary, *argv, "--offset", str(pm.log_end_offset + 5), "--fail-on-data-loss")
    assert code == 0 and "out of range" in err  # past the end: a reset, no record lost

    # offsets missing between segments: said, not counted (a compacted topic's follower holds such gaps, which
    # the files cannot tell from a lost segment file; found by review: every follower's cron job failed)
    for path in pm.directory.glob(f"{pm.segments[3].base_offset:020d}.*"):
        path.unlink()
    code, _, err = consume_cli(capsysbinary, *argv[:4], "--from-beginning", "--fail-on-data-loss")
    assert code == 0 and "are missing after" in err


def _log_dir_listings(monkeypatch) -> list[str]:
    """The log dirs listed from now on: every discovery of a log dir (``layout.discover``, whoever calls it) lists
    its partition folders with ``read_log_dir``, and reads those it selects."""
    import kafkaseg.storage.layout as layout

    listed: list[str] = []
    real = layout.read_log_dir
    monkeypatch.setattr(layout, "read_log_dir", lambda path, *a, **k: listed.append(path) or real(path, *a, **k))
    return listed


class _FirstWrite(io.BytesIO):
    """Output that notes how many log dir listings were made when the first record was written."""

    def __init__(self, listed: list[str]):
        super().__init__()
        self.listed = listed
        self.before_first: int | None = None

    def write(self, data) -> int:
        if self.before_first is None:
            self.before_first = len(self.listed)
        return super().write(data)


@pytest.mark.parametrize("argv", [
    ["--topic", "orders", "--from-beginning"],
    ["--include", "orders|plain", "--from-beginning"],
    ["--topic", "plain", "--partition", "0", "--offset", "3"],
    ["--topic", "plain", "--partition", "0", "--offset", "earliest"],
    ["--topic", "orders", "--from-beginning", "--follow", "--timeout-ms", "0"],
    ["--include", "orders|plain", "--from-beginning", "--follow", "--timeout-ms", "0"],
    ["--topic", "plain", "--partition", "0", "--offset", "3", "--follow", "--timeout-ms", "0"],
], ids=["topic", "include", "offset", "earliest", "follow-topic", "follow-include", "follow-offset"])
def test_the_log_dirs_are_listed_once_before_the_first_record(data, monkeypatch, argv):
    """Where to start, the first micro-batch's end and its plan all come from one discovery of the log dirs: each
    was its own (three, four with --offset N), every partition folder read again each time, which on 20,000
    partitions took 17.6 s to the first record (a whole read_arrow of them: 7.3 s). Counted, not timed."""
    root, manifest = data
    listed = _log_dir_listings(monkeypatch)
    out = _FirstWrite(listed)
    args = build_parser().parse_args(["consume", "--data-dir", str(root), *argv])
    assert consume.run(args, out, io.StringIO(), sleep=lambda _: None) == 0
    assert out.getvalue() and out.before_first == 1, listed
    if "--follow" not in argv:
        # the end: one more listing, for records that came while these were printed (then it stops)
        assert len(listed) == 2


def test_an_unknown_topic_or_partition_is_told_from_the_one_listing(data, monkeypatch, capsysbinary):
    """The hints (the topics there, the topic's partitions) name what the listing that found nothing found, not what
    a second discovery of every partition folder finds."""
    root, _ = data
    listed = _log_dir_listings(monkeypatch)
    code, _, err = consume_cli(capsysbinary, "--data-dir", str(root), "--topic", "plainn", "--from-beginning")
    assert code == 2 and "did you mean 'plain'?" in err and len(listed) == 1
    listed.clear()
    code, _, err = consume_cli(capsysbinary, "--data-dir", str(root), "--topic", "orders", "--partition", "7",
                               "--offset", "0")
    assert code != 0 and "no partition 7 of orders" in err and "its partitions there: 0, 1" in err
    assert len(listed) == 1


def test_a_follow_lists_again_at_every_poll_after_the_first(tmp_path, monkeypatch):
    """The first poll takes the listing the start was resolved on; every later one lists the log dir again, and so
    sees a topic created meanwhile (--include) and a high watermark that moved."""
    written = tmp_path / "written"
    manifest = write_data_dir(written, [TopicSpec("a", records_per_partition=30, records_per_batch=5),
                                        TopicSpec("b", records_per_partition=20, records_per_batch=5)], seed=5)
    root = tmp_path / "live"
    shutil.copytree(written, root, ignore=shutil.ignore_patterns("b-0"))
    listed = _log_dir_listings(monkeypatch)
    polls: list[int] = []

    def poll(_seconds: float) -> None:
        polls.append(len(listed))
        if len(polls) == 1:  # the topic is created (its folder renamed in) after the first poll
            shutil.copytree(written / "b-0", tmp_path / "b-0")
            os.rename(tmp_path / "b-0", root / "b-0")

    out = _FirstWrite(listed)
    args = build_parser().parse_args(["consume", "--data-dir", str(root), "--include", "a|b", "--from-beginning",
                                      "--follow", "--max-messages", "50", "--poll-ms", "1"])
    assert consume.run(args, out, io.StringIO(), sleep=poll) == 0
    expected = [r.value for t in ("a", "b") for r in manifest.partition(t, 0).data_records()]
    assert out.getvalue() == b"".join(v + b"\n" for v in expected)
    assert out.before_first == 1
    assert polls[0] == 2 and len(listed) == 3  # a's records, a poll that found nothing new, b's records


def test_a_run_ends_at_the_high_watermark_and_says_what_lies_past_it(tmp_path, capsysbinary):
    """As a consumer's fetch, a run without --follow ends at the high watermark; the records past it (on a crashed
    broker's disk, the seconds after its last checkpoint) are named on stderr, and --to-log-end prints them."""
    root = tmp_path / "data"
    write_data_dir(root, [TopicSpec("t", records_per_partition=300)], seed=2)
    write_offset_checkpoint(root / "replication-offset-checkpoint", {("t", 0): 290})
    code, out, err = consume_cli(capsysbinary, "--data-dir", str(root), "--topic", "t", "--from-beginning")
    assert code == 0 and len(out.splitlines()) == 290
    assert "t-0: offsets [290, 300) are on disk past the high watermark" in err and "--to-log-end" in err
    code, out, err = consume_cli(capsysbinary, "--data-dir", str(root), "--topic", "t", "--from-beginning",
                                 "--to-log-end")
    assert code == 0 and len(out.splitlines()) == 300 and "past the high watermark" not in err
    write_offset_checkpoint(root / "replication-offset-checkpoint", {("t", 0): 300})
    code, out, err = consume_cli(capsysbinary, "--data-dir", str(root), "--topic", "t", "--from-beginning")
    assert code == 0 and len(out.splitlines()) == 300 and "past the high watermark" not in err


def test_read_committed_ends_at_the_last_stable_offset_without_a_high_watermark_note(tmp_path, capsysbinary):
    """Under read_committed a run ends at the last stable offset (an open transaction's records are past it): not
    records past the high watermark, so nothing is said of them (found in review)."""
    root = tmp_path / "data"
    write_data_dir(root, [TopicSpec("tx", records_per_partition=300, records_per_batch=10, transactional=True,
                                    open_transactions=1)], seed=4)
    code, out, err = consume_cli(capsysbinary, "--data-dir", str(root), "--topic", "tx", "--from-beginning",
                                 "--isolation-level", "read_committed")
    assert code == 0 and 0 < len(out.splitlines()) < 300 and "past the high watermark" not in err


def test_kafkas_other_names_for_include_and_the_property_options(data, capsysbinary, tmp_path):
    """--whitelist (Kafka 3.x's name for --include, ignored when --include is given), and Kafka 4.2's
    --formatter-property, --command-property and --command-config (KIP-1147's names for --property,
    --consumer-property and --consumer.config) work as Kafka takes them; each old name with its new one is Kafka's
    usage error."""
    root, _ = data
    base = ["--data-dir", str(root), "--from-beginning"]
    partitions = ["--property", "print.value=false", "--property", "print.partition=true"]
    code, out, _ = consume_cli(capsysbinary, *base, "--include", "pl.*", *partitions)
    assert code == 0 and out == b"Partition:0\n" * 20
    assert consume_cli(capsysbinary, *base, "--whitelist", "pl.*", *partitions)[:2] == (0, out)
    assert consume_cli(capsysbinary, *base, "--whitelist", "orders", "--include", "pl.*", *partitions)[:2] == (0, out)
    code, _, err = consume_cli(capsysbinary, *base, "--whitelist", "pl.*", "--topic", "plain")
    assert code == 2 and "Exactly one of --include/--topic is required. --whitelist is DEPRECATED" in err
    code, new, _ = consume_cli(capsysbinary, *base, "--include", "pl.*", "--formatter-property", "print.value=false",
                               "--formatter-property", "print.partition=true")
    assert code == 0 and new == out
    code, _, err = consume_cli(capsysbinary, *base, "--topic", "plain", "--property", "print.key=true",
                               "--formatter-property", "print.offset=true")
    assert code == 2 and "Options --property and --formatter-property cannot be specified together." in err
    offsets = ["--topic", "payments", "--property", "print.offset=true"]
    _, committed, _ = consume_cli(capsysbinary, *base, *offsets, "--isolation-level", "read_committed")
    _, uncommitted, _ = consume_cli(capsysbinary, *base, *offsets)
    assert committed != uncommitted
    code, out, _ = consume_cli(capsysbinary, *base, *offsets, "--command-property", "isolation.level=read_committed")
    assert code == 0 and out == committed
    config = tmp_path / "command.properties"
    config.write_text("isolation.level=read_committed\n")
    code, out, _ = consume_cli(capsysbinary, *base, *offsets, "--command-config", str(config))
    assert code == 0 and out == committed
    for old, new, value in (("--consumer-property", "--command-property", "group.id=g"),
                            ("--consumer.config", "--command-config", str(config))):
        code, _, err = consume_cli(capsysbinary, *base, *offsets, old, value, new, value)
        assert code == 2 and f"Options {old} and {new} cannot be specified together." in err


def test_the_total_counts_only_the_records_written_before_the_reader_went_away(tmp_path):
    """`kafkaseg consume ... | head -1`: "Processed a total of N messages" counted every record handed to
    Python's stdout, whose write returned having written part of them when the reader went away; it counts the
    records written whole, and says why it stopped in the console consumer's words."""
    import shlex
    import subprocess
    import sys

    command = [sys.executable, "-m", "kafkaseg.cli.main", "consume", "--topic", "t", "--from-beginning",
               "--data-dir"]
    # a real `| head -1` over 2 MB of records: the first record, then some records written, not all
    large = write_data_dir(tmp_path / "large", [TopicSpec("t", records_per_partition=1000, records_per_batch=10,
                                                          value_size=2000)], seed=5)
    first = large.partition("t", 0).data_records()[0].value
    done = subprocess.run(" ".join(map(shlex.quote, [*command, str(large.path)])) + " | head -1", shell=True,
                          capture_output=True)
    err = done.stderr.decode()
    assert done.returncode == 0 and done.stdout == first + b"\n", err
    total = int(err.splitlines()[-1].removeprefix("Processed a total of ").removesuffix(" messages"))
    assert 1 <= total < 1000
    assert err.splitlines()[0] == "Unable to write to standard out, closing consumer."
    # the reader gone before the first byte (`| head -c 0` that has exited)
    small = write_data_dir(tmp_path / "small", [TopicSpec("t", partitions=3, records_per_partition=50,
                                                          records_per_batch=5)], seed=5)
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        done = subprocess.run([*command, str(small.path)], stdout=write_end, stderr=subprocess.PIPE)
    finally:
        os.close(write_end)
    err = done.stderr.decode()
    assert done.returncode == 0, err
    assert err.splitlines() == ["Unable to write to standard out, closing consumer.",
                                "Processed a total of 0 messages"]


@pytest.mark.parametrize("taken", [0, 5, 100, 101, 250, 1000])
def test_a_record_counts_once_its_line_is_written_whole(data, taken):
    """An output that takes ``taken`` bytes (in two writes, as a pipe can) and then reports its reader gone:
    the total is the records whose line it took whole."""
    root, manifest = data

    class Closing(io.BytesIO):
        def write(self, chunk):
            room = taken - self.tell()
            if room <= 0:
                raise BrokenPipeError(32, "Broken pipe")
            return super().write(bytes(chunk[:max(1, min(room, len(chunk)) // 2) if room > 1 else 1]))

    args = build_parser().parse_args(["consume", "--data-dir", str(root), "--topic", "orders", "--from-beginning",
                                      "--property", "print.offset=true"])
    out, err = Closing(), io.StringIO()
    assert consume.run(args, out, err) == 0
    lines = [f"Offset:{r.offset}\t{(r.value if r.value is not None else b'null').decode()}\n".encode()
             for p in (0, 1) for r in manifest.partition("orders", p).data_records()]
    whole = next(n for n in range(len(lines) + 1) if n == len(lines) or sum(map(len, lines[:n + 1])) > taken)
    assert out.getvalue() == b"".join(lines)[:taken]
    assert err.getvalue().splitlines()[-2:] == ["Unable to write to standard out, closing consumer.",
                                                f"Processed a total of {whole} messages"]


@pytest.mark.parametrize("typo, closest", [("print.valu", "print.value"), ("print.ky", "print.key"),
                                           ("print.timestmp", "print.timestamp"), ("key.seperator", "key.separator"),
                                           ("print.offsets", "print.offset"), ("prnt.value", "print.value")])
def test_a_misspelt_formatter_property_gets_the_one_closest_name(data, capsysbinary, typo, closest):
    """The names share ``print.``: compared whole, every typo was close to three of them; the part after a prefix
    the typo shares with a name decides, and one name is suggested."""
    from kafkaseg.cli.consume import FORMATTER_PROPERTIES
    from kafkaseg.errors import did_you_mean

    assert did_you_mean(typo, FORMATTER_PROPERTIES) == f" (did you mean {closest!r}?)"
    root, _ = data
    code, _, err = consume_cli(capsysbinary, "--data-dir", str(root), "--topic", "orders", "--from-beginning",
                               "--max-messages", "1", "--property", f"{typo}=false")
    assert code == 0 and f"no effect: {typo} (did you mean {closest!r}?)" in err, err


def test_did_you_mean_names_one_name_and_none_when_nothing_is_close():
    from kafkaseg.errors import did_you_mean

    assert did_you_mean("count", ["counts", "counts-bad", "orders"]) == " (did you mean 'counts'?)"
    assert did_you_mean("Orders", ["orders", "pay"]) == " (did you mean 'orders'?)"
    assert did_you_mean("ORDERS-EU", ["orders-eu", "orders-us"]) == " (did you mean 'orders-eu'?)"
    assert did_you_mean("colour", ["print.key", "print.value"]) == ""
    assert did_you_mean("print.zzzzz", ["print.key", "print.value"]) == ""  # the prefix alone is not close
    # a transposition in a short tail after the shared prefix: the whole names are close (it named neither)
    assert did_you_mean("orders-ue", ["orders-eu", "orders-us", "pay"]) == " (did you mean 'orders-eu' or 'orders-us'?)"
