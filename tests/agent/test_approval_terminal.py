"""Approval on a real terminal: prompts answered through a pseudo-terminal, pipes denied."""

from __future__ import annotations

import json
import os
import select
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mini_harness.events import ApprovalDecided, Event, ToolCalled, ToolFailed
from mini_harness.transcripts import read_transcript

PATCH = "--- a/notes.txt\n+++ b/notes.txt\n@@ -1 +1 @@\n-old\n+new\n"


CHILD = """
import sys
from mini_harness import ToolRuntime
from mini_harness.agent.approval import ApprovalPolicy, PolicyApprover, terminal_prompter
from mini_harness.runtime import ToolRegistry
from mini_harness.tools import register_coding_tools
from mini_harness.transcripts import JsonlTranscript

workspace, log, patch = sys.argv[1:4]
registry = ToolRegistry()
register_coding_tools(registry, workspace, sandbox=False)
prompter = terminal_prompter()
print("terminal:", prompter is not None, flush=True)
with JsonlTranscript(log) as sink:
    runtime = ToolRuntime(registry, sink, approver=PolicyApprover(ApprovalPolicy(), prompter))
    try:
        runtime.dispatch("apply_patch", {"patch": patch})
        print("applied", flush=True)
    except Exception as exc:
        print("failed:", exc, flush=True)
"""


def on_pty(argv: list[str], answers: list[bytes], cwd: Path | None = None) -> str:
    """Run argv on a pseudo-terminal, typing the next answer at each prompt; return its output."""
    master, slave = os.openpty()
    child = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, close_fds=True, cwd=cwd)
    os.close(slave)
    seen = b""
    pending = list(answers)
    deadline = time.monotonic() + 120
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.2)
            if ready:
                try:
                    chunk = os.read(master, 4096)
                except OSError:  # the child closed the terminal
                    break
                if not chunk:
                    break
                seen += chunk
            if pending and seen.count(b"Allow?") > len(answers) - len(pending):
                os.write(master, pending.pop(0))
            if child.poll() is not None and not ready:
                break
    finally:
        child.wait(timeout=30)
        os.close(master)
    return seen.decode(errors="replace").replace("\r\n", "\n")


def run_on_pty(ws: Path, log: Path, answer: bytes | None) -> str:
    """Run CHILD on a pseudo-terminal; type `answer` at the prompt; return all it printed."""
    argv = [sys.executable, "-c", CHILD, str(ws), str(log), PATCH]
    return on_pty(argv, [] if answer is None else [answer])


def events_of(log: Path) -> list[Event]:
    return [record.event for record in read_transcript(log)]


class TestTerminalPrompt:
    def test_yes_typed_on_a_real_terminal_applies_the_patch(self, ws: Path, tmp_path: Path) -> None:
        """On a pseudo-terminal the prompt shows the diff; typing y applies it and is recorded."""
        log = tmp_path / "t.jsonl"
        shown = run_on_pty(ws, log, b"y\n")
        assert "terminal: True" in shown
        assert "Approval needed: apply_patch" in shown
        assert "-old\n+new" in shown
        assert "applied" in shown
        assert (ws / "notes.txt").read_text() == "new\n"
        kinds = [type(e).__name__ for e in events_of(log)]
        assert kinds[2:] == ["ToolCalled", "ApprovalRequested", "ApprovalDecided", "ToolSucceeded"]
        decided = events_of(log)[4]
        assert isinstance(decided, ApprovalDecided)
        assert (decided.decision, decided.by) == ("approved", "user")

    def test_no_typed_on_a_real_terminal_denies(self, ws: Path, tmp_path: Path) -> None:
        """Typing n at the prompt leaves the file alone and records the user's denial."""
        log = tmp_path / "t.jsonl"
        shown = run_on_pty(ws, log, b"n\n")
        assert "failed: The user denied the call to apply_patch" in shown
        assert (ws / "notes.txt").read_text() == "old\n"
        failed = events_of(log)[-1]
        assert isinstance(failed, ToolFailed)
        assert failed.error.kind == "denied"

    def test_a_pipe_is_no_terminal(self, ws: Path, tmp_path: Path) -> None:
        """The same program with pipes for stdin and stderr never prompts: it is denied."""
        log = tmp_path / "t.jsonl"
        done = subprocess.run(
            [sys.executable, "-c", CHILD, str(ws), str(log), PATCH],
            capture_output=True, text=True, input="y\n", check=True, timeout=60,
        )  # fmt: skip
        assert "terminal: False" in done.stdout
        assert "Allow?" not in done.stdout + done.stderr
        assert "no terminal to ask on" in done.stdout
        assert (ws / "notes.txt").read_text() == "old\n"
        assert any(isinstance(e, ToolCalled) for e in events_of(log))


