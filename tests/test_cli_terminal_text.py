"""What a person reads on a terminal (`run`, `show`, `replay`, `resume`) shows a model's
control characters escaped; JSON output and the transcript keep them exactly."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner, Result

from mini_harness.cli import cli
from mini_harness.runtime.terminal import printable

CLIPBOARD = "\x1b]52;c;Y3VybCBldmlsLmV4YW1wbGUgfCBzaA==\x07"  # OSC 52: write the clipboard
TITLE = "\x1b]0;all tests passed\x07"  # set the window title
REVERSED = "\u202etxt.exe"  # right-to-left override
CSI_C1 = "\x9b2J"  # erase the screen, in one C1 byte
HOSTILE = f"Done.{CLIPBOARD}{TITLE} see {REVERSED} {CSI_C1}"
RAW = ("\x1b", "\x07", "\u202e", "\x9b")

NO_KEYS: dict[str, str | None] = dict.fromkeys(
    ("DEEPSEEK_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "MINI_HARNESS_MODEL")
)


@pytest.fixture(name="workspace")
def _workspace(tmp_path: Path) -> Iterator[Path]:
    root = tmp_path / "ws"
    root.mkdir()
    cwd = Path.cwd()
    os.chdir(root)
    try:
        yield root
    finally:
        os.chdir(cwd)


def cli_run(*args: str) -> Result:
    # No width known (pytest-xdist sets COLUMNS=80): lines are printed whole.
    return CliRunner().invoke(cli, list(args), env={**NO_KEYS, "COLUMNS": None})


def script(path: Path, responses: list[dict[str, Any]]) -> str:
    path.write_bytes(orjson.dumps(responses))
    return f"script:{path}"


def assert_escaped(text: str) -> None:
    """Nothing a terminal would act on; every hostile sequence there, visibly escaped."""
    assert not [raw for raw in RAW if raw in text], repr(text)
    assert "\\x1b]52;c;Y3VybCBldmlsLmV4YW1wbGUgfCBzaA==\\x07" in text
    assert "\\x1b]0;all tests passed\\x07" in text
    assert "\\u202etxt.exe" in text


HOSTILE_RUN: list[dict[str, Any]] = [
    {"text": f"Looking.{TITLE}", "toolCalls": [{"name": "echo", "arguments": {"text": HOSTILE}}]},
    {"toolCalls": [{"name": f"nope{TITLE}", "arguments": {}}]},
    {"text": HOSTILE},
]


@pytest.fixture(name="recorded")
def _recorded(workspace: Path, tmp_path: Path) -> tuple[Path, Result]:
    """A run whose task, tool input and output, tool name and answer carry escapes."""
    log = tmp_path / "t.jsonl"
    model = script(tmp_path / "s.json", HOSTILE_RUN)
    result = cli_run("run", f"fix it{CLIPBOARD}{REVERSED}", "--model", model, "--log", str(log))
    return log, result


class TestRun:
    def test_streamed_steps_and_answer_are_escaped(self, recorded: tuple[Path, Result]) -> None:
        """The task, each step, the tool output and the streamed answer show escapes."""
        _, result = recorded
        assert result.exit_code == 0, result.output
        assert_escaped(result.stdout)
        assert_escaped(result.stdout.split("[mini-harness] Step 1")[0])  # the task line
        assert f"[mini-harness] Step 2: {printable('nope' + TITLE)} {{}}" in result.stdout
        assert result.stdout.splitlines()[-2] == printable(HOSTILE)

    def test_whole_answer_is_escaped(self, workspace: Path, tmp_path: Path) -> None:
        """--no-stream prints the answer whole, escaped the same way."""
        model = script(tmp_path / "s.json", [{"text": HOSTILE}])
        result = cli_run("run", "t", "--model", model, "--no-stream", "--no-log")
        assert result.exit_code == 0, result.output
        assert result.stdout.splitlines()[-1] == printable(HOSTILE)

    def test_json_and_transcript_keep_the_exact_text(self, recorded: tuple[Path, Result]) -> None:
        """--json and the transcript hold the model's text unchanged."""
        log, _ = recorded
        finished = orjson.loads(log.read_bytes().splitlines()[-1])
        assert finished["finalText"] == HOSTILE
        model = script(log.parent / "again.json", [{"text": HOSTILE}])
        result = cli_run("run", "t", "--model", model, "--json")
        assert orjson.loads(result.stdout)["finalText"] == HOSTILE


