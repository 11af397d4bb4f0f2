"""A pipe that can be read only once, for the commands that must read a transcript once;
and a command run with its standard output on a pseudo-terminal."""

from __future__ import annotations

import contextlib
import os
import pty
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def read_once(path: Path, data: bytes) -> Iterator[Path]:
    """A FIFO at `path` that gives `data` to its first reader and an empty stream to every
    later one, as a pipe from another program would: what was read is gone."""
    os.mkfifo(path)
    stop = threading.Event()

    def serve() -> None:
        with path.open("wb") as first:  # blocks until the first reader opens it
            first.write(data)
        while not stop.is_set():
            with path.open("wb"):  # a later reader gets nothing
                pass

    server = threading.Thread(target=serve, daemon=True)
    server.start()
    try:
        yield path
    finally:
        stop.set()
        # Release the server if it waits for a reader: open the FIFO without blocking.
        with contextlib.suppress(OSError):
            os.close(os.open(path, os.O_RDONLY | os.O_NONBLOCK))
        server.join(timeout=10)


def on_terminal(command: list[str], env: dict[str, str], cwd: Path | None = None) -> bytes:
    """Run `command` with its standard output on a pseudo-terminal; what it wrote."""
    leader, follower = pty.openpty()
    process = subprocess.Popen(
        command, cwd=cwd, env=env, stdout=follower, stderr=subprocess.DEVNULL
    )
    os.close(follower)
    output = b""
    while True:
        try:
            chunk = os.read(leader, 65536)
        except OSError:  # the terminal closed: the process is done
            break
        if not chunk:
            break
        output += chunk
    process.wait(timeout=60)
    os.close(leader)
    return output
