"""Reading from pipes and standard input, in bounded memory, and checking against a kept head
(issue 16 items 11 and 13, issue 17 items 16, 17 and 18)."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner, Result

from mini_harness import ToolRegistry, ToolRuntime, TranscriptError, TranscriptFormatError
from mini_harness.cli import cli
from mini_harness.replay import fold_transcript
from mini_harness.transcripts import (
    MAX_LINE_BYTES,
    JsonlTranscript,
    TranscriptReader,
    line_hash,
    repair_transcript,
    verify_transcript,
)
from tests.replay.timeline_fixtures import SCRIPT
from tests.streams import read_once

MIB = 1024 * 1024


def run(*args: str, stdin: bytes | None = None) -> Result:
    return CliRunner().invoke(cli, list(args), input=stdin)


@pytest.fixture(name="fifo")
def _fifo(tmp_path: Path, log: Path) -> Iterator[Path]:
    """A FIFO that a thread fills with the transcript once a reader opens it."""
    path = tmp_path / "pipe"
    os.mkfifo(path)
    data = log.read_bytes()

    def feed() -> None:
        with path.open("wb") as out:  # blocks until the reader opens the other end
            out.write(data)

    feeder = threading.Thread(target=feed, daemon=True)
    feeder.start()
    yield path
    if feeder.is_alive():  # the test never opened it: open it so the thread can end
        with path.open("rb") as handle:
            handle.read()
    feeder.join(timeout=10)


def _cli_process(*args: str, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "mini_harness", *args],
        input=stdin,
        capture_output=True,
        timeout=60,
        check=False,
    )


class TestStreams:
    def test_verify_reads_a_fifo(self, fifo: Path, log: Path) -> None:
        """`transcript verify FIFO` reads the pipe once, front to back, and finds it clean."""
        result = run("transcript", "verify", str(fifo))
        assert result.exit_code == 0, result.output
        assert f"Head hash: {verify_transcript(log).head_hash}" in result.stdout

    def test_replay_reads_a_fifo(self, fifo: Path) -> None:
        """`replay FIFO` folds what comes through the pipe."""
        result = run("replay", str(fifo))
        assert result.exit_code == 0, result.output
        assert "1 run, 3 calls: 3 succeeded, 0 failed, 0 in doubt" in result.stdout

    def test_dash_is_standard_input(self, log: Path) -> None:
        """`-` reads the transcript from standard input, for verify and replay alike."""
        verified = run("transcript", "verify", "-", stdin=log.read_bytes())
        assert verified.exit_code == 0, verified.output
        assert "Transcript: standard input" in verified.stdout
        replayed = run("replay", "--json", "-", stdin=log.read_bytes())
        assert replayed.exit_code == 0, replayed.output
        assert orjson.loads(replayed.stdout)["totals"]["calls"] == 3

    def test_a_real_pipe_on_standard_input(self, log: Path) -> None:
        """In a real process, `verify -` reads a pipe on its standard input."""
        done = _cli_process("transcript", "verify", "-", stdin=log.read_bytes())
        assert done.returncode == 0, done.stderr
        assert b"Verified: no problems found." in done.stdout

    @pytest.mark.skipif(not Path("/dev/fd").exists(), reason="needs /dev/fd")
    def test_process_substitution(self, log: Path) -> None:
        """`replay <(cat t.jsonl)` (a /dev/fd pipe that cannot seek) is read as a stream."""
        script = f'exec "$0" -m mini_harness replay <(cat {log})'
        done = subprocess.run(
            ["bash", "-c", script, sys.executable],
            capture_output=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        assert b"3 calls: 3 succeeded" in done.stdout

    def test_repair_refuses_a_fifo(self, fifo: Path) -> None:
        """Repair writes, so a pipe is refused with exit 2 and says why."""
        result = run("transcript", "repair", str(fifo))
        assert result.exit_code == 2
        assert "it is not a regular file" in result.stderr
        assert "no such file" not in result.stderr

    def test_rerun_reads_a_pipe_once(self, log: Path, tmp_path: Path) -> None:
        """`replay FIFO --rerun` reads the pipe once: every call is re-run and compared,
        although the pipe gives nothing to a second reading."""
        with read_once(tmp_path / "once", log.read_bytes()) as pipe:
            result = run("replay", str(pipe), "--rerun")
        assert result.exit_code == 0, result.output
        assert "[mini-harness] Re-run: 3 matched, 0 diverged" in result.stdout

    def test_rerun_of_standard_input(self, log: Path) -> None:
        """`replay - --rerun` re-runs the calls read from standard input."""
        result = run("replay", "-", "--rerun", "--json", stdin=log.read_bytes())
        assert result.exit_code == 0, result.output
        assert orjson.loads(result.stdout)["rerun"]["matched"] == 3

    def test_offline_replay_of_standard_input(self, tmp_path: Path) -> None:
        """An agent run read from standard input is replayed offline, its tools run again."""
        workspace = tmp_path / "ws"
        workspace.mkdir()
        (workspace / "README.md").write_text("# Demo\n")
        script, log = tmp_path / "script.json", tmp_path / "agent.jsonl"
        script.write_bytes(orjson.dumps(SCRIPT))
        recorded = run(
            "run", "What is this?", "--model", f"script:{script}", "--log", str(log),
            "--workspace", str(workspace),
        )  # fmt: skip
        assert recorded.exit_code == 0, recorded.output
        args = ("replay", "-", "--rerun", "--workspace", str(workspace))
        result = run(*args, stdin=log.read_bytes())
        assert result.exit_code == 0, result.output
        assert "replayed: identical through step 3" in result.stdout

    @pytest.mark.parametrize("command", [["resume"], ["fork", "--at-step", "1"]])
    def test_resume_and_fork_need_a_file(self, log: Path, command: list[str]) -> None:
        """Resume and fork append to the transcript they continue and verify it first:
        standard input is refused (exit 2), saying so, and not read."""
        result = run(command[0], "-", *command[1:], stdin=log.read_bytes())
        assert result.exit_code == 2
        assert f"cannot {command[0]} from standard input: it is not a regular file" in (
            result.stderr
        )

    def test_live_model_needs_a_file(self, log: Path) -> None:
        """--live-model acts on what the transcript records, which is verified first: a
        pipe cannot be, so it is refused with a way out."""
        result = run("replay", "-", "--rerun", "--live-model", stdin=log.read_bytes())
        assert result.exit_code == 2
        assert "save it to a file" in result.stderr

    def test_repair_refuses_standard_input(self) -> None:
        """`transcript repair -` is refused the same way."""
        with pytest.raises(TranscriptError, match="standard input: it is not a regular file"):
            repair_transcript("-")


class TestNoFirstLine:
    def test_verify_of_an_empty_file_fails(self, tmp_path: Path) -> None:
        """A 0-byte file is not a transcript yet: verify says so and exits 1."""
        empty = tmp_path / "empty.jsonl"
        empty.write_bytes(b"")
        result = run("transcript", "verify", str(empty))
        assert result.exit_code == 1
        assert "Problem: the file is empty" in result.stdout
        assert not verify_transcript(empty).ok

    def test_replay_of_an_empty_file_fails(self, tmp_path: Path) -> None:
        """Replay of a 0-byte file reports the missing first line and exits 1."""
        empty = tmp_path / "empty.jsonl"
        empty.write_bytes(b"")
        result = run("replay", str(empty))
        assert result.exit_code == 1
        assert "the file is empty" in result.stdout

    @pytest.mark.parametrize("command", [["replay"], ["transcript", "verify"]])
    def test_dev_null_is_not_a_transcript(self, command: list[str]) -> None:
        """/dev/null is not a file: exit 2 with one error line naming it."""
        result = run(*command, "/dev/null")
        assert result.exit_code == 2
        assert result.stderr == (
            "[mini-harness] Error: /dev/null is not a mini-harness transcript "
            "(it has no first line)\n"
        )


def _peak_rss_of(code: str) -> tuple[str, int]:
    """Run `code` in a child interpreter; its stdout and its peak RSS in KiB (VmHWM)."""
    probe = (
        f"{code}\n"
        "with open('/proc/self/status') as status:\n"
        "    print(next(l.split()[1] for l in status if l.startswith('VmHWM:')))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=600, check=True
    )
    *out, peak = done.stdout.splitlines()
    return "\n".join(out), int(peak)


def _torn(log: Path, size: int) -> str:
    """Append `size` bytes without a newline to `log`; the SHA-256 of that tail."""
    digest = hashlib.sha256()
    chunk = b"x" * MIB
    with log.open("ab") as out:
        left = size
        while left:
            piece = chunk[: min(left, MIB)]
            out.write(piece)
            digest.update(piece)
            left -= len(piece)
    return digest.hexdigest()


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs Linux /proc")
class TestBoundedMemory:
    def test_a_long_torn_tail_is_streamed(self, log: Path) -> None:
        """A torn tail longer than the longest line read is counted and hashed, not held."""
        size = MAX_LINE_BYTES + 8 * MIB
        digest = _torn(log, size)
        code = (
            "from mini_harness.transcripts import verify_transcript\n"
            f"tail = verify_transcript({str(log)!r}).torn_tail\n"
            "print(tail.line, tail.length, tail.sha256)"
        )
        out, peak = _peak_rss_of(code)
        assert out == f"9 {size} {digest}"
        assert peak < (MAX_LINE_BYTES + 48 * MIB) // 1024  # the bounded line, and no copy

    @pytest.mark.thorough
    def test_a_gigabyte_torn_tail(self, log: Path) -> None:
        """A 1 GiB torn tail verifies and replays in bounded memory (figure in reliability.md)."""
        size = 1024 * MIB
        digest = _torn(log, size)
        for call in ("verify_transcript", "fold_transcript"):
            module = "transcripts" if call == "verify_transcript" else "replay"
            code = (
                f"from mini_harness.{module} import {call}\n"
                f"print({call}({str(log)!r}).problems"
                f"{'()' if call == 'verify_transcript' else ''}[-1])"
            )
            out, peak = _peak_rss_of(code)
            assert f"{size} bytes" in out
            assert peak < 200 * 1024, f"{call}: {peak} KiB"
        assert verify_transcript(log).torn_tail.sha256 == digest  # type: ignore[union-attr]

    def test_a_torn_tail_after_a_bad_line_is_hashed_whole(self, log: Path) -> None:
        """The torn tail's hash covers every byte from its first bad line to the end."""
        tail = b"{oops\n" + b"junk without an end"
        with log.open("ab") as out:
            out.write(tail)
        report = verify_transcript(log)
        assert report.torn_tail is not None
        assert report.torn_tail.length == len(tail)
        assert report.torn_tail.sha256 == hashlib.sha256(tail).hexdigest()

    def test_a_symlink_to_dev_zero_is_refused(self, tmp_path: Path) -> None:
        """A transcript path leading to /dev/zero is refused at once, in little memory."""
        link = tmp_path / "zero.jsonl"
        link.symlink_to("/dev/zero")
        code = (
            "from mini_harness.transcripts import verify_transcript\n"
            "from mini_harness.errors import TranscriptFormatError\n"
            "try:\n"
            f"    verify_transcript({str(link)!r})\n"
            "except TranscriptFormatError as exc:\n"
            "    print(exc.message)"
        )
        out, peak = _peak_rss_of(code)
        assert out == f"{link} is not a mini-harness transcript (line 1 is longer than 65536 bytes)"
        assert peak < 100 * 1024

    def test_an_endless_line_in_a_pipe_stops_reading(self, log: Path) -> None:
        """After a good start, a line that never ends in a pipe is refused, not followed."""
        code = (
            "import sys\n"
            "from mini_harness.transcripts import verify_transcript\n"
            "from mini_harness.errors import TranscriptFormatError\n"
            "try:\n"
            "    verify_transcript('-')\n"
            "except TranscriptFormatError as exc:\n"
            "    print(exc.message)"
        )
        probe = (
            f"{code}\n"
            "with open('/proc/self/status') as status:\n"
            "    print(next(l.split()[1] for l in status if l.startswith('VmHWM:')))\n"
        )
        with subprocess.Popen(
            [sys.executable, "-c", probe], stdin=subprocess.PIPE, stdout=subprocess.PIPE
        ) as child:
            assert child.stdin is not None
            child.stdin.write(log.read_bytes())
            try:
                while True:  # the child stops reading: the write fails, the test goes on
                    child.stdin.write(b"\0" * MIB)
            except BrokenPipeError:
                pass
            out, _ = child.communicate(timeout=60)
        message, peak = out.decode().splitlines()
        assert message == (
            f"standard input: line 9 (byte {log.stat().st_size}) is longer than "
            f"{MAX_LINE_BYTES} bytes; standard input is not a regular file, so reading stops here"
        )
        assert int(peak) < (MAX_LINE_BYTES + 48 * MIB) // 1024

    def test_the_fold_reports_a_long_bad_line_as_damage(self, log: Path) -> None:
        """A line over the bound with good lines after it is damage, said with its size."""
        lines = log.read_bytes().splitlines(keepends=True)
        long_line = b"x" * (MAX_LINE_BYTES + 10) + b"\n"
        log.write_bytes(b"".join([*lines[:4], long_line, *lines[4:]]))
        report = verify_transcript(log)
        assert [d.describe() for d in report.damaged] == [
            f"line 5 (byte {sum(map(len, lines[:4]))}) is damaged: longer than "
            f"{MAX_LINE_BYTES} bytes"
        ]
        with pytest.raises(TranscriptError, match=r"line 5 .* longer than"):
            fold_transcript(log)


