"""The one source of key states for ``--rerun``, ``catchup`` and ``status``: the workspace's
runs first, then the local ledgers (:mod:`.horizon`).
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from ...backfill.base import BackfillDef
from ..backends.databricks_backend import run_history
from ..ledger.ledger import list_ledgers
from ..ledger.observations import ledger_observations
from ..plan.history import KeyHistory, key_history, keys_without_success
from ..prepare.planners import Draft, Planning
from .horizon import history_to_select, workspace_history
from .local_runs import local_run_observations

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
    ledgers when ``client`` and ``job_id`` are given, else from the ledgers and the records
    of ``dbxdec run --local``.

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
        return workspace_history(runs, ledger_observations(ledgers))
    local = [*ledger_observations(list_ledgers(root, job)), *local_run_observations(root, job)]
    return key_history(local)  # the backfills' runs and those of ``dbxdec run --local``


def read_history(draft: Draft, planning: Planning) -> Draft:
    """``--rerun failed|missing`` and ``catchup --by runs``: each key's state in past runs
    (on Databricks, keys beyond the runs' 60 days are unknown and left alone)."""
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
    history = history_to_select(
        history,
        planning.backfill,
        draft.keys,
        planning.request.keys,
        remote,
        warnings,
        now=planning.now,
    )
    return replace(draft, history=history, warnings=tuple(warnings))


def catch_up_by_runs(draft: Draft, planning: Planning) -> Draft:
    """``catchup`` (by runs): only the keys without a success."""
    if planning.request.catchup and draft.history is not None:
        return replace(draft, only=frozenset(keys_without_success(draft.keys, draft.history)))
    return draft
