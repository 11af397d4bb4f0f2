"""What a re-run of recorded calls finds: each call's outcome, and the tools that drifted."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Generic, TypeVar

import attrs

from mini_harness.events import JsonObject, JsonValue, ToolCall
from mini_harness.replay.history import Call, History

MATCHED = "matched"
DIVERGED = "diverged"
NOW_FAILS = "now-fails"
NOW_SUCCEEDS = "now-succeeds"
SKIPPED = "skipped"
OUTCOMES = (MATCHED, DIVERGED, NOW_FAILS, NOW_SUCCEEDS, SKIPPED)
DIFFERING = (DIVERGED, NOW_FAILS, NOW_SUCCEEDS)
"""The re-run outcomes that differ from the record: each fails a replay."""


def differing(counts: Mapping[str, int]) -> str:
    """`1 diverged, 2 now-fails`: the differing outcomes among `counts` ("" when none)."""
    return ", ".join(f"{counts[name]} {name}" for name in DIFFERING if counts.get(name))


@attrs.frozen
class Drift:
    """A recorded tool whose current definition differs (`changed`) or is gone (`removed`)."""

    tool: str
    change: str
    fields: tuple[str, ...]
    run_index: int

    def describe(self) -> str:
        if self.change == "removed":
            return f"{self.tool}: no longer in the registry (recorded in run {self.run_index})"
        return f"{self.tool}: {' and '.join(self.fields)} changed since run {self.run_index}"

    def to_json(self) -> JsonObject:
        return {
            "tool": self.tool,
            "change": self.change,
            "fields": list(self.fields),
            "run": self.run_index,
        }


RecordT = TypeVar("RecordT", bound=Call | None)


@attrs.frozen
class RerunOutcome(Generic[RecordT]):
    """A recorded call made again, or not, and compared with its record: `outcome` is one of
    OUTCOMES, `reason` why it was skipped (or how it fails now), `current` its new output
    (or its new error as ToolFailed records it), `diff` what differs from the record.

    A re-run of a transcript's calls has one per recorded call (`call`, always there). An
    offline replay of an agent run has one per call the recorded answers ask for at `step`
    (`asked`, as the model asked for it): `call` is its record, None when the recorded run
    never made it; a call the replay may not run again is skipped, given the recorded
    result (`call` there) or none (not there).
    """

    call: RecordT
    outcome: str
    reason: str | None = None
    current: JsonValue = None
    diff: str | None = None
    step: int | None = attrs.field(default=None, kw_only=True)
    asked: ToolCall | None = attrs.field(default=None, kw_only=True)

    def to_json(self) -> JsonObject:
        out: JsonObject = {"outcome": self.outcome}
        if self.reason is not None:
            out["reason"] = self.reason
        if self.diff is not None:
            out["diff"] = self.diff
        return out


@attrs.frozen
class RerunReport:
    """A history, each of its calls' re-run outcome, and the tools that drifted."""

    history: History
    outcomes: tuple[RerunOutcome[Call], ...]
    drift: tuple[Drift, ...]

    def count(self, outcome: str) -> int:
        return sum(1 for item in self.outcomes if item.outcome == outcome)

    @property
    def ok(self) -> bool:
        """Every re-run call matched or was skipped, and the log has no problem."""
        return self.history.ok and not any(item.outcome in DIFFERING for item in self.outcomes)
