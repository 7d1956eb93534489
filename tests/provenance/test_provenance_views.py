"""Issue 43: ``dbxdec status JOB --local`` and the app's job page show a stale key as the
state ``stale``, with its reasons and the provenance of what wrote it.

One project on real local Delta for the module (:mod:`.chain_project`): ``pv_a`` and
``pv_b`` ran over four days, then the source changed one day, so ``pv_a``'s key of that
day and ``pv_b``'s keys reading it (its own day and, with lookback 1, the next) are stale.
A last commit of ``pv_b``'s table carries a hand-made provenance record with markup in
its run id and checks: the page must show it as text.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from databricks_bundle_decorators.app.settings import AppSettings
from databricks_bundle_decorators.backfill.wire.provenance import Provenance, with_provenance
from databricks_bundle_decorators.cli.main import main
from databricks_bundle_decorators.launch.plan.states import KeyState
from databricks_bundle_decorators.launch.provenance.job_keys import JobProvenance
from databricks_bundle_decorators.launch.provenance.stale import StaleKey
from databricks_bundle_decorators.launch.status.status import with_stale
from databricks_bundle_decorators.launch.status.status_grid import build_grid, legend
from databricks_bundle_decorators.launch.status.status_view import fold_grid
from databricks_bundle_decorators.runtime.job_tables.tables import local_table_path
from tests.app.appserver import Browserless, serving

from .chain_project import B_OUT, own_jobs, write_chain_project, write_events

MODULE = "pvview_test_pipelines"
DAYS = ["2024-01-01", "2024-01-02", "2024-01-03", "2024-01-04"]
CHANGED = "2024-01-02"
HOSTILE_RUN = "<script>alert(1)</script>"
HOSTILE_CHECK = "rows > 0 & <b>unique</b>"


def dbxdec(root: Path, *args: str) -> int:
    """``dbxdec ARGS --project ROOT`` in-process (its output is captured by pytest)."""
    with pytest.raises(SystemExit) as exited:
        main([*args, "--project", str(root)])
    code = exited.value.code
    return code if isinstance(code, int) else 1


def rewrite_with_provenance(spark: Any, root: Path, day: str, record: Provenance) -> None:
    """Rewrite ``pv_b``'s ``day`` in one commit carrying ``record`` (as dbxdec would)."""
    from pyspark.sql import functions as F

    path = str(local_table_path(B_OUT, root / ".dbxdec" / "warehouse"))
    rows = spark.read.format("delta").load(path).where(F.col("day") == day)
    (
        rows.localCheckpoint()  # read whole before the overwrite of the same rows
        .write.format("delta")
        .mode("overwrite")
        .option("replaceWhere", f"day = '{day}'")
        .option("userMetadata", with_provenance("", record))
        .save(path)
    )


