"""The scripted model (`script:FILE`): responses read from a JSON file, in order.

The file is a JSON object `{"responses": [...]}` (or just the list). Each response has
`text` and/or `toolCalls`; a tool call has `name`, `arguments` (a JSON object, or a string
sent as is, which lets a script send arguments that are not valid JSON) and optionally
`id` (default `call_<response>_<n>`). Optional per response: `finishReason` (default
`tool_calls` with calls, else `stop`), `usage` (`inputTokens`, `outputTokens`,
`cachedTokens`) and `delayMs`, how long the model takes to answer (for demos and for tests
that interrupt a request).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from mini_harness.agent.providers.interface import FINISH_REASONS, ModelRequest, ModelResponse
from mini_harness.errors import ModelError, ScriptError, counted
from mini_harness.events import Message, ToolCall, Usage
from mini_harness.events.wire import camel, fields

_RESPONSE_KEYS = ("text", "toolCalls", "finishReason", "usage", "delayMs")
_CALL_KEYS = ("id", "name", "arguments")


def _fail(path: str, where: str, why: str) -> ScriptError:
    return ScriptError(f"script {path}: {where}: {why}")


def _known_keys(path: str, where: str, data: dict[str, Any], known: tuple[str, ...]) -> None:
    """Refuses a key the script format does not have: a misspelt `tool_calls` would
    otherwise be ignored and the run would answer without calling the tool."""
    for key in data:
        if key not in known:
            import difflib  # only a bad script needs it

            spelt = {k.lower().replace("_", ""): k for k in known}
            close = spelt.get(str(key).lower().replace("_", "")) or next(
                iter(difflib.get_close_matches(str(key), known, n=1)), None
            )
            hint = f" (did you mean {close!r}?)" if close else ""
            raise _fail(path, f"{where}.{key}", f"unknown key{hint}; expected one of {list(known)}")


def _usage(path: str, where: str, data: object) -> Usage:
    if data is None:
        return Usage()
    if not isinstance(data, dict):
        raise _fail(path, where, "usage must be an object")
    keys = tuple(camel(field.name) for field in fields(Usage))
    _known_keys(path, f"{where}.usage", data, keys)
    counts = {}
    for field in fields(Usage):
        key = camel(field.name)  # the script's keys are those of a recorded usage
        value = data.get(key)
        if value is not None and (type(value) is not int or value < 0):
            raise _fail(path, f"{where}.usage.{key}", "must be a whole number")
        counts[field.name] = value
    return Usage(**counts)


def _call(path: str, where: str, data: object, default_id: str) -> ToolCall:
    if not isinstance(data, dict):
        raise _fail(path, where, "a tool call must be an object")
    _known_keys(path, where, data, _CALL_KEYS)
    name, arguments, call_id = data.get("name"), data.get("arguments", {}), data.get("id")
    if not isinstance(name, str) or not name:
        raise _fail(path, f"{where}.name", "must be a non-empty string")
    if call_id is not None and not isinstance(call_id, str):
        raise _fail(path, f"{where}.id", "must be a string")
    text = arguments if isinstance(arguments, str) else orjson.dumps(arguments).decode()
    return ToolCall(id=call_id or default_id, name=name, arguments=text)


def parse_script(path: str, data: Any) -> tuple[tuple[ModelResponse, float], ...]:
    """The responses of a parsed script file, each with its delay in seconds; ScriptError
    says what is wrong."""
    if isinstance(data, dict):
        _known_keys(path, "$", data, ("responses",))
        data = data.get("responses")
    if not isinstance(data, list) or not data:
        raise _fail(path, "$", 'expected a non-empty list of responses (or {"responses": [...]})')
    responses = []
    for number, item in enumerate(data, 1):
        where = f"response {number}"
        if not isinstance(item, dict):
            raise _fail(path, where, "must be an object")
        _known_keys(path, where, item, _RESPONSE_KEYS)
        text = item.get("text", "")
        if not isinstance(text, str):
            raise _fail(path, f"{where}.text", "must be a string")
        raw_calls = item.get("toolCalls", [])
        if not isinstance(raw_calls, list):
            raise _fail(path, f"{where}.toolCalls", "must be a list")
        if not text and not raw_calls:
            raise _fail(path, where, "needs text or toolCalls")
        calls = tuple(
            _call(path, f"{where}.toolCalls[{i}]", call, f"call_{number}_{i + 1}")
            for i, call in enumerate(raw_calls)
        )
        finish = item.get("finishReason", "tool_calls" if calls else "stop")
        delay = item.get("delayMs", 0)
        if type(delay) not in (int, float) or delay < 0:
            raise _fail(path, f"{where}.delayMs", "must be a number of milliseconds >= 0")
        if finish not in FINISH_REASONS:
            raise _fail(path, f"{where}.finishReason", f"must be one of {sorted(FINISH_REASONS)}")
        response = ModelResponse(
            message=Message("assistant", text, tool_calls=calls),
            finish_reason=finish,
            usage=_usage(path, where, item.get("usage")),
            response_id=f"script-{number}",
        )
        responses.append((response, delay / 1000))
    return tuple(responses)


class ScriptProvider:
    """Serves the responses of a script file in order, whatever the request.

    A request past the last response fails with ModelError (`invalid_response`), naming
    how many responses the script has; `unused()` lists the responses never served.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = os.fspath(path)
        self.name = f"script:{self.path}"
        self.model = Path(self.path).name
        try:
            data = orjson.loads(Path(self.path).read_bytes())
        except OSError as exc:
            raise ScriptError(f"script {self.path} cannot be read: {exc.strerror}") from None
        except orjson.JSONDecodeError as exc:
            raise ScriptError(f"script {self.path} is not valid JSON ({exc})") from None
        self.responses = parse_script(self.path, data)
        self.served = 0

    def __repr__(self) -> str:
        return f"<ScriptProvider({self.path!r}, served={self.served}/{len(self.responses)})>"

    def unused(self) -> tuple[int, ...]:
        """The 1-based numbers of the responses not served yet."""
        return tuple(range(self.served + 1, len(self.responses) + 1))

    def complete(
        self,
        request: ModelRequest,
        *,
        on_text: Callable[[str], None] | None = None,
        on_retry: Callable[[ModelError], None] | None = None,
    ) -> ModelResponse:
        if self.served >= len(self.responses):
            raise ModelError(
                "invalid_response",
                f"script {self.path} has {counted(len(self.responses), 'response')}; the run asked "
                f"for response {self.served + 1}",
            )
        response, delay = self.responses[self.served]
        if delay:
            time.sleep(delay)
        self.served += 1
        if on_text is not None and response.message.content:
            on_text(response.message.content)
        return response
