"""What an agent run is given: its task, prompt, rules and limits (AgentConfig), and, for a
run that continues another, where it starts (Opening)."""

from __future__ import annotations

import attrs

from mini_harness.agent.context import DEFAULT_SYSTEM_PROMPT
from mini_harness.events import (
    JsonObject,
    JsonValue,
    Message,
    ProjectRules,
    RunOrigin,
    RunSettings,
    RunWorkspace,
    ToolCall,
)

DEFAULT_MAX_STEPS = 10
DEFAULT_PARAMS: JsonObject = {"temperature": 0.2}


@attrs.frozen
class AgentConfig:
    """What one agent run is asked to do, and its limits.

    `manual_tool` is a tool (name, input) dispatched before the first request, whose
    result goes into the conversation (the CLI's `--tool` given with a task).
    `workspace` and `settings`, when given, are recorded in the run's RunStarted (the CLI
    gives both: where the run works and the settings it started with).
    """

    task: str
    system_prompt: str = DEFAULT_SYSTEM_PROMPT
    rules: tuple[ProjectRules, ...] = ()
    max_steps: int = DEFAULT_MAX_STEPS
    max_context_tokens: int | None = None
    params: JsonObject = attrs.field(factory=lambda: dict(DEFAULT_PARAMS))
    stream: bool = True
    manual_tool: tuple[str, JsonValue] | None = None
    workspace: RunWorkspace | None = None
    settings: RunSettings | None = None


@attrs.frozen
class Opening:
    """Where a run that continues another one starts (resume, fork, offline replay).

    `history` is the conversation so far (system message first); `sent` how many of its
    messages a model has already seen (the budget may trim their tool results).
    `pending` are tool calls of the last assistant message that still need a result, with
    the step that made them: they are dispatched first, in order. Then `follow_up`, if
    given, is added as a user message. A run whose last answer was final (`final_text`)
    and that gets nothing new ends at once with that answer. `resumed_from` /
    `forked_from` go into RunStarted, and so does `unverified`: the
    problems of a history that does not verify, continued anyway because the user said so.
    `steps_before` is how many steps of the conversation came before the run's first
    request: the record counts each run's requests from 1, but a front end is told the
    run's steps as going on from there (`Step 3` after a resume after step 2), and the
    pending calls with the step that made them.
    """

    history: tuple[Message, ...]
    sent: int = 0
    pending: tuple[tuple[ToolCall, int], ...] = ()
    follow_up: str | None = None
    final_text: str | None = None
    resumed_from: RunOrigin | None = None
    forked_from: RunOrigin | None = None
    unverified: tuple[str, ...] | None = None
    steps_before: int = 0
