"""The agent's controls in a workspace (see Workspace.protects) as files: the paths a
sandbox binds read-only, the stand-ins for those missing, and the other names a control
file has through hard links.

A hard link is the same file under a second name: writing to it writes the control,
whatever the path says. A control file with more than one name has its other names in
the workspace bound read-only too (run_command) and refused (apply_patch). The open
transcript is also known by its identity (Workspace.pin): found under any name, and a
command cannot run once it is no longer at its path inside the workspace. Files of a git
object store are left out: git never changes one in place, and a local clone shares its
origin's by hard links, so counting them would make every command search the workspace.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterable

import attrs

from mini_harness.errors import WorkspaceError
from mini_harness.tools.definitions import SKIPPED_DIRS
from mini_harness.tools.workspace import (
    PROTECTED_NAMES,
    Identity,
    Workspace,
    identity,
    quote_path,
)


@attrs.frozen
class Controls:
    """What a sandboxed command sees read-only: `existing` paths, and `missing` ones that
    an empty read-only directory stands in for while it runs."""

    existing: tuple[str, ...]
    missing: tuple[str, ...]


def control_paths(workspace: Workspace) -> list[str]:
    """The agent's controls that exist in `workspace`: every `.git` and `.mini-harness`
    (the workspace root's, and those below it outside the directories the file tools
    skip), and the protected files with their `.torn-*` sidecars."""
    root = str(workspace.root)
    found = [
        os.path.join(root, name)
        for name in PROTECTED_NAMES
        if os.path.lexists(os.path.join(root, name))
    ]
    found += _nested_controls(root)
    for protected in workspace.protected:
        directory, base = os.path.split(protected)
        if not workspace.contains(directory):
            continue  # outside the workspace everything is read-only anyway
        with contextlib.suppress(FileNotFoundError), os.scandir(directory) as entries:
            found += sorted(
                entry.path
                for entry in entries
                if entry.name == base or entry.name.startswith(f"{base}.torn-")
            )
    return list(dict.fromkeys(found))


def controls(workspace: Workspace) -> Controls:
    """The controls a sandboxed command gets read-only, with their other names.

    At the root they must be real entries: a link can be replaced by the command (its
    directory is writable), so a symlinked control is refused. A missing `.git` or
    `.mini-harness` gets a stand-in, so that no command can create a repository or a
    policy that a later call would trust.
    """
    root = str(workspace.root)
    missing: list[str] = []
    for name in PROTECTED_NAMES:
        path = os.path.join(root, name)
        try:
            mode = os.lstat(path).st_mode
        except FileNotFoundError:
            missing.append(path)
            continue
        if stat.S_ISLNK(mode):
            raise WorkspaceError(
                name,
                f"{quote_path(name)} is a symlink: a command could replace it, so commands "
                "cannot run in this workspace; make it a real directory",
            )
    existing = control_paths(workspace)
    linked = linked_inodes(existing) | _pinned_with_other_names(workspace)
    if linked:
        existing += other_names(root, linked, existing)
    return Controls(tuple(existing), tuple(missing))


def _pinned_with_other_names(workspace: Workspace) -> frozenset[Identity]:
    """The files protected by identity that may have other names in the workspace. One no
    longer at its path inside the workspace (a directory on it renamed, another file put
    there) is refused: its writer has stopped, and a command must not write it."""
    found: set[Identity] = set()
    for path, file in workspace.pinned.items():
        try:
            info: os.stat_result | None = os.lstat(path)
        except OSError:
            info = None
        if info is not None and identity(info) == file:
            if info.st_nlink > 1:
                found.add(file)
        elif workspace.contains(path):
            shown = quote_path(workspace.relative(path))
            raise WorkspaceError(
                shown,
                f"The open transcript {shown} is no longer at its path (a directory on it was "
                "renamed, or another file put in its place); commands cannot run",
            )
        else:
            found.add(file)  # outside and moved: any name of it inside is searched for
    return frozenset(found)


def linked_inodes(paths: Iterable[str]) -> frozenset[Identity]:
    """The regular files under `paths` (files, or directories walked without following a
    link) that have more than one name; git object stores left out."""
    found: set[Identity] = set()
    for path in paths:
        for info in _regular_files(path):
            if info.st_nlink > 1:
                found.add(identity(info))
    return frozenset(found)


def other_names(root: str, inodes: frozenset[Identity], skip: Iterable[str]) -> list[str]:
    """The files below `root`, outside `skip`, that are one of `inodes` (every directory
    searched, those the file tools skip too)."""
    skipped = set(skip)
    found: list[str] = []
    for directory, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if os.path.join(directory, d) not in skipped)
        for name in sorted(filenames):
            path = os.path.join(directory, name)
            with contextlib.suppress(OSError):
                info = os.lstat(path)
                if path not in skipped and info.st_nlink > 1 and identity(info) in inodes:
                    found.append(path)
    return found


def control_by_another_name(workspace: Workspace, info: os.stat_result) -> str | None:
    """What the file `info` describes is when it is one of the agent's controls under
    another name (said in a refusal), or None."""
    if workspace.protects_file(info):
        return "the open transcript, reached by another name (a hard link, or a directory renamed)"
    if info.st_nlink < 2 or not stat.S_ISREG(info.st_mode):
        return None
    if identity(info) in linked_inodes(control_paths(workspace)):
        return (
            "a hard link to one of the agent's own controls "
            "(.git, .mini-harness, the open transcript)"
        )
    return None


def _regular_files(path: str) -> list[os.stat_result]:
    try:
        info = os.lstat(path)
    except OSError:
        return []
    if stat.S_ISREG(info.st_mode):
        return [info]
    if not stat.S_ISDIR(info.st_mode):
        return []
    found: list[os.stat_result] = []
    for directory, dirnames, filenames in os.walk(path):
        if os.path.basename(directory) == ".git":
            dirnames[:] = [d for d in dirnames if d != "objects"]
        for name in filenames:
            with contextlib.suppress(OSError):
                entry = os.lstat(os.path.join(directory, name))
                if stat.S_ISREG(entry.st_mode):
                    found.append(entry)
    return found


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
