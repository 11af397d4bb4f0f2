"""`mini-harness mcp` applies the approval policy: asks the client's user by elicitation
when the client can be asked, denies otherwise, and records every decision."""

from __future__ import annotations

import hashlib
import os
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip(
    "mcp", reason="the mcp extra is not installed (pip install -e '.[dev,mcp]'); CI installs it"
)

import anyio
from click.testing import CliRunner
from mcp import ClientSession, StdioServerParameters, stdio_client, types

from mini_harness.cli import cli
from mini_harness.events import ApprovalDecided, ApprovalRequested, RunStarted
from mini_harness.transcripts import read_transcript

TOOLS = """
from mini_harness.tools import default_registry, register_coding_tools

registry = default_registry(".")
register_coding_tools(registry, ".", sandbox=False)
"""
POLICY = """
[[rules]]
tool = "run_command"
command = "rm"
decision = "deny"
"""
HIDING = "\x1b[1A\x1b[2K"  # cursor up, erase the line
PATCH = f"--- a/notes.txt\n+++ b/notes.txt\n@@ -1 +1,2 @@\n-old\n+new\n+# tidy{HIDING}\n"


@pytest.fixture(name="ws")
def _ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / ".mini-harness").mkdir(parents=True)
    (root / ".mini-harness/policy.toml").write_text(textwrap.dedent(POLICY))
    (root / "tools.py").write_text(TOOLS)
    (root / "notes.txt").write_text("old\n")
    return root


class Answers:
    """An elicitation callback answering from a list, keeping the messages it was shown."""

    def __init__(self, *decisions: str | None) -> None:
        self.decisions = list(decisions)
        self.messages: list[str] = []

    async def __call__(self, context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        assert isinstance(params, types.ElicitRequestFormParams)
        self.messages.append(params.message)
        decision = self.decisions.pop(0)
        if decision is None:
            return types.ElicitResult(action="decline")
        return types.ElicitResult(action="accept", content={"decision": decision})


async def session(
    ws: Path, calls: list[tuple[str, dict[str, Any]]], answers: Answers | None, *flags: str
) -> list[types.CallToolResult]:
    """Serve `ws`'s tools (logged to ws/t.jsonl) and make `calls` with the SDK's client,
    declaring elicitation only when there are `answers`."""
    env = {
        "PATH": os.environ["PATH"],
        "PYTHONPATH": os.environ.get("PYTHONPATH", ""),
        "MINI_HARNESS_HOME": os.environ["MINI_HARNESS_HOME"],  # the test's user config
    }
    params = StdioServerParameters(
        command=sys.executable,
        args=[
            "-m",
            "mini_harness",
            "mcp",
            "--registry",
            "tools:registry",
            *flags,
            "--log",
            "t.jsonl",
        ],
        cwd=str(ws),
        env=env,
    )
    results = []
    with (ws / "stderr.txt").open("w") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write, elicitation_callback=answers) as client,
        ):
            await client.initialize()
            for name, arguments in calls:
                results.append(await client.call_tool(name, arguments))
    return results


def texts(result: types.CallToolResult) -> str:
    return "".join(c.text for c in result.content if isinstance(c, types.TextContent))


def approvals(ws: Path) -> list[ApprovalRequested | ApprovalDecided]:
    return [
        r.event
        for r in read_transcript(ws / "t.jsonl")
        if isinstance(r.event, ApprovalRequested | ApprovalDecided)
    ]


RM = ("run_command", {"argv": ["(rm notes.txt)"], "shell": True})


class TestElicitation:
    def test_the_user_is_asked_and_sees_the_call_escaped(self, ws: Path) -> None:
        """A client that can elicit is asked about apply_patch; it is shown the patch with
        its escape codes visible; yes applies it; both events are recorded."""
        answers = Answers("yes")
        (result,) = anyio.run(session, ws, [("apply_patch", {"patch": PATCH})], answers)
        assert result.is_error is False, texts(result)
        assert (ws / "notes.txt").read_text() == f"new\n# tidy{HIDING}\n"
        (message,) = answers.messages
        assert "+new\n+# tidy\\x1b[1A\\x1b[2K" in message
        assert "\x1b" not in message
        requested, decided = approvals(ws)
        assert isinstance(requested, ApprovalRequested)
        assert requested.shown == message
        assert isinstance(decided, ApprovalDecided)
        assert (decided.decision, decided.by) == ("approved", "user")

    def test_declining_denies_and_session_covers_the_like(self, ws: Path) -> None:
        """Declining the form denies the call; `session` lets later patches run unasked."""
        answers = Answers(None, "session")
        patch = {"patch": PATCH}
        results = anyio.run(session, ws, [("apply_patch", patch), ("apply_patch", patch)], answers)
        assert results[0].is_error is True
        assert texts(results[0]).startswith("The user denied the call to apply_patch.")
        assert results[1].is_error is False
        decided = [e for e in approvals(ws) if isinstance(e, ApprovalDecided)]
        assert [(d.decision, d.by) for d in decided] == [
            ("denied", "user"),
            ("approved_for_session", "user"),
        ]
        assert len(answers.messages) == 2

    def test_a_deny_rule_stands_and_nobody_is_asked(self, ws: Path) -> None:
        """The policy's deny rule refuses a disguised rm without asking, even with auto."""
        answers = Answers()
        (result,) = anyio.run(session, ws, [RM], answers, "--approve", "auto")
        assert result.is_error is True
        assert "denied by the approval policy" in texts(result)
        assert (ws / "notes.txt").exists()
        assert answers.messages == []
        (decided,) = approvals(ws)
        assert isinstance(decided, ApprovalDecided)
        assert decided.rule == (
            '.mini-harness/policy.toml rule 1 (tool "run_command", command "rm"): deny'
        )


