"""``kafkaseg consume``: ``kafka-console-consumer.sh`` over log dirs instead of a broker.

The options and the output are the console consumer's (``ConsoleConsumerOptions.java``,
``DefaultMessageFormatter.java`` in apache/kafka ``tools/src/main/java/org/apache/kafka/tools/consumer``), with
``--data-dir`` in place of ``--bootstrap-server``:

* ``--topic T`` or ``--include REGEX`` (a regex matched against whole topic names, internal topics left out, as
  the consumer's pattern subscription does); ``--partition P`` with ``--offset earliest|latest|N``; otherwise
  ``--from-beginning`` or, by default, latest. Without ``--follow`` a read stops at the end of what is on disk
  (the console consumer waits for more); with it, new records are printed as a live broker's high watermark
  moves on (:class:`kafkaseg.streaming.MicroBatchPlanner`, polled every ``--poll-ms``), until ``--max-messages``,
  ``--timeout-ms`` without a new record, or Ctrl-C.
* Each record is printed by the default formatter's ``--property`` settings: ``print.timestamp``
  (``CreateTime:<ms>``, ``LogAppendTime:<ms>``, ``NO_TIMESTAMP``), ``print.partition`` (``Partition:<n>``),
  ``print.offset`` (``Offset:<n>``), ``print.epoch`` (``Epoch:<n>`` or ``NOT_PRESENT``), ``print.delivery``
  (always ``Delivery:NOT_PRESENT``: no share group here), ``print.headers`` (``k:v`` joined by
  ``headers.separator``, or ``NO_HEADERS``), ``print.key``, ``print.value``, separated by ``key.separator``
  (tab) and ended by ``line.separator`` (newline); ``null.literal`` for a null key, value or header value. Bytes
  are written as they are (the formatter's default); ``key.deserializer``/``value.deserializer``/
  ``headers.deserializer`` take Kafka's built-in String, Integer, Long, Short, Float, Double and UUID deserializers
  (by class name, with or without the package). A null is printed as the null literal whatever the deserializer
  (the console consumer would run the deserializer on the literal's bytes).
* Records are printed partition by partition (topic, then partition number, in offset order), where a consumer
  interleaves partitions as its fetches return. ``Processed a total of N messages`` goes to stderr at the end.
"""

from __future__ import annotations

import re
import struct
import sys
import time
import uuid
from dataclasses import dataclass
from typing import BinaryIO, Callable

from kafkaseg.errors import InvalidOptionError

__all__ = ["run", "Formatter", "parse_properties"]

_SERIALIZATION = "org.apache.kafka.common.serialization."


def _fixed(name: str, size: int, fmt: str) -> Callable[[bytes], bytes]:
    def deserialize(data: bytes) -> bytes:
        if len(data) != size:  # Kafka: SerializationException("Size of data received by ... is not N")
            raise InvalidOptionError(f"size of data received by {name} is not {size} ({len(data)} bytes)")
        value = struct.unpack(fmt, data)[0]
        return _java_number(value).encode()
    return deserialize


def _java_number(value) -> str:
    if isinstance(value, float):  # Double.toString / Float.toString forms for the common cases
        if value != value:
            return "NaN"
        if value in (float("inf"), float("-inf")):
            return "Infinity" if value > 0 else "-Infinity"
        text = repr(value)
        return text if ("." in text or "e" in text) else text + ".0"
    return str(value)


def _string(data: bytes) -> bytes:
    from kafkaseg.wire.text import java_utf8

    return java_utf8(data).encode()


def _uuid(data: bytes) -> bytes:
    try:
        return str(uuid.UUID(data.decode("utf-8"))).encode()
    except (UnicodeDecodeError, ValueError) as err:  # Kafka: SerializationException
        raise InvalidOptionError(f"UUIDDeserializer: not a UUID string: {data[:40]!r}") from err


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
    """``--property k=v`` items (Kafka's ``parseKeyValueArgs``: split at the first ``=``)."""
    out: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise InvalidOptionError(f"--property {item!r}: expected key=value")
        key = key.strip()
        if key not in _BOOLEAN_PROPERTIES + _TEXT_PROPERTIES + _DESERIALIZER_PROPERTIES:
            raise InvalidOptionError(f"--property {key!r} is not a property of the default formatter; known: "
                                     f"{', '.join(_BOOLEAN_PROPERTIES + _TEXT_PROPERTIES + _DESERIALIZER_PROPERTIES)}")
        out[key] = value
    return out


