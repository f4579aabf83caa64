"""A small interpreter for Kafka's message schemas (the ``*.json`` files under ``*/src/main/resources/common/``):
bytes -> Python values, no I/O.

Kafka generates Java readers from those JSON specs (``generator/.../MessageDataGenerator.java``); kafkaseg keeps
the same specs as Python data (:class:`Field` lists in the sibling modules, transcribed by hand from the JSON
files named in each module) and walks them with this reader. Grammar of a struct at version ``v``
(``clients/.../common/protocol/types/*``, ``ByteUtils.java``)::

    for each field whose "versions" include v and whose "taggedVersions" do not:
        int8/int16/int32/int64/uint16/float64   big-endian, fixed width
        bool                                    int8, non-zero = true
        uuid                                    16 bytes (printed as Kafka's Uuid.toString: URL-safe base64, no '=')
        string   flexible: uvarint (length + 1, 0 = null) | classic: int16 length (-1 = null), then UTF-8 bytes
        bytes    flexible: uvarint (length + 1, 0 = null) | classic: int32 length (-1 = null), then the bytes
        []T      flexible: uvarint (count + 1, 0 = null)  | classic: int32 count (-1 = null), then the elements
        Struct   the nested struct's fields (no length prefix); at a nullable version a presence marker first:
                 int8 (< 0 = null) untagged, uvarint (0 = null) as a tagged field
                 (``MessageDataGenerator.generateStructReader``)
    if v is a flexible version:
        tagged fields: uvarint count, then per field: uvarint tag, uvarint size, the field's bytes

Unsigned varints are protobuf base-128, at most 5 bytes for 32 bits (``ByteUtils.readUnsignedVarint``).
Decoded structs are ``dict``s keyed by Kafka's JSON names (``FieldSpec.camelCaseName``: first letter lower-cased)
in schema order; a tagged field appears only when its value differs from its default, as Kafka's generated
``*JsonConverter.write`` does. :func:`to_json` prints them the way Jackson's ``ObjectNode.toString`` does.
"""

from __future__ import annotations

import base64
import math
import struct
from decimal import Decimal
from dataclasses import dataclass
from typing import Any, Sequence

from kafkaseg.errors import CorruptDataError

__all__ = ["Field", "Message", "Reader", "read_message", "read_message_prefix", "to_json", "kafka_uuid", "VersionRange",
           "MAX_ELEMENTS"]

#: Arrays longer than this, or strings/bytes longer than the buffer, are refused: a corrupt length field must not
#: make us allocate gigabytes.
MAX_ELEMENTS = 1 << 20


class VersionRange:
    """Kafka's version-range strings: ``"0+"``, ``"3"``, ``"0-2"``, ``"none"``."""

    __slots__ = ("low", "high")

    def __init__(self, text: str | None):
        text = (text or "none").strip()
        if text == "none":
            self.low, self.high = 1, 0
        elif text.endswith("+"):
            self.low, self.high = int(text[:-1]), 1 << 15
        elif "-" in text:
            lo, hi = text.split("-", 1)
            self.low, self.high = int(lo), int(hi)
        else:
            self.low = self.high = int(text)

    def __contains__(self, version: int) -> bool:
        return self.low <= version <= self.high

    def __repr__(self) -> str:
        return f"VersionRange({self.low}-{self.high})"


@dataclass(frozen=True)
class Field:
    """One field of a message spec, as in the JSON file. ``type`` is a Kafka type name (``int32``, ``string``,
    ``[]int32``, ``[]SomeStruct``, ``SomeStruct``); struct types carry their ``fields``."""

    name: str
    type: str
    versions: str = "0+"
    nullable: str | None = None
    tagged: str | None = None
    tag: int | None = None
    default: Any = None
    fields: tuple["Field", ...] = ()

    @property
    def json_name(self) -> str:
        return self.name[:1].lower() + self.name[1:]


@dataclass(frozen=True)
class Message:
    """A whole message spec: its name, valid and flexible versions, fields."""

    name: str
    valid: str
    flexible: str
    fields: tuple[Field, ...]
    api_key: int | None = None


_FIXED = {"int8": struct.Struct(">b"), "int16": struct.Struct(">h"), "int32": struct.Struct(">i"),
          "int64": struct.Struct(">q"), "uint16": struct.Struct(">H"), "uint32": struct.Struct(">I"),
          "float64": struct.Struct(">d"), "bool": struct.Struct(">b")}
