"""``kafkaseg dump``: ``kafka-dump-log.sh`` without a JVM.

Output follows Kafka 4.3's DumpLogSegments (``tools/src/main/java/org/apache/kafka/tools/DumpLogSegments.java``,
the Java port of ``core/.../kafka/tools/DumpLogSegments.scala``) line for line: ``Dumping <file>``, then per file
type

* ``.log`` / KRaft ``.checkpoint``: ``Log starting offset: N`` (for a ``.log`` not named after an offset, where
  Kafka's tool fails, its first batch's base offset and a word saying so; ``Snapshot end offset: N, epoch: E`` /
  ``KRaft bootstrap snapshot``), one line per batch (``printBatchLevel``) and, with ``--deep-iteration`` (implied by
  ``--print-data-log`` and the decoders), one ``| offset: ...`` line per record; ``Found N invalid bytes at the end
  of <name>`` for a tail that is not a whole batch, an entry whose size field runs past the end included whatever
  its magic byte (``FileLogInputStream.nextBatch`` looks at the size first), only without ``--max-bytes``;
* ``.index``: ``offset: O position: P`` (mismatches with the log on stderr), ``--index-sanity-check``,
  ``--verify-index-only``; ``.timeindex``: ``timestamp: T offset: O`` and its error report;
* ``.snapshot`` producer snapshots; ``.txnindex`` aborted transactions; an Aiven tiered-storage copy's
  ``.rsm-manifest`` (kafkaseg's own lines) and ``.indexes`` (each index it packs, after an ``Index <kind> at bytes
  [start, end)`` line, dumped as its own file; the leader epochs as ``epoch: E startOffset: S``); anything else:
  ``Ignoring unknown file``.

Kafka's end-of-run reports go to stderr in its words (``Mismatches in :<file>``, ``Found timestamp mismatch in :``,
``Non-consecutive offsets in <file>``...). Differences: ``--json`` prints only JSON lines on stdout: ``{"file": F}``
before each file, one object per batch / entry, and the end-of-run findings as ``{"file", "problem", ...}`` objects;
the exit status is 1 when an index disagrees with its log or a batch fails its CRC (Kafka always exits 0). A batch
kafkaseg's readers refuse is reported (``Error dumping``, exit 1); one whose only fault is a legacy wrapper's inner
offsets repeating or going back still has its records printed as Kafka's deep iterator gives them. A file named
with an offset past a 64-bit long (a snapshot's epoch past an int), on which Kafka's tool fails, is an error naming
it (``SegmentNameError``, exit 1), not dumped; so is a ``.checkpoint`` not named ``<end offset>-<epoch>.checkpoint``
in 20 and 10 characters (nor ``bootstrap.checkpoint``), whose name Kafka's ``Snapshots.parse`` fails on. An error
line names the file once: ``Error dumping <file>: <message>``, the message without the file's own name
(:func:`_unnamed`).
"""

from __future__ import annotations

import bisect
import json
import re
import struct
import sys
from dataclasses import dataclass, field, replace as _replace

import numpy as np

import pyarrow as pa
import pyarrow.compute as pc

from kafkaseg.decode import decode
from kafkaseg.decode.api import STOP_END, STOP_LIMIT, DecodeRequest
from kafkaseg.errors import CorruptDataError, KafkaSegError, LayoutError, SegmentNameError
from kafkaseg.wire.text import java_utf8
from kafkaseg.storage import fs as _fs
from kafkaseg.storage.layout import (is_last_log_in_folder, kraft_snapshot_id, offset_past_a_long,
                                     past_a_long_words)
from kafkaseg.storage.offset_index import OffsetIndex
from kafkaseg.storage.producer_snapshot import parse_producer_snapshot, read_producer_snapshot
from kafkaseg.storage._index_file import broker_sanity_check
from kafkaseg.storage.segment import SegmentReader, data_after_zeros
from kafkaseg.storage.time_index import TimeIndex
from kafkaseg.storage.txn_index import TransactionIndex
from kafkaseg.wire.batch import LOG_OVERHEAD, MIN_ENTRY_SIZE, TIMESTAMP_TYPE_NAMES, BatchHeader
from kafkaseg.wire.crc import crc_is_valid
from kafkaseg.wire.internal.cluster_metadata import decode_control_record, decode_metadata_record
from kafkaseg.wire.internal.consumer_offsets import format_offsets_record
from kafkaseg.wire.internal.protocol import to_json
from kafkaseg.wire.internal.remote_log_metadata import format_remote_log_metadata_record, remote_log_metadata_json
from kafkaseg.wire.internal.share_group_state import format_share_group_state_record
from kafkaseg.wire.internal.transaction_state import format_transaction_record

__all__ = ["DumpOptions", "DumpReport", "dump_files", "RECORD_INDENT"]

RECORD_INDENT = "|"
INT_MAX = 2**31 - 1
_JSON_DECODERS = ("offsets", "share-group-state", "transaction", "cluster-metadata")  # their payloads print as JSON
BOOTSTRAP_CHECKPOINT = "bootstrap.checkpoint"


@dataclass
class DumpOptions:
    print_data_log: bool = False
    deep_iteration: bool = False
    verify_index_only: bool = False
    index_sanity_check: bool = False
    max_bytes: int = INT_MAX
    max_message_size: int = 5 * 1024 * 1024
    skip_record_metadata: bool = False
    decoder: str | None = None  # "offsets" | "share-group-state" | "transaction" | "cluster-metadata" |
    #                             "remote-log-metadata"
    json: bool = False
    key_ring: object = None  # kafkaseg.storage.encryption.KeyRing: opens tiered-storage copies stored encrypted

    @property
    def should_print_data(self) -> bool:
        return self.print_data_log or self.decoder is not None

    @property
    def deep(self) -> bool:
        return self.deep_iteration or self.should_print_data


