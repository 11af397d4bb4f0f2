from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner, Result

from mini_harness import ToolCallError, ToolRuntime
from mini_harness.cli import cli
from mini_harness.errors import TranscriptCorruptError
from mini_harness.events import ApprovalDecided, FileEffect, ToolCalled, ToolSucceeded
from mini_harness.events.measure import estimate_tokens
from mini_harness.replay import Call, TranscriptFold, context_reports, fold_effects, fold_transcript
from mini_harness.runtime import display_failure
from mini_harness.runtime.context_report import pretty_json
from mini_harness.tools import default_registry
from mini_harness.transcripts import JsonlTranscript, line_hash
from tests.replay import registries

TS = "2026-01-01T00:00:00.000000Z"


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args))


@pytest.fixture(name="log")
def _log(tmp_path: Path) -> Path:
    """Two runs: echo twice and a failing tool, then one echo call."""
    path = tmp_path / "t.jsonl"
    with JsonlTranscript(path) as sink:
        runtime = ToolRuntime(registries.recording(), sink, run_id="a" * 32)
        runtime.dispatch("echo", {"text": "one"})
        runtime.dispatch("echo", {"text": "two"})
        with pytest.raises(ToolCallError):
            runtime.dispatch("flaky", {})
        ToolRuntime(registries.recording(), sink, run_id="b" * 32).dispatch("echo", {"text": "3"})
    return path


def _append(path: Path, *events: object) -> None:
    with JsonlTranscript(path) as sink:
        for event in events:
            sink.append(event)  # type: ignore[arg-type]


