"""The embedded SparkSession: one per process, reused by every task and slice."""

from __future__ import annotations

import contextlib
import importlib.util
import os
import shlex
import sys
import tempfile
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ...atomic import write_atomically
from ...errors import EnvironmentProblem
from .delta_jars import ensure_delta_jars, jars_dir
from .jvm_stderr import jvm_stderr_filtered
from .serverless_rules import set_conf
from .spark_remote import SPARK_REMOTE_ENV, remote_spark_session, spark_remote
from .task_errors import quiet_query_context_loggers

SPARK_MASTER_ENV = "DBXDEC_SPARK_MASTER"
# the pair the `spark` extra pins (tests/test_docs.py keeps them equal)
SPARK_EXTRA = 'pip install "pyspark==4.0.1" "delta-spark==4.0.1"'

DELTA_EXTENSION = "io.delta.sql.DeltaSparkSessionExtension"
DELTA_CONF: dict[str, str] = {
    "spark.sql.extensions": DELTA_EXTENSION,
    "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
    # a local table's log is small: Delta's default 50 partitions cost 50 tasks per read
    "spark.databricks.delta.snapshotPartitions": "2",
}

SQL_CONF: dict[str, str] = {
    # the one setting made on Databricks too (serverless lets a job set it)
    "spark.sql.session.timeZone": "UTC",
}

