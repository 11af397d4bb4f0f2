"""The mock model: what a run without a configured model talks to (no network, no key)."""

from __future__ import annotations

from collections.abc import Callable

from mini_harness.agent.providers.interface import ModelRequest, ModelResponse
from mini_harness.errors import ModelError
from mini_harness.events import Message, Usage
from mini_harness.runtime.context_report import estimate_tokens


class MockProvider:
    """Answers the task with text that repeats it, without calling a tool.

    Its name prints as `mock`. Its input usage is the context report's estimate of the
    whole request (system prompt and rules, tool definitions, conversation: ceil(characters
    / 4) each), so runs with it are reproducible to the byte.
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
        # agent.context imports the providers: imported here, once both are loaded.
        from mini_harness.agent.context import MANUAL_TOOL_RESULT_PREFIX, request_parts

        # The task is the latest user message (a resumed run's follow-up), not a `--tool`
        # result.
        asked = [
            m.content
            for m in request.messages
            if m.role == "user" and not m.content.startswith(MANUAL_TOOL_RESULT_PREFIX)
        ]
        task = asked[-1] if asked else ""
        text = (
            f"This is the mock model: no API key is configured, so nothing was sent to a "
            f"model. Your task was: {task}\n"
            "Set DEEPSEEK_API_KEY, OPENAI_API_KEY or ANTHROPIC_API_KEY (or pass --model) "
            "to run it with a real model."
        )
        if on_text is not None:
            on_text(text)
        system = request.messages[0].content if request.messages else ""
        parts = request_parts(system, (), request.tools, request.messages)
        prompt = sum(part.tokens for part in parts)
        return ModelResponse(
            message=Message("assistant", text),
            finish_reason="stop",
            usage=Usage(input_tokens=prompt, output_tokens=estimate_tokens(text)),
        )
