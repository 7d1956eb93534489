"""What users declare: jobs, tasks, clusters, parameters. No I/O."""

from .graph import TaskNode
from .job import JobCluster, JobDefinition, job_cluster
from .refs import TaskValueRef, all_partitions
from .registry import Registry, default_registry, job
from .sources import Source, source, use_source_reader
from .task import RetryPolicy, TaskDefinition, for_each_task, task, task_value
from .task_values import (
    TaskValueStore,
    get_task_value,
    params,
    set_task_value,
    use_task_value_store,
)
from .triggers import FileArrival, KeyFromColumn, KeyFromPath, TableUpdate

__all__ = [
    "FileArrival",
    "JobCluster",
    "JobDefinition",
    "KeyFromColumn",
    "KeyFromPath",
    "Registry",
    "RetryPolicy",
    "Source",
    "TableUpdate",
    "TaskDefinition",
    "TaskNode",
    "TaskValueRef",
    "TaskValueStore",
    "all_partitions",
    "default_registry",
    "for_each_task",
    "get_task_value",
    "job",
    "job_cluster",
    "params",
    "set_task_value",
    "source",
    "task",
    "task_value",
    "use_source_reader",
    "use_task_value_store",
]
