"""Spark's pushed-down filters -> :class:`~kafkaseg.planning.Predicates`, and which filters the scan applies exactly.

PySpark (4.1+) hands a Python data source the conjuncts of a query's WHERE clause as
``pyspark.sql.datasource.Filter`` objects (``EqualTo(("offset",), 5)``, ``In(("partition",), (1, 2))``, ...), each
one column against literals, possibly under ``Not``: PySpark (4.1.4, 4.3.0) has no ``Or``/``And`` filter, so a
disjunction never arrives and Spark applies it after an unpruned scan.
:func:`translate_filters` turns the ones kafkaseg understands into one :class:`Predicates` (the AND of them) and
sorts every filter into:

* ``handled``: applied exactly by the scan, so Spark need not re-check rows. ``offset`` (=, <=>, <, <=, >, >=, IN,
  ``<>``, IS [NOT] NULL; BETWEEN arrives as >= and <=) becomes ``offset_ranges``: planning reads only the batches that
  can hold those offsets and the decoder keeps only records inside each slice's ``[start_offset, end_offset)``
  (ranges whose batches meet, as ``<>`` and IN make them, are one slice leaving the offsets between them out:
  ``SegmentSlice.offset_gaps``, so their shared batch is read once). ``NOT offset IN (...)`` is left to Spark.
  ``partition`` and ``topic`` (=, <=>, IN, IS NOT NULL; NOT =, NOT IN, and for ``topic`` LIKE ``'x%'``, ``'%x'``,
  ``'%x%'``, which arrive as ``StringStartsWith``/``StringEndsWith``/``StringContains``) become ``partitions``/
  ``topics``, ``excluded_partitions``/``excluded_topics`` and ``topic_patterns``: planning drops the other
  partitions entirely. These three columns are never null, so IS NOT NULL is always true and IS NULL always false.
* ``remaining``: returned to Spark, which evaluates them after the scan. This includes every ``timestamp`` filter:
  its bounds go into ``timestamp_range``, which only prunes segments and the head of a segment (via ``.timeindex``)
  and never drops individual records, so Spark must still apply it. Bounds are widened to whole milliseconds
  (records carry millisecond timestamps; Spark filters on microseconds), so pruning can never lose a row.

Only literal values of the column's own type are used (``int`` for offset/partition, ``str`` for topic,
timezone-aware ``datetime`` for timestamp); anything else is left to Spark.
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

from pyspark.sql.datasource import (
    EqualNullSafe,
    EqualTo,
    Filter,
    GreaterThan,
    GreaterThanOrEqual,
    In,
    IsNotNull,
    IsNull,
    LessThan,
    LessThanOrEqual,
    Not,
    StringContains,
    StringEndsWith,
    StringStartsWith,
)

from kafkaseg.planning import Predicates

__all__ = ["PushdownResult", "translate_filters", "OFFSET_MIN", "OFFSET_END"]

OFFSET_MIN = -(1 << 63)  # smallest int64: "no lower bound" for an offset range
OFFSET_END = 1 << 63  # one past the largest int64: "no upper bound" (ranges are half-open)

_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)
_ONE_US = _dt.timedelta(microseconds=1)

Ranges = list[tuple[int, int]]  # sorted, disjoint, half-open [lo, hi)


@dataclass
class PushdownResult:
    """The outcome of :func:`translate_filters`.

    ``predicates`` is None when no filter narrowed anything. ``handled`` and ``remaining`` are the input filter
    objects themselves (PySpark matches them by identity); ``pruning_only`` lists the ``remaining`` filters that
    still narrowed planning (timestamp bounds).
    """

    predicates: Predicates | None
    handled: list[Filter] = field(default_factory=list)
    remaining: list[Filter] = field(default_factory=list)
    pruning_only: list[Filter] = field(default_factory=list)

    def describe(self) -> dict[str, list[str]]:
        """Readable lists of the filters, for logs and plan reports."""
        return {"handled": [_show(f) for f in self.handled], "pruning_only": [_show(f) for f in self.pruning_only],
                "remaining": [_show(f) for f in self.remaining]}


def translate_filters(filters: Sequence[Filter]) -> PushdownResult:
    """Translate Spark's pushed filters (an AND) into :class:`Predicates`; see the module docstring for the rules."""
    offsets: Ranges | None = None
    partitions: set[int] | None = None
    topics: set[str] | None = None
    ts_lo: int | None = None
    ts_hi: int | None = None
    excluded_partitions: set[int] = set()
    excluded_topics: set[str] = set()
    patterns: list[tuple[str, str]] = []
    result = PushdownResult(None)
    for f in filters:
        column = _column(f)
        if column == "offset":
            ranges = _offset_ranges(f)
            if ranges is None:
                result.remaining.append(f)
                continue
            offsets = ranges if offsets is None else _intersect(offsets, ranges)
            result.handled.append(f)
        elif column == "topic" and _topic_pattern(f) is not None:
            patterns.append(_topic_pattern(f))
            result.handled.append(f)
        elif column in ("partition", "topic") and _excluded_set(f, int if column == "partition" else str):
            excluded = _excluded_set(f, int if column == "partition" else str)
            if column == "partition":
                excluded_partitions |= excluded
            else:
                excluded_topics |= excluded
            result.handled.append(f)
        elif column in ("partition", "topic"):
            wanted = int if column == "partition" else str
            values = _value_set(f, wanted)
            if values is None:
                result.remaining.append(f)
                continue
            if values is not _ANY:
                if column == "partition":
                    partitions = values if partitions is None else partitions & values
                else:
                    topics = values if topics is None else topics & values
            result.handled.append(f)
        elif column == "timestamp":
            result.remaining.append(f)
            bounds = _timestamp_bounds(f)
            if bounds is None:
                continue
            lo, hi = bounds
            if lo is not None:
                ts_lo = lo if ts_lo is None else max(ts_lo, lo)
            if hi is not None:
                ts_hi = hi if ts_hi is None else min(ts_hi, hi)
            result.pruning_only.append(f)
        else:
            result.remaining.append(f)
    if (offsets is None and partitions is None and topics is None and ts_lo is None and ts_hi is None
            and not excluded_partitions and not excluded_topics and not patterns):
        return result
    result.predicates = Predicates(
        topics=None if topics is None else frozenset(topics),
        partitions=None if partitions is None else frozenset(partitions),
        offset_ranges=None if offsets is None else tuple(offsets),
        timestamp_range=None if ts_lo is None and ts_hi is None else (ts_lo, ts_hi),
        excluded_topics=frozenset(excluded_topics),
        excluded_partitions=frozenset(excluded_partitions),
        topic_patterns=tuple(patterns),
    )
    return result


