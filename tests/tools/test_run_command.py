"""run_command: argv in the workspace, bounded, timed out as a group, scrubbed, sandboxed."""

from __future__ import annotations

import hashlib
import socket
import sys
import time
from pathlib import Path

import pytest

from mini_harness import MemorySink, ToolRuntime
from mini_harness.errors import InvalidInputError, ToolHandlerError
from mini_harness.events import FileEffect, ToolSucceeded
from mini_harness.runtime import ToolRegistry
from mini_harness.tools import register_coding_tools
from mini_harness.tools.homes import SANDBOX_HOME
from mini_harness.tools.sandbox import PASSED_NAMES, bubblewrap

NO_BWRAP = (
    "bubblewrap cannot run here: install the Debian package `bubblewrap` "
    "(`make test` does, as root) and allow unprivileged user namespaces"
)


@pytest.fixture(name="ws")
def _ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    (root / "sub").mkdir(parents=True)
    (root / "hello.txt").write_text("hello\n")
    return root


def runtime_for(root: Path, *, sandbox: bool, redacted: tuple[str, ...] = ()) -> ToolRuntime:
    registry = ToolRegistry()
    register_coding_tools(registry, root, sandbox=sandbox, redacted_names=redacted)
    return ToolRuntime(registry, MemorySink())


MODES = [
    pytest.param(False, id="unsandboxed"),
    pytest.param(
        True, id="bubblewrap", marks=pytest.mark.skipif(bubblewrap() is None, reason=NO_BWRAP)
    ),
]


