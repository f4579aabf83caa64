"""The one kafkaseg error hierarchy.

Every error kafkaseg raises on bad input is a :class:`KafkaSegError`. Errors about bytes on disk carry the file
(``path``) and the byte ``position`` in it where the problem was found, and say both in their message, so an
operator can open the file at that byte. Lower layers (``kafkaseg.wire``, ``kafkaseg.codecs``) work on buffers with
no file in sight: they raise with ``path=None`` and a position relative to the buffer, and the layer that knows the
file re-raises with :meth:`CorruptDataError.located` (chaining the original with ``from``).
"""

from __future__ import annotations

from typing import Iterable

__all__ = [
    "KafkaSegError",
    "CorruptDataError",
    "CorruptBatchError",
    "CrcMismatchError",
    "TruncatedDataError",
    "CorruptIndexError",
    "CorruptCheckpointError",
    "UnsupportedMagicError",
    "UnsupportedCodecError",
    "DecompressionLimitError",
    "SkippedOffsetsError",
    "InvalidOptionError",
    "DataLossError",
    "LostTailError",
    "LayoutError",
    "BadPathError",
    "SegmentFileError",
    "UnreadableSegmentError",
    "SegmentNameError",
    "KeyUnavailableError",
    "ExportMismatchError",
    "CompactedTableError",
    "ConcurrentWriteError",
    "DeserializationError",
    "did_you_mean",
    "first_line",
]


class KafkaSegError(Exception):
    """Base class of every error kafkaseg raises on purpose."""


class CorruptDataError(KafkaSegError):
    """Bytes that do not follow Kafka's on-disk grammar.

    ``path`` is the file (or None when the bytes came from a buffer), ``position`` the byte offset in that file
    (or buffer) where the bad structure starts, ``detail`` the bare description without the location.
    """

    def __init__(self, detail: str, *, path: str | None = None, position: int | None = None):
        self.detail = detail
        self.path = path
        self.position = position
        super().__init__(self._format())

    def _format(self) -> str:
        where = []
        if self.path is not None:
            where.append(str(self.path))
        if self.position is not None:
            where.append(f"byte {self.position}")
        return f"{' @ '.join(where)}: {self.detail}" if where else self.detail

    def located(self, path: str | None, base_position: int = 0) -> "CorruptDataError":
        """A copy of this error placed in ``path``, with its buffer-relative position shifted by ``base_position``
        (an error raised with no position is placed at ``base_position``: the start of the structure it was in)."""
        position = base_position if self.position is None else self.position + base_position
        err = type(self).__new__(type(self))
        CorruptDataError.__init__(err, self.detail, path=path if path is not None else self.path, position=position)
        return err

    def saying(self, more: str) -> "CorruptDataError":
        """A copy of this error (same class, file and byte) with `` (more)`` after its detail: the ways on past it
        that the read raising it offers."""
        return type(self)(f"{self.detail} ({more})", path=self.path, position=self.position)

    def __reduce__(self):  # picklable across Spark's Python workers despite keyword-only arguments
        return (_rebuild, (type(self), self.detail, self.path, self.position))


def _rebuild(cls, detail, path, position):
    err = cls.__new__(cls)
    CorruptDataError.__init__(err, detail, path=path, position=position)
    return err


class CorruptBatchError(CorruptDataError):
    """A record batch (or legacy message) whose framing or contents are malformed."""


class CrcMismatchError(CorruptBatchError):
    """A batch whose stored CRC does not match its bytes."""


class TruncatedDataError(CorruptBatchError):
    """A batch (or entry) that runs past the end of the file: typically the tail of an active segment."""


class UnsupportedMagicError(CorruptBatchError):
    """A batch with a magic byte other than 0, 1 or 2."""


class UnsupportedCodecError(CorruptBatchError):
    """A compression codec id this format does not define (or that the installed libraries cannot decode)."""


class DecompressionLimitError(CorruptBatchError):
    """A compressed batch that expands past the configured bound (a decompression bomb or a too-small limit)."""


class SkippedOffsetsError(CorruptBatchError):
    """A batch whose base offset (which no CRC covers) skips offsets the log must hold: acknowledged offsets, below
    the high watermark, in no batch."""


