"""`mini-harness run`: the output shape, the log, the context report, exit codes."""

from __future__ import annotations

import math
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner, Result

from mini_harness.agent import Message, ModelResponse
from mini_harness.cli import cli
from mini_harness.cli.output import forget_keys, protect
from mini_harness.cli.printing import PrintingReporter
from mini_harness.replay import agent_context_report, fold_agent_runs
from mini_harness.transcripts import Redactor, verify_transcript

DEMO: list[dict[str, Any]] = [
    {"text": "Looking.", "toolCalls": [{"name": "list_files", "arguments": {}}]},
    {"toolCalls": [{"name": "read_file", "arguments": {"path": "README.md"}}]},
    {"text": "It is a tiny project."},
]

INTERRUPTING_REGISTRY = """
from mini_harness import ToolRegistry


def interrupt(data):
    raise KeyboardInterrupt


registry = ToolRegistry()
registry.add("interrupt", interrupt, description="Ctrl-C.", input_schema={"type": "object"})


def leave(data):
    raise SystemExit(3)


def close(data):
    raise GeneratorExit


registry.add("leave", leave, description="Exits.", input_schema={"type": "object"})
registry.add("close", close, description="Closes.", input_schema={"type": "object"})
"""


SLOW_FAILING_REGISTRY = """
import time

from mini_harness import ToolRegistry


def slow(data):
    time.sleep(0.05)
    raise ValueError("too slow")


registry = ToolRegistry()
registry.add("slow", slow, description="Fails slowly.", input_schema={"type": "object"})
"""


def events_of(events: list[Any], kind: str) -> list[Any]:
    return [event for event in events if event["type"] == kind]


@pytest.fixture(name="workspace")
def _workspace(tmp_path: Path) -> Iterator[Path]:
    """A workspace that is also the working directory, with no API key in sight."""
    root = tmp_path / "ws"
    root.mkdir()
    (root / "README.md").write_text("# Demo\n")
    cwd = Path.cwd()
    os.chdir(root)
    try:
        yield root
    finally:
        os.chdir(cwd)


def script(path: Path, responses: list[dict[str, Any]]) -> str:
    path.write_bytes(orjson.dumps(responses))
    return f"script:{path}"


NO_KEYS: dict[str, str | None] = dict.fromkeys(
    ("DEEPSEEK_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "MINI_HARNESS_MODEL")
)


AGENT_TOOLS = (
    "echo, list_files, read_file, search_text, git_status, git_diff, apply_patch, run_command"
)
"""The built-in tools an agent run gets, in order."""


def recorded(stdout: str) -> str:
    """Output with the store transcript's name and the run id (which differ per run) out."""
    return re.sub(r"\d{8}T\d{6}Z-[0-9a-f]{32}|[0-9a-f]{32}", "<run>", stdout)


def run(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), env=NO_KEYS)


class TestOutput:
    def test_mock_by_default(self, workspace: Path) -> None:
        """Without a key the mock answers, in the reference's shape, exit 0."""
        result = run("run", "hello")
        assert result.exit_code == 0
        lines = result.stdout.splitlines()
        assert lines[:3] == [
            "[mini-harness] Task: hello",
            "[mini-harness] Model provider: mock",
            "[mini-harness] Mock model response:",
        ]
        assert "hello" in lines[3]
        assert result.stderr == ""

    def test_steps_as_they_happen(self, workspace: Path, tmp_path: Path) -> None:
        """Each step prints the tool call with its input and its outcome, then the answer."""
        model = script(tmp_path / "s.json", DEMO)
        result = run("run", "what is it?", "--model", model)
        assert result.exit_code == 0, result.output
        lines = result.stdout.splitlines()
        assert lines[1] == f"[mini-harness] Model provider: {model}"
        assert lines[2:5] == [
            "[mini-harness] Model response:",
            "Looking.",
            "[mini-harness] Step 1: list_files {}",
        ]
        assert lines[5].startswith('[mini-harness]   ok: {"path":".","files":[')
        assert lines[6] == '[mini-harness] Step 2: read_file {"path":"README.md"}'
        assert lines[-3:-1] == ["[mini-harness] Model response:", "It is a tiny project."]
        assert lines[-1].startswith("[mini-harness] Transcript: ")

    def test_failed_call_line(self, workspace: Path, tmp_path: Path) -> None:
        """A failed call prints its error in one line."""
        model = script(tmp_path / "s.json", [{"toolCalls": [{"name": "nope"}]}, {"text": "ok"}])
        result = run("run", "t", "--model", model, "--no-stream")
        assert (
            f"[mini-harness]   failed: Unknown tool: nope. Registered tools: {AGENT_TOOLS}"
            in result.stdout.splitlines()
        )

    def test_json(self, workspace: Path, tmp_path: Path) -> None:
        """--json prints one JSON document: final text, stop reason, steps, usage, run id."""
        result = run("run", "t", "--model", script(tmp_path / "s.json", DEMO), "--json")
        assert result.exit_code == 0
        document = orjson.loads(result.stdout)
        assert document["finalText"] == "It is a tiny project."
        assert (document["stopReason"], document["steps"]) == ("final", 3)
        assert set(document) == {"runId", "stopReason", "finalText", "steps", "usage"}


