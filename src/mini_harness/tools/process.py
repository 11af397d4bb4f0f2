"""Child processes for the coding tools: bounded output, a timeout, the whole group killed.

Every child starts in a session (and so a process group) of its own. When it times out, or
when it exits but something it started still holds its output open, the whole group gets
SIGKILL: nothing a command starts outlives the call.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import signal
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

DEFAULT_MAX_OUTPUT = 64 * 1024  # bytes kept per stream (head and tail together)
_CHUNK = 1 << 16


@attrs.define
class HeadTail:
    """Keeps the first and last `limit // 2` bytes of a stream and counts what it dropped."""

    limit: int
    head: bytearray = attrs.field(factory=bytearray)
    tail: bytearray = attrs.field(factory=bytearray)
    dropped: int = 0

    def feed(self, data: bytes) -> None:
        room = self.limit // 2 - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        if not data:
            return
        self.tail += data
        keep = self.limit - self.limit // 2
        excess = len(self.tail) - keep
        if excess > 0:
            self.dropped += excess
            del self.tail[:excess]

    @property
    def truncated(self) -> bool:
        return self.dropped > 0

    def text(self) -> str:
        """Head and tail as text; a marker in the middle says how many bytes were left out."""
        if not self.dropped:
            return bytes(self.head + self.tail).decode("utf-8", "replace")
        head = bytes(self.head).decode("utf-8", "replace")
        tail = bytes(self.tail).decode("utf-8", "replace")
        return f"{head}\n[... {self.dropped:,} bytes left out ...]\n{tail}"


@attrs.frozen
class Finished:
    """How a child process ended and what it printed (each stream bounded)."""

    exit_code: int | None  # None: killed at the timeout
    stdout: HeadTail
    stderr: HeadTail
    timed_out: bool


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def _read_ready(
    selector: selectors.BaseSelector, streams: dict[Any, HeadTail], timeout: float
) -> bool:
    """Read what the ready pipes hold (closing those at their end); False if none was ready."""
    ready = selector.select(timeout)
    for key, _ in ready:
        data = os.read(key.fd, _CHUNK)
        if data:
            streams[key.fileobj].feed(data)
        else:
            selector.unregister(key.fileobj)
    return bool(ready)


def run_bounded(
    argv: Sequence[str],
    *,
    cwd: str,
    env: Mapping[str, str],
    timeout: float,
    max_output: int = DEFAULT_MAX_OUTPUT,
    preexec: Callable[[], None] | None = None,
    pass_fds: Sequence[int] = (),
    started: Callable[[], None] | None = None,
) -> Finished:
    """Run `argv` with no stdin; raise OSError when it cannot start (no such program).

    `preexec` runs in the child before exec (it must only make system calls, such as
    setting rlimits); `pass_fds` stay open in the child; `started` is called once it runs.
    """
    deadline = time.monotonic() + timeout
    proc = subprocess.Popen(  # noqa: S603 - argv is a list, never given to a shell here
        list(argv),
        cwd=cwd,
        env=dict(env),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
        close_fds=True,
        pass_fds=tuple(pass_fds),
        preexec_fn=preexec,  # noqa: PLW1509 - only setrlimit runs there
    )
    if started is not None:
        started()
    pgid = proc.pid  # a new session: its leader's pid is the group id
    streams = {proc.stdout: HeadTail(max_output), proc.stderr: HeadTail(max_output)}
    timed_out = False
    exited_at: float | None = None
    with selectors.DefaultSelector() as selector:
        for stream in streams:
            assert stream is not None
            selector.register(stream, selectors.EVENT_READ)
        while selector.get_map():
            now = time.monotonic()
            if now >= deadline:
                timed_out = True
                break
            if exited_at is None and proc.poll() is not None:
                exited_at = now
            # The child is gone but a process it started keeps the pipes open: give it a
            # moment to finish writing, then end the group rather than wait for it.
            if exited_at is not None and now - exited_at > 0.5:
                break
            _read_ready(selector, streams, min(deadline - now, 0.1))
        if not timed_out and exited_at is None:
            # Both pipes closed while the command still runs (it closed them, or is on its
            # way out): let it finish within the deadline before ending its group, or a
            # command that exits normally could be killed on its way out.
            try:
                proc.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                timed_out = True
        _kill_group(pgid)
        # What was written before the end is still in the pipes: keep it.
        while selector.get_map() and _read_ready(selector, streams, 0):
            pass
    try:
        code = proc.wait(timeout=5)
    finally:
        for stream in streams:
            assert stream is not None
            stream.close()
    out, err = streams.values()
    return Finished(
        exit_code=None if timed_out else code,
        stdout=out,
        stderr=err,
        timed_out=timed_out,
    )
