"""Going on from an imported session: what resuming it tells the model, and what the
imported run says of its calls and of what was asked."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner

from mini_harness.cli import cli
from mini_harness.events import Message, ToolCall
from mini_harness.interop import import_session
from mini_harness.replay.history import read_history
from mini_harness.transcripts import JsonlTranscript

FIXTURES = Path(__file__).parent / "fixtures"
CODEX = (
    FIXTURES / "codex" / "rollout-2025-09-01T10-00-00-0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b.jsonl"
)
CODEX_EARLY = FIXTURES / "codex" / "rollout-2025-05-02T09-00-00-early.jsonl"
CLAUDE = FIXTURES / "claude" / "-home-me-app" / "5b1f0e7c-2f4d-4c1e-9a0b-7d3c2e1f0a99.jsonl"

SESSION = "0199a1b2-0000-7e5f-8a9b-0c1d2e3f4a5b"
TESTS_FAIL = "Exit code: 1\nWall time: 0.5 seconds\nOutput:\n1 failed, 3 passed\n"


def line(ts: int, kind: str, payload: dict[str, Any]) -> dict[str, Any]:
    return {"timestamp": f"2025-09-01T10:00:{ts:02d}.000Z", "type": kind, "payload": payload}


def user(ts: int, text: str, role: str = "user") -> dict[str, Any]:
    content = [{"type": "input_text", "text": text}]
    return line(ts, "response_item", {"type": "message", "role": role, "content": content})


def rollout(tmp_path: Path, *lines: dict[str, Any]) -> Path:
    meta = {"id": SESSION, "timestamp": "2025-09-01T10:00:00.000Z", "cwd": "/home/me/app"}
    meta |= {"cli_version": "0.40.0", "model_provider": "openai"}
    path = tmp_path / f"rollout-2025-09-01T10-00-00-{SESSION}.jsonl"
    rows = [line(0, "session_meta", meta), *lines]
    path.write_bytes(b"".join(orjson.dumps(row) + b"\n" for row in rows))
    return path


def shell(ts: int, call_id: str, command: str, output: str) -> list[dict[str, Any]]:
    arguments = orjson.dumps({"command": command}).decode()
    call = {"type": "function_call", "name": "shell_command", "arguments": arguments}
    result = {"type": "function_call_output", "call_id": call_id, "output": output}
    return [
        line(ts, "response_item", {**call, "call_id": call_id}),
        line(ts + 1, "response_item", result),
    ]


def transcript_of(source: Path, tmp_path: Path) -> Path:
    out = tmp_path / "imported.jsonl"
    sink = JsonlTranscript(out)
    import_session(str(source), sink)
    sink.close()
    return out


def events(path: Path) -> list[dict[str, Any]]:
    return [orjson.loads(row) for row in path.read_bytes().splitlines()]


def test_resuming_an_imported_session_sends_the_tool_text_the_source_recorded(
    tmp_path: Path,
) -> None:
    """The model of a resumed Codex session reads the command's output as Codex's model
    read it, the same text as in the imported requests, not that text quoted as JSON."""
    source = rollout(tmp_path, user(1, "Run the tests."), *shell(2, "call_1", "pytest", TESTS_FAIL))
    log = transcript_of(source, tmp_path)
    workspace = tmp_path / "app"
    workspace.mkdir()
    args = ["resume", str(log), "--model", "mock", "--workspace", str(workspace)]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    requests = [e for e in events(log) if e["type"] == "ModelRequested"]
    resumed = requests[-1]["messages"]
    assert resumed[-1] == {
        "role": "tool",
        "content": TESTS_FAIL,
        "toolCallId": "call_1",
        "name": "shell_command",
    }


@pytest.mark.parametrize("source", [CODEX, CODEX_EARLY, CLAUDE], ids=["codex", "early", "claude"])
def test_each_imported_call_tells_the_model_what_its_requests_say(
    source: Path, tmp_path: Path
) -> None:
    """For every call of an imported session that ended, the result a continuation sends
    (Call.result_message) is the tool message the imported requests carry."""
    history = read_history(transcript_of(source, tmp_path), requests=True)
    sent: dict[str, Message] = {}
    compared = 0
    for run in history.runs:
        for step in run.steps:
            for message in step.request.messages:
                if message.role == "tool" and message.tool_call_id is not None:
                    # As first sent: a later compaction replaces it with a placeholder.
                    sent.setdefault(message.tool_call_id, message)
        for call in run.calls:
            if call.ended and call.tool_use_id in sent:
                asked = ToolCall(call.tool_use_id, call.name, "")
                assert call.result_message(asked) == sent[call.tool_use_id]
                compared += 1
    assert compared > 0


def test_a_codex_runs_task_is_the_first_prompt_a_person_wrote(tmp_path: Path) -> None:
    """`sessions` and `replay DIR` show what was asked, not the permissions, environment
    and AGENTS.md text Codex puts first; those stay in the run's first request."""
    permissions = "<permissions instructions>\nFilesystem sandboxing defines ..."
    agents = "# AGENTS.md instructions for /home/me/app\n\n<INSTRUCTIONS>\nBe brief.\n"
    environment = "<environment_context>\n  <cwd>/home/me/app</cwd>\n</environment_context>"
    source = rollout(
        tmp_path,
        user(1, permissions, role="developer"),
        user(2, agents),
        user(3, environment),
        user(4, "Why does the add test fail?"),
        *shell(5, "call_1", "pytest", TESTS_FAIL),
    )
    history = read_history(transcript_of(source, tmp_path), requests=True)
    (run,) = history.runs
    assert run.task == "Why does the add test fail?"
    sent = [m.content for m in run.steps[0].request.messages]
    assert sent == [permissions, agents, environment, "Why does the add test fail?"]


