"""What the sandbox makes of users' home directories: hidden, HOME private, and the
programs that live under a home still runnable.

A home holds what a command must not read and send back to the model: SSH and cloud keys,
tokens, shell histories, the session store with other runs' transcripts. /root, /home and
the caller's HOME are each an empty tmpfs in the sandbox, remounted read-only once the
mount points below them are made; a HOME under one of them is SANDBOX_HOME instead, an
empty directory in the sandbox's own /tmp (on disk, removed after the call).
"""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Sequence
from typing import Final

import attrs

from mini_harness.runtime.confined import inside

HIDDEN_HOMES: Final = ("/root", "/home")
"""Where users' home directories are: hidden in the sandbox, with the caller's HOME."""

SANDBOX_HOME: Final = "/tmp/home"  # noqa: S108 - in the sandbox's own /tmp
"""HOME inside the sandbox when the caller's names a hidden directory."""

PRIVATE_PLACES: Final = ("/tmp", "/run", "/var/run", "/dev/shm")  # noqa: S108
"""Where the sandbox has empty places of its own: a program the command may run from
there (a virtualenv in a clone under /tmp) is kept the same way as one under a home."""

_TOOLCHAIN_DIRS: Final = ("bin", "lib", "lib64", "pyvenv.cfg")


@attrs.frozen
class Homes:
    """What a sandbox makes of the users' home directories (all paths resolved).

    `hidden` become empty read-only directories (a tmpfs each, remounted read-only once
    the binds below them are made), and `toolchains` under them stay as they are,
    read-only: the `bin`, `lib` and `lib64` directories of a program the command may run
    that lives under a hidden home (see `toolchains`)."""

    hidden: tuple[str, ...]
    toolchains: tuple[str, ...] = ()

    @classmethod
    def of(cls, home: str | None, search: Sequence[str] = ()) -> Homes:
        """/root, /home and the caller's `home` (an existing directory at least two
        levels down, such as /var/lib/ci) hidden, keeping the toolchains found in the
        directories `search` (PATH's and the program's own)."""
        wanted = [*HIDDEN_HOMES, *([home] if home and os.path.isabs(home) else [])]
        real = [os.path.realpath(path) for path in wanted]
        found = [
            path
            for path in dict.fromkeys(real)
            if os.path.isdir(path) and (path.count(os.sep) > 1 or path in HIDDEN_HOMES)
        ]
        hidden = [path for path in found if not any(inside(path, o) for o in found if o != path)]
        private = [os.path.realpath(path) for path in PRIVATE_PLACES if os.path.isdir(path)]
        return cls(tuple(hidden), toolchains(search, [*hidden, *dict.fromkeys(private)]))

    def hides(self, path: str | None) -> bool:
        """True when `path` (a HOME) lies in a hidden directory."""
        if not path or not os.path.isabs(path):
            return False
        real = os.path.realpath(path)
        return any(inside(real, hidden) for hidden in self.hidden)

    def argv(self) -> list[str]:
        """bubblewrap's arguments that hide the homes, keeping the toolchains."""
        args: list[str] = []
        for path in self.hidden:
            args += ["--tmpfs", path]
        for path in self.toolchains:
            args += ["--ro-bind", path, path]
        return args

    def sealed(self) -> list[str]:
        """The arguments that make the hidden directories read-only: last, once every
        mount point under them is made."""
        return [arg for path in self.hidden for arg in ("--remount-ro", path)]


def toolchains(search: Sequence[str], hidden: Sequence[str]) -> tuple[str, ...]:
    """The directories that keep programs under `hidden` runnable: for each directory in
    `search`, and each symlink in one, that resolves to a `bin` directory under a hidden
    one, that directory's `bin`, `lib` and `lib64` (a virtualenv's python linked to
    ~/.pyenv/versions/3.11.7/bin/python3.11 needs ~/.pyenv/versions/3.11.7/lib), and a
    virtualenv's `pyvenv.cfg` beside them."""
    if not hidden:
        return ()
    found: dict[str, None] = {}
    for directory in dict.fromkeys(search):
        try:
            mtime = os.stat(directory).st_mtime_ns
        except OSError:
            continue
        for real in _resolved_into(directory, mtime, tuple(hidden)):
            if os.path.basename(real) != "bin":
                continue  # shims and scripts that need more than their own directory
            prefix = os.path.dirname(real)
            for name in _TOOLCHAIN_DIRS:
                if os.path.exists(os.path.join(prefix, name)):
                    found[os.path.join(prefix, name)] = None
    return tuple(found)


@functools.lru_cache(maxsize=64)
def _resolved_into(directory: str, _mtime: int, hidden: tuple[str, ...]) -> tuple[str, ...]:
    """The resolved directories under `hidden` that `directory` is, or that its symlinks
    lead to (one readlink each; cached while the directory's entries stay the same)."""
    found: dict[str, None] = {}
    real = os.path.realpath(directory)
    if any(inside(real, home) for home in hidden):
        found[real] = None
    with contextlib.suppress(OSError), os.scandir(directory) as entries:
        for entry in entries:
            if not entry.is_symlink():
                continue
            with contextlib.suppress(OSError):
                target = os.path.normpath(os.path.join(directory, os.readlink(entry.path)))
                if any(inside(target, home) for home in hidden):
                    found[os.path.dirname(os.path.realpath(entry.path))] = None
    return tuple(found)
