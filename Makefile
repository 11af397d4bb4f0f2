# Two commands do all set-up: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test goldens lint bench clean chromium

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev,mcp,openai,anthropic]'
	touch $(STAMP)

demo: $(STAMP)
	rm -f demo-transcript.jsonl
	$(BIN)/mini-harness --tool echo --tool-input '{"text":"hello"}' --log demo-transcript.jsonl
	$(BIN)/mini-harness --tool echo --tool-input '{"text":123}' --log demo-transcript.jsonl || true
	@echo "--- demo-transcript.jsonl"
	@cat demo-transcript.jsonl
	@echo "--- mini-harness replay demo-transcript.jsonl"
	$(BIN)/mini-harness replay demo-transcript.jsonl

# The browser tests (tests/browser) drive Debian's chromium through Playwright.
$(VENV)/.browser-installed: $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[dev,mcp,openai,anthropic,browser]'
	touch $@

chromium:
	@if [ -x /usr/bin/chromium ]; then :; \
	elif [ "$$(id -u)" = 0 ]; then apt-get update -qq && apt-get install -y -qq chromium; \
	else echo "/usr/bin/chromium is missing (not root, so not installed): the browser tests will skip"; fi

test: $(STAMP) $(VENV)/.browser-installed chromium
	$(BIN)/ruff check .
	$(BIN)/mypy
	$(BIN)/pytest -q

# Rewrite the golden files under tests/golden after an intended change (never in CI).
goldens: $(STAMP)
	$(BIN)/pytest tests/golden --update-goldens

$(VENV)/.bench-installed: $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[dev,mcp,openai,anthropic,bench]'
	touch $@

# BENCH_QUICK=1 make bench: a smaller run (about a minute) for smoke checks.
bench: $(VENV)/.bench-installed
	$(BIN)/python bench/run.py

clean:
	rm -rf $(VENV) demo-transcript.jsonl test-artifacts
