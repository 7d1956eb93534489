"""``dbxdec status JOB --overdue``: the overdue keys as lines or JSON."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime

import click
from whenever import Instant

from ...definitions import JobDefinition
from ...launch.status.overdue import OverdueKey


def _rule(job: JobDefinition) -> str:
    """``09:00 Europe/Amsterdam`` or ``2:00:00 after the window``."""
    deadlines = job.deadlines
    assert deadlines is not None
    deadline = deadlines.deadline
    if deadline.at is not None:
        return f"{deadline.at} {deadlines.tz}"
    return f"{deadline.after} after the window"


def echo_overdue(
    job: JobDefinition, overdue: Sequence[OverdueKey], *, now: datetime, as_json: bool
) -> None:
    """Print the overdue keys of ``job`` at ``now`` (each due time in the deadline's zone)."""
    if as_json:
        body = {
            "job": job.name,
            "now": now.isoformat(),
            "overdue": [key.to_json() for key in overdue],
        }
        click.echo(json.dumps(body))
        return
    if not overdue:
        click.echo(f"No overdue keys of {job.name} (deadline {_rule(job)}).")
        return
    assert job.deadlines is not None
    tz = job.deadlines.tz
    click.echo(f"{len(overdue)} overdue key(s) of {job.name} (deadline {_rule(job)}):")
    width = max(len(key.key) for key in overdue)
    for key in overdue:
        due = Instant(key.due).to_tz(tz).to_stdlib().strftime("%Y-%m-%d %H:%M %Z")
        line = f"  {key.key:<{width}}  due {due}  {key.reason}"
        if key.detail:
            line += f": {key.detail.splitlines()[0][:200]}"
        click.echo(line)
