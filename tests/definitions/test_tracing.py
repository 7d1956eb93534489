"""@job/@task: tracing builds the graph lazily, and definition errors are precise."""

from __future__ import annotations

from typing import Any

import pytest

from databricks_bundle_decorators import (
    DailyBackfill,
    DefinitionError,
    Registry,
    all_partitions,
    for_each_task,
    job_cluster,
    task,
    task_value,
)
from databricks_bundle_decorators.definitions import RetryPolicy

from .stores import STORED

THIS_FILE = __file__


@pytest.fixture
def registry() -> Registry:
    return Registry()


def test_calls_build_data_edges_in_order(registry: Registry) -> None:
    @registry.job(backfill=DailyBackfill("2024-01-01"))
    def pipeline() -> None:
        @task(io_manager=STORED)
        def extract() -> None: ...

        @task(io_manager=STORED)
        def clean(raw: Any) -> None: ...

        @task
        def report(cleaned: Any, history: Any) -> None: ...

        raw = extract()
        cleaned = clean(raw)
        report(cleaned, history=all_partitions(raw))

    graph = pipeline.graph
    assert list(graph.nodes) == ["extract", "clean", "report"]
    assert graph.topological_order() == ["extract", "clean", "report"]
    edges = {(e.param, e.upstream, e.all_partitions) for e in graph["report"].inputs}
    assert edges == {("cleaned", "clean", False), ("history", "extract", True)}
    assert graph.downstream_of("extract") == ["clean", "report"]


def test_body_is_traced_lazily_and_once(registry: Registry) -> None:
    calls: list[str] = []

    @registry.job
    def pipeline() -> None:
        calls.append("traced")

        @task
        def only() -> None: ...

        only()

    assert calls == []
    assert not pipeline.is_traced
    _ = pipeline.graph
    _ = pipeline.graph
    assert calls == ["traced"]


def test_depends_on_adds_control_edge(registry: Registry) -> None:
    @registry.job
    def pipeline() -> None:
        @task
        def setup() -> None: ...

        s = setup()

        @task(depends_on=[s])
        def work() -> None: ...

        work()

    assert pipeline.graph["work"].control_deps == ("setup",)
    assert pipeline.graph["work"].inputs == ()


def test_cycle_through_depends_on_is_reported(registry: Registry) -> None:
    @registry.job
    def pipeline() -> None:
        @task(depends_on=["b"])
        def a() -> None: ...

        @task(depends_on=["a"])
        def b() -> None: ...

        a()
        b()

    with pytest.raises(
        DefinitionError,
        match=r"job 'pipeline', task '(a|b)': dependency cycle: (a -> b -> a|b -> a -> b)",
    ) as info:
        _ = pipeline.graph
    assert THIS_FILE in str(info.value)


def test_duplicate_task_key(registry: Registry) -> None:
    @registry.job
    def pipeline() -> None:
        @task(name="load")
        def first() -> None: ...

        @task(name="load")
        def second() -> None: ...

        first()
        second()

    with pytest.raises(
        DefinitionError,
        match=r"job 'pipeline', task 'load': duplicate task key.*test_tracing.py:\d+",
    ):
        _ = pipeline.graph


def test_task_called_twice(registry: Registry) -> None:
    @registry.job
    def pipeline() -> None:
        @task
        def extract() -> None: ...

        extract()
        extract()

    with pytest.raises(DefinitionError, match=r"task 'extract': is called twice"):
        _ = pipeline.graph


def test_non_task_argument(registry: Registry) -> None:
    @registry.job
    def pipeline() -> None:
        @task
        def load(limit: int) -> None: ...

        load(10)

    with pytest.raises(
        DefinitionError,
        match=r"task 'load': argument 'limit' is a int, not the output of a task call",
    ):
        _ = pipeline.graph


def test_call_not_matching_signature(registry: Registry) -> None:
    @registry.job
    def pipeline() -> None:
        @task
        def extract() -> None: ...

        @task
        def load(a: Any, b: Any) -> None: ...

        load(extract())

    with pytest.raises(
        DefinitionError,
        match=r"task 'load': call does not match load\(a: 'Any', b: 'Any'\).*missing a required argument: 'b'",
    ):
        _ = pipeline.graph


def test_unknown_depends_on(registry: Registry) -> None:
    @registry.job
    def pipeline() -> None:
        @task(depends_on=["ghost"])
        def work() -> None: ...

        work()

    with pytest.raises(DefinitionError, match=r"depends on task 'ghost', which is not called"):
        _ = pipeline.graph


