"""codegen.prebuilt_job_resource + typed_job: the same Job as the plain settings give."""

from __future__ import annotations

from typing import Any

import pytest
from databricks.bundles.jobs import Job, Library, PythonWheelTask

from databricks_bundle_decorators import Registry, for_each_task, task, task_value
from databricks_bundle_decorators.bundle import CodegenOptions, job_resource
from databricks_bundle_decorators.bundle.codegen import prebuilt_job_resource
from databricks_bundle_decorators.bundle.typed import typed_job
from databricks_bundle_decorators.definitions import JobDefinition

from .codegen_jobs import JOB_SHAPES, SMALL, pipeline


def _shape(shape: dict[str, Any]) -> JobDefinition:
    registry = Registry()
    pipeline(registry, **shape)
    return registry.get("sales")


def _for_each() -> JobDefinition:
    registry = Registry()

    @registry.job(cluster=SMALL)
    def looping() -> None:
        @task
        def plan() -> None: ...

        @for_each_task(inputs=task_value(plan, "keys"), concurrency=2)
        def each(inputs: str) -> None: ...

        each()  # before plan: its inputs make plan its upstream all the same
        plan()

    return registry.get("looping")


def _libraries() -> JobDefinition:
    registry = Registry()

    @registry.job(cluster=SMALL)
    def with_libraries() -> None:
        @task(libraries=[{"pypi": {"package": "requests"}}])
        def fetch() -> None: ...

        @task
        def store() -> None: ...

        fetch()
        store()

    return registry.get("with_libraries")


CASES = {
    **{name: lambda shape=shape: _shape(shape) for name, shape in JOB_SHAPES.items()},
    "for-each": _for_each,
    "own-libraries": _libraries,
}
OPTIONS = {
    "plain": CodegenOptions(package_name="sales-pkg"),
    "package-variable": CodegenOptions(package_name="${var.package}"),
}


@pytest.mark.parametrize("options", list(OPTIONS), ids=list(OPTIONS))
@pytest.mark.parametrize("case", list(CASES), ids=list(CASES))
def test_prebuilt_settings_give_the_same_job(case: str, options: str) -> None:
    job = CASES[case]()
    plain = job_resource(job, options=OPTIONS[options])
    prebuilt = typed_job(prebuilt_job_resource(job, OPTIONS[options]))
    assert prebuilt.as_dict() == typed_job(plain).as_dict() == Job.from_dict(plain).as_dict()


def test_wheel_tasks_are_prebuilt_only_from_plain_text() -> None:
    job = CASES["serverless-daily"]()
    plain = prebuilt_job_resource(job, OPTIONS["plain"])["tasks"][0]["python_wheel_task"]
    variable = prebuilt_job_resource(job, OPTIONS["package-variable"])["tasks"][0]
    assert isinstance(plain, PythonWheelTask)
    assert isinstance(variable["python_wheel_task"], dict)


def test_wheel_libraries_are_prebuilt_only_from_plain_text() -> None:
    job = CASES["own-libraries"]()
    plain = prebuilt_job_resource(job, OPTIONS["plain"])["tasks"][0]["libraries"]
    variable = prebuilt_job_resource(job, OPTIONS["package-variable"])["tasks"][0]["libraries"]
    assert [type(library) for library in plain] == [Library, Library, dict]
    assert all(isinstance(library, dict) for library in variable)
