"""The embedded SparkSession: one per process, reused by every task and slice."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

SPARK_MASTER_ENV = "DBXDEC_SPARK_MASTER"

SQL_CONF: dict[str, str] = {
    # Writes replace only the partitions present in the frame.
    "spark.sql.sources.partitionOverwriteMode": "dynamic",
    # Keys are compared as UTC instants; predicates carry explicit offsets anyway.
    "spark.sql.session.timeZone": "UTC",
    # Partition values are keys, never guessed types ('2024-01-01' stays a string).
    "spark.sql.sources.partitionColumnTypeInference.enabled": "false",
}

LOCAL_SQL_CONF: dict[str, str] = {
    # List partition folders in the driver: a distributed listing (Spark's default from
    # 32 folders on, e.g. an all_partitions read) costs a Spark job per read locally.
    "spark.sql.sources.parallelPartitionDiscovery.threshold": "100000",
}

LOCAL_CONF: dict[str, str] = {
    "spark.ui.enabled": "false",
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": "4",
    "spark.default.parallelism": "4",
    "spark.hadoop.mapreduce.fileoutputcommitter.marksuccessfuljobs": "false",
    "spark.hadoop.parquet.enable.summary-metadata": "false",
    "spark.sql.parquet.compression.codec": "snappy",
}


def configure(spark: Any) -> Any:
    """Apply the session settings dbxdec's IoManagers rely on; returns ``spark``."""
    for key, value in SQL_CONF.items():
        spark.conf.set(key, value)
    return spark


def local_spark_session(
    *,
    master: str | None = None,
    app_name: str = "dbxdec",
    conf: Mapping[str, str] | None = None,
) -> Any:
    """The process's embedded SparkSession (created on first use, UI off).

    An active session (e.g. a test fixture's) is reused; ``master`` defaults to
    ``$DBXDEC_SPARK_MASTER`` or ``local[*]``; ``conf`` adds or overrides settings of a
    new session.
    """
    from pyspark import SparkContext
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is None and SparkContext._active_spark_context is not None:
        # Another thread's session: getOrCreate without settings reuses it unchanged.
        active = SparkSession.builder.getOrCreate()
    if active is not None:
        if str(active.sparkContext.master).startswith("local"):
            for key, value in LOCAL_SQL_CONF.items():
                active.conf.set(key, value)
        return configure(active)
    builder = SparkSession.builder.master(
        master or os.environ.get(SPARK_MASTER_ENV) or "local[*]"
    ).appName(app_name)
    for key, value in {**LOCAL_CONF, **LOCAL_SQL_CONF, **SQL_CONF, **(conf or {})}.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return configure(spark)


def databricks_spark_session() -> Any:
    """The cluster's SparkSession on Databricks."""
    from pyspark.sql import SparkSession

    return configure(SparkSession.builder.getOrCreate())
