"""The job pages: ``/jobs`` and ``/jobs/NAME`` (partition health over the whole definition,
drill-down by month and day, overdue keys, upstream and downstream jobs), served by the
app over a project's local ledgers, and once over the emulator's run history."""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path

import pytest

from databricks_bundle_decorators.app.settings import AppSettings
from databricks_bundle_decorators.backfill import HourlyBackfill
from databricks_bundle_decorators.backfill.check_report import CheckResult
from databricks_bundle_decorators.launch.ledger.ledger import (
    Attempt,
    BackendSpec,
    LaunchOptions,
    Ledger,
)
from databricks_bundle_decorators.launch.plan.plan import BackfillPlan, Slice

from .appserver import Browserless, Reply, serving
from .conftest import AppWorkspace

MODULE = "job_page_test_pipelines"
HOURLY = HourlyBackfill("2015-01-01T00", "2024-12-31T23", tz="Europe/Berlin")
FAILED_KEY = "2020-03-17T05"
ERROR = "boom <b>bold</b> & co\nTraceback: second line"

PIPELINES = """
from databricks_bundle_decorators import (
    DailyBackfill, Deadline, HourlyBackfill, MultiBackfill, StaticBackfill, WeeklyBackfill, job,
    source, task,
)
from databricks_bundle_decorators.io_managers import SparkTableIoManager


def _writes(table, static=None):
    @task(io_manager=SparkTableIoManager(table, partition_column="day", static_column=static))
    def produce() -> None: ...

    return produce


@job(backfill=HourlyBackfill("2015-01-01T00", "2024-12-31T23", tz="Europe/Berlin"))
def jp_hourly() -> None:
    _writes("main.t.hourly")()


@job(
    backfill=DailyBackfill("2024-01-01", "2024-12-31"),
    sources=[source("main.t.hourly", event_time="day")],
    deadline=Deadline("09:00"),
    schedule="0 0 6 * * ?",
)
def jp_daily() -> None:
    _writes("main.t.daily")()


@job(backfill=WeeklyBackfill("2024-W01", "2024-W52"), sources=[source("main.t.daily")])
def jp_weekly() -> None:
    _writes("main.t.weekly")()


@job(backfill=StaticBackfill(keys=["us", "eu", "jp"]))
def jp_regions() -> None:
    _writes("main.t.jp_regions")()


@job(backfill=MultiBackfill(StaticBackfill(["eu", "us"]), DailyBackfill("2024-01-01", "2024-12-31")))
def jp_regional() -> None:
    _writes("main.t.jp_regional", "region")()


@job(sources=[source("main.t.daily")])
def jp_report() -> None:
    _writes("main.t.report")()
"""


def _ledger(root: Path, job: str, runs: list[tuple[tuple[str, ...], str, str, tuple[dict[str, object], ...]]]) -> None:  # fmt: skip
    """A finished local backfill of ``job``: one run per ``(keys, state, error, checks)``."""
    plan = BackfillPlan(job, tuple(Slice(i, keys) for i, (keys, _, _, _) in enumerate(runs)))
    ledger = Ledger.create(root, plan, backend=BackendSpec("local"), options=LaunchOptions())
    for record, (_, state, error, checks) in zip(ledger.slices, runs, strict=True):
        attempt = Attempt(1, f"t{record.index}", state, f"r{record.index}", submitted_at=1.0,
                          ended_at=2.0, error=error, checks=checks)  # fmt: skip
        ledger.update(record.with_attempt(attempt))
    ledger.save()
    ledger.close()