_INT_TYPES = {"int8", "int16", "int32", "int64", "uint16", "uint32"}


def kafka_uuid(raw: bytes) -> str:
    """Kafka's ``Uuid.toString``: URL-safe base64 of the 16 bytes without padding."""
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


class Reader:
    """A cursor over a buffer; every read checks bounds and raises :class:`CorruptDataError` with the
    buffer-relative position of the field that does not fit."""

    def __init__(self, buf, position: int = 0, end: int | None = None):
        self.buf = memoryview(buf)
        self.pos = position
        self.end = len(self.buf) if end is None else end

    @property
    def remaining(self) -> int:
        return self.end - self.pos

    def _need(self, n: int, what: str) -> None:
        if n < 0 or self.pos + n > self.end:
            raise CorruptDataError(f"{what} needs {n} bytes, only {self.end - self.pos} left", position=self.pos)

    def fixed(self, type_name: str, what: str = ""):
        fmt = _FIXED[type_name]
        self._need(fmt.size, what or type_name)
        (value,) = fmt.unpack_from(self.buf, self.pos)
        self.pos += fmt.size
        return bool(value) if type_name == "bool" else value

    def int16(self) -> int:
        return self.fixed("int16")

    def uvarint(self, what: str = "unsigned varint") -> int:
        start = self.pos
        value = shift = 0
        while True:
            if self.pos >= self.end:
                raise CorruptDataError(f"{what} runs past the end", position=start)
            b = self.buf[self.pos]
            self.pos += 1
            value |= (b & 0x7F) << shift
            if not b & 0x80:
                return value
            shift += 7
            if shift > 28:
                raise CorruptDataError(f"{what} is longer than 5 bytes", position=start)

    def raw(self, n: int, what: str) -> bytes:
        self._need(n, what)
        data = bytes(self.buf[self.pos:self.pos + n])
        self.pos += n
        return data

    def length(self, flexible: bool, classic: str, what: str) -> int:
        """A length or count prefix; -1 means null."""
        if flexible:
            return self.uvarint(what) - 1
        return self.fixed(classic, what)


def _read_value(reader: Reader, field: Field, type_name: str, version: int, flexible: bool, tagged: bool = False):
    if type_name in _FIXED:
        return reader.fixed(type_name, field.name)
    if type_name == "uuid":
        return kafka_uuid(reader.raw(16, field.name))
    if type_name in ("string", "bytes"):
        start = reader.pos
        n = reader.length(flexible, "int16" if type_name == "string" else "int32", field.name)
        if n < 0:
            if n < -1 or version not in VersionRange(field.nullable):
                raise CorruptDataError(f"{field.name}: invalid length {n}", position=start)
            return None
        data = reader.raw(n, field.name)
        if type_name == "bytes":
            return data
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as err:
            raise CorruptDataError(f"{field.name}: string is not UTF-8 ({err})", position=start) from err
    if type_name.startswith("[]"):
        start = reader.pos
        n = reader.length(flexible, "int32", field.name)
        if n < 0:
            if n < -1 or version not in VersionRange(field.nullable):
                raise CorruptDataError(f"{field.name}: invalid array length {n}", position=start)
            return None
        if n > MAX_ELEMENTS or n > reader.remaining:
            raise CorruptDataError(f"{field.name}: array of {n} elements cannot fit in {reader.remaining} bytes",
                                   position=start)
        element = type_name[2:]
        return [_read_value(reader, field, element, version, flexible) for _ in range(n)]
    # a struct type (the field's own, not an array's element: elements carry no marker)
    if type_name == field.type and version in VersionRange(field.nullable):
        if tagged:  # Java reads the uvarint into an int and takes <= 0 as null
            marker = reader.uvarint(field.name) & 0xFFFFFFFF
            present = 0 < marker < 0x80000000
        else:
            present = reader.fixed("int8", field.name) >= 0
        if not present:
            return None
    return _read_struct(reader, field.fields, version, flexible)


def _default(field: Field):
    if field.default is not None:
        return None if field.default == "null" else field.default
    if field.type in _INT_TYPES or field.type == "float64":
        return 0
    if field.type == "bool":
        return False
    if field.type == "string":
        return ""
    if field.type == "bytes":
        return b""
    if field.type.startswith("[]"):
        return []
    if field.type == "uuid":
        return "AAAAAAAAAAAAAAAAAAAAAA"  # Uuid.ZERO_UUID
    return None