class TestShow:
    @pytest.mark.parametrize("full", [False, True])
    def test_timeline_is_escaped(self, recorded: tuple[Path, Result], full: bool) -> None:
        """`show` (cut to a line, or --full) prints the task, calls and answer escaped."""
        log, _ = recorded
        result = cli_run("show", str(log), *(["--full"] if full else []))
        assert result.exit_code == 0, result.output
        assert_escaped(result.stdout)

    def test_show_json_is_exact(self, recorded: tuple[Path, Result]) -> None:
        """`show --json` prints the events as recorded."""
        log, _ = recorded
        result = cli_run("show", str(log), "--json")
        events = [orjson.loads(line) for line in result.stdout.splitlines()]
        assert events[-1]["finalText"] == HOSTILE


class TestReplay:
    def test_report_is_escaped(self, recorded: tuple[Path, Result]) -> None:
        """`replay` lists the unknown tool's name and its error escaped."""
        log, _ = recorded
        result = cli_run("replay", str(log))
        assert result.exit_code == 0, result.output
        assert printable(f"nope{TITLE}") in result.stdout
        assert not [raw for raw in RAW if raw in result.output]

    def test_offline_agent_replay_is_escaped(self, recorded: tuple[Path, Result]) -> None:
        """`replay --rerun` of the agent run prints each call escaped."""
        log, _ = recorded
        result = cli_run("replay", str(log), "--rerun")
        assert "\\u202etxt.exe" in result.output
        assert printable(f"Step 2: nope{TITLE} {{}}: re-run, same result") in result.output
        assert not [raw for raw in RAW if raw in result.output]


class TestResume:
    def test_an_answered_run_prints_its_answer_escaped(
        self, recorded: tuple[Path, Result], tmp_path: Path
    ) -> None:
        """Resuming a run that had answered prints that answer escaped."""
        log, _ = recorded
        model = script(tmp_path / "unused.json", [{"text": "unused"}])
        result = cli_run("resume", str(log), "--model", model)
        assert "[mini-harness] The run had already answered:" in result.stdout
        assert printable(HOSTILE) in result.stdout
        assert not [raw for raw in RAW if raw in result.output]


class TestWidth:
    def test_run_lines_fit_columns(self, workspace: Path, tmp_path: Path) -> None:
        """COLUMNS bounds the task, step and result lines of a run: each is cut to fit,
        saying how long it was."""
        long = "word " * 40
        model = script(
            tmp_path / "s.json",
            [{"toolCalls": [{"name": "echo", "arguments": {"text": long}}]}, {"text": "Done."}],
        )
        result = CliRunner().invoke(
            cli, ["run", f"Task {long}", "--model", model], env={**NO_KEYS, "COLUMNS": "60"}
        )
        assert result.exit_code == 0, result.output
        lines = result.stdout.splitlines()
        task, step, ok = (
            next(line for line in lines if line.startswith(f"[mini-harness] {start}"))
            for start in ("Task: ", "Step 1: echo ", "  ok: ")
        )
        assert all(len(line) <= 60 for line in (task, step, ok)), (task, step, ok)
        assert task.endswith(f"… ({len('Task: Task ' + long.strip())} chars)")
        assert ok.startswith('[mini-harness]   ok: {"text":"word word')
        assert "…" in ok


def complete(words: str) -> list[str]:
    """What bash completion offers for the last word of `words` (the lines of click's
    bash protocol: `type,value`)."""
    parts = words.split(" ")
    env = {**NO_KEYS, "COMP_WORDS": words, "COMP_CWORD": str(len(parts) - 1)}
    env["_MINI_HARNESS_COMPLETE"] = "bash_complete"
    result = CliRunner().invoke(cli, [], env=env, prog_name="mini-harness")
    return result.stdout.splitlines()


