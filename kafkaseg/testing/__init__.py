"""Generate realistic Kafka log dirs, byte-compatible with what a Java broker writes (for tests, samples and
benchmarks). An independent writer-side implementation: it never imports kafkaseg's readers.

High level: :func:`write_data_dir` (topics from :class:`TopicSpec`, returns a :class:`DataDirManifest` of the
expected records), :func:`sample_data_dir`, :func:`write_benchmark_segment`.
Low level: :class:`PartitionWriter` / :class:`SegmentWriter` append batches built by :func:`build_batch_v2`,
:func:`build_control_batch`, :func:`build_legacy_wrapper`, :func:`build_legacy_entries` (or raw bytes).
"""

from kafkaseg.testing.benchmark import BenchmarkSegment, write_benchmark_segment
from kafkaseg.testing.codecs import compress
from kafkaseg.testing.datadir import (
    SAMPLE_TOPICS,
    DataDirManifest,
    ExpectedRecord,
    PartitionManifest,
    TopicSpec,
    sample_data_dir,
    write_data_dir,
)
from kafkaseg.testing.partition import (
    AbortedTxn,
    PartitionLog,
    PartitionWriter,
    ProducerEntry,
    SegmentInfo,
    SegmentWriter,
    encode_producer_snapshot,
)
from kafkaseg.testing.writer import (
    CREATE_TIME,
    LOG_APPEND_TIME,
    ControlType,
    EncodedBatch,
    Record,
    build_batch_v2,
    build_control_batch,
    build_legacy_entries,
    build_legacy_message,
    build_legacy_wrapper,
    encode_record,
    encode_varint,
)

__all__ = [
    "write_data_dir", "sample_data_dir", "write_benchmark_segment", "TopicSpec", "DataDirManifest",
    "PartitionManifest", "ExpectedRecord", "BenchmarkSegment", "SAMPLE_TOPICS",
    "PartitionWriter", "SegmentWriter", "PartitionLog", "SegmentInfo", "AbortedTxn", "ProducerEntry",
    "encode_producer_snapshot", "Record", "EncodedBatch", "ControlType", "CREATE_TIME", "LOG_APPEND_TIME",
    "build_batch_v2", "build_control_batch", "build_legacy_message", "build_legacy_wrapper",
    "build_legacy_entries", "encode_record", "encode_varint", "compress",
]
