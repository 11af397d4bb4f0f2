"""Re-runs act only as today's policy allows: a call recorded as denied never runs again,
and every other call passes the workspace's policy with --approve (never a prompt) before
it runs; what is not allowed is reported as skipped, with why."""

from __future__ import annotations

import textwrap
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner, Result

from mini_harness import ToolCallError, ToolRuntime
from mini_harness.cli import cli
from mini_harness.replay import fold_agent_runs
from mini_harness.runtime.approval import PendingCall
from mini_harness.transcripts import JsonlTranscript
from tests.replay import registries

MODULE = "tests.replay.registries"
DENY_NOTES = """
[[rules]]
tool = "write_note"
decision = "deny"
"""
DENY_PATCHES = """
[[rules]]
tool = "apply_patch"
decision = "deny"
"""
NO_KEYS: dict[str, str | None] = dict.fromkeys(
    ("DEEPSEEK_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "MINI_HARNESS_MODEL")
)
PATCH = "--- a/notes.txt\n+++ b/notes.txt\n@@ -1 +1 @@\n-old\n+new\n"


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), env=NO_KEYS)


def write_policy(root: Path, text: str) -> None:
    (root / ".mini-harness").mkdir(exist_ok=True)
    (root / ".mini-harness/policy.toml").write_text(textwrap.dedent(text))


