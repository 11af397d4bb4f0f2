"""Text cut to the width of a line, with what a terminal would act on shown escaped: a
run's steps as they are printed, `show`'s timeline."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import attrs
import orjson

from mini_harness.runtime.terminal import printable

if TYPE_CHECKING:
    from mini_harness.events import JsonValue


@attrs.frozen
class TextStyle:
    """How to write: `width` columns to cut to, `full` to cut nothing, `colour` for ANSI.

    Recorded text (a model's, a tool's, a task's, an id) goes through `paint`, `cut`,
    `payload`, `text_lines` or `printable`, which show its control characters escaped; and
    `show` prints every line through the CLI's one output (`cli.output.echo`), which lets
    only our own colour codes reach the terminal."""

    width: int = 100
    full: bool = False
    colour: bool = False

    def paint(self, text: str, code: str) -> str:
        text = printable(text, multiline=False)
        return f"\x1b[{code}m{text}\x1b[0m" if self.colour and text else text

    def cut(self, text: str, indent: int) -> str:
        """One line of text in the room left after `indent` columns (unless full)."""
        line = printable(text if self.full else " ".join(text.split()), multiline=False)
        return line if self.full else self._fit(line, indent, len(text), "chars")

    def payload(self, value: JsonValue, indent: int) -> str:
        """A JSON value as compact JSON, cut with its size in bytes when it is too long."""
        data = orjson.dumps(value)  # escapes C0 controls, not DEL, C1 or U+202E
        text = printable(data.decode(), multiline=False)
        return text if self.full else self._fit(text, indent, len(data), "bytes")

    def _fit(self, text: str, indent: int, size: int, unit: str) -> str:
        room = max(self.width - indent, 20)
        if len(text) <= room:
            return text
        suffix = f"… ({size:,} {unit})"
        return text[: max(room - len(suffix), 8)] + suffix

    def text_lines(self, label: str, text: str, indent: int) -> Iterator[str]:
        """`label: text` cut to one line, or (full) the label and each line of text under it."""
        pad = " " * indent
        if self.full:
            yield f"{pad}{label}:"
            yield from (f"{pad}  {printable(line)}" for line in text.splitlines())
        else:
            yield f"{pad}{label}: {self.cut(text, indent + len(label) + 2)}"
