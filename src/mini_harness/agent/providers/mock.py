"""The mock model: what a run without a configured model talks to (no network, no key)."""

from __future__ import annotations

from collections.abc import Callable

from mini_harness.agent.providers.interface import ModelRequest, ModelResponse
from mini_harness.errors import ModelError
from mini_harness.events import Message, Usage, to_wire
from mini_harness.events.measure import estimate_tokens
from mini_harness.events.redaction import PROVIDER_KEY_VARIABLES
from mini_harness.runtime.context_report import pretty_json

*_FIRST, _LAST = PROVIDER_KEY_VARIABLES.values()
_KEYS = f"{', '.join(_FIRST)} or {_LAST}"
"""The variables that would choose a real model, as the mock's answer names them."""


class MockProvider:
    """Answers the task with text that repeats it, without calling a tool.

    Its name prints as `mock`. Its input usage estimates the whole request as the context
    report does (messages and tool definitions, ceil(characters / 4) each), so runs with
    it are reproducible to the byte.
    """

    name = "mock"

    def __init__(self, model: str = "mock") -> None:
        self.model = model

    def __repr__(self) -> str:
        return f"<MockProvider(model={self.model!r})>"

    def complete(
        self,
        request: ModelRequest,
        *,
        on_text: Callable[[str], None] | None = None,
        on_retry: Callable[[ModelError], None] | None = None,
    ) -> ModelResponse:
        # The task is the first user message (a `--tool` result may follow it), or a
        # follow-up given after the model's turn (a resumed run's).
        task = ""
        previous = None
        for message in request.messages:
            if message.role == "user" and (not task or previous not in ("user", "system")):
                task = message.content
            previous = message.role
        text = (
            f"This is the mock model: no API key is configured, so nothing was sent to a "
            f"model. Your task was: {task}\n"
            f"Set {_KEYS} (or pass --model) to run it with a real model."
        )
        if on_text is not None:
            on_text(text)
        # As the context report estimates a request: its messages and its tool definitions.
        prompt = sum(estimate_tokens(m.content) for m in request.messages)
        prompt += estimate_tokens(pretty_json(to_wire(request.tools)))
        return ModelResponse(
            message=Message("assistant", text),
            finish_reason="stop",
            usage=Usage(input_tokens=prompt, output_tokens=estimate_tokens(text)),
        )