@dataclass
class DumpReport:
    """What the run found; printed to stderr at the end as DumpLogSegments does."""

    index_mismatches: dict = field(default_factory=dict)          # abs path -> [(index offset, log offset)]
    time_mismatches: dict = field(default_factory=dict)           # abs path -> [(index ts, log ts)]
    time_out_of_order: dict = field(default_factory=dict)         # abs path -> [(index ts, previous ts)]
    time_offset_not_found: dict = field(default_factory=dict)     # abs path -> [(indexed offset, found offset)]
    non_consecutive: dict = field(default_factory=dict)           # abs path -> [(offset, next offset)]
    invalid_batches: list = field(default_factory=list)           # (path, position, detail)
    errors: list = field(default_factory=list)                    # (path, message)
    last_logs: dict = field(default_factory=dict, repr=False)     # folder -> its last .log's name (listed once)

    @property
    def failed(self) -> bool:
        return bool(self.index_mismatches or self.time_mismatches or self.time_out_of_order
                    or self.time_offset_not_found or self.invalid_batches or self.errors)

    def print(self, err) -> None:
        # Kafka 4.3's DumpLogSegments keeps a file's index mismatches in a TreeMap by index offset, highest first,
        # and its non-consecutive pairs in one by the offset before the step, lowest first: one line per offset,
        # the last pair found for it (the Scala tool up to 4.2 listed every pair, newest first).
        for name, pairs in self.index_mismatches.items():
            print(f"Mismatches in :{_fs.redact(name)}", file=err)
            for index_offset, log_offset in sorted(dict(pairs).items(), reverse=True):
                print(f"  Index offset: {index_offset}, log offset: {log_offset}", file=err)
        for name, pairs in self.time_mismatches.items():
            print(f"Found timestamp mismatch in :{_fs.redact(name)}", file=err)
            for a, b in pairs:
                print(f"  Index timestamp: {a}, log timestamp: {b}", file=err)
        for name, pairs in self.time_out_of_order.items():
            print(f"Found out of order timestamp in :{_fs.redact(name)}", file=err)
            for a, b in pairs:
                print(f"  Index timestamp: {a}, Previously indexed timestamp: {b}", file=err)
        for pairs in self.time_offset_not_found.values():
            print("The following indexed offsets are not found in the log.", file=err)
            for a, b in pairs:
                print(f"Indexed offset: {a}, found log offset: {b}", file=err)
        for name, pairs in self.non_consecutive.items():
            print(f"Non-consecutive offsets in {_fs.redact(name)}", file=err)
            for a, b in sorted(dict(pairs).items()):
                print(f"  {a} is followed by {b}", file=err)
        for path, position, detail in self.invalid_batches:
            print(f"Invalid batch in {_fs.redact(path)} at byte {position}: {detail}", file=err)
        for path, message in self.errors:
            print(f"Error dumping {_fs.redact(path)}: {_fs.redact(message)}", file=err)

    def json_rows(self):
        """The same findings as JSON objects (``--json``: printed to stdout, in file order), one per finding."""
        kinds = (("indexMismatch", self.index_mismatches, ("indexOffset", "logOffset")),
                 ("timestampMismatch", self.time_mismatches, ("indexTimestamp", "logTimestamp")),
                 ("timestampOutOfOrder", self.time_out_of_order, ("indexTimestamp", "previousIndexedTimestamp")),
                 ("indexedOffsetNotFound", self.time_offset_not_found, ("indexedOffset", "foundLogOffset")),
                 ("nonConsecutiveOffsets", self.non_consecutive, ("offset", "nextOffset")))
        for problem, by_file, (first, second) in kinds:
            for name, pairs in by_file.items():
                for a, b in pairs:
                    yield {"file": _fs.redact(name), "problem": problem, first: a, second: b}
        for path, position, detail in self.invalid_batches:
            yield {"file": _fs.redact(path), "problem": "invalidBatch", "position": position, "detail": detail}
        for path, message in self.errors:
            yield {"file": _fs.redact(path), "problem": "error", "message": _fs.redact(message)}


def _bool(value: bool) -> str:
    return "true" if value else "false"


def _utf8(data: bytes) -> str:
    return java_utf8(data)  # StringDecoder: new String(bytes, UTF_8), whose U+FFFD rule differs from Python's


def _optional_long(value: int | None) -> str:
    """Java's ``OptionalLong.toString``: DumpLogSegments prints ``deleteHorizonMs`` and ``currentTxnFirstOffset``
    as the ``java.util.OptionalLong`` they are."""
    return "OptionalLong.empty" if value is None else f"OptionalLong[{value}]"


def batch_line(header: BatchHeader, position: int, valid: bool) -> str:
    """``printBatchLevel``: the batch-level line, in DumpLogSegments' field order."""
    if header.magic >= 2:
        head = (f"baseOffset: {header.base_offset} lastOffset: {header.last_offset} count: {header.records_count} "
                f"baseSequence: {header.base_sequence} lastSequence: {header.last_sequence} "
                f"producerId: {header.producer_id} producerEpoch: {header.producer_epoch} "
                f"partitionLeaderEpoch: {header.partition_leader_epoch} "
                f"isTransactional: {_bool(header.is_transactional)} isControl: {_bool(header.is_control)} "
                f"deleteHorizonMs: {_optional_long(header.delete_horizon_ms if header.has_delete_horizon else None)}")
    else:
        head = f"offset: {header.last_offset}"
    return (f"{head} position: {position} {TIMESTAMP_TYPE_NAMES[header.timestamp_type]}: {header.max_timestamp} "
            f"size: {header.size} magic: {header.magic} compresscodec: {header.codec_name} crc: {header.crc} "
            f"isvalid: {_bool(valid)}")


def batch_json(header: BatchHeader, position: int, valid: bool) -> dict:
    return {"baseOffset": header.base_offset, "lastOffset": header.last_offset, "count": header.records_count,
            "baseSequence": header.base_sequence, "lastSequence": header.last_sequence,
            "producerId": header.producer_id, "producerEpoch": header.producer_epoch,
            "partitionLeaderEpoch": header.partition_leader_epoch, "isTransactional": header.is_transactional,
            "isControl": header.is_control, "deleteHorizonMs": header.delete_horizon_ms, "position": position,
            "timestampType": TIMESTAMP_TYPE_NAMES[header.timestamp_type], "maxTimestamp": header.max_timestamp,
            "size": header.size, "magic": header.magic, "compresscodec": header.codec_name, "crc": header.crc,
            "isvalid": valid}


# -- records of one batch ---------------------------------------------------------------------------------------

@dataclass
class _Record:
    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    sequence: int
    header_keys: list
    legacy_crc: int | None = None
    legacy_valid: bool | None = None


def _legacy_inner(data: bytes, header: BatchHeader) -> list[tuple[int, bool]]:
    """Inner legacy messages' (crc, isValid) in their order (for ``isValid: .. crc: ..`` on magic 0/1 records).
    The decoder returns a wrapper's records in that order, so the n-th pairs with the n-th whatever offset rule
    placed them (a v1 wrapper at offset 0 keeps its inner offsets as they are: DeepRecordsIterator)."""
    from kafkaseg import codecs
    from kafkaseg.wire.batch import iter_headers

    if header.codec == 0:
        return [(header.crc, crc_is_valid(data, header._replace(position=0)))]
    key_len_at = 18 if header.magic == 0 else 26  # offset 8, size 4, crc 4, magic 1, attributes 1, (timestamp 8)
    (key_len,) = struct.unpack_from(">i", data, key_len_at)
    value_at = key_len_at + 4 + max(key_len, 0)
    (value_len,) = struct.unpack_from(">i", data, value_at)
    inner = codecs.decompress(header.codec, memoryview(data)[value_at + 4:value_at + 4 + max(value_len, 0)],
                              max_output=256 << 20, magic=header.magic)
    inner = bytes(inner)
    return [(entry.crc, crc_is_valid(inner, entry)) for entry in iter_headers(inner)]


def _batch_max_timestamp(data: bytes, header: BatchHeader, path: str) -> int:
    """The largest record timestamp of a batch as its records give them (DumpLogSegments.dumpTimeIndex iterates
    them: a LogAppendTime batch's records carry its max timestamp), -1 for none; decoded into one Arrow column,
    with no Python object per record."""
    request = DecodeRequest(path=path, base_position=header.position, verify_crc=False, include_control=True,
                            include_key=False, include_value=False, max_batch_bytes=max(len(data), 1 << 20),
                            timestamp_unit="ms", allow_unordered_inner_offsets=True)
    stamps = decode(memoryview(data), request).columns["timestamp"].cast(pa.int64())
    largest = pc.max(stamps).as_py()
    return -1 if largest is None else max(largest, -1)


def _unordered_legacy_records(data: bytes, header: BatchHeader, path: str) -> list[_Record]:
    """After a batch failed to decode: a compressed legacy wrapper whose inner offsets repeat or go back (which
    readers refuse; the caller reports the error) as DumpLogSegments prints it, every inner record in stored order
    at the offset DeepRecordsIterator gives it (its non-consecutive report then lists the steps back). [] for a
    batch that fails for another reason."""
    if header.magic >= 2 or header.codec == 0:
        return []
    try:
        return _batch_records(data, header, path, unordered_inner_offsets=True)
    except KafkaSegError:
        return []


