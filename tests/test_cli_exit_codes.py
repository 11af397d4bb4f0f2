"""Exit codes by one rule (errors.exit_code_of): whichever command reads a transcript says
the same of it. A transcript damaged mid-file cannot be used (2); a log with problems or a
call in doubt is a failure (1); a sound log is 0."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from mini_harness.cli import cli
from mini_harness.errors import ExitCode, exit_code_of

READERS = [["replay"], ["show"], ["view"]]
"""The commands that read a transcript's history."""


def invoke(args: list[str], path: Path) -> Result:
    extra = ["-o", str(path.with_suffix(".page.html"))] if args == ["view"] else []
    return CliRunner().invoke(cli, [*args, str(path), *extra])


@pytest.fixture(name="sound")
def _sound(tmp_path: Path) -> Path:
    """Two echo calls, both ended."""
    log = tmp_path / "t.jsonl"
    for text in ("a", "b"):
        args = ["--tool", "echo", "--tool-input", f'{{"text":"{text}"}}', "--log", str(log)]
        assert CliRunner().invoke(cli, args).exit_code == 0
    return log


@pytest.fixture(name="damaged")
def _damaged(sound: Path) -> Path:
    """A line in the middle that is not JSON, with good lines after it."""
    lines = sound.read_bytes().splitlines(keepends=True)
    lines[3] = b'{"garbage\n'
    path = sound.with_name("damaged.jsonl")
    path.write_bytes(b"".join(lines))
    return path


@pytest.fixture(name="unfinished")
def _unfinished(sound: Path) -> Path:
    """The last call's terminal event cut off: the call is in doubt."""
    lines = sound.read_bytes().splitlines(keepends=True)
    path = sound.with_name("unfinished.jsonl")
    path.write_bytes(b"".join(lines[:-1]))
    return path


class TestOneRule:
    @pytest.mark.parametrize("command", [*READERS, ["transcript", "verify"]])
    def test_a_sound_log_is_0(self, command: list[str], sound: Path) -> None:
        """Every reader of a sound transcript exits 0."""
        result = invoke(command, sound)
        assert result.exit_code == 0, result.output

    @pytest.mark.parametrize("command", READERS)
    def test_damage_mid_file_is_2(self, command: list[str], damaged: Path) -> None:
        """A line damaged mid-file is input that cannot be used: exit 2 for replay, show and
        view alike (show and view still show what came before it), one error line."""
        result = invoke(command, damaged)
        assert result.exit_code == 2, result.output
        assert result.stderr.count("[mini-harness] Error: ") == 1

    @pytest.mark.parametrize("command", [*READERS, ["transcript", "verify"]])
    def test_a_call_in_doubt_is_1(self, command: list[str], unfinished: Path) -> None:
        """An unfinished call is a failure of the log: exit 1 for every reader, with one
        error line that says so."""
        result = invoke(command, unfinished)
        assert result.exit_code == 1, result.output
        (line,) = [line for line in result.stderr.splitlines() if "Error: " in line]
        assert "in doubt" in line or "1 problem" in line

    def test_verify_finds_damage_a_problem(self, damaged: Path) -> None:
        """`transcript verify` is the check: the damage it finds is a problem (exit 1); it
        exits 2 only for what it cannot read as a transcript at all."""
        assert invoke(["transcript", "verify"], damaged).exit_code == 1


class TestTheMapping:
    @pytest.mark.parametrize(
        ("outcome", "code"),
        [
            ({}, ExitCode.OK),
            ({"stop_reason": "final"}, ExitCode.OK),
            ({"stop_reason": "max_steps"}, ExitCode.FAILED),
            ({"stop_reason": "cancelled"}, ExitCode.INTERRUPTED),
            ({"problems": ["torn-tail"]}, ExitCode.FAILED),
            ({"problems": ["integrity", "damage"]}, ExitCode.USAGE),
            ({"in_doubt": 1}, ExitCode.FAILED),
            ({"differs": True}, ExitCode.FAILED),
            ({"failed": True}, ExitCode.FAILED),
            ({"unreadable": True}, ExitCode.USAGE),
            ({"interrupted": True, "problems": ["damage"]}, ExitCode.INTERRUPTED),
        ],
    )
    def test_outcome_to_code(self, outcome: dict[str, object], code: ExitCode) -> None:
        """What a command did and found maps to one exit code, the same for every command."""
        assert exit_code_of(**outcome) == code  # type: ignore[arg-type]
