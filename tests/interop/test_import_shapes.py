"""Importing the shapes real sessions have (hand-written fixtures in shapes/, modelled on
public Codex 0.114-0.144 rollouts and Claude Code 2.0-2.1 sessions): bookkeeping lines of
newer versions, a result written before its call, a rewind, file effects, searches the
provider ran, durations from the source's timestamps, a user's message once."""

from __future__ import annotations

import hashlib
import importlib.util
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner

from mini_harness.cli import cli
from mini_harness.events import (
    FileEffect,
    ModelRequested,
    ModelResponded,
    RunOrigin,
    ToolSucceeded,
    UnknownEvent,
)
from mini_harness.events.vocabulary import MemorySink
from mini_harness.interop import SOURCE_RECORD, ImportResult, import_session
from mini_harness.replay.history import read_history
from mini_harness.transcripts import JsonlTranscript

SHAPES = Path(__file__).parent / "shapes"
CLAUDE = SHAPES / "claude" / "-home-me-shop" / "7d2c9e41-5a0b-4c3d-8e1f-2a4b6c8d0e1f.jsonl"
CODEX = SHAPES / "codex" / "rollout-2026-05-04T09-00-00-019e0a11-2b3c-7d4e-9f50-61a2b3c4d5e6.jsonl"


def events_of(path: Path) -> tuple[list[Any], ImportResult]:
    sink = MemorySink()
    result = import_session(str(path), sink)
    return list(sink.events), result


def written(path: Path, tmp_path: Path) -> tuple[Path, ImportResult]:
    out = tmp_path / (path.name + ".mh.jsonl")
    sink = JsonlTranscript(out)
    result = import_session(str(path), sink)
    sink.close()
    return out, result


def kept_types(events: list[Any]) -> list[str]:
    return [
        e.data["sourceType"]
        for e in events
        if isinstance(e, UnknownEvent) and e.type == SOURCE_RECORD
    ]


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def test_newer_bookkeeping_lines_are_kept_without_a_report() -> None:
    claude_events, claude_result = events_of(CLAUDE)
    codex_events, codex_result = events_of(CODEX)
    assert claude_result.problems == ()
    assert codex_result.problems == ()
    assert {"ai-title", "last-prompt", "attachment"} <= set(kept_types(claude_events))
    assert "world_state" in kept_types(codex_events)


def test_a_result_written_before_its_call_ends_that_call(tmp_path: Path) -> None:
    out, result = written(CLAUDE, tmp_path)
    main = read_history(out, requests=True).runs[0]
    edit = next(call for call in main.calls if call.name == "Edit")
    assert edit.status == "succeeded"
    assert result.results == result.calls == 4
    assert not any("toolu_edit" in p.reason for p in result.problems)


def test_a_rewind_leaves_a_forked_run_beside_the_main_line(tmp_path: Path) -> None:
    out, result = written(CLAUDE, tmp_path)
    history = read_history(out, requests=True)
    main, branch = history.runs
    assert result.branches == 1
    assert result.run_ids == (main.run_id, branch.run_id)
    # The main line goes on to the session's last message, the prompt sent after the
    # rewind; the branch left behind (a prompt, a pytest call, an answer) is not in it.
    assert [call.name for call in main.calls] == ["Write", "Bash", "Edit"]
    assert main.final_text == "Done: the README has the hours."
    assert branch.task == "Now add a test."
    assert [call.name for call in branch.calls] == ["Bash"]
    assert branch.calls[0].input == {"command": "pytest"}
    assert branch.final_text == "There are no tests yet."
    assert branch.forked_from == RunOrigin(main.run_id, 3)  # after step 3, "Notes written."
    assert branch.spawned_by is None
    # Two calls of one response whose results hang under their own call lines are no
    # rewind: one branch only, and every call once.
    assert sum(len(run.calls) for run in history.runs) == 4


def test_the_cli_says_how_many_branches_a_rewind_left(tmp_path: Path) -> None:
    done = CliRunner().invoke(cli, ["import", str(CLAUDE), "-o", str(tmp_path / "out")])
    assert done.exit_code == 0, done.output
    assert "2 run(s) (1 left by a rewind, as forked runs)" in done.output
    as_json = CliRunner().invoke(
        cli, ["import", str(CLAUDE), "-o", str(tmp_path / "again"), "--json"]
    )
    assert orjson.loads(as_json.stdout)["sessions"][0]["abandonedBranches"] == 1


def test_write_and_edit_record_the_files_they_changed(tmp_path: Path) -> None:
    events, _ = events_of(CLAUDE)
    changed = {e.name: e.effects for e in events if isinstance(e, ToolSucceeded)}
    created, edited = "# Notes\nopen 9-5\n", "# Notes\nopen 9-6\n"
    # The path as the file-history snapshot names it: relative to the session's cwd.
    assert changed["Write"] == (FileEffect("notes.md", None, sha(created)),)
    # The Edit's result has no originalFile: the text is the one the Write left.
    assert changed["Edit"] == (FileEffect("notes.md", sha(created), sha(edited)),)
    assert changed["Bash"] is None
    out, _ = written(CLAUDE, tmp_path)
    report = CliRunner().invoke(cli, ["replay", str(out), "--effects"])
    assert report.exit_code == 0, report.output
    assert report.stdout.count("notes.md") == 2


