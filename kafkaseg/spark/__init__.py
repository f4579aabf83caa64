"""kafkaseg for PySpark: the ``kafkaseg`` data source (the only kafkaseg package that imports pyspark).

``spark.read.format("kafkaseg").load("/var/lib/kafka/data")`` works without registration when kafkaseg is installed
(PySpark imports every top-level ``pyspark_*`` module on the Python path and registers its ``DefaultSource``; see
:mod:`pyspark_kafkaseg`); :func:`register` registers it explicitly. After a query, :func:`plan_report` (of a
DataFrame) and :func:`last_plan_report` (the host's newest scan) say what the scan planned (segments, bytes,
pruned partitions, chosen replicas) and ``.read_metrics()`` what it read.
"""

from __future__ import annotations

from typing import Any

from kafkaseg.spark.filters import PushdownResult, translate_filters
from kafkaseg.spark.reports import ScanReport, last_plan_report, plan_report, plan_reports, report_dir
from kafkaseg.spark.source import KafkaSegDataSource, KafkaSegReader, SlicePartition, read_options, spark_schema

__all__ = ["KafkaSegDataSource", "KafkaSegReader", "SlicePartition", "register", "spark_schema", "read_options",
           "translate_filters", "PushdownResult", "ScanReport", "last_plan_report", "plan_report", "plan_reports",
           "report_dir"]


def register(spark: Any) -> None:
    """Register the ``kafkaseg`` format with ``spark`` (a SparkSession) explicitly: needed only when kafkaseg is
    not importable as a top-level package on the Python path of Spark's Python workers (e.g. a setuptools
    import-hook editable install)."""
    spark.dataSource.register(KafkaSegDataSource)
