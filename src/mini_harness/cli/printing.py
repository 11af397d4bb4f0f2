"""What a command that acts prints while it goes: redacted as its log is, control
characters escaped (`cli.output`)."""

from __future__ import annotations

import click
import orjson

from mini_harness.agent import ModelResponse, ToolCall, ToolOutcome
from mini_harness.cli.output import info, warn
from mini_harness.errors import ModelError
from mini_harness.runtime.terminal import printable
from mini_harness.transcripts import Redactor

RESULT_WIDTH = 160
"""How much of a tool's output a step line shows."""


class RedactingPrinter:
    """Prints lines with what the log redacts (the provider's key, `--redact-env`,
    `--redact-pattern`) redacted: a secret the log leaves out is not shown either."""

    def __init__(self, redactor: Redactor | None = None) -> None:
        self._redactor = redactor if redactor is not None and redactor.active else None

    def shown(self, text: str) -> str:
        """`text` as it may be printed."""
        return text if self._redactor is None else self._redactor.redact_text(text)

    def say(self, message: str) -> None:
        """One `[mini-harness] ...` line."""
        info(self.shown(message))


class PrintingReporter(RedactingPrinter):
    """Prints an agent run as it goes: each step's tool call and outcome, the model's text.

    With a redactor, streamed text is printed a word at a time (a line at a time with
    `--redact-pattern`), so that a secret split across chunks is still caught.
    """

    def __init__(self, provider_name: str, redactor: Redactor | None = None) -> None:
        super().__init__(redactor)
        self.header = "Mock model response:" if provider_name == "mock" else "Model response:"
        self._streaming = False
        self._held = ""  # streamed text not printed yet (with a redactor: the open line)
        self._line_open = False

    def _print(self, text: str) -> None:
        if text:
            click.echo(printable(text), nl=False)
            self._line_open = not text.endswith("\n")

    def text(self, chunk: str) -> None:
        if not self._streaming:
            info(self.header)
            self._streaming = True
        if self._redactor is None:
            self._print(chunk)
            return
        shown, self._held = self._redactor.stream(self._held, chunk)
        self._print(shown)

    def end_text(self) -> None:
        """Ends streamed text still open (the held part printed, the line closed), so that
        what is printed next starts a line of its own: after a response, and after a
        stream the model or the user cut."""
        if self._streaming:
            self._print(self.shown(self._held))
            if self._line_open:
                click.echo("")
            self._streaming, self._held, self._line_open = False, "", False

    def say(self, message: str) -> None:
        self.end_text()
        super().say(message)

    def response(self, step: int, response: ModelResponse, streamed: bool) -> None:
        if self._streaming:
            self.end_text()
        elif response.message.content:
            info(self.header)
            click.echo(printable(self.shown(response.message.content)))

    def tool_called(self, step: int, call: ToolCall) -> None:
        where = f"Step {step}" if step else "Before the task"  # step 0: --tool
        self.say(f"{where}: {call.name} {call.arguments}")

    def tool_done(self, step: int, outcome: ToolOutcome) -> None:
        if outcome.error is not None:
            self.say(f"  failed: {outcome.error}")
            return
        shown = self.shown(orjson.dumps(outcome.output).decode())
        if len(shown) > RESULT_WIDTH:
            shown = shown[: RESULT_WIDTH - 3] + "..."
        info(f"  ok: {shown}")

    def retry(self, error: ModelError) -> None:
        warn(f"model request failed ({self.shown(error.message)}); retrying")