def test_a_codex_run_with_no_prompt_keeps_its_first_message_as_task(tmp_path: Path) -> None:
    environment = "<environment_context>\n  <cwd>/home/me/app</cwd>\n</environment_context>"
    source = rollout(tmp_path, user(1, environment), *shell(2, "call_1", "ls", "Exit code: 0"))
    (run,) = read_history(transcript_of(source, tmp_path)).runs
    assert run.task == environment


def test_a_claude_runs_task_skips_local_commands_and_their_caveat(tmp_path: Path) -> None:
    session = tmp_path / "3c1d9a4e-0000-4c1e-9a0b-7d3c2e1f0a99.jsonl"
    base: dict[str, Any] = {"sessionId": session.stem, "cwd": "/home/me/app", "version": "2.0.1"}
    caveat = (
        "<local-command-caveat>Caveat: The messages below were generated ...</local-command-caveat>"
    )
    texts = [
        (caveat, True),
        ("<command-name>/model</command-name>\n<command-args></command-args>", False),
        ("<local-command-stdout>Set model to opus</local-command-stdout>", False),
        ("What do the makefile commands do?", False),
    ]
    rows = []
    parent = None
    for number, (text, meta) in enumerate(texts, 1):
        row: dict[str, Any] = {**base, "type": "user", "uuid": f"u{number}", "parentUuid": parent}
        row |= {
            "timestamp": f"2025-09-01T10:00:0{number}.000Z",
            "message": {"role": "user", "content": text},
        }
        if meta:
            row["isMeta"] = True
        rows.append(row)
        parent = row["uuid"]
    answer: dict[str, Any] = {
        "id": "msg_1",
        "role": "assistant",
        "model": "claude-sonnet-4",
        "content": [{"type": "text", "text": "They build and test."}],
    }
    rows.append(
        {
            **base,
            "type": "assistant",
            "uuid": "a1",
            "parentUuid": parent,
            "timestamp": "2025-09-01T10:00:09.000Z",
            "message": answer,
        }
    )
    session.write_bytes(b"".join(orjson.dumps(row) + b"\n" for row in rows))
    (run,) = read_history(transcript_of(session, tmp_path)).runs
    assert run.task == "What do the makefile commands do?"


