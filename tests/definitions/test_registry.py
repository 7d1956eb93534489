"""Registry: duplicates become diagnostics, unknown names suggest, check() gathers all."""

from __future__ import annotations

import pytest

from databricks_bundle_decorators import Registry, UsageError, task


def _two_jobs(registry: Registry) -> None:
    @registry.job(name="sales")
    def a() -> None:
        @task
        def t() -> None: ...

        t()

    @registry.job(name="sales")
    def b() -> None: ...


def test_duplicate_job_name_is_diagnostic_with_both_locations() -> None:
    registry = Registry()
    _two_jobs(registry)
    diagnostics = registry.check()
    assert len(diagnostics) == 1
    assert "job 'sales': duplicate job name, already defined at" in str(diagnostics[0])
    assert str(diagnostics[0]).count("test_registry.py") == 2


def test_check_gathers_every_broken_job() -> None:
    registry = Registry()

    @registry.job
    def broken_one() -> None:
        pass

    @registry.job
    def broken_two() -> None:
        raise RuntimeError("boom")

    messages = [str(d) for d in registry.check()]
    assert len(messages) == 2
    assert any("broken_one" in m and "calls no task" in m for m in messages)
    assert any("broken_two" in m and "boom" in m for m in messages)


def test_unknown_job_suggests_close_name() -> None:
    registry = Registry()

    @registry.job
    def daily_sales() -> None: ...

    with pytest.raises(
        UsageError, match=r"unknown job 'daily_sale'\. Did you mean 'daily_sales'\?"
    ):
        registry.get("daily_sale")
    assert UsageError("x").exit_code == 2


def test_registries_are_independent() -> None:
    first, second = Registry(), Registry()

    @first.job
    def only_in_first() -> None: ...

    assert "only_in_first" in first
    assert "only_in_first" not in second
    assert len(second) == 0