def _read_struct(reader: Reader, fields: Sequence[Field], version: int, flexible: bool) -> dict:
    out: dict = {}
    tagged: dict[int, Field] = {}
    for field in fields:
        if version not in VersionRange(field.versions):
            continue
        if field.tagged is not None and version in VersionRange(field.tagged):
            tagged[int(field.tag)] = field
            out[field.json_name] = _default(field)
            continue
        out[field.json_name] = _read_value(reader, field, field.type, version, flexible)
    if flexible:
        count = reader.uvarint("tagged field count")
        for _ in range(count):
            tag = reader.uvarint("tag")
            size = reader.uvarint("tagged field size")
            start = reader.pos
            reader._need(size, f"tagged field {tag}")
            if tag in tagged:
                sub = Reader(reader.buf, start, start + size)
                field = tagged[tag]
                out[field.json_name] = _read_value(sub, field, field.type, version, flexible, tagged=True)
            reader.pos = start + size
        for tag, field in tagged.items():  # the JSON converter writes a tagged field only when it is not default
            if out.get(field.json_name) == _default(field):
                del out[field.json_name]
    return out


def read_message_prefix(spec: Message, buf, version: int, position: int = 0, end: int | None = None
                        ) -> tuple[dict, int]:
    """Decode ``spec`` at ``version`` from ``buf[position:end]``, as Kafka's generated ``read`` does, leaving what
    follows it: ``(value, position just after it)``. Raises :class:`CorruptDataError` for a version outside
    ``spec.valid`` or malformed bytes."""
    if version not in VersionRange(spec.valid):
        raise CorruptDataError(f"{spec.name}: unsupported version {version} (valid {spec.valid})", position=position)
    reader = Reader(buf, position, end)
    return _read_struct(reader, spec.fields, version, version in VersionRange(spec.flexible)), reader.pos


def read_message(spec: Message, buf, version: int, position: int = 0, end: int | None = None, *,
                 require_all: bool = True) -> dict:
    """Decode ``buf[position:end]`` as ``spec`` at ``version``. Raises :class:`CorruptDataError` for a version
    outside ``spec.valid``, malformed bytes, or (with ``require_all``) bytes left over."""
    value, after = read_message_prefix(spec, buf, version, position, end)
    reader = Reader(buf, after, end)
    if require_all and reader.remaining:
        raise CorruptDataError(f"{spec.name} v{version}: {reader.remaining} byte(s) of garbage after the message",
                               position=reader.pos)
    return value


# -- JSON as Jackson prints it --------------------------------------------------------------------------------

def _java_double(x: float) -> str:
    """``Double.toString``: plain notation for 1e-3 <= |x| < 1e7, else ``d.dddE<n>``; always a fraction digit."""
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    if x == 0:
        return "-0.0" if math.copysign(1, x) < 0 else "0.0"
    if 1e-3 <= abs(x) < 1e7:
        text = repr(x)
        return text if ("." in text or "e" in text) else text + ".0"
    sign, raw_digits, exponent = Decimal(repr(x)).as_tuple()
    power = exponent + len(raw_digits) - 1
    digits = "".join(map(str, raw_digits)).rstrip("0") or "0"
    return f"{'-' if sign else ''}{digits[0]}.{digits[1:] or '0'}E{power}"


def _json_string(text: str) -> str:
    out = ['"']
    for ch in text:
        code = ord(ch)
        if ch == '"':
            out.append('\\"')
        elif ch == "\\":
            out.append("\\\\")
        elif code < 0x20:
            out.append({8: "\\b", 9: "\\t", 10: "\\n", 12: "\\f", 13: "\\r"}.get(code, f"\\u{code:04X}"))
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def to_json(value) -> str:
    """Compact JSON the way Jackson's ``JsonNode.toString`` prints Kafka's converters' output: no spaces, bytes
    as standard base64, doubles as Java prints them, non-ASCII characters unescaped."""
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _java_double(value)
    if isinstance(value, str):
        return _json_string(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return '"' + base64.b64encode(bytes(value)).decode("ascii") + '"'
    if isinstance(value, dict):
        return "{" + ",".join(f"{_json_string(str(k))}:{to_json(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(to_json(v) for v in value) + "]"
    raise TypeError(f"cannot print {type(value).__name__} as JSON")
