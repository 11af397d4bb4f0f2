from __future__ import annotations

import fcntl
import multiprocessing
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

import orjson
import pytest

from mini_harness.errors import TranscriptWriteError
from mini_harness.events import Event, ToolCalled, ToolSucceeded
from mini_harness.tools import default_registry
from mini_harness.transcripts import JsonlTranscript, TranscriptReader, verify_transcript
from mini_harness.transcripts.writer import FsyncMode


def _append(path: str, label: str, count: int) -> None:
    with JsonlTranscript(path) as sink:
        from mini_harness import ToolRuntime

        runtime = ToolRuntime(default_registry(), sink)
        for index in range(count):
            runtime.dispatch("echo", {"text": f"{label}-{index}"})


class TestConcurrentProcesses:
    def test_two_processes_never_interleave(self, tmp_path: Path) -> None:
        """2 processes x 2,000 dispatches: 8,000+ whole lines, dense seq, unbroken chain."""
        path = tmp_path / "shared.jsonl"
        ctx = multiprocessing.get_context("spawn")
        workers = [ctx.Process(target=_append, args=(str(path), f"p{i}", 2000)) for i in (0, 1)]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join(120)
            assert worker.exitcode == 0
        raw = path.read_bytes().splitlines()
        assert all(orjson.loads(line) for line in raw)
        reader = TranscriptReader(path)
        records = list(reader)
        assert len(records) >= 8000
        assert [r.seq for r in records] == list(range(len(records)))
        assert reader.problems == []
        assert reader.torn_tail is None
        outputs = [r.event.output["text"] for r in records if isinstance(r.event, ToolSucceeded)]
        assert sorted(outputs) == sorted(f"p{i}-{n}" for i in (0, 1) for n in range(2000))
        assert sum(isinstance(r.event, ToolCalled) for r in records) == 4000


BIG = "x" * 70_000  # over 64 KB: more than one pipe buffer, more than one read chunk


def _append_large(path: str, label: str, count: int) -> None:
    with JsonlTranscript(path, fsync="never") as sink:
        from mini_harness import ToolRuntime

        runtime = ToolRuntime(default_registry(), sink)
        for index in range(count):
            padding = BIG if index % 50 == 7 else ""
            runtime.dispatch("echo", {"text": f"{label}-{index}{padding}"})


def _run_processes(target: Callable[..., None], args: list[tuple[object, ...]]) -> None:
    ctx = multiprocessing.get_context("spawn")
    workers = [ctx.Process(target=target, args=a) for a in args]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(300)
        assert worker.exitcode == 0