class CorruptIndexError(CorruptDataError):
    """An ``.index``/``.timeindex``/``.txnindex`` file that fails Kafka's sanity checks."""


class CorruptCheckpointError(CorruptDataError):
    """A checkpoint, ``meta.properties``, ``partition.metadata`` or producer snapshot file that cannot be parsed."""


class InvalidOptionError(KafkaSegError, ValueError):
    """An unknown or malformed read option; the message names the option and what it accepts."""


class DataLossError(KafkaSegError):
    """Requested offsets are no longer in the log (below the log start offset or in a gap) and failOnDataLoss is on."""


class LostTailError(TruncatedDataError, DataLossError):
    """Offsets the recovery point proves the broker had flushed past where the active segment's readable batches
    end, with no high watermark to bound the log: lost with its tail (``kafkaseg.storage.layout.judge_tail``). A
    strict read raises it there (``failOnDataLoss``), as ``offsets``/``locate`` do when their answer depends on it.
    A :class:`DataLossError`, as the loss a high watermark and the recovery point above the log end prove is, and a
    :class:`TruncatedDataError` carrying the file (``path``) and the byte (``position``) where the batches end."""


class LayoutError(KafkaSegError):
    """A path that is not a Kafka log dir, topic-partition dir or segment file, or an unreadable file."""


class BadPathError(LayoutError):
    """A path given to read that names no log dir, topic-partition dir, ``.log`` file or glob match: one that does
    not exist, an empty one, or some other file. An error in the arguments rather than in the data (``kafkaseg
    consume`` prints no total for it, as for its other usage errors)."""


class SegmentFileError(LayoutError):
    """What makes a partition folder's segments unreadable as a log, said of one segment name: ``path`` is the
    segment's ``.log`` name, ``detail`` what is wrong with it, as for :class:`CorruptDataError`; the message says
    both. ``verify``, ``describe`` and ``offsets`` report it as that partition's error (a read raises it)."""

    _FORMAT = "{path}: {detail}"

    def __init__(self, detail: str, path: str):
        self.detail = detail
        self.path = path
        super().__init__(self._FORMAT.format(path=path, detail=detail))

    def __reduce__(self):  # (pickled into and out of Spark workers whole)
        return type(self), (self.detail, self.path)

    def each(self) -> tuple["SegmentFileError", ...]:
        """This error and the others of the same folder it stands for (each a file of its own to report)."""
        return (self,)


class UnreadableSegmentError(SegmentFileError):
    """A segment name whose entry is no readable file: a broken link, a folder, a FIFO, socket or device, or one
    that cannot be stat'ed. A read refuses it (its records would go missing); a broker's ``LogLoader`` passes over
    such entries, so ``kafkaseg log-dirs`` describes the log dir without it. ``detail`` says what it is instead."""

    _FORMAT = "cannot read segment {path}: {detail}"


class SegmentNameError(SegmentFileError):
    """A segment file whose name's base offset does not fit in a 64-bit long, or in the metadata log's folder a KRaft
    snapshot whose name's end offset does not (its epoch a 32-bit int), or whose name is not ``<20 digits>-<10
    digits>.checkpoint`` where ``Snapshots.parse`` reads them. Kafka's ``LogLoader`` fails the log on the
    first (``Long.parseLong``), ``KafkaMetadataLog`` on the second (``Snapshots.parse``), and ``LogManager.loadLogs``
    rethrows what is no ``IOException``: the broker does not load the log dir, so ``kafkaseg log-dirs`` says it
    offline, and a read refuses the partition. ``also``: the folder's other files named so, after this one (each
    an error of its own: :meth:`each`)."""

    def __init__(self, detail: str, path: str, also: tuple["SegmentNameError", ...] = ()):
        super().__init__(detail, path)
        self.also = tuple(also)

    def __reduce__(self):
        return type(self), (self.detail, self.path, self.also)

    def each(self) -> tuple["SegmentFileError", ...]:
        return (self, *self.also)


class FolderChangingError(LayoutError):
    """A local folder a live broker changed under every listing taken of it for a while (segments renamed or
    created faster than a listing takes): no listing could be known whole. Transient: a later listing succeeds;
    ``kafkaseg.storage.fs.settled_list_dir`` waits over a second for one before raising this."""


