"""Resume and fork, read from the transcript: the opening of a run that continues another.

The history's fold rebuilds each run's requests and tool calls; this module picks the
point to continue from and builds the opening of the new run, so that the history sent to
the model is always valid: every tool call gets exactly one result. Never calls a model or
a tool.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import attrs

from mini_harness.agent import (
    DEFAULT_MAX_STEPS,
    DEFAULT_PARAMS,
    INTERRUPTED_RESULT,
    AgentConfig,
    Message,
    Opening,
    ToolCall,
    check_history,
    system_message,
)
from mini_harness.errors import ResumeError, RunContinuedError
from mini_harness.events import RunOrigin, ToolError, ToolFailed, utc_timestamp
from mini_harness.replay.history import Call, Run, select_step
from mini_harness.transcripts.claim import resumes


@attrs.frozen
class ResumePlan:
    """How to continue a run: the opening of the new run, the calls in doubt to close
    (record as `interrupted`) once it has started, and the runs whose events it was
    planned from (`read`: the run, and the runs it continues when it made no request)."""

    opening: Opening
    to_close: tuple[Call, ...]
    read: tuple[str, ...] = ()

    def closing_events(self) -> list[ToolFailed]:
        """The terminal events that close the calls in doubt, to record right after the new
        run's RunStarted, which claims the run (each under its own run's id)."""
        return [
            ToolFailed(
                ts=utc_timestamp(),
                run_id=call.run_id,
                call_id=call.call_id,
                name=call.name,
                error=ToolError("interrupted", INTERRUPTED_RESULT.format(name=call.name)),
                duration_ms=0.0,  # unknown: the run ended before measuring it
            )
            for call in self.to_close
        ]


def steps_before(run: Run, runs: Iterable[Run]) -> int:
    """How many model requests of the conversation came before `run`'s first: 0 for a run
    that started it; for one that continues another (one of `runs`, read with their
    requests), those before that run plus the steps of it that were kept (a resume: up
    to the step it continued, less that step when its request went unanswered and is sent
    again; a fork: up to the step before the one it branches off at). Each run's record
    counts its own requests from 1; a front end numbers them on from this
    (Opening.steps_before), so that a resumed run's steps go on from the run's."""
    by_id = {each.run_id: each for each in runs}
    before = 0
    seen: set[str] = set()
    current: Run | None = run
    while current is not None and current.run_id not in seen:
        seen.add(current.run_id)
        link = current.resumed_from or current.forked_from
        if link is None:
            break
        parent = by_id.get(link.run_id)  # None: in another file (fork --log OUT)
        answered = parent is None or any(
            step.number == link.step and step.response is not None for step in parent.steps
        )
        resumed = current.resumed_from is not None
        before += link.step if resumed and answered else max(link.step - 1, 0)
        current = parent
    return before


def resume_plan(
    runs: list[Run],
    run: Run,
    *,
    follow_up: str | None = None,
    retry_in_doubt: Callable[[str], bool] = lambda name: False,
) -> ResumePlan:
    """How to continue `run` (one of `runs`, the agent runs of its transcript).

    The new run starts from the last request sent and, if one came, its answer (none: the
    request is in doubt and is sent again). Each tool call of the answer gets its recorded
    result if it ended; if it is in doubt it is closed as interrupted and the model is told
    so, unless `retry_in_doubt(name)` says to run it again; a call never begun is
    dispatched by the new run. `follow_up` adds a user message; without one, a run whose
    answer was final ends with that answer. A run that stopped before its first request
    continues where its own origin stood (with the calls it dispatched meanwhile), or,
    with no origin, from its task. A run that another run resumed already is not continued
    again (RunContinuedError): forking it is the way to branch off.
    """
    for other in runs:  # the one test of "resumed already" (transcripts/claim.py)
        if other.started is not None and resumes(other.started) == run.run_id:
            raise RunContinuedError(run.run_id, other.run_id)
    by_id = {each.run_id: each for each in runs}
    chain = [run]
    while not chain[-1].steps and (link := chain[-1].resumed_from) is not None:
        origin = by_id.get(link.run_id)
        if origin is None:
            raise ResumeError(
                f"run {chain[-1].run_id} made no request and the run it continues "
                f"({link.run_id}) is not in this transcript"
            )
        chain.append(origin)
    base = chain[-1]
    if not base.steps and base.forked_from is not None:
        raise ResumeError(
            f"run {base.run_id} is a fork that made no request yet: fork again instead"
        )
    # Later runs of the chain dispatched some of the base's leftover calls: theirs count.
    later = [call for link in reversed(chain[:-1]) for call in link.opening_calls]
    if base.steps:
        last = base.steps[-1]
        history: list[Message] = list(last.request.messages)
        answer = last.response.message if last.response is not None else None
        calls, step = [*last.calls, *later], last.number if base is run else 0
    else:
        history = [system_message(base.system_prompt, base.rules), Message("user", base.task)]
        answer, calls, step = None, later, 0
    sent = len(history)
    pending: list[tuple[ToolCall, int]] = []
    if answer is not None:
        history.append(answer)  # as the loop keeps it: raw arguments and all
        unused = list(calls)
        for call in answer.tool_calls:
            recorded = _take(unused, call.id)
            # Never begun (or in doubt and to be retried): the new run dispatches it.
            if pending or recorded is None or (not recorded.ended and retry_in_doubt(call.name)):
                pending.append((call, step))
            else:
                history.append(recorded.result_message(call))
    # Never send a history a provider refuses: checked with stand-ins for the results the
    # pending calls will get.
    stand_ins = [Message("tool", "", tool_call_id=c.id, name=c.name) for c, _ in pending]
    problems = check_history([*history, *stand_ins])
    if problems:
        raise ResumeError(f"cannot rebuild a valid history for run {run.run_id}: {problems[0]}")
    opening = Opening(
        tuple(history),
        sent,
        pending=tuple(pending),
        follow_up=follow_up,
        final_text=answer.content if answer is not None and not answer.tool_calls else None,
        resumed_from=RunOrigin(run.run_id, step),
        # The request of `step` was answered, or is sent again as the run's first.
        steps_before=steps_before(base, runs) + (step if answer is not None else max(step - 1, 0)),
    )
    # The calls in doubt of the step it continues, then those left over by the chain.
    matched = {call.call_id for call in calls}
    every_call = [call for link in chain for call in link.calls]
    extra = [c for c in every_call if not c.ended and c.call_id not in matched]
    to_close = (*(c for c in calls if not c.ended), *extra)
    return ResumePlan(opening, to_close, tuple(link.run_id for link in chain))


def _take(calls: list[Call], tool_use_id: str) -> Call | None:
    """The latest record of the call: a later run that retried it knows its fate best."""
    for index in range(len(calls) - 1, -1, -1):
        if calls[index].tool_use_id == tool_use_id:
            return calls.pop(index)
    return None


def fork_opening(
    run: Run, step: int, instruction: str | None = None, runs: Iterable[Run] = ()
) -> Opening:
    """Branch `run` off before step `step`'s request (as it was sent), optionally adding
    the user message `instruction`; `runs` are the runs of its transcript, which say how
    many steps came before `run` (`steps_before`)."""
    chosen = select_step(run, step)
    index = run.steps.index(chosen)
    history = list(chosen.request.messages)
    if instruction is not None:
        history.append(Message("user", instruction))
    previous = len(run.steps[index - 1].request.messages) if index else 0
    origin = RunOrigin(run.run_id, step)
    before = steps_before(run, runs) + step - 1
    return Opening(tuple(history), previous, forked_from=origin, steps_before=before)


def continued_config(
    run: Run,
    *,
    task: str | None = None,
    max_steps: int | None = None,
    stream: bool = True,
) -> AgentConfig:
    """The config of a run that continues `run`: its system prompt, rules, parameters,
    budget (the one its trims recorded, else the one it started with) and step limit
    (unless `max_steps`); the task is the follow-up when given."""
    params = dict(run.steps[-1].request.params) if run.steps else dict(DEFAULT_PARAMS)
    budget = run.budget
    if budget is None and run.settings is not None:
        budget = run.settings.max_context_tokens
    return AgentConfig(
        task=task if task is not None else run.task,
        system_prompt=run.system_prompt,
        rules=run.rules,
        max_steps=max_steps or run.max_steps or DEFAULT_MAX_STEPS,
        max_context_tokens=budget,
        params=params,
        stream=stream,
    )
