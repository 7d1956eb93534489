"""The documentation site lists the whole public API and every CLI command.

The API reference pages (docs/reference/api/*.md) render names with mkdocstrings' ``:::``
directives, and the CLI reference (docs/reference/cli.md) renders commands with
mkdocs-click blocks. These tests read the directives, so a name added to
docs/public_api.txt or a command added to ``dbxdec`` without a page entry fails here,
without building the site (``make docs`` builds it, with ``--strict``).
"""

from __future__ import annotations

import importlib
import re
from pathlib import Path

import click
import pytest

from databricks_bundle_decorators.cli.main import cli

DOCS = Path(__file__).resolve().parents[1] / "docs"
API_PAGES = sorted((DOCS / "reference" / "api").glob("*.md"))
PUBLIC_API = (DOCS / "public_api.txt").read_text().split()

_DIRECTIVE = re.compile(r"^:::\s+(\S+)\s*$", re.MULTILINE)
_CLICK_BLOCK = re.compile(
    r"^::: mkdocs-click\n((?:    :\w+: .*\n)+)",
    re.MULTILINE,
)


def _documented_names() -> dict[str, list[str]]:
    """Each ``:::`` identifier of the API pages, with the pages it is on."""
    found: dict[str, list[str]] = {}
    for page in API_PAGES:
        for name in _DIRECTIVE.findall(page.read_text()):
            found.setdefault(name, []).append(page.name)
    return found


@pytest.mark.parametrize("name", PUBLIC_API)
def test_every_public_name_is_in_the_api_reference(name: str) -> None:
    assert name in _documented_names(), (
        f"{name} is in docs/public_api.txt but no page of docs/reference/api/ has "
        f"'::: {name}'; add it to the page of its module"
    )


def test_the_api_reference_documents_only_public_names_once_each() -> None:
    found = _documented_names()
    assert sorted(set(found) - set(PUBLIC_API)) == [], (
        "directives for names that are not in docs/public_api.txt"
    )
    assert {name: pages for name, pages in found.items() if len(pages) > 1} == {}


def _click_blocks() -> list[dict[str, str]]:
    text = (DOCS / "reference" / "cli.md").read_text()
    blocks = []
    for body in _CLICK_BLOCK.findall(text):
        options = dict(re.findall(r"^    :(\w+): (.*)$", body, re.MULTILINE))
        blocks.append(options)
    return blocks


def _commands(group: click.Group, prefix: str = "dbxdec") -> dict[str, click.Command]:
    """Every runnable command under ``group``: a group that runs a default command when
    no subcommand is named (``dbxdec backfill JOB``) counts as that command."""
    found: dict[str, click.Command] = {}
    ctx = click.Context(group)
    for name in group.list_commands(ctx):  # the dbxdec group loads its commands when asked
        command = group.get_command(ctx, name)
        assert command is not None, f"{prefix} {name} is listed but not found"
        path = f"{prefix} {name}"
        if isinstance(command, click.Group):
            default = getattr(command, "default", None)
            if isinstance(default, click.Command):
                found[path] = default
            found.update(_commands(command, path))
        else:
            found[path] = command
    return found


def test_the_cli_reference_renders_every_command() -> None:
    rendered: dict[str, click.Command] = {}
    for block in _click_blocks():
        module = importlib.import_module(block["module"])
        rendered[block["prog_name"]] = getattr(module, block["command"])
    expected = _commands(cli)
    assert sorted(rendered) == sorted(expected), "a command is missing from docs/reference/cli.md"
    for path, command in expected.items():
        assert rendered[path] is command, f"{path}: the block renders another command"


def test_the_readme_puts_dbxdec_on_path_right_after_make_demo() -> None:
    """After ``make demo`` a new user types ``dbxdec``: the README's first commands say
    to activate the venv that holds it (issue 14, point 5)."""
    readme = (Path(__file__).resolve().parent.parent / "README.md").read_text("utf-8")
    first_block = readme.split("```bash\n", 1)[1].split("```", 1)[0].splitlines()
    demo = next(i for i, line in enumerate(first_block) if line.startswith("make demo"))
    assert first_block[demo + 1].startswith(". .venv/bin/activate")
    assert "dbxdec" in first_block[demo + 1]


