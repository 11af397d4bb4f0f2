"""What a call records is what its caller was told: the model (as the call's tool result),
the screen (the step's `failed:` line, the dispatch's error line) and the transcript
(`ToolFailed.error.message`) say the same words."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner, Result

from mini_harness.cli import cli

NO_KEYS: dict[str, str | None] = dict.fromkeys(
    ("DEEPSEEK_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "MINI_HARNESS_MODEL")
)


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), env=NO_KEYS)


@pytest.fixture(name="workspace")
def _workspace(tmp_path: Path) -> Iterator[Path]:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "README.md").write_text("# Demo\n")
    cwd = Path.cwd()
    os.chdir(root)
    try:
        yield root
    finally:
        os.chdir(cwd)


def nested(levels: int) -> str:
    return '{"path": ' + "[" * levels + "]" * levels + "}"


WIDE = "123456789012345678901234"
LOW = "-9223372036854775809"  # one below the smallest signed 64-bit integer


BAD_CALLS: list[dict[str, Any]] = [
    {"id": "cut", "name": "read_file", "arguments": '{"path": "READ'},
    {"id": "deep", "name": "read_file", "arguments": nested(2000)},
    {"id": "deeper", "name": "read_file", "arguments": nested(200)},
    {"id": "typo", "name": "read_fil", "arguments": {"path": "README.md"}},
    {"id": "wrong", "name": "read_file", "arguments": {"path": 3}},
    {"id": "wide", "name": "read_file", "arguments": f'{{"path": "a", "n": {WIDE}}}'},
    {"id": "low", "name": "read_file", "arguments": f'{{"path": "a", "n": {LOW}}}'},
]


def failures(log: Path) -> dict[str, str]:
    """Each failed call's recorded message, by the model's id for the call."""
    by_call = {}
    for line in log.read_bytes().splitlines():
        event = orjson.loads(line)
        if event["type"] == "ToolCalled":
            by_call[event["callId"]] = event["toolUseId"]
    return {
        by_call[event["callId"]]: event["error"]["message"]
        for event in map(orjson.loads, log.read_bytes().splitlines())
        if event["type"] == "ToolFailed"
    }


def told_the_model(log: Path) -> dict[str, str]:
    """Each tool result the model was sent, by the id of the call it answers."""
    return {
        message["toolCallId"]: message["content"]
        for event in map(orjson.loads, log.read_bytes().splitlines())
        if event["type"] == "ModelRequested"
        for message in event["messages"]
        if message["role"] == "tool"
    }


class TestRecordedMessage:
    def test_the_model_is_told_what_is_recorded(self, workspace: Path, tmp_path: Path) -> None:
        """Arguments that are not JSON, nested past any limit, an unknown tool's name and
        input the schema refuses: the tool result the model gets is, byte for byte, the
        message ToolFailed records, and the step's `failed:` line shows it too."""
        model = tmp_path / "s.json"
        model.write_bytes(orjson.dumps([{"toolCalls": BAD_CALLS}, {"text": "ok"}]))
        log = tmp_path / "t.jsonl"
        result = run("run", "t", "--model", f"script:{model}", "--log", str(log), "--no-stream")
        assert result.exit_code == 0, result.output
        recorded = failures(log)
        assert recorded == told_the_model(log)
        assert recorded["cut"].startswith(
            "Invalid arguments for read_file: not valid JSON (unexpected end of data"
        )
        assert recorded["cut"].endswith("Send the arguments as one JSON object.")
        too_deep = "Invalid input for read_file: nested deeper than 100 levels"
        assert recorded["deep"] == recorded["deeper"] == too_deep
        assert recorded["typo"].startswith("Unknown tool: read_fil. Did you mean 'read_file'? ")
        assert recorded["wrong"] == "Invalid input for read_file.path: expected string"
        # Refused as `--tool-input` refuses it, not read as a float the tool never sent.
        assert (
            recorded["wide"]
            == f"Invalid input for read_file: integer {WIDE} does not fit in 64 bits"
        )
        assert (
            recorded["low"] == f"Invalid input for read_file: integer {LOW} does not fit in 64 bits"
        )
        shown = result.stdout.splitlines()
        for message in recorded.values():
            assert f"[mini-harness]   failed: {message}" in shown

    def test_a_tool_before_the_task(self, workspace: Path, tmp_path: Path) -> None:
        """`--tool` before a task: the tool's failure is on the screen and in the transcript
        alike."""
        log = tmp_path / "t.jsonl"
        result = run("--tool", "read_file", "--log", str(log), "count the files")
        assert result.exit_code == 0, result.output
        (message,) = failures_of_run(log)
        assert message.startswith("Invalid input for read_file")
        assert f"[mini-harness]   failed: {message}" in result.stdout.splitlines()


def failures_of_run(log: Path) -> list[str]:
    return [
        event["error"]["message"]
        for event in map(orjson.loads, log.read_bytes().splitlines())
        if event["type"] == "ToolFailed"
    ]


class TestRerunOfAnUnknownTool:
    def test_still_unknown_is_matched(self, workspace: Path, tmp_path: Path) -> None:
        """A call of a tool unknown then and now matches its record on re-run, though the
        registered tools its message lists are today's."""
        log = tmp_path / "t.jsonl"
        assert run("--tool", "nope", "--log", str(log)).exit_code == 1
        result = run("replay", str(log), "--rerun")  # the agent's tools: more than the four
        assert result.exit_code == 0, result.output
        assert "  nope  matched" in result.stdout
