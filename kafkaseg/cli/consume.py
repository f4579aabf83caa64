"""``kafkaseg consume``: ``kafka-console-consumer.sh`` over log dirs instead of a broker.

The options and the output are the console consumer's (``ConsoleConsumerOptions.java``,
``DefaultMessageFormatter.java`` in apache/kafka ``tools/src/main/java/org/apache/kafka/tools/consumer``), with
``--data-dir`` in place of ``--bootstrap-server``:

* ``--topic T`` or ``--include REGEX`` (a regex matched against whole topic names, internal topics left out, as
  the consumer's pattern subscription does; Kafka 3.x's ``--whitelist`` when there is no ``--include``);
  ``--partition P`` with ``--offset earliest|latest|N``; otherwise
  ``--from-beginning`` or, by default, latest. A subscription (no ``--partition``) starts where the consumer
  properties' ``auto.offset.reset`` says when it is set (``none`` is an error: no committed offsets are read
  here); the console consumer's checks are usage errors in its words (``--from-beginning`` with another
  reset, ``--group`` with ``--partition``, group ids that disagree). Without ``--follow`` a read stops at the
  high watermark, as a consumer's fetch does, and says on stderr which partitions hold records past it, and which
  have a high watermark above their log end (the read's note)
  (``--to-log-end`` reads to the end of what is on disk; under read_committed both end at the last stable offset);
  the console consumer waits for more. With it, new records are printed as a live broker's high watermark
  moves on (:class:`kafkaseg.streaming.MicroBatchPlanner`, polled every ``--poll-ms``, or twice as long as a poll
  takes when that is longer: a poll lists every partition folder), until ``--max-messages``,
  ``--timeout-ms`` without a new record, or Ctrl-C.
* Each record is printed by the default formatter's ``--property`` settings: ``print.timestamp``
  (``CreateTime:<ms>``, ``LogAppendTime:<ms>``, ``NO_TIMESTAMP``), ``print.partition`` (``Partition:<n>``),
  ``print.offset`` (``Offset:<n>``), ``print.epoch`` (``Epoch:<n>`` or ``NOT_PRESENT``), ``print.delivery``
  (always ``Delivery:NOT_PRESENT``: no share group here), ``print.headers`` (``k:v`` joined by
  ``headers.separator``, or ``NO_HEADERS``), ``print.key``, ``print.value``, separated by ``key.separator``
  (tab) and ended by ``line.separator`` (newline); ``null.literal`` for a null key, value or header value. Bytes
  are written as they are (the formatter's default); ``key.deserializer``/``value.deserializer``/
  ``headers.deserializer`` (and ``--key-deserializer``/``--value-deserializer``) take Kafka's built-in String,
  Integer, Long, Short, Float, Double and UUID deserializers (by class name, with or without the package), printed
  as Java 19+ prints them. A null is printed as the null literal whatever the deserializer (the console consumer
  would run the deserializer on the literal's bytes). Only printed fields are deserialized, as in Kafka.
* ``print.epoch`` prints the batch's real leader epoch (Kafka's console consumer rebuilds each record without it
  and always prints ``Epoch:NOT_PRESENT``).
* A record a deserializer cannot read ends the run after the records before it (exit status 2, kafkaseg's status
  for read errors, where Kafka exits 1); ``--skip-message-on-error`` skips such records with a line on stderr, as
  Kafka does, and also skips corrupt batches (counted on stderr). A corrupt batch otherwise ends the run after the
  records before it, its error noting that flag (the read option it sets, onCorruption=skip, is what read errors
  name). An ``--offset`` outside what the partition holds resets as the console consumer's consumer does
  (``auto.offset.reset``, latest unless set; ``none`` fails), with a line on stderr.
* Records lost to the reader (deleted under ``--follow`` before they were read, an ``--offset`` below the log
  start), offsets an active segment lost below the recovery point with no high watermark (read past as data loss,
  or with ``--skip-message-on-error`` skipped as a corrupt batch), and offsets a high watermark and a recovery
  point above the log end say were acknowledged and flushed but are not in the files (the micro-batch that reads
  to the log end says them, as a batch read to latest does; a run standing there, from latest, says them as a batch
  read from there does; ``--to-log-end`` too), are said on stderr; the exit status is 0, as the console
  consumer's, unless ``--fail-on-data-loss`` (then 3, after printing what there is). Offsets missing between two
  segments are said too but never count: a compacted topic's follower (or a leader whose cleaner has not
  checkpointed) holds such gaps, and the files cannot tell them from a lost segment file.
* Records are printed partition by partition (topic, then partition number, in offset order), where a consumer
  interleaves partitions as its fetches return. ``Processed a total of N messages`` goes to stderr at the end.
  When stdout's reader goes away (``| head``) the run ends there, as the console consumer's ``checkErr`` ends it
  (its words on stderr, exit status 0), and N counts the records written whole: records are written unbuffered, a
  batch at a time, so that what reached the reader is known.
"""

from __future__ import annotations

import dataclasses
import math
import re
import struct
import sys
import time
import uuid
from dataclasses import dataclass
from typing import BinaryIO, Callable

from kafkaseg.decode.api import Problem
from kafkaseg.errors import (BadPathError, CorruptDataError, DeserializationError, InvalidOptionError, KafkaSegError,
                             did_you_mean)
from kafkaseg.schema import COLUMN_NAMES
from kafkaseg.storage.checkpoints import parse_java_integer
from kafkaseg.storage.fs import redact

__all__ = ["run", "Formatter", "parse_properties", "java_float_text", "DEFAULT_FORMATTERS"]

#: The formatter ``--formatter`` may name: the default one (the others are Kafka's internal-topic decoders, which
#: ``kafkaseg dump`` has as ``--offsets-decoder`` and friends).
DEFAULT_FORMATTERS = ("org.apache.kafka.tools.consumer.DefaultMessageFormatter", "kafka.tools.DefaultMessageFormatter",
                      "DefaultMessageFormatter")

_SERIALIZATION = "org.apache.kafka.common.serialization."


def _fixed(name: str, size: int, fmt: str) -> Callable[[bytes], bytes]:
    def deserialize(data: bytes) -> bytes:
        if len(data) != size:  # Kafka: SerializationException("Size of data received by ... is not N")
            raise DeserializationError(f"Size of data received by {name} is not {size} ({len(data)} bytes)")
        value = struct.unpack(fmt, data)[0]
        if isinstance(value, float):
            return java_float_text(value, single=(size == 4)).encode()
        return str(value).encode()
    return deserialize


