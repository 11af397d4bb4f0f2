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
from collections.abc import Callable, Iterator

import attrs

from mini_harness.tools.definitions import SKIPPED_DIRS
from mini_harness.tools.globs import IgnoreFile, is_ignored
from mini_harness.tools.workspace import (
    FileRefusedError,
    Location,
    Workspace,
    decodable_path,
    read_regular,
)

_IGNORE_FILE_MAX_BYTES = 1 << 20


@attrs.frozen
class WalkEntry:
    """A regular file found by the walk."""

    path: str  # workspace-relative, posix; what read_file accepts
    below: str  # relative to the walked directory; what a glob is matched against
    real: str  # the file to open (a symlink already resolved)
    size: int  # -1 when the walk was asked not to stat files


def _load_ignore(workspace: Workspace, real_dir: str, base: str) -> IgnoreFile | None:
    """The rules of `real_dir`'s .gitignore; none when it is missing or not a plain file.

    Read like any other file: a FIFO planted as .gitignore must not hang the walk, and a
    link to a file outside the workspace must not steer it.
    """
    path = os.path.realpath(os.path.join(real_dir, ".gitignore"))
    if not workspace.contains(path):
        return None
    try:
        raw = read_regular(path, _IGNORE_FILE_MAX_BYTES, inside=workspace.contains)
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


def _sorted_entries(real_dir: str) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(real_dir) as scan:
            return sorted(scan, key=lambda entry: entry.name)
    except OSError:
        return []  # unreadable directory: nothing we may list


def walk_files(
    workspace: Workspace,
    top: Location,
    *,
    max_depth: int | None = None,
    on_deeper_dir: Callable[[str], None] | None = None,
    on_undecodable: Callable[[], None] | None = None,
    sizes: bool = True,
) -> Iterator[WalkEntry]:
    """Regular files below `top` in path order (component by component), depth-first.

    `max_depth` 1 yields only the files directly in `top`; directories that the limit
    keeps closed are reported to `on_deeper_dir` as workspace-relative paths. Each entry
    skipped for a name that is not UTF-8 is reported to `on_undecodable`. With `sizes`
    false, regular files are not stat'ed (a reader learns the size from fstat).
    """
    ignores = _ancestor_ignores(workspace, top)
    # The real relative path keeps .gitignore bases right when `top` is reached via a link.
    top_real = workspace.relative(top.real)
    top_prefix = "" if top.relative == "." else top.relative + "/"
    real_prefix = "" if top_real == "." else top_real + "/"
    # One frame per open directory: its entries, its .gitignore stack, its prefixes.
    stack = [(iter(_sorted_entries(top.real)), ignores, top_prefix, real_prefix, "", 1)]
    while stack:
        entries, ignores, prefix, real_prefix, below_prefix, depth = stack[-1]
        entry = next(entries, None)
        if entry is None:
            stack.pop()
            continue
        name = entry.name
        if name == ".git":
            continue  # a directory, or in a git worktree a file pointing at one
        # os.scandir hands undecodable bytes over as lone surrogates (surrogateescape).
        if not name.isascii() and not decodable_path(name):
            if on_undecodable is not None:
                on_undecodable()
            continue
        real_rel = real_prefix + name
        try:
            if entry.is_symlink():
                found = _through_link(workspace, entry.path)
                if found is not None and not is_ignored(ignores, real_rel, is_dir=False):
                    real, size = found
                    yield WalkEntry(prefix + name, below_prefix + name, real, size)
                continue
            if entry.is_dir(follow_symlinks=False):
                if name in SKIPPED_DIRS or is_ignored(ignores, real_rel, is_dir=True):
                    continue
                if max_depth is not None and depth >= max_depth:
                    if on_deeper_dir is not None:
                        on_deeper_dir(prefix + name + "/")
                    continue
                inner = _load_ignore(workspace, entry.path, real_rel)
                stack.append(
                    (
                        iter(_sorted_entries(entry.path)),
                        [*ignores, inner] if inner is not None else ignores,
                        prefix + name + "/",
                        real_rel + "/",
                        below_prefix + name + "/",
                        depth + 1,
                    )
                )
                continue
            if not entry.is_file(follow_symlinks=False):
                continue  # FIFO, socket, device: never listed, never opened
            if is_ignored(ignores, real_rel, is_dir=False):
                continue
            size = entry.stat(follow_symlinks=False).st_size if sizes else -1
        except OSError:
            continue  # vanished or unreadable while we walked: not there for us
        yield WalkEntry(prefix + name, below_prefix + name, entry.path, size)


def _through_link(workspace: Workspace, path: str) -> tuple[str, int] | None:
    """The real path and size of a symlink's target, if it is a regular file inside."""
    real = os.path.realpath(path)
    if not workspace.contains(real):
        return None
    info = os.stat(real)
    if not stat.S_ISREG(info.st_mode):
        return None
    return real, info.st_size