def _batch_records(data: bytes, header: BatchHeader, path: str, *,
                   unordered_inner_offsets: bool = False) -> list[_Record]:
    request = DecodeRequest(path=path, base_position=header.position, verify_crc=False, include_control=True,
                            include_headers=True, include_metadata=True, max_batch_bytes=max(len(data), 1 << 20),
                            timestamp_unit="ms", allow_unordered_inner_offsets=unordered_inner_offsets)
    result = decode(memoryview(data), request)
    cols = result.columns
    offsets = cols["offset"].to_pylist()
    # milliseconds as they are, as DumpLogSegments prints record.timestamp (negative or beyond +-9.2e15 included);
    # a v1 message inside a v0 wrapper has its own (LegacyRecord.timestamp), printed beside the wrapper's
    # NoTimestampType, as the time-index check compares it
    stamps = cols["timestamp"].cast(pa.int64()).to_pylist()
    keys = cols["key"].to_pylist()
    values = cols["value"].to_pylist()
    sequences = cols["sequence"].to_pylist()
    # header keys only, as one flat list sliced per record (a dict per header cost ~340 bytes)
    header_column = cols["headers"]
    header_ends = header_column.offsets.to_pylist()
    header_keys = header_column.values.field("key").to_pylist()
    legacy = []
    if header.magic < 2:
        try:
            legacy = _legacy_inner(data, header)
        except (KafkaSegError, struct.error):  # the decode above reported what matters; no inner CRCs then
            legacy = []
    if len(legacy) != len(offsets):
        legacy = [(None, None)] * len(offsets)
    records = []
    for i, offset in enumerate(offsets):
        keys_of = header_keys[header_ends[i]:header_ends[i + 1]]
        crc, ok = legacy[i]
        records.append(_Record(offset, stamps[i], keys[i], values[i], sequences[i], keys_of, crc, ok))
    return records


def _size(data: bytes | None) -> int:
    return -1 if data is None else len(data)


def _parse_data(key: bytes | None, value: bytes | None, offset: int,
                options: DumpOptions) -> tuple[str | None, str | None]:
    if options.decoder == "offsets":
        return format_offsets_record(key, value, offset)
    if options.decoder == "share-group-state":
        return format_share_group_state_record(key, value, offset)
    if options.decoder == "transaction":
        return format_transaction_record(key, value, offset)
    if options.decoder == "cluster-metadata":
        try:
            text = to_json(decode_metadata_record(value).as_json_object())
        except KafkaSegError as err:
            text = f"Error at {offset}, skipping. {err}"
        return None, text
    if options.decoder == "remote-log-metadata":  # RemoteMetadataLogMessageParser: the value's object; no key
        return None, format_remote_log_metadata_record(value, offset)
    return (None if key is None else _utf8(key),
            None if value is None else _utf8(value))


def _control_text(record: _Record) -> str:
    try:
        control = decode_control_record(record.key, record.value)
    except KafkaSegError as err:
        return f" controlType: UNKNOWN({err})"
    if control.type_id in (0, 1):
        return f" endTxnMarker: {control.type_name} coordinatorEpoch: {control.coordinator_epoch}"
    labels = {2: "LeaderChange:", 3: "SnapshotHeader", 4: "SnapshotFooter", 5: "KRaftVersion", 6: "KRaftVoters"}
    if control.type_id in labels and control.data is not None:
        return f" {labels[control.type_id]} {to_json(control.data)}"
    return f" controlType: {control.type_name}({control.type_id})"


def record_line(record: _Record, header: BatchHeader, options: DumpOptions) -> str:
    """One ``| offset: ...`` line as DumpLogSegments prints it."""
    prefix = f"{RECORD_INDENT} "
    parts = []
    if not options.skip_record_metadata:
        parts.append(f"{prefix}offset: {record.offset} {TIMESTAMP_TYPE_NAMES[header.timestamp_type]}: "
                     f"{record.timestamp} keySize: {_size(record.key)} valueSize: {_size(record.value)}")
        prefix = " "
        if header.magic >= 2:
            parts.append(f" sequence: {record.sequence} headerKeys: [{','.join(record.header_keys)}]")
        if header.magic < 2 and record.legacy_crc is not None:
            parts.append(f" isValid: {_bool(bool(record.legacy_valid))} crc: {record.legacy_crc}")
        if header.is_control:
            parts.append(_control_text(record))
    if options.should_print_data and not header.is_control:
        key, payload = _parse_data(record.key, record.value, record.offset, options)
        if key is not None:
            parts.append(f"{prefix}key: {key}")
            prefix = " "
        if payload is not None:
            parts.append(f"{prefix}payload: {payload}")
    return "".join(parts)


def record_json(record: _Record, header: BatchHeader, options: DumpOptions) -> dict:
    out = {"offset": record.offset, "timestamp": record.timestamp, "keySize": _size(record.key),
           "valueSize": _size(record.value)}
    if header.magic >= 2:
        out["sequence"] = record.sequence
        out["headerKeys"] = record.header_keys
    if header.is_control:
        try:
            control = decode_control_record(record.key, record.value)
            out["controlType"] = control.type_name
            if control.coordinator_epoch is not None:
                out["coordinatorEpoch"] = control.coordinator_epoch
            if control.data is not None:
                out["control"] = control.data
        except KafkaSegError as err:
            out["controlError"] = str(err)
    else:
        out.update(_data_json(record.key, record.value, record.offset, options))
    return out


def _data_json(key: bytes | None, value: bytes | None, offset: int, options: DumpOptions) -> dict:
    """A data record's ``key`` and ``payload`` members of its ``--json`` object (none without printed data)."""
    if options.decoder == "remote-log-metadata":  # the payload's fields as an object (an error line as text)
        return {"payload": remote_log_metadata_json(value, offset)}
    out: dict = {}
    if options.should_print_data:
        key_text, payload = _parse_data(key, value, offset, options)
        for name, text in (("key", key_text), ("payload", payload)):
            if text is None:
                continue
            try:
                out[name] = json.loads(text) if options.decoder in _JSON_DECODERS else text
            except ValueError:
                out[name] = text
    return out


# -- the records of a .log's batches, in walk order -------------------------------------------------------------

# Output of v2 data batches is built column-wise: a chunk of batches goes through the compiled decoder at once and
# its record lines (or, with --json, each batch's object with its records') are joined from the Arrow columns, with
# no Python object per record. Legacy wrappers (their inner CRCs), control batches (their markers' details), and a
# chunk the decoder refuses (the per-batch path then reports each batch's error as before) take the per-record path.
# Both print the same bytes (tests/test_dump_columnar.py compares them with this switched off).
_COLUMNAR = True
_CHUNK_BYTES = 4 << 20  # stored batch bytes decoded at once
_CHUNK_DECODED_BYTES = 32 << 20  # key and value bytes per decode call (it ends after the batch that passes it)
_CHUNK_RECORDS = 1 << 16  # records per decode call (likewise): their text and columns are held at once


