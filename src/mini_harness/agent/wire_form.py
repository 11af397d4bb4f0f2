"""What both SDK providers share about the wire: request parameters under each format's
names, and tool-call arguments as they go back to a server in a conversation's history.

A model may send arguments that are not a JSON object (cut off by a token limit, or just
malformed). The conversation keeps that raw text, but several servers (vLLM, llama.cpp,
Anthropic's API for `tool_use.input`) refuse a history whose earlier tool-call arguments
are not a JSON object. So such arguments are sent back wrapped in an object that says what
they were; the tool's result (an error, from the loop) tells the model what went wrong.
"""

from __future__ import annotations

import json
from typing import Any

from mini_harness.errors import MiniHarnessError
from mini_harness.events import JsonObject

UNPARSED_KEY = "unparsedArguments"
"""The key the raw text is wrapped under when it is not a JSON object."""


def _object(raw: str) -> JsonObject | None:
    try:
        value = json.loads(raw)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def arguments_object(raw: str) -> JsonObject:
    """`raw` as a JSON object: itself when it is one, `{}` when empty, else wrapped."""
    if not raw.strip():
        return {}
    value = _object(raw)
    return {UNPARSED_KEY: raw} if value is None else value


def arguments_text(raw: str) -> str:
    """`raw` as the text of a JSON object: unchanged when it is one, else as above."""
    if _object(raw) is not None:
        return raw
    return json.dumps(arguments_object(raw), ensure_ascii=False)


def wire_params(params: JsonObject, names: dict[str, str]) -> dict[str, Any]:
    """The request parameters under the wire format's names; an unknown one is an error."""
    out: dict[str, Any] = {}
    for key, value in params.items():
        if key not in names:
            known = ", ".join(sorted(names))
            raise MiniHarnessError(f"Unknown model parameter {key!r} (known: {known})")
        out[names[key]] = value
    return out
