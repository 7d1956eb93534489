"""The workspace files of :mod:`.workspace_pause`: one marker per (dependant job, detached
backfill holding its trigger), and whether that backfill still runs.

``/Shared/dbxdec/paused/job-<job_id>/<backfill id>.json`` (``$DBXDEC_PAUSED_DIR``
replaces ``/Shared/dbxdec/paused``) is written with ``workspace/import`` and read with
``list`` and ``export`` (https://docs.databricks.com/api/workspace/workspace/import,
databricks-sdk-py ``WorkspaceAPI``; the same calls as :mod:`..lease`).

A marker's backfill is live while ``runs/list?job_id=<controller>&active_only=true``
lists a run whose ``backfill_id`` job parameter is the marker's ("An active run is a run
in the QUEUED, PENDING, RUNNING, or TERMINATING", databricks-sdk-py
``JobsAPI.list_runs``; parameters read with
:func:`....runtime.triggers.run_history.run_parameters`, as every reader of run lists
does). A controller job that no longer exists holds nothing;
when the workspace cannot say, the caller keeps the pause.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

from ....errors import DbxdecError, UsageError, WorkspaceRejected
from ....runtime.triggers.run_history import run_parameters
from ...ledger.place import WorkspacePlace
from ...workspace.workspace import environment_problem, first_line

if TYPE_CHECKING:
    from databricks.sdk import WorkspaceClient

PAUSED_DIR = "/Shared/dbxdec/paused"
PAUSED_DIR_ENV = "DBXDEC_PAUSED_DIR"
OPTION = "--downstream"
"""What a user drops to run the backfill without pausing its dependants' triggers."""
BACKFILL_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
"""What a backfill id may be: it names a file."""


def paused_folder(job_id: int) -> str:
    """The workspace folder of deployed job ``job_id``'s trigger pauses."""
    base = (os.environ.get(PAUSED_DIR_ENV) or PAUSED_DIR).rstrip("/")
    return f"{base}/job-{job_id}"


def paused_file(job_id: int, backfill_id: str) -> str:
    """The marker of backfill ``backfill_id``'s pause of job ``job_id``'s trigger."""
    return f"{paused_folder(job_id)}/{backfill_id}.json"


@dataclass(frozen=True, slots=True)
class WorkspacePause:
    """One detached backfill's hold on a dependant's trigger.

    ``original`` is the trigger's ``pause_status`` before the first holder paused it
    (``None``: unset, which the Jobs API reads as UNPAUSED).
    """

    job: str
    job_id: int
    backfill_id: str
    controller_job_id: int
    original: str | None
    paused_at: float

    def to_text(self) -> str:
        data = {
            "format": 1,
            "job": self.job,
            "job_id": self.job_id,
            "backfill_id": self.backfill_id,
            "controller_job_id": self.controller_job_id,
            "original": self.original,
            "paused_at": self.paused_at,
        }
        return json.dumps(data, indent=2, sort_keys=True) + "\n"

    @classmethod
    def from_text(cls, text: str) -> WorkspacePause:
        """Raises ``ValueError`` (``KeyError``, ``TypeError``) for a damaged marker."""
        data = json.loads(text)
        if data.get("format") != 1:
            raise ValueError(f"unknown format {data.get('format')!r}")
        original = data["original"]
        return cls(
            job=str(data["job"]),
            job_id=int(data["job_id"]),
            backfill_id=str(data["backfill_id"]),
            controller_job_id=int(data["controller_job_id"]),
            original=None if original is None else str(original),
            paused_at=float(data["paused_at"]),
        )


