"""The workspace: one root directory the file tools read below, and nothing outside it.

Every path a model sends is checked here before anything is opened: it must be relative,
must not climb out with `..`, must not reach outside through a symlink, must not contain
a NUL byte, and a file must be a regular file (a FIFO would block a reader forever, a
device file may do anything when opened). Paths are taken literally: no `~` expansion, no
URL decoding, so `%2e%2e` is a file name, not `..`.
"""

from __future__ import annotations

import errno
import json
import os
import posixpath
import stat
from pathlib import Path
from typing import Final, TypeAlias

import attrs
import orjson

from mini_harness.errors import WorkspaceError
from mini_harness.runtime.confined import file_kind, inside, read_confined


def quote_path(path: str) -> str:
    """A path as a JSON string, so NUL and control characters stay visible in messages."""
    try:
        return orjson.dumps(path).decode()
    except orjson.JSONEncodeError:
        # Lone surrogates (a name that is not UTF-8): the stdlib writes them as \udcXX.
        return json.dumps(path)


def decodable_path(path: str) -> bool:
    """False when `path` holds lone surrogates: not UTF-8 on disk, not sendable as JSON."""
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


@attrs.frozen
class Location:
    """A checked path: normalised as given ("." for the root), resolved, and its stat."""

    relative: str
    real: str
    mode: int
    size: int


def _resolve_root(root: str | os.PathLike[str]) -> Path:
    real = Path(os.path.realpath(os.fspath(root)))
    if not real.is_dir():
        raise WorkspaceError(
            str(root), f"Workspace root {quote_path(str(root))} is not a directory"
        )
    return real


PROTECTED_NAMES = (".git", ".mini-harness")
"""Directories (or files) in the workspace that hold the agent's own controls: the
repository's configuration and hooks, the approval policy and project settings. Commands
see them read-only and apply_patch refuses to change them, at any depth."""


def _protected_paths(paths: tuple[str | os.PathLike[str], ...]) -> tuple[str, ...]:
    return tuple(os.path.realpath(os.fspath(path)) for path in paths)


Identity: TypeAlias = tuple[int, int]
"""A file's (st_dev, st_ino): the file itself, whatever name reaches it."""


def identity(info: os.stat_result) -> Identity:
    """The identity of the file `info` describes."""
    return info.st_dev, info.st_ino


CLOEXEC: Final = getattr(os, "O_CLOEXEC", 0)
# O_NOFOLLOW: a directory checked as such and then swapped for a symlink is not entered.
_DIRECTORY_FLAGS: Final = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | CLOEXEC


def open_below(parent: int, name: str) -> int:
    """A descriptor on the directory `name` inside the directory open as `parent`, never
    through a symlink: OSError (ELOOP, ENOTDIR) when `name` is a link or no directory,
    FileNotFoundError when it is gone. The one step of every descriptor walk from the
    root (the listing walk, apply_patch)."""
    return os.open(name, _DIRECTORY_FLAGS, dir_fd=parent)


