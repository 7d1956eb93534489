"""The reports a task prints for the launcher, ``dbxdec-report: {"kind": KIND, ...}`` lines, read
from ``jobs/runs/get-output``'s ``logs`` or ``notebook_output.result``. A failed notebook task run
has neither (``result`` is "absent if dbutils.notebook.exit() was never called", databricks-sdk
``jobs.NotebookOutput.result``), so it keeps its reports in its backfill's journal folder.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping, Sequence
from typing import Any, Literal

REPORT_PREFIX = "dbxdec-report: "
ReportKind = Literal["presence", "measure", "undo", "checks"]
REPORT_KINDS: tuple[ReportKind, ...] = ("presence", "measure", "undo", "checks")


def report_line(kind: ReportKind, body: Mapping[str, Any]) -> str:
    """A report of ``kind`` as one output line.

    >>> report_line("undo", {"table": "t", "version": 3})
    'dbxdec-report: {"kind": "undo", "table": "t", "version": 3}'
    """
    return REPORT_PREFIX + json.dumps({"kind": kind, **body}, sort_keys=True, allow_nan=False)


def read_reports(text: str, kind: ReportKind) -> list[tuple[str, dict[str, Any]]]:
    """``(line, body)`` of every report of ``kind`` in a task's output; other lines,
    and reports of other kinds, are ignored.

    >>> read_reports("noise\\n" + report_line("undo", {"version": 3}), "undo")[0][1]
    {'kind': 'undo', 'version': 3}

    Raises:
        ValueError: a line starts with the prefix but is not a JSON object with a kind.
    """
    found = []
    for line in text.splitlines():
        if not line.startswith(REPORT_PREFIX):
            continue
        try:
            body = json.loads(line[len(REPORT_PREFIX) :])
        except ValueError:
            body = None
        if not isinstance(body, dict) or body.get("kind") not in REPORT_KINDS:
            raise ValueError(f"a malformed report line: {line[:120]!r}")
        if body["kind"] == kind:
            found.append((line, body))
    return found


#: ``dbutils.notebook.exit()``'s value is returned cut to its first 5 MB
#: (databricks-sdk ``jobs.NotebookOutput.result``).
MAX_EXIT_VALUE_BYTES = 5 * 1024 * 1024


def exit_value(lines: Sequence[str]) -> str:
    """The report ``lines`` as the one text a notebook task gives ``dbutils.notebook.exit()``.

    >>> line = report_line("undo", {"version": 3})
    >>> exit_value_text(exit_value([line])) == line
    True

    Raises:
        ValueError: the text exceeds the 5 MB the service returns of it.
    """
    text = json.dumps(list(lines))
    if len(text.encode()) > MAX_EXIT_VALUE_BYTES:
        raise ValueError(
            f"the task's reports take {len(text.encode())} bytes, over the 5 MB a notebook "
            "task's exit value is kept to"
        )
    return text


def exit_value_text(value: str | None) -> str:
    """The report lines of a notebook task's exit value, one a line (``""`` for none).

    Raises:
        ValueError: the value is not a JSON list of strings.
    """
    if not value:
        return ""
    try:
        lines = json.loads(value)
    except ValueError:
        lines = None
    if not isinstance(lines, list) or not all(isinstance(line, str) for line in lines):
        raise ValueError(f"a malformed notebook exit value: {value[:120]!r}")
    return "\n".join(lines)


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
