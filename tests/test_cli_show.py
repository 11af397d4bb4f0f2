"""`mini-harness show`: the timeline as a user reads it, and as a script reads it (--json)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner, Result

from mini_harness.cli import cli
from mini_harness.replay.views.text import timeline_lines
from mini_harness.runtime.text_style import TextStyle
from tests.replay.test_timeline import build
from tests.replay.timeline_fixtures import TOOLS, agent_events, chained, tool_events, write
from tests.streams import on_terminal


def show(*args: str, stdin: bytes | None = None, columns: int = 100) -> Result:
    env = {"COLUMNS": str(columns), "NO_COLOR": ""}
    return CliRunner().invoke(cli, ["show", *args], input=stdin, env=env)


@pytest.fixture(name="tools_log")
def _tools_log(tmp_path: Path) -> Path:
    return write(tmp_path / "t.jsonl", tool_events())


class TestText:
    def test_tool_run(self, tools_log: Path) -> None:
        """Each call with its status, duration, input and output or error; counts at the end.
        A call in doubt is shown where it happened and makes the exit code 1, as replay's and
        verify's."""
        result = show(str(tools_log))
        assert result.exit_code == 1, result.output  # e3 is in doubt
        assert result.stderr == f"[mini-harness] Error: {tools_log}: 1 call in doubt\n"
        lines = result.stdout.splitlines()
        assert lines[0].startswith(f"Transcript {tools_log} · format ")
        assert lines[0].endswith("· 7 events · head " + lines[0].split("head ")[1])
        assert "chain intact" in lines[0]
        assert lines[1].startswith(f"Run 1 {TOOLS} · harness 0.1.0 · started ")
        assert lines[2:] == [
            "  call echo succeeded · 0.500 ms · call e1",
            '    input  {"text":"hi"}',
            '    output {"text":"hi"}',
            "  call echo failed · 0.100 ms · call e2",
            '    input  {"text":3}',
            "    error  invalid_input: Invalid input for echo.text: expected string",
            "  call echo in doubt · call e3",
            '    input  {"text":"never ended"}',
            "    no terminal event: the call may or may not have run",
            "[mini-harness] 1 run, 3 calls: 1 succeeded, 1 failed, 1 in doubt",
        ]

    def test_long_output_is_cut_with_its_size(self, tmp_path: Path) -> None:
        """An output longer than the terminal is cut to its width, with its size in bytes;
        --full prints it whole."""
        events = [
            *tool_events()[:2],
            {
                "type": "ToolSucceeded",
                "runId": TOOLS,
                "callId": "e1",
                "name": "echo",
                "output": {"text": "x" * 5000},
                "durationMs": 1.0,
            },
        ]
        path = write(tmp_path / "t.jsonl", events)
        line = next(
            ln for ln in show(str(path), columns=60).stdout.splitlines() if "  output" in ln
        )
        assert line == '    output {"text":"' + "x" * 25 + "… (5,011 bytes)"
        assert len(line) == 60
        full = show(str(path), "--full").stdout
        assert '    output {"text":"' + "x" * 5000 + '"}\n' in full

    def test_unknown_event_types_are_shown(self, tmp_path: Path) -> None:
        """An event of a type this version does not know is shown with its type, seq and
        fields."""
        events = [
            *tool_events()[:1],
            {"type": "Checkpoint", "runId": TOOLS, "note": "later"},
        ]
        result = show(str(write(tmp_path / "t.jsonl", events)))
        assert '  Checkpoint (seq 2) {"note":"later"}' in result.stdout.splitlines()

    def test_filters(self, tools_log: Path) -> None:
        """--status and --grep leave out the calls they do not select."""
        failed = show(str(tools_log), "--status", "failed").stdout
        assert "call e2" in failed
        assert "call e1" not in failed
        assert "call e3" not in failed
        found = show(str(tools_log), "--grep", "NEVER").stdout
        assert "call e3" in found
        assert "call e1" not in found