class TestFold:
    def test_runs_calls_and_totals(self, log: Path) -> None:
        """A fold lists each run's tools and each call with its status, and totals them."""
        result = fold_transcript(log)
        assert [(r.index, r.run_id[:1], r.succeeded, r.failed) for r in result.runs] == [
            (1, "a", 2, 1),
            (2, "b", 1, 0),
        ]
        assert result.runs[0].tool_names == ["echo", "write_note", "flaky"]
        assert [(c.call_id, c.status) for c in result.calls] == [
            ("aaaaaaaaaaaa-1", "succeeded"),
            ("aaaaaaaaaaaa-2", "succeeded"),
            ("aaaaaaaaaaaa-3", "failed"),
            ("bbbbbbbbbbbb-1", "succeeded"),
        ]
        assert result.calls[2].error is not None
        assert result.calls[2].error.kind == "handler_error"
        assert result.totals.to_json() == {
            "events": 11,
            "runs": 2,
            "calls": 4,
            "succeeded": 3,
            "failed": 1,
            "inDoubt": 0,
            "unknownEvents": 0,
        }
        assert result.ok

    def test_text_report(self, log: Path) -> None:
        """The command prints runs, calls, per-run totals and a summary line, exit 0."""
        result = run("replay", str(log))
        assert result.exit_code == 0
        lines = result.stdout.splitlines()
        assert lines[0] == f"[mini-harness] Replaying {log} (fold: no handler is called)"
        assert lines[1].startswith(f"Run 1 {'a' * 32} started ")
        assert lines[1].endswith(", harness 0.1.0, tools: echo, write_note, flaky")
        assert lines[2].startswith("  aaaaaaaaaaaa-1  echo  succeeded  ")
        assert lines[4].endswith("  handler_error: Tool flaky failed: RuntimeError: down")
        assert f"  Run 2 {'b' * 32}: 1 succeeded, 0 failed, 0 in doubt" in lines
        assert lines[-1] == (
            "[mini-harness] 2 runs, 4 calls: 3 succeeded, 1 failed, 0 in doubt; "
            "no problems in the log"
        )
        assert result.stderr == ""

    def test_in_doubt_call_is_reported(self, log: Path) -> None:
        """A ToolCalled without a terminal event is listed as in doubt and makes exit 1."""
        _append(log, ToolCalled(TS, "b" * 32, "bbbbbbbbbbbb-2", "echo", {"text": "lost"}))
        result = fold_transcript(log)
        assert [(c.call_id, c.status) for c in result.calls][-1] == ("bbbbbbbbbbbb-2", "in-doubt")
        assert result.runs[1].in_doubt == 1
        assert not result.ok
        cli_result = run("replay", str(log))
        assert cli_result.exit_code == 1
        assert "  bbbbbbbbbbbb-2  echo  in doubt (ToolCalled at line 12, no terminal event)" in (
            cli_result.stdout
        )
        assert cli_result.stderr == f"[mini-harness] Error: {log}: 1 call in doubt\n"

    def test_protocol_problems(self, log: Path) -> None:
        """A terminal event with no ToolCalled and a reused callId are protocol problems."""
        _append(
            log,
            ToolSucceeded(TS, "b" * 32, "ghost", "echo", {}, 0.1),
            ToolCalled(TS, "b" * 32, "bbbbbbbbbbbb-1", "echo", {"text": "again"}),
        )
        result = fold_transcript(log)
        assert [(p.kind, p.line, p.message) for p in result.problems] == [
            ("protocol", 12, "ToolSucceeded for call ghost, which has no ToolCalled"),
            ("protocol", 13, "callId bbbbbbbbbbbb-1 is used again"),
        ]
        cli_result = run("replay", str(log))
        assert cli_result.exit_code == 1
        assert "  [protocol] line 13: callId bbbbbbbbbbbb-1 is used again" in cli_result.stdout

    def test_torn_tail_and_integrity(self, log: Path) -> None:
        """An edited line and a torn tail are reported with their lines; the calls still fold."""
        data = log.read_bytes().replace(b'"output":{"text":"two"}', b'"output":{"text":"TWO"}')
        log.write_bytes(data + b'{"type":"ToolCa')
        result = fold_transcript(log)
        assert [(p.kind, p.line) for p in result.problems] == [("integrity", 7), ("torn-tail", 12)]
        assert result.calls[1].output == {"text": "TWO"}
        cli_result = run("replay", str(log))
        assert cli_result.exit_code == 1
        assert "[integrity] line 7: prev does not match the hash of the line before" in (
            cli_result.stdout
        )

    def test_unknown_run_is_a_protocol_problem(self, tmp_path: Path) -> None:
        """A call whose run never started is folded into a run of its own and reported."""
        path = tmp_path / "t.jsonl"
        _append(path, ToolCalled(TS, "c" * 32, "c-1", "echo", {"text": "x"}))
        _append(path, ToolSucceeded(TS, "c" * 32, "c-1", "echo", {"text": "x"}, 1.0))
        result = fold_transcript(path)
        assert [p.message for p in result.problems] == [
            f"ToolCalled for run {'c' * 32}, with no RunStarted"
        ]
        assert result.runs[0].succeeded == 1

    def test_unknown_events_are_counted(self, log: Path) -> None:
        """An event type this version does not know is skipped and counted, not an error."""
        last = log.read_bytes().splitlines()[-1]
        extra = {"type": "ModelReplied", "seq": 11, "ts": TS, "prev": line_hash(last)}
        with log.open("ab") as handle:
            handle.write(orjson.dumps(extra) + b"\n")
        result = fold_transcript(log)
        assert result.totals.unknown_events == 1
        assert result.ok

    def test_a_terminal_of_another_run_or_tool_is_reported(self, log: Path) -> None:
        """A terminal event naming another run ends its call as the ToolCalled recorded it,
        and the fold says what does not match."""
        lines = log.read_bytes().splitlines(keepends=True)
        edited = orjson.loads(lines[10])  # run b's ToolSucceeded, line 11
        edited.update(runId="a" * 32, name="flaky")
        lines[10] = orjson.dumps(edited) + b"\n"
        log.write_bytes(b"".join(lines))
        result = fold_transcript(log)
        last = result.calls[-1]
        assert (last.run_id, last.name, last.status) == ("b" * 32, "echo", "succeeded")
        assert [(p.kind, p.describe()) for p in result.problems] == [
            (
                "protocol",
                f"line 11: ToolSucceeded for call {last.call_id} is in run {'a' * 32}, but its "
                f"ToolCalled is in run {'b' * 32}",
            )
        ]

    def test_held_calls_read_back_whole(self, log: Path) -> None:
        """fold_transcript's calls are the very records the streaming fold yields."""
        streamed = [item for item in TranscriptFold(log) if isinstance(item, Call)]
        held = fold_transcript(log).calls
        assert list(held) == streamed
        assert held == tuple(streamed)
        error = held[2].error
        assert error is not None
        assert (error.kind, error.type) == ("handler_error", "RuntimeError")
        assert [call.input for call in held[:2]] == [{"text": "one"}, {"text": "two"}]
        assert len(held) == 4

    def test_a_line_nested_too_deep_is_damage_with_its_place(self, log: Path) -> None:
        """A line past the one depth limit is refused by line and byte, never a crash."""
        lines = log.read_bytes().splitlines(keepends=True)
        deep = orjson.loads(lines[3])
        lines[3] = orjson.dumps(deep).replace(b'{"text":"one"}', b"[" * 2000 + b"]" * 2000) + b"\n"
        log.write_bytes(b"".join(lines))
        offset = sum(map(len, lines[:3]))
        with pytest.raises(TranscriptCorruptError) as caught:
            fold_transcript(log)
        assert caught.value.message == (
            f"{log}: line 4 (byte {offset}) is damaged: nested deeper than 100 levels; "
            "valid lines follow it"
        )
        result = run("replay", str(log))
        assert result.exit_code == 2
        assert "nested deeper than 100 levels" in result.stderr


