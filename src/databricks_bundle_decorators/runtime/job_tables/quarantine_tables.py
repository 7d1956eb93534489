"""The quarantine tables of a job's outputs, beside the outputs (for undo)."""

from __future__ import annotations

from ...definitions import JobDefinition
from ...definitions.contracts import RunEnvironment
from ..checks.quarantine import quarantine_ref, quarantining
from .outputs import TableOutput


def with_quarantine_tables(
    job: JobDefinition, environment: RunEnvironment, found: dict[str, TableOutput]
) -> dict[str, TableOutput]:
    """``found`` (a job's output tables, by name) with the quarantine table of each
    output written by a task with a quarantining check: undo restores it with its table
    (its commits carry the same run identity)."""
    out = dict(found)
    for output in found.values():
        if any(quarantining(tuple(job.graph[t].definition.checks)) for t in output.tasks):
            ref = quarantine_ref(output.manager.table, environment)
            out.setdefault(ref.name, TableOutput(output.manager, ref, output.tasks))
    return out