class TestAgentLayout:
    """The layout of agent runs (rendered from the events' wire JSON)."""

    @pytest.fixture(name="lines")
    def _lines(self) -> list[str]:
        timeline = build(agent_events())
        return list(timeline_lines(timeline, TextStyle(width=80)))

    def test_run_head(self, lines: list[str]) -> None:
        """An agent run names its task and model."""
        assert lines[1].startswith("Run 1 " + "a" * 32 + " · agent run · started ")
        assert lines[2:4] == ["  task: What is in this project?", "  model: script demo.json"]

    def test_steps_turns_and_calls(self, lines: list[str]) -> None:
        """A step shows model time, tokens and finish reason, the model's text and the
        calls it made under it."""
        assert lines[4:10] == [
            "  Step 1 · model 250.0 ms · tokens in 100 · out 10 · finish tool_calls",
            "    model: Let me look at the files.",
            "    asks for: list_files",
            "    call list_files succeeded · 1.5 ms · call c1",
            "      input  {}",
            '      output {"files":[{"path":"README.md","size":20}],"note":"wo… (2,052 bytes)',
        ]

    def test_approvals_failures_and_trims(self, lines: list[str]) -> None:
        """Who decided each approval, a failed model attempt and a trim are each one line."""
        assert "      approval asked by rule ask-reads" in lines
        assert "      approval approved by user" in lines
        assert "      approval denied by policy (rule deny-writes): writes are denied" in lines
        assert "    model failed: rate_limited 429 (attempt 1): slow down" in lines
        assert (
            "    context trimmed: 1 tool result(s) replaced, ~900 -> ~400 tokens (budget 500)"
            in lines
        )

    def test_finish(self, lines: list[str]) -> None:
        """The run ends with its stop reason, steps, usage totals and answer."""
        assert lines[-2:] == [
            "  finished: final · 4 steps · tokens in 1,000 · out 40",
            "    answer: It is a tiny project.",
        ]

    def test_unfinished(self) -> None:
        """An agent run without RunFinished says it did not end."""
        timeline = build(agent_events()[:4])
        lines = list(timeline_lines(timeline, TextStyle()))
        assert lines[-1] == "  unfinished: no RunFinished (the run did not end)"

    def test_file_effects(self) -> None:
        """Each file a call changed is a line under its output: created, changed, deleted."""
        events = [
            *tool_events()[:2],
            {
                "type": "ToolSucceeded",
                "runId": TOOLS,
                "callId": "e1",
                "name": "echo",
                "output": {},
                "durationMs": 1.0,
                "effects": [
                    {"path": "new.txt", "before": None, "after": "a" * 64},
                    {"path": "app.py", "before": "b" * 64, "after": "c" * 64},
                    {"path": "old.txt", "before": "d" * 64, "after": None},
                ],
            },
        ]
        lines = list(timeline_lines(build(events), TextStyle()))
        assert lines[-3:] == [
            "    effect new.txt created (aaaaaaaa)",
            "    effect app.py changed (bbbbbbbb -> cccccccc)",
            "    effect old.txt deleted (was dddddddd)",
        ]

    def test_run_tree(self) -> None:
        """A resumed run is indented under the run it continues, and says so."""
        child = {
            "type": "RunStarted",
            "runId": "c" * 32,
            "harness": "0.1.0",
            "tools": [],
            "resumedFrom": {"runId": "a" * 32, "step": 4},
        }
        lines = list(timeline_lines(build([*agent_events(), child]), TextStyle()))
        assert lines[-1].startswith("  Run 2 " + "c" * 32 + " · harness 0.1.0 · started ")
        assert lines[-1].endswith(" · resumed from run " + "a" * 32 + " at step 4")


