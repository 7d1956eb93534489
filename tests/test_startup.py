"""Start-up cost: a local command never loads databricks-sdk (about 0.8 s of imports)."""

from __future__ import annotations

import subprocess
import sys


def test_the_cli_starts_without_importing_databricks_sdk() -> None:
    code = (
        "import sys, databricks_bundle_decorators.cli.main; "
        "print(sorted(m for m in sys.modules if m.startswith('databricks.sdk')))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
