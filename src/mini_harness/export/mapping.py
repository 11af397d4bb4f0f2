"""A transcript's history as spans, in OpenTelemetry's GenAI conventions.

Each run is a trace of its own (its trace id is its run id): an agent run is an
`invoke_agent mini-harness` span (a tool run, from `--tool` or an MCP session, a
`mini_harness.run` span), with a `chat {model}` span for each model request and an
`execute_tool {name}` span for each call, and under a call that was put to the approval
policy a `mini_harness.approval {name}` span. The mapping, attribute by attribute, is in
docs/otel.md. Message content (the messages, system instructions, tool definitions, tool
arguments and results) is added only when asked for (`content`).

The history must be read with its detail and requests (`read_history(path, requests=True,
detail=True)`): the times of calls are those of their lines.
"""

from __future__ import annotations

from collections.abc import Iterator

import orjson

from mini_harness.agent import system_message
from mini_harness.events import (
    ApprovalDecided,
    ApprovalRequested,
    ContextTrimmed,
    JsonValue,
    Message,
    ModelResponded,
    Usage,
)
from mini_harness.export.spans import (
    AttributeValue,
    SpanData,
    SpanEvent,
    SpanLink,
    StatusCode,
    span_id,
    time_ns,
    trace_id,
)
from mini_harness.replay.history import UNFINISHED, Call, History, Run, Step

AGENT_NAME = "mini-harness"
"""The agent's name in `gen_ai.agent.name` and in its spans' names."""

IN_DOUBT_ERROR = "in_doubt"
"""`error.type` of a call or model request that began and was never seen to end."""

# The recorded provider names (`openai:gpt-4o`, `anthropic:claude-...`; runs recorded before
# those names say `openai-compatible:` for OpenAI and DeepSeek too) by the conventions'
# `gen_ai.provider.name`; any other (mock, script) is given as recorded.
_PROVIDERS = {
    "openai-compatible": "openai",
    "openai": "openai",
    "deepseek": "deepseek",
    "anthropic": "anthropic",
}

# The request parameters a run records, by their names in the conventions.
_PARAMS = {
    "temperature": "gen_ai.request.temperature",
    "maxTokens": "gen_ai.request.max_tokens",
    "topP": "gen_ai.request.top_p",
    "stop": "gen_ai.request.stop_sequences",
}


def history_spans(history: History, *, content: bool = False) -> list[SpanData]:
    """Every span of every run of `history`, run by run (a run's span first)."""
    mapper = SpanMapper(history.transcript_id, content=content)
    return [span for run in history.runs for span in mapper.run_spans(run)]


