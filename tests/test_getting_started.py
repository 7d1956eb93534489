"""docs/getting-started.md, run as written, so the page cannot drift from the program.

The page marks its blocks with HTML comments (invisible on the site):

- ``<!-- test: run -->`` before a ```` ```bash ```` block: every line is run, in order, in a
  fresh folder that stands for the reader's home (``~``, ``$HOME``);
- ``<!-- test: stdout -->`` before a ```` ```text ```` block: what the ``dbxdec`` and
  ``pytest`` commands of the run block before it printed on stdout, together;
- ``<!-- test: stderr, exit N -->``: what the block's last command printed on stderr, and
  its exit status;
- ``<!-- test: not run (why) -->``: a block the test leaves out, saying why.

Every ```` ```bash ```` block must carry one of the markers. ``dbxdec`` is the console script
of a wheel built from this checkout (``$HOME/dbxdec/dist/`` holds it, as ``make wheel``
writes it in a clone). The venvs are real venvs made without pip, whose ``.pth`` file
appends this environment's site-packages, so the wheel's own files come first and
PySpark and the other dependencies need no download; ``pip install`` lines run this
interpreter's pip against the venv (``pip --python``). Ids, clock times, durations, the
home folder and the jar and Java paths are normalised on both sides; nothing else is.
"""

from __future__ import annotations

import difflib
import os
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from databricks_bundle_decorators import __version__
from databricks_bundle_decorators.runtime.session.delta_jars import jars_dir

PAGE = Path(__file__).resolve().parents[1] / "docs" / "getting-started.md"
PAGE_HOME = "/home/you"
"""The home folder the page shows in its outputs."""

_MARKED = re.compile(r"<!-- test: (?P<marker>[^>]*?) -->\n```(?P<lang>\w+)\n(?P<body>.*?)```", re.S)
_EXPECTED = re.compile(r"(?P<stream>stdout|stderr)(?:, exit (?P<exit>\d+))?")
# Order matters: a backfill id contains what would otherwise read as a clock-free run id.
_VARYING: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"\b[a-z_]+-\d{8}T\d{6}-[0-9a-f]{4}\b"), "<backfill-id>"),
    (re.compile(r"\b\d{8}T\d{6}-[0-9a-f]{8}\b"), "<run-id>"),
    (re.compile(r"\b\d{4}-\d{2}-\d{2} \d{2}:\d{2}\b"), "<started>"),
    (re.compile(r"\b\d{2}:\d{2}:\d{2}\b"), "<clock>"),
    (re.compile(r"(?<=passed) in \d+\.\d+s(?: \(\d+:\d{2}:\d{2}\))?$", re.M), " in <pytest-time>"),
    (re.compile(r"\b(?:\d+m)?\d+(?:\.\d+)?s\b"), "<duration>"),
    (re.compile(r"^java +\S+$", re.M), "java <java>"),
)


@dataclass
class Step:
    """A run block of the page and what it is expected to print."""

    line: int
    commands: list[str]
    stream: str | None = None
    exit_status: int = 0
    expected: str | None = None


@dataclass
class Printed:
    stdout: list[str] = field(default_factory=list)
    stderr: str = ""
    exit_status: int = 0


def page_steps(text: str) -> list[Step]:
    """The page's run blocks in order, each with its expected output (if any)."""
    steps: list[Step] = []
    marked_bash = 0
    for match in _MARKED.finditer(text):
        marker, lang, body = match["marker"], match["lang"], match["body"]
        line = text.count("\n", 0, match.start()) + 1
        if lang == "bash":
            marked_bash += 1
            assert marker == "run" or marker.startswith("not run ("), f"line {line}: {marker}"
            if marker == "run":
                steps.append(Step(line, [c for c in body.splitlines() if c.strip()]))
            continue
        expected = _EXPECTED.fullmatch(marker)
        assert expected and lang == "text", f"line {line}: unknown marker {marker!r}"
        assert steps and steps[-1].expected is None, f"line {line}: no run block before"
        steps[-1].stream = expected["stream"]
        steps[-1].exit_status = int(expected["exit"] or 0)
        steps[-1].expected = body
    assert marked_bash == text.count("```bash\n"), "a ```bash block has no 'test:' marker"
    return steps


def normalise(text: str, home: str, jars: str) -> str:
    """``text`` with the varying parts replaced by placeholders and spaces collapsed."""
    text = text.replace(jars, f"{PAGE_HOME}/.cache/dbxdec/jars").replace(home, PAGE_HOME)
    for pattern, placeholder in _VARYING:
        text = pattern.sub(placeholder, text)
    lines = (re.sub(r" {2,}", " ", line).strip() for line in text.splitlines())
    return "\n".join(line for line in lines if line)


