"""Validation of generated jobs, each problem naming job, task and field: the strict typed
load of ``databricks-bundles``, the bundle JSON schema (``--schema PATH``, else ``databricks
bundle schema`` cached per CLI version, else none) and undeclared bundle variables."""

from __future__ import annotations

import importlib
import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from ..errors import UsageError
from .bundle_file import VARIABLE_REFERENCE
from .typed import typed_job

TASK_LIST = "tasks"


@dataclass(frozen=True, slots=True)
class Problem:
    """One validation problem: ``field`` is a dotted path inside the job (or ``task``),
    ``check`` the check that found it (``typed``, ``schema`` or ``variables``)."""

    job: str
    task: str | None
    field: str
    message: str
    check: str

    def __str__(self) -> str:
        where = f"job {self.job!r}"
        if self.task is not None:
            where += f", task {self.task!r}"
        if self.field:
            where += f", field {self.field!r}"
        return f"{where}: {self.message}"


def typed_problems(name: str, job: Mapping[str, Any]) -> list[Problem]:
    """Problems of a strict typed load of ``job`` with ``databricks.bundles.jobs.Job``
    (on failure, each setting is loaded alone to name the field at fault)."""
    from databricks.bundles.jobs import Job, Task

    try:
        typed_job(_copy(job))  # what Job.from_dict gives, built directly
        return []
    except Exception:
        pass  # located field by field below
    problems: list[Problem] = []
    for key, value in job.items():
        if key == TASK_LIST and isinstance(value, list):
            for index, task in enumerate(value):
                problems.extend(_task_problems(Task, name, index, task))
            continue
        error = _load_error(Job, {key: _copy(value)})
        if error is not None:
            problems.append(Problem(name, None, key, error, "typed"))
    if not problems:
        error = _load_error(Job, _copy(job))
        problems.append(Problem(name, None, "", error or "the job does not load", "typed"))
    return problems


def _task_problems(task_type: Any, job: str, index: int, task: object) -> Iterator[Problem]:
    if not isinstance(task, Mapping):
        yield Problem(job, None, f"tasks[{index}]", "a task must be a mapping", "typed")
        return
    key = str(task.get("task_key", f"tasks[{index}]"))
    for field, value in task.items():
        if field == "task_key":
            continue
        error = _load_error(task_type, {"task_key": key, field: _copy(value)})
        if error is not None:
            yield Problem(job, key, field, error, "typed")


def _load_error(model: Any, value: dict[str, Any]) -> str | None:
    try:
        model.from_dict(value)
    except Exception as exc:  # any failure: its message is the diagnostic
        return str(exc).replace("Unexpected field", "unknown setting") or type(exc).__name__
    return None


