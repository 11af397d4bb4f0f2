"""`git_status` and `git_diff`: read-only views of the workspace's repository.

A repository's own configuration is untrusted input: it can name a pager, an external diff,
an fsmonitor hook, textconv and filter commands, hooks. git runs here with a scrubbed
environment (no system or global configuration, no GIT_* variables from the caller) and
`-c` overrides that switch each of those off, including every filter driver the
repository's configuration names. git never looks above the workspace root for a
repository (GIT_CEILING_DIRECTORIES), and never takes optional locks (nothing is written).
"""

from __future__ import annotations

import os
from typing import Any, Final

import attrs

from mini_harness.errors import WorkspaceError
from mini_harness.events import JsonObject
from mini_harness.tools.process import DEFAULT_MAX_OUTPUT, run_bounded
from mini_harness.tools.workspace import Workspace, quote_path

GIT_TIMEOUT: Final = 20.0
_SAFE_CONFIG: Final = (
    "core.pager=cat",
    "core.fsmonitor=false",
    "core.hooksPath=/dev/null",
    "core.untrackedCache=false",
    "core.attributesFile=/dev/null",
    "core.askPass=",
    "credential.helper=",
    "protocol.allow=never",
    "diff.external=",
    "color.ui=false",
    "status.submoduleSummary=false",
    "diff.ignoreSubmodules=all",
    "submodule.recurse=false",
)


class GitError(WorkspaceError):
    """git could not answer (not a repository, a bad path, a timeout)."""


def git_environment(workspace: Workspace) -> dict[str, str]:
    """The whole environment git runs with: nothing from the caller but PATH and locale."""
    return {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "LC_ALL": "C.UTF-8",
        "HOME": "/nonexistent",
        "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_CONFIG_GLOBAL": "/dev/null",
        "GIT_CEILING_DIRECTORIES": str(workspace.root.parent),
        # The work tree is the workspace, whatever core.worktree says (it could name /etc).
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
    workspace: read-only git with every code-running setting off."""

    workspace: Workspace
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
        base = ["git", "--no-pager"]
        for setting in _SAFE_CONFIG:
            base += ["-c", setting]
        base += self._driver_overrides(env, base)
        finished = run_bounded(
            [*base, *args],
            cwd=str(self.workspace.root),
            env=env,
            timeout=self.timeout,
            max_output=self.max_output,
        )
        command = "git " + args[0]
        if finished.timed_out:
            raise GitError(".", f"{command} did not finish within {self.timeout:g} s")
        if finished.exit_code != 0:
            message = finished.stderr.text().strip()
            if "not a git repository" in message:
                raise GitError(
                    ".",
                    "The workspace is not a git repository (git looks in the workspace root "
                    "only, never above it)",
                )
            raise GitError(".", f"{command} failed: {message or f'exit {finished.exit_code}'}")
        return finished.stdout.text(), finished.stdout.truncated

    def _driver_overrides(self, env: dict[str, str], base: list[str]) -> list[str]:
        """`-c` settings that empty every filter driver the repository configures.

        Reading configuration runs nothing; a filter with an empty command is skipped.
        """
        listed = run_bounded(
            [*base, "config", "--null", "--get-regexp", r"^filter\."],
            cwd=str(self.workspace.root),
            env=env,
            timeout=self.timeout,
        )
        drivers: set[str] = set()
        for entry in listed.stdout.text().split("\0"):
            key = entry.split("\n", 1)[0]
            if key.count(".") >= 2:
                drivers.add(key[len("filter.") : key.rindex(".")])
        overrides: list[str] = []
        for driver in sorted(drivers):
            for part in ("clean", "smudge", "process"):
                overrides += ["-c", f"filter.{driver}.{part}="]
            overrides += ["-c", f"filter.{driver}.required=false"]
        return overrides

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