class TestJson:
    def test_every_event_as_a_json_line(self, tools_log: Path) -> None:
        """--json writes every event as one JSON object per line, in file order."""
        result = show(str(tools_log), "--json")
        assert result.exit_code == 1  # e3 is in doubt
        events = [orjson.loads(line) for line in result.stdout.splitlines()]
        assert [e["seq"] for e in events] == list(range(7))
        assert events == [orjson.loads(line) for line in tools_log.read_bytes().splitlines()]

    def test_selected_events_only(self, tools_log: Path) -> None:
        """With a filter, only the selected calls' events are written."""
        result = show(str(tools_log), "--json", "--status", "failed")
        events = [orjson.loads(line) for line in result.stdout.splitlines()]
        assert [(e["type"], e["callId"]) for e in events] == [
            ("ToolCalled", "e2"),
            ("ToolFailed", "e2"),
        ]


class TestNothingMatched:
    @pytest.mark.parametrize(
        ("args", "said"),
        [(["--tool", "nosuch"], "--tool nosuch"), (["--grep", "zzz"], "--grep zzz")],
    )
    def test_a_filter_that_matches_nothing_says_so(
        self, tools_log: Path, args: list[str], said: str
    ) -> None:
        """A filter that selects nothing is said, exit 1, not shown as an empty file."""
        result = show(str(tools_log), *args)
        assert result.exit_code == 1
        assert "0 runs" not in result.stdout
        assert result.stderr.endswith(
            f"[mini-harness] Error: nothing in {tools_log} matched {said}\n"
        )


class TestProblems:
    def test_damaged_transcript(self, tmp_path: Path) -> None:
        """A damaged line: what came before is shown, the problem is named, exit 2 (the
        transcript cannot be used past it, as replay says)."""
        lines = chained(tool_events()).splitlines(keepends=True)
        lines[3] = b"{not json\n"
        path = tmp_path / "t.jsonl"
        path.write_bytes(b"".join(lines))
        result = show(str(path))
        assert result.exit_code == 2
        assert "call echo in doubt · call e1" in result.stdout
        assert "[mini-harness] Problem: [damage] line 4: " in result.stdout
        assert result.stderr.endswith(
            f"[mini-harness] Error: {path}: 1 problem, shown up to line 4; 1 call in doubt\n"
        )

    def test_damage_with_json(self, tmp_path: Path) -> None:
        """With --json the events before the damage are written and the problem goes to
        standard error."""
        path = tmp_path / "t.jsonl"
        path.write_bytes(chained(tool_events()) + b"{torn")
        result = show(str(path), "--json")
        assert result.exit_code == 1
        assert len(result.stdout.splitlines()) == 7
        assert "[mini-harness] Problem: [torn-tail] line 8: torn tail" in result.stderr

    def test_not_a_transcript(self, tmp_path: Path) -> None:
        """A file that is not a transcript: an error, exit 2, nothing on stdout."""
        path = tmp_path / "x.jsonl"
        path.write_text("hello\n")
        result = show(str(path))
        assert result.exit_code == 2
        assert result.stdout == ""
        assert "is not a mini-harness transcript" in result.stderr

    def test_no_such_run(self, tools_log: Path) -> None:
        """--run naming no run is an error listing the runs, exit 2."""
        result = show(str(tools_log), "--run", "9")
        assert result.exit_code == 2
        assert result.stderr == (
            f"[mini-harness] Error: {tools_log} has no run 9 (it has 1 run: 1 {TOOLS})\n"
        )

    def test_repeated_option(self, tools_log: Path) -> None:
        """An option that takes one value, given twice, is a usage error."""
        result = show(str(tools_log), "--run", "1", "--run", "2")
        assert result.exit_code == 2
        assert result.stderr == "[mini-harness] Error: --run may be given only once\n"

    def test_bad_status(self, tools_log: Path) -> None:
        """An unknown --status is a usage error."""
        result = show(str(tools_log), "--status", "broken")
        assert result.exit_code == 2
        assert "'broken' is not one of 'failed', 'succeeded', 'in-doubt'" in result.stderr


