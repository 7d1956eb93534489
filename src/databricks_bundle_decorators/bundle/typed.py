"""Generated job settings -> ``databricks.bundles.jobs.Job`` objects, built directly for the
shapes dbxdec generates (the reflection-based loader costs ~6 ms per 10-task job); anything
else goes through the strict loader. ``typed_job(s).as_dict() == Job.from_dict(s).as_dict()``."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from functools import cache
from typing import Any, TypeGuard

_REFERENCE = "${"
_PARAMETER_KEYS = frozenset({"name", "default"})
_SCHEDULE_KEYS = frozenset({"quartz_cron_expression", "timezone_id", "pause_status"})
_QUEUE_KEYS = frozenset({"enabled"})
_ENVIRONMENT_KEYS = frozenset({"environment_key", "spec"})
_SPEC_KEYS = frozenset({"environment_version", "dependencies"})
_WHEEL_KEYS = frozenset({"package_name", "entry_point", "named_parameters"})
_LIBRARY_KEYS = frozenset({"whl"})
_JOB_CLUSTER_KEYS = frozenset({"job_cluster_key", "new_cluster"})
# ClusterSpec fields of plain types (enums and nested specs take the strict loader)
_CLUSTER_TEXT = frozenset(
    {
        "spark_version",
        "node_type_id",
        "driver_node_type_id",
        "instance_pool_id",
        "driver_instance_pool_id",
        "policy_id",
        "single_user_name",
        "cluster_name",
    }
)
_CLUSTER_WHOLE_NUMBERS = frozenset({"num_workers", "autotermination_minutes"})
_CLUSTER_FLAGS = frozenset(
    {
        "apply_policy_default_values",
        "enable_elastic_disk",
        "enable_local_disk_encryption",
        "is_single_node",
        "use_ml_runtime",
    }
)
_CLUSTER_TEXT_MAPS = frozenset({"spark_conf", "spark_env_vars", "custom_tags"})


@cache
def models() -> Any:
    """``databricks.bundles.jobs``, imported on first use, then looked up once."""
    return importlib.import_module("databricks.bundles.jobs")


def typed_job(settings: Mapping[str, Any]) -> Any:
    """The ``Job`` for ``settings``; raises what ``Job.from_dict`` raises."""
    job = models().Job
    fields: dict[str, Any] = {}
    for key, value in settings.items():
        build = _JOB_FIELDS.get(key)
        fast = build(value) if build is not None else None
        fields[key] = fast if fast is not None else _slow(job, key, value)
    return job(**fields)


def _slow(model: Any, key: str, value: Any, **required: Any) -> Any:
    return getattr(model.from_dict({**required, key: value}), key)


def _is_mapping(value: object) -> TypeGuard[Mapping[Any, Any]]:
    # Generated settings are dicts; the Mapping ABC check costs several times more.
    return type(value) is dict or isinstance(value, Mapping)


def plain_text(value: object) -> bool:
    """Whether ``value`` is a string without a ``${...}`` reference."""
    return isinstance(value, str) and _REFERENCE not in value


def _texts(values: object) -> bool:
    if not _is_mapping(values):
        return False
    # joined in C, not tested one by one; join() refuses non-str, and no "${" spans "\n"
    try:
        "".join(values)
        joined = "\n".join(values.values())
    except TypeError:
        return False
    return _REFERENCE not in joined


def _keys(value: object, allowed: frozenset[str]) -> bool:
    return _is_mapping(value) and value.keys() <= allowed


def _parameters(value: Any) -> Any:
    if not isinstance(value, list):
        return None
    definition = models().JobParameterDefinition
    built = []
    for item in value:
        if not isinstance(item, definition):  # else built by codegen.prebuilt_job_resource
            if not _keys(item, _PARAMETER_KEYS):
                return None
            name, default = item.get("name"), item.get("default")
            if not (plain_text(name) and plain_text(default)):
                return None
            item = definition(name=name, default=default)
        built.append(item)
    return built


def _tags(value: Any) -> Any:
    return dict(value) if _texts(value) else None


def _text_field(value: Any) -> Any:
    return value if plain_text(value) else None


def _whole_number(value: Any) -> Any:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _schedule(value: Any) -> Any:
    if not _keys(value, _SCHEDULE_KEYS):
        return None
    cron, zone = value.get("quartz_cron_expression"), value.get("timezone_id")
    if not (plain_text(cron) and plain_text(zone)):
        return None
    pause = value.get("pause_status")
    if pause not in (None, "PAUSED", "UNPAUSED"):
        return None
    jobs = models()
    status = jobs.PauseStatus(pause) if pause is not None else None
    return jobs.CronSchedule(quartz_cron_expression=cron, timezone_id=zone, pause_status=status)


def _queue(value: Any) -> Any:
    if _keys(value, _QUEUE_KEYS) and isinstance(value.get("enabled"), bool):
        return models().QueueSettings(enabled=value["enabled"])
    return None


def _environments(value: Any) -> Any:
    if not isinstance(value, list):
        return None
    jobs = models()
    built = []
    for item in value:
        spec: Any = item.get("spec") if _is_mapping(item) else None
        if not (
            _keys(item, _ENVIRONMENT_KEYS)
            and plain_text(item.get("environment_key"))
            and _keys(spec, _SPEC_KEYS)
            and plain_text(spec.get("environment_version"))
            and isinstance(spec.get("dependencies"), list)
            and all(plain_text(d) for d in spec["dependencies"])
        ):
            return None
        built.append(
            jobs.JobEnvironment(
                environment_key=item["environment_key"],
                spec=jobs.Environment(
                    environment_version=spec["environment_version"],
                    dependencies=list(spec["dependencies"]),
                ),
            )
        )
    return built


def _job_clusters(value: Any) -> Any:
    if not isinstance(value, list):
        return None
    jobs = models()
    built = []
    for item in value:
        spec: Any = item.get("new_cluster") if _is_mapping(item) else None
        if not (
            _keys(item, _JOB_CLUSTER_KEYS)
            and plain_text(item.get("job_cluster_key"))
            and _is_mapping(spec)
        ):
            return None
        fields = _cluster_fields(spec)
        if fields is None:
            return None
        cluster = jobs.ClusterSpec(**fields)
        built.append(jobs.JobCluster(job_cluster_key=item["job_cluster_key"], new_cluster=cluster))
    return built


def _cluster_fields(spec: Mapping[str, Any]) -> dict[str, Any] | None:
    """``ClusterSpec`` arguments when every field of ``spec`` is of a plain type."""
    fields: dict[str, Any] = {}
    for name, value in spec.items():
        if name in _CLUSTER_TEXT:
            fast = _text_field(value)
        elif name in _CLUSTER_WHOLE_NUMBERS:
            fast = _whole_number(value)
        elif name in _CLUSTER_FLAGS:
            fast = _flag(value)
        elif name in _CLUSTER_TEXT_MAPS:
            fast = dict(value) if _texts(value) else None
        else:
            return None
        if fast is None:
            return None
        fields[name] = fast
    return fields


def _tasks(value: Any) -> Any:
    if not isinstance(value, list) or not all(_is_mapping(t) for t in value):
        return None
    return [typed_task(task) for task in value]


_JOB_FIELDS: dict[str, Callable[[Any], Any]] = {
    "name": _text_field,
    "description": _text_field,
    "parameters": _parameters,
    "tags": _tags,
    "schedule": _schedule,
    "max_concurrent_runs": _whole_number,
    "queue": _queue,
    "environments": _environments,
    "job_clusters": _job_clusters,
    "tasks": _tasks,
}


def typed_task(settings: Mapping[str, Any]) -> Any:
    """The ``Task`` for one task's settings (see :func:`typed_job`)."""
    task = models().Task
    fields: dict[str, Any] = {}
    fast: Any
    for name, value in settings.items():
        # most of a task's fields: tested inline rather than by a builder call each
        if name in _TASK_TEXT_FIELDS:
            fast = value if isinstance(value, str) and _REFERENCE not in value else None
        elif name in _TASK_WHOLE_NUMBER_FIELDS:
            fast = value if isinstance(value, int) and not isinstance(value, bool) else None
        else:
            build = _TASK_FIELDS.get(name)
            fast = build(value) if build is not None else None
        if fast is None:
            fast = _slow(task, name, value, task_key=settings.get("task_key"))
        fields[name] = fast
    return task(**fields)