@attrs.frozen
class Workspace:
    """The directory the file tools are confined to (resolved, symlinks included).

    `protected` names further files the agent may read but never change, such as the
    transcript the run is writing (with its `.torn-*` sidecars); see `protects`. Each is
    also known by its identity (`pinned`: taken when the workspace is made, for those that
    exist, or given by `pin` once the file is open), so that no other name reaching it (a
    hard link, a parent directory renamed) makes it writable; see `protects_file`.
    """

    root: Path = attrs.field(converter=_resolve_root)
    protected: tuple[str, ...] = attrs.field(default=(), converter=_protected_paths)
    _pinned: dict[str, Identity] = attrs.field(init=False, factory=dict, eq=False, repr=False)

    def __attrs_post_init__(self) -> None:
        for path in self.protected:
            try:
                info = os.stat(path)
            except OSError:
                continue  # not there yet: `pin` it once it is open
            if stat.S_ISREG(info.st_mode):
                self._pinned[path] = identity(info)

    @classmethod
    def current(cls) -> Workspace:
        """The current directory as a workspace."""
        try:
            return cls(Path.cwd())
        except OSError as exc:  # the cwd was deleted under us
            raise WorkspaceError(".", f"The current directory cannot be used: {exc}") from None

    def contains(self, real: str) -> bool:
        """True when the resolved path `real` is the root or below it."""
        return inside(real, str(self.root))

    def protects(self, real: str) -> bool:
        """True when the resolved path `real` is one of the agent's controls: inside a
        `.git` or `.mini-harness` entry at any depth, or a protected file or one of its
        `.torn-*` sidecars."""
        root = str(self.root)
        if self.contains(real) and real != root:
            parts = real[len(root.rstrip(os.sep)) + 1 :].split(os.sep)
            if any(part in PROTECTED_NAMES for part in parts):
                return True
        return any(real == path or real.startswith(f"{path}.torn-") for path in self.protected)

    def pin(self, path: str | os.PathLike[str], file: Identity) -> None:
        """Protect the file of identity `file`, opened at `path` (the transcript a run has
        just opened), by its identity too."""
        self._pinned[os.path.realpath(os.fspath(path))] = file

    @property
    def pinned(self) -> dict[str, Identity]:
        """The protected files known by identity: the path each was opened at, and its
        identity (a copy)."""
        return dict(self._pinned)

    def protects_file(self, info: os.stat_result) -> bool:
        """True when the file `info` describes is a protected file, by whatever name."""
        return identity(info) in self._pinned.values()

    def open_root(self) -> int:
        """A descriptor on the root, where every descriptor walk starts (see open_below)."""
        return os.open(self.root, _DIRECTORY_FLAGS)

    def relative(self, real: str) -> str:
        """The workspace-relative posix form of a resolved path inside the workspace."""
        return Path(os.path.relpath(real, self.root)).as_posix()

    def read(self, real: str, max_size: int) -> bytes:
        """Read the regular file `real` (resolved, inside the workspace) of at most
        `max_size` bytes, without blocking or following links (see read_confined)."""
        return read_confined(real, str(self.root), max_size)

    def locate(self, path: str) -> Location:
        """Check `path` and stat what it names; raise WorkspaceError saying why not."""
        shown = quote_path(path)
        if "\0" in path:
            raise WorkspaceError(path, f"Path {shown} contains a NUL byte")
        if not decodable_path(path):
            raise WorkspaceError(
                path, f"Path {shown} is not valid Unicode; only UTF-8 file names can be read"
            )
        if os.path.isabs(path):
            raise WorkspaceError(
                path, f"Path {shown} is absolute; use a path relative to the workspace root"
            )
        # Shown paths keep the caller's spelling (a link's name, not its target).
        normal = posixpath.normpath(path or ".")
        if normal == ".." or normal.startswith("../"):
            raise WorkspaceError(path, f"Path {shown} leads outside the workspace")
        real = os.path.realpath(os.path.join(self.root, path))
        if not self.contains(real):
            raise WorkspaceError(
                path, f"Path {shown} resolves outside the workspace through a symlink"
            )
        try:
            info = os.stat(real)
        except OSError as exc:
            raise WorkspaceError(path, _os_problem(shown, exc)) from None
        return Location(normal, real, info.st_mode, info.st_size)

    def locate_dir(self, path: str) -> Location:
        found = self.locate(path)
        if not stat.S_ISDIR(found.mode):
            raise WorkspaceError(
                path, f"Path {quote_path(path)} is a {file_kind(found.mode)}, not a directory"
            )
        return found

    def locate_file(self, path: str) -> Location:
        """Like locate, but only a regular file passes (checked before anything opens it)."""
        found = self.locate(path)
        if stat.S_ISDIR(found.mode):
            raise WorkspaceError(
                path, f"Path {quote_path(path)} is a directory; use list_files to see inside it"
            )
        if not stat.S_ISREG(found.mode):
            raise WorkspaceError(
                path,
                f"Path {quote_path(path)} is a {file_kind(found.mode)}, not a regular file",
            )
        return found


def _os_problem(shown: str, exc: OSError) -> str:
    if exc.errno in (errno.ENOENT, errno.ENOTDIR):
        return f"Path {shown} does not exist"
    if exc.errno == errno.ELOOP:
        return f"Path {shown} is a symlink loop"
    if exc.errno in (errno.EACCES, errno.EPERM):
        return f"Path {shown} cannot be read: permission denied"
    return f"Path {shown} cannot be read: {exc.strerror or exc}"


WorkspaceLike: TypeAlias = Workspace | str | os.PathLike[str]
"""What the registry helpers accept as a workspace."""
