"""Read-only file access for Kafka data dirs on local disks, ``file://``, ``s3://``, ``hdfs://`` (any URI
:func:`pyarrow.fs.FileSystem.from_uri` accepts).

Everything here only reads: files are opened with ``open_input_file`` (or ``os.open(O_RDONLY)`` locally), never for
writing. Reads are positioned and bounded: :func:`read_at` returns at most ``length`` bytes from ``position``;
:func:`read_small_file` refuses files above a size cap (checkpoints, indexes, snapshots are small). Nothing in this
module reads a whole segment.

Non-local files (S3, HDFS, any pyarrow filesystem but the local one) are read through :class:`_RemoteFiles`, one
per filesystem object: a file is opened once (on S3 an open is a HEAD request) and reads shorter than
:data:`REMOTE_BLOCK_BYTES` are served from aligned blocks of that size, the last :data:`REMOTE_CACHE_BYTES` of them
kept. Planning reads small pieces (checkpoints, indexes, a few batch headers, index entries probed one by one),
often the same ones from several places; on object storage each would otherwise be a request of 10-50 ms. Bulk
reads (a slice's chunks, :meth:`RandomAccessReader.read_into`, :data:`REMOTE_READ_BYTES` at a time) go straight to
the file.

Local segment ranges can also be mapped (:meth:`RandomAccessReader.map_range`): read-only ``MAP_SHARED`` mappings
of a bounded window, decoded in place with no copy. A live broker may truncate a segment under a mapping, which
would normally kill the reader with SIGBUS; ``kafkaseg.storage._mapped`` guards every mapping (the vanished pages
read as zeros and the mapping reports ``faulted``), and callers check ``faulted`` and :meth:`change_stamp` after
using a mapping and reread the range with ``pread`` when either says the file changed.
"""

from __future__ import annotations

import calendar
import copyreg
import errno
import os
import socket
import stat as stat_module
import posixpath
import re
import threading
import time
import weakref
from collections import OrderedDict
from typing import Iterable, NamedTuple, Sequence
from urllib.parse import unquote

import pyarrow as pa
import pyarrow.fs as pafs

from kafkaseg.errors import FolderChangingError, LayoutError

try:
    from kafkaseg.storage._mapped import MappedRange as _MappedRange
except ImportError:  # not compiled: files are read with pread only
    _MappedRange = None

#: What pyarrow filesystems raise: ``OSError`` (``ArrowIOError``), ``ValueError`` (``ArrowInvalid``), and the bare
#: ``ArrowException`` some stores' errors come as (Google Cloud Storage's "Unknown error" statuses).
FILESYSTEM_ERRORS = (OSError, ValueError, pa.ArrowException)

#: Whether guarded mappings can be made here (the compiled ``kafkaseg.storage._mapped`` is importable).
MAPPING_AVAILABLE = _MappedRange is not None

__all__ = [
    "open_filesystem",
    "canonical_scheme",
    "file_identity",
    "changed_since",
    "same_file",
    "redact",
    "is_local",
    "join",
    "parent",
    "basename",
    "FileEntry",
    "list_dir",
    "started_folders",
    "stat",
    "exists",
    "read_small_file",
    "read_at",
    "RandomAccessReader",
    "ReadAhead",
    "REMOTE_READ_AHEAD",
    "DEFAULT_SMALL_FILE_CAP",
    "MAPPING_AVAILABLE",
    "REMOTE_BLOCK_BYTES",
    "REMOTE_THREADS",
    "map_files",
    "release_cached_blocks",
    "REMOTE_CACHE_BYTES",
    "REMOTE_READ_BYTES",
]

#: Default cap for :func:`read_small_file`: checkpoints and snapshots are KiBs; an index is at most
#: ``segment.index.bytes`` (10 MiB by default), so 64 MiB leaves room for raised configs.
DEFAULT_SMALL_FILE_CAP = 64 * 1024 * 1024

#: A read of a non-local file shorter than this fetches the aligned block(s) of this size around it (one request),
#: kept for the reads that follow: a header walk, an index's binary search, a checkpoint read twice.
REMOTE_BLOCK_BYTES = 1 << 20
#: At most this many bytes of blocks are kept per non-local filesystem object, least recently used dropped first.
REMOTE_CACHE_BYTES = 32 << 20
#: At most this many non-local files are kept open per filesystem object (an open file is a path and a size).
REMOTE_OPEN_FILES = 4096
#: Bulk reads of a non-local file (a slice's record data) fetch this much per request: object stores charge a
#: latency of tens of ms per request, so 2 MiB requests spend about as long waiting as transferring.
REMOTE_READ_BYTES = 8 << 20
#: A slice of a non-local file keeps this many such requests in flight ahead of the one being decoded
#: (:class:`ReadAhead`): an object store serves one stream at a fraction of a client's bandwidth.
REMOTE_READ_AHEAD = 4


def redact(text: str) -> str:
    """``text`` with the secret of a URI's user info masked (``s3://KEY:SECRET@bucket/...`` ->
    ``s3://KEY:***@bucket/...``), for messages: pyarrow takes credentials there. The user info ends at the last
    ``@`` before the query, so a secret with an unescaped ``/`` (which pyarrow then cannot parse) is masked too."""
    scheme, sep, rest = str(text).partition("://")
    if not sep:
        return str(text)
    head = rest.split("?", 1)[0]
    at = head.rfind("@")
    colon = head.find(":")
    if at < 0 or colon < 0 or colon > at:
        return str(text)
    return f"{scheme}://{rest[:colon + 1]}***{rest[at:]}"


