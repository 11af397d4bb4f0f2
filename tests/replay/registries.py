"""Registries that `--registry tests.replay.registries:NAME` loads in the re-run tests."""

from __future__ import annotations

from typing import Any

from mini_harness.runtime import ToolAnnotations, ToolDefinition, ToolRegistry
from mini_harness.tools.echo import ECHO, echo

WRITE = ToolDefinition(
    "write_note",
    "Append a note somewhere (a side effect).",
    {"type": "object", "properties": {"note": {"type": "string"}}, "required": ["note"]},
)
FLAKY = ToolDefinition(
    "flaky",
    "Fails in the recording, works today.",
    {"type": "object"},
    annotations=ToolAnnotations(idempotent_hint=True),
)
written: list[Any] = []


def _write(data: Any) -> Any:
    written.append(data)
    return {"written": len(written)}


def recording() -> ToolRegistry:
    """What the transcripts were recorded with: echo, a side-effecting tool, a failing tool."""
    registry = ToolRegistry()
    registry.register(ECHO, echo)
    registry.register(WRITE, _write)
    registry.register(FLAKY, _raise)
    return registry


def _raise(_: Any) -> Any:
    raise RuntimeError("down")


def same() -> ToolRegistry:
    """The recording registry, unchanged."""
    return recording()


def upper() -> ToolRegistry:
    """echo now shouts: the same definition, a different behaviour."""
    registry = ToolRegistry()
    registry.register(ECHO, lambda data: {"text": str(data.get("text", "")).upper()})
    registry.register(WRITE, _write)
    registry.register(FLAKY, lambda data: {"ok": True})
    return registry


def broken() -> ToolRegistry:
    """Every handler raises; echo's description changed and write_note is gone."""
    registry = ToolRegistry()
    changed = ToolDefinition(
        "echo", "Echo, reworded.", ECHO.input_schema, annotations=ECHO.annotations
    )
    registry.register(changed, _raise)
    registry.register(FLAKY, _raise)
    return registry


tripwire_calls: list[Any] = []


def tripwire() -> ToolRegistry:
    """Every tool of the recording registry, each handler recording that it ran, then raising."""
    registry = ToolRegistry()
    for definition in recording().list():

        def handler(data: Any, name: str = definition.name) -> Any:
            tripwire_calls.append((name, data))
            raise AssertionError(f"handler of {name} called")

        registry.register(definition, handler)
    return registry


not_a_registry = 42


def raises() -> ToolRegistry:
    raise ValueError("cannot build")
