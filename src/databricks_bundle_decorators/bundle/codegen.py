"""Definitions -> Databricks job settings (``resources.jobs.<name>``): each ``@task`` a
``python_wheel_task`` running ``dbxdec-run``, given job parameters by pushdown
(https://docs.databricks.com/aws/en/jobs/job-parameters); monitor and controller jobs."""

from __future__ import annotations

import inspect
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import replace
from functools import lru_cache
from typing import Any

from ..backfill.check_report import CHECK_RESULTS_PARAM, TASK_RUN_ID_PARAM, TASK_RUN_ID_VALUE
from ..backfill.deadline import MONITOR_ENTRY_POINT, MONITOR_JOB_SUFFIX, MONITOR_TASK_KEY
from ..backfill.wire import (
    BACKFILL_PARAM_DEFAULTS,
    BACKFILL_RUN_TIME_PARAM,
    ENTRY_POINT,
    FOR_EACH_INPUT_PARAM,
    FOR_EACH_INPUT_VALUE,
    JOB_PARAM,
    MODULE_PARAM,
    RUN_ID_PARAM,
    RUN_ID_VALUE,
    RUN_TIME_DEFAULT,
    TASK_PARAM,
)
from ..backfill.wire import controller as wire
from ..definitions import JobDefinition, Registry, TaskNode
from ..definitions.job import JobCluster
from ..definitions.refs import TaskValueRef
from ..definitions.task_values import task_value_tasks
from ..errors import DefinitionError, UsageError
from .client_floor import compute_floor_problem
from .framework_wheel import FRAMEWORK_DISTRIBUTION
from .notebook_task import as_notebook_task, drop_unused_environment
from .options import CodegenOptions
from .tags import MAX_TAGS, TAG_PREFIX, backfill_tags, tag_problem
from .triggers import trigger_setting
from .typed import models, plain_text

FOR_EACH_TASK_SUFFIX = "_iteration"
BACKFILL_MAX_CONCURRENT_RUNS = 10
"""``max_concurrent_runs`` of a job with a backfill: the launcher runs slices at once."""
CONTROLLER_TIMEOUT_SECONDS = int(wire.DEFAULT_HANDOVER_AFTER) + 3600
"""A controller run hands over after 3 h; one an hour past that is stuck and is retried."""

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
_CONTROLLER_SETTINGS = ("run_as_service_principal", "secret_scope")
_SCALARS = frozenset({str, int, float, bool, type(None)})


def first_paragraph(fn: Any, limit: int) -> str | None:
    """The first paragraph of ``fn``'s docstring on one line, cut to ``limit`` characters
    (``None`` without a docstring): a job's or task's description."""
    local = inspect.isfunction(fn) and _no_enclosing_class(fn.__qualname__)
    if getattr(fn, "__doc__", "") is None and local:
        return None  # what inspect.getdoc finds, without its search of enclosing classes
    doc = inspect.getdoc(fn)
    if not doc:
        return None
    paragraph = " ".join(doc.split("\n\n", 1)[0].split())
    return paragraph if len(paragraph) <= limit else paragraph[: limit - 3] + "..."


@lru_cache(maxsize=4096)  # the tasks of one factory share their qualified name
def _no_enclosing_class(qualname: str) -> bool:
    outer = qualname.rpartition(".")[0]
    return not outer or "<locals>" in outer.split(".")