def test_task_outside_job_body() -> None:
    @task
    def extract() -> int:
        return 3

    with pytest.raises(
        DefinitionError, match=r"task 'extract': called outside a @job body.*extract.fn"
    ):
        extract()
    assert extract.fn() == 3  # the plain function stays available for unit tests


@pytest.mark.parametrize(
    "name", ["backfill_key", "backfill_start_key", "backfill_exact", "dbxdec_job"]
)
def test_reserved_parameter_names(registry: Registry, name: str) -> None:
    with pytest.raises(
        DefinitionError,
        match=rf"job 'pipeline': job parameter '{name}' is reserved.*test_tracing.py",
    ):

        @registry.job(params={name: "x"})
        def pipeline() -> None: ...


def test_params_stored_as_strings(registry: Registry) -> None:
    @registry.job(params={"limit": 10, "dry": True, "env": "dev"})
    def pipeline() -> None: ...

    assert pipeline.params == {"limit": "10", "dry": "true", "env": "dev"}


def test_invalid_cron_fails_at_definition(registry: Registry) -> None:
    with pytest.raises(DefinitionError, match=r"job 'pipeline': .*hour.*test_tracing.py"):

        @registry.job(schedule="0 0 25 * * ?")
        def pipeline() -> None: ...


def test_schedule_takes_backfill_timezone(registry: Registry) -> None:
    @registry.job(backfill=DailyBackfill("2024-01-01", tz="Europe/Berlin"), schedule="0 0 6 * * ?")
    def pipeline() -> None: ...

    assert pipeline.schedule is not None
    assert pipeline.schedule.timezone == "Europe/Berlin"


def test_body_exception_names_job(registry: Registry) -> None:
    @registry.job
    def pipeline() -> None:
        raise KeyError("oops")

    with pytest.raises(DefinitionError, match=r"job 'pipeline': the job body raised KeyError"):
        _ = pipeline.graph


def test_job_calling_no_task(registry: Registry) -> None:
    @registry.job
    def pipeline() -> None:
        pass

    with pytest.raises(DefinitionError, match="calls no task"):
        _ = pipeline.graph


def test_job_body_with_arguments_rejected(registry: Registry) -> None:
    with pytest.raises(DefinitionError, match="takes no arguments"):

        @registry.job
        def pipeline(x: int) -> None: ...


def test_task_settings_and_retries(registry: Registry) -> None:
    @registry.job(cluster=job_cluster("small", spark_version="16.4.x-scala2.12", num_workers=1))
    def pipeline() -> None:
        @task(retries=3, timeout_seconds=600)
        def a() -> None: ...

        @task(retries=RetryPolicy(2, min_retry_interval_millis=1000, retry_on_timeout=True))
        def b() -> None: ...

        a()
        b()

    graph = pipeline.graph
    assert graph["a"].definition.retries == RetryPolicy(3)
    assert graph["a"].definition.settings == {"timeout_seconds": 600}
    assert graph["b"].definition.retries == RetryPolicy(2, 1000, True)
    assert pipeline.cluster is not None and pipeline.cluster.spec["num_workers"] == 1


def test_for_each_task_with_task_value_inputs(registry: Registry) -> None:
    @registry.job
    def pipeline() -> None:
        @task
        def discover() -> None: ...

        @task(io_manager=STORED)
        def load() -> None: ...

        @for_each_task(inputs=task_value(discover, "regions"), concurrency=3)
        def process(inputs: str, events: Any) -> None: ...

        discover()
        process(events=load())

    node = pipeline.graph["process"]
    assert node.upstream == ("load", "discover")
    spec = node.definition.for_each
    assert spec is not None and spec.concurrency == 3
    assert spec.inputs.render() == "{{tasks.discover.values.regions}}"  # type: ignore[union-attr]


def test_for_each_needs_inputs_parameter() -> None:
    with pytest.raises(DefinitionError, match="parameter named 'inputs'"):

        @for_each_task(inputs=["a"])
        def process(item: str) -> None: ...


def test_proxy_from_another_job_rejected(registry: Registry) -> None:
    leaked: list[Any] = []

    @registry.job
    def first() -> None:
        @task
        def extract() -> None: ...

        leaked.append(extract())

    @registry.job
    def second() -> None:
        @task
        def load(data: Any) -> None: ...

        load(leaked[0])

    _ = first.graph
    with pytest.raises(DefinitionError, match=r"of another job \('first'\)"):
        _ = second.graph


def test_all_partitions_rejects_non_proxy() -> None:
    with pytest.raises(TypeError, match="expects the output of a task call"):
        all_partitions("extract")  # type: ignore[arg-type]
