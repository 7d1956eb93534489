"""``--canary N --diff-gate 10%``: each canary's keys' row counts and declared aggregates
compared with the table before the backfill, measured locally (:class:`LocalKeyChanges`)
or by a run of the job (:mod:`.measure_run`); one moved past the gate stops the backfill.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from ...definitions import Registry
from ...definitions.contracts import LazySession, RunEnvironment
from ...errors import UsageError
from ...runtime.job_tables.key_changes import KeyChange, key_changes
from ..plan.request import BackfillRequest

_PERCENT = re.compile(r"(?P<n>[0-9]{1,4}(\.[0-9]{1,4})?)\s*%?")


def parse_diff_gate(text: str) -> float:
    """``"10%"`` (or ``"10"``) -> ``10.0``.

    Raises:
        ValueError: not a percentage.
    """
    match = _PERCENT.fullmatch(text.strip()) if isinstance(text, str) else None
    if match is None:
        raise ValueError(f"{text!r} is not a percentage, e.g. 10%")
    return float(match["n"])


@runtime_checkable
class MeasuresKeyChanges(Protocol):
    """A backend that can measure what a run did to its keys where the data is."""

    def key_changes(
        self, run_id: str, keys: Collection[str], backfill_id: str
    ) -> list[KeyChange]: ...


def gate_verdict(changes: Sequence[KeyChange], gate_pct: float) -> tuple[str | None, list[str]]:
    """Why the canary stops the backfill (``None``: within the gate), and one note per
    key outside the gate (no rows before).

    Example:
        >>> change = KeyChange("main.s.t", "2024-01-05", 100, 50, 3, 4)
        >>> gate_verdict([change], 10.0)[0]
        'diff gate 10%: main.s.t key 2024-01-05: 100 -> 50 rows (-50%, versions 3 -> 4)'
    """
    notes = [f"outside the diff gate: {c.describe()}" for c in changes if c.moved is None]
    over = [c for c in changes if c.moved is not None and abs(c.moved) * 100 > gate_pct]
    if not over:
        return None, notes
    more = f" (and {len(over) - 1} more)" if len(over) > 1 else ""
    return f"diff gate {gate_pct:g}%: {over[0].describe()}{more}", notes


class LocalKeyChanges:
    """The measurement of a local backfill: in-process, on the embedded Spark."""

    def __init__(self, registry: Registry, job_name: str, warehouse: Path) -> None:
        self.registry = registry
        self.job_name = job_name
        self.warehouse = warehouse

    def __call__(self, run_id: str, keys: Collection[str], backfill_id: str) -> list[KeyChange]:
        from ...runtime.session.spark import local_spark_session

        session: Any = LazySession(local_spark_session)
        environment = RunEnvironment(session, self.warehouse, False)
        job = self.registry.get(self.job_name)
        return key_changes(job, environment, keys, run_id=run_id, backfill_id=backfill_id)


DIFF_GATE_ERROR = "diff gate "  # how a gated canary attempt's error starts


def gated_error(error: str | None) -> bool:
    """Whether an attempt's error is the gate's (not retried)."""
    return (error or "").startswith(DIFF_GATE_ERROR)


def canary_gate(
    backend: object, gate_pct: float, run_id: str, keys: Collection[str], backfill_id: str
) -> tuple[str | None, list[str]]:
    """Measure what canary run ``run_id`` did to ``keys`` and judge it: why it stops the
    backfill (``None``: it does not) and the keys outside the gate.
    """
    inner = getattr(backend, "backend", backend)  # the scheduler's tracked backend
    if not isinstance(inner, MeasuresKeyChanges):
        kind = getattr(inner, "kind", type(inner).__name__)
        return f"{DIFF_GATE_ERROR}{gate_pct:g}%: the {kind} backend cannot measure keys", []
    try:
        changes = inner.key_changes(run_id, keys, backfill_id)
    except Exception as exc:  # the canary stays failed; --resume measures again
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        return f"{DIFF_GATE_ERROR}{gate_pct:g}%: could not measure the keys: {first}", []
    return gate_verdict(changes, gate_pct)


def canary_stop(
    backend: object,
    gate_pct: float | None,
    flight: Any,
    ledger: Any,
    warn: Callable[[str], None],
    state: str,
) -> str | None:
    """Why canary ``flight``, ended in ``state``, stops the backfill (``None``: it does not, it
    did not succeed, or there is no gate); keys outside the gate go to ``warn``.
    """
    if gate_pct is None or flight.run_id is None or state != "succeeded":
        return None
    keys = ledger.slices[flight.index].keys
    stop, notes = canary_gate(backend, gate_pct, flight.run_id, keys, ledger.id)
    for note in notes:
        warn(note)
    return stop


def checked_diff_gate(request: BackfillRequest, local: bool) -> float | None:
    """The request's ``--diff-gate`` (percent), refused without canaries (``local``: where
    they run).

    Raises:
        UsageError: no canaries to measure.
    """
    if request.options.diff_gate is None:
        return None
    if request.options.canary <= 0:
        raise UsageError("--diff-gate needs --canary N: the gate measures the canary runs")
    return request.options.diff_gate