class _DeepWalk:
    """``--deep-iteration``: the records of the batches the walk hands over, printed in order, and the offset
    before each (DumpLogSegments' non-consecutive check) carried across batches whichever path prints them."""

    def __init__(self, path: str, located: str, options: DumpOptions, report: DumpReport, out):
        self.path, self.located, self.options, self.report, self.out = path, located, options, report, out
        self.last_offset = -1
        # v2 data batches not printed yet, with their lines (with --json, their objects' batch fields)
        self.pending: list[tuple[BatchHeader, bytes, str | dict]] = []
        self.pending_bytes = 0

    def add_batch(self, header: BatchHeader, data: bytes, line: str | dict) -> None:
        """Print ``line`` (the batch's; with ``--json`` its object's batch fields) and its records, now or with the
        chunk it joins."""
        if _COLUMNAR and header.magic >= 2 and not header.is_control:
            self.pending.append((header, data, line))
            self.pending_bytes += len(data)
            if self.pending_bytes >= _CHUNK_BYTES:
                self.flush()
            return
        self.flush()
        self._print_batch(header, data, line)

    def flush(self) -> None:
        pending, self.pending, self.pending_bytes = self.pending, [], 0
        if pending:
            self._print_chunk(pending)

    def each_record(self, header: BatchHeader, data: bytes):
        """The batch's records as objects (after an error is reported, those Kafka's deep iterator still gives)."""
        try:
            records = _batch_records(data, header, self.path)
        except KafkaSegError as err:
            self.report.errors.append((self.path, _unnamed(err, self.path, self.located)))
            records = _unordered_legacy_records(data, header, self.path)
        for record in records:
            # (Kafka 4.3's Java port checks the first record against -1 too, so that every segment not starting
            # at offset 0 reports a step from -1 that is no gap; its Scala tool, up to 4.2, did not)
            if self.last_offset != -1 and record.offset != self.last_offset + 1:
                self.report.non_consecutive.setdefault(self.located, []).append((self.last_offset, record.offset))
            self.last_offset = record.offset
            yield record

    def _print_batch(self, header: BatchHeader, data: bytes, line: str | dict) -> None:
        if self.options.json:
            batch = {**line, "records": [record_json(record, header, self.options)
                                         for record in self.each_record(header, data)]}
            print(json.dumps(batch, ensure_ascii=False), file=self.out)
            return
        print(line, file=self.out)
        for record in self.each_record(header, data):
            print(record_line(record, header, self.options), file=self.out)

    def _print_chunk(self, pending: list) -> None:
        """Decode the batches' bytes as one buffer, a call at a time, printing each call's batches; from a call
        the decoder refuses (or one whose lines cannot be built: a decoder's error) on, batch by batch."""
        buf = b"".join(data for _, data, _ in pending)
        starts, at = [], 0
        for _, data, _ in pending:
            starts.append(at)
            at += len(data)
        request = DecodeRequest(path=self.path, base_position=0, verify_crc=False, include_control=True,
                                include_headers=True, include_metadata=True,
                                max_batch_bytes=max(max(len(d) for _, d, _ in pending), 1 << 20),
                                max_bytes=_CHUNK_DECODED_BYTES, max_records=_CHUNK_RECORDS, timestamp_unit="ms")
        done = 0  # pending batches printed
        view = memoryview(buf)
        while done < len(pending):
            first = starts[done]
            try:
                result = decode(view[first:], _replace(request, base_position=first))
                if result.stop not in (STOP_END, STOP_LIMIT) or result.consumed <= 0:
                    break
                upto = bisect.bisect_left(starts, first + result.consumed, done)
                if upto < len(pending) and starts[upto] != first + result.consumed:
                    break  # (not at a batch boundary: never, but then the batches are not what was walked)
                chunk_text = _chunk_json if self.options.json else _chunk_text
                text, steps, last = chunk_text(result.columns, pending[done:upto], starts[done:upto], self.options,
                                               self.last_offset)
            # (2 GiB of text from one batch, a decoder's text Arrow cannot hold: record by record)
            except (KafkaSegError, pa.ArrowCapacityError, UnicodeEncodeError):
                break
            self.out.write(text)
            if steps:
                self.report.non_consecutive.setdefault(self.located, []).extend(steps)
            self.last_offset = last
            done = upto
        for header, data, line in pending[done:]:
            self._print_batch(header, data, line)


def _chunk_bounds(cols: dict, starts: list, last_offset: int) -> tuple[list, list, int]:
    """Where each batch's records begin in the decoded columns (and where the last ends), the (offset, next
    offset) steps that are not +1 and the last offset; ``last_offset`` is the one before them."""
    offsets = cols["offset"]
    count = len(offsets)
    positions = cols["position"].to_numpy(zero_copy_only=False)
    bounds = np.searchsorted(positions, np.asarray(starts + [starts[-1] + 1], dtype=np.int64)).tolist()
    bounds[-1] = count
    numbers = offsets.to_numpy(zero_copy_only=False)
    before = np.empty(count, dtype=np.int64)
    if count:
        before[0] = last_offset
        before[1:] = numbers[:-1]
        last_offset = int(numbers[-1])
    # (no overflow: the decoder keeps a record's offset within its batch's, and the walk refuses a last offset
    # of 2**63 - 1)
    stepped = (before != -1) & (numbers != before + 1)
    where = np.flatnonzero(stepped)
    return bounds, list(zip(before[where].tolist(), numbers[where].tolist())), last_offset


def _chunk_text(cols: dict, batches: list, starts: list, options: DumpOptions, last_offset: int):
    """The text of ``batches`` (each line and its records' lines) from their decoded columns, the
    (offset, next offset) steps that are not +1 and the last offset; ``last_offset`` is the one before them."""
    bounds, steps, last_offset = _chunk_bounds(cols, starts, last_offset)
    count = len(cols["offset"])
    # the chunk's text as one column: a batch's line (with those of record-less batches before it) heads its
    # first record's line; record-less batches at the end follow the column's text
    heads, head_rows, waiting = [], [], ""
    for i, (_, _, line) in enumerate(batches):
        waiting += line + "\n"
        if bounds[i + 1] > bounds[i]:
            heads.append(waiting)
            head_rows.append(bounds[i])
            waiting = ""
    lines = _record_lines(cols, batches, bounds, options, _at_rows(heads, head_rows, count, ""))
    return _all_text(lines) + waiting, steps, last_offset


def _at_rows(values: list, rows: list, count: int, other: str) -> pa.Array:
    """A string column of ``count`` rows: ``values[k]`` at row ``rows[k]``, ``other`` at every other row."""
    which = np.full(count, len(values), dtype=np.int64)
    which[rows] = np.arange(len(values))
    return pa.array(values + [other], pa.string()).take(which)


def _chunk_json(cols: dict, batches: list, starts: list, options: DumpOptions, last_offset: int):
    """:func:`_chunk_text` for ``--json``: each batch's object line (``json.dumps`` of its fields and its records'
    objects) from the decoded columns."""
    bounds, steps, last_offset = _chunk_bounds(cols, starts, last_offset)
    count = len(cols["offset"])
    # a batch's fields and '"records": [' head its first record, ", " the others, "]}" and the newline end its last;
    # record-less batches' whole lines wait for the next head (or follow the column's text)
    heads, head_rows, waiting = [], [], ""
    last_rows = np.zeros(count, dtype=np.int8)
    for i, (_, _, fields) in enumerate(batches):
        if bounds[i + 1] > bounds[i]:
            heads.append(waiting + json.dumps(fields, ensure_ascii=False)[:-1] + ', "records": [')
            head_rows.append(bounds[i])
            last_rows[bounds[i + 1] - 1] = 1
            waiting = ""
        else:
            waiting += json.dumps({**fields, "records": []}, ensure_ascii=False) + "\n"
    before = _at_rows(heads, head_rows, count, ", ")
    after = pa.array(["", "]}\n"], pa.string()).take(last_rows)
    lines = pc.binary_join_element_wise(before, _record_objects(cols, options), after, "")
    return _all_text(lines) + waiting, steps, last_offset


def _record_objects(cols: dict, options: DumpOptions) -> pa.Array:
    """``json.dumps(record_json(...))`` of every record of v2 data batches, as one string column."""
    headers = cols["headers"]
    quoted_keys = _json_strings(headers.values.field("key"))
    header_keys = pc.binary_join(pa.ListArray.from_arrays(headers.offsets, quoted_keys), ", ")
    parts: list = ['{"offset": ', _text(cols["offset"]), ', "timestamp": ', _text(cols["timestamp"].cast(pa.int64())),
                   ', "keySize": ', _size_text(cols["key"]), ', "valueSize": ', _size_text(cols["value"]),
                   ', "sequence": ', _text(cols["sequence"]), ', "headerKeys": [', header_keys, "]"]
    if options.decoder is not None:  # the decoders' objects, parsed in Python as the per-record path does
        members = [json.dumps(_data_json(key, value, offset, options), ensure_ascii=False)[1:-1]
                   for key, value, offset in zip(cols["key"].to_pylist(), cols["value"].to_pylist(),
                                                 cols["offset"].to_pylist())]
        parts.append(pa.array([", " + m if m else "" for m in members], pa.string()))
    elif options.should_print_data:  # null (no key): no member ("" in the join)
        for name, column in (("key", cols["key"]), ("payload", cols["value"])):
            parts.append(pc.binary_join_element_wise(f', "{name}": ', _json_strings(_java_text(column)), ""))
    parts.append("}")
    return pc.binary_join_element_wise(*parts, "", null_handling="replace", null_replacement="")


