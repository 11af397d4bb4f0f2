"""The Context Explorer report: how much of a model's context each part would take."""

from __future__ import annotations

from collections.abc import Sequence

import attrs
import orjson

from mini_harness.events import JsonValue, ToolDefinition, to_wire
from mini_harness.events.measure import estimate_tokens

LABEL_WIDTH = 22


def pretty_json(value: JsonValue) -> str:
    """JSON indented by two spaces, as a model would be shown it."""
    return orjson.dumps(value, option=orjson.OPT_INDENT_2).decode()


@attrs.frozen
class ContextPart:
    label: str
    text: str

    @property
    def tokens(self) -> int:
        return estimate_tokens(self.text)


@attrs.frozen
class ContextRow:
    """A report row known only by its estimate, e.g. the sum over many tool results."""

    label: str
    tokens: int


def dispatch_context(tools: Sequence[ToolDefinition], result: JsonValue) -> list[ContextPart]:
    """The parts of a manual tool dispatch: the tool list and the tool result."""
    return [
        ContextPart("Tool definitions", pretty_json(to_wire(tools))),
        ContextPart("Tool result", pretty_json(result)),
    ]


def render_context_report(parts: Sequence[ContextPart | ContextRow]) -> str:
    """`Context Explorer`, a blank line, one row per part, then `Total`; ends with a newline."""
    lines = ["Context Explorer", ""]
    total = 0
    for part in parts:
        lines.append(f"{part.label:<{LABEL_WIDTH}} ~{part.tokens:,} tokens")
        total += part.tokens
    lines.append(f"{'Total':<{LABEL_WIDTH}} ~{total:,} tokens")
    return "\n".join(lines) + "\n"
