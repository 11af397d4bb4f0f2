"""verify on agent runs: a run cut before its end, a request never answered, in doubt."""

from __future__ import annotations

import os
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from mini_harness.cli import cli
from mini_harness.transcripts import verify_transcript

STEPS = [
    {"toolCalls": [{"name": "read_file", "arguments": {"path": "notes.txt"}}]},
    {"text": "It says hello."},
]


@pytest.fixture(name="log")
def _log(tmp_path: Path) -> Path:
    """A finished agent run (scripted model) recorded in t.jsonl."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "notes.txt").write_text("hello\n")
    script = tmp_path / "s.json"
    script.write_bytes(orjson.dumps(STEPS))
    log = tmp_path / "t.jsonl"
    cwd = Path.cwd()
    os.chdir(workspace)
    try:
        result = CliRunner().invoke(
            cli, ["run", "read it", "--model", f"script:{script}", "--log", str(log)]
        )
    finally:
        os.chdir(cwd)
    assert result.exit_code == 0, result.output
    return log


def cut_after_last(log: Path, event_type: str) -> None:
    lines = log.read_bytes().splitlines(keepends=True)
    last = max(i for i, line in enumerate(lines) if orjson.loads(line)["type"] == event_type)
    log.write_bytes(b"".join(lines[: last + 1]))


class TestAgentRunsInDoubt:
    def test_a_finished_run_verifies(self, log: Path) -> None:
        """A run that ended with RunFinished has nothing in doubt."""
        assert verify_transcript(log).ok

    def test_a_run_cut_after_a_request_is_in_doubt(self, log: Path) -> None:
        """Cut right after a ModelRequested: the request and the run are reported in
        doubt, and `transcript verify` exits 1."""
        cut_after_last(log, "ModelRequested")
        report = verify_transcript(log)
        problems = report.problems()
        assert any("model request" in p and "is in doubt" in p for p in problems)
        assert any("is unfinished: no RunFinished" in p for p in problems)
        result = CliRunner().invoke(cli, ["transcript", "verify", str(log)])
        assert result.exit_code == 1
        assert "is unfinished: no RunFinished" in result.stdout + result.stderr

    def test_a_run_cut_after_a_response_is_unfinished(self, log: Path) -> None:
        """Cut after a response: no request is in doubt, but the run never finished."""
        cut_after_last(log, "ModelResponded")
        problems = verify_transcript(log).problems()
        assert not any("model request" in p for p in problems)
        assert [p for p in problems if "unfinished" in p]


class TestReplayOfAgentRunsInDoubt:
    def test_replay_reports_a_cut_run_and_exits_1(self, log: Path) -> None:
        """`replay` names the request in doubt and the unfinished run, and exits 1."""
        cut_after_last(log, "ModelRequested")
        result = CliRunner().invoke(cli, ["replay", str(log)])
        assert result.exit_code == 1
        assert "is unfinished: no RunFinished" in result.stdout
        assert "ModelRequested without a response" in result.stdout

    def test_context_report_from_standard_input(self, log: Path) -> None:
        """`replay - --context-report --step 1` reads the stream once and prints the agent
        run's report of step 1, as from the file."""
        from_file = CliRunner().invoke(cli, ["replay", str(log), "--context-report", "--step", "1"])
        from_stdin = CliRunner().invoke(
            cli, ["replay", "-", "--context-report", "--step", "1"], input=log.read_bytes()
        )
        assert from_file.exit_code == from_stdin.exit_code == 0
        report = from_file.stdout[from_file.stdout.index("Context Explorer") :]
        assert "System prompt" in report
        assert report in from_stdin.stdout
