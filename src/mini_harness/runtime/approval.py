"""The approval hook: what ToolRuntime asks an approver about a call, and how it answers.

The runtime consults its approver (when it has one) after ToolCalled is recorded and the
input validated, before the handler runs; the policies and prompts that decide are the
agent layer's (`mini_harness.agent.approval`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Protocol

import attrs

from mini_harness.events import EventSink, JsonValue
from mini_harness.runtime.definitions import ToolDefinition


@attrs.frozen
class PendingCall:
    """A call that was recorded and validated and waits for approval before it runs."""

    run_id: str
    call_id: str
    definition: ToolDefinition
    input: JsonValue
    sink: EventSink  # where the approver records ApprovalRequested / ApprovalDecided
    timestamp: Callable[[], str]


class Approver(Protocol):
    """Decides whether a call may run: None lets it run; a string denies it and says why.
    An approver that must wait for an answer (an MCP client's user) returns an awaitable:
    `dispatch_async` awaits it, keeping the event loop free meanwhile.

    ToolRuntime consults it (when it has one) after ToolCalled is recorded and the input
    validated, before the handler runs. A denial ends the call as ToolFailed, kind `denied`.
    An approver that decides by a policy file says which in a `policy_sha256` attribute,
    recorded in RunStarted.
    """

    def __call__(self, call: PendingCall) -> str | Awaitable[str | None] | None: ...
