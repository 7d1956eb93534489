"""The dependants' triggers of a detached ``--downstream`` backfill: paused at ``--detach``
(recorded in ``<journal folder>/hold.json``, never a credential), held again by every
controller generation (closing the moment before the first controller run), caught up
(:func:`..operations.trigger_catch_up.catch_up_dependants`, importing each dependant's
module from the project's wheel) and restored by the generation that ends the backfill.
A controller killed for good leaves the hold to the next ``dbxdec`` command that connects
to a dependant.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ...bundle.triggers import declared_trigger
from ...definitions import JobDefinition, Registry
from ...errors import DbxdecError
from ..guard.pause.pause_permission import require_pausable
from ..guard.pause.trigger_pause import (
    dependant_triggers,
    hold_triggers_detached,
    release_triggers_detached,
)
from ..ledger.journal import FORMAT, journal_place
from ..operations.downstream_triggers import WAREHOUSE_ENV, written_by
from ..operations.trigger_catch_up import catch_up_dependants

if TYPE_CHECKING:
    from databricks.sdk import WorkspaceClient

HOLD_FILE = "hold.json"


@dataclass(frozen=True, slots=True)
class TriggerHold:
    """What a detached backfill holds paused (each dependant's deployed job id), and what
    its catch-up needs: each dependant's module, the SQL warehouse (``None``: no
    catch-up) and each declared ``trigger`` (``jobs/get`` lacks a table update's
    ``condition``, databricks/cli#6315)."""

    dependants: Mapping[str, int]
    modules: Mapping[str, str]
    warehouse_id: str | None
    triggers: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    def to_text(self) -> str:
        body = {
            "format": FORMAT,
            "dependants": dict(self.dependants),
            "modules": dict(self.modules),
            "warehouse_id": self.warehouse_id,
            "triggers": {job: dict(t) for job, t in self.triggers.items()},
        }
        return json.dumps(body, sort_keys=True)

    @classmethod
    def from_text(cls, content: str) -> TriggerHold:
        """Raises ``ValueError`` (``KeyError``, ``TypeError``) for a damaged file."""
        data = json.loads(content)
        warehouse = data.get("warehouse_id")
        return cls(
            {str(k): int(v) for k, v in data["dependants"].items()},
            {str(k): str(v) for k, v in data["modules"].items()},
            None if warehouse is None else str(warehouse),
            {str(k): dict(v) for k, v in data["triggers"].items()},
        )


def plan_hold(registry: Registry, jobs: Sequence[str], job_ids: Mapping[str, int]) -> TriggerHold:
    """The dependants whose trigger watches a table the backfill's ``jobs`` write."""
    graph, definitions, written = written_by(registry, jobs)
    found = dependant_triggers(graph, definitions, written)
    return TriggerHold(
        {d.job: job_ids[d.job] for d in found},
        {d.job: definitions[d.job].fn.__module__ for d in found},
        os.environ.get(WAREHOUSE_ENV) or None,
        {d.job: t for d in found if (t := declared_trigger(definitions[d.job])) is not None},
    )


def start_hold(
    client: WorkspaceClient,
    hold: TriggerHold,
    *,
    job_id: int,
    backfill_id: str,
    controller_job_id: int,
) -> list[str]:
    """``--detach``: pause the dependants' triggers and record the hold.

    Raises:
        UsageError, WorkspaceRejected, WorkspaceUnreachable: a pause was refused (those
            made are put back) or the hold could not be recorded.
    """
    earlier = read_hold(client, job_id, backfill_id)  # a resumed backfill's, if any
    if earlier is not None:  # what it held is released at the end too, even if the
        # project no longer makes it a dependant
        hold = TriggerHold(
            {**earlier.dependants, **hold.dependants},
            {**earlier.modules, **hold.modules},
            hold.warehouse_id or earlier.warehouse_id,
            {**earlier.triggers, **hold.triggers},
        )
    if not hold.dependants:
        return []
    lines = hold_triggers_detached(
        client,
        backfill_id=backfill_id,
        controller_job_id=controller_job_id,
        jobs=hold.dependants,
        declared=hold.triggers,
    )
    try:  # replaces a resumed backfill's: only --detach writes it, and never while a
        # controller run of the backfill is active (a resume refuses while one is)
        journal_place(client, job_id, backfill_id).write(HOLD_FILE, hold.to_text())
    except BaseException:
        release_triggers_detached(client, backfill_id=backfill_id, jobs=hold.dependants)
        raise
    return lines


def read_hold(client: WorkspaceClient, job_id: int, backfill_id: str) -> TriggerHold | None:
    """The hold of a detached backfill (``None``: none, or a damaged file); ``OSError``
    when the workspace did not answer or refused."""
    content = journal_place(client, job_id, backfill_id).read(HOLD_FILE)
    if content is None:
        return None
    try:
        return TriggerHold.from_text(content)
    except (ValueError, KeyError, TypeError, AttributeError):
        return None


def renew_hold(
    client: WorkspaceClient, hold: TriggerHold, *, backfill_id: str, controller_job_id: int
) -> list[str]:
    """A controller generation's start: hold the triggers again, once this run's principal
    is known to hold CAN MANAGE on each dependant; a refusal is one line, and the
    backfill goes on."""
    try:
        require_pausable(
            client,
            hold.dependants,
            option="--downstream",
            what="trigger",
            whose="this controller run's principal",
            then="this run holds none of the triggers (the backfill goes on)",
        )
        return hold_triggers_detached(
            client,
            backfill_id=backfill_id,
            controller_job_id=controller_job_id,
            jobs=hold.dependants,
            declared=hold.triggers,
        )
    except DbxdecError as exc:
        return [f"the dependants' triggers could not be held paused: {exc.render()}"]


def end_hold(
    client: WorkspaceClient,
    hold: TriggerHold,
    *,
    backfill_id: str,
    finished: bool,
    say: Callable[[str], None],
    poll_interval: float = 1.0,
) -> None:
    """The backfill ended: catch up (when it ran to its end) and restore. Never raises:
    the triggers are restored anyway."""
    names = list(hold.dependants)
    try:
        if finished and names:
            _catch_up(client, hold, backfill_id=backfill_id, say=say, poll_interval=poll_interval)
    finally:
        for line in release_triggers_detached(
            client, backfill_id=backfill_id, jobs=hold.dependants
        ):
            say(line)


def _catch_up(
    client: WorkspaceClient,
    hold: TriggerHold,
    *,
    backfill_id: str,
    say: Callable[[str], None],
    poll_interval: float,
) -> None:
    names = list(hold.dependants)
    if hold.warehouse_id is None:
        say(
            f"the catch-up of {', '.join(names)} was not launched: no SQL warehouse was set "
            f"at --detach ({WAREHOUSE_ENV}); the triggers are restored, and each one's next "
            "triggered run processes the commits made while it was paused"
        )
        return
    definitions: dict[str, JobDefinition] = {}
    for name in names:
        try:
            definitions[name] = _definition(hold.modules[name], name)
        except DbxdecError as exc:
            say(f"job {name!r}: no catch-up ({exc.render()}); its next triggered run does it")
    try:
        for done in catch_up_dependants(
            client,
            hold.warehouse_id,
            list(definitions),
            definitions=definitions,
            job_id_of=lambda job: hold.dependants[job],
            backfill_id=backfill_id,
            poll_interval=poll_interval,
        ):
            say(done.line)
    except DbxdecError as exc:
        say(f"the catch-up stopped ({exc.render()}); the triggers are restored")
    except Exception as exc:  # nothing may stop the restore that follows
        reason = str(exc).splitlines()[0] if str(exc) else ""
        say(f"the catch-up stopped ({type(exc).__name__}: {reason}); the triggers are restored")


def _definition(module: str, name: str) -> JobDefinition:
    """Job ``name`` of ``module`` (as ``dbxdec-run`` finds a job; :class:`UsageError`
    when it cannot be imported or does not define it)."""
    from ...definitions.loader import import_module
    from ...runtime.entrypoint import find_job

    found = import_module(module, not_found=f"module {module} not found in the controller's wheel")
    return find_job(found, name)
