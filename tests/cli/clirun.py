"""Run the ``dbxdec`` entry point in-process, as the CLI tests do."""

from __future__ import annotations

import stat
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from databricks_bundle_decorators.cli.main import main
from tests.launch.conftest import BACKFILL_PARAMS

NIGHTLY_PARAMS = {**BACKFILL_PARAMS, "source": "x"}
FAST = ("--poll-interval", "0.01", "--retry-delay", "0.01")


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    """Run ``dbxdec argv`` in-process; return exit code, stdout, stderr."""
    with pytest.raises(SystemExit) as exited:
        main(argv)
    captured = capsys.readouterr()
    code = exited.value.code
    return (code if isinstance(code, int) else 1), captured.out, captured.err


class Cli:
    """``dbxdec ARGS --project P`` in-process: ``(exit code, stdout, stderr)``."""

    def __init__(self, project: Path, capsys: pytest.CaptureFixture[str]) -> None:
        self.project = project
        self.capsys = capsys

    def __call__(self, *args: str) -> tuple[int, str, str]:
        self.capsys.readouterr()
        return run([*args, "--project", str(self.project)], self.capsys)


def assert_one_error_line(err: str) -> str:
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), err
    return lines[0]


def stand_in_databricks(bin_dir: Path, record: Path, exit_code: int) -> None:
    """A ``databricks`` executable in ``bin_dir`` that records its argv and working
    directory in ``record`` and exits with ``exit_code``."""
    bin_dir.mkdir()
    script = bin_dir / "databricks"
    script.write_text(
        f"#!{sys.executable}\n"
        "import json, os, sys\n"
        f"with open({str(record)!r}, 'w') as f:\n"
        "    json.dump({'argv': sys.argv[1:], 'cwd': os.getcwd()}, f)\n"
        "print('Deploying resources... (stand-in)')\n"
        f"sys.exit({exit_code})\n",
        encoding="utf-8",
    )
    script.chmod(script.stat().st_mode | stat.S_IXUSR)


def run_project(tmp_path: Path) -> Path:
    """A project in ``tmp_path`` with the CLI tests' pipelines: ``dbxdec run --local``
    records its runs in the project (.dbxdec/runs), so tests write nothing into the
    repository."""
    root = tmp_path / "runproj"
    root.mkdir()
    (root / "pyproject.toml").write_text(
        '[project]\nname = "runproj"\nversion = "0.1"\n\n'
        '[tool.dbxdec]\npipelines = ["tests.cli.run_pipeline"]\n'
    )
    return root


def write_run_project(root: Path) -> Path:
    """A project at ``root`` whose pipelines are :mod:`tests.cli.run_pipeline`."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "pyproject.toml").write_text(
        '[project]\nname = "runproj"\nversion = "0.1"\n\n'
        '[tool.dbxdec]\npipelines = ["tests.cli.run_pipeline"]\n'
    )
    return root


@contextmanager
def own_registry(*modules: str) -> Iterator[None]:
    """The process-wide registry's jobs and diagnostics put back after the block, and
    ``modules`` (and their submodules) forgotten, so a test's pipelines stay its own."""
    from databricks_bundle_decorators.definitions.registry import default_registry

    jobs, diagnostics = dict(default_registry._jobs), list(default_registry._diagnostics)
    try:
        yield
    finally:
        default_registry._jobs.clear()
        default_registry._jobs.update(jobs)
        default_registry._diagnostics[:] = diagnostics
        for name in [m for m in sys.modules if m.split(".")[0] in modules]:
            del sys.modules[name]
