"""Reading tiered-storage copies that Aiven's plugin stored encrypted (``encryption.enabled``), given the key ring.

The wire grammar (Aiven-Open/tiered-storage-for-apache-kafka at 8fb1581, paths under
``core/src/main/java/io/aiven/kafka/tieredstorage/``)::

    .rsm-manifest (plain JSON)   "encryption": {"dataKey": "<key pair id>:<base64 RSA ciphertext>",
                                                "aad": "<base64, 32 bytes>"}
        (manifest/SegmentEncryptionMetadataV1.java, security/EncryptedDataKey.java); absent when not encrypted
    data key     32 random bytes (AES-256), new for every segment (security/AesEncryptionProvider.java),
                 wrapped by the key pair's RSA public key with "RSA/NONE/OAEPWithSHA3-512AndMGF1Padding"
                 (security/RsaEncryptionProvider.java; BouncyCastle: OAEP and MGF1 both SHA3-512, empty label)
    a chunk      iv (12 bytes) | AES-256-GCM ciphertext | tag (16 bytes), the manifest's aad as associated data,
                 a fresh iv for every chunk (transform/EncryptionChunkEnumeration.java): 28 bytes more than it holds
    order        compressed, then encrypted (KafkaRemoteStorageManager.java), so a chunk is decrypted, then
                 decompressed; the chunk index counts stored (transformed) sizes
    .indexes     each index encrypted alone, as one chunk; an empty index is stored as nothing (size 0)

The key ring is the broker's ``encryption.key.pairs``: for each id, ``encryption.key.pairs.<id>.private.key.file``
holds the RSA private key as a PEM block whatever its label (``security/RsaKeyReader.java``: PKCS#8; PKCS#1 is
taken too). kafkaseg needs only the private keys, and only on the machine that plans a read: what a worker reads is
the segment's own data key, unwrapped there.

Two libraries do the cryptography: ``pycryptodome`` unwraps the data key (``cryptography`` refuses OAEP with SHA3,
which the plugin uses), ``cryptography`` decrypts the chunks (OpenSSL's AES-GCM: 12.6 GB/s on this project's
machine against 2.1 for pycryptodome's). Both are the ``encryption`` extra: ``pip install 'kafkaseg[encryption]'``.
"""

from __future__ import annotations

import base64
import binascii
import re
import threading
from collections import OrderedDict
from dataclasses import dataclass, field

from kafkaseg.errors import CorruptDataError, InvalidOptionError, KeyUnavailableError, LayoutError
from kafkaseg.storage import fs as _fs

__all__ = ["KeyRing", "RingKeys", "DataKey", "OVERHEAD", "IV_SIZE", "TAG_SIZE", "unwrap_data_key", "decrypt_chunk",
           "parse_key_ring"]

IV_SIZE = 12  # SegmentEncryptionMetadataV1.IV_SIZE
TAG_SIZE = 16  # AesEncryptionProvider: GCMParameterSpec(128, ...)
OVERHEAD = IV_SIZE + TAG_SIZE  # what encryption adds to a chunk
DATA_KEY_SIZE = 32  # AesEncryptionProvider.KEY_SIZE = 256 bits
_KEY_FILE_CAP = 1024 * 1024  # a PEM private key is a few KB
_INSTALL = "pip install 'kafkaseg[encryption]' (cryptography and pycryptodome)"


def _require(module: str, what: str, path: str):
    try:
        return __import__(module, fromlist=["_"])
    except ImportError as err:
        raise LayoutError(f"{path}: {what} needs the encryption extra: {_INSTALL}") from err


@dataclass(frozen=True)
class KeyRing:
    """The key pairs' private key files by id (the broker's ``encryption.key.pairs.<id>.private.key.file``),
    local paths or filesystem URIs. Only the paths are held: the files are read when a manifest needs one, and
    the keys are never printed."""

    files: tuple[tuple[str, str], ...]

    @property
    def ids(self) -> tuple[str, ...]:
        return tuple(key_id for key_id, _ in self.files)

    def path_of(self, key_id: str) -> str | None:
        return next((path for known, path in self.files if known == key_id), None)


@dataclass(frozen=True)
class DataKey:
    """One segment's AES key and associated data, unwrapped; ``key_id`` names the key pair that wrapped it and
    ``wrapped`` is the manifest's ``dataKey`` text (how a partition read again finds the key it already has).
    Its repr leaves the key out."""

    key_id: str
    wrapped: str = field(repr=False)
    key: bytes = field(repr=False)
    aad: bytes = field(repr=False)


@dataclass(frozen=True)
class UnavailableKey:
    """In place of a :class:`DataKey`, for a copy found when a partition is read again where no key ring is (a
    worker) and whose key the plan did not hold (uploaded since planning): reading it raises
    :class:`KeyUnavailableError` saying ``why``, while the partition's other copies read on."""

    key_id: str
    wrapped: str = field(repr=False)
    why: str


_KEY_ID = re.compile(r"^[^\s=,:]+$")


