"""Regenerate this folder's fixture: copies of a real broker's partition (``../shared/corpus``, a Kafka 2.1
broker's ``docker-connect-configs-0``: three segments) in Aiven's tiered-storage layout, stored encrypted by
``AivenEncrypt.java`` (BouncyCastle's RSA-OAEP with SHA3-512 and the JDK's AES-GCM, called as Aiven's plugin calls
them), once as they were on disk and once compressed first. Only the layout (names, manifests, which pieces are
encrypted) comes from ``kafkaseg.testing.tiered``; every encrypted byte and the key pair come from Java.

Run from the project root (needs Java 17 and /usr/share/java/bcprov.jar, Debian's libbcprov-java):

    .venv/bin/python tests/data/aiven_encrypted/regenerate.py
"""

from __future__ import annotations

import base64
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
sys.path.insert(0, str(ROOT))

from kafkaseg.testing.tiered import KeyPairFiles, copy_to_tiered  # noqa: E402

SOURCE = "segments/smartassets__backend-server/51801d05/kafka/data/docker-connect-configs-0"
CLASSPATH = "/usr/share/java/bcprov.jar"
CHUNK_SIZE = 1000  # several chunks a segment, batches straddling them


def java(*args: str) -> None:
    subprocess.run(["java", "-cp", CLASSPATH, str(HERE / "AivenEncrypt.java"), *args], check=True)


def java_encryptor(key_pair: KeyPairFiles):
    def encrypt(pieces: list[bytes]) -> tuple[list[bytes], str, bytes]:
        with tempfile.TemporaryDirectory() as work:
            work = Path(work)
            for i, piece in enumerate(pieces):
                (work / f"piece-{i:04d}.bin").write_bytes(piece)
            java("encrypt", str(key_pair.public), key_pair.key_id, str(work))
            stored = [(work / f"piece-{i:04d}.enc").read_bytes() for i in range(len(pieces))]
            return (stored, (work / "dataKey.txt").read_text().strip(),
                    base64.b64decode((work / "aad.b64").read_text().strip()))
    return encrypt


def main() -> None:
    corpus = ROOT.parent / "shared" / "corpus"
    source = corpus / SOURCE
    keys = HERE / "keys"
    shutil.rmtree(keys, ignore_errors=True)
    keys.mkdir()
    java("gen", str(keys), "k1")
    key_pair = KeyPairFiles("k1", keys / "k1-public.pem", keys / "k1-private.pem")
    for name, compression in (("encrypted", False), ("compressed-encrypted", True)):
        target = HERE / name
        shutil.rmtree(target, ignore_errors=True)
        copy_to_tiered(source, target, layout="aiven", include_last=True, compression=compression,
                       chunk_size=CHUNK_SIZE, encryptor=java_encryptor(key_pair))
    print(f"wrote {HERE}")


if __name__ == "__main__":
    main()
