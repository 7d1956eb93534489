"""The router of a ``--downstream`` backfill tells run ends exactly when its backend does.

A router that claimed to tell ends over a backend that only polls (Databricks) made the
scheduler treat its polls as a safety net and, on cancel, wait its whole timeout (30 s)
for ends that never came.
"""

from __future__ import annotations

from collections.abc import Callable, Collection

from databricks_bundle_decorators.launch.backends.backends import (
    EndsNotified,
    RunStatus,
    SubmitRequest,
    Submitted,
)
from databricks_bundle_decorators.launch.backends.job_router import job_router
from databricks_bundle_decorators.launch.ledger.ledger import BackendSpec, LaunchOptions, Ledger
from databricks_bundle_decorators.launch.run.flights import EndedRuns


class Polled:
    """A backend that is only polled (as the Databricks one)."""

    kind = "databricks"

    def submit(self, request: SubmitRequest) -> Submitted:
        raise NotImplementedError

    def poll(self, run_ids: Collection[str]) -> dict[str, RunStatus]:
        return {}

    def cancel(self, run_id: str) -> None:
        pass

    def close(self) -> None:
        pass


class Telling(Polled):
    """A backend that tells ends (as the local one)."""

    kind = "local"

    def __init__(self) -> None:
        self.callbacks: list[Callable[[str], None]] = []

    def on_end(self, callback: Callable[[str], None]) -> None:
        self.callbacks.append(callback)


def _ledger(tmp_path: object) -> Ledger:
    from pathlib import Path

    return Ledger(
        Path(str(tmp_path)) / "l.sqlite",
        backfill_id="a-1",
        job="a",
        backend=BackendSpec("databricks"),
        options=LaunchOptions(),
        slices=[],
    )


def test_a_router_over_a_polled_backend_does_not_claim_to_tell_ends(tmp_path: object) -> None:
    router = job_router(Polled(), _ledger(tmp_path))
    assert not isinstance(router, EndsNotified)
    ended = EndedRuns(router, lambda: None)
    assert ended.notified is False
    assert ended.wait_for(["1"], timeout=30.0) is False  # at once, not after 30 s


def test_a_router_over_a_telling_backend_passes_ends_on(tmp_path: object) -> None:
    inner = Telling()
    router = job_router(inner, _ledger(tmp_path))
    assert isinstance(router, EndsNotified)
    ended = EndedRuns(router, lambda: None)
    inner.callbacks[0]("7")
    assert ended.wait_for(["7"], timeout=5.0) is True
    assert job_router(router, _ledger(tmp_path)) is router  # not wrapped twice
