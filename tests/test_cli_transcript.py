"""The `transcript verify|repair` commands and the --log options, as a user sees them."""

from __future__ import annotations

import os
import re
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner, Result

from mini_harness.cli import cli
from mini_harness.cli.log_options import LogSettings, opened_log
from mini_harness.events import FORMAT_VERSION, NullSink
from mini_harness.runtime import ToolRegistry, ToolRuntime
from mini_harness.transcripts import line_hash

HELLO = '{"text":"hello"}'


def run(*args: str, env: dict[str, str] | None = None) -> Result:
    return CliRunner().invoke(cli, list(args), env=env)


@pytest.fixture(name="log")
def _log(tmp_path: Path) -> Path:
    path = tmp_path / "t.jsonl"
    assert run("--tool", "echo", "--tool-input", HELLO, "--log", str(path)).exit_code == 0
    return path


def _head(path: Path) -> str:
    return line_hash(path.read_bytes().splitlines()[-1])


def _id(path: Path) -> str:
    return str(orjson.loads(path.read_bytes().splitlines()[0])["transcriptId"])


class TestGroupWithoutSubcommand:
    @pytest.mark.parametrize("args", [[], ["transcript"]], ids=["root", "transcript"])
    def test_prints_help_and_exits_0(self, args: list[str]) -> None:
        """A command group run without a subcommand prints its --help on stdout, exit 0."""
        result = run(*args)
        assert result.exit_code == 0
        assert result.stderr == ""
        assert result.stdout == run(*args, "--help").stdout


class TestVerifyCommand:
    def test_clean(self, log: Path) -> None:
        """A clean transcript: summary, head hash, exit 0."""
        result = run("transcript", "verify", str(log))
        assert result.exit_code == 0
        assert result.stdout == (
            f"[mini-harness] Transcript: {log}\n"
            f"[mini-harness] Format version {FORMAT_VERSION}, transcript id {_id(log)}\n"
            "[mini-harness] Lines: 4 (last seq 3), runs: 1, calls: 1\n"
            f"[mini-harness] Head hash: {_head(log)}\n"
            "[mini-harness] Verified: no problems found.\n"
        )
        assert result.stderr == ""

    def test_problems_exit_1(self, log: Path) -> None:
        """Problems are listed one per line and the command exits 1."""
        with log.open("ab") as handle:
            handle.write(b"\0" * 10)
        result = run("transcript", "verify", str(log))
        assert result.exit_code == 1
        problems = [line for line in result.stdout.splitlines() if "Problem:" in line]
        assert problems == [
            "[mini-harness] Problem: torn tail at line 5, byte "
            f"{log.stat().st_size - 10}: 10 bytes (no newline at end of file)"
        ]
        assert result.stderr == f"[mini-harness] Error: 1 problem found in {log}\n"

    def test_unreadable_exit_2(self, tmp_path: Path) -> None:
        """A missing file or a file that is not a transcript exits 2 with one error line."""
        result = run("transcript", "verify", str(tmp_path / "absent.jsonl"))
        assert result.exit_code == 2
        assert "cannot read transcript" in result.stderr
        notes = tmp_path / "notes.txt"
        notes.write_text("hello\n")
        result = run("transcript", "verify", str(notes))
        assert result.exit_code == 2
        assert result.stderr.startswith("[mini-harness] Error: ")
        assert "is not a mini-harness transcript" in result.stderr

    def test_json_report(self, log: Path) -> None:
        """--json prints one object with the same findings."""
        result = run("transcript", "verify", "--json", str(log))
        assert result.exit_code == 0
        report = orjson.loads(result.stdout)
        assert report["ok"] is True
        assert report["headHash"] == _head(log)
        assert (report["lines"], report["problems"], report["inDoubt"]) == (4, [], [])


