"""``kafkaseg log-dirs``: kafka-log-dirs.sh --describe's JSON, and disk usage, checked against the files (sizes
from ``os.path.getsize``, disk usage from ``du``), not against kafkaseg's own discovery."""

from __future__ import annotations

import glob
import json
import os
import re
import shutil
import subprocess

import pytest

from kafkaseg.cli.main import main
from kafkaseg.testing import TopicSpec, write_data_dir

FUTURE = "0123456789abcdef0123456789abcdef"


def _log_bytes(folder) -> int:
    return sum(os.path.getsize(p) for p in glob.glob(os.path.join(folder, "*.log")))


def _du(path) -> int:
    """``du -sB1``: what the docs promise diskBytes is."""
    return int(subprocess.run(["du", "-sB1", str(path)], check=True, capture_output=True, text=True).stdout.split()[0])


@pytest.fixture()
def brokers(tmp_path):
    """Broker 1 with two log dirs (a move of t-0 between them under way: its -future copy lags), a topic deletion
    and a stray replica awaiting removal; broker 2 with one log dir."""
    a = write_data_dir(tmp_path / "b1-a", [TopicSpec("t", partitions=2, records_per_partition=400,
                                                     segment_bytes=8192)], seed=1, node_id=1)
    b = write_data_dir(tmp_path / "b1-b", [TopicSpec("u", records_per_partition=50)], seed=2, node_id=1)
    c = write_data_dir(tmp_path / "b2", [TopicSpec("t", partitions=2, records_per_partition=100)], seed=3,
                       node_id=2)
    current = a.partition("t", 0)
    assert len(current.segments) >= 3
    future = b.path / f"t-0.{FUTURE}-future"
    shutil.copytree(current.directory, future)
    last = current.segments[-1]
    for path in glob.glob(str(future / f"{last.base_offset:020d}.*")):
        os.remove(path)  # the copy has not reached the current replica's last segment yet
    shutil.copytree(b.partition("u", 0).directory, b.path / f"u-0.{FUTURE}-delete")
    shutil.copytree(a.partition("t", 1).directory, a.path / f"t-7.{FUTURE}-stray")
    first = a.partition("t", 1).segments[0].log_path
    shutil.copy(first, str(first) + ".deleted")  # as the broker renames a segment retention removed
    return a, b, c, last.base_offset


def run(argv, capsys):
    code = main(argv)
    out = capsys.readouterr()
    return code, out.out, out.err


def test_json_is_kafka_log_dirs_describe(brokers, capsys):
    a, b, c, future_end = brokers
    code, out, err = run(["log-dirs", "--describe", "--json", str(a.path), str(b.path), str(c.path)], capsys)
    assert code == 0, err
    doc = json.loads(out)
    assert doc["version"] == 1
    assert [x["broker"] for x in doc["brokers"]] == [1, 2]
    b1, b2 = doc["brokers"]
    assert [d["logDir"] for d in b1["logDirs"]] == [str(a.path), str(b.path)]
    assert [d["logDir"] for d in b2["logDirs"]] == [str(c.path)]

    def parts(log_dir):
        return {(p["partition"], p["isFuture"]): p for p in log_dir["partitions"]}

    dir_a, dir_b = (parts(d) for d in b1["logDirs"])
    assert set(dir_a) == {("t-0", False), ("t-1", False)}
    assert set(dir_b) == {("u-0", False), ("t-0", True)}
    for name in ("t-0", "t-1"):
        assert dir_a[(name, False)]["size"] == _log_bytes(a.path / name)
        assert dir_a[(name, False)]["offsetLag"] == 0
    # the future replica: its own .log files, and it lags the current replica by the offsets it has yet to copy
    future = dir_b[("t-0", True)]
    assert future["size"] == _log_bytes(b.path / f"t-0.{FUTURE}-future")
    assert future["offsetLag"] == a.partition("t", 0).log_end_offset - future_end > 0
    assert all(d["error"] is None for d in b1["logDirs"] + b2["logDirs"])
    # no .deleted file, index or snapshot counts in Kafka's size: UnifiedLog.size is the segments' .log files
    assert dir_a[("t-1", False)]["segments"] == len(a.partition("t", 1).segments)


def test_disk_usage_is_du(brokers, capsys):
    a, b, c, _ = brokers
    code, out, err = run(["log-dirs", "--json", str(a.path), str(b.path)], capsys)
    assert code == 0, err
    dir_a, dir_b = json.loads(out)["brokers"][0]["logDirs"]
    assert dir_a["diskBytes"] == _du(a.path)
    assert dir_b["diskBytes"] == _du(b.path)
    assert dir_b["pendingDeletionBytes"] == _du(b.path / f"u-0.{FUTURE}-delete") > 0
    assert dir_a["strayBytes"] == _du(a.path / f"t-7.{FUTURE}-stray") > 0
    deleted = glob.glob(str(a.path / "t-1" / "*.deleted"))
    assert dir_a["pendingDeletionBytes"] == sum(os.stat(p).st_blocks * 512 for p in deleted) > 0
    by_name = {p["partition"]: p for p in dir_a["partitions"]}
    assert by_name["t-1"]["diskBytes"] == _du(a.path / "t-1")
    usage = shutil.disk_usage(a.path)
    assert dir_a["totalBytes"] == usage.total and 0 <= dir_a["usableBytes"] <= usage.total


