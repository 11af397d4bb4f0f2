"""A timeline (a history read with its detail) as text lines for `show`: one function per
kind of thing, no I/O."""

from __future__ import annotations

from collections.abc import Iterator

from mini_harness.errors import counted
from mini_harness.events import ContextTrimmed, Usage
from mini_harness.replay.history import FAILED, IN_DOUBT, SUCCEEDED, Call, History, Run, Step
from mini_harness.replay.views import describe
from mini_harness.runtime.terminal import printable
from mini_harness.runtime.text_style import TextStyle
from mini_harness.transcripts import TranscriptRecord

_STATUS_COLOUR = {SUCCEEDED: "32", FAILED: "31", IN_DOUBT: "33"}
_STATUS_WORD = {SUCCEEDED: "succeeded", FAILED: "failed", IN_DOUBT: "in doubt"}


def duration(ms: float | None) -> str:
    if ms is None:
        return ""
    if ms < 1:
        return f"{ms:.3f} ms"
    return f"{ms:.1f} ms" if ms < 1000 else f"{ms / 1000:.2f} s"


def tokens(usage: Usage | None) -> str:
    """`in 1,234 · out 56 · cached 1,000 tokens` for the counts that were reported."""
    if usage is None:
        return ""
    parts = [
        f"{label} {value:,}"
        for label, value in (
            ("in", usage.input_tokens),
            ("out", usage.output_tokens),
            ("cached", usage.cached_tokens),
        )
        if value is not None
    ]
    return f"tokens {' · '.join(parts)}" if parts else ""


def timeline_lines(history: History, style: TextStyle) -> Iterator[str]:
    """The whole timeline: a head line, each run (children indented under parents), and
    events of no run."""
    yield head_line(history, style)
    for run, depth in history.walk():
        yield from run_lines(run, 2 * depth, style)
    for record in history.others:
        yield event_line(record, 0, style)


def head_line(history: History, style: TextStyle) -> str:
    header = history.header
    parts = [style.paint(f"Transcript {history.name}", "1")]
    if header is not None:
        parts.append(f"format {header.version}")
        parts.append(f"id {printable(header.transcript_id, multiline=False)}")
    parts.append(f"{history.events:,} events")
    parts.append(f"head {history.head_hash or '(none)'}")
    chain = "chain intact" if history.chain_intact else "chain damaged"
    parts.append(style.paint(chain, "32" if history.chain_intact else "31"))
    return " · ".join(parts)


def run_lines(run: Run, indent: int, style: TextStyle) -> Iterator[str]:
    pad = " " * indent
    started = run.started
    parts = [style.paint(f"Run {run.index} {run.run_id}", "1")]
    if run.is_agent:
        parts.append("agent run")
    elif run.harness:
        parts.append(f"harness {printable(run.harness, multiline=False)}")
    if started is not None:
        parts.append(f"started {printable(started.ts, multiline=False)}")
    if ms := describe.run_ms(run):
        parts.append(duration(ms))
    origin = run.origin
    if origin is not None:
        how, link = origin
        parts.append(
            f"{how} from run {printable(link.run_id, multiline=False)} at step {link.step}"
        )
    undoes = run.undoes
    if undoes is not None:
        call, made_by = (printable(i, multiline=False) for i in (undoes.call_id, undoes.run_id))
        parts.append(f"undo of call {call} of run {made_by}")
    if started is None:
        parts.append(style.paint("no RunStarted", "31"))
    yield pad + " · ".join(parts)
    if run.is_agent:
        yield f"{pad}  task: {style.cut(run.task, indent + 8)}"
    model = describe.model_name(run)
    if model is not None:
        yield f"{pad}  model: {printable(model, multiline=False)}"
    for item in run.items or ():
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
    if step.requested is not None:
        response = step.response
        if response is not None:
            parts.append(f"model {duration(response.duration_ms)}")
            if used := tokens(response.usage):
                parts.append(used)
            if response.finish_reason:
                parts.append(f"finish {printable(response.finish_reason, multiline=False)}")
        else:
            word = "model failed" if step.status == FAILED else "no response (in doubt)"
            parts.append(style.paint(word, _STATUS_COLOUR[step.status]))
    if ms := describe.step_ms(step):
        parts.append(f"step {duration(ms)}")
    yield pad + " · ".join(parts)
    for record in step.others:
        if isinstance(record.event, ContextTrimmed):
            yield " " * (indent + 2) + style.paint(describe.trim(record.event), "33")
        else:
            yield event_line(record, indent + 2, style)
    if step.requested is not None:
        yield from turn_lines(step, indent + 2, style)
    for call in step.calls:
        yield from call_lines(call, indent + 2, style)


