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
    for name, command in group.commands.items():
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
