"""What the renderers of a timeline (`show`'s text, `view`'s page) say the same way: one-line
descriptions of approvals, trims, model failures, call errors and other events, durations,
usage totals and counts of calls. Both import it as `describe` (`describe.approval(event)`).

A timeline is a history read with its detail (history/fold.py): every field is read from
the typed events; only an event of a type this version does not know is shown by the
fields it was read with."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime

from mini_harness.errors import ExitCode, counted, exit_code_of
from mini_harness.events import (
    ApprovalDecided,
    ApprovalRequested,
    ContextTrimmed,
    FileEffect,
    JsonObject,
    ModelFailed,
    UnknownEvent,
    Usage,
    event_type,
    to_wire,
)
from mini_harness.replay.history import (
    FAILED,
    IN_DOUBT,
    SUCCEEDED,
    Call,
    History,
    LogProblem,
    Run,
    Step,
)
from mini_harness.transcripts import TranscriptRecord

ENVELOPE = frozenset({"type", "seq", "ts", "prev", "runId"})
"""The fields every event has: left out where an event is shown by its own fields."""


def problems(history: History) -> list[LogProblem]:
    """The problems a timeline names: what is wrong with the log. What a crash left in
    doubt (a call, a model request, an unfinished run) is shown where it happened."""
    return [problem for problem in history.problems if problem.kind != "in-doubt"]


def verdict_of(history: History, differs: str = "") -> tuple[ExitCode, str]:
    """The exit code of a transcript read into `history` (and re-run: `differs` names the
    outcomes that differ from the record, as `1 diverged`), by the one rule of every
    command (errors.exit_code_of), and what the error line says when it is not 0: what
    differs, else what is wrong with the log (`t.jsonl: 1 problem, shown up to line 4; 1
    call in doubt`)."""
    doubts = [problem for problem in history.problems if problem.kind == "in-doubt"]
    kinds = [problem.kind for problem in history.problems]
    in_doubt = history.totals.in_doubt
    code = exit_code_of(problems=kinds, in_doubt=in_doubt, differs=bool(differs))
    if differs:
        return code, f"re-run differs from the record: {differs}"
    named = problems(history)
    parts = []
    if named:
        damaged = [problem for problem in named if problem.kind in {"damage", "torn-tail"}]
        shown = f", shown up to line {damaged[0].line}" if damaged else ""
        parts.append(f"{counted(len(named), 'problem')}{shown}")
    if in_doubt:
        parts.append(f"{counted(in_doubt, 'call')} in doubt")
    if doubts:
        parts.append(
            counted(len(doubts), "unfinished run or request", "unfinished runs or requests")
        )
    return code, f"{history.name}: {'; '.join(parts)}"


def _ms_between(start: str | None, end: str | None) -> float | None:
    """Milliseconds from one recorded `ts` to another (None when either is missing or
    unparsable)."""
    if not start or not end:
        return None
    try:
        elapsed = datetime.fromisoformat(end) - datetime.fromisoformat(start)
    except ValueError:
        return None
    return elapsed.total_seconds() * 1000


def run_ms(run: Run) -> float | None:
    """From RunStarted to RunFinished (or to the run's last event, when it did not finish)."""
    end = run.finished.ts if run.finished is not None else run.last_ts
    return _ms_between(run.started.ts if run.started is not None else None, end)


def step_records(step: Step) -> Iterator[TranscriptRecord]:
    """Every line of a step as read: its model events, trims and others, its calls'."""
    yield from step.records
    yield from step.others
    for call in step.calls:
        yield from call.records or ()


def step_ms(step: Step) -> float | None:
    """From the step's first event to its last."""
    stamps = [record.event.ts for record in step_records(step)]
    return _ms_between(min(stamps, default=None), max(stamps, default=None))


def call_counts(history: History) -> dict[str, int]:
    """Calls of every run shown by status: succeeded, failed, in doubt (in that order).

    What a selection kept (`show --status failed` counts only the failed calls), where
    `History.totals` counts what the log records, which the exit code goes by whatever is
    shown."""
    counts = dict.fromkeys((SUCCEEDED, FAILED, IN_DOUBT), 0)
    for run, _depth in history.walk():
        for call in run.every_call():
            counts[call.status] += 1
    return counts


def steps(run: Run) -> list[Step]:
    """The steps among a run's items (with the detail)."""
    return [item for item in run.items or () if isinstance(item, Step)]


def run_usage(run: Run) -> Usage | None:
    """The run's token totals: RunFinished's `usage`, else the sum over its turns."""
    if run.finished is not None:
        return run.finished.usage
    total: Usage | None = None
    for step in steps(run):
        if step.usage is not None:
            total = step.usage if total is None else total + step.usage
    return total


def model_name(run: Run) -> str | None:
    """`provider name` of an agent run's model (the name left out when the provider's
    own name already says it, as `script:demo.json` does)."""
    model = run.model
    if model is None:
        return None
    provider, name = model.provider, model.name
    return provider if name and name in provider else f"{provider} {name}".strip()


def approval(event: ApprovalRequested | ApprovalDecided) -> str:
    """`approval asked by rule R`, `approval denied by policy (rule R): reason`, ..."""
    if isinstance(event, ApprovalRequested):
        rule = f" by rule {event.rule}" if event.rule else ""
        return f"approval asked{rule}"
    decision = event.decision.replace("_", " ")
    rule = f" (rule {event.rule})" if event.by == "policy" and event.rule else ""
    reason = f": {event.reason}" if event.reason else ""
    return f"approval {decision} by {event.by}{rule}{reason}"


def trim(event: ContextTrimmed) -> str:
    """`context trimmed: 2 tool result(s) replaced, ~900 -> ~400 tokens (budget 500)`."""
    return (
        f"context trimmed: {len(event.replaced)} tool result(s) replaced, "
        f"~{event.tokens_before} -> ~{event.tokens_after} tokens (budget {event.budget})"
    )


def model_failure(event: ModelFailed) -> str:
    """`rate_limited 429 (attempt 1): slow down`."""
    error = event.error
    status = f" {error.status}" if error.status is not None else ""
    return f"{error.kind}{status} (attempt {event.attempt}): {error.message}"


def call_error(call: Call) -> str:
    """`not_found: no such file`: a failed call's error kind and message."""
    error = call.error
    return "" if error is None else f"{error.kind}: {error.message}"


def event_fields(record: TranscriptRecord) -> JsonObject:
    """An event's own fields, all but the envelope every event has: as read for a type
    this version does not know, as the one encoder writes them for the others."""
    event = record.event
    fields = event.data if isinstance(event, UnknownEvent) else to_wire(event)
    assert isinstance(fields, dict)
    return {key: value for key, value in fields.items() if key not in ENVELOPE}


def event_name(record: TranscriptRecord) -> str:
    return event_type(record.event)


def effect(change: FileEffect) -> str:
    """`src/app.py changed (1a2b3c4d -> 5e6f7a8b)`, `created`, `deleted`."""
    before, after = change.before, change.after
    if before is None:
        what = f"created ({str(after)[:8]})"
    elif after is None:
        what = f"deleted (was {before[:8]})"
    else:
        what = f"changed ({before[:8]} -> {after[:8]})"
    return f"{change.path} {what}"