@pytest.mark.parametrize("sandbox", MODES)
class TestRunning:
    def test_a_command_that_closes_its_output_early_keeps_its_exit_code(
        self, ws: Path, sandbox: bool
    ) -> None:
        """A command that closes stdout and stderr, then works on and exits, is waited for,
        not killed: its own exit code comes back."""
        script = "exec >&- 2>&-; sleep 0.3; exit 3"
        out = runtime_for(ws, sandbox=sandbox).dispatch(
            "run_command", {"argv": ["sh", "-c", script]}
        )
        assert out.output["exitCode"] == 3
        assert out.output["timedOut"] is False

    def test_runs_argv_in_the_workspace(self, ws: Path, sandbox: bool) -> None:
        """The program runs with the workspace as its directory and its output is returned."""
        out = runtime_for(ws, sandbox=sandbox).dispatch(
            "run_command", {"argv": ["cat", "hello.txt"]}
        )
        assert out.output == {
            "exitCode": 0,
            "stdout": "hello\n",
            "stderr": "",
            "truncated": False,
            "timedOut": False,
            "sandboxed": sandbox,
            "effectsTracked": True,
        }

    def test_argv_is_not_a_shell_line(self, ws: Path, sandbox: bool) -> None:
        """Shell syntax in argv is passed to the program as plain text."""
        out = runtime_for(ws, sandbox=sandbox).dispatch(
            "run_command", {"argv": ["echo", "$HOME; rm -rf x"]}
        )
        assert out.output["stdout"] == "$HOME; rm -rf x\n"

    def test_shell_when_asked(self, ws: Path, sandbox: bool) -> None:
        """With shell: true the one string runs through /bin/sh."""
        out = runtime_for(ws, sandbox=sandbox).dispatch(
            "run_command", {"argv": ["echo a && echo b >&2; exit 3"], "shell": True}
        )
        assert (out.output["stdout"], out.output["stderr"], out.output["exitCode"]) == (
            "a\n",
            "b\n",
            3,
        )

    def test_cwd_inside_the_workspace(self, ws: Path, sandbox: bool) -> None:
        """cwd picks a directory of the workspace."""
        out = runtime_for(ws, sandbox=sandbox).dispatch(
            "run_command", {"argv": ["pwd"], "cwd": "sub"}
        )
        assert out.output["stdout"] == f"{ws / 'sub'}\n"

    def test_timeout_kills_the_whole_process_group(self, ws: Path, sandbox: bool) -> None:
        """A timed-out command's background children die with it: none acts afterwards."""
        started = time.monotonic()
        out = runtime_for(ws, sandbox=sandbox).dispatch(
            "run_command",
            {"argv": ["(sleep 1; touch late.txt) & sleep 30"], "shell": True, "timeout": 0.3},
        )
        assert out.output["timedOut"] is True
        assert out.output["exitCode"] is None
        assert time.monotonic() - started < 5
        time.sleep(1.5)
        assert not (ws / "late.txt").exists()

    def test_output_keeps_head_and_tail(self, ws: Path, sandbox: bool) -> None:
        """Output over the limit keeps its beginning and end and says it was truncated."""
        script = "print('START'); print('x' * 500_000); print('END')"
        out = runtime_for(ws, sandbox=sandbox).dispatch(
            "run_command", {"argv": [sys.executable, "-c", script]}
        )
        stdout = out.output["stdout"]
        assert out.output["truncated"] is True
        assert stdout.startswith("START\n")
        assert stdout.endswith("END\n")
        assert "bytes left out" in stdout
        assert len(stdout) < 70_000

    def test_environment_is_built_from_an_allow_list(
        self, ws: Path, sandbox: bool, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Only allow-listed variables reach the command, whatever the others are called
        (secret-looking in any case, a socket, an innocuous name); a redacted one does not
        even when allow-listed."""
        passed = {"LANG": "C.UTF-8", "LC_TIME": "C", "TZ": "UTC", "HOME": "/home/someone"}
        kept_out = {
            "github_token": "gh-1",
            "My_Api_Key": "k-1",
            "OPENAI_API_KEY": "sk-1",
            "SSH_AUTH_SOCK": "/tmp/ssh-x/agent.1",
            "FOO": "innocuous",
            "LC_REDACTED": "secret",
        }
        for name, value in {**passed, **kept_out}.items():
            monkeypatch.setenv(name, value)
        out = runtime_for(ws, sandbox=sandbox, redacted=("LC_REDACTED",)).dispatch(
            "run_command", {"argv": ["env", "-0"]}
        )
        seen = dict(entry.split("=", 1) for entry in out.output["stdout"].split("\0") if entry)
        # In the sandbox, a HOME under a user's home is a private directory instead.
        expected = {**passed, "HOME": SANDBOX_HOME} if sandbox else passed
        assert {name: seen.get(name) for name in passed} == expected
        assert not set(seen) & set(kept_out)
        assert set(seen) <= PASSED_NAMES | {"TMPDIR", "PWD", "LC_TIME", "LANG"}

    def test_a_command_that_closes_its_output_still_times_out(
        self, ws: Path, sandbox: bool
    ) -> None:
        """A command that closes stdout and stderr and runs past its timeout is reported as
        timed out, and killed."""
        started = time.monotonic()
        out = runtime_for(ws, sandbox=sandbox).dispatch(
            "run_command",
            {"argv": ["exec >&- 2>&-; sleep 30"], "shell": True, "timeout": 0.5},
        )
        assert out.output["timedOut"] is True
        assert out.output["exitCode"] is None
        assert time.monotonic() - started < 5


class TestRefusals:
    def test_cwd_outside_is_refused(self, ws: Path) -> None:
        """A working directory outside the workspace is refused before anything runs."""
        with pytest.raises(ToolHandlerError, match="outside the workspace"):
            runtime_for(ws, sandbox=False).dispatch("run_command", {"argv": ["ls"], "cwd": ".."})

    def test_shell_takes_one_string(self, ws: Path) -> None:
        """shell: true with several argv items is refused with the rule."""
        with pytest.raises(ToolHandlerError, match="exactly one string"):
            runtime_for(ws, sandbox=False).dispatch(
                "run_command", {"argv": ["echo", "a"], "shell": True}
            )

    def test_missing_program(self, ws: Path) -> None:
        """A program that does not exist is a clear failure."""
        with pytest.raises(ToolHandlerError, match="Cannot run 'no-such-program-x'"):
            runtime_for(ws, sandbox=False).dispatch("run_command", {"argv": ["no-such-program-x"]})

    def test_empty_argv_is_invalid(self, ws: Path) -> None:
        """An empty argv fails validation."""
        with pytest.raises(InvalidInputError):
            runtime_for(ws, sandbox=False).dispatch("run_command", {"argv": []})

    def test_description_says_when_there_is_no_sandbox(self, ws: Path) -> None:
        """Without a sandbox the description says so, and the tool is marked open-world."""
        tool = runtime_for(ws, sandbox=False).registry.get("run_command")
        assert tool is not None
        assert "No sandbox is available here" in tool.definition.description
        assert tool.definition.annotations is not None
        assert tool.definition.annotations.open_world_hint is True


@pytest.mark.skipif(bubblewrap() is None, reason=NO_BWRAP)
class TestSandbox:
    def test_workspace_writable_rest_read_only(self, ws: Path, tmp_path: Path) -> None:
        """Inside the sandbox the workspace takes writes; /etc and the host's /tmp do not;
        the command's TMPDIR is a private scratch directory that it can write."""
        in_tmp = tmp_path / "outside.txt"
        in_etc = Path("/etc/mini-harness-sandbox-probe")
        out = runtime_for(ws, sandbox=True).dispatch(
            "run_command",
            {
                "argv": [f'touch "$TMPDIR/scratch" made.txt; touch {in_tmp} {in_etc}'],
                "shell": True,
            },
        )
        assert (ws / "made.txt").exists()
        assert "scratch" not in out.output["stderr"]
        assert not in_tmp.exists()
        assert not in_etc.exists()
        assert "Read-only file system" in out.output["stderr"]

    def test_no_network(self, ws: Path) -> None:
        """A server on the host's loopback cannot be reached from inside the sandbox."""
        with socket.socket() as server:
            server.bind(("127.0.0.1", 0))
            server.listen()
            port = server.getsockname()[1]
            script = f"import socket; socket.create_connection(('127.0.0.1', {port}), timeout=2)"
            out = runtime_for(ws, sandbox=True).dispatch(
                "run_command", {"argv": [sys.executable, "-c", script]}
            )
        assert out.output["exitCode"] != 0
        assert "Error" in out.output["stderr"]

    def test_description_says_sandboxed(self, ws: Path) -> None:
        """With bubblewrap the description says what the sandbox allows."""
        tool = runtime_for(ws, sandbox=True).registry.get("run_command")
        assert tool is not None
        assert "bubblewrap sandbox" in tool.definition.description
        assert "no capabilities" in tool.definition.description


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class TestEffects:
    def test_files_a_command_changes_are_recorded(self, ws: Path) -> None:
        """Files a command adds, changes and deletes are recorded with their hashes."""
        (ws / "gone.txt").write_text("bye\n")
        sink = MemorySink()
        registry = ToolRegistry()
        register_coding_tools(registry, ws, sandbox=False)
        script = "echo new > made.txt; echo more >> hello.txt; rm gone.txt; touch sub/x"
        ToolRuntime(registry, sink).dispatch("run_command", {"argv": [script], "shell": True})
        succeeded = sink.events[-1]
        assert isinstance(succeeded, ToolSucceeded)
        assert succeeded.effects is not None
        assert list(succeeded.effects) == [
            FileEffect("gone.txt", sha(b"bye\n"), None),
            FileEffect("hello.txt", sha(b"hello\n"), sha(b"hello\nmore\n")),
            FileEffect("made.txt", None, sha(b"new\n")),
            FileEffect("sub/x", None, sha(b"")),
        ]

    @pytest.mark.parametrize("sandbox", MODES)
    def test_a_repository_a_command_makes_below_the_root_is_an_effect(
        self, ws: Path, sandbox: bool
    ) -> None:
        """A `.git` a command creates below the root (its config and hooks, not its
        objects) is recorded among the call's effects."""
        sink = MemorySink()
        registry = ToolRegistry()
        register_coding_tools(registry, ws, sandbox=sandbox)
        script = (
            "mkdir -p sub/.git/hooks sub/.git/objects/ab; echo '[core]' > sub/.git/config; "
            "echo x > sub/.git/hooks/post-checkout; echo blob > sub/.git/objects/ab/cd"
        )
        ToolRuntime(registry, sink).dispatch("run_command", {"argv": [script], "shell": True})
        succeeded = sink.events[-1]
        assert isinstance(succeeded, ToolSucceeded)
        assert succeeded.effects is not None
        assert list(succeeded.effects) == [
            FileEffect("sub/.git/config", None, sha(b"[core]\n")),
            FileEffect("sub/.git/hooks/post-checkout", None, sha(b"x\n")),
        ]

    def test_a_command_that_changes_nothing_records_no_effects(self, ws: Path) -> None:
        """A read-only command's ToolSucceeded has no effects field."""
        sink = MemorySink()
        registry = ToolRegistry()
        register_coding_tools(registry, ws, sandbox=False)
        ToolRuntime(registry, sink).dispatch("run_command", {"argv": ["cat", "hello.txt"]})
        succeeded = sink.events[-1]
        assert isinstance(succeeded, ToolSucceeded)
        assert succeeded.effects is None

    def test_a_workspace_over_the_limit_is_not_tracked(self, ws: Path) -> None:
        """Over the file limit no effects are recorded, and the output says so."""
        from mini_harness.tools.run_command import RunCommand
        from mini_harness.tools.workspace import Workspace

        for i in range(5):
            (ws / f"f{i}.txt").write_text("x")
        handler = RunCommand(Workspace(ws), None, max_tracked_files=3)
        out = handler({"argv": ["touch", "new.txt"]})
        assert isinstance(out, dict)
        assert out["effectsTracked"] is False
