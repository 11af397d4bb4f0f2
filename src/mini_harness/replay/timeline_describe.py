"""What the renderers of a timeline (`show`'s text, `view`'s page) say the same way: one-line
descriptions of approvals, trims, model failures, call errors and other events, durations,
usage totals and counts of calls. Both import it as `describe` (`describe.approval(event)`)."""

from __future__ import annotations

from datetime import datetime

from mini_harness.events import JsonObject
from mini_harness.replay.history import FAILED, IN_DOUBT, SUCCEEDED
from mini_harness.replay.timeline import Call, Run, Step, Timeline, objects

ENVELOPE = frozenset({"type", "seq", "ts", "prev", "runId"})
"""The fields every event has: left out where an event is shown by its own fields."""


def _ms_between(start: object, end: object) -> float | None:
    """Milliseconds from one recorded `ts` to another (None when either is missing or
    unparsable)."""
    if not start or not end:
        return None
    try:
        elapsed = datetime.fromisoformat(str(end)) - datetime.fromisoformat(str(start))
    except ValueError:
        return None
    return elapsed.total_seconds() * 1000


def run_ms(run: Run) -> float | None:
    """From RunStarted to RunFinished (or to the run's last event, when it did not finish)."""
    end = (run.finished or {}).get("ts") or run.last_ts
    return _ms_between((run.started or {}).get("ts"), end)


def step_ms(step: Step) -> float | None:
    """From the step's first event to its last."""
    stamps = [str(event["ts"]) for event in step.events()]
    return _ms_between(min(stamps, default=None), max(stamps, default=None))


def call_counts(timeline: Timeline) -> dict[str, int]:
    """Calls of every run by status: succeeded, failed, in doubt (in that order)."""
    counts = dict.fromkeys((SUCCEEDED, FAILED, IN_DOUBT), 0)
    for run, _depth in timeline.walk():
        for call in run.calls:
            counts[call.status] += 1
    return counts


def run_usage(run: Run) -> JsonObject:
    """The run's token totals: RunFinished's `usage`, else the sum over its turns."""
    recorded = (run.finished or {}).get("usage")
    if isinstance(recorded, dict) and recorded:
        return recorded
    totals: dict[str, int] = {}
    for step in run.steps:
        for key, value in (step.turn.usage if step.turn else {}).items():
            if type(value) is int:
                totals[key] = totals.get(key, 0) + value
    return dict(totals)


def approval(event: JsonObject) -> str:
    """`approval asked by rule R`, `approval denied by policy (rule R): reason`, ..."""
    if event["type"] == "ApprovalRequested":
        rule = f" by rule {event['rule']}" if event.get("rule") else ""
        return f"approval asked{rule}"
    by = event.get("by")
    decision = str(event.get("decision", "?")).replace("_", " ")
    rule = f" (rule {event['rule']})" if by == "policy" and event.get("rule") else ""
    reason = f": {event['reason']}" if event.get("reason") else ""
    return f"approval {decision} by {by}{rule}{reason}"


def trim(event: JsonObject) -> str:
    """`context trimmed: 2 tool result(s) replaced, ~900 -> ~400 tokens (budget 500)`."""
    replaced = event.get("replaced")
    count = len(objects(replaced))
    before, after, budget = (event.get(key) for key in ("tokensBefore", "tokensAfter", "budget"))
    text = f"context trimmed: {count} tool result(s) replaced, ~{before} -> ~{after} tokens"
    return text if budget is None else f"{text} (budget {budget})"


def model_failure(event: JsonObject) -> str:
    """`rate_limited 429 (attempt 1): slow down`."""
    error = event.get("error")
    error = error if isinstance(error, dict) else {}
    status = f" {error['status']}" if error.get("status") is not None else ""
    attempt = event.get("attempt", "?")
    return f"{error.get('kind')}{status} (attempt {attempt}): {error.get('message')}"


def call_error(call: Call) -> str:
    """`not_found: no such file`: a failed call's error kind and message."""
    error = call.error or {}
    return f"{error.get('kind')}: {error.get('message')}"


def event_fields(event: JsonObject) -> JsonObject:
    """An event's own fields: all but the envelope every event has."""
    return {key: value for key, value in event.items() if key not in ENVELOPE}


def effect(change: JsonObject) -> str:
    """`src/app.py changed (1a2b3c4d -> 5e6f7a8b)`, `created`, `deleted`."""
    before, after = change.get("before"), change.get("after")
    if before is None:
        what = f"created ({str(after)[:8]})"
    elif after is None:
        what = f"deleted (was {str(before)[:8]})"
    else:
        what = f"changed ({str(before)[:8]} -> {str(after)[:8]})"
    return f"{change.get('path')} {what}"
