"""Transcripts for the timeline tests, written line by line with a valid hash chain.

The agent run uses the wire names of the agent and approval events (docs/agent.md): the
reader types them when this version declares them, and keeps them as unknown events
otherwise; the timeline reads them by wire name either way.
"""

from __future__ import annotations

from pathlib import Path

import orjson

from mini_harness.events import FORMAT_VERSION, JsonObject
from mini_harness.transcripts import line_hash

TS = "2026-01-01T00:00:0{}.000000Z"
AGENT = "a" * 32
TOOLS = "b" * 32
HOSTILE = '<script>window.pwned=1</script><img src=x onerror="window.pwned=1">'
ECHO = {
    "name": "echo",
    "description": "Return the input.",
    "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}},
}


def chained(events: list[JsonObject], *, transcript_id: str = "f" * 32) -> bytes:
    """The bytes of a transcript: a header, then `events` with seq, ts (if missing) and prev."""
    header: JsonObject = {
        "type": "TranscriptStarted",
        "seq": 0,
        "ts": TS.format(0),
        "format": "mini-harness.transcript",
        "version": FORMAT_VERSION,
        "transcriptId": transcript_id,
    }
    lines = [orjson.dumps(header)]
    for seq, event in enumerate(events, start=1):
        line: JsonObject = {"type": event["type"], "seq": seq, "ts": event.get("ts", TS.format(1))}
        line["prev"] = line_hash(lines[-1])
        line.update({k: v for k, v in event.items() if k not in {"type", "ts"}})
        lines.append(orjson.dumps(line))
    return b"".join(line + b"\n" for line in lines)


def usage(inputs: int | None, outputs: int | None) -> JsonObject:
    return {"inputTokens": inputs, "outputTokens": outputs, "cachedTokens": None}


def agent_events() -> list[JsonObject]:
    """An agent run of four steps: a listing, a read that asked for approval (its output
    hostile HTML), a denied patch after a retried request and a trim, then the answer."""
    run = {"runId": AGENT}

    def request(step: int, messages: list[JsonObject]) -> JsonObject:
        return {
            "type": "ModelRequested",
            **run,
            "step": step,
            "requestId": f"req-{step}",
            "messages": messages,
            "params": {},
            "requestHash": f"{step}" * 64,
        }

    def respond(step: int, text: str, calls: list[JsonObject], tokens: int) -> JsonObject:
        message: JsonObject = {"role": "assistant", "content": text}
        if calls:
            message["toolCalls"] = calls
        return {
            "type": "ModelResponded",
            **run,
            "requestId": f"req-{step}",
            "message": message,
            "finishReason": "tool_calls" if calls else "stop",
            "usage": usage(tokens, 10),
            "durationMs": 250.0,
            "responseId": f"resp-{step}",
        }

    def called(step: int, call: str, name: str, tool_input: JsonObject) -> JsonObject:
        return {
            "type": "ToolCalled",
            **run,
            "callId": call,
            "name": name,
            "input": tool_input,
            "toolUseId": f"use-{call}",
            "step": step,
        }

    def ok(call: str, name: str, output: JsonObject) -> JsonObject:
        return {
            "type": "ToolSucceeded",
            **run,
            "callId": call,
            "name": name,
            "output": output,
            "durationMs": 1.5,
        }

    long_text = "word " * 400
    return [
        {
            "type": "RunStarted",
            **run,
            "ts": TS.format(1),
            "harness": "0.1.0",
            "tools": [ECHO],
            "task": "What is in this project?",
            "model": {"provider": "script", "name": "demo.json"},
            "systemPrompt": "You are a test.",
            "projectRules": [{"path": "AGENTS.md", "sha256": "0" * 64, "content": "Be brief."}],
            "maxSteps": 10,
        },
        request(
            1,
            [
                {"role": "system", "content": "You are a test."},
                {"role": "user", "content": "What is in this project?"},
            ],
        ),
        respond(
            1,
            "Let me look at the files.",
            [{"id": "use-c1", "name": "list_files", "arguments": "{}"}],
            100,
        ),
        called(1, "c1", "list_files", {}),
        ok("c1", "list_files", {"files": [{"path": "README.md", "size": 20}], "note": long_text}),
        request(
            2, [{"role": "tool", "content": "files", "toolCallId": "use-c1", "name": "list_files"}]
        ),
        respond(
            2, "", [{"id": "use-c2", "name": "read_file", "arguments": '{"path":"README.md"}'}], 200
        ),
        called(2, "c2", "read_file", {"path": "README.md"}),
        {
            "type": "ApprovalRequested",
            **run,
            "callId": "c2",
            "name": "read_file",
            "rule": "ask-reads",
            "shown": "read_file README.md",
        },
        {
            "type": "ApprovalDecided",
            **run,
            "callId": "c2",
            "name": "read_file",
            "decision": "approved",
            "by": "user",
        },
        ok("c2", "read_file", {"path": "README.md", "text": HOSTILE}),
        {
            "type": "ContextTrimmed",
            **run,
            "step": 3,
            "replaced": [
                {
                    "index": 2,
                    "toolCallId": "use-c1",
                    "name": "list_files",
                    "tokens": 500,
                    "content": "[trimmed]",
                }
            ],
            "tokensBefore": 900,
            "tokensAfter": 400,
            "budget": 500,
        },
        request(
            3, [{"role": "tool", "content": "text", "toolCallId": "use-c2", "name": "read_file"}]
        ),
        {
            "type": "ModelFailed",
            **run,
            "requestId": "req-3",
            "error": {"kind": "rate_limited", "status": 429, "message": "slow down"},
            "attempt": 1,
            "durationMs": 30.0,
        },
        respond(
            3,
            "I will patch it.",
            [{"id": "use-c3", "name": "apply_patch", "arguments": '{"patch":"..."}'}],
            300,
        ),
        called(3, "c3", "apply_patch", {"patch": "--- a/x\n+++ b/x\n"}),
        {
            "type": "ApprovalDecided",
            **run,
            "callId": "c3",
            "name": "apply_patch",
            "decision": "denied",
            "by": "policy",
            "rule": "deny-writes",
            "reason": "writes are denied",
        },
        {
            "type": "ToolFailed",
            **run,
            "callId": "c3",
            "name": "apply_patch",
            "error": {"kind": "handler_error", "message": "Denied: writes are denied"},
            "durationMs": 0.2,
        },
        request(
            4,
            [{"role": "tool", "content": "denied", "toolCallId": "use-c3", "name": "apply_patch"}],
        ),
        respond(4, "It is a tiny project.\nSecond line.", [], 400),
        {"type": "Checkpoint", **run, "note": "an event type of a later version"},
        {
            "type": "RunFinished",
            **run,
            "ts": TS.format(5),
            "stopReason": "final",
            "finalText": "It is a tiny project.",
            "steps": 4,
            "usage": usage(1000, 40),
        },
    ]


