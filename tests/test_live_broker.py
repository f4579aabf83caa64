"""Reads of log dirs a broker writes while they run: transactions, preallocated segments, follower truncation,
retention, compaction, JBOD.

tests/live_broker.py is the broker (a separate process writing files as Kafka does) and the judge: every read is
checked against the finished run (see its docstrings). Longer runs by hand:
``PYTHONPATH=. python tests/live_broker.py /tmp/run SECONDS SEED check [--hook] [--retention] [--compact]``.
"""

from __future__ import annotations

import pytest

from tests.live_broker import run_live


@pytest.mark.slow
def test_reads_of_a_live_broker_with_transactions_truncation_preallocation_retention_compaction_and_two_log_dirs(
        tmp_path):
    """For ~17 s, over and over: read_arrow (read_uncommitted, read_committed, to the log end), iter_batches
    (read_committed), a read_committed follow, and the CLI (verify, describe, offsets and consume read_committed,
    consume to the log end), while the broker also deletes old segments (retention, DeleteRecords) and compacts
    (the cleaner's .cleaned/.swap/.deleted renames). Every record as written at its offset; below the high
    watermark only the generation the log kept (none that a later truncation replaced); read_committed never an
    aborted record nor one of a transaction whose marker was not yet being written; no offset skipped or repeated
    but what retention or the cleaner removed before the read ended (and none removed before it began); no error;
    final reads reach the log end (the last stable offset for read_committed). Reads past the high watermark,
    which a truncation can overtake: no error, each record as some generation wrote it, offsets increasing, none
    skipped but a marker's or a removed one, and every offset up to the log end when the read began (or the
    target of a truncation during it). Each ``consume --to-log-end`` has the broker truncate the partition it is
    reading in the middle of its read (a hook), so that case is exercised every run. verify and describe exit 0:
    a truncation past the high watermark under their walk, the index entries it leaves, an append begun while they
    look are no damage (tests/test_tools_rewritten_tail.py)."""
    problems, stats = run_live(tmp_path / "run", 17, 11, tools=True, hook=True,
                               options=("--retention", "--compact"))
    assert not problems, "\n".join(problems[:30])
    # the run did what it is for (or it proves nothing)
    assert stats["reads"] >= 20 and stats["cli runs"] >= 3 and stats["followed"] > 1000, stats
    assert all(n >= 1 for n in stats["tool runs"].values()), stats
    assert stats["truncations"] >= 3 and stats["hooked truncations"] >= 1, stats
    assert all(n > 0 for n in stats["aborted"].values()), stats
    assert stats["segments"][3] >= 3, stats  # (the others lose theirs to retention and the cleaner)
    assert all(stats["removed"][p] > 0 for p in (0, 1, 2)), stats
