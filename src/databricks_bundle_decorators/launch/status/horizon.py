"""How far back run history reaches on Databricks, and what a key beyond it is.

The Jobs API removes runs after 60 days (:data:`RUN_RETENTION`), so ``runs/list`` cannot
say whether a key whose window ended before then ever ran. Key states on Databricks are
read from these sources, in order:

1. ``runs/list`` (the last 60 days);
2. the backfill ledgers on this machine (``.dbxdec/``), for keys ``runs/list`` has no
   record of;
3. data presence, only with ``catchup --by data`` (see :mod:`.presence`).

A key none of them records is ``missing`` when its window reaches into the last 60 days
(its run would still be listed) and ``unknown`` when its window lies wholly before the
horizon: it may well have run, so ``catchup`` and ``--rerun missing`` leave it alone.
A job created within the last 60 days has no horizon: no run of it can have been removed
yet (a run of a job comes after the job's ``created_time``), so ``runs/list`` is its whole
history and a key without a record is ``missing``.
Delta table history is no source: it is kept 30 days by default, shorter still.

Locally (``--local``) the ledgers are the whole history and nothing is ``unknown``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timedelta, timezone

from whenever import Instant

from ...backfill.base import BackfillDef
from ..backends.databricks_backend import RemoteJob
from ..plan.history import KeyHistory, RunObservation, key_history
from ..plan.states import KeyState

RUN_RETENTION = timedelta(days=60)
"""How long the workspace keeps a run. Source: the Jobs API reference, ``runs/get-output``
(https://docs.databricks.com/api/workspace/jobs/getrunoutput, as generated into
databricks-sdk-py 0.162.0 ``JobsAPI.get_run_output``): "Runs are automatically removed
after 60 days. If you to want to reference them beyond 60 days, you must save old run
results before they expire." The reference does not say from which instant the 60 days
count, so the horizon is taken as the earliest reading."""


def history_horizon(now: datetime, created_ms: int | None = None) -> datetime | None:
    """The oldest instant the workspace's run history still covers at ``now``, or
    ``None`` when it covers the job's whole life (the job was created after that
    instant, ``created_ms`` epoch milliseconds)."""
    horizon = now - RUN_RETENTION
    if created_ms is not None and created_ms >= horizon.timestamp() * 1000:
        return None
    return horizon


def workspace_history(
    runs: Iterable[RunObservation], ledgers: Iterable[RunObservation]
) -> dict[str, KeyState]:
    """Key states from ``runs/list`` first, then the local ledgers for the keys the
    workspace no longer (or never) lists.

    A ledger's attempt that is still open is left out: a run it names that the
    workspace does not list is older than the retention, and how it ended is not known.
    """
    listed = key_history(runs)
    recorded = key_history(obs for obs in ledgers if obs.state != "running")
    return {**recorded, **listed}


def with_unknown(
    history: KeyHistory, backfill: BackfillDef, keys: Sequence[str], horizon: datetime
) -> dict[str, KeyState]:
    """``history`` with every key of ``keys`` that it has no record of and whose window
    ends at or before ``horizon`` marked ``unknown``.

    A static key has no window: it stays ``missing`` (nothing tells when it would
    have run).

    Example:
        >>> from datetime import timezone
        >>> from databricks_bundle_decorators.backfill import DailyBackfill
        >>> daily = DailyBackfill("2024-01-01", "2024-01-03")
        >>> with_unknown({"2024-01-01": "succeeded"}, daily, daily.keys(),
        ...              datetime(2024, 1, 3, tzinfo=timezone.utc))
        {'2024-01-01': 'succeeded', '2024-01-02': 'unknown'}
    """
    limit = Instant(horizon)
    out: dict[str, KeyState] = dict(history)
    for key in keys:
        if key in out:
            continue
        window = backfill.window(key)
        if window is not None and window.end <= limit:
            out[key] = KeyState.UNKNOWN
    return out


def history_to_select(
    history: KeyHistory,
    backfill: BackfillDef,
    keys: Sequence[str],
    named: Sequence[str],
    remote: RemoteJob,
    warnings: list[str],
    *,
    now: datetime | None = None,
) -> KeyHistory:
    """The history ``--rerun`` and ``catchup`` select from on Databricks.

    Keys named one by one (``--keys``) are launched as told: their lack of a record
    stays ``missing``. Otherwise keys beyond the horizon with no record are ``unknown``
    and left alone; a line saying how many (and how to run them) goes to ``warnings``.

    Args:
        history: The workspace's and the ledgers' key states (:func:`workspace_history`).
        backfill: The job's backfill definition.
        keys: The keys the plan covers.
        named: The keys named one by one (``--keys``), if any.
        remote: The deployed job (when it was created).
        warnings: Where the note on unknown keys goes.
        now: When the history was read (default: the current time).
    """
    moment = now if now is not None else datetime.now(timezone.utc)
    horizon = history_horizon(moment, remote.created_ms)
    if named or horizon is None:
        return history
    marked = with_unknown(history, backfill, keys, horizon)
    unknown = count_unknown(marked)
    if unknown:
        days = RUN_RETENTION.days
        warnings.append(
            f"{unknown} key(s) ended more than {days} days ago and have no run in the "
            f"workspace's {days}-day run history nor in this machine's ledgers: their state "
            "is unknown and they are left alone; catch them up with --by data, or name them "
            "with --keys"
        )
    return marked


def count_unknown(history: Mapping[str, KeyState]) -> int:
    """How many keys of ``history`` are ``unknown``."""
    return sum(1 for state in history.values() if state == "unknown")
