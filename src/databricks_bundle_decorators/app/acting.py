"""What the app changes: launching a detached backfill (after a dry-run preview), and
pausing, unpausing, cancelling, resuming and undoing one. Every operation runs with the
viewer's own client and is checked against their job permissions first, as the command
line checks them; the refusal is one line."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from ..bundle.project import ProjectConfig
from ..definitions import Registry
from ..errors import DbxdecError, UsageError, WorkspaceRejected
from ..launch.control.detach import Detached, detach_backfill
from ..launch.launcher import plan_backfill
from ..launch.plan.options import LaunchOptions, Pacing
from ..launch.plan.request import BackfillRequest, Connection, ResumeRequest
from ..launch.prepare.prepared import PreparedBackfill
from ..launch.status.journal_status import JournalPlace
from ..launch.steer.steering import prepare_journal_resume, steer
from .viewer import Viewer

STEER_ACTIONS = ("pause", "unpause", "cancel")
ACTIONS = (*STEER_ACTIONS, "resume", "undo")
WHAT_HAPPENS = {
    "pause": "Its controller launches no new runs; the runs in flight finish. Unpause goes on.",
    "unpause": "Its controller launches again (one is started if none is running).",
    "cancel": "Its runs in flight are cancelled and nothing more is launched. Nothing is "
    "lost: unpause or resume goes on later.",
    "resume": "A new controller run launches every key that has not succeeded yet, as the "
    "backfill was planned.",
    "undo": "Every Delta table the backfill wrote goes back to its version before the "
    "backfill (Delta RESTORE), by a run of the deployed job; refused if another writer "
    "committed since.",
}


@dataclass(frozen=True, slots=True)
class LaunchForm:
    """The launch page's fields, validated."""

    job: str
    start: str | None
    end: str | None
    keys: tuple[str, ...]
    batch_size: int
    max_concurrent: int | None
    rerun: str
    downstream: bool
    order: str = "forward"
    retries: int = 0
    halt_on_error: bool = False
    exact: bool = False
    final_sync: bool = False
    checks: bool = True

    @classmethod
    def parse(cls, form: Mapping[str, str], jobs: list[str]) -> LaunchForm:
        """The fields of a posted launch form.

        Raises:
            UsageError: a field is missing or malformed (one line naming it).
        """
        job = form.get("job", "")
        if job not in jobs:
            raise UsageError(f"unknown job {job!r}: choose one of {', '.join(jobs) or 'none'}")
        keys = tuple(k for k in form.get("keys", "").replace(",", " ").split() if k)
        start, end = form.get("start", "").strip() or None, form.get("end", "").strip() or None
        if keys and (start or end):
            raise UsageError("give either keys or a range (start and end), not both")
        if not keys and not (start and end):
            raise UsageError("give a range (start and end) or keys")
        rerun = form.get("rerun", "all")
        if rerun not in ("all", "failed", "missing"):
            raise UsageError(f"rerun must be all, failed or missing, not {rerun!r}")
        order = form.get("order", "forward")
        if order not in ("forward", "reverse"):
            raise UsageError(f"order must be forward or reverse, not {order!r}")
        return cls(
            job,
            start,
            end,
            keys,
            _number(form, "batch_size", 1),
            _number(form, "max_concurrent", 0) or None,
            rerun,
            _flag(form, "downstream"),
            order,
            _number(form, "retries", 0, least=0),
            _flag(form, "halt_on_error"),
            _flag(form, "exact"),
            _flag(form, "final_sync"),
            not _flag(form, "no_checks"),
        )

    def fields(self) -> dict[str, str]:
        """The form again, as hidden fields of the preview's launch button."""
        return {
            "job": self.job,
            "start": self.start or "",
            "end": self.end or "",
            "keys": " ".join(self.keys),
            "batch_size": str(self.batch_size),
            "max_concurrent": "" if self.max_concurrent is None else str(self.max_concurrent),
            "rerun": self.rerun,
            "order": self.order,
            "retries": str(self.retries),
            **{
                name: "on"
                for name, on in (
                    ("downstream", self.downstream),
                    ("halt_on_error", self.halt_on_error),
                    ("exact", self.exact),
                    ("final_sync", self.final_sync),
                    ("no_checks", not self.checks),
                )
                if on
            },
        }

    def command(self) -> str:
        """The same backfill as a ``dbxdec backfill`` command line."""
        words = ["dbxdec backfill", self.job]
        if self.keys:
            words.append(f"--keys {','.join(self.keys)}")
        else:
            words.append(f"--start {self.start} --end {self.end}")
        defaults = {"batch_size": 1, "rerun": "all", "order": "forward", "retries": 0}
        for name, default in defaults.items():
            value = getattr(self, name)
            if value != default:
                words.append(f"--{name.replace('_', '-')} {value}")
        if self.max_concurrent:
            words.append(f"--max-concurrent {self.max_concurrent}")
        for name in ("downstream", "halt_on_error", "exact", "final_sync"):
            if getattr(self, name):
                words.append(f"--{name.replace('_', '-')}")
        if not self.checks:
            words.append("--no-checks")
        return " ".join([*words, "--detach"])

    def request(self, connection: Connection, started_by: str = "") -> BackfillRequest:
        pacing = Pacing(
            max_concurrent=self.max_concurrent or None,
            retries=self.retries,
            halt_on_error=self.halt_on_error,
        )
        options = LaunchOptions(
            order=self.order,  # type: ignore[arg-type]  # checked in parse
            exact=self.exact,
            final_sync=self.final_sync,
            checks=self.checks,
        )
        return BackfillRequest(
            self.job,
            start=self.start,
            end=self.end,
            keys=self.keys,
            batch_size=self.batch_size,
            rerun=self.rerun,  # type: ignore[arg-type]  # checked in parse
            options=options,
            connection=connection,
            pacing=pacing,
            downstream=self.downstream,
            started_by=started_by,
        )