@pytest.fixture(name="here")
def _here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty directory made the current one (where a re-run with --registry reads its
    policy)."""
    root = tmp_path / "here"
    root.mkdir()
    monkeypatch.chdir(root)
    return root


def record_notes(path: Path, *, denied: bool) -> Path:
    """One run: echo, then write_note (denied by the approver it was recorded with, or
    not), then the idempotent flaky."""
    registries.written.clear()

    def approver(call: PendingCall) -> str | None:
        return "the user said no" if denied and call.definition.name == "write_note" else None

    with JsonlTranscript(path) as sink:
        runtime = ToolRuntime(registries.recording(), sink, run_id="a" * 32, approver=approver)
        runtime.dispatch("echo", {"text": "hello"})
        try:
            runtime.dispatch("write_note", {"note": "n"})
        except ToolCallError:
            assert denied
        with pytest.raises(ToolCallError):
            runtime.dispatch("flaky", {})
    registries.written.clear()
    return path


def rerun_line(result: Result, name: str) -> str:
    (line,) = [line for line in result.stdout.splitlines() if f"  {name}  " in line]
    return line


class TestCallByCall:
    def test_a_call_recorded_denied_never_runs_again(self, here: Path) -> None:
        """Even with --allow-side-effects --approve auto, a denied call stays unrun."""
        log = record_notes(here.parent / "t.jsonl", denied=True)
        result = run("replay", str(log), "--rerun", "--registry", f"{MODULE}:same",
                     "--allow-side-effects", "--approve", "auto")  # fmt: skip
        assert registries.written == []
        assert rerun_line(result, "write_note").endswith(
            "write_note  skipped: denied when it was recorded: a re-run never runs it"
        )
        assert result.exit_code == 0, result.output

    def test_todays_deny_rule_stands(self, here: Path) -> None:
        """A call today's policy denies is skipped, saying which rule; the others run."""
        log = record_notes(here.parent / "t.jsonl", denied=False)
        write_policy(here, DENY_NOTES)
        result = run("replay", str(log), "--rerun", "--registry", f"{MODULE}:same",
                     "--allow-side-effects", "--approve", "auto")  # fmt: skip
        assert registries.written == []
        line = rerun_line(result, "write_note")
        assert "write_note  skipped: not allowed by the approval policy in force today: " in line
        assert '.mini-harness/policy.toml rule 1 (tool "write_note"): deny' in line
        assert "  flaky  matched" in result.stdout
        assert result.exit_code == 0, result.output

    def test_a_rerun_never_asks(self, here: Path) -> None:
        """Under the default --approve ask, a call that needs approval is skipped: a re-run
        asks no one."""
        log = record_notes(here.parent / "t.jsonl", denied=False)
        result = run("replay", str(log), "--rerun", "--registry", f"{MODULE}:same",
                     "--allow-side-effects")  # fmt: skip
        assert registries.written == []
        assert "but a re-run never asks anyone, so it was denied" in rerun_line(
            result, "write_note"
        )
        assert "Allow?" not in result.output

    def test_the_settings_approve_mode_decides(self, here: Path) -> None:
        """Without --approve, the re-run takes the approval mode of its settings (here
        MINI_HARNESS_APPROVE=auto), as every command that acts does."""
        log = record_notes(here.parent / "t.jsonl", denied=False)
        result = CliRunner().invoke(
            cli,
            ["replay", str(log), "--rerun", "--registry", f"{MODULE}:same",
             "--allow-side-effects"],
            env={**NO_KEYS, "MINI_HARNESS_APPROVE": "auto"},
        )  # fmt: skip
        assert rerun_line(result, "write_note").endswith("write_note  matched")
        assert registries.written != []
        assert result.exit_code == 0, result.output

    def test_the_decisions_are_recorded_in_the_log(self, here: Path) -> None:
        """With --log, the re-run's record says what today's policy decided."""
        log = record_notes(here.parent / "t.jsonl", denied=False)
        write_policy(here, DENY_NOTES)
        out = here.parent / "rerun.jsonl"
        result = run("replay", str(log), "--rerun", "--registry", f"{MODULE}:same",
                     "--allow-side-effects", "--approve", "auto", "--log", str(out))  # fmt: skip
        assert result.exit_code == 0, result.output
        events = [orjson.loads(line) for line in out.read_bytes().splitlines()]
        decided = [(e["name"], e["decision"]) for e in events if e["type"] == "ApprovalDecided"]
        assert decided == [("echo", "approved"), ("write_note", "denied"), ("flaky", "approved")]

    def test_view_rerun_and_a_corpus_rerun_keep_to_it_too(self, here: Path) -> None:
        """`view --rerun` and a corpus re-run skip the denied call as `replay --rerun` does."""
        log = record_notes(here.parent / "t.jsonl", denied=True)
        record_notes(here.parent / "u.jsonl", denied=False)
        write_policy(here, DENY_NOTES)
        flags = ["--registry", f"{MODULE}:same", "--allow-side-effects", "--approve", "auto"]
        page = here.parent / "t.html"
        viewed = run("view", str(log), "-o", str(page), "--rerun", *flags)
        assert viewed.exit_code == 0, viewed.output
        corpus = run("replay", str(log), str(here.parent / "u.jsonl"), "--rerun", *flags,
                     "--workers", "1")  # fmt: skip
        assert "2 skipped" in corpus.stdout, corpus.output
        assert registries.written == []

    def test_approve_needs_rerun(self, here: Path) -> None:
        """--approve without --rerun is a usage error, in replay and in view."""
        log = record_notes(here.parent / "t.jsonl", denied=False)
        replayed = run("replay", str(log), "--approve", "auto")
        viewed = run("view", str(log), "--approve", "auto")
        assert (replayed.exit_code, viewed.exit_code) == (2, 2)
        assert "--approve needs --rerun" in replayed.stderr
        assert "--approve needs --rerun" in viewed.stderr


def workspace(tmp_path: Path) -> Path:
    """A workspace holding `notes.txt` ("old")."""
    ws = tmp_path / "ws"
    ws.mkdir(exist_ok=True)
    (ws / "notes.txt").write_text("old\n")
    return ws


def agent_run(ws: Path, tmp_path: Path, *, policy: str | None) -> Path:
    """A scripted agent run in `ws` that patches notes.txt (old -> new) under --approve auto,
    with `policy` in force; notes.txt is put back to "old" afterwards."""
    if policy is not None:
        write_policy(ws, policy)
    script = tmp_path / "script.json"
    calls = [{"name": "apply_patch", "arguments": {"patch": PATCH}}]
    script.write_bytes(orjson.dumps([{"toolCalls": calls}, {"text": "Done."}]))
    log = tmp_path / "t.jsonl"
    args = ["run", "Update the notes.", "--model", f"script:{script}", "--approve", "auto"]
    result = run("--workspace", str(ws), *args, "--log", str(log))
    assert result.exit_code == 0, result.output
    (ws / "notes.txt").write_text("old\n")
    if policy is not None:
        (ws / ".mini-harness/policy.toml").unlink()
    return log


