"""Resume and fork, read from the transcript: the opening of a run that continues another.

The fold (agent_fold) rebuilds each run's requests and tool calls; this module picks the
point to continue from and hands it to `mini_harness.agent.resume`, which decides what the
new run starts with. Never calls a model or a tool.
"""

from __future__ import annotations

from collections.abc import Callable

from mini_harness.agent.context import system_message
from mini_harness.agent.loop import DEFAULT_MAX_STEPS, DEFAULT_PARAMS, AgentConfig, Opening
from mini_harness.agent.provider import Message
from mini_harness.agent.resume import (
    ResumeError,
    ResumePlan,
    check_history,
    plan_fork,
    plan_resume,
)
from mini_harness.errors import counted
from mini_harness.replay.agent_fold import AgentRun


def resume_plan(
    runs: list[AgentRun],
    run: AgentRun,
    *,
    follow_up: str | None = None,
    retry_in_doubt: Callable[[str], bool] = lambda name: False,
) -> ResumePlan:
    """How to continue `run` (one of `runs`, the agent runs of its transcript).

    A run that stopped before its first request continues where its own origin stood
    (with the calls it dispatched meanwhile), or, with no origin, from its task.
    """
    by_id = {each.run_id: each for each in runs}
    chain = [run]
    while not chain[-1].steps and chain[-1].resumed_from is not None:
        origin = by_id.get(str(chain[-1].resumed_from.get("runId")))
        if origin is None:
            raise ResumeError(
                f"run {chain[-1].run_id} made no request and the run it continues "
                f"({chain[-1].resumed_from.get('runId')}) is not in this transcript"
            )
        chain.append(origin)
    base = chain[-1]
    if not base.steps and base.forked_from is not None:
        raise ResumeError(
            f"run {base.run_id} is a fork that made no request yet: fork again instead"
        )
    # Later runs of the chain dispatched some of the base's leftover calls: theirs count.
    later = [call for link in reversed(chain[:-1]) for call in link.opening_calls]
    every_call = [call for link in chain for call in link.calls]
    if base.steps:
        last = base.steps[-1]
        request: list[Message] = list(last.request.messages)
        answer = last.response.message if last.response is not None else None
        calls, step = [*last.calls, *later], last.step
    else:
        request = [system_message(base.system_prompt, base.rules), Message("user", base.task)]
        answer, calls, step = None, later, 0
    plan = plan_resume(
        run_id=run.run_id,
        step=step if base is run else 0,
        request=request,
        answer=answer,
        calls=calls,
        follow_up=follow_up,
        retry_in_doubt=retry_in_doubt,
    )
    matched = {call.call_id for call in calls}
    extra = tuple(c for c in every_call if not c.ended and c.call_id not in matched)
    # Never send a history a provider refuses: checked with stand-ins for the results the
    # pending calls will get.
    pending = [Message("tool", "", tool_call_id=c.id, name=c.name) for c, _ in plan.opening.pending]
    problems = check_history([*plan.opening.history, *pending])
    if problems:
        raise ResumeError(f"cannot rebuild a valid history for run {run.run_id}: {problems[0]}")
    return ResumePlan(plan.opening, plan.to_close + extra)


def fork_opening(run: AgentRun, step: int, instruction: str | None = None) -> Opening:
    """Branch `run` off before step `step`'s request, optionally adding `instruction`."""
    chosen = run.step_at(step)
    index = run.steps.index(chosen)
    previous = len(run.steps[index - 1].request.messages) if index else 0
    return plan_fork(
        run_id=run.run_id,
        step=step,
        request=chosen.request.messages,
        previous_request_size=previous,
        instruction=instruction,
    )


def continued_config(
    run: AgentRun,
    *,
    task: str | None = None,
    max_steps: int | None = None,
    stream: bool = True,
) -> AgentConfig:
    """The config of a run that continues `run`: its system prompt, rules, parameters,
    budget and step limit (unless `max_steps`); the task is the follow-up when given."""
    params = dict(run.steps[-1].request.params) if run.steps else dict(DEFAULT_PARAMS)
    return AgentConfig(
        task=task if task is not None else run.task,
        system_prompt=run.system_prompt,
        rules=run.rules,
        max_steps=max_steps or run.max_steps or DEFAULT_MAX_STEPS,
        max_context_tokens=run.budget,
        params=params,
        stream=stream,
    )


def run_tree_lines(runs: list[AgentRun]) -> list[str]:
    """Agent runs as a tree of who continues or forks whom (empty when none does).

    Each run shows how it came from its parent, its step count and how it ended; a run
    whose origin is not in the transcript (a fork written elsewhere) is a root that names
    it."""
    if not any(run.resumed_from or run.forked_from for run in runs):
        return []
    known = {run.run_id for run in runs}
    children: dict[str | None, list[AgentRun]] = {}
    for run in runs:
        parent = _origin(run)[1]
        children.setdefault(parent if parent in known else None, []).append(run)
    lines = ["Agent runs:"]

    def add(run: AgentRun, depth: int) -> None:
        how, parent = _origin(run)
        if parent is None:
            link = ""
        elif parent in known:
            link = f"{how}: "
        else:
            link = f"{how} of {parent} (not in this transcript): "
        ended = f"{counted(len(run.steps), 'step')}, {run.stop_reason or 'unfinished'}"
        lines.append(f"{'  ' * depth}{link}{run.run_id} ({ended})")
        for child in children.get(run.run_id, []):
            add(child, depth + 1)

    for root in children.get(None, []):
        add(root, 1)
    return lines


def _origin(run: AgentRun) -> tuple[str, str | None]:
    for how, link in (("resumed after", run.resumed_from), ("forked before", run.forked_from)):
        if link is not None:
            return f"{how} step {link.get('step')}", str(link.get("runId"))
    return "", None
