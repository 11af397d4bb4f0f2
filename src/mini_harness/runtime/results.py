"""What a handler and a dispatch return, and how the CLI and replay show a call.

A handler that changes files returns `WithEffects(output, effects)`; dispatch records the
output as usual and the effects beside it, each path with the sha256 of its bytes before
and after the call (None for a file that was absent).
"""

from __future__ import annotations

import hashlib
import math

import attrs

from mini_harness.errors import InvalidInputError, ToolCallError, ToolHandlerError
from mini_harness.events import FileEffect as FileEffect  # noqa: PLC0414 (re-exported)
from mini_harness.events import JsonObject, JsonValue, ToolError


def sha256_of(data: bytes | None) -> str | None:
    """The hex sha256 of a file's bytes, or None for a file that does not exist."""
    return None if data is None else hashlib.sha256(data).hexdigest()


@attrs.frozen
class WithEffects:
    """A handler's output together with the file effects dispatch records for it."""

    output: JsonValue
    effects: tuple[FileEffect, ...]


# Without slots: a frozen attrs class with a __dict__ fills it directly, while a slotted
# one calls object.__setattr__ per field, which doubles the cost of making one (once per
# dispatch). Still frozen: setting an attribute raises FrozenInstanceError.
@attrs.frozen(slots=False)
class ToolResult:
    """What a successful dispatch returns (the reference's shape, plus the call id)."""

    name: str
    input: JsonValue
    output: JsonValue
    duration_ms: float
    call_id: str
    effects: tuple[FileEffect, ...] | None = None  # files the call changed (see WithEffects)

    def display_json(self) -> JsonObject:
        """As the CLI shows it: durationMs rounded half-up to whole milliseconds."""
        return display_result(self.name, self.input, self.output, self.duration_ms)


def display_result(
    name: str, tool_input: JsonValue, output: JsonValue, duration_ms: float
) -> JsonObject:
    """A successful call as the CLI shows it (and as replay rebuilds it from the events)."""
    return _shown(name, tool_input, "output", output, duration_ms)


def display_failure(
    name: str, tool_input: JsonValue, error: JsonObject, duration_ms: float
) -> JsonObject:
    """A failed call in the same shape, with the recorded `error` where the output would be."""
    return _shown(name, tool_input, "error", error, duration_ms)


def _shown(
    name: str, tool_input: JsonValue, key: str, value: JsonValue, duration_ms: float
) -> JsonObject:
    # durationMs rounded half-up to whole milliseconds.
    return {
        "name": name,
        "input": tool_input,
        key: value,
        "durationMs": math.floor(duration_ms + 0.5),
    }


def recordable(text: str) -> str:
    """`text` with lone surrogates written as `\\udcff` escapes, so it can go into a line.

    Strings the runtime makes itself (error messages, type and tool names) may carry them,
    e.g. an OSError about a path that is not UTF-8; a recorded call must not fail on that.
    """
    if text.isascii():
        return text
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def tool_error(error: ToolCallError) -> ToolError:
    """How a failed call's `error` is recorded (ToolFailed's `error`), and shown wherever a
    failure is shown or compared: its kind and message, the JSON path and violations of
    refused input, a handler's exception type."""
    invalid = error if isinstance(error, InvalidInputError) else None
    violations = tuple(v.to_json() for v in invalid.violations) if invalid else ()
    return ToolError(
        error.kind,
        recordable(error.message),
        path=recordable(invalid.path) if invalid else None,
        type=recordable(error.error_type) if isinstance(error, ToolHandlerError) else None,
        violations=violations or None,
    )
