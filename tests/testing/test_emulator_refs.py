"""The emulator's dynamic value reference check (testing/_store/_emulator_refs.py), over HTTP."""

from __future__ import annotations

from typing import Any

import pytest
from databricks.sdk import WorkspaceClient
from databricks.sdk.errors import InvalidParameterValue
from hypothesis import given
from hypothesis import strategies as st

from databricks_bundle_decorators import Registry, for_each_task, set_task_value, task, task_value
from databricks_bundle_decorators.bundle.codegen import job_resource
from databricks_bundle_decorators.testing._store._emulator_refs import reference_problem


def _create(w: WorkspaceClient, settings: dict[str, Any]) -> int:
    created = w.api_client.do("POST", "/api/2.2/jobs/create", body=settings)
    assert isinstance(created, dict)
    return int(created["job_id"])


def _loop_job(inputs: str) -> dict[str, Any]:
    return {
        "name": "loop",
        "tasks": [
            {"task_key": "a-b", "notebook_task": {"notebook_path": "/x"}},
            {
                "task_key": "each",
                "depends_on": [{"task_key": "a-b"}],
                "for_each_task": {
                    "inputs": inputs,
                    "task": {
                        "task_key": "each_iteration",
                        "notebook_task": {"notebook_path": "/y"},
                    },
                },
            },
        ],
    }


def test_a_generated_task_value_job_with_a_dashed_task_key_is_accepted(w: WorkspaceClient) -> None:
    registry = Registry()

    @registry.job
    def loop() -> None:
        @task(name="a-b")
        def discover() -> None:
            set_task_value("k", ["north"])

        @for_each_task(inputs=task_value("a-b", "k"))
        def each(inputs: str) -> None: ...

        discover()
        each()

    settings = job_resource(registry.get("loop"), package_name="proj")
    loop_task = next(t for t in settings["tasks"] if "for_each_task" in t)
    assert loop_task["for_each_task"]["inputs"] == "{{tasks.`a-b`.values.k}}"
    job_id = _create(w, settings)
    assert w.jobs.get(job_id).settings is not None


def test_the_unescaped_reference_is_refused_and_the_escaped_ones_accepted(
    w: WorkspaceClient,
) -> None:
    with pytest.raises(InvalidParameterValue, match=r"tasks\.a-b\.values\.k"):
        _create(w, _loop_job("{{tasks.a-b.values.k}}"))
    _create(w, _loop_job("{{tasks.`a-b`.values.k}}"))
    _create(w, _loop_job("{{tasks.`a-b`.values.`k`}}"))


def test_unknown_references_in_known_namespaces_are_refused_others_are_text(
    w: WorkspaceClient,
) -> None:
    # "{{job.naem}}" is the docs' own example of a refused reference.
    with pytest.raises(InvalidParameterValue, match=r"job\.naem"):
        _create(w, {"name": "x", "parameters": [{"name": "p", "default": "{{job.naem}}"}]})
    job_id = _create(w, {"name": "x", "parameters": [{"name": "p", "default": "{{my.value}}"}]})
    with pytest.raises(InvalidParameterValue, match="job_parameters"):
        w.jobs.run_now(job_id, job_parameters={"p": "{{job.parameters.a-b}}"})
    w.jobs.run_now(job_id, job_parameters={"p": "{{job.parameters.`a-b`}}"})


def test_reset_is_checked_too(w: WorkspaceClient) -> None:
    job_id = _create(w, _loop_job("{{tasks.`a-b`.values.k}}"))
    body = {"job_id": job_id, "new_settings": _loop_job("{{tasks.a-b.values.k}}")}
    with pytest.raises(InvalidParameterValue):
        w.api_client.do("POST", "/api/2.2/jobs/reset", body=body)


@given(st.text(alphabet="abc-_.$ 1", min_size=1, max_size=8))
def test_a_task_key_is_accepted_escaped_and_refused_unescaped_unless_plain(key: str) -> None:
    escaped = f"{{{{tasks.`{key}`.values.k}}}}"
    assert reference_problem(escaped) is None
    plain = all(c.isalnum() or c == "_" for c in key)
    assert (reference_problem(f"{{{{tasks.{key}.values.k}}}}") is None) == plain