def _unescape(text: str) -> bytes:
    """Separators as a shell passes them: ``\\t``, ``\\n`` and ``\\\\`` spelled out (the console consumer takes
    the characters as given; a literal tab is hard to type, so the escapes are accepted too)."""
    return re.sub(r"\\([tn\\])", lambda m: {"t": "\t", "n": "\n", "\\": "\\"}[m.group(1)], text).encode()


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
                setattr(formatter, name.replace(".", "_"), _unescape(properties[name]))
        for name in _DESERIALIZER_PROPERTIES:
            if name in properties:
                setattr(formatter, name.replace(".", "_"), _deserializer(properties[name]))
        return formatter

    def _bytes(self, data: bytes | None, deserializer) -> bytes:
        if data is None:
            return self.null_literal
        return deserializer(data) if deserializer is not None else data

    def write_batch(self, batch, out: BinaryIO) -> int:
        """Write every record of an Arrow batch (kafkaseg's schema); returns how many."""
        columns = {name: batch.column(name).to_pylist() for name in batch.schema.names
                   if name not in ("timestamp",)}
        millis = batch.column("timestamp").cast("int64").to_pylist()
        fields = [name for name, on in (("timestamp", self.print_timestamp), ("partition", self.print_partition),
                                        ("offset", self.print_offset), ("delivery", self.print_delivery),
                                        ("epoch", self.print_epoch), ("headers", self.print_headers),
                                        ("key", self.print_key), ("value", self.print_value)) if on]
        pieces: list[bytes] = []
        for i in range(batch.num_rows):
            for k, name in enumerate(fields):
                if name == "timestamp":
                    kind = columns["timestampType"][i]
                    text = (f"CreateTime:{millis[i] // 1000}" if kind == 0 else
                            f"LogAppendTime:{millis[i] // 1000}" if kind == 1 else "NO_TIMESTAMP")
                    pieces.append(text.encode())
                elif name == "partition":
                    pieces.append(f"Partition:{columns['partition'][i]}".encode())
                elif name == "offset":
                    pieces.append(f"Offset:{columns['offset'][i]}".encode())
                elif name == "delivery":
                    pieces.append(b"Delivery:NOT_PRESENT")
                elif name == "epoch":
                    epoch = columns["leaderEpoch"][i]
                    pieces.append(f"Epoch:{epoch}".encode() if epoch is not None and epoch >= 0
                                  else b"Epoch:NOT_PRESENT")
                elif name == "headers":
                    headers = columns["headers"][i]
                    if not headers:
                        pieces.append(b"NO_HEADERS")
                    else:
                        pieces.append(self.headers_separator.join(
                            h["key"].encode() + b":" + self._bytes(h["value"], self.headers_deserializer)
                            for h in headers))
                elif name == "key":
                    pieces.append(self._bytes(columns["key"][i], self.key_deserializer))
                else:
                    pieces.append(self._bytes(columns["value"][i], self.value_deserializer))
                # key.separator between fields, line.separator after the last one printed
                pieces.append(self.key_separator if k < len(fields) - 1 else self.line_separator)
        out.write(b"".join(pieces))
        return batch.num_rows


def _stream_options(args) -> dict:
    options: dict = {"paths": list(args.data_dir), "kafka.isolation.level": args.isolation_level,
                     "failOnDataLoss": "false"}  # a consumer resets to the log start instead of failing
    if args.include is not None:
        try:
            re.compile(args.include)
        except re.error as err:
            raise InvalidOptionError(f"--include: invalid regex {args.include!r}: {err}") from None
        options["subscribePattern"] = f"^(?:{args.include})$"
    elif args.partition is not None:
        options["assign"] = {args.topic: [args.partition]}
    else:
        options["subscribe"] = args.topic
    offset = (args.offset or "latest").lower() if args.partition is not None else (
        "earliest" if args.from_beginning else "latest")
    if offset in ("earliest", "latest"):
        options["startingOffsets"] = offset
    else:
        options["startingOffsets"] = {args.topic: {str(args.partition): int(offset)}}
    if args.skip_message_on_error:
        options["onCorruption"] = "skip"
    return options


def check_args(args) -> str | None:
    """ConsoleConsumerOptions.checkRequiredArgs: the usage error, if any."""
    if (args.topic is None) == (args.include is None):
        return "Exactly one of --include/--topic is required."
    if args.partition is not None:
        if args.topic is None:
            return "The topic is required when partition is specified."
        if args.from_beginning and args.offset is not None:
            return "Options from-beginning and offset cannot be specified together."
    elif args.offset is not None:
        return "The partition is required when offset is specified."
    if args.offset is not None and args.offset.lower() not in ("earliest", "latest"):
        if not re.fullmatch(r"\d+", args.offset):
            return (f"The provided offset value '{args.offset}' is incorrect. Valid values are 'earliest', 'latest', "
                    "or a non-negative long.")
    if args.max_messages is not None and args.max_messages <= 0:
        return "--max-messages must be positive"
    return None


def run(args, out: BinaryIO | None = None, err=None, sleep: Callable[[float], None] = time.sleep) -> int:
    """Print records as ``args`` ask (see the module docstring); returns the exit status."""
    from kafkaseg.options import ReadOptions
    from kafkaseg.scan import read_slice
    from kafkaseg.streaming import MicroBatchPlanner

    out = out if out is not None else sys.stdout.buffer
    err = err if err is not None else sys.stderr
    formatter = Formatter.from_properties(parse_properties(args.property or []))
    options = _stream_options(args)
    options["includeHeaders"] = formatter.print_headers
    options["includeMetadata"] = formatter.print_epoch
    read_options = ReadOptions.from_options(options, stream=True)
    planner = MicroBatchPlanner(read_options)
    position = planner.initial_offsets()
    printed = 0
    idle_since = time.monotonic()
    try:
        while True:
            end = planner.latest_offsets(position, all_available=True)
            if end != position:
                plan = planner.plan(position, end)
                for note in plan.data_loss:
                    print(f"kafkaseg consume: {note}", file=err)
                for piece in (plan.scan.slices if plan.scan is not None else ()):
                    for batch in read_slice(piece, read_options):
                        if args.max_messages is not None and printed + batch.num_rows > args.max_messages:
                            batch = batch.slice(0, args.max_messages - printed)
                        printed += formatter.write_batch(batch, out)
                        if args.max_messages is not None and printed >= args.max_messages:
                            return 0
                out.flush()
                position = end
                idle_since = time.monotonic()
            if not args.follow:
                return 0
            if args.timeout_ms is not None and (time.monotonic() - idle_since) * 1000 >= args.timeout_ms:
                return 0
            sleep(args.poll_ms / 1000)
    except KeyboardInterrupt:
        return 0
    finally:
        try:
            out.flush()
        finally:
            print(f"Processed a total of {printed} messages", file=err)