class SpanMapper:
    """Makes the spans of runs, one unit at a time: a run, a model request, a call.

    `conversation_id` is the transcript's id (`gen_ai.conversation.id`: the runs of one
    transcript, a run and those that resume or fork it, are one conversation); a run of
    no transcript is a conversation of its own. With `content`, spans carry what was
    said (see the module).
    """

    def __init__(self, conversation_id: str | None, *, content: bool = False) -> None:
        self.conversation_id = conversation_id
        self.content = content

    def __repr__(self) -> str:
        return f"<SpanMapper(conversation_id={self.conversation_id!r}, content={self.content})>"

    def run_spans(self, run: Run) -> Iterator[SpanData]:
        """The run's span, then those of its model requests and of its calls."""
        yield self.run_span(run)
        for step in run.steps:
            yield self.step_span(run, step)
        for call in run.calls:
            yield from self.call_spans(run, call)

    # --- runs ---------------------------------------------------------------------

    def run_span(self, run: Run) -> SpanData:
        """An agent run as `invoke_agent mini-harness` (a tool run as `mini_harness.run`),
        from its first event to its RunFinished (or its last event)."""
        attributes: dict[str, AttributeValue] = {"mini_harness.run.id": run.run_id}
        if run.harness:
            attributes["mini_harness.version"] = run.harness
        events: tuple[SpanEvent, ...] = ()
        status: StatusCode = "UNSET"
        message = None
        if run.is_agent:
            name = f"invoke_agent {AGENT_NAME}"
            attributes |= self._agent(run)
            stop = run.stop_reason or UNFINISHED
            attributes["mini_harness.stop_reason"] = stop
            if stop != "final":
                attributes["error.type"] = stop
                status, message = "ERROR", f"the run ended without a final answer ({stop})"
        else:
            name = "mini_harness.run"
            attributes["mini_harness.tools"] = tuple(run.tool_names)
        return SpanData(
            name=name,
            kind="INTERNAL",
            trace_id=trace_id(run.run_id),
            span_id=run_span_id(run.run_id),
            parent_id=None,
            start_ns=time_ns(run.ts),
            end_ns=time_ns(run_end(run)),
            attributes=attributes,
            events=events,
            links=self._links(run),
            status=status,
            status_message=message,
        )

    def _agent(self, run: Run) -> dict[str, AttributeValue]:
        attributes: dict[str, AttributeValue] = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": AGENT_NAME,
            **self._model(run),
        }
        if run.harness:
            attributes["gen_ai.agent.version"] = run.harness
        finished = run.finished
        usage = finished.usage if finished is not None else _summed(run.steps)
        attributes |= _usage(usage)
        attributes["mini_harness.steps"] = finished.steps if finished else len(run.steps)
        if run.max_steps is not None:
            attributes["mini_harness.max_steps"] = run.max_steps
        if run.rules:
            attributes["mini_harness.project_rules"] = tuple(rule.path for rule in run.rules)
        if run.policy_sha256 is not None:
            attributes["mini_harness.policy.sha256"] = run.policy_sha256
        if self.content:
            task = Message("user", run.task)
            attributes["gen_ai.input.messages"] = _json([_message(task)])
            if run.final_text is not None:
                answer = _output(Message("assistant", run.final_text), "stop")
                attributes["gen_ai.output.messages"] = _json([answer])
            instructions = system_message(run.system_prompt, run.rules).content
            attributes["gen_ai.system_instructions"] = _json(
                [{"type": "text", "content": instructions}]
            )
            attributes["gen_ai.tool.definitions"] = _json(
                [
                    {
                        "type": "function",
                        "name": tool.name,
                        "description": tool.description,
                        "parameters": tool.input_schema,
                    }
                    for tool in run.tools
                ]
            )
        return attributes

    def _model(self, run: Run) -> dict[str, AttributeValue]:
        """What every span of an agent run says of its model and conversation."""
        attributes: dict[str, AttributeValue] = {}
        model = run.model
        if model is not None:
            recorded = model.provider.partition(":")[0]
            attributes["gen_ai.provider.name"] = _PROVIDERS.get(recorded, recorded)
            attributes["gen_ai.request.model"] = model.name
        attributes["gen_ai.conversation.id"] = self.conversation_id or run.run_id
        return attributes

    def _links(self, run: Run) -> tuple[SpanLink, ...]:
        """A link to the run this one resumes or forks (the origin's own trace)."""
        origin = run.origin
        if origin is None:
            return ()
        how, link = origin
        attributes: dict[str, AttributeValue] = {
            "mini_harness.link.type": how,
            "mini_harness.link.step": link.step,
        }
        return (SpanLink(trace_id(link.run_id), run_span_id(link.run_id), attributes),)

    # --- model requests -----------------------------------------------------------

    def step_span(self, run: Run, step: Step) -> SpanData:
        """A model request as `chat {model}`, from its ModelRequested to its response or
        final failure; each failed attempt is an `exception` event, each trim of the
        context before it a `mini_harness.context_trimmed` event."""
        requested = step.requested
        if requested is None:
            raise ValueError(f"step {step.number} of run {run.run_id} made no model request")
        model = run.model.name if run.model is not None else ""
        attributes: dict[str, AttributeValue] = {
            "gen_ai.operation.name": "chat",
            **self._model(run),
        }
        for key, name in _PARAMS.items():
            value = requested.params.get(key)
            if isinstance(value, str):
                value = (value,)
            if isinstance(value, list) and all(isinstance(item, str) for item in value):
                attributes[name] = tuple(str(item) for item in value)
            elif isinstance(value, int | float) and not isinstance(value, bool):
                attributes[name] = value
        attributes["mini_harness.step"] = step.number
        attributes["mini_harness.request.id"] = requested.request_id
        events = [_trim_event(record.event) for record in step.others if _trim(record.event)]
        events += [
            SpanEvent(
                "exception",
                time_ns(failure.ts),
                _present(
                    {
                        "exception.type": failure.error.kind,
                        "exception.message": failure.error.message,
                        "http.response.status_code": failure.error.status,
                        "mini_harness.attempt": failure.attempt,
                    }
                ),
            )
            for failure in step.failures
        ]
        status: StatusCode = "UNSET"
        message = None
        response = step.response
        if response is not None:
            end = response.ts
            attributes |= _response(response)
        elif step.failures:
            final = step.failures[-1]
            end = final.ts
            attributes["error.type"] = final.error.kind
            status, message = "ERROR", final.error.message
        else:
            end = run_end(run)
            attributes["error.type"] = IN_DOUBT_ERROR
            status, message = "ERROR", "no response was recorded"
        if self.content:
            if step.rebuilt is not None:
                messages = [_message(m) for m in step.rebuilt.messages]
                attributes["gen_ai.input.messages"] = _json(messages)
            if response is not None:
                output = _output(response.message, response.finish_reason)
                attributes["gen_ai.output.messages"] = _json([output])
        return SpanData(
            name=f"chat {model}".rstrip(),
            kind="CLIENT",
            trace_id=trace_id(run.run_id),
            span_id=span_id("request", run.run_id, requested.request_id),
            parent_id=run_span_id(run.run_id),
            start_ns=time_ns(requested.ts),
            end_ns=time_ns(end),
            attributes=attributes,
            events=tuple(sorted(events, key=lambda event: event.time_ns)),
            status=status,
            status_message=message,
        )

    # --- calls --------------------------------------------------------------------

    def call_spans(self, run: Run, call: Call) -> list[SpanData]:
        """A call as `execute_tool {name}`, from its ToolCalled to its terminal event, and
        its approval under it (when the policy considered it)."""
        records = call.records or ()
        start = records[0].event.ts if records else run.ts
        end = call_end(run, call)
        attributes: dict[str, AttributeValue] = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": call.name,
            "gen_ai.tool.type": "function",
        }
        if call.tool_use_id is not None:
            attributes["gen_ai.tool.call.id"] = call.tool_use_id
        attributes["mini_harness.call.id"] = call.call_id
        attributes["mini_harness.call.status"] = call.status
        if call.step is not None:
            attributes["mini_harness.step"] = call.step
        if call.duration_ms is not None:
            attributes["mini_harness.call.duration_ms"] = call.duration_ms
        if call.effects:
            attributes["mini_harness.file.paths"] = tuple(e.path for e in call.effects)
            attributes["mini_harness.file.before"] = tuple(e.before or "" for e in call.effects)
            attributes["mini_harness.file.after"] = tuple(e.after or "" for e in call.effects)
        status: StatusCode = "UNSET"
        message = None
        if call.error is not None:
            attributes["error.type"] = call.error.kind
            status, message = "ERROR", call.error.message
        elif not call.ended:
            attributes["error.type"] = IN_DOUBT_ERROR
            status, message = "ERROR", "the call began and was never seen to end"
        if self.content:
            attributes["gen_ai.tool.call.arguments"] = _json(call.input)
            if call.error is not None:
                attributes["gen_ai.tool.call.result"] = call.error.message
            elif call.ended:
                attributes["gen_ai.tool.call.result"] = _json(call.output)
        own = span_id("call", run.run_id, call.call_id)
        spans = [
            SpanData(
                name=f"execute_tool {call.name}",
                kind="INTERNAL",
                trace_id=trace_id(run.run_id),
                span_id=own,
                parent_id=run_span_id(run.run_id),
                start_ns=time_ns(start),
                end_ns=time_ns(end),
                attributes=attributes,
                status=status,
                status_message=message,
            )
        ]
        approval = self._approval(run, call, own, end)
        if approval is not None:
            spans.append(approval)
        return spans

    def _approval(self, run: Run, call: Call, parent: int, call_ended: str) -> SpanData | None:
        """The call's approval as `mini_harness.approval {name}`: from the question put to a
        person (or the policy's decision) to the decision. The conventions have no
        approval span: its attributes are the project's own."""
        asked = next((a for a in call.approvals if isinstance(a, ApprovalRequested)), None)
        decisions = [a for a in call.approvals if isinstance(a, ApprovalDecided)]
        decided = decisions[-1] if decisions else None
        first = asked or decided
        if first is None:
            return None
        attributes: dict[str, AttributeValue] = {
            "mini_harness.approval.asked": asked is not None,
            "mini_harness.call.id": call.call_id,
        }
        rule = decided.rule if decided is not None and decided.rule else None
        rule = rule or (asked.rule if asked is not None else None)
        if rule:
            attributes["mini_harness.approval.rule"] = rule
        if decided is not None:
            attributes["mini_harness.approval.decision"] = decided.decision
            attributes["mini_harness.approval.by"] = decided.by
            if decided.reason:
                attributes["mini_harness.approval.reason"] = decided.reason
        if self.content and asked is not None:
            attributes["mini_harness.approval.shown"] = asked.shown
        return SpanData(
            name=f"mini_harness.approval {call.name}",
            kind="INTERNAL",
            trace_id=trace_id(run.run_id),
            span_id=span_id("approval", run.run_id, call.call_id),
            parent_id=parent,
            start_ns=time_ns(first.ts),
            end_ns=time_ns(decided.ts if decided is not None else call_ended),
            attributes=attributes,
        )