def java_float_text(value: float, *, single: bool = False) -> str:
    """``Double.toString``/``Float.toString`` as Java 19+ prints them: the shortest digits that read back as the
    same double (float), plain between 10^-3 and 10^7, else ``d.dddE<n>`` (Java 17 and older sometimes print one
    more digit)."""
    if value != value:
        return "NaN"
    if value in (float("inf"), float("-inf")):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    import numpy as np

    number = np.float32(value) if single else np.float64(value)
    text = np.format_float_scientific(number, unique=True, trim="0")
    if len(text.partition("e")[0].lstrip("-").replace(".", "").rstrip("0")) == 1:
        # Java: a one-digit shortest form gives way to the closest two-digit decimal that reads back the same
        # (Double.MIN_VALUE is 4.9E-324, not 5.0E-324)
        closest = np.format_float_scientific(number, precision=1, unique=False)
        if type(number)(closest) == number:
            text = closest
    mantissa, _, exponent = text.partition("e")
    sign = "-" if mantissa.startswith("-") else ""
    digits = mantissa.lstrip("-").replace(".", "").rstrip("0") or "0"
    power = int(exponent)
    if 1e-3 <= abs(value) < 1e7:
        if power >= 0:
            whole, frac = digits[:power + 1].ljust(power + 1, "0"), digits[power + 1:]
        else:
            whole, frac = "0", "0" * (-power - 1) + digits
        return f"{sign}{whole}.{frac or '0'}"
    return f"{sign}{digits[0]}.{digits[1:] or '0'}E{power}"


def _string(data: bytes) -> bytes:
    from kafkaseg.wire.text import java_utf8

    return java_utf8(data).encode()


def _uuid(data: bytes) -> bytes:
    """``UUID.fromString`` (Java 17): five '-'-separated hex groups, each masked to its field's width."""
    text = data.decode("utf-8", errors="replace")
    groups = text.split("-")
    if len(text) > 36 or len(groups) != 5 or not all(re.fullmatch(r"[0-9a-fA-F]{1,16}", g) for g in groups):
        raise DeserializationError(f"Error parsing UUID string: {text[:40]!r}")
    a, b, c, d, e = (int(g, 16) for g in groups)
    value = ((a & 0xFFFFFFFF) << 96 | (b & 0xFFFF) << 80 | (c & 0xFFFF) << 64 | (d & 0xFFFF) << 48
             | (e & 0xFFFFFFFFFFFF))
    return str(uuid.UUID(int=value)).encode()


_DESERIALIZERS: dict[str, Callable[[bytes], bytes]] = {
    "StringDeserializer": _string,
    "IntegerDeserializer": _fixed("IntegerDeserializer", 4, ">i"),
    "LongDeserializer": _fixed("LongDeserializer", 8, ">q"),
    "ShortDeserializer": _fixed("ShortDeserializer", 2, ">h"),
    "FloatDeserializer": _fixed("FloatDeserializer", 4, ">f"),
    "DoubleDeserializer": _fixed("DoubleDeserializer", 8, ">d"),
    "UUIDDeserializer": _uuid,
    "ByteArrayDeserializer": bytes,  # printed as the bytes (Java would print the array's identity, [B@1b6d3586)
}


def _deserializer(name: str) -> Callable[[bytes], bytes]:
    short = name[len(_SERIALIZATION):] if name.startswith(_SERIALIZATION) else name
    if short not in _DESERIALIZERS:
        raise InvalidOptionError(f"deserializer {name!r} is not available here; known: "
                                 f"{', '.join(sorted(_DESERIALIZERS))} (org.apache.kafka.common.serialization.*)")
    return _DESERIALIZERS[short]


_BOOLEAN_PROPERTIES = ("print.timestamp", "print.key", "print.offset", "print.delivery", "print.epoch",
                       "print.partition", "print.headers", "print.value")
_TEXT_PROPERTIES = ("key.separator", "line.separator", "headers.separator", "null.literal")
_DESERIALIZER_PROPERTIES = ("key.deserializer", "value.deserializer", "headers.deserializer")


def parse_properties(items: list[str]) -> dict[str, str]:
    """``k=v`` items as Kafka's ``CommandLineUtils.parseKeyValueArgs`` reads them: split at the first ``=``, a
    key without ``=`` (or with nothing after it) gets the empty value."""
    out: dict[str, str] = {}
    for item in items:
        key, _, value = item.partition("=")
        out[key] = value
    return out


def read_properties_file(path: str) -> dict[str, str]:
    """A Java ``.properties`` file as ``Utils.loadProps`` reads it (``java.util.Properties.load``): ISO-8859-1,
    ``#``/``!`` comment lines, a line ending in an odd number of backslashes continued on the next, the key ended by
    the first unescaped ``=``, ``:`` or blank, escapes ``\\t \\n \\r \\f \\uXXXX`` (any other ``\\c`` is ``c``)
    in keys and values, and a value's trailing blanks kept."""
    try:
        with open(path, "rb") as handle:
            text = handle.read().decode("latin-1")
    except OSError as exc:
        raise InvalidOptionError(f"cannot read {path}: {exc.strerror or exc}") from None
    out: dict[str, str] = {}
    lines = re.split(r"\r\n|\r|\n", text)
    i = 0
    while i < len(lines):
        line = lines[i].lstrip(" \t\f")
        i += 1
        if not line or line[0] in "#!":
            continue
        while len(line) - len(line.rstrip("\\")) & 1 and i <= len(lines):  # continued on the next line
            following = lines[i].lstrip(" \t\f") if i < len(lines) else ""
            line = line[:-1] + following
            i += 1
            if line == following and following[:1] in ("#", "!"):  # nothing before it: a comment line after all
                line = ""
                break
        if not line:
            continue
        key_end = 0
        while key_end < len(line) and line[key_end] not in "=: \t\f":
            key_end += 2 if line[key_end] == "\\" else 1
        key_end = min(key_end, len(line))
        rest = line[key_end:].lstrip(" \t\f")
        if rest[:1] in ("=", ":"):
            rest = rest[1:].lstrip(" \t\f")
        out[_java_unescape(line[:key_end])] = _java_unescape(rest)
    return out


def _java_unescape(text: str) -> str:
    escapes = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}

    def one(match: re.Match) -> str:
        code = match.group(1)
        if code.startswith("u"):  # exactly four hex digits, as Properties.load requires
            if re.fullmatch(r"u[0-9A-Fa-f]{4}", code) is None:
                raise InvalidOptionError(f"Malformed \\uxxxx encoding in {text!r}")
            return chr(int(code[1:], 16))
        return escapes.get(code, code)

    unescaped = re.sub(r"\\(u.{0,4}|.)", one, text)
    # \uD83D\uDE00 is one character in Java's UTF-16 strings: join such pairs; a lone surrogate becomes '?', as
    # Java's String.getBytes writes it
    paired = re.sub("[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]", "?", unescaped)
    return paired.encode("utf-16-le", "surrogatepass").decode("utf-16-le")


