"""Damaged side files of a written log dir (everything but the ``.log``: ``.index``, ``.timeindex``, ``.txnindex``,
producer ``.snapshot``, the checkpoints, ``meta.properties``, ``partition.metadata``, and ``.swap``/``.cleaned``/
``.deleted`` names), seeded and cheap: every entry point (the reads strict and lenient, by offset and by time,
``verify``, ``describe``, ``offsets``, ``locate``, ``retention``) gives records, an exit status or a kafkaseg error,
never another exception, and never touches the data dir. ``test_scan_fuzz.py`` and ``test_cli_fuzz.py`` damage
``.log``/``.index``/``.timeindex`` bytes of one corpus partition; this covers the other files, and the index files
of a transactional, compacted and legacy log.

Indexes are hints: a strict read of a whole partition that succeeds returns the records the undamaged dir holds,
whatever its ``.index``/``.timeindex`` say."""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import random
import shutil
from pathlib import Path

import pytest

import kafkaseg
from kafkaseg.cli.main import main
from kafkaseg.errors import CorruptDataError, KafkaSegError
from kafkaseg.testing import TopicSpec, write_data_dir

TOPICS = [
    TopicSpec("tx", records_per_partition=300, transactional=True, abort_ratio=0.5, open_transactions=1,
              segment_bytes=8 * 1024, preallocate_active_index=4096),
    TopicSpec("cmp", records_per_partition=200, codec="gzip", key_cardinality=10, gap_ratio=0.2,
              cleanup_policy="compact", segment_bytes=4 * 1024, log_start_advance=3, idempotent=True),
    TopicSpec("old", records_per_partition=120, magic=1, segment_bytes=4 * 1024),
]
#: what each seed damages, in turn (``seed % len(KINDS)``): every kind of file gets cases
KINDS = (".index", ".timeindex", ".txnindex", ".snapshot", "leader-epoch-checkpoint", "offset-checkpoint",
         "meta.properties", "partition.metadata", "names")
CASES = 27


