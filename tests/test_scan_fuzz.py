"""read_arrow on damaged real partitions: kafkaseg errors naming a file (or, with onCorruption=skip, rows and
counts), never another exception, a hang, or records that were not in the file."""

from __future__ import annotations

import shutil

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kafkaseg
from kafkaseg.errors import KafkaSegError
from tests.oracle import kafka_python_records

PARTITION = "segments/smartassets__backend-server/51801d05/kafka/data/docker-connect-status-3"


@pytest.mark.corpus
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(file=st.sampled_from(["00000000000000000157.log", "00000000000000000157.index",
                             "00000000000000000157.timeindex", "00000000000000000000.log"]),
       mutations=st.lists(st.tuples(st.integers(0, 1 << 20), st.integers(0, 255)), min_size=1, max_size=6),
       cut=st.one_of(st.none(), st.integers(0, 1 << 20)), mode=st.sampled_from(["fail", "skip"]))
def test_damaged_partitions_fail_cleanly_or_skip_with_counts(corpus_dir, tmp_path_factory, file, mutations, cut,
                                                             mode):
    work = tmp_path_factory.mktemp("fuzz") / "docker-connect-status-3"
    shutil.copytree(corpus_dir / PARTITION, work)
    target = work / file
    data = bytearray(target.read_bytes())
    if data:
        for position, value in mutations:
            data[position % len(data)] = value
    if cut is not None:
        data = data[:cut % (len(data) + 1)]
    target.write_bytes(bytes(data))
    genuine = {(r["offset"], r["value"]) for log in sorted((corpus_dir / PARTITION).glob("*.log"))
               for r in kafka_python_records(log.read_bytes())}
    try:
        scan = kafkaseg.open_scan(str(work), upperBound="logEndOffset", onCorruption=mode)
        table = scan.to_table()
    except KafkaSegError as err:
        assert str(work) in str(err) or "docker-connect-status-3" in str(err), err
        return
    # Whatever was returned was really in the files: CRCs guard record bytes (offsets live outside the CRC in
    # v2 headers, so a damaged base offset can shift them: compare values with their offsets where they match).
    rows = list(zip(table.column("offset").to_pylist(), table.column("value").to_pylist()))
    values = {v for _, v in genuine}
    assert all(v in values for _, v in rows)
