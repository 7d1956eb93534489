"""Bundle generation as whole processes: dbxdec against the earlier release, and the CLI.

Two figures with targets (issue 41):

* **generation 1,000 x 10, CPU / 0.12.15**: 1,000 jobs of 10 chained tasks, each job with
  a job cluster (``job_clusters``/``new_cluster``), a daily backfill, a schedule, params
  and tags, into ``databricks.bundles.core.Resources``. Each load is a whole process,
  from interpreter start (imports included) until the ``Resources`` object exists, whose
  CPU seconds (``time.process_time``, taken at that moment) the process reports. dbxdec's
  side runs ``resources_for`` (the core of ``load_resources``) with this interpreter and
  this repo's ``src`` first on the path; the earlier release's side
  (PyPI's ``databricks-bundle-decorators==0.12.15``, which dbxdec never depends on) runs
  its ``generate_resources`` and ``Resources.add_job`` (what its ``load_resources`` does)
  with the Python 3.12 venv that ``make bench-earlier`` builds
  (``benchmarks/earlier_release.py``). The two sides alternate (A B A B ...), ``--pairs``
  pairs, so a drift of the machine's speed reaches both; the figure is the ratio of the
  medians. Target 1.0 (goal 0.5). Without that venv the comparison prints "skipped".
* **dbxdec generate 10x5 wall**: ``dbxdec generate`` (the CLI, a whole process) on a
  project of 10 jobs x 5 tasks of the same shape, writing its YAML into a temporary
  folder: the median wall seconds of ``--runs`` runs after one that fills the bytecode
  caches. Target 1.5 s.

Run: ``python benchmarks/generation.py [--pairs 5] [--runs 5] [--jobs 1000] [--src SRC]``
(``--src``: another checkout's sources, e.g. ``git archive <commit> src | tar -x -C /tmp/old``
then ``--src /tmp/old/src``, for a before/after.)
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from earlier_release import RELEASE, earlier_python
from figures import figure

SRC = str(Path(__file__).resolve().parents[1] / "src")
SCRIPT = Path(__file__).stem
TASKS_PER_JOB = 10
CLUSTER_SPEC = (
    '{"spark_version": "16.4.x-scala2.12", "node_type_id": "i3.xlarge", "num_workers": 2}'
)

# The same pipeline for each side: N jobs of T chained tasks (argv[1], argv[2]).
DBXDEC_LOAD = f"""
import json, sys, time
from databricks_bundle_decorators import (
    DailyBackfill, Registry, RetryPolicy, job_cluster, task,
)
from databricks_bundle_decorators.bundle import CodegenOptions, resources_for

jobs, tasks = int(sys.argv[1]), int(sys.argv[2])
backfill = DailyBackfill(start_date="2024-01-01", tz="Europe/Berlin", lookback=1)
cluster = job_cluster("bench_cluster", **{CLUSTER_SPEC})
registry = Registry()
for index in range(jobs):
    def body():
        previous = None
        for position in range(tasks):
            def step(): ...
            definition = task(
                name=f"step_{{position}}",
                depends_on=[previous] if previous is not None else None,
                retries=RetryPolicy(2, 1000),
                timeout_seconds=600,
            )(step)
            previous = definition()
    body.__name__ = f"job_{{index:05d}}"
    registry.job(
        params={{"source": f"raw.table_{{index}}", "limit": "1000"}},
        backfill=backfill,
        cluster=cluster,
        schedule="0 0 6 * * ?",
        tags={{"team": "benchmark"}},
    )(body)
resources = resources_for(registry, CodegenOptions(package_name="benchmark-pipelines"))
cpu = time.process_time()
assert len(resources.jobs) == jobs and not resources.diagnostics.has_error()
print(json.dumps({{"cpu": cpu, "jobs": len(resources.jobs)}}))
"""

EARLIER_LOAD = f"""
import json, sys, time, warnings
warnings.simplefilter("ignore")  # it warns on its key format
from databricks.bundles.core import Resources
from databricks.bundles.jobs import CronSchedule
from databricks_bundle_decorators import DailyBackfill, job, job_cluster, task
from databricks_bundle_decorators.codegen import generate_resources

