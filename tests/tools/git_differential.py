"""Helpers of the differential tests: apply a patch with apply_patch and with `git apply`
to copies of one tree, and compare the trees they leave (bytes, executable bits and
directories), a second application of it, and its undo."""

from __future__ import annotations

import os
import shutil
import subprocess
import tarfile
from pathlib import Path

import attrs

from mini_harness import ToolRuntime
from mini_harness.errors import ToolCallError, WorkspaceError
from mini_harness.events import FileEffect
from mini_harness.runtime import ToolRegistry
from mini_harness.tools import Workspace
from mini_harness.tools.apply_patch import ApplyPatch
from mini_harness.tools.definitions import APPLY_PATCH
from mini_harness.tools.patch_undo import patch_reversal

Tree = dict[str, "bytes | str"]  # path -> bytes with an exec mark, or "dir"

GIT_ENV = {
    "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
    "HOME": "/nonexistent",
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": "/dev/null",
    "GIT_AUTHOR_NAME": "t",
    "GIT_AUTHOR_EMAIL": "t@example.com",
    "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.com",
    "LC_ALL": "C",
}


def git(cwd: Path, *args: str, check: bool = True, stdin: bytes | None = None) -> bytes:
    done = subprocess.run(
        ["git", "-c", "core.autocrlf=false", "-c", "core.quotePath=true", *args],
        cwd=cwd,
        env=GIT_ENV,
        input=stdin,
        capture_output=True,
        check=False,
    )
    if check and done.returncode:
        raise AssertionError(f"git {args}: {done.stderr.decode(errors='replace')}")
    return done.stdout if done.returncode == 0 else b"\0failed\0" + done.stderr


def tree_of(root: Path) -> Tree:
    """Every file (bytes, and `+x` when executable) and directory below root, .git aside."""
    out: Tree = {}
    for directory, dirnames, filenames in os.walk(root):
        dirnames[:] = [name for name in dirnames if name != ".git"]
        base = Path(directory)
        for name in dirnames:
            out[str((base / name).relative_to(root))] = "dir"
        for name in filenames:
            path = base / name
            mark = b"+x" if path.lstat().st_mode & 0o100 else b""
            out[str(path.relative_to(root))] = path.read_bytes() + mark
    return out


def extract(repo: Path, commit: str, into: Path, paths: list[str] | None = None) -> None:
    """The tree of `commit` (only those of `paths` it has, when given) written into the
    new directory `into`."""
    into.mkdir(parents=True)
    if paths is not None:
        listed = git(repo, "ls-tree", "-r", "-z", "--name-only", commit, "--", *paths)
        paths = [name.decode("utf-8", "surrogateescape") for name in listed.split(b"\0") if name]
        if not paths:
            return
    archive = into.parent / f"{into.name}.tar"
    archive.write_bytes(git(repo, "archive", "--format=tar", commit, *(paths or ())))
    with tarfile.open(archive) as tar:
        tar.extractall(into, filter="tar")
    archive.unlink()


def tool_runtime(root: Path) -> ToolRuntime:
    registry = ToolRegistry()
    registry.register(APPLY_PATCH, ApplyPatch(Workspace(root), sync=False))
    return ToolRuntime(registry)


@attrs.frozen
class Outcome:
    """What happened to a copy of the tree: its tree afterwards, or the refusal."""

    tree: Tree | None
    refusal: str = ""

    @property
    def refused(self) -> bool:
        return self.tree is None


def ours(root: Path, patch: str) -> tuple[Outcome, list[FileEffect]]:
    try:
        result = tool_runtime(root).dispatch("apply_patch", {"patch": patch})
    except ToolCallError as exc:
        return Outcome(None, exc.message), []
    effects = list(result.effects or ())
    return Outcome(tree_of(root)), effects


def theirs(root: Path, patch: bytes) -> Outcome:
    out = git(root, "apply", "--whitespace=nowarn", "-", check=False, stdin=patch)
    if out.startswith(b"\0failed\0"):
        return Outcome(None, out.decode(errors="replace"))
    return Outcome(tree_of(root))


def undo(root: Path, patch: str, effects: list[FileEffect]) -> Outcome:
    """The tree after undoing the applied `patch` as the undo command does."""
    try:
        reversal = patch_reversal(Workspace(root), patch, effects)
    except WorkspaceError as exc:
        return Outcome(None, exc.message)
    return ours(root, reversal)[0]


def copy_tree(source: Path, into: Path) -> Path:
    shutil.copytree(source, into, symlinks=True)
    return into