def test_sparse_preallocated_index_counts_as_written(tmp_path, capsys):
    """A live broker preallocates the active segment's .index/.timeindex (segment.index.bytes, 10 MiB) as sparse
    files: du counts the blocks written, and so does log-dirs; Kafka's size counts neither."""
    d = write_data_dir(tmp_path / "d", [TopicSpec("p", records_per_partition=200)], seed=4)
    active = d.partition("p", 0).segments[-1]
    index = str(active.log_path)[:-4] + ".index"
    before = os.stat(index).st_blocks
    os.truncate(index, 10 << 20)
    if os.stat(index).st_blocks > before + 8:
        pytest.skip("this filesystem does not keep truncated files sparse")
    code, out, err = run(["log-dirs", "--json", str(d.path)], capsys)
    assert code == 0, err
    log_dir = json.loads(out)["brokers"][0]["logDirs"][0]
    assert log_dir["diskBytes"] == _du(d.path) < 10 << 20
    assert log_dir["partitions"][0]["size"] == _log_bytes(d.path / "p-0")


def test_filters_errors_and_table(brokers, tmp_path, capsys):
    a, b, c, _ = brokers
    paths = [str(a.path), str(b.path), str(c.path)]
    code, out, err = run(["log-dirs", "--json", "--topic-list", "u", *paths], capsys)
    assert code == 0, err
    doc = json.loads(out)
    names = [p["partition"] for br in doc["brokers"] for d in br["logDirs"] for p in d["partitions"]]
    assert names == ["u-0"]
    code, out, err = run(["log-dirs", "--json", "--broker-list", "2", *paths], capsys)
    assert code == 0 and [br["broker"] for br in json.loads(out)["brokers"]] == [2]
    # an offline log dir says no broker: it stays whatever --broker-list says, and the exit status says it
    code, out, err = run(["log-dirs", "--json", "--broker-list", "2", *paths, str(tmp_path / "gone")], capsys)
    dirs = [d["logDir"] for br in json.loads(out)["brokers"] for d in br["logDirs"]]
    assert code == 2 and dirs == [str(c.path), str(tmp_path / "gone")] and "no such directory" in err
    # a log dir given again through a symlink is described once
    (tmp_path / "link").symlink_to(a.path)
    code, out, err = run(["log-dirs", "--json", str(a.path), str(tmp_path / "link")], capsys)
    assert code == 0 and [d["logDir"] for br in json.loads(out)["brokers"] for d in br["logDirs"]] == [str(a.path)]
    # a broker id none of the dirs has: LogDirsCommand's error, not a silent subset
    code, out, err = run(["log-dirs", "--json", "--broker-list", "1,9", *paths], capsys)
    assert (code, out) == (1, "") and "The given brokers do not exist from --broker-list: 9" in err
    # a topic on none of these dirs: a hint (a typo?), and exit status 0 as kafka-log-dirs.sh's (which prints
    # nothing for it): on one broker's disks a topic hosted by other brokers is usual
    code, out, err = run(["log-dirs", "--topic-list", "tt", *paths], capsys)
    assert code == 0 and "no replica of topic tt" in err and "did you mean 't'?" in err
    code, _, err = run(["log-dirs", "--broker-list", "x", *paths], capsys)
    assert code == 2 and "--broker-list" in err
    code, _, err = run(["log-dirs", str(a.path / "t-0")], capsys)
    assert code == 2 and "not a log dir" in err and "give its log dir" in err
    # a log dir that is not there or empty (a disk not mounted) is an offline log dir: the others are described
    (tmp_path / "unmounted").mkdir()
    code, out, err = run(["log-dirs", "--json", str(a.path), str(tmp_path / "unmounted"), str(tmp_path / "gone")],
                         capsys)
    assert code == 2 and "disk not mounted" in err
    assert f"{tmp_path / 'unmounted'}: not a log dir" in err and err.count(str(tmp_path / "unmounted")) == 1
    dirs = [d for br in json.loads(out)["brokers"] for d in br["logDirs"]]
    assert [(d["logDir"], d["error"], len(d["partitions"])) for d in dirs] == [
        (str(a.path), None, 2),
        (str(tmp_path / "unmounted"), "org.apache.kafka.common.errors.KafkaStorageException", 0),
        (str(tmp_path / "gone"), "org.apache.kafka.common.errors.KafkaStorageException", 0)]
    code, _, err = run(["log-dirs", "--bootstrap-server", "localhost:9092", "--describe", str(a.path)], capsys)
    assert code == 2 and "instead of --bootstrap-server" in err
    # the table: totals per log dir and per topic, largest first
    code, out, err = run(["log-dirs", "--partitions", "--bytes", *paths], capsys)
    assert code == 0, err
    topic_rows = [line for line in out.splitlines() if line.startswith("│ t ") or line.startswith("│ u ")]
    assert [r.split()[1] for r in topic_rows[:2]] == ["t", "u"]
    t_total = sum(_log_bytes(p) for p in [a.path / "t-0", a.path / "t-1", b.path / f"t-0.{FUTURE}-future",
                                          c.path / "t-0", c.path / "t-1"])
    assert str(t_total) in topic_rows[0]
    assert "1 (+1 future)" in out