def write_project(root: Path) -> Path:
    """The project and its ledgers: March 2020 of ``jp_hourly`` ran, one key failed;
    ``jp_daily`` ran two days (one failed a check); ``jp_regions`` failed on ``eu``."""
    root.mkdir(parents=True)
    (root / "pyproject.toml").write_text(
        f'[project]\nname = "jp"\nversion = "0.1"\n\n[tool.dbxdec]\npipelines = ["{MODULE}"]\n'
    )
    (root / f"{MODULE}.py").write_text(PIPELINES)
    march = HOURLY.keys("2020-03-01T00", "2020-03-31T23")
    runs: list[tuple[tuple[str, ...], str, str, tuple[dict[str, object], ...]]] = []
    for day in sorted({key[:10] for key in march}):
        keys = tuple(k for k in march if k.startswith(day) and k != FAILED_KEY)
        runs.append((keys, "succeeded", "", ()))
    runs.append(((FAILED_KEY,), "failed", ERROR, ()))
    _ledger(root, "jp_hourly", runs)
    failing = CheckResult("unique(id)", "2024-03-26", 2.0, "= 0", False, "produce", "r1")
    _ledger(root, "jp_daily", [
        (("2024-03-25",), "succeeded", "", ()),
        (("2024-03-26",), "failed", "check failed", (failing.to_json(),)),
    ])  # fmt: skip
    _ledger(root, "jp_regions", [(("us",), "succeeded", "", ()), (("eu",), "failed", "no eu", ())])
    _ledger(root, "jp_regional", [(("us:2024-02-07",), "failed", "no us", ())])
    return root


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Browserless]:
    """The app over the project's local ledgers (no workspace)."""
    root = write_project(tmp_path_factory.mktemp("jobpages") / "project")
    with serving(AppSettings(root=root)) as url:
        yield Browserless(url)


@dataclass
class Cell:
    state: str
    title: str
    href: str | None
    text: str


@dataclass
class Row:
    label: str
    href: str | None
    cells: list[Cell | None] = field(default_factory=list)


