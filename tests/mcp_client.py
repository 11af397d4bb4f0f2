"""What the MCP server tests share: a raw JSON-RPC client over a server subprocess's pipes,
and a user registry of tools that misbehave in every way a session must survive."""

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

# A user registry for --registry: the built-in echo plus tools that fail, wait, print,
# return something other than an object, or end the call with SystemExit / GeneratorExit.
TEST_TOOLS = """
import asyncio
import os
import time

from mini_harness.tools import default_registry


def registry():
    tools = default_registry()
    anything = {"type": "object"}

    async def wait(data):
        await asyncio.sleep(data["seconds"])
        return {"waited": data["seconds"]}

    def nap(data):
        time.sleep(data["seconds"])
        return {"napped": data["seconds"]}

    def boom(data):
        raise ValueError("boom")

    def leave(data):
        raise SystemExit(3)

    async def async_generator_exit(data):
        raise GeneratorExit

    def generator_exit(data):
        raise GeneratorExit

    def chatty(data):
        print("print() from a tool")
        os.write(1, b"os.write(1) from a tool\\n")
        return {"said": 2}

    tools.add("wait", wait, description="Sleeps.", input_schema=anything)
    tools.add("nap", nap, description="Sleeps in sync code.", input_schema=anything)
    tools.add("nap1", nap, description="Naps, 1 s limit.", input_schema=anything, timeout=1)
    tools.add("boom", boom, description="Always raises.", input_schema=anything)
    tools.add("nan", lambda data: {"v": float("nan")}, description="NaN.", input_schema=anything)
    tools.add("letters", lambda data: list(data["word"]), description="", input_schema=anything)
    tools.add("chatty", chatty, description="Prints to stdout.", input_schema=anything)
    tools.add("leave", leave, description="Raises SystemExit.", input_schema=anything)
    tools.add("agenexit", async_generator_exit, description="GeneratorExit.", input_schema=anything)
    tools.add("genexit", generator_exit, description="GeneratorExit.", input_schema=anything)
    return tools
"""


def registry_options(where: Path) -> list[str]:
    """Write TEST_TOOLS into `where`; the server options that load it (allowing its tools,
    which say nothing of what they change: these tests are about the protocol)."""
    (where / "testtools.py").write_text(TEST_TOOLS)
    return ["--registry", "testtools:registry", "--approve", "auto"]


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
