"""Helpers for the resume, fork and replay tests: recorded runs, cut short where a crash
would have cut them, and a registry whose tools count how often their handler ran."""

from __future__ import annotations

import itertools
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import orjson
from click.testing import CliRunner, Result

from mini_harness.agent import check_history
from mini_harness.cli import cli
from mini_harness.replay import Run, fold_agent_runs

NO_KEYS: dict[str, str | None] = dict.fromkeys(
    ("DEEPSEEK_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "MINI_HARNESS_MODEL")
)

LIST_READ_ANSWER: list[dict[str, Any]] = [
    {"text": "Looking.", "toolCalls": [{"name": "list_files", "arguments": {}}]},
    {"toolCalls": [{"name": "read_file", "arguments": {"path": "README.md"}}]},
    {"text": "A tiny project."},
]
"""A script for a three-step run of the built-in tools: list the files, read the README,
answer."""

COUNTING_REGISTRY = """
import os, time
from mini_harness import ToolAnnotations, ToolRegistry

SIDE_FILE = {side_file!r}


def _record(name, data):
    with open(SIDE_FILE, "a") as f:
        f.write(name + " " + str(data.get("n")) + "\\n")
        f.flush()
        os.fsync(f.fileno())


def slow(data):
    _record("slow", data)
    time.sleep(data.get("seconds", 0))
    return {{"n": data.get("n"), "slept": data.get("seconds", 0)}}


def look(data):
    _record("look", data)
    return {{"n": data.get("n"), "text": open({note!r}).read()}}


registry = ToolRegistry()
registry.add("slow", slow, description="Takes its time; has side effects.",
             input_schema={{"type": "object"}})
registry.add("look", look, description="Reads the note (read-only).",
             input_schema={{"type": "object"}}, annotations=ToolAnnotations(read_only_hint=True))
"""

_modules = itertools.count(1)


def counting_registry(directory: Path) -> tuple[str, Path, Path]:
    """Write a registry module into `directory` (which must be importable): `slow` (side
    effects, sleeps `seconds`) and `look` (read-only, returns the note's text). Each run of
    a handler appends `NAME N` to the side file. Returns the spec, side file and note."""
    name = f"counting_tools_{next(_modules)}_{abs(hash(str(directory))) % 10**8}"
    side_file, note = directory / f"{name}.calls", directory / f"{name}.note"
    note.write_text("first version\n")
    source = COUNTING_REGISTRY.format(side_file=str(side_file), note=str(note))
    (directory / f"{name}.py").write_text(source)
    sys.modules.pop(name, None)
    return f"{name}:registry", side_file, note


def executions(side_file: Path) -> Counter[str]:
    """How often each handler ran for each input number (`NAME N` -> count)."""
    if not side_file.exists():
        return Counter()
    return Counter(side_file.read_text().splitlines())


def write_script(path: Path, responses: list[dict[str, Any]]) -> str:
    path.write_bytes(orjson.dumps({"responses": responses}))
    return f"script:{path}"


def invoke(args: list[str], env: dict[str, str | None] | None = None) -> Result:
    """Run the CLI in-process with no API key in sight (plus `env`)."""
    return CliRunner().invoke(cli, args, env={**NO_KEYS, **(env or {})})


def cut_after(source: Path, target: Path, event_type: str, nth: int = 1) -> int:
    """Copy `source` to `target` up to and including the `nth` event of `event_type`, as a
    crash right after it was written would leave it. Returns the lines kept."""
    kept = []
    seen = 0
    for line in source.read_bytes().splitlines(keepends=True):
        kept.append(line)
        if orjson.loads(line)["type"] == event_type:
            seen += 1
            if seen == nth:
                break
    assert seen == nth, f"{source} has only {seen} {event_type} event(s)"
    target.write_bytes(b"".join(kept))
    return len(kept)


def run_by_id(path: Path, run_id: str) -> Run:
    return next(run for run in fold_agent_runs(path) if run.run_id == run_id)


def assert_valid_histories(run: Run) -> None:
    """Every request of the run is a history a provider accepts."""
    for step in run.steps:
        assert check_history(step.request.messages) == [], f"step {step.number}"
        assert step.hash_matches
