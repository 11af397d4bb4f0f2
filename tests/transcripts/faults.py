"""Fault injection for transcript tests: fsync and write doubles scoped to one file."""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable
from pathlib import Path

import pytest


class FsyncSpy:
    """Replaces os.fsync; records what was synced (the log's size, or "dir") and can fail."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, log: Path, *, fail: bool = False) -> None:
        self.log = log
        self.fail = fail
        self.synced: list[int | str] = []  # the log's size at each sync of it, "dir" otherwise
        self._real = os.fsync
        monkeypatch.setattr(os, "fsync", self)

    def __call__(self, fd: int) -> None:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            self.synced.append("dir")
        elif self.log.exists() and info.st_ino == self.log.stat().st_ino:
            self.synced.append(info.st_size)
        else:
            self.synced.append("other")
        if self.fail:
            raise OSError(errno.EIO, "Input/output error")
        self._real(fd)

    @property
    def log_syncs(self) -> list[int]:
        return [s for s in self.synced if isinstance(s, int)]


def inject_write(
    monkeypatch: pytest.MonkeyPatch, log: Path, fake: Callable[[int, bytes], int]
) -> None:
    """Route os.write on the log's descriptors through `fake(fd, data)`; others go through."""
    real = os.write
    inode = log.stat().st_ino

    def write(fd: int, data: bytes) -> int:
        if os.fstat(fd).st_ino == inode:
            return fake(fd, bytes(data))
        return real(fd, data)

    monkeypatch.setattr(os, "write", write)
