"""Fold agent runs: rebuild every model request, step and outcome from the events alone.

The first ModelRequested of a run holds the opening conversation and each later one the
messages added since; ContextTrimmed replaces earlier messages by their placeholders. So
folding in order rebuilds the exact request of every step, which `hash_matches` checks
against the recorded `requestHash`. Never calls a model or a tool.
"""

from __future__ import annotations

from collections.abc import Iterable

import attrs

from mini_harness.agent.context import context_report, request_hash, request_parts
from mini_harness.agent.provider import Message, ModelRequest, ModelResponse
from mini_harness.agent.resume import RecordedCall
from mini_harness.errors import ReplayError, counted
from mini_harness.events import (
    ContextTrimmed,
    Event,
    ModelIdentity,
    ModelRequested,
    ModelResponded,
    ProjectRules,
    ReplacedMessage,
    RunFinished,
    RunOrigin,
    RunStarted,
    ToolCalled,
    ToolDefinition,
    ToolFailed,
    ToolSucceeded,
)


@attrs.define
class AgentStep:
    """One model request of a run, rebuilt: the full request, what came back, what it did."""

    step: int
    request_id: str
    request: ModelRequest
    recorded_hash: str
    response: ModelResponse | None = None
    trimmed: list[ReplacedMessage] = attrs.Factory(list)
    calls: list[RecordedCall] = attrs.Factory(list)

    @property
    def hash_matches(self) -> bool:
        """Whether the rebuilt request hashes to the recorded `requestHash`."""
        return request_hash(self.request) == self.recorded_hash


@attrs.define
class AgentRun:
    """An agent run as its events tell it. `stop_reason` is None while it is unfinished
    (no RunFinished: the process died). `resumed_from` / `forked_from` name the run (and
    step) it continues, if any; `budget` is the context budget its trims recorded."""

    run_id: str
    task: str
    model: ModelIdentity | None
    system_prompt: str
    rules: tuple[ProjectRules, ...]
    max_steps: int | None
    tools: tuple[ToolDefinition, ...]
    steps: list[AgentStep] = attrs.Factory(list)
    stop_reason: str | None = None
    final_text: str | None = None
    history: list[Message] = attrs.Factory(list)
    resumed_from: RunOrigin | None = None
    forked_from: RunOrigin | None = None
    budget: int | None = None
    opening_calls: list[RecordedCall] = attrs.Factory(list)
    policy_sha256: str | None = None  # the approval policy file it started with

    @property
    def finished(self) -> bool:
        return self.stop_reason is not None

    @property
    def calls(self) -> list[RecordedCall]:
        """Every call of the run in the order they began: the opening ones, then each step's."""
        return [*self.opening_calls, *(call for step in self.steps for call in step.calls)]

    @property
    def in_doubt(self) -> list[str]:
        """The ids of the calls begun but never ended."""
        return [call.call_id for call in self.calls if not call.ended]

    def step_at(self, number: int) -> AgentStep:
        for step in self.steps:
            if step.step == number:
                return step
        made = counted(len(self.steps), "request")
        raise ReplayError(f"run {self.run_id} has no step {number} (it made {made})")

    def context_report(self, step: int | None = None) -> str:
        """The Context Explorer report of a step's request (the last one by default),
        byte for byte what the live run printed for it."""
        if not self.steps:
            raise ReplayError(f"run {self.run_id} made no model request")
        chosen = self.steps[-1] if step is None else self.step_at(step)
        parts = request_parts(self.system_prompt, self.rules, self.tools, chosen.request.messages)
        tokens = chosen.response.usage.input_tokens if chosen.response else None
        return context_report(parts, tokens)


@attrs.define
class AgentRunFolder:
    """Folds agent runs event by event into `runs` (tool runs are passed over)."""

    runs: dict[str, AgentRun] = attrs.Factory(dict)
    requests: dict[str, AgentStep] = attrs.Factory(dict)
    calls: dict[str, tuple[list[RecordedCall], int]] = attrs.Factory(dict)  # call id -> where
    pending_trims: dict[str, list[ReplacedMessage]] = attrs.Factory(dict)

    def add(self, event: Event) -> None:
        if isinstance(event, RunStarted):
            if event.task is not None:
                self.runs[event.run_id] = AgentRun(
                    run_id=event.run_id,
                    task=event.task,
                    model=event.model,
                    system_prompt=event.system_prompt or "",
                    rules=event.project_rules or (),
                    max_steps=event.max_steps,
                    tools=event.tools,
                    resumed_from=event.resumed_from,
                    forked_from=event.forked_from,
                    policy_sha256=event.policy_sha256,
                )
            return
        run = self.runs.get(getattr(event, "run_id", ""))
        if run is None:
            return
        if isinstance(event, ModelRequested):
            run.history.extend(event.messages)
            step = AgentStep(
                step=event.step,
                request_id=event.request_id,
                request=ModelRequest(tuple(run.history), run.tools, event.params),
                recorded_hash=event.request_hash,
                trimmed=self.pending_trims.pop(run.run_id, []),
            )
            run.steps.append(step)
            self.requests[event.request_id] = step
        elif isinstance(event, ModelResponded):
            answered = self.requests.get(event.request_id)
            if answered is not None:
                answered.response = ModelResponse(
                    message=event.message,
                    finish_reason=event.finish_reason,
                    usage=event.usage,
                    response_id=event.response_id,
                )
        elif isinstance(event, ContextTrimmed):
            run.budget = event.budget
            for entry in event.replaced:
                # A continued run trims before its first request, which records the
                # trimmed messages themselves.
                if entry.index < len(run.history):
                    trimmed = attrs.evolve(run.history[entry.index], content=entry.content)
                    run.history[entry.index] = trimmed
            # The trim belongs to the request it was made for, which comes next.
            self.pending_trims.setdefault(run.run_id, []).extend(event.replaced)
        elif isinstance(event, ToolCalled):
            # Calls before a run's first request (`--tool`, or the calls a continued run
            # had left over) are its opening calls.
            in_step = event.step is not None and bool(run.steps)
            calls = run.steps[-1].calls if in_step else run.opening_calls
            self.calls[event.call_id] = (calls, len(calls))
            calls.append(
                RecordedCall(event.call_id, run.run_id, event.name, event.tool_use_id, event.step)
            )
        elif isinstance(event, ToolSucceeded | ToolFailed):
            found = self.calls.pop(event.call_id, None)
            if found is not None:
                calls, index = found
                if isinstance(event, ToolSucceeded):
                    calls[index] = attrs.evolve(calls[index], ended=True, output=event.output)
                else:
                    error = {"kind": event.error.kind, "message": event.error.message}
                    calls[index] = attrs.evolve(calls[index], ended=True, error=error)
        elif isinstance(event, RunFinished):
            run.stop_reason = event.stop_reason
            run.final_text = event.final_text


def fold_agent_events(events: Iterable[Event]) -> list[AgentRun]:
    """The agent runs among `events`, in the order they started (tool runs are skipped)."""
    folder = AgentRunFolder()
    for event in events:
        folder.add(event)
    return list(folder.runs.values())


def select_agent_run(runs: list[AgentRun], run_id: str | None = None) -> AgentRun:
    """The run `run_id` (a unique prefix is enough), or the last agent run."""
    if not runs:
        raise ReplayError("the transcript has no agent run")
    if run_id is None:
        return runs[-1]
    matches = [run for run in runs if run.run_id.startswith(run_id)]
    if len(matches) != 1:
        raise ReplayError(
            f"no agent run {run_id!r}" if not matches else f"run id {run_id!r} is ambiguous"
        )
    return matches[0]