def test_offline_log_dir_and_future_without_its_current(brokers, capsys):
    a, b, c, _ = brokers
    (a.path / "replication-offset-checkpoint").write_text("0\n2\nt 0 notanumber\n")
    code, out, err = run(["log-dirs", "--json", str(a.path), str(b.path)], capsys)
    assert code == 0, err
    dir_a, dir_b = json.loads(out)["brokers"][0]["logDirs"]
    # a broker takes such a log dir offline; kafkaseg says so and still lists what it can read there
    assert dir_a["error"] == "org.apache.kafka.common.errors.KafkaStorageException"
    assert "replication-offset-checkpoint" in err
    assert {p["partition"] for p in dir_a["partitions"]} == {"t-0", "t-1"}
    # the future replica's current one is in a log dir not given: its lag is unknown, as the broker's -1
    code, out, err = run(["log-dirs", "--json", str(b.path)], capsys)
    future = [p for p in json.loads(out)["brokers"][0]["logDirs"][0]["partitions"] if p["isFuture"]]
    assert future[0]["offsetLag"] == -1 and "not in broker 1's log dirs given" in err


def test_a_cut_folder_name_counts_for_the_topic_it_starts(tmp_path, capsys):
    """The broker cuts the topic in a -delete/-stray folder's name to keep it within 255 characters: with
    --topic-list, such a folder counts for the topics its cut name starts (and for no other)."""
    d = write_data_dir(tmp_path / "d", [TopicSpec("p", records_per_partition=20)], seed=6)
    topic = "x" * 240
    cut = d.path / f"{topic[:214]}-0.{FUTURE}-stray"
    assert len(cut.name) == 255
    shutil.copytree(d.partition("p", 0).directory, cut)
    for listed, counted in ((topic, True), ("p", False)):
        code, out, _ = run(["log-dirs", "--json", "--topic-list", listed, str(d.path)], capsys)
        stray = json.loads(out)["brokers"][0]["logDirs"][0]["strayBytes"]
        assert (stray == _du(cut)) if counted else stray == 0, listed


def test_a_path_that_is_no_log_dir_is_a_bad_path(brokers, tmp_path):
    """A log dir given that is not there, a file, a partition's folder, an empty folder (a disk not mounted) or a
    folder of other things is a path in error (BadPathError, the LayoutError discovery raises for such paths), as
    for every other command; described offline as before (the error's words in ``why``)."""
    from kafkaseg.cli.log_dirs import _describe_one, describe_log_dirs
    from kafkaseg.errors import BadPathError
    from kafkaseg.storage import fs as _fs

    a = brokers[0]
    (tmp_path / "a-file").write_text("")
    (tmp_path / "unmounted").mkdir()
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("")
    for path, words in [(tmp_path / "gone", "no such directory"), (tmp_path / "a-file", "not a log dir (a file"),
                        (a.path / "t-0", "give its log dir"), (tmp_path / "unmounted", "disk not mounted"),
                        (tmp_path / "other", "no meta.properties")]:
        filesystem, local = _fs.open_filesystem(str(path))
        with pytest.raises(BadPathError, match=re.escape(words)):
            _describe_one(local, filesystem, None)
        (usage,) = describe_log_dirs([str(path)])
        assert not usage.readable and words in usage.why[0], usage.why


def test_a_folder_above_a_log_dir_names_it(tmp_path, capsys):
    """``kafkaseg log-dirs /var/lib/kafka`` for ``/var/lib/kafka/data``: every other command's error names the log
    dir below ("it holds one: ... (read that instead)"); log-dirs said only what the folder lacks (found by a
    walkthrough)."""
    write_data_dir(tmp_path / "kafka" / "data", [TopicSpec("t", records_per_partition=5)], seed=1)
    code, out, err = run(["log-dirs", "--json", str(tmp_path / "kafka")], capsys)
    assert code == 2 and '"partitions":[]' in out  # an offline log dir, as before
    assert f"it holds one: {tmp_path / 'kafka' / 'data'} (give that instead)" in err, err
