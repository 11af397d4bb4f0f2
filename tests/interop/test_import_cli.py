"""`replay --rerun` and `view` of imported sessions: calls re-run as mini-harness's tools
where the names map (the rest skipped with the reason); the page of a session file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
from click.testing import CliRunner

from mini_harness.cli import cli
from mini_harness.interop.translate import rerun_as

FIXTURES = Path(__file__).parent / "fixtures"
CLAUDE = FIXTURES / "claude" / "-home-me-app" / "5b1f0e7c-2f4d-4c1e-9a0b-7d3c2e1f0a99.jsonl"
CODEX = (
    FIXTURES / "codex" / "rollout-2025-09-01T10-00-00-0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b.jsonl"
)


def rerun(path: Path, workspace: Path, *flags: str) -> tuple[int, dict[tuple[str, str], Any]]:
    """Exit code, and each call's re-run by (name, status), of `replay --rerun --json`."""
    args = ["replay", str(path), "--rerun", "--json", "--workspace", str(workspace), *flags]
    result = CliRunner().invoke(cli, args)
    assert "Traceback" not in result.output
    document = orjson.loads(result.stdout)
    calls: dict[tuple[str, str], Any] = {}
    for call in document["calls"]:
        calls.setdefault((call["name"], call["status"]), []).append(call["rerun"])
    return result.exit_code, calls


def project(tmp_path: Path) -> Path:
    workspace = tmp_path / "app"
    (workspace / "tests").mkdir(parents=True)
    (workspace / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (workspace / "tests" / "test_calc.py").write_text("from calc import add\n")
    return workspace


def test_claude_calls_rerun_as_the_tools_they_map_to(tmp_path: Path) -> None:
    code, calls = rerun(CLAUDE, project(tmp_path))
    assert calls[("Read", "succeeded")] == [{"outcome": "matched", "reason": "re-run as read_file"}]
    assert [r["outcome"] for r in calls[("Grep", "succeeded")]] == ["matched", "matched"]
    assert calls[("Glob", "succeeded")] == [
        {"outcome": "matched", "reason": "re-run as list_files"}
    ]
    for name in ("Edit", "Task"):
        (skipped,) = calls[(name, "succeeded")]
        assert skipped["outcome"] == "skipped"
        assert "no mini-harness tool" in skipped["reason"]
    (bash,) = calls[("Bash", "failed")]
    assert bash["outcome"] == "skipped"
    assert "--allow-side-effects" in bash["reason"]
    assert code == 1  # the session has a call in doubt


def test_a_mapped_call_that_fails_today_is_reported(tmp_path: Path) -> None:
    workspace = project(tmp_path)
    (workspace / "calc.py").unlink()
    _, calls = rerun(CLAUDE, workspace)
    (read,) = calls[("Read", "succeeded")]
    assert read["outcome"] == "now-fails"
    assert read["reason"].startswith("re-run as read_file: ")


def test_codex_shell_runs_only_with_side_effects_allowed(tmp_path: Path) -> None:
    workspace = project(tmp_path)
    _, calls = rerun(CODEX, workspace)
    assert {r["outcome"] for r in calls[("shell", "succeeded")]} == {"skipped"}
    # A re-run asks no one: today's policy lets the shell commands run with --approve auto.
    allowed = ("--allow-side-effects", "--allow-unverified", "--approve", "auto")
    _, calls = rerun(CODEX, workspace, *allowed)
    # `ls tests` lists the test file again; the patch has no counterpart.
    assert calls[("shell", "succeeded")] == [
        {"outcome": "matched", "reason": "re-run as run_command"}
    ]
    (patch,) = calls[("apply_patch", "succeeded")]
    assert patch["outcome"] == "skipped"
    # pytest failed then, and fails now: no test is collected here.
    assert calls[("shell", "failed")] == [{"outcome": "matched", "reason": "re-run as run_command"}]


def test_arguments_map_into_the_workspace() -> None:
    assert rerun_as("claude", "Read", {"file_path": "/w/src/a.py", "limit": 5}, "/w") == (
        "read_file",
        {"path": "src/a.py", "limit": 5},
    )
    assert rerun_as("claude", "Grep", {"pattern": "x", "-i": True}, "/w") == (
        "search_text",
        {"query": "x", "regex": True, "caseSensitive": False},
    )
    assert rerun_as("codex", "exec_command", {"cmd": "ls", "workdir": "/w/src"}, "/w") == (
        "run_command",
        {"argv": ["ls"], "shell": True, "cwd": "src"},
    )
    outside = rerun_as("claude", "Read", {"file_path": "/etc/passwd"}, "/w")
    assert outside == "imported Read: /etc/passwd is outside the recorded workspace /w"
    assert "not a JSON object" in str(rerun_as("codex", "shell", '{"command": [', "/w"))


def test_view_of_a_session_file_writes_its_page_beside_it(tmp_path: Path) -> None:
    session = tmp_path / CODEX.name
    session.write_bytes(CODEX.read_bytes())
    result = CliRunner().invoke(cli, ["view", str(session)])
    # The session has a call that never got its output: in doubt, exit 1 (as for any
    # transcript), said of the session's file, not of its temporary import.
    assert result.exit_code == 1, result.output
    assert result.stderr.endswith(f"Error: {session}: 1 call in doubt\n")
    page = session.with_suffix(".html")
    assert f"Wrote {page}" in result.stdout
    text = page.read_text()
    for name in ("shell", "local_shell", "apply_patch", "ls tests"):
        assert name in text
    assert "Traceback" not in result.output