@pytest.fixture(scope="module")
def chain(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    root = write_chain_project(tmp_path_factory.mktemp("pvview") / "project", MODULE)
    with own_jobs():
        write_events(spark, root, [(d, f"v{d[-2:]}") for d in DAYS], days=DAYS)
        for job in ("pv_a", "pv_b"):
            assert dbxdec(root, "run", job, "--local", "--start", DAYS[0], "--end", DAYS[-1]) == 0
        write_events(spark, root, [(CHANGED, "changed")], days=[CHANGED])
        yield root
    shutil.rmtree(root, ignore_errors=True)


def status_json(root: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    capsys.readouterr()
    assert dbxdec(root, "status", "pv_b", "--local", "--json", "--end", "2024-01-05") == 0
    return dict(json.loads(capsys.readouterr().out))


@pytest.mark.spark
def test_status_shows_the_changed_day_and_its_dependants_stale_with_reasons(
    chain: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    found = status_json(chain, capsys)
    assert found["states"] == {
        "2024-01-01": "succeeded",
        "2024-01-02": "stale",
        "2024-01-03": "stale",  # lookback 1: it reads 2024-01-02 too
        "2024-01-04": "succeeded",
        "2024-01-05": "missing",
    }
    stale = {item["key"]: item for item in found["stale"]}
    assert list(stale) == ["2024-01-02", "2024-01-03"]
    for key, item in stale.items():
        assert item["reasons"] == [f"reads main.pv.a_out key {CHANGED}, which is stale"], key
        assert (item["job"], item["task"], item["table"]) == ("pv_b", "write_b", B_OUT)
        record = item["provenance"]
        assert record["task"] == "write_b" and re.fullmatch(r"[0-9a-f]{16}", record["code"])
        assert list(record["reads"]) == ["main.pv.a_out"] and record["run"]
    # upstream: the key whose source changed says which commit changed it
    capsys.readouterr()
    assert dbxdec(chain, "status", "pv_a", "--local", "--json", "--end", "2024-01-04") == 0
    upstream = json.loads(capsys.readouterr().out)
    assert [k for k, s in upstream["states"].items() if s == "stale"] == [CHANGED]
    assert upstream["stale"][0]["reasons"][0].startswith(
        "main.raw.events changed in the windows this key reads since version 0 (version 1"
    )
    # the text grid: its own glyph, in the legend, and the reasons under the grid
    assert dbxdec(chain, "status", "pv_b", "--local", "--end", "2024-01-05") == 0
    text = capsys.readouterr().out
    row = next(line for line in text.splitlines() if line.startswith("2024-01 "))
    assert row.split()[1:6] == ["■", "□", "□", "■", "·"]
    assert "□ stale 2" in " ".join(text.split())
    assert f"Stale 2024-01-03: reads main.pv.a_out key {CHANGED}, which is stale" in text
    # the HTML page: the cell's title and a table of the stale keys with their reasons
    page = chain / "status.html"
    assert (
        dbxdec(chain, "status", "pv_b", "--local", "--end", "2024-01-05", "--html", str(page)) == 0
    )
    html = page.read_text(encoding="utf-8")
    assert '<td class="stale" title="2024-01-02: stale, run ' in html
    assert "<h2>Stale keys (2)</h2>" in html
    assert f"<tr><td>2024-01-03</td><td>reads main.pv.a_out key {CHANGED}, which is stale" in html


def test_stale_replaces_succeeded_alone_and_shows_only_where_judged() -> None:
    keys = ["2024-01-01", "2024-01-02", "2024-01-03", "2024-01-04"]
    history = {keys[0]: KeyState.SUCCEEDED, keys[1]: KeyState.FAILED, keys[2]: KeyState.RUNNING}
    grid = build_grid("j", "daily", keys, history)
    assert "stale" not in legend(grid)  # a workspace's status: not judged
    assert "stale" not in legend(with_stale(grid, JobProvenance("j")))  # no local table
    judged = JobProvenance(
        "j",
        ("main.t.out",),
        stale={k: (StaleKey("j", "t", "main.t.out", k, ("code changed",), None),) for k in keys},
    )
    shown = with_stale(grid, judged)
    assert list(shown.states.values()) == ["stale", "failed", "running", "missing"]
    assert shown.stale_reasons(keys[0]) == ("code changed",)
    assert legend(shown).endswith("⊘ cancelled 0  □ stale 1")
    # folded, a stale key is worse than a missing one (wrong data is read; missing is not)
    ok = with_stale(build_grid("j", "daily", keys, dict.fromkeys(keys[:3], "succeeded")), judged)
    week = next(fold_grid(ok, "week").cells())
    assert (week.worst, week.describe()) == ("stale", "2024-W01: 1 missing, 3 stale")


@pytest.mark.spark
def test_the_job_page_shows_stale_keys_and_a_keys_provenance_escaped(
    spark: Any, chain: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = status_json(chain, capsys)["stale"][0]["provenance"]
    hostile = Provenance(
        "pv_b",
        "write_b",
        HOSTILE_RUN,
        before["code"],
        "0.1.0",
        before["reads"],
        ("2024-01-04",),
        "day",
        (HOSTILE_CHECK,),
        backfill_id="bf-1",
    )
    rewrite_with_provenance(spark, chain, "2024-01-04", hostile)
    with serving(AppSettings(root=chain)) as url:  # the fixture's own jobs
        app = Browserless(url)
        page = app.get("/jobs/pv_b")
        assert page.status == 200, page.body[:300]
        cells = {key: state for state, key in re.findall(
            r'<td class="k-([a-z]+)" title="(2024-01-0[1-4]):', page.body)}  # fmt: skip
        assert cells == {
            "2024-01-01": "succeeded",
            "2024-01-02": "stale",
            "2024-01-03": "stale",
            "2024-01-04": "succeeded",  # same code, same reads: not stale
        }
        assert re.search(r'data-state="stale">.*?□.*?<b>2</b>', page.body)
        title = re.search(r'title="(2024-01-03: stale[^"]*)"', page.body)
        assert title is not None and title.group(1).endswith(
            f"; stale: reads main.pv.a_out key {CHANGED}, which is stale"
        )
        day = app.get("/jobs/pv_b?day=2024-01-03").body
        detail = day[day.index('<tr class="provenance" data-of="2024-01-03">') :]
        detail = detail[: detail.index("</tr>")]
        assert f"<b>Stale:</b> reads main.pv.a_out key {CHANGED}, which is stale" in detail
        assert f'<code class="code">{before["code"]}</code>' in detail
        assert '<dd class="dbxdec">0.1.0</dd>' in detail
        assert f'<dd class="run">{before["run"]}</dd>' in detail
        assert "<li><code>main.pv.a_out</code> at version " in detail
        assert '<dd class="checks">none</dd>' in detail
        marked = app.get("/jobs/pv_b?day=2024-01-04").body
        assert HOSTILE_RUN not in marked and "<b>unique</b>" not in marked
        assert '<dd class="run">&lt;script&gt;alert(1)&lt;/script&gt;</dd>' in marked
        assert "rows &gt; 0 &amp; &lt;b&gt;unique&lt;/b&gt;" in marked
        assert '<a href="/backfills/bf-1">bf-1</a>' in marked
