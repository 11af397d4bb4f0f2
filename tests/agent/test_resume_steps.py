"""The steps a resumed (or forked) run prints go on from the run it continues: after a
resume after step 2, the next step printed is step 3, never a second `Step 1`; the calls
a step left are printed as that step. Each run's record, `show` and `--at-step` still
count its own requests from 1."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from mini_harness.agent import AgentConfig, AgentLoop, MockProvider, Opening, SilentReporter
from mini_harness.events import Message, RunOrigin, ToolCall
from mini_harness.replay import fold_agent_runs
from mini_harness.runtime import ToolRuntime
from mini_harness.tools import default_registry
from tests.agent.recorded_runs import cut_after, invoke, write_script
from tests.streams import on_terminal

STEP = re.compile(r"^\[mini-harness\] (Step \d+: .*)$", re.MULTILINE)


def steps(output: str) -> list[str]:
    """The `Step N: tool {input}` lines printed."""
    return STEP.findall(output)


def echo(text: str) -> dict[str, Any]:
    return {"name": "echo", "arguments": {"text": text}}


@pytest.fixture(name="ws")
def _ws(readme_ws: Path) -> Path:
    return readme_ws


def script(tmp_path: Path, name: str, *responses: dict[str, Any]) -> str:
    return write_script(tmp_path / name, list(responses))


class TestPrintedSteps:
    def test_calls_left_by_a_step_then_the_next_step(self, ws: Path, tmp_path: Path) -> None:
        """A run that died after step 1's answer, before its two calls ran: the resume
        runs them as step 1, then asks the model: step 2 (it once printed `Step 1` again)."""
        first = script(tmp_path, "a.json", {"toolCalls": [echo("a"), echo("b")]}, {"text": "x"})
        full, cut = tmp_path / "full.jsonl", tmp_path / "cut.jsonl"
        assert invoke(["run", "Task", "--model", first, "--log", str(full)]).exit_code == 0
        cut_after(full, cut, "ModelResponded", nth=1)
        more = script(tmp_path, "b.json", {"toolCalls": [echo("c")]}, {"text": "Done."})
        result = invoke(["resume", str(cut), "--model", more])
        assert result.exit_code == 0, result.output
        (run, _) = fold_agent_runs(cut)
        assert f"Resuming run {run.run_id} after step 1\n" in result.stdout
        assert steps(result.stdout) == [
            'Step 1: echo {"text":"a"}',
            'Step 1: echo {"text":"b"}',
            'Step 2: echo {"text":"c"}',
        ]

    def test_after_a_model_failure_the_failed_step_is_sent_again(
        self, ws: Path, tmp_path: Path
    ) -> None:
        """Step 2's request failed (the script ran out): `resume --last` sends it again,
        printed as step 2, and goes on with step 3."""
        short = script(tmp_path, "a.json", {"toolCalls": [echo("a")]})
        failed = invoke(["Task", "--model", short])
        assert failed.exit_code == 1
        assert steps(failed.stdout) == ['Step 1: echo {"text":"a"}']
        more = script(tmp_path, "b.json", {"toolCalls": [echo("b")]}, {"toolCalls": [echo("c")]},
                      {"text": "Done."})  # fmt: skip
        result = invoke(["resume", "--last", "--model", more])
        assert result.exit_code == 0, result.output
        assert steps(result.stdout) == ['Step 2: echo {"text":"b"}', 'Step 3: echo {"text":"c"}']

    def test_after_a_denied_call_with_a_follow_up(self, ws: Path, tmp_path: Path) -> None:
        """A run whose call was denied and that answered at step 2: `resume --last
        FOLLOW-UP` goes on at step 3."""
        patch = {"name": "apply_patch", "arguments": {"patch": "--- a/x\n+++ b/x\n"}}
        denied = script(tmp_path, "a.json", {"toolCalls": [patch]}, {"text": "Gave up."})
        result = invoke(["Task", "--model", denied, "--approve", "never"])
        assert result.exit_code == 0, result.output
        assert steps(result.stdout)[0].startswith("Step 1: apply_patch ")
        assert "denied" in result.stdout
        more = script(tmp_path, "b.json", {"toolCalls": [echo("b")]}, {"text": "Done."})
        resumed = invoke(["resume", "--last", "try something else", "--model", more])
        assert resumed.exit_code == 0, resumed.output
        assert steps(resumed.stdout) == ['Step 3: echo {"text":"b"}']

    def test_a_resume_of_a_resume_and_a_fork_go_on(self, ws: Path, tmp_path: Path) -> None:
        """Steps go on through a chain of resumes and into a fork of the last, whose
        messages say where they are in the conversation."""
        two = script(tmp_path, "two.json", {"toolCalls": [echo("a")]}, {"text": "Done."})
        assert invoke(["Task", "--model", two]).exit_code == 0  # steps 1, 2
        second = invoke(["resume", "--last", "more", "--model", two])  # steps 3, 4
        assert steps(second.stdout) == ['Step 3: echo {"text":"a"}']
        middle = re.search(r"\(run ([0-9a-f]{32})\)", second.stdout)
        assert middle is not None, second.output
        third = invoke(["resume", "--last", "more", "--model", two])  # steps 5, 6
        assert f"Resuming run {middle[1]} after step 2 (step 4 of the conversation)" in (
            third.stdout
        )
        assert steps(third.stdout) == ['Step 5: echo {"text":"a"}']
        fork = invoke(["fork", "--last", "--at-step", "2", "--model", two])
        assert fork.exit_code == 0, fork.output
        assert "before step 2 (step 6 of the conversation)" in fork.stdout
        assert steps(fork.stdout) == ['Step 6: echo {"text":"a"}']


class TestInterrupted:
    def test_ctrl_c_during_a_request_then_resume(self, ws: Path, tmp_path: Path) -> None:
        """Ctrl-C while step 2's request is waited for: the resume sends it again as step
        2 (the waiting line says so on a terminal) and goes on with step 3."""
        slow = script(tmp_path, "a.json", {"toolCalls": [echo("a")]},
                      {"text": "late", "delayMs": 30000})  # fmt: skip
        env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
        env = {**env, "PYTHONUNBUFFERED": "1", "NO_COLOR": "1"}
        process = subprocess.Popen(
            [sys.executable, "-m", "mini_harness", "Task", "--model", slow],
            cwd=ws, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
        )  # fmt: skip
        assert process.stdout is not None
        seen = ""
        while "ok: " not in seen:  # step 1's call ended: step 2's request is next
            line = process.stdout.readline()
            assert line, seen
            seen += line
        time.sleep(0.5)
        process.send_signal(signal.SIGINT)
        seen += process.stdout.read()
        assert process.wait(timeout=30) == 130
        assert steps(seen) == ['Step 1: echo {"text":"a"}']
        more = script(tmp_path, "b.json", {"toolCalls": [echo("b")], "delayMs": 1500},
                      {"toolCalls": [echo("c")]}, {"text": "Done."})  # fmt: skip
        command = [sys.executable, "-m", "mini_harness", "resume", "--last", "--model", more]
        output = on_terminal(command, env, ws).decode()
        assert "Waiting for the model (step 2): 1 s" in output
        assert steps(output.replace("\x1b[K", "").replace("\r", "\n")) == [
            'Step 2: echo {"text":"b"}',
            'Step 3: echo {"text":"c"}',
        ]


class TestTheLoopTellsTheReporter:
    def test_a_continued_mock_run_is_told_its_steps_from_the_opening(self) -> None:
        """With the mock model: the calls an opening leaves are told as its last step, the
        run's own requests from the step after it, while the record counts from 1."""

        class Told(SilentReporter):
            def __init__(self) -> None:
                self.told: list[tuple[str, int]] = []

            def waiting(self, step: int) -> None:
                self.told.append(("request", step))

            def tool_called(self, step: int, call: ToolCall) -> None:
                self.told.append((call.name, step))

        left = ToolCall("call_1", "echo", '{"text":"left"}')
        history = (
            Message("system", "s"),
            Message("user", "t"),
            Message("assistant", "", tool_calls=(left,)),
        )
        opening = Opening(history, 3, pending=((left, 4), ), resumed_from=RunOrigin("r", 4),
                          steps_before=4)  # fmt: skip
        reporter = Told()
        runtime = ToolRuntime(default_registry())
        config = AgentConfig(task="t", stream=False)
        outcome = AgentLoop(runtime, MockProvider("mock"), config, reporter).run(opening)
        assert outcome.steps == 1  # the record: the run's own requests
        assert reporter.told == [("echo", 4), ("request", 5)]
