"""Dynamic value references in job settings, checked as the Jobs service documents them.

Source: "What is a dynamic value reference?",
https://docs.databricks.com/aws/en/jobs/dynamic-value-references (the supported
references and "Options for date and time values"):

- "Syntax errors in references (for example, a missing brace) are ignored and the value is
  treated as a literal string ... However, entering an invalid reference that belongs to a
  known namespace (for example, ``{{job.naem}}``) is not allowed."
- "User-provided identifiers, for example, task names, task value keys, or job parameter
  names containing special characters must be escaped by surrounding the identifiers with
  backticks. Only alphanumeric and underscore characters can be used without escaping."

The page states the rule for the UI; the emulator applies it to ``jobs/create``,
``update``/``reset`` and run-now's ``job_parameters`` too (the least convenient legal
reading), refused with 400 ``INVALID_PARAMETER_VALUE``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any

_REFERENCE = re.compile(r"\{\{(.*?)\}\}")
_IDENTIFIER = r"(?:[A-Za-z0-9_]+|`[^`]+`)"
_TABLE = r"(?:[A-Za-z0-9_]+(?:\.[A-Za-z0-9_]+){0,2}|`[^`]+`)"
# "Options for date and time values" of the page above.
_TIME = (
    "(?:year|month|day|hour|minute|second|timestamp_ms|iso_weekday|is_weekday|iso_date"
    "|iso_datetime)"
)
_TASK_FIELDS = r"(?:run_id|result_state|error_code|execution_count|notebook_path)"
_DOCUMENTED = re.compile(
    "|".join(
        [
            r"job\.(?:id|name|run_id|repair_count)",
            rf"job\.start_time\.{_TIME}",
            rf"job\.parameters\.{_IDENTIFIER}",
            r"job\.trigger\.type",
            r"job\.trigger\.file_arrival\.location",
            # Table-update triggers: https://docs.databricks.com/aws/en/jobs/trigger-table-update
            r"job\.trigger\.table_update\.updated_tables",
            # ... the table as the page writes it, <catalog.schema.table>, or backticked
            rf"job\.trigger\.table_update\.{_TABLE}\.version",
            rf"job\.trigger\.table_update\.{_TABLE}\.commit_timestamp\.{_TIME}",
            rf"job\.trigger\.time\.{_TIME}",
            r"task\.(?:name|run_id|execution_count|notebook_path)",
            rf"tasks\.{_IDENTIFIER}\.{_TASK_FIELDS}",
            rf"tasks\.{_IDENTIFIER}\.values\.{_IDENTIFIER}",
            r"workspace\.(?:id|url)",
            # Backfill runs: https://docs.databricks.com/aws/en/jobs/backfill-jobs
            rf"backfill\.{_TIME}",
            # For-each iterations: https://docs.databricks.com/aws/en/jobs/for-each
            rf"input(?:\.{_IDENTIFIER})*",
        ]
    )
)
KNOWN_NAMESPACES = frozenset({"job", "task", "tasks", "workspace", "backfill", "input"})


def reference_problem(text: str) -> str | None:
    """What is wrong with the references in ``text``, or ``None``.

    Example:
        >>> reference_problem("{{tasks.`a-b`.values.k}}") is None
        True
        >>> reference_problem("{{tasks.a-b.values.k}}").startswith("Invalid dynamic value")
        True
        >>> reference_problem("{{my.value}}") is None  # not a known namespace: literal text
        True
    """
    for match in _REFERENCE.finditer(text):
        body = match.group(1)
        namespace = body.split(".", 1)[0]
        if namespace in KNOWN_NAMESPACES and _DOCUMENTED.fullmatch(body) is None:
            return (
                f"Invalid dynamic value reference {match.group(0)!r}: not a supported "
                f"reference of the {namespace!r} namespace (identifiers beyond letters, "
                "digits and _ must be escaped with backticks)"
            )
    return None


def references_problem(value: Any, where: str = "settings") -> str | None:
    """Why ``value`` (settings or run-now parameters) is refused, naming the field."""
    for path, text in _strings(value, where):
        problem = reference_problem(text)
        if problem is not None:
            return f"{problem} in {path}"
    return None


def _strings(value: Any, path: str) -> Iterator[tuple[str, str]]:
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _strings(item, f"{path}.{key}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _strings(item, f"{path}[{index}]")


def render_references(text: str, values: Mapping[str, str]) -> str:
    """``text`` with each ``{{reference}}`` found in ``values`` (named without braces)
    replaced by its value; any other text stays as it is.

    Example:
        >>> render_references("{{job.run_id}}-{{job.repair_count}}", {"job.run_id": "7"})
        '7-{{job.repair_count}}'
    """
    return _REFERENCE.sub(lambda match: values.get(match.group(1), match.group(0)), text)


def run_references(
    *, job_id: int, run_id: int, trigger_ms: int, parameters: Mapping[str, str]
) -> dict[str, str]:
    """The references of a job run the emulator answers (the page's "Supported value
    references"); trigger and start time are the run's creation, ``repair_count`` 0."""
    values = {
        "job.id": str(job_id),
        "job.run_id": str(run_id),
        "job.repair_count": "0",
        "job.trigger.time.timestamp_ms": str(trigger_ms),
        "job.start_time.timestamp_ms": str(trigger_ms),
    }
    for name, value in parameters.items():
        values[f"job.parameters.{name}"] = value
        values[f"job.parameters.`{name}`"] = value
    return values