def parse_key_ring(value: str, option: str = "tieredKeyRing") -> KeyRing:
    """``"<id>=<private key file>,<id>=<file>"`` as a :class:`KeyRing`; raises :class:`InvalidOptionError` naming
    ``option``."""
    files = []
    for part in str(value).split(","):
        key_id, sep, path = part.strip().partition("=")
        key_id, path = key_id.strip(), path.strip()
        if not sep or not _KEY_ID.match(key_id) or not path:
            raise InvalidOptionError(f"option '{option}': {part.strip()!r} is not <key pair id>=<private key "
                                     "file> (the broker's encryption.key.pairs.<id>.private.key.file), e.g. "
                                     "k1=/etc/kafka/tiered/k1-private.pem,k2=/etc/kafka/tiered/k2-private.pem")
        if any(known == key_id for known, _ in files):
            raise InvalidOptionError(f"option '{option}': key pair id {key_id!r} is given twice")
        files.append((key_id, path))
    return KeyRing(tuple(files))


# -- private keys ---------------------------------------------------------------------------------------------------

_PEM_BLOCK = re.compile(rb"-----BEGIN ([^-\r\n]*)-----(.*?)-----END \1-----", re.S)
_PRIVATE_KEYS: dict = {}  # (store, path, size, mtime) -> RsaKey
_DATA_KEYS: "OrderedDict[tuple, bytes]" = OrderedDict()  # (private key, dataKey text) -> key: an unwrap is ~1 ms
_DATA_KEYS_KEPT = 100_000
_LOCK = threading.Lock()


class RingKeys:
    """A :class:`KeyRing`'s private keys as one discovery uses them: each key file looked at once (a stat, and a
    read when it changed since the process last parsed it), so a file replaced or removed is seen by the next
    discovery, and a bucket of thousands of copies costs one look per key pair."""

    def __init__(self, ring: KeyRing):
        self.ring = ring
        self._keys: dict = {}  # key id -> RsaKey or the KeyUnavailableError it raised
        self._lock = threading.Lock()

    @classmethod
    def of(cls, keys: "RingKeys | KeyRing | None") -> "RingKeys | None":
        """``keys`` as a :class:`RingKeys` (a :class:`KeyRing` looked at afresh), None for None."""
        return keys if keys is None or isinstance(keys, RingKeys) else cls(keys)

    def private_key(self, key_id: str, manifest: str):
        with self._lock:
            known = self._keys.get(key_id)
        if known is None:
            try:
                known = _private_key(self.ring, key_id, manifest)
            except KeyUnavailableError as err:
                known = err
            with self._lock:
                known = self._keys.setdefault(key_id, known)
        if isinstance(known, KeyUnavailableError):
            raise KeyUnavailableError(f"{manifest}: {known}") from known
        return known


def _private_key(ring: KeyRing, key_id: str, manifest: str):
    """The RSA private key of ``key_id`` in ``ring``, parsed once per process (per file size and mtime); a
    :class:`KeyUnavailableError` saying why there is none."""
    path = ring.path_of(key_id)
    if path is None:
        held = ", ".join(repr(k) for k in ring.ids)
        raise KeyUnavailableError(f"its data key is wrapped by key pair {key_id!r}, which the key ring "
                                  f"(tieredKeyRing) does not hold (it holds {held})")
    filesystem, located = _fs.open_filesystem(path)
    try:
        entry = _fs.stat(located, filesystem)
    except LayoutError as err:
        raise KeyUnavailableError(f"{_fs.redact(path)}: cannot read the key file of key pair {key_id!r} ({err})") \
            from err
    if entry is None or entry.is_dir:
        raise KeyUnavailableError(f"{_fs.redact(path)}: no such key file (key pair {key_id!r} of tieredKeyRing)")
    cache_key = (_fs.store_key(filesystem), located, entry.size, entry.mtime_ms)
    with _LOCK:
        known = _PRIVATE_KEYS.get(cache_key)
    if known is not None:
        return known
    rsa = _require("Crypto.PublicKey.RSA", "an encrypted copy", manifest)
    where = f"{_fs.redact(path)} (key pair {key_id!r} of tieredKeyRing)"
    try:
        text = _fs.read_small_file(located, filesystem, max_bytes=_KEY_FILE_CAP)
    except LayoutError as err:
        raise KeyUnavailableError(f"{where}: {err}") from err
    block = _PEM_BLOCK.search(text)
    if block is None:
        raise KeyUnavailableError(f"{where}: not a PEM file (no -----BEGIN ...----- block)")
    try:
        # RsaKeyReader takes the first PEM block's bytes whatever its label: PKCS#8 (or PKCS#1) DER
        key = rsa.import_key(base64.b64decode(b"".join(block.group(2).split()), validate=True))
    except (ValueError, IndexError, TypeError, binascii.Error) as err:
        raise KeyUnavailableError(f"{where}: not an RSA key in PKCS#8 or PKCS#1 ({err})") from err
    if not key.has_private():
        raise KeyUnavailableError(f"{where}: a public key; the key ring needs each key pair's private key "
                                  "(encryption.key.pairs.<id>.private.key.file)")
    with _LOCK:
        _PRIVATE_KEYS[cache_key] = key
    return key


