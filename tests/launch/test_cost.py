"""``dbxdec backfill cost``: a backfill's billing records read through the emulated
Statement Execution API (real HTTP, the SDK's ``statement_execution``) on local Spark,
netted and priced exactly (see ``cost_fixture`` for the records)."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from datetime import datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from databricks_bundle_decorators.launch.estimate.cost import backfill_cost
from databricks_bundle_decorators.testing import JobsEmulator
from tests.cli.clirun import FAST, NIGHTLY_PARAMS, Cli, assert_one_error_line, run

from .conftest import write_project
from .cost_fixture import (
    ALL_PURPOSE,
    BACKFILL_ID,
    LAST_END,
    LIST_PRICES,
    SLICES,
    USAGE,
    _usage,
    at,
    write_cost_ledger,
)

WAREHOUSE = "5e1f0b2a9c3d4e6f"
LATER = LAST_END + timedelta(days=30)


@pytest.fixture(scope="module")
def billing(spark: Any) -> Iterator[JobsEmulator]:
    """One emulator for the module, its warehouse reading the fixture's billing tables."""
    with JobsEmulator() as emulator:
        emulator.statements.add_warehouse(WAREHOUSE)
        emulator.statements.load_billing(spark, USAGE, LIST_PRICES)
        yield emulator


@pytest.fixture
def root(tmp_path: Path) -> Path:
    (tmp_path / "pyproject.toml").write_text("[tool.dbxdec]\npipelines = []\n")
    write_cost_ledger(tmp_path)
    return tmp_path


def _price(sku: str, end_time: datetime, currency: str) -> Decimal | None:
    for price in LIST_PRICES:
        end = price["price_end_time"]
        if (price["sku_name"], price["currency_code"]) == (sku, currency) and (
            price["price_start_time"] <= end_time and (end is None or end_time < end)
        ):
            return Decimal(price["pricing"]["effective_list"]["default"])
    return None


def _expected(run_ids: set[str]) -> tuple[Decimal, Decimal, Decimal]:
    """DBU, USD and EUR of the fixture's records of ``run_ids``: the plain sums."""
    rows = [
        u
        for u in USAGE
        if u["usage_metadata"]["job_run_id"] in run_ids and u["sku_name"] != ALL_PURPOSE
    ]
    dbu = sum((u["usage_quantity"] for u in rows), Decimal(0))
    money = [
        sum(
            (
                u["usage_quantity"] * (_price(u["sku_name"], u["usage_end_time"], c) or 0)
                for u in rows
            ),
            Decimal(0),
        )
        for c in ("USD", "EUR")
    ]
    return dbu, money[0], money[1]


def test_totals_are_the_netted_sums_exactly_and_keys_are_listed(
    billing: JobsEmulator, root: Path
) -> None:
    report = backfill_cost(
        BACKFILL_ID,
        root,
        warehouse_id=WAREHOUSE,
        client=billing.workspace_client(),
        now=LATER,
    )
    ledger_runs = {run for _, attempts in SLICES for run, *_ in attempts}
    dbu, usd, eur = _expected(ledger_runs)
    assert (dbu, usd, eur) == (Decimal("7.75"), Decimal("1.3325"), Decimal("0.945"))
    assert report.total.dbus == dbu
    assert report.total.cost == {"USD": usd, "EUR": eur}
    assert report.failed.dbus == Decimal("1.5")  # run 101, the failed first attempt
    per_key = {k.key: (k.usage.dbus, k.failed.dbus, k.allocated) for k in report.keys}
    assert per_key == {
        "2024-01-01": (Decimal("3.75"), Decimal("1.5"), False),  # 1.5 + (2.0 - 2.0 + 2.25)
        "2024-01-02": (Decimal("1.00"), Decimal(0), False),  # three serverless records
        "2024-01-03": (Decimal("1.5"), Decimal(0), True),
        "2024-01-04": (Decimal("1.5"), Decimal(0), True),
        "2024-01-05": (Decimal(0), Decimal(0), False),
        "2024-01-06": (Decimal(0), Decimal(0), False),
    }
    # the serverless run straddles a price change, and each record is priced by the price
    # in force when it ended (the sample queries' join), at its effective list price: 0.4
    # DBU ended before 12:00 at 0.35; 0.35 DBU (11:30-12:30) and 0.25 DBU ended after it,
    # at the promotional 0.30 (list 0.39)
    assert report.keys[1].usage.cost == {"USD": Decimal("0.32")}
    assert report.unattributed.dbus == Decimal("1.4")
    assert report.unattributed_reasons == {"all-purpose compute": 1, "no job_run_id": 1}
    assert report.runs_without_records == ("105",)
    assert report.record_types == {"ORIGINAL": 8, "RETRACTION": 1, "RESTATEMENT": 1}
    assert report.incomplete == ""
    # values travel as named parameters, never in the statement's text
    body = billing.statements.requests[-1]
    assert not any(run in body["statement"] for run in ledger_runs)
    params = {p["name"]: p.get("value") for p in body["parameters"]}
    assert params["run_ids"] == "101,102,103,104,105,106" and params["job_id"] == "42"
    # 11 rows (USD and EUR rows of the jobs-compute records) in chunks of 2: all read
    assert any("/result/chunks/" in path for _, path in billing.request_log)