def test_model_turns_last_from_their_input_to_their_last_line() -> None:
    events, _ = events_of(CLAUDE)
    responded = [e for e in events if isinstance(e, ModelResponded)]
    requested = [e for e in events if isinstance(e, ModelRequested)]
    # msg_A: the prompt at 10:00:00.000, its last line at 10:00:04.000.
    assert responded[0].duration_ms == 4000.0
    assert requested[0].ts == "2026-05-03T10:00:00.000Z"
    # msg_B: the results came at 10:00:04.600, its last line at 10:00:07.800.
    assert responded[1].duration_ms == 3200.0
    codex_events, _ = events_of(CODEX)
    codex_turns = [e for e in codex_events if isinstance(e, ModelResponded)]
    # The prompt at 09:00:01.000; the search and the call at 09:00:05.000.
    assert codex_turns[0].duration_ms == 4000.0
    assert all(turn.duration_ms > 0 for turn in codex_turns)


def test_codex_user_message_is_in_the_run_once(tmp_path: Path) -> None:
    events, _ = events_of(CODEX)
    prompt = "When does the shop open? Check the web too."
    sent = [m.content for e in events if isinstance(e, ModelRequested) for m in e.messages].count(
        prompt
    )
    assert sent == 1
    raw = [orjson.dumps(e.data).decode() for e in events if isinstance(e, UnknownEvent)]
    assert not any(prompt in line for line in raw)
    # The event repeating "Thanks." says something more (a client id): that is kept,
    # without the text.
    kept = [
        e.data["record"]["payload"]
        for e in events
        if isinstance(e, UnknownEvent) and e.data["sourceType"] == "event_msg/user_message"
    ]
    assert kept == [{"type": "user_message", "client_id": "c-7"}]


def test_codex_answer_and_reasoning_summary_are_kept_once() -> None:
    events, _ = events_of(CODEX)
    kept = [e.data for e in events if isinstance(e, UnknownEvent)]
    # The answer is the model's text; the event that streamed it before keeps its phase.
    answers = [
        m.message.content for m in events if isinstance(m, ModelResponded) and m.message.content
    ]
    assert "It opens at 9." in answers
    raw = [orjson.dumps(data).decode() for data in kept]
    echoes = [d for d in kept if d["sourceType"] != "event_msg/task_complete"]
    assert not any("It opens at 9." in orjson.dumps(d).decode() for d in echoes)
    streamed = [
        d["record"]["payload"] for d in kept if d["sourceType"] == "event_msg/agent_message"
    ]
    assert streamed == [{"type": "agent_message", "phase": "final_answer"}]
    # The reasoning's summary stays in the reasoning item kept as it was, not twice.
    assert sum("Looking up the hours" in line for line in raw) == 1
    assert "event_msg/agent_reasoning" not in kept_types(events)


def test_codex_web_search_is_a_call_within_the_response(tmp_path: Path) -> None:
    out, result = written(CODEX, tmp_path)
    run = read_history(out, requests=True).runs[0]
    names = [(call.name, call.status) for call in run.calls]
    assert names == [("web_search", "succeeded"), ("exec_command", "succeeded")]
    assert run.calls[0].input == {
        "type": "search",
        "query": "shop opening hours",
        "queries": ["shop opening hours"],
    }
    # The search did not end the model's turn: it asked for exec_command in the same one.
    assert [call.name for call in run.steps[0].tool_calls] == ["web_search", "exec_command"]
    assert (result.calls, result.results) == (2, 2)


