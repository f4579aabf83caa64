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
    """Register the ``kafkaseg`` format with ``spark`` (a SparkSession) when the session does not know it yet:
    needed only when kafkaseg is not importable as a top-level package on the Python path of Spark's Python
    workers (e.g. a setuptools import-hook editable install). Otherwise Spark found ``pyspark_kafkaseg`` itself,
    and registering again would only log ``WARN DataSourceManager: The data source kafkaseg replaced a statically
    registered data source``."""
    if not _known(spark, KafkaSegDataSource.name()):
        spark.dataSource.register(KafkaSegDataSource)


def _known(spark: Any, name: str) -> bool:
    """Whether ``spark`` resolves the Python data source ``name`` already (statically found or registered): the
    session's ``DataSourceManager.dataSourceExists`` (Spark 4.0+; its first call runs the same lookup of
    ``pyspark_*`` modules that the first use of any Python data source runs). False when that cannot be asked (a
    Spark Connect session has no JVM here): then the source is registered, as before."""
    try:
        return bool(spark._jsparkSession.sessionState().dataSourceManager().dataSourceExists(name))
    except Exception:  # noqa: BLE001 - no JVM session (Spark Connect) or another Spark's internals
        return False