LOCAL_SQL_CONF: dict[str, str] = {
    # list partition folders in the driver: a distributed listing costs a Spark job per read
    "spark.sql.sources.parallelPartitionDiscovery.threshold": "100000",
    # on Databricks every write passes partitionOverwriteMode as a writer option instead
    "spark.sql.sources.partitionOverwriteMode": "dynamic",
    # partition values of a (local-only) parquet folder are keys, never guessed types
    "spark.sql.sources.partitionColumnTypeInference.enabled": "false",
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

STARTING_LINE = "starting the local Spark"
"""The start of the line printed before the embedded JVM starts (every local command that
needs Spark pays it once); :func:`starting_line` adds the figure measured on this machine."""
STARTUP_FILE = "last-startup-seconds"
"""Beside the cached jars: how long the last start of the local Spark took, in seconds."""


def starting_line(folder: Path | None = None) -> str:
    """The start-up line with the last start's measured seconds on this machine.

    Example:
        >>> import tempfile
        >>> with tempfile.TemporaryDirectory() as d:
        ...     before = starting_line(Path(d))
        ...     record_startup(14.2, Path(d))
        ...     after = starting_line(Path(d))
        >>> before
        'starting the local Spark (the first start here; often 10-50 s)...'
        >>> after
        'starting the local Spark (14 s the last time here)...'
    """
    try:
        seconds = float((folder or jars_dir()).joinpath(STARTUP_FILE).read_text().strip())
    except (OSError, ValueError):
        return f"{STARTING_LINE} (the first start here; often 10-50 s)..."
    return f"{STARTING_LINE} ({seconds:.0f} s the last time here)..."


def record_startup(seconds: float, folder: Path | None = None) -> None:
    """Keep ``seconds`` as the last start-up's figure (a cache: a failed write is ignored)."""
    with contextlib.suppress(OSError):
        target = folder or jars_dir()
        target.mkdir(parents=True, exist_ok=True)
        target.joinpath(STARTUP_FILE).write_text(f"{seconds:.1f}\n")


QUIET_LOG4J2 = """\
# dbxdec: the embedded Spark's JVM logs only errors (no start-up WARN lines or banner)
rootLogger.level = error
rootLogger.appenderRef.stderr.ref = console
appender.console.type = Console
appender.console.name = console
appender.console.target = SYSTEM_ERR
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n
# the shells' loggers at the root's level: Spark prints no "Setting default log level" banner
logger.repl.name = org.apache.spark.repl.Main
logger.repl.level = error
logger.submit.name = org.apache.spark.deploy.SparkSubmit
logger.submit.level = error
logger.gateway.name = org.apache.spark.api.python.PythonGatewayServer
logger.gateway.level = error
"""
DRIVER_JAVA_OPTIONS = "spark.driver.extraJavaOptions"


def quiet_log4j_file() -> Path:
    """A log4j2 configuration letting only errors through (written once per machine)."""
    path = (
        Path(tempfile.gettempdir())
        / f"dbxdec-log4j2-{os.getuid() if hasattr(os, 'getuid') else 0}.properties"
    )
    try:
        if not path.is_file() or path.read_text() != QUIET_LOG4J2:
            write_atomically(path, QUIET_LOG4J2)
    except OSError:
        pass  # an unwritable temp folder: Spark logs as it would by default
    return path


def quiet_session_conf(conf: Mapping[str, str] | None = None) -> dict[str, str]:
    """``conf`` plus the driver option that points log4j2 at :func:`quiet_log4j_file`
    (unless ``conf`` names its own)."""
    settings = dict(conf or {})
    options = settings.get(DRIVER_JAVA_OPTIONS, "")
    if "log4j2.configurationFile" not in options:
        option = f"-Dlog4j2.configurationFile=file:{quiet_log4j_file()}"
        settings[DRIVER_JAVA_OPTIONS] = f"{options} {option}".strip()
    return settings


def configure(spark: Any) -> Any:
    """Apply the settings dbxdec's IoManagers rely on (serverless-settable ones only:
    this runs on Databricks too); returns ``spark``."""
    for key, value in SQL_CONF.items():
        set_conf(spark, key, value)
    return spark


def local_spark_session(
    *,
    master: str | None = None,
    app_name: str = "dbxdec",
    conf: Mapping[str, str] | None = None,
) -> Any:
    """The process's embedded SparkSession with Delta Lake (created on first use, UI off).

    An active session is reused; ``master`` defaults to ``$DBXDEC_SPARK_MASTER`` or
    ``local[*]``; ``conf`` adds or overrides settings of a new session. With
    ``$SPARK_REMOTE`` set, a Spark Connect session to that server instead.

    Raises:
        EnvironmentProblem: PySpark or delta-spark is not installed, or the Delta jars
            are missing and cannot be fetched.
    """
    require_local_spark()
    remote = spark_remote()
    if remote is not None:  # a Spark Connect server stands in for the embedded JVM
        return configure(remote_spark_session(remote, LOCAL_SQL_CONF))
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
            quiet_query_context_loggers()
        return configure(active)
    builder = SparkSession.builder.master(
        master or os.environ.get(SPARK_MASTER_ENV) or "local[*]"
    ).appName(app_name)
    jars = _delta_jars()
    if jars is None:
        return
    settings = quiet_session_conf({**LOCAL_SESSION_CONF, **(conf or {})})
    settings["spark.jars"] = ",".join(filter(None, (settings.get("spark.jars"), jars)))
    for key, value in settings.items():
        builder = builder.config(key, value)
    print(starting_line(), file=sys.stderr, flush=True)  # the first slice waits for the JVM
    began = time.monotonic()
    with jvm_stderr_filtered():  # the JVM's stderr without Spark 4's incubator warning
        spark = builder.getOrCreate()
    record_startup(time.monotonic() - began)
    spark.sparkContext.setLogLevel("ERROR")
    quiet_query_context_loggers()
    return configure(spark)


def _delta_jars() -> str | None:
    try:
        return ",".join(str(path) for path in ensure_delta_jars())
    except EnvironmentProblem:  # a Spark-free run needs no jars; a Spark one fails later
        return None


SUBMIT_ARGS_ENV = "PYSPARK_SUBMIT_ARGS"


def prepare_local_spark() -> None:
    """Make any local SparkSession of this process (task code may create it first) a
    Delta one, through ``$PYSPARK_SUBMIT_ARGS``, without starting a JVM. Does nothing
    when PySpark is missing, a JVM runs, or the variable is set."""
    if os.environ.get(SUBMIT_ARGS_ENV) or importlib.util.find_spec("pyspark") is None:
        return
    if os.environ.get(SPARK_REMOTE_ENV):  # sessions connect to a server: no local JVM
        return
    from pyspark import SparkContext

    jars = None if SparkContext._active_spark_context is not None else _delta_jars()
    if jars is None:
        return
    settings = quiet_session_conf(LOCAL_SESSION_CONF)
    args = ["--jars", jars]
    for key, value in settings.items():
        args += ["--conf", f"{key}={value}"]
    os.environ[SUBMIT_ARGS_ENV] = shlex.join([*args, "pyspark-shell"])


def require_local_spark() -> None:
    """Fail in one line (``EnvironmentProblem``) when the ``spark`` extra is not installed."""
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
