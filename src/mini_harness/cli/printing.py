"""What an agent run prints while it goes: redacted as its log is, control characters
escaped (`cli.output`, which holds the command's one Redactor)."""

from __future__ import annotations

import sys
import threading
import time
from typing import TextIO

import click
import orjson

from mini_harness.agent import ModelResponse, ToolCall, ToolOutcome
from mini_harness.cli.output import (
    PREFIX,
    echo,
    info,
    known_columns,
    protected,
    redacted,
    rewritable,
    warn,
)
from mini_harness.errors import ModelError
from mini_harness.runtime.text_style import TextStyle

RESULT_WIDTH = 160
"""How wide a step line is when the output is not a terminal and COLUMNS is not set."""


def cut_line(message: str, lead: str = "", width: int | None = None) -> None:
    """One `[mini-harness] <lead><message>` line cut to the width (COLUMNS, else the
    terminal's, else `width`; whole when none is known): a task, a step's call, a result."""
    width = known_columns() or width
    if width is None:
        info(lead + message)
        return
    style = TextStyle(width=width)
    info(lead + style.cut(redacted(message), len(PREFIX) + 1 + len(lead)))


class WaitingLine:
    """`[mini-harness] Waiting for the model (step 2): 3 s`, redrawn in place once a second
    while a model request is out, on a terminal only; cleared when it ends or text comes."""

    def __init__(self, stream: TextIO | None = None, interval: float = 1.0) -> None:
        self.stream = stream
        self.interval = interval
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._shown = False

    def start(self, step: int) -> None:
        stream = self.stream if self.stream is not None else sys.stdout
        if self._thread is not None or not rewritable(stream):
            return
        self._stop.clear()
        self._thread = threading.Thread(
            target=self._tick, args=(stream, step), name="mini-harness-waiting", daemon=True
        )
        self._thread.start()

    def _tick(self, stream: TextIO, step: int) -> None:
        started = time.monotonic()
        while not self._stop.wait(self.interval):
            elapsed = time.monotonic() - started
            try:
                stream.write(f"\r{PREFIX} Waiting for the model (step {step}): {elapsed:.0f} s")
                stream.flush()
            except Exception:  # a line that cannot be shown changes nothing
                return
            self._shown = True

    def stop(self) -> None:
        """Stop redrawing (the thread wakes at once) and clear the line if it was shown."""
        thread, self._thread = self._thread, None
        if thread is None:
            return
        self._stop.set()
        thread.join()
        if self._shown:
            stream = self.stream if self.stream is not None else sys.stdout
            stream.write("\r\x1b[K")
            stream.flush()
            self._shown = False


class PrintingReporter:
    """Prints an agent run as it goes: each step's tool call and outcome, the model's text.

    What it prints is redacted as the command protects (cli/output.py): streamed text is
    then printed a word at a time (a line at a time with `--redact-pattern`), so that a
    secret split across chunks is still caught.
    """

    def __init__(self, provider_name: str) -> None:
        self.header = "Mock model response:" if provider_name == "mock" else "Model response:"
        self._streaming = False
        self._held = ""  # streamed text not printed yet (with a redactor: the open line)
        self._line_open = False
        self.waiting_line = WaitingLine()
        self._step = 0

    def waiting(self, step: int) -> None:
        self._step = step
        self.waiting_line.start(step)

    def waited(self) -> None:
        self.waiting_line.stop()

    def _print(self, text: str) -> None:
        if text:
            echo(text, nl=False)
            self._line_open = not text.endswith("\n")

    def text(self, chunk: str) -> None:
        self.waiting_line.stop()
        if not self._streaming:
            info(self.header)
            self._streaming = True
        redactor = protected()
        if redactor is None:
            self._print(chunk)
            return
        settled, self._held = redactor.stream(self._held, chunk)
        self._print(settled)

    def end_text(self) -> None:
        """Ends streamed text still open (the held part printed, the line closed), so that
        what is printed next starts a line of its own: after a response, and after a
        stream the model or the user cut."""
        if self._streaming:
            self._print(self._held)
            if self._line_open:
                click.echo("")
            self._streaming, self._held, self._line_open = False, "", False

    def say(self, message: str) -> None:
        """One `[mini-harness] ...` line, after the streamed text still open."""
        self.end_text()
        info(message)

    def line(self, message: str, lead: str = "", width: int | None = None) -> None:
        """One line cut to the width (`cut_line`), after the streamed text still open."""
        self.end_text()
        cut_line(message, lead, width)

    def response(self, step: int, response: ModelResponse, streamed: bool) -> None:
        if self._streaming:
            self.end_text()
        elif response.message.content:
            info(self.header)
            echo(response.message.content)

    def tool_called(self, step: int, call: ToolCall) -> None:
        where = f"Step {step}" if step else "Before the task"  # step 0: --tool
        self.line(f"{where}: {call.name} {call.arguments}")

    def tool_done(self, step: int, outcome: ToolOutcome) -> None:
        if outcome.error is not None:
            self.say(f"  failed: {outcome.error}")
            return
        self.line(orjson.dumps(outcome.output).decode(), lead="  ok: ", width=RESULT_WIDTH)

    def retry(self, error: ModelError) -> None:
        self.waiting_line.stop()
        warn(f"model request failed ({error.message}); retrying")
        self.waiting_line.start(self._step)  # the next attempt is waited for too
