"""The one test and wording of an offset in a file's name past a Java long (where Kafka's ``Long.parseLong`` of the
name fails), below both :mod:`kafkaseg.storage.layout` (which re-exports them) and :mod:`kafkaseg.storage.tiered`
(which layout imports): a log dir's segments and a tiered-storage copy's are refused alike."""

from __future__ import annotations

LONG_MAX = 2**63 - 1


def offset_past_a_long(digits: str) -> bool:
    """Whether the offset ``digits`` (the digits a segment file's name starts with) is past a Java long's largest
    value, where Kafka's ``Long.parseLong`` of the name fails: a broker's ``LogLoader`` fails the log, and
    ``kafka-dump-log.sh`` (``toLong``) the file. The one test of discovery's listing, a ``.log`` given as a path,
    ``dump`` and a tiered-storage copy's name; said in :func:`past_a_long_words`."""
    return int(digits) > LONG_MAX


def past_a_long_words(digits: str, what: str = "base offset") -> str:
    """What the error says of a file whose name's ``what`` (its ``digits``) does not fit in a long
    (:func:`offset_past_a_long`; a KRaft snapshot's end offset too, ``layout.kraft_snapshot_id``)."""
    return f"{what} {digits} in the file name does not fit in a 64-bit long"