class KeyUnavailableError(LayoutError):
    """A tiered-storage copy is stored encrypted and no key given opens it (no key ring, a key pair the ring lacks,
    a key file that cannot be read or is not the pair's private key)."""


class ExportMismatchError(KafkaSegError):
    """A table write found a different number of records in the files it wrote than the read planned; nothing was
    committed (``kafkaseg.spark.tables.write_delta``)."""


class ConcurrentWriteError(KafkaSegError):
    """A table write whose commit another run of the same job beat: both read the table at one version, so both
    would add the same rows; nothing of this run was committed (``kafkaseg.spark.tables.write_delta``)."""


class TableSchemaError(KafkaSegError):
    """An append to a Delta table whose columns differ from the rows written (a column only in the rows, or one
    of another type): Delta readers would silently drop or misread it, so nothing was written
    (``kafkaseg.spark.tables.write_delta``)."""


class DeserializationError(KafkaSegError):
    """A record value a Kafka deserializer cannot read (``kafkaseg consume``'s ``value.deserializer`` and
    friends: Kafka's ``SerializationException``)."""


class CompactedTableError(KafkaSegError):
    """A compacted Delta table that does not fit the run (``kafkaseg.compaction``): other columns than the read
    gives, offsets recorded for another incarnation of a topic or another cluster, or no offsets recorded at all."""


def first_line(exc: BaseException) -> str:
    """The first non-blank line of ``exc``'s message (its class name when there is none): how a one-line report
    quotes another library's multi-line error."""
    return next((line.strip() for line in str(exc).splitlines() if line.strip()), type(exc).__name__)


def did_you_mean(name: str, names: Iterable[str]) -> str:
    """`` (did you mean 'a'?)``, naming the one name of ``names`` closest to ``name`` (one that differs only in case
    first), or ``""`` when none is close: the hint every message about a name that is not there (a misspelt topic,
    column, option, formatter property) ends with. A prefix ``name`` shares with a name up to a ``.``, ``-`` or
    ``_`` (``print.`` of ``print.valu`` and every ``print.*`` property) says nothing about which one was meant, so
    what follows it is compared (difflib's ratio, at least 0.6; the whole names break ties); when no name is that
    close, the whole names are (at least 0.8: ``orders-ue`` names ``orders-eu`` and ``orders-us``); names equally
    close are all named (``'a' or 'b'``), as they are equally likely."""
    choices = sorted(set(names))
    same = [c for c in choices if c.lower() == name.lower()]
    if same:
        close = same[:1]
    else:
        scored = [(_closeness(name, c), c) for c in choices]
        best = max((score for score, _ in scored), default=(0.0, 0.0))
        close = [c for score, c in scored if score == best] if best[0] >= 0.6 else []
        if not close:  # a typo in a short tail after the shared prefix (orders-ue): the whole names, held closer
            whole = max((score[1] for score, _ in scored), default=0.0)
            close = [c for score, c in scored if score[1] == whole] if whole >= _WHOLE_NAME_CUTOFF else []
    if not close:
        return ""
    quoted = [repr(c) for c in close[:3]]
    listed = quoted[0] if len(quoted) == 1 else f"{', '.join(quoted[:-1])} or {quoted[-1]}"
    return f" (did you mean {listed}?)"


_WHOLE_NAME_CUTOFF = 0.8  # (did_you_mean: 'print.xyz' is not close to 'print.key' for its shared 'print.')


def _closeness(name: str, choice: str) -> tuple[float, float]:
    """How close ``choice`` is to ``name``: difflib's ratio of what follows the prefix they share up to a
    separator, then of the whole names."""
    import difflib
    import os.path

    shared = os.path.commonprefix([name, choice])
    cut = max((i + 1 for i, ch in enumerate(shared) if ch in "._-"), default=0)
    if cut == len(name) or cut == len(choice):
        cut = 0
    return (difflib.SequenceMatcher(None, name[cut:], choice[cut:]).ratio(),
            difflib.SequenceMatcher(None, name, choice).ratio())
