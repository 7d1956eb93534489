"""A controller run that lost its backfill's claim never takes the backfill back.

When another launcher takes the claim over (``--force`` on an expired claim, say after an
outage), the controller run stops with exit 7 and the platform retries its task at once
in the same job run (``max_retries: -1``: "retry indefinitely", databricks-sdk
``jobs.Task.max_retries``). That retry must launch nothing: the launcher that took the
claim may have run -- and finished -- keys the journal does not know of, so a retry that
found the claim free again would run them twice. So the run that lost writes
``<journal folder>/lost-<run id>.json`` (``{"format": 1, "run_id", "message"}``; the
journal's reader ignores the name) before it exits, and every attempt of that run reads
it first and stops. ``dbxdec backfill --resume ID --detach`` starts another run (another
run id), which goes on where the journal is.
"""

from __future__ import annotations

import contextlib
import json
from typing import TYPE_CHECKING

from ...errors import DbxdecError
from ..ledger.journal_read import FORMAT, journal_place

if TYPE_CHECKING:
    from databricks.sdk import WorkspaceClient


def mark_lost(
    client: WorkspaceClient, job_id: int, backfill_id: str, run_id: str, message: str
) -> bool:
    """Record that run ``run_id`` lost the backfill; whether it is recorded (best effort:
    an unanswered create leaves the retry to the claim, as before). A file already there
    is an earlier attempt's of this run, or our create's whose reply was lost."""
    body = {"format": FORMAT, "run_id": run_id, "message": message}
    try:
        journal_place(client, job_id, backfill_id).create(_name(run_id), json.dumps(body))
    except (OSError, DbxdecError):  # unanswered or refused (DatabricksError is an OSError)
        return False
    return True


def lost_before(client: WorkspaceClient, job_id: int, backfill_id: str, run_id: str) -> str | None:
    """Why run ``run_id`` lost the backfill in an earlier attempt; ``None`` if it did not.

    Raises:
        OSError: the workspace did not answer or refused (the caller's errors apply).
    """
    content = journal_place(client, job_id, backfill_id).read(_name(run_id))
    if content is None:
        return None
    with contextlib.suppress(ValueError, TypeError, AttributeError):
        return str(json.loads(content).get("message") or "the claim was taken over")
    return "the claim was taken over"


def _name(run_id: str) -> str:
    return f"lost-{run_id}.json"
