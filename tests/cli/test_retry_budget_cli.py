"""``dbxdec backfill --retries N --retry-for DURATION`` end to end against the emulator:
the summary says which budget stopped a key, ``--resume`` keeps both budgets, and bad
values are one line naming the option."""

from __future__ import annotations

from databricks_bundle_decorators.launch.ledger.ledger import list_ledgers
from databricks_bundle_decorators.testing import JobsEmulator
from tests.launch.conftest import keys_of

from .clirun import FAST, NIGHTLY_PARAMS, Cli, assert_one_error_line

DAYS = ["2024-01-01", "2024-01-02", "2024-01-03"]


def test_the_summary_names_the_spent_budget_and_resume_keeps_both(
    dbxdec: Cli, emu: JobsEmulator
) -> None:
    job_id = emu.create_job("nightly", parameters=NIGHTLY_PARAMS, max_concurrent_runs=10)
    emu.set_outcome(DAYS[1], result="FAILED", message="table locked")

    code, out, _ = dbxdec(
        "backfill", "nightly", "--start", DAYS[0], "--end", DAYS[2],
        "--retries", "2", "--retry-for", "2h", *FAST,
    )  # fmt: skip

    assert code == 1
    assert keys_of(emu, job_id).count(DAYS[1]) == 3
    # the error once, in its progress line; the summary points at it (issue 25)
    assert "- table locked; retries spent: 2 of 2" in out
    assert f"FAILED {DAYS[1]}: the error above" in out
    rerun = next(line for line in out.splitlines() if line.startswith("Rerun the failed keys: "))
    assert "--retries 2 --retry-for 7200s" in rerun  # the printed rerun command keeps both
    (ledger,) = list_ledgers(dbxdec.project, "nightly")
    assert (ledger.options.retries, ledger.options.retry_for) == (2, 7200.0)

    code, out, _ = dbxdec("backfill", "--resume", ledger.id, "--poll-interval", "0.01")

    assert code == 1
    assert keys_of(emu, job_id).count(DAYS[1]) == 6  # fresh budgets: 1 attempt + 2 retries
    (resumed,) = list_ledgers(dbxdec.project, "nightly")
    assert (resumed.options.retries, resumed.options.retry_for) == (2, 7200.0)
    assert resumed.slices[1].attempts[-1].gave_up == "retries spent: 2 of 2"


def test_bad_retry_for_values_are_one_line_naming_the_option(dbxdec: Cli) -> None:
    for value in ("soon", "10x", "0m", "-5s"):
        code, _, err = dbxdec("backfill", "nightly", "--keys", DAYS[0], "--retry-for", value)
        assert code == 2
        assert assert_one_error_line(err).startswith(
            f"Error: Invalid value for '--retry-for': '{value}': expected a positive duration"
        )

    code, _, err = dbxdec("backfill", "nightly", "--keys", DAYS[0], "--retry-for", "10m")
    assert code == 2
    assert assert_one_error_line(err) == (
        "Error: --retry-for 10m bounds the time of --retries: add --retries N (the most "
        "retries per key within that time)"
    )
