# handoffscope — two commands: `make demo` and `make test`.
# Needs only python3 (3.11+) and pip: the Makefile builds its own virtualenv in .venv.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed-stamp
PROJECTS := pyproject.toml instrumentation/pyproject.toml collector/pyproject.toml dashboard/pyproject.toml constraints.txt

.PHONY: help setup demo test test-postgres test-foreign lint format typecheck bench soak screenshots clean oidc-provider

help:
	@echo "make demo          set up, start collector + dashboard, drive live traffic (Ctrl-C stops)"
	@echo "make test          set up, lint, run the whole test suite"
	@echo "make test-postgres the verdict, API and crash-safety suites again, on a real PostgreSQL"
	@echo "make test-foreign  other frameworks' own spans (ADK, Strands, AutoGen, MAF, Semantic Kernel, Pydantic AI, Agno, smolagents), each in a uv env"
	@echo "make bench         benchmarks (ratios against baselines measured in the same run)"
	@echo "make soak          long fault/overload runs (not part of make test)"
	@echo "make screenshots   regenerate docs/screenshots/ (README images) against a seeded collector"

# Bytecode is compiled once here. Where PYTHONDONTWRITEBYTECODE is set (it is on this
# project's CI machine) no .pyc is written on import, so every process the suite or the
# demo starts would compile each module it imports from source again: the collector
# about 2 s of CPU, the Agents SDK about 3 s, every time.
$(STAMP): $(PROJECTS)
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip uv
	$(BIN)/uv pip install --quiet --compile-bytecode --python $(BIN)/python -c constraints.txt \
		-e ./instrumentation -e ./collector -e ./dashboard -e '.[dev]'
	$(BIN)/python -m compileall -q -j 0 instrumentation/src collector/src dashboard/src >/dev/null
	@touch $@

setup: $(STAMP)

lint: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy instrumentation/src/handoffscope/instrumentation collector/src/handoffscope/collector dashboard/src/handoffscope/dashboard src/handoffscope

format: setup
	$(BIN)/ruff format .
	$(BIN)/ruff check --fix .

# Two workers, one test file each at a time (module-scoped collectors stay whole): most
# tests wait on a collector, a browser or a timeout, so two cores run two files at once.
# Serial, the suite took 18 min here; with two workers 10–11 min. The 25 slowest tests are
# listed at the end (the goal is under 15 min). PYTEST_ARGS adds options.
test: lint oidc-provider
	$(BIN)/pytest -n 2 --dist loadfile --durations=25 $(PYTEST_ARGS)

# The real OpenID Connect provider the dashboard's sign-in test starts (tests/support/oidc,
# npm's oidc-provider, from its lockfile). Without npm, or when npm ci fails, this says so
# and goes on: tests/dashboard/test_oidc_signin.py then skips with the reason (and fails
# under CI), so `make test` still runs on a machine with only Python.
OIDC := tests/support/oidc
$(OIDC)/node_modules/.package-lock.json: $(OIDC)/package-lock.json
	@if ! command -v npm >/dev/null 2>&1; then \
		echo "npm not found: $(OIDC) not installed (the sign-in browser test skips)"; \
	elif npm ci --prefix $(OIDC) --prefer-offline --no-audit --no-fund --loglevel=error; then \
		touch $@; \
	else echo "npm ci failed: $(OIDC) not installed (the sign-in browser test skips)"; fi

oidc-provider: $(OIDC)/node_modules/.package-lock.json

# The collector's verdict, API, crash-safety and content-free suites once more with every
# store on a real PostgreSQL (tests/support/stores.py: one server per worker, a database
# per collector); `make test` runs them on the DuckDB file. PG_ARGS adds options.
PG_SUITES := tests/collector/test_engine.py tests/collector/test_api.py \
	tests/collector/test_api_params.py tests/collector/test_lifecycle.py \
	tests/collector/test_engine_differential.py tests/collector/test_judge.py \
	tests/collector/test_judge_shards.py \
	tests/collector/test_big_runs.py tests/collector/test_sources.py \
	tests/collector/test_turns.py \
	tests/adapters/test_conversations_e2e.py \
	tests/hardening/test_crash_safety.py \
	tests/hardening/test_duplicates_order.py tests/hardening/test_privacy.py \
	tests/hardening/test_scopes.py
test-postgres: setup
	$(BIN)/pytest -n 2 --dist loadfile --store postgresql $(PG_SUITES) $(PG_ARGS)

# Frameworks whose pins conflict with constraints.txt run in envs the fixture builds with uv
# (tests/foreign/framework_envs.py), cached under $$HANDOFFSCOPE_TEST_ENV_CACHE or
# ~/.cache/handoffscope/test-envs; kept out of `make test` by the foreign_env marker.
# tests/test_readme_install.py follows the README's install steps in a fresh venv (needs PyPI too).
test-foreign: setup
	$(BIN)/pytest -m foreign_env tests/foreign tests/test_readme_install.py $(FOREIGN_ARGS)

demo: setup
	$(BIN)/handoffscope demo $(DEMO_ARGS)

bench: setup
	$(BIN)/python bench/run_all.py $(BENCH_ARGS)

soak: setup
	$(BIN)/pytest -m soak -p no:randomly tests/hardening $(SOAK_ARGS)

screenshots: setup
	$(BIN)/python scripts/screenshots.py

clean:
	rm -rf $(VENV) build .pytest_cache .mypy_cache .ruff_cache $(OIDC)/node_modules
