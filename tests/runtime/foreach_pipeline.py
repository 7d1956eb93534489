"""A job with a for-each task, in the default registry, for ``dbxdec-run`` tests."""

from __future__ import annotations

from databricks_bundle_decorators import for_each_task, job

SEEN: list[str] = []


@job
def fan_out() -> None:
    @for_each_task(inputs=["us", "eu", "jp"], concurrency=2)
    def notify(inputs: str) -> None:
        SEEN.append(inputs)

    notify()