class TestHead:
    def test_the_kept_head_is_reached(self, log: Path, registry: ToolRegistry) -> None:
        """A head kept earlier passes while the file only grows after it."""
        head = verify_transcript(log).head_hash
        assert head is not None
        with JsonlTranscript(log) as sink:
            ToolRuntime(registry, sink).dispatch("echo", {"text": "later"})
        result = run("transcript", "verify", str(log), "--head", head)
        assert result.exit_code == 0, result.output
        assert f"Expected head {head} reached at line 8" in result.stdout

    @pytest.mark.parametrize("edit", ["last line edited", "last run cut"])
    def test_an_edit_that_keeps_the_chain_is_caught(self, log: Path, edit: str) -> None:
        """Editing the last line or cutting trailing lines verifies clean, but not with --head."""
        head = verify_transcript(log).head_hash
        assert head is not None
        lines = log.read_bytes().splitlines(keepends=True)
        if edit == "last line edited":
            lines[-1] = lines[-1].replace(b'"text":"c"', b'"text":"C"')
        else:
            lines = lines[:-2]
        log.write_bytes(b"".join(lines))
        assert run("transcript", "verify", str(log)).exit_code == 0
        result = run("transcript", "verify", str(log), "--head", head)
        assert result.exit_code == 1
        assert f"Problem: the chain does not reach head {head}" in result.stdout

    def test_json_carries_the_head(self, log: Path) -> None:
        """--json says which head was expected and whether the chain reached it."""
        head = verify_transcript(log).head_hash
        assert head is not None
        wrong = "0" * 32
        reached = orjson.loads(
            run("transcript", "verify", str(log), "--json", "--head", head).stdout
        )
        assert (reached["expectedHead"], reached["headReached"], reached["ok"]) == (
            head,
            True,
            True,
        )
        result = run("transcript", "verify", str(log), "--json", "--head", wrong)
        assert result.exit_code == 1
        missed = orjson.loads(result.stdout)
        assert (missed["expectedHead"], missed["headReached"], missed["ok"]) == (
            wrong,
            False,
            False,
        )

    @pytest.mark.parametrize("head", ["abc", "A" * 32, "g" * 32, "0" * 33])
    def test_a_malformed_head_is_a_usage_error(self, log: Path, head: str) -> None:
        """--head takes the 32 lowercase hex digits verify prints: anything else is exit 2."""
        result = run("transcript", "verify", str(log), "--head", head)
        assert result.exit_code == 2
        assert "--head must be a head hash" in result.stderr


