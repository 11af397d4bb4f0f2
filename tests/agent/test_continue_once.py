"""A run is continued once: a second resume of the same run, sequential or racing in
another process, refuses and dispatches nothing; forks branch as often as asked."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from mini_harness.errors import RunContinuedError, RunInProgressError
from mini_harness.events import RunFinished, RunOrigin, RunStarted, Usage, utc_timestamp
from mini_harness.replay import fold_agent_runs
from mini_harness.transcripts import JsonlTranscript, verify_transcript
from tests.agent.recorded_runs import (
    NO_KEYS,
    counting_registry,
    cut_after,
    executions,
    invoke,
    write_script,
)

RESPONSES: list[dict[str, Any]] = [
    {"toolCalls": [{"name": "look", "arguments": {"n": 1}}]},
    {"toolCalls": [{"name": "slow", "arguments": {"n": 2}}]},
    {"text": "Done."},
]


class Pending:
    """A run cut right after the answer that asked for `slow` n=2: the call is pending, so
    whoever resumes the run dispatches it."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.spec, self.side_file, _ = counting_registry(directory)
        full = directory / "full.jsonl"
        model = write_script(directory / "script.json", RESPONSES)
        result = invoke(["run", "Task", "--model", model, "--registry", self.spec,
                         "--log", str(full), "--approve", "auto"])  # fmt: skip
        assert result.exit_code == 0, result.output
        self.log = directory / "t.jsonl"
        cut_after(full, self.log, "ModelResponded", 2)
        self.side_file.unlink()
        self.run_id = fold_agent_runs(self.log)[0].run_id
        # Slow to answer: a racing resume finds the first still running.
        self.model = write_script(directory / "rest.json", [{"text": "Resumed.", "delayMs": 300}])

    def args(self, *extra: str) -> list[str]:
        return ["resume", str(self.log), *extra, "--model", self.model, "--registry",
                self.spec, "--approve", "auto"]  # fmt: skip


