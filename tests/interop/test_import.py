"""Importing Codex rollouts and Claude Code sessions (hand-written fixtures in fixtures/)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner

from mini_harness.cli import cli
from mini_harness.events import RunOrigin, ToolCalled, ToolFailed, ToolSucceeded, UnknownEvent
from mini_harness.events.vocabulary import MemorySink
from mini_harness.interop import SOURCE_RECORD, ImportResult, import_session
from mini_harness.replay.history import read_history
from mini_harness.transcripts import JsonlTranscript, verify_transcript

FIXTURES = Path(__file__).parent / "fixtures"
CODEX = (
    FIXTURES / "codex" / "rollout-2025-09-01T10-00-00-0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b.jsonl"
)
CODEX_EARLY = FIXTURES / "codex" / "rollout-2025-05-02T09-00-00-early.jsonl"
CLAUDE = FIXTURES / "claude" / "-home-me-app" / "5b1f0e7c-2f4d-4c1e-9a0b-7d3c2e1f0a99.jsonl"


def source_lines(path: Path) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for line in path.read_bytes().splitlines():
        try:
            value = orjson.loads(line)
        except orjson.JSONDecodeError:
            continue
        out.append(value)
    return out


def imported(path: Path, tmp_path: Path) -> tuple[Path, ImportResult]:
    out = tmp_path / (path.name + ".mh.jsonl")
    sink = JsonlTranscript(out)
    result = import_session(str(path), sink)
    sink.close()
    return out, result


def test_codex_every_call_once_with_its_outcome_and_the_sources_usage(tmp_path: Path) -> None:
    out, _result = imported(CODEX, tmp_path)
    lines = source_lines(CODEX)
    calls = {
        line["payload"]["call_id"]
        for line in lines
        if line.get("type") == "response_item"
        and line["payload"]["type"] in ("function_call", "custom_tool_call", "local_shell_call")
    }
    outputs = {
        line["payload"]["call_id"]
        for line in lines
        if line.get("type") == "response_item" and line["payload"]["type"].endswith("_output")
    }
    history = read_history(out, requests=True)
    run = history.runs[0]
    recorded = [c.tool_use_id for c in run.calls]
    assert None not in recorded
    assert sorted(str(r) for r in recorded) == sorted(calls)  # each once
    assert run.succeeded + run.failed == len(outputs)
    assert [c.tool_use_id for c in run.in_doubt_calls] == ["call_never_answered"]
    failed = [c for c in run.calls if c.status == "failed"]
    assert [c.tool_use_id for c in failed] == ["call_pytest"]  # success: false
    last_total = [
        line["payload"]["info"]["total_token_usage"]
        for line in lines
        if line.get("type") == "event_msg"
        and line["payload"].get("type") == "token_count"
        and line["payload"].get("info")
    ][-1]
    assert run.finished is not None
    assert run.finished.usage is not None
    usage = run.finished.usage
    assert (usage.input_tokens, usage.output_tokens, usage.cached_tokens) == (
        last_total["input_tokens"],
        last_total["output_tokens"],
        last_total["cached_input_tokens"],
    )
    assert history.agent.usage == usage
    assert run.model is not None
    assert run.workspace is not None
    assert run.imported is not None
    assert run.model.name == "gpt-5-codex"
    assert run.model.provider == "openai"
    assert run.workspace.path == "/home/me/app"
    assert run.workspace.branch == "main"
    assert run.imported.format == "codex"
    assert run.imported.format_version == "0.46.0"
    assert all(step.hash_matches for step in run.steps)


def test_codex_malformed_lines_are_reported_with_file_and_line(tmp_path: Path) -> None:
    _, result = imported(CODEX, tmp_path)
    where = [(Path(p.path).name, p.line) for p in result.problems]
    assert (CODEX.name, 25) in where  # not JSON
    assert (CODEX.name, 26) in where  # the cut last line
    reasons = " ".join(p.reason for p in result.problems)
    assert "future_line_type" in reasons
    assert "cut short" in reasons


def test_codex_compaction_is_a_context_trim(tmp_path: Path) -> None:
    out, _ = imported(CODEX, tmp_path)
    kinds = [orjson.loads(line)["type"] for line in out.read_bytes().splitlines()]
    assert kinds.count("ContextTrimmed") == 1
    history = read_history(out, requests=True)
    step = history.runs[0].steps[3]
    assert any("Summary:" in m.content for m in step.request.messages)
    assert step.hash_matches


def test_codex_early_layout(tmp_path: Path) -> None:
    out, result = imported(CODEX_EARLY, tmp_path)
    assert not result.problems
    run = read_history(out).runs[0]
    assert (run.succeeded, run.failed, run.in_doubt) == (1, 0, 0)
    assert run.workspace is None
    assert run.task == "List the files."


def test_codex_compressed_rollout_reads_as_the_plain_one(tmp_path: Path) -> None:
    zstandard = pytest.importorskip("zstandard")
    packed = tmp_path / (CODEX.name + ".zst")
    packed.write_bytes(zstandard.ZstdCompressor().compress(CODEX.read_bytes()))
    _, plain = imported(CODEX, tmp_path)
    _, compressed = imported(packed, tmp_path)
    assert (compressed.calls, compressed.results, compressed.usage) == (
        plain.calls,
        plain.results,
        plain.usage,
    )
    assert compressed.sources[0].sha256 != plain.sources[0].sha256  # the bytes on disk


def test_claude_calls_usage_sidechains_and_subagents(tmp_path: Path) -> None:
    out, result = imported(CLAUDE, tmp_path)
    history = read_history(out, requests=True)
    main, sidechain, subagent = history.runs
    assert main.task == "The add test fails: find out why."
    # msg_01 is written over four lines: one model response with two calls.
    first = main.steps[0]
    assert [call.name for call in first.tool_calls] == ["Read", "Grep"]
    assert first.usage is not None
    assert first.usage.output_tokens == 90  # the last line's count, not a sum
    assert sidechain.spawned_by is not None
    assert sidechain.spawned_by.run_id == main.run_id
    assert subagent.spawned_by == RunOrigin(main.run_id, 3)  # the Task's step
    assert subagent.imported is not None
    assert subagent.imported.part == "subagents/agent-4f2a9c1e.jsonl"
    names = sorted(call.name for run in history.runs for call in run.calls)
    assert names == ["Bash", "Bash", "Edit", "Glob", "Grep", "Grep", "Read", "Task"]
    bash = [c for c in main.calls if c.name == "Bash"]
    assert sorted(c.status for c in bash) == ["failed", "in-doubt"]
    # Usage: each response once (its last line), all files.
    responses: dict[str, dict[str, int]] = {}
    files = [CLAUDE, *CLAUDE.with_suffix("").joinpath("subagents").glob("*.jsonl")]
    for path in files:
        for line in source_lines(path):
            if line.get("type") == "assistant":
                responses[line["message"]["id"]] = line["message"]["usage"]
    assert result.usage.output_tokens == sum(u["output_tokens"] for u in responses.values())
    assert result.usage.input_tokens == sum(
        u["input_tokens"] + u["cache_read_input_tokens"] + u["cache_creation_input_tokens"]
        for u in responses.values()
    )
    assert history.agent.usage == result.usage


def test_claude_bookkeeping_is_kept_verbatim_and_malformed_lines_reported(
    tmp_path: Path,
) -> None:
    sink = MemorySink()
    result = import_session(str(CLAUDE), sink)
    kept = [e for e in sink.events if isinstance(e, UnknownEvent) and e.type == SOURCE_RECORD]
    types = {e.data["sourceType"] for e in kept}
    assert {"summary", "file-history-snapshot", "progress", "queue-operation", "system"} <= types
    assert "user/fields" in types  # toolUseResult, thinkingMetadata: kept, not dropped
    snapshot = next(e for e in kept if e.data["sourceLine"] == 20)
    assert snapshot.data["record"]["snapshot"]["trackedFileBackups"]["calc.py"]["version"] == 1
    where = {(p.line, p.reason.split(":")[0]) for p in result.problems}
    assert (28, "unknown line type 'mystery-line'") in where
    assert any(line == 29 for line, _ in where)
    ended = [e for e in sink.events if isinstance(e, ToolSucceeded | ToolFailed)]
    called = [e for e in sink.events if isinstance(e, ToolCalled)]
    assert len({e.call_id for e in ended}) == len(ended) == len(called) - 1


def test_imported_transcript_verifies_but_for_the_call_in_doubt(tmp_path: Path) -> None:
    out, _ = imported(CLAUDE, tmp_path)
    report = verify_transcript(out)
    assert not report.damaged
    assert not report.integrity
    assert not report.protocol
    assert [c.name for c in report.in_doubt] == ["Bash"]


def test_import_command_into_a_directory_then_unchanged(tmp_path: Path) -> None:
    runner = CliRunner()
    target = tmp_path / "out"
    first = runner.invoke(cli, ["import", str(FIXTURES), "-o", str(target), "--json"])
    assert first.exit_code == 1, first.output  # the fixtures have malformed lines
    rows = orjson.loads(first.stdout)["sessions"]
    assert sorted(row["status"] for row in rows) == ["imported"] * 3
    assert sum(row["calls"] for row in rows) == 14
    usage = [sum(row["usage"][key] or 0 for row in rows) for key in ("inputTokens", "outputTokens")]
    assert usage == [18_720, 663]  # as `replay` sums the transcripts, below
    # Each folder of the store the user's alone, as a run's are (tests/test_session_store.py).
    folders = {path.parent for path in target.rglob("*.jsonl")}
    folders |= {
        parent for folder in folders for parent in folder.parents if target in parent.parents
    }
    assert folders
    assert {oct(folder.stat().st_mode & 0o777) for folder in (target, *folders)} == {"0o700"}
    again = runner.invoke(cli, ["import", str(FIXTURES), "-o", str(target), "--json"])
    assert [row["status"] for row in orjson.loads(again.stdout)["sessions"]] == ["unchanged"] * 3
    corpus = runner.invoke(cli, ["replay", str(target)])
    assert "Task" in corpus.stdout
    assert "apply_patch" in corpus.stdout
    assert "18,720 input, 663 output" in corpus.stdout


def test_changed_source_is_imported_again(tmp_path: Path) -> None:
    source = tmp_path / "early.jsonl"
    shutil.copy(CODEX_EARLY, source)
    runner = CliRunner()
    target = tmp_path / "out"
    runner.invoke(cli, ["import", str(source), "-o", str(target)])
    with source.open("a") as file:
        file.write(
            '{"type":"message","role":"user","content":[{"type":"input_text","text":"More"}]}\n'
        )
    again = runner.invoke(cli, ["import", str(source), "-o", str(target), "--json"])
    assert [row["status"] for row in orjson.loads(again.stdout)["sessions"]] == ["updated"]


def test_show_and_replay_take_a_foreign_file_directly() -> None:
    runner = CliRunner()
    shown = runner.invoke(cli, ["show", str(CODEX_EARLY)])
    assert shown.exit_code == 0, shown.output
    assert "List the files." in shown.stdout
    assert "shell" in shown.stdout
    replayed = runner.invoke(cli, ["replay", str(CLAUDE)])
    assert "Task" in replayed.stdout
    assert "Traceback" not in replayed.output


def test_not_a_session_is_a_clear_error(tmp_path: Path) -> None:
    other = tmp_path / "notes.jsonl"
    other.write_text('{"hello": 1}\n')
    result = CliRunner().invoke(cli, ["import", str(other), "-o", str(tmp_path / "out")])
    assert result.exit_code == 2
    assert "neither a Codex rollout nor a Claude Code session" in result.stderr
    assert "Traceback" not in result.output


def test_import_json_escapes_what_a_terminal_acts_on(tmp_path: Path) -> None:
    """import --json prints names from the file system and the foreign file as every
    --json does: a character a terminal acts on (a bidi override, a C1 control) is written
    as its JSON escape, the same JSON value."""
    source = tmp_path / "a\u202eb\u009b.jsonl"
    shutil.copy(CODEX_EARLY, source)
    result = CliRunner().invoke(cli, ["import", str(source), "-o", str(tmp_path / "out"), "--json"])
    assert "\u202e" not in result.stdout
    assert "\u009b" not in result.stdout
    assert "a\\u202eb\\u009b.jsonl" in result.stdout
    (row,) = orjson.loads(result.stdout)["sessions"]
    assert str(source) in orjson.dumps(row).decode()
