"""The recipes of docs/transcript-format.md ("Transcripts as data") run as written there,
against the real DuckDB, polars and pandas (the `data` extra), on an export long enough that
the engines' type guessing from the first rows would miss its last rows."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from mini_harness import ToolRegistry, ToolRuntime
from mini_harness.cli import cli
from mini_harness.transcripts import JsonlTranscript

REASON = "the 'data' extra is not installed (make test installs it)"
duckdb = pytest.importorskip("duckdb", reason=REASON)
pytest.importorskip("polars", reason=REASON)
pytest.importorskip("pandas", reason=REASON)

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "transcript-format.md"
PAIRS = 10_600
"""Calls of each of two tools before anything else: 21,200 rows, past DuckDB's sample of
20,480 rows and polars' 100."""


def recipes() -> dict[str, str]:
    """The fenced code blocks of the doc's "Transcripts as data" section, by language."""
    text = DOC.read_text(encoding="utf-8")
    section = text.split("\n## Transcripts as data\n", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"^```(\w+)\n(.*?)^```$", section, flags=re.MULTILINE | re.DOTALL)
    languages = [language for language, _ in blocks]
    assert sorted(languages) == ["python", "sh", "sql"], languages
    return dict(blocks)


def sessions(directory: Path) -> None:
    """sessions/long.jsonl: two tools whose `output` is an array for one and an object for
    the other, called many times, then the first failure, then an agent run (the first
    rows with a `step`) that lists the files and reads README.md."""
    workspace = directory / "workspace"
    workspace.mkdir()
    (workspace / "README.md").write_text("# demo\nA project.\n", encoding="utf-8")
    (directory / "sessions").mkdir()
    log = directory / "sessions" / "long.jsonl"
    schema = {"type": "object", "properties": {"word": {"type": "string"}}}
    registry = ToolRegistry()
    registry.add("letters", lambda data: list(data["word"]), description="", input_schema=schema)
    registry.add(
        "count", lambda data: {"n": len(data["word"])}, description="", input_schema=schema
    )
    with JsonlTranscript(log, fsync="never") as sink:
        runtime = ToolRuntime(registry, sink)
        for _ in range(PAIRS):
            runtime.dispatch("letters", {"word": "ab"})
            runtime.dispatch("count", {"word": "abc"})
        runtime.attempt("count", {"word": 3})
    script = ROOT / "examples" / "agent-demo.json"
    result = CliRunner().invoke(
        cli,
        [
            *("--workspace", str(workspace), "run", "What is this project?"),
            *("--model", f"script:{script}", "--log", str(log)),
        ],
    )
    assert result.exit_code == 0, result.output


def run_shell(block: str, directory: Path) -> None:
    """The shell recipe through bash, `mini-harness` being this checkout's CLI."""
    bin_dir = directory / "bin"
    bin_dir.mkdir()
    shim = bin_dir / "mini-harness"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m mini_harness "$@"\n', encoding="utf-8")
    shim.chmod(0o755)
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"}
    done = subprocess.run(
        ["bash", "-euo", "pipefail", "-c", block],
        cwd=directory,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr


def run_sql(block: str) -> list[list[tuple[Any, ...]]]:
    """Each statement of the SQL recipe through DuckDB, with the rows it returns."""
    statements = [part.strip() for part in block.split(";\n") if part.strip()]
    connection = duckdb.connect()
    return [connection.execute(statement).fetchall() for statement in statements]


def test_the_documented_recipes_load_a_long_export(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The shell recipe exports; DuckDB's queries count every call, find the one late
    failure and read what read_file returned; pandas counts the calls and polars finds the
    failures and the agent's steps, though every one of those comes after the rows the
    engines would guess the types from."""
    blocks = recipes()
    sessions(tmp_path)
    run_shell(blocks["sh"], tmp_path)
    monkeypatch.chdir(tmp_path)

    per_tool, failures, read = run_sql(blocks["sql"])
    assert [(name, calls) for name, calls, _ in per_tool] == [
        ("count", PAIRS), ("letters", PAIRS), ("list_files", 1), ("read_file", 1),
    ]  # fmt: skip
    assert all(mean_ms is not None for _, _, mean_ms in per_tool)
    assert failures == [("invalid_input", 1)]
    assert read == [("# demo\nA project.\n",)]

    namespace: dict[str, Any] = {}
    exec(compile(blocks["python"], str(DOC), "exec"), namespace)  # the doc's recipe
    assert namespace["calls"].to_dict() == {
        "count": PAIRS + 1, "letters": PAIRS, "list_files": 1, "read_file": 1,
    }  # fmt: skip
    failed = namespace["failed"]
    assert failed["name"].to_list() == ["count"]
    assert failed["errorKind"].to_list() == ["invalid_input"]
    steps = namespace["steps"]
    assert steps["step"].to_list() == [1, 1, 2, 2, 3]
    assert sorted(set(steps["type"].to_list())) == ["ModelRequested", "ToolCalled"]