def _number(form: Mapping[str, str], name: str, default: int, least: int = 1) -> int:
    text = form.get(name, "").strip()
    if not text:
        return default
    if not text.isdigit() or not least <= int(text) <= 100_000:
        raise UsageError(
            f"{name.replace('_', ' ')} must be a whole number from {least} to 100000, "
            f"not {text[:40]!r}"
        )
    return int(text)


def _flag(form: Mapping[str, str], name: str) -> bool:
    return form.get(name) in ("on", "true", "1")


def preview(
    form: LaunchForm,
    config: ProjectConfig,
    registry: Registry,
    viewer: Viewer,
    connection: Connection,
) -> PreparedBackfill:
    """The dry run of ``form``: its runs and estimate; nothing is launched or claimed."""
    return plan_backfill(
        form.request(connection),
        root=config.root,
        registry=registry,
        warehouse=config.warehouse,
        client=viewer.client,
        dry_run=True,
    )


def launch(
    form: LaunchForm,
    config: ProjectConfig,
    registry: Registry,
    viewer: Viewer,
    connection: Connection,
) -> Detached:
    """Launch ``form`` as a detached backfill, as the viewer, after checking they hold
    CAN_MANAGE_RUN on the job.

    Raises:
        WorkspaceRejected: they do not (one line).
    """
    prepared = plan_backfill(
        form.request(connection, viewer.name),
        root=config.root,
        registry=registry,
        warehouse=config.warehouse,
        client=viewer.client,
    )
    try:
        refusal = launch_refusal(prepared, viewer, config, connection)
    except BaseException:
        if prepared.backend is not None:
            prepared.backend.close()
        raise
    if refusal:
        if prepared.backend is not None:
            prepared.backend.close()
        raise WorkspaceRejected(refusal)
    return detach_backfill(prepared, root=config.root, client=viewer.client)


def launch_refusal(
    prepared: PreparedBackfill, viewer: Viewer, config: ProjectConfig, connection: Connection
) -> str:
    """Why the viewer may not launch ``prepared`` detached (``""``: they may): they need
    CAN_MANAGE_RUN on every job it runs and on the controller job (they start its first
    run), and CAN_MANAGE on each dependant whose trigger a ``--downstream`` backfill
    pauses (as ``--detach`` requires of the controller's principal).

    Raises:
        WorkspaceRejected: a dependant may not be paused by them (one line).
    """
    from ..launch.control.controller import plan_hold
    from ..launch.guard.pause.pause_permission import require_pausable
    from ..launch.run.blocking import ledger_jobs

    if viewer.read_only:
        return viewer.read_only
    if viewer.client is None:
        return ""
    spec, downstream = prepared.ledger.backend, prepared.workspace
    job_ids = dict(downstream.job_ids) if downstream is not None else {}
    if not job_ids and spec.job_id is not None:
        job_ids = {prepared.plan.job: spec.job_id}
    for job, job_id in job_ids.items():
        refusal = viewer.refusal(job_id, job, "launch")
        if refusal:
            return refusal
    refusal = viewer.refusal(
        controller_id(viewer, config, connection), "dbxdec_controller", "launch"
    )
    if refusal or downstream is None:
        return refusal
    hold = plan_hold(downstream.registry, ledger_jobs(prepared.ledger), downstream.job_ids)
    require_pausable(
        viewer.client,
        hold.dependants,
        option="--downstream",
        what="trigger",
        whose="you",
        then="nothing was launched",
    )
    return ""


