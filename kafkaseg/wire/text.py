"""Header keys as Kafka's Java clients (and so Spark) read them, and Kafka's millisecond timestamps as text.

A record header key is a ``String`` in the Java client: ``Utils.utf8(buffer, length)`` is
``new String(bytes, StandardCharsets.UTF_8)`` (``clients/.../common/utils/Utils.java``, used by
``DefaultRecord.readHeaders``), which never fails: each malformed sequence becomes U+FFFD. Producers in other
languages can write any bytes there, so a reader that refused them would lose records Spark returns.

Python's ``"replace"`` handler agrees with Java's decoder except on encoded surrogates (``ED A0..BF ..``): Java takes
``ED`` with its continuation bytes as one malformed sequence (one U+FFFD for up to three bytes), Python replaces each
byte. :func:`java_utf8` handles that case and otherwise defers to ``"replace"`` (checked against Java 17 in
``tests/test_wire_text.py``).
"""

from __future__ import annotations

import codecs

__all__ = ["java_utf8", "utc_ms_text"]

_HANDLER = "kafkaseg-java-utf8"


def _java_replace(exc: UnicodeDecodeError) -> tuple[str, int]:
    data, i = exc.object, exc.start
    if data[i] == 0xED and i + 1 < len(data) and 0xA0 <= data[i + 1] <= 0xBF:  # a surrogate's UTF-8 form
        return "\ufffd", i + 3 if i + 2 < len(data) and 0x80 <= data[i + 2] <= 0xBF else i + 2
    return "\ufffd", exc.end


codecs.register_error(_HANDLER, _java_replace)


def java_utf8(data: bytes) -> str:
    """``data`` decoded as UTF-8 the way ``new String(data, UTF_8)`` does in Java: U+FFFD for malformed input."""
    return data.decode("utf-8", _HANDLER)


def utc_ms_text(ms: int) -> str | None:
    """A Kafka timestamp (milliseconds since the epoch) as ISO-8601 UTC to the millisecond,
    ``2025-11-23T09:01:10.474Z``; None when no date has it (beyond year 9999, or before year 1: a damaged field)."""
    from datetime import datetime, timezone

    try:
        return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).isoformat(timespec="milliseconds").replace(
            "+00:00", "Z")
    except (OverflowError, OSError, ValueError):
        return None
