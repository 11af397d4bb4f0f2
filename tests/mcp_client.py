"""A raw JSON-RPC client for `mini-harness mcp`: lines over a server subprocess's pipes."""

from __future__ import annotations

import os
import select
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson

INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


class RawClient:
    """A server process and the raw lines exchanged with it, with a deadline on every read."""

    def __init__(self, args: Sequence[str], cwd: Path, root_args: tuple[str, ...] = ()) -> None:
        # Clients start servers with block-buffered stdout; keep stray print()s buffered.
        env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
        self.process = subprocess.Popen(
            [sys.executable, "-m", "mini_harness", *root_args, "mcp", *args],
            cwd=cwd,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self.next_id = 0
        self._buffer = b""

    def write(self, *lines: bytes | dict[str, Any]) -> None:
        """Send each line as it is (bytes) or encoded (a message)."""
        assert self.process.stdin is not None
        for line in lines:
            data = line if isinstance(line, bytes) else orjson.dumps(line)
            self.process.stdin.write(data + b"\n")
        self.process.stdin.flush()

    def send(self, method: str, params: dict[str, Any] | None = None) -> int:
        """Send a request with the next id; return that id."""
        self.next_id += 1
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": self.next_id, "method": method}
        if params is not None:
            message["params"] = params
        self.write(message)
        return self.next_id

    def receive(self, timeout: float = 30.0) -> dict[str, Any]:
        """The next answer; fails if it does not come within `timeout` seconds."""
        assert self.process.stdout is not None
        fd = self.process.stdout.fileno()
        deadline = time.monotonic() + timeout
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            assert left > 0, f"no answer within {timeout} s; got {self._buffer[:200]!r}"
            ready, _, _ = select.select([fd], [], [], left)
            if ready:
                chunk = os.read(fd, 1 << 16)
                assert chunk, f"the server ended; stderr: {self.finish()[1]!r}"
                self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        message: dict[str, Any] = orjson.loads(line)
        return message

    def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        request_id = self.send(method, params)
        message = self.receive()
        assert message["id"] == request_id
        return message

    def handshake(self) -> None:
        init = self.request(
            "initialize",
            {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "raw-test", "version": "0"},
            },
        )
        assert init["result"]["serverInfo"]["name"] == "mini-harness"
        self.write(INITIALIZED)

    def finish(self) -> tuple[int, str]:
        """Close the input; the exit code and stderr."""
        assert self.process.stdin is not None
        if not self.process.stdin.closed:
            self.process.stdin.close()
        self.process.wait(timeout=60)
        return self.process.returncode, self.stderr()

    def stderr(self) -> str:
        if self.process.poll() is None:
            return "(still running)"
        assert self.process.stderr is not None
        return self.process.stderr.read().decode()

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.wait()
        for stream in (self.process.stdin, self.process.stdout, self.process.stderr):
            if stream is not None:
                stream.close()