def unwrap_data_key(keys: "RingKeys | KeyRing | None", encryption: tuple[str, bytes], manifest: str,
                    known: dict | None = None) -> DataKey:
    """The segment's :class:`DataKey` from its manifest's ``encryption`` (``(dataKey text, aad)``): unwrapped with
    the key ring's private key (``keys``: a :class:`RingKeys`, or a :class:`KeyRing` looked at afresh), or found in
    ``known`` (``dataKey`` text -> :class:`DataKey`: a partition read again on a worker, which has the keys of the
    copies planned and no key ring). Unwrapped keys are kept for the process (by private key and text). Raises
    :class:`KeyUnavailableError` naming the manifest when no key pair given opens it, :class:`LayoutError` for a
    ``dataKey`` kafkaseg cannot parse."""
    wrapped, aad = encryption
    if known and wrapped in known:
        return known[wrapped]
    key_id, sep, ciphertext = wrapped.partition(":")
    if not sep or ":" in ciphertext or not key_id:
        raise LayoutError(f"{manifest}: the manifest's encryption.dataKey is not <key pair id>:<base64> (written "
                          "by a plugin build before 2023-07, which kafkaseg does not read)")
    if keys is None:
        raise KeyUnavailableError(f"{manifest}: the segment is stored encrypted by the remote storage plugin "
                                  f"(encryption.enabled, key pair {key_id!r}); give the broker's private key files "
                                  f"with the tieredKeyRing option (CLI: --tiered-key-ring), e.g. "
                                  f"{key_id}=/path/to/private.pem")
    keys = RingKeys.of(keys)
    private = keys.private_key(key_id, manifest)
    cache_key = (private.n, private.d, wrapped)  # the key itself: a key file replaced is unwrapped with again
    with _LOCK:
        key = _DATA_KEYS.get(cache_key)
        if key is not None:
            _DATA_KEYS.move_to_end(cache_key)
    if key is None:
        oaep = _require("Crypto.Cipher.PKCS1_OAEP", "an encrypted copy", manifest)
        sha3 = _require("Crypto.Hash.SHA3_512", "an encrypted copy", manifest)
        try:
            raw = base64.b64decode(ciphertext, validate=True)
            key = oaep.new(private, hashAlgo=sha3).decrypt(raw)
        except (ValueError, TypeError, binascii.Error) as err:
            raise KeyUnavailableError(f"{manifest}: its data key does not decrypt with key pair {key_id!r} "
                                      f"({_fs.redact(keys.ring.path_of(key_id))}): not the key pair it was wrapped "
                                      f"with, or a damaged manifest ({err})") from err
        if len(key) != DATA_KEY_SIZE:
            raise LayoutError(f"{manifest}: its data key is {len(key)} bytes, not {DATA_KEY_SIZE} (AES-256)")
        with _LOCK:
            _DATA_KEYS[cache_key] = key
            while len(_DATA_KEYS) > _DATA_KEYS_KEPT:
                _DATA_KEYS.popitem(last=False)
    return DataKey(key_id, wrapped, key, aad)


def decode_aad(text, manifest: str) -> bytes:
    """The manifest's ``encryption.aad`` (Jackson's base64 of a byte array)."""
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, TypeError, ValueError) as err:
        raise LayoutError(f"{manifest}: the manifest's encryption.aad {text!r} is not base64") from err


def decrypt_chunk(data_key: "DataKey | UnavailableKey", stored: bytes, path: str, position: int, what: str) -> bytes:
    """One stored chunk (``iv | ciphertext | tag``) decrypted and authenticated. Raises :class:`CorruptDataError`
    naming ``path`` and ``position`` (where the chunk is stored) when it does not authenticate, and
    :class:`KeyUnavailableError` for an :class:`UnavailableKey`."""
    if isinstance(data_key, UnavailableKey):
        raise KeyUnavailableError(f"{path}: {what} cannot be decrypted here: {data_key.why}")
    if len(stored) < OVERHEAD:
        raise CorruptDataError(f"{what}: {len(stored)} bytes, fewer than an encrypted chunk's {OVERHEAD} (iv and "
                               "tag)", path=path, position=position)
    aead = _require("cryptography.hazmat.primitives.ciphers.aead", "an encrypted copy", path)
    exceptions = _require("cryptography.exceptions", "an encrypted copy", path)
    try:
        view = memoryview(stored)  # (a slice of a larger read: not copied)
        return aead.AESGCM(data_key.key).decrypt(view[:IV_SIZE], view[IV_SIZE:], data_key.aad)
    except exceptions.InvalidTag as err:
        raise CorruptDataError(f"{what} does not decrypt: its authentication tag does not match (a damaged "
                               "object, or not the one the manifest was written with)", path=path,
                               position=position) from err