def open_filesystem(path: str) -> tuple[pafs.FileSystem, str]:
    """The filesystem holding ``path`` and the path as that filesystem names it.

    Plain paths (no ``scheme://``) are local and come back absolute; URIs go through
    :func:`pyarrow.fs.FileSystem.from_uri` (``file://``, ``s3://bucket/key``, ``hdfs://host/path``, ...), with
    Hadoop's ``s3a://``/``s3n://`` read as ``s3://``. An ``s3://`` URI also takes ``connect_timeout`` and
    ``request_timeout`` (seconds) in its query, and its filesystem is the one Spark executors unpickle (pyarrow's 3
    attempts per request, not the AWS SDK's 10): see :func:`_as_pickled`.
    """
    path = os.fspath(path)
    if "://" not in path:
        return pafs.LocalFileSystem(), os.path.abspath(path)
    shown = repr(redact(path))  # messages quote the URI as given, not as it is handed to pyarrow
    scheme, _, rest = path.partition("://")
    path = f"{canonical_scheme(scheme)}://{rest}"
    timeouts: dict[str, float] = {}
    if canonical_scheme(scheme).lower() == "s3":
        path, timeouts = _s3_timeouts(path, shown)
    elif scheme.lower() in ("gs", "gcs") and "retry_limit_seconds=" not in path.partition("#")[0].partition("?")[2]:
        # Google's client retries for 15 minutes by default, so a read without credentials (it cannot get a token
        # from the metadata server) or of an unreachable endpoint seemed to hang; pyarrow's parameter bounds it
        head, hash_, fragment = path.partition("#")
        path = head + ("&" if "?" in head else "?") + f"retry_limit_seconds={GCS_RETRY_LIMIT_SECONDS:g}" + hash_ \
            + fragment
    keeps_tls_setting = "tls_verify_certificates" in path.partition("?")[2]
    if timeouts and keeps_tls_setting:
        raise LayoutError(f"{shown}: {' and '.join(sorted(timeouts))} cannot be combined with "
                          "tls_verify_certificates (pyarrow keeps that setting only in the filesystem from_uri makes, "
                          "which takes no timeouts)")
    try:
        filesystem, normalized = pafs.FileSystem.from_uri(path)
    except FILESYSTEM_ERRORS as exc:
        raise LayoutError(f"cannot open filesystem for {shown}: {str(exc).replace(path, redact(path))}") from None
    if isinstance(filesystem, pafs.S3FileSystem):
        filesystem = _from_uri_pickled(filesystem, path) if keeps_tls_setting else _as_pickled(filesystem, timeouts)
    if isinstance(filesystem, pafs.LocalFileSystem):
        normalized = os.path.abspath(normalized)
    return filesystem, normalized.rstrip("/") if len(normalized) > 1 else normalized


#: How long a ``gs://`` filesystem retries a failing request when the URI does not say (``retry_limit_seconds``).
GCS_RETRY_LIMIT_SECONDS = 30.0

#: Query parameters kafkaseg adds to ``s3://`` URIs (pyarrow's ``from_uri`` takes no timeout): seconds, > 0.
S3_TIMEOUT_PARAMETERS = ("connect_timeout", "request_timeout")


def _s3_timeouts(uri: str, shown: str | None = None) -> tuple[str, dict[str, float]]:
    """``uri`` without kafkaseg's timeout parameters, and their values (:data:`S3_TIMEOUT_PARAMETERS`); errors
    quote ``shown`` (the URI as given), else ``uri``."""
    shown = shown if shown is not None else repr(redact(uri))
    base, sep, query = uri.partition("?")
    if not sep:
        return uri, {}
    kept, timeouts = [], {}
    for item in query.split("&"):
        name, _, value = item.partition("=")
        if name not in S3_TIMEOUT_PARAMETERS:
            kept.append(item)
            continue
        if name in timeouts:
            raise LayoutError(f"{shown}: query parameter {name!r} is given twice")
        value = unquote(value)  # as pyarrow decodes its own parameters' values
        try:
            seconds = float(value)
        except ValueError:
            seconds = float("nan")
        if not seconds > 0 or seconds == float("inf"):
            raise LayoutError(f"{shown}: query parameter {name!r} must be a number of seconds above 0, "
                              f"not {value!r}")
        timeouts[name] = seconds
    return base + ("?" + "&".join(kept) if kept else ""), timeouts


def _as_pickled(filesystem: pafs.S3FileSystem, timeouts: dict[str, float]) -> pafs.S3FileSystem:
    """``filesystem`` as a Spark executor gets it (rebuilt from its pickled settings), with ``timeouts``.

    ``from_uri`` gives S3 filesystems the AWS SDK's default retries (10 attempts: an endpoint that accepts
    connections and never answers fails after about 100 s), while the same filesystem unpickled on an executor
    has pyarrow's (3 attempts, about 12 s). Rebuilding it the pickle's way makes the driver, the CLI and the
    executors behave alike, and is the one way to set timeouts on a filesystem made from a URI."""
    rebuild, (settings, *rest) = filesystem.__reduce__()
    settings = dict(settings, **timeouts)
    return rebuild(settings, *rest)


# The URIs of S3 filesystems made from a URI that sets tls_verify_certificates, by object: pyarrow's own pickle drops
# that setting (its constructor has no such parameter), so a Spark executor would verify certificates the driver
# was told not to and fail on every read. Such a filesystem is pickled as its URI instead. Each open_filesystem
# still makes its own object (a filesystem's open files and cached blocks live as long as it does), and an entry
# goes with its object.
_TLS_URIS: dict[int, str] = {}


def _from_uri_pickled(filesystem: pafs.S3FileSystem, uri: str) -> pafs.S3FileSystem:
    """Register ``filesystem`` (made from ``uri``, which sets ``tls_verify_certificates``) to be pickled as
    ``uri`` (see :func:`_reduce_s3`)."""
    _TLS_URIS[id(filesystem)] = uri
    weakref.finalize(filesystem, _TLS_URIS.pop, id(filesystem), None)
    return filesystem


def _reduce_s3(filesystem: pafs.S3FileSystem):
    uri = _TLS_URIS.get(id(filesystem))
    if uri is not None:
        return _s3_from_uri, (uri,)
    return filesystem.__reduce__()


def _s3_from_uri(uri: str) -> pafs.FileSystem:
    """Unpickle an S3 filesystem made from a URI with ``tls_verify_certificates`` (on a Spark executor)."""
    filesystem, _ = pafs.FileSystem.from_uri(uri)
    return _from_uri_pickled(filesystem, uri)


copyreg.pickle(pafs.S3FileSystem, _reduce_s3)  # pickle (and cloudpickle) consult this before __reduce__