class TestEffects:
    """The fold keeps each call's file effects and every approval decision, in file order."""

    def test_effects_and_decisions(self, log: Path) -> None:
        """A call that changed files carries its effects, held and streamed alike; the
        approvals are the fold's decisions."""
        effects = (FileEffect("a.txt", None, "ab" * 32),)
        decided = ApprovalDecided(TS, "b" * 32, "bbbbbbbbbbbb-9", "echo", "approved", "policy", "r")
        _append(
            log,
            decided,
            ToolCalled(TS, "b" * 32, "bbbbbbbbbbbb-9", "echo", {"text": "x"}),
            ToolSucceeded(TS, "b" * 32, "bbbbbbbbbbbb-9", "echo", {}, 1.0, effects=effects),
        )
        fold = TranscriptFold(log)
        streamed = [item for item in fold if isinstance(item, Call)]
        assert [call.effects for call in streamed] == [None] * 4 + [effects]
        assert fold.history.decisions == [decided]
        assert list(fold_transcript(log).calls) == streamed
        calls, decisions = fold_effects(log)
        assert ([call.call_id for call in calls], decisions) == (["bbbbbbbbbbbb-9"], [decided])
        assert calls[0].end_line == 14


class TestSelection:
    @pytest.mark.parametrize("selector", ["2", "bbbb", "b" * 32])
    def test_run_by_index_or_id(self, log: Path, selector: str) -> None:
        """--run takes a 1-based index or a run id (prefix) and shows only that run."""
        result = fold_transcript(log, run=selector)
        assert [r.run_id for r in result.shown] == ["b" * 32]
        assert [c.call_id for c in result.calls] == ["bbbbbbbbbbbb-1"]
        cli_result = run("replay", str(log), "--run", selector)
        assert cli_result.exit_code == 0
        assert "aaaaaaaaaaaa-1" not in cli_result.stdout

    def test_missing_run_is_a_usage_error(self, log: Path) -> None:
        """A --run that matches nothing is exit 2 with one line."""
        result = run("replay", str(log), "--run", "7")
        assert result.exit_code == 2
        assert result.stderr == (
            f"[mini-harness] Error: {log} has no run 7 "
            f"(it has 2 runs: 1 {'a' * 32}, 2 {'b' * 32})\n"
        )


class TestJson:
    def test_same_facts_as_the_api(self, log: Path) -> None:
        """--json prints one document whose calls, runs, problems and totals match the API."""
        result = run("replay", str(log), "--json", "--context-report")
        assert result.exit_code == 0
        document = orjson.loads(result.stdout)
        history = fold_transcript(log)
        expected = history.to_json()
        reports = context_reports(history)
        for entry in expected["runs"]:
            entry["contextReport"] = reports[entry["runId"]]
        assert list(document) == [
            "path",
            "transcriptId",
            "calls",
            "runs",
            "problems",
            "totals",
            "drift",
            "rerun",
            "interrupted",
            "exitCode",
        ]
        for key in ("path", "transcriptId", "calls", "runs", "problems", "totals"):
            assert document[key] == expected[key]
        assert document["rerun"] is None
        assert document["exitCode"] == 0


class TestErrors:
    def test_missing_file(self, tmp_path: Path) -> None:
        """A transcript that does not exist is exit 2 with one line, no traceback."""
        result = run("replay", str(tmp_path / "absent.jsonl"))
        assert result.exit_code == 2
        assert result.stderr.startswith("[mini-harness] Error: cannot read transcript")
        assert len(result.stderr.splitlines()) == 1

    def test_not_a_transcript(self, tmp_path: Path) -> None:
        """A file that is not a transcript is exit 2."""
        path = tmp_path / "notes.txt"
        path.write_text("hello\n")
        result = run("replay", str(path))
        assert result.exit_code == 2
        assert "is not a mini-harness transcript" in result.stderr

    def test_damage_mid_file(self, log: Path) -> None:
        """A damaged line with good lines after it is exit 2 naming the line."""
        lines = log.read_bytes().splitlines(keepends=True)
        lines[4] = b"garbage\n"
        log.write_bytes(b"".join(lines))
        result = run("replay", str(log))
        assert result.exit_code == 2
        assert result.stderr.splitlines()[-1].startswith("[mini-harness] Error: ")
        assert "line 5" in result.stderr

    @pytest.mark.parametrize(
        ("args", "message"),
        [
            (["--registry", "x:y"], "--registry needs --rerun"),
            (["--allow-side-effects"], "--allow-side-effects needs --rerun"),
            (["--log", "out.jsonl"], "--log needs --rerun"),
        ],
    )
    def test_rerun_flags_need_rerun(self, log: Path, args: list[str], message: str) -> None:
        """Re-run options without --rerun are usage errors."""
        result = run("replay", str(log), *args)
        assert result.exit_code == 2
        assert result.stderr == f"[mini-harness] Error: {message}\n"


