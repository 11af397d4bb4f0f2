"""What a command changed in the workspace: a snapshot of its files before, compared after.

The snapshot holds each regular file's stat data and sha256. Afterwards only files whose
stat data changed (or that appeared) are read again. Directories the file tools skip
(.git, node_modules, .venv, ...) are left out, except a `.git` below the root (less its
objects), and a workspace over the limits is not tracked at all (the snapshot is None):
hashing it on every command would cost too much.
"""

from __future__ import annotations

import hashlib
import os
import stat
from typing import Final, TypeAlias

from mini_harness.runtime.results import FileEffect
from mini_harness.tools.definitions import SKIPPED_DIRS

MAX_TRACKED_FILES: Final = 10_000
MAX_TRACKED_BYTES: Final = 64 << 20

_StatKey: TypeAlias = tuple[int, int, int, int]  # inode, size, mtime ns, ctime ns
Snapshot: TypeAlias = dict[str, tuple[_StatKey, str | None]]


def _entered(directory: str, dirnames: list[str], root: str) -> list[str]:
    """The subdirectories a snapshot walks into: not those the file tools skip, except a
    `.git` below the root (a repository a command made there is an effect; the root's is
    read-only in the sandbox), whose object store is left out."""
    if os.path.basename(directory) == ".git" and directory != root:
        return sorted(d for d in dirnames if d != "objects")
    return sorted(
        d for d in dirnames if d not in SKIPPED_DIRS or (d == ".git" and directory != root)
    )


def _files(root: str) -> dict[str, os.stat_result]:
    found: dict[str, os.stat_result] = {}
    for directory, dirnames, filenames in os.walk(root):
        dirnames[:] = _entered(directory, dirnames, root)
        for name in filenames:
            path = os.path.join(directory, name)
            try:
                info = os.lstat(path)
            except OSError:
                continue
            if stat.S_ISREG(info.st_mode):
                found[os.path.relpath(path, root).replace(os.sep, "/")] = info
    return found


def _key(info: os.stat_result) -> _StatKey:
    return (info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)


def _sha256(path: str) -> str | None:
    try:
        with open(path, "rb") as handle:
            return hashlib.file_digest(handle, "sha256").hexdigest()
    except OSError:  # unreadable: treated as absent
        return None


def snapshot(root: str, max_files: int = MAX_TRACKED_FILES) -> Snapshot | None:
    """Every tracked file's stat data and hash, or None when the workspace is too big."""
    files = _files(root)
    if len(files) > max_files or sum(i.st_size for i in files.values()) > MAX_TRACKED_BYTES:
        return None
    return {
        rel: (_key(info), _sha256(os.path.join(root, rel))) for rel, info in sorted(files.items())
    }


def changes(root: str, before: Snapshot) -> tuple[FileEffect, ...]:
    """The files added, changed or deleted since `before`, in path order."""
    after = _files(root)
    effects: list[FileEffect] = []
    for rel in sorted(set(before) | set(after)):
        old = before.get(rel)
        info = after.get(rel)
        if info is not None and old is not None and _key(info) == old[0]:
            continue
        old_hash = old[1] if old is not None else None
        new_hash = _sha256(os.path.join(root, rel)) if info is not None else None
        if old_hash != new_hash:
            effects.append(FileEffect(rel, old_hash, new_hash))
    return tuple(effects)
