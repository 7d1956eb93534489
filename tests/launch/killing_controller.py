"""The controller entry point with kill points injected from the tests (never shipped).

Run by the emulator in place of ``launch.control.entry`` (``python -m
tests.launch.killing_controller``) when a test calls ``Workspace.kill_at``. The spec comes
from :data:`KILL_AT_ENV` = ``<point>:<n>[:<marker>]``: the ``n``-th time this process
reaches ``point`` it ends at once with ``os._exit(137)`` (what a SIGKILL looks like to the
platform: no cleanup, no claim released, no journal saved). With a ``marker`` path the kill
happens once across processes: the first process to create the marker (``O_EXCL``) dies,
later ones go on. Points, where a controller can die with a run half-known:

- ``before-submit``: the attempt is in the journal, its ``run-now`` not sent;
- ``after-submit``: ``run-now`` answered, the answer not yet in the journal;
- ``poll``: inside a status poll;
- ``handover``: the next generation started, this one not yet gone;
- ``cancel``: after the first run of a cancelled backfill was cancelled.

The points are reached by wrapping the controller's backend and its handover call; the
shipped controller knows nothing of them.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Collection
from typing import Any, Literal

from databricks_bundle_decorators.launch.backends.backends import (
    Backend,
    RunStatus,
    SubmitRequest,
    Submitted,
)
from databricks_bundle_decorators.launch.control import controller, entry

KillPoint = Literal["before-submit", "after-submit", "poll", "handover", "cancel"]
KILL_AT_ENV = "DBXDEC_TEST_CONTROLLER_KILL_AT"
KILLED_EXIT = 137
MODULE = "tests.launch.killing_controller"


class KillPoints:
    """The kill point of this process, from ``spec``."""

    def __init__(self, spec: str) -> None:
        point, _, rest = spec.partition(":")
        count, _, marker = rest.partition(":")
        self.point = point
        self.after = int(count or "1")
        self.marker = marker
        self._seen = 0
        self._lock = threading.Lock()

    def reached(self, point: KillPoint) -> None:
        """Count a pass through ``point``; die here if it is the chosen one."""
        if point != self.point:
            return
        with self._lock:
            self._seen += 1
            if self._seen != self.after:
                return
        if self.marker:
            try:
                os.close(os.open(self.marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
            except FileExistsError:
                return  # an earlier process died here already
        os._exit(KILLED_EXIT)


class KillingBackend:
    """``backend`` passing the kill points on its way."""

    def __init__(self, backend: Backend, kills: KillPoints) -> None:
        self.backend = backend
        self.kills = kills

    @property
    def kind(self) -> str:
        return self.backend.kind

    def submit(self, request: SubmitRequest) -> Submitted:
        self.kills.reached("before-submit")
        submitted = self.backend.submit(request)
        self.kills.reached("after-submit")
        return submitted

    def poll(self, run_ids: Collection[str]) -> dict[str, RunStatus]:
        statuses = self.backend.poll(run_ids)
        self.kills.reached("poll")
        return statuses

    def cancel(self, run_id: str) -> None:
        self.backend.cancel(run_id)
        self.kills.reached("cancel")

    def close(self) -> None:
        self.backend.close()


def install(kills: KillPoints) -> None:
    """Wrap the controller's backend and its handover call with ``kills``."""
    backend_and_claims = controller._backend_and_claims
    start_controller = controller.start_controller

    def killing_backend_and_claims(*args: Any, **kwargs: Any) -> Any:
        backend, claims = backend_and_claims(*args, **kwargs)
        return KillingBackend(backend, kills), claims

    def killing_start(*args: Any, **kwargs: Any) -> Any:
        started = start_controller(*args, **kwargs)
        kills.reached("handover")
        return started

    patched: dict[str, Callable[..., Any]] = {
        "_backend_and_claims": killing_backend_and_claims,
        "start_controller": killing_start,
    }
    for name, value in patched.items():
        setattr(controller, name, value)


if __name__ == "__main__":
    install(KillPoints(os.environ.get(KILL_AT_ENV, "")))
    entry.main()