def _make_venv(path: Path) -> None:
    """A venv without pip that also sees this environment's packages (after its own)."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True)
    purelib = subprocess.run(
        [
            str(path / "bin" / "python"),
            "-c",
            "import sysconfig; print(sysconfig.get_paths()['purelib'])",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    parent = sysconfig.get_paths()["purelib"]
    (Path(purelib) / "dbxdec_parent_env.pth").write_text(
        f"import site; site.addsitedir({parent!r})\n", encoding="utf-8"
    )


class Reader:
    """Runs the page's commands as a reader's shell would, in a fresh home folder."""

    def __init__(self, home: Path, jars: Path) -> None:
        self.home = home
        self.cwd = home
        self.venv: Path | None = None
        java = shutil.which("java")
        path = [str(Path(java).parent)] if java else []
        self.env = {
            name: value
            for name, value in os.environ.items()
            if not name.startswith(("DATABRICKS_", "VIRTUAL_ENV", "PYTHONPATH"))
        }
        self.env.update(HOME=str(home), DBXDEC_JARS_DIR=str(jars))
        self.path = [*path, "/usr/bin", "/bin"]

    def _path(self, word: str) -> Path:
        word = word.replace("$HOME", str(self.home))
        if word.startswith("~"):
            word = str(self.home) + word[1:]
        return self.cwd / word

    def run(self, line: str, printed: Printed) -> None:
        for command in line.split("&&"):
            words = shlex.split(command.replace("$HOME", str(self.home)), comments=True)
            self._one(words, printed, line)

    def _one(self, words: list[str], printed: Printed, line: str) -> None:
        name, args = words[0], words[1:]
        if words[:3] == ["python", "-m", "venv"] and len(args) == 3:
            _make_venv(self._path(args[2]))
            return
        if name in (".", "source"):
            self.venv = self._path(args[0]).parents[1]
            return
        if name == "cd":
            self.cwd = self._path(args[0])
            return
        assert self.venv is not None, f"{line}: no venv is active"
        python = str(self.venv / "bin" / "python")
        env = {**self.env, "VIRTUAL_ENV": str(self.venv)}
        env["PATH"] = os.pathsep.join([str(self.venv / "bin"), *self.path])
        if name == "pip":
            # pip's own cache and index settings: the real home, not the reader's.
            command = [sys.executable, "-m", "pip", "--python", python, *args, "--quiet"]
            env = {**env, "HOME": os.environ.get("HOME", str(self.home))}
        elif name == "pytest":
            command = [python, "-m", "pytest", "-p", "no:cacheprovider", *args]
        elif name == "dbxdec":
            command = [str(self.venv / "bin" / "dbxdec"), *args]
        else:
            raise AssertionError(f"the test does not know how to run {line!r}")
        done = subprocess.run(
            command, cwd=self.cwd, env=env, capture_output=True, text=True, timeout=600
        )
        if name == "pip":
            assert done.returncode == 0, f"{line}: {done.stderr}"
            return
        printed.stdout.append(done.stdout)
        printed.stderr = done.stderr
        printed.exit_status = done.returncode


@pytest.mark.slow
def test_every_getting_started_command_prints_what_the_page_shows(
    tmp_path: Path, framework_wheel: Path
) -> None:
    home = tmp_path / "home"
    dist = home / "dbxdec" / "dist"
    dist.mkdir(parents=True)
    shutil.copy2(framework_wheel, dist / framework_wheel.name)
    jars = jars_dir()
    reader = Reader(home, jars)
    problems: list[str] = []
    for step in page_steps(PAGE.read_text(encoding="utf-8")):
        printed = Printed()
        for line in step.commands:
            reader.run(line, printed)
        where = f"docs/getting-started.md line {step.line} ({step.commands[-1]})"
        if printed.exit_status != step.exit_status:
            problems.append(
                f"{where}: exit {printed.exit_status}, page says {step.exit_status}\n"
                f"{printed.stderr[-2000:]}"
            )
            continue
        if step.expected is None:
            continue
        got = "".join(printed.stdout) if step.stream == "stdout" else printed.stderr
        actual = normalise(got, str(home), str(jars))
        shown = normalise(step.expected, str(home), str(jars))
        if actual != shown:
            diff = difflib.unified_diff(
                shown.splitlines(), actual.splitlines(), "page", "printed", lineterm=""
            )
            problems.append(f"{where}:\n" + "\n".join(diff))
    _check_the_pin_is_found_in_wheels(home / "my_project")
    assert not problems, "\n\n".join(problems)


def test_the_page_normalisation_keeps_what_matters() -> None:
    """Only the declared varying parts are replaced: a changed word, count or key shows."""
    page = "Run 20261123T133404-9e86e839 succeeded for key 2024-01-02 in 1m01s."
    same = "Run 20261124T224634-450c23fa succeeded for key 2024-01-02 in 34.57s."
    assert normalise(page, "/x", "/j") == normalise(same, "/x", "/j")
    for changed in (
        same.replace("2024-01-02", "2024-01-03"),
        same.replace("succeeded", "failed"),
        same.replace("Run ", "Runs "),
    ):
        assert normalise(page, "/x", "/j") != normalise(changed, "/x", "/j")
    steps = page_steps(PAGE.read_text(encoding="utf-8"))
    assert [s.commands[0] for s in steps][:2] == [
        "python -m venv ~/.venvs/dbxdec && . ~/.venvs/dbxdec/bin/activate",
        "cd my_project",
    ]
    assert all(s.expected is not None for s in steps), "a run block shows no output"


def _check_the_pin_is_found_in_wheels(project: Path) -> None:
    """Issue 25, item 1: ``pip install -e ".[dev]"`` before the bundled wheel ended in pip's
    bare "No matching distribution found for dbxdec==0.1.0". The project's README passes
    ``--find-links wheels``, which finds the pinned dbxdec there (no index needed)."""
    readme = (project / "README.md").read_text(encoding="utf-8")
    assert 'pip install --find-links wheels -e ".[dev]"' in readme
    pin = f"dbxdec=={__version__}"
    assert f'dependencies = ["{pin}"]' in (project / "pyproject.toml").read_text("utf-8")
    pip = [sys.executable, "-m", "pip", "install", "--dry-run", "--no-index", "--no-deps"]
    pip += ["--ignore-installed", pin]

    def install(*extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*pip, *extra], cwd=project, capture_output=True, text=True, timeout=120
        )

    found = install("--find-links", "wheels")
    assert found.returncode == 0, found.stderr
    assert f"Would install dbxdec-{__version__}" in found.stdout
    missing = install()  # the README's line without --find-links, before the wheel
    assert missing.returncode != 0
    assert f"No matching distribution found for {pin}" in missing.stderr
