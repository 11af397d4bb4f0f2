"""What the vocabulary records about a conversation, measured one way for every writer (an
agent run, an imported session): the hash of a model request (`requestHash`) and the token
estimate of a text (a trim's `tokensBefore` / `tokensAfter`, the context report)."""

from __future__ import annotations

import hashlib
import math
from collections.abc import Sequence

import orjson

from mini_harness.events.conversation import Message, ToolDefinition
from mini_harness.events.jsonvalue import JsonObject
from mini_harness.events.wire import to_wire

_SORTED = orjson.OPT_SORT_KEYS


def estimate_tokens(text: str) -> int:
    """ceil(characters / 4); at least 1 for non-empty text."""
    return math.ceil(len(text) / 4) if text else 0


class RequestHasher:
    """SHA-256 of a canonical request, fed message by message.

    The canonical request is `{"messages": [...], "params": {...}, "tools": [...]}` as
    compact JSON with sorted keys, so its bytes start with the messages: a loop adds each
    request's new messages and hashes a step in time proportional to what is new. A loop
    whose earlier messages changed (a trim) starts a new hasher.
    """

    def __init__(self) -> None:
        self._state = hashlib.sha256(b'{"messages":[')
        self.count = 0
        # A run sends the same tools with every request: encoded once.
        self._tools: tuple[Sequence[ToolDefinition], bytes] | None = None

    def __repr__(self) -> str:
        return f"<RequestHasher(messages={self.count})>"

    def add(self, messages: Sequence[Message]) -> None:
        for message in messages:
            if self.count:
                self._state.update(b",")
            self._state.update(orjson.dumps(to_wire(message), option=_SORTED))
            self.count += 1

    def hexdigest(self, params: JsonObject, tools: Sequence[ToolDefinition]) -> str:
        """The hash of the messages added so far with these params and tools."""
        if self._tools is None or self._tools[0] is not tools:
            self._tools = (tools, orjson.dumps(to_wire(tools), option=_SORTED))
        state = self._state.copy()
        state.update(b'],"params":')
        state.update(orjson.dumps(params, option=_SORTED))
        state.update(b',"tools":')
        state.update(self._tools[1])
        state.update(b"}")
        return state.hexdigest()
