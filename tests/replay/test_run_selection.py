"""One rule for every `--run` (a 1-based index, or an id prefix no other run shares) and
every `--step` (a model step, counted from 1), in every command that takes them."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner, Result

from mini_harness import ToolRuntime
from mini_harness.agent import AgentConfig, AgentLoop, ScriptProvider
from mini_harness.cli import cli
from mini_harness.tools import default_registry
from mini_harness.transcripts import JsonlTranscript

NO_KEYS: dict[str, str | None] = dict.fromkeys(
    ("DEEPSEEK_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "MINI_HARNESS_MODEL")
)
FIRST = "ab" + "1" * 30
TOOLS = "cd" + "2" * 30
THIRD = "ab" + "3" * 30


def invoke(*args: str) -> Result:
    return CliRunner().invoke(cli, list(args), env=NO_KEYS)


@pytest.fixture(name="log")
def _log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An agent run (index 1), a tool run (2) and an agent run (3); runs 1 and 3 share the
    id prefix `ab`. Each agent run made two model requests."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "README.md").write_text("# Demo\n")
    script = tmp_path / "script.json"
    answers = [{"toolCalls": [{"name": "list_files", "arguments": {}}]}, {"text": "Done."}]
    script.write_bytes(orjson.dumps({"responses": answers}))
    log = tmp_path / "t.jsonl"
    registry = default_registry(tmp_path)
    with JsonlTranscript(log) as sink:
        for run_id in (FIRST, TOOLS, THIRD):
            runtime = ToolRuntime(registry, sink, run_id=run_id)
            if run_id == TOOLS:
                runtime.dispatch("echo", {"text": "x"})
                continue
            loop = AgentLoop(runtime, ScriptProvider(script), AgentConfig(task="What?"))
            assert loop.run().stop_reason == "final"
    return log


COMMANDS = {
    "replay": ["replay"],
    "replay-json": ["replay", "--json"],
    "rerun": ["replay", "--rerun"],
    "context-report": ["replay", "--context-report"],
    "show": ["show"],
    "show-json": ["show", "--json"],
    "resume": ["resume", "--model", "mock"],
    "fork": ["fork", "--at-step", "1", "--model", "mock"],
}


def command(name: str, log: Path, *more: str) -> Result:
    first, *rest = COMMANDS[name]
    return invoke(first, str(log), *rest, *more)


class TestRun:
    @pytest.mark.parametrize("name", list(COMMANDS))
    def test_an_ambiguous_prefix_lists_the_candidates(self, log: Path, name: str) -> None:
        """A prefix two runs share names neither: exit 2, with both runs listed, and
        nothing is written to the transcript."""
        before = log.read_bytes()
        result = command(name, log, "--run", "ab")
        assert result.exit_code == 2, result.output
        assert result.stderr == (
            f"[mini-harness] Error: {log} has 2 runs whose id starts with ab: 1 {FIRST}, "
            f"3 {THIRD}; give more of the id, or the run's index\n"
        )
        assert log.read_bytes() == before

    @pytest.mark.parametrize("name", ["replay", "rerun", "context-report", "show"])
    def test_an_index_or_a_unique_prefix(self, log: Path, name: str) -> None:
        """`--run 3` and `--run ab3` name the same run, everywhere."""
        by_index, by_prefix = command(name, log, "--run", "3"), command(name, log, "--run", "ab3")
        assert by_index.exit_code == by_prefix.exit_code != 2, by_index.output
        assert by_index.stdout == by_prefix.stdout
        assert THIRD in by_index.stdout
        assert FIRST not in by_index.stdout

    @pytest.mark.parametrize("name", ["resume", "fork"])
    def test_resume_and_fork_take_an_index(self, log: Path, name: str) -> None:
        """`fork --run 1` (and `resume --run 1`) continue the first run of the file, as
        `replay --run 1` shows it."""
        result = command(name, log, "--run", "1")
        assert result.exit_code == 0, result.output
        assert f"run {FIRST}" in result.stdout

    @pytest.mark.parametrize("name", ["resume", "fork"])
    def test_a_tool_run_is_not_continued(self, log: Path, name: str) -> None:
        """Naming a tool run to continue is exit 2, saying what it is."""
        result = command(name, log, "--run", "2")
        assert result.exit_code == 2
        assert f"run 2 of {log} ({TOOLS}) is a tool run, not an agent run" in result.stderr

    @pytest.mark.parametrize("name", list(COMMANDS))
    def test_no_such_run(self, log: Path, name: str) -> None:
        """An index past the last run names the runs there are, exit 2."""
        result = command(name, log, "--run", "4")
        assert result.exit_code == 2
        assert f"{log} has no run 4 (it has 3 runs: 1 {FIRST}, 2 {TOOLS}, 3 {THIRD})" in (
            result.stderr
        )

    def test_the_default_of_resume_and_fork_is_the_last_agent_run(self, log: Path) -> None:
        """Without --run, fork branches the last agent run of the file."""
        result = command("fork", log)
        assert result.exit_code == 0, result.output
        assert f"Forking run {THIRD}" in result.stdout


class TestStep:
    @pytest.mark.parametrize(
        ("args", "message"),
        [
            (
                ["replay", "--context-report", "--run", "1", "--step", "3"],
                f"run {FIRST} has no step 3 (its steps are 1 to 2)",
            ),
            (["show", "--step", "3"], "no run of {log} has step 3 (their steps are 1 to 2)"),
            (
                ["show", "--run", "2", "--step", "1"],
                f"run {TOOLS} has no step 1 (it made no model request)",
            ),
            (
                ["fork", "--at-step", "3", "--model", "mock"],
                f"run {THIRD} has no step 3 (its steps are 1 to 2)",
            ),
        ],
        ids=["replay", "show", "show-tool-run", "fork"],
    )
    def test_a_step_not_made_names_the_steps(
        self, log: Path, args: list[str], message: str
    ) -> None:
        """A step no run made is exit 2, naming the steps there are, before anything else
        is printed."""
        first, *rest = args
        result = invoke(first, str(log), *rest)
        assert result.exit_code == 2
        assert result.stderr == f"[mini-harness] Error: {message.format(log=log)}\n"
        assert result.stdout == ""

    def test_a_piped_transcript_is_read_once_and_the_step_checked_first(self, log: Path) -> None:
        """From standard input too, a step no run made is said before anything is printed:
        the one reading comes first."""
        args = ["replay", "-", "--context-report", "--run", "1", "--step", "3"]
        result = CliRunner().invoke(cli, args, input=log.read_bytes(), env=NO_KEYS)
        assert result.exit_code == 2
        assert (
            result.stderr
            == f"[mini-harness] Error: run {FIRST} has no step 3 (its steps are 1 to 2)\n"
        )
        assert result.stdout == ""

    @pytest.mark.parametrize(
        "args",
        [["show", "--step", "0"], ["replay", "--context-report", "--step", "0"],
         ["fork", "--at-step", "0"]],
    )  # fmt: skip
    def test_steps_count_from_one(self, log: Path, args: list[str]) -> None:
        """Step 0 is no step, in every command: exit 2."""
        first, *rest = args
        result = invoke(first, str(log), *rest)
        assert result.exit_code == 2
        assert "0 is not in the range x>=1" in result.stderr

    def test_a_step_shown(self, log: Path) -> None:
        """`show --step 2` shows step 2 of each agent run."""
        result = invoke("show", str(log), "--step", "2")
        assert result.exit_code == 0, result.output
        steps = [line.strip().split(" · ")[0] for line in result.stdout.splitlines()]
        assert [line for line in steps if line.startswith("Step")] == ["Step 2", "Step 2"]
