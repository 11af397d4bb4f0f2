"""The approval prompt: what a person sees of a call, and their answer from a terminal."""

from __future__ import annotations

import json
import shlex
import sys
from typing import Final, Literal, Protocol, TextIO

import attrs

from mini_harness.events import JsonValue
from mini_harness.runtime.definitions import ToolDefinition
from mini_harness.runtime.terminal import printable

Answer = Literal["yes", "no", "session"]
MAX_SHOWN_LINES: Final = 200
MAX_SHOWN_CHARS: Final = 32_000
_ANSWERS: Final[tuple[Answer, ...]] = ("yes", "no", "session")
"""Each answer is typed as its word or its first letter."""
QUESTION: Final = "[mini-harness] Allow? [y]es / [n]o / [s]ession (yes for this session): "


class Prompter(Protocol):
    """Asks a person about one call; `shown` is the whole text they are shown."""

    def ask(self, shown: str) -> Answer: ...


class AsyncPrompter(Protocol):
    """Asks a person about one call from inside an event loop (an MCP client's user)."""

    def unable(self) -> tuple[str, str] | None:
        """Why no one can be asked now (a few words, and a phrase that ends "but ..."), or
        None when someone can."""
        ...

    async def ask(self, shown: str) -> Answer: ...


def _bounded(text: str) -> str:
    """At most MAX_SHOWN_LINES lines and MAX_SHOWN_CHARS characters, saying what was left out
    (the text is recorded in ApprovalRequested too: it must stay well under a line's cap)."""
    lines = text.splitlines()
    shown = "\n".join(lines[:MAX_SHOWN_LINES])
    if len(shown) > MAX_SHOWN_CHARS:
        shown = shown[:MAX_SHOWN_CHARS]
        left = len(text) - MAX_SHOWN_CHARS
        return f"{shown}\n[... about {left:,} more characters ...]"
    if len(lines) > MAX_SHOWN_LINES:
        return f"{shown}\n[... {len(lines) - MAX_SHOWN_LINES} more lines ...]"
    return shown


def render_call(definition: ToolDefinition, tool_input: JsonValue, rule: str) -> str:
    """The text a person approves: the diff of a patch, the argv of a command, else the input.

    Control characters, escape sequences and bidirectional overrides in it are shown
    escaped (see `printable`): what a model wrote can neither hide a line nor move one."""
    name = definition.name
    head = f"[mini-harness] Approval needed: {name} (rule: {rule})"
    if name == "apply_patch" and isinstance(tool_input, dict) and "patch" in tool_input:
        body = _bounded(printable(str(tool_input["patch"])))
    elif name == "run_command" and isinstance(tool_input, dict) and "argv" in tool_input:
        argv = [str(arg) for arg in tool_input["argv"]]
        line = shlex.join(["/bin/sh", "-c", *argv] if tool_input.get("shell") else argv)
        hints = definition.annotations
        where = "unsandboxed" if hints is None or hints.open_world_hint else "sandboxed"
        body = _bounded(printable(f"$ {line}\n(in {tool_input.get('cwd', '.')}, {where})"))
    else:
        body = _bounded(printable(json.dumps(tool_input, indent=2, ensure_ascii=False)))
    return f"{printable(head)}\n{body}"


@attrs.frozen
class TerminalPrompter:
    """Prompts on a terminal: writes the call and the question, reads a line back.

    An empty line or the end of input is "no"; anything unrecognised asks again.
    """

    reader: TextIO
    writer: TextIO

    def ask(self, shown: str) -> Answer:
        self.writer.write(shown + "\n")
        for _ in range(3):
            self.writer.write(QUESTION)
            self.writer.flush()
            line = self.reader.readline()
            if not line:
                self.writer.write("\n")
                return "no"
            word = line.strip().lower()
            answer = next((a for a in _ANSWERS if word in (a, a[0])), None)
            if answer is not None:
                return answer
            if not word:
                return "no"
        return "no"


def terminal_prompter() -> TerminalPrompter | None:
    """A prompter on stdin/stderr when both are terminals; None (ask is denied) otherwise.

    Not /dev/tty: a process serving MCP or reading a pipe must never take over the terminal
    it happens to have been started from.
    """
    try:
        if sys.stdin.isatty() and sys.stderr.isatty():
            return TerminalPrompter(sys.stdin, sys.stderr)
    except (AttributeError, ValueError):  # closed or replaced streams
        return None
    return None
