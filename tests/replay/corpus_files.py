"""Small transcripts with chosen calls, durations and agent-run events, for corpus tests."""

from __future__ import annotations

from pathlib import Path

import orjson

from mini_harness.events import (
    JsonObject,
    RunStarted,
    ToolCalled,
    ToolDefinition,
    ToolError,
    ToolFailed,
    ToolSucceeded,
    TranscriptStarted,
    to_wire,
)
from mini_harness.transcripts import encode_line, line_hash

TS = "2026-01-01T00:00:00.000000Z"
ECHO_TOOLS = (ToolDefinition("echo", "Echo.", {"type": "object"}),)

# A call: (tool, error kind or None for success, durationMs); None durations: in doubt.
Call = tuple[str, str | None, float | None]


class TranscriptWriter:
    """Encodes events (typed, or raw wire JSON for agent-run events) with a valid chain."""

    def __init__(self, path: Path) -> None:
        self.handle = path.open("wb")
        self.seq = 0
        self.prev: str | None = None
        self.typed(TranscriptStarted(ts=TS, transcript_id=path.stem.ljust(32, "0")[:32]))

    def typed(self, event: object) -> None:
        self._put(encode_line(event, self.seq, self.prev))  # type: ignore[arg-type]

    def wire(self, kind: str, fields: JsonObject) -> None:
        data: JsonObject = {"type": kind, "seq": self.seq, "ts": TS, "prev": self.prev}
        data.update(fields)
        self._put(orjson.dumps(data))

    def _put(self, line: bytes) -> None:
        self.handle.write(line + b"\n")
        self.prev = line_hash(line)
        self.seq += 1

    def close(self) -> None:
        self.handle.close()


def write_calls(path: Path, calls: list[Call], *, run_id: str = "a" * 32) -> Path:
    """One run of `calls`, in order; a call with no duration is left in doubt."""
    writer = TranscriptWriter(path)
    writer.typed(RunStarted(ts=TS, run_id=run_id, harness="0.1.0", tools=ECHO_TOOLS))
    for number, (name, kind, duration) in enumerate(calls, 1):
        call_id = f"{run_id[:12]}-{number}"
        writer.typed(ToolCalled(ts=TS, run_id=run_id, call_id=call_id, name=name, input={}))
        if duration is None:
            continue
        if kind is None:
            writer.typed(ToolSucceeded(TS, run_id, call_id, name, {"ok": True}, duration))
        else:
            writer.typed(ToolFailed(TS, run_id, call_id, name, ToolError(kind, "no"), duration))
    writer.close()
    return path


def write_agent_run(
    path: Path, *, stop_reason: str | None, usages: list[JsonObject], run_id: str = "c" * 32
) -> Path:
    """An agent run with one model response per usage; no RunFinished when `stop_reason`
    is None (the process died)."""
    writer = TranscriptWriter(path)
    model: JsonObject = {"provider": "script", "name": "demo"}
    writer.wire(
        "RunStarted",
        {
            "runId": run_id,
            "harness": "0.1.0",
            "tools": to_wire(ECHO_TOOLS),
            "task": "t",
            "model": model,
        },
    )
    total = {"inputTokens": 0, "outputTokens": 0, "cachedTokens": None}
    for step, usage in enumerate(usages, 1):
        request_id = f"req-{step}"
        writer.wire(
            "ModelRequested",
            {
                "runId": run_id,
                "step": step,
                "requestId": request_id,
                "messages": [{"role": "user", "content": "t"}] if step == 1 else [],
                "params": {},
                "requestHash": "0" * 64,
            },
        )
        message = {"role": "assistant", "content": "done", "toolCalls": []}
        writer.wire(
            "ModelResponded",
            {
                "runId": run_id,
                "requestId": request_id,
                "message": message,
                "finishReason": "stop",
                "usage": usage,
                "durationMs": 1.5,
            },
        )
    if stop_reason is not None:
        writer.wire(
            "RunFinished",
            {
                "runId": run_id,
                "stopReason": stop_reason,
                "finalText": "done",
                "steps": len(usages),
                "usage": total,
            },
        )
    writer.close()
    return path
