"""The embedded SparkSession: one per process, reused by every task and slice."""

from __future__ import annotations

import importlib.util
import os
import threading
from collections.abc import Mapping
from typing import Any

from ..errors import EnvironmentProblem
from .delta_jars import ensure_delta_jars

SPARK_MASTER_ENV = "DBXDEC_SPARK_MASTER"
SPARK_EXTRA = 'pip install "dbxdec[spark]"'

DELTA_EXTENSION = "io.delta.sql.DeltaSparkSessionExtension"
DELTA_CONF: dict[str, str] = {
    # Delta Lake as on Databricks: the SQL extension (replaceWhere, DESCRIBE HISTORY) and
    # the catalog that knows Delta tables.
    "spark.sql.extensions": DELTA_EXTENSION,
    "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
    # A local table's log is small: Delta's default 50 partitions to rebuild a snapshot
    # cost 50 tasks per read and per write on a laptop.
    "spark.databricks.delta.snapshotPartitions": "2",
}

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


LOCAL_SESSION_CONF: dict[str, str] = {**LOCAL_CONF, **LOCAL_SQL_CONF, **SQL_CONF, **DELTA_CONF}
"""Every setting of a new local session (dbxdec's own, or one task code creates)."""


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
    """The process's embedded SparkSession with Delta Lake (created on first use, UI off).

    An active session (e.g. a test fixture's) is reused; ``master`` defaults to
    ``$DBXDEC_SPARK_MASTER`` or ``local[*]``; ``conf`` adds or overrides settings of a
    new session. The Delta jars come from :func:`~.delta_jars.ensure_delta_jars`
    (downloaded once into a cache outside the project).

    Raises:
        EnvironmentProblem: PySpark or delta-spark is not installed, or the Delta jars
            are missing and cannot be fetched.
    """
    require_local_spark()
    with _CREATING:  # the session is process-wide: threads that start runs together share one
        return _local_spark_session(master, app_name, conf)


_CREATING = threading.Lock()


def _local_spark_session(master: str | None, app_name: str, conf: Mapping[str, str] | None) -> Any:
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
    try:
        found = ensure_delta_jars()
    except EnvironmentProblem:  # a Spark-free run needs no jars; a Spark one fails later
        return
    jars = ",".join(str(path) for path in found)
    settings = {**LOCAL_SESSION_CONF, **(conf or {})}
    settings["spark.jars"] = ",".join(filter(None, (settings.get("spark.jars"), jars)))
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return configure(spark)


SUBMIT_ARGS_ENV = "PYSPARK_SUBMIT_ARGS"


def prepare_local_spark() -> None:
    """Make any local SparkSession of this process a Delta one, without starting a JVM.

    The session is created lazily (a Spark-free task never starts one), so task code may
    well create it first with ``SparkSession.builder.getOrCreate()``. PySpark launches its
    JVM with ``$PYSPARK_SUBMIT_ARGS``; setting the Delta jars and settings there makes that
    session the same Delta session dbxdec would create. Does nothing when PySpark is not
    installed, a JVM already runs, or the variable is set by the user.
    """
    if os.environ.get(SUBMIT_ARGS_ENV) or importlib.util.find_spec("pyspark") is None:
        return
    from pyspark import SparkContext

    if SparkContext._active_spark_context is not None:
        return
    try:
        found = ensure_delta_jars()
    except EnvironmentProblem:  # a Spark-free run needs no jars; a Spark one fails later
        return
    jars = ",".join(str(path) for path in found)
    settings = LOCAL_SESSION_CONF
    args = ["--jars", jars]
    for key, value in settings.items():
        args += ["--conf", f"{key}={value}"]
    os.environ[SUBMIT_ARGS_ENV] = " ".join([*args, "pyspark-shell"])


def require_local_spark() -> None:
    """Fail with one line when PySpark or delta-spark is not importable.

    Raises:
        EnvironmentProblem: the ``spark`` extra is not installed.
    """
    missing = [name for name in ("pyspark", "delta") if importlib.util.find_spec(name) is None]
    if missing:
        packages = " and ".join({"pyspark": "PySpark", "delta": "delta-spark"}[m] for m in missing)
        raise EnvironmentProblem(
            f"local runs need PySpark and Delta Lake, and {packages} is not installed; "
            f"run: {SPARK_EXTRA}"
        )


def has_delta(spark: Any) -> bool:
    """Whether ``spark`` was created with Delta Lake's SQL extension."""
    try:
        extensions = str(spark.conf.get("spark.sql.extensions", "") or "")
    except Exception:  # a session that refuses to read the setting (Spark Connect)
        return True
    return DELTA_EXTENSION in extensions


def databricks_spark_session() -> Any:
    """The cluster's SparkSession on Databricks."""
    from pyspark.sql import SparkSession

    return configure(SparkSession.builder.getOrCreate())