def _depends_on(value: Any) -> Any:
    if not isinstance(value, list):
        return None
    dependency = models().TaskDependency
    built = []
    for item in value:
        if not isinstance(item, dependency):  # else built by codegen.prebuilt_job_resource
            if not (_is_mapping(item) and len(item) == 1 and plain_text(item.get("task_key"))):
                return None
            item = dependency(task_key=item["task_key"])
        built.append(item)
    return built


def _wheel_task(value: Any) -> Any:
    if isinstance(value, models().PythonWheelTask):  # built by codegen.prebuilt_job_resource
        return value
    if not _keys(value, _WHEEL_KEYS):
        return None
    package, entry_point = value.get("package_name"), value.get("entry_point")
    named = value.get("named_parameters", {})
    if not (plain_text(package) and plain_text(entry_point) and _texts(named)):
        return None
    return models().PythonWheelTask(
        package_name=package, entry_point=entry_point, named_parameters=dict(named)
    )


def _libraries(value: Any) -> Any:
    if not isinstance(value, list):
        return None
    library = models().Library
    built = []
    for item in value:
        if not isinstance(item, library):  # else built by codegen.prebuilt_job_resource
            if not (_keys(item, _LIBRARY_KEYS) and plain_text(item.get("whl"))):
                return None
            item = library(whl=item["whl"])
        built.append(item)
    return built


def _flag(value: Any) -> Any:
    return value if isinstance(value, bool) else None


_TASK_FIELDS: dict[str, Callable[[Any], Any]] = {
    "task_key": _text_field,
    "description": _text_field,
    "depends_on": _depends_on,
    "python_wheel_task": _wheel_task,
    "environment_key": _text_field,
    "job_cluster_key": _text_field,
    "libraries": _libraries,
    "max_retries": _whole_number,
    "min_retry_interval_millis": _whole_number,
    "retry_on_timeout": _flag,
    "timeout_seconds": _whole_number,
}
_TASK_TEXT_FIELDS = frozenset(name for name, build in _TASK_FIELDS.items() if build is _text_field)
_TASK_WHOLE_NUMBER_FIELDS = frozenset(
    name for name, build in _TASK_FIELDS.items() if build is _whole_number
)
