"""Bundle generation at scale: N jobs x 10 tasks through ``load_resources``' core.

``load_resources(bundle)`` imports the project's pipelines into the default registry;
the benchmark builds explicit ``Registry`` objects instead and calls its core,
``resources_for(registry, options)``, which does everything else ``load_resources`` does:
trace each job body, generate its settings, and load them into
``databricks.bundles.core.Resources`` (the strict typed load the Databricks CLI relies on).

Targets: under 3 s for 1,000 jobs, and time(2,000) / time(1,000) <= 2.2 (linear).

Run: ``python benchmarks/load_resources.py``
"""

from __future__ import annotations

import gc
import time
from typing import Any

from figures import figure

from databricks_bundle_decorators import DailyBackfill, Registry, RetryPolicy, task
from databricks_bundle_decorators.bundle import CodegenOptions, resources_for

TASKS_PER_JOB = 10
BACKFILL = DailyBackfill(start_date="2024-01-01", tz="Europe/Berlin", lookback=1)


def _body(index: int) -> Any:
    def body() -> None:
        previous = None
        for position in range(TASKS_PER_JOB):

            def step() -> None: ...

            definition = task(
                name=f"step_{position}",
                depends_on=[previous] if previous is not None else None,
                retries=RetryPolicy(2, 1000),
                timeout_seconds=600,
            )(step)
            previous = definition()

    body.__name__ = f"job_{index:05d}"
    return body


def build_registry(jobs: int) -> Registry:
    """``jobs`` jobs of ``TASKS_PER_JOB`` chained tasks, daily backfill, schedule, params."""
    registry = Registry()
    for index in range(jobs):
        registry.job(
            params={"source": f"raw.table_{index}", "limit": "1000"},
            backfill=BACKFILL,
            schedule="0 0 6 * * ?",
            tags={"team": "benchmark"},
        )(_body(index))
    return registry


def measure(jobs: int) -> float:
    """Seconds for ``resources_for`` over a fresh registry of ``jobs`` jobs (best of 2)."""
    best = float("inf")
    options = CodegenOptions(package_name="benchmark-pipelines")
    for _ in range(2):
        registry = build_registry(jobs)  # fresh: tracing is part of the measured work
        gc.collect()
        start = time.perf_counter()
        resources = resources_for(registry, options)
        elapsed = time.perf_counter() - start
        assert len(resources.jobs) == jobs and not resources.diagnostics.has_error()
        best = min(best, elapsed)
    return best


def main() -> None:
    small = measure(1_000)
    large = measure(2_000)
    ratio = large / small
    print(f"load_resources, {TASKS_PER_JOB} tasks per job")
    print(f"  1,000 jobs: {small:.2f} s  ({small / 1_000 * 1e3:.2f} ms per job)  target < 3 s")
    print(f"  2,000 jobs: {large:.2f} s")
    print(f"  ratio time(2,000) / time(1,000): {ratio:.2f}  target <= 2.2")
    figure("load_resources", "1,000 jobs x 10 tasks", small, 3.0, better="lower", unit="s")
    figure("load_resources", "time(2,000) / time(1,000)", ratio, 2.2, better="lower", unit="x")


if __name__ == "__main__":
    main()