@pytest.fixture(name="pending")
def _pending(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Pending:
    monkeypatch.chdir(tmp_path)
    return Pending(tmp_path)


class TestSecondResume:
    def test_resume_then_resume_the_original_refuses(self, pending: Pending) -> None:
        """`resume --run ORIGINAL` after a resume exits 2, names the run that continued it,
        points to fork, and runs nothing again."""
        first = invoke(pending.args())
        assert first.exit_code == 0, first.output
        assert executions(pending.side_file) == {"slow 2": 1}
        resumed = fold_agent_runs(pending.log)[-1].run_id
        before = pending.log.read_bytes()
        again = invoke(pending.args("--run", pending.run_id))
        assert again.exit_code == 2, again.output
        assert f"run {pending.run_id} was already resumed by run {resumed}" in again.output
        assert f"mini-harness fork --run {pending.run_id} --at-step N" in again.output
        assert executions(pending.side_file) == {"slow 2": 1}
        assert pending.log.read_bytes() == before

    def test_a_resumed_run_and_a_fork_each_resume_once(self, pending: Pending) -> None:
        """Continuing the run that continued it is fine, as is resuming a fork; forks of a
        resumed run are not claims, however many."""
        assert invoke(pending.args()).exit_code == 0
        assert invoke(pending.args("Go on")).exit_code == 0  # the last run: the resumed one
        fork_model = write_script(pending.directory / "fork.json", [{"text": "Forked."}])
        for _ in range(2):
            forked = invoke(["fork", str(pending.log), "--run", pending.run_id, "--at-step",
                             "1", "--model", fork_model, "--registry", pending.spec])  # fmt: skip
            assert forked.exit_code == 0, forked.output
        fork_id = fold_agent_runs(pending.log)[-1].run_id
        assert invoke(pending.args("--run", fork_id, "More")).exit_code == 0
        refused = invoke(pending.args("--run", fork_id, "Again"))
        assert refused.exit_code == 2
        assert f"run {fork_id} was already resumed by run" in refused.output
        runs = fold_agent_runs(pending.log)
        assert [bool(run.resumed_from) for run in runs] == [False, True, True, False, False, True]
        assert executions(pending.side_file) == {"slow 2": 1}
        assert verify_transcript(pending.log).problems() == []


class TestRacingResumes:
    def race(self, pending: Pending, *extra: str) -> list[tuple[int, str]]:
        """Start two `resume` processes together; their exit codes and standard errors."""
        mini_harness = str(Path(sys.executable).parent / "mini-harness")
        env = {k: v for k, v in os.environ.items() if k not in NO_KEYS}
        processes = [
            subprocess.Popen(
                [mini_harness, *pending.args(*extra)],
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                env=env,
                cwd=pending.directory,
            )
            for _ in range(2)
        ]
        return [(p.wait(timeout=120), p.communicate()[1].decode()) for p in processes]

    @pytest.mark.parametrize("which", ["--run", "last"])
    def test_two_processes_never_both_act(
        self, pending: Pending, thorough: bool, which: str
    ) -> None:
        """Two `resume` processes started together on one transcript: the pending call runs
        once, from the one run that resumes the original (5 tries; 25 with --thorough).
        Naming the run, the other refuses; taking the last run, it may find the first's
        run still going (and refuse) or ended with an answer (and end with it)."""
        original = pending.log.read_bytes()
        extra = ("--run", pending.run_id) if which == "--run" else ()
        for attempt in range(25 if thorough else 5):
            pending.log.write_bytes(original)
            pending.side_file.unlink(missing_ok=True)
            done = self.race(pending, *extra)
            codes = sorted(code for code, _ in done)
            assert codes == [0, 2] if extra else codes in ([0, 0], [0, 2]), (attempt, done)
            for code, stderr in done:
                assert (
                    code == 0
                    or "already resumed by run" in stderr
                    or (
                        "is still running in another process" in stderr
                        or "recorded more events while its history was being read" in stderr
                    )
                ), stderr
            assert executions(pending.side_file) == {"slow 2": 1}, (attempt, done)
            runs = fold_agent_runs(pending.log)
            resumed = [run for run in runs if run.resumed_from is not None]
            assert resumed[0].resumed_from == RunOrigin(pending.run_id, 2)
            assert all(run.stop_reason == "final" for run in runs[1:])
            assert verify_transcript(pending.log).problems() == []


class TestClaimUnderTheLock:
    A, B, C, D, E = ("a" * 32, "b" * 32, "c" * 32, "d" * 32, "e" * 32)

    def started(self, run_id: str, **origin: Any) -> RunStarted:
        return RunStarted(ts=utc_timestamp(), run_id=run_id, harness="t", tools=(), task="t",
                          **origin)  # fmt: skip

    def finished(self, run_id: str) -> RunFinished:
        return RunFinished(ts=utc_timestamp(), run_id=run_id, stop_reason="final",
                           final_text="ok", steps=1, usage=Usage())  # fmt: skip

    @pytest.fixture(name="log")
    def _log(self, tmp_path: Path) -> Path:
        """A transcript with one finished agent run, A."""
        log = tmp_path / "t.jsonl"
        with JsonlTranscript(log) as setup:
            setup.emit(self.started(self.A))
            setup.emit(self.finished(self.A))
        return log

    def test_the_second_claim_is_refused(self, log: Path) -> None:
        """Two writers that both read the file before either claimed A: the first claim is
        written, the second raises naming it and writes nothing; a fork is no claim."""
        first, second = JsonlTranscript(log), JsonlTranscript(log)
        with first, second:
            first.recover()
            second.recover()
            since = first.end
            assert since == second.end == log.stat().st_size
            first.continuing(self.A, since=since).emit(
                self.started(self.B, resumed_from=RunOrigin(self.A, 1))
            )
            size = log.stat().st_size
            claim = second.continuing(self.A, since=since, read=[self.A])
            with pytest.raises(RunContinuedError) as refused:
                claim.emit(self.started(self.C, resumed_from=RunOrigin(self.A, 1)))
            assert (refused.value.run_id, refused.value.by) == (self.A, self.B)
            assert log.stat().st_size == size
            claim.emit(self.started(self.D, forked_from=RunOrigin(self.A, 1)))
        assert verify_transcript(log).damage() == []
        assert [run.run_id for run in fold_agent_runs(log)] == [self.A, self.B, self.D]

    def test_a_run_still_being_written_is_not_claimed(self, log: Path) -> None:
        """While a writer holds run B (begun, not finished) no one may resume it; once it
        has finished, one may, unless B recorded more since that one read the file."""
        running, other = JsonlTranscript(log), JsonlTranscript(log)
        with running, other:
            running.emit(self.started(self.B))
            other.recover()
            since = other.end
            with pytest.raises(RunInProgressError, match="still running in another process"):
                other.continuing(self.B, since=since).emit(
                    self.started(self.C, resumed_from=RunOrigin(self.B, 0))
                )
            running.emit(self.finished(self.B))
            with pytest.raises(RunInProgressError, match="recorded more events while"):
                other.continuing(self.B, since=since, read=[self.B]).emit(
                    self.started(self.C, resumed_from=RunOrigin(self.B, 0))
                )
            other.recover()
            other.continuing(self.B, since=other.end, read=[self.B]).emit(
                self.started(self.E, resumed_from=RunOrigin(self.B, 1))
            )
        assert fold_agent_runs(log)[-1].resumed_from == RunOrigin(self.B, 1)