class TestLogAndReport:
    def test_log_parents_created(self, workspace: Path, tmp_path: Path) -> None:
        """--log creates parent directories and records a transcript that verifies."""
        log = tmp_path / "logs" / "deep" / "t.jsonl"
        result = run("run", "t", "--model", script(tmp_path / "s.json", DEMO), "--log", str(log))
        assert result.exit_code == 0
        assert verify_transcript(log).ok
        (agent_run,) = fold_agent_runs(log)
        assert f"[mini-harness] Transcript: {log} (run {agent_run.run_id})" in result.stdout

    def test_unusable_log_is_a_usage_error_before_anything_is_printed(
        self, workspace: Path, tmp_path: Path
    ) -> None:
        """A --log whose parent is a file exits 2 with the root dispatch's one error line,
        before the task or the provider is printed."""
        (tmp_path / "afile").write_text("")
        log = tmp_path / "afile" / "x.jsonl"
        result = run("task", "--log", str(log))
        assert result.exit_code == 2
        assert result.stdout == ""
        assert result.stderr == (
            f"[mini-harness] Error: cannot open transcript {log}: Not a directory\n"
        )

    def test_a_script_key_it_does_not_know_exits_2_naming_it(
        self, workspace: Path, tmp_path: Path
    ) -> None:
        """A script with `tool_calls` (not `toolCalls`) exits 2 naming the field, before any
        model request, instead of answering the text and never calling the tool."""
        model = script(tmp_path / "s.json", [{"text": "a", "tool_calls": [{"name": "echo"}]}])
        result = run("run", "t", "--model", model)
        assert result.exit_code == 2
        assert "response 1.tool_calls: unknown key (did you mean 'toolCalls'?)" in result.stderr
        assert "Model response" not in result.stdout

    def test_a_fifo_named_agents_md_is_skipped(self, workspace: Path) -> None:
        """A FIFO named AGENTS.md does not hang the run: it is skipped with one warning."""
        os.mkfifo(workspace / "AGENTS.md")
        result = run("run", "hello")
        assert result.exit_code == 0
        assert result.stderr == (
            "[mini-harness] Warning: project rules AGENTS.md skipped: not a regular file\n"
        )

    def test_context_report_replays_byte_for_byte(self, workspace: Path, tmp_path: Path) -> None:
        """The live report of the last request is what the fold rebuilds from the log."""
        (workspace / "AGENTS.md").write_text("Be brief.\n")
        log = tmp_path / "t.jsonl"
        model = script(tmp_path / "s.json", DEMO)
        result = run("run", "t", "--model", model, "--log", str(log), "--context-report")
        assert result.exit_code == 0
        live = result.stdout.split("\n\n", 1)[1]
        assert live.startswith("Context Explorer\n\nSystem prompt ")
        assert "Project rules          ~" in live
        assert live == agent_context_report(log)
        assert agent_context_report(log, step=1) != live

    def test_tool_first(self, workspace: Path, tmp_path: Path) -> None:
        """--tool runs first; its result is in the context as the Tool result part."""
        model = script(tmp_path / "s.json", [{"text": "ok"}])
        result = run(
            "run", "t", "--model", model, "--tool", "echo", "--tool-input", '{"text":"hi"}',
            "--context-report",
        )  # fmt: skip
        assert result.exit_code == 0
        assert result.stdout.splitlines()[-2].startswith("Tool result            ~")


