# Two commands do all set-up: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test goldens lint bench mutate clean

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

test: $(STAMP)
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

$(VENV)/.mutate-installed: $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[dev,mcp,mutate]'
	touch $@

# Mutation testing with mutmut ([tool.mutmut] in pyproject.toml): the workspace resolver
# and transcripts/. Slow; run by hand, never in CI. Results are cached in mutants/.
# make mutate MUTANTS='mini_harness.tools.workspace*'   (the resolver only)
mutate: $(VENV)/.mutate-installed
	$(BIN)/mutmut run --max-children 2 $(MUTANTS)
	$(BIN)/mutmut results

clean:
	rm -rf $(VENV) demo-transcript.jsonl mutants
