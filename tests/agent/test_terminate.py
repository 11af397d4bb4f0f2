"""SIGTERM and SIGHUP end a run the way Ctrl-C does: `timeout`, a container stop or a
closed terminal leave a transcript whose run is finished (`cancelled`), not one stopped at
its last request; the exit status is 128 + the signal's number."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mini_harness.replay import fold_agent_runs
from mini_harness.transcripts import verify_transcript
from tests.agent.wire_servers import OpenAIWireServer, Stall


def start_run(tmp_path: Path, server: OpenAIWireServer, log: Path) -> subprocess.Popen[str]:
    env = {
        **os.environ,
        "OPENAI_API_KEY": "k",
        "OPENAI_BASE_URL": server.base_url,
        "PYTHONPATH": os.pathsep.join(sys.path),
    }
    command = [sys.executable, "-m", "mini_harness", "run", "Task", "--model",
               "openai:gpt-4o-mini", "--log", str(log)]  # fmt: skip
    return subprocess.Popen(
        command,
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
    )


def wait_for_request(log: Path, process: subprocess.Popen[str]) -> None:
    """Until the run has recorded its model request (and so is waiting for the model)."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if log.exists() and b'"ModelRequested"' in log.read_bytes():
            time.sleep(0.2)  # the request is on its way to the stalled server
            return
        assert process.poll() is None, process.communicate()
        time.sleep(0.01)
    raise AssertionError("the run never sent its request")


class TestTerminatingSignals:
    @pytest.mark.parametrize(
        ("signum", "status"), [(signal.SIGTERM, 143), (signal.SIGHUP, 129)], ids=["TERM", "HUP"]
    )
    def test_signal_during_a_request_finishes_the_run_as_cancelled(
        self, tmp_path: Path, signum: signal.Signals, status: int
    ) -> None:
        """A run signalled while it waits for a slow model records ModelFailed and
        RunFinished (cancelled), says why on stderr and exits 128 + the signal."""
        log = tmp_path / "t.jsonl"
        with OpenAIWireServer() as server:
            server.script(Stall(20))
            process = start_run(tmp_path, server, log)
            try:
                wait_for_request(log, process)
                process.send_signal(signum)
                _, stderr = process.communicate(timeout=15)
            finally:
                process.kill()
        assert process.returncode == status, stderr
        assert stderr.endswith(f"[mini-harness] Error: terminated by {signum.name}\n"), stderr
        (run,) = fold_agent_runs(log)
        assert run.stop_reason == "cancelled"
        assert verify_transcript(log).problems() == []

    def test_an_ignored_hangup_stays_ignored(self, tmp_path: Path) -> None:
        """Under `nohup` (SIGHUP ignored) a hang-up does not stop the run."""
        log = tmp_path / "t.jsonl"
        with OpenAIWireServer() as server:
            server.script(Stall(1.5))
            previous = signal.signal(signal.SIGHUP, signal.SIG_IGN)  # inherited by the child
            try:
                process = start_run(tmp_path, server, log)
            finally:
                signal.signal(signal.SIGHUP, previous)
            try:
                wait_for_request(log, process)
                process.send_signal(signal.SIGHUP)
                time.sleep(0.3)
                assert process.poll() is None
            finally:
                process.kill()
                process.communicate()
