"""``dbxdec app`` and the Databricks App entry when something is missing: one line, the
documented exit code."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.launch.conftest import write_project

HIDE_UVICORN = "import sys; sys.modules['uvicorn'] = None; "


def test_dbxdec_app_without_its_packages_says_what_to_install(tmp_path: Path) -> None:
    root = write_project(tmp_path / "project", "app_cli_pipelines")
    code = HIDE_UVICORN + (
        "from databricks_bundle_decorators.cli.main import main; "
        f"main(['app', '--local', '--project', {str(root)!r}])"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 3
    assert done.stderr.count("\n") == 1
    assert done.stderr.startswith(
        "Error: the app needs uvicorn: install dbxdec's wheel with its app extra"
    )


def test_the_databricks_app_entry_without_its_packages_says_what_to_list(tmp_path: Path) -> None:
    code = HIDE_UVICORN + (
        "import os; os.environ['DATABRICKS_APP_PORT'] = '8000'; "
        "from databricks_bundle_decorators.app.__main__ import main; sys.exit(main([]))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 3
    assert done.stderr.count("\n") == 1 and "uvicorn is missing" in done.stderr