def _copy(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {key: _copy(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_copy(item) for item in value]
    return value


def default_schema_path(root: Path) -> Path:
    return root.parent / "shared" / "schemas" / "bundle_jsonschema.json"


class SchemaValidator:
    """Validates jobs against the bundle JSON schema, whose ``\\p{L}`` patterns are
    evaluated with the ``regex`` module (Python's ``re`` lacks them).

    Raises:
        UsageError: the schema cannot be read, or ``jsonschema``/``regex`` are missing.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._validator = _compiled_validator(str(path.resolve()))

    def problems(self, name: str, job: Mapping[str, Any]) -> list[Problem]:
        """Leaf errors of ``job`` embedded in a bundle document, by job/task/field."""
        document = {"resources": {"jobs": {name: job}}}
        found: dict[tuple[str | None, str, str], Problem] = {}
        for error in self._validator.iter_errors(document):
            for path, message in _leaves(error):
                problem = _problem(name, job, path, message)
                found.setdefault((problem.task, problem.field, problem.message), problem)
        return list(found.values())

    def document_problems(self, document: Mapping[str, Any]) -> list[str]:
        """Leaf errors of a whole bundle ``document`` (any resource kind), each
        ``dotted.path: message``, sorted."""
        return sorted(
            {
                f"{'.'.join(str(part) for part in path)}: {message}"
                for error in self._validator.iter_errors(dict(document))
                for path, message in _leaves(error)
            }
        )


@lru_cache(maxsize=4)
def _compiled_validator(path: str) -> Any:
    try:  # optional dependencies, needed only for the schema check
        jsonschema = importlib.import_module("jsonschema")
        regex = importlib.import_module("regex")
    except ImportError as exc:
        raise UsageError(
            f"--schema needs the {exc.name!r} package: pip install jsonschema regex"
        ) from None
    try:
        schema = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise UsageError(f"cannot read the bundle schema {path}: {exc}") from None

    def pattern(validator: Any, expected: str, instance: Any, schema: Any) -> Iterator[Any]:
        if isinstance(instance, str) and regex.search(expected, instance) is None:
            yield jsonschema.ValidationError(f"{instance!r} does not match {expected!r}")

    base = jsonschema.Draft202012Validator
    validator_type = jsonschema.validators.extend(base, {"pattern": pattern})
    return validator_type(schema)


def _leaves(error: Any) -> Iterator[tuple[list[Any], str]]:
    """``(path, message)`` of the errors that say what is wrong, below ``oneOf`` branches.

    Every field is ``oneOf: [<type>, <${...} reference>]``: a branch failing only on the
    JSON type is dropped; when only reference patterns are left, one message names the type.
    """
    if not error.context:
        yield list(error.absolute_path), error.message
        return
    by_branch: dict[int, list[Any]] = {}
    for sub in error.context:
        by_branch.setdefault(sub.schema_path[0] if sub.schema_path else 0, []).append(sub)
    relevant: list[Any] = []
    expected: list[str] = []
    for subs in by_branch.values():
        mismatch = [s for s in subs if s.validator == "type" and not s.relative_path]
        if mismatch:
            expected.extend(str(s.validator_value) for s in mismatch)
        else:
            relevant.extend(subs)
    if not relevant or all(_is_reference_pattern(s) for s in relevant):
        wanted = " or ".join(dict.fromkeys(expected)) or "another value"
        yield list(error.absolute_path), f"{error.instance!r} is not of type {wanted}"
        return
    for sub in relevant:
        if not _is_reference_pattern(sub):
            yield from _leaves(sub)


def _is_reference_pattern(error: Any) -> bool:
    return error.validator == "pattern" and str(error.validator_value).startswith("\\$\\{")


def _problem(name: str, job: Mapping[str, Any], path: list[Any], message: str) -> Problem:
    inner = path[3:]  # skip resources.jobs.<name>
    task: str | None = None
    tasks = job.get(TASK_LIST)
    if len(inner) >= 2 and inner[0] == TASK_LIST and isinstance(inner[1], int):
        if isinstance(tasks, list) and inner[1] < len(tasks) and isinstance(tasks[inner[1]], dict):
            task = str(tasks[inner[1]].get("task_key", inner[1]))
        inner = inner[2:]
    field = ""
    for part in inner:
        field += f"[{part}]" if isinstance(part, int) else (f".{part}" if field else str(part))
    return Problem(name, task, field, message, "schema")


def variable_problems(name: str, job: Mapping[str, Any], declared: set[str]) -> list[Problem]:
    """``${var.x}`` references in ``job`` to variables ``databricks.yml`` does not declare."""
    problems: list[Problem] = []
    for field, text in _strings(job, ""):
        for match in VARIABLE_REFERENCE.finditer(text):
            if match.group(1) not in declared:
                message = f"references undeclared bundle variable {match.group(1)!r}"
                problems.append(Problem(name, None, field, message, "variables"))
    return problems


def _strings(value: Any, path: str) -> Iterator[tuple[str, str]]:
    if isinstance(value, str):
        yield path, value
    elif isinstance(value, Mapping):
        for key, item in value.items():
            yield from _strings(item, f"{path}.{key}" if path else str(key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _strings(item, f"{path}[{index}]")


DATABRICKS_CLI = "databricks"
CLI_TIMEOUT_SECONDS = 60.0
_VERSION = re.compile(r"v?(\d+\.\d+\.\d+[\w.+-]*)")


@dataclass(frozen=True, slots=True)
class SchemaSource:
    """The schema file chosen (``None``: none at hand), the report's line saying where
    it came from, and a line about a failing CLI that had to be skipped."""

    path: Path | None
    description: str
    warning: str | None = None


NO_SCHEMA = (
    "no bundle schema at hand: install the Databricks CLI or pass --schema PATH; "
    "skipped the schema check"
)


def cache_dir() -> Path:
    """``$XDG_CACHE_HOME/dbxdec/bundle-schema`` (default ``~/.cache/...``)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "dbxdec" / "bundle-schema"


def find_schema(explicit: Path | None, timeout: float = CLI_TIMEOUT_SECONDS) -> SchemaSource:
    """The bundle schema to check against (the module docstring gives the order)."""
    if explicit is not None:
        return SchemaSource(explicit, f"checked against the bundle schema of --schema {explicit}")
    executable = shutil.which(DATABRICKS_CLI)
    if executable is None:
        return SchemaSource(None, NO_SCHEMA)
    try:
        return _from_cli(executable, timeout)
    except CliSchemaError as exc:
        return SchemaSource(None, NO_SCHEMA, warning=f"Databricks CLI: {exc}; {NO_SCHEMA}")


class CliSchemaError(Exception):
    """The Databricks CLI did not give a usable version or schema."""


def _from_cli(executable: str, timeout: float) -> SchemaSource:
    version_text = _run(executable, ["--version"], timeout)
    match = _VERSION.search(version_text)
    if match is None:
        raise CliSchemaError(f"'databricks --version' printed no version: {version_text[:80]!r}")
    version = match.group(1)
    label = f"checked against the bundle schema of Databricks CLI v{version}"
    cached = cache_dir() / f"{version}.json"
    if _is_schema(cached):
        return SchemaSource(cached, f"{label} (cached)")
    text = _run(executable, ["bundle", "schema"], timeout)
    try:
        schema = json.loads(text)
    except ValueError:
        raise CliSchemaError("'databricks bundle schema' printed no JSON") from None
    if not isinstance(schema, dict):
        raise CliSchemaError("'databricks bundle schema' printed no JSON object")
    try:
        cached.parent.mkdir(parents=True, exist_ok=True)
        partial = cached.with_suffix(".json.tmp")
        partial.write_text(text, encoding="utf-8")
        partial.replace(cached)
    except OSError:  # an unwritable cache only costs a refetch next time
        raise CliSchemaError(f"cannot write the schema cache {cached}") from None
    return SchemaSource(cached, label)


def _is_schema(path: Path) -> bool:
    try:
        return isinstance(json.loads(path.read_text(encoding="utf-8")), dict)
    except (OSError, ValueError):
        return False


def _run(executable: str, args: list[str], timeout: float) -> str:
    command = " ".join([DATABRICKS_CLI, *args])
    try:
        done = subprocess.run(
            [executable, *args], capture_output=True, text=True, timeout=timeout, check=False
        )
    except subprocess.TimeoutExpired:
        raise CliSchemaError(f"'{command}' gave no answer within {timeout:g} s") from None
    except OSError as exc:
        raise CliSchemaError(f"'{command}' could not run: {exc}") from None
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or [""])[-1][:120]
        raise CliSchemaError(f"'{command}' exited with {done.returncode}: {last}".rstrip(": "))
    return done.stdout
