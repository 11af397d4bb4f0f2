"""Text lines for the `replay` command: one function per kind of fact, no I/O."""

from __future__ import annotations

from collections.abc import Mapping

from mini_harness.errors import counted
from mini_harness.events import ApprovalDecided, JsonObject, to_wire
from mini_harness.replay.continuing.outcomes import DIVERGED, OUTCOMES, Drift, RerunOutcome
from mini_harness.replay.history import (
    FAILED,
    IN_DOUBT,
    Call,
    History,
    LogProblem,
    Run,
    Totals,
)


def run_line(run: Run) -> str:
    tools = ", ".join(run.tool_names) or "(none recorded)"
    harness = f"harness {run.harness}, " if run.harness else ""
    return f"Run {run.index} {run.run_id} started {run.ts}, {harness}tools: {tools}"


def call_line(call: Call) -> str:
    head = f"  {call.call_id}  {call.name}"
    if call.status == IN_DOUBT:
        return f"{head}  in doubt (ToolCalled at line {call.line}, no terminal event)"
    line = f"{head}  {call.status}  {call.duration_ms} ms"
    if call.status == FAILED and call.error is not None:
        line += f"  {call.error.kind}: {call.error.message}"
    return line


def outcome_lines(outcome: RerunOutcome[Call]) -> list[str]:
    call = outcome.call
    head = f"  {call.call_id}  {call.name}  {outcome.outcome}"
    lines = [f"{head}: {outcome.reason}" if outcome.reason else head]
    if outcome.outcome == DIVERGED and outcome.diff:
        lines += [f"      {line}" for line in outcome.diff.splitlines()]
    return lines


def drift_line(drift: Drift) -> str:
    return f"  drift: {drift.describe()}"


def summary_lines(
    runs: list[Run], problems: list[LogProblem], reports: Mapping[str, str] | None = None
) -> list[str]:
    """Each run's totals, then (given) each run's context report, then the problems."""
    lines = ["", "Runs:"]
    if not runs:
        lines.append("  (no runs)")
    for run in runs:
        lines.append(
            f"  Run {run.index} {run.run_id}: {run.succeeded} succeeded, "
            f"{run.failed} failed, {run.in_doubt} in doubt"
        )
    if reports is not None:
        for run in runs:
            lines += ["", f"Context report, run {run.index} ({run.run_id}):"]
            lines += reports[run.run_id].splitlines()
    if problems:
        lines += ["", "Problems with the log:"]
        lines += [f"  [{problem.kind}] {problem.describe()}" for problem in problems]
    return lines


def totals_line(totals: Totals, problems: int) -> str:
    found = (
        "no problems in the log" if not problems else f"{counted(problems, 'problem')} in the log"
    )
    line = (
        f"{counted(totals.runs, 'run')}, {counted(totals.calls, 'call')}: "
        f"{totals.succeeded} succeeded, {totals.failed} failed, {totals.in_doubt} in doubt; {found}"
    )
    if totals.unknown_events:
        line += f"; {counted(totals.unknown_events, 'event')} of unknown types skipped"
    return line


def rerun_line(counts: dict[str, int], drifted: int) -> str:
    parts = ", ".join(f"{counts.get(name, 0)} {name}" for name in OUTCOMES)
    return f"Re-run: {parts}; {counted(drifted, 'tool definition')} drifted"


def effects_lines(calls: list[Call], decisions: list[ApprovalDecided]) -> list[str]:
    """The --effects report: each call that changed files with its paths, then each approval
    decision."""
    lines = [] if calls else ["No recorded file effects."]
    for call in calls:
        lines.append(f"Call {call.call_id} ({call.name}, line {call.end_line}):")
        for effect in call.effects or ():
            before, after = effect.before, effect.after
            change = "added" if before is None else "deleted" if after is None else "modified"
            lines.append(f"  {change:<8} {effect.path}  {_short(before)} -> {_short(after)}")
    if decisions:
        lines.append("Approval decisions:")
    for decision in decisions:
        rule = f" ({decision.rule})" if decision.rule else ""
        lines.append(
            f"  {decision.call_id} {decision.name}: {decision.decision} by {decision.by}{rule}"
        )
    return lines


def effects_json(calls: list[Call], decisions: list[ApprovalDecided]) -> JsonObject:
    """The --effects report as one JSON document: the calls that changed files, each with
    its effects (path, sha256 before and after, null for absent), and the approval
    decisions as recorded."""
    return {
        "calls": [
            {
                "callId": call.call_id,
                "name": call.name,
                "line": call.end_line,
                "effects": [to_wire(effect) for effect in call.effects or ()],
            }
            for call in calls
        ],
        "approvals": [to_wire(decision) for decision in decisions],
    }


def _short(digest: str | None) -> str:
    return "absent" if digest is None else digest[:12]


def run_tree_lines(history: History) -> list[str]:
    """Agent runs as a tree of who continues or forks whom (empty when none does).

    Each run shows how it came from its parent, its step count and how it ended; a run
    whose origin is not in the transcript (a fork written elsewhere) is a root that names
    it."""
    if not any(run.origin for run in history.runs if run.is_agent):
        return []
    lines = ["Agent runs:"]
    for run, depth in history.walk():
        if not run.is_agent:
            continue
        origin = run.origin
        if origin is None:
            link = ""
        else:
            how, link_to = origin
            when = "after" if how == "resumed" else "before"
            said = f"{how} {when} step {link_to.step}"
            # A run under its parent is at depth 1 or more; a root names where it came from.
            elsewhere = f" of {link_to.run_id} (not in this transcript)"
            link = f"{said}{'' if depth else elsewhere}: "
        ended = f"{counted(run.requests, 'step')}, {run.stop_reason or 'unfinished'}"
        lines.append(f"{'  ' * (depth + 1)}{link}{run.run_id} ({ended})")
    return lines
