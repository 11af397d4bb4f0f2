"""`run_command`: a program run in the workspace, sandboxed by bubblewrap where it is present.

The command gets an argv (a shell only when `shell` is asked for), a working directory
inside the workspace, an environment built from an allow-list, no stdin, limits on
processes and memory, a timeout that ends everything it started, and bounded output (head
and tail kept). What the sandbox confines is said in `sandbox`; here it gets the workspace
writable and the agent's controls inside it read-only (`controls`).
"""

from __future__ import annotations

import contextlib
import os
import stat
from typing import Any

import attrs

from mini_harness.errors import WorkspaceError
from mini_harness.events import JsonObject
from mini_harness.runtime.results import WithEffects
from mini_harness.tools.definitions import RUN_DEFAULT_TIMEOUT, SKIPPED_DIRS
from mini_harness.tools.file_effects import MAX_TRACKED_FILES, changes, snapshot
from mini_harness.tools.sandbox import (
    Bubblewrap,
    ResourceLimits,
    allowed_environment,
    placeholders,
    run_sandboxed,
)
from mini_harness.tools.workspace import (
    PROTECTED_NAMES,
    Identity,
    Workspace,
    identity,
    quote_path,
)

POLICY_DIR = ".mini-harness"


@attrs.frozen
class Controls:
    """What a sandboxed command sees read-only: `existing` paths, and `missing` ones that
    an empty read-only directory stands in for while it runs."""

    existing: tuple[str, ...]
    missing: tuple[str, ...]


def controls(workspace: Workspace) -> Controls:
    """The agent's controls in `workspace` (see Workspace.protects): every `.git` and
    `.mini-harness` (the workspace root's, and those below it outside the directories the
    file tools skip), and the protected files with their `.torn-*` sidecars, and every
    other name in the workspace of a file protected by identity (a hard link to the
    transcript: inside the sandbox no new one can be made to a file bound read-only).

    At the root they must be real entries: a link can be replaced by the command (its
    directory is writable), so a symlinked control is refused. A missing `.mini-harness`
    gets a stand-in, so that no command can create a policy that a later run would obey; a
    missing `.git` does not (a command may `git init`; the git tools never run what a
    repository configures). A protected file that is no longer at its path inside the
    workspace (a directory on it renamed, another file put there) is refused: its new
    name cannot be known without a search, and its writer has stopped.
    """
    root = str(workspace.root)
    existing: list[str] = []
    missing: list[str] = []
    for name in PROTECTED_NAMES:
        path = os.path.join(root, name)
        try:
            mode = os.lstat(path).st_mode
        except FileNotFoundError:
            if name == POLICY_DIR:
                missing.append(path)
            continue
        if stat.S_ISLNK(mode):
            raise WorkspaceError(
                name,
                f"{quote_path(name)} is a symlink: a command could replace it, so commands "
                "cannot run in this workspace; make it a real directory",
            )
        existing.append(path)
    existing += _nested_controls(root)
    for protected in workspace.protected:
        directory, base = os.path.split(protected)
        if not workspace.contains(directory):
            continue  # outside the workspace everything is read-only anyway
        with contextlib.suppress(FileNotFoundError), os.scandir(directory) as entries:
            existing += sorted(
                entry.path
                for entry in entries
                if entry.name == base or entry.name.startswith(f"{base}.torn-")
            )
    for path, file in workspace.pinned.items():
        existing += _names_of(workspace, path, file)
    return Controls(tuple(dict.fromkeys(existing)), tuple(missing))


def _names_of(workspace: Workspace, path: str, file: Identity) -> list[str]:
    """The names in `workspace` of the protected file `file`, opened at `path`."""
    try:
        info: os.stat_result | None = os.lstat(path)
    except OSError:
        info = None
    if info is not None and identity(info) == file:
        if info.st_nlink == 1:  # its only name, bound by the caller when it is inside
            return []
    elif workspace.contains(path):
        shown = quote_path(workspace.relative(path))
        raise WorkspaceError(
            shown,
            f"The open transcript {shown} is no longer at its path (a directory on it was "
            "renamed, or another file put in its place); commands cannot run",
        )
    return _hard_links(str(workspace.root), file)


def _hard_links(root: str, file: Identity) -> list[str]:
    """Every name below `root` of the file `file`, found without following a link. The
    inode number a directory listing gives is compared first; only a match is stat'ed."""
    device, inode = file
    found: list[str] = []
    pending = [root]
    while pending:
        with contextlib.suppress(OSError), os.scandir(pending.pop()) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    pending.append(entry.path)
                elif entry.inode() == inode:
                    with contextlib.suppress(OSError):
                        if entry.stat(follow_symlinks=False).st_dev == device:
                            found.append(entry.path)
    return sorted(found)


def _nested_controls(root: str) -> list[str]:
    found: list[str] = []
    for directory, dirnames, filenames in os.walk(root):
        for name in [*dirnames, *filenames]:
            if name in PROTECTED_NAMES and directory != root:
                real = os.path.realpath(os.path.join(directory, name))
                if real.startswith(root + os.sep):
                    found.append(real)
        dirnames[:] = sorted(d for d in dirnames if d not in SKIPPED_DIRS)
    return found


@attrs.frozen
class RunCommand:
    """The run_command handler, bound to one workspace."""

    workspace: Workspace
    sandbox: Bubblewrap | None  # None: commands run unsandboxed
    redacted_names: tuple[str, ...] = ()
    max_tracked_files: int = MAX_TRACKED_FILES
    limits: ResourceLimits = attrs.field(factory=ResourceLimits.default)

    def __call__(self, tool_input: dict[str, Any]) -> JsonObject | WithEffects:
        argv: list[str] = list(tool_input["argv"])
        if tool_input.get("shell", False):
            if len(argv) != 1:
                raise WorkspaceError(
                    ".", "With shell: true, argv must hold exactly one string: the shell command"
                )
            argv = ["/bin/sh", "-c", argv[0]]
        if any("\0" in arg for arg in argv):
            raise WorkspaceError(".", "argv holds a NUL byte")
        cwd = self.workspace.locate_dir(tool_input.get("cwd", ".")).real
        timeout = float(tool_input.get("timeout", RUN_DEFAULT_TIMEOUT))
        env = allowed_environment(os.environ, self.redacted_names)
        root = str(self.workspace.root)
        guarded = controls(self.workspace) if self.sandbox is not None else Controls((), ())
        before = snapshot(root, self.max_tracked_files)
        try:
            with placeholders(guarded.missing) as stand_ins:
                finished = run_sandboxed(
                    self.sandbox,
                    argv,
                    workspace=root,
                    cwd=cwd,
                    env=env,
                    timeout=timeout,
                    writable=True,
                    read_only=(*guarded.existing, *stand_ins),
                    limits=self.limits,
                )
        except OSError as exc:
            message = f"Cannot run {argv[0]!r}: {exc.strerror or exc}"
            raise WorkspaceError(".", message) from None
        output: JsonObject = {
            "exitCode": finished.exit_code,
            "stdout": finished.stdout.text(),
            "stderr": finished.stderr.text(),
            "truncated": finished.stdout.truncated or finished.stderr.truncated,
            "timedOut": finished.timed_out,
            "sandboxed": self.sandbox is not None,
            "effectsTracked": before is not None,
        }
        effects = changes(root, before) if before is not None else ()
        return WithEffects(output, effects) if effects else output