jobs, tasks = int(sys.argv[1]), int(sys.argv[2])
backfill = DailyBackfill(start_date="2024-01-01", tz="Europe/Berlin", lookback=1)
cluster = job_cluster("bench_cluster", **{CLUSTER_SPEC})
for index in range(jobs):
    def body():
        previous = None
        for position in range(tasks):
            def step(): ...
            step.__name__ = f"step_{{position}}"  # its task keys are function names
            definition = task(
                depends_on=[previous] if previous is not None else None,
                max_retries=2,
                min_retry_interval_millis=1000,
                retry_on_timeout=False,
                timeout_seconds=600,
            )(step)
            previous = definition()
    body.__name__ = f"job_{{index:05d}}"
    job(
        params={{"source": f"raw.table_{{index}}", "limit": "1000"}},
        backfill=backfill,
        cluster=cluster,
        schedule=CronSchedule(quartz_cron_expression="0 0 6 * * ?", timezone_id="UTC"),
        tags={{"team": "benchmark"}},
    )(body)
resources = Resources()
for name, resource in generate_resources(package_name="benchmark-pipelines").items():
    resources.add_job(name, resource)
cpu = time.process_time()
assert len(resources.jobs) == jobs
print(json.dumps({{"cpu": cpu, "jobs": len(resources.jobs)}}))
"""

PIPELINE = """
from databricks_bundle_decorators import DailyBackfill, RetryPolicy, job, job_cluster, task

backfill = DailyBackfill(start_date="2024-01-01", tz="Europe/Berlin", lookback=1)
cluster = job_cluster("bench_cluster", **{cluster})


def _declare(index: int, tasks: int) -> None:
    def body() -> None:
        previous = None
        for position in range(tasks):
            def step() -> None: ...
            definition = task(
                name=f"step_{{position}}",
                depends_on=[previous] if previous is not None else None,
                retries=RetryPolicy(2, 1000),
                timeout_seconds=600,
            )(step)
            previous = definition()

    body.__name__ = f"job_{{index:02d}}"
    job(
        params={{"source": f"raw.table_{{index}}", "limit": "1000"}},
        backfill=backfill,
        cluster=cluster,
        schedule="0 0 6 * * ?",
        tags={{"team": "benchmark"}},
    )(body)


for _index in range({jobs}):
    _declare(_index, {tasks})