_JSON_ESCAPED = r'[\x00-\x1f"\\]'  # what json.dumps(ensure_ascii=False) escapes in a string


def _json_strings(column: pa.Array) -> pa.Array:
    """A string column's values as ``json.dumps(value, ensure_ascii=False)`` writes them (nulls stay null):
    quotes and backslashes escaped column-wise, values with control characters (rare) by ``json.dumps``."""
    if pc.any(pc.match_substring_regex(column, _JSON_ESCAPED)).as_py():
        escaped = pc.replace_substring(pc.replace_substring(column, "\\", "\\\\"), '"', '\\"')
        control = pc.fill_null(pc.match_substring_regex(column, r"[\x00-\x1f]"), False)
        if pc.any(control).as_py():
            values = column.filter(control).to_pylist()
            escaped = pc.replace_with_mask(escaped, control, pa.array(
                [json.dumps(value, ensure_ascii=False)[1:-1] for value in values], pa.string()))
        column = escaped
    return pc.binary_join_element_wise('"', column, '"', "")


def _all_text(column: pa.Array) -> str:
    """The strings of ``column`` (no nulls) one after the other, from its data buffer."""
    if len(column) == 0:
        return ""
    ends = np.frombuffer(column.buffers()[1], dtype=np.int32, count=len(column) + 1, offset=4 * column.offset)
    return str(memoryview(column.buffers()[2])[int(ends[0]):int(ends[-1])], "utf-8")


def _record_lines(cols: dict, batches: list, bounds: list, options: DumpOptions, heads: pa.Array) -> pa.Array:
    """``heads`` then ``record_line`` and its newline for every record of v2 data batches, as one string column
    (unsliced: its data buffer is the text of all)."""
    parts: list = [heads]
    key_text = payload_text = None
    if options.should_print_data:
        key_text, payload_text = _data_texts(cols, options)
    if not options.skip_record_metadata:
        # the timestamp type is the batch's (header.timestamp_type), repeated over its records
        names = pa.array([TIMESTAMP_TYPE_NAMES[header.timestamp_type] for header, _, _ in batches], pa.string())
        counts = np.diff(np.asarray(bounds, dtype=np.int64))
        type_names = names.take(pa.array(np.repeat(np.arange(len(batches)), counts)))
        headers = cols["headers"]
        header_keys = pc.binary_join(pa.ListArray.from_arrays(headers.offsets, headers.values.field("key")), ",")
        parts += ["| offset: ", _text(cols["offset"]), " ", type_names, ": ",
                  _text(cols["timestamp"].cast(pa.int64())), " keySize: ", _size_text(cols["key"]),
                  " valueSize: ", _size_text(cols["value"]), " sequence: ", _text(cols["sequence"]),
                  " headerKeys: [", header_keys, "]"]
    if key_text is not None:  # null: nothing printed ("" in the join)
        key_prefix = "| " if options.skip_record_metadata else " "
        keys_all_there = key_text.null_count == 0
        payload_prefix = (" " if keys_all_there or not options.skip_record_metadata
                          else pc.if_else(key_text.is_null(), "| ", " "))
        for prefix, label, text in ((key_prefix, "key: ", key_text), (payload_prefix, "payload: ", payload_text)):
            if text.null_count == 0 and isinstance(prefix, str):
                parts += [prefix + label, text]
            else:
                parts.append(pc.binary_join_element_wise(prefix, label, text, ""))
    # (--skip-record-metadata alone: an empty line per record)
    return pc.binary_join_element_wise(*parts, "\n", "", null_handling="replace", null_replacement="")


def _text(column: pa.Array) -> pa.Array:
    return column.cast(pa.string())


def _size_text(column: pa.Array) -> pa.Array:
    return pc.fill_null(pc.binary_length(column), -1).cast(pa.string())  # -1: null, as _size


def _data_texts(cols: dict, options: DumpOptions) -> tuple[pa.Array, pa.Array]:
    """The key and payload texts ``_parse_data`` gives (null: not printed)."""
    if options.decoder is None:
        return _java_text(cols["key"]), _java_text(cols["value"])
    texts = [_parse_data(key, value, offset, options) for key, value, offset
             in zip(cols["key"].to_pylist(), cols["value"].to_pylist(), cols["offset"].to_pylist())]
    return (pa.array([key for key, _ in texts], pa.string()),
            pa.array([payload for _, payload in texts], pa.string()))


def _java_text(column: pa.Array) -> pa.Array:
    """A binary column as StringDecoder decodes it (:func:`_utf8`): valid UTF-8 as it is, else value by value."""
    try:
        return column.cast(pa.string())  # validates: raises for any value that is not UTF-8
    except pa.ArrowInvalid:
        return pa.array([None if value is None else _utf8(value) for value in column.to_pylist()], pa.string())


# -- file kinds -----------------------------------------------------------------------------------------------

def _dump_log(path: str, options: DumpOptions, report: DumpReport, out, progress, filesystem, located: str) -> None:
    name = _fs.basename(located)
    if name.endswith(".log"):
        start = _name_offset(name, located)
        header_line = f"Log starting offset: {start}" if start is not None else _unnamed_log_start(name, located,
                                                                                                  filesystem)
    elif name == BOOTSTRAP_CHECKPOINT:
        header_line = "KRaft bootstrap snapshot"
    else:  # (Snapshots.parse(...).get(): the name's parse fails the tool, as it does the broker)
        end_offset, epoch = kraft_snapshot_id(name, _fs.redact(located))
        header_line = f"Snapshot end offset: {end_offset}, epoch: {epoch}"
    if options.json:
        print(json.dumps({"file": _fs.redact(path), "info": header_line}), file=out)
    else:
        print(header_line, file=out)
    with SegmentReader(located, filesystem) as reader:
        limit = min(reader.size, options.max_bytes)
        valid_bytes = 0
        task = progress.add(name, limit) if progress else None
        walk = reader.iter_headers(0, None if limit >= reader.size else None, max_batch_bytes=None,
                                   partial_append=is_last_log_in_folder(located, filesystem, report.last_logs))
        records = _DeepWalk(path, located, options, report, out)
        try:
            for header in _batches_until_no_batch(walk, reader, limit):
                if header.end > limit:  # FileRecords.slice(0, maxBytes): a batch past the limit is not read
                    break
                data = reader.read_at(header.position, header.size)
                valid = crc_is_valid(data, header._replace(position=0))
                if not valid:
                    report.invalid_batches.append((path, header.position, f"CRC mismatch (stored {header.crc})"))
                if options.json and options.deep:
                    records.add_batch(header, data, batch_json(header, valid_bytes, valid))
                elif options.json:
                    print(json.dumps(batch_json(header, valid_bytes, valid), ensure_ascii=False), file=out)
                elif options.deep:
                    records.add_batch(header, data, batch_line(header, valid_bytes, valid))
                else:
                    print(batch_line(header, valid_bytes, valid), file=out)
                valid_bytes += header.size
                if task is not None:
                    progress.advance(task, header.size)
        except KafkaSegError:  # what was walked before the bad framing is printed first, as it would have been
            records.flush()
            raise
        records.flush()
        trailing = reader.size - valid_bytes
        oversized = reader.size > INT_MAX and options.max_bytes == INT_MAX
        if oversized:
            # FileRecords refuses a file past Integer.MAX_VALUE bytes, so a broker cannot load it
            report.errors.append((path, f"{reader.size} bytes, more than the {INT_MAX} a broker opens (FileRecords "
                                        "refuses such a segment)"))
        if oversized and _reaches_past(reader, valid_bytes, limit):
            # the walk stopped at the default --max-bytes: what follows is not invalid, only not dumped
            report.errors.append((path, f"dumped up to byte {valid_bytes}, where the next batch runs past "
                                        f"--max-bytes {INT_MAX}: --max-bytes {reader.size} dumps the rest"))
        elif trailing > 0 and options.max_bytes == INT_MAX:
            if walk.tail is not None and walk.tail.reason == "zero-filled tail":
                data_at = data_after_zeros(reader, valid_bytes)
                if data_at is not None:  # Kafka's own reader fails on the zero header (record size 0)
                    report.errors.append((path, f"zeros at byte {valid_bytes} end the readable batches but data "
                                                f"follows at byte {data_at}: a zeroed batch header hiding records, "
                                                "not a preallocated tail"))
            message = f"Found {trailing} invalid bytes at the end of {name}"
            if options.json:
                print(json.dumps({"file": _fs.redact(path), "invalidTrailingBytes": trailing, "position": valid_bytes}),
                      file=out)
            else:
                print(message, file=out)


