"""Built-in tools and the default registry."""

from __future__ import annotations

from mini_harness.runtime import ToolRegistry
from mini_harness.tools.echo import ECHO, echo


def default_registry() -> ToolRegistry:
    """A fresh registry holding the built-in tools."""
    registry = ToolRegistry()
    registry.register(ECHO, echo)
    return registry


__all__ = ["default_registry"]