def logged_tool_input(log: Path) -> Any:
    """The input of the first tool call recorded in `log`."""
    for line in log.read_bytes().splitlines():
        event = orjson.loads(line)
        if event["type"] == "ToolCalled":
            return event["input"]
    raise AssertionError("no ToolCalled event")


class TestToolFirst:
    @pytest.mark.parametrize("task", [["run", "t"], ["t"]])
    def test_tool_input_from_a_file(self, workspace: Path, tmp_path: Path, task: list[str]) -> None:
        """`--tool-input @FILE` is read from the file, as the root dispatch reads it."""
        (tmp_path / "in.json").write_text('{"text": "from the file"}')
        log = tmp_path / "t.jsonl"
        model = script(tmp_path / "s.json", [{"text": "ok"}])
        result = run(
            *task, "--model", model, "--tool", "echo", "--tool-input",
            f"@{tmp_path / 'in.json'}", "--log", str(log),
        )  # fmt: skip
        assert result.exit_code == 0, result.output
        assert logged_tool_input(log) == {"text": "from the file"}

    def test_a_failed_tool_before_the_task_is_printed(self, workspace: Path) -> None:
        """`--tool NAME "TASK"`: the tool's failure is printed before the agent starts, and
        the mock repeats the task."""
        result = run("--tool", "read_file", "count the files")
        assert result.exit_code == 0, result.output
        lines = result.stdout.splitlines()
        assert lines[:5] == [
            "[mini-harness] Task: count the files",
            "[mini-harness] Model provider: mock",
            "[mini-harness] Before the task: read_file {}",
            "[mini-harness]   failed: Invalid input for read_file: "
            'missing required property "path"',
            "[mini-harness] Mock model response:",
        ]
        assert "Your task was: count the files" in lines[5]

    def test_a_tool_before_the_task_prints_its_outcome(self, workspace: Path) -> None:
        """A tool run before the task prints its call and its `ok:` line, as a step does."""
        result = run("run", "t", "--tool", "echo", "--tool-input", '{"text":"hi"}')
        assert result.exit_code == 0, result.output
        assert result.stdout.splitlines()[2:4] == [
            '[mini-harness] Before the task: echo {"text":"hi"}',
            '[mini-harness]   ok: {"text":"hi"}',
        ]

    def test_a_failed_tool_before_the_task_tells_its_real_duration(
        self, workspace: Path, tmp_path: Path
    ) -> None:
        """The model is told how long a failed tool before the task ran, as its ToolFailed
        records it, not 0 ms."""
        (workspace / "slow.py").write_text(SLOW_FAILING_REGISTRY)
        log = tmp_path / "t.jsonl"
        model = script(tmp_path / "s.json", [{"text": "ok"}])
        result = run(
            "run", "t", "--model", model, "--registry", "slow:registry", "--approve", "auto",
            "--tool", "slow",
            "--log", str(log),
        )  # fmt: skip
        assert result.exit_code == 0, result.output
        events = [orjson.loads(line) for line in log.read_bytes().splitlines()]
        (failed,) = [e for e in events if e["type"] == "ToolFailed"]
        assert failed["durationMs"] >= 50
        (told,) = [
            message["content"]
            for message in events_of(events, "ModelRequested")[0]["messages"]
            if message["content"].startswith("Result of the tool run before this task")
        ]
        assert f'"durationMs": {math.floor(failed["durationMs"] + 0.5)}' in told

    def test_tool_input_from_standard_input(self, workspace: Path, tmp_path: Path) -> None:
        """`--tool-input -` reads the input from standard input."""
        log = tmp_path / "t.jsonl"
        model = script(tmp_path / "s.json", [{"text": "ok"}])
        result = CliRunner().invoke(
            cli,
            ["run", "t", "--model", model, "--tool", "echo", "--tool-input", "-",
             "--log", str(log)],
            env=NO_KEYS,
            input='{"text": "from stdin"}',
        )  # fmt: skip
        assert result.exit_code == 0, result.output
        assert logged_tool_input(log) == {"text": "from stdin"}

    @pytest.mark.parametrize("task", [["run", "t"], ["t"]])
    @pytest.mark.parametrize(
        ("args", "message"),
        [
            (["--tool", ""], "--tool requires a value"),
            (["--tool", "echo", "--tool-input", "{}", "--tool-input", "{}"],
             "--tool-input may be given only once"),
            (["--tool", "echo", "--tool", "echo"], "--tool may be given only once"),
            (["--tool", "echo", "--tool-input", "@/does/not/exist.json"],
             "--tool-input @/does/not/exist.json: cannot read /does/not/exist.json: "
             "No such file or directory"),
        ],
    )  # fmt: skip
    def test_tool_options_are_the_roots(
        self, workspace: Path, task: list[str], args: list[str], message: str
    ) -> None:
        """--tool and --tool-input after a task are refused as the root refuses them:
        an empty --tool, a repeated option, an @FILE that cannot be read."""
        result = run(*task, *args)
        assert result.exit_code == 2
        assert result.stderr == f"[mini-harness] Error: {message}\n"
        assert result.stdout == ""

    def test_tool_given_before_and_after_the_task(self, workspace: Path) -> None:
        """`--tool` both before and after the task is one --tool too many."""
        result = run("--tool", "echo", "t", "--tool", "echo")
        assert result.exit_code == 2
        assert result.stderr == "[mini-harness] Error: --tool may be given only once\n"


