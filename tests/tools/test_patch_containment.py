"""apply_patch against a hostile model: the agent's own controls, names that cannot be
recorded, links, files that change while a patch is applied, and what messages reveal."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner

from mini_harness import MemorySink, ToolHandlerError, ToolRuntime
from mini_harness.cli import cli
from mini_harness.events import ToolFailed
from mini_harness.runtime import ToolRegistry
from mini_harness.tools import Workspace, register_coding_tools

from .test_apply_patch import snapshot


def runtime_for(workspace: Workspace, sink: MemorySink) -> ToolRuntime:
    registry = ToolRegistry()
    register_coding_tools(registry, workspace, sandbox=False)
    return ToolRuntime(registry, sink)


def change(path: str, old: str = "old", new: str = "new") -> str:
    return f"--- a/{path}\n+++ b/{path}\n@@ -1 +1 @@\n-{old}\n+{new}\n"


def add(path: str) -> str:
    return f"--- /dev/null\n+++ b/{path}\n@@ -0,0 +1 @@\n+#!/bin/sh\n"


@pytest.fixture(name="ws")
def _ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    for name in (
        ".git/config",
        ".git/hooks/pre-commit.sample",
        ".mini-harness/policy.toml",
        "vendor/lib/.git/config",
        "logs/run.jsonl",
        "logs/run.jsonl.torn-1",
        "src/app.py",
    ):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text("old\n")
    (root / ".mini-harness/policy.toml").write_text("rules = []\n")
    return root


class TestProtectedPaths:
    @pytest.mark.parametrize(
        "patch",
        [
            change(".git/config"),
            add(".git/hooks/pre-commit"),
            change(".mini-harness/policy.toml"),
            add(".mini-harness/config.toml"),
            change("vendor/lib/.git/config"),
            change("logs/run.jsonl"),
            change("logs/run.jsonl.torn-1"),
            change("src/../.git/config"),
            change("src/app.py") + change(".git/config"),
        ],
    )
    def test_a_change_to_the_agents_controls_is_refused(self, ws: Path, patch: str) -> None:
        """.git, .mini-harness (at any depth) and the open transcript with its sidecars are
        refused, recorded as ToolFailed, and nothing changes, not even the other files of
        the patch."""
        workspace = Workspace(ws, protected=(ws / "logs/run.jsonl",))
        sink = MemorySink()
        before = snapshot(ws)
        with pytest.raises(ToolHandlerError, match="one of the agent's own controls"):
            runtime_for(workspace, sink).dispatch("apply_patch", {"patch": patch})
        assert snapshot(ws) == before
        assert isinstance(sink.events[-1], ToolFailed)

    @pytest.mark.parametrize(
        ("control", "link", "said"),
        [
            (".git/config", "cfg", "is a hard link to one of the agent's own controls"),
            ("logs/run.jsonl", "notes/run-copy.txt", "is the open transcript, reached by another"),
        ],
    )
    def test_a_control_reached_through_a_hard_link_is_refused(
        self, ws: Path, control: str, link: str, said: str
    ) -> None:
        """A file that is a control under another name (a hard link) is refused as the
        control is: changed, renamed or deleted."""
        (ws / link).parent.mkdir(exist_ok=True)
        os.link(ws / control, ws / link)
        workspace = Workspace(ws, protected=(ws / "logs/run.jsonl",))
        deleted = f"--- a/{link}\n+++ /dev/null\n@@ -1 +0,0 @@\n-old\n"
        renamed = f"diff --git a/{link} b/moved\nrename from {link}\nrename to moved\n"
        before = snapshot(ws)
        for patch in (change(link), deleted, renamed):
            with pytest.raises(ToolHandlerError, match=said):
                runtime_for(workspace, MemorySink()).dispatch("apply_patch", {"patch": patch})
        assert snapshot(ws) == before
        assert os.stat(ws / link).st_ino == os.stat(ws / control).st_ino

    def test_a_hard_link_to_an_ordinary_file_is_patched(self, ws: Path) -> None:
        """A hard link between two ordinary files is no reason to refuse."""
        os.link(ws / "src/app.py", ws / "src/alias.py")
        workspace = Workspace(ws, protected=(ws / "logs/run.jsonl",))
        runtime_for(workspace, MemorySink()).dispatch(
            "apply_patch", {"patch": change("src/alias.py")}
        )
        assert (ws / "src/alias.py").read_text() == "new\n"

    def test_a_hostile_model_cannot_patch_its_controls_through_the_cli(
        self, ws: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """An agent run under --approve auto, its transcript inside the workspace, whose
        model patches .mini-harness/policy.toml, .git/config, the transcript and a torn
        sidecar of it: every call fails, and no file but the transcript changes."""
        forged = '--- a/session.jsonl\n+++ b/session.jsonl\n@@ -1 +1 @@\n-{}\n+{"x":1}\n'
        patches = [
            change(".mini-harness/policy.toml", "rules = []", ""),
            change(".git/config"),
            forged,
            add("session.jsonl.torn-9"),
        ]
        script = tmp_path / "hostile.json"
        steps: list[dict[str, Any]] = [
            {"toolCalls": [{"name": "apply_patch", "arguments": {"patch": patch}}]}
            for patch in patches
        ]
        script.write_bytes(orjson.dumps([*steps, {"text": "done"}]))
        monkeypatch.chdir(ws)
        before = snapshot(ws)
        log = ws / "session.jsonl"
        result = CliRunner().invoke(
            cli,
            ["run", "t", "--model", f"script:{script}", "--log", str(log), "--approve", "auto"],
            env={"MINI_HARNESS_MODEL": None, "OPENAI_API_KEY": None},
        )
        assert result.exit_code == 0, result.output
        after = snapshot(ws)
        del after["session.jsonl"]  # the run's own record, written by the harness
        assert after == before
        failed = [line for line in log.read_text().splitlines() if '"type":"ToolFailed"' in line]
        assert len(failed) == 4
        assert all("one of the agent's own controls" in line for line in failed)


def _delete(path: str) -> str:
    return f"--- a/{path}\n+++ /dev/null\n@@ -1 +0,0 @@\n-old\n"


def _rename(path: str, to: str) -> str:
    return (
        f"diff --git a/{path} b/{to}\nsimilarity index 100%\nrename from {path}\nrename to {to}\n"
    )


class TestTheTranscriptByAnotherName:
    """The open transcript is protected as a file, not as a name: another name reaching it
    (a hard link, its directory renamed) is refused too."""

    @pytest.mark.parametrize("how", ["hard-link", "renamed-directory"])
    @pytest.mark.parametrize("what", ["change", "delete", "rename"])
    def test_another_name_of_the_transcript_is_refused(self, ws: Path, how: str, what: str) -> None:
        """Changing, deleting or renaming the transcript through another name fails,
        recorded as ToolFailed, and the transcript is still the same file with its bytes."""
        log = ws / "logs/run.jsonl"
        workspace = Workspace(ws, protected=(log,))
        if how == "hard-link":
            os.link(log, ws / "notes.txt")
            target = "notes.txt"
        else:
            (ws / "logs").rename(ws / "moved")
            target = "moved/run.jsonl"
        reached = ws / target
        file = (reached.stat().st_dev, reached.stat().st_ino)
        patch = {"change": change, "delete": _delete}.get(what, lambda p: _rename(p, "x.txt"))(
            target
        )
        sink = MemorySink()
        before = snapshot(ws)
        with pytest.raises(ToolHandlerError, match="is the open transcript, reached by another"):
            runtime_for(workspace, sink).dispatch("apply_patch", {"patch": patch})
        assert snapshot(ws) == before
        assert (reached.stat().st_dev, reached.stat().st_ino) == file
        assert isinstance(sink.events[-1], ToolFailed)

    def test_a_transcript_opened_after_the_tools_were_made_is_pinned(self, ws: Path) -> None:
        """A transcript that did not exist when the workspace was made is protected by
        identity once pinned: a hard link to it is refused."""
        log = ws / "logs/new.jsonl"
        workspace = Workspace(ws, protected=(log,))
        log.write_text("old\n")
        workspace.pin(log, (log.stat().st_dev, log.stat().st_ino))
        os.link(log, ws / "notes.txt")
        with pytest.raises(ToolHandlerError, match="is the open transcript, reached by another"):
            runtime_for(workspace, MemorySink()).dispatch(
                "apply_patch", {"patch": change("notes.txt")}
            )
        assert workspace.pinned == {str(log.resolve()): (log.stat().st_dev, log.stat().st_ino)}


class TestLinksAndNames:
    def test_an_existing_file_through_a_symlinked_directory_inside_is_refused(
        self, ws: Path
    ) -> None:
        """A directory link that stays inside the workspace is still a link: a file reached
        through it is refused and keeps its bytes."""
        (ws / "alias").symlink_to("src")
        sink = MemorySink()
        with pytest.raises(ToolHandlerError, match=r'goes through a symlink \("alias"\)'):
            runtime_for(Workspace(ws), sink).dispatch(
                "apply_patch", {"patch": change("alias/app.py")}
            )
        assert (ws / "src/app.py").read_text() == "old\n"

    @pytest.mark.parametrize("exists", [True, False])
    def test_messages_do_not_tell_whether_an_outside_path_exists(
        self, ws: Path, tmp_path: Path, exists: bool
    ) -> None:
        """Through a link to a directory outside, or with `..`, a path outside the workspace
        gets the same message whether or not something is there."""
        outside = tmp_path / "outside"
        outside.mkdir()
        if exists:
            (outside / "target.txt").write_text("old\n")
        (ws / "out").symlink_to(outside)
        runtime = runtime_for(Workspace(ws), MemorySink())
        messages = []
        for patch in (change("out/target.txt"), change("../outside/target.txt")):
            with pytest.raises(ToolHandlerError) as caught:
                runtime.dispatch("apply_patch", {"patch": patch})
            messages.append(caught.value.message)
        assert messages == [
            'Tool apply_patch failed: WorkspaceError: Path "out/target.txt" goes through a '
            'symlink ("out"); apply_patch refuses it',
            'Tool apply_patch failed: WorkspaceError: Path "../outside/target.txt" leads '
            "outside the workspace",
        ]

    def test_a_name_that_is_not_utf8_is_refused_before_anything_is_written(self, ws: Path) -> None:
        """A git-quoted name that is not UTF-8 cannot be recorded: the call fails before it
        creates anything, and the other files of the patch are left alone too."""
        patch = '--- /dev/null\n+++ "b/caf\\351.txt"\n@@ -0,0 +1 @@\n+x\n' + change("src/app.py")
        sink = MemorySink()
        before = snapshot(ws)
        with pytest.raises(ToolHandlerError, match="is not valid UTF-8"):
            runtime_for(Workspace(ws), sink).dispatch("apply_patch", {"patch": patch})
        assert snapshot(ws) == before
        assert isinstance(sink.events[-1], ToolFailed)


class TestChangedWhileApplying:
    def test_a_file_written_to_after_it_was_read_is_not_replaced(
        self, ws: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Another program appends to the file between the read and the swap: the patch is
        refused, saying so, and the appended line is still there."""
        target = ws / "src/app.py"
        real_fsync = os.fsync

        def append_then_sync(fd: int) -> None:
            if target.read_text() == "old\n":
                with target.open("a") as handle:
                    handle.write("appended meanwhile\n")
            real_fsync(fd)

        monkeypatch.setattr(os, "fsync", append_then_sync)
        sink = MemorySink()
        with pytest.raises(ToolHandlerError, match="changed while the patch was being applied"):
            runtime_for(Workspace(ws), sink).dispatch(
                "apply_patch", {"patch": change("src/app.py")}
            )
        assert target.read_text() == "old\nappended meanwhile\n"
        assert isinstance(sink.events[-1], ToolFailed)