class TestApprovalFromConfig:
    """The approval mode comes from the settings as a run's does: --approve, else the
    environment, the project's config.toml (only when it tightens), the user's."""

    def user_config(self, text: str) -> None:
        (Path(os.environ["MINI_HARNESS_HOME"]) / "config.toml").write_text(text)

    def test_the_users_never_denies_without_asking(self, ws: Path) -> None:
        """approve = "never" in the user's config: a call that needs approval is denied
        by the policy, the client's user never asked; the server says where it came from."""
        self.user_config('approve = "never"\n')
        answers = Answers("yes")
        (result,) = anyio.run(session, ws, [("apply_patch", {"patch": PATCH})], answers)
        assert result.is_error is True
        assert answers.messages == []
        assert (ws / "notes.txt").read_text() == "old\n"
        (decided,) = [e for e in approvals(ws) if isinstance(e, ApprovalDecided)]
        assert (decided.decision, decided.by) == ("denied", "policy")
        home = os.environ["MINI_HARNESS_HOME"]
        assert f"approve never (user {home}/config.toml)" in (ws / "stderr.txt").read_text()

    def test_the_users_auto_allows_and_the_flag_wins(self, ws: Path) -> None:
        """approve = "auto" in the user's config runs the patch unasked; --approve ask
        over it asks."""
        self.user_config('approve = "auto"\n')
        answers = Answers()
        (result,) = anyio.run(session, ws, [("apply_patch", {"patch": PATCH})], answers)
        assert result.is_error is False, texts(result)
        assert answers.messages == []
        (ws / "notes.txt").write_text("old\n")
        answers = Answers(None)
        patch = {"patch": PATCH}
        (result,) = anyio.run(session, ws, [("apply_patch", patch)], answers, "--approve", "ask")
        assert result.is_error is True
        assert len(answers.messages) == 1

    def test_a_projects_auto_is_not_taken(self, ws: Path) -> None:
        """A project's approve = "auto" is looser than the default: not taken, said on
        stderr, and the user is asked."""
        (ws / ".mini-harness/config.toml").write_text('approve = "auto"\n')
        answers = Answers(None)
        (result,) = anyio.run(session, ws, [("apply_patch", {"patch": PATCH})], answers)
        assert result.is_error is True
        assert len(answers.messages) == 1
        stderr = (ws / "stderr.txt").read_text()
        assert 'config.toml: approve = "auto" is not taken: a project file may only' in stderr
        assert "approve ask (default)" in stderr


class TestNoElicitation:
    def test_a_client_that_cannot_ask_gets_a_denial(self, ws: Path) -> None:
        """Without elicitation, a call that needs approval is denied and recorded as such;
        a read-only call runs."""
        calls = [("apply_patch", {"patch": PATCH}), ("read_file", {"path": "notes.txt"})]
        denied, read = anyio.run(session, ws, calls, None)
        assert denied.is_error is True
        assert "but the MCP client cannot ask its user (it does not support elicitation)" in (
            texts(denied)
        )
        assert (ws / "notes.txt").read_text() == "old\n"
        assert read.is_error is False
        decided = [e for e in approvals(ws) if isinstance(e, ApprovalDecided)]
        assert [(d.name, d.decision, d.by) for d in decided] == [
            ("apply_patch", "denied", "policy"),
            ("read_file", "approved", "policy"),
        ]
        assert decided[0].rule is not None
        assert decided[0].rule.endswith("; the MCP client cannot ask its user")

    def test_the_run_records_its_policy(self, ws: Path) -> None:
        """The session's RunStarted names the policy file's hash."""
        anyio.run(session, ws, [], None)
        (run,) = [
            r.event for r in read_transcript(ws / "t.jsonl") if isinstance(r.event, RunStarted)
        ]
        policy = (ws / ".mini-harness/policy.toml").read_bytes()
        assert run.policy_sha256 == hashlib.sha256(policy).hexdigest()


class TestUsage:
    def test_an_unusable_policy_file_stops_the_server(self, ws: Path) -> None:
        """A broken policy file is a usage error before anything is served."""
        (ws / ".mini-harness/policy.toml").write_text(
            '[[rules]]\ncommand = "rm \'x"\ndecision = "deny"\n'
        )
        cwd = Path.cwd()
        os.chdir(ws)
        try:
            result = CliRunner().invoke(cli, ["mcp", "--registry", "tools:registry"])
        finally:
            os.chdir(cwd)
        assert result.exit_code == 2
        assert result.stderr.startswith(
            '[mini-harness] Error: .mini-harness/policy.toml rule 1: command "rm \'x" is not'
        )
