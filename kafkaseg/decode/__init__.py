"""Batches -> Arrow columns. Picks the compiled kernel (``_kernel.pyx``) and falls back to its pure-Python twin
(``_kernel_py.py``) with one warning when the compiled module is missing; ``KAFKASEG_PURE=1`` forces the twin.

Both twins expose ``decode(buf, request) -> DecodeResult`` and ``IMPLEMENTATION`` ("cython" or "python").
"""

from __future__ import annotations

from kafkaseg._twins import load
from kafkaseg.decode import _kernel_py
from kafkaseg.decode.api import DecodeRequest, DecodeResult, DecodeStats

__all__ = ["decode", "DecodeRequest", "DecodeResult", "DecodeStats", "IMPLEMENTATION", "kernel", "pure_kernel",
           "resynchronised_at"]

pure_kernel = _kernel_py


kernel = load("kafkaseg.decode._kernel", _kernel_py, "decoder")
decode = kernel.decode
IMPLEMENTATION = kernel.IMPLEMENTATION


def resynchronised_at(buf, request: DecodeRequest) -> int | None:
    """Where a lenient decode goes on after bad framing at ``buf[0]`` (unknown magic, impossible size), without an
    index: the batch where the bad one's declared size says it ends, when a plausible whole batch (with a valid CRC,
    under ``request.verify_crc``) is there; the position in ``buf``, or None. ``buf`` must hold the bad batch and
    the header and body of the one after it (``request.bytes_after``: how many bytes of the data follow ``buf``).
    Both kernels apply this rule (``_resync``); callers that walk a file themselves, such as ``kafkaseg verify``,
    use it to skip what a lenient read skips."""
    size = int.from_bytes(bytes(buf[8:12]), "big", signed=True) if len(buf) >= 12 else -1
    at, _ = _kernel_py._resync(buf, 0, len(buf), size, request)
    return at if at >= 0 else None