def test_a_report_younger_than_the_billing_delay_is_flagged_incomplete(
    billing: JobsEmulator, root: Path
) -> None:
    report = backfill_cost(
        BACKFILL_ID,
        root,
        warehouse_id=WAREHOUSE,
        client=billing.workspace_client(),
        now=LAST_END + timedelta(hours=11, minutes=59),
    )
    assert "less than 12 hours ago" in report.incomplete
    assert report.to_json()["incomplete"] is True


@pytest.fixture
def workspace(billing: JobsEmulator, monkeypatch: pytest.MonkeyPatch) -> JobsEmulator:
    for name in list(os.environ):
        if name.startswith("DATABRICKS_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("DATABRICKS_HOST", billing.url)
    monkeypatch.setenv("DATABRICKS_TOKEN", "dapi-test")
    return billing


def test_the_cli_reports_json_with_decimal_strings_and_a_table(
    workspace: JobsEmulator,
    root: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("DATABRICKS_WAREHOUSE_ID", WAREHOUSE)  # the SDK's documented env
    code, out, err = run(
        ["backfill", "cost", BACKFILL_ID, "--json", "--project", str(root)], capsys
    )
    assert code == 0, err
    report = json.loads(out)
    assert report["total"] == {
        "dbus": "7.75",
        "cost": {"USD": "1.3325", "EUR": "0.945"},
        "failed_attempts": {"dbus": "1.5", "cost": {"USD": "0.225", "EUR": "0.21"}},
    }
    assert report["price_basis"] == "effective list price in force at usage_end_time"
    assert [k["key"] for k in report["keys"] if k["allocated"]] == ["2024-01-03", "2024-01-04"]
    assert report["unattributed"]["dbus"] == "1.4" and report["unattributed"]["records"] == 2
    assert report["warehouse_id"] == WAREHOUSE
    code, out, err = run(
        ["backfill", "cost", BACKFILL_ID, "--warehouse-id", WAREHOUSE, "--project", str(root)],
        capsys,
    )
    assert code == 0, err
    assert "at list price" in out
    assert "2024-01-03 *" in out and "* allocated" in out
    assert "unattributed (not in the total, assigned to no key): 1.4 DBU" in out
    assert "runs without billing records: 105" in out
    assert re.search(
        r"^  total +7\.75 +0\.945 +1\.3325 +1\.5 DBU, 0\.21 EUR, 0\.225 USD$", out, re.M
    )


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param([], "no SQL warehouse to read system.billing through", id="no-warehouse"),
        pytest.param(
            ["--warehouse-id", "0000000000000000"],
            "SQL warehouse '0000000000000000' refused the billing query",
            id="unknown-warehouse",
        ),
    ],
)
def test_a_missing_or_unknown_warehouse_is_one_line_and_exit_2(
    workspace: JobsEmulator,
    root: Path,
    capsys: pytest.CaptureFixture[str],
    args: list[str],
    message: str,
) -> None:
    code, out, err = run(["backfill", "cost", BACKFILL_ID, *args, "--project", str(root)], capsys)
    assert code == 2, out + err
    assert message in assert_one_error_line(err)


# -- the dry run's DBU figure from past billing ------------------------------------------


def test_the_estimate_takes_past_dbus_per_key_from_billing(billing: JobsEmulator) -> None:
    from databricks_bundle_decorators.launch.estimate.cost import with_past_dbus
    from databricks_bundle_decorators.launch.estimate.estimate import PastRun, estimate
    from databricks_bundle_decorators.launch.plan.plan import BackfillPlan, Slice

    def past(run_id: str, keys: int, state: str = "succeeded", ended: datetime = LAST_END):
        return PastRun(ended.timestamp() - 600, ended.timestamp(), keys, state, run_id)  # type: ignore[arg-type]

    runs = [
        past("102", 1),  # 2.25 DBU after its correction
        past("103", 1),  # 1.0 in three serverless records
        past("104", 2),  # 3.0 over two keys: 1.5 per key
        past("101", 1, "failed"),  # failed runs are not a sample
        past("105", 1),  # all-purpose compute: no record, not a sample
        past("555", 1, ended=LATER - timedelta(hours=1)),  # too recent to be billed in full
    ]
    plan = BackfillPlan("nightly", tuple(Slice(i, (f"2024-02-0{i + 1}",)) for i in range(4)))
    base = estimate(plan, runs, max_concurrent=2, compute=None)
    client = billing.workspace_client(warehouse_id=WAREHOUSE)
    found = with_past_dbus(base, plan, client, runs, now=LATER)
    assert found.to_json()["dbu_per_key"] == 1.5  # the median of 2.25, 1.0 and 1.5
    assert found.dbu == 6.0 and found.to_json()["billed_runs"] == 3
    assert "4 keys x 1.5 DBU per key, the median of the last 3 billed runs" in found.lines()[-1]
    params = {p["name"]: p.get("value") for p in billing.statements.requests[-1]["parameters"]}
    assert params["run_ids"] == "102,103,104,105"
    # no warehouse configured, or billing unreadable: the estimate stays as it was
    assert with_past_dbus(base, plan, billing.workspace_client(), runs, now=LATER) is base
    unknown = billing.workspace_client(warehouse_id="0000000000000000")
    assert with_past_dbus(base, plan, unknown, runs, now=LATER) is base


