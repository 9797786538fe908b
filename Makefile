# Two commands on a fresh machine: `make run` (serve the platform) and `make test` (run the suite).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
export MOJODEX_PORT ?= 5001

# `make run-cluster`: the distributed topology natively (2 backends, 2 Celery workers, beat) on
# REDIS_URL and DATABASE_URL (Postgres), which must be running; MOJODEX_PORT is the first backend's.
.PHONY: run-cluster run test install install-test local-llm local-llm-check migrate load-tasks lint bench clean webapp webapp-check

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e .
	touch $@

$(VENV)/.installed-test: pyproject.toml $(VENV)/.installed
	$(BIN)/pip install -q -e '.[test]'
	touch $@

install: $(VENV)/.installed
install-test: $(VENV)/.installed-test

# The embedded default LLM (SmolLM2-135M under llama.cpp), pinned to versions and build flags
# shown to work (backend/local_llm_install.py says why). Optional for `make run`: a failed
# install leaves the platform running with a clear "No LLM configured" answer, and is
# remembered (rm $(VENV)/.local-llm-failed to try again) so later runs do not repeat a long
# compile that will fail the same way. Under CI a failure is an error.
local-llm: $(VENV)/.installed
	@if [ -f $(VENV)/.local-llm-failed ] && [ -z "$$CI" ]; then \
	  echo "Local model not installed (an earlier install failed; rm $(VENV)/.local-llm-failed to retry)."; exit 0; fi; \
	if $(BIN)/python -m backend.local_llm_install; then rm -f $(VENV)/.local-llm-failed; \
	else touch $(VENV)/.local-llm-failed; \
	  if [ -n "$$CI" ]; then echo "ERROR: local model install failed"; exit 1; fi; \
	  echo "WARNING: local model install failed; instruct tasks will answer 'No LLM configured'."; fi

# Starts the local model server and asks it one completion (CI runs it before the suite).
local-llm-check: local-llm
	$(BIN)/python -m backend.local_llm_install --check-only

# The web app (webapp/, TypeScript + React, built by Vite into webapp/dist, served by the backend at /).
# Built with the machine's Node.js and npm from the committed lockfile, and only when a source
# changed. Without Node.js the platform still runs (API only) and says how to get the web app.
WEBAPP_SOURCES := $(shell find webapp/src -type f 2>/dev/null) webapp/index.html webapp/vite.config.ts \
	webapp/tsconfig.json webapp/package.json webapp/package-lock.json

webapp/node_modules/.package-lock.json: webapp/package-lock.json
	cd webapp && npm ci --no-audit --no-fund --loglevel=error
	touch $@

webapp/dist/index.html: $(WEBAPP_SOURCES) webapp/node_modules/.package-lock.json
	cd webapp && npm run --silent build
	touch $@

webapp:
	@if command -v npm >/dev/null 2>&1; then $(MAKE) --no-print-directory webapp/dist/index.html; \
	else echo "Node.js/npm not found: the API runs without the web app. To get it, install Node.js 20+ and npm"; \
	  echo "(Debian: apt-get install nodejs npm) and run 'make webapp'."; fi

# Unit tests of the client's stream and replay logic (Vitest).
webapp-check: webapp/node_modules/.package-lock.json
	cd webapp && npx vitest run

run: install
	@$(MAKE) --no-print-directory webapp || echo "WARNING: the web app build failed (see above); serving the API without it."
	@if [ -z "$$MOJODEX_LLM_BASE_URL$$MOJODEX_LLM_API_KEY$$OPENAI_API_KEY" ]; then $(MAKE) --no-print-directory local-llm; fi
	MOJODEX_EMBEDDED=1 $(BIN)/mojodex db upgrade
	MOJODEX_EMBEDDED=1 $(BIN)/mojodex tasks load tasks_config
	MOJODEX_EMBEDDED=1 $(BIN)/mojodex users demo
	MOJODEX_EMBEDDED=1 exec $(BIN)/mojodex serve

run-cluster: install
	@if [ -z "$$REDIS_URL" ] || [ -z "$$DATABASE_URL" ]; then \
	  echo "run-cluster needs REDIS_URL and DATABASE_URL (e.g. redis://127.0.0.1:6379/0 and postgresql://postgres@127.0.0.1:5432/mojodex)"; exit 2; fi
	MOJODEX_EMBEDDED=1 $(BIN)/mojodex db upgrade
	MOJODEX_EMBEDDED=1 $(BIN)/mojodex tasks load tasks_config
	MOJODEX_RUNNER=celery exec $(BIN)/python -m backend.cluster

# The browser tests (tests/webapp) need the build and Debian's Chromium (/usr/bin/chromium);
# `.ci/run` installs it when missing.
test: install-test local-llm webapp
	@if command -v npm >/dev/null 2>&1; then $(MAKE) --no-print-directory webapp-check; fi
	$(BIN)/python -m pytest -q $(PYTEST_ARGS)

migrate: install
	$(BIN)/mojodex db upgrade

lint: install-test
	$(BIN)/ruff check .

bench: install-test
	$(BIN)/python bench/turn_overhead.py
	$(BIN)/python bench/pizza_eval.py

# Removes the local database and secrets too (var/).
clean:
	rm -rf $(VENV) var .pytest_cache .hypothesis