class TestPrevIsComparedWhole:
    @pytest.mark.parametrize("position", [8, 16, 31])
    def test_a_prev_wrong_only_late_in_the_hash_is_reported(self, log: Path, position: int) -> None:
        """A `prev` equal to the right hash in its first digits but not after is a problem."""
        lines = log.read_bytes().splitlines(keepends=True)
        right = line_hash(lines[-2][:-1])
        wrong = right[:position] + ("0" if right[position] != "0" else "1") + right[position + 1 :]
        lines[-1] = lines[-1].replace(right.encode(), wrong.encode())
        log.write_bytes(b"".join(lines))
        report = verify_transcript(log)
        assert [(p.line, p.message) for p in report.integrity] == [
            (len(lines), "prev does not match the hash of the line before")
        ]


class TestReaderErrors:
    def test_a_missing_file(self, tmp_path: Path) -> None:
        """A file that is not there is a TranscriptError naming it."""
        with pytest.raises(TranscriptError, match=r"cannot read transcript .*missing"):
            list(TranscriptReader(tmp_path / "missing"))

    def test_an_empty_pipe_is_not_a_transcript(self) -> None:
        """Standard input that ends at once has no first line: refused (exit 2 on the CLI)."""
        result = run("transcript", "verify", "-", stdin=b"")
        assert result.exit_code == 2
        assert "standard input is not a mini-harness transcript (it has no first line)" in (
            result.stderr
        )

    def test_format_error_is_a_transcript_error(self) -> None:
        """Refusals are TranscriptFormatError, a TranscriptError."""
        assert issubclass(TranscriptFormatError, TranscriptError)