class TestEightProcesses:
    @pytest.mark.parametrize("per_process", [1000, pytest.param(3000, marks=pytest.mark.thorough)])
    def test_eight_writers_with_large_lines_lose_nothing(
        self, tmp_path: Path, per_process: int
    ) -> None:
        """8 processes appending at once, some lines over 64 KB: every line parses, seq is
        dense, the chain is unbroken and every dispatch is there exactly once."""
        path = tmp_path / "shared.jsonl"
        _run_processes(_append_large, [(str(path), f"p{i}", per_process) for i in range(8)])
        raw = path.read_bytes().splitlines()
        assert all(orjson.loads(line) for line in raw)
        assert sum(len(line) > 64 * 1024 for line in raw) >= 8 * 2 * (per_process // 50)
        report = verify_transcript(path)
        assert report.ok
        assert report.lines == len(raw) == 1 + 8 * (1 + 2 * per_process)
        assert report.last_seq == len(raw) - 1
        outputs = [
            r.event.output["text"][:20].rstrip("x")
            for r in TranscriptReader(path)
            if isinstance(r.event, ToolSucceeded)
        ]
        assert sorted(outputs) == sorted(f"p{i}-{n}" for i in range(8) for n in range(per_process))


def _append_for(path: str, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    with JsonlTranscript(path, fsync="never") as sink:
        from mini_harness import ToolRuntime

        runtime = ToolRuntime(default_registry(), sink)
        index = 0
        while time.monotonic() < deadline:
            padding = BIG if index % 5 == 0 else ""
            runtime.dispatch("echo", {"text": f"{index}{padding}"})
            index += 1


class TestReadersRacingWriters:
    def test_tail_readers_see_a_growing_prefix(self, tmp_path: Path) -> None:
        """While two processes append, repeated reads never fail, never see a broken chain,
        and only ever see a torn tail at the very end; readers never cut the file."""
        path = tmp_path / "live.jsonl"
        JsonlTranscript(path).close()
        ctx = multiprocessing.get_context("spawn")
        writers = [ctx.Process(target=_append_for, args=(str(path), 1.0)) for _ in range(2)]
        for writer in writers:
            writer.start()
        seen, reads, sizes = 0, 0, [0]
        while any(w.is_alive() for w in writers) or reads < 5:
            reader = TranscriptReader(path)
            records = list(reader)
            reads += 1
            assert reader.problems == []
            assert [r.seq for r in records] == list(range(len(records)))
            assert len(records) >= seen
            seen = len(records)
            if reader.torn_tail is not None:
                assert reader.torn_tail.line == len(records) + 1
            sizes.append(path.stat().st_size)
        for writer in writers:
            writer.join(30)
            assert writer.exitcode == 0
        assert sizes == sorted(sizes)
        assert reads > 5
        assert verify_transcript(path).ok


class TestLockDiscipline:
    def test_threads_and_two_writers_in_one_process(self, tmp_path: Path) -> None:
        """Threads sharing one writer, and a second writer on the same file in the same
        process, never interleave lines."""
        from mini_harness import ToolRuntime

        path = tmp_path / "threads.jsonl"
        first, second = JsonlTranscript(path), JsonlTranscript(path)

        def work(sink: JsonlTranscript, label: str) -> None:
            runtime = ToolRuntime(default_registry(), sink)
            for index in range(150):
                runtime.dispatch(
                    "echo", {"text": f"{label}-{index}" + ("y" * 70_000 if index % 30 == 0 else "")}
                )

        threads = [
            threading.Thread(target=work, args=(sink, f"{name}{n}"))
            for n in range(3)
            for name, sink in (("a", first), ("b", second))
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        first.close()
        second.close()
        report = verify_transcript(path)
        assert report.ok
        assert report.calls == 6 * 150

    def test_closing_another_descriptor_keeps_the_lock(self, tmp_path: Path) -> None:
        """The writer's lock survives another descriptor of the same file being closed in
        the same process (the fcntl-lock pitfall): another process still cannot take it."""
        path = tmp_path / "t.jsonl"
        sink = JsonlTranscript(path)
        fcntl.flock(sink._fd, fcntl.LOCK_EX)  # the writer's own descriptor, as append locks it
        os.close(os.open(path, os.O_RDONLY))
        path.open("rb").close()
        pid = os.fork()
        if pid == 0:
            fd = os.open(path, os.O_RDWR)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os._exit(0)
            os._exit(1)
        _, status = os.waitpid(pid, 0)
        fcntl.flock(sink._fd, fcntl.LOCK_UN)
        assert os.waitstatus_to_exitcode(status) == 0
        sink.close()


def _lock_is_free(path: Path) -> bool:
    """Whether another open file description could take the transcript's lock now."""
    fd = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    finally:
        os.close(fd)  # closing the only descriptor also drops a lock it took
    return True


def _hammer(path: str, seconds: float) -> None:
    """A child process dispatching as fast as it can for `seconds`."""
    from mini_harness import ToolRuntime

    with JsonlTranscript(path) as sink:
        runtime = ToolRuntime(default_registry(), sink)
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            runtime.dispatch("echo", {"text": "busy"})


def _event(text: str) -> ToolCalled:
    return ToolCalled("2026-11-30T08:00:00.000000Z", "r" * 32, "c-1", "echo", {"text": text})


class TestLockPerAppend:
    """Each append takes the file's lock and gives it back before it returns."""

    def test_every_append_releases_the_lock(self, tmp_path: Path) -> None:
        """Between appends another process could take the lock at once."""
        path = tmp_path / "t.jsonl"
        with JsonlTranscript(path, fsync="never") as sink:
            for text in "abc":
                sink.append(_event(text))
                assert _lock_is_free(path)

    def test_recover_gives_the_lock_back(self, tmp_path: Path) -> None:
        """recover() locks and unlocks the file itself; appends go on after it."""
        path = tmp_path / "t.jsonl"
        with JsonlTranscript(path, fsync="never") as sink:
            sink.append(_event("a"))
            sink.recover()
            assert _lock_is_free(path)
            sink.append(_event("b"))
        assert [r.seq for r in TranscriptReader(path)] == [0, 1, 2]

    def test_a_busy_writer_still_lets_another_process_append(self, tmp_path: Path) -> None:
        """While another process dispatches flat out, this one's appends each get a turn."""
        path = tmp_path / "t.jsonl"
        JsonlTranscript(path).close()
        child = multiprocessing.get_context("spawn").Process(target=_hammer, args=(str(path), 3))
        child.start()
        try:
            while path.stat().st_size < 20_000:  # the child is dispatching
                assert child.is_alive()
                time.sleep(0.01)
            waits = []
            with JsonlTranscript(path) as sink:
                for index in range(20):
                    start = time.monotonic()
                    sink.append(_event(f"mine-{index}"))
                    waits.append(time.monotonic() - start)
                    time.sleep(0.005)
        finally:
            child.join(30)
        assert child.exitcode == 0
        assert max(waits) < 2.0, waits  # a turn is microseconds; starvation would be seconds
        reader = TranscriptReader(path)
        records = list(reader)
        assert reader.problems == []
        assert [r.seq for r in records] == list(range(len(records)))
        texts = [
            r.event.input["text"]
            for r in records
            if isinstance(r.event, ToolCalled) and r.event.input["text"].startswith("mine-")
        ]
        assert texts == [f"mine-{index}" for index in range(20)]

    def test_two_writers_of_one_process_take_turns(self, tmp_path: Path) -> None:
        """Two writers of one file in one process interleave into one dense sequence."""
        path = tmp_path / "t.jsonl"
        first = JsonlTranscript(path, fsync="never")
        second = JsonlTranscript(path, fsync="never")
        for index in range(10):
            first.append(_event(f"first-{index}"))
            second.append(_event(f"second-{index}"))
        first.close()
        second.close()
        records = list(TranscriptReader(path))
        assert [r.seq for r in records] == list(range(len(records)))
        assert len(records) == 1 + 20


class TestLockFailures:
    """Cuts and syncs under the right lock state, interrupts, forks."""

    def test_a_failed_write_is_cut_off_before_the_lock_is_given_back(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """ENOSPC mid-line: the fragment is cut while the lock is held, then it is released."""
        import errno

        path = tmp_path / "t.jsonl"
        sink = JsonlTranscript(path, fsync="never")
        sink.append(_event("a"))
        real_write, real_truncate = os.write, os.ftruncate
        seen: list[bool] = []

        def short_then_full(fd: int, data: bytes) -> int:
            if data.endswith(b"\n") and b'"b"' in data:
                real_write(fd, data[:10])
                raise OSError(errno.ENOSPC, "No space left on device")
            return real_write(fd, data)

        def truncate(fd: int, length: int) -> None:
            seen.append(_lock_is_free(path))
            real_truncate(fd, length)

        monkeypatch.setattr(os, "write", short_then_full)
        monkeypatch.setattr(os, "ftruncate", truncate)
        with pytest.raises(TranscriptWriteError):
            sink.append(_event("b"))
        assert seen == [False]  # cut while this writer still held the lock
        assert _lock_is_free(path)  # and given back after
        monkeypatch.undo()
        sink.append(_event("c"))
        sink.close()
        reader = TranscriptReader(path)
        assert [r.seq for r in reader] == [0, 1, 2]
        assert reader.problems == []

    def test_no_sync_happens_under_the_lock(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """fsync="always": another process is never kept waiting for this writer's disk."""
        path = tmp_path / "t.jsonl"
        sink = JsonlTranscript(path, fsync="always")
        real_fsync = os.fsync
        free: list[bool] = []

        def fsync(fd: int) -> None:
            free.append(_lock_is_free(path))
            real_fsync(fd)

        monkeypatch.setattr(os, "fsync", fsync)
        for text in "abc":
            sink.append(_event(text))
        sink.close()
        assert free  # the mode synced
        assert all(free)

    def test_an_interrupt_after_the_write_releases_the_lock(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Ctrl-C right after a line was written leaves the file unlocked and appendable."""
        path = tmp_path / "t.jsonl"
        sink = JsonlTranscript(path, fsync="never")
        sink.append(_event("a"))
        real = JsonlTranscript._write_event

        def interrupted(self: JsonlTranscript, event: Event) -> None:
            real(self, event)
            raise KeyboardInterrupt

        monkeypatch.setattr(JsonlTranscript, "_write_event", interrupted)
        with pytest.raises(KeyboardInterrupt):
            sink.append(_event("b"))
        assert _lock_is_free(path)
        monkeypatch.undo()
        sink.append(_event("c"))
        sink.close()
        reader = TranscriptReader(path)
        assert [r.seq for r in reader] == [0, 1, 2, 3]
        assert reader.problems == []

    @pytest.mark.parametrize("fsync", ["always", "never"])
    def test_an_append_that_fails_gives_the_lock_back(
        self, tmp_path: Path, fsync: FsyncMode
    ) -> None:
        """A line that cannot be recorded must not leave the file locked."""
        path = tmp_path / "t.jsonl"
        sink = JsonlTranscript(path, fsync=fsync)
        sink.append(_event("a"))
        with pytest.raises(TranscriptWriteError):
            sink.append(_event("\udcff"))  # a lone surrogate: not JSON
        assert _lock_is_free(path)
        sink.append(_event("b"))  # still usable
        sink.close()
        assert len(path.read_bytes().splitlines()) == 3

    def test_a_fork_child_appends_through_its_own_descriptor(self, tmp_path: Path) -> None:
        """A writer used in a forked child continues the file's chain from the parent's."""
        path = tmp_path / "t.jsonl"
        sink = JsonlTranscript(path, fsync="never")
        sink.append(_event("parent"))
        pid = os.fork()
        if pid == 0:
            try:
                sink.append(_event("child"))
                sink.close()
            finally:
                os._exit(0)
        os.waitpid(pid, 0)
        sink.append(_event("parent again"))
        sink.close()
        reader = TranscriptReader(path)
        texts = [r.event.input["text"] for r in reader if isinstance(r.event, ToolCalled)]
        assert reader.problems == []
        assert texts == ["parent", "child", "parent again"]

    def test_the_parents_lock_excludes_a_fork_child(self, tmp_path: Path) -> None:
        """The child's writer opens the file again: a lock the parent holds makes it wait
        (through the inherited descriptor it would share the parent's lock and write)."""
        path = tmp_path / "t.jsonl"
        sink = JsonlTranscript(path, fsync="never")
        sink.append(_event("parent"))
        fcntl.flock(sink._fd, fcntl.LOCK_EX)  # as if the parent were mid-append
        pid = os.fork()
        if pid == 0:
            appended = threading.Event()

            def append() -> None:
                sink.append(_event("child"))
                appended.set()

            threading.Thread(target=append, daemon=True).start()
            os._exit(1 if appended.wait(0.3) else 0)
        _, status = os.waitpid(pid, 0)
        fcntl.flock(sink._fd, fcntl.LOCK_UN)
        assert os.waitstatus_to_exitcode(status) == 0
        sink.append(_event("parent again"))
        sink.close()
        reader = TranscriptReader(path)
        texts = [r.event.input["text"] for r in reader if isinstance(r.event, ToolCalled)]
        assert reader.problems == []
        assert texts == ["parent", "parent again"]
