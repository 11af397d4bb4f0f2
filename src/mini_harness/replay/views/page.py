"""The `view` page: one self-contained HTML file showing a timeline.

The page's script, style and data are inline (nothing is fetched: it opens from disk).
The data is one JSON document in a `<script type="application/json">` block, escaped so
that nothing in it can end the block; the script puts every text on the page with
`textContent`, never as HTML. The rows are flat (run, step, turn, call, event, finish),
so a page of them is cheap to draw whatever the transcript's size.

The Context Explorer over time (`step_contexts`) shows each agent step's request, by part,
in estimated tokens. The requests are those the history's fold rebuilt, split into parts
by the context builder's own `request_parts`, so a step's bar adds up to what
`replay --context-report --step N` prints for it. The Conversation part is shown in two:
the tool results in it (its `tool` messages) and the rest. The page leaves what every
request of a run repeats (system prompt, rules, tool definitions) out of the bars unless
asked, and says it once on the run.
"""

from __future__ import annotations

import html
from importlib import resources

import orjson

from mini_harness.agent import request_parts
from mini_harness.agent.context import render_message
from mini_harness.events import ApprovalRequested, ContextTrimmed, JsonObject, JsonValue, to_wire
from mini_harness.events.measure import estimate_tokens
from mini_harness.replay.continuing.outcomes import OUTCOMES, RerunOutcome, RerunReport
from mini_harness.replay.history import Approval, Call, History, Run, Step
from mini_harness.replay.views import describe
from mini_harness.transcripts import TranscriptRecord

PAYLOAD_CAP = 64 * 1024
"""The most of one input or output the page holds (its full size is shown beside it)."""
PAGE_BUDGET = 256 * 1024 * 1024
"""Once the page holds this much of inputs and outputs, each further one is held only up
to SMALL_CAP, so a transcript of many large outputs still makes a page a browser opens."""
SMALL_CAP = 2 * 1024
CONVERSATION = "Conversation"
TOOL_RESULTS = "Tool results"

_STATUS = {"succeeded": "ok", "failed": "failed", "in-doubt": "in-doubt"}
# Characters that could end the data block or start markup, as JSON escapes.
_SCRIPT_SAFE = str.maketrans(
    {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}
)


def embed_json(value: JsonValue) -> str:
    """JSON text safe inside a `<script>` element: no `<`, `>`, `&` or line separators."""
    return orjson.dumps(value).decode().translate(_SCRIPT_SAFE)


def payload(value: JsonValue, cap: int = PAYLOAD_CAP) -> tuple[str, int]:
    """(the value's compact JSON, cut to `cap` characters; its full size in bytes)."""
    data = orjson.dumps(value)
    text = data.decode()
    return (text if len(text) <= cap else text[:cap]), len(data)


class _Budget:
    """What the page still holds of payloads whole (up to PAYLOAD_CAP each)."""

    def __init__(self) -> None:
        self.left = PAGE_BUDGET

    def take(self, value: JsonValue) -> tuple[str, int]:
        text, size = payload(value, PAYLOAD_CAP if self.left > 0 else SMALL_CAP)
        self.left -= len(text)
        return text, size


def page_data(
    history: History, context: dict[tuple[str, int], JsonValue], reruns: RerunReport | None
) -> JsonObject:
    """The page's JSON: the transcript's head, its verification, runs and flat rows.

    `context` gives, per (run id, step), the step request's parts as [[label, tokens], ...];
    `reruns` each call's re-run outcome (shown beside the call, with its diff).
    """
    outcomes = {item.call.call_id: item for item in reruns.outcomes} if reruns else {}
    budget = _Budget()
    header = history.header
    runs: list[JsonValue] = []
    rows: list[JsonValue] = []
    for run, depth in history.walk():
        runs.append(_run(run, depth))
        rows.append({"k": "r", "r": run.index})
        for item in run.items or ():
            if isinstance(item, Step):
                rows += _step_rows(
                    run, item, context.get((run.run_id, item.number)), outcomes, budget
                )
            elif isinstance(item, Call):
                rows.append(_call(run, None, item, outcomes.get(item.call_id), budget))
            else:
                rows.append(_event(run.index, None, item))
        if run.finished is not None or run.is_agent:
            rows.append({"k": "f", "r": run.index})
    for record in history.others:
        rows.append(_event(None, None, record))
    rerun: JsonObject | None = None
    if reruns is not None:
        counts: JsonObject = {outcome: reruns.count(outcome) for outcome in OUTCOMES}
        rerun = {"counts": counts, "drift": [drift.describe() for drift in reruns.drift]}
    return {
        "path": history.name,
        "format": header.version if header is not None else None,
        "transcriptId": history.transcript_id,
        "events": history.events,
        "verify": {
            "chainIntact": history.chain_intact,
            "headHash": history.head_hash,
            "problems": [problem.to_json() for problem in describe.problems(history)],
        },
        "calls": {
            _STATUS[status]: count for status, count in describe.call_counts(history).items()
        },
        "runs": runs,
        "rows": rows,
        "rerun": rerun,
    }