class _Grid(HTMLParser):
    """The rows of ``table#health`` and the lines of ``table#keys``."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[Row] = []
        self.keys: dict[str, dict[str, str]] = {}
        self._table = ""
        self._in: str = ""  # "th", "td", "key"
        self._cell: Cell | None = None
        self._line: list[str] = []
        self._link: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = {k: v or "" for k, v in attrs}
        if tag == "table":
            self._table = found.get("id", "")
        elif self._table == "health":
            self._health_tag(tag, found)
        elif self._table == "keys" and tag == "tr" and "data-key" in found:
            self._line = [found["data-key"], found["data-state"]]
            self._link = None
            self._in = "key"
        elif self._in == "key" and tag == "td":
            self._line.append("")
        elif self._in == "key" and tag == "a":
            self._link = found["href"]

    def _health_tag(self, tag: str, found: dict[str, str]) -> None:
        if tag == "tr" and "data-row" in found:
            self.rows.append(Row(found["data-row"], None))
        elif self.rows and tag == "th":
            self._in = "th"
        elif self.rows and tag == "td":
            state = found.get("class", "").removeprefix("k-")
            self._cell = Cell(state, found.get("title", ""), None, "") if state else None
            self.rows[-1].cells.append(self._cell)
            self._in = "td"
        elif tag == "a" and self._in == "th":
            self.rows[-1].href = found["href"]
        elif tag == "a" and self._in == "td" and self._cell is not None:
            self._cell.href = found["href"]

    def handle_endtag(self, tag: str) -> None:
        if tag == "table":
            self._table = ""
        elif tag in ("th", "td") and self._in in ("th", "td"):
            self._in = ""
        elif tag == "tr" and self._in == "key":
            key, state, _, _, run, error = self._line
            self.keys[key] = {"state": state, "run": run.strip(), "error": error.strip()}
            self.keys[key]["url"] = self._link or ""
            self._in = ""

    def handle_data(self, data: str) -> None:
        if self._in == "td" and self._cell is not None:
            self._cell.text += data.strip()
        elif self._in == "key" and len(self._line) > 2:
            self._line[-1] += data


def grid(reply: Reply) -> _Grid:
    assert reply.status == 200, reply.body[:500]
    parsed = _Grid()
    parsed.feed(reply.body)
    return parsed


def test_jobs_lists_each_job_with_a_backfill_and_links_its_pages(app: Browserless) -> None:
    page = app.get("/jobs")
    assert page.status == 200
    rows = dict(re.findall(r'<tr data-job="([^"]+)">(.*?)</tr>', page.body, re.S))
    # the process-wide default registry may also hold other tests' jobs: ours are jp_*
    ours = sorted(name for name in rows if name.startswith("jp_"))
    assert ours == ["jp_daily", "jp_hourly", "jp_regional", "jp_regions", "jp_weekly"]
    daily = rows["jp_daily"]
    assert '<a href="/jobs/jp_daily"' in daily and 'href="/launch?job=jp_daily"' in daily
    assert "<td>daily</td>" in daily and "2024-01-01 .. 2024-12-31 (UTC)" in daily
    assert "0 0 6 * * ? (UTC)" in daily
    assert "3 keys: us, eu, jp" in rows["jp_regions"]
    assert "eu, us x 2024-01-01 .. 2024-12-31 (UTC)" in rows["jp_regional"]
    assert app.get("/launch?job=jp_daily").status == 200


def test_ten_years_of_hourly_keys_fold_into_month_rows_and_drill_down_to_a_failed_key(
    app: Browserless,
) -> None:
    top = app.get("/jobs/jp_hourly")
    assert len(top.body.encode()) < 1_000_000
    assert "<b>87,662</b> keys" in top.body
    whole = grid(top)
    assert len(whole.rows) == 120
    assert (whole.rows[0].label, whole.rows[-1].label) == ("2015-01", "2024-12")
    assert all(row.href == f"/jobs/jp_hourly?month={row.label}" for row in whole.rows)
    march = next(row for row in whole.rows if row.label == "2020-03")
    days = [cell for cell in march.cells if cell is not None]
    assert len(days) == 31 and [c.state for c in days].count("failed") == 1
    failed = march.cells[16]  # the 17th
    assert failed is not None and (failed.state, failed.text) == ("failed", "✗")
    assert failed.title == "2020-03-17: 23 succeeded, 1 failed"
    assert march.cells[15] is not None and (march.cells[15].state, march.cells[15].text) == (
        "succeeded",
        "■",
    )
    april = next(row for row in whole.rows if row.label == "2020-04")
    assert {c.state for c in april.cells if c} == {"missing"} and april.cells[30] is None
    # the month: a row per day, a cell per hour
    month = grid(app.get(march.href or ""))
    assert len(month.rows) == 31 and all(len(row.cells) == 24 for row in month.rows)
    dst = next(row for row in month.rows if row.label == "2020-03-29")
    assert dst.cells[2] is None  # 02:00 does not exist in Berlin that day
    day_row = next(row for row in month.rows if row.label == "2020-03-17")
    hour = day_row.cells[5]
    assert hour is not None and hour.state == "failed" and hour.title.startswith(FAILED_KEY)
    assert day_row.href == hour.href == "/jobs/jp_hourly?day=2020-03-17"
    assert failed.href == hour.href
    # the day: its keys, each with its state, run and one-line error (escaped)
    day = app.get(hour.href or "")
    keys = grid(day).keys
    assert len(keys) == 24
    assert keys[FAILED_KEY] == {"state": "failed", "run": "r31", "error": ERROR.splitlines()[0], "url": ""}  # fmt: skip
    assert html.escape(ERROR.splitlines()[0], quote=False) in day.body
    assert "<b>bold</b>" not in day.body and "second line" not in day.body
    assert {v["state"] for k, v in keys.items() if k != FAILED_KEY} == {"succeeded"}
    nav = day.body[day.body.index('id="nav"') :]
    assert '<a href="/jobs/jp_hourly?day=2020-03-16" rel="prev">' in nav
    assert '<a href="/jobs/jp_hourly?month=2020-03" rel="up">' in nav
    assert '<a href="/jobs/jp_hourly?day=2020-03-18" rel="next">' in nav
    part = day.body[day.body.index('id="part-counts"') :]
    assert re.search(r'data-state="succeeded">.*?<b>23</b>', part)
    assert re.search(r'data-state="failed">.*?<b>1</b>', part)


def test_a_jp_daily_is_months_of_days_with_overdue_keys_and_its_neighbours(
    app: Browserless,
) -> None:
    page = app.get("/jobs/jp_daily")
    whole = grid(page)
    assert [row.label for row in whole.rows] == [f"2024-{m:02d}" for m in range(1, 13)]
    march = whole.rows[2]
    assert march.cells[24] is not None and march.cells[24].state == "succeeded"
    cell = march.cells[25]
    assert cell is not None and cell.state == "failed" and cell.text == "✗"
    assert cell.title == "2024-03-26: failed, run r1: check failed"
    assert cell.href == "/jobs/jp_daily?day=2024-03-26"
    assert whole.rows[1].cells[29] is None  # 2024-02-30
    overdue = page.body[page.body.index('id="overdue"') :]
    assert "Overdue keys (deadline 09:00 UTC): 365" in overdue  # all of 2024 but one
    assert "checks failed: unique(id)" in overdue
    assert "The first 200 shown." in overdue
    up = page.body[page.body.index('id="graph"') :]
    assert '<a href="/jobs/jp_hourly">jp_hourly</a> via <code>main.t.hourly</code>' in up
    assert '<a href="/jobs/jp_weekly">jp_weekly</a> via <code>main.t.daily</code>' in up
    assert '<li data-job="jp_report">jp_report via' in up  # no backfill: no page to link
    month = grid(app.get(march.href or ""))
    assert len(month.keys) == 31 and month.keys["2024-03-26"]["state"] == "failed"
    assert month.keys["2024-03-26"]["error"] == "check failed"
    assert grid(app.get("/jobs/jp_daily?day=2024-03-25")).keys == {
        "2024-03-25": {"state": "succeeded", "run": "r0", "error": "", "url": ""}
    }


def test_weekly_and_static_jobs_show_their_calendar_and_failed_keys(app: Browserless) -> None:
    weekly = grid(app.get("/jobs/jp_weekly"))
    assert [row.label for row in weekly.rows] == ["2024"]
    assert sum(1 for c in weekly.rows[0].cells if c is not None) == 52
    static = app.get("/jobs/jp_regions")
    found = grid(static)
    cells = [c for row in found.rows for c in row.cells if c is not None]
    assert [(c.state, c.text) for c in cells] == [
        ("succeeded", "■ us"),
        ("failed", "✗ eu"),
        ("missing", "· jp"),
    ]
    assert found.keys["eu"]["error"] == "no eu"
    assert 'id="overdue"' not in static.body  # no deadline
    # region x day: 732 keys, too wide for a cell each: a cell per region and week
    regional = grid(app.get("/jobs/jp_regional"))
    assert [row.label for row in regional.rows] == ["eu", "us"]
    weeks = [c for c in regional.rows[1].cells if c is not None]
    assert len(weeks) == 53 and weeks[5].state == "failed"
    assert weeks[5].title == "2024-W06: 1 failed, 6 missing"
    assert regional.keys["us:2024-02-07"]["error"] == "no us"


@pytest.mark.parametrize(
    ("path", "status", "line"),
    [
        ("/jobs/nope", 404, "no job 'nope' with a backfill definition here: see /jobs"),
        ("/jobs/jp_report", 404, "no job 'jp_report' with a backfill definition here: see /jobs"),
        ("/jobs/%3Cscript%3E", 404, "no job '<script>' with a backfill definition here"),
        ("/jobs/jp_hourly?month=2020-13", 400, "month must be YYYY-MM (e.g. 2024-03)"),
        ("/jobs/jp_hourly?month=%3Cb%3E", 400, "month must be YYYY-MM (e.g. 2024-03), not '<b>'"),
        ("/jobs/jp_hourly?day=2020-02-30", 400, "day must be YYYY-MM-DD (e.g. 2024-03-05)"),
        ("/jobs/jp_hourly?day=20200301", 400, "day must be YYYY-MM-DD"),
        ("/jobs/jp_hourly?month=2020-01&day=2020-01-01", 400, "give month=YYYY-MM or day="),
        ("/jobs/jp_hourly?month=2014-12", 404, "job 'jp_hourly' has no keys in 2014-12"),
        ("/jobs/jp_daily?day=2025-01-01", 404, "job 'jp_daily' has no keys on 2025-01-01"),
        ("/jobs/jp_regions?month=2024-01", 400, "a static job's page has no month or day"),
    ],
)
def test_bad_names_and_values_get_one_line(
    app: Browserless, path: str, status: int, line: str
) -> None:
    reply = app.get(path)
    assert reply.status == status
    assert reply.headers["content-type"].startswith("text/plain")
    assert reply.body.count("\n") == 1 and reply.body.startswith(line)


def test_over_the_emulator_the_page_reads_the_run_history(app_workspace: AppWorkspace) -> None:
    emu = app_workspace.emu
    emu.set_outcome("2024-01-02", result="FAILED", message="bad day")
    client = emu.workspace_client()
    for key in ("2024-01-01", "2024-01-02", "2024-01-03"):
        client.jobs.run_now(app_workspace.job_id, job_parameters={"backfill_key": key})
    emu.wait_until_idle()
    page = app_workspace.client().get("/jobs/nightly")
    found = grid(page)
    january = found.rows[0]
    assert january.label == "2024-01"
    states = [c.state if c else None for c in january.cells[:4]]
    assert states == ["succeeded", "failed", "succeeded", "missing"]
    assert f"job nightly (job id {app_workspace.job_id})" in page.body
    day = grid(app_workspace.client().get("/jobs/nightly?day=2024-01-02"))
    assert day.keys["2024-01-02"]["state"] == "failed"
