"""The app's routes: Starlette handlers that read through :mod:`.reading`, change through
:mod:`.acting`, and render Jinja2 templates (autoescaped) from ``templates/``.

Handlers are plain functions: Starlette runs them in its thread pool, so a slow workspace
call holds one worker thread, never the event loop. Every state-changing request is a POST
checked by :mod:`.csrf` before anything else; a refusal is ``403`` and one line of text.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl

from jinja2 import Environment, PackageLoader, select_autoescape
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from ..bundle.project import ProjectConfig, load_project
from ..definitions import Registry
from ..errors import DbxdecError, WorkspaceRejected
from ..launch.status.journal_status import locate_journal
from .acting import (
    ACTIONS,
    STEER_ACTIONS,
    WHAT_HAPPENS,
    LaunchForm,
    Operation,
    Operations,
    launch,
    launch_refusal,
    preview,
    resume,
    steer_backfill,
    undo_work,
)
from .csrf import FIELD, SESSION_COOKIE, CsrfGuard
from .job_health import COLOURS, BadQuery, Focus, NoSuchPart, job_health, job_lines
from .reading import (
    STATE_GLYPHS,
    NotFound,
    backfill_page,
    backfill_rows,
    job_names,
    resume_commands,
)
from .settings import FORWARDED_TOKEN, AppSettings
from .viewer import Viewer, Viewers

LOG = logging.getLogger("dbxdec.app")
MAX_FORM_BYTES = 64 * 1024
STATIC = Path(__file__).parent / "static"


@dataclass
class AppState:
    """What every handler shares: settings, the project, viewers, the guard, templates."""

    settings: AppSettings
    viewers: Viewers
    guard: CsrfGuard
    templates: Environment
    operations: Operations
    run_tasks: dict[str, dict[str, str]] = field(default_factory=dict)  # ended runs' tasks
    _project: tuple[ProjectConfig, Registry] | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)  # one per app

    def project(self) -> tuple[ProjectConfig, Registry]:
        with self._lock:
            if self._project is None:
                self._project = load_project(self.settings.root, self.settings.pipelines)
            return self._project


def build_app(settings: AppSettings, *, viewers: Viewers | None = None) -> Starlette:
    """The app for ``settings`` (``viewers``: how requests become viewers)."""
    templates = Environment(
        loader=PackageLoader("databricks_bundle_decorators.app", "templates"),
        autoescape=select_autoescape(default=True, default_for_string=True),
        trim_blocks=True,
        lstrip_blocks=True,
    )
    templates.globals["glyphs"] = STATE_GLYPHS
    state = AppState(settings, viewers or Viewers(settings), CsrfGuard(), templates, Operations())
    # the project is read once; every page needs it
    routes = [
        Route("/", _page(state, _backfills)),
        Route("/backfills/{backfill_id}", _page(state, _backfill)),
        Route("/backfills/{backfill_id}/live", _page(state, _backfill_live)),
        Route("/backfills/{backfill_id}/confirm/{action}", _page(state, _confirm)),
        Route("/backfills/{backfill_id}/cost", _page(state, _cost)),
        Route("/backfills/{backfill_id}/{action}", _page(state, _act), methods=["POST"]),
        Route("/jobs", _page(state, _jobs)),
        Route("/jobs/{name}", _page(state, _job)),
        Route("/launch", _page(state, _launch_form)),
        Route("/launch/preview", _page(state, _launch_preview), methods=["POST"]),
        Route("/launch", _page(state, _launch), methods=["POST"]),
        Route("/healthz", lambda request: PlainTextResponse("ok")),
        Mount("/static", StaticFiles(directory=STATIC), name="static"),
    ]
    app = Starlette(routes=routes)
    app.state.dbxdec = state
    return app


Handler = Callable[[AppState, Request, Viewer, dict[str, Any]], Response]


def _page(state: AppState, handler: Handler) -> Callable[[Request], Response]:
    """``handler`` with the viewer made, the CSRF guard applied to POSTs, a session
    cookie set, and a dbxdec error turned into one line (403 for a refusal)."""

    def endpoint(request: Request) -> Response:
        session = request.cookies.get(SESSION_COOKIE) or ""
        fresh = not session
        if fresh:
            session = CsrfGuard.new_session()
        form: dict[str, str] = {}
        try:
            if request.method == "POST":
                form = _form(request)
                refusal = state.guard.refusal(
                    request.cookies.get(SESSION_COOKIE),
                    form.get(FIELD),
                    request.headers.get("origin"),
                    request.headers.get("host", ""),
                )
                if refusal:
                    return _one_line(403, refusal)
            viewer = state.viewers.of(request.headers.get(FORWARDED_TOKEN))
            context = {"csrf": state.guard.token(session), "form": form, **request.path_params}
            response = handler(state, request, viewer, context)
        except WorkspaceRejected as exc:
            response = _one_line(403, exc.render())
        except DbxdecError as exc:
            status = 404 if isinstance(exc, NotFound) else 502 if exc.exit_code == 5 else 400
            response = _error_page(state, status, exc.render())
        if fresh:
            secure = request.url.scheme == "https"
            response.set_cookie(
                SESSION_COOKIE, session, httponly=True, samesite="strict", secure=secure
            )
        response.headers["Cache-Control"] = "no-store"
        response.headers["X-Content-Type-Options"] = "nosniff"
        response.headers["Content-Security-Policy"] = (
            "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'"
        )
        return response

    return endpoint


def _form(request: Request) -> dict[str, str]:
    """A posted ``application/x-www-form-urlencoded`` body (the only kind our forms send;
    parsed with the standard library rather than adding python-multipart for it)."""
    import anyio.from_thread

    body: bytes = anyio.from_thread.run(request.body)
    if len(body) > MAX_FORM_BYTES:
        raise _Refused("the form is too large")
    return dict(parse_qsl(body.decode("utf-8", "replace"), keep_blank_values=True))


class _Refused(DbxdecError):
    exit_code = 2


def _one_line(status: int, line: str) -> Response:
    return PlainTextResponse(line.splitlines()[0] + "\n", status_code=status)


def _error_page(state: AppState, status: int, line: str) -> Response:
    template = state.templates.get_template("error.html")
    page = template.render(message=line, banner="", acting_as="", viewer="", status=status)
    return HTMLResponse(page, status_code=status)


def _render(state: AppState, viewer: Viewer, name: str, context: dict[str, Any]) -> HTMLResponse:
    page = state.templates.get_template(name).render(
        banner=viewer.read_only,
        viewer=viewer.name,
        acting_as=viewer.acting_as,
        live_seconds=state.settings.live_seconds,
        **context,
    )
    return HTMLResponse(page)


def _backfills(state: AppState, request: Request, viewer: Viewer, ctx: dict[str, Any]) -> Response:
    config, registry = state.project()
    rows = backfill_rows(config.root, registry, viewer, state.settings.connection)
    jobs = set(job_names(registry))
    return _render(state, viewer, "backfills.html", {**ctx, "rows": rows, "jobs": jobs})


def _backfill_context(
    state: AppState, viewer: Viewer, backfill_id: str, ctx: dict[str, Any]
) -> dict[str, Any]:
    config, registry = state.project()
    connection = state.settings.connection
    page = backfill_page(backfill_id, config.root, registry, viewer, connection, state.run_tasks)
    refusals: dict[str, str] = {}
    if page.place is None:
        refusals = dict.fromkeys(ACTIONS, "a local backfill: steer it from its terminal")
    else:
        refusal = viewer.refusal(page.place.job_id, page.place.remote_name, "steer")
        refusals = dict.fromkeys(ACTIONS, refusal)
        control = page.control
        if page.ended:
            for action in STEER_ACTIONS:
                refusals[action] = refusals[action] or "the backfill has ended"
            if page.counts.get("succeeded", 0) == len(page.ledger.slices):
                refusals["resume"] = refusals["resume"] or "every run succeeded: nothing is left"
        else:
            refusals["resume"] = refusals["resume"] or "the backfill is still running"
            refusals["undo"] = refusals["undo"] or "the backfill is still running: cancel it first"
        if control == "paused":
            refusals["pause"] = refusals["pause"] or "already paused"
        elif not page.ended:
            refusals["unpause"] = refusals["unpause"] or "not paused"
    operation = state.operations.get(backfill_id)
    if operation is not None and operation.state == "running":
        refusals["undo"] = refusals["undo"] or f"its {operation.action} is running"
    target = state.settings.connection.target if state.settings.connection else None
    return {
        **ctx,
        "page": page,
        "refusals": refusals,
        "operation": operation,
        "commands": resume_commands(page, target),
        "what": WHAT_HAPPENS,
    }


def _backfill(state: AppState, request: Request, viewer: Viewer, ctx: dict[str, Any]) -> Response:
    context = _backfill_context(state, viewer, ctx["backfill_id"], ctx)
    return _render(state, viewer, "backfill.html", context)


def _backfill_live(
    state: AppState, request: Request, viewer: Viewer, ctx: dict[str, Any]
) -> Response:
    context = _backfill_context(state, viewer, ctx["backfill_id"], ctx)
    return _render(state, viewer, "backfill_live.html", context)


def _cost(state: AppState, request: Request, viewer: Viewer, ctx: dict[str, Any]) -> Response:
    """What the backfill cost, read from ``system.billing`` through a SQL warehouse as the
    viewer (``DATABRICKS_WAREHOUSE_ID`` or the profile's ``warehouse_id``)."""
    from ..launch.estimate.cost import backfill_cost

    config, registry = state.project()
    backfill_id = ctx["backfill_id"]
    page = backfill_page(backfill_id, config.root, registry, viewer, state.settings.connection)
    report = backfill_cost(
        backfill_id,
        config.root,
        client=viewer.client,
        warehouse_id=os.environ.get("DATABRICKS_WAREHOUSE_ID"),
        ledger=page.ledger,
    )
    return _render(state, viewer, "cost.html", {**ctx, "page": page, "lines": report.lines()})


def _confirm(state: AppState, request: Request, viewer: Viewer, ctx: dict[str, Any]) -> Response:
    action = ctx["action"]
    if action not in ACTIONS:
        return _one_line(404, f"no action {action!r}: one of {', '.join(ACTIONS)}")
    context = _backfill_context(state, viewer, ctx["backfill_id"], ctx)
    return _render(state, viewer, "confirm.html", context)


def _act(state: AppState, request: Request, viewer: Viewer, ctx: dict[str, Any]) -> Response:
    action, backfill_id = ctx["action"], ctx["backfill_id"]
    if action not in ACTIONS:
        return _one_line(404, f"no action {action!r}: one of {', '.join(ACTIONS)}")
    context = _backfill_context(state, viewer, backfill_id, ctx)
    refusal = context["refusals"][action]
    if refusal:  # what the page showed disabled is refused here too
        return _one_line(
            403 if refusal == viewer.read_only or "may not" in refusal else 409,
            f"refused: {refusal}",
        )
    page = context["page"]
    config, registry = state.project()
    connection = state.settings.connection
    assert page.place is not None and connection is not None
    LOG.info("%s %s by %s", action, backfill_id, viewer.name or "local user")
    if action in STEER_ACTIONS:
        steer_backfill(page.place, action)
    elif action == "resume":
        resume(backfill_id, config, registry, viewer, connection)
    else:
        work = undo_work(backfill_id, config, registry, viewer, connection.target, 1.0)
        state.operations.start(Operation(action, backfill_id, viewer.name), work)
    return RedirectResponse(f"/backfills/{backfill_id}", status_code=303)


def _jobs(state: AppState, request: Request, viewer: Viewer, ctx: dict[str, Any]) -> Response:
    return _render(state, viewer, "jobs.html", {**ctx, "jobs": job_lines(state.project()[1])})


def _job(state: AppState, request: Request, viewer: Viewer, ctx: dict[str, Any]) -> Response:
    config, registry = state.project()
    name = ctx["name"]
    if name not in job_names(registry):
        return _one_line(404, f"no job {name!r} with a backfill definition here: see /jobs")
    connection = state.settings.connection
    if viewer.identity is not None and connection is not None:  # read for them: may they?
        place = locate_journal("", connection, config.root, client=viewer.client, job=name)
        viewer.require_view(place.job_id, place.remote_name)
    try:
        focus = Focus.parse(request.query_params)
        health = job_health(
            registry.get(name),
            registry,
            root=config.root,
            viewer=viewer,
            connection=state.settings.connection,
            focus=focus,
            now=datetime.now(timezone.utc),
            warehouse=config.warehouse,
        )
    except (BadQuery, NoSuchPart) as exc:
        return _one_line(400 if isinstance(exc, BadQuery) else 404, exc.render())
    return _render(state, viewer, "job.html", {**ctx, "health": health, "colours": COLOURS})


def _launch_form(
    state: AppState, request: Request, viewer: Viewer, ctx: dict[str, Any]
) -> Response:
    registry = state.project()[1]
    jobs = job_names(registry)
    chosen = request.query_params.get("job", "")
    context = {**ctx, "jobs": jobs, "chosen": chosen if chosen in jobs else ""}
    return _render(state, viewer, "launch.html", context)


def _launch_preview(
    state: AppState, request: Request, viewer: Viewer, ctx: dict[str, Any]
) -> Response:
    config, registry = state.project()
    jobs = list(job_names(registry))
    form = LaunchForm.parse(ctx["form"], jobs)
    connection = _workspace(state, viewer)
    prepared = preview(form, config, registry, viewer, connection)
    try:
        try:
            refusal = launch_refusal(prepared, viewer, config, connection)
        except WorkspaceRejected as exc:  # a dependant they may not pause
            refusal = exc.render()
        slices = prepared.ledger.slices
        context = {
            **ctx,
            "launch": form,
            "fields": form.fields(),
            "runs": [(r.label, dict(r.parameters)) for r in slices[:50]],
            "run_count": len(slices),
            "estimate_lines": [
                *(prepared.batch_choice.lines() if prepared.batch_choice else ()),
                *(prepared.estimate.lines() if prepared.estimate else ()),
            ],
            "warnings": prepared.warnings,
            "unreached": prepared.unreached,
            "refusal": refusal,
            "max_concurrent": prepared.options.max_concurrent,
        }
    finally:
        if prepared.backend is not None:
            prepared.backend.close()
    return _render(state, viewer, "preview.html", context)


def _launch(state: AppState, request: Request, viewer: Viewer, ctx: dict[str, Any]) -> Response:
    config, registry = state.project()
    form = LaunchForm.parse(ctx["form"], list(job_names(registry)))
    if viewer.read_only:
        return _one_line(403, f"refused: {viewer.read_only}")
    LOG.info("launch %s by %s", form.job, viewer.name or "local user")
    detached = launch(form, config, registry, viewer, _workspace(state, viewer))
    return RedirectResponse(f"/backfills/{detached.backfill_id}", status_code=303)


def _workspace(state: AppState, viewer: Viewer) -> Any:
    from ..errors import UsageError

    connection = state.settings.connection
    if connection is None or viewer.client is None:
        raise UsageError(
            "this app reads local ledgers only: start it with -t TARGET (or DATABRICKS_HOST) "
            "to launch detached backfills"
        )
    return connection
