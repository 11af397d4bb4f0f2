# Two commands do all set-up: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test goldens lint bench clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev,mcp]'
	touch $(STAMP)

demo: $(STAMP)
	rm -f demo-transcript.jsonl
	$(BIN)/mini-harness --tool echo --tool-input '{"text":"hello"}' --log demo-transcript.jsonl
	$(BIN)/mini-harness --tool echo --tool-input '{"text":123}' --log demo-transcript.jsonl || true
	@echo "--- demo-transcript.jsonl"
	@cat demo-transcript.jsonl
	@echo "--- mini-harness replay demo-transcript.jsonl"
	$(BIN)/mini-harness replay demo-transcript.jsonl

# The Ray extra is big (a wheel of ~70 MB): only the test target installs it.
$(VENV)/.ray-installed: $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[dev,mcp,ray]'
	touch $@

test: $(STAMP) $(VENV)/.ray-installed
	$(BIN)/ruff check .
	$(BIN)/mypy
	$(BIN)/pytest -q

# Rewrite the golden files under tests/golden after an intended change (never in CI).
goldens: $(STAMP)
	$(BIN)/pytest tests/golden --update-goldens

$(VENV)/.bench-installed: $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[dev,mcp,bench]'
	touch $@

# BENCH_QUICK=1 make bench: a smaller run (about a minute) for smoke checks.
bench: $(VENV)/.bench-installed
	$(BIN)/python bench/run.py

clean:
	rm -rf $(VENV) demo-transcript.jsonl