def test_a_dry_run_estimates_dbus_from_past_billing_per_key_and_says_when_it_cannot(
    spark: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``dbxdec backfill JOB --dry-run`` through the CLI: with billing readable, the DBU
    line is past DBUs per key x planned keys; with no warehouse, or a warehouse whose
    ``system.billing`` cannot be read, the job cluster's node hours as before."""
    cluster = {"spark_version": "15.4.x-scala2.12", "node_type_id": "i3.xlarge", "num_workers": 2}
    settings = {
        "job_clusters": [{"job_cluster_key": "small", "new_cluster": cluster}],
        "tasks": [{"task_key": "load", "job_cluster_key": "small"}],
    }
    days = [f"2024-01-0{d}" for d in range(1, 6)]
    with JobsEmulator() as emu:
        emu.default_duration = 0.02
        # the runs ended two days ago by the workspace's clock: past the billing delay
        emu.set_clock_offset(-2 * 86_400)
        emu.statements.add_warehouse(WAREHOUSE)
        for name in list(os.environ):
            if name.startswith("DATABRICKS_"):
                monkeypatch.delenv(name)
        monkeypatch.setenv("DATABRICKS_HOST", emu.url)
        monkeypatch.setenv("DATABRICKS_TOKEN", "dapi-test")
        monkeypatch.setenv("DATABRICKS_CONFIG_FILE", str(tmp_path / "no-databrickscfg"))
        job_id = emu.create_job("nightly", parameters=NIGHTLY_PARAMS, settings=settings)
        dbxdec = Cli(write_project(tmp_path / "proj"), capsys)
        code, _, err = dbxdec("backfill", "nightly", "--start", days[0], "--end", days[2], *FAST)
        assert code == 0, err
        run_ids = {r.job_parameters["backfill_key"]: str(r.run_id) for r in emu.runs(job_id)}
        dry = ("backfill", "nightly", "--start", days[0], "--end", days[4], "--dry-run", "--new")

        def dbu_line() -> str:
            code, out, err = dbxdec(*dry)
            assert code == 0, err
            lines = out.splitlines()
            start = next(i for i, line in enumerate(lines) if line.startswith("estimate: "))
            assert "of the last 3 successful runs" in lines[start]
            return next(line for line in lines[start + 1 :] if "DBU" in line)

        node_hours = "node hours (job cluster small: 2 x i3.xlarge + driver); multiply by"
        assert node_hours in dbu_line()  # no warehouse: billing is not read
        monkeypatch.setenv("DATABRICKS_WAREHOUSE_ID", WAREHOUSE)  # the SDK's documented env
        assert node_hours in dbu_line()  # no system.billing to read: the statement FAILED
        assert len(emu.statements.requests) == 1
        unread = emu.statements.requests[0]["parameters"]
        sent = {p["name"]: p.get("value") for p in unread}["run_ids"]
        assert sorted(sent.split(",")) == sorted(run_ids.values())  # the three past runs
        usage = [
            _usage(f"d{i}", run_ids[day], dbus, at(1, 1), job_id=str(job_id))
            for i, (day, dbus) in enumerate(
                [(days[0], "1.5"), (days[0], "0.5"), (days[1], "0.5"), (days[2], "3.25")]
            )
        ]  # per key: 2.0 (two records), 0.5, 3.25
        emu.statements.load_billing(spark, usage, LIST_PRICES)
        line = dbu_line()
        # 5 planned keys x the median of 2.0, 0.5 and 3.25 DBU per key
        assert line.startswith("  ~10.0 DBU: 5 keys x 2 DBU per key, the median of the last 3")
        assert "billed runs (system.billing.usage, netted) (job cluster small:" in line

        code, out, err = dbxdec(*dry, "--json")
        assert code == 0, err
        figures = json.loads(out)["estimate"]
        assert (figures["dbu"], figures["dbu_per_key"], figures["billed_runs"]) == (10.0, 2.0, 3)
        # a DBU/h rate the user gives wins over billing
        code, out, _ = dbxdec(*dry, "--dbu-per-hour", "2")
        assert "DBU at 2 DBU/h per run" in out and "DBU per key" not in out