def run_span_id(run_id: str) -> int:
    """The span id of run `run_id`'s own span (what links to it name)."""
    return span_id("run", run_id)


def run_end(run: Run) -> str:
    """When the run ended: its RunFinished, else its last event (a run that died)."""
    if run.finished is not None:
        return run.finished.ts
    return run.last_ts or run.ts


def call_end(run: Run, call: Call) -> str:
    """When the call ended: its terminal event, else when its run did (a call in doubt)."""
    records = call.records or ()
    if call.ended and call.end_line is not None:
        for record in reversed(records):
            if record.line == call.end_line:
                return record.event.ts
    return run_end(run)


def _trim(event: object) -> bool:
    return isinstance(event, ContextTrimmed)


def _trim_event(event: object) -> SpanEvent:
    assert isinstance(event, ContextTrimmed)
    calls = tuple(entry.tool_call_id for entry in event.replaced if entry.tool_call_id)
    attributes: dict[str, AttributeValue] = {
        "mini_harness.trim.messages": len(event.replaced),
        "mini_harness.trim.tokens_before": event.tokens_before,
        "mini_harness.trim.tokens_after": event.tokens_after,
        "mini_harness.trim.budget": event.budget,
    }
    if calls:
        attributes["mini_harness.trim.tool_call_ids"] = calls
    return SpanEvent("mini_harness.context_trimmed", time_ns(event.ts), attributes)


