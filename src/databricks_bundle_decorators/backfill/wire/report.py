"""The reports a task prints for the launcher: one JSON line each, one prefix, one schema.

A report is ``dbxdec-report: {"kind": KIND, ...}`` on a line of its own in a task's
output; the launcher reads it back from the task's logs (``jobs/runs/get-output``).
:func:`report_line` writes every report and :func:`read_reports` reads every one.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
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