class TestRepairCommand:
    def test_quarantines_torn_tail(self, log: Path) -> None:
        """Repair copies the torn tail aside, says where, and leaves a clean file."""
        size = log.stat().st_size
        with log.open("ab") as handle:
            handle.write(b'{"type":"ToolCal')
        result = run("transcript", "repair", str(log))
        assert result.exit_code == 0
        assert result.stdout.splitlines()[0] == (
            f"[mini-harness] Torn tail: 16 bytes at byte {size} copied to {log}.torn-{size} "
            "and cut off"
        )
        assert result.stdout.endswith("[mini-harness] Verified: no problems found.\n")
        assert Path(f"{log}.torn-{size}").read_bytes() == b'{"type":"ToolCal'

    def test_a_one_byte_torn_tail_is_singular(self, log: Path) -> None:
        """The warning about a torn tail of one byte reads in the singular."""
        size = log.stat().st_size
        with log.open("ab") as handle:
            handle.write(b"{")
        result = run("--tool", "echo", "--tool-input", HELLO, "--log", str(log))
        assert result.stderr == (
            f"[mini-harness] Warning: {log}: 1 byte at byte {size} was not a complete event "
            f"(a torn tail, e.g. left by a crash); moved it to {log}.torn-{size}\n"
        )

    def test_nothing_to_repair(self, log: Path) -> None:
        """A clean file is left alone."""
        before = log.read_bytes()
        result = run("transcript", "repair", str(log))
        assert result.exit_code == 0
        assert result.stdout.startswith("[mini-harness] Nothing to repair.\n")
        assert log.read_bytes() == before

    def test_file_cut_while_created_is_repaired(self, tmp_path: Path) -> None:
        """A header cut by a crash is the whole file's torn tail: set aside, leaving it empty."""
        log = tmp_path / "f.jsonl"
        log.write_bytes(b'{"type":"TranscriptSta')
        result = run("transcript", "repair", str(log))
        assert result.exit_code == 0
        assert result.stdout == (
            f"[mini-harness] Torn tail: 22 bytes at byte 0 copied to {log}.torn-0 and cut off\n"
            f"[mini-harness] Transcript: {log}\n"
            "[mini-harness] Lines: 0, runs: 0, calls: 0\n"
            "[mini-harness] Head hash: (none)\n"
            "[mini-harness] The file is empty: the next append starts it with its "
            "TranscriptStarted line.\n"
        )
        assert log.read_bytes() == b""
        assert Path(f"{log}.torn-0").read_bytes() == b'{"type":"TranscriptSta'

    def test_empty_file_needs_no_repair(self, tmp_path: Path) -> None:
        """An empty file (created, then the crash) is left alone and exits 0."""
        log = tmp_path / "f.jsonl"
        log.write_bytes(b"")
        result = run("transcript", "repair", str(log))
        assert result.exit_code == 0
        assert result.stdout.startswith("[mini-harness] Nothing to repair.\n")
        assert result.stderr == ""

    def test_somebodys_file_is_not_repaired(self, tmp_path: Path) -> None:
        """A file of notes without a newline is refused (exit 2), not moved aside."""
        notes = tmp_path / "notes.txt"
        notes.write_bytes(b"my notes")
        result = run("transcript", "repair", str(notes))
        assert result.exit_code == 2
        assert result.stderr == (
            f"[mini-harness] Error: {notes} is not a mini-harness transcript (it has no "
            "TranscriptStarted line); refusing to write to it\n"
        )
        assert list(tmp_path.iterdir()) == [notes]

    def test_mid_file_damage_is_refused(self, log: Path) -> None:
        """Repair will not touch damage in the middle of a file and exits 1 saying why."""
        lines = log.read_bytes().splitlines(keepends=True)
        lines[1] = b"garbage\n"
        log.write_bytes(b"".join(lines))
        result = run("transcript", "repair", str(log))
        assert result.exit_code == 1
        assert re.match(
            r"\[mini-harness\] Error: cannot repair .*: line 2 \(byte \d+\) is damaged",
            result.stderr,
        )