def turn_lines(step: Step, indent: int, style: TextStyle) -> Iterator[str]:
    pad = " " * indent
    for failure in step.failures:
        text = style.cut(f"model failed: {describe.model_failure(failure)}", indent)
        yield pad + style.paint(text, "31")
    if step.text:
        yield from style.text_lines("model", step.text, indent)
    asked = [call.name for call in step.tool_calls]
    if asked:
        yield f"{pad}asks for: {style.cut(', '.join(asked), indent + 10)}"


def call_lines(call: Call, indent: int, style: TextStyle) -> Iterator[str]:
    pad = " " * indent
    status = style.paint(_STATUS_WORD[call.status], _STATUS_COLOUR[call.status])
    parts = [f"{style.paint(call.name, '36')} {status}"]
    if call.duration_ms is not None:
        parts.append(duration(call.duration_ms))
    parts.append(f"call {printable(call.call_id, multiline=False)}")
    yield f"{pad}call " + " · ".join(parts)
    inner = indent + 2
    yield f"{pad}  input  {style.payload(call.input, inner + 7)}"
    for approval in call.approvals:
        yield f"{pad}  {style.cut(describe.approval(approval), inner)}"
    if call.status == SUCCEEDED:
        yield f"{pad}  output {style.payload(call.output, inner + 7)}"
        for effect in call.effects or ():
            yield f"{pad}  effect {style.cut(describe.effect(effect), inner + 7)}"
    elif call.status == FAILED:
        yield f"{pad}  error  " + style.paint(style.cut(describe.call_error(call), inner + 7), "31")
    else:
        yield f"{pad}  " + style.paint("no terminal event: the call may or may not have run", "33")


def finished_lines(run: Run, indent: int, style: TextStyle) -> Iterator[str]:
    pad = " " * indent
    finished = run.finished
    if finished is None:
        if run.is_agent:
            yield pad + style.paint("unfinished: no RunFinished (the run did not end)", "33")
        return
    parts = [f"finished: {printable(finished.stop_reason, multiline=False)}"]
    parts.append(counted(finished.steps, "step"))
    if used := tokens(describe.run_usage(run)):
        parts.append(used)
    yield pad + " · ".join(parts)
    if finished.final_text:
        yield from style.text_lines("answer", finished.final_text, indent + 2)


def event_line(record: TranscriptRecord, indent: int, style: TextStyle) -> str:
    """An event of a kind this command does not lay out: type, seq and its fields."""
    head = f"{describe.event_name(record)} (seq {record.seq})"
    fields = style.payload(describe.event_fields(record), indent + len(head) + 1)
    return " " * indent + style.paint(head, "35") + " " + fields


def counts_line(history: History) -> str:
    """`2 runs, 5 calls: 4 succeeded, 1 failed, 0 in doubt; 3 model turns`."""
    runs = [run for run, _depth in history.walk()]
    count = describe.call_counts(history)
    calls = sum(count.values())
    turns = sum(1 for run in runs for step in describe.steps(run) if step.requested is not None)
    line = (
        f"{counted(len(runs), 'run')}, {counted(calls, 'call')}: {count[SUCCEEDED]} succeeded, "
        f"{count[FAILED]} failed, {count[IN_DOUBT]} in doubt"
    )
    return line + (f"; {counted(turns, 'model turn')}" if turns else "")
