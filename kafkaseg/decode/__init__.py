"""Batches -> Arrow columns. Picks the compiled kernel (``_kernel.pyx``) and falls back to its pure-Python twin
(``_kernel_py.py``) with one warning when the compiled module is missing; ``KAFKASEG_PURE=1`` forces the twin.

Both twins expose ``decode(buf, request) -> DecodeResult`` and ``IMPLEMENTATION`` ("cython" or "python").
"""

from __future__ import annotations

import os
import warnings

from kafkaseg.decode import _kernel_py
from kafkaseg.decode.api import DecodeRequest, DecodeResult, DecodeStats

__all__ = ["decode", "DecodeRequest", "DecodeResult", "DecodeStats", "IMPLEMENTATION", "kernel", "pure_kernel"]

pure_kernel = _kernel_py


def _load():
    if os.environ.get("KAFKASEG_PURE") == "1":
        return _kernel_py
    try:
        from kafkaseg.decode import _kernel  # type: ignore[attr-defined]
    except ImportError as err:
        import importlib.util

        # a module never built (no compiler at install) is said plainly; Python's own text for it names a
        # "partially initialized module" and a circular import, which would send a user the wrong way
        try:
            built = importlib.util.find_spec("kafkaseg.decode._kernel") is not None
        except (ImportError, ValueError):
            built = True
        why = err if built else "it was not built"
        warnings.warn(f"kafkaseg: compiled decoder unavailable ({why}); using the pure-Python decoder, which is "
                      "much slower. Reinstall with a C compiler to build it.", RuntimeWarning, stacklevel=3)
        return _kernel_py
    return _kernel


kernel = _load()
decode = kernel.decode
IMPLEMENTATION = kernel.IMPLEMENTATION
