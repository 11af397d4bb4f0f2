"""The writer writes the file it opened, and what it sets aside lands beside that file:
never through a link planted at a name, never into a directory swapped in since."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from mini_harness import ToolRegistry, ToolRuntime, TranscriptWriteError
from mini_harness.events import ToolCalled
from mini_harness.transcripts import JsonlTranscript, verify_transcript

TS = "2026-11-30T08:00:00.000000Z"


def _call(number: int) -> ToolCalled:
    return ToolCalled(TS, "r", f"c-{number}", "echo", {})


def _intact(log: Path) -> bool:
    """Whether `log` reads whole: no damage, an unbroken chain, no torn tail (its calls
    are left open on purpose)."""
    report = verify_transcript(log)
    return not report.damage() and report.torn_tail is None


@pytest.fixture(name="logs")
def _logs(tmp_path: Path) -> Path:
    (tmp_path / "ws" / "logs").mkdir(parents=True)
    (tmp_path / "outside").mkdir()
    return tmp_path / "ws" / "logs"


class TestSidecars:
    def test_a_torn_tail_is_set_aside_where_the_log_was_opened(
        self, logs: Path, tmp_path: Path
    ) -> None:
        """After its directory was swapped for a link to another place (where the same file
        is linked too), the torn tail's copy is made in the directory the log was opened
        in, not through the link."""
        outside = tmp_path / "outside"
        log = logs / "t.jsonl"
        sink = JsonlTranscript(log)
        sink.append(_call(1))
        os.link(log, outside / "t.jsonl")
        with log.open("ab") as handle:
            handle.write(b'{"type":"Tool')
        moved = logs.with_name("logs-moved")
        logs.rename(moved)
        logs.symlink_to(outside)
        sink.append(_call(2))
        sink.close()
        assert sorted(os.listdir(outside)) == ["t.jsonl"]
        aside = [name for name in os.listdir(moved) if ".torn-" in name]
        assert len(aside) == 1
        assert (moved / aside[0]).read_bytes() == b'{"type":"Tool'
        assert sink.quarantined[0].path.name == aside[0]

    def test_a_link_at_the_sidecars_name_is_not_followed(self, logs: Path, tmp_path: Path) -> None:
        """A symlink planted where the torn tail's copy would go is left alone: the copy
        takes the next free name, and nothing is written where the link leads."""
        log = logs / "t.jsonl"
        with JsonlTranscript(log) as sink:
            sink.append(_call(1))
        size = log.stat().st_size
        target = tmp_path / "outside" / "target"
        (logs / f"t.jsonl.torn-{size}").symlink_to(target)
        with log.open("ab") as handle:
            handle.write(b"\0" * 8)
        with JsonlTranscript(log) as sink:
            sink.append(_call(2))
        assert not target.exists()
        assert (logs / f"t.jsonl.torn-{size}.1").read_bytes() == b"\0" * 8

    def test_a_transcript_is_never_created_through_a_link(self, logs: Path, tmp_path: Path) -> None:
        """A symlink at the log's name that leads to no file is refused, and the file it
        leads to is not created."""
        target = tmp_path / "outside" / "planted.jsonl"
        (logs / "t.jsonl").symlink_to(target)
        with pytest.raises(TranscriptWriteError, match="symbolic link to a file that does not"):
            JsonlTranscript(logs / "t.jsonl")
        assert not target.exists()

    def test_a_link_the_user_made_to_a_transcript_is_followed(self, logs: Path) -> None:
        """A log path that is a symlink to an existing transcript appends to it."""
        real = logs / "real.jsonl"
        with JsonlTranscript(real) as sink:
            sink.append(_call(1))
        (logs / "link.jsonl").symlink_to(real)
        with JsonlTranscript(logs / "link.jsonl") as sink:
            sink.append(_call(2))
        assert real.read_bytes().count(b"\n") == 3
        assert _intact(real)


class TestMovedOrReplaced:
    def test_a_renamed_directory_stops_the_writer(self, logs: Path) -> None:
        """When a parent directory is renamed, the next append says the transcript was moved
        and writes nothing; so does every append after it."""
        log = logs / "t.jsonl"
        sink = JsonlTranscript(log)
        sink.append(_call(1))
        moved = logs.with_name("elsewhere")
        logs.rename(moved)
        before = (moved / "t.jsonl").read_bytes()
        for number in (2, 3):
            with pytest.raises(TranscriptWriteError) as info:
                sink.append(_call(number))
            assert info.value.message == (
                f"transcript {log} was moved or replaced while this process was writing it: "
                "the path now names no file; the writer stopped rather than go on writing a "
                "file that path no longer leads to"
            )
        sink.close()
        assert (moved / "t.jsonl").read_bytes() == before
        assert _intact(moved / "t.jsonl")

    def test_a_file_put_at_its_name_stops_the_writer(self, logs: Path) -> None:
        """A copy renamed over the transcript's name is not the transcript: the writer stops,
        and neither file gets the event."""
        log = logs / "t.jsonl"
        sink = JsonlTranscript(log)
        sink.append(_call(1))
        shutil.copy(log, logs / "copy")
        os.replace(logs / "copy", log)
        before = log.read_bytes()
        with pytest.raises(TranscriptWriteError, match="the path now names another file"):
            sink.append(_call(2))
        sink.close()
        assert log.read_bytes() == before

    def test_a_child_of_fork_does_not_open_a_file_put_at_its_name(
        self, logs: Path, registry: ToolRegistry
    ) -> None:
        """A writer used after `fork` opens its file again: a different file at the name is
        refused, not appended to."""
        log = logs / "t.jsonl"
        sink = JsonlTranscript(log)
        runtime = ToolRuntime(registry, sink)
        runtime.dispatch("echo", {"text": "before"})
        shutil.copy(log, logs / "copy")
        os.replace(logs / "copy", log)
        before = log.read_bytes()
        pid = os.fork()
        if pid == 0:  # child
            code = 3
            try:
                sink.append(_call(9))
                code = 1
            except TranscriptWriteError as exc:
                code = 0 if "the path now names another file" in exc.message else 2
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        sink.close()
        assert os.waitstatus_to_exitcode(status) == 0
        assert log.read_bytes() == before

    def test_the_writer_goes_on_when_nothing_moved(self, logs: Path) -> None:
        """Appends through an untouched path go on as always (one writer, then another)."""
        log = logs / "t.jsonl"
        for number in range(3):
            with JsonlTranscript(log) as sink:
                sink.append(_call(number))
                assert sink.identity == (log.stat().st_dev, log.stat().st_ino)
        assert _intact(log)
