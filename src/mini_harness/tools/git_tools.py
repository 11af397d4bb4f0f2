"""`git_status` and `git_diff`: read-only views of the workspace's repository.

git never reads the repository's configuration (see git_dir): no setting of the
repository, however large or oddly named, can make it run a command. It runs with an
environment of its own (no system or global configuration, nothing from the caller but
PATH), never looks above the workspace root for a repository, never takes optional locks
(nothing is written), and where bubblewrap runs, inside the sandbox with the workspace
read-only, no network and no host sockets.
"""

from __future__ import annotations

import os
from typing import Any, Final

import attrs

from mini_harness.errors import GitError, WorkspaceError
from mini_harness.events import JsonObject
from mini_harness.tools.git_dir import private_git_dir
from mini_harness.tools.process import DEFAULT_MAX_OUTPUT
from mini_harness.tools.sandbox import Bubblewrap, run_sandboxed
from mini_harness.tools.workspace import Workspace, quote_path

GIT_TIMEOUT: Final = 20.0


def git_environment(workspace: Workspace) -> dict[str, str]:
    """The environment git runs with (GIT_DIR aside): nothing from the caller but PATH."""
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "LC_ALL": "C.UTF-8",
        "HOME": "/nonexistent",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": "/dev/null",
        "GIT_ATTR_NOSYSTEM": "1",
        "GIT_CEILING_DIRECTORIES": str(workspace.root.parent),
        "GIT_WORK_TREE": str(workspace.root),
        "GIT_OPTIONAL_LOCKS": "0",
        "GIT_TERMINAL_PROMPT": "0",
        "GIT_PAGER": "cat",
        "PAGER": "cat",
        "GIT_EDITOR": "true",
        "GIT_NO_REPLACE_OBJECTS": "1",
    }


@attrs.frozen
class Git:
    """The git_status and git_diff handlers (the methods `status` and `diff`), bound to one
    workspace: read-only git that runs nothing the repository configures."""

    workspace: Workspace
    sandbox: Bubblewrap | None = None
    timeout: float = GIT_TIMEOUT
    max_output: int = DEFAULT_MAX_OUTPUT

    def status(self, tool_input: dict[str, Any]) -> JsonObject:
        spec = self.pathspec(tool_input.get("path"))
        text, truncated = self.run(
            ["status", "--porcelain=v1", "--branch", "--ignore-submodules=all", *spec]
        )
        lines = text.splitlines()
        branch = lines[0][3:] if lines and lines[0].startswith("## ") else None
        entries = [
            {"status": line[:2], "path": line[3:]}
            for line in lines[1 if branch is not None else 0 :]
            if len(line) > 3 and not line.startswith("[...")
        ]
        return {"branch": branch, "entries": entries, "clean": not entries, "truncated": truncated}

    def diff(self, tool_input: dict[str, Any]) -> JsonObject:
        spec = self.pathspec(tool_input.get("path"))
        args = ["diff", "--no-ext-diff", "--no-textconv", "--no-color", "--ignore-submodules=all"]
        if tool_input.get("staged", False):
            args.append("--cached")
        text, truncated = self.run([*args, *spec])
        return {"diff": text, "empty": not text, "truncated": truncated}

    def run(self, args: list[str]) -> tuple[str, bool]:
        """git's bounded stdout for `args` and whether it was truncated; GitError if it fails."""
        env = git_environment(self.workspace)
        root = str(self.workspace.root)
        command = "git " + args[0]
        with private_git_dir(self.workspace, env, self.timeout) as gitdir:
            env["GIT_DIR"] = gitdir
            finished = run_sandboxed(
                self.sandbox,
                ["git", "--no-pager", *args],
                workspace=root,
                cwd=root,
                env=env,
                timeout=self.timeout,
                writable=False,
                read_only=(os.path.dirname(gitdir),),
                max_output=self.max_output,
            )
        if finished.timed_out:
            raise GitError(".", f"{command} did not finish within {self.timeout:g} s")
        if finished.exit_code != 0:
            message = finished.stderr.text().strip()
            raise GitError(".", f"{command} failed: {message or f'exit {finished.exit_code}'}")
        return finished.stdout.text(), finished.stdout.truncated

    def pathspec(self, path: str | None) -> list[str]:
        """`-- :(literal)PATH` for a path checked against the workspace (it may be deleted)."""
        if path is None or path in ("", "."):
            return []
        if "\0" in path:
            self.workspace.locate(path)  # raises the workspace's own message
        parent = os.path.dirname(path.rstrip("/")) or "."
        if os.path.lexists(os.path.join(self.workspace.root, path)):
            found = self.workspace.locate(path)
            return ["--", f":(literal){found.relative}"]
        # A deleted file still has a diff: check the directory it was in instead.
        self.workspace.locate_dir(parent)
        real = os.path.normpath(os.path.join(self.workspace.root, path))
        if not self.workspace.contains(real):
            raise WorkspaceError(path, f"Path {quote_path(path)} leads outside the workspace")
        return ["--", f":(literal){self.workspace.relative(real)}"]
