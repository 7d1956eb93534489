"""``dbxdec init``: a new project rendered from ``templates/`` (``project/``, with
``serverless/`` or ``classic/`` laid over it; placeholders in ``templates/README.md``)."""

from __future__ import annotations

import re
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Literal

from ..errors import UsageError
from .framework_wheel import (
    WHEELS_DIR,
    framework_wheel_name,
    wheel_version,
    write_framework_wheel,
)
from .yaml_files import write_if_changed

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
