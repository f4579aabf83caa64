"""The one output schema: Spark's Kafka source schema as Arrow, plus kafkaseg's opt-in columns.

Spark's Kafka source (``KafkaRecordToRowConverter.scala``): key binary, value binary, topic string, partition int,
offset long, timestamp timestamp, timestampType int, and ``headers array<struct<key string, value binary>>`` only
with ``includeHeaders=true`` (null, not an empty list, for a record without headers). Timestamps are microseconds in
UTC, as Spark stores them; a magic-0 record (no timestamp) gets -1 ms and timestampType -1, as Spark shows it.
"""

from __future__ import annotations

import pyarrow as pa

__all__ = ["BASE_FIELDS", "HEADERS_FIELD", "HEADERS_TYPE", "METADATA_FIELDS", "COLUMN_NAMES", "arrow_schema"]

HEADERS_TYPE = pa.list_(pa.struct([pa.field("key", pa.string()), pa.field("value", pa.binary())]))

BASE_FIELDS = (
    pa.field("key", pa.binary()),
    pa.field("value", pa.binary()),
    pa.field("topic", pa.string()),
    pa.field("partition", pa.int32()),
    pa.field("offset", pa.int64()),
    pa.field("timestamp", pa.timestamp("us", tz="UTC")),
    pa.field("timestampType", pa.int32()),
)
HEADERS_FIELD = pa.field("headers", HEADERS_TYPE)

# Opt-in with includeMetadata=true: where each record came from and what its batch said.
METADATA_FIELDS = (
    pa.field("leaderEpoch", pa.int32()),  # partitionLeaderEpoch of the batch (-1 for legacy)
    pa.field("producerId", pa.int64()),  # -1 when none
    pa.field("producerEpoch", pa.int16()),
    pa.field("sequence", pa.int32()),  # baseSequence + offsetDelta (wrapping), -1 when none
    pa.field("isTransactional", pa.bool_()),
    pa.field("isControl", pa.bool_()),
    pa.field("magic", pa.int8()),
    pa.field("compression", pa.string()),  # none | gzip | snappy | lz4 | zstd
    pa.field("batchOffset", pa.int64()),  # the batch's base offset (legacy: the record's own offset... see README)
    pa.field("segment", pa.string()),  # the .log file the record was read from
    pa.field("position", pa.int64()),  # byte position of its batch in that file
)


#: Every column kafkaseg can return, in schema order (what the ``columns`` option chooses from).
COLUMN_NAMES: tuple[str, ...] = tuple(f.name for f in (*BASE_FIELDS, HEADERS_FIELD, *METADATA_FIELDS))
_FIELDS = {f.name: f for f in (*BASE_FIELDS, HEADERS_FIELD, *METADATA_FIELDS)}


def arrow_schema(include_headers: bool = False, include_metadata: bool = False,
                 columns: tuple[str, ...] | None = None, timestamp_unit: str = "us") -> pa.Schema:
    """The Arrow schema of kafkaseg's output for the given options: ``columns`` (the ``columns`` option, names
    from :data:`COLUMN_NAMES`) is the projection, in its order; without it, every base column, then headers and
    metadata when asked for. ``timestamp_unit="ms"`` (the ``timestampUnit`` option) makes ``timestamp`` a
    ``timestamp[ms]``: Kafka's values as they are, beyond microseconds' range too."""
    if columns is not None:
        fields = [_FIELDS[name] for name in columns]
    else:
        fields = list(BASE_FIELDS)
        if include_headers:
            fields.append(HEADERS_FIELD)
        if include_metadata:
            fields.extend(METADATA_FIELDS)
    if timestamp_unit == "ms":
        fields = [pa.field("timestamp", pa.timestamp("ms", tz="UTC")) if f.name == "timestamp" else f
                  for f in fields]
    return pa.schema(fields)