#: Formatter property names DefaultMessageFormatter reads; it ignores any other.
FORMATTER_PROPERTIES = _BOOLEAN_PROPERTIES + _TEXT_PROPERTIES + _DESERIALIZER_PROPERTIES


def _property_bytes(text: str) -> bytes:
    """``DefaultMessageFormatter.getByteProperty``: the value's UTF-8 bytes, nothing unescaped (a shell passes a
    tab as ``$'\\t'``; a properties file's own escapes were read by :func:`read_properties_file`). Bytes of an
    argument that are not UTF-8 are written as given."""
    return text.encode("utf-8", "surrogateescape")


@dataclass
class Formatter:
    """``DefaultMessageFormatter`` configured from ``--property`` values."""

    print_timestamp: bool = False
    print_key: bool = False
    print_value: bool = True
    print_partition: bool = False
    print_offset: bool = False
    print_delivery: bool = False
    print_epoch: bool = False
    print_headers: bool = False
    key_separator: bytes = b"\t"
    line_separator: bytes = b"\n"
    headers_separator: bytes = b","
    null_literal: bytes = b"null"
    key_deserializer: Callable[[bytes], bytes] | None = None
    value_deserializer: Callable[[bytes], bytes] | None = None
    headers_deserializer: Callable[[bytes], bytes] | None = None

    @classmethod
    def from_properties(cls, properties: dict[str, str]) -> "Formatter":
        formatter = cls()
        for name in _BOOLEAN_PROPERTIES:
            if name in properties:  # Kafka: trim().equalsIgnoreCase("true"); anything else is false
                setattr(formatter, name.replace(".", "_"), properties[name].strip().lower() == "true")
        for name in _TEXT_PROPERTIES:
            if name in properties:
                setattr(formatter, name.replace(".", "_"), _property_bytes(properties[name]))
        for name in _DESERIALIZER_PROPERTIES:
            if name in properties:
                setattr(formatter, name.replace(".", "_"), _deserializer(properties[name]))
        return formatter

    def fields(self) -> list[str]:
        """What each printed record shows, in the formatter's order."""
        return [name for name, on in (("timestamp", self.print_timestamp), ("partition", self.print_partition),
                                      ("offset", self.print_offset), ("delivery", self.print_delivery),
                                      ("epoch", self.print_epoch), ("headers", self.print_headers),
                                      ("key", self.print_key), ("value", self.print_value)) if on]

    def columns(self) -> list[str]:
        """The columns a read must return for this formatter (the ``columns`` read option): what it prints, and
        where each record is from (for positions and messages). Keys and values not printed are not copied."""
        needed = {"topic", "partition", "offset"}
        for name in self.fields():
            needed.update(_FIELD_COLUMNS[name])
        return [c for c in COLUMN_NAMES if c in needed]

    def write_batch(self, batch, out: BinaryIO, on_error: Callable[[int, KafkaSegError], None] | None = None
                    ) -> int:
        """Write every record of an Arrow batch (kafkaseg's schema); returns how many were written. A record a
        deserializer cannot read is passed to ``on_error`` (row, error) and left out, or, without ``on_error``,
        ends the write after the records before it, raising the error.

        Formatting runs a field at a time over the whole batch (one list of bytes per printed field), then joins
        the rows: the same bytes as formatting record by record, without a Python call per field and record."""
        fields = self.fields()
        n = batch.num_rows
        texts: list[list[bytes]] = []
        failed: dict[int, DeserializationError] = {}  # row -> the error of its first failing field
        for name in fields:
            column, errors = self._texts(name, batch)
            texts.append(column)
            for row, error in errors.items():
                failed.setdefault(row, error)
        written = 0
        start = 0
        for row in sorted(failed) + [n]:
            try:
                self._write_rows(texts, start, row, out)
            except BrokenPipeError as error:  # the rows before it were written whole or skipped
                error.rows_done = start + error.rows_written  # type: ignore[attr-defined]
                raise
            written += row - start
            if row == n:
                break
            if on_error is None:
                where = (f"offset {batch.column('offset')[row].as_py()} of {batch.column('topic')[row].as_py()}-"
                         f"{batch.column('partition')[row].as_py()}")
                error = DeserializationError(f"{failed[row]}: {where} (--skip-message-on-error skips such records)")
                error.written = written  # type: ignore[attr-defined]
                raise error from failed[row]
            on_error(row, failed[row])
            start = row + 1
        return written

    def _write_rows(self, texts: list[list[bytes]], start: int, stop: int, out: BinaryIO) -> None:
        """Rows ``[start, stop)``: key.separator between fields, line.separator after the last one printed. A
        BrokenPipeError from ``out`` saying how many bytes reached the reader (``written_bytes``, as
        :class:`WholeWrites` says it) is raised with ``rows_written``: how many of the rows were written whole."""
        if stop <= start or not texts:
            return
        line, sep = self.line_separator, self.key_separator
        try:
            if len(texts) == 1:
                out.write(line.join(texts[0][start:stop]) + line)
            else:
                out.write(b"".join(sep.join(row) + line for row in zip(*(column[start:stop] for column in texts))))
        except BrokenPipeError as error:
            left = getattr(error, "written_bytes", 0)
            whole = 0
            for row in range(start, stop):
                left -= sum(len(column[row]) for column in texts) + len(sep) * (len(texts) - 1) + len(line)
                if left < 0:
                    break
                whole += 1
            error.rows_written = whole  # type: ignore[attr-defined]
            raise

    def _texts(self, name: str, batch) -> tuple[list[bytes], dict[int, DeserializationError]]:
        """One printed field for every row of ``batch``, and the rows whose deserializer failed (their entry is
        left empty)."""
        n = batch.num_rows
        if name == "timestamp":
            kinds = batch.column("timestampType").to_pylist()
            column = batch.column("timestamp")
            per_ms = 1000 if column.type.unit == "us" else 1  # the scan reads milliseconds as they are (ms)
            stamps = column.cast("int64").to_pylist()
            return [b"CreateTime:%d" % (ts // per_ms) if kind == 0 else b"LogAppendTime:%d" % (ts // per_ms)
                    if kind == 1 else b"NO_TIMESTAMP" for kind, ts in zip(kinds, stamps)], {}
        if name == "partition":
            return [b"Partition:%d" % p for p in batch.column("partition").to_pylist()], {}
        if name == "offset":
            return [b"Offset:%d" % o for o in batch.column("offset").to_pylist()], {}
        if name == "delivery":
            return [b"Delivery:NOT_PRESENT"] * n, {}
        if name == "epoch":
            return [b"Epoch:%d" % e if e is not None and e >= 0 else b"Epoch:NOT_PRESENT"
                    for e in batch.column("leaderEpoch").to_pylist()], {}
        if name == "headers":
            return self._header_texts(batch.column("headers"))
        deserializer = self.key_deserializer if name == "key" else self.value_deserializer
        values = batch.column(name).to_pylist()
        null = self.null_literal
        if deserializer is None:
            return [null if v is None else v for v in values], {}
        return self._deserialized(values, lambda v: null if v is None else deserializer(v))

    def _header_texts(self, column) -> tuple[list[bytes], dict[int, DeserializationError]]:
        """Every row's ``k:v`` headers joined by ``headers.separator`` (``NO_HEADERS`` for none). The headers are
        turned into Python values at most :data:`_HEADER_CHUNK` at a time, not as a dict each for the whole batch
        (one record of 8 million headers took 2.9 GB): memory follows the printed text."""
        offsets = column.offsets.to_numpy()
        keys, values = column.values.field("key"), column.values.field("value")
        deserializer, null, separator = self.headers_deserializer, self.null_literal, self.headers_separator
        texts: list[bytes] = []
        errors: dict[int, DeserializationError] = {}
        loaded_from = loaded_to = 0
        key_texts: list = []
        value_texts: list = []
        nulls = column.is_null().to_pylist() if column.null_count else None  # a null slot's offsets may differ
        for row in range(len(column)):
            start, stop = int(offsets[row]), int(offsets[row + 1])
            if start == stop or (nulls is not None and nulls[row]):
                texts.append(b"NO_HEADERS")
                continue
            parts = []
            try:
                while start < stop:
                    if not loaded_from <= start < loaded_to:
                        loaded_from, loaded_to = start, min(start + _HEADER_CHUNK, len(keys))
                        key_texts = keys.slice(loaded_from, loaded_to - loaded_from).to_pylist()
                        value_texts = values.slice(loaded_from, loaded_to - loaded_from).to_pylist()
                    upto = min(stop, loaded_to)
                    parts.append(separator.join(
                        k.encode() + b":" + (null if v is None else deserializer(v) if deserializer is not None
                                             else v)
                        for k, v in zip(key_texts[start - loaded_from:upto - loaded_from],
                                        value_texts[start - loaded_from:upto - loaded_from])))
                    start = upto
            except DeserializationError as error:
                errors[row] = error
                texts.append(b"")
                continue
            texts.append(separator.join(parts))
        return texts, errors

    @staticmethod
    def _deserialized(values: list, convert: Callable) -> tuple[list[bytes], dict[int, DeserializationError]]:
        out: list[bytes] = []
        errors: dict[int, DeserializationError] = {}
        for row, value in enumerate(values):
            try:
                out.append(convert(value))
            except DeserializationError as error:
                errors[row] = error
                out.append(b"")
        return out, errors


#: How many headers :meth:`Formatter._header_texts` turns into Python values at a time.
_HEADER_CHUNK = 65536

#: The columns each printed field reads.
_FIELD_COLUMNS = {"timestamp": ("timestamp", "timestampType"), "partition": ("partition",), "offset": ("offset",),
                  "delivery": (), "epoch": ("leaderEpoch",), "headers": ("headers",), "key": ("key",),
                  "value": ("value",)}


def _consumer_property_sources(args) -> tuple[dict[str, str], dict[str, str]]:
    """--consumer.config's file and the --consumer-property values, apart (checkConsumerGroup looks at each). The
    file is read once per run and kept on ``args``: the argument checks and the run both need it, and a pipe
    (``--consumer.config <(...)``) can be read only once."""
    from_file = getattr(args, "_consumer_config_read", None)
    if from_file is None:
        config = args.consumer_config if args.consumer_config is not None else args.command_config
        from_file = read_properties_file(config) if config else {}
        args._consumer_config_read = from_file
    return from_file, parse_properties(args.consumer_property or args.command_property or [])


def consumer_properties(args) -> dict[str, str]:
    """--consumer.config's file, then --consumer-property values over it (``buildConsumerProps``)."""
    from_file, from_options = _consumer_property_sources(args)
    return {**from_file, **from_options}


def isolation_level(args, consumer: dict[str, str]) -> str:
    """--isolation-level when given, else the consumer properties' (``consumer``, :func:`consumer_properties`)
    ``isolation.level``, else read_uncommitted (``CommandLineUtils.maybeMergeOptions``: the option wins)."""
    if args.isolation_level is not None:
        return args.isolation_level
    level = consumer.get("isolation.level", "read_uncommitted").strip().lower()
    if level not in ("read_uncommitted", "read_committed"):
        raise InvalidOptionError(f"isolation.level={level!r}: expected read_uncommitted or read_committed")
    return level


def auto_offset_reset(args, consumer: dict[str, str]) -> str:
    """``auto.offset.reset`` as the console consumer's consumer gets it (``setAutoOffsetResetValue``): the consumer
    properties' value (checked as ``ConsumerConfig`` checks it: trimmed, one of latest, earliest, none), else
    earliest with --from-beginning, else latest. Where it applies: where a subscription (--topic without
    --partition, --include) starts, since the console consumer's fresh group has no committed offset, and the
    reset of an --offset outside the partition."""
    if "auto.offset.reset" not in consumer:
        return "earliest" if args.from_beginning else "latest"
    value = consumer["auto.offset.reset"].strip()
    if value not in ("latest", "earliest", "none"):
        raise InvalidOptionError(f"Invalid value {value} for configuration auto.offset.reset: String must be one of: "
                                 "latest, earliest, none")
    return value


def included_topics(args) -> str | None:
    """The --include regex, else --whitelist's (Kafka 3.x's name for it, ignored when --include is given)."""
    return args.include if args.include is not None else args.whitelist


def _stream_options(args, consumer: dict[str, str]) -> dict:
    options: dict = {"paths": list(args.data_dir), "kafka.isolation.level": isolation_level(args, consumer),
                     "failOnDataLoss": "false"}  # a consumer resets instead of failing
    if getattr(args, "to_log_end", False):
        options["upperBound"] = "logEndOffset"
    include = included_topics(args)
    if include is not None:
        try:
            re.compile(include)
        except re.error as err:
            raise InvalidOptionError(f"--include: invalid regex {include!r}: {err}") from None
        # whole names, as Pattern.matcher(topic).matches(); leading inline flags like (?i) stay in front
        flags = re.match(r"(?:\(\?[aiLmsux]+\))*", include).group(0)
        close = "\n)$" if "x" in flags else ")$"  # in verbose mode a trailing comment would swallow the ")$"
        options["subscribePattern"] = f"{flags}^(?:{include[len(flags):]}{close}"
    elif args.partition is not None:
        options["assign"] = {args.topic: [args.partition]}
    else:
        options["subscribe"] = args.topic
    # ConsoleConsumerOptions.parseOffset: --offset, else --from-beginning, else latest; a subscription starts where
    # auto.offset.reset says (none: refused in run(), where the partitions are known)
    reset = auto_offset_reset(args, consumer)
    if args.partition is None:
        offset = reset if reset != "none" else "latest"
    else:
        offset = (args.offset or ("earliest" if args.from_beginning else "latest")).lower()
    if offset in ("earliest", "latest"):
        options["startingOffsets"] = offset
    else:
        options["startingOffsets"] = {args.topic: {str(args.partition): int(offset)}}
    if args.skip_message_on_error:
        options["onCorruption"] = "skip"
    options["timestampUnit"] = "ms"  # Kafka's values as the console consumer prints them, beyond +-9.2e15 too
    return options


_LEGAL_TOPIC = re.compile(r"[a-zA-Z0-9._-]{1,249}")  # org.apache.kafka.common.internals.Topic.validate


def check_args(args) -> str | None:
    """ConsoleConsumerOptions.checkRequiredArgs: the usage error, if any."""
    if not args.data_dir:
        return "Missing required argument \"[data-dir]\""
    if (args.topic is None) == (included_topics(args) is None):
        return "Exactly one of --include/--topic is required." + (
            " --whitelist is DEPRECATED use --include instead; ignored if --include specified."
            if args.whitelist is not None else "")
    if args.topic is not None and (not _LEGAL_TOPIC.fullmatch(args.topic) or args.topic in (".", "..")):
        # the console consumer subscribes to exactly this name, which Kafka refuses (Topic.validate); a comma
        # list is not two topics there (--include takes a regex)
        return (f"Topic name \"{args.topic}\" is illegal, it contains a character other than ASCII alphanumerics, "
                "'.', '_' and '-' (one topic per --topic; --include takes a regex)"
                if args.topic not in ("", ".", "..") and len(args.topic) <= 249 else
                f"Topic name \"{args.topic}\" is illegal (empty, '.', '..' or longer than 249 characters)")
    if args.partition is not None:
        if args.topic is None:
            return "The topic is required when partition is specified."
        if args.from_beginning and args.offset is not None:
            return "Options from-beginning and offset cannot be specified together."
    elif args.offset is not None:
        return "The partition is required when offset is specified."
    # Kafka 4.2's names (KIP-1147) with the old ones they replace: its usage errors
    if args.consumer_property is not None and args.command_property is not None:
        return "Options --consumer-property and --command-property cannot be specified together."
    if args.consumer_config is not None and args.command_config is not None:
        return "Options --consumer.config and --command-config cannot be specified together."
    problem = _check_consumer_properties(args)
    if problem:
        return problem
    if args.offset is not None and args.offset.lower() not in ("earliest", "latest"):
        if not re.fullmatch(r"\d+", args.offset) or parse_java_integer(args.offset) is None:
            return (f"The provided offset value '{args.offset}' is incorrect. Valid values are 'earliest', 'latest', "
                    "or a non-negative long.")
    if args.property is not None and args.formatter_property is not None:
        return "Options --property and --formatter-property cannot be specified together."
    if args.formatter is not None and args.formatter not in DEFAULT_FORMATTERS:
        return (f"--formatter {args.formatter}: only the default formatter ({DEFAULT_FORMATTERS[0]}) is available "
                "here; kafkaseg dump --offsets-decoder / --transaction-log-decoder / --cluster-metadata-decoder / "
                "--share-group-state-decoder / --remote-log-metadata-decoder decode the internal topics")
    return None


def _check_consumer_properties(args) -> str | None:
    """ConsoleConsumerOptions.checkConsumerGroup (each place a group id can come from, before they are merged) and
    setAutoOffsetResetValue's conflict (on the merged properties), in their order."""
    from_file, from_options = _consumer_property_sources(args)
    consumer = consumer_properties(args)
    groups = list(dict.fromkeys(g for g in (args.group, from_file.get("group.id"), from_options.get("group.id"))
                                if g is not None))
    if len(groups) > 1:
        return ("The group ids provided in different places (directly using '--group', via '--consumer-property', "
                "or via '--consumer.config') do not match. Detected group ids: "
                + ", ".join(f"'{g}'" for g in groups))
    if groups and args.partition is not None:
        return "Options group and partition cannot be specified together."
    reset = consumer.get("auto.offset.reset")
    if args.from_beginning and reset is not None and reset != "earliest":
        return (f"Can't simultaneously specify --from-beginning and 'auto.offset.reset={reset}', please remove one "
                "option")
    return None


def _properties(args) -> dict[str, str]:
    """The formatter's properties as ``ConsoleConsumerOptions.formatterArgs`` builds them: --formatter-config's
    file, then --key-deserializer/--value-deserializer, then --property values over both."""
    properties = read_properties_file(args.formatter_config) if args.formatter_config else {}
    if args.key_deserializer:
        properties["key.deserializer"] = args.key_deserializer
    if args.value_deserializer:
        properties["value.deserializer"] = args.value_deserializer
    # formatterArgs(): --property (or --formatter-property, its name since Kafka 4.2) last, so it wins
    properties.update(parse_properties(args.property or args.formatter_property or []))
    return properties


def _reset_out_of_range(planner, position: dict, args, reset: str, err, lost: list[str]) -> dict:
    """An explicit --offset outside what the partition holds: the console consumer's consumer resets it as
    ``reset`` (auto.offset.reset: latest unless set) says, or fails (none). One below the log start is data
    loss (``lost``): the records asked for are gone. Judged on the listing ``position`` was resolved on (the
    planner's last), which the first micro-batch reads too."""
    from kafkaseg.streaming import from_offsets, leader_epochs_of, to_offsets, topic_ids_of

    positions, epochs = from_offsets(position), leader_epochs_of(position)
    tp = (args.topic, args.partition)
    available = planner.available(planner.last_listing).get(tp)
    # LocalLog.read: out of range only below the log start or past the log end (between the high watermark and
    # the log end a fetch is empty and the consumer waits)
    if tp in positions and available is not None and not available.earliest <= positions[tp] <= available.log_end:
        if reset == "none":  # OffsetOutOfRangeException
            raise InvalidOptionError(f"Offsets out of range with no configured reset policy for partitions: "
                                     f"{{{tp[0]}-{tp[1]}={positions[tp]}}} (auto.offset.reset=none)")
        start = available.earliest if reset == "earliest" else available.latest
        print(f"kafkaseg consume: offset {positions[tp]} is out of range for {tp[0]}-{tp[1]} (its log holds "
              f"[{available.earliest}, {available.log_end})): starting at the {reset} offset {start}, as the "
              f"console consumer's reset (auto.offset.reset={reset}) does", file=err)
        if positions[tp] < available.earliest:
            lost.append(f"offsets {positions[tp]}..{available.earliest - 1} of {tp[0]}-{tp[1]}")
        positions[tp] = start
        epochs.pop(tp, None)  # the epoch recorded was the old position's
    return to_offsets(positions, topic_ids_of(position), epochs)


#: How consume reads on past a corrupt ``__remote_log_metadata`` record, in its own flag: the words its read carries
#: (``ReadOptions.metadata_ways_on``) for the read options' (:data:`kafkaseg.remote_metadata.READ_WAYS_ON`:
#: consume takes no remoteLogMetadata)
WAYS_ON = ("--skip-message-on-error leaves this metadata partition out (the tiered copies of its partitions then "
           "chosen by their leader epochs)")


def _report_metrics(metrics, lenient: dict, err, lost_said: set | None) -> None:
    decode = metrics.decode
    _report_lenient(lenient, err)
    _report_lost_tails(metrics, err, lost_said)
    if decode.corrupt_batches:
        print(f"kafkaseg consume: skipped {decode.corrupt_batches} corrupt batch(es), {decode.corrupt_bytes} bytes "
              "(--skip-message-on-error)", file=err)
        for problem in list(decode.problems)[:10]:
            extent = problem.extent() if isinstance(problem, Problem) else ""
            print(f"  {problem[0]} @ byte {problem[1]}: {problem[2]}" + (f" ({extent})" if extent else ""), file=err)
        if len(decode.problems) > 10:
            print(f"  ... and {len(decode.problems) - 10} more named", file=err)
    for _, line in metrics.vanished_lines():
        print(f"kafkaseg consume: {line}", file=err)
    for line in metrics.other_copies_lines():
        print(f"kafkaseg consume: {line}", file=err)
    for line in metrics.rewritten_tail_lines():
        print(f"kafkaseg consume: {line}", file=err)
    _report_missing(metrics.missing_offsets, err)
    _report_unreadable_tails(metrics, err)


def _report_lenient(lenient: dict, err) -> None:
    """Print the plans' lenient decisions not printed yet (``lenient`` maps each to whether it was)."""
    for decision, printed in lenient.items():
        if not printed:
            print(f"kafkaseg consume: {decision.describe()}", file=err)
            lenient[decision] = True


def _report_unreadable_tails(metrics, err) -> None:
    """Say (and forget) each active segment whose indexes prove offsets past its readable end, with no high
    watermark to bound the read (``ScanMetrics.unreadable_tails``: offsets a crash may have lost before the broker
    flushed them; flushed ones are data loss: _report_lost_tails)."""
    for line in metrics.unreadable_tail_lines():
        print(f"kafkaseg consume: {line}", file=err)
    metrics.unreadable_tails.clear()


def _report_lost_tails(metrics, err, said: set | None) -> None:
    """Say each flushed tail the read found lost and read past (``ScanMetrics.lost_tails``: offsets below the
    recovery point that an active segment no longer holds, with no high watermark) as data loss, once (``said``:
    those said already; None with --skip-message-on-error, which says them among the skipped batches). The list
    stays, for --fail-on-data-loss."""
    if said is None:
        return
    for line in metrics.lost_tail_lines():
        if line not in said:
            print(f"kafkaseg consume: data loss: {line}", file=err)
            said.add(line)


def _report_missing(missing, err) -> None:
    for path, start, end in missing:
        print(f"kafkaseg consume: offsets {start}..{end - 1} are missing after {path} (above the cleaner checkpoint: "
              "a lost segment file, or compaction not checkpointed yet)", file=err)


def _no_partition(args, named: set[tuple[str, int]]) -> InvalidOptionError:
    """The usage error for a --partition that the --topic does not have on disk (``named``: the partitions there),
    naming those it has (or, when it has none, the topics close to its name)."""
    held = sorted(p for t, p in named if t == args.topic)
    where = f"no partition {args.partition} of {args.topic} under {', '.join(map(redact, args.data_dir))}"
    if held or not (hint := did_you_mean(args.topic, {t for t, _ in named})):
        hint = f" (its partitions there: {', '.join(map(str, held)) or 'none'})"
    return InvalidOptionError(where + hint)


def _partitions_listed(listing) -> set[tuple[str, int]]:
    """The (topic, partition) pairs a discovery found (:class:`kafkaseg.planning.Listing`: those it read and those
    it only named), for a message that names what is there."""
    return {(p.topic, p.partition) for p in listing.partitions} | {(t, p) for t, p, _ in listing.unselected}


def _report_past_high_watermark(planner, err, lost_past_end: set[tuple[str, int]]) -> None:
    """A line on stderr for each partition whose files hold records past the high watermark, which a run without
    --follow ends at, as a consumer's fetch does: on a crashed or retired broker's disk the last few seconds of
    records (the checkpoint is written every 5 s) are there, and would otherwise be left out without a word. Not
    under read_committed, whose end is the last stable offset (an open transaction's records are past it, with
    --to-log-end too). And the other way round, the read's note for each whose high watermark is above its log
    end (records acknowledged that are not in these files: the run ends at the log end), unless the run said
    offsets past the end lost (``lost_past_end``: the micro-batch that reached the end, or the run standing there,
    said so)."""
    from kafkaseg.planning import high_watermark_above_note

    past = not planner.options.read_committed and planner.options.upper_bound == "highWatermark"
    for (topic, partition), found in sorted(planner.available(listing=planner.last_listing).items()):
        hw = found.high_watermark
        if hw is not None and hw > found.log_end and (topic, partition) not in lost_past_end:
            note = high_watermark_above_note(f"{topic}-{partition}", hw, found.log_end, found.replica)
            print(f"kafkaseg consume: {note}", file=err)
        elif past and found.checkpointed and found.latest < found.log_end:
            print(f"kafkaseg consume: {topic}-{partition}: offsets [{found.latest}, {found.log_end}) are on disk past "
                  "the high watermark, which a consumer does not read (not yet acknowledged, or a checkpoint up to "
                  "5 s behind the broker); --to-log-end prints them", file=err)


class WholeWrites:
    """A binary stream each write of which is written whole, or raises BrokenPipeError with ``written_bytes``: how
    many of its bytes the stream took before the reader went away. (``BufferedWriter.write`` on a pipe whose reader
    closes mid-write returns having written only part, without an error.)"""

    def __init__(self, stream: BinaryIO):
        self.stream = stream

    def write(self, data: bytes) -> int:
        view = memoryview(data)
        done = 0
        while done < len(view):
            try:
                taken = self.stream.write(view[done:])
            except BrokenPipeError as error:
                error.written_bytes = done  # type: ignore[attr-defined]
                raise
            if not taken:  # (None: a non-blocking stream that is full; stdout is not one)
                raise BrokenPipeError(f"output took no bytes of {len(view) - done}")
            done += taken
        return done

    def flush(self) -> None:
        self.stream.flush()


def _stdout_unbuffered() -> BinaryIO:
    """stdout's file itself (what was buffered written first), so that each write says what the reader was handed:
    records are written a batch at a time, which needs no further buffer."""
    sys.stdout.flush()
    return getattr(sys.stdout.buffer, "raw", sys.stdout.buffer)


def run(args, out: BinaryIO | None = None, err=None, sleep: Callable[[float], None] = time.sleep) -> int:
    """Print records as ``args`` ask (see the module docstring); returns the exit status."""
    from kafkaseg.options import ReadOptions
    from kafkaseg.scan import ScanMetrics, read_slice
    from kafkaseg.streaming import MicroBatchPlanner, from_offsets, poll_micro_batches, stopped_at

    out = WholeWrites(out if out is not None else _stdout_unbuffered())
    err = err if err is not None else sys.stderr
    properties = _properties(args)  # each config file read once
    consumer = consumer_properties(args)
    formatter = Formatter.from_properties(properties)
    options = _stream_options(args, consumer)
    options["columns"] = formatter.columns()
    if args.partition is not None and args.partition < 0:  # (not the 'assign' option's range error it becomes)
        from kafkaseg.cli.common import partitions_named

        raise _no_partition(args, partitions_named(args.data_dir, args.tiered_key_ring))
    # a corrupt metadata record's error names consume's flag, not the read options (consume takes no
    # remoteLogMetadata)
    read_options = ReadOptions.from_options(options, stream=True).replace(metadata_ways_on=WAYS_ON)
    if args.tiered_key_ring is not None:
        read_options = read_options.replace(tiered_key_ring=args.tiered_key_ring)
    metrics = ScanMetrics()
    lenient: dict = {}  # the plans' LenientDecisions (each micro-batch plans again) -> printed yet
    lost_said: set | None = None if args.skip_message_on_error else set()  # lost tails said (_report_lost_tails)
    consumed = 0  # ConsoleConsumer's messageCount: records handed to the formatter, skipped ones included
    # ConsoleConsumer.process: -1 (its default) for no limit; 0, or any other negative, prints nothing
    limit = None if args.max_messages in (None, -1) else max(args.max_messages, 0)
    last_printed: dict[tuple[str, int], int] = {}
    went_back: dict[tuple[str, int], int] = {}  # partitions whose log went back below last_printed, said (printed_once)
    lost: list[str] = []  # data loss met (each also said on stderr as met), for --fail-on-data-loss
    # partitions whose offsets past the log end the run said lost (a micro-batch read to it, or the run stood there)
    lost_past_end: set[tuple[str, int]] = set()
    ending: list[int] = []  # the exit status, once the run ends without an error

    def status() -> int:
        """0, or 3 with --fail-on-data-loss when records were lost: deleted before they were read (retention,
        a deleteRecords, an --offset below the log start), missing from an active segment below the recovery
        point (flushed by the broker: ``ScanMetrics.lost_tails``, read past, or skipped with
        --skip-message-on-error), or acknowledged and flushed past the log end a micro-batch read to or the run
        stood at (its plan's data loss). Offsets missing between two segments do not count: a compacted topic's follower holds such gaps (said
        on stderr all the same), nor does a torn tail no recovery point says was flushed."""
        if any(skipped for skipped, _ in metrics.vanished_lines()):
            lost.append("segments deleted before they were read")
        if metrics.lost_tails:
            lost.append("offsets the recovery point says were flushed are missing from an active segment")
        ending.append(3 if args.fail_on_data_loss and lost else 0)
        return ending[-1]

    def skip(batch):
        def on_error(row: int, error: KafkaSegError) -> None:
            print(f"kafkaseg consume: skipping offset {batch.column('offset')[row].as_py()} of "
                  f"{batch.column('topic')[row].as_py()}-{batch.column('partition')[row].as_py()}: {error}", file=err)
        return on_error if args.skip_message_on_error else None

    def emit(batch) -> bool:
        """Print ``batch``; True when --max-messages is reached. As ConsoleConsumer.process counts, every record
        handed to the formatter counts toward --max-messages and the total, also one it skips (or fails on)."""
        nonlocal consumed
        if limit is not None and consumed + batch.num_rows > limit:
            batch = batch.slice(0, limit - consumed)  # the limit is reached within it: nothing after is read
        try:
            formatter.write_batch(batch, out, skip(batch))
        except DeserializationError as error:
            consumed += getattr(error, "written", 0) + 1  # messageCount += 1 comes before writeTo
            raise
        except BrokenPipeError as error:  # the records written whole (or skipped) before the reader went away
            consumed += getattr(error, "rows_done", 0)
            raise
        consumed += batch.num_rows
        if batch.num_rows:
            key = (batch.column("topic")[0].as_py(), batch.column("partition")[0].as_py())
            last_printed[key] = batch.column("offset")[batch.num_rows - 1].as_py()
        return limit is not None and consumed >= limit

    def printed_once(batch):
        """``batch`` without the records at offsets up to the last one printed of its partition (--to-log-end):
        a truncation past the high watermark (a follower's, never below it) after the run printed records there
        takes the log back below them, and the new leader's records at those offsets are not printed again, so
        the run prints each offset once, in order (what it printed there was never acknowledged). Said once per
        partition and truncation."""
        if not batch.num_rows:
            return batch
        key = (batch.column("topic")[0].as_py(), batch.column("partition")[0].as_py())
        done = last_printed.get(key)
        if done is None or batch.column("offset")[0].as_py() > done:
            return batch
        import pyarrow.compute as pc

        said = went_back.get(key)
        if said != done:
            went_back[key] = done
            print(f"kafkaseg consume: {key[0]}-{key[1]}: the log went back below offset {done} printed already "
                  f"(a truncation past the high watermark; the records printed there were never acknowledged): "
                  f"the records written again at offsets up to {done} are not printed again (--to-log-end prints "
                  "each offset once, in order)", file=err)
        return batch.filter(pc.greater(batch.column("offset"), done))

    def read(piece):
        try:
            yield from read_slice(piece, read_options, metrics)
        except CorruptDataError as error:
            # the records before the bad bytes, as a consumer prints them before its fetch fails
            if error.path == piece.log_path and error.position is not None and \
                    piece.start_position < error.position < piece.end_position:
                before = dataclasses.replace(piece, end_position=error.position)
                done = last_printed.get((piece.topic, piece.partition), -1)
                try:
                    for batch in read_slice(before, read_options):
                        offsets = batch.column("offset")
                        keep = [i for i in range(batch.num_rows) if offsets[i].as_py() > done]
                        if keep:
                            yield batch.take(keep)
                except KafkaSegError:
                    pass
            raise

    usage_error = False  # a --data-dir that is none, a --topic or --partition not on disk: no consumer ran, so no
    # total (as Kafka's usage errors)
    try:  # ConsoleConsumer prints its total also when the first fetch fails
        planner = MicroBatchPlanner(read_options)
        try:
            position = planner.initial_offsets()
        except BadPathError:
            usage_error = True
            raise
        except InvalidOptionError as exc:
            if args.partition is None or not str(exc).startswith("option 'assign'"):
                raise
            usage_error = True
            raise _no_partition(args, _partitions_listed(planner.last_listing)) from exc
        reset = auto_offset_reset(args, consumer)
        if reset == "none" and args.partition is None:  # NoOffsetForPartitionException, at the first poll
            names = ", ".join(f"{t}-{p}" for t, p in sorted(from_offsets(position)))
            raise InvalidOptionError(f"Undefined offset with no reset policy for partitions: [{names}] "
                                     "(auto.offset.reset=none: kafkaseg reads no committed offsets, so a subscription "
                                     "has none to start from; use earliest or latest)")
        if not position:
            what = args.topic if args.topic is not None else f"a topic matching {included_topics(args)!r}"
            where = f"no partition of {what} under {', '.join(map(redact, args.data_dir))}"
            if args.topic is not None and not args.follow:  # no broker to wait for: a misspelt name
                usage_error = True
                raise InvalidOptionError(where + did_you_mean(args.topic, {
                    t for t, _ in _partitions_listed(planner.last_listing)}))
            # (a pattern matching nothing yet is no error)
            print(f"kafkaseg consume: {where}" + (" yet: waiting (--follow)" if args.follow else ""), file=err)
        elif args.offset is not None and args.offset.isdigit():
            position = _reset_out_of_range(planner, position, args, reset, err, lost)
        group = args.group if args.group is not None else consumer.get("group.id")
        if group is not None:
            print(f"kafkaseg consume: group {group} has no effect: reading files commits no offsets", file=err)
        ignored = sorted(k for k in consumer if k not in ("isolation.level", "group.id", "auto.offset.reset"))
        if ignored:
            print(f"kafkaseg consume: consumer properties with no effect on files: {', '.join(ignored)}", file=err)
        unknown = sorted(k for k in properties if k not in FORMATTER_PROPERTIES)
        if unknown:
            named = ", ".join(k + did_you_mean(k, FORMATTER_PROPERTIES) for k in unknown)
            print(f"kafkaseg consume: not properties of the default formatter, so no effect: {named} "
                  f"(known: {', '.join(FORMATTER_PROPERTIES)})", file=err)
        if limit == 0:
            return 0
        # the first poll reads the listing the start was resolved on (one discovery of the log dirs to the first
        # record); each later one lists them again
        for plan in poll_micro_batches(planner, position, follow=args.follow, interval_s=args.poll_ms / 1000,
                                       idle_timeout_s=None if args.timeout_ms is None else args.timeout_ms / 1000,
                                       sleep=sleep, listing=planner.last_listing):
            for note in plan.data_loss:
                print(f"kafkaseg consume: {note}", file=err)
                lost.append(note)
            for note in plan.read_again:  # (a rewrite past the high watermark: no loss, said as the stream's warning)
                print(f"kafkaseg consume: {note}", file=err)
            lost_past_end.update(plan.lost_past_end)
            for decision in (plan.scan.report.lenient if plan.scan is not None else ()):
                lenient.setdefault(decision, False)
            for piece in (plan.scan.slices if plan.scan is not None else ()):
                key = (piece.topic, piece.partition)
                if key in plan.read_to:
                    continue  # (after a rewritten tail: read by the next batch, from where the read stopped)
                rewritten, last = len(metrics.rewritten_tails), None
                for batch in read(piece):
                    if batch.num_rows:
                        last = batch.column("offset")[batch.num_rows - 1].as_py()
                    if args.to_log_end:
                        batch = printed_once(batch)
                    if emit(batch):
                        return status()
                if len(metrics.rewritten_tails) > rewritten:
                    # the slice ended where a truncation past the high watermark rewrote the log: the next batch
                    # reads the partition again from there (the new generation's records up to the plan's end
                    # would be skipped), and this batch reads no more of it
                    plan.read_to[key] = stopped_at(piece, last)
            out.flush()
            if args.follow:  # said as they are met, not only when a follow ends
                _report_lenient(lenient, err)
                _report_missing(metrics.missing_offsets, err)
                metrics.missing_offsets.clear()
                _report_unreadable_tails(metrics, err)
                _report_lost_tails(metrics, err, lost_said)
        if not args.follow:
            _report_past_high_watermark(planner, err, lost_past_end)
        return status()
    except CorruptDataError as error:
        if not args.skip_message_on_error and "--skip-message-on-error" not in str(error):
            # the way on in consume's own flag, as offsets/locate note their --on-corruption (a corrupt metadata
            # record's error names it already: the read says WAYS_ON)
            error.add_note("--skip-message-on-error reads on past damage where a read with onCorruption=skip does")
        raise
    except KeyboardInterrupt:
        return status()
    except BrokenPipeError:  # the reader went away (| head): ConsoleConsumer.checkErr, and the run ends as there
        print("Unable to write to standard out, closing consumer.", file=err)
        return status()
    finally:
        try:
            out.flush()
        finally:
            _report_metrics(metrics, lenient, err, lost_said)
            if ending == [3]:
                print("kafkaseg consume: exit status 3: records were lost (said above; --fail-on-data-loss)",
                      file=err)
            if not usage_error:
                print(f"Processed a total of {consumed} messages", file=err)
