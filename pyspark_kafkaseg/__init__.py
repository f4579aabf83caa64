"""Auto-registration hook for PySpark.

When a session first touches Python data sources, PySpark (4.0+, ``pyspark/sql/worker/lookup_data_sources.py``)
imports every top-level module on the Python path whose name starts with ``pyspark_`` and registers its
``DefaultSource`` under ``DefaultSource.name()``. This module makes ``format("kafkaseg")`` available that way.
"""

from kafkaseg.spark.source import KafkaSegDataSource as DefaultSource

__all__ = ["DefaultSource"]
