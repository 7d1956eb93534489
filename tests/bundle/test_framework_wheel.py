"""dbxdec's own wheel: made from the running installation, shipped by codegen, checked
before deploy (bundle/framework_wheel.py, options.py)."""

from __future__ import annotations

import base64
import csv
import hashlib
import io
import json
import subprocess
import sys
import zipfile
from importlib import metadata
from pathlib import Path

import pytest

from databricks_bundle_decorators import Registry, __version__, job_cluster, task
from databricks_bundle_decorators.bundle import job_resource
from databricks_bundle_decorators.bundle.framework_wheel import (
    check_framework_wheel,
    default_framework_wheel,
    framework_wheel_name,
    install_source,
    wheel_version,
    write_framework_wheel,
)
from databricks_bundle_decorators.bundle.options import options_from_config
from databricks_bundle_decorators.bundle.project import load_config
from databricks_bundle_decorators.errors import UsageError

from .projects import DAILY_PIPELINE, fake_framework_wheel, make_project

WHEEL = framework_wheel_name()
PIP_INSTALL = [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index"]


def _top_level(path: Path) -> set[str]:
    with zipfile.ZipFile(path) as archive:
        return {name.split("/", 1)[0] for name in archive.namelist()}


def _assert_record_matches(path: Path) -> None:
    with zipfile.ZipFile(path) as archive:
        dist_info = f"dbxdec-{__version__}.dist-info"
        rows = list(csv.reader(io.StringIO(archive.read(f"{dist_info}/RECORD").decode())))
        assert {row[0] for row in rows} == set(archive.namelist())
        for name, digest, size in rows:
            if name.endswith("/RECORD"):
                assert (digest, size) == ("", "")
                continue
            data = archive.read(name)
            expected = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=")
            assert (digest, size) == (f"sha256={expected.decode()}", str(len(data))), name


def test_the_running_dbxdec_builds_from_its_source_folder(framework_wheel: Path) -> None:
    assert install_source(metadata.distribution("dbxdec")).directory is not None
    assert framework_wheel.name == WHEEL == f"dbxdec-{__version__}-py3-none-any.whl"
    assert _top_level(framework_wheel) == {
        "databricks_bundle_decorators",
        f"dbxdec-{__version__}.dist-info",
    }
    with zipfile.ZipFile(framework_wheel) as archive:
        names = set(archive.namelist())
    assert "databricks_bundle_decorators/templates/project/pyproject.toml.tmpl" in names
    assert "databricks_bundle_decorators/examples/sales_pipeline.py" in names
    assert wheel_version(framework_wheel) == __version__


def _installed_copy(wheel: Path, site: Path, direct_url: dict[str, object] | None) -> Path:
    """Unpack ``wheel`` into ``site`` as an installer would, with a console script outside
    site-packages and a stale __pycache__; return the dist-info folder."""
    with zipfile.ZipFile(wheel) as archive:
        archive.extractall(site)
    dist_info = site / f"dbxdec-{__version__}.dist-info"
    cache = site / "databricks_bundle_decorators" / "__pycache__" / "errors.cpython-311.pyc"
    cache.parent.mkdir(exist_ok=True)
    cache.write_bytes(b"stale")
    extra = [
        "../../../bin/dbxdec,,",
        "databricks_bundle_decorators/__pycache__/errors.cpython-311.pyc,,",
        f"{dist_info.name}/INSTALLER,,",
    ]
    (dist_info / "INSTALLER").write_text("pip\n", encoding="utf-8")
    with (dist_info / "RECORD").open("a", encoding="utf-8") as record:
        record.write("\n".join(extra) + "\n")
    if direct_url is not None:
        (dist_info / "direct_url.json").write_text(json.dumps(direct_url), encoding="utf-8")
    return dist_info


def test_an_index_install_is_rebuilt_from_its_record(framework_wheel: Path, tmp_path: Path) -> None:
    dist_info = _installed_copy(framework_wheel, tmp_path / "site", direct_url=None)
    distribution = metadata.PathDistribution(dist_info)
    rebuilt = write_framework_wheel(tmp_path / "out", distribution)
    assert rebuilt.name == WHEEL
    _assert_record_matches(rebuilt)
    with zipfile.ZipFile(rebuilt) as archive, zipfile.ZipFile(framework_wheel) as original:
        assert set(archive.namelist()) == set(original.namelist())
        for name in original.namelist():
            if not name.endswith("/RECORD"):
                assert archive.read(name) == original.read(name), name
    target = tmp_path / "target"
    installed = subprocess.run(
        [*PIP_INSTALL, "--target", str(target), str(rebuilt)],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert installed.returncode == 0, installed.stderr
    assert (target / "databricks_bundle_decorators" / "bundle" / "framework_wheel.py").is_file()


def test_a_wheel_file_install_copies_that_file(framework_wheel: Path, tmp_path: Path) -> None:
    original = tmp_path / "dl" / "dbxdec-0.1.0-py3-none-any.whl"
    original.parent.mkdir()
    original.write_bytes(framework_wheel.read_bytes())
    dist_info = _installed_copy(
        framework_wheel,
        tmp_path / "site",
        direct_url={"url": original.as_uri(), "archive_info": {}},
    )
    distribution = metadata.PathDistribution(dist_info)
    assert install_source(distribution).wheel == original
    copied = write_framework_wheel(tmp_path / "out", distribution)
    assert copied.read_bytes() == original.read_bytes()


def test_a_wheel_of_another_version_is_refused(tmp_path: Path) -> None:
    other = fake_framework_wheel(tmp_path / "dl", version="0.0.1")
    dist_info = tmp_path / "site" / f"dbxdec-{__version__}.dist-info"
    dist_info.mkdir(parents=True)
    (dist_info / "METADATA").write_text(
        f"Metadata-Version: 2.4\nName: dbxdec\nVersion: {__version__}\n", encoding="utf-8"
    )
    (dist_info / "direct_url.json").write_text(
        json.dumps({"url": other.as_uri(), "archive_info": {}}), encoding="utf-8"
    )
    with pytest.raises(UsageError, match=r"has version 0\.0\.1, but the running dbxdec is"):
        write_framework_wheel(tmp_path / "out", metadata.PathDistribution(dist_info))
    assert not (tmp_path / "out" / WHEEL).exists()


# -- the deploy check -------------------------------------------------------------------------


def test_the_deploy_check_accepts_the_running_version(tmp_path: Path) -> None:
    fake_framework_wheel(tmp_path / "wheels")
    check_framework_wheel(tmp_path, f"./{default_framework_wheel()}")
    check_framework_wheel(tmp_path, f"/Volumes/main/libs/{WHEEL}")


def test_the_deploy_check_names_both_versions_and_the_refresh_command(tmp_path: Path) -> None:
    fake_framework_wheel(tmp_path / "wheels", version="0.0.9")
    with pytest.raises(UsageError) as missing:
        check_framework_wheel(tmp_path, f"./{default_framework_wheel()}")
    assert str(missing.value) == (
        f"framework wheel ./wheels/{WHEEL} not found (wheels/ holds dbxdec 0.0.9); this is "
        f"dbxdec {__version__}: run 'dbxdec wheel' in {tmp_path} to write wheels/{WHEEL} and "
        f"pin dbxdec=={__version__} in pyproject.toml"
    )
    with pytest.raises(UsageError, match=rf"is dbxdec 0\.0\.9, but this is dbxdec {__version__}"):
        check_framework_wheel(tmp_path, "wheels/dbxdec-0.0.9-py3-none-any.whl")


# -- codegen --------------------------------------------------------------------------------------


def test_the_setting_resolves_like_the_project_wheel(tmp_path: Path) -> None:
    make_project(
        tmp_path,
        DAILY_PIPELINE,
        tool='framework_wheel = "libs/dbxdec.whl"\n'
        '[tool.dbxdec.targets.prod]\nframework_wheel = "/Volumes/main/libs/dbxdec.whl"\n',
    )
    config = load_config(tmp_path)
    assert options_from_config(config, wheel_prefix="../").wheels == (
        "../libs/dbxdec.whl",
        "../dist/*.whl",
    )
    assert options_from_config(config, target="prod").framework_wheel == (
        "/Volumes/main/libs/dbxdec.whl"
    )


def test_the_default_is_the_running_version(tmp_path: Path) -> None:
    make_project(tmp_path, DAILY_PIPELINE)
    options = options_from_config(load_config(tmp_path))
    assert options.wheels == (f"./wheels/{WHEEL}", "./dist/*.whl")


@pytest.mark.parametrize("distribution", ["dbxdec", "DBXDEC", "dbx_dec"])
def test_dbxdec_itself_ships_one_wheel(distribution: str) -> None:
    registry = Registry()

    @registry.job(cluster=job_cluster("c", spark_version="16.4.x-scala2.12", num_workers=1))
    def classic() -> None:
        @task
        def t() -> None: ...

        t()

    @registry.job
    def serverless() -> None:
        @task
        def t() -> None: ...

        t()

    framework = distribution.lower() == "dbxdec"
    libraries = job_resource(registry.get("classic"), package_name=distribution)["tasks"][0]
    environment = job_resource(registry.get("serverless"), package_name=distribution)
    wheels = ["./dist/*.whl"] if framework else [f"./wheels/{WHEEL}", "./dist/*.whl"]
    assert libraries["libraries"] == [{"whl": w} for w in wheels]
    assert environment["environments"][0]["spec"]["dependencies"] == wheels
