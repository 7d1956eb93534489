"""Public module kept for the import paths users know (``decorators.all_partitions``)."""

from .definitions import all_partitions, for_each_task, job, job_cluster, task, task_value

__all__ = ["all_partitions", "for_each_task", "job", "job_cluster", "task", "task_value"]