class TestNoHandlerIsCalled:
    def test_fold_never_calls_a_handler(self, log: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        """Folding (text, JSON, reports, API) never runs a handler of any registry."""
        registries.tripwire_calls.clear()
        monkeypatch.setattr("mini_harness.tools.default_registry", registries.tripwire)

        def refuse(*_: object, **__: object) -> object:
            raise AssertionError("dispatch during a fold")

        monkeypatch.setattr(ToolRuntime, "dispatch", refuse)
        monkeypatch.setattr(ToolRuntime, "dispatch_async", refuse)
        _append(log, ToolCalled(TS, "b" * 32, "bbbbbbbbbbbb-9", "write_note", {"note": "x"}))
        for args in ([], ["--json"], ["--context-report"], ["--run", "2"]):
            assert run("replay", str(log), *args).exit_code == 1  # 1: the in-doubt call
        fold_transcript(log)
        assert registries.tripwire_calls == []


def _report(log: Path) -> str:
    """The first run's context report, rebuilt from the transcript by the API."""
    history = fold_transcript(log)
    return context_reports(history)[history.runs[0].run_id]


def _live_report(stdout: str) -> str:
    """What the live --context-report printed: everything after the first blank line."""
    return stdout.split("\n\n", 1)[1]


SUCCESSES = [
    '{"text":"hello"}',
    '{"text":"h\\u00e9llo \\u2603 \\ud83d\\ude00"}',
    '{"text":"' + "long " * 2000 + '"}',
    '{"text":"","extra":{"nested":[1,2.5,true,null]}}',
]
FAILURES = [
    ("echo", '{"text":123}'),
    ("echo", "{}"),
    ("echo", "[1]"),
    ("nope", '{"a":1}'),
]


class TestContextReport:
    @pytest.mark.parametrize("tool_input", SUCCESSES)
    def test_replayed_report_equals_the_live_one(self, tmp_path: Path, tool_input: str) -> None:
        """For a successful CLI run, the replayed report is byte for byte what was printed live."""
        log = tmp_path / "t.jsonl"
        live = run(
            "--context-report", "--tool", "echo", "--tool-input", tool_input, "--log", str(log)
        )
        assert live.exit_code == 0
        expected = _live_report(live.stdout)
        assert expected.startswith("Context Explorer\n\n")
        replayed = run("replay", str(log), "--context-report")
        assert replayed.exit_code == 0
        block = replayed.stdout.split("Context report, run 1 (", 1)[1].split("\n", 1)[1]
        assert block.split("\n[mini-harness]")[0] == expected.rstrip("\n")
        assert _report(log) == expected

    @pytest.mark.parametrize(("tool", "tool_input"), FAILURES)
    def test_failed_run_reports_the_error(self, tmp_path: Path, tool: str, tool_input: str) -> None:
        """A failed CLI run printed no report live; replay counts the error a model would see."""
        log = tmp_path / "t.jsonl"
        live = run(
            "--context-report", "--tool", tool, "--tool-input", tool_input, "--log", str(log)
        )
        assert live.exit_code == 1
        assert "Context Explorer" not in live.stdout
        records = [orjson.loads(line) for line in log.read_bytes().splitlines()]
        tools, called, failed = records[1]["tools"], records[2], records[3]
        shown = display_failure(tool, called["input"], failed["error"], failed["durationMs"])
        defs, error = estimate_tokens(pretty_json(tools)), estimate_tokens(pretty_json(shown))
        assert _report(log) == (
            "Context Explorer\n\n"
            f"Tool definitions       ~{defs:,} tokens\n"
            f"Tool error             ~{error:,} tokens\n"
            f"Total                  ~{defs + error:,} tokens\n"
        )

    def test_several_results_are_summed(self, tmp_path: Path) -> None:
        """A run with several calls shows one row per kind, with the count in the label."""
        log = tmp_path / "t.jsonl"
        with JsonlTranscript(log) as sink:
            runtime = ToolRuntime(default_registry(), sink)
            for text in ("a", "b"):
                runtime.dispatch("echo", {"text": text})
        report = _report(log)
        assert report.splitlines()[3].startswith("Tool results (2)       ~")
