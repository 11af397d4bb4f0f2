"""What the renderers of a timeline (`show`'s text, `view`'s page) say the same way: one-line
descriptions of approvals, trims and model failures, durations and usage totals."""

from __future__ import annotations

from datetime import datetime

from mini_harness.events import JsonObject
from mini_harness.replay.timeline import Run, objects


def seconds_between(start: str | None, end: str | None) -> float | None:
    """Seconds from one recorded `ts` to another (None when either is missing or unparsable)."""
    if not start or not end:
        return None
    try:
        return (datetime.fromisoformat(end) - datetime.fromisoformat(start)).total_seconds()
    except ValueError:
        return None


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


def describe_approval(event: JsonObject) -> str:
    """`approval asked by rule R`, `approval denied by policy (rule R): reason`, ..."""
    if event["type"] == "ApprovalRequested":
        rule = f" by rule {event['rule']}" if event.get("rule") else ""
        return f"approval asked{rule}"
    by = event.get("by")
    decision = str(event.get("decision", "?")).replace("_", " ")
    rule = f" (rule {event['rule']})" if by == "policy" and event.get("rule") else ""
    reason = f": {event['reason']}" if event.get("reason") else ""
    return f"approval {decision} by {by}{rule}{reason}"


def describe_trim(event: JsonObject) -> str:
    """`context trimmed: 2 tool result(s) replaced, ~900 -> ~400 tokens (budget 500)`."""
    replaced = event.get("replaced")
    count = len(objects(replaced))
    before, after, budget = (event.get(key) for key in ("tokensBefore", "tokensAfter", "budget"))
    text = f"context trimmed: {count} tool result(s) replaced, ~{before} -> ~{after} tokens"
    return text if budget is None else f"{text} (budget {budget})"


def describe_model_failure(event: JsonObject) -> str:
    """`rate_limited 429 (attempt 1): slow down`."""
    error = event.get("error")
    error = error if isinstance(error, dict) else {}
    status = f" {error['status']}" if error.get("status") is not None else ""
    attempt = event.get("attempt", "?")
    return f"{error.get('kind')}{status} (attempt {attempt}): {error.get('message')}"


def describe_effect(effect: JsonObject) -> str:
    """`src/app.py changed (1a2b3c4d -> 5e6f7a8b)`, `created`, `deleted`."""
    before, after = effect.get("before"), effect.get("after")
    if before is None:
        what = f"created ({str(after)[:8]})"
    elif after is None:
        what = f"deleted (was {str(before)[:8]})"
    else:
        what = f"changed ({str(before)[:8]} -> {str(after)[:8]})"
    return f"{effect.get('path')} {what}"
