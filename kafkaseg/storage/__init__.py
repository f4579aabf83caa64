"""Read-only access to Kafka's on-disk files: layout discovery, checkpoints, segments, indexes, snapshots.

Nothing here writes to, renames in, or deletes from a Kafka data dir. See docs/internals.md for the contracts.

Modules: :mod:`~kafkaseg.storage.fs` (filesystems, bounded reads), :mod:`~kafkaseg.storage.layout` (``discover``,
``PartitionDir``, ``SegmentFiles``, ``LogDir``, ``choose_replicas``, ``last_stable_offset``),
:mod:`~kafkaseg.storage.checkpoints`, :mod:`~kafkaseg.storage.producer_snapshot`,
:mod:`~kafkaseg.storage.segment` (``SegmentReader``, ``log_end_offset``, ``largest_timestamp``),
:mod:`~kafkaseg.storage.offset_index`, :mod:`~kafkaseg.storage.time_index`, :mod:`~kafkaseg.storage.txn_index`,
:mod:`~kafkaseg.storage.indexes` (``load_indexes``, ``rebuild_indexes``, ``verify_offset_index``,
``verify_time_index``).
"""

from kafkaseg.storage.fs import open_filesystem
from kafkaseg.storage.indexes import load_indexes, rebuild_indexes, verify_offset_index, verify_time_index
from kafkaseg.storage.layout import (LogDir, PartitionDir, ReplicaChoice, SegmentFiles, choose_replicas, discover,
                                     last_stable_offset, partition_log_end_offset, read_log_dir)
from kafkaseg.storage.offset_index import OffsetIndex
from kafkaseg.storage.segment import SegmentReader, TailReport, largest_timestamp, log_end_offset
from kafkaseg.storage.time_index import TimeIndex
from kafkaseg.storage.txn_index import AbortedTxn, TransactionIndex

__all__ = [
    "open_filesystem", "discover", "read_log_dir", "choose_replicas", "last_stable_offset",
    "partition_log_end_offset", "LogDir", "PartitionDir", "SegmentFiles", "ReplicaChoice", "SegmentReader",
    "TailReport", "log_end_offset", "largest_timestamp", "OffsetIndex", "TimeIndex", "TransactionIndex",
    "AbortedTxn", "load_indexes", "rebuild_indexes", "verify_offset_index", "verify_time_index",
]
