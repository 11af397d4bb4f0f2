"""The tool registry: definitions for the model side, handlers for the runtime side."""

from __future__ import annotations

import builtins
import inspect
from collections.abc import Awaitable, Callable, Iterator
from typing import Any, TypeAlias, TypeVar, overload

import attrs

from mini_harness.errors import DuplicateToolError, InvalidToolNameError
from mini_harness.events import JsonObject
from mini_harness.runtime.definitions import TOOL_NAME_PATTERN, ToolAnnotations, ToolDefinition
from mini_harness.runtime.validation import InputValidator

Handler: TypeAlias = Callable[[Any], Any] | Callable[[Any], Awaitable[Any]]
F = TypeVar("F", bound=Callable[..., Any])

_SHOWN_NAME_CHARS = 200
"""The longest tool name an "Unknown tool" message repeats in full."""


@attrs.frozen
class RegisteredTool:
    """A definition plus what only the runtime knows: the handler and its compiled schema."""

    definition: ToolDefinition
    handler: Handler = attrs.field(repr=False)
    validator: InputValidator = attrs.field(repr=False)
    output_validator: InputValidator | None = attrs.field(default=None, repr=False)
    """The outputSchema's, when the definition has one: a result that breaks it fails."""
    timeout: float | None = None
    is_async: bool = False

    @property
    def name(self) -> str:
        return self.definition.name


@attrs.define(repr=False)
class ToolRegistry:
    """Named tools in registration order. Registration checks name and schema up front."""

    _tools: dict[str, RegisteredTool] = attrs.field(factory=dict, alias="_tools")

    def __repr__(self) -> str:
        return f"<ToolRegistry(num_tools={len(self._tools)})>"

    def register(
        self,
        definition: ToolDefinition,
        handler: Handler,
        *,
        timeout: float | None = None,
    ) -> RegisteredTool:
        """Add a tool; raise a RegistrationError subclass naming the tool if it cannot be."""
        name = definition.name
        if not isinstance(name, str) or not TOOL_NAME_PATTERN.fullmatch(name):
            raise InvalidToolNameError(
                str(name),
                f"Invalid tool name {name!r}: use 1-64 characters from a-z, A-Z, 0-9, _ and -",
            )
        if name in self._tools:
            raise DuplicateToolError(name, f"Tool already registered: {name}")
        if timeout is not None and not timeout > 0:
            raise ValueError(f"timeout for tool {name} must be positive, got {timeout!r}")
        tool = RegisteredTool(
            definition=definition,
            handler=handler,
            validator=InputValidator(name, definition.input_schema),
            output_validator=(
                None
                if definition.output_schema is None
                else InputValidator(name, definition.output_schema, "output")
            ),
            timeout=timeout,
            is_async=inspect.iscoroutinefunction(handler),
        )
        self._tools[name] = tool
        return tool

    def add(
        self,
        name: str,
        handler: Handler,
        *,
        description: str,
        input_schema: JsonObject,
        annotations: ToolAnnotations | None = None,
        timeout: float | None = None,
    ) -> RegisteredTool:
        """Shorthand for register(ToolDefinition(...), handler)."""
        definition = ToolDefinition(name, description, input_schema, annotations=annotations)
        return self.register(definition, handler, timeout=timeout)

    @overload
    def tool(self, func: F, /) -> F: ...

    @overload
    def tool(
        self,
        func: None = None,
        /,
        *,
        name: str | None = None,
        description: str | None = None,
        annotations: ToolAnnotations | None = None,
        timeout: float | None = None,
    ) -> Callable[[F], F]: ...

    def tool(
        self,
        func: F | None = None,
        /,
        *,
        name: str | None = None,
        description: str | None = None,
        annotations: ToolAnnotations | None = None,
        timeout: float | None = None,
    ) -> F | Callable[[F], F]:
        """Register a typed function as a tool; usable as `@registry.tool` or `@registry.tool(...)`.

        The input schema comes from the signature, the description from the docstring;
        the function itself is returned unchanged. See docs/typed-tools.md.
        """

        # Typed-tool support (cattrs, schema derivation) loads only when a typed tool is made.
        from mini_harness.runtime.typed import derive_tool

        def decorate(function: F) -> F:
            definition, handler = derive_tool(
                function, name=name, description=description, annotations=annotations
            )
            self.register(definition, handler, timeout=timeout)
            return function

        return decorate(func) if func is not None else decorate

    def get(self, name: str) -> RegisteredTool | None:
        return self._tools.get(name)

    def unknown_tool_message(self, name: str) -> str:
        """What a call of `name`, which is not registered, is told: `Unknown tool: NAME`,
        the closest registered names and the whole list. The transcript records it and the
        caller (a person at the CLI, a model, an MCP client) is told it, word for word."""
        import difflib  # only a call of an unknown tool needs it

        shown = name
        if len(name) > _SHOWN_NAME_CHARS:
            shown = f"{name[:_SHOWN_NAME_CHARS]}... ({len(name)} characters)"
        names = list(self._tools)
        close = difflib.get_close_matches(name[:_SHOWN_NAME_CHARS], names, n=3)
        hint = f". Did you mean {' or '.join(repr(n) for n in close)}?" if close else "."
        return f"Unknown tool: {shown}{hint} Registered tools: {', '.join(names) or 'none'}"

    def list(self) -> builtins.list[ToolDefinition]:
        """Definitions only (never handlers), in registration order."""
        return [tool.definition for tool in self._tools.values()]

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __iter__(self) -> Iterator[RegisteredTool]:
        return iter(list(self._tools.values()))

    def __len__(self) -> int:
        return len(self._tools)
