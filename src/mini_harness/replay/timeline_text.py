"""A timeline as text lines for `show`: one function per kind of thing, no I/O."""

from __future__ import annotations

from collections.abc import Iterator

import attrs
import orjson

from mini_harness.errors import counted
from mini_harness.events import JsonObject, JsonValue
from mini_harness.replay import timeline_describe as describe
from mini_harness.replay.model import FAILED, IN_DOUBT, SUCCEEDED
from mini_harness.replay.timeline import Call, Run, Step, Timeline, Turn
from mini_harness.runtime.terminal import printable

_STATUS_COLOUR = {SUCCEEDED: "32", FAILED: "31", IN_DOUBT: "33"}
_STATUS_WORD = {SUCCEEDED: "succeeded", FAILED: "failed", IN_DOUBT: "in doubt"}


@attrs.frozen
class TextStyle:
    """How to write: `width` columns to cut to, `full` to cut nothing, `colour` for ANSI.

    Recorded text (a model's, a tool's, a task's) goes through `paint`, `cut`, `payload` or
    `text_lines`, which show its control characters escaped: only our colours reach the
    terminal as codes."""

    width: int = 100
    full: bool = False
    colour: bool = False

    def paint(self, text: str, code: str) -> str:
        text = printable(text, multiline=False)
        return f"\x1b[{code}m{text}\x1b[0m" if self.colour and text else text

    def cut(self, text: str, indent: int) -> str:
        """One line of text in the room left after `indent` columns (unless full)."""
        line = printable(text if self.full else " ".join(text.split()), multiline=False)
        return line if self.full else self._fit(line, indent, len(text), "chars")

    def payload(self, value: JsonValue, indent: int) -> str:
        """A JSON value as compact JSON, cut with its size in bytes when it is too long."""
        data = orjson.dumps(value)  # escapes C0 controls, not DEL, C1 or U+202E
        text = printable(data.decode(), multiline=False)
        return text if self.full else self._fit(text, indent, len(data), "bytes")

    def _fit(self, text: str, indent: int, size: int, unit: str) -> str:
        room = max(self.width - indent, 20)
        if len(text) <= room:
            return text
        suffix = f"… ({size:,} {unit})"
        return text[: max(room - len(suffix), 8)] + suffix

    def text_lines(self, label: str, text: str, indent: int) -> Iterator[str]:
        """`label: text` cut to one line, or (full) the label and each line of text under it."""
        pad = " " * indent
        if self.full:
            yield f"{pad}{label}:"
            yield from (f"{pad}  {printable(line)}" for line in text.splitlines())
        else:
            yield f"{pad}{label}: {self.cut(text, indent + len(label) + 2)}"


def duration(ms: float | None) -> str:
    if ms is None:
        return ""
    if ms < 1:
        return f"{ms:.3f} ms"
    return f"{ms:.1f} ms" if ms < 1000 else f"{ms / 1000:.2f} s"


def tokens(usage: JsonObject) -> str:
    """`in 1,234 · out 56 · cached 1,000 tokens` for the counts that were reported."""
    parts = [
        f"{label} {value:,}"
        for label, key in (
            ("in", "inputTokens"),
            ("out", "outputTokens"),
            ("cached", "cachedTokens"),
        )
        if type(value := usage.get(key)) is int
    ]
    return f"tokens {' · '.join(parts)}" if parts else ""


def timeline_lines(timeline: Timeline, style: TextStyle) -> Iterator[str]:
    """The whole timeline: a head line, each run (children indented under parents), and
    events of no run."""
    yield head_line(timeline, style)
    for run, depth in timeline.walk():
        yield from run_lines(run, 2 * depth, style)
    for event in timeline.others:
        yield event_line(event, 0, style)


def head_line(timeline: Timeline, style: TextStyle) -> str:
    header = timeline.header or {}
    parts = [style.paint(f"Transcript {timeline.path}", "1")]
    if "version" in header:
        parts.append(f"format {header['version']}")
    if "transcriptId" in header:
        parts.append(f"id {printable(str(header['transcriptId']), multiline=False)}")
    parts.append(f"{timeline.events:,} events")
    parts.append(f"head {timeline.head_hash or '(none)'}")
    chain = "chain intact" if timeline.chain_intact else "chain damaged"
    parts.append(style.paint(chain, "32" if timeline.chain_intact else "31"))
    return " · ".join(parts)


def run_lines(run: Run, indent: int, style: TextStyle) -> Iterator[str]:
    pad = " " * indent
    started = run.started or {}
    task = started.get("task")
    parts = [style.paint(f"Run {run.index} {run.run_id}", "1")]
    if isinstance(task, str):
        parts.append("agent run")
    elif started.get("harness"):
        parts.append(f"harness {started['harness']}")
    if "ts" in started:
        parts.append(f"started {started['ts']}")
    if ms := describe.run_ms(run):
        parts.append(duration(ms))
    parent = run.parent
    if parent is not None:
        at = f" at step {parent[2]}" if parent[2] is not None else ""
        parts.append(f"{parent[0]} from run {parent[1]}{at}")
    if run.started is None:
        parts.append(style.paint("no RunStarted", "31"))
    yield pad + " · ".join(parts)
    if isinstance(task, str):
        yield f"{pad}  task: {style.cut(task, indent + 8)}"
    if run.model is not None:
        yield f"{pad}  model: {printable(run.model, multiline=False)}"
    for item in run.items:
        if isinstance(item, Step):
            yield from step_lines(item, indent + 2, style)
        elif isinstance(item, Call):
            yield from call_lines(item, indent + 2, style)
        else:
            yield event_line(item, indent + 2, style)
    yield from finished_lines(run, indent + 2, style)


