"""While the model is thinking, a terminal shows how long it has waited; a pipe does not."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.agent.wire_servers import OpenAIWireServer, Stall
from tests.streams import on_terminal


def run_once(tmp_path: Path, server: OpenAIWireServer, *, terminal: bool) -> bytes:
    """A run whose one request takes 2.3 s; what it wrote to standard output."""
    env = {
        **os.environ,
        "OPENAI_API_KEY": "k",
        "OPENAI_BASE_URL": server.base_url,
        "PYTHONPATH": os.pathsep.join(sys.path),
        "TERM": "xterm-256color",
    }
    env.pop("COLUMNS", None)
    command = [sys.executable, "-m", "mini_harness", "run", "Task", "--model", "openai:m",
               "--model-retries", "0", "--no-stream"]  # fmt: skip
    if not terminal:
        done = subprocess.run(
            command, check=False, cwd=tmp_path, env=env, capture_output=True, timeout=60
        )
        return done.stdout
    return on_terminal(command, env, tmp_path)


class TestWaitingLine:
    def test_a_terminal_shows_the_wait_then_clears_it(self, tmp_path: Path) -> None:
        """On a terminal the wait is counted in place each second, then the line is
        cleared before the answer is printed."""
        with OpenAIWireServer() as server:
            server.script(Stall(2.3))
            output = run_once(tmp_path, server, terminal=True)
        assert b"\r[mini-harness] Waiting for the model (step 1): 1 s" in output
        assert b"\r[mini-harness] Waiting for the model (step 1): 2 s" in output
        assert b"\r\x1b[K" in output.split(b"Waiting for the model")[-1]

    def test_a_pipe_shows_no_wait(self, tmp_path: Path) -> None:
        """Piped output has no waiting line, and no escape codes."""
        with OpenAIWireServer() as server:
            server.script(Stall(1.3))
            output = run_once(tmp_path, server, terminal=False)
        assert b"Waiting" not in output
        assert b"\x1b[" not in output
