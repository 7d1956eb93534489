"""The one source of key states for ``--rerun``, ``catchup`` and ``status``: ``runs/list``
(:data:`RUN_RETENTION`), then the local ledgers, then data presence; a key none records is
``missing`` inside the run history's horizon, else ``unknown`` (left alone by ``catchup``)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import TYPE_CHECKING

from whenever import Instant

from ...backfill.base import BackfillDef
from ...errors import counted
from ..backends.databricks_backend import run_history
from ..ledger.ledger import ledger_observations, list_ledgers
from ..plan.history import KeyHistory, key_history, keys_without_success
from ..plan.states import KeyState
from ..prepare.planners import Draft, Planning
from .local_runs import local_runs

if TYPE_CHECKING:
    from databricks.sdk import WorkspaceClient


def observed_history(
    job: str,
    backfill: BackfillDef,
    *,
    root: Path,
    client: WorkspaceClient | None = None,
    job_id: int | None = None,
) -> KeyHistory:
    """The state of every key of ``job`` that has run: from the workspace's runs and the local
    ledgers when ``client`` and ``job_id`` are given, else from the local backfills' ledgers
    and the records of ``dbxdec run --local`` (never a workspace backfill's ledger).

    Raises:
        WorkspaceRejected: the credentials or a permission were refused.
        WorkspaceUnreachable: the workspace did not answer.
    """
    if client is not None and job_id is not None:
        runs = run_history(client, job_id, backfill)
        ledgers = [  # backfills of this deployed job: a local run wrote other tables
            ledger
            for ledger in list_ledgers(root, job)
            if ledger.backend.kind == "databricks" and ledger.backend.job_id in (None, job_id)
        ]
        # runs/list first, then the ledgers for keys it does not list (an open attempt left
        # out: how it ended is not known)
        recorded = key_history(o for o in ledger_observations(ledgers) if o.state != "running")
        return {**recorded, **key_history(runs)}
    local = [
        *ledger_observations(list_ledgers(root, job, backend="local")),
        *(run.observation() for run in local_runs(root, job)),
    ]
    return key_history(local)  # the backfills' runs and those of ``dbxdec run --local``


def read_history(draft: Draft, planning: Planning) -> Draft:
    """``--rerun failed|missing`` and ``catchup --by runs``: each key's state in past runs. On
    Databricks a key beyond the run history's horizon without a record is ``unknown`` and left
    alone, with a warning, unless keys are named one by one (``--keys``)."""
    job, found = planning.job, draft.found
    if not planning.needs_history:
        return draft
    if found is None:
        history = observed_history(job.name, planning.backfill, root=planning.root)
        return replace(draft, history=history)
    remote, warnings = found.remote, list(draft.warnings)
    history = observed_history(
        job.name, planning.backfill, root=planning.root, client=found.client, job_id=remote.job_id
    )
    horizon = history_horizon(planning.now or datetime.now(timezone.utc), remote.created_ms)
    if not planning.request.keys and horizon is not None:
        history = with_unknown(history, planning.backfill, draft.keys, horizon)
        unknown = sum(1 for state in history.values() if state == "unknown")
        if unknown:
            days = RUN_RETENTION.days
            one = unknown == 1
            warnings.append(
                f"{counted(unknown, 'key')} ended more than {days} days ago and "
                f"{'has' if one else 'have'} no run in the workspace's {days}-day run history "
                f"nor in this machine's ledgers: {'its' if one else 'their'} state is unknown "
                f"and {'it is' if one else 'they are'} left alone; catch "
                f"{'it' if one else 'them'} up with --by data, or name "
                f"{'it' if one else 'them'} with --keys"
            )
    return replace(draft, history=history, warnings=tuple(warnings))


def catch_up_by_runs(draft: Draft, planning: Planning) -> Draft:
    """``catchup`` (by runs): only the keys without a success."""
    if planning.request.catchup and draft.history is not None:
        return replace(draft, only=frozenset(keys_without_success(draft.keys, draft.history)))
    return draft


RUN_RETENTION = timedelta(days=60)
"""How long the workspace keeps a run: "Runs are automatically removed after 60 days"
(https://docs.databricks.com/api/workspace/jobs/getrunoutput; databricks-sdk-py 0.162.0
``JobsAPI.get_run_output``). From which instant is not said: the earliest reading.
"""


def history_horizon(now: datetime, created_ms: int | None = None) -> datetime | None:
    """The oldest instant the run history still covers at ``now``; ``None`` when it covers
    the whole life of a job created at ``created_ms`` (epoch milliseconds).
    """
    horizon = now - RUN_RETENTION
    if created_ms is not None and created_ms >= horizon.timestamp() * 1000:
        return None
    return horizon


def with_unknown(
    history: KeyHistory, backfill: BackfillDef, keys: Sequence[str], horizon: datetime
) -> dict[str, KeyState]:
    """``history`` with each key of ``keys`` it does not record whose window ends by
    ``horizon`` marked ``unknown`` (a static key, without a window, stays ``missing``).

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
