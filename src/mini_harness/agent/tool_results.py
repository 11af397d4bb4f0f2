"""The tool result a model gets for each of its calls, whether run now or recorded."""

from __future__ import annotations

import orjson

from mini_harness.agent.provider import Message, ToolCall
from mini_harness.agent.reporting import ToolOutcome
from mini_harness.events import JsonValue


def call_outcome(
    call: ToolCall, *, output: JsonValue = None, error: tuple[str, str] | None = None
) -> ToolOutcome:
    """The tool result message of `call`: its output as compact JSON, or, when it failed
    (`error` is its kind and message), the error text, so the model can correct itself.

    Arguments that are not JSON are explained as such (unless the tool is unknown).
    """
    if error is None:
        content = orjson.dumps(output).decode()
        message = Message("tool", content, tool_call_id=call.id, name=call.name)
        return ToolOutcome(call, message, output=output)
    kind, text = error
    if kind != "unknown_tool":
        try:
            orjson.loads(call.arguments)
        except orjson.JSONDecodeError as exc:
            text = (
                f"Invalid arguments for {call.name}: not valid JSON ({exc}). "
                "Send the arguments as one JSON object."
            )
    message = Message("tool", text, tool_call_id=call.id, name=call.name, is_error=True)
    return ToolOutcome(call, message, error=text)
