"""Text lines for the `replay` command: one function per kind of fact, no I/O."""

from __future__ import annotations

from mini_harness.errors import counted
from mini_harness.events import ApprovalDecided
from mini_harness.replay.model import (
    DIVERGED,
    FAILED,
    IN_DOUBT,
    OUTCOMES,
    CallRecord,
    Drift,
    LogProblem,
    RerunOutcome,
    RunInfo,
    RunSummary,
    Totals,
)


def run_line(info: RunInfo) -> str:
    tools = ", ".join(info.tool_names) or "(none recorded)"
    harness = f"harness {info.harness}, " if info.harness else ""
    return f"Run {info.index} {info.run_id} started {info.started}, {harness}tools: {tools}"


def call_line(call: CallRecord) -> str:
    head = f"  {call.call_id}  {call.name}"
    if call.status == IN_DOUBT:
        return f"{head}  in doubt (ToolCalled at line {call.line}, no terminal event)"
    line = f"{head}  {call.status}  {call.duration_ms} ms"
    if call.status == FAILED and call.error is not None:
        line += f"  {call.error.get('kind')}: {call.error.get('message')}"
    return line


def outcome_lines(outcome: RerunOutcome) -> list[str]:
    call = outcome.call
    head = f"  {call.call_id}  {call.name}  {outcome.outcome}"
    lines = [f"{head}: {outcome.reason}" if outcome.reason else head]
    if outcome.outcome == DIVERGED and outcome.diff:
        lines += [f"      {line}" for line in outcome.diff.splitlines()]
    return lines


def drift_line(drift: Drift) -> str:
    return f"  drift: {drift.describe()}"


def summary_lines(
    runs: list[RunSummary], problems: list[LogProblem], *, context_reports: bool
) -> list[str]:
    lines = ["", "Runs:"]
    if not runs:
        lines.append("  (no runs)")
    for run in runs:
        lines.append(
            f"  Run {run.info.index} {run.info.run_id}: {run.succeeded} succeeded, "
            f"{run.failed} failed, {run.in_doubt} in doubt"
        )
    if context_reports:
        for run in runs:
            lines += ["", f"Context report, run {run.info.index} ({run.info.run_id}):"]
            lines += (run.context_report or "").splitlines()
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


def effects_lines(calls: list[CallRecord], decisions: list[ApprovalDecided]) -> list[str]:
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


def _short(digest: str | None) -> str:
    return "absent" if digest is None else digest[:12]
