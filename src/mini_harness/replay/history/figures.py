"""What a history counts: problems of the log, totals, and agent figures."""

from __future__ import annotations

from collections import Counter

import attrs

from mini_harness.events import JsonObject, Usage, to_wire
from mini_harness.transcripts.log_fold import RecordSource

UNFINISHED = "unfinished"
"""The stop reason shown for an agent run with no RunFinished (the process died)."""

CHAIN_KINDS = frozenset({"integrity", "torn-tail", "damage"})
"""The problems that mean the file is not as it was written (a broken hash chain, a
damaged line, a torn tail)."""


@attrs.frozen
class LogProblem:
    """Something wrong with the log itself. `kind` is integrity (a line out of the hash
    chain), protocol (calls and runs that do not begin and end as they must), torn-tail,
    damage (a line that is not an event, with good lines after it: reading stops there)
    or in-doubt (an agent run without RunFinished, a model request without a response)."""

    kind: str
    line: int
    message: str

    def describe(self) -> str:
        return f"line {self.line}: {self.message}"

    def to_json(self) -> JsonObject:
        return {"kind": self.kind, "line": self.line, "message": self.message}


def read_problems(reader: RecordSource) -> list[LogProblem]:
    """What reading a transcript found wrong with its lines: each break in the hash chain
    (integrity) and a torn tail, as a history names them."""
    found = [LogProblem("integrity", problem.line, problem.message) for problem in reader.problems]
    tail = reader.torn_tail
    if tail is not None:
        found.append(LogProblem("torn-tail", tail.line, tail.describe()))
    return found


@attrs.frozen
class Totals:
    """Counts over the runs shown."""

    events: int
    runs: int
    succeeded: int
    failed: int
    in_doubt: int
    unknown_events: int

    @property
    def calls(self) -> int:
        return self.succeeded + self.failed + self.in_doubt

    def to_json(self) -> JsonObject:
        return {
            "events": self.events,
            "runs": self.runs,
            "calls": self.calls,
            "succeeded": self.succeeded,
            "failed": self.failed,
            "inDoubt": self.in_doubt,
            "unknownEvents": self.unknown_events,
        }


@attrs.define
class AgentFigures:
    """Agent runs by stop reason and summed model usage, for one file or a corpus.

    A count a provider did not report adds nothing, so `usage` starts at zero and
    transcripts without agent runs simply report none.
    """

    stop_reasons: Counter[str] = attrs.Factory(Counter)
    responses: int = 0
    usage: Usage = attrs.Factory(lambda: Usage(0, 0, 0))
    _open_runs: set[str] = attrs.Factory(set)

    @property
    def runs(self) -> int:
        return sum(self.stop_reasons.values())

    def run_started(self, run_id: str) -> None:
        """An agent run (a RunStarted with a task) began."""
        self._open_runs.add(run_id)

    def run_finished(self, run_id: str, stop_reason: str) -> None:
        self._open_runs.discard(run_id)
        self.stop_reasons[stop_reason] += 1

    def responded(self, usage: Usage) -> None:
        """A model response; the counts of its `usage` are added."""
        self.responses += 1
        self.usage += usage

    def close(self) -> None:
        """At the end of a file: agent runs that never finished count as unfinished."""
        if self._open_runs:
            self.stop_reasons[UNFINISHED] += len(self._open_runs)
            self._open_runs.clear()

    def merge(self, other: AgentFigures) -> None:
        self.stop_reasons.update(other.stop_reasons)
        self.responses += other.responses
        self.usage += other.usage

    def to_json(self) -> JsonObject:
        reasons: JsonObject = {name: self.stop_reasons[name] for name in sorted(self.stop_reasons)}
        return {
            "runs": self.runs,
            "byStopReason": reasons,
            "modelResponses": self.responses,
            "usage": to_wire(self.usage),
        }