@pytest.fixture(scope="module")
def written(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("side-fuzz") / "logs"
    write_data_dir(root, TOPICS, seed=1)  # (a seed whose aborts leave two .txnindex files)
    return root


def _state(root: Path) -> dict[str, tuple[str, int]]:
    return {str(p.relative_to(root)): (hashlib.sha1(p.read_bytes()).hexdigest() if p.is_file() else "dir",
                                       p.stat().st_mtime_ns) for p in sorted(root.rglob("*"))}


def _records(table) -> list:
    return list(zip(table.column("partition").to_pylist(), table.column("offset").to_pylist(),
                    table.column("value").to_pylist()))


def _damage_bytes(rng: random.Random, data: bytes) -> tuple[bytes, str]:
    data = bytearray(data)
    kind = rng.choice(["flip", "int", "truncate", "zero", "append", "empty", "dupe"])
    if not data and kind not in ("append", "empty"):
        kind = "append"
    if kind == "flip":
        i = rng.randrange(len(data))
        data[i] ^= 1 << rng.randrange(8)
    elif kind == "int":
        i = rng.randrange(len(data))
        width = rng.choice([4, 8])
        value = rng.choice([0, -1, 1, 2**31 - 1, -2**31, rng.randrange(-2**20, 2**20)])
        data[i:i + width] = value.to_bytes(width, "big", signed=True)
    elif kind == "truncate":
        del data[rng.randrange(len(data) + 1):]
    elif kind == "zero":
        i = rng.randrange(len(data))
        k = rng.choice([4, 8, 12, len(data)])
        data[i:i + k] = bytes(len(data[i:i + k]))
    elif kind == "append":
        data += rng.choice([bytes(12), b"\xff" * 8, bytes(rng.randrange(256) for _ in range(17))])
    elif kind == "dupe":
        i = rng.randrange(len(data))
        data[i:i] = data[i:i + rng.randint(1, 40)]
    else:
        data = bytearray()
    return bytes(data), kind


def _damage_text(rng: random.Random, text: str) -> tuple[str, str]:
    lines = text.split("\n")
    i = rng.randrange(len(lines))
    kind = rng.choice(["drop", "add", "token", "big"])
    if kind == "drop":
        del lines[i]
    elif kind == "add":
        lines.insert(i, rng.choice(["", "x", "tx 0", "tx 0 -5", "2 1000", "-1 -1", "tx 0 99999999999999999999",
                                    "version=9", "node.id=abc", "topic_id: AAAA", "cluster.id=", "5"]))
    else:
        tokens = lines[i].split(" ")
        j = rng.randrange(len(tokens))
        tokens[j] = rng.choice(["", "-1", "x", "9223372036854775808", "1" * 40] if kind == "big" else
                               ["0", "٣", "1.5", tokens[j] * 2])
        lines[i] = " ".join(tokens)
    return "\n".join(lines), kind


def _damage(rng: random.Random, root: Path, kind: str) -> tuple[str, str]:
    """Damage one ``kind`` of side file of ``root`` (or, for "names", leave a ``.log`` as the cleaner and retention
    do); says what, and the topic of the folder it is in (a root file's: any)."""
    if kind == "names":
        log = rng.choice(sorted(root.rglob("*.log")))
        how = rng.choice(["swap", "cleaned", "deleted", "merge"])
        if how == "swap":
            shutil.copy(log, log.with_name(log.name + ".swap"))
        elif how == "cleaned":
            shutil.copy(log, log.with_suffix(".cleaned"))
        elif how == "deleted":
            log.rename(log.with_name(log.name + ".deleted"))
        else:  # a cleaner's merged segment not yet swapped in: this segment and the next one's batches
            logs = sorted(log.parent.glob("*.log"))
            at = logs.index(log)
            log.with_name(log.name + ".swap").write_bytes(b"".join(p.read_bytes() for p in logs[at:at + 2]))
        return f"{how} {log.relative_to(root)}", log.parent.name.rsplit("-", 1)[0]
    target = rng.choice(sorted(p for p in root.rglob("*") if p.is_file() and p.name.endswith(kind)))
    data = target.read_bytes()
    if target.name.endswith(("checkpoint", "meta.properties", "partition.metadata")) and rng.random() < 0.7:
        text, kind = _damage_text(rng, data.decode("utf-8", "surrogateescape"))
        target.write_bytes(text.encode("utf-8", "surrogateescape"))
    else:
        new, kind = _damage_bytes(rng, data)
        target.write_bytes(new)
    topic = target.parent.name.rsplit("-", 1)[0] if target.parent != root else rng.choice(["tx", "cmp", "old"])
    return f"{kind} {target.relative_to(root)}", topic


def _cli(argv: list[str]) -> int:
    raw = io.BytesIO()
    out = io.TextIOWrapper(raw, encoding="utf-8", write_through=True)  # consume writes to stdout's buffer
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        return main(argv)


def _kafkaseg_or_value(call):
    try:
        return call()
    except CorruptDataError as err:
        assert err.path is not None or "@ byte" in str(err), err
        return err
    except KafkaSegError as err:
        return err


@pytest.mark.parametrize("seed", range(CASES))
def test_damaged_side_files_give_records_or_kafkaseg_errors(written, tmp_path, seed):
    rng = random.Random(seed)
    root = tmp_path / "logs"
    shutil.copytree(written, root)
    what, topic = _damage(rng, root, KINDS[seed % len(KINDS)])
    before = _state(root)
    d = str(root)
    reads = {
        "strict": lambda: kafkaseg.read_arrow(d, subscribe=topic, upperBound="logEndOffset"),
        "skip": lambda: kafkaseg.read_arrow(d, subscribe=topic, onCorruption="skip", failOnDataLoss="false"),
        "range": lambda: kafkaseg.read_arrow(d, subscribe=topic, startingOffsets=json.dumps({topic: {"0": 60}}),
                                             endingOffsets=json.dumps({topic: {"0": 97}})),
        "time": lambda: kafkaseg.read_arrow(d, subscribe=topic, startingTimestamp=1_700_000_000_600,
                                            onCorruption="skip"),
        "committed": lambda: kafkaseg.read_arrow(d, subscribe=topic, onCorruption="skip",
                                                 **{"kafka.isolation.level": "read_committed"}),
    }
    got = {name: _kafkaseg_or_value(read) for name, read in reads.items()}
    for argv in (["verify", d, "--no-progress"], ["describe", d, "--full", "--segments"],
                 ["offsets", "--data-dir", d, "--topic", topic, "--time", "1700000000600"],
                 ["offsets", "--data-dir", d, "--topic", topic, "--time", "-3", "--on-corruption", "skip"],
                 ["locate", "--data-dir", d, "--topic", topic, "--partition", "0", "--offset", "80"],
                 ["retention", d, "--now", "1800000000000", "--segments"]):
        assert isinstance(_kafkaseg_or_value(lambda: _cli(argv)), (int, KafkaSegError)), (what, argv)
    assert _state(root) == before, what
    if what.split()[-1].endswith((".index", ".timeindex")) and not isinstance(got["strict"], KafkaSegError):
        intact = kafkaseg.read_arrow(str(written), subscribe=topic, upperBound="logEndOffset")
        assert _records(got["strict"]) == _records(intact), what
