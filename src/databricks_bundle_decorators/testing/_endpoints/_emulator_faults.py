"""Faults the emulator injects into API requests: scripted, random, and whom they hit.

:meth:`FaultControls.set_faults` fails a random fraction of requests (an error status,
or a connection closed without an answer); :meth:`FaultControls.inject_fault` scripts
exact ones. Faults may be limited to the clients whose ``User-Agent`` contains a
string: the SDK adds ``upstream/<name>`` to its ``User-Agent`` when
``DATABRICKS_SDK_UPSTREAM`` and ``DATABRICKS_SDK_UPSTREAM_VERSION`` are set
(databricks-sdk ``useragent._get_upstream_user_agent_info``), so a test can cut one
process off -- a controller run on its cluster -- while another client still reaches
the workspace, as when only the cluster's network is down. ``fault_times`` keeps when
each fault was injected (the emulator's clock, ``time.monotonic``) and every fault
wakes :meth:`~._emulator_sync.SyncControls.wait_for`, so a test measures an outage by
its dropped requests and waits on them instead of sleeping.
"""

from __future__ import annotations

import random
import threading
import time
from collections import Counter, deque
from dataclasses import dataclass
from typing import Literal

FaultKind = Literal["error", "drop_before", "drop_after"]


@dataclass
class ScriptedFault:
    path: str
    kind: FaultKind
    status: int
    job_id: int | None
    remaining: int
    skip: int = 0  # matching requests still let through before the faults begin


@dataclass(frozen=True)
class FaultConfig:
    error_rate: float = 0.0
    drop_rate: float = 0.0
    retry_after: float = 0.0
    statuses: tuple[int, ...] = (429, 503)
    user_agent: str | None = None  # only clients whose User-Agent contains it


class FaultControls:
    """Mixed into :class:`~..emulator.JobsEmulator`: ``faults`` counts injected faults
    per kind and per ``"<kind> <path>"``; ``fault_times`` when each was injected."""

    faults: Counter[str]
    fault_times: deque[float]
    _lock: threading.Lock
    _changed: threading.Condition
    _fault_config: FaultConfig
    _rng: random.Random
    _scripted: list[ScriptedFault]

    def set_faults(
        self,
        *,
        error_rate: float = 0.0,
        drop_rate: float = 0.0,
        retry_after: float = 0.0,
        statuses: tuple[int, ...] = (429, 503),
        seed: int = 0,
        user_agent: str | None = None,
    ) -> None:
        """Randomly fail API requests (``/api/...`` only; all zero = no faults).

        ``error_rate`` of requests are answered with a status from ``statuses`` (429
        and 503 carry ``Retry-After: int(retry_after)``; nothing is applied).
        ``drop_rate`` of connections are closed without an answer; a dropped POST is
        lost before or after being applied with equal probability. ``user_agent``:
        only requests whose ``User-Agent`` header contains it (see the module docstring).
        """
        if not (0 <= error_rate <= 1 and 0 <= drop_rate <= 1 and error_rate + drop_rate <= 1):
            raise ValueError("error_rate and drop_rate must be in [0, 1] and sum to <= 1")
        if error_rate and (not statuses or any(s < 400 or s > 599 for s in statuses)):
            raise ValueError("statuses must be HTTP error codes")
        with self._lock:
            config = FaultConfig(error_rate, drop_rate, retry_after, statuses, user_agent)
            self._fault_config = config
            self._rng = random.Random(seed)

    def inject_fault(
        self,
        path: str,
        *,
        kind: FaultKind = "error",
        status: int = 503,
        job_id: int | None = None,
        count: int = 1,
        skip: int = 0,
    ) -> None:
        """Fail the next ``count`` requests to ``path`` (optionally only for ``job_id``),
        after letting ``skip`` of them through.

        Scripted faults take precedence over :meth:`set_faults`; ``kind="error"``
        answers ``status``, ``"drop_before"``/``"drop_after"`` close the connection
        before/after the request has been applied.
        """
        with self._lock:
            self._scripted.append(ScriptedFault(path, kind, status, job_id, count, skip))

    def _pick_fault(
        self, method: str, path: str, job_hint: object, user_agent: str
    ) -> tuple[FaultKind, int] | None:
        """Choose (kind, status) for this request; the caller holds the lock."""
        chosen: tuple[FaultKind, int] | None = None
        for scripted in self._scripted:
            if scripted.path == path and scripted.job_id in (None, as_int(job_hint)):
                if scripted.skip > 0:
                    scripted.skip -= 1
                    continue
                scripted.remaining -= 1
                if scripted.remaining <= 0:
                    self._scripted.remove(scripted)
                chosen = (scripted.kind, scripted.status)
                break
        cfg = self._fault_config
        hit = cfg.user_agent is None or cfg.user_agent in user_agent
        if chosen is None and (cfg.error_rate or cfg.drop_rate) and hit:
            roll = self._rng.random()
            if roll < cfg.drop_rate:
                after = method == "POST" and self._rng.random() < 0.5
                chosen = ("drop_after" if after else "drop_before", 0)
            elif roll < cfg.drop_rate + cfg.error_rate:
                chosen = ("error", self._rng.choice(cfg.statuses))
        if chosen is not None:
            label = str(chosen[1]) if chosen[0] == "error" else chosen[0]
            self.faults.update((label, f"{label} {path}", "total"))
            self.fault_times.append(time.monotonic())
            self._changed.notify_all()  # a dropped request applies nothing: wake waiters here
        return chosen


def as_int(value: object) -> int | None:
    """``value`` as an integer (a JSON number or a numeric string), else ``None``."""
    try:
        return int(value) if isinstance(value, (int, str)) and not isinstance(value, bool) else None
    except ValueError:
        return None