ROOT = Path(__file__).resolve().parent.parent
# "pip install dbxdec", "pip install 'dbxdec[spark]'", "pip install dbxdec==0.1.0": by name
# from an index, where dbxdec is not published yet (issue 25, item 1). A path to its wheel
# (wheels/dbxdec-..., dist/dbxdec-...) is fine.
_INSTALL_BY_NAME = re.compile(r"""pip install (?:-U |--upgrade )?["']?dbxdec(?![-\w/.])""")


def _user_facing_texts() -> dict[str, str]:
    package = ROOT / "src" / "databricks_bundle_decorators"
    paths = [ROOT / "README.md", *DOCS.rglob("*.md"), *(package / "templates").rglob("*")]
    paths += package.rglob("*.py")
    return {
        str(path.relative_to(ROOT)): path.read_text(encoding="utf-8")
        for path in paths
        if path.is_file()
    }


def test_nothing_tells_users_to_install_dbxdec_by_name_from_the_index() -> None:
    found = {
        name: match.group(0)
        for name, text in _user_facing_texts().items()
        for match in _INSTALL_BY_NAME.finditer(text)
    }
    assert found == {}


def test_the_install_by_name_check_can_fail() -> None:
    for bad in ('pip install "dbxdec[spark]"', "pip install dbxdec", "pip install dbxdec==0.1.0"):
        assert _INSTALL_BY_NAME.search(bad), bad
    for good in ("pip install wheels/dbxdec-0.1.0-py3-none-any.whl", "pip install -e ."):
        assert not _INSTALL_BY_NAME.search(good), good


def test_the_missing_spark_messages_name_the_spark_extra_s_pins() -> None:
    from databricks_bundle_decorators.launch.backends.errors import SPARK_EXTRA_INSTALL
    from databricks_bundle_decorators.runtime.session.spark import SPARK_EXTRA

    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        import tomli as tomllib
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    pins = project["project"]["optional-dependencies"]["spark"]
    expected = "pip install " + " ".join(f'"{pin}"' for pin in pins)
    assert SPARK_EXTRA == SPARK_EXTRA_INSTALL == expected


def test_the_readme_quick_start_sets_up_and_runs_the_demo_before_the_tests() -> None:
    """Issue 25, item 1: the quick start began with ``make test`` (the whole suite) and
    never named ``make setup``."""
    readme = (ROOT / "README.md").read_text("utf-8")
    first_block = readme.split("```bash\n", 1)[1].split("```", 1)[0].splitlines()
    targets = [line.split()[1] for line in first_block if line.startswith("make ")]
    assert targets[:2] == ["setup", "demo"]
    assert targets.index("test") > 1
    assert "wheel" in targets


def test_make_wheel_writes_dist_with_dbxdec_s_own_builder() -> None:
    makefile = (ROOT / "Makefile").read_text("utf-8")
    recipe = makefile.split("\nwheel:", 1)[1].split("\n\n", 1)[0]
    assert "dbxdec wheel --out dist" in recipe


def test_the_docs_call_local_tables_delta_and_the_ledger_sqlite() -> None:
    """Issue 25, item 9: ``dbxdec run --help`` (and so the CLI reference, rendered from
    it) and the example's docstring said parquet; runtime.md named the ledger .json."""
    from databricks_bundle_decorators.cli.commands.run_commands import run_command
    from databricks_bundle_decorators.examples import sales_pipeline

    help_text = run_command.get_help(click.Context(run_command, info_name="run"))
    assert "parquet" not in help_text.lower()
    assert "Delta" in help_text
    assert "parquet" not in (sales_pipeline.__doc__ or "").lower()
    assert "backfills/<id>.json" not in (DOCS / "runtime.md").read_text("utf-8")
