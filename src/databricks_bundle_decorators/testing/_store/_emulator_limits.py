"""Documented limits of job settings that the emulated Jobs service enforces.

Each limit cites its source; the emulator refuses settings past a limit the way the
service answers a bad request (400 ``INVALID_PARAMETER_VALUE``, raised by the caller:
this module imports nothing of the emulator).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

MAX_JOB_TAGS = 25
"""``JobSettings.tags`` in the Jobs API reference (databricks-sdk-py ``jobs.JobSettings``
docstring; https://docs.databricks.com/api/workspace/jobs/create): "A maximum of 25 tags
can be added to the job"."""


def job_limit_problem(settings: Mapping[str, Any]) -> str | None:
    """Why job ``settings`` pass a documented limit (``jobs/create``, ``update``,
    ``reset``), or ``None``."""
    tags = settings.get("tags")
    if tags is None:
        return None
    if not isinstance(tags, Mapping):
        return "tags must be an object of key-value strings"
    if len(tags) > MAX_JOB_TAGS:
        return f"A job may have at most {MAX_JOB_TAGS} tags; got {len(tags)}."
    return None
