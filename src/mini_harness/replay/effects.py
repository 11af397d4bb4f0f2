"""File effects and approval decisions, folded from a transcript (no handler ever runs)."""

from __future__ import annotations

import os

import attrs

from mini_harness.events import (
    ApprovalDecided,
    JsonObject,
    JsonValue,
    ToolCalled,
    ToolSucceeded,
)
from mini_harness.transcripts.reader import TranscriptReader


@attrs.frozen
class CallEffects:
    """One call that changed files: its input and each path's sha256 before and after."""

    run_id: str
    call_id: str
    name: str
    input: JsonValue
    effects: tuple[JsonObject, ...]
    line: int

    def to_json(self) -> JsonObject:
        return {
            "runId": self.run_id,
            "callId": self.call_id,
            "name": self.name,
            "line": self.line,
            "effects": list(self.effects),
        }


@attrs.frozen
class DecisionRecord:
    """An approval decision as recorded: which call, what, by whom, under which rule."""

    run_id: str
    call_id: str
    name: str
    decision: str
    by: str
    rule: str | None
    line: int


@attrs.frozen
class EffectsFold:
    """Every call with file effects and every approval decision, in file order."""

    calls: tuple[CallEffects, ...]
    decisions: tuple[DecisionRecord, ...]


def fold_effects(path: str | os.PathLike[str]) -> EffectsFold:
    """Read a transcript for its file effects and approvals (TranscriptError if unreadable)."""
    inputs: dict[str, JsonValue] = {}
    calls: list[CallEffects] = []
    decisions: list[DecisionRecord] = []
    for record in TranscriptReader(path):
        event = record.event
        if isinstance(event, ToolCalled):
            inputs[event.call_id] = event.input
        elif isinstance(event, ToolSucceeded):
            tool_input = inputs.pop(event.call_id, None)
            if event.effects:
                calls.append(
                    CallEffects(
                        event.run_id,
                        event.call_id,
                        event.name,
                        tool_input,
                        event.effects,
                        record.line,
                    )
                )
        elif isinstance(event, ApprovalDecided):
            decisions.append(
                DecisionRecord(
                    event.run_id,
                    event.call_id,
                    event.name,
                    event.decision,
                    event.by,
                    event.rule,
                    record.line,
                )
            )
    return EffectsFold(tuple(calls), tuple(decisions))


def render_effects(fold: EffectsFold) -> list[str]:
    """The --effects report: each changing call with its paths, then each decision."""
    lines: list[str] = []
    if not fold.calls:
        lines.append("No recorded file effects.")
    for call in fold.calls:
        lines.append(f"Call {call.call_id} ({call.name}, line {call.line}):")
        for effect in call.effects:
            before, after = effect.get("before"), effect.get("after")
            change = "added" if before is None else "deleted" if after is None else "modified"
            lines.append(f"  {change:<8} {effect.get('path')}  {_short(before)} -> {_short(after)}")
    if fold.decisions:
        lines.append("Approval decisions:")
    for decision in fold.decisions:
        rule = f" ({decision.rule})" if decision.rule else ""
        lines.append(
            f"  {decision.call_id} {decision.name}: {decision.decision} by {decision.by}{rule}"
        )
    return lines


def _short(digest: object) -> str:
    return "absent" if digest is None else str(digest)[:12]
