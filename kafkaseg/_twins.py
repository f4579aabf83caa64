"""Picks a compiled module or its pure-Python twin (the decoder kernel, the header walk): ``KAFKASEG_PURE=1`` forces
the twin; a compiled module that is missing warns once (at the import of the module that loads it) and falls back."""

from __future__ import annotations

import importlib
import importlib.util
import os
import warnings


def load(name: str, pure, what: str):
    """The module ``name`` (e.g. ``"kafkaseg.decode._kernel"``), or ``pure`` under ``KAFKASEG_PURE=1`` or when it
    cannot be imported (with a warning naming ``what``, e.g. ``"decoder"``)."""
    if os.environ.get("KAFKASEG_PURE") == "1":
        return pure
    try:
        return importlib.import_module(name)
    except ImportError as err:
        # a module never built (no compiler at install) is said plainly; Python's own text for it names a
        # "partially initialized module" and a circular import, which would send a user the wrong way
        try:
            built = importlib.util.find_spec(name) is not None
        except (ImportError, ValueError):
            built = True
        why = err if built else "it was not built"
        warnings.warn(f"kafkaseg: compiled {what} unavailable ({why}); using the pure-Python {what}, which is "
                      "much slower. Reinstall with a C compiler to build it.", RuntimeWarning, stacklevel=4)
        return pure
