"""Walks over the whole batches of a buffer at native speed: the compiled ``_walk.pyx``, or its pure-Python twin
``_walk_py.py`` (with one warning when the compiled module is missing; ``KAFKASEG_PURE=1`` forces the twin).

A walk goes from ``start`` over every batch that :func:`kafkaseg.wire.batch.read_header` would accept, and stops at
the first position where it would not (or at the end) with the reason: it never raises. Callers that must report
what is wrong there (the error, its message, a tail) call ``read_header`` at that one position: the walks only take
over the batches with nothing to say. The arguments, buffer-relative:

* ``buf``: bytes (or a memoryview of them: what the segment walks pass), walked in place; a buffer that can change
  (a bytearray, a writable memoryview, a mapping) is walked as a copy of its first ``end`` bytes taken when the walk
  starts, so that another thread writing it meanwhile cannot give a walk half of each (the compiled walk releases
  the GIL), nor resize or free it under one;
* ``end``: the end of the bytes of ``buf`` the walk may read (clipped to ``len(buf)``);
* ``available_end`` (>= ``end``): where the data ends, as ``read_header``'s ``available``: a batch's body may run
  past ``end`` up to it (a reader that has only a block of headers in memory), its header may not;
* ``room``: stop at a position with fewer than ``room`` bytes before ``end`` (a reader that reads a new block
  there: a header is never parsed from a block that holds only part of a v2 header, as the Python walks do);
* ``max_batch_size``: ``read_header``'s (-1: no limit).

The reasons: :data:`STOP_END` (``available_end`` reached, or ``max_count`` batches), :data:`STOP_INCOMPLETE`
(``TruncatedDataError`` from ``read_header``, or ``room`` short), :data:`STOP_MAGIC` (``UnsupportedMagicError``),
:data:`STOP_SIZE` and :data:`STOP_OFFSETS` (``CorruptBatchError``). Functions:

* ``skip(buf, start, end, available_end, room=0, max_batch_size=-1, max_count=-1) -> (position, count, reason)``;
* ``headers(..., max_count=-1, base=0, cls=tuple) -> (position, reason, list)``: each batch's header as ``cls``
  (:class:`~kafkaseg.wire.batch.BatchHeader`'s fields, in order; positions plus ``base``);
* ``columns(..., base=0) -> (position, reason, arrays)``: the same fields as int64 numpy arrays (:data:`COLUMNS`),
  sized by a first pass that counts the batches (never from a length field).
"""

from __future__ import annotations

from kafkaseg._twins import load
from kafkaseg.wire import _walk_py

__all__ = ["kernel", "pure_kernel", "IMPLEMENTATION", "COLUMNS", "STOP_NAMES", "STOP_END", "STOP_INCOMPLETE",
           "STOP_MAGIC", "STOP_SIZE", "STOP_OFFSETS"]

pure_kernel = _walk_py


kernel = load("kafkaseg.wire._walk", _walk_py, "header walk")
IMPLEMENTATION = kernel.IMPLEMENTATION
COLUMNS = _walk_py.COLUMNS
STOP_END = _walk_py.STOP_END
STOP_INCOMPLETE = _walk_py.STOP_INCOMPLETE
STOP_MAGIC = _walk_py.STOP_MAGIC
STOP_SIZE = _walk_py.STOP_SIZE
STOP_OFFSETS = _walk_py.STOP_OFFSETS
STOP_NAMES = {STOP_END: "end", STOP_INCOMPLETE: "incomplete", STOP_MAGIC: "unknown magic", STOP_SIZE: "bad size",
              STOP_OFFSETS: "bad offsets"}