FLOW = """
import json, sys
from mini_harness import ToolRuntime
from mini_harness.agent.approval import PolicyApprover, load_policy, terminal_prompter
from mini_harness.tools import default_registry, register_coding_tools
from mini_harness.transcripts import JsonlTranscript

workspace, log = sys.argv[1:3]
registry = default_registry(workspace)
register_coding_tools(registry, workspace)
approver = PolicyApprover(load_policy(workspace), terminal_prompter())
steps = [
    ("read_file", {"path": "calc.py"}),
    ("search_text", {"query": "def add"}),
    ("apply_patch", {"patch": sys.argv[3]}),
    ("run_command", {"argv": [sys.executable, "-c", "import calc; assert calc.add(2, 2) == 4"]}),
    ("run_command", {"argv": [sys.executable, "-c", "import calc; print(calc.add(1, 2))"]}),
    ("run_command", {"argv": ["rm", "-rf", "."]}),
    ("git_diff", {}),
]
with JsonlTranscript(log) as sink:
    runtime = ToolRuntime(registry, sink, approver=approver)
    for name, tool_input in steps:
        try:
            output = runtime.dispatch(name, tool_input).output
            print("OK", name, json.dumps(output)[:300], flush=True)
        except Exception as exc:
            print("FAILED", name, exc, flush=True)
"""

CALC_PATCH = (
    "--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,2 @@\n"
    " def add(a, b):\n-    return a - b\n+    return a + b\n"
)


@pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")
class TestCodingSession:
    def test_read_patch_test_and_diff_through_approval(self, tmp_path: Path) -> None:
        """The Day 14 flow: read, search, patch (approved on the terminal), run the test (approved
        for the session), a denied rm, and the diff of what changed. Code given to `python -c`
        may run anything the rm rule is there to stop, so each such call is asked: the
        session's approval does not cover the second."""
        ws = tmp_path / "proj"
        ws.mkdir()
        (ws / "calc.py").write_text("def add(a, b):\n    return a - b\n")
        (ws / ".mini-harness").mkdir()
        (ws / ".mini-harness/policy.toml").write_text(
            '[[rules]]\ntool = "run_command"\ncommand = "rm"\ndecision = "deny"\n'
        )
        for args in (["init", "-q"], ["add", "calc.py"], ["commit", "-qm", "start"]):
            subprocess.run(
                ["git", "-c", "user.name=T", "-c", "user.email=t@e", *args],
                cwd=ws, check=True, capture_output=True,
            )  # fmt: skip
        log = tmp_path / "session.jsonl"
        shown = on_pty(
            [sys.executable, "-c", FLOW, str(ws), str(log), CALC_PATCH], [b"y\n", b"s\n", b"y\n"]
        )
        assert "-    return a - b\n+    return a + b" in shown  # the diff shown at the prompt
        assert "$ " in shown  # the argv shown for the command
        assert shown.count("Allow?") == 3
        assert "python runs code it is given (-c)" in shown
        assert "OK run_command" in shown
        assert "FAILED run_command Call to run_command denied by the approval policy" in shown
        assert "+    return a + b" in shown.split("OK git_diff", 1)[1]
        assert (ws / "calc.py").read_text() == "def add(a, b):\n    return a + b\n"
        decided = [e for e in events_of(log) if isinstance(e, ApprovalDecided)]
        assert [(e.name, e.decision, e.by) for e in decided] == [
            ("read_file", "approved", "policy"),
            ("search_text", "approved", "policy"),
            ("apply_patch", "approved", "user"),
            ("run_command", "approved_for_session", "user"),
            ("run_command", "approved", "user"),
            ("run_command", "denied", "policy"),
            ("git_diff", "approved", "policy"),
        ]


