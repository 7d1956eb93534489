"""``dbxdec init``, ``generate``, ``validate`` and ``deploy`` as functions that return or raise
a ``DbxdecError``, never print or exit; ``init`` renders ``templates/`` (see its README)."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from ..definitions import JobDefinition, Registry
from ..errors import DbxdecError, DefinitionError, UsageError, counted
from .app_resource import app_resource, plan_app, relative_source, write_app
from .bundle_file import (
    BundleFile,
    TargetMode,
    find_bundle_file,
    mode_problems,
    read_bundle_file,
    tag_count_problem,
    target_mode,
)
from .codegen import controller_job_resource, job_resource, monitor_job_resource
from .framework_wheel import (
    WHEELS_DIR,
    check_framework_wheel,
    framework_wheel_name,
    wheel_version,
    write_framework_wheel,
)
from .notebook_task import all_notebooks, write_notebook_files
from .options import NOTEBOOK_FOLDER, CodegenOptions, is_framework, options_from_config
from .project import ProjectConfig, load_project
from .validate import SchemaValidator, default_schema_path, typed_problems, variable_problems
from .yaml_files import write_if_changed, write_job_files

INSTALL_HINT = (
    "install the Databricks CLI (v0.250 or newer): "
    "https://docs.databricks.com/dev-tools/cli/install.html, e.g. "
    "'brew tap databricks/tap && brew install databricks' or "
    "'curl -fsSL https://raw.githubusercontent.com/databricks/setup-cli/main/install.sh | sh'"
)


class BundleValidationError(DbxdecError):
    """Generated jobs or definitions have problems (exit 1)."""


class DatabricksCliFailed(DbxdecError):
    """The Databricks CLI exited with an error; dbxdec exits with the same code."""

    def __init__(self, command: Sequence[str], exit_code: int) -> None:
        self.exit_code = exit_code
        super().__init__(
            f"'databricks {' '.join(command[1:3])}' failed with exit code {exit_code} "
            "(its output is above)"
        )


@dataclass(frozen=True, slots=True)
class BundleProject:
    """A project opened for bundle operations: config, jobs, bundle file and target."""

    config: ProjectConfig
    jobs: tuple[JobDefinition, ...]
    registry: Registry
    bundle_file: BundleFile | None
    target: str | None
    variables: Mapping[str, Any] = field(default_factory=dict)

    @property
    def target_mode(self) -> TargetMode | None:
        if self.bundle_file is None or self.target is None:
            return None
        return target_mode(self.bundle_file, self.target)

    def options(self, *, wheel_prefix: str = "./") -> CodegenOptions:
        return options_from_config(
            self.config, target=self.target, variables=self.variables, wheel_prefix=wheel_prefix
        )


@dataclass(frozen=True, slots=True)
class ValidationReport:
    """What ``validate_project`` found: jobs checked, one line per problem, and the
    JSON schema used (``None``: the schema check was skipped)."""

    jobs: int
    problems: tuple[str, ...]
    schema: Path | None

    @property
    def ok(self) -> bool:
        return not self.problems


def open_project(
    project: Path | None, pipelines: Sequence[str] = (), target: str | None = None
) -> BundleProject:
    """Read the configuration, check the target, import the pipelines.

    Raises:
        UsageError: no pipelines configured, unknown target, unreadable config.
        PipelineImportError: a pipeline module fails to import.
    """
    config, registry = load_project(project, pipelines)
    bundle_path = find_bundle_file(config.root)
    bundle_file = read_bundle_file(bundle_path) if bundle_path is not None else None
    resolved = bundle_file.resolve_target(target) if bundle_file is not None else target
    variables = bundle_file.variables_for(resolved) if bundle_file is not None else {}
    jobs = tuple(job for job in registry if _in_modules(job.fn.__module__, config.pipelines))
    return BundleProject(config, jobs, registry, bundle_file, resolved, variables)


def _in_modules(module: str, modules: Sequence[str]) -> bool:
    return any(module == name or module.startswith(f"{name}.") for name in modules)


def generate_project(project: BundleProject, out_dir: Path | None = None) -> list[Path]:
    """Write ``<out_dir>/<job>.job.yml`` for every job (default ``resources/``), or
    nothing unless every job generates and passes the typed load; with
    ``[tool.dbxdec.app]``, also ``<out_dir>/<app>.app.yml`` and the app's ``app.yaml`` and
    ``requirements.txt`` at the project root (:mod:`.app_resource`).

    Raises:
        BundleValidationError: a definition or generated job has problems.
        UsageError: the app's files cannot be written (nothing is written).
    """
    out = (out_dir or project.config.root / "resources").resolve()
    prefix = os.path.relpath(project.config.root.resolve(), out).replace(os.sep, "/")
    options = project.options(wheel_prefix="./" if prefix == "." else f"{prefix}/")
    options = replace(options, notebook_dir=f"./{NOTEBOOK_FOLDER}")  # beside the job files
    jobs = deployable_jobs(project, options, nothing="nothing was written")
    notebooks = all_notebooks(jobs, options)
    app = plan_app(  # [tool.dbxdec.app]: the backfill app as a Databricks App
        project.config,
        project.options(),
        target=project.target,
        source_code_path=relative_source(project.config.root, out),
        jobs=list(jobs),
    )
    return [
        *write_job_files(jobs, out),
        *write_notebook_files(notebooks, out / NOTEBOOK_FOLDER),
        *write_app(project.config, out, app),
    ]


def deployable_jobs(
    project: BundleProject, options: CodegenOptions, *, nothing: str
) -> dict[str, dict[str, Any]]:
    """Every job the bundle deploys (monitors and the controller included), by resource
    name, each checked by the typed load.

    Raises:
        BundleValidationError: a definition or generated job has problems (the message
            ends with ``nothing``: what was not done).
    """
    jobs, problems = _generate(project, options)
    for name, settings in jobs.items():
        problems.extend(str(p) for p in typed_problems(name, settings))
    if problems:
        more = f" (and {len(problems) - 1} more; run dbxdec validate)" if len(problems) > 1 else ""
        raise BundleValidationError(f"{problems[0]}{more}; {nothing}")
    return jobs


def _generate(
    project: BundleProject, options: CodegenOptions
) -> tuple[dict[str, dict[str, Any]], list[str]]:
    files = _module_files(project.config.pipelines)
    problems = [str(d) for d in project.registry.check() if any(f in str(d) for f in files)]
    if not project.jobs and not problems:
        raise UsageError(
            f"no @job definitions found in {', '.join(project.config.pipelines)} "
            "(check [tool.dbxdec] pipelines or --pipelines)"
        )
    jobs: dict[str, dict[str, Any]] = {}
    for job in project.jobs:
        try:
            jobs[job.name] = job_resource(job, options=options)
            monitor = monitor_job_resource(job, options)
            if monitor is not None:  # Deadline(monitor=...): <job>__deadline_monitor beside it
                if any(other.name == monitor["name"] for other in project.jobs):
                    raise DefinitionError(
                        f"the deadline monitor job {monitor['name']!r} has the name of a job",
                        job=job.name,
                        location=str(job.source),
                    )
                jobs[monitor["name"]] = monitor
        except DbxdecError as exc:
            if not any(exc.render() in problem for problem in problems):
                problems.append(exc.render())
    try:  # a job with a backfill: the controller of detached backfills beside it
        controller = controller_job_resource(project.jobs, options, project.config.settings)
        if controller is not None and controller["name"] in jobs:
            raise UsageError(f"a job is named {controller['name']!r}, dbxdec's controller job")
    except DbxdecError as exc:
        problems.append(exc.render())
        controller = None
    if controller is not None:
        jobs[controller["name"]] = controller
    mode = project.target_mode
    too_many = (tag_count_problem(mode, name, settings) for name, settings in jobs.items())
    problems.extend(problem for problem in too_many if problem is not None)
    return jobs, problems


def _module_files(modules: Sequence[str]) -> set[str]:
    return {
        str(module.__file__)
        for name, module in list(sys.modules.items())
        if getattr(module, "__file__", None) and _in_modules(name, modules)
    }


def validate_project(
    project: BundleProject,
    schema: Path | None = None,
    *,
    service_principal: bool = False,
    mode_checks: bool = True,
) -> ValidationReport:
    """Check definitions and generated jobs: typed load, JSON schema (default:
    ``../shared/schemas/bundle_jsonschema.json`` beside the project, when present), bundle
    variables and, with ``mode_checks``, the target's mode rules for a human deployer
    (or a ``service_principal``).

    Raises:
        UsageError: ``schema`` was given but cannot be read.
    """
    if schema is not None and not schema.is_file():
        raise UsageError(f"--schema {schema}: no such file")
    if schema is None:
        candidate = default_schema_path(project.config.root)
        schema = candidate if candidate.is_file() else None
    validator = SchemaValidator(schema) if schema is not None else None
    jobs, problems = _generate(project, project.options())
    declared = set(project.bundle_file.variables) if project.bundle_file is not None else None
    for name, settings in jobs.items():
        problems.extend(str(p) for p in typed_problems(name, settings))
        if validator is not None:
            problems.extend(str(p) for p in validator.problems(name, settings))
        if declared is not None:
            problems.extend(str(p) for p in variable_problems(name, settings, declared))
    app = project.config.app
    if validator is not None and app is not None:  # [tool.dbxdec.app], as generated
        settings = app_resource(app, source_code_path=".", jobs=list(jobs))
        document = {"resources": {"apps": {app.resource_key: settings}}}
        problems.extend(f"app {app.name!r}: {p}" for p in validator.document_problems(document))
    mode = project.target_mode
    if mode_checks and mode is not None:
        problems.extend(mode_problems(mode, jobs, service_principal=service_principal))
    return ValidationReport(len(project.jobs), tuple(problems), schema)


def databricks_cli() -> str:
    """Path of the ``databricks`` executable.

    Raises:
        UsageError: it is not on ``PATH``; the message says how to install it.
    """
    found = shutil.which("databricks")
    if found is None:
        raise UsageError(f"the Databricks CLI ('databricks') is not on PATH: {INSTALL_HINT}")
    return found


def deploy_project(
    project: BundleProject,
    *,
    executable: str,
    profile: str | None = None,
    schema: Path | None = None,
    extra: Sequence[str] = (),
) -> None:
    """Validate, write YAML resources when the bundle does not load them itself, then run
    ``databricks bundle deploy`` (its output goes straight to the terminal).

    Raises:
        UsageError: no bundle, or the framework wheel is missing or of another version.
        BundleValidationError: nothing is deployed.
        DatabricksCliFailed: the Databricks CLI failed (its exit code is the error's).
    """
    report = validate_project(project, schema, mode_checks=False)
    if not report.ok:
        raise BundleValidationError(
            f"{report.problems[0]} ({counted(len(report.problems), 'problem')}; "
            "run dbxdec validate); nothing was deployed"
        )
    if project.bundle_file is None:
        raise UsageError(
            f"no databricks.yml in {project.config.root}: dbxdec deploy deploys a Databricks "
            "bundle (dbxdec init creates one)"
        )
    options = project.options()
    if not is_framework(options.package_name):
        check_framework_wheel(project.config.root, options.framework_wheel)
    if not project.bundle_file.uses_load_resources:
        generate_project(project)
    command = [executable, "bundle", "deploy"]
    command += ["--target", project.target] if project.target is not None else []
    command += [*(["--profile", profile] if profile is not None else []), *extra]
    code = subprocess.run(command, cwd=project.config.root, check=False).returncode
    if code != 0:
        raise DatabricksCliFailed(command, code)


Compute = Literal["serverless", "classic"]
COMPUTE_CHOICES: tuple[Compute, ...] = ("serverless", "classic")
TEMPLATE_SUFFIX = ".tmpl"
_PROJECT_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_\-]{0,63}")
_COMMON = "project"
PYSPARK_PIN = "pyspark==4.0.1"
DELTA_SPARK_PIN = "delta-spark==4.0.1"
"""The Spark pair a new project's ``dev`` extra pins (dbxdec's own ``spark`` extra too)."""


@dataclass(frozen=True, slots=True)
class ProjectNames:
    """A new project's distribution (and bundle) name and package name:
    ``sales-etl``, ``sales_etl``."""

    project: str
    package: str

    @classmethod
    def of(cls, name: str) -> ProjectNames:
        """Names from the name given to ``dbxdec init``.

        Raises:
            UsageError: the name is not a valid project name.
        """
        if _PROJECT_NAME.fullmatch(name) is None:
            raise UsageError(
                f"invalid project name {name!r}: expected a letter, then up to 63 letters, "
                "digits, '_' or '-'"
            )
        return cls(project=name, package=name.replace("-", "_").lower())


def templates_root() -> Path:
    """The template folder: package data when installed, else the source tree's ``templates/``.

    Raises:
        UsageError: neither exists (a broken installation).
    """
    packaged = Path(str(resources.files("databricks_bundle_decorators"))) / "templates"
    source_tree = Path(__file__).resolve().parents[3] / "templates"
    for candidate in (packaged, source_tree):
        if (candidate / _COMMON).is_dir():
            return candidate
    raise UsageError(
        f"dbxdec's project templates are missing (looked in {packaged} and {source_tree}); "
        "reinstall dbxdec"
    )


def render_plan(
    names: ProjectNames, compute: Compute, *, version: str, templates: Path | None = None
) -> dict[Path, str]:
    """Relative path -> content of every file of the new project, in path order."""
    if compute not in COMPUTE_CHOICES:
        raise UsageError(f"compute must be one of {', '.join(COMPUTE_CHOICES)}, got {compute!r}")
    root = templates or templates_root()
    replacements = {
        "__PROJECT_NAME__": names.project,
        "__PACKAGE__": names.package,
        "__DBXDEC_VERSION__": version,
        "__DBXDEC_WHEEL__": framework_wheel_name(version),
        "__PYSPARK_PIN__": PYSPARK_PIN,
        "__DELTA_SPARK_PIN__": DELTA_SPARK_PIN,
    }
    plan: dict[Path, str] = {}
    for layer in (_COMMON, compute):
        base = root / layer
        for source in sorted(p for p in base.rglob(f"*{TEMPLATE_SUFFIX}") if p.is_file()):
            relative = source.relative_to(base).as_posix()[: -len(TEMPLATE_SUFFIX)]
            target = Path(relative.replace("__package__", names.package))
            text = source.read_text(encoding="utf-8")
            for placeholder, value in replacements.items():
                text = text.replace(placeholder, value)
            plan[target] = text
    return dict(sorted(plan.items()))


def init_project(
    destination: Path,
    name: str,
    *,
    compute: Compute = "serverless",
    force: bool = False,
    version: str,
    framework_wheel: Callable[[Path], Path] = write_framework_wheel,
    templates: Path | None = None,
) -> list[Path]:
    """Create project ``name`` in ``destination`` (the rendered templates and dbxdec's
    wheel in ``wheels/``); return the files written.

    Args:
        version: The dbxdec version the project pins.
        framework_wheel: Writes dbxdec's wheel of that version into the folder it is
            given and returns its path; called once the destination is known to be free.

    Raises:
        UsageError: bad name, a wheel of another version, or files exist and ``force``
            is false (nothing is written).
    """
    names = ProjectNames.of(name)
    plan = render_plan(names, compute, version=version, templates=templates)
    wheel = Path(WHEELS_DIR, framework_wheel_name(version))
    existing = [path for path in (*plan, wheel) if (destination / path).exists()]
    if existing and not force:
        listing = ", ".join(str(p) for p in existing[:3]) + (" ..." if len(existing) > 3 else "")
        raise UsageError(
            f"{destination} already has {len(existing)} of the template's files ({listing}); "
            "nothing was written (use --force to overwrite them)"
        )
    with tempfile.TemporaryDirectory(prefix="dbxdec-init-") as scratch:
        built = framework_wheel(Path(scratch))
        found = wheel_version(built)
        if found != version:
            held = f"dbxdec {found}" if found else "no dbxdec"
            raise UsageError(
                f"{built.name} is not dbxdec {version}'s wheel (it holds {held}); "
                "nothing was written"
            )
        copied = destination / wheel
        copied.parent.mkdir(parents=True, exist_ok=True)
        partial = copied.with_name(f".{copied.name}.partial")
        shutil.copyfile(built, partial)
        partial.replace(copied)
    written: list[Path] = []
    for relative, text in plan.items():
        path = destination / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        write_if_changed(path, text)
        written.append(path)
    written.append(copied)
    return written