def _checker() -> Any:
    path = Path(__file__).parents[2] / "bench" / "import_check.py"
    spec = importlib.util.spec_from_file_location("import_check", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["import_check"] = module
    spec.loader.exec_module(module)
    return module


def test_checker_finds_the_import_equal_to_its_sources(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "out"
    done = CliRunner().invoke(cli, ["import", str(SHAPES), "-o", str(target)])
    assert done.exit_code == 0, done.output
    check = _checker()
    assert check.main([str(SHAPES), "--imported", str(target)]) == 0
    shown = capsys.readouterr().out
    assert "calls: source 6, imported 6; results: source 6, imported 6" in shown
    assert "sessions differing: 0" in shown


def test_checker_reports_a_call_the_import_lost(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "out"
    CliRunner().invoke(cli, ["import", str(CODEX), "-o", str(target)])
    transcript = next(target.rglob("*.jsonl"))
    lines = transcript.read_bytes().splitlines()
    kept = [line for line in lines if b'"name":"web_search"' not in line]
    transcript.write_bytes(b"\n".join(kept) + b"\n")
    check = _checker()
    assert check.main([str(CODEX), "--imported", str(target)]) == 1
    assert "DIFFERS" in capsys.readouterr().out


def test_a_windows_session_names_files_as_its_snapshots_do(tmp_path: Path) -> None:
    # Claude Code on Windows: the cwd has backslashes, the calls' paths forward slashes
    # and another case of the drive letter; the snapshots name `src\app.ts`.
    head = {
        "isSidechain": False,
        "cwd": "C:\\Users\\me\\shop",
        "sessionId": "w-1",
        "version": "2.1.79",
    }
    path = "c:/Users/me/shop/src/app.ts"

    def line(kind: str, uuid: str, parent: str | None, content: Any, **more: Any) -> bytes:
        role = "assistant" if kind == "assistant" else "user"
        message: dict[str, Any] = {"role": role, "content": content}
        if kind == "assistant":
            message |= {"id": f"msg_{uuid}", "model": "claude-opus-4-6"}
        fields = {"type": kind, "uuid": uuid, "parentUuid": parent, "message": message}
        return orjson.dumps({**head, **fields, **more}) + b"\n"

    def call(name: str, tool_id: str, tool_input: Any) -> list[Any]:
        return [{"type": "tool_use", "id": tool_id, "name": name, "input": tool_input}]

    def result(tool_id: str) -> list[Any]:
        return [{"type": "tool_result", "tool_use_id": tool_id, "content": "ok"}]

    write = {"file_path": path, "content": "let a = 1;\n"}
    edit = {"file_path": path, "old_string": "1", "new_string": "2"}
    created = {"type": "create", "filePath": path, "content": "let a = 1;\n"}
    edited = {"filePath": path, "oldString": "1", "newString": "2", "originalFile": None}
    session = tmp_path / "w-1.jsonl"
    session.write_bytes(
        line("user", "u1", None, "Start the app.")
        + line("assistant", "a1", "u1", call("Write", "t1", write))
        + line("user", "r1", "a1", result("t1"), toolUseResult=created)
        + line("assistant", "a2", "r1", call("Edit", "t2", edit))
        + line("user", "r2", "a2", result("t2"), toolUseResult=edited)
    )
    events, result_ = events_of(session)
    assert result_.problems == ()
    changed = [e.effects for e in events if isinstance(e, ToolSucceeded)]
    assert changed == [
        (FileEffect("src\\app.ts", None, sha("let a = 1;\n")),),
        (FileEffect("src\\app.ts", sha("let a = 1;\n"), sha("let a = 2;\n")),),
    ]


def test_codex_echoes_written_before_both_items_wait_for_theirs(tmp_path: Path) -> None:
    # Codex 0.60 writes the reasoning's and the answer's events first, then both items.
    def item(kind: str, payload: dict[str, Any]) -> bytes:
        return orjson.dumps(
            {"timestamp": "2025-11-22T21:03:00.000Z", "type": kind, "payload": payload}
        )

    rollout = tmp_path / "rollout-2025-11-22T21-00-00-x.jsonl"
    said = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Go"}]}
    summary = [{"type": "summary_text", "text": "**Plan**"}]
    answer = [{"type": "output_text", "text": "Built it."}]
    rollout.write_bytes(
        b"\n".join(
            [
                item("session_meta", {"id": "s-60", "cwd": "/w", "cli_version": "0.60.1"}),
                item("response_item", said),
                item("event_msg", {"type": "agent_reasoning", "text": "**Plan**"}),
                item("event_msg", {"type": "agent_message", "message": "Built it."}),
                item("response_item", {"type": "reasoning", "summary": summary}),
                item("response_item", {"type": "message", "role": "assistant", "content": answer}),
            ]
        )
        + b"\n"
    )
    events, result = events_of(rollout)
    assert result.problems == ()
    assert not {"event_msg/agent_reasoning", "event_msg/agent_message"} & set(kept_types(events))


def test_a_prompt_beside_a_result_leaves_the_result_with_its_call(tmp_path: Path) -> None:
    # A prompt whose parent is the model's line with a call that already has its result
    # as a child: the result is no branch of its own, it ends the call on the main line.
    head = {"isSidechain": False, "cwd": "/w", "sessionId": "r-1", "version": "2.1.90"}

    def line(kind: str, uuid: str, parent: str | None, content: Any) -> bytes:
        role = "assistant" if kind == "assistant" else "user"
        message: dict[str, Any] = {"role": role, "content": content}
        if kind == "assistant":
            message["id"] = f"msg_{uuid}"
        fields = {"type": kind, "uuid": uuid, "parentUuid": parent, "message": message}
        return orjson.dumps({**head, **fields}) + b"\n"

    session = tmp_path / "r-1.jsonl"
    session.write_bytes(
        line("user", "u1", None, "List the files.")
        + line("assistant", "a1", "u1", [{"type": "tool_use", "id": "t1", "name": "Bash"}])
        + line("user", "r1", "a1", [{"type": "tool_result", "tool_use_id": "t1", "content": "a"}])
        + line("user", "u2", "a1", "And the hidden ones.")
        + line("assistant", "a2", "u2", [{"type": "text", "text": "None."}])
    )
    out, result = written(session, tmp_path)
    assert result.problems == ()
    assert result.branches == 0
    (run,) = read_history(out, requests=True).runs
    assert [(call.name, call.status) for call in run.calls] == [("Bash", "succeeded")]