def _run(run: Run, depth: int) -> JsonObject:
    started = run.started
    origin = run.origin
    usage = describe.run_usage(run)
    out: JsonObject = {
        "index": run.index,
        "runId": run.run_id,
        "depth": depth,
        "harness": started.harness if started is not None else None,
        "started": started.ts if started is not None else None,
        "durationMs": describe.run_ms(run),
        "task": started.task if started is not None else None,
        "model": describe.model_name(run),
        "parent": [origin[0], origin[1].run_id, origin[1].step] if origin else None,
        "undoes": [run.undoes.run_id, run.undoes.call_id] if run.undoes else None,
        "usage": to_wire(usage) if usage is not None else None,
    }
    finished = run.finished
    if finished is not None:
        out["finished"] = {
            "stopReason": finished.stop_reason,
            "finalText": finished.final_text,
            "steps": finished.steps,
        }
    return out


def _step_rows(
    run: Run,
    step: Step,
    context: JsonValue,
    outcomes: dict[str, RerunOutcome[Call]],
    budget: _Budget,
) -> list[JsonValue]:
    rows: list[JsonValue] = [
        {"k": "s", "r": run.index, "s": step.number, "ms": describe.step_ms(step), "ctx": context}
    ]
    rows += [_event(run.index, step.number, record) for record in step.others]
    if step.requested is not None:
        rows.append(_turn(run.index, step.number, step))
    rows += [
        _call(run, step.number, call, outcomes.get(call.call_id), budget) for call in step.calls
    ]
    return rows


def _turn(run: int, number: int, step: Step) -> JsonObject:
    response = step.response
    failures = [describe.model_failure(failure) for failure in step.failures]
    return {
        "k": "t",
        "r": run,
        "s": number,
        "st": _STATUS[step.status],
        "ms": response.duration_ms if response is not None else None,
        "text": step.text,
        "asks": [call.name for call in step.tool_calls],
        "usage": to_wire(response.usage) if response is not None else None,
        "finish": response.finish_reason if response is not None else None,
        "fail": failures,
    }


def _call(
    run: Run, step: int | None, call: Call, rerun: RerunOutcome[Call] | None, budget: _Budget
) -> JsonObject:
    text_in, size_in = budget.take(call.input)
    out: JsonObject = {
        "k": "c",
        "r": run.index,
        "s": step,
        "id": call.call_id,
        "n": call.name,
        "st": _STATUS[call.status],
        "ms": call.duration_ms,
        "i": text_in,
        "ib": size_in,
    }
    if call.status == "succeeded":
        out["o"], out["ob"] = budget.take(call.output)
    elif call.error is not None:
        out["e"] = describe.call_error(call)
    if call.approvals:
        out["ap"] = [_approval(approval) for approval in call.approvals]
    if call.effects:
        out["fx"] = [describe.effect(effect) for effect in call.effects]
    if rerun is not None:
        out["rr"] = {"o": rerun.outcome, "why": rerun.reason, "diff": rerun.diff}
    return out


def _approval(approval: Approval) -> str:
    shown = f": {approval.shown}" if isinstance(approval, ApprovalRequested) else ""
    return describe.approval(approval) + shown


def _event(run: int | None, step: int | None, record: TranscriptRecord) -> JsonObject:
    if isinstance(record.event, ContextTrimmed):
        text = describe.trim(record.event)
    else:
        text, _size = payload(describe.event_fields(record))
    return {
        "k": "e",
        "r": run,
        "s": step,
        "type": describe.event_name(record),
        "seq": record.seq,
        "i": text,
    }


def render_page(
    history: History, context: dict[tuple[str, int], JsonValue], reruns: RerunReport | None
) -> str:
    """The whole HTML document for `history` (read with its detail; see page_data)."""
    assets = resources.files("mini_harness.replay.views") / "assets"
    template, style, script = (
        (assets / name).read_text(encoding="utf-8") for name in ("page.html", "view.css", "view.js")
    )
    return (
        template.replace("/*STYLE*/", style)
        .replace("/*SCRIPT*/", script)
        .replace("/*DATA*/", embed_json(page_data(history, context, reruns)))
        .replace("<!--TITLE-->", html.escape(f"mini-harness: {history.name}", quote=False))
    )


def step_contexts(history: History) -> dict[tuple[str, int], JsonValue]:
    """Per (run id, step): the step's request as [[label, tokens], ...] in report order,
    for the agent runs whose requests the history rebuilt."""
    contexts: dict[tuple[str, int], JsonValue] = {}
    for run in history.runs:
        if not run.is_agent or not run.keeps:
            continue
        for step in run.steps:
            if step.rebuilt is None:
                continue
            messages = step.rebuilt.messages
            parts: list[JsonValue] = []
            for part in request_parts(run.system_prompt, run.rules, run.tools, messages):
                if part.label != CONVERSATION:
                    parts.append([part.label, part.tokens])
                    continue
                results = "\n\n".join(render_message(m) for m in messages[1:] if m.role == "tool")
                tool_tokens = min(estimate_tokens(results), part.tokens)
                parts.append([CONVERSATION, part.tokens - tool_tokens])
                parts.append([TOOL_RESULTS, tool_tokens])
            contexts[(run.run_id, step.number)] = parts
    return contexts
