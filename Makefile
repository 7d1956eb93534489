# One command sets everything up and runs the tests: `make test`.
# One command runs the demo: `make demo`.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
PYTEST_ARGS ?=
# Two pytest-xdist workers (the machines have 2 cores): tests/conftest.py puts every test
# that uses Spark on one worker (--dist loadgroup), so ONE SparkSession serves the run
# while the other worker runs the tests that need no Spark. PYTEST_WORKERS=0: one process.
PYTEST_WORKERS ?= 2

.PHONY: setup java spark clients faketime chromium test connect-lane lint docs demo wheel bench bench-earlier soak clean

setup: $(STAMP) java spark clients faketime chromium

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[dev]"
	@touch $(STAMP)

# PySpark needs a Java runtime (17 or newer). Installed with apt when missing and we are
# root; otherwise we say exactly what to install.
java:
	@if command -v java >/dev/null 2>&1; then :; \
	elif [ "$$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then \
		echo "java not found: installing openjdk-17-jre-headless with apt-get"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openjdk-17-jre-headless >/dev/null; \
	else \
		echo "java not found: PySpark needs a Java 17 runtime. Install it, e.g." >&2; \
		echo "  sudo apt-get install openjdk-17-jre-headless" >&2; \
		exit 1; \
	fi

# Local runs write Delta: fetch the Delta Lake jars once, into a cache outside the
# repository (~/.cache/dbxdec/jars, or $$DBXDEC_JARS_DIR); a no-op when they are there.
spark: $(STAMP) java
	@$(BIN)/dbxdec setup-spark --quiet

# The client-floor test reads the PySpark API of the oldest Databricks Connect dbxdec supports
# from its wheel: downloaded once (pip download --no-deps, never installed) into a cache outside
# the repository (~/.cache/dbxdec/clients, or $$DBXDEC_CLIENTS_DIR); a no-op when it is there.
clients: $(STAMP)
	@$(BIN)/python -m tests.client_floor_api

# The tests run dbxdec-run under a deliberately wrong clock with Debian's faketime.
faketime:
	@if command -v faketime >/dev/null 2>&1; then :; \
	elif [ "$$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then \
		echo "faketime not found: installing it with apt-get"; \
		(DEBIAN_FRONTEND=noninteractive apt-get install -y -qq faketime >/dev/null 2>&1 || \
		 (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq faketime >/dev/null)); \
	else \
		echo "faketime not found: the clock tests need it, e.g. sudo apt-get install faketime" >&2; \
		exit 1; \
	fi

# tests/browser drive Debian's headless Chromium (never a downloaded one): the status page it
# renders, and the backfill app driven through Playwright's executable_path.
chromium:
	@if command -v chromium >/dev/null 2>&1; then :; \
	elif [ "$$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then \
		echo "chromium not found: installing it with apt-get"; \
		(DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null 2>&1 || \
		 (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null)); \
	else \
		echo "chromium not found: the browser tests (status page, app) need it, e.g. sudo apt-get install chromium" >&2; \
		exit 1; \
	fi

# Coverage of src/ (subprocesses included) is printed at the end and must stay at 90% or
# more; for a subset, e.g. make test PYTEST_ARGS="--no-cov -k quartz".
test: setup
	$(BIN)/python -m pytest -n $(PYTEST_WORKERS) --dist loadgroup --cov --cov-report=term $(PYTEST_ARGS)
	$(MAKE) --no-print-directory connect-lane LANE_COV="--cov --cov-append --cov-report=term"
	$(MAKE) --no-print-directory lint
	$(MAKE) --no-print-directory docs

# The Spark Connect lane (tests/connect_lane.py): the Databricks-path Spark tests (marked
# connect_lane) again, on a local Spark Connect server the lane starts and stops. A second
# pytest run, not a test inside the first: a Connect session sets Connect mode for its whole
# process, so it needs a process of its own, and a run of its own shows its failures and
# durations as plainly as the main run's. One process (-n0): one server, one session.
# In make test its coverage is appended to the main run's; `make connect-lane` alone runs
# just the lane, without coverage. Exit 5 (PYTEST_ARGS selected no lane test) is no failure.
LANE_COV ?= --no-cov
connect-lane: setup
	$(BIN)/python -m pytest -n0 --spark-lane=connect $(LANE_COV) $(PYTEST_ARGS) || test $$? -eq 5

lint: $(STAMP)
	$(BIN)/ruff check src tests benchmarks
	$(BIN)/ruff format --check src tests benchmarks
	$(BIN)/mypy --strict src

# The documentation site (MkDocs Material, mkdocstrings, mkdocs-click) into site/; --strict
# fails on any warning. NO_MKDOCS_2_WARNING turns off mkdocs-material's notice about MkDocs 2
# (pinned below 2 in pyproject.toml), so the build judges our pages only.
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

# The CLI as a user runs it: a week of the example pipeline in one ranged local run
# (one Spark job per table for all seven days), then the partition health grid.
DEMO_JOB := sales_pipeline
demo: setup
	$(BIN)/dbxdec backfill $(DEMO_JOB) --start 2024-01-01 --end 2024-01-07 --batch-size 7 --local
	$(BIN)/dbxdec status $(DEMO_JOB) --local --start 2024-01-01 --end 2024-01-31

# dbxdec is not on the package index yet: this is how to install it elsewhere. Writes
# dist/dbxdec-<version>-py3-none-any.whl, built by `dbxdec wheel` from a private copy of
# the sources (the builder deployed jobs use), e.g. then
#   pip install "dist/dbxdec-0.1.0-py3-none-any.whl[spark]"
wheel: $(STAMP)
	@$(BIN)/dbxdec wheel --out dist

# Every benchmark with a target, then one table (figure, target, ratio, pass/short) with
# the load average: run it before resolving an issue that touches launch/, bundle/ or
# runtime/, and quote its rows. Not part of make test; fails only when a script errors.
# Builds the earlier release's venv first when it can (bench-earlier); without it the
# generation comparison says skipped.
bench: setup
	-@$(MAKE) --no-print-directory bench-earlier
	$(BIN)/python benchmarks/run_all.py

# The earlier release benchmarks/generation.py compares against: PyPI's
# databricks-bundle-decorators 0.12.15 (never a dependency of dbxdec) in a Python 3.12 venv
# inside the cache (~/.cache/dbxdec/earlier-0.12.15, or $$DBXDEC_EARLIER_DIR), from
# python3.12 on PATH or pyenv's 3.12; a no-op when it is there, one line when there is no
# Python 3.12 (the comparison then says skipped).
bench-earlier: $(STAMP)
	@$(BIN)/python benchmarks/earlier_release.py

# The timing-sensitive tests (launch, CLI, emulator, durability) 10 times and the whole
# suite three times as make test runs it, with every core kept busy by a nice'd busy loop;
# prints each run, every flake and the slowest tests. SOAK_ARGS to tune, e.g.
# SOAK_ARGS="--runs 0 --full-runs 3 --nice 0" (whole suite only, load competing as equals).
SOAK_ARGS ?=
soak: setup faketime chromium
	$(BIN)/python benchmarks/soak.py $(SOAK_ARGS)

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis .dbxdec
