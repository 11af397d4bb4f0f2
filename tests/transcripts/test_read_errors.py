"""A read of the transcript that fails (a failing disk, a vanished mount) is a TranscriptError
naming the file: exit 2 on the CLI, never a traceback or a message about something else."""

from __future__ import annotations

import errno
import io
import os
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from mini_harness import ToolRegistry, ToolRuntime
from mini_harness.cli import cli
from mini_harness.errors import TranscriptError, TranscriptWriteError
from mini_harness.replay import TranscriptFold
from mini_harness.transcripts import JsonlTranscript, TranscriptReader
from mini_harness.transcripts import writer as writer_module

EIO = "Input/output error"


class _FailingAfter(io.BufferedReader):
    """A transcript's handle whose lines fail to read after the first `good` ones."""

    def __init__(self, raw: io.FileIO, good: int) -> None:
        super().__init__(raw)
        self.good = good

    def readline(self, size: int | None = -1) -> bytes:
        if self.good <= 0:
            raise OSError(errno.EIO, EIO)
        self.good -= 1
        return super().readline(size)


@pytest.fixture(name="log")
def _log(tmp_path: Path, registry: ToolRegistry) -> Path:
    path = tmp_path / "t.jsonl"
    with JsonlTranscript(path) as sink:
        runtime = ToolRuntime(registry, sink)
        for index in range(10):
            runtime.dispatch("echo", {"text": f"call {index}"})
    return path


@pytest.fixture(name="failing_reads")
def _failing_reads(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every TranscriptReader's file fails to read at its fifth line."""
    opened = TranscriptReader._open

    def open_failing(self: TranscriptReader) -> tuple[io.BufferedReader, bool]:
        handle, regular = opened(self)
        raw = io.FileIO(os.dup(handle.fileno()))
        handle.close()
        return _FailingAfter(raw, good=4), regular

    monkeypatch.setattr(TranscriptReader, "_open", open_failing)


@pytest.mark.usefixtures("failing_reads")
class TestReading:
    def test_the_reader_names_the_file(self, log: Path) -> None:
        """A read that fails mid-file is a TranscriptError naming the file."""
        with pytest.raises(TranscriptError) as info:
            list(TranscriptReader(log))
        assert info.value.message == f"cannot read transcript {log}: {EIO}"

    def test_the_fold_names_the_file(self, log: Path) -> None:
        """The fold reports the failed read as the reader words it."""
        with pytest.raises(TranscriptError) as info:
            list(TranscriptFold(log))
        assert info.value.message == f"cannot read transcript {log}: {EIO}"

    @pytest.mark.parametrize("args", [["replay"], ["replay", "--json"], ["transcript", "verify"]])
    def test_the_commands_exit_2_with_one_error_line(self, log: Path, args: list[str]) -> None:
        """replay and verify exit 2 with one error line, no traceback."""
        result = CliRunner().invoke(cli, [*args, str(log)])
        assert result.exit_code == 2
        assert result.stderr == f"[mini-harness] Error: cannot read transcript {log}: {EIO}\n"


class TestAppending:
    def test_a_failed_read_of_the_first_line_on_open(
        self, log: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """The writer reads the head of an existing file when it opens it."""

        def fail(fd: int, path: Any) -> None:
            raise OSError(errno.EIO, EIO)

        monkeypatch.setattr(writer_module, "check_first_line", fail)
        with pytest.raises(TranscriptWriteError) as info:
            JsonlTranscript(log)
        assert info.value.message == f"cannot read transcript {log}: {EIO}"

    def test_a_failed_read_of_the_end_before_appending(
        self, log: Path, registry: ToolRegistry, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """The writer reads the file's last line (to continue seq and prev) before its first
        append; a failure there is said, and nothing is written."""
        size = log.stat().st_size

        def fail(fd: int, end: int) -> int:
            raise OSError(errno.EIO, EIO)

        monkeypatch.setattr(writer_module, "last_newline", fail)
        with JsonlTranscript(log) as sink:
            runtime = ToolRuntime(registry, sink)
            with pytest.raises(TranscriptWriteError) as info:
                runtime.dispatch("echo", {"text": "after"})
        assert info.value.message == (
            f"cannot append to {log}: reading or cutting its end failed: {EIO}"
        )
        assert log.stat().st_size == size


def _open_descriptors() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.mark.skipif(not Path("/proc/self/mem").exists(), reason="needs Linux /proc")
class TestFirstRead:
    """/proc/self/mem opens, but reading its first bytes fails with EIO."""

    MEM = Path("/proc/self/mem")

    def test_the_reader_names_the_file_and_closes_it(self) -> None:
        before = _open_descriptors()
        with pytest.raises(TranscriptError) as info:
            list(TranscriptReader(self.MEM))
        assert info.value.message == f"cannot read transcript {self.MEM}: {EIO}"
        assert _open_descriptors() == before

    def test_the_fold_names_the_file_and_closes_it(self) -> None:
        before = _open_descriptors()
        with pytest.raises(TranscriptError) as info:
            list(TranscriptFold(self.MEM))
        assert info.value.message == f"cannot read transcript {self.MEM}: {EIO}"
        assert _open_descriptors() == before

    def test_the_writer_closes_what_it_opened(self, registry: ToolRegistry) -> None:
        """A file whose head cannot be read is refused when the writer opens it."""
        before = _open_descriptors()
        with pytest.raises(TranscriptWriteError) as info:
            JsonlTranscript(self.MEM)
        assert info.value.message == f"cannot read transcript {self.MEM}: {EIO}"
        assert _open_descriptors() == before