"""

CLI = "import sys; from databricks_bundle_decorators.cli.main import main; sys.exit(main())"


def _dbxdec_env(src: str = SRC) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([src, *filter(None, [env.get("PYTHONPATH")])])
    return env


def _earlier_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}


def _load(python: str, script: Path, env: dict[str, str], jobs: int) -> float:
    """CPU seconds of one whole-process load of ``jobs`` jobs, as the process reports it."""
    command = [python, str(script), str(jobs), str(TASKS_PER_JOB)]
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise SystemExit(f"{python} load failed: {last}")
    report = json.loads(done.stdout.strip().splitlines()[-1])
    assert report["jobs"] == jobs, report
    cpu: float = report["cpu"]
    return cpu


def compare(pairs: int, jobs: int, src: str = SRC) -> None:
    """The earlier release and dbxdec in turn, ``pairs`` times; the ratio of the medians."""
    print(f"generation: {jobs:,} jobs x {TASKS_PER_JOB} tasks (job cluster, daily backfill)")
    print("into Resources, whole process (CPU seconds, interpreter start included)")
    earlier = earlier_python()
    mine_env = _dbxdec_env(src)
    with tempfile.TemporaryDirectory(prefix="dbxdec-generation-") as folder:
        # files, as pipelines are: code run by -c has no source file to find
        ours, old = Path(folder, "dbxdec_load.py"), Path(folder, "earlier_load.py")
        ours.write_text(DBXDEC_LOAD)
        old.write_text(EARLIER_LOAD)
        if earlier is None:
            print(f"  earlier release ({RELEASE}): skipped (make bench-earlier builds it)")
            mine = [_load(sys.executable, ours, mine_env, jobs) for _ in range(pairs)]
            print(f"  dbxdec: {_seconds(mine)}")
            return
        _load(str(earlier), old, _earlier_env(), 10)  # bytecode caches filled
        _load(sys.executable, ours, mine_env, 10)
        mine, theirs = [], []
        for _ in range(pairs):
            theirs.append(_load(str(earlier), old, _earlier_env(), jobs))
            mine.append(_load(sys.executable, ours, mine_env, jobs))
    ratio = statistics.median(mine) / statistics.median(theirs)
    each = ", ".join(f"{a / b:.2f}" for a, b in zip(mine, theirs, strict=True))
    print(f"  dbxdec  (Python {sys.version.split()[0]}): {_seconds(mine)}")
    print(f"  earlier ({RELEASE}, {earlier}): {_seconds(theirs)}")
    print(f"  dbxdec / earlier, medians of {pairs} pairs: {ratio:.2f}  (pair by pair: {each})")
    print("  target <= 1.0 (goal 0.5)")
    figure(SCRIPT, f"generation {jobs:,}x10 CPU / 0.12.15", ratio, 1.0, better="lower", unit="x")


def _seconds(values: list[float]) -> str:
    shown = " ".join(f"{value:.2f}" for value in values)
    return f"median {statistics.median(values):.3f} s ({shown})"


def generate_wall(runs: int, jobs: int = 10, tasks: int = 5, src: str = SRC) -> None:
    """Median wall seconds of ``dbxdec generate`` on a project of ``jobs`` x ``tasks``."""
    with tempfile.TemporaryDirectory(prefix="dbxdec-generate-") as folder:
        root = Path(folder)
        (root / "pyproject.toml").write_text(
            '[project]\nname = "bench_project"\nversion = "0.1"\n\n'
            '[tool.dbxdec]\npipelines = ["bench_pipelines"]\n'
        )
        pipeline = PIPELINE.format(jobs=jobs, tasks=tasks, cluster=CLUSTER_SPEC)
        (root / "bench_pipelines.py").write_text(pipeline)
        command = [sys.executable, "-c", CLI, "generate", "--project", str(root)]
        walls = []
        for _ in range(runs + 1):  # the first fills the bytecode caches
            started = time.perf_counter()
            done = subprocess.run(
                command, capture_output=True, text=True, env=_dbxdec_env(src), check=False
            )
            walls.append(time.perf_counter() - started)
            if done.returncode != 0:
                raise SystemExit(f"dbxdec generate failed: {done.stdout}{done.stderr}")
        written = len(list((root / "resources").glob("*.job.yml")))
    wall = statistics.median(walls[1:])
    shown = " ".join(f"{value:.2f}" for value in walls[1:])
    print(f"dbxdec generate, {jobs} jobs x {tasks} tasks ({written} job files), whole process")
    print(f"  median wall {wall:.3f} s ({shown})  target < 1.5 s")
    figure(SCRIPT, "dbxdec generate 10x5 wall", wall, 1.5, better="lower", unit="s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=5, help="A/B pairs of whole processes")
    parser.add_argument("--runs", type=int, default=5, help="runs of dbxdec generate")
    parser.add_argument("--jobs", type=int, default=1_000, help="jobs of the A/B loads")
    parser.add_argument(
        "--src",
        default=SRC,
        help="dbxdec sources to measure (default: this checkout's; e.g. an older commit's "
        "from git archive)",
    )
    args = parser.parse_args()
    print(f"dbxdec sources: {args.src}")
    compare(args.pairs, args.jobs, args.src)
    print()
    generate_wall(args.runs, src=args.src)


if __name__ == "__main__":
    main()
