"""Copy a partition folder's rolled segments into a tiered-storage layout, as a broker's remote storage plugin
does (for tests and samples). Writer-side only: it parses what it needs from the files itself.

* ``layout="aiven"``: Aiven's tiered-storage-for-apache-kafka (``ObjectKeyFactory.java``,
  ``KafkaRemoteStorageManager.copyLogSegmentData``):
  ``<prefix><topic>-<topic id>/<partition>/<base:020>-<segment id>.log|.indexes|.rsm-manifest``, the segment
  stored as it was, or compressed (``compression.enabled``), encrypted (``encryption.enabled``, see
  :func:`aiven_encryptor` and :mod:`kafkaseg.storage.encryption`) or both.
* ``layout="local"``: Apache Kafka's LocalTieredStorage (``RemoteLogSegmentFileset.java``):
  ``<topic>-<partition>-<topic id>/<base:020>-<segment id>.log|.index|.timeindex|[.txnindex]|.snapshot|
  .leader_epoch_checkpoint``.

What ``RemoteLogManager.copyLogSegment`` hands the plugin for a segment whose next segment starts at ``next``:
the segment's files, the producer snapshot at ``next``, and the leader epochs starting below ``next`` (a
``leader-epoch-checkpoint`` text); the manifest's ``segmentLeaderEpochs`` are those epochs within the segment, the
first one starting at the segment's base (``LeaderEpochFileCache.epochEntriesInRange``).

What ``TopicBasedRemoteLogMetadataManager`` records of those copies in ``__remote_log_metadata``
(:func:`copy_events`, :func:`segment_event`, :func:`segment_update`, :func:`partition_deleted`,
:func:`write_remote_log_metadata`): record values built from Kafka's JSON schemas
(``storage/src/main/resources/message/RemoteLogSegmentMetadataRecord.json`` and its siblings, all v0, flexible)
in ``AbstractApiMessageSerde``'s framing (uvarint frame version 1, api key, version), with null keys.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import struct
from pathlib import Path
from typing import Sequence

import zstandard

__all__ = ["copy_to_tiered", "kafka_uuid", "KeyPairFiles", "make_key_pair", "aiven_encryptor", "segment_event",
           "segment_update", "partition_deleted", "copy_events", "write_remote_log_metadata",
           "COPY_SEGMENT_STARTED", "COPY_SEGMENT_FINISHED", "DELETE_SEGMENT_STARTED", "DELETE_SEGMENT_FINISHED"]

_CHUNK = 4 * 1024 * 1024  # Aiven's chunk.size default


def kafka_uuid(seed: str) -> str:
    """A Kafka ``Uuid`` string (base64url, no padding) derived from ``seed``; never starting with ``-``, as
    ``Uuid.randomUuid`` never does."""
    n = 0
    while True:
        text = base64.urlsafe_b64encode(hashlib.sha256(f"{seed}/{n}".encode()).digest()[:16]).decode().rstrip("=")
        if not text.startswith("-"):
            return text
        n += 1


class KeyPairFiles:
    """An RSA key pair of a test key ring: ``key_id`` and its PEM files (``public``, ``private``: PKCS#8, the
    label ``label``), as ``encryption.key.pairs.<id>.public.key.file`` / ``.private.key.file`` name them."""

    def __init__(self, key_id: str, public: Path, private: Path):
        self.key_id, self.public, self.private = key_id, public, private

    @property
    def ring_option(self) -> str:
        """The ``tieredKeyRing`` option value holding this key pair."""
        return f"{self.key_id}={self.private}"


_GENERATED: dict = {}  # (seed, bits) -> RsaKey: generating a 2048-bit key takes a good part of a second


def make_key_pair(folder: str | os.PathLike, key_id: str = "k1", *, seed: str = "kafkaseg", bits: int = 2048,
                  label: str = "PRIVATE KEY") -> KeyPairFiles:
    """Write an RSA key pair's PEM files under ``folder`` (the same key for the same ``seed`` within a process);
    ``label``: the private key's PEM label (Aiven's reader takes any: its own tests write ``SOME KEY``)."""
    from Crypto.PublicKey import RSA

    key = _GENERATED.get((seed, bits))
    if key is None:
        key = _GENERATED[(seed, bits)] = RSA.generate(bits)
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    public, private = folder / f"{key_id}-public.pem", folder / f"{key_id}-private.pem"
    public.write_bytes(key.publickey().export_key("PEM"))
    der = key.export_key("DER", pkcs=8)
    body = base64.encodebytes(der).decode().replace("\n", "")
    lines = [body[i:i + 64] for i in range(0, len(body), 64)]
    private.write_text(f"-----BEGIN {label}-----\n" + "\n".join(lines) + f"\n-----END {label}-----\n")
    return KeyPairFiles(key_id, public, private)


def aiven_encryptor(key_pair: KeyPairFiles):
    """What Aiven's plugin does to a segment's pieces with ``encryption.enabled``: a new AES-256 data key and a
    32-byte AAD for the segment, the key wrapped with the key pair's public key (RSA-OAEP, SHA3-512 for both
    hashes), each piece stored as ``iv | AES-GCM ciphertext | tag``. A callable ``pieces -> (stored pieces,
    dataKey text, aad)`` for :func:`copy_to_tiered`'s ``encryptor``."""
    from Crypto.Cipher import PKCS1_OAEP
    from Crypto.Hash import SHA3_512
    from Crypto.PublicKey import RSA
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    public = RSA.import_key(key_pair.public.read_bytes())

    def encrypt(pieces: list[bytes]) -> tuple[list[bytes], str, bytes]:
        data_key, aad = os.urandom(32), os.urandom(32)
        wrapped = PKCS1_OAEP.new(public, hashAlgo=SHA3_512).encrypt(data_key)
        stored = []
        for piece in pieces:
            iv = os.urandom(12)
            stored.append(iv + AESGCM(data_key).encrypt(iv, piece, aad))
        return stored, f"{key_pair.key_id}:{base64.b64encode(wrapped).decode()}", aad

    return encrypt


