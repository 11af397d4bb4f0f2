"""Crashes: SIGKILL at random points in always mode, and during a slow tool (items 3, 10)."""

from __future__ import annotations

import os
import random
import select
import signal
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from mini_harness import ToolDefinition, ToolRuntime
from mini_harness.cli import cli
from mini_harness.events import ToolFailed, ToolSucceeded
from mini_harness.tools import default_registry
from mini_harness.transcripts import (
    JsonlTranscript,
    read_transcript,
    repair_transcript,
    verify_transcript,
)

BIG = "b" * 100_000  # every 7th call writes a line large enough to be cut by a kill


def _dispatch_until_killed(log: Path, report_fd: int, label: str) -> None:
    """Child: dispatch forever in always mode; report each dispatch once it has returned."""
    try:
        with JsonlTranscript(log, fsync="always") as sink:
            runtime = ToolRuntime(default_registry(), sink)
            for index in range(1_000_000):
                text = f"{label}-{index}"
                runtime.dispatch("echo", {"text": text + (BIG if index % 7 == 3 else "")})
                os.write(report_fd, text.encode() + b"\n")
    finally:
        os._exit(0)


def _read_all(fd: int, first: bytes = b"") -> list[str]:
    chunks = [first]
    while chunk := os.read(fd, 65536):
        chunks.append(chunk)
    os.close(fd)
    return b"".join(chunks).decode().split()


def _kill_one(log: Path, label: str, delay: float) -> list[str]:
    """Fork a dispatching child, SIGKILL it after `delay` s; return what it reported."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read_fd)
        _dispatch_until_killed(log, write_fd, label)
    os.close(write_fd)
    # Start the clock once the child has returned from its first dispatch, so that a slow
    # start on a loaded machine does not turn every kill into a kill before any work.
    first = b""
    ready, _, _ = select.select([read_fd], [], [], 30)
    if ready:
        first = os.read(read_fd, 65536)
    time.sleep(delay)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    return _read_all(read_fd, first)


class TestSigkill:
    @pytest.mark.parametrize("kills", [60, pytest.param(600, marks=pytest.mark.thorough)])
    def test_every_returned_dispatch_survives_sigkill(self, tmp_path: Path, kills: int) -> None:
        """Kill a writer at random points, again and again: every dispatch it reported as
        returned is in the log, verify finds at most a torn tail and in-doubt calls, and the
        next writer appends cleanly."""
        rng = random.Random(3)
        per_log = 6
        total = 0
        for group in range(0, kills, per_log):
            log = tmp_path / f"crash-{group}.jsonl"
            reported: list[str] = []
            for kill in range(group, min(group + per_log, kills)):
                reported += _kill_one(log, f"k{kill}", rng.uniform(0.0, 0.03))
                report = verify_transcript(log) if log.exists() else None
                if report is None:
                    continue
                assert report.damaged == ()
                assert report.integrity == ()
                assert report.protocol == ()
            recorded = {
                r.event.output["text"][:40].rstrip("b")
                for r in read_transcript(log)
                if isinstance(r.event, ToolSucceeded)
            }
            assert set(reported) <= recorded
            total += len(reported)
            repair_transcript(log, close_in_doubt=True)
            with JsonlTranscript(log, fsync="always") as sink:
                ToolRuntime(default_registry(), sink).dispatch("echo", {"text": "after"})
            assert verify_transcript(log).ok
        assert total > kills // 4  # the children did get to dispatch between kills


def _slow_child(log: Path, report_fd: int) -> None:
    try:
        registry = default_registry()

        def slow(data: object) -> object:
            os.write(report_fd, b"started\n")
            time.sleep(60)
            return data

        registry.register(ToolDefinition("slow", "Takes its time.", {"type": "object"}), slow)
        with JsonlTranscript(log, fsync="always") as sink:
            runtime = ToolRuntime(registry, sink)
            runtime.dispatch("echo", {"text": "quick"})
            runtime.dispatch("slow", {})
    finally:
        os._exit(0)


class TestKillDuringSlowTool:
    def test_killed_call_is_in_doubt_until_repair_closes_it(self, tmp_path: Path) -> None:
        """A process killed inside a tool leaves an in-doubt call; `transcript repair
        --close-in-doubt` records it as interrupted and the log then verifies clean."""
        log = tmp_path / "t.jsonl"
        read_fd, write_fd = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(read_fd)
            _slow_child(log, write_fd)
        os.close(write_fd)
        assert os.read(read_fd, 8) == b"started\n"
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        os.close(read_fd)
        [call] = verify_transcript(log).in_doubt
        assert call.name == "slow"

        runner = CliRunner()
        result = runner.invoke(cli, ["transcript", "verify", str(log)])
        assert result.exit_code == 1
        assert (
            f"[mini-harness] Problem: line 5 (seq 4): call {call.call_id} (slow) is in doubt: "
            "ToolCalled without a terminal event\n"
        ) in result.stdout
        result = runner.invoke(cli, ["transcript", "repair", str(log)])
        assert result.exit_code == 1
        assert "Use --close-in-doubt" in result.stdout
        result = runner.invoke(cli, ["transcript", "repair", "--close-in-doubt", str(log)])
        assert result.exit_code == 0
        assert result.stdout.startswith(
            f"[mini-harness] Closed in-doubt call {call.call_id} (slow) as interrupted\n"
        )
        last = read_transcript(log)[-1].event
        assert isinstance(last, ToolFailed)
        assert (last.call_id, last.error.kind) == (call.call_id, "interrupted")
        assert runner.invoke(cli, ["transcript", "verify", str(log)]).exit_code == 0