def _reaches_past(reader: SegmentReader, position: int, limit: int) -> bool:
    """Whether the entry at ``position`` declares a size (at least 14, as FileLogInputStream reads it) that runs
    past ``limit``: a walk that stopped there stopped at the limit, not at bad bytes."""
    prefix = reader.read_at(position, LOG_OVERHEAD)
    if len(prefix) < LOG_OVERHEAD:
        return False
    size = int.from_bytes(prefix[8:12], "big", signed=True)
    end = position + LOG_OVERHEAD + size
    return size >= MIN_ENTRY_SIZE[0] and limit < end <= reader.size  # (past the file's end: bad bytes, not limit)


def _batches_until_no_batch(walk, reader: SegmentReader, end: int):
    """The walk's headers, ending where ``FileLogInputStream.nextBatch`` returns no batch: it reads the size field
    first and, when a size of at least 14 (LegacyRecord.RECORD_OVERHEAD_V0) runs past ``end``, stops there before
    it looks at the magic byte, so such an entry is trailing bytes (a torn header, stale blocks) whatever its
    magic. The walk itself is stricter (reads refuse an unknown magic first), so its framing error at that
    position is taken back here; any other framing error is raised."""
    try:
        yield from walk
    except CorruptDataError as exc:
        position = walk.end_position
        if exc.position != position or position + LOG_OVERHEAD > reader.size:
            raise
        (size,) = struct.unpack(">i", reader.read_at(position + 8, 4))
        if size < MIN_ENTRY_SIZE[0] or position + LOG_OVERHEAD + size <= end:
            raise


_NAME_OFFSET = re.compile(r"^(\d+)(?:-[A-Za-z0-9_-]{22})?$")  # 42, or a tiered-storage copy's 42-<segment id>


_TIERED_COPY = re.compile(r"^\d+-[A-Za-z0-9_-]{22}\.log$")


def _tiered_filesystem(path: str, filesystem, located: str, key_ring=None):
    """The filesystem a tiered-storage copy's ``.log`` reads through: its partition's, which decompresses and
    decrypts a copy Aiven's plugin stored compressed or encrypted (``tiered.ChunkedObjects``, ``key_ring``);
    ``filesystem`` when the copy is not found as one (a stray file with such a name). Raises the discovery's
    error for a copy whose manifest says it is not stored as it was (its bytes are not a log)."""
    from kafkaseg.storage.layout import discover

    try:
        found = discover([path], key_ring=key_ring)
    except KafkaSegError:
        manifest = located[:-len(".log")] + ".rsm-manifest"
        try:
            text = _fs.read_small_file(manifest, filesystem, max_bytes=4 * 1024 * 1024)
            stored = json.loads(text)
            transformed = isinstance(stored, dict) and (stored.get("compression") or stored.get("encryption"))
        except (KafkaSegError, ValueError):
            transformed = False
        if transformed:
            raise
        return filesystem
    return found[0].filesystem if len(found) == 1 and found[0].tiered is not None else filesystem


def _name_offset(name: str, located: str) -> int | None:
    """The base offset a segment file's name gives (``00000000000000000042.index``, a tiered-storage copy's
    ``00000000000000000042-<segment id>.index``: 42), None for other names. One past a 64-bit long is
    :class:`SegmentNameError` (file ``located``): Kafka's tool fails on it (``toLong``), as its broker does."""
    match = _NAME_OFFSET.match(name.split(".")[0])
    return _fitting(match.group(1), located) if match and match.group(1).isascii() else None


def _unnamed_log_start(name: str, located: str, filesystem) -> str:
    """The ``Log starting offset`` line of a ``.log`` whose name is no offset (a renamed backup, on which Kafka's
    tool fails: ``toLong``): the base offset discovery reads such a file at, its first batch's (0 without one),
    saying the name is no offset. A file that cannot be opened raises (its error is the file's only line)."""
    with SegmentReader(located, filesystem) as reader:
        try:
            first = reader.header_at(0, max_batch_bytes=None)
        except KafkaSegError:  # (the dump of its batches says what is wrong)
            first = None
    if first is None:
        return (f"Log starting offset: 0 ({name} is not named after an offset, and holds no readable batch to take "
                "one from)")
    return (f"Log starting offset: {first.base_offset} ({name} is not named after an offset: its first batch's base "
            "offset)")


def _fitting(digits: str, located: str) -> int:
    """``digits`` (a segment file name's base offset) as a number, :class:`SegmentNameError` for file ``located``
    past a long (discovery's test and words: :func:`~kafkaseg.storage.layout.offset_past_a_long`), where Kafka's
    ``Long.parseLong`` of the name fails."""
    if offset_past_a_long(digits):
        raise SegmentNameError(past_a_long_words(digits), _fs.redact(located))
    return int(digits)


def _base_offset(located: str) -> int:
    """The base offset a segment file's name gives (see :func:`_name_offset`)."""
    base = _name_offset(_fs.basename(located), located)
    if base is None:
        raise LayoutError(f"{_fs.redact(located)}: not named after a base offset (<20 digits>.index, ...), so its "
                          "entries' offsets are unknown")
    return base


def _log_for(located: str) -> str:
    return _fs.join(_fs.parent(located), _fs.basename(located).split(".")[0] + ".log")


def _as_dumped(index, zero_entry: tuple[int, int]):
    """The entries DumpLogSegments prints: it counts length / entrySize entries and stops at one holding the base
    offset only after entry 0, so an index that is all zeros (preallocated for an active segment too young for
    its first entry) still has entry 0, ``zero_entry``, which the loader drops as never written."""
    if len(index) == 0 and (index.file_size or 0) >= index.ENTRY_SIZE:
        return [zero_entry]
    return index


def _batch_from(reader: SegmentReader, position: int, end: int, offset: int | None = None) -> BatchHeader | None:
    """The first batch from ``position`` (an index entry's, not trusted) up to ``end`` whose last offset is at
    least ``offset`` (default: the first batch), or None: none there, a position outside the log (negative or
    past its end: garbage in the index) or bad framing on the way are all "not found" for the dump's reports."""
    if not 0 <= position < reader.size:
        return None
    try:
        for header in reader.iter_headers(position, min(reader.size, end), max_batch_bytes=None):
            if offset is None or header.last_offset >= offset:
                return header
    except KafkaSegError:
        pass
    return None