def tool_events() -> list[JsonObject]:
    """A tool run: one echo that succeeded, one that failed, one left in doubt."""
    run = {"runId": TOOLS}
    return [
        {"type": "RunStarted", **run, "harness": "0.1.0", "tools": [ECHO]},
        {"type": "ToolCalled", **run, "callId": "e1", "name": "echo", "input": {"text": "hi"}},
        {
            "type": "ToolSucceeded",
            **run,
            "callId": "e1",
            "name": "echo",
            "output": {"text": "hi"},
            "durationMs": 0.5,
        },
        {"type": "ToolCalled", **run, "callId": "e2", "name": "echo", "input": {"text": 3}},
        {
            "type": "ToolFailed",
            **run,
            "callId": "e2",
            "name": "echo",
            "error": {
                "kind": "invalid_input",
                "message": "Invalid input for echo.text: expected string",
            },
            "durationMs": 0.1,
        },
        {
            "type": "ToolCalled",
            **run,
            "callId": "e3",
            "name": "echo",
            "input": {"text": "never ended"},
        },
    ]


def write(path: Path, events: list[JsonObject]) -> Path:
    path.write_bytes(chained(events))
    return path


def record_reads(workspace: Path) -> Path:
    """A transcript recorded by the CLI in `workspace` (the current directory): read_file
    a.txt ("hello"), then echo."""
    from click.testing import CliRunner

    from mini_harness.cli import cli

    (workspace / "a.txt").write_text("hello\n")
    log = workspace / "t.jsonl"
    runner = CliRunner()
    for tool, tool_input in (("read_file", '{"path":"a.txt"}'), ("echo", '{"text":"x"}')):
        args = ["--tool", tool, "--tool-input", tool_input, "--log", str(log)]
        assert runner.invoke(cli, args).exit_code == 0
    return log


SCRIPT = {
    "responses": [
        {"text": "Let me look.", "toolCalls": [{"name": "list_files", "arguments": {}}]},
        {"toolCalls": [{"name": "read_file", "arguments": {"path": "README.md"}}]},
        {"text": "A tiny project."},
    ]
}


def record_agent_run(workspace: Path) -> Path:
    """A real agent run recorded by `mini-harness run` with a scripted model: it lists
    the files of `workspace`, reads its README.md, and answers."""
    from click.testing import CliRunner

    from mini_harness.cli import cli

    (workspace / "README.md").write_text("# Demo\nA tiny project.\n" * 20)
    script = workspace / "script.json"
    script.write_bytes(orjson.dumps(SCRIPT))
    log = workspace / "agent.jsonl"
    args = [
        "run",
        "What is this?",
        "--model",
        f"script:{script}",
        "--log",
        str(log),
        "--workspace",
        str(workspace),
    ]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    return log


def record_undo(workspace: Path) -> tuple[Path, str]:
    """A transcript of two runs recorded in `workspace`: an apply_patch call changing
    app.py, then `mini-harness undo` of it; with the patch call's id."""
    from click.testing import CliRunner

    from mini_harness.cli import cli
    from mini_harness.runtime import ToolRegistry, ToolRuntime
    from mini_harness.tools import register_coding_tools
    from mini_harness.transcripts import JsonlTranscript

    (workspace / "app.py").write_text("a = 1\nb = 2\n")
    registry = ToolRegistry()
    register_coding_tools(registry, workspace, sandbox=False)
    log = workspace / "t.jsonl"
    patch = "--- a/app.py\n+++ b/app.py\n@@ -1,2 +1,2 @@\n a = 1\n-b = 2\n+b = 3\n"
    with JsonlTranscript(log) as sink:
        call_id = ToolRuntime(registry, sink).dispatch("apply_patch", {"patch": patch}).call_id
    args = ["undo", str(log), "--call", call_id, "--workspace", str(workspace)]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    return log, call_id
