"""Task-value tasks become notebook tasks (bundle/notebook_task.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from databricks_bundle_decorators import (
    Registry,
    for_each_task,
    get_task_value,
    job_cluster,
    set_task_value,
    task,
    task_value,
)
from databricks_bundle_decorators.bundle import SchemaValidator, job_resource
from databricks_bundle_decorators.bundle.notebook_task import (
    NOTEBOOK_HEADER,
    all_notebooks,
)
from databricks_bundle_decorators.bundle.options import CodegenOptions
from databricks_bundle_decorators.bundle.typed import typed_job
from databricks_bundle_decorators.bundle.validate import typed_problems
from databricks_bundle_decorators.bundle.workflows import generate_project, open_project

from .projects import REPO_ROOT, fake_framework_wheel, make_project, schema_path

SMALL = job_cluster(
    "small", spark_version="16.4.x-scala2.12", node_type_id="i3.xlarge", num_workers=1
)


def _registry(**job_kwargs: Any) -> Registry:
    registry = Registry()

    @registry.job(name="regions", **job_kwargs)
    def regions() -> None:
        @task(name="a-b")
        def discover() -> None:
            set_task_value("k", ["north", "south"])

        @task
        def plain() -> None: ...

        @for_each_task(inputs=task_value("a-b", "k"))
        def each(inputs: str) -> None: ...

        @task(depends_on=[plain])
        def reader() -> None:
            get_task_value("a-b", "k")

        discover()
        each()
        plain()
        reader()

    return registry


def _tasks(settings: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {t["task_key"]: t for t in settings["tasks"]}


OPTIONS = CodegenOptions(package_name="proj")


def test_task_value_tasks_are_notebook_tasks_calling_the_entry_function() -> None:
    settings = job_resource(_registry().get("regions"), options=OPTIONS)
    tasks = _tasks(settings)
    assert "python_wheel_task" in tasks["plain"]
    assert "environment_key" in tasks["plain"]
    setter = tasks["a-b"]
    assert set(setter) >= {"notebook_task"} and "environment_key" not in setter
    assert (
        setter["notebook_task"]["notebook_path"] == "./resources/dbxdec_notebooks/regions__a-b.py"
    )
    wheel_named = tasks["plain"]["python_wheel_task"]["named_parameters"]
    assert setter["notebook_task"]["base_parameters"] == {**wheel_named, "dbxdec_task": "a-b"}
    loop = tasks["each"]["for_each_task"]
    assert loop["inputs"] == "{{tasks.`a-b`.values.k}}"
    assert loop["task"]["notebook_task"]["base_parameters"]["dbxdec_input"] == "{{input}}"
    notebooks = all_notebooks({"regions": settings}, OPTIONS)
    assert sorted(notebooks) == [
        "regions__a-b.py",
        "regions__each_iteration.py",
        "regions__reader.py",
    ]
    source = notebooks["regions__a-b.py"]
    assert source.startswith(NOTEBOOK_HEADER)
    assert "# MAGIC %pip install ../../wheels/dbxdec-" in source
    assert "../../dist/*.whl" in source
    assert "dbutils.library.restartPython()" in source
    assert "from databricks_bundle_decorators.runtime.notebook_entry import run_notebook" in source
    assert '"dbxdec_task"' in source and '"dbxdec_module"' in source


def test_a_task_that_only_reads_a_value_by_get_task_value_is_a_notebook_task() -> None:
    registry = Registry()

    @registry.job
    def reading() -> None:
        @task
        def reader() -> None:
            get_task_value("other", "k", default=None)

        reader()

    settings = job_resource(registry.get("reading"), options=OPTIONS)
    [only] = settings["tasks"]
    assert "notebook_task" in only
    assert "environments" not in settings  # no task uses the serverless environment


def test_on_a_classic_cluster_the_notebook_task_gets_the_cluster_and_the_wheels() -> None:
    settings = job_resource(_registry(cluster=SMALL).get("regions"), options=OPTIONS)
    setter = _tasks(settings)["a-b"]
    assert setter["job_cluster_key"] == "small"
    assert setter["libraries"] == [{"whl": w} for w in OPTIONS.wheels]
    source = all_notebooks({"regions": settings}, OPTIONS)["regions__a-b.py"]
    assert "%pip" not in source and "restartPython" not in source


@pytest.mark.parametrize("cluster", [None, SMALL], ids=["serverless", "classic"])
def test_the_bundle_schema_and_the_typed_load_accept_the_notebook_tasks(cluster: Any) -> None:
    kwargs = {} if cluster is None else {"cluster": cluster}
    settings = job_resource(_registry(**kwargs).get("regions"), options=OPTIONS)
    assert SchemaValidator(schema_path()).problems("regions", settings) == []
    assert typed_problems("regions", settings) == []
    typed_job(settings)


def test_the_generated_notebook_runs_the_task_with_widget_parameters(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    module = "dbxdec_test_notebook_entry_pipes"
    (tmp_path / f"{module}.py").write_text(
        "from databricks_bundle_decorators import Registry, set_task_value, task\n"
        "registry = Registry()\n"
        "@registry.job(name='nb_job', params={'region': 'north'})\n"
        "def nb_job():\n"
        "    @task\n"
        "    def discover():\n"
        "        from databricks_bundle_decorators import params\n"
        "        set_task_value('regions', [params['region'], 'south'])\n"
        "    discover()\n"
        "nb_job = registry.get('nb_job')\n",
        encoding="utf-8",
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DBXDEC_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.delenv("DATABRICKS_RUNTIME_VERSION", raising=False)
    import importlib

    job = importlib.import_module(module).nb_job
    settings = job_resource(job, options=OPTIONS)
    [notebook_task] = [t["notebook_task"] for t in settings["tasks"]]
    source = all_notebooks({"nb_job": settings}, OPTIONS)["nb_job__discover.py"]
    widgets = {**notebook_task["base_parameters"], "region": "east", "dbxdec_run_id": "77"}
    for name, value in list(widgets.items()):
        if value.startswith("{{job.parameters."):
            widgets[name] = {"backfill_key": "", "region": "east"}.get(name, "")
    dbutils = _StubDbutils(widgets)
    exec(compile(source, "nb_job__discover.py", "exec"), {"dbutils": dbutils})
    assert dbutils.restarted == 1
    assert dbutils.values == {"regions": ["east", "south"]}
    assert dbutils.exited == ["[]"]  # no check, no report: an empty list of report lines


class _StubDbutils:
    """The notebook ``dbutils`` surface the generated notebook uses: widgets, task values,
    ``library.restartPython`` and ``notebook.exit``."""

    def __init__(self, widgets: dict[str, str]) -> None:
        self._widgets = widgets
        self.values: dict[str, Any] = {}
        self.restarted = 0
        self.exited: list[str] = []
        self.notebook = self
        self.widgets = self
        self.library = self
        self.jobs = self
        self.taskValues = self

    def get(self, name: str) -> str:  # widgets.get
        return self._widgets[name]

    def set(self, key: str, value: Any) -> None:  # jobs.taskValues.set
        self.values[key] = json.loads(json.dumps(value))

    def restartPython(self) -> None:
        self.restarted += 1

    def exit(self, value: str) -> None:  # notebook.exit
        self.exited.append(value)


@pytest.mark.slow
def test_generate_writes_the_notebooks_beside_the_job_files(tmp_path: Path) -> None:
    p = make_project(
        tmp_path,
        """\
        from databricks_bundle_decorators import job, set_task_value, task

        @job(name="JOBPREFIX_nb")
        def nb():
            @task
            def discover():
                set_task_value("k", 1)
            discover()
        """,
    )
    fake_framework_wheel(tmp_path / "wheels")
    generate_project(open_project(tmp_path))
    job_file = (tmp_path / "resources" / f"{p.job('nb')}.job.yml").read_text(encoding="utf-8")
    assert f"notebook_path: ./dbxdec_notebooks/{p.job('nb')}__discover.py" in job_file
    notebook = tmp_path / "resources" / "dbxdec_notebooks" / f"{p.job('nb')}__discover.py"
    assert notebook.read_text(encoding="utf-8").startswith(NOTEBOOK_HEADER)


@pytest.mark.slow
def test_the_example_bundle_generates_its_notebook_and_validates(tmp_path: Path) -> None:
    from .test_load import _build

    code, output, diagnostics, stderr = _build(REPO_ROOT, tmp_path, "dev", {"catalog": "dev"})
    assert [d for d in diagnostics if d.get("severity") == "error"] == [], stderr
    assert code == 0
    job = output["resources"]["jobs"]["sales_pipeline"]
    assert SchemaValidator(schema_path()).problems("sales_pipeline", job) == []
    tasks = _tasks(job)
    # generate_events calls set_task_value: a notebook task; the others stay wheel tasks.
    path = tasks["generate_events"]["notebook_task"]["notebook_path"]
    assert path == "./resources/dbxdec_notebooks/sales_pipeline__generate_events.py"
    assert all("python_wheel_task" in tasks[k] for k in tasks if k != "generate_events")
    source = (REPO_ROOT / path).read_text(encoding="utf-8")
    assert source.startswith(NOTEBOOK_HEADER)
    assert "# MAGIC %pip install ../../dist/*.whl" in source  # the repository is dbxdec itself


def test_the_notebook_ends_with_its_report_lines_and_fails_in_one_line_over_5_mb(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``dbutils.notebook.exit()``'s value is kept to its first 5 MB
    (databricks-sdk ``jobs.NotebookOutput.result``): more fails the task, never cut."""
    from databricks_bundle_decorators.backfill.wire import exit_value_text, report_line
    from databricks_bundle_decorators.errors import DbxdecError
    from databricks_bundle_decorators.runtime import notebook_entry

    reports = [report_line("undo", {"table": "t", "version": 3})]
    monkeypatch.setattr(notebook_entry, "run", lambda *a, **k: print("noise", *reports, sep="\n"))
    dbutils = _StubDbutils({})
    notebook_entry.run_notebook(dbutils, [])
    assert [exit_value_text(value) for value in dbutils.exited] == reports[0:1]
    assert "noise" in capsys.readouterr().out  # the run's output still reaches the notebook

    reports = [report_line("undo", {"table": "t" * 6_000_000, "version": 3})]
    with pytest.raises(DbxdecError, match="over the 5 MB"):
        notebook_entry.run_notebook(dbutils, [])
    assert len(dbutils.exited) == 1
