"""Agent loop overhead per step, with a scripted model (everything but the model).

Each step is one model request (recorded, hashed, served at once by the script) and one
`echo` tool call dispatched through the runtime, with its result going back into the
history. Measured against the same number of bare `echo` dispatches on the same kind of
sink: the difference is what the loop adds per step (building and recording the request,
hashing it, recording the response). Runs of 50 and of 1,000 steps show whether the cost
per step grows with the length of the conversation.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from _common import Config, Section, fresh_path, median

ORDER = 60


def _script(path: Path, steps: int) -> Path:
    call = {"toolCalls": [{"name": "echo", "arguments": {"text": "hello"}}]}
    path.write_text(json.dumps({"responses": [call] * (steps - 1) + [{"text": "done"}]}))
    return path


def _loop_seconds(config: Config, steps: int, logged: bool) -> float:
    from mini_harness import ToolRuntime
    from mini_harness.agent import AgentConfig, AgentLoop, ScriptProvider
    from mini_harness.events import NullSink
    from mini_harness.tools import default_registry
    from mini_harness.transcripts import JsonlTranscript

    script = _script(config.workdir / "agent-script.json", steps)
    provider = ScriptProvider(script)
    sink: Any = JsonlTranscript(fresh_path(config, "agent.jsonl")) if logged else NullSink()
    runtime = ToolRuntime(default_registry(), sink)
    loop = AgentLoop(runtime, provider, AgentConfig(task="bench", max_steps=steps, stream=False))
    start = time.perf_counter()
    outcome = loop.run()
    elapsed = time.perf_counter() - start
    if logged:
        sink.close()
    if (outcome.steps, outcome.stop_reason) != (steps, "final"):
        raise RuntimeError(f"the scripted run ended early: {outcome}")
    return elapsed


def _dispatch_seconds(config: Config, count: int, logged: bool) -> float:
    from mini_harness import ToolRuntime
    from mini_harness.events import NullSink
    from mini_harness.tools import default_registry
    from mini_harness.transcripts import JsonlTranscript

    sink: Any = JsonlTranscript(fresh_path(config, "dispatch.jsonl")) if logged else NullSink()
    runtime = ToolRuntime(default_registry(), sink)
    start = time.perf_counter()
    for _ in range(count):
        runtime.dispatch("echo", {"text": "hello"})
    elapsed = time.perf_counter() - start
    if logged:
        sink.close()
    return elapsed


def run(config: Config) -> Section:
    section = Section(
        "Agent loop: overhead per step (scripted model, one echo call per step)",
        ["steps", "sink", "loop µs/step", "bare dispatch µs/call", "loop overhead µs/step"],
    )
    rounds = max(3, config.rounds)
    for steps in (50, config.scale(1000, 200)):
        for logged in (False, True):
            loop = median([_loop_seconds(config, steps, logged) for _ in range(rounds)])
            bare = median([_dispatch_seconds(config, steps, logged) for _ in range(rounds)])
            per_step, per_call = loop / steps * 1e6, bare / steps * 1e6
            section.rows.append(
                [
                    f"{steps:,}",
                    "JSONL (fsync batch)" if logged else "none",
                    f"{per_step:,.1f}",
                    f"{per_call:,.1f}",
                    f"{per_step - per_call:,.1f}",
                ]
            )
    section.notes.append(
        "Whole-run time divided by steps, median of the rounds; the bare dispatch column is "
        "the same number of echo dispatches alone. The loop adds per step: building the "
        "request, the model events (ModelRequested with only the new messages, "
        "ModelResponded), the tool result message and the request hash, fed incrementally "
        "(only new messages are hashed). What grows with the conversation is copying the "
        "history into each request (every provider is sent the whole history) and the "
        "garbage collector's passes over it: the longer runs cost more per step."
    )
    return section


if __name__ == "__main__":
    import sys
    import tempfile

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    with tempfile.TemporaryDirectory() as tmp:
        result = run(Config(quick=False, rounds=3, workdir=Path(tmp)))
        print(result.headers)
        for row in result.rows:
            print(row)