def same_store(first: pafs.FileSystem, second: pafs.FileSystem) -> bool:
    """Whether two filesystems reach the same store, so the same path names the same object in both: the same kind,
    and for S3 the same endpoint, scheme and region (timeouts, retries and credentials may differ)."""
    first, second = base_store(first), base_store(second)
    if type(first) is not type(second):
        return False
    if isinstance(first, pafs.S3FileSystem):
        return store_key(first) == store_key(second)
    return first.equals(second)


def store_key(filesystem: pafs.FileSystem) -> tuple:
    """What tells stores apart: for S3 the endpoint, scheme and region (timeouts, retries and credentials do not),
    for any other filesystem its kind (see :func:`same_store` for the one that compares instances)."""
    filesystem = base_store(filesystem)
    if isinstance(filesystem, pafs.S3FileSystem):
        given = filesystem.__reduce__()[1][0]
        return ("s3", *(given.get(k) for k in ("endpoint_override", "scheme", "region")))
    return (type(filesystem).__name__,)


def base_store(filesystem: pafs.FileSystem) -> pafs.FileSystem:
    """The filesystem a ``PyFileSystem`` wrapping another reads through (``tiered.ChunkedObjects``' ``base``),
    ``filesystem`` itself otherwise."""
    base = getattr(getattr(filesystem, "handler", None), "base", None)
    return base if isinstance(base, pafs.FileSystem) else filesystem


def canonical_scheme(scheme: str) -> str:
    """A URI scheme as pyarrow names its store: Hadoop's ``s3a``/``s3n`` (what Spark jobs write) as ``s3``, any
    other as it is."""
    return "s3" if scheme.lower() in ("s3a", "s3n") else scheme


def is_local(filesystem: pafs.FileSystem | None) -> bool:
    """Whether ``filesystem`` reads local files (also through a ``PyFileSystem`` wrapping the local one, which
    serves some of them transformed: ``tiered.ChunkedObjects``)."""
    return filesystem is None or isinstance(base_store(filesystem), pafs.LocalFileSystem)


def _served_by(filesystem: pafs.FileSystem, path: str) -> pafs.FileSystem:
    """The filesystem that reads ``path``: a wrapping ``PyFileSystem``'s base for the paths it does not transform
    (``tiered.ChunkedObjects.objects``), so those are read as any file of the store (a local one mapped, known
    by its inode)."""
    base = base_store(filesystem)
    objects = getattr(getattr(filesystem, "handler", None), "objects", None)
    return base if base is not filesystem and isinstance(objects, dict) and path not in objects else filesystem


def _resolve(filesystem: pafs.FileSystem | None, path: str) -> tuple[pafs.FileSystem, str]:
    if filesystem is None:
        return open_filesystem(path)
    return filesystem, path


def join(base: str, *names: str) -> str:
    """Join path parts with ``/`` (what every pyarrow filesystem, local ones included on POSIX, uses); a URI's
    query stays at the end (``s3://b/t?region=x`` + ``_delta_log`` -> ``s3://b/t/_delta_log?region=x``)."""
    if "://" in base and "?" in base:
        base, _, query = base.partition("?")
        return posixpath.join(base, *names) + "?" + query
    return posixpath.join(base, *names)


def parent(path: str) -> str:
    return posixpath.dirname(path.rstrip("/"))


def basename(path: str) -> str:
    return posixpath.basename(path.rstrip("/"))


class FileEntry(NamedTuple):
    """One directory entry: ``path`` as the filesystem names it, ``name`` its last part."""

    path: str
    name: str
    is_dir: bool
    size: int
    mtime_ms: int | None
    readable: bool = True  # False for an entry that cannot be stat'ed (a broken symlink)
    # (st_dev, st_ino) of a local file, from the same stat as its size: which file the listing saw
    identity: tuple[int, int] | None = None


