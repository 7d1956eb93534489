"""docs/guides/try-without-a-workspace.md, run as written in a fresh folder, as
tests/test_getting_started.py runs getting-started: every ``<!-- test: run -->`` block's
lines in order, and what they printed compared with the ``<!-- test: stdout -->`` (or
``stderr``) block after it, with the same normalisation (ids, clock times, durations,
the home folder) plus the emulator's port and token.

``<!-- test: run in background -->`` marks the block that starts ``dbxdec emulator``: the
test starts it, waits for its last banner line (an event, not a sleep), compares the
banner, and at the end stops it with SIGINT as Ctrl-C would. ``eval "$(CMD)"`` runs CMD
and applies the ``export`` line it printed; ``cd`` moves; every other line runs in
``bash -c`` with the checkout's ``dbxdec`` first on ``PATH``. A backfill id in a command
stands for the id of the latest backfill printed before it.

``DBXDEC_UPDATE_PAGE=1`` rewrites the page's output blocks from this run instead of
comparing (then read the diff before committing it).
"""

from __future__ import annotations

import difflib
import os
import re
import shlex
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from databricks_bundle_decorators.runtime.session.delta_jars import jars_dir
from tests.test_getting_started import PAGE_HOME, normalise

PAGE = Path(__file__).resolve().parents[1] / "docs" / "guides" / "try-without-a-workspace.md"
_BLOCK = re.compile(r"<!-- test: (?P<marker>[^>]*?) -->\n```(?P<lang>\w+)\n(?P<body>.*?)```", re.S)
_EXPECTED = re.compile(r"(?P<stream>stdout|stderr)(?:, exit (?P<exit>\d+))?")
_BACKFILL_ID = re.compile(r"\b[a-z_]+-\d{8}T\d{6}-[0-9a-f]{4}\b")
_EMULATOR = (
    (re.compile(r"127\.0\.0\.1:\d+"), "127.0.0.1:<port>"),
    (re.compile(r"dapi[0-9a-f]{32}"), "<token>"),
)
READY = "Ctrl-C stops it."


def _normalise(text: str, home: str) -> str:
    for pattern, placeholder in _EMULATOR:
        text = pattern.sub(placeholder, text)
    return normalise(text, home, str(jars_dir()))


class Reader:
    """A reader's two terminals: the emulator's, and the one they type in."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self.cwd = home
        self.env = {k: v for k, v in os.environ.items() if not k.startswith("DATABRICKS_")}
        self.env.update(
            HOME=str(home),
            USER="you",
            LOGNAME="you",  # the emulator's user: jobs are '[dev you] ...'
            DATABRICKS_CONFIG_FILE=str(home / "no-databrickscfg"),
            DBXDEC_JARS_DIR=str(jars_dir()),
            PATH=os.pathsep.join([str(Path(sys.executable).parent), "/usr/bin", "/bin"]),
        )
        self.emulator: subprocess.Popen[str] | None = None
        self.banner: list[str] = []
        self.last_id = ""

    def background(self, line: str) -> tuple[str, str, int]:
        self.emulator = subprocess.Popen(
            ["bash", "-c", f"exec {line}"],
            cwd=self.cwd,
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        assert self.emulator.stdout is not None
        for printed in self.emulator.stdout:  # until its banner's last line
            self.banner.append(printed)
            if printed.strip() == READY:
                break
        return "".join(self.banner), "", 0

    def run(self, line: str) -> tuple[str, str, int]:
        words = shlex.split(line)
        if words[0] == "cd":
            self.cwd = self.cwd / words[1]
            return "", "", 0
        if self.last_id:
            line = _BACKFILL_ID.sub(self.last_id, line)
        evaluated = re.fullmatch(r'eval "\$\((?P<command>.*)\)"', line)
        command = evaluated["command"] if evaluated else line
        done = subprocess.run(
            ["bash", "-c", command],
            cwd=self.cwd,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        if evaluated:
            assert done.returncode == 0, done.stderr
            for assignment in shlex.split(done.stdout)[1:]:  # export A=1 B=2
                name, value = assignment.split("=", 1)
                self.env[name] = value
            return "", done.stderr, 0
        ids = _BACKFILL_ID.findall(done.stdout + done.stderr)
        self.last_id = ids[0] if ids else self.last_id
        return done.stdout, done.stderr, done.returncode

    def stop(self) -> int | None:
        if self.emulator is None:
            return None
        self.emulator.send_signal(signal.SIGINT)
        try:
            return self.emulator.wait(timeout=60)
        finally:
            if self.emulator.poll() is None:
                self.emulator.kill()


@pytest.mark.slow
def test_the_try_without_a_workspace_guide_prints_what_the_page_shows(tmp_path: Path) -> None:
    text = PAGE.read_text(encoding="utf-8")
    home = tmp_path / "home"
    home.mkdir()
    reader = Reader(home)
    problems: list[str] = []
    updates: list[tuple[int, int, str]] = []  # DBXDEC_UPDATE_PAGE: (start, end, new body)
    blocks = list(_BLOCK.finditer(text))
    watchdog = threading.Timer(600, reader.stop)  # never a hang, whatever happens
    watchdog.start()
    try:
        printed: tuple[str, str, int] = ("", "", 0)
        for block in blocks:
            marker, lang, body = block["marker"], block["lang"], block["body"]
            where = f"{PAGE.name} line {text.count(chr(10), 0, block.start()) + 1}"
            if lang == "bash":
                assert marker in ("run", "run in background") or marker.startswith("not run (")
                if marker.startswith("not run"):
                    continue
                lines = [c for c in body.splitlines() if c.strip()]
                out: list[str] = []
                for line in lines:
                    step = reader.background(line) if marker != "run" else reader.run(line)
                    out.append(step[0])
                    printed = ("".join(out), step[1], step[2])
                continue
            expected = _EXPECTED.fullmatch(marker)
            assert expected and lang == "text", f"{where}: unknown marker {marker!r}"
            stdout, stderr, status = printed
            if status != int(expected["exit"] or 0):
                problems.append(
                    f"{where}: exit {status}, page says {expected['exit'] or 0}\n{stderr}"
                )
                continue
            got = stdout if expected["stream"] == "stdout" else stderr
            if os.environ.get("DBXDEC_UPDATE_PAGE"):
                updates.append((block.start("body"), block.end("body"), got))
                continue
            actual, shown = _normalise(got, str(home)), _normalise(body, str(home))
            if actual != shown:
                diff = difflib.unified_diff(
                    shown.splitlines(), actual.splitlines(), "page", "printed", lineterm=""
                )
                problems.append(f"{where}:\n" + "\n".join(diff))
    finally:
        stopped = reader.stop()
        watchdog.cancel()
    for start, end, got in reversed(updates):
        text = text[:start] + got.replace(str(home), PAGE_HOME) + text[end:]
    if updates:
        PAGE.write_text(text, encoding="utf-8")
    assert stopped == 130, "Ctrl-C ends dbxdec emulator with exit 130"
    assert not (home / "try_project" / ".dbxdec" / "emulator.json").exists(), "state file left"
    assert not problems, "\n\n".join(problems)