def _dump_index(path: str, options: DumpOptions, report: DumpReport, out, filesystem, located: str, *,
                window: tuple[int, int] | None = None) -> None:
    """An ``.index`` (or, ``window``, the offset index in those bytes of a tiered copy's ``.indexes``)."""
    base = _base_offset(located)
    if options.index_sanity_check:  # the broker's own check, which decides whether a restart rebuilds the index
        # Kafka counts entries as length / 8, a preallocated zero tail included: "is empty" only for no bytes
        entry = _fs.stat(located, filesystem)
        if entry is not None and (window[1] if window else entry.size) < 8:
            _say(out, options, path, f"{path} is empty.", empty=True)
            return
        broker_sanity_check(located, base, "offset", filesystem, window=window)
        _say(out, options, path, f"{path} passed sanity check.", sanityCheck="passed")
        return
    index = _as_dumped(OffsetIndex.load(located, base, filesystem, window=window), (base, 0))
    if len(index) == 0:  # index.entries == 0: fewer than 8 bytes
        _say(out, options, path, f"{path} is empty.", empty=True)
        return
    with SegmentReader(_log_for(located), filesystem) as reader:
        for offset, position in index:
            # FileRecords.slice(position, maxMessageSize).batches.iterator.next().lastOffset
            first = _batch_from(reader, position, position + options.max_message_size)
            first_last = -1 if first is None else first.last_offset
            if first_last != offset:
                report.index_mismatches.setdefault(located, []).append((offset, first_last))
            if not options.verify_index_only:
                if options.json:
                    print(json.dumps({"offset": offset, "position": position}), file=out)
                else:
                    print(f"offset: {offset} position: {position}", file=out)


def _dump_time_index(path: str, options: DumpOptions, report: DumpReport, out, filesystem, located: str, *,
                     window: tuple[int, int] | None = None, offset_window: tuple[int, int] | None = None) -> None:
    """A ``.timeindex`` (or, ``window``, the time index in those bytes of a tiered copy's ``.indexes``, whose
    offset index is at ``offset_window``)."""
    base = _base_offset(located)
    time_index = _as_dumped(TimeIndex.load(located, base, filesystem, window=window), (0, base))
    if options.index_sanity_check:
        broker_sanity_check(located, base, "time", filesystem, window=window)
        _say(out, options, path, f"{path} passed sanity check.", sanityCheck="passed")
        return
    if window is not None:
        offset_index = (OffsetIndex.load(located, base, filesystem, window=offset_window) if offset_window
                        else OffsetIndex.empty(base))
    else:
        index_path = _log_for(located)[:-4] + ".index"
        offset_index = (OffsetIndex.load(index_path, base, filesystem) if _fs.exists(index_path, filesystem)
                        else OffsetIndex.empty(base))
    abs_path = located
    previous = -1
    with SegmentReader(_log_for(located), filesystem) as reader:
        for timestamp, offset in time_index:
            _, position = offset_index.floor(offset)
            found = _batch_from(reader, position, reader.size, offset)  # batches.find(_.lastOffset >= offset)
            if found is None:
                report.time_offset_not_found.setdefault(abs_path, []).append((offset, -1))
            elif found.last_offset != offset:
                report.time_offset_not_found.setdefault(abs_path, []).append((offset, found.last_offset))
            else:
                max_ts = _batch_max_timestamp(reader.read_at(found.position, found.size), found, path)
                if max_ts != timestamp:
                    report.time_mismatches.setdefault(abs_path, []).append((timestamp, max_ts))
                if previous >= timestamp:
                    report.time_out_of_order.setdefault(abs_path, []).append((timestamp, previous))
            if not options.verify_index_only:
                if options.json:
                    print(json.dumps({"timestamp": timestamp, "offset": offset}), file=out)
                else:
                    print(f"timestamp: {timestamp} offset: {offset}", file=out)
            previous = timestamp


def _print_fields(out, options: DumpOptions, fields: dict, text_tail: str = "") -> None:
    """One entry as DumpLogSegments' ``name: value`` line (an ``OptionalLong`` field given as ``(value, None)``:
    Java's text for the line, the number for JSON), or with ``--json`` the same camelCase names as an object."""
    if options.json:
        print(json.dumps({k: v[0] if isinstance(v, tuple) else v for k, v in fields.items()}), file=out)
        return
    print(" ".join(f"{k}: {_optional_long(v[1]) if isinstance(v, tuple) else v}" for k, v in fields.items())
          + text_tail, file=out)


def _dump_txn_index(path: str, options: DumpOptions, out, filesystem, located: str, *,
                    window: tuple[int, int] | None = None) -> None:
    base = _base_offset(located)
    for txn in TransactionIndex.load(located, base, filesystem, window=window):
        _print_fields(out, options, {"version": txn.version, "producerId": txn.producer_id,
                                     "firstOffset": txn.first_offset, "lastOffset": txn.last_offset,
                                     "lastStableOffset": txn.last_stable_offset})


def _dump_manifest(path: str, options: DumpOptions, out, filesystem, located: str) -> None:
    """An Aiven tiered-storage copy's ``.rsm-manifest``: how its ``.log`` is stored (chunk index, compression,
    encryption), where its indexes are in its ``.indexes`` object, and the segment's remote metadata; ``--json``
    prints the manifest as it is, with the chunk sizes decoded."""
    from kafkaseg.storage import tiered

    text = _fs.read_small_file(located, filesystem, max_bytes=4 * 1024 * 1024)
    try:
        manifest = json.loads(text)
    except ValueError as err:
        raise LayoutError(f"{_fs.redact(located)}: not a JSON manifest ({err})") from err
    if not isinstance(manifest, dict):
        raise LayoutError(f"{_fs.redact(located)}: not a JSON manifest object")
    chunks = manifest.get("chunkIndex") if isinstance(manifest.get("chunkIndex"), dict) else {}
    sizes = None
    if isinstance(chunks.get("transformedChunks"), str):
        sizes = tiered.decode_chunk_sizes(chunks["transformedChunks"], located)
    if options.json:
        shown = dict(manifest)
        if sizes is not None:
            shown["chunkIndex"] = {**chunks, "transformedChunks": sizes}
        print(json.dumps(shown), file=out)
        return
    chunk_fields = {k: v for k, v in chunks.items() if k != "transformedChunks"}
    if sizes is not None:
        chunk_fields.update(chunks=len(sizes), storedBytes=sum(sizes))
    print("chunkIndex: " + " ".join(f"{k}: {v}" for k, v in chunk_fields.items()), file=out)
    print(f"compression: {str(bool(manifest.get('compression'))).lower()} "
          f"encryption: {str(manifest.get('encryption') is not None).lower()}", file=out)
    indexes = manifest.get("segmentIndexes") if isinstance(manifest.get("segmentIndexes"), dict) else {}
    print("segmentIndexes: " + " ".join(
        f"{kind}: " + ("none" if not isinstance(where, dict) else f"position {where.get('position')} size "
                                                                    f"{where.get('size')}")
        for kind, where in indexes.items()), file=out)
    metadata = manifest.get("remoteLogSegmentMetadata")
    if isinstance(metadata, dict):
        segment_id = metadata.get("remoteLogSegmentId") or {}
        tip = (segment_id.get("topicIdPartition") or {}) if isinstance(segment_id, dict) else {}
        tp = tip.get("topicPartition") or {}
        fields = {"topic": tp.get("topic"), "partition": tp.get("partition"), "topicId": tip.get("topicId"),
                  "segmentId": segment_id.get("id") if isinstance(segment_id, dict) else None,
                  **{k: metadata.get(k) for k in ("startOffset", "endOffset", "maxTimestampMs", "brokerId",
                                                   "eventTimestampMs")},
                  "segmentLeaderEpochs": metadata.get("segmentLeaderEpochs")}
        print("remoteLogSegmentMetadata: " + " ".join(f"{k}: {json.dumps(v) if isinstance(v, dict) else v}"
                                                      for k, v in fields.items()), file=out)


