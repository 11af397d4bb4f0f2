"""The Context Explorer over time: each agent step's request, by part, in estimated tokens.

The requests are rebuilt by the agent fold (`fold_agent_events`), and split into parts by
the context builder's own `request_parts`, so a step's bar adds up to what
`replay --context-report --step N` prints for it. The Conversation part is shown in two:
the tool results in it (its `tool` messages) and the rest.
"""

from __future__ import annotations

from collections.abc import Iterable

from mini_harness.agent.context import render_message, request_parts
from mini_harness.events import Event, JsonValue
from mini_harness.replay.agent_fold import fold_agent_events
from mini_harness.runtime.context import estimate_tokens

CONVERSATION = "Conversation"
TOOL_RESULTS = "Tool results"


def step_contexts(events: Iterable[Event]) -> dict[tuple[str, int], JsonValue]:
    """Per (run id, step): the step's request as [[label, tokens], ...] in report order."""
    contexts: dict[tuple[str, int], JsonValue] = {}
    for run in fold_agent_events(events):
        for step in run.steps:
            messages = step.request.messages
            parts: list[JsonValue] = []
            for part in request_parts(run.system_prompt, run.rules, run.tools, messages):
                if part.label != CONVERSATION:
                    parts.append([part.label, part.tokens])
                    continue
                results = "\n\n".join(render_message(m) for m in messages[1:] if m.role == "tool")
                tool_tokens = min(estimate_tokens(results), part.tokens)
                parts.append([CONVERSATION, part.tokens - tool_tokens])
                parts.append([TOOL_RESULTS, tool_tokens])
            contexts[(run.run_id, step.step)] = parts
    return contexts
