"""Kill points for the takeover tests: ``DBXDEC_CONTROLLER_KILL_AT=<point>:<n>[:<marker>]``.

Read only by ``dbxdec-controller`` (:mod:`.entry`). The ``n``-th time the controller
reaches ``point`` it ends its process at once with ``os._exit(137)`` (what a SIGKILL
looks like to the platform: no cleanup, no claim released, no journal saved). With a
``marker`` path the kill happens once across processes: the first process to create the
marker file (``O_EXCL``) dies, later attempts go on. Points:

- ``before-submit``: the attempt is in the journal, its ``run-now`` not sent;
- ``after-submit``: ``run-now`` answered, the answer not yet in the journal;
- ``poll``: inside a status poll;
- ``handover``: the next generation started, this one not yet gone;
- ``cancel``: after the first run of a cancelled backfill was cancelled.
"""

from __future__ import annotations

import os
import threading
from typing import Literal

KillPoint = Literal["before-submit", "after-submit", "poll", "handover", "cancel"]
KILL_AT_ENV = "DBXDEC_CONTROLLER_KILL_AT"
KILLED_EXIT = 137


class KillPoints:
    """The kill point of this process (none unless the environment names one)."""

    def __init__(self, spec: str | None = None) -> None:
        spec = os.environ.get(KILL_AT_ENV, "") if spec is None else spec
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
