"""Definitions -> Databricks job settings (what goes under ``resources.jobs.<name>``).

Each ``@task`` becomes a ``python_wheel_task`` that runs the ``dbxdec-run`` entry point of
the project's wheel; dbxdec's own wheel is installed beside it, so a job runs the dbxdec
that generated it. Its ``named_parameters`` (see :mod:`..backfill.wire`) name the job, the
task and the module that defines the job and carry the job run id (``{{job.run_id}}``).
Job parameters are not repeated there: Databricks pushes them down to a wheel task
configured with keyword arguments (https://docs.databricks.com/aws/en/jobs/job-parameters,
"Job parameter pushdown"), which every generated task is, as one more ``--name=value``
each (a for-each's inner task names them, ``{{job.parameters.<name>}}``: the docs do not
say pushdown reaches it). So Databricks calls::

    dbxdec-run --dbxdec_job=sales --dbxdec_task=clean --dbxdec_module=pkg.sales \\
        --dbxdec_run_id=550315892394120 \\
        --backfill_key=2024-01-01 --backfill_start_key= --backfill_exact=false

Output is deterministic: the same definitions and options give equal dicts with the
same key order.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any

from ..backfill.check_report import CHECK_RESULTS_PARAM, TASK_RUN_ID_PARAM, TASK_RUN_ID_VALUE
from ..backfill.wire import (
    BACKFILL_PARAM_DEFAULTS,
    ENTRY_POINT,
    FOR_EACH_INPUT_PARAM,
    FOR_EACH_INPUT_VALUE,
    JOB_PARAM,
    MODULE_PARAM,
    RUN_ID_PARAM,
    RUN_ID_VALUE,
    TASK_PARAM,
)
from ..definitions import JobDefinition, Registry, TaskNode
from ..definitions.refs import TaskValueRef
from ..definitions.task_value_use import task_value_tasks
from ..errors import DefinitionError
from .client_floor import compute_floor_problem
from .notebook_task import as_notebook_task, drop_unused_environment
from .options import CodegenOptions
from .settings_values import first_paragraph, plain_copy
from .tags import MAX_TAGS, TAG_PREFIX, backfill_tags, tag_problem
from .triggers import trigger_setting
from .typed import models, plain_text

FOR_EACH_TASK_SUFFIX = "_iteration"
BACKFILL_MAX_CONCURRENT_RUNS = 10
"""Default ``max_concurrent_runs`` of a job with a backfill definition: the launcher runs
several slices at once, and a lower job limit would queue them."""

_GENERATED_JOB_SETTINGS = {
    "tasks": "tasks come from the @task calls in the job body",
    "parameters": "use @job(params={...})",
    "schedule": "use @job(schedule=...)",
    "job_clusters": "use @job(cluster=job_cluster(...))",
    "environments": "set [tool.dbxdec] environment_version",
}
_GENERATED_TASK_SETTINGS = {
    "task_key": "use @task(name=...)",
    "depends_on": "use @task(depends_on=[...]) or pass task outputs",
    "python_wheel_task": "dbxdec runs every task through its wheel",
    "for_each_task": "use @for_each_task(inputs=...)",
    "job_cluster_key": "use @job(cluster=job_cluster(...))",
    "environment_key": "serverless tasks share the job's environment",
    "max_retries": "use @task(retries=RetryPolicy(...))",
    "min_retry_interval_millis": "use @task(retries=RetryPolicy(...))",
    "retry_on_timeout": "use @task(retries=RetryPolicy(...))",
}
_OUTER_FOR_EACH_SETTINGS = frozenset({"run_if", "description", "disabled"})
_PLAIN_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_MAX_TASK_DESCRIPTION = 1000
_MAX_TASK_KEY = 100


def job_resource(
    job: JobDefinition,
    *,
    package_name: str | None = None,
    options: CodegenOptions | None = None,
    **overrides: Any,
) -> dict[str, Any]:
    """The Databricks job settings of ``job``.

    Args:
        job: The job definition (its body is traced if it was not yet).
        package_name: Distribution holding the pipelines (overrides ``options``).
        options: Code generation options (default: :class:`CodegenOptions` defaults).
        **overrides: Fields of :class:`CodegenOptions` to change, e.g. ``wheel=...``.

    Returns:
        A plain dict (JSON/YAML-ready) for ``resources.jobs.<job.name>``.

    Raises:
        DefinitionError: the job body is wrong, or a setting collides with one dbxdec
            generates, or a tag breaks Databricks' tag rules.
    """
    settings = options if options is not None else CodegenOptions()
    if package_name is not None:
        overrides["package_name"] = package_name
    if overrides:
        settings = replace(settings, **overrides)
    return _JobBuilder(job, settings).build()


def prebuilt_job_resource(job: JobDefinition, options: CodegenOptions) -> dict[str, Any]:
    """:func:`job_resource`'s settings for :func:`.typed.typed_job`, with the parts that dbxdec
    makes from plain text (job parameters, wheel tasks, task dependencies) already built as the
    ``databricks.bundles`` objects it would make of them, so it passes them through: the same
    ``Job``, without building and checking a dict per task first.

    Raises:
        DefinitionError: as :func:`job_resource`.
    """
    return _JobBuilder(job, options, prebuilt=True).build()


def generate_jobs(
    registry: Registry | Iterable[JobDefinition], options: CodegenOptions | None = None
) -> dict[str, dict[str, Any]]:
    """Job settings for every job of ``registry``, by job name (sorted).

    Raises:
        DefinitionError: the first job that cannot be generated.
    """
    settings = options if options is not None else CodegenOptions()
    jobs = sorted(registry, key=lambda j: j.name)
    return {job.name: _JobBuilder(job, settings).build() for job in jobs}


def parameter_reference(name: str) -> str:
    """The dynamic value reference of job parameter ``name``.

    Example:
        >>> parameter_reference("backfill_key"), parameter_reference("source.path")
        ('{{job.parameters.backfill_key}}', '{{job.parameters.`source.path`}}')
    """
    return f"{{{{job.parameters.{name if _PLAIN_NAME.fullmatch(name) else f'`{name}`'}}}}}"


class _JobBuilder:
    """Builds the settings of one job; one instance per job."""

    def __init__(
        self, job: JobDefinition, options: CodegenOptions, *, prebuilt: bool = False
    ) -> None:
        self.job = job
        self.options = options
        self.where = str(job.source)
        self.parameters = self._parameters()
        self.references = {name: parameter_reference(name) for name in self.parameters}
        self.module = job.fn.__module__
        self.notebook_tasks = task_value_tasks(job.graph)
        self.named = {  # every task's named parameters start so (TASK_PARAM set per task)
            JOB_PARAM: job.name,
            TASK_PARAM: "",
            MODULE_PARAM: self.module,
            RUN_ID_PARAM: RUN_ID_VALUE,
            TASK_RUN_ID_PARAM: TASK_RUN_ID_VALUE,  # names the attempt in its check report
        }
        texts = [options.package_name, self.module, job.name, *self.references.values()]
        if job.check_results:
            texts.append(job.check_results)
        # Objects only from plain text: a ${...} reference is for the library to resolve.
        self.models = models() if prebuilt and all(map(plain_text, texts)) else None

    def build(self) -> dict[str, Any]:
        job, options = self.job, self.options
        graph = job.graph
        for key in job.settings:
            if key in _GENERATED_JOB_SETTINGS:
                raise DefinitionError(
                    f"job setting {key!r} is generated by dbxdec: {_GENERATED_JOB_SETTINGS[key]}",
                    job=job.name,
                    location=self.where,
                )
        spec = None if job.cluster is None else job.cluster.spec
        floor = compute_floor_problem(spec, options.environment_version)
        if floor is not None:  # below the compute the Databricks path is checked against
            raise DefinitionError(floor, job=job.name, location=self.where)
        resource: dict[str, Any] = {"name": job.name}
        description = first_paragraph(job.fn, 27_000)
        if description:
            resource["description"] = description
        if self.parameters:
            resource["parameters"] = self._parameter_definitions()
        tags = self._tags()
        if tags:
            resource["tags"] = tags
        if job.schedule is not None:
            schedule = {
                "quartz_cron_expression": job.schedule.expression,
                "timezone_id": job.schedule.timezone,
            }
            if options.pause_schedules:
                schedule["pause_status"] = "PAUSED"
            resource["schedule"] = schedule
        if job.trigger is not None:
            resource["trigger"] = trigger_setting(job.trigger, paused=options.pause_schedules)
        resource["max_concurrent_runs"] = (
            BACKFILL_MAX_CONCURRENT_RUNS if job.backfill is not None else 1
        )
        resource["queue"] = {"enabled": True}
        if job.cluster is not None:
            resource["job_clusters"] = [
                {"job_cluster_key": job.cluster.name, "new_cluster": plain_copy(job.cluster.spec)}
            ]
        else:
            resource["environments"] = [
                {
                    "environment_key": options.environment_key,
                    "spec": {
                        "environment_version": options.environment_version,
                        "dependencies": list(options.wheels),
                    },
                }
            ]
        resource["tasks"] = [self._task(graph[key]) for key in graph.topological_order()]
        drop_unused_environment(resource)  # every task a notebook task: none installs it
        for key in sorted(job.settings):
            if key != "tags":
                resource[key] = plain_copy(job.settings[key])
        return resource

    # -- parameters and tags -------------------------------------------------------------

    def _parameters(self) -> dict[str, str]:
        overrides = self.options.params
        parameters = {
            name: overrides.get(name, default) for name, default in self.job.params.items()
        }
        if self.job.backfill is not None:
            parameters.update(BACKFILL_PARAM_DEFAULTS)
        return parameters

    def _parameter_definitions(self) -> list[Any]:
        parameters = self.parameters.items()
        if self.models is not None and all(map(plain_text, self.parameters.values())):
            definition = self.models.JobParameterDefinition
            return [definition(name=name, default=default) for name, default in parameters]
        return [{"name": name, "default": default} for name, default in parameters]

    def _tags(self) -> dict[str, str]:
        user = self.job.settings.get("tags", {})
        if not isinstance(user, Mapping):
            raise DefinitionError(
                "job setting 'tags' must be a mapping of strings",
                job=self.job.name,
                location=self.where,
            )
        tags = {**self.options.tags, **{str(k): v for k, v in user.items()}}
        for key, value in tags.items():
            if key.startswith(TAG_PREFIX):
                raise DefinitionError(
                    f"tag {key!r} is reserved: tags starting with {TAG_PREFIX!r} are dbxdec's",
                    job=self.job.name,
                    location=self.where,
                )
            if not isinstance(value, str):
                raise DefinitionError(
                    f"tag {key!r} must have a string value, got {value!r}",
                    job=self.job.name,
                    location=self.where,
                )
        if self.job.backfill is not None:
            tags.update(backfill_tags(self.job.backfill))
        for key, value in tags.items():
            problem = tag_problem(key, value)
            if problem is not None:
                raise DefinitionError(problem, job=self.job.name, location=self.where)
        if len(tags) > MAX_TAGS:
            raise DefinitionError(
                f"{len(tags)} tags (dbxdec's backfill tags included); a job may have at most "
                f"{MAX_TAGS}",
                job=self.job.name,
                location=self.where,
            )
        return tags

    # -- tasks -----------------------------------------------------------------------------

    def _task(self, node: TaskNode) -> dict[str, Any]:
        definition = node.definition
        for key in definition.settings:
            if key in _GENERATED_TASK_SETTINGS:
                raise DefinitionError(
                    f"task setting {key!r} is generated by dbxdec: {_GENERATED_TASK_SETTINGS[key]}",
                    job=self.job.name,
                    task=node.key,
                    location=str(definition.source),
                )
        task: dict[str, Any] = {"task_key": node.key}
        description = first_paragraph(definition.fn, _MAX_TASK_DESCRIPTION)
        if description:
            task["description"] = description
        if node.upstream:
            if self.models is not None and all(map(plain_text, node.upstream)):
                dependency = self.models.TaskDependency
                task["depends_on"] = [dependency(task_key=key) for key in node.upstream]
            else:
                task["depends_on"] = [{"task_key": key} for key in node.upstream]
        for_each = definition.for_each
        if for_each is None:
            task.update(self._runnable(node, definition.settings, for_each_input=False))
            return task
        inner_key = f"{node.key}{FOR_EACH_TASK_SUFFIX}"
        if len(inner_key) > _MAX_TASK_KEY:
            raise DefinitionError(
                f"a for-each task key may have at most {_MAX_TASK_KEY - len(FOR_EACH_TASK_SUFFIX)}"
                " characters (its iteration task adds "
                f"{FOR_EACH_TASK_SUFFIX!r})",
                job=self.job.name,
                task=node.key,
                location=str(definition.source),
            )
        inner_settings = {
            k: v for k, v in definition.settings.items() if k not in _OUTER_FOR_EACH_SETTINGS
        }
        inputs = for_each.inputs
        if isinstance(inputs, TaskValueRef):
            rendered = inputs.render()
        elif isinstance(inputs, str):
            rendered = inputs
        else:
            rendered = json.dumps(inputs)
        loop: dict[str, Any] = {"inputs": rendered}
        if for_each.concurrency is not None:
            loop["concurrency"] = for_each.concurrency
        loop["task"] = {
            "task_key": inner_key,
            **self._runnable(node, inner_settings, for_each_input=True),
        }
        task["for_each_task"] = loop
        for key in sorted(_OUTER_FOR_EACH_SETTINGS & set(definition.settings)):
            task[key] = plain_copy(definition.settings[key])
        return task

    def _runnable(
        self, node: TaskNode, settings: Mapping[str, Any], *, for_each_input: bool
    ) -> dict[str, Any]:
        """The part of a task that runs code: wheel task, compute, retries, settings."""
        definition = node.definition
        named = self.named.copy()
        named[TASK_PARAM] = node.key
        if for_each_input:
            named[FOR_EACH_INPUT_PARAM] = FOR_EACH_INPUT_VALUE
            # Job parameters are pushed down to keyword wheel tasks; the docs do not say
            # they reach the task inside a for-each (a JSON-array task), so it names them.
            named.update(self.references)
        if self.job.check_results:
            named[CHECK_RESULTS_PARAM] = self.job.check_results
        wheel: Any = {
            "package_name": self.options.package_name,
            "entry_point": ENTRY_POINT,
            "named_parameters": named,
        }
        notebook = node.key in self.notebook_tasks  # task values: notebook_task.py
        if self.models is not None and not for_each_input and plain_text(node.key) and not notebook:
            wheel = self.models.PythonWheelTask(**wheel)
        task: dict[str, Any] = {"python_wheel_task": wheel}
        extra_libraries = settings.get("libraries")
        if self.job.cluster is not None:
            task["job_cluster_key"] = self.job.cluster.name
            wheels = [{"whl": wheel} for wheel in self.options.wheels]
            task["libraries"] = [*wheels, *(plain_copy(extra_libraries) or [])]
        else:
            if extra_libraries:
                raise DefinitionError(
                    "serverless tasks cannot have 'libraries'; their dependencies come from the "
                    "job environment (or give the job a cluster=job_cluster(...))",
                    job=self.job.name,
                    task=node.key,
                    location=str(definition.source),
                )
            task["environment_key"] = self.options.environment_key
        retries = definition.retries
        if retries is not None:
            task["max_retries"] = retries.max_retries
            task["min_retry_interval_millis"] = retries.min_retry_interval_millis
            task["retry_on_timeout"] = retries.retry_on_timeout
        for key in sorted(settings):
            if key != "libraries":
                task[key] = plain_copy(settings[key])
        if notebook:
            runnable = f"{node.key}{FOR_EACH_TASK_SUFFIX}" if for_each_input else node.key
            return as_notebook_task(
                task,
                job_name=self.job.name,
                runnable_key=runnable,
                notebook_dir=self.options.notebook_dir,
            )
        return task
