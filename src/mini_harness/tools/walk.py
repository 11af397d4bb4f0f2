"""Walking a workspace directory: sorted, confined, skipping what a coding agent never wants.

Skipped: the directories in SKIPPED_DIRS (and a `.git` file, as git worktrees have),
whatever the workspace's .gitignore files ignore (the root's and those in subdirectories,
see `globs`), symlinks that resolve outside the workspace or to a directory (never
followed: no loops, no duplicates), and anything that is not a regular file (FIFOs,
sockets, devices). A symlink to a file inside the workspace is listed under its own name.
Names that are not valid UTF-8 are skipped too (a directory's whole contents with it): a
path must survive the trip through JSON to the model and back into read_file.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator

import attrs

from mini_harness.errors import FileRefusedError
from mini_harness.events import JsonObject
from mini_harness.tools.definitions import SKIPPED_DIRS
from mini_harness.tools.globs import IgnoreFile, is_ignored
from mini_harness.tools.workspace import (
    Location,
    Workspace,
    decodable_path,
    open_below,
)

_IGNORE_FILE_MAX_BYTES = 1 << 20


@attrs.frozen
class WalkEntry:
    """A regular file found by the walk."""

    path: str  # workspace-relative, posix; what read_file accepts
    below: str  # relative to the walked directory; what a glob is matched against
    real: str  # the file to open (a symlink already resolved)
    size: int  # -1 when the walk was asked not to stat files


@attrs.define
class WalkSkips:
    """What a walk left out that its caller reports: the directories `max_depth` kept
    closed (workspace-relative, ending in "/") and how many names were not UTF-8."""

    deeper_dirs: list[str] = attrs.Factory(list)
    undecodable: int = 0

    def report(self, output: JsonObject) -> JsonObject:
        """`output` with `skippedUndecodable` added, only when something was skipped.

        Left out otherwise, so the outputs of ordinary workspaces stay as they were
        (transcripts recorded before keep matching on re-run).
        """
        if self.undecodable:
            output["skippedUndecodable"] = self.undecodable
        return output


def _load_ignore(workspace: Workspace, real_dir: str, base: str) -> IgnoreFile | None:
    """The rules of `real_dir`'s .gitignore; none when it is missing or not a plain file.

    Read like any other file: a FIFO planted as .gitignore must not hang the walk, and a
    link to a file outside the workspace must not steer it.
    """
    path = os.path.realpath(os.path.join(real_dir, ".gitignore"))
    if not workspace.contains(path):
        return None
    try:
        raw = workspace.read(path, _IGNORE_FILE_MAX_BYTES)
    except (OSError, FileRefusedError):
        return None
    ignore = IgnoreFile.parse(base, raw.decode("utf-8", errors="replace"))
    return ignore if ignore.rules else None


def _ancestor_ignores(workspace: Workspace, top: Location) -> list[IgnoreFile]:
    """The .gitignore files of the root and every directory down to `top`, outermost first."""
    real_rel = workspace.relative(top.real)
    parts = [] if real_rel == "." else real_rel.split("/")
    files = []
    for depth in range(len(parts) + 1):
        base = "/".join(parts[:depth])
        found = _load_ignore(workspace, os.path.join(workspace.root, *parts[:depth]), base)
        if found is not None:
            files.append(found)
    return files


def open_directory(workspace: Workspace, real: str) -> int:
    """A descriptor on the resolved directory `real` inside the workspace, opened one name
    at a time from the root, each relative to its parent and never through a symlink.

    Raises OSError when a directory on the way is gone or was swapped for a symlink since
    `real` was resolved (ELOOP, ENOTDIR): the walk then lists nothing there.
    """
    fd = workspace.open_root()
    try:
        relative = workspace.relative(real)
        for name in [] if relative == "." else relative.split("/"):
            inner = open_below(fd, name)
            os.close(fd)
            fd = inner
    except BaseException:
        os.close(fd)
        raise
    return fd


@attrs.define
class _Frame:
    """One open directory of the walk: its descriptor, entries and where it sits."""

    fd: int
    ignores: list[IgnoreFile]
    prefix: str  # as shown: workspace-relative through the caller's spelling of `top`
    real_prefix: str  # workspace-relative, resolved: what .gitignore rules match
    below_prefix: str  # relative to `top`: what a glob matches
    depth: int
    entries: Iterator[os.DirEntry[str]] = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        try:
            with os.scandir(self.fd) as scan:
                self.entries = iter(sorted(scan, key=lambda entry: entry.name))
        except OSError:
            self.entries = iter(())  # unreadable directory: nothing we may list


def walk_files(
    workspace: Workspace,
    top: Location,
    skips: WalkSkips,
    *,
    max_depth: int | None = None,
    sizes: bool = True,
) -> Iterator[WalkEntry]:
    """Regular files below `top` in path order (component by component), depth-first.

    `max_depth` 1 yields only the files directly in `top`; directories that the limit
    keeps closed, and entries skipped for a name that is not UTF-8, go into `skips`. With
    `sizes` false, regular files are not stat'ed (a reader learns the size from fstat).

    Directories are opened by descriptor, each relative to its parent with O_NOFOLLOW, so
    a directory swapped for a symlink between a check and the listing is never entered.
    """
    ignores = _ancestor_ignores(workspace, top)
    # The real relative path keeps .gitignore bases right when `top` is reached via a link.
    top_real = workspace.relative(top.real)
    try:
        top_fd = open_directory(workspace, top.real)
    except OSError:
        return  # gone, or swapped for a symlink since it was checked: nothing to list
    shown = "" if top.relative == "." else top.relative + "/"
    stack = [_Frame(top_fd, ignores, shown, "" if top_real == "." else top_real + "/", "", 1)]
    try:
        while stack:
            frame = stack[-1]
            entry = next(frame.entries, None)
            if entry is None:
                os.close(stack.pop().fd)
                continue
            found = _visit(workspace, frame, entry, skips, max_depth)
            if isinstance(found, _Frame):
                stack.append(found)
            elif found is not None:
                if sizes and found.size < 0:
                    try:
                        size = entry.stat(follow_symlinks=False).st_size
                    except OSError:
                        continue  # vanished while we walked: not there for us
                    found = attrs.evolve(found, size=size)
                yield found
    finally:
        for frame in stack:
            os.close(frame.fd)


def _visit(
    workspace: Workspace,
    frame: _Frame,
    entry: os.DirEntry[str],
    skips: WalkSkips,
    max_depth: int | None,
) -> WalkEntry | _Frame | None:
    """What one directory entry contributes: a file, a directory to enter, or nothing."""
    name = entry.name
    if name == ".git":
        return None  # a directory, or in a git worktree a file pointing at one
    # os.scandir hands undecodable bytes over as lone surrogates (surrogateescape).
    if not name.isascii() and not decodable_path(name):
        skips.undecodable += 1
        return None
    real_rel = frame.real_prefix + name
    real = os.path.join(workspace.root, real_rel)
    shown, below = frame.prefix + name, frame.below_prefix + name
    try:
        if entry.is_symlink():
            target = _through_link(workspace, real)
            if target is None or is_ignored(frame.ignores, real_rel, is_dir=False):
                return None
            return WalkEntry(shown, below, *target)
        if entry.is_dir(follow_symlinks=False):
            if name in SKIPPED_DIRS or is_ignored(frame.ignores, real_rel, is_dir=True):
                return None
            if max_depth is not None and frame.depth >= max_depth:
                skips.deeper_dirs.append(shown + "/")
                return None
            inner = _load_ignore(workspace, real, real_rel)
            try:
                fd = open_below(frame.fd, name)
            except OSError:
                return None  # gone, unreadable, or swapped for a symlink since scandir saw it
            ignores = [*frame.ignores, inner] if inner is not None else frame.ignores
            return _Frame(fd, ignores, shown + "/", real_rel + "/", below + "/", frame.depth + 1)
        if not entry.is_file(follow_symlinks=False):
            return None  # FIFO, socket, device: never listed, never opened
    except OSError:
        return None  # vanished or unreadable while we walked: not there for us
    if is_ignored(frame.ignores, real_rel, is_dir=False):
        return None
    return WalkEntry(shown, below, real, -1)


def _through_link(workspace: Workspace, path: str) -> tuple[str, int] | None:
    """The real path and size of a symlink's target, if it is a regular file inside."""
    real = os.path.realpath(path)
    if not workspace.contains(real):
        return None
    info = os.stat(real)
    if not stat.S_ISREG(info.st_mode):
        return None
    return real, info.st_size
