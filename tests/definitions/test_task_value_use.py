"""Which tasks set or read task values (definitions/task_values.py)."""

from __future__ import annotations

from databricks_bundle_decorators import (
    Registry,
    for_each_task,
    get_task_value,
    set_task_value,
    task,
    task_value,
)
from databricks_bundle_decorators.definitions.task_values import (
    names_task_value_functions,
    task_value_tasks,
)


def _publish() -> None:
    _relay()


def _relay() -> None:  # calls back into _publish: the walk must stop
    if False:
        _publish()
    set_task_value("k", 1)


def _unrelated() -> int:
    return len("x")


def test_direct_nested_and_same_module_helper_uses_are_seen() -> None:
    def direct() -> None:
        get_task_value("a", "k")

    def nested() -> None:
        def inner() -> None:
            set_task_value("k", 1)

        inner()

    def through_helper() -> None:
        _publish()

    def none() -> None:
        _unrelated()

    assert names_task_value_functions(direct)
    assert names_task_value_functions(nested)
    assert names_task_value_functions(through_helper)
    assert not names_task_value_functions(none)
    assert not names_task_value_functions(len)


def test_the_setter_and_the_for_each_it_feeds_are_found_by_reference_or_string() -> None:
    registry = Registry()

    @registry.job
    def loops() -> None:
        @task(name="a-b")
        def source() -> None: ...  # sets nothing itself: read by a for_each below

        @task
        def other() -> None: ...

        @for_each_task(inputs=task_value("a-b", "k"))
        def by_ref(inputs: str) -> None: ...

        @task
        def lister() -> None: ...

        @for_each_task(inputs="{{tasks.lister.values.items}}")
        def by_string(inputs: str) -> None: ...

        @for_each_task(inputs=["x"])
        def plain_list(inputs: str) -> None: ...

        source()
        other()
        by_ref()
        lister()
        by_string()
        plain_list()

    found = task_value_tasks(registry.get("loops").graph)
    assert found == {"a-b", "by_ref", "lister", "by_string"}