# ----------------------------------------------------------------------------------------------------------------
_ANY = frozenset({"<any>"})  # sentinel: the filter holds for every row (IS NOT NULL on a never-null column)


def _column(f: Filter) -> str | None:
    target = f.child if isinstance(f, Not) else f
    attribute = getattr(target, "attribute", None)
    if isinstance(attribute, tuple) and len(attribute) == 1 and isinstance(attribute[0], str):
        return attribute[0]
    return None


def _is(value: Any, kind: type) -> bool:
    return isinstance(value, kind) and not isinstance(value, bool)


def _offset_ranges(f: Filter) -> Ranges | None:
    """The offsets ``f`` keeps as half-open ranges, or None when ``f`` is not translated exactly."""
    if isinstance(f, IsNotNull):
        return [(OFFSET_MIN, OFFSET_END)]
    if isinstance(f, IsNull):
        return []
    if isinstance(f, Not):
        child = f.child
        if isinstance(child, EqualTo) and _is(child.value, int):
            return _intersect([(OFFSET_MIN, OFFSET_END)], _complement([(child.value, child.value + 1)]))
        if isinstance(child, IsNull):
            return [(OFFSET_MIN, OFFSET_END)]
        return None
    value = getattr(f, "value", None)
    if isinstance(f, In):
        values = [v for v in value if v is not None]  # `x IN (1, NULL)` is never true through the NULL
        if not all(_is(v, int) for v in values):
            return None
        return _union([(v, v + 1) for v in values])
    if isinstance(f, EqualNullSafe) and value is None:
        return []  # offset is never null
    if not _is(value, int):
        return None
    if isinstance(f, (EqualTo, EqualNullSafe)):
        ranges = [(value, value + 1)]
    elif isinstance(f, GreaterThan):
        ranges = [(value + 1, OFFSET_END)]
    elif isinstance(f, GreaterThanOrEqual):
        ranges = [(value, OFFSET_END)]
    elif isinstance(f, LessThan):
        ranges = [(OFFSET_MIN, value)]
    elif isinstance(f, LessThanOrEqual):
        ranges = [(OFFSET_MIN, value + 1)]
    else:
        return None
    return _intersect([(OFFSET_MIN, OFFSET_END)], ranges)


def _value_set(f: Filter, kind: type) -> frozenset | None:
    """The values of a never-null column that ``f`` keeps (``_ANY`` for all), or None when not translated."""
    if isinstance(f, IsNotNull):
        return _ANY
    if isinstance(f, IsNull):
        return frozenset()
    if isinstance(f, In):
        values = [v for v in f.value if v is not None]
        return frozenset(values) if all(_is(v, kind) for v in values) else None
    if isinstance(f, EqualNullSafe) and f.value is None:
        return frozenset()
    if isinstance(f, (EqualTo, EqualNullSafe)) and _is(f.value, kind):
        return frozenset({f.value})
    return None


