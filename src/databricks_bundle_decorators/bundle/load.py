"""``load_resources`` for the ``python: resources:`` section of ``databricks.yml``: the
Databricks CLI runs it from the bundle root with the target and its variables; problems
become CLI diagnostics (with the job's file and line), not tracebacks."""

from __future__ import annotations

import gc
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..definitions import JobDefinition, Registry
from ..errors import DbxdecError
from .app_resource import plan_app, write_app
from .bundle_file import find_bundle_file
from .codegen import (
    controller_job_resource,
    job_resource,
    monitor_job_resource,
    prebuilt_job_resource,
)
from .notebook_task import all_notebooks, write_notebook_files
from .options import CodegenOptions, options_from_config
from .project import PipelineImportError, load_project
from .typed import typed_job
from .validate import typed_problems

if TYPE_CHECKING:
    from databricks.bundles.core import Bundle, Resources


def load_resources(bundle: Bundle) -> Resources:
    """The dbxdec jobs of the project in the working directory, one per ``@job``, with
    ``[tool.dbxdec.targets.<bundle.target>]`` applied (``${var.name}`` values resolved)."""
    from databricks.bundles.core import Location

    try:
        config, registry = load_project(Path.cwd())
        options = options_from_config(
            config, target=bundle.target, variables=dict(bundle.variables)
        )
    except PipelineImportError as exc:
        resources = _new_resources()
        for diagnostic in exc.diagnostics:
            resources.add_diagnostic_error(
                diagnostic.message, location=_location(diagnostic.location)
            )
        return resources
    except DbxdecError as exc:
        resources = _new_resources()
        resources.add_diagnostic_error(exc.render(), location=Location(file="pyproject.toml"))
        return resources
    bundle_file = find_bundle_file(config.root)
    resources = resources_for(registry, options, bundle_file=bundle_file)
    try:  # a job with a backfill: the controller of detached backfills (issue 28)
        controller = controller_job_resource(registry, options, config.settings)
        if controller is not None:
            resources.add_job(controller["name"], typed_job(controller))
    except DbxdecError as exc:
        resources.add_diagnostic_error(exc.render(), location=Location(file="pyproject.toml"))
    try:  # [tool.dbxdec.app]: the backfill app, as dbxdec generate writes it
        jobs = list(resources.jobs)
        app = plan_app(config, options, target=bundle.target, source_code_path=".", jobs=jobs)
        if app is not None:
            from databricks.bundles.apps import App

            anchor = Location(file=str(bundle_file or "databricks.yml"), line=1, column=1)
            resources.add_app(app[0], App.from_dict(app[1]), location=anchor)  # type: ignore[arg-type]
        write_app(config, None, app)
    except DbxdecError as exc:
        resources.add_diagnostic_error(exc.render(), location=Location(file="pyproject.toml"))
    return resources


@contextmanager
def _full_collections_deferred() -> Iterator[None]:
    """Hold back full GC passes for the block (they find nothing while the heap grows)."""
    young, middle, full = gc.get_threshold()
    gc.set_threshold(young, middle, 2**30)  # a threshold a load never reaches
    try:
        yield
    finally:
        gc.set_threshold(young, middle, full)


@_full_collections_deferred()
def resources_for(
    registry: Registry | Iterable[JobDefinition],
    options: CodegenOptions,
    *,
    bundle_file: Path | None = None,
) -> Resources:
    """Job resources for every job of ``registry`` (the core of :func:`load_resources`).
    Each problem becomes an error diagnostic at the job's source line. With
    ``bundle_file``, the notebooks of task-value tasks are written beside it."""
    from databricks.bundles.core import Location

    resources = _new_resources()
    anchor = Location(file=str(bundle_file or Path("databricks.yml")), line=1, column=1)
    reported: list[str] = []
    if isinstance(registry, Registry):
        for diagnostic in registry.check():
            reported.append(str(diagnostic))
            resources.add_diagnostic_error(str(diagnostic))
    notebooks: dict[str, str] = {}
    for job in sorted(registry, key=lambda j: j.name):
        source = Location(file=job.source.file, line=max(job.source.line, 1), column=1)
        path = ("resources", "jobs", job.name)
        try:
            settings = prebuilt_job_resource(job, options)
            notebooks.update(all_notebooks({job.name: settings}, options))
        except DbxdecError as exc:
            if not any(exc.render() in message for message in reported):
                resources.add_diagnostic_error(exc.render(), location=source, path=path)
            continue
        try:
            resources.add_job(job.name, typed_job(settings), location=anchor)
        except Exception:  # the typed load of the plain settings names the field at fault
            for problem in typed_problems(job.name, job_resource(job, options=options)):
                resources.add_diagnostic_error(str(problem), location=source, path=path)
        monitor = monitor_job_resource(job, options)  # Deadline(monitor=...)
        if monitor is not None:
            try:
                resources.add_job(monitor["name"], typed_job(monitor), location=anchor)
            except Exception:
                for problem in typed_problems(monitor["name"], monitor):
                    resources.add_diagnostic_error(str(problem), location=source, path=path)
    if bundle_file is not None:  # the bundle's own notebooks, which the CLI deploys
        write_notebook_files(notebooks, bundle_file.parent / options.notebook_dir)
    return resources


def _new_resources() -> Resources:
    from databricks.bundles.core import Resources

    resources: Resources = Resources()  # type: ignore[no-untyped-call]
    return resources


def _location(where: str | None) -> Any:
    from databricks.bundles.core import Location

    if where is None:
        return Location(file="pyproject.toml")
    file, _, line = where.rpartition(":")
    return Location(file=file, line=int(line)) if file and line.isdigit() else Location(file=where)