def step_lines(step: Step, indent: int, style: TextStyle) -> Iterator[str]:
    pad = " " * indent
    parts = [style.paint(f"Step {step.number}", "1")]
    turn = step.turn
    if turn is not None:
        if turn.response is not None:
            ms = turn.response.get("durationMs")
            parts.append(f"model {duration(float(ms)) if isinstance(ms, int | float) else '?'}")
            if used := tokens(turn.usage):
                parts.append(used)
            if finish := turn.response.get("finishReason"):
                parts.append(f"finish {printable(str(finish), multiline=False)}")
        else:
            word = "model failed" if turn.status == FAILED else "no response (in doubt)"
            parts.append(style.paint(word, _STATUS_COLOUR[turn.status]))
    if ms := describe.step_ms(step):
        parts.append(f"step {duration(ms)}")
    yield pad + " · ".join(parts)
    for event in step.others:
        if event["type"] == "ContextTrimmed":
            yield " " * (indent + 2) + style.paint(describe.trim(event), "33")
        else:
            yield event_line(event, indent + 2, style)
    if turn is not None:
        yield from turn_lines(turn, indent + 2, style)
    for call in step.calls:
        yield from call_lines(call, indent + 2, style)


def turn_lines(turn: Turn, indent: int, style: TextStyle) -> Iterator[str]:
    pad = " " * indent
    for failure in turn.failures:
        text = style.cut(f"model failed: {describe.model_failure(failure)}", indent)
        yield pad + style.paint(text, "31")
    if turn.text:
        yield from style.text_lines("model", turn.text, indent)
    asked = [str(call.get("name")) for call in turn.tool_calls]
    if asked:
        yield f"{pad}asks for: {style.cut(', '.join(asked), indent + 10)}"


def call_lines(call: Call, indent: int, style: TextStyle) -> Iterator[str]:
    pad = " " * indent
    status = style.paint(_STATUS_WORD[call.status], _STATUS_COLOUR[call.status])
    parts = [f"{style.paint(call.name, '36')} {status}"]
    if call.duration_ms is not None:
        parts.append(duration(call.duration_ms))
    parts.append(f"call {call.call_id}")
    yield f"{pad}call " + " · ".join(parts)
    inner = indent + 2
    yield f"{pad}  input  {style.payload(call.input, inner + 7)}"
    for event in call.approvals:
        yield f"{pad}  {style.cut(describe.approval(event), inner)}"
    if call.status == SUCCEEDED:
        yield f"{pad}  output {style.payload(call.output, inner + 7)}"
        for effect in call.effects:
            yield f"{pad}  effect {style.cut(describe.effect(effect), inner + 7)}"
    elif call.status == FAILED:
        yield f"{pad}  error  " + style.paint(style.cut(describe.call_error(call), inner + 7), "31")
    else:
        yield f"{pad}  " + style.paint("no terminal event: the call may or may not have run", "33")


def finished_lines(run: Run, indent: int, style: TextStyle) -> Iterator[str]:
    pad = " " * indent
    finished = run.finished
    if finished is None:
        if isinstance((run.started or {}).get("task"), str):
            yield pad + style.paint("unfinished: no RunFinished (the run did not end)", "33")
        return
    parts = [f"finished: {finished.get('stopReason')}"]
    if type(finished.get("steps")) is int:
        parts.append(counted(finished["steps"], "step"))
    if used := tokens(describe.run_usage(run)):
        parts.append(used)
    yield pad + " · ".join(parts)
    final = finished.get("finalText")
    if isinstance(final, str) and final:
        yield from style.text_lines("answer", final, indent + 2)


def event_line(event: JsonObject, indent: int, style: TextStyle) -> str:
    """An event of a kind this command does not lay out: type, seq and its fields."""
    head = f"{event['type']} (seq {event.get('seq')})"
    fields = style.payload(describe.event_fields(event), indent + len(head) + 1)
    return " " * indent + style.paint(head, "35") + " " + fields


def counts_line(timeline: Timeline) -> str:
    """`2 runs, 5 calls: 4 succeeded, 1 failed, 0 in doubt; 3 model turns`."""
    runs = [run for run, _depth in timeline.walk()]
    count = describe.call_counts(timeline)
    calls = sum(count.values())
    turns = sum(1 for run in runs for step in run.steps if step.turn is not None)
    line = (
        f"{counted(len(runs), 'run')}, {counted(calls, 'call')}: {count[SUCCEEDED]} succeeded, "
        f"{count[FAILED]} failed, {count[IN_DOUBT]} in doubt"
    )
    return line + (f"; {counted(turns, 'model turn')}" if turns else "")