def kept(path: Path, kind: str) -> list[dict[str, Any]]:
    return [
        e["record"]["payload"]
        for e in events(path)
        if e["type"] == "SourceRecord" and e["sourceType"] == kind
    ]


def test_codex_task_complete_does_not_repeat_the_answer(tmp_path: Path) -> None:
    """The answer is in the run once, as the model's message; the end of the turn keeps
    what else it says. One repeating no answer is kept whole."""
    answer = "One test fails: add subtracts."
    reply: dict[str, Any] = {"type": "message", "role": "assistant"}
    reply["content"] = [{"type": "output_text", "text": answer}]
    done = {"type": "task_complete", "turn_id": "t1", "duration_ms": 2500}
    source = rollout(
        tmp_path,
        user(1, "Why does the add test fail?"),
        *shell(2, "call_1", "pytest", TESTS_FAIL),
        line(4, "response_item", reply),
        line(5, "event_msg", {**done, "last_agent_message": answer}),
        user(6, "And now?"),
        line(7, "event_msg", {**done, "turn_id": "t2", "last_agent_message": "Something else."}),
    )
    log = transcript_of(source, tmp_path)
    first, second = kept(log, "event_msg/task_complete")
    assert first == done
    assert second == {**done, "turn_id": "t2", "last_agent_message": "Something else."}
    (run,) = read_history(log).runs
    assert run.finished is not None
    assert run.finished.final_text == answer


def exec_command(ts: int, call_id: str, cmd: str, code: int) -> list[dict[str, Any]]:
    header = f"Chunk ID: 5853d5\nWall time: 0.0100 seconds\nProcess exited with code {code}\n"
    output = header + "Original token count: 0\nOutput:\n"
    arguments = orjson.dumps({"cmd": cmd}).decode()
    call = {"type": "function_call", "name": "exec_command", "arguments": arguments}
    result = {"type": "function_call_output", "call_id": call_id, "output": output}
    return [
        line(ts, "response_item", {**call, "call_id": call_id}),
        line(ts + 1, "response_item", result),
    ]


def test_a_codex_command_records_its_exit_code_as_run_command_does(tmp_path: Path) -> None:
    """A command that exited non-zero succeeded as a call, its `exitCode` a field of the
    output (as run_command records it), beside the text the model read; a re-run that
    exits non-zero again matches it, one that exits 0 now succeeds."""
    source = rollout(
        tmp_path,
        user(1, "Run the tests."),
        *shell(2, "call_1", "pytest", TESTS_FAIL),
        *exec_command(4, "call_2", "exit 3", 3),
        *exec_command(6, "call_3", "true", 1),
        *exec_command(8, "call_4", "true", 0),
    )
    log = transcript_of(source, tmp_path)
    (run,) = read_history(log, requests=True).runs
    first = run.calls[0]
    assert first.status == "succeeded"
    assert first.output == {"exitCode": 1, "text": TESTS_FAIL}
    codes = [call.output for call in run.calls[1:]]
    assert [code["exitCode"] for code in codes if isinstance(code, dict)] == [3, 1, 0]
    workspace = tmp_path / "app"
    workspace.mkdir()
    args = ["replay", str(log), "--rerun", "--json", "--workspace", str(workspace)]
    args += ["--allow-side-effects", "--allow-unverified", "--approve", "auto"]
    result = CliRunner().invoke(cli, args)
    outcomes = {c["callId"]: c["rerun"]["outcome"] for c in orjson.loads(result.stdout)["calls"]}
    assert [outcomes[call.call_id] for call in run.calls[1:]] == [
        "matched",
        "now-succeeds",
        "matched",
    ]
