"""kafkaseg: read Apache Kafka's on-disk log directories into Arrow and Spark, without a broker.

Spark-free API::

    import kafkaseg
    table = kafkaseg.read_arrow("/var/lib/kafka/data", subscribe="orders", includeHeaders=True)
    for batch in kafkaseg.iter_batches("/backups/broker-1/orders-3", startingOffsets='{"orders":{"3":1000}}'):
        ...

Options use the names of Spark's Kafka source (see README). Errors are :class:`KafkaSegError` subclasses.
"""

from __future__ import annotations

from kafkaseg.errors import (
    CorruptBatchError,
    CorruptDataError,
    CorruptIndexError,
    CrcMismatchError,
    DataLossError,
    DecompressionLimitError,
    InvalidOptionError,
    KafkaSegError,
    LayoutError,
    LostTailError,
    SkippedOffsetsError,
    TruncatedDataError,
    UnsupportedCodecError,
    UnsupportedMagicError,
)

__version__ = "0.1.0"

__all__ = [
    "read_arrow", "iter_batches", "open_scan", "Scan", "ReadOptions", "follow",
    "KafkaSegError", "CorruptDataError", "CorruptBatchError", "CrcMismatchError", "TruncatedDataError",
    "CorruptIndexError", "UnsupportedMagicError", "UnsupportedCodecError", "DecompressionLimitError",
    "SkippedOffsetsError", "InvalidOptionError", "DataLossError", "LostTailError", "LayoutError",
]

_LAZY = {"read_arrow": "kafkaseg.scan", "iter_batches": "kafkaseg.scan", "open_scan": "kafkaseg.scan",
         "Scan": "kafkaseg.scan", "ReadOptions": "kafkaseg.options", "follow": "kafkaseg.streaming"}


def __getattr__(name):  # keep `import kafkaseg` cheap on Spark workers: load the scan stack on first use
    if name in ("spark", "testing"):  # subpackages (kafkaseg.spark imports pyspark): on first use too
        import importlib

        try:
            return importlib.import_module(f"kafkaseg.{name}")
        except ImportError as err:  # (pyspark is optional: hasattr(kafkaseg, "spark") is then False)
            raise AttributeError(f"module 'kafkaseg' has no attribute {name!r} ({err})") from err
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'kafkaseg' has no attribute {name!r}")