def rerun_allowing(ws: Path, log: Path) -> Result:
    """`replay LOG --rerun` in `ws`, side effects allowed, under --approve auto."""
    args = ["--rerun", "--workspace", str(ws), "--allow-side-effects", "--approve", "auto"]
    return run("replay", str(log), *args)


class TestOfflineAgentReplay:
    def test_a_call_recorded_denied_is_served_not_run(self, tmp_path: Path) -> None:
        """The recorded denial is served: the patch is not applied, even though today's
        policy would allow it."""
        ws = workspace(tmp_path)
        log = agent_run(ws, tmp_path, policy=DENY_PATCHES)
        result = rerun_allowing(ws, log)
        assert result.exit_code == 0, result.output
        assert (ws / "notes.txt").read_text() == "old\n"
        served = "served from the record (denied when it was recorded: a re-run never runs it)"
        assert 'Step 1: apply_patch {"patch":' in result.stdout
        assert served in result.stdout
        assert "replayed: identical through step 2" in result.stdout

    def test_the_workspaces_policy_of_today_decides(self, tmp_path: Path) -> None:
        """A patch applied when recorded, denied by WS's policy today (not the current
        directory's, which has none): served from the record, not applied again."""
        ws = workspace(tmp_path)
        log = agent_run(ws, tmp_path, policy=None)
        write_policy(ws, DENY_PATCHES)
        result = rerun_allowing(ws, log)
        assert result.exit_code == 0, result.output
        assert (ws / "notes.txt").read_text() == "old\n"
        assert "served from the record (not allowed by the approval policy in force today: " in (
            result.stdout
        )

    def test_allowed_calls_still_run(self, tmp_path: Path) -> None:
        """With no rule against it and --approve auto, the patch runs again."""
        ws = workspace(tmp_path)
        log = agent_run(ws, tmp_path, policy=None)
        result = rerun_allowing(ws, log)
        assert result.exit_code == 0, result.output
        assert (ws / "notes.txt").read_text() == "new\n"

    def test_live_model_decides_with_the_workspaces_policy(self, tmp_path: Path) -> None:
        """`replay --rerun --workspace WS --live-model`: the live run's calls are decided by
        WS's policy, whatever the current directory holds."""
        ws = workspace(tmp_path)
        script = tmp_path / "read.json"
        calls = [{"name": "read_file", "arguments": {"path": "notes.txt"}}]
        script.write_bytes(orjson.dumps([{"toolCalls": calls}, {"text": "It says old."}]))
        log = tmp_path / "t.jsonl"
        args = ["run", "Read the notes.", "--model", f"script:{script}", "--log", str(log)]
        assert run("--workspace", str(ws), *args).exit_code == 0
        (ws / "notes.txt").write_text("changed\n")  # what read_file sees differs: divergence
        write_policy(ws, DENY_PATCHES)
        live = tmp_path / "live.json"
        calls = [{"name": "apply_patch", "arguments": {"patch": PATCH}}]
        live.write_bytes(orjson.dumps([{"toolCalls": calls}, {"text": "Gave up."}]))
        result = run("replay", str(log), "--rerun", "--workspace", str(ws), "--live-model",
                     "--model", f"script:{live}", "--approve", "auto",
                     "--accept-policy")  # fmt: skip
        assert "diverged at step 2" in result.output
        assert (ws / "notes.txt").read_text() == "changed\n"
        assert "denied by the approval policy" in result.stdout
        forked = fold_agent_runs(log)[-1]
        (call,) = [call for step in forked.steps for call in step.calls]
        assert call.error is not None
        assert call.error.kind == "denied"