class TestLogOptions:
    def test_redact_env_and_pattern(self, tmp_path: Path) -> None:
        """--redact-env and --redact-pattern keep secrets out of the file, not off the screen."""
        log = tmp_path / "t.jsonl"
        text = '{"text":"tok s3cr3t-value and ghp_abcdefgh"}'
        result = run(
            "--tool", "echo", "--tool-input", text, "--log", str(log),
            "--redact-env", "MY_TOKEN", "--redact-pattern", "ghp_[a-z]+", "--fsync", "always",
            env={"MY_TOKEN": "s3cr3t-value"},
        )  # fmt: skip
        assert result.exit_code == 0
        raw = log.read_bytes()
        assert b"s3cr3t" not in raw
        assert b"ghp_" not in raw
        assert raw.count(b'"text":"tok [REDACTED] and [REDACTED]"') == 2

    def test_max_event_bytes(self, tmp_path: Path) -> None:
        """--max-event-bytes records a large input as a marker."""
        log = tmp_path / "t.jsonl"
        text = orjson.dumps({"text": "z" * 5000}).decode()
        args = ["--tool", "echo", "--tool-input", text, "--log", str(log)]
        assert run(*args, "--max-event-bytes", "2048").exit_code == 0
        lines = [orjson.loads(line) for line in log.read_bytes().splitlines()]
        sizes = {line["type"]: len(orjson.dumps(line)) for line in lines}
        assert sizes["ToolCalled"] <= 2048
        assert sizes["ToolSucceeded"] <= 2048
        assert b'"$omitted"' in log.read_bytes()

    def test_log_to_a_fifo_is_refused_before_dispatching(self, tmp_path: Path) -> None:
        """--log at a FIFO (or /dev/stdout on a pipe) exits 2 and runs no tool."""
        pipe = tmp_path / "pipe"
        os.mkfifo(pipe)
        result = run("--tool", "echo", "--tool-input", HELLO, "--log", str(pipe))
        assert result.exit_code == 2
        assert result.stdout == ""
        assert result.stderr == (
            f"[mini-harness] Error: cannot write transcript {pipe}: it is not a regular file "
            "(a device, FIFO or socket cannot hold a transcript)\n"
        )

    def test_log_at_somebodys_file_is_refused(self, tmp_path: Path) -> None:
        """--log at a file that is not a transcript exits 2, runs no tool, leaves it alone."""
        notes = tmp_path / "notes.txt"
        notes.write_bytes(b"my notes")
        result = run("--tool", "echo", "--tool-input", HELLO, "--log", str(notes))
        assert result.exit_code == 2
        assert result.stdout == ""
        assert result.stderr == (
            f"[mini-harness] Error: {notes} is not a mini-harness transcript (it has no "
            "TranscriptStarted line); refusing to write to it\n"
        )
        assert notes.read_bytes() == b"my notes"
        assert list(tmp_path.iterdir()) == [notes]

    def test_torn_tail_set_aside_is_a_warning(self, log: Path) -> None:
        """When the writer sets a torn tail aside the user is told on stderr, and where."""
        size = log.stat().st_size
        with log.open("ab") as handle:
            handle.write(b'{"type":"ToolCal')
        result = run("--tool", "echo", "--tool-input", HELLO, "--log", str(log))
        assert result.exit_code == 0
        assert result.stderr == (
            f"[mini-harness] Warning: {log}: 16 bytes at byte {size} were not complete events "
            f"(a torn tail, e.g. left by a crash); moved them to {log}.torn-{size}\n"
        )
        assert Path(f"{log}.torn-{size}").read_bytes() == b'{"type":"ToolCal'

    @pytest.mark.parametrize(
        ("args", "message"),
        [
            (["--tool", "echo", "--fsync", "always"], "--fsync needs --log PATH"),
            (["--redact-env", "X"], "--redact-env needs --tool NAME"),
            (["--fsync", "never", "tools"], "--fsync cannot be combined with `tools`"),
            (
                ["--tool", "echo", "--log", "x.jsonl", "--redact-pattern", "("],
                "--redact-pattern '(' is not a valid regex",
            ),
            (
                ["--tool", "echo", "--log", "x.jsonl", "--redact-env", "MINI_HARNESS_NO_SUCH_VAR"],
                "--redact-env MINI_HARNESS_NO_SUCH_VAR: the variable is not set",
            ),
        ],
    )
    def test_misuse_is_a_usage_error(
        self, args: list[str], message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Log options without a log, or a bad pattern, exit 2 with a clear message."""
        monkeypatch.chdir(tmp_path)
        result = run(*args)
        assert result.exit_code == 2
        assert message in result.stderr


def _descriptors_to(path: Path) -> list[str]:
    fds = Path("/proc/self/fd")
    if not fds.is_dir():
        pytest.skip("needs /proc/self/fd")
    found = []
    for fd in os.listdir(fds):
        try:
            if os.readlink(fds / fd) == str(path):
                found.append(fd)
        except OSError:
            continue
    return found


class TestOpenedLog:
    def test_closed_even_when_the_command_fails(self, tmp_path: Path) -> None:
        """The --log transcript of root and mcp is closed on the way out, failure or not."""
        log = tmp_path / "t.jsonl"

        def record_then_fail() -> None:
            with opened_log(str(log), LogSettings(fsync="never")) as sink:
                assert _descriptors_to(log) != []
                ToolRuntime(ToolRegistry(), sink).start()
                raise RuntimeError("the command failed")

        with pytest.raises(RuntimeError):
            record_then_fail()
        assert _descriptors_to(log) == []
        assert log.read_bytes().endswith(b"\n")

    def test_no_path_records_nothing(self) -> None:
        """Without --log the commands dispatch against a sink that discards events."""
        with opened_log(None) as sink:
            assert isinstance(sink, NullSink)


class TestRepairAnUnfinishedRun:
    def test_repair_closes_a_crashed_run_which_can_then_be_resumed(
        self, readme_ws: Path, tmp_path: Path
    ) -> None:
        """A run whose process died after a tool call (no RunFinished) is closed by
        `repair --close-in-doubt` as interrupted with its steps and usage so far: the file
        then verifies clean, repair names the resume command, a second repair has nothing
        to do (exit 0), and the resume it names works."""
        script = tmp_path / "s.json"
        script.write_text(
            orjson.dumps(
                [
                    {"toolCalls": [{"name": "list_files"}], "usage": {"inputTokens": 7}},
                    {"text": "done"},
                ]
            ).decode()
        )
        log = tmp_path / "t.jsonl"
        assert run("run", "t", "--model", f"script:{script}", "--log", str(log)).exit_code == 0
        lines = log.read_bytes().splitlines(keepends=True)
        types = [orjson.loads(line)["type"] for line in lines]
        cut = types.index("ToolSucceeded") + 1  # the process died before the next request
        log.write_bytes(b"".join(lines[:cut]))
        run_id = orjson.loads(lines[1])["runId"]

        result = run("transcript", "repair", str(log))
        assert result.exit_code == 1
        assert "Use --close-in-doubt to record in-doubt calls and unfinished runs" in result.stdout

        result = run("transcript", "repair", "--close-in-doubt", str(log))
        assert result.exit_code == 0, result.output
        assert (
            f"[mini-harness] Closed unfinished run {run_id} as interrupted; to continue it: "
            f"mini-harness resume {log} --run {run_id}\n"
        ) in result.stdout
        last = orjson.loads(log.read_bytes().splitlines()[-1])
        assert (last["type"], last["stopReason"], last["steps"]) == (
            "RunFinished",
            "interrupted",
            1,
        )
        assert last["usage"]["inputTokens"] == 7
        assert run("transcript", "verify", str(log)).exit_code == 0

        again = run("transcript", "repair", "--close-in-doubt", str(log))
        assert again.exit_code == 0
        assert "[mini-harness] Nothing to repair.\n" in again.stdout

        resumed = run("resume", str(log), "--run", run_id, "--model", f"script:{script}")
        assert resumed.exit_code == 0, resumed.output
