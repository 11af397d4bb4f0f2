# Two commands do all set-up: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test goldens lint bench mutate clean sandbox chromium ssh-keygen

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev,mcp,openai,anthropic,otel,sign,import]'
	touch $(STAMP)

# The coding flow runs its check in the sandbox: bubblewrap is installed first when root can.
demo: $(STAMP) sandbox
	rm -f demo-transcript.jsonl
	$(BIN)/mini-harness --tool echo --tool-input '{"text":"hello"}' --log demo-transcript.jsonl
	$(BIN)/mini-harness --tool echo --tool-input '{"text":123}' --log demo-transcript.jsonl || true
	@echo "--- demo-transcript.jsonl"
	@cat demo-transcript.jsonl
	@echo "--- mini-harness replay demo-transcript.jsonl"
	$(BIN)/mini-harness replay demo-transcript.jsonl
	@echo "--- an agent run with a scripted model (examples/agent-demo.json)"
	rm -f demo-agent-transcript.jsonl
	$(BIN)/mini-harness run "What is this project?" --model script:examples/agent-demo.json --log demo-agent-transcript.jsonl
	@echo "--- mini-harness replay demo-agent-transcript.jsonl --context-report --step 2"
	$(BIN)/mini-harness replay demo-agent-transcript.jsonl --context-report --step 2
	@echo "--- the coding flow: read, search, patch (approved by policy), run a check, git diff"
	rm -rf demo-workspace demo-coding-transcript.jsonl && mkdir demo-workspace
	printf 'def add(a, b):\n    return a - b\n' > demo-workspace/calc.py
	printf 'from calc import add\n\nassert add(2, 3) == 5, add(2, 3)\nprint("check.py: ok")\n' > demo-workspace/check.py
	cd demo-workspace && git init -q && git add . \
		&& git -c user.name=demo -c user.email=demo@example.invalid commit -qm start
	cd demo-workspace && ../$(BIN)/mini-harness run "add() is wrong: fix it" --approve auto \
		--model script:../examples/coding-demo.json --log ../demo-coding-transcript.jsonl --context-report
	@echo "--- mini-harness replay demo-coding-transcript.jsonl --effects"
	$(BIN)/mini-harness replay demo-coding-transcript.jsonl --effects

# The Ray extra is big (a wheel of ~70 MB): only the test target installs it.
$(VENV)/.ray-installed: $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[dev,mcp,openai,anthropic,sign,ray]'
	touch $@

# DuckDB, polars and pandas, whose recipes the docs give (about 105 MB of wheels, polars
# alone 55 MB): only the test target installs them.
$(VENV)/.data-installed: $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[dev,mcp,openai,anthropic,sign,data]'
	touch $@

# run_command's sandbox: bubblewrap (Debian package), installed when missing and root can;
# otherwise the sandbox tests skip and say what is missing.
sandbox:
	@command -v bwrap >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 \
		&& (apt-get update -qq && apt-get install -y -qq bubblewrap >/dev/null) \
		|| echo "bubblewrap is not installed (apt-get install bubblewrap): sandbox tests will skip"; }

# The browser tests (tests/browser) drive Debian's chromium through Playwright.
$(VENV)/.browser-installed: $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[dev,mcp,openai,anthropic,sign,browser]'
	touch $@

# Debian's chromium, installed when missing and root can; otherwise those tests skip.
chromium:
	@test -x /usr/bin/chromium || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 \
		&& (apt-get update -qq && apt-get install -y -qq chromium >/dev/null) \
		|| echo "/usr/bin/chromium is missing (apt-get install chromium): browser tests will skip"; }

# Signed heads with an SSH key (transcript sign --ssh) run OpenSSH's ssh-keygen, installed
# when missing and root can; otherwise those tests skip and say what is missing.
ssh-keygen:
	@command -v ssh-keygen >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 \
		&& (apt-get update -qq && apt-get install -y -qq openssh-client >/dev/null) \
		|| echo "ssh-keygen is missing (apt-get install openssh-client): SSH signature tests will skip"; }

test: $(STAMP) $(VENV)/.ray-installed $(VENV)/.browser-installed $(VENV)/.data-installed sandbox chromium ssh-keygen
	$(BIN)/ruff check .
	$(BIN)/mypy
	$(BIN)/lint-imports
	$(BIN)/pytest -q -n auto --dist worksteal

# Rewrite the golden files under tests/golden after an intended change (never in CI).
goldens: $(STAMP)
	$(BIN)/pytest tests/golden --update-goldens

$(VENV)/.bench-installed: $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[dev,mcp,openai,anthropic,sign,bench]'
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
	rm -rf $(VENV) demo-transcript.jsonl demo-agent-transcript.jsonl demo-coding-transcript.jsonl demo-workspace mutants test-artifacts