class TestExitCodes:
    def test_max_steps_is_1(self, workspace: Path, tmp_path: Path) -> None:
        """A run stopped by --max-steps exits 1 and says why."""
        result = run("run", "t", "--model", script(tmp_path / "s.json", DEMO), "--max-steps", "1")
        assert result.exit_code == 1
        assert result.stderr == (
            "[mini-harness] Error: stopped after 1 step(s) without a final answer\n"
        )

    def test_model_error_is_1(self, workspace: Path, tmp_path: Path) -> None:
        """A script that runs out is a model error: exit 1."""
        result = run("run", "t", "--model", script(tmp_path / "s.json", DEMO[:1]))
        assert result.exit_code == 1
        assert "model request failed: script" in result.stderr

    def test_budget_is_1(self, workspace: Path, tmp_path: Path) -> None:
        """A budget the request cannot fit in is exit 1, and the error says the least the
        request needs: with that budget the run goes on."""
        model = script(tmp_path / "s.json", DEMO)
        result = run("run", "t", "--model", model, "--max-context-tokens", "10")
        assert result.exit_code == 1
        assert "--max-context-tokens" in result.stderr
        least = re.search(r"it needs at least ~([\d,]+)", result.stderr)
        assert least is not None, result.stderr
        needed = least.group(1).replace(",", "")
        again = run(
            "run", "t", "--model", model, "--max-context-tokens", needed, "--max-steps", "1"
        )
        assert "does not fit" not in again.stderr

    @pytest.mark.parametrize(
        "args",
        [
            ["run"],
            ["run", "t", "--max-steps", "0"],
            ["run", "t", "--model", "script:/does/not/exist.json"],
            ["run", "t", "--tool-input", "{}"],
            ["run", "t", "--tool", "echo", "--tool-input", "{"],
            ["run", "t", "--registry", "no_such_module_here:registry"],
        ],
    )
    def test_usage_is_2(self, workspace: Path, args: list[str]) -> None:
        """Bad usage exits 2 with an error line and no traceback."""
        result = run(*args)
        assert result.exit_code == 2
        assert result.stderr.startswith("[mini-harness] Error: ")
        assert "Traceback" not in result.output

    def test_interrupted_is_130(self, workspace: Path, tmp_path: Path) -> None:
        """Ctrl-C during a tool ends the run as cancelled: exit 130, the log closed cleanly."""
        (workspace / "interrupting.py").write_text(INTERRUPTING_REGISTRY)
        log = tmp_path / "t.jsonl"
        model = script(tmp_path / "s.json", [{"toolCalls": [{"name": "interrupt"}]}])
        result = run(
            "run", "t", "--model", model, "--registry", "interrupting:registry", "--log",
            str(log), "--approve", "auto",
        )  # fmt: skip
        assert result.exit_code == 130
        assert result.stderr.endswith("[mini-harness] Error: interrupted\n")
        assert verify_transcript(log).ok
        (agent_run,) = fold_agent_runs(log)
        assert agent_run.stop_reason == "cancelled"

    @pytest.mark.parametrize(
        ("tool", "line"),
        [
            ("leave", "[mini-harness] Error: the command ended abruptly: SystemExit: 3\n"),
            ("close", "[mini-harness] Error: the command ended abruptly: GeneratorExit\n"),
        ],
    )
    def test_abrupt_handler_is_one_error_line(
        self, workspace: Path, tmp_path: Path, tool: str, line: str
    ) -> None:
        """A handler raising SystemExit or GeneratorExit ends the run as cancelled in the
        log and the command with one error line, exit 1, no traceback."""
        (workspace / "interrupting.py").write_text(INTERRUPTING_REGISTRY)
        log = tmp_path / "t.jsonl"
        model = script(tmp_path / "s.json", [{"toolCalls": [{"name": tool}]}])
        result = run(
            "run", "t", "--model", model, "--registry", "interrupting:registry", "--log",
            str(log), "--approve", "auto", "--no-stream",
        )  # fmt: skip
        assert result.exit_code == 1
        assert result.stderr == line
        assert verify_transcript(log).ok
        (agent_run,) = fold_agent_runs(log)
        assert agent_run.stop_reason == "cancelled"


