"""The CLI (dump, verify, describe, offsets, locate) on damaged real segments: an exit status and a message,
never a traceback or a hang."""

from __future__ import annotations

import shutil

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkaseg.cli.main import main

SEGMENT = "segments/smartassets__backend-server/51801d05/kafka/data/docker-connect-status-3"


@pytest.mark.corpus
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(mutations=st.lists(st.tuples(st.integers(0, 14_471), st.integers(0, 255)), min_size=1, max_size=6),
       cut=st.one_of(st.none(), st.integers(0, 14_472)))
def test_dump_and_verify_survive_damaged_segments(corpus_dir, tmp_path_factory, capsys, mutations, cut):
    work = tmp_path_factory.mktemp("fuzz") / "docker-connect-status-3"
    shutil.copytree(corpus_dir / SEGMENT, work)
    log = work / "00000000000000000157.log"
    data = bytearray(log.read_bytes())
    for position, value in mutations:
        data[position % len(data)] = value
    if cut is not None:
        data = data[:cut]
    log.write_bytes(bytes(data))
    for argv in (["dump", "--files", str(log), "--deep-iteration", "--print-data-log", "--no-progress"],
                 ["dump", "--files", str(log.with_suffix(".index")), "--verify-index-only", "--no-progress"],
                 ["verify", str(work), "--no-progress"],
                 ["describe", str(work.parent)],
                 ["offsets", "--data-dir", str(work.parent), "--topic", "docker-connect-status", "--time", "0"],
                 ["offsets", "--data-dir", str(work.parent), "--topic", "docker-connect-status", "--time", "-3"],
                 ["locate", "--data-dir", str(work.parent), "--topic", "docker-connect-status", "--partition", "3",
                  "--offset", "200"]):
        status = main(argv)  # anything but a KafkaSegError would propagate and fail the test
        assert isinstance(status, int)
    capsys.readouterr()
