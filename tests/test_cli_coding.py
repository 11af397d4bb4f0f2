"""The coding CLI pieces: `replay --effects` output and `undo` of one applied patch."""

from __future__ import annotations

import hashlib
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from mini_harness import ToolRuntime
from mini_harness.cli import cli
from mini_harness.cli.coding import make_approver, print_effects
from mini_harness.events import CallOrigin, RunStarted, RunWorkspace, ToolSucceeded
from mini_harness.runtime import ToolRegistry
from mini_harness.tools import register_coding_tools
from mini_harness.transcripts import JsonlTranscript, read_transcript

from .tools.test_apply_patch import APPLIED_ONCE, GIT_SHAPES, files_of

PATCH = (
    "--- a/app.py\n+++ b/app.py\n@@ -1,3 +1,3 @@\n a = 1\n-b = 2\n+b = 3\n c = 4\n"
    "--- /dev/null\n+++ b/new.txt\n@@ -0,0 +1 @@\n+fresh\n"
    "--- a/old.txt\n+++ /dev/null\n@@ -1,2 +0,0 @@\n-gone\n-soon\n"
)


def tree(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*") if p.is_file()}


@pytest.fixture(name="applied")
def _applied(tmp_path: Path) -> tuple[Path, Path, str, dict[str, bytes]]:
    """A workspace patched by one recorded apply_patch call: (workspace, log, call id, before)."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "app.py").write_text("a = 1\nb = 2\nc = 4\n")
    (ws / "old.txt").write_text("gone\nsoon\n")
    before = tree(ws)
    registry = ToolRegistry()
    register_coding_tools(registry, ws, sandbox=False)
    log = tmp_path / "t.jsonl"
    with JsonlTranscript(log) as sink:
        call_id = ToolRuntime(registry, sink).dispatch("apply_patch", {"patch": PATCH}).call_id
    return ws, log, call_id, before


def invoke_undo(log: Path, call_id: str, ws: Path) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["undo", str(log), "--call", call_id, "--workspace", str(ws)])
    return result.exit_code, result.output


class TestEffectsReport:
    def test_lists_each_path_with_its_hashes(
        self, applied: tuple[Path, Path, str, dict[str, bytes]], capsys: pytest.CaptureFixture[str]
    ) -> None:
        """--effects lists the call with each path: modified, added, deleted, short hashes."""
        _, log, call_id, before = applied
        print_effects(str(log))
        out = capsys.readouterr().out
        old_hash = hashlib.sha256(before["app.py"]).hexdigest()[:12]
        assert f"Call {call_id} (apply_patch, line 4):" in out
        assert f"  modified app.py  {old_hash} -> " in out
        assert "  added    new.txt  absent -> " in out
        assert "  deleted  old.txt  " in out
        assert out.rstrip().endswith("-> absent")

    def test_json(self, applied: tuple[Path, Path, str, dict[str, bytes]]) -> None:
        """`replay --effects --json` prints the same report as one JSON document."""
        _, log, call_id, before = applied
        result = CliRunner().invoke(cli, ["replay", str(log), "--effects", "--json"])
        assert result.exit_code == 0, result.output
        document = orjson.loads(result.stdout)
        (call,) = document["calls"]
        assert (call["callId"], call["name"], call["line"]) == (call_id, "apply_patch", 4)
        effects = {effect["path"]: effect for effect in call["effects"]}
        assert effects["app.py"]["before"] == hashlib.sha256(before["app.py"]).hexdigest()
        assert effects["new.txt"]["before"] is None
        assert effects["old.txt"]["after"] is None

    def test_no_effects(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """A transcript without file changes says so."""
        log = tmp_path / "t.jsonl"
        with JsonlTranscript(log) as sink:
            ToolRuntime(ToolRegistry(), sink).start()
        print_effects(str(log))
        assert capsys.readouterr().out == "No recorded file effects.\n"


class TestUndo:
    def test_undo_restores_the_tree_and_records_a_new_run(
        self, applied: tuple[Path, Path, str, dict[str, bytes]]
    ) -> None:
        """Undo brings back every file byte for byte and appends the revert as a new run."""
        ws, log, call_id, before = applied
        code, output = invoke_undo(log, call_id, ws)
        assert code == 0, output
        assert f"[mini-harness] Undid call {call_id} as call" in output
        assert tree(ws) == before
        events = [r.event for r in read_transcript(log)]
        assert sum(type(e).__name__ == "RunStarted" for e in events) == 2
        last = events[-1]
        assert isinstance(last, ToolSucceeded)
        assert last.effects is not None
        assert {e.path: e.after for e in last.effects}["new.txt"] is None

    def test_the_undo_run_names_the_call_it_reverts(
        self, applied: tuple[Path, Path, str, dict[str, bytes]]
    ) -> None:
        """The undo's RunStarted names the call it reverts and that call's run, and `show`
        says so on the undo run's line."""
        ws, log, call_id, _ = applied
        code, output = invoke_undo(log, call_id, ws)
        assert code == 0, output
        first, undo = [r.event for r in read_transcript(log) if isinstance(r.event, RunStarted)]
        assert first.undoes is None
        assert undo.undoes == CallOrigin(first.run_id, call_id)
        shown = CliRunner().invoke(cli, ["show", str(log)])
        assert shown.exit_code == 0, shown.output
        (line,) = [line for line in shown.stdout.splitlines() if line.startswith("Run 2 ")]
        assert line.endswith(f" · undo of call {call_id} of run {first.run_id}")

    def test_a_file_that_moved_on_blocks_the_undo(
        self, applied: tuple[Path, Path, str, dict[str, bytes]]
    ) -> None:
        """When a file changed since the call, undo names it, exits 1 and changes nothing."""
        ws, log, call_id, _ = applied
        (ws / "new.txt").write_text("edited by hand\n")
        now = tree(ws)
        code, output = invoke_undo(log, call_id, ws)
        assert code == 1
        assert f"Cannot undo call {call_id}: new.txt changed since" in output
        assert tree(ws) == now

    def test_an_absent_file_names_the_directory_checked(
        self, applied: tuple[Path, Path, str, dict[str, bytes]], tmp_path: Path
    ) -> None:
        """Undo in another directory (where the file is absent) names the directory it
        looked in, so the user sees it was the wrong one."""
        _, log, call_id, _ = applied
        elsewhere = tmp_path / "elsewhere"
        elsewhere.mkdir()
        code, output = invoke_undo(log, call_id, elsewhere)
        assert code == 1
        assert f"changed since (it is absent in {elsewhere.resolve()})" in output

    def test_what_it_says_is_redacted_as_its_log_is(
        self, applied: tuple[Path, Path, str, dict[str, bytes]]
    ) -> None:
        """What undo prints, its refusal included, hides what --redact-pattern names, as
        every command that records does."""
        ws, log, call_id, _ = applied
        (ws / "new.txt").write_text("edited by hand\n")
        args = ["undo", str(log), "--call", call_id, "--workspace", str(ws)]
        result = CliRunner().invoke(cli, [*args, "--redact-pattern", r"new\.txt"])
        assert result.exit_code == 1
        assert f"Cannot undo call {call_id}: [REDACTED] changed since" in result.output
        assert "new.txt" not in result.output

    def test_the_settings_are_those_of_the_workspace_it_reverts_in(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Given no --workspace, undo reverts in the workspace the run recorded and reads
        its settings there, not in the current directory: the recorded workspace's
        redact-pattern hides what it prints, and a config that cannot be used in the
        current directory does not stop it."""
        ws = tmp_path / "ws"
        ws.mkdir()
        (ws / "app.py").write_text("a = 1\nb = 2\nc = 4\n")
        (ws / "old.txt").write_text("gone\nsoon\n")
        registry = ToolRegistry()
        register_coding_tools(registry, ws, sandbox=False)
        log = tmp_path / "t.jsonl"
        with JsonlTranscript(log) as sink:
            runtime = ToolRuntime(registry, sink)
            runtime.start(workspace=RunWorkspace(str(ws)))
            call_id = runtime.dispatch("apply_patch", {"patch": PATCH}).call_id
        (ws / ".mini-harness").mkdir()
        (ws / ".mini-harness/config.toml").write_text('redact-pattern = ["new\\\\.txt"]\n')
        (ws / "new.txt").write_text("edited by hand\n")
        elsewhere = tmp_path / "elsewhere"
        (elsewhere / ".mini-harness").mkdir(parents=True)
        (elsewhere / ".mini-harness/config.toml").write_text("this is not toml [\n")
        monkeypatch.chdir(elsewhere)
        result = CliRunner().invoke(cli, ["undo", str(log), "--call", call_id])
        assert result.exit_code == 1, result.output
        assert f"Cannot undo call {call_id}: [REDACTED] changed since" in result.output
        assert "new.txt" not in result.output

    def test_unknown_call_is_a_usage_error(
        self, applied: tuple[Path, Path, str, dict[str, bytes]]
    ) -> None:
        """A call id with no recorded effects is a usage error (exit 2)."""
        ws, log, _, _ = applied
        code, output = invoke_undo(log, "nope-1", ws)
        assert code == 2
        assert output == (
            f"[mini-harness] Error: No call nope-1 with recorded file effects in {log}\n"
        )


class TestApproverFromCli:
    def test_bad_policy_file_is_a_usage_error(self, tmp_path: Path) -> None:
        """A policy file that cannot be used stops the command with a usage error."""
        (tmp_path / ".mini-harness").mkdir()
        (tmp_path / ".mini-harness/policy.toml").write_text("[[rules]]\ndecision = 'perhaps'\n")
        with pytest.raises(Exception, match="decision must be one of"):
            make_approver(tmp_path, "ask")


class TestFoldKnowsApprovals:
    def test_approval_events_are_not_unknown_to_replay(self, tmp_path: Path) -> None:
        """A transcript with approval decisions folds without "unknown event types" skipped."""
        from mini_harness.agent.approval import ApprovalPolicy, PolicyApprover
        from mini_harness.replay import fold_transcript

        ws = tmp_path / "ws"
        ws.mkdir()
        (ws / "app.py").write_text("a = 1\nb = 2\nc = 4\n")
        registry = ToolRegistry()
        register_coding_tools(registry, ws, sandbox=False)
        log = tmp_path / "t.jsonl"
        patch = PATCH.split("--- /dev/null", maxsplit=1)[0]
        with JsonlTranscript(log) as sink:
            approver = PolicyApprover(ApprovalPolicy(mode="auto"))
            ToolRuntime(registry, sink, approver=approver).dispatch("apply_patch", {"patch": patch})
        folded = fold_transcript(log)
        assert folded.totals.unknown_events == 0
        assert folded.totals.succeeded == 1


class TestUndoEveryShape:
    @pytest.mark.parametrize(
        ("before", "patch"),
        [shape[1:3] for shape in GIT_SHAPES] + [case[1:] for case in APPLIED_ONCE],
        ids=[shape[0] for shape in GIT_SHAPES] + [case[0] for case in APPLIED_ONCE],
    )
    def test_undo_restores_what_the_patch_changed(
        self, tmp_path: Path, before: dict[str, object], patch: str
    ) -> None:
        """Renames, copies, modes, empty files, final newlines, line endings: undo gives
        back every file, byte for byte and with its executable bit."""
        ws = tmp_path / "ws"
        ws.mkdir()
        for name, value in before.items():
            data, executable = value if isinstance(value, tuple) else (value, False)
            (ws / name).parent.mkdir(parents=True, exist_ok=True)
            (ws / name).write_bytes(data)
            (ws / name).chmod(0o755 if executable else 0o644)
        original = files_of(ws)
        registry = ToolRegistry()
        register_coding_tools(registry, ws, sandbox=False)
        log = tmp_path / "t.jsonl"
        with JsonlTranscript(log) as sink:
            call_id = ToolRuntime(registry, sink).dispatch("apply_patch", {"patch": patch}).call_id
        assert files_of(ws) != original
        code, output = invoke_undo(log, call_id, ws)
        assert code == 0, output
        assert files_of(ws) == original
