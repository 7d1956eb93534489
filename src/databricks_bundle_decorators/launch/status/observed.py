"""The one place key states come from: the local ledgers, or the workspace's runs.

``dbxdec backfill --rerun``, ``catchup`` and ``status`` all ask :func:`observed_history`,
so the three can never disagree about a key. On Databricks the workspace's runs come
first and the local ledgers fill in the keys it does not list (see :mod:`.horizon`, which
also says when a key with no record is ``unknown``).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ...backfill.base import BackfillDef
from ..backends.databricks_backend import run_history
from ..ledger.ledger import list_ledgers
from ..ledger.observations import ledger_observations
from ..plan.history import KeyHistory, key_history
from .horizon import workspace_history
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
    """The state of every key of ``job`` that has run: from the workspace's run history
    and then the project's local ledgers when ``client`` and ``job_id`` are given, else
    from the local ledgers and the records of ``dbxdec run --local`` (:mod:`.local_runs`).

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
