"""A remote model provider, chosen without its SDK: the SDK is imported, and its client
made, when the provider sends its first request.

Importing an SDK takes half a second (openai) to over a second (anthropic) on an idle
machine, several on a busy one. Chosen this way, a run prints its header, opens its log
and readies its tools first; the import is part of the wait for the first answer, which
a terminal shows as it goes (`Waiting for the model (step 1): 2 s`).
"""

from __future__ import annotations

import contextlib
import gc
import importlib
from collections.abc import Callable, Iterator
from typing import Any

import attrs

from mini_harness.agent.providers.interface import ModelProvider, ModelRequest, ModelResponse
from mini_harness.errors import ModelError

__all__ = ["WIRES", "RemoteProvider", "Wire"]


@attrs.frozen
class Wire:
    """One wire format a remote provider speaks: the name its providers go by
    (`<name>:<model>`), and the module and class of its provider (which import its SDK)."""

    name: str
    module: str
    provider: str


WIRES = {
    "anthropic": Wire(
        "anthropic", "mini_harness.agent.providers.anthropic_messages", "AnthropicProvider"
    ),
    "openai": Wire(
        "openai-compatible", "mini_harness.agent.providers.openai_chat", "OpenAICompatibleProvider"
    ),
}
"""Each SDK's wire, by the SDK's name."""


@contextlib.contextmanager
def _uncollected() -> Iterator[None]:
    """The cyclic collector paused while an SDK is imported and its client made: that
    makes some hundred thousand objects (modules, classes, the SDK's pydantic models) that
    live as long as the process, and the collections it would trigger on the way, each
    walking all of them so far, are a tenth of the time. Whether the collector runs is as
    it was after."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


class RemoteProvider:
    """The provider of `wire` for `model`, made (its SDK imported, its client made) at its
    first request; `options` are the provider's keyword arguments (the key among them).
    It goes by `chosen:model` (`chosen`: the provider `--model` names, default the wire's
    name): what RunStarted records, and what `--model` takes to choose it again."""

    def __init__(
        self, wire: Wire, model: str, *, api_key: str, chosen: str | None = None, **options: Any
    ) -> None:
        self.wire = wire
        self.model = model
        self.name = f"{chosen or wire.name}:{model}"
        self._api_key = api_key
        self._options = options
        self._made: ModelProvider | None = None

    def __repr__(self) -> str:
        return f"<RemoteProvider({self.name!r})>"

    @property
    def secrets(self) -> tuple[str, ...]:
        """What this provider holds that no output may show: its API key."""
        return (self._api_key,)

    def provider(self) -> ModelProvider:
        """The SDK's provider, made on the first call."""
        if self._made is None:
            with _uncollected():  # the SDK's client imports more of it as it is made
                module = importlib.import_module(self.wire.module)
                cls = getattr(module, self.wire.provider)
                self._made = cls(self.model, api_key=self._api_key, **self._options)
        return self._made

    def complete(
        self,
        request: ModelRequest,
        *,
        on_text: Callable[[str], None] | None = None,
        on_retry: Callable[[ModelError], None] | None = None,
    ) -> ModelResponse:
        return self.provider().complete(request, on_text=on_text, on_retry=on_retry)