class TestColour:
    def run_on_terminal(self, path: Path, **env: str) -> bytes:
        """Run `show` with its standard output on a pseudo-terminal; what it wrote."""
        environment = {**os.environ, "COLUMNS": "100", "TERM": "xterm-256color", **env}
        environment.pop("NO_COLOR", None) if "NO_COLOR" not in env else None
        return on_terminal([sys.executable, "-m", "mini_harness", "show", str(path)], environment)

    def test_colour_on_a_terminal(self, tools_log: Path) -> None:
        """On a terminal the statuses are coloured."""
        assert b"\x1b[32msucceeded\x1b[0m" in self.run_on_terminal(tools_log)

    def test_no_color(self, tools_log: Path) -> None:
        """NO_COLOR turns colour off, even on a terminal."""
        output = self.run_on_terminal(tools_log, NO_COLOR="1")
        assert b"succeeded" in output
        assert b"\x1b[" not in output

    def test_no_colour_on_a_dumb_terminal(self, tools_log: Path) -> None:
        """TERM=dumb (Emacs' shell, some CI logs) turns colour off, even on a terminal."""
        output = self.run_on_terminal(tools_log, TERM="dumb")
        assert b"succeeded" in output
        assert b"\x1b[" not in output

    def test_no_colour_on_a_pipe(self, tools_log: Path) -> None:
        """Piped output has no escape codes."""
        assert "\x1b[" not in show(str(tools_log)).stdout


