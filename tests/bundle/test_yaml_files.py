"""resources/<job>.job.yml files (bundle/yaml_files.py)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml

from databricks_bundle_decorators.bundle.yaml_files import HEADER, render_job, write_job_files

JOB: dict[str, Any] = {
    "name": "sales",
    "parameters": [{"name": "backfill_key", "default": ""}],
    "tasks": [
        {
            "task_key": "t",
            "python_wheel_task": {
                "package_name": "p",
                "entry_point": "dbxdec-run",
                "named_parameters": {"backfill_key": "{{job.parameters.backfill_key}}"},
            },
        }
    ],
}


def test_a_file_holds_resources_jobs_name_and_reads_back_equal() -> None:
    text = render_job("sales", JOB)
    assert text.startswith(HEADER)
    assert yaml.safe_load(text) == {"resources": {"jobs": {"sales": JOB}}}
    assert text.index("name: sales") < text.index("parameters:") < text.index("tasks:")


def test_files_are_byte_identical_and_untouched_when_unchanged(tmp_path: Path) -> None:
    [path] = write_job_files({"sales": JOB}, tmp_path)
    first = path.read_bytes()
    os.utime(path, (0, 0))
    write_job_files({"sales": dict(JOB)}, tmp_path)
    assert path.read_bytes() == first
    assert path.stat().st_mtime == 0
    assert oct(path.stat().st_mode & 0o777) == oct(0o644)


def test_stale_generated_files_go_and_other_files_stay(tmp_path: Path) -> None:
    write_job_files({"old": JOB, "sales": JOB}, tmp_path)
    handwritten = tmp_path / "manual.job.yml"
    handwritten.write_text("resources: {}\n", encoding="utf-8")
    written = write_job_files({"sales": JOB}, tmp_path)
    assert written == [tmp_path / "sales.job.yml"]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["manual.job.yml", "sales.job.yml"]