def plain_copy(value: Any) -> Any:
    """A copy made of dicts, lists and scalars only (mapping proxies, tuples unwrapped)."""
    if type(value) in _SCALARS:  # most settings; spares the Mapping ABC check
        return value
    if isinstance(value, Mapping):
        return {str(key): plain_copy(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain_copy(item) for item in value]
    return value


def job_resource(
    job: JobDefinition,
    *,
    package_name: str | None = None,
    options: CodegenOptions | None = None,
    **overrides: Any,
) -> dict[str, Any]:
    """The Databricks job settings of ``job``, a plain dict for ``resources.jobs.<name>``;
    ``package_name`` and ``overrides`` (e.g. ``wheel=...``) change fields of ``options``.

    Raises:
        DefinitionError: the job body is wrong, a setting collides with one dbxdec
            generates, or a tag breaks Databricks' tag rules.
    """
    settings = options if options is not None else CodegenOptions()
    if package_name is not None:
        overrides["package_name"] = package_name
    if overrides:
        settings = replace(settings, **overrides)
    return _JobBuilder(job, settings).build()


def prebuilt_job_resource(job: JobDefinition, options: CodegenOptions) -> dict[str, Any]:
    """:func:`job_resource` with job parameters, wheel tasks and task dependencies already
    built as ``databricks.bundles`` objects, which :func:`.typed.typed_job` passes through."""
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


def _job_compute(cluster: JobCluster | None, options: CodegenOptions) -> dict[str, Any]:
    """A job's ``job_clusters`` (with ``cluster``) or serverless ``environments``."""
    if cluster is not None:
        return {
            "job_clusters": [
                {"job_cluster_key": cluster.name, "new_cluster": plain_copy(cluster.spec)}
            ]
        }
    spec = {
        "environment_version": options.environment_version,
        "dependencies": list(options.wheels),
    }
    return {"environments": [{"environment_key": options.environment_key, "spec": spec}]}


def _task_compute(
    cluster: JobCluster | None,
    options: CodegenOptions,
    libraries: Any = None,
    wheels: list[Any] | None = None,
) -> dict[str, Any]:
    """A task's ``job_cluster_key`` and wheel ``libraries`` (``wheels``: those of
    ``options``, already made), or its ``environment_key``."""
    if cluster is None:
        return {"environment_key": options.environment_key}
    if wheels is None:
        wheels = [{"whl": wheel} for wheel in options.wheels]
    return {"job_cluster_key": cluster.name, "libraries": [*wheels, *(libraries or [])]}


def _schedule(expression: str, timezone: str, paused: bool) -> dict[str, Any]:
    schedule = {"quartz_cron_expression": expression, "timezone_id": timezone}
    return {**schedule, "pause_status": "PAUSED"} if paused else schedule


class _JobBuilder:
    """Builds the settings of one job; one instance per job."""

    def __init__(
        self, job: JobDefinition, options: CodegenOptions, *, prebuilt: bool = False
    ) -> None:
        self.job = job
        self.options = options
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
        self.wheels = options.wheels
        plain_wheels = all(map(plain_text, self.wheels))
        self.library = self.models.Library if self.models is not None and plain_wheels else None

    def _error(self, message: str, node: TaskNode | None = None) -> DefinitionError:
        if node is None:
            return DefinitionError(message, job=self.job.name, location=str(self.job.source))
        source = str(node.definition.source)
        return DefinitionError(message, job=self.job.name, task=node.key, location=source)

    def build(self) -> dict[str, Any]:
        job, options = self.job, self.options
        for key in job.settings:
            if key in _GENERATED_JOB_SETTINGS:
                why = _GENERATED_JOB_SETTINGS[key]
                raise self._error(f"job setting {key!r} is generated by dbxdec: {why}")
        spec = None if job.cluster is None else job.cluster.spec
        floor = compute_floor_problem(spec, options.environment_version)
        if floor is not None:  # below the compute the Databricks path is checked against
            raise self._error(floor)
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
            schedule = job.schedule
            paused = options.pause_schedules
            resource["schedule"] = _schedule(schedule.expression, schedule.timezone, paused)
        if job.trigger is not None:
            resource["trigger"] = trigger_setting(job.trigger, paused=options.pause_schedules)
        resource["max_concurrent_runs"] = (
            BACKFILL_MAX_CONCURRENT_RUNS if job.backfill is not None else 1
        )
        resource["queue"] = {"enabled": True}
        resource.update(_job_compute(job.cluster, options))
        resource["tasks"] = [self._task(job.graph[key]) for key in job.graph.topological_order()]
        drop_unused_environment(resource)  # every task a notebook task: none installs it
        for key in sorted(job.settings):
            if key != "tags":
                resource[key] = plain_copy(job.settings[key])
        return resource

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
            raise self._error("job setting 'tags' must be a mapping of strings")
        tags = {**self.options.tags, **{str(k): v for k, v in user.items()}}
        for key, value in tags.items():
            if key.startswith(TAG_PREFIX):
                raise self._error(
                    f"tag {key!r} is reserved: tags starting with {TAG_PREFIX!r} are dbxdec's"
                )
            if not isinstance(value, str):
                raise self._error(f"tag {key!r} must have a string value, got {value!r}")
        if self.job.backfill is not None:
            tags.update(backfill_tags(self.job.backfill))
        for key, value in tags.items():
            problem = tag_problem(key, value)
            if problem is not None:
                raise self._error(problem)
        if len(tags) > MAX_TAGS:
            raise self._error(
                f"{len(tags)} tags (dbxdec's backfill tags included); a job may have at most "
                f"{MAX_TAGS}"
            )
        return tags

    def _task(self, node: TaskNode) -> dict[str, Any]:
        definition = node.definition
        for key in definition.settings:
            if key in _GENERATED_TASK_SETTINGS:
                why = _GENERATED_TASK_SETTINGS[key]
                raise self._error(f"task setting {key!r} is generated by dbxdec: {why}", node)
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
            raise self._error(
                f"a for-each task key may have at most {_MAX_TASK_KEY - len(FOR_EACH_TASK_SUFFIX)}"
                f" characters (its iteration task adds {FOR_EACH_TASK_SUFFIX!r})",
                node,
            )
        inner_settings = {
            k: v for k, v in definition.settings.items() if k not in _OUTER_FOR_EACH_SETTINGS
        }
        inputs = for_each.inputs
        if isinstance(inputs, TaskValueRef):
            rendered = inputs.render()
        else:
            rendered = inputs if isinstance(inputs, str) else json.dumps(inputs)
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
        libraries = plain_copy(settings.get("libraries"))
        if self.job.cluster is None and libraries:
            raise self._error(
                "serverless tasks cannot have 'libraries'; their dependencies come from the "
                "job environment (or give the job a cluster=job_cluster(...))",
                node,
            )
        if self.library is not None and not for_each_input and not notebook:
            wheels = [self.library(whl=wheel) for wheel in self.wheels]
        else:
            wheels = [{"whl": wheel} for wheel in self.wheels]
        task.update(_task_compute(self.job.cluster, self.options, libraries, wheels))
        retries = node.definition.retries
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


def monitor_job_resource(job: JobDefinition, options: CodegenOptions) -> dict[str, Any] | None:
    """``<job>__deadline_monitor``, the job of ``Deadline(monitor=DeadlineMonitor(...))``
    (``None`` without one): ``dbxdec-monitor`` on the monitor's schedule, on the job's
    compute. Its runs fail when keys newly become overdue, so the monitor's notifications
    deliver the alert (https://docs.databricks.com/aws/en/jobs/notifications)."""
    deadlines = job.deadlines
    monitor = deadlines.deadline.monitor if deadlines is not None else None
    if deadlines is None or monitor is None:
        return None
    wheel = {
        "package_name": FRAMEWORK_DISTRIBUTION,
        "entry_point": MONITOR_ENTRY_POINT,
        "named_parameters": {JOB_PARAM: job.name, MODULE_PARAM: job.fn.__module__},
    }
    resource: dict[str, Any] = {
        "name": f"{job.name}{MONITOR_JOB_SUFFIX}",
        "description": (
            f"dbxdec deadline monitor of {job.name}: a run fails, listing them, when keys "
            "of the job newly become overdue"
        ),
        "parameters": [{"name": BACKFILL_RUN_TIME_PARAM, "default": RUN_TIME_DEFAULT}],
        "schedule": _schedule(monitor.schedule, deadlines.tz, options.pause_schedules),
        "max_concurrent_runs": 1,  # two runs at once would both alert a new key
        **_job_compute(job.cluster, options),
        "tasks": [
            {
                "task_key": MONITOR_TASK_KEY,
                "python_wheel_task": wheel,
                **_task_compute(job.cluster, options),
            }
        ],
    }
    resource.update(plain_copy(monitor.notifications()))
    return resource


def controller_job_resource(
    jobs: Iterable[JobDefinition], options: CodegenOptions, settings: Mapping[str, Any]
) -> dict[str, Any] | None:
    """The ``dbxdec_controller`` job of detached backfills (``None`` when no job has a
    backfill): one run per backfill, queued past ``max_concurrent_runs``; its task retries
    forever (``max_retries: -1``) and on timeout, so a dead or stuck controller is followed
    by the next attempt (databricks-sdk ``jobs.Task``). ``[tool.dbxdec.controller]`` may
    set ``run_as_service_principal`` and ``secret_scope``.

    Raises:
        UsageError: an unknown ``[tool.dbxdec.controller]`` key or a non-string value.
    """
    if not any(job.backfill is not None for job in jobs):
        return None
    table = settings.get("controller", {})
    if not isinstance(table, Mapping):
        raise UsageError("[tool.dbxdec.controller] must be a table")
    config: dict[str, str] = {}
    for key, value in table.items():
        if key not in _CONTROLLER_SETTINGS:
            raise UsageError(
                f"[tool.dbxdec.controller] {key}: unknown setting (known: {_CONTROLLER_SETTINGS})"
            )
        if not isinstance(value, str) or not value.strip():
            raise UsageError(f"[tool.dbxdec.controller] {key}: expected a non-empty string")
        config[key] = value.strip()
    named = {wire.RUN_ID_PARAM: "{{job.run_id}}", wire.CONTROLLER_JOB_ID_PARAM: "{{job.id}}"}
    if "secret_scope" in config:
        named["secret_scope"] = config["secret_scope"]
    task: dict[str, Any] = {
        "task_key": wire.CONTROLLER_TASK_KEY,
        "python_wheel_task": {
            "package_name": FRAMEWORK_DISTRIBUTION,
            "entry_point": wire.CONTROLLER_ENTRY_POINT,
            "named_parameters": named,
        },
        "max_retries": -1,
        "retry_on_timeout": True,
        "timeout_seconds": CONTROLLER_TIMEOUT_SECONDS,
        "environment_key": options.environment_key,
    }
    parameters = (wire.BACKFILL_ID_PARAM, wire.JOB_ID_PARAM, wire.GENERATION_PARAM)
    resource: dict[str, Any] = {
        "name": wire.CONTROLLER_JOB,
        "description": (
            "dbxdec controller of detached backfills (dbxdec backfill ... --detach): one run "
            "per backfill, handing over to a fresh run every few hours"
        ),
        "parameters": [{"name": name, "default": ""} for name in parameters],
        "max_concurrent_runs": wire.CONTROLLER_MAX_CONCURRENT_RUNS,
        "queue": {"enabled": True},
        **_job_compute(None, options),
        "tasks": [task],
    }
    if "run_as_service_principal" in config:
        resource["run_as"] = {"service_principal_name": config["run_as_service_principal"]}
    return resource