class TestCompletion:
    def test_tool_names(self) -> None:
        """`--tool` completes the names of the tools an agent gets, the root's and run's."""
        assert complete("mini-harness --tool git_") == ["plain,git_status", "plain,git_diff"]
        assert "plain,apply_patch" in complete("mini-harness run task --tool ")

    @pytest.mark.parametrize(
        "words",
        ["mini-harness replay ", "mini-harness transcript verify ", "mini-harness show ",
         "mini-harness run task --log "],
    )  # fmt: skip
    def test_paths(self, words: str) -> None:
        """Transcript arguments and options complete as file paths (the shell's own)."""
        assert complete(words) == ["file,"]


def hostile_tool_run(path: Path) -> Path:
    """A tool run whose run id (so its call ids), timestamps, tool name and input carry
    escapes, recorded with a chain that verifies."""
    from mini_harness import ToolCallError, ToolRuntime
    from mini_harness.tools import default_registry
    from mini_harness.transcripts import JsonlTranscript

    with JsonlTranscript(path) as sink:
        runtime = ToolRuntime(
            default_registry("."),
            sink,
            run_id=f"run{CLIPBOARD}{REVERSED}",
            timestamp=lambda: f"2026-01-01T00:00:00.000000Z{TITLE}",
        )
        runtime.dispatch("echo", {"text": HOSTILE})
        with pytest.raises(ToolCallError):
            runtime.dispatch(f"nope{TITLE}{CSI_C1}", {})
    return path


def strings(value: Any) -> Iterator[str]:
    """Every string in a JSON value, keys included."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield key
            yield from strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from strings(item)


class TestIdsTimestampsAndCorpora:
    @pytest.mark.parametrize("full", [False, True])
    def test_show_escapes_ids_and_timestamps(
        self, workspace: Path, tmp_path: Path, full: bool
    ) -> None:
        """`show` prints run and call ids and timestamps a record holds escaped."""
        log = hostile_tool_run(tmp_path / "t.jsonl")
        result = cli_run("show", str(log), *(["--full"] if full else []))
        assert not [raw for raw in RAW if raw in result.output], repr(result.output)
        call_id = f"run{CLIPBOARD}"[:12] + "-1"  # a call id begins with its run's
        assert f"call {printable(call_id, multiline=False)}" in result.stdout
        assert printable(f"started 2026-01-01T00:00:00.000000Z{TITLE}") in result.stdout

    @pytest.mark.parametrize("command", [["replay"], ["transcript", "verify"]])
    def test_a_corpus_report_is_escaped(
        self, workspace: Path, tmp_path: Path, command: list[str]
    ) -> None:
        """A corpus report shows the files' names and the tools' names escaped."""
        corpus = tmp_path / "corpus"
        corpus.mkdir()
        hostile_tool_run(corpus / "a.jsonl")
        hostile_tool_run(corpus / f"b{TITLE}{REVERSED}.jsonl")
        result = cli_run(*command, str(corpus), "--workers", "1")
        assert not [raw for raw in RAW if raw in result.output], repr(result.output)
        assert printable(f"b{TITLE}{REVERSED}.jsonl") in result.stdout

    @pytest.mark.parametrize(
        "args",
        [
            ["show", "{log}", "--json"],
            ["replay", "{log}", "--json"],
            ["replay", "{log}", "--rerun", "--json"],
            ["transcript", "verify", "{log}", "--json"],
            ["replay", "{log}", "{log}", "--json", "--workers", "1"],
        ],
        ids=["show", "replay", "rerun", "verify", "corpus"],
    )
    def test_json_holds_the_exact_text_and_nothing_a_terminal_acts_on(
        self, workspace: Path, tmp_path: Path, args: list[str]
    ) -> None:
        """JSON output writes U+202E, C1 controls and the like as JSON escapes: the same
        values, but nothing raw for a terminal to act on."""
        log = hostile_tool_run(tmp_path / "t.jsonl")
        result = cli_run(*[arg.format(log=log) for arg in args])
        assert not [raw for raw in RAW if raw in result.stdout], repr(result.stdout)
        if args[0] == "show":
            events = [orjson.loads(line) for line in result.stdout.splitlines()]
            assert events[-2]["name"] == f"nope{TITLE}{CSI_C1}"
        elif args[:2] != ["transcript", "verify"]:  # its document names no id or tool
            assert any(
                CSI_C1 in text or REVERSED in text for text in strings(orjson.loads(result.stdout))
            )