class TestBareTask:
    def test_a_bare_task_runs_the_agent(self, workspace: Path) -> None:
        """`mini-harness "TASK"` prints exactly what `mini-harness run "TASK"` prints."""
        bare, explicit = run("hello there"), run("run", "hello there")
        assert bare.exit_code == explicit.exit_code == 0
        # Each is recorded in a transcript of its own, named by its run.
        assert recorded(bare.stdout) == recorded(explicit.stdout)
        assert bare.stdout.startswith("[mini-harness] Task: hello there\n")

    def test_words_of_a_task_are_joined(self, workspace: Path) -> None:
        """Unquoted words make one task, as in the reference CLI."""
        result = run("run", "read", "the", "README")
        assert "[mini-harness] Task: read the README" in result.stdout.splitlines()

    def test_root_options_apply_to_the_task(self, workspace: Path, tmp_path: Path) -> None:
        """`--tool ... --log ... "TASK"`: the tool is dispatched first, then the agent runs,
        all in the one log."""
        log = tmp_path / "t.jsonl"
        model = script(tmp_path / "s.json", [{"text": "ok"}])
        result = run(
            "--tool", "echo", "--tool-input", '{"text":"hi"}', "--log", str(log),
            "--context-report", "call the echo tool", "--model", model,
        )  # fmt: skip
        assert result.exit_code == 0, result.output
        assert result.stdout.splitlines()[0] == "[mini-harness] Task: call the echo tool"
        assert result.stdout.splitlines()[-2].startswith("Tool result            ~")
        types = [orjson.loads(line)["type"] for line in log.read_bytes().splitlines()]
        assert types.index("ToolSucceeded") < types.index("ModelRequested")
        assert types[-1] == "RunFinished"

    def test_a_mistyped_subcommand_is_not_a_task(self, workspace: Path) -> None:
        """A name close to a subcommand's is a usage error that suggests it, not a task."""
        result = run("replya", "t.jsonl")
        assert result.exit_code == 2
        assert "No such command 'replya'. Did you mean 'replay'?" in result.stderr
        assert result.stdout == ""

    def test_a_one_word_task_near_a_command_is_told_how_to_run_it(self, workspace: Path) -> None:
        """`mini-harness review` suggests `view` and says how to give "review" to the agent."""
        result = run("review")
        assert result.exit_code == 2
        assert result.stderr.splitlines()[0] == (
            "[mini-harness] Error: No such command 'review'. Did you mean 'view'? "
            "To give it to the agent as a task: mini-harness run review"
        )

    def test_a_task_named_like_a_subcommand_goes_through_run(self, workspace: Path) -> None:
        """`mini-harness run replay` is the agent on the task "replay"."""
        result = run("run", "replay")
        assert result.exit_code == 0
        assert result.stdout.startswith("[mini-harness] Task: replay\n")