def _epochs(folder: Path) -> list[tuple[int, int]]:
    path = folder / "leader-epoch-checkpoint"
    if not path.exists():
        return []
    lines = path.read_text().split("\n")
    count = int(lines[1])
    return [(int(a), int(b)) for a, b in (line.split() for line in lines[2:2 + count])]


def _epoch_text(entries: list[tuple[int, int]]) -> bytes:
    return ("0\n" + f"{len(entries)}\n" + "".join(f"{e} {s}\n" for e, s in entries)).encode()


def _last_offset(log: bytes) -> int | None:
    """The last offset of a segment's batches (v2: base + lastOffsetDelta; legacy: the entry's offset)."""
    position, last = 0, None
    while position + 17 <= len(log):
        offset, length = struct.unpack_from(">qi", log, position)
        magic = log[position + 16]
        last = offset + struct.unpack_from(">i", log, position + 23)[0] if magic == 2 else offset
        position += 12 + length
    return last


def _chunk_sizes_field(sizes: list[int]) -> str:
    """A variable chunk index's ``transformedChunks`` (ChunkSizesBinaryCodec.encode, zstd with content size,
    base64)."""
    if len(sizes) <= 1:
        raw = struct.pack(">i", len(sizes)) + b"".join(struct.pack(">i", s) for s in sizes)
    else:
        base = min(sizes[:-1])
        width = max(max(1, ((s - base).bit_length() + 7) // 8) for s in sizes[:-1])
        raw = (struct.pack(">iib", len(sizes), base, width)
               + b"".join((s - base).to_bytes(width, "big") for s in sizes[:-1]) + struct.pack(">i", sizes[-1]))
    return base64.b64encode(zstandard.ZstdCompressor(write_content_size=True).compress(raw)).decode()


def copy_to_tiered(partition_folder: str | os.PathLike, root: str | os.PathLike, *, layout: str = "aiven",
                   prefix: str = "", topic_id: str | None = None, include_last: bool = False,
                   segment_ids: dict[int, str] | None = None, compression: bool = False,
                   chunk_size: int = _CHUNK, encryptor=None) -> list[Path]:
    """Copy the rolled segments of ``partition_folder`` (``<topic>-<partition>``; the last segment too with
    ``include_last``) under ``root`` in ``layout`` (``"aiven"`` or ``"local"``). ``topic_id`` defaults to the
    folder's ``partition.metadata`` one, else one derived from the topic name; ``segment_ids`` picks a segment's
    id by base offset. ``compression`` (Aiven): stored as ``chunk_size`` chunks, each one zstd frame with its
    content size (``compression.enabled``). ``encryptor`` (Aiven; :func:`aiven_encryptor`): stored encrypted
    (``encryption.enabled``): each chunk (compressed or not) and each index encrypted on its own. Returns the
    ``.log`` copies written."""
    folder = Path(partition_folder)
    topic, _, partition = folder.name.rpartition("-")
    if topic_id is None:
        metadata = folder / "partition.metadata"
        topic_id = (metadata.read_text().split("topic_id:")[1].split()[0] if metadata.exists()
                    else kafka_uuid(topic))
    bases = sorted(int(p.name[:-4]) for p in folder.glob("*.log") if p.name[:-4].isdigit())
    epochs = _epochs(folder)
    written = []
    for i, base in enumerate(bases):
        if i + 1 == len(bases) and not include_last:
            break
        stem = folder / f"{base:020d}"
        log = (stem.with_suffix(".log")).read_bytes()
        following = bases[i + 1] if i + 1 < len(bases) else (_last_offset(log) or base - 1) + 1
        segment_id = (segment_ids or {}).get(base) or kafka_uuid(f"{folder}/{base}")
        name = f"{base:020d}-{segment_id}"

        def side(suffix: str) -> bytes | None:
            path = stem.with_suffix(suffix)
            return path.read_bytes() if path.exists() else None

        snapshot = (folder / f"{following:020d}.snapshot")
        snapshot_bytes = snapshot.read_bytes() if snapshot.exists() else b""
        below = [(e, s) for e, s in epochs if s < following]
        if layout == "local":
            target = Path(root) / f"{topic}-{partition}-{topic_id}"
            target.mkdir(parents=True, exist_ok=True)
            for suffix, data in ((".log", log), (".index", side(".index") or b""),
                                 (".timeindex", side(".timeindex") or b""), (".txnindex", side(".txnindex")),
                                 (".snapshot", snapshot_bytes), (".leader_epoch_checkpoint", _epoch_text(below))):
                if data is not None:
                    (target / (name + suffix)).write_bytes(data)
        elif layout == "aiven":
            target = Path(root) / f"{prefix}{topic}-{topic_id}" / partition
            target.mkdir(parents=True, exist_ok=True)
            chunks = [log[i:i + chunk_size] for i in range(0, len(log), chunk_size)]
            if compression:
                compressor = zstandard.ZstdCompressor(write_content_size=True)
                chunks = [compressor.compress(chunk) for chunk in chunks]
            txn = side(".txnindex")
            indexes = [("offset", side(".index") or b""), ("timestamp", side(".timeindex") or b""),
                       ("producerSnapshot", snapshot_bytes), ("leaderEpoch", _epoch_text(below)),
                       ("transaction", txn)]
            encryption = None
            if encryptor is not None:  # one data key for the segment: its chunks, then each non-empty index
                pieces = chunks + [data for _, data in indexes if data]
                stored, wrapped, aad = encryptor(pieces)
                encrypted = iter(stored[len(chunks):])
                chunks = stored[:len(chunks)]
                indexes = [(kind, next(encrypted) if data else data) for kind, data in indexes]
                encryption = {"dataKey": wrapped, "aad": base64.b64encode(aad).decode()}
            (target / (name + ".log")).write_bytes(b"".join(chunks))
            if compression:
                chunk_index = {"type": "variable", "originalChunkSize": chunk_size, "originalFileSize": len(log),
                               "transformedChunks": _chunk_sizes_field([len(c) for c in chunks])}
            else:
                final = len(chunks[-1]) if chunks else 0
                chunk_index = {"type": "fixed", "originalChunkSize": chunk_size, "originalFileSize": len(log),
                               "transformedChunkSize": chunk_size + (28 if encryption else 0),
                               "finalTransformedChunkSize": final}
            packed, positions = b"", {}
            for kind, data in indexes:
                if data is None:
                    positions[kind] = None
                    continue
                positions[kind] = {"position": len(packed), "size": len(data)}
                packed += data
            (target / (name + ".indexes")).write_bytes(packed)
            within = [(e, max(s, base)) for e, s in below if not any(s2 <= base for e2, s2 in below if e2 > e)]
            manifest = {
                "version": "1",
                "chunkIndex": chunk_index,
                "segmentIndexes": positions,
                "compression": compression,
                **({"encryption": encryption} if encryption else {}),
                "remoteLogSegmentMetadata": {
                    "remoteLogSegmentId": {"topicIdPartition": {"topicId": topic_id, "topicPartition": {
                        "topic": topic, "partition": int(partition)}}, "id": segment_id},
                    "startOffset": base, "endOffset": following - 1, "maxTimestampMs": 0, "brokerId": 0,
                    "eventTimestampMs": 0, "segmentLeaderEpochs": {str(e): s for e, s in within}},
            }
            (target / (name + ".rsm-manifest")).write_text(json.dumps(manifest))
        else:
            raise ValueError(f"layout {layout!r}: 'aiven' or 'local'")
        written.append(target / (name + ".log"))
    return written


# -- __remote_log_metadata ---------------------------------------------------------------------------------------

COPY_SEGMENT_STARTED, COPY_SEGMENT_FINISHED, DELETE_SEGMENT_STARTED, DELETE_SEGMENT_FINISHED = range(4)


def _compact(data: bytes | None) -> bytes:
    """A compact (flexible-version) string or bytes: uvarint length + 1, 0 for null."""
    from kafkaseg.testing.writer import _uvarint

    return b"\x00" if data is None else _uvarint(len(data) + 1) + data


def _uuid(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _topic_id_partition(topic: str, topic_id: str, partition: int) -> bytes:
    # TopicIdPartitionEntry: Name string, Id uuid, Partition int32, no tagged fields
    return _compact(topic.encode()) + _uuid(topic_id) + struct.pack(">i", partition) + b"\x00"


def _segment_id(topic: str, topic_id: str, partition: int, segment_id: str) -> bytes:
    # RemoteLogSegmentIdEntry: TopicIdPartition, Id uuid, no tagged fields
    return _topic_id_partition(topic, topic_id, partition) + _uuid(segment_id) + b"\x00"


def segment_event(topic: str, topic_id: str, partition: int, segment_id: str, start: int, end: int,
                  epochs: list[tuple[int, int]], *, state: int = COPY_SEGMENT_STARTED, size: int = 0,
                  broker: int = 1, time_ms: int = 0) -> bytes:
    """A ``RemoteLogSegmentMetadataRecord`` value (api key 0): a copy's upload began (``epochs``: (leader epoch,
    start offset) within the copy)."""
    from kafkaseg.testing.writer import _uvarint

    entries = _uvarint(len(epochs) + 1) + b"".join(struct.pack(">iq", e, o) + b"\x00" for e, o in epochs)
    return (b"\x01\x00\x00" + _segment_id(topic, topic_id, partition, segment_id)
            + struct.pack(">qqiqq", start, end, broker, time_ms, time_ms) + entries + struct.pack(">i", size)
            + _compact(None) + struct.pack(">b", state) + b"\x00")


def segment_update(topic: str, topic_id: str, partition: int, segment_id: str, state: int, *, broker: int = 1,
                   time_ms: int = 0) -> bytes:
    """A ``RemoteLogSegmentMetadataUpdateRecord`` value (api key 1): a copy's later state."""
    return (b"\x01\x01\x00" + _segment_id(topic, topic_id, partition, segment_id)
            + struct.pack(">iq", broker, time_ms) + _compact(None) + struct.pack(">b", state) + b"\x00")


def partition_deleted(topic: str, topic_id: str, partition: int, state: int = 0, *, broker: int = 1,
                      time_ms: int = 0) -> bytes:
    """A ``RemotePartitionDeleteMetadataRecord`` value (api key 2; state 0 DELETE_PARTITION_MARKED)."""
    return (b"\x01\x02\x00" + _topic_id_partition(topic, topic_id, partition)
            + struct.pack(">iqb", broker, time_ms, state) + b"\x00")


def copy_events(written: list[Path], epochs: list[tuple[int, int]], *, topic_id: str,
                finished: bool = True, max_timestamps: Sequence[int] | None = None) -> list[bytes]:
    """What the broker records for copies :func:`copy_to_tiered` wrote (its ``.log`` paths, in offset order): for
    each, COPY_SEGMENT_STARTED then (``finished``) COPY_SEGMENT_FINISHED, with the leader epochs (``epochs``:
    the partition's ``leader-epoch-checkpoint``) over its offsets. A copy's end is the next one's base - 1 (the
    last copy's: its last record's offset). ``max_timestamps``: each copy's largest record timestamp, recorded as
    its ``maxTimestampMs`` (0 when not given)."""
    events = []
    for i, log in enumerate(written):
        base, segment_id = int(log.name[:20]), log.name[21:-4]
        end = int(written[i + 1].name[:20]) - 1 if i + 1 < len(written) else _copy_end(log)
        topic, partition = _copy_partition(log)
        within = [(e, max(s, base)) for j, (e, s) in enumerate(epochs)
                  if s <= end and (j + 1 == len(epochs) or epochs[j + 1][1] > base)]
        events.append(segment_event(topic, topic_id, partition, segment_id, base, end, within,
                                    size=_segment_size(log),
                                    time_ms=max_timestamps[i] if max_timestamps is not None else 0))
        if finished:
            events.append(segment_update(topic, topic_id, partition, segment_id, COPY_SEGMENT_FINISHED))
    return events


def _copy_end(log: Path) -> int | None:
    """A copy's end offset: an Aiven copy's manifest's (its ``.log`` may be stored compressed or encrypted), else
    its last record's offset."""
    manifest = log.with_suffix(".rsm-manifest")
    if manifest.exists():
        return int(json.loads(manifest.read_text())["remoteLogSegmentMetadata"]["endOffset"])
    return _last_offset(log.read_bytes())


def _segment_size(log: Path) -> int:
    """The size of the segment a copy's ``.log`` was made from, as RemoteLogManager records it
    (``segmentSizeInBytes``: the local segment's, before the storage manager compresses or encrypts it): an Aiven
    copy's manifest's ``originalFileSize``, else the file's."""
    manifest = log.with_suffix(".rsm-manifest")
    if manifest.exists():
        return int(json.loads(manifest.read_text())["chunkIndex"]["originalFileSize"])
    return log.stat().st_size


def _copy_partition(log: Path) -> tuple[str, int]:
    """(topic, partition) of a copy's ``.log`` in either layout."""
    folder = log.parent.name
    if folder.isdigit():  # Aiven: <topic>-<topic id>/<partition>/
        return log.parent.parent.name[:-23], int(folder)
    topic, _, partition = folder[:-23].rpartition("-")  # LocalTieredStorage: <topic>-<partition>-<topic id>/
    return topic, int(partition)


def write_remote_log_metadata(log_dir: str | os.PathLike, values: list[bytes], *, partition: int,
                              records_per_batch: int = 3, codec: int | str = 0) -> Path:
    """Write ``values`` as the records (null keys) of ``__remote_log_metadata-<partition>`` in ``log_dir``, from
    offset 0, ``records_per_batch`` a batch compressed with ``codec``; returns the folder."""
    from kafkaseg.testing.partition import PartitionWriter
    from kafkaseg.testing.writer import Record, build_batch_v2

    writer = PartitionWriter(Path(log_dir) / f"__remote_log_metadata-{partition}", write_snapshots=False)
    for first in range(0, len(values), records_per_batch):
        records = [Record(first + i, 1_700_000_000_000 + first + i, None, value)
                   for i, value in enumerate(values[first:first + records_per_batch])]
        writer.append(build_batch_v2(records, codec=codec))
    writer.close()
    return writer.directory
