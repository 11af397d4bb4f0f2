"""A recorded payload that does not fit its declaration (a message without `role`) in a
transcript whose hash chain and envelopes are intact: every reader reports its line as
damaged, naming the event and the field, and exits as for any damaged line. None of them
dies with a traceback, and verify no longer calls the file clean."""

from __future__ import annotations

import hashlib
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner, Result

from mini_harness.cli import cli

NO_KEYS: dict[str, str | None] = dict.fromkeys(
    ("DEEPSEEK_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "MINI_HARNESS_MODEL")
)
SCRIPT = {
    "responses": [
        {"toolCalls": [{"name": "list_files", "arguments": {}}]},
        {"text": "A tiny project."},
    ]
}
DAMAGE = "invalid ModelRequested: required field missing @ $.messages[1].role"


def invoke(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), env=NO_KEYS)


def rechained(lines: list[dict[str, object]]) -> bytes:
    """The lines as compact JSON, each `prev` the hash of the line before: a chain that
    verifies whatever the lines say."""
    out, prev = [], None
    for data in lines:
        if prev is not None:
            data["prev"] = prev
        line = orjson.dumps(data)
        prev = hashlib.sha256(line).digest()[:16].hex()
        out.append(line + b"\n")
    return b"".join(out)


@pytest.fixture(name="roleless")
def _roleless(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A two-step agent run whose first request's user message lost its `role`."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "README.md").write_text("# Demo\n")
    monkeypatch.chdir(workspace)
    script, log = tmp_path / "script.json", tmp_path / "t.jsonl"
    script.write_bytes(orjson.dumps(SCRIPT))
    done = invoke("run", "What is this?", "--model", f"script:{script}", "--log", str(log))
    assert done.exit_code == 0, done.output
    lines = [orjson.loads(line) for line in log.read_bytes().splitlines()]
    assert lines[2]["type"] == "ModelRequested"  # line 3, with good lines after it
    del lines[2]["messages"][1]["role"]
    log.write_bytes(rechained(lines))
    return log


def damaged_line(log: Path) -> str:
    offset = len(b"".join(log.read_bytes().splitlines(keepends=True)[:2]))
    return f"line 3 (byte {offset}) is damaged: {DAMAGE}"


def said(result: Result) -> str:
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert "Traceback" not in result.output
    return result.output


class TestARoleMissing:
    def test_verify_names_line_event_and_field(self, roleless: Path) -> None:
        """verify reports the line as damaged (with what is wrong) and exits 1."""
        result = invoke("transcript", "verify", str(roleless))
        assert f"[mini-harness] Problem: {damaged_line(roleless)}" in said(result)
        assert result.exit_code == 1

    @pytest.mark.parametrize(
        "args",
        [
            ["replay"],
            ["replay", "--context-report"],
            ["replay", "--context-report", "--step", "1"],
            ["replay", "--rerun"],
            ["resume", "--model", "mock", "--allow-unverified"],
            ["fork", "--at-step", "1", "--model", "mock", "--allow-unverified"],
        ],
        ids=["replay", "context-report", "context-report-step", "rerun", "resume", "fork"],
    )
    def test_readers_stop_at_the_damaged_line(self, roleless: Path, args: list[str]) -> None:
        """Replay, its context report and re-run, and resume and fork even when told to go
        on past a history that does not verify, refuse the file as they refuse any file
        damaged mid-way: one error line naming the damage, exit 2."""
        before = roleless.read_bytes()
        result = invoke(*args[:1], str(roleless), *args[1:])
        assert f"[mini-harness] Error: {roleless}: {damaged_line(roleless)}" in said(result)
        assert result.exit_code == 2
        assert roleless.read_bytes() == before  # nothing was continued or appended

    @pytest.mark.parametrize(
        ("command", "args"), [("resume", []), ("fork", ["--at-step", "1"])], ids=["resume", "fork"]
    )
    def test_resume_and_fork_refuse_the_history(
        self, roleless: Path, command: str, args: list[str]
    ) -> None:
        """Resume and fork refuse a history that does not verify, naming the damage; exit 2
        and nothing written."""
        before = roleless.read_bytes()
        result = invoke(command, str(roleless), *args, "--model", "mock")
        problem = f"(1 problem: {damaged_line(roleless)})"
        assert f"Error: cannot {command} from {roleless}: it does not verify" in said(result)
        assert problem in result.output
        assert result.exit_code == 2
        assert roleless.read_bytes() == before

    @pytest.mark.parametrize("command", ["show", "view"])
    def test_show_and_view_report_the_damage(
        self, roleless: Path, tmp_path: Path, command: str
    ) -> None:
        """show and view render what comes before the damaged line and report it as a
        problem, exit 2 as replay's."""
        args = ["-o", str(tmp_path / "page.html")] if command == "view" else []
        result = invoke(command, str(roleless), *args)
        assert f"Problem: [damage] line 3: {roleless}: {damaged_line(roleless)}" in said(result)
        assert result.exit_code == 2

    def test_a_corpus_reports_the_file(self, roleless: Path, tmp_path: Path) -> None:
        """A corpus lists the file as unreadable, as any file damaged mid-way, and exits 2;
        the other files are replayed."""
        clean = tmp_path / "clean.jsonl"
        echo = invoke("--tool", "echo", "--tool-input", '{"text":"hi"}', "--log", str(clean))
        assert echo.exit_code == 0
        result = invoke("replay", str(roleless), str(clean))
        assert f"unreadable  {roleless}  {roleless}: {damaged_line(roleless)}" in said(result)
        assert "2 files: 1 ok, 0 with problems, 1 unreadable" in result.output
        assert result.exit_code == 2
