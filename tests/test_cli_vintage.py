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
