"""Where a backfill's state lives in the workspace, and where a failed task run's reports
are kept there: the one path rule the launcher (which writes and reads the journal) and a
notebook task (which keeps its reports when it fails) both import.

Why there: a notebook task hands its reports to ``dbutils.notebook.exit()``
(:mod:`.report`), but a task whose check fails raises before any exit, and a failed
notebook task run has no ``notebook_output.result`` ("absent if dbutils.notebook.exit()
was never called", databricks-sdk ``jobs.NotebookOutput.result``) and no ``logs`` ("It's
not supported for the notebook_task", ``jobs.RunOutput.logs``). The backfill's journal
folder is the one place every run of a backfill can write and its launcher already
reads; the check-results table would serve checks only (undo, presence and measure
reports have no table) and only for jobs that name one. A run with no backfill id (a
scheduled run) keeps nothing: no launcher waits for its reports.
"""

from __future__ import annotations

import os
import re

JOURNAL_DIR = "/Shared/dbxdec/backfills"
JOURNAL_DIR_ENV = "DBXDEC_JOURNAL_DIR"
BACKFILL_ID = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_\-]{0,150}")  # as ledger.load_ledger accepts
FAILED_REPORTS_DIR = "reports"
"""The sub-folder of a journal that holds failed task runs' reports."""


def journals_root_path(root: str | None = None) -> str:
    """The folder of every job's journals (``$DBXDEC_JOURNAL_DIR`` or :data:`JOURNAL_DIR`).

    Raises:
        ValueError: it is not an absolute workspace path.
    """
    found = (root or os.environ.get(JOURNAL_DIR_ENV) or JOURNAL_DIR).rstrip("/")
    if not found.startswith("/") or "/../" in f"{found}/" or any(c in found for c in "\0\n"):
        raise ValueError(
            f"{JOURNAL_DIR_ENV}={found!r} is not an absolute workspace folder: set it to one "
            f"such as {JOURNAL_DIR}"
        )
    return found


def journal_folder_path(job_id: int, backfill_id: str, root: str | None = None) -> str:
    """The workspace folder of backfill ``backfill_id``'s journal on job ``job_id``.

    >>> journal_folder_path(7, "nightly-20240101T000000-ab12", root="/Shared/x")
    '/Shared/x/job-7/nightly-20240101T000000-ab12'

    Raises:
        ValueError: ``backfill_id`` is not a backfill id (it would reach a path), or the
            root is not an absolute folder.
    """
    if BACKFILL_ID.fullmatch(backfill_id) is None:
        raise ValueError(f"{backfill_id!r} is not a backfill id (see: dbxdec backfills)")
    return f"{journals_root_path(root)}/job-{int(job_id)}/{backfill_id}"


def failed_reports_name(task_run_id: int) -> str:
    """The file, in a journal's :data:`FAILED_REPORTS_DIR`, of a failed task run's reports
    (the JSON list of report lines :func:`.report.exit_value` makes).

    >>> failed_reports_name(42)
    'task-42.json'
    """
    return f"task-{int(task_run_id)}.json"
