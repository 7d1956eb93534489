"""The emulated workspace's clock, which tests can move forward, and run retention.

Runs are scheduled on ``time.monotonic()`` (durations stay real), while every epoch
time the service shows (a run's ``start_time``, a job's ``created_time``) is read from
this clock. :meth:`EmulatorClock.jump` moves the clock forward from the moment it is
called: times shown for earlier moments stay what they were, later ones are shifted,
as if the service had been left running for that long.

Retention: "Runs are automatically removed after 60 days" (Jobs API reference,
``runs/get-output``, https://docs.databricks.com/api/workspace/jobs/getrunoutput, as
generated into databricks-sdk-py 0.162.0 ``JobsAPI.get_run_output``). A removed run is
gone from ``runs/list``, and ``runs/get`` / ``runs/get-output`` answer it as for an id
that never existed: 400 ``INVALID_PARAMETER_VALUE`` (the same docstring: the endpoint
"returns an HTTP status code 400 if the run_id parameter is invalid"). The reference
does not say from which instant the 60 days count; the emulator takes the least
convenient reading for a client, the run's start, and removes a run once it has ended
and 60 days have passed since it started.
"""

from __future__ import annotations

import bisect
import time

from ._emulator_records import RunRecord

RUN_RETENTION_MS = 60 * 24 * 3600 * 1000
"""How long a run stays listed (see the module doc for the source)."""


class EmulatorClock:
    """Epoch milliseconds for monotonic instants, with forward jumps."""

    def __init__(self) -> None:
        self._mono0 = time.monotonic()
        self._wall0 = time.time()
        self._jumps_at: list[float] = []  # monotonic instants of the jumps, ascending
        self._jumped: list[float] = []  # seconds jumped in total up to each of them

    def epoch_ms(self, mono: float) -> int:
        """The service's epoch milliseconds at monotonic instant ``mono``."""
        index = bisect.bisect_right(self._jumps_at, mono)
        shift = self._jumped[index - 1] if index else 0.0
        return int((self._wall0 + (mono - self._mono0) + shift) * 1000)

    def offset(self, seconds: float) -> None:
        """Set the workspace clock ``seconds`` ahead of this machine's (behind if
        negative): the two clocks are never promised to agree. Meant before any run."""
        self._wall0 = time.time() + seconds - (time.monotonic() - self._mono0)

    def jump(self, seconds: float, at: float) -> None:
        """Move the clock ``seconds`` forward at monotonic instant ``at`` (from then on).

        Raises:
            ValueError: ``seconds`` is negative (the clock never goes back).
        """
        if seconds < 0:
            raise ValueError(f"the emulator clock only moves forward, not by {seconds} s")
        total = (self._jumped[-1] if self._jumped else 0.0) + seconds
        at = max(at, self._jumps_at[-1]) if self._jumps_at else at
        self._jumps_at.append(at)
        self._jumped.append(total)

    def removed(self, run: RunRecord, now: float | None = None) -> bool:
        """Whether the service no longer keeps ``run`` at monotonic instant ``now``
        (default: the current one); see the module doc."""
        if run.active:
            return False
        at = time.monotonic() if now is None else now
        return self.epoch_ms(at) - self.epoch_ms(run.created) >= RUN_RETENTION_MS
