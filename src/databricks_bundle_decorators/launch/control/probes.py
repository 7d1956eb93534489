"""A backend passing the controller's kill points (:mod:`.faults`) on its way.

The points sit exactly where a controller can die with a run half-known: after the
attempt is in the journal and before ``run-now`` is sent (``before-submit``), after
``run-now`` answered and before the answer is in the journal (``after-submit``), inside
a status poll (``poll``), after a cancellation was sent (``cancel``).
"""

from __future__ import annotations

from collections.abc import Collection

from ..backends.backends import Backend, RunStatus, SubmitRequest, Submitted
from .faults import KillPoints


class KillingBackend:
    """``backend`` with :class:`~.faults.KillPoints` around its calls (a no-op unless a
    kill point is set)."""

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
