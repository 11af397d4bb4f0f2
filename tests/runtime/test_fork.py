"""A ToolRuntime shared across os.fork: parent and child keep one run, with distinct call ids."""

from __future__ import annotations

import os
import re
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path

import orjson
import pytest

from mini_harness import MemorySink, ToolRegistry, ToolRuntime
from mini_harness.events import Event, RunStarted
from mini_harness.transcripts import JsonlTranscript, verify_transcript

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")

CALL_ID = re.compile(r"[0-9a-f]{12}-[0-9]+")


def _in_child(body: Callable[[], object], *, timeout: float = 20.0) -> int:
    """Fork, run `body` in the child (exit 0 if it returns, 1 if it raises); the child's
    exit status. A child still running after `timeout` seconds is killed (status -9)."""
    pid = os.fork()
    if pid == 0:
        status = 1
        try:
            body()
            status = 0
        finally:
            os._exit(status)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.01)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    return -signal.SIGKILL


def _calls(path: Path) -> list[dict[str, object]]:
    lines = [orjson.loads(line) for line in path.read_bytes().splitlines()]
    return [line for line in lines if line["type"] == "ToolCalled"]


class TestCallIds:
    def test_parent_and_child_never_give_the_same_call_id(
        self, tmp_path: Path, registry: ToolRegistry
    ) -> None:
        """Both processes go on numbering their calls after the fork; the transcript they
        share still has one ToolCalled per call id, and verify finds no protocol problem."""
        log = tmp_path / "t.jsonl"
        with JsonlTranscript(log) as sink:
            runtime = ToolRuntime(registry, sink)
            runtime.dispatch("echo", {"text": "before"})

            def child() -> None:
                for _ in range(20):
                    runtime.dispatch("echo", {"text": "child"})

            assert _in_child(child) == 0
            for _ in range(20):
                runtime.dispatch("echo", {"text": "parent"})
        calls = _calls(log)
        ids = [call["callId"] for call in calls]
        assert len(ids) == 41
        assert len(set(ids)) == 41
        assert all(CALL_ID.fullmatch(str(call_id)) for call_id in ids)
        assert {call["runId"] for call in calls} == {runtime.run_id}
        report = verify_transcript(log)
        assert report.protocol == ()
        assert report.ok

    def test_two_children_of_one_parent_differ_too(
        self, tmp_path: Path, registry: ToolRegistry
    ) -> None:
        """Each child numbers its calls apart from its siblings', not only from the parent's."""
        log = tmp_path / "t.jsonl"
        with JsonlTranscript(log) as sink:
            runtime = ToolRuntime(registry, sink)
            runtime.dispatch("echo", {"text": "before"})
            for _ in range(2):
                assert _in_child(lambda: runtime.dispatch("echo", {"text": "child"})) == 0
        ids = [call["callId"] for call in _calls(log)]
        assert len(set(ids)) == len(ids) == 3
        assert verify_transcript(log).protocol == ()

    def test_the_child_counts_the_calls_begun_before_the_fork(self, registry: ToolRegistry) -> None:
        """`calls` goes on from the parent's count in the child."""
        runtime = ToolRuntime(registry, MemorySink())
        runtime.dispatch("echo", {"text": "a"})
        runtime.dispatch("echo", {"text": "b"})

        def child() -> None:
            runtime.dispatch("echo", {"text": "c"})
            assert runtime.calls == 3

        assert _in_child(child) == 0
        assert runtime.calls == 2

    def test_a_run_not_started_at_the_fork_is_a_run_of_its_own_in_the_child(
        self, tmp_path: Path, registry: ToolRegistry
    ) -> None:
        """Both processes would start the same run: the child starts one of its own."""
        log = tmp_path / "t.jsonl"
        with JsonlTranscript(log) as sink:
            runtime = ToolRuntime(registry, sink)
            parent_run = runtime.run_id
            assert _in_child(lambda: runtime.dispatch("echo", {"text": "child"})) == 0
            runtime.dispatch("echo", {"text": "parent"})
        lines = [orjson.loads(line) for line in log.read_bytes().splitlines()]
        started = [line["runId"] for line in lines if line["type"] == "RunStarted"]
        assert len(started) == 2
        assert parent_run in started
        (child_run,) = set(started) - {parent_run}
        assert re.fullmatch(rf"{parent_run}-[0-9a-f]{{12}}", child_run)
        assert runtime.run_id == parent_run
        report = verify_transcript(log)
        assert report.ok
        assert report.protocol == ()

    def test_a_run_id_given_still_names_the_childs_run(self, registry: ToolRegistry) -> None:
        """The child's own run carries the id the caller chose, so it can still be found."""
        runtime = ToolRuntime(registry, MemorySink(), run_id="job-42")

        def child() -> None:
            runtime.dispatch("echo", {"text": "child"})
            assert re.fullmatch(r"job-42-[0-9a-f]{12}", runtime.run_id)

        assert _in_child(child) == 0
        assert runtime.run_id == "job-42"


class _BlockingSink(MemorySink):
    """Holds RunStarted until `release` is set, so the runtime's start lock stays held."""

    def __init__(self) -> None:
        super().__init__()
        self.holding = threading.Event()
        self.release = threading.Event()

    def emit(self, event: Event) -> None:
        if isinstance(event, RunStarted) and not self.release.is_set():
            self.holding.set()
            self.release.wait(30)
        super().emit(event)


class TestStartLock:
    def test_a_fork_while_another_thread_starts_the_run_does_not_hang_the_child(
        self, registry: ToolRegistry
    ) -> None:
        """A thread inside start() at the moment of the fork does not exist in the child:
        the child must not wait for it to give the lock back."""
        sink = _BlockingSink()
        runtime = ToolRuntime(registry, sink)
        parent_run = runtime.run_id
        starter = threading.Thread(target=runtime.dispatch, args=("echo", {"text": "t"}))
        starter.start()
        try:
            assert sink.holding.wait(10)

            def child() -> None:
                # The child's own copy, a new Event: the parent's thread may have held the
                # old one's lock at the fork. Its RunStarted goes through.
                sink.release = threading.Event()
                sink.release.set()
                result = runtime.dispatch("echo", {"text": "child"})
                assert result.output == {"text": "child"}
                # The parent's thread starts the parent's run; the child's is another.
                assert runtime.run_id.startswith(f"{parent_run}-")
                started = sink.events[-3]
                assert isinstance(started, RunStarted)
                assert started.run_id == runtime.run_id

            assert _in_child(child, timeout=10) == 0
        finally:
            sink.release.set()
            starter.join(10)
        started = sink.events[-3]
        assert isinstance(started, RunStarted)
        assert started.run_id == parent_run
        assert [type(e).__name__ for e in sink.events[-3:]] == [
            "RunStarted",
            "ToolCalled",
            "ToolSucceeded",
        ]