PATCH = "--- a/README.md\n+++ b/README.md\n@@ -1 +1 @@\n-# Demo\n+# Demo, patched\n"


class TestReplayOfAgentRuns:
    def test_context_report_of_any_step(self, workspace: Path, tmp_path: Path) -> None:
        """`replay --context-report --step N` prints step N's report as the fold rebuilds
        it; without --step, the last request's, as the live run printed it."""
        log = tmp_path / "t.jsonl"
        model = script(tmp_path / "s.json", DEMO)
        live = run("run", "t", "--model", model, "--log", str(log), "--context-report")
        last = live.stdout.split("\n\n", 1)[1]
        for step, expected in ((None, last), (1, agent_context_report(log, step=1))):
            args = ["replay", str(log), "--context-report"]
            result = run(*args, *(["--step", str(step)] if step else []))
            assert result.exit_code == 0, result.output
            assert expected in result.stdout
        assert agent_context_report(log, step=1) != last

    def test_step_needs_the_context_report(self, workspace: Path, tmp_path: Path) -> None:
        """--step alone is a usage error."""
        result = run("replay", str(tmp_path / "t.jsonl"), "--step", "1")
        assert result.exit_code == 2
        assert "--step needs --context-report" in result.stderr

    def test_effects_then_undo(self, workspace: Path, tmp_path: Path) -> None:
        """A patch applied by an agent run is listed by `replay --effects` with its hashes,
        and `undo --call ID` puts the file back, recorded as a new run."""
        log = tmp_path / "t.jsonl"
        steps = [{"toolCalls": [{"name": "apply_patch", "arguments": {"patch": PATCH}}]}]
        model = script(tmp_path / "s.json", [*steps, {"text": "patched"}])
        result = run("run", "t", "--model", model, "--log", str(log), "--approve", "auto")
        assert result.exit_code == 0, result.output
        assert (workspace / "README.md").read_text() == "# Demo, patched\n"
        effects = run("replay", str(log), "--effects")
        assert effects.exit_code == 0
        (line,) = [ln for ln in effects.stdout.splitlines() if ln.startswith("Call ")]
        call_id = line.split()[1]
        assert "  modified README.md" in effects.stdout
        assert "apply_patch: approved by policy" in effects.stdout
        undone = run("undo", str(log), "--call", call_id, "--workspace", str(workspace))
        assert undone.exit_code == 0, undone.output
        assert (workspace / "README.md").read_text() == "# Demo\n"
        assert verify_transcript(log).ok


