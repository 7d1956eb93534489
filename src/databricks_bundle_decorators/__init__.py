"""dbxdec: decorated Spark pipelines for Databricks, built to backfill.

Example:
    >>> from databricks_bundle_decorators import DailyBackfill, Registry, job, task
    >>> registry = Registry()  # without registry=, jobs go to default_registry
    >>> @job(backfill=DailyBackfill(start_date="2024-01-01"), registry=registry)
    ... def sales():
    ...     @task
    ...     def extract(): ...
    ...     extract()
    >>> registry.names
    ['sales']
"""

from .backfill import (
    BackfillDef,
    CatchUp,
    DailyBackfill,
    Deadline,
    DeadlineMonitor,
    HourlyBackfill,
    MonthlyBackfill,
    MultiBackfill,
    QuartzSchedule,
    StaticBackfill,
    TimeWindow,
    WeeklyBackfill,
    get_backfill_key,
    get_backfill_keys,
    get_run_logical_date,
    get_static_keys,
)
from .definitions import (
    FileArrival,
    JobCluster,
    JobDefinition,
    KeyFromColumn,
    KeyFromPath,
    Registry,
    RetryPolicy,
    Source,
    TableUpdate,
    TaskDefinition,
    all_partitions,
    default_registry,
    for_each_task,
    get_task_value,
    job,
    job_cluster,
    params,
    set_task_value,
    source,
    task,
    task_value,
)
from .errors import DbxdecError, DefinitionError, UsageError
from .runtime.core.key_columns import backfill_key_column

__version__ = "0.1.0"

__all__ = [
    "BackfillDef",
    "CatchUp",
    "DailyBackfill",
    "DbxdecError",
    "Deadline",
    "DeadlineMonitor",
    "DefinitionError",
    "FileArrival",
    "HourlyBackfill",
    "JobCluster",
    "JobDefinition",
    "KeyFromColumn",
    "KeyFromPath",
    "MonthlyBackfill",
    "MultiBackfill",
    "QuartzSchedule",
    "Registry",
    "RetryPolicy",
    "Source",
    "StaticBackfill",
    "TableUpdate",
    "TaskDefinition",
    "TimeWindow",
    "UsageError",
    "WeeklyBackfill",
    "all_partitions",
    "backfill_key_column",
    "default_registry",
    "for_each_task",
    "get_backfill_key",
    "get_backfill_keys",
    "get_run_logical_date",
    "get_static_keys",
    "get_task_value",
    "job",
    "job_cluster",
    "params",
    "set_task_value",
    "source",
    "task",
    "task_value",
]