ASKED = {"apply_patch", "run_command"}


def agent_script(path: Path) -> str:
    """A scripted model that reads, patches, runs a command, shows the diff, answers."""
    calls = [
        {"name": "read_file", "arguments": {"path": "notes.txt"}},
        {"name": "apply_patch", "arguments": {"patch": PATCH}},
        {"name": "run_command", "arguments": {"argv": ["cat", "notes.txt"]}},
        {"name": "git_diff", "arguments": {}},
    ]
    steps = [{"toolCalls": [call]} for call in calls] + [{"text": "The note says new."}]
    path.write_text(json.dumps(steps))
    return f"script:{path}"


def git_workspace(ws: Path) -> None:
    git = ["git", "-C", str(ws), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "notes.txt"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "start"], check=True)


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git (Debian package git)")
class TestAgentRunAsksOnTheTerminal:
    def test_an_agent_run_patches_after_yes_on_a_real_terminal(
        self, ws: Path, tmp_path: Path
    ) -> None:
        """`mini-harness run` with a scripted model reads, patches (asked, answered y on a
        pseudo-terminal), runs a command (asked, y), shows the diff and answers."""
        git_workspace(ws)
        log = tmp_path / "t.jsonl"
        model = agent_script(tmp_path / "script.json")
        argv = [sys.executable, "-m", "mini_harness", "run", "fix the note", "--model", model]
        shown = on_pty([*argv, "--log", str(log)], [b"y\n", b"y\n"], cwd=ws)
        assert (ws / "notes.txt").read_text() == "new\n", shown
        assert "Approval needed: apply_patch" in shown
        assert "+new" in shown  # the diff shown at the prompt, then by git_diff
        assert "The note says new." in shown
        events = events_of(log)
        decisions = [e for e in events if isinstance(e, ApprovalDecided) and e.by == "user"]
        assert [(d.name, d.decision, d.by) for d in decisions] == [
            ("apply_patch", "approved", "user"),
            ("run_command", "approved", "user"),
        ]
        assert not [e for e in events if isinstance(e, ToolFailed)]

    def test_the_same_run_without_a_terminal_is_denied_and_recorded(
        self, ws: Path, tmp_path: Path
    ) -> None:
        """Through pipes nothing prompts: the patch and the command are denied by policy,
        recorded as such, and the file is untouched."""
        git_workspace(ws)
        log = tmp_path / "t.jsonl"
        model = agent_script(tmp_path / "script.json")
        done = subprocess.run(
            [sys.executable, "-m", "mini_harness", "run", "fix the note", "--model", model,
             "--log", str(log)],
            capture_output=True, text=True, input="y\ny\n", cwd=ws, timeout=120, check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert "Allow?" not in done.stdout + done.stderr
        assert (ws / "notes.txt").read_text() == "old\n"
        events = events_of(log)
        denied = [e for e in events if isinstance(e, ToolFailed) and e.error.kind == "denied"]
        assert [e.name for e in denied] == ["apply_patch", "run_command"]
        decisions = [e for e in events if isinstance(e, ApprovalDecided) and e.name in ASKED]
        assert [(d.decision, d.by) for d in decisions] == [("denied", "policy")] * 2
