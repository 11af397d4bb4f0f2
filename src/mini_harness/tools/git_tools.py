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
from mini_harness.tools.process import DEFAULT_MAX_OUTPUT, HeadTail
from mini_harness.tools.sandbox import Bubblewrap, run_sandboxed
from mini_harness.tools.workspace import Workspace, decodable_path

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
        out = self.run(
            ["status", "--porcelain=v2", "-z", "--branch", "--ignore-submodules=all", *spec]
        )
        # A cut listing: the records before the cut are whole; what follows it cannot be
        # told apart from a rename's second path, so it is left out.
        listing = bytes(out.head) if out.truncated else bytes(out.head + out.tail)
        return {**status_listing(listing), "truncated": out.truncated}

    def diff(self, tool_input: dict[str, Any]) -> JsonObject:
        spec = self.pathspec(tool_input.get("path"))
        args = ["diff", "--no-ext-diff", "--no-textconv", "--no-color", "--ignore-submodules=all"]
        if tool_input.get("staged", False):
            args.append("--cached")
        out = self.run([*args, *spec])
        text = out.text()
        try:
            bytes(out.head + out.tail).decode("utf-8")
        except UnicodeDecodeError:
            invalid = True  # (a cut inside a character counts too: the text shows it so)
        else:
            invalid = False
        return {"diff": text, "empty": not text, "truncated": out.truncated, "invalidUtf8": invalid}

    def run(self, args: list[str]) -> HeadTail:
        """git's bounded stdout for `args`; GitError if it fails."""
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
        return finished.stdout

    def pathspec(self, path: str | None) -> list[str]:
        """`-- :(literal)PATH` for a path checked against the workspace. It may be gone (a
        deleted file, or a file in a deleted directory) as long as it lies inside."""
        if path is None or path in ("", "."):
            return []
        try:
            return ["--", f":(literal){self.workspace.locate(path).relative}"]
        except WorkspaceError:
            joined = os.path.join(self.workspace.root, path)
            if "\0" in path or os.path.isabs(path) or os.path.lexists(joined):
                raise
            real = os.path.realpath(joined)
            if not self.workspace.contains(real) or not decodable_path(path):
                raise
        return ["--", f":(literal){self.workspace.relative(real)}"]


# Spaces before the path in each kind of porcelain v2 record (`git help status`).
_PATH_AFTER: Final = {b"1": 8, b"2": 9, b"u": 10, b"?": 1, b"!": 1}


def status_listing(listing: bytes) -> JsonObject:
    """`branch`, `entries` and `clean` from `git status --porcelain=v2 -z --branch` output
    (whole or cut: a record cut short is left out). Each entry has git's two-letter code
    (' M', 'R ', '??', ...) and `path`; renames and copies also `origPath`. Names that are
    not UTF-8 are left out and counted in `skippedUndecodable`, as the file tools do."""
    fields = iter(listing.split(b"\0")[:-1])  # after the last NUL: nothing, or a cut record
    branch: str | None = None
    entries: list[JsonObject] = []
    undecodable = 0
    for field in fields:
        if field.startswith(b"# branch.head "):
            head = field.removeprefix(b"# branch.head ").decode("utf-8", "replace")
            branch = None if head == "(detached)" else head
            continue
        kind = field[:1]
        if kind not in _PATH_AFTER:
            continue
        parts = field.split(b" ", _PATH_AFTER[kind])
        code = parts[1].replace(b".", b" ") if kind in (b"1", b"2", b"u") else kind * 2
        names = [parts[-1]]
        if kind == b"2":
            original = next(fields, None)
            if original is None:
                break
            names.append(original)
        try:
            decoded = [name.decode("utf-8") for name in names]
        except UnicodeDecodeError:
            undecodable += 1
            continue
        entry: JsonObject = {"status": code.decode("ascii", "replace"), "path": decoded[0]}
        if len(decoded) > 1:
            entry["origPath"] = decoded[1]
        entries.append(entry)
    listing_output: JsonObject = {"branch": branch, "entries": entries, "clean": not entries}
    if undecodable:
        listing_output["skippedUndecodable"] = undecodable
    return listing_output