class TestSecrets:
    @pytest.mark.parametrize("mode", [[], ["--no-stream"], ["--json"]])
    def test_a_redacted_secret_is_not_printed(
        self, workspace: Path, tmp_path: Path, mode: list[str]
    ) -> None:
        """What an agent run prints is redacted as its log is: the task, the step lines,
        the tool outcomes, the model's text and the --json final text."""
        secret = "s3cr3t-value-1234"
        (workspace / "README.md").write_text(f"token: {secret}\n")
        steps: list[dict[str, Any]] = [
            {"toolCalls": [{"name": "read_file", "arguments": {"path": "README.md"}}]},
            {"toolCalls": [{"name": "echo", "arguments": {"text": secret}}]},
            {"toolCalls": [{"name": "read_file", "arguments": {"path": secret}}]},
            {"text": f"the token is {secret}"},
        ]
        model = script(tmp_path / "s.json", steps)
        result = CliRunner().invoke(
            cli,
            ["run", f"find {secret}", "--model", model, "--log", str(tmp_path / "t.jsonl"),
             "--redact-env", "DEMO_TOKEN", *mode],
            env={**NO_KEYS, "DEMO_TOKEN": secret},
        )  # fmt: skip
        assert result.exit_code == 0, result.output
        assert secret not in result.output
        if mode == ["--json"]:
            assert orjson.loads(result.stdout)["finalText"] == "the token is [REDACTED]"
            return
        lines = result.stdout.splitlines()
        assert lines[0] == "[mini-harness] Task: find [REDACTED]"
        assert '[mini-harness] Step 2: echo {"text":"[REDACTED]"}' in lines
        assert '[mini-harness]   ok: {"text":"[REDACTED]"}' in lines
        assert any(line.startswith("[mini-harness]   failed: ") for line in lines)
        assert "the token is [REDACTED]" in lines

    def test_a_secret_split_across_streamed_chunks_is_redacted(
        self, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """Streamed text is redacted even when a secret arrives in pieces."""
        protect(Redactor.from_config(patterns=["s3cr3t-[0-9]+"]))  # as the session does
        try:
            reporter = PrintingReporter("script")
            for chunk in ("one s3c", "r3t-12", "34 two\nthree s3cr3t-", "5"):
                reporter.text(chunk)
            reporter.response(1, ModelResponse(Message("assistant", ""), "stop"), streamed=True)
        finally:
            forget_keys()
        assert capsys.readouterr().out == (
            "[mini-harness] Model response:\none [REDACTED] two\nthree [REDACTED]\n"
        )

    def test_a_redacted_secret_never_reaches_the_log_from_model_messages(
        self, workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """--redact-env covers the agent's events too: the task, the model's text and the
        tool results that carried the secret are written as [REDACTED]."""
        secret = "s3cr3t-value-1234"
        monkeypatch.setenv("DEMO_TOKEN", secret)
        (workspace / "README.md").write_text(f"token: {secret}\n")
        log = tmp_path / "t.jsonl"
        model = script(tmp_path / "s.json", [*DEMO[:2], {"text": f"the token is {secret}"}])
        result = CliRunner().invoke(
            cli,
            ["run", f"find {secret}", "--model", model, "--log", str(log),
             "--redact-env", "DEMO_TOKEN"],
            env={**NO_KEYS, "DEMO_TOKEN": secret},
        )  # fmt: skip
        assert result.exit_code == 0, result.output
        written = log.read_bytes()
        assert secret.encode() not in written
        assert written.count(b"[REDACTED]") >= 3
        assert verify_transcript(log).ok

    def test_rerun_of_an_agent_transcript_finds_the_coding_tools(
        self, workspace: Path, tmp_path: Path
    ) -> None:
        """`replay --rerun` of a run that patched a file uses the same built-in tools: the
        patch (destructive) is served from the record, the read-only calls run again and
        match, and the offline replay finds every request the same."""
        log = tmp_path / "t.jsonl"
        steps: list[dict[str, Any]] = [
            {"toolCalls": [{"name": "read_file", "arguments": {"path": "README.md"}}]},
            {"toolCalls": [{"name": "apply_patch", "arguments": {"patch": PATCH}}]},
            {"text": "patched"},
        ]
        model = script(tmp_path / "s.json", steps)
        result = run("run", "t", "--model", model, "--log", str(log), "--approve", "auto")
        assert result.exit_code == 0, result.output
        (workspace / "README.md").write_text("# Demo\n")  # as it was when read
        rerun = run("replay", str(log), "--rerun")
        assert "unknown_tool" not in rerun.stdout
        assert ": served from the record (apply_patch is not marked" in rerun.stdout
        assert 'read_file {"path":"README.md"}: re-run, same result' in rerun.stdout
        assert "replayed: identical through step 3" in rerun.stdout
