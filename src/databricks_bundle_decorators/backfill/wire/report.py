"""The reports a task prints for the launcher: one JSON line each, one prefix, one schema.

A report is ``dbxdec-report: {"kind": KIND, ...}`` on a line of its own in a task's
output; the launcher reads it back with ``jobs/runs/get-output``: a wheel task's from its
``logs``, a notebook task's from its ``notebook_output.result``, which holds the report lines
as one JSON list (:func:`exit_value`). :func:`report_line` writes every report and
:func:`read_reports` reads every one.
"""

from __future__ import annotations

import json
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