class Liveness:
    """Which backfills have an active controller run, one ``runs/list`` per controller
    job: ``(True/False, "")``, or ``(None, why)`` when the workspace cannot say."""

    def __init__(self, client: WorkspaceClient) -> None:
        self.client = client
        self.seen: dict[int, set[str] | str] = {}

    def of(self, marker: WorkspacePause) -> tuple[bool | None, str]:
        job_id = marker.controller_job_id
        if job_id not in self.seen:
            self.seen[job_id] = self._active(job_id)
        active = self.seen[job_id]
        if isinstance(active, str):
            return None, active
        return marker.backfill_id in active, ""

    def _active(self, controller_job_id: int) -> set[str] | str:
        from databricks.sdk.errors import InvalidParameterValue, NotFound, ResourceDoesNotExist

        try:
            runs = self.client.jobs.list_runs(job_id=controller_job_id, active_only=True)
            return {run_parameters(run).get("backfill_id", "") for run in runs}
        except (NotFound, ResourceDoesNotExist, InvalidParameterValue) as exc:
            # an unknown job id: 400 INVALID_PARAMETER_VALUE "Job N does not exist."
            if isinstance(exc, InvalidParameterValue) and "does not exist" not in str(exc):
                return first_line(exc)
            return set()  # the controller job is gone, and its runs with it
        except OSError as exc:  # unreachable, refused: keep the pause
            return reason(self.client, exc)


def marker_place(client: WorkspaceClient, job_id: int) -> WorkspacePlace:
    """The folder of deployed job ``job_id``'s trigger pauses."""
    advice = f"set {PAUSED_DIR_ENV} to a folder they can write, or run without {OPTION}"
    return WorkspacePlace(
        client, paused_folder(job_id), what="the trigger pauses folder", advice=advice
    )


def read_markers(client: WorkspaceClient, job_id: int) -> list[tuple[str, WorkspacePause | None]]:
    """Every marker of job ``job_id``: (path, marker, or ``None`` when damaged)."""
    place = marker_place(client, job_id)
    found: list[tuple[str, WorkspacePause | None]] = []
    for name in sorted(n for n in place.names() if n.endswith(".json")):
        text = place.read(name)
        if text is None:  # deleted since the listing (its holder released)
            continue
        try:
            found.append((f"{place.folder}/{name}", WorkspacePause.from_text(text)))
        except (ValueError, KeyError, TypeError, AttributeError):
            found.append((f"{place.folder}/{name}", None))
    return found


def write_marker(client: WorkspaceClient, marker: WorkspacePause) -> None:
    client.workspace.mkdirs(paused_folder(marker.job_id))
    # the file is this backfill's alone: a resume rewrites it
    marker_place(client, marker.job_id).write(f"{marker.backfill_id}.json", marker.to_text())


def delete_marker(client: WorkspaceClient, path: str) -> None:
    from databricks.sdk.errors import ResourceDoesNotExist

    with contextlib.suppress(ResourceDoesNotExist):  # someone else was first
        client.workspace.delete(path)


@contextmanager
def marker_errors(client: WorkspaceClient, job_id: int) -> Iterator[None]:
    """One line for a marker that cannot be read or written."""
    from databricks.sdk.errors import PermissionDenied
    from databricks.sdk.errors.base import DatabricksError

    folder = paused_folder(job_id)
    try:
        yield
    except PermissionDenied as exc:
        raise WorkspaceRejected(
            f"the workspace refused to let these credentials write the trigger pauses folder "
            f"{folder} ({first_line(exc)}): ask a workspace admin for CAN EDIT on it, set "
            f"{PAUSED_DIR_ENV} to a folder they can write, or run without {OPTION}"
        ) from None
    except DatabricksError as exc:
        problem = environment_problem(exc, host=client.config.host)
        if problem is not None:
            raise problem from None
        raise UsageError(
            f"{OPTION}: could not use the trigger pause markers in {folder} ({first_line(exc)})"
        ) from None
    except OSError as exc:
        problem = environment_problem(exc, host=client.config.host)
        if problem is None:
            raise
        raise problem from None


def reason(client: WorkspaceClient, err: BaseException) -> str:
    if isinstance(err, DbxdecError):
        return err.render()
    problem = environment_problem(err, host=client.config.host)
    return problem.render() if problem is not None else first_line(err)