def _entry(info: pafs.FileInfo) -> FileEntry:
    mtime = info.mtime_ns
    # pyarrow's Unknown is what is neither a file nor a folder (a FIFO, socket or device on a local or mounted
    # store): unreadable, as _list_local lists it
    return FileEntry(info.path, info.base_name, info.type == pafs.FileType.Directory,
                     info.size if info.size is not None else 0,
                     None if mtime is None else mtime // 1_000_000, info.type != pafs.FileType.Unknown)


def started_folders(filesystem: pafs.FileSystem, base: str, name: re.Pattern) -> list[tuple[pafs.FileInfo, float]]:
    """The folders in ``base`` whose names a run gave them with its start time: ``name`` fully matches the folder
    name, its group 1 a ``%Y%m%dT%H%M%S`` stamp and group 2 ``Z`` for UTC (empty: local time, as older runs named
    them). Each with that start in epoch seconds; a folder named so but with an impossible time is no run's and is
    left out. Empty when ``base`` cannot be listed (a cleanup of such folders must never fail its caller)."""
    try:
        entries = filesystem.get_file_info(pafs.FileSelector(base, allow_not_found=True))
    except FILESYSTEM_ERRORS:
        return []
    found = []
    for entry in entries:
        match = name.fullmatch(entry.base_name)
        if entry.type != pafs.FileType.Directory or match is None:
            continue
        try:
            parsed = time.strptime(match.group(1), "%Y%m%dT%H%M%S")
            found.append((entry, calendar.timegm(parsed) if match.group(2) else time.mktime(parsed)))
        except (ValueError, OverflowError):
            continue
    return found


def list_dir(path: str, filesystem: pafs.FileSystem | None = None) -> list[FileEntry]:
    """The entries directly inside directory ``path``, sorted by name. Raises :class:`LayoutError` when unreadable.
    A local directory is listed by :func:`_list_local` (an entry that cannot be stat'ed, such as a broken symlink,
    is listed with ``readable`` False, so that a segment that cannot be read is reported instead of silently
    missing from the scan)."""
    filesystem, path = _resolve(filesystem, path)
    if isinstance(filesystem, pafs.LocalFileSystem):
        return _list_local(path)[0]
    try:
        infos = filesystem.get_file_info(pafs.FileSelector(path, allow_not_found=False, recursive=False))
    except FILESYSTEM_ERRORS as exc:
        raise LayoutError(f"cannot list {path}: {exc}") from exc
    entries = []
    for info in infos:
        try:
            entries.append(_entry(info))
        except UnicodeDecodeError:
            # pyarrow decodes names as UTF-8. Kafka names nothing it writes outside ASCII (topic names are
            # [a-zA-Z0-9._-]), so such an entry is no partition or segment: left out like any other stray name
            continue
    return sorted(entries, key=lambda e: e.name)


def _list_local(path: str) -> tuple[list[FileEntry], list[str]]:
    """A local directory's entries (sorted by name), and the names it read that were gone by the time they were
    stat'ed (a rename or deletion under way). Names that are not UTF-8 are left out: Kafka writes none (topic
    names are [a-zA-Z0-9._-]). A folder that can be read but not searched (no x permission) cannot be listed."""
    try:
        with os.scandir(path) as scan:
            names = [entry.name for entry in scan]
    except OSError as exc:
        raise LayoutError(f"cannot list {path}: {exc}") from exc
    entries: list[FileEntry] = []
    gone: list[str] = []
    for name in names:
        if not _utf8(name):
            continue
        full = posixpath.join(path, name)
        try:
            info = os.stat(full)
        except FileNotFoundError:
            if os.path.lexists(full):  # a symlink to nothing
                entries.append(FileEntry(full, name, False, 0, None, False))
            else:
                gone.append(name)
            continue
        except PermissionError as exc:
            if not os.access(path, os.X_OK):
                raise LayoutError(f"cannot list {path}: {exc} (the folder can be read but not searched)") from exc
            entries.append(FileEntry(full, name, False, 0, None, False))
            continue
        except OSError:  # an I/O error: there, and unreadable
            entries.append(FileEntry(full, name, False, 0, None, False))
            continue
        is_dir = stat_module.S_ISDIR(info.st_mode)
        # a FIFO, socket or device is listed unreadable: its size (0) says nothing of what it holds, and a read
        # of it may block or never end
        readable = is_dir or stat_module.S_ISREG(info.st_mode)
        entries.append(FileEntry(full, name, is_dir, 0 if is_dir else info.st_size, info.st_mtime_ns // 1_000_000,
                                 readable, None if is_dir else (info.st_dev, info.st_ino)))
    return sorted(entries, key=lambda e: e.name), gone


#: How many rounds of up to three listings :func:`settled_list_dir` takes at most, waiting 2, 4, 8... ms between
#: (at most 250 ms): about 1.3 s of waiting in all
SETTLE_ROUNDS = 12
#: The names a segment's files have, before, during and after a broker's rename (``.swap``, ``.cleaned``,
#: ``.deleted``): a listing that misses one of these may miss a segment
_SEGMENT_FILE = re.compile(r"^(\d+)\.(?:log|index|timeindex|txnindex)(?:\.(?:swap|cleaned|deleted))?$")


def _vanishing(name: str) -> bool:
    """Whether a name gone by its stat was on its way out, not renamed to a name the listing may have missed:
    a ``.deleted`` file removed (``file.delete.delay.ms`` after retention or the cleaner renamed it), a
    checkpoint's temporary file renamed over the checkpoint (whose name stays), or a ``-delete``/``-stray``
    folder removed (no reader reads those)."""
    return name.endswith((".deleted", ".tmp", "-delete", "-stray"))


#: ``<topic, cut to fit 255 characters>-<partition>.<id>-delete`` (or ``-stray``)
DELETION_NAME = re.compile(r"^(.+)-(\d+)\.[0-9a-fA-F-]+-(?:delete|stray)$")


def names_topic(folder_name: str, named: str, topic: str) -> bool:
    """Whether a ``-delete``/``-stray`` folder ``folder_name`` whose name says topic ``named`` is of ``topic``: the
    broker cuts the topic in such a name to keep it within 255 characters
    (``LocalLog.logDirNameWithSuffixCappedLength``), so a cut name is of every topic it starts."""
    return named == topic or (len(folder_name) >= 255 and topic.startswith(named))


def renamed_for_deletion(name: str, others: Iterable[str]) -> bool:
    """Whether folder ``name`` (``<topic>-<partition>``, or a ``-future`` copy's) shows among ``others`` renamed
    ``<topic>-<partition>.<id>-delete`` (or ``-stray``), its topic perhaps cut to keep the name within 255
    characters (:func:`names_topic`)."""
    if name.endswith("-future") and "." in name:
        name = name[:name.rfind(".")]
    topic, _, partition = name.rpartition("-")
    for other in others:
        match = DELETION_NAME.match(other)
        if match is not None and match.group(2) == partition and names_topic(other, match.group(1), topic):
            return True
    return False


def _shape(entries: list[FileEntry]) -> tuple[set, dict]:
    """What two listings of a folder are compared by: its folders' names (but ``-delete``/``-stray`` ones, which
    are never read), and its segment files (by name: inode)."""
    folders = {e.name for e in entries if e.is_dir and not e.name.endswith(("-delete", "-stray"))}
    segments = {e.name: e.identity for e in entries if not e.is_dir and _SEGMENT_FILE.match(e.name)}
    return folders, segments


def _confirms(first: list[FileEntry], second: list[FileEntry], gone: Sequence[str] = ()) -> bool:
    """Whether ``second``, listed right after ``first``, shows ``first`` missed nothing: the same folders (but
    those renamed for deletion meanwhile: a topic deletion renames a large topic's folders one after another for
    seconds), every segment file of ``first`` as it was, and no other segment file but new ones past its last
    segment (a roll creates those; a segment file renamed into the middle of the log is one ``first`` may have
    missed), and every name ``first`` read but found ``gone`` by its stat renamed for deletion in ``second``."""
    folders, segments = _shape(first)
    later_folders, later_segments = _shape(second)
    deletions = [e.name for e in second if e.is_dir and e.name.endswith(("-delete", "-stray"))]
    if any(not renamed_for_deletion(name, deletions) for name in gone):
        return False
    if later_folders - folders or any(not renamed_for_deletion(name, deletions) for name in folders - later_folders):
        return False
    if any(later_segments.get(name, ()) != identity for name, identity in segments.items()):
        return False
    last = max((int(_SEGMENT_FILE.match(name).group(1)) for name in segments), default=-1)
    return all(int(_SEGMENT_FILE.match(name).group(1)) > last for name in later_segments if name not in segments)


def settled_list_dir(path: str, filesystem: pafs.FileSystem | None = None) -> list[FileEntry]:
    """:func:`list_dir`, for a folder a live broker may be changing. A directory listing is no snapshot: one
    taken while a file is renamed can hold neither name (the log cleaner's last step, ``X.log.swap`` -> ``X.log``
    after the merged segments were renamed ``.deleted``, then leaves a whole segment out of the listing, with
    nothing to tell its offsets from a compaction gap; a partition folder's ``-future`` -> final name as a move
    between log dirs ends), and a name read before a rename is gone by its stat. So a local folder's listing is
    taken only when known whole: nothing gone by its stat (but ``.deleted`` files removed and checkpoints' ``.tmp``
    files) and the folder's status change time (which every create, rename and removal in it sets, and nobody can
    set back) the same before and after it and older than a clock tick; or else confirmed by the listing taken
    right after it (:func:`_confirms`: a roll's new segment files may appear, nothing else may change). Listings
    are taken back to back, three at most in a round; :data:`SETTLE_ROUNDS` rounds, each after a longer wait
    (2 ms, doubling up to 250 ms: a broker's renames come in bursts). Raises
    :class:`~kafkaseg.errors.FolderChangingError` when none is (a broker renaming files faster than listings take,
    for over a second): never a listing that may miss one. An object store's listing (no renames: a key appears
    or goes whole) is taken as it is."""
    filesystem, path = _resolve(filesystem, path)
    if not isinstance(filesystem, pafs.LocalFileSystem):
        return list_dir(path, filesystem)
    for attempt in range(SETTLE_ROUNDS):
        if attempt:  # changing under every listing: a burst of renames (the cleaner's, retention's) ends soon
            time.sleep(min(0.002 * 2 ** (attempt - 1), 0.25))
        previous, previous_gone = None, []
        for _ in range(3):  # back to back: the less time between two listings, the likelier they agree
            started = time.time_ns()
            before = _ctime_ns(path)
            entries, gone = _list_local(path)
            after = _ctime_ns(path)
            unexplained = [name for name in gone if not _vanishing(name)]
            if not unexplained and before == after and before < started - CTIME_TICK_NS:
                return entries
            if previous is not None and _confirms(previous, entries, previous_gone):
                return previous
            # a segment file gone by its stat may have been renamed to a name this listing missed: no use as one
            # to confirm; other names gone (folders renamed for deletion) the next listing can explain
            usable = not any(_SEGMENT_FILE.match(name) for name in unexplained)
            previous, previous_gone = (entries, unexplained) if usable else (None, [])
    raise FolderChangingError(f"cannot list {path} whole: {3 * SETTLE_ROUNDS} listings changed under way (a live "
                              "broker renaming its files faster than a listing takes); try again")


def _ctime_ns(path: str) -> int:
    try:
        return os.stat(path).st_ctime_ns
    except OSError as exc:
        raise LayoutError(f"cannot list {path}: {exc}") from exc


def _utf8(name: str) -> bool:
    """Whether a name from ``os.listdir`` was valid UTF-8 (Python keeps undecodable bytes as lone surrogates)."""
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def stat(path: str, filesystem: pafs.FileSystem | None = None, shown: str | None = None) -> FileEntry | None:
    """The entry for ``path``, or None when nothing is there. An error names ``shown`` (how the user gave the path:
    a URI, query and all) when given, else ``path``."""
    filesystem, resolved = _resolve(filesystem, path)
    try:
        info = filesystem.get_file_info(resolved)
    except FILESYSTEM_ERRORS as exc:
        raise LayoutError(f"cannot stat {shown or resolved}: {exc}") from exc
    if info.type == pafs.FileType.NotFound:
        return None
    return _entry(info)


def exists(path: str, filesystem: pafs.FileSystem | None = None) -> bool:
    return stat(path, filesystem) is not None


def is_delta_table(path: str) -> bool:
    """Whether ``path`` (any filesystem) holds a Delta table: a ``_delta_log`` folder (the export's and the
    compaction's check before writing)."""
    entry = stat(join(path, "_delta_log"))
    return entry is not None and entry.is_dir


class _RemoteFiles:
    """The files one non-local filesystem object has opened and the blocks read from them, shared by all its
    readers. It lives as long as that filesystem object: one discovery and the scan, CLI command or Spark task
    using it (each opens its own). Objects are taken not to change meanwhile, as for a file's size at open (S3
    replaces objects whole; nothing appends to them as a broker appends to a local segment, which never comes
    here)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._handles: OrderedDict[str, object] = OrderedDict()
        self._blocks: OrderedDict[tuple[str, int], bytes] = OrderedDict()
        self.cached_bytes = 0

    def open(self, filesystem: pafs.FileSystem, path: str):
        """The open file at ``path``: opened (a request) only the first time."""
        with self._lock:
            handle = self._handles.get(path)
            if handle is not None:
                self._handles.move_to_end(path)
                return handle
        handle = filesystem.open_input_file(path)
        with self._lock:
            handle = self._handles.setdefault(path, handle)  # a concurrent open of the same path: keep one
            while len(self._handles) > REMOTE_OPEN_FILES:
                self._handles.popitem(last=False)  # not closed: a reader may still use it; freed with the last one
        return handle

    def read(self, path: str, handle, size: int, position: int, length: int) -> bytes:
        """``length`` (< :data:`REMOTE_BLOCK_BYTES`, > 0) bytes from ``position`` (their end capped at ``size``),
        through the blocks they fall in: the missing ones are fetched in one read."""
        block = REMOTE_BLOCK_BYTES
        numbers = range(position // block, (position + length - 1) // block + 1)
        with self._lock:
            found = [self._blocks.get((path, n)) for n in numbers]
            for n, data in zip(numbers, found):
                if data is not None:
                    self._blocks.move_to_end((path, n))
        missing = [n for n, data in zip(numbers, found) if data is None]
        if missing:
            start, end = missing[0] * block, min(size, (missing[-1] + 1) * block)
            fetched = handle.read_at(end - start, start)
            fetched = fetched if isinstance(fetched, bytes) else bytes(fetched)
            with self._lock:
                for i, n in enumerate(numbers):
                    if n in missing:
                        data = found[i] = fetched[n * block - start:(n + 1) * block - start]
                        previous = self._blocks.pop((path, n), None)
                        self.cached_bytes += len(data) - (len(previous) if previous is not None else 0)
                        self._blocks[(path, n)] = data
                while self.cached_bytes > REMOTE_CACHE_BYTES and len(self._blocks) > 1:
                    _, dropped = self._blocks.popitem(last=False)
                    self.cached_bytes -= len(dropped)
        data = found[0] if len(found) == 1 else b"".join(found)
        offset = position - numbers[0] * block
        return data[offset:offset + length]


#: Items on a non-local filesystem (partition folders, partitions to plan or describe) are worked on this many at a
#: time: each costs a few small requests, 10-50 ms apiece on object storage, so one at a time leaves a big backup
#: waiting on round trips (benchmarks/bench_s3.py).
REMOTE_THREADS = 16


def map_files(fn, items: Sequence, filesystems: Iterable[pafs.FileSystem | None]) -> list:
    """``[fn(item) for item in items]``, in up to :data:`REMOTE_THREADS` threads when any of ``filesystems`` is not
    local (on the calling thread otherwise). Results keep the items' order; the first error in that order is
    raised without waiting for items not yet started."""
    if len(items) < 2 or all(is_local(f) for f in filesystems):
        return [fn(item) for item in items]
    from concurrent.futures import ThreadPoolExecutor

    pool = ThreadPoolExecutor(max_workers=min(REMOTE_THREADS, len(items)), thread_name_prefix="kafkaseg")
    try:
        return [future.result() for future in [pool.submit(fn, item) for item in items]]
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def release_cached_blocks(filesystem: pafs.FileSystem | None) -> None:
    """Drop the small-read blocks kept for ``filesystem`` (planning's working set; a scan object kept in a notebook
    would otherwise hold them, up to :data:`REMOTE_CACHE_BYTES`, as long as it lives). Open files are kept. A
    filesystem wrapping another (``tiered.ChunkedObjects``) reads most files through that one (:func:`_served_by`):
    both are released."""
    for each in {id(f): f for f in (filesystem, base_store(filesystem)) if f is not None}.values():
        if isinstance(each, pafs.LocalFileSystem):
            continue
        with _REMOTE_LOCK:
            files = _REMOTE.get(id(each))
        if files is not None:
            with files._lock:
                files._blocks.clear()
                files.cached_bytes = 0


_REMOTE: dict[int, _RemoteFiles] = {}
_REMOTE_LOCK = threading.Lock()


def _after_fork_in_child() -> None:
    """A forked child (a multiprocessing worker, a Spark python worker) has only the forking thread: a lock
    another thread held at the fork would stay held for good, and the read-ahead pool's threads are gone. The
    child starts with fresh locks, no pool, and no open remote files (the AWS SDK's connections are not
    fork-safe)."""
    global _REMOTE_LOCK, _READ_AHEAD_POOL
    _REMOTE_LOCK = threading.Lock()
    _READ_AHEAD_POOL = None
    _REMOTE.clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork_in_child)


def _remote_files(filesystem: pafs.FileSystem) -> _RemoteFiles:
    """The :class:`_RemoteFiles` of ``filesystem`` (pyarrow filesystems are not hashable: keyed by identity, and
    dropped when the filesystem object is, before its identity can be reused)."""
    key = id(filesystem)
    with _REMOTE_LOCK:
        files = _REMOTE.get(key)
        if files is None:
            files = _REMOTE[key] = _RemoteFiles()
            weakref.finalize(filesystem, _REMOTE.pop, key, None)
        return files


def read_small_file(path: str, filesystem: pafs.FileSystem | None = None, *,
                    max_bytes: int = DEFAULT_SMALL_FILE_CAP) -> bytes:
    """The whole content of a small file (checkpoint, ``meta.properties``, snapshot, index).

    Raises :class:`LayoutError` when the file is missing or unreadable or larger than ``max_bytes`` (checked
    before reading, so an unexpected multi-GB file is never pulled into memory).
    """
    filesystem, path = _resolve(filesystem, path)
    # the segment reader's open: a FIFO or device in place of a checkpoint is refused, never waited on; a remote
    # file goes through the shared open files and blocks (it may have been read before)
    with RandomAccessReader(path, filesystem) as reader:
        if reader.size > max_bytes:
            raise LayoutError(f"{path}: {reader.size} bytes is more than the {max_bytes}-byte cap for this kind "
                              "of file")
        return reader.read_at(0, reader.size)


def file_identity(path: str, filesystem: pafs.FileSystem | None = None) -> tuple[str, int, int] | None:
    """``(host and mount namespace, st_dev, st_ino)`` of a local file, None for other filesystems or when it cannot
    be stat'ed. Device and inode numbers only name a file on the host that took them: a shared mount (NFS, FUSE)
    numbers devices per client and FUSE file systems often invent inodes, so :func:`same_file` compares them only
    there."""
    if not is_local(filesystem):
        return None
    try:
        info = os.stat(path)
    except OSError:
        return None
    return _host_key(), info.st_dev, info.st_ino


def segment_identity(path: str, listed: tuple[int, int] | None, filesystem: pafs.FileSystem | None = None
                     ) -> tuple[str, int, int] | None:
    """:func:`file_identity` of a file as a listing saw it (``listed``: its ``FileEntry.identity``, taken with its
    size), else as it is now."""
    if listed is not None and is_local(filesystem):
        return _host_key(), listed[0], listed[1]
    return file_identity(path, filesystem)


def _host_key() -> str:
    """This host and mount namespace: device numbers mean the same file only within both (containers sharing a
    host name, e.g. on host networking, may mount the same share with other device numbers)."""
    global _HOST_KEY
    if _HOST_KEY is None:
        parts = [socket.gethostname()]
        try:
            with open("/proc/sys/kernel/random/boot_id") as boot:
                parts.append(boot.read().strip())
        except OSError:
            parts.append("")
        try:
            parts.append(os.readlink("/proc/self/ns/mnt"))
        except OSError:
            parts.append("")
        _HOST_KEY = "|".join(parts)
    return _HOST_KEY


_HOST_KEY: str | None = None


def same_file(planned: tuple[str, int, int] | None, reader: "RandomAccessReader") -> bool | None:
    """Whether ``reader`` has the file :func:`file_identity` described; None when that cannot be told (no
    identity, another filesystem, or another host than the one that took it)."""
    if planned is None or reader.identity is None or planned[0] != _host_key():
        return None
    return reader.identity == planned[1:]


#: ctime is kept at the kernel's coarse clock (a tick, a few milliseconds), behind the clock a plan reads
CTIME_TICK_NS = 20_000_000
#: an object store's modification times come from its own clock: seconds of skew against the planning host's
REMOTE_CLOCK_SKEW_NS = 5_000_000_000


def changed_since(path: str, filesystem: pafs.FileSystem | None, since_ns: int | None, host: str | None
                  ) -> bool | None:
    """Whether the file at ``path`` was created, renamed or written since ``since_ns`` (a wall clock reading taken
    on ``host``, a :func:`file_identity`'s first part); None when that cannot be told (no time, the file is gone, a
    local file on another host or mount namespace, whose clock and files may differ). A local file by its
    status-change time (which, unlike the modification time, nobody can set back: Kafka's cleaner gives its
    compacted copy the merged segments' mtime), counting a change in the tick before ``since_ns``; an object (S3,
    GCS, HDFS) by its modification time, its upload, counting one up to :data:`REMOTE_CLOCK_SKEW_NS` before."""
    if since_ns is None:
        return None
    if not is_local(filesystem):
        try:
            info = filesystem.get_file_info(path)
        except (OSError, pa.ArrowException):
            return None
        if info.type != pafs.FileType.File or info.mtime_ns is None:
            return None
        return info.mtime_ns >= since_ns - REMOTE_CLOCK_SKEW_NS
    if host != _host_key():
        return None
    try:
        return os.stat(path).st_ctime_ns >= since_ns - CTIME_TICK_NS
    except OSError:
        return None


def read_at(path: str, position: int, length: int, filesystem: pafs.FileSystem | None = None) -> bytes:
    """Up to ``length`` bytes of ``path`` from ``position`` (fewer at the end of the file)."""
    with RandomAccessReader(path, filesystem) as reader:
        return reader.read_at(position, length)


class ReadAhead:
    """In-order reads of ``[start, end)`` of a non-local file, fetched ahead: blocks of ``block_bytes`` aligned on
    ``start``, up to ``depth`` of them in flight past the one being read (in a shared pool of threads), so the
    round trip and transfer of the next requests overlap decoding and each other. Memory: at most
    ``depth + 1`` blocks.

    :meth:`read_into` has :meth:`RandomAccessReader.read_into`'s contract; a read outside the range or behind
    the blocks kept goes to the file directly. A failed fetch raises the file's error when (and only when) its
    bytes are read, as the read itself would have. :meth:`close` cancels what has not started and waits for
    what has (the blocks kept, and those a read jumping forward dropped while they were being fetched), so
    nothing touches the file after it."""

    def __init__(self, reader: "RandomAccessReader", start: int, end: int, *, block_bytes: int = REMOTE_READ_BYTES,
                 depth: int = 0):
        self.reader = reader
        self.start = start
        self.end = max(start, min(end, reader.size))
        self.block_bytes = max(1, block_bytes)
        self.depth = REMOTE_READ_AHEAD if depth <= 0 else depth
        self._blocks: OrderedDict = OrderedDict()  # block start -> Future of its bytes
        self._next = start  # the next block to request
        self._dropped: list = []  # fetches of blocks dropped while running: close() still waits for them

    def _drop(self, future) -> None:
        if not future.cancel() and not future.done():
            self._dropped = [f for f in self._dropped if not f.done()]
            self._dropped.append(future)

    def _block(self, position: int):
        """The future of the block holding ``position`` after requesting up to ``depth`` blocks past it; None when
        that block is behind the ones kept."""
        for begin in list(self._blocks):
            if begin + self.block_bytes > position:
                break
            self._drop(self._blocks.pop(begin))  # passed: dropped (a running fetch finishes in the pool)
        begin = self.start + (position - self.start) // self.block_bytes * self.block_bytes
        if begin < self._next and begin not in self._blocks:
            return None
        if begin > self._next:  # a jump forward: fetch from there on
            for future in self._blocks.values():
                self._drop(future)
            self._blocks.clear()
            self._next = begin
        pool = _read_ahead_pool()
        while self._next < self.end and self._next <= begin + self.depth * self.block_bytes:
            length = min(self.block_bytes, self.end - self._next)
            self._blocks[self._next] = pool.submit(self.reader.read_at, self._next, length, cached=False)
            self._next += length
        return self._blocks.get(begin)

    def read_into(self, position: int, buffer: bytearray | memoryview) -> int:
        view = memoryview(buffer).cast("B")
        if not self.start <= position < self.end or position + len(view) > self.end:
            return self.reader.read_into(position, view)
        done = 0
        while done < len(view):
            future = self._block(position + done)
            if future is None:
                return done + self.reader.read_into(position + done, view[done:])
            begin = self.start + (position + done - self.start) // self.block_bytes * self.block_bytes
            data = future.result()
            offset = position + done - begin
            n = min(len(data) - offset, len(view) - done)
            if n <= 0:
                break
            view[done:done + n] = memoryview(data)[offset:offset + n]
            done += n
            if len(data) < min(self.block_bytes, self.end - begin):
                break  # a short block: the file ends there now
        return done

    def close(self) -> None:
        futures = list(self._blocks.values()) + self._dropped
        self._blocks.clear()
        self._dropped = []
        for future in futures:
            future.cancel()
        for future in futures:
            if not future.cancelled():
                try:
                    future.result()
                except Exception:  # noqa: BLE001 - its bytes are not wanted any more
                    pass

    def __enter__(self) -> "ReadAhead":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


_READ_AHEAD_POOL: tuple[int, object] | None = None


def _read_ahead_pool():
    """The process's pool for :class:`ReadAhead` fetches (made again in a forked child, e.g. a Spark worker)."""
    global _READ_AHEAD_POOL
    with _REMOTE_LOCK:
        if _READ_AHEAD_POOL is None or _READ_AHEAD_POOL[0] != os.getpid():
            from concurrent.futures import ThreadPoolExecutor

            _READ_AHEAD_POOL = (os.getpid(), ThreadPoolExecutor(max_workers=REMOTE_THREADS,
                                                                thread_name_prefix="kafkaseg-read-ahead"))
        return _READ_AHEAD_POOL[1]


class RandomAccessReader:
    """An open read-only file for positioned reads. Local files use ``os.pread`` on an ``O_RDONLY`` descriptor
    (thread-safe, no shared file position); other filesystems a pyarrow ``RandomAccessFile``.

    ``size`` is the size observed when the file was opened: reads never go past it, so a file that grows while
    being read (an active segment) is seen as it was at open. ``identity`` is ``(st_dev, st_ino)`` of a local file
    (None elsewhere): which file was opened, whatever its name is now.
    """

    def __init__(self, path: str, filesystem: pafs.FileSystem | None = None):
        filesystem, path = _resolve(filesystem, path)
        filesystem = _served_by(filesystem, path)
        self.path = path
        self.filesystem = filesystem
        self._fd: int | None = None
        self._handle = None
        self.identity: tuple[int, int] | None = None
        self._remote: _RemoteFiles | None = None
        try:
            if isinstance(filesystem, pafs.LocalFileSystem):
                # O_NONBLOCK: opening a FIFO or device someone left in a data dir must not hang; then only
                # regular files are read (the flag changes nothing for them).
                self._fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
                info = os.fstat(self._fd)
                if not stat_module.S_ISREG(info.st_mode):
                    raise OSError(f"not a regular file (mode {stat_module.filemode(info.st_mode)})")
                self.size = info.st_size
                self.identity = (info.st_dev, info.st_ino)
            else:
                self._remote = _remote_files(filesystem)
                self._handle = self._remote.open(filesystem, path)
                self.size = self._handle.size()
        except FILESYSTEM_ERRORS as exc:
            self.close()
            raise LayoutError(f"cannot open {path} for reading: {exc}") from exc

    def next_data(self, position: int) -> int | None:
        """Where the file holds data at or after ``position``, skipping the holes of a sparse file (``SEEK_DATA``:
        a broker's preallocated segment is one hole past its last append); None when only holes follow;
        ``position`` itself where that cannot be told (an object store, a filesystem without ``SEEK_DATA``)."""
        fd = getattr(self, "_fd", None)
        if fd is None or not hasattr(os, "SEEK_DATA"):
            return position
        try:
            return os.lseek(fd, position, os.SEEK_DATA)
        except OSError as exc:
            return None if exc.errno == errno.ENXIO else position

    def read_at(self, position: int, length: int, *, cached: bool = True) -> bytes:
        """Up to ``length`` bytes from ``position``, never past :attr:`size`. A small read of a non-local file
        goes through the blocks its filesystem keeps (planning's small reads); ``cached=False`` fetches exactly
        the range (record data, read once: :class:`ReadAhead`)."""
        if position < 0 or length < 0:
            raise ValueError(f"negative position {position} or length {length}")
        length = max(0, min(length, self.size - position))
        if length == 0:
            return b""
        try:
            if self._fd is not None:
                data = os.pread(self._fd, length, position)
                while len(data) < length:  # pread may return short reads; loop until EOF or done
                    more = os.pread(self._fd, length - len(data), position + len(data))
                    if not more:
                        break
                    data += more
                return data
            if cached and length < REMOTE_BLOCK_BYTES:
                return self._remote.read(self.path, self._handle, self.size, position, length)
            data = self._handle.read_at(length, position)
            return data if isinstance(data, bytes) else bytes(data)
        except FILESYSTEM_ERRORS as exc:
            raise LayoutError(f"cannot read {length} bytes at byte {position} of {self.path}: {exc}") from exc

    def read_into(self, position: int, buffer: bytearray | memoryview) -> int:
        """Fill ``buffer`` (reused by the caller, so no allocation per read) from ``position``; returns the number
        of bytes read, fewer than ``len(buffer)`` only at :attr:`size`."""
        view = memoryview(buffer).cast("B")
        length = max(0, min(len(view), self.size - position))
        done = 0
        try:
            if self._fd is not None:
                while done < length:
                    n = os.preadv(self._fd, [view[done:length]], position + done)
                    if n <= 0:
                        break
                    done += n
                return done
            while done < length:
                data = self._handle.read_at(length - done, position + done)
                if not len(data):
                    break
                view[done:done + len(data)] = memoryview(data).cast("B")
                done += len(data)
            return done
        except FILESYSTEM_ERRORS as exc:
            raise LayoutError(f"cannot read {length} bytes at byte {position} of {self.path}: {exc}") from exc

    @property
    def mappable(self) -> bool:
        """Whether :meth:`map_range` can work here: a local file and the compiled mapping module."""
        return self._fd is not None and _MappedRange is not None

    def map_range(self, position: int, length: int):
        """A guarded read-only mapping (a buffer-protocol object with ``faulted`` and ``close()``) of up to
        ``length`` bytes from ``position``, never past :attr:`size`; None when this file cannot be mapped (not
        local, no compiled module, or the kernel refused the mapping): the caller then reads with
        :meth:`read_into`."""
        length = max(0, min(length, self.size - position))
        if not self.mappable or length == 0:
            return None
        try:
            return _MappedRange(self._fd, position, length)
        except (OSError, ValueError):
            return None

    def change_stamp(self) -> tuple[int, int]:
        """``(size, ctime in ns)`` now: any write, truncation or append changes it. ``(size at open, 0)`` when not
        local. Mapped reads take one before using a mapping and compare after, so bytes that changed under them
        (a truncation, even one followed by new appends) are reread rather than trusted."""
        if self._fd is None:
            return self.size, 0
        try:
            info = os.fstat(self._fd)
        except OSError as exc:
            raise LayoutError(f"cannot stat {self.path}: {exc}") from exc
        return info.st_size, info.st_ctime_ns

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        self._handle = None  # shared with the filesystem's other readers (_RemoteFiles): not closed here

    def __enter__(self) -> "RandomAccessReader":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self):  # best effort: do not leak descriptors when a caller forgets close()
        try:
            self.close()
        except Exception:
            pass
