"""Where ``dbxdec validate`` gets the bundle JSON schema: ``--schema PATH``; else
``databricks bundle schema``, cached per CLI version under :func:`cache_dir`; else none.
A CLI that fails, prints garbage or hangs is reported in one line and treated as absent.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

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
