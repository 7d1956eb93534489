"""``dbxdec stale`` on real local Delta: the chain source -> pv_a -> pv_b (lookback 1) ->
pv_c (monthly) of tests/provenance/chain_project.py.

One scenario (the suite pays for one chain): a code change to B makes exactly B's keys and
C's month stale (and the old code again, none); one upstream commit touching the source's
2024-01-05 and 2024-01-07 (D-3 and D-1 of D = 2024-01-08) makes exactly A's {D-3, D-1},
B's {D-3, D-2, D-1, D} and C's month stale; then, B's code changed again, runs of the
current code clear both kinds, each in order. The index is a cache: deleted or damaged,
it is rebuilt from the tables' history.
"""

from __future__ import annotations

import json
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from databricks_bundle_decorators.cli.main import main
from databricks_bundle_decorators.definitions.registry import default_registry
from tests.cli.clirun import Cli

from .chain_project import (
    A_OUT,
    B_OUT,
    C_OUT,
    CHANGE_B,
    PIPELINES,
    own_jobs,
    write_chain_project,
    write_events,
)

pytestmark = [pytest.mark.spark, pytest.mark.slow]

MODULE = "pv_stale_pipelines"
DAYS = [f"2024-01-{d:02d}" for d in range(1, 11)]


class Dbxdec(Cli):
    """``dbxdec ... --project ROOT`` in-process, which must succeed: exit code and stdout."""

    def __call__(self, *args: str) -> tuple[int, str]:  # type: ignore[override]
        code, out, err = super().__call__(*args)
        assert code == 0, out + err
        return code, out

    def run(self, job: str, start: str, end: str) -> None:
        self("run", job, "--local", "--start", start, "--end", end)

    def stale(self, *args: str) -> dict[str, set[str]]:
        """Stale keys per job."""
        document = json.loads(self("stale", "--json", *args)[1])
        found: dict[str, set[str]] = {}
        for item in document["stale"]:
            found.setdefault(item["job"], set()).add(item["key"])
        return found


def load_code(root: Path, text: str) -> None:
    """Make ``text`` the pipelines module, as a new process would import it."""
    (root / f"{MODULE}.py").write_text(text)
    shutil.rmtree(root / "__pycache__", ignore_errors=True)
    sys.modules.pop(MODULE, None)
    default_registry._jobs.clear()


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory, spark: Any) -> Iterator[Path]:
    with own_jobs():
        root = write_chain_project(tmp_path_factory.mktemp("stale") / "proj", MODULE)
        write_events(spark, root, [(d, f"v{d[-2:]}") for d in DAYS], days=DAYS)
        yield root
        sys.modules.pop(MODULE, None)


def test_stale_lists_what_old_code_and_changed_sources_computed_and_runs_clear_it(
    project: Path, spark: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    dbxdec = Dbxdec(project, capsys)
    for job, start, end in (
        ("pv_a", DAYS[0], DAYS[-1]),
        ("pv_b", DAYS[0], DAYS[-1]),
        ("pv_c", "2024-01-01", "2024-01-01"),
    ):
        dbxdec.run(job, start, end)
    assert dbxdec.stale() == {}
    assert "No stale keys: 21 keys judged in 3 tables." in dbxdec("stale")[1]

    # a code change to B: exactly B's keys and C's month (it reads them)
    load_code(project, PIPELINES.replace(*CHANGE_B))
    assert dbxdec.stale() == {"pv_b": set(DAYS), "pv_c": {"2024-01-01"}}
    document = json.loads(dbxdec("stale", "--json", B_OUT)[1])
    reasons = {item["key"]: item["reasons"] for item in document["stale"]}
    assert set(reasons) == set(DAYS)  # TABLE keeps that table's keys
    assert all("code of task 'write_b' changed" in r[0] for r in reasons.values())
    provenance = document["records"][document["stale"][0]["record"]]
    assert provenance["job"] == "pv_b" and provenance["task"] == "write_b"
    assert set(provenance["reads"]) == {A_OUT}  # pinned: the version B read
    # the same code again: nothing stale (the fingerprint is of the code, not of the run)
    load_code(project, PIPELINES)
    assert dbxdec.stale() == {}
    load_code(project, PIPELINES.replace(*CHANGE_B))
    assert dbxdec.stale("pv_c") == {"pv_c": {"2024-01-01"}}

    load_code(project, PIPELINES)  # back to the code that wrote them

    # one upstream commit touching D-3 and D-1 (D = 2024-01-08)
    write_events(spark, project, [("2024-01-05", "x05"), ("2024-01-07", "x07")],
                 days=["2024-01-05", "2024-01-07"])  # fmt: skip
    assert dbxdec.stale() == {
        "pv_a": {"2024-01-05", "2024-01-07"},
        "pv_b": {"2024-01-05", "2024-01-06", "2024-01-07", "2024-01-08"},
        "pv_c": {"2024-01-01"},
    }
    text = dbxdec("stale", "pv_a")[1]
    assert "2 stale keys of 10 judged (main.pv.a_out: 2)" in text
    assert "main.raw.events changed in the windows this key reads since version 0" in text

    # the index is a cache: gone or damaged, the history rebuilds the same answer
    shutil.rmtree(project / ".dbxdec" / "provenance")
    assert len(dbxdec.stale()["pv_b"]) == 4
    (project / ".dbxdec" / "provenance" / f"{A_OUT}.json").write_text("{not json")
    assert dbxdec.stale()["pv_a"] == {"2024-01-05", "2024-01-07"}

    # runs of the current code (B's changed again) clear each, in order
    load_code(project, PIPELINES.replace(*CHANGE_B))
    dbxdec.run("pv_a", "2024-01-05", "2024-01-07")
    assert set(dbxdec.stale()) == {"pv_b", "pv_c"}
    dbxdec.run("pv_b", DAYS[0], DAYS[-1])
    found = json.loads(dbxdec("stale", "--json")[1])["stale"]
    assert [(i["job"], i["key"]) for i in found] == [("pv_c", "2024-01-01")]
    assert found[0]["reasons"][0].startswith(f"{B_OUT} changed in the windows this key reads")
    dbxdec.run("pv_c", "2024-01-01", "2024-01-01")
    assert dbxdec.stale() == {}
    assert C_OUT in json.loads(dbxdec("stale", "--json")[1])["tables"]


def test_stale_refuses_a_name_that_is_neither_job_nor_table(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_info:
        main(["stale", "pv_bb", "--project", str(project)])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0
    assert "'pv_bb' is neither a job nor a table of the project. Did you mean 'pv_b'?" in err
