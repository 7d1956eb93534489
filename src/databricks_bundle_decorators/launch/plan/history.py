"""Partition health from past runs: each key succeeded, failed, cancelled (not a success:
rerun by ``--rerun failed`` and ``catchup``), running or missing; backends describe runs
as :class:`RunObservation` values, folded by :func:`key_history`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Literal

from ...backfill.base import BackfillDef
from ...backfill.wire import KeyRange, keyless_run
from .states import KeyState

RerunMode = Literal["all", "failed", "missing"]
RERUN_MODES: tuple[RerunMode, ...] = ("all", "failed", "missing")
KeyHistory = Mapping[str, KeyState]


@dataclass(frozen=True, slots=True)
class RunObservation:
    """One past or current run: its keys, how it ended (``running`` while queued or running),
    when it started (epoch seconds, orders the runs), its run id and error.
    """

    keys: tuple[str, ...]
    state: KeyState
    started: float
    run_id: str = ""
    error: str = ""


def key_history(observations: Iterable[RunObservation]) -> dict[str, KeyState]:
    """The state of every observed key: its latest run decides, a running run wins (keys
    never observed are absent: ``missing``).
    """
    latest: dict[str, RunObservation] = {}
    running: set[str] = set()
    for obs in sorted(observations, key=lambda o: o.started):
        for key in obs.keys:
            latest[key] = obs
            if obs.state == "running":
                running.add(key)
    return {key: KeyState.RUNNING if key in running else obs.state for key, obs in latest.items()}


def state_of(history: KeyHistory, key: str) -> KeyState:
    return history.get(key, KeyState.MISSING)


NOT_SUCCEEDED: frozenset[KeyState] = frozenset({KeyState.FAILED, KeyState.CANCELLED})
"""A key's states whose latest run ended without success: ``--rerun failed`` and
``catchup`` run them again.
"""


def attempt_key_state(attempt_state: str) -> KeyState:
    """The key state a ledger attempt's state stands for (an open attempt is
    ``running``, a rejected one ``failed``).

    >>> [str(attempt_key_state(s)) for s in ("cancelled", "submitting", "rejected")]
    ['cancelled', 'running', 'failed']
    """
    if attempt_state in ("succeeded", "failed", "running", "cancelled"):
        return KeyState(attempt_state)
    return KeyState.RUNNING if attempt_state == "submitting" else KeyState.FAILED


def select_keys(keys: Sequence[str], history: KeyHistory, rerun: RerunMode) -> list[str]:
    """The keys to run for ``--rerun``: ``all``, ``failed`` (latest run failed or was
    cancelled) or ``missing`` (never run). An ``unknown`` key is neither."""
    if rerun == "all":
        return list(keys)
    wanted = NOT_SUCCEEDED if rerun == "failed" else frozenset({rerun})
    return [key for key in keys if state_of(history, key) in wanted]


def keys_without_success(keys: Sequence[str], history: KeyHistory) -> list[str]:
    """The keys ``dbxdec catchup`` runs: failed, cancelled or never run (running and
    ``unknown`` ones excluded)."""
    wanted = NOT_SUCCEEDED | {"missing"}
    return [key for key in keys if state_of(history, key) in wanted]


def keys_of_parameters(
    backfill: BackfillDef, parameters: Mapping[str, str], *, started: float | None = None
) -> tuple[str, ...]:
    """The keys a run with these job parameters writes; ``()`` when unknown. A run without
    ``backfill_key`` (a scheduled run of a time definition) wrote the key current at its
    start, but a keyless order run (undo, presence, measurement, swap) wrote none.
    """
    if keyless_run(parameters):
        return ()
    encoded = KeyRange.from_params(parameters)
    try:
        if encoded is None:
            if started is None or not backfill.is_time_based:
                return ()
            return tuple(backfill.current_keys(now=datetime.fromtimestamp(started, timezone.utc)))
        if encoded.first != encoded.last:
            return tuple(backfill.keys(encoded.first, encoded.last))
        backfill.validate_key(encoded.last)
    except ValueError:
        return ()  # a run of an older definition: its keys no longer exist
    return (encoded.last,)