def _excluded_set(f: Filter, kind: type) -> frozenset | None:
    """The values ``NOT (col = v)``, ``NOT (col <=> v)`` or ``NOT (col IN (...))`` leaves out of a never-null
    column, or None when ``f`` is none of them (NOT IN with a NULL is never true: left to Spark)."""
    if not isinstance(f, Not):
        return None
    child = f.child
    if isinstance(child, In):
        values = list(child.value)
        return frozenset(values) if values and all(_is(v, kind) for v in values) else None
    if isinstance(child, (EqualTo, EqualNullSafe)) and _is(child.value, kind):
        return frozenset({child.value})
    return None


def _topic_pattern(f: Filter) -> tuple[str, str] | None:
    """``topic LIKE 'x%'`` (``StringStartsWith``), ``'%x'`` and ``'%x%'`` as a :attr:`Predicates.topic_patterns`
    entry, or None."""
    kinds = {StringStartsWith: "startswith", StringEndsWith: "endswith", StringContains: "contains"}
    kind = kinds.get(type(f))
    return (kind, f.value) if kind is not None and isinstance(f.value, str) else None


def _micros(value: Any) -> int | None:
    if isinstance(value, _dt.datetime) and value.tzinfo is not None and value.utcoffset() is not None:
        return (value - _EPOCH) // _ONE_US
    return None  # a naive datetime's zone is unknown here: never guess when the result prunes data


def _timestamp_bounds(f: Filter) -> tuple[int | None, int | None] | None:
    """Millisecond bounds ``(lo inclusive, hi exclusive)`` that contain every record ``f`` keeps, or None."""
    if isinstance(f, In):
        micros = [_micros(v) for v in f.value if v is not None]
        if not micros or any(m is None for m in micros):
            return None
        return min(micros) // 1000, max(micros) // 1000 + 1
    if not isinstance(f, (EqualTo, EqualNullSafe, GreaterThan, GreaterThanOrEqual, LessThan, LessThanOrEqual)):
        return None
    us = _micros(f.value)
    if us is None:
        return None
    # A record at t ms is at t*1000 us. Floor/ceil are widened to whole ms so that no kept record falls outside.
    lo = us // 1000
    hi = us // 1000 + 1
    if isinstance(f, (EqualTo, EqualNullSafe)):
        return lo, hi
    if isinstance(f, (GreaterThan, GreaterThanOrEqual)):
        return lo, None
    return None, hi


def _union(ranges: Iterable[tuple[int, int]]) -> Ranges:
    merged: list[list[int]] = []
    for lo, hi in sorted(r for r in ranges if r[0] < r[1]):
        if merged and lo <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], hi)
        else:
            merged.append([lo, hi])
    return [(lo, hi) for lo, hi in merged]


def _intersect(a: Ranges, b: Ranges) -> Ranges:
    out = []
    for alo, ahi in a:
        for blo, bhi in b:
            lo, hi = max(alo, blo), min(ahi, bhi)
            if lo < hi:
                out.append((lo, hi))
    return _union(out)


def _complement(ranges: Ranges) -> Ranges:
    out, cursor = [], OFFSET_MIN
    for lo, hi in _union(ranges):
        if cursor < lo:
            out.append((cursor, lo))
        cursor = max(cursor, hi)
    if cursor < OFFSET_END:
        out.append((cursor, OFFSET_END))
    return out


def _literal(value: Any) -> str:
    """A filter's value as logs show it: timestamps in ISO 8601, anything else as its ``repr``."""
    return value.isoformat() if isinstance(value, (_dt.datetime, _dt.date)) else repr(value)


def _show(f: Filter) -> str:
    if isinstance(f, Not):
        return f"NOT ({_show(f.child)})"
    name = ".".join(getattr(f, "attribute", ()) or ("?",))
    ops = {EqualTo: "=", EqualNullSafe: "<=>", GreaterThan: ">", GreaterThanOrEqual: ">=", LessThan: "<",
           LessThanOrEqual: "<="}
    if type(f) in ops:
        return f"{name} {ops[type(f)]} {_literal(f.value)}"
    if isinstance(f, In):
        return f"{name} IN ({', '.join(_literal(v) for v in f.value)})"
    pattern = _topic_pattern(f)
    if pattern is not None:
        return f"{name} {pattern[0].upper()} {pattern[1]!r}"
    if isinstance(f, IsNull):
        return f"{name} IS NULL"
    if isinstance(f, IsNotNull):
        return f"{name} IS NOT NULL"
    return repr(f)
