"""Write large, valid transcripts quickly (encode each event ourselves, no locking)."""

from __future__ import annotations

from pathlib import Path

from mini_harness.events import (
    Event,
    RunStarted,
    ToolCalled,
    ToolError,
    ToolFailed,
    ToolSucceeded,
    TranscriptStarted,
)
from mini_harness.tools import default_registry
from mini_harness.transcripts import encode_line, line_hash

TS = "2026-01-01T00:00:00.000000Z"


def write_transcript(path: Path, events: int, *, runs: int = 2) -> None:
    """A transcript of about `events` events: header, `runs` runs, echo calls; every 10th fails."""
    tools = tuple(default_registry().list())
    per_run = max(1, (events - 1 - runs) // (2 * runs))
    seq = 0
    prev: str | None = None
    with path.open("wb", buffering=1 << 20) as handle:

        def put(event: Event) -> None:
            nonlocal seq, prev
            line = encode_line(event, seq, prev)
            handle.write(line + b"\n")
            prev = line_hash(line)
            seq += 1

        put(TranscriptStarted(ts=TS, transcript_id="f" * 32))
        for run in range(runs):
            run_id = f"{run % 16:x}" * 32
            put(RunStarted(ts=TS, run_id=run_id, harness="0.1.0", tools=tools))
            for number in range(1, per_run + 1):
                call_id = f"{run_id[:12]}-{number}"
                text = {"text": f"message number {number} of run {run}"}
                put(ToolCalled(ts=TS, run_id=run_id, call_id=call_id, name="echo", input=text))
                if number % 10:
                    put(ToolSucceeded(TS, run_id, call_id, "echo", text, 0.012))
                else:
                    error = ToolError("handler_error", "Tool echo failed: ValueError: no")
                    put(ToolFailed(TS, run_id, call_id, "echo", error, 0.02))