class TestStreams:
    def run_cli(self, *args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
        env = {**os.environ, "COLUMNS": "100"}
        env.pop("NO_COLOR", None)
        return subprocess.run(
            [sys.executable, "-m", "mini_harness", *args],
            input=stdin,
            capture_output=True,
            env=env,
            timeout=60,
            check=False,
        )

    def test_standard_input(self, tools_log: Path) -> None:
        """`show -` reads the transcript from standard input, as from the file."""
        piped = self.run_cli("show", "-", stdin=tools_log.read_bytes())
        assert piped.returncode == 1, piped.stderr  # e3 is in doubt
        from_file = self.run_cli("show", str(tools_log))
        assert piped.stdout.splitlines()[1:] == from_file.stdout.splitlines()[1:]
        assert piped.stdout.splitlines()[0].startswith(b"Transcript standard input \xc2\xb7 ")

    def test_fifo(self, tools_log: Path, tmp_path: Path) -> None:
        """A FIFO is read as a stream, front to back."""
        fifo = tmp_path / "pipe"
        os.mkfifo(fifo)
        data = tools_log.read_bytes()

        def feed() -> None:
            with fifo.open("wb") as writer:
                for line in data.splitlines(keepends=True):
                    writer.write(line)
                    writer.flush()

        feeder = threading.Thread(target=feed)
        feeder.start()
        result = self.run_cli("show", str(fifo), "--json")
        feeder.join(timeout=30)
        assert result.returncode == 1, result.stderr  # e3 is in doubt
        assert result.stdout.splitlines() == [
            orjson.dumps(orjson.loads(line)) for line in data.splitlines()
        ]

    def test_view_of_standard_input(self, tools_log: Path, tmp_path: Path) -> None:
        """`view -` writes transcript.html in the current directory."""
        result = subprocess.run(
            [sys.executable, "-m", "mini_harness", "view", "-"],
            input=tools_log.read_bytes(),
            capture_output=True,
            cwd=tmp_path,
            timeout=60,
            check=False,
        )
        assert result.returncode == 1, result.stderr  # e3 is in doubt
        assert result.stdout == b"[mini-harness] Wrote transcript.html (3 calls, 7 events)\n"
        assert (tmp_path / "transcript.html").read_text().startswith("<!DOCTYPE html>")

    def test_damaged_standard_input(self, tools_log: Path) -> None:
        """A torn transcript on standard input is shown up to the damage, exit 1."""
        result = self.run_cli("show", "-", stdin=tools_log.read_bytes() + b'{"type":')
        assert result.returncode == 1
        assert b"call echo succeeded" in result.stdout
        assert b"[torn-tail] line 8" in result.stdout


class TestFollow:
    def test_follows_a_live_run_to_its_end(self, tmp_path: Path) -> None:
        """`show --follow` prints a run being written by another process as it goes (the
        call before the run has finished) and stops once the run has finished."""
        script = tmp_path / "s.json"
        script.write_text(
            orjson.dumps(
                [
                    {"toolCalls": [{"name": "echo", "arguments": {"text": "a"}}]},
                    {"text": "all done", "delayMs": 1500},
                ]
            ).decode()
        )
        log = tmp_path / "t.jsonl"
        writer = subprocess.Popen(
            [sys.executable, "-m", "mini_harness", "run", "t", "--model", f"script:{script}",
             "--log", str(log)],
            cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        try:
            deadline = time.monotonic() + 30
            while not log.exists() and time.monotonic() < deadline:
                time.sleep(0.02)
            follower = subprocess.Popen(
                [sys.executable, "-m", "mini_harness", "show", "--follow", str(log)],
                stdout=subprocess.PIPE, env={**os.environ, "NO_COLOR": "1"},
            )  # fmt: skip
            assert follower.stdout is not None
            seen = []
            for raw in follower.stdout:
                seen.append(raw.decode())
                if raw.startswith(b"    output "):
                    # The call is shown while the model is still answering.
                    assert writer.poll() is None
            assert follower.wait(timeout=60) == 0
        finally:
            writer.wait(timeout=60)
        text = "".join(seen)
        assert "call echo succeeded" in text
        assert "finished: final · 2 steps" in text
        assert "answer: all done" in text

    def test_ctrl_c_stops_following(self, tmp_path: Path) -> None:
        """Ctrl-C stops following a transcript that never finishes: exit 130, said."""
        log = tmp_path / "t.jsonl"
        assert CliRunner().invoke(cli, ["--tool", "echo", "--log", str(log)]).exit_code == 1
        follower = subprocess.Popen(
            [sys.executable, "-m", "mini_harness", "show", "--follow", str(log)],
            stdout=subprocess.PIPE,
        )
        assert follower.stdout is not None
        assert follower.stdout.readline().startswith(b"[mini-harness] Following ")
        time.sleep(0.5)  # waiting for lines
        follower.send_signal(signal.SIGINT)
        rest = follower.stdout.read()
        assert follower.wait(timeout=30) == 130
        assert b"[mini-harness] Stopped following." in rest

    def test_ctrl_c_in_the_first_moments_exits_130(self, tmp_path: Path) -> None:
        """A Ctrl-C the moment following starts, while the first records of each kind are
        decoded, exits 130 like any other: it once ended the process by the signal itself
        (-2) about once in ten, so it is tried again and again."""
        events = agent_events()
        assert events[-1]["type"] == "RunFinished"
        log = write(tmp_path / "t.jsonl", events[:-1])  # a run that is still going
        codes = []
        for _ in range(20):
            follower = subprocess.Popen(
                [sys.executable, "-m", "mini_harness", "show", "--follow", str(log)],
                stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            )  # fmt: skip
            assert follower.stdout is not None
            assert follower.stdout.readline().startswith(b"[mini-harness] Following ")
            follower.send_signal(signal.SIGINT)
            follower.stdout.read()
            codes.append(follower.wait(timeout=30))
        assert codes == [130] * 20

    def test_filters_do_not_go_with_follow(self, tools_log: Path) -> None:
        """--follow shows the whole run: a filter with it is a usage error."""
        result = show(str(tools_log), "--follow", "--tool", "echo")
        assert result.exit_code == 2