def controller_id(viewer: Viewer, config: ProjectConfig, connection: Connection) -> int:
    """The deployed controller job's id, found as ``--detach`` finds it."""
    from ..launch.control.controller import controller_job_id
    from ..launch.workspace.target import read_target

    assert viewer.client is not None
    target = read_target(config.root, connection.target) if connection.target else None
    return controller_job_id(
        viewer.client,
        name_prefix=target.name_prefix if target else None,
        dev_mode=bool(target and target.dev_mode),
    )


def steer_backfill(place: JournalPlace, action: str) -> list[str]:
    """Pause, unpause or cancel the detached backfill of ``place`` (the viewer's client)."""
    if action not in STEER_ACTIONS:
        raise UsageError(f"unknown action {action!r}")
    return list(steer(place, action).lines)  # type: ignore[arg-type]  # checked above


def resume(
    backfill_id: str,
    config: ProjectConfig,
    registry: Registry,
    viewer: Viewer,
    connection: Connection,
) -> Detached:
    """A new controller run of the detached backfill ``backfill_id`` (what is left)."""
    request = ResumeRequest(backfill_id, connection=connection)
    prepared = prepare_journal_resume(
        request,
        root=config.root,
        project_loader=lambda: (config, registry),
        client=viewer.client,
    )
    return detach_backfill(prepared, root=config.root, client=viewer.client)


@dataclass
class Operation:
    """A long operation (an undo) running in the background: its lines so far."""

    action: str
    backfill_id: str
    by: str
    started: float = field(default_factory=time.time)
    lines: list[str] = field(default_factory=list)
    state: str = "running"  # running, done, failed


class Operations:
    """The undos started from this app, by backfill id (this process only)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_id: dict[str, Operation] = {}

    def get(self, backfill_id: str) -> Operation | None:
        with self._lock:
            return self._by_id.get(backfill_id)

    def start(self, operation: Operation, work: Callable[[Operation], None]) -> None:
        with self._lock:
            running = self._by_id.get(operation.backfill_id)
            if running is not None and running.state == "running":
                raise UsageError(f"an {running.action} of {operation.backfill_id} is running")
            self._by_id[operation.backfill_id] = operation

        def run() -> None:
            try:
                work(operation)
                operation.state = "done"
            except DbxdecError as exc:
                operation.lines.append(f"Error: {exc.render()}")
                operation.state = "failed"
            except Exception as exc:  # shown on the page, never lost in a thread
                operation.lines.append(f"Error: {type(exc).__name__}: {exc}")
                operation.state = "failed"

        threading.Thread(target=run, name=f"dbxdec-app-{operation.action}", daemon=True).start()


def undo_work(
    backfill_id: str,
    config: ProjectConfig,
    registry: Registry,
    viewer: Viewer,
    target: str | None,
    poll_interval: float,
) -> Callable[[Operation], None]:
    """The undo of ``backfill_id`` as :class:`Operations` runs it (refusals stop it)."""
    from ..launch.operations.undo import prepare_undo

    def work(operation: Operation) -> None:
        prepared = prepare_undo(
            backfill_id,
            root=config.root,
            project_loader=lambda: (config, registry),
            client=viewer.client,
            target=target,
            poll_interval=poll_interval,
        )
        operation.lines.extend(prepared.lines())
        if not prepared.count:
            operation.lines.append("Nothing to undo.")
            return
        refused = prepared.refused()
        if refused is not None:
            raise refused
        operation.lines.extend(prepared.apply(force=False))

    return work
