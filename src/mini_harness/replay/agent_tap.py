"""Agent-run figures of a fold: runs by stop reason and model usage, read in the same pass.

The fold reports tool calls; an agent run also records how it ended (`RunFinished`,
`stopReason`) and what each model response cost (`ModelResponded`, `usage` with
`inputTokens`, `outputTokens`, `cachedTokens`, as on the wire). TappedFold is the fold
with those events counted as its reader's records go by: a usage count is taken when it is
a number, zero otherwise (null when the provider did not say), so transcripts without
agent runs simply report none.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import attrs

from mini_harness.events import JsonObject, JsonValue, ModelResponded, RunFinished, RunStarted
from mini_harness.replay.fold import TranscriptFold
from mini_harness.replay.model import CallRecord, RunInfo
from mini_harness.transcripts.reader import TranscriptReader, TranscriptRecord

USAGE_KEYS = ("inputTokens", "outputTokens", "cachedTokens")
UNFINISHED = "unfinished"
"""The stop reason shown for an agent run with no RunFinished (the process died)."""


@attrs.define
class AgentFigures:
    """Agent runs by stop reason and summed model usage, for one file or a corpus."""

    stop_reasons: dict[str, int] = attrs.Factory(dict)
    responses: int = 0
    usage: dict[str, int] = attrs.Factory(lambda: dict.fromkeys(USAGE_KEYS, 0))
    _open_runs: set[str] = attrs.Factory(set)

    @property
    def runs(self) -> int:
        return sum(self.stop_reasons.values())

    def run_started(self, run_id: str, task: JsonValue) -> None:
        """A run began; it is an agent run when it records a task."""
        if task is not None:
            self._open_runs.add(run_id)

    def run_finished(self, run_id: str, stop_reason: JsonValue) -> None:
        self._open_runs.discard(run_id)
        key = stop_reason if isinstance(stop_reason, str) else UNFINISHED
        self.stop_reasons[key] = self.stop_reasons.get(key, 0) + 1

    def responded(self, usage: JsonValue) -> None:
        """A model response; its `usage` counts are added when they are numbers."""
        self.responses += 1
        if isinstance(usage, dict):
            for key in USAGE_KEYS:
                self.usage[key] += _count(usage.get(key))

    def close(self) -> None:
        """At the end of a file: agent runs that never finished count as unfinished."""
        if self._open_runs:
            self.stop_reasons[UNFINISHED] = self.stop_reasons.get(UNFINISHED, 0) + len(
                self._open_runs
            )
            self._open_runs.clear()

    def merge(self, other: AgentFigures) -> None:
        for reason, count in other.stop_reasons.items():
            self.stop_reasons[reason] = self.stop_reasons.get(reason, 0) + count
        self.responses += other.responses
        for key in USAGE_KEYS:
            self.usage[key] += other.usage[key]

    def to_json(self) -> JsonObject:
        reasons: JsonObject = {name: self.stop_reasons[name] for name in sorted(self.stop_reasons)}
        return {
            "runs": self.runs,
            "byStopReason": reasons,
            "modelResponses": self.responses,
            "usage": {key: self.usage[key] for key in USAGE_KEYS},
        }


def _count(value: JsonValue) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0
    return int(value)


class _TappedReader(TranscriptReader):
    """The fold's reader, telling `figures` of the agent-run events as their records pass."""

    def __init__(self, path: str | os.PathLike[str], figures: AgentFigures) -> None:
        super().__init__(path)
        self.figures = figures

    def __iter__(self) -> Iterator[TranscriptRecord]:
        figures = self.figures
        for record in super().__iter__():
            event = record.event
            if isinstance(event, ModelResponded):
                figures.responded(event.usage)
            elif isinstance(event, RunFinished):
                figures.run_finished(event.run_id, event.stop_reason)
            elif isinstance(event, RunStarted):
                figures.run_started(event.run_id, event.task)
            yield record


class TappedFold(TranscriptFold):
    """A TranscriptFold that also counts agent-run figures into `figures`, in the same pass."""

    def __init__(self, path: str | os.PathLike[str], figures: AgentFigures) -> None:
        super().__init__(path)
        self.reader = _TappedReader(path, figures)
        self.figures = figures

    def __iter__(self) -> Iterator[RunInfo | CallRecord]:
        yield from super().__iter__()
        self.figures.close()