def _dump_packed_indexes(path: str, options: DumpOptions, report: DumpReport, out, err, filesystem,
                         located: str) -> None:
    """An Aiven tiered-storage copy's ``.indexes`` object: each index it packs, at the manifest's positions (read
    through the partition's filesystem, which decrypts an encrypted copy's), dumped as its own file would be, after
    an ``Index <kind> at bytes [start, end)`` line (``{"file", "index", "position", "size"}`` with ``--json``)."""
    from kafkaseg.storage import checkpoints as ckpt
    from kafkaseg.storage import tiered

    notes: list[str] = []
    copies = [c for c in tiered.remote_segments(_fs.list_dir(_fs.parent(located), filesystem), notes)
              if "indexes" in c.files and c.files["indexes"].path == located]
    if not copies or "rsm-manifest" not in copies[0].files:
        raise LayoutError(f"{_fs.redact(located)}: no .log and .rsm-manifest beside it: the positions of the indexes "
                          "it holds are in the manifest")
    copy = tiered.read_aiven_manifest(copies[0], filesystem, options.key_ring)
    # the indexes (decrypted) and the log they are checked against (decrypted, decompressed) as on disk
    served = tiered.chunked_filesystem(filesystem, copy.served())
    where = {kind: (position, size) for kind, position, size in copy.packed_indexes}
    for kind in ("offset", "timestamp", "producerSnapshot", "leaderEpoch", "transaction"):
        if kind not in where:
            continue
        position, size = where[kind]
        if options.json:
            print(json.dumps({"file": _fs.redact(path), "index": kind, "position": position, "size": size}), file=out)
        else:
            print(f"Index {kind} at bytes [{position}, {position + size}) of {_fs.basename(located)}", file=out)
        if kind == "offset":
            _dump_index(path, options, report, out, served, located, window=where[kind])
        elif kind == "timestamp":
            _dump_time_index(path, options, report, out, served, located, window=where[kind],
                             offset_window=where.get("offset"))
        elif kind == "transaction":
            _dump_txn_index(path, options, out, served, located, window=where[kind])
        else:
            with _fs.RandomAccessReader(located, served) as reader:
                data = reader.read_at(position, size)
            if kind == "producerSnapshot":
                if data:  # (none when the broker had no snapshot at the next segment's base)
                    _dump_producer_snapshot(path, options, out, err, served, located, data=data)
            else:
                for entry in ckpt.parse_leader_epoch_checkpoint(data, located):
                    _print_fields(out, options, {"epoch": entry.epoch, "startOffset": entry.start_offset})


def _dump_producer_snapshot(path: str, options: DumpOptions, out, err, filesystem, located: str, *,
                            data: bytes | None = None) -> None:
    # a corrupt one: an error, as Kafka's tool fails
    snapshot = read_producer_snapshot(located, filesystem) if data is None else parse_producer_snapshot(data, located)
    for e in snapshot.entries:
        # currentTxnFirstOffset is a java.util.OptionalLong in Kafka and prints as one
        txn_first = e.current_txn_first_offset
        fields = {"producerId": e.producer_id, "producerEpoch": e.epoch, "coordinatorEpoch": e.coordinator_epoch,
                  "currentTxnFirstOffset": (txn_first, txn_first if txn_first >= 0 else None),
                  "lastTimestamp": e.timestamp}
        batch = {}
        if e.last_offset >= 0:  # readSnapshot keeps batch metadata only when there was a batch
            # BatchMetadata.firstSeq = DefaultRecordBatch.decrementSequence(lastSeq, offsetDelta): wraps at Int.MAX
            batch["firstSequence"] = (e.last_sequence - e.offset_delta if e.last_sequence >= e.offset_delta
                                      else INT_MAX - e.offset_delta + e.last_sequence + 1)
        batch.update(lastSequence=e.last_sequence, lastOffset=e.last_offset, offsetDelta=e.offset_delta)
        if options.json:  # the batch metadata as read, also when Kafka's line leaves it out
            _print_fields(out, options, {**fields, **batch})
        else:
            tail = " ".join(f"{k}: {v}" for k, v in {**batch, "timestamp": e.timestamp}.items())
            _print_fields(out, options, fields, " " + tail if e.last_offset >= 0 else "")


def dump_files(files: list[str], options: DumpOptions, out=None, err=None, progress=None) -> DumpReport:
    """Dump ``files`` as DumpLogSegments does; returns what was found (also printed to ``err`` at the end)."""
    out = out or sys.stdout
    err = err or sys.stderr
    report = DumpReport()
    for path in files:
        _say(out, options, path, f"Dumping {path}")
        located = None
        try:
            # the kind is in the file's name as its filesystem names it: a URI's query (s3://b/k.log?region=...)
            # is not part of it; a local path comes back absolute (the end-of-run reports name files so)
            filesystem, located = _fs.open_filesystem(path)
            name = _fs.basename(located)
            suffix = name[name.rfind("."):] if "." in name else ""
            where = (filesystem, located)
            if suffix == ".log" and _TIERED_COPY.match(name):
                where = (_tiered_filesystem(path, filesystem, located, options.key_ring), located)
            if suffix in (".log", ".checkpoint"):
                _dump_log(path, options, report, out, progress, *where)
            elif suffix == ".index":
                _dump_index(path, options, report, out, *where)
            elif suffix == ".timeindex":
                _dump_time_index(path, options, report, out, *where)
            elif suffix == ".snapshot":
                _dump_producer_snapshot(path, options, out, err, *where)
            elif suffix == ".txnindex":
                _dump_txn_index(path, options, out, *where)
            elif suffix == ".rsm-manifest":
                _dump_manifest(path, options, out, *where)
            elif suffix == ".indexes":
                _dump_packed_indexes(path, options, report, out, err, *where)
            elif options.json:
                print(json.dumps({"file": _fs.redact(path), "problem": "ignoredUnknownFile"}), file=out)
            else:
                print(f"Ignoring unknown file {_fs.redact(path)}", file=err)
        except KafkaSegError as exc:
            report.errors.append((path, _unnamed(exc, path, located)))
    if options.json:  # stdout stays JSON lines: the end-of-run report as objects there
        for row in report.json_rows():
            print(json.dumps(row), file=out)
    else:
        report.print(err)
    return report


def _unnamed(exc: KafkaSegError, path: str, located: str | None) -> str:
    """``exc``'s message for the ``Error dumping <path>: <message>`` line (or the ``--json`` object's
    ``message``), which names the file: without the file's own name (as given or as located, which the error
    messages use: ``<file>: ...``, ``<file> @ byte N: ...``, ``cannot open <file> for reading: ... '<file>'``).
    Another file named (an index's log, a tiered copy's manifest) stays, once."""
    text = str(exc)
    names = sorted({n for n in (path, located) if n} | {_fs.redact(n) for n in (path, located) if n}, key=len,
                   reverse=True)
    for name in names:
        for head in (f"{name} @ ", f"{name}: "):
            if text.startswith(head):
                text = text[len(head):]
        text = text.replace(f" {name} ", " ").replace(f": '{name}'", "")
    repeated = re.search(r": '([^']+)'$", text)  # an OS error's copy of a file the message names already
    if repeated and text.count(repeated.group(1)) > 1:
        text = text[:repeated.start()]
    return text


def _say(out, options: DumpOptions, path: str, text: str, **fields) -> None:
    """A DumpLogSegments line, or with ``--json`` the object ``{"file": path, **fields}``."""
    if options.json:
        print(json.dumps({"file": _fs.redact(path), **fields}), file=out)
    else:
        print(_fs.redact(text), file=out)