def _response(response: ModelResponded) -> dict[str, AttributeValue]:
    attributes: dict[str, AttributeValue] = {
        "gen_ai.response.finish_reasons": (response.finish_reason,),
        **_usage(response.usage),
    }
    if response.response_id is not None:
        attributes["gen_ai.response.id"] = response.response_id
    return attributes


def _usage(usage: Usage) -> dict[str, AttributeValue]:
    """The counts the provider reported (a count it did not report is left out)."""
    return _present(
        {
            "gen_ai.usage.input_tokens": usage.input_tokens,
            "gen_ai.usage.output_tokens": usage.output_tokens,
            "gen_ai.usage.cache_read.input_tokens": usage.cached_tokens,
        }
    )


def _summed(steps: list[Step]) -> Usage:
    total = Usage()
    for step in steps:
        if step.usage is not None:
            total += step.usage
    return total


def _present(values: dict[str, AttributeValue | None]) -> dict[str, AttributeValue]:
    return {key: value for key, value in values.items() if value is not None}


def _json(value: object) -> str:
    return orjson.dumps(value).decode()


def _message(message: Message) -> dict[str, JsonValue]:
    """A message in the conventions' shape: its role and its parts (text, tool calls, a
    tool's result)."""
    parts: list[JsonValue] = []
    if message.role == "tool":
        parts.append(
            {"type": "tool_call_response", "id": message.tool_call_id, "response": message.content}
        )
    elif message.content or not message.tool_calls:
        parts.append({"type": "text", "content": message.content})
    for call in message.tool_calls:
        try:
            arguments: JsonValue = orjson.loads(call.arguments)
        except orjson.JSONDecodeError:
            arguments = call.arguments  # the model's text, as it sent it
        parts.append(
            {"type": "tool_call", "id": call.id, "name": call.name, "arguments": arguments}
        )
    return {"role": message.role, "parts": parts}


def _output(message: Message, finish_reason: str) -> dict[str, JsonValue]:
    return {**_message(message), "finish_reason": finish_reason}
