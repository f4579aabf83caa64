"""Header keys decode as Kafka's Java client decodes them (``new String(bytes, UTF_8)``), checked against Java."""

from __future__ import annotations

import random
import shutil
import subprocess

import pytest

from kafkaseg.decode import DecodeRequest, _kernel_py
from kafkaseg.testing import encode_varint
from kafkaseg.testing.writer import assemble_batch_v2
from kafkaseg.wire.text import java_utf8

try:
    from kafkaseg.decode import _kernel as _compiled
except ImportError:  # pragma: no cover - the compiled kernel is optional
    _compiled = None

JAVA_DECODER = """
import java.nio.charset.StandardCharsets;
public class Utf8 {
  public static void main(String[] args) {
    for (String hex : args[0].split(",")) {
      byte[] b = new byte[hex.length() / 2];
      for (int i = 0; i < b.length; i++) b[i] = (byte) Integer.parseInt(hex.substring(2 * i, 2 * i + 2), 16);
      StringBuilder out = new StringBuilder();
      for (char c : new String(b, StandardCharsets.UTF_8).toCharArray()) out.append(String.format("%04x", (int) c));
      System.out.println(out);
    }
  }
}
"""


def _utf16_hex(text: str) -> str:
    return text.encode("utf-16-be").hex()


def test_malformed_keys_decode_as_java_does(tmp_path):
    if shutil.which("java") is None:
        pytest.skip("no java on PATH to act as the oracle")
    rng = random.Random(7)
    pool = [0x00, 0x41, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xC1, 0xC2, 0xDF, 0xE0, 0xE1, 0xEC, 0xED, 0xEE,
            0xEF, 0xF0, 0xF1, 0xF3, 0xF4, 0xF5, 0xF7, 0xF8, 0xFB, 0xFC, 0xFE, 0xFF]
    cases = sorted({bytes(rng.choice(pool) for _ in range(rng.randint(1, 6))) for _ in range(3000)})
    cases += ["ok".encode(), "naïve €".encode(), "😀".encode(), b"\xed\xa0\x80", b"\xed\xa0", b"\xf4\x90\x80\x80"]
    source = tmp_path / "Utf8.java"
    source.write_text(JAVA_DECODER)
    run = subprocess.run(["java", str(source), ",".join(c.hex() for c in cases)], capture_output=True, text=True,
                         timeout=120, check=True)
    java = run.stdout.split("\n")
    mismatches = [(c, j, _utf16_hex(java_utf8(c))) for c, j in zip(cases, java) if _utf16_hex(java_utf8(c)) != j]
    assert len(java) >= len(cases) and mismatches == []


@pytest.mark.parametrize("kernel", [_kernel_py, _compiled], ids=["pure", "compiled"])
def test_a_record_with_a_malformed_header_key_is_read_with_replacement_characters(kernel):
    """Non-Java producers can write any bytes as a header key; Spark reads the record with U+FFFD in the key, and
    so must both decoders, whether or not headers are kept (it used to fail the batch)."""
    if kernel is None:
        pytest.skip("compiled kernel not built")
    key = b"\xff\xfeab\xed\xa0\x80"
    body = (b"\x00" + encode_varint(0) + encode_varint(0) + encode_varint(1) + b"k" + encode_varint(1) + b"v"
            + encode_varint(2) + encode_varint(len(key)) + key + encode_varint(2) + b"hv"
            + encode_varint(2) + b"ok" + encode_varint(-1))
    record = encode_varint(len(body)) + body
    batch = assemble_batch_v2(base_offset=0, partition_leader_epoch=0, attributes=0, last_offset_delta=0,
                              base_timestamp=1, max_timestamp=1, producer_id=-1, producer_epoch=-1,
                              base_sequence=-1, records_count=1, payload=record)
    kept = kernel.decode(batch, DecodeRequest(include_headers=True))
    assert kept.columns["headers"].to_pylist() == [[{"key": "\ufffd\ufffdab\ufffd", "value": b"hv"},
                                                    {"key": "ok", "value": None}]]
    assert kept.columns["value"].to_pylist() == [b"v"]
    assert kernel.decode(batch, DecodeRequest()).num_rows == 1


def test_both_decoders_count_a_decoded_keys_utf8_bytes_toward_max_bytes():
    """U+FFFD is three UTF-8 bytes: the twins must stop at the same record when maxBytesPerBatch is reached (found
    in review: the pure twin counted characters)."""
    if _compiled is None:
        pytest.skip("compiled kernel not built")

    def batch(offset):
        body = (b"\x00" + encode_varint(0) + encode_varint(0) + encode_varint(-1) + encode_varint(1) + b"v"
                + encode_varint(1) + encode_varint(40) + b"\xff" * 40 + encode_varint(-1))
        return assemble_batch_v2(base_offset=offset, partition_leader_epoch=0, attributes=0, last_offset_delta=0,
                                 base_timestamp=1, max_timestamp=1, producer_id=-1, producer_epoch=-1,
                                 base_sequence=-1, records_count=1, payload=encode_varint(len(body)) + body)

    buf = b"".join(batch(o) for o in range(3))
    request = DecodeRequest(include_headers=True, max_bytes=100)
    pure, compiled = _kernel_py.decode(buf, request), _compiled.decode(buf, request)
    assert (pure.num_rows, pure.stop, pure.consumed) == (compiled.num_rows, compiled.stop, compiled.consumed)
    assert pure.num_rows == 1  # 40 replacement characters are 120 bytes
