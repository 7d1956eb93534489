"""Check reports read back from ``runs/get-output`` logs are counted once: serverless task
logs may hold other tasks' output, so a report names the run, task and task run that
printed it, and the reader keeps, per task run, only its own reports, once."""

from __future__ import annotations

import pytest

from databricks_bundle_decorators.backfill.check_report import CheckReport, CheckResult
from databricks_bundle_decorators.launch.backends.task_output import read_check_results
from databricks_bundle_decorators.runtime.checks.check_results import print_check_report
from databricks_bundle_decorators.testing import JobsEmulator

from .conftest import BACKFILL_PARAMS

TASKS = [{"task_key": "clean"}, {"task_key": "load"}]


def _run(emu: JobsEmulator) -> tuple[int, int, int]:
    job_id = emu.create_job("nightly", parameters=BACKFILL_PARAMS, settings={"tasks": TASKS})
    w = emu.workspace_client()
    run_id = w.jobs.run_now(job_id, job_parameters={"backfill_key": "2024-01-01"}).run_id
    emu.wait_until_idle()
    clean, load = emu.runs(job_id)[0].task_run_ids
    return int(run_id), clean, load


def _result(check: str, task: str, run: str) -> CheckResult:
    return CheckResult(check, "2024-01-01", 0.0, "= 0", True, task, run)


def test_a_report_duplicated_in_the_logs_is_counted_once(emu: JobsEmulator) -> None:
    run_id, clean, load = _run(emu)
    run = f"{run_id}-0"
    cleaned = CheckReport((_result("unique(id)", "clean", run),), run, "clean", str(clean))
    loaded = CheckReport((_result("not_null(id)", "load", run),), run, "load", str(load))
    # clean's logs hold its report twice (a retried print, a log shipped twice) and,
    # as serverless logs may, load's report; load's logs hold its own and clean's.
    emu.set_task_logs(clean, "\n".join([cleaned.to_line(), loaded.to_line(), cleaned.to_line()]))
    emu.set_task_logs(load, "\n".join([cleaned.to_line(), loaded.to_line()]))

    results = read_check_results(emu.workspace_client(), run_id)

    assert results == (cleaned.results[0], loaded.results[0])


def test_reports_of_another_run_or_attempt_are_ignored(emu: JobsEmulator) -> None:
    run_id, clean, load = _run(emu)
    run = f"{run_id}-0"
    own = CheckReport((_result("unique(id)", "clean", run),), run, "clean", str(clean))
    earlier_attempt = CheckReport((_result("unique(id)", "clean", run),), run, "clean", "1")
    other_run = CheckReport((_result("unique(id)", "clean", "77-0"),), "77-0", "clean", "")
    emu.set_task_logs(clean, "\n".join([other_run.to_line(), earlier_attempt.to_line()]))
    emu.set_task_logs(load, "no checks")
    assert read_check_results(emu.workspace_client(), run_id) == ()

    emu.set_task_logs(clean, "\n".join([earlier_attempt.to_line(), own.to_line()]))
    assert read_check_results(emu.workspace_client(), run_id) == own.results


def test_an_unnamed_report_counts_once_for_the_task_whose_logs_hold_it(
    emu: JobsEmulator,
) -> None:
    run_id, clean, load = _run(emu)
    legacy = CheckReport((_result("unique(id)", "clean", f"{run_id}-0"),))
    assert "task_run_id" not in legacy.to_line()
    emu.set_task_logs(clean, f"{legacy.to_line()}\n{legacy.to_line()}\n")
    emu.set_task_logs(load, "")
    assert read_check_results(emu.workspace_client(), run_id) == legacy.results


def test_a_task_prints_its_report_named_by_run_task_and_task_run(
    capsys: pytest.CaptureFixture[str],
) -> None:
    result = _result("unique(id)", "clean", "5001-0")
    print_check_report([result], run="5001-0", task="clean", task_run_id="900000001")
    (report,) = CheckReport.from_lines(capsys.readouterr().out)
    assert report.identity == ("5001-0", "clean", "900000001")
    assert report.is_of("5001", "clean", "900000001")
    assert not report.is_of("5001", "clean", "900000002")


def test_dbxdec_run_takes_the_task_run_id_apart_from_the_job_parameters() -> None:
    from databricks_bundle_decorators.runtime.entrypoint import parse_arguments

    base = ["--dbxdec_job=j", "--dbxdec_task=t", "--dbxdec_module=m", "--backfill_key=k"]
    parsed = parse_arguments([*base, "--dbxdec_task_run_id=900000001"])
    assert (parsed.task_run_id, parsed.params) == ("900000001", {"backfill_key": "k"})
    assert parse_arguments([*base, "--dbxdec_task_run_id={{task.run_id}}"]).task_run_id == ""
