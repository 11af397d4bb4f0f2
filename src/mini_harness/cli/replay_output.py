"""How `mini-harness replay` writes its report as the fold goes: text or one JSON document,
with a progress bar on a terminal for a large file."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable
from typing import Any, TextIO

import orjson

from mini_harness.cli.output import (
    echo,
    echo_json_stream,
    error,
    info,
    redacted_value,
    rewritable,
)
from mini_harness.errors import ExitCode, exit_code_of
from mini_harness.events import JsonObject
from mini_harness.replay import (
    OUTCOMES,
    Call,
    ContextReports,
    Drift,
    RerunOutcome,
    Run,
    TranscriptFold,
)
from mini_harness.replay.continuing.outcomes import differing
from mini_harness.replay.views import describe, report

PROGRESS_MIN_BYTES = 32 * 1024 * 1024
"""Files smaller than this finish too fast to need a progress bar."""
_PROGRESS_EVERY = 4096  # items between progress checks
_BATCH = 1024  # call lines written at once


def drive(fold: TranscriptFold, items: Iterable[Any], out: TextOutput | JsonOutput) -> int:
    """Feed every item to `out` (its `run`, `call`, `outcome` and `drift`), with progress on a
    terminal; `out.finish` prints the end and gives the exit code. Ctrl-C ends with what we
    have."""
    try:
        size = os.stat(fold.path).st_size
    except OSError:
        size = 0  # the reader reports it
    progress = Progress(fold, size) if size >= PROGRESS_MIN_BYTES else None
    handlers: dict[type, Callable[[Any], None]] = {
        Run: out.run,
        Call: out.call,
        RerunOutcome: out.outcome,
        Drift: out.drift,
    }
    interrupted = False
    try:
        for count, item in enumerate(items, 1):
            handlers[type(item)](item)
            if progress is not None and count % _PROGRESS_EVERY == 0:
                progress.update()
    except KeyboardInterrupt:
        interrupted = True
    finally:
        out.flush()  # what was found before a damaged line is still shown
        if progress is not None:
            progress.clear()
    code = out.finish(interrupted=interrupted)
    if not interrupted:
        return code
    error(f"interrupted at line {fold.reader.records_read}: the report above is partial")
    return exit_code_of(interrupted=True)


class Progress:
    """`[mini-harness] replay: 42% of 310 MB` on stderr, only when stderr is a terminal."""

    def __init__(self, fold: TranscriptFold, size: int, stream: TextIO | None = None) -> None:
        self.fold = fold
        self.size = size
        self.stream: TextIO = stream if stream is not None else sys.stderr
        self.enabled = rewritable(self.stream)
        self.shown = -1

    def update(self) -> None:
        if not self.enabled:
            return
        percent = self.fold.offset * 100 // max(self.size, 1)
        if percent != self.shown:
            self.shown = percent
            mb = self.size / 1_000_000
            self.stream.write(f"\r[mini-harness] replay: {percent}% of {mb:.0f} MB")
            self.stream.flush()

    def clear(self) -> None:
        if self.enabled and self.shown >= 0:
            self.stream.write("\r\x1b[K")
            self.stream.flush()


class ReplayOutput:
    """What the text and the JSON report share: the runs' context reports, the re-run's
    counts and the exit code."""

    def __init__(
        self,
        fold: TranscriptFold,
        *,
        rerun: bool,
        registry_spec: str | None = None,
        context_reports: ContextReports | None = None,
    ) -> None:
        self.fold = fold
        self.history = fold.history
        self.rerun = rerun
        self.counts: dict[str, int] = {}
        self.drifted: list[Drift] = []
        self.registry_spec = registry_spec  # --registry, if given
        self.unknown_tools: dict[str, None] = {}  # tools re-run calls found missing, in order
        self.unknown_calls = 0
        self.context_reports = context_reports  # with --context-report

    def reports(self) -> dict[str, str] | None:
        """Each run's context report (with --context-report): an agent run's is that of
        its last request (or of --step N's), as the live run printed it, rebuilt in the
        same pass as the fold."""
        if self.context_reports is None:
            return None
        reports = self.context_reports
        return {run.run_id: reports.report(run) for run in self.history.shown}

    def call(self, item: Call) -> None:
        if self.context_reports is not None:
            self.context_reports.add(item)

    def outcome(self, item: RerunOutcome[Call]) -> None:
        ReplayOutput.call(self, item.call)
        self.counts[item.outcome] = self.counts.get(item.outcome, 0) + 1
        current = item.current
        unknown = isinstance(current, dict) and current.get("kind") == "unknown_tool"
        if unknown and item.outcome != "matched":
            self.unknown_tools[item.call.name] = None
            self.unknown_calls += 1

    def missing_registry(self) -> str | None:
        """When every call that ran again found its tool missing: which registry to pass."""
        ran = sum(count for name, count in self.counts.items() if name != "skipped")
        if not ran or self.unknown_calls != ran:
            return None
        names = ", ".join(self.unknown_tools)
        where = (
            f"the registry {self.registry_spec} has none of the recorded tools ({names})"
            if self.registry_spec
            else f"the built-in tools do not include the recorded ones ({names})"
        )
        return (
            f"{where}: the transcript was probably recorded with other tools; pass their "
            "registry with --registry MODULE:ATTR"
        )

    def drift(self, item: Drift) -> None:
        self.drifted.append(item)

    def flush(self) -> None:
        return None

    def verdict(self) -> tuple[ExitCode, str]:
        """The exit code of the replay, and what its error line says when it is not 0 (with
        which registry to pass when the re-run found every tool missing)."""
        differs = differing(self.counts)
        code, message = describe.verdict_of(self.history, differs)
        hint = self.missing_registry() if differs else None
        return code, f"{message}; {hint}" if hint else message


class TextOutput(ReplayOutput):
    def __init__(self, fold: TranscriptFold, **settings: Any) -> None:
        super().__init__(fold, **settings)
        # Call lines are written in batches: one write per line costs as much as the fold.
        self.pending: list[str] = []
        what = "re-run against the current registry" if self.rerun else "fold: no handler is called"
        # Said with the first output, so that a file that cannot be read prints nothing here.
        self.header: str | None = f"Replaying {fold.path} ({what})"

    def write(self, text: str) -> None:
        self.pending.append(text)
        self.flush()

    def flush(self) -> None:
        if not self.pending:
            return
        if self.header is not None:
            info(self.header)
            self.header = None
        echo("".join(self.pending), nl=False)
        self.pending.clear()

    def run(self, item: Run) -> None:
        self.write(report.run_line(item) + "\n")

    def call(self, item: Call) -> None:
        super().call(item)
        pending = self.pending
        pending.append(report.call_line(item) + "\n")
        if len(pending) >= _BATCH:
            self.flush()

    def outcome(self, item: RerunOutcome[Call]) -> None:
        super().outcome(item)
        self.write("\n".join(report.outcome_lines(item)) + "\n")

    def drift(self, item: Drift) -> None:
        super().drift(item)
        self.write(report.drift_line(item) + "\n")

    def finish(self, *, interrupted: bool) -> int:
        history = self.history
        problems = history.problems
        lines = report.summary_lines(history.shown, problems, self.reports())
        self.write("\n".join(lines) + "\n")
        info(report.totals_line(history.totals, len(problems)))
        if self.rerun:
            info(report.rerun_line(self.counts, len(self.drifted)))
        code, message = self.verdict()
        if code and not interrupted:
            error(message)
        return code


class JsonOutput(ReplayOutput):
    """One JSON document, written as it goes: calls stream out one per line, in batches
    (one write per call costs more than folding it), each call kept as orjson's bytes
    until its batch is joined and written."""

    def __init__(self, fold: TranscriptFold, **settings: Any) -> None:
        super().__init__(fold, **settings)
        self.started = False
        self.first_call = True
        self.pending: list[str] = []
        self.calls: list[bytes] = []  # the batch of call lines not yet in `pending`

    def write(self, text: str) -> None:
        self._batch()
        self.pending.append(text)
        self.flush()

    def flush(self) -> None:
        self._batch()
        if self.pending:
            echo_json_stream("".join(self.pending))
            self.pending.clear()

    def _batch(self) -> None:
        """Move the batch of call lines into `pending`, one call a line."""
        if self.calls:
            lead = "\n" if self.first_call else ",\n"
            self.pending.append(lead + b",\n".join(self.calls).decode())
            self.first_call = False
            self.calls.clear()

    def _start(self) -> None:
        if not self.started:
            head = {"path": self.history.path, "transcriptId": self.history.transcript_id}
            self.pending.append(orjson.dumps(redacted_value(head)).decode()[:-1] + ',"calls":[')
            self.started = True

    def _emit_call(self, entry: JsonObject) -> None:
        if not self.started:
            self._start()
        calls = self.calls
        calls.append(orjson.dumps(redacted_value(entry)))
        if len(calls) >= _BATCH:
            self.flush()

    def run(self, item: Run) -> None:
        self._start()

    def call(self, item: Call) -> None:
        super().call(item)
        self._emit_call(item.to_json())

    def outcome(self, item: RerunOutcome[Call]) -> None:
        super().outcome(item)
        self._emit_call({**item.call.to_json(), "rerun": item.to_json()})

    def runs_json(self) -> list[JsonObject]:
        history = self.history
        reports = self.reports()
        runs = [history.run_json(run) for run in history.shown]
        if reports is not None:
            for run, entry in zip(history.shown, runs, strict=True):
                entry["contextReport"] = reports[run.run_id]
        return runs

    def finish(self, *, interrupted: bool) -> int:
        self._start()
        history = self.history
        problems = history.problems
        code, _ = self.verdict()
        tail: JsonObject = {
            "runs": list(self.runs_json()),
            "problems": [problem.to_json() for problem in problems],
            "totals": history.totals.to_json(),
            "drift": [drift.to_json() for drift in self.drifted],
            "rerun": {name: self.counts.get(name, 0) for name in OUTCOMES} if self.rerun else None,
            "interrupted": interrupted,
            "exitCode": exit_code_of(interrupted=True) if interrupted else code,
        }
        self.write("\n]," + orjson.dumps(redacted_value(tail)).decode()[1:] + "\n")
        return code
