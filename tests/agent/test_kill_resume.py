"""SIGKILL an agent run at random points, then resume it: every run reaches a final answer,
no tool call runs twice, and every history is one a provider accepts (the resumed requests
go through the OpenAI SDK to the loopback wire server, which refuses invalid histories)."""

from __future__ import annotations

import contextlib
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import orjson
import pytest

from mini_harness.replay import fold_agent_runs
from mini_harness.transcripts import verify_transcript
from tests.agent.recorded_runs import (
    assert_valid_histories,
    counting_registry,
    executions,
    invoke,
    write_script,
)
from tests.agent.wire_servers import OpenAIWireServer, Turn

STEP_SECONDS = 0.12
"""How long each model answer and each tool call takes: the windows the kills aim at."""

RESPONSES: list[dict[str, Any]] = [
    {"delayMs": STEP_SECONDS * 1000, "toolCalls": [
        {"name": "slow", "arguments": {"n": 1, "seconds": STEP_SECONDS}}]},
    {"delayMs": STEP_SECONDS * 1000, "toolCalls": [
        {"name": "slow", "arguments": {"n": 2, "seconds": STEP_SECONDS}},
        {"name": "slow", "arguments": {"n": 3, "seconds": STEP_SECONDS}}]},
    {"delayMs": STEP_SECONDS * 1000, "toolCalls": [
        {"name": "slow", "arguments": {"n": 4, "seconds": STEP_SECONDS}}]},
    {"delayMs": STEP_SECONDS * 1000, "text": "Done."},
]  # fmt: skip

# Where to kill: (how many events of a kind must be there, and of which kind ends that
# phase, which must not be there yet). "between" waits for a tool to begin, makes the run
# block on its next line of output (its stdout pipe is filled), which comes right after
# that tool's result is recorded and before the next request, and kills it there.
TARGETS: dict[str, list[tuple[str, int, str]]] = {
    "request": [("ModelRequested", k, "ModelResponded") for k in range(1, 5)],
    "tool": [("ToolCalled", k, "ToolSucceeded") for k in range(1, 5)],
    "between": [("ToolCalled", k, "ToolSucceeded") for k in range(1, 5)],
}


def counts(log: Path) -> Counter[str]:
    found: Counter[str] = Counter()
    try:
        data = log.read_bytes()
    except FileNotFoundError:
        return found
    for line in data.splitlines():
        with contextlib.suppress(orjson.JSONDecodeError):  # a line being written
            found[orjson.loads(line)["type"]] += 1
    return found


def phase_of(log: Path) -> str:
    """Where the kill landed, from the transcript's last complete event."""
    found = counts(log)
    if found["ModelRequested"] > found["ModelResponded"]:
        return "request"
    if found["ToolCalled"] > found["ToolSucceeded"]:
        return "tool"
    return "between"


def kill_at(command: list[str], log: Path, target: tuple[str, int, str], between: bool) -> bool:
    """Start the run, wait until `target` holds, SIGKILL it a random moment later (within
    the step's window), or, `between`, once the tool has ended and the run is blocked on
    its output. False if the run ended before the target was reached."""
    kind, k, ender = target
    read_end, write_end = os.pipe()
    # Unbuffered: each line the run prints is one write, which blocks on a full pipe.
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    process = subprocess.Popen(command, stdout=write_end, stderr=subprocess.DEVNULL, env=env)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            found = counts(log)
            if found[kind] >= k and found[ender] < k:
                if between:
                    fill(write_end)
                    while counts(log)[ender] < k and time.monotonic() < deadline:
                        time.sleep(0.003)
                    time.sleep(0.05)  # it prints the outcome next, and blocks there
                else:
                    time.sleep(random.uniform(0, STEP_SECONDS * 0.8))
                process.send_signal(signal.SIGKILL)
                return True
            if process.poll() is not None:
                return False
            time.sleep(0.003)
        raise AssertionError("the run never reached its target")
    finally:
        if process.poll() is None:
            process.kill()
        process.wait()
        os.close(read_end)
        os.close(write_end)


def fill(fd: int) -> None:
    """Fill the pipe `fd` writes to, so that the next write to it blocks.

    Through a descriptor of its own: O_NONBLOCK on `fd` would be the child's too."""
    own = os.open(f"/proc/self/fd/{fd}", os.O_WRONLY | os.O_NONBLOCK)
    try:
        for size in (4096, 1):
            with contextlib.suppress(BlockingIOError):
                while True:
                    os.write(own, b"x" * size)
    finally:
        os.close(own)


class TestKillAndResume:
    @pytest.mark.parametrize("phase", ["request", "tool", "between"])
    def test_kill_anywhere_then_resume(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, thorough: bool, phase: str
    ) -> None:
        """Killed during a request, during a tool or between them (10 kills each; 50 with
        --thorough), every run resumes to a final answer with no tool call run twice and
        valid histories."""
        monkeypatch.chdir(tmp_path)
        spec, side_file, _ = counting_registry(tmp_path)
        model = write_script(tmp_path / "script.json", RESPONSES)
        server = OpenAIWireServer()
        with server:
            self.kill_and_resume(tmp_path, spec, side_file, model, server, phase, thorough)
        assert server.rejections == []

    def kill_and_resume(
        self,
        tmp_path: Path,
        spec: str,
        side_file: Path,
        model: str,
        server: OpenAIWireServer,
        phase: str,
        thorough: bool,
    ) -> None:
        env: dict[str, str | None] = {"OPENAI_API_KEY": "k", "OPENAI_BASE_URL": server.base_url}
        mini_harness = str(Path(sys.executable).parent / "mini-harness")
        rounds = 50 if thorough else 10
        seen: Counter[str] = Counter()
        rng = random.Random(os.environ.get("KILL_SEED", "19") + phase)
        for number in range(rounds):
            target = rng.choice(TARGETS[phase])
            log = tmp_path / f"kill-{number}.jsonl"
            side_file.unlink(missing_ok=True)
            command = [mini_harness, "run", "Task", "--model", model, "--registry", spec,
                       "--log", str(log), "--fsync", "always", "--approve", "auto"]  # fmt: skip
            if not kill_at(command, log, target, between=phase == "between"):
                continue  # finished first: nothing to resume
            seen[phase_of(log)] += 1
            server.script(Turn(text="Resumed."))
            result = invoke(["resume", str(log), "--model", "openai:gpt-4o-mini", "--registry",
                             spec, "--approve", "auto"], env=env)  # fmt: skip
            assert result.exit_code == 0, (number, target, result.output)
            runs = fold_agent_runs(log)
            assert runs[-1].stop_reason == "final", (number, target)
            ran = executions(side_file)
            assert all(count == 1 for count in ran.values()), (number, target, ran)
            # Every call of the run either ran once or was closed as interrupted.
            for run in runs:
                assert_valid_histories(run)
            report = verify_transcript(log)
            assert (report.problems(), report.in_doubt) == ([], ()), (number, target)
        assert seen[phase] > 0, seen  # the kills landed where they were aimed, some of them
